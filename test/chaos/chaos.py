#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""chaos.py: kcr-operator under injected faults against a local control plane.

Runs two replicas of kcr-operator (leader election on, as the manager
Deployment runs them) on a cluster of its own (scripts/cluster.sh), creates N
Apps and injects faults one by one. After each fault it waits until every App
has converged again and asserts:

  - every App converged: Deployment present, controller-owned by the App, with
    the spec's image and replicas; Service iff spec.port; ConfigMap
    <name>-config iff spec.config, with its data; observedGeneration ==
    generation; finalizer kcr.dev/directory; the directory entry iff spec.port;
    no App left terminating; no orphan (a child labelled managed-by
    kcr-operator whose controller owner App is gone);
  - no two leaders' writes overlap: from the apiserver's audit log, every write
    of a replica (told apart by its client certificate's user) lands while that
    replica holds the Lease (between its acquiring write and the next
    replica's), and within the renew deadline of its last renewal (the
    self-fence);
  - the operator's RSS (VmRSS of each replica, sampled every second) stays
    under --rss-limit-mib.

It prints the recovery time of each fault (injected -> all Apps converged) and
writes the figures as JSON (--report). `--soak SECONDS` instead churns Apps
(create/update/delete) with no fault, samples RSS every 10 s and the heap
every --soak-heap-every seconds (the operators run with --debug-endpoints;
/debug/heap's malloc_info: bytes the heap holds from the system, free in it,
in use), and asserts the plateau: the RSS peak of the last 10-minute window is
within --soak-margin (5 %) of the peak of the window --soak-compare (30)
minutes before it. Shorter soaks bring that window closer, never into the
5-minute warm-up, and shrink the windows to fit.

Faults (--faults, comma separated, default all):
  restart    scripts/cluster.sh restart-apiserver
  compact    scripts/cluster.sh compact, then every replica connection reset
             (the watches resume from before the compaction)
  kill       SIGKILL of the leader while it reconciles a bulk update; the
             supervisor restarts it (as a Deployment would)
  stop       SIGSTOP of the leader past the lease duration, SIGCONT: the other
             replica takes over, the old leader must fence itself and exit
  429        a 429 storm: API Priority and Fairness rejects every request of
             the operator's identity (a PriorityLevel with no seats) for a while
  stall      the leader's connection stalls (kcr_faultproxy: no byte moves,
             the TCP connection stays open) for less than the renew deadline:
             it keeps the Lease, its watches deliver nothing meanwhile
  stall-long the same past the lease duration: the leader fences itself, the
             other replica takes over; bytes held in the stalled connection
             reach the apiserver late (see check_leaders)

Each replica reaches the apiserver through its own kcr_faultproxy process
(test/chaos/faultproxy_main.c, compiled here), authenticated by a client
certificate of its own (CN kcr-chaos-a / kcr-chaos-b, group kcr-chaos, bound
to cluster-admin). The script itself uses the admin kubeconfig directly.

