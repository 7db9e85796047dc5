#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-includes.sh: kcr's dependency rules, checked on the source tree (no build).
#
#  1. No include circle: the graph of quoted #includes between the files of src/
#     and include/ has no cycle.
#  2. No circle through headers: a .c file depends on another when it uses a
#     kcr_/kcr__ function the other defines (it can only do so through a header
#     it includes). That graph has no cycle either. This is the check that finds
#     a knot one shared header hides (two files calling each other through
#     config_internal.h), which the plain include graph cannot see.
#  3. Layers point down: the layer order is CMakeLists.txt's KCR_LAYERS (and
#     docs/design.md's table must list the same layers in the same order). A
#     file may include another layer's internal header, or use a function
#     another layer's file defines, only when that layer is lower. Directories
#     of src/ outside KCR_LAYERS (application code) sit above every layer.
#  4. The umbrella include/kcr/kcr.h includes every public header except
#     kcr/testing.h (the test kit, included on its own by tests).
#
# Exit 0 when clean; 1 with every violation listed. Python 3, standard library.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'EOF'
import os
import re
import sys

# ALLOWED: dependency edges tolerated until their owner fixes them, each with why.
# An entry that no longer matches anything is itself an error, so a fixed edge
# must leave this list in the same change.
ALLOWED = set()  # empty: add (from, to) pairs, each with a comment saying why

def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()

def strip_code(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)

def layers_from_cmake():
    m = re.search(r"set\(KCR_LAYERS([^)]*)\)", read("CMakeLists.txt"))
    if not m:
        sys.exit("check-includes: no KCR_LAYERS list in CMakeLists.txt")
    return m.group(1).split()

def layers_from_design():
    rows = re.findall(r"^\|\s*[a-z]+\s*\|\s*`src/([a-z_]+)`", read("docs/design.md"), flags=re.M)
    return rows

problems = []
layers = layers_from_cmake()
rank = {name: i for i, name in enumerate(layers)}
TOP = len(layers)
design = layers_from_design()
if design != layers:
    problems.append("layer order: CMakeLists.txt KCR_LAYERS is %s but docs/design.md's table lists %s"
                    % (" ".join(layers), " ".join(design)))

files = []
for top in ("src", "include"):
    for d, _, names in os.walk(top):
        files += [os.path.join(d, n) for n in names if n.endswith((".c", ".h"))]
files.sort()
fileset = set(files)

def layer_of(path):
    parts = path.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return rank.get(parts[1], TOP), parts[1]
    return None, None  # a public header: checked through what it declares

def resolve(src, inc):
    for cand in (os.path.join(os.path.dirname(src), inc), os.path.join("include", inc),
                 os.path.join("src", inc)):
        cand = os.path.normpath(cand)
        if cand in fileset:
            return cand
    return None

# ---- 1. the include graph ----
includes = {f: set() for f in files}
for f in files:
    for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', read(f), flags=re.M):
        target = resolve(f, inc)
        if target:
            includes[f].add(target)

def cycles(graph):
    """Strongly connected components of more than one node (or a self-loop)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    def visit(v):
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1
                    stack.append(w); on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in graph[node]:
                    out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out

for comp in cycles(includes):
    edges = ["%s includes %s" % (a, b) for a in comp for b in sorted(includes[a]) if b in comp]
    problems.append("include circle: " + "; ".join(edges))

# ---- 2. the dependency graph of the .c files, through their headers ----
DEF = re.compile(r"^(?!static\b|typedef\b|extern\b|return\b)[A-Za-z_][\w \t\*]*?\b(kcr_\w+)\s*\([^;]*$")
sources = [f for f in files if f.endswith(".c")]
defs, uses = {}, {}
for f in sources:
    code = strip_code(read(f))
    defs[f] = {m.group(1) for line in code.split("\n") for m in [DEF.match(line)] if m}
    uses[f] = set(re.findall(r"\bkcr_\w+\b", code)) - defs[f]
owner = {}
for f in sources:
    for name in defs[f]:
        owner.setdefault(name, f)
deps, why = {f: set() for f in sources}, {}
for f in sources:
    for name in sorted(uses[f]):
        g = owner.get(name)
        if g and g != f:
            deps[f].add(g)
            why.setdefault((f, g), name)

used_allow = set()
graph = {f: {g for g in deps[f] if (f, g) not in ALLOWED} for f in sources}
used_allow |= {(f, g) for f in sources for g in deps[f] if (f, g) in ALLOWED}
for comp in cycles(graph):
    edges = ["%s -> %s (%s)" % (a, b, why[(a, b)]) for a in comp for b in sorted(graph[a]) if b in comp]
    problems.append("dependency circle: " + "; ".join(edges))

# ---- 3. layers point down ----
for f in sources:
    r, name = layer_of(f)
    if r is None:
        continue
    for g in sorted(deps[f]):
        rg, gname = layer_of(g)
        if rg is not None and rg > r:
            if (f, g) in ALLOWED:
                used_allow.add((f, g))
                continue
            problems.append("layer %s -> %s points up: %s uses %s from %s" % (name, gname, f, why[(f, g)], g))
for f in files:
    r, name = layer_of(f)
    if r is None:
        continue
    for g in sorted(includes[f]):
        rg, gname = layer_of(g)
        if rg is not None and rg > r:
            problems.append("layer %s -> %s points up: %s includes %s" % (name, gname, f, g))

# The umbrella kcr/kcr.h includes every public header but kcr/testing.h (the
# test kit: a test includes it on its own, as envtest and the fake client are
# separate packages in controller-runtime).
umbrella_skip = {"kcr/kcr.h", "kcr/testing.h"}
try:
    with open("include/kcr/kcr.h") as fh:
        umbrella = set(re.findall(r'#include "(kcr/[^"]+)"', fh.read()))
    for h in sorted(os.listdir("include/kcr")):
        name = "kcr/" + h
        if h.endswith(".h") and name not in umbrella_skip and name not in umbrella:
            problems.append("include/kcr/kcr.h does not include %s (every public header but kcr/testing.h)" % name)
    for name in sorted(umbrella & umbrella_skip):
        problems.append("include/kcr/kcr.h includes %s, which it leaves out on purpose" % name)
except OSError as e:
    problems.append("include/kcr/kcr.h: %s" % e)

for edge in sorted(ALLOWED - used_allow):
    problems.append("allow-list entry %s -> %s matches nothing: remove it" % edge)

if problems:
    print("check-includes: %d problem(s)" % len(problems), file=sys.stderr)
    for p in problems:
        print("  " + p, file=sys.stderr)
    sys.exit(1)
print("check-includes: %d files, %d layers (%s): no circle, layers point down"
      % (len(files), len(layers), " ".join(layers)))
for a, b in sorted(used_allow):
    print("check-includes: allowed until fixed: %s -> %s (%s)" % (a, b, why.get((a, b), "include")))
EOF
