/* SPDX-License-Identifier: MIT */
/*
 * test_shard_handover_it.c: moving hash ranges between shard members without
 * overlap (issue 27, "handover with no overlap"), against the real apiserver.
 * Members of one ring (each its own identity and Lease) record every change
 * of their effective set on the monotonic clock, and their drain callback
 * takes DRAIN_MS (reconciles in flight). A checker replays the records in
 * time order and fails if two members' effective sets ever overlap. Scenes:
 *  - a alone takes the whole space;
 *  - b joins: a shrinks and drains before b grows (b's grow comes after a's
 *    drain returned), and the two tile the space;
 *  - a stops gracefully (a SIGTERM): it drains everything and deletes its
 *    Lease (gone when stop returns), and b takes the whole space sooner than
 *    the crash below is covered (the control of the same run);
 *  - c joins, then b crashes (no drain, its Lease left behind): c takes b's
 *    part only after seeing b's Lease unchanged for a lease duration.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/apierror.h"
#include "kcr/client.h"
#include "kcr/metrics.h"
#include "kcr/shard_member.h"
#include "kcr/sharding.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"
#include "manager/shard_member_internal.h"

#define LEASE_S 4
#define DRAIN_MS 300
#define MAX_EVENTS 256

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];

/* event: a member's effective set changed at t (monotonic ns), or its drain
 * returned (drained). */
typedef struct event {
  int64_t t;
  int who;
  bool drained;
  kcr_shard_set_t *set; /* the new effective set (NULL for drained) */
} event_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static event_t events[MAX_EVENTS];
static int nevents;

static int64_t mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * KCR_NSEC_PER_SEC + t.tv_nsec;
}

static void record(int who, const kcr_shard_set_t *set, bool drained) {
  pthread_mutex_lock(&mu);
  if (nevents < MAX_EVENTS) {
    event_t *e = &events[nevents++];
    e->t = mono();
    e->who = who;
    e->drained = drained;
    e->set = NULL;
    if (set)
      kcr_shard_set_copy(set, &e->set, NULL);
  }
  pthread_mutex_unlock(&mu);
}

static int64_t shrunk_at[3]; /* when each member last changed its set */

static void on_effective(const kcr_shard_set_t *effective, void *data) {
  shrunk_at[*(const int *)data] = mono(); /* the start of a drain, when it shrinks */
  record(*(const int *)data, effective, false);
}

/* on_drain: the reconciles in flight take DRAIN_MS after the shrink */
static bool on_drain(const kcr_shard_set_t *keep, void *data) {
  int who = *(const int *)data;
  (void)keep;
  if (mono() - shrunk_at[who] < DRAIN_MS * KCR_NSEC_PER_MSEC)
    return false;
  record(who, NULL, true);
  return true;
}

/* overlap: whether a and b share a hash. */
static bool overlap(const kcr_shard_set_t *a, const kcr_shard_set_t *b) {
  kcr_shard_set_t *both = NULL;
  bool any;
  assert_int_equal(kcr_shard_set_intersect(a, b, &both, NULL), 0);
  any = kcr_shard_set_ranges(both, NULL) > 0;
  kcr_shard_set_destroy(both);
  return any;
}

/*
 * check_no_overlap replays the events: a member's set counts from the
 * event that shrinks it only once its drain has returned (until then its
 * reconciles in flight still run on the old set), and from the event that
 * grows it at once.
 */
static void check_no_overlap(int members) {
  const kcr_shard_set_t *held[8] = {0};
  const kcr_shard_set_t *pending[8] = {0};
  pthread_mutex_lock(&mu);
  for (int i = 0; i < nevents; i++) {
    event_t *e = &events[i];
    if (e->drained) {
      if (pending[e->who]) {
        held[e->who] = pending[e->who];
        pending[e->who] = NULL;
      }
    } else if (held[e->who] && kcr_shard_set_share(e->set) < kcr_shard_set_share(held[e->who])) {
      pending[e->who] = e->set; /* a shrink: the old set holds until drained */
    } else {
      held[e->who] = e->set;
    }
    for (int a = 0; a < members; a++)
      for (int b = a + 1; b < members; b++)
        if (held[a] && held[b] && overlap(held[a], held[b])) {
          pthread_mutex_unlock(&mu);
          fail_msg("members %d and %d overlap after event %d (t=%.3f s)", a, b, i,
                   (double)(e->t - events[0].t) / 1e9);
        }
  }
  pthread_mutex_unlock(&mu);
}

static int whos[3] = {0, 1, 2}; /* each member's callback data */

/* member_with makes and starts a member of ring as who, with expected_members
 * and its metrics in reg (may be NULL). */
