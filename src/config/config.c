/* SPDX-License-Identifier: MIT */
/*
 * config.c: kcr_rest_config_t, what a client needs to reach and authenticate to
 * an API server, built from kubeconfig files (client-go's clientcmd rules), from
 * the in-cluster environment (rest.InClusterConfig), or found by
 * controller-runtime's config.GetConfig precedence.
 *
 * Design: loading does all file I/O up front (CA bundle, client certificate and
 * key, the first read of a token file) so that a broken configuration fails at
 * load, with a message naming the file, line and field; only the credentials
 * change afterwards, in credentials.c. Validation follows client-go's
 * ConfirmUsable: it applies to the chosen context, its cluster and its user only,
 * so a broken entry elsewhere in a merged KUBECONFIG does not stop a good one
 * from working (syntax and type errors anywhere still do, as in client-go).
 * A config is immutable apart from its credentials and reference-counted with an
 * atomic, so any thread may read it or drop a reference.
 */
#include <ctype.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config_internal.h"
#include "config/proxy.h"
#include "kcr/base64.h"
#include "kcr/log.h"
#include "util/alloc.h"

#define EXEC_API_V1 "client.authentication.k8s.io/v1"
#define EXEC_API_V1BETA1 "client.authentication.k8s.io/v1beta1"

struct kcr_rest_config {
  atomic_int refs;
  char *source;
  char *server;
  char *namespace;
  char *tls_server_name;
  char *proxy_url;
  char *imp_user;
  char *imp_uid;
  char **imp_groups; /* NULL-terminated, never NULL */
  char **imp_extra;  /* key, value, ... NULL-terminated, never NULL */
  unsigned char *ca;
  size_t ca_len;
  int insecure;
  kcr__creds_t creds;
  kcr__proxy_env_t proxy_env; /* HTTP(S)_PROXY, NO_PROXY of the load environment */
};

static void config_free(kcr_rest_config_t *cfg) {
  if (!cfg)
    return;
  kcr__free(cfg->source);
  kcr__free(cfg->server);
  kcr__free(cfg->namespace);
  kcr__free(cfg->tls_server_name);
  kcr__free(cfg->proxy_url);
  kcr__free(cfg->imp_user);
  kcr__free(cfg->imp_uid);
  kcr__strv_free(cfg->imp_groups);
  kcr__strv_free(cfg->imp_extra);
  kcr__free(cfg->ca);
  kcr__creds_free(&cfg->creds);
  kcr__proxy_env_free(&cfg->proxy_env);
  kcr__free(cfg);
}

static int config_alloc(kcr_rest_config_t **out, kcr_error_t *err) {
  kcr_rest_config_t *cfg = kcr__calloc(1, sizeof(*cfg));
  int rc;
  *out = NULL;
  if (!cfg) {
    kcr_error_set(err, KCR_ENOMEM, "out of memory");
    return KCR_ENOMEM;
  }
  atomic_init(&cfg->refs, 1);
  rc = kcr__creds_init(&cfg->creds, err);
  if (rc < 0) {
    kcr__free(cfg);
    return KCR_ESYS;
  }
  *out = cfg;
  return 0;
}

kcr_rest_config_t *kcr_rest_config_ref(kcr_rest_config_t *cfg) {
  atomic_fetch_add(&cfg->refs, 1);
  return cfg;
}

void kcr_rest_config_unref(kcr_rest_config_t *cfg) {
  if (cfg && atomic_fetch_sub(&cfg->refs, 1) == 1)
    config_free(cfg);
}

kcr__creds_t *kcr__rest_config_creds(kcr_rest_config_t *cfg) {
  return &cfg->creds;
}

const char *kcr_rest_config_server(const kcr_rest_config_t *cfg) {
  return cfg->server;
}

const char *kcr_rest_config_namespace(const kcr_rest_config_t *cfg) {
  return cfg->namespace;
}

const unsigned char *kcr_rest_config_ca(const kcr_rest_config_t *cfg, size_t *len) {
  if (len)
    *len = cfg->ca_len;
  return cfg->ca;
}

const char *kcr_rest_config_tls_server_name(const kcr_rest_config_t *cfg) {
  return cfg->tls_server_name;
}

int kcr_rest_config_insecure(const kcr_rest_config_t *cfg) {
  return cfg->insecure;
}

const char *kcr_rest_config_proxy_url(const kcr_rest_config_t *cfg) {
  return cfg->proxy_url;
}

const char *kcr_rest_config_impersonate_user(const kcr_rest_config_t *cfg) {
  return cfg->imp_user;
}

const char *kcr_rest_config_impersonate_uid(const kcr_rest_config_t *cfg) {
  return cfg->imp_uid;
}

const char *const *kcr_rest_config_impersonate_groups(const kcr_rest_config_t *cfg) {
  return (const char *const *)cfg->imp_groups;
}

const char *const *kcr_rest_config_impersonate_extra(const kcr_rest_config_t *cfg) {
  return (const char *const *)cfg->imp_extra;
}

