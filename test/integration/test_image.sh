#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_image.sh [BUILD_DIR]: `make image` (scripts/build-image.sh) builds
# kcr-operator's image from the Dockerfile without a container engine; this
# reads the result with its own code (python3: json and tarfile, not the
# tool that wrote it) and checks:
#  1. the OCI layout: index.json names the image, the manifest and config are
#     the blobs their digests say, the config's user is 65532:65532, its
#     entrypoint ["/kcr-operator"], linux/amd64;
#  2. the root filesystem unpacked from the layers holds exactly
#     kcr-operator, etc/passwd, etc/group: no shell or any other program,
#     exactly one ELF file, and it has no program interpreter (static);
#  3. the `docker load` tarball holds the same config;
#  4. that binary, run from the unpacked root (chroot, as user 65532, empty
#     environment) against the test cluster, reconciles the sample App;
#     SIGTERM -> exit 0.
# BUILD_DIR holds the image (default a temporary directory); the static build
# goes to $KCR_STATIC_BUILD_DIR (CMake passes the one test_static_binary uses).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
cluster=$(cd "$(dirname "$kubeconfig")" && pwd)
# shellcheck disable=SC2012 # one version directory
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
port=$(sed -n 's/^kube-apiserver=//p' "$cluster/run/ports")
work=$(mktemp -d "${TMPDIR:-/tmp}/kcr-image-test.XXXXXX")
out=${1:-$work/image}
ns=kcr-image-$$
img=kcr-operator:test-$$
pid=
k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }
cleanup() {
  if [ -n "$pid" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  k -n "$ns" patch app app-sample --type=merge -p '{"metadata":{"finalizers":null}}' \
    >/dev/null 2>&1 || true
  k delete ns "$ns" --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/operator.log" ] && { echo "--- operator log (tail)" >&2; tail -n 30 "$work/operator.log" >&2; }
  exit 1
}
wait_for() { # SECONDS DESCRIPTION COMMAND...
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 4))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  fail "timed out after ${secs}s waiting for $what"
}
jp() { k -n "$ns" get "$1" -o "jsonpath=$2" 2>/dev/null; }
eq() { [ "$(jp "$1" "$2")" = "$3" ]; }
[ -n "$port" ] || fail "no kube-apiserver port in $cluster/run/ports"
[ "$(id -u)" -eq 0 ] || fail "needs root: chroot --userspec runs the image's binary as user 65532"

t0=$(date +%s)
IMG=$img bash "$root/scripts/build-image.sh" "$out" >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; fail "scripts/build-image.sh (make image)"; }
echo "image built in $(($(date +%s) - t0))s: $(tail -n 1 "$work/build.log")"

# 1-3: read the layout and the tarball, unpack the root filesystem.
rootfs=$work/rootfs
python3 - "$out/oci" "$out/kcr-operator.tar" "$rootfs" "$img" <<'PY' || fail "the image's layout, config or root filesystem"
import hashlib, io, json, os, sys, tarfile
oci, dockertar, rootfs, img = sys.argv[1:]
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
check(c.get("Entrypoint") == ["/kcr-operator"], "entrypoint [/kcr-operator] (got %r)" % c.get("Entrypoint"))
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
check(files == ["etc/group", "etc/passwd", "kcr-operator"], "the root holds exactly kcr-operator, etc/passwd, etc/group (got %s)" % files)
shells = [n for n in names if os.path.basename(n) in ("sh", "bash", "ash", "dash", "busybox")]
check(not shells and not os.path.exists(os.path.join(rootfs, "bin")), "no shell in the root (%s)" % shells)
elves = [f for f in files if open(os.path.join(rootfs, f), "rb").read(4) == b"\x7fELF"]
check(elves == ["kcr-operator"], "exactly one ELF file: kcr-operator (got %s)" % elves)
check(os.access(os.path.join(rootfs, "kcr-operator"), os.X_OK), "kcr-operator is executable")
with tarfile.open(dockertar) as t:
    dm = json.load(t.extractfile("manifest.json"))
    check(len(dm) == 1 and img in [r.split("/")[-1] for r in dm[0]["RepoTags"]] or
          any(r.endswith(img) for r in dm[0]["RepoTags"]), "the tarball is tagged %s (%s)" % (img, dm[0]["RepoTags"]))
    dconf = json.load(t.extractfile(dm[0]["Config"]))
    check(dconf["config"] == config["config"], "the tarball's config is the layout's")
sys.exit(1 if problems else 0)
PY
bin=$rootfs/kcr-operator
# No program interpreter: the kernel runs it without a dynamic loader in the root.
if readelf -l "$bin" | grep -q 'INTERP'; then fail "kcr-operator has a program interpreter (not static)"; fi
echo "ok: kcr-operator has no program interpreter (static), $(stat -c %s "$bin") bytes"

# 4. Run the image's binary from its root, as the image's user.
printf '127.0.0.1 localhost\n' >"$rootfs/etc/hosts"
"$kubectl_bin" --kubeconfig "$kubeconfig" config view --raw --flatten >"$rootfs/kubeconfig"
kj() { "$kubectl_bin" --kubeconfig "$rootfs/kubeconfig" "$@"; }
clu=$(kj config view -o 'jsonpath={.contexts[?(@.name=="'"$(kj config current-context)"'")].context.cluster}')
kj config set-cluster "$clu" --server="https://localhost:$port" >/dev/null
chmod 0644 "$rootfs/kubeconfig"
out_version=$(env -i "$(command -v chroot)" --userspec=65532:65532 "$rootfs" /kcr-operator --version 2>&1) ||
  fail "--version in the image's root: $out_version"
echo "ok: --version as 65532 in the image's root: $out_version"
k apply -f "$root/config/crd/bases/kcr.dev_apps.yaml" >/dev/null
# kubectl wait fails at once while the new CRD has no status yet: retry.
for _ in 1 2 3 4 5 6 7 8 9; do
  k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null 2>&1 && break
  sleep 0.5
done
k wait --for=condition=Established crd/apps.kcr.dev --timeout=60s >/dev/null
k create ns "$ns" >/dev/null
env -i POD_NAMESPACE="$ns" "$(command -v chroot)" --userspec=65532:65532 "$rootfs" /kcr-operator \
  --kubeconfig /kubeconfig --health-probe-bind-address=127.0.0.1:0 --namespace="$ns" \
  --log-format=console >"$work/operator.log" 2>&1 &
pid=$!
wait_for 30 "the operator to start" grep -q 'REST config from /kubeconfig' "$work/operator.log"
k -n "$ns" apply -f "$root/config/samples/kcr_v1alpha1_app.yaml" >/dev/null
uid=$(jp app/app-sample '{.metadata.uid}')
wait_for 30 "the Deployment" k -n "$ns" get deploy app-sample
eq deploy/app-sample '{.metadata.ownerReferences[0].uid}' "$uid" || fail "Deployment ownerReference"
gen=$(jp app/app-sample '{.metadata.generation}')
wait_for 30 "status.observedGeneration $gen" eq app/app-sample '{.status.observedGeneration}' "$gen"
k -n "$ns" delete app app-sample --timeout=60s >/dev/null || fail "the App was not deleted (finalizer)"
echo "ok: the image's binary reconciled the sample App as user 65532"
kill -TERM "$pid"
for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
kill -0 "$pid" 2>/dev/null && fail "operator still running 30s after SIGTERM"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail "operator exited $rc after SIGTERM"
echo "ok: SIGTERM -> exit 0"
echo "image: ok"
