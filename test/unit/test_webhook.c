/* SPDX-License-Identifier: MIT */
/*
 * test_webhook.c: admission webhooks (kcr/webhook.h) over HTTPS on
 * 127.0.0.1:0 with an OpenSSL client: validating and mutating handlers, the
 * AdmissionReview answers (denial, warnings, JSON Patch), handler errors and
 * malformed reviews answered as denials, request bodies (split, too large,
 * chunked), keep-alive, and the webhook metrics; and the JSON Patch diff.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
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

/* ---- a TLS client ---- */

typedef struct tcli {
  int fd;
  SSL_CTX *ctx;
  SSL *ssl;
  int ok; /* the handshake succeeded */
} tcli;

static void tcli_open(tcli *t, int port) {
  struct sockaddr_in a = {0};
  struct timeval tv = {5, 0};
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

int main(void) {
  /* A server may close before the client is done writing (a refused
   * handshake, a 413): that must be an error return, not a signal. */
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_webhook_patch_diff),
      cmocka_unit_test(test_webhook_validating),
      cmocka_unit_test(test_webhook_mutating_patch),
      cmocka_unit_test(test_webhook_http_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
