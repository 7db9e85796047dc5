/* SPDX-License-Identifier: MIT */
/*
 * test_trace.c: the span core (kcr/trace.h): traceparent parsing and
 * formatting, the sampler, the OTEL_* variables, span nesting per thread,
 * the sink, trace ids in log lines, and the client's request spans and
 * traceparent header against a scripted server.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "controller/controller_internal.h"
#include "httpserver.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/controller.h"
#include "kcr/log.h"
#include "kcr/rand.h"
#include "kcr/trace.h"
#include "testutil.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

/* ---- a sink that keeps what it gets ---- */

#define MAX_KEPT 64
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static kcr_span_data kept[MAX_KEPT];
static size_t nkept;

static void on_keep(const kcr_span_data *s, void *data) {
  (void)data;
  pthread_mutex_lock(&kept_mu);
  if (nkept < MAX_KEPT)
    kept[nkept++] = *s;
  pthread_mutex_unlock(&kept_mu);
}

static void trace_on(kcr_trace_sampler sampler, double ratio) {
  kcr_trace_options o;
  memset(&o, 0, sizeof(o));
  o.enabled = true;
  o.sampler = sampler;
  o.ratio = ratio;
  kcr_trace_configure(&o);
  nkept = 0;
  kcr_trace_set_sink(on_keep, NULL);
}

static int teardown(void **state) {
  (void)state;
  kcr_trace_set_sink(NULL, NULL);
  kcr_trace_configure(NULL);
  return 0;
}

static const kcr_span_attr *attr(const kcr_span_data *s, const char *key) {
  for (size_t i = 0; i < s->nattrs; i++)
    if (strcmp(s->attrs[i].key, key) == 0)
      return &s->attrs[i];
  return NULL;
}

/* ---- traceparent ---- */

static void test_trace_traceparent_round_trip(void **state) {
  kcr_span_context c;
  char out[KCR_TRACEPARENT_BUFSIZE], hex[KCR_TRACE_ID_HEX_BUFSIZE];
  (void)state;
  assert_int_equal(kcr_traceparent_parse(TP, strlen(TP), &c), 0);
  assert_true(c.remote);
  assert_int_equal(c.flags, 1);
  kcr_trace_id_hex(c.trace_id, hex);
  assert_string_equal(hex, "4bf92f3577b34da6a3ce929d0e0e4736");
  assert_int_equal(kcr_traceparent_format(&c, out), 0);
  assert_string_equal(out, TP);
  /* spaces around are trimmed (a header value) */
  assert_int_equal(kcr_traceparent_parse("  " TP "\t", strlen(TP) + 3, &c), 0);
  /* a later version may carry more fields after a '-' */
  {
    const char *later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more";
    assert_int_equal(kcr_traceparent_parse(later, strlen(later), &c), 0);
    assert_int_equal(c.flags, 0);
  }
}

static void test_trace_traceparent_refuses_bad_input(void **state) {
  static const char *const bad[] = {
      "",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",    /* short */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* 00 with more */
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace id */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero span id */
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* uppercase */
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* separator */
      "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   /* not hex */
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  /* later: no '-' */
  };
  kcr_span_context c;
  (void)state;
  memset(&c, 0x5a, sizeof(c));
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_int_equal(kcr_traceparent_parse(bad[i], strlen(bad[i]), &c), KCR_EINVAL);
  assert_int_equal(c.flags, 0x5a); /* untouched */
  memset(&c, 0, sizeof(c));
  {
    char out[KCR_TRACEPARENT_BUFSIZE];
    assert_int_equal(kcr_traceparent_format(&c, out), KCR_EINVAL);
    assert_string_equal(out, "");
  }
}

/* ---- spans ---- */

