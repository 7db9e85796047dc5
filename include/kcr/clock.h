/* SPDX-License-Identifier: MIT */
/*
 * kcr/clock.h: the source of time for every timer, backoff, rate limiter and
 * lease in kcr, so that tests can swap in a fake clock and step time by hand
 * (client-go's clock.Clock / testing.FakeClock).
 *
 * A clock has two faces: a monotonic reading in nanoseconds (for durations,
 * deadlines and timers; never jumps) and a wall reading (for timestamps written to
 * the API server). The fake clock advances both only when told to.
 */
#ifndef KCR_CLOCK_H
#define KCR_CLOCK_H

#include <pthread.h>
#include <stdint.h>

#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_clock_t: opaque; the system clock or a fake one. */
typedef struct kcr_clock kcr_clock_t;

/*
 * kcr_clock_system returns the process's real clock (CLOCK_MONOTONIC and
 * CLOCK_REALTIME). Borrowed, static storage, never NULL; any thread.
 */
KCR_EXTERN kcr_clock_t *kcr_clock_system(void);

/* kcr_clock_now returns the monotonic reading in nanoseconds. Any thread. */
KCR_EXTERN int64_t kcr_clock_now(kcr_clock_t *c);

/* kcr_clock_wall returns the wall reading. Any thread. */
KCR_EXTERN kcr_time_t kcr_clock_wall(kcr_clock_t *c);

/*
 * kcr_clock_timedwait waits on cond (mu held by the caller, as pthread_cond_wait)
 * until it is signalled or the monotonic reading of c reaches deadline_ns. Returns
 * 0 when woken (perhaps spuriously) and KCR_ETIMEDOUT once the deadline has
 * passed; callers loop on their own predicate either way. cond must have been made
 * with kcr_clock_cond_init. On a fake clock the wait sleeps at most a millisecond
 * of real time per call, so a loop sees a step soon after it happens.
 */
KCR_EXTERN int kcr_clock_timedwait(kcr_clock_t *c, pthread_cond_t *cond, pthread_mutex_t *mu,
                                   int64_t deadline_ns);

/*
 * kcr_clock_cond_init initialises a condition variable whose timed waits measure
 * CLOCK_MONOTONIC, as kcr_clock_timedwait needs. Returns 0 or KCR_ESYS.
 */
KCR_EXTERN int kcr_clock_cond_init(pthread_cond_t *cond);

/*
 * kcr_fake_clock_create makes a fake clock whose monotonic reading starts at
 * mono_start_ns and whose wall reading starts at wall_start. *out receives a new
 * clock, NULL on failure. Returns 0 or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_fake_clock_create(int64_t mono_start_ns, kcr_time_t wall_start,
                                     kcr_clock_t **out, kcr_error_t *err);

/*
 * kcr_fake_clock_step moves both readings of a fake clock forward by ns >= 0.
 * Any thread. Calling it on the system clock is a programming error (asserted).
 */
KCR_EXTERN void kcr_fake_clock_step(kcr_clock_t *c, int64_t ns);

/*
 * kcr_clock_destroy releases a fake clock; nothing may use it afterwards.
 * NULL and the system clock are ignored.
 */
KCR_EXTERN void kcr_clock_destroy(kcr_clock_t *c);

#ifdef __cplusplus
}
#endif

#endif /* KCR_CLOCK_H */
