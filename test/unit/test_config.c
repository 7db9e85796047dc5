/* SPDX-License-Identifier: MIT */
/*
 * test_config.c: kubeconfig loading and merging, validation errors, token files,
 * in-cluster config and controller-runtime's precedence. Exec plugins are in
 * test_config_exec.c. Fixtures live in data/config/; tests that need files to
 * change write them into a temporary directory.
 */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/config_internal.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "kcr/log.h"
#include "testutil.h"

#define DATA KCR_TEST_DATA_DIR "/config"

/* ---- helpers ---- */

static char *xstrdup(const char *s) {
  char *p = strdup(s);
  assert_non_null(p);
  return p;
}

static char *fmt(const char *f, ...) KCR_PRINTF(1, 2);
static char *fmt(const char *f, ...) {
  char *p = NULL;
  va_list ap;
  va_start(ap, f);
  assert_true(vasprintf(&p, f, ap) >= 0);
  va_end(ap);
  return p;
}

/* mkenv builds a NULL-terminated environment from its arguments (NULL ends). */
static char **mkenv(const char *first, ...) {
  char **env = calloc(16, sizeof(char *));
  size_t n = 0;
  va_list ap;
  assert_non_null(env);
  va_start(ap, first);
  for (const char *s = first; s; s = va_arg(ap, const char *)) {
    assert_true(n < 15);
    env[n++] = xstrdup(s);
  }
  va_end(ap);
  return env;
}

