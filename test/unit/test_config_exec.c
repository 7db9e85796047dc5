/* SPDX-License-Identifier: MIT */
/*
 * test_config_exec.c: exec credential plugins, with small /bin/sh scripts written
 * to a temporary directory at test time: v1 and v1beta1, tokens and client
 * certificates, KUBERNETES_EXEC_INFO, expiry and 401-driven refresh, one run for
 * many concurrent callers, and the failure modes (timeout, too much output, a
 * failing plugin's stderr, malformed output, a missing command).
 */
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config_internal.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "testutil.h"

#define V1 "client.authentication.k8s.io/v1"
#define V1BETA1 "client.authentication.k8s.io/v1beta1"

/* ---- helpers ---- */

static char *fmt(const char *f, ...) KCR_PRINTF(1, 2);
static char *fmt(const char *f, ...) {
  char *p = NULL;
  va_list ap;
  va_start(ap, f);
  assert_true(vasprintf(&p, f, ap) >= 0);
  va_end(ap);
  return p;
}

static void write_file(const char *path, const char *text, mode_t mode) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(chmod(path, mode), 0);
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf = calloc(1, 65536);
  size_t n;
  assert_non_null(f);
  assert_non_null(buf);
  n = fread(buf, 1, 65535, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static int on_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* fixture: a temporary directory holding plugin.sh and a kubeconfig. */
struct fixture {
  char *dir;
  char *plugin;
  kcr_rest_config_t *cfg;
};

static int setup(void **state) {
  struct fixture *fx = calloc(1, sizeof(*fx));
  char tmpl[] = "/tmp/kcr-exec-XXXXXX";
  if (!fx || !mkdtemp(tmpl)) {
    free(fx);
    return -1;
  }
  fx->dir = strdup(tmpl);
  fx->plugin = fmt("%s/plugin.sh", fx->dir);
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  struct fixture *fx = *state;
  kcr_rest_config_unref(fx->cfg);
  nftw(fx->dir, on_rm, 16, FTW_DEPTH | FTW_PHYS);
  free(fx->dir);
  free(fx->plugin);
  free(fx);
  return 0;
}

/* plugin writes plugin.sh: body runs under /bin/sh with DIR set to the fixture. */
static void plugin(struct fixture *fx, const char *body) {
  char *text = fmt("#!/bin/sh\nDIR='%s'\n%s", fx->dir, body);
  write_file(fx->plugin, text, 0755);
  free(text);
}

/* load writes a kubeconfig whose user runs the plugin (exec_extra: more exec keys). */
static int load(struct fixture *fx, const char *command, const char *api, const char *exec_extra,
                const kcr_config_options *opts, kcr_error_t *err) {
  char *path = fmt("%s/kubeconfig", fx->dir);
  char *yaml = fmt("current-context: x\n"
                   "clusters:\n"
                   "- name: c\n"
                   "  cluster:\n"
                   "    server: https://exec.example.com:6443\n"
                   "    tls-server-name: exec.internal\n"
                   "    extensions:\n"
                   "    - name: client.authentication.k8s.io/exec\n"
                   "      extension: {audience: kcr, retries: 3, nested: {ok: true}}\n"
                   "users:\n"
                   "- name: u\n"
                   "  user:\n"
                   "    exec:\n"
                   "      command: %s\n"
                   "      apiVersion: %s\n"
                   "      interactiveMode: IfAvailable\n"
                   "%s"
                   "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
                   command ? command : fx->plugin, api, exec_extra ? exec_extra : "");
  int rc;
  write_file(path, yaml, 0600);
  kcr_rest_config_unref(fx->cfg);
  fx->cfg = NULL;
  rc = kcr_rest_config_from_kubeconfig(path, NULL, opts, &fx->cfg, err);
  free(path);
  free(yaml);
  return rc;
}

#define COUNTER                                                                                    \
  "n=$(cat \"$DIR/count\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$DIR/count\"\n"

static int runs(struct fixture *fx) {
  char *p = fmt("%s/count", fx->dir);
  char *t;
  int n = 0;
  if (access(p, F_OK) == 0) {
    t = read_text(p);
    n = (int)strtol(t, NULL, 10);
    free(t);
  }
  free(p);
  return n;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- tests ---- */

static void test_config_exec_v1_token_and_exec_info(void **state) {
  struct fixture *fx = *state;
  kcr_error_t err = {0};
  kcr_credentials cr;
  json_t *info, *cluster;
  json_error_t je;
  char *p, *args;

  plugin(fx, "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$DIR/info.json\"\n"
             "printf '%s|%s|%s|%s' \"$1\" \"$2\" \"$PLUGIN_VAR\" \"$#\" > \"$DIR/args.txt\"\n"
             "cat <<'EOF'\n"
             "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
             "\"status\":{\"token\":\"exec-token-v1\"}}\n"
             "EOF\n");
  assert_int_equal(load(fx, NULL, V1,
                        "      args: [one, two words]\n"
                        "      env: [{name: PLUGIN_VAR, value: from-config}]\n"
                        "      provideClusterInfo: true\n",
                        NULL, &err),
                   0);
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "exec-token-v1");
  assert_null(cr.client_cert_pem);
  assert_int_equal(cr.expiry.sec, 0);
  kcr_credentials_free(&cr);

  /* argv without a shell, env for the child only. */
  p = fmt("%s/args.txt", fx->dir);
  args = read_text(p);
  assert_string_equal(args, "one|two words|from-config|2");
  assert_null(getenv("PLUGIN_VAR"));
  free(args);
  free(p);

  p = fmt("%s/info.json", fx->dir);
  info = json_load_file(p, 0, &je);
  free(p);
  assert_non_null(info);
  assert_string_equal(json_string_value(json_object_get(info, "apiVersion")), V1);
  assert_string_equal(json_string_value(json_object_get(info, "kind")), "ExecCredential");
  assert_true(json_is_false(json_object_get(json_object_get(info, "spec"), "interactive")));
  cluster = json_object_get(json_object_get(info, "spec"), "cluster");
  assert_string_equal(json_string_value(json_object_get(cluster, "server")),
                      "https://exec.example.com:6443");
  assert_string_equal(json_string_value(json_object_get(cluster, "tls-server-name")),
                      "exec.internal");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(cluster, "config"), "audience")), "kcr");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(cluster, "config"), "retries")), 3);
  assert_true(json_is_true(
      json_object_get(json_object_get(json_object_get(cluster, "config"), "nested"), "ok")));
  json_decref(info);

  /* Without provideClusterInfo there is no spec.cluster. */
  assert_int_equal(load(fx, NULL, V1, NULL, NULL, &err), 0);
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  kcr_credentials_free(&cr);
  p = fmt("%s/info.json", fx->dir);
  info = json_load_file(p, 0, &je);
  free(p);
  assert_non_null(info);
  assert_null(json_object_get(json_object_get(info, "spec"), "cluster"));
  json_decref(info);
}

