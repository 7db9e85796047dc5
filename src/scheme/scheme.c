/* SPDX-License-Identifier: MIT */
/*
 * scheme.c: the kind registry. A scheme holds tens of kinds, so it is a plain
 * growable array searched linearly: lookups happen when a controller is built or
 * an object is converted, never per event, and an array keeps the borrowed entries
 * simple (entries are never moved once the scheme is shared: registration happens
 * before, as the header says). Strings are copied into one allocation per entry.
 *
 * An entry's resource and namespaced are deprecated (kind -> resource is the REST
 * mapper's alone): they are stored as given so old readers keep their answers,
 * and read only between DEPRECATED_OK_BEGIN and _END, in this file.
 */
#include <stdio.h>
#include <string.h>

#include "kcr/meta.h"
#include "kcr/scheme.h"
#include "scheme/scheme_internal.h"
#include "util/alloc.h"

#define DEPRECATED_OK_BEGIN                                                                        \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"")
#define DEPRECATED_OK_END _Pragma("GCC diagnostic pop")

typedef struct entry {
  kcr_kind_info info; /* strings point into text */
  char *text;
} entry_t;

struct kcr_scheme {
  entry_t **entries;
  size_t n, cap;
};

static int make_scheme(kcr_scheme_t **out) {
  *out = kcr__calloc(1, sizeof(**out));
  return *out ? 0 : KCR_ENOMEM;
}

int kcr_scheme_create(kcr_scheme_t **out, kcr_error_t *err) {
  int rc = make_scheme(out);
  if (rc)
    kcr_error_set(err, rc, "scheme: %s", rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

void kcr_scheme_destroy(kcr_scheme_t *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++) {
    kcr__free(s->entries[i]->text);
    kcr__free(s->entries[i]);
  }
  kcr__free(s->entries);
  kcr__free(s);
}

static int streq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

const kcr_kind_info *kcr_scheme_lookup_gvk(const kcr_scheme_t *s, const kcr_gvk *gvk) {
  if (!gvk || !gvk->kind)
    return NULL;
  for (size_t i = 0; i < s->n; i++) {
    const kcr_kind_info *k = &s->entries[i]->info;
    if (streq(k->group, gvk->group) && streq(k->kind, gvk->kind) &&
        (!gvk->version || !*gvk->version || streq(k->version, gvk->version)))
      return k;
  }
  return NULL;
}

const kcr_kind_info *kcr_scheme_lookup(const kcr_scheme_t *s, const char *group,
                                       const char *version, const char *kind) {
  kcr_gvk gvk = {group, version, kind};
  return kcr_scheme_lookup_gvk(s, &gvk);
}

DEPRECATED_OK_BEGIN
const kcr_kind_info *kcr_scheme_lookup_resource(const kcr_scheme_t *s, const kcr_gvr *r) {
  if (!r || !r->resource || !*r->resource)
    return NULL;
  for (size_t i = 0; i < s->n; i++) {
    const kcr_kind_info *k = &s->entries[i]->info;
    if (k->resource && streq(k->group, r->group) && streq(k->version, r->version) &&
        streq(k->resource, r->resource))
      return k;
  }
  return NULL;
}
DEPRECATED_OK_END

int kcr_scheme_register(kcr_scheme_t *s, const kcr_kind_info *info, kcr_error_t *err) {
  const char *group = info->group ? info->group : "";
  char list_kind[300];
  size_t lens[5], total = 0;
  const char *parts[5];
  entry_t *e;
  char *p;
  kcr_gvr r;
  kcr_gvk gvk;
  int codecs;

  DEPRECATED_OK_BEGIN
  const char *resource = info->resource && *info->resource ? info->resource : NULL;
  DEPRECATED_OK_END
  codecs = !!info->decode + !!info->encode + !!info->free_typed;
  if (!info->version || !*info->version || !info->kind || !*info->kind ||
      (codecs != 0 && codecs != 3))
    return kcr_error_set(err, KCR_EINVAL,
                         "scheme: a kind needs a version and a kind, and a codec needs decode, "
                         "encode and free (%s/%s %s)",
                         group, info->version ? info->version : "", info->kind ? info->kind : "");
  r = (kcr_gvr){group, info->version, resource};
  gvk = (kcr_gvk){group, info->version, info->kind};
  DEPRECATED_OK_BEGIN
  if (kcr_scheme_lookup_gvk(s, &gvk) || (resource && kcr_scheme_lookup_resource(s, &r)))
    return kcr_error_set(err, KCR_EEXIST, "scheme: %s%s%s, Kind=%s%s%s%s is registered already",
                         group, *group ? "/" : "", info->version, info->kind,
                         resource ? " (resource " : "", resource ? resource : "",
                         resource ? ")" : "");
  DEPRECATED_OK_END
  snprintf(list_kind, sizeof(list_kind), "%s%s", info->list_kind ? info->list_kind : info->kind,
           info->list_kind ? "" : "List");
  parts[0] = group;
  parts[1] = info->version;
  parts[2] = info->kind;
  parts[3] = resource ? resource : "";
  parts[4] = list_kind;
  for (int i = 0; i < 5; i++)
    total += (lens[i] = strlen(parts[i])) + 1;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 32;
    entry_t **grown = kcr__realloc(s->entries, cap * sizeof(entry_t *));
    if (!grown)
      return kcr_error_set(err, KCR_ENOMEM, "scheme: out of memory");
    s->entries = grown;
    s->cap = cap;
  }
  e = kcr__calloc(1, sizeof(*e));
  if (e)
    e->text = kcr__malloc(total);
  if (!e || !e->text) {
    kcr__free(e);
    return kcr_error_set(err, KCR_ENOMEM, "scheme: out of memory");
  }
  e->info = *info;
  p = e->text;
  for (int i = 0; i < 5; i++) {
    memcpy(p, parts[i], lens[i] + 1);
    parts[i] = p;
    p += lens[i] + 1;
  }
  e->info.group = parts[0];
  e->info.version = parts[1];
  e->info.kind = parts[2];
  DEPRECATED_OK_BEGIN
  e->info.resource = resource ? parts[3] : NULL;
  DEPRECATED_OK_END
  e->info.list_kind = parts[4];
  s->entries[s->n++] = e;
  return 0;
}

