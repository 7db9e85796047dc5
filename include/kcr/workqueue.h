/* SPDX-License-Identifier: MIT */
/*
 * kcr/workqueue.h: the queue between a controller's event handlers and its
 * workers, with client-go's util/workqueue semantics (plain, delaying and
 * rate-limiting queue in one object).
 *
 * Keys are strings, usually "namespace/name"; the queue copies them. A key is
 * "dirty" from the add until a worker gets it, and "processing" from the get until
 * the worker calls kcr_workqueue_done:
 *   - adding a dirty key does nothing (events for one object coalesce);
 *   - a key is never handed to two workers at once: adding a processing key marks
 *     it dirty, and it is handed out again only after done;
 *   - kcr_workqueue_get blocks until a key is ready or the queue shuts down, and
 *     during shutdown keeps handing out what is queued until nothing is left.
 * Delayed keys (add_after, add_rate_limited) wait in a separate set ordered by
 * ready time; a key waiting twice keeps the earlier time. They count in neither
 * kcr_workqueue_len nor the depth metric until they are ready, and a shut-down
 * queue never releases them.
 *
 * Priorities (controller-runtime's priority queue, its default since v0.23):
 * a key added with kcr_workqueue_add_with_opts carries an int priority, 0
 * unless given (every other add uses 0). get hands out the highest priority
 * queued first, and keys of one priority in the order they became queued. A
 * queued key added again with a higher priority moves up to the back of that
 * priority (it keeps the highest priority it was given until it is handed
 * out); a lower one changes nothing. A delayed key keeps the priority it was
 * added with when it becomes ready. A queue that uses no priority behaves,
 * and costs, as before: priority 0 keys sit in one FIFO list.
 *
 * Every function may be called from any thread; only kcr_workqueue_get and
 * kcr_workqueue_shutdown_with_drain block.
 */
#ifndef KCR_WORKQUEUE_H
#define KCR_WORKQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/metrics.h"
#include "kcr/ratelimiter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_workqueue_t: opaque. */
typedef struct kcr_workqueue kcr_workqueue_t;

/*
 * kcr_workqueue_options: how to build a queue. A zeroed struct (or NULL) gives an
 * unnamed queue on the system clock with the default controller rate limiter.
 *   name          copied. Labels the metrics (both `name` and `controller`, as
 *                 controller-runtime sets them); NULL or "" keeps no metrics,
 *                 like client-go's unnamed queues.
 *   clock         borrowed, must outlive the queue; NULL: the system clock. Ready
 *                 times and metrics use it, so tests drive the queue with a fake
 *                 clock.
 *   rate_limiter  stolen on every path (destroyed with the queue, or at once if
 *                 create fails); NULL: kcr_ratelimiter_default_create(clock).
 *   metrics       borrowed, must outlive the queue; NULL: no metrics (and none
 *                 of the clock reads they cost). A named queue registers the
 *                 workqueue_* series below on it.
 *   no_priority   true: a plain client-go queue, as controller-runtime builds
 *                 when UsePriorityQueue is false: the priority given to
 *                 kcr_workqueue_add_with_opts is ignored (every key counts as
 *                 priority 0, handed out in FIFO order), and workqueue_depth
 *                 carries priority="" as controller-runtime's plain queue
 *                 labels it. false (the zero value): priorities are honoured.
 */
typedef struct kcr_workqueue_options {
  const char *name;
  kcr_clock_t *clock;
  kcr_ratelimiter_t *rate_limiter;
  kcr_metrics_registry_t *metrics;
  bool no_priority;
} kcr_workqueue_options;

/* KCR_WORKQUEUE_PRIORITY_DEFAULT: the priority of every add that names none. */
#define KCR_WORKQUEUE_PRIORITY_DEFAULT 0

/*
 * KCR_WORKQUEUE_PRIORITY_LOW: controller-runtime's handler.LowPriority (-100),
 * what a controller gives the events of an informer's initial list and of its
 * resyncs, so that real changes overtake them (kcr/controller.h).
 */
