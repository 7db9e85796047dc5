/* SPDX-License-Identifier: MIT */
/*
 * fake_client.c: the fake object client (kcr/testing.h), an object tracker
 * behind kcr_objclient_ops, as controller-runtime's pkg/client/fake.
 *
 * DESIGN. One mutex guards a flat array of (key, object) pairs, the key being
 * "group \x1f kind \x1f namespace \x1f name"; lookups are linear and lists sort
 * what they select. A fake holds the handful of objects a unit test seeds, so
 * simplicity wins over an index. The stored object is the tracker's own tree:
 * everything going in is deep-copied first, everything coming out is a deep
 * copy, so callers never share a tree with it. Every write goes through
 * commit(), which applies the API server's rules that do not depend on the verb:
 * immutable metadata kept, the status subresource kept apart, generation
 * bumped on a spec change, a no-op write left unversioned, the last finalizer
 * of a deleting object releasing it. Errors are built as metav1.Status objects
 * and read back through the client's own decoder (client/apierror.c), so a test
 * sees exactly the kcr_error_t a real server's answer would give.
 * Interceptors run before the lock is taken, so they may call the client.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/fieldsel_internal.h"
#include "cache/store_internal.h"
#include "client/apierror_internal.h"
#include "kcr/apierror.h"
#include "kcr/buf.h"
#include "kcr/controllerutil.h"
#include "kcr/meta.h"
#include "kcr/rand.h"
#include "kcr/testing.h"
#include "kcr/time.h"
#include "testing/fake_smp_internal.h"
#include "util/alloc.h"

typedef struct item {
  char *key;
  json_t *obj; /* the tracker's own tree */
} item_t;

/* fake_index: a field index (kcr_fake_client_add_index), run on demand. */
typedef struct fake_index {
  char *gk; /* "group \x1f kind" */
  char *name;
  kcr_index_fn fn;
  void *data;
} fake_index_t;

typedef struct interceptor {
  kcr_fake_intercept_cb cb;
  void *data;
} interceptor_t;

/* fake_event: one change, as the watch history keeps it. */
typedef struct fake_event {
  unsigned long long rv;     /* the version the change made */
  char *key;                 /* the item's key */
  kcr_watch_event_type type; /* ADDED, MODIFIED or DELETED */
  json_t *before;            /* MODIFIED: the state it replaced (selection changes); else NULL */
  json_t *after;             /* the state it made (DELETED: the last, at the deletion's version) */
} fake_event_t;

typedef struct fake_watch fake_watch_t;

struct kcr_fake_client {
  pthread_mutex_t mu;
  kcr_clock_t *clock;                  /* immutable */
  item_t *items;                       /* protected by mu */
  size_t n, cap;                       /* protected by mu */
  unsigned long long rv;               /* protected by mu: the last resourceVersion given */
  uint64_t rand;                       /* protected by mu */
  interceptor_t icpt[KCR_FAKE_VERBS];  /* protected by mu */
  uint64_t calls[KCR_FAKE_VERBS];      /* protected by mu */
  fake_index_t *idx;                   /* protected by mu */
  size_t nidx;                         /* protected by mu */
  bool status_per_kind;                /* protected by mu: WithStatusSubresource was called */
  char **status_kinds;                 /* protected by mu: "group \x1f kind" registered */
  size_t nstatus;                      /* protected by mu */
  fake_event_t *hist;                  /* protected by mu: a ring of the last changes */
  size_t hist_max, hist_start, hist_n; /* protected by mu */
  unsigned long long hist_floor;       /* protected by mu: versions up to it are not kept */
  fake_watch_t **watches;              /* protected by mu: the open watches */
  size_t nwatches, capwatches;         /* protected by mu */
  bool return_managed_fields;          /* protected by mu: answers keep managedFields */
};

/*
 * by_t: who writes, for metadata.managedFields (fake_fields.c): the field
 * manager (never NULL), an apply or an update, force, and for an apply the
 * managers prepared by kcr__mf_apply_prepare (borrowed; NULL for an update,
 * whose managers commit reads as the server does).
 */
typedef struct by {
  const char *manager;
  bool apply, force;
  json_t *managers;
  const char *subresource; /* the entry's, when commit is not told it ("scale") */
} by_t;

/* KCR__FAKE_DEFAULT_MANAGER: the manager of a write that names none, as the
 * API server derives it from kcr's User-Agent ("kcr/<version> (linux)"). */
#define KCR__FAKE_DEFAULT_MANAGER "kcr"

/* KCR__FAKE_WATCH_HISTORY: the changes a fake keeps for watches that start
 * at a version (kcr_fake_client_set_watch_history). */
#define KCR__FAKE_WATCH_HISTORY 1024

static void emit(kcr_fake_client_t *f, kcr_watch_event_type type, const char *key, json_t *before,
                 const json_t *after);

/* ---- errors as the API server words them ---- */

int kcr_fake_error(kcr_error_t *err, int http_status, const char *reason, const char *fmt, ...) {
  char msg[KCR_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  /* va_start is the line above; clang-tidy 14's analyzer loses it on some
   * paths into this function */
  /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (!err || err->code != KCR_OK)
    return KCR_EAPI;
  kcr_error_clear(err);
  err->code = KCR_EAPI;
  err->http_status = http_status;
  snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
  snprintf(err->message, sizeof(err->message), "%s", msg);
  return KCR_EAPI;
}

/* who names an object in error messages: its resource, group-qualified. */
typedef struct who {
  char resource[400]; /* "deployments.apps" */
  char group[KCR_GVK_GROUP_MAX];
  char kind[128];
  const char *name;
} who_t;

/* guess_resource lowercases kind into its plural as apimachinery's
 * UnsafeGuessKindToResource does (Endpoints -> endpoints, Policy -> policies). */
static void guess_resource(const char *kind, char *out, size_t size) {
  char lower[128];
  size_t n = 0;
  for (; kind[n] && n + 1 < sizeof(lower); n++)
    lower[n] = (char)tolower((unsigned char)kind[n]);
  lower[n] = '\0';
  if (n == 0)
    snprintf(out, size, "%s", "");
  else if (n >= 9 && strcmp(lower + n - 9, "endpoints") == 0)
    snprintf(out, size, "%s", lower); /* its unpluralized suffix */
  else if (lower[n - 1] == 's')
    snprintf(out, size, "%ses", lower);
  else if (lower[n - 1] == 'y') {
    lower[n - 1] = '\0';
    snprintf(out, size, "%sies", lower);
  } else
    snprintf(out, size, "%ss", lower);
}

static void who_init(who_t *w, const char *group, const char *kind, const char *name) {
  char plural[140];
  guess_resource(kind, plural, sizeof(plural));
  if (group && *group)
    snprintf(w->resource, sizeof(w->resource), "%s.%s", plural, group);
  else
    snprintf(w->resource, sizeof(w->resource), "%s", plural);
  snprintf(w->group, sizeof(w->group), "%s", group ? group : "");
  snprintf(w->kind, sizeof(w->kind), "%s", kind);
  w->name = name ? name : "";
}

/* api_error fills err from a metav1.Status built as the server builds it. */
static int api_error(kcr_error_t *err, int code, const char *reason, const who_t *w,
                     const char *fmt, ...) KCR_PRINTF(5, 6);
static int api_error(kcr_error_t *err, int code, const char *reason, const who_t *w,
                     const char *fmt, ...) {
  char msg[KCR_ERROR_MESSAGE_MAX];
  json_t *st;
  va_list ap;
  int rc;
  va_start(ap, fmt);
  /* va_start is the line above; clang-tidy 14's analyzer loses it on some
   * paths into this function */
  /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (!err || err->code != KCR_OK)
    return KCR_EAPI;
  st = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                 "metadata", "status", "Failure", "message", msg, "reason", reason, "code", code);
  if (st && w) {
    char plural[140];
    guess_resource(w->kind, plural, sizeof(plural));
    json_object_set_new(
        st, "details",
        json_pack("{s:s, s:s, s:s}", "name", w->name, "group", w->group, "kind", plural));
  }
  if (!st)
    return kcr_error_set(err, KCR_ENOMEM, "fake client: out of memory");
  rc = kcr__error_from_status(err, st, code);
  json_decref(st);
  return rc;
}

static int not_found(kcr_error_t *err, const who_t *w) {
  return api_error(err, 404, "NotFound", w, "%s \"%s\" not found", w->resource, w->name);
}

static int conflict(kcr_error_t *err, const who_t *w, const char *why) {
  return api_error(err, 409, "Conflict", w, "Operation cannot be fulfilled on %s \"%s\": %s",
                   w->resource, w->name, why);
}

static int invalid(kcr_error_t *err, const who_t *w, const char *why) {
  char kind[400];
  if (*w->group)
    snprintf(kind, sizeof(kind), "%s.%s", w->kind, w->group);
  else
    snprintf(kind, sizeof(kind), "%s", w->kind);
  return api_error(err, 422, "Invalid", w, "%s \"%s\" is invalid: %s", kind, w->name, why);
}

static int bad_request(kcr_error_t *err, const char *msg) {
  return api_error(err, 400, "BadRequest", NULL, "%s", msg);
}

static int oom(kcr_error_t *err) {
  return kcr_error_set(err, KCR_ENOMEM, "fake client: out of memory");
}

/* ---- keys and lookups (mu held) ---- */

static char *make_key(const char *group, const char *kind, const char *ns, const char *name) {
  size_t len = strlen(group) + strlen(kind) + strlen(ns) + strlen(name) + 4;
  char *k = kcr__malloc(len);
  if (k)
    snprintf(k, len, "%s\x1f%s\x1f%s\x1f%s", group, kind, ns, name);
  return k;
}

static item_t *find(kcr_fake_client_t *f, const char *key) {
  for (size_t i = 0; i < f->n; i++)
    if (strcmp(f->items[i].key, key) == 0)
      return &f->items[i];
  return NULL;
}

static void remove_item(kcr_fake_client_t *f, item_t *it) {
  size_t i = (size_t)(it - f->items);
  kcr__free(it->key);
  json_decref(it->obj);
  memmove(&f->items[i], &f->items[i + 1], (f->n - i - 1) * sizeof(*f->items));
  f->n--;
}

/* insert steals key and obj on every path. */
static int insert(kcr_fake_client_t *f, char *key, json_t *obj) {
  if (f->n == f->cap) {
    size_t cap = f->cap ? f->cap * 2 : 16;
    item_t *items = kcr__realloc(f->items, cap * sizeof(*items));
    if (!items) {
      kcr__free(key);
      json_decref(obj);
      return KCR_ENOMEM;
    }
    f->items = items;
    f->cap = cap;
  }
  f->items[f->n].key = key;
  f->items[f->n].obj = obj;
  f->n++;
  return 0;
}

/* obj_id reads what names obj: its group, kind, namespace, name. */
typedef struct obj_id {
  char group[KCR_GVK_GROUP_MAX];
  const char *kind, *ns, *name;
} obj_id;

static int obj_id_of(const json_t *obj, obj_id *id, kcr_error_t *err) {
  const char *api_version = kcr_meta_api_version(obj);
  const char *g;
  size_t glen = 0;
  id->group[0] = '\0';
  id->kind = kcr_meta_kind(obj);
  id->ns = kcr_meta_namespace(obj);
  id->name = kcr_meta_name(obj);
  if (!json_is_object(obj) || !api_version || !*api_version || !id->kind || !*id->kind)
    return kcr_error_set(err, KCR_EINVAL, "fake client: the object needs apiVersion and kind");
  g = kcr_api_version_group(api_version, &glen);
  if (glen >= sizeof(id->group))
    return kcr_error_set(err, KCR_EINVAL, "fake client: API group too long");
  memcpy(id->group, g ? g : "", g ? glen : 0);
  id->group[g ? glen : 0] = '\0';
  if (!id->ns)
    id->ns = "";
  if (!id->name)
    id->name = "";
  return 0;
}

/* ---- small JSON helpers ---- */

static const char *str_at(const json_t *obj, const char *a, const char *b) {
  return json_string_value(json_object_get(json_object_get(obj, a), b));
}

static json_t *md_of(json_t *obj) {
  json_t *md = json_object_get(obj, "metadata");
  if (!json_is_object(md)) {
    md = json_object();
    if (!md || json_object_set_new(obj, "metadata", md) != 0)
      return NULL;
  }
  return md;
}

/* set_field copies field of from into to (removes it from to when from has none). */
static int keep_field(json_t *to, const json_t *from, const char *field) {
  json_t *v = json_object_get(from, field);
  if (v)
    return json_object_set_new(to, field, json_deep_copy(v));
  json_object_del(to, field);
  return 0;
}

static void now_text(kcr_fake_client_t *f, char *buf, size_t size) {
  if (kcr_time_format(kcr_clock_wall(f->clock), KCR_TIME_SECONDS, buf, size) < 0)
    snprintf(buf, size, "%s", "1970-01-01T00:00:00Z");
}

/* shown drops metadata.managedFields from obj (a copy being handed out) unless
 * the fake returns them; returns obj. mu held. */
static json_t *shown(const kcr_fake_client_t *f, json_t *obj) {
  if (obj && !f->return_managed_fields)
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
  return obj;
}