static void freeenv(char **env) {
  for (char **p = env; p && *p; p++)
    free(*p);
  free(env);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

static char *make_tmpdir(void) {
  char *d = xstrdup("/tmp/kcr-config-XXXXXX");
  assert_non_null(mkdtemp(d));
  return d;
}

static int on_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void rm_tmpdir(char *d) {
  nftw(d, on_rm, 16, FTW_DEPTH | FTW_PHYS);
  free(d);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void assert_bytes_equal_file(const unsigned char *p, size_t len, const char *path) {
  size_t flen;
  char *want = slurp(path, &flen);
  assert_non_null(p);
  assert_int_equal(len, flen);
  assert_memory_equal(p, want, flen);
  free(want);
}

/* load_text writes a kubeconfig into dir and loads it explicitly. */
static int load_text(const char *dir, const char *yaml, const char *context,
                     kcr_rest_config_t **cfg, kcr_error_t *err) {
  char *path = fmt("%s/kubeconfig", dir);
  int rc;
  write_file(path, yaml);
  rc = kcr_rest_config_from_kubeconfig(path, context, NULL, cfg, err);
  free(path);
  return rc;
}

/* ---- kubeconfig fields ---- */

static void test_config_basic_kubeconfig_fields(void **state) {
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  kcr_credentials cr;
  size_t len;
  const unsigned char *ca;
  const char *const *g, *const *x;
  (void)state;

  assert_int_equal(kcr_rest_config_from_kubeconfig(DATA "/basic.yaml", NULL, NULL, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_server(cfg), "https://dev.example.com:6443");
  assert_string_equal(kcr_rest_config_namespace(cfg), "team-a");
  assert_string_equal(kcr_rest_config_tls_server_name(cfg), "api.dev.internal");
  assert_string_equal(kcr_rest_config_proxy_url(cfg), "http://proxy.example.com:3128");
  assert_string_equal(kcr_rest_config_source(cfg), DATA "/basic.yaml");
  assert_int_equal(kcr_rest_config_insecure(cfg), 0);
  ca = kcr_rest_config_ca(cfg, &len);
  assert_bytes_equal_file(ca, len, DATA "/ca.crt");

  assert_string_equal(kcr_rest_config_impersonate_user(cfg), "bob");
  assert_string_equal(kcr_rest_config_impersonate_uid(cfg), "uid-1234");
  g = kcr_rest_config_impersonate_groups(cfg);
  assert_string_equal(g[0], "system:masters");
  assert_string_equal(g[1], "devs");
  assert_null(g[2]);
  x = kcr_rest_config_impersonate_extra(cfg);
  assert_string_equal(x[0], "scopes");
  assert_string_equal(x[1], "read");
  assert_string_equal(x[2], "scopes");
  assert_string_equal(x[3], "write");
  assert_string_equal(x[4], "team");
  assert_string_equal(x[5], "blue");
  assert_null(x[6]);

  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_null(cr.bearer_token);
  assert_null(cr.username);
  assert_bytes_equal_file(cr.client_cert_pem, cr.client_cert_len, DATA "/client.crt");
  assert_bytes_equal_file(cr.client_key_pem, cr.client_key_len, DATA "/client.key");
  assert_int_equal(cr.expiry.sec, 0);
  /* Static credentials stay fresh, and a 401 changes nothing. */
  assert_true(kcr_rest_config_credentials_fresh(cfg, cr.generation));
  kcr_rest_config_credentials_rejected(cfg, cr.generation);
  assert_true(kcr_rest_config_credentials_fresh(cfg, cr.generation));
  kcr_credentials_free(&cr);
  assert_null(cr.client_key_pem);
  kcr_rest_config_unref(cfg);
}

static void test_config_data_fields_and_context_override(void **state) {
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  kcr_credentials cr;
  size_t len;
  const unsigned char *ca;
  (void)state;

  assert_int_equal(kcr_rest_config_from_kubeconfig(DATA "/basic.yaml", "data", NULL, &cfg, &err),
                   0);
  assert_string_equal(kcr_rest_config_server(cfg), "https://prod.example.com");
  assert_string_equal(kcr_rest_config_namespace(cfg), "default");
  assert_null(kcr_rest_config_tls_server_name(cfg));
  assert_null(kcr_rest_config_proxy_url(cfg));
  assert_null(kcr_rest_config_impersonate_user(cfg));
  assert_null(kcr_rest_config_impersonate_groups(cfg)[0]);
  assert_null(kcr_rest_config_impersonate_extra(cfg)[0]);
  ca = kcr_rest_config_ca(cfg, &len);
  assert_bytes_equal_file(ca, len, DATA "/ca.crt");
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "carol-token-value");
  assert_bytes_equal_file(cr.client_cert_pem, cr.client_cert_len, DATA "/client.crt");
  assert_bytes_equal_file(cr.client_key_pem, cr.client_key_len, DATA "/client.key");
  kcr_credentials_free(&cr);
  kcr_rest_config_unref(cfg);

  /* The context can also come through the options. */
  {
    kcr_config_options o = {0};
    o.context = "basic";
    assert_int_equal(kcr_rest_config_from_kubeconfig(DATA "/basic.yaml", NULL, &o, &cfg, &err), 0);
  }
  assert_string_equal(kcr_rest_config_namespace(cfg), "kube-system");
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.username, "dave");
  assert_string_equal(cr.password, "dave-password");
  assert_null(cr.bearer_token);
  assert_null(cr.client_cert_pem);
  kcr_credentials_free(&cr);
  kcr_rest_config_unref(cfg);
}

static void test_config_merge_first_file_wins(void **state) {
  char **env;
  kcr_config_options o = {0};
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  kcr_credentials cr;
  (void)state;

  /* A missing file in the middle of KUBECONFIG is skipped, as client-go does. */
  env = mkenv("KUBECONFIG=" DATA "/merge-a.yaml:" DATA "/does-not-exist.yaml:" DATA
              "/merge-b.yaml:" DATA "/merge-c.yaml",
              "HOME=/nonexistent", NULL);
  o.env = env;
  assert_int_equal(kcr_rest_config_from_kubeconfig(NULL, NULL, &o, &cfg, &err), 0);
  /* current-context comes from merge-b (the first file to set it); the context,
   * cluster and user it names come whole from merge-a, which set them first. */
  assert_string_equal(kcr_rest_config_server(cfg), "https://a.example.com");
  assert_null(kcr_rest_config_tls_server_name(cfg)); /* not merged field by field */
  assert_string_equal(kcr_rest_config_namespace(cfg), "from-a");
  assert_string_equal(kcr_rest_config_source(cfg), DATA "/merge-a.yaml");
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "token-from-a");
  kcr_credentials_free(&cr);
  kcr_rest_config_unref(cfg);

  /* Entries only the later file has are there too. */
  o.context = "ctx-b";
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_server(cfg), "https://only-b.example.com");
  assert_string_equal(kcr_rest_config_namespace(cfg), "from-b");
  assert_string_equal(kcr_rest_config_source(cfg), DATA "/merge-b.yaml");
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "b-user-token");
  kcr_credentials_free(&cr);
  kcr_rest_config_unref(cfg);
  freeenv(env);

  /* An explicit --kubeconfig is used alone: merge-b's current-context names a
   * context merge-b defines itself. */
  assert_int_equal(kcr_rest_config_from_kubeconfig(DATA "/merge-b.yaml", NULL, NULL, &cfg, &err),
                   0);
  assert_string_equal(kcr_rest_config_server(cfg), "https://only-b.example.com");
  kcr_rest_config_unref(cfg);

  /* Reversed order: merge-c now sets current-context first. */
  env = mkenv("KUBECONFIG=" DATA "/merge-c.yaml:" DATA "/merge-b.yaml:" DATA "/merge-a.yaml", NULL);
  o.env = env;
  o.context = NULL;
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_namespace(cfg), "from-b");
  kcr_rest_config_unref(cfg);
  freeenv(env);
}

static void test_config_relative_paths_resolve_against_file(void **state) {
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  kcr_credentials cr;
  size_t len;
  const unsigned char *ca;
  char cwd[4096];
  (void)state;

  assert_non_null(getcwd(cwd, sizeof(cwd)));
  /* From somewhere else, and with a relative kubeconfig path. */
  assert_int_equal(chdir(DATA "/rel"), 0);
  assert_int_equal(kcr_rest_config_from_kubeconfig("sub/kubeconfig", NULL, NULL, &cfg, &err), 0);
  assert_int_equal(chdir("/"), 0);
  ca = kcr_rest_config_ca(cfg, &len);
  assert_bytes_equal_file(ca, len, DATA "/ca.crt");
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_bytes_equal_file(cr.client_cert_pem, cr.client_cert_len, DATA "/client.crt");
  assert_bytes_equal_file(cr.client_key_pem, cr.client_key_len, DATA "/client.key");
  kcr_credentials_free(&cr);
  kcr_rest_config_unref(cfg);
  assert_int_equal(chdir(cwd), 0);
}

