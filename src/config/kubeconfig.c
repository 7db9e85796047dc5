/* SPDX-License-Identifier: MIT */
/*
 * kubeconfig.c: reading kubeconfig files (libyaml's document API) and merging
 * them the way client-go's clientcmd loader does.
 *
 * Design: each file is parsed whole into a temporary kcr__kubeconfig_t, then
 * merged: a named cluster, user or context already present is kept (the first
 * file that sets a map entry wins it whole, never field by field), and
 * current-context is taken from the first file that sets it. Relative paths
 * (certificate-authority, client-certificate, client-key, tokenFile, and an exec
 * command containing '/') are resolved against the directory of the file being
 * parsed, before merging, so each keeps its origin. Every error names the file,
 * the line (libyaml's mark, 1-based) and the field path
 * ("users[alice].user.client-key-data"), and never quotes a value other than
 * the names of entries and the paths they point to: a kubeconfig is full of
 * secrets (docs/config.md, "Validation"). The YAML document's scalars and the file text are wiped
 * before they are freed. Parse-time checks are those client-go's decoder makes for
 * every entry (types, base64, duplicate names); the checks client-go's
 * ConfirmUsable makes only for the chosen context live in config.c.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "config/kubeconfig.h"
#include "kcr/base64.h"
#include "util/alloc.h"
#include "util/file.h"

#define MAX_JSON_DEPTH 32
#define MAX_JSON_NODES 10000
#define FIELD_MAX 192

/* parse_ctx: one file being parsed. */
typedef struct parse_ctx {
  yaml_document_t *doc;
  const char *file; /* for messages, borrowed from the merged kubeconfig */
  const char *dir;  /* relative paths resolve here; NULL: leave them */
  kcr__kubeconfig_t *out;
  kcr_error_t *err;
  int json_nodes;
} parse_ctx;

static int line_of(const yaml_node_t *n) {
  return n ? (int)n->start_mark.line + 1 : 0;
}

/* fail records "kubeconfig FILE line N: FIELD: what" and returns code. */
static int fail(parse_ctx *c, const yaml_node_t *n, int code, const char *field, const char *fmt,
                ...) KCR_PRINTF(5, 6);
static int fail(parse_ctx *c, const yaml_node_t *n, int code, const char *field, const char *fmt,
                ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  if (code == KCR_ENOMEM)
    kcr_error_set(c->err, code, "out of memory reading kubeconfig %s", c->file);
  else
    kcr_error_set(c->err, code, "kubeconfig %s line %d: %s: %s", c->file, line_of(n), field, what);
  return code;
}

static int oom(parse_ctx *c) {
  kcr_error_set(c->err, KCR_ENOMEM, "out of memory reading kubeconfig %s", c->file);
  return KCR_ENOMEM;
}

static yaml_node_t *node(parse_ctx *c, int idx) {
  return yaml_document_get_node(c->doc, idx);
}

static int scalar_is(const yaml_node_t *n, const char *s) {
  size_t len = strlen(s);
  return n && n->type == YAML_SCALAR_NODE && n->data.scalar.length == len &&
         memcmp(n->data.scalar.value, s, len) == 0;
}

static int is_null(const yaml_node_t *n) {
  if (!n)
    return 1;
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return 0;
  return n->data.scalar.length == 0 || scalar_is(n, "~") || scalar_is(n, "null") ||
         scalar_is(n, "Null") || scalar_is(n, "NULL");
}

/* get_str sets *out to a copy of a scalar; null leaves it unset. */
static int get_str(parse_ctx *c, const yaml_node_t *n, const char *field, char **out) {
  char *s;
  if (!n || is_null(n))
    return 0;
  if (n->type != YAML_SCALAR_NODE)
    return fail(c, n, KCR_ECONFIG, field, "expected a string");
  if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
    return fail(c, n, KCR_ECONFIG, field, "contains a NUL character");
  s = kcr__strndup((const char *)n->data.scalar.value, n->data.scalar.length);
  if (!s)
    return oom(c);
  kcr__wipe_free_str(*out);
  *out = s;
  return 0;
}

/* bool_value recognises YAML 1.1 booleans (what sigs.k8s.io/yaml accepts). */
static int bool_value(const yaml_node_t *n, int *out) {
  static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char *const no[] = {"false", "False", "FALSE", "no", "No",
                                   "NO",    "off",   "Off",   "OFF"};
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return 0;
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
    if (scalar_is(n, yes[i])) {
      *out = 1;
      return 1;
    }
    if (scalar_is(n, no[i])) {
      *out = 0;
      return 1;
    }
  }
  return 0;
}

static int get_bool(parse_ctx *c, const yaml_node_t *n, const char *field, int *out) {
  if (!n || is_null(n)) {
    *out = 0;
    return 0;
  }
  if (bool_value(n, out))
    return 0;
  return fail(c, n, KCR_ECONFIG, field, "expected true or false");
}

