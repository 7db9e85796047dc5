#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_kcr_gen_scaffold.sh BUILD_DIR: kcr-gen's scaffolding as a new user meets it
# (issue 13). Install the kcr build in BUILD_DIR into a fresh prefix; then, in a
# temporary directory and with nothing but that prefix:
#   - kcr-gen init makes a project; kcr-gen create api adds two kinds (one
#     namespaced, one cluster-scoped with a plural of its own);
#   - create api refuses a kind that is there, and init a directory that has a
#     project, and neither changes a file;
#   - the project configures with find_package(kcr), builds (its C types come
#     from its CRDs through the installed kcr-gen) with bounded jobs, and `make
#     test` runs its scaffolded unit tests (label unit) on the fake client;
#   - `make manifests` writes config/rbac/role.yaml from the controllers' markers
#     with the package's kcr::kcr-gen, not a kcr-gen on PATH;
#   - `make test-integration` runs the integration suite (label integration) on
#     the local control plane;
#   - `kubectl kustomize config/default` renders with the prefix on every name;
#   - against the local control plane: the CRDs install, the manager starts, a
#     sample Widget gets status.observedGeneration = its generation, a spec change
#     moves it on, and SIGTERM stops the manager with exit 0.
set -euo pipefail
build=$(cd "$1" && pwd)
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
work=$(mktemp -d)
ns=kcr-scaffold-$$
pid=
k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  k delete ns "$ns" --wait=false >/dev/null 2>&1 || true
  k delete crd widgets.demo.example.com gizmoes.demo.example.com --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/manager.log" ] && { echo "--- manager log (tail)" >&2; tail -n 30 "$work/manager.log" >&2; }
  exit 1
}
wait_for() {
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 4))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  fail "timed out after ${secs}s waiting for $what"
}

cmake --install "$build" --prefix "$work/prefix" >/dev/null
gen=$work/prefix/bin/kcr-gen
[ -x "$gen" ] || fail "kcr-gen is not installed in bin/"

# 1. Scaffold.
cd "$work"
"$gen" init --domain example.com widgets >"$work/init.out" || fail "kcr-gen init failed"
cd widgets
"$gen" create api --group demo --version v1 --kind Widget >/dev/null || fail "create api Widget"
"$gen" create api --group demo --version v1alpha1 --kind Gizmo --plural gizmoes --cluster-scoped \
  >/dev/null || fail "create api Gizmo"
for f in PROJECT CMakeLists.txt Makefile Dockerfile .ci/run cmd/main.c config/default/kustomization.yaml \
  config/crd/bases/demo.example.com_widgets.yaml config/crd/bases/demo.example.com_gizmoes.yaml \
  internal/controller/widget_controller.c internal/controller/gizmo_controller.c \
  test/widget_controller_test.c test/integration/suite_test.c config/samples/demo_v1_widget.yaml; do
  [ -f "$f" ] || fail "the scaffold has no $f"
done
grep -q '^  scope: Cluster$' config/crd/bases/demo.example.com_gizmoes.yaml || fail "Gizmo is not cluster-scoped"

# Names as kubebuilder makes them: snake-case C names, English plurals.
(cd "$work" && "$gen" init --domain example.org names >/dev/null)
for kp in HTTPRoute:httproutes:http_route Policy:policies:policy Gateway:gateways:gateway \
  Ingress:ingresses:ingress MyKind2:mykind2s:my_kind2; do
  IFS=: read -r kind plural cname <<<"$kp"
  (cd "$work/names" && "$gen" create api --group net --version v1 --kind "$kind" >/dev/null) ||
    fail "create api $kind"
  [ -f "$work/names/config/crd/bases/net.example.org_$plural.yaml" ] || fail "$kind: plural is not $plural"
  [ -f "$work/names/internal/controller/${cname}_controller.c" ] || fail "$kind: C name is not $cname"
done

# 2. Refusals change nothing.
sum() { find . -path ./build -prune -o -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum; }
before=$(sum)
rc=0
"$gen" create api --group demo --version v1 --kind Widget 2>"$work/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q 'has kind Widget already' "$work/err" || fail "a second Widget: rc $rc: $(cat "$work/err")"
rc=0
"$gen" init --domain example.com . 2>"$work/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q 'never overwrites' "$work/err" || fail "init over a project: rc $rc: $(cat "$work/err")"
rc=0
"$gen" create api --group demo --version 1 --kind Widget 2>"$work/err" || rc=$?
[ "$rc" -eq 2 ] || fail "a bad version: rc $rc"
[ "$(sum)" = "$before" ] || fail "a refused command changed the project"

