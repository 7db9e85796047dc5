/* SPDX-License-Identifier: MIT */
/*
 * test_secure_metrics_it.c: kcr_manager_serve with metrics_secure against the
 * real apiserver (RBAC on, service-account tokens signed). /metrics is HTTPS;
 * a ServiceAccount bound to a metrics-reader ClusterRole scrapes it with its
 * token (200), one without the binding gets 403, no token and a garbage token
 * 401; a burst of 1000 scrapes with one new token costs at most two reviews
 * (one TokenReview, one SubjectAccessReview), counted from the manager's own
 * rest_client_requests_total.
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/kcr.h"
#include "kcr_testenv.h"

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static char ns[64], role[96];

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static size_t on_body(char *p, size_t size, size_t n, void *data) {
  kcr_buf_t *b = data;
  return kcr_buf_append(b, p, size * n) == 0 ? size * n : 0;
}

/* scrape GETs https://127.0.0.1:port/metrics on handle c (reused: one
 * connection) with the token (NULL: no header); returns the status. */
static long scrape(CURL *c, int port, const char *token, kcr_buf_t *body) {
  char url[128], auth[4096];
  struct curl_slist *h = NULL;
  long code = 0;
  snprintf(url, sizeof(url), "https://127.0.0.1:%d/metrics", port);
  kcr_buf_reset(body);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
  /* The in-memory certificate is self-signed: the test checks serving, not
   * a CA (the unit tests check the certificate's names). */
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
  if (token) {
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    h = curl_slist_append(NULL, auth);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
  curl_slist_free_all(h);
  return code;
}

/* posts sums rest_client_requests_total{method="POST"} in a metrics body: the
 * reviews the manager posted (it creates nothing else here). */
static double posts(const char *body) {
  double sum = 0;
  for (const char *p = strstr(body, "\nrest_client_requests_total{"); p;
       p = strstr(p + 1, "\nrest_client_requests_total{")) {
    const char *end = strchr(p + 1, '\n');
    const char *brace = strchr(p, '}');
    if (!brace || (end && brace > end))
      continue;
    if (strstr(p, "method=\"POST\"") && strstr(p, "method=\"POST\"") < brace)
      sum += strtod(brace + 1, NULL);
  }
  return sum;
}

static char *kubectl(const char *const argv[]) {
  char *out = NULL;
  if (kcr_testenv_kubectl(env, argv, &out) != 0) {
    free(out);
    return NULL;
  }
  return out;
}

static char *token_for(const char *sa) {
  const char *argv[] = {"create", "token", sa, "-n", ns, "--duration=1h", NULL};
  char *t = kubectl(argv);
  size_t n;
  assert_non_null(t);
  n = strlen(t);
  while (n && (t[n - 1] == '\n' || t[n - 1] == '\r'))
    t[--n] = '\0';
  assert_true(n > 20);
  return t;
}

static int group_setup(void **state) {
  char yaml[2048];
  const char *apply[] = {"apply", "-f", "-", NULL};
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (kcr_testenv_start(&env) != 0)
    return -1;
  snprintf(ns, sizeof(ns), "kcr-secure-%d", (int)getpid());
  snprintf(role, sizeof(role), "kcr-it-metrics-reader-%d", (int)getpid());
  /* kubebuilder's metrics-reader role, a ServiceAccount bound to it and one not. */
  snprintf(yaml, sizeof(yaml),
           "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n---\n"
           "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: reader\n  namespace: %s\n"
           "---\n"
           "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: nobody\n  namespace: %s\n"
           "---\n"
           "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: %s\n"
           "rules:\n- nonResourceURLs: [\"/metrics\"]\n  verbs: [\"get\"]\n---\n"
           "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n"
           "  name: %s\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n"
           "  name: %s\nsubjects:\n- kind: ServiceAccount\n  name: reader\n  namespace: %s\n",
           ns, ns, ns, role, role, role, ns);
  if (kcr_testenv_kubectl_input(env, apply, yaml, NULL) != 0)
    return -1;
  /* RBAC reaches the authorizer through an informer: wait until it allows. */
  for (int i = 0; i < 100; i++) {
    char as[160], *out;
    const char *can[] = {"auth", "can-i", "get", "/metrics", "--as", as, NULL};
    snprintf(as, sizeof(as), "system:serviceaccount:%s:reader", ns);
    out = kubectl(can);
    if (out && strncmp(out, "yes", 3) == 0) {
      free(out);
      break;
    }
    free(out);
    sleep_ms(100);
  }
  return kcr_rest_config_from_kubeconfig(kcr_testenv_kubeconfig(env), NULL, NULL, &config, NULL);
}

static int group_teardown(void **state) {
  const char *del_ns[] = {"delete", "namespace", ns, "--wait=false", NULL};
  const char *del_crb[] = {"delete", "clusterrolebinding", role, NULL};
  const char *del_cr[] = {"delete", "clusterrole", role, NULL};
  (void)state;
  free(kubectl(del_crb));
  free(kubectl(del_cr));
  free(kubectl(del_ns));
  kcr_rest_config_unref(config);
  kcr_testenv_stop(env);
  curl_global_cleanup();
  return 0;
}

typedef struct runner {
  kcr_manager_t *m;
  int rc;
  kcr_error_t err;
} runner_t;

static void *run_main(void *arg) {
  runner_t *r = arg;
  kcr_error_clear(&r->err);
  r->rc = kcr_manager_run(r->m, &r->err);
  return NULL;
}

static void test_secure_metrics_authn_authz_and_cache(void **state) {
  kcr_manager_options mo;
  kcr_manager_serving_options so;
  kcr_error_t err;
  kcr_buf_t body;
  runner_t r;
  pthread_t th;
  CURL *c;
  char *reader, *reader2, *nobody;
  double before, after;
  int port = 0;
  (void)state;

  reader = token_for("reader");
  reader2 = token_for("reader");
  nobody = token_for("nobody");
  memset(&mo, 0, sizeof(mo));
  mo.config = config;
  mo.no_signal_handlers = true;
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_create(&mo, &r.m, &err), 0);
  memset(&so, 0, sizeof(so));
  so.metrics_bind_address = "127.0.0.1:0";
  so.metrics_secure = true;
  assert_int_equal(kcr_manager_serve(r.m, &so, &err), 0);
  pthread_create(&th, NULL, run_main, &r);
  for (int i = 0; i < 300 && !port; i++) {
    port = kcr_manager_metrics_port(r.m);
    if (!port)
      sleep_ms(50);
  }
  assert_true(port > 0);
  kcr_buf_init(&body, 8 << 20);
  c = curl_easy_init();

  assert_int_equal(scrape(c, port, NULL, &body), 401);
  assert_int_equal(scrape(c, port, "not-a-token", &body), 401);
  assert_int_equal(scrape(c, port, nobody, &body), 403);
  assert_int_equal(scrape(c, port, reader, &body), 200);
  assert_non_null(strstr(kcr_buf_cstr(&body), "rest_client_requests_total"));
  assert_non_null(strstr(kcr_buf_cstr(&body), "certwatcher_read_certificate_total"));
  /* Cached now: this scrape posts nothing, and shows the count so far. */
  assert_int_equal(scrape(c, port, reader, &body), 200);
  before = posts(kcr_buf_cstr(&body));
  assert_true(before >= 4); /* nobody: 2, reader: 2, not-a-token: 1 */

  /* A burst with a token never seen: one TokenReview, one SubjectAccessReview
   * (the token's credential id makes it a new identity to authorize). */
  for (int i = 0; i < 1000; i++)
    assert_int_equal(scrape(c, port, reader2, &body), 200);
  assert_int_equal(scrape(c, port, reader, &body), 200);
  after = posts(kcr_buf_cstr(&body));
  print_message("reviews for 1000 scrapes: %.0f (before %.0f, after %.0f)\n", after - before,
                before, after);
  assert_true(after - before >= 1);
  assert_true(after - before <= 2);
  /* Still refused after the burst (denials are cached, not forgotten). */
  assert_int_equal(scrape(c, port, nobody, &body), 403);
  assert_int_equal(scrape(c, port, NULL, &body), 401);

  curl_easy_cleanup(c);
  kcr_buf_free(&body);
  kcr_manager_request_stop(r.m);
  pthread_join(th, NULL);
  assert_int_equal(r.rc, 0);
  kcr_manager_destroy(r.m);
  free(reader);
  free(reader2);
  free(nobody);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_secure_metrics_authn_authz_and_cache),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
