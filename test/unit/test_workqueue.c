/* SPDX-License-Identifier: MIT */
/*
 * test_workqueue.c: the plain queue, after client-go's queue_test.go: many
 * producers and consumers, add while processing, len, reinsert, the two
 * shutdowns, and no key on two workers at once; plus allocation failures.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcr/workqueue.h"
#include "testutil.h"

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static kcr_workqueue_t *new_queue(void) {
  kcr_workqueue_t *q = NULL;
  assert_int_equal(kcr_workqueue_create(NULL, &q, NULL), 0);
  assert_non_null(q);
  return q;
}

/* get_expect gets one key and checks it. */
static void get_expect(kcr_workqueue_t *q, const char *want) {
  char *key = NULL;
  assert_int_equal(kcr_workqueue_get(q, &key), 0);
  assert_string_equal(key, want);
  kcr_free(key);
}

/* ---- many producers, many consumers (TestBasic) ---- */

struct basic {
  kcr_workqueue_t *q;
  int id;
  atomic_int bad; /* consumers: got the key added after shutdown */
  int sleep_each;
};

static void *basic_producer(void *arg) {
  struct basic *b = arg;
  char key[16];
  int j;
  snprintf(key, sizeof(key), "%d", b->id);
  for (j = 0; j < 20; j++) {
    KCR_TEST_THREAD_CHECK(kcr_workqueue_add(b->q, key) == 0);
    sleep_ms(1);
  }
  return NULL;
}

static void *basic_consumer(void *arg) {
  struct basic *b = arg;
  char *key;
  for (;;) {
    int rc = kcr_workqueue_get(b->q, &key);
    if (rc == KCR_ECLOSED)
      return NULL;
    if (rc != 0 || strcmp(key, "added after shutdown!") == 0)
      atomic_fetch_add(&b->bad, 1);
    if (b->sleep_each)
      sleep_ms(b->sleep_each);
    kcr_workqueue_done(b->q, key);
    kcr_free(key);
  }
}

static void run_basic(int drain) {
  enum { PRODUCERS = 20, CONSUMERS = 10 };
  kcr_workqueue_t *q = new_queue();
  pthread_t prod[PRODUCERS], cons[CONSUMERS];
  struct basic pa[PRODUCERS], ca;
  int i;

  memset(&ca, 0, sizeof(ca));
  ca.q = q;
  ca.sleep_each = 2;
  for (i = 0; i < CONSUMERS; i++)
    assert_int_equal(pthread_create(&cons[i], NULL, basic_consumer, &ca), 0);
  for (i = 0; i < PRODUCERS; i++) {
    pa[i].q = q;
    pa[i].id = i;
    assert_int_equal(pthread_create(&prod[i], NULL, basic_producer, &pa[i]), 0);
  }
  for (i = 0; i < PRODUCERS; i++)
    pthread_join(prod[i], NULL);
  if (drain)
    kcr_workqueue_shutdown_with_drain(q);
  else
    kcr_workqueue_shutdown(q);
  assert_int_equal(kcr_workqueue_add(q, "added after shutdown!"), KCR_ECLOSED);
  for (i = 0; i < CONSUMERS; i++)
    pthread_join(cons[i], NULL);
  assert_int_equal(atomic_load(&ca.bad), 0);
  assert_int_equal(kcr_workqueue_len(q), 0);
  assert_true(kcr_workqueue_shutting_down(q));
  kcr_workqueue_destroy(q);
}

static void test_workqueue_basic_producers_consumers(void **state) {
  (void)state;
  run_basic(0);
  run_basic(1);
}

/* ---- TestAddWhileProcessing ---- */

struct awp {
  kcr_workqueue_t *q;
  atomic_int handled[50];
};

static void *awp_producer(void *arg) {
  struct basic *b = arg;
  char key[16];
  snprintf(key, sizeof(key), "%d", b->id);
  KCR_TEST_THREAD_CHECK(kcr_workqueue_add(b->q, key) == 0);
  return NULL;
}

static void *awp_consumer(void *arg) {
  struct awp *a = arg;
  int counters[50] = {0};
  char *key;
  while (kcr_workqueue_get(a->q, &key) == 0) {
    int k = (int)strtol(key, NULL, 10);
    atomic_fetch_add(&a->handled[k], 1);
    /* Every worker re-adds every key it sees the first time: the
     * dirty-while-processing path. */
    if (++counters[k] < 2) {
      int rc = kcr_workqueue_add(a->q, key);
      KCR_TEST_THREAD_CHECK(rc == 0 || rc == KCR_ECLOSED); /* a re-add may race the shutdown */
    }
    kcr_workqueue_done(a->q, key);
    kcr_free(key);
  }
  return NULL;
}

