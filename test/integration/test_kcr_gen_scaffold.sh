#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_kcr_gen_scaffold.sh BUILD_DIR: kcr-gen's scaffolding as a new user meets it
# (issue 13). Install the kcr build in BUILD_DIR into a fresh prefix; then, in a
# temporary directory and with nothing but that prefix:
#   - kcr-gen init makes a project; kcr-gen create api adds two kinds (one
#     namespaced, one cluster-scoped with a plural of its own) and a second
#     version of the first; kcr-gen create webhook gives the first a validating
#     webhook, then adds a defaulting one to its file, then conversion between
#     its versions (issue 26);
#   - create api refuses a kind that is there, create webhook a type of webhook
#     the kind has, and init a directory that has a project; none changes a file;
#   - the project configures with find_package(kcr), builds (its C types come
#     from its CRDs through the installed kcr-gen) with bounded jobs, and `make
#     test` runs its scaffolded unit tests (label unit): the controllers' on the
#     fake client and the webhook's; `make lint` passes when clang-format and
#     clang-tidy are installed;
#   - `make manifests` writes config/rbac/role.yaml from the controllers' markers,
#     config/webhook/manifests.yaml from the webhooks' markers and the CRDs
#     from the kinds' type headers (api/*/*_types.h), the last two byte for
#     byte what the create commands wrote,
#     with the package's kcr::kcr-gen, not a kcr-gen on PATH;
#   - `kcr-gen init --namespaced`: make manifests gives a Role and a RoleBinding in
#     the manager's namespace, and the manager watches that namespace;
#   - `make test-integration` runs the integration suite (label integration) on
#     the local control plane;
#   - `make helm-chart` writes dist/chart, whose `helm template` gives
#     dist/install.yaml's objects less the Namespace (when helm is cached), and
#     whose switches (rbac, webhook, certmanager, metrics, crd; webhook with
#     certmanager) leave out their parts, leave nothing that names them, and
#     keep every reference resolving (check_chart_switches.py);
#   - `kubectl kustomize config/default` renders with the prefix on every name,
#     the webhook configurations and cert-manager's names filled in; `make
#     build-installer IMG=...` writes dist/install.yaml with the image, and the
#     API server accepts every object of it (server-side dry run; stand-in CRDs
#     for cert-manager's kinds when it is not installed);
#   - against the local control plane: the CRDs install, the manager starts, a
#     sample Widget gets status.observedGeneration = its generation, a spec change
#     moves it on, and SIGTERM stops the manager with exit 0;
#   - `make test-e2e`: the scaffold's own e2e (secure metrics with a token,
#     every sample reconciled, each webhook admitting its sample, /convert
#     converting the Widget samples).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
kubeconfig=${KCR_TEST_KUBECONFIG:?the controlplane fixture sets KCR_TEST_KUBECONFIG}
kubectl_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/k8s/*/bin/kubectl | tail -n 1)
work=$(mktemp -d)
ns=kcr-scaffold-$$
pid=
k() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }
standins=()
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  k delete ns "$ns" --wait=false >/dev/null 2>&1 || true
  k delete ns widgets-system --wait=false >/dev/null 2>&1 || true
  for c in "${standins[@]}"; do k delete crd "$c" --wait=false >/dev/null 2>&1 || true; done
  k delete crd widgets.demo.example.com gizmoes.demo.example.com --wait=false >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/manager.log" ] && { echo "--- manager log (tail)" >&2; tail -n 30 "$work/manager.log" >&2; }
  exit 1
}
. "$here/wait_lib.sh" # wait_for SECONDS DESCRIPTION COMMAND...

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
# The validating webhook first, the defaulting one added to its file later.
"$gen" create webhook --group demo --version v1 --kind Widget --programmatic-validation \
  >/dev/null || fail "create webhook --programmatic-validation Widget"
"$gen" create webhook --group demo --version v1 --kind Widget --defaulting >/dev/null ||
  fail "create webhook --defaulting Widget (added to the validating webhook's file)"
"$gen" create api --group demo --version v2 --kind Widget >/dev/null || fail "create api Widget v2"
"$gen" create webhook --group demo --version v1 --kind Widget --conversion --spoke v2 >/dev/null ||
  fail "create webhook --conversion Widget"
for f in PROJECT CMakeLists.txt Makefile Dockerfile .ci/run cmd/main.c config/default/kustomization.yaml \
  config/crd/bases/demo.example.com_widgets.yaml config/crd/bases/demo.example.com_gizmoes.yaml \
  api/v1/widget_types.h api/v2/widget_types.h api/v1alpha1/gizmo_types.h \
  internal/controller/widget_controller.c internal/controller/gizmo_controller.c \
  test/widget_controller_test.c test/integration/suite_test.c config/samples/demo_v1_widget.yaml \
  .clang-format .clang-tidy .dockerignore test/e2e/e2e_test.sh config/rbac/widget_admin_role.yaml \
  config/rbac/gizmo_viewer_role.yaml config/rbac/metrics_auth_role.yaml config/prometheus/monitor.yaml \
  config/network-policy/allow-webhook-traffic.yaml config/certmanager/certificate-webhook.yaml \
  config/webhook/manifests.yaml internal/webhook/v1/widget_webhook.c \
  internal/webhook/v1/widget_webhook_test.c internal/webhook/v1/widget_conversion.c \
  config/samples/demo_v2_widget.yaml config/crd/patches/webhook_in_widgets.yaml; do
  [ -f "$f" ] || fail "the scaffold has no $f"
done
grep -q 'widget_v1_webhook_setup,' cmd/main.c || fail "main.c does not register the Widget webhooks"
grep -q 'widget_v1_conversion_setup,' cmd/main.c || fail "main.c does not register the conversion"
grep -q '^- ../webhook$' config/default/kustomization.yaml || fail "[WEBHOOK] is not switched on"
grep -q '^  scope: Cluster$' config/crd/bases/demo.example.com_gizmoes.yaml || fail "Gizmo is not cluster-scoped"
grep -q '^// +kubebuilder:storageversion$' api/v1/widget_types.h || fail "Widget v1 (the hub) is not stored"
cp -r config/crd/bases "$work/crd-bases" # as the create commands wrote them (step 3 compares)

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
"$gen" create webhook --group demo --version v1 --kind Widget --defaulting 2>"$work/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q 'has a defaulting webhook already (.*internal/webhook/v1/widget_webhook.c)' "$work/err" ||
  fail "a second Widget webhook: rc $rc: $(cat "$work/err")"
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
# make build links libkcr.so; the static manager is KCR_STATIC's (make image,
# test_kcr_gen_static_image.sh).
readelf -d build/manager | grep -q 'Shared library: \[libkcr\.so' || fail "make build's manager does not link libkcr.so"
export LD_LIBRARY_PATH=$work/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
make test >"$work/ctest.log" 2>&1 || { cat "$work/ctest.log" >&2; fail "unit tests"; }
grep -q '100% tests passed, 0 tests failed out of 4' "$work/ctest.log" || { cat "$work/ctest.log" >&2; fail "make test: not 4 unit tests"; }
for t in widget_webhook_test widget_conversion_test; do
  grep -q "$t .* Passed" "$work/ctest.log" || fail "make test did not run $t"
done
# The type headers are plain C, as kcr/crd.h promises: they compile on their own.
for h in api/*/*_types.h; do
  cc -std=c11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$work/prefix/include" "$h" ||
    fail "$h does not compile"
