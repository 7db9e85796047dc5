/* SPDX-License-Identifier: MIT */
/*
 * fake_smp.c: strategic merge patch for the fake client (kcr/testing.h), as
 * the API server applies one (k8s.io/apimachinery/pkg/util/strategicpatch,
 * with parallel lists merged and unmatched nulls ignored).
 *
 * DESIGN. The patch is walked alongside the schema of the object's kind:
 * fake_smp_table.c holds, for the built-in kinds, every property that carries
 * patch metadata or leads to one, generated from the OpenAPI document kcr-gen
 * reads. A map merges key by key (null deletes), a list whose field says
 * x-kubernetes-patch-strategy: merge merges by its merge key (scalars by
 * value), any other list or a field marked replace is replaced. The
 * directives $patch, $retainKeys, $setElementOrder/<f> and
 * $deleteFromPrimitiveList/<f> are honoured and never reach the result. The
 * order of a merged list follows upstream: elements the patch names in the
 * patch's order, the others in the live order, interleaved where the live
 * list orders both. Trees in are borrowed and copied, so the patch is never
 * changed.
 */
#include <stdio.h>
#include <string.h>

#include "testing/fake_smp_internal.h"

#define DELETE_PREFIX "$deleteFromPrimitiveList/"
#define ORDER_PREFIX "$setElementOrder/"
#define RETAIN_KEYS "$retainKeys"
#define DIRECTIVE "$patch"

typedef struct smp {
  int rc; /* KCR__SMP_OK until something fails */
  char *why;
  size_t size;
} smp_t;

int kcr__smp_root_of(const char *group, const char *kind) {
  for (size_t i = 0; i < kcr__smp_nroots; i++)
    if (strcmp(kcr__smp_roots[i].group, group) == 0 && strcmp(kcr__smp_roots[i].kind, kind) == 0)
      return kcr__smp_roots[i].def;
  return -1;
}

const kcr__smp_field *kcr__smp_field_of(int def, const char *name) {
  if (def < 0)
    return NULL;
  for (size_t i = 0; i < kcr__smp_nfields; i++)
    if (kcr__smp_fields[i].def == def && strcmp(kcr__smp_fields[i].name, name) == 0)
      return &kcr__smp_fields[i];
  return NULL;
}

static bool starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* has_strategy: f's patch strategy, its retainKeys part aside, is s. */
static bool has_strategy(const kcr__smp_field *f, const char *s) {
  size_t n = strlen(s);
  const char *p = f ? f->strategy : NULL;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, s, n) == 0)
      return true;
    p = end ? end + 1 : NULL;
  }
  return false;
}

static int ref_of(const kcr__smp_field *f) {
  return f ? f->ref : -1;
}

static const char *key_of(const kcr__smp_field *f) {
  return f && f->merge_key ? f->merge_key : NULL;
}

/* fail records the first failure: rc, and for a bad patch msg then arg. */
static json_t *fail(smp_t *s, int rc, const char *msg, const char *arg) {
  if (s->rc == KCR__SMP_OK) {
    s->rc = rc;
    if (rc == KCR__SMP_BAD_PATCH)
      snprintf(s->why, s->size, "%s%s", msg, arg ? arg : "");
  }
  return NULL;
}

static json_t *nomem(smp_t *s) {
  return fail(s, KCR__SMP_NOMEM, "", NULL);
}

static int oom_rc(smp_t *s) {
  nomem(s);
  return -1;
}

/* is_directive_key: a key of a patch map that never reaches the result. */
static bool is_directive_key(const char *k) {
  return strcmp(k, DIRECTIVE) == 0 || strcmp(k, RETAIN_KEYS) == 0 || starts(k, ORDER_PREFIX) ||
         starts(k, DELETE_PREFIX);
}

/*
 * strip returns a copy of v (borrowed) without its directives and null
 * members, or NULL: with *drop set when v is a map that carries $patch (it
 * goes), else out of memory (s->rc set).
 */
