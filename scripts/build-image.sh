#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-image.sh [OUT_DIR]: build kcr-operator's image from the Dockerfile
# without a container engine or daemon, into OUT_DIR (default build/image):
#   oci/               an OCI image layout (index.json names the image $IMG)
#   kcr-operator.tar   the same image as a `docker load` / `podman load` tarball
#   stage/             what the Dockerfile's build stage leaves in /out, made on
#                      this machine by the same scripts (build-static.sh,
#                      static/image-files.sh)
# The final stage (FROM scratch; COPY --from=build, USER, ENTRYPOINT) is carried
# out by tools/kcr-image (go-containerregistry, built once into ~/.cache/kcr by
# scripts/build-go-tool.sh; scripts/static/kcr-image.sh runs it, $KCR_IMAGE
# names another). Nothing is pushed.
# Why not buildah: Debian's buildah 1.28 (vfs storage, chroot isolation) does
# build a FROM-scratch Dockerfile here, but this one's build stage is FROM
# debian:bookworm, and pulling it fails: no image registry is reachable.
# Environment: IMG (default kcr-operator:latest), SOURCE_DATE_EPOCH (the
# layer's timestamps, default 0), KCR_STATIC_BUILD_DIR (as build-static.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/image}
img=${IMG:-kcr-operator:latest}
mkdir -p "$out"
out=$(cd "$out" && pwd)

bash scripts/build-static.sh "$out/stage/out"
bash scripts/static/image-files.sh "$out/stage/out"
bash scripts/static/kcr-image.sh -dockerfile Dockerfile -stage "build=$out/stage" -tag "$img" \
  -oci "$out/oci" -tar "$out/kcr-operator.tar"