int kcr_scheme_add_builtins(kcr_scheme_t *s, kcr_error_t *err) {
  static const struct {
    const char *group, *version, *kind, *resource;
    bool namespaced;
  } builtins[] = {
      {"", "v1", "ConfigMap", "configmaps", true},
      {"", "v1", "Secret", "secrets", true},
      {"", "v1", "Service", "services", true},
      {"", "v1", "Pod", "pods", true},
      {"", "v1", "Namespace", "namespaces", false},
      {"", "v1", "ServiceAccount", "serviceaccounts", true},
      {"", "v1", "Event", "events", true},
      {"", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true},
      {"", "v1", "Node", "nodes", false},
      {"apps", "v1", "Deployment", "deployments", true},
      {"apps", "v1", "StatefulSet", "statefulsets", true},
      {"apps", "v1", "DaemonSet", "daemonsets", true},
      {"apps", "v1", "ReplicaSet", "replicasets", true},
      {"batch", "v1", "Job", "jobs", true},
      {"coordination.k8s.io", "v1", "Lease", "leases", true},
      {"events.k8s.io", "v1", "Event", "events", true},
      {"rbac.authorization.k8s.io", "v1", "Role", "roles", true},
      {"rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true},
      {"rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false},
      {"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false},
      {"apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
       false},
  };
  for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
    kcr_kind_info k;
    int rc;
    memset(&k, 0, sizeof(k));
    k.group = builtins[i].group;
    k.version = builtins[i].version;
    k.kind = builtins[i].kind;
    DEPRECATED_OK_BEGIN
    k.resource = builtins[i].resource;
    k.namespaced = builtins[i].namespaced;
    DEPRECATED_OK_END
    if ((rc = kcr_scheme_register(s, &k, err)) != 0)
      return rc;
  }
  return 0;
}

const kcr_kind_info *kcr_scheme_kind_of(const kcr_scheme_t *s, const json_t *obj) {
  char group[KCR_GVK_GROUP_MAX];
  kcr_gvk gvk;
  if (kcr_meta_gvk(obj, &gvk, group, sizeof(group)) != 0)
    return NULL;
  return kcr_scheme_lookup_gvk(s, &gvk);
}

kcr_gvk kcr_kind_info_gvk(const kcr_kind_info *k) {
  kcr_gvk g = {k->group, k->version, k->kind};
  return g;
}

DEPRECATED_OK_BEGIN
kcr_gvr kcr_kind_info_gvr(const kcr_kind_info *k) {
  kcr_gvr r = {k->group, k->version, k->resource};
  return r;
}
DEPRECATED_OK_END

static const char *or_none(const char *s) {
  return s ? s : "none";
}

int kcr_scheme_decode(const kcr_scheme_t *s, const json_t *obj, void **out, kcr_error_t *err) {
  const kcr_kind_info *k = kcr_scheme_kind_of(s, obj);
  *out = NULL;
  if (!k)
    return kcr_error_set(err, KCR_ENOENT, "scheme: the object's kind (%s, %s) is not registered",
                         or_none(json_string_value(json_object_get(obj, "apiVersion"))),
                         or_none(json_string_value(json_object_get(obj, "kind"))));
  if (!k->decode)
    return kcr_error_set(err, KCR_ENOTSUP, "scheme: kind %s has no typed codec", k->kind);
  return k->decode(obj, out, err, k->codec_data);
}

int kcr_scheme_encode(const kcr_kind_info *k, const void *typed, json_t **out, kcr_error_t *err) {
  char av[600];
  int rc;
  *out = NULL;
  if (!k->encode)
    return kcr_error_set(err, KCR_ENOTSUP, "scheme: kind %s has no typed codec", k->kind);
  if ((rc = k->encode(typed, out, err, k->codec_data)) != 0)
    return rc;
  if (!json_is_object(*out)) {
    json_decref(*out);
    *out = NULL;
    return kcr_error_set(err, KCR_EPROTO, "scheme: the encoder of %s did not make an object",
                         k->kind);
  }
  snprintf(av, sizeof(av), "%s%s%s", k->group, *k->group ? "/" : "", k->version);
  if (json_object_set_new(*out, "apiVersion", json_string(av)) ||
      json_object_set_new(*out, "kind", json_string(k->kind))) {
    json_decref(*out);
    *out = NULL;
    return kcr_error_set(err, KCR_ENOMEM, "scheme: out of memory");
  }
  return 0;
}

void kcr_scheme_free_typed(const kcr_kind_info *k, void *typed) {
  if (typed && k->free_typed)
    k->free_typed(typed, k->codec_data);
}

/* ---- typed objects through an object client ---- */

int kcr__scheme_codec_of(const kcr_scheme_t *s, const kcr_gvk *gvk, const kcr_kind_info **k,
                         kcr_error_t *err) {
  *k = kcr_scheme_lookup_gvk(s, gvk);
  if (!*k) {
    kcr_error_set(err, KCR_ENOENT, "scheme: kind %s is not registered",
                  gvk && gvk->kind ? gvk->kind : "(none)");
    return KCR_ENOENT;
  }
  if (!(*k)->decode) {
    kcr_error_set(err, KCR_ENOTSUP, "scheme: kind %s has no typed codec", (*k)->kind);
    *k = NULL;
    return KCR_ENOTSUP;
  }
  return 0;
}

/* decoded turns obj (stolen) into a typed value of k in *out. */
static int decoded(const kcr_kind_info *k, json_t *obj, void **out, kcr_error_t *err) {
  int rc = k->decode(obj, out, err, k->codec_data);
  json_decref(obj);
  if (rc)
    *out = NULL;
  return rc;
}

int kcr_typed_get(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk, const char *ns,
                  const char *name, void **out, kcr_error_t *err) {
  const kcr_kind_info *k;
  json_t *obj = NULL;
  int rc;
  *out = NULL;
  if ((rc = kcr__scheme_codec_of(s, gvk, &k, err)) != 0)
    return rc;
  if ((rc = kcr_objclient_get(c, gvk, ns, name, &obj, err)) != 0)
    return rc;
  return decoded(k, obj, out, err);
}

int kcr_typed_watch_next(kcr_objwatch_t *w, const kcr_scheme_t *s, const kcr_gvk *gvk,
                         int64_t timeout_ns, kcr_watch_event_type *type, void **out,
                         kcr_error_t *err) {
  const kcr_kind_info *k;
  kcr_watch_event ev;
  int rc;
  *out = NULL;
  *type = 0;
  if ((rc = kcr__scheme_codec_of(s, gvk, &k, err)) != 0)
    return rc;
  if ((rc = kcr_objwatch_next(w, timeout_ns, &ev, err)) != 0)
    return rc;
  *type = ev.type;
  if (ev.type == KCR_WATCH_ERROR) {
    if (err && err->code == KCR_OK && ev.error)
      *err = *ev.error;
    json_decref(ev.object);
    return ev.error ? ev.error->code : KCR_EAPI;
  }
  if (ev.type == KCR_WATCH_BOOKMARK) {
    json_decref(ev.object);
    return 0;
  }
  return decoded(k, ev.object, out, err);
}

void kcr_typed_list_free(const kcr_scheme_t *s, const kcr_gvk *gvk, void **items, size_t n) {
  const kcr_kind_info *k;
  if (!items)
    return;
  k = kcr_scheme_lookup_gvk(s, gvk);
  for (size_t i = 0; i < n && k; i++)
    kcr_scheme_free_typed(k, items[i]);
  kcr__free(items);
}

int kcr_typed_list(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                   const kcr_list_options *o, void ***items, size_t *n, kcr_error_t *err) {
  const kcr_kind_info *k;
  json_t *list = NULL, *item;
  void **v = NULL;
  size_t i, count;
  int rc = 0;
  *items = NULL;
  *n = 0;
  if ((rc = kcr__scheme_codec_of(s, gvk, &k, err)) != 0)
    return rc;
  if ((rc = kcr_objclient_list(c, gvk, o, &list, err)) != 0)
    return rc;
  count = json_array_size(kcr_list_items(list));
  if (count == 0) {
    json_decref(list);
    return 0;
  }
  if (!(v = kcr__calloc(count, sizeof(*v)))) {
    json_decref(list);
    return kcr_error_set(err, KCR_ENOMEM, "scheme: out of memory");
  }
  json_array_foreach(kcr_list_items(list), i, item) {
    if ((rc = k->decode(item, &v[i], err, k->codec_data)) != 0) {
      v[i] = NULL;
      break;
    }
  }
  json_decref(list);
  if (rc) {
    kcr_typed_list_free(s, gvk, v, i);
    return rc;
  }
  *items = v;
  *n = count;
  return 0;
}

int kcr_typed_create(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                     const void *typed, void **out, kcr_error_t *err) {
  const kcr_kind_info *k;
  json_t *obj = NULL, *got = NULL;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = kcr__scheme_codec_of(s, gvk, &k, err)) != 0)
    return rc;
  if ((rc = kcr_scheme_encode(k, typed, &obj, err)) != 0)
    return rc;
  rc = kcr_objclient_create(c, obj, out ? &got : NULL, err);
  json_decref(obj);
  return rc || !out ? rc : decoded(k, got, out, err);
}

