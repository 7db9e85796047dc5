#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summarize.py RESULTS...: medians and min-max per shape, N and implementation
# of the lines run.sh wrote, the kcr/peer ratios of the medians (the spread of
# a ratio is the min and max over the pairs, each pair divided on its own),
# and per shape the RSS slope (bytes per cached object, least squares over
# the medians of every N) against the object's wire size. Lines without
# shape= (older results) are cm1k. For lines of RELIST=1 runs RSS is the one
# once synced (before the relist) and the peak the one after it; they also
# get a table of the peak before and after against the synced RSS. Lines
# with apiserver_cpu_s= and etcd_cpu_s= (the servers' CPU during the run)
# get those too, in the first table and as ratios; older lines show "-".
import statistics
import sys
from collections import defaultdict

FIELDS = ("sync_s", "cpu_s", "rss_kb", "hwm_kb")
SERVER = ("apiserver_cpu_s", "etcd_cpu_s")  # only on newer lines
runs = defaultdict(lambda: defaultdict(list))  # (shape, n, impl) -> field -> values
pairs = defaultdict(dict)  # (shape, n, pair) -> impl -> fields
wire = {}  # shape -> bytes of one object
relists = defaultdict(list)  # (shape, n, impl) -> relist=1 lines' fields
for fn in sys.argv[1:]:
    for line in open(fn):
        if "=" not in line or line.startswith("#"):
            continue
        f = dict(kv.split("=", 1) for kv in line.split())
        shape, n = f.get("shape", "cm1k"), int(f["n"])
        for k in FIELDS:
            # a RELIST=1 run's RSS is the one once synced, before the relist
            src = "rss_synced_kb" if k == "rss_kb" and f.get("relist") == "1" else k
            runs[(shape, n, f["impl"])][k].append(float(f[src]))
        for k in SERVER:
            if k in f:
                runs[(shape, n, f["impl"])][k].append(float(f[k]))
        pairs[(shape, n, int(f["pair"]))][f["impl"]] = f
        if f.get("wire_bytes", "").isdigit():
            wire[shape] = int(f["wire_bytes"])
        if f.get("relist") == "1":
            relists[(shape, n, f["impl"])].append(f)


def fit(points):
    # least-squares slope of y over x
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else None


def shape_order(s):
    return (["cm1k", "cm10k", "pod"] + [s]).index(s)


def mm(xs, scale=1):
    return "%.2f (%.2f-%.2f)" % (statistics.median(xs) * scale, min(xs) * scale,
                                 max(xs) * scale) if xs else "-"


def ratios(shape, n, a, b, k):
    # a's k over b's, each pair divided on its own
    return [float(p[a][k]) / float(p[b][k]) for (ps, pn, _), p in pairs.items()
            if (ps, pn) == (shape, n) and a in p and b in p and k in p[a] and k in p[b]
            and float(p[b][k])]


keys = sorted(runs, key=lambda k: (shape_order(k[0]), k[1], k[2]))
server = any(runs[k].get("apiserver_cpu_s") or runs[k].get("etcd_cpu_s") for k in keys)
print("| shape | N | impl | sync s | CPU s | RSS MB | peak RSS MB |" +
      (" apiserver CPU s | etcd CPU s |" if server else ""))
print("|---|---|---|---|---|---|---|" + ("---|---|" if server else ""))
for shape, n, impl in keys:
    v = runs[(shape, n, impl)]
    cells = [mm(v[k], 1 / 1024 if k.endswith("_kb") else 1) for k in FIELDS]
    if server:
        cells += [mm(v.get(k)) for k in SERVER]
    print("| %s | %d | %s | %s |" % (shape, n, impl, " | ".join(cells)))
print()
shape_ns = sorted({(s, n) for s, n, _ in runs}, key=lambda k: (shape_order(k[0]), k[1]))
# client-go-proto is client-go as controller-runtime users run it (protobuf
# for built-in kinds), the one issue 29's goals are set against
for peer in ("client-go", "client-go-proto", "kube-rs"):
    if not any(peer in p for p in pairs.values()):
        continue
    print("| shape | N | ratio kcr/%s | sync | CPU | RSS | peak RSS |" % peer +
          (" apiserver CPU |" if server else ""))
    print("|---|---|---|---|---|---|---|" + ("---|" if server else ""))
    for shape, n in shape_ns:
        cells = [mm(ratios(shape, n, "kcr", peer, k)) 
                 for k in FIELDS + (("apiserver_cpu_s",) if server else ())]
        print("| %s | %d | | %s |" % (shape, n, " | ".join(cells)))
    print()
if any("floor" in p for p in pairs.values()):
    # the floor (null_reader.c) receives the same stream and keeps nothing:
    # sync and CPU against it split a figure into the server's share (the
    # floor's) and the client's own (the rest). Every impl is set against the
    # JSON floor; the row floor-proto says what protobuf saves the floor.
    impls = sorted({i for p in pairs.values() for i in p if i != "floor"})
    print("| shape | N | impl | sync / floor | CPU / floor | floor sync s | floor CPU s |" +
          (" apiserver CPU / floor's |" if server else ""))
    print("|---|---|---|---|---|---|---|" + ("---|" if server else ""))
    for shape, n in shape_ns:
        fl = runs.get((shape, n, "floor"))
        for impl in impls:
            cells = [mm(ratios(shape, n, impl, "floor", k)) for k in ("sync_s", "cpu_s")]
            if fl:
                cells += ["%.3f" % statistics.median(fl["sync_s"]),
                          "%.3f" % statistics.median(fl["cpu_s"])]
            else:
                cells += ["-", "-"]
            if server:
                cells.append(mm(ratios(shape, n, impl, "floor", "apiserver_cpu_s")))
            print("| %s | %d | %s | %s |" % (shape, n, impl, " | ".join(cells)))
    print()
print("| shape | wire B | impl | RSS B per object (slope) | / wire |")
print("|---|---|---|---|---|")
for shape in sorted({s for s, _, _ in runs}, key=shape_order):
    for impl in sorted({i for s, _, i in runs if s == shape}):
        pts = sorted((n, statistics.median(v["rss_kb"]) * 1024)
                     for (s, n, i), v in runs.items() if (s, i) == (shape, impl))
        slope = fit(pts)
        w = wire.get(shape)
        print("| %s | %s | %s | %s | %s |" % (
            shape, w if w else "-", impl, "%.0f" % slope if slope is not None else "-",
            "%.2f" % (slope / w) if slope is not None and w else "-"))
if relists:
    print()
    print("| shape | N | impl | RSS synced MB | peak before relist MB | peak after MB |"
          " after / synced | lists |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(relists, key=lambda k: (shape_order(k[0]), k[1], k[2])):
        fs = relists[key]

        def med(k):
            xs = [float(f[k]) for f in fs if k in f]
            return statistics.median(xs) if xs else float("nan")
        ratio = [float(f["hwm_kb"]) / float(f["rss_synced_kb"]) for f in fs]
        print("| %s | %d | %s | %.2f | %.2f | %.2f | %.2f (%.2f-%.2f) | %s |" % (
            key[0], key[1], key[2], med("rss_synced_kb") / 1024, med("hwm_synced_kb") / 1024,
            med("hwm_kb") / 1024, statistics.median(ratio), min(ratio), max(ratio),
            ",".join(f.get("lists", "?") for f in fs)))
