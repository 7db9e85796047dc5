/* SPDX-License-Identifier: MIT */
/*
 * test_auth.c: delegated authentication and authorization (kcr/auth.h) against
 * a scripted API server that answers TokenReviews and SubjectAccessReviews:
 * the decisions, what the reviews carry, and the caches' lifetimes (a fake
 * clock), their bound and what they do not keep (errors).
 */
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "httpserver.h"
#include "kcr/auth.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "testutil.h"

static atomic_int n_tr, n_sar;
static char last_sar[4096];

/* The API server: tokens "alice*" and "bob" authenticate (alice with a group,
 * a uid and an extra), "fail" makes the TokenReview fail; alice may get
 * /metrics, bob may not, and a review for carol fails. */
static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  json_t *body = json_loadb(req->body, req->body_len, 0, NULL);
  static _Thread_local char out[1024];
  (void)data;
  resp->status = 200;
  if (strcmp(req->path, "/apis/authentication.k8s.io/v1/tokenreviews") == 0) {
    const char *tok = json_string_value(json_object_get(json_object_get(body, "spec"), "token"));
    atomic_fetch_add(&n_tr, 1);
    if (!tok || strcmp(tok, "fail") == 0) {
      resp->status = 500;
      resp->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":500}";
    } else if (strncmp(tok, "alice", 5) == 0) {
      resp->body = "{\"kind\":\"TokenReview\",\"status\":{\"authenticated\":true,\"user\":{"
                   "\"username\":\"alice\",\"uid\":\"u-1\",\"groups\":[\"g1\"],"
                   "\"extra\":{\"k\":[\"v\"]}}}}";
    } else if (strcmp(tok, "bob") == 0 || strcmp(tok, "carol") == 0) {
      snprintf(out, sizeof(out),
               "{\"kind\":\"TokenReview\",\"status\":{\"authenticated\":true,\"user\":{"
               "\"username\":\"%s\"}}}",
               tok);
      resp->body = out;
    } else {
      resp->body = "{\"kind\":\"TokenReview\",\"status\":{\"authenticated\":false,"
                   "\"error\":\"invalid bearer token\"}}";
    }
  } else if (strcmp(req->path, "/apis/authorization.k8s.io/v1/subjectaccessreviews") == 0) {
    json_t *spec = json_object_get(body, "spec");
    const char *user = json_string_value(json_object_get(spec, "user"));
    json_t *nra = json_object_get(spec, "nonResourceAttributes");
    int allowed = user && strcmp(user, "alice") == 0 &&
                  strcmp(json_string_value(json_object_get(nra, "path")), "/metrics") == 0 &&
                  strcmp(json_string_value(json_object_get(nra, "verb")), "get") == 0;
    char *dump = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    atomic_fetch_add(&n_sar, 1);
    snprintf(last_sar, sizeof(last_sar), "%s", dump ? dump : "");
    free(dump);
    if (user && strcmp(user, "carol") == 0) {
      resp->status = 500;
      resp->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":500}";
    } else {
      resp->body = allowed ? "{\"status\":{\"allowed\":true}}"
                           : "{\"status\":{\"allowed\":false,\"reason\":\"no RBAC\"}}";
    }
  } else {
    resp->status = 404;
    resp->body = "{}";
  }
  json_decref(body);
}

typedef struct fixture {
  kcr_test_http_t *server;
  kcr_rest_config_t *config;
  kcr_client_t *client;
  kcr_clock_t *clock;
  kcr_auth_t *auth;
  char dir[64];
  char kubeconfig[128];
} fixture;

/* start_with: the scripted API server, a client and an authorizer with these
 * options (0 / NULL: the defaults). */
