/* SPDX-License-Identifier: MIT */
/*
 * test_flags.c: kcr-operator's flag and environment parsing (cmd/kcr-operator/
 * flags.c, linked from the operator's library kop): defaults as kubebuilder's, both
 * "--flag=value" and "--flag value", booleans as Go's flag package, validation
 * of every value, WATCH_NAMESPACE, and the --help text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "flags.h"

/* parse runs the parser over a NULL-terminated argument list (program name added). */
static int parse(const char *const *args, char *const *env, kop_flags *out, char *msg,
                 size_t size) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = (char *)"kcr-operator";
  for (; args && *args; args++) {
    assert_true(argc < 31);
    argv[argc++] = (char *)*args;
  }
  argv[argc] = NULL;
  return kop_flags_parse(argc, argv, env, out, msg, size);
}

static void test_flags_defaults(void **state) {
  kop_flags f;
  char msg[256];
  (void)state;
  assert_int_equal(parse(NULL, NULL, &f, msg, sizeof msg), 0);
  assert_null(f.kubeconfig);
  assert_false(f.leader_elect);
  assert_string_equal(f.leader_election_id, "kcr-operator.kcr.dev");
  assert_null(f.leader_election_namespace);
  assert_string_equal(f.metrics_bind_address, "0");
  assert_true(f.metrics_secure);
  assert_null(f.metrics_cert_path);
  assert_string_equal(f.metrics_cert_name, "tls.crt");
  assert_string_equal(f.metrics_cert_key, "tls.key");
  assert_string_equal(f.webhook_bind_address, ":9443");
  assert_null(f.webhook_cert_path);
  assert_string_equal(f.webhook_cert_name, "tls.crt");
  assert_string_equal(f.webhook_cert_key, "tls.key");
  assert_false(f.enable_http2);
  assert_string_equal(f.health_probe_bind_address, ":8081");
  assert_null(f.watch_namespace);
  assert_int_equal(f.max_concurrent_reconciles, 1);
  assert_int_equal(f.log_level, KCR_LOG_INFO);
  assert_int_equal(f.log_format, KCR_LOG_FORMAT_JSON);
  assert_false(f.zap_devel);
  assert_true(f.stacktrace);
  assert_int_equal(f.stacktrace_level, KCR_LOG_ERROR);
  assert_int_equal(f.time_encoding, KCR_LOG_TIME_RFC3339_MICRO);
  assert_false(f.show_help);
  assert_false(f.show_version);
}

static void test_flags_both_spellings(void **state) {
  static const char *const a[] = {"--kubeconfig=/k",
                                  "--leader-elect",
                                  "--leader-election-id",
                                  "my-lease.example.com",
                                  "--leader-election-namespace=ops",
                                  "--metrics-bind-address",
                                  ":8443",
                                  "--metrics-secure=false",
                                  "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs",
                                  "--metrics-cert-name",
                                  "cert.pem",
                                  "--metrics-cert-key=key.pem",
                                  "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
                                  "--webhook-cert-name",
                                  "w.crt",
                                  "--webhook-cert-key=w.key",
                                  "--webhook-bind-address",
                                  "127.0.0.1:0",
                                  "--enable-http2",
                                  "-health-probe-bind-address=127.0.0.1:9000",
                                  "--namespace",
                                  "team-a",
                                  "--max-concurrent-reconciles=8",
                                  "--log-level",
                                  "debug",
                                  "--log-format=console",
                                  NULL};
  kop_flags f;
  char msg[256];
  (void)state;
  assert_int_equal(parse(a, NULL, &f, msg, sizeof msg), 0);
  assert_string_equal(f.kubeconfig, "/k");
  assert_true(f.leader_elect);
  assert_string_equal(f.leader_election_id, "my-lease.example.com");
  assert_string_equal(f.leader_election_namespace, "ops");
  assert_string_equal(f.metrics_bind_address, ":8443");
  assert_false(f.metrics_secure);
  assert_string_equal(f.metrics_cert_path, "/tmp/k8s-metrics-server/metrics-certs");
  assert_string_equal(f.metrics_cert_name, "cert.pem");
  assert_string_equal(f.metrics_cert_key, "key.pem");
  assert_string_equal(f.webhook_cert_path, "/tmp/k8s-webhook-server/serving-certs");
  assert_string_equal(f.webhook_cert_name, "w.crt");
  assert_string_equal(f.webhook_cert_key, "w.key");
  assert_string_equal(f.webhook_bind_address, "127.0.0.1:0");
  assert_true(f.enable_http2);
  assert_string_equal(f.health_probe_bind_address, "127.0.0.1:9000");
  assert_string_equal(f.watch_namespace, "team-a");
  assert_int_equal(f.max_concurrent_reconciles, 8);
  assert_int_equal(f.log_level, KCR_LOG_DEBUG);
  assert_int_equal(f.log_format, KCR_LOG_FORMAT_CONSOLE);
}

