#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sharded.py: kcr-operator run sharded, under membership changes and faults.

Runs N replicas of kcr-operator with --shard-ring (no leader election: every
replica reconciles the Apps of its part of the namespaces) on a cluster of its
own (scripts/cluster.sh, with the API server's ShardedListAndWatch gate on),
creates --apps Apps spread over --namespaces namespaces, and checks:

  - disjoint caches: from each replica's /debug/informers, the Apps and the
    children its informers hold; each replica holds at most --max-share of
    them, and together they hold each exactly once;
  - zero overlap: every reconcile logs its start and end on the monotonic
    clock (kcr-operator at V(2)); no App is reconciled by two processes in
    overlapping intervals. A reconcile still running when its process was
    killed ends at the kill. One that spans a SIGSTOP of its process is
    reported apart: its replica was fenced meanwhile, so the check there is
    the API server's audit log: no write of that replica's user (its own
    client certificate) from its renew deadline after the stop until it
    owned a part again;
  - nothing lost: after each step every App converges (chaos.py's checks,
    over every namespace), and the time it took is reported.

Steps (--steps, comma separated, default all, in this order):
  cost     a single unsharded replica against the N sharded ones on the same
           churn: each replica's RSS and CPU against the single one's
  scale    N -> N+2 -> 2 replicas (the leavers stopped with SIGTERM), then
           back to N
  term     SIGTERM of a replica, then churn; it comes back (a Deployment's
           restart): the graceful handover
  kill     SIGKILL of a replica, then churn; it comes back with a new
           identity, and its Apps wait for its old Lease to expire
  stop     SIGSTOP of a replica past the lease duration during churn, SIGCONT

--shard-key=uid runs the replicas on the uid key (try --namespaces 1): the
Apps split by uid, their children kept by their owner's uid on the client.

Figures go to --report as JSON. `make chaos-sharded` runs it with 3,000
Apps in 30 namespaces; the integration test runs a short version.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos  # noqa: E402  (the cluster, identities, the audit log)
from chaos import Failure, log  # noqa: E402

ROOT = chaos.ROOT
OP_NS = "kcr-system"  # config/sharded's namespace: its Roles are used as rendered
RING = "apps"
LEASE_DURATION = 15.0  # the shard member's defaults
RENEW_DEADLINE = 10.0
SLACK = 1.0
MANAGED = "app.kubernetes.io/managed-by=kcr-operator"
NS_LABEL = "kcr.dev/apps=true"  # the namespaces the replicas split evenly


class Proc:
    """One operator process: a replica's incarnation, with its own log."""

    def __init__(self, replica, seq, popen, logpath):
        self.replica = replica
        self.seq = seq
        self.p = popen
        self.logpath = logpath
        self.killed_mono = None  # CLOCK_MONOTONIC when SIGKILLed
        self.stops = []  # (mono stop, mono cont, wall stop, wall cont)

    @property
    def name(self):
        return "%s#%d" % (self.replica.name, self.seq)

    def alive(self):
        return self.p.poll() is None


class Replica:
    """A replica slot: its identity (a client certificate of its own) and its
    processes; with `restart`, a process that exits is started again, as a
    Deployment's would be."""

    def __init__(self, suite, name):
        self.suite = suite
        self.name = name
        self.user = "kcr-chaos-" + name
        self.kubeconfig = chaos.make_identity(suite.cluster, suite.work, name, suite.cluster.port)
        self.procs = []
        self.restart = True
        self.lock = threading.Lock()
        self.thread = None

    def spawn(self):
        a = self.suite.args
        seq = len(self.procs)
        logpath = os.path.join(self.suite.work, "operator-%s-%d.log" % (self.name, seq))
        args = [a.operator, "--kubeconfig", self.kubeconfig, "--health-probe-bind-address=127.0.0.1:0",
                "--debug-endpoints", "--zap-log-level=2",
                "--max-concurrent-reconciles", str(a.concurrency)]
        if self.suite.sharded:
            args += ["--shard-ring=" + RING, "--shards=%d" % self.suite.expected]
            if a.shard_key == "uid":
                args += ["--shard-key=uid"]
            else:
                args += ["--shard-namespace-selector=" + NS_LABEL]
        with open(logpath, "w") as out:
            p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                 env=dict(os.environ, POD_NAMESPACE=OP_NS))
        proc = Proc(self, seq, p, logpath)
        self.procs.append(proc)
        self.suite.all_procs.append(proc)
        return proc

    def start(self):
        self.restart = True
        self.spawn()
        self.thread = threading.Thread(target=self.supervise, daemon=True)
        self.thread.start()

    def supervise(self):
        while True:
            with self.lock:
                cur = self.procs[-1]
            rc = cur.p.wait()
            with self.lock:
                if not self.restart:
                    return
                log("%s exited %d; starting it again in 1 s" % (cur.name, rc))
            time.sleep(1)
            with self.lock:
                if not self.restart:
                    return
                self.spawn()

    def current(self):
        with self.lock:
            return self.procs[-1] if self.procs else None

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Stops the replica for good (no restart)."""
        with self.lock:
            self.restart = False
            cur = self.procs[-1] if self.procs else None
        if cur and cur.alive():
            os.kill(cur.p.pid, signal.SIGCONT)
            os.kill(cur.p.pid, sig)
            try:
                cur.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                cur.killed_mono = time.monotonic()
                cur.p.kill()
                cur.p.wait()
                raise Failure("%s did not stop within %d s of %s" % (cur.name, timeout, sig.name))
        if self.thread:
            self.thread.join(timeout=10)

    def probe_port(self):
        cur = self.current()
        if not cur:
            return None
        try:
            with open(cur.logpath, errors="replace") as f:
                for line in f:
                    m = re.search(r"serving health probes on port (\d+)", line)
                    if m:
                        return int(m.group(1))
        except OSError:
            pass
        return None


def proc_cpu_s(pid):
    """utime + stime of pid in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


