/* SPDX-License-Identifier: MIT */
/*
 * list.h: the one internal intrusive list of libkcr, doubly linked and
 * NULL-terminated, used as a FIFO (push at the back, pop at the front) and as a
 * set that a member leaves from anywhere in O(1). The workqueue's queue and
 * processing list, the event recorder's pending FIFO, the loop's posted calls
 * and active transfers, a watch's inbox of chunks, the metrics registry's
 * families, collectors and series, the cache's entries, a controller's watches
 * and a cancel token's waiters use it.
 *
 * An element embeds a kcr__list_node_t and finds itself again from the node
 * with KCR__CONTAINER_OF, so linking allocates nothing and costs no
 * indirection: the node is in the element, as the hand-built next/prev pointers
 * were. The list keeps its first and last node, so a zero-initialised list is
 * empty and valid (no self-pointing head to set up, and a list may be moved by
 * copying it, unlike a circular one). The calls are inline: the queues on hot
 * paths pay what their hand-built links cost. Not locked: the owner serialises
 * access. A node is in at most one list at a time; which one is the owner's to
 * know.
 */
#ifndef KCR_UTIL_LIST_H
#define KCR_UTIL_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "util/container.h"

/* kcr__list_node_t: embedded in an element; both NULL when unlinked. */
typedef struct kcr__list_node {
  struct kcr__list_node *prev;
  struct kcr__list_node *next;
} kcr__list_node_t;

/* kcr__list_t: the list; zero-initialised is empty and valid. */
typedef struct kcr__list {
  kcr__list_node_t *first;
  kcr__list_node_t *last;
} kcr__list_t;

/* kcr__list_empty tells whether l has no node. */
static inline bool kcr__list_empty(const kcr__list_t *l) {
  return l->first == NULL;
}

/* kcr__list_push_back links n (not in any list) at the end of l. */
static inline void kcr__list_push_back(kcr__list_t *l, kcr__list_node_t *n) {
  n->next = NULL;
  n->prev = l->last;
  if (l->last)
    l->last->next = n;
  else
    l->first = n;
  l->last = n;
}

/* kcr__list_push_front links n (not in any list) at the start of l. */
static inline void kcr__list_push_front(kcr__list_t *l, kcr__list_node_t *n) {
  n->prev = NULL;
  n->next = l->first;
  if (l->first)
    l->first->prev = n;
  else
    l->last = n;
  l->first = n;
}

/* kcr__list_remove unlinks n, which must be in l; its links are NULL after. */
static inline void kcr__list_remove(kcr__list_t *l, kcr__list_node_t *n) {
  if (n->prev)
    n->prev->next = n->next;
  else
    l->first = n->next;
  if (n->next)
    n->next->prev = n->prev;
  else
    l->last = n->prev;
  n->prev = n->next = NULL;
}

/* kcr__list_linked tells whether n, which is in l or in no list, is in l. */
static inline bool kcr__list_linked(const kcr__list_t *l, const kcr__list_node_t *n) {
  return n->prev != NULL || l->first == n;
}

/* kcr__list_pop_front unlinks and returns l's first node, NULL when empty. */
static inline kcr__list_node_t *kcr__list_pop_front(kcr__list_t *l) {
  kcr__list_node_t *n = l->first;
  if (n)
    kcr__list_remove(l, n);
  return n;
}

/* kcr__list_take moves every node of src, in order, to the end of dst; src is
 * empty after (for taking a whole queue out from under a lock). */
static inline void kcr__list_take(kcr__list_t *dst, kcr__list_t *src) {
  if (!src->first)
    return;
  if (dst->last) {
    dst->last->next = src->first;
    src->first->prev = dst->last;
  } else {
    dst->first = src->first;
  }
  dst->last = src->last;
  src->first = src->last = NULL;
}

/* KCR__LIST_FOREACH walks l front to back (no changes meanwhile). */
#define KCR__LIST_FOREACH(l, n) for (kcr__list_node_t *n = (l)->first; n; n = n->next)

/* KCR__LIST_EACH walks l front to back as elements: var is a type * whose
 * kcr__list_node_t is member (no changes meanwhile). */
#define KCR__LIST_EACH(l, type, member, var)                                                       \
  for (type *var = (l)->first ? KCR__CONTAINER_OF((l)->first, type, member) : NULL; var;           \
       var = var->member.next ? KCR__CONTAINER_OF(var->member.next, type, member) : NULL)

/* KCR__LIST_FOREACH_SAFE walks l front to back; the body may unlink or free n. */
#define KCR__LIST_FOREACH_SAFE(l, n, tmp)                                                          \
  for (kcr__list_node_t *n = (l)->first, *tmp = n ? n->next : NULL; n;                             \
       n = tmp, tmp = n ? n->next : NULL)

#endif /* KCR_UTIL_LIST_H */
