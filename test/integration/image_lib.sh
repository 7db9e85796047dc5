# SPDX-License-Identifier: MIT
# image_lib.sh: what the tests of images built without a container engine share
# (test_image.sh: kcr-operator's; test_kcr_gen_static_image.sh: a kcr-gen
# project's; test_memcached_static_image.sh: the tutorial's). Sourced after
# `set -euo pipefail`, then image_setup.
#
#   image_setup NAME
#     for a test on the controlplane fixture: sets kubeconfig (the fixture's,
#     $KCR_TEST_KUBECONFIG), kubectl_bin (the cached kubectl), port (the
#     fixture's kube-apiserver port), work (a new temporary directory
#     NAME.XXXXXX), log ($work/manager.log, the log fail shows; change it
#     after) and pid (empty), and traps EXIT with image_cleanup (a caller
#     with more to clean traps it again with a function of its own that
#     calls image_cleanup); k runs kubectl on the cluster. The caller sets ns.
#   image_cleanup
#     kills $pid, drops the finalizers of the objects $finalized names
#     (KIND/NAME ..., in $ns) that its killed manager will not remove, deletes
#     the namespace $ns without waiting, removes $work.
#   fail MESSAGE
#     prints FAIL: MESSAGE and the tail of $log, exits 1.
#   image_install BUILD PREFIX
#     installs the kcr build BUILD (the runtime and dev components, as make
#     install-lib does) into PREFIX.
#   image_check OCI_DIR TARBALL ROOTFS IMG ENTRYPOINT FILE...
#     reads the image with its own code (python3: json, tarfile; not the tool
#     that wrote it) and checks: the OCI layout (index.json names IMG, every
#     blob is what its digest says, an OCI manifest), the config (user
#     65532:65532, entrypoint [ENTRYPOINT], no Cmd, linux/amd64), one layer
#     of plain files and directories inside the root, whose files are exactly
#     the FILEs (paths without the leading /), with no shell and exactly one
#     ELF file, ENTRYPOINT, executable and without a program interpreter
#     (static); the `docker load` tarball is tagged IMG and holds the same
#     config. The layer is unpacked into ROOTFS (made here).
#   image_dockerfile DOCKERFILE PREFIX STAGE SCRIPT TARGET
#     checks a static Dockerfile of a kcr-gen project's shape: two stages, the
#     first named build; the final stage exactly FROM scratch, the manager,
#     passwd and group copied from the build stage's /out, USER 65532:65532,
#     ENTRYPOINT ["/manager"] (all kcr-image carries out); the build stage
#     installs the -dev packages and kcr's, builds the static libcurl and the
#     CMake target TARGET with -DKCR_STATIC=ON, and fills /out with
#     image-files.sh, every kcr script it runs installed in PREFIX/share/kcr.
#     Writes SCRIPT: the build stage's commands but the package installs, kcr's
#     files taken from PREFIX instead of /usr and /out made STAGE/out.
#   image_from_stage CONTEXT PREFIX SCRIPT STAGE IMG
#     runs SCRIPT (image_dockerfile's) against PREFIX in a copy of the build
#     context CONTEXT (CONTEXT.stage); STAGE/out/manager must be static; then
#     kcr-image carries out the Dockerfile's final stage on STAGE into
#     STAGE/docker, an image that must pass image_check.
#   image_make PREFIX IMG TARBALL ROOTFS LOG
#     `make image` in the project of the working directory against PREFIX,
#     its output in LOG: build/static/manager must be static, build/static
#     (and not build) configured KCR_STATIC, build/static/image/oci and
#     TARBALL pass image_check (the layer unpacked into ROOTFS), and the
#     image's passwd has the user 65532.
#   image_static FILE
#     fails unless `file` and ldd call FILE a static executable.
#   image_run_kubeconfig ROOTFS
#     writes ROOTFS/etc/hosts (localhost) and ROOTFS/kubeconfig, the fixture's
#     admin kubeconfig flattened, its server https://localhost:PORT, readable
#     by the image's user, for a binary run from ROOTFS with chroot.
#   image_run_manager ROOTFS CRD_FILE CRD_NAME SAMPLE
#     as root: ROOTFS ready (image_run_kubeconfig), the CRD applied (a second
#     time when the first meets a test applying it at the same moment) and
#     Established, the namespace $ns made, ROOTFS's /manager started in the
#     background from that root (chroot, user 65532, empty environment) on
#     $ns, its pid in pid and its output in $log, and then SAMPLE applied in $ns.
#   image_stop PID
#     SIGTERM, then waits up to 30 s; fails unless PID exits 0.
#   wait_for SECONDS DESCRIPTION COMMAND...
#     until COMMAND succeeds, polled 4 times a second; fails after SECONDS.

