/* SPDX-License-Identifier: MIT */
/*
 * test_otlp.c: the OTLP/HTTP JSON encoder and exporter (kcr/otlp.h) against a
 * scripted collector: what a batch looks like on the wire, batching,
 * dropping with a count when the collector is gone or slow, without the
 * span's thread ever waiting, and holding a batch off for the Retry-After of
 * a 429 or 503 (issue 28), within the queue's bound and the shutdown's.
 */
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "httpserver.h"
#include "kcr/clock.h"
#include "kcr/loop.h"
#include "kcr/metrics.h"
#include "kcr/otlp.h"
#include "kcr/trace.h"
#include "otlp/otlp_internal.h"

static void make_span(kcr_span_data *s, int i) {
  memset(s, 0, sizeof(*s));
  memset(s->ctx.trace_id, 0xab, 16);
  memset(s->ctx.span_id, 0x10 + i, 8);
  s->ctx.flags = 1;
  memset(s->parent_span_id, 0xcd, 8);
  snprintf(s->name, sizeof(s->name), "GET apps %d", i);
  s->kind = KCR_SPAN_CLIENT;
  s->start_unix_ns = INT64_C(1700000000000000000) + i;
  s->end_unix_ns = INT64_C(1700000000000000100) + i;
  s->status = KCR_SPAN_STATUS_ERROR;
  snprintf(s->status_message, sizeof(s->status_message), "bad \"quote\" \xff\xfe");
  s->nattrs = 2;
  s->attrs[0].key = "http.request.method";
  snprintf(s->attrs[0].s, sizeof(s->attrs[0].s), "GET");
  s->attrs[1].key = "http.response.status_code";
  s->attrs[1].type = KCR_SPAN_ATTR_INT;
  s->attrs[1].i = 503;
}

static void test_otlp_encode_shape(void **state) {
  kcr_span_data spans[2];
  kcr_trace_options o;
  kcr_buf_t b;
  json_t *root, *span, *rattrs;
  (void)state;
  make_span(&spans[0], 0);
  make_span(&spans[1], 1);
  memset(spans[1].parent_span_id, 0, 8); /* a root */
  spans[1].status = KCR_SPAN_STATUS_UNSET;
  memset(&o, 0, sizeof(o));
  snprintf(o.service_name, sizeof(o.service_name), "kcr-operator");
  o.nresource = 1;
  snprintf(o.resource_keys[0], sizeof(o.resource_keys[0]), "k8s.pod.name");
  snprintf(o.resource_values[0], sizeof(o.resource_values[0]), "op-1");
  kcr_buf_init(&b, 1 << 20);
  assert_int_equal(kcr_otlp_encode(spans, 2, &o, &b), 0);
  root = json_loads(kcr_buf_cstr(&b), 0, NULL);
  assert_non_null(root);
  rattrs = json_object_get(
      json_object_get(json_array_get(json_object_get(root, "resourceSpans"), 0), "resource"),
      "attributes");
  assert_int_equal(json_array_size(rattrs), 2);
  assert_string_equal(json_string_value(json_object_get(json_array_get(rattrs, 0), "key")),
                      "service.name");
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(json_array_get(rattrs, 0), "value"), "stringValue")),
                      "kcr-operator");
  span = json_array_get(
      json_object_get(
          json_array_get(json_object_get(json_array_get(json_object_get(root, "resourceSpans"), 0),
                                         "scopeSpans"),
                         0),
          "spans"),
      0);
  assert_non_null(span);
  assert_string_equal(json_string_value(json_object_get(span, "traceId")),
                      "abababababababababababababababab");
  assert_string_equal(json_string_value(json_object_get(span, "spanId")), "1010101010101010");
  assert_string_equal(json_string_value(json_object_get(span, "parentSpanId")), "cdcdcdcdcdcdcdcd");
  assert_string_equal(json_string_value(json_object_get(span, "startTimeUnixNano")),
                      "1700000000000000000");
  assert_int_equal(json_integer_value(json_object_get(span, "kind")), 3);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(span, "status"), "code")), 2);
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(span, "status"), "message")),
      "bad \"quote\" ??");
  assert_string_equal(
      json_string_value(json_object_get(
          json_object_get(json_array_get(json_object_get(span, "attributes"), 1), "value"),
          "intValue")),
      "503");
  span = json_array_get(
      json_object_get(
          json_array_get(json_object_get(json_array_get(json_object_get(root, "resourceSpans"), 0),
                                         "scopeSpans"),
                         0),
          "spans"),
      1);
  assert_null(json_object_get(span, "parentSpanId"));
  assert_int_equal(json_object_size(json_object_get(span, "status")), 0);
  json_decref(root);
  kcr_buf_free(&b);
}