static void test_trace_off_by_default(void **state) {
  (void)state;
  kcr_trace_configure(NULL);
  assert_false(kcr_trace_enabled());
  assert_null(kcr_span_start("x", KCR_SPAN_INTERNAL, NULL));
  assert_false(kcr_trace_current(NULL));
  kcr_span_end(NULL);
  kcr_span_set_str(NULL, "k", "v");
}

static void test_trace_spans_nest_per_thread(void **state) {
  kcr_span_context outer_ctx, cur;
  kcr_span_t *outer, *inner;
  (void)state;
  trace_on(KCR_SAMPLER_PARENTBASED_ALWAYS_ON, 0);
  outer = kcr_span_start("outer", KCR_SPAN_INTERNAL, NULL);
  assert_non_null(outer);
  kcr_span_context_of(outer, &outer_ctx);
  assert_true(kcr_trace_current(&cur));
  assert_memory_equal(cur.span_id, outer_ctx.span_id, 8);
  inner = kcr_span_start("inner", KCR_SPAN_CLIENT, NULL);
  kcr_span_set_str(inner, "k", "v1");
  kcr_span_set_str(inner, "k", "v2"); /* last value wins */
  kcr_span_set_int(inner, "n", -7);
  kcr_span_set_status(inner, KCR_SPAN_STATUS_ERROR, "broke");
  kcr_span_end(inner);
  assert_true(kcr_trace_current(&cur));
  assert_memory_equal(cur.span_id, outer_ctx.span_id, 8); /* back to the parent */
  kcr_span_end(outer);
  assert_false(kcr_trace_current(NULL));

  assert_int_equal(nkept, 2);
  assert_string_equal(kept[0].name, "inner");
  assert_int_equal(kept[0].kind, KCR_SPAN_CLIENT);
  assert_memory_equal(kept[0].ctx.trace_id, outer_ctx.trace_id, 16);
  assert_memory_equal(kept[0].parent_span_id, outer_ctx.span_id, 8);
  assert_int_equal(kept[0].nattrs, 2);
  assert_string_equal(attr(&kept[0], "k")->s, "v2");
  assert_int_equal(attr(&kept[0], "n")->i, -7);
  assert_int_equal(kept[0].status, KCR_SPAN_STATUS_ERROR);
  assert_string_equal(kept[0].status_message, "broke");
  assert_true(kept[0].end_unix_ns >= kept[0].start_unix_ns);
  assert_string_equal(kept[1].name, "outer");
  {
    static const uint8_t zero[8];
    assert_memory_equal(kept[1].parent_span_id, zero, 8);
  }
}

static void test_trace_remote_parent_is_continued(void **state) {
  kcr_span_context parent;
  kcr_span_t *s;
  (void)state;
  trace_on(KCR_SAMPLER_PARENTBASED_ALWAYS_ON, 0);
  assert_int_equal(kcr_traceparent_parse(TP, strlen(TP), &parent), 0);
  s = kcr_span_start("reconcile", KCR_SPAN_INTERNAL, &parent);
  kcr_span_end(s);
  assert_int_equal(nkept, 1);
  assert_memory_equal(kept[0].ctx.trace_id, parent.trace_id, 16);
  assert_memory_equal(kept[0].parent_span_id, parent.span_id, 8);

  /* an unsampled remote parent: parent-based sampling records nothing, but
   * the context still propagates with the flag cleared */
  parent.flags = 0;
  s = kcr_span_start("reconcile", KCR_SPAN_INTERNAL, &parent);
  {
    kcr_span_context cur;
    char tp[KCR_TRACEPARENT_BUFSIZE];
    assert_true(kcr_trace_current(&cur));
    assert_int_equal(kcr_traceparent_format(&cur, tp), 0);
    assert_string_equal(tp + 53, "00");
    assert_memory_equal(tp + 3, "4bf92f3577b34da6a3ce929d0e0e4736", 32);
  }
  kcr_span_end(s);
  assert_int_equal(nkept, 1);
}

