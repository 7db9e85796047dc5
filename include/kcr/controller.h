/* SPDX-License-Identifier: MIT */
/*
 * kcr/controller.h: controllers — controller-runtime's builder, handler,
 * predicate and internal/controller packages in one module.
 *
 * A controller watches kinds through shared informers and turns their events into
 * "namespace/name" keys in a rate-limited workqueue (kcr/workqueue.h); worker
 * threads take keys and call the reconciler, then act on its result:
 *   returned error (negative)     -> add rate-limited (backoff per key)
 *   terminal error (kcr_reconcile_terminal) -> forget, no requeue
 *   res->requeue_after_ns > 0     -> forget, add after that delay
 *   res->requeue                  -> add rate-limited
 *   otherwise (0)                 -> forget (the key's backoff starts over)
 * An error with a requeue is a mistake (logged; the error wins), as upstream.
 * The workqueue never hands one key to two workers at once.
 *
 * Priorities (controller-runtime's priority queue, on by default since its
 * v0.23; options.use_priority_queue turns it off): the events of an
 * informer's initial list (an add with is_initial_list) and of its resyncs
 * (an update whose old and new resourceVersion are equal) enqueue at
 * KCR_WORKQUEUE_PRIORITY_LOW (-100), every other event at 0, so that after a
 * restart real changes are reconciled before the thousands of unchanged
 * objects the first list brings. A requeue keeps the priority the key was
 * handed out with unless the reconciler sets res->priority.
 *
 * Most programs make controllers through the manager (kcr/manager.h:
 * kcr_manager_add_controller), which fills in the informer source and the client;
 * then: kcr_controller_for, kcr_controller_owns / kcr_controller_watches, and the
 * manager starts and stops it.
 *
 * Threads: set-up functions (for, owns, watches, add_event_filter) run before
 * start, from one thread. Event handlers run on informer threads and only
 * enqueue; the reconciler runs on the controller's worker threads.
 */
#ifndef KCR_CONTROLLER_H
#define KCR_CONTROLLER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "kcr/cache.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/controllerutil.h"
#include "kcr/error.h"
#include "kcr/informer.h"
#include "kcr/log.h"
#include "kcr/metrics.h"
#include "kcr/ratelimiter.h"
#include "kcr/workqueue.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- predicates ---- */

/* kcr_event_type: the four event kinds a predicate filters. */
typedef enum kcr_event_type {
  KCR_EVENT_CREATE = 0,
  KCR_EVENT_UPDATE = 1,
  KCR_EVENT_DELETE = 2,
  KCR_EVENT_GENERIC = 3
} kcr_event_type;

/* kcr_predicate_t: opaque, immutable once made; any thread may evaluate it. */
typedef struct kcr_predicate kcr_predicate_t;

/*
 * Predicate constructors return a new predicate. They never return NULL: when
 * memory runs out they return a predicate that makes the call it is passed to
 * fail with KCR_ENOMEM, so a chain of constructors needs one error check, at
 * the end. Every function that takes a kcr_predicate_t * steals it, on every
 * path.
 *
 * kcr_predicate_generation_changed (GenerationChangedPredicate): updates pass
 *   only when metadata.generation changed (status writes do not change it);
 *   other events pass.
 * kcr_predicate_resource_version_changed: updates pass when resourceVersion
 *   changed (a resync delivers equal versions).
 * kcr_predicate_labels_changed / kcr_predicate_annotations_changed: updates pass
 *   when the map changed.
 * kcr_predicate_and / or: all / any of a and b (both stolen). not: negation.
 */
KCR_EXTERN kcr_predicate_t *kcr_predicate_generation_changed(void);
KCR_EXTERN kcr_predicate_t *kcr_predicate_resource_version_changed(void);
KCR_EXTERN kcr_predicate_t *kcr_predicate_labels_changed(void);
KCR_EXTERN kcr_predicate_t *kcr_predicate_annotations_changed(void);
KCR_EXTERN kcr_predicate_t *kcr_predicate_and(kcr_predicate_t *a, kcr_predicate_t *b);
KCR_EXTERN kcr_predicate_t *kcr_predicate_or(kcr_predicate_t *a, kcr_predicate_t *b);
KCR_EXTERN kcr_predicate_t *kcr_predicate_not(kcr_predicate_t *a);