static int next_rv(kcr_fake_client_t *f, json_t *md) {
  char rv[32];
  snprintf(rv, sizeof(rv), "%llu", ++f->rv);
  return json_object_set_new(md, "resourceVersion", json_string(rv));
}

/* fill_new gives a new object uid, creationTimestamp, generation (when absent
 * or when force), then a resourceVersion. */
static int fill_new(kcr_fake_client_t *f, json_t *obj, bool force) {
  json_t *md = md_of(obj);
  char t[KCR_TIME_BUFSIZE], uid[KCR_UUID_BUFSIZE];
  int rc = 0;
  if (!md)
    return KCR_ENOMEM;
  if (force || !json_is_string(json_object_get(md, "uid"))) {
    if (kcr_uuid_v4(uid) != 0)
      return KCR_ESYS;
    rc |= json_object_set_new(md, "uid", json_string(uid));
  }
  if (force || !json_object_get(md, "creationTimestamp")) {
    now_text(f, t, sizeof(t));
    rc |= json_object_set_new(md, "creationTimestamp", json_string(t));
  }
  if (force || !json_is_integer(json_object_get(md, "generation")))
    rc |= json_object_set_new(md, "generation", json_integer(1));
  return rc ? KCR_ENOMEM : 0;
}

/* spec_equal: obj and other are equal outside metadata and status. */
static bool spec_equal(const json_t *a, const json_t *b) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)a, k, v) {
    if (strcmp(k, "metadata") == 0 || strcmp(k, "status") == 0)
      continue;
    if (!json_equal(v, json_object_get(b, k)))
      return false;
  }
  json_object_foreach((json_t *)b, k, v) {
    if (strcmp(k, "metadata") == 0 || strcmp(k, "status") == 0)
      continue;
    if (!json_object_get(a, k))
      return false;
  }
  return true;
}

static bool str_in(const json_t *arr, const char *s) {
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v) {
    if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
      return true;
  }
  return false;
}

/* ---- which kinds have which subresources ---- */

/* gk_pair: a kind by API group and name. */
typedef struct gk_pair {
  const char *group, *kind;
} gk_pair;

/* The built-in kinds served with a status subresource (those
 * controller-runtime's fake client gives one by default). */
static const gk_pair in_tree_status[] = {
    {"", "Namespace"},
    {"", "Node"},
    {"", "PersistentVolumeClaim"},
    {"", "PersistentVolume"},
    {"", "Pod"},
    {"", "ReplicationController"},
    {"", "Service"},
    {"apps", "Deployment"},
    {"apps", "DaemonSet"},
    {"apps", "ReplicaSet"},
    {"apps", "StatefulSet"},
    {"autoscaling", "HorizontalPodAutoscaler"},
    {"batch", "CronJob"},
    {"batch", "Job"},
    {"certificates.k8s.io", "CertificateSigningRequest"},
    {"networking.k8s.io", "Ingress"},
    {"networking.k8s.io", "NetworkPolicy"},
    {"policy", "PodDisruptionBudget"},
    {"storage.k8s.io", "VolumeAttachment"},
    {"apiextensions.k8s.io", "CustomResourceDefinition"},
    {"flowcontrol.apiserver.k8s.io", "FlowSchema"},
    {"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"},
};

/* The built-in kinds with a scale subresource the fake answers. */
static const gk_pair scale_kinds[] = {{"apps", "Deployment"},
                                      {"apps", "ReplicaSet"},
                                      {"apps", "StatefulSet"},
                                      {"", "ReplicationController"}};

static bool pair_in(const gk_pair *list, size_t n, const char *group, const char *kind) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i].group, group ? group : "") == 0 && strcmp(list[i].kind, kind) == 0)
      return true;
  return false;
}

/* gk_text writes "group \x1f kind", the key prefix of a kind. */
static void gk_text(const char *group, const char *kind, char *buf, size_t size) {
  snprintf(buf, size, "%s\x1f%s", group ? group : "", kind ? kind : "");
}

static bool gk_in(const char *const *list, size_t n, const char *gk) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(list[i], gk) == 0)
      return true;
  return false;
}

/* has_status: whether the kind has a status subresource (mu held). */
static bool has_status(const kcr_fake_client_t *f, const char *group, const char *kind) {
  char gk[KCR_GVK_GROUP_MAX + 160];
  if (!f->status_per_kind)
    return true;
  gk_text(group, kind, gk, sizeof(gk));
  return pair_in(in_tree_status, sizeof(in_tree_status) / sizeof(in_tree_status[0]), group, kind) ||
         gk_in((const char *const *)f->status_kinds, f->nstatus, gk);
}

static bool has_scale(const char *group, const char *kind) {
  return pair_in(scale_kinds, sizeof(scale_kinds) / sizeof(scale_kinds[0]), group, kind);
}

/* no_subresource: the API server's 404 for a path it does not serve. */
static int no_subresource(kcr_error_t *err, const who_t *w, const char *subresource) {
  (void)subresource;
  return api_error(err, 404, "NotFound", w, "the server could not find the requested resource");
}

/* check_write_options refuses what the API server refuses of kcr_write_options. */
static int check_write_options(const kcr_write_options *o, kcr_error_t *err) {
  const char *v = o->field_validation;
  char msg[300];
  if (v && *v && strcmp(v, "Strict") != 0 && strcmp(v, "Warn") != 0 && strcmp(v, "Ignore") != 0) {
    snprintf(msg, sizeof(msg),
             "fieldValidation: Unsupported value: \"%.100s\": supported values: \"Ignore\", "
             "\"Strict\", \"Warn\"",
             v);
    return bad_request(err, msg);
  }
  if (o->field_manager && strlen(o->field_manager) > 128)
    return bad_request(err, "fieldManager: Too long: may not be more than 128 bytes");
  return 0;
}

/* ---- the write rules every verb shares ---- */

/*
 * deletion_shown writes a deletionTimestamp as the API server shows a refused
 * metav1.Time: its JSON, in UTC and whole seconds ("2026-01-02T03:04:05Z", the
 * quotes included). A value that is no RFC 3339 time is shown as given.
 */
static void deletion_shown(const json_t *v, char *buf, size_t size) {
  const char *s = json_string_value(v);
  char t[KCR_TIME_BUFSIZE];
  kcr_time_t at;
  size_t n;
  if (s && kcr_time_parse(s, strlen(s), &at, NULL) == 0 &&
      kcr_time_format(at, KCR_TIME_SECONDS, t, sizeof(t)) > 0) {
    snprintf(buf, size, "\"%s\"", t);
    return;
  }
  n = json_dumpb(v, buf, size - 1, JSON_ENCODE_ANY | JSON_COMPACT);
  buf[n > 0 && n < size ? n : 0] = '\0';
}

/* ---- field ownership (fake_fields.c) ---- */

/* fields_scope: which fields of group/kind a write through subresource can
 * own. mu held. */
static int fields_scope(const kcr_fake_client_t *f, const char *group, const char *kind,
                        const char *subresource) {
  if (subresource && strcmp(subresource, "status") == 0)
    return KCR__FIELDS_STATUS;
  return has_status(f, group, kind) ? KCR__FIELDS_MAIN : KCR__FIELDS_ALL;
}

/* managers_of: the managers of obj's metadata.managedFields (new); none when
 * it has none or they do not decode. NULL: out of memory. */
static json_t *managers_of(const json_t *obj) {
  json_t *m = NULL;
  int rc = kcr__mf_decode(json_object_get(json_object_get(obj, "metadata"), "managedFields"), &m);
  if (rc == KCR__SMP_BAD_PATCH)
    return json_array();
  return m;
}

/* is_reset: a request's managedFields that clear them: [] or [{}]. */
static bool is_reset(const json_t *mf) {
  const json_t *e = json_array_get(mf, 0);
  return json_is_array(mf) &&
         (json_array_size(mf) == 0 ||
          (json_array_size(mf) == 1 && json_is_object(e) && json_object_size(e) == 0));
}

/*
 * track records in result's metadata.managedFields the write by of result
 * over cur (NULL: a create) through subresource, as the API server's field
 * manager does. An update or patch takes the managers the request carries
 * when they decode and are not empty ([] or [{}] clear them; through a
 * subresource they are ignored), else the stored ones, and tracks nothing
 * when that leaves none for an object that exists. An apply with conflicts
 * is a 409 Conflict unless forced. 0 or an error. mu held.
 */
static int track(kcr_fake_client_t *f, const json_t *cur, json_t *result, const char *subresource,
                 const by_t *by, const who_t *w, kcr_error_t *err) {
  json_t *md = json_object_get(result, "metadata"), *managers = NULL, *conflicts = NULL, *enc;
  const json_t *req = json_object_get(md, "managedFields");
  char now[KCR_TIME_BUFSIZE];
  kcr__mf_who who = {by->manager, by->subresource ? by->subresource : subresource,
                     json_string_value(json_object_get(result, "apiVersion")), by->apply};
  int rc;
  if (by->managers) {
    managers = json_incref(by->managers);
  } else if (!who.subresource && req && is_reset(req)) {
    managers = json_array();
  } else if (!who.subresource && req && kcr__mf_decode(req, &managers) == KCR__SMP_OK &&
             json_array_size(managers) > 0) {
    /* the request's own */
  } else {
    json_decref(managers);
    managers = cur ? managers_of(cur) : json_array();
  }
  if (!managers)
    return oom(err);
  json_object_del(md, "managedFields");
  if (cur && !by->apply && json_array_size(managers) == 0) {
    json_decref(managers); /* an untracked object stays untracked */
    return 0;
  }
  now_text(f, now, sizeof(now));
  rc = kcr__mf_update(managers, w->group, w->kind, cur, result, &who, by->force, now, &conflicts);
  if (rc == KCR__SMP_BAD_PATCH) {
    char *msg = kcr__mf_conflict_message(conflicts);
    json_decref(conflicts);
    json_decref(managers);
    if (!msg)
      return oom(err);
    rc = api_error(err, 409, "Conflict", w, "%s", msg);
    kcr_free(msg);
    return rc;
  }
  if (rc != KCR__SMP_OK || !(enc = kcr__mf_encode(managers))) {
    json_decref(managers);
    return oom(err);
  }
  json_decref(managers);
  if (json_array_size(enc) == 0) {
    json_decref(enc);
    return 0;
  }
  return json_object_set_new(md, "managedFields", enc) == 0 ? 0 : oom(err);
}

/*
 * commit makes next (stolen) the stored state of it, the way the API server
 * would turn a PUT or PATCH into one: subresource "status" takes only next's
 * status; the object itself keeps the stored status; uid, creationTimestamp,
 * deletionTimestamp, name and namespace cannot change; a stale resourceVersion
 * is a Conflict; a deletionTimestamp set on a live object is Invalid (only a
 * delete sets one); no new finalizers on a deleting object; generation grows when
 * the spec changed; a write that changes nothing keeps the resourceVersion; a
 * deleting object whose last finalizer went away is deleted. A kind without a
 * status subresource (has_status) takes next's status with the rest. by: the
 * write's field manager, recorded in metadata.managedFields (track). dry_run:
 * every check, nothing stored, the resourceVersion not moved. *out: new copy
 * of the result. mu held.
 */