const char *kcr_rest_config_source(const kcr_rest_config_t *cfg) {
  return cfg->source;
}

int kcr_rest_config_proxy_for(const kcr_rest_config_t *cfg, const char *url, char *buf, size_t size,
                              kcr_error_t *err) {
  if (!cfg || !url || !buf || size == 0)
    return kcr_error_set(err, KCR_EINVAL, "proxy: invalid arguments");
  buf[0] = '\0';
  if (cfg->proxy_url) {
    /* client-go: http.ProxyURL(proxy-url), for every request. */
    if (strlen(cfg->proxy_url) >= size)
      return kcr_error_set(err, KCR_ETOOBIG, "proxy: the proxy-url is longer than %zu bytes",
                           size - 1);
    memcpy(buf, cfg->proxy_url, strlen(cfg->proxy_url) + 1);
    return 0;
  }
  return kcr__proxy_for_url(&cfg->proxy_env, url, buf, size, err);
}

/* ---- helpers ---- */

static int dup_opt(const char *s, char **out) {
  *out = NULL;
  if (!s)
    return 0;
  *out = kcr__strdup(s);
  return *out ? 0 : KCR_ENOMEM;
}

static int dup_bytes(const unsigned char *p, size_t n, unsigned char **out) {
  *out = kcr__malloc(n + 1);
  if (!*out)
    return KCR_ENOMEM;
  if (n)
    memcpy(*out, p, n);
  (*out)[n] = '\0';
  return 0;
}

static int strv_copy(char *const *v, char ***out) {
  size_t n = 0;
  *out = NULL;
  while (v && v[n])
    n++;
  *out = kcr__calloc(n + 1, sizeof(char *));
  if (!*out)
    return KCR_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    (*out)[i] = kcr__strdup(v[i]);
    if (!(*out)[i]) {
      kcr__strv_free(*out);
      *out = NULL;
      return KCR_ENOMEM;
    }
  }
  return 0;
}

/* trim_space cuts leading and trailing white space of s in place. */
static void trim_space(char *s) {
  size_t n = strlen(s), i = 0;
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
  while (s[i] && isspace((unsigned char)s[i]))
    i++;
  if (i)
    memmove(s, s + i, n - i + 1);
}

/* is_dns1123_label: what client-go's validation asks of a context's namespace. */
static int is_dns1123_label(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
    return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (!(islower(ch) || isdigit(ch) || ch == '-'))
      return 0;
  }
  return 1;
}

/*
 * normalize_server applies client-go's DefaultServerURL: a host without a scheme
 * gets https when TLS is configured (a CA, a client certificate or insecure),
 * else http; trailing slashes go.
 */
static int normalize_server(const char *server, int tls, char **out) {
  size_t n = strlen(server);
  const char *scheme = strstr(server, "://") ? "" : (tls ? "https://" : "http://");
  size_t sl = strlen(scheme);
  while (n > 0 && server[n - 1] == '/')
    n--;
  *out = kcr__malloc(sl + n + 1);
  if (!*out)
    return KCR_ENOMEM;
  memcpy(*out, scheme, sl);
  memcpy(*out + sl, server, n);
  (*out)[sl + n] = '\0';
  return 0;
}

/* files_desc names the files a merged config came from, for messages. */
static void files_desc(const kcr__kubeconfig_t *kc, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < kc->nfiles && used < size; i++) {
    int n = snprintf(buf + used, size - used, "%s%s", i ? ":" : "", kc->files[i]);
    if (n < 0)
      break;
    used += (size_t)n;
  }
}

/* ---- exec plugins ---- */

/* exec_info builds the KUBERNETES_EXEC_INFO value, as client-go's exec.go does. */
static int exec_info(const kcr__kc_exec_t *e, const kcr__kc_cluster_t *cl,
                     const kcr_rest_config_t *cfg, char **out) {
  json_t *root = NULL, *spec, *cluster = NULL;
  char *ca64 = NULL;
  int rc = KCR_ENOMEM;

  *out = NULL;
  root = json_object();
  spec = json_object();
  if (!root || !spec || json_object_set_new(root, "spec", spec) != 0) {
    if (!root)
      json_decref(spec);
    goto done;
  }
  if (json_object_set_new(root, "apiVersion", json_string(e->api_version)) != 0 ||
      json_object_set_new(root, "kind", json_string("ExecCredential")) != 0 ||
      json_object_set_new(spec, "interactive", json_false()) != 0)
    goto done;
  if (e->provide_cluster_info) {
    cluster = json_object();
    if (!cluster || json_object_set_new(spec, "cluster", cluster) != 0)
      goto done;
    if (json_object_set_new(cluster, "server", json_string(cfg->server)) != 0)
      goto done;
    if (cfg->tls_server_name &&
        json_object_set_new(cluster, "tls-server-name", json_string(cfg->tls_server_name)) != 0)
      goto done;
    if (cfg->insecure && json_object_set_new(cluster, "insecure-skip-tls-verify", json_true()) != 0)
      goto done;
    if (cfg->ca) {
      if (kcr_base64_encode(cfg->ca, cfg->ca_len, &ca64, NULL) < 0)
        goto done;
      if (json_object_set_new(cluster, "certificate-authority-data", json_string(ca64)) != 0)
        goto done;
    }
    if (cfg->proxy_url &&
        json_object_set_new(cluster, "proxy-url", json_string(cfg->proxy_url)) != 0)
      goto done;
    if (cl->disable_compression &&
        json_object_set_new(cluster, "disable-compression", json_true()) != 0)
      goto done;
    if (cl->exec_extension && json_object_set(cluster, "config", cl->exec_extension) != 0)
      goto done;
  }
  *out = json_dumps(root, JSON_COMPACT);
  if (*out)
    rc = 0;
done:
  kcr__free(ca64);
  json_decref(root);
  return rc;
}

