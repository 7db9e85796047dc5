/* SPDX-License-Identifier: MIT */
/* test_time.c: RFC 3339 parse/format as Kubernetes writes metav1.Time and MicroTime. */
#include <stdbool.h>
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
  t = parse_ok("2024-02-29T12:34:56,5Z"); /* a comma, as Go takes it */
  assert_int_equal(t.nsec, 500000000);
  t = parse_ok("2024-02-29T12:34:56.1234567899Z"); /* digits past nine dropped */
  assert_int_equal(t.nsec, 123456789);
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
  expect_parse_error("2024-01-01T00:00:00.Z", "digits after");
  expect_parse_error("2024-01-01T00:00:00,Z", "digits after");
  expect_parse_error("2024-01-01t00:00:00Z", "'T'");
  expect_parse_error("2024-01-01T00:00:00z", "'Z'");
  expect_parse_error("2024-01-01T00:00:00Zjunk", "after the zone");
  expect_parse_error("2024-01-01T00:00:00+0100", "+hh:mm");
  expect_parse_error("2024-01-01T00:00:00+25:00", "offset out of range");
  expect_parse_error("2024-01-01T00:00:00+01:61", "offset out of range");
  expect_parse_error("24-01-01T00:00:00Z", "year");
  expect_parse_error("2024-1-01T00:00:00Z", "month");
}

/*
 * What Go's time.Parse(time.RFC3339, s) answers (metav1.Time decodes with it),
 * measured with go1.26.8 (linux/amd64): for each input, whether it parses and
 * to which Unix second and nanosecond. kcr_time_parse must agree on every row.
 * Go takes a comma as the fraction separator, any number of fraction digits
 * (the tenth and later are dropped, not rounded), a one-digit hour, and zone
 * offsets up to 24 hours and 60 minutes; it refuses a lowercase 't' or 'z'.
 */
static const struct {
  const char *in;
  int64_t sec;
  int32_t nsec;
  bool ok;
} go_rfc3339[] = {
    {"2026-01-02T03:04:05Z", INT64_C(1767323045), 0, true},
    {"2026-01-02T03:04:05,5Z", INT64_C(1767323045), 500000000, true},
    {"2026-01-02T03:04:05,123456789Z", INT64_C(1767323045), 123456789, true},
    {"2026-01-02T03:04:05,Z", 0, 0, false},
    {"2026-01-02t03:04:05Z", 0, 0, false},
    {"2026-01-02T03:04:05z", 0, 0, false},
    {"2026-01-02t03:04:05z", 0, 0, false},
    {"2026-01-02T03:04:05.Z", 0, 0, false},
    {"2026-01-02T03:04:05.1Z", INT64_C(1767323045), 100000000, true},
    {"2026-01-02T03:04:05.12Z", INT64_C(1767323045), 120000000, true},
    {"2026-01-02T03:04:05.123Z", INT64_C(1767323045), 123000000, true},
    {"2026-01-02T03:04:05.1234Z", INT64_C(1767323045), 123400000, true},
    {"2026-01-02T03:04:05.12345Z", INT64_C(1767323045), 123450000, true},
    {"2026-01-02T03:04:05.123456Z", INT64_C(1767323045), 123456000, true},
    {"2026-01-02T03:04:05.1234567Z", INT64_C(1767323045), 123456700, true},
    {"2026-01-02T03:04:05.12345678Z", INT64_C(1767323045), 123456780, true},
    {"2026-01-02T03:04:05.123456789Z", INT64_C(1767323045), 123456789, true},
    {"2026-01-02T03:04:05.1234567891Z", INT64_C(1767323045), 123456789, true},
    {"2026-01-02T03:04:05.123456789123456789Z", INT64_C(1767323045), 123456789, true},
    {"2026-01-02T03:04:05,1234567891Z", INT64_C(1767323045), 123456789, true},
    {"2026-01-02T03:04:05.5+01:00", INT64_C(1767319445), 500000000, true},
    {"2026-01-02T03:04:05,5-01:30", INT64_C(1767328445), 500000000, true},
    {"2026-01-02T03:04:05+01:00", INT64_C(1767319445), 0, true},
    {"2026-01-02T03:04:05-00:00", INT64_C(1767323045), 0, true},
    {"2026-01-02T03:04:05+23:59", INT64_C(1767236705), 0, true},
    {"2026-01-02T03:04:05+24:00", INT64_C(1767236645), 0, true},
    {"2026-01-02T03:04:05+25:00", 0, 0, false},
    {"2026-01-02T03:04:05+01:59", INT64_C(1767315905), 0, true},
    {"2026-01-02T03:04:05+01:60", INT64_C(1767315845), 0, true},
    {"2026-01-02T03:04:05+01:61", 0, 0, false},
    {"2026-01-02T03:04:05+0100", 0, 0, false},
    {"2026-01-02T03:04:05+01", 0, 0, false},
    {"2026-01-02T03:04:05+1:00", 0, 0, false},
    {"2026-01-02T03:04:05", 0, 0, false},
    {"2026-01-02T03:04:05.5", 0, 0, false},
    {"2026-01-02T03:04:05Zjunk", 0, 0, false},
    {"2026-01-02T03:04:05Z ", 0, 0, false},
    {" 2026-01-02T03:04:05Z", 0, 0, false},
    {"2026-01-02 03:04:05Z", 0, 0, false},
    {"2026-01-02T24:00:00Z", 0, 0, false},
    {"2026-01-02T23:60:00Z", 0, 0, false},
    {"2026-01-02T23:59:60Z", 0, 0, false},
    {"2026-01-02T3:04:05Z", INT64_C(1767323045), 0, true},
    {"2026-01-02T03:4:05Z", 0, 0, false},
    {"2026-01-02T03:04:5Z", 0, 0, false},
    {"2026-1-02T03:04:05Z", 0, 0, false},
    {"2026-01-2T03:04:05Z", 0, 0, false},
    {"26-01-02T03:04:05Z", 0, 0, false},
    {"+2026-01-02T03:04:05Z", 0, 0, false},
    {"0000-01-01T00:00:00Z", INT64_C(-62167219200), 0, true},
    {"9999-12-31T23:59:59.999999999Z", INT64_C(253402300799), 999999999, true},
    {"2024-02-29T00:00:00Z", INT64_C(1709164800), 0, true},
    {"2023-02-29T00:00:00Z", 0, 0, false},
    {"2026-04-31T00:00:00Z", 0, 0, false},
    {"2026-13-01T00:00:00Z", 0, 0, false},
    {"2026-00-01T00:00:00Z", 0, 0, false},
    {"2026-01-00T00:00:00Z", 0, 0, false},
    {"2026-01-02T03:04:05.5.5Z", 0, 0, false},
    {"2026-01-02T03:04:05..5Z", 0, 0, false},
    {"2026-01-02T03:04:05.-5Z", 0, 0, false},
    {"2026-01-02T03:04:05.+5Z", 0, 0, false},
    {"2026-01-02T03:04:05 Z", 0, 0, false},
    {"2026-01-02T03:04:05.5 Z", 0, 0, false},
    {"2026-01-02T03:04:05ZZ", 0, 0, false},
    {"2026-01-02T03:04:05+01:00Z", 0, 0, false},
    {"2026-01-02T3:04:05.5Z", INT64_C(1767323045), 500000000, true},
    {"2026-01-02T3:4:05Z", 0, 0, false},
    {"2026-01-02T003:04:05Z", 0, 0, false},
    {"2026-01-02T03:04:05.5z", 0, 0, false},
    {"2026-01-02T03:04:05+24:60", INT64_C(1767233045), 0, true},
    {"2026-01-02T03:04:05-24:00", INT64_C(1767409445), 0, true},
    {"2026-01-02T03:04:05+00:00", INT64_C(1767323045), 0, true},
    {"2026-01-02T03:04:05.999999999999Z", INT64_C(1767323045), 999999999, true},
    {"2026-01-02T03:04:05,5,5Z", 0, 0, false},
    {"20260-01-02T03:04:05Z", 0, 0, false},
    {"2026-01-02T03:04:05.000000000001Z", INT64_C(1767323045), 0, true},
    {"2026-01-02T3:04:05+01:00", INT64_C(1767319445), 0, true},
    {"2026-01-02T03:04:05.5+1:00", 0, 0, false},
    {"2026-01-02T03:04:05Z07:00", 0, 0, false},
    {"2026-01-02T03:04:05.5Z+01:00", 0, 0, false},
    {"", 0, 0, false},
};