static void test_config_token_file_rotation(void **state) {
  char *dir = make_tmpdir();
  char *tok = fmt("%s/token", dir);
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  kcr_credentials cr;
  kcr_clock_t *clock;
  uint64_t g1, g2;
  (void)state;

  write_file(tok, "  token-one\n");
  assert_int_equal(load_text(dir,
                             "current-context: c\n"
                             "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
                             "users: [{name: u, user: {tokenFile: token}}]\n"
                             "contexts: [{name: c, context: {cluster: c, user: u}}]\n",
                             NULL, &cfg, &err),
                   0);
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1893456000, 0}, &clock, NULL), 0);
  kcr__rest_config_set_clock(cfg, clock);

  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "token-one");
  g1 = cr.generation;
  kcr_credentials_free(&cr);

  /* Rotated on disk, but not re-read before the minute is up. */
  write_file(tok, "token-two\n");
  kcr_fake_clock_step(clock, 59 * KCR_NSEC_PER_SEC);
  assert_true(kcr_rest_config_credentials_fresh(cfg, g1));
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "token-one");
  kcr_credentials_free(&cr);

  kcr_fake_clock_step(clock, 2 * KCR_NSEC_PER_SEC);
  assert_false(kcr_rest_config_credentials_fresh(cfg, g1));
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "token-two");
  g2 = cr.generation;
  assert_true(g2 != g1);
  assert_true(kcr_rest_config_credentials_fresh(cfg, g2));
  assert_false(kcr_rest_config_credentials_fresh(cfg, g1));
  kcr_credentials_free(&cr);

  /* A 401 with an old generation is ignored; with the current one, the file is
   * read again at once. */
  write_file(tok, "token-three");
  kcr_rest_config_credentials_rejected(cfg, g1);
  assert_true(kcr_rest_config_credentials_fresh(cfg, g2));
  kcr_rest_config_credentials_rejected(cfg, g2);
  assert_false(kcr_rest_config_credentials_fresh(cfg, g2));
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "token-three");
  kcr_credentials_free(&cr);

  /* The file vanishing keeps the token we have (client-go's cachingTokenSource). */
  kcr_log_set_level(KCR_LOG_ERROR);
  assert_int_equal(unlink(tok), 0);
  kcr_fake_clock_step(clock, 61 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "token-three");
  kcr_credentials_free(&cr);
  kcr_log_set_level(KCR_LOG_INFO);

  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
  free(tok);
  rm_tmpdir(dir);
}

/* ---- errors ---- */

static void test_config_bad_yaml_reports_line(void **state) {
  kcr_rest_config_t *cfg = (kcr_rest_config_t *)1;
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_rest_config_from_kubeconfig(DATA "/bad-yaml.yaml", NULL, NULL, &cfg, &err),
                   KCR_ECONFIG);
  assert_null(cfg);
  assert_int_equal(err.code, KCR_ECONFIG);
  assert_non_null(strstr(err.message, DATA "/bad-yaml.yaml"));
  assert_non_null(strstr(err.message, "line 13"));
  assert_non_null(strstr(err.message, "invalid YAML"));
  assert_null(strstr(err.message, "SEKRET"));
}

static void test_config_bad_base64_names_field(void **state) {
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_rest_config_from_kubeconfig(DATA "/bad-base64.yaml", NULL, NULL, &cfg, &err),
                   KCR_ECONFIG);
  assert_non_null(strstr(err.message, "bad-base64.yaml line 10"));
  assert_non_null(strstr(err.message, "users[dev].user.client-key-data"));
  assert_non_null(strstr(err.message, "base64"));
  assert_null(strstr(err.message, "SEKRET"));
  assert_null(strstr(err.message, "not*base64"));
}

static void test_config_auth_provider_refused(void **state) {
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(
      kcr_rest_config_from_kubeconfig(DATA "/auth-provider.yaml", NULL, NULL, &cfg, &err),
      KCR_ENOTSUP);
  assert_non_null(
      strstr(err.message, "users[gcp].user.auth-provider: auth-provider is not supported"));
  assert_non_null(strstr(err.message, "use an exec plugin"));
  assert_null(strstr(err.message, "SEKRET"));
}

static void test_config_missing_context(void **state) {
  char *dir = make_tmpdir();
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_rest_config_from_kubeconfig(DATA "/basic.yaml", "nope", NULL, &cfg, &err),
                   KCR_ECONFIG);
  assert_non_null(strstr(err.message, "context \"nope\" not found"));
  assert_non_null(strstr(err.message, "basic.yaml"));

  kcr_error_clear(&err);
  assert_int_equal(load_text(dir,
                             "current-context: gone\n"
                             "users: [{name: u, user: {token: SEKRET-TOKEN-DO-NOT-LEAK-4}}]\n",
                             NULL, &cfg, &err),
                   KCR_ECONFIG);
  assert_non_null(strstr(err.message, "current-context: context \"gone\" not found"));

  kcr_error_clear(&err);
  assert_int_equal(load_text(dir, "clusters: []\n", NULL, &cfg, &err), KCR_ECONFIG);
  assert_non_null(strstr(err.message, "no context chosen"));

  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_config_from_kubeconfig(DATA "/none.yaml", NULL, NULL, &cfg, &err),
                   KCR_ENOENT);
  assert_non_null(strstr(err.message, DATA "/none.yaml"));
  rm_tmpdir(dir);
}

