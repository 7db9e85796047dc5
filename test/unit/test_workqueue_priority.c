/* SPDX-License-Identifier: MIT */
/*
 * test_workqueue_priority.c: the queue's priorities, after controller-runtime's
 * priorityqueue_test.go: higher first and FIFO within a priority, a re-add
 * moving a key up (never down), delayed and rate-limited keys keeping their
 * priority on a fake clock, shutdown, the depth metric by priority, a queue
 * made with no_priority, allocation failures, and many threads adding and
 * getting at random priorities.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/workqueue.h"
#include "testutil.h"

#define MS KCR_NSEC_PER_MSEC
#define SEC KCR_NSEC_PER_SEC

typedef struct fixture {
  kcr_clock_t *clock;
  kcr_metrics_registry_t *reg;
  kcr_workqueue_t *q;
} fixture_t;

/* make makes a queue on a fake clock; a named one gets a registry. */
static fixture_t *make(const char *name, bool no_priority) {
  fixture_t *f = test_calloc(1, sizeof(*f));
  kcr_workqueue_options o;
  assert_int_equal(kcr_fake_clock_create(1000 * SEC, (kcr_time_t){1700000000, 0}, &f->clock, NULL),
                   0);
  if (name)
    assert_int_equal(kcr_metrics_registry_create(&f->reg, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.name = name;
  o.clock = f->clock;
  o.metrics = f->reg;
  o.no_priority = no_priority;
  assert_int_equal(kcr_workqueue_create(&o, &f->q, NULL), 0);
  return f;
}

static void unmake(fixture_t *f) {
  kcr_workqueue_destroy(f->q);
  kcr_metrics_registry_destroy(f->reg);
  kcr_clock_destroy(f->clock);
  test_free(f);
}

static int add_p(kcr_workqueue_t *q, const char *key, int prio) {
  kcr_workqueue_add_opts o = {0, false, prio};
  return kcr_workqueue_add_with_opts(q, key, &o);
}

static int add_after_p(kcr_workqueue_t *q, const char *key, int64_t after, int prio) {
  kcr_workqueue_add_opts o = {after, false, prio};
  return kcr_workqueue_add_with_opts(q, key, &o);
}

/* order gets (and finishes) n keys and joins them as "key@prio key@prio". */
static void order(kcr_workqueue_t *q, size_t n, char *out, size_t size) {
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    char *key = NULL, one[64];
    int prio = 12345;
    assert_int_equal(kcr_workqueue_get_with_priority(q, &key, &prio), 0);
    snprintf(one, sizeof(one), "%s%s@%d", i ? " " : "", key, prio);
    strncat(out, one, size - strlen(out) - 1);
    kcr_workqueue_done(q, key);
    kcr_free(key);
  }
}

/* ---- ordering ---- */

static void test_workqueue_priority_higher_first_fifo_within(void **state) {
  fixture_t *f = make(NULL, false);
  char got[256];
  (void)state;
  assert_int_equal(add_p(f->q, "a", 0), 0);
  assert_int_equal(add_p(f->q, "low1", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "hi1", 10), 0);
  assert_int_equal(kcr_workqueue_add(f->q, "b"), 0); /* the plain add: priority 0 */
  assert_int_equal(add_p(f->q, "low2", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "hi2", 10), 0);
  assert_int_equal(add_p(f->q, "top", 1000), 0);
  assert_int_equal(add_p(f->q, "c", 0), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 8);
  order(f->q, 8, got, sizeof(got));
  assert_string_equal(got, "top@1000 hi1@10 hi2@10 a@0 b@0 c@0 low1@-100 low2@-100");
  assert_int_equal(kcr_workqueue_len(f->q), 0);
  unmake(f);
}

/* The extremes of int order like any other priority. */
static void test_workqueue_priority_extremes(void **state) {
  fixture_t *f = make(NULL, false);
  char got[256], want[256];
  (void)state;
  assert_int_equal(add_p(f->q, "min", INT32_MIN), 0);
  assert_int_equal(add_p(f->q, "zero", 0), 0);
  assert_int_equal(add_p(f->q, "max", INT32_MAX), 0);
  assert_int_equal(add_p(f->q, "minus1", -1), 0);
  assert_int_equal(add_p(f->q, "one", 1), 0);
  order(f->q, 5, got, sizeof(got));
  snprintf(want, sizeof(want), "max@%d one@1 zero@0 minus1@-1 min@%d", INT32_MAX, INT32_MIN);
  assert_string_equal(got, want);
  unmake(f);
}

/* ---- a re-add moves a key up, never down ---- */

static void test_workqueue_priority_readd_moves_up(void **state) {
  fixture_t *f = make(NULL, false);
  char got[256];
  (void)state;
  /* the initial list: three keys low; then a real change of the second one */
  assert_int_equal(add_p(f->q, "x1", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "x2", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "x3", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(kcr_workqueue_add(f->q, "x2"), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 3); /* still one entry per key */
  order(f->q, 3, got, sizeof(got));
  assert_string_equal(got, "x2@0 x1@-100 x3@-100");

  /* moving up puts the key at the back of its new priority */
  assert_int_equal(add_p(f->q, "a", 0), 0);
  assert_int_equal(add_p(f->q, "b", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "c", 0), 0);
  assert_int_equal(add_p(f->q, "b", 0), 0);
  assert_int_equal(add_p(f->q, "h", 5), 0);
  assert_int_equal(add_p(f->q, "a", 5), 0); /* from the FIFO into the heap */
  assert_int_equal(add_p(f->q, "h", 9), 0); /* within the heap */
  order(f->q, 4, got, sizeof(got));
  assert_string_equal(got, "h@9 a@5 c@0 b@0");

  /* a lower or equal priority changes nothing: neither the place nor the priority */
  assert_int_equal(add_p(f->q, "p", 10), 0);
  assert_int_equal(add_p(f->q, "q", 10), 0);
  assert_int_equal(add_p(f->q, "p", 0), 0);
  assert_int_equal(add_p(f->q, "p", 10), 0);
  assert_int_equal(add_p(f->q, "p", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  order(f->q, 2, got, sizeof(got));
  assert_string_equal(got, "p@10 q@10");
  unmake(f);
}

/* A key added again while it is processed keeps the highest priority it was
 * given and is queued at that priority at done (never two workers). */
static void test_workqueue_priority_readd_while_processing(void **state) {
  fixture_t *f = make(NULL, false);
  char *key = NULL, got[256];
  int prio = 0;
  (void)state;
  assert_int_equal(add_p(f->q, "k", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(kcr_workqueue_get_with_priority(f->q, &key, &prio), 0);
  assert_int_equal(prio, KCR_WORKQUEUE_PRIORITY_LOW);
  assert_int_equal(add_p(f->q, "k", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "k", 5), 0);
  assert_int_equal(add_p(f->q, "k", 1), 0);
  assert_int_equal(add_p(f->q, "other", 0), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 1); /* k waits for done */
  kcr_workqueue_done(f->q, key);
  kcr_free(key);
  order(f->q, 2, got, sizeof(got));
  assert_string_equal(got, "k@5 other@0");
  unmake(f);
}

/* ---- delays keep their priority ---- */

static void test_workqueue_priority_delayed_keeps_priority(void **state) {
  fixture_t *f = make(NULL, false);
  char got[256];
  (void)state;
  assert_int_equal(add_after_p(f->q, "late-high", SEC, 10), 0);
  assert_int_equal(add_after_p(f->q, "late-low", 500 * MS, KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(kcr_workqueue_add(f->q, "n1"), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  kcr_fake_clock_step(f->clock, SEC);
  assert_int_equal(kcr_workqueue_add(f->q, "n2"), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 4);
  /* late-low became ready first, yet goes last; late-high overtakes n1 */
  order(f->q, 4, got, sizeof(got));
  assert_string_equal(got, "late-high@10 n1@0 n2@0 late-low@-100");

  /* waiting twice: the earlier time and the higher priority */
  assert_int_equal(add_after_p(f->q, "w", 2 * SEC, KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_after_p(f->q, "w", SEC, 7), 0);
  assert_int_equal(add_after_p(f->q, "w", 3 * SEC, 1), 0);
  assert_int_equal(kcr_workqueue_add(f->q, "n3"), 0);
  kcr_fake_clock_step(f->clock, SEC);
  assert_int_equal(kcr_workqueue_len(f->q), 2);
  order(f->q, 2, got, sizeof(got));
  assert_string_equal(got, "w@7 n3@0");

  /* a delayed key becoming ready while already queued moves it up */
  assert_int_equal(add_p(f->q, "d", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "e", 0), 0);
  assert_int_equal(add_after_p(f->q, "d", SEC, 3), 0);
  kcr_fake_clock_step(f->clock, SEC);
  order(f->q, 2, got, sizeof(got));
  assert_string_equal(got, "d@3 e@0");
  assert_int_equal(kcr_workqueue_len(f->q), 0);
  unmake(f);
}

/* rate_limited: the limiter's delay (one more failure) and the priority; with
 * after_ns too, the shorter delay. */
static void test_workqueue_priority_rate_limited(void **state) {
  fixture_t *f = make(NULL, false);
  kcr_workqueue_add_opts o = {0, true, 7};
  char got[256];
  (void)state;
  /* the default limiter: 5 ms for a first failure */
  assert_int_equal(kcr_workqueue_add_with_opts(f->q, "r", &o), 0);
  assert_int_equal(kcr_workqueue_num_requeues(f->q, "r"), 1);
  assert_int_equal(kcr_workqueue_add(f->q, "n"), 0);
  kcr_fake_clock_step(f->clock, 4 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  kcr_fake_clock_step(f->clock, MS);
  assert_int_equal(kcr_workqueue_len(f->q), 2);
  order(f->q, 2, got, sizeof(got));
  assert_string_equal(got, "r@7 n@0");
  /* second failure: 10 ms from the limiter, but after_ns 1 ms is shorter */
  o.after_ns = MS;
  o.priority = KCR_WORKQUEUE_PRIORITY_LOW;
  assert_int_equal(kcr_workqueue_add_with_opts(f->q, "r", &o), 0);
  assert_int_equal(kcr_workqueue_num_requeues(f->q, "r"), 2);
  kcr_fake_clock_step(f->clock, MS);
  order(f->q, 1, got, sizeof(got));
  assert_string_equal(got, "r@-100");
  /* NULL opts: a plain add */
  assert_int_equal(kcr_workqueue_add_with_opts(f->q, "plain", NULL), 0);
  order(f->q, 1, got, sizeof(got));
  assert_string_equal(got, "plain@0");
  unmake(f);
}

/* ---- shutdown ---- */

static void test_workqueue_priority_shutdown(void **state) {
  fixture_t *f = make(NULL, false);
  kcr_workqueue_add_opts o = {0, true, 1};
  char *key = NULL, got[256];
  (void)state;
  assert_int_equal(add_p(f->q, "low", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "mid", 0), 0);
  assert_int_equal(add_p(f->q, "high", 3), 0);
  assert_int_equal(add_after_p(f->q, "waiting", SEC, 9), 0);
  kcr_workqueue_shutdown(f->q);
  assert_int_equal(add_p(f->q, "after", 50), KCR_ECLOSED);
  assert_int_equal(add_after_p(f->q, "after", SEC, 50), KCR_ECLOSED);
  assert_int_equal(kcr_workqueue_add_with_opts(f->q, "after", &o), KCR_ECLOSED);
  kcr_fake_clock_step(f->clock, SEC); /* a waiting key is never released */
  /* what is queued is still handed out, highest first, then ECLOSED */
  order(f->q, 3, got, sizeof(got));
  assert_string_equal(got, "high@3 mid@0 low@-100");
  assert_int_equal(kcr_workqueue_get_with_priority(f->q, &key, NULL), KCR_ECLOSED);
  assert_null(key);
  unmake(f);
}

typedef struct drainer {
  kcr_workqueue_t *q;
  atomic_int returned;
} drainer_t;

static void *drain_main(void *arg) {
  drainer_t *d = arg;
  kcr_workqueue_shutdown_with_drain(d->q);
  atomic_store(&d->returned, 1);
  return NULL;
}

/* shutdown_with_drain waits for keys of any priority, and one added again
 * at a priority while processing is still handed out. */
static void test_workqueue_priority_shutdown_with_drain(void **state) {
  fixture_t *f = make(NULL, false);
  drainer_t d;
  pthread_t t;
  char *key = NULL, got[64];
  int prio = 0;
  (void)state;
  d.q = f->q;
  atomic_init(&d.returned, 0);
  assert_int_equal(add_p(f->q, "k", 4), 0);
  assert_int_equal(kcr_workqueue_get_with_priority(f->q, &key, &prio), 0);
  assert_int_equal(prio, 4);
  assert_int_equal(add_p(f->q, "k", 6), 0);
  assert_int_equal(pthread_create(&t, NULL, drain_main, &d), 0);
  while (!kcr_workqueue_shutting_down(f->q))
    sched_yield();
  assert_int_equal(atomic_load(&d.returned), 0);
  kcr_workqueue_done(f->q, key);
  kcr_free(key);
  order(f->q, 1, got, sizeof(got));
  assert_string_equal(got, "k@6");
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&d.returned), 1);
  unmake(f);
}

/* ---- no_priority: the plain queue ---- */

static void test_workqueue_priority_off_is_fifo(void **state) {
  fixture_t *f = make("plain", true);
  kcr_metric_t *depth;
  char got[256];
  (void)state;
  assert_int_equal(add_p(f->q, "low", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "high", 10), 0);
  assert_int_equal(add_p(f->q, "low", 20), 0); /* no move */
  assert_int_equal(add_after_p(f->q, "late", MS, 99), 0);
  kcr_fake_clock_step(f->clock, MS);
  assert_int_equal(kcr_workqueue_len(f->q), 3);
  depth = kcr_metrics_find(f->reg, KCR_WORKQUEUE_METRIC_DEPTH);
  assert_non_null(depth);
  /* controller-runtime's plain queue labels depth priority="" */
  assert_true(kcr_metric_value(kcr_metric_withv(depth, "plain", "plain", "", NULL)) == 3);
  order(f->q, 3, got, sizeof(got));
  assert_string_equal(got, "low@0 high@0 late@0");
  assert_true(kcr_metric_value(kcr_metric_withv(depth, "plain", "plain", "", NULL)) == 0);
  unmake(f);
}

/* ---- metrics: depth by priority ---- */

static double depth_of(fixture_t *f, const char *prio) {
  kcr_metric_t *m = kcr_metrics_find(f->reg, KCR_WORKQUEUE_METRIC_DEPTH);
  assert_non_null(m);
  return kcr_metric_value(kcr_metric_withv(m, "ctrl", "ctrl", prio, NULL));
}

static void test_workqueue_priority_depth_metric(void **state) {
  fixture_t *f = make("ctrl", false);
  kcr_buf_t b;
  char *key = NULL;
  (void)state;
  assert_int_equal(add_p(f->q, "l1", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "l2", KCR_WORKQUEUE_PRIORITY_LOW), 0);
  assert_int_equal(add_p(f->q, "n", 0), 0);
  assert_int_equal(add_p(f->q, "h", 5), 0);
  assert_int_equal(add_after_p(f->q, "w", SEC, 5), 0); /* waiting: not counted yet */
  assert_true(depth_of(f, "-100") == 2);
  assert_true(depth_of(f, "0") == 1);
  assert_true(depth_of(f, "5") == 1);
  /* a move up moves its count */
  assert_int_equal(add_p(f->q, "l2", 0), 0);
  assert_true(depth_of(f, "-100") == 1);
  assert_true(depth_of(f, "0") == 2);
  kcr_fake_clock_step(f->clock, SEC);
  assert_int_equal(kcr_workqueue_len(f->q), 5);
  assert_true(depth_of(f, "5") == 2);
  /* the text shows each priority's series */
  kcr_buf_init(&b, 1u << 20);
  assert_int_equal(kcr_metrics_render(f->reg, &b), 0);
  assert_non_null(strstr(kcr_buf_cstr(&b),
                         "workqueue_depth{name=\"ctrl\",controller=\"ctrl\",priority=\"-100\"} 1"));
  assert_non_null(strstr(kcr_buf_cstr(&b),
                         "workqueue_depth{name=\"ctrl\",controller=\"ctrl\",priority=\"5\"} 2"));
  kcr_buf_free(&b);
  /* a key re-added at a higher priority while processing counts there */
  assert_int_equal(kcr_workqueue_get(f->q, &key), 0);
  assert_string_equal(key, "h");
  assert_true(depth_of(f, "5") == 1);
  assert_int_equal(add_p(f->q, "h", 1), 0);
  assert_int_equal(add_p(f->q, "h", 2), 0);
  assert_true(depth_of(f, "1") == 0);
  assert_true(depth_of(f, "2") == 1);
  kcr_workqueue_done(f->q, key);
  kcr_free(key);
  while (kcr_workqueue_len(f->q) > 0) {
    assert_int_equal(kcr_workqueue_get(f->q, &key), 0);
    kcr_workqueue_done(f->q, key);
    kcr_free(key);
  }
  assert_true(depth_of(f, "-100") == 0);
  assert_true(depth_of(f, "0") == 0);
  assert_true(depth_of(f, "2") == 0);
  assert_true(depth_of(f, "5") == 0);
  unmake(f);
}

/* At most KCR_WORKQUEUE_MAX_PRIORITY_LABELS priority values; keys beyond go
 * under the overflow label, and every count returns to zero. */
static void test_workqueue_priority_depth_cardinality(void **state) {
  fixture_t *f = make("ctrl", false);
  enum { N = KCR_WORKQUEUE_MAX_PRIORITY_LABELS + 5 };
  char key[16], label[16], *got = NULL;
  (void)state;
  assert_int_equal(add_p(f->q, "zero", 0), 0);
  for (int i = 1; i <= N; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    assert_int_equal(add_p(f->q, key, i), 0);
  }
  /* 0 and 24 others have a series of their own */
  for (int i = 1; i < KCR_WORKQUEUE_MAX_PRIORITY_LABELS; i++) {
    snprintf(label, sizeof(label), "%d", i);
    assert_true(depth_of(f, label) == 1);
  }
  assert_true(depth_of(f, KCR_WORKQUEUE_PRIORITY_LABEL_OVERFLOW) ==
              N - (KCR_WORKQUEUE_MAX_PRIORITY_LABELS - 1));
  assert_true(depth_of(f, "0") == 1);
  while (kcr_workqueue_len(f->q) > 0) {
    assert_int_equal(kcr_workqueue_get(f->q, &got), 0);
    kcr_workqueue_done(f->q, got);
    kcr_free(got);
  }
  assert_true(depth_of(f, KCR_WORKQUEUE_PRIORITY_LABEL_OVERFLOW) == 0);
  assert_true(depth_of(f, "1") == 0);
  unmake(f);
}

/* ---- allocation failures ---- */

static void test_workqueue_priority_alloc_failure(void **state) {
  fixture_t *f = make(NULL, false);
  kcr_workqueue_add_opts o = {SEC, false, 3};
  char got[256];
  (void)state;
  for (int i = 0; i < 40; i++) { /* entries that exist before the first priority */
    char k[16];
    snprintf(k, sizeof(k), "k%d", i);
    assert_int_equal(kcr_workqueue_add(f->q, k), 0);
  }
  /* the first priority reserves room for every entry: each failure changes nothing */
  KCR_TEST_ALLOC_LOOP(add_p(f->q, "k5", 2), (void)0);
  KCR_TEST_ALLOC_LOOP(add_p(f->q, "new", 1), (void)0);
  KCR_TEST_ALLOC_LOOP(kcr_workqueue_add_with_opts(f->q, "later", &o), (void)0);
  assert_int_equal(kcr_workqueue_len(f->q), 41);
  /* becoming ready, moving up, done: no allocation */
  kcr_test_alloc_install();
  kcr_test_alloc_fail_at(1);
  kcr_fake_clock_step(f->clock, SEC);
  assert_int_equal(kcr_workqueue_len(f->q), 42);
  assert_int_equal(add_p(f->q, "k7", 9), 0);
  assert_false(kcr_test_alloc_failed());
  kcr_test_alloc_fail_at(0);
  kcr_test_alloc_uninstall();
  order(f->q, 5, got, sizeof(got));
  assert_string_equal(got, "k7@9 later@3 k5@2 new@1 k0@0");
  unmake(f);
}

/* ---- many threads ---- */

enum { CT_KEYS = 64, CT_PRODUCERS = 4, CT_CONSUMERS = 4, CT_ADDS = 5000 };

typedef struct conc {
  kcr_workqueue_t *q;
  atomic_int busy[CT_KEYS];   /* a worker holds the key */
  atomic_int handed[CT_KEYS]; /* times handed out */
  atomic_int seq;             /* producers' seed */
} conc_t;

static void *conc_producer(void *arg) {
  conc_t *c = arg;
  unsigned seed = (unsigned)atomic_fetch_add(&c->seq, 1) * 2654435761u + 1;
  for (int i = 0; i < CT_ADDS; i++) {
    char key[16];
    kcr_workqueue_add_opts o = {0, false, 0};
    seed = seed * 1103515245u + 12345u;
    snprintf(key, sizeof(key), "k%u", (seed >> 8) % CT_KEYS);
    switch ((seed >> 20) % 4) {
    case 0:
      o.priority = KCR_WORKQUEUE_PRIORITY_LOW;
      break;
    case 1:
      o.priority = (int)((seed >> 4) % 7) - 3;
      break;
    case 2:
      o.after_ns = (int64_t)((seed >> 3) % 50) * 1000; /* real clock: up to 50 us */
      o.priority = (int)((seed >> 5) % 3);
      break;
    default:
      break; /* 0 */
    }
    KCR_TEST_THREAD_CHECK(kcr_workqueue_add_with_opts(c->q, key, &o) == 0);
  }
  return NULL;
}

static void *conc_consumer(void *arg) {
  conc_t *c = arg;
  for (;;) {
    char *key = NULL;
    int prio = 0, k;
    if (kcr_workqueue_get_with_priority(c->q, &key, &prio) != 0)
      return NULL;
    k = (int)strtol(key + 1, NULL, 10);
    KCR_TEST_THREAD_CHECK(k >= 0 && k < CT_KEYS);
    KCR_TEST_THREAD_CHECK(prio >= KCR_WORKQUEUE_PRIORITY_LOW && prio <= 3);
    if (k >= 0 && k < CT_KEYS) {
      KCR_TEST_THREAD_CHECK(atomic_exchange(&c->busy[k], 1) == 0); /* never two at once */
      atomic_fetch_add(&c->handed[k], 1);
      sched_yield();
      atomic_store(&c->busy[k], 0);
    }
    kcr_workqueue_done(c->q, key);
    kcr_free(key);
  }
}

static void test_workqueue_priority_many_threads(void **state) {
  conc_t *c = test_calloc(1, sizeof(*c));
  pthread_t prod[CT_PRODUCERS], cons[CT_CONSUMERS];
  kcr_workqueue_options o;
  int total = 0;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.name = "conc";
  assert_int_equal(kcr_metrics_registry_create(&o.metrics, NULL), 0);
  assert_int_equal(kcr_workqueue_create(&o, &c->q, NULL), 0);
  for (int i = 0; i < CT_CONSUMERS; i++)
    assert_int_equal(pthread_create(&cons[i], NULL, conc_consumer, c), 0);
  for (int i = 0; i < CT_PRODUCERS; i++)
    assert_int_equal(pthread_create(&prod[i], NULL, conc_producer, c), 0);
  for (int i = 0; i < CT_PRODUCERS; i++)
    pthread_join(prod[i], NULL);
  /* every delay is over after 50 us: wait until nothing is dirty or waiting */
  for (int i = 0; i < 5000; i++) {
    kcr_metric_t *depth = kcr_metrics_find(o.metrics, KCR_WORKQUEUE_METRIC_DEPTH);
    struct timespec ts = {0, 1000000};
    double d = 0;
    for (int p = -3; p <= 3; p++) {
      char l[8];
      snprintf(l, sizeof(l), "%d", p);
      d += kcr_metric_value(kcr_metric_withv(depth, "conc", "conc", l, NULL));
    }
    d += kcr_metric_value(kcr_metric_withv(depth, "conc", "conc", "-100", NULL));
    if (d == 0 && kcr_workqueue_len(c->q) == 0 && i > 5)
      break;
    nanosleep(&ts, NULL);
  }
  kcr_workqueue_shutdown_with_drain(c->q);
  for (int i = 0; i < CT_CONSUMERS; i++)
    pthread_join(cons[i], NULL);
  for (int k = 0; k < CT_KEYS; k++) {
    assert_true(atomic_load(&c->handed[k]) > 0);
    total += atomic_load(&c->handed[k]);
  }
  assert_true(total <= CT_PRODUCERS * CT_ADDS);
  assert_int_equal(kcr_workqueue_len(c->q), 0);
  kcr_workqueue_destroy(c->q);
  kcr_metrics_registry_destroy(o.metrics);
  test_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workqueue_priority_higher_first_fifo_within),
      cmocka_unit_test(test_workqueue_priority_extremes),
      cmocka_unit_test(test_workqueue_priority_readd_moves_up),
      cmocka_unit_test(test_workqueue_priority_readd_while_processing),
      cmocka_unit_test(test_workqueue_priority_delayed_keeps_priority),
      cmocka_unit_test(test_workqueue_priority_rate_limited),
      cmocka_unit_test(test_workqueue_priority_shutdown),
      cmocka_unit_test(test_workqueue_priority_shutdown_with_drain),
      cmocka_unit_test(test_workqueue_priority_off_is_fifo),
      cmocka_unit_test(test_workqueue_priority_depth_metric),
      cmocka_unit_test(test_workqueue_priority_depth_cardinality),
      cmocka_unit_test(test_workqueue_priority_alloc_failure),
      cmocka_unit_test_teardown(test_workqueue_priority_many_threads, kcr_test_check_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
