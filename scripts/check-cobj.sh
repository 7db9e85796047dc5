#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-cobj.sh: the cache owns its stored form (src/cache/cobj.h).
#  1. Only src/cache and the compact object's own tests name it (kcr__cobj_*):
#     test_cobj.c, and fuzz_jscan.c, which parses what the scanner writes as
#     a compact object would. No other layer can ask whether a json_t * is
#     one, or make one.
#  2. In src/cache, only cobj.c calls json_is_string: everywhere else a compact
#     object is a kcr__cobj_t, and the one crossing from a json_t * slot is
#     kcr__cobj_of_slot. A json_is_string used as a compact-object test would
#     show up here.
# Exit 0 when clean; 1 with every violation listed. Reads the tracked tree only.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

strip() { # drop comments and string literals, keep line numbers
  python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1], encoding="utf-8", errors="replace").read()
t = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), t, flags=re.S)
t = re.sub(r"//[^\n]*", "", t)
t = re.sub(r'"(\\.|[^"\\\n])*"', '""', t)
sys.stdout.write(t)
PY
}

while IFS= read -r f; do
  case "$f" in
  src/cache/* | test/unit/test_cobj.c | test/fuzz/fuzz_jscan.c) continue ;;
  esac
  if hits=$(strip "$f" | grep -n 'kcr__cobj' ); then
    while IFS= read -r h; do
      echo "check-cobj: $f:${h%%:*}: the compact object is the cache's own (src/cache/cobj.h)" >&2
    done <<<"$hits"
    status=1
  fi
done < <(git ls-files '*.c' '*.h' '*.cpp')

while IFS= read -r f; do
  [ "$f" = src/cache/cobj.c ] && continue
  if hits=$(strip "$f" | grep -n 'json_is_string'); then
    while IFS= read -r h; do
      echo "check-cobj: $f:${h%%:*}: json_is_string in the cache; a slot is asked with kcr__cobj_of_slot" >&2
    done <<<"$hits"
    status=1
  fi
done < <(git ls-files 'src/cache/*.c' 'src/cache/*.h')

[ "$status" -eq 0 ] && echo "check-cobj: clean"
exit "$status"
