/* SPDX-License-Identifier: MIT */
/*
 * config_internal.h: what the config layer's files share, and the hooks the unit
 * tests use. Nothing here is public API.
 *
 * kubeconfig.c parses and merges kubeconfig files into a kcr__kubeconfig_t;
 * config.c turns the chosen context into a kcr_rest_config_t (and builds the
 * in-cluster one); credentials.c owns the refreshable credentials; exec.c runs
 * exec credential plugins.
 */
#ifndef KCR_CONFIG_INTERNAL_H
#define KCR_CONFIG_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/buf.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "kcr/error.h"
#include "kcr/time.h"
#include "util/alloc.h"
#include "util/file.h"

/* Limits. Every growable input of the config layer has one. */
#define KCR__KUBECONFIG_MAX_BYTES ((size_t)16 << 20) /* one kubeconfig file */
#define KCR__KUBECONFIG_MAX_DEPTH 64                 /* nested mappings and sequences in a file */
#define KCR__PEM_FILE_MAX_BYTES ((size_t)4 << 20)    /* CA bundle, client cert or key */
#define KCR__TOKEN_FILE_MAX_BYTES ((size_t)1 << 20)  /* token files */
#define KCR__SMALL_FILE_MAX_BYTES ((size_t)64 << 10) /* namespace file */
#define KCR__NAMESPACE_BUFSIZE 256                   /* a namespace name (63) fits */
#define KCR__EXEC_MAX_STDOUT ((size_t)1 << 20)       /* exec plugin stdout */
#define KCR__EXEC_STDERR_KEEP ((size_t)4096)         /* stderr kept for messages */
#define KCR__EXEC_TIMEOUT_NS (30 * KCR_NSEC_PER_SEC) /* exec plugin run time */
#define KCR__TOKEN_PERIOD_NS (60 * KCR_NSEC_PER_SEC) /* token file re-read period */

/* kcr__kc_exec: users[].user.exec of a kubeconfig, paths already resolved. */
typedef struct kcr__kc_exec {
  char *command;
  char **args; /* NULL-terminated, never NULL */
  size_t nargs;
  char **env; /* "NAME=value" entries, NULL-terminated, never NULL */
  size_t nenv;
  char *api_version;
  char *install_hint;
  char *interactive_mode;
  int provide_cluster_info;
} kcr__kc_exec_t;

/* kcr__kc_cluster: one named cluster. file is borrowed from the kubeconfig. */
typedef struct kcr__kc_cluster {
  char *name;
  const char *file;
  int line;
  char *server;
  char *ca_file;
  unsigned char *ca_data;
  size_t ca_data_len;
  char *tls_server_name;
  char *proxy_url;
  int insecure;
  int disable_compression;
  json_t *exec_extension; /* extensions[client.authentication.k8s.io/exec] */
} kcr__kc_cluster_t;

/* kcr__kc_user: one named user (AuthInfo). file is borrowed from the kubeconfig. */
typedef struct kcr__kc_user {
  char *name;
  const char *file;
  int line;
  char *client_cert_file;
  unsigned char *client_cert_data;
  size_t client_cert_data_len;
  char *client_key_file;
  unsigned char *client_key_data;
  size_t client_key_data_len;
  char *token;
  char *token_file;
  char *username;
  char *password;
  char *as;
  char *as_uid;
  char **as_groups; /* NULL-terminated, never NULL */
  size_t nas_groups;
  char **as_extra; /* key, value pairs, NULL-terminated, never NULL */
  size_t nas_extra;
  char *auth_provider; /* the auth-provider's name ("" when unnamed), NULL if absent */
  kcr__kc_exec_t *exec;
} kcr__kc_user_t;

/* kcr__kc_context: one named context. file is borrowed from the kubeconfig. */
typedef struct kcr__kc_context {
  char *name;
  const char *file;
  int line;
  char *cluster;
  char *user;
  char *namespace;
} kcr__kc_context_t;

/*
 * kcr__kubeconfig_t: the merged view of one or more kubeconfig files. Entries
 * keep the file (and line) that defined them, for messages and path resolution.
 */
typedef struct kcr__kubeconfig {
  char **files; /* owned; every file that was read */
  size_t nfiles;
  kcr__kc_cluster_t **clusters;
  size_t nclusters;
  kcr__kc_user_t **users;
  size_t nusers;
  kcr__kc_context_t **contexts;
  size_t ncontexts;
  char *current_context;
  const char *current_context_file;
} kcr__kubeconfig_t;

/*
 * kcr__kubeconfig_create makes an empty kubeconfig. Returns 0 or KCR_ENOMEM.
 */
int kcr__kubeconfig_create(kcr__kubeconfig_t **out, kcr_error_t *err);

