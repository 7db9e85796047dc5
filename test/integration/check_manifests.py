#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_manifests.py PREFIX NAMESPACE < rendered.yaml

Checks that a rendering of config/default (or of an overlay over it) is
consistent: every object but the CRD and the Namespace (NAMESPACE itself) is named PREFIX..., every namespaced
object is in NAMESPACE, and every reference between objects resolves:
binding roleRefs and ServiceAccount subjects, the Deployment's
serviceAccountName, the webhook and conversion clientConfig Services (whose
target port is one the manager's container serves), Service selectors (they
select the manager's pods), Certificate issuerRefs and DNS names (the name of
a Service here), and cert-manager's inject-ca-from annotations (a
Certificate here). Prints one line per problem; exit 1 if any.
"""
import sys

import yaml

CLUSTER_KINDS = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
                 "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}


def main():
    prefix, namespace = sys.argv[1], sys.argv[2]
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
    objs = {}
    for d in docs:
        md = d["metadata"]
        objs[(d["kind"], md.get("namespace", ""), md["name"])] = d
    problems = []

    def need(kind, ns, name, why):
        if (kind, ns, name) not in objs:
            problems.append("%s: no %s %s/%s" % (why, kind, ns, name))

    deploys = [d for d in docs if d["kind"] == "Deployment"]
    if len(deploys) != 1:
        problems.append("want one Deployment, have %d" % len(deploys))
        deploys = deploys[:1] or [{"spec": {"template": {"metadata": {}, "spec": {"containers": []}}}}]
    pod = deploys[0]["spec"]["template"]
    pod_labels = pod["metadata"].get("labels", {})
    container_ports = {p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports") or []}

    for (kind, ns, name), d in objs.items():
        where = "%s %s/%s" % (kind, ns, name)
        if kind not in ("CustomResourceDefinition", "Namespace") and not name.startswith(prefix):
            problems.append("%s: name does not start with %s" % (where, prefix))
        if kind in CLUSTER_KINDS:
            if ns:
                problems.append("%s: cluster-scoped object with a namespace" % where)
        elif ns != namespace:
            problems.append("%s: not in namespace %s" % (where, namespace))
        if kind == "Namespace" and name != namespace:
            problems.append("%s: the namespace is not %s" % (where, namespace))
        if kind in ("RoleBinding", "ClusterRoleBinding"):
            rr = d["roleRef"]
            need(rr["kind"], ns if rr["kind"] == "Role" else "", rr["name"], where + " roleRef")
            for s in d.get("subjects", []):
                if s["kind"] == "ServiceAccount":
                    need("ServiceAccount", s.get("namespace", ns), s["name"], where + " subject")
        if kind == "Deployment":
            need("ServiceAccount", ns, d["spec"]["template"]["spec"].get("serviceAccountName", "default"),
                 where + " serviceAccountName")
        if kind == "Service":
            sel = d["spec"].get("selector", {})
            if not sel or any(pod_labels.get(k) != v for k, v in sel.items()):
                problems.append("%s: its selector %s does not select the manager's pods" % (where, sel))
            for p in d["spec"]["ports"]:
                if p.get("targetPort", p["port"]) not in container_ports:
                    problems.append("%s: port %s targets %s, not a container port %s"
                                    % (where, p["port"], p.get("targetPort"), sorted(container_ports)))
        services = []
        if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            services = [w["clientConfig"]["service"] for w in d["webhooks"]]
        if kind == "CustomResourceDefinition" and d["spec"].get("conversion", {}).get("strategy") == "Webhook":
            services = [d["spec"]["conversion"]["webhook"]["clientConfig"]["service"]]
        for s in services:
            need("Service", s["namespace"], s["name"], where + " clientConfig.service")
        inject = (d["metadata"].get("annotations") or {}).get("cert-manager.io/inject-ca-from")
        if inject is not None:
            cns, _, cname = inject.partition("/")
            need("Certificate", cns, cname, where + " inject-ca-from")
        if kind == "Certificate":
            need("Issuer", ns, d["spec"]["issuerRef"]["name"], where + " issuerRef")
            for dns in d["spec"]["dnsNames"]:
                parts = dns.split(".")
                if len(parts) < 3 or parts[2] != "svc":
                    problems.append("%s: DNS name %s is not a Service's" % (where, dns))
                else:
                    need("Service", parts[1], parts[0], "%s DNS name %s" % (where, dns))
    for p in problems:
        print(p)
    print("check_manifests: %d objects, %d problems" % (len(objs), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
