/* SPDX-License-Identifier: MIT */
/*
 * test_client_watch.c: watches against a scripted server: events across chunk
 * boundaries, a normal end, a refused watch (410), an ERROR event, an idle
 * (half-open) connection detected, stop and destroy.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "httpserver.h"
#include "kcr/apierror.h"
#include "kcr/client.h"
#include "testutil.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"10\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"11\"}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{"
    "\"resourceVersion\":\"12\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"13\"}}}\n";

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  (void)data;
  if (strstr(req->path, "namespaces/ok/")) {
    resp->body = stream;
    resp->chunk_size = 7;
    resp->chunk_delay_ms = 1;
  } else if (strstr(req->path, "namespaces/gone/")) {
    resp->status = 410;
    resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
                 "\"too old resource version: 1 (200)\",\"reason\":\"Expired\",\"code\":410}";
  } else if (strstr(req->path, "namespaces/errorevent/")) {
    resp->body = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                 "\"status\":\"Failure\",\"message\":\"too old\",\"reason\":\"Expired\","
                 "\"code\":410}}\n";
    resp->chunk_size = 1000;
  } else if (strstr(req->path, "namespaces/idle/") || strstr(req->path, "namespaces/hold/")) {
    resp->body = stream;
    resp->body_len = strchr(stream, '\n') - stream + 1;
    resp->chunk_size = 1000;
    resp->hold_ms = 8000;
  } else {
    resp->status = 404;
    resp->body = "{}";
  }
}

typedef struct seen {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  char types[16][16];
  char rvs[16][16];
  int n;
  int ended;
  int end_code;
  kcr_error_t end_err;
  kcr_error_t event_err;
} seen_t;

static int on_event(const kcr_watch_event_t *ev, void *data) {
  seen_t *s = data;
  const char *rv = json_string_value(
      json_object_get(json_object_get(ev->object, "metadata"), "resourceVersion"));
  pthread_mutex_lock(&s->mu);
  if (s->n < 16) {
    snprintf(s->types[s->n], sizeof(s->types[0]), "%s", kcr_watch_event_type_name(ev->type));
    snprintf(s->rvs[s->n], sizeof(s->rvs[0]), "%s", rv ? rv : "");
    s->n++;
  }
  if (ev->error)
    s->event_err = *ev->error;
  pthread_mutex_unlock(&s->mu);
  json_decref(ev->object);
  return 0;
}

static void on_end(int code, const kcr_error_t *err, void *data) {
  seen_t *s = data;
  pthread_mutex_lock(&s->mu);
  s->ended++;
  s->end_code = code;
  if (err)
    s->end_err = *err;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->mu);
}

static void wait_end(seen_t *s) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 20;
  pthread_mutex_lock(&s->mu);
  while (!s->ended)
    if (pthread_cond_timedwait(&s->cond, &s->mu, &deadline) != 0)
      break;
  pthread_mutex_unlock(&s->mu);
  assert_int_equal(s->ended, 1);
}

typedef struct fixture {
  kcr_test_http_t *server;
  kcr_rest_config_t *config;
  kcr_client_t *client;
  char dir[64];
  char kubeconfig[128];
  seen_t seen;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  kcr_client_options opts;
  if (!f)
    return -1;
  snprintf(f->dir, sizeof(f->dir), "/tmp/kcr-test-watch-XXXXXX");
  if (!mkdtemp(f->dir) || kcr_test_http_start(handler, NULL, &f->server) != 0 ||
      kcr_test_kubeconfig(f->dir, kcr_test_http_port(f->server), "t", f->kubeconfig,
                          sizeof(f->kubeconfig)) != 0 ||
      kcr_rest_config_from_kubeconfig(f->kubeconfig, NULL, NULL, &f->config, NULL) != 0)
    return -1;
  memset(&opts, 0, sizeof(opts));
  opts.config = f->config;
  if (kcr_client_create(&opts, &f->client, NULL) != 0)
    return -1;
  pthread_mutex_init(&f->seen.mu, NULL);
  pthread_cond_init(&f->seen.cond, NULL);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  kcr_client_destroy(f->client);
  kcr_rest_config_unref(f->config);
  kcr_test_http_stop(f->server);
  unlink(f->kubeconfig);
  rmdir(f->dir);
  pthread_mutex_destroy(&f->seen.mu);
  pthread_cond_destroy(&f->seen.cond);
  free(f);
  return 0;
}

static void test_client_watch_events_in_order_then_normal_end(void **state) {
  fixture *f = *state;
  kcr_watch_options o;
  kcr_watch_t *w;
  memset(&o, 0, sizeof(o));
  o.allow_bookmarks = 1;
  o.resource_version = "9";
  o.timeout_seconds = 300;
  assert_int_equal(
      kcr_client_watch(f->client, &configmaps, "ok", &o, on_event, on_end, &f->seen, &w, NULL), 0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, 0);
  assert_int_equal(f->seen.n, 4);
  assert_string_equal(f->seen.types[0], "ADDED");
  assert_string_equal(f->seen.types[1], "MODIFIED");
  assert_string_equal(f->seen.types[2], "BOOKMARK");
  assert_string_equal(f->seen.types[3], "DELETED");
  assert_string_equal(f->seen.rvs[3], "13");
  kcr_watch_destroy(w);
  assert_int_equal(f->seen.ended, 1);
}

static void test_client_watch_refused_with_gone(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  assert_int_equal(
      kcr_client_watch(f->client, &configmaps, "gone", NULL, on_event, on_end, &f->seen, &w, NULL),
      0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, KCR_EAPI);
  assert_true(kcr_error_is_gone(&f->seen.end_err));
  assert_int_equal(f->seen.end_err.http_status, 410);
  assert_int_equal(f->seen.n, 0);
  kcr_watch_destroy(w);
}

static void test_client_watch_error_event_is_delivered(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  assert_int_equal(kcr_client_watch(f->client, &configmaps, "errorevent", NULL, on_event, on_end,
                                    &f->seen, &w, NULL),
                   0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.n, 1);
  assert_string_equal(f->seen.types[0], "ERROR");
  assert_true(kcr_error_is_gone(&f->seen.event_err));
  kcr_watch_destroy(w);
}

static void test_client_watch_idle_connection_times_out(void **state) {
  fixture *f = *state;
  kcr_watch_options o;
  kcr_watch_t *w;
  memset(&o, 0, sizeof(o));
  o.idle_timeout_ns = KCR_NSEC_PER_SEC;
  assert_int_equal(
      kcr_client_watch(f->client, &configmaps, "idle", &o, on_event, on_end, &f->seen, &w, NULL),
      0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.n, 1);
  assert_int_equal(f->seen.end_code, KCR_ETIMEDOUT);
  assert_non_null(strstr(f->seen.end_err.message, "idle"));
  kcr_watch_destroy(w);
}

static void test_client_watch_stop_ends_with_canceled(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  assert_int_equal(
      kcr_client_watch(f->client, &configmaps, "hold", NULL, on_event, on_end, &f->seen, &w, NULL),
      0);
  for (int i = 0; i < 2000; i++) {
    int n;
    struct timespec ts = {0, 1000000L};
    pthread_mutex_lock(&f->seen.mu);
    n = f->seen.n;
    pthread_mutex_unlock(&f->seen.mu);
    if (n > 0)
      break;
    nanosleep(&ts, NULL);
  }
  kcr_watch_stop(w);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, KCR_ECANCELED);
  kcr_watch_stop(w); /* again: nothing more happens */
  kcr_watch_destroy(w);
  assert_int_equal(f->seen.ended, 1);
}

static void test_client_watch_destroy_without_stop(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  assert_int_equal(
      kcr_client_watch(f->client, &configmaps, "hold", NULL, on_event, on_end, &f->seen, &w, NULL),
      0);
  kcr_watch_destroy(w); /* no callback may run after this returns */
  pthread_mutex_lock(&f->seen.mu);
  f->seen.n = 99;
  pthread_mutex_unlock(&f->seen.mu);
}

static void test_client_watch_rejects_bad_arguments(void **state) {
  fixture *f = *state;
  kcr_watch_t *w = (kcr_watch_t *)1;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_client_watch(f->client, &configmaps, "a/b", NULL, on_event, on_end, &f->seen, &w, &err),
      KCR_EINVAL);
  assert_null(w);
  assert_int_equal(
      kcr_client_watch(f->client, &configmaps, "ok", NULL, NULL, on_end, &f->seen, &w, NULL),
      KCR_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_client_watch_events_in_order_then_normal_end, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_refused_with_gone, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_error_event_is_delivered, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_idle_connection_times_out, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_stop_ends_with_canceled, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_destroy_without_stop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_rejects_bad_arguments, setup, teardown),
  };
  return cmocka_run_group_tests_name("client_watch", tests, NULL, NULL);
}