/* kcr__kubeconfig_destroy frees kc and everything in it, wiping secrets. NULL ok. */
void kcr__kubeconfig_destroy(kcr__kubeconfig_t *kc);

/*
 * kcr__kubeconfig_merge_file parses the file at path and merges it into kc: a
 * named cluster/user/context already in kc is kept whole (the first file wins
 * it), current-context is taken only if kc has none. Relative paths in the file
 * resolve against its directory. Returns 0, KCR_ENOENT (no such file; the caller
 * decides whether that matters), KCR_EIO, KCR_ETOOBIG, KCR_ECONFIG (with file,
 * line and field), KCR_ENOMEM.
 */
int kcr__kubeconfig_merge_file(kcr__kubeconfig_t *kc, const char *path, kcr_error_t *err);

/*
 * kcr__kubeconfig_merge_text is kcr__kubeconfig_merge_file for text already in
 * memory; name is how messages call it and dir is where relative paths resolve.
 */
int kcr__kubeconfig_merge_text(kcr__kubeconfig_t *kc, const char *name, const char *dir,
                               const char *text, size_t len, kcr_error_t *err);

/* kcr__kubeconfig_find_* return the named entry (borrowed) or NULL. */
kcr__kc_cluster_t *kcr__kubeconfig_find_cluster(const kcr__kubeconfig_t *kc, const char *name);
kcr__kc_user_t *kcr__kubeconfig_find_user(const kcr__kubeconfig_t *kc, const char *name);
kcr__kc_context_t *kcr__kubeconfig_find_context(const kcr__kubeconfig_t *kc, const char *name);

/* kcr__strv_free frees a NULL-terminated array of strings. NULL ok. */
void kcr__strv_free(char **v);

/* kcr__env_get looks name up in env (NULL: the process's environment). Borrowed. */
const char *kcr__env_get(char *const *env, const char *name);

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

/*
 * kcr__creds_t: the refreshable credentials of a kcr_rest_config_t. The static
 * part is fixed at load; the current part is protected by mu. At most one
 * refresh runs at a time (refreshing), without mu held; other callers wait on
 * cond and take its outcome.
 */
typedef struct kcr__creds {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  kcr_clock_t *clock; /* set before sharing; the tests swap in a fake one */
  /* fixed at load */
  char *static_token;
  char *username;
  char *password;
  unsigned char *static_cert;
  size_t static_cert_len;
  unsigned char *static_key;
  size_t static_key_len;
  char *token_file;        /* re-read every token_period_ns and after a 401 */
  int64_t token_period_ns; /* set before sharing */
  kcr__exec_spec_t *exec;  /* run when needed */
  /* protected by mu */
  char *token;         /* current bearer token (file or exec), NULL: static */
  unsigned char *cert; /* current exec client certificate */
  size_t cert_len;
  unsigned char *key;
  size_t key_len;
  kcr_time_t expiry;     /* of the exec credential, {0,0}: none */
  kcr_time_t refresh_at; /* wall time to re-run the plugin, shortly before expiry */
  int64_t next_read_ns;  /* clock reading when the token file is due */
  int have;              /* a dynamic credential was obtained */
  int rejected;          /* the server answered 401 to the current generation */
  uint64_t generation;
  int refreshing;
  uint64_t refresh_seq; /* counts finished refreshes */
  int last_rc;          /* outcome of the last refresh */
  kcr_error_t last_err;
} kcr__creds_t;

/* kcr__creds_init prepares an empty set of credentials. Returns 0 or KCR_ESYS. */
int kcr__creds_init(kcr__creds_t *c, kcr_error_t *err);

/* kcr__creds_free releases everything (wiping secrets). */
void kcr__creds_free(kcr__creds_t *c);

/*
 * kcr__creds_prime reads the token file once at load, as client-go does, so a
 * missing token file is a load error. Returns 0 or the read's error.
 */
int kcr__creds_prime(kcr__creds_t *c, kcr_error_t *err);

/* kcr__rest_config_creds returns cfg's credentials (borrowed). */
kcr__creds_t *kcr__rest_config_creds(kcr_rest_config_t *cfg);

/*
 * Test hooks. Call them right after loading, before cfg is shared.
 *   set_clock          credentials use clock (fake in tests) for the token-file
 *                      period and exec expiry; the pending re-read is rebased.
 *   set_token_period   the token-file re-read period.
 *   set_exec_limits    the exec plugin's timeout and stdout limit (0: keep).
 */
void kcr__rest_config_set_clock(kcr_rest_config_t *cfg, kcr_clock_t *clock);
void kcr__rest_config_set_token_period(kcr_rest_config_t *cfg, int64_t ns);
void kcr__rest_config_set_exec_limits(kcr_rest_config_t *cfg, int64_t timeout_ns,
                                      size_t max_stdout);

#endif /* KCR_CONFIG_INTERNAL_H */
