/* SPDX-License-Identifier: MIT */
/*
 * test_webhook.c: admission webhooks (kcr/webhook.h) over HTTPS on
 * 127.0.0.1:0 with an OpenSSL client: validating and mutating handlers, the
 * AdmissionReview answers (denial, warnings, JSON Patch), handler errors and
 * malformed reviews answered as denials, request bodies (split, too large,
 * chunked), keep-alive, and the webhook metrics; conversion reviews (order,
 * failures as result Failure, metrics); and the JSON Patch diff.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <malloc.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kcr/base64.h"
#include "kcr/loop.h"
#include "kcr/webhook.h"
#include "server/webhook_internal.h"
#include "testutil.h"

/* ---- the JSON Patch diff ---- */

static void check_diff(const char *from, const char *to, const char *want) {
  json_t *f = json_loads(from, 0, NULL), *t = json_loads(to, 0, NULL), *ops = NULL;
  char *got;
  assert_non_null(f);
  assert_non_null(t);
  assert_int_equal(kcr__json_patch_diff(f, t, &ops), 0);
  got = json_dumps(ops, JSON_COMPACT);
  assert_string_equal(got, want);
  free(got);
  json_decref(ops);
  json_decref(f);
  json_decref(t);
}

static void test_webhook_patch_diff(void **state) {
  (void)state;
  check_diff("{\"a\":1}", "{\"a\":1}", "[]");
  check_diff("{\"a\":1}", "{\"a\":2}", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":2}]");
  check_diff("{\"a\":1,\"b\":2}", "{\"b\":2,\"c\":{\"d\":[1]}}",
             "[{\"op\":\"remove\",\"path\":\"/a\"},"
             "{\"op\":\"add\",\"path\":\"/c\",\"value\":{\"d\":[1]}}]");
  check_diff("{\"s\":{\"x\":1,\"y\":{\"z\":true}}}", "{\"s\":{\"x\":1,\"y\":{\"z\":false}}}",
             "[{\"op\":\"replace\",\"path\":\"/s/y/z\",\"value\":false}]");
  /* Arrays are replaced whole. */
  check_diff("{\"l\":[1,2,3]}", "{\"l\":[1,3]}",
             "[{\"op\":\"replace\",\"path\":\"/l\",\"value\":[1,3]}]");
  /* RFC 6901 escaping: ~ as ~0, / as ~1 (label keys have slashes). */
  check_diff("{\"m\":{}}", "{\"m\":{\"app.kubernetes.io/name\":\"x\",\"a~b\":1}}",
             "[{\"op\":\"add\",\"path\":\"/m/app.kubernetes.io~1name\",\"value\":\"x\"},"
             "{\"op\":\"add\",\"path\":\"/m/a~0b\",\"value\":1}]");
  /* A type change is a replace. */
  check_diff("{\"v\":{\"a\":1}}", "{\"v\":\"s\"}",
             "[{\"op\":\"replace\",\"path\":\"/v\",\"value\":\"s\"}]");
}

/* ---- handlers ---- */

static int on_validate(void *data, const kcr_admission_request *req, kcr_admission_response *resp,
                       kcr_error_t *err) {
  json_t *spec = json_object_get(req->object, "spec");
  (void)data;
  if (json_is_true(json_object_get(spec, "explode")))
    return kcr_error_set(err, KCR_EINVAL, "the handler broke on purpose");
  if (strcmp(req->operation, "UPDATE") == 0 && req->old_object &&
      json_integer_value(json_object_get(json_object_get(req->old_object, "spec"), "port")) !=
          json_integer_value(json_object_get(spec, "port")))
    kcr_admission_deny(resp, "spec.port cannot change (user %s)",
                       json_string_value(json_object_get(req->user_info, "username")));
  else if (json_integer_value(json_object_get(spec, "port")) == 0)
    kcr_admission_deny(resp, "spec.port must be set");
  if (!json_object_get(spec, "name"))
    kcr_admission_warn(resp, "spec.name is not set");
  return 0;
}

static int on_mutate(void *data, const kcr_admission_request *req, kcr_admission_response *resp,
                     kcr_error_t *err) {
  json_t *spec = json_object_get(req->object, "spec");
  (void)data;
  (void)resp;
  (void)err;
  if (!json_object_get(spec, "replicas"))
    json_object_set_new(spec, "replicas", json_integer(1));
  json_object_del(spec, "deprecated");
  return 0;
}