/*
 * kcr_predicate_label_selector (LabelSelectorPredicate): events whose object (for
 * updates, the new object) matches the selector (kcr_selector_parse syntax) pass.
 * *out: a new predicate, NULL on failure. Returns 0, KCR_EPARSE, KCR_ETOOBIG or
 * KCR_ENOMEM.
 */
KCR_EXTERN int kcr_predicate_label_selector(const char *selector, kcr_predicate_t **out,
                                            kcr_error_t *err);

/*
 * kcr_predicate_funcs: a custom predicate (predicate.Funcs). A NULL function
 * passes its events. Objects are borrowed for the call; the functions run on the
 * watch's listener thread (kcr_event_handler), holding no informer lock, in
 * event order: a slow one delays only this watch's events. destroy (may be
 * NULL) releases data with the predicate.
 */
typedef struct kcr_predicate_funcs {
  bool (*create)(const json_t *obj, void *data);
  bool (*update)(const json_t *old_obj, const json_t *new_obj, void *data);
  bool (*del)(const json_t *obj, void *data);
  bool (*generic)(const json_t *obj, void *data);
  void (*destroy)(void *data);
} kcr_predicate_funcs;

/* kcr_predicate_custom makes a predicate of f (copied) and data (stolen). */
KCR_EXTERN kcr_predicate_t *kcr_predicate_custom(const kcr_predicate_funcs *f, void *data);

/*
 * kcr_predicate_eval tells whether an event passes p (NULL passes everything).
 * old_obj is used by updates only. Any thread.
 */
KCR_EXTERN bool kcr_predicate_eval(const kcr_predicate_t *p, kcr_event_type type,
                                   const json_t *old_obj, const json_t *obj);

/* kcr_predicate_destroy releases p. NULL is ignored. */
KCR_EXTERN void kcr_predicate_destroy(kcr_predicate_t *p);

/* ---- reconcile ---- */

/* kcr_reconcile_request: what to reconcile; strings borrowed for the call. */
typedef struct kcr_reconcile_request {
  const char *ns; /* "" for cluster-scoped objects */
  const char *name;
} kcr_reconcile_request;

/*
 * kcr_result: what the reconciler asks for besides success. On entry requeue
 * and requeue_after_ns are zero and priority holds the priority the key was
 * queued at (0, or KCR_WORKQUEUE_PRIORITY_LOW for an initial-list or resync
 * event; always 0 without the priority queue).
 *   priority  the priority of the requeue this reconcile causes (an error's
 *             rate-limited one, requeue's or requeue_after_ns's):
 *             controller-runtime's Result.Priority. Left as it came, the key
 *             is requeued at the priority it had; set it to requeue higher or
 *             lower (KCR_WORKQUEUE_PRIORITY_DEFAULT, _LOW, any int).
 */
typedef struct kcr_result {
  bool requeue;
  int64_t requeue_after_ns;
  int priority;
} kcr_result;

/* kcr_reconcile_ctx_t: one reconcile's context; opaque, valid for the call only. */
typedef struct kcr_reconcile_ctx kcr_reconcile_ctx_t;

/*
 * kcr_reconcile_fn is the reconciler: bring the world in line with the object
 * req names (which may no longer exist). Return 0 on success, or a negative
 * kcr_err; details written to kcr_reconcile_err(ctx) are logged with it. Runs on
 * a worker thread; never on two workers for the same request at once.
 */
typedef int (*kcr_reconcile_fn)(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                                kcr_result *res, void *data);

/*
 * kcr_reconcile_client returns the object client for this reconcile (borrowed,
 * valid for the call): reads from the manager's cache, writes to the server,
 * requests carry kcr_reconcile_cancel(ctx), so they end at the controller's stop
 * (KCR_ECANCELED) and at the reconcile's deadline (KCR_ETIMEDOUT, see
 * reconcile_timeout_ns). Its ops are NULL when the controller was made without
 * a client. A copy of it (kcr_objclient_with_field_owner, ...) carries the
 * same token.
 */
KCR_EXTERN const kcr_objclient *kcr_reconcile_client(kcr_reconcile_ctx_t *ctx);