static void test_workqueue_add_while_processing(void **state) {
  enum { PRODUCERS = 50, CONSUMERS = 10 };
  int drain;
  (void)state;
  for (drain = 0; drain < 2; drain++) {
    struct awp a;
    struct basic pa[PRODUCERS];
    pthread_t prod[PRODUCERS], cons[CONSUMERS];
    int i;
    memset(&a, 0, sizeof(a));
    a.q = new_queue();
    for (i = 0; i < PRODUCERS; i++) {
      pa[i].q = a.q;
      pa[i].id = i;
      assert_int_equal(pthread_create(&prod[i], NULL, awp_producer, &pa[i]), 0);
    }
    for (i = 0; i < CONSUMERS; i++)
      assert_int_equal(pthread_create(&cons[i], NULL, awp_consumer, &a), 0);
    for (i = 0; i < PRODUCERS; i++)
      pthread_join(prod[i], NULL);
    /* Let the consumers work before shutting down, so re-adds are accepted. */
    while (kcr_workqueue_len(a.q) > 0)
      sleep_ms(1);
    if (drain)
      kcr_workqueue_shutdown_with_drain(a.q);
    else
      kcr_workqueue_shutdown(a.q);
    for (i = 0; i < CONSUMERS; i++)
      pthread_join(cons[i], NULL);
    assert_int_equal(kcr_workqueue_len(a.q), 0);
    for (i = 0; i < PRODUCERS; i++)
      assert_true(atomic_load(&a.handled[i]) >= 1);
    kcr_workqueue_destroy(a.q);
  }
}

/* ---- TestLen, TestReinsert ---- */

static void test_workqueue_len_counts_distinct_keys(void **state) {
  kcr_workqueue_t *q = new_queue();
  (void)state;
  assert_int_equal(kcr_workqueue_len(q), 0);
  assert_int_equal(kcr_workqueue_add(q, "foo"), 0);
  assert_int_equal(kcr_workqueue_len(q), 1);
  assert_int_equal(kcr_workqueue_add(q, "bar"), 0);
  assert_int_equal(kcr_workqueue_len(q), 2);
  assert_int_equal(kcr_workqueue_add(q, "foo"), 0); /* dirty: no-op */
  assert_int_equal(kcr_workqueue_len(q), 2);
  /* FIFO order of first adds. */
  get_expect(q, "foo");
  assert_int_equal(kcr_workqueue_len(q), 1);
  get_expect(q, "bar");
  assert_int_equal(kcr_workqueue_len(q), 0);
  kcr_workqueue_done(q, "foo");
  kcr_workqueue_done(q, "bar");
  kcr_workqueue_destroy(q);
}

static void test_workqueue_reinsert_while_processing(void **state) {
  kcr_workqueue_t *q = new_queue();
  char *key;
  (void)state;
  assert_int_equal(kcr_workqueue_add(q, "foo"), 0);
  assert_int_equal(kcr_workqueue_get(q, &key), 0);
  assert_string_equal(key, "foo");
  /* Added back while processing: not queued yet (never on two workers). */
  assert_int_equal(kcr_workqueue_add(q, key), 0);
  assert_int_equal(kcr_workqueue_len(q), 0);
  kcr_workqueue_done(q, key);
  kcr_free(key);
  /* Back on the queue after done. */
  assert_int_equal(kcr_workqueue_len(q), 1);
  get_expect(q, "foo");
  kcr_workqueue_done(q, "foo");
  assert_int_equal(kcr_workqueue_len(q), 0);
  kcr_workqueue_destroy(q);
}

static void test_workqueue_done_of_unknown_key_is_ignored(void **state) {
  kcr_workqueue_t *q = new_queue();
  (void)state;
  kcr_workqueue_done(q, "never-added");
  assert_int_equal(kcr_workqueue_add(q, "a"), 0);
  kcr_workqueue_done(q, "a"); /* dirty but not processing: no duplicate */
  assert_int_equal(kcr_workqueue_len(q), 1);
  get_expect(q, "a");
  kcr_workqueue_done(q, "a");
  kcr_workqueue_done(q, "a"); /* twice */
  assert_int_equal(kcr_workqueue_len(q), 0);
  kcr_workqueue_destroy(q);
}