/* on_convert: v1 -> v2 renames spec.port to spec.ports[0]; "explode" fails,
 * "lie" answers the wrong version. */
static int on_convert(void *data, json_t *o, const char *desired, json_t **out, kcr_error_t *err) {
  json_t *c, *spec;
  (void)data;
  if (json_object_get(json_object_get(o, "spec"), "explode"))
    return kcr_error_set(err, KCR_EINVAL, "cannot convert this one");
  c = json_deep_copy(o);
  spec = json_object_get(c, "spec");
  if (json_object_get(spec, "port")) {
    json_object_set_new(spec, "ports", json_pack("[O]", json_object_get(spec, "port")));
    json_object_del(spec, "port");
  }
  json_object_set_new(c, "apiVersion",
                      json_string(json_object_get(spec, "lie") ? "example.com/v9" : desired));
  *out = c;
  return 0;
}

/* ---- a TLS client ---- */

typedef struct tcli {
  int fd;
  SSL_CTX *ctx;
  SSL *ssl;
  int ok; /* the handshake succeeded */
} tcli;

static void tcli_open(tcli *t, int port) {
  struct sockaddr_in a = {0};
  struct timeval tv = {20, 0}; /* generous: valgrind runs this too */
  t->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(t->fd >= 0);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(t->fd, (struct sockaddr *)&a, sizeof(a)), 0);
  setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  t->ctx = SSL_CTX_new(TLS_client_method());
  t->ssl = SSL_new(t->ctx);
  SSL_set_fd(t->ssl, t->fd);
  t->ok = SSL_connect(t->ssl) == 1;
}

static void tcli_close(tcli *t) {
  SSL_free(t->ssl);
  SSL_CTX_free(t->ctx);
  close(t->fd);
  ERR_clear_error();
}

/* warm_up makes one handshake whose outcome does not matter: the first in a
 * process initialises OpenSSL's tables, which under valgrind takes longer than
 * the server's 3 s header timeout (that timeout covers the handshake). */
static void warm_up(int port) {
  tcli t;
  tcli_open(&t, port);
  tcli_close(&t);
}

static void tcli_send(tcli *t, const char *s, size_t n) {
  assert_int_equal(SSL_write(t->ssl, s, (int)n), (int)n);
}

/* tcli_response reads one answer; *status its code; returns the body (new). */
static char *tcli_response(tcli *t, int *status) {
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap), *he, *body;
  for (;;) {
    int n;
    buf[len] = '\0';
    he = strstr(buf, "\r\n\r\n");
    if (he) {
      char *cl = strstr(buf, "Content-Length: ");
      size_t want = (size_t)(he - buf) + 4 + (cl ? strtoul(cl + 16, NULL, 10) : 0);
      if (len >= want)
        break;
    }
    if (len + 1 >= cap)
      buf = realloc(buf, cap *= 2);
    n = SSL_read(t->ssl, buf + len, (int)(cap - len - 1));
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  *status = strncmp(buf, "HTTP/1.1 ", 9) == 0 ? (int)strtol(buf + 9, NULL, 10) : 0;
  he = strstr(buf, "\r\n\r\n");
  body = strdup(he ? he + 4 : "");
  free(buf);
  return body;
}

static char *post(int port, const char *path, const char *body, int *status) {
  tcli t;
  char head[256];
  char *r;
  int n = snprintf(head, sizeof(head),
                   "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\n\r\n",
                   path, strlen(body));
  tcli_open(&t, port);
  assert_true(t.ok);
  tcli_send(&t, head, (size_t)n);
  tcli_send(&t, body, strlen(body));
  r = tcli_response(&t, status);
  tcli_close(&t);
  return r;
}

/* review returns the "response" of an AdmissionReview answer (new). */
static json_t *review(int port, const char *path, const char *body) {
  int status = 0;
  char *r = post(port, path, body, &status);
  json_t *j = json_loads(r, 0, NULL), *resp;
  assert_int_equal(status, 200);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "kind")), "AdmissionReview");
  resp = json_incref(json_object_get(j, "response"));
  assert_non_null(resp);
  json_decref(j);
  free(r);
  return resp;
}

static const char *msg_of(json_t *resp) {
  return json_string_value(json_object_get(json_object_get(resp, "status"), "message"));
}

typedef struct fixture {
  kcr_loop_t *loop;
  kcr_metrics_registry_t *reg;
  kcr_webhook_server_t *ws;
  int port;
} fixture_t;

