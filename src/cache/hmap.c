/* SPDX-License-Identifier: MIT */
/*
 * hmap.c: the internal hash map of the cache layer (see hmap.h). Linear probing
 * over a power-of-two table kept at most 3/4 full; deletion shifts the following
 * run back instead of leaving tombstones, so lookups never slow down with churn
 * (an informer's store sees deletes as often as adds). The table starts at two
 * slots because most maps in an index (the key set of one indexed value) hold one
 * or two keys. FNV-1a is not flood-resistant; keys come from the API server, a
 * trusted peer, and one hash keeps the code small.
 */
#include <assert.h>
#include <string.h>

#include "cache/hmap.h"
#include "kcr/error.h"
#include "util/alloc.h"

uint64_t kcr__hmap_hash(const char *key) {
  uint64_t h = 1469598103934665603ULL;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
    h ^= *p;
    h *= 1099511628211ULL;
  }
  return h;
}

void kcr__hmap_free(kcr__hmap_t *m) {
  kcr__free(m->slots);
  m->slots = NULL;
  m->cap = 0;
  m->len = 0;
}

/* place puts an entry into a table known to have room and not to hold key. */
static void place(kcr__hmap_slot_t *slots, size_t cap, kcr__hmap_slot_t e) {
  size_t i = (size_t)e.hash & (cap - 1);
  while (slots[i].key)
    i = (i + 1) & (cap - 1);
  slots[i] = e;
}

int kcr__hmap_reserve(kcr__hmap_t *m, size_t n) {
  size_t need = m->len + n, cap = m->cap ? m->cap : 2;
  kcr__hmap_slot_t *slots;
  if (need < m->len)
    return KCR_ENOMEM;
  while (need > cap - cap / 4 || need >= cap) { /* always one empty slot */
    if (cap > SIZE_MAX / 2 / sizeof(*slots))
      return KCR_ENOMEM;
    cap *= 2;
  }
  if (cap == m->cap)
    return 0;
  slots = kcr__calloc(cap, sizeof(*slots));
  if (!slots)
    return KCR_ENOMEM;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key)
      place(slots, cap, m->slots[i]);
  kcr__free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return 0;
}

kcr__hmap_slot_t *kcr__hmap_find(const kcr__hmap_t *m, const char *key) {
  uint64_t h;
  size_t i;
  if (m->len == 0)
    return NULL;
  h = kcr__hmap_hash(key);
  i = (size_t)h & (m->cap - 1);
  while (m->slots[i].key) {
    if (m->slots[i].hash == h && strcmp(m->slots[i].key, key) == 0)
      return &m->slots[i];
    i = (i + 1) & (m->cap - 1);
  }
  return NULL;
}

void *kcr__hmap_get(const kcr__hmap_t *m, const char *key) {
  kcr__hmap_slot_t *s = kcr__hmap_find(m, key);
  return s ? s->val : NULL;
}

void kcr__hmap_insert(kcr__hmap_t *m, const char *key, void *val) {
  kcr__hmap_slot_t e = {kcr__hmap_hash(key), key, val};
  assert(m->cap && m->len + 1 <= m->cap - m->cap / 4 && m->len + 1 < m->cap);
  assert(!kcr__hmap_find(m, key));
  place(m->slots, m->cap, e);
  m->len++;
}

int kcr__hmap_put(kcr__hmap_t *m, const char *key, void *val) {
  if (kcr__hmap_reserve(m, 1))
    return KCR_ENOMEM;
  kcr__hmap_insert(m, key, val);
  return 0;
}

void *kcr__hmap_del(kcr__hmap_t *m, const char *key) {
  kcr__hmap_slot_t *s = kcr__hmap_find(m, key);
  size_t mask, i, j;
  void *val;
  if (!s)
    return NULL;
  val = s->val;
  mask = m->cap - 1;
  i = (size_t)(s - m->slots);
  j = i;
  for (;;) {
    size_t home;
    j = (j + 1) & mask;
    if (!m->slots[j].key)
      break;
    home = (size_t)m->slots[j].hash & mask;
    /* Move j back into the hole at i unless its home lies cyclically in (i, j]. */
    if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].key = NULL;
  m->slots[i].val = NULL;
  m->len--;
  return val;
}