static int build_exec(const kcr__kc_exec_t *e, const kcr__kc_cluster_t *cl,
                      const kcr_rest_config_t *cfg, const kcr_config_options *opts,
                      kcr__exec_spec_t **out) {
  kcr__exec_spec_t *s = kcr__calloc(1, sizeof(*s));
  size_t n = 0;
  char *info = NULL;
  *out = NULL;
  if (!s)
    return KCR_ENOMEM;
  s->timeout_ns = KCR__EXEC_TIMEOUT_NS;
  s->max_stdout = KCR__EXEC_MAX_STDOUT;
  s->argv = kcr__calloc(e->nargs + 2, sizeof(char *));
  if (!s->argv || dup_opt(e->command, &s->command) < 0 || !(s->argv[0] = kcr__strdup(e->command)))
    goto oom;
  for (n = 0; n < e->nargs; n++)
    if (!(s->argv[n + 1] = kcr__strdup(e->args[n])))
      goto oom;
  if (strv_copy(e->env, &s->env) < 0 ||
      (opts && opts->env && strv_copy(opts->env, &s->base_env) < 0))
    goto oom;
  if (dup_opt(e->api_version, &s->api_version) < 0 ||
      dup_opt(e->install_hint, &s->install_hint) < 0)
    goto oom;
  if (exec_info(e, cl, cfg, &info) < 0)
    goto oom;
  /* json_dumps memory came from jansson's allocator, which kcr shares. */
  s->exec_info = info;
  *out = s;
  return 0;
oom:
  kcr__exec_spec_free(s);
  return KCR_ENOMEM;
}

/* ---- kubeconfig -> rest config ---- */

/* kcfail formats "kubeconfig FILE line N: FIELD: what". */
static int kcfail(kcr_error_t *err, int code, const char *file, int line, const char *fmt, ...)
    KCR_PRINTF(5, 6);