static fixture_t *start(void) {
  fixture_t *f = calloc(1, sizeof(*f));
  kcr_webhook_server_options o = {0};
  kcr_error_t err = {0};
  assert_int_equal(kcr_loop_create(&f->loop, NULL), 0);
  assert_int_equal(kcr_loop_start(f->loop, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&f->reg, NULL), 0);
  o.bind_address = "127.0.0.1:0";
  o.metrics = f->reg;
  assert_int_equal(kcr_webhook_server_create(&o, &f->ws, &err), 0);
  assert_int_equal(kcr_webhook_server_register_validating(f->ws, "/validate", on_validate, NULL),
                   0);
  assert_int_equal(kcr_webhook_server_register_mutating(f->ws, "/mutate", on_mutate, NULL), 0);
  assert_int_equal(kcr_webhook_server_register_mutating(f->ws, "/mutate", on_mutate, NULL),
                   KCR_EEXIST);
  assert_int_equal(kcr_webhook_server_register_conversion(f->ws, "/convert", on_convert, NULL), 0);
  assert_int_equal(kcr_webhook_server_register_conversion(f->ws, "/mutate", on_convert, NULL),
                   KCR_EEXIST);
  assert_int_equal(kcr_webhook_server_register_mutating(f->ws, "no-slash", on_mutate, NULL),
                   KCR_EINVAL);
  if (kcr_webhook_server_start(f->ws, f->loop, &err) != 0)
    fail_msg("start: %s", err.message);
  assert_int_equal(kcr_webhook_server_register_validating(f->ws, "/late", on_validate, NULL),
                   KCR_EINVAL);
  f->port = kcr_webhook_server_port(f->ws);
  assert_true(f->port > 0);
  warm_up(f->port);
  return f;
}

static void stop(fixture_t *f) {
  kcr_webhook_server_destroy(f->ws);
  kcr_loop_destroy(f->loop);
  kcr_metrics_registry_destroy(f->reg);
  free(f);
}

#define REVIEW(op, obj, old)                                                                       \
  "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"             \
  "\"uid\":\"u-123\",\"kind\":{\"group\":\"kcr.dev\",\"version\":\"v1alpha1\",\"kind\":\"App\"},"  \
  "\"operation\":\"" op "\",\"name\":\"a\",\"namespace\":\"ns\","                                  \
  "\"userInfo\":{\"username\":\"alice\"},\"object\":" obj ",\"oldObject\":" old "}}"

static void test_webhook_validating(void **state) {
  fixture_t *f = start();
  json_t *r;
  kcr_metric_t *m;
  (void)state;
  r = review(f->port, "/validate",
             REVIEW("CREATE", "{\"spec\":{\"port\":80,\"name\":\"x\"}}", "null"));
  assert_string_equal(json_string_value(json_object_get(r, "uid")), "u-123");
  assert_true(json_is_true(json_object_get(r, "allowed")));
  assert_null(json_object_get(r, "patch"));
  assert_null(json_object_get(r, "warnings"));
  json_decref(r);

  r = review(f->port, "/validate", REVIEW("CREATE", "{\"spec\":{}}", "null"));
  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_string_equal(msg_of(r), "spec.port must be set");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "status"), "code")), 403);
  assert_string_equal(json_string_value(json_array_get(json_object_get(r, "warnings"), 0)),
                      "spec.name is not set");
  json_decref(r);

  /* UPDATE sees the old object and the user. */
  r = review(f->port, "/validate",
             REVIEW("UPDATE", "{\"spec\":{\"port\":81,\"name\":\"x\"}}",
                    "{\"spec\":{\"port\":80,\"name\":\"x\"}}"));
  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_string_equal(msg_of(r), "spec.port cannot change (user alice)");
  json_decref(r);

  /* A handler error is a clean denial with code 500. */
  r = review(f->port, "/validate", REVIEW("CREATE", "{\"spec\":{\"explode\":true}}", "null"));
  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "status"), "code")), 500);
  assert_string_equal(msg_of(r), "the handler broke on purpose");
  json_decref(r);

  /* Not a review: a denial with code 400, still HTTP 200. */
  r = review(f->port, "/validate", "{\"kind\":\"Pod\"}");
  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "status"), "code")), 400);
  json_decref(r);
  r = review(f->port, "/validate", "{not json");
  assert_true(json_is_false(json_object_get(r, "allowed")));
  json_decref(r);

  m = kcr_metrics_find(f->reg, "controller_runtime_webhook_requests_total");
  assert_non_null(m);
  assert_true(kcr_metric_value(kcr_metric_withv(m, "/validate", "200", NULL)) == 6);
  m = kcr_metrics_find(f->reg, "controller_runtime_webhook_requests_in_flight");
  assert_true(kcr_metric_value(kcr_metric_withv(m, "/validate", NULL)) == 0);
  m = kcr_metrics_find(f->reg, "controller_runtime_webhook_latency_seconds");
  assert_int_equal(kcr_metric_count(kcr_metric_withv(m, "/validate", NULL)), 6);
  stop(f);
}

