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
#include "client/apierror_internal.h"
#include "kcr/apierror.h"
#include "kcr/controllerutil.h"
#include "kcr/meta.h"
#include "kcr/rand.h"
#include "kcr/testing.h"
#include "kcr/time.h"
#include "util/alloc.h"

typedef struct item {
  char *key;
  json_t *obj; /* the tracker's own tree */
} item_t;

typedef struct interceptor {
  kcr_fake_intercept_cb cb;
  void *data;
} interceptor_t;

struct kcr_fake_client {
  pthread_mutex_t mu;
  kcr_clock_t *clock;                 /* immutable */
  item_t *items;                      /* protected by mu */
  size_t n, cap;                      /* protected by mu */
  unsigned long long rv;              /* protected by mu: the last resourceVersion given */
  uint64_t rand;                      /* protected by mu */
  interceptor_t icpt[KCR_FAKE_VERBS]; /* protected by mu */
  uint64_t calls[KCR_FAKE_VERBS];     /* protected by mu */
};

/* ---- errors as the API server words them ---- */

int kcr_fake_error(kcr_error_t *err, int http_status, const char *reason, const char *fmt, ...) {
  char msg[KCR_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
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

/*
 * commit makes next (stolen) the stored state of it, the way the API server
 * would turn a PUT or PATCH into one: subresource "status" takes only next's
 * status; the object itself keeps the stored status; uid, creationTimestamp,
 * deletionTimestamp, name and namespace cannot change; a stale resourceVersion
 * is a Conflict; a deletionTimestamp set on a live object is Invalid (only a
 * delete sets one); no new finalizers on a deleting object; generation grows when
 * the spec changed; a write that changes nothing keeps the resourceVersion; a
 * deleting object whose last finalizer went away is deleted. *out: new copy of
 * the result. mu held.
 */
static int commit(kcr_fake_client_t *f, item_t *it, json_t *next, const char *subresource,
                  const who_t *w, json_t **out, kcr_error_t *err) {
  json_t *cur = it->obj, *result = NULL, *md, *cmd = json_object_get(cur, "metadata");
  const char *rv = str_at(next, "metadata", "resourceVersion");
  const char *cur_rv = str_at(cur, "metadata", "resourceVersion");
  static const char *const immutable[] = {
      "uid",  "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
      "name", "namespace",         "generation"};
  json_t *fins;
  bool deleting;
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
    if (!result || keep_field(result, cur, "status") != 0)
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
  /* a write that changes nothing is not a write: same resourceVersion */
  json_object_set(md, "resourceVersion", json_object_get(cmd, "resourceVersion"));
  if (json_equal(result, cur)) {
    *out = result;
    return 0;
  }
  if (!spec_equal(result, cur))
    json_object_set_new(md, "generation",
                        json_integer(json_integer_value(json_object_get(cmd, "generation")) + 1));
  if (next_rv(f, md) != 0) {
    json_decref(result);
    return oom(err);
  }
  if (deleting && json_array_size(fins) == 0) {
    remove_item(f, it); /* released: the object is gone */
    *out = result;
    return 0;
  }
  json_decref(it->obj);
  it->obj = json_deep_copy(result);
  if (!it->obj) {
    it->obj = result; /* keep a tree stored; the caller gets nothing */
    return oom(err);
  }
  *out = result;
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

static int f_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                 json_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_fake_call call = {KCR_FAKE_GET, gvk, ns ? ns : "", name, NULL, NULL};
  const char *group = gvk->group ? gvk->group : "";
  char *key;
  item_t *it;
  who_t w;
  int rc;
  if ((rc = intercept(f, &call, err)) != 0)
    return rc;
  if (!(key = make_key(group, gvk->kind, ns ? ns : "", name)))
    return oom(err);
  pthread_mutex_lock(&f->mu);
  it = find(f, key);
  if (it)
    *out = json_deep_copy(it->obj);
  pthread_mutex_unlock(&f->mu);
  kcr__free(key);
  if (!it) {
    who_init(&w, group, gvk->kind, name);
    return not_found(err, &w);
  }
  return *out ? 0 : oom(err);
}

/* parse_fields parses sel and checks that the fake answers each term: the API
 * server's field labels common to every kind, metadata.name and
 * metadata.namespace. */
static int parse_fields(const char *sel, kcr__fieldsel_t *fs, kcr_error_t *err) {
  kcr_error_t perr;
  char msg[300];
  kcr_error_clear(&perr);
  if (kcr__fieldsel_parse(sel, fs, &perr) != 0)
    return bad_request(err, perr.message);
  for (size_t i = 0; i < fs->n; i++) {
    const char *field = fs->terms[i].field;
    if (strcmp(field, "metadata.name") != 0 && strcmp(field, "metadata.namespace") != 0) {
      snprintf(msg, sizeof(msg), "field label not supported: %.200s", field);
      return bad_request(err, msg);
    }
  }
  return 0;
}

static bool fields_match(const kcr__fieldsel_t *fs, const json_t *obj) {
  for (size_t i = 0; i < fs->n; i++) {
    const kcr__fieldsel_term_t *t = &fs->terms[i];
    const char *v =
        strcmp(t->field, "metadata.name") == 0 ? kcr_meta_name(obj) : kcr_meta_namespace(obj);
    bool eq = strcmp(v ? v : "", t->value) == 0;
    if (eq == t->negate)
      return false;
  }
  return true;
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

static int f_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                  json_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_fake_call call = {KCR_FAKE_LIST, gvk, o->ns ? o->ns : "", NULL, NULL, NULL};
  const char *group = gvk->group ? gvk->group : "";
  kcr_selector_t *sel = NULL;
  kcr__fieldsel_t fields;
  size_t nsel = 0, given = 0;
  json_t **selected = NULL, *list = NULL, *items = NULL;
  char prefix[512], api_version[KCR_GVK_GROUP_MAX + 64], kind[160], rv[32], last[600] = "";
  int rc;

  if ((rc = intercept(f, &call, err)) != 0)
    return rc;
  if (o->index)
    return kcr_error_set(err, KCR_ENOTSUP,
                         "fake client: index %s: cache indexes are not supported (use a field "
                         "selector on metadata.name or metadata.namespace)",
                         o->index);
  if (o->label_selector && (rc = kcr_selector_parse(o->label_selector, &sel, NULL)) != 0)
    return rc == KCR_ENOMEM
               ? oom(err)
               : bad_request(err, "unable to parse requirement: invalid label selector");
  if ((rc = parse_fields(o->field_selector, &fields, err)) != 0) {
    kcr_selector_destroy(sel);
    return rc;
  }
  snprintf(prefix, sizeof(prefix), "%s\x1f%s\x1f", group, gvk->kind);
  kcr_gvk_api_version(gvk, api_version, sizeof(api_version));
  snprintf(kind, sizeof(kind), "%sList", gvk->kind);

  pthread_mutex_lock(&f->mu);
  selected = kcr__calloc(f->n ? f->n : 1, sizeof(json_t *));
  for (size_t i = 0; selected && i < f->n; i++) {
    const json_t *obj = f->items[i].obj;
    const char *ons = kcr_meta_namespace(obj);
    if (strncmp(f->items[i].key, prefix, strlen(prefix)) != 0)
      continue;
    if (o->ns && *o->ns && strcmp(o->ns, ons ? ons : "") != 0)
      continue;
    if (sel && !kcr_selector_matches_obj(sel, obj))
      continue;
    if (!fields_match(&fields, obj))
      continue;
    selected[nsel++] = json_deep_copy(obj);
    if (!selected[nsel - 1])
      nsel--, rc = KCR_ENOMEM;
  }
  snprintf(rv, sizeof(rv), "%llu", f->rv);
  pthread_mutex_unlock(&f->mu);
  kcr_selector_destroy(sel);
  if (!selected || rc)
    goto nomem;
  qsort(selected, nsel, sizeof(json_t *), cmp_items);
  list = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", api_version, "kind", kind, "metadata",
                   "resourceVersion", rv);
  items = json_array();
  if (!list || !items || json_object_set(list, "items", items) != 0)
    goto nomem;
  for (size_t i = 0; i < nsel; i++) {
    char k[600];
    list_key(selected[i], k, sizeof(k));
    if (o->continue_token && *o->continue_token && strcmp(k, o->continue_token) <= 0)
      continue;
    if (o->limit > 0 && given == (size_t)o->limit) {
      if (json_object_set_new(json_object_get(list, "metadata"), "continue", json_string(last)))
        goto nomem;
      break;
    }
    /* the API server fills apiVersion and kind of every item */
    if (json_object_set_new(selected[i], "apiVersion", json_string(api_version)) != 0 ||
        json_object_set_new(selected[i], "kind", json_string(gvk->kind)) != 0 ||
        json_array_append(items, selected[i]) != 0)
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
  for (size_t i = 0; selected && i < nsel; i++)
    json_decref(selected[i]);
  kcr__free(selected);
  json_decref(items);
  json_decref(list);
  return oom(err);
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
 * metadata kept where given). mu not held. */
static int do_create(kcr_fake_client_t *f, const json_t *obj, bool seed, json_t **out,
                     kcr_error_t *err) {
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
    json_object_del(copy, "status");
    json_object_del(md, "deletionTimestamp");
    json_object_del(md, "deletionGracePeriodSeconds");
  }
  if (fill_new(f, copy, !seed) != 0)
    goto nomem_locked;
  if (seed && rv && *rv) {
    unsigned long long n = strtoull(rv, NULL, 10);
    if (n > f->rv)
      f->rv = n;
  } else if (next_rv(f, md) != 0) {
    goto nomem_locked;
  }
  if (out && !(*out = json_deep_copy(copy)))
    goto nomem_locked;
  rc = insert(f, key, copy);
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

static int f_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
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
  if ((rc = intercept(f, &call, err)) != 0)
    return rc;
  return do_create(f, obj, false, out, err);
}

/* locate finds obj's item (mu held); NULL with NotFound in err. */
static item_t *locate(kcr_fake_client_t *f, const obj_id *id, who_t *w, kcr_error_t *err) {
  char *key = make_key(id->group, id->kind, id->ns, id->name);
  item_t *it;
  who_init(w, id->group, id->kind, id->name);
  if (!key) {
    oom(err);
    return NULL;
  }
  it = find(f, key);
  kcr__free(key);
  if (!it)
    not_found(err, w);
  return it;
}

static int check_subresource(const char *subresource, kcr_error_t *err) {
  if (subresource && strcmp(subresource, "status") != 0)
    return kcr_error_set(err, KCR_ENOTSUP, "fake client: subresource %s is not supported",
                         subresource);
  return 0;
}

static int f_update(const kcr_objclient *c, const json_t *obj, const char *subresource,
                    json_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX];
  kcr_fake_call call = {KCR_FAKE_UPDATE, &gvk, NULL, NULL, obj, subresource};
  json_t *next;
  item_t *it;
  obj_id id;
  who_t w;
  int rc;
  if ((rc = obj_id_of(obj, &id, err)) != 0 || kcr_meta_gvk(obj, &gvk, group, sizeof(group)) != 0)
    return rc ? rc : kcr_error_set(err, KCR_EINVAL, "fake client: bad apiVersion");
  call.ns = id.ns;
  call.name = id.name;
  if ((rc = intercept(f, &call, err)) != 0 || (rc = check_subresource(subresource, err)) != 0)
    return rc;
  if (!*id.name) {
    who_init(&w, id.group, id.kind, "");
    return invalid(err, &w, "metadata.name: Required value: name is required");
  }
  if (!(next = json_deep_copy(obj)))
    return oom(err);
  pthread_mutex_lock(&f->mu);
  it = locate(f, &id, &w, err);
  rc = it ? commit(f, it, next, subresource, &w, out, err) : (json_decref(next), KCR_EAPI);
  pthread_mutex_unlock(&f->mu);
  return rc;
}

