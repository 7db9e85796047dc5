/* SPDX-License-Identifier: MIT */
/*
 * test_client.c: the REST client against a scripted HTTP server on loopback: what
 * goes on the wire, Status errors, Retry-After retries, which failures are retried
 * and which are not, body limits, timeouts, cancellation, connection reuse and
 * concurrency.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client_internal.h"
#include "httpserver.h"
#include "kcr/apierror.h"
#include "kcr/client.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "kcr/log.h"
#include "testutil.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};

static atomic_int flaky_count;
static atomic_int close_count;

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  const char *p = req->path;
  (void)data;
  if (strcmp(p, "/api/v1/namespaces/default/configmaps/ok") == 0) {
    resp->body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"ok\"}}";
  } else if (strncmp(p, "/api/v1/namespaces/default/configmaps/echo", 42) == 0) {
    /* Answer with what was asked, so tests can check the wire. */
    static __thread char out[40000];
    json_t *j = json_pack("{s:s, s:s, s:s, s:s%}", "method", req->method, "path", req->path,
                          "headers", req->headers, "body", req->body, req->body_len);
    char *text = json_dumps(j, JSON_COMPACT);
    snprintf(out, sizeof(out), "%s", text);
    free(text);
    json_decref(j);
    resp->body = out;
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/withrv") == 0) {
    resp->body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"withrv\","
                 "\"resourceVersion\":\"4242\",\"managedFields\":[{\"manager\":\"m\"}]},"
                 "\"data\":{\"k\":\"v\"}}";
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/escaped") == 0) {
    /* an escape in a key: the scanner refuses it, jansson reads it */
    resp->body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"escaped\","
                 "\"resourceVersion\":\"77\"},\"d\\u0061ta\":{}}";
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/missing") == 0) {
    resp->status = 404;
    resp->body =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"configmaps \\\"missing\\\" not found\",\"reason\":\"NotFound\","
        "\"details\":{\"name\":\"missing\",\"kind\":\"configmaps\"},\"code\":404}";
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/flaky429") == 0) {
    if (atomic_fetch_add(&flaky_count, 1) < 2) {
      resp->status = 429;
      snprintf(resp->headers, sizeof(resp->headers), "Retry-After: 0\r\n");
      resp->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
                   "\"code\":429,\"message\":\"slow down\"}";
    } else {
      resp->body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"flaky429\"}}";
    }
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/always429") == 0) {
    atomic_fetch_add(&flaky_count, 1);
    resp->status = 429;
    snprintf(resp->headers, sizeof(resp->headers), "Retry-After: 1\r\n");
    resp->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
                 "\"code\":429,\"message\":\"slow down\"}";
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/always503") == 0) {
    atomic_fetch_add(&flaky_count, 1);
    resp->status = 503;
    snprintf(resp->headers, sizeof(resp->headers), "Retry-After: 0\r\n");
    resp->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"ServiceUnavailable\","
                 "\"code\":503,\"message\":\"down\"}";
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/plain500") == 0) {
    atomic_fetch_add(&flaky_count, 1);
    resp->status = 500;
    resp->content_type = "text/html";
    resp->body = "<html>oops</html>";
  } else if (strncmp(p, "/api/v1/namespaces/default/configmaps/dropfirst", 47) == 0 ||
             (strcmp(p, "/api/v1/namespaces/default/configmaps") == 0 &&
              strcmp(req->method, "POST") == 0)) {
    if (atomic_fetch_add(&close_count, 1) == 0)
      resp->action = KCR_TEST_HTTP_CLOSE;
    else
      resp->body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"dropfirst\"}}";
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/stall") == 0) {
    resp->action = KCR_TEST_HTTP_STALL;
    resp->stall_ms = 5000;
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/big") == 0) {
    static char big[300000];
    memset(big, ' ', sizeof(big) - 3);
    big[0] = '{';
    big[sizeof(big) - 2] = '}';
    big[sizeof(big) - 1] = '\0';
    resp->body = big;
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/notjson") == 0) {
    resp->content_type = "text/plain";
    resp->body = "hello";
  } else {
    resp->status = 404;
    resp->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"NotFound\",\"code\":404,"
                 "\"message\":\"no such path\"}";
  }
}