static void test_trace_samplers(void **state) {
  int sampled = 0;
  (void)state;
  trace_on(KCR_SAMPLER_ALWAYS_OFF, 0);
  kcr_span_end(kcr_span_start("a", KCR_SPAN_INTERNAL, NULL));
  assert_int_equal(nkept, 0);
  trace_on(KCR_SAMPLER_TRACEIDRATIO, 0.25);
  for (int i = 0; i < 2000; i++)
    kcr_span_end(kcr_span_start("r", KCR_SPAN_INTERNAL, NULL));
  pthread_mutex_lock(&kept_mu);
  sampled = (int)nkept; /* capped at MAX_KEPT: count via a second pass below */
  pthread_mutex_unlock(&kept_mu);
  assert_true(sampled > 0);
  /* the ratio decides from the trace id alone: a low id is in, a high one out */
  {
    kcr_span_context lo, hi;
    const char *tlo = "00-4bf92f3577b34da6000000000000000a-00f067aa0ba902b7-00";
    const char *thi = "00-4bf92f3577b34da6ffffffffffffff0a-00f067aa0ba902b7-00";
    trace_on(KCR_SAMPLER_PARENTBASED_TRACEIDRATIO, 0.25);
    assert_int_equal(kcr_traceparent_parse(tlo, strlen(tlo), &lo), 0);
    assert_int_equal(kcr_traceparent_parse(thi, strlen(thi), &hi), 0);
    /* parent-based: an unsampled parent wins over the ratio */
    kcr_span_end(kcr_span_start("p", KCR_SPAN_INTERNAL, &lo));
    assert_int_equal(nkept, 0);
    trace_on(KCR_SAMPLER_TRACEIDRATIO, 0.25);
    kcr_span_end(kcr_span_start("p", KCR_SPAN_INTERNAL, &lo));
    assert_int_equal(nkept, 1);
    kcr_span_end(kcr_span_start("p", KCR_SPAN_INTERNAL, &hi));
    assert_int_equal(nkept, 1);
  }
}

static void test_trace_options_from_env(void **state) {
  kcr_trace_options o;
  (void)state;
  memset(&o, 0, sizeof(o));
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", 1);
  setenv("OTEL_TRACES_SAMPLER", "traceidratio", 1);
  setenv("OTEL_TRACES_SAMPLER_ARG", "0.5", 1);
  setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=fromattrs, k8s.pod.name=op%2D1,bad", 1);
  unsetenv("OTEL_SERVICE_NAME");
  unsetenv("OTEL_SDK_DISABLED");
  assert_int_equal(kcr_trace_options_from_env(&o), 0);
  assert_true(o.enabled);
  assert_string_equal(o.endpoint, "http://127.0.0.1:4318");
  assert_int_equal(o.sampler, KCR_SAMPLER_TRACEIDRATIO);
  assert_true(o.ratio == 0.5);
  assert_int_equal(o.nresource, 2);
  assert_string_equal(o.resource_keys[1], "k8s.pod.name");
  assert_string_equal(o.resource_values[1], "op-1");
  assert_string_equal(o.service_name, "fromattrs");
  assert_int_equal(o.export_interval_ns, 0);
  setenv("OTEL_BSP_SCHEDULE_DELAY", "200", 1);
  setenv("OTEL_BSP_MAX_QUEUE_SIZE", "64", 1);
  setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "-1", 1);
  assert_int_equal(kcr_trace_options_from_env(&o), KCR_EINVAL);
  assert_int_equal(o.export_interval_ns, 200 * KCR_NSEC_PER_MSEC);
  assert_int_equal(o.max_queue, 64);
  assert_int_equal(o.max_batch, 0);
  unsetenv("OTEL_BSP_SCHEDULE_DELAY");
  unsetenv("OTEL_BSP_MAX_QUEUE_SIZE");
  unsetenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE");
  setenv("OTEL_SERVICE_NAME", "kcr-operator", 1);
  setenv("OTEL_TRACES_SAMPLER", "sometimes", 1);
  memset(&o, 0, sizeof(o));
  assert_int_equal(kcr_trace_options_from_env(&o), KCR_EINVAL);
  assert_string_equal(o.service_name, "kcr-operator");
  setenv("OTEL_SDK_DISABLED", "true", 1);
  memset(&o, 0, sizeof(o));
  kcr_trace_options_from_env(&o);
  assert_false(o.enabled);
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  unsetenv("OTEL_TRACES_SAMPLER");
  unsetenv("OTEL_TRACES_SAMPLER_ARG");
  unsetenv("OTEL_RESOURCE_ATTRIBUTES");
  unsetenv("OTEL_SERVICE_NAME");
  unsetenv("OTEL_SDK_DISABLED");
  memset(&o, 0, sizeof(o));
  kcr_trace_options_from_env(&o);
  assert_false(o.enabled); /* nothing set: off */
}