int kcr_typed_update(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                     const void *typed, const char *subresource, void **out, kcr_error_t *err) {
  const kcr_kind_info *k;
  json_t *obj = NULL, *got = NULL;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = kcr__scheme_codec_of(s, gvk, &k, err)) != 0)
    return rc;
  if ((rc = kcr_scheme_encode(k, typed, &obj, err)) != 0)
    return rc;
  rc = kcr_objclient_update(c, obj, subresource, out ? &got : NULL, err);
  json_decref(obj);
  return rc || !out ? rc : decoded(k, got, out, err);
}

int kcr_typed_delete(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                     const void *typed, const kcr_delete_options *o, kcr_error_t *err) {
  const kcr_kind_info *k;
  json_t *obj = NULL;
  int rc;
  if ((rc = kcr__scheme_codec_of(s, gvk, &k, err)) != 0)
    return rc;
  if ((rc = kcr_scheme_encode(k, typed, &obj, err)) != 0)
    return rc;
  rc = kcr_objclient_delete(c, obj, o, err);
  json_decref(obj);
  return rc;
}

int kcr_typed_patch(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                    const void *typed, kcr_patch_type type, const char *patch, size_t patch_len,
                    const char *subresource, void **out, kcr_error_t *err) {
  const kcr_kind_info *k;
  json_t *obj = NULL, *got = NULL;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = kcr__scheme_codec_of(s, gvk, &k, err)) != 0)
    return rc;
  if ((rc = kcr_scheme_encode(k, typed, &obj, err)) != 0)
    return rc;
  rc = kcr_objclient_patch(c, obj, type, patch, patch_len, subresource, out ? &got : NULL, err);
  json_decref(obj);
  return rc || !out ? rc : decoded(k, got, out, err);
}