static int get_base64(parse_ctx *c, const yaml_node_t *n, const char *field, unsigned char **out,
                      size_t *len) {
  unsigned char *p = NULL;
  size_t plen = 0;
  int rc;
  if (!n || is_null(n))
    return 0;
  if (n->type != YAML_SCALAR_NODE)
    return fail(c, n, KCR_ECONFIG, field, "expected a base64 string");
  rc =
      kcr_base64_decode((const char *)n->data.scalar.value, n->data.scalar.length, &p, &plen, NULL);
  if (rc == KCR_ENOMEM)
    return oom(c);
  if (rc < 0)
    return fail(c, n, KCR_ECONFIG, field, "not valid base64");
  if (*out)
    kcr__wipe_free(*out, *len);
  *out = p;
  *len = plen;
  return 0;
}

/* get_strv reads a list of strings into a NULL-terminated vector. */
static int get_strv(parse_ctx *c, const yaml_node_t *n, const char *field, char ***out,
                    size_t *count) {
  size_t cap, i = 0;
  char **v;
  if (!n || is_null(n))
    return 0;
  if (n->type != YAML_SEQUENCE_NODE)
    return fail(c, n, KCR_ECONFIG, field, "expected a list of strings");
  cap = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
  v = kcr__calloc(cap + 1, sizeof(char *));
  if (!v)
    return oom(c);
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
    yaml_node_t *item = node(c, *it);
    char *s = NULL;
    int rc;
    if (!item || is_null(item))
      continue;
    rc = get_str(c, item, field, &s);
    if (rc < 0) {
      kcr__strv_free(v);
      return rc;
    }
    v[i++] = s;
  }
  kcr__strv_free(*out);
  *out = v;
  *count = i;
  return 0;
}

/* resolve makes a relative path absolute against the file's directory. */
static int resolve(parse_ctx *c, char **path) {
  size_t dl, pl;
  char *p;
  if (!*path || !**path || (*path)[0] == '/' || !c->dir)
    return 0;
  dl = strlen(c->dir);
  pl = strlen(*path);
  p = kcr__malloc(dl + 1 + pl + 1);
  if (!p)
    return oom(c);
  memcpy(p, c->dir, dl);
  p[dl] = '/';
  memcpy(p + dl + 1, *path, pl + 1);
  kcr__free(*path);
  *path = p;
  return 0;
}

/* yaml_to_json converts an extension's YAML to JSON, bounded in depth and size. */
static int yaml_to_json(parse_ctx *c, const yaml_node_t *n, const char *field, int depth,
                        json_t **out) {
  json_t *j = NULL;
  *out = NULL;
  if (depth > MAX_JSON_DEPTH || ++c->json_nodes > MAX_JSON_NODES)
    return fail(c, n, KCR_ECONFIG, field, "nested too deeply or too large");
  if (!n || is_null(n)) {
    j = json_null();
  } else if (n->type == YAML_SCALAR_NODE) {
    const char *s = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    int b;
    if (bool_value(n, &b)) {
      j = json_boolean(b);
    } else {
      char *end;
      long long ll;
      if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && len > 0 && len < 32) {
        char tmp[32];
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        ll = strtoll(tmp, &end, 10);
        if (*end == '\0')
          j = json_integer(ll);
        else {
          double d = strtod(tmp, &end);
          if (*end == '\0')
            j = json_real(d);
        }
        if (j)
          goto done;
      }
      j = json_stringn(s, len);
    }
  } else if (n->type == YAML_SEQUENCE_NODE) {
    j = json_array();
    if (!j)
      return oom(c);
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
      json_t *v;
      int rc = yaml_to_json(c, node(c, *it), field, depth + 1, &v);
      if (rc < 0) {
        json_decref(j);
        return rc;
      }
      if (json_array_append_new(j, v) != 0) {
        json_decref(j);
        return oom(c);
      }
    }
  } else if (n->type == YAML_MAPPING_NODE) {
    j = json_object();
    if (!j)
      return oom(c);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
      yaml_node_t *k = node(c, p->key);
      json_t *v;
      char *key = NULL;
      int rc;
      if (!k || k->type != YAML_SCALAR_NODE) {
        json_decref(j);
        return fail(c, k, KCR_ECONFIG, field, "mapping keys must be strings");
      }
      rc = yaml_to_json(c, node(c, p->value), field, depth + 1, &v);
      if (rc < 0) {
        json_decref(j);
        return rc;
      }
      key = kcr__strndup((const char *)k->data.scalar.value, k->data.scalar.length);
      if (!key || json_object_set_new(j, key, v) != 0) {
        if (!key)
          json_decref(v);
        kcr__free(key);
        json_decref(j);
        return oom(c);
      }
      kcr__free(key);
    }
  }
done:
  if (!j)
    return oom(c);
  *out = j;
  return 0;
}

/* ---- entries ---- */

static void cluster_free(kcr__kc_cluster_t *cl) {
  if (!cl)
    return;
  kcr__free(cl->name);
  kcr__free(cl->server);
  kcr__free(cl->ca_file);
  kcr__free(cl->ca_data);
  kcr__free(cl->tls_server_name);
  kcr__free(cl->proxy_url);
  json_decref(cl->exec_extension);
  kcr__free(cl);
}

