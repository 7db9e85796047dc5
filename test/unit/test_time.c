/* SPDX-License-Identifier: MIT */
/* test_time.c: RFC 3339 parse/format as Kubernetes writes metav1.Time and MicroTime. */
#include <string.h>

#include "kcr/time.h"
#include "testutil.h"

static kcr_time_t parse_ok(const char *s) {
  kcr_time_t t = {0, 0};
  kcr_error_t err;
  kcr_error_clear(&err);
  if (kcr_time_parse(s, strlen(s), &t, &err) != 0)
    fail_msg("parse of %s failed: %s", s, err.message);
  return t;
}

static void expect_parse_error(const char *s, const char *fragment) {
  kcr_time_t t = {123, 456};
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_time_parse(s, strlen(s), &t, &err), KCR_EPARSE);
  assert_int_equal(err.code, KCR_EPARSE);
  if (!strstr(err.message, fragment))
    fail_msg("error for \"%s\" is \"%s\", want it to mention \"%s\"", s, err.message, fragment);
  assert_int_equal(t.sec, 123); /* untouched on error */
  assert_int_equal(t.nsec, 456);
}

static void test_time_parse_kubernetes_forms(void **state) {
  kcr_time_t t;
  (void)state;
  t = parse_ok("1970-01-01T00:00:00Z");
  assert_int_equal(t.sec, 0);
  assert_int_equal(t.nsec, 0);
  t = parse_ok("2024-02-29T12:34:56Z");
  assert_int_equal(t.sec, 1709210096);
  t = parse_ok("2024-02-29T12:34:56.123456Z");
  assert_int_equal(t.sec, 1709210096);
  assert_int_equal(t.nsec, 123456000);
  t = parse_ok("2024-02-29T12:34:56.000000001Z");
  assert_int_equal(t.nsec, 1);
  t = parse_ok("2024-02-29t12:34:56.5z");
  assert_int_equal(t.nsec, 500000000);
}

static void test_time_parse_offsets_convert_to_utc(void **state) {
  kcr_time_t a, b;
  (void)state;
  a = parse_ok("2024-03-01T02:04:56+02:00");
  b = parse_ok("2024-03-01T00:04:56Z");
  assert_int_equal(kcr_time_cmp(a, b), 0);
  a = parse_ok("2023-12-31T23:30:00-01:30");
  b = parse_ok("2024-01-01T01:00:00Z");
  assert_int_equal(kcr_time_cmp(a, b), 0);
}

static void test_time_parse_before_epoch_and_far_years(void **state) {
  kcr_time_t t;
  (void)state;
  t = parse_ok("1969-12-31T23:59:59.25Z");
  assert_int_equal(t.sec, -1);
  assert_int_equal(t.nsec, 250000000);
  t = parse_ok("0001-01-01T00:00:00Z"); /* Go's zero time */
  assert_int_equal(t.sec, INT64_C(-62135596800));
  t = parse_ok("9999-12-31T23:59:59Z");
  assert_int_equal(t.sec, INT64_C(253402300799));
}

static void test_time_parse_rejects_bad_input(void **state) {
  (void)state;
  expect_parse_error("", "year");
  expect_parse_error("2024-02-30T00:00:00Z", "day out of range");
  expect_parse_error("2023-02-29T00:00:00Z", "day out of range");
  expect_parse_error("2024-13-01T00:00:00Z", "month out of range");
  expect_parse_error("2024-00-01T00:00:00Z", "month out of range");
  expect_parse_error("2024-01-01T24:00:00Z", "hour out of range");
  expect_parse_error("2024-01-01T00:60:00Z", "minute out of range");
  expect_parse_error("2024-01-01T00:00:60Z", "second out of range");
  expect_parse_error("2024-01-01 00:00:00Z", "'T'");
  expect_parse_error("2024-01-01T00:00:00", "'Z'");
  expect_parse_error("2024-01-01T00:00:00.Z", "digits after '.'");
  expect_parse_error("2024-01-01T00:00:00.1234567890Z", "9 digits");
  expect_parse_error("2024-01-01T00:00:00Zjunk", "after the zone");
  expect_parse_error("2024-01-01T00:00:00+0100", "+hh:mm");
  expect_parse_error("2024-01-01T00:00:00+24:00", "offset out of range");
  expect_parse_error("24-01-01T00:00:00Z", "year");
  expect_parse_error("2024-1-01T00:00:00Z", "month");
}