Only the Python standard library, kubectl, openssl and a C compiler are used.
"""
import argparse
import base64
import http.client
import json
import os
import random
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
import xml.etree.ElementTree as ET

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
APP_NS = "chaos-apps"
OP_NS = "chaos-system"
LEASE = "kcr-operator.kcr.dev"
GROUP = "kcr-chaos"
LEASE_DURATION = 15.0  # the operator's defaults (kcr_manager_serving_options)
RENEW_DEADLINE = 10.0
FENCE_SLACK = 1.0
T0 = time.time()


def log(msg):
    print("[chaos %7.1fs] %s" % (time.time() - T0, msg), flush=True)


class Failure(Exception):
    pass


def run(cmd, inp=None, check=True, timeout=300):
    p = subprocess.run(cmd, input=inp, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise Failure("%s: exit %d: %s" % (" ".join(cmd[:4]), p.returncode, p.stderr.strip()[-2000:]))
    return p


class Cluster:
    """A control plane of our own in WORK/cluster."""

    def __init__(self, work):
        self.dir = os.path.join(work, "cluster")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.kubectl_bin = None
        self.port = None

    def up(self):
        out = run(["bash", os.path.join(ROOT, "scripts/build-control-plane.sh"), "--quiet"],
                  timeout=2400).stdout
        for line in out.splitlines():
            if line.startswith("kubectl="):
                self.kubectl_bin = line.split("=", 1)[1]
        if not self.kubectl_bin:
            raise Failure("build-control-plane.sh named no kubectl")
        # Every rotated audit file is kept (100 MB each; cluster.sh keeps one): the
        # leader check reads the whole history, and a 30-minute soak writes ~110 MB.
        env = dict(os.environ)
        env["KCR_APISERVER_ARGS"] = (env.get("KCR_APISERVER_ARGS", "") + " --audit-log-maxbackup=100").strip()
        p = subprocess.run(["bash", os.path.join(ROOT, "scripts/cluster.sh"), "up", self.dir],
                           capture_output=True, text=True, timeout=300, env=env)
        if p.returncode != 0:
            raise Failure("cluster.sh up: exit %d: %s" % (p.returncode, p.stderr.strip()[-2000:]))
        with open(self.kubeconfig) as f:
            self.port = int(re.search(r"server: https://127\.0\.0\.1:(\d+)", f.read()).group(1))

    def down(self):
        run(["bash", os.path.join(ROOT, "scripts/cluster.sh"), "down", self.dir], check=False)

    def script(self, verb):
        run(["bash", os.path.join(ROOT, "scripts/cluster.sh"), verb, self.dir], timeout=300)

    def k(self, *args, inp=None, check=True, timeout=300):
        return run([self.kubectl_bin, "--kubeconfig", self.kubeconfig] + list(args), inp=inp,
                   check=check, timeout=timeout)

    def apply(self, objs):
        """Server-side apply of a list of objects, in one kubectl call."""
        if not objs:
            return
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
        self.k("apply", "--server-side", "--force-conflicts", "--field-manager=chaos", "-f", "-",
               inp=doc)

    def get_json(self, *args):
        return json.loads(self.k("get", "-o", "json", *args, timeout=120).stdout)


class Proxy:
    """A kcr_faultproxy process in front of the apiserver."""

    def __init__(self, binary, port):
        self.p = subprocess.Popen([binary, "127.0.0.1", str(port)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)
        first = self.p.stdout.readline().split()
        if len(first) != 2 or first[0] != "port":
            raise Failure("faultproxy did not start")
        self.port = int(first[1])
        self.lock = threading.Lock()

    def cmd(self, line):
        with self.lock:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
            return self.p.stdout.readline().strip()

    def stop(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()


class Replica:
    """One operator process, restarted by a supervisor thread when it exits."""

    def __init__(self, name, binary, kubeconfig, logdir, concurrency, extra=()):
        self.name = name
        self.extra = list(extra)
        self.user = "kcr-chaos-" + name
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.logpath = os.path.join(logdir, "operator-%s.log" % name)
        self.concurrency = concurrency
        self.proc = None
        self.exits = []  # (start, end, pid, returncode)
        self.stopping = False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.supervise, daemon=True)

    def start(self):
        self.thread.start()

    def supervise(self):
        while not self.stopping:
            env = dict(os.environ, POD_NAMESPACE=OP_NS)
            with open(self.logpath, "a") as out:
                with self.lock:
                    if self.stopping:
                        return
                    self.proc = subprocess.Popen(
                        [self.binary, "--kubeconfig", self.kubeconfig, "--leader-elect",
                         "--leader-election-namespace", OP_NS, "--namespace", APP_NS,
                         "--health-probe-bind-address=127.0.0.1:0",
                         "--max-concurrent-reconciles", str(self.concurrency)] + self.extra,
                        stdout=out, stderr=subprocess.STDOUT, env=env)
                started = time.time()
                rc = self.proc.wait()
            self.exits.append((started, time.time(), self.proc.pid, rc))
            if not self.stopping:
                log("replica %s (pid %d) exited %d; restarting in 1 s" % (self.name, self.proc.pid, rc))
                time.sleep(1)

    def probe_port(self):
        """The health-probe port of the running process, from its log (the last
        "serving health probes on port N" line: restarts append)."""
        port = None
        try:
            with open(self.logpath, errors="replace") as f:
                for line in f:
                    m = re.search(r"serving health probes on port (\d+)", line)
                    if m:
                        port = int(m.group(1))
        except OSError:
            pass
        return port

    def pid(self):
        p = self.proc
        return p.pid if p and p.poll() is None else None

    def signal(self, sig):
        p = self.proc
        if p and p.poll() is None:
            os.kill(p.pid, sig)
            return p.pid
        return None

    def stop(self):
        with self.lock:
            self.stopping = True
        p = self.proc
        if p and p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        self.thread.join(timeout=30)


def heap_snapshot(port):
    """GET /debug/heap (glibc's malloc_info XML) and sum it: what the arenas hold
    from the system (current), what of it is free (fast bins and the rest), and
    in use (the difference). KiB; None when the replica does not answer."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/debug/heap")
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        if resp.status != 200:
            return None
        root = ET.fromstring(body)
    except (OSError, ET.ParseError, http.client.HTTPException):
        return None
    free = sum(int(t.get("size", 0)) for t in root.findall("total") if t.get("type") in ("fast", "rest"))
    system = sum(int(t.get("size", 0)) for t in root.findall("system") if t.get("type") == "current")
    mmap = sum(int(t.get("size", 0)) for t in root.findall("total") if t.get("type") == "mmap")
    return {"system_kib": system // 1024, "free_kib": free // 1024,
            "in_use_kib": (system - free) // 1024, "mmap_kib": mmap // 1024,
            "arenas": len(root.findall("heap"))}


class HeapSampler(threading.Thread):
    """Takes a heap snapshot of every live replica every `period` seconds."""

    def __init__(self, replicas, period):
        super().__init__(daemon=True)
        self.replicas = replicas
        self.period = period
        self.samples = []  # (t, replica, snapshot)
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(self.period):
            for r in self.replicas:
                port = r.probe_port() if r.pid() else None
                snap = heap_snapshot(port) if port else None
                if snap:
                    self.samples.append((time.time(), r.name, snap))