/*
 * kcr_reconcile_api_reader returns the API reader for this reconcile
 * (borrowed, valid for the call): the controller's api_reader (for a
 * controller the manager runs, kcr_manager_api_reader: reads straight from the
 * API server) carrying kcr_reconcile_cancel(ctx), so its reads end at the
 * controller's stop (KCR_ECANCELED) and at the reconcile's deadline
 * (KCR_ETIMEDOUT), as controller-runtime's apiReader.Get(ctx, ...) does with
 * the reconcile's context. Its ops are NULL when the controller has no
 * api_reader.
 */
KCR_EXTERN const kcr_objclient *kcr_reconcile_api_reader(kcr_reconcile_ctx_t *ctx);

/*
 * kcr_reconcile_cancel returns the reconcile's cancellation token (borrowed,
 * valid for the call; Go's ctx): it fires when the controller stops
 * (kcr_cancel_err: KCR_ECANCELED) and, with options.reconcile_timeout_ns, when
 * the reconcile's deadline passes (KCR_ETIMEDOUT; its own token then, a child
 * of the controller's made with kcr_cancel_create_child). Put it on the
 * kcr_request_options of raw client calls so that they end with the
 * reconcile too; long reconciles should check kcr_cancel_fired and return.
 */
KCR_EXTERN kcr_cancel_t *kcr_reconcile_cancel(kcr_reconcile_ctx_t *ctx);

/*
 * kcr_reconcile_deadline returns when this reconcile's time is up, in
 * nanoseconds on the controller's clock (kcr_clock_now of options.clock), or 0
 * when options.reconcile_timeout_ns is 0 (no deadline). Requests carrying
 * kcr_reconcile_cancel(ctx) end there; a reconciler past it should return; if
 * it returns later, the reconcile counts as timed out. The worker thread
 * running the reconcile.
 */
KCR_EXTERN int64_t kcr_reconcile_deadline(kcr_reconcile_ctx_t *ctx);

/*
 * kcr_reconcile_err returns an error record (borrowed, cleared for each
 * reconcile) to pass to the calls the reconciler makes; when it returns an error,
 * this record's message is logged with it.
 */
KCR_EXTERN kcr_error_t *kcr_reconcile_err(kcr_reconcile_ctx_t *ctx);

/* kcr_reconcile_id returns this reconcile's UUID (controller-runtime's reconcileID). */
KCR_EXTERN const char *kcr_reconcile_id(kcr_reconcile_ctx_t *ctx);

/* kcr_reconcile_controller_name returns the controller's name (borrowed). */
KCR_EXTERN const char *kcr_reconcile_controller_name(kcr_reconcile_ctx_t *ctx);

/*
 * kcr_reconcile_log logs one line (logger "controller") whose message is fmt
 * and whose fields are controller-runtime's: controller, controllerGroup,
 * controllerKind, namespace, name and reconcileID (kcr/log.h). Worker threads.
 */
KCR_EXTERN void kcr_reconcile_log(kcr_reconcile_ctx_t *ctx, kcr_log_level level, const char *fmt,
                                  ...) KCR_PRINTF(3, 4);

/*
 * kcr_reconcile_log_fields is log.FromContext(ctx).Info(msg, k, v, ...): one
 * line with the reconcile's fields (as kcr_reconcile_log), then the caller's
 * n fields (borrowed for the call; KCR_LOG_STR, KCR_LOG_INT, ... of
 * kcr/log.h), then trace_id and span_id while the reconcile's span is
 * current (tracing on). At most KCR_RECONCILE_LOG_FIELDS_MAX of the caller's
 * fields are written; more are dropped and counted in a "droppedFields"
 * field. Nothing is formatted when level is disabled. Worker threads.
 *
 *   kcr_log_field f[] = {KCR_LOG_STR("image", img), KCR_LOG_INT("replicas", n)};
 *   kcr_reconcile_log_fields(ctx, KCR_LOG_INFO, "scaling", f, 2);
 */
#define KCR_RECONCILE_LOG_FIELDS_MAX 20
KCR_EXTERN void kcr_reconcile_log_fields(kcr_reconcile_ctx_t *ctx, kcr_log_level level,
                                         const char *msg, const kcr_log_field *fields, size_t n);

