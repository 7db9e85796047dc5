/* SPDX-License-Identifier: MIT */
/*
 * strset.c: the open-addressing string hash set behind the workqueue's
 * dirty/processing/waiting index and the per-item rate limiters.
 *
 * DESIGN: a slot is {hash, item}; the key lives in the item, at key_offset, so a
 * lookup compares the cached 64-bit hash first and touches the key only on a hash
 * match. Linear probing keeps a probe sequence in one or two cache lines; deletion
 * shifts the following run back instead of leaving tombstones, so a queue that
 * sees millions of distinct keys over its life keeps short probes. The capacity
 * doubles at 3/4 load and halves below 1/8 (the gap keeps a set that hovers at a
 * boundary from resizing on every add/remove). Keys are object names an API user
 * chooses, so the hash is seeded per set from the kernel's generator; it is a fast
 * multiply-xorshift mix over 8-byte words, not a keyed PRF, which makes collision
 * flooding a matter of guessing the seed rather than a property of the names.
 */
#include "workqueue/strset.h"

#include <assert.h>
#include <string.h>

#include "kcr/error.h"
#include "util/alloc.h"

#define MIN_CAP 16

void kcr__strset_init(kcr__strset *s, size_t key_offset, uint64_t seed) {
  s->slots = NULL;
  s->cap = 0;
  s->len = 0;
  s->key_offset = key_offset;
  s->seed = seed;
}

void kcr__strset_fini(kcr__strset *s) {
  kcr__free(s->slots);
  s->slots = NULL;
  s->cap = 0;
  s->len = 0;
}

static uint64_t mix(uint64_t h) {
  h ^= h >> 30;
  h *= UINT64_C(0xbf58476d1ce4e5b9);
  h ^= h >> 27;
  h *= UINT64_C(0x94d049bb133111eb);
  h ^= h >> 31;
  return h;
}

uint64_t kcr__strset_hash(const kcr__strset *s, const char *key, size_t *len_out) {
  size_t n = strlen(key);
  const unsigned char *p = (const unsigned char *)key;
  uint64_t h = s->seed ^ ((uint64_t)n * UINT64_C(0x9e3779b97f4a7c15));
  uint64_t v;

  if (len_out)
    *len_out = n;
  while (n >= 8) {
    memcpy(&v, p, 8);
    h = (h ^ v) * UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 32;
    p += 8;
    n -= 8;
  }
  v = 0;
  memcpy(&v, p, n); /* n < 8: the tail, zero-padded */
  h = (h ^ v) * UINT64_C(0xc4ceb9fe1a85ec53);
  return mix(h);
}

static const char *key_of(const kcr__strset *s, const void *item) {
  return (const char *)item + s->key_offset;
}

void *kcr__strset_find(const kcr__strset *s, const char *key, uint64_t hash) {
  size_t mask, i;
  if (!s->len)
    return NULL;
  mask = s->cap - 1;
  for (i = (size_t)hash & mask;; i = (i + 1) & mask) {
    const kcr__strset_slot *slot = &s->slots[i];
    if (!slot->item)
      return NULL;
    if (slot->hash == hash && strcmp(key_of(s, slot->item), key) == 0)
      return slot->item;
  }
}

/* place puts an item into a table known to have room and not to hold it. */
static void place(kcr__strset_slot *slots, size_t cap, void *item, uint64_t hash) {
  size_t mask = cap - 1, i = (size_t)hash & mask;
  while (slots[i].item)
    i = (i + 1) & mask;
  slots[i].hash = hash;
  slots[i].item = item;
}

static int resize(kcr__strset *s, size_t cap) {
  kcr__strset_slot *slots = kcr__calloc(cap, sizeof(*slots));
  size_t i;
  if (!slots)
    return KCR_ENOMEM;
  for (i = 0; i < s->cap; i++)
    if (s->slots[i].item)
      place(slots, cap, s->slots[i].item, s->slots[i].hash);
  kcr__free(s->slots);
  s->slots = slots;
  s->cap = cap;
  return 0;
}

int kcr__strset_reserve(kcr__strset *s) {
  size_t cap;
  if ((s->len + 1) * 4 <= s->cap * 3)
    return 0;
  cap = s->cap ? s->cap * 2 : MIN_CAP;
  if (cap > SIZE_MAX / sizeof(kcr__strset_slot))
    return KCR_ENOMEM;
  return resize(s, cap);
}

void kcr__strset_insert(kcr__strset *s, void *item, uint64_t hash) {
  assert(item && (s->len + 1) * 4 <= s->cap * 3);
  place(s->slots, s->cap, item, hash);
  s->len++;
}

void kcr__strset_remove(kcr__strset *s, const void *item, uint64_t hash) {
  size_t mask = s->cap - 1, i, j;

  assert(s->len > 0);
  for (i = (size_t)hash & mask; s->slots[i].item != item; i = (i + 1) & mask)
    assert(s->slots[i].item);
  /* Backward shift: move each later member of the run whose home slot is not in
   * (i, j] into the hole, so every remaining item stays reachable from its home. */
  for (j = (i + 1) & mask; s->slots[j].item; j = (j + 1) & mask) {
    size_t home = (size_t)s->slots[j].hash & mask;
    int stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
    if (!stays) {
      s->slots[i] = s->slots[j];
      i = j;
    }
  }
  s->slots[i].item = NULL;
  s->slots[i].hash = 0;
  s->len--;
  if (s->cap > MIN_CAP && s->len * 8 < s->cap)
    (void)resize(s, s->cap / 2); /* on failure keep the larger table */
}

void *kcr__strset_next(const kcr__strset *s, size_t *pos) {
  while (*pos < s->cap) {
    void *item = s->slots[(*pos)++].item;
    if (item)
      return item;
  }
  return NULL;
}