class RssSampler(threading.Thread):
    """Samples VmRSS of every live replica every `period` seconds."""

    def __init__(self, replicas, period):
        super().__init__(daemon=True)
        self.replicas = replicas
        self.period = period
        self.samples = []  # (t, replica, pid, kib)
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            for r in self.replicas:
                pid = r.pid()
                if not pid:
                    continue
                try:
                    with open("/proc/%d/status" % pid) as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                self.samples.append((time.time(), r.name, pid, int(line.split()[1])))
                except OSError:
                    pass
            self.done.wait(self.period)

    def window(self, t0, t1):
        return [s[3] for s in self.samples if t0 <= s[0] < t1]


# --- the Apps -------------------------------------------------------------------


class Model:
    """What the script asked for: App name -> spec."""

    def __init__(self):
        self.apps = {}
        self.serial = 0

    def new_spec(self, i, version=1):
        spec = {"image": "nginx:1.%d" % (20 + version % 10), "replicas": 1 if i % 4 == 0 else 0}
        if i % 2 == 0:
            spec["port"] = 8000 + i % 1000
        if i % 3 != 0:
            spec["config"] = {"index.html": "app %d v%d" % (i, version)}
        return spec

    def add(self, n):
        objs = []
        for _ in range(n):
            i = self.serial
            self.serial += 1
            name = "app-%05d" % i
            self.apps[name] = {"i": i, "version": 1, "spec": self.new_spec(i)}
            objs.append(self.obj(name))
        return objs

    def bump(self, name):
        a = self.apps[name]
        a["version"] += 1
        a["spec"] = self.new_spec(a["i"] + a["version"], a["version"])
        return self.obj(name)

    def obj(self, name):
        return {"apiVersion": "kcr.dev/v1alpha1", "kind": "App",
                "metadata": {"name": name, "namespace": APP_NS}, "spec": self.apps[name]["spec"]}


def controller_uid(obj):
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "App":
            return ref.get("uid")
    return None


def app_problems(label, spec, a, d, s, cm, entry, url):
    """What is wrong with one App (a, as the API server has it) and its children
    (d, s, cm: its Deployment, Service and ConfigMap, or None) against its spec,
    with entry its directory entry (None: none) and url the one it should be.
    label names the App in the problems."""
    problems = []
    uid = a["metadata"]["uid"]
    if a["metadata"].get("generation") != (a.get("status") or {}).get("observedGeneration"):
        problems.append("App %s: observedGeneration %s != generation %s" % (
            label, (a.get("status") or {}).get("observedGeneration"), a["metadata"].get("generation")))
    if "kcr.dev/directory" not in (a["metadata"].get("finalizers") or []):
        problems.append("App %s: no finalizer" % label)
    if d is None:
        problems.append("App %s: no Deployment" % label)
    else:
        if controller_uid(d) != uid:
            problems.append("App %s: Deployment not owned" % label)
        c = d["spec"]["template"]["spec"]["containers"][0]
        if c.get("image") != spec["image"] or d["spec"].get("replicas") != spec["replicas"]:
            problems.append("App %s: Deployment not up to date" % label)
    if "port" in spec:
        if s is None or controller_uid(s) != uid:
            problems.append("App %s: Service missing or not owned" % label)
        elif s["spec"]["ports"][0]["port"] != spec["port"]:
            problems.append("App %s: Service port" % label)
        if entry != url:
            problems.append("App %s: directory entry" % label)
    else:
        if s is not None and controller_uid(s) == uid:
            problems.append("App %s: Service not deleted" % label)
        if entry is not None:
            problems.append("App %s: stale directory entry" % label)
    if "config" in spec:
        if cm is None or controller_uid(cm) != uid:
            problems.append("App %s: ConfigMap missing or not owned" % label)
        elif cm.get("data") != spec["config"]:
            problems.append("App %s: ConfigMap data" % label)
    elif cm is not None and controller_uid(cm) == uid:
        problems.append("App %s: ConfigMap not deleted" % label)
    return problems


def check_converged(cluster, model):
    """Returns a list of problems (empty: converged)."""
    problems = []
    items = cluster.get_json("-n", APP_NS, "apps.kcr.dev,deployments,services,configmaps")["items"]
    apps, children = {}, {"Deployment": {}, "Service": {}, "ConfigMap": {}}
    for o in items:
        if o["kind"] == "App":
            apps[o["metadata"]["name"]] = o
        elif o["kind"] in children:
            children[o["kind"]][o["metadata"]["name"]] = o
    try:
        directory = cluster.get_json("-n", OP_NS, "configmap", "app-directory").get("data") or {}
    except Failure:
        directory = {}
    uids = {a["metadata"]["uid"] for a in apps.values()}
    for name in sorted(set(apps) - set(model.apps)):
        problems.append("App %s should be gone (terminating: %s)" %
                        (name, "deletionTimestamp" in apps[name]["metadata"]))
    for name, want in sorted(model.apps.items()):
        a = apps.get(name)
        if a is None:
            problems.append("App %s missing" % name)
            continue
        port = want["spec"].get("port")
        problems += app_problems(name, want["spec"], a, children["Deployment"].get(name),
                                 children["Service"].get(name),
                                 children["ConfigMap"].get(name + "-config"),
                                 directory.get("%s.%s" % (APP_NS, name)),
                                 "http://%s.%s.svc:%d" % (name, APP_NS, port) if port else None)
    for kind, objs in children.items():
        for name, o in objs.items():
            labels = o["metadata"].get("labels") or {}
            if labels.get("app.kubernetes.io/managed-by") != "kcr-operator":
                continue
            if controller_uid(o) not in uids:
                problems.append("orphan %s %s" % (kind, name))
    for key in directory:
        if key.startswith(APP_NS + ".") and key[len(APP_NS) + 1:] not in model.apps:
            problems.append("orphan directory entry %s" % key)
    return problems


