/* SPDX-License-Identifier: MIT */
/*
 * test_ratelimiter.c: the rate limiters, after client-go's
 * default_rate_limiters_test.go (exponential, overflow, fast-slow, max-of), plus
 * the token bucket on a fake clock, custom limiters, argument checks, allocation
 * failures and concurrent use.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "kcr/ratelimiter.h"
#include "testutil.h"

#define MS KCR_NSEC_PER_MSEC
#define SEC KCR_NSEC_PER_SEC

static int64_t when(kcr_ratelimiter_t *rl, const char *key) {
  int64_t d = -1;
  assert_int_equal(kcr_ratelimiter_when(rl, key, &d), 0);
  return d;
}

static void test_ratelimiter_exponential(void **state) {
  kcr_ratelimiter_t *rl;
  (void)state;
  assert_int_equal(kcr_ratelimiter_exponential_create(1 * MS, 1 * SEC, &rl, NULL), 0);
  assert_int_equal(when(rl, "one"), 1 * MS);
  assert_int_equal(when(rl, "one"), 2 * MS);
  assert_int_equal(when(rl, "one"), 4 * MS);
  assert_int_equal(when(rl, "one"), 8 * MS);
  assert_int_equal(when(rl, "one"), 16 * MS);
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "one"), 5);

  assert_int_equal(when(rl, "two"), 1 * MS);
  assert_int_equal(when(rl, "two"), 2 * MS);
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "two"), 2);

  kcr_ratelimiter_forget(rl, "one");
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "one"), 0);
  assert_int_equal(when(rl, "one"), 1 * MS);
  kcr_ratelimiter_forget(rl, "never-seen");
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "never-seen"), 0);
  kcr_ratelimiter_destroy(rl);
}

static void test_ratelimiter_exponential_overflow(void **state) {
  kcr_ratelimiter_t *rl;
  int i;
  (void)state;
  assert_int_equal(kcr_ratelimiter_exponential_create(1 * MS, 1000 * SEC, &rl, NULL), 0);
  for (i = 0; i < 5; i++)
    (void)when(rl, "one");
  assert_int_equal(when(rl, "one"), 32 * MS);
  for (i = 0; i < 1000; i++)
    (void)when(rl, "overflow1");
  assert_int_equal(when(rl, "overflow1"), 1000 * SEC);
  kcr_ratelimiter_destroy(rl);

  assert_int_equal(kcr_ratelimiter_exponential_create(60 * SEC, SEC * 1000 * 3600, &rl, NULL), 0);
  for (i = 0; i < 2; i++)
    (void)when(rl, "two");
  assert_int_equal(when(rl, "two"), SEC * 4 * 60);
  kcr_ratelimiter_destroy(rl);
}

static void test_ratelimiter_fast_slow(void **state) {
  kcr_ratelimiter_t *rl;
  (void)state;
  assert_int_equal(kcr_ratelimiter_fast_slow_create(5 * MS, 10 * SEC, 3, &rl, NULL), 0);
  assert_int_equal(when(rl, "one"), 5 * MS);
  assert_int_equal(when(rl, "one"), 5 * MS);
  assert_int_equal(when(rl, "one"), 5 * MS);
  assert_int_equal(when(rl, "one"), 10 * SEC);
  assert_int_equal(when(rl, "one"), 10 * SEC);
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "one"), 5);

  assert_int_equal(when(rl, "two"), 5 * MS);
  assert_int_equal(when(rl, "two"), 5 * MS);
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "two"), 2);

  kcr_ratelimiter_forget(rl, "one");
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "one"), 0);
  assert_int_equal(when(rl, "one"), 5 * MS);
  kcr_ratelimiter_destroy(rl);
}

static void test_ratelimiter_max_of(void **state) {
  kcr_ratelimiter_t *parts[2], *rl;
  (void)state;
  assert_int_equal(kcr_ratelimiter_fast_slow_create(5 * MS, 3 * SEC, 3, &parts[0], NULL), 0);
  assert_int_equal(kcr_ratelimiter_exponential_create(1 * MS, 1 * SEC, &parts[1], NULL), 0);
  assert_int_equal(kcr_ratelimiter_max_of_create(parts, 2, &rl, NULL), 0);
  assert_int_equal(when(rl, "one"), 5 * MS);
  assert_int_equal(when(rl, "one"), 5 * MS);
  assert_int_equal(when(rl, "one"), 5 * MS);
  assert_int_equal(when(rl, "one"), 3 * SEC);
  assert_int_equal(when(rl, "one"), 3 * SEC);
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "one"), 5);

  assert_int_equal(when(rl, "two"), 5 * MS);
  assert_int_equal(when(rl, "two"), 5 * MS);
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "two"), 2);

  kcr_ratelimiter_forget(rl, "one");
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "one"), 0);
  assert_int_equal(when(rl, "one"), 5 * MS);
  kcr_ratelimiter_destroy(rl);
}

static void test_ratelimiter_bucket_reserves_into_debt(void **state) {
  kcr_clock_t *c;
  kcr_ratelimiter_t *rl;
  kcr_time_t wall = {0, 0};
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, wall, &c, NULL), 0);
  assert_int_equal(kcr_ratelimiter_bucket_create(10.0, 3, c, &rl, NULL), 0);
  /* Full at the start: burst tokens for free. */
  assert_int_equal(when(rl, "a"), 0);
  assert_int_equal(when(rl, "b"), 0);
  assert_int_equal(when(rl, "a"), 0);
  /* Then each reservation goes further into debt, 100 ms a token. */
  assert_int_equal(when(rl, "a"), 100 * MS);
  assert_int_equal(when(rl, "c"), 200 * MS);
  /* 200 ms refills two tokens: the debt is paid, the next waits 100 ms. */
  kcr_fake_clock_step(c, 200 * MS);
  assert_int_equal(when(rl, "a"), 100 * MS);
  /* A long pause refills only up to burst. */
  kcr_fake_clock_step(c, 3600 * SEC);
  assert_int_equal(when(rl, "a"), 0);
  assert_int_equal(when(rl, "a"), 0);
  assert_int_equal(when(rl, "a"), 0);
  assert_int_equal(when(rl, "a"), 100 * MS);
  /* Half a token: 50 ms of the next 100 are paid. */
  kcr_fake_clock_step(c, 150 * MS);
  assert_int_equal(when(rl, "a"), 50 * MS);
  /* The bucket does not track keys. */
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "a"), 0);
  kcr_ratelimiter_forget(rl, "a");
  kcr_ratelimiter_destroy(rl);
  kcr_clock_destroy(c);
}