static void test_flags_booleans(void **state) {
  static const char *const t[] = {"--leader-elect=T", "--version", NULL};
  static const char *const f0[] = {"--leader-elect=0", "-h", NULL};
  static const char *const bad[] = {"--leader-elect=yes", NULL};
  kop_flags f;
  char msg[256];
  (void)state;
  assert_int_equal(parse(t, NULL, &f, msg, sizeof msg), 0);
  assert_true(f.leader_elect);
  assert_true(f.show_version);
  assert_int_equal(parse(f0, NULL, &f, msg, sizeof msg), 0);
  assert_false(f.leader_elect);
  assert_true(f.show_help);
  assert_int_equal(parse(bad, NULL, &f, msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "--leader-elect"));
  assert_non_null(strstr(msg, "\"yes\""));
}

/* Each bad command line is refused with a message naming the culprit. */
static void test_flags_errors(void **state) {
  static const struct {
    const char *args[4];
    const char *want;
  } cases[] = {
      {{"--bogus", NULL}, "unknown flag: --bogus"},
      {{"--bogus=1", NULL}, "unknown flag: --bogus"},
      {{"--namespace", NULL}, "flag needs an argument: --namespace"},
      {{"--kubeconfig=", NULL}, "non-empty argument: --kubeconfig"},
      {{"stray", NULL}, "unexpected argument \"stray\""},
      {{"--", "stray", NULL}, "unexpected argument \"stray\""},
      {{"-", NULL}, "unexpected argument \"-\""},
      {{"--max-concurrent-reconciles=0", NULL}, "--max-concurrent-reconciles"},
      {{"--max-concurrent-reconciles", "2000", NULL}, "1..1024"},
      {{"--max-concurrent-reconciles=3x", NULL}, "\"3x\""},
      {{"--log-level=verbose", NULL}, "want debug, info, warn, error, or an integer verbosity"},
      {{"--log-format=xml", NULL}, "json or console"},
      {{"--zap-log-level=0", NULL}, "\"0\" for --zap-log-level"},
      {{"--zap-log-level=-1", NULL}, "integer verbosity in 1..127"},
      {{"--zap-log-level=128", NULL}, "integer verbosity in 1..127"},
      {{"--zap-log-level=3x", NULL}, "\"3x\""},
      {{"--zap-log-level=panic", NULL}, "--zap-log-level"},
      {{"--zap-encoder=logfmt", NULL},
       "invalid value \"logfmt\" for --zap-encoder: want json or console"},
      {{"--zap-devel=maybe", NULL}, "invalid boolean value \"maybe\" for --zap-devel"},
      {{"--zap-stacktrace-level=trace", NULL}, "want info, warn, error or panic"},
      {{"--zap-stacktrace-level=fatal", NULL}, "--zap-stacktrace-level"},
      {{"--zap-time-encoding=unix", NULL},
       "want epoch, millis, nano, iso8601, rfc3339 or rfc3339nano"},
      {{"--zap-time-encoding=", NULL}, "non-empty argument: --zap-time-encoding"},
      {{"--zap-time-encoding", NULL}, "flag needs an argument: --zap-time-encoding"},
      {{"--metrics-bind-address=8443", NULL}, "invalid address \"8443\""},
      {{"--metrics-bind-address=:99999", NULL}, "invalid address"},
      {{"--health-probe-bind-address=::1:8081", NULL}, "invalid address"},
      {{"--health-probe-bind-address=host:", NULL}, "invalid address"},
      {{"--webhook-bind-address=9443", NULL}, "invalid address \"9443\""},
      {{"--webhook-cert-path=", NULL}, "non-empty argument: --webhook-cert-path"},
      {{"--enable-http2=maybe", NULL}, "--enable-http2"},
      {{"--namespace=Team_A", NULL}, "invalid namespace \"Team_A\" for --namespace"},
      {{"--leader-election-namespace=-x", NULL}, "--leader-election-namespace"},
      {{"--leader-election-id=Bad..id", NULL}, "invalid name \"Bad..id\""},
  };
  kop_flags f;
  char msg[256];
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_int_equal(parse(cases[i].args, NULL, &f, msg, sizeof msg), -1);
    if (!strstr(msg, cases[i].want)) {
      fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, msg, cases[i].want);
    }
  }
}

