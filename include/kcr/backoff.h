/* SPDX-License-Identifier: MIT */
/*
 * kcr/backoff.h: exponential backoff with jitter, as client-go's wait.Backoff and
 * the reflector's backoff manager compute it: each step returns the current delay
 * plus up to jitter times itself at random, then multiplies the delay by factor up
 * to cap; after reset_after of quiet (no step asked for), the delay starts over
 * from initial. The reflector's defaults are KCR_BACKOFF_REFLECTOR.
 */
#ifndef KCR_BACKOFF_H
#define KCR_BACKOFF_H

#include <stdint.h>

#include "kcr/clock.h"
#include "kcr/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kcr_backoff_config: initial_ns > 0; cap_ns >= initial_ns (0: no cap);
 * factor >= 1.0; jitter >= 0.0 (0: none); reset_after_ns (0: never reset).
 */
typedef struct kcr_backoff_config {
  int64_t initial_ns;
  int64_t cap_ns;
  double factor;
  double jitter;
  int64_t reset_after_ns;
} kcr_backoff_config;

/* The reflector's backoff: 800 ms doubling to 30 s, jitter 1.0, reset after 2 min. */
#define KCR_BACKOFF_REFLECTOR                                                                      \
  ((kcr_backoff_config){800 * KCR_NSEC_PER_MSEC, 30 * KCR_NSEC_PER_SEC, 2.0, 1.0,                  \
                        120 * KCR_NSEC_PER_SEC})

/* kcr_backoff_t: caller-allocated state; one owner thread (no locking inside). */
typedef struct kcr_backoff {
  kcr_backoff_config config;
  kcr_clock_t *clock; /* borrowed */
  int64_t current_ns;
  int64_t last_step_ns;
  int stepped;
  uint64_t rng;
} kcr_backoff_t;

/*
 * kcr_backoff_init prepares b. clock is borrowed (NULL: the system clock) and
 * must outlive b. seed 0 picks a random seed; tests pass a fixed one to get a
 * repeatable sequence. Returns 0 or KCR_EINVAL for a config outside the ranges
 * documented on kcr_backoff_config.
 */
KCR_EXTERN int kcr_backoff_init(kcr_backoff_t *b, kcr_backoff_config config, kcr_clock_t *clock,
                                uint64_t seed);

/*
 * kcr_backoff_next returns the delay to wait before the next attempt, in
 * nanoseconds, and advances the sequence.
 */
KCR_EXTERN int64_t kcr_backoff_next(kcr_backoff_t *b);

/* kcr_backoff_reset starts the sequence over from initial (after a success). */
KCR_EXTERN void kcr_backoff_reset(kcr_backoff_t *b);

#ifdef __cplusplus
}
#endif

#endif /* KCR_BACKOFF_H */