static void exec_free(kcr__kc_exec_t *e) {
  if (!e)
    return;
  kcr__free(e->command);
  kcr__strv_free(e->args);
  kcr__strv_free(e->env);
  kcr__free(e->api_version);
  kcr__free(e->install_hint);
  kcr__free(e->interactive_mode);
  kcr__free(e);
}

static void user_free(kcr__kc_user_t *u) {
  if (!u)
    return;
  kcr__free(u->name);
  kcr__free(u->client_cert_file);
  kcr__wipe_free(u->client_cert_data, u->client_cert_data_len);
  kcr__free(u->client_key_file);
  kcr__wipe_free(u->client_key_data, u->client_key_data_len);
  kcr__wipe_free_str(u->token);
  kcr__free(u->token_file);
  kcr__wipe_free_str(u->username);
  kcr__wipe_free_str(u->password);
  kcr__free(u->as);
  kcr__free(u->as_uid);
  kcr__strv_free(u->as_groups);
  kcr__strv_free(u->as_extra);
  kcr__free(u->auth_provider);
  exec_free(u->exec);
  kcr__free(u);
}

static void context_free(kcr__kc_context_t *x) {
  if (!x)
    return;
  kcr__free(x->name);
  kcr__free(x->cluster);
  kcr__free(x->user);
  kcr__free(x->namespace);
  kcr__free(x);
}

/* push appends to an array whose capacity is the next power of two of n. */
static int push(void ***arr, size_t *n, void *item) {
  if (*n == 0 || (*n & (*n - 1)) == 0) {
    size_t cap = *n ? *n * 2 : 1;
    void **p = kcr__realloc(*arr, cap * sizeof(void *));
    if (!p)
      return KCR_ENOMEM;
    *arr = p;
  }
  (*arr)[(*n)++] = item;
  return 0;
}

int kcr__kubeconfig_create(kcr__kubeconfig_t **out, kcr_error_t *err) {
  *out = kcr__calloc(1, sizeof(**out));
  if (!*out)
    return kcr_error_set(err, KCR_ENOMEM, "out of memory");
  return 0;
}

/* entries_free frees the entries but not the file list (shared by tmp configs). */
static void entries_free(kcr__kubeconfig_t *kc) {
  for (size_t i = 0; i < kc->nclusters; i++)
    cluster_free(kc->clusters[i]);
  for (size_t i = 0; i < kc->nusers; i++)
    user_free(kc->users[i]);
  for (size_t i = 0; i < kc->ncontexts; i++)
    context_free(kc->contexts[i]);
  kcr__free(kc->clusters);
  kcr__free(kc->users);
  kcr__free(kc->contexts);
  kcr__free(kc->current_context);
  kc->clusters = NULL;
  kc->users = NULL;
  kc->contexts = NULL;
  kc->current_context = NULL;
  kc->nclusters = kc->nusers = kc->ncontexts = 0;
}

void kcr__kubeconfig_destroy(kcr__kubeconfig_t *kc) {
  if (!kc)
    return;
  entries_free(kc);
  for (size_t i = 0; i < kc->nfiles; i++)
    kcr__free(kc->files[i]);
  kcr__free(kc->files);
  kcr__free(kc);
}

kcr__kc_cluster_t *kcr__kubeconfig_find_cluster(const kcr__kubeconfig_t *kc, const char *name) {
  for (size_t i = 0; name && i < kc->nclusters; i++)
    if (strcmp(kc->clusters[i]->name, name) == 0)
      return kc->clusters[i];
  return NULL;
}

kcr__kc_user_t *kcr__kubeconfig_find_user(const kcr__kubeconfig_t *kc, const char *name) {
  for (size_t i = 0; name && i < kc->nusers; i++)
    if (strcmp(kc->users[i]->name, name) == 0)
      return kc->users[i];
  return NULL;
}

kcr__kc_context_t *kcr__kubeconfig_find_context(const kcr__kubeconfig_t *kc, const char *name) {
  for (size_t i = 0; name && i < kc->ncontexts; i++)
    if (strcmp(kc->contexts[i]->name, name) == 0)
      return kc->contexts[i];
  return NULL;
}

/* ---- parsing ---- */

/* FOR_PAIRS(c, n, pp, k, v) walks mapping n: pair pp, key node k, value node v. */
#define FOR_PAIRS(c, n, pp, k, v)                                                                  \
  for (yaml_node_pair_t *pp = (n)->data.mapping.pairs.start; pp < (n)->data.mapping.pairs.top;     \
       pp++)                                                                                       \
    for (yaml_node_t *k = node((c), pp->key), *v = node((c), pp->value); k; k = NULL)