#define KCR_WORKQUEUE_PRIORITY_LOW (-100)

/*
 * kcr_workqueue_create makes a queue. opts is borrowed for the call (its
 * rate_limiter stolen, see above). *out receives a new queue, NULL on failure.
 * Returns 0, KCR_ENOMEM, KCR_ESYS, or KCR_EEXIST (opts->metrics holds a
 * clashing family of a workqueue_* name); err (may be NULL) says which.
 */
KCR_EXTERN int kcr_workqueue_create(const kcr_workqueue_options *opts, kcr_workqueue_t **out,
                                    kcr_error_t *err);

/*
 * kcr_workqueue_destroy releases the queue, the keys still in it and its rate
 * limiter. NULL is ignored. No thread may be inside any kcr_workqueue_* call on
 * q, or call one afterwards: shut down, join the workers, then destroy.
 */
KCR_EXTERN void kcr_workqueue_destroy(kcr_workqueue_t *q);

/*
 * kcr_workqueue_add marks key (borrowed, copied) dirty and queues it unless it is
 * being processed. A key already dirty is left where it is, with no allocation.
 * Returns 0, KCR_ECLOSED when the queue is shutting down (the key is dropped, as
 * client-go drops it; callers may ignore this), or KCR_ENOMEM (nothing changed).
 * Any thread; does not block beyond the queue's lock.
 */
KCR_EXTERN int kcr_workqueue_add(kcr_workqueue_t *q, const char *key);

/*
 * kcr_workqueue_add_after adds key once delay_ns has passed on the queue's clock;
 * delay_ns <= 0 adds it now. If key is already waiting, it keeps the earlier of
 * its two ready times. Counts one retry in the metrics (as client-go's
 * AddAfter does, whatever the delay). Returns 0, KCR_ECLOSED (shutting down,
 * dropped) or KCR_ENOMEM (nothing changed). Any thread; does not block.
 */
KCR_EXTERN int kcr_workqueue_add_after(kcr_workqueue_t *q, const char *key, int64_t delay_ns);

/*
 * kcr_workqueue_add_rate_limited adds key after the delay the rate limiter gives
 * for it (kcr_ratelimiter_when: one more failure for key). Returns 0,
 * KCR_ECLOSED (shutting down: the limiter has still counted the failure, as in
 * client-go) or KCR_ENOMEM (from the limiter or the queue; the key was not
 * added). Any thread; does not block.
 */
KCR_EXTERN int kcr_workqueue_add_rate_limited(kcr_workqueue_t *q, const char *key);

/*
 * kcr_workqueue_add_opts: how kcr_workqueue_add_with_opts adds a key
 * (controller-runtime's priorityqueue.AddOpts). Zeroed: a plain add.
 *   after_ns      > 0: add once this much time has passed (as add_after).
 *   rate_limited  true: add after the rate limiter's delay for the key (as
 *                 add_rate_limited: one more failure counted); with after_ns
 *                 > 0 too, the shorter of the two delays, as upstream.
 *   priority      higher is handed out first; 0 is the default and
 *                 KCR_WORKQUEUE_PRIORITY_LOW the controllers' low priority.
 *                 Any int; ignored by a queue made with no_priority.
 */
typedef struct kcr_workqueue_add_opts {
  int64_t after_ns;
  bool rate_limited;
  int priority;
} kcr_workqueue_add_opts;

/*
 * kcr_workqueue_add_with_opts adds key (borrowed, copied) as opts (borrowed for
 * the call; NULL: a plain add) says. Without a delay it is kcr_workqueue_add
 * at opts->priority: a dirty key queued at a lower priority moves up to the
 * back of opts->priority; one dirty while being processed is queued at the
 * higher of its priorities at done. With a delay it is
 * kcr_workqueue_add_after and the key becomes ready at opts->priority (a key
 * already waiting keeps the earlier ready time and the higher priority).
 * Returns 0, KCR_ECLOSED (shutting down, dropped) or KCR_ENOMEM (from the
 * limiter or the queue; nothing changed). Any thread; does not block.
 */
