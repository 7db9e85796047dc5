/* SPDX-License-Identifier: MIT */
/*
 * strset.h: an intrusive hash set of items keyed by a NUL-terminated string that
 * each item carries at a fixed offset (usually a flexible `char key[]` at its
 * end). The set stores pointers and cached hashes, never copies, and never owns
 * the items. Not thread-safe: its owner's lock protects it.
 *
 * Written for the workqueue and the per-item rate limiters; nothing in it is
 * specific to them, so it can move to util/ when another layer needs one.
 */
#ifndef KCR_WORKQUEUE_STRSET_H
#define KCR_WORKQUEUE_STRSET_H

#include <stddef.h>
#include <stdint.h>

/* kcr__strset_slot: one bucket; item NULL means empty. */
typedef struct kcr__strset_slot {
  uint64_t hash;
  void *item;
} kcr__strset_slot;

/*
 * kcr__strset: open addressing with linear probing, a power-of-two capacity, a
 * maximum load of 3/4, and backward-shift deletion (no tombstones, so probe
 * lengths do not decay under churn). The hash is seeded per set.
 */
typedef struct kcr__strset {
  kcr__strset_slot *slots; /* cap slots, or NULL while cap is 0 */
  size_t cap;
  size_t len;
  size_t key_offset; /* where an item's key starts, in bytes */
  uint64_t seed;
} kcr__strset;

/* kcr__strset_init prepares an empty set (no allocation). */
void kcr__strset_init(kcr__strset *s, size_t key_offset, uint64_t seed);

/* kcr__strset_fini releases the slot array; the items are the caller's. */
void kcr__strset_fini(kcr__strset *s);

/*
 * kcr__strset_hash hashes key with the set's seed and stores strlen(key) in
 * *len_out (may be NULL). Callers compute it once and pass it to the calls below.
 */
uint64_t kcr__strset_hash(const kcr__strset *s, const char *key, size_t *len_out);

/* kcr__strset_find returns the item whose key equals key, or NULL. */
void *kcr__strset_find(const kcr__strset *s, const char *key, uint64_t hash);

/*
 * kcr__strset_reserve makes room for one more item, so that a following
 * kcr__strset_insert cannot fail. Returns 0 or KCR_ENOMEM (the set is unchanged).
 */
int kcr__strset_reserve(kcr__strset *s);

/*
 * kcr__strset_insert adds item (whose key is not in the set yet) under hash.
 * kcr__strset_reserve must have succeeded since the last insert.
 */
void kcr__strset_insert(kcr__strset *s, void *item, uint64_t hash);

/*
 * kcr__strset_remove takes item (which must be in the set under hash) out. A set
 * that falls below 1/8 full gives memory back when it can (failure to shrink is
 * silent: the set keeps its larger array).
 */
void kcr__strset_remove(kcr__strset *s, const void *item, uint64_t hash);

/*
 * kcr__strset_next iterates: start with *pos = 0; returns the next item or NULL
 * at the end. The set must not change during an iteration.
 */
void *kcr__strset_next(const kcr__strset *s, size_t *pos);

#endif /* KCR_WORKQUEUE_STRSET_H */
