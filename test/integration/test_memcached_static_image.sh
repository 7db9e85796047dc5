#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_memcached_static_image.sh BUILD_DIR: the tutorial's operator
# (examples/memcached-operator) as an image, the way a kcr-gen project makes
# one (test_kcr_gen_static_image.sh tests the scaffold's). The kcr build in
# BUILD_DIR is installed (runtime and dev) into a fresh prefix, the example
# copied alone (its Docker build context, less what .dockerignore leaves out),
# and then, with image_lib.sh's checks:
#  1. its Dockerfile has the scaffold's static shape (image_dockerfile), and
#     the build stage's own commands, run here against the prefix, leave a
#     static manager that kcr-image turns into an image (image_from_stage);
#  2. `make image` links the manager fully static and writes the image:
#     `file` and ldd say static, user 65532:65532, entrypoint ["/manager"],
#     one layer of the manager, passwd and group (image_make);
#  3. as root: that manager, run from the image's root as user 65532 against
#     the test cluster, makes the sample Memcached's Deployment and reports
#     Available=True, lets a deleted Memcached go, and exits 0 on SIGTERM.
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
# image_setup (kubeconfig, kubectl_bin, port, work, k, fail, cleanup),
# image_install, image_dockerfile, image_from_stage, image_make, image_run_manager,
# image_stop, wait_for
. "$root/test/integration/image_lib.sh"
image_setup memcached-image
ns=memcached-image-$$
img=memcached-operator:test-$$
finalized=memcached/memcached-sample # if the manager is killed before it lets go

prefix=$work/prefix
image_install "$build" "$prefix"
project=$work/memcached-operator
mkdir "$project"
tar -C "$root/examples/memcached-operator" --exclude=./build --exclude=./debs -cf - . |
  tar -C "$project" -xf -
cd "$project"

# 1. The Dockerfile, and its build stage run here.
image_dockerfile Dockerfile "$prefix" "$work/stage" "$work/stage.sh" memcached_manager
image_from_stage "$project" "$prefix" "$work/stage.sh" "$work/stage" "$img"

# 2. make image.
rootfs=$work/rootfs
image_make "$prefix" "$img" build/static/image/memcached-operator.tar "$rootfs" "$work/image.log"

# 3. The image's manager, from its root, as its user.
if [ "$(id -u)" -ne 0 ]; then
  echo "memcached image: ok (not root: the run from the image's root is skipped)"
  exit 0
fi
# integration_memcached and integration_memcached_manager apply the same CRD
# on the shared cluster, maybe at this moment; it stays for them afterwards.
image_run_manager "$rootfs" config/crd/bases/cache.example.com_memcacheds.yaml \
  memcacheds.cache.example.com config/samples/cache_v1alpha1_memcached.yaml
available() {
  [ "$(k -n "$ns" get memcached memcached-sample \
    -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}')" = True ]
}
wait_for 60 "Available=True from the image's manager" available
k -n "$ns" get deployment memcached-sample >/dev/null || fail "no Deployment memcached-sample"
echo "ok: the image's manager made the sample's Deployment as user 65532: Available=True"
k -n "$ns" delete memcached memcached-sample --timeout=30s >/dev/null ||
  fail "the Memcached was not finalized"
echo "ok: the deleted Memcached was finalized"
image_stop "$pid"
pid=
echo "memcached image: ok"