static int commit(kcr_fake_client_t *f, item_t *it, json_t *next, const char *subresource,
                  bool dry_run, const who_t *w, const by_t *by, json_t **out, kcr_error_t *err) {
  json_t *cur = it->obj, *result = NULL, *md, *cmd = json_object_get(cur, "metadata");
  const char *rv = str_at(next, "metadata", "resourceVersion");
  const char *cur_rv = str_at(cur, "metadata", "resourceVersion");
  static const char *const immutable[] = {
      "uid",  "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
      "name", "namespace",         "generation"};
  json_t *fins, *before;
  bool deleting, status_kept = has_status(f, w->group, w->kind);
  int rc = 0;

  if (rv && *rv && (!cur_rv || strcmp(rv, cur_rv) != 0)) {
    json_decref(next);
    return conflict(err, w,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
  }
  if (!(subresource && strcmp(subresource, "status") == 0) && !kcr_meta_is_deleting(cur) &&
      kcr_meta_is_deleting(next)) {
    /* BeforeUpdate keeps a stored deletionTimestamp; validation refuses a new one */
    char shown[KCR_TIME_BUFSIZE + 80], why[KCR_TIME_BUFSIZE + 160];
    deletion_shown(json_object_get(json_object_get(next, "metadata"), "deletionTimestamp"), shown,
                   sizeof(shown));
    snprintf(why, sizeof(why), "metadata.deletionTimestamp: Invalid value: %s: field is immutable",
             shown);
    json_decref(next);
    return invalid(err, w, why);
  }
  if (subresource && strcmp(subresource, "status") == 0) {
    result = json_deep_copy(cur);
    if (!result || keep_field(result, next, "status") != 0)
      rc = KCR_ENOMEM;
  } else {
    result = json_deep_copy(next);
    if (!result || (status_kept && keep_field(result, cur, "status") != 0))
      rc = KCR_ENOMEM;
    /* keep what a client cannot change */
    if (rc == 0 && (md = md_of(result)) != NULL) {
      for (size_t i = 0; i < sizeof(immutable) / sizeof(immutable[0]); i++)
        if (keep_field(md, cmd, immutable[i]) != 0)
          rc = KCR_ENOMEM;
      json_object_set(result, "apiVersion", json_object_get(cur, "apiVersion"));
      json_object_set(result, "kind", json_object_get(cur, "kind"));
    } else if (rc == 0) {
      rc = KCR_ENOMEM;
    }
  }
  json_decref(next);
  if (rc) {
    json_decref(result);
    return oom(err);
  }
  md = md_of(result);
  deleting = kcr_meta_is_deleting(cur);
  fins = json_object_get(md, "finalizers");
  if (deleting) {
    size_t i;
    json_t *v;
    json_array_foreach(fins, i, v) {
      if (!json_is_string(v) || !str_in(json_object_get(cmd, "finalizers"), json_string_value(v))) {
        json_decref(result);
        return invalid(err, w,
                       "metadata.finalizers: Forbidden: no new finalizers can be added if the "
                       "object is being deleted");
      }
    }
  }
  if ((rc = track(f, cur, result, subresource, by, w, err)) != 0) {
    json_decref(result);
    return rc;
  }
  /* a write that changes nothing is not a write: same resourceVersion */
  json_object_set(md, "resourceVersion", json_object_get(cmd, "resourceVersion"));
  if (json_equal(result, cur)) {
    *out = shown(f, result);
    return 0;
  }
  if (!spec_equal(result, cur))
    json_object_set_new(md, "generation",
                        json_integer(json_integer_value(json_object_get(cmd, "generation")) + 1));
  if (dry_run) {
    *out = shown(f, result); /* as it would be, under the stored resourceVersion */
    return 0;
  }
  if (next_rv(f, md) != 0) {
    json_decref(result);
    return oom(err);
  }
  if (deleting && json_array_size(fins) == 0) {
    emit(f, KCR_WATCH_DELETED, it->key, NULL, result);
    remove_item(f, it); /* released: the object is gone */
    *out = shown(f, result);
    return 0;
  }
  before = it->obj; /* the stored tree is replaced, never changed: the event keeps it */
  it->obj = json_deep_copy(result);
  if (!it->obj) {
    it->obj = before;
    json_decref(result); /* keep the tree stored; the caller gets nothing */
    return oom(err);
  }
  emit(f, KCR_WATCH_MODIFIED, it->key, before, it->obj);
  *out = shown(f, result);
  return 0;
}

/* ---- merge patch (RFC 7386) and JSON Patch (RFC 6902) ---- */

/* merge_patch applies patch to target (steals target; returns the new tree). */
static json_t *merge_patch(json_t *target, const json_t *patch) {
  const char *k;
  json_t *v;
  if (!json_is_object(patch)) {
    json_decref(target);
    return json_deep_copy(patch);
  }
  if (!json_is_object(target)) {
    json_decref(target);
    target = json_object();
    if (!target)
      return NULL;
  }
  json_object_foreach((json_t *)patch, k, v) {
    if (json_is_null(v)) {
      json_object_del(target, k);
    } else {
      json_t *cur = json_object_get(target, k);
      json_t *merged = merge_patch(cur ? json_incref(cur) : NULL, v);
      if (!merged || json_object_set_new(target, k, merged) != 0) {
        json_decref(target);
        return NULL;
      }
    }
  }
  return target;
}

/*
 * parse_index reads tok as an array index the way RFC 6901 (section 4) spells
 * one: "0", or digits that do not start with 0; no sign, no blank, no leading
 * zero. An index too large for size_t is refused (no array is that long).
 */
static bool parse_index(const char *tok, size_t *out) {
  size_t i = 0;
  if (!*tok || (tok[0] == '0' && tok[1]))
    return false;
  for (; *tok; tok++) {
    if (!isdigit((unsigned char)*tok) || i > (SIZE_MAX - 9) / 10)
      return false;
    i = i * 10 + (size_t)(*tok - '0');
  }
  *out = i;
  return true;
}

/* pointer_parent walks a JSON pointer to the container of its last token,
 * which goes (unescaped) into last. NULL when the path does not resolve. */
static json_t *pointer_parent(json_t *doc, const char *path, char *last, size_t size) {
  json_t *cur = doc;
  const char *p = path;
  if (*p != '/')
    return NULL;
  for (;;) {
    char tok[512];
    size_t n = 0;
    p++;
    while (*p && *p != '/' && n + 1 < sizeof(tok)) {
      if (p[0] == '~' && p[1] == '1') {
        tok[n++] = '/';
        p += 2;
      } else if (p[0] == '~' && p[1] == '0') {
        tok[n++] = '~';
        p += 2;
      } else {
        tok[n++] = *p++;
      }
    }
    tok[n] = '\0';
    if (*p == '\0') {
      snprintf(last, size, "%s", tok);
      return cur;
    }
    if (*p != '/')
      return NULL; /* token too long */
    if (json_is_object(cur)) {
      cur = json_object_get(cur, tok);
    } else if (json_is_array(cur)) {
      size_t i;
      cur = parse_index(tok, &i) ? json_array_get(cur, i) : NULL;
    } else {
      return NULL;
    }
    if (!cur)
      return NULL;
  }
}

/* array_index reads the last token of a path into an index of arr: one that
 * exists, or for add one past the end ("-" included). */
static bool array_index(const json_t *arr, const char *tok, bool for_add, size_t *out) {
  if (for_add && strcmp(tok, "-") == 0) {
    *out = json_array_size(arr);
    return true;
  }
  if (!parse_index(tok, out))
    return false;
  return for_add ? *out <= json_array_size(arr) : *out < json_array_size(arr);
}

/* pointer_get: the value at path (borrowed) or NULL. "" is the whole doc. */
static json_t *pointer_get(json_t *doc, const char *path) {
  char last[512];
  json_t *parent;
  size_t i;
  if (!*path)
    return doc;
  parent = pointer_parent(doc, path, last, sizeof(last));
  if (json_is_object(parent))
    return json_object_get(parent, last);
  if (json_is_array(parent) && array_index(parent, last, false, &i))
    return json_array_get(parent, i);
  return NULL;
}

/* pointer_remove takes the value at path out of doc (a new reference), or NULL. */
static json_t *pointer_remove(json_t *doc, const char *path) {
  char last[512];
  json_t *parent = pointer_parent(doc, path, last, sizeof(last)), *v;
  size_t i;
  if (json_is_object(parent) && (v = json_object_get(parent, last)) != NULL) {
    json_incref(v);
    json_object_del(parent, last);
    return v;
  }
  if (json_is_array(parent) && array_index(parent, last, false, &i)) {
    v = json_incref(json_array_get(parent, i));
    json_array_remove(parent, i);
    return v;
  }
  return NULL;
}

/* pointer_add puts value (stolen) at path; replace: the target must exist. */
static bool pointer_add(json_t *doc, const char *path, json_t *value, bool replace) {
  char last[512];
  json_t *parent = pointer_parent(doc, path, last, sizeof(last));
  size_t i;
  if (json_is_object(parent)) {
    if (replace && !json_object_get(parent, last)) {
      json_decref(value);
      return false;
    }
    return json_object_set_new(parent, last, value) == 0;
  }
  if (json_is_array(parent) && array_index(parent, last, !replace, &i)) {
    if (replace)
      return json_array_set_new(parent, i, value) == 0;
    return json_array_insert_new(parent, i, value) == 0;
  }
  json_decref(value);
  return false;
}

/* number_equal compares two JSON numbers by value: an integer equals a real
 * only when the real is that integer exactly (no rounding through double). */
static bool number_equal(const json_t *a, const json_t *b) {
  double r;
  json_int_t i;
  if (json_is_integer(a) && json_is_integer(b))
    return json_integer_value(a) == json_integer_value(b);
  if (json_is_real(a) && json_is_real(b))
    return json_real_value(a) == json_real_value(b);
  r = json_real_value(json_is_real(a) ? a : b);
  i = json_integer_value(json_is_integer(a) ? a : b);
  /* [-2^63, 2^63): where a double converts to json_int_t without overflow */
  if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0))
    return false;
  return (json_int_t)r == i && (double)(json_int_t)r == r;
}

/*
 * values_equal is the test op's comparison (RFC 6902 section 4.6): json_equal,
 * but numbers are equal when their values are (1, 1.0 and 1e0 are one number),
 * at any depth.
 */
static bool values_equal(const json_t *a, const json_t *b) {
  if (json_is_number(a) && json_is_number(b))
    return number_equal(a, b);
  if (json_is_object(a) && json_is_object(b)) {
    const char *k;
    json_t *v;
    if (json_object_size(a) != json_object_size(b))
      return false;
    json_object_foreach((json_t *)a, k, v) {
      const json_t *w = json_object_get(b, k);
      if (!w || !values_equal(v, w))
        return false;
    }
    return true;
  }
  if (json_is_array(a) && json_is_array(b)) {
    if (json_array_size(a) != json_array_size(b))
      return false;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!values_equal(json_array_get(a, i), json_array_get(b, i)))
        return false;
    return true;
  }
  return json_equal(a, b);
}

/* json_patch applies ops to *doc (in place). 0, or a message in why. */
static int json_patch(json_t *doc, const json_t *ops, char *why, size_t size) {
  size_t i;
  json_t *op;
  if (!json_is_array(ops)) {
    snprintf(why, size, "%s", "a JSON Patch is an array of operations");
    return -1;
  }
  json_array_foreach(ops, i, op) {
    const char *name = json_string_value(json_object_get(op, "op"));
    const char *path = json_string_value(json_object_get(op, "path"));
    const char *from = json_string_value(json_object_get(op, "from"));
    json_t *value = json_object_get(op, "value"), *v;
    bool ok;
    if (!name || !path) {
      snprintf(why, size, "operation %zu has no op or path", i);
      return -1;
    }
    if (strcmp(name, "test") == 0) {
      v = pointer_get(doc, path);
      ok = v && value && values_equal(v, value);
      if (!ok) {
        snprintf(why, size, "testing value %s failed: test failed", path);
        return -1;
      }
      continue;
    }
    if (strcmp(name, "add") == 0 || strcmp(name, "replace") == 0) {
      ok = value && pointer_add(doc, path, json_deep_copy(value), name[0] == 'r');
    } else if (strcmp(name, "remove") == 0) {
      v = pointer_remove(doc, path);
      ok = v != NULL;
      json_decref(v);
    } else if ((strcmp(name, "move") == 0 || strcmp(name, "copy") == 0) && from) {
      v = name[0] == 'm' ? pointer_remove(doc, from) : pointer_get(doc, from);
      if (v && name[0] == 'c')
        v = json_deep_copy(v);
      ok = v && pointer_add(doc, path, v, false);
    } else {
      snprintf(why, size, "unknown operation %s", name);
      return -1;
    }
    if (!ok) {
      snprintf(why, size, "%s operation does not apply: doc is missing path: \"%s\"", name, path);
      return -1;
    }
  }
  return 0;
}

/* ---- interceptors and call counts ---- */

static int intercept(kcr_fake_client_t *f, const kcr_fake_call *call, kcr_error_t *err) {
  interceptor_t ic;
  pthread_mutex_lock(&f->mu);
  f->calls[call->verb]++;
  ic = f->icpt[call->verb];
  pthread_mutex_unlock(&f->mu);
  if (!ic.cb)
    return 0;
  return ic.cb(call, err, ic.data);
}

void kcr_fake_client_intercept(kcr_fake_client_t *f, kcr_fake_verb verb, kcr_fake_intercept_cb cb,
                               void *data) {
  if ((int)verb < 0 || verb >= KCR_FAKE_VERBS)
    return;
  pthread_mutex_lock(&f->mu);
  f->icpt[verb].cb = cb;
  f->icpt[verb].data = data;
  pthread_mutex_unlock(&f->mu);
}

uint64_t kcr_fake_client_calls(kcr_fake_client_t *f, kcr_fake_verb verb) {
  uint64_t n;
  if ((int)verb < 0 || verb >= KCR_FAKE_VERBS)
    return 0;
  pthread_mutex_lock(&f->mu);
  n = f->calls[verb];
  pthread_mutex_unlock(&f->mu);
  return n;
}

void kcr_fake_client_reset_calls(kcr_fake_client_t *f) {
  pthread_mutex_lock(&f->mu);
  memset(f->calls, 0, sizeof(f->calls));
  pthread_mutex_unlock(&f->mu);
}

/* ---- the verbs ---- */

/* do_get: *out a new copy of gvk's ns/name, or NotFound (mu not held). */
static int do_get(kcr_fake_client_t *f, const kcr_gvk *gvk, const char *ns, const char *name,
                  json_t **out, kcr_error_t *err) {
  const char *group = gvk->group ? gvk->group : "";
  char *key;
  item_t *it;
  who_t w;
  if (!(key = make_key(group, gvk->kind, ns ? ns : "", name)))
    return oom(err);
  pthread_mutex_lock(&f->mu);
  it = find(f, key);
  if (it)
    *out = shown(f, json_deep_copy(it->obj));
  pthread_mutex_unlock(&f->mu);
  kcr__free(key);
  if (!it) {
    who_init(&w, group, gvk->kind, name);
    return not_found(err, &w);
  }
  return *out ? 0 : oom(err);
}