static void test_webhook_mutating_patch(void **state) {
  fixture_t *f = start();
  json_t *r, *ops;
  unsigned char *raw = NULL;
  size_t raw_len = 0;
  (void)state;
  r = review(f->port, "/mutate",
             REVIEW("CREATE", "{\"spec\":{\"port\":80,\"deprecated\":\"x\"}}", "null"));
  assert_true(json_is_true(json_object_get(r, "allowed")));
  assert_string_equal(json_string_value(json_object_get(r, "patchType")), "JSONPatch");
  assert_int_equal(kcr_base64_decode(json_string_value(json_object_get(r, "patch")),
                                     strlen(json_string_value(json_object_get(r, "patch"))), &raw,
                                     &raw_len, NULL),
                   0);
  ops = json_loadb((const char *)raw, raw_len, 0, NULL);
  assert_non_null(ops);
  {
    char *s = json_dumps(ops, JSON_COMPACT);
    assert_string_equal(s, "[{\"op\":\"remove\",\"path\":\"/spec/deprecated\"},"
                           "{\"op\":\"add\",\"path\":\"/spec/replicas\",\"value\":1}]");
    free(s);
  }
  json_decref(ops);
  free(raw);
  json_decref(r);
  /* Nothing to change: no patch. */
  r = review(f->port, "/mutate", REVIEW("CREATE", "{\"spec\":{\"replicas\":3}}", "null"));
  assert_true(json_is_true(json_object_get(r, "allowed")));
  assert_null(json_object_get(r, "patch"));
  json_decref(r);
  stop(f);
}

#define CONV(objs)                                                                                 \
  "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{"        \
  "\"uid\":\"c-1\",\"desiredAPIVersion\":\"example.com/v2\",\"objects\":" objs "}}"

/* convert posts a ConversionReview and returns its "response" (new). */
static json_t *convert(int port, const char *body) {
  int status = 0;
  char *r = post(port, "/convert", body, &status);
  json_t *j = json_loads(r, 0, NULL), *resp;
  assert_int_equal(status, 200);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "kind")), "ConversionReview");
  assert_string_equal(json_string_value(json_object_get(j, "apiVersion")),
                      "apiextensions.k8s.io/v1");
  resp = json_incref(json_object_get(j, "response"));
  assert_non_null(resp);
  json_decref(j);
  free(r);
  return resp;
}

static const char *result_of(json_t *resp, const char *key) {
  return json_string_value(json_object_get(json_object_get(resp, "result"), key));
}