/*
 * kcr_reconcile_terminal marks the error being returned as terminal
 * (reconcile.TerminalError: retrying cannot help, so the key is not requeued) and
 * returns code (negative) for `return kcr_reconcile_terminal(ctx, KCR_EINVAL);`.
 */
KCR_EXTERN int kcr_reconcile_terminal(kcr_reconcile_ctx_t *ctx, int code);

/* ---- the controller ---- */

/* kcr_controller_t: opaque. */
typedef struct kcr_controller kcr_controller_t;

/*
 * kcr_controller_source: where a controller gets informers (the manager's cache).
 *   get_informer   the kind's informer (borrowed; must outlive the controller).
 *   is_namespaced  whether the kind is namespaced (for owner requests).
 *   get_metadata_informer  the kind's metadata-only informer, for the watches
 *                  added with the _metadata calls below (the manager's:
 *                  kcr_cache_get_metadata_informer); NULL: such a watch fails
 *                  start with KCR_ENOTSUP.
 */
typedef struct kcr_controller_source {
  int (*get_informer)(void *data, const kcr_gvk *gvk, kcr_informer_t **out, kcr_error_t *err);
  int (*is_namespaced)(void *data, const kcr_gvk *gvk, bool *out, kcr_error_t *err);
  void *data;
  int (*get_metadata_informer)(void *data, const kcr_gvk *gvk, kcr_informer_t **out,
                               kcr_error_t *err);
} kcr_controller_source;

/*
 * kcr_controller_options: zero-initialise.
 *   name            required; names the queue, the metrics and log lines.
 *   reconcile, data required reconciler and its argument (borrowed).
 *   max_concurrent_reconciles  worker threads; 0: 1.
 *   rate_limiter    stolen on every path; NULL: the per-key exponential
 *                   limiter (5 ms .. 1000 s) with the priority queue,
 *                   kcr_ratelimiter_default_create without (see
 *                   use_priority_queue).
 *   cache_sync_timeout_ns      how long start waits for informers; 0: 2 min.
 *   clock           borrowed; NULL: the system clock (queue delays, metrics).
 *   source          required to start (the manager sets it).
 *   client          the object client reconcilers get (ops NULL: none).
 *   reconcile_timeout_ns       controller-runtime's ReconciliationTimeout: each
 *                   reconcile gets a deadline this far ahead (kcr_reconcile_deadline)
 *                   and one that returns after it counts in
 *                   controller_runtime_reconcile_timeouts_total; 0: none. As a
 *                   Go context's deadline, it bounds the requests of the
 *                   reconcile's client and token (kcr_reconcile_cancel): one in
 *                   flight at the deadline is aborted, one made after it fails
 *                   at once, both with KCR_ETIMEDOUT (cached reads are not
 *                   requests and still answer). C cannot interrupt the
 *                   reconciler's own code: it checks kcr_cancel_fired itself.
 *   api_reader      what kcr_reconcile_api_reader hands out (with the
 *                   reconcile's token); zero: none. The manager sets it to its
 *                   API reader.
 *   metrics         borrowed, must outlive the controller; NULL: no metrics. The
 *                   controller registers the controller_runtime_* series below
 *                   on it, and its queue the workqueue_* series (the manager
 *                   hands down its registry).
 *   need_leader_election  for controllers the manager runs (kcr/manager.h):
 *                   whether this one runs only while the process leads
 *                   (controller-runtime's controller.Options.NeedLeaderElection,
 *                   a *bool there too). NULL: true, the default. Pointing at
 *                   false: the manager starts it on every replica once the
 *                   caches have synced, before and without winning the Lease,
 *                   and neither its reconciles nor its writes are fenced (see
 *                   kcr_manager_add_controller). Borrowed for the call that
 *                   takes the options; kcr_controller_create ignores it.
 *   enable_warmup   for controllers the manager runs: whether a replica that
 *                   does not lead yet warms this controller up
 *                   (kcr_controller_warmup: informers started, handlers
 *                   registered, caches synced, the queue filling) so that on
 *                   election only the workers are left to start
 *                   (controller-runtime's EnableWarmup). NULL: the manager's
 *                   kcr_manager_options.enable_warmup. Ignored when
 *                   need_leader_election is false (such a controller starts
 *                   before the election anyway). Borrowed for the call;
 *                   kcr_controller_create ignores it.
 *   use_priority_queue  controller-runtime's UsePriorityQueue (a *bool there
 *                   too): NULL: true, upstream's default since v0.23, unless
 *                   the manager says otherwise (kcr_manager_options.
 *                   disable_priority_queue). True: the queue honours
 *                   priorities, initial-list and resync events go in at
 *                   KCR_WORKQUEUE_PRIORITY_LOW (see above), and without a
 *                   rate_limiter the per-key limiter is
 *                   kcr_ratelimiter_exponential_create(5 ms, 1000 s) alone,
 *                   as upstream's with its priority queue. False: the plain
 *                   client-go queue (every key at priority 0, FIFO) and
 *                   kcr_ratelimiter_default_create. Borrowed for the call.
 */