KCR_EXTERN int kcr_workqueue_add_with_opts(kcr_workqueue_t *q, const char *key,
                                           const kcr_workqueue_add_opts *opts);

/*
 * kcr_workqueue_forget tells the rate limiter that key succeeded: its failure
 * count starts over. It does not remove key from the queue. Any thread.
 */
KCR_EXTERN void kcr_workqueue_forget(kcr_workqueue_t *q, const char *key);

/* kcr_workqueue_num_requeues returns the rate limiter's failure count for key. */
KCR_EXTERN int kcr_workqueue_num_requeues(kcr_workqueue_t *q, const char *key);

/*
 * kcr_workqueue_get waits until a key is ready and hands it to the caller, who now
 * processes it and must call kcr_workqueue_done(q, key) when finished. *key_out
 * receives a new string (release with kcr_free), NULL on failure. Blocks; any
 * worker thread. Returns 0; KCR_ECLOSED once the queue is shutting down and
 * nothing is left queued (the worker should exit); or KCR_ENOMEM, when the copy
 * could not be made (the key stays queued; retry later).
 */
KCR_EXTERN int kcr_workqueue_get(kcr_workqueue_t *q, char **key_out);

/*
 * kcr_workqueue_get_with_priority is kcr_workqueue_get that also tells the
 * priority the key was queued at (*priority, may be NULL; 0 on a queue made
 * with no_priority), controller-runtime's GetWithPriority: a controller
 * requeues a key at the priority it came with.
 */
KCR_EXTERN int kcr_workqueue_get_with_priority(kcr_workqueue_t *q, char **key_out, int *priority);

/*
 * kcr_workqueue_done ends the processing of key (borrowed), which the caller got
 * from kcr_workqueue_get. If key was added again meanwhile it is queued again
 * now. A key that is not being processed is ignored. Any thread.
 */
KCR_EXTERN void kcr_workqueue_done(kcr_workqueue_t *q, const char *key);

/*
 * kcr_workqueue_len returns how many keys are queued and ready (not the ones
 * being processed, not the ones still waiting for their delay). For information
 * only: it may change before the caller looks at it. Any thread.
 */
KCR_EXTERN size_t kcr_workqueue_len(kcr_workqueue_t *q);

/*
 * kcr_workqueue_shutdown stops accepting keys and wakes every blocked get: gets
 * hand out what is still queued, then return KCR_ECLOSED. Returns at once, and
 * also releases a kcr_workqueue_shutdown_with_drain that is waiting (client-go's
 * forced shutdown on a second signal). Idempotent; any thread.
 */
KCR_EXTERN void kcr_workqueue_shutdown(kcr_workqueue_t *q);

/*
 * kcr_workqueue_shutdown_with_drain shuts down as kcr_workqueue_shutdown does,
 * then blocks until no key is being processed (every get has had its done), or
 * until kcr_workqueue_shutdown is called. Workers must keep calling done, and
 * keep calling get while it hands out keys, or this blocks for ever. Any thread
 * but a worker's own.
 */
KCR_EXTERN void kcr_workqueue_shutdown_with_drain(kcr_workqueue_t *q);

/* kcr_workqueue_shutting_down tells whether a shutdown has begun. Any thread. */
KCR_EXTERN int kcr_workqueue_shutting_down(kcr_workqueue_t *q);

/* kcr_workqueue_name returns the queue's name, "" when unnamed. Borrowed, lives
 * as long as q. */
KCR_EXTERN const char *kcr_workqueue_name(kcr_workqueue_t *q);

/* ---- metrics ---- */

