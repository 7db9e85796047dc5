/* SPDX-License-Identifier: MIT */
/*
 * delta_fifo.c: client-go's DeltaFIFO (tools/cache/delta_fifo.go), behaviour for
 * behaviour, with EmitDeltaTypeReplaced always on.
 *
 * State: a map key -> item (the key's deltas, oldest first, key stored inline)
 * and a ring buffer of item pointers giving the FIFO order. Invariant, as
 * upstream: an item is in the ring iff it is in the map, exactly once, and has
 * at least one delta. A key that gets more deltas while queued keeps its place,
 * so a busy object cannot starve the others ("line jumpers").
 *
 * Each queue operation is all-or-nothing: the delta, a new item and room in the
 * map and the ring are allocated before anything changes. Pop never allocates:
 * putting a popped item back (requeue) reuses the item and the room its removal
 * freed. Replace is a sequence of such operations, so an allocation failure in
 * the middle leaves the work done so far queued, as upstream's error return
 * does; the invariant holds either way.
 *
 * The processing function runs with the mutex held, as upstream's does: the
 * informer updates its store (the known objects) inside it, and Replace and
 * Resync, which read the known objects under the same mutex, never see the store
 * and the queue disagree.
 */
#include <assert.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#include "kcr/delta_fifo.h"
#include "util/alloc.h"
#include "util/hmap.h"

/*
 * fslab: the items a large Replace makes for its new keys, in one mapping
 * (SLAB_MIN_BYTES and more) that goes back to the kernel with the last of
 * them. Made one by one, on the reflector thread and after the list's
 * objects, the items of an initial list were freed by the processor into a
 * heap that no later allocation used (4 MB at 50k objects). refs counts the
 * items handed out and not freed, plus one for the Replace while it runs.
 */
typedef struct fslab {
  atomic_size_t refs;
  size_t bytes; /* of the mapping, this header included */
  char *next;   /* protected by the FIFO's mu */
  char *end;
} fslab_t;

#define SLAB_MIN_BYTES ((size_t)256 * 1024)

/* fitem: one queued key. d is inl until a second delta comes: most keys have
 * one delta when popped (every object of a list), and one allocation per key
 * instead of two leaves half the holes in the heap once the list is popped. */
typedef struct fitem {
  kcr_delta *d;
  size_t n, cap;
  fslab_t *slab; /* NULL: the item is its own allocation */
  kcr_delta inl;
  char key[];
} fitem_t;

/* fitem_bytes is the room an item for a key of len bytes takes in a slab. */
static size_t fitem_bytes(size_t len) {
  size_t a = alignof(fitem_t);
  return (offsetof(fitem_t, key) + len + 1 + a - 1) / a * a;
}

static void slab_unref(fslab_t *sl) {
  if (sl && atomic_fetch_sub_explicit(&sl->refs, 1, memory_order_acq_rel) == 1)
    (void)munmap(sl, sl->bytes);
}

/* FIFO_KEEP_SLOTS: a drained FIFO gives back its map and ring when either is
 * larger than this (what a list made), and keeps them otherwise, so that the
 * steady flow of watch events does not allocate them over and over. */
#define FIFO_KEEP_SLOTS 64

struct kcr_delta_fifo {
  pthread_mutex_t mu;
  pthread_cond_t cond;        /* signalled when a key is queued or the FIFO closes */
  kcr_key_fn key_fn;          /* immutable */
  void *key_data;             /* immutable */
  kcr_known_objects known;    /* immutable */
  bool has_known;             /* immutable */
  kcr_transform_fn transform; /* immutable */
  void *transform_data;       /* immutable */
  fslab_t *slab;              /* protected by mu: where a running Replace takes new items */
  kcr__hmap_t items;          /* key -> fitem_t; protected by mu */
  fitem_t **ring;             /* protected by mu */
  size_t head, len, cap;      /* protected by mu */
  bool populated;             /* protected by mu */
  bool closed;                /* protected by mu */
  size_t initial;             /* protected by mu: first Replace's items not yet popped */
};

const char *kcr_delta_type_name(kcr_delta_type type) {
  switch (type) {
  case KCR_DELTA_ADDED:
    return "Added";
  case KCR_DELTA_UPDATED:
    return "Updated";
  case KCR_DELTA_DELETED:
    return "Deleted";
  case KCR_DELTA_REPLACED:
    return "Replaced";
  case KCR_DELTA_SYNC:
    return "Sync";
  }
  return "Unknown";
}

