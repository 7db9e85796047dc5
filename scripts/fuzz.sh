#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz.sh [TARGET|all] [SECONDS]: run kcr's libFuzzer targets (test/fuzz/fuzz_*.c),
# each for SECONDS (default 60), ASan and UBSan on. Installs clang and its fuzzer
# runtime from Debian when `clang -fsanitize=fuzzer` does not work yet. Builds in
# build/fuzz (KCR_FUZZ_BUILD_DIR); inputs libFuzzer finds go to build/fuzz/corpus/
# (the committed seeds in test/fuzz/corpus/ are read, never written); a crash
# leaves its input in build/fuzz/artifacts/TARGET/ and makes the script fail.
# Copy a crash input into test/fuzz/corpus/TARGET/ once fixed: it then runs in
# every unit test run (see docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${1:-all}
seconds=${2:-60}
build=${KCR_FUZZ_BUILD_DIR:-$root/build/fuzz}
all_targets=(time base64 watch status http_request kubeconfig exec selector jscan admission conversion
  review_answer netstat traceparent otlp kcr_gen kcr_gen_crd kcr_gen_webhook)

if [ "$target" = all ]; then
  targets=("${all_targets[@]}")
else
  [ -f "test/fuzz/fuzz_$target.c" ] || { echo "fuzz: no target '$target' (have: ${all_targets[*]})" >&2; exit 2; }
  targets=("$target")
fi
if ! grep -q 'test/fuzz' CMakeLists.txt; then
  echo "fuzz: test/fuzz is not part of the build; CMakeLists.txt needs" >&2
  echo "  if(EXISTS \${PROJECT_SOURCE_DIR}/test/fuzz/CMakeLists.txt) add_subdirectory(test/fuzz) endif()" >&2
  exit 2
fi

# fuzzer_works CC: can CC build and link a libFuzzer binary with ASan and UBSan?
fuzzer_works() {
  local dir
  dir=$(mktemp -d)
  printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$dir/t.c"
  "$1" -fsanitize=fuzzer,address,undefined "$dir/t.c" -o "$dir/t" >/dev/null 2>&1
  local rc=$?
  rm -rf "$dir"
  return $rc
}

find_clang() {
  local c
  for c in clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do
    if command -v "$c" >/dev/null && fuzzer_works "$c"; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

if ! cc=$(find_clang); then
  echo "fuzz: installing clang and its sanitizer/fuzzer runtime"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends clang >/dev/null
  major=$(clang --version | sed -nE 's/.*clang version ([0-9]+).*/\1/p' | head -n 1)
  if ! fuzzer_works clang; then
    $SUDO apt-get install -y -qq --no-install-recommends "libclang-rt-$major-dev" >/dev/null ||
      true
  fi
  if ! fuzzer_works clang; then
    $SUDO apt-get install -y -qq --no-install-recommends "libfuzzer-$major-dev" >/dev/null || true
  fi
  cc=$(find_clang) || { echo "fuzz: clang -fsanitize=fuzzer still does not link" >&2; exit 1; }
fi
echo "fuzz: compiler $cc"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKCR_FUZZ=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

status=0
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  mkdir -p "$work" "$artifacts"
  extra=()
  case $t in
  watch | status | exec) extra=(-dict="$root/test/fuzz/json.dict" -max_len=16384) ;;
  kubeconfig) extra=(-dict="$root/test/fuzz/kubeconfig.dict" -max_len=16384) ;;
  selector) extra=(-dict="$root/test/fuzz/selector.dict" -max_len=4096) ;;
  http_request) extra=(-dict="$root/test/fuzz/http.dict" -max_len=8192) ;;
  esac
  echo "==> fuzz_$t for ${seconds}s"
  log="$build/fuzz_$t.log"
  if ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/test/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra[@]}" \
    "$work" "$root/test/fuzz/corpus/$t" >"$log" 2>&1; then
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 || true)
    echo "==> fuzz_$t: no crash, ${runs:-?} runs, ${cov:-cov: ?}, corpus $(find "$work" -type f | wc -l) files"
  else
    status=1
    echo "==> fuzz_$t: CRASH; log $log, inputs:" >&2
    ls -1 "$artifacts" >&2 || true
    grep -E 'ERROR|SUMMARY|check failed' "$log" | head -n 5 >&2 || true
  fi
done
exit $status
