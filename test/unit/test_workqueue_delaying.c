/* SPDX-License-Identifier: MIT */
/*
 * test_workqueue_delaying.c: add_after and add_rate_limited on a fake clock,
 * after client-go's delaying_queue_test.go and rate_limiting_queue_test.go, and
 * the metrics a named queue keeps.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kcr/workqueue.h"
#include "testutil.h"

#define MS KCR_NSEC_PER_MSEC
#define SEC KCR_NSEC_PER_SEC

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

struct fixture {
  kcr_clock_t *clock;
  kcr_metrics_registry_t *reg; /* named queues only */
  kcr_workqueue_t *q;
};

/* setup_named makes a queue on a fake clock; a named one gets a registry. */
static int setup_named(struct fixture *f, const char *name, kcr_ratelimiter_t *rl) {
  kcr_time_t wall = {1700000000, 0};
  kcr_workqueue_options opts;
  memset(f, 0, sizeof(*f));
  memset(&opts, 0, sizeof(opts));
  if (kcr_fake_clock_create(1000 * SEC, wall, &f->clock, NULL))
    return -1;
  if (name && kcr_metrics_registry_create(&f->reg, NULL))
    return -1;
  opts.name = name;
  opts.clock = f->clock;
  opts.rate_limiter = rl;
  opts.metrics = f->reg;
  return kcr_workqueue_create(&opts, &f->q, NULL) ? -1 : 0;
}

static int setup(void **state) {
  struct fixture *f = test_malloc(sizeof(*f));
  *state = f;
  return setup_named(f, NULL, NULL);
}

static int setup_metrics(void **state) {
  struct fixture *f = test_malloc(sizeof(*f));
  *state = f;
  return setup_named(f, "ctrl", NULL);
}

static int teardown(void **state) {
  struct fixture *f = *state;
  kcr_workqueue_destroy(f->q);
  kcr_metrics_registry_destroy(f->reg);
  kcr_clock_destroy(f->clock);
  test_free(f);
  return 0;
}

static void get_expect(kcr_workqueue_t *q, const char *want) {
  char *key = NULL;
  assert_int_equal(kcr_workqueue_get(q, &key), 0);
  assert_string_equal(key, want);
  kcr_workqueue_done(q, key);
  kcr_free(key);
}

/* ---- delaying_queue_test.go ---- */