typedef struct kcr_controller_options {
  const char *name;
  kcr_reconcile_fn reconcile;
  void *data;
  int max_concurrent_reconciles;
  kcr_ratelimiter_t *rate_limiter;
  int64_t cache_sync_timeout_ns;
  kcr_clock_t *clock;
  kcr_controller_source source;
  kcr_objclient client;
  kcr_metrics_registry_t *metrics;
  int64_t reconcile_timeout_ns;
  kcr_objclient api_reader;
  const bool *need_leader_election;
  const bool *enable_warmup;
  const bool *use_priority_queue;
} kcr_controller_options;

/*
 * kcr_controller_create makes a stopped controller. *out: new, NULL on failure.
 * Errors: KCR_EINVAL (no name or reconcile), KCR_EEXIST (o->metrics holds a
 * clashing family of one of the controller's names), KCR_ENOMEM, KCR_ESYS.
 */
KCR_EXTERN int kcr_controller_create(const kcr_controller_options *o, kcr_controller_t **out,
                                     kcr_error_t *err);

/*
 * kcr_controller_for sets the primary kind (builder.For): its events enqueue the
 * object's own key. pred (stolen, NULL: none) filters this watch. Once only
 * (KCR_EEXIST), before start.
 */
KCR_EXTERN int kcr_controller_for(kcr_controller_t *c, const kcr_gvk *gvk, kcr_predicate_t *pred,
                                  kcr_error_t *err);

/*
 * kcr_controller_owns watches a child kind (builder.Owns): an event enqueues the
 * child's controller owner if that owner is of the primary kind (same group and
 * kind; both old and new owners on an update). Requires kcr_controller_for by
 * start. pred stolen. Before start.
 */
KCR_EXTERN int kcr_controller_owns(kcr_controller_t *c, const kcr_gvk *gvk, kcr_predicate_t *pred,
                                   kcr_error_t *err);

/*
 * kcr_requests_t: where a map function puts its requests (opaque; valid for the
 * call). kcr_requests_add enqueues ns/name (ns "" for cluster-scoped); duplicates
 * coalesce in the queue. Returns 0 or KCR_ENOMEM.
 */
typedef struct kcr_requests kcr_requests_t;
KCR_EXTERN int kcr_requests_add(kcr_requests_t *r, const char *ns, const char *name);

/*
 * kcr_requests_client returns the controller's object client (borrowed, valid
 * for the call; its ops are NULL when the controller has none), for a map
 * function that needs to look other objects up.
 */
KCR_EXTERN const kcr_objclient *kcr_requests_client(kcr_requests_t *r);

/*
 * kcr_map_fn maps an object of a watched kind to requests
 * (handler.EnqueueRequestsFromMapFunc): call kcr_requests_add for each. obj is
 * borrowed. Runs on the watch's own listener thread with no lock held, so it may
 * read through the controller's client (kcr_requests_client: a cached list with
 * options, as r.List in Go); it delays only that watch's later events.
 */
typedef void (*kcr_map_fn)(const json_t *obj, kcr_requests_t *reqs, void *data);

/*
 * kcr_controller_watches watches any kind and maps its events with fn (data
 * borrowed, must outlive the controller); updates map both the old and the new
 * object. pred stolen. Before start.
 */
KCR_EXTERN int kcr_controller_watches(kcr_controller_t *c, const kcr_gvk *gvk, kcr_map_fn fn,
                                      void *data, kcr_predicate_t *pred, kcr_error_t *err);

