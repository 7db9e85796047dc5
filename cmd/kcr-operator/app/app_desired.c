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

/* selector_labels returns a new {name, instance} object: the pods' selector. */
static json_t *selector_labels(const json_t *app) {
  json_t *l = json_object();
  int bad = 0;
  bad |= json_object_set_new(l, KOP_APP_LABEL_NAME, json_string(kcr_meta_name(app)));
  bad |= json_object_set_new(l, KOP_APP_LABEL_INSTANCE, json_string(kcr_meta_name(app)));
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

int kop_app_selector_string(const json_t *app, char *buf, size_t size) {
  const char *name = kcr_meta_name(app);
  int n = fit(
      snprintf(buf, size, "%s=%s,%s=%s", KOP_APP_LABEL_NAME, name, KOP_APP_LABEL_INSTANCE, name),
      size);
  if (n < 0 && size > 0) {
    buf[0] = '\0';
  }
  return n;
}

int kop_app_url(const json_t *app, char *buf, size_t size) {
  int port = kop_app_port(app);
  int n;
  if (size > 0) {
    buf[0] = '\0';
  }
  if (port == 0) {
    return 0;
  }
  n = fit(
      snprintf(buf, size, "http://%s.%s.svc:%d", kcr_meta_name(app), kcr_meta_namespace(app), port),
      size);
  if (n < 0 && size > 0) {
    buf[0] = '\0';
  }
  return n;
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

int kop_app_config_hash(const json_t *app, char out[KOP_APP_CONFIG_HASH_LEN + 1],
                        kcr_error_t *err) {
  static const char hex[] = "0123456789abcdef";
  json_t *config = json_object_get(spec_of(app), "config");
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

/*
 * child_metadata returns new metadata {name, namespace, labels, ownerReferences}
 * for a child of app called name. NULL when out of memory.
 */
static json_t *child_metadata(const json_t *app, const char *name) {
  json_t *md = json_object();
  json_t *refs = json_array();
  int bad = 0;
  bad |= json_array_append_new(refs, kop_app_owner_reference(app));
  bad |= json_object_set_new(md, "name", json_string(name));
  bad |= json_object_set_new(md, "namespace", json_string(kcr_meta_namespace(app)));
  bad |= json_object_set_new(md, "labels", kop_app_labels(app));
  bad |= json_object_set_new(md, "ownerReferences", refs);
  if (bad) {
    json_decref(md);
    return NULL;
  }
  return md;
}

/* config_name writes "<name>-config" into buf. Returns 0 or KCR_ETOOBIG. */
static int config_name(const json_t *app, char *buf, size_t size) {
  int n = fit(snprintf(buf, size, "%s%s", kcr_meta_name(app), KOP_APP_CONFIG_SUFFIX), size);
  return n < 0 ? n : 0;
}

/* container_env returns the container's env list (new), NULL when out of memory. */
static json_t *container_env(const json_t *app) {
  json_t *env = json_array();
  json_t *item;
  size_t i;
  int bad = env == NULL;
  json_array_foreach(json_object_get(spec_of(app), "env"), i, item) {
    const char *name = str_field(item, "name");
    const char *value = str_field(item, "value");
    json_t *e;
    if (!name) {
      continue; /* the schema requires a name; skip rather than send an invalid Deployment */
    }
    e = json_object();
    bad |= json_object_set_new(e, "name", json_string(name));
    if (value) {
      bad |= json_object_set_new(e, "value", json_string(value));
    }
    bad |= json_array_append_new(env, e);
  }
  if (bad) {
    json_decref(env);
    return NULL;
  }
  return env;
}

/* container_resources returns {requests?, limits?} (new), NULL when out of memory. */
static json_t *container_resources(const json_t *app) {
  json_t *res = json_object_get(spec_of(app), "resources");
  json_t *out = json_object();
  int bad = out == NULL;
  static const char *const keys[] = {"requests", "limits"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    json_t *v = json_object_get(res, keys[i]);
    if (json_is_object(v) && json_object_size(v) > 0) {
      bad |= json_object_set_new(out, keys[i], json_deep_copy(v));
    }
  }
  if (bad) {
    json_decref(out);
    return NULL;
  }
  return out;
}

/* app_container returns the one container "app" (new), NULL when out of memory. */
static json_t *app_container(const json_t *app, bool with_config) {
  json_t *c = json_object();
  json_t *env = container_env(app);
  json_t *res = container_resources(app);
  int port = kop_app_port(app);
  int bad = 0;
  bad |= json_object_set_new(c, "name", json_string(KOP_APP_CONTAINER));
  bad |= json_object_set_new(c, "image", json_string(str_field(spec_of(app), "image")));
  if (env && json_array_size(env) > 0) {
    bad |= json_object_set_new(c, "env", json_incref(env));
  }
  if (res && json_object_size(res) > 0) {
    bad |= json_object_set_new(c, "resources", json_incref(res));
  }
  bad |= env == NULL || res == NULL;
  json_decref(env);
  json_decref(res);
  if (port) {
    json_t *ports = json_array();
    json_t *p = json_object();
    bad |= json_object_set_new(p, "name", json_string("http"));
    bad |= json_object_set_new(p, "containerPort", json_integer(port));
    bad |= json_object_set_new(p, "protocol", json_string("TCP"));
    bad |= json_array_append_new(ports, p);
    bad |= json_object_set_new(c, "ports", ports);
  }
  if (with_config) {
    json_t *mounts = json_array();
    json_t *m = json_object();
    bad |= json_object_set_new(m, "name", json_string(KOP_APP_CONFIG_VOLUME));
    bad |= json_object_set_new(m, "mountPath", json_string(KOP_APP_CONFIG_MOUNT));
    bad |= json_object_set_new(m, "readOnly", json_true());
    bad |= json_array_append_new(mounts, m);
    bad |= json_object_set_new(c, "volumeMounts", mounts);
  }
  if (bad) {
    json_decref(c);
    return NULL;
  }
  return c;
}

/* config_volume returns the volumes list with the config volume (new), or NULL. */
static json_t *config_volumes(const char *cm_name) {
  json_t *vols = json_array();
  json_t *v = json_object();
  json_t *cm = json_object();
  int bad = 0;
  bad |= json_object_set_new(cm, "name", json_string(cm_name));
  bad |= json_object_set_new(v, "name", json_string(KOP_APP_CONFIG_VOLUME));
  bad |= json_object_set_new(v, "configMap", cm);
  bad |= json_array_append_new(vols, v);
  if (bad) {
    json_decref(vols);
    return NULL;
  }
  return vols;
}

int kop_app_desired_deployment(const json_t *app, json_t **out, kcr_error_t *err) {
  char cm_name[320];
  char hash[KOP_APP_CONFIG_HASH_LEN + 1];
  bool with_config;
  json_t *d = NULL, *spec, *sel, *tmpl, *tmd, *pod, *containers;
  int bad = 0, rc;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0) {
    return rc;
  }
  with_config = kop_app_has_config(app);
  if (with_config) {
    if (config_name(app, cm_name, sizeof cm_name) < 0) {
      return kcr_error_set(err, KCR_ETOOBIG, "app: name too long");
    }
    if ((rc = kop_app_config_hash(app, hash, err)) < 0) {
      return rc;
    }
  }
  d = json_object();
  spec = json_object();
  sel = json_object();
  tmpl = json_object();
  tmd = json_object();
  pod = json_object();
  containers = json_array();
  bad |= json_object_set_new(d, "apiVersion", json_string("apps/v1"));
  bad |= json_object_set_new(d, "kind", json_string("Deployment"));
  bad |= json_object_set_new(d, "metadata", child_metadata(app, kcr_meta_name(app)));
  bad |= json_object_set(d, "spec", spec);
  bad |= json_object_set_new(spec, "replicas", json_integer(kop_app_replicas(app)));
  bad |= json_object_set_new(sel, "matchLabels", selector_labels(app));
  bad |= json_object_set(spec, "selector", sel);
  bad |= json_object_set(spec, "template", tmpl);
  bad |= json_object_set_new(tmd, "labels", kop_app_labels(app));
  if (with_config) {
    json_t *ann = json_object();
    bad |= json_object_set_new(ann, KOP_APP_CONFIG_HASH_ANNOTATION, json_string(hash));
    bad |= json_object_set_new(tmd, "annotations", ann);
  }
  bad |= json_object_set(tmpl, "metadata", tmd);
  bad |= json_object_set(tmpl, "spec", pod);
  bad |= json_array_append_new(containers, app_container(app, with_config));
  bad |= json_object_set(pod, "containers", containers);
  if (with_config) {
    bad |= json_object_set_new(pod, "volumes", config_volumes(cm_name));
  }
  /* The containers were attached with json_object_set (not _new) and filled after:
   * a failed attach must not free what is still being filled. Drop our references. */
  json_decref(spec);
  json_decref(sel);
  json_decref(tmpl);
  json_decref(tmd);
  json_decref(pod);
  json_decref(containers);
  if (bad) {
    json_decref(d);
    return kcr_error_set(err, KCR_ENOMEM, "app: desired deployment: out of memory");
  }
  *out = d;
  return 0;
}

int kop_app_desired_service(const json_t *app, json_t **out, kcr_error_t *err) {
  json_t *s, *spec, *ports, *p;
  int port, bad = 0, rc;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0) {
    return rc;
  }
  port = kop_app_port(app);
  if (port == 0) {
    return 0;
  }
  s = json_object();
  spec = json_object();
  ports = json_array();
  p = json_object();
  bad |= json_object_set_new(s, "apiVersion", json_string("v1"));
  bad |= json_object_set_new(s, "kind", json_string("Service"));
  bad |= json_object_set_new(s, "metadata", child_metadata(app, kcr_meta_name(app)));
  bad |= json_object_set(s, "spec", spec);
  bad |= json_object_set_new(spec, "type", json_string("ClusterIP"));
  bad |= json_object_set_new(spec, "selector", selector_labels(app));
  bad |= json_object_set_new(p, "name", json_string("http"));
  bad |= json_object_set_new(p, "protocol", json_string("TCP"));
  bad |= json_object_set_new(p, "port", json_integer(port));
  bad |= json_object_set_new(p, "targetPort", json_integer(port));
  bad |= json_array_append_new(ports, p);
  bad |= json_object_set(spec, "ports", ports);
  json_decref(spec); /* attached with json_object_set: see kop_app_desired_deployment */
  json_decref(ports);
  if (bad) {
    json_decref(s);
    return kcr_error_set(err, KCR_ENOMEM, "app: desired service: out of memory");
  }
  *out = s;
  return 0;
}

int kop_app_desired_configmap(const json_t *app, json_t **out, kcr_error_t *err) {
  char name[320];
  json_t *cm;
  int bad = 0, rc;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0) {
    return rc;
  }
  if (!kop_app_has_config(app)) {
    return 0;
  }
  if (config_name(app, name, sizeof name) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: name too long");
  }
  cm = json_object();
  bad |= json_object_set_new(cm, "apiVersion", json_string("v1"));
  bad |= json_object_set_new(cm, "kind", json_string("ConfigMap"));
  bad |= json_object_set_new(cm, "metadata", child_metadata(app, name));
  bad |= json_object_set_new(cm, "data", json_deep_copy(json_object_get(spec_of(app), "config")));
  if (bad) {
    json_decref(cm);
    return kcr_error_set(err, KCR_ENOMEM, "app: desired configmap: out of memory");
  }
  *out = cm;
  return 0;
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

int kop_app_directory_update(json_t *data, const json_t *app, bool remove, bool *changed,
                             kcr_error_t *err) {
  char key[KCR_META_KEY_MAX];
  char url[KOP_APP_URL_MAX];
  json_t *cur;
  int n;
  *changed = false;
  if (!json_is_object(data)) {
    return kcr_error_set(err, KCR_EINVAL, "app: directory data is not an object");
  }
  if (kop_app_directory_key(app, key, sizeof key) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: directory key too long");
  }
  n = kop_app_url(app, url, sizeof url);
  if (n < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: url too long");
  }
  cur = json_object_get(data, key);
  if (remove || n == 0 || kcr_meta_is_deleting(app)) {
    if (cur) {
      json_object_del(data, key);
      *changed = true;
    }
    return 0;
  }
  if (json_is_string(cur) && !strcmp(json_string_value(cur), url)) {
    return 0;
  }
  if (json_object_set_new(data, key, json_string(url)) < 0) {
    return kcr_error_set(err, KCR_ENOMEM, "app: directory: out of memory");
  }
  *changed = true;
  return 0;
}

json_t *kop_app_desired_directory(const char *ns) {
  json_t *cm = json_object();
  json_t *md = json_object();
  json_t *labels = json_object();
  int bad = 0;
  bad |= json_object_set_new(labels, KOP_APP_LABEL_MANAGED_BY, json_string(KOP_APP_MANAGED_BY));
  bad |= json_object_set_new(md, "name", json_string(KOP_APP_DIRECTORY_NAME));
  bad |= json_object_set_new(md, "namespace", json_string(ns));
  bad |= json_object_set_new(md, "labels", labels);
  bad |= json_object_set_new(cm, "apiVersion", json_string("v1"));
  bad |= json_object_set_new(cm, "kind", json_string("ConfigMap"));
  bad |= json_object_set_new(cm, "metadata", md);
  bad |= json_object_set_new(cm, "data", json_object());
  if (bad) {
    json_decref(cm);
    return NULL;
  }
  return cm;
}
