#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_chart_switches.py [--refs PREFIX NAMESPACE] ALL.yaml OFF.yaml SWITCH...

Checks a chart's switches (kcr-gen helm's, or dist/chart's): ALL.yaml is
`helm template` with the defaults, OFF.yaml the same with SWITCH.enable=false
for each SWITCH (rbac, webhook, certmanager, metrics, crd, prometheus,
networkPolicy). It checks, by rules of its own (not the generator's):

  - exactly the objects of the parts switched off are gone: the RBAC kinds
    (rbac); the webhook configurations, the webhook Service and its
    Certificate and NetworkPolicy (webhook); the Issuer and the Certificates
    (certmanager); the metrics Service, its Certificate, NetworkPolicy and the
    ServiceMonitor (metrics); the ServiceMonitor (prometheus), the CRDs (crd)
    and the NetworkPolicies (networkPolicy);
  - nothing left names what went: no cert-manager CA injection (the
    webhooks' certificate's) without certmanager or webhook, no conversion webhook without webhook, and the manager has no
    --webhook-cert-path, webhook port or webhook certificate volume without
    webhook, no --metrics-* flag without metrics, no metrics certificate
    volume without metrics and certmanager; every mount names a volume and
    every --*-cert-path flag a mounted directory; no ServiceMonitor's
    tlsConfig reads a Secret whose Certificate went;
  - with --refs, check_manifests.py PREFIX NAMESPACE finds no problem in
    OFF.yaml (a reference that does not resolve) that it does not find in
    ALL.yaml, given, without rbac, the ServiceAccount the manager names (the
    user's).
Prints one line per problem; exit 1 if any.
"""
import os
import re
import subprocess
import sys

import yaml


def load(path):
    with open(path) as f:
        return {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
                for d in yaml.safe_load_all(f) if d}


def needs(kind, name, doc):
    """The switches an object of the chart needs on."""
    rbac = {"ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
    if kind in rbac:
        return {"rbac"}
    if kind == "CustomResourceDefinition":
        return {"crd"}
    if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        return {"webhook"}
    if kind == "Service":
        return {"webhook"} if "webhook" in name else {"metrics"}
    if kind == "Issuer":
        return {"certmanager"}
    if kind == "Certificate":
        metrics = "metrics" in name or "metrics" in doc["spec"].get("secretName", "")
        return {"certmanager", "metrics" if metrics else "webhook"}
    if kind == "ServiceMonitor":
        return {"prometheus", "metrics"}
    if kind == "NetworkPolicy":
        return {"networkPolicy"} | ({"webhook"} if "webhook" in name else
                                    {"metrics"} if "metrics" in name else set())
    return set()


def secrets(objs):
    """The Secrets the Certificates among objs fill."""
    return {d["spec"].get("secretName") for k, d in objs.items() if k[0] == "Certificate"}


def manager_problems(dep, off):
    out = []
    pod = dep["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    for v in volumes.values():
        secret = v.get("secret", {}).get("secretName", "")
        if "webhook" in secret and "webhook" in off:
            out.append("volume %s: the webhook certificate without webhook" % v["name"])
        if "metrics" in secret and off & {"metrics", "certmanager"}:
            out.append("volume %s: the metrics certificate without metrics or certmanager" % v["name"])
    for c in pod["containers"]:
        mounts = {m["mountPath"]: m for m in c.get("volumeMounts") or []}
        for m in mounts.values():
            if m["name"] not in volumes:
                out.append("container %s: mount %s names no volume" % (c["name"], m["name"]))
        for a in c.get("args") or []:
            if a.startswith("--webhook-") and "webhook" in off:
                out.append("container %s: %s without webhook" % (c["name"], a))
            if a.startswith("--metrics-") and "metrics" in off:
                out.append("container %s: %s without metrics" % (c["name"], a))
            if "-cert-path=" in a and a.split("=", 1)[1] not in mounts:
                out.append("container %s: %s is no mounted directory" % (c["name"], a))
        for p in c.get("ports") or []:
            if "webhook" in p.get("name", "") and "webhook" in off:
                out.append("container %s: port %s without webhook" % (c["name"], p["name"]))
    return out


def main():
    args = sys.argv[1:]
    refs = None
    if args[:1] == ["--refs"]:
        refs, args = args[1:3], args[3:]
    full, cut, off = load(args[0]), load(args[1]), set(args[2:])
    problems = []
    want = {k for k, d in full.items() if not needs(k[0], k[2], d) & off}
    for k in sorted(want ^ set(cut)):
        problems.append("%s %s/%s: %s" % (k[0], k[1], k[2], "left in" if k in cut else "gone"))
    for k, d in cut.items():
        where = "%s %s/%s" % k
        anns = d["metadata"].get("annotations") or {}
        if off & {"certmanager", "webhook"} and any(a.startswith("cert-manager.io/inject-ca-from")
                                                    for a in anns):
            problems.append("%s: CA injection without certmanager or webhook" % where)
        if "webhook" in off and k[0] == "CustomResourceDefinition" and "conversion" in d["spec"]:
            problems.append("%s: a conversion webhook without webhook" % where)
        if k[0] == "Deployment":
            problems += ["%s: %s" % (where, p) for p in manager_problems(d, off)]
        if k[0] == "ServiceMonitor":
            for ep in d["spec"].get("endpoints") or []:
                tls = ep.get("tlsConfig") or {}
                for name in (tls.get("ca", {}).get("secret", {}).get("name"),
                             tls.get("cert", {}).get("secret", {}).get("name"),
                             tls.get("keySecret", {}).get("name")):
                    if name in secrets(full) and name not in secrets(cut):
                        problems.append("%s: tlsConfig reads Secret %s, which no Certificate fills"
                                        % (where, name))
    if refs:
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_manifests.py")

        def check(docs):
            r = subprocess.run([sys.executable, here] + refs, input=yaml.safe_dump_all(docs),
                               capture_output=True, text=True)
            if r.returncode not in (0, 1) or not r.stdout:
                return ["failed: " + r.stderr.strip().replace("\n", " | ")]
            # the same problem, whatever the container ports listed at its end
            return [re.sub(r" \[[^]]*\]$", "", l) for l in r.stdout.splitlines()[:-1]]

        docs = list(cut.values())
        if "rbac" in off:
            for d in docs:
                if d["kind"] == "Deployment":
                    docs.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {
                        "name": d["spec"]["template"]["spec"]["serviceAccountName"],
                        "namespace": d["metadata"]["namespace"]}})
                    break
        before = set(check(list(full.values())))
        problems += ["check_manifests: " + l for l in check(docs) if l not in before]
    for p in problems:
        print(p)
    print("check_chart_switches: %s off: %d objects of %d, %d problems"
          % (",".join(sorted(off)), len(cut), len(full), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
