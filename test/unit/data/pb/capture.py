#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""capture.py KUBECONFIG OUTDIR: the fixtures of test_pbscan.c.

With objects.yaml applied in namespace pbt of a local cluster
(scripts/cluster.sh), it GETs each list below twice, in protobuf and in JSON,
until both name the same resourceVersion, and writes NAME.pb and NAME.json:
the API server's own encodings of the same objects, which test_pbscan.c
compares after transcoding. It also writes watch.pb, a protobuf watch stream
of the namespace's ConfigMaps streamed as initial events up to the bookmark.
Not run by the tests: rerun it when the control plane's version changes.
"""
import base64, http.client, json, os, ssl, struct, sys, tempfile, urllib.parse
import yaml

PB = "application/vnd.kubernetes.protobuf"
LISTS = {
    "configmaps": "/api/v1/namespaces/pbt/configmaps",
    "secrets": "/api/v1/namespaces/pbt/secrets",
    "pods": "/api/v1/namespaces/pbt/pods",
    "services": "/api/v1/namespaces/pbt/services",
    "deployments": "/apis/apps/v1/namespaces/pbt/deployments",
    "replicasets": "/apis/apps/v1/namespaces/pbt/replicasets",
    "leases": "/apis/coordination.k8s.io/v1/namespaces/pbt/leases",
    "events": "/apis/events.k8s.io/v1/namespaces/pbt/events",
    "cronjobs": "/apis/batch/v1/namespaces/pbt/cronjobs",
    "hpas": "/apis/autoscaling/v2/namespaces/pbt/horizontalpodautoscalers",
    "pdbs": "/apis/policy/v1/namespaces/pbt/poddisruptionbudgets",
    "networkpolicies": "/apis/networking.k8s.io/v1/namespaces/pbt/networkpolicies",
    "roles": "/apis/rbac.authorization.k8s.io/v1/namespaces/pbt/roles",
    "namespace": "/api/v1/namespaces/pbt",
    "status-404": "/api/v1/namespaces/pbt/configmaps/absent",
}


def connect(kubeconfig):
    kc = yaml.safe_load(open(kubeconfig))
    cl, u = kc["clusters"][0]["cluster"], kc["users"][0]["user"]
    tmp = tempfile.mkdtemp()

    def blob(name, data):
        path = os.path.join(tmp, name)
        open(path, "wb").write(base64.b64decode(data))
        return path

    ctx = ssl.create_default_context(cafile=blob("ca", cl["certificate-authority-data"]))
    if "client-certificate-data" in u:
        ctx.load_cert_chain(blob("cert", u["client-certificate-data"]),
                            blob("key", u["client-key-data"]))
    auth = {"Authorization": "Bearer " + u["token"]} if "token" in u else {}
    url = urllib.parse.urlparse(cl["server"])
    return lambda: http.client.HTTPSConnection(url.hostname, url.port, context=ctx), auth


def get(conn, auth, path, accept):
    c = conn()
    c.request("GET", path, headers={"Accept": accept, **auth})
    r = c.getresponse()
    return r.read()


def main():
    conn, auth = connect(sys.argv[1])
    out = sys.argv[2]
    for name, path in LISTS.items():
        for _ in range(10):
            pb = get(conn, auth, path, PB)
            js = get(conn, auth, path, "application/json")
            rv = json.loads(js).get("metadata", {}).get("resourceVersion")
            if not rv or rv.encode() in pb:
                break
        open(os.path.join(out, name + ".pb"), "wb").write(pb)
        open(os.path.join(out, name + ".json"), "wb").write(js)
    c = conn()
    c.request("GET", LISTS["configmaps"] + "?watch=true&sendInitialEvents=true"
              "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1",
              headers={"Accept": PB, **auth})
    stream = c.getresponse().read()
    open(os.path.join(out, "watch.pb"), "wb").write(stream)


if __name__ == "__main__":
    main()
