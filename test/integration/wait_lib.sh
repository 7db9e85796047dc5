# SPDX-License-Identifier: MIT
# wait_lib.sh: the poll the shell tests share (operator_lib.sh, image_lib.sh
# and the tests that use neither). Sourced; the caller defines fail MESSAGE,
# which must not return.
#
# wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds, polled 4
# times a second; fail "timed out ..." after SECONDS.
wait_for() {
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 4))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.25
  done
  fail "timed out after ${secs}s waiting for $what"
}
