#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# summarize.py RESULTS: medians and min-max per N and implementation of the
# lines run.sh wrote, and the kcr/peer ratios of the medians (the spread of a
# ratio is the min and max over the pairs, each pair divided on its own).
import statistics
import sys
from collections import defaultdict

runs = defaultdict(lambda: defaultdict(list))  # (n, impl) -> field -> values
pairs = defaultdict(dict)  # (n, pair) -> impl -> fields
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split())
    for k in ("sync_s", "cpu_s", "rss_kb", "hwm_kb"):
        runs[(int(f["n"]), f["impl"])][k].append(float(f[k]))
    pairs[(int(f["n"]), int(f["pair"]))][f["impl"]] = f

fields = ("sync_s", "cpu_s", "rss_kb", "hwm_kb")
print("| N | impl | sync s | CPU s | RSS MB | peak RSS MB |")
print("|---|---|---|---|---|---|")
for (n, impl), v in sorted(runs.items()):
    cells = []
    for k in fields:
        xs = v[k]
        scale = 1 / 1024 if k.endswith("_kb") else 1
        cells.append("%.2f (%.2f-%.2f)" % (statistics.median(xs) * scale, min(xs) * scale,
                                            max(xs) * scale))
    print("| %d | %s | %s |" % (n, impl, " | ".join(cells)))
print()
for peer in ("client-go", "kube-rs"):
    if not any(peer in p for p in pairs.values()):
        continue
    print("| N | ratio kcr/%s | sync | CPU | RSS | peak RSS |" % peer)
    print("|---|---|---|---|---|---|")
    for n in sorted({n for n, _ in runs}):
        cells = []
        for k in fields:
            rs = [float(p["kcr"][k]) / float(p[peer][k])
                  for (pn, _), p in pairs.items() if pn == n and "kcr" in p and peer in p]
            if rs:
                cells.append("%.2f (%.2f-%.2f)" % (statistics.median(rs), min(rs), max(rs)))
            else:
                cells.append("-")
        print("| %d | | %s |" % (n, " | ".join(cells)))
    print()