/* ---- blocking get ---- */

struct getter {
  kcr_workqueue_t *q;
  int rc;
  char *key;
  atomic_int started;
};

static void *getter_main(void *arg) {
  struct getter *g = arg;
  atomic_store(&g->started, 1);
  g->rc = kcr_workqueue_get(g->q, &g->key);
  return NULL;
}

static void test_workqueue_get_blocks_until_add(void **state) {
  struct getter g;
  pthread_t t;
  (void)state;
  memset(&g, 0, sizeof(g));
  g.q = new_queue();
  assert_int_equal(pthread_create(&t, NULL, getter_main, &g), 0);
  while (!atomic_load(&g.started))
    sleep_ms(1);
  sleep_ms(5);
  assert_int_equal(kcr_workqueue_add(g.q, "k"), 0);
  pthread_join(t, NULL);
  assert_int_equal(g.rc, 0);
  assert_string_equal(g.key, "k");
  kcr_workqueue_done(g.q, g.key);
  kcr_free(g.key);
  kcr_workqueue_destroy(g.q);
}

static void test_workqueue_shutdown_wakes_getters_and_hands_out_the_rest(void **state) {
  struct getter g;
  pthread_t t;
  kcr_workqueue_t *q;
  char *key;
  (void)state;
  memset(&g, 0, sizeof(g));
  g.q = q = new_queue();
  assert_int_equal(pthread_create(&t, NULL, getter_main, &g), 0);
  while (!atomic_load(&g.started))
    sleep_ms(1);
  sleep_ms(5);
  kcr_workqueue_shutdown(q);
  pthread_join(t, NULL);
  assert_int_equal(g.rc, KCR_ECLOSED);
  assert_null(g.key);
  kcr_workqueue_shutdown(q); /* idempotent */
  kcr_workqueue_destroy(q);

  /* Queued keys are still handed out during shutdown. */
  q = new_queue();
  assert_int_equal(kcr_workqueue_add(q, "a"), 0);
  assert_int_equal(kcr_workqueue_add(q, "b"), 0);
  kcr_workqueue_shutdown(q);
  assert_int_equal(kcr_workqueue_add(q, "c"), KCR_ECLOSED);
  get_expect(q, "a");
  get_expect(q, "b");
  assert_int_equal(kcr_workqueue_get(q, &key), KCR_ECLOSED);
  assert_null(key);
  kcr_workqueue_done(q, "a");
  kcr_workqueue_done(q, "b");
  kcr_workqueue_destroy(q);
}

/* ---- the shutdowns (TestQueueDrainage... and friends) ---- */

struct drainer {
  kcr_workqueue_t *q;
  atomic_int finished;
};

static void *drainer_main(void *arg) {
  struct drainer *d = arg;
  kcr_workqueue_shutdown_with_drain(d->q);
  atomic_store(&d->finished, 1);
  return NULL;
}

static void *shutdown_main(void *arg) {
  struct drainer *d = arg;
  kcr_workqueue_shutdown(d->q);
  atomic_store(&d->finished, 1);
  return NULL;
}

/* wait_shutting_down spins on get until it reports the shutdown. */
static void wait_shutting_down(kcr_workqueue_t *q) {
  char *key;
  while (kcr_workqueue_get(q, &key) != KCR_ECLOSED) {
    kcr_workqueue_done(q, key);
    kcr_free(key);
  }
}

static void test_workqueue_shutdown_with_drain_waits_for_done(void **state) {
  struct drainer d;
  pthread_t t;
  (void)state;
  memset(&d, 0, sizeof(d));
  d.q = new_queue();
  assert_int_equal(kcr_workqueue_add(d.q, "foo"), 0);
  assert_int_equal(kcr_workqueue_add(d.q, "bar"), 0);
  get_expect(d.q, "foo");
  get_expect(d.q, "bar");
  assert_int_equal(pthread_create(&t, NULL, drainer_main, &d), 0);
  wait_shutting_down(d.q);
  sleep_ms(5);
  assert_int_equal(atomic_load(&d.finished), 0); /* still waiting for done */
  kcr_workqueue_done(d.q, "foo");
  sleep_ms(2);
  assert_int_equal(atomic_load(&d.finished), 0);
  kcr_workqueue_done(d.q, "bar");
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&d.finished), 1);
  kcr_workqueue_destroy(d.q);
}

