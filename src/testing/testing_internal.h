/* SPDX-License-Identifier: MIT */
/*
 * testing_internal.h: what the test env (testenv.c) shares with kcr's own
 * integration-test support (test/support/kcr_testenv.c), which adds kubectl
 * runners and fault helpers on top of it. Not installed.
 */
#ifndef KCR_TESTING_INTERNAL_H
#define KCR_TESTING_INTERNAL_H

/*
 * kcr__run_command: run argv[0] with argv (NULL-terminated; no shell, execv,
 * so argv[0] is a path). stdin comes from `input` (borrowed; NULL: /dev/null).
 * If out is not NULL, *out receives the child's stdout as a new NUL-terminated
 * string the caller frees (NULL when -1 is returned), bounded to 64 MiB; if out
 * is NULL, the child's stdout goes to this process's stderr. stderr is
 * inherited, or captured with stdout when merge_stderr is non-zero and out is
 * not NULL. The child runs in its own process group, killed as a whole after
 * timeout_s seconds. Returns the exit status, or -1 on failure, a signal or the
 * timeout (reported on stderr with a "kcr_testenv:" prefix). Any thread; it
 * forks, so the caller's other threads must not hold locks the child needs
 * (the child only calls async-signal-safe functions before execv).
 */
int kcr__run_command(char *const argv[], const char *input, char **out, int merge_stderr,
                     int timeout_s);

#endif