typedef struct fixture {
  kcr_test_http_t *server;
  kcr_rest_config_t *config;
  kcr_client_t *client;
  char dir[64];
  char kubeconfig[128];
} fixture;

static int make_fixture(fixture *f, const kcr_client_options *extra) {
  kcr_client_options opts;
  kcr_error_t err;
  memset(f, 0, sizeof(*f));
  snprintf(f->dir, sizeof(f->dir), "/tmp/kcr-test-client-XXXXXX");
  if (!mkdtemp(f->dir))
    return -1;
  if (kcr_test_http_start(handler, NULL, &f->server) != 0)
    return -1;
  if (kcr_test_kubeconfig(f->dir, kcr_test_http_port(f->server), "s3cr3t-token", f->kubeconfig,
                          sizeof(f->kubeconfig)) != 0)
    return -1;
  kcr_error_clear(&err);
  if (kcr_rest_config_from_kubeconfig(f->kubeconfig, NULL, NULL, &f->config, &err) != 0) {
    fprintf(stderr, "config: %s\n", err.message);
    return -1;
  }
  if (extra)
    opts = *extra;
  else
    memset(&opts, 0, sizeof(opts));
  opts.config = f->config;
  if (kcr_client_create(&opts, &f->client, &err) != 0) {
    fprintf(stderr, "client: %s\n", err.message);
    return -1;
  }
  atomic_store(&flaky_count, 0);
  atomic_store(&close_count, 0);
  return 0;
}

static void free_fixture(fixture *f) {
  kcr_client_destroy(f->client);
  kcr_rest_config_unref(f->config);
  kcr_test_http_stop(f->server);
  unlink(f->kubeconfig);
  rmdir(f->dir);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  if (!f || make_fixture(f, NULL) != 0)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  free_fixture(f);
  free(f);
  return 0;
}

static void test_client_get_parses_object(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "ok", NULL, &obj, &err), 0);
  assert_string_equal(json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")),
                      "ok");
  json_decref(obj);
}

/* A write whose answer is not wanted: only its resourceVersion, scanned. */
static void test_client_answer_resource_version(void **state) {
  fixture *f = *state;
  kcr_request_options o;
  json_t *body = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                           "metadata", "name", "withrv", "namespace", "default");
  json_t *out = NULL;
  char rv[16], tiny[3];
  kcr_error_t err;
  memset(&o, 0, sizeof(o));
  o.resource_version_out = rv;
  o.resource_version_out_size = sizeof(rv);
  kcr_error_clear(&err);
  snprintf(rv, sizeof(rv), "stale");
  assert_int_equal(kcr_client_update(f->client, &configmaps, "default", body, &o, NULL, &err), 0);
  assert_string_equal(rv, "4242");
  json_object_set_new(json_object_get(body, "metadata"), "name", json_string("escaped"));
  assert_int_equal(kcr_client_update(f->client, &configmaps, "default", body, &o, NULL, &err), 0);
  assert_string_equal(rv, "77");
  /* too small a buffer: "" rather than a cut version */
  json_object_set_new(json_object_get(body, "metadata"), "name", json_string("withrv"));
  o.resource_version_out = tiny;
  o.resource_version_out_size = sizeof(tiny);
  assert_int_equal(kcr_client_update(f->client, &configmaps, "default", body, &o, NULL, &err), 0);
  assert_string_equal(tiny, "");
  /* out given: the answer is parsed as always, the buffer left alone */
  snprintf(rv, sizeof(rv), "untouched");
  o.resource_version_out = rv;
  o.resource_version_out_size = sizeof(rv);
  assert_int_equal(kcr_client_update(f->client, &configmaps, "default", body, &o, &out, &err), 0);
  assert_string_equal(rv, "untouched");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(out, "metadata"), "resourceVersion")),
      "4242");
  json_decref(out);
  json_decref(body);
}