static void test_config_exec_v1beta1_client_cert(void **state) {
  struct fixture *fx = *state;
  kcr_error_t err = {0};
  kcr_credentials cr;
  static const char cert[] =
      "-----BEGIN CERTIFICATE-----\nZXhlYy1jZXJ0\n-----END CERTIFICATE-----\n";
  static const char key[] =
      "-----BEGIN PRIVATE KEY-----\nZXhlYy1rZXk=\n-----END PRIVATE KEY-----\n";

  plugin(fx, "cat <<'EOF'\n"
             "{\"apiVersion\":\"" V1BETA1 "\",\"kind\":\"ExecCredential\",\"status\":{"
             "\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\nZXhlYy1jZXJ0\\n-----END "
             "CERTIFICATE-----\\n\","
             "\"clientKeyData\":\"-----BEGIN PRIVATE KEY-----\\nZXhlYy1rZXk=\\n-----END PRIVATE "
             "KEY-----\\n\"}}\n"
             "EOF\n");
  /* v1beta1 defaults interactiveMode, so leave it out. */
  {
    char *path = fmt("%s/kubeconfig", fx->dir);
    char *yaml = fmt("current-context: x\n"
                     "clusters: [{name: c, cluster: {server: 'https://e'}}]\n"
                     "users: [{name: u, user: {exec: {command: '%s', apiVersion: " V1BETA1 "}}}]\n"
                     "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
                     fx->plugin);
    write_file(path, yaml, 0600);
    assert_int_equal(kcr_rest_config_from_kubeconfig(path, NULL, NULL, &fx->cfg, &err), 0);
    free(path);
    free(yaml);
  }
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_null(cr.bearer_token);
  assert_int_equal(cr.client_cert_len, strlen(cert));
  assert_memory_equal(cr.client_cert_pem, cert, strlen(cert));
  assert_int_equal(cr.client_key_len, strlen(key));
  assert_memory_equal(cr.client_key_pem, key, strlen(key));
  kcr_credentials_free(&cr);
}