static void test_config_file_limits_and_shapes(void **state) {
  char *dir = make_tmpdir();
  char *path = fmt("%s/big", dir);
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  FILE *f;
  (void)state;

  /* Past 16 MiB a kubeconfig is refused before it is read (sparse file). */
  f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(ftruncate(fileno(f), (off_t)17 << 20), 0);
  fclose(f);
  assert_int_equal(kcr_rest_config_from_kubeconfig(path, NULL, NULL, &cfg, &err), KCR_ETOOBIG);
  assert_non_null(strstr(err.message, path));
  assert_non_null(strstr(err.message, "limit of 16777216 bytes"));

  /* A directory is an I/O error naming it. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_config_from_kubeconfig(dir, NULL, NULL, &cfg, &err), KCR_EIO);
  assert_non_null(strstr(err.message, dir));

  /* An empty file is an empty config. */
  kcr_error_clear(&err);
  assert_int_equal(load_text(dir, "", NULL, &cfg, &err), KCR_ECONFIG);
  assert_non_null(strstr(err.message, "no context chosen"));

  /* The top level must be a mapping. */
  kcr_error_clear(&err);
  assert_int_equal(load_text(dir, "- a\n- b\n", NULL, &cfg, &err), KCR_ECONFIG);
  assert_non_null(strstr(err.message, "line 1: (top level): expected a mapping"));

  /* JSON is YAML too. */
  assert_int_equal(load_text(dir,
                             "{\"current-context\": \"x\", \"clusters\": [{\"name\": \"c\", "
                             "\"cluster\": {\"server\": \"https://json.example.com\"}}], "
                             "\"users\": [{\"name\": \"u\", \"user\": null}], "
                             "\"contexts\": [{\"name\": \"x\", \"context\": "
                             "{\"cluster\": \"c\", \"user\": \"u\"}}]}",
                             NULL, &cfg, &err),
                   0);
  assert_string_equal(kcr_rest_config_server(cfg), "https://json.example.com");
  kcr_rest_config_unref(cfg);
  free(path);
  rm_tmpdir(dir);
}

struct bad_case {
  const char *what;
  int code;
  const char *yaml; /* the user u and cluster c of context x */
  const char *needle;
};

