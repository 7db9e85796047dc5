#!/usr/bin/env bash
# CTest fixture `controlplane` (see CMakeLists.txt in this directory).
#   controlplane_fixture.sh up DIR    build the control plane and every other
#                                     tool the tests run (scripts/build-test-
#                                     tools.sh; cached after the first time),
#                                     then start a cluster in DIR
#                                     with kube-scheduler and kwok, so Pods of
#                                     Deployments are scheduled onto fake nodes
#                                     and become Ready as with a kubelet
#   controlplane_fixture.sh down DIR  stop it
# Tests that require the fixture get KCR_TEST_KUBECONFIG=DIR/kubeconfig.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
(($# == 2)) || { echo "usage: $0 up|down DIR" >&2; exit 2; }
verb=$1
dir=$2

case "$verb" in
    up)
        "$repo_root/scripts/build-test-tools.sh"
        # A cluster left over from an interrupted run is replaced.
        "$repo_root/scripts/cluster.sh" down "$dir" >/dev/null 2>&1 || true
        "$repo_root/scripts/cluster.sh" up --kwok "$dir"
        ;;
    down)
        rc=0
        "$repo_root/scripts/cluster.sh" down "$dir" || rc=$?
        # Show the tail of the component logs for the test log on failure.
        if ((rc != 0)); then
            for f in "$dir"/logs/*.log; do
                [[ -f "$f" ]] || continue
                echo "--- $f" >&2
                tail -n 20 "$f" >&2
            done
        fi
        exit "$rc"
        ;;
    *)
        echo "usage: $0 up|down DIR" >&2
        exit 2
        ;;
esac