static void delta_release(kcr_delta *d) {
  json_decref(d->object);
  kcr__free((char *)d->tombstone_key);
}

void kcr_deltas_free(kcr_delta *deltas, size_t n) {
  if (!deltas)
    return;
  for (size_t i = 0; i < n; i++)
    delta_release(&deltas[i]);
  kcr__free(deltas);
}

static void fitem_free(fitem_t *it) {
  if (!it)
    return;
  for (size_t i = 0; i < it->n; i++)
    delta_release(&it->d[i]);
  if (it->d != &it->inl)
    kcr__free(it->d);
  if (it->slab)
    slab_unref(it->slab);
  else
    kcr__free(it);
}

/* fitem_new makes an item for key, in f's slab while a Replace has one with
 * room (FIFO lock held), else as an allocation of its own. */
static fitem_t *fitem_new(kcr_delta_fifo_t *f, const char *key) {
  size_t n = strlen(key);
  fslab_t *sl = f->slab;
  fitem_t *it;
  if (sl && (size_t)(sl->end - sl->next) >= fitem_bytes(n)) {
    it = (fitem_t *)(void *)sl->next;
    sl->next += fitem_bytes(n);
    atomic_fetch_add_explicit(&sl->refs, 1, memory_order_relaxed);
  } else if (!(it = kcr__malloc(sizeof(*it) + n + 1))) {
    return NULL;
  } else {
    sl = NULL;
  }
  it->slab = sl;
  it->d = NULL;
  it->n = 0;
  it->cap = 0;
  memcpy(it->key, key, n + 1);
  return it;
}

/* fitem_reserve makes room for one more delta. */
static int fitem_reserve(fitem_t *it) {
  kcr_delta *d;
  size_t cap;
  if (it->n < it->cap)
    return 0;
  if (it->cap == 0) {
    it->d = &it->inl;
    it->cap = 1;
    return 0;
  }
  cap = it->cap * 2;
  if (it->d == &it->inl) {
    if (!(d = kcr__malloc(cap * sizeof(*d))))
      return KCR_ENOMEM;
    memcpy(d, it->d, it->n * sizeof(*d));
  } else if (!(d = kcr__realloc(it->d, cap * sizeof(*d)))) {
    return KCR_ENOMEM;
  }
  it->d = d;
  it->cap = cap;
  return 0;
}

/* --- the ring -------------------------------------------------------------- */

static int ring_reserve(kcr_delta_fifo_t *f) {
  fitem_t **r;
  size_t cap;
  if (f->len < f->cap)
    return 0;
  cap = f->cap ? f->cap * 2 : 16;
  if (!(r = kcr__malloc(cap * sizeof(fitem_t *))))
    return KCR_ENOMEM;
  for (size_t i = 0; f->cap && i < f->len; i++)
    r[i] = f->ring[(f->head + i) % f->cap];
  kcr__free(f->ring);
  f->ring = r;
  f->head = 0;
  f->cap = cap;
  return 0;
}

static void ring_push(kcr_delta_fifo_t *f, fitem_t *it) {
  assert(f->cap > 0 && f->len < f->cap);
  f->ring[(f->head + f->len) % f->cap] = it;
  f->len++;
}

static fitem_t *ring_at(const kcr_delta_fifo_t *f, size_t i) {
  assert(f->cap > 0 && i < f->len);
  return f->ring[(f->head + i) % f->cap];
}

static fitem_t *ring_pop(kcr_delta_fifo_t *f) {
  assert(f->cap > 0 && f->len > 0);
  fitem_t *it = f->ring[f->head];
  f->head = (f->head + 1) % f->cap;
  f->len--;
  return it;
}

/* --- lifecycle ----------------------------------------------------------- */

static int make_delta_fifo(const kcr_delta_fifo_options *opts, kcr_delta_fifo_t **out) {
  kcr_delta_fifo_t *f;
  assert(out);
  *out = NULL;
  if (!(f = kcr__calloc(1, sizeof(*f))))
    return KCR_ENOMEM;
  f->key_fn = kcr_meta_key_fn;
  if (opts) {
    if (opts->key_fn) {
      f->key_fn = opts->key_fn;
      f->key_data = opts->key_data;
    }
    if (opts->known) {
      assert(opts->known->list_keys && opts->known->get_by_key);
      f->known = *opts->known;
      f->has_known = true;
    }
    f->transform = opts->transform;
    f->transform_data = opts->transform_data;
  }
  if (pthread_mutex_init(&f->mu, NULL) != 0) {
    kcr__free(f);
    return KCR_ESYS;
  }
  if (pthread_cond_init(&f->cond, NULL) != 0) {
    pthread_mutex_destroy(&f->mu);
    kcr__free(f);
    return KCR_ESYS;
  }
  *out = f;
  return 0;
}