static void test_config_validation_errors(void **state) {
  static const struct bad_case cases[] = {
      {"no server", KCR_ECONFIG,
       "clusters: [{name: c, cluster: {insecure-skip-tls-verify: true}}]\n",
       "line 2: clusters[c].cluster.server: missing"},
      {"ca twice", KCR_ECONFIG,
       "clusters: [{name: c, cluster: {server: 'https://x', certificate-authority: a, "
       "certificate-authority-data: YQ==}}]\n",
       "certificate-authority and certificate-authority-data are both set"},
      {"ca and insecure", KCR_ECONFIG,
       "clusters: [{name: c, cluster: {server: 'https://x', insecure-skip-tls-verify: true, "
       "certificate-authority-data: YQ==}}]\n",
       "insecure-skip-tls-verify is not allowed"},
      {"bad proxy", KCR_ECONFIG,
       "clusters: [{name: c, cluster: {server: 'https://x', proxy-url: 'ftp://SEKRET@p'}}]\n",
       "clusters[c].cluster.proxy-url"},
      {"ca file missing", KCR_ENOENT,
       "clusters: [{name: c, cluster: {server: 'https://x', certificate-authority: nope.crt}}]\n",
       "clusters[c].cluster.certificate-authority: certificate-authority "},
      {"bool", KCR_ECONFIG,
       "clusters: [{name: c, cluster: {server: 'https://x', insecure-skip-tls-verify: maybe}}]\n",
       "clusters[c].cluster.insecure-skip-tls-verify: expected true or false"},
      {"clusters not a list", KCR_ECONFIG, "clusters: {name: c}\n",
       "line 2: clusters: expected a list"},
      {"duplicate", KCR_ECONFIG,
       "clusters: [{name: c, cluster: {server: 'https://x'}}, {name: c, cluster: {}}]\n",
       "clusters[c]: duplicate name"},
      {"unnamed", KCR_ECONFIG, "clusters: [{cluster: {server: 'https://x'}}]\n",
       "clusters[0].name: missing"},
      {"cert without key", KCR_ECONFIG,
       "users: [{name: u, user: {token: SEKRET-TOKEN-DO-NOT-LEAK-5, client-certificate-data: "
       "YQ==}}]\n",
       "client-key(-data) is missing"},
      {"token and basic", KCR_ECONFIG,
       "users: [{name: u, user: {token: SEKRET-TOKEN-DO-NOT-LEAK-5, username: a, password: "
       "SEKRET-PASSWORD}}]\n",
       "more than one authentication method"},
      {"groups without as", KCR_ECONFIG, "users: [{name: u, user: {as-groups: [g]}}]\n",
       "set without as"},
      {"exec no apiVersion", KCR_ECONFIG, "users: [{name: u, user: {exec: {command: x}}}]\n",
       "users[u].user.exec.apiVersion: missing"},
      {"exec v1alpha1", KCR_ECONFIG,
       "users: [{name: u, user: {exec: {command: x, apiVersion: "
       "client.authentication.k8s.io/v1alpha1-SEKRET}}}]\n",
       "users[u].user.exec.apiVersion: not supported"},
      {"exec v1 interactiveMode", KCR_ECONFIG,
       "users: [{name: u, user: {exec: {command: x, apiVersion: "
       "client.authentication.k8s.io/v1}}}]\n",
       "exec.interactiveMode: missing"},
      {"exec Always", KCR_ECONFIG,
       "users: [{name: u, user: {exec: {command: x, interactiveMode: Always, apiVersion: "
       "client.authentication.k8s.io/v1}}}]\n",
       "needs a terminal"},
      {"exec env name", KCR_ECONFIG,
       "users: [{name: u, user: {exec: {command: x, env: [{value: SEKRET-VALUE}], apiVersion: "
       "client.authentication.k8s.io/v1beta1}}}]\n",
       "exec.env: every entry needs a name"},
      {"token file missing", KCR_ENOENT, "users: [{name: u, user: {tokenFile: nope}}]\n",
       "users[u].user.tokenFile: token file "},
      {"bad namespace", KCR_ECONFIG,
       "contexts: [{name: x, context: {cluster: c, user: u, namespace: Not_Valid_SEKRET}}]\n",
       "contexts[x].context.namespace: not a valid namespace name"},
      {"unknown cluster", KCR_ECONFIG, "contexts: [{name: x, context: {cluster: what, user: u}}]\n",
       "cluster \"what\" not found"},
      {"string expected", KCR_ECONFIG,
       "users: [{name: u, user: {token: [SEKRET-TOKEN-DO-NOT-LEAK-6]}}]\n",
       "users[u].user.token: expected a string"},
  };
  char *dir = make_tmpdir();
  (void)state;

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const struct bad_case *bc = &cases[i];
    /* Each case replaces one section of a good config: the first section wins,
     * since a later duplicate key is ignored by the lookups below. */
    char *yaml = fmt("current-context: x\n%s%s%s%s", bc->yaml,
                     strncmp(bc->yaml, "clusters:", 9) == 0
                         ? ""
                         : "clusters: [{name: c, cluster: {server: 'https://x'}}]\n",
                     strncmp(bc->yaml, "users:", 6) == 0
                         ? ""
                         : "users: [{name: u, user: {token: SEKRET-TOKEN-DO-NOT-LEAK-7}}]\n",
                     strncmp(bc->yaml, "contexts:", 9) == 0
                         ? ""
                         : "contexts: [{name: x, context: {cluster: c, user: u}}]\n");
    kcr_rest_config_t *cfg = NULL;
    kcr_error_t err = {0};
    int rc = load_text(dir, yaml, NULL, &cfg, &err);
    if (rc != bc->code || !strstr(err.message, bc->needle))
      fail_msg("case \"%s\": rc %s, message \"%s\"", bc->what, kcr_err_name(rc), err.message);
    assert_null(cfg);
    assert_non_null(strstr(err.message, dir));
    assert_null(strstr(err.message, "SEKRET"));
    free(yaml);
  }
  rm_tmpdir(dir);
}

struct logged {
  int warnings;
  char last[1024];
};

static void on_log(const kcr_log_record *rec, void *data) {
  struct logged *l = data;
  if (rec->level == KCR_LOG_WARN) {
    l->warnings++;
    snprintf(l->last, sizeof(l->last), "%s", rec->msg);
  }
}

static void test_config_insecure_is_warned_and_scheme_defaults(void **state) {
  char *dir = make_tmpdir();
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  struct logged l = {0};
  (void)state;

  kcr_log_set_handler(on_log, &l);
  assert_int_equal(load_text(dir,
                             "current-context: x\n"
                             "clusters: [{name: c, cluster: {server: 'localhost:6443', "
                             "insecure-skip-tls-verify: true}}]\n"
                             "users: [{name: u, user: {token: SEKRET-TOKEN-DO-NOT-LEAK-8}}]\n"
                             "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
                             NULL, &cfg, &err),
                   0);
  kcr_log_set_handler(NULL, NULL);
  assert_int_equal(kcr_rest_config_insecure(cfg), 1);
  assert_string_equal(kcr_rest_config_server(cfg), "https://localhost:6443");
  assert_int_equal(l.warnings, 1);
  assert_non_null(strstr(l.last, "insecure-skip-tls-verify"));
  assert_null(strstr(l.last, "SEKRET"));
  kcr_rest_config_unref(cfg);

  /* client-go's DefaultServerURL: no TLS settings and no scheme means http. */
  assert_int_equal(load_text(dir,
                             "current-context: x\n"
                             "clusters: [{name: c, cluster: {server: 'localhost:8080///'}}]\n"
                             "users: [{name: u, user: {}}]\n"
                             "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
                             NULL, &cfg, &err),
                   0);
  assert_string_equal(kcr_rest_config_server(cfg), "http://localhost:8080");
  kcr_rest_config_unref(cfg);
  rm_tmpdir(dir);
}