static int kcfail(kcr_error_t *err, int code, const char *file, int line, const char *fmt, ...) {
  char what[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  if (line > 0)
    return kcr_error_set(err, code, "kubeconfig %s line %d: %s", file, line, what);
  return kcr_error_set(err, code, "kubeconfig %s: %s", file, what);
}

/* validate_user makes client-go's ConfirmUsable checks of the chosen user. */
static int validate_user(const kcr__kc_user_t *u, kcr_error_t *err) {
  const char *f = u->file;
  int l = u->line;
  const char *n = u->name;
  if (u->auth_provider)
    return kcfail(err, KCR_ENOTSUP, f, l,
                  "users[%s].user.auth-provider: auth-provider is not supported; use an exec "
                  "plugin",
                  n);
  if (u->client_cert_file && u->client_cert_data)
    return kcfail(err, KCR_ECONFIG, f, l,
                  "users[%s].user: client-certificate and client-certificate-data are both set", n);
  if (u->client_key_file && u->client_key_data)
    return kcfail(err, KCR_ECONFIG, f, l,
                  "users[%s].user: client-key and client-key-data are both set", n);
  if ((u->client_cert_file || u->client_cert_data) && !u->client_key_file && !u->client_key_data)
    return kcfail(err, KCR_ECONFIG, f, l,
                  "users[%s].user: client-certificate is set but client-key(-data) is missing", n);
  if ((u->client_key_file || u->client_key_data) && !u->client_cert_file && !u->client_cert_data)
    return kcfail(err, KCR_ECONFIG, f, l,
                  "users[%s].user: client-key is set but client-certificate(-data) is missing", n);
  if (u->token && *u->token && ((u->username && *u->username) || (u->password && *u->password)))
    return kcfail(err, KCR_ECONFIG, f, l,
                  "users[%s].user: more than one authentication method (token and "
                  "username/password); only one is allowed",
                  n);
  if ((!u->as || !*u->as) && (u->as_uid || u->nas_groups || u->nas_extra))
    return kcfail(err, KCR_ECONFIG, f, l,
                  "users[%s].user: as-uid, as-groups or as-user-extra set without as", n);
  if (u->exec) {
    const kcr__kc_exec_t *e = u->exec;
    const char *mode = e->interactive_mode;
    if (!e->command || !*e->command)
      return kcfail(err, KCR_ECONFIG, f, l, "users[%s].user.exec.command: missing", n);
    if (!e->api_version || !*e->api_version)
      return kcfail(err, KCR_ECONFIG, f, l, "users[%s].user.exec.apiVersion: missing", n);
    if (strcmp(e->api_version, EXEC_API_V1) != 0 && strcmp(e->api_version, EXEC_API_V1BETA1) != 0)
      return kcfail(err, KCR_ECONFIG, f, l,
                    "users[%s].user.exec.apiVersion: not supported (use %s or %s)", n, EXEC_API_V1,
                    EXEC_API_V1BETA1);
    if ((!mode || !*mode) && strcmp(e->api_version, EXEC_API_V1BETA1) == 0)
      mode = "IfAvailable";
    if (!mode || !*mode)
      return kcfail(err, KCR_ECONFIG, f, l, "users[%s].user.exec.interactiveMode: missing", n);
    if (strcmp(mode, "Always") == 0)
      return kcfail(err, KCR_ECONFIG, f, l,
                    "users[%s].user.exec.interactiveMode: Always needs a terminal, and kcr runs "
                    "exec plugins without one",
                    n);
    if (strcmp(mode, "Never") != 0 && strcmp(mode, "IfAvailable") != 0)
      return kcfail(err, KCR_ECONFIG, f, l, "users[%s].user.exec.interactiveMode: invalid value",
                    n);
  }
  return 0;
}

static int validate_cluster(const kcr__kc_cluster_t *cl, kcr_error_t *err) {
  const char *f = cl->file;
  int l = cl->line;
  const char *n = cl->name;
  if (!cl->server || !*cl->server)
    return kcfail(err, KCR_ECONFIG, f, l, "clusters[%s].cluster.server: missing", n);
  if (cl->ca_file && cl->ca_data)
    return kcfail(err, KCR_ECONFIG, f, l,
                  "clusters[%s].cluster: certificate-authority and certificate-authority-data are "
                  "both set",
                  n);
  if (cl->insecure && (cl->ca_file || cl->ca_data))
    return kcfail(err, KCR_ECONFIG, f, l,
                  "clusters[%s].cluster: a certificate authority together with "
                  "insecure-skip-tls-verify is not allowed",
                  n);
  if (cl->proxy_url && *cl->proxy_url && strncmp(cl->proxy_url, "http://", 7) != 0 &&
      strncmp(cl->proxy_url, "https://", 8) != 0 && strncmp(cl->proxy_url, "socks5://", 9) != 0)
    return kcfail(err, KCR_ECONFIG, f, l,
                  "clusters[%s].cluster.proxy-url: scheme must be http, https or socks5", n);
  return 0;
}

/* read_pem reads a PEM file named by a kubeconfig field, naming both on error. */
static int read_pem(const char *path, const char *field, unsigned char **out, size_t *len,
                    kcr_error_t *err) {
  char *buf = NULL;
  int rc = kcr__read_file(path, KCR__PEM_FILE_MAX_BYTES, field, &buf, len, err);
  *out = (unsigned char *)buf;
  return rc;
}

static int build_from_kubeconfig(const kcr__kubeconfig_t *kc, const char *context,
                                 const kcr_config_options *opts, kcr_rest_config_t **out,
                                 kcr_error_t *err) {
  const kcr__kc_context_t *x;
  const kcr__kc_cluster_t *cl;
  const kcr__kc_user_t *u;
  kcr__kc_user_t anonymous = {0};
  char no_name[] = "";
  kcr_rest_config_t *cfg = NULL;
  kcr__creds_t *cr;
  char files[512];
  const char *name = context && *context ? context : kc->current_context;
  int rc;

  *out = NULL;
  files_desc(kc, files, sizeof(files));
  if (!name || !*name)
    return kcr_error_set(err, KCR_ECONFIG,
                         "kubeconfig %s: no context chosen: current-context is not set", files);
  x = kcr__kubeconfig_find_context(kc, name);
  if (!x) {
    if (context && *context)
      return kcr_error_set(err, KCR_ECONFIG, "kubeconfig %s: context \"%s\" not found", files,
                           name);
    return kcfail(err, KCR_ECONFIG, kc->current_context_file, 0,
                  "current-context: context \"%s\" not found", name);
  }
  if (!x->cluster || !*x->cluster)
    return kcfail(err, KCR_ECONFIG, x->file, x->line, "contexts[%s].context.cluster: missing",
                  x->name);
  cl = kcr__kubeconfig_find_cluster(kc, x->cluster);
  if (!cl)
    return kcfail(err, KCR_ECONFIG, x->file, x->line,
                  "contexts[%s].context.cluster: cluster \"%s\" not found", x->name, x->cluster);
  /* No user, or one the file does not define: no credentials, as client-go's
   * getAuthInfo (a user is required only when named by an override). */
  u = x->user && *x->user ? kcr__kubeconfig_find_user(kc, x->user) : NULL;
  if (!u) {
    if (x->user && *x->user)
      kcr_log(KCR_LOG_WARN, "config",
              "kubeconfig %s: context \"%s\" names user \"%s\", which is not defined: "
              "connecting without credentials",
              x->file, x->name, x->user);
    anonymous.name = no_name;
    anonymous.file = x->file;
    anonymous.line = x->line;
    u = &anonymous;
  }
  if (x->namespace && *x->namespace && !is_dns1123_label(x->namespace))
    return kcfail(err, KCR_ECONFIG, x->file, x->line,
                  "contexts[%s].context.namespace: not a valid namespace name (a DNS-1123 "
                  "label: at most 63 characters of [a-z0-9-], alphanumeric at both ends)",
                  x->name);
  if ((rc = validate_cluster(cl, err)) < 0 || (rc = validate_user(u, err)) < 0)
    return rc;

  if ((rc = config_alloc(&cfg, err)) < 0)
    return rc;
  cr = &cfg->creds;
  if (dup_opt(x->file, &cfg->source) < 0 ||
      dup_opt(x->namespace && *x->namespace ? x->namespace : "default", &cfg->namespace) < 0 ||
      dup_opt(cl->tls_server_name && *cl->tls_server_name ? cl->tls_server_name : NULL,
              &cfg->tls_server_name) < 0 ||
      dup_opt(cl->proxy_url && *cl->proxy_url ? cl->proxy_url : NULL, &cfg->proxy_url) < 0 ||
      dup_opt(u->as && *u->as ? u->as : NULL, &cfg->imp_user) < 0 ||
      dup_opt(u->as_uid && *u->as_uid ? u->as_uid : NULL, &cfg->imp_uid) < 0 ||
      strv_copy(u->as_groups, &cfg->imp_groups) < 0 || strv_copy(u->as_extra, &cfg->imp_extra) < 0)
    goto oom;
  if (kcr__proxy_env_read(opts ? opts->env : NULL, &cfg->proxy_env) < 0)
    goto oom;
  cfg->insecure = cl->insecure;
  if (normalize_server(cl->server,
                       cl->ca_file || cl->ca_data || u->client_cert_file || u->client_cert_data ||
                           cl->insecure,
                       &cfg->server) < 0)
    goto oom;

  /* The CA bundle: -data wins (they cannot both be set, see validate_cluster). */
  if (cl->ca_data) {
    if (dup_bytes(cl->ca_data, cl->ca_data_len, &cfg->ca) < 0)
      goto oom;
    cfg->ca_len = cl->ca_data_len;
  } else if (cl->ca_file && *cl->ca_file) {
    rc = read_pem(cl->ca_file, "certificate-authority", &cfg->ca, &cfg->ca_len, err);
    if (rc < 0) {
      kcr_error_prefix(err, "kubeconfig %s line %d: clusters[%s].cluster.certificate-authority: ",
                       cl->file, cl->line, cl->name);
      goto fail;
    }
  }

  /* Static credentials. */
  if (dup_opt(u->token && *u->token ? u->token : NULL, &cr->static_token) < 0 ||
      dup_opt(u->username && *u->username ? u->username : NULL, &cr->username) < 0 ||
      dup_opt(u->password && *u->password ? u->password : NULL, &cr->password) < 0 ||
      dup_opt(u->token_file && *u->token_file ? u->token_file : NULL, &cr->token_file) < 0)
    goto oom;
  if (u->client_cert_data) {
    if (dup_bytes(u->client_cert_data, u->client_cert_data_len, &cr->static_cert) < 0)
      goto oom;
    cr->static_cert_len = u->client_cert_data_len;
  } else if (u->client_cert_file) {
    rc = read_pem(u->client_cert_file, "client-certificate", &cr->static_cert, &cr->static_cert_len,
                  err);
    if (rc < 0) {
      kcr_error_prefix(err, "kubeconfig %s line %d: users[%s].user.client-certificate: ", u->file,
                       u->line, u->name);
      goto fail;
    }
  }
  if (u->client_key_data) {
    if (dup_bytes(u->client_key_data, u->client_key_data_len, &cr->static_key) < 0)
      goto oom;
    cr->static_key_len = u->client_key_data_len;
  } else if (u->client_key_file) {
    rc = read_pem(u->client_key_file, "client-key", &cr->static_key, &cr->static_key_len, err);
    if (rc < 0) {
      kcr_error_prefix(err, "kubeconfig %s line %d: users[%s].user.client-key: ", u->file, u->line,
                       u->name);
      goto fail;
    }
  }
  if (u->exec && build_exec(u->exec, cl, cfg, opts, &cr->exec) < 0)
    goto oom;
  /* TLS files to re-read (client-go's ReloadTLSFiles: certificate and key both
   * files; ReloadCAFiles: a CA file, not data) and the CA in force. */
  if ((u->client_cert_file && u->client_key_file && !u->client_cert_data && !u->client_key_data &&
       (dup_opt(u->client_cert_file, &cr->cert_file) < 0 ||
        dup_opt(u->client_key_file, &cr->key_file) < 0)) ||
      (cl->ca_file && *cl->ca_file && !cl->ca_data && dup_opt(cl->ca_file, &cr->ca_file) < 0) ||
      (cfg->ca && dup_bytes(cfg->ca, cfg->ca_len, &cr->ca) < 0))
    goto oom;
  cr->ca_len = cfg->ca ? cfg->ca_len : 0;
  kcr__creds_prime_tls(cr);
  if (cr->token_file) {
    rc = kcr__creds_prime(cr, err);
    if (rc < 0) {
      kcr_error_prefix(err, "kubeconfig %s line %d: users[%s].user.tokenFile: ", u->file, u->line,
                       u->name);
      goto fail;
    }
  }
  if (cfg->insecure)
    kcr_log(KCR_LOG_WARN, "config",
            "insecure-skip-tls-verify is set for cluster \"%s\" (kubeconfig %s): the API "
            "server's certificate will NOT be verified",
            cl->name, cl->file);
  *out = cfg;
  return 0;

oom:
  rc = kcr_error_set(err, KCR_ENOMEM, "out of memory loading kubeconfig");
fail:
  kcr_rest_config_unref(cfg);
  return rc;
}

/* copy_err copies a local error into the caller's (first error wins). */
static void copy_err(kcr_error_t *dst, const kcr_error_t *src) {
  if (dst && dst->code == 0)
    *dst = *src;
}

/* home_dir finds $HOME, else the password database's entry, as controller-runtime. */
static int home_config(char *const *env, char **out) {
  const char *home = kcr__env_get(env, "HOME");
  struct passwd pw, *res = NULL;
  char pwbuf[4096];
  size_t hl;
  static const char suffix[] = "/.kube/config";
  *out = NULL;
  if (!home || !*home) {
    if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &res) != 0 || !res || !res->pw_dir)
      return KCR_ENOENT;
    home = res->pw_dir;
  }
  hl = strlen(home);
  *out = kcr__malloc(hl + sizeof(suffix));
  if (!*out)
    return KCR_ENOMEM;
  memcpy(*out, home, hl);
  memcpy(*out + hl, suffix, sizeof(suffix));
  return 0;
}

