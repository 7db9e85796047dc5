# SPDX-License-Identifier: MIT
# certmanager_standins.sh: sourced by the tests that dry-run an installer with
# cert-manager objects in it (test_install_yaml.sh, test_kcr_gen_scaffold.sh).
#
# certmanager_standins KUBECTL [ARGS...] makes cert-manager's Issuer and
# Certificate kinds known to the cluster when cert-manager is not installed:
# schema-free stand-in CRDs, waited for until Established. It prints the name
# of each CRD it made (one a line), for the caller to delete afterwards.
certmanager_standins() {
  local kind plural
  for kind in Issuer Certificate; do
    plural=$(tr '[:upper:]' '[:lower:]' <<<"$kind")s
    "$@" get crd "$plural.cert-manager.io" >/dev/null 2>&1 && continue
    "$@" apply -f - >/dev/null <<CRD
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: $plural.cert-manager.io
spec:
  group: cert-manager.io
  names: {kind: $kind, plural: $plural, listKind: ${kind}List, singular: ${plural%s}}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
CRD
    # kubectl wait fails at once while a new CRD has no status yet: retry.
    for _ in 1 2 3 4 5 6 7 8 9; do
      "$@" wait --for=condition=Established "crd/$plural.cert-manager.io" --timeout=60s \
        >/dev/null 2>&1 && break
      sleep 0.5
    done
    "$@" wait --for=condition=Established "crd/$plural.cert-manager.io" --timeout=60s >/dev/null
    echo "$plural.cert-manager.io"
  done
}
