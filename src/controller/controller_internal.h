/* SPDX-License-Identifier: MIT */
/*
 * controller_internal.h: what the controller module shares with the manager and
 * with the unit tests (a testing build of the same sources).
 */
#ifndef KCR_CONTROLLER_INTERNAL_H
#define KCR_CONTROLLER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "kcr/controller.h"
#include "kcr/informer.h"

/* kcr__predicate_failed tells whether p is the "out of memory" predicate. */
bool kcr__predicate_failed(const kcr_predicate_t *p);

/* kcr__predicate_metadata_only tells whether p (NULL: none) reads nothing of
 * an object but its metadata: everything but a custom predicate. */
bool kcr__predicate_metadata_only(const kcr_predicate_t *p);

/*
 * kcr__controller_process_next takes one key from the queue (blocking) and
 * reconciles it on the calling thread, exactly as a worker does. Returns 0, or
 * KCR_ECLOSED once the queue is shut down and empty. For tests that drive a
 * controller without worker threads (never started).
 */
int kcr__controller_process_next(kcr_controller_t *c);

/*
 * kcr__controller_handler returns the event handler the controller registers for
 * its i-th watch (in the order for/owns/watches were called), so tests can feed
 * events without an informer. false when there is no such watch.
 */
bool kcr__controller_handler(kcr_controller_t *c, size_t i, kcr_event_handler *out);

/* kcr__controller_handler_flags returns the flags that handler is registered
 * with (KCR__HANDLER_METADATA when it reads only metadata; 0 past the last). */
unsigned kcr__controller_handler_flags(kcr_controller_t *c, size_t i);

/*
 * kcr__controller_set_primary_namespaced overrides what the source said about the
 * primary kind's scope (tests without a source).
 */
void kcr__controller_set_primary_namespaced(kcr_controller_t *c, bool namespaced);

/* struct kcr_requests: what a map function adds to (kcr_requests_add): the
 * controller, and its queue (so that channel.c, which calls nothing in
 * controller.c, can make one), and the priority the event's requests get. */
struct kcr_requests {
  kcr_controller_t *c;
  kcr_workqueue_t *q;
  int priority;
};

/* kcr__channel_watch adds c's watch of s (kcr_controller_watches_channel):
 * q is c's queue, name its name (both live as long as c). pred stolen. */
int kcr__channel_watch(kcr_controller_t *c, kcr_workqueue_t *q, const char *name,
                       kcr_channel_source_t *s, kcr_map_fn fn, void *data, kcr_predicate_t *pred,
                       kcr_error_t *err);

/* kcr__channel_forget_controller takes c's watches out of every channel
 * source; kcr_controller_destroy calls it first. */
void kcr__channel_forget_controller(kcr_controller_t *c);

/* kcr__controller_gate_fn: true when workers may start a reconcile (any thread). */
typedef bool (*kcr__controller_gate_fn)(void *data);

/*
 * kcr__controller_set_gate installs the manager's gate (its leader fence): a
 * worker asks it after taking a key and, when it is closed, reconciles nothing
 * and puts the key back to the queue one second later. Before start.
 */
void kcr__controller_set_gate(kcr_controller_t *c, kcr__controller_gate_fn gate, void *data);

/* kcr__controller_key_fn: whether this replica may reconcile key ("ns/name",
 * or "name" for a cluster-scoped key, split into ns "" and name) of c now.
 * Any thread; must not block (a drain asks it under c's lock). */
typedef bool (*kcr__controller_key_fn)(kcr_controller_t *c, const char *key, const char *ns,
                                       const char *name, void *data);

/*
 * kcr__controller_set_key_filter installs the manager's shard check: a worker
 * notes the key it took as in flight, then asks fn right before the
 * reconcile; a key fn refuses is dropped (forgotten: another replica owns it
 * now). Before start.
 */
void kcr__controller_set_key_filter(kcr_controller_t *c, kcr__controller_key_fn fn, void *data);

/* kcr__controller_primary_informer: the informer of c's For kind (borrowed,
 * lives as long as c), NULL before start or without one. Any thread. */
kcr_informer_t *kcr__controller_primary_informer(kcr_controller_t *c);

/* What a controller's watches of one kind are (kcr__controller_watch_roles). */
enum {
  KCR__WATCH_FOR = 1,  /* kcr_controller_for */
  KCR__WATCH_OWNS = 2, /* kcr_controller_owns */
  KCR__WATCH_MAP = 4   /* kcr_controller_watches: a map function, any object */
};

/* kcr__controller_watch_roles: the KCR__WATCH_* bits of c's watches of gvk's
 * group and kind (cache-backed ones; 0: c does not watch it). Watches are set
 * before start and read-only after, so any thread once started. */
unsigned kcr__controller_watch_roles(kcr_controller_t *c, const kcr_gvk *gvk);

/* kcr__controller_drained: whether every reconcile in flight has a key the
 * filter still allows (true without a filter). Any thread; does not block. */
bool kcr__controller_drained(kcr_controller_t *c);

/*
 * kcr__reconcile_ctx_create makes a reconcile context of c for ns/name (both
 * borrowed: they must outlive the context), as a worker makes one for a key:
 * c's client with c's cancellation token and field manager, a fresh id. For the
 * testing kit (kcr/testing.h). NULL when out of memory.
 */
kcr_reconcile_ctx_t *kcr__reconcile_ctx_create(kcr_controller_t *c, const char *ns,
                                               const char *name);

/* kcr__reconcile_ctx_reset clears ctx's error record and terminal mark, with a new id. */
void kcr__reconcile_ctx_reset(kcr_reconcile_ctx_t *ctx);

/* kcr__reconcile_ctx_terminal tells whether the reconciler called kcr_reconcile_terminal. */
bool kcr__reconcile_ctx_terminal(const kcr_reconcile_ctx_t *ctx);

/* kcr__reconcile_ctx_destroy frees a context made by kcr__reconcile_ctx_create. */
void kcr__reconcile_ctx_destroy(kcr_reconcile_ctx_t *ctx);

#endif /* KCR_CONTROLLER_INTERNAL_H */
