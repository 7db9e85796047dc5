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
 * Every function may be called from any thread; only kcr_workqueue_get and
 * kcr_workqueue_shutdown_with_drain block.
 */
#ifndef KCR_WORKQUEUE_H
#define KCR_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/error.h"
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
 *                 like client-go's unnamed queues, and skips the clock reads
 *                 they cost.
 *   clock         borrowed, must outlive the queue; NULL: the system clock. Ready
 *                 times and metrics use it, so tests drive the queue with a fake
 *                 clock.
 *   rate_limiter  stolen on every path (destroyed with the queue, or at once if
 *                 create fails); NULL: kcr_ratelimiter_default_create(clock).
 */
typedef struct kcr_workqueue_options {
  const char *name;
  kcr_clock_t *clock;
  kcr_ratelimiter_t *rate_limiter;
} kcr_workqueue_options;

/*
 * kcr_workqueue_create makes a queue. opts is borrowed for the call (its
 * rate_limiter stolen, see above). *out receives a new queue, NULL on failure.
 * Returns 0, KCR_ENOMEM or KCR_ESYS; err (may be NULL) says which.
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
 * The metrics a named queue keeps, under controller-runtime's names (all with
 * labels name and controller, both the queue's name; workqueue_depth also has
 * priority, "" for this queue). The queue keeps the numbers itself, under its
 * lock, with no callback on the hot path; the metrics registry reads them with
 * kcr_workqueue_metrics_snapshot at scrape time.
 */
#define KCR_WORKQUEUE_METRIC_DEPTH "workqueue_depth"
#define KCR_WORKQUEUE_METRIC_ADDS "workqueue_adds_total"
#define KCR_WORKQUEUE_METRIC_QUEUE_DURATION "workqueue_queue_duration_seconds"
#define KCR_WORKQUEUE_METRIC_WORK_DURATION "workqueue_work_duration_seconds"
#define KCR_WORKQUEUE_METRIC_UNFINISHED_WORK "workqueue_unfinished_work_seconds"
#define KCR_WORKQUEUE_METRIC_LONGEST_RUNNING "workqueue_longest_running_processor_seconds"
#define KCR_WORKQUEUE_METRIC_RETRIES "workqueue_retries_total"

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

/*
 * KCR_WORKQUEUE_HISTOGRAM_BUCKETS: the two duration histograms have
 * controller-runtime's buckets, ExponentialBuckets(10e-9, 10, 12): upper bounds
 * 1e-8, 1e-7, ... 1e3 seconds (kcr_workqueue_histogram_bound), plus +Inf.
 */
#define KCR_WORKQUEUE_HISTOGRAM_BUCKETS 12

/*
 * kcr_workqueue_histogram: a Prometheus histogram. buckets[i] is cumulative: the
 * observations <= kcr_workqueue_histogram_bound(i); count includes those above
 * the last bound (+Inf).
 */
typedef struct kcr_workqueue_histogram {
  uint64_t buckets[KCR_WORKQUEUE_HISTOGRAM_BUCKETS];
  uint64_t count;
  double sum_seconds;
} kcr_workqueue_histogram;

/*
 * kcr_workqueue_metrics: one consistent reading of a queue's metrics.
 *   depth                   keys dirty (queued, or added again while processing):
 *                           client-go's depth gauge.
 *   adds_total              keys that became dirty.
 *   retries_total           add_after and add_rate_limited calls accepted.
 *   queue_duration          from becoming dirty to being handed out by get.
 *   work_duration           from get to done.
 *   unfinished_work_seconds sum of the ages of keys being processed now.
 *   longest_running_processor_seconds  the oldest of those ages.
 * client-go refreshes the last two every 500 ms; here they are computed at the
 * moment of the snapshot.
 */
typedef struct kcr_workqueue_metrics {
  int64_t depth;
  uint64_t adds_total;
  uint64_t retries_total;
  kcr_workqueue_histogram queue_duration;
  kcr_workqueue_histogram work_duration;
  double unfinished_work_seconds;
  double longest_running_processor_seconds;
} kcr_workqueue_metrics;

/* kcr_workqueue_histogram_bound returns the upper bound of bucket i, in seconds. */
KCR_EXTERN double kcr_workqueue_histogram_bound(int i);

/*
 * kcr_workqueue_metrics_snapshot fills *out (caller's storage). Returns 0, or
 * KCR_ENOTSUP for an unnamed queue (which keeps no metrics; *out is zeroed). Any
 * thread; holds the queue's lock for a time proportional to the number of keys
 * being processed.
 */
KCR_EXTERN int kcr_workqueue_metrics_snapshot(kcr_workqueue_t *q, kcr_workqueue_metrics *out);

#ifdef __cplusplus
}
#endif

#endif /* KCR_WORKQUEUE_H */
