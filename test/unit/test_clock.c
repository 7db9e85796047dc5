/* SPDX-License-Identifier: MIT */
/* test_clock.c: system and fake clocks, timed waits on both, random and UUIDs. */
#include <pthread.h>
#include <string.h>

#include "kcr/clock.h"
#include "kcr/rand.h"
#include "testutil.h"

static void test_clock_system_is_monotonic_and_wall_is_recent(void **state) {
  kcr_clock_t *c = kcr_clock_system();
  int64_t a, b;
  kcr_time_t w;
  (void)state;
  a = kcr_clock_now(c);
  b = kcr_clock_now(c);
  assert_true(b >= a);
  w = kcr_clock_wall(c);
  assert_true(w.sec > 1700000000); /* after 2023-11 */
  assert_true(w.nsec >= 0 && w.nsec < 1000000000);
  kcr_clock_destroy(c); /* the system clock is never destroyed */
  kcr_clock_destroy(NULL);
}

static void test_clock_fake_moves_only_when_stepped(void **state) {
  kcr_clock_t *c;
  kcr_time_t start = {1000, 999999999}, w;
  (void)state;
  assert_int_equal(kcr_fake_clock_create(5, start, &c, NULL), 0);
  assert_int_equal(kcr_clock_now(c), 5);
  assert_int_equal(kcr_clock_now(c), 5);
  kcr_fake_clock_step(c, 2);
  assert_int_equal(kcr_clock_now(c), 7);
  w = kcr_clock_wall(c);
  assert_int_equal(w.sec, 1001);
  assert_int_equal(w.nsec, 1);
  kcr_clock_destroy(c);
}

static void test_clock_system_timedwait_times_out(void **state) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond;
  kcr_clock_t *c = kcr_clock_system();
  int64_t deadline;
  int rc;
  (void)state;
  assert_int_equal(kcr_clock_cond_init(&cond), 0);
  deadline = kcr_clock_now(c) + 20 * KCR_NSEC_PER_MSEC;
  pthread_mutex_lock(&mu);
  while ((rc = kcr_clock_timedwait(c, &cond, &mu, deadline)) == 0)
    ;
  pthread_mutex_unlock(&mu);
  assert_int_equal(rc, KCR_ETIMEDOUT);
  assert_true(kcr_clock_now(c) >= deadline);
  pthread_cond_destroy(&cond);
}

struct stepper {
  kcr_clock_t *clock;
};

static void *step_later(void *arg) {
  struct stepper *s = arg;
  for (int i = 0; i < 10; i++)
    kcr_fake_clock_step(s->clock, KCR_NSEC_PER_SEC);
  return NULL;
}

static void test_clock_fake_timedwait_ends_when_stepped_past_deadline(void **state) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond;
  kcr_time_t start = {0, 0};
  struct stepper s;
  pthread_t th;
  int rc;
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, start, &s.clock, NULL), 0);
  assert_int_equal(kcr_clock_cond_init(&cond), 0);
  /* The deadline is ten fake seconds away: only stepping can reach it. */
  assert_int_equal(pthread_create(&th, NULL, step_later, &s), 0);
  pthread_mutex_lock(&mu);
  while ((rc = kcr_clock_timedwait(s.clock, &cond, &mu, 10 * KCR_NSEC_PER_SEC)) == 0)
    ;
  pthread_mutex_unlock(&mu);
  pthread_join(th, NULL);
  assert_int_equal(rc, KCR_ETIMEDOUT);
  assert_int_equal(kcr_clock_now(s.clock), 10 * KCR_NSEC_PER_SEC);
  pthread_cond_destroy(&cond);
  kcr_clock_destroy(s.clock);
}

static void test_clock_fake_create_allocation_failure(void **state) {
  kcr_clock_t *c = NULL;
  kcr_time_t start = {0, 0};
  (void)state;
  KCR_TEST_ALLOC_LOOP(kcr_fake_clock_create(0, start, &c, NULL), (kcr_clock_destroy(c), c = NULL));
}

static void test_rand_double_in_unit_interval(void **state) {
  uint64_t s = 7;
  double sum = 0;
  (void)state;
  for (int i = 0; i < 10000; i++) {
    double d = kcr_rand_double(&s);
    assert_true(d >= 0.0 && d < 1.0);
    sum += d;
  }
  assert_true(sum / 10000 > 0.45 && sum / 10000 < 0.55);
  assert_int_not_equal(kcr_rand_seed(), 0);
}

static void test_rand_uuid_v4_format(void **state) {
  char a[KCR_UUID_BUFSIZE], b[KCR_UUID_BUFSIZE];
  (void)state;
  assert_int_equal(kcr_uuid_v4(a), 0);
  assert_int_equal(kcr_uuid_v4(b), 0);
  assert_int_equal(strlen(a), 36);
  assert_string_not_equal(a, b);
  for (int i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23)
      assert_int_equal(a[i], '-');
    else
      assert_non_null(strchr("0123456789abcdef", a[i]));
  }
  assert_int_equal(a[14], '4');
  assert_non_null(strchr("89ab", a[19]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clock_system_is_monotonic_and_wall_is_recent),
      cmocka_unit_test(test_clock_fake_moves_only_when_stepped),
      cmocka_unit_test(test_clock_system_timedwait_times_out),
      cmocka_unit_test(test_clock_fake_timedwait_ends_when_stepped_past_deadline),
      cmocka_unit_test(test_clock_fake_create_allocation_failure),
      cmocka_unit_test(test_rand_double_in_unit_interval),
      cmocka_unit_test(test_rand_uuid_v4_format),
  };
  return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
