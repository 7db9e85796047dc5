#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_helm_chart.sh: dist/chart renders what config/default renders.
#  1. helm is built from the Go module proxy (scripts/build-go-tool.sh; cached
#     in ~/.cache/kcr/helm/<version>); a failed build fails the test.
#  2. the chart's generated templates (crd/, rbac/) are current
#     (scripts/build-chart.sh; `make helm-chart`), and `helm lint` passes;
#  3. `helm template --namespace kcr-system` and `kubectl kustomize
#     config/default` hold the same objects by kind/namespace/name with the same
#     content after compare_chart.py's normalisation (its header lists exactly
#     what is normalised: the Namespace object, Helm's own labels, the
#     instance label in selectors, the resource-policy annotation);
#  4. the comparison is not vacuous: a different image tag is reported;
#  5. with --namespace other every reference still resolves
#     (check_manifests.py), and webhook.enable=false certmanager.enable=false
#     leaves no webhook, Certificate or conversion behind;
#  6. each of dist/chart's switches and each of the golden chart kcr-gen helm
#     makes (test/unit/data/kcr-gen/helm/chart), off alone and webhook with
#     certmanager off, leave out just their parts and nothing that names them
#     (check_chart_switches.py; on dist/chart also every reference resolves).
# Needs no cluster. Prints "N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kcr-helm-chart.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAIL: $1" >&2; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }

if ! helm=$(bash "$root/scripts/build-go-tool.sh" helm 2>"$work/build.log" | sed -n 's/^helm=//p') ||
  [ ! -x "$helm" ]; then
  cat "$work/build.log" >&2
  bad "helm could not be built from tools/helm (scripts/build-go-tool.sh helm; output above)"
  finish
fi
ok "helm: $("$helm" version --short) ($helm)"
kubectl=${KCR_KUBECTL:-$(bash "$root/scripts/build-control-plane.sh" --quiet 2>"$work/cp.log" | sed -n 's/^kubectl=//p')}
if [ -z "$kubectl" ] || [ ! -x "$kubectl" ]; then
  cat "$work/cp.log" >&2
  bad "no kubectl (scripts/build-control-plane.sh)"
  finish
fi

cp -r "$root/dist/chart" "$work/chart"
if KUBECTL=$kubectl bash "$root/scripts/build-chart.sh" "$work/chart" 2>"$work/gen.log" &&
  diff -r "$root/dist/chart" "$work/chart" >"$work/gen.diff"; then
  ok "dist/chart's generated templates (crd/, rbac/) are current"
else
  cat "$work/gen.log" "$work/gen.diff" >&2
  bad "dist/chart is stale: run 'make helm-chart' (scripts/build-chart.sh)"
fi
if "$helm" lint "$root/dist/chart" >"$work/lint.log" 2>&1; then
  ok "helm lint dist/chart"
else
  cat "$work/lint.log" >&2
  bad "helm lint dist/chart"
fi

"$kubectl" kustomize "$root/config/default" >"$work/kustomize.yaml" || bad "kubectl kustomize config/default"
if "$helm" template kcr "$root/dist/chart" --namespace kcr-system >"$work/helm.yaml" 2>"$work/helm.log" &&
  python3 "$root/test/integration/compare_chart.py" "$work/kustomize.yaml" "$work/helm.yaml" >"$work/cmp.log"; then
  ok "helm template and kubectl kustomize config/default: $(tail -n 1 "$work/cmp.log")"
else
  cat "$work/helm.log" "$work/cmp.log" >&2
  bad "helm template differs from kubectl kustomize config/default"
fi

"$helm" template kcr "$root/dist/chart" --namespace kcr-system \
  --set controllerManager.container.image.tag=other >"$work/helm-tag.yaml" 2>&1
if ! python3 "$root/test/integration/compare_chart.py" "$work/kustomize.yaml" "$work/helm-tag.yaml" >"$work/cmp-tag.log" &&
  grep -q "containers\[0\].image: kustomize 'kcr-operator:latest', chart 'kcr-operator:other'" "$work/cmp-tag.log"; then
  ok "a different image tag is reported as a difference"
else
  cat "$work/cmp-tag.log" >&2
  bad "the comparison missed a changed image tag"
fi

if "$helm" template kcr "$root/dist/chart" --namespace other 2>&1 |
  python3 "$root/test/integration/check_manifests.py" kcr- other >"$work/other.log"; then
  ok "--namespace other: $(tail -n 1 "$work/other.log")"
else
  cat "$work/other.log" >&2
  bad "--namespace other: references do not resolve"
fi
"$helm" template kcr "$root/dist/chart" --namespace kcr-system \
  --set webhook.enable=false,certmanager.enable=false >"$work/nowebhook.yaml" 2>&1
if ! grep -q -E '^kind: (ValidatingWebhookConfiguration|MutatingWebhookConfiguration|Certificate|Issuer)$|conversion:|webhook-cert|inject-ca-from' \
  "$work/nowebhook.yaml" && grep -q '^kind: Deployment$' "$work/nowebhook.yaml"; then
  ok "webhook.enable=false certmanager.enable=false: no webhook, certificate or conversion"
else
  bad "webhook.enable=false certmanager.enable=false still renders webhook parts"
fi

# switches NAME CHART NS REFS...: render CHART with each switch off (and webhook
# with certmanager) and check what goes (check_chart_switches.py REFS).
switches() {
  local name=$1 chart=$2 ns=$3 s set
  shift 3
  "$helm" template rel "$chart" --namespace "$ns" >"$work/all.yaml" 2>&1 ||
    { cat "$work/all.yaml" >&2; bad "helm template $chart"; return; }
  for s in rbac webhook certmanager metrics crd prometheus networkPolicy "webhook certmanager"; do
    set=$(printf '%s.enable=false,' $s)
    if "$helm" template rel "$chart" --namespace "$ns" --set "${set%,}" >"$work/off.yaml" 2>&1 &&
      python3 "$root/test/integration/check_chart_switches.py" "$@" "$work/all.yaml" "$work/off.yaml" $s \
        >"$work/switch.log"; then
      ok "$name: $(tail -n 1 "$work/switch.log")"
    else
      cat "$work/off.yaml" "$work/switch.log" >&2
      bad "$name: ${set%,}"
    fi
  done
}
# dist/chart turns prometheus and networkPolicy on for this check: off by default.
cp -r "$root/dist/chart" "$work/kcr-chart"
sed -i '/^prometheus:$/,/^$/s/enable: false/enable: true/; /^networkPolicy:$/,/^$/s/enable: false/enable: true/' \
  "$work/kcr-chart/values.yaml"
switches dist/chart "$work/kcr-chart" kcr-system --refs kcr- kcr-system
switches "kcr-gen helm's golden chart" "$root/test/unit/data/kcr-gen/helm/chart" shop-system
finish