/*
 * The series a named queue registers on kcr_workqueue_options.metrics, under
 * controller-runtime's names and HELP, all with labels name and controller
 * (both the queue's name); workqueue_depth also has priority, the decimal
 * priority the keys it counts are queued at ("0" for ordinary adds, made at
 * create; another priority's series appears when first used, as upstream), or
 * "" on a queue made with no_priority. A queue labels at most
 * KCR_WORKQUEUE_MAX_PRIORITY_LABELS priorities; keys of any further priority
 * are counted under KCR_WORKQUEUE_PRIORITY_LABEL_OVERFLOW (controller-runtime
 * v0.24 caps the label too, but then moves every priority to the overflow
 * value; here the labels already given keep counting). The two
 * duration histograms have controller-runtime's buckets,
 * ExponentialBuckets(10e-9, 10, 12): 1e-8, 1e-7, ... 1e3 seconds, plus +Inf.
 *   workqueue_depth          keys dirty (queued, or added again while processing).
 *   workqueue_adds_total     keys that became dirty.
 *   workqueue_retries_total  add_after and add_rate_limited calls accepted.
 *   workqueue_queue_duration_seconds  from becoming dirty to being handed out.
 *   workqueue_work_duration_seconds   from get to done.
 *   workqueue_unfinished_work_seconds sum of the ages of keys being processed.
 *   workqueue_longest_running_processor_seconds  the oldest of those ages.
 * The series exist (at zero) from create on. Counters, histograms and depth are
 * updated under the queue's lock with atomics; the last two gauges are computed
 * at scrape time by a collector the queue registers (client-go refreshes them
 * every 500 ms), which also moves due delayed keys first, so depth never counts
 * a due key as waiting. The series stay in the registry after destroy; a queue
 * created again with the same name continues them.
 */
#define KCR_WORKQUEUE_METRIC_DEPTH "workqueue_depth"
#define KCR_WORKQUEUE_METRIC_ADDS "workqueue_adds_total"
#define KCR_WORKQUEUE_METRIC_QUEUE_DURATION "workqueue_queue_duration_seconds"
#define KCR_WORKQUEUE_METRIC_WORK_DURATION "workqueue_work_duration_seconds"
#define KCR_WORKQUEUE_METRIC_UNFINISHED_WORK "workqueue_unfinished_work_seconds"
#define KCR_WORKQUEUE_METRIC_LONGEST_RUNNING "workqueue_longest_running_processor_seconds"
#define KCR_WORKQUEUE_METRIC_RETRIES "workqueue_retries_total"

/* KCR_WORKQUEUE_DEFAULT_PRIORITY: workqueue_depth's priority label value for
 * keys at priority 0. */
#define KCR_WORKQUEUE_DEFAULT_PRIORITY "0"

/* KCR_WORKQUEUE_MAX_PRIORITY_LABELS: distinct priority label values one queue
 * gives workqueue_depth (controller-runtime's maxRecommendedUniquePriorities). */
#define KCR_WORKQUEUE_MAX_PRIORITY_LABELS 25

/* KCR_WORKQUEUE_PRIORITY_LABEL_OVERFLOW: the priority label of keys beyond those. */
#define KCR_WORKQUEUE_PRIORITY_LABEL_OVERFLOW "exceeded_cardinality_limit"

/* The HELP text controller-runtime registers for each of them. */
#define KCR_WORKQUEUE_HELP_DEPTH "Current depth of workqueue by workqueue and priority"
#define KCR_WORKQUEUE_HELP_ADDS "Total number of adds handled by workqueue"
#define KCR_WORKQUEUE_HELP_QUEUE_DURATION                                                          \
  "How long in seconds an item stays in workqueue before being requested"
#define KCR_WORKQUEUE_HELP_WORK_DURATION                                                           \
  "How long in seconds processing an item from workqueue takes."
#define KCR_WORKQUEUE_HELP_UNFINISHED_WORK                                                         \
  "How many seconds of work has been done that is in progress and hasn't been observed by "        \
  "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "        \
  "threads by observing the rate at which this increases."
#define KCR_WORKQUEUE_HELP_LONGEST_RUNNING                                                         \
  "How many seconds has the longest running processor for workqueue been running."
#define KCR_WORKQUEUE_HELP_RETRIES "Total number of retries handled by workqueue"

#ifdef __cplusplus
}
#endif

#endif /* KCR_WORKQUEUE_H */