static int f_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                   const char *patch, size_t patch_len, const char *subresource, json_t **out,
                   kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX], why[600];
  kcr_fake_call call = {KCR_FAKE_PATCH, &gvk, NULL, NULL, obj, subresource};
  json_t *p, *next;
  json_error_t jerr;
  item_t *it;
  obj_id id;
  who_t w;
  int rc;
  if ((rc = obj_id_of(obj, &id, err)) != 0 || kcr_meta_gvk(obj, &gvk, group, sizeof(group)) != 0)
    return rc ? rc : kcr_error_set(err, KCR_EINVAL, "fake client: bad apiVersion");
  call.ns = id.ns;
  call.name = id.name;
  if ((rc = intercept(f, &call, err)) != 0 || (rc = check_subresource(subresource, err)) != 0)
    return rc;
  if (type == KCR_PATCH_APPLY)
    return kcr_error_set(err, KCR_ENOTSUP,
                         "fake client: server-side apply is not supported (use create, update "
                         "or a merge/JSON patch)");
  p = json_loadb(patch ? patch : "", patch_len, JSON_DECODE_ANY, &jerr);
  if (!p) {
    snprintf(why, sizeof(why), "the patch is not JSON: %s", jerr.text);
    return bad_request(err, why);
  }
  pthread_mutex_lock(&f->mu);
  it = locate(f, &id, &w, err);
  if (!it) {
    pthread_mutex_unlock(&f->mu);
    json_decref(p);
    return KCR_EAPI;
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
  } else {
    next = merge_patch(next, p); /* strategic merge: as a merge patch (see testing.h) */
    if (!next)
      rc = oom(err);
  }
  if (next && rc == 0) {
    /* a patch names no resourceVersion unless it sets one: the stored one holds */
    const char *prv = json_is_object(p) ? str_at(p, "metadata", "resourceVersion") : NULL;
    if (!prv)
      json_object_set(md_of(next), "resourceVersion",
                      json_object_get(json_object_get(it->obj, "metadata"), "resourceVersion"));
    rc = commit(f, it, next, subresource, &w, out, err);
  }
  pthread_mutex_unlock(&f->mu);
  json_decref(p);
  return rc;
}