static json_t *echo(fixture *f, const char *method, const kcr_request_options *o, json_t *body) {
  json_t *out = NULL;
  kcr_error_t err;
  int rc;
  kcr_error_clear(&err);
  if (strcmp(method, "GET") == 0)
    rc = kcr_client_get(f->client, &configmaps, "default", "echo", o, &out, &err);
  else if (strcmp(method, "PUT") == 0)
    rc = kcr_client_update(f->client, &configmaps, "default", body, o, &out, &err);
  else if (strcmp(method, "PATCH") == 0)
    rc = kcr_client_patch(f->client, &configmaps, "default", "echo", KCR_PATCH_MERGE,
                          "{\"data\":{\"a\":\"b\"}}", 18, o, &out, &err);
  else
    rc = kcr_client_delete(f->client, &configmaps, "default", "echo", o, &out, &err);
  if (rc != 0)
    fail_msg("%s failed: %s", method, err.message);
  return out;
}

static void test_client_sends_expected_wire(void **state) {
  fixture *f = *state;
  kcr_request_options o;
  json_t *r, *body;
  const char *h;
  memset(&o, 0, sizeof(o));

  r = echo(f, "GET", NULL, NULL);
  assert_string_equal(json_string_value(json_object_get(r, "method")), "GET");
  assert_string_equal(json_string_value(json_object_get(r, "path")),
                      "/api/v1/namespaces/default/configmaps/echo");
  h = json_string_value(json_object_get(r, "headers"));
  assert_non_null(strstr(h, "Authorization: Bearer s3cr3t-token\r\n"));
  assert_non_null(strstr(h, "Accept: application/json\r\n"));
  assert_non_null(strstr(h, "User-Agent: kcr/"));
  json_decref(r);

  o.field_manager = "kcr test";
  o.dry_run = 1;
  o.subresource = "status";
  body = json_pack("{s:s, s:{s:s}}", "kind", "ConfigMap", "metadata", "name", "echo");
  r = echo(f, "PUT", &o, body);
  assert_string_equal(json_string_value(json_object_get(r, "method")), "PUT");
  assert_string_equal(json_string_value(json_object_get(r, "path")),
                      "/api/v1/namespaces/default/configmaps/echo/status?fieldManager=kcr%20test&"
                      "dryRun=All");
  assert_string_equal(json_string_value(json_object_get(r, "body")),
                      "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"echo\"}}");
  assert_non_null(strstr(json_string_value(json_object_get(r, "headers")),
                         "Content-Type: application/json\r\n"));
  json_decref(r);
  json_decref(body);

  memset(&o, 0, sizeof(o));
  r = echo(f, "PATCH", &o, NULL);
  assert_non_null(strstr(json_string_value(json_object_get(r, "headers")),
                         "Content-Type: application/merge-patch+json\r\n"));
  assert_string_equal(json_string_value(json_object_get(r, "body")), "{\"data\":{\"a\":\"b\"}}");
  json_decref(r);

  o.propagation_policy = "Foreground";
  o.precondition_uid = "u-1";
  r = echo(f, "DELETE", &o, NULL);
  body = json_loads(json_string_value(json_object_get(r, "body")), 0, NULL);
  assert_string_equal(json_string_value(json_object_get(body, "propagationPolicy")), "Foreground");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(body, "preconditions"), "uid")), "u-1");
  json_decref(body);
  json_decref(r);
}

