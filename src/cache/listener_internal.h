/* SPDX-License-Identifier: MIT */
/*
 * listener_internal.h: the informer's listeners (cache/listener.c), one
 * thread per registered event handler, each fed by a buffer of notifications,
 * and the lazy object those notifications share.
 *
 * The informer keeps its listeners in a list (next, id: its own fields, under
 * its handlers_mu), appends to them with kcr__listener_notify and stops them
 * with kcr__listener_stop_free; every other field is the listener's.
 */
#ifndef KCR_CACHE_LISTENER_INTERNAL_H
#define KCR_CACHE_LISTENER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cobj.h"
#include "kcr/informer.h"
#include "util/list.h"

typedef enum { KCR__NOTE_ADD, KCR__NOTE_UPDATE, KCR__NOTE_DELETE } kcr__note_type;

/* kcr__lazy_t: a compact object and, once a listener asked, its tree, shared
 * by the notifications of every handler for one change. Reference counted. */
typedef struct kcr__lazy kcr__lazy_t;

/* kcr__lazy_new wraps a compact object (a new reference is taken); NULL
 * without memory. */
kcr__lazy_t *kcr__lazy_new(kcr__cobj_t *cobj);

/* kcr__lazy_unref drops one reference (NULL: nothing). */
void kcr__lazy_unref(kcr__lazy_t *l);

typedef struct kcr__note kcr__note_t;

/* kcr__listener_t: a registered kcr_event_handler and the thread that calls it. */
typedef struct kcr__listener {
  kcr__list_node_t link; /* the owner's: protected by its handlers_mu */
  uint64_t id;           /* the owner's: set before the listener is linked */
  kcr_event_handler h;   /* immutable */
  bool meta_only;        /* immutable: KCR__HANDLER_METADATA */
  pthread_t thread;
  int thread_started; /* owner: set before the handler is linked */
  pthread_mutex_t mu;
  pthread_cond_t cond;
  kcr__list_t notes;   /* protected by mu: the buffer (kcr__note_t), oldest first */
  size_t pending;      /* protected by mu */
  size_t initial_left; /* protected by mu: initial-list adds not yet handled */
  int stopping;        /* protected by mu */
  int detached;        /* protected by mu: removed from its own thread; it frees itself */
  atomic_uint_fast64_t *deliveries; /* the informer's counter; touched only while registered */
  kcr_metric_child_t *m_deliveries; /* immutable; NULL: no metrics */
} kcr__listener_t;

/*
 * kcr__listener_start makes a listener for h and starts its thread, which
 * counts each call in *deliveries and m_deliveries (may be NULL) until it is
 * stopped. flags: KCR__HANDLER_* (cache_internal.h). Returns 0, KCR_ENOMEM or
 * KCR_ESYS (*out NULL).
 */
int kcr__listener_start(const kcr_event_handler *h, unsigned flags,
                        atomic_uint_fast64_t *deliveries, kcr_metric_child_t *m_deliveries,
                        kcr__listener_t **out);

/* kcr__listener_notify appends one notification to l's buffer; steals nothing
 * (it takes its own references). Returns 0 or KCR_ENOMEM. Any thread. */
int kcr__listener_notify(kcr__listener_t *l, kcr__note_type type, bool initial,
                         kcr__lazy_t *old_obj, kcr__lazy_t *obj, const char *tombstone);

/* kcr__listener_pending returns how many notifications wait in l's buffer. */
size_t kcr__listener_pending(kcr__listener_t *l);

/* kcr__listener_synced tells whether l has handled every initial-list add. */
bool kcr__listener_synced(kcr__listener_t *l);

/*
 * kcr__listener_stop_free drops what the listener has not begun and joins its
 * thread (the current call, if any, finishes first), then frees it. From the
 * listener's own thread it only marks it: the thread frees it as it leaves.
 */
void kcr__listener_stop_free(kcr__listener_t *l);

#endif /* KCR_CACHE_LISTENER_INTERNAL_H */
