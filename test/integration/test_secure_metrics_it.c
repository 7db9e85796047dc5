/* SPDX-License-Identifier: MIT */
/*
 * test_secure_metrics_it.c: kcr_manager_serve with metrics_secure against the
 * real apiserver (RBAC on, service-account tokens signed). /metrics is HTTPS;
 * a ServiceAccount bound to a metrics-reader ClusterRole scrapes it with its
 * token (200), one without the binding gets 403, no token and a garbage token
 * 401; a burst of 1000 scrapes with one new token costs at most two reviews
 * (one TokenReview, one SubjectAccessReview), counted from the manager's own
 * rest_client_requests_total. A flood of distinct bogus tokens from 16
 * connections costs the API server at most the review rate (20 a second and
 * a burst of 20), counted by kcr and by the API server's own
 * apiserver_request_total, while the reader's cached scrapes are all answered.
 * A metrics extra handler (kcr_manager_add_metrics_extra_handler) is behind
 * the same authentication and authorization: 401 without a token, 403 for a
 * path the role does not grant, 200 for the reader on a granted path.
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* scrape_path GETs https://127.0.0.1:port<path> on handle c (reused: one
 * connection) with the token (NULL: no header); returns the status. */
static long scrape_path(CURL *c, int port, const char *path, const char *token, kcr_buf_t *body) {
  char url[256], auth[4096];
  struct curl_slist *h = NULL;
  long code = 0;
  snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, path);
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

/* scrape GETs /metrics (scrape_path). */
static long scrape(CURL *c, int port, const char *token, kcr_buf_t *body) {
  return scrape_path(c, port, "/metrics", token, body);
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
           "rules:\n- nonResourceURLs: [\"/metrics\", \"/debug/extra\"]\n  verbs: [\"get\"]\n---\n"
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

/* extra_calls: requests that reached on_extra (the metrics server's worker). */
static atomic_int extra_calls;

static void on_extra(void *data, const kcr_server_request *req, kcr_server_response *resp) {
  (void)data;
  atomic_fetch_add(&extra_calls, 1);
  resp->content_type = "text/plain";
  kcr_buf_appendf(&resp->body, "extra at %s", req->path);
}

/* start_secure makes a manager serving secure metrics on a port the kernel
 * picks (with the extra handlers /debug/extra and /debug/other when extra),
 * runs it on *th and returns the port. */
static int start_secure(runner_t *r, pthread_t *th, bool extra) {
  kcr_manager_options mo;
  kcr_manager_serving_options so;
  kcr_error_t err;
  int port = 0;
  memset(&mo, 0, sizeof(mo));
  mo.config = config;
  mo.no_signal_handlers = true;
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_create(&mo, &r->m, &err), 0);
  memset(&so, 0, sizeof(so));
  so.metrics_bind_address = "127.0.0.1:0";
  so.metrics_secure = true;
  assert_int_equal(kcr_manager_serve(r->m, &so, &err), 0);
  if (extra) {
    assert_int_equal(
        kcr_manager_add_metrics_extra_handler(r->m, "/debug/extra", on_extra, NULL, &err), 0);
    assert_int_equal(
        kcr_manager_add_metrics_extra_handler(r->m, "/debug/other", on_extra, NULL, &err), 0);
  }
  pthread_create(th, NULL, run_main, r);
  for (int i = 0; i < 300 && !port; i++) {
    port = kcr_manager_metrics_port(r->m);
    if (!port)
      sleep_ms(50);
  }
  assert_true(port > 0);
  return port;
}

/* stop_secure stops and destroys what start_secure made. */
static void stop_secure(runner_t *r, pthread_t th) {
  kcr_manager_request_stop(r->m);
  pthread_join(th, NULL);
  assert_int_equal(r->rc, 0);
  kcr_manager_destroy(r->m);
}

static void test_secure_metrics_authn_authz_and_cache(void **state) {
  kcr_buf_t body;
  runner_t r;
  pthread_t th;
  CURL *c;
  char *reader, *reader2, *nobody;
  double before, after;
  int port;
  (void)state;

  reader = token_for("reader");
  reader2 = token_for("reader");
  nobody = token_for("nobody");
  port = start_secure(&r, &th, false);
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
  stop_secure(&r, th);
  free(reader);
  free(reader2);
  free(nobody);
}

/* metric_value: the value of the first sample line of body that starts with
 * prefix (a name with its labels, "kcr_auth_refused_total" or
 * "kcr_auth_reviews_total{kind=\"token\"}"); 0 when there is none. */
static double metric_value(const char *body, const char *prefix) {
  size_t n = strlen(prefix);
  for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, prefix, n) == 0 && (p[n] == ' ' || p[n] == '{'))
      return strtod(strchr(p + n, ' ') + 1, NULL);
  return 0;
}

/* server_tokenreviews sums the API server's apiserver_request_total samples
 * for tokenreviews: what it was asked, whoever asked. */
static double server_tokenreviews(void) {
  const char *argv[] = {"get", "--raw", "/metrics", NULL};
  char *out = kubectl(argv);
  double sum = 0;
  assert_non_null(out);
  for (char *p = out; p && *p;) {
    char *end = strchr(p, '\n');
    if (end)
      *end = '\0';
    if (strncmp(p, "apiserver_request_total{", 24) == 0 && strstr(p, "resource=\"tokenreviews\""))
      sum += strtod(strrchr(p, ' ') + 1, NULL);
    p = end ? end + 1 : NULL;
  }
  free(out);
  return sum;
}

typedef struct flooder {
  int port, id;
  atomic_int *stop;
  long sent, unauthorized, refused, other;
} flooder_t;