static int f_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                 json_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_fake_call call = {KCR_FAKE_GET, gvk, ns ? ns : "", name, NULL, NULL};
  int rc;
  if ((rc = intercept(f, &call, err)) != 0)
    return rc;
  return do_get(f, gvk, ns, name, out, err);
}

/* find_index: the field index name of kind gk ("group \x1f kind"), or NULL (mu held). */
static const fake_index_t *find_index(const kcr_fake_client_t *f, const char *gk,
                                      const char *name) {
  for (size_t i = 0; i < f->nidx; i++)
    if (strcmp(f->idx[i].gk, gk) == 0 && strcmp(f->idx[i].name, name) == 0)
      return &f->idx[i];
  return NULL;
}

/* selection_t: what a list, a metadata list or a DeleteAllOf selects. */
typedef struct selection {
  char gk[KCR_GVK_GROUP_MAX + 160];
  char prefix[KCR_GVK_GROUP_MAX + 162]; /* of the keys of the kind */
  const char *ns;                       /* NULL: every namespace */
  kcr_selector_t *labels;               /* NULL: every label set */
  kcr__fieldsel_t fields;
  const fake_index_t *index; /* kcr_list_options.index, NULL: none */
  const char *index_value;
} selection_t;

static void selection_free(selection_t *s) {
  kcr_selector_destroy(s->labels);
  s->labels = NULL;
}

/*
 * selection_parse reads o into s (mu held: the indexes are the tracker's). A
 * field selector term names metadata.name, metadata.namespace or (by equality,
 * as controller-runtime's fake requires) a field index of the kind; any other
 * field is BadRequest, as the server answers a field it does not know. An
 * index that is not registered is KCR_EINVAL, as the cache says.
 */
static int selection_parse(const kcr_fake_client_t *f, const kcr_gvk *gvk,
                           const kcr_list_options *o, selection_t *s, kcr_error_t *err) {
  kcr_error_t perr;
  char msg[400];
  int rc;
  memset(s, 0, sizeof(*s));
  gk_text(gvk->group, gvk->kind, s->gk, sizeof(s->gk));
  snprintf(s->prefix, sizeof(s->prefix), "%s\x1f", s->gk);
  s->ns = o->ns && *o->ns ? o->ns : NULL;
  if (o->index && *o->index) {
    if (!o->index_value)
      return kcr_error_set(err, KCR_EINVAL, "fake client: list %s: an index needs a value",
                           gvk->kind);
    if (!(s->index = find_index(f, s->gk, o->index)))
      return kcr_error_set(err, KCR_EINVAL,
                           "fake client: %s has no index named %s (register it with "
                           "kcr_fake_client_add_index)",
                           gvk->kind, o->index);
    s->index_value = o->index_value;
  }
  kcr_error_clear(&perr);
  if (kcr__fieldsel_parse(o->field_selector, &s->fields, &perr) != 0)
    return bad_request(err, perr.message);
  for (size_t i = 0; i < s->fields.n; i++) {
    const kcr__fieldsel_term_t *t = &s->fields.terms[i];
    if (strcmp(t->field, "metadata.name") == 0 || strcmp(t->field, "metadata.namespace") == 0)
      continue;
    if (!find_index(f, s->gk, t->field)) {
      snprintf(msg, sizeof(msg), "field label not supported: %.200s", t->field);
      return bad_request(err, msg);
    }
    if (t->negate) {
      snprintf(msg, sizeof(msg),
               "field selector %.150s!=%.150s: an indexed field is selected by equality only",
               t->field, t->value);
      return bad_request(err, msg);
    }
  }
  if (o->label_selector && (rc = kcr_selector_parse(o->label_selector, &s->labels, NULL)) != 0)
    return rc == KCR_ENOMEM
               ? oom(err)
               : bad_request(err, "unable to parse requirement: invalid label selector");
  return 0;
}

/* index_holds: whether ix's values of obj include value; < 0 on the index's error. */
static int index_holds(const fake_index_t *ix, const json_t *obj, const char *value,
                       kcr_error_t *err) {
  bool found = false;
  int rc = kcr__index_values_contain(ix->fn, ix->data, obj, value, &found);
  if (rc)
    return kcr_error_set(err, rc, "fake client: index %s: %s", ix->name, kcr_strerror(rc));
  return found ? 1 : 0;
}

/* selection_matches: 1 when s selects the stored item it, 0 when not, < 0 on
 * an index function's error (mu held). */
static int selection_matches_obj(const kcr_fake_client_t *f, const selection_t *s, const char *key,
                                 const json_t *obj, kcr_error_t *err) {
  const char *ons = kcr_meta_namespace(obj), *oname = kcr_meta_name(obj);
  int m;
  if (strncmp(key, s->prefix, strlen(s->prefix)) != 0)
    return 0;
  if (s->ns && strcmp(s->ns, ons ? ons : "") != 0)
    return 0;
  if (s->labels && !kcr_selector_matches_obj(s->labels, obj))
    return 0;
  for (size_t i = 0; i < s->fields.n; i++) {
    const kcr__fieldsel_term_t *t = &s->fields.terms[i];
    if (strcmp(t->field, "metadata.name") == 0 || strcmp(t->field, "metadata.namespace") == 0) {
      const char *v = strcmp(t->field, "metadata.name") == 0 ? oname : ons;
      if ((strcmp(v ? v : "", t->value) == 0) == t->negate)
        return 0;
      continue;
    }
    if ((m = index_holds(find_index(f, s->gk, t->field), obj, t->value, err)) <= 0)
      return m;
  }
  if (s->index)
    return index_holds(s->index, obj, s->index_value, err);
  return 1;
}

static int selection_matches(const kcr_fake_client_t *f, const selection_t *s, const item_t *it,
                             kcr_error_t *err) {
  return selection_matches_obj(f, s, it->key, it->obj, err);
}

static int cmp_items(const void *a, const void *b) {
  const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
  const char *xn = kcr_meta_namespace(x), *yn = kcr_meta_namespace(y);
  int c = strcmp(xn ? xn : "", yn ? yn : "");
  if (c)
    return c;
  return strcmp(kcr_meta_name(x) ? kcr_meta_name(x) : "", kcr_meta_name(y) ? kcr_meta_name(y) : "");
}

/* list_key: "ns/name", the continue token of the last item given. */
static void list_key(const json_t *obj, char *buf, size_t size) {
  const char *ns = kcr_meta_namespace(obj);
  snprintf(buf, size, "%s/%s", ns ? ns : "", kcr_meta_name(obj) ? kcr_meta_name(obj) : "");
}

/* metadata_only: a new PartialObjectMetadata of obj (its metadata, copied). */
static json_t *metadata_only(const json_t *obj) {
  json_t *md = json_object_get(obj, "metadata");
  return json_pack("{s:s, s:s, s:o}", "apiVersion", "meta.k8s.io/v1", "kind",
                   "PartialObjectMetadata", "metadata",
                   json_is_object(md) ? json_deep_copy(md) : json_object());
}

/* do_list answers a list of gvk (after its interceptor): whole objects, or
 * PartialObjectMetadata (metadata true) in a PartialObjectMetadataList. mu not
 * held. */
static int do_list(kcr_fake_client_t *f, const kcr_gvk *gvk, const kcr_list_options *o,
                   bool metadata, json_t **out, kcr_error_t *err) {
  selection_t s;
  size_t nsel = 0, given = 0;
  json_t **selected = NULL, *list = NULL, *items = NULL;
  char api_version[KCR_GVK_GROUP_MAX + 64], kind[160], rv[32], last[600] = "";
  kcr_fake_call call = {KCR_FAKE_LIST, gvk, o->ns ? o->ns : "", NULL, NULL, NULL};
  int rc = 0, m = 0;

  if ((rc = intercept(f, &call, err)) != 0)
    return rc;
  kcr_gvk_api_version(gvk, api_version, sizeof(api_version));
  if (metadata)
    snprintf(kind, sizeof(kind), "%s", "PartialObjectMetadataList");
  else
    snprintf(kind, sizeof(kind), "%sList", gvk->kind);
  pthread_mutex_lock(&f->mu);
  if ((rc = selection_parse(f, gvk, o, &s, err)) != 0) {
    pthread_mutex_unlock(&f->mu);
    selection_free(&s);
    return rc;
  }
  selected = kcr__calloc(f->n ? f->n : 1, sizeof(json_t *));
  for (size_t i = 0; selected && i < f->n && m >= 0; i++) {
    if ((m = selection_matches(f, &s, &f->items[i], err)) <= 0)
      continue;
    selected[nsel++] = shown(f, json_deep_copy(f->items[i].obj));
    if (!selected[nsel - 1])
      nsel--, rc = KCR_ENOMEM;
  }
  snprintf(rv, sizeof(rv), "%llu", f->rv);
  pthread_mutex_unlock(&f->mu);
  selection_free(&s);
  if (m < 0) {
    rc = m;
    goto fail;
  }
  if (!selected || rc)
    goto nomem;
  qsort(selected, nsel, sizeof(json_t *), cmp_items);
  list = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", metadata ? "meta.k8s.io/v1" : api_version,
                   "kind", kind, "metadata", "resourceVersion", rv);
  items = json_array();
  if (!list || !items || json_object_set(list, "items", items) != 0)
    goto nomem;
  for (size_t i = 0; i < nsel; i++) {
    char k[600];
    json_t *item;
    list_key(selected[i], k, sizeof(k));
    if (o->continue_token && *o->continue_token && strcmp(k, o->continue_token) <= 0)
      continue;
    if (o->limit > 0 && given == (size_t)o->limit) {
      if (json_object_set_new(json_object_get(list, "metadata"), "continue", json_string(last)))
        goto nomem;
      break;
    }
    /* the API server fills apiVersion and kind of every item */
    if (metadata)
      item = metadata_only(selected[i]);
    else if (json_object_set_new(selected[i], "apiVersion", json_string(api_version)) != 0 ||
             json_object_set_new(selected[i], "kind", json_string(gvk->kind)) != 0)
      item = NULL;
    else
      item = json_incref(selected[i]);
    if (json_array_append_new(items, item) != 0)
      goto nomem;
    snprintf(last, sizeof(last), "%s", k);
    given++;
  }
  for (size_t i = 0; i < nsel; i++)
    json_decref(selected[i]);
  kcr__free(selected);
  json_decref(items);
  *out = list;
  return 0;
nomem:
  rc = oom(err);
fail:
  for (size_t i = 0; selected && i < nsel; i++)
    json_decref(selected[i]);
  kcr__free(selected);
  json_decref(items);
  json_decref(list);
  return rc;
}

static int f_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                  json_t **out, kcr_error_t *err) {
  return do_list(c->data, gvk, o, false, out, err);
}

static int f_list_metadata(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                           json_t **out, kcr_error_t *err) {
  return do_list(c->data, gvk, o, true, out, err);
}

/* The API server's names.SimpleNameGenerator: at most 63 bytes, five random. */
#define GENERATED_RANDOM 5
#define GENERATED_BASE_MAX (63 - GENERATED_RANDOM)

/* generate_name appends five characters from apimachinery's alphabet to base,
 * cut first to GENERATED_BASE_MAX bytes, as the API server does. */
static void generate_name(kcr_fake_client_t *f, const char *base, char *out, size_t size) {
  static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  char suffix[GENERATED_RANDOM + 1];
  size_t n = strlen(base);
  for (int i = 0; i < GENERATED_RANDOM; i++)
    suffix[i] = alphabet[kcr_rand_next(&f->rand) % (sizeof(alphabet) - 1)];
  suffix[GENERATED_RANDOM] = '\0';
  snprintf(out, size, "%.*s%s", (int)(n > GENERATED_BASE_MAX ? GENERATED_BASE_MAX : n), base,
           suffix);
}

/* do_create stores a copy of obj. seed: kcr_fake_client_add (status kept,
 * metadata kept where given, managedFields as given). by: the field manager
 * of any other create (an apply's or an update's). dry_run: everything but
 * storing it (and giving it a resourceVersion). mu not held. */
/* create_fields records in copy (the object a create stores, made from obj)
 * the managedFields of its creation by by: an apply's applied fields, or an
 * update's fields with the managers the request carries. mu held. */
static int create_fields(kcr_fake_client_t *f, const obj_id *id, const json_t *obj, json_t *copy,
                         const by_t *by, kcr_error_t *err) {
  who_t w;
  int rc;
  who_init(&w, id->group, id->kind, id->name);
  if (by->apply) {
    kcr__mf_who who = {by->manager, NULL, json_string_value(json_object_get(copy, "apiVersion")),
                       true};
    json_t *managers = json_array();
    by_t prepared = *by;
    if (!managers || kcr__mf_apply_prepare(managers, id->group, id->kind, copy, obj, &who,
                                           fields_scope(f, id->group, id->kind, NULL)) != 0) {
      json_decref(managers);
      return oom(err);
    }
    prepared.managers = managers;
    rc = track(f, NULL, copy, NULL, &prepared, &w, err);
    json_decref(managers);
    return rc;
  }
  return track(f, NULL, copy, NULL, by, &w, err);
}