static void test_ratelimiter_bucket_edges(void **state) {
  kcr_ratelimiter_t *rl = (kcr_ratelimiter_t *)&rl;
  int i;
  (void)state;
  assert_int_equal(kcr_ratelimiter_bucket_create(0.0, 1, NULL, &rl, NULL), KCR_EINVAL);
  assert_null(rl);
  assert_int_equal(kcr_ratelimiter_bucket_create(-1.0, 1, NULL, &rl, NULL), KCR_EINVAL);
  assert_int_equal(kcr_ratelimiter_bucket_create(NAN, 1, NULL, &rl, NULL), KCR_EINVAL);
  assert_int_equal(kcr_ratelimiter_bucket_create(1.0, -1, NULL, &rl, NULL), KCR_EINVAL);
  /* Burst 0: a token can never be granted. */
  assert_int_equal(kcr_ratelimiter_bucket_create(10.0, 0, NULL, &rl, NULL), 0);
  assert_true(when(rl, "a") == KCR_RATELIMITER_NEVER);
  kcr_ratelimiter_destroy(rl);
  /* Infinite rate: never waits. */
  assert_int_equal(kcr_ratelimiter_bucket_create(INFINITY, 0, NULL, &rl, NULL), 0);
  for (i = 0; i < 10; i++)
    assert_int_equal(when(rl, "a"), 0);
  kcr_ratelimiter_destroy(rl);
}

static void test_ratelimiter_default_controller(void **state) {
  kcr_clock_t *c;
  kcr_ratelimiter_t *rl;
  kcr_time_t wall = {0, 0};
  char key[16];
  int i;
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, wall, &c, NULL), 0);
  assert_int_equal(kcr_ratelimiter_default_create(c, &rl, NULL), 0);
  assert_int_equal(when(rl, "k"), 5 * MS);
  assert_int_equal(when(rl, "k"), 10 * MS);
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "k"), 2);
  kcr_ratelimiter_forget(rl, "k");
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "k"), 0);
  /* 98 tokens left: fresh keys get the exponential floor... */
  for (i = 0; i < 98; i++) {
    snprintf(key, sizeof(key), "f%d", i);
    assert_int_equal(when(rl, key), 5 * MS);
  }
  /* ...then the bucket's 10 qps dominates. */
  assert_int_equal(when(rl, "x"), 100 * MS);
  assert_int_equal(when(rl, "y"), 200 * MS);
  /* And the exponential dominates again once large enough. */
  for (i = 0; i < 16; i++)
    (void)when(rl, "z");
  assert_int_equal(when(rl, "z"), 5 * MS << 16); /* 327.68 s */
  for (i = 0; i < 20; i++)
    (void)when(rl, "z");
  assert_int_equal(when(rl, "z"), 1000 * SEC);
  kcr_ratelimiter_destroy(rl);
  kcr_clock_destroy(c);
}

