/* SPDX-License-Identifier: MIT */
/*
 * hmap.h: the one internal string-keyed hash map of libkcr (open addressing,
 * linear probing, backward-shift deletion, so no tombstones). The cache's store,
 * DeltaFIFO and read-your-writes table, the workqueue and its rate limiters,
 * the metrics families and the event recorder all use it.
 *
 * The map never owns its keys or values: each key points into memory its value
 * owns (the store's item, a queue entry's inline key), which saves an
 * allocation and a copy per entry. Growth is the only allocation on insert, and
 * kcr__hmap_reserve does it up front so that a sequence of changes can be made
 * all-or-nothing; deletion never allocates. Memory goes back only when the owner
 * asks (kcr__hmap_shrink). Not locked: the owner serialises access.
 *
 * The hash is seeded per map. A zero-initialised map has seed 0 (fine for keys
 * from the API server); a map keyed by names a user or client can choose in
 * bulk takes a random seed with kcr__hmap_init, so flooding one probe run means
 * guessing the seed.
 */
#ifndef KCR_UTIL_HMAP_H
#define KCR_UTIL_HMAP_H

#include <stddef.h>
#include <stdint.h>

/* kcr__hmap_slot: an entry; key NULL means empty. */
typedef struct kcr__hmap_slot {
  uint64_t hash;
  const char *key;
  void *val;
} kcr__hmap_slot_t;

/* kcr__hmap_t: the map; zero-initialised is empty and valid (seed 0). */
typedef struct kcr__hmap {
  kcr__hmap_slot_t *slots;
  size_t cap; /* 0 or a power of two */
  size_t len;
  uint64_t seed; /* fixed while the map holds entries */
} kcr__hmap_t;

/* kcr__hmap_init makes m an empty map with the given hash seed (no allocation). */
void kcr__hmap_init(kcr__hmap_t *m, uint64_t seed);

/*
 * kcr__hmap_hash hashes a NUL-terminated key with m's seed and stores strlen(key)
 * in *len_out (may be NULL). It reads only the seed, so a caller may compute it
 * before taking the lock that guards m, and pass it to the _hashed calls.
 */
uint64_t kcr__hmap_hash(const kcr__hmap_t *m, const char *key, size_t *len_out);

/* kcr__hmap_free releases the slot array (not keys or values); the map is empty
 * again and keeps its seed. */
void kcr__hmap_free(kcr__hmap_t *m);

/*
 * kcr__hmap_reserve makes room for n more entries so that the next n inserts
 * cannot fail. Returns 0 or KCR_ENOMEM (the map is unchanged then).
 */
int kcr__hmap_reserve(kcr__hmap_t *m, size_t n);

/* kcr__hmap_find returns the slot holding key, NULL if absent. The slot is valid
 * until the next insert, delete or shrink. */
kcr__hmap_slot_t *kcr__hmap_find(const kcr__hmap_t *m, const char *key);

/* kcr__hmap_find_hashed is kcr__hmap_find with hash = kcr__hmap_hash(m, key). */
kcr__hmap_slot_t *kcr__hmap_find_hashed(const kcr__hmap_t *m, const char *key, uint64_t hash);

/* kcr__hmap_get returns the value under key, NULL if absent. */
void *kcr__hmap_get(const kcr__hmap_t *m, const char *key);

/* kcr__hmap_get_hashed is kcr__hmap_get with hash = kcr__hmap_hash(m, key). */
void *kcr__hmap_get_hashed(const kcr__hmap_t *m, const char *key, uint64_t hash);

/*
 * kcr__hmap_insert adds key (borrowed: it must stay valid and unchanged while in
 * the map) with val. key must be absent and room reserved (asserted).
 */
void kcr__hmap_insert(kcr__hmap_t *m, const char *key, void *val);

/* kcr__hmap_insert_hashed is kcr__hmap_insert with hash = kcr__hmap_hash(m, key). */
void kcr__hmap_insert_hashed(kcr__hmap_t *m, const char *key, uint64_t hash, void *val);

/* kcr__hmap_put is reserve(1) + insert for an absent key. Returns 0 or KCR_ENOMEM. */
int kcr__hmap_put(kcr__hmap_t *m, const char *key, void *val);

/* kcr__hmap_del removes key and returns its value, NULL if absent. Never
 * allocates, so a reservation made before it still holds. */
void *kcr__hmap_del(kcr__hmap_t *m, const char *key);

/* kcr__hmap_del_hashed is kcr__hmap_del with hash = kcr__hmap_hash(m, key). */
void *kcr__hmap_del_hashed(kcr__hmap_t *m, const char *key, uint64_t hash);

/*
 * kcr__hmap_shrink halves the table when it is below 1/8 full and larger than
 * KCR__HMAP_SHRINK_MIN slots, for maps that see many distinct keys over their
 * life (a workqueue). A failed allocation is silent: the map keeps its larger
 * table. It may cancel an earlier reservation.
 */
void kcr__hmap_shrink(kcr__hmap_t *m);

#define KCR__HMAP_SHRINK_MIN 16

/* KCR__HMAP_FOREACH iterates over the occupied slots of m (no changes meanwhile). */
#define KCR__HMAP_FOREACH(m, s)                                                                    \
  for (kcr__hmap_slot_t *s = (m)->slots; s && s < (m)->slots + (m)->cap; s++)                      \
    if (s->key)

#endif /* KCR_UTIL_HMAP_H */