static void test_webhook_conversion(void **state) {
  fixture_t *f = start();
  json_t *r, *objs;
  kcr_metric_t *m;
  char *s;
  (void)state;
  /* Two objects, the second already at the desired version: order kept, the
   * second copied as it is. */
  r = convert(f->port, CONV("[{\"apiVersion\":\"example.com/v1\",\"kind\":\"W\","
                            "\"metadata\":{\"name\":\"a\"},\"spec\":{\"port\":80}},"
                            "{\"apiVersion\":\"example.com/v2\",\"kind\":\"W\","
                            "\"spec\":{\"ports\":[1],\"port\":7}}]"));
  assert_string_equal(json_string_value(json_object_get(r, "uid")), "c-1");
  assert_string_equal(result_of(r, "status"), "Success");
  objs = json_object_get(r, "convertedObjects");
  s = json_dumps(objs, JSON_COMPACT | JSON_SORT_KEYS);
  assert_string_equal(s, "[{\"apiVersion\":\"example.com/v2\",\"kind\":\"W\",\"metadata\":{"
                         "\"name\":\"a\"},\"spec\":{\"ports\":[80]}},{\"apiVersion\":"
                         "\"example.com/v2\",\"kind\":\"W\",\"spec\":{\"port\":7,\"ports\":[1]}}]");
  free(s);
  json_decref(r);

  /* A handler error: Failure naming the object, no objects, still HTTP 200. */
  r = convert(f->port, CONV("[{\"apiVersion\":\"example.com/v1\",\"kind\":\"W\","
                            "\"metadata\":{\"name\":\"ok\"},\"spec\":{}},"
                            "{\"apiVersion\":\"example.com/v1\",\"kind\":\"W\","
                            "\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\"},"
                            "\"spec\":{\"explode\":1}}]"));
  assert_string_equal(result_of(r, "status"), "Failure");
  assert_string_equal(result_of(r, "message"), "converting W ns/b from example.com/v1 to "
                                               "example.com/v2: cannot convert this one");
  assert_int_equal(json_array_size(json_object_get(r, "convertedObjects")), 0);
  json_decref(r);

  /* An answer at another version is refused by the server, not forwarded. */
  r = convert(f->port, CONV("[{\"apiVersion\":\"example.com/v1\",\"kind\":\"W\","
                            "\"metadata\":{\"name\":\"c\"},\"spec\":{\"lie\":1}}]"));
  assert_string_equal(result_of(r, "status"), "Failure");
  assert_string_equal(result_of(r, "message"),
                      "converting W c to example.com/v2: the handler returned example.com/v9 W");
  json_decref(r);

  /* Not a review, no objects, a bad desired version: Failures with reasons. */
  r = convert(f->port, "{\"kind\":\"AdmissionReview\"}");
  assert_string_equal(result_of(r, "status"), "Failure");
  assert_string_equal(result_of(r, "message"), "the body is not a ConversionReview");
  json_decref(r);
  r = convert(f->port, "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":"
                       "\"ConversionReview\",\"request\":{\"uid\":\"x\","
                       "\"desiredAPIVersion\":\"v2\",\"objects\":[]}}");
  assert_string_equal(result_of(r, "status"), "Failure");
  assert_string_equal(result_of(r, "message"), "desiredAPIVersion is not a group/version");
  json_decref(r);
  r = convert(f->port, "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":"
                       "\"ConversionReview\",\"request\":{\"uid\":\"x\","
                       "\"desiredAPIVersion\":\"a/v2\"}}");
  assert_string_equal(result_of(r, "message"), "the review has no objects array");
  json_decref(r);

  m = kcr_metrics_find(f->reg, "controller_runtime_webhook_requests_total");
  assert_true(kcr_metric_value(kcr_metric_withv(m, "/convert", "200", NULL)) == 6);
  m = kcr_metrics_find(f->reg, "controller_runtime_webhook_latency_seconds");
  assert_int_equal(kcr_metric_count(kcr_metric_withv(m, "/convert", NULL)), 6);
  m = kcr_metrics_find(f->reg, "controller_runtime_webhook_requests_in_flight");
  assert_true(kcr_metric_value(kcr_metric_withv(m, "/convert", NULL)) == 0);
  stop(f);
}

/* The v1beta1 ConversionReview is answered in its own apiVersion. */
static void test_webhook_conversion_v1beta1(void **state) {
  const char *body = "{\"apiVersion\":\"apiextensions.k8s.io/v1beta1\",\"kind\":"
                     "\"ConversionReview\",\"request\":{\"uid\":\"z\",\"desiredAPIVersion\":"
                     "\"example.com/v2\",\"objects\":[]}}";
  json_t *out = kcr__conversion_review(body, strlen(body), on_convert, NULL, "/t");
  (void)state;
  assert_string_equal(json_string_value(json_object_get(out, "apiVersion")),
                      "apiextensions.k8s.io/v1beta1");
  assert_string_equal(result_of(json_object_get(out, "response"), "status"), "Success");
  json_decref(out);
}

/* conversion_rc runs a two-object review; 0 for the full Success answer,
 * KCR_ENOMEM for NULL or a Failure (what running out of memory may give). */
static const char conv_body[] =
    CONV("[{\"apiVersion\":\"example.com/v1\",\"kind\":\"W\",\"metadata\":{\"name\":\"a\"},"
         "\"spec\":{\"port\":80}},{\"apiVersion\":\"example.com/v2\",\"kind\":\"W\"}]");
static json_t *conv_out;

