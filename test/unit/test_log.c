/* SPDX-License-Identifier: MIT */
/*
 * test_log.c: the logger (kcr/log.h): the handler and threshold, truncation,
 * the encoders' exact bytes (JSON, console, every time encoding), redaction by
 * key and by content, the built-in sink, stack traces, and a line too large.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/log.h"
#include "testutil.h"

struct seen {
  int count;
  kcr_log_level level;
  char component[32];
  char msg[4096];
  size_t nfields;
  char field0[64];
};

static void on_log(const kcr_log_record *rec, void *data) {
  struct seen *s = data;
  s->count++;
  s->level = rec->level;
  snprintf(s->component, sizeof(s->component), "%s", rec->logger);
  snprintf(s->msg, sizeof(s->msg), "%s", rec->msg);
  s->nfields = rec->nfields;
  if (rec->nfields)
    snprintf(s->field0, sizeof(s->field0), "%s=%s", rec->fields[0].key, rec->fields[0].s);
}

static void test_log_handler_gets_lines_at_or_above_threshold(void **state) {
  struct seen s = {0};
  (void)state;
  kcr_log_set_handler(on_log, &s);
  kcr_log_set_level(KCR_LOG_INFO);
  kcr_log(KCR_LOG_DEBUG, "config", "hidden %d", 1);
  assert_int_equal(s.count, 0);
  assert_false(kcr_log_enabled(KCR_LOG_DEBUG));
  assert_true(kcr_log_enabled(KCR_LOG_ERROR));
  kcr_log(KCR_LOG_WARN, "config", "insecure-skip-tls-verify is set for cluster %s", "dev");
  assert_int_equal(s.count, 1);
  assert_int_equal(s.level, KCR_LOG_WARN);
  assert_string_equal(s.component, "config");
  assert_string_equal(s.msg, "insecure-skip-tls-verify is set for cluster dev");
  assert_int_equal(s.nfields, 0);
  kcr_log(KCR_LOG_INFO, NULL, "x");
  assert_string_equal(s.component, "kcr");
  kcr_log_set_level(KCR_LOG_TRACE);
  kcr_log(KCR_LOG_TRACE, "c", "t");
  assert_int_equal(s.count, 3);
  /* a replaced handler gets the fields too */
  kcr_log_kv(KCR_LOG_INFO, "app", "Reconciling", "namespace", "ns", NULL);
  assert_int_equal(s.count, 4);
  assert_int_equal(s.nfields, 1);
  assert_string_equal(s.field0, "namespace=ns");
  /* V(n): zap's integer verbosity */
  kcr_log_set_level(KCR_LOG_V(10));
  kcr_log(KCR_LOG_V(7), "c", "very verbose");
  assert_int_equal(s.count, 5);
  kcr_log(KCR_LOG_V(11), "c", "too verbose");
  assert_int_equal(s.count, 5);
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
  assert_string_equal(kcr_log_level_name(KCR_LOG_V(1)), "debug");
  assert_string_equal(kcr_log_level_name(KCR_LOG_TRACE), "trace");
  assert_string_equal(kcr_log_level_name(KCR_LOG_V(9)), "trace");
  assert_string_equal(kcr_log_level_name((kcr_log_level)-1), "unknown");
}

static char *encode_t(kcr_log_format fmt, kcr_log_time_encoding te, const kcr_log_record *rec) {
  kcr_buf_t b;
  kcr_buf_init(&b, 1 << 16);
  assert_int_equal(kcr_log_encode(fmt, te, rec, &b), 0);
  return kcr_buf_take(&b, NULL);
}

static char *encode(kcr_log_format fmt, const kcr_log_record *rec) {
  return encode_t(fmt, KCR_LOG_TIME_RFC3339_MICRO, rec);
}

static const kcr_time_t ts = {1700000000, 123456789};