static int do_create(kcr_fake_client_t *f, const json_t *obj, bool seed, const by_t *by,
                     bool dry_run, json_t **out, kcr_error_t *err) {
  json_t *copy = NULL, *md;
  obj_id id;
  who_t w;
  char name[320], *key = NULL;
  const char *rv;
  int rc;

  if ((rc = obj_id_of(obj, &id, err)) != 0)
    return rc;
  /* no server holds a deleting object that nothing holds (WithObjects refuses it) */
  if (seed && kcr_meta_is_deleting(obj) &&
      json_array_size(json_object_get(json_object_get(obj, "metadata"), "finalizers")) == 0)
    return kcr_error_set(err, KCR_EINVAL,
                         "fake client: refusing to create obj %s with metadata.deletionTimestamp "
                         "but no finalizers",
                         id.name);
  rv = kcr_meta_resource_version(obj);
  if (!seed && rv && *rv)
    return bad_request(err, "resourceVersion can not be set for Create requests");
  copy = json_deep_copy(obj);
  if (!copy || !(md = md_of(copy)))
    goto nomem;
  pthread_mutex_lock(&f->mu);
  snprintf(name, sizeof(name), "%s", id.name);
  if (!*name) {
    const char *gen = kcr_meta_generate_name(obj);
    if (seed || !gen || !*gen) {
      pthread_mutex_unlock(&f->mu);
      json_decref(copy);
      who_init(&w, id.group, id.kind, "");
      return invalid(err, &w, "metadata.name: Required value: name or generateName is required");
    }
    do {
      kcr__free(key);
      generate_name(f, gen, name, sizeof(name));
      key = make_key(id.group, id.kind, id.ns, name);
    } while (key && find(f, key));
    if (json_object_set_new(md, "name", json_string(name)) != 0)
      goto nomem_locked;
  } else {
    key = make_key(id.group, id.kind, id.ns, name);
  }
  if (!key)
    goto nomem_locked;
  if (find(f, key)) {
    pthread_mutex_unlock(&f->mu);
    kcr__free(key);
    json_decref(copy);
    who_init(&w, id.group, id.kind, name);
    return api_error(err, 409, "AlreadyExists", &w, "%s \"%s\" already exists", w.resource, name);
  }
  if (!seed) {
    if (has_status(f, id.group, id.kind))
      json_object_del(copy, "status"); /* a status subresource: create sets no status */
    json_object_del(md, "deletionTimestamp");
    json_object_del(md, "deletionGracePeriodSeconds");
  }
  if (fill_new(f, copy, !seed) != 0)
    goto nomem_locked;
  if (!seed && (rc = create_fields(f, &id, obj, copy, by, err)) != 0) {
    pthread_mutex_unlock(&f->mu);
    kcr__free(key);
    json_decref(copy);
    return rc;
  }
  if (dry_run) {
    *out = shown(f, copy); /* as it would be stored, without a resourceVersion: nothing was */
    pthread_mutex_unlock(&f->mu);
    kcr__free(key);
    return 0;
  }
  if (seed && rv && *rv) {
    unsigned long long n = strtoull(rv, NULL, 10);
    if (n > f->rv)
      f->rv = n;
  } else if (next_rv(f, md) != 0) {
    goto nomem_locked;
  }
  if (out && !(*out = shown(f, json_deep_copy(copy))))
    goto nomem_locked;
  rc = insert(f, key, copy);
  if (rc == 0)
    emit(f, KCR_WATCH_ADDED, f->items[f->n - 1].key, NULL, f->items[f->n - 1].obj);
  pthread_mutex_unlock(&f->mu);
  if (rc) {
    if (out) {
      json_decref(*out);
      *out = NULL;
    }
    return oom(err);
  }
  return 0;
nomem_locked:
  pthread_mutex_unlock(&f->mu);
nomem:
  kcr__free(key);
  json_decref(copy);
  return oom(err);
}

static const kcr_write_options no_write;

/* begin_write reads what names obj (its kind into gvk, the group in group)
 * and runs verb's interceptor on the call (written: the object the call
 * shows; subresource as given). */
static int begin_write(kcr_fake_client_t *f, kcr_fake_verb verb, const json_t *obj,
                       const json_t *written, const char *subresource, kcr_gvk *gvk, char *group,
                       size_t size, obj_id *id, kcr_error_t *err) {
  kcr_fake_call call = {verb, gvk, NULL, NULL, written, subresource};
  int rc;
  if ((rc = obj_id_of(obj, id, err)) != 0)
    return rc;
  if (kcr_meta_gvk(obj, gvk, group, size) != 0)
    return kcr_error_set(err, KCR_EINVAL, "fake client: bad apiVersion");
  call.ns = id->ns;
  call.name = id->name;
  return intercept(f, &call, err);
}

static int f_create_with(const kcr_objclient *c, const json_t *obj, const kcr_write_options *o,
                         json_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX];
  kcr_fake_call call = {KCR_FAKE_CREATE,    &gvk, kcr_meta_namespace(obj),
                        kcr_meta_name(obj), obj,  NULL};
  int rc;
  if (kcr_meta_gvk(obj, &gvk, group, sizeof(group)) != 0)
    return kcr_error_set(err, KCR_EINVAL, "fake client: the object needs apiVersion and kind");
  if (!call.ns)
    call.ns = "";
  if (!call.name)
    call.name = "";
  by_t by = {o->field_manager ? o->field_manager : KCR__FAKE_DEFAULT_MANAGER, false, true, NULL,
             NULL};
  if ((rc = intercept(f, &call, err)) != 0 || (rc = check_write_options(o, err)) != 0)
    return rc;
  return do_create(f, obj, false, &by, o->dry_run, out, err);
}

static int f_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  return f_create_with(c, obj, &no_write, out, err);
}

/* locate finds obj's item (mu held): 0 with *it set, or NotFound (KCR_EAPI)
 * or KCR_ENOMEM with *it NULL. */
static int locate(kcr_fake_client_t *f, const obj_id *id, who_t *w, item_t **it, kcr_error_t *err) {
  char *key = make_key(id->group, id->kind, id->ns, id->name);
  int rc;
  who_init(w, id->group, id->kind, id->name);
  *it = NULL;
  if (!key) {
    oom(err);
    return KCR_ENOMEM;
  }
  *it = find(f, key);
  kcr__free(key);
  if (*it)
    return 0;
  rc = not_found(err, w);
  return rc ? rc : KCR_EAPI;
}

static bool is_status(const char *subresource) {
  return subresource && strcmp(subresource, "status") == 0;
}

static bool is_scale(const char *subresource) {
  return subresource && strcmp(subresource, "scale") == 0;
}

static int check_subresource(const char *subresource, bool scale_too, kcr_error_t *err) {
  if (subresource && !is_status(subresource) && !(scale_too && is_scale(subresource)))
    return kcr_error_set(err, KCR_ENOTSUP, "fake client: subresource %s is not supported here",
                         subresource);
  return 0;
}

/* ---- scale (autoscaling/v1 Scale) ---- */

static int cmp_strings(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* values_text appends "(a,b)" of a requirement's values, sorted. */
static int values_text(const json_t *values, kcr_buf_t *b) {
  size_t n = json_array_size(values), k = 0;
  const char **v = kcr__calloc(n ? n : 1, sizeof(*v));
  int rc = 0;
  if (!v)
    return KCR_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (json_is_string(json_array_get(values, i)))
      v[k++] = json_string_value(json_array_get(values, i));
  qsort(v, k, sizeof(*v), cmp_strings);
  rc |= kcr_buf_appendc(b, '(');
  for (size_t i = 0; i < k; i++)
    rc |= kcr_buf_appendf(b, "%s%s", i ? "," : "", v[i]);
  rc |= kcr_buf_appendc(b, ')');
  kcr__free(v);
  return rc ? KCR_ENOMEM : 0;
}

/*
 * selector_text writes a label selector as the API server writes a Scale's
 * status.selector (metav1.FormatLabelSelector): its requirements sorted, "k=v",
 * "k in (a,b)", "k notin (a,b)", "k", "!k", joined by commas. A
 * ReplicationController's selector is a plain map (only "k=v" terms). *out:
 * new text (kcr__free), "" for none. Returns 0 or KCR_ENOMEM.
 */
static int selector_text(const json_t *sel, bool plain_map, char **out) {
  const json_t *ml = plain_map ? sel : json_object_get(sel, "matchLabels");
  const json_t *me = plain_map ? NULL : json_object_get(sel, "matchExpressions");
  size_t n = json_object_size(ml) + json_array_size(me), k = 0, i;
  char **terms = kcr__calloc(n ? n : 1, sizeof(*terms));
  kcr_buf_t b, all;
  const char *key;
  json_t *v;
  int rc = 0;
  *out = NULL;
  if (!terms)
    return KCR_ENOMEM;
  kcr_buf_init(&b, (size_t)1 << 20);
  kcr_buf_init(&all, (size_t)1 << 20);
  json_object_foreach((json_t *)ml, key, v) {
    kcr_buf_reset(&b);
    if (kcr_buf_appendf(&b, "%s=%s", key, json_is_string(v) ? json_string_value(v) : "") != 0 ||
        !(terms[k++] = kcr__strdup(b.data ? b.data : "")))
      rc = KCR_ENOMEM;
  }
  json_array_foreach(me, i, v) {
    const char *ek = json_string_value(json_object_get(v, "key"));
    const char *op = json_string_value(json_object_get(v, "operator"));
    if (!ek || !op || rc)
      continue;
    kcr_buf_reset(&b);
    if (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0)
      rc = kcr_buf_appendf(&b, "%s %s ", ek, op[0] == 'I' ? "in" : "notin") ||
           values_text(json_object_get(v, "values"), &b);
    else if (strcmp(op, "Exists") == 0)
      rc = kcr_buf_appends(&b, ek);
    else
      rc = kcr_buf_appendf(&b, "!%s", ek);
    if (rc || !(terms[k++] = kcr__strdup(b.data ? b.data : "")))
      rc = KCR_ENOMEM;
  }
  if (k > 1 && rc == 0)
    qsort(terms, k, sizeof(*terms), cmp_strings);
  for (i = 0; i < k && rc == 0; i++)
    if (terms[i] && kcr_buf_appendf(&all, "%s%s", i ? "," : "", terms[i]) != 0)
      rc = KCR_ENOMEM;
  if (rc == 0 && !(*out = kcr__strdup(all.data ? all.data : "")))
    rc = KCR_ENOMEM;
  for (i = 0; i < k; i++)
    kcr__free(terms[i]);
  kcr__free(terms);
  kcr_buf_free(&b);
  kcr_buf_free(&all);
  return rc ? KCR_ENOMEM : 0;
}

/* scale_of: a new autoscaling/v1 Scale of obj, as the API server answers
 * GET .../scale: spec.replicas (1 when unset), status.replicas, the selector. */
static json_t *scale_of(const json_t *obj) {
  const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
  const json_t *r = json_object_get(spec, "replicas");
  json_int_t status_replicas =
      json_integer_value(json_object_get(json_object_get(obj, "status"), "replicas"));
  bool plain = strcmp(kcr_meta_kind(obj), "ReplicationController") == 0;
  static const char *const kept[] = {"name", "namespace", "uid", "resourceVersion",
                                     "creationTimestamp"};
  json_t *scale, *smd, *status;
  char *sel = NULL;
  if (selector_text(json_object_get(spec, "selector"), plain, &sel) != 0)
    return NULL;
  scale = json_pack("{s:s, s:s, s:{}, s:{s:I}, s:{s:I}}", "apiVersion", "autoscaling/v1", "kind",
                    "Scale", "metadata", "spec", "replicas",
                    (json_int_t)(json_is_integer(r) ? json_integer_value(r) : 1), "status",
                    "replicas", status_replicas);
  smd = json_object_get(scale, "metadata");
  status = json_object_get(scale, "status");
  for (size_t i = 0; scale && i < sizeof(kept) / sizeof(kept[0]); i++) {
    json_t *v = json_object_get(md, kept[i]);
    if (v && json_object_set(smd, kept[i], v) != 0) {
      json_decref(scale);
      scale = NULL;
    }
  }
  if (scale && *sel && json_object_set_new(status, "selector", json_string(sel)) != 0) {
    json_decref(scale);
    scale = NULL;
  }
  kcr__free(sel);
  return scale;
}

/* scale_next: *out a new copy of the stored object with the Scale body's
 * spec.replicas, under the body's resourceVersion (when it names one: a
 * conflict check, as the server's), else the stored one. */
static int scale_next(const item_t *it, const json_t *body, const who_t *w, json_t **out,
                      kcr_error_t *err) {
  const json_t *r = json_object_get(json_object_get(body, "spec"), "replicas");
  const char *kind = json_string_value(json_object_get(body, "kind"));
  const char *rv = str_at(body, "metadata", "resourceVersion");
  json_t *next, *spec;
  char why[200];
  if (!kind || strcmp(kind, "Scale") != 0) {
    snprintf(why, sizeof(why), "expected an autoscaling/v1 Scale, got %.100s",
             kind ? kind : "no kind");
    return bad_request(err, why);
  }
  if (r &&
      (!json_is_integer(r) || json_integer_value(r) < 0 || json_integer_value(r) > INT32_MAX)) {
    return invalid(err, w, "spec.replicas: Invalid value: must be a non-negative 32-bit integer");
  }
  next = json_deep_copy(it->obj);
  spec = next ? json_object_get(next, "spec") : NULL;
  if (next && !json_is_object(spec)) {
    spec = json_object();
    if (json_object_set_new(next, "spec", spec) != 0)
      spec = NULL;
  }
  if (!spec ||
      json_object_set_new(spec, "replicas", json_integer(r ? json_integer_value(r) : 0)) != 0 ||
      (rv && *rv && json_object_set_new(md_of(next), "resourceVersion", json_string(rv)) != 0)) {
    json_decref(next);
    return oom(err);
  }
  *out = next;
  return 0;
}

/* ---- update and patch ---- */

static int f_update_with(const kcr_objclient *c, const json_t *obj, const char *subresource,
                         const json_t *body, const kcr_write_options *o, json_t **out,
                         kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX];
  json_t *next = NULL, *result = NULL;
  item_t *it;
  obj_id id;
  who_t w;
  int rc;
  if ((rc = begin_write(f, KCR_FAKE_UPDATE, obj, body ? body : obj, subresource, &gvk, group,
                        sizeof(group), &id, err)) != 0 ||
      (rc = check_subresource(subresource, true, err)) != 0 ||
      (rc = check_write_options(o, err)) != 0)
    return rc;
  if (!*id.name) {
    who_init(&w, id.group, id.kind, "");
    return invalid(err, &w, "metadata.name: Required value: name is required");
  }
  if (!is_scale(subresource) && !(next = json_deep_copy(body ? body : obj)))
    return oom(err);
  pthread_mutex_lock(&f->mu);
  if ((rc = locate(f, &id, &w, &it, err)) == 0 &&
      ((is_status(subresource) && !has_status(f, id.group, id.kind)) ||
       (is_scale(subresource) && !has_scale(id.group, id.kind))))
    rc = no_subresource(err, &w, subresource);
  else if (rc == 0 && is_scale(subresource))
    rc = scale_next(it, body ? body : obj, &w, &next, err);
  if (rc == 0) {
    by_t by = {o->field_manager ? o->field_manager : KCR__FAKE_DEFAULT_MANAGER, false, true, NULL,
               is_scale(subresource) ? subresource : NULL};
    rc = commit(f, it, next, is_scale(subresource) ? NULL : subresource, o->dry_run, &w, &by,
                &result, err);
    next = NULL; /* commit stole it */
  }
  pthread_mutex_unlock(&f->mu);
  json_decref(next);
  if (rc == 0 && is_scale(subresource)) {
    *out = scale_of(result);
    json_decref(result);
    return *out ? 0 : oom(err);
  }
  *out = result;
  return rc;
}