/* ---- a scripted collector ---- */

typedef struct collector {
  pthread_mutex_t mu;
  int posts;
  size_t spans;
  char content_type[64];
  char path[64];
  int stall_ms; /* > 0: never answer */
} collector_t;

/* count_spans: how many spans an export request carries. */
static size_t count_spans(const kcr_test_http_request *req) {
  json_t *root = json_loadb(req->body, req->body_len, 0, NULL);
  size_t n = 0;
  json_t *rs;
  size_t i;
  json_array_foreach(json_object_get(root, "resourceSpans"), i, rs) {
    json_t *ss;
    size_t k;
    json_array_foreach(json_object_get(rs, "scopeSpans"), k, ss) n +=
        json_array_size(json_object_get(ss, "spans"));
  }
  json_decref(root);
  return n;
}

static void on_post(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  collector_t *c = data;
  const char *ct = strstr(req->headers, "Content-Type: ");
  size_t n = count_spans(req);
  pthread_mutex_lock(&c->mu);
  c->posts++;
  c->spans += n;
  snprintf(c->path, sizeof(c->path), "%.63s", req->path);
  if (ct)
    sscanf(ct + strlen("Content-Type: "), "%63[^\r\n]", c->content_type);
  pthread_mutex_unlock(&c->mu);
  if (c->stall_ms) {
    resp->action = KCR_TEST_HTTP_STALL;
    resp->stall_ms = c->stall_ms;
    return;
  }
  resp->status = 200;
  resp->body = "{}";
}

static void trace_on(const char *endpoint) {
  kcr_trace_options o;
  memset(&o, 0, sizeof(o));
  o.enabled = true;
  o.sampler = KCR_SAMPLER_ALWAYS_ON;
  snprintf(o.endpoint, sizeof(o.endpoint), "%s", endpoint);
  kcr_trace_configure(&o);
}

static void spans(int n) {
  for (int i = 0; i < n; i++) {
    kcr_span_t *s = kcr_span_start("work", KCR_SPAN_INTERNAL, NULL);
    kcr_span_set_int(s, "i", i);
    kcr_span_end(s);
  }
}

static double metric(kcr_metrics_registry_t *r, const char *name, const char *label) {
  kcr_metric_t *m = kcr_metrics_find(r, name);
  assert_non_null(m);
  return kcr_metric_value(label ? kcr_metric_withv(m, label, NULL) : kcr_metric_withv(m, NULL));
}