/* field_name writes "base.key" into f, cut to fit. */
static void field_name(char *f, size_t size, const char *base, const yaml_node_t *k) {
  int klen = k->type == YAML_SCALAR_NODE ? (int)k->data.scalar.length : 0;
  const char *key = k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
  if (snprintf(f, size, "%s.%.*s", base, klen, key) >= (int)size)
    f[size - 1] = '\0';
}

static int expect_map(parse_ctx *c, const yaml_node_t *n, const char *field) {
  if (n->type != YAML_MAPPING_NODE)
    return fail(c, n, KCR_ECONFIG, field, "expected a mapping");
  return 0;
}

static int parse_cluster(parse_ctx *c, const yaml_node_t *n, const char *base,
                         kcr__kc_cluster_t *cl) {
  char f[FIELD_MAX];
  int rc = 0;
  if (!n || is_null(n))
    return 0;
  if ((rc = expect_map(c, n, base)) < 0)
    return rc;
  FOR_PAIRS(c, n, pp3, k, v) {
    field_name(f, sizeof(f), base, k);
    if (scalar_is(k, "server"))
      rc = get_str(c, v, f, &cl->server);
    else if (scalar_is(k, "certificate-authority"))
      rc = get_str(c, v, f, &cl->ca_file);
    else if (scalar_is(k, "certificate-authority-data"))
      rc = get_base64(c, v, f, &cl->ca_data, &cl->ca_data_len);
    else if (scalar_is(k, "tls-server-name"))
      rc = get_str(c, v, f, &cl->tls_server_name);
    else if (scalar_is(k, "proxy-url"))
      rc = get_str(c, v, f, &cl->proxy_url);
    else if (scalar_is(k, "insecure-skip-tls-verify"))
      rc = get_bool(c, v, f, &cl->insecure);
    else if (scalar_is(k, "disable-compression"))
      rc = get_bool(c, v, f, &cl->disable_compression);
    else if (scalar_is(k, "extensions") && v && !is_null(v)) {
      if (v->type != YAML_SEQUENCE_NODE)
        return fail(c, v, KCR_ECONFIG, f, "expected a list");
      for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
           it++) {
        yaml_node_t *e = node(c, *it);
        yaml_node_t *ext = NULL;
        int is_exec = 0;
        if ((rc = expect_map(c, e, f)) < 0)
          return rc;
        FOR_PAIRS(c, e, pp4, ek, ev) {
          if (scalar_is(ek, "name"))
            is_exec = scalar_is(ev, "client.authentication.k8s.io/exec");
          else if (scalar_is(ek, "extension"))
            ext = ev;
        }
        if (is_exec) {
          json_t *j;
          c->json_nodes = 0;
          if ((rc = yaml_to_json(c, ext, f, 0, &j)) < 0)
            return rc;
          json_decref(cl->exec_extension);
          cl->exec_extension = j;
        }
      }
    }
    if (rc < 0)
      return rc;
  }
  return resolve(c, &cl->ca_file);
}

static int parse_exec(parse_ctx *c, const yaml_node_t *n, const char *base, kcr__kc_exec_t *e) {
  char f[FIELD_MAX];
  int rc = 0;
  if ((rc = expect_map(c, n, base)) < 0)
    return rc;
  FOR_PAIRS(c, n, pp5, k, v) {
    field_name(f, sizeof(f), base, k);
    if (scalar_is(k, "command"))
      rc = get_str(c, v, f, &e->command);
    else if (scalar_is(k, "args"))
      rc = get_strv(c, v, f, &e->args, &e->nargs);
    else if (scalar_is(k, "apiVersion"))
      rc = get_str(c, v, f, &e->api_version);
    else if (scalar_is(k, "installHint"))
      rc = get_str(c, v, f, &e->install_hint);
    else if (scalar_is(k, "interactiveMode"))
      rc = get_str(c, v, f, &e->interactive_mode);
    else if (scalar_is(k, "provideClusterInfo"))
      rc = get_bool(c, v, f, &e->provide_cluster_info);
    else if (scalar_is(k, "env") && v && !is_null(v)) {
      size_t cap;
      if (v->type != YAML_SEQUENCE_NODE)
        return fail(c, v, KCR_ECONFIG, f, "expected a list of name/value pairs");
      cap = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
      kcr__strv_free(e->env);
      e->nenv = 0;
      e->env = kcr__calloc(cap + 1, sizeof(char *));
      if (!e->env)
        return oom(c);
      for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
           it++) {
        yaml_node_t *item = node(c, *it);
        char *name = NULL, *value = NULL, *entry;
        size_t nl, vl;
        if ((rc = expect_map(c, item, f)) < 0)
          return rc;
        FOR_PAIRS(c, item, pp6, ik, iv) {
          if (rc == 0 && scalar_is(ik, "name"))
            rc = get_str(c, iv, f, &name);
          else if (rc == 0 && scalar_is(ik, "value"))
            rc = get_str(c, iv, f, &value);
        }
        if (rc < 0 || !name || !*name || strchr(name, '=')) {
          if (rc >= 0)
            rc = fail(c, item, KCR_ECONFIG, f, "every entry needs a name without '='");
          kcr__free(name);
          kcr__wipe_free_str(value);
          return rc;
        }
        nl = strlen(name);
        vl = value ? strlen(value) : 0;
        entry = kcr__malloc(nl + 1 + vl + 1);
        if (entry) {
          memcpy(entry, name, nl);
          entry[nl] = '=';
          if (vl)
            memcpy(entry + nl + 1, value, vl);
          entry[nl + 1 + vl] = '\0';
        }
        kcr__free(name);
        kcr__wipe_free_str(value);
        if (!entry)
          return oom(c);
        e->env[e->nenv++] = entry;
      }
    }
    if (rc < 0)
      return rc;
  }
  if (!e->args) {
    e->args = kcr__calloc(1, sizeof(char *));
    if (!e->args)
      return oom(c);
  }
  if (!e->env) {
    e->env = kcr__calloc(1, sizeof(char *));
    if (!e->env)
      return oom(c);
  }
  /* client-go resolves the command only when it names a path, not a PATH lookup. */
  if (e->command && strchr(e->command, '/'))
    return resolve(c, &e->command);
  return 0;
}

