/* SPDX-License-Identifier: MIT */
/*
 * cobj.c: the compact object (cobj.h), the cache's stored form.
 *
 * DESIGN. The bytes are one jansson string made with json_stringn_nocheck, so
 * a reference is json_incref and the slots of the DeltaFIFO can carry it. The
 * accessors walk the NUL-separated fields back from the string's end, whose
 * length jansson keeps: the metadata fields are short, the text may be tens of
 * kilobytes, and a key is asked for several times on the way to the store (a
 * strlen over the text for each was 9% of a 10 KiB ConfigMap sync). This file is the only one that
 * knows the representation: every other file sees kcr__cobj_t, and the crossing to and from a
 * json_t slot is kcr__cobj_slot / kcr__cobj_of_slot.
 */
#include <assert.h>
#include <string.h>

#include "api/meta_internal.h"
#include "cache/cobj.h"
#include "kcr/meta.h"
#include "util/alloc.h"
#include "util/hmap.h"

_Static_assert(KCR__SCAN_KEY_MAX == KCR_META_KEY_MAX, "the scanner's key bound is kcr_meta_key's");

/* as_json and as_cobj are the representation's two casts. */
static json_t *as_json(const kcr__cobj_t *c) {
  return (json_t *)(void *)c; /* immutable: only reference counts change */
}

static kcr__cobj_t *as_cobj(json_t *v) {
  return (kcr__cobj_t *)(void *)v;
}

/* finish appends rv, ns and name to b's text at [base, len) and makes the
 * object of it (see kcr__cobj_from_buf). */
static int finish(kcr_buf_t *b, size_t base, const char *rv, const char *ns, const char *name,
                  kcr__cobj_t **out) {
  json_t *s;
  int rc;
  *out = NULL;
  if ((rc = kcr_buf_appendc(b, '\0')) || (rc = kcr_buf_appends(b, rv)) ||
      (rc = kcr_buf_appendc(b, '\0')) || (rc = kcr_buf_appends(b, ns)) ||
      (rc = kcr_buf_appendc(b, '\0')) || (rc = kcr_buf_appends(b, name)))
    return rc; /* b was freed */
  s = json_stringn_nocheck(b->data + base, b->len - base);
  b->len = base;
  if (b->data)
    b->data[base] = '\0';
  if (!s)
    return KCR_ENOMEM;
  *out = as_cobj(s);
  return 0;
}

int kcr__cobj_from_buf(kcr_buf_t *b, size_t base, const kcr__scan_meta_t *meta, kcr__cobj_t **out) {
  return finish(b, base, meta->rv, meta->ns, meta->name, out);
}

/* dump_ctx: where json_dump_callback writes, and why it stopped. */
typedef struct dump_ctx {
  kcr_buf_t *b;
  int rc;
} dump_ctx_t;

/* dump_cb appends jansson's output to a bounded buffer. */
static int dump_cb(const char *p, size_t n, void *data) {
  dump_ctx_t *c = data;
  if (c->rc == 0)
    c->rc = kcr_buf_append(c->b, p, n);
  return c->rc ? -1 : 0;
}

/* meta_str reads metadata.<field> as a string, "" when absent. */
static const char *meta_str(const json_t *obj, const char *field) {
  const char *v = json_string_value(json_object_get(json_object_get(obj, "metadata"), field));
  return v ? v : "";
}

int kcr__cobj_from_tree(const json_t *obj, kcr_buf_t *scratch, kcr__cobj_t **out) {
  dump_ctx_t c = {scratch, 0};
  *out = NULL;
  kcr_buf_reset(scratch);
  if (json_dump_callback(obj, dump_cb, &c, JSON_COMPACT) != 0 || scratch->len == 0) {
    kcr_buf_reset(scratch);
    return c.rc ? c.rc : KCR_ENOMEM;
  }
  return finish(scratch, 0, meta_str(obj, "resourceVersion"), meta_str(obj, "namespace"),
                meta_str(obj, "name"), out);
}

kcr__cobj_t *kcr__cobj_ref(kcr__cobj_t *c) {
  json_incref(as_json(c));
  return c;
}

void kcr__cobj_unref(kcr__cobj_t *c) {
  json_decref(as_json(c));
}

/* field_before: the start of the field whose terminating NUL is at end (every
 * field has a NUL before it: the text has none inside and is never empty). */
static const char *field_before(const char *end) {
  while (end[-1] != '\0')
    end--;
  return end;
}

const char *kcr__cobj_name(const kcr__cobj_t *c) {
  const json_t *s = as_json(c);
  return field_before(json_string_value(s) + json_string_length(s));
}

const char *kcr__cobj_ns(const kcr__cobj_t *c) {
  return field_before(kcr__cobj_name(c) - 1);
}

const char *kcr__cobj_rv(const kcr__cobj_t *c) {
  return field_before(kcr__cobj_ns(c) - 1);
}

const char *kcr__cobj_json(const kcr__cobj_t *c, size_t *len) {
  const char *v = json_string_value(as_json(c));
  if (len)
    *len = (size_t)(kcr__cobj_rv(c) - 1 - v);
  return v;
}

int kcr__cobj_parse(const kcr__cobj_t *c, json_t **out) {
  json_error_t jerr;
  size_t len;
  const char *text = kcr__cobj_json(c, &len);
  *out = json_loadb(text, len, 0, &jerr);
  return *out ? 0 : KCR_ENOMEM;
}

/* skip_value returns the end of the JSON value at p in minified, valid text
 * (e bounds it), or NULL if the text is not what it should be. */