static void test_otlp_exporter_batches_to_collector(void **state) {
  collector_t col = {PTHREAD_MUTEX_INITIALIZER, 0, 0, "", "", 0};
  kcr_test_http_t *srv;
  kcr_loop_t *loop;
  kcr_metrics_registry_t *reg;
  kcr_otlp_exporter_t *e;
  kcr_otlp_exporter_options eo;
  kcr_otlp_exporter_stats st;
  char url[64];
  (void)state;
  assert_int_equal(kcr_test_http_start(on_post, &col, &srv), 0);
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/", kcr_test_http_port(srv));
  trace_on(url);
  assert_int_equal(kcr_loop_create(&loop, NULL), 0);
  assert_int_equal(kcr_loop_start(loop, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&reg, NULL), 0);
  memset(&eo, 0, sizeof(eo));
  eo.loop = loop;
  eo.max_batch = 10;
  eo.interval_ns = 60 * KCR_NSEC_PER_SEC; /* only full batches and flushes send */
  eo.metrics = reg;
  assert_int_equal(kcr_otlp_exporter_create(&eo, &e, NULL), 0);
  spans(25);
  assert_int_equal(kcr_otlp_exporter_flush(e, 10 * KCR_NSEC_PER_SEC), 0);
  kcr_otlp_exporter_get_stats(e, &st);
  assert_int_equal(st.exported, 25);
  assert_int_equal(st.dropped_queue_full + st.dropped_failed, 0);
  assert_int_equal(col.spans, 25);
  assert_true(col.posts >= 3); /* batches of at most 10 */
  assert_string_equal(col.path, "/v1/traces");
  assert_string_equal(col.content_type, "application/json");
  assert_true(metric(reg, "kcr_trace_spans_exported_total", NULL) == 25.0);
  /* destroy sends what is left */
  spans(3);
  kcr_otlp_exporter_destroy(e);
  assert_int_equal(col.spans, 28);
  kcr_trace_configure(NULL);
  kcr_loop_stop(loop);
  kcr_loop_destroy(loop);
  kcr_metrics_registry_destroy(reg);
  kcr_test_http_stop(srv);
}

static int64_t now_ns(void) {
  return kcr_clock_now(kcr_clock_system());
}

static void test_otlp_exporter_drops_when_collector_gone(void **state) {
  kcr_test_http_t *srv;
  kcr_loop_t *loop;
  kcr_metrics_registry_t *reg;
  kcr_otlp_exporter_t *e;
  kcr_otlp_exporter_options eo;
  kcr_otlp_exporter_stats st;
  collector_t col = {PTHREAD_MUTEX_INITIALIZER, 0, 0, "", "", 0};
  char url[64];
  int64_t t0, dt;
  (void)state;
  /* a port that was just free: nothing listens there */
  assert_int_equal(kcr_test_http_start(on_post, &col, &srv), 0);
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", kcr_test_http_port(srv));
  kcr_test_http_stop(srv);
  trace_on(url);
  assert_int_equal(kcr_loop_create(&loop, NULL), 0);
  assert_int_equal(kcr_loop_start(loop, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&reg, NULL), 0);
  memset(&eo, 0, sizeof(eo));
  eo.loop = loop;
  eo.max_queue = 8;
  eo.max_batch = 4;
  eo.interval_ns = 60 * KCR_NSEC_PER_SEC;
  eo.timeout_ns = 2 * KCR_NSEC_PER_SEC;
  eo.metrics = reg;
  assert_int_equal(kcr_otlp_exporter_create(&eo, &e, NULL), 0);
  t0 = now_ns();
  spans(100);
  dt = now_ns() - t0;
  assert_true(dt < KCR_NSEC_PER_SEC); /* the spans' thread never waited */
  assert_int_equal(kcr_otlp_exporter_flush(e, 10 * KCR_NSEC_PER_SEC), 0);
  kcr_otlp_exporter_get_stats(e, &st);
  assert_int_equal(st.exported, 0);
  assert_true(st.dropped_failed > 0);
  assert_true(st.dropped_queue_full > 0);
  /* after the last pass every span is accounted for, as a drop */
  kcr_otlp_exporter_destroy(e);
  assert_true(metric(reg, "kcr_trace_spans_dropped_total", "export_failed") +
                  metric(reg, "kcr_trace_spans_dropped_total", "queue_full") ==
              100.0);
  assert_true(metric(reg, "kcr_trace_spans_dropped_total", "queue_full") ==
              (double)st.dropped_queue_full);
  assert_true(metric(reg, "kcr_trace_spans_exported_total", NULL) == 0.0);
  kcr_trace_configure(NULL);
  kcr_loop_stop(loop);
  kcr_loop_destroy(loop);
  kcr_metrics_registry_destroy(reg);
}