/* 200 KB of nested flow sequences (or mappings) took libyaml's loader over a
 * minute (quadratic in depth): the depth is bounded while parsing, and the
 * refusal comes at once with its position. */
static void test_config_deep_nesting_fails_fast(void **state) {
  static const char *const opens[] = {"[", "{a: "};
  static const char *const closes[] = {"]", "}"};
  char *dir = make_tmpdir();
  (void)state;
  for (size_t k = 0; k < 2; k++) {
    size_t depth = 200000 / (strlen(opens[k]) + 1), ol = strlen(opens[k]);
    char *yaml = malloc(32 + depth * (ol + 1));
    size_t n = 0;
    struct timespec t0, t1;
    kcr_rest_config_t *cfg = NULL;
    kcr_error_t err = {0};
    double s;
    n += (size_t)sprintf(yaml, "clusters: ");
    for (size_t i = 0; i < depth; i++, n += ol)
      memcpy(yaml + n, opens[k], ol);
    for (size_t i = 0; i < depth; i++)
      yaml[n++] = closes[k][0];
    memcpy(yaml + n, "\n", 2);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(load_text(dir, yaml, NULL, &cfg, &err), KCR_ECONFIG);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_null(cfg);
    if (!strstr(err.message, "line 1 column ") ||
        !strstr(err.message, "mappings and lists nested deeper than 64 levels"))
      fail_msg("%s", err.message);
    if (s > 2.0)
      fail_msg("refusing %zu levels took %.2f s", depth, s);
    free(yaml);
  }
  /* At the limit (the root mapping is level 1): an ordinary shape error. */
  {
    char yaml[256] = "clusters: ";
    kcr_rest_config_t *cfg = NULL;
    kcr_error_t err = {0};
    size_t n = strlen(yaml);
    for (int i = 0; i < 63; i++)
      yaml[n++] = '[';
    for (int i = 0; i < 63; i++)
      yaml[n++] = ']';
    yaml[n] = '\0';
    assert_int_equal(load_text(dir, yaml, NULL, &cfg, &err), KCR_ECONFIG);
    assert_non_null(strstr(err.message, "clusters[0]: expected a mapping"));
  }
  rm_tmpdir(dir);
}

/* client-go's getAuthInfo: a context without a user, or naming one the files do
 * not define, connects without credentials (a warning names the missing user). */
static void test_config_context_without_user_is_anonymous(void **state) {
  static const struct {
    const char *context;
    bool warns;
  } cases[] = {
      {"{cluster: c}", false},
      {"{cluster: c, user: ''}", false},
      {"{cluster: c, user: ~}", false},
      {"{cluster: c, user: who}", true},
  };
  char *dir = make_tmpdir();
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *yaml = fmt("current-context: x\n"
                     "clusters: [{name: c, cluster: {server: 'https://x:6443'}}]\n"
                     "users: [{name: u, user: {token: SEKRET-TOKEN-DO-NOT-LEAK-9}}]\n"
                     "contexts: [{name: x, context: %s}]\n",
                     cases[i].context);
    kcr_rest_config_t *cfg = NULL;
    kcr_error_t err = {0};
    kcr_credentials cr;
    struct logged l = {0};
    kcr_log_set_handler(on_log, &l);
    if (load_text(dir, yaml, NULL, &cfg, &err) != 0)
      fail_msg("case %zu %s: %s", i, cases[i].context, err.message);
    kcr_log_set_handler(NULL, NULL);
    assert_string_equal(kcr_rest_config_server(cfg), "https://x:6443");
    assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
    assert_null(cr.bearer_token);
    assert_null(cr.username);
    assert_null(cr.password);
    assert_null(cr.client_cert_pem);
    assert_null(cr.client_key_pem);
    kcr_credentials_free(&cr);
    assert_int_equal(l.warnings, cases[i].warns ? 1 : 0);
    if (cases[i].warns) {
      assert_non_null(strstr(l.last, "context \"x\" names user \"who\", which is not defined"));
      assert_null(strstr(l.last, "SEKRET"));
    }
    kcr_rest_config_unref(cfg);
    free(yaml);
  }
  rm_tmpdir(dir);
}

/* ---- in-cluster ---- */

static char *make_sa_dir(const char *token, const char *ns) {
  char *dir = make_tmpdir();
  char *p = fmt("%s/token", dir);
  write_file(p, token);
  free(p);
  p = fmt("%s/ca.crt", dir);
  write_file(p, "-----BEGIN CERTIFICATE-----\nc2EtY2E=\n-----END CERTIFICATE-----\n");
  free(p);
  if (ns) {
    p = fmt("%s/namespace", dir);
    write_file(p, ns);
    free(p);
  }
  return dir;
}

