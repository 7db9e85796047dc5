/* SPDX-License-Identifier: MIT */
/*
 * backoff.c: the exponential backoff of client-go's wait.Backoff.Step as the
 * reflector's backoff manager drives it: the delay returned is the current one
 * with jitter added on top (never below it), then the current one grows by factor
 * up to the cap; a step asked for more than reset_after since the previous one
 * starts over from initial, because the failures it answered are long past.
 */
#include "kcr/backoff.h"
#include "kcr/error.h"
#include "kcr/rand.h"

int kcr_backoff_init(kcr_backoff_t *b, kcr_backoff_config config, kcr_clock_t *clock,
                     uint64_t seed) {
  if (config.initial_ns <= 0 || config.factor < 1.0 || config.jitter < 0.0 ||
      (config.cap_ns != 0 && config.cap_ns < config.initial_ns) || config.reset_after_ns < 0)
    return KCR_EINVAL;
  b->config = config;
  b->clock = clock ? clock : kcr_clock_system();
  b->current_ns = config.initial_ns;
  b->last_step_ns = 0;
  b->stepped = 0;
  b->rng = seed ? seed : kcr_rand_seed();
  return 0;
}

void kcr_backoff_reset(kcr_backoff_t *b) {
  b->current_ns = b->config.initial_ns;
}

int64_t kcr_backoff_next(kcr_backoff_t *b) {
  int64_t now = kcr_clock_now(b->clock), delay;
  double grown;

  if (b->stepped && b->config.reset_after_ns > 0 &&
      now - b->last_step_ns > b->config.reset_after_ns)
    kcr_backoff_reset(b);
  b->stepped = 1;
  b->last_step_ns = now;

  delay = b->current_ns;
  grown = (double)b->current_ns * b->config.factor;
  if (b->config.cap_ns > 0 && grown > (double)b->config.cap_ns)
    b->current_ns = b->config.cap_ns;
  else if (grown >= (double)INT64_MAX / 2)
    b->current_ns = INT64_MAX / 2;
  else
    b->current_ns = (int64_t)grown;
  if (b->config.jitter > 0.0)
    delay += (int64_t)(kcr_rand_double(&b->rng) * b->config.jitter * (double)delay);
  return delay;
}
