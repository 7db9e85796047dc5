#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summarize.py RESULTS.jsonl [--json OUT]: the App benchmark's table. Per
# implementation: medians and min-max of seconds to all reconciled, Apps/s,
# operator CPU per 1k reconciles, apiserver and etcd CPU per App, RSS; API calls
# per App by verb and resource; and the ratios to the controller-runtime twin
# (cr) and to the null generator (null), each pair of runs divided on its own.
import json
import statistics
import sys
from collections import defaultdict


def mm(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    m = statistics.median(xs)
    return f"{m:.3g} ({min(xs):.3g}-{max(xs):.3g})" if len(xs) > 1 else f"{m:.3g}"


def main():
    runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
    by = defaultdict(list)
    for r in runs:
        if r.get("ok"):
            by[r["impl"]].append(r)
    summary = {}
    print("| impl | runs | seconds | Apps/s | op CPU s per 1k | apiserver CPU ms/App | etcd CPU ms/App | RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    for impl, rs in by.items():
        n = rs[0]["n"]
        row = {
            "seconds": [r["seconds"] for r in rs],
            "apps_per_s": [r["n"] / r["seconds"] for r in rs],
            "op_cpu_per_1k": [r["operator_cpu_s"] * 1000 / r["n"] for r in rs],
            "api_cpu_ms_per_app": [r["apiserver_cpu_s"] * 1000 / r["n"] for r in rs],
            "etcd_cpu_ms_per_app": [r["etcd_cpu_s"] * 1000 / r["n"] for r in rs],
            "rss_mb": [r["rss_kb"] / 1024 for r in rs],
        }
        summary[impl] = row
        print(f"| {impl} | {len(rs)} | {mm(row['seconds'])} | {mm(row['apps_per_s'])} | "
              f"{mm(row['op_cpu_per_1k'])} | {mm(row['api_cpu_ms_per_app'])} | "
              f"{mm(row['etcd_cpu_ms_per_app'])} | {mm(row['rss_mb'])} |")
    # API calls per App: the median of each verb/resource over the runs.
    keys = sorted({k for rs in by.values() for r in rs for k in r["requests"]})
    keys = [k for k in keys if any(r["requests"].get(k, 0) / r["n"] >= 0.05
                                   for rs in by.values() for r in rs)]
    impls = list(by)
    print()
    print("API calls per App (apiserver_request_total deltas, all clients):")
    print("| verb resource | " + " | ".join(impls) + " |")
    print("|---|" + "---|" * len(impls))
    calls = {}
    for k in keys:
        cells = []
        for impl in impls:
            v = statistics.median(r["requests"].get(k, 0) / r["n"] for r in by[impl])
            calls.setdefault(impl, {})[k] = v
            cells.append(f"{v:.2f}")
        print(f"| {k} | " + " | ".join(cells) + " |")
    tot = {impl: sum(calls.get(impl, {}).values()) for impl in impls}
    print("| total | " + " | ".join(f"{tot[i]:.2f}" for i in impls) + " |")
    # Ratios, run i of A against run i of B.
    print()
    for base in ["cr", "cr-proto"] + [i for i in impls if i.startswith("null")]:
        if base not in by:
            continue
        for impl in impls:
            if impl == base:
                continue
            pairs = list(zip(by[impl], by[base]))
            if not pairs:
                continue
            r_time = [a["seconds"] / b["seconds"] for a, b in pairs]
            r_thr = [b["seconds"] / a["seconds"] for a, b in pairs]
            r_cpu = [a["operator_cpu_s"] / b["operator_cpu_s"] for a, b in pairs if b["operator_cpu_s"]]
            r_api = [a["apiserver_cpu_s"] / b["apiserver_cpu_s"] for a, b in pairs if b["apiserver_cpu_s"]]
            print(f"{impl} / {base}: time {mm(r_time)}, throughput {mm(r_thr)}, "
                  f"operator CPU {mm(r_cpu)}, apiserver CPU {mm(r_api)}")
            summary.setdefault("ratios", {})[f"{impl}/{base}"] = {
                "time": r_time, "throughput": r_thr, "operator_cpu": r_cpu, "apiserver_cpu": r_api}
    summary["calls_per_app"] = calls
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump({"runs": runs, "summary": summary}, f, indent=1)


main()