def wait_converged(cluster, model, timeout, what, check=None, poll=0.5):
    """Polls until converged (check: check_converged, or another of the same
    shape). Returns (time the operator's part was done, time everything was: the
    same but for orphans, which garbage collection removes)."""
    check = check or check_converged
    deadline = time.time() + timeout
    problems = ["not checked"]
    last_report = time.time()
    t_operator = None
    while time.time() < deadline:
        problems = check(cluster, model)
        if t_operator is None and all(p.startswith("orphan") for p in problems):
            t_operator = time.time()
        if not problems:
            return t_operator, time.time()
        if time.time() - last_report >= 10:
            last_report = time.time()
            log("%s: %d problems, e.g. %s" % (what, len(problems), "; ".join(problems[:3])))
        time.sleep(poll)
    raise Failure("%s: not converged after %.0f s; %d problems, first: %s" % (
        what, timeout, len(problems), "; ".join(problems[:8])))


# --- the audit log -----------------------------------------------------------------


def ts(s):
    return datetime.strptime(s.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def audit_events(cluster, users):
    logs = os.path.join(cluster.dir, "logs")
    files = sorted(f for f in os.listdir(logs) if f.startswith("audit") and f.endswith(".log")
                   and f != "audit.log")
    files.append("audit.log")
    out = []
    for f in files:
        with open(os.path.join(logs, f)) as fh:
            for line in fh:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                user = (e.get("user") or {}).get("username")
                if user in users:
                    out.append(e)
    out.sort(key=lambda e: e["requestReceivedTimestamp"])
    return out


def check_leaders(cluster, replicas):
    """Every write of a replica lands while it holds the Lease, and within the renew
    deadline (+ FENCE_SLACK) of its last successful renewal. Returns figures.

    A holder's term runs from its first successful Lease write after another
    replica's to the next replica's. A write outside its author's term that the
    apiserver carried out (2xx) is an overlap and fails the suite. One it did
    not carry out (a 409, a 504 "context canceled") changed nothing; it is
    counted as `late_refused`: a request the old leader sent in its term that
    the network delivered after the takeover (the stall fault holds bytes in
    flight, as a buffering middlebox would).
    """
    users = {r.user: r.name for r in replicas}
    events = audit_events(cluster, users)
    acquires = []  # (t, replica): successful Lease writes that changed the writer
    renewed = {}  # user -> time of its last successful Lease write
    holder, writes, bad, late, worst = None, 0, [], [], 0.0
    for e in events:
        ref = e.get("objectRef") or {}
        code = (e.get("responseStatus") or {}).get("code", 0)
        t = ts(e["requestReceivedTimestamp"])
        user = e["user"]["username"]
        if ref.get("resource") == "leases" and ref.get("name") == LEASE:
            if 200 <= code < 300:
                renewed[user] = t
                if user != holder:
                    holder = user
                    acquires.append((t, users[user]))
            continue
        writes += 1
        what = "%s %s %s/%s at %s (code %d)" % (users[user], e.get("verb"), ref.get("resource"),
                                              ref.get("name"), e["requestReceivedTimestamp"], code)
        if user != holder:
            (bad if 200 <= code < 300 else late).append(
                what + " while %s held the Lease" % users.get(holder, "nobody"))
            continue
        # The self-fence: a leader writes only until its last renewal + the renew deadline
        # (the renewal's audit time is no earlier than the attempt's start, which the
        # fence counts from; FENCE_SLACK covers a write's way to the apiserver).
        since = t - renewed[user]
        worst = max(worst, since)
        if since > RENEW_DEADLINE + FENCE_SLACK:
            (bad if 200 <= code < 300 else late).append(
                what + " %.1f s after its last renewal" % since)
    if bad:
        raise Failure("leaders' writes overlap: %d writes outside their holder's term, first: %s"
                      % (len(bad), "; ".join(bad[:5])))
    for what in late[-3:]:
        log("late write, not carried out: " + what)
    return {"writes": writes, "acquires": acquires, "late_refused": len(late),
            "max_write_after_renewal_s": round(worst, 1)}


def leader(cluster, replicas, timeout=60):
    """The replica that made the last successful Lease write (waits for one)."""
    deadline = time.time() + timeout
    users = {r.user: r for r in replicas}
    while time.time() < deadline:
        last = None
        for e in audit_events(cluster, users):
            ref = e.get("objectRef") or {}
            if ref.get("resource") == "leases" and ref.get("name") == LEASE and \
                    200 <= (e.get("responseStatus") or {}).get("code", 0) < 300:
                last = e
        if last is not None:
            r = users[last["user"]["username"]]
            if r.pid() and time.time() - ts(last["requestReceivedTimestamp"]) < LEASE_DURATION / 2:
                return r
        time.sleep(0.5)
    raise Failure("no live leader within %d s" % timeout)


# --- set-up ------------------------------------------------------------------------


def make_cert(cluster, work, name):
    """A client certificate (CN kcr-chaos-NAME, O kcr-chaos) in WORK/NAME.{crt,key}."""
    pki = os.path.join(cluster.dir, "pki")
    key, csr, crt = (os.path.join(work, "%s.%s" % (name, x)) for x in ("key", "csr", "crt"))
    ext = os.path.join(work, "client.ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,"
                "keyEncipherment\nextendedKeyUsage=clientAuth\n")
    run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key])
    run(["openssl", "req", "-new", "-key", key, "-subj", "/O=%s/CN=kcr-chaos-%s" % (GROUP, name),
         "-out", csr])
    run(["openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(pki, "ca.crt"), "-CAkey",
         os.path.join(pki, "ca.key"), "-CAcreateserial", "-days", "2", "-sha256", "-extfile", ext,
         "-out", crt])
    return crt, key