/* ---- logs ---- */

static char last_line[4096];

static void on_line(const char *line, size_t len, void *data) {
  (void)data;
  snprintf(last_line, sizeof(last_line), "%.*s", (int)len, line);
}

static void test_trace_log_lines_carry_ids(void **state) {
  kcr_log_options lo;
  kcr_span_context ctx;
  char want[128], tid[KCR_TRACE_ID_HEX_BUFSIZE], sid[KCR_SPAN_ID_HEX_BUFSIZE];
  kcr_span_t *s;
  (void)state;
  memset(&lo, 0, sizeof(lo));
  lo.level = KCR_LOG_INFO;
  lo.write = on_line;
  kcr_log_configure(&lo);
  trace_on(KCR_SAMPLER_ALWAYS_ON, 0);
  kcr_log(KCR_LOG_INFO, "t", "outside");
  assert_null(strstr(last_line, "trace_id"));
  s = kcr_span_start("s", KCR_SPAN_INTERNAL, NULL);
  kcr_span_context_of(s, &ctx);
  kcr_trace_id_hex(ctx.trace_id, tid);
  kcr_span_id_hex(ctx.span_id, sid);
  kcr_log_kv(KCR_LOG_INFO, "t", "inside", "k", "v", NULL);
  snprintf(want, sizeof(want), "\"k\":\"v\",\"trace_id\":\"%s\",\"span_id\":\"%s\"}", tid, sid);
  assert_non_null(strstr(last_line, want));
  kcr_span_end(s);
  kcr_log_configure(NULL);
}

/* ---- the client: request spans and the traceparent header ---- */

typedef struct seen {
  pthread_mutex_t mu;
  char traceparent[128];
  int calls;
} seen_t;

static void on_request(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  seen_t *s = data;
  const char *h = strstr(req->headers, "traceparent: ");
  pthread_mutex_lock(&s->mu);
  s->calls++;
  s->traceparent[0] = '\0';
  if (h)
    sscanf(h + strlen("traceparent: "), "%127[^\r\n]", s->traceparent);
  pthread_mutex_unlock(&s->mu);
  if (s->calls == 1) { /* one retry first */
    resp->status = 503;
    snprintf(resp->headers, sizeof(resp->headers), "Retry-After: 0\r\n");
    resp->body = "{}";
    return;
  }
  resp->status = 200;
  resp->body = "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\"}}";
}