static json_t *strip(smp_t *s, const json_t *v, bool *drop) {
  json_t *out, *m;
  const char *k;
  size_t i;
  *drop = false;
  if (json_is_object(v)) {
    if (json_object_get(v, DIRECTIVE)) {
      *drop = true;
      return NULL;
    }
    if (!(out = json_object()))
      return nomem(s);
    json_object_foreach((json_t *)v, k, m) {
      bool d;
      json_t *c;
      if (json_is_null(m) || is_directive_key(k))
        continue;
      c = strip(s, m, &d);
      if (d)
        continue;
      if (!c || json_object_set_new(out, k, c) != 0) {
        json_decref(out);
        return nomem(s);
      }
    }
    return out;
  }
  if (json_is_array(v)) {
    if (!(out = json_array()))
      return nomem(s);
    json_array_foreach(v, i, m) {
      bool d;
      json_t *c = strip(s, m, &d);
      if (d)
        continue;
      if (!c || json_array_append_new(out, c) != 0) {
        json_decref(out);
        return nomem(s);
      }
    }
    return out;
  }
  out = json_deep_copy(v);
  return out ? out : nomem(s);
}

/* set_stripped sets o[k] to strip(v), or removes k if v goes. -1 on OOM. */
static int set_stripped(smp_t *s, json_t *o, const char *k, const json_t *v) {
  bool drop;
  json_t *c = strip(s, v, &drop);
  if (drop) {
    json_object_del(o, k);
    return 0;
  }
  return c && json_object_set_new(o, k, c) == 0 ? 0 : -1;
}

/* same_kind: a and b are of one JSON type as Go's decoder sees it. */
static bool same_kind(const json_t *a, const json_t *b) {
  if (json_is_number(a) && json_is_number(b))
    return true;
  if (json_is_boolean(a) && json_is_boolean(b))
    return true;
  return json_typeof(a) == json_typeof(b);
}

/* index_in: the position in list of an element equal to v (by key's value
 * when key is set), or -1. */
static long index_in(const json_t *list, const json_t *v, const char *key) {
  size_t i;
  json_t *e;
  json_array_foreach(list, i, e) {
    if (key) {
      const json_t *a = json_object_get(v, key), *b = json_object_get(e, key);
      if ((!a && !b) || (a && b && json_equal(a, b)))
        return (long)i;
    } else if (json_equal(v, e)) {
      return (long)i;
    }
  }
  return -1;
}

/* sort_by stably sorts the elements of list by their position in order,
 * those order lacks last. */
static void sort_by(json_t *list, const json_t *order, const char *key) {
  size_t n = json_array_size(list);
  for (size_t i = 1; i < n; i++) {
    json_t *v = json_incref(json_array_get(list, i));
    long vi = index_in(order, v, key);
    size_t j = i;
    if (vi < 0) {
      json_decref(v);
      continue;
    }
    while (j > 0) {
      long pj = index_in(order, json_array_get(list, j - 1), key);
      if (pj >= 0 && pj <= vi)
        break;
      json_array_set(list, j, json_array_get(list, j - 1));
      j--;
    }
    json_array_set_new(list, j, v);
  }
}

/*
 * order_merged returns merged (borrowed) in the order upstream gives it:
 * the elements patch_order names sorted by it, the others by server_order,
 * the two interleaved where server_order places both.
 */
static json_t *order_merged(smp_t *s, const json_t *merged, const json_t *patch_order,
                            const json_t *server_order, const char *key) {
  json_t *pi = json_array(), *so = json_array(), *out = json_array(), *e;
  size_t i, a = 0, b = 0;
  if (!pi || !so || !out)
    goto oom;
  json_array_foreach(merged, i, e) {
    if (json_array_append(index_in(patch_order, e, key) >= 0 ? pi : so, e) != 0)
      goto oom;
  }
  sort_by(pi, patch_order, key);
  sort_by(so, server_order, key);
  while (a < json_array_size(so) || b < json_array_size(pi)) {
    json_t *next;
    if (a >= json_array_size(so)) {
      next = json_array_get(pi, b++);
    } else if (b >= json_array_size(pi)) {
      next = json_array_get(so, a++);
    } else {
      long li = index_in(server_order, json_array_get(so, a), key);
      long ri = index_in(server_order, json_array_get(pi, b), key);
      next = li >= 0 && ri >= 0 && li < ri ? json_array_get(so, a++) : json_array_get(pi, b++);
    }
    if (json_array_append(out, next) != 0)
      goto oom;
  }
  json_decref(pi);
  json_decref(so);
  return out;
oom:
  json_decref(pi);
  json_decref(so);
  json_decref(out);
  return nomem(s);
}

