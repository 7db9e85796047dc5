# SPDX-License-Identifier: MIT
# image_lib.sh: what the tests of images built without a container engine share
# (test_image.sh: kcr-operator's; test_kcr_gen_static_image.sh: a kcr-gen
# project's). Sourced after `set -euo pipefail`; the caller defines fail
# (print, exit 1) and, for image_run_kubeconfig, sets kubectl_bin, kubeconfig
# and port (the fixture cluster's kube-apiserver port).
#
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
#   image_run_kubeconfig ROOTFS
#     writes ROOTFS/etc/hosts (localhost) and ROOTFS/kubeconfig, the fixture's
#     admin kubeconfig flattened, its server https://localhost:PORT, readable
#     by the image's user, for a binary run from ROOTFS with chroot.
#   image_stop PID
#     SIGTERM, then waits up to 30 s; fails unless PID exits 0.
#   wait_for SECONDS DESCRIPTION COMMAND...
#     until COMMAND succeeds, polled 4 times a second; fails after SECONDS.

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

image_stop() {
  local p=$1 rc=0
  kill -TERM "$p"
  for _ in $(seq 1 120); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
  kill -0 "$p" 2>/dev/null && fail "still running 30s after SIGTERM"
  wait "$p" || rc=$?
  [ "$rc" -eq 0 ] || fail "exited $rc after SIGTERM"
  echo "ok: SIGTERM -> exit 0"
}

wait_for() {
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 4))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  fail "timed out after ${secs}s waiting for $what"
}