/* ---- custom limiters ---- */

struct custom {
  int whens;
  int forgets;
  int *destroyed;
};

static int custom_when(void *data, const char *key, int64_t *delay) {
  struct custom *cu = data;
  cu->whens++;
  *delay = strcmp(key, "neg") == 0 ? -5 : 42;
  return 0;
}

static void custom_forget(void *data, const char *key) {
  struct custom *cu = data;
  (void)key;
  cu->forgets++;
}

static void custom_destroy(void *data) {
  struct custom *cu = data;
  (*cu->destroyed)++;
}

static void test_ratelimiter_custom(void **state) {
  static const kcr_ratelimiter_ops ops = {custom_when, custom_forget, NULL, custom_destroy};
  struct custom cu = {0, 0, NULL};
  int destroyed = 0;
  kcr_ratelimiter_t *rl, *parts[2];
  (void)state;
  cu.destroyed = &destroyed;
  assert_int_equal(kcr_ratelimiter_create(&ops, &cu, &rl, NULL), 0);
  assert_int_equal(when(rl, "a"), 42);
  assert_int_equal(when(rl, "neg"), 0); /* a negative delay means now */
  kcr_ratelimiter_forget(rl, "a");
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "a"), 0);
  assert_int_equal(cu.whens, 2);
  assert_int_equal(cu.forgets, 1);

  /* Inside max-of, next to a built-in one. */
  parts[0] = rl;
  assert_int_equal(kcr_ratelimiter_exponential_create(100, 1000, &parts[1], NULL), 0);
  assert_int_equal(kcr_ratelimiter_max_of_create(parts, 2, &rl, NULL), 0);
  assert_int_equal(when(rl, "a"), 100);
  assert_int_equal(when(rl, "a"), 200);
  assert_int_equal(when(rl, "b"), 100);
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "a"), 2);
  assert_int_equal(cu.whens, 5);
  kcr_ratelimiter_destroy(rl);
  assert_int_equal(destroyed, 1);
  kcr_ratelimiter_destroy(NULL);
}

static void test_ratelimiter_invalid_arguments(void **state) {
  kcr_ratelimiter_t *rl = (kcr_ratelimiter_t *)&rl, *parts[3];
  (void)state;
  assert_int_equal(kcr_ratelimiter_exponential_create(-1, 1, &rl, NULL), KCR_EINVAL);
  assert_null(rl);
  assert_int_equal(kcr_ratelimiter_exponential_create(1, -1, &rl, NULL), KCR_EINVAL);
  assert_int_equal(kcr_ratelimiter_fast_slow_create(-1, 1, 1, &rl, NULL), KCR_EINVAL);
  assert_int_equal(kcr_ratelimiter_fast_slow_create(1, 1, -1, &rl, NULL), KCR_EINVAL);
  assert_int_equal(kcr_ratelimiter_max_of_create(parts, 0, &rl, NULL), KCR_EINVAL);
  /* max-of steals its members even when it refuses them (leaks would show). */
  assert_int_equal(kcr_ratelimiter_exponential_create(1, 2, &parts[0], NULL), 0);
  parts[1] = NULL;
  assert_int_equal(kcr_ratelimiter_fast_slow_create(1, 2, 3, &parts[2], NULL), 0);
  assert_int_equal(kcr_ratelimiter_max_of_create(parts, 3, &rl, NULL), KCR_EINVAL);
  assert_null(rl);
}

/* ---- allocation failures ---- */

static int custom_destroy_count;

static void count_destroy(void *data) {
  (void)data;
  custom_destroy_count++;
}

static int make_max_of(kcr_ratelimiter_t **out) {
  kcr_ratelimiter_t *parts[2] = {NULL, NULL};
  int rc = kcr_ratelimiter_fast_slow_create(1, 2, 3, &parts[0], NULL);
  if (rc)
    return rc;
  rc = kcr_ratelimiter_exponential_create(1, 2, &parts[1], NULL);
  if (rc) {
    kcr_ratelimiter_destroy(parts[0]);
    return rc;
  }
  return kcr_ratelimiter_max_of_create(parts, 2, out, NULL);
}