static int f_update(const kcr_objclient *c, const json_t *obj, const char *subresource,
                    json_t **out, kcr_error_t *err) {
  return f_update_with(c, obj, subresource, NULL, &no_write, out, err);
}

/* smp_apply applies a strategic merge patch to *next (fake_smp.c); on failure
 * *next is released and set to NULL. */
static int smp_apply(json_t **next, const json_t *p, const who_t *w, kcr_error_t *err) {
  char why[600];
  int rc = kcr__smp_patch(w->group, w->kind, next, p, why, sizeof(why));
  if (rc == KCR__SMP_OK)
    return 0;
  json_decref(*next);
  *next = NULL;
  if (rc == KCR__SMP_UNKNOWN_KIND)
    return api_error(err, 415, "UnsupportedMediaType", NULL,
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json-patch+json, application/merge-patch+json, "
                     "application/apply-patch+yaml");
  if (rc == KCR__SMP_BAD_PATCH)
    return bad_request(err, why);
  return oom(err);
}

static int f_patch_with(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                        const char *patch, size_t patch_len, const char *subresource,
                        const kcr_write_options *o, json_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX], why[600];
  json_t *p, *next;
  json_error_t jerr;
  item_t *it;
  obj_id id;
  who_t w;
  int rc;
  if ((rc = begin_write(f, KCR_FAKE_PATCH, obj, obj, subresource, &gvk, group, sizeof(group), &id,
                        err)) != 0 ||
      (rc = check_subresource(subresource, false, err)) != 0 ||
      (rc = check_write_options(o, err)) != 0)
    return rc;
  if (type == KCR_PATCH_APPLY)
    return kcr_error_set(err, KCR_ENOTSUP,
                         "fake client: an apply patch is not supported here (use "
                         "kcr_objclient_apply)");
  p = json_loadb(patch ? patch : "", patch_len, JSON_DECODE_ANY, &jerr);
  if (!p) {
    snprintf(why, sizeof(why), "the patch is not JSON: %s", jerr.text);
    return bad_request(err, why);
  }
  pthread_mutex_lock(&f->mu);
  if ((rc = locate(f, &id, &w, &it, err)) == 0 && is_status(subresource) &&
      !has_status(f, id.group, id.kind))
    rc = no_subresource(err, &w, subresource);
  if (rc) {
    pthread_mutex_unlock(&f->mu);
    json_decref(p);
    return rc;
  }
  next = json_deep_copy(it->obj);
  if (!next) {
    rc = oom(err);
  } else if (type == KCR_PATCH_JSON) {
    if (json_patch(next, p, why, sizeof(why)) != 0) {
      json_decref(next);
      next = NULL;
      rc = invalid(err, &w, why);
    }
  } else if (type == KCR_PATCH_STRATEGIC) {
    rc = smp_apply(&next, p, &w, err);
  } else {
    next = merge_patch(next, p);
    if (!next)
      rc = oom(err);
  }
  if (next && rc == 0) {
    /* a patch names no resourceVersion unless it sets one: the stored one holds */
    const char *prv = json_is_object(p) ? str_at(p, "metadata", "resourceVersion") : NULL;
    by_t by = {o->field_manager ? o->field_manager : KCR__FAKE_DEFAULT_MANAGER, false, true, NULL,
               NULL};
    if (!prv)
      json_object_set(md_of(next), "resourceVersion",
                      json_object_get(json_object_get(it->obj, "metadata"), "resourceVersion"));
    rc = commit(f, it, next, subresource, o->dry_run, &w, &by, out, err);
  }
  pthread_mutex_unlock(&f->mu);
  json_decref(p);
  return rc;
}

static int f_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                   const char *patch, size_t patch_len, const char *subresource, json_t **out,
                   kcr_error_t *err) {
  return f_patch_with(c, obj, type, patch, patch_len, subresource, &no_write, out, err);
}

/*
 * f_apply: server-side apply (fake_apply.c, fake_fields.c): create when
 * absent, else the applied configuration merged into the stored object, what
 * this manager applied before and no longer applies (and nobody else owns)
 * removed, and the managedFields moved: a conflict (409) unless forced.
 */
static int f_apply(const kcr_objclient *c, const json_t *obj, const kcr_apply_options *o,
                   const char *subresource, json_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX], why[600];
  const char *manager = o->field_manager ? o->field_manager : c->field_manager;
  json_t *next = NULL, *mf;
  by_t by = {NULL, true, false, NULL, NULL};
  item_t *it;
  obj_id id;
  who_t w;
  int rc;
  if ((rc = begin_write(f, KCR_FAKE_APPLY, obj, obj, subresource, &gvk, group, sizeof(group), &id,
                        err)) != 0 ||
      (rc = check_subresource(subresource, false, err)) != 0)
    return rc;
  if (!manager || !*manager) /* as the client refuses it (the server would answer 422) */
    return kcr_error_set(err, KCR_EINVAL, "apply: a field manager is required");
  by.manager = manager;
  by.force = o->force;
  mf = json_object_get(json_object_get(obj, "metadata"), "managedFields");
  if (mf && !json_is_null(mf))
    return bad_request(err, "metadata.managedFields must be nil");
  pthread_mutex_lock(&f->mu);
  rc = locate(f, &id, &w, &it, err);
  if (rc == KCR_EAPI && !it && !subresource) { /* NotFound: create it */
    pthread_mutex_unlock(&f->mu);
    if (err)
      kcr_error_clear(err);
    return do_create(f, obj, false, &by, o->dry_run, out, err);
  }
  if (rc == 0 && is_status(subresource) && !has_status(f, id.group, id.kind))
    rc = no_subresource(err, &w, subresource);
  if (rc == 0 && !(next = json_deep_copy(it->obj)))
    rc = oom(err);
  if (rc == 0) {
    int mr = kcr__apply_merge(id.group, id.kind, &next, obj, why, sizeof(why));
    if (mr == KCR__SMP_BAD_PATCH)
      rc = bad_request(err, why);
    else if (mr != KCR__SMP_OK)
      rc = oom(err);
  }
  if (rc == 0) {
    /* the managers before: the first apply to an untracked object gives what
     * it has to before-first-apply; then this manager's set is what it applies
     * now, and what it applied before that nobody owns now goes */
    int scope = fields_scope(f, id.group, id.kind, subresource);
    kcr__mf_who who = {manager, subresource, json_string_value(json_object_get(obj, "apiVersion")),
                       true};
    char now[KCR_TIME_BUFSIZE];
    now_text(f, now, sizeof(now));
    if (!(by.managers = managers_of(it->obj)) ||
        kcr__mf_before_first_apply(by.managers, id.group, id.kind, it->obj,
                                   fields_scope(f, id.group, id.kind, NULL), now) != 0 ||
        kcr__mf_apply_prepare(by.managers, id.group, id.kind, next, obj, &who, scope) != 0)
      rc = oom(err);
  }
  if (rc == 0) {
    if (!str_at(obj, "metadata", "resourceVersion"))
      json_object_set(md_of(next), "resourceVersion",
                      json_object_get(json_object_get(it->obj, "metadata"), "resourceVersion"));
    rc = commit(f, it, next, subresource, o->dry_run, &w, &by, out, err);
    next = NULL; /* commit stole it */
  }
  pthread_mutex_unlock(&f->mu);
  json_decref(next);
  json_decref(by.managers);
  return rc;
}

/* ---- delete ---- */

/*
 * delete_locked deletes the stored item it as the API server does: the
 * preconditions of o (409 when they do not hold), then finalizers hold it
 * (deletionTimestamp set once) or it goes. With o->dry_run only the checks
 * run. mu held.
 */
static int delete_locked(kcr_fake_client_t *f, item_t *it, const kcr_delete_options *o,
                         const who_t *w, kcr_error_t *err) {
  json_t *md = json_object_get(it->obj, "metadata");
  const char *uid = kcr_meta_uid(it->obj), *rv = kcr_meta_resource_version(it->obj);
  char why[400], t[KCR_TIME_BUFSIZE];
  if (o->precondition_uid && strcmp(o->precondition_uid, uid ? uid : "") != 0) {
    snprintf(why, sizeof(why),
             "Precondition failed: UID in precondition: %s, UID in object meta: %s",
             o->precondition_uid, uid ? uid : "");
    return conflict(err, w, why);
  }
  if (o->precondition_resource_version &&
      strcmp(o->precondition_resource_version, rv ? rv : "") != 0) {
    snprintf(why, sizeof(why),
             "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in "
             "object meta: %s",
             o->precondition_resource_version, rv ? rv : "");
    return conflict(err, w, why);
  }
  if (o->dry_run)
    return 0;
  if (json_array_size(json_object_get(md, "finalizers")) > 0) {
    /* finalizers hold it: mark it (once) and keep it */
    if (!json_object_get(md, "deletionTimestamp")) {
      /* a new tree: the stored one may be held by the watch history */
      json_t *before, *next = json_deep_copy(it->obj), *nmd = json_object_get(next, "metadata");
      now_text(f, t, sizeof(t));
      if (!nmd || json_object_set_new(nmd, "deletionTimestamp", json_string(t)) != 0 ||
          json_object_set_new(nmd, "deletionGracePeriodSeconds", json_integer(0)) != 0 ||
          next_rv(f, nmd) != 0) {
        json_decref(next);
        return oom(err);
      }
      before = it->obj;
      it->obj = next;
      emit(f, KCR_WATCH_MODIFIED, it->key, before, it->obj);
    }
    return 0;
  }
  /* the server's delete is a change too: it has a version of its own */
  if (next_rv(f, md) != 0)
    return oom(err);
  emit(f, KCR_WATCH_DELETED, it->key, NULL, it->obj);
  remove_item(f, it);
  return 0;
}

static int f_del(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                 kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX];
  item_t *it;
  obj_id id;
  who_t w;
  int rc;
  if ((rc = begin_write(f, KCR_FAKE_DELETE, obj, NULL, NULL, &gvk, group, sizeof(group), &id,
                        err)) != 0)
    return rc;
  pthread_mutex_lock(&f->mu);
  if ((rc = locate(f, &id, &w, &it, err)) == 0)
    rc = delete_locked(f, it, o, &w, err);
  pthread_mutex_unlock(&f->mu);
  return rc;
}

/*
 * f_delete_all_of deletes what a list with lo would select (namespace, label
 * and field selectors, field indexes), each as a delete with o would
 * (finalizers hold; preconditions checked per object; dry run deletes
 * nothing). The first failure stops it, as the server's collection delete.
 */
