/* SPDX-License-Identifier: MIT */
/*
 * app_desired.c: what an App's children should look like, and how to tell
 * whether what exists already does.
 *
 * DESIGN: every function is a pure transformation of borrowed typed objects
 * (app_desired.h): the App as app_v1alpha1_t, the children as libkcr's built-in
 * structs. Builders allocate with the generated types' allocator and count
 * failures in one `bad` tally, so that a builder has a single failure exit and
 * the allocation-failure tests can fail each allocation in turn. A child is
 * made by applying the App's fields onto an object (kop_app_mutate_*): onto a
 * skeleton to create it, onto the object as read to update it. The mutation
 * sets only what the App decides and leaves the rest to the API server's
 * defaults, so "up to date" is the struct's _equal before and after it:
 * comparing against a freshly built object would rewrite children on every
 * reconcile. Empty strings the server would drop (an env value "") are left
 * out for the same reason. The config hash is SHA-256 (OpenSSL EVP) of the
 * config's canonical JSON, so key order in the App does not matter.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "app/app_desired.h"
#include "app_v1alpha1.h"
#include "kcr/k8s/apps_v1.h"
#include "kcr/k8s/core_v1.h"
#include "kcr/meta.h"
#include "kcr/typed.h"

/* fit turns snprintf's result into kcr's: the length, or KCR_ETOOBIG. */
static int fit(int n, size_t size) {
  if (n < 0 || (size_t)n >= size) {
    return KCR_ETOOBIG;
  }
  return n;
}

/* selector_for writes the pods' selector of an App called name (both forms). */
static int selector_for(const char *name, char *buf, size_t size) {
  int n = fit(
      snprintf(buf, size, "%s=%s,%s=%s", KOP_APP_LABEL_NAME, name, KOP_APP_LABEL_INSTANCE, name),
      size);
  if (n < 0 && size > 0) {
    buf[0] = '\0';
  }
  return n;
}

/* url_for writes the App's URL, "" and 0 when port is 0 (both forms). */
static int url_for(const char *name, const char *ns, int port, char *buf, size_t size) {
  int n;
  if (size > 0) {
    buf[0] = '\0';
  }
  if (port == 0) {
    return 0;
  }
  n = fit(snprintf(buf, size, "http://%s.%s.svc:%d", name, ns, port), size);
  if (n < 0 && size > 0) {
    buf[0] = '\0';
  }
  return n;
}

/* jansson_free releases what json_dumps returned, with jansson's own allocator. */
static void jansson_free(void *p) {
  json_free_t f = NULL;
  json_get_alloc_funcs(NULL, &f);
  (f ? f : free)(p);
}

/* streq compares two strings, NULL reading as "". */
static bool streq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

/* has_group returns whether apiVersion "group/version" has the given group. */
static bool has_group(const char *api_version, const char *group) {
  size_t n = strlen(group);
  return api_version && strncmp(api_version, group, n) == 0 && api_version[n] == '/';
}

/* config_order sorts config entries by key, as jansson's JSON_SORT_KEYS does (strcmp). */
static int config_order(const void *a, const void *b) {
  const app_v1alpha1_spec_config_entry_t *const *x = a, *const *y = b;
  return strcmp((*x)->key, (*y)->key);
}

/* json_text returns s as a JSON string literal, escaped as jansson writes it (new). */
static char *json_text(const char *s) {
  json_t *j = json_string(s ? s : "");
  char *t = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
  json_decref(j);
  return t;
}

/*
 * config_text writes the canonical JSON of the config (keys sorted, compact:
 * what jansson's json_dumps(config, JSON_SORT_KEYS | JSON_COMPACT) writes, so
 * that hashes stay what they were) into *out (new, jansson_free). Returns 0 or
 * KCR_ENOMEM.
 */
static int config_text(const app_v1alpha1_spec_t *spec, char **out) {
  size_t n = spec && spec->has_config ? spec->config_len : 0, len = 2, at = 0;
  const app_v1alpha1_spec_config_entry_t **order = NULL;
  char **parts = NULL, *text = NULL;
  int rc = KCR_ENOMEM;
  *out = NULL;
  if (n > 0 &&
      (!(order = kcr_core_v1_mem_calloc(n, sizeof(*order))) || // NOLINT(bugprone-sizeof-expression)
       !(parts = kcr_core_v1_mem_calloc(2 * n, sizeof(*parts))))) {
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    order[i] = &spec->config[i];
  }
  if (n > 1) {
    qsort(order, n, sizeof(*order), config_order); // NOLINT(bugprone-sizeof-expression)
  }
  for (size_t i = 0; i < n; i++) {
    if (!(parts[2 * i] = json_text(order[i]->key)) ||
        !(parts[2 * i + 1] = json_text(order[i]->value))) {
      goto out;
    }
    len += strlen(parts[2 * i]) + strlen(parts[2 * i + 1]) + 2; /* ':' and ',' */
  }
  if (!(text = kcr_core_v1_mem_calloc(len + 1, 1))) {
    goto out;
  }
  text[at++] = '{';
  for (size_t i = 0; i < n; i++) {
    at += (size_t)sprintf(text + at, "%s%s:%s", i ? "," : "", parts[2 * i], parts[2 * i + 1]);
  }
  text[at++] = '}';
  text[at] = '\0';
  *out = text;
  rc = 0;
out:
  for (size_t i = 0; parts && i < 2 * n; i++) {
    jansson_free(parts[i]);
  }
  kcr_core_v1_mem_free(parts);
  kcr_core_v1_mem_free(order);
  return rc;
}

