/* SPDX-License-Identifier: MIT */
/*
 * fake_fields.c: field ownership for the fake client (kcr/testing.h):
 * metadata.managedFields kept the way the API server's field manager keeps
 * them, so that the fake's server-side apply has conflicts, forced takeovers,
 * shared ownership and the removal of fields a manager stops applying.
 *
 * DESIGN. A field set is a tree of JSON objects, one per path element, keyed
 * as FieldsV1 keys them ("f:name", "k:{\"name\":\"c\"}" for an element of a
 * list with keys, "v:<value>" for an element of a set); the key "." marks a
 * node that is itself a member. Where FieldsV1 writes a leaf as {}, the tree
 * writes {".": {}}, so that a difference can empty a node without making it
 * a member; fields_to_v1 and fields_from_v1 convert.
 *
 * The rules follow the server's (structured-merge-diff under the API
 * server's field manager):
 *  - a set is made from an object by the built-in kinds' list metadata
 *    (fake_smp_table.c): scalars, atomic lists and empty maps are members;
 *    an element of a keyed list or a set is a member with its fields below
 *    it; a non-empty map is not a member itself (the server says so of a
 *    struct's declared fields; the fake does not know which fields a schema
 *    declares, so map[string]struct values are the one place where it
 *    differs); apiVersion, kind and metadata's name, namespace, uid,
 *    resourceVersion, generation, creationTimestamp, selfLink and
 *    managedFields belong to nobody.
 *  - a write compares the stored object with the new one: fields added or
 *    changed go to the writer and leave every other manager (an update
 *    forces), fields removed leave everyone. An apply does the same, except
 *    that a field another manager owns and the apply changes is a conflict
 *    unless forced, and that the applier's set is its applied configuration.
 *  - an apply removes from the object what the manager applied last time,
 *    applies no longer and nobody else owns.
 *  - an object that has no managed fields is not tracked by updates; the
 *    first apply to it gives every field it has to "before-first-apply".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/buf.h"
#include "testing/fake_smp_internal.h"
#include "util/alloc.h"

/* ---- the tree ---- */

static bool is_member(const json_t *n) {
  return json_object_get(n, ".") != NULL;
}

static int mark(json_t *n) {
  return json_object_set_new(n, ".", json_object());
}

/* child returns n's child at key, made when absent (NULL: out of memory). */
static json_t *child(json_t *n, const char *key) {
  json_t *c = json_object_get(n, key);
  if (c)
    return c;
  c = json_object();
  if (!c || json_object_set_new(n, key, c) != 0)
    return NULL;
  return c;
}

/* union_into adds src's members to dst. */
static int union_into(json_t *dst, const json_t *src) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)src, k, v) {
    if (strcmp(k, ".") == 0) {
      if (mark(dst) != 0)
        return -1;
      continue;
    }
    json_t *c = child(dst, k);
    if (!c || union_into(c, v) != 0)
      return -1;
  }
  return 0;
}

json_t *kcr__fields_union(const json_t *a, const json_t *b) {
  json_t *out = json_object();
  if (!out || (a && union_into(out, a) != 0) || (b && union_into(out, b) != 0)) {
    json_decref(out);
    return NULL;
  }
  return out;
}

/* combine: a - b (and_op false) or a & b (and_op true); empty nodes dropped. */
static json_t *combine(const json_t *a, const json_t *b, bool and_op) {
  json_t *out = json_object(), *v;
  const char *k;
  if (!out)
    return NULL;
  if (is_member(a) && (and_op ? is_member(b) : !is_member(b)) && mark(out) != 0)
    goto oom;
  json_object_foreach((json_t *)a, k, v) {
    const json_t *bv;
    json_t *c;
    if (strcmp(k, ".") == 0)
      continue;
    bv = json_object_get(b, k);
    if (and_op && !bv)
      continue;
    c = bv ? combine(v, bv, and_op) : json_deep_copy(v);
    if (!c)
      goto oom;
    if (json_object_size(c) == 0) {
      json_decref(c);
      continue;
    }
    if (json_object_set_new(out, k, c) != 0)
      goto oom;
  }
  return out;
oom:
  json_decref(out);
  return NULL;
}