/* The one reader of the service-account namespace: trimmed, and clear errors. */
static void test_config_service_account_namespace(void **state) {
  char *sa = make_sa_dir("t", "  kube-system \n"), *p, buf[64];
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_service_account_namespace(sa, buf, sizeof(buf), NULL), 0);
  assert_string_equal(buf, "kube-system");
  /* A name that does not fit the caller's buffer is an error, never truncated. */
  assert_int_equal(kcr_service_account_namespace(sa, buf, 5, &err), KCR_ETOOBIG);
  assert_string_equal(buf, "");
  p = fmt("%s/namespace", sa);
  write_file(p, " \n");
  kcr_error_clear(&err);
  assert_int_equal(kcr_service_account_namespace(sa, buf, sizeof(buf), &err), KCR_ECONFIG);
  assert_non_null(strstr(err.message, "blank"));
  unlink(p);
  kcr_error_clear(&err);
  assert_int_equal(kcr_service_account_namespace(sa, buf, sizeof(buf), &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, p));
  free(p);
  rm_tmpdir(sa);
}

static void test_config_in_cluster(void **state) {
  char *sa = make_sa_dir("sa-token-1\n", "operators\n");
  char **env = mkenv("KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", NULL);
  kcr_config_options o = {0};
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  kcr_credentials cr;
  kcr_clock_t *clock;
  const unsigned char *ca;
  size_t len;
  char *p;
  (void)state;

  o.env = env;
  o.sa_dir = sa;
  assert_int_equal(kcr_rest_config_in_cluster(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_server(cfg), "https://10.96.0.1:443");
  assert_string_equal(kcr_rest_config_namespace(cfg), "operators");
  assert_string_equal(kcr_rest_config_source(cfg), "in-cluster");
  p = fmt("%s/ca.crt", sa);
  ca = kcr_rest_config_ca(cfg, &len);
  assert_bytes_equal_file(ca, len, p);
  free(p);
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1893456000, 0}, &clock, NULL), 0);
  kcr__rest_config_set_clock(cfg, clock);
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "sa-token-1");
  kcr_credentials_free(&cr);
  /* The kubelet rotates bound tokens: the file is read again. */
  p = fmt("%s/token", sa);
  write_file(p, "sa-token-2\n");
  free(p);
  kcr_fake_clock_step(clock, 61 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_rest_config_credentials(cfg, &cr, &err), 0);
  assert_string_equal(cr.bearer_token, "sa-token-2");
  kcr_credentials_free(&cr);
  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
  freeenv(env);

  /* IPv6 service host, POD_NAMESPACE over the file. */
  env = mkenv("KUBERNETES_SERVICE_HOST=fd00:10:96::1", "KUBERNETES_SERVICE_PORT=6443",
              "POD_NAMESPACE=from-env", NULL);
  o.env = env;
  assert_int_equal(kcr_rest_config_in_cluster(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_server(cfg), "https://[fd00:10:96::1]:6443");
  assert_string_equal(kcr_rest_config_namespace(cfg), "from-env");
  kcr_rest_config_unref(cfg);
  freeenv(env);

  /* Not in a cluster. */
  env = mkenv("KUBERNETES_SERVICE_HOST=10.96.0.1", NULL);
  o.env = env;
  assert_int_equal(kcr_rest_config_in_cluster(&o, &cfg, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "KUBERNETES_SERVICE_PORT"));
  freeenv(env);
  rm_tmpdir(sa);

  /* No token: an error naming the file; no namespace file: "default". */
  sa = make_sa_dir("x", NULL);
  p = fmt("%s/token", sa);
  unlink(p);
  env = mkenv("KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", NULL);
  o.env = env;
  o.sa_dir = sa;
  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_config_in_cluster(&o, &cfg, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, p));
  write_file(p, "tok");
  assert_int_equal(kcr_rest_config_in_cluster(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_namespace(cfg), "default");
  kcr_rest_config_unref(cfg);
  free(p);
  freeenv(env);
  rm_tmpdir(sa);
}

/* ---- precedence ---- */

