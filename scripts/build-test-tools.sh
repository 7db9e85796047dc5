#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# build-test-tools.sh: build, or find in the cache, every tool the integration
# tests run that is built from a module or a source package rather than
# installed: the control plane (etcd, kube-apiserver, kube-controller-manager,
# kubectl), kube-scheduler and kwok, helm, the OpenTelemetry collector,
# kcr-image, and the static libcurl of the static-binary tests.
#
# A cold build takes tens of minutes on two cores. scripts/test.sh runs this
# before the integration phase and the `controlplane` CTest fixture runs it
# before any test that requires it, so that no timed test spends its timeout on
# a build (issue 28). Each step prints its name and the seconds spent so far;
# a warm run only checks the stamps and takes a few seconds.
#
# Environment: KCR_CACHE (default $HOME/.cache/kcr), as the scripts it calls.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
t0=$SECONDS

# step NAME COMMAND...: run one build, its output on stderr, and time it.
step() {
  local name=$1 s=$SECONDS
  shift
  printf 'build-test-tools: %s ...\n' "$name" >&2
  if ! "$@" >&2; then
    printf 'build-test-tools: error: %s failed after %d s\n' "$name" $((SECONDS - s)) >&2
    exit 1
  fi
  printf 'build-test-tools: %s ready (%d s; %d s in all)\n' "$name" $((SECONDS - s)) $((SECONDS - t0)) >&2
}

step "control plane, kube-scheduler and kwok" bash scripts/cluster.sh build --kwok
step helm bash scripts/build-go-tool.sh helm
step otelcol bash scripts/build-go-tool.sh otelcol
step kcr-image bash scripts/build-go-tool.sh kcr-image
step "static libcurl" bash scripts/build-static.sh --deps-only