static json_t *merge_map(smp_t *s, json_t *orig, const json_t *patch, int def);

/* element_kind checks the elements of a and b are of one type, not lists:
 * 1 for maps, 0 for scalars, -1 (s->rc set) otherwise. */
static int element_kind(smp_t *s, const json_t *a, const json_t *b) {
  const json_t *first = NULL, *e;
  const json_t *lists[2] = {a, b};
  size_t i;
  for (int l = 0; l < 2; l++) {
    json_array_foreach(lists[l], i, e) {
      if (json_is_array(e)) {
        fail(s, KCR__SMP_BAD_PATCH, "lists of lists are not supported", NULL);
        return -1;
      }
      if (json_is_null(e))
        continue;
      if (!first)
        first = e;
      else if (!same_kind(first, e)) {
        fail(s, KCR__SMP_BAD_PATCH,
             "unable to find common element type: the list mixes elements of different types",
             NULL);
        return -1;
      }
    }
  }
  return json_is_object(first) ? 1 : 0;
}

/* merge_scalars unions (or, for a deletion list, subtracts) two lists of
 * scalars, borrowed. */
static json_t *merge_scalars(smp_t *s, const json_t *orig, const json_t *patch, bool del) {
  json_t *merged = json_array(), *e, *out;
  size_t i;
  if (!merged)
    return nomem(s);
  json_array_foreach(orig, i, e) {
    if ((del ? index_in(patch, e, NULL) < 0 : index_in(merged, e, NULL) < 0) &&
        json_array_append(merged, e) != 0)
      goto oom;
  }
  if (del)
    return merged;
  json_array_foreach(patch, i, e) {
    if (index_in(merged, e, NULL) < 0 && json_array_append(merged, e) != 0)
      goto oom;
  }
  out = order_merged(s, merged, patch, orig, NULL);
  json_decref(merged);
  return out;
oom:
  json_decref(merged);
  return nomem(s);
}

/* merge_maps merges two lists of maps, borrowed, by key: $patch elements
 * first (delete, replace), then each element merged into its match or
 * appended. */
static json_t *merge_maps(smp_t *s, const json_t *orig, const json_t *patch, int def,
                          const char *key) {
  json_t *work = json_deep_copy(orig), *plain = json_array(), *server = NULL, *out = NULL, *e;
  bool replace = false;
  size_t i;
  if (!work || !plain)
    goto oom;
  json_array_foreach(patch, i, e) {
    const char *d = json_string_value(json_object_get(e, DIRECTIVE));
    if (!json_object_get(e, DIRECTIVE)) {
      if (json_array_append(plain, e) != 0)
        goto oom;
    } else if (d && strcmp(d, "delete") == 0) {
      const json_t *kv = json_object_get(e, key);
      long at;
      if (!kv) {
        fail(s, KCR__SMP_BAD_PATCH, "a $patch: delete element does not contain merge key ", key);
        goto out;
      }
      while ((at = index_in(work, e, key)) >= 0)
        json_array_remove(work, (size_t)at);
    } else if (d && strcmp(d, "replace") == 0) {
      replace = true;
    } else {
      fail(s, KCR__SMP_BAD_PATCH,
           "unknown patch type in a list element: ", d ? d : "(not a string)");
      goto out;
    }
  }
  if (replace) {
    bool drop;
    json_decref(work);
    if (!(work = strip(s, plain, &drop)))
      goto out;
    json_array_clear(plain);
  }
  if (!(server = json_copy(work)))
    goto oom;
  json_array_foreach(plain, i, e) {
    long at;
    json_t *m;
    if (!json_object_get(e, key)) {
      fail(s, KCR__SMP_BAD_PATCH, "a list element does not contain merge key ", key);
      goto out;
    }
    at = index_in(work, e, key);
    m = merge_map(s, at >= 0 ? json_incref(json_array_get(work, (size_t)at)) : NULL, e, def);
    if (!m)
      goto out;
    if ((at >= 0 ? json_array_set_new(work, (size_t)at, m) : json_array_append_new(work, m)) != 0)
      goto oom;
  }
  json_array_foreach(work, i, e) {
    if (!json_object_get(e, key)) {
      fail(s, KCR__SMP_BAD_PATCH, "a list element does not contain merge key ", key);
      goto out;
    }
  }
  out = order_merged(s, work, plain, server, key);
  goto out;
oom:
  nomem(s);
out:
  json_decref(work);
  json_decref(plain);
  json_decref(server);
  return out;
}