/*
 * kcr_controller_for_metadata, kcr_controller_owns_metadata and
 * kcr_controller_watches_metadata are kcr_controller_for, _owns and _watches
 * for a kind watched metadata-only (controller-runtime's builder.OnlyMetadata):
 * its informer lists and watches PartialObjectMetadata, so only metadata
 * crosses the network and is cached, and handlers, predicates, map functions
 * and cached reads of the kind see {"apiVersion", "kind", "metadata"}
 * (docs/cache.md). The manager's cache keeps one informer per kind: start
 * fails with KCR_EEXIST when the kind is cached whole already.
 */
KCR_EXTERN int kcr_controller_for_metadata(kcr_controller_t *c, const kcr_gvk *gvk,
                                           kcr_predicate_t *pred, kcr_error_t *err);
KCR_EXTERN int kcr_controller_owns_metadata(kcr_controller_t *c, const kcr_gvk *gvk,
                                            kcr_predicate_t *pred, kcr_error_t *err);
KCR_EXTERN int kcr_controller_watches_metadata(kcr_controller_t *c, const kcr_gvk *gvk,
                                               kcr_map_fn fn, void *data, kcr_predicate_t *pred,
                                               kcr_error_t *err);

/*
 * ---- sources from outside the cluster ----
 *
 * kcr_channel_source_t: controller-runtime's source.Channel: events that come
 * from anywhere but an informer (a message queue, a timer, a webhook, a
 * cloud API's notifications), pushed from any thread into the controllers
 * that watch the source. Opaque, thread-safe. A push is delivered at once, on
 * the pushing thread, into each watching controller's workqueue: one pushed
 * before the controller starts waits in the queue for its workers; one pushed
 * after it stopped is dropped. Keys coalesce in the queue as informer events
 * do. Several controllers may watch one source: each gets every push.
 *
 *   kcr_channel_source_t *ticks;
 *   kcr_channel_source_create(&ticks, &err);
 *   kcr_controller_watches_channel(ctl, ticks, NULL, NULL, NULL, &err);
 *   ...  // any thread, any time:
 *   kcr_channel_source_push(ticks, "default", "web", &err);
 */
typedef struct kcr_channel_source kcr_channel_source_t;

/* kcr_channel_source_create makes a source no controller watches yet. *out:
 * new, NULL on failure. 0, KCR_ENOMEM or KCR_ESYS. Any thread. */
KCR_EXTERN int kcr_channel_source_create(kcr_channel_source_t **out, kcr_error_t *err);

/*
 * kcr_channel_source_destroy frees s. Destroy the controllers that watch it
 * first, or stop pushing into it first: no push may run during or after the
 * call. NULL is ignored. Any thread.
 */
KCR_EXTERN void kcr_channel_source_destroy(kcr_channel_source_t *s);

/*
 * kcr_channel_source_push enqueues the request ns/name (ns NULL or "" for a
 * cluster-scoped object) in every controller watching s, as a map function's
 * kcr_requests_add would: no predicate sees it, no map function runs.
 * Returns 0 (also when no controller watches s), KCR_EINVAL (no name, or
 * longer than KCR_META_KEY_MAX with its namespace) or KCR_ENOMEM (some queue
 * could not take it). Any thread, including a reconciler's.
 */
KCR_EXTERN int kcr_channel_source_push(kcr_channel_source_t *s, const char *ns, const char *name,
                                       kcr_error_t *err);