static void test_trace_client_request_span_and_header(void **state) {
  seen_t seen = {PTHREAD_MUTEX_INITIALIZER, "", 0};
  kcr_test_http_t *srv;
  kcr_client_t *c;
  kcr_span_t *parent;
  kcr_span_context pctx, sent;
  json_t *obj = NULL;
  kcr_gvr r = {"", "v1", "configmaps"};
  (void)state;
  kcr_rest_config_t *cfg = NULL;
  kcr_client_options co;
  char dir[64] = "/tmp/kcr-test-trace-XXXXXX", kubeconfig[128];
  assert_non_null(mkdtemp(dir));
  assert_int_equal(kcr_test_http_start(on_request, &seen, &srv), 0);
  assert_int_equal(
      kcr_test_kubeconfig(dir, kcr_test_http_port(srv), "tok", kubeconfig, sizeof(kubeconfig)), 0);
  assert_int_equal(kcr_rest_config_from_kubeconfig(kubeconfig, NULL, NULL, &cfg, NULL), 0);
  memset(&co, 0, sizeof(co));
  co.config = cfg;
  assert_int_equal(kcr_client_create(&co, &c, NULL), 0);
  trace_on(KCR_SAMPLER_ALWAYS_ON, 0);
  parent = kcr_span_start("Reconcile test", KCR_SPAN_INTERNAL, NULL);
  kcr_span_context_of(parent, &pctx);
  assert_int_equal(kcr_client_get(c, &r, "default", "a", NULL, &obj, NULL), 0);
  kcr_span_end(parent);
  json_decref(obj);

  assert_int_equal(seen.calls, 2);
  assert_int_equal(kcr_traceparent_parse(seen.traceparent, strlen(seen.traceparent), &sent), 0);
  assert_int_equal(nkept, 2);
  /* the header names the request's span, a child of the caller's */
  assert_string_equal(kept[0].name, "GET configmaps");
  assert_int_equal(kept[0].kind, KCR_SPAN_CLIENT);
  assert_memory_equal(sent.trace_id, pctx.trace_id, 16);
  assert_memory_equal(sent.span_id, kept[0].ctx.span_id, 8);
  assert_memory_equal(kept[0].parent_span_id, pctx.span_id, 8);
  assert_int_equal(attr(&kept[0], "http.response.status_code")->i, 200);
  assert_int_equal(attr(&kept[0], "http.request.resend_count")->i, 1);
  assert_string_equal(attr(&kept[0], "http.request.method")->s, "GET");
  assert_string_equal(attr(&kept[0], "k8s.resource")->s, "configmaps");
  assert_int_equal(kept[0].status, KCR_SPAN_STATUS_UNSET);

  /* no span on the thread: no header */
  assert_int_equal(kcr_client_get(c, &r, "default", "a", NULL, &obj, NULL), 0);
  json_decref(obj);
  assert_int_equal(nkept, 3); /* the request's own root span */
  kcr_trace_configure(NULL);
  assert_int_equal(kcr_client_get(c, &r, "default", "a", NULL, &obj, NULL), 0);
  json_decref(obj);
  assert_string_equal(seen.traceparent, "");
  kcr_client_destroy(c);
  kcr_rest_config_unref(cfg);
  kcr_test_http_stop(srv);
  unlink(kubeconfig);
  rmdir(dir);
}

/* ---- the controller: one span per reconcile ---- */

typedef struct ctl_fake {
  int rc;
  kcr_span_context inner_parent; /* the current span the reconciler saw */
  char id[KCR_UUID_BUFSIZE];
} ctl_fake_t;

static int reconcile_traced(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                            kcr_result *res, void *data) {
  ctl_fake_t *f = data;
  kcr_span_t *inner;
  (void)req, (void)res;
  snprintf(f->id, sizeof(f->id), "%s", kcr_reconcile_id(ctx));
  kcr_trace_current(&f->inner_parent);
  inner = kcr_span_start("inner", KCR_SPAN_INTERNAL, NULL); /* a cache read, a request... */
  kcr_span_end(inner);
  if (f->rc)
    kcr_error_set(kcr_reconcile_err(ctx), f->rc, "it broke");
  return f->rc;
}