/* merge_list merges patch into orig (both arrays, borrowed) as field f
 * says: by key or value when its strategy is merge (or del, a deletion
 * list), else the patch replaces. */
static json_t *merge_list(smp_t *s, const json_t *orig, const json_t *patch,
                          const kcr__smp_field *f, bool del) {
  bool drop;
  int kind;
  if (!has_strategy(f, "merge") && !del)
    return strip(s, patch, &drop);
  if (json_array_size(orig) == 0 && json_array_size(patch) == 0)
    return json_incref((json_t *)orig);
  if ((kind = element_kind(s, orig, patch)) < 0)
    return NULL;
  if (kind == 0)
    return merge_scalars(s, orig, patch, del);
  if (!key_of(f))
    return fail(s, KCR__SMP_BAD_PATCH, "cannot merge lists without merge key for ",
                f ? f->name : "");
  if (del)
    return fail(s, KCR__SMP_BAD_PATCH, "$deleteFromPrimitiveList applies to lists of scalars",
                NULL);
  return merge_maps(s, orig, patch, ref_of(f), key_of(f));
}

/* retain_keys applies patch's $retainKeys to orig. -1 on a bad directive. */
static int retain_keys(smp_t *s, json_t *orig, const json_t *patch) {
  const json_t *rk = json_object_get(patch, RETAIN_KEYS), *v;
  const char *k;
  void *tmp;
  if (!rk)
    return 0;
  if (!json_is_array(rk))
    goto bad;
  json_object_foreach((json_t *)patch, k, v) {
    json_t *name = json_string(k);
    long at = name ? index_in(rk, name, NULL) : 0;
    json_decref(name);
    if (json_is_null(v) || is_directive_key(k))
      continue;
    if (at < 0)
      goto bad;
  }
  json_object_foreach_safe(orig, tmp, k, v) {
    json_t *name = json_string(k);
    long at = name ? index_in(rk, name, NULL) : 0;
    json_decref(name);
    if (at < 0)
      json_object_del(orig, k);
  }
  return 0;
bad:
  fail(s, KCR__SMP_BAD_PATCH, "invalid patch format of retainKeys", NULL);
  return -1;
}

/* set_element_order merges the list each $setElementOrder/<f> names and
 * orders it; done collects the fields handled. -1 on failure. */
static int set_element_order(smp_t *s, json_t *orig, const json_t *patch, int def, json_t *done) {
  const char *k;
  const json_t *order;
  json_object_foreach((json_t *)patch, k, order) {
    const char *field = k + strlen(ORDER_PREFIX);
    const kcr__smp_field *f;
    const json_t *ov, *pv;
    json_t *merged, *sorted, *empty;
    bool drop;
    if (!starts(k, ORDER_PREFIX))
      continue;
    f = kcr__smp_field_of(def, field);
    ov = json_object_get(orig, field);
    pv = json_object_get(patch, field);
    if (!json_is_array(order) || (ov && !json_is_array(ov)) || (pv && !json_is_array(pv))) {
      fail(s, KCR__SMP_BAD_PATCH, "invalid patch format of setElementOrder list", NULL);
      return -1;
    }
    if (json_object_set_new(done, field, json_true()) != 0)
      return oom_rc(s);
    if (!ov && !pv)
      continue;
    if (!pv)
      merged = json_incref((json_t *)ov);
    else if (!ov)
      merged = strip(s, pv, &drop);
    else
      merged = merge_list(s, ov, pv, f, false);
    if (!merged)
      return -1;
    if (!(empty = json_array())) {
      json_decref(merged);
      return oom_rc(s);
    }
    sorted = order_merged(s, merged, order, ov ? ov : empty, key_of(f));
    json_decref(merged);
    json_decref(empty);
    if (!sorted || json_object_set_new(orig, field, sorted) != 0)
      return oom_rc(s);
  }
  return 0;
}

