/* SPDX-License-Identifier: MIT */
/* test_log.c: the log handler, threshold and truncation. */
#include <stdio.h>
#include <string.h>

#include "kcr/log.h"
#include "testutil.h"

struct seen {
  int count;
  kcr_log_level level;
  char component[32];
  char msg[4096];
};

static void on_log(kcr_log_level level, const char *component, const char *msg, void *data) {
  struct seen *s = data;
  s->count++;
  s->level = level;
  snprintf(s->component, sizeof(s->component), "%s", component);
  snprintf(s->msg, sizeof(s->msg), "%s", msg);
}

static void test_log_handler_gets_lines_at_or_above_threshold(void **state) {
  struct seen s = {0};
  (void)state;
  kcr_log_set_handler(on_log, &s);
  kcr_log_set_level(KCR_LOG_INFO);
  kcr_log(KCR_LOG_DEBUG, "config", "hidden %d", 1);
  assert_int_equal(s.count, 0);
  kcr_log(KCR_LOG_WARN, "config", "insecure-skip-tls-verify is set for cluster %s", "dev");
  assert_int_equal(s.count, 1);
  assert_int_equal(s.level, KCR_LOG_WARN);
  assert_string_equal(s.component, "config");
  assert_string_equal(s.msg, "insecure-skip-tls-verify is set for cluster dev");
  kcr_log(KCR_LOG_INFO, NULL, "x");
  assert_string_equal(s.component, "kcr");
  kcr_log_set_level(KCR_LOG_TRACE);
  kcr_log(KCR_LOG_TRACE, "c", "t");
  assert_int_equal(s.count, 3);
  kcr_log_set_handler(NULL, NULL);
  kcr_log_set_level(KCR_LOG_INFO);
}

static void test_log_long_message_is_cut(void **state) {
  struct seen s = {0};
  char big[5000];
  (void)state;
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  kcr_log_set_handler(on_log, &s);
  kcr_log(KCR_LOG_ERROR, "c", "%s", big);
  assert_int_equal(strlen(s.msg), 2047);
  kcr_log_set_handler(NULL, NULL);
}

static void test_log_level_names(void **state) {
  (void)state;
  assert_string_equal(kcr_log_level_name(KCR_LOG_ERROR), "error");
  assert_string_equal(kcr_log_level_name(KCR_LOG_TRACE), "trace");
  assert_string_equal(kcr_log_level_name((kcr_log_level)99), "unknown");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_log_handler_gets_lines_at_or_above_threshold),
      cmocka_unit_test(test_log_long_message_is_cut),
      cmocka_unit_test(test_log_level_names),
  };
  return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
