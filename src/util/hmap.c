/* SPDX-License-Identifier: MIT */
/*
 * hmap.c: the internal hash map (util/hmap.h).
 *
 * DESIGN. Linear probing over a power-of-two table kept at most 3/4 full, with
 * always one empty slot so a probe ends. A slot is {hash, key, value}: a lookup
 * compares the cached 64-bit hash first and touches the key only on a hash
 * match, and growth re-places entries without hashing again. Deletion shifts
 * the following run back instead of leaving tombstones, so lookups never slow
 * down with churn (an informer's store and a workqueue see deletes as often as
 * adds). The table starts at two slots because most maps in a store index (the
 * key set of one indexed value) hold one or two keys; shrinking is the owner's
 * call, because the store reserves room before a sequence of deletes and
 * inserts and a shrink in between would undo that reservation.
 *
 * The hash is a multiply-xorshift mix over 8-byte words, seeded per map. It is
 * fast and spreads names that differ only in a suffix ("pod-1", "pod-2"); it is
 * not a keyed PRF, so flooding a map is a matter of guessing its seed, which is
 * why maps keyed by names a client chooses take a random one.
 *
 * Tables of HMAP_MAP_BYTES and more are mapped from the kernel, not malloc'd.
 * A map that grows to N entries frees tables of about N slots in all on its
 * way, and glibc's mmap threshold rises to the size of every mapped block it
 * frees, so those tables ended up in the heap, where the freed ones stayed
 * resident: at 50k cached objects, 3.9 MB of free heap in the store's thread
 * alone (malloc_info). Mapped, a freed table goes back to the kernel at once.
 */
#include "util/hmap.h"

#include <assert.h>
#include <string.h>
#include <sys/mman.h>

#include "kcr/error.h"
#include "util/alloc.h"

void kcr__hmap_init(kcr__hmap_t *m, uint64_t seed) {
  m->slots = NULL;
  m->cap = 0;
  m->len = 0;
  m->seed = seed;
}

static uint64_t mix(uint64_t h) {
  h ^= h >> 30;
  h *= UINT64_C(0xbf58476d1ce4e5b9);
  h ^= h >> 27;
  h *= UINT64_C(0x94d049bb133111eb);
  h ^= h >> 31;
  return h;
}