static void test_config_exec_refreshes_before_expiry(void **state) {
  struct fixture *fx = *state;
  kcr_error_t err = {0};
  kcr_credentials cr;
  kcr_clock_t *clock;
  uint64_t g1, g2;

  /* Token n expires at 00:00:(2 + 10(n-1)): the first one two seconds from "now". */
  plugin(fx, COUNTER "printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
                     "\"status\":{\"token\":\"tok-%d\",\"expirationTimestamp\":"
                     "\"2030-01-01T00:00:%02dZ\"}}' $n $((2 + 10 * (n - 1)))\n");
  assert_int_equal(load(fx, NULL, V1, NULL, NULL, &err), 0);
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1893456000, 0}, &clock, NULL), 0);
  kcr__rest_config_set_clock(fx->cfg, clock);

  assert_int_equal(runs(fx), 0); /* nothing runs at load */
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "tok-1");
  assert_int_equal(cr.expiry.sec, 1893456000 + 2);
  g1 = cr.generation;
  kcr_credentials_free(&cr);
  assert_true(kcr_rest_config_credentials_fresh(fx->cfg, g1));
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "tok-1");
  kcr_credentials_free(&cr);
  assert_int_equal(runs(fx), 1);

  /* Two seconds later it has expired: the plugin runs again. */
  kcr_fake_clock_step(clock, 2 * KCR_NSEC_PER_SEC);
  assert_false(kcr_rest_config_credentials_fresh(fx->cfg, g1));
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "tok-2");
  g2 = cr.generation;
  assert_true(g2 != g1);
  kcr_credentials_free(&cr);
  assert_int_equal(runs(fx), 2);

  /* tok-2 lives until 00:00:12, 10 s: refreshed 2.5 s early (a quarter of it). */
  kcr_fake_clock_step(clock, 7 * KCR_NSEC_PER_SEC); /* 00:00:09 */
  assert_true(kcr_rest_config_credentials_fresh(fx->cfg, g2));
  kcr_fake_clock_step(clock, 1 * KCR_NSEC_PER_SEC); /* 00:00:10 */
  assert_false(kcr_rest_config_credentials_fresh(fx->cfg, g2));
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "tok-3");
  kcr_credentials_free(&cr);
  assert_int_equal(runs(fx), 3);

  kcr_rest_config_unref(fx->cfg);
  fx->cfg = NULL;
  kcr_clock_destroy(clock);
}

static void test_config_exec_rejected_reruns(void **state) {
  struct fixture *fx = *state;
  kcr_error_t err = {0};
  kcr_credentials cr;
  uint64_t g1;

  plugin(fx, COUNTER "printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
                     "\"status\":{\"token\":\"tok-%d\"}}' $n\n");
  assert_int_equal(load(fx, NULL, V1, NULL, NULL, &err), 0);
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "tok-1");
  g1 = cr.generation;
  kcr_credentials_free(&cr);

  /* No expiry: reused until the server says 401. */
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  kcr_credentials_free(&cr);
  assert_int_equal(runs(fx), 1);
  kcr_rest_config_credentials_rejected(fx->cfg, g1 - 1); /* stale: ignored */
  assert_true(kcr_rest_config_credentials_fresh(fx->cfg, g1));
  kcr_rest_config_credentials_rejected(fx->cfg, g1);
  kcr_rest_config_credentials_rejected(fx->cfg, g1);
  assert_false(kcr_rest_config_credentials_fresh(fx->cfg, g1));
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "tok-2");
  assert_true(kcr_rest_config_credentials_fresh(fx->cfg, cr.generation));
  kcr_credentials_free(&cr);
  assert_int_equal(runs(fx), 2);
}