/*
 * kcr_channel_source_push_object pushes a generic event (event.GenericEvent)
 * with obj (borrowed; any JSON object, it need not exist in the cluster): each
 * watching controller evaluates its watch's predicate for KCR_EVENT_GENERIC,
 * then maps obj with the watch's map function, or, without one, enqueues
 * obj's own namespace/name (handler.EnqueueRequestForObject). The map
 * function runs on the pushing thread. Returns 0, KCR_EINVAL (obj not an
 * object, or a watch without a map function and obj without a name; the
 * other watches still get it) or KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_channel_source_push_object(kcr_channel_source_t *s, const json_t *obj,
                                              kcr_error_t *err);

/*
 * kcr_controller_watches_channel makes c watch s (source.Channel with its
 * handler): fn maps a generic event's object to requests (NULL: the object's
 * own key; data borrowed, must outlive c), pred (stolen; NULL: all) filters
 * generic events, requests pushed with kcr_channel_source_push pass
 * unfiltered. Event filters of kcr_controller_add_event_filter do not apply
 * (as upstream, where a channel's predicates are its own). The map function
 * must not watch or destroy s. kcr_controller_destroy takes c out of s; s
 * must outlive neither c nor be destroyed while a push runs. Any time before
 * c is destroyed, before or after start. 0, KCR_EINVAL or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_controller_watches_channel(kcr_controller_t *c, kcr_channel_source_t *s,
                                              kcr_map_fn fn, void *data, kcr_predicate_t *pred,
                                              kcr_error_t *err);

/*
 * kcr_controller_watches_informer watches an informer the manager does not
 * own (a raw source: another cluster's informer, one made with options of
 * your own, kcr/informer.h), with the same rules as kcr_controller_watches:
 * fn maps every event's object (both sides of an update), pred (stolen)
 * filters, and the controller waits for inf to sync at start. inf is
 * borrowed: it must outlive c and be started by its owner. Before start.
 * 0, KCR_EINVAL (no informer or map function, or after start) or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_controller_watches_informer(kcr_controller_t *c, kcr_informer_t *inf,
                                               kcr_map_fn fn, void *data, kcr_predicate_t *pred,
                                               kcr_error_t *err);

/*
 * kcr_controller_reconcile_all enqueues every object of c's primary kind
 * (kcr_controller_for) that its informer holds and that the For watch's
 * predicate and the event filters pass as a generic event (the informer may
 * hold more than the controller wants: a label-selector predicate filters
 * events, not the cache): kube-rs's reconcile_all_on, called whenever the
 * trigger fires (a configuration reload, a timer, a channel source's map
 * function). Keys already queued stay where they are. Returns how many were
 * queued, KCR_EINVAL
 * (c not started, or no primary kind) or KCR_ENOMEM. Any thread, including
 * a reconciler's.
 */
KCR_EXTERN int kcr_controller_reconcile_all(kcr_controller_t *c, kcr_error_t *err);

/*
 * kcr_controller_add_event_filter adds a predicate every watch applies
 * (builder.WithEventFilter). pred stolen. Before start.
 */
KCR_EXTERN int kcr_controller_add_event_filter(kcr_controller_t *c, kcr_predicate_t *pred,
                                               kcr_error_t *err);

/*
 * kcr_controller_warmup does the part of a start that needs no worker: it
 * registers the event handlers on the informers (starting them) and waits for
 * them to sync (cache_sync_timeout: KCR_ETIMEDOUT naming the kind). From then
 * on events fill the queue, but nothing is reconciled until
 * kcr_controller_start, which then only starts the workers
 * (controller-runtime's Warmup). Closes the set-up as start does. Once; a
 * second call returns 0. KCR_EINVAL after start or stop, or for a set-up
 * start would refuse. Errors leave the controller cold: start may try again.
 */
KCR_EXTERN int kcr_controller_warmup(kcr_controller_t *c, kcr_error_t *err);

/*
 * kcr_controller_start registers the event handlers on the informers, waits for
 * them to sync (cache_sync_timeout: KCR_ETIMEDOUT naming the kind), then starts
 * the workers and returns; after kcr_controller_warmup, only the workers. Once
 * only. Errors leave the controller stopped.
 */
KCR_EXTERN int kcr_controller_start(kcr_controller_t *c, kcr_error_t *err);

/*
 * kcr_controller_stop stops taking new work: removes the event handlers, fires
 * the reconciles' cancellation token, shuts the queue down (queued keys are
 * dropped), and waits up to timeout_ns (<= 0: for ever) for reconciles in flight
 * to finish. Returns 0, or KCR_ETIMEDOUT (workers still running; destroy will
 * wait for them). Idempotent; any thread but a worker.
 */
KCR_EXTERN int kcr_controller_stop(kcr_controller_t *c, int64_t timeout_ns);

/* kcr_controller_destroy stops (waiting for ever), joins and frees. NULL ignored. */
KCR_EXTERN void kcr_controller_destroy(kcr_controller_t *c);

/* kcr_controller_name returns the name (borrowed, lives as long as c). */
KCR_EXTERN const char *kcr_controller_name(const kcr_controller_t *c);