# 3. Build and unit-test against the installed package only, with the Makefile.
# Every make command's -j has a number (a bare -j forks without bound).
make -n build test test-integration | grep -E -- '-j( |$)' | grep -vE -- '-j [0-9]+( |$)' &&
  fail "the Makefile runs an unbounded -j"
# Captured first: with pipefail, grep -q exiting at its first match can fail
# the pipeline when make then dies of SIGPIPE.
dry=$(make -n build test JOBS=3)
grep -q -- '-j 3' <<<"$dry" || fail "JOBS does not set the jobs"
export CMAKE_FLAGS="-DCMAKE_PREFIX_PATH=$work/prefix"
make build >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; fail "build"; }
grep -q 'warning:' "$work/build.log" && { grep 'warning:' "$work/build.log" >&2; fail "the scaffold builds with warnings"; }
export LD_LIBRARY_PATH=$work/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
make test >"$work/ctest.log" 2>&1 || { cat "$work/ctest.log" >&2; fail "unit tests"; }
grep -q '100% tests passed, 0 tests failed out of 2' "$work/ctest.log" || { cat "$work/ctest.log" >&2; fail "make test: not 2 unit tests"; }

# The RBAC follows the markers of the scaffolded controllers, written by the
# package's kcr-gen: a kcr-gen first on PATH that fails is never run.
mkdir -p "$work/fakebin"
printf '#!/bin/sh\necho "the kcr-gen on PATH ran" >&2\nexit 1\n' >"$work/fakebin/kcr-gen"
chmod +x "$work/fakebin/kcr-gen"
rm -f config/rbac/role.yaml
PATH="$work/fakebin:$PATH" make manifests >"$work/manifests.log" 2>&1 ||
  { cat "$work/manifests.log" >&2; fail "make manifests"; }
for r in widgets widgets/status gizmoes; do
  grep -q "^  - $r\$" config/rbac/role.yaml || fail "config/rbac/role.yaml has no rule for $r"
done

# 4. The deploy layout renders.
k kustomize config/default >"$work/deploy.yaml" || fail "kubectl kustomize config/default"
grep -q 'name: widgets-controller-manager' "$work/deploy.yaml" || fail "no prefixed Deployment"
grep -q 'namespace: widgets-system' "$work/deploy.yaml" || fail "no namespace"
grep -q 'name: widgets.demo.example.com' "$work/deploy.yaml" || fail "the CRD is not in the deploy"

# 5. On the local control plane.
k apply -f config/crd/bases >/dev/null
k wait --for=condition=Established crd/widgets.demo.example.com crd/gizmoes.demo.example.com \
  --timeout=60s >/dev/null
k create ns "$ns" >/dev/null
# The integration suite joins this cluster ($KCR_TEST_KUBECONFIG).
make test-integration >"$work/it.log" 2>&1 || { cat "$work/it.log" >&2; fail "make test-integration"; }
grep -q '100% tests passed, 0 tests failed out of 1' "$work/it.log" ||
  { cat "$work/it.log" >&2; fail "make test-integration: not 1 integration test"; }
# A bad namespace list is refused before anything starts (exit 2).
rc=0
build/manager --namespace "$ns,,default" >"$work/badns.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q 'an empty namespace' "$work/badns.log" ||
  { cat "$work/badns.log" >&2; fail "--namespace with an empty entry: exit $rc"; }
# Two namespaces from WATCH_NAMESPACE (no --namespace): one list-watch each.
WATCH_NAMESPACE="$ns,default" build/manager --kubeconfig "$kubeconfig" \
  --health-probe-bind-address 127.0.0.1:0 >"$work/manager.log" 2>&1 &
pid=$!
k -n "$ns" apply -f config/samples/demo_v1_widget.yaml >/dev/null
observed() {
  [ "$(k -n "$ns" get widget widget-sample -o 'jsonpath={.status.observedGeneration}')" = "$1" ]
}
wait_for 60 "status.observedGeneration 1" observed 1
k -n "$ns" patch widget widget-sample --type=merge -p '{"spec":{"foo":"baz"}}' >/dev/null
wait_for 30 "status.observedGeneration 2" observed 2
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail "the manager exited $rc after SIGTERM"
echo "kcr-gen scaffold: ok"
