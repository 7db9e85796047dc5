/* SPDX-License-Identifier: MIT */
/*
 * trace_parent_internal.h: the traceparents a controller's For() objects
 * carried (KCR_TRACEPARENT_ANNOTATION), kept from the event to the
 * reconcile it triggers.
 */
#ifndef KCR_CONTROLLER_TRACE_PARENT_INTERNAL_H
#define KCR_CONTROLLER_TRACE_PARENT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

#include "kcr/trace.h"

/* kcr__trace_parents_t: key -> traceparent, bounded, internally locked. */
typedef struct kcr__trace_parents kcr__trace_parents_t;

/* kcr__trace_parents_create returns a new table, NULL without memory. */
kcr__trace_parents_t *kcr__trace_parents_create(void);

/* kcr__trace_parents_destroy frees t (NULL: no-op). */
void kcr__trace_parents_destroy(kcr__trace_parents_t *t);

/*
 * kcr__trace_parents_note remembers obj's traceparent annotation under
 * key (the object's namespace/name), or forgets key's when obj has none or
 * an invalid one. Does nothing while tracing is off. At most 4096 keys (a
 * new key beyond that is not remembered). Informer threads.
 */
void kcr__trace_parents_note(kcr__trace_parents_t *t, const char *key, const json_t *obj);

/*
 * kcr__trace_parents_take moves key's remembered context into *out and
 * returns true, or returns false. Worker threads.
 */
bool kcr__trace_parents_take(kcr__trace_parents_t *t, const char *key, kcr_span_context *out);

/*
 * kcr__reconcile_span_start starts the span of one reconcile ("Reconcile
 * <controller>", kind INTERNAL) with
 * the reconcile's identity as attributes, as a child of the traceparent noted
 * for key if any (taken from t), else as a root. NULL while tracing is off.
 * The worker's thread.
 */
kcr_span_t *kcr__reconcile_span_start(kcr__trace_parents_t *t, const char *key,
                                      const char *controller, const char *group, const char *kind,
                                      const char *ns, const char *name, const char *reconcile_id);

/*
 * kcr__reconcile_span_end records the result (rc: 0 or the reconciler's
 * error; message: its text) and ends span (NULL: no-op).
 */
void kcr__reconcile_span_end(kcr_span_t *span, int rc, bool terminal, bool requeue,
                             int64_t requeue_after_ns, const char *message);

#endif /* KCR_CONTROLLER_TRACE_PARENT_INTERNAL_H */
