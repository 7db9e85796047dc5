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
# image_setup (kubeconfig, kubectl_bin, port, work, k, fail, cleanup),
# image_check, image_run_kubeconfig, image_stop, wait_for
. "$root/test/integration/image_lib.sh"
image_setup kcr-image-test
log=$work/operator.log
out=${1:-$work/image}
ns=kcr-image-$$
img=kcr-operator:test-$$
# A finalizer left behind (operator killed) would hold the namespace: drop it.
finalized=app/app-sample
jp() { k -n "$ns" get "$1" -o "jsonpath=$2" 2>/dev/null; }
eq() { [ "$(jp "$1" "$2")" = "$3" ]; }
[ "$(id -u)" -eq 0 ] || fail "needs root: chroot --userspec runs the image's binary as user 65532"

t0=$(date +%s)
IMG=$img bash "$root/scripts/build-image.sh" "$out" >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; fail "scripts/build-image.sh (make image)"; }
echo "image built in $(($(date +%s) - t0))s: $(tail -n 1 "$work/build.log")"

# 1-3: read the layout and the tarball, unpack the root filesystem.
rootfs=$work/rootfs
image_check "$out/oci" "$out/kcr-operator.tar" "$rootfs" "$img" /kcr-operator \
  etc/group etc/passwd kcr-operator

# 4. Run the image's binary from its root, as the image's user.
image_run_kubeconfig "$rootfs"
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
image_stop "$pid"
pid=
echo "image: ok"
