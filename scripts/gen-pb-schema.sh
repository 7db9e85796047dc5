#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gen-pb-schema.sh [--check]: write src/util/pb_schema.c, the tables of
# src/util/pb_schema.h that the protobuf transcoder reads, from the struct tags
# of k8s.io/api at the version tools/pbschema-gen/go.mod requires.
#
# The generator (tools/pbschema-gen) is built by scripts/build-go-tool.sh into
# $KCR_CACHE/pbschema-gen/<k8s.io/api version>/bin and reused while the Go
# version and the module's files are unchanged. The output is run through clang-format (the
# repository's .clang-format) when clang-format is in PATH; the tables sit
# between clang-format off/on, so the file is the same either way.
#
#   gen-pb-schema.sh           rewrite src/util/pb_schema.c
#   gen-pb-schema.sh --check   exit 1, with the head of a diff, if the
#                              checked-in file differs from a fresh one
#
# Environment: KCR_CACHE and GOFLAGS (scripts/build-go-tool.sh),
# PBSCHEMA_GEN_FLAGS (extra flags for the generator, e.g. -v
# for its notes).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=$repo_root/src/util/pb_schema.c
check=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) printf 'gen-pb-schema: unknown argument: %s\n' "$arg" >&2; exit 2 ;;
  esac
done

die() { printf 'gen-pb-schema: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'gen-pb-schema: %s\n' "$*" >&2; }

command -v go >/dev/null || die "go is not in PATH (Go >= 1.26 is needed)"

line=$(bash "$repo_root/scripts/build-go-tool.sh" --quiet pbschema-gen) ||
  die "the build of tools/pbschema-gen failed (see the output above)"
bin=${line#pbschema-gen=}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086 # PBSCHEMA_GEN_FLAGS is a list of flags
"$bin" ${PBSCHEMA_GEN_FLAGS:-} -o "$tmp/pb_schema.c" || die "pbschema-gen failed"
if command -v clang-format >/dev/null; then
  # --assume-filename: the style is the repository's .clang-format.
  clang-format --assume-filename="$target" <"$tmp/pb_schema.c" >"$tmp/formatted.c" ||
    die "clang-format failed"
  mv "$tmp/formatted.c" "$tmp/pb_schema.c"
fi

if ((check)); then
  if ! cmp -s "$tmp/pb_schema.c" "$target"; then
    say "src/util/pb_schema.c is not what scripts/gen-pb-schema.sh makes; the diff's head:"
    diff -u "$target" "$tmp/pb_schema.c" | head -40 >&2 || true
    exit 1
  fi
  say "src/util/pb_schema.c is up to date"
  exit 0
fi
cp "$tmp/pb_schema.c" "$target.tmp.$$"
mv "$target.tmp.$$" "$target"
say "wrote src/util/pb_schema.c"