/* load_default_rules merges KUBECONFIG's files, else ~/.kube/config, into kc. */
static int load_default_rules(kcr__kubeconfig_t *kc, char *const *env, kcr_error_t *err) {
  const char *list = kcr__env_get(env, "KUBECONFIG");
  int rc = 0;
  if (list && *list) {
    const char *p = list;
    size_t read = 0;
    while (*p) {
      const char *colon = strchr(p, ':');
      size_t len = colon ? (size_t)(colon - p) : strlen(p);
      if (len > 0) {
        char *path = kcr__strndup(p, len);
        int dup = 0;
        kcr_error_t e = {0};
        if (!path)
          return kcr_error_set(err, KCR_ENOMEM, "out of memory");
        /* client-go deduplicates the list: a file listed twice is read once. */
        for (size_t i = 0; i < kc->nfiles; i++)
          if (strcmp(kc->files[i], path) == 0)
            dup = 1;
        if (!dup) {
          rc = kcr__kubeconfig_merge_file(kc, path, &e);
          if (rc == KCR_ENOENT) {
            /* missing files in KUBECONFIG are skipped, like client-go */
          } else if (rc < 0) {
            copy_err(err, &e);
            kcr__free(path);
            return rc;
          } else {
            read++;
          }
        }
        kcr__free(path);
      }
      p += len;
      if (*p == ':')
        p++;
    }
    if (read == 0)
      return kcr_error_set(err, KCR_ENOENT,
                           "no configuration found: none of the files in KUBECONFIG (%s) exists",
                           list);
    return 0;
  } else {
    char *path = NULL;
    kcr_error_t e = {0};
    rc = home_config(env, &path);
    if (rc == KCR_ENOMEM)
      return kcr_error_set(err, rc, "out of memory");
    if (rc < 0)
      return kcr_error_set(err, KCR_ENOENT,
                           "no configuration found: HOME is not set and KUBECONFIG is empty");
    rc = kcr__kubeconfig_merge_file(kc, path, &e);
    if (rc == KCR_ENOENT)
      rc = kcr_error_set(err, KCR_ENOENT,
                         "no configuration found: %s does not exist and KUBECONFIG is not set",
                         path);
    else if (rc < 0)
      copy_err(err, &e);
    kcr__free(path);
    return rc;
  }
}

