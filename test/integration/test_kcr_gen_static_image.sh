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
# image_setup (kubeconfig, kubectl_bin, port, work, k, fail, cleanup),
# image_install, image_dockerfile, image_from_stage, image_make, image_run_manager,
# image_stop, wait_for
. "$(cd "$(dirname "$0")" && pwd)/image_lib.sh"
image_setup kcr-gen-image
ns=kcr-gen-image-$$
img=widgets:test-$$
cleanup() {
  k delete crd widgets.img.example.org --wait=false >/dev/null 2>&1 || true
  image_cleanup
}
trap cleanup EXIT

prefix=$work/prefix
image_install "$build" "$prefix"
gen=$prefix/bin/kcr-gen

# 1. The project and its Dockerfile.
cd "$work"
"$gen" init --domain example.org widgets >/dev/null || fail "kcr-gen init"
cd widgets
"$gen" create api --group img --version v1 --kind Widget >/dev/null || fail "create api Widget"
stage=$work/stage
image_dockerfile Dockerfile "$prefix" "$stage" "$work/stage.sh" manager

# 1b. The build stage's own commands, run here in a copy of the build context
# (the packages it installs are this machine's; libkcr-dev's files are the
# prefix's): /out gets a static manager, passwd and group, and kcr-image turns
# that stage into the same kind of image make image makes.
image_from_stage "$work/widgets" "$prefix" "$work/stage.sh" "$stage" "$img"

# 2-3. make image: the static manager and the image, its layout and tarball;
# the root filesystem unpacked.
rootfs=$work/rootfs
image_make "$prefix" "$img" build/static/image/widgets.tar "$rootfs" "$work/image.log"

# 4. The image's manager, from its root, as its user, reconciles a Widget.
if [ "$(id -u)" -ne 0 ]; then
  echo "kcr-gen image: ok (not root: the run from the image's root is skipped)"
  exit 0
fi
image_run_manager "$rootfs" config/crd/bases/img.example.org_widgets.yaml widgets.img.example.org \
  config/samples/img_v1_widget.yaml
observed() {
  [ "$(k -n "$ns" get widget widget-sample -o 'jsonpath={.status.observedGeneration}')" = "$1" ]
}
wait_for 60 "status.observedGeneration 1 from the image's manager" observed 1
echo "ok: the image's manager reconciled the sample Widget as user 65532"
image_stop "$pid"
pid=
echo "kcr-gen image: ok"