int kcr_delta_fifo_create(const kcr_delta_fifo_options *opts, kcr_delta_fifo_t **out,
                          kcr_error_t *err) {
  int rc = make_delta_fifo(opts, out);
  if (rc)
    kcr_error_set(err, rc, "delta fifo: %s",
                  rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

void kcr_delta_fifo_destroy(kcr_delta_fifo_t *f) {
  if (!f)
    return;
  KCR__HMAP_FOREACH(&f->items, sl) {
    fitem_free(sl->val);
  }
  kcr__hmap_free(&f->items);
  kcr__free(f->ring);
  pthread_cond_destroy(&f->cond);
  pthread_mutex_destroy(&f->mu);
  kcr__free(f);
}

/* --- queueing ------------------------------------------------------------ */

/* key_of computes obj's key with the FIFO's key function. */
static int key_of(kcr_delta_fifo_t *f, const json_t *obj, char *buf, size_t size,
                  kcr_error_t *err) {
  int rc = f->key_fn(obj, buf, size, f->key_data);
  if (rc)
    return kcr_error_set(err, rc, "delta fifo: object has no key: %s", kcr_strerror(rc));
  return 0;
}

/*
 * queue_locked appends a delta for key (client-go queueActionInternalLocked).
 * obj is borrowed (a reference is taken when it is stored); tombstone says the
 * delta is a DeletedFinalStateUnknown for key. internal is the type that
 * decides on the transform (Sync objects and tombstones skip it).
 */
static int queue_locked(kcr_delta_fifo_t *f, kcr_delta_type type, kcr_delta_type internal,
                        json_t *obj, const char *key, bool tombstone, kcr_error_t *err) {
  kcr_delta nd = {type, obj, NULL};
  fitem_t *it, *fresh = NULL;
  int rc;

  if (f->transform && !tombstone && internal != KCR_DELTA_SYNC &&
      (rc = f->transform(obj, f->transform_data)))
    return kcr_error_set(err, rc, "delta fifo: transform: %s", kcr_strerror(rc));
  if (tombstone && !(nd.tombstone_key = kcr__strdup(key)))
    goto nomem;
  it = kcr__hmap_get(&f->items, key);
  if (it) {
    kcr_delta *last = &it->d[it->n - 1];
    /* dedupDeltas / isDeletionDup: two trailing Deleted collapse into one; keep
     * the older unless it is a tombstone. Take the new object before releasing
     * the old: Replace tombstones a queued key with its newest object, which is
     * then last's own, and last may hold its only reference. */
    if (type == KCR_DELTA_DELETED && last->type == KCR_DELTA_DELETED) {
      if (last->tombstone_key) {
        json_incref(nd.object);
        delta_release(last);
        *last = nd;
      } else {
        kcr__free((char *)nd.tombstone_key);
      }
      pthread_cond_broadcast(&f->cond);
      return 0;
    }
    if (fitem_reserve(it))
      goto nomem;
  } else {
    if (!(fresh = fitem_new(f, key)) || fitem_reserve(fresh) || kcr__hmap_reserve(&f->items, 1) ||
        ring_reserve(f))
      goto nomem;
    it = fresh;
    kcr__hmap_insert(&f->items, it->key, it);
    ring_push(f, it);
  }
  json_incref(nd.object);
  it->d[it->n++] = nd;
  pthread_cond_broadcast(&f->cond);
  return 0;
nomem:
  fitem_free(fresh);
  kcr__free((char *)nd.tombstone_key);
  return kcr_error_set(err, KCR_ENOMEM, "delta fifo: out of memory");
}

/*
 * queue_obj queues one delta. With steal, the caller's reference is dropped on
 * every path, and on success while the FIFO lock is still held: the popping thread
 * then owns the last reference, and the object is freed on the thread that
 * consumed it, ordered by the lock (jansson's release-only decrement would leave
 * a free on the producing thread unordered with the consumer's reads).
 */
static int queue_obj(kcr_delta_fifo_t *f, kcr_delta_type type, json_t *obj, bool steal,
                     kcr_error_t *err) {
  char key[KCR_META_KEY_MAX];
  int rc;
  assert(f);
  if ((rc = key_of(f, obj, key, sizeof(key), err))) {
    if (steal)
      json_decref(obj);
    return rc;
  }
  pthread_mutex_lock(&f->mu);
  f->populated = true;
  rc = queue_locked(f, type, type, obj, key, false, err);
  if (steal)
    json_decref(obj);
  pthread_mutex_unlock(&f->mu);
  return rc;
}

int kcr_delta_fifo_add(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err) {
  return queue_obj(f, KCR_DELTA_ADDED, obj, false, err);
}

int kcr_delta_fifo_update(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err) {
  return queue_obj(f, KCR_DELTA_UPDATED, obj, false, err);
}

int kcr_delta_fifo_add_new(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err) {
  return queue_obj(f, KCR_DELTA_ADDED, obj, true, err);
}

int kcr_delta_fifo_update_new(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err) {
  return queue_obj(f, KCR_DELTA_UPDATED, obj, true, err);
}

/* known_has tells whether the known objects hold key. An error other than "not
 * found" counts as known, as upstream queues the deletion when GetByKey fails. */
static bool known_has(kcr_delta_fifo_t *f, const char *key) {
  json_t *obj = NULL;
  int rc;
  if (f->known.contains)
    return f->known.contains(f->known.data, key);
  rc = f->known.get_by_key(f->known.data, key, &obj);
  json_decref(obj);
  return rc != KCR_ENOENT;
}

static int delete_obj(kcr_delta_fifo_t *f, json_t *obj, bool steal, kcr_error_t *err) {
  char key[KCR_META_KEY_MAX];
  int rc = 0;
  assert(f);
  if ((rc = key_of(f, obj, key, sizeof(key), err))) {
    if (steal)
      json_decref(obj);
    return rc;
  }
  pthread_mutex_lock(&f->mu);
  f->populated = true;
  /* Not queued and not known: a relist already reported the deletion. */
  if (kcr__hmap_find(&f->items, key) || (f->has_known && known_has(f, key)))
    rc = queue_locked(f, KCR_DELTA_DELETED, KCR_DELTA_DELETED, obj, key, false, err);
  if (steal)
    json_decref(obj); /* under the lock: see queue_obj */
  pthread_mutex_unlock(&f->mu);
  return rc;
}

int kcr_delta_fifo_delete(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err) {
  return delete_obj(f, obj, false, err);
}

int kcr_delta_fifo_delete_new(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err) {
  return delete_obj(f, obj, true, err);
}

/* slab_for maps a slab for the listed keys that f does not hold, when they
 * need SLAB_MIN_BYTES or more; NULL otherwise or when the mapping fails (the
 * items are then allocated one by one). Lock held. */
static fslab_t *slab_for(kcr_delta_fifo_t *f, const kcr__hmap_t *listed) {
  size_t bytes = fitem_bytes(0); /* the header's room, rounded like an item */
  fslab_t *sl;
  void *p;
  static_assert(sizeof(fslab_t) <= offsetof(fitem_t, key), "header fits an item's room");
  KCR__HMAP_FOREACH(listed, e) {
    if (!kcr__hmap_find(&f->items, e->key))
      bytes += fitem_bytes(strlen(e->key));
  }
  if (bytes < SLAB_MIN_BYTES)
    return NULL;
  p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  sl = p;
  atomic_init(&sl->refs, 1);
  sl->bytes = bytes;
  sl->next = (char *)p + fitem_bytes(0);
  sl->end = (char *)p + bytes;
  return sl;
}

/* replace_impl is Replace; with steal, list is the caller's reference, dropped on
 * every path and, once anything was queued, under the lock (see queue_obj). */
static int replace_impl(kcr_delta_fifo_t *f, json_t *list, bool steal, kcr_error_t *err) {
  char key[KCR_META_KEY_MAX], **known_keys = NULL, *keys = NULL, *p;
  kcr__hmap_t listed = {0};
  fslab_t *slab = NULL;
  size_t total = 0, queued_deletions = 0, i;
  json_t *obj;
  int rc = 0;

  assert(f);
  if (!json_is_array(list)) {
    rc = kcr_error_set(err, KCR_EINVAL, "delta fifo: replace needs an array");
    goto out;
  }
  /* The set of listed keys: sized in a first pass, filled in a second. */
  json_array_foreach(list, i, obj) {
    if ((rc = key_of(f, obj, key, sizeof(key), err)))
      goto out;
    total += strlen(key) + 1;
  }
  if (!(keys = kcr__malloc(total ? total : 1)) ||
      kcr__hmap_reserve(&listed, json_array_size(list))) {
    rc = kcr_error_set(err, KCR_ENOMEM, "delta fifo: out of memory");
    goto out;
  }
  p = keys;
  json_array_foreach(list, i, obj) {
    (void)f->key_fn(obj, p, KCR_META_KEY_MAX, f->key_data);
    if (!kcr__hmap_find(&listed, p))
      kcr__hmap_insert(&listed, p, obj);
    p += strlen(p) + 1;
  }

  pthread_mutex_lock(&f->mu);
  slab = slab_for(f, &listed);
  f->slab = slab;
  /* Replaced for every listed object (the transform applies: internal Replaced). */
  p = keys;
  json_array_foreach(list, i, obj) {
    if ((rc = queue_locked(f, KCR_DELTA_REPLACED, KCR_DELTA_REPLACED, obj, p, false, err)))
      goto unlock;
    p += strlen(p) + 1;
  }
  /* Tombstones for queued keys that were not listed, with their newest object.
   * Queueing onto existing items never inserts, so iterating the map is safe. */
  KCR__HMAP_FOREACH(&f->items, sl) {
    fitem_t *it = sl->val;
    if (kcr__hmap_find(&listed, it->key))
      continue;
    queued_deletions++;
    if ((rc = queue_locked(f, KCR_DELTA_DELETED, KCR_DELTA_DELETED, it->d[it->n - 1].object,
                           it->key, true, err)))
      goto unlock;
  }
  /* Tombstones for known keys neither listed nor queued, with the known object. */
  if (f->has_known) {
    if ((rc = f->known.list_keys(f->known.data, &known_keys, NULL))) {
      rc = kcr_error_set(err, rc, "delta fifo: listing known keys: %s", kcr_strerror(rc));
      goto unlock;
    }
    for (char **k = known_keys; *k; k++) {
      json_t *last = NULL;
      if (kcr__hmap_find(&listed, *k) || kcr__hmap_find(&f->items, *k))
        continue;
      rc = f->known.get_by_key(f->known.data, *k, &last);
      if (rc == KCR_ENOMEM) {
        rc = kcr_error_set(err, rc, "delta fifo: out of memory");
        goto unlock;
      }
      /* Gone from the known objects meanwhile: a tombstone without an object. */
      queued_deletions++;
      rc = queue_locked(f, KCR_DELTA_DELETED, KCR_DELTA_DELETED, last, *k, true, err);
      json_decref(last);
      if (rc)
        goto unlock;
    }
  }
  if (!f->populated) {
    f->populated = true;
    f->initial = listed.len + queued_deletions;
  }
unlock:
  f->slab = NULL;
  if (steal) {
    json_decref(list);
    list = NULL;
  }
  pthread_mutex_unlock(&f->mu);
  slab_unref(slab); /* the Replace's hold: an unused slab goes at once */
out:
  if (steal)
    json_decref(list);
  kcr_free(known_keys);
  kcr__hmap_free(&listed);
  kcr__free(keys);
  return rc;
}

int kcr_delta_fifo_replace(kcr_delta_fifo_t *f, json_t *list, const char *resource_version,
                           kcr_error_t *err) {
  (void)resource_version;
  return replace_impl(f, list, false, err);
}

int kcr_delta_fifo_replace_new(kcr_delta_fifo_t *f, json_t *list, const char *resource_version,
                               kcr_error_t *err) {
  (void)resource_version;
  return replace_impl(f, list, true, err);
}

int kcr_delta_fifo_resync(kcr_delta_fifo_t *f, kcr_error_t *err) {
  char **keys = NULL;
  int rc = 0;
  assert(f);
  if (!f->has_known)
    return 0;
  pthread_mutex_lock(&f->mu);
  if ((rc = f->known.list_keys(f->known.data, &keys, NULL))) {
    rc = kcr_error_set(err, rc, "delta fifo: listing known keys: %s", kcr_strerror(rc));
    goto out;
  }
  for (char **k = keys; *k && rc == 0; k++) {
    json_t *obj = NULL;
    /* Something queued already: a Sync would carry an older state (upstream's
     * UpdateResyncRace). */
    if (kcr__hmap_find(&f->items, *k))
      continue;
    rc = f->known.get_by_key(f->known.data, *k, &obj);
    if (rc == KCR_ENOENT) {
      rc = 0; /* gone meanwhile: nothing to sync */
      continue;
    }
    if (rc == 0)
      rc = queue_locked(f, KCR_DELTA_SYNC, KCR_DELTA_SYNC, obj, *k, false, err);
    else
      rc = kcr_error_set(err, rc, "delta fifo: resync %s: %s", *k, kcr_strerror(rc));
    json_decref(obj);
  }
out:
  pthread_mutex_unlock(&f->mu);
  kcr_free(keys);
  return rc;
}

int kcr_delta_fifo_key_of(kcr_delta_fifo_t *f, const kcr_delta *deltas, size_t n, char *buf,
                          size_t size) {
  const kcr_delta *newest;
  assert(f && buf && size);
  buf[0] = '\0';
  if (n == 0)
    return KCR_EINVAL;
  newest = &deltas[n - 1];
  if (newest->tombstone_key) {
    size_t len = strlen(newest->tombstone_key);
    if (len >= size)
      return KCR_ETOOBIG;
    memcpy(buf, newest->tombstone_key, len + 1);
    return 0;
  }
  return f->key_fn(newest->object, buf, size, f->key_data);
}

/* copy_deltas duplicates deltas: new object references, copied tombstone keys. */
static int copy_deltas(const kcr_delta *src, size_t n, kcr_delta **out) {
  kcr_delta *d = kcr__calloc(n ? n : 1, sizeof(*d));
  if (!d)
    return KCR_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    if (src[i].tombstone_key && !(d[i].tombstone_key = kcr__strdup(src[i].tombstone_key))) {
      kcr_deltas_free(d, i);
      return KCR_ENOMEM;
    }
    d[i].type = src[i].type;
    d[i].object = json_incref(src[i].object);
  }
  *out = d;
  return 0;
}

int kcr_delta_fifo_add_if_not_present(kcr_delta_fifo_t *f, const kcr_delta *deltas, size_t n,
                                      kcr_error_t *err) {
  char key[KCR_META_KEY_MAX];
  fitem_t *it = NULL;
  kcr_delta *copy = NULL;
  int rc;
  assert(f);
  if ((rc = kcr_delta_fifo_key_of(f, deltas, n, key, sizeof(key))))
    return kcr_error_set(err, rc, "delta fifo: deltas have no key: %s", kcr_strerror(rc));
  pthread_mutex_lock(&f->mu);
  f->populated = true;
  if (kcr__hmap_find(&f->items, key))
    goto out;
  if (!(it = fitem_new(f, key)) || copy_deltas(deltas, n, &copy) ||
      kcr__hmap_reserve(&f->items, 1) || ring_reserve(f)) {
    fitem_free(it);
    kcr_deltas_free(copy, n);
    rc = kcr_error_set(err, KCR_ENOMEM, "delta fifo: out of memory");
    goto out;
  }
  it->d = copy;
  it->n = it->cap = n;
  kcr__hmap_insert(&f->items, it->key, it);
  ring_push(f, it);
  pthread_cond_broadcast(&f->cond);
out:
  pthread_mutex_unlock(&f->mu);
  return rc;
}

/* --- consuming ----------------------------------------------------------- */

static bool synced_locked(const kcr_delta_fifo_t *f) {
  return f->populated && f->initial == 0;
}

int kcr_delta_fifo_pop(kcr_delta_fifo_t *f, kcr_delta_fifo_process_cb process, void *data) {
  fitem_t *it;
  bool initial, requeue = false;
  int rc;
  assert(f && process);
  pthread_mutex_lock(&f->mu);
  while (f->len == 0) {
    if (f->closed) {
      pthread_mutex_unlock(&f->mu);
      return KCR_ECLOSED;
    }
    pthread_cond_wait(&f->cond, &f->mu);
  }
  initial = !synced_locked(f);
  it = ring_pop(f);
  if (f->initial > 0)
    f->initial--;
  (void)kcr__hmap_del(&f->items, it->key);
  rc = process(it->key, it->d, it->n, initial, &requeue, data);
  if (requeue) {
    /* client-go addIfNotPresent under the same lock: the key cannot have been
     * queued meanwhile, and the room its removal freed takes it back. */
    f->populated = true;
    kcr__hmap_insert(&f->items, it->key, it);
    ring_push(f, it);
    pthread_cond_broadcast(&f->cond);
    it = NULL;
  } else if (f->len == 0 && (f->items.cap > FIFO_KEEP_SLOTS || f->cap > FIFO_KEEP_SLOTS)) {
    /* Drained after a list: the map and the ring it grew are empty, and would
     * stay so, at 24 + 8 bytes a slot, for as long as the informer runs. */
    kcr__hmap_free(&f->items);
    kcr__free(f->ring);
    f->ring = NULL;
    f->head = f->cap = 0;
  }
  pthread_mutex_unlock(&f->mu);
  fitem_free(it);
  return rc;
}

void kcr_delta_fifo_close(kcr_delta_fifo_t *f) {
  assert(f);
  pthread_mutex_lock(&f->mu);
  f->closed = true;
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->mu);
}

