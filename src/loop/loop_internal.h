/* SPDX-License-Identifier: MIT */
/*
 * loop_internal.h: what the client layer needs from the loop beyond its public
 * API: running libcurl transfers on the loop's multi handle. Loop thread only.
 */
#ifndef KCR_LOOP_INTERNAL_H
#define KCR_LOOP_INTERNAL_H

#include <curl/curl.h>
#include <uv.h>

#include "kcr/loop.h"
#include "util/list.h"

typedef struct kcr__transfer kcr__transfer_t;

/*
 * kcr__transfer_done_cb runs on the loop thread when a transfer ends: result is
 * libcurl's code, or CURLE_ABORTED_BY_CALLBACK when the loop stopped or the
 * transfer was cancelled. The easy handle has been removed from the multi handle;
 * its owner may clean it up or reuse it.
 */
typedef void (*kcr__transfer_done_cb)(kcr__transfer_t *t, CURLcode result);

/*
 * kcr__transfer_t: embedded in the owner's request struct, zero-initialised.
 * easy, done and nudge_when_quiet are set by the owner; the rest belongs to the
 * loop.
 *
 * nudge_when_quiet: 1 for a transfer that ends on its own (a request, not a
 * watch). When such a transfer has received part of an HTTP/2 response and then
 * nothing for a whole quiet period, the loop sends a HEAD / on the same
 * connection so that bytes arrive: libcurl before 8.1.0 can leave the end of a
 * stream unprocessed inside nghttp2 until the connection receives more input
 * (loop.c explains). Watches stay quiet for minutes by design: leave it 0.
 */
struct kcr__transfer {
  CURL *easy;
  kcr__transfer_done_cb done;
  int nudge_when_quiet;
  kcr__list_node_t link; /* loop thread: in the loop's active list */
  int active;            /* loop thread */
  CURL *nudge;           /* loop thread: the HEAD sent for it, or NULL */
  curl_off_t seen;       /* loop thread: bytes received at the last check */
  curl_off_t nudged_at;  /* loop thread: seen when the last nudge went out */
};

/*
 * kcr__loop_add_transfer starts t->easy on the loop's multi handle. Returns 0, or
 * KCR_ECLOSED when the loop is stopping, or KCR_EIO when libcurl refuses; in
 * either error case t->done is not called. Loop thread only.
 */
int kcr__loop_add_transfer(kcr_loop_t *loop, kcr__transfer_t *t);

/*
 * kcr__loop_cancel_transfer stops an active transfer and calls its done callback
 * with CURLE_ABORTED_BY_CALLBACK before returning. A transfer that is not active
 * is left alone. Loop thread only.
 */
void kcr__loop_cancel_transfer(kcr_loop_t *loop, kcr__transfer_t *t);

/*
 * kcr__loop_uv returns the loop's libuv loop, for other loop-thread code that
 * owns handles of its own (the probes and metrics server). Borrowed, lives as
 * long as loop. Handles on it are touched on the loop thread only; the loop's
 * shutdown closes any still open with no close callback, so their owner frees
 * them after kcr_loop_stop.
 */
uv_loop_t *kcr__loop_uv(kcr_loop_t *loop);

/*
 * kcr__loop_set_quiet_ms sets the quiet period after which a transfer with
 * nudge_when_quiet gets its connection nudged; 0 turns nudging off. The default
 * is 250 ms with libcurl older than 8.1.0 and 0 with a newer one. For tests:
 * call before kcr_loop_start, or on the loop thread.
 */
void kcr__loop_set_quiet_ms(kcr_loop_t *loop, uint64_t ms);

/* kcr__loop_nudges returns how many nudges the loop has sent. Any thread. */
uint64_t kcr__loop_nudges(kcr_loop_t *loop);

#endif /* KCR_LOOP_INTERNAL_H */
