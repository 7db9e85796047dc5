/* SPDX-License-Identifier: MIT */
/*
 * worker_internal.h: the server's worker thread (worker.c), started and
 * stopped by server.c.
 */
#ifndef KCR_WORKER_INTERNAL_H
#define KCR_WORKER_INTERNAL_H

#include <stddef.h>

#include "server/server_internal.h"

/* kcr__worker_main is the worker thread's body (pthread_create's start routine,
 * arg the kcr_server_t): it answers queued jobs until jobs_stop. */
void *kcr__worker_main(void *arg);

/* kcr__worker_start_auth starts the auth pool's threads (options.metrics_auth).
 * 0, or -1 when a thread could not be made (those made are stopped by
 * kcr__worker_stop). The creating thread, after the worker has started. */
int kcr__worker_start_auth(kcr_server_t *s);

/* kcr__worker_stop joins the worker and the auth pool and frees the jobs they
 * never took and the orphans whose post failed (their connections are gone).
 * The destroying thread, once the loop no longer runs our callbacks. */
void kcr__worker_stop(kcr_server_t *s);

/* kcr__worker_load_certs reads the certificate files into a new context and
 * swaps it in (on failure the old one stays, msg says why); counted as
 * certwatcher counts, a failure only when count_error is set. The worker
 * thread, or create before it starts. 0 or KCR_ECONFIG. */
int kcr__worker_load_certs(kcr_server_t *s, int count_error, char *msg, size_t size);

#endif /* KCR_WORKER_INTERNAL_H */
