/* SPDX-License-Identifier: MIT */
/*
 * store.c: the thread-safe indexed store (client-go's threadSafeMap + storeIndex),
 * keeping objects compactly.
 *
 * Memory is the point of this file. A jansson tree costs about ten times an
 * object's JSON text, so an object is stored as a compact object (util/jscan.h:
 * a jansson string holding its minified JSON, resourceVersion, namespace and
 * name), immutable and reference counted. The informer hands its compact
 * objects over as they came from the scanner (kcr__store_put), so the bytes of
 * a watch event reach the store in one allocation and never as a tree; trees
 * given to kcr_store_add are dumped. Readers take a reference under the read lock and parse
 * after dropping it, so a list of 10k objects does not hold writers off for the
 * whole parse, and an object replaced meanwhile stays alive until its last
 * reader is done. What the store changes in place lives beside the block, in
 * the key's `item`: the pointer to the current block and the packed values the
 * index functions produced for it (but the namespace index's: that value is the
 * block's own namespace). Keeping those values means an update or a
 * delete never re-parses the old object to find which index entries to move.
 *
 * The item (with the key inline) lives as long as the key is stored, so the hash
 * maps borrow its key instead of copying it: the items map (key -> item) and,
 * per index, value -> vset, where a vset holds the value inline and the keys
 * (borrowed) of the items that produced it. An empty vset is dropped at once, as
 * upstream does (kubernetes#84959).
 *
 * Every change is all-or-nothing: allocations come first (index values, the new
 * item, room in the maps), index links that fail are unlinked again, and only
 * then does anything visible change. Replace builds a complete new generation
 * and swaps it in; the old one is freed after the lock is dropped.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cache/cobj.h"
#include "cache/store_internal.h"
#include "kcr/buf.h"
#include "kcr/store.h"
#include "util/alloc.h"
#include "util/hmap.h"

/* item: one stored key. obj and ivals are protected by the store lock. */
typedef struct item {
  kcr__cobj_t *obj;
  char *ivals; /* per indexer after the namespace one, in order: uint32 count, then count
                * NUL-terminated values; NULL when there is no such indexer */
  char key[];
} item_t;

/* vset: the keys (borrowed from their items) under one index value. */
typedef struct vset {
  kcr__hmap_t keys; /* key -> item_t */
  char value[];
} vset_t;

typedef struct indexer {
  char *name;
  kcr_index_fn fn;
  void *data;
  kcr__hmap_t values; /* value -> vset_t */
} indexer_t;

struct kcr_store {
  pthread_rwlock_t lock;
  kcr_key_fn key_fn;   /* immutable */
  void *key_data;      /* immutable */
  kcr__hmap_t items;   /* key -> item_t; protected by lock */
  indexer_t *idx;      /* protected by lock; idx[0] is the namespace index */
  size_t nidx;         /* protected by lock */
  kcr__cobj_t *rv_obj; /* protected by lock; the object whose rv is the store's: the last
                        * added, or a deleted one whose rv was newer */
  char *rv_str;        /* protected by lock; the rv of the last replace, or of a delete by
                        * tree, when it is the store's (then rv_obj is NULL) */
};

struct kcr_index_values {
  kcr_buf_t *buf;
  size_t count_off;
  uint32_t count;
  int rc;
};

/* --- stored objects ------------------------------------------------------ */

/* sobj_make serialises obj compactly into a new compact object. */
static int sobj_make(const json_t *obj, kcr__cobj_t **out, kcr_error_t *err) {
  kcr_buf_t b;
  int rc;
  kcr_buf_init(&b, KCR_STORE_OBJECT_MAX);
  rc = kcr__cobj_from_tree(obj, &b, out);
  kcr_buf_free(&b);
  if (rc == KCR_ETOOBIG)
    return kcr_error_set(err, KCR_ETOOBIG, "store: object larger than %u bytes",
                         KCR_STORE_OBJECT_MAX);
  if (rc)
    return kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
  return 0;
}

/* sobj_parse parses a stored object into a new tree. The text is always valid
 * JSON, so the only way to fail is memory. */
static int sobj_parse(const kcr__cobj_t *o, json_t **out) {
  return kcr__cobj_parse(o, out);
}

/* --- index values -------------------------------------------------------- */

int kcr_index_values_add(kcr_index_values_t *v, const char *value) {
  size_t n = strlen(value);
  int rc;
  assert(v && value);
  if (v->rc)
    return v->rc;
  if (n >= KCR_STORE_INDEX_VALUE_MAX) {
    v->rc = KCR_ETOOBIG;
    return v->rc;
  }
  if ((rc = kcr_buf_append(v->buf, value, n + 1))) {
    v->rc = rc;
    return rc;
  }
  v->count++;
  return 0;
}