done
if command -v clang-format >/dev/null && command -v clang-tidy >/dev/null; then
  make lint >"$work/lint.log" 2>&1 || { tail -n 30 "$work/lint.log" >&2; fail "make lint on a fresh scaffold"; }
fi

# The RBAC follows the markers of the scaffolded controllers, written by the
# package's kcr-gen: a kcr-gen first on PATH that fails is never run.
mkdir -p "$work/fakebin"
printf '#!/bin/sh\necho "the kcr-gen on PATH ran" >&2\nexit 1\n' >"$work/fakebin/kcr-gen"
chmod +x "$work/fakebin/kcr-gen"
rm -f config/rbac/role.yaml
# and the webhook configurations follow the webhooks' markers (kcr-gen
# webhook): made again, they are what create webhook wrote, byte for byte
cp config/webhook/manifests.yaml "$work/webhook-manifests.yaml"
rm -f config/webhook/manifests.yaml
# and the CRDs follow the type headers (kcr-gen crd): made again, from nothing
# (the configure step only warns of a missing CRD), they are what create api
# and create webhook wrote (kept in step 1), byte for byte.
rm -f config/crd/bases/*.yaml
PATH="$work/fakebin:$PATH" make manifests >"$work/manifests.log" 2>&1 ||
  { cat "$work/manifests.log" >&2; fail "make manifests"; }
cmp -s "$work/webhook-manifests.yaml" config/webhook/manifests.yaml ||
  fail "make manifests wrote other webhook manifests than create webhook"
diff -r "$work/crd-bases" config/crd/bases >&2 ||
  fail "make manifests wrote other CRDs than create api and create webhook"
for r in widgets widgets/status gizmoes; do
  grep -q "^  - $r\$" config/rbac/role.yaml || fail "config/rbac/role.yaml has no rule for $r"
done

# init --namespaced (kubebuilder's): make manifests writes the controllers'
# rules into a Role in the manager's namespace, bound by a RoleBinding, and the
# manager watches the namespace it runs in.
(
  cd "$work" && "$gen" init --domain example.com --namespaced nsproj >/dev/null
  cd nsproj && "$gen" create api --group demo --version v1 --kind Widget >/dev/null
  make manifests >"$work/ns-manifests.log" 2>&1 || { cat "$work/ns-manifests.log" >&2; exit 1; }
  k kustomize config/default >"$work/ns-deploy.yaml"
) || fail "init --namespaced: make manifests or kustomize"
python3 - "$work/ns-deploy.yaml" <<'PY' || fail "init --namespaced: not a Role and RoleBinding in nsproj-system"
import sys, yaml
docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
role = docs[("Role", "nsproj-manager-role")]
assert role["metadata"]["namespace"] == "nsproj-system", role
assert any("widgets" in r.get("resources", []) for r in role["rules"]), role
binding = docs[("RoleBinding", "nsproj-manager-rolebinding")]
assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                              "name": "nsproj-manager-role"}, binding
assert ("ClusterRole", "nsproj-manager-role") not in docs
env = docs[("Deployment", "nsproj-controller-manager")]["spec"]["template"]["spec"]["containers"][0]["env"]
assert {"name": "WATCH_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in env, env
PY

# 4. The deploy layout renders.
k kustomize config/default >"$work/deploy.yaml" || fail "kubectl kustomize config/default"
grep -q 'name: widgets-controller-manager' "$work/deploy.yaml" || fail "no prefixed Deployment"
grep -q 'namespace: widgets-system' "$work/deploy.yaml" || fail "no namespace"
grep -q 'name: widgets.demo.example.com' "$work/deploy.yaml" || fail "the CRD is not in the deploy"
grep -q 'name: widgets-mutating-webhook-configuration' "$work/deploy.yaml" || fail "no mutating webhook"
grep -q 'cert-manager.io/inject-ca-from: widgets-system/widgets-serving-cert' "$work/deploy.yaml" ||
  fail "the webhook configurations get no CA"
grep -q -- '- widgets-webhook-service.widgets-system.svc$' "$work/deploy.yaml" ||
  fail "the serving certificate does not name the webhook Service"
grep -q 'path: /validate-demo-example-com-v1-widget' "$work/deploy.yaml" || fail "no validating path"
grep -A6 '^  conversion:' "$work/deploy.yaml" | grep -q 'name: widgets-webhook-service' ||
  fail "the Widget CRD has no conversion webhook"
make build-installer IMG=registry.example/widgets:v0.1 KUBECTL="$kubectl_bin" >/dev/null ||
  fail "make build-installer"
grep -q 'image: registry.example/widgets:v0.1$' dist/install.yaml || fail "dist/install.yaml has not the image"
# make helm-chart: dist/chart (kcr-gen helm) renders, with helm, the objects of
# dist/install.yaml but the Namespace, in the release's namespace; crd.enable=false
# leaves the CRDs out.
make helm-chart IMG=registry.example/widgets:v0.1 KUBECTL="$kubectl_bin" >"$work/helm-chart.log" 2>&1 ||
  { cat "$work/helm-chart.log" >&2; fail "make helm-chart"; }
grep -q '^    tag: v0.1$' dist/chart/values.yaml || fail "dist/chart/values.yaml has not the image's tag"
helm_bin=$(ls "${KCR_CACHE:-$HOME/.cache/kcr}"/helm/*/bin/helm 2>/dev/null | tail -n 1 || true)
if [ -n "$helm_bin" ]; then
  "$helm_bin" lint dist/chart >"$work/helm-lint.log" 2>&1 || { cat "$work/helm-lint.log" >&2; fail "helm lint"; }
  "$helm_bin" template widgets dist/chart --namespace widgets-system >"$work/helm.yaml" ||
    fail "helm template dist/chart"
  "$helm_bin" template widgets dist/chart --namespace widgets-system --set crd.enable=false \
    >"$work/helm-nocrd.yaml" || fail "helm template --set crd.enable=false"
  python3 - dist/install.yaml "$work/helm.yaml" "$work/helm-nocrd.yaml" <<'PY' ||
