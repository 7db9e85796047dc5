/* SPDX-License-Identifier: MIT */
/*
 * exec.h: running an exec credential plugin and decoding its ExecCredential
 * (exec.c). It depends on nothing above cfgutil.h: credentials.c calls it,
 * config.c builds its spec, and it calls neither back.
 */
#ifndef KCR_CONFIG_EXEC_H
#define KCR_CONFIG_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfgutil.h"
#include "kcr/buf.h"
#include "kcr/error.h"
#include "kcr/time.h"

/*
 * kcr__exec_spec_t: everything needed to run an exec plugin, fixed at load.
 */
typedef struct kcr__exec_spec {
  char *command;     /* as configured (relative ones resolved) */
  char **argv;       /* argv[0] = command, NULL-terminated */
  char **env;        /* entries from the kubeconfig, "NAME=value" */
  char **base_env;   /* copy of opts->env, or NULL for the process environment */
  char *api_version; /* client.authentication.k8s.io/v1 or /v1beta1 */
  char *install_hint;
  char *exec_info; /* the KUBERNETES_EXEC_INFO value (JSON) */
  int64_t timeout_ns;
  size_t max_stdout;
} kcr__exec_spec_t;

/* kcr__exec_spec_free frees a spec. NULL ok. */
void kcr__exec_spec_free(kcr__exec_spec_t *spec);

/*
 * kcr__exec_run runs the plugin: argv as given (no shell), PATH lookup when the
 * command has no '/', stdin /dev/null, the child's own process group. Its stdout
 * goes to out (bounded by spec->max_stdout). Returns 0 when it exited 0 in time;
 * KCR_ETIMEDOUT (killed), KCR_ETOOBIG (too much output, killed), KCR_EAUTH
 * (could not start, or failed: the exit code and stderr are in the message),
 * KCR_ESYS, KCR_ENOMEM. The child is always reaped. Any thread; blocks.
 */
int kcr__exec_run(const kcr__exec_spec_t *spec, kcr_buf_t *out, kcr_error_t *err);

/*
 * kcr__exec_result_t: what a plugin's ExecCredential status said. Secrets are
 * owned; free with kcr__exec_result_free.
 */
typedef struct kcr__exec_result {
  char *token;
  unsigned char *cert;
  size_t cert_len;
  unsigned char *key;
  size_t key_len;
  kcr_time_t expiry; /* {0,0}: none given */
} kcr__exec_result_t;

/* kcr__exec_result_free wipes and frees the result's secrets. */
void kcr__exec_result_free(kcr__exec_result_t *r);

/*
 * kcr__exec_parse decodes a plugin's stdout as an ExecCredential of
 * spec->api_version. Returns 0, KCR_EAUTH (malformed or incomplete; the message
 * never quotes the output), KCR_ENOMEM.
 */
int kcr__exec_parse(const kcr__exec_spec_t *spec, const char *data, size_t len,
                    kcr__exec_result_t *out, kcr_error_t *err);

#endif /* KCR_CONFIG_EXEC_H */