uint64_t kcr__hmap_hash(const kcr__hmap_t *m, const char *key, size_t *len_out) {
  size_t n = strlen(key);
  const unsigned char *p = (const unsigned char *)key;
  uint64_t h = m->seed ^ ((uint64_t)n * UINT64_C(0x9e3779b97f4a7c15));
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

/* HMAP_MAP_BYTES: the size from which a table is mapped (see the top). */
#define HMAP_MAP_BYTES ((size_t)256 * 1024)

/* table_alloc returns a zeroed table of cap slots, NULL when out of memory. */
static kcr__hmap_slot_t *table_alloc(size_t cap) {
  size_t bytes = cap * sizeof(kcr__hmap_slot_t);
  void *p;
  if (bytes < HMAP_MAP_BYTES)
    return kcr__calloc(cap, sizeof(kcr__hmap_slot_t));
  p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* table_free releases what table_alloc(cap) returned (NULL is a no-op). */
static void table_free(kcr__hmap_slot_t *slots, size_t cap) {
  if (!slots)
    return;
  if (cap * sizeof(kcr__hmap_slot_t) < HMAP_MAP_BYTES)
    kcr__free(slots);
  else
    (void)munmap(slots, cap * sizeof(kcr__hmap_slot_t));
}

void kcr__hmap_free(kcr__hmap_t *m) {
  table_free(m->slots, m->cap);
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

/* resize moves every entry into a new table of cap slots. */
static int resize(kcr__hmap_t *m, size_t cap) {
  kcr__hmap_slot_t *slots = table_alloc(cap);
  if (!slots)
    return KCR_ENOMEM;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key)
      place(slots, cap, m->slots[i]);
  table_free(m->slots, m->cap);
  m->slots = slots;
  m->cap = cap;
  return 0;
}

/* fits tells whether n entries may live in a table of cap slots. */
static int fits(size_t n, size_t cap) {
  return n <= cap - cap / 4 && n < cap;
}

int kcr__hmap_reserve(kcr__hmap_t *m, size_t n) {
  size_t need = m->len + n, cap = m->cap ? m->cap : 2;
  if (need < m->len)
    return KCR_ENOMEM;
  while (!fits(need, cap)) {
    if (cap > SIZE_MAX / 2 / sizeof(kcr__hmap_slot_t))
      return KCR_ENOMEM;
    cap *= 2;
  }
  return cap == m->cap ? 0 : resize(m, cap);
}

kcr__hmap_slot_t *kcr__hmap_find_hashed(const kcr__hmap_t *m, const char *key, uint64_t hash) {
  size_t mask, i;
  if (m->len == 0)
    return NULL;
  mask = m->cap - 1;
  for (i = (size_t)hash & mask; m->slots[i].key; i = (i + 1) & mask)
    if (m->slots[i].hash == hash && strcmp(m->slots[i].key, key) == 0)
      return &m->slots[i];
  return NULL;
}

kcr__hmap_slot_t *kcr__hmap_find(const kcr__hmap_t *m, const char *key) {
  return m->len ? kcr__hmap_find_hashed(m, key, kcr__hmap_hash(m, key, NULL)) : NULL;
}

void *kcr__hmap_get(const kcr__hmap_t *m, const char *key) {
  kcr__hmap_slot_t *s = kcr__hmap_find(m, key);
  return s ? s->val : NULL;
}

void *kcr__hmap_get_hashed(const kcr__hmap_t *m, const char *key, uint64_t hash) {
  kcr__hmap_slot_t *s = kcr__hmap_find_hashed(m, key, hash);
  return s ? s->val : NULL;
}

void kcr__hmap_insert_hashed(kcr__hmap_t *m, const char *key, uint64_t hash, void *val) {
  kcr__hmap_slot_t e = {hash, key, val};
  assert(key && m->cap && fits(m->len + 1, m->cap));
  assert(!kcr__hmap_find_hashed(m, key, hash));
  place(m->slots, m->cap, e);
  m->len++;
}

void kcr__hmap_insert(kcr__hmap_t *m, const char *key, void *val) {
  kcr__hmap_insert_hashed(m, key, kcr__hmap_hash(m, key, NULL), val);
}

int kcr__hmap_put(kcr__hmap_t *m, const char *key, void *val) {
  if (kcr__hmap_reserve(m, 1))
    return KCR_ENOMEM;
  kcr__hmap_insert(m, key, val);
  return 0;
}

void *kcr__hmap_del_hashed(kcr__hmap_t *m, const char *key, uint64_t hash) {
  kcr__hmap_slot_t *s = kcr__hmap_find_hashed(m, key, hash);
  size_t mask, i, j;
  void *val;
  if (!s)
    return NULL;
  val = s->val;
  mask = m->cap - 1;
  i = (size_t)(s - m->slots);
  for (j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
    size_t home = (size_t)m->slots[j].hash & mask;
    /* Move j back into the hole at i unless its home lies cyclically in (i, j]:
     * then every entry left stays reachable from its home slot. */
    int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (!stays) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].hash = 0;
  m->slots[i].key = NULL;
  m->slots[i].val = NULL;
  m->len--;
  return val;
}

void *kcr__hmap_del(kcr__hmap_t *m, const char *key) {
  return m->len ? kcr__hmap_del_hashed(m, key, kcr__hmap_hash(m, key, NULL)) : NULL;
}

void kcr__hmap_shrink(kcr__hmap_t *m) {
  /* Below 1/8 full: half the table is still at most 1/4 full, so a map that
   * hovers at the boundary does not resize on every add and remove. */
  if (m->cap > KCR__HMAP_SHRINK_MIN && m->len * 8 < m->cap)
    (void)resize(m, m->cap / 2); /* on failure keep the larger table */
}