static void test_otlp_exporter_slow_collector_does_not_block(void **state) {
  collector_t col = {PTHREAD_MUTEX_INITIALIZER, 0, 0, "", "", 3000};
  kcr_test_http_t *srv;
  kcr_loop_t *loop;
  kcr_otlp_exporter_t *e;
  kcr_otlp_exporter_options eo;
  kcr_otlp_exporter_stats st;
  char url[64];
  int64_t t0, dt;
  (void)state;
  assert_int_equal(kcr_test_http_start(on_post, &col, &srv), 0);
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", kcr_test_http_port(srv));
  trace_on(url);
  assert_int_equal(kcr_loop_create(&loop, NULL), 0);
  assert_int_equal(kcr_loop_start(loop, NULL), 0);
  memset(&eo, 0, sizeof(eo));
  eo.loop = loop;
  eo.max_queue = 16;
  eo.max_batch = 4;
  eo.interval_ns = 60 * KCR_NSEC_PER_SEC;
  eo.timeout_ns = KCR_NSEC_PER_SEC; /* the stalled request times out after 1 s */
  assert_int_equal(kcr_otlp_exporter_create(&eo, &e, NULL), 0);
  t0 = now_ns();
  for (int round = 0; round < 20; round++) {
    struct timespec ts = {0, 20L * 1000 * 1000};
    spans(10);
    nanosleep(&ts, NULL);
  }
  dt = now_ns() - t0;
  assert_true(dt < 2 * KCR_NSEC_PER_SEC); /* 20 x 20 ms of sleep, no waiting on the exporter */
  kcr_otlp_exporter_get_stats(e, &st);
  assert_true(st.dropped_queue_full > 0);
  assert_true(st.queued <= 16);
  kcr_otlp_exporter_destroy(e);
  kcr_trace_configure(NULL);
  kcr_loop_stop(loop);
  kcr_loop_destroy(loop);
  kcr_test_http_stop(srv);
}

/* ---- Retry-After ---- */

static int64_t ra(const char *value, int64_t now_s, int32_t now_nsec) {
  kcr_time_t now = {now_s, now_nsec};
  return kcr__otlp_retry_after_ns(value, now);
}