static void test_trace_reconcile_span_continues_annotation(void **state) {
  ctl_fake_t f;
  kcr_controller_options o;
  kcr_controller_t *c;
  kcr_event_handler h;
  const kcr_gvk app = {"kcr.dev", "v1", "App"};
  kcr_span_context remote;
  json_t *annotated =
      json_loads("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\","
                 "\"annotations\":{\"" KCR_TRACEPARENT_ANNOTATION "\":\"" TP "\"}}}",
                 0, NULL);
  json_t *plain = json_loads("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\"}}", 0, NULL);
  (void)state;
  assert_non_null(annotated);
  memset(&f, 0, sizeof(f));
  memset(&o, 0, sizeof(o));
  o.name = "apps";
  o.reconcile = reconcile_traced;
  o.data = &f;
  assert_int_equal(kcr_controller_create(&o, &c, NULL), 0);
  assert_int_equal(kcr_controller_for(c, &app, NULL, NULL), 0);
  assert_true(kcr__controller_handler(c, 0, &h));
  trace_on(KCR_SAMPLER_PARENTBASED_ALWAYS_ON, 0);
  assert_int_equal(kcr_traceparent_parse(TP, strlen(TP), &remote), 0);

  h.on_add(annotated, false, h.data);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_int_equal(nkept, 2);
  assert_string_equal(kept[1].name, "Reconcile apps");
  assert_memory_equal(kept[1].ctx.trace_id, remote.trace_id, 16);
  assert_memory_equal(kept[1].parent_span_id, remote.span_id, 8);
  assert_string_equal(attr(&kept[1], "k8s.namespace.name")->s, "ns");
  assert_string_equal(attr(&kept[1], "k8s.object.name")->s, "a");
  assert_string_equal(attr(&kept[1], "kcr.controller")->s, "apps");
  assert_string_equal(attr(&kept[1], "kcr.controller.kind")->s, "App");
  assert_string_equal(attr(&kept[1], "kcr.reconcile_id")->s, f.id);
  assert_string_equal(attr(&kept[1], "kcr.reconcile.result")->s, "success");
  assert_int_equal(kept[1].status, KCR_SPAN_STATUS_UNSET);
  /* the reconciler's own spans are children of the reconcile span */
  assert_memory_equal(f.inner_parent.span_id, kept[1].ctx.span_id, 8);
  assert_memory_equal(kept[0].parent_span_id, kept[1].ctx.span_id, 8);
  assert_false(kcr_trace_current(NULL));

  /* without the annotation (the latest event wins): a new root trace; an
   * error is the span's status */
  h.on_add(annotated, false, h.data);
  h.on_update(annotated, plain, h.data);
  f.rc = KCR_EAPI;
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_int_equal(nkept, 4);
  {
    static const uint8_t zero[8];
    assert_memory_equal(kept[3].parent_span_id, zero, 8);
  }
  assert_true(memcmp(kept[3].ctx.trace_id, remote.trace_id, 16) != 0);
  assert_string_equal(attr(&kept[3], "kcr.reconcile.result")->s, "error");
  assert_int_equal(kept[3].status, KCR_SPAN_STATUS_ERROR);
  assert_non_null(strstr(kept[3].status_message, "it broke"));
  kcr_controller_destroy(c);
  json_decref(annotated);
  json_decref(plain);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_trace_traceparent_round_trip, teardown),
      cmocka_unit_test_teardown(test_trace_traceparent_refuses_bad_input, teardown),
      cmocka_unit_test_teardown(test_trace_off_by_default, teardown),
      cmocka_unit_test_teardown(test_trace_spans_nest_per_thread, teardown),
      cmocka_unit_test_teardown(test_trace_remote_parent_is_continued, teardown),
      cmocka_unit_test_teardown(test_trace_samplers, teardown),
      cmocka_unit_test_teardown(test_trace_options_from_env, teardown),
      cmocka_unit_test_teardown(test_trace_log_lines_carry_ids, teardown),
      cmocka_unit_test_teardown(test_trace_client_request_span_and_header, teardown),
      cmocka_unit_test_teardown(test_trace_reconcile_span_continues_annotation, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
