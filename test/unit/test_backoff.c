/* SPDX-License-Identifier: MIT */
/* test_backoff.c: exponential growth, cap, jitter bounds, reset after quiet, config checks. */
#include "kcr/backoff.h"
#include "testutil.h"

static kcr_clock_t *clk;

static int setup(void **state) {
  kcr_time_t wall = {1700000000, 0};
  (void)state;
  return kcr_fake_clock_create(0, wall, &clk, NULL);
}

static int teardown(void **state) {
  (void)state;
  kcr_clock_destroy(clk);
  return 0;
}

static void test_backoff_doubles_to_cap_without_jitter(void **state) {
  kcr_backoff_t b;
  kcr_backoff_config cfg = KCR_BACKOFF_REFLECTOR;
  static const int64_t want_ms[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
  (void)state;
  cfg.jitter = 0.0;
  assert_int_equal(kcr_backoff_init(&b, cfg, clk, 1), 0);
  for (size_t i = 0; i < sizeof(want_ms) / sizeof(want_ms[0]); i++) {
    assert_int_equal(kcr_backoff_next(&b), want_ms[i] * KCR_NSEC_PER_MSEC);
    kcr_fake_clock_step(clk, KCR_NSEC_PER_SEC);
  }
}

static void test_backoff_jitter_stays_within_bounds(void **state) {
  kcr_backoff_t b;
  int64_t base = 800 * KCR_NSEC_PER_MSEC, lo = INT64_MAX, hi = 0;
  (void)state;
  for (uint64_t seed = 1; seed <= 2000; seed++) {
    int64_t d;
    assert_int_equal(kcr_backoff_init(&b, KCR_BACKOFF_REFLECTOR, clk, seed), 0);
    d = kcr_backoff_next(&b);
    assert_true(d >= base && d < 2 * base);
    lo = d < lo ? d : lo;
    hi = d > hi ? d : hi;
  }
  /* Jitter must actually spread the retries: across 2000 seeds the delays cover most
   * of [base, 2 * base). */
  assert_true(lo < base + base / 10);
  assert_true(hi > 2 * base - base / 10);
}

static void test_backoff_same_seed_same_sequence(void **state) {
  kcr_backoff_t a, b;
  (void)state;
  kcr_backoff_init(&a, KCR_BACKOFF_REFLECTOR, clk, 42);
  kcr_backoff_init(&b, KCR_BACKOFF_REFLECTOR, clk, 42);
  for (int i = 0; i < 10; i++)
    assert_int_equal(kcr_backoff_next(&a), kcr_backoff_next(&b));
}

static void test_backoff_resets_after_quiet_period(void **state) {
  kcr_backoff_t b;
  kcr_backoff_config cfg = KCR_BACKOFF_REFLECTOR;
  (void)state;
  cfg.jitter = 0.0;
  kcr_backoff_init(&b, cfg, clk, 1);
  kcr_backoff_next(&b);
  kcr_backoff_next(&b);
  assert_int_equal(kcr_backoff_next(&b), 3200 * KCR_NSEC_PER_MSEC);
  /* Exactly the reset period is not yet "more than" it. */
  kcr_fake_clock_step(clk, 120 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_backoff_next(&b), 6400 * KCR_NSEC_PER_MSEC);
  kcr_fake_clock_step(clk, 120 * KCR_NSEC_PER_SEC + 1);
  assert_int_equal(kcr_backoff_next(&b), 800 * KCR_NSEC_PER_MSEC);
  assert_int_equal(kcr_backoff_next(&b), 1600 * KCR_NSEC_PER_MSEC);
  kcr_backoff_reset(&b);
  assert_int_equal(kcr_backoff_next(&b), 800 * KCR_NSEC_PER_MSEC);
}

static void test_backoff_no_cap_saturates(void **state) {
  kcr_backoff_t b;
  kcr_backoff_config cfg = {KCR_NSEC_PER_SEC, 0, 10.0, 0.0, 0};
  int64_t prev = 0;
  (void)state;
  kcr_backoff_init(&b, cfg, clk, 1);
  for (int i = 0; i < 40; i++) {
    int64_t d = kcr_backoff_next(&b);
    assert_true(d >= prev);
    assert_true(d > 0);
    prev = d;
  }
}

static void test_backoff_rejects_bad_config(void **state) {
  kcr_backoff_t b;
  (void)state;
  assert_int_equal(kcr_backoff_init(&b, (kcr_backoff_config){0, 0, 2.0, 0, 0}, clk, 1), KCR_EINVAL);
  assert_int_equal(kcr_backoff_init(&b, (kcr_backoff_config){10, 5, 2.0, 0, 0}, clk, 1),
                   KCR_EINVAL);
  assert_int_equal(kcr_backoff_init(&b, (kcr_backoff_config){10, 50, 0.5, 0, 0}, clk, 1),
                   KCR_EINVAL);
  assert_int_equal(kcr_backoff_init(&b, (kcr_backoff_config){10, 50, 2.0, -1, 0}, clk, 1),
                   KCR_EINVAL);
  assert_int_equal(kcr_backoff_init(&b, (kcr_backoff_config){10, 50, 2.0, 0, -1}, clk, 1),
                   KCR_EINVAL);
  assert_int_equal(kcr_backoff_init(&b, (kcr_backoff_config){10, 50, 1.0, 0, 0}, NULL, 0), 0);
  assert_ptr_equal(b.clock, kcr_clock_system());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backoff_doubles_to_cap_without_jitter),
      cmocka_unit_test(test_backoff_jitter_stays_within_bounds),
      cmocka_unit_test(test_backoff_same_seed_same_sequence),
      cmocka_unit_test(test_backoff_resets_after_quiet_period),
      cmocka_unit_test(test_backoff_no_cap_saturates),
      cmocka_unit_test(test_backoff_rejects_bad_config),
  };
  return cmocka_run_group_tests_name("backoff", tests, setup, teardown);
}