import sys, yaml
def load(path):
    return {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
            for d in yaml.safe_load_all(open(path)) if d}
want = {k: v for k, v in load(sys.argv[1]).items() if k[0] != "Namespace"}
got = load(sys.argv[2])
assert want == got, sorted(set(want) ^ set(got)) or [k for k in want if want[k] != got[k]]
assert len(want) >= 20, len(want)
nocrd = load(sys.argv[3])
assert nocrd == {k: v for k, v in want.items() if k[0] != "CustomResourceDefinition"}
PY
    fail "helm template dist/chart is not dist/install.yaml less its Namespace"
  for off in rbac webhook certmanager metrics crd "webhook certmanager"; do
    set=$(printf '%s.enable=false,' $off)
    "$helm_bin" template widgets dist/chart --namespace widgets-system --set "${set%,}" \
      >"$work/helm-off.yaml" || fail "helm template --set ${set%,}"
    # shellcheck disable=SC2086 # one argument a switch
    python3 "$here/check_chart_switches.py" --refs widgets- widgets-system "$work/helm.yaml" \
      "$work/helm-off.yaml" $off || fail "dist/chart with ${set%,}"
  done
else
  echo "kcr-gen scaffold: no helm in the cache (scripts/build-go-tool.sh helm): chart not rendered"