class Model(chaos.Model):
    """chaos.py's Model over several namespaces: (namespace, name) -> spec."""

    def __init__(self, namespaces):
        super().__init__()
        self.namespaces = namespaces

    def new_spec(self, i, version=1):
        spec = super().new_spec(i, version)
        spec["replicas"] = 0  # the test is about the operator, not about Pods
        return spec

    def add(self, n):
        objs = []
        for _ in range(n):
            i = self.serial
            self.serial += 1
            key = (self.namespaces[i % len(self.namespaces)], "app-%05d" % i)
            self.apps[key] = {"i": i, "version": 1, "spec": self.new_spec(i)}
            objs.append(self.obj(key))
        return objs

    def obj(self, key):
        return {"apiVersion": "kcr.dev/v1alpha1", "kind": "App",
                "metadata": {"name": key[1], "namespace": key[0]}, "spec": self.apps[key]["spec"]}


def check_converged(cluster, model):
    """chaos.py's checks over every namespace. Returns a list of problems."""
    problems = []
    apps = {}
    for o in cluster.get_json("-A", "apps.kcr.dev")["items"]:
        apps[(o["metadata"]["namespace"], o["metadata"]["name"])] = o
    children = {"Deployment": {}, "Service": {}, "ConfigMap": {}}
    for o in cluster.get_json("-A", "-l", MANAGED, "deployments,services,configmaps")["items"]:
        children[o["kind"]][(o["metadata"]["namespace"], o["metadata"]["name"])] = o
    try:
        directory = cluster.get_json("-n", OP_NS, "configmap", "app-directory").get("data") or {}
    except Failure:
        directory = {}
    uids = {a["metadata"]["uid"] for a in apps.values()}
    for key in sorted(set(apps) - set(model.apps)):
        problems.append("App %s/%s should be gone" % key)
    for key, want in sorted(model.apps.items()):
        ns, name = key
        a = apps.get(key)
        if a is None:
            problems.append("App %s/%s missing" % key)
            continue
        port = want["spec"].get("port")
        problems += chaos.app_problems("%s/%s" % key, want["spec"], a, children["Deployment"].get(key),
                                       children["Service"].get(key),
                                       children["ConfigMap"].get((ns, name + "-config")),
                                       directory.get("%s.%s" % key),
                                       "http://%s.%s.svc:%d" % (name, ns, port) if port else None)
    for kind, objs in children.items():
        for key, o in objs.items():
            if key[0] == OP_NS:
                continue  # the directory: the operator's own, no App owns it
            if chaos.controller_uid(o) not in uids:
                problems.append("orphan %s %s/%s" % ((kind,) + key))
    for k in directory:
        ns, _, name = k.partition(".")
        if ns in model.namespaces and (ns, name) not in model.apps:
            problems.append("orphan directory entry %s" % k)
    return problems


