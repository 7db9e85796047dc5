#!/bin/sh
# SPDX-License-Identifier: MIT
# kcr_gen_codecs_cli.sh KCR_GEN DIR: what a type header declares that `kcr-gen
# codecs` cannot code is one line on stderr naming FILE:LINE:COL and why, exit
# 1, and nothing is written (unit_kcr_gen_codecs_cli).
set -u
gen=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir/api/v1" "$dir/out"
failed=0

# expect HEADER_TEXT MESSAGE: the header as api/v1/bad_types.h must be refused so.
expect() {
  printf '%s\n' "$1" > "$dir/api/v1/bad_types.h"
  out=$("$gen" codecs -o "$dir/out" "$dir/api/v1/bad_types.h" 2>&1)
  rc=$?
  if [ $rc -ne 1 ] || [ "$out" != "kcr-gen: $dir/api/v1/bad_types.h:$2" ]; then
    echo "header:"; cat "$dir/api/v1/bad_types.h"
    echo "want (exit 1): kcr-gen: $dir/api/v1/bad_types.h:$2"
    echo "got  (exit $rc): $out"
    failed=1
  fi
  if [ -n "$(ls "$dir/out")" ]; then
    echo "files written on error: $(ls "$dir/out")"
    failed=1
  fi
}

g='// +groupName=x.example.com'

expect "$g
typedef struct {
  char *a;
} widget;" \
  "2:1: widget: kcr-gen codecs names a type's functions after its name less _t: name it widget_t"

expect "$g
typedef struct {
  char *a;
} item_t;
typedef struct {
  KCR_LIST(item_t *) items;
} widget_t;" \
  "6:12: item_t: a list or map of pointers cannot be coded: hold the elements by value"

expect "$g
typedef char *phase_t;
typedef struct {
  phase_t *phase;
} widget_t;" \
  "4:3: phase_t: a pointer to a string cannot be coded: drop the '*' (NULL is the unset string)"

expect "$g
typedef KCR_LIST(char *) names_t;
typedef struct {
  KCR_LIST(names_t) lists;
} widget_t;" \
  "4:12: names_t: a list or map of lists or maps cannot be coded (C has no place for the inner one's length): use a struct with a KCR_LIST member"

expect "$g
typedef struct {
  char *a;
} widget_scheme_t;
// +kubebuilder:object:root=true
typedef struct {
  widget_scheme_t s;
} widget_t;" \
  "2:1: widget_scheme_t: its function widget_scheme_decode is also the kind's or the package's: rename the type"

expect "$g
typedef struct {
  kcr_type_meta_t *tm;
  char *a;
} widget_t;" \
  "3:3: kcr_type_meta_t is held by value, not through a '*'"

# two headers whose codecs would have one name
mkdir -p "$dir/api/v2"
printf '%s\n' "$g" 'typedef struct {' '  char *a;' '} one_t;' > "$dir/api/v1/x_types.h"
printf '%s\n' "$g" 'typedef struct {' '  char *b;' '} two_t;' > "$dir/api/v2/x_types.h"
out=$("$gen" codecs -o "$dir/out" "$dir/api/v1/x_types.h" "$dir/api/v2/x_types.h" 2>&1)
if [ $? -ne 1 ] || [ "$out" != "kcr-gen: $dir/api/v1/x_types.h and $dir/api/v2/x_types.h both make x_codecs: give them separate runs" ]; then
  echo "two x_types.h: got: $out"
  failed=1
fi
# and a good run writes the files, including the header by its path less -I
out=$("$gen" codecs -o "$dir/out" -I "$dir" "$dir/api/v1/x_types.h" 2>&1) || { echo "$out"; failed=1; }
grep -q '^#include "api/v1/x_types.h"$' "$dir/out/x_codecs.h" || { echo "no include"; failed=1; }
[ -f "$dir/out/x_codecs.c" ] || { echo "no x_codecs.c"; failed=1; }
[ $failed -eq 0 ] && echo ok
exit $failed
