#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# report.py RESULTS.json: the markdown tables of one bench-full run
# (bench/results/<date>.json, written by collect.py), as docs/benchmarks.md
# shows them: issue 17's figures for kcr, the Go peers (client-go's informer
# for the cache, the controller-runtime twin for the Apps) and the kube-rs
# peers, with the ratios each pair or round gives (median, min-max). Only what
# the file holds is printed; a figure it lacks is left out, never guessed.
import json
import statistics
import sys

doc = json.load(open(sys.argv[1]))
MB = 1024.0


def mm(st, scale=1.0, fmt="%.2f"):
    """median (min-max) of a collect.py stats object."""
    if not st:
        return "-"
    return (fmt + " (" + fmt + "-" + fmt + ")") % (st["median"] * scale, st["min"] * scale,
                                                   st["max"] * scale)


def lst(xs, fmt="%.2f"):
    """median (min-max) of a plain list."""
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt % xs[0]
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(xs), min(xs), max(xs))


def sizes():
    by = {s["name"]: s for s in doc.get("sizes") or []}
    if not by:
        return
    print("| binary, stripped | bytes | linked |")
    print("|---|---|---|")
    for name in ("kcr-operator-static", "kcr-operator", "go-controller-runtime", "rust-kube-rs",
                 "go-cache-sync", "rust-cache-sync"):
        if name in by:
            deps = by[name]["deps"].split()
            link = "static" if deps == ["static"] or "static" in deps else "%d shared libraries" % len(deps)
            print("| %s | %s | %s |" % (name, format(by[name]["bytes"], ","), link))
    if "kcr-operator-static" in by and "go-controller-runtime" in by:
        print("\nkcr-operator (static) / controller-runtime twin (static): %.2f" %
              (by["kcr-operator-static"]["bytes"] / by["go-controller-runtime"]["bytes"]))
    print()


def sync():
    s = doc.get("sync")
    if not s:
        return
    rows = {(r.get("shape", "cm1k"), r["n"], r["impl"]): r for r in s["summary"]}
    rat = {(r.get("shape", "cm1k"), r["n"]): r for r in s["ratios"]}
    ratp = {(r.get("shape", "cm1k"), r["n"]): r for r in s.get("ratios_client_go_proto", [])}
    ratk = {(r.get("shape", "cm1k"), r["n"]): r for r in s.get("ratios_kube_rs", [])}
    # client-go-proto (protobuf, as controller-runtime users run it) and the
    # API server's CPU only where the runs have them (newer results)
    proto = any(i == "client-go-proto" for _, _, i in rows)
    impls = ("kcr", "client-go") + (("client-go-proto",) if proto else ()) + ("kube-rs",)
    figures = [("rss_kb", "RSS MiB", 1 / MB), ("hwm_kb", "peak RSS MiB", 1 / MB),
               ("sync_s", "start -> synced s", 1), ("cpu_s", "CPU s", 1)]
    if any("apiserver_cpu_s" in r for r in rows.values()):
        figures.append(("apiserver_cpu_s", "API server CPU s", 1))
    for shape in sorted({k[0] for k in rows}, key=lambda x: (x != "cm1k", x)):
        ns = sorted({n for sh, n, _ in rows if sh == shape})
        print("**%s** (one object: %s B on the wire with managedFields)\n" %
              (shape, format(s.get("wire_bytes", {}).get(shape, 0), ",")))
        print("| N | figure | %s | kcr / client-go |%s kcr / kube-rs |" % (
            " | ".join(impls), " kcr / client-go-proto |" if proto else ""))
        print("|---|---|" + "---|" * (len(impls) + 2 + proto))
        for n in ns:
            for key, label, scale in figures:
                if n == 0 and key in ("sync_s", "cpu_s", "hwm_kb", "apiserver_cpu_s"):
                    continue
                cells = [mm(rows.get((shape, n, i), {}).get(key), scale) for i in impls]
                cells.append(mm(rat.get((shape, n), {}).get(key)))
                if proto:
                    cells.append(mm(ratp.get((shape, n), {}).get(key)))
                cells.append(mm(ratk.get((shape, n), {}).get(key)))
                print("| %s | %s | %s |" % (format(n, ","), label, " | ".join(cells)))
        slopes = s.get("rss_bytes_per_object_by_shape", {}).get(shape, {})
        over = s.get("rss_bytes_per_object_over_wire", {}).get(shape, {})
        if slopes:
            print("\nRSS per cached object (least-squares slope over N = %s): %s\n" % (
                ", ".join(format(n, ",") for n in ns),
                "; ".join("%s %s B (%.2f x wire)" % (i, format(int(slopes[i]), ","), over.get(i) or 0)
                          for i in impls if slopes.get(i))))
        else:
            print()
    floor = [r for r in s.get("over_floor", [])]
    if floor:
        # floor-proto's row is what protobuf saves the floor itself
        api = any("apiserver_cpu_s" in r for r in floor)
        print("Against the floor (a null reader of the same stream; issue 29), each pair divided"
              " on its own, median (min-max):\n")
        print("| shape | N | impl | start -> synced / floor | CPU / floor |" +
              (" API server CPU / floor's |" if api else ""))
        print("|---|---|---|---|---|" + ("---|" if api else ""))
        for r in floor:
            cells = [r.get("shape", "cm1k"), format(r["n"], ","),
                     r["impl"],
                     mm(r.get("sync_s")), mm(r.get("cpu_s"))]
            if api:
                cells.append(mm(r.get("apiserver_cpu_s")))
            print("| %s |" % " | ".join(cells))
        print()


