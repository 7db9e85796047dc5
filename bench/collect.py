#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# collect.py OUT.json [--sizes SIZES.txt] [--sync RESULTS.txt ...] [--apps APPS.jsonl ...]
#            [--raw NAME=FILE ...]
# Gathers one bench-full run into one JSON document (bench/results/<date>.json):
#   sizes: M1, lines "name bytes ldd-summary" from full.sh
#   sync:  M2-M4, the lines bench/cache_sync/run.sh wrote, per run, plus per
#          shape, N and implementation the median/min/max of each field, the
#          kcr/client-go, kcr/client-go-proto and kcr/kube-rs ratios of each
#          pair, each implementation over the floor, and per shape the RSS
#          slope (bytes per object, linear fit), the wire size of one object
#          and their ratio. Runs measured with the servers' CPU
#          (apiserver_cpu_s, etcd_cpu_s) have it in their records, summary
#          rows and ratios too; older ones simply lack the keys.
#   apps:  M5-M6, bench/apps/driver's JSON lines and summarize.py's summary
#   raw:   U1-U3, the micro-benchmarks' output as text
import json
import statistics
import subprocess
import sys
from collections import defaultdict


def stats(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def fit(points):
    # least-squares slope of y over x
    n = len(points)
    if n < 2:
        return None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else None


# the servers' CPU during a run (run.sh), on newer lines only
SERVER = ("apiserver_cpu_s", "etcd_cpu_s")


def sync_section(files):
    # Lines without shape= (results from before the shapes) are cm1k. Every
    # record, summary row and ratio row carries its shape; the top-level
    # rss_bytes_per_object stays cm1k's, as before the shapes.
    runs = []
    for fn in files:
        for line in open(fn):
            if "=" not in line or line.startswith("#"):
                continue
            f = dict(kv.split("=", 1) for kv in line.split())
            rec = {"shape": f.get("shape", "cm1k"), "n": int(f["n"]), "pair": int(f["pair"]),
                   "impl": f["impl"]}
            for k in ("sync_s", "cpu_s", "rss_kb", "hwm_kb", "rss_synced_kb", "hwm_synced_kb",
                      "wire_bytes", "lists", "apiserver_cpu_s", "etcd_cpu_s"):
                if k in f and f[k].replace(".", "", 1).isdigit():
                    rec[k] = float(f[k])
            if f.get("relist") == "1":
                # RELIST=1: hwm_kb is the peak after a forced relist
                rec["relist"] = True
            runs.append(rec)
    by = defaultdict(lambda: defaultdict(list))
    pairs = defaultdict(dict)
    wire = {}
    for r in runs:
        for k in ("sync_s", "cpu_s", "rss_kb", "hwm_kb"):
            # a RELIST=1 run's RSS is the one once synced, before the relist
            src = "rss_synced_kb" if k == "rss_kb" and r.get("relist") else k
            by[(r["shape"], r["n"], r["impl"])][k].append(r[src])
        for k in SERVER:
            if k in r:
                by[(r["shape"], r["n"], r["impl"])][k].append(r[k])
        pairs[(r["shape"], r["n"], r["pair"])][r["impl"]] = r
        if "wire_bytes" in r:
            wire[r["shape"]] = int(r["wire_bytes"])
    summary = []
    for (shape, n, impl), v in sorted(by.items()):
        row = {"shape": shape, "n": n, "impl": impl, **{k: stats(xs) for k, xs in v.items()}}
        rl = [r for r in runs if (r["shape"], r["n"], r["impl"]) == (shape, n, impl)
              and r.get("relist") and r.get("rss_synced_kb")]
        if rl:
            # peak after the forced relist over the RSS once synced
            row["relist_hwm_over_synced"] = stats([r["hwm_kb"] / r["rss_synced_kb"] for r in rl])
        summary.append(row)

    def ratios_to(peer):
        rows = []
        for shape, n in sorted({(s, n) for s, n, _ in by}):
            row = {"shape": shape, "n": n}
            for k in ("sync_s", "cpu_s", "rss_kb", "hwm_kb") + SERVER:
                rs = [p["kcr"][k] / p[peer][k] for (ps, pn, _), p in pairs.items()
                      if (ps, pn) == (shape, n) and "kcr" in p and peer in p
                      and k in p["kcr"] and p[peer].get(k)]
                if rs:
                    row[k] = stats(rs)
            if len(row) > 2:
                rows.append(row)
        return rows
    def over_floor():
        # each implementation's sync and CPU over the floor's in the same pair
        # (null_reader.c: the same stream received and thrown away, issue 29)
        rows = []
        for shape, n in sorted({(s, n) for s, n, _ in by}):
            for impl in sorted({i for s, m, i in by if (s, m) == (shape, n) and i != "floor"}):
                row = {"shape": shape, "n": n, "impl": impl}
                for k in ("sync_s", "cpu_s", "apiserver_cpu_s"):
                    rs = [p[impl][k] / p["floor"][k] for (ps, pn, _), p in pairs.items()
                          if (ps, pn) == (shape, n) and impl in p and "floor" in p
                          and k in p[impl] and p["floor"].get(k)]
                    if rs:
                        row[k] = stats(rs)
                if len(row) > 3:
                    rows.append(row)
        return rows
    ratios = ratios_to("client-go")  # kcr / the client-go informer
    # kcr / the same with protobuf, as controller-runtime users run it
    ratios_client_go_proto = ratios_to("client-go-proto")
    ratios_kube_rs = ratios_to("kube-rs")  # kcr / the kube-rs reflector
    # RSS slope per shape and implementation: least squares over the medians
    # of every N of that shape (N = 0 included), and that slope over the wire
    # size of one object of the shape
    slopes, over_wire = {}, {}
    for shape in sorted({s for s, _, _ in by}):
        slopes[shape], over_wire[shape] = {}, {}
        for impl in sorted({i for s, _, i in by if s == shape}):
            pts = [(n, statistics.median(v["rss_kb"]) * 1024)
                   for (s, n, i), v in by.items() if (s, i) == (shape, impl)]
            slope = fit(sorted(pts))
            slopes[shape][impl] = slope
            w = wire.get(shape)
            over_wire[shape][impl] = slope / w if slope is not None and w else None
    return {"runs": runs, "summary": summary, "ratios": ratios, "ratios_kube_rs": ratios_kube_rs,
            "ratios_client_go_proto": ratios_client_go_proto,
            "over_floor": over_floor(),
            "rss_bytes_per_object": slopes.get("cm1k", {}),
            "rss_bytes_per_object_by_shape": slopes, "wire_bytes": wire,
            "rss_bytes_per_object_over_wire": over_wire}


def main():
    out = sys.argv[1]
    doc = {"sizes": [], "sync": None, "apps": None, "raw": {}}
    args = sys.argv[2:]
    mode = None
    sync_files, app_files = [], []
    for a in args:
        if a.startswith("--"):
            mode = a[2:]
            continue
        if mode == "sizes":
            for line in open(a):
                p = line.rstrip("\n").split(" ", 2)
                if len(p) >= 2:
                    doc["sizes"].append({"name": p[0], "bytes": int(p[1]),
                                         "deps": p[2] if len(p) > 2 else ""})
        elif mode == "sync":
            sync_files.append(a)
        elif mode == "apps":
            app_files.append(a)
        elif mode == "raw":
            name, fn = a.split("=", 1)
            doc["raw"][name] = open(fn).read()
    if sync_files:
        doc["sync"] = sync_section(sync_files)
    if app_files:
        merged = out + ".apps.jsonl"
        with open(merged, "w") as m:
            for fn in app_files:
                m.write(open(fn).read())
        tmp = out + ".apps.json"
        subprocess.run([sys.executable, __file__.replace("collect.py", "apps/summarize.py"),
                        merged, "--json", tmp], check=True, stdout=subprocess.DEVNULL)
        doc["apps"] = json.load(open(tmp))
        import os
        os.unlink(tmp)
        os.unlink(merged)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


main()