static int parse_user(parse_ctx *c, const yaml_node_t *n, const char *base, kcr__kc_user_t *u) {
  char f[FIELD_MAX];
  int rc = 0;
  if (!n || is_null(n))
    goto done;
  if ((rc = expect_map(c, n, base)) < 0)
    return rc;
  FOR_PAIRS(c, n, pp7, k, v) {
    field_name(f, sizeof(f), base, k);
    if (scalar_is(k, "client-certificate"))
      rc = get_str(c, v, f, &u->client_cert_file);
    else if (scalar_is(k, "client-certificate-data"))
      rc = get_base64(c, v, f, &u->client_cert_data, &u->client_cert_data_len);
    else if (scalar_is(k, "client-key"))
      rc = get_str(c, v, f, &u->client_key_file);
    else if (scalar_is(k, "client-key-data"))
      rc = get_base64(c, v, f, &u->client_key_data, &u->client_key_data_len);
    else if (scalar_is(k, "token"))
      rc = get_str(c, v, f, &u->token);
    else if (scalar_is(k, "tokenFile"))
      rc = get_str(c, v, f, &u->token_file);
    else if (scalar_is(k, "username"))
      rc = get_str(c, v, f, &u->username);
    else if (scalar_is(k, "password"))
      rc = get_str(c, v, f, &u->password);
    else if (scalar_is(k, "as"))
      rc = get_str(c, v, f, &u->as);
    else if (scalar_is(k, "as-uid"))
      rc = get_str(c, v, f, &u->as_uid);
    else if (scalar_is(k, "as-groups"))
      rc = get_strv(c, v, f, &u->as_groups, &u->nas_groups);
    else if (scalar_is(k, "as-user-extra") && v && !is_null(v)) {
      size_t total = 0, i = 0;
      if ((rc = expect_map(c, v, f)) < 0)
        return rc;
      FOR_PAIRS(c, v, pp8, ek, ev) {
        (void)ek;
        if (ev && ev->type == YAML_SEQUENCE_NODE)
          total += (size_t)(ev->data.sequence.items.top - ev->data.sequence.items.start);
      }
      kcr__strv_free(u->as_extra);
      u->as_extra = kcr__calloc(2 * total + 1, sizeof(char *));
      if (!u->as_extra)
        return oom(c);
      FOR_PAIRS(c, v, pp9, ek, ev) {
        char **vals = NULL;
        size_t nvals = 0;
        char *key = NULL;
        if ((rc = get_str(c, ek, f, &key)) < 0)
          return rc;
        rc = get_strv(c, ev, f, &vals, &nvals);
        if (rc < 0 || !key) {
          kcr__free(key);
          kcr__strv_free(vals);
          if (rc < 0)
            return rc;
          continue;
        }
        for (size_t j = 0; j < nvals && rc == 0; j++) {
          u->as_extra[i] = kcr__strdup(key);
          if (!u->as_extra[i]) {
            rc = oom(c);
            break;
          }
          u->as_extra[i + 1] = vals[j];
          vals[j] = NULL;
          i += 2;
        }
        for (size_t j = 0; j < nvals; j++)
          kcr__free(vals[j]);
        kcr__free(vals);
        kcr__free(key);
        if (rc < 0)
          return rc;
      }
      u->nas_extra = i / 2;
    } else if (scalar_is(k, "auth-provider") && v && !is_null(v)) {
      char *name = NULL;
      if (v->type == YAML_MAPPING_NODE) {
        FOR_PAIRS(c, v, pp10, ak, av) {
          if (rc == 0 && scalar_is(ak, "name"))
            rc = get_str(c, av, f, &name);
        }
      }
      if (rc < 0) {
        kcr__free(name);
        return rc;
      }
      kcr__free(u->auth_provider);
      u->auth_provider = name ? name : kcr__strdup("");
      if (!u->auth_provider)
        return oom(c);
    } else if (scalar_is(k, "exec") && v && !is_null(v)) {
      exec_free(u->exec);
      u->exec = kcr__calloc(1, sizeof(*u->exec));
      if (!u->exec)
        return oom(c);
      rc = parse_exec(c, v, f, u->exec);
    }
    if (rc < 0)
      return rc;
  }
  if ((rc = resolve(c, &u->client_cert_file)) < 0 || (rc = resolve(c, &u->client_key_file)) < 0 ||
      (rc = resolve(c, &u->token_file)) < 0)
    return rc;
done:
  if (!u->as_groups && !(u->as_groups = kcr__calloc(1, sizeof(char *))))
    return oom(c);
  if (!u->as_extra && !(u->as_extra = kcr__calloc(1, sizeof(char *))))
    return oom(c);
  return 0;
}

