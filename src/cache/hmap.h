/* SPDX-License-Identifier: MIT */
/*
 * hmap.h: an internal string-keyed hash map (open addressing, linear probing,
 * backward-shift deletion, so no tombstones). The map never owns its keys: each
 * key points into memory its value owns (the store's item, an index's value
 * set), which saves an allocation and a copy per entry. Growth is the only
 * allocation, and kcr__hmap_reserve does it up front so that a sequence of
 * changes can be made all-or-nothing. Not locked: the owner serialises access.
 */
#ifndef KCR_CACHE_HMAP_H
#define KCR_CACHE_HMAP_H

#include <stddef.h>
#include <stdint.h>

/* kcr__hmap_slot: an entry; key NULL means empty. */
typedef struct kcr__hmap_slot {
  uint64_t hash;
  const char *key;
  void *val;
} kcr__hmap_slot_t;

/* kcr__hmap_t: the map; zero-initialised is empty and valid. */
typedef struct kcr__hmap {
  kcr__hmap_slot_t *slots;
  size_t cap; /* 0 or a power of two */
  size_t len;
} kcr__hmap_t;

/* kcr__hmap_hash hashes a NUL-terminated key (FNV-1a, 64 bits). */
uint64_t kcr__hmap_hash(const char *key);

/* kcr__hmap_free releases the slot array (not keys or values); the map is empty again. */
void kcr__hmap_free(kcr__hmap_t *m);

/*
 * kcr__hmap_reserve makes room for n more entries so that the next n inserts
 * cannot fail. Returns 0 or KCR_ENOMEM (the map is unchanged then).
 */
int kcr__hmap_reserve(kcr__hmap_t *m, size_t n);

/* kcr__hmap_find returns the slot holding key, NULL if absent. */
kcr__hmap_slot_t *kcr__hmap_find(const kcr__hmap_t *m, const char *key);

/* kcr__hmap_get returns the value under key, NULL if absent. */
void *kcr__hmap_get(const kcr__hmap_t *m, const char *key);

/*
 * kcr__hmap_insert adds key (borrowed: it must stay valid while in the map) with
 * val. key must be absent and room reserved (asserted).
 */
void kcr__hmap_insert(kcr__hmap_t *m, const char *key, void *val);

/* kcr__hmap_put is reserve(1) + insert for an absent key. Returns 0 or KCR_ENOMEM. */
int kcr__hmap_put(kcr__hmap_t *m, const char *key, void *val);

/* kcr__hmap_del removes key and returns its value, NULL if absent. Never allocates. */
void *kcr__hmap_del(kcr__hmap_t *m, const char *key);

/* KCR__HMAP_FOREACH iterates over the occupied slots of m (no changes meanwhile). */
#define KCR__HMAP_FOREACH(m, s)                                                                    \
  for (kcr__hmap_slot_t *s = (m)->slots; s && s < (m)->slots + (m)->cap; s++)                      \
    if (s->key)

#endif /* KCR_CACHE_HMAP_H */