def apps():
    a = doc.get("apps")
    if not a:
        return
    s = a["summary"]
    names = [i for i in ("kcr", "cr", "kube-rs", "null") if i in s] + \
            [i for i in s if i not in ("kcr", "cr", "kube-rs", "null", "ratios", "calls_per_app")]
    n = a["runs"][0]["n"] if a.get("runs") else 0
    print("%s Apps, created before the start (replicas 0), all reconciled; one row per"
          " implementation, median (min-max) over its rounds\n" % format(n, ","))
    print("| impl | rounds | s to all reconciled | operator CPU s per 1k Apps | apiserver CPU ms"
          " per App | RSS after MiB |")
    print("|---|---|---|---|---|---|")
    for i in names:
        r = s[i]
        print("| %s | %d | %s | %s | %s | %s |" % (i, len(r["seconds"]), lst(r["seconds"], "%.1f"),
                                                    lst(r["op_cpu_per_1k"], "%.1f"),
                                                    lst(r["api_cpu_ms_per_app"], "%.1f"),
                                                    lst(r["rss_mb"], "%.1f")))
    print("\nRatios, each round divided on its own, median (min-max):\n")
    print("| pair | time | throughput | operator CPU | apiserver CPU |")
    print("|---|---|---|---|---|")
    for pair, v in s.get("ratios", {}).items():
        print("| %s | %s | %s | %s | %s |" % (pair, lst(v["time"]), lst(v["throughput"]),
                                              lst(v["operator_cpu"]), lst(v["apiserver_cpu"])))
    cpa = s.get("calls_per_app", {})
    if cpa:
        keys = sorted({k for v in cpa.values() for k, x in v.items() if x >= 0.05})
        print("\nAPI calls per App (apiserver_request_total deltas / N, all clients; rows under"
              " 0.05 left out):\n")
        print("| verb resource | " + " | ".join(cpa) + " |")
        print("|---|" + "---|" * len(cpa))
        for k in keys:
            print("| %s | %s |" % (k, " | ".join("%.2f" % cpa[i].get(k, 0) for i in cpa)))
        print("| all | %s |" % " | ".join("%.2f" % sum(cpa[i].values()) for i in cpa))
    print()


sizes()
sync()
apps()