image_setup() {
  kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
  # shellcheck disable=SC2012 # one version directory
  kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
  port=$(sed -n 's/^kube-apiserver=//p' "$(dirname "$kubeconfig")/run/ports")
  work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  log=$work/manager.log
  pid=
  trap image_cleanup EXIT
  [ -n "$port" ] || fail "no kube-apiserver port beside $kubeconfig"
}

k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }

image_cleanup() {
  local o
  if [ -n "${pid:-}" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  if [ -n "${ns:-}" ]; then
    for o in ${finalized:-}; do
      k -n "$ns" patch "$o" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
    done
    k delete ns "$ns" --wait=false >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}

fail() {
  echo "FAIL: $*" >&2
  if [ -n "${log:-}" ] && [ -f "$log" ]; then
    echo "--- $(basename "$log") (tail)" >&2
    tail -n 30 "$log" >&2
  fi
  exit 1
}

image_install() {
  local c
  for c in runtime dev; do
    cmake --install "$1" --prefix "$2" --component "$c" >/dev/null || fail "cmake --install $c"
  done
}

image_check() {
  local oci=$1 tarball=$2 rootfs=$3 img=$4 entry=$5
  shift 5
  python3 - "$oci" "$tarball" "$rootfs" "$img" "$entry" "$@" <<'PY' ||
import hashlib, io, json, os, sys, tarfile
oci, dockertar, rootfs, img, entry = sys.argv[1:6]
want_files = sorted(sys.argv[6:])
exe = entry.lstrip("/")
problems = []
def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        problems.append(what)
def blob(digest):
    alg, hexd = digest.split(":")
    data = open(os.path.join(oci, "blobs", alg, hexd), "rb").read()
    check(hashlib.sha256(data).hexdigest() == hexd, "blob %s matches its digest" % digest[:19])
    return data
check(json.load(open(os.path.join(oci, "oci-layout")))["imageLayoutVersion"] == "1.0.0", "oci-layout 1.0.0")
index = json.load(open(os.path.join(oci, "index.json")))
check(len(index["manifests"]) == 1, "index.json holds one image")
desc = index["manifests"][0]
check(desc["annotations"].get("org.opencontainers.image.ref.name") == img, "the image is named " + img)
manifest = json.loads(blob(desc["digest"]))
check(manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json", "an OCI manifest")
config = json.loads(blob(manifest["config"]["digest"]))
c = config.get("config", {})
check(c.get("User") == "65532:65532", "user 65532:65532 (got %r)" % c.get("User"))
check(c.get("Entrypoint") == [entry], "entrypoint [%s] (got %r)" % (entry, c.get("Entrypoint")))
check(not c.get("Cmd"), "no Cmd")
check((config["os"], config["architecture"]) == ("linux", "amd64"), "linux/amd64")
check(len(manifest["layers"]) == len(config["rootfs"]["diff_ids"]) == 1, "one layer")
os.makedirs(rootfs)
names = []
for layer in manifest["layers"]:
    data = blob(layer["digest"])
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        for m in t.getmembers():
            check(m.isfile() or m.isdir(), "%s is a plain file or directory" % m.name)
            check(not m.name.startswith("/") and ".." not in m.name.split("/"), "%s stays in the root" % m.name)
            names.append(m.name.rstrip("/"))
        t.extractall(rootfs, filter="tar")
files = sorted(n for n in names if os.path.isfile(os.path.join(rootfs, n)))
check(files == want_files, "the root holds exactly %s (got %s)" % (", ".join(want_files), files))
shells = [n for n in names if os.path.basename(n) in ("sh", "bash", "ash", "dash", "busybox")]
check(not shells and not os.path.exists(os.path.join(rootfs, "bin")), "no shell in the root (%s)" % shells)
elves = [f for f in files if open(os.path.join(rootfs, f), "rb").read(4) == b"\x7fELF"]
check(elves == [exe], "exactly one ELF file: %s (got %s)" % (exe, elves))
check(os.access(os.path.join(rootfs, exe), os.X_OK), exe + " is executable")
with tarfile.open(dockertar) as t:
    dm = json.load(t.extractfile("manifest.json"))
    check(len(dm) == 1 and any(r.endswith(img) for r in dm[0]["RepoTags"]),
          "the tarball is tagged %s (%s)" % (img, dm[0]["RepoTags"]))
    dconf = json.load(t.extractfile(dm[0]["Config"]))
    check(dconf["config"] == config["config"], "the tarball's config is the layout's")
sys.exit(1 if problems else 0)
PY
    fail "the image's layout, config or root filesystem"
  # No program interpreter: the kernel runs it without a dynamic loader in the root.
  if readelf -l "$rootfs$entry" | grep -q 'INTERP'; then fail "$entry has a program interpreter (not static)"; fi
  echo "ok: $entry has no program interpreter (static), $(stat -c %s "$rootfs$entry") bytes"
}

image_dockerfile() {
  python3 - "$@" <<'PY' || fail "the Dockerfile's stages"
import os, re, sys
path, prefix, stage, script, target = sys.argv[1:]
problems = []
def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        problems.append(what)
# Instructions, continuation lines joined, comments dropped.
lines, cur = [], ""
for raw in open(path):
    l = raw.strip()
    if not cur and (not l or l.startswith("#")):
        continue
    cur += (" " if cur else "") + l.rstrip("\\").strip()
    if not l.endswith("\\"):
        lines.append(cur)
        cur = ""
froms = [i for i, l in enumerate(lines) if l.upper().startswith("FROM ")]
check(len(froms) == 2, "two stages (%d)" % len(froms))
build, final = lines[froms[0]:froms[1]], lines[froms[1]:]
check(re.match(r"FROM \S+ AS build$", build[0]) is not None, "the first stage is named build: " + build[0])
want = ["FROM scratch",
        "COPY --from=build /out/manager /manager",
        "COPY --from=build /out/passwd /etc/passwd",
        "COPY --from=build /out/group /etc/group",
        "USER 65532:65532",
        'ENTRYPOINT ["/manager"]']
check(final == want, "the final stage is FROM scratch, the three COPY --from=build, USER, ENTRYPOINT" +
      ("" if final == want else " (got %s)" % final))
runs = " ".join(l for l in build if l.startswith("RUN "))
for needle in ["-DKCR_STATIC=ON", "--target " + target, "cp build/manager /out/manager",
               "/usr/share/kcr/scripts/static/image-files.sh /out",
               "bash /usr/share/kcr/scripts/static/libcurl.sh"]:
    check(needle in runs, "the build stage runs " + needle)
for pkg in ["dpkg-dev", "libc-ares-dev", "libnghttp2-dev", "zlib1g-dev", "libssl-dev",
            "libcurl4-openssl-dev", "/tmp/debs/libkcr-dev_*.deb"]:
    check(pkg in runs, "the build stage installs " + pkg)
# libkcr-dev installs to /usr: the scripts the stage runs are the ones kcr installs.
for sh in sorted(set(re.findall(r"/usr/share/kcr/(\S+\.sh)", runs))):
    check(os.access(os.path.join(prefix, "share/kcr", sh), os.X_OK), "kcr installs share/kcr/" + sh)
# The stage's commands but the package installs, to run here: kcr's files from
# the prefix instead of /usr, the stage's /out under STAGE.
cmds = [l[4:] for l in build if l.startswith("RUN ") and "apt-get" not in l]
cmds = [re.sub(r"(?<![\w./-])/out\b", stage + "/out", c.replace("/usr/share/kcr/", prefix + "/share/kcr/"))
        for c in cmds]
check(len(cmds) == 2, "two build commands besides the package installs (%d)" % len(cmds))
with open(script, "w") as f:
    f.write("".join(c + "\n" for c in cmds))
sys.exit(1 if problems else 0)
PY
}

image_from_stage() {
  local context=$1 prefix=$2 script=$3 stage=$4 img=$5
  rm -rf "$context.stage"
  cp -a "$context" "$context.stage"
  (cd "$context.stage" && CMAKE_PREFIX_PATH=$prefix bash -euo pipefail "$script") \
    >"$context.stage.log" 2>&1 ||
    { tail -n 40 "$context.stage.log" >&2; fail "the Dockerfile's build stage, run here"; }
  image_static "$stage/out/manager"
  echo "ok: the Dockerfile's build stage, run here, leaves a static manager, passwd and group in /out"
  bash "$prefix/share/kcr/scripts/static/kcr-image.sh" -dockerfile "$context/Dockerfile" \
    -stage "build=$stage" -tag "$img" -oci "$stage/docker/oci" -tar "$stage/docker/image.tar" \
    >/dev/null || fail "kcr-image on the build stage's /out"
  image_check "$stage/docker/oci" "$stage/docker/image.tar" "$stage/docker/rootfs" "$img" /manager \
    etc/group etc/passwd manager
}

image_make() {
  local prefix=$1 img=$2 tarball=$3 rootfs=$4 log=$5 t0
  t0=$(date +%s)
  CMAKE_PREFIX_PATH=$prefix make image IMG="$img" JOBS=1 >"$log" 2>&1 ||
    { tail -n 40 "$log" >&2; fail "make image"; }
  echo "make image: $(($(date +%s) - t0))s: $(grep '^kcr-image:' "$log" | tail -n 1)"
  grep -q 'libcurl: reusing libcurl' "$log" || echo "note: the static libcurl was built, not reused"
  image_static build/static/manager
  # KCR_STATIC is the static build's alone: make manifests' (and make build's) build is not.
  grep -q '^KCR_STATIC:BOOL=ON$' build/static/CMakeCache.txt || fail "build/static is not KCR_STATIC"
  if grep -q '^KCR_STATIC:BOOL=ON$' build/CMakeCache.txt; then fail "make manifests' build is KCR_STATIC"; fi
  image_check build/static/image/oci "$tarball" "$rootfs" "$img" /manager etc/group etc/passwd manager
  grep -q '^nonroot:x:65532:65532:' "$rootfs/etc/passwd" || fail "the image's passwd has no user 65532"
}

image_static() {
  local out
  out=$(file -b "$1")
  grep -q 'statically linked' <<<"$out" || fail "file $1: $out"
  out=$(ldd "$1" 2>&1 || true)
  grep -q 'not a dynamic executable' <<<"$out" || fail "ldd $1: $out"
  echo "ok: $1 is static ($(stat -c %s "$1") bytes): $(file -b "$1" | cut -d, -f1-4)"
}

image_run_kubeconfig() {
  local rootfs=$1 clu
  printf '127.0.0.1 localhost\n' >"$rootfs/etc/hosts"
  "$kubectl_bin" --kubeconfig "$kubeconfig" config view --raw --flatten >"$rootfs/kubeconfig"
  clu=$("$kubectl_bin" --kubeconfig "$rootfs/kubeconfig" config view -o \
    'jsonpath={.contexts[?(@.name=="'"$("$kubectl_bin" --kubeconfig "$rootfs/kubeconfig" config current-context)"'")].context.cluster}')
  "$kubectl_bin" --kubeconfig "$rootfs/kubeconfig" config set-cluster "$clu" \
    --server="https://localhost:$port" >/dev/null
  chmod 0644 "$rootfs/kubeconfig"
}

image_run_manager() {
  local rootfs=$1 crd=$2 name=$3 sample=$4
  image_run_kubeconfig "$rootfs"
  k apply -f "$crd" >/dev/null 2>&1 || k apply -f "$crd" >/dev/null
  # kubectl wait fails at once while a new CRD has no status yet: retried.
  wait_for 60 "the CRD $name Established" k wait --for=condition=Established "crd/$name" --timeout=1s
  k create ns "$ns" >/dev/null
  env -i "$(command -v chroot)" --userspec=65532:65532 "$rootfs" /manager --kubeconfig /kubeconfig \
    --namespace "$ns" --health-probe-bind-address 127.0.0.1:0 >"$log" 2>&1 &
  pid=$!
  k -n "$ns" apply -f "$sample" >/dev/null
}

image_stop() {
  local p=$1 rc=0
  kill -TERM "$p"
  for _ in $(seq 1 120); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
  kill -0 "$p" 2>/dev/null && fail "still running 30s after SIGTERM"
  wait "$p" || rc=$?
  [ "$rc" -eq 0 ] || fail "exited $rc after SIGTERM"
  echo "ok: SIGTERM -> exit 0"
}

# wait_for SECONDS DESCRIPTION COMMAND... (wait_lib.sh)
. "$(dirname "${BASH_SOURCE[0]}")/wait_lib.sh"