static const char *skip_value(const char *p, const char *e) {
  int depth = 0;
  while (p < e) {
    char ch = *p++;
    if (ch == '"') {
      while (p < e && *p != '"')
        p += *p == '\\' ? 2 : 1;
      if (p >= e)
        return NULL;
      p++;
    } else if (ch == '{' || ch == '[') {
      depth++;
      continue;
    } else if (ch == '}' || ch == ']') {
      if (--depth < 0)
        return NULL;
    } else if (ch == ':' || ch == ',') {
      continue; /* between a container's members or elements */
    } else {
      while (p < e && *p != ',' && *p != '}' && *p != ']')
        p++; /* a number or a literal */
    }
    if (depth == 0)
      return p;
  }
  return NULL;
}

static bool member_is(const char *name, size_t n, const char *lit) {
  return strlen(lit) == n && memcmp(name, lit, n) == 0;
}

int kcr__cobj_parse_meta(const kcr__cobj_t *c, json_t **out) {
  json_error_t jerr;
  size_t len;
  const char *p = kcr__cobj_json(c, &len), *e = p + len;
  json_t *obj = json_object();

  *out = NULL;
  if (!obj)
    return KCR_ENOMEM;
  if (p >= e || *p++ != '{')
    goto whole;
  while (p < e && *p != '}') {
    const char *name = p + 1, *end_name, *v, *end_v;
    if (*p != '"' || !(end_name = skip_value(p, e)) || end_name >= e || *end_name != ':')
      goto whole;
    v = end_name + 1;
    if (!(end_v = skip_value(v, e)))
      goto whole;
    {
      size_t n = (size_t)(end_name - 1 - name);
      if (member_is(name, n, "metadata") || member_is(name, n, "kind") ||
          member_is(name, n, "apiVersion")) {
        json_t *val = json_loadb(v, (size_t)(end_v - v), JSON_DECODE_ANY, &jerr);
        char key[16];
        if (!val)
          goto whole;
        memcpy(key, name, n);
        key[n] = '\0';
        if (json_object_set_new(obj, key, val) != 0) {
          json_decref(obj);
          return KCR_ENOMEM;
        }
      }
    }
    p = end_v;
    if (p < e && *p == ',')
      p++;
  }
  *out = obj;
  return 0;

whole: /* not the text cobj.c writes: read all of it */
  json_decref(obj);
  return kcr__cobj_parse(c, out);
}

int kcr__cobj_key(const kcr__cobj_t *c, char *buf, size_t size) {
  const char *ns = kcr__cobj_ns(c), *name = kcr__cobj_name(c);
  return kcr__meta_join_key(ns, strlen(ns), name, strlen(name), buf, size);
}

json_t *kcr__cobj_slot(kcr__cobj_t *c) {
  return as_json(c);
}

kcr__cobj_t *kcr__cobj_of_slot(const json_t *slot) {
  return json_is_string(slot) ? as_cobj((json_t *)slot) : NULL;
}

int kcr__cobj_key_fn(const json_t *slot, char *buf, size_t size, void *data) {
  const kcr__cobj_t *c = kcr__cobj_of_slot(slot);
  (void)data;
  return c ? kcr__cobj_key(c, buf, size) : kcr_meta_key(slot, buf, size);
}

int kcr__cobj_collapse(const json_t *events, json_t **out) {
  size_t n = json_array_size(events), total = 0, nout = 0, i;
  char key[KCR_META_KEY_MAX], *keys = NULL, *p;
  json_t **slot = NULL, *arr = NULL;
  kcr__hmap_t at = {0}; /* key -> its place in slot */
  int rc = KCR_ENOMEM;

  assert(out);
  *out = NULL;
  for (i = 0; i < n; i++) {
    const json_t *o = json_array_get(events, i);
    const kcr__cobj_t *c = kcr__cobj_of_slot(o);
    if (json_is_null(o))
      continue;
    if (!c || kcr__cobj_key(c, key, sizeof(key)))
      return KCR_EINVAL;
    total += strlen(key) + 1;
  }
  if (!(keys = kcr__malloc(total ? total : 1)) ||
      !(slot = kcr__calloc(n ? n : 1, sizeof(json_t *))) || kcr__hmap_reserve(&at, n))
    goto out;
  p = keys;
  for (i = 0; i < n; i++) {
    json_t *o = json_array_get(events, i);
    bool del = false;
    json_t **pos;
    if (json_is_null(o)) {
      if (++i == n)
        break;
      o = json_array_get(events, i);
      del = true;
      if (json_is_null(o))
        continue;
    }
    (void)kcr__cobj_key(kcr__cobj_of_slot(o), p, KCR_META_KEY_MAX);
    pos = kcr__hmap_get(&at, p);
    if (pos && !del) {
      *pos = o; /* an update keeps the key's place */
    } else if (pos) {
      *pos = NULL;
      (void)kcr__hmap_del(&at, p);
    } else if (!del) {
      slot[nout] = o;
      kcr__hmap_insert(&at, p, &slot[nout++]);
      p += strlen(p) + 1;
    }
  }
  if (!(arr = json_array()))
    goto out;
  for (i = 0; i < nout; i++)
    if (slot[i] && json_array_append(arr, slot[i]))
      goto out;
  *out = arr;
  arr = NULL;
  rc = 0;
out:
  json_decref(arr);
  kcr__hmap_free(&at);
  kcr__free(slot);
  kcr__free(keys);
  return rc;
}
