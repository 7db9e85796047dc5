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

typedef struct kcr__transfer kcr__transfer_t;

/*
 * kcr__transfer_done_cb runs on the loop thread when a transfer ends: result is
 * libcurl's code, or CURLE_ABORTED_BY_CALLBACK when the loop stopped or the
 * transfer was cancelled. The easy handle has been removed from the multi handle;
 * its owner may clean it up or reuse it.
 */
typedef void (*kcr__transfer_done_cb)(kcr__transfer_t *t, CURLcode result);

/*
 * kcr__transfer_t: embedded in the owner's request struct. easy and done are set
 * by the owner; the links belong to the loop.
 */
struct kcr__transfer {
  CURL *easy;
  kcr__transfer_done_cb done;
  kcr__transfer_t *prev, *next; /* loop thread: the loop's active list */
  int active;                   /* loop thread */
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

#endif /* KCR_LOOP_INTERNAL_H */
