#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kcr-image.sh ARGS...: run the kcr-image tool (tools/kcr-image: the final,
# FROM scratch stage of a Dockerfile carried out without a container engine)
# with ARGS, for example
#   kcr-image.sh -dockerfile Dockerfile -stage build=STAGE_DIR -tag NAME:TAG \
#     -oci OUT/oci -tar OUT/image.tar
# The tool is $KCR_IMAGE when that is set (a kcr-image built elsewhere), else
# the one ../build-go-tool.sh builds from ../../tools/kcr-image into
# ~/.cache/kcr/kcr-image (Go and the Go module proxy the first time; cached
# after). That layout is the same in kcr's tree (scripts/, tools/) and where
# kcr is installed (<datadir>/kcr/scripts, <datadir>/kcr/tools), so kcr's
# `make image` (scripts/build-image.sh) and a kcr-gen project's `make image`
# both come here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tool=${KCR_IMAGE:-}
if [ -z "$tool" ]; then
  tool=$(bash "$here/../build-go-tool.sh" --quiet kcr-image | sed -n 's/^kcr-image=//p')
fi
[ -x "$tool" ] || {
  echo "kcr-image: no kcr-image tool (set KCR_IMAGE, or install Go for $here/../build-go-tool.sh)" >&2
  exit 1
}
exec "$tool" "$@"