static void test_flags_addresses(void **state) {
  (void)state;
  assert_true(kop_valid_address("0"));
  assert_true(kop_valid_address(":8081"));
  assert_true(kop_valid_address(":0"));
  assert_true(kop_valid_address("localhost:8080"));
  assert_true(kop_valid_address("0.0.0.0:65535"));
  assert_true(kop_valid_address("[::1]:8443"));
  assert_true(kop_valid_address("[::]:8443"));
  assert_false(kop_valid_address(""));
  assert_false(kop_valid_address(":"));
  assert_false(kop_valid_address(":65536"));
  assert_false(kop_valid_address("[]:80"));
  assert_false(kop_valid_address("[::1]8443"));
  assert_false(kop_valid_address("a b:80"));
  assert_false(kop_valid_address(NULL));
}

static void test_flags_dns_names(void **state) {
  (void)state;
  assert_true(kop_valid_dns_label("kcr-system"));
  assert_true(kop_valid_dns_label("a"));
  assert_false(kop_valid_dns_label(""));
  assert_false(kop_valid_dns_label("a."));
  assert_false(kop_valid_dns_label("-a"));
  assert_false(kop_valid_dns_label("A"));
  assert_false(
      kop_valid_dns_label("a234567890123456789012345678901234567890123456789012345678901234"));
  assert_true(kop_valid_dns_subdomain("kcr-operator.kcr.dev"));
  assert_false(kop_valid_dns_subdomain("a..b"));
  assert_false(kop_valid_dns_subdomain(".a"));
  assert_false(kop_valid_dns_subdomain("a."));
}

static void test_flags_watch_namespace_env(void **state) {
  static char ok[] = "WATCH_NAMESPACE=apps";
  static char empty[] = "WATCH_NAMESPACE=";
  static char bad[] = "WATCH_NAMESPACE=Apps!";
  static char multi[] = "WATCH_NAMESPACE=a,b";
  static char other[] = "WATCH_NAMESPACES=x";
  char *env_ok[] = {other, ok, NULL};
  char *env_empty[] = {empty, NULL};
  char *env_bad[] = {bad, NULL};
  char *env_multi[] = {multi, NULL};
  static const char *const flag[] = {"--namespace=team-b", NULL};
  kop_flags f;
  char msg[256];
  (void)state;
  assert_int_equal(parse(NULL, env_ok, &f, msg, sizeof msg), 0);
  assert_string_equal(f.watch_namespace, "apps");
  assert_int_equal(parse(NULL, env_empty, &f, msg, sizeof msg), 0);
  assert_null(f.watch_namespace); /* "" is every namespace */
  /* The flag wins over the environment, even a bad one. */
  assert_int_equal(parse(flag, env_bad, &f, msg, sizeof msg), 0);
  assert_string_equal(f.watch_namespace, "team-b");
  assert_int_equal(parse(NULL, env_bad, &f, msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "environment variable WATCH_NAMESPACE"));
  /* Comma-separated, as operator-sdk's WATCH_NAMESPACE (refused before). */
  assert_int_equal(parse(NULL, env_multi, &f, msg, sizeof msg), 0);
  assert_string_equal(f.watch_namespace, "a,b");
  assert_int_equal(f.watch_namespaces_len, 2);
  assert_string_equal(f.watch_namespaces[0], "a");
  assert_string_equal(f.watch_namespaces[1], "b");
  /* One namespace stays one: the same string as before, a list of one. */
  assert_int_equal(parse(NULL, env_ok, &f, msg, sizeof msg), 0);
  assert_int_equal(f.watch_namespaces_len, 1);
  assert_string_equal(f.watch_namespaces[0], "apps");
  assert_int_equal(parse(NULL, env_empty, &f, msg, sizeof msg), 0);
  assert_int_equal(f.watch_namespaces_len, 0);
}

