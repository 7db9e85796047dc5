/* SPDX-License-Identifier: MIT */
/*
 * listener.c: the informer's listeners (client-go's processorListener).
 *
 * A listener owns one registered handler, its thread and an unbounded buffer
 * of notifications, oldest first. The informer's processor appends to it
 * (kcr__listener_notify, under the informer's handlers_mu, which this file never
 * takes); the thread takes one at a time and calls the handler with no lock
 * held, in order. A slow handler delays only its own notifications; stopping
 * drops what it has not been handed yet. A notification holds its objects as
 * kcr__lazy_t, shared by the notifications of every handler for one change:
 * the first listener to need the tree parses it, so objects no handler asks
 * for are never parsed. A listener counts a call only while it is still
 * registered, so a handler removed from inside itself never touches a freed
 * informer: it is marked detached and its thread frees it as it leaves.
 *
 * Threads: the listener's own calls the handler; any thread appends. Lock
 * order: the informer's handlers_mu -> a listener's mu; a lazy's mu is taken
 * alone, on a listener's thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "cache/informer_multi_internal.h"
#include "cache/listener_internal.h"
#include "kcr/log.h"
#include "util/alloc.h"
#include "util/container.h"

struct kcr__lazy {
  atomic_uint refs;
  pthread_mutex_t mu;
  kcr__cobj_t *cobj; /* own reference; immutable */
  json_t *tree;      /* protected by mu: NULL until first asked for */
  json_t *meta;      /* protected by mu: metadata only, for handlers that ask no more */
};

/* note: one notification waiting in a listener's buffer. */
struct kcr__note {
  kcr__list_node_t link; /* in its listener's notes */
  kcr__note_type type;
  bool initial;
  kcr__lazy_t *old_obj; /* own reference (updates) */
  kcr__lazy_t *obj;     /* own reference, NULL for a tombstone without a last state */
  char *tombstone;      /* own copy, or NULL */
};

kcr__lazy_t *kcr__lazy_new(kcr__cobj_t *cobj) {
  kcr__lazy_t *l = kcr__malloc(sizeof(*l));
  if (!l)
    return NULL;
  atomic_init(&l->refs, 1);
  pthread_mutex_init(&l->mu, NULL);
  l->cobj = kcr__cobj_ref(cobj);
  l->tree = NULL;
  l->meta = NULL;
  return l;
}

static kcr__lazy_t *lazy_ref(kcr__lazy_t *l) {
  if (l)
    atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
  return l;
}

void kcr__lazy_unref(kcr__lazy_t *l) {
  if (!l || atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) != 1)
    return;
  json_decref(l->tree);
  json_decref(l->meta);
  kcr__cobj_unref(l->cobj);
  pthread_mutex_destroy(&l->mu);
  kcr__free(l);
}

/* lazy_tree returns the object's tree (borrowed from l), parsing it on first
 * use; NULL without memory. With meta_only, a tree of its apiVersion, kind
 * and metadata will do: the whole one if some handler already had it parsed,
 * else only those. A listener's thread. */
static json_t *lazy_tree(kcr__lazy_t *l, bool meta_only) {
  json_t *t;
  pthread_mutex_lock(&l->mu);
  if (meta_only && !l->tree) {
    if (!l->meta && kcr__cobj_parse_meta(l->cobj, &l->meta) != 0)
      l->meta = NULL;
    t = l->meta;
  } else {
    if (!l->tree && kcr__cobj_parse(l->cobj, &l->tree) != 0)
      l->tree = NULL;
    t = l->tree;
  }
  pthread_mutex_unlock(&l->mu);
  return t;
}

static void note_free(kcr__note_t *n) {
  kcr__lazy_unref(n->old_obj);
  kcr__lazy_unref(n->obj);
  kcr__free(n->tombstone);
  kcr__free(n);
}

/* listener_free drops a stopped listener's buffer and frees it. */
static void listener_free(kcr__listener_t *h) {
  kcr__list_node_t *n;
  while ((n = kcr__list_pop_front(&h->notes)))
    note_free(KCR__CONTAINER_OF(n, kcr__note_t, link));
  pthread_cond_destroy(&h->cond);
  pthread_mutex_destroy(&h->mu);
  kcr__free(h);
}

/* listener_main is a listener's thread: it hands the buffer to the handler,
 * oldest first, one call at a time with no lock held. */
