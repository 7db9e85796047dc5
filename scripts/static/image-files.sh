#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# image-files.sh OUT_DIR: the files besides the binary that the image's final
# stage copies: passwd and group entries for the non-root user 65532, so that
# tools showing the image's user find a name. Run by the Dockerfile's build
# stage and by scripts/build-image.sh, so both images hold the same files.
set -euo pipefail
out=${1:?usage: image-files.sh OUT_DIR}
mkdir -p "$out"
printf 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$out/passwd"
printf 'nonroot:x:65532:\n' >"$out/group"