def wait_converged(cluster, model, timeout, what):
    """Polls until converged; the time it took (orphans, the garbage collector's
    work, included)."""
    t0 = time.time()
    _, done = chaos.wait_converged(cluster, model, timeout, what, check=check_converged, poll=1.0)
    return done - t0


# --- the overlap check ----------------------------------------------------------------


def reconcile_spans(proc):
    """[(namespace, name, start, end or None, rc)] from a process's log, monotonic s."""
    open_ = {}
    spans = []
    with open(proc.logpath, errors="replace") as f:
        for line in f:
            if "reconcile start mono=" not in line and "reconcile end mono=" not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            msg = e.get("msg", "")
            rid = e.get("reconcileID")
            mono = int(msg.split("mono=")[1].split()[0]) / 1e9
            key = (e.get("namespace"), e.get("name"))
            if msg.startswith("reconcile start"):
                open_[rid] = (key, mono)
            elif rid in open_:
                key, start = open_.pop(rid)
                rc = int(msg.split("rc=")[1].split()[0]) if "rc=" in msg else 0
                spans.append((key[0], key[1], start, mono, rc))
    for key, start in open_.values():
        spans.append((key[0], key[1], start, None, None))
    return spans


def check_overlap(suite):
    """No App reconciled by two processes at once. Returns figures."""
    by_key = {}
    n = 0
    for proc in suite.all_procs:
        for ns, name, start, end, rc in reconcile_spans(proc):
            if end is None:
                if proc.killed_mono is not None:
                    end = proc.killed_mono
                elif not proc.alive():
                    end = start  # ended with its process (SIGTERM waits for it): nothing after
                else:
                    end = time.monotonic()  # still running
            by_key.setdefault((ns, name), []).append((start, end, proc, rc))
            n += 1
    bad, resumed = [], []
    for key, spans in by_key.items():
        spans.sort(key=lambda s: s[0])
        for i, (s1, e1, p1, rc1) in enumerate(spans):
            for s2, e2, p2, rc2 in spans[i + 1:]:
                if s2 >= e1:
                    break
                if p1 is p2:
                    continue
                stopped = [p for p, s, e in ((p1, s1, e1), (p2, s2, e2))
                           if any(s < st[0] < e for st in p.stops)]
                what = "%s/%s: %s [%.3f, %.3f] rc=%s and %s [%.3f, %.3f] rc=%s" % (
                    key[0], key[1], p1.name, s1, e1, rc1, p2.name, s2, e2, rc2)
                (resumed if stopped else bad).append(what)
    if bad:
        raise Failure("%d overlapping reconciles of one App by two replicas, first: %s" % (
            len(bad), "; ".join(bad[:5])))
    return {"reconciles": n, "apps": len(by_key), "resumed_after_stop": resumed}


def selftest_overlap(work):
    """The overlap check run on two made-up logs before the real ones: it must
    find an App reconciled by two processes at once, and pass the same spans
    one after the other. A check that cannot fail proves nothing."""
    class Fake:
        def __init__(self, name, spans):
            self.name, self.logpath, self.killed_mono, self.stops = name, os.path.join(work, name), None, []
            with open(self.logpath, "w") as f:
                for i, (start, end) in enumerate(spans):
                    for what, t in (("start", start), ("end", end)):
                        f.write(json.dumps({"msg": "reconcile %s mono=%d%s" % (
                            what, int(t * 1e9), " rc=0" if what == "end" else ""),
                            "namespace": "ns", "name": "a", "reconcileID": "%s-%d" % (name, i)}) + "\n")

        def alive(self):
            return False

    class Holder:
        pass

    h = Holder()
    h.all_procs = [Fake("selftest-a", [(1.0, 2.0)]), Fake("selftest-b", [(1.5, 2.5)])]
    try:
        check_overlap(h)
    except Failure:
        pass
    else:
        raise Failure("the overlap check missed an overlap it was shown")
    h.all_procs = [Fake("selftest-a", [(1.0, 2.0)]), Fake("selftest-b", [(2.0, 3.0)])]
    check_overlap(h)