static void test_client_list_query_is_encoded(void **state) {
  fixture *f = *state;
  kcr_request_options o;
  kcr_request req;
  kcr_response resp;
  kcr_error_t err;
  char path[256];
  (void)f;
  memset(&o, 0, sizeof(o));
  /* kcr_client_path encodes segments and refuses ones that would change the path. */
  assert_int_equal(kcr_client_path(&configmaps, "default", "a b", NULL, path, sizeof(path)),
                   (int)strlen("/api/v1/namespaces/default/configmaps/a%20b"));
  assert_string_equal(path, "/api/v1/namespaces/default/configmaps/a%20b");
  {
    kcr_gvr apps = {"apps.kcr.dev", "v1alpha1", "apps"};
    kcr_client_path(&apps, NULL, NULL, NULL, path, sizeof(path));
    assert_string_equal(path, "/apis/apps.kcr.dev/v1alpha1/apps");
  }
  assert_int_equal(kcr_client_path(&configmaps, "default", "../x", NULL, path, sizeof(path)),
                   KCR_EINVAL);
  assert_int_equal(kcr_client_path(&configmaps, "a/b", "x", NULL, path, sizeof(path)), KCR_EINVAL);
  assert_int_equal(kcr_client_path(&configmaps, "default", "x", NULL, path, 10), KCR_ETOOBIG);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "..", NULL, NULL, &err),
                   KCR_EINVAL);
  /* The raw request API passes the path as given. */
  memset(&req, 0, sizeof(req));
  req.method = "GET";
  req.path = "/api/v1/namespaces/default/configmaps/echo?labelSelector=a%3Db";
  assert_int_equal(kcr_client_do(f->client, &req, &resp, NULL), 0);
  assert_int_equal(resp.status, 200);
  assert_non_null(strstr(resp.body, "labelSelector=a%3Db"));
  kcr_response_free(&resp);
}

static void test_client_status_error_is_reported(void **state) {
  fixture *f = *state;
  json_t *obj = (json_t *)1;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "missing", NULL, &obj, &err),
                   KCR_EAPI);
  assert_null(obj);
  assert_int_equal(err.code, KCR_EAPI);
  assert_int_equal(err.http_status, 404);
  assert_string_equal(err.reason, "NotFound");
  assert_string_equal(err.message, "configmaps \"missing\" not found");
  assert_true(kcr_error_is_not_found(&err));
  assert_false(kcr_error_is_conflict(&err));
}

static void test_client_retries_429_with_retry_after(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "flaky429", NULL, &obj, &err),
                   0);
  assert_int_equal(atomic_load(&flaky_count), 3);
  json_decref(obj);
}

static void test_client_retry_budget_ends(void **state) {
  fixture f;
  kcr_client_options o;
  kcr_error_t err;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.max_retries = 3;
  assert_int_equal(make_fixture(&f, &o), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f.client, &configmaps, "default", "always503", NULL, NULL, &err),
                   KCR_EAPI);
  assert_int_equal(atomic_load(&flaky_count), 4); /* one try and three retries */
  assert_int_equal(err.http_status, 503);
  free_fixture(&f);
}

/* A request's timeout bounds its retries too (issue 16, found by the chaos suite's 429
 * storm: a leader's write fenced at its renew deadline was retried 30 s past it). */
static void test_client_timeout_bounds_retries(void **state) {
  fixture *f = *state;
  kcr_request_options ro;
  kcr_error_t err;
  int64_t t0, took;
  memset(&ro, 0, sizeof(ro));
  ro.timeout_ns = 1500 * KCR_NSEC_PER_MSEC;
  kcr_error_clear(&err);
  t0 = kcr_clock_now(kcr_clock_system());
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "always429", &ro, NULL, &err),
                   KCR_EAPI);
  took = kcr_clock_now(kcr_clock_system()) - t0;
  assert_int_equal(err.http_status, 429);
  /* Retry-After 1 s: the first try and one retry fit in 1.5 s, a third would not. */
  assert_int_equal(atomic_load(&flaky_count), 2);
  assert_true(took < 1500 * KCR_NSEC_PER_MSEC);
}

static void test_client_5xx_without_retry_after_is_not_retried(void **state) {
  fixture *f = *state;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "plain500", NULL, NULL, &err),
                   KCR_EAPI);
  assert_int_equal(atomic_load(&flaky_count), 1);
  assert_int_equal(err.http_status, 500);
}

