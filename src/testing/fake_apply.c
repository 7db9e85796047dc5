/* SPDX-License-Identifier: MIT */
/*
 * fake_apply.c: the fake client's subset of server-side apply (kcr/testing.h):
 * the applied configuration merged into the live object by the structure the
 * OpenAPI document gives the built-in kinds (fake_smp_table.c).
 *
 * DESIGN. The API server merges by structured-merge-diff and removes what
 * the manager applied before and applies no longer, which needs
 * managedFields. The fake tracks no field ownership, so it only merges: a
 * map key by key, a list the schema calls a map (x-kubernetes-list-type: map
 * with its list-map-keys, or a patch-merge key) element by element on those
 * keys, a set as a union, anything else (atomic, or unknown: every list of a
 * CRD) replaced, and so is a map the schema calls atomic (a LabelSelector)
 * and an element of such a list. A null in the applied configuration is no
 * value. Field ownership (what a manager stops applying, conflicts) is
 * fake_fields.c's.
 */
#include <stdio.h>
#include <string.h>

#include "testing/fake_smp_internal.h"

static json_t *merge_value(json_t *live, const json_t *applied, int def, bool *oom);

/* same_keys: a and b agree on every key of keys ("a,b"); a key neither has
 * agrees. */
static bool same_keys(const json_t *a, const json_t *b, const char *keys) {
  char name[128];
  const char *p = keys;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    const json_t *x, *y;
    snprintf(name, sizeof(name), "%.*s", (int)len, p);
    x = json_object_get(a, name);
    y = json_object_get(b, name);
    if ((x || y) && !(x && y && json_equal(x, y)))
      return false;
    p = end ? end + 1 : NULL;
  }
  return true;
}

const char *kcr__smp_list_keys(const kcr__smp_field *f) {
  if (!f)
    return NULL;
  if (f->list_type && strcmp(f->list_type, "map") == 0 && f->map_keys)
    return f->map_keys;
  if (f->merge_key && (!f->list_type || strcmp(f->list_type, "atomic") != 0))
    return f->merge_key;
  return NULL;
}

/* merge_list merges the applied list into live (stolen) as field f says. */
static json_t *merge_list(json_t *live, const json_t *applied, const kcr__smp_field *f, bool *oom) {
  const char *keys = kcr__smp_list_keys(f);
  bool set = f && f->list_type && strcmp(f->list_type, "set") == 0;
  json_t *out, *e;
  size_t i;
  if ((!keys && !set) || !json_is_array(live)) {
    json_decref(live);
    return merge_value(NULL, applied, f ? f->ref : -1, oom);
  }
  out = json_copy(live);
  json_decref(live);
  if (!out) {
    *oom = true;
    return NULL;
  }
  json_array_foreach(applied, i, e) {
    size_t j, n = json_array_size(out), at = n;
    json_t *m;
    for (j = 0; j < n && at == n; j++) {
      json_t *x = json_array_get(out, j);
      if (keys ? json_is_object(x) && json_is_object(e) && same_keys(x, e, keys) : json_equal(x, e))
        at = j;
    }
    if (set && at < n)
      continue;
    if (f->map_type && strcmp(f->map_type, "atomic") == 0)
      m = json_deep_copy(e); /* an atomic element is replaced whole */
    else
      m = merge_value(at < n ? json_incref(json_array_get(out, at)) : NULL, e, f->ref, oom);
    if (!m || (at < n ? json_array_set_new(out, at, m) : json_array_append_new(out, m)) != 0) {
      *oom = true;
      json_decref(out);
      return NULL;
    }
  }
  return out;
}

/*
 * merge_value merges applied (borrowed) into live (stolen; NULL for none) of
 * schema def (-1: unknown): maps member by member (a null is no value),
 * lists as their field says, scalars replaced. NULL (*oom set) when out of
 * memory.
 */
static json_t *merge_value(json_t *live, const json_t *applied, int def, bool *oom) {
  json_t *out, *v;
  const char *k;
  if (!json_is_object(applied)) {
    json_decref(live);
    if (json_is_array(applied)) {
      size_t i;
      if (!(out = json_array()))
        goto oom;
      json_array_foreach(applied, i, v) {
        json_t *m = merge_value(NULL, v, def, oom);
        if (!m || json_array_append_new(out, m) != 0) {
          json_decref(out);
          goto oom;
        }
      }
      return out;
    }
    if (!(out = json_deep_copy(applied)))
      goto oom;
    return out;
  }
  if (json_is_object(live)) {
    out = json_copy(live);
    json_decref(live);
  } else {
    json_decref(live);
    out = json_object();
  }
  if (!out)
    goto oom;
  json_object_foreach((json_t *)applied, k, v) {
    const kcr__smp_field *f = kcr__smp_field_of(def, k);
    json_t *cur = json_object_get(out, k), *m;
    if (json_is_null(v))
      continue;
    if (json_is_array(v))
      m = merge_list(cur ? json_incref(cur) : NULL, v, f, oom);
    else if (json_is_object(v) && f && f->map_type && strcmp(f->map_type, "atomic") == 0)
      m = merge_value(NULL, v, f->ref, oom); /* an atomic map is replaced whole */
    else
      m = merge_value(cur ? json_incref(cur) : NULL, v, f ? f->ref : -1, oom);
    if (!m || json_object_set_new(out, k, m) != 0) {
      json_decref(out);
      goto oom;
    }
  }
  return out;
oom:
  *oom = true;
  return NULL;
}

int kcr__apply_merge(const char *group, const char *kind, json_t **live, const json_t *applied,
                     char *why, size_t size) {
  bool oom = false;
  json_t *out;
  if (!json_is_object(applied)) {
    snprintf(why, size, "%s", "the applied configuration is not an object");
    return KCR__SMP_BAD_PATCH;
  }
  out = merge_value(json_incref(*live), applied, kcr__smp_root_of(group, kind), &oom);
  if (!out)
    return KCR__SMP_NOMEM;
  json_decref(*live);
  *live = out;
  return KCR__SMP_OK;
}