static void test_workqueue_shutdown_does_not_wait(void **state) {
  struct drainer d;
  pthread_t t;
  (void)state;
  memset(&d, 0, sizeof(d));
  d.q = new_queue();
  assert_int_equal(kcr_workqueue_add(d.q, "foo"), 0);
  assert_int_equal(kcr_workqueue_add(d.q, "bar"), 0);
  get_expect(d.q, "foo");
  get_expect(d.q, "bar");
  assert_int_equal(pthread_create(&t, NULL, shutdown_main, &d), 0);
  pthread_join(t, NULL); /* returns although nothing was done */
  kcr_workqueue_destroy(d.q);
}

static void test_workqueue_shutdown_releases_a_draining_shutdown(void **state) {
  struct drainer d;
  pthread_t t;
  (void)state;
  memset(&d, 0, sizeof(d));
  d.q = new_queue();
  assert_int_equal(kcr_workqueue_add(d.q, "foo"), 0);
  assert_int_equal(kcr_workqueue_add(d.q, "bar"), 0);
  get_expect(d.q, "foo");
  get_expect(d.q, "bar");
  assert_int_equal(pthread_create(&t, NULL, drainer_main, &d), 0);
  wait_shutting_down(d.q);
  /* The second signal: force the shutdown although nothing is done. */
  kcr_workqueue_shutdown(d.q);
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&d.finished), 1);
  kcr_workqueue_destroy(d.q);
}

static void test_workqueue_shutdown_with_drain_hands_out_dirty_key(void **state) {
  struct drainer d;
  pthread_t t;
  char *key;
  (void)state;
  memset(&d, 0, sizeof(d));
  d.q = new_queue();
  assert_int_equal(kcr_workqueue_add(d.q, "foo"), 0);
  get_expect(d.q, "foo");
  assert_int_equal(kcr_workqueue_add(d.q, "foo"), 0); /* dirty while processing */
  assert_int_equal(pthread_create(&t, NULL, drainer_main, &d), 0);
  while (!kcr_workqueue_shutting_down(d.q))
    sleep_ms(1);
  assert_int_equal(kcr_workqueue_get(d.q, &key), KCR_ECLOSED);
  kcr_workqueue_done(d.q, "foo");
  /* Done put the dirty key back: it is handed out even though shutting down. */
  get_expect(d.q, "foo");
  kcr_workqueue_done(d.q, "foo");
  assert_int_equal(kcr_workqueue_get(d.q, &key), KCR_ECLOSED);
  pthread_join(t, NULL);
  kcr_workqueue_destroy(d.q);
}

static void test_workqueue_shutdown_with_drain_on_idle_queue_returns(void **state) {
  kcr_workqueue_t *q = new_queue();
  (void)state;
  kcr_workqueue_shutdown_with_drain(q);
  assert_true(kcr_workqueue_shutting_down(q));
  kcr_workqueue_destroy(q);
}

/* ---- never two workers on one key ---- */

enum { NT_KEYS = 32, NT_WORKERS = 8, NT_PRODUCERS = 4, NT_ADDS = 2000 };

struct exclusive {
  kcr_workqueue_t *q;
  atomic_int in_use[NT_KEYS];
  atomic_int pending[NT_KEYS];
  atomic_int overlaps;
  atomic_long processed;
  unsigned seed;
};

static void *exclusive_producer(void *arg) {
  struct exclusive *x = arg;
  unsigned r = (unsigned)(uintptr_t)&r;
  char key[16];
  int i;
  for (i = 0; i < NT_ADDS; i++) {
    int k;
    r = r * 1103515245u + 12345u;
    k = (int)((r >> 16) % NT_KEYS);
    snprintf(key, sizeof(key), "ns/obj-%d", k);
    /* Marked before the add: some get must come after this point. */
    atomic_store(&x->pending[k], 1);
    KCR_TEST_THREAD_CHECK(kcr_workqueue_add(x->q, key) == 0);
  }
  return NULL;
}

static void *exclusive_worker(void *arg) {
  struct exclusive *x = arg;
  char *key;
  while (kcr_workqueue_get(x->q, &key) == 0) {
    int k = (int)strtol(key + strlen("ns/obj-"), NULL, 10);
    if (atomic_fetch_add(&x->in_use[k], 1) != 0)
      atomic_fetch_add(&x->overlaps, 1);
    atomic_store(&x->pending[k], 0);
    sched_yield();
    atomic_fetch_sub(&x->in_use[k], 1);
    atomic_fetch_add(&x->processed, 1);
    kcr_workqueue_done(x->q, key);
    kcr_free(key);
  }
  return NULL;
}