static void *listener_main(void *arg) {
  kcr__listener_t *h = arg;
  int detached;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    kcr__note_t *n;
    while (kcr__list_empty(&h->notes) && !h->stopping)
      pthread_cond_wait(&h->cond, &h->mu);
    if (h->stopping)
      break;
    n = KCR__CONTAINER_OF(kcr__list_pop_front(&h->notes), kcr__note_t, link);
    h->pending--;
    pthread_mutex_unlock(&h->mu);
    {
      json_t *obj = n->obj ? lazy_tree(n->obj, h->meta_only) : NULL;
      json_t *old = n->old_obj ? lazy_tree(n->old_obj, h->meta_only) : NULL;
      if ((n->obj && !obj) || (n->old_obj && !old)) {
        kcr_log(KCR_LOG_ERROR, "informer", "out of memory: a handler misses a notification");
      } else {
        switch (n->type) {
        case KCR__NOTE_ADD:
          if (h->h.on_add)
            h->h.on_add(obj, n->initial, h->h.data);
          break;
        case KCR__NOTE_UPDATE:
          if (h->h.on_update)
            h->h.on_update(old, obj, h->h.data);
          break;
        case KCR__NOTE_DELETE:
          if (h->h.on_delete)
            h->h.on_delete(obj, n->tombstone, h->h.data);
          break;
        }
      }
    }
    pthread_mutex_lock(&h->mu);
    if (n->initial)
      h->initial_left--;
    if (!h->detached) { /* still registered: the informer is alive */
      atomic_fetch_add(h->deliveries, 1);
      kcr_metric_inc(h->m_deliveries);
    }
    pthread_mutex_unlock(&h->mu);
    note_free(n);
    pthread_mutex_lock(&h->mu);
  }
  detached = h->detached;
  pthread_mutex_unlock(&h->mu);
  if (detached)
    listener_free(h); /* kcr_informer_remove_handler ran inside this handler */
  return NULL;
}

void kcr__listener_stop_free(kcr__listener_t *h) {
  pthread_mutex_lock(&h->mu);
  h->stopping = 1;
  pthread_cond_signal(&h->cond);
  if (h->thread_started && pthread_equal(h->thread, pthread_self())) {
    h->detached = 1;
    pthread_mutex_unlock(&h->mu);
    pthread_detach(h->thread);
    return;
  }
  pthread_mutex_unlock(&h->mu);
  if (h->thread_started)
    pthread_join(h->thread, NULL);
  listener_free(h);
}

int kcr__listener_notify(kcr__listener_t *h, kcr__note_type type, bool initial,
                         kcr__lazy_t *old_obj, kcr__lazy_t *obj, const char *tombstone) {
  kcr__note_t *n;
  if ((type == KCR__NOTE_ADD && !h->h.on_add) || (type == KCR__NOTE_UPDATE && !h->h.on_update) ||
      (type == KCR__NOTE_DELETE && !h->h.on_delete))
    return 0;
  n = kcr__calloc(1, sizeof(*n));
  if (!n)
    return KCR_ENOMEM;
  if (tombstone && !(n->tombstone = kcr__strdup(tombstone))) {
    kcr__free(n);
    return KCR_ENOMEM;
  }
  n->type = type;
  n->initial = initial;
  n->old_obj = lazy_ref(old_obj);
  n->obj = lazy_ref(obj);
  pthread_mutex_lock(&h->mu);
  kcr__list_push_back(&h->notes, &n->link);
  h->pending++;
  if (initial)
    h->initial_left++;
  pthread_cond_signal(&h->cond);
  pthread_mutex_unlock(&h->mu);
  return 0;
}

int kcr__listener_start(const kcr_event_handler *h, unsigned flags,
                        atomic_uint_fast64_t *deliveries, kcr_metric_child_t *m_deliveries,
                        kcr__listener_t **out) {
  kcr__listener_t *n = kcr__calloc(1, sizeof(*n));
  *out = NULL;
  if (!n)
    return KCR_ENOMEM;
  n->h = *h;
  n->meta_only = (flags & KCR__HANDLER_METADATA) != 0;
  n->deliveries = deliveries;
  n->m_deliveries = m_deliveries;
  pthread_mutex_init(&n->mu, NULL);
  pthread_cond_init(&n->cond, NULL);
  if (pthread_create(&n->thread, NULL, listener_main, n) != 0) {
    kcr__listener_stop_free(n);
    return KCR_ESYS;
  }
  n->thread_started = 1;
  *out = n;
  return 0;
}

size_t kcr__listener_pending(kcr__listener_t *l) {
  size_t n;
  pthread_mutex_lock(&l->mu);
  n = l->pending;
  pthread_mutex_unlock(&l->mu);
  return n;
}

bool kcr__listener_synced(kcr__listener_t *l) {
  bool synced;
  pthread_mutex_lock(&l->mu);
  synced = l->initial_left == 0;
  pthread_mutex_unlock(&l->mu);
  return synced;
}