struct worker {
  kcr_rest_config_t *cfg;
  int rc;
  char token[64];
};

static void *on_worker(void *arg) {
  struct worker *w = arg;
  kcr_credentials cr;
  w->rc = kcr_rest_config_credentials(w->cfg, &cr, NULL);
  if (w->rc == 0)
    snprintf(w->token, sizeof(w->token), "%s", cr.bearer_token);
  kcr_credentials_free(&cr);
  return NULL;
}

static void test_config_exec_concurrent_callers_share_one_run(void **state) {
  struct fixture *fx = *state;
  kcr_error_t err = {0};
  struct worker w[8];
  pthread_t t[8];

  plugin(fx, COUNTER "sleep 0.3\nprintf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
                     "\"status\":{\"token\":\"tok-%d\"}}' $n\n");
  assert_int_equal(load(fx, NULL, V1, NULL, NULL, &err), 0);
  for (int i = 0; i < 8; i++) {
    w[i].cfg = fx->cfg;
    w[i].rc = -100;
    assert_int_equal(pthread_create(&t[i], NULL, on_worker, &w[i]), 0);
  }
  for (int i = 0; i < 8; i++) {
    assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(w[i].rc, 0);
    assert_string_equal(w[i].token, "tok-1");
  }
  assert_int_equal(runs(fx), 1);
}

static void test_config_exec_timeout(void **state) {
  struct fixture *fx = *state;
  kcr_error_t err = {0};
  kcr_credentials cr;
  int64_t start;

  plugin(fx, "sleep 30\n");
  assert_int_equal(load(fx, NULL, V1, NULL, NULL, &err), 0);
  kcr__rest_config_set_exec_limits(fx->cfg, 300 * KCR_NSEC_PER_MSEC, 0);
  start = now_ms();
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), KCR_ETIMEDOUT);
  assert_true(now_ms() - start < 2000);
  assert_null(cr.bearer_token);
  assert_non_null(strstr(err.message, fx->plugin));
  assert_non_null(strstr(err.message, "did not finish within 300 ms"));
}

static void test_config_exec_output_too_big(void **state) {
  struct fixture *fx = *state;
  kcr_error_t err = {0};
  kcr_credentials cr;

  /* Megabytes, then a hang: the limit must cut it off, not the timeout. */
  plugin(fx, "head -c 4000000 /dev/zero | tr '\\000' a\nsleep 30\n");
  assert_int_equal(load(fx, NULL, V1, NULL, NULL, &err), 0);
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), KCR_ETOOBIG);
  assert_non_null(strstr(err.message, "wrote more than 1048576 bytes to stdout"));
}

static void test_config_exec_failure_reports_stderr(void **state) {
  struct fixture *fx = *state;
  kcr_error_t err = {0};
  kcr_credentials cr;

  plugin(fx, "echo 'SEKRET-NOT-PRINTED-1'\n"
             "echo 'boom: the identity provider said no' >&2\n"
             "exit 3\n");
  assert_int_equal(
      load(fx, NULL, V1, "      installHint: install it with make plugin\n", NULL, &err), 0);
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), KCR_EAUTH);
  assert_non_null(strstr(err.message, "failed with exit code 3"));
  assert_non_null(strstr(err.message, "boom: the identity provider said no"));
  assert_non_null(strstr(err.message, "install it with make plugin"));
  assert_null(strstr(err.message, "SEKRET"));

  /* A failure is not cached: the next call runs the plugin again. */
  plugin(fx, "printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
             "\"status\":{\"token\":\"better\"}}'\n");
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "better");
  kcr_credentials_free(&cr);
}

struct bad_output {
  const char *output;
  const char *needle;
};