def check_stopped_writes(suite):
    """A replica stopped past its lease writes nothing (but its Lease), not
    even an Event, from its renew deadline after the stop until it has
    drained and renewed again."""
    users = {r.user for r in suite.replicas.values()}
    events = chaos.audit_events(suite.cluster, users)
    bad = []
    for proc in suite.all_procs:
        for _, _, wall_stop, wall_cont in proc.stops:
            start = wall_stop + RENEW_DEADLINE + SLACK
            end = unfenced_after(proc, wall_cont)
            for e in events:
                if e["user"]["username"] != proc.replica.user:
                    continue
                ref = e.get("objectRef") or {}
                code = (e.get("responseStatus") or {}).get("code", 0)
                if ref.get("resource") == "leases" or e.get("verb") in ("get", "list", "watch"):
                    continue
                t = chaos.ts(e["requestReceivedTimestamp"])
                if start <= t < end and 200 <= code < 300:
                    bad.append("%s %s %s %s/%s at %s" % (proc.name, e.get("verb"), ref.get("resource"),
                                                         ref.get("namespace"), ref.get("name"),
                                                         e["requestReceivedTimestamp"]))
    if bad:
        raise Failure("a stopped replica wrote while fenced: %d writes, first: %s" % (
            len(bad), "; ".join(bad[:5])))


def unfenced_after(proc, wall):
    """Wall time at which the process, fenced by a pause, had drained and
    renewed again (its "owning again" line), or grew, after wall; else now."""
    with open(proc.logpath, errors="replace") as f:
        for line in f:
            if '"sharding"' not in line or ("owning again" not in line and " grows to " not in line):
                continue
            try:
                t = chaos.ts(json.loads(line)["ts"])
            except (ValueError, KeyError):
                continue
            if t > wall:
                return t
    return time.time()


# --- the suite ------------------------------------------------------------------------


