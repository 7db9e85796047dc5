/* SPDX-License-Identifier: MIT */
/* test_logfmt.c: the structured log encoders (exact bytes), redaction, the sink. */
#include <stdlib.h>
#include <string.h>

#include "kcr/logging.h"
#include "testutil.h"

static char *encode(kcr_log_format fmt, const kcr_log_record *rec) {
  kcr_buf_t b;
  kcr_buf_init(&b, 1 << 16);
  assert_int_equal(kcr_log_encode(fmt, rec, &b), 0);
  return kcr_buf_take(&b, NULL);
}

static const kcr_time_t ts = {1700000000, 123456789};

static void test_logfmt_json_exact(void **state) {
  kcr_log_field f[] = {
      KCR_LOG_STR(KCR_LOG_KEY_CONTROLLER, "app"),
      KCR_LOG_STR(KCR_LOG_KEY_CONTROLLER_GROUP, "kcr.dev"),
      KCR_LOG_STR(KCR_LOG_KEY_CONTROLLER_KIND, "App"),
      KCR_LOG_STR(KCR_LOG_KEY_NAMESPACE, "default"),
      KCR_LOG_STR(KCR_LOG_KEY_NAME, "web"),
      KCR_LOG_STR(KCR_LOG_KEY_RECONCILE_ID, "3f1c0d4e-0000-4000-8000-000000000000"),
      KCR_LOG_INT("attempt", 3),
      KCR_LOG_BOOL("requeue", 1),
      KCR_LOG_FLOAT("seconds", 0.5),
      KCR_LOG_STR("note", "a \"quoted\"\\ line\nnext\x01"),
      KCR_LOG_STR("missing", NULL),
  };
  kcr_log_record rec = {ts, KCR_LOG_INFO, "controller", "Reconciling", f, sizeof(f) / sizeof(f[0])};
  char *line = encode(KCR_LOG_FORMAT_JSON, &rec);
  (void)state;
  assert_string_equal(line,
                      "{\"level\":\"info\",\"ts\":\"2023-11-14T22:13:20.123456Z\",\"logger\":"
                      "\"controller\",\"msg\":\"Reconciling\",\"controller\":\"app\","
                      "\"controllerGroup\":\"kcr.dev\",\"controllerKind\":\"App\",\"namespace\":"
                      "\"default\",\"name\":\"web\",\"reconcileID\":"
                      "\"3f1c0d4e-0000-4000-8000-000000000000\",\"attempt\":3,\"requeue\":true,"
                      "\"seconds\":0.5,\"note\":\"a \\\"quoted\\\"\\\\ line\\nnext\\u0001\","
                      "\"missing\":null}\n");
  kcr_free(line);
}

static void test_logfmt_console_exact(void **state) {
  kcr_log_field f[] = {KCR_LOG_STR("controller", "app"), KCR_LOG_INT("n", -2)};
  kcr_log_record rec = {ts, KCR_LOG_ERROR, "setup", "problem running manager", f, 2};
  kcr_log_record bare = {ts, KCR_LOG_WARN, NULL, "no fields", NULL, 0};
  char *line = encode(KCR_LOG_FORMAT_CONSOLE, &rec);
  (void)state;
  assert_string_equal(line, "2023-11-14T22:13:20.123456Z\tERROR\tsetup\tproblem running manager\t"
                            "{\"controller\": \"app\", \"n\": -2}\n");
  kcr_free(line);
  line = encode(KCR_LOG_FORMAT_CONSOLE, &bare);
  assert_string_equal(line, "2023-11-14T22:13:20.123456Z\tWARN\tno fields\n");
  kcr_free(line);
}

static void test_logfmt_redaction(void **state) {
  kcr_log_field f[] = {KCR_LOG_STR("token", "abc"),
                       KCR_LOG_STR("bearerToken", "abc"),
                       KCR_LOG_STR("Authorization", "Bearer abc"),
                       KCR_LOG_STR("client-key-password", "abc"),
                       KCR_LOG_INT("secretCount", 3),
                       KCR_LOG_STR("name", "abc")};
  kcr_log_record rec = {ts, KCR_LOG_INFO, "x", "m", f, 6};
  char *line = encode(KCR_LOG_FORMAT_JSON, &rec);
  (void)state;
  /* the only "abc" left is the name's */
  assert_ptr_equal(strstr(line, "\"abc\""), strstr(line, "\"name\":\"abc\"") + 7);
  assert_null(strstr(line, "Bearer abc"));
  assert_non_null(strstr(line, "\"token\":\"[REDACTED]\""));
  assert_non_null(strstr(line, "\"Authorization\":\"[REDACTED]\""));
  assert_non_null(strstr(line, "\"secretCount\":\"[REDACTED]\""));
  assert_non_null(strstr(line, "\"name\":\"abc\"}"));
  assert_true(kcr_log_key_is_sensitive("X-API_KEY"));
  assert_false(kcr_log_key_is_sensitive("namespace"));
  kcr_free(line);
}

static char captured[8192];

static void on_write(const char *line, size_t len, void *data) {
  (void)data;
  strncat(captured, line,
          len < sizeof(captured) - strlen(captured) - 1 ? len
                                                        : sizeof(captured) - strlen(captured) - 1);
}

static void test_logfmt_sink_and_kcr_log(void **state) {
  kcr_clock_t *clock;
  kcr_logging_options o = {0};
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, ts, &clock), 0);
  o.format = KCR_LOG_FORMAT_JSON;
  o.level = KCR_LOG_INFO;
  o.write = on_write;
  o.clock = clock;
  kcr_logging_install(&o);
  captured[0] = '\0';
  kcr_logf(KCR_LOG_INFO, "app", "Reconciling", "namespace", "ns", "password", "hunter2", NULL);
  kcr_logf(KCR_LOG_DEBUG, "app", "dropped", NULL);
  kcr_log(KCR_LOG_WARN, "client", "retrying after %d s", 2);
  assert_string_equal(captured,
                      "{\"level\":\"info\",\"ts\":\"2023-11-14T22:13:20.123456Z\",\"logger\":"
                      "\"app\",\"msg\":\"Reconciling\",\"namespace\":\"ns\",\"password\":"
                      "\"[REDACTED]\"}\n"
                      "{\"level\":\"warn\",\"ts\":\"2023-11-14T22:13:20.123456Z\",\"logger\":"
                      "\"client\",\"msg\":\"retrying after 2 s\"}\n");
  kcr_log_set_handler(NULL, NULL);
  kcr_log_set_level(KCR_LOG_INFO);
  o.write = NULL;
  o.clock = NULL;
  kcr_logging_install(&o); /* back to stderr, system clock */
  kcr_log_set_handler(NULL, NULL);
  kcr_clock_destroy(clock);
}

static void test_logfmt_too_big(void **state) {
  kcr_log_record rec = {ts, KCR_LOG_INFO, "x", "a long message that will not fit", NULL, 0};
  kcr_buf_t b;
  (void)state;
  kcr_buf_init(&b, 16);
  assert_int_equal(kcr_log_encode(KCR_LOG_FORMAT_JSON, &rec, &b), KCR_ETOOBIG);
  assert_int_equal(kcr_buf_len(&b), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_logfmt_json_exact), cmocka_unit_test(test_logfmt_console_exact),
      cmocka_unit_test(test_logfmt_redaction),  cmocka_unit_test(test_logfmt_sink_and_kcr_log),
      cmocka_unit_test(test_logfmt_too_big),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