int kcr_rest_config_from_kubeconfig(const char *path, const char *context,
                                    const kcr_config_options *opts, kcr_rest_config_t **out,
                                    kcr_error_t *err) {
  kcr__kubeconfig_t *kc = NULL;
  char *const *env = opts ? opts->env : NULL;
  int rc;

  if (!out)
    return kcr_error_set(err, KCR_EINVAL, "out is NULL");
  *out = NULL;
  if (!context && opts)
    context = opts->context;
  if ((rc = kcr__kubeconfig_create(&kc, err)) < 0)
    return rc;
  if (path)
    rc = kcr__kubeconfig_merge_file(kc, path, err);
  else
    rc = load_default_rules(kc, env, err);
  if (rc == 0)
    rc = build_from_kubeconfig(kc, context, opts, out, err);
  kcr__kubeconfig_destroy(kc);
  return rc;
}

/* ---- in-cluster ---- */

static int join_path(const char *dir, const char *name, char **out) {
  size_t dl = strlen(dir), nl = strlen(name);
  *out = kcr__malloc(dl + 1 + nl + 1);
  if (!*out)
    return KCR_ENOMEM;
  memcpy(*out, dir, dl);
  (*out)[dl] = '/';
  memcpy(*out + dl + 1, name, nl + 1);
  return 0;
}

