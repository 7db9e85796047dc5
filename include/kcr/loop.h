/* SPDX-License-Identifier: MIT */
/*
 * kcr/loop.h: the I/O loop — one thread that owns every socket kcr opens. It runs
 * a libuv loop with one libcurl multi handle glued to it (uv_poll per socket, a
 * uv_timer for curl's timeouts), so all requests and watches share connections
 * (HTTP/2 multiplexing when the server offers it). Other threads hand it work with
 * kcr_loop_post.
 *
 * The loop only moves bytes. A request's answer is collected into a buffer that
 * the waiting caller parses; a watch's stream is appended to the watch's inbox,
 * which its consumer decodes (kcr_watch_run); the HTTP server's sockets are read
 * and written here, its answers computed elsewhere. What runs on the loop thread
 * is libuv's and libcurl's callbacks, closures posted with kcr_loop_post (which
 * must not block), and a client's request metrics (a counter update, see
 * kcr_client_options). It never waits for a lock held around user code: no
 * handler, transform, predicate, reconciler, probe check or metric collector
 * runs here or under a lock the loop takes. test_client_watch and the
 * integration test test_loop_isolation_it check it.
 *
 * Lifecycle: kcr_loop_create -> kcr_loop_start -> (post work) -> kcr_loop_stop ->
 * kcr_loop_destroy. Most users never touch a loop directly: kcr_client_create
 * makes one unless given one to share.
 */
#ifndef KCR_LOOP_H
#define KCR_LOOP_H

#include <stdint.h>

#include "kcr/common.h"
#include "kcr/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_loop_t: opaque. */
typedef struct kcr_loop kcr_loop_t;

/* kcr_loop_fn: work posted to the loop; runs on the loop thread, must not block. */
typedef void (*kcr_loop_fn)(kcr_loop_t *loop, void *data);

/*
 * kcr_loop_create makes a stopped loop. *out: new loop, NULL on failure. Errors:
 * KCR_ENOMEM, KCR_ESYS (libuv or libcurl could not initialise). Any thread.
 */
KCR_EXTERN int kcr_loop_create(kcr_loop_t **out, kcr_error_t *err);

/*
 * kcr_loop_start starts the loop thread. Returns 0, KCR_EINVAL if it was started
 * before, or KCR_ESYS. Any thread except the loop's.
 */
KCR_EXTERN int kcr_loop_start(kcr_loop_t *loop, kcr_error_t *err);

/*
 * kcr_loop_post queues fn(loop, data) to run on the loop thread, in posting order.
 * Returns 0, or KCR_ECLOSED once the loop is stopping (fn will then never run), or
 * KCR_ENOMEM. Posts coalesce: the loop takes the whole queue per wake-up. Any
 * thread, the loop's included.
 */
KCR_EXTERN int kcr_loop_post(kcr_loop_t *loop, kcr_loop_fn fn, void *data);

/*
 * kcr_loop_stop stops accepting posts, aborts every transfer still running (each
 * completes with KCR_ECANCELED), runs what was already posted, closes every handle
 * and joins the thread. Idempotent. Any thread except the loop's.
 */
KCR_EXTERN void kcr_loop_stop(kcr_loop_t *loop);

/* kcr_loop_destroy stops the loop if needed and frees it. NULL is ignored. */
KCR_EXTERN void kcr_loop_destroy(kcr_loop_t *loop);

/* kcr_loop_on_thread tells whether the caller is the loop thread. */
KCR_EXTERN int kcr_loop_on_thread(const kcr_loop_t *loop);

/*
 * kcr_loop_stats: counters for tests and metrics, read with kcr_loop_get_stats.
 *   connections_opened  TCP connections libcurl opened (a test checks that many
 *                       watches share one connection over HTTP/2).
 *   transfers_started / transfers_done  requests begun and finished.
 *   wakeups             times the doorbell woke the loop for posted work.
 */
typedef struct kcr_loop_stats {
  uint64_t connections_opened;
  uint64_t transfers_started;
  uint64_t transfers_done;
  uint64_t wakeups;
} kcr_loop_stats;

/* kcr_loop_get_stats copies the counters. Any thread. */
KCR_EXTERN void kcr_loop_get_stats(kcr_loop_t *loop, kcr_loop_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* KCR_LOOP_H */
