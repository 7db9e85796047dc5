/* SPDX-License-Identifier: MIT */
/*
 * test_config_tls_reload.c: client certificate, key and CA files re-read as
 * client-go's certificate and CA rotation do: new bytes after the period (a
 * fake clock), at once after a 401, never for -data, a rotation caught between
 * its two files (certificate without its key) kept out until it is whole, a
 * broken CA file kept out, and the in-cluster ca.crt. No network: the
 * snapshots of kcr_rest_config_credentials are what the client hands to
 * libcurl.
 */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config_internal.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "server/server_internal.h"
#include "testutil.h"

#define PERIOD_NS (60 * KCR_NSEC_PER_SEC)

typedef struct pem {
  char *cert;
  char *key;
} pem;

/* make_pem makes a key and a self-signed certificate with CN cn, as PEM. */
static pem make_pem(const char *cn) {
  EVP_PKEY *key = NULL;
  X509 *cert = NULL;
  BIO *b;
  BUF_MEM *m;
  pem p;
  assert_int_equal(kcr__tls_self_signed(cn, NULL, 0, &key, &cert), 0);
  b = BIO_new(BIO_s_mem());
  assert_int_equal(PEM_write_bio_X509(b, cert), 1);
  BIO_get_mem_ptr(b, &m);
  p.cert = strndup(m->data, m->length);
  BIO_free(b);
  b = BIO_new(BIO_s_mem());
  assert_int_equal(PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL), 1);
  BIO_get_mem_ptr(b, &m);
  p.key = strndup(m->data, m->length);
  BIO_free(b);
  EVP_PKEY_free(key);
  X509_free(cert);
  assert_non_null(p.cert);
  assert_non_null(p.key);
  return p;
}

static void free_pem(pem *p) {
  free(p->cert);
  free(p->key);
}

static char dir[64];

/* put writes text into dir/name through a rename, as a Secret update does. */
static void put(const char *name, const char *text) {
  char tmp[128], path[128];
  FILE *f;
  snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  f = fopen(tmp, "w");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(rename(tmp, path), 0);
}