int kcr_service_account_namespace(const char *dir, char *buf, size_t size, kcr_error_t *err) {
  char *path = NULL, *text = NULL;
  size_t n;
  int rc;

  if (size)
    buf[0] = '\0';
  if (join_path(dir ? dir : KCR_SERVICE_ACCOUNT_DIR, "namespace", &path) < 0)
    return kcr_error_set(err, KCR_ENOMEM, "out of memory reading the service-account namespace");
  rc = kcr__read_file(path, KCR__SMALL_FILE_MAX_BYTES, "service-account namespace", &text, NULL,
                      err);
  if (rc < 0)
    goto out;
  trim_space(text);
  n = strlen(text);
  if (n == 0)
    rc = kcr_error_set(err, KCR_ECONFIG, "service-account namespace %s: the file is blank", path);
  else if (n >= size)
    rc = kcr_error_set(err, KCR_ETOOBIG, "service-account namespace %s: longer than %zu bytes",
                       path, size ? size - 1 : 0);
  else
    memcpy(buf, text, n + 1);
out:
  kcr__free(text);
  kcr__free(path);
  return rc;
}

int kcr_rest_config_in_cluster(const kcr_config_options *opts, kcr_rest_config_t **out,
                               kcr_error_t *err) {
  char *const *env = opts ? opts->env : NULL;
  const char *sa_dir = opts && opts->sa_dir ? opts->sa_dir : KCR_SERVICE_ACCOUNT_DIR;
  const char *host = kcr__env_get(env, "KUBERNETES_SERVICE_HOST");
  const char *port = kcr__env_get(env, "KUBERNETES_SERVICE_PORT");
  const char *pod_ns = kcr__env_get(env, "POD_NAMESPACE");
  kcr_rest_config_t *cfg = NULL;
  char *ca_path = NULL;
  int rc, v6;
  size_t need;

  if (!out)
    return kcr_error_set(err, KCR_EINVAL, "out is NULL");
  *out = NULL;
  if (!host || !*host || !port || !*port)
    return kcr_error_set(err, KCR_ENOENT,
                         "not running in a cluster: KUBERNETES_SERVICE_HOST and "
                         "KUBERNETES_SERVICE_PORT must be set");
  if ((rc = config_alloc(&cfg, err)) < 0)
    return rc;
  v6 = strchr(host, ':') != NULL;
  need = strlen("https://") + strlen(host) + 2 + 1 + strlen(port) + 1;
  cfg->server = kcr__malloc(need);
  if (!cfg->server)
    goto oom;
  snprintf(cfg->server, need, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
  if (dup_opt("in-cluster", &cfg->source) < 0 ||
      !(cfg->imp_groups = kcr__calloc(1, sizeof(char *))) ||
      !(cfg->imp_extra = kcr__calloc(1, sizeof(char *))))
    goto oom;
  if (join_path(sa_dir, "token", &cfg->creds.token_file) < 0 ||
      join_path(sa_dir, "ca.crt", &ca_path) < 0 || kcr__proxy_env_read(env, &cfg->proxy_env) < 0)
    goto oom;

  rc = kcr__creds_prime(&cfg->creds, err);
  if (rc < 0) {
    kcr_error_prefix(err, "in-cluster config: ");
    goto fail;
  }
  {
    kcr_error_t e = {0};
    char *ca = NULL;
    rc = kcr__read_file(ca_path, KCR__PEM_FILE_MAX_BYTES, "service-account CA", &ca, &cfg->ca_len,
                        &e);
    if (rc == KCR_ENOMEM)
      goto oom;
    if (rc < 0) {
      /* rest.InClusterConfig logs this and goes on with the system roots. */
      kcr_log(KCR_LOG_WARN, "config", "in-cluster config: %s; using the system CA roots",
              e.message);
      cfg->ca_len = 0;
    }
    cfg->ca = (unsigned char *)ca;
  }
  /* rest.InClusterConfig names ca.crt as the CAFile when it could read it:
   * then it is re-read as a kubeconfig's certificate-authority. */
  if (cfg->ca && (dup_opt(ca_path, &cfg->creds.ca_file) < 0 ||
                  dup_bytes(cfg->ca, cfg->ca_len, &cfg->creds.ca) < 0))
    goto oom;
  cfg->creds.ca_len = cfg->ca ? cfg->ca_len : 0;
  kcr__creds_prime_tls(&cfg->creds);
  if (pod_ns && *pod_ns) {
    if (dup_opt(pod_ns, &cfg->namespace) < 0)
      goto oom;
  } else {
    char nsbuf[KCR__NAMESPACE_BUFSIZE];
    /* rest.InClusterConfig: a missing or blank file means "default". */
    rc = kcr_service_account_namespace(sa_dir, nsbuf, sizeof(nsbuf), NULL);
    if (rc == KCR_ENOMEM)
      goto oom;
    if (rc == 0 && dup_opt(nsbuf, &cfg->namespace) < 0)
      goto oom;
  }
  if (!cfg->namespace && dup_opt("default", &cfg->namespace) < 0)
    goto oom;
  kcr__free(ca_path);
  *out = cfg;
  return 0;

oom:
  rc = kcr_error_set(err, KCR_ENOMEM, "out of memory loading in-cluster config");
fail:
  kcr__free(ca_path);
  kcr_rest_config_unref(cfg);
  return rc;
}

/* ---- precedence ---- */

int kcr_rest_config_load(const kcr_config_options *opts, kcr_rest_config_t **out,
                         kcr_error_t *err) {
  char *const *env = opts ? opts->env : NULL;
  const char *kubeconfig_env = kcr__env_get(env, "KUBECONFIG");
  const char *host = kcr__env_get(env, "KUBERNETES_SERVICE_HOST");
  const char *port = kcr__env_get(env, "KUBERNETES_SERVICE_PORT");
  kcr_error_t in_err = {0};
  int rc, in_rc = 0;

  if (!out)
    return kcr_error_set(err, KCR_EINVAL, "out is NULL");
  *out = NULL;
  if (opts && opts->kubeconfig && *opts->kubeconfig)
    return kcr_rest_config_from_kubeconfig(opts->kubeconfig, opts->context, opts, out, err);
  if ((!kubeconfig_env || !*kubeconfig_env) && host && *host && port && *port) {
    in_rc = kcr_rest_config_in_cluster(opts, out, &in_err);
    if (in_rc == 0)
      return 0;
    if (in_rc == KCR_ENOMEM)
      return kcr_error_set(err, KCR_ENOMEM, "out of memory");
    kcr_log(KCR_LOG_WARN, "config", "unable to load in-cluster config: %s", in_err.message);
  }
  {
    kcr_error_t e = {0};
    rc = kcr_rest_config_from_kubeconfig(NULL, opts ? opts->context : NULL, opts, out, &e);
    /* Nothing else found: the in-cluster failure is the more useful message. */
    if (rc == KCR_ENOENT && in_rc < 0)
      copy_err(err, &in_err);
    else if (rc < 0)
      copy_err(err, &e);
    return rc == KCR_ENOENT && in_rc < 0 ? in_rc : rc;
  }
}

/* ---- test hooks ---- */

int kcr_rest_config_credentials(kcr_rest_config_t *cfg, kcr_credentials *out, kcr_error_t *err) {
  if (!out)
    return kcr_error_set(err, KCR_EINVAL, "out is NULL");
  memset(out, 0, sizeof(*out));
  if (!cfg)
    return kcr_error_set(err, KCR_EINVAL, "cfg is NULL");
  return kcr__creds_get(&cfg->creds, out, err);
}

int kcr_rest_config_credentials_fresh(kcr_rest_config_t *cfg, uint64_t generation) {
  return kcr__creds_fresh(&cfg->creds, generation);
}

void kcr_rest_config_credentials_rejected(kcr_rest_config_t *cfg, uint64_t generation) {
  kcr__creds_rejected(&cfg->creds, generation);
}

/* ---- test hooks ---- */

void kcr__rest_config_set_clock(kcr_rest_config_t *cfg, kcr_clock_t *clock) {
  kcr__creds_set_clock(&cfg->creds, clock);
}

void kcr__rest_config_set_token_period(kcr_rest_config_t *cfg, int64_t ns) {
  kcr__creds_set_token_period(&cfg->creds, ns);
}

void kcr__rest_config_set_tls_period(kcr_rest_config_t *cfg, int64_t ns) {
  kcr__creds_set_tls_period(&cfg->creds, ns);
}

void kcr__rest_config_set_exec_limits(kcr_rest_config_t *cfg, int64_t timeout_ns,
                                      size_t max_stdout) {
  if (!cfg->creds.exec)
    return;
  if (timeout_ns > 0)
    cfg->creds.exec->timeout_ns = timeout_ns;
  if (max_stdout > 0)
    cfg->creds.exec->max_stdout = max_stdout;
}