/* merge_map merges patch (a map, borrowed) into orig (stolen; NULL for none)
 * of schema def (-1: unknown). Returns the result, or NULL (s->rc set). */
static json_t *merge_map(smp_t *s, json_t *orig, const json_t *patch, int def) {
  const json_t *d = json_object_get(patch, DIRECTIVE), *pv;
  json_t *done = NULL, *copy;
  const char *k;
  if (d) {
    const char *dv = json_string_value(d);
    bool drop;
    json_decref(orig);
    if (dv && strcmp(dv, "delete") == 0)
      return json_object();
    if (!dv || strcmp(dv, "replace") != 0)
      return fail(s, KCR__SMP_BAD_PATCH,
                  "unknown patch type in a map: ", dv ? dv : "(not a string)");
    if (!(copy = json_copy((json_t *)patch)))
      return nomem(s);
    json_object_del(copy, DIRECTIVE);
    orig = strip(s, copy, &drop);
    json_decref(copy);
    return orig;
  }
  if (!orig && !(orig = json_object()))
    return nomem(s);
  if (!(done = json_object())) {
    nomem(s);
    goto fail;
  }
  if (retain_keys(s, orig, patch) != 0 || set_element_order(s, orig, patch, def, done) != 0)
    goto fail;
  json_object_foreach((json_t *)patch, k, pv) {
    bool del = starts(k, DELETE_PREFIX);
    const char *field = del ? k + strlen(DELETE_PREFIX) : k;
    const kcr__smp_field *f;
    json_t *cur, *m;
    if (strcmp(k, RETAIN_KEYS) == 0 || starts(k, ORDER_PREFIX) || json_object_get(done, k))
      continue;
    if (json_is_null(pv)) {
      json_object_del(orig, field);
      continue;
    }
    cur = json_object_get(orig, field);
    if (!cur || !same_kind(cur, pv)) {
      if (!del && set_stripped(s, orig, field, pv) != 0)
        goto fail;
      continue;
    }
    f = kcr__smp_field_of(def, field);
    if (json_is_object(cur)) {
      if (has_strategy(f, "replace")) {
        if (set_stripped(s, orig, field, pv) != 0)
          goto fail;
        continue;
      }
      m = merge_map(s, json_incref(cur), pv, ref_of(f));
    } else if (json_is_array(cur)) {
      m = merge_list(s, cur, pv, f, del);
    } else {
      if (set_stripped(s, orig, field, pv) != 0)
        goto fail;
      continue;
    }
    if (!m || json_object_set_new(orig, field, m) != 0) {
      nomem(s);
      goto fail;
    }
  }
  json_decref(done);
  return orig;
fail:
  json_decref(done);
  json_decref(orig);
  return NULL;
}

int kcr__smp_patch(const char *group, const char *kind, json_t **doc, const json_t *patch,
                   char *why, size_t size) {
  smp_t s = {KCR__SMP_OK, why, size};
  int def = kcr__smp_root_of(group, kind);
  json_t *copy, *out;
  if (def < 0)
    return KCR__SMP_UNKNOWN_KIND;
  if (!json_is_object(patch)) {
    snprintf(why, size, "%s", "invalid JSON document: a strategic merge patch is a JSON object");
    return KCR__SMP_BAD_PATCH;
  }
  if (!(copy = json_deep_copy(*doc)))
    return KCR__SMP_NOMEM;
  out = merge_map(&s, copy, patch, def);
  if (!out)
    return s.rc != KCR__SMP_OK ? s.rc : KCR__SMP_NOMEM;
  json_decref(*doc);
  *doc = out;
  return KCR__SMP_OK;
}
