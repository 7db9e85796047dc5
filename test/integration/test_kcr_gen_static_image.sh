#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_kcr_gen_static_image.sh BUILD_DIR: a kcr-gen project's image, as its
# Dockerfile describes it, built without a container engine (issue 26).
# Install the kcr build in BUILD_DIR (the library's components, as make
# install-lib) into a fresh prefix; then, with nothing but that prefix:
#  1. kcr-gen init and create api make a project; its Dockerfile's final stage
#     is FROM scratch and holds only what kcr-image carries out (the manager,
#     passwd and group copied from the build stage, USER 65532:65532,
#     ENTRYPOINT ["/manager"]); the build stage makes those three files with
#     the commands the project's image target runs, and the kcr scripts it
#     runs are installed, where libkcr-dev puts them;
#     then the build stage's commands (all but the package installs) run here
#     in a copy of the project against the prefix, and kcr-image turns their
#     /out into an image that passes the checks of step 3;
#  2. `make image` links the manager fully static (KCR_STATIC=ON: libkcr.a and
#     kcr's static libcurl, reused from ~/.cache/kcr/static) and kcr-image
#     (found through the installed scripts, its build cached in ~/.cache/kcr)
#     writes the image; `file` and ldd say the manager is static;
#  3. the OCI layout and the `docker load` tarball (image_lib.sh's
#     image_check): user 65532:65532, entrypoint ["/manager"], one layer whose
#     root holds exactly manager, etc/passwd and etc/group, one ELF file
#     without a program interpreter;
#  4. that manager, run from the unpacked root (chroot, as user 65532, empty
#     environment) against the test cluster, reconciles the sample Widget
#     (status.observedGeneration); SIGTERM -> exit 0.
set -euo pipefail
build=$(cd "$1" && pwd)
# image_check, image_run_kubeconfig, image_stop, wait_for
. "$(cd "$(dirname "$0")" && pwd)/image_lib.sh"
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
cluster=$(cd "$(dirname "$kubeconfig")" && pwd)
# shellcheck disable=SC2012 # one version directory
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
port=$(sed -n 's/^kube-apiserver=//p' "$cluster/run/ports")
work=$(mktemp -d "${TMPDIR:-/tmp}/kcr-gen-image.XXXXXX")
ns=kcr-gen-image-$$
img=widgets:test-$$
pid=
k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }
cleanup() {
  if [ -n "$pid" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  k delete ns "$ns" --wait=false >/dev/null 2>&1 || true
  k delete crd widgets.img.example.org --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/manager.log" ] && { echo "--- manager log (tail)" >&2; tail -n 30 "$work/manager.log" >&2; }
  exit 1
}
[ -n "$port" ] || fail "no kube-apiserver port in $cluster/run/ports"

prefix=$work/prefix
for c in runtime dev; do
  cmake --install "$build" --prefix "$prefix" --component "$c" >/dev/null || fail "cmake --install $c"
done
gen=$prefix/bin/kcr-gen

# 1. The project and its Dockerfile.
cd "$work"
"$gen" init --domain example.org widgets >/dev/null || fail "kcr-gen init"
cd widgets
"$gen" create api --group img --version v1 --kind Widget >/dev/null || fail "create api Widget"
stage=$work/stage
python3 - Dockerfile "$prefix" "$stage" "$work/stage.sh" <<'PY' || fail "the Dockerfile's stages"
import os, re, sys
path, prefix, stage, script = sys.argv[1:]
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
for needle in ["-DKCR_STATIC=ON", "--target manager", "cp build/manager /out/manager",
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

# 1b. The build stage's own commands, run here in a copy of the build context
# (the packages it installs are this machine's; libkcr-dev's files are the
# prefix's): /out gets a static manager, passwd and group, and kcr-image turns
# that stage into the same kind of image make image makes.
cp -a "$work/widgets" "$work/context"
(cd "$work/context" && CMAKE_PREFIX_PATH=$prefix bash -euo pipefail "$work/stage.sh") >"$work/stage.log" 2>&1 ||
  { tail -n 40 "$work/stage.log" >&2; fail "the Dockerfile's build stage, run here"; }
file -b "$stage/out/manager" | grep -q 'statically linked' ||
  fail "the build stage's manager: $(file -b "$stage/out/manager")"
echo "ok: the Dockerfile's build stage, run here, leaves a static manager, passwd and group in /out"
bash "$prefix/share/kcr/scripts/static/kcr-image.sh" -dockerfile Dockerfile -stage "build=$stage" \
  -tag "$img" -oci "$work/docker/oci" -tar "$work/docker/image.tar" >/dev/null ||
  fail "kcr-image on the build stage's /out"
image_check "$work/docker/oci" "$work/docker/image.tar" "$work/docker/rootfs" "$img" /manager \
  etc/group etc/passwd manager

# 2. make image: the static manager and the image.
t0=$(date +%s)
CMAKE_PREFIX_PATH=$prefix make image IMG="$img" JOBS=1 >"$work/image.log" 2>&1 ||
  { tail -n 40 "$work/image.log" >&2; fail "make image"; }
echo "make image: $(($(date +%s) - t0))s: $(grep '^kcr-image:' "$work/image.log" | tail -n 1)"
grep -q 'libcurl: reusing libcurl' "$work/image.log" || echo "note: the static libcurl was built, not reused"
manager=build/static/manager
file -b "$manager" | grep -q 'statically linked' || fail "file: $(file -b "$manager")"
lddout=$(ldd "$manager" 2>&1 || true)
grep -q 'not a dynamic executable' <<<"$lddout" || fail "ldd: $lddout"
echo "ok: $manager is static ($(stat -c %s "$manager") bytes): $(file -b "$manager" | cut -d, -f1-4)"
# KCR_STATIC is the static build's alone: make manifests' (and make build's) build is not.
grep -q '^KCR_STATIC:BOOL=ON$' build/static/CMakeCache.txt || fail "build/static is not KCR_STATIC"
grep -q '^KCR_STATIC:BOOL=ON$' build/CMakeCache.txt && fail "make manifests' build is KCR_STATIC"

# 3. The layout and the tarball; the root filesystem unpacked.
rootfs=$work/rootfs
image_check build/static/image/oci build/static/image/widgets.tar "$rootfs" "$img" /manager \
  etc/group etc/passwd manager
grep -q '^nonroot:x:65532:65532:' "$rootfs/etc/passwd" || fail "the image's passwd has no user 65532"

# 4. The image's manager, from its root, as its user, reconciles a Widget.
if [ "$(id -u)" -ne 0 ]; then
  echo "kcr-gen image: ok (not root: the run from the image's root is skipped)"
  exit 0
fi
image_run_kubeconfig "$rootfs"
k apply -f config/crd/bases/img.example.org_widgets.yaml >/dev/null
# kubectl wait fails at once while the new CRD has no status yet: retry.
for _ in 1 2 3 4 5 6 7 8 9; do
  k wait --for=condition=Established crd/widgets.img.example.org --timeout=60s >/dev/null 2>&1 && break
  sleep 0.5
done
k wait --for=condition=Established crd/widgets.img.example.org --timeout=60s >/dev/null
k create ns "$ns" >/dev/null
env -i "$(command -v chroot)" --userspec=65532:65532 "$rootfs" /manager --kubeconfig /kubeconfig \
  --namespace "$ns" --health-probe-bind-address 127.0.0.1:0 >"$work/manager.log" 2>&1 &
pid=$!
k -n "$ns" apply -f config/samples/img_v1_widget.yaml >/dev/null
observed() {
  [ "$(k -n "$ns" get widget widget-sample -o 'jsonpath={.status.observedGeneration}')" = "$1" ]
}
wait_for 60 "status.observedGeneration 1 from the image's manager" observed 1
echo "ok: the image's manager reconciled the sample Widget as user 65532"
image_stop "$pid"
pid=
echo "kcr-gen image: ok"