static kcr_shard_member_t *member_with(const char *ring, int who, const char *id, size_t expected,
                                       kcr_metrics_registry_t *reg) {
  kcr_shard_member_options o = {0};
  kcr_shard_member_t *m = NULL;
  kcr_error_t err = {0};
  o.client = client;
  o.ring = ring;
  o.lease_namespace = ns;
  o.identity = id;
  o.lease_duration_ns = LEASE_S * KCR_NSEC_PER_SEC;
  o.renew_deadline_ns = 3 * KCR_NSEC_PER_SEC;
  o.retry_period_ns = 250 * KCR_NSEC_PER_MSEC;
  o.on_drain = on_drain;
  o.on_effective = on_effective;
  o.data = &whos[who];
  o.expected_members = expected;
  o.metrics = reg;
  if (kcr_shard_member_create(&o, &m, &err) != 0 || kcr_shard_member_start(m, &err) != 0)
    fail_msg("member %s: %s", id, err.message);
  return m;
}

static kcr_shard_member_t *member(const char *ring, int who, const char *id) {
  return member_with(ring, who, id, 0, NULL);
}

static double share(kcr_shard_member_t *m) {
  kcr_shard_set_t *s = NULL;
  double v;
  assert_int_equal(kcr_shard_member_effective(m, &s, NULL), 0);
  v = kcr_shard_set_share(s);
  kcr_shard_set_destroy(s);
  return v;
}

/* wait_shares waits up to ms for the members' effective shares to add up to
 * the whole space with each of them holding some; the time it took in s, or
 * -1. */
static double wait_tiled(kcr_shard_member_t **ms, int n, int ms_max) {
  int64_t t0 = mono();
  for (int i = 0; i < ms_max / 20; i++) {
    double sum = 0;
    bool each = true;
    for (int k = 0; k < n; k++) {
      double s = share(ms[k]);
      sum += s;
      each = each && s > 0;
    }
    if (each && sum > 0.999999 && sum < 1.000001)
      return (double)(mono() - t0) / 1e9;
    kcr_it_sleep_ms(20);
  }
  return -1;
}

/* last_event: the time of who's last event of the kind (drained or not). */
static int64_t last_event(int who, bool drained) {
  int64_t t = 0;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < nevents; i++)
    if (events[i].who == who && events[i].drained == drained)
      t = events[i].t;
  pthread_mutex_unlock(&mu);
  return t;
}

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0)
    return -1;
  return kcr_it_create_namespace(client, "kcr-handover", ns, sizeof(ns));
}

static int group_teardown(void **state) {
  (void)state;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < nevents; i++)
    kcr_shard_set_destroy(events[i].set);
  pthread_mutex_unlock(&mu);
  kcr_it_disconnect(env, config, client, ns);
  return 0;
}

static void test_shard_handover_it(void **state) {
  kcr_shard_member_t *ms[3] = {NULL, NULL, NULL};
  char ring[32];
  double took, graceful;
  int64_t drained_a, grew_b;
  (void)state;
  snprintf(ring, sizeof(ring), "ho-%d", (int)getpid());

  /* a alone: the whole space */
  ms[0] = member(ring, 0, "handover-a");
  took = wait_tiled(ms, 1, 10000);
  assert_true(took >= 0);

  /* b joins: a drains half before b takes it */
  ms[1] = member(ring, 1, "handover-b");
  took = wait_tiled(ms, 2, 20000);
  print_message("b joined: tiled after %.3f s\n", took);
  assert_true(took >= 0);
  drained_a = last_event(0, true);
  grew_b = last_event(1, false);
  assert_true(drained_a > 0);
  assert_true(grew_b > drained_a); /* b grew only after a's drain returned */
  check_no_overlap(2);

  /* a stops gracefully: drains, deletes its Lease; b takes all, no lease wait */
  {
    static const kcr_gvr leases = {"coordination.k8s.io", "v1", "leases"};
    char lease[128];
    kcr_error_t err = {0};
    int64_t t0 = mono();
    snprintf(lease, sizeof(lease), "%s", kcr_shard_member_lease_name(ms[0]));
    kcr_shard_member_destroy(ms[0]);
    /* handed over, not left to expire: the Lease is gone when stop returns */
    assert_int_equal(kcr_client_get(client, &leases, ns, lease, NULL, NULL, &err), KCR_EAPI);
    assert_true(kcr_error_is_not_found(&err));
    ms[0] = ms[1];
    ms[1] = NULL;
    took = wait_tiled(ms, 1, 20000);
    graceful = took < 0 ? -1 : (double)(mono() - t0) / 1e9;
    print_message("a stopped: b holds everything %.3f s after the stop began\n", graceful);
    assert_true(graceful >= 0);
  }
  check_no_overlap(2);

  /* c joins; then b crashes: c waits b's Lease out before taking its part */
  ms[1] = member(ring, 2, "handover-c");
  took = wait_tiled(ms, 2, 20000);
  assert_true(took >= 0);
  {
    int64_t t0 = mono();
    kcr__shard_member_abandon(ms[0]); /* no drain, the Lease stays */
    {
      /* a crash ends b's reconciles with it: it holds nothing from now on */
      kcr_shard_set_t *none = NULL;
      assert_int_equal(kcr_shard_set_create(NULL, 0, &none, NULL), 0);
      record(1, none, false);
      record(1, NULL, true);
      kcr_shard_set_destroy(none);
    }
    took = wait_tiled(&ms[1], 1, 30000);
    took = took < 0 ? -1 : (double)(mono() - t0) / 1e9;
    print_message("b crashed: c holds everything %.3f s later (lease %d s)\n", took, LEASE_S);
    assert_true(took >= 0);
    assert_true(took >= LEASE_S - 1); /* at least the lease's worth of unchanged Lease */
    /* the control of the same run: a handover is faster than an expiry */
    assert_true(graceful < took);
    kcr_shard_member_destroy(ms[0]);
  }
  check_no_overlap(3);
  kcr_shard_member_destroy(ms[1]);
}