/* flood scrapes with a new bogus token each time, on one connection. */
static void *flood(void *arg) {
  flooder_t *f = arg;
  CURL *c = curl_easy_init();
  kcr_buf_t body;
  kcr_buf_init(&body, 1 << 20);
  while (!atomic_load(f->stop)) {
    char token[64];
    long code;
    snprintf(token, sizeof(token), "bogus-%d-%ld", f->id, f->sent);
    code = scrape(c, f->port, token, &body);
    f->sent++;
    if (code == 401)
      f->unauthorized++;
    else if (code == 429)
      f->refused++;
    else
      f->other++;
  }
  curl_easy_cleanup(c);
  kcr_buf_free(&body);
  return NULL;
}

/* Issue 28, finding 4 against the real API server. */
static void test_secure_metrics_token_flood(void **state) {
  enum { FLOODERS = 16 };
  kcr_buf_t body;
  runner_t r;
  pthread_t th, fl[FLOODERS];
  flooder_t f[FLOODERS];
  atomic_int stop = 0;
  CURL *c;
  char *reader;
  double kcr0, kcr1, srv0, srv1, refused, secs;
  long sent = 0, unauth = 0, refused429 = 0, other = 0, legit = 0, legit_ok = 0;
  struct timespec t0, t1;
  int port;
  (void)state;

  reader = token_for("reader");
  port = start_secure(&r, &th, false);
  kcr_buf_init(&body, 8 << 20);
  c = curl_easy_init();
  assert_int_equal(scrape(c, port, reader, &body), 200); /* reviewed once, cached after */
  /* Let the bucket fill again after the reader's two reviews. */
  sleep_ms(1500);
  assert_int_equal(scrape(c, port, reader, &body), 200);
  kcr0 = metric_value(kcr_buf_cstr(&body), "kcr_auth_reviews_total{kind=\"token\"}");
  srv0 = server_tokenreviews();

  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < FLOODERS; i++) {
    f[i] = (flooder_t){.port = port, .id = i, .stop = &stop};
    pthread_create(&fl[i], NULL, flood, &f[i]);
  }
  /* The reader scrapes every 100 ms meanwhile, as a Prometheus would (faster). */
  for (int i = 0; i < 50; i++) {
    legit++;
    if (scrape(c, port, reader, &body) == 200)
      legit_ok++;
    sleep_ms(100);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < FLOODERS; i++) {
    pthread_join(fl[i], NULL);
    sent += f[i].sent;
    unauth += f[i].unauthorized;
    refused429 += f[i].refused;
    other += f[i].other;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  assert_int_equal(scrape(c, port, reader, &body), 200);
  kcr1 = metric_value(kcr_buf_cstr(&body), "kcr_auth_reviews_total{kind=\"token\"}");
  refused = metric_value(kcr_buf_cstr(&body), "kcr_auth_refused_total");
  srv1 = server_tokenreviews();
  print_message("token flood: %ld bogus scrapes in %.1f s (%ld 401, %ld 429, %ld other); "
                "TokenReviews %.0f by kcr's count (%.1f/s), %.0f by the API server's; "
                "kcr_auth_refused_total %.0f; reader %ld/%ld answered\n",
                sent, secs, unauth, refused429, other, kcr1 - kcr0, (kcr1 - kcr0) / secs,
                srv1 - srv0, refused, legit_ok, legit);
  /* The reader's cached token is never refused, whatever the flood does. */
  assert_int_equal(legit_ok, legit);
  /* A bounded rate: the default 20 a second, and the burst of 20. */
  assert_true(kcr1 - kcr0 <= 20.0 * secs + 20.0 + 2.0);
  /* Every review kcr counted reached the API server (others may add theirs). */
  assert_true(srv1 - srv0 >= kcr1 - kcr0);
  /* The flood asked for more than the rate, and what had no review was 429. */
  assert_true(refused429 > 0);
  assert_true(refused > 0);
  assert_int_equal(other, 0);

  curl_easy_cleanup(c);
  kcr_buf_free(&body);
  stop_secure(&r, th);
  free(reader);
}

static void test_secure_metrics_extra_handler(void **state) {
  kcr_buf_t body;
  runner_t r;
  pthread_t th;
  CURL *c;
  char *reader, *nobody;
  int port;
  (void)state;
  reader = token_for("reader");
  nobody = token_for("nobody");
  atomic_store(&extra_calls, 0);
  port = start_secure(&r, &th, true);
  kcr_buf_init(&body, 8 << 20);
  c = curl_easy_init();

  assert_int_equal(scrape_path(c, port, "/debug/extra", NULL, &body), 401);
  assert_int_equal(scrape_path(c, port, "/debug/extra", "not-a-token", &body), 401);
  assert_int_equal(scrape_path(c, port, "/debug/extra", nobody, &body), 403);
  /* the reader's role grants /metrics and /debug/extra, not /debug/other */
  assert_int_equal(scrape_path(c, port, "/debug/other", reader, &body), 403);
  assert_int_equal(atomic_load(&extra_calls), 0); /* none reached the handler */
  assert_int_equal(scrape_path(c, port, "/debug/extra", reader, &body), 200);
  assert_string_equal(kcr_buf_cstr(&body), "extra at /debug/extra");
  assert_int_equal(scrape_path(c, port, "/debug/extra", reader, &body), 200); /* cached */
  assert_int_equal(atomic_load(&extra_calls), 2);
  assert_int_equal(scrape(c, port, reader, &body), 200);
  assert_non_null(strstr(kcr_buf_cstr(&body), "rest_client_requests_total"));

  curl_easy_cleanup(c);
  kcr_buf_free(&body);
  stop_secure(&r, th);
  free(reader);
  free(nobody);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_secure_metrics_authn_authz_and_cache),
      cmocka_unit_test(test_secure_metrics_token_flood),
      cmocka_unit_test(test_secure_metrics_extra_handler),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