static void test_log_json_exact(void **state) {
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

static void test_log_console_exact(void **state) {
  kcr_log_field f[] = {KCR_LOG_STR("controller", "app"), KCR_LOG_INT("n", -2)};
  kcr_log_record rec = {ts, KCR_LOG_ERROR, "setup", "problem running manager", f, 2};
  kcr_log_record bare = {ts, KCR_LOG_WARN, NULL, "no fields\nsecond line", NULL, 0};
  char *line = encode(KCR_LOG_FORMAT_CONSOLE, &rec);
  (void)state;
  assert_string_equal(line, "2023-11-14T22:13:20.123456Z\tERROR\tsetup\tproblem running manager\t"
                            "{\"controller\": \"app\", \"n\": -2}\n");
  kcr_free(line);
  line = encode(KCR_LOG_FORMAT_CONSOLE, &bare);
  assert_string_equal(line, "2023-11-14T22:13:20.123456Z\tWARN\tno fields\\nsecond line\n");
  kcr_free(line);
}

static void test_log_time_encodings(void **state) {
  static const struct {
    kcr_log_time_encoding enc;
    kcr_time_t t;
    const char *want;
  } cases[] = {
      {KCR_LOG_TIME_RFC3339_MICRO, {1700000000, 123456789}, "\"2023-11-14T22:13:20.123456Z\""},
      {KCR_LOG_TIME_EPOCH, {1700000000, 123456789}, "1700000000.123456789"},
      {KCR_LOG_TIME_EPOCH, {1700000000, 500000000}, "1700000000.5"},
      {KCR_LOG_TIME_EPOCH, {1700000000, 0}, "1700000000"},
      {KCR_LOG_TIME_MILLIS, {1700000000, 123456789}, "1700000000123.456789"},
      {KCR_LOG_TIME_MILLIS, {1700000000, 123000000}, "1700000000123"},
      {KCR_LOG_TIME_NANO, {1700000000, 123456789}, "1700000000123456789"},
      {KCR_LOG_TIME_ISO8601, {1700000000, 123456789}, "\"2023-11-14T22:13:20.123Z\""},
      {KCR_LOG_TIME_RFC3339, {1700000000, 123456789}, "\"2023-11-14T22:13:20Z\""},
      {KCR_LOG_TIME_RFC3339NANO, {1700000000, 123456789}, "\"2023-11-14T22:13:20.123456789Z\""},
      {KCR_LOG_TIME_RFC3339NANO, {1700000000, 120000000}, "\"2023-11-14T22:13:20.12Z\""},
      {KCR_LOG_TIME_RFC3339NANO, {1700000000, 0}, "\"2023-11-14T22:13:20Z\""},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kcr_log_record rec = {cases[i].t, KCR_LOG_INFO, NULL, "m", NULL, 0};
    char want[128];
    char *line = encode_t(KCR_LOG_FORMAT_JSON, cases[i].enc, &rec);
    snprintf(want, sizeof(want), "{\"level\":\"info\",\"ts\":%s,\"msg\":\"m\"}\n", cases[i].want);
    assert_string_equal(line, want);
    kcr_free(line);
  }
}

static void test_log_redaction_by_key(void **state) {
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

static void test_log_redaction_in_text(void **state) {
  static const struct {
    const char *msg, *want;
  } cases[] = {
      {"Authorization: Bearer eyJhbGciOi.x-y_z", "Authorization: [REDACTED]"},
      {"h2h3 [authorization: Bearer sekret]", "h2h3 [authorization: [REDACTED]]"},
      {"authorization: Basic dXNlcjpwYXNz", "authorization: [REDACTED]"},
      {"sent bearer sekret to the server", "sent bearer [REDACTED] to the server"},
      {"BEARER sekret", "BEARER [REDACTED]"},
      {"unbearer sekret", "unbearer sekret"}, /* not a word start */
      {"bearer", "bearer"},
      {"nothing to hide", "nothing to hide"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kcr_log_field f = KCR_LOG_STR("detail", cases[i].msg);
    kcr_log_record rec = {ts, KCR_LOG_INFO, NULL, cases[i].msg, &f, 1};
    char want[256];
    char *line = encode_t(KCR_LOG_FORMAT_JSON, KCR_LOG_TIME_NANO, &rec);
    snprintf(want, sizeof(want),
             "{\"level\":\"info\",\"ts\":1700000000123456789,\"msg\":\"%s\",\"detail\":\"%s\"}\n",
             cases[i].want, cases[i].want);
    assert_string_equal(line, want);
    kcr_free(line);
    line = encode_t(KCR_LOG_FORMAT_CONSOLE, KCR_LOG_TIME_NANO, &rec);
    if (!strstr(cases[i].want, "sekret"))
      assert_null(strstr(line, "sekret"));
    kcr_free(line);
  }
}

static char captured[16384];

static void on_write(const char *line, size_t len, void *data) {
  (void)data;
  strncat(captured, line,
          len < sizeof(captured) - strlen(captured) - 1 ? len
                                                        : sizeof(captured) - strlen(captured) - 1);
}

static void test_log_sink_and_kcr_log(void **state) {
  kcr_clock_t *clock;
  kcr_log_options o = {0};
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, ts, &clock, NULL), 0);
  o.format = KCR_LOG_FORMAT_JSON;
  o.level = KCR_LOG_INFO;
  o.write = on_write;
  o.clock = clock;
  kcr_log_configure(&o);
  captured[0] = '\0';
  kcr_log_kv(KCR_LOG_INFO, "app", "Reconciling", "namespace", "ns", "password", "hunter2", NULL);
  kcr_log_kv(KCR_LOG_DEBUG, "app", "dropped", NULL);
  kcr_log(KCR_LOG_WARN, "client", "retrying after %d s", 2);
  assert_string_equal(captured,
                      "{\"level\":\"info\",\"ts\":\"2023-11-14T22:13:20.123456Z\",\"logger\":"
                      "\"app\",\"msg\":\"Reconciling\",\"namespace\":\"ns\",\"password\":"
                      "\"[REDACTED]\"}\n"
                      "{\"level\":\"warn\",\"ts\":\"2023-11-14T22:13:20.123456Z\",\"logger\":"
                      "\"client\",\"msg\":\"retrying after 2 s\"}\n");
  kcr_log_configure(NULL); /* back to stderr, system clock */
  kcr_log_set_level(KCR_LOG_INFO);
  kcr_clock_destroy(clock);
}

static void test_log_stacktrace_at_level(void **state) {
  kcr_clock_t *clock;
  kcr_log_options o = {0};
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, ts, &clock, NULL), 0);
  o.format = KCR_LOG_FORMAT_JSON;
  o.level = KCR_LOG_INFO;
  o.stacktrace = true;
  o.stacktrace_level = KCR_LOG_WARN;
  o.write = on_write;
  o.clock = clock;
  kcr_log_configure(&o);
  captured[0] = '\0';
  kcr_log(KCR_LOG_INFO, "x", "no trace");
  assert_null(strstr(captured, "stacktrace"));
  kcr_log(KCR_LOG_WARN, "x", "with trace");