/* metric: the value of family name's series {ring, [direction]} in reg. */
static double metric(kcr_metrics_registry_t *reg, const char *name, const char *ring,
                     const char *direction) {
  kcr_metric_t *f = kcr_metrics_find(reg, name);
  kcr_metric_child_t *c;
  assert_non_null(f);
  c = direction ? kcr_metric_withv(f, ring, direction, NULL) : kcr_metric_withv(f, ring, NULL);
  assert_non_null(c);
  return kcr_metric_value(c);
}

/*
 * expected_members: the first of two expected members takes nothing until
 * the second is in the ring, then they tile it; its metrics say so. The only
 * one of three expected takes everything after a lease duration, not never.
 */
static void test_shard_expected_members_it(void **state) {
  kcr_metrics_registry_t *reg = NULL;
  kcr_shard_member_t *ms[2] = {NULL, NULL};
  kcr_metric_child_t *dur;
  char ring[32], ring3[32];
  double took, by_members;
  int64_t t0;
  (void)state;
  snprintf(ring, sizeof(ring), "ex-%d", (int)getpid());
  snprintf(ring3, sizeof(ring3), "ex3-%d", (int)getpid());
  assert_int_equal(kcr_metrics_registry_create(&reg, NULL), 0);

  ms[0] = member_with(ring, 0, "expect-a", 2, reg);
  kcr_it_sleep_ms(1500); /* six retry periods: a lists the ring, alone */
  assert_true(share(ms[0]) == 0.0);
  assert_true(metric(reg, "kcr_shard_members", ring, NULL) == 1.0);
  ms[1] = member_with(ring, 1, "expect-b", 2, NULL);
  took = wait_tiled(ms, 2, 20000);
  print_message("2 of 2 expected: tiled %.3f s after the second started\n", took);
  assert_true(took >= 0);
  by_members = took;
  assert_true(metric(reg, "kcr_shard_members", ring, NULL) == 2.0);
  assert_true(metric(reg, "kcr_shard_owned_share", ring, NULL) == share(ms[0]));
  assert_true(metric(reg, "kcr_shard_handovers_total", ring, "grow") == 1.0);
  assert_true(metric(reg, "kcr_shard_handovers_total", ring, "shrink") == 0.0);
  dur = kcr_metric_withv(kcr_metrics_find(reg, "kcr_shard_handover_duration_seconds"), ring, NULL);
  assert_non_null(dur);
  assert_int_equal(kcr_metric_count(dur), 1); /* the first ring it saw, settled once */
  kcr_shard_member_destroy(ms[1]);
  kcr_shard_member_destroy(ms[0]);

  t0 = mono();
  ms[0] = member_with(ring3, 0, "expect-only", 3, NULL);
  took = wait_tiled(ms, 1, 20000);
  took = took < 0 ? -1 : (double)(mono() - t0) / 1e9;
  print_message("1 of 3 expected: takes everything %.3f s after its start (lease %d s)\n", took,
                LEASE_S);
  assert_true(took >= LEASE_S - 0.5);
  /* the control of the same run: the two tiled by the members' arrival, not
   * by the lease duration's timeout, which is what the lone one waited for */
  assert_true(by_members < took);
  kcr_shard_member_destroy(ms[0]);
  kcr_metrics_registry_destroy(reg);
}

static atomic_bool lapse_drained; /* what the lapse test's on_drain answers */