class Suite:
    def __init__(self, args):
        self.args = args
        self.work = args.work or tempfile.mkdtemp(prefix="kcr-sharded-")
        os.makedirs(self.work, exist_ok=True)
        self.cluster = chaos.Cluster(self.work)
        self.namespaces = ["shard-apps-%02d" % i for i in range(args.namespaces)]
        self.model = Model(self.namespaces)
        self.replicas = {}
        self.all_procs = []
        self.sharded = True
        self.expected = args.replicas
        self.rng = random.Random(27)
        self.results = {"apps": args.apps, "namespaces": args.namespaces, "shard_key": args.shard_key,
                        "replicas": args.replicas, "steps": []}

    def setup(self):
        log("work dir %s" % self.work)
        self.cluster.up()
        log("cluster up on port %d" % self.cluster.port)
        c = self.cluster
        c.k("apply", "-f", os.path.join(ROOT, "config/crd/bases/kcr.dev_apps.yaml"))
        for ns in [OP_NS] + self.namespaces:
            c.k("create", "ns", ns)
        c.k("label", "ns", *self.namespaces, NS_LABEL)
        self.rbac_from_config()
        c.k("wait", "--for=condition=Established", "crd/apps.kcr.dev", "--timeout=60s")
        t = time.time()
        objs = self.model.add(self.args.apps)
        for i in range(0, len(objs), 500):
            c.apply(objs[i:i + 500])
        log("%d Apps in %d namespaces created in %.1f s" % (
            self.args.apps, self.args.namespaces, time.time() - t))

    def rbac_from_config(self):
        """The replicas get exactly what config/sharded grants its service
        account (rendered with kubectl kustomize), bound to their group instead:
        a permission the sharded operator needs and the manifests lack fails
        the run."""
        import yaml
        out = self.cluster.k("kustomize", os.path.join(ROOT, "config/sharded")).stdout
        objs = []
        for d in yaml.safe_load_all(out):
            if not d or d["kind"] not in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"):
                continue
            if d["kind"].endswith("Binding"):
                if not any(sj.get("kind") == "ServiceAccount" for sj in d.get("subjects") or []):
                    continue
                d["subjects"] = [{"kind": "Group", "name": chaos.GROUP,
                                  "apiGroup": "rbac.authorization.k8s.io"}]
            objs.append(d)
        self.cluster.apply(objs)
        log("RBAC from config/sharded: %s" % ", ".join(
            "%s/%s" % (d["kind"], d["metadata"]["name"]) for d in objs))

    def replica(self, name):
        if name not in self.replicas:
            self.replicas[name] = Replica(self, name)
        return self.replicas[name]

    def running(self):
        return [r for r in self.replicas.values() if r.restart and r.current() and r.current().alive()]

    def start_replicas(self, names):
        for n in names:
            self.replica(n).start()

    def churn(self, k=None):
        """Updates k Apps across the namespaces, creates 3, deletes 3."""
        k = k or max(10, self.args.apps // 20)
        keys = sorted(self.model.apps)
        objs = [self.model.bump(key) for key in self.rng.sample(keys, min(k, len(keys)))]
        objs += self.model.add(3)
        self.cluster.apply(objs)
        touched = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs}
        for key in self.rng.sample(sorted(set(keys) - touched), 3):
            self.cluster.k("-n", key[0], "delete", "app", key[1], "--wait=false")
            del self.model.apps[key]

    def converge(self, what):
        took = wait_converged(self.cluster, self.model, self.args.converge_timeout, what)
        log("%s: converged in %.1f s" % (what, took))
        return took

    def caches(self):
        """Per running replica: objects its informers hold, by kind."""
        out = {}
        for r in self.running():
            port = r.probe_port()
            if not port:
                raise Failure("%s: no probe port in its log" % r.name)
            with urllib.request.urlopen("http://127.0.0.1:%d/debug/informers" % port, timeout=10) as f:
                infs = json.load(f)
            held = {}
            for inf in infs:
                parts = inf.get("namespaces") or [inf]
                held[inf["kind"]] = held.get(inf["kind"], 0) + sum(p.get("objects", 0) for p in parts)
            out[r.name] = held
        return out

    def ring_state(self, proc):
        """(members, share) from the latest lines of a process's log."""
        members, share = None, 0.0
        with open(proc.logpath, errors="replace") as f:
            for line in f:
                if '"sharding"' not in line:
                    continue
                m = re.search(r"ring %s: (\d+) member\(s\)" % RING, line)
                if m:
                    members = int(m.group(1))
                m = re.search(r"ring %s: (?:grows|shrinks) to ([0-9.]+) of the space" % RING, line)
                if m:
                    share = float(m.group(1))
        return members, share

    def wait_settled(self, what, timeout=120):
        """Waits until every running replica sees all of them in the ring and
        their shares tile the space: the handover is over."""
        deadline = time.time() + timeout
        while True:
            procs = [r.current() for r in self.running()]
            states = [self.ring_state(p) for p in procs]
            if all(m == len(procs) for m, _ in states) and abs(sum(s for _, s in states) - 1) < 1e-3:
                return
            if time.time() > deadline:
                raise Failure("%s: the ring did not settle in %d s: %s" % (
                    what, timeout, {p.name: st for p, st in zip(procs, states)}))
            time.sleep(0.5)

    def check_disjoint(self, what):
        """Each replica's caches hold at most --max-share of each kind, and the
        replicas together hold every object once. Waits for the informers to
        follow the latest handover."""
        self.wait_settled(what)
        deadline = time.time() + 120
        while True:
            want = {"App": len(self.model.apps)}
            kids = self.cluster.get_json("-A", "-l", MANAGED, "deployments,services,configmaps")["items"]
            for o in kids:
                want[o["kind"]] = want.get(o["kind"], 0) + 1
            held = self.caches()
            sums = {k: sum(h.get(k, 0) for h in held.values()) for k in want}
            if sums == want or time.time() > deadline:
                break
            time.sleep(2)
        if sums != want:
            raise Failure("%s: the replicas' caches hold %s, the cluster %s" % (what, sums, want))
        shares = {r: {k: round(h.get(k, 0) / want[k], 3) for k in want if want[k]}
                  for r, h in held.items()}
        worst = max(max(s.values()) for s in shares.values())
        log("%s: caches %s; largest share %.3f" % (what, json.dumps(held, sort_keys=True), worst))
        if len(held) == self.args.replicas and len(held) > 1 and worst > self.args.max_share:
            raise Failure("%s: a replica holds %.3f of a kind, over %.2f" % (what, worst,
                                                                            self.args.max_share))
        return {"held": held, "largest_share": worst}

    def record(self, step, **figures):
        figures["step"] = step
        figures["overlap"] = check_overlap(self)
        self.results["steps"].append(figures)
        log("%s: %s" % (step, json.dumps({k: v for k, v in figures.items() if k != "overlap"})))

    def names(self, n):
        return ["r%d" % i for i in range(n)]

    # the steps
    def step_cost(self):
        """The single unsharded replica, then the N sharded ones, on the same
        churn after each has settled."""
        self.sharded = False
        single = self.replica("single")
        single.start()
        t_single = self.converge("single replica: initial convergence")
        pid = single.current().p.pid
        time.sleep(5)
        cpu0 = proc_cpu_s(pid)
        for _ in range(3):
            self.churn()
        took_single = self.converge("single replica: churn")
        cost_single = {"rss_kib": proc_rss_kib(pid), "churn_cpu_s": round(proc_cpu_s(pid) - cpu0, 2),
                       "churn_converge_s": round(took_single, 1),
                       "initial_converge_s": round(t_single, 1)}
        single.stop()
        self.sharded = True
        self.start_replicas(self.names(self.args.replicas))
        t0 = time.time()
        self.converge("sharded: first pass")
        t_sharded = time.time() - t0
        disjoint = self.check_disjoint("sharded caches")
        time.sleep(5)
        cpu0 = {r.name: proc_cpu_s(r.current().p.pid) for r in self.running()}
        for _ in range(3):
            self.churn()
        took = self.converge("sharded: churn")
        per = {}
        for r in self.running():
            pid = r.current().p.pid
            per[r.name] = {"rss_kib": proc_rss_kib(pid),
                           "churn_cpu_s": round(proc_cpu_s(pid) - cpu0[r.name], 2)}
            per[r.name]["rss_ratio"] = round(per[r.name]["rss_kib"] / cost_single["rss_kib"], 3)
            per[r.name]["cpu_ratio"] = round(per[r.name]["churn_cpu_s"] /
                                             max(cost_single["churn_cpu_s"], 0.01), 3)
        self.record("cost", single=cost_single, sharded=per, sharded_first_pass_s=round(t_sharded, 1),
                    sharded_churn_converge_s=round(took, 1), caches=disjoint)

    def ensure(self, n):
        names = self.names(n)
        for r in list(self.replicas.values()):
            if r.name not in names and r.restart:
                r.stop()
        for name in names:
            r = self.replica(name)
            if not (r.restart and r.current() and r.current().alive()):
                r.start()

    def step_scale(self):
        self.ensure(self.args.replicas)
        figures = {}
        for n in (self.args.replicas + 2, 2, self.args.replicas):
            t0 = time.time()
            self.ensure(n)
            self.churn()
            took = self.converge("scale to %d" % n)
            figures["to_%d" % n] = {"converge_s": round(took, 1), "since_change_s": round(time.time() - t0, 1),
                                    "caches": self.check_disjoint("%d replicas" % n)}
        self.record("scale", **figures)

    def victim(self):
        self.ensure(self.args.replicas)
        time.sleep(3)
        return self.replicas[self.rng.choice(self.names(self.args.replicas))]

    def step_term(self):
        r = self.victim()
        cur = r.current()
        exited = []
        waiter = threading.Thread(target=lambda: (cur.p.wait(), exited.append(time.time())),
                                  daemon=True)
        waiter.start()
        t0 = time.time()
        os.kill(cur.p.pid, signal.SIGTERM)  # the supervisor starts it again, as a Deployment
        self.churn()  # while it hands over: its Apps among them
        waiter.join(timeout=60)
        if not exited:
            raise Failure("%s did not exit within 60 s of SIGTERM" % cur.name)
        stopped = exited[0] - t0
        took = self.converge("SIGTERM of %s" % cur.name)
        self.record("term", victim=cur.name, stop_s=round(stopped, 2),
                    converge_s=round(time.time() - t0, 1), after_check_s=round(took, 1),
                    caches=self.check_disjoint("after SIGTERM"))

    def step_kill(self):
        r = self.victim()
        cur = r.current()
        t0 = time.time()
        cur.killed_mono = time.monotonic()
        os.kill(cur.p.pid, signal.SIGKILL)
        self.churn()  # its Apps among them wait for its Lease to expire
        took = self.converge("SIGKILL of %s" % cur.name)
        self.record("kill", victim=cur.name, converge_s=round(time.time() - t0, 1),
                    after_check_s=round(took, 1), caches=self.check_disjoint("after SIGKILL"))

    def step_stop(self):
        r = self.victim()
        cur = r.current()
        self.churn(self.args.apps // 10)
        time.sleep(0.5)  # in the middle of the churn's reconciles
        t0, m0 = time.time(), time.monotonic()
        os.kill(cur.p.pid, signal.SIGSTOP)
        self.churn()
        time.sleep(max(0, self.args.stop_seconds - (time.time() - t0)))
        os.kill(cur.p.pid, signal.SIGCONT)
        cur.stops.append((m0, time.monotonic(), t0, time.time()))
        took = self.converge("SIGSTOP of %s for %.0f s" % (cur.name, self.args.stop_seconds))
        check_stopped_writes(self)
        self.record("stop", victim=cur.name, stop_s=self.args.stop_seconds,
                    converge_s=round(time.time() - t0, 1), after_check_s=round(took, 1),
                    caches=self.check_disjoint("after SIGSTOP"))

    def teardown(self):
        for r in self.replicas.values():
            try:
                r.stop()
            except Failure as e:
                log("teardown: %s" % e)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--operator", default=os.path.join(ROOT, "build/dev/cmd/kcr-operator/kcr-operator"))
    ap.add_argument("--apps", type=int, default=3000)
    ap.add_argument("--namespaces", type=int, default=30)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--shard-key", choices=("namespace", "uid"), default="namespace",
                    help="what splits the Apps (uid: try --namespaces 1)")
    ap.add_argument("--steps", default="cost,scale,term,kill,stop")
    ap.add_argument("--concurrency", type=int, default=4, help="--max-concurrent-reconciles")
    ap.add_argument("--stop-seconds", type=float, default=25, help="SIGSTOP for this long (> the lease)")
    ap.add_argument("--max-share", type=float, default=0.40,
                    help="the most of any kind one of the N replicas may cache")
    ap.add_argument("--converge-timeout", type=float, default=900)
    ap.add_argument("--work", help="work directory (default: a new temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--report", help="write the figures here as JSON")
    args = ap.parse_args()
    if not os.access(args.operator, os.X_OK):
        sys.exit("sharded: no operator binary at %s (make operator)" % args.operator)
    s = Suite(args)
    ok = False
    t0 = time.time()
    try:
        selftest_overlap(s.work)
        s.setup()
        for step in args.steps.split(","):
            step = step.strip()
            if step != "cost" and not s.running():
                s.ensure(args.replicas)
                s.converge("initial convergence")
            getattr(s, "step_" + step)()
        ok = True
    except Failure as e:
        log("FAIL: %s" % e)
    finally:
        s.teardown()
        s.results["ok"] = ok
        s.results["total_s"] = round(time.time() - t0, 1)
        print(json.dumps(s.results, indent=1))
        if args.report:
            with open(args.report, "w") as f:
                json.dump(s.results, f, indent=1)
        if not ok:
            for p in s.all_procs[-6:]:
                print("--- %s (tail)" % p.logpath)
                subprocess.run(["tail", "-n", "15", p.logpath])
        s.cluster.down()
        if ok and not args.keep and not args.work:
            shutil.rmtree(s.work, ignore_errors=True)
        else:
            log("work dir kept: %s" % s.work)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
