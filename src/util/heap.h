/* SPDX-License-Identifier: MIT */
/*
 * heap.h: the one internal binary min-heap of libkcr, intrusive and indexed.
 * The workqueue's delaying queue (keys waiting for their ready time) and the
 * event sender's two heaps (entries due now, and series waiting for their patch
 * interval) use it.
 *
 * An element embeds a kcr__heap_node_t and the heap's array holds pointers to
 * those nodes, so filing an element allocates nothing beyond the array, and the
 * owner finds its element again with KCR__CONTAINER_OF. The order is by (key,
 * tie), both stored in the node, so comparing calls no function and touches no
 * memory outside the node. Each node keeps its index in the array, so an element
 * can be taken out, or its key changed, from anywhere in O(log n). Growth is the
 * only allocation and kcr__heap_reserve does it up front, so pushing never
 * fails. Not locked: the owner serialises access.
 */
#ifndef KCR_UTIL_HEAP_H
#define KCR_UTIL_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/container.h"

/* KCR__HEAP_NONE: the index of a node in no heap. */
#define KCR__HEAP_NONE SIZE_MAX

/* KCR__HEAP_MAX: the most nodes one heap holds; reserving more is KCR_ENOMEM. */
#define KCR__HEAP_MAX ((size_t)1 << 30)

/* kcr__heap_node_t: embedded in an element; the heap orders by (key, tie). */
typedef struct kcr__heap_node {
  int64_t key;
  uint64_t tie; /* breaks equal keys, smaller first (an arrival number) */
  size_t idx;   /* the slot in the heap's array, KCR__HEAP_NONE when not filed */
} kcr__heap_node_t;

/* kcr__heap_t: the heap; zero-initialised is empty and valid. */
typedef struct kcr__heap {
  kcr__heap_node_t **v;
  size_t len;
  size_t cap;
} kcr__heap_t;

/* kcr__heap_node_init marks n as filed in no heap. */
static inline void kcr__heap_node_init(kcr__heap_node_t *n) {
  n->idx = KCR__HEAP_NONE;
}

/* kcr__heap_node_filed tells whether n is in a heap (since node_init). */
static inline bool kcr__heap_node_filed(const kcr__heap_node_t *n) {
  return n->idx != KCR__HEAP_NONE;
}

/*
 * kcr__heap_reserve makes room for n nodes in all, so that pushes up to that
 * many cannot fail. Returns 0 or KCR_ENOMEM (n above KCR__HEAP_MAX, or out of
 * memory; the heap is unchanged then).
 */
int kcr__heap_reserve(kcr__heap_t *h, size_t n);

/* kcr__heap_push files n (not filed anywhere) with key and tie. Room must be
 * reserved (asserted). */
void kcr__heap_push(kcr__heap_t *h, kcr__heap_node_t *n, int64_t key, uint64_t tie);

/* kcr__heap_remove takes n, which must be filed in h, out of h. */
void kcr__heap_remove(kcr__heap_t *h, kcr__heap_node_t *n);

/* kcr__heap_rekey gives n, which must be filed in h, a new key and tie. */
void kcr__heap_rekey(kcr__heap_t *h, kcr__heap_node_t *n, int64_t key, uint64_t tie);

/* kcr__heap_top returns the least node, NULL when h is empty. */
static inline kcr__heap_node_t *kcr__heap_top(const kcr__heap_t *h) {
  return h->len ? h->v[0] : NULL;
}

/* kcr__heap_pop takes the least node out of h and returns it, NULL when empty. */
kcr__heap_node_t *kcr__heap_pop(kcr__heap_t *h);

/* kcr__heap_clear empties h; its nodes are filed nowhere afterwards. The array
 * and its reservation stay. */
void kcr__heap_clear(kcr__heap_t *h);

/* kcr__heap_free releases the array and leaves the nodes untouched (they may be
 * gone already); h is empty again. */
void kcr__heap_free(kcr__heap_t *h);

#endif /* KCR_UTIL_HEAP_H */