static void test_time_parse_matches_go(void **state) {
  size_t wrong = 0;
  (void)state;
  for (size_t i = 0; i < sizeof(go_rfc3339) / sizeof(go_rfc3339[0]); i++) {
    kcr_time_t t = {123, 456};
    kcr_error_t err;
    int rc;
    kcr_error_clear(&err);
    rc = kcr_time_parse(go_rfc3339[i].in, strlen(go_rfc3339[i].in), &t, &err);
    if (go_rfc3339[i].ok && rc != 0) {
      print_error("\"%s\": Go gives %lld.%09d, kcr refuses it: %s\n", go_rfc3339[i].in,
                  (long long)go_rfc3339[i].sec, (int)go_rfc3339[i].nsec, err.message);
      wrong++;
    } else if (go_rfc3339[i].ok && (t.sec != go_rfc3339[i].sec || t.nsec != go_rfc3339[i].nsec)) {
      print_error("\"%s\": Go gives %lld.%09d, kcr %lld.%09d\n", go_rfc3339[i].in,
                  (long long)go_rfc3339[i].sec, (int)go_rfc3339[i].nsec, (long long)t.sec,
                  (int)t.nsec);
      wrong++;
    } else if (!go_rfc3339[i].ok && rc != KCR_EPARSE) {
      print_error("\"%s\": Go refuses it, kcr parsed %lld.%09d\n", go_rfc3339[i].in,
                  (long long)t.sec, (int)t.nsec);
      wrong++;
    } else if (!go_rfc3339[i].ok && (t.sec != 123 || t.nsec != 456 || !err.message[0])) {
      print_error("\"%s\": refused without a message, or *out touched\n", go_rfc3339[i].in);
      wrong++;
    }
  }
  assert_int_equal(wrong, 0);
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
      cmocka_unit_test(test_time_parse_matches_go),
      cmocka_unit_test(test_time_parse_respects_length),
      cmocka_unit_test(test_time_format_precisions),
      cmocka_unit_test(test_time_format_errors),
      cmocka_unit_test(test_time_round_trip_every_day_of_four_centuries),
      cmocka_unit_test(test_time_arithmetic),
  };
  return cmocka_run_group_tests_name("time", tests, NULL, NULL);
}
