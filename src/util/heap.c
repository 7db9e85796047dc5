/* SPDX-License-Identifier: MIT */
/*
 * heap.c: the internal binary min-heap (util/heap.h).
 *
 * DESIGN. An implicit binary tree in an array of node pointers: the children of
 * slot i are 2i+1 and 2i+2. Sifting moves the displaced node into a hole instead
 * of swapping pairs, so each level costs one store and one index update. A node
 * taken out from the middle is replaced by the last one, which then sifts down
 * or up, whichever its key asks. The array starts at 16 slots and doubles;
 * reserving is separate from pushing so that an owner can make room before it
 * changes anything else (the workqueue reserves before it makes an entry, the
 * event recorder reserves a slot per entry when the entry is made) and never
 * has to undo a half-made change. The array never shrinks: its owners' heaps
 * stay near their peak, and a slot costs a pointer.
 */
#include "util/heap.h"

#include <assert.h>

#include "kcr/error.h"
#include "util/alloc.h"

int kcr__heap_reserve(kcr__heap_t *h, size_t n) {
  kcr__heap_node_t **v;
  size_t cap;
  if (n <= h->cap)
    return 0;
  if (n > KCR__HEAP_MAX)
    return KCR_ENOMEM;
  cap = h->cap ? h->cap : 16;
  while (cap < n)
    cap *= 2;
  v = kcr__realloc(h->v, cap * sizeof(kcr__heap_node_t *));
  if (!v)
    return KCR_ENOMEM;
  h->v = v;
  h->cap = cap;
  return 0;
}

static bool less(const kcr__heap_node_t *a, const kcr__heap_node_t *b) {
  return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

static void place(kcr__heap_t *h, size_t i, kcr__heap_node_t *n) {
  h->v[i] = n;
  n->idx = i;
}

static void sift_up(kcr__heap_t *h, size_t i) {
  kcr__heap_node_t *n = h->v[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!less(n, h->v[parent]))
      break;
    place(h, i, h->v[parent]);
    i = parent;
  }
  place(h, i, n);
}

static void sift_down(kcr__heap_t *h, size_t i) {
  kcr__heap_node_t *n = h->v[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->len)
      break;
    if (c + 1 < h->len && less(h->v[c + 1], h->v[c]))
      c++;
    if (!less(h->v[c], n))
      break;
    place(h, i, h->v[c]);
    i = c;
  }
  place(h, i, n);
}

void kcr__heap_push(kcr__heap_t *h, kcr__heap_node_t *n, int64_t key, uint64_t tie) {
  assert(h->len < h->cap && !kcr__heap_node_filed(n));
  n->key = key;
  n->tie = tie;
  place(h, h->len++, n);
  sift_up(h, h->len - 1);
}

void kcr__heap_remove(kcr__heap_t *h, kcr__heap_node_t *n) {
  size_t i = n->idx;
  kcr__heap_node_t *moved;
  assert(i < h->len && h->v[i] == n);
  n->idx = KCR__HEAP_NONE;
  if (i == --h->len)
    return;
  moved = h->v[h->len];
  place(h, i, moved);
  sift_down(h, i);
  sift_up(h, moved->idx); /* a no-op when it went down */
}

void kcr__heap_rekey(kcr__heap_t *h, kcr__heap_node_t *n, int64_t key, uint64_t tie) {
  size_t i = n->idx;
  assert(i < h->len && h->v[i] == n);
  n->key = key;
  n->tie = tie;
  sift_down(h, i);
  sift_up(h, n->idx);
}

kcr__heap_node_t *kcr__heap_pop(kcr__heap_t *h) {
  kcr__heap_node_t *top = kcr__heap_top(h);
  if (top)
    kcr__heap_remove(h, top);
  return top;
}

void kcr__heap_clear(kcr__heap_t *h) {
  for (size_t i = 0; i < h->len; i++)
    h->v[i]->idx = KCR__HEAP_NONE;
  h->len = 0;
}

void kcr__heap_free(kcr__heap_t *h) {
  kcr__free(h->v);
  h->v = NULL;
  h->len = 0;
  h->cap = 0;
}