static void test_client_get_retried_after_dropped_connection(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "dropfirst", NULL, &obj, &err),
                   0);
  assert_int_equal(atomic_load(&close_count), 2);
  json_decref(obj);
}

static void test_client_post_not_retried_after_dropped_connection(void **state) {
  fixture *f = *state;
  json_t *cm = json_pack("{s:s, s:{s:s}}", "kind", "ConfigMap", "metadata", "name", "x");
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_client_create_object(f->client, &configmaps, "default", cm, NULL, NULL, &err), KCR_ECONN);
  assert_int_equal(atomic_load(&close_count), 1);
  assert_non_null(strstr(err.message, "POST /api/v1/namespaces/default/configmaps"));
  json_decref(cm);
}

static void test_client_body_limit(void **state) {
  fixture f;
  kcr_client_options o;
  kcr_error_t err;
  json_t *obj = NULL;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.max_response_bytes = 100000;
  assert_int_equal(make_fixture(&f, &o), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f.client, &configmaps, "default", "big", NULL, &obj, &err),
                   KCR_ETOOBIG);
  assert_null(obj);
  assert_non_null(strstr(err.message, "100000"));
  /* The client is still usable afterwards. */
  assert_int_equal(kcr_client_get(f.client, &configmaps, "default", "ok", NULL, &obj, NULL), 0);
  json_decref(obj);
  free_fixture(&f);
}

static void test_client_non_json_answer(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "notjson", NULL, &obj, &err),
                   KCR_EPROTO);
  assert_non_null(strstr(err.message, "text/plain"));
}

static void test_client_timeout(void **state) {
  fixture *f = *state;
  kcr_request_options o;
  kcr_error_t err;
  memset(&o, 0, sizeof(o));
  o.timeout_ns = 200 * KCR_NSEC_PER_MSEC;
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "stall", &o, NULL, &err),
                   KCR_ETIMEDOUT);
}

struct firer {
  kcr_cancel_t *token;
};

static void *fire_soon(void *arg) {
  struct firer *fr = arg;
  struct timespec ts = {0, 100 * 1000000L};
  nanosleep(&ts, NULL);
  kcr_cancel_fire(fr->token);
  return NULL;
}

static void test_client_cancel(void **state) {
  fixture *f = *state;
  kcr_request_options o;
  kcr_error_t err;
  struct firer fr;
  pthread_t th;
  memset(&o, 0, sizeof(o));
  assert_int_equal(kcr_cancel_create(&fr.token, NULL), 0);
  o.cancel = fr.token;
  pthread_create(&th, NULL, fire_soon, &fr);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "stall", &o, NULL, &err),
                   KCR_ECANCELED);
  pthread_join(th, NULL);
  /* A fired token refuses new requests at once. */
  assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "ok", &o, NULL, NULL),
                   KCR_ECANCELED);
  kcr_cancel_destroy(fr.token);
}

/* Handles are reset and reused: one curl handle for sequential requests, and
 * nothing of a PUT's (method, body, Content-Type) carried into a GET after it. */
static void test_client_reuses_handles_reset(void **state) {
  fixture *f = *state;
  json_t *r, *body;
  assert_int_equal(kcr__client_handles_made(f->client), 0); /* a fresh client */
  for (int i = 0; i < 20; i++)
    assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "ok", NULL, NULL, NULL), 0);
  assert_int_equal(kcr__client_handles_made(f->client), 1);
  body = json_pack("{s:s, s:{s:s}}", "kind", "ConfigMap", "metadata", "name", "echo");
  r = echo(f, "PUT", NULL, body);
  assert_string_equal(json_string_value(json_object_get(r, "method")), "PUT");
  json_decref(r);
  json_decref(body);
  r = echo(f, "GET", NULL, NULL);
  assert_string_equal(json_string_value(json_object_get(r, "method")), "GET");
  assert_string_equal(json_string_value(json_object_get(r, "body")), "");
  assert_null(strstr(json_string_value(json_object_get(r, "headers")), "Content-Type"));
  assert_non_null(
      strstr(json_string_value(json_object_get(r, "headers")), "Authorization: Bearer "));
  json_decref(r);
  assert_int_equal(kcr__client_handles_made(f->client), 1);
}