def make_identity(cluster, work, name, proxy_port):
    """A client certificate of its own and a kubeconfig via the proxy at proxy_port."""
    pki = os.path.join(cluster.dir, "pki")
    crt, key = make_cert(cluster, work, name)

    def b64(p):
        with open(p, "rb") as f:
            return base64.b64encode(f.read()).decode()

    kc = os.path.join(work, "kubeconfig-%s" % name)
    with open(kc, "w") as f:
        f.write("""apiVersion: v1
kind: Config
clusters:
- name: chaos
  cluster:
    server: https://127.0.0.1:%d
    certificate-authority-data: %s
users:
- name: kcr-chaos-%s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: chaos
  context: {cluster: chaos, user: kcr-chaos-%s}
current-context: chaos
""" % (proxy_port, b64(os.path.join(pki, "ca.crt")), name, b64(crt), b64(key), name))
    os.chmod(kc, 0o600)
    return kc


def build_proxy(work):
    out = os.path.join(work, "kcr-faultproxy")
    cc = os.environ.get("CC", "cc")
    run([cc, "-std=c11", "-O2", "-D_GNU_SOURCE", "-pthread", "-I", os.path.join(ROOT, "test/support"),
         os.path.join(ROOT, "test/chaos/faultproxy_main.c"),
         os.path.join(ROOT, "test/support/kcr_faultproxy.c"), "-o", out])
    return out