static bool on_drain_flag(const kcr_shard_set_t *keep, void *data) {
  (void)keep;
  (void)data;
  return atomic_load(&lapse_drained);
}

/* step_until steps the fake clock by step_ns (then lets the member's thread
 * run) until done(m) holds, at most n times; whether it did. */
static bool step_until(kcr_clock_t *clock, kcr_shard_member_t *m, int64_t step_ns, int n,
                       bool (*done)(kcr_shard_member_t *)) {
  for (int i = 0; i < n; i++) {
    if (done(m))
      return true;
    kcr_fake_clock_step(clock, step_ns);
    kcr_it_sleep_ms(20);
  }
  return done(m);
}

static bool owns_all(kcr_shard_member_t *m) {
  return share(m) > 0.999999 && kcr_shard_member_fence_remaining(m) > 0;
}

static bool fence_open(kcr_shard_member_t *m) {
  return kcr_shard_member_fence_remaining(m) > 0;
}

/*
 * A member whose fence lapsed (here: its clock jumps past the renew deadline,
 * as a process paused that long sees it) owns nothing from then on, and its
 * fence stays shut after the next renew succeeds, for as long as a reconcile
 * of before is still running (on_drain says no); once they have ended it owns
 * again. Before, the first renew after the pause opened the fence at once.
 */
static void test_shard_lapse_it(void **state) {
  static const kcr_gvr leases = {"coordination.k8s.io", "v1", "leases"};
  kcr_shard_member_options o = {0};
  kcr_shard_member_t *m = NULL;
  kcr_clock_t *clock = NULL;
  kcr_error_t err = {0};
  char ring[32];
  json_t *lease = NULL;
  const char *renewed_before;
  char before[64];
  (void)state;
  snprintf(ring, sizeof(ring), "lapse-%d", (int)getpid());
  assert_int_equal(kcr_fake_clock_create(0, kcr_clock_wall(kcr_clock_system()), &clock, &err), 0);
  o.client = client;
  o.ring = ring;
  o.lease_namespace = ns;
  o.identity = "lapse-a";
  o.lease_duration_ns = LEASE_S * KCR_NSEC_PER_SEC;
  o.renew_deadline_ns = 3 * KCR_NSEC_PER_SEC;
  o.retry_period_ns = 250 * KCR_NSEC_PER_MSEC;
  o.clock = clock;
  o.on_drain = on_drain_flag;
  atomic_store(&lapse_drained, true);
  assert_int_equal(kcr_shard_member_create(&o, &m, &err), 0);
  assert_int_equal(kcr_shard_member_start(m, &err), 0);
  assert_true(step_until(clock, m, 250 * KCR_NSEC_PER_MSEC, 200, owns_all));

  /* a reconcile is in flight when the process stalls past its renew deadline */
  atomic_store(&lapse_drained, false);
  assert_int_equal(
      kcr_client_get(client, &leases, ns, kcr_shard_member_lease_name(m), NULL, &lease, &err), 0);
  snprintf(before, sizeof(before), "%s",
           json_string_value(json_object_get(json_object_get(lease, "spec"), "renewTime")));
  json_decref(lease);
  kcr_fake_clock_step(clock, 3 * KCR_NSEC_PER_SEC + KCR_NSEC_PER_MSEC);
  /* the member renews again (its Lease's renewTime moves) ... */
  renewed_before = before;
  for (int i = 0; i < 200; i++) {
    const char *now;
    bool moved;
    assert_int_equal(
        kcr_client_get(client, &leases, ns, kcr_shard_member_lease_name(m), NULL, &lease, &err), 0);
    now = json_string_value(json_object_get(json_object_get(lease, "spec"), "renewTime"));
    moved = now && strcmp(now, renewed_before) != 0;
    json_decref(lease);
    if (moved)
      break;
    kcr_it_sleep_ms(20);
  }
  kcr_it_sleep_ms(100);
  /* ... but while the old reconcile runs it owns nothing and may not write */
  print_message("after the lapse and a renew: fence %lld ns, share %.3f\n",
                (long long)kcr_shard_member_fence_remaining(m), share(m));
  assert_true(kcr_shard_member_fence_remaining(m) <= 0);
  assert_true(share(m) == 0.0);
  assert_false(step_until(clock, m, 50 * KCR_NSEC_PER_MSEC, 10, fence_open));

  /* the reconcile ends: it owns everything again */
  atomic_store(&lapse_drained, true);
  assert_true(step_until(clock, m, 250 * KCR_NSEC_PER_MSEC, 200, owns_all));
  kcr_shard_member_destroy(m);
  kcr_clock_destroy(clock);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shard_handover_it),
      cmocka_unit_test(test_shard_expected_members_it),
      cmocka_unit_test(test_shard_lapse_it),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