static fixture *start_with(size_t cache_size, double rate, kcr_metrics_registry_t *reg) {
  fixture *f = calloc(1, sizeof(*f));
  kcr_client_options co = {0};
  kcr_auth_options ao = {0};
  kcr_error_t err = {0};
  kcr_time_t wall = {1700000000, 0};
  snprintf(f->dir, sizeof(f->dir), "/tmp/kcr-test-auth-XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  assert_int_equal(kcr_test_http_start(handler, NULL, &f->server), 0);
  assert_int_equal(kcr_test_kubeconfig(f->dir, kcr_test_http_port(f->server), "operator-token",
                                       f->kubeconfig, sizeof(f->kubeconfig)),
                   0);
  assert_int_equal(kcr_rest_config_from_kubeconfig(f->kubeconfig, NULL, NULL, &f->config, &err), 0);
  co.config = f->config;
  assert_int_equal(kcr_client_create(&co, &f->client, &err), 0);
  assert_int_equal(kcr_fake_clock_create(1000 * KCR_NSEC_PER_SEC, wall, &f->clock, NULL), 0);
  ao.client = f->client;
  ao.clock = f->clock;
  ao.cache_size = cache_size;
  ao.max_reviews_per_second = rate;
  ao.metrics = reg;
  assert_int_equal(kcr_auth_create(&ao, &f->auth, &err), 0);
  atomic_store(&n_tr, 0);
  atomic_store(&n_sar, 0);
  return f;
}

static fixture *start(size_t cache_size) {
  return start_with(cache_size, 0, NULL);
}

static void stop(fixture *f) {
  kcr_auth_destroy(f->auth);
  kcr_client_destroy(f->client);
  kcr_rest_config_unref(f->config);
  kcr_test_http_stop(f->server);
  kcr_clock_destroy(f->clock);
  unlink(f->kubeconfig);
  rmdir(f->dir);
  free(f);
}

static int check(fixture *f, const char *token) {
  return kcr_auth_check(f->auth, token, "get", "/metrics");
}

static void test_auth_decisions_and_review_bodies(void **state) {
  fixture *f = start(0);
  kcr_auth_stats st;
  (void)state;
  assert_int_equal(check(f, NULL), 401);
  assert_int_equal(check(f, ""), 401);
  assert_int_equal(atomic_load(&n_tr), 0); /* no token: nothing to ask */
  assert_int_equal(check(f, "alice"), 200);
  /* The SubjectAccessReview names the user as the TokenReview returned it. */
  assert_string_equal(last_sar, "{\"extra\":{\"k\":[\"v\"]},\"groups\":[\"g1\"],"
                                "\"nonResourceAttributes\":{\"path\":\"/metrics\",\"verb\":"
                                "\"get\"},\"uid\":\"u-1\",\"user\":\"alice\"}");
  assert_int_equal(check(f, "bob"), 403);
  assert_int_equal(check(f, "mallory"), 401);
  /* Errors: a failed TokenReview is 401, a failed SubjectAccessReview 500. */
  assert_int_equal(check(f, "fail"), 401);
  assert_int_equal(check(f, "carol"), 500);
  /* Another path is another question. */
  assert_int_equal(kcr_auth_check(f->auth, "alice", "get", "/other"), 403);
  kcr_auth_get_stats(f->auth, &st);
  assert_int_equal(st.errors, 2);
  stop(f);
}

static void test_auth_caches(void **state) {
  fixture *f = start(0);
  kcr_auth_stats st;
  (void)state;
  /* A burst with one token: one review of each kind. */
  for (int i = 0; i < 1000; i++)
    assert_int_equal(check(f, "alice"), 200);
  assert_int_equal(atomic_load(&n_tr), 1);
  assert_int_equal(atomic_load(&n_sar), 1);
  kcr_auth_get_stats(f->auth, &st);
  assert_int_equal(st.token_reviews, 1);
  assert_int_equal(st.access_reviews, 1);
  assert_int_equal(st.authn_hits, 999);
  assert_int_equal(st.authz_hits, 999);

  /* Denials and unknown tokens are cached too. */
  assert_int_equal(check(f, "bob"), 403);
  assert_int_equal(check(f, "bob"), 403);
  assert_int_equal(check(f, "mallory"), 401);
  assert_int_equal(check(f, "mallory"), 401);
  assert_int_equal(atomic_load(&n_tr), 3);
  assert_int_equal(atomic_load(&n_sar), 2);

  /* Errors are not. */
  assert_int_equal(check(f, "fail"), 401);
  assert_int_equal(check(f, "fail"), 401);
  assert_int_equal(atomic_load(&n_tr), 5);
  assert_int_equal(check(f, "carol"), 500);
  assert_int_equal(check(f, "carol"), 500);
  assert_int_equal(atomic_load(&n_tr), 6); /* carol's TokenReview is cached */
  assert_int_equal(atomic_load(&n_sar), 4);

  /* 31 s: the deny (30 s) has expired, the allow (5 min) and the
   * authentications (1 min) have not. */
  kcr_fake_clock_step(f->clock, 31 * KCR_NSEC_PER_SEC);
  assert_int_equal(check(f, "bob"), 403);
  assert_int_equal(check(f, "alice"), 200);
  assert_int_equal(atomic_load(&n_tr), 6);
  assert_int_equal(atomic_load(&n_sar), 5);

  /* 61 s: the authentications have expired, alice's allow has not. */
  kcr_fake_clock_step(f->clock, 30 * KCR_NSEC_PER_SEC);
  assert_int_equal(check(f, "alice"), 200);
  assert_int_equal(atomic_load(&n_tr), 7);
  assert_int_equal(atomic_load(&n_sar), 5);

  /* 5 min later the allow has expired too. */
  kcr_fake_clock_step(f->clock, 300 * KCR_NSEC_PER_SEC);
  assert_int_equal(check(f, "alice"), 200);
  assert_int_equal(atomic_load(&n_tr), 8);
  assert_int_equal(atomic_load(&n_sar), 6);
  stop(f);
}

static void test_auth_cache_is_bounded(void **state) {
  fixture *f = start(4);
  char tok[32];
  (void)state;
  /* Ten tokens through a four-entry cache: each is reviewed once... */
  for (int i = 0; i < 10; i++) {
    snprintf(tok, sizeof(tok), "alice-%d", i);
    assert_int_equal(check(f, tok), 200);
  }
  assert_int_equal(atomic_load(&n_tr), 10);
  /* ...the last four are still cached, the first was replaced. */
  assert_int_equal(check(f, "alice-9"), 200);
  assert_int_equal(atomic_load(&n_tr), 10);
  assert_int_equal(check(f, "alice-0"), 200);
  assert_int_equal(atomic_load(&n_tr), 11);
  /* All ten are one identity: one authorization. */
  assert_int_equal(atomic_load(&n_sar), 1);
  stop(f);
}

/* kcr_auth_cached answers from the caches alone and never posts a review. */
static void test_auth_cached_only(void **state) {
  fixture *f = start(0);
  (void)state;
  assert_int_equal(kcr_auth_cached(f->auth, NULL, "get", "/metrics"), 401);
  assert_int_equal(kcr_auth_cached(f->auth, "alice", "get", "/metrics"), 0);
  assert_int_equal(kcr_auth_cached(f->auth, "bob", "get", "/metrics"), 0);
  assert_int_equal(atomic_load(&n_tr), 0);
  assert_int_equal(check(f, "alice"), 200);
  assert_int_equal(check(f, "bob"), 403);
  assert_int_equal(check(f, "mallory"), 401);
  assert_int_equal(kcr_auth_cached(f->auth, "alice", "get", "/metrics"), 200);
  assert_int_equal(kcr_auth_cached(f->auth, "bob", "get", "/metrics"), 403);
  assert_int_equal(kcr_auth_cached(f->auth, "mallory", "get", "/metrics"), 401);
  /* alice is known, her right to another path is not: a review is needed. */
  assert_int_equal(kcr_auth_cached(f->auth, "alice", "get", "/other"), 0);
  assert_int_equal(atomic_load(&n_tr), 3);
  assert_int_equal(atomic_load(&n_sar), 2);
  stop(f);
}

/* Issue 28, finding 4: a flood of distinct bogus tokens costs at most the
 * review rate; the rest are refused with 429 and no review, a cached token is
 * still answered, and the bucket refills with time. */
static void test_auth_review_rate(void **state) {
  kcr_metrics_registry_t *reg;
  fixture *f;
  char tok[32];
  int reviewed = 0, refused = 0;
  kcr_auth_stats st;
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&reg, NULL), 0);
  f = start_with(0, 5, reg);
  assert_int_equal(check(f, "alice"), 200); /* 2 reviews of the 5 */
  for (int i = 0; i < 100; i++) {
    int rc;
    snprintf(tok, sizeof(tok), "mallory-%d", i);
    rc = check(f, tok);
    assert_true(rc == 401 || rc == 429);
    reviewed += rc == 401;
    refused += rc == 429;
  }
  assert_int_equal(reviewed, 3);
  assert_int_equal(refused, 97);
  assert_int_equal(atomic_load(&n_tr), 4);
  assert_int_equal(check(f, "alice"), 200); /* cached: no review needed */
  kcr_auth_get_stats(f->auth, &st);
  assert_int_equal(st.refused, 97);
  assert_int_equal((int)kcr_metric_value(kcr_metric_withv(
                       kcr_metrics_find(reg, "kcr_auth_reviews_total"), "token", NULL)),
                   4);
  assert_int_equal((int)kcr_metric_value(kcr_metric_withv(
                       kcr_metrics_find(reg, "kcr_auth_reviews_total"), "access", NULL)),
                   1);
  assert_int_equal((int)kcr_metric_value(
                       kcr_metric_withv(kcr_metrics_find(reg, "kcr_auth_refused_total"), NULL)),
                   97);
  assert_int_equal((int)kcr_metric_value(kcr_metric_withv(
                       kcr_metrics_find(reg, "kcr_auth_cache_hits_total"), "authentication", NULL)),
                   1);
  /* 0.4 s later two more reviews may go; a second later the burst is back, no more. */
  kcr_fake_clock_step(f->clock, 400 * KCR_NSEC_PER_MSEC);
  reviewed = 0;
  for (int i = 100; i < 110; i++) {
    snprintf(tok, sizeof(tok), "mallory-%d", i);
    reviewed += check(f, tok) == 401;
  }
  assert_int_equal(reviewed, 2);
  kcr_fake_clock_step(f->clock, 10 * KCR_NSEC_PER_SEC);
  reviewed = 0;
  for (int i = 110; i < 130; i++) {
    snprintf(tok, sizeof(tok), "mallory-%d", i);
    reviewed += check(f, tok) == 401;
  }
  assert_int_equal(reviewed, 5);
  stop(f);
  kcr_metrics_registry_destroy(reg);
}

static void test_auth_create_errors(void **state) {
  kcr_auth_t *a = (kcr_auth_t *)1;
  kcr_auth_options o = {0};
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_auth_create(&o, &a, &err), KCR_EINVAL);
  assert_null(a);
  kcr_auth_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_auth_decisions_and_review_bodies),
      cmocka_unit_test(test_auth_caches),
      cmocka_unit_test(test_auth_cache_is_bounded),
      cmocka_unit_test(test_auth_cached_only),
      cmocka_unit_test(test_auth_review_rate),
      cmocka_unit_test(test_auth_create_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