static int f_delete_all_of(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *lo,
                           const kcr_delete_options *o, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_fake_call call = {KCR_FAKE_DELETE_ALL_OF, gvk, lo->ns ? lo->ns : "", NULL, NULL, NULL};
  selection_t s;
  who_t w;
  int rc, m;
  if ((rc = intercept(f, &call, err)) != 0)
    return rc;
  pthread_mutex_lock(&f->mu);
  if ((rc = selection_parse(f, gvk, lo, &s, err)) == 0) {
    for (size_t i = 0; i < f->n && rc == 0;) {
      size_t before = f->n;
      item_t *it = &f->items[i];
      if ((m = selection_matches(f, &s, it, err)) <= 0) {
        rc = m;
        i++;
        continue;
      }
      who_init(&w, gvk->group, gvk->kind, kcr_meta_name(it->obj));
      rc = delete_locked(f, it, o, &w, err);
      if (f->n == before)
        i++; /* kept (finalizers, dry run): next; removed: i is the next one */
    }
  }
  pthread_mutex_unlock(&f->mu);
  selection_free(&s);
  return rc;
}

/* ---- subresources and metadata ---- */

static int f_get_subresource(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                             const char *name, const char *subresource, json_t **out,
                             kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_fake_call call = {KCR_FAKE_GET, gvk, ns ? ns : "", name, NULL, subresource};
  const char *group = gvk->group ? gvk->group : "";
  json_t *obj = NULL;
  bool status;
  who_t w;
  int rc;
  if ((rc = intercept(f, &call, err)) != 0 || (rc = check_subresource(subresource, true, err)) != 0)
    return rc;
  if ((rc = do_get(f, gvk, ns, name, &obj, err)) != 0)
    return rc;
  pthread_mutex_lock(&f->mu);
  status = has_status(f, group, gvk->kind);
  pthread_mutex_unlock(&f->mu);
  who_init(&w, group, gvk->kind, name);
  if (is_status(subresource)) {
    if (!status) {
      json_decref(obj);
      return no_subresource(err, &w, subresource);
    }
    *out = obj; /* the status subresource answers the whole object */
    return 0;
  }
  if (!has_scale(group, gvk->kind)) {
    json_decref(obj);
    return no_subresource(err, &w, subresource);
  }
  *out = scale_of(obj);
  json_decref(obj);
  return *out ? 0 : oom(err);
}

/* eviction: evict the Pod obj names (delete it, dry run honoured) and answer
 * the Status the server does (201 Success). */
static int eviction(const kcr_objclient *c, const json_t *obj, const json_t *body,
                    const kcr_write_options *o, json_t **out, kcr_error_t *err) {
  const json_t *dopts = json_object_get(body, "deleteOptions");
  kcr_delete_options d;
  obj_id id;
  who_t w;
  item_t *it;
  kcr_fake_client_t *f = c->data;
  int rc;
  memset(&d, 0, sizeof(d));
  d.dry_run = o->dry_run || str_in(json_object_get(dopts, "dryRun"), "All");
  d.precondition_uid = str_at(dopts, "preconditions", "uid");
  d.precondition_resource_version = str_at(dopts, "preconditions", "resourceVersion");
  if ((rc = obj_id_of(obj, &id, err)) != 0)
    return rc;
  pthread_mutex_lock(&f->mu);
  if ((rc = locate(f, &id, &w, &it, err)) == 0)
    rc = delete_locked(f, it, &d, &w, err);
  pthread_mutex_unlock(&f->mu);
  if (rc)
    return rc;
  *out = json_pack("{s:s, s:s, s:{}, s:s, s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
                   "status", "Success", "code", 201);
  return *out ? 0 : oom(err);
}

/* token: the TokenRequest body with a fake token (as controller-runtime's
 * fake: "fake-token", expiring 6041-01-01), for a ServiceAccount that exists. */
static int token(const kcr_objclient *c, const json_t *obj, const json_t *body, json_t **out,
                 kcr_error_t *err) {
  kcr_gvk gvk = {"", "v1", "ServiceAccount"};
  json_t *sa = NULL, *tr, *status, *md;
  int rc;
  if ((rc = do_get(c->data, &gvk, kcr_meta_namespace(obj), kcr_meta_name(obj), &sa, err)) != 0)
    return rc;
  tr = json_deep_copy(body);
  md = tr ? md_of(tr) : NULL;
  status =
      json_pack("{s:s, s:s}", "token", "fake-token", "expirationTimestamp", "6041-01-01T00:00:00Z");
  if (!md || !status || json_object_set_new(tr, "status", status) != 0 ||
      json_object_set(md, "name", json_object_get(json_object_get(sa, "metadata"), "name")) != 0 ||
      json_object_set(md, "namespace",
                      json_object_get(json_object_get(sa, "metadata"), "namespace")) != 0) {
    if (!tr || !md)
      json_decref(status);
    json_decref(tr);
    json_decref(sa);
    return oom(err);
  }
  json_decref(sa);
  *out = tr;
  return 0;
}

static int f_create_subresource(const kcr_objclient *c, const json_t *obj, const char *subresource,
                                const json_t *body, const kcr_write_options *o, json_t **out,
                                kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX], why[300];
  const char *body_kind = json_string_value(json_object_get(body, "kind"));
  bool evict = strcmp(subresource, "eviction") == 0;
  obj_id id;
  who_t w;
  int rc;
  if ((rc = begin_write(f, KCR_FAKE_CREATE, obj, body, subresource, &gvk, group, sizeof(group), &id,
                        err)) != 0 ||
      (rc = check_write_options(o, err)) != 0)
    return rc;
  if (!evict && strcmp(subresource, "token") != 0)
    return kcr_error_set(err, KCR_ENOTSUP,
                         "fake client: creating subresource %s is not supported (eviction of "
                         "a Pod, token of a ServiceAccount)",
                         subresource);
  if (!body_kind || strcmp(body_kind, evict ? "Eviction" : "TokenRequest") != 0) {
    snprintf(why, sizeof(why), "got invalid kind %.100s, expected %s",
             body_kind ? body_kind : "(none)", evict ? "Eviction" : "TokenRequest");
    return bad_request(err, why);
  }
  who_init(&w, id.group, id.kind, id.name);
  if (*id.group || strcmp(id.kind, evict ? "Pod" : "ServiceAccount") != 0)
    return no_subresource(err, &w, subresource);
  if (evict)
    return eviction(c, obj, body, o, out, err);
  return token(c, obj, body, out, err);
}

static int f_get_metadata(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                          const char *name, json_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_fake_call call = {KCR_FAKE_GET, gvk, ns ? ns : "", name, NULL, NULL};
  json_t *obj = NULL;
  int rc;
  if ((rc = intercept(f, &call, err)) != 0 || (rc = do_get(f, gvk, ns, name, &obj, err)) != 0)
    return rc;
  *out = metadata_only(obj);
  json_decref(obj);
  return *out ? 0 : oom(err);
}

/* ---- watches ---- */

/* fake_watch: one open watch; registered in the fake's list until stopped. */
struct fake_watch {
  kcr_fake_client_t *f; /* NULL once the fake is destroyed (written under f->mu) */
  kcr_objwatch_t *w;
  selection_t sel; /* ns points at ns below; parsed in place (the field terms point into it) */
  char ns[256];
  bool metadata; /* PartialObjectMetadata events */
};

/* watch_send hands fw's consumer its own copy of obj as an event of type
 * (f: fw's fake, mu held). */
static void watch_send(const kcr_fake_client_t *f, fake_watch_t *fw, kcr_watch_event_type type,
                       const json_t *obj) {
  json_t *copy = shown(f, fw->metadata ? metadata_only(obj) : json_deep_copy(obj));
  if (!copy) {
    kcr_error_t e;
    kcr_error_clear(&e);
    kcr_error_set(&e, KCR_ENOMEM, "fake client: watch: out of memory");
    kcr_objwatch_close(fw->w, KCR_ENOMEM, &e);
    return;
  }
  (void)kcr_objwatch_send_new(fw->w, type, copy, NULL); /* a watch that is over drops it */
}

/* watch_matches: whether fw selects obj (an index function's error: no). */
static bool watch_matches(const kcr_fake_client_t *f, const fake_watch_t *fw, const char *key,
                          const json_t *obj) {
  kcr_error_t e;
  kcr_error_clear(&e);
  return selection_matches_obj(f, &fw->sel, key, obj, &e) > 0;
}

/*
 * deliver tells fw of e as a server's watch with a selector does: an object
 * that comes into the selection is ADDED, one that leaves it DELETED (in the
 * state that made it leave), a change inside it MODIFIED. mu held.
 */
static void deliver(const kcr_fake_client_t *f, fake_watch_t *fw, const fake_event_t *e) {
  bool now = watch_matches(f, fw, e->key, e->after);
  bool was = e->type == KCR_WATCH_MODIFIED && e->before && watch_matches(f, fw, e->key, e->before);
  if (e->type == KCR_WATCH_MODIFIED && (now || was))
    watch_send(f, fw,
               was && now ? KCR_WATCH_MODIFIED
               : now      ? KCR_WATCH_ADDED
                          : KCR_WATCH_DELETED,
               e->after);
  else if (e->type != KCR_WATCH_MODIFIED && now)
    watch_send(f, fw, e->type, e->after);
}

static void event_free(fake_event_t *e) {
  kcr__free(e->key);
  json_decref(e->before);
  json_decref(e->after);
  memset(e, 0, sizeof(*e));
}

/* hist_drop_oldest forgets the oldest change kept (mu held). */
static void hist_drop_oldest(kcr_fake_client_t *f) {
  fake_event_t *e = &f->hist[f->hist_start];
  f->hist_floor = e->rv;
  event_free(e);
  f->hist_start = (f->hist_start + 1) % f->hist_max;
  f->hist_n--;
}

/*
 * emit records a change in the watch history and tells every open watch of
 * it. before is stolen (NULL: none); after is copied. A change the history has
 * no memory for only moves the floor: a watch from an earlier version is then
 * told 410 Expired, as the server's watch cache does. mu held.
 */
static void emit(kcr_fake_client_t *f, kcr_watch_event_type type, const char *key, json_t *before,
                 const json_t *after) {
  fake_event_t e = {0};
  const char *rv = kcr_meta_resource_version(after);
  e.rv = rv ? strtoull(rv, NULL, 10) : f->rv;
  e.type = type;
  e.before = before;
  e.key = kcr__strdup(key);
  e.after = json_deep_copy(after);
  if (!e.key || !e.after) {
    /* no memory to tell anyone: every watch ends, as a broken stream does */
    kcr_error_t err;
    kcr_error_clear(&err);
    kcr_error_set(&err, KCR_ENOMEM, "fake client: watch: out of memory");
    for (size_t i = 0; i < f->nwatches; i++)
      kcr_objwatch_close(f->watches[i]->w, KCR_ENOMEM, &err);
    event_free(&e);
    f->hist_floor = f->rv;
    return;
  }
  for (size_t i = 0; i < f->nwatches; i++)
    deliver(f, f->watches[i], &e);
  if (f->hist_max == 0) {
    f->hist_floor = e.rv;
    event_free(&e);
    return;
  }
  if (!f->hist) {
    if (!(f->hist = kcr__calloc(f->hist_max, sizeof(*f->hist)))) {
      f->hist_floor = e.rv;
      event_free(&e);
      return;
    }
  }
  if (f->hist_n == f->hist_max)
    hist_drop_oldest(f);
  f->hist[(f->hist_start + f->hist_n) % f->hist_max] = e;
  f->hist_n++;
}

static void watch_stop(void *data) {
  fake_watch_t *fw = data;
  kcr_fake_client_t *f = fw->f;
  if (!f)
    return; /* the fake is gone and took its list with it */
  pthread_mutex_lock(&f->mu);
  for (size_t i = 0; i < f->nwatches; i++) {
    if (f->watches[i] == fw) {
      f->watches[i] = f->watches[--f->nwatches];
      break;
    }
  }
  fw->f = NULL;
  pthread_mutex_unlock(&f->mu);
}

static void watch_release(void *data) {
  fake_watch_t *fw = data;
  selection_free(&fw->sel);
  kcr__free(fw);
}

static const kcr_objwatch_hooks fake_watch_hooks = {watch_stop, watch_release};

/* watch_version reads where a watch starts: *initial when it starts with the
 * current state (no version, or "0"), else *from. */
static int watch_version(const kcr_watch_options *o, bool *initial, unsigned long long *from,
                         kcr_error_t *err) {
  const char *rv = o->resource_version;
  char *end = NULL, msg[300];
  *initial = !rv || !*rv || strcmp(rv, "0") == 0;
  *from = 0;
  if (*initial)
    return 0;
  *from = strtoull(rv, &end, 10);
  if (!isdigit((unsigned char)*rv) || *end) {
    snprintf(msg, sizeof(msg), "invalid resource version \"%.200s\"", rv);
    return bad_request(err, msg);
  }
  return 0;
}