bool kcr_delta_fifo_is_closed(kcr_delta_fifo_t *f) {
  bool closed;
  pthread_mutex_lock(&f->mu);
  closed = f->closed;
  pthread_mutex_unlock(&f->mu);
  return closed;
}

bool kcr_delta_fifo_has_synced(kcr_delta_fifo_t *f) {
  bool synced;
  pthread_mutex_lock(&f->mu);
  synced = synced_locked(f);
  pthread_mutex_unlock(&f->mu);
  return synced;
}

size_t kcr_delta_fifo_len(kcr_delta_fifo_t *f) {
  size_t n;
  pthread_mutex_lock(&f->mu);
  n = f->len;
  pthread_mutex_unlock(&f->mu);
  return n;
}

int kcr_delta_fifo_list_keys(kcr_delta_fifo_t *f, char ***out, size_t *n) {
  size_t bytes, i;
  char **v, *p;
  assert(f && out);
  *out = NULL;
  pthread_mutex_lock(&f->mu);
  bytes = (f->len + 1) * sizeof(char *);
  for (i = 0; i < f->len; i++)
    bytes += strlen(ring_at(f, i)->key) + 1;
  if (!(v = kcr__malloc(bytes))) {
    pthread_mutex_unlock(&f->mu);
    return KCR_ENOMEM;
  }
  p = (char *)(v + f->len + 1);
  for (i = 0; i < f->len; i++) {
    size_t len = strlen(ring_at(f, i)->key) + 1;
    memcpy(p, ring_at(f, i)->key, len);
    v[i] = p;
    p += len;
  }
  v[i] = NULL;
  if (n)
    *n = i;
  pthread_mutex_unlock(&f->mu);
  *out = v;
  return 0;
}