json_t *kcr__fields_minus(const json_t *a, const json_t *b) {
  return combine(a, b, false);
}

json_t *kcr__fields_and(const json_t *a, const json_t *b) {
  return combine(a, b, true);
}

/* ---- FieldsV1 ---- */

json_t *kcr__fields_to_v1(const json_t *set) {
  json_t *out = json_object(), *v;
  const char *k;
  bool kids = false;
  if (!out)
    return NULL;
  json_object_foreach((json_t *)set, k, v) {
    json_t *c;
    if (strcmp(k, ".") == 0)
      continue;
    kids = true;
    if (!(c = kcr__fields_to_v1(v)) || json_object_set_new(out, k, c) != 0) {
      json_decref(out);
      return NULL;
    }
  }
  if (kids && is_member(set) && mark(out) != 0) {
    json_decref(out);
    return NULL;
  }
  return out;
}

/* from_v1: the tree of FieldsV1 node v; *bad when v is not FieldsV1. */
static json_t *from_v1(const json_t *v, bool *bad) {
  json_t *out, *c;
  const char *k;
  if (!json_is_object(v)) {
    *bad = true;
    return NULL;
  }
  if (!(out = json_object()))
    return NULL;
  if (json_object_size(v) == 0 && mark(out) != 0)
    goto fail;
  json_object_foreach((json_t *)v, k, c) {
    json_t *n;
    if (strcmp(k, ".") == 0) {
      if (mark(out) != 0)
        goto fail;
      continue;
    }
    if (strlen(k) < 2 || k[1] != ':' || !strchr("fkvi", k[0])) {
      *bad = true;
      goto fail;
    }
    if (!(n = from_v1(c, bad)) || json_object_set_new(out, k, n) != 0)
      goto fail;
  }
  return out;
fail:
  json_decref(out);
  return NULL;
}

/* ---- sets of objects ---- */

static bool is_set(const kcr__smp_field *f) {
  return f && f->list_type && strcmp(f->list_type, "set") == 0;
}

/* is_atomic: the field's value (an array's items) is owned whole. */
static bool is_atomic(const kcr__smp_field *f) {
  return f && f->map_type && strcmp(f->map_type, "atomic") == 0;
}

/* elem_key: "k:{...}" of list element e on keys ("a,b"), the key fields it
 * has, sorted by name (NULL: out of memory). */
static char *elem_key(const json_t *e, const char *keys) {
  json_t *kv = json_object();
  const char *p = keys;
  char name[128], *text, *out;
  if (!kv)
    return NULL;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    json_t *x;
    snprintf(name, sizeof(name), "%.*s", (int)len, p);
    x = json_object_get(e, name);
    if (x && json_object_set(kv, name, x) != 0) {
      json_decref(kv);
      return NULL;
    }
    p = end ? end + 1 : NULL;
  }
  text = json_dumps(kv, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(kv);
  if (!text)
    return NULL;
  out = kcr__malloc(strlen(text) + 3);
  if (out)
    sprintf(out, "k:%s", text);
  kcr__free(text);
  return out;
}

/* value_key: "v:<value>" of set element e (NULL: out of memory). */
static char *value_key(const json_t *e) {
  char *text = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY), *out;
  if (!text)
    return NULL;
  out = kcr__malloc(strlen(text) + 3);
  if (out)
    sprintf(out, "v:%s", text);
  kcr__free(text);
  return out;
}

static int build(json_t *node, const json_t *v, int def);
static int build_field(json_t *node, const char *key, const json_t *m, const kcr__smp_field *f);

/* build_list adds list v, field f of its parent, under node (its field's node). */
static int build_list(json_t *node, const json_t *v, const kcr__smp_field *f) {
  const char *keys = kcr__smp_list_keys(f);
  size_t i;
  json_t *e;
  if (!keys && !is_set(f))
    return mark(node); /* atomic: the list is one value */
  json_array_foreach(v, i, e) {
    char *k = keys ? (json_is_object(e) ? elem_key(e, keys) : NULL) : value_key(e);
    json_t *c;
    if (keys && !json_is_object(e))
      return mark(node); /* not a list of objects: take it whole */
    if (!k)
      return -1;
    c = child(node, k);
    kcr__free(k);
    if (!c || mark(c) != 0 || (keys && !is_atomic(f) && build(c, e, f->ref) != 0))
      return -1;
  }
  return 0;
}