/* kcr_controller_queue returns the workqueue (borrowed), for metrics and tests. */
KCR_EXTERN kcr_workqueue_t *kcr_controller_queue(kcr_controller_t *c);

/* ---- metrics ---- */

/*
 * The series a controller registers on kcr_controller_options.metrics, with
 * controller-runtime's names, HELP and labels, all at zero from create on (as
 * controller-runtime initialises them):
 *   controller_runtime_reconcile_total{controller,result}  counter; result is
 *       kcr_reconcile_outcome_name (success, error, requeue, requeue_after).
 *   controller_runtime_reconcile_errors_total{controller}  counter.
 *   controller_runtime_terminal_reconcile_errors_total{controller}  counter.
 *   controller_runtime_reconcile_panics_total{controller}  counter; always 0: C
 *       has no panic to recover (a crashing reconciler ends the process), the
 *       series is there for dashboards and alerts written for controller-runtime.
 *   controller_runtime_reconcile_timeouts_total{controller}  counter: reconciles
 *       that returned after their deadline (options.reconcile_timeout_ns), not
 *       those that finished in time.
 *   controller_runtime_reconcile_time_seconds{controller}  histogram,
 *       controller-runtime's 40 buckets 0.005 .. 60 s.
 *   controller_runtime_active_workers{controller}  gauge.
 *   controller_runtime_max_concurrent_reconciles{controller}  gauge.
 * Workers update them with atomics (no lock). The series stay in the registry
 * after destroy.
 */
#define KCR_CONTROLLER_METRIC_RECONCILE_TOTAL "controller_runtime_reconcile_total"
#define KCR_CONTROLLER_METRIC_RECONCILE_ERRORS "controller_runtime_reconcile_errors_total"
#define KCR_CONTROLLER_METRIC_TERMINAL_ERRORS "controller_runtime_terminal_reconcile_errors_total"
#define KCR_CONTROLLER_METRIC_RECONCILE_PANICS "controller_runtime_reconcile_panics_total"
#define KCR_CONTROLLER_METRIC_RECONCILE_TIMEOUTS "controller_runtime_reconcile_timeouts_total"
#define KCR_CONTROLLER_METRIC_RECONCILE_TIME "controller_runtime_reconcile_time_seconds"
#define KCR_CONTROLLER_METRIC_ACTIVE_WORKERS "controller_runtime_active_workers"
#define KCR_CONTROLLER_METRIC_MAX_CONCURRENT "controller_runtime_max_concurrent_reconciles"

#define KCR_CONTROLLER_HELP_RECONCILE_TOTAL "Total number of reconciliations per controller"
#define KCR_CONTROLLER_HELP_RECONCILE_ERRORS "Total number of reconciliation errors per controller"
#define KCR_CONTROLLER_HELP_TERMINAL_ERRORS                                                        \
  "Total number of terminal reconciliation errors per controller"
#define KCR_CONTROLLER_HELP_RECONCILE_PANICS "Total number of reconciliation panics per controller"
#define KCR_CONTROLLER_HELP_RECONCILE_TIMEOUTS                                                     \
  "Total number of reconciliation timeouts per controller"
#define KCR_CONTROLLER_HELP_RECONCILE_TIME "Length of time per reconciliation per controller"
#define KCR_CONTROLLER_HELP_ACTIVE_WORKERS "Number of currently used workers per controller"
#define KCR_CONTROLLER_HELP_MAX_CONCURRENT "Maximum number of concurrent reconciles per controller"

/* kcr_reconcile_outcome: the `result` label of controller_runtime_reconcile_total. */
typedef enum kcr_reconcile_outcome {
  KCR_RECONCILE_SUCCESS = 0,       /* "success" */
  KCR_RECONCILE_ERROR = 1,         /* "error" */
  KCR_RECONCILE_REQUEUE = 2,       /* "requeue" */
  KCR_RECONCILE_REQUEUE_AFTER = 3, /* "requeue_after" */
  KCR_RECONCILE_OUTCOMES = 4
} kcr_reconcile_outcome;

/* kcr_reconcile_outcome_name returns the label value of o. Static storage. */
KCR_EXTERN const char *kcr_reconcile_outcome_name(kcr_reconcile_outcome o);

#ifdef __cplusplus
}
#endif

#endif /* KCR_CONTROLLER_H */
