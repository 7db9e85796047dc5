/* SPDX-License-Identifier: MIT */
/*
 * app_desired.c: what an App's children should look like, and how to tell
 * whether what exists already does.
 *
 * DESIGN: every function is a pure transformation of borrowed json_t into new
 * json_t (app_desired.h). Objects are built with jansson's stealing setters, whose
 * failures (a NULL value from a failed allocation included) are counted in one
 * `bad` tally per builder, so that a builder has a single failure exit and the
 * allocation-failure tests can fail each allocation in turn. Children carry only
 * the fields the App decides; everything else is left to the API server's
 * defaults, which is why "up to date" is a subset test (desired within existing)
 * and an update is a merge over what was read (existing's server-owned fields
 * kept), never a replacement: comparing against a defaulted object for equality
 * would rewrite children on every reconcile. Empty strings the server would
 * drop (an env value "") are left out for the same reason. The config hash is
 * SHA-256 (OpenSSL EVP) of the config's canonical JSON, so key order in the App
 * does not matter.
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

/* str_field returns obj[key] when it is a non-empty string, else NULL. */
static const char *str_field(const json_t *obj, const char *key) {
  const char *s = json_string_value(json_object_get(obj, key));
  return s && *s ? s : NULL;
}

/* spec returns the App's spec (borrowed), NULL when absent. */
static json_t *spec_of(const json_t *app) {
  json_t *s = json_object_get(app, "spec");
  return json_is_object(s) ? s : NULL;
}

int kop_app_check(const json_t *app, kcr_error_t *err) {
  json_t *md = kcr_meta_metadata(app);
  json_t *spec = spec_of(app);
  json_t *v;
  if (!json_is_object(app) || !json_is_object(md)) {
    return kcr_error_set(err, KCR_EINVAL, "app: not an object with metadata");
  }
  if (!str_field(md, "name") || !str_field(md, "namespace") || !str_field(md, "uid")) {
    return kcr_error_set(err, KCR_EINVAL, "app: metadata.name, namespace and uid are required");
  }
  if (!spec || !str_field(spec, "image")) {
    return kcr_error_set(err, KCR_EINVAL, "app %s/%s: spec.image is required",
                         kcr_meta_namespace(app), kcr_meta_name(app));
  }
  v = json_object_get(spec, "replicas");
  if (v && (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000)) {
    return kcr_error_set(err, KCR_EINVAL, "app %s/%s: spec.replicas must be an integer in 0..1000",
                         kcr_meta_namespace(app), kcr_meta_name(app));
  }
  v = json_object_get(spec, "port");
  if (v && (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)) {
    return kcr_error_set(err, KCR_EINVAL, "app %s/%s: spec.port must be an integer in 1..65535",
                         kcr_meta_namespace(app), kcr_meta_name(app));
  }
  return 0;
}

int64_t kop_app_replicas(const json_t *app) {
  json_t *v = json_object_get(spec_of(app), "replicas");
  return json_is_integer(v) ? json_integer_value(v) : 1;
}

int kop_app_port(const json_t *app) {
  json_t *v = json_object_get(spec_of(app), "port");
  json_int_t p = json_is_integer(v) ? json_integer_value(v) : 0;
  return p >= 1 && p <= 65535 ? (int)p : 0;
}

bool kop_app_has_config(const json_t *app) {
  json_t *c = json_object_get(spec_of(app), "config");
  return json_is_object(c) && json_object_size(c) > 0;
}

bool kop_app_paused(const json_t *app) {
  return json_is_true(json_object_get(spec_of(app), "paused"));
}

json_t *kop_app_labels(const json_t *app) {
  json_t *l = json_object();
  int bad = 0;
  bad |= json_object_set_new(l, KOP_APP_LABEL_NAME, json_string(kcr_meta_name(app)));
  bad |= json_object_set_new(l, KOP_APP_LABEL_INSTANCE, json_string(kcr_meta_name(app)));
  bad |= json_object_set_new(l, KOP_APP_LABEL_MANAGED_BY, json_string(KOP_APP_MANAGED_BY));
  if (bad) {
    json_decref(l);
    return NULL;
  }
  return l;
}

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