/* watch_start sends a new watch what comes before the live changes: the
 * current state (initial), or the history after from, or 410 Expired when
 * the history no longer goes back to from. Returns false when the watch is
 * over already (expired). mu held. */
static bool watch_start(kcr_fake_client_t *f, fake_watch_t *fw, const kcr_gvk *gvk,
                        const kcr_watch_options *o, bool initial, unsigned long long from) {
  if (initial) {
    size_t nsel = 0;
    json_t **sel = kcr__calloc(f->n ? f->n : 1, sizeof(json_t *));
    if (!sel) {
      kcr_objwatch_close(fw->w, KCR_ENOMEM, NULL);
      return false;
    }
    for (size_t i = 0; i < f->n; i++)
      if (watch_matches(f, fw, f->items[i].key, f->items[i].obj))
        sel[nsel++] = f->items[i].obj;
    qsort(sel, nsel, sizeof(json_t *), cmp_items);
    for (size_t i = 0; i < nsel; i++)
      watch_send(f, fw, KCR_WATCH_ADDED, sel[i]);
    kcr__free(sel);
    if (o->send_initial_events) {
      char av[KCR_GVK_GROUP_MAX + 64], rv[32];
      json_t *bm;
      kcr_gvk_api_version(gvk, av, sizeof(av));
      snprintf(rv, sizeof(rv), "%llu", f->rv);
      bm =
          json_pack("{s:s, s:s, s:{s:s, s:{s:s}}}", "apiVersion", av, "kind", gvk->kind, "metadata",
                    "resourceVersion", rv, "annotations", "k8s.io/initial-events-end", "true");
      if (bm)
        (void)kcr_objwatch_send_new(fw->w, KCR_WATCH_BOOKMARK, bm, NULL);
    }
    return true;
  }
  if (from < f->hist_floor) {
    kcr_error_t gone;
    char msg[200];
    json_t *status;
    snprintf(msg, sizeof(msg), "too old resource version: %llu (%llu)", from, f->hist_floor + 1);
    status = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                       "metadata", "status", "Failure", "message", msg, "reason", "Expired", "code",
                       410);
    kcr_error_clear(&gone);
    kcr_fake_error(&gone, 410, "Expired", "%s", msg);
    if (status)
      (void)kcr_objwatch_send_new(fw->w, KCR_WATCH_ERROR, status, &gone);
    kcr_objwatch_close(fw->w, KCR_ECLOSED, NULL);
    return false;
  }
  for (size_t i = 0; i < f->hist_n; i++) {
    const fake_event_t *e = &f->hist[(f->hist_start + i) % f->hist_max];
    if (e->rv > from)
      deliver(f, fw, e);
  }
  return true;
}

static int f_watch(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                   const kcr_watch_options *o, kcr_objwatch_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_fake_call call = {KCR_FAKE_WATCH, gvk, ns ? ns : "", NULL, NULL, NULL};
  kcr_list_options lo;
  fake_watch_t *fw;
  unsigned long long from;
  bool initial;
  int rc;
  who_t w;

  if ((rc = intercept(f, &call, err)) != 0)
    return rc;
  if ((rc = watch_version(o, &initial, &from, err)) != 0)
    return rc;
  if (o->send_initial_events && !o->allow_bookmarks) {
    who_init(&w, gvk->group, gvk->kind, "");
    return invalid(err, &w,
                   "sendInitialEvents: Forbidden: sendInitialEvents requires setting "
                   "allowWatchBookmarks to true");
  }
  if (ns && strlen(ns) >= sizeof(fw->ns))
    return bad_request(err, "namespace too long");
  if (!(fw = kcr__calloc(1, sizeof(*fw))))
    return oom(err);
  snprintf(fw->ns, sizeof(fw->ns), "%s", ns ? ns : "");
  fw->metadata = o->accept && strstr(o->accept, "as=PartialObjectMetadata") != NULL;
  memset(&lo, 0, sizeof(lo));
  lo.ns = fw->ns;
  lo.label_selector = o->label_selector;
  lo.field_selector = o->field_selector;
  if ((rc = kcr_objwatch_create(&fake_watch_hooks, fw, &fw->w, err)) != 0) {
    kcr__free(fw);
    return rc;
  }
  if (o->timeout_seconds > 0) /* the server ends it then, as a normal end */
    kcr_objwatch_expire_after(fw->w, (int64_t)o->timeout_seconds * KCR_NSEC_PER_SEC);
  pthread_mutex_lock(&f->mu);
  rc = selection_parse(f, gvk, &lo, &fw->sel, err);
  if (rc == 0 && f->nwatches == f->capwatches) {
    size_t cap = f->capwatches ? f->capwatches * 2 : 4;
    fake_watch_t **v = kcr__realloc(f->watches, cap * sizeof(fake_watch_t *));
    if (!v)
      rc = oom(err);
    else {
      f->watches = v;
      f->capwatches = cap;
    }
  }
  if (rc == 0 && watch_start(f, fw, gvk, o, initial, from)) {
    fw->f = f;
    f->watches[f->nwatches++] = fw;
  }
  pthread_mutex_unlock(&f->mu);
  if (rc != 0) {
    kcr_objwatch_destroy(fw->w); /* fw->f is NULL: stop does nothing; release frees fw */
    return rc;
  }
  *out = fw->w;
  return 0;
}

void kcr_fake_client_return_managed_fields(kcr_fake_client_t *f, bool on) {
  pthread_mutex_lock(&f->mu);
  f->return_managed_fields = on;
  pthread_mutex_unlock(&f->mu);
}

int kcr_fake_client_set_watch_history(kcr_fake_client_t *f, size_t n, kcr_error_t *err) {
  if (!f)
    return kcr_error_set(err, KCR_EINVAL, "fake client: set_watch_history needs a client");
  pthread_mutex_lock(&f->mu);
  while (f->hist_n > n)
    hist_drop_oldest(f);
  if (f->hist_n > 0) {
    fake_event_t *v = kcr__calloc(n, sizeof(*v));
    if (!v) {
      pthread_mutex_unlock(&f->mu);
      return oom(err);
    }
    for (size_t i = 0; i < f->hist_n; i++)
      v[i] = f->hist[(f->hist_start + i) % f->hist_max];
    kcr__free(f->hist);
    f->hist = v;
    f->hist_start = 0;
  } else {
    kcr__free(f->hist);
    f->hist = NULL;
    f->hist_start = 0;
  }
  f->hist_max = n;
  pthread_mutex_unlock(&f->mu);
  return 0;
}

static const kcr_objclient_ops fake_ops = {.get = f_get,
                                           .list = f_list,
                                           .create = f_create,
                                           .update = f_update,
                                           .patch = f_patch,
                                           .apply = f_apply,
                                           .del = f_del,
                                           .flags = KCR_OBJCLIENT_WRITE_OPTIONS,
                                           .create_with = f_create_with,
                                           .update_with = f_update_with,
                                           .patch_with = f_patch_with,
                                           .delete_all_of = f_delete_all_of,
                                           .get_subresource = f_get_subresource,
                                           .create_subresource = f_create_subresource,
                                           .get_metadata = f_get_metadata,
                                           .list_metadata = f_list_metadata,
                                           .watch = f_watch};

/* ---- life ---- */

int kcr_fake_client_create(kcr_clock_t *clock, kcr_fake_client_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f;
  *out = NULL;
  f = kcr__calloc(1, sizeof(*f));
  if (!f)
    return oom(err);
  if (pthread_mutex_init(&f->mu, NULL) != 0) {
    kcr__free(f);
    return kcr_error_set(err, KCR_ESYS, "fake client: mutex");
  }
  f->clock = clock ? clock : kcr_clock_system();
  f->rand = kcr_rand_seed();
  f->hist_max = KCR__FAKE_WATCH_HISTORY;
  *out = f;
  return 0;
}

void kcr_fake_client_destroy(kcr_fake_client_t *f) {
  if (!f)
    return;
  for (size_t i = 0; i < f->n; i++) {
    kcr__free(f->items[i].key);
    json_decref(f->items[i].obj);
  }
  kcr__free(f->items);
  for (size_t i = 0; i < f->nidx; i++) {
    kcr__free(f->idx[i].gk);
    kcr__free(f->idx[i].name);
  }
  kcr__free(f->idx);
  for (size_t i = 0; i < f->nstatus; i++)
    kcr__free(f->status_kinds[i]);
  kcr__free(f->status_kinds);
  for (size_t i = 0; i < f->hist_n; i++)
    event_free(&f->hist[(f->hist_start + i) % f->hist_max]);
  kcr__free(f->hist);
  /* open watches end; their owners still destroy them */
  for (size_t i = 0; i < f->nwatches; i++) {
    f->watches[i]->f = NULL;
    kcr_objwatch_close(f->watches[i]->w, KCR_ECLOSED, NULL);
  }
  kcr__free(f->watches);
  pthread_mutex_destroy(&f->mu);
  kcr__free(f);
}

int kcr_fake_client_add(kcr_fake_client_t *f, const json_t *obj, kcr_error_t *err) {
  return do_create(f, obj, true, NULL, false, NULL, err);
}

int kcr_fake_client_add_index(kcr_fake_client_t *f, const kcr_gvk *gvk, const char *name,
                              kcr_index_fn fn, void *data, kcr_error_t *err) {
  char gk[KCR_GVK_GROUP_MAX + 160];
  fake_index_t *idx, ix = {NULL, NULL, fn, data};
  if (!f || !gvk || !gvk->kind || !*gvk->kind || !name || !*name || !fn)
    return kcr_error_set(err, KCR_EINVAL,
                         "fake client: add_index needs a client, a kind, a name and a function");
  gk_text(gvk->group, gvk->kind, gk, sizeof(gk));
  ix.gk = kcr__strdup(gk);
  ix.name = kcr__strdup(name);
  if (!ix.gk || !ix.name) {
    kcr__free(ix.gk);
    kcr__free(ix.name);
    return oom(err);
  }
  pthread_mutex_lock(&f->mu);
  if (find_index(f, gk, name)) {
    pthread_mutex_unlock(&f->mu);
    kcr__free(ix.gk);
    kcr__free(ix.name);
    return kcr_error_set(err, KCR_EEXIST, "fake client: %s already has an index named %s",
                         gvk->kind, name);
  }
  idx = kcr__realloc(f->idx, (f->nidx + 1) * sizeof(*idx));
  if (!idx) {
    pthread_mutex_unlock(&f->mu);
    kcr__free(ix.gk);
    kcr__free(ix.name);
    return oom(err);
  }
  f->idx = idx;
  f->idx[f->nidx++] = ix;
  pthread_mutex_unlock(&f->mu);
  return 0;
}

int kcr_fake_client_with_status_subresource(kcr_fake_client_t *f, const kcr_gvk *gvk,
                                            kcr_error_t *err) {
  char gk[KCR_GVK_GROUP_MAX + 160], *copy = NULL, **kinds;
  if (!f || (gvk && (!gvk->kind || !*gvk->kind)))
    return kcr_error_set(err, KCR_EINVAL,
                         "fake client: with_status_subresource needs a client and a kind (or "
                         "NULL)");
  if (gvk) {
    gk_text(gvk->group, gvk->kind, gk, sizeof(gk));
    if (!(copy = kcr__strdup(gk)))
      return oom(err);
  }
  pthread_mutex_lock(&f->mu);
  f->status_per_kind = true;
  if (copy && !gk_in((const char *const *)f->status_kinds, f->nstatus, copy)) {
    kinds = kcr__realloc(f->status_kinds, (f->nstatus + 1) * sizeof(*kinds));
    if (!kinds) {
      pthread_mutex_unlock(&f->mu);
      kcr__free(copy);
      return oom(err);
    }
    f->status_kinds = kinds;
    f->status_kinds[f->nstatus++] = copy;
    copy = NULL;
  }
  pthread_mutex_unlock(&f->mu);
  kcr__free(copy);
  return 0;
}

int kcr_fake_client_add_json(kcr_fake_client_t *f, const char *json, kcr_error_t *err) {
  json_error_t jerr;
  json_t *obj = json_loads(json ? json : "", 0, &jerr);
  int rc;
  if (!obj)
    return kcr_error_set(err, KCR_EPARSE, "fake client: line %d: %s", jerr.line, jerr.text);
  rc = kcr_fake_client_add(f, obj, err);
  json_decref(obj);
  return rc;
}

kcr_objclient kcr_fake_client_objclient(kcr_fake_client_t *f) {
  kcr_objclient c = {&fake_ops, f, NULL, NULL};
  return c;
}

size_t kcr_fake_client_count(kcr_fake_client_t *f, const kcr_gvk *gvk, const char *ns) {
  char prefix[512];
  size_t n = 0;
  snprintf(prefix, sizeof(prefix), "%s\x1f%s\x1f", gvk->group ? gvk->group : "", gvk->kind);
  pthread_mutex_lock(&f->mu);
  for (size_t i = 0; i < f->n; i++) {
    const char *ons = kcr_meta_namespace(f->items[i].obj);
    if (strncmp(f->items[i].key, prefix, strlen(prefix)) == 0 &&
        (!ns || strcmp(ns, ons ? ons : "") == 0))
      n++;
  }
  pthread_mutex_unlock(&f->mu);
  return n;
}