static void test_time_parse_respects_length(void **state) {
  kcr_time_t t;
  const char *s = "2024-01-01T00:00:00Zgarbage";
  (void)state;
  assert_int_equal(kcr_time_parse(s, 20, &t, NULL), 0);
  assert_int_equal(kcr_time_parse(s, 19, &t, NULL), KCR_EPARSE);
}

static void test_time_format_precisions(void **state) {
  char buf[KCR_TIME_BUFSIZE];
  kcr_time_t t = {1709210096, 123456789};
  (void)state;
  assert_int_equal(kcr_time_format(t, KCR_TIME_SECONDS, buf, sizeof(buf)), 20);
  assert_string_equal(buf, "2024-02-29T12:34:56Z");
  assert_int_equal(kcr_time_format(t, KCR_TIME_MICRO, buf, sizeof(buf)), 27);
  assert_string_equal(buf, "2024-02-29T12:34:56.123456Z");
  assert_int_equal(kcr_time_format(t, KCR_TIME_NANO, buf, sizeof(buf)), 30);
  assert_string_equal(buf, "2024-02-29T12:34:56.123456789Z");
  t.sec = -1;
  t.nsec = 0;
  kcr_time_format(t, KCR_TIME_SECONDS, buf, sizeof(buf));
  assert_string_equal(buf, "1969-12-31T23:59:59Z");
}

static void test_time_format_errors(void **state) {
  char buf[KCR_TIME_BUFSIZE];
  kcr_time_t t = {0, 0};
  (void)state;
  assert_int_equal(kcr_time_format(t, KCR_TIME_SECONDS, buf, 20), KCR_ETOOBIG);
  assert_int_equal(kcr_time_format(t, KCR_TIME_SECONDS, buf, 21), 20);
  t.nsec = 1000000000;
  assert_int_equal(kcr_time_format(t, KCR_TIME_SECONDS, buf, sizeof(buf)), KCR_ERANGE);
  t.nsec = 0;
  t.sec = INT64_C(253402300800);
  assert_int_equal(kcr_time_format(t, KCR_TIME_SECONDS, buf, sizeof(buf)), KCR_ERANGE);
}

static void test_time_round_trip_every_day_of_four_centuries(void **state) {
  char buf[KCR_TIME_BUFSIZE];
  (void)state;
  /* 1900-03-01 .. 2300-03-01 crosses non-leap 1900, 2100, 2200 and leap 2000. */
  for (int64_t s = INT64_C(-2203891200); s < INT64_C(10418371200); s += 86400 + 3661) {
    kcr_time_t t = {s, (int32_t)(s & 0xfffff)}, back;
    int n = kcr_time_format(t, KCR_TIME_NANO, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal(kcr_time_parse(buf, (size_t)n, &back, NULL), 0);
    assert_int_equal(kcr_time_cmp(t, back), 0);
  }
}

static void test_time_arithmetic(void **state) {
  kcr_time_t t = {10, 900000000}, u;
  (void)state;
  u = kcr_time_add_ns(t, 200 * KCR_NSEC_PER_MSEC);
  assert_int_equal(u.sec, 11);
  assert_int_equal(u.nsec, 100000000);
  u = kcr_time_add_ns(t, -950 * KCR_NSEC_PER_MSEC);
  assert_int_equal(u.sec, 9);
  assert_int_equal(u.nsec, 950000000);
  assert_int_equal(kcr_time_diff_ns(u, t), -950 * KCR_NSEC_PER_MSEC);
  assert_true(kcr_time_cmp(u, t) < 0);
  assert_true(kcr_time_cmp(t, u) > 0);
  u.sec = INT64_MAX / 2;
  assert_int_equal(kcr_time_diff_ns(u, t), INT64_MAX);
  assert_int_equal(kcr_time_diff_ns(t, u), INT64_MIN);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_time_parse_kubernetes_forms),
      cmocka_unit_test(test_time_parse_offsets_convert_to_utc),
      cmocka_unit_test(test_time_parse_before_epoch_and_far_years),
      cmocka_unit_test(test_time_parse_rejects_bad_input),
      cmocka_unit_test(test_time_parse_respects_length),
      cmocka_unit_test(test_time_format_precisions),
      cmocka_unit_test(test_time_format_errors),
      cmocka_unit_test(test_time_round_trip_every_day_of_four_centuries),
      cmocka_unit_test(test_time_arithmetic),
  };
  return cmocka_run_group_tests_name("time", tests, NULL, NULL);
}
