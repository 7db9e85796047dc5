#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lint.sh: the checks `make lint` runs. 1) every tracked .c/.h is formatted by the
# committed .clang-format; 2) clang-tidy (the clang static analyzer plus the curated
# checks in .clang-tidy) over the library and test sources, with warnings as errors;
# 3) scripts/check-includes.sh: no include or dependency circle, layers point down;
# 4) scripts/check-cobj.sh: the cache's compact object stays the cache's.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${KCR_LINT_BUILD_DIR:-build/lint}
status=0

mapfile -t files < <(git ls-files '*.c' '*.h')
echo "lint: clang-format on ${#files[@]} files"
if ! clang-format --dry-run -Werror "${files[@]}"; then
  echo "lint: files above are not formatted; run 'make format'" >&2
  status=1
fi

echo "lint: include graph and layers"
if ! scripts/check-includes.sh; then
  status=1
fi
if ! scripts/check-cobj.sh; then
  status=1
fi

cmake -S . -B "$build" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DKCR_INTEGRATION=ON >/dev/null
# Sources that include generated headers (kcr-gen's embedded runtime, the App
# types it generates for its tests) need those made before clang-tidy reads them.
cmake --build "$build" --target kcr_gen_app_types kcr_gen_shape_types kcr_gen_k8s_types >/dev/null
mapfile -t sources < <(git ls-files 'src/*.c' 'cmd/*.c' 'test/unit/*.c' 'test/support/*.c' 'test/fuzz/*.c' \
  'test/integration/*.c' 'examples/*.c' 'examples/*/*.c')
echo "lint: clang-tidy on ${#sources[@]} sources"
if ! run-clang-tidy -quiet -p "$build" -j "$(nproc)" "${sources[@]/#/$PWD/}" >"$build/clang-tidy.log" 2>&1; then
  grep -E 'warning:|error:' "$build/clang-tidy.log" | sort -u >&2 || cat "$build/clang-tidy.log" >&2
  echo "lint: clang-tidy found problems (full log: $build/clang-tidy.log)" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "lint: clean"
exit "$status"