static void test_client_reuses_connection(void **state) {
  fixture *f = *state;
  kcr_loop_stats before, after;
  kcr_loop_get_stats(kcr_client_loop(f->client), &before);
  for (int i = 0; i < 20; i++)
    assert_int_equal(kcr_client_get(f->client, &configmaps, "default", "ok", NULL, NULL, NULL), 0);
  kcr_loop_get_stats(kcr_client_loop(f->client), &after);
  assert_true(after.connections_opened - before.connections_opened <= 1);
  assert_int_equal(after.transfers_done - before.transfers_done, 20);
}

struct worker {
  kcr_client_t *client;
  int ok;
};

static void *hammer(void *arg) {
  struct worker *w = arg;
  for (int i = 0; i < 13; i++) {
    json_t *obj = NULL;
    if (kcr_client_get(w->client, &configmaps, "default", "ok", NULL, &obj, NULL) == 0 && obj)
      w->ok++;
    json_decref(obj);
  }
  return NULL;
}

static void test_client_concurrent_requests_from_threads(void **state) {
  fixture *f = *state;
  struct worker w[8];
  pthread_t th[8];
  int total = 0;
  for (int i = 0; i < 8; i++) {
    w[i].client = f->client;
    w[i].ok = 0;
    pthread_create(&th[i], NULL, hammer, &w[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    total += w[i].ok;
  }
  assert_int_equal(total, 104);
}

/* The client registers rest_client_* on the registry it is given and counts each
 * attempt: retries separately, by code, method and host; no answer as <error>. */
static void test_client_metrics_count_attempts(void **state) {
  fixture f;
  kcr_client_options o;
  kcr_metrics_registry_t *r;
  kcr_metric_t *req, *dur;
  kcr_error_t err;
  char host[64];
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.metrics = r;
  assert_int_equal(make_fixture(&f, &o), 0);
  snprintf(host, sizeof(host), "127.0.0.1:%d", kcr_test_http_port(f.server));
  req = kcr_metrics_find(r, KCR_CLIENT_METRIC_REQUESTS);
  dur = kcr_metrics_find(r, KCR_CLIENT_METRIC_DURATION);
  assert_non_null(req);
  assert_non_null(dur);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f.client, &configmaps, "default", "flaky429", NULL, NULL, &err),
                   0);
  assert_int_equal(kcr_client_get(f.client, &configmaps, "default", "nope", NULL, NULL, &err),
                   KCR_EAPI);
  assert_true(kcr_metric_value(kcr_metric_withv(req, "429", "GET", host, NULL)) == 2);
  assert_true(kcr_metric_value(kcr_metric_withv(req, "200", "GET", host, NULL)) == 1);
  assert_true(kcr_metric_value(kcr_metric_withv(req, "404", "GET", host, NULL)) == 1);
  assert_int_equal(kcr_metric_count(kcr_metric_withv(dur, "GET", host, NULL)), 4);
  kcr_test_http_stop(f.server);
  f.server = NULL;
  assert_int_equal(kcr_client_get(f.client, &configmaps, "default", "ok", NULL, NULL, &err),
                   KCR_ECONN);
  assert_true(kcr_metric_value(kcr_metric_withv(req, "<error>", "GET", host, NULL)) >= 1);
  free_fixture(&f);
  kcr_metrics_registry_destroy(r);
}