int kop_app_selector_string(const json_t *app, char *buf, size_t size) {
  return selector_for(kcr_meta_name(app), buf, size);
}

int kop_app_url(const json_t *app, char *buf, size_t size) {
  return url_for(kcr_meta_name(app), kcr_meta_namespace(app), kop_app_port(app), buf, size);
}

int kop_app_directory_key(const json_t *app, char *buf, size_t size) {
  int n = fit(snprintf(buf, size, "%s.%s", kcr_meta_namespace(app), kcr_meta_name(app)), size);
  if (n < 0 && size > 0) {
    buf[0] = '\0';
  }
  return n;
}

json_t *kop_app_owner_reference(const json_t *app) {
  json_t *r = json_object();
  int bad = 0;
  bad |= json_object_set_new(r, "apiVersion", json_string(KOP_APP_API_VERSION));
  bad |= json_object_set_new(r, "kind", json_string(KOP_APP_KIND));
  bad |= json_object_set_new(r, "name", json_string(kcr_meta_name(app)));
  bad |= json_object_set_new(r, "uid", json_string(kcr_meta_uid(app)));
  bad |= json_object_set_new(r, "controller", json_true());
  bad |= json_object_set_new(r, "blockOwnerDeletion", json_true());
  if (bad) {
    json_decref(r);
    return NULL;
  }
  return r;
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

bool kop_app_owns(const json_t *app, const json_t *child) {
  json_t *ref = kcr_meta_controller_ref(child);
  const char *uid = kcr_meta_uid(app);
  if (!ref || !*uid) {
    return false;
  }
  return has_group(json_string_value(json_object_get(ref, "apiVersion")), KOP_APP_GROUP) &&
         streq(json_string_value(json_object_get(ref, "kind")), KOP_APP_KIND) &&
         streq(json_string_value(json_object_get(ref, "uid")), uid);
}

/* hash_config writes the config hash of config (borrowed; NULL: no config). */
static int hash_config(const json_t *config, char out[KOP_APP_CONFIG_HASH_LEN + 1],
                       kcr_error_t *err) {
  static const char hex[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  char *text;
  int ok;
  out[0] = '\0';
  if (json_is_object(config)) {
    text = json_dumps(config, JSON_SORT_KEYS | JSON_COMPACT);
  } else {
    json_t *empty = json_object();
    text = empty ? json_dumps(empty, JSON_COMPACT) : NULL;
    json_decref(empty);
  }
  if (!text) {
    return kcr_error_set(err, KCR_ENOMEM, "app: config hash: out of memory");
  }
  ok = EVP_Digest(text, strlen(text), md, &md_len, EVP_sha256(), NULL);
  jansson_free(text);
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

int kop_app_config_hash(const json_t *app, char out[KOP_APP_CONFIG_HASH_LEN + 1],
                        kcr_error_t *err) {
  return hash_config(json_object_get(spec_of(app), "config"), out, err);
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

int kop_app_check_typed(const app_v1alpha1_t *app, kcr_error_t *err) {
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

int kop_app_selector_of(const app_v1alpha1_t *app, char *buf, size_t size) {
  return selector_for(MD(app, name), buf, size);
}

int kop_app_url_of(const app_v1alpha1_t *app, char *buf, size_t size) {
  int port = app->spec && app->spec->has_port && app->spec->port >= 1 && app->spec->port <= 65535
                 ? (int)app->spec->port
                 : 0;
  return url_for(MD(app, name), MD(app, namespace), port, buf, size);
}

json_t *kop_app_identity(const app_v1alpha1_t *app) {
  json_t *id = json_object();
  int bad = id == NULL;
  bad = bad || json_object_set_new(
                   id, "apiVersion",
                   json_string(app->api_version ? app->api_version : KOP_APP_API_VERSION)) < 0;
  bad =
      bad || json_object_set_new(id, "kind", json_string(app->kind ? app->kind : KOP_APP_KIND)) < 0;
  if (!bad && app->metadata) {
    json_t *md = NULL;
    bad = kcr_meta_v1_object_meta_encode(app->metadata, &md, NULL) != 0 ||
          json_object_set_new(id, "metadata", md) < 0;
  } else {
    bad = bad || json_object_set_new(id, "metadata", json_object()) < 0;
  }
  if (bad) {
    json_decref(id);
    return NULL;
  }
  return id;
}

int kop_app_decode(const json_t *app, app_v1alpha1_t **out, kcr_error_t *err) {
  int rc;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0 || (rc = typed_app(app, out, err)) < 0) {
    return rc;
  }
  return 0;
}

/* encoded encodes a built child (enc over v) into *out, or reports a failed build. */
#define ENCODED(enc, freefn, v, bad, what, out, err)                                               \
  do {                                                                                             \
    int rc_ = (bad) ? KCR_ENOMEM : enc((v), (out), (err));                                         \
    freefn(v);                                                                                     \
    if (rc_ != 0) {                                                                                \
      *(out) = NULL;                                                                               \
      return (bad) ? kcr_error_set((err), KCR_ENOMEM, "app: desired " what ": out of memory")      \
                   : rc_;                                                                          \
    }                                                                                              \
    return 0;                                                                                      \
  } while (0)

/* child_metadata makes the metadata of a child of app called name (new). */
static kcr_meta_v1_object_meta_t *child_metadata(const app_v1alpha1_t *app, const char *name,
                                                 int *bad) {
  const char *app_name = MD(app, name);
  const char *labels[][2] = {{KOP_APP_LABEL_NAME, app_name},
                             {KOP_APP_LABEL_INSTANCE, app_name},
                             {KOP_APP_LABEL_MANAGED_BY, KOP_APP_MANAGED_BY}};
  kcr_meta_v1_object_meta_t *md = zalloc(1, sizeof(*md), bad);
  kcr_meta_v1_owner_reference_t *ref;
  if (!md) {
    return NULL;
  }
  md->name = dup(name, bad);
  md->namespace = dup(MD(app, namespace), bad);
  SET_PAIRS(md, labels, labels, 3, *bad);
  if (!(ref = md->owner_references = zalloc(1, sizeof(*ref), bad))) {
    return md;
  }
  md->owner_references_len = 1;
  md->has_owner_references = true;
  ref->api_version = dup(KOP_APP_API_VERSION, bad);
  ref->kind = dup(KOP_APP_KIND, bad);
  ref->name = dup(app_name, bad);
  ref->uid = dup(MD(app, uid), bad);
  ref->controller = ref->has_controller = true;
  ref->block_owner_deletion = ref->has_block_owner_deletion = true;
  return md;
}

/* config_name writes "<name>-config" into buf. Returns 0 or KCR_ETOOBIG. */
static int config_name(const app_v1alpha1_t *app, char *buf, size_t size) {
  int n = fit(snprintf(buf, size, "%s%s", MD(app, name), KOP_APP_CONFIG_SUFFIX), size);
  return n < 0 ? n : 0;
}

/* copy_quantities copies an App resources map into a container's (same shapes). */
#define COPY_QUANTITIES(dst, src, field, bad)                                                      \
  do {                                                                                             \
    if ((src)->has_##field && (src)->field##_len > 0 &&                                            \
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

/* fill_container makes c the one container "app" of the App's pods. */
static void fill_container(kcr_core_v1_container_t *c, const app_v1alpha1_spec_t *spec,
                           bool with_config, int *bad) {
  const app_v1alpha1_spec_resources_t *res = spec->resources;
  c->name = dup(KOP_APP_CONTAINER, bad);
  c->image = dup(spec->image, bad);
  if (spec->has_env && spec->env_len > 0 &&
      (c->env = zalloc(spec->env_len, sizeof(*c->env), bad))) {
    c->has_env = true;
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
  if (res && ((res->has_requests && res->requests_len) || (res->has_limits && res->limits_len)) &&
      (c->resources = zalloc(1, sizeof(*c->resources), bad))) {
    COPY_QUANTITIES(c->resources, res, requests, *bad);
    COPY_QUANTITIES(c->resources, res, limits, *bad);
  }
  if (spec->has_port && (c->ports = zalloc(1, sizeof(*c->ports), bad))) {
    c->ports_len = 1;
    c->has_ports = true;
    c->ports[0].name = dup("http", bad);
    c->ports[0].container_port = spec->port;
    c->ports[0].protocol = dup("TCP", bad);
  }
  if (with_config && (c->volume_mounts = zalloc(1, sizeof(*c->volume_mounts), bad))) {
    c->volume_mounts_len = 1;
    c->has_volume_mounts = true;
    c->volume_mounts[0].name = dup(KOP_APP_CONFIG_VOLUME, bad);
    c->volume_mounts[0].mount_path = dup(KOP_APP_CONFIG_MOUNT, bad);
    c->volume_mounts[0].read_only = c->volume_mounts[0].has_read_only = true;
  }
}

/* typed_config_hash is kop_app_config_hash over the typed App's config. */
static int typed_config_hash(const app_v1alpha1_spec_t *spec, char out[KOP_APP_CONFIG_HASH_LEN + 1],
                             kcr_error_t *err) {
  json_t *config = json_object();
  int bad = config == NULL, rc;
  for (size_t i = 0; spec->has_config && i < spec->config_len && !bad; i++) {
    bad |= json_object_set_new(config, spec->config[i].key, json_string(spec->config[i].value));
  }
  rc = bad ? kcr_error_set(err, KCR_ENOMEM, "app: config hash: out of memory")
           : hash_config(config, out, err);
  json_decref(config);
  return rc;
}

/* typed_has_config is kop_app_has_config for the typed App. */
static bool typed_has_config(const app_v1alpha1_spec_t *spec) {
  return spec->has_config && spec->config_len > 0;
}

int kop_app_desired_deployment_of(const app_v1alpha1_t *a, json_t **out, kcr_error_t *err) {
  char cm_name[320];
  char hash[KOP_APP_CONFIG_HASH_LEN + 1];
  const char *name = MD(a, name);
  const char *selector[][2] = {{KOP_APP_LABEL_NAME, name}, {KOP_APP_LABEL_INSTANCE, name}};
  const char *labels[][2] = {{KOP_APP_LABEL_NAME, name},
                             {KOP_APP_LABEL_INSTANCE, name},
                             {KOP_APP_LABEL_MANAGED_BY, KOP_APP_MANAGED_BY}};
  const char *annotations[][2] = {{KOP_APP_CONFIG_HASH_ANNOTATION, hash}};
  kcr_apps_v1_deployment_t *d = NULL;
  kcr_apps_v1_deployment_spec_t *spec;
  kcr_core_v1_pod_template_spec_t *tmpl;
  kcr_core_v1_pod_spec_t *pod;
  bool with_config;
  int bad = 0, rc;
  *out = NULL;
  if ((rc = kop_app_check_typed(a, err)) < 0) {
    return rc;
  }
  with_config = typed_has_config(a->spec);
  if (with_config && config_name(a, cm_name, sizeof cm_name) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: name too long");
  }
  if (with_config && (rc = typed_config_hash(a->spec, hash, err)) < 0) {
    return rc;
  }
  if (!(d = zalloc(1, sizeof(*d), &bad))) {
    return kcr_error_set(err, KCR_ENOMEM, "app: desired deployment: out of memory");
  }
  d->api_version = dup("apps/v1", &bad);
  d->kind = dup("Deployment", &bad);
  d->metadata = child_metadata(a, name, &bad);
  if ((spec = d->spec = zalloc(1, sizeof(*spec), &bad))) {
    spec->replicas = a->spec->has_replicas ? a->spec->replicas : 1;
    spec->has_replicas = true;
    if ((spec->selector = zalloc(1, sizeof(*spec->selector), &bad))) {
      SET_PAIRS(spec->selector, match_labels, selector, 2, bad);
    }
    tmpl = spec->template = zalloc(1, sizeof(*tmpl), &bad);
  }
  if (spec && tmpl && (tmpl->metadata = zalloc(1, sizeof(*tmpl->metadata), &bad))) {
    SET_PAIRS(tmpl->metadata, labels, labels, 3, bad);
    if (with_config) {
      SET_PAIRS(tmpl->metadata, annotations, annotations, 1, bad);
    }
  }
  if (spec && tmpl && (pod = tmpl->spec = zalloc(1, sizeof(*pod), &bad))) {
    if ((pod->containers = zalloc(1, sizeof(*pod->containers), &bad))) {
      pod->containers_len = 1;
      fill_container(&pod->containers[0], a->spec, with_config, &bad);
    }
    if (with_config && (pod->volumes = zalloc(1, sizeof(*pod->volumes), &bad))) {
      pod->volumes_len = 1;
      pod->has_volumes = true;
      pod->volumes[0].name = dup(KOP_APP_CONFIG_VOLUME, &bad);
      if ((pod->volumes[0].config_map = zalloc(1, sizeof(*pod->volumes[0].config_map), &bad))) {
        pod->volumes[0].config_map->name = dup(cm_name, &bad);
      }
    }
  }
  ENCODED(kcr_apps_v1_deployment_encode, kcr_apps_v1_deployment_free, d, bad, "deployment", out,
          err);
}

/* DESIRED_FROM_JSON defines the JSON form of a builder: check, decode, build. */
#define DESIRED_FROM_JSON(fn)                                                                      \
  int fn(const json_t *app, json_t **out, kcr_error_t *err) {                                      \
    app_v1alpha1_t *a = NULL;                                                                      \
    int rc_;                                                                                       \
    *out = NULL;                                                                                   \
    if ((rc_ = kop_app_decode(app, &a, err)) == 0) {                                               \
      rc_ = fn##_of(a, out, err);                                                                  \
    }                                                                                              \
    app_v1alpha1_free(a);                                                                          \
    return rc_;                                                                                    \
  }

DESIRED_FROM_JSON(kop_app_desired_deployment)
DESIRED_FROM_JSON(kop_app_desired_service)
DESIRED_FROM_JSON(kop_app_desired_configmap)

int kop_app_desired_service_of(const app_v1alpha1_t *app, json_t **out, kcr_error_t *err) {
  const char *name = MD(app, name);
  const char *selector[][2] = {{KOP_APP_LABEL_NAME, name}, {KOP_APP_LABEL_INSTANCE, name}};
  kcr_core_v1_service_t *s;
  kcr_core_v1_service_port_t *p;
  int port, bad = 0, rc;
  *out = NULL;
  if ((rc = kop_app_check_typed(app, err)) < 0) {
    return rc;
  }
  if (!app->spec->has_port) {
    return 0;
  }
  port = app->spec->port;
  if (!(s = zalloc(1, sizeof(*s), &bad))) {
    return kcr_error_set(err, KCR_ENOMEM, "app: desired service: out of memory");
  }
  s->api_version = dup("v1", &bad);
  s->kind = dup("Service", &bad);
  s->metadata = child_metadata(app, name, &bad);
  if ((s->spec = zalloc(1, sizeof(*s->spec), &bad))) {
    s->spec->type = dup("ClusterIP", &bad);
    SET_PAIRS(s->spec, selector, selector, 2, bad);
    if ((p = s->spec->ports = zalloc(1, sizeof(*p), &bad))) {
      s->spec->ports_len = 1;
      s->spec->has_ports = true;
      p->name = dup("http", &bad);
      p->protocol = dup("TCP", &bad);
      p->port = port;
      p->target_port.int_value = port;
      p->has_target_port = true;
    }
  }
  ENCODED(kcr_core_v1_service_encode, kcr_core_v1_service_free, s, bad, "service", out, err);
}

int kop_app_desired_configmap_of(const app_v1alpha1_t *a, json_t **out, kcr_error_t *err) {
  char name[320];
  kcr_core_v1_config_map_t *cm;
  int bad = 0, rc;
  *out = NULL;
  if ((rc = kop_app_check_typed(a, err)) < 0) {
    return rc;
  }
  if (!typed_has_config(a->spec)) {
    return 0;
  }
  if (config_name(a, name, sizeof name) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: name too long");
  }
  if (!(cm = zalloc(1, sizeof(*cm), &bad))) {
    return kcr_error_set(err, KCR_ENOMEM, "app: desired configmap: out of memory");
  }
  cm->api_version = dup("v1", &bad);
  cm->kind = dup("ConfigMap", &bad);
  cm->metadata = child_metadata(a, name, &bad);
  if ((cm->data = zalloc(a->spec->config_len, sizeof(*cm->data), &bad))) {
    cm->has_data = true;
    for (size_t i = 0; i < a->spec->config_len; i++) {
      cm->data_len = i + 1;
      cm->data[i].key = dup(a->spec->config[i].key, &bad);
      cm->data[i].value = dup(a->spec->config[i].value, &bad);
    }
  }
  ENCODED(kcr_core_v1_config_map_encode, kcr_core_v1_config_map_free, cm, bad, "configmap", out,
          err);
}

/* merge_map sets every key of src over dst[key] (created when absent). 0 or -1. */
static int merge_map(json_t *dst, const char *key, const json_t *src) {
  json_t *m;
  const char *k;
  json_t *v;
  if (!json_is_object(src)) {
    return 0;
  }
  m = json_object_get(dst, key);
  if (!json_is_object(m)) {
    m = json_object();
    if (json_object_set_new(dst, key, m) < 0) {
      return -1;
    }
  }
  json_object_foreach((json_t *)src, k, v) {
    if (json_object_set_new(m, k, json_deep_copy(v)) < 0) {
      return -1;
    }
  }
  return 0;
}

/* set_controller_ref replaces any controller reference in md with ref (borrowed). */
static int set_controller_ref(json_t *md, const json_t *ref) {
  json_t *refs = json_object_get(md, "ownerReferences");
  json_t *keep = json_array();
  json_t *r;
  size_t i;
  int bad = keep == NULL;
  const char *uid = json_string_value(json_object_get(ref, "uid"));
  json_array_foreach(refs, i, r) {
    const char *ruid = json_string_value(json_object_get(r, "uid"));
    if (json_is_true(json_object_get(r, "controller")) || (uid && ruid && !strcmp(uid, ruid))) {
      continue;
    }
    bad |= json_array_append(keep, r);
  }
  bad |= json_array_append_new(keep, json_deep_copy(ref));
  if (bad) {
    json_decref(keep);
    return -1;
  }
  return json_object_set_new(md, "ownerReferences", keep);
}

int kop_app_merge_child(const json_t *existing, const json_t *desired, json_t **out,
                        kcr_error_t *err) {
  static const char *const bodies[] = {"spec", "data"};
  json_t *m, *md, *dmd, *ref, *r;
  size_t i;
  int bad = 0;
  *out = NULL;
  if (!json_is_object(existing) || !json_is_object(desired)) {
    return kcr_error_set(err, KCR_EINVAL, "app: merge: not objects");
  }
  m = json_deep_copy(existing);
  if (!m) {
    return kcr_error_set(err, KCR_ENOMEM, "app: merge: out of memory");
  }
  md = json_object_get(m, "metadata");
  if (!json_is_object(md)) {
    md = json_object();
    bad |= json_object_set_new(m, "metadata", md);
    if (bad) { /* md was freed with the failed set */
      json_decref(m);
      return kcr_error_set(err, KCR_ENOMEM, "app: merge: out of memory");
    }
  }
  dmd = kcr_meta_metadata(desired);
  bad |= merge_map(md, "labels", json_object_get(dmd, "labels"));
  bad |= merge_map(md, "annotations", json_object_get(dmd, "annotations"));
  ref = NULL;
  json_array_foreach(json_object_get(dmd, "ownerReferences"), i, r) {
    if (json_is_true(json_object_get(r, "controller"))) {
      ref = r;
    }
  }
  if (ref && !bad) {
    bad |= set_controller_ref(md, ref);
  }
  for (i = 0; i < sizeof bodies / sizeof bodies[0] && !bad; i++) {
    json_t *want = json_object_get(desired, bodies[i]);
    json_t *have = json_object_get(m, bodies[i]);
    const char *k;
    json_t *v;
    if (!json_is_object(want)) {
      continue;
    }
    if (!json_is_object(have)) {
      bad |= json_object_set_new(m, bodies[i], json_deep_copy(want));
      continue;
    }
    if (!strcmp(bodies[i], "data")) {
      /* A ConfigMap's data is the App's config exactly: keys it dropped go too. */
      bad |= json_object_set_new(m, bodies[i], json_deep_copy(want));
      continue;
    }
    json_object_foreach(want, k, v) {
      bad |= json_object_set_new(have, k, json_deep_copy(v));
    }
  }
  if (bad) {
    json_decref(m);
    return kcr_error_set(err, KCR_ENOMEM, "app: merge: out of memory");
  }
  *out = m;
  return 0;
}

bool kop_json_subset(const json_t *want, const json_t *have) {
  if (!want) {
    return true;
  }
  if (!have || json_typeof(want) != json_typeof(have)) {
    return false;
  }
  if (json_is_object(want)) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)want, k, v) {
      if (!kop_json_subset(v, json_object_get(have, k))) {
        return false;
      }
    }
    return true;
  }
  if (json_is_array(want)) {
    size_t i;
    json_t *v;
    if (json_array_size(want) != json_array_size(have)) {
      return false;
    }
    json_array_foreach(want, i, v) {
      if (!kop_json_subset(v, json_array_get(have, i))) {
        return false;
      }
    }
    return true;
  }
  return json_equal(want, have);
}

bool kop_app_child_up_to_date(const json_t *existing, const json_t *desired) {
  json_t *dmd = kcr_meta_metadata(desired);
  json_t *emd = kcr_meta_metadata(existing);
  json_t *ref;
  size_t i;
  if (!kop_json_subset(json_object_get(dmd, "labels"), json_object_get(emd, "labels")) ||
      !kop_json_subset(json_object_get(dmd, "annotations"), json_object_get(emd, "annotations"))) {
    return false;
  }
  json_array_foreach(json_object_get(dmd, "ownerReferences"), i, ref) {
    json_t *have = kcr_meta_controller_ref(existing);
    if (json_is_true(json_object_get(ref, "controller")) && !json_equal(ref, have)) {
      return false;
    }
  }
  if (!kop_json_subset(json_object_get(desired, "spec"), json_object_get(existing, "spec"))) {
    return false;
  }
  /* data is compared exactly: a key removed from the config must go. */
  if (json_object_get(desired, "data") &&
      !json_equal(json_object_get(desired, "data"), json_object_get(existing, "data"))) {
    return false;
  }
  return true;
}

int kop_app_directory_apply(json_t *data, const char *key, const char *want, bool *changed,
                            kcr_error_t *err) {
  json_t *cur;
  *changed = false;
  if (!json_is_object(data)) {
    return kcr_error_set(err, KCR_EINVAL, "app: directory data is not an object");
  }
  cur = json_object_get(data, key);
  if (!want) {
    if (cur) {
      json_object_del(data, key);
      *changed = true;
    }
    return 0;
  }
  if (json_is_string(cur) && !strcmp(json_string_value(cur), want)) {
    return 0;
  }
  if (json_object_set_new(data, key, json_string(want)) < 0) {
    return kcr_error_set(err, KCR_ENOMEM, "app: directory: out of memory");
  }
  *changed = true;
  return 0;
}

int kop_app_directory_update(json_t *data, const json_t *app, bool remove, bool *changed,
                             kcr_error_t *err) {
  char key[KCR_META_KEY_MAX];
  char url[KOP_APP_URL_MAX];
  int n;
  *changed = false;
  if (kop_app_directory_key(app, key, sizeof key) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: directory key too long");
  }
  if ((n = kop_app_url(app, url, sizeof url)) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: url too long");
  }
  return kop_app_directory_apply(
      data, key, remove || n == 0 || kcr_meta_is_deleting(app) ? NULL : url, changed, err);
}

int kop_app_directory_want(const app_v1alpha1_t *app, bool remove, char *key, size_t key_size,
                           char *url, size_t url_size, const char **want, kcr_error_t *err) {
  bool deleting = app->metadata && app->metadata->deletion_timestamp;
  int n;
  *want = NULL;
  if (fit(snprintf(key, key_size, "%s.%s", MD(app, namespace), MD(app, name)), key_size) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: directory key too long");
  }
  if ((n = kop_app_url_of(app, url, url_size)) < 0) {
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