STORM = [
    {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
     "metadata": {"name": "kcr-chaos-storm"},
     "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "lendablePercent": 0,
                                             "borrowingLimitPercent": 0,
                                             "limitResponse": {"type": "Reject"}}}},
    {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
     "metadata": {"name": "kcr-chaos-storm"},
     "spec": {"priorityLevelConfiguration": {"name": "kcr-chaos-storm"}, "matchingPrecedence": 100,
              "distinguisherMethod": {"type": "ByUser"},
              "rules": [{"subjects": [{"kind": "Group", "group": {"name": GROUP}}],
                         "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                            "clusterScope": True, "namespaces": ["*"]}],
                         "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}},
]


class Flood:
    """Threads that keep the storm's priority level busy: GETs as another member of the
    operator's group, so that APF rejects (nearly) every request of the operator."""

    def __init__(self, work, port, threads=4):
        self.ctx = ssl.create_default_context(cafile=os.path.join(work, "cluster/pki/ca.crt"))
        self.ctx.load_cert_chain(os.path.join(work, "flood.crt"), os.path.join(work, "flood.key"))
        self.port = port
        self.stop = threading.Event()
        self.counts = {}
        self.threads = [threading.Thread(target=self.loop, daemon=True) for _ in range(threads)]

    def loop(self):
        conn = None
        while not self.stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=10)
                conn.request("GET", "/api/v1/namespaces/%s/configmaps?limit=100" % APP_NS)
                r = conn.getresponse()
                r.read()
                self.counts[r.status] = self.counts.get(r.status, 0) + 1
            except Exception:
                conn = None
                time.sleep(0.05)

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=15)
        return self.counts


# --- the suite ---------------------------------------------------------------------


class Suite:
    def __init__(self, args):
        self.args = args
        self.work = args.work or tempfile.mkdtemp(prefix="kcr-chaos-")
        os.makedirs(self.work, exist_ok=True)
        self.cluster = Cluster(self.work)
        self.model = Model()
        self.proxies = {}
        self.replicas = []
        self.rss = None
        self.heap = None
        self.results = []
        self.rng = random.Random(16)
        self.during = [None, None]

    # set-up / teardown
    def setup(self):
        log("work dir %s" % self.work)
        proxy_bin = build_proxy(self.work)
        self.cluster.up()
        log("cluster up on port %d" % self.cluster.port)
        c = self.cluster
        c.k("apply", "-f", os.path.join(ROOT, "config/crd/bases/kcr.dev_apps.yaml"))
        c.k("create", "ns", APP_NS)
        c.k("create", "ns", OP_NS)
        c.k("create", "clusterrolebinding", "kcr-chaos", "--clusterrole=cluster-admin",
            "--group=" + GROUP)
        c.k("wait", "--for=condition=Established", "crd/apps.kcr.dev", "--timeout=60s")
        for name in ("a", "b"):
            self.proxies[name] = Proxy(proxy_bin, c.port)
            kc = make_identity(c, self.work, name, self.proxies[name].port)
            extra = ["--debug-endpoints"] if self.args.soak else []
            self.replicas.append(Replica(name, self.args.operator, kc, self.work,
                                         self.args.concurrency, extra))
        make_cert(c, self.work, "flood")
        self.rss = RssSampler(self.replicas, 10.0 if self.args.soak else 1.0)
        self.rss.start()
        if self.args.soak:
            self.heap = HeapSampler(self.replicas, self.args.soak_heap_every)
            self.heap.start()
        t = time.time()
        self.cluster.apply(self.model.add(self.args.apps))
        log("%d Apps created in %.1f s" % (self.args.apps, time.time() - t))
        for r in self.replicas:
            r.start()
        _, done = wait_converged(c, self.model, self.args.converge_timeout, "initial convergence")
        self.initial = done - t
        log("initial convergence of %d Apps: %.1f s" % (self.args.apps, self.initial))

    def teardown(self):
        for r in self.replicas:
            r.stop()
        if self.rss:
            self.rss.done.set()
        if self.heap:
            self.heap.done.set()
        for p in self.proxies.values():
            p.stop()

    # churn applied while a fault is on: updates, drift, creations, deletions
    def churn(self, scale=None):
        k = scale or max(5, self.args.apps // 20)
        names = sorted(self.model.apps)
        objs = [self.model.bump(n) for n in self.rng.sample(names, min(k, len(names)))]
        objs += self.model.add(2)
        self.cluster.apply(objs)
        gone = self.rng.sample(sorted(set(names) - {o["metadata"]["name"] for o in objs}), 2)
        self.cluster.k("-n", APP_NS, "delete", "app", *gone, "--wait=false")
        for n in gone:
            del self.model.apps[n]
        drift = self.rng.choice(sorted(self.model.apps))
        self.cluster.k("-n", APP_NS, "delete", "deployment", drift, "--wait=false", check=False)

    def hold(self, until):
        """Waits until `until` while the fault is on, noting when the Apps converge meanwhile
        (a standby that takes over can converge them before the fault ends)."""
        while time.time() < until:
            problems = check_converged(self.cluster, self.model)
            now = time.time()
            if self.during[0] is None and all(p.startswith("orphan") for p in problems):
                self.during[0] = now
            if self.during[1] is None and not problems:
                self.during[1] = now
            time.sleep(max(0, min(0.5, until - time.time())))

    def record(self, fault, t_inject, t_heal, extra=None):
        t_op, t_done = wait_converged(self.cluster, self.model, self.args.converge_timeout, fault)
        t_heal_done = t_done
        if self.during[1] is not None:
            t_op, t_done = self.during
        elif self.during[0] is not None:
            t_op = self.during[0]
        self.during = [None, None]
        lead = check_leaders(self.cluster, self.replicas)
        rss = self.rss.window(t_inject, t_done + 1)
        peak = max(s[3] for s in self.rss.samples)
        if peak > self.args.rss_limit_mib * 1024:
            raise Failure("%s: RSS %d KiB over the limit %d MiB" % (fault, peak, self.args.rss_limit_mib))
        res = {"fault": fault, "recovery_s": round(t_done - t_inject, 1),
               "operator_recovery_s": round(t_op - t_inject, 1),
               "after_heal_s": round(t_heal_done - t_heal, 1),
               "fault_s": round(t_heal - t_inject, 1),
               "rss_kib_min": min(rss) if rss else None, "rss_kib_max": max(rss) if rss else None,
               "leader_changes": len(lead["acquires"]), "operator_writes": lead["writes"],
               "late_refused_writes": lead["late_refused"],
               "max_write_after_renewal_s": lead["max_write_after_renewal_s"]}
        res.update(extra or {})
        self.results.append(res)
        log("%-10s recovered in %5.1f s (operator's part %.1f s; fault on for %.1f s; %.1f s "
            "after healing); RSS %s-%s KiB; %s" % (
                fault, res["recovery_s"], res["operator_recovery_s"], res["fault_s"],
                res["after_heal_s"], res["rss_kib_min"], res["rss_kib_max"], json.dumps(extra or {})))

    # the faults
    def fault_restart(self):
        t = time.time()
        self.cluster.script("restart-apiserver")
        self.churn()
        self.record("restart", t, time.time())

    def fault_compact(self):
        t = time.time()
        self.churn()
        self.cluster.script("compact")
        time.sleep(1)
        cut = sum(int(p.cmd("cut").split()[1]) for p in self.proxies.values())
        self.record("compact", t, time.time(), {"connections_cut": cut})

    def fault_kill(self):
        lead = leader(self.cluster, self.replicas)
        names = sorted(self.model.apps)
        self.cluster.apply([self.model.bump(n) for n in names])  # every App has work to do
        time.sleep(self.args.kill_after)
        pending = sum(1 for p in check_converged(self.cluster, self.model) if "observedGeneration" in p)
        t = time.time()
        pid = lead.signal(signal.SIGKILL)
        log("SIGKILL leader %s (pid %s) with %d of %d Apps not yet reconciled" % (
            lead.name, pid, pending, len(names)))
        self.churn()
        self.record("kill", t, t, {"killed": lead.name, "pending_at_kill": pending})

    def fault_stop(self):
        lead = leader(self.cluster, self.replicas)
        t = time.time()
        pid = lead.signal(signal.SIGSTOP)
        log("SIGSTOP leader %s (pid %s) for %.0f s" % (lead.name, pid, self.args.stop_seconds))
        self.churn()
        self.hold(t + self.args.stop_seconds)
        os.kill(pid, signal.SIGCONT)
        t_heal = time.time()
        # The old leader must notice it lost the Lease and exit (the supervisor restarts it).
        deadline = t_heal + 30
        while time.time() < deadline and not any(e[2] == pid for e in lead.exits):
            time.sleep(0.2)
        ex = [e for e in lead.exits if e[2] == pid]
        if not ex:
            raise Failure("stop: the old leader %s (pid %d) still runs 30 s after SIGCONT" % (lead.name, pid))
        if ex[0][3] == 0:
            raise Failure("stop: the old leader exited 0 after losing its Lease")
        self.record("stop", t, t_heal, {"stopped": lead.name, "old_leader_exit_after_cont_s":
                                        round(ex[0][1] - t_heal, 1), "old_leader_rc": ex[0][3]})

    def fault_429(self):
        t = time.time()
        flood = Flood(self.work, self.cluster.port)
        self.cluster.apply(STORM)
        flood.start()
        self.churn()
        self.hold(t + self.args.storm_seconds)
        counts = flood.finish()
        codes = {}
        for e in audit_events(self.cluster, {r.user for r in self.replicas}):
            if ts(e["requestReceivedTimestamp"]) >= t:
                code = (e.get("responseStatus") or {}).get("code")
                codes[code] = codes.get(code, 0) + 1
        rejected = codes.get(429, 0)
        self.cluster.k("delete", "flowschema,prioritylevelconfiguration", "kcr-chaos-storm")
        t_heal = time.time()
        if rejected == 0:
            raise Failure("429: the storm rejected no write of the operator")
        self.record("429", t, t_heal, {"operator_writes_by_code": codes,
                                       "flood_gets_by_code": counts})

    def stall(self, fault, seconds):
        lead = leader(self.cluster, self.replicas)
        t = time.time()
        self.proxies[lead.name].cmd("stall 1")
        log("stalled %s's connection for %.0f s" % (lead.name, seconds))
        self.churn()
        self.hold(t + seconds)
        self.proxies[lead.name].cmd("stall 0")
        self.record(fault, t, time.time(), {"stalled": lead.name})

    def fault_stall(self):
        """Shorter than the renew deadline: the leader keeps its Lease; its watches stall."""
        self.stall("stall", self.args.stall_seconds)

    def fault_stall_long(self):
        """Past the lease duration: the leader fences itself, the other takes over."""
        self.stall("stall-long", self.args.stall_long_seconds)

    def soak(self):
        dur = self.args.soak
        t0 = time.time()
        ops = 0
        target = self.args.apps
        while time.time() - t0 < dur:
            names = sorted(self.model.apps)
            objs = [self.model.bump(n) for n in self.rng.sample(names, min(10, len(names)))]
            if len(names) < target * 1.1:
                objs += self.model.add(5)
            self.cluster.apply(objs)
            if len(names) > target * 0.9:
                gone = self.rng.sample(names, 5)
                self.cluster.k("-n", APP_NS, "delete", "app", *gone, "--wait=false")
                for n in gone:
                    self.model.apps.pop(n, None)
            ops += len(objs) + 5
            time.sleep(2)
        wait_converged(self.cluster, self.model, self.args.converge_timeout, "soak")
        # The plateau: the peak of the last window against the peak of the window
        # --soak-compare seconds before it (10-minute windows, 30 minutes apart, in
        # a 60-minute soak); never inside the warm-up.
        warm = min(self.args.soak_warmup, dur / 3)
        win = min(600.0, (dur - warm) / 2)
        gap = min(self.args.soak_compare, dur - warm - win)
        a0, b0 = t0 + dur - win - gap, t0 + dur - win
        s = self.rss.samples
        res = {"fault": "soak", "seconds": dur, "ops": ops, "samples": len(s),
               "warmup_s": warm, "window_s": win, "compare_s": gap,
               "earlier_window_s": [round(a0 - t0), round(a0 - t0 + win)],
               "last_window_s": [round(b0 - t0), round(b0 - t0 + win)]}
        grown = []
        for r in self.replicas:
            mine = [x for x in s if x[1] == r.name]
            early = [x[3] for x in mine if a0 <= x[0] < a0 + win]
            last = [x[3] for x in mine if x[0] >= b0]
            if not early or not last:
                raise Failure("soak: too few RSS samples of replica %s" % r.name)
            heap = [(round(t - t0), snap) for t, name, snap in (self.heap.samples if self.heap else [])
                    if name == r.name]
            # RSS window peaks every 10 minutes from the start, for the report.
            windows = []
            for w0 in range(0, int(dur), 600):
                ws = [x[3] for x in mine if t0 + w0 <= x[0] < t0 + w0 + 600]
                if ws:
                    windows.append({"from_s": w0, "peak_kib": max(ws)})
            res[r.name] = {"rss_kib_min": min(x[3] for x in mine),
                           "rss_kib_max": max(x[3] for x in mine),
                           "earlier_window_peak_kib": max(early), "last_window_peak_kib": max(last),
                           "windows": windows, "heap": heap}
            log("soak: replica %s RSS peak %d KiB (%d-%d s) -> %d KiB (%d-%d s)" % (
                r.name, max(early), a0 - t0, a0 - t0 + win, max(last), b0 - t0, b0 - t0 + win))
            for t, snap in heap[-1:]:
                log("soak: replica %s heap at %d s: %d KiB in use, %d KiB free, %d KiB mmap, %d arenas" % (
                    r.name, t, snap["in_use_kib"], snap["free_kib"], snap["mmap_kib"], snap["arenas"]))
            if max(last) > max(early) * (1 + self.args.soak_margin):
                grown.append("%s %d -> %d KiB" % (r.name, max(early), max(last)))
        self.results.append(res)
        log("soak: %d App operations in %d s" % (ops, dur))
        lead = check_leaders(self.cluster, self.replicas)
        res["operator_writes"] = lead["writes"]
        res["max_write_after_renewal_s"] = lead["max_write_after_renewal_s"]
        if grown:
            raise Failure("soak: RSS grew: " + ", ".join(grown))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--operator", default=os.path.join(ROOT, "build/dev/cmd/kcr-operator/kcr-operator"))
    ap.add_argument("--apps", type=int, default=500)
    ap.add_argument("--faults", default="restart,compact,kill,stop,429,stall,stall-long")
    ap.add_argument("--concurrency", type=int, default=4, help="--max-concurrent-reconciles")
    ap.add_argument("--stop-seconds", type=float, default=25)
    ap.add_argument("--storm-seconds", type=float, default=20)
    ap.add_argument("--stall-seconds", type=float, default=8)
    ap.add_argument("--stall-long-seconds", type=float, default=25)
    ap.add_argument("--kill-after", type=float, default=1.0, help="seconds into a bulk update")
    ap.add_argument("--converge-timeout", type=float, default=600)
    ap.add_argument("--rss-limit-mib", type=float, default=128, help="the manifest's memory limit")
    ap.add_argument("--soak", type=float, default=0, help="churn for this many seconds instead")
    ap.add_argument("--soak-warmup", type=float, default=300)
    ap.add_argument("--soak-margin", type=float, default=0.05,
                    help="the last window's RSS peak may exceed the earlier one's by this much")
    ap.add_argument("--soak-compare", type=float, default=1800,
                    help="seconds between the two windows the plateau check compares")
    ap.add_argument("--soak-heap-every", type=float, default=300,
                    help="seconds between /debug/heap snapshots")
    ap.add_argument("--work", help="work directory (default: a new temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--report", help="write the figures here as JSON")
    args = ap.parse_args()
    if not os.access(args.operator, os.X_OK):
        sys.exit("chaos: no operator binary at %s (make operator)" % args.operator)
    s = Suite(args)
    ok = False
    try:
        s.setup()
        if args.soak:
            s.soak()
        else:
            for f in args.faults.split(","):
                getattr(s, "fault_" + f.strip().replace("-", "_"))()
        ok = True
    except Failure as e:
        log("FAIL: %s" % e)
    finally:
        s.teardown()
        report = {"ok": ok, "apps": args.apps, "concurrency": args.concurrency,
                  "initial_convergence_s": round(getattr(s, "initial", 0), 1),
                  "total_s": round(time.time() - T0, 1), "results": s.results,
                  "rss_kib_min": min((x[3] for x in s.rss.samples), default=None) if s.rss else None,
                  "rss_kib_max": max((x[3] for x in s.rss.samples), default=None) if s.rss else None,
                  "rss_samples": [(round(t - T0, 1), name, kib) for t, name, _, kib in s.rss.samples]
                  if s.rss and args.soak else None,
                  "replica_exits": {r.name: [(round(a - T0, 1), round(b - T0, 1), rc)
                                             for a, b, _, rc in r.exits] for r in s.replicas}}
        print(json.dumps(report, indent=1))
        if args.report:
            with open(args.report, "w") as f:
                json.dump(report, f, indent=1)
        if not ok:
            for r in s.replicas:
                print("--- %s (tail)" % r.logpath)
                subprocess.run(["tail", "-n", "20", r.logpath])
        s.cluster.down()
        if ok and not args.keep and not args.work:
            shutil.rmtree(s.work, ignore_errors=True)
        else:
            log("work dir kept: %s" % s.work)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