/* hash_config writes the config hash of the App's config (absent: that of {}). */
static int hash_config(const app_v1alpha1_spec_t *spec, char out[KOP_APP_CONFIG_HASH_LEN + 1],
                       kcr_error_t *err) {
  static const char hex[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  char *text;
  int ok;
  out[0] = '\0';
  if (config_text(spec, &text) != 0) {
    return kcr_error_set(err, KCR_ENOMEM, "app: config hash: out of memory");
  }
  ok = EVP_Digest(text, strlen(text), md, &md_len, EVP_sha256(), NULL);
  kcr_core_v1_mem_free(text);
  if (!ok || md_len * 2 < KOP_APP_CONFIG_HASH_LEN) {
    return kcr_error_set(err, KCR_EINTERNAL, "app: config hash: SHA-256 failed");
  }
  for (size_t i = 0; i < KOP_APP_CONFIG_HASH_LEN / 2; i++) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 0x0f];
  }
  out[KOP_APP_CONFIG_HASH_LEN] = '\0';
  return 0;
}

int kop_app_config_hash(const app_v1alpha1_t *app, char out[KOP_APP_CONFIG_HASH_LEN + 1],
                        kcr_error_t *err) {
  return hash_config(app->spec, out, err);
}

/* ---- the children, built as typed objects (k8s.h, app_v1alpha1.h) ---- */

/* dup copies s with the generated types' allocator; a failure counts in *bad. */
static char *dup(const char *s, int *bad) {
  char *d = kcr_apps_v1_mem_strdup(s);
  *bad |= d == NULL;
  return d;
}

/* zalloc is kcr_apps_v1_mem_calloc with the failure counted in *bad. */
static void *zalloc(size_t n, size_t size, int *bad) {
  void *p = kcr_apps_v1_mem_calloc(n, size);
  *bad |= p == NULL;
  return p;
}

/*
 * SET_PAIRS fills a generated string map (field, field_len, has_field) of obj
 * with the n key/value pairs kv[i][0], kv[i][1]; failures count in bad. Every
 * generated string map has the same entry shape {char *key; char *value;}.
 */