/* Without a registry the client keeps no metrics; a clashing family refuses. */
static void test_client_metrics_clash(void **state) {
  fixture f;
  kcr_client_options o;
  kcr_metrics_registry_t *r;
  kcr_metric_t *m;
  static const char *const l[] = {"code", NULL};
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_counter(r, KCR_CLIENT_METRIC_REQUESTS, "x", l, &m, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.metrics = r;
  assert_int_not_equal(make_fixture(&f, &o), 0);
  assert_null(f.client);
  free_fixture(&f);
  kcr_metrics_registry_destroy(r);
}

static void test_client_connection_refused(void **state) {
  fixture f;
  kcr_error_t err;
  int port;
  (void)state;
  assert_int_equal(make_fixture(&f, NULL), 0);
  port = kcr_test_http_port(f.server);
  kcr_test_http_stop(f.server);
  f.server = NULL;
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f.client, &configmaps, "default", "ok", NULL, NULL, &err),
                   KCR_ECONN);
  assert_non_null(strstr(err.message, "GET /api/v1/namespaces/default/configmaps/ok"));
  (void)port;
  free_fixture(&f);
}

static void test_client_rate_limit_spaces_requests(void **state) {
  fixture f;
  kcr_client_options o;
  struct timespec a, b;
  double elapsed;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.qps = 20;
  o.burst = 1;
  assert_int_equal(make_fixture(&f, &o), 0);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < 11; i++)
    assert_int_equal(kcr_client_get(f.client, &configmaps, "default", "ok", NULL, NULL, NULL), 0);
  clock_gettime(CLOCK_MONOTONIC, &b);
  elapsed = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  /* One token up front, then one every 50 ms: ten waits. A lower bound, which a
   * slow machine cannot break (only a broken limiter can). */
  assert_true(elapsed >= 0.45);
  free_fixture(&f);
}

/* ---- KCR_CURL_VERBOSE ---- */

typedef struct logs {
  pthread_mutex_t mu;
  int warnings;
  char text[65536]; /* every line as "logger: msg k=v ...\n" */
} logs;

/* on_log keeps each line as a handler installed by a user would see it. */
static void on_log(const kcr_log_record *rec, void *data) {
  logs *l = data;
  size_t len;
  pthread_mutex_lock(&l->mu);
  if (rec->level == KCR_LOG_WARN)
    l->warnings++;
  len = strlen(l->text);
  len += (size_t)snprintf(l->text + len, sizeof(l->text) - len, "%s: %s",
                          rec->logger ? rec->logger : "", rec->msg ? rec->msg : "");
  for (size_t i = 0; i < rec->nfields && len < sizeof(l->text); i++)
    len += (size_t)snprintf(l->text + len, sizeof(l->text) - len, " %s=%s", rec->fields[i].key,
                            rec->fields[i].s ? rec->fields[i].s : "");
  if (len < sizeof(l->text))
    snprintf(l->text + len, sizeof(l->text) - len, "\n");
  pthread_mutex_unlock(&l->mu);
}

/* A token in the kubeconfig reaches the server, never the trace or the log,
 * not even a log handler of the application's own. */
static void test_client_verbose_redacts_credentials(void **state) {
  fixture f;
  logs *l = calloc(1, sizeof(*l));
  json_t *r;
  (void)state;

  assert_non_null(l);
  pthread_mutex_init(&l->mu, NULL);
  setenv("KCR_CURL_VERBOSE", "1", 1); /* before any thread of the fixture exists */
  kcr_log_set_handler(on_log, l);
  kcr_log_set_level(KCR_LOG_DEBUG);
  assert_int_equal(make_fixture(&f, NULL), 0);
  for (int i = 0; i < 3; i++) {
    r = echo(&f, "GET", NULL, NULL);
    assert_non_null(
        strstr(json_string_value(json_object_get(r, "headers")), "Bearer s3cr3t-token"));
    json_decref(r);
  }
  free_fixture(&f);
  kcr_log_set_handler(NULL, NULL);
  kcr_log_set_level(KCR_LOG_INFO);
  unsetenv("KCR_CURL_VERBOSE");

  /* The trace is there, with headers both ways, and the token is not. */
  assert_non_null(strstr(l->text, "curl: request header line=GET "
                                  "/api/v1/namespaces/default/configmaps/echo HTTP/1.1"));
  assert_non_null(strstr(l->text, "curl: request header Authorization=[REDACTED]\n"));
  assert_non_null(strstr(l->text, "curl: response header line=HTTP/1.1 200"));
  if (strstr(l->text, "s3cr3t"))
    fail_msg("the token is in the log:\n%s", l->text);
  /* One warning for the plaintext server, for three requests. */
  assert_int_equal(l->warnings, 1);
  assert_non_null(strstr(l->text, "http:// (no TLS)"));
  pthread_mutex_destroy(&l->mu);
  free(l);
}

