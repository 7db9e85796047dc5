/* SPDX-License-Identifier: MIT */
/* test_error.c: error codes, names, and kcr_error_t's first-error-wins rule. */
#include <string.h>

#include "kcr/error.h"
#include "testutil.h"

static void test_error_codes_are_negative_and_distinct(void **state) {
  static const int codes[] = {
#define XX(name, value, desc) KCR_##name,
      KCR_ERRNO_MAP(XX)
#undef XX
  };
  size_t n = sizeof(codes) / sizeof(codes[0]);
  (void)state;
  for (size_t i = 0; i < n; i++) {
    assert_true(codes[i] < 0);
    assert_string_not_equal(kcr_strerror(codes[i]), "unknown error");
    assert_string_not_equal(kcr_err_name(codes[i]), "KCR_UNKNOWN");
    for (size_t j = i + 1; j < n; j++)
      assert_int_not_equal(codes[i], codes[j]);
  }
}

static void test_error_strerror_and_name(void **state) {
  (void)state;
  assert_string_equal(kcr_strerror(KCR_ENOMEM), "out of memory");
  assert_string_equal(kcr_err_name(KCR_ETIMEDOUT), "KCR_ETIMEDOUT");
  assert_string_equal(kcr_strerror(0), "success");
  assert_string_equal(kcr_strerror(-9999), "unknown error");
  assert_string_equal(kcr_err_name(12345), "KCR_UNKNOWN");
}

static void test_error_first_error_wins(void **state) {
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(err.code, KCR_OK);
  assert_int_equal(kcr_error_set(&err, KCR_EPARSE, "line %d: bad", 7), KCR_EPARSE);
  assert_int_equal(kcr_error_set(&err, KCR_EIO, "outer"), KCR_EIO);
  assert_int_equal(err.code, KCR_EPARSE);
  assert_string_equal(err.message, "line 7: bad");
  kcr_error_prefix(&err, "kubeconfig %s: ", "/x");
  assert_string_equal(err.message, "kubeconfig /x: line 7: bad");
}

static void test_error_null_is_allowed(void **state) {
  (void)state;
  assert_int_equal(kcr_error_set(NULL, KCR_EINVAL, "x"), KCR_EINVAL);
  kcr_error_prefix(NULL, "y");
  kcr_error_clear(NULL);
}

static void test_error_prefix_without_error_does_nothing(void **state) {
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  kcr_error_prefix(&err, "context: ");
  assert_int_equal(err.code, 0);
  assert_string_equal(err.message, "");
}

static void test_error_long_message_is_cut_not_overflowed(void **state) {
  kcr_error_t err;
  char big[2000];
  (void)state;
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  kcr_error_clear(&err);
  kcr_error_set(&err, KCR_EINVAL, "%s", big);
  assert_int_equal(strlen(err.message), KCR_ERROR_MESSAGE_MAX - 1);
  kcr_error_prefix(&err, "%s", big);
  assert_int_equal(strlen(err.message), KCR_ERROR_MESSAGE_MAX - 1);
  kcr_error_clear(&err);
  kcr_error_set(&err, KCR_EINVAL, "tail");
  kcr_error_prefix(&err, "%.*s", KCR_ERROR_MESSAGE_MAX - 3, big);
  assert_int_equal(strlen(err.message), KCR_ERROR_MESSAGE_MAX - 1);
  assert_memory_equal(err.message + KCR_ERROR_MESSAGE_MAX - 3, "ta", 2);
}

static void test_error_null_format_uses_description(void **state) {
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  kcr_error_set(&err, KCR_ENOMEM, NULL);
  assert_string_equal(err.message, "out of memory");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_codes_are_negative_and_distinct),
      cmocka_unit_test(test_error_strerror_and_name),
      cmocka_unit_test(test_error_first_error_wins),
      cmocka_unit_test(test_error_null_is_allowed),
      cmocka_unit_test(test_error_prefix_without_error_does_nothing),
      cmocka_unit_test(test_error_long_message_is_cut_not_overflowed),
      cmocka_unit_test(test_error_null_format_uses_description),
  };
  return cmocka_run_group_tests_name("error", tests, NULL, NULL);
}