static void test_workqueue_never_hands_a_key_to_two_workers(void **state) {
  struct exclusive *x = calloc(1, sizeof(*x));
  pthread_t w[NT_WORKERS], p[NT_PRODUCERS];
  int i;
  (void)state;
  assert_non_null(x);
  x->q = new_queue();
  for (i = 0; i < NT_WORKERS; i++)
    assert_int_equal(pthread_create(&w[i], NULL, exclusive_worker, x), 0);
  for (i = 0; i < NT_PRODUCERS; i++)
    assert_int_equal(pthread_create(&p[i], NULL, exclusive_producer, x), 0);
  for (i = 0; i < NT_PRODUCERS; i++)
    pthread_join(p[i], NULL);
  kcr_workqueue_shutdown_with_drain(x->q);
  for (i = 0; i < NT_WORKERS; i++)
    pthread_join(w[i], NULL);
  assert_int_equal(atomic_load(&x->overlaps), 0);
  /* Every add was followed by a processing of its key. */
  for (i = 0; i < NT_KEYS; i++)
    assert_int_equal(atomic_load(&x->pending[i]), 0);
  assert_true(atomic_load(&x->processed) >= NT_KEYS);
  assert_true(atomic_load(&x->processed) <= (long)NT_PRODUCERS * NT_ADDS);
  kcr_workqueue_destroy(x->q);
  free(x);
}

/* ---- many keys: the hash set grows and shrinks ---- */

static void test_workqueue_many_distinct_keys(void **state) {
  enum { N = 5000 };
  kcr_workqueue_t *q = new_queue();
  char want[32], *key;
  int i;
  (void)state;
  for (i = 0; i < N; i++) {
    snprintf(want, sizeof(want), "namespace-%d/name-%d", i % 7, i);
    assert_int_equal(kcr_workqueue_add(q, want), 0);
    assert_int_equal(kcr_workqueue_add(q, want), 0);
  }
  assert_int_equal(kcr_workqueue_len(q), N);
  for (i = 0; i < N; i++) {
    snprintf(want, sizeof(want), "namespace-%d/name-%d", i % 7, i);
    assert_int_equal(kcr_workqueue_get(q, &key), 0);
    assert_string_equal(key, want);
    if (i % 2)
      kcr_workqueue_done(q, key); /* half done now, half left processing */
    kcr_free(key);
  }
  assert_int_equal(kcr_workqueue_len(q), 0);
  for (i = 0; i < N; i += 2) {
    snprintf(want, sizeof(want), "namespace-%d/name-%d", i % 7, i);
    kcr_workqueue_done(q, want);
  }
  assert_int_equal(kcr_workqueue_add(q, "last"), 0);
  get_expect(q, "last");
  kcr_workqueue_done(q, "last");
  kcr_workqueue_destroy(q); /* destroy with keys still known is clean too */
}

static void test_workqueue_destroy_with_keys_in_every_state(void **state) {
  kcr_workqueue_t *q = new_queue();
  (void)state;
  kcr_workqueue_destroy(NULL);
  assert_int_equal(kcr_workqueue_add(q, "processing"), 0);
  get_expect(q, "processing");
  assert_int_equal(kcr_workqueue_add(q, "processing"), 0);
  assert_int_equal(kcr_workqueue_add(q, "queued"), 0);
  assert_int_equal(kcr_workqueue_add_after(q, "waiting", KCR_NSEC_PER_SEC * 3600), 0);
  assert_string_equal(kcr_workqueue_name(q), "");
  kcr_workqueue_destroy(q);
}

/* ---- allocation failures ---- */

static void test_workqueue_alloc_failure_create(void **state) {
  kcr_workqueue_t *q = NULL;
  kcr_workqueue_options opts = {"ctrl", NULL, NULL, NULL, false};
  (void)state;
  KCR_TEST_ALLOC_LOOP(kcr_workqueue_create(&opts, &q, NULL), (kcr_workqueue_destroy(q), q = NULL));
}

/* With a registry, create also registers the families and the queue's series:
 * each failure there is KCR_ENOMEM too, and leaks nothing (the families and
 * series made before it stay in the registry, which frees them). */