#define SET_PAIRS(obj, field, kv, n, bad)                                                          \
  do {                                                                                             \
    (obj)->field = zalloc((n), sizeof(*(obj)->field), &(bad));                                     \
    if ((obj)->field) {                                                                            \
      (obj)->field##_len = (n);                                                                    \
      (obj)->has_##field = true;                                                                   \
      for (size_t i_ = 0; i_ < (size_t)(n); i_++) {                                                \
        (obj)->field[i_].key = dup((kv)[i_][0], &(bad));                                           \
        (obj)->field[i_].value = dup((kv)[i_][1], &(bad));                                         \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* typed_app decodes app (borrowed) into *out (new); a bad App is KCR_EINVAL. */
static int typed_app(const json_t *app, app_v1alpha1_t **out, kcr_error_t *err) {
  kcr_error_t e;
  int rc;
  kcr_error_clear(&e);
  rc = app_v1alpha1_decode(app, out, &e);
  if (rc == 0 || rc == KCR_ENOMEM) {
    return rc == 0 ? 0 : kcr_error_set(err, rc, "app: %s", e.message);
  }
  return kcr_error_set(err, KCR_EINVAL, "app %s/%s: %s", kcr_meta_namespace(app),
                       kcr_meta_name(app), e.message);
}

/* md_str returns s, a string of the App's metadata, or "" when it is unset. */
static const char *md_str(const char *s) {
  return s ? s : "";
}

#define MD(app, field) md_str((app)->metadata ? (app)->metadata->field : NULL)

int kop_app_check(const app_v1alpha1_t *app, kcr_error_t *err) {
  const char *ns = MD(app, namespace), *name = MD(app, name);
  if (!*name || !*ns || !*MD(app, uid)) {
    return kcr_error_set(err, KCR_EINVAL, "app: metadata.name, namespace and uid are required");
  }
  if (!app->spec || !app->spec->image || !*app->spec->image) {
    return kcr_error_set(err, KCR_EINVAL, "app %s/%s: spec.image is required", ns, name);
  }
  if (app->spec->has_replicas && (app->spec->replicas < 0 || app->spec->replicas > 1000)) {
    return kcr_error_set(err, KCR_EINVAL, "app %s/%s: spec.replicas must be an integer in 0..1000",
                         ns, name);
  }
  if (app->spec->has_port && (app->spec->port < 1 || app->spec->port > 65535)) {
    return kcr_error_set(err, KCR_EINVAL, "app %s/%s: spec.port must be an integer in 1..65535", ns,
                         name);
  }
  return 0;
}

int kop_app_selector(const app_v1alpha1_t *app, char *buf, size_t size) {
  return selector_for(MD(app, name), buf, size);
}

int kop_app_url(const app_v1alpha1_t *app, char *buf, size_t size) {
  int port = app->spec && app->spec->has_port && app->spec->port >= 1 && app->spec->port <= 65535
                 ? (int)app->spec->port
                 : 0;
  return url_for(MD(app, name), MD(app, namespace), port, buf, size);
}

int kop_app_directory_key(const app_v1alpha1_t *app, char *buf, size_t size) {
  int n = fit(snprintf(buf, size, "%s.%s", MD(app, namespace), MD(app, name)), size);
  if (n < 0 && size > 0) {
    buf[0] = '\0';
  }
  return n;
}

int64_t kop_app_replicas(const app_v1alpha1_t *app) {
  return app->spec && app->spec->has_replicas ? app->spec->replicas : 1;
}

int kop_app_port(const app_v1alpha1_t *app) {
  return app->spec && app->spec->has_port && app->spec->port >= 1 && app->spec->port <= 65535
             ? (int)app->spec->port
             : 0;
}

bool kop_app_has_config(const app_v1alpha1_t *app) {
  return app->spec && app->spec->has_config && app->spec->config_len > 0;
}

bool kop_app_paused(const app_v1alpha1_t *app) {
  return app->spec && app->spec->has_paused && app->spec->paused;
}

json_t *kop_app_identity(const app_v1alpha1_t *app) {
  json_t *md = NULL, *id;
  if (app->metadata ? kcr_meta_v1_object_meta_encode(app->metadata, &md, NULL) != 0
                    : !(md = json_object())) {
    return NULL;
  }
  id = json_pack("{s:s, s:s, s:O}", "apiVersion",
                 app->api_version ? app->api_version : KOP_APP_API_VERSION, "kind",
                 app->kind ? app->kind : KOP_APP_KIND, "metadata", md);
  json_decref(md);
  return id;
}

int kop_app_decode(const json_t *app, app_v1alpha1_t **out, kcr_error_t *err) {
  int rc;
  *out = NULL;
  if ((rc = typed_app(app, out, err)) < 0) {
    return rc;
  }
  if ((rc = kop_app_check(*out, err)) < 0) {
    app_v1alpha1_free(*out);
    *out = NULL;
  }
  return rc;
}

/* kop_app_owns: the controller reference of child names this App (group, kind, uid). */
bool kop_app_owns(const app_v1alpha1_t *app, const kcr_meta_v1_object_meta_t *child) {
  const kcr_meta_v1_owner_reference_t *ref = kcr_typed_owner_ref_controller(child);
  const char *uid = MD(app, uid);
  if (!ref || !*uid) {
    return false;
  }
  return has_group(ref->api_version, KOP_APP_GROUP) && streq(ref->kind, KOP_APP_KIND) &&
         streq(ref->uid, uid);
}

static const kcr_gvk app_gvk = {KOP_APP_GROUP, KOP_APP_VERSION, KOP_APP_KIND};

/* config_name writes "<name>-config" into buf. Returns 0 or KCR_ETOOBIG. */
static int config_name(const app_v1alpha1_t *app, char *buf, size_t size) {
  int n = fit(snprintf(buf, size, "%s%s", MD(app, name), KOP_APP_CONFIG_SUFFIX), size);
  return n < 0 ? n : 0;
}

/* typed_has_config is kop_app_has_config for the typed App. */
static bool typed_has_config(const app_v1alpha1_spec_t *spec) {
  return spec->has_config && spec->config_len > 0;
}

/*
 * ---- the App's fields, applied onto a child ----
 *
 * A mutate function sets the fields the App decides on the child as read (or
 * on a skeleton) and leaves every other field alone, as controller-runtime's
 * CreateOrUpdate mutate functions do: what the server defaulted (a Service's
 * clusterIP, a container's imagePullPolicy, a volume's defaultMode) and what
 * the decoder did not know (kcr_unknown) survive, so "up to date" is the
 * child's _equal before and after the mutation. Maps the App shares with
 * others (labels, selectors, the template's annotations) get the App's keys
 * set and keep the rest; lists the App decides (the container's env, ports,
 * mounts and resources, the pod's volumes, the Service's ports, the
 * ConfigMap's data) are replaced, reusing the element the server defaulted
 * when there is one. Failures count in `bad`; the caller then drops the
 * object (a failed mutation may leave it half edited).
 */

/* set_str replaces *dst with a copy of s (NULL: unset). */
static void set_str(char **dst, const char *s, int *bad) {
  char *d = NULL;
  if (s && !(d = dup(s, bad))) {
    return;
  }
  kcr_core_v1_mem_free(*dst);
  *dst = d;
}

/* ARRAY_DROP clears and frees the n elements of arr with clearfn, and arr. */
#define ARRAY_DROP(arr, n, clearfn)                                                                \
  do {                                                                                             \
    for (size_t i_ = 0; i_ < (n); i_++) {                                                          \
      clearfn(&(arr)[i_]);                                                                         \
    }                                                                                              \
    kcr_core_v1_mem_free(arr);                                                                     \
    (arr) = NULL;                                                                                  \
    (n) = 0;                                                                                       \
  } while (0)

/* pair_clear frees a string map entry's key and value. */
#define PAIR_CLEAR(e)                                                                              \
  do {                                                                                             \
    kcr_core_v1_mem_free((e)->key);                                                                \
    kcr_core_v1_mem_free((e)->value);                                                              \
  } while (0)

/* MAP_PUT sets key k of the generated string map obj->field to v (a copy). */
#define MAP_PUT(obj, field, k, v, bad)                                                             \
  do {                                                                                             \
    size_t i_ = 0;                                                                                 \
    while (i_ < (obj)->field##_len && !streq((obj)->field[i_].key, (k))) {                         \
      i_++;                                                                                        \
    }                                                                                              \
    if (i_ == (obj)->field##_len) {                                                                \
      void *grown_ = zalloc(i_ + 1, sizeof(*(obj)->field), &(bad));                                \
      if (!grown_) {                                                                               \
        break;                                                                                     \
      }                                                                                            \
      if (i_ > 0) {                                                                                \
        memcpy(grown_, (obj)->field, i_ * sizeof(*(obj)->field));                                  \
      }                                                                                            \
      kcr_core_v1_mem_free((obj)->field);                                                          \
      (obj)->field = grown_;                                                                       \
      (obj)->field##_len = i_ + 1;                                                                 \
      (obj)->field[i_].key = dup((k), &(bad));                                                     \
    }                                                                                              \
    (obj)->has_##field = true;                                                                     \
    set_str(&(obj)->field[i_].value, (v), &(bad));                                                 \
  } while (0)

/* MAP_DEL removes key k from the generated string map obj->field. */
#define MAP_DEL(obj, field, k)                                                                     \
  do {                                                                                             \
    for (size_t i_ = 0; i_ < (obj)->field##_len; i_++) {                                           \
      if (streq((obj)->field[i_].key, (k))) {                                                      \
        PAIR_CLEAR(&(obj)->field[i_]);                                                             \
        memmove(&(obj)->field[i_], &(obj)->field[i_ + 1],                                          \
                ((obj)->field##_len - i_ - 1) * sizeof(*(obj)->field));                            \
        (obj)->field##_len--;                                                                      \
        break;                                                                                     \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* ENSURE allocates *p (zeroed) when it is NULL; a failure counts in bad. */
#define ENSURE(p, bad) ((p) ? (p) : ((p) = zalloc(1, sizeof(*(p)), &(bad))))

/* child_meta sets the child labels and the App's controller reference on md. */
static int child_meta(const app_v1alpha1_t *app, kcr_meta_v1_object_meta_t *md, kcr_error_t *err) {
  const char *name = MD(app, name);
  int rc;
  if ((rc = kcr_typed_label_set(md, KOP_APP_LABEL_NAME, name)) != 0 ||
      (rc = kcr_typed_label_set(md, KOP_APP_LABEL_INSTANCE, name)) != 0 ||
      (rc = kcr_typed_label_set(md, KOP_APP_LABEL_MANAGED_BY, KOP_APP_MANAGED_BY)) != 0) {
    return kcr_error_set(err, rc, "app: child labels");
  }
  return kcr_typed_owner_ref_set_controller(&app_gvk, app->metadata, md, err);
}

/* QUANTITY_CLEAR frees a resources map entry. */
#define QUANTITY_CLEAR(e)                                                                          \
  do {                                                                                             \
    kcr_core_v1_mem_free((e)->key);                                                                \
    kcr_core_v1_mem_free((e)->value.text);                                                         \
  } while (0)

/* SET_QUANTITIES replaces a container's resources map by the App's (same shapes). */
#define SET_QUANTITIES(dst, src, field, bad)                                                       \
  do {                                                                                             \
    ARRAY_DROP((dst)->field, (dst)->field##_len, QUANTITY_CLEAR);                                  \
    (dst)->has_##field = false;                                                                    \
    if ((src) && (src)->has_##field && (src)->field##_len > 0 &&                                   \
        ((dst)->field = zalloc((src)->field##_len, sizeof(*(dst)->field), &(bad)))) {              \
      (dst)->field##_len = (src)->field##_len;                                                     \
      (dst)->has_##field = true;                                                                   \
      for (size_t i_ = 0; i_ < (src)->field##_len; i_++) {                                         \
        (dst)->field[i_].key = dup((src)->field[i_].key, &(bad));                                  \
        (dst)->field[i_].value.text = dup((src)->field[i_].value.text, &(bad));                    \
        (dst)->field[i_].value.is_int = (src)->field[i_].value.is_int;                             \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* set_env replaces c's env by the App's (a name each; an empty value left out). */
static void set_env(kcr_core_v1_container_t *c, const app_v1alpha1_spec_t *spec, int *bad) {
  ARRAY_DROP(c->env, c->env_len, kcr_core_v1_env_var_clear);
  c->has_env = false;
  if (!spec->has_env || spec->env_len == 0 ||
      !(c->env = zalloc(spec->env_len, sizeof(*c->env), bad))) {
    return;
  }
  for (size_t i = 0; i < spec->env_len; i++) {
    kcr_core_v1_env_var_t *e = &c->env[c->env_len];
    if (!spec->env[i].name || !*spec->env[i].name) {
      continue; /* the schema requires a name; skip rather than send an invalid Deployment */
    }
    c->env_len++;
    e->name = dup(spec->env[i].name, bad);
    if (spec->env[i].value && *spec->env[i].value) { /* the server drops "" */
      e->value = dup(spec->env[i].value, bad);
    }
  }
  c->has_env = c->env_len > 0;
}

/* set_container brings c, the container "app", to what the App says. */
static void set_container(kcr_core_v1_container_t *c, const app_v1alpha1_spec_t *spec,
                          bool with_config, int *bad) {
  const app_v1alpha1_spec_resources_t *res = spec->resources;
  set_str(&c->name, KOP_APP_CONTAINER, bad);
  set_str(&c->image, spec->image, bad);
  set_env(c, spec, bad);
  if (res && ((res->has_requests && res->requests_len) || (res->has_limits && res->limits_len))) {
    ENSURE(c->resources, *bad);
  }
  if (c->resources) { /* kept (the server writes {}), emptied when the App sets none */
    SET_QUANTITIES(c->resources, res, requests, *bad);
    SET_QUANTITIES(c->resources, res, limits, *bad);
  }
  ARRAY_DROP(c->ports, c->ports_len, kcr_core_v1_container_port_clear);
  c->has_ports = false;
  if (spec->has_port && (c->ports = zalloc(1, sizeof(*c->ports), bad))) {
    c->ports_len = 1;
    c->has_ports = true;
    c->ports[0].name = dup("http", bad);
    c->ports[0].container_port = spec->port;
    c->ports[0].protocol = dup("TCP", bad);
  }
  ARRAY_DROP(c->volume_mounts, c->volume_mounts_len, kcr_core_v1_volume_mount_clear);
  c->has_volume_mounts = false;
  if (with_config && (c->volume_mounts = zalloc(1, sizeof(*c->volume_mounts), bad))) {
    c->volume_mounts_len = 1;
    c->has_volume_mounts = true;
    c->volume_mounts[0].name = dup(KOP_APP_CONFIG_VOLUME, bad);
    c->volume_mounts[0].mount_path = dup(KOP_APP_CONFIG_MOUNT, bad);
    c->volume_mounts[0].read_only = c->volume_mounts[0].has_read_only = true;
  }
}

/* set_pod makes the App's container the pod's only one, and its volume the only volume. */
static void set_pod(kcr_core_v1_pod_spec_t *pod, const app_v1alpha1_spec_t *spec,
                    const char *cm_name, int *bad) {
  size_t keep = SIZE_MAX;
  kcr_core_v1_volume_t *vol = NULL;
  for (size_t i = 0; i < pod->containers_len && keep == SIZE_MAX; i++) {
    if (streq(pod->containers[i].name, KOP_APP_CONTAINER)) {
      keep = i;
    }
  }
  if (keep == SIZE_MAX || pod->containers_len != 1) {
    kcr_core_v1_container_t *one = zalloc(1, sizeof(*one), bad);
    if (!one) {
      return;
    }
    for (size_t i = 0; i < pod->containers_len; i++) {
      if (i == keep) {
        one[0] = pod->containers[i]; /* moved: the server's defaults in it stay */
      } else {
        kcr_core_v1_container_clear(&pod->containers[i]);
      }
    }
    kcr_core_v1_mem_free(pod->containers);
    pod->containers = one;
    pod->containers_len = 1;
  }
  set_container(&pod->containers[0], spec, cm_name != NULL, bad);
  /* The config volume: the one there is kept (its defaultMode is the server's). */
  for (size_t i = 0; cm_name && i < pod->volumes_len && !vol; i++) {
    if (streq(pod->volumes[i].name, KOP_APP_CONFIG_VOLUME) && pod->volumes[i].config_map) {
      vol = zalloc(1, sizeof(*vol), bad);
      if (vol) {
        *vol = pod->volumes[i];
        memset(&pod->volumes[i], 0, sizeof(pod->volumes[i]));
      }
    }
  }
  if (cm_name && !vol && (vol = zalloc(1, sizeof(*vol), bad))) {
    vol->name = dup(KOP_APP_CONFIG_VOLUME, bad);
    ENSURE(vol->config_map, *bad);
  }
  if (cm_name && !vol) {
    return;
  }
  ARRAY_DROP(pod->volumes, pod->volumes_len, kcr_core_v1_volume_clear);
  pod->has_volumes = vol != NULL;
  if (vol) {
    pod->volumes = vol;
    pod->volumes_len = 1;
    if (vol->config_map) {
      set_str(&vol->config_map->name, cm_name, bad);
    }
  }
}

int kop_app_mutate_deployment(const app_v1alpha1_t *a, kcr_apps_v1_deployment_t *d,
                              kcr_error_t *err) {
  char cm_name[320];
  char hash[KOP_APP_CONFIG_HASH_LEN + 1];
  const char *name = MD(a, name);
  kcr_apps_v1_deployment_spec_t *spec;
  kcr_core_v1_pod_template_spec_t *tmpl;
  bool with_config;
  int bad = 0, rc;
  if ((rc = kop_app_check(a, err)) < 0) {
    return rc;
  }
  with_config = typed_has_config(a->spec);
  if (with_config && config_name(a, cm_name, sizeof cm_name) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: name too long");
  }
  if (with_config && (rc = hash_config(a->spec, hash, err)) < 0) {
    return rc;
  }
  if (!ENSURE(d->metadata, bad) || (rc = child_meta(a, d->metadata, err)) < 0) {
    return bad ? kcr_error_set(err, KCR_ENOMEM, "app: deployment: out of memory") : rc;
  }
  if (!(spec = ENSURE(d->spec, bad)) || !ENSURE(spec->selector, bad) ||
      !(tmpl = ENSURE(spec->template, bad)) || !ENSURE(tmpl->metadata, bad) ||
      !ENSURE(tmpl->spec, bad)) {
    return kcr_error_set(err, KCR_ENOMEM, "app: deployment: out of memory");
  }
  spec->replicas = a->spec->has_replicas ? a->spec->replicas : 1;
  spec->has_replicas = true;
  MAP_PUT(spec->selector, match_labels, KOP_APP_LABEL_NAME, name, bad);
  MAP_PUT(spec->selector, match_labels, KOP_APP_LABEL_INSTANCE, name, bad);
  if (bad || kcr_typed_label_set(tmpl->metadata, KOP_APP_LABEL_NAME, name) != 0 ||
      kcr_typed_label_set(tmpl->metadata, KOP_APP_LABEL_INSTANCE, name) != 0 ||
      kcr_typed_label_set(tmpl->metadata, KOP_APP_LABEL_MANAGED_BY, KOP_APP_MANAGED_BY) != 0 ||
      (with_config &&
       kcr_typed_annotation_set(tmpl->metadata, KOP_APP_CONFIG_HASH_ANNOTATION, hash) != 0)) {
    return kcr_error_set(err, KCR_ENOMEM, "app: deployment: out of memory");
  }
  if (!with_config) {
    MAP_DEL(tmpl->metadata, annotations, KOP_APP_CONFIG_HASH_ANNOTATION);
  }
  set_pod(tmpl->spec, a->spec, with_config ? cm_name : NULL, &bad);
  return bad ? kcr_error_set(err, KCR_ENOMEM, "app: deployment: out of memory") : 0;
}

int kop_app_mutate_service(const app_v1alpha1_t *app, kcr_core_v1_service_t *s, kcr_error_t *err) {
  const char *name = MD(app, name);
  kcr_core_v1_service_spec_t *spec;
  kcr_core_v1_service_port_t *p = NULL;
  int bad = 0, rc;
  if ((rc = kop_app_check(app, err)) < 0) {
    return rc;
  }
  if (!app->spec->has_port) {
    return kcr_error_set(err, KCR_EINVAL, "app %s/%s: no port, no Service", MD(app, namespace),
                         name);
  }
  if (!ENSURE(s->metadata, bad) || (rc = child_meta(app, s->metadata, err)) < 0) {
    return bad ? kcr_error_set(err, KCR_ENOMEM, "app: service: out of memory") : rc;
  }
  if (!(spec = ENSURE(s->spec, bad))) {
    return kcr_error_set(err, KCR_ENOMEM, "app: service: out of memory");
  }
  set_str(&spec->type, "ClusterIP", &bad);
  MAP_PUT(spec, selector, KOP_APP_LABEL_NAME, name, bad);
  MAP_PUT(spec, selector, KOP_APP_LABEL_INSTANCE, name, bad);
  /* The one port "http": the one there is kept (the server's fields in it stay). */
  for (size_t i = 0; i < spec->ports_len && !p; i++) {
    if (streq(spec->ports[i].name, "http") && (p = zalloc(1, sizeof(*p), &bad))) {
      *p = spec->ports[i];
      memset(&spec->ports[i], 0, sizeof(spec->ports[i]));
    }
  }
  if (!p && !(p = zalloc(1, sizeof(*p), &bad))) {
    return kcr_error_set(err, KCR_ENOMEM, "app: service: out of memory");
  }
  ARRAY_DROP(spec->ports, spec->ports_len, kcr_core_v1_service_port_clear);
  spec->ports = p;
  spec->ports_len = 1;
  spec->has_ports = true;
  set_str(&p->name, "http", &bad);
  set_str(&p->protocol, "TCP", &bad);
  p->port = app->spec->port;
  p->has_node_port = false; /* a ClusterIP Service has none */
  p->node_port = 0;
  set_str(&p->target_port.str_value, NULL, &bad);
  p->target_port.is_string = false;
  p->target_port.int_value = app->spec->port;
  p->has_target_port = true;
  return bad ? kcr_error_set(err, KCR_ENOMEM, "app: service: out of memory") : 0;
}

int kop_app_mutate_configmap(const app_v1alpha1_t *a, kcr_core_v1_config_map_t *cm,
                             kcr_error_t *err) {
  int bad = 0, rc;
  if ((rc = kop_app_check(a, err)) < 0) {
    return rc;
  }
  if (!ENSURE(cm->metadata, bad) || (rc = child_meta(a, cm->metadata, err)) < 0) {
    return bad ? kcr_error_set(err, KCR_ENOMEM, "app: configmap: out of memory") : rc;
  }
  /* A ConfigMap's data is the App's config exactly: keys it dropped go too. */
  ARRAY_DROP(cm->data, cm->data_len, PAIR_CLEAR);
  cm->has_data = true;
  if (a->spec->has_config && a->spec->config_len > 0 &&
      (cm->data = zalloc(a->spec->config_len, sizeof(*cm->data), &bad))) {
    for (size_t i = 0; i < a->spec->config_len; i++) {
      cm->data_len = i + 1;
      cm->data[i].key = dup(a->spec->config[i].key, &bad);
      cm->data[i].value = dup(a->spec->config[i].value, &bad);
    }
  }
  return bad ? kcr_error_set(err, KCR_ENOMEM, "app: configmap: out of memory") : 0;
}

/* SKELETON allocates *out with apiVersion, kind, name and namespace, or returns ENOMEM. */
#define SKELETON(out, av, k, nm, app, bad, err)                                                    \
  do {                                                                                             \
    if ((*(out) = zalloc(1, sizeof(**(out)), &(bad)))) {                                           \
      (*(out))->api_version = dup((av), &(bad));                                                   \
      (*(out))->kind = dup((k), &(bad));                                                           \
      if (((*(out))->metadata = zalloc(1, sizeof(*(*(out))->metadata), &(bad)))) {                 \
        (*(out))->metadata->name = dup((nm), &(bad));                                              \
        (*(out))->metadata->namespace = dup(MD((app), namespace), &(bad));                         \
      }                                                                                            \
    }                                                                                              \
  } while (0)

int kop_app_desired_deployment(const app_v1alpha1_t *app, kcr_apps_v1_deployment_t **out,
                               kcr_error_t *err) {
  int bad = 0, rc;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0) {
    return rc;
  }
  SKELETON(out, "apps/v1", "Deployment", MD(app, name), app, bad, err);
  rc = bad ? kcr_error_set(err, KCR_ENOMEM, "app: desired deployment: out of memory")
           : kop_app_mutate_deployment(app, *out, err);
  if (rc < 0) {
    kcr_apps_v1_deployment_free(*out);
    *out = NULL;
  }
  return rc;
}

int kop_app_desired_service(const app_v1alpha1_t *app, kcr_core_v1_service_t **out,
                            kcr_error_t *err) {
  int bad = 0, rc;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0 || !app->spec->has_port) {
    return rc;
  }
  SKELETON(out, "v1", "Service", MD(app, name), app, bad, err);
  rc = bad ? kcr_error_set(err, KCR_ENOMEM, "app: desired service: out of memory")
           : kop_app_mutate_service(app, *out, err);
  if (rc < 0) {
    kcr_core_v1_service_free(*out);
    *out = NULL;
  }
  return rc;
}

int kop_app_desired_configmap(const app_v1alpha1_t *app, kcr_core_v1_config_map_t **out,
                              kcr_error_t *err) {
  char name[320];
  int bad = 0, rc;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0 || !typed_has_config(app->spec)) {
    return rc;
  }
  if (config_name(app, name, sizeof name) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: name too long");
  }
  SKELETON(out, "v1", "ConfigMap", name, app, bad, err);
  rc = bad ? kcr_error_set(err, KCR_ENOMEM, "app: desired configmap: out of memory")
           : kop_app_mutate_configmap(app, *out, err);
  if (rc < 0) {
    kcr_core_v1_config_map_free(*out);
    *out = NULL;
  }
  return rc;
}

/* ---- the children as one table (the reconciler's loop) ---- */

/* CHILD_OPS defines the void * forms of a kind's functions for kop_app_child_kind. */
#define CHILD_OPS(p, T, desiredfn, mutatefn)                                                       \
  static int p##_desired(const app_v1alpha1_t *app, void **out, kcr_error_t *err) {                \
    T##_t *v = NULL;                                                                               \
    int rc = desiredfn(app, &v, err);                                                              \
    *out = v;                                                                                      \
    return rc;                                                                                     \
  }                                                                                                \
  static int p##_mutate(const app_v1alpha1_t *app, void *obj, kcr_error_t *err) {                  \
    return mutatefn(app, obj, err);                                                                \
  }                                                                                                \
  static int p##_decode(const json_t *json, void **out, kcr_error_t *err) {                        \
    T##_t *v = NULL;                                                                               \
    int rc = T##_decode(json, &v, err);                                                            \
    *out = v;                                                                                      \
    return rc;                                                                                     \
  }                                                                                                \
  static int p##_encode(const void *obj, json_t **out, kcr_error_t *err) {                         \
    return T##_encode(obj, out, err);                                                              \
  }                                                                                                \
  static int p##_copy(const void *obj, void **out, kcr_error_t *err) {                             \
    T##_t *v = NULL;                                                                               \
    int rc = T##_copy(obj, &v, err);                                                               \
    *out = v;                                                                                      \
    return rc;                                                                                     \
  }                                                                                                \
  static bool p##_equal(const void *a, const void *b) {                                            \
    return T##_equal(a, b);                                                                        \
  }                                                                                                \
  static void p##_free(void *obj) {                                                                \
    T##_free(obj);                                                                                 \
  }                                                                                                \
  static const kcr_meta_v1_object_meta_t *p##_meta(const void *obj) {                              \
    return obj ? ((const T##_t *)obj)->metadata : NULL;                                            \
  }

CHILD_OPS(dep, kcr_apps_v1_deployment, kop_app_desired_deployment, kop_app_mutate_deployment)
CHILD_OPS(svc, kcr_core_v1_service, kop_app_desired_service, kop_app_mutate_service)
CHILD_OPS(cm, kcr_core_v1_config_map, kop_app_desired_configmap, kop_app_mutate_configmap)

#define CHILD_KIND(p, kind_, group, plural, suffix)                                                \
  {                                                                                                \
    kind_, {group, "v1", kind_}, {group, "v1", plural}, suffix, p##_desired, p##_mutate,           \
        p##_decode, p##_encode, p##_copy, p##_equal, p##_free, p##_meta                            \
  }

const kop_app_child_kind kop_app_children[KOP_APP_CHILDREN] = {
    CHILD_KIND(dep, "Deployment", "apps", "deployments", ""),
    CHILD_KIND(svc, "Service", "", "services", ""),
    CHILD_KIND(cm, "ConfigMap", "", "configmaps", KOP_APP_CONFIG_SUFFIX),
};

int kop_app_child_update(const kop_app_child_kind *k, const app_v1alpha1_t *app, const void *have,
                         void **after, bool *changed, kcr_error_t *err) {
  void *v = NULL;
  int rc;
  *after = NULL;
  *changed = false;
  if (!have) {
    return kcr_error_set(err, KCR_EINVAL, "app: update: no %s", k->kind);
  }
  if ((rc = k->copy(have, &v, err)) != 0) {
    return rc;
  }
  if ((rc = k->mutate(app, v, err)) != 0) {
    k->release(v);
    return rc;
  }
  *changed = !k->equal(have, v);
  *after = v;
  return 0;
}

int kop_app_directory_apply(kcr_core_v1_config_map_t *dir, const char *key, const char *want,
                            bool *changed, kcr_error_t *err) {
  size_t i = 0, n;
  char *k = NULL, *v;
  kcr_core_v1_config_map_data_entry_t *grown = NULL;
  int bad = 0;
  *changed = false;
  if (!dir || !key) {
    return kcr_error_set(err, KCR_EINVAL, "app: no directory or key");
  }
  n = dir->data_len;
  while (i < n && !streq(dir->data[i].key, key)) {
    i++;
  }
  if (!want) {
    if (i < n) {
      MAP_DEL(dir, data, key);
      *changed = true;
    }
    return 0;
  }
  if (i < n && streq(dir->data[i].value, want)) {
    return 0;
  }
  /* Everything allocated first, so that a failure leaves dir as it was. */
  v = dup(want, &bad);
  if (i == n) {
    k = dup(key, &bad);
    grown = zalloc(n + 1, sizeof(*grown), &bad);
  }
  if (bad) {
    kcr_core_v1_mem_free(v);
    kcr_core_v1_mem_free(k);
    kcr_core_v1_mem_free(grown);
    return kcr_error_set(err, KCR_ENOMEM, "app: directory: out of memory");
  }
  if (grown) {
    if (n > 0) {
      memcpy(grown, dir->data, n * sizeof(*grown));
    }
    kcr_core_v1_mem_free(dir->data);
    dir->data = grown;
    dir->data[n].key = k;
    dir->data_len = n + 1;
  } else {
    kcr_core_v1_mem_free(dir->data[i].value);
  }
  dir->data[i].value = v;
  dir->has_data = true;
  *changed = true;
  return 0;
}

int kop_app_directory_want(const app_v1alpha1_t *app, bool remove, char *key, size_t key_size,
                           char *url, size_t url_size, const char **want, kcr_error_t *err) {
  bool deleting = app->metadata && app->metadata->deletion_timestamp;
  int n;
  *want = NULL;
  if (fit(snprintf(key, key_size, "%s.%s", MD(app, namespace), MD(app, name)), key_size) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: directory key too long");
  }
  if ((n = kop_app_url(app, url, url_size)) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: url too long");
  }
  if (!remove && n > 0 && !deleting) {
    *want = url;
  }
  return 0;
}

json_t *kop_app_desired_directory(const char *ns) {
  const char *labels[][2] = {{KOP_APP_LABEL_MANAGED_BY, KOP_APP_MANAGED_BY}};
  kcr_core_v1_config_map_t *cm;
  json_t *out = NULL;
  int bad = 0;
  if (!(cm = zalloc(1, sizeof(*cm), &bad))) {
    return NULL;
  }
  cm->api_version = dup("v1", &bad);
  cm->kind = dup("ConfigMap", &bad);
  if ((cm->metadata = zalloc(1, sizeof(*cm->metadata), &bad))) {
    cm->metadata->name = dup(KOP_APP_DIRECTORY_NAME, &bad);
    cm->metadata->namespace = dup(ns, &bad);
    SET_PAIRS(cm->metadata, labels, labels, 1, bad);
  }
  cm->has_data = true; /* written as {}: the entries come later */
  if (!bad && kcr_core_v1_config_map_encode(cm, &out, NULL) != 0) {
    out = NULL;
  }
  kcr_core_v1_config_map_free(cm);
  return out;
}
