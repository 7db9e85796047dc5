/* SPDX-License-Identifier: MIT */
/*
 * kcr/ratelimiter.h: how long to wait before retrying a key, as client-go's
 * workqueue rate limiters decide it. A limiter answers three questions about a
 * key: when (the delay before the next attempt; asking counts as a failure),
 * forget (the key succeeded: start over) and num_requeues (failures so far).
 *
 * Built-in limiters: per-item exponential, token bucket, fast-slow, max-of, and
 * the controller default, max(exponential 5 ms..1000 s, bucket 10 qps / burst 100).
 * Any other policy plugs in through kcr_ratelimiter_create with a table of
 * callbacks. All built-in limiters are safe to call from any thread.
 *
 * Durations are int64_t nanoseconds; KCR_RATELIMITER_NEVER is client-go's
 * InfDuration (a token bucket that can never grant a token).
 */
#ifndef KCR_RATELIMITER_H
#define KCR_RATELIMITER_H

#include <stddef.h>
#include <stdint.h>

#include "kcr/clock.h"
#include "kcr/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_ratelimiter_t: opaque; one of the built-in limiters or a custom one. */
typedef struct kcr_ratelimiter kcr_ratelimiter_t;

/* KCR_RATELIMITER_NEVER: the delay meaning "not in this process's lifetime". */
#define KCR_RATELIMITER_NEVER INT64_MAX

/*
 * kcr_ratelimiter_ops: the callbacks of a custom limiter. data is the pointer
 * given to kcr_ratelimiter_create. The callbacks run on the calling thread of the
 * matching kcr_ratelimiter_* function (any thread: a custom limiter does its own
 * locking) and must not block.
 *   when          store the delay before key's next attempt in *delay_ns (>= 0)
 *                 and count a failure; return 0 or a negative kcr_err.
 *   forget        stop tracking key. May be NULL (nothing to forget).
 *   num_requeues  failures counted for key. May be NULL (always 0).
 *   destroy       release data. May be NULL.
 */
typedef struct kcr_ratelimiter_ops {
  int (*when)(void *data, const char *key, int64_t *delay_ns);
  void (*forget)(void *data, const char *key);
  int (*num_requeues)(void *data, const char *key);
  void (*destroy)(void *data);
} kcr_ratelimiter_ops;

/*
 * kcr_ratelimiter_create wraps a custom limiter. ops is borrowed and must outlive
 * the limiter (a static table); ops->when is required. data is stolen on every
 * path: on failure ops->destroy(data) has already run. *out receives a new
 * limiter, NULL on failure. Returns 0 or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_ratelimiter_create(const kcr_ratelimiter_ops *ops, void *data,
                                      kcr_ratelimiter_t **out, kcr_error_t *err);

/*
 * kcr_ratelimiter_exponential_create: client-go's ItemExponentialFailureRateLimiter.
 * The n-th call of when for a key (n from 0) returns base_ns * 2^n, capped at
 * max_ns; forget resets the key. base_ns >= 0, max_ns >= 0, else KCR_EINVAL.
 * *out receives a new limiter, NULL on failure. Returns 0, KCR_EINVAL or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_ratelimiter_exponential_create(int64_t base_ns, int64_t max_ns,
                                                  kcr_ratelimiter_t **out, kcr_error_t *err);

/*
 * kcr_ratelimiter_bucket_create: client-go's BucketRateLimiter over
 * golang.org/x/time/rate: a bucket of `burst` tokens, full at the start,
 * refilled at qps tokens per second. Each when takes a token whether or not one
 * is there (the balance goes negative) and returns how long until the token it
 * took exists: 0 while the bucket has tokens. The bucket does not track keys:
 * forget does nothing and num_requeues is 0. qps > 0 (INFINITY: no limit,
 * always 0); burst >= 0 (0 with a finite qps: every when is
 * KCR_RATELIMITER_NEVER, as in Go). clock is borrowed (NULL: the system clock)
 * and must outlive the limiter. *out receives a new limiter, NULL on failure.
 * Returns 0, KCR_EINVAL or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_ratelimiter_bucket_create(double qps, int burst, kcr_clock_t *clock,
                                             kcr_ratelimiter_t **out, kcr_error_t *err);

/*
 * kcr_ratelimiter_fast_slow_create: client-go's ItemFastSlowRateLimiter. The first
 * max_fast_attempts calls of when for a key return fast_ns, later ones slow_ns;
 * forget resets the key. All arguments >= 0, else KCR_EINVAL. *out receives a new
 * limiter, NULL on failure. Returns 0, KCR_EINVAL or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_ratelimiter_fast_slow_create(int64_t fast_ns, int64_t slow_ns,
                                                int max_fast_attempts, kcr_ratelimiter_t **out,
                                                kcr_error_t *err);

/*
 * kcr_ratelimiter_max_of_create: client-go's MaxOfRateLimiter. when asks every
 * limiter (so each counts the failure) and returns the longest delay;
 * num_requeues is the largest count; forget forgets in all. The n limiters
 * (n >= 1, none NULL) are stolen on every path, including failure; the array
 * itself is borrowed. *out receives a new limiter, NULL on failure. Returns 0,
 * KCR_EINVAL or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_ratelimiter_max_of_create(kcr_ratelimiter_t *const *limiters, size_t n,
                                             kcr_ratelimiter_t **out, kcr_error_t *err);

/*
 * kcr_ratelimiter_default_create: controller-runtime's default controller rate
 * limiter, max(exponential 5 ms .. 1000 s, bucket 10 qps / burst 100). clock is
 * borrowed as for the bucket. *out receives a new limiter, NULL on failure.
 * Returns 0 or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_ratelimiter_default_create(kcr_clock_t *clock, kcr_ratelimiter_t **out,
                                              kcr_error_t *err);

/*
 * kcr_ratelimiter_when stores in *delay_ns how long key should wait before its
 * next attempt and counts a failure for it. key is borrowed for the call. Any
 * thread. Returns 0, or KCR_ENOMEM when a per-item limiter cannot record a new
 * key (*delay_ns is then 0 and nothing was counted).
 */
KCR_EXTERN int kcr_ratelimiter_when(kcr_ratelimiter_t *rl, const char *key, int64_t *delay_ns);

/* kcr_ratelimiter_forget stops tracking key (it succeeded). Any thread. */
KCR_EXTERN void kcr_ratelimiter_forget(kcr_ratelimiter_t *rl, const char *key);

/* kcr_ratelimiter_num_requeues returns the failures counted for key. Any thread. */
KCR_EXTERN int kcr_ratelimiter_num_requeues(kcr_ratelimiter_t *rl, const char *key);

/*
 * kcr_ratelimiter_destroy releases rl (and, for max-of, the limiters it holds).
 * NULL is ignored. No other call on rl may be running or follow.
 */
KCR_EXTERN void kcr_ratelimiter_destroy(kcr_ratelimiter_t *rl);

#ifdef __cplusplus
}
#endif

#endif /* KCR_RATELIMITER_H */