static void test_workqueue_delaying_simple(void **state) {
  struct fixture *f = *state;
  assert_int_equal(kcr_workqueue_add_after(f->q, "foo", 50 * MS), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
  kcr_fake_clock_step(f->clock, 49 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
  kcr_fake_clock_step(f->clock, 11 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, "foo");
  kcr_fake_clock_step(f->clock, 10 * SEC);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
}

static void test_workqueue_delaying_ready_exactly_at_deadline(void **state) {
  struct fixture *f = *state;
  assert_int_equal(kcr_workqueue_add_after(f->q, "foo", 50 * MS), 0);
  kcr_fake_clock_step(f->clock, 50 * MS - 1);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
  kcr_fake_clock_step(f->clock, 1);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
}

static void test_workqueue_delaying_dedup_keeps_earliest(void **state) {
  struct fixture *f = *state;
  /* Later second add: the first time holds. */
  assert_int_equal(kcr_workqueue_add_after(f->q, "foo", 50 * MS), 0);
  assert_int_equal(kcr_workqueue_add_after(f->q, "foo", 70 * MS), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
  kcr_fake_clock_step(f->clock, 60 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, "foo");
  kcr_fake_clock_step(f->clock, 20 * MS); /* the 70 ms add was folded in */
  assert_int_equal(kcr_workqueue_len(f->q), 0);

  /* Earlier second add: it moves the key forward. */
  assert_int_equal(kcr_workqueue_add_after(f->q, "foo", 70 * MS), 0);
  assert_int_equal(kcr_workqueue_add_after(f->q, "foo", 50 * MS), 0);
  kcr_fake_clock_step(f->clock, 60 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, "foo");
  kcr_fake_clock_step(f->clock, 20 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
}

static void test_workqueue_delaying_add_two_fire_early(void **state) {
  struct fixture *f = *state;
  assert_int_equal(kcr_workqueue_add_after(f->q, "first", 1 * SEC), 0);
  assert_int_equal(kcr_workqueue_add_after(f->q, "second", 50 * MS), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
  kcr_fake_clock_step(f->clock, 60 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, "second");
  assert_int_equal(kcr_workqueue_add_after(f->q, "third", 2 * SEC), 0);
  kcr_fake_clock_step(f->clock, 1 * SEC);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, "first");
  kcr_fake_clock_step(f->clock, 2 * SEC);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, "third");
}

static void test_workqueue_delaying_copy_shifting(void **state) {
  struct fixture *f = *state;
  assert_int_equal(kcr_workqueue_add_after(f->q, "first", 1 * SEC), 0);
  assert_int_equal(kcr_workqueue_add_after(f->q, "second", 500 * MS), 0);
  assert_int_equal(kcr_workqueue_add_after(f->q, "third", 250 * MS), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
  kcr_fake_clock_step(f->clock, 2 * SEC);
  assert_int_equal(kcr_workqueue_len(f->q), 3);
  /* Moved into the queue in ready-time order. */
  get_expect(f->q, "third");
  get_expect(f->q, "second");
  get_expect(f->q, "first");
}

static void test_workqueue_delaying_many_keys_come_out_in_time_order(void **state) {
  struct fixture *f = *state;
  enum { N = 300 };
  char key[16];
  int i;
  /* A permutation of delays 1..N ms; equal ready times keep arrival order. */
  for (i = 0; i < N; i++) {
    snprintf(key, sizeof(key), "k%d", (i * 7) % N);
    assert_int_equal(kcr_workqueue_add_after(f->q, key, ((i * 7) % N + 1) * MS), 0);
  }
  assert_int_equal(kcr_workqueue_add_after(f->q, "tie-a", 150 * MS), 0);
  assert_int_equal(kcr_workqueue_add_after(f->q, "tie-b", 150 * MS), 0);
  kcr_fake_clock_step(f->clock, (N + 1) * MS);
  assert_int_equal(kcr_workqueue_len(f->q), N + 2);
  for (i = 0; i < N; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    get_expect(f->q, key);
    if (i == 149) {
      get_expect(f->q, "tie-a");
      get_expect(f->q, "tie-b");
    }
  }
}

static void test_workqueue_delaying_nonpositive_delay_adds_now(void **state) {
  struct fixture *f = *state;
  assert_int_equal(kcr_workqueue_add_after(f->q, "zero", 0), 0);
  assert_int_equal(kcr_workqueue_add_after(f->q, "neg", -5 * SEC), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 2);
  get_expect(f->q, "zero");
  get_expect(f->q, "neg");
}

static void test_workqueue_delaying_waiting_key_also_added_now(void **state) {
  struct fixture *f = *state;
  /* Waiting and queued are independent: a plain add queues it now, and the due
   * waiting entry later finds it dirty (no duplicate) or adds it again. */
  assert_int_equal(kcr_workqueue_add_after(f->q, "k", 10 * MS), 0);
  assert_int_equal(kcr_workqueue_add(f->q, "k"), 0);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  kcr_fake_clock_step(f->clock, 10 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, "k");
  assert_int_equal(kcr_workqueue_len(f->q), 0);

  assert_int_equal(kcr_workqueue_add_after(f->q, "k", 10 * MS), 0);
  assert_int_equal(kcr_workqueue_add(f->q, "k"), 0);
  get_expect(f->q, "k");
  kcr_fake_clock_step(f->clock, 10 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, "k");
}

static void test_workqueue_delaying_key_processing_when_due(void **state) {
  struct fixture *f = *state;
  char *key;
  assert_int_equal(kcr_workqueue_add(f->q, "k"), 0);
  assert_int_equal(kcr_workqueue_get(f->q, &key), 0);
  assert_int_equal(kcr_workqueue_add_after(f->q, "k", 5 * MS), 0);
  kcr_fake_clock_step(f->clock, 5 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 0); /* dirty, but still processing */
  kcr_workqueue_done(f->q, key);
  kcr_free(key);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, "k");
}

struct getter {
  kcr_workqueue_t *q;
  int rc;
  char *key;
  atomic_int started;
  atomic_int finished;
};

static void *getter_main(void *arg) {
  struct getter *g = arg;
  atomic_store(&g->started, 1);
  g->rc = kcr_workqueue_get(g->q, &g->key);
  atomic_store(&g->finished, 1);
  return NULL;
}

static void test_workqueue_delaying_blocked_get_wakes_when_due(void **state) {
  struct fixture *f = *state;
  struct getter g;
  pthread_t t;
  memset(&g, 0, sizeof(g));
  g.q = f->q;
  /* The getter starts with nothing waiting (an untimed sleep), then a delayed
   * key arrives, then an earlier one: it must follow both. */
  assert_int_equal(pthread_create(&t, NULL, getter_main, &g), 0);
  while (!atomic_load(&g.started))
    sleep_ms(1);
  sleep_ms(3);
  assert_int_equal(kcr_workqueue_add_after(f->q, "late", 10 * SEC), 0);
  sleep_ms(3);
  assert_int_equal(kcr_workqueue_add_after(f->q, "soon", 100 * MS), 0);
  sleep_ms(3);
  kcr_fake_clock_step(f->clock, 99 * MS);
  sleep_ms(5);
  assert_int_equal(atomic_load(&g.finished), 0);
  kcr_fake_clock_step(f->clock, 1 * MS);
  pthread_join(t, NULL);
  assert_int_equal(g.rc, 0);
  assert_string_equal(g.key, "soon");
  kcr_workqueue_done(f->q, g.key);
  kcr_free(g.key);
}

enum { WAKE_WORKERS = 4, WAKE_KEYS = 12 };

struct waker {
  kcr_workqueue_t *q;
  atomic_int got;
};

static void *waker_main(void *arg) {
  struct waker *w = arg;
  char *key;
  while (kcr_workqueue_get(w->q, &key) == 0) {
    atomic_fetch_add(&w->got, 1);
    kcr_workqueue_done(w->q, key);
    kcr_free(key);
  }
  return NULL;
}

static void test_workqueue_delaying_due_keys_wake_every_getter(void **state) {
  struct fixture *f = *state;
  struct waker w;
  pthread_t t[WAKE_WORKERS];
  char key[16];
  int i;
  memset(&w, 0, sizeof(w));
  w.q = f->q;
  for (i = 0; i < WAKE_WORKERS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, waker_main, &w), 0);
  sleep_ms(3);
  for (i = 0; i < WAKE_KEYS; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    assert_int_equal(kcr_workqueue_add_after(f->q, key, 1 * SEC), 0);
  }
  kcr_fake_clock_step(f->clock, 1 * SEC);
  for (i = 0; i < 5000 && atomic_load(&w.got) < WAKE_KEYS; i++)
    sleep_ms(1);
  assert_int_equal(atomic_load(&w.got), WAKE_KEYS);
  kcr_workqueue_shutdown(f->q);
  for (i = 0; i < WAKE_WORKERS; i++)
    pthread_join(t[i], NULL);
}

static void test_workqueue_delaying_shutdown_drops_waiting_keys(void **state) {
  struct fixture *f = *state;
  char *key;
  assert_int_equal(kcr_workqueue_add_after(f->q, "waiting", 10 * MS), 0);
  assert_int_equal(kcr_workqueue_add(f->q, "queued"), 0);
  kcr_workqueue_shutdown(f->q);
  assert_int_equal(kcr_workqueue_add_after(f->q, "late", 10 * MS), KCR_ECLOSED);
  assert_int_equal(kcr_workqueue_add_after(f->q, "late", 0), KCR_ECLOSED);
  assert_int_equal(kcr_workqueue_add_rate_limited(f->q, "late"), KCR_ECLOSED);
  kcr_fake_clock_step(f->clock, 20 * MS);
  get_expect(f->q, "queued");
  assert_int_equal(kcr_workqueue_get(f->q, &key), KCR_ECLOSED);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
}

static void test_workqueue_delaying_never_delay_waits_forever(void **state) {
  struct fixture *f = *state;
  assert_int_equal(kcr_workqueue_add_after(f->q, "never", KCR_RATELIMITER_NEVER), 0);
  kcr_fake_clock_step(f->clock, 1000000 * SEC);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
}

/* ---- rate_limiting_queue_test.go ---- */

/* due_after checks that key becomes ready exactly delay after now. */
static void due_after(struct fixture *f, const char *key, int64_t delay) {
  kcr_fake_clock_step(f->clock, delay - 1);
  assert_int_equal(kcr_workqueue_len(f->q), 0);
  kcr_fake_clock_step(f->clock, 1);
  assert_int_equal(kcr_workqueue_len(f->q), 1);
  get_expect(f->q, key);
}

static void test_workqueue_rate_limited_uses_the_limiter(void **state) {
  struct fixture f;
  kcr_ratelimiter_t *rl;
  (void)state;
  assert_int_equal(kcr_ratelimiter_exponential_create(1 * MS, 1 * SEC, &rl, NULL), 0);
  assert_int_equal(setup_named(&f, NULL, rl), 0);

  assert_int_equal(kcr_workqueue_add_rate_limited(f.q, "one"), 0);
  due_after(&f, "one", 1 * MS);
  assert_int_equal(kcr_workqueue_add_rate_limited(f.q, "one"), 0);
  due_after(&f, "one", 2 * MS);
  assert_int_equal(kcr_workqueue_num_requeues(f.q, "one"), 2);

  assert_int_equal(kcr_workqueue_add_rate_limited(f.q, "two"), 0);
  due_after(&f, "two", 1 * MS);
  assert_int_equal(kcr_workqueue_add_rate_limited(f.q, "two"), 0);
  due_after(&f, "two", 2 * MS);

  kcr_workqueue_forget(f.q, "one");
  assert_int_equal(kcr_workqueue_num_requeues(f.q, "one"), 0);
  assert_int_equal(kcr_workqueue_add_rate_limited(f.q, "one"), 0);
  due_after(&f, "one", 1 * MS);
  assert_int_equal(kcr_workqueue_num_requeues(f.q, "two"), 2);

  kcr_workqueue_destroy(f.q);
  kcr_clock_destroy(f.clock);
}

static void test_workqueue_rate_limited_default_limiter(void **state) {
  struct fixture *f = *state;
  int i;
  /* 5 ms, 10 ms, 20 ms for one key (the bucket's 100 tokens are not exhausted). */
  assert_int_equal(kcr_workqueue_add_rate_limited(f->q, "k"), 0);
  due_after(f, "k", 5 * MS);
  assert_int_equal(kcr_workqueue_add_rate_limited(f->q, "k"), 0);
  due_after(f, "k", 10 * MS);
  assert_int_equal(kcr_workqueue_add_rate_limited(f->q, "k"), 0);
  due_after(f, "k", 20 * MS);
  assert_int_equal(kcr_workqueue_num_requeues(f->q, "k"), 3);
  kcr_workqueue_forget(f->q, "k");
  /* The bucket (10 qps, burst 100): 97 tokens left after 3, refilled by 35 ms
   * (0.35 token); the 98th..101st retries of fresh keys come out at 5 ms (the
   * exponential floor) until the bucket runs dry. */
  for (i = 0; i < 97; i++) {
    char key[16];
    snprintf(key, sizeof(key), "f%d", i);
    assert_int_equal(kcr_workqueue_add_rate_limited(f->q, key), 0);
  }
  assert_int_equal(kcr_workqueue_add_rate_limited(f->q, "dry"), 0);
  /* tokens: 100 - 3 + 0.35 - 97 - 1 = -0.65 -> 65 ms. */
  kcr_fake_clock_step(f->clock, 5 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 97);
  kcr_fake_clock_step(f->clock, 60 * MS - 1);
  assert_int_equal(kcr_workqueue_len(f->q), 97);
  kcr_fake_clock_step(f->clock, 1);
  assert_int_equal(kcr_workqueue_len(f->q), 98);
}

static int when_fails(void *data, const char *key, int64_t *delay) {
  (void)data;
  (void)key;
  (void)delay;
  return KCR_ENOMEM;
}

static void test_workqueue_rate_limited_limiter_failure_adds_nothing(void **state) {
  static const kcr_ratelimiter_ops ops = {when_fails, NULL, NULL, NULL};
  struct fixture f;
  kcr_ratelimiter_t *rl;
  (void)state;
  assert_int_equal(kcr_ratelimiter_create(&ops, NULL, &rl, NULL), 0);
  assert_int_equal(setup_named(&f, NULL, rl), 0);
  assert_int_equal(kcr_workqueue_add_rate_limited(f.q, "k"), KCR_ENOMEM);
  kcr_fake_clock_step(f.clock, 1000 * SEC);
  assert_int_equal(kcr_workqueue_len(f.q), 0);
  assert_int_equal(kcr_workqueue_num_requeues(f.q, "k"), 0);
  kcr_workqueue_forget(f.q, "k");
  kcr_workqueue_destroy(f.q);
  kcr_clock_destroy(f.clock);
}

/* ---- metrics ---- */

/* series returns the "ctrl" queue's child of family on the fixture's registry. */
static kcr_metric_child_t *series(struct fixture *f, const char *family) {
  kcr_metric_t *m = kcr_metrics_find(f->reg, family);
  assert_non_null(m);
  if (strcmp(family, KCR_WORKQUEUE_METRIC_DEPTH) == 0)
    return kcr_metric_withv(m, "ctrl", "ctrl", KCR_WORKQUEUE_DEFAULT_PRIORITY, NULL);
  return kcr_metric_withv(m, "ctrl", "ctrl", NULL);
}

static double value(struct fixture *f, const char *family) {
  return kcr_metric_value(series(f, family));
}

/* scrape renders the registry as /metrics does (running the queue's collector,
 * which computes the unfinished-work gauges). The text is the caller's. */
static char *scrape(struct fixture *f) {
  kcr_buf_t b;
  kcr_buf_init(&b, 1u << 24);
  assert_int_equal(kcr_metrics_render(f->reg, &b), 0);
  return kcr_buf_take(&b, NULL);
}

static void scrape_discard(struct fixture *f) {
  kcr_free(scrape(f));
}

static void test_workqueue_metrics_follow_client_go(void **state) {
  struct fixture *f = *state;
  char *key, *text;

  assert_string_equal(kcr_workqueue_name(f->q), "ctrl");
  /* The series exist at zero from create on. */
  text = scrape(f);
  assert_non_null(
      strstr(text, "\nworkqueue_depth{name=\"ctrl\",controller=\"ctrl\",priority=\"0\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_adds_total{name=\"ctrl\",controller=\"ctrl\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_retries_total{name=\"ctrl\",controller=\"ctrl\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_queue_duration_seconds_count{name=\"ctrl\","
                               "controller=\"ctrl\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_work_duration_seconds_count{name=\"ctrl\","
                               "controller=\"ctrl\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_unfinished_work_seconds{name=\"ctrl\","
                               "controller=\"ctrl\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_longest_running_processor_seconds{name=\"ctrl\","
                               "controller=\"ctrl\"} 0\n"));
  kcr_free(text);

  assert_int_equal(kcr_workqueue_add(f->q, "a"), 0);
  assert_int_equal(kcr_workqueue_add(f->q, "a"), 0); /* dirty: not an add */
  assert_int_equal(kcr_workqueue_add(f->q, "b"), 0);
  assert_true(value(f, KCR_WORKQUEUE_METRIC_DEPTH) == 2);
  assert_true(value(f, KCR_WORKQUEUE_METRIC_ADDS) == 2);

  kcr_fake_clock_step(f->clock, 50 * MS);
  assert_int_equal(kcr_workqueue_get(f->q, &key), 0); /* "a", waited 50 ms */
  kcr_fake_clock_step(f->clock, 3 * SEC);
  assert_int_equal(kcr_workqueue_add(f->q, key), 0); /* dirty while processing */
  text = scrape(f);
  assert_true(value(f, KCR_WORKQUEUE_METRIC_DEPTH) == 2); /* b queued, a dirty again */
  assert_true(value(f, KCR_WORKQUEUE_METRIC_ADDS) == 3);
  assert_int_equal(kcr_metric_count(series(f, KCR_WORKQUEUE_METRIC_QUEUE_DURATION)), 1);
  assert_true(fabs(value(f, KCR_WORKQUEUE_METRIC_QUEUE_DURATION) - 0.05) < 1e-9);
  /* 50 ms falls in the le=0.1 bucket, not in le=0.01; the bounds run 1e-08 .. 1000. */
  assert_non_null(strstr(text, "\nworkqueue_queue_duration_seconds_bucket{name=\"ctrl\","
                               "controller=\"ctrl\",le=\"1e-08\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_queue_duration_seconds_bucket{name=\"ctrl\","
                               "controller=\"ctrl\",le=\"0.01\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_queue_duration_seconds_bucket{name=\"ctrl\","
                               "controller=\"ctrl\",le=\"0.1\"} 1\n"));
  assert_non_null(strstr(text, "\nworkqueue_queue_duration_seconds_bucket{name=\"ctrl\","
                               "controller=\"ctrl\",le=\"1000\"} 1\n"));
  kcr_free(text);
  assert_true(fabs(value(f, KCR_WORKQUEUE_METRIC_UNFINISHED_WORK) - 3.0) < 1e-9);
  assert_true(fabs(value(f, KCR_WORKQUEUE_METRIC_LONGEST_RUNNING) - 3.0) < 1e-9);

  kcr_workqueue_done(f->q, key); /* worked 3 s */
  kcr_free(key);
  text = scrape(f);
  assert_int_equal(kcr_metric_count(series(f, KCR_WORKQUEUE_METRIC_WORK_DURATION)), 1);
  assert_true(fabs(value(f, KCR_WORKQUEUE_METRIC_WORK_DURATION) - 3.0) < 1e-9);
  assert_non_null(strstr(text, "\nworkqueue_work_duration_seconds_bucket{name=\"ctrl\","
                               "controller=\"ctrl\",le=\"1\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_work_duration_seconds_bucket{name=\"ctrl\","
                               "controller=\"ctrl\",le=\"10\"} 1\n"));
  kcr_free(text);
  assert_true(value(f, KCR_WORKQUEUE_METRIC_UNFINISHED_WORK) == 0.0);
  assert_true(value(f, KCR_WORKQUEUE_METRIC_LONGEST_RUNNING) == 0.0);

  /* Two in flight: unfinished is the sum of ages, longest the oldest. */
  assert_int_equal(kcr_workqueue_get(f->q, &key), 0); /* "b" */
  kcr_free(key);
  kcr_fake_clock_step(f->clock, 1 * SEC);
  assert_int_equal(kcr_workqueue_get(f->q, &key), 0); /* "a" */
  kcr_free(key);
  kcr_fake_clock_step(f->clock, 1 * SEC);
  scrape_discard(f);
  assert_true(value(f, KCR_WORKQUEUE_METRIC_DEPTH) == 0);
  assert_true(fabs(value(f, KCR_WORKQUEUE_METRIC_UNFINISHED_WORK) - 3.0) < 1e-9);
  assert_true(fabs(value(f, KCR_WORKQUEUE_METRIC_LONGEST_RUNNING) - 2.0) < 1e-9);
  kcr_workqueue_done(f->q, "a");
  kcr_workqueue_done(f->q, "b");

  /* Retries: every accepted add_after, whatever the delay. */
  assert_int_equal(kcr_workqueue_add_after(f->q, "c", 0), 0);
  assert_int_equal(kcr_workqueue_add_after(f->q, "d", 10 * MS), 0);
  assert_int_equal(kcr_workqueue_add_rate_limited(f->q, "e"), 0);
  assert_true(value(f, KCR_WORKQUEUE_METRIC_RETRIES) == 3);
  assert_true(value(f, KCR_WORKQUEUE_METRIC_DEPTH) == 1); /* only c is ready */
  /* A scrape moves due keys first, so depth never counts a due key as waiting. */
  kcr_fake_clock_step(f->clock, 30 * MS);
  assert_true(value(f, KCR_WORKQUEUE_METRIC_DEPTH) == 1); /* no queue call since */
  text = scrape(f);
  assert_non_null(
      strstr(text, "\nworkqueue_depth{name=\"ctrl\",controller=\"ctrl\",priority=\"0\"} 3\n"));
  kcr_free(text);
  /* A delayed key's queue time starts when it is due. */
  get_expect(f->q, "c");
  get_expect(f->q, "e");
  get_expect(f->q, "d");
  assert_true(value(f, KCR_WORKQUEUE_METRIC_ADDS) == 6);
  assert_int_equal(kcr_metric_count(series(f, KCR_WORKQUEUE_METRIC_QUEUE_DURATION)), 6);
  /* a 50 ms, b 3.05 s, a 1 s, c 30 ms, e 25 ms, d 20 ms. */
  assert_true(fabs(value(f, KCR_WORKQUEUE_METRIC_QUEUE_DURATION) - 4.175) < 1e-9);
}

/* An observation equal to a bound lands in that bound's bucket (le is <=). */
static void test_workqueue_metrics_bound_is_inclusive(void **state) {
  struct fixture *f = *state;
  char *key, *text;
  assert_int_equal(kcr_workqueue_add(f->q, "a"), 0);
  kcr_fake_clock_step(f->clock, 10); /* 10 ns: the first bound */
  assert_int_equal(kcr_workqueue_get(f->q, &key), 0);
  kcr_fake_clock_step(f->clock, 1000 * SEC); /* the last bound */
  kcr_workqueue_done(f->q, key);
  kcr_free(key);
  text = scrape(f);
  assert_non_null(strstr(text, "\nworkqueue_queue_duration_seconds_bucket{name=\"ctrl\","
                               "controller=\"ctrl\",le=\"1e-08\"} 1\n"));
  assert_non_null(strstr(text, "\nworkqueue_work_duration_seconds_bucket{name=\"ctrl\","
                               "controller=\"ctrl\",le=\"100\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_work_duration_seconds_bucket{name=\"ctrl\","
                               "controller=\"ctrl\",le=\"1000\"} 1\n"));
  kcr_free(text);
}

/* Two queues on one registry share the families, one series each; an unnamed
 * queue or one without a registry keeps none. */
static void test_workqueue_metrics_per_queue_series(void **state) {
  kcr_metrics_registry_t *r;
  kcr_workqueue_t *a, *b, *unnamed;
  kcr_workqueue_options o;
  kcr_metric_t *adds;
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.metrics = r;
  o.name = "qa";
  assert_int_equal(kcr_workqueue_create(&o, &a, NULL), 0);
  o.name = "qb";
  assert_int_equal(kcr_workqueue_create(&o, &b, NULL), 0);
  o.name = NULL;
  assert_int_equal(kcr_workqueue_create(&o, &unnamed, NULL), 0);
  assert_int_equal(kcr_workqueue_add(a, "k1"), 0);
  assert_int_equal(kcr_workqueue_add(a, "k2"), 0);
  assert_int_equal(kcr_workqueue_add(b, "k1"), 0);
  assert_int_equal(kcr_workqueue_add(unnamed, "k1"), 0);
  adds = kcr_metrics_find(r, KCR_WORKQUEUE_METRIC_ADDS);
  assert_non_null(adds);
  assert_true(kcr_metric_value(kcr_metric_withv(adds, "qa", "qa", NULL)) == 2);
  assert_true(kcr_metric_value(kcr_metric_withv(adds, "qb", "qb", NULL)) == 1);
  assert_true(kcr_metric_value(kcr_metric_withv(adds, "", "", NULL)) == 0);
  kcr_workqueue_destroy(unnamed);
  kcr_workqueue_destroy(b);
  kcr_workqueue_destroy(a);
  /* The collectors are gone with the queues: a scrape touches no freed queue. */
  {
    kcr_buf_t buf;
    kcr_buf_init(&buf, 1u << 24);
    assert_int_equal(kcr_metrics_render(r, &buf), 0);
    kcr_buf_free(&buf);
  }
  kcr_metrics_registry_destroy(r);
}

static void test_workqueue_metrics_names(void **state) {
  (void)state;
  assert_string_equal(KCR_WORKQUEUE_METRIC_LONGEST_RUNNING,
                      "workqueue_longest_running_processor_seconds");
}

/* ---- allocation failures ---- */

static void test_workqueue_delaying_alloc_failure(void **state) {
  struct fixture *f = *state;
  char key[16];
  int i;
  /* Through heap and set growth, on new keys and on keys already known. */
  for (i = 0; i < 40; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    KCR_TEST_ALLOC_LOOP(kcr_workqueue_add_after(f->q, key, (100 - i) * MS), (void)0);
  }
  KCR_TEST_ALLOC_LOOP(kcr_workqueue_add_rate_limited(f->q, "k0"), (void)0);
  KCR_TEST_ALLOC_LOOP(kcr_workqueue_add_rate_limited(f->q, "new"), (void)0);
  kcr_fake_clock_step(f->clock, 100 * MS);
  assert_int_equal(kcr_workqueue_len(f->q), 41);
  get_expect(f->q, "k0"); /* 5 ms: the rate-limited retry moved it forward */
  get_expect(f->q, "new");
  for (i = 39; i >= 1; i--) {
    snprintf(key, sizeof(key), "k%d", i);
    get_expect(f->q, key);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_simple, setup, teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_ready_exactly_at_deadline, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_dedup_keeps_earliest, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_add_two_fire_early, setup, teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_copy_shifting, setup, teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_many_keys_come_out_in_time_order,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_nonpositive_delay_adds_now, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_waiting_key_also_added_now, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_key_processing_when_due, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_blocked_get_wakes_when_due, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_due_keys_wake_every_getter, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_shutdown_drops_waiting_keys, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_never_delay_waits_forever, setup,
                                      teardown),
      cmocka_unit_test(test_workqueue_rate_limited_uses_the_limiter),
      cmocka_unit_test_setup_teardown(test_workqueue_rate_limited_default_limiter, setup, teardown),
      cmocka_unit_test(test_workqueue_rate_limited_limiter_failure_adds_nothing),
      cmocka_unit_test_setup_teardown(test_workqueue_metrics_follow_client_go, setup_metrics,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_workqueue_metrics_bound_is_inclusive, setup_metrics,
                                      teardown),
      cmocka_unit_test(test_workqueue_metrics_per_queue_series),
      cmocka_unit_test(test_workqueue_metrics_names),
      cmocka_unit_test_setup_teardown(test_workqueue_delaying_alloc_failure, setup_metrics,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
