#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# debian-mirror.sh: print "URI SUITE" pairs of the Debian archives this machine's
# apt already uses (deb822 *.sources files and one-line *.list / sources.list),
# one pair per line, so that scripts can write a matching deb-src list without
# naming a host in the repository. Only entries whose suite is a Debian release
# suite (no third-party archives) are printed: those whose URI ends in /debian
# or /debian-security.
set -euo pipefail
etc=${APT_ETC:-/etc/apt}

emit() { # URI SUITE...
  local uri=$1
  shift
  case "$uri" in
  */debian | */debian/ | */debian-security | */debian-security/) ;;
  *) return 0 ;;
  esac
  local s
  for s in "$@"; do printf '%s %s\n' "${uri%/}" "$s"; done
}

# One-line format: deb [options] URI SUITE COMPONENTS...
for f in "$etc/sources.list" "$etc"/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  while read -r type rest; do
    [ "$type" = deb ] || continue
    rest=$(sed -E 's/^\[[^]]*\][[:space:]]*//' <<<"$rest")
    read -r uri suite _ <<<"$rest"
    [ -n "${suite:-}" ] && emit "$uri" "$suite"
  done <"$f"
done

# deb822 format: stanzas of Types/URIs/Suites separated by blank lines.
for f in "$etc"/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  awk '
    function flush() {
      if (types ~ /(^| )deb( |$)/ && enabled != "no")
        for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print u[i], s[j]
      types = ""; nu = 0; ns = 0; enabled = ""
    }
    /^[[:space:]]*#/ { next }
    /^[[:space:]]*$/ { flush(); next }
    {
      key = tolower($1); sub(/:$/, "", key)
      if (key == "types") { $1 = ""; types = $0 }
      else if (key == "uris") { for (k = 2; k <= NF; k++) u[++nu] = $k }
      else if (key == "suites") { for (k = 2; k <= NF; k++) s[++ns] = $k }
      else if (key == "enabled") { enabled = tolower($2) }
    }
    END { flush() }
  ' "$f" | while read -r uri suite; do emit "$uri" "$suite"; done
done