static void test_otlp_retry_after_parse(void **state) {
  const int64_t s = KCR_NSEC_PER_SEC, cap = KCR__OTLP_RETRY_AFTER_MAX_NS;
  const int64_t t = INT64_C(784111770); /* Sun, 06 Nov 1994 08:49:30 GMT */
  (void)state;
  /* delta-seconds, with whitespace around */
  assert_true(ra("0", t, 0) == 0);
  assert_true(ra("1", t, 0) == s);
  assert_true(ra("  7\t", t, 0) == 7 * s);
  assert_true(ra(" 12\r\n", t, 0) == 12 * s);
  assert_true(ra("29", t, 0) == 29 * s);
  /* capped, overflow included */
  assert_true(ra("30", t, 0) == cap);
  assert_true(ra("86400", t, 0) == cap);
  assert_true(ra("99999999999999999999999999999999", t, 0) == cap);
  /* malformed or negative: none (the backoff) */
  assert_true(ra(NULL, t, 0) == -1);
  assert_true(ra("", t, 0) == -1);
  assert_true(ra("  \r\n", t, 0) == -1);
  assert_true(ra("-1", t, 0) == -1);
  assert_true(ra("+1", t, 0) == -1);
  assert_true(ra("1.5", t, 0) == -1);
  assert_true(ra("1 2", t, 0) == -1);
  assert_true(ra("5 seconds", t, 0) == -1);
  assert_true(ra("5s", t, 0) == -1);
  assert_true(ra("soon", t, 0) == -1);
  /* the three HTTP-date forms, 7 s ahead */
  assert_true(ra("Sun, 06 Nov 1994 08:49:37 GMT", t, 0) == 7 * s);
  assert_true(ra(" Sun, 06 Nov 1994 08:49:37 GMT \r\n", t, 0) == 7 * s);
  assert_true(ra("Sunday, 06-Nov-94 08:49:37 GMT", t, 0) == 7 * s);
  assert_true(ra("Sun Nov  6 08:49:37 1994", t, 0) == 7 * s);
  assert_true(ra("Sun Nov 06 08:49:37 1994", t, 0) == 7 * s);
  /* the fraction of now counts */
  assert_true(ra("Sun, 06 Nov 1994 08:49:37 GMT", t, 500000000) == 6 * s + s / 2);
  /* now, past, far ahead (capped) */
  assert_true(ra("Sun, 06 Nov 1994 08:49:30 GMT", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 1994 08:49:29 GMT", t, 0) == -1);
  assert_true(ra("Sat, 05 Nov 1994 08:49:37 GMT", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 1994 08:50:00 GMT", t, 0) == cap);
  assert_true(ra("Fri, 31 Dec 9999 23:59:59 GMT", t, 0) == cap);
  /* leap days and leap seconds */
  assert_true(ra("Thu, 29 Feb 1996 00:00:05 GMT", INT64_C(825552000), 0) == 5 * s);
  assert_true(ra("Fri, 29 Feb 2000 00:00:00 GMT", t, 0) == cap);
  assert_true(ra("Sun, 06 Nov 1994 08:49:60 GMT", INT64_C(784111790), 0) == 10 * s);
  /* RFC 850's two-digit year: within 50 years ahead, else the century before */
  assert_true(ra("Sunday, 01-Jun-25 00:00:00 GMT", INT64_C(1717200000), 0) == cap); /* 2025 */
  assert_true(ra("Sunday, 01-Jun-94 00:00:00 GMT", INT64_C(1717200000), 0) == -1);  /* 1994 */
  /* not dates */
  assert_true(ra("Sun, 31 Nov 1994 08:49:37 GMT", t, 0) == -1);
  assert_true(ra("Sun, 29 Feb 1995 08:49:37 GMT", t, 0) == -1);
  assert_true(ra("Sun, 00 Nov 1994 08:49:37 GMT", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 1994 24:00:00 GMT", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 1994 08:61:00 GMT", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 1994 08:49:37 UTC", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 1994 08:49:37 GMT+1", t, 0) == -1);
  assert_true(ra("Sun, 06 nov 1994 08:49:37 GMT", t, 0) == -1);
  assert_true(ra("Xyz, 06 Nov 1994 08:49:37 GMT", t, 0) == -1);
  assert_true(ra("Sun, 6 Nov 1994 08:49:37 GMT", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 94 08:49:37 GMT", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 1994 8:49:37 GMT", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 1994", t, 0) == -1);
  assert_true(ra("Sun, 06 Nov 1994 08:49:37 GMT and a much longer tail", t, 0) == -1);
  assert_true(ra("Sun,06 Nov 1994 08:49:37 GMT", t, 0) == -1);
  assert_true(ra("Sun Nov  6 08:49:37 94", t, 0) == -1);
}

/*
 * A throttling collector: the first `throttle` posts get `status` with a
 * Retry-After of `retry_after` ("": none), or an IMF-fixdate `date_ahead_s`
 * seconds ahead of the moment it answers; later ones get 200. It notes when
 * each post came.
 */
typedef struct throttler {
  pthread_mutex_t mu;
  int status, throttle, date_ahead_s;
  const char *retry_after;
  int posts;
  size_t delivered;
  int64_t at_ns[16];
} throttler_t;

static void on_throttled_post(const kcr_test_http_request *req, kcr_test_http_response *resp,
                              void *data) {
  throttler_t *c = data;
  size_t n = count_spans(req);
  int post;
  pthread_mutex_lock(&c->mu);
  post = c->posts++;
  if (post < 16)
    c->at_ns[post] = now_ns();
  if (post >= c->throttle)
    c->delivered += n;
  pthread_mutex_unlock(&c->mu);
  resp->body = "{}";
  if (post >= c->throttle) {
    resp->status = 200;
    return;
  }
  resp->status = c->status;
  if (c->date_ahead_s > 0) {
    time_t at = time(NULL) + c->date_ahead_s;
    struct tm tm;
    char date[64];
    gmtime_r(&at, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    snprintf(resp->headers, sizeof(resp->headers), "Retry-After: %s\r\n", date);
  } else if (c->retry_after[0]) {
    snprintf(resp->headers, sizeof(resp->headers), "Retry-After: %s\r\n", c->retry_after);
  }
}

/* rig: a throttler, a loop and an exporter of a small queue sending it spans. */
typedef struct rig {
  throttler_t col;
  kcr_test_http_t *srv;
  kcr_loop_t *loop;
  kcr_metrics_registry_t *reg;
  kcr_otlp_exporter_t *e;
} rig_t;

static void rig_start(rig_t *r, int status, int throttle, const char *retry_after,
                      int date_ahead_s) {
  kcr_otlp_exporter_options eo;
  char url[64];
  memset(r, 0, sizeof(*r));
  pthread_mutex_init(&r->col.mu, NULL);
  r->col.status = status;
  r->col.throttle = throttle;
  r->col.retry_after = retry_after;
  r->col.date_ahead_s = date_ahead_s;
  assert_int_equal(kcr_test_http_start(on_throttled_post, &r->col, &r->srv), 0);
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", kcr_test_http_port(r->srv));
  trace_on(url);
  assert_int_equal(kcr_loop_create(&r->loop, NULL), 0);
  assert_int_equal(kcr_loop_start(r->loop, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&r->reg, NULL), 0);
  memset(&eo, 0, sizeof(eo));
  eo.loop = r->loop;
  eo.max_queue = 8;
  eo.max_batch = 4;
  eo.interval_ns = 60 * KCR_NSEC_PER_SEC; /* only full batches and flushes send */
  eo.timeout_ns = 5 * KCR_NSEC_PER_SEC;
  eo.metrics = r->reg;
  assert_int_equal(kcr_otlp_exporter_create(&eo, &r->e, NULL), 0);
}

/* rig_stop destroys the exporter (when the test has not) and the rest. */
static void rig_stop(rig_t *r) {
  kcr_otlp_exporter_destroy(r->e);
  kcr_trace_configure(NULL);
  kcr_loop_stop(r->loop);
  kcr_loop_destroy(r->loop);
  kcr_metrics_registry_destroy(r->reg);
  kcr_test_http_stop(r->srv);
  pthread_mutex_destroy(&r->col.mu);
}

/* retry_gap: three spans, throttled once with status and the Retry-After of
 * rig_start, are delivered on the retry; returns the gap between the posts. */
static int64_t retry_gap(int status, const char *retry_after, int date_ahead_s) {
  rig_t r;
  kcr_otlp_exporter_stats st;
  int64_t gap;
  rig_start(&r, status, 1, retry_after, date_ahead_s);
  spans(3);
  assert_int_equal(kcr_otlp_exporter_flush(r.e, 20 * KCR_NSEC_PER_SEC), 0);
  kcr_otlp_exporter_get_stats(r.e, &st);
  assert_int_equal(r.col.posts, 2);
  assert_int_equal(r.col.delivered, 3);
  assert_int_equal(st.exported, 3);
  assert_int_equal(st.throttled, 1);
  assert_int_equal(st.requests, 2);
  assert_int_equal(st.dropped_failed + st.dropped_queue_full, 0);
  gap = r.col.at_ns[1] - r.col.at_ns[0];
  rig_stop(&r);
  return gap;
}

/* Retry-After: 2 is waited, not the backoff's 1 s (at most 1.2 s). */
static void test_otlp_exporter_honours_retry_after_seconds(void **state) {
  (void)state;
  assert_true(retry_gap(429, "2", 0) >= 1900 * KCR_NSEC_PER_MSEC);
}

/* an HTTP-date 3 s ahead (whole seconds: more than 2 s from the first post) */
static void test_otlp_exporter_honours_retry_after_date(void **state) {
  (void)state;
  assert_true(retry_gap(503, "", 3) >= 1900 * KCR_NSEC_PER_MSEC);
}

/* A malformed Retry-After is the backoff's 1 s (plus jitter), not 0 and not
 * the 25 s it would read as: the bound sits far from both, so that a busy
 * machine cannot cross it. */
static void test_otlp_exporter_malformed_retry_after_backs_off(void **state) {
  int64_t gap = retry_gap(429, "25 seconds", 0);
  (void)state;
  assert_true(gap >= 950 * KCR_NSEC_PER_MSEC);
  assert_true(gap < 15 * KCR_NSEC_PER_SEC);
}

/* A day's Retry-After: the batch is held (capped at 30 s), spans keep queueing
 * into the bounded queue and dropping past it, a flush returns at its own
 * deadline and a shutdown gives the batch up at once. */
static void test_otlp_exporter_caps_retry_after(void **state) {
  rig_t r;
  kcr_otlp_exporter_stats st;
  int64_t t0, dt;
  (void)state;
  rig_start(&r, 429, 1000, "86400", 0);
  spans(3);
  t0 = now_ns();
  assert_int_equal(kcr_otlp_exporter_flush(r.e, KCR_NSEC_PER_SEC), KCR_ETIMEDOUT);
  dt = now_ns() - t0;
  assert_true(dt >= 900 * KCR_NSEC_PER_MSEC);
  assert_true(dt < 10 * KCR_NSEC_PER_SEC);
  t0 = now_ns();
  spans(100);
  /* the spans' thread never waited: blocked, it would wait out the 30 s cap */
  assert_true(now_ns() - t0 < 10 * KCR_NSEC_PER_SEC);
  kcr_otlp_exporter_get_stats(r.e, &st);
  assert_int_equal(st.throttled, 1);
  assert_int_equal(st.requests, 1); /* still holding off */
  assert_int_equal(st.queued, 8);
  assert_int_equal(st.dropped_queue_full, 92);
  assert_int_equal(st.exported, 0);
  t0 = now_ns();
  kcr_otlp_exporter_destroy(r.e); /* the last pass is throttled too: dropped */
  dt = now_ns() - t0;
  r.e = NULL;
  assert_true(dt < 10 * KCR_NSEC_PER_SEC); /* the cap is 30 s; 86400 would be a day */
  assert_true(metric(r.reg, "kcr_trace_spans_dropped_total", "export_failed") == 11.0);
  assert_true(metric(r.reg, "kcr_trace_spans_dropped_total", "queue_full") == 92.0);
  assert_true(metric(r.reg, "kcr_trace_spans_exported_total", NULL) == 0.0);
  assert_int_equal(r.col.delivered, 0);
  rig_stop(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_otlp_encode_shape),
      cmocka_unit_test(test_otlp_exporter_batches_to_collector),
      cmocka_unit_test(test_otlp_exporter_drops_when_collector_gone),
      cmocka_unit_test(test_otlp_exporter_slow_collector_does_not_block),
      cmocka_unit_test(test_otlp_retry_after_parse),
      cmocka_unit_test(test_otlp_exporter_honours_retry_after_seconds),
      cmocka_unit_test(test_otlp_exporter_honours_retry_after_date),
      cmocka_unit_test(test_otlp_exporter_malformed_retry_after_backs_off),
      cmocka_unit_test(test_otlp_exporter_caps_retry_after),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