static int conversion_rc(void) {
  json_t *resp, *objs;
  conv_out = kcr__conversion_review(conv_body, strlen(conv_body), on_convert, NULL, "/t");
  if (!conv_out)
    return KCR_ENOMEM;
  resp = json_object_get(conv_out, "response");
  if (strcmp(result_of(resp, "status"), "Failure") == 0)
    return KCR_ENOMEM;
  objs = json_object_get(resp, "convertedObjects");
  return json_array_size(objs) == 2 &&
                 json_integer_value(json_array_get(
                     json_object_get(json_object_get(json_array_get(objs, 0), "spec"), "ports"),
                     0)) == 80
             ? 0
             : KCR_EINVAL;
}

static void test_webhook_conversion_alloc_failures(void **state) {
  (void)state;
  KCR_TEST_ALLOC_LOOP(conversion_rc(), (json_decref(conv_out), conv_out = NULL));
}

static void test_webhook_http_edges(void **state) {
  fixture_t *f = start();
  tcli t;
  int status;
  char *r, big[512];
  const char *rev = REVIEW("CREATE", "{\"spec\":{\"port\":80,\"name\":\"x\"}}", "null");
  size_t half = strlen(rev) / 2;
  (void)state;

  r = post(f->port, "/nope", "{}", &status);
  assert_int_equal(status, 404);
  free(r);

  /* GET on a webhook path. */
  tcli_open(&t, f->port);
  assert_true(t.ok);
  tcli_send(&t, "GET /validate HTTP/1.1\r\nHost: x\r\n\r\n", 35);
  r = tcli_response(&t, &status);
  assert_int_equal(status, 405);
  free(r);
  /* Then, on the same connection, a body sent in two pieces, and another
   * request right behind it (keep-alive, pipelined). */
  snprintf(big, sizeof(big), "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
           strlen(rev));
  tcli_send(&t, big, strlen(big));
  tcli_send(&t, rev, half);
  usleep(50 * 1000);
  tcli_send(&t, rev + half, strlen(rev) - half);
  tcli_send(&t, big, strlen(big));
  tcli_send(&t, rev, strlen(rev));
  for (int i = 0; i < 2; i++) {
    r = tcli_response(&t, &status);
    assert_int_equal(status, 200);
    assert_non_null(strstr(r, "\"allowed\":true"));
    free(r);
  }
  tcli_close(&t);

  /* A chunked body is refused (411), one over the limit too (413). */
  tcli_open(&t, f->port);
  assert_true(t.ok);
  tcli_send(&t, "POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 64);
  r = tcli_response(&t, &status);
  assert_int_equal(status, 411);
  free(r);
  tcli_close(&t);
  tcli_open(&t, f->port);
  assert_true(t.ok);
  tcli_send(&t, "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n", 65);
  r = tcli_response(&t, &status);
  assert_int_equal(status, 413);
  free(r);
  tcli_close(&t);
  stop(f);
}

/* Issue 28, finding 5: an UPDATE of two 2.25 MiB objects (4.5 MiB of review,
 * past the 4 MiB that a quarter of a 16 MiB budget allows) is answered, as the
 * documented 7 MiB body limit says; a body past 7 MiB gets 413. */
static void test_webhook_body_limit(void **state) {
  fixture_t *f = start();
  size_t blob = (size_t)9 * 256 * 1024;
  char *obj = malloc(blob + 64), *body, *r;
  size_t cap = 2 * blob + 1024;
  int status = 0;
  tcli t;
  json_t *j;
  (void)state;
  const char *pre = "{\"spec\":{\"port\":80,\"name\":\"x\",\"blob\":\"";
  size_t pl = strlen(pre);
  snprintf(obj, blob + 64, "%s", pre);
  memset(obj + pl, 'x', blob);
  snprintf(obj + pl + blob, 64, "\"}}");
  body = malloc(cap);
  snprintf(body, cap, REVIEW("UPDATE", "%s", "%s"), obj, obj);
  assert_true(strlen(body) > 4 * 1024 * 1024 + 512 * 1024);
  r = post(f->port, "/validate", body, &status);
  assert_int_equal(status, 200);
  j = json_loads(r, 0, NULL);
  assert_true(json_is_true(json_object_get(json_object_get(j, "response"), "allowed")));
  json_decref(j);
  free(r);
  free(body);
  free(obj);
  tcli_open(&t, f->port);
  assert_true(t.ok);
  tcli_send(&t, "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 7340033\r\n\r\n", 61);
  r = tcli_response(&t, &status);
  assert_int_equal(status, 413);
  free(r);
  tcli_close(&t);
  stop(f);
}

/* ---- what a review may cost to decode (issue 28) ---- */

/* A counting allocator: the heap in use (glibc's usable size plus its 16-byte
 * chunk header) and its peak, for everything libkcr and jansson allocate. */
static _Atomic size_t heap_now, heap_peak;

static void heap_charge(void *p) {
  size_t n;
  if (!p)
    return;
  n = atomic_fetch_add(&heap_now, malloc_usable_size(p) + 16) + malloc_usable_size(p) + 16;
  if (n > atomic_load(&heap_peak))
    atomic_store(&heap_peak, n);
}
static void *count_malloc(size_t n) {
  void *p = malloc(n);
  heap_charge(p);
  return p;
}
static void *count_realloc(void *p, size_t n) {
  size_t old = p ? malloc_usable_size(p) + 16 : 0;
  void *q = realloc(p, n);
  if (q) {
    atomic_fetch_sub(&heap_now, old);
    heap_charge(q);
  }
  return q;
}
static void count_free(void *p) {
  if (p)
    atomic_fetch_sub(&heap_now, malloc_usable_size(p) + 16);
  free(p);
}
static void heap_count(bool on) {
  atomic_store(&heap_now, 0);
  atomic_store(&heap_peak, 0);
  if (on)
    kcr_set_alloc_funcs(count_malloc, count_realloc, count_free);
  else
    kcr_set_alloc_funcs(NULL, NULL, NULL);
}

/* repeat: "[" item "," item ... "]" with n items (new, malloc'd). */
static char *repeat(const char *pre, const char *item, size_t n, const char *post) {
  size_t il = strlen(item), len = strlen(pre) + n * (il + 1) + strlen(post) + 2, at;
  char *b = malloc(len);
  assert_non_null(b);
  at = (size_t)sprintf(b, "%s[", pre);
  for (size_t i = 0; i < n; i++) {
    memcpy(b + at, item, il);
    at += il;
    b[at++] = ',';
  }
  if (n > 0)
    at--;
  at += (size_t)sprintf(b + at, "]%s", post);
  b[at] = '\0';
  return b;
}

/* The estimate is an upper bound of what jansson really takes, shape by shape. */
static void check_cost_bound(const char *json) {
  size_t est = kcr__json_tree_cost(json, strlen(json), SIZE_MAX), peak;
  json_t *j;
  heap_count(true);
  j = json_loads(json, 0, NULL);
  peak = atomic_load(&heap_peak);
  json_decref(j);
  heap_count(false);
  assert_non_null(j);
  if (est < peak)
    fail_msg("estimate %zu < jansson's %zu for %.60s", est, peak, json);
}

static int never_called(void *data, const kcr_admission_request *q, kcr_admission_response *r,
                        kcr_error_t *err) {
  (void)q;
  (void)r;
  (void)err;
  (*(int *)data)++;
  return 0;
}

static void test_webhook_review_tree_bound(void **state) {
  char *b;
  int calls = 0;
  json_t *out, *resp;
  size_t peak, len;
  (void)state;
  /* The cost model against jansson, for the shapes a hostile body would pick
   * and for ordinary ones. */
  b = repeat("", "{}", 20000, "");
  check_cost_bound(b);
  free(b);
  b = repeat("", "[]", 20000, "");
  check_cost_bound(b);
  free(b);
  b = repeat("", "1", 20000, "");
  check_cost_bound(b);
  free(b);
  b = repeat("", "\"\"", 20000, "");
  check_cost_bound(b);
  free(b);
  b = repeat("", "{\"a\":1}", 20000, "");
  check_cost_bound(b);
  free(b);
  b = repeat("", "{\"name\":\"x\",\"value\":\"y\",\"n\":[true,null,-1.5e3]}", 5000, "");
  check_cost_bound(b);
  free(b);
  b = repeat("", "[[[[[[[[[[{\"k\":{\"k\":{}}}]]]]]]]]]]", 2000, "");
  check_cost_bound(b);
  free(b);

  /* A million empty objects in 3 MB: refused before anything is allocated
   * for them (jansson would take about 250 MB), the handler never called. */
  b = repeat("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
             "\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\",\"object\":{\"x\":",
             "{}", 1000000, "}}}");
  len = strlen(b);
  heap_count(true);
  out = kcr__admission_review(b, len, never_called, &calls, 0, "/t");
  peak = atomic_load(&heap_peak);
  heap_count(false);
  assert_non_null(out);
  resp = json_object_get(out, "response");
  assert_true(json_is_false(json_object_get(resp, "allowed")));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(resp, "status"), "code")),
                   413);
  assert_non_null(
      strstr(json_string_value(json_object_get(json_object_get(resp, "status"), "message")),
             "16 times its size"));
  assert_int_equal(calls, 0);
  if (peak > (size_t)64 * 1024)
    fail_msg("refusing a %zu-byte review took %zu bytes of heap", len, peak);
  json_decref(out);

  /* The same body as a ConversionReview: a Failure, as cheaply. */
  free(b);
  b = repeat("{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
             "\"request\":{\"uid\":\"u\",\"desiredAPIVersion\":\"example.com/v2\",\"objects\":",
             "{}", 1000000, "}}");
  heap_count(true);
  out = kcr__conversion_review(b, strlen(b), on_convert, NULL, "/t");
  peak = atomic_load(&heap_peak);
  heap_count(false);
  resp = json_object_get(out, "response");
  assert_string_equal(json_string_value(json_object_get(json_object_get(resp, "result"), "status")),
                      "Failure");
  assert_true(peak <= (size_t)64 * 1024);
  json_decref(out);
  free(b);

  /* An honest review of 20,000 labels (about 700 KB) is decoded and allowed. */
  b = repeat("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
             "\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\",\"object\":{\"metadata\":"
             "{\"name\":\"n\"},\"data\":{\"list\":",
             "{\"name\":\"app.kubernetes.io/component\",\"value\":\"cache-frontend\"}", 10000,
             "}}}}");
  out = kcr__admission_review(b, strlen(b), never_called, &calls, 0, "/t");
  assert_true(json_is_true(json_object_get(json_object_get(out, "response"), "allowed")));
  assert_int_equal(calls, 1);
  json_decref(out);
  free(b);
  assert_int_equal(kcr__review_tree_limit(SIZE_MAX / 2), KCR_REVIEW_TREE_MAX);
}

