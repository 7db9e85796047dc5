/* SPDX-License-Identifier: MIT */
/*
 * clock.c: the system clock and the fake clock behind kcr_clock_t.
 *
 * A fake clock holds both readings under its own mutex. Waiting on a fake clock
 * cannot use the kernel's timed wait (its deadline is in fake time), and wiring
 * every waiter's condition variable into the clock would give the clock a lock
 * order against its users' locks; instead a fake wait sleeps at most 1 ms of real
 * time and lets the caller's loop look at the fake time again. Tests pay a
 * millisecond of latency per step; production code pays nothing.
 */
#include <assert.h>
#include <errno.h>
#include <time.h>

#include "kcr/clock.h"
#include "util/alloc.h"

struct kcr_clock {
  int fake;
  pthread_mutex_t mu;
  int64_t mono_ns; /* protected by mu */
  kcr_time_t wall; /* protected by mu */
};

static kcr_clock_t system_clock = {0, PTHREAD_MUTEX_INITIALIZER, 0, {0, 0}};

kcr_clock_t *kcr_clock_system(void) {
  return &system_clock;
}

static int64_t mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * KCR_NSEC_PER_SEC + ts.tv_nsec;
}

int64_t kcr_clock_now(kcr_clock_t *c) {
  int64_t v;
  if (!c || !c->fake)
    return mono_now();
  pthread_mutex_lock(&c->mu);
  v = c->mono_ns;
  pthread_mutex_unlock(&c->mu);
  return v;
}

kcr_time_t kcr_clock_wall(kcr_clock_t *c) {
  kcr_time_t t;
  if (!c || !c->fake) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    t.sec = ts.tv_sec;
    t.nsec = (int32_t)ts.tv_nsec;
    return t;
  }
  pthread_mutex_lock(&c->mu);
  t = c->wall;
  pthread_mutex_unlock(&c->mu);
  return t;
}

int kcr_clock_cond_init(pthread_cond_t *cond) {
  pthread_condattr_t attr;
  int rc;
  if (pthread_condattr_init(&attr))
    return KCR_ESYS;
  rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (!rc)
    rc = pthread_cond_init(cond, &attr);
  pthread_condattr_destroy(&attr);
  return rc ? KCR_ESYS : 0;
}

int kcr_clock_timedwait(kcr_clock_t *c, pthread_cond_t *cond, pthread_mutex_t *mu,
                        int64_t deadline_ns) {
  struct timespec ts;
  int64_t real_deadline;

  if (kcr_clock_now(c) >= deadline_ns)
    return KCR_ETIMEDOUT;
  if (c && c->fake)
    real_deadline = mono_now() + KCR_NSEC_PER_MSEC;
  else
    real_deadline = deadline_ns;
  ts.tv_sec = (time_t)(real_deadline / KCR_NSEC_PER_SEC);
  ts.tv_nsec = (long)(real_deadline % KCR_NSEC_PER_SEC);
  if (pthread_cond_timedwait(cond, mu, &ts) == ETIMEDOUT && kcr_clock_now(c) >= deadline_ns)
    return KCR_ETIMEDOUT;
  return 0;
}

static int make_fake_clock(int64_t mono_start_ns, kcr_time_t wall_start, kcr_clock_t **out) {
  kcr_clock_t *c = kcr__calloc(1, sizeof(*c));
  *out = NULL;
  if (!c)
    return KCR_ENOMEM;
  if (pthread_mutex_init(&c->mu, NULL)) {
    kcr__free(c);
    return KCR_ESYS;
  }
  c->fake = 1;
  c->mono_ns = mono_start_ns;
  c->wall = wall_start;
  *out = c;
  return 0;
}

int kcr_fake_clock_create(int64_t mono_start_ns, kcr_time_t wall_start, kcr_clock_t **out,
                          kcr_error_t *err) {
  int rc = make_fake_clock(mono_start_ns, wall_start, out);
  if (rc)
    kcr_error_set(err, rc, "fake clock: %s",
                  rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

void kcr_fake_clock_step(kcr_clock_t *c, int64_t ns) {
  assert(c && c->fake && ns >= 0);
  pthread_mutex_lock(&c->mu);
  c->mono_ns += ns;
  c->wall = kcr_time_add_ns(c->wall, ns);
  pthread_mutex_unlock(&c->mu);
}

void kcr_clock_destroy(kcr_clock_t *c) {
  if (!c || !c->fake)
    return;
  pthread_mutex_destroy(&c->mu);
  kcr__free(c);
}