static int f_apply(const kcr_objclient *c, const json_t *obj, const kcr_apply_options *o,
                   const char *subresource, json_t **out, kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX];
  kcr_fake_call call = {KCR_FAKE_APPLY,     &gvk, kcr_meta_namespace(obj),
                        kcr_meta_name(obj), obj,  subresource};
  int rc;
  (void)o;
  (void)out;
  if (kcr_meta_gvk(obj, &gvk, group, sizeof(group)) != 0)
    return kcr_error_set(err, KCR_EINVAL, "fake client: the object needs apiVersion and kind");
  if ((rc = intercept(f, &call, err)) != 0)
    return rc;
  return kcr_error_set(err, KCR_ENOTSUP,
                       "fake client: server-side apply is not supported (use create, update or "
                       "a merge/JSON patch in code tested with it)");
}

static int f_del(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                 kcr_error_t *err) {
  kcr_fake_client_t *f = c->data;
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX], why[400], t[KCR_TIME_BUFSIZE];
  kcr_fake_call call = {KCR_FAKE_DELETE, &gvk, NULL, NULL, NULL, NULL};
  json_t *md;
  item_t *it;
  obj_id id;
  who_t w;
  int rc = 0;
  if ((rc = obj_id_of(obj, &id, err)) != 0 || kcr_meta_gvk(obj, &gvk, group, sizeof(group)) != 0)
    return rc ? rc : kcr_error_set(err, KCR_EINVAL, "fake client: bad apiVersion");
  call.ns = id.ns;
  call.name = id.name;
  if ((rc = intercept(f, &call, err)) != 0)
    return rc;
  pthread_mutex_lock(&f->mu);
  it = locate(f, &id, &w, err);
  if (!it) {
    pthread_mutex_unlock(&f->mu);
    return KCR_EAPI;
  }
  md = json_object_get(it->obj, "metadata");
  if (o->precondition_uid &&
      strcmp(o->precondition_uid, kcr_meta_uid(it->obj) ? kcr_meta_uid(it->obj) : "") != 0) {
    snprintf(why, sizeof(why),
             "Precondition failed: UID in precondition: %s, UID in object meta: %s",
             o->precondition_uid, kcr_meta_uid(it->obj) ? kcr_meta_uid(it->obj) : "");
    rc = conflict(err, &w, why);
  } else if (o->precondition_resource_version &&
             strcmp(o->precondition_resource_version,
                    kcr_meta_resource_version(it->obj) ? kcr_meta_resource_version(it->obj) : "") !=
                 0) {
    snprintf(why, sizeof(why),
             "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in "
             "object meta: %s",
             o->precondition_resource_version,
             kcr_meta_resource_version(it->obj) ? kcr_meta_resource_version(it->obj) : "");
    rc = conflict(err, &w, why);
  } else if (json_array_size(json_object_get(md, "finalizers")) > 0) {
    /* finalizers hold it: mark it (once) and keep it */
    if (!json_object_get(md, "deletionTimestamp")) {
      now_text(f, t, sizeof(t));
      if (json_object_set_new(md, "deletionTimestamp", json_string(t)) != 0 ||
          json_object_set_new(md, "deletionGracePeriodSeconds", json_integer(0)) != 0 ||
          next_rv(f, md) != 0)
        rc = oom(err);
    }
  } else {
    remove_item(f, it);
  }
  pthread_mutex_unlock(&f->mu);
  return rc;
}

static const kcr_objclient_ops fake_ops = {.get = f_get,
                                           .list = f_list,
                                           .create = f_create,
                                           .update = f_update,
                                           .patch = f_patch,
                                           .apply = f_apply,
                                           .del = f_del};

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
  pthread_mutex_destroy(&f->mu);
  kcr__free(f);
}

int kcr_fake_client_add(kcr_fake_client_t *f, const json_t *obj, kcr_error_t *err) {
  return do_create(f, obj, true, NULL, err);
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