static void test_workqueue_alloc_failure_create_with_metrics(void **state) {
  kcr_workqueue_t *q = NULL;
  kcr_metrics_registry_t *r;
  kcr_workqueue_options opts = {"ctrl", NULL, NULL, NULL, false};
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  opts.metrics = r;
  KCR_TEST_ALLOC_LOOP(kcr_workqueue_create(&opts, &q, NULL), (kcr_workqueue_destroy(q), q = NULL));
  kcr_metrics_registry_destroy(r);
}

static void test_workqueue_alloc_failure_create_steals_limiter(void **state) {
  kcr_workqueue_t *q = NULL;
  kcr_workqueue_options opts = {"ctrl", NULL, NULL, NULL, false};
  kcr_error_t err = {0};
  (void)state;
  /* The limiter is made outside the failing allocator; create must free it on
   * every failure path (leaks would show under ASan/valgrind). */
  kcr_test_alloc_install();
  for (long n = 1;; n++) {
    int rc;
    kcr_test_alloc_fail_at(0);
    assert_int_equal(kcr_ratelimiter_exponential_create(1, 2, &opts.rate_limiter, NULL), 0);
    kcr_test_alloc_fail_at(n);
    kcr_error_clear(&err);
    rc = kcr_workqueue_create(&opts, &q, &err);
    if (!kcr_test_alloc_failed()) {
      kcr_test_alloc_fail_at(0);
      assert_int_equal(rc, 0);
      kcr_workqueue_destroy(q);
      break;
    }
    kcr_test_alloc_fail_at(0);
    assert_int_equal(rc, KCR_ENOMEM);
    assert_int_equal(err.code, KCR_ENOMEM);
    assert_null(q);
  }
  kcr_test_alloc_uninstall();
}

static void test_workqueue_alloc_failure_add_and_get(void **state) {
  kcr_workqueue_t *q = new_queue();
  char *key = NULL;
  int i;
  (void)state;
  /* Keys first seen under failing allocation: each failure leaves no trace. */
  KCR_TEST_ALLOC_LOOP(kcr_workqueue_add(q, "a"), (void)0);
  assert_int_equal(kcr_workqueue_len(q), 1);
  /* A dirty key: no allocation at all. */
  kcr_test_alloc_install();
  kcr_test_alloc_fail_at(1);
  assert_int_equal(kcr_workqueue_add(q, "a"), 0);
  assert_false(kcr_test_alloc_failed());
  kcr_test_alloc_fail_at(0);
  kcr_test_alloc_uninstall();
  /* Many keys through growth of the set. */
  for (i = 0; i < 40; i++) {
    char k[16];
    snprintf(k, sizeof(k), "k%d", i);
    KCR_TEST_ALLOC_LOOP(kcr_workqueue_add(q, k), (void)0);
  }
  assert_int_equal(kcr_workqueue_len(q), 41);
  /* get: the copy fails, the key stays queued. */
  KCR_TEST_ALLOC_LOOP(kcr_workqueue_get(q, &key), (void)0);
  assert_string_equal(key, "a");
  assert_int_equal(kcr_workqueue_len(q), 40);
  /* Re-add while processing and done: no allocation. */
  kcr_test_alloc_install();
  kcr_test_alloc_fail_at(1);
  assert_int_equal(kcr_workqueue_add(q, "a"), 0);
  kcr_workqueue_done(q, "a");
  assert_false(kcr_test_alloc_failed());
  kcr_test_alloc_fail_at(0);
  kcr_test_alloc_uninstall();
  kcr_free(key);
  assert_int_equal(kcr_workqueue_len(q), 41);
  kcr_workqueue_destroy(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_workqueue_basic_producers_consumers, kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_add_while_processing, kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_len_counts_distinct_keys, kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_reinsert_while_processing, kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_done_of_unknown_key_is_ignored,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_get_blocks_until_add, kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_shutdown_wakes_getters_and_hands_out_the_rest,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_shutdown_with_drain_waits_for_done,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_shutdown_does_not_wait, kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_shutdown_releases_a_draining_shutdown,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_shutdown_with_drain_hands_out_dirty_key,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_shutdown_with_drain_on_idle_queue_returns,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_never_hands_a_key_to_two_workers,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_many_distinct_keys, kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_destroy_with_keys_in_every_state,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_alloc_failure_create, kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_alloc_failure_create_with_metrics,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_alloc_failure_create_steals_limiter,
                                kcr_test_check_threads),
      cmocka_unit_test_teardown(test_workqueue_alloc_failure_add_and_get, kcr_test_check_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
