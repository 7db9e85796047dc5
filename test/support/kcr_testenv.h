/* SPDX-License-Identifier: MIT */
/*
 * kcr_testenv: a real local control plane for kcr's integration tests.
 *
 * A test calls kcr_testenv_start() once (typically in a cmocka group setup)
 * and gets a handle that names a running cluster: etcd, kube-apiserver and
 * kube-controller-manager started by scripts/cluster.sh. Two ways in:
 *
 *  - If the environment variable KCR_TEST_KUBECONFIG is set, the handle
 *    joins the cluster whose admin kubeconfig it names. This is how the
 *    CTest fixture `controlplane` (test/integration/CMakeLists.txt) shares
 *    one cluster among all integration tests of a run; kcr_testenv_stop()
 *    then leaves that cluster running.
 *  - Otherwise it runs `scripts/cluster.sh up DIR` into a fresh directory
 *    made with mkdtemp() under $TMPDIR (or /tmp), and kcr_testenv_stop()
 *    runs `scripts/cluster.sh down DIR` and removes DIR.
 * Both are the installed test env (kcr/testing.h); this file adds kubectl
 * runners and fault helpers for kcr's own tests.
 *
 * kubectl is the one built by scripts/build-control-plane.sh: DIR/bin/kubectl
 * (a symlink written by cluster.sh), or $KCR_KUBECTL if set.
 *
 * Build: the repository root comes in as the compile definition
 * KCR_SOURCE_DIR (a string literal, set by test/integration/CMakeLists.txt);
 * the scripts are found under it.
 *
 * Errors are reported on stderr with a "kcr_testenv:" prefix.
 */
#ifndef KCR_TESTENV_H
#define KCR_TESTENV_H

#include <stddef.h>

#include "kcr/testing.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kcr_testenv_t, kcr_testenv_start, kcr_testenv_kubeconfig, kcr_testenv_dir and
 * kcr_testenv_stop are the installed test env's (kcr/testing.h): started with
 * the source tree's scripts/cluster.sh (this file sets KCR_CLUSTER_SCRIPT
 * before main unless it is set), joined when KCR_TEST_KUBECONFIG names a
 * cluster. Starting waits until /readyz answers.
 */

/*
 * The repository root (KCR_SOURCE_DIR), for finding test data. Static string.
 */
const char *kcr_testenv_source_dir(void);

/*
 * Run kubectl with --kubeconfig=<the env's kubeconfig> and
 * --cache-dir=<the cluster directory>/.kube-cache, followed by argv (a
 * NULL-terminated list of arguments, without the program name), via
 * fork/execv: no shell is involved. kubectl's stderr goes to this process's
 * stderr. If out_stdout is not NULL, *out_stdout receives kubectl's standard
 * output as a new NUL-terminated string that the caller frees (also on a
 * non-zero exit; NULL on -1). kubectl is killed after
 * $KCR_TESTENV_KUBECTL_TIMEOUT seconds (default 60).
 * Returns kubectl's exit status (0..255), or -1 if it could not be run, was
 * killed by a signal or timed out.
 */
int kcr_testenv_kubectl(kcr_testenv_t *env, const char *const argv[], char **out_stdout);

/*
 * kcr_testenv_wait_established waits (up to 60 s) until the CRD named
 * `what` ("crd/<plural>.<group>") is Established. `kubectl wait` alone fails
 * at once when the CRD has no status.conditions yet, as it does just after
 * an apply ("accessor error: <nil>"): that is retried. Returns 0 or -1.
 */
int kcr_testenv_wait_established(kcr_testenv_t *env, const char *what);

/*
 * Like kcr_testenv_kubectl(), with `input` (NUL-terminated, may be NULL for
 * empty) fed to kubectl's standard input, e.g. for `apply -f -`.
 */
int kcr_testenv_kubectl_input(kcr_testenv_t *env, const char *const argv[], const char *input,
                              char **out_stdout);

/*
 * Like kcr_testenv_kubectl(), with kubectl's standard error captured too:
 * *out (required) receives stdout and stderr interleaved as written, for
 * checking an error message such as "Error from server (Expired)".
 */
int kcr_testenv_kubectl_combined(kcr_testenv_t *env, const char *const argv[], char **out);

/*
 * Poll the API server's /readyz (through kubectl) until it answers "ok" or
 * timeout_s seconds pass. Returns 0 when ready, -1 otherwise.
 */
int kcr_testenv_wait_ready(kcr_testenv_t *env, int timeout_s);

/*
 * Fault helpers (see also kcr_faultproxy.h). They act on the whole cluster,
 * so a test that uses them must not share the cluster with tests running at
 * the same time (CTest: RUN_SERIAL).
 */

/*
 * Restart kube-apiserver: `scripts/cluster.sh restart-apiserver DIR` (no
 * shell), which stops it (SIGTERM, SIGKILL after $KCR_RESTART_GRACE seconds,
 * default 3) and starts it again with the same flags on the same port, then
 * waits for /readyz. Bounded by $KCR_TESTENV_RESTART_TIMEOUT seconds
 * (default 180). Returns 0 when the API server is ready again, -1 otherwise.
 */
int kcr_testenv_restart_apiserver(kcr_testenv_t *env);

/*
 * Compact etcd to its current revision (`scripts/cluster.sh compact DIR`,
 * physical compaction through etcd's JSON gateway) and store that revision
 * as a decimal string in rev_out (size bytes, NUL-terminated). Returns 0, or
 * -1 on failure (rev_out then holds ""), or if rev_out is too small.
 */
int kcr_testenv_compact(kcr_testenv_t *env, char *rev_out, size_t size);

/*
 * The port kube-apiserver listens on (127.0.0.1), from DIR/run/ports (the
 * `kube-apiserver=PORT` line). Returns it, or -1 if it cannot be read.
 */
int kcr_testenv_apiserver_port(const kcr_testenv_t *env);

/*
 * Write a copy of the admin kubeconfig whose server URL has its port
 * replaced by `port` (e.g. a kcr_faultproxy's, which forwards to the API
 * server: the serving certificate's SANs include 127.0.0.1, so TLS still
 * verifies). The file is DIR/kubeconfig.port-PORT (mode 0600, replaced if
 * it exists); its path goes to path_out (size bytes). To run kubectl through
 * it, put "--kubeconfig=PATH" first in the argv given to
 * kcr_testenv_kubectl(): kubectl takes the last --kubeconfig. Returns 0 or -1.
 */
int kcr_testenv_write_kubeconfig_for_port(kcr_testenv_t *env, int port, char *path_out,
                                          size_t size);

#ifdef __cplusplus
}
#endif

#endif /* KCR_TESTENV_H */