int kcr__index_values_contain(kcr_index_fn fn, void *data, const json_t *obj, const char *value,
                              bool *found) {
  kcr_buf_t b;
  kcr_index_values_t v;
  const char *p;
  int rc;
  *found = false;
  kcr_buf_init(&b, (size_t)1 << 24);
  v = (kcr_index_values_t){&b, 0, 0, 0};
  rc = fn(obj, &v, data);
  if (rc == 0)
    rc = v.rc;
  p = b.data;
  for (uint32_t i = 0; rc == 0 && i < v.count; i++) {
    if (strcmp(p, value) == 0) {
      *found = true;
      break;
    }
    p += strlen(p) + 1;
  }
  kcr_buf_free(&b);
  return rc;
}

/* ns_index is the built-in namespace index (client-go MetaNamespaceIndexFunc). */
static int ns_index(const json_t *obj, kcr_index_values_t *v, void *data) {
  (void)data;
  return kcr_index_values_add(v, kcr_meta_namespace(obj));
}

/* run_indexer appends indexer ix's group for obj (a tree) to b. */
static int run_indexer(const indexer_t *ix, const json_t *obj, kcr_buf_t *b, kcr_error_t *err) {
  kcr_index_values_t v = {b, b->len, 0, 0};
  uint32_t zero = 0;
  int rc;
  if ((rc = kcr_buf_append(b, &zero, sizeof(zero))))
    return kcr_error_set(err, rc, "store: out of memory");
  rc = ix->fn(obj, &v, ix->data);
  if (rc == 0)
    rc = v.rc;
  if (rc)
    return kcr_error_set(err, rc, "store: index %s: %s", ix->name, kcr_strerror(rc));
  memcpy(b->data + v.count_off, &v.count, sizeof(v.count));
  return 0;
}

/* exact_copy hands b's bytes over in an allocation of exactly their size. */
static char *exact_copy(kcr_buf_t *b) {
  char *p = kcr__malloc(b->len);
  if (p && b->len)
    memcpy(p, b->data, b->len);
  kcr_buf_free(b);
  return p;
}

/*
 * compute_ivals runs indexers [1, n) on the object o holds, given as tree when
 * the caller has one (else o is parsed, only when such an indexer exists), into
 * a new packed blob, NULL when n is 1. The namespace index's value is not kept: it is the stored
 * object's namespace (igroup), which saves an allocation per item. It is checked here as
 * kcr_index_values_add would.
 */
static int compute_ivals(const indexer_t *idx, size_t n, const kcr__cobj_t *o, const json_t *tree,
                         char **out, kcr_error_t *err) {
  kcr_buf_t b;
  json_t *parsed = NULL;
  int rc = 0;
  *out = NULL;
  assert(n >= 1 && idx[0].fn == ns_index);
  if (strlen(kcr__cobj_ns(o)) >= KCR_STORE_INDEX_VALUE_MAX)
    return kcr_error_set(err, KCR_ETOOBIG, "store: index %s: %s", idx[0].name,
                         kcr_strerror(KCR_ETOOBIG));
  if (n == 1)
    return 0;
  kcr_buf_init(&b, (size_t)1 << 24);
  if (!tree && (rc = sobj_parse(o, &parsed)) != 0) {
    kcr_buf_free(&b);
    return kcr_error_set(err, rc, "store: out of memory");
  }
  for (size_t i = 1; i < n && rc == 0; i++)
    rc = run_indexer(&idx[i], tree ? tree : parsed, &b, err);
  json_decref(parsed);
  if (rc) {
    kcr_buf_free(&b);
    return rc;
  }
  if (!(*out = exact_copy(&b)))
    return kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
  return 0;
}

/* group finds group i of a blob (indexer i + 1): returns its first value, sets *count. */
static const char *group(const char *ivals, size_t i, uint32_t *count) {
  const char *p = ivals;
  uint32_t c;
  if (!ivals) {
    *count = 0;
    return NULL;
  }
  for (;;) {
    memcpy(&c, p, sizeof(c));
    p += sizeof(c);
    if (i-- == 0)
      break;
    for (uint32_t k = 0; k < c; k++)
      p += strlen(p) + 1;
  }
  *count = c;
  return p;
}

/* igroup finds indexer i's values for an item holding obj (NULL: none) and
 * ivals: the namespace index's one value is obj's namespace. */
static const char *igroup(const kcr__cobj_t *obj, const char *ivals, size_t i, uint32_t *count) {
  if (i > 0)
    return group(ivals, i - 1, count);
  *count = obj ? 1 : 0;
  return obj ? kcr__cobj_ns(obj) : NULL;
}

/* ivals_len is the byte length of the first ngroups groups of a blob. */
static size_t ivals_len(const char *ivals, size_t ngroups) {
  const char *p = ivals;
  for (size_t i = 0; i < ngroups; i++) {
    uint32_t c;
    memcpy(&c, p, sizeof(c));
    p += sizeof(c);
    for (uint32_t k = 0; k < c; k++)
      p += strlen(p) + 1;
  }
  return (size_t)(p - ivals);
}

static bool group_has(const char *g, uint32_t n, const char *v) {
  for (uint32_t k = 0; k < n; k++, g += strlen(g) + 1)
    if (strcmp(g, v) == 0)
      return true;
  return false;
}