fi

# 5. On the local control plane.
# dist/install.yaml is accepted whole (server-side dry run): its namespace
# first (a dry run creates nothing), and cert-manager's kinds as schema-free
# stand-ins when cert-manager is not installed.
k get ns widgets-system >/dev/null 2>&1 || k create ns widgets-system >/dev/null
. "$here/certmanager_standins.sh"
mapfile -t standins < <(certmanager_standins k)
k apply --dry-run=server -f dist/install.yaml >"$work/dry-run.log" 2>&1 ||
  { cat "$work/dry-run.log" >&2; fail "the API server refuses dist/install.yaml"; }
[ "$(grep -c '(server dry run)' "$work/dry-run.log")" -ge 20 ] ||
  { cat "$work/dry-run.log" >&2; fail "the dry run did not create every object"; }
k apply -f config/crd/bases >/dev/null
# kubectl wait fails at once while a new CRD has no status yet: retry.
for _ in 1 2 3 4 5 6 7 8 9; do
  k wait --for=condition=Established crd/widgets.demo.example.com crd/gizmoes.demo.example.com \
    --timeout=60s >/dev/null 2>&1 && break
  sleep 0.5
done
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
# So is a bad shard key (exit 2).
rc=0
build/manager --shard-ring demo --shard-key name >"$work/badshard.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q 'want namespace or uid' "$work/badshard.log" ||
  { cat "$work/badshard.log" >&2; fail "--shard-key name: exit $rc"; }
# Two namespaces from WATCH_NAMESPACE (no --namespace): one list-watch each;
# run as the one replica of a shard ring on the uid key, its Lease in $ns.
WATCH_NAMESPACE="$ns,default" build/manager --kubeconfig "$kubeconfig" \
  --shard-ring demo --shard-key uid --leader-election-namespace "$ns" \
  --health-probe-bind-address 127.0.0.1:0 --webhook-bind-address 127.0.0.1:0 >"$work/manager.log" 2>&1 &
pid=$!
k -n "$ns" apply -f config/samples/demo_v1_widget.yaml >/dev/null
observed() {
  [ "$(k -n "$ns" get widget widget-sample -o 'jsonpath={.status.observedGeneration}')" = "$1" ]
}
wait_for 60 "status.observedGeneration 1" observed 1
k -n "$ns" patch widget widget-sample --type=merge -p '{"spec":{"foo":"baz"}}' >/dev/null
wait_for 30 "status.observedGeneration 2" observed 2
grep -q 'sharding: joined ring' "$work/manager.log" || fail "the manager did not join its shard ring"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" -eq 0 ] || fail "the manager exited $rc after SIGTERM"

# 6. The scaffold's own e2e on this cluster.
KUBECONFIG=$kubeconfig make test-e2e KUBECTL="$kubectl_bin" >"$work/e2e.log" 2>&1 ||
  { tail -n 40 "$work/e2e.log" >&2; fail "make test-e2e"; }
grep -q '^e2e: ok$' "$work/e2e.log" || { cat "$work/e2e.log" >&2; fail "make test-e2e did not finish"; }
grep -q '/mutate-demo-example-com-v1-widget admits' "$work/e2e.log" ||
  { cat "$work/e2e.log" >&2; fail "the e2e did not call the mutating webhook"; }
grep -q 'convert turns config/samples/demo_v1_widget.yaml into demo.example.com/v2' "$work/e2e.log" ||
  { cat "$work/e2e.log" >&2; fail "the e2e did not convert"; }
echo "kcr-gen scaffold: ok"