#ifdef __GLIBC__
  assert_non_null(strstr(captured, "\"msg\":\"with trace\",\"stacktrace\":\""));
#endif
  kcr_log_configure(NULL);
  kcr_clock_destroy(clock);
}

static void test_log_too_big(void **state) {
  kcr_log_record rec = {ts, KCR_LOG_INFO, "x", "a long message that will not fit", NULL, 0};
  kcr_buf_t b;
  (void)state;
  kcr_buf_init(&b, 16);
  assert_int_equal(kcr_log_encode(KCR_LOG_FORMAT_JSON, 0, &rec, &b), KCR_ETOOBIG);
  assert_int_equal(kcr_buf_len(&b), 0);
}

/* A failed encode leaves out empty, in both formats, whichever allocation failed. */
static void test_log_encode_alloc_failures(void **state) {
  kcr_log_field f = KCR_LOG_STR("namespace", "ns");
  kcr_log_record rec = {ts, KCR_LOG_INFO, "x", "a message", &f, 1};
  const kcr_log_format formats[] = {KCR_LOG_FORMAT_CONSOLE, KCR_LOG_FORMAT_JSON};
  (void)state;
  for (size_t i = 0; i < 2; i++) {
    kcr_test_alloc_install();
    for (long n = 1;; n++) {
      kcr_buf_t b;
      int rc;
      kcr_buf_init(&b, 4096);
      kcr_test_alloc_fail_at(n);
      rc = kcr_log_encode(formats[i], 0, &rec, &b);
      if (!kcr_test_alloc_failed()) {
        assert_int_equal(rc, 0);
        kcr_buf_free(&b);
        break;
      }
      assert_int_equal(rc, KCR_ENOMEM);
      assert_int_equal(kcr_buf_len(&b), 0);
      assert_null(b.data);
    }
    kcr_test_alloc_uninstall();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_log_handler_gets_lines_at_or_above_threshold),
      cmocka_unit_test(test_log_long_message_is_cut),
      cmocka_unit_test(test_log_level_names),
      cmocka_unit_test(test_log_json_exact),
      cmocka_unit_test(test_log_console_exact),
      cmocka_unit_test(test_log_time_encodings),
      cmocka_unit_test(test_log_redaction_by_key),
      cmocka_unit_test(test_log_redaction_in_text),
      cmocka_unit_test(test_log_sink_and_kcr_log),
      cmocka_unit_test(test_log_stacktrace_at_level),
      cmocka_unit_test(test_log_too_big),
      cmocka_unit_test(test_log_encode_alloc_failures),
  };
  return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