static int parse_context(parse_ctx *c, const yaml_node_t *n, const char *base,
                         kcr__kc_context_t *x) {
  char f[FIELD_MAX];
  int rc = 0;
  if (!n || is_null(n))
    return 0;
  if ((rc = expect_map(c, n, base)) < 0)
    return rc;
  FOR_PAIRS(c, n, pp11, k, v) {
    field_name(f, sizeof(f), base, k);
    if (scalar_is(k, "cluster"))
      rc = get_str(c, v, f, &x->cluster);
    else if (scalar_is(k, "user"))
      rc = get_str(c, v, f, &x->user);
    else if (scalar_is(k, "namespace"))
      rc = get_str(c, v, f, &x->namespace);
    if (rc < 0)
      return rc;
  }
  return 0;
}

enum kind { KIND_CLUSTER, KIND_USER, KIND_CONTEXT };

/* parse_list reads clusters:, users: or contexts: of one file. */
static int parse_list(parse_ctx *c, const yaml_node_t *n, enum kind kind) {
  static const char *const lists[] = {"clusters", "users", "contexts"};
  static const char *const bodies[] = {"cluster", "user", "context"};
  const char *list = lists[kind];
  size_t idx = 0;
  if (!n || is_null(n))
    return 0;
  if (n->type != YAML_SEQUENCE_NODE)
    return fail(c, n, KCR_ECONFIG, list, "expected a list");
  for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
       it++, idx++) {
    yaml_node_t *item = node(c, *it);
    yaml_node_t *body = NULL, *name_node = NULL;
    char *name = NULL;
    char base[FIELD_MAX];
    void *entry = NULL;
    int rc = 0;

    snprintf(base, sizeof(base), "%s[%zu]", list, idx);
    if ((rc = expect_map(c, item, base)) < 0)
      return rc;
    FOR_PAIRS(c, item, pp12, k, v) {
      if (scalar_is(k, "name"))
        name_node = v;
      else if (scalar_is(k, bodies[kind]))
        body = v;
    }
    snprintf(base, sizeof(base), "%s[%zu].name", list, idx);
    if ((rc = get_str(c, name_node, base, &name)) < 0)
      return rc;
    if (!name || !*name) {
      kcr__free(name);
      return fail(c, name_node ? name_node : item, KCR_ECONFIG, base, "missing");
    }
    if ((kind == KIND_CLUSTER && kcr__kubeconfig_find_cluster(c->out, name)) ||
        (kind == KIND_USER && kcr__kubeconfig_find_user(c->out, name)) ||
        (kind == KIND_CONTEXT && kcr__kubeconfig_find_context(c->out, name))) {
      snprintf(base, sizeof(base), "%s[%s]", list, name);
      kcr__free(name);
      return fail(c, item, KCR_ECONFIG, base, "duplicate name in this file");
    }
    snprintf(base, sizeof(base), "%s[%s].%s", list, name, bodies[kind]);
    switch (kind) {
    case KIND_CLUSTER: {
      kcr__kc_cluster_t *cl = kcr__calloc(1, sizeof(*cl));
      if (!cl)
        break;
      cl->name = name;
      cl->file = c->file;
      cl->line = line_of(item);
      entry = cl;
      if ((rc = parse_cluster(c, body, base, cl)) == 0)
        rc = push((void ***)&c->out->clusters, &c->out->nclusters, cl);
      if (rc < 0)
        cluster_free(cl);
      break;
    }
    case KIND_USER: {
      kcr__kc_user_t *u = kcr__calloc(1, sizeof(*u));
      if (!u)
        break;
      u->name = name;
      u->file = c->file;
      u->line = line_of(item);
      entry = u;
      if ((rc = parse_user(c, body, base, u)) == 0)
        rc = push((void ***)&c->out->users, &c->out->nusers, u);
      if (rc < 0)
        user_free(u);
      break;
    }
    case KIND_CONTEXT: {
      kcr__kc_context_t *x = kcr__calloc(1, sizeof(*x));
      if (!x)
        break;
      x->name = name;
      x->file = c->file;
      x->line = line_of(item);
      entry = x;
      if ((rc = parse_context(c, body, base, x)) == 0)
        rc = push((void ***)&c->out->contexts, &c->out->ncontexts, x);
      if (rc < 0)
        context_free(x);
      break;
    }
    }
    if (!entry) {
      kcr__free(name);
      return oom(c);
    }
    if (rc == KCR_ENOMEM)
      return oom(c);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int parse_root(parse_ctx *c, const yaml_node_t *root) {
  int rc = 0;
  if (!root || is_null(root))
    return 0;
  if (root->type != YAML_MAPPING_NODE)
    return fail(c, root, KCR_ECONFIG, "(top level)", "expected a mapping");
  FOR_PAIRS(c, root, pp13, k, v) {
    if (scalar_is(k, "clusters"))
      rc = parse_list(c, v, KIND_CLUSTER);
    else if (scalar_is(k, "users"))
      rc = parse_list(c, v, KIND_USER);
    else if (scalar_is(k, "contexts"))
      rc = parse_list(c, v, KIND_CONTEXT);
    else if (scalar_is(k, "current-context"))
      rc = get_str(c, v, "current-context", &c->out->current_context);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* wipe_document zeroes every scalar of a parsed document before it is freed. */
static void wipe_document(yaml_document_t *doc) {
  for (yaml_node_t *n = doc->nodes.start; n && n < doc->nodes.top; n++) {
    if (n->type == YAML_SCALAR_NODE && n->data.scalar.value)
      explicit_bzero(n->data.scalar.value, n->data.scalar.length);
  }
}

/*
 * check_depth runs libyaml's event parser over text and refuses a document whose
 * mappings and sequences nest deeper than KCR__KUBECONFIG_MAX_DEPTH, stopping at
 * the first collection past the limit. The document loader's time grows with
 * the square of the depth (libyaml's scanner walks its stack of possible simple
 * keys, one per flow level, for every token): 200 KB of '[' took it over a
 * minute. A kubeconfig's own shape is 7 levels deep and its extensions are cut
 * at 32, so 64 refuses nothing real. A syntax error is left to the loader, which
 * reports it with its position. Scalars are wiped: they may be secrets.
 */
static int check_depth(const char *name, const char *text, size_t len, kcr_error_t *err) {
  yaml_parser_t parser;
  yaml_event_t ev;
  int depth = 0, rc = 0;
  bool done = false;

  if (!yaml_parser_initialize(&parser))
    return kcr_error_set(err, KCR_ENOMEM, "out of memory reading kubeconfig %s", name);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  while (!done && rc == 0) {
    if (!yaml_parser_parse(&parser, &ev)) {
      if (parser.error == YAML_MEMORY_ERROR)
        rc = kcr_error_set(err, KCR_ENOMEM, "out of memory reading kubeconfig %s", name);
      break;
    }
    switch (ev.type) {
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
      if (++depth > KCR__KUBECONFIG_MAX_DEPTH)
        rc = kcr_error_set(err, KCR_ECONFIG,
                           "kubeconfig %s line %zu column %zu: mappings and lists nested deeper "
                           "than %d levels",
                           name, ev.start_mark.line + 1, ev.start_mark.column + 1,
                           KCR__KUBECONFIG_MAX_DEPTH);
      break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
      depth--;
      break;
    case YAML_SCALAR_EVENT:
      if (ev.data.scalar.value)
        explicit_bzero(ev.data.scalar.value, ev.data.scalar.length);
      break;
    case YAML_STREAM_END_EVENT:
      done = true;
      break;
    default:
      break;
    }
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&parser);
  return rc;
}

/* merge moves tmp's entries into kc (first wins); tmp is left empty. */
static int merge(kcr__kubeconfig_t *kc, kcr__kubeconfig_t *tmp, kcr_error_t *err) {
  void *p;
  /* Reserve first, so the moves below cannot fail half way. */
  if (tmp->nclusters) {
    p = kcr__realloc(kc->clusters, (kc->nclusters + tmp->nclusters) * sizeof(void *));
    if (!p)
      return kcr_error_set(err, KCR_ENOMEM, "out of memory merging kubeconfig");
    kc->clusters = p;
  }
  if (tmp->nusers) {
    p = kcr__realloc(kc->users, (kc->nusers + tmp->nusers) * sizeof(void *));
    if (!p)
      return kcr_error_set(err, KCR_ENOMEM, "out of memory merging kubeconfig");
    kc->users = p;
  }
  if (tmp->ncontexts) {
    p = kcr__realloc(kc->contexts, (kc->ncontexts + tmp->ncontexts) * sizeof(void *));
    if (!p)
      return kcr_error_set(err, KCR_ENOMEM, "out of memory merging kubeconfig");
    kc->contexts = p;
  }
  for (size_t i = 0; i < tmp->nclusters; i++) {
    if (!kcr__kubeconfig_find_cluster(kc, tmp->clusters[i]->name)) {
      kc->clusters[kc->nclusters++] = tmp->clusters[i];
      tmp->clusters[i] = NULL;
    }
  }
  for (size_t i = 0; i < tmp->nusers; i++) {
    if (!kcr__kubeconfig_find_user(kc, tmp->users[i]->name)) {
      kc->users[kc->nusers++] = tmp->users[i];
      tmp->users[i] = NULL;
    }
  }
  for (size_t i = 0; i < tmp->ncontexts; i++) {
    if (!kcr__kubeconfig_find_context(kc, tmp->contexts[i]->name)) {
      kc->contexts[kc->ncontexts++] = tmp->contexts[i];
      tmp->contexts[i] = NULL;
    }
  }
  if ((!kc->current_context || !*kc->current_context) && tmp->current_context &&
      *tmp->current_context) {
    kcr__free(kc->current_context);
    kc->current_context = tmp->current_context;
    kc->current_context_file = kc->files[kc->nfiles - 1];
    tmp->current_context = NULL;
  }
  return 0;
}

int kcr__kubeconfig_merge_text(kcr__kubeconfig_t *kc, const char *name, const char *dir,
                               const char *text, size_t len, kcr_error_t *err) {
  yaml_parser_t parser;
  yaml_document_t doc;
  kcr__kubeconfig_t tmp = {0};
  parse_ctx c = {0};
  char *fname;
  int rc;

  fname = kcr__strdup(name);
  if (!fname)
    return kcr_error_set(err, KCR_ENOMEM, "out of memory reading kubeconfig %s", name);
  if (push((void ***)&kc->files, &kc->nfiles, fname) < 0) {
    kcr__free(fname);
    return kcr_error_set(err, KCR_ENOMEM, "out of memory reading kubeconfig %s", name);
  }
  if ((rc = check_depth(name, text, len, err)) < 0)
    return rc;
  if (!yaml_parser_initialize(&parser))
    return kcr_error_set(err, KCR_ENOMEM, "out of memory reading kubeconfig %s", name);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    if (parser.error == YAML_MEMORY_ERROR)
      rc = kcr_error_set(err, KCR_ENOMEM, "out of memory reading kubeconfig %s", name);
    else
      rc =
          kcr_error_set(err, KCR_ECONFIG, "kubeconfig %s line %zu column %zu: invalid YAML: %s%s%s",
                        name, parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                        parser.problem ? parser.problem : "syntax error", parser.context ? " " : "",
                        parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    return rc;
  }
  c.doc = &doc;
  c.file = fname;
  c.dir = dir;
  c.out = &tmp;
  c.err = err;
  rc = parse_root(&c, yaml_document_get_root_node(&doc));
  wipe_document(&doc);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  if (rc == 0)
    rc = merge(kc, &tmp, err);
  /* tmp keeps what it did not hand over: entries the first file already won. */
  {
    size_t j = 0;
    for (size_t i = 0; i < tmp.nclusters; i++)
      if (tmp.clusters[i])
        tmp.clusters[j++] = tmp.clusters[i];
    tmp.nclusters = j;
    j = 0;
    for (size_t i = 0; i < tmp.nusers; i++)
      if (tmp.users[i])
        tmp.users[j++] = tmp.users[i];
    tmp.nusers = j;
    j = 0;
    for (size_t i = 0; i < tmp.ncontexts; i++)
      if (tmp.contexts[i])
        tmp.contexts[j++] = tmp.contexts[i];
    tmp.ncontexts = j;
  }
  entries_free(&tmp);
  return rc;
}

/* dir_of returns the absolute directory of path, new; NULL on ENOMEM. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  char cwd[4096];
  size_t cl, dl;
  char *d;
  if (path[0] == '/')
    return kcr__strndup(path, (size_t)(slash - path)); /* "/x" gives "" (root) */
  if (!getcwd(cwd, sizeof(cwd)))
    return slash ? kcr__strndup(path, (size_t)(slash - path)) : kcr__strdup(".");
  cl = strlen(cwd);
  if (cl == 1) /* "/" */
    cl = 0;
  dl = slash ? (size_t)(slash - path) : 0;
  d = kcr__malloc(cl + 1 + dl + 1);
  if (!d)
    return NULL;
  memcpy(d, cwd, cl);
  d[cl] = '\0';
  if (dl) {
    d[cl] = '/';
    memcpy(d + cl + 1, path, dl);
    d[cl + 1 + dl] = '\0';
  }
  return d;
}

int kcr__kubeconfig_merge_file(kcr__kubeconfig_t *kc, const char *path, kcr_error_t *err) {
  char *text = NULL, *dir;
  size_t len = 0;
  int rc;

  rc = kcr__read_file(path, KCR__KUBECONFIG_MAX_BYTES, "kubeconfig", &text, &len, err);
  if (rc < 0)
    return rc;
  dir = dir_of(path);
  if (!dir) {
    kcr__wipe_free(text, len);
    return kcr_error_set(err, KCR_ENOMEM, "out of memory reading kubeconfig %s", path);
  }
  rc = kcr__kubeconfig_merge_text(kc, path, dir, text, len, err);
  kcr__wipe_free(text, len);
  kcr__free(dir);
  return rc;
}