/* The debug function on what libcurl can hand it: HTTP/2 headers traced as text,
 * several header lines at once, bodies. */
static void test_client_verbose_debug_function(void **state) {
  static char h2[] = "h2h3 [authorization: Bearer s3cr3t-h2]\n";
  static char h1[] = "GET / HTTP/1.1\r\nProxy-Authorization: Basic czNjcjN0\r\n"
                     "cookie: s=s3cr3t-cookie\r\nAccept: */*\r\n\r\n";
  static char in[] = "HTTP/1.1 200 OK\r\nSet-Cookie: s3cr3t-set\r\n";
  static char body[] = "{\"token\":\"s3cr3t-body\"}";
  logs *l = calloc(1, sizeof(*l));
  (void)state;
  assert_non_null(l);
  pthread_mutex_init(&l->mu, NULL);
  kcr_log_set_handler(on_log, l);
  kcr_log_set_level(KCR_LOG_DEBUG);
  kcr__client_on_curl_debug(NULL, CURLINFO_TEXT, h2, strlen(h2), NULL);
  kcr__client_on_curl_debug(NULL, CURLINFO_HEADER_OUT, h1, strlen(h1), NULL);
  kcr__client_on_curl_debug(NULL, CURLINFO_HEADER_IN, in, strlen(in), NULL);
  kcr__client_on_curl_debug(NULL, CURLINFO_DATA_OUT, body, strlen(body), NULL);
  kcr__client_on_curl_debug(NULL, CURLINFO_DATA_IN, body, strlen(body), NULL);
  kcr__client_on_curl_debug(NULL, CURLINFO_SSL_DATA_OUT, body, strlen(body), NULL);
  kcr_log_set_handler(NULL, NULL);
  kcr_log_set_level(KCR_LOG_INFO);
  assert_string_equal(l->text, "curl: h2h3 [authorization: [REDACTED]]\n"
                               "curl: request header line=GET / HTTP/1.1\n"
                               "curl: request header Proxy-Authorization=[REDACTED]\n"
                               "curl: request header cookie=[REDACTED]\n"
                               "curl: request header Accept=*/*\n"
                               "curl: response header line=HTTP/1.1 200 OK\n"
                               "curl: response header Set-Cookie=[REDACTED]\n");
  pthread_mutex_destroy(&l->mu);
  free(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_client_get_parses_object, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_answer_resource_version, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_sends_expected_wire, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_list_query_is_encoded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_status_error_is_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_retries_429_with_retry_after, setup, teardown),
      cmocka_unit_test(test_client_retry_budget_ends),
      cmocka_unit_test_setup_teardown(test_client_timeout_bounds_retries, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_5xx_without_retry_after_is_not_retried, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_client_get_retried_after_dropped_connection, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_client_post_not_retried_after_dropped_connection, setup,
                                      teardown),
      cmocka_unit_test(test_client_body_limit),
      cmocka_unit_test_setup_teardown(test_client_non_json_answer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_timeout, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_cancel, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_reuses_handles_reset, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_reuses_connection, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_concurrent_requests_from_threads, setup,
                                      teardown),
      cmocka_unit_test(test_client_connection_refused),
      cmocka_unit_test(test_client_metrics_count_attempts),
      cmocka_unit_test(test_client_metrics_clash),
      cmocka_unit_test(test_client_rate_limit_spaces_requests),
      cmocka_unit_test(test_client_verbose_redacts_credentials),
      cmocka_unit_test(test_client_verbose_debug_function),
  };
  return cmocka_run_group_tests_name("client", tests, NULL, NULL);
}