/* --namespace a,b: the list, and every bad list refused with its reason. */
static void test_flags_namespace_list(void **state) {
  static const struct {
    const char *arg, *want;
  } bad[] = {
      {"--namespace=a,,b", "an empty namespace in the list"},
      {"--namespace=a,", "an empty namespace in the list"},
      {"--namespace=,a", "an empty namespace in the list"},
      {"--namespace=a,B", "invalid namespace \"B\" for --namespace"},
      {"--namespace=a, b", "invalid namespace \" b\" for --namespace"},
      {"--namespace=a,b,a", "namespace \"a\" is given twice"},
  };
  static char env_c[] = "WATCH_NAMESPACE=c";
  static char env_bad[] = "WATCH_NAMESPACE=c,,d";
  char *env[] = {env_c, NULL}, *envb[] = {env_bad, NULL};
  static const char *const ab[] = {"--namespace", "team-a,team-b", NULL};
  kop_flags f;
  char msg[256], big[(KOP_MAX_NAMESPACES + 1) * 6 + 16];
  const char *many[] = {big, NULL};
  size_t off = 0;
  (void)state;
  assert_int_equal(parse(ab, env, &f, msg, sizeof msg), 0); /* the flag wins */
  assert_string_equal(f.watch_namespace, "team-a,team-b");
  assert_int_equal(f.watch_namespaces_len, 2);
  assert_string_equal(f.watch_namespaces[0], "team-a");
  assert_string_equal(f.watch_namespaces[1], "team-b");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *argv[] = {bad[i].arg, NULL};
    msg[0] = '\0';
    assert_int_equal(parse(argv, NULL, &f, msg, sizeof msg), -1);
    if (!strstr(msg, bad[i].want))
      fail_msg("%s: got \"%s\", want \"%s\"", bad[i].arg, msg, bad[i].want);
  }
  assert_int_equal(parse(NULL, envb, &f, msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "environment variable WATCH_NAMESPACE"));
  assert_non_null(strstr(msg, "an empty namespace"));
  off += (size_t)snprintf(big, sizeof big, "--namespace=");
  for (int i = 0; i <= KOP_MAX_NAMESPACES; i++)
    off += (size_t)snprintf(big + off, sizeof big - off, "%sn%x", i ? "," : "", i);
  assert_int_equal(parse(many, NULL, &f, msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "more than 256 namespaces"));
}

