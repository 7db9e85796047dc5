/* SPDX-License-Identifier: MIT */
/*
 * kcr/events.h: an event recorder writing events.k8s.io/v1 Events (what
 * `kubectl get events` and `kubectl describe` show), as client-go's
 * tools/events recorder and controller-runtime's GetEventRecorderFor do.
 *
 * Recording never blocks the caller on the network: it updates an in-memory
 * correlator under a short lock and a sender thread writes to the API server
 * with the synchronous client. The correlator does what client-go's does to keep
 * a hot loop from flooding the API:
 *  - series: an event like one recorded within the series window (same
 *    regarding object and resourceVersion, type, reason, action and
 *    controller; the note is not compared, as client-go's getKey leaves it
 *    out) is not a new Event: its series.count grows, the Event keeps its
 *    first note, and the sender PATCHes the count and lastObservedTime at
 *    most once per patch interval (and on flush);
 *  - spam filter: new (non-identical) events take a token from a bucket per
 *    regarding object (burst 25, one token back every 5 minutes, client-go's
 *    defaults); without a token the event is dropped;
 *  - bounds: at most 4096 correlated events and max_queue unsent ones.
 */
#ifndef KCR_EVENTS_H
#define KCR_EVENTS_H

#include <jansson.h>
#include <stdint.h>

#include "kcr/client.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/meta.h"
#include "kcr/meta_v1.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_event_recorder_t: opaque; thread-safe. */
typedef struct kcr_event_recorder kcr_event_recorder_t;

/* The event types Kubernetes accepts. */
#define KCR_EVENT_NORMAL "Normal"
#define KCR_EVENT_WARNING "Warning"

/* Limits the API server enforces (longer values are cut). */
#define KCR_EVENT_NOTE_MAX 1024
#define KCR_EVENT_FIELD_MAX 128

/*
 * kcr_event_recorder_options: zero-initialise, then set what you need.
 *   client                required; borrowed, must outlive the recorder.
 *   reporting_controller  required, e.g. "kcr.dev/app-controller".
 *   reporting_instance    NULL: "<reporting_controller>-<hostname>".
 *   clock                 NULL: the system clock; borrowed.
 *   burst, refill_period_ns  spam filter; 0: 25 and 5 minutes.
 *   series_window_ns      0: 6 minutes (client-go's finishTime).
 *   patch_interval_ns     0: 30 s. Series updates coalesce within it.
 *   max_queue             events waiting to be sent; 0: 1000.
 *   fence, fence_data     NULL: every event may be sent. Else how long, in ns,
 *                         this process may still write (<= 0: not now), as the
 *                         manager's write fence (kcr_manager_fence_remaining):
 *                         the sender asks it before each write, drops the write
 *                         while it is <= 0 (counted in stats.fenced; the event
 *                         is sent if it is recorded again once writes are
 *                         allowed), and cuts each write's timeout to it. Called
 *                         on the sender thread with the recorder's lock held:
 *                         quick, thread-safe, and no recorder calls.
 */
typedef struct kcr_event_recorder_options {
  kcr_client_t *client;
  const char *reporting_controller;
  const char *reporting_instance;
  kcr_clock_t *clock;
  int burst;
  int64_t refill_period_ns;
  int64_t series_window_ns;
  int64_t patch_interval_ns;
  int max_queue;
  int64_t (*fence)(void *data);
  void *fence_data;
} kcr_event_recorder_options;

/*
 * kcr_event_recorder_create makes a recorder and starts its sender thread.
 * Strings are copied. *out: new, NULL on failure. Errors: KCR_EINVAL,
 * KCR_ENOMEM, KCR_ESYS. Any thread.
 */
KCR_EXTERN int kcr_event_recorder_create(const kcr_event_recorder_options *opts,
                                         kcr_event_recorder_t **out, kcr_error_t *err);

/*
 * kcr_event_recorder_destroy flushes (bounded by 5 s), stops the sender thread
 * and frees the recorder. NULL is ignored. The flush sends through the
 * options' client and asks their fence: destroy the recorder before either
 * (before kcr_manager_destroy when they are the manager's). Not from a recording thread that
 * still records afterwards. Never on a recorder of kcr_manager_event_recorder:
 * the manager destroys those.
 */
KCR_EXTERN void kcr_event_recorder_destroy(kcr_event_recorder_t *r);

/*
 * kcr_object_ref: the regarding object. name and kind are required; the rest may
 * be NULL. Borrowed for the call.
 */
typedef struct kcr_object_ref {
  const char *api_version;
  const char *kind;
  const char *namespace_;
  const char *name;
  const char *uid;
  const char *resource_version;
} kcr_object_ref;

/*
 * kcr_event_record records an event about ref: type KCR_EVENT_NORMAL or
 * KCR_EVENT_WARNING, reason (UpperCamelCase, required), action (what was done,
 * required), note printf-style (cut to KCR_EVENT_NOTE_MAX). Returns 0 when
 * recorded (new or counted into a series), KCR_EAGAIN when dropped by the spam
 * filter or a full queue (callers normally ignore it), KCR_EINVAL for bad
 * arguments. Any thread; never waits on the network.
 */
KCR_EXTERN int kcr_event_record(kcr_event_recorder_t *r, const kcr_object_ref *ref,
                                const char *type, const char *reason, const char *action,
                                const char *note_fmt, ...) KCR_PRINTF(6, 7);

/*
 * kcr_event_record_object is kcr_event_record with the reference taken from an
 * object's apiVersion, kind and metadata (obj borrowed).
 */
KCR_EXTERN int kcr_event_record_object(kcr_event_recorder_t *r, json_t *obj, const char *type,
                                       const char *reason, const char *action, const char *note_fmt,
                                       ...) KCR_PRINTF(6, 7);

/*
 * kcr_event_record_meta is kcr_event_record for a typed object: the reference
 * is its kind gvk (apiVersion made from group and version; borrowed) and its
 * metadata meta (namespace, name, uid, resourceVersion; borrowed for the call).
 * Returns as kcr_event_record; KCR_EINVAL also when gvk or meta is NULL or gvk
 * has no version. Any thread; never waits on the network.
 */
KCR_EXTERN int kcr_event_record_meta(kcr_event_recorder_t *r, const kcr_gvk *gvk,
                                     const kcr_meta_v1_object_meta_t *meta, const char *type,
                                     const char *reason, const char *action, const char *note_fmt,
                                     ...) KCR_PRINTF(7, 8);

/*
 * kcr_event_recorder_flush sends everything pending now (series updates
 * included, ignoring the patch interval) and waits until done or timeout_ns (on
 * the real clock) passes. Returns 0 or KCR_ETIMEDOUT. Any thread.
 */
KCR_EXTERN int kcr_event_recorder_flush(kcr_event_recorder_t *r, int64_t timeout_ns);

/*
 * kcr_event_recorder_stats: counters. recorded (calls accepted), created (POSTs
 * that succeeded), patched (series PATCHes that succeeded), aggregated (calls
 * counted into an existing series), dropped (spam filter or full queue),
 * failed (API writes that failed), fenced (writes not made because the fence
 * said this process may not write).
 */
typedef struct kcr_event_recorder_stats {
  uint64_t recorded, created, patched, aggregated, dropped, failed, fenced;
} kcr_event_recorder_stats;

/* kcr_event_recorder_get_stats copies the counters. Any thread. */
KCR_EXTERN void kcr_event_recorder_get_stats(kcr_event_recorder_t *r,
                                             kcr_event_recorder_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* KCR_EVENTS_H */
