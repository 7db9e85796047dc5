#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draw one trace from an OpenTelemetry Collector file-exporter output
(OTLP JSON, one ExportTraceServiceRequest per line) as a waterfall PNG with
gnuplot: one row per span, parents above their children, a bar from start to
end, coloured by service (kcr-operator, apiserver, etcd).

Usage: scripts/trace-waterfall.py SPANS.jsonl OUT.png [TRACE_ID]
Without TRACE_ID: the trace holding the most spans among those that have a
kcr "Reconcile" span. Needs gnuplot (Debian's package) and the standard
library only.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile


def load(path):
    spans = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            for rs in doc.get("resourceSpans", []):
                svc = "?"
                for a in rs.get("resource", {}).get("attributes", []):
                    if a["key"] == "service.name":
                        svc = a["value"].get("stringValue", "?")
                for ss in rs.get("scopeSpans", []):
                    for s in ss.get("spans", []):
                        s["service"] = svc
                        spans.append(s)
    return spans


def pick_trace(spans):
    counts = collections.Counter(s["traceId"] for s in spans)
    with_reconcile = {s["traceId"] for s in spans if s["name"].startswith("Reconcile")}
    best = [t for t, _ in counts.most_common() if t in with_reconcile]
    if not best:
        sys.exit("trace-waterfall: no trace with a Reconcile span")
    return best[0]


def order(spans):
    """Depth-first from the roots (spans whose parent is not in the trace),
    children by start time; returns [(depth, span)]."""
    ids = {s["spanId"] for s in spans}
    kids = collections.defaultdict(list)
    roots = []
    for s in spans:
        p = s.get("parentSpanId", "")
        (kids[p] if p in ids else roots).append(s)
    out = []

    def walk(s, depth):
        out.append((depth, s))
        for c in sorted(kids[s["spanId"]], key=lambda x: int(x["startTimeUnixNano"])):
            walk(c, depth + 1)

    for r in sorted(roots, key=lambda x: int(x["startTimeUnixNano"])):
        walk(r, 0)
    return out


COLOURS = {"kcr-operator": "#1f77b4", "apiserver": "#ff7f0e", "etcd": "#2ca02c"}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    spans = load(sys.argv[1])
    tid = sys.argv[3] if len(sys.argv) > 3 else pick_trace(spans)
    mine = [s for s in spans if s["traceId"] == tid]
    rows = order(mine)
    t0 = min(int(s["startTimeUnixNano"]) for s in mine)
    t1 = max(int(s["endTimeUnixNano"]) for s in mine)
    n = len(rows)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "spans.dat")
        with open(data, "w", encoding="utf-8") as f:
            for i, (depth, s) in enumerate(rows):
                a = (int(s["startTimeUnixNano"]) - t0) / 1e6
                b = (int(s["endTimeUnixNano"]) - t0) / 1e6
                y = n - i
                label = "%s%s: %s" % ("  " * depth, s["service"], s["name"])
                label = label.replace('"', "'")[:70]
                colour = int(COLOURS.get(s["service"], "#7f7f7f")[1:], 16)
                f.write('%f %f %f %f %d "%s"\n' % ((a + b) / 2, y, (b - a) / 2, 0.35, colour,
                                                  label))
        script = os.path.join(tmp, "plot.gp")
        height = max(300, 60 + 16 * n)
        with open(script, "w", encoding="utf-8") as f:
            f.write("""set terminal pngcairo size 1400,%d font ',9'
set output '%s'
set title 'trace %s: %d spans, %.1f ms (kcr-operator blue, apiserver orange, etcd green)'
set xlabel 'milliseconds since the first span started'
set yrange [0.3:%f]
set xrange [0:%f]
set ytics scale 0
set grid xtics
unset key
set style fill solid 0.9 noborder
plot '%s' using 1:2:3:4:5:ytic(6) with boxxyerror lc rgb variable
""" % (height, sys.argv[2], tid, n, (t1 - t0) / 1e6, n + 0.7, (t1 - t0) / 1e6 * 1.02, data))
        subprocess.run(["gnuplot", script], check=True)
    print("trace-waterfall: %s: trace %s, %d spans" % (sys.argv[2], tid, n))


if __name__ == "__main__":
    main()