static void test_config_precedence(void **state) {
  char *sa = make_sa_dir("sa-token", "ns");
  char *home = make_tmpdir();
  char *kube = fmt("%s/.kube", home);
  char *homecfg = fmt("%s/.kube/config", home);
  char *h = fmt("HOME=%s", home);
  char **env;
  kcr_config_options o = {0};
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err = {0};
  (void)state;

  assert_int_equal(mkdir(kube, 0700), 0);
  write_file(homecfg, "current-context: home\n"
                      "clusters: [{name: c, cluster: {server: 'https://home.example.com'}}]\n"
                      "users: [{name: u, user: {}}]\n"
                      "contexts: [{name: home, context: {cluster: c, user: u}}]\n");
  o.sa_dir = sa;

  /* 1. --kubeconfig beats everything. */
  env = mkenv("KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443",
              "KUBECONFIG=" DATA "/merge-b.yaml", h, NULL);
  o.env = env;
  o.kubeconfig = DATA "/basic.yaml";
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_source(cfg), DATA "/basic.yaml");
  kcr_rest_config_unref(cfg);
  o.kubeconfig = NULL;

  /* 2. KUBECONFIG set: the default rules, even inside a cluster. */
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_source(cfg), DATA "/merge-b.yaml");
  kcr_rest_config_unref(cfg);
  freeenv(env);

  /* 3. KUBECONFIG unset and in a cluster: in-cluster. */
  env = mkenv("KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443", h, NULL);
  o.env = env;
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_source(cfg), "in-cluster");
  assert_string_equal(kcr_rest_config_server(cfg), "https://10.0.0.1:443");
  kcr_rest_config_unref(cfg);

  /* 4. In-cluster broken (no token): falls back to ~/.kube/config. */
  o.sa_dir = home;
  kcr_log_set_level(KCR_LOG_ERROR);
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_source(cfg), homecfg);
  kcr_rest_config_unref(cfg);
  freeenv(env);

  /* 5. ... and with no kubeconfig either, the in-cluster error is the one shown. */
  env = mkenv("KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443",
              "HOME=/nonexistent", NULL);
  o.env = env;
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "in-cluster config"));
  kcr_log_set_level(KCR_LOG_INFO);
  freeenv(env);

  /* 6. Outside a cluster, no KUBECONFIG: ~/.kube/config. */
  env = mkenv(h, NULL);
  o.env = env;
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), 0);
  assert_string_equal(kcr_rest_config_server(cfg), "https://home.example.com");
  kcr_rest_config_unref(cfg);
  freeenv(env);

  /* 7. Nothing anywhere. */
  env = mkenv("HOME=/nonexistent", NULL);
  o.env = env;
  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "no configuration found"));
  assert_null(cfg);
  freeenv(env);
  env = mkenv("KUBECONFIG=/nonexistent/a:/nonexistent/b", NULL);
  o.env = env;
  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_config_load(&o, &cfg, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "none of the files in KUBECONFIG"));
  freeenv(env);

  free(h);
  free(homecfg);
  free(kube);
  rm_tmpdir(home);
  rm_tmpdir(sa);
}

/* ---- allocation failures ---- */

static void test_config_alloc_failure_loop(void **state) {
  kcr_rest_config_t *cfg = NULL;
  kcr_credentials cr = {0};
  char **env = mkenv("KUBECONFIG=" DATA "/merge-a.yaml:" DATA "/merge-b.yaml", NULL);
  char *sa = make_sa_dir("tok", "ns");
  char **inenv = mkenv("KUBERNETES_SERVICE_HOST=::1", "KUBERNETES_SERVICE_PORT=443", NULL);
  kcr_config_options o = {0};
  (void)state;

  KCR_TEST_ALLOC_LOOP(kcr_rest_config_from_kubeconfig(DATA "/basic.yaml", NULL, NULL, &cfg, NULL),
                      (kcr_rest_config_unref(cfg), cfg = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_rest_config_from_kubeconfig(DATA "/basic.yaml", "data", NULL, &cfg, NULL),
                      (kcr_rest_config_unref(cfg), cfg = NULL));
  o.env = env;
  KCR_TEST_ALLOC_LOOP(kcr_rest_config_load(&o, &cfg, NULL),
                      (kcr_rest_config_unref(cfg), cfg = NULL));
  o.env = inenv;
  o.sa_dir = sa;
  KCR_TEST_ALLOC_LOOP(kcr_rest_config_load(&o, &cfg, NULL),
                      (kcr_rest_config_unref(cfg), cfg = NULL));

  assert_int_equal(kcr_rest_config_from_kubeconfig(DATA "/basic.yaml", "data", NULL, &cfg, NULL),
                   0);
  KCR_TEST_ALLOC_LOOP(kcr_rest_config_credentials(cfg, &cr, NULL), kcr_credentials_free(&cr));
  kcr_rest_config_unref(cfg);

  freeenv(env);
  freeenv(inenv);
  rm_tmpdir(sa);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_basic_kubeconfig_fields),
      cmocka_unit_test(test_config_data_fields_and_context_override),
      cmocka_unit_test(test_config_merge_first_file_wins),
      cmocka_unit_test(test_config_relative_paths_resolve_against_file),
      cmocka_unit_test(test_config_token_file_rotation),
      cmocka_unit_test(test_config_bad_yaml_reports_line),
      cmocka_unit_test(test_config_bad_base64_names_field),
      cmocka_unit_test(test_config_auth_provider_refused),
      cmocka_unit_test(test_config_missing_context),
      cmocka_unit_test(test_config_context_without_user_is_anonymous),
      cmocka_unit_test(test_config_deep_nesting_fails_fast),
      cmocka_unit_test(test_config_file_limits_and_shapes),
      cmocka_unit_test(test_config_validation_errors),
      cmocka_unit_test(test_config_insecure_is_warned_and_scheme_defaults),
      cmocka_unit_test(test_config_service_account_namespace),
      cmocka_unit_test(test_config_in_cluster),
      cmocka_unit_test(test_config_precedence),
      cmocka_unit_test(test_config_alloc_failure_loop),
  };
  return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