static void test_config_exec_bad_output(void **state) {
  static const struct bad_output cases[] = {
      {"not json SEKRET-TOKEN-DO-NOT-LEAK", "output is not valid JSON"},
      {"{\"apiVersion\":\"" V1BETA1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":"
       "\"SEKRET\"}}",
       "is configured for apiVersion " V1 " but returned another apiVersion"},
      /* The plugin's stdout is never quoted, not even its apiVersion. */
      {"{\"apiVersion\":\"SEKRET-TOKEN-AS-API-VERSION\",\"kind\":\"ExecCredential\"}",
       "but returned another apiVersion"},
      {"{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"SEKRET\"}}",
       "but returned no apiVersion"},
      {"{\"apiVersion\":\"" V1 "\",\"kind\":\"Secret\",\"status\":{\"token\":\"SEKRET\"}}",
       "kind is not ExecCredential"},
      {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\"}", "didn't return a status"},
      {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{}}",
       "didn't return a token or cert/key pair"},
      {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{"
       "\"clientCertificateData\":\"SEKRET\"}}",
       "only a client certificate or key"},
      {"{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"SEKRET\","
       "\"expirationTimestamp\":\"tomorrow\"}}",
       "expirationTimestamp is not an RFC 3339 time"},
  };
  struct fixture *fx = *state;
  char *out = fmt("%s/out.json", fx->dir);
  kcr_error_t err = {0};

  plugin(fx, "cat \"$DIR/out.json\"\n");
  assert_int_equal(load(fx, NULL, V1, NULL, NULL, &err), 0);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kcr_credentials cr;
    int rc;
    write_file(out, cases[i].output, 0600);
    kcr_error_clear(&err);
    rc = kcr_rest_config_credentials(fx->cfg, &cr, &err);
    if (rc != KCR_EAUTH || !strstr(err.message, cases[i].needle))
      fail_msg("case %zu: rc %s, message \"%s\"", i, kcr_err_name(rc), err.message);
    assert_null(strstr(err.message, "SEKRET"));
  }
  free(out);
}

static void test_config_exec_command_lookup(void **state) {
  struct fixture *fx = *state;
  kcr_error_t err = {0};
  kcr_credentials cr;
  kcr_config_options o = {0};
  char *path_env = fmt("PATH=/nonexistent::%s:/usr/bin:/bin", fx->dir);
  char *env[] = {path_env, NULL};
  char *named = fmt("%s/kcr-test-plugin", fx->dir);
  char cwd[4096];

  write_file(named,
             "#!/bin/sh\nprintf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
             "\"status\":{\"token\":\"from-path\"}}'\n",
             0755);
  /* No '/': looked up in the PATH of the environment the config was loaded with. */
  o.env = env;
  assert_int_equal(load(fx, "kcr-test-plugin", V1, NULL, &o, &err), 0);
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "from-path");
  kcr_credentials_free(&cr);

  /* A relative path with '/' resolves against the kubeconfig's directory. */
  assert_non_null(getcwd(cwd, sizeof(cwd)));
  assert_int_equal(chdir("/"), 0);
  assert_int_equal(load(fx, "./kcr-test-plugin", V1, NULL, NULL, &err), 0);
  assert_int_equal(chdir(cwd), 0);
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "from-path");
  kcr_credentials_free(&cr);

  /* Not found: the install hint says what to do. */
  assert_int_equal(load(fx, "kcr-no-such-plugin", V1,
                        "      installHint: brew install kcr-no-such-plugin\n", &o, &err),
                   0);
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), KCR_EAUTH);
  assert_non_null(strstr(err.message, "kcr-no-such-plugin: executable not found in PATH"));
  assert_non_null(strstr(err.message, "brew install"));

  /* Exists but is not executable. */
  write_file(named, "#!/bin/sh\n", 0644);
  kcr_error_clear(&err);
  assert_int_equal(load(fx, named, V1, NULL, NULL, &err), 0);
  assert_int_equal(kcr_rest_config_credentials(fx->cfg, &cr, &err), KCR_EAUTH);
  assert_non_null(strstr(err.message, "cannot run"));
  free(named);
  free(path_env);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_config_exec_v1_token_and_exec_info, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_exec_v1beta1_client_cert, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_exec_refreshes_before_expiry, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_exec_rejected_reruns, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_exec_concurrent_callers_share_one_run, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_config_exec_timeout, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_exec_output_too_big, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_exec_failure_reports_stderr, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_exec_bad_output, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_exec_command_lookup, setup, teardown),
  };
  return cmocka_run_group_tests_name("config_exec", tests, NULL, NULL);
}
