#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# chaos-short.sh OPERATOR_BIN: the CI subset of the chaos suite (docs/reliability.md):
# 50 Apps, every fault but the long stall (SIGSTOP 20 s, 429 storm 15 s: still past the
# lease and the renew deadline), on a cluster of its own. Run by
# `make chaos-short` and by CTest as integration_chaos_short.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
exec python3 "$root/test/chaos/chaos.py" --operator "${1:?usage: $0 OPERATOR_BIN}" --apps 50 \
  --faults restart,compact,kill,stop,429,stall --stop-seconds 20 --storm-seconds 15 \
  --converge-timeout 120 "${@:2}"