/* build adds object v's fields, of schema def (-1: unknown), under node. */
static int build(json_t *node, const json_t *v, int def) {
  const char *k;
  json_t *m;
  json_object_foreach((json_t *)v, k, m) {
    const kcr__smp_field *f = kcr__smp_field_of(def, k);
    char *key;
    int rc;
    if (json_is_null(m))
      continue; /* no value: the merge drops it, so nobody owns it */
    /* as long as the field's name: a map's keys (labels, data) have no bound here */
    if (!(key = kcr__malloc(strlen(k) + 3)))
      return -1;
    sprintf(key, "f:%s", k);
    rc = build_field(node, key, m, f);
    kcr__free(key);
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* build_field adds member key ("f:<name>") of value m, field f, under node. */
static int build_field(json_t *node, const char *key, const json_t *m, const kcr__smp_field *f) {
  json_t *c = child(node, key);
  if (!c)
    return -1;
  if (json_is_object(m)) {
    if (json_object_size(m) == 0 || is_atomic(f) ? mark(c) != 0 : build(c, m, f ? f->ref : -1) != 0)
      return -1;
  } else if (json_is_array(m)) {
    if (build_list(c, m, f) != 0)
      return -1;
  } else if (mark(c) != 0) {
    return -1;
  }
  if (json_object_size(c) == 0)
    json_object_del(node, key); /* an empty keyed list: nothing to own */
  return 0;
}

/* strip removes what belongs to nobody from set (the server's strip set). */
static void strip(json_t *set) {
  static const char *const meta[] = {"f:name",       "f:namespace",     "f:creationTimestamp",
                                     "f:selfLink",   "f:uid",           "f:clusterName",
                                     "f:generation", "f:managedFields", "f:resourceVersion"};
  json_t *md = json_object_get(set, "f:metadata");
  json_object_del(set, "f:apiVersion");
  json_object_del(set, "f:kind");
  if (md) {
    for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++)
      json_object_del(md, meta[i]);
    json_object_del(md, ".");
    if (json_object_size(md) == 0)
      json_object_del(set, "f:metadata");
  }
}

json_t *kcr__fields_of(const char *group, const char *kind, const json_t *obj, int scope) {
  json_t *set = json_object();
  if (!set)
    return NULL;
  if (json_is_object(obj) && build(set, obj, kcr__smp_root_of(group, kind)) != 0) {
    json_decref(set);
    return NULL;
  }
  strip(set);
  if (scope == KCR__FIELDS_MAIN) {
    json_object_del(set, "f:status");
  } else if (scope == KCR__FIELDS_STATUS) {
    json_t *st = json_incref(json_object_get(set, "f:status"));
    json_object_clear(set);
    if (st && json_object_set_new(set, "f:status", st) != 0) {
      json_decref(set);
      return NULL;
    }
  }
  return set;
}

/* ---- values at paths ---- */

/* at finds the value of path element key in v (NULL: none); *index gets its
 * place when v is an array. */
static json_t *at(const json_t *v, const char *key, size_t *index) {
  json_t *want, *e;
  size_t i;
  if (key[0] == 'f')
    return json_is_object(v) ? json_object_get(v, key + 2) : NULL;
  if (!json_is_array(v) || (key[0] != 'k' && key[0] != 'v'))
    return NULL;
  if (!(want = json_loads(key + 2, JSON_DECODE_ANY, NULL)))
    return NULL;
  json_array_foreach(v, i, e) {
    bool same;
    if (key[0] == 'v') {
      same = json_equal(e, want);
    } else {
      const char *name;
      json_t *x;
      same = json_is_object(e);
      json_object_foreach(want, name, x) {
        if (!same)
          break;
        same = json_equal(json_object_get(e, name), x);
      }
    }
    if (same) {
      json_decref(want);
      *index = i;
      return e;
    }
  }
  json_decref(want);
  return NULL;
}

/* modified adds to out the leaf members of set (a node of both objects'
 * sets, in both) whose values differ between a and b. */
static int modified(const json_t *set, const json_t *bset, const json_t *a, const json_t *b,
                    json_t *out) {
  const char *k;
  json_t *n;
  json_object_foreach((json_t *)set, k, n) {
    size_t ia, ib;
    const json_t *bn, *av, *bv;
    if (strcmp(k, ".") == 0 || !(bn = json_object_get(bset, k)))
      continue;
    av = at(a, k, &ia);
    bv = at(b, k, &ib);
    if (!av || !bv)
      continue;
    if (json_object_size(n) == 1 && is_member(n) && json_object_size(bn) == 1 && is_member(bn)) {
      json_t *c;
      if (json_equal(av, bv))
        continue;
      if (!(c = child(out, k)) || mark(c) != 0)
        return -1;
      continue;
    }
    json_t *c = json_object();
    if (!c || modified(n, bn, av, bv, c) != 0) {
      json_decref(c);
      return -1;
    }
    if (json_object_size(c) == 0)
      json_decref(c);
    else if (json_object_set_new(out, k, c) != 0)
      return -1;
  }
  return 0;
}

/* ---- removing fields ---- */

void kcr__fields_remove(json_t *v, const json_t *set) {
  const char *k;
  json_t *n;
  json_object_foreach((json_t *)set, k, n) {
    size_t i = 0;
    json_t *c;
    if (strcmp(k, ".") == 0 || !(c = at(v, k, &i)))
      continue;
    if (!is_member(n)) {
      kcr__fields_remove(c, n);
      if (!(k[0] == 'f' && json_is_object(c) && json_object_size(c) == 0))
        continue; /* emptied by the removal: it goes too */
    }
    if (k[0] == 'f')
      json_object_del(v, k + 2);
    else
      json_array_remove(v, i);
  }
}

/* ---- paths as the server writes them ---- */

/* path_text appends the text of path element key to buf. */
static void path_text(char *buf, size_t size, const char *key) {
  size_t len = strlen(buf);
  json_t *x, *kv;
  const char *name;
  if (len >= size - 1)
    return;
  if (key[0] == 'f') {
    snprintf(buf + len, size - len, ".%s", key + 2);
    return;
  }
  if (!(kv = json_loads(key + 2, JSON_DECODE_ANY, NULL)))
    return;
  if (key[0] == 'v') {
    char *t = json_dumps(kv, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(buf + len, size - len, "[=%s]", t ? t : "");
    kcr__free(t);
  } else {
    bool first = true;
    snprintf(buf + len, size - len, "%s", "[");
    json_object_foreach(kv, name, x) {
      char *t = json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT);
      len = strlen(buf);
      snprintf(buf + len, size - len, "%s%s=%s", first ? "" : ",", name, t ? t : "");
      kcr__free(t);
      first = false;
    }
    len = strlen(buf);
    snprintf(buf + len, size - len, "%s", "]");
  }
  json_decref(kv);
}

/* rank orders path element kinds as the server's sets do: fields, keys,
 * values, then indexes. */
static int rank(const char *key) {
  switch (key[0]) {
  case 'f':
    return 0;
  case 'k':
    return 1;
  case 'v':
    return 2;
  default:
    return 3;
  }
}

static int cmp_keys(const void *pa, const void *pb) {
  const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
  int d = rank(a) - rank(b);
  return d ? d : strcmp(a, b);
}

/* paths appends to list the text of every member of set under prefix, in
 * the order the server lists them (a node before what is below it). */
static int paths(const json_t *set, const char *prefix, json_t *list) {
  size_t n = json_object_size(set), k = 0;
  const char **keys, *key;
  json_t *v;
  int rc = 0;
  if (is_member(set) && *prefix && json_array_append_new(list, json_string(prefix)) != 0)
    return -1;
  if (!(keys = kcr__calloc(n ? n : 1, sizeof(*keys))))
    return -1;
  json_object_foreach((json_t *)set, key, v) {
    if (strcmp(key, ".") != 0)
      keys[k++] = key;
  }
  qsort(keys, k, sizeof(*keys), cmp_keys);
  for (size_t i = 0; i < k && rc == 0; i++) {
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", prefix);
    path_text(buf, sizeof(buf), keys[i]);
    rc = paths(json_object_get(set, keys[i]), buf, list);
  }
  kcr__free(keys);
  return rc;
}

json_t *kcr__fields_paths(const json_t *set) {
  json_t *list = json_array();
  if (!list || paths(set, "", list) != 0) {
    json_decref(list);
    return NULL;
  }
  return list;
}

/* ---- managers ---- */

static const char *str(const json_t *o, const char *k) {
  return json_string_value(json_object_get(o, k));
}

static bool same_str(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

/* same_manager: m is who's entry (an applier's whatever its apiVersion). */
static bool same_manager(const json_t *m, const kcr__mf_who *who) {
  const char *op = who->apply ? "Apply" : "Update";
  return same_str(str(m, "manager"), who->manager) && same_str(str(m, "operation"), op) &&
         same_str(str(m, "subresource"), who->subresource) &&
         (who->apply || same_str(str(m, "apiVersion"), who->api_version));
}

int kcr__mf_decode(const json_t *managed_fields, json_t **out) {
  json_t *list = json_array(), *e;
  size_t i;
  *out = NULL;
  if (!list)
    return KCR__SMP_NOMEM;
  if (managed_fields && !json_is_array(managed_fields))
    goto bad;
  json_array_foreach(managed_fields, i, e) {
    const char *op = str(e, "operation"), *ft = str(e, "fieldsType");
    json_t *v1 = json_object_get(e, "fieldsV1"), *set, *m;
    bool bad = false;
    kcr__mf_who who = {str(e, "manager"), str(e, "subresource"), str(e, "apiVersion"),
                       op && strcmp(op, "Apply") == 0};
    if (!json_is_object(e) || !op || (strcmp(op, "Apply") != 0 && strcmp(op, "Update") != 0) ||
        (ft && strcmp(ft, "FieldsV1") != 0) || (v1 && !ft))
      goto bad;
    for (size_t j = 0; j < json_array_size(list); j++)
      if (same_manager(json_array_get(list, j), &who))
        goto bad; /* the server refuses duplicate entries */
    set = v1 ? from_v1(v1, &bad) : json_object();
    if (!set) {
      if (bad)
        goto bad;
      json_decref(list);
      return KCR__SMP_NOMEM;
    }
    if (v1 && json_object_size(v1) == 0)
      json_object_clear(set); /* {} is no fields at the top */
    m = json_pack("{s:s, s:s, s:s, s:o}", "manager", who.manager ? who.manager : "", "operation",
                  op, "apiVersion", who.api_version ? who.api_version : "", "set", set);
    if (!m ||
        (who.subresource &&
         json_object_set_new(m, "subresource", json_string(who.subresource)) != 0) ||
        (str(e, "time") && json_object_set(m, "time", json_object_get(e, "time")) != 0) ||
        json_array_append_new(list, m) != 0) {
      json_decref(m);
      json_decref(list);
      return KCR__SMP_NOMEM;
    }
  }
  *out = list;
  return KCR__SMP_OK;
bad:
  json_decref(list);
  return KCR__SMP_BAD_PATCH;
}

/* cmp_entries orders managedFields as the server sorts them: operation,
 * time, manager, apiVersion, subresource. */
static int cmp_entries(const void *pa, const void *pb) {
  const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
  static const char *const keys[] = {"operation", "time", "manager", "apiVersion", "subresource"};
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    int c = strcmp(str(a, keys[i]) ? str(a, keys[i]) : "", str(b, keys[i]) ? str(b, keys[i]) : "");
    if (c)
      return c;
  }
  return 0;
}

json_t *kcr__mf_encode(const json_t *managers) {
  size_t n = json_array_size(managers), k = 0;
  json_t **v = kcr__calloc(n ? n : 1, sizeof(json_t *)), *out = json_array(), *m;
  size_t i;
  if (!v || !out)
    goto oom;
  json_array_foreach(managers, i, m) {
    const json_t *set = json_object_get(m, "set");
    json_t *e, *v1;
    if (json_object_size(set) == 0)
      continue;
    if (!(v1 = kcr__fields_to_v1(set)))
      goto oom;
    e = json_pack("{s:s, s:s, s:s}", "manager", str(m, "manager"), "operation", str(m, "operation"),
                  "apiVersion", str(m, "apiVersion"));
    if (!e || (str(m, "time") && json_object_set(e, "time", json_object_get(m, "time")) != 0) ||
        json_object_set_new(e, "fieldsType", json_string("FieldsV1")) != 0) {
      json_decref(v1); /* not handed over yet */
      json_decref(e);
      goto oom;
    }
    if (json_object_set_new(e, "fieldsV1", v1) != 0 || /* steals v1, failing too */
        (str(m, "subresource") &&
         json_object_set(e, "subresource", json_object_get(m, "subresource")) != 0)) {
      json_decref(e);
      goto oom;
    }
    v[k++] = e;
  }
  qsort(v, k, sizeof(json_t *), cmp_entries);
  for (i = 0; i < k; i++) {
    if (json_array_append_new(out, v[i]) != 0) {
      v[i] = NULL;
      for (size_t j = i + 1; j < k; j++)
        json_decref(v[j]);
      k = 0;
      goto oom;
    }
  }
  kcr__free(v);
  return out;
oom:
  for (i = 0; v && i < k; i++)
    json_decref(v[i]);
  kcr__free(v);
  json_decref(out);
  return NULL;
}

/* entry_of: who's entry in managers, made (empty) when absent and make. */
static json_t *entry_of(json_t *managers, const kcr__mf_who *who, bool make) {
  json_t *m;
  size_t i;
  json_array_foreach(managers, i, m) {
    if (same_manager(m, who))
      return m;
  }
  if (!make)
    return NULL;
  m = json_pack("{s:s, s:s, s:s, s:o}", "manager", who->manager, "operation",
                who->apply ? "Apply" : "Update", "apiVersion",
                who->api_version ? who->api_version : "", "set", json_object());
  if (!m ||
      (who->subresource &&
       json_object_set_new(m, "subresource", json_string(who->subresource)) != 0) ||
      json_array_append_new(managers, m) != 0) {
    json_decref(m);
    return NULL;
  }
  return m;
}

/* set_of replaces m's set with set (stolen). */
static int set_of(json_t *m, json_t *set) {
  return set ? json_object_set_new(m, "set", set) : -1;
}

int kcr__mf_before_first_apply(json_t *managers, const char *group, const char *kind,
                               const json_t *live, int scope, const char *now) {
  kcr__mf_who who = {"before-first-apply", NULL,
                     json_string_value(json_object_get(live, "apiVersion")), false};
  json_t *m, *set;
  if (json_array_size(managers) > 0)
    return 0;
  if (!(set = kcr__fields_of(group, kind, live, scope)))
    return -1;
  if (json_object_size(set) == 0) {
    json_decref(set);
    return 0;
  }
  if (!(m = entry_of(managers, &who, true))) {
    json_decref(set);
    return -1;
  }
  if (json_object_set_new(m, "time", json_string(now)) != 0) {
    json_decref(set);
    return -1;
  }
  return set_of(m, set);
}

/*
 * keep_owned turns gone (what an apply removes) into what may go without
 * taking what others own with it: a node gone as a whole that has owned
 * fields below it stays, losing only its other fields, and an element of a
 * keyed list that stays keeps its key fields.
 */
static void keep_owned(json_t *gone, const json_t *owned) {
  const char *k;
  json_t *n;
  json_object_foreach(gone, k, n) {
    const json_t *o = json_object_get(owned, k);
    if (strcmp(k, ".") == 0 || !o || json_object_size(o) <= (size_t)(is_member(o) ? 1 : 0))
      continue;
    json_object_del(n, ".");
    if (k[0] == 'k') {
      json_t *kv = json_loads(k + 2, 0, NULL), *x;
      const char *name;
      char key[300];
      json_object_foreach(kv, name, x) {
        snprintf(key, sizeof(key), "f:%s", name);
        json_object_del(n, key);
      }
      json_decref(kv);
    }
    keep_owned(n, o);
  }
}

int kcr__mf_apply_prepare(json_t *managers, const char *group, const char *kind, json_t *merged,
                          const json_t *applied, const kcr__mf_who *who, int scope) {
  json_t *m = entry_of(managers, who, true), *last, *fresh, *owned = NULL, *gone = NULL, *e;
  size_t i;
  int rc = -1;
  if (!m)
    return -1;
  last = json_incref(json_object_get(m, "set"));
  fresh = kcr__fields_of(group, kind, applied, scope);
  if (!fresh || json_object_set(m, "set", fresh) != 0 ||
      (who->api_version &&
       json_object_set_new(m, "apiVersion", json_string(who->api_version)) != 0))
    goto out;
  if (!(owned = json_object()))
    goto out;
  json_array_foreach(managers, i, e) {
    if (union_into(owned, json_object_get(e, "set")) != 0)
      goto out;
  }
  if (!(gone = kcr__fields_minus(last, owned)))
    goto out;
  keep_owned(gone, owned);
  kcr__fields_remove(merged, gone);
  rc = 0;
out:
  json_decref(last);
  json_decref(fresh);
  json_decref(owned);
  json_decref(gone);
  return rc;
}

int kcr__mf_update(json_t *managers, const char *group, const char *kind, const json_t *live,
                   const json_t *next, const kcr__mf_who *who, bool force, const char *now,
                   json_t **conflicts) {
  json_t *ls = kcr__fields_of(group, kind, live, KCR__FIELDS_ALL);
  json_t *ns = kcr__fields_of(group, kind, next, KCR__FIELDS_ALL);
  json_t *added = NULL, *removed = NULL, *changed = NULL, *mod = json_object(), *e;
  json_t *found = json_array();
  size_t i;
  int rc = KCR__SMP_NOMEM;
  bool same;
  *conflicts = NULL;
  if (!ls || !ns || !mod || !found || !(added = kcr__fields_minus(ns, ls)) ||
      !(removed = kcr__fields_minus(ls, ns)) || modified(ns, ls, next, live, mod) != 0 ||
      !(changed = kcr__fields_union(added, mod)))
    goto out;
  same = json_object_size(changed) == 0 && json_object_size(removed) == 0;
  /* every other manager: what this write changes that it owns is a conflict */
  json_array_foreach(managers, i, e) {
    json_t *c;
    if (who->apply && same_manager(e, who))
      continue;
    if (!(c = kcr__fields_and(json_object_get(e, "set"), changed)))
      goto out;
    if (json_object_size(c) == 0) {
      json_decref(c);
      continue;
    }
    if (json_array_append_new(found, json_pack("{s:O, s:o}", "manager", e, "set", c)) != 0)
      goto out;
  }
  if (who->apply && !force && json_array_size(found) > 0) {
    *conflicts = json_incref(found);
    rc = KCR__SMP_BAD_PATCH;
    goto out;
  }
  json_array_foreach(managers, i, e) {
    json_t *set;
    if (who->apply && same_manager(e, who))
      continue;
    set = kcr__fields_minus(json_object_get(e, "set"), changed);
    if (set_of(e, set) != 0 || set_of(e, kcr__fields_minus(set, removed)) != 0)
      goto out;
  }
  if (!who->apply && !same) {
    json_t *m = entry_of(managers, who, true), *set;
    if (!m || !(set = kcr__fields_union(json_object_get(m, "set"), changed)) || set_of(m, set) != 0)
      goto out;
    if (json_object_size(changed) > 0 && json_object_set_new(m, "time", json_string(now)) != 0)
      goto out;
  } else if (who->apply) {
    json_t *m = entry_of(managers, who, false);
    if (m && (!same || !str(m, "time")) && json_object_set_new(m, "time", json_string(now)) != 0)
      goto out;
  }
  /* a manager that owns nothing is no manager */
  for (i = json_array_size(managers); i-- > 0;)
    if (json_object_size(json_object_get(json_array_get(managers, i), "set")) == 0)
      json_array_remove(managers, i);
  rc = KCR__SMP_OK;
out:
  json_decref(ls);
  json_decref(ns);
  json_decref(added);
  json_decref(removed);
  json_decref(changed);
  json_decref(mod);
  json_decref(found);
  return rc;
}

/* ---- the conflict message ---- */

/* ident: the manager's identifier as the server builds it, the key it sorts
 * conflicts by (new; NULL: out of memory). */
static char *ident(const json_t *m) {
  bool apply = same_str(str(m, "operation"), "Apply");
  json_t *id = json_pack("{s:s, s:s}", "manager", str(m, "manager") ? str(m, "manager") : "",
                         "operation", str(m, "operation") ? str(m, "operation") : "");
  char *out;
  if (!id)
    return NULL;
  if ((!apply && str(m, "apiVersion") && *str(m, "apiVersion") &&
       json_object_set(id, "apiVersion", json_object_get(m, "apiVersion")) != 0) ||
      (str(m, "subresource") && *str(m, "subresource") &&
       json_object_set(id, "subresource", json_object_get(m, "subresource")) != 0)) {
    json_decref(id);
    return NULL;
  }
  out = json_dumps(id, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(id);
  return out;
}

/* shown appends how the server names manager m in a conflict. */
static void shown(kcr_buf_t *b, const json_t *m) {
  kcr_buf_appendf(b, "\"%s\"", str(m, "manager") ? str(m, "manager") : "");
  if (str(m, "subresource") && *str(m, "subresource"))
    kcr_buf_appendf(b, " with subresource \"%s\"", str(m, "subresource"));
  if (same_str(str(m, "operation"), "Update"))
    kcr_buf_appendf(b, " using %s", str(m, "apiVersion") ? str(m, "apiVersion") : "");
}

/* by_ident: one conflicting manager, as the message orders them. */
typedef struct by_ident {
  char *ident;
  size_t at; /* its index in the conflicts */
} by_ident;

static int cmp_idents(const void *pa, const void *pb) {
  return strcmp(((const by_ident *)pa)->ident, ((const by_ident *)pb)->ident);
}

char *kcr__mf_conflict_message(const json_t *conflicts) {
  size_t n = json_array_size(conflicts), total = 0;
  by_ident *order = kcr__calloc(n ? n : 1, sizeof(by_ident));
  json_t **lists = kcr__calloc(n ? n : 1, sizeof(json_t *));
  char *out = NULL;
  kcr_buf_t b;
  kcr_buf_init(&b, 1 << 20);
  if (!order || !lists)
    goto done;
  for (size_t i = 0; i < n; i++) {
    const json_t *c = json_array_get(conflicts, i);
    lists[i] = kcr__fields_paths(json_object_get(c, "set"));
    order[i].ident = ident(json_object_get(c, "manager"));
    order[i].at = i;
    if (!lists[i] || !order[i].ident)
      goto done;
    total += json_array_size(lists[i]);
  }
  qsort(order, n, sizeof(by_ident), cmp_idents);
  if (total == 1)
    kcr_buf_appendf(&b, "%s", "Apply failed with 1 conflict: conflict with ");
  else
    kcr_buf_appendf(&b, "Apply failed with %zu conflicts: ", total);
  for (size_t i = 0; i < n; i++) {
    size_t at = order[i].at, j;
    json_t *p;
    if (total != 1)
      kcr_buf_appendf(&b, "%s", i ? "\nconflicts with " : "conflicts with ");
    shown(&b, json_object_get(json_array_get(conflicts, at), "manager"));
    json_array_foreach(lists[at], j, p) {
      if (total == 1)
        kcr_buf_appendf(&b, ": %s", json_string_value(p));
      else
        kcr_buf_appendf(&b, "%s- %s", j ? "\n" : ":\n", json_string_value(p));
    }
  }
  out = kcr_buf_take(&b, NULL);
done:
  for (size_t i = 0; order && i < n; i++)
    kcr__free(order[i].ident);
  for (size_t i = 0; lists && i < n; i++)
    json_decref(lists[i]);
  kcr__free(order);
  kcr__free(lists);
  kcr_buf_free(&b);
  return out;
}