static void test_ratelimiter_alloc_failure(void **state) {
  static const kcr_ratelimiter_ops ops = {custom_when, NULL, NULL, count_destroy};
  kcr_ratelimiter_t *rl = NULL;
  int64_t d;
  char key[16];
  int i, runs = 0;
  (void)state;
  KCR_TEST_ALLOC_LOOP(kcr_ratelimiter_exponential_create(1, 2, &rl, NULL),
                      (kcr_ratelimiter_destroy(rl), rl = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_ratelimiter_fast_slow_create(1, 2, 3, &rl, NULL),
                      (kcr_ratelimiter_destroy(rl), rl = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_ratelimiter_bucket_create(1.0, 2, NULL, &rl, NULL),
                      (kcr_ratelimiter_destroy(rl), rl = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_ratelimiter_default_create(NULL, &rl, NULL),
                      (kcr_ratelimiter_destroy(rl), rl = NULL));
  KCR_TEST_ALLOC_LOOP(make_max_of(&rl), (kcr_ratelimiter_destroy(rl), rl = NULL));
  /* A custom limiter's data is released on every path. */
  custom_destroy_count = 0;
  KCR_TEST_ALLOC_LOOP((runs++, kcr_ratelimiter_create(&ops, NULL, &rl, NULL)),
                      (kcr_ratelimiter_destroy(rl), rl = NULL));
  assert_int_equal(custom_destroy_count, runs);

  /* when on new keys, through growth of the per-item table. */
  assert_int_equal(kcr_ratelimiter_default_create(NULL, &rl, NULL), 0);
  for (i = 0; i < 40; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    KCR_TEST_ALLOC_LOOP(kcr_ratelimiter_when(rl, key, &d), (void)0);
    assert_int_equal(kcr_ratelimiter_num_requeues(rl, key), 1);
  }
  /* A known key never allocates. */
  kcr_test_alloc_install();
  kcr_test_alloc_fail_at(1);
  assert_int_equal(kcr_ratelimiter_when(rl, "k0", &d), 0);
  assert_false(kcr_test_alloc_failed());
  kcr_test_alloc_fail_at(0);
  kcr_test_alloc_uninstall();
  assert_int_equal(kcr_ratelimiter_num_requeues(rl, "k0"), 2);
  for (i = 0; i < 40; i++) {
    snprintf(key, sizeof(key), "k%d", i);
    kcr_ratelimiter_forget(rl, key);
  }
  kcr_ratelimiter_destroy(rl);
}

/* ---- concurrency (for TSan) ---- */

struct hammer {
  kcr_ratelimiter_t *rl;
  int id;
  atomic_int errors;
};

static void *hammer_main(void *arg) {
  struct hammer *h = arg;
  char key[16];
  int64_t d;
  int i;
  for (i = 0; i < 2000; i++) {
    snprintf(key, sizeof(key), "k%d", (i * 31 + h->id) % 64);
    if (kcr_ratelimiter_when(h->rl, key, &d) != 0 || d < 0)
      atomic_fetch_add(&h->errors, 1);
    if (i % 3 == 0)
      kcr_ratelimiter_forget(h->rl, key);
    (void)kcr_ratelimiter_num_requeues(h->rl, key);
  }
  return NULL;
}

static void test_ratelimiter_concurrent_use(void **state) {
  enum { THREADS = 8 };
  struct hammer h[THREADS];
  pthread_t t[THREADS];
  kcr_ratelimiter_t *rl;
  int i;
  (void)state;
  assert_int_equal(kcr_ratelimiter_default_create(NULL, &rl, NULL), 0);
  for (i = 0; i < THREADS; i++) {
    h[i].rl = rl;
    h[i].id = i;
    atomic_init(&h[i].errors, 0);
    assert_int_equal(pthread_create(&t[i], NULL, hammer_main, &h[i]), 0);
  }
  for (i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&h[i].errors), 0);
  }
  kcr_ratelimiter_destroy(rl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ratelimiter_exponential),
      cmocka_unit_test(test_ratelimiter_exponential_overflow),
      cmocka_unit_test(test_ratelimiter_fast_slow),
      cmocka_unit_test(test_ratelimiter_max_of),
      cmocka_unit_test(test_ratelimiter_bucket_reserves_into_debt),
      cmocka_unit_test(test_ratelimiter_bucket_edges),
      cmocka_unit_test(test_ratelimiter_default_controller),
      cmocka_unit_test(test_ratelimiter_custom),
      cmocka_unit_test(test_ratelimiter_invalid_arguments),
      cmocka_unit_test(test_ratelimiter_alloc_failure),
      cmocka_unit_test(test_ratelimiter_concurrent_use),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