static void cleanup(void) {
  static const char *const names[] = {"kubeconfig", "tls.crt", "tls.key",
                                      "ca.crt",     "token",   "namespace"};
  char path[128];
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

/* load writes a kubeconfig with user_yaml and cluster_yaml (lines indented
 * four spaces) and loads it with a fake clock. */
static kcr_rest_config_t *load(const char *cluster_yaml, const char *user_yaml,
                               kcr_clock_t **clock) {
  char text[2048];
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err;
  snprintf(text, sizeof(text),
           "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
           "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n%s"
           "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
           "users:\n- name: u\n  user:\n%s",
           cluster_yaml, user_yaml);
  put("kubeconfig", text);
  snprintf(text, sizeof(text), "%s/kubeconfig", dir);
  kcr_error_clear(&err);
  if (kcr_rest_config_from_kubeconfig(text, NULL, NULL, &cfg, &err) != 0)
    fail_msg("load: %s", err.message);
  assert_int_equal(
      kcr_fake_clock_create(1000 * KCR_NSEC_PER_SEC, (kcr_time_t){1700000000, 0}, clock, NULL), 0);
  kcr__rest_config_set_clock(cfg, *clock);
  return cfg;
}

/* load_files writes p's certificate and key as tls.crt and tls.key and loads a
 * kubeconfig naming them. */
static kcr_rest_config_t *load_files(const pem *p, kcr_clock_t **clock) {
  char user[512];
  put("tls.crt", p->cert);
  put("tls.key", p->key);
  snprintf(user, sizeof(user), "    client-certificate: %s/tls.crt\n    client-key: %s/tls.key\n",
           dir, dir);
  return load("", user, clock);
}

/* snap takes a snapshot; the caller frees it. */
static kcr_credentials snap(kcr_rest_config_t *cfg) {
  kcr_credentials c;
  kcr_error_t err;
  kcr_error_clear(&err);
  if (kcr_rest_config_credentials(cfg, &c, &err) != 0)
    fail_msg("credentials: %s", err.message);
  return c;
}

static void expect_cert(kcr_rest_config_t *cfg, const pem *want, uint64_t *gen) {
  kcr_credentials c = snap(cfg);
  assert_non_null(c.client_cert_pem);
  assert_string_equal((const char *)c.client_cert_pem, want->cert);
  assert_string_equal((const char *)c.client_key_pem, want->key);
  if (gen)
    *gen = c.generation;
  kcr_credentials_free(&c);
}

static void expect_ca(kcr_rest_config_t *cfg, const char *want, uint64_t *gen) {
  kcr_credentials c = snap(cfg);
  assert_non_null(c.ca_pem);
  assert_int_equal(c.ca_len, strlen(want));
  assert_string_equal((const char *)c.ca_pem, want);
  if (gen)
    *gen = c.generation;
  kcr_credentials_free(&c);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/kcr-test-tlsreload-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  cleanup();
  return 0;
}

/* New certificate and key files are taken after the period, with a new
 * generation; before it the snapshot stays, and stays fresh. */
static void test_tls_cert_files_reloaded(void **state) {
  pem a = make_pem("alice"), b = make_pem("bob");
  kcr_clock_t *clock;
  kcr_rest_config_t *cfg;
  uint64_t g1, g2;
  (void)state;
  cfg = load_files(&a, &clock);
  expect_cert(cfg, &a, &g1);
  put("tls.crt", b.cert);
  put("tls.key", b.key);
  kcr_fake_clock_step(clock, PERIOD_NS - KCR_NSEC_PER_SEC);
  assert_true(kcr_rest_config_credentials_fresh(cfg, g1));
  expect_cert(cfg, &a, NULL);
  kcr_fake_clock_step(clock, KCR_NSEC_PER_SEC);
  assert_false(kcr_rest_config_credentials_fresh(cfg, g1));
  expect_cert(cfg, &b, &g2);
  assert_true(g2 != g1);
  assert_true(kcr_rest_config_credentials_fresh(cfg, g2));
  /* the same bytes read again: the generation stays */
  kcr_fake_clock_step(clock, PERIOD_NS);
  expect_cert(cfg, &b, &g1);
  assert_true(g1 == g2);
  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
  free_pem(&a);
  free_pem(&b);
}

/* A rotation caught between its two files (the new certificate, the old key)
 * is kept out; the whole pair is taken once the key follows. A missing file
 * keeps the old pair too. */
static void test_tls_torn_rotation_kept_out(void **state) {
  pem a = make_pem("alice"), b = make_pem("bob");
  kcr_clock_t *clock;
  kcr_rest_config_t *cfg;
  char path[128];
  uint64_t g1, g2;
  (void)state;
  cfg = load_files(&a, &clock);
  expect_cert(cfg, &a, &g1);
  put("tls.crt", b.cert); /* the key is still a's */
  kcr_fake_clock_step(clock, PERIOD_NS);
  expect_cert(cfg, &a, &g2);
  assert_true(g1 == g2);
  put("tls.key", b.key);
  kcr_fake_clock_step(clock, KCR_NSEC_PER_SEC); /* a failed read is retried a second later */
  expect_cert(cfg, &b, &g2);
  assert_true(g1 != g2);
  snprintf(path, sizeof(path), "%s/tls.key", dir);
  assert_int_equal(unlink(path), 0);
  kcr_fake_clock_step(clock, PERIOD_NS);
  expect_cert(cfg, &b, NULL);
  kcr_fake_clock_step(clock, 10 * KCR_NSEC_PER_SEC);
  expect_cert(cfg, &b, NULL);
  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
  free_pem(&a);
  free_pem(&b);
}

/* A 401 re-reads the files at once, without waiting for the period. */
static void test_tls_reread_after_401(void **state) {
  pem a = make_pem("alice"), b = make_pem("bob");
  kcr_clock_t *clock;
  kcr_rest_config_t *cfg;
  uint64_t g1;
  (void)state;
  cfg = load_files(&a, &clock);
  kcr_fake_clock_step(clock, 2 * KCR_NSEC_PER_SEC);
  expect_cert(cfg, &a, &g1);
  put("tls.crt", b.cert);
  put("tls.key", b.key);
  kcr_rest_config_credentials_rejected(cfg, g1);
  assert_false(kcr_rest_config_credentials_fresh(cfg, g1));
  expect_cert(cfg, &b, NULL);
  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
  free_pem(&a);
  free_pem(&b);
}

/* -data is never re-read (client-go reloads only what came from files), and a
 * certificate from a file with its key as -data is not either. */
static void test_tls_data_not_reloaded(void **state) {
  pem a = make_pem("alice"), b = make_pem("bob");
  kcr_clock_t *clock;
  kcr_rest_config_t *cfg;
  char *user;
  char *key64 = NULL;
  uint64_t g1, g2;
  (void)state;
  put("tls.crt", a.cert);
  {
    BIO *b64 = BIO_new(BIO_f_base64()), *mem = BIO_new(BIO_s_mem());
    BUF_MEM *m;
    BIO_set_flags(b64, BIO_FLAGS_BASE64_NO_NL);
    b64 = BIO_push(b64, mem);
    BIO_write(b64, a.key, (int)strlen(a.key));
    (void)BIO_flush(b64);
    BIO_get_mem_ptr(mem, &m);
    key64 = strndup(m->data, m->length);
    BIO_free_all(b64);
  }
  assert_true(asprintf(&user, "    client-certificate: %s/tls.crt\n    client-key-data: %s\n", dir,
                       key64) > 0);
  cfg = load("", user, &clock);
  expect_cert(cfg, &a, &g1);
  put("tls.crt", b.cert);
  kcr_fake_clock_step(clock, 3 * PERIOD_NS);
  expect_cert(cfg, &a, &g2);
  assert_true(g1 == g2);
  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
  free(user);
  free(key64);
  free_pem(&a);
  free_pem(&b);
}

/* A certificate-authority file is re-read too; an empty or broken one keeps
 * the CA in use (client-go: "CA file empty, skipping"). */
static void test_tls_ca_file_reloaded(void **state) {
  pem a = make_pem("ca-one"), b = make_pem("ca-two");
  kcr_clock_t *clock;
  kcr_rest_config_t *cfg;
  char cluster[256];
  size_t len;
  uint64_t g1, g2;
  (void)state;
  put("ca.crt", a.cert);
  snprintf(cluster, sizeof(cluster), "    certificate-authority: %s/ca.crt\n", dir);
  cfg = load(cluster, "    token: t\n", &clock);
  expect_ca(cfg, a.cert, &g1);
  assert_string_equal((const char *)kcr_rest_config_ca(cfg, &len), a.cert);
  put("ca.crt", b.cert);
  kcr_fake_clock_step(clock, PERIOD_NS);
  expect_ca(cfg, b.cert, &g2);
  assert_true(g1 != g2);
  /* the accessor keeps what was read at load */
  assert_string_equal((const char *)kcr_rest_config_ca(cfg, &len), a.cert);
  put("ca.crt", "");
  kcr_fake_clock_step(clock, PERIOD_NS);
  expect_ca(cfg, b.cert, NULL);
  put("ca.crt", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
  kcr_fake_clock_step(clock, 10 * KCR_NSEC_PER_SEC);
  expect_ca(cfg, b.cert, &g1);
  assert_true(g1 == g2);
  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
  free_pem(&a);
  free_pem(&b);
}

/* certificate-authority-data is in the snapshot and never changes. */
static void test_tls_ca_data_in_snapshot(void **state) {
  kcr_clock_t *clock;
  kcr_rest_config_t *cfg;
  kcr_credentials c;
  (void)state;
  /* "hello" in base64: the config layer does not parse the CA at load */
  cfg = load("    certificate-authority-data: aGVsbG8=\n", "    token: t\n", &clock);
  expect_ca(cfg, "hello", NULL);
  kcr_fake_clock_step(clock, 2 * PERIOD_NS);
  expect_ca(cfg, "hello", NULL);
  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
  /* no CA: NULL, the system roots */
  cfg = load("", "    token: t\n", &clock);
  c = snap(cfg);
  assert_null(c.ca_pem);
  assert_int_equal(c.ca_len, 0);
  kcr_credentials_free(&c);
  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
}

/* In-cluster, ca.crt is the CA file rest.InClusterConfig names: re-read. */
static void test_tls_in_cluster_ca_reloaded(void **state) {
  pem a = make_pem("cluster-ca"), b = make_pem("cluster-ca-next");
  const char *env[] = {"KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=443", NULL};
  kcr_config_options o;
  kcr_rest_config_t *cfg = NULL;
  kcr_clock_t *clock;
  kcr_error_t err;
  (void)state;
  put("token", "tok");
  put("ca.crt", a.cert);
  memset(&o, 0, sizeof(o));
  o.env = (char *const *)env; /* only read */
  o.sa_dir = dir;
  kcr_error_clear(&err);
  if (kcr_rest_config_in_cluster(&o, &cfg, &err) != 0)
    fail_msg("in-cluster: %s", err.message);
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1700000000, 0}, &clock, NULL), 0);
  kcr__rest_config_set_clock(cfg, clock);
  expect_ca(cfg, a.cert, NULL);
  put("ca.crt", b.cert);
  kcr_fake_clock_step(clock, PERIOD_NS);
  expect_ca(cfg, b.cert, NULL);
  kcr_rest_config_unref(cfg);
  kcr_clock_destroy(clock);
  free_pem(&a);
  free_pem(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_tls_cert_files_reloaded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tls_torn_rotation_kept_out, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tls_reread_after_401, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tls_data_not_reloaded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tls_ca_file_reloaded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tls_ca_data_in_snapshot, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tls_in_cluster_ca_reloaded, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