/* A review of a version this code does not speak is refused, not allowed. */
static void test_webhook_unknown_version(void **state) {
  const char *adm = "{\"apiVersion\":\"admission.k8s.io/v2\",\"kind\":\"AdmissionReview\","
                    "\"request\":{\"uid\":\"u2\",\"operation\":\"CREATE\",\"object\":{}}}";
  const char *conv =
      "{\"apiVersion\":\"apiextensions.k8s.io/v2\",\"kind\":\"ConversionReview\",\"request\":"
      "{\"uid\":\"c2\",\"desiredAPIVersion\":\"example.com/v2\",\"objects\":[]}}";
  int calls = 0;
  json_t *out = kcr__admission_review(adm, strlen(adm), never_called, &calls, 0, "/t"), *resp;
  (void)state;
  resp = json_object_get(out, "response");
  assert_true(json_is_false(json_object_get(resp, "allowed")));
  assert_string_equal(json_string_value(json_object_get(resp, "uid")), "u2");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(resp, "status"), "code")),
                   400);
  assert_int_equal(calls, 0);
  json_decref(out);
  out = kcr__conversion_review(conv, strlen(conv), on_convert, NULL, "/t");
  resp = json_object_get(out, "response");
  assert_string_equal(json_string_value(json_object_get(json_object_get(resp, "result"), "status")),
                      "Failure");
  assert_non_null(
      strstr(json_string_value(json_object_get(json_object_get(resp, "result"), "message")), "v2"));
  json_decref(out);
}

int main(void) {
  /* A server may close before the client is done writing (a refused
   * handshake, a 413): that must be an error return, not a signal. */
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_webhook_patch_diff),
      cmocka_unit_test(test_webhook_validating),
      cmocka_unit_test(test_webhook_mutating_patch),
      cmocka_unit_test(test_webhook_http_edges),
      cmocka_unit_test(test_webhook_body_limit),
      cmocka_unit_test(test_webhook_conversion),
      cmocka_unit_test(test_webhook_conversion_v1beta1),
      cmocka_unit_test(test_webhook_conversion_alloc_failures),
      cmocka_unit_test(test_webhook_review_tree_bound),
      cmocka_unit_test(test_webhook_unknown_version),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
