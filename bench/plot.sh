#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plot.sh RESULTS.json [OUTDIR]: the plots docs/benchmarks.md embeds, from one
# bench/results/*.json (bench/collect.py), with gnuplot (Debian's gnuplot-nox):
#   bench-rss.png   RSS after sync against N, median and min-max, per implementation
#   bench-sync.png  start -> synced against N
#   bench-apps.png  App throughput (Apps/s) per implementation, the null
#                   generator's ceiling included
#   bench-cpu.png   operator CPU per 1k reconciles and apiserver CPU per App
#   bench-size.png  stripped binary sizes
# Sections missing from the results are skipped.
set -euo pipefail
res=$1
out=${2:-$(dirname "$0")/../docs/img}
mkdir -p "$out"
dat=$(mktemp -d)
trap 'rm -rf "$dat"' EXIT
python3 - "$res" "$dat" <<'EOF'
import json, os, statistics, sys
doc = json.load(open(sys.argv[1]))
d = sys.argv[2]
s = doc.get("sync")
if s:
    # the 1 KiB ConfigMaps only (rows without a shape predate the shapes), N > 0
    # (the x axis is logarithmic)
    cm1k = [r for r in s["summary"] if r.get("shape", "cm1k") == "cm1k" and r["n"] > 0]
    for impl in sorted({r["impl"] for r in cm1k}):
        with open(os.path.join(d, f"sync-{impl}.dat"), "w") as f:
            for r in sorted((r for r in cm1k if r["impl"] == impl), key=lambda r: r["n"]):
                f.write("%d %g %g %g %g %g %g\n" % (
                    r["n"], r["rss_kb"]["median"] / 1024, r["rss_kb"]["min"] / 1024,
                    r["rss_kb"]["max"] / 1024, r["sync_s"]["median"], r["sync_s"]["min"],
                    r["sync_s"]["max"]))
a = doc.get("apps")
if a:
    with open(os.path.join(d, "apps.dat"), "w") as f:
        for i, (impl, row) in enumerate((k, v) for k, v in a["summary"].items()
                                        if k not in ("ratios", "calls_per_app")):
            def m(k):
                xs = row[k]
                return statistics.median(xs), min(xs), max(xs)
            t, c, api = m("apps_per_s"), m("op_cpu_per_1k"), m("api_cpu_ms_per_app")
            f.write('%d "%s" %g %g %g %g %g %g %g %g %g\n' % ((i, impl) + t + c + api))
if doc.get("sizes"):
    with open(os.path.join(d, "sizes.dat"), "w") as f:
        for i, r in enumerate(doc["sizes"]):
            f.write('%d "%s" %g\n' % (i, r["name"], r["bytes"] / 1e6))
EOF
term='set terminal pngcairo size 720,420 font "DejaVu Sans,10"'
if ls "$dat"/sync-*.dat >/dev/null 2>&1; then
  plots_rss=""
  plots_sync=""
  for f in "$dat"/sync-*.dat; do
    name=$(basename "$f" .dat)
    name=${name#sync-}
    plots_rss+="'$f' using 1:2:3:4 with yerrorlines title '$name',"
    plots_sync+="'$f' using 1:5:6:7 with yerrorlines title '$name',"
  done
  gnuplot -e "$term; set output '$out/bench-rss.png'; set logscale x; set key left top;
    set xlabel 'ConfigMaps of 1 KiB cached (N)'; set ylabel 'VmRSS after sync, MiB';
    set title 'Cache memory against N (median, min-max)'; plot ${plots_rss%,}"
  gnuplot -e "$term; set output '$out/bench-sync.png'; set logscale x; set key left top;
    set xlabel 'ConfigMaps of 1 KiB (N)'; set ylabel 'start -> synced, s';
    set title 'Initial sync time against N (median, min-max)'; plot ${plots_sync%,}"
fi
if [ -s "$dat/apps.dat" ]; then
  gnuplot -e "$term; set output '$out/bench-apps.png'; set style fill solid 0.5; set boxwidth 0.6;
    set yrange [0:*]; set ylabel 'Apps reconciled per second'; unset key;
    set title '1000 Apps created -> all reconciled (median, min-max)';
    plot '$dat/apps.dat' using 1:3:xtic(2) with boxes, '' using 1:3:4:5 with yerrorbars lc black"
  gnuplot -e "$term; set output '$out/bench-cpu.png'; set style fill solid 0.5; set boxwidth 0.35;
    set yrange [0:*]; set ylabel 'CPU'; set key left top;
    set title 'CPU: operator s per 1k reconciles, apiserver ms per App';
    plot '$dat/apps.dat' using (\$1-0.2):6:xtic(2) with boxes title 'operator s / 1k Apps',
      '' using (\$1-0.2):6:7:8 with yerrorbars lc black notitle,
      '' using (\$1+0.2):9 with boxes title 'apiserver ms / App',
      '' using (\$1+0.2):9:10:11 with yerrorbars lc black notitle"
fi
if [ -s "$dat/sizes.dat" ]; then
  gnuplot -e "$term; set output '$out/bench-size.png'; set style fill solid 0.5; set boxwidth 0.6;
    set yrange [0:*]; set ylabel 'MB, stripped'; unset key; set title 'Binary size';
    plot '$dat/sizes.dat' using 1:3:xtic(2) with boxes"
fi
ls "$out"/bench-*.png