static void vset_free(vset_t *vs) {
  kcr__hmap_free(&vs->keys);
  kcr__free(vs);
}

/* unlink removes key from the sets of g's values that are not in keep. */
static void unlink_values(kcr__hmap_t *values, const char *key, const char *g, uint32_t n,
                          const char *keep, uint32_t kn) {
  for (uint32_t k = 0; k < n; k++, g += strlen(g) + 1) {
    vset_t *vs;
    if (group_has(keep, kn, g) || !(vs = kcr__hmap_get(values, g)))
      continue;
    (void)kcr__hmap_del(&vs->keys, key);
    if (vs->keys.len == 0) {
      (void)kcr__hmap_del(values, vs->value);
      vset_free(vs);
    }
  }
}

/* link adds it's key to the sets of g's values that are not in old. On failure
 * some links may have been made: the caller undoes them with unlink_values. */
static int link_values(kcr__hmap_t *values, item_t *it, const char *g, uint32_t n, const char *old,
                       uint32_t on) {
  for (uint32_t k = 0; k < n; k++, g += strlen(g) + 1) {
    vset_t *vs;
    if (group_has(old, on, g))
      continue;
    vs = kcr__hmap_get(values, g);
    if (!vs) {
      size_t len = strlen(g);
      vs = kcr__malloc(sizeof(*vs) + len + 1);
      if (!vs)
        return KCR_ENOMEM;
      memset(&vs->keys, 0, sizeof(vs->keys));
      memcpy(vs->value, g, len + 1);
      if (kcr__hmap_put(values, vs->value, vs)) {
        kcr__free(vs);
        return KCR_ENOMEM;
      }
    }
    if (!kcr__hmap_find(&vs->keys, it->key) && kcr__hmap_put(&vs->keys, it->key, it))
      return KCR_ENOMEM;
  }
  return 0;
}

/* free_values frees an index's value map and its sets. */
static void free_values(kcr__hmap_t *values) {
  KCR__HMAP_FOREACH(values, sl) {
    vset_free(sl->val);
  }
  kcr__hmap_free(values);
}

static void item_free(item_t *it) {
  if (!it)
    return;
  kcr__cobj_unref(it->obj);
  kcr__free(it->ivals);
  kcr__free(it);
}

static void free_items(kcr__hmap_t *items) {
  KCR__HMAP_FOREACH(items, sl) {
    item_free(sl->val);
  }
  kcr__hmap_free(items);
}

static item_t *item_new(const char *key) {
  size_t n = strlen(key);
  item_t *it = kcr__malloc(sizeof(*it) + n + 1);
  if (it) {
    it->obj = NULL;
    it->ivals = NULL;
    memcpy(it->key, key, n + 1);
  }
  return it;
}

/* set_rv_obj makes the last added object's resourceVersion the store's: a
 * reference to its block instead of a copy, so that no add needs an allocation
 * for it (and none can fail because of it). */
static void set_rv_obj(kcr_store_t *s, kcr__cobj_t *o) {
  kcr__cobj_unref(s->rv_obj);
  s->rv_obj = kcr__cobj_ref(o);
  kcr__free(s->rv_str);
  s->rv_str = NULL;
}

/* set_rv_str makes str (owned, may be NULL) the store's resourceVersion. */
static void set_rv_str(kcr_store_t *s, char *str) {
  kcr__cobj_unref(s->rv_obj);
  s->rv_obj = NULL;
  kcr__free(s->rv_str);
  s->rv_str = str;
}

/* rv_well_formed: s is a resourceVersion that can be ordered, as
 * apimachinery's CompareResourceVersion reads one: a positive decimal without
 * a leading zero, of any length. */
static bool rv_well_formed(const char *s) {
  if (!s || !*s || *s == '0')
    return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return false;
  return true;
}

/* rv_after: resourceVersion a is well formed and after b; a b that is not well
 * formed ("" before any, or an opaque one) is before every version. */
static bool rv_after(const char *a, const char *b) {
  size_t la, lb;
  if (!rv_well_formed(a))
    return false;
  if (!rv_well_formed(b))
    return true;
  la = strlen(a);
  lb = strlen(b);
  return la != lb ? la > lb : strcmp(a, b) > 0;
}

/* current_rv: the store's resourceVersion (borrowed; "" before any). Lock held. */
static const char *current_rv(const kcr_store_t *s) {
  return s->rv_str ? s->rv_str : s->rv_obj ? kcr__cobj_rv(s->rv_obj) : "";
}

/* --- lifecycle ----------------------------------------------------------- */