int kcr_delta_fifo_list(kcr_delta_fifo_t *f, json_t **out) {
  json_t *arr = json_array();
  int rc = arr ? 0 : KCR_ENOMEM;
  assert(f && out);
  pthread_mutex_lock(&f->mu);
  for (size_t i = 0; i < f->len && rc == 0; i++) {
    fitem_t *it = ring_at(f, i);
    json_t *o = it->d[it->n - 1].object;
    if (o && json_array_append(arr, o))
      rc = KCR_ENOMEM;
  }
  pthread_mutex_unlock(&f->mu);
  if (rc) {
    json_decref(arr);
    arr = NULL;
  }
  *out = arr;
  return rc;
}

int kcr_delta_fifo_get_by_key(kcr_delta_fifo_t *f, const char *key, kcr_delta **out, size_t *n) {
  fitem_t *it;
  int rc = KCR_ENOENT;
  assert(f && key && out && n);
  *out = NULL;
  *n = 0;
  pthread_mutex_lock(&f->mu);
  if ((it = kcr__hmap_get(&f->items, key)) && (rc = copy_deltas(it->d, it->n, out)) == 0)
    *n = it->n;
  pthread_mutex_unlock(&f->mu);
  return rc;
}

int kcr_delta_fifo_get(kcr_delta_fifo_t *f, const json_t *obj, kcr_delta **out, size_t *n) {
  char key[KCR_META_KEY_MAX];
  int rc;
  assert(f && out && n);
  *out = NULL;
  *n = 0;
  if ((rc = f->key_fn(obj, key, sizeof(key), f->key_data)))
    return rc;
  return kcr_delta_fifo_get_by_key(f, key, out, n);
}
