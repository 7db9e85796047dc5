#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""compare_chart.py KUSTOMIZE.yaml HELM.yaml

The Helm chart renders the same objects as config/default, with the same
content. Before comparing, exactly this is normalised, and nothing else:
  - the kustomize side drops its Namespace object (a chart leaves the namespace
    to `helm install --create-namespace`);
  - on the chart side, in metadata.labels: helm.sh/chart,
    app.kubernetes.io/instance and app.kubernetes.io/version are removed and
    app.kubernetes.io/managed-by: Helm becomes kustomize;
  - on the chart side, app.kubernetes.io/instance is removed from the label
    selectors and the labels they select (spec.selector, spec.selector.matchLabels,
    spec.template.metadata.labels, spec.podSelector.matchLabels);
  - on the chart side, the annotation helm.sh/resource-policy (crd.keep) is
    removed, and an annotations map left empty with it.
Objects are matched by kind/namespace/name and compared as parsed YAML
(mapping order and quoting do not matter; list order does). Prints each
difference with its path; exit 1 if any.
"""
import sys

import yaml

HELM_LABELS = ("helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version")


def load(path):
    with open(path) as f:
        return {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
                for d in yaml.safe_load_all(f) if d}


def drop(m, keys):
    if isinstance(m, dict):
        for k in keys:
            m.pop(k, None)


def normalise(d):
    md = d["metadata"]
    labels = md.get("labels")
    drop(labels, HELM_LABELS)
    if labels and labels.get("app.kubernetes.io/managed-by") == "Helm":
        labels["app.kubernetes.io/managed-by"] = "kustomize"
    anns = md.get("annotations")
    drop(anns, ("helm.sh/resource-policy",))
    if anns is not None and not anns:
        del md["annotations"]
    spec = d.get("spec", {})
    if isinstance(spec, dict):
        sel = spec.get("selector")
        drop(sel, ("app.kubernetes.io/instance",))
        if isinstance(sel, dict):
            drop(sel.get("matchLabels"), ("app.kubernetes.io/instance",))
        drop(spec.get("template", {}).get("metadata", {}).get("labels"), ("app.kubernetes.io/instance",))
        drop(spec.get("podSelector", {}).get("matchLabels"), ("app.kubernetes.io/instance",))


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append("%s.%s: only in the chart: %r" % (path, k, b[k]))
            elif k not in b:
                out.append("%s.%s: only in kustomize: %r" % (path, k, a[k]))
            else:
                diff(a[k], b[k], "%s.%s" % (path, k), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), out)
    elif a != b:
        out.append("%s: kustomize %r, chart %r" % (path, a, b))


def main():
    k, h = load(sys.argv[1]), load(sys.argv[2])
    for key in [key for key in k if key[0] == "Namespace"]:
        del k[key]
    out = []
    for key in sorted(set(k) | set(h)):
        name = "/".join(key)
        if key not in h:
            out.append("%s: rendered by kustomize only" % name)
        elif key not in k:
            out.append("%s: rendered by the chart only" % name)
        else:
            normalise(h[key])
            diff(k[key], h[key], name, out)
    for line in out:
        print(line)
    print("compare_chart: %d objects in both, %d differences" % (len(set(k) & set(h)), len(out)))
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
