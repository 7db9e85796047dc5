#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test.sh: the whole test suite, as `make test` and CI run it, from a clean clone
# on a fresh machine:
#   1. install the Debian packages kcr needs (scripts/install-deps.sh);
#   2. release build with -Werror: unit tests, the install/consumer test, and the
#      integration tests against the local control plane (the control plane and
#      every other tool they run built first by scripts/build-test-tools.sh,
#      cached in ~/.cache/kcr; KCR_SKIP_INTEGRATION=1 skips them);
#   3. the unit tests again under ASan+UBSan (a Debug build: -O0, so that a
#      dependency only -O2 hides, like libm behind inlined floor(), fails to link
#      here rather than in a user's Debug build), then under TSan;
#   4. the unit tests under valgrind memcheck, leaks as errors;
#   5. make lint (clang-format, clang-tidy), counted as one more check.
# Each phase prints CTest's own summary; the last line adds them up.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${KCR_BUILD_ROOT:-$root/build}
jobs=$(nproc)
passed=0
failed=0
failures=()
start=$(date +%s)

bash scripts/install-deps.sh

# run_ctest NAME DIR ARGS...: run ctest, keep going on failure, count the results.
run_ctest() {
  local name=$1 dir=$2 log rc=0
  shift 2
  log="$dir/ctest-$name.log"
  echo "==> $name: ctest $*"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$log" || rc=$?
  local line p t f
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [ -z "$line" ]; then
    if grep -q 'No tests were found' "$log"; then
      echo "==> $name: no tests"
      return 0
    fi
    failed=$((failed + 1))
    failures+=("$name (ctest did not finish)")
    return 0
  fi
  f=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
  t=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$line")
  p=$((t - f))
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$f" -ne 0 ] || [ "$rc" -ne 0 ]; then
    failures+=("$name")
    [ "$f" -ne 0 ] || failed=$((failed + 1))
  fi
}

# configure_build DIR ARGS...: configure and build one tree with -Werror.
configure_build() {
  local dir=$1
  shift
  echo "==> build $dir"
  cmake -S "$root" -B "$dir" -G Ninja -DKCR_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

integration=ON
[ "${KCR_SKIP_INTEGRATION:-0}" = 1 ] && integration=OFF

configure_build "$build/release" -DKCR_VALGRIND=ON -DKCR_INTEGRATION=$integration
run_ctest unit "$build/release" -L '^unit$'
run_ctest install "$build/release" -L '^install$'
if [ "$integration" = ON ]; then
  # Every tool built from a module or a source package, before any timed test
  # (a cold build is tens of minutes on two cores; warm, seconds).
  echo "==> tools: scripts/build-test-tools.sh"
  if bash scripts/build-test-tools.sh; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("tools")
  fi
  run_ctest integration "$build/release" -L '^integration$'
fi

configure_build "$build/asan" -DCMAKE_BUILD_TYPE=Debug '-DKCR_SANITIZER=address;undefined'
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  run_ctest asan-ubsan "$build/asan" -L '^unit$'

configure_build "$build/tsan" -DKCR_SANITIZER=thread
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 run_ctest tsan "$build/tsan" -L '^unit$'

run_ctest valgrind "$build/release" -L '^valgrind$'

# make lint: clang-format and clang-tidy (and the include checks), as a phase.
echo "==> lint: scripts/lint.sh"
if KCR_LINT_BUILD_DIR="$build/lint" bash scripts/lint.sh; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  failures+=("lint")
fi

echo
echo "kcr test suite took $(($(date +%s) - start)) s"
if [ "${#failures[@]}" -ne 0 ]; then
  echo "failed phases: ${failures[*]}"
fi
echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "${#failures[@]}" -eq 0 ]