/* controller-runtime's zap flags: levels, integer verbosity, encoders, devel, times. */
static void test_flags_zap(void **state) {
  static const struct {
    const char *arg;
    kcr_log_level level;
  } levels[] = {
      {"--zap-log-level=debug", KCR_LOG_DEBUG}, {"--zap-log-level=info", KCR_LOG_INFO},
      {"--zap-log-level=error", KCR_LOG_ERROR}, {"--zap-log-level=warn", KCR_LOG_WARN},
      {"--zap-log-level=1", KCR_LOG_DEBUG},     {"--zap-log-level=2", KCR_LOG_TRACE},
      {"--zap-log-level=10", KCR_LOG_V(10)},    {"--zap-log-level=127", KCR_LOG_V(127)},
      {"--log-level=trace", KCR_LOG_TRACE},
  };
  static const struct {
    const char *arg;
    kcr_log_time_encoding enc;
  } times[] = {
      {"--zap-time-encoding=epoch", KCR_LOG_TIME_EPOCH},
      {"--zap-time-encoding=millis", KCR_LOG_TIME_MILLIS},
      {"--zap-time-encoding=nano", KCR_LOG_TIME_NANO},
      {"--zap-time-encoding=iso8601", KCR_LOG_TIME_ISO8601},
      {"--zap-time-encoding=rfc3339", KCR_LOG_TIME_RFC3339},
      {"--zap-time-encoding=rfc3339nano", KCR_LOG_TIME_RFC3339NANO},
  };
  static const char *const devel[] = {"--zap-devel", NULL};
  static const char *const devel_json[] = {"--zap-encoder", "json", "--zap-devel",
                                           "--zap-log-level=error", NULL};
  static const char *const devel_no_stack[] = {"--zap-stacktrace-level=panic", "--zap-devel", NULL};
  static const char *const stack_info[] = {"--zap-stacktrace-level=info", NULL};
  static const char *const last_wins[] = {"--zap-log-level=error", "--log-level=debug", NULL};
  kop_flags f;
  kcr_log_options lo;
  char msg[256];
  (void)state;
  for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
    const char *a[] = {levels[i].arg, NULL};
    assert_int_equal(parse(a, NULL, &f, msg, sizeof msg), 0);
    assert_int_equal(f.log_level, levels[i].level);
  }
  for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
    const char *a[] = {times[i].arg, NULL};
    assert_int_equal(parse(a, NULL, &f, msg, sizeof msg), 0);
    assert_int_equal(f.time_encoding, times[i].enc);
  }
  /* development defaults */
  assert_int_equal(parse(devel, NULL, &f, msg, sizeof msg), 0);
  assert_true(f.zap_devel);
  assert_int_equal(f.log_format, KCR_LOG_FORMAT_CONSOLE);
  assert_int_equal(f.log_level, KCR_LOG_DEBUG);
  assert_true(f.stacktrace);
  assert_int_equal(f.stacktrace_level, KCR_LOG_WARN);
  /* explicit flags win over --zap-devel, before or after it */
  assert_int_equal(parse(devel_json, NULL, &f, msg, sizeof msg), 0);
  assert_int_equal(f.log_format, KCR_LOG_FORMAT_JSON);
  assert_int_equal(f.log_level, KCR_LOG_ERROR);
  assert_int_equal(parse(devel_no_stack, NULL, &f, msg, sizeof msg), 0);
  assert_false(f.stacktrace);
  assert_int_equal(parse(stack_info, NULL, &f, msg, sizeof msg), 0);
  assert_true(f.stacktrace);
  assert_int_equal(f.stacktrace_level, KCR_LOG_INFO);
  /* a flag and its alias set one setting: the last one wins */
  assert_int_equal(parse(last_wins, NULL, &f, msg, sizeof msg), 0);
  assert_int_equal(f.log_level, KCR_LOG_DEBUG);
  /* what main hands to kcr_log_configure */
  assert_int_equal(parse(stack_info, NULL, &f, msg, sizeof msg), 0);
  kop_flags_log_options(&f, &lo);
  assert_int_equal(lo.format, KCR_LOG_FORMAT_JSON);
  assert_int_equal(lo.level, KCR_LOG_INFO);
  assert_true(lo.stacktrace);
  assert_int_equal(lo.stacktrace_level, KCR_LOG_INFO);
  assert_int_equal(lo.fd, 2);
  assert_null(lo.write);
}