static int make_store(kcr_key_fn key_fn, void *key_data, kcr_store_t **out) {
  kcr_store_t *s;
  assert(out);
  *out = NULL;
  s = kcr__calloc(1, sizeof(*s));
  if (!s)
    return KCR_ENOMEM;
  s->key_fn = key_fn ? key_fn : kcr_meta_key_fn;
  s->key_data = key_data;
  s->idx = kcr__calloc(1, sizeof(*s->idx));
  if (!s->idx || !(s->idx[0].name = kcr__strdup(KCR_STORE_INDEX_NAMESPACE))) {
    kcr__free(s->idx);
    kcr__free(s);
    return KCR_ENOMEM;
  }
  s->idx[0].fn = ns_index;
  s->nidx = 1;
  if (pthread_rwlock_init(&s->lock, NULL) != 0) {
    kcr__free(s->idx[0].name);
    kcr__free(s->idx);
    kcr__free(s);
    return KCR_ENOMEM;
  }
  *out = s;
  return 0;
}

int kcr_store_create(kcr_key_fn key_fn, void *key_data, kcr_store_t **out, kcr_error_t *err) {
  int rc = make_store(key_fn, key_data, out);
  if (rc)
    kcr_error_set(err, rc, "store: %s", rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

void kcr_store_destroy(kcr_store_t *s) {
  if (!s)
    return;
  free_items(&s->items);
  for (size_t i = 0; i < s->nidx; i++) {
    free_values(&s->idx[i].values);
    kcr__free(s->idx[i].name);
  }
  kcr__free(s->idx);
  set_rv_str(s, NULL);
  pthread_rwlock_destroy(&s->lock);
  kcr__free(s);
}

/* find_index returns the indexer called name, NULL if none. Lock held. */
static indexer_t *find_index(kcr_store_t *s, const char *name) {
  for (size_t i = 0; i < s->nidx; i++)
    if (strcmp(s->idx[i].name, name) == 0)
      return &s->idx[i];
  return NULL;
}

int kcr_store_add_indexer(kcr_store_t *s, const char *name, kcr_index_fn fn, void *data,
                          kcr_error_t *err) {
  indexer_t nix = {0}, *grown;
  char **blobs = NULL;
  size_t n = 0, i = 0;
  int rc = 0;

  assert(s && name && fn);
  pthread_rwlock_wrlock(&s->lock);
  if (find_index(s, name)) {
    rc = kcr_error_set(err, KCR_EEXIST, "store: index %s already exists", name);
    goto out;
  }
  nix.fn = fn;
  nix.data = data;
  if (!(nix.name = kcr__strdup(name)) ||
      !(grown = kcr__realloc(s->idx, (s->nidx + 1) * sizeof(*s->idx)))) {
    rc = kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
    goto out;
  }
  s->idx = grown;
  n = s->items.len;
  if (!(blobs = kcr__calloc(n ? n : 1, sizeof(char *)))) {
    rc = kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
    goto out;
  }
  /* Index what is stored: parse each object once, extend its blob, link it. */
  KCR__HMAP_FOREACH(&s->items, sl) {
    item_t *it = sl->val;
    json_t *obj = NULL;
    kcr_buf_t b;
    uint32_t c;
    const char *g;
    size_t old_len = ivals_len(it->ivals, s->nidx - 1);

    kcr_buf_init(&b, (size_t)1 << 24);
    if ((rc = sobj_parse(it->obj, &obj)) ||
        (old_len && (rc = kcr_buf_append(&b, it->ivals, old_len))) ||
        (rc = run_indexer(&nix, obj, &b, err))) {
      json_decref(obj);
      kcr_buf_free(&b);
      kcr_error_set(err, rc, "store: out of memory");
      goto out;
    }
    json_decref(obj);
    if (!(blobs[i] = exact_copy(&b))) {
      rc = kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
      goto out;
    }
    g = group(blobs[i], s->nidx - 1, &c);
    if ((rc = link_values(&nix.values, it, g, c, NULL, 0))) {
      i++;
      kcr_error_set(err, rc, "store: out of memory");
      goto out;
    }
    i++;
  }
  /* Commit: nothing below can fail. */
  i = 0;
  KCR__HMAP_FOREACH(&s->items, sl) {
    item_t *it = sl->val;
    kcr__free(it->ivals);
    it->ivals = blobs[i++];
  }
  kcr__free(blobs);
  s->idx[s->nidx++] = nix;
  pthread_rwlock_unlock(&s->lock);
  return 0;
out:
  pthread_rwlock_unlock(&s->lock);
  for (size_t k = 0; k < i; k++)
    kcr__free(blobs[k]);
  kcr__free(blobs);
  free_values(&nix.values);
  kcr__free(nix.name);
  return rc;
}

/* --- writes -------------------------------------------------------------- */

/* put stores o (stolen) under key, indexing tree (o's tree when the caller has
 * one, else NULL). *old (may be NULL) receives the object it replaced, a new
 * reference, NULL when the key is new. */
static int put(kcr_store_t *s, const char *key, kcr__cobj_t *o, const json_t *tree,
               kcr__cobj_t **old, kcr_error_t *err) {
  char *ivals = NULL;
  item_t *it, *fresh = NULL;
  size_t i, linked = 0;
  int rc;

  if (old)
    *old = NULL;
  pthread_rwlock_wrlock(&s->lock);
  if ((rc = compute_ivals(s->idx, s->nidx, o, tree, &ivals, err)))
    goto fail;
  it = kcr__hmap_get(&s->items, key);
  if (!it) {
    if (!(fresh = item_new(key)) || kcr__hmap_reserve(&s->items, 1)) {
      rc = kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
      goto fail;
    }
    it = fresh;
  }
  for (i = 0; i < s->nidx; i++, linked++) {
    uint32_t nn, on;
    const char *ng = igroup(o, ivals, i, &nn), *og = igroup(it->obj, it->ivals, i, &on);
    if ((rc = link_values(&s->idx[i].values, it, ng, nn, og, on))) {
      linked++; /* partially linked: undo it too */
      kcr_error_set(err, rc, "store: out of memory");
      goto fail;
    }
  }
  for (i = 0; i < s->nidx; i++) {
    uint32_t nn, on;
    const char *ng = igroup(o, ivals, i, &nn), *og = igroup(it->obj, it->ivals, i, &on);
    unlink_values(&s->idx[i].values, key, og, on, ng, nn);
  }
  if (fresh)
    kcr__hmap_insert(&s->items, fresh->key, fresh);
  if (old)
    *old = it->obj; /* the item's reference moves to the caller */
  else
    kcr__cobj_unref(it->obj);
  kcr__free(it->ivals);
  it->obj = o;
  it->ivals = ivals;
  set_rv_obj(s, o);
  pthread_rwlock_unlock(&s->lock);
  return 0;

fail:
  if (ivals) {
    it = fresh ? fresh : kcr__hmap_get(&s->items, key);
    for (i = 0; it && i < linked; i++) {
      uint32_t nn, on;
      const char *ng = igroup(o, ivals, i, &nn), *og = igroup(it->obj, it->ivals, i, &on);
      unlink_values(&s->idx[i].values, key, ng, nn, og, on);
    }
  }
  pthread_rwlock_unlock(&s->lock);
  kcr__free(fresh);
  kcr__free(ivals);
  kcr__cobj_unref(o);
  return rc;
}

int kcr_store_add(kcr_store_t *s, const json_t *obj, kcr_error_t *err) {
  char key[KCR_META_KEY_MAX];
  kcr__cobj_t *o = NULL;
  int rc;

  assert(s);
  if ((rc = s->key_fn(obj, key, sizeof(key), s->key_data)))
    return kcr_error_set(err, rc, "store: object has no key: %s", kcr_strerror(rc));
  if ((rc = sobj_make(obj, &o, err)))
    return rc;
  return put(s, key, o, obj, NULL, err);
}

int kcr__store_put(kcr_store_t *s, kcr__cobj_t *cobj, kcr__cobj_t **old, kcr_error_t *err) {
  char key[KCR_META_KEY_MAX];
  int rc;

  assert(s && cobj);
  if ((rc = kcr__cobj_key(cobj, key, sizeof(key))))
    return kcr_error_set(err, rc, "store: object has no key: %s", kcr_strerror(rc));
  return put(s, key, kcr__cobj_ref(cobj), NULL, old, err);
}

int kcr_store_update(kcr_store_t *s, const json_t *obj, kcr_error_t *err) {
  return kcr_store_add(s, obj, err);
}

/* delete_locked unlinks and frees the item under key; returns whether it existed. */
static item_t *detach_locked(kcr_store_t *s, const char *key) {
  item_t *it = kcr__hmap_get(&s->items, key);
  if (!it)
    return NULL;
  for (size_t i = 0; i < s->nidx; i++) {
    uint32_t c;
    const char *g = igroup(it->obj, it->ivals, i, &c);
    unlink_values(&s->idx[i].values, key, g, c, NULL, 0);
  }
  (void)kcr__hmap_del(&s->items, key);
  return it;
}

int kcr__store_remove(kcr_store_t *s, const char *key, kcr__cobj_t *last) {
  item_t *it;
  assert(s && key);
  pthread_rwlock_wrlock(&s->lock);
  it = detach_locked(s, key);
  if (last && rv_after(kcr__cobj_rv(last), current_rv(s)))
    set_rv_obj(s, last);
  pthread_rwlock_unlock(&s->lock);
  item_free(it);
  return it ? 0 : KCR_ENOENT;
}

int kcr_store_delete_key(kcr_store_t *s, const char *key) {
  return kcr__store_remove(s, key, NULL);
}

int kcr_store_delete(kcr_store_t *s, const json_t *obj, kcr_error_t *err) {
  char key[KCR_META_KEY_MAX], *rv = NULL;
  const char *given;
  item_t *it;
  int rc;
  assert(s);
  if ((rc = s->key_fn(obj, key, sizeof(key), s->key_data)))
    return kcr_error_set(err, rc, "store: object has no key: %s", kcr_strerror(rc));
  /* the copy first, so that nothing changes when it cannot be made */
  given = kcr_meta_resource_version(obj);
  if (rv_well_formed(given) && !(rv = kcr__strdup(given)))
    return kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
  pthread_rwlock_wrlock(&s->lock);
  it = detach_locked(s, key);
  if (rv && rv_after(rv, current_rv(s))) {
    set_rv_str(s, rv);
    rv = NULL;
  }
  pthread_rwlock_unlock(&s->lock);
  item_free(it);
  kcr__free(rv);
  return 0;
}

int kcr_store_replace(kcr_store_t *s, const json_t *items, const char *resource_version,
                      kcr_error_t *err) {
  size_t n, i;
  item_t **pre = NULL;
  kcr__hmap_t nitems = {0}, *nvalues = NULL, oitems;
  json_t *obj;
  char *rv = NULL;
  int rc = 0;

  assert(s);
  if (!json_is_array(items))
    return kcr_error_set(err, KCR_EINVAL, "store: replace needs an array");
  n = json_array_size(items);
  if (resource_version && *resource_version && !(rv = kcr__strdup(resource_version)))
    return kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
  if (!(pre = kcr__calloc(n ? n : 1, sizeof(item_t *)))) {
    kcr__free(rv);
    return kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
  }
  /* Outside the lock: keys and compact copies. */
  json_array_foreach(items, i, obj) {
    char key[KCR_META_KEY_MAX];
    if ((rc = s->key_fn(obj, key, sizeof(key), s->key_data))) {
      rc = kcr_error_set(err, rc, "store: item %zu has no key: %s", i, kcr_strerror(rc));
      goto free_pre;
    }
    if (!(pre[i] = item_new(key))) {
      rc = kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
      goto free_pre;
    }
    if ((rc = sobj_make(obj, &pre[i]->obj, err)))
      goto free_pre;
  }

  pthread_rwlock_wrlock(&s->lock);
  if (!(nvalues = kcr__calloc(s->nidx, sizeof(*nvalues))) || kcr__hmap_reserve(&nitems, n)) {
    rc = kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
    goto fail_locked;
  }
  json_array_foreach(items, i, obj) {
    item_t *have;
    if ((rc = compute_ivals(s->idx, s->nidx, pre[i]->obj, obj, &pre[i]->ivals, err)))
      goto fail_locked;
    have = kcr__hmap_get(&nitems, pre[i]->key);
    if (have) { /* a later duplicate wins */
      kcr__cobj_t *o = have->obj;
      char *iv = have->ivals;
      have->obj = pre[i]->obj;
      have->ivals = pre[i]->ivals;
      pre[i]->obj = o;
      pre[i]->ivals = iv;
    } else {
      kcr__hmap_insert(&nitems, pre[i]->key, pre[i]);
      pre[i] = NULL;
    }
  }
  KCR__HMAP_FOREACH(&nitems, sl) {
    item_t *it = sl->val;
    for (size_t x = 0; x < s->nidx; x++) {
      uint32_t c;
      const char *g = igroup(it->obj, it->ivals, x, &c);
      if (link_values(&nvalues[x], it, g, c, NULL, 0)) {
        rc = kcr_error_set(err, KCR_ENOMEM, "store: out of memory");
        goto fail_locked;
      }
    }
  }
  /* Swap generations. */
  oitems = s->items;
  s->items = nitems;
  for (size_t x = 0; x < s->nidx; x++) {
    kcr__hmap_t t = s->idx[x].values;
    s->idx[x].values = nvalues[x];
    nvalues[x] = t;
  }
  set_rv_str(s, rv);
  rv = NULL;
  nitems = oitems;
  n = s->nidx;
  pthread_rwlock_unlock(&s->lock);
  goto cleanup;

fail_locked:
  n = s->nidx;
  pthread_rwlock_unlock(&s->lock);
cleanup:
  if (nvalues)
    for (size_t x = 0; x < n; x++)
      free_values(&nvalues[x]);
  kcr__free(nvalues);
  free_items(&nitems);
  n = json_array_size(items);
free_pre:
  for (i = 0; i < n; i++)
    item_free(pre[i]);
  kcr__free(pre);
  kcr__free(rv);
  return rc;
}

/* --- reads --------------------------------------------------------------- */

int kcr_store_get_by_key(kcr_store_t *s, const char *key, json_t **out) {
  item_t *it;
  kcr__cobj_t *o = NULL;
  int rc;
  assert(s && key && out);
  *out = NULL;
  pthread_rwlock_rdlock(&s->lock);
  if ((it = kcr__hmap_get(&s->items, key)))
    o = kcr__cobj_ref(it->obj);
  pthread_rwlock_unlock(&s->lock);
  if (!o)
    return KCR_ENOENT;
  rc = sobj_parse(o, out);
  kcr__cobj_unref(o);
  return rc;
}

int kcr__store_get_compact(kcr_store_t *s, const char *key, kcr__cobj_t **out) {
  item_t *it;
  assert(s && key && out);
  *out = NULL;
  pthread_rwlock_rdlock(&s->lock);
  if ((it = kcr__hmap_get(&s->items, key)))
    *out = kcr__cobj_ref(it->obj);
  pthread_rwlock_unlock(&s->lock);
  return *out ? 0 : KCR_ENOENT;
}

int kcr_store_get(kcr_store_t *s, const json_t *obj, json_t **out) {
  char key[KCR_META_KEY_MAX];
  int rc;
  assert(s && out);
  *out = NULL;
  if ((rc = s->key_fn(obj, key, sizeof(key), s->key_data)))
    return rc;
  return kcr_store_get_by_key(s, key, out);
}

bool kcr_store_contains(kcr_store_t *s, const char *key) {
  bool have;
  pthread_rwlock_rdlock(&s->lock);
  have = kcr__hmap_find(&s->items, key) != NULL;
  pthread_rwlock_unlock(&s->lock);
  return have;
}

size_t kcr_store_len(kcr_store_t *s) {
  size_t n;
  pthread_rwlock_rdlock(&s->lock);
  n = s->items.len;
  pthread_rwlock_unlock(&s->lock);
  return n;
}

int kcr_store_resource_version(kcr_store_t *s, char *buf, size_t size) {
  int rc = 0;
  assert(s && buf && size);
  pthread_rwlock_rdlock(&s->lock);
  const char *rv = current_rv(s);
  size_t len = strlen(rv);
  if (len >= size)
    rc = KCR_ETOOBIG;
  else
    memcpy(buf, rv, len + 1);
  pthread_rwlock_unlock(&s->lock);
  if (rc)
    buf[0] = '\0';
  return rc;
}

/* refs_of takes references on the objects of the items in map m (lock held). */
static int refs_of(const kcr__hmap_t *m, kcr__cobj_t ***out, size_t *n) {
  kcr__cobj_t **v = kcr__malloc((m->len ? m->len : 1) * sizeof(kcr__cobj_t *));
  size_t k = 0;
  if (!v)
    return KCR_ENOMEM;
  KCR__HMAP_FOREACH(m, sl) {
    v[k++] = kcr__cobj_ref(((item_t *)sl->val)->obj);
  }
  *out = v;
  *n = k;
  return 0;
}

/* parse_all parses referenced objects into a new array and drops the references. */
static int parse_all(kcr__cobj_t **v, size_t n, json_t **out) {
  json_t *arr = json_array();
  int rc = arr ? 0 : KCR_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    json_t *obj = NULL;
    if (rc == 0 && (rc = sobj_parse(v[i], &obj)) == 0 && json_array_append_new(arr, obj))
      rc = KCR_ENOMEM;
    kcr__cobj_unref(v[i]);
  }
  kcr__free(v);
  if (rc) {
    json_decref(arr);
    arr = NULL;
  }
  *out = arr;
  return rc;
}

int kcr_store_list(kcr_store_t *s, json_t **out) {
  kcr__cobj_t **v;
  size_t n;
  int rc;
  assert(s && out);
  *out = NULL;
  pthread_rwlock_rdlock(&s->lock);
  rc = refs_of(&s->items, &v, &n);
  pthread_rwlock_unlock(&s->lock);
  return rc ? rc : parse_all(v, n, out);
}

int kcr__store_list_compact(kcr_store_t *s, kcr__cobj_t ***out, size_t *n) {
  int rc;
  assert(s && out && n);
  pthread_rwlock_rdlock(&s->lock);
  rc = refs_of(&s->items, out, n);
  pthread_rwlock_unlock(&s->lock);
  if (rc) {
    *out = NULL;
    *n = 0;
  }
  return rc;
}

/* strv_of copies the keys of m into one NULL-terminated allocation. */
static int strv_of(const kcr__hmap_t *m, char ***out, size_t *n) {
  size_t bytes = (m->len + 1) * sizeof(char *), k = 0;
  char **v, *p;
  KCR__HMAP_FOREACH(m, sl) {
    bytes += strlen(sl->key) + 1;
  }
  if (!(v = kcr__malloc(bytes)))
    return KCR_ENOMEM;
  p = (char *)(v + m->len + 1);
  KCR__HMAP_FOREACH(m, sl) {
    size_t len = strlen(sl->key) + 1;
    memcpy(p, sl->key, len);
    v[k++] = p;
    p += len;
  }
  v[k] = NULL;
  *out = v;
  if (n)
    *n = k;
  return 0;
}

int kcr_store_list_keys(kcr_store_t *s, char ***out, size_t *n) {
  int rc;
  assert(s && out);
  *out = NULL;
  pthread_rwlock_rdlock(&s->lock);
  rc = strv_of(&s->items, out, n);
  pthread_rwlock_unlock(&s->lock);
  return rc;
}

static const kcr__hmap_t empty_map;

/* keys_under returns the key set of value in index name (lock held). */
static int keys_under(kcr_store_t *s, const char *name, const char *value,
                      const kcr__hmap_t **keys) {
  indexer_t *ix = find_index(s, name);
  vset_t *vs;
  if (!ix)
    return KCR_ENOENT;
  vs = kcr__hmap_get(&ix->values, value);
  *keys = vs ? &vs->keys : &empty_map;
  return 0;
}

int kcr_store_by_index(kcr_store_t *s, const char *index_name, const char *value, json_t **out) {
  const kcr__hmap_t *keys;
  kcr__cobj_t **v = NULL;
  size_t n = 0;
  int rc;
  assert(s && index_name && value && out);
  *out = NULL;
  pthread_rwlock_rdlock(&s->lock);
  if ((rc = keys_under(s, index_name, value, &keys)) == 0)
    rc = refs_of(keys, &v, &n);
  pthread_rwlock_unlock(&s->lock);
  return rc ? rc : parse_all(v, n, out);
}

int kcr_store_index_keys(kcr_store_t *s, const char *index_name, const char *value, char ***out,
                         size_t *n) {
  const kcr__hmap_t *keys;
  int rc;
  assert(s && index_name && value && out);
  *out = NULL;
  pthread_rwlock_rdlock(&s->lock);
  if ((rc = keys_under(s, index_name, value, &keys)) == 0)
    rc = strv_of(keys, out, n);
  pthread_rwlock_unlock(&s->lock);
  return rc;
}

int kcr_store_list_index_values(kcr_store_t *s, const char *index_name, char ***out, size_t *n) {
  indexer_t *ix;
  int rc = KCR_ENOENT;
  assert(s && index_name && out);
  *out = NULL;
  pthread_rwlock_rdlock(&s->lock);
  if ((ix = find_index(s, index_name)))
    rc = strv_of(&ix->values, out, n);
  pthread_rwlock_unlock(&s->lock);
  return rc;
}

int kcr_store_index(kcr_store_t *s, const char *index_name, const json_t *obj, json_t **out) {
  indexer_t *ix;
  kcr_buf_t b;
  kcr__hmap_t seen = {0};
  kcr__cobj_t **v = NULL;
  size_t n = 0;
  int rc;

  assert(s && index_name && out);
  *out = NULL;
  kcr_buf_init(&b, (size_t)1 << 24);
  /* The write lock: the index function runs under it everywhere else too. */
  pthread_rwlock_wrlock(&s->lock);
  if (!(ix = find_index(s, index_name))) {
    rc = KCR_ENOENT;
    goto out;
  }
  if ((rc = run_indexer(ix, obj, &b, NULL)) == 0) {
    uint32_t c;
    const char *g = group(b.data, 0, &c);
    /* Union of the key sets, each key once (upstream dedupes likewise). */
    for (uint32_t k = 0; k < c && rc == 0; k++, g += strlen(g) + 1) {
      vset_t *vs = kcr__hmap_get(&ix->values, g);
      if (!vs)
        continue;
      KCR__HMAP_FOREACH(&vs->keys, sl) {
        if (rc == 0 && !kcr__hmap_find(&seen, sl->key))
          rc = kcr__hmap_put(&seen, sl->key, sl->val);
      }
    }
    if (rc == 0)
      rc = refs_of(&seen, &v, &n);
  }
out:
  pthread_rwlock_unlock(&s->lock);
  kcr__hmap_free(&seen);
  kcr_buf_free(&b);
  return rc ? rc : parse_all(v, n, out);
}

/* foreach_one hands one item's stored text to cb. */
static int foreach_one(const item_t *it, kcr_store_foreach_cb cb, void *data) {
  size_t len;
  const char *json = kcr__cobj_json(it->obj, &len);
  return cb(it->key, json, len, data);
}

int kcr_store_foreach(kcr_store_t *s, kcr_store_foreach_cb cb, void *data) {
  int rc = 0;
  assert(s && cb);
  pthread_rwlock_rdlock(&s->lock);
  KCR__HMAP_FOREACH(&s->items, sl) {
    item_t *it = sl->val;
    if (rc == 0)
      rc = foreach_one(it, cb, data);
  }
  pthread_rwlock_unlock(&s->lock);
  return rc;
}

int kcr_store_foreach_index(kcr_store_t *s, const char *index_name, const char *value,
                            kcr_store_foreach_cb cb, void *data) {
  const kcr__hmap_t *keys;
  int rc;
  assert(s && index_name && value && cb);
  pthread_rwlock_rdlock(&s->lock);
  if ((rc = keys_under(s, index_name, value, &keys)) == 0) {
    KCR__HMAP_FOREACH(keys, sl) {
      item_t *it = sl->val;
      if (rc == 0)
        rc = foreach_one(it, cb, data);
    }
  }
  pthread_rwlock_unlock(&s->lock);
  return rc;
}

/* --- known objects for a DeltaFIFO ---------------------------------------- */

static int known_list_keys(void *data, char ***out, size_t *n) {
  return kcr_store_list_keys(data, out, n);
}

static int known_get_by_key(void *data, const char *key, json_t **out) {
  return kcr_store_get_by_key(data, key, out);
}

static bool known_contains(void *data, const char *key) {
  return kcr_store_contains(data, key);
}

void kcr_store_known_objects(kcr_store_t *s, kcr_known_objects *out) {
  assert(s && out);
  out->list_keys = known_list_keys;
  out->get_by_key = known_get_by_key;
  out->contains = known_contains;
  out->data = s;
}
