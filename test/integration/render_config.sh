#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# render_config.sh KUBECTL KUSTOMIZE_DIR OUT_DIR: render KUSTOMIZE_DIR with
# `KUBECTL kustomize` and write each object to OUT_DIR/<Kind>_<name>.yaml, so
# that a test can apply exactly what `make deploy` would, with its final names
# (namePrefix and namespace applied), one object at a time.
set -euo pipefail
kubectl=${1:?usage: render_config.sh KUBECTL KUSTOMIZE_DIR OUT_DIR}
dir=${2:?}
out=${3:?}
mkdir -p "$out"
"$kubectl" kustomize "$dir" | python3 -c '
import sys, yaml
out = sys.argv[1]
n = 0
for doc in yaml.safe_load_all(sys.stdin):
    if not doc:
        continue
    path = "%s/%s_%s.yaml" % (out, doc["kind"], doc["metadata"]["name"])
    with open(path, "w") as f:
        yaml.safe_dump(doc, f, default_flow_style=False)
    n += 1
if n == 0:
    sys.exit("render_config: no objects rendered")
' "$out"