/* --shard-ring and --shards: defaults, values, and what they refuse. */
static void test_flags_sharding(void **state) {
  static const struct {
    const char *args[4];
    const char *want; /* the error's start */
  } bad[] = {
      {{"--shard-ring=Ring", NULL}, "invalid ring name \"Ring\" for --shard-ring"},
      {{"--shard-ring=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL},
       "invalid value \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" for --shard-ring: at "
       "most 46"},
      {{"--shard-ring=r", "--shards=0", NULL}, "invalid value \"0\" for --shards: want auto or"},
      {{"--shard-ring=r", "--shards=4097", NULL}, "invalid value \"4097\" for --shards"},
      {{"--shard-ring=r", "--shards=-1", NULL}, "invalid value \"-1\" for --shards"},
      {{"--shard-ring=r", "--shards=3x", NULL}, "invalid value \"3x\" for --shards"},
      {{"--shards=3", NULL}, "--shards=3 needs --shard-ring"},
      {{"--shard-namespace-selector=a=b", NULL}, "--shard-namespace-selector needs --shard-ring"},
      {{"--shard-ring=r", "--leader-elect", NULL},
       "--shard-ring and --leader-elect exclude each other"},
      {{"--shard-ring=r", "--shard-key=name", NULL},
       "invalid value \"name\" for --shard-key: want namespace or uid"},
      {{"--shard-key=uid", NULL}, "--shard-key=uid needs --shard-ring"},
      {{"--shard-ring=r", "--shard-key=uid", "--shard-namespace-selector=a", NULL},
       "--shard-namespace-selector counts namespaces"},
  };
  const char *uid[] = {"--shard-ring=r", "--shard-key", "uid", NULL};
  const char *by_ns[] = {"--shard-ring=r", "--shard-key=namespace", NULL};
  const char *ok[] = {"--shard-ring", "app-ring", "--shards=5",
                      "--shard-namespace-selector=kcr.dev/apps", NULL};
  const char *ok_auto[] = {"--shard-ring=app-ring", "--shards", "auto", NULL};
  kop_flags f;
  char msg[256];
  (void)state;
  assert_int_equal(parse(NULL, NULL, &f, msg, sizeof msg), 0);
  assert_null(f.shard_ring);
  assert_int_equal(f.shards, 0);
  assert_null(f.shard_namespace_selector);
  assert_int_equal(parse(ok, NULL, &f, msg, sizeof msg), 0);
  assert_string_equal(f.shard_ring, "app-ring");
  assert_int_equal(f.shards, 5);
  assert_string_equal(f.shard_namespace_selector, "kcr.dev/apps");
  assert_int_equal(parse(ok_auto, NULL, &f, msg, sizeof msg), 0);
  assert_string_equal(f.shard_ring, "app-ring");
  assert_int_equal(f.shards, 0);
  assert_false(f.shard_by_uid); /* the namespace key by default */
  assert_int_equal(parse(uid, NULL, &f, msg, sizeof msg), 0);
  assert_true(f.shard_by_uid);
  assert_int_equal(parse(by_ns, NULL, &f, msg, sizeof msg), 0);
  assert_false(f.shard_by_uid);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    msg[0] = '\0';
    assert_int_equal(parse(bad[i].args, NULL, &f, msg, sizeof msg), -1);
    if (strncmp(msg, bad[i].want, strlen(bad[i].want)) != 0)
      fail_msg("case %zu: got \"%s\", want a start of \"%s\"", i, msg, bad[i].want);
  }
}

static void test_flags_usage_lists_every_flag(void **state) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  (void)state;
  assert_non_null(f);
  kop_flags_usage(f, "kcr-operator");
  fclose(f);
  for (size_t i = 0; kop_flags_name(i); i++) {
    char want[64];
    snprintf(want, sizeof want, "--%s", kop_flags_name(i));
    assert_non_null(strstr(text, want));
  }
  assert_non_null(strstr(text, "(default \":8081\")"));
  assert_non_null(strstr(text, "WATCH_NAMESPACE"));
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flags_defaults),
      cmocka_unit_test(test_flags_both_spellings),
      cmocka_unit_test(test_flags_booleans),
      cmocka_unit_test(test_flags_errors),
      cmocka_unit_test(test_flags_addresses),
      cmocka_unit_test(test_flags_dns_names),
      cmocka_unit_test(test_flags_watch_namespace_env),
      cmocka_unit_test(test_flags_namespace_list),
      cmocka_unit_test(test_flags_zap),
      cmocka_unit_test(test_flags_sharding),
      cmocka_unit_test(test_flags_usage_lists_every_flag),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
