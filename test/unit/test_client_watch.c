/* SPDX-License-Identifier: MIT */
/*
 * test_client_watch.c: watches against a scripted server: events across chunk
 * boundaries, a normal end, a refused watch (410), an ERROR event, an idle
 * (half-open) connection detected, stop and destroy; decoding on the consumer's
 * thread, never the loop's: a consumer that sleeps does not delay the loop, and
 * one that falls past max_buffered loses its watch instead of growing memory;
 * after a burst, which the consumer takes in batches, an event on the then
 * quiet stream is delivered at once, not held back for a batch to fill.
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
#include "kcr/clock.h"
#include "kcr/loop.h"
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

/* many_events: 200 events of about 1 KiB each, built once; burst_events: the
 * same and one more, "tail". */
static char many_buf[256 * 1024];
static char burst_buf[sizeof(many_buf) + 256];
static pthread_once_t many_once = PTHREAD_ONCE_INIT;

static void build_many(void) {
  char pad[1001];
  size_t off = 0;
  memset(pad, 'x', 1000);
  pad[1000] = '\0';
  for (int i = 0; i < 200; i++)
    off += (size_t)snprintf(many_buf + off, sizeof(many_buf) - off,
                            "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\","
                            "\"metadata\":{\"name\":\"m%d\",\"resourceVersion\":\"%d\"},"
                            "\"data\":{\"k\":\"%s\"}}}\n",
                            i, 100 + i, pad);
  snprintf(burst_buf, sizeof(burst_buf),
           "%s{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{"
           "\"name\":\"tail\",\"resourceVersion\":\"999\"}}}\n",
           many_buf);
}

static const char *many_events(void) {
  pthread_once(&many_once, build_many);
  return many_buf;
}

static const char *burst_events(void) {
  pthread_once(&many_once, build_many);
  return burst_buf;
}

/* the API server's protobuf answers (test/unit/data/pb, capture.py) */
static char *pb_stream, *pb_status;
static size_t pb_stream_len, pb_status_len;

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  (void)data;
  if (strstr(req->path, "namespaces/pbstream/")) {
    resp->content_type = "application/vnd.kubernetes.protobuf;stream=watch";
    resp->body = pb_stream;
    resp->body_len = pb_stream_len;
    resp->chunk_size = 7; /* frames split anywhere */
  } else if (strstr(req->path, "namespaces/pbstatus/")) {
    resp->status = 404;
    resp->content_type = "application/vnd.kubernetes.protobuf";
    resp->body = pb_status;
    resp->body_len = pb_status_len;
  } else if (strstr(req->path, "namespaces/ok/")) {
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
  } else if (strstr(req->path, "namespaces/burst/")) {
    resp->body = burst_events();
    resp->chunk_size = 4096;
    resp->pause_after = strlen(many_events());
    resp->pause_ms = 300; /* the stream goes quiet; then "tail" */
    resp->hold_ms = 8000;
  } else if (strstr(req->path, "namespaces/many/")) {
    resp->body = many_events();
    resp->chunk_size = 4096;
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
  int total;     /* every event, past the 16 recorded */
  char last[16]; /* the last event's resourceVersion */
  int ended;
  int end_code;
  kcr_error_t end_err;
  kcr_error_t event_err;
  int on_loop;      /* an event callback ran on the loop thread */
  int other_thread; /* an event callback ran off the runner thread */
  int sleep_ms;     /* each event callback sleeps this long */
  pthread_t runner; /* the thread in kcr_watch_run */
  kcr_loop_t *loop;
  kcr_watch_t *w;
} seen_t;

static int on_event(const kcr_watch_event *ev, void *data) {
  seen_t *s = data;
  const char *rv = json_string_value(
      json_object_get(json_object_get(ev->object, "metadata"), "resourceVersion"));
  pthread_mutex_lock(&s->mu);
  if (s->n < 16) {
    snprintf(s->types[s->n], sizeof(s->types[0]), "%s", kcr_watch_event_type_name(ev->type));
    snprintf(s->rvs[s->n], sizeof(s->rvs[0]), "%s", rv ? rv : "");
    s->n++;
  }
  s->total++;
  snprintf(s->last, sizeof(s->last), "%s", rv ? rv : "");
  pthread_cond_broadcast(&s->cond);
  if (ev->error)
    s->event_err = *ev->error;
  if (s->loop && kcr_loop_on_thread(s->loop))
    s->on_loop = 1;
  if (!pthread_equal(pthread_self(), s->runner))
    s->other_thread = 1;
  pthread_mutex_unlock(&s->mu);
  json_decref(ev->object);
  if (s->sleep_ms) {
    struct timespec ts = {s->sleep_ms / 1000, (long)(s->sleep_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
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

static void *run_main(void *arg) {
  seen_t *s = arg;
  kcr_error_t err;
  int rc;
  kcr_error_clear(&err);
  rc = kcr_watch_run(s->w, on_event, s, &err);
  on_end(rc, rc ? &err : NULL, s);
  return NULL;
}

/* start_watch starts a watch and a thread that consumes it with kcr_watch_run,
 * reporting the end as on_end. Returns kcr_client_watch's code. */
static int start_watch(kcr_client_t *c, const char *ns, const kcr_watch_options *o, seen_t *s,
                       kcr_watch_t **w, kcr_error_t *err) {
  int rc = kcr_client_watch(c, &configmaps, ns, o, w, err);
  if (rc)
    return rc;
  s->w = *w;
  s->loop = kcr_client_loop(c);
  pthread_mutex_lock(&s->mu); /* the runner reads s->runner only after this */
  if (pthread_create(&s->runner, NULL, run_main, s) != 0)
    abort();
  pthread_mutex_unlock(&s->mu);
  return 0;
}

/* finish_watch joins the runner and destroys the watch. */
static void finish_watch(seen_t *s, kcr_watch_t *w) {
  pthread_join(s->runner, NULL);
  kcr_watch_destroy(w);
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
  if (!pb_stream) {
    pb_stream = kcr_test_slurp(KCR_TEST_DATA_DIR "/pb/watch.pb", &pb_stream_len);
    pb_status = kcr_test_slurp(KCR_TEST_DATA_DIR "/pb/status-404.pb", &pb_status_len);
  }
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

static int free_fixtures(void **state) {
  (void)state;
  free(pb_stream);
  free(pb_status);
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
  assert_int_equal(start_watch(f->client, "ok", &o, &f->seen, &w, NULL), 0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, 0);
  assert_int_equal(f->seen.n, 4);
  assert_string_equal(f->seen.types[0], "ADDED");
  assert_string_equal(f->seen.types[1], "MODIFIED");
  assert_string_equal(f->seen.types[2], "BOOKMARK");
  assert_string_equal(f->seen.types[3], "DELETED");
  assert_string_equal(f->seen.rvs[3], "13");
  finish_watch(&f->seen, w);
  assert_int_equal(f->seen.ended, 1);
}

/* a protobuf answer: frames, switched to from the Content-Type */
static void test_client_watch_reads_protobuf_frames(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  assert_non_null(pb_stream);
  assert_int_equal(start_watch(f->client, "pbstream", NULL, &f->seen, &w, NULL), 0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, 0);
  assert_true(f->seen.n >= 2);
  assert_string_equal(f->seen.types[0], "ADDED");
  assert_string_equal(f->seen.types[f->seen.n - 1], "BOOKMARK");
  assert_true(f->seen.rvs[0][0] != '\0');
  finish_watch(&f->seen, w);
}

/* a Status in protobuf ends the watch as its JSON would */
static void test_client_watch_reads_a_protobuf_status(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  assert_int_equal(start_watch(f->client, "pbstatus", NULL, &f->seen, &w, NULL), 0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, KCR_EAPI);
  assert_int_equal(f->seen.end_err.http_status, 404);
  assert_string_equal(f->seen.end_err.reason, "NotFound");
  assert_non_null(strstr(f->seen.end_err.message, "\"absent\" not found"));
  finish_watch(&f->seen, w);
}

static void test_client_watch_refused_with_gone(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  assert_int_equal(start_watch(f->client, "gone", NULL, &f->seen, &w, NULL), 0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, KCR_EAPI);
  assert_true(kcr_error_is_gone(&f->seen.end_err));
  assert_int_equal(f->seen.end_err.http_status, 410);
  assert_int_equal(f->seen.n, 0);
  finish_watch(&f->seen, w);
}

static void test_client_watch_error_event_is_delivered(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  assert_int_equal(start_watch(f->client, "errorevent", NULL, &f->seen, &w, NULL), 0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.n, 1);
  assert_string_equal(f->seen.types[0], "ERROR");
  assert_true(kcr_error_is_gone(&f->seen.event_err));
  finish_watch(&f->seen, w);
}

static void test_client_watch_idle_connection_times_out(void **state) {
  fixture *f = *state;
  kcr_watch_options o;
  kcr_watch_t *w;
  memset(&o, 0, sizeof(o));
  o.idle_timeout_ns = KCR_NSEC_PER_SEC;
  assert_int_equal(start_watch(f->client, "idle", &o, &f->seen, &w, NULL), 0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.n, 1);
  assert_int_equal(f->seen.end_code, KCR_ETIMEDOUT);
  assert_non_null(strstr(f->seen.end_err.message, "idle"));
  finish_watch(&f->seen, w);
}

static void test_client_watch_stop_ends_with_canceled(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  assert_int_equal(start_watch(f->client, "hold", NULL, &f->seen, &w, NULL), 0);
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
  finish_watch(&f->seen, w);
  assert_int_equal(f->seen.ended, 1);
}

static void test_client_watch_destroy_without_run(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  /* Nobody consumes it: destroy lets go at once; the loop frees its share when
   * the cancelled transfer ends (ASan and valgrind check that nothing leaks). */
  assert_int_equal(kcr_client_watch(f->client, &configmaps, "hold", NULL, &w, NULL), 0);
  kcr_watch_destroy(w);
}

static void test_client_watch_rejects_bad_arguments(void **state) {
  fixture *f = *state;
  kcr_watch_t *w = (kcr_watch_t *)1;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(start_watch(f->client, "a/b", NULL, &f->seen, &w, &err), KCR_EINVAL);
  assert_null(w);
  assert_int_equal(kcr_client_watch(f->client, &configmaps, "ok", NULL, &w, NULL), 0);
  assert_int_equal(kcr_watch_run(w, NULL, NULL, NULL), KCR_EINVAL);
  kcr_watch_destroy(w);
}

static void on_posted(kcr_loop_t *loop, void *data) {
  int64_t *ran_at = data;
  (void)loop;
  __atomic_store_n(ran_at, kcr_clock_now(kcr_clock_system()), __ATOMIC_RELEASE);
}

/* post_latency_ms posts a closure to the loop and says how long it took to run. */
static int64_t post_latency_ms(kcr_loop_t *loop) {
  int64_t start = kcr_clock_now(kcr_clock_system()), ran_at = 0;
  assert_int_equal(kcr_loop_post(loop, on_posted, &ran_at), 0);
  for (int i = 0; i < 5000 && !__atomic_load_n(&ran_at, __ATOMIC_ACQUIRE); i++) {
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  assert_true(__atomic_load_n(&ran_at, __ATOMIC_ACQUIRE) != 0);
  return (__atomic_load_n(&ran_at, __ATOMIC_ACQUIRE) - start) / KCR_NSEC_PER_MSEC;
}

static void test_client_watch_slow_consumer_never_delays_the_loop(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  int64_t worst = 0;
  f->seen.sleep_ms = 200; /* every event: 200 events would take 40 s */
  assert_int_equal(start_watch(f->client, "many", NULL, &f->seen, &w, NULL), 0);
  for (int i = 0; i < 10; i++) {
    int64_t ms = post_latency_ms(kcr_client_loop(f->client));
    if (ms > worst)
      worst = ms;
    struct timespec ts = {0, 50000000L};
    nanosleep(&ts, NULL);
  }
  /* While the consumer sleeps inside its callback, the loop answers at once
   * (the old design ran the callback on the loop: each post waited 200 ms). */
  assert_true(worst < 150);
  pthread_mutex_lock(&f->seen.mu);
  assert_true(f->seen.n >= 1);
  assert_int_equal(f->seen.on_loop, 0);
  assert_int_equal(f->seen.other_thread, 0);
  pthread_mutex_unlock(&f->seen.mu);
  kcr_watch_stop(w); /* the backlog is dropped: no 40 s wait */
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, KCR_ECANCELED);
  finish_watch(&f->seen, w);
}

static void test_client_watch_consumer_past_max_buffered_loses_the_watch(void **state) {
  fixture *f = *state;
  kcr_watch_options o;
  kcr_watch_t *w;
  memset(&o, 0, sizeof(o));
  o.max_buffered = (size_t)16 * 1024; /* the stream is about 210 KiB */
  f->seen.sleep_ms = 300;
  assert_int_equal(start_watch(f->client, "many", &o, &f->seen, &w, NULL), 0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, KCR_ETOOBIG);
  assert_non_null(strstr(f->seen.end_err.message, "fell more than 16384 bytes behind"));
  assert_true(f->seen.n < 200);
  finish_watch(&f->seen, w);
}

static void test_client_watch_event_after_a_burst_is_not_held_back(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  struct timespec deadline;
  assert_int_equal(start_watch(f->client, "burst", NULL, &f->seen, &w, NULL), 0);
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 5;
  pthread_mutex_lock(&f->seen.mu);
  while (f->seen.total < 201)
    if (pthread_cond_timedwait(&f->seen.cond, &f->seen.mu, &deadline) != 0)
      break;
  /* All 201, the last far smaller than a batch, while the server still holds
   * the stream open (8 s): the consumer did not wait for more bytes. */
  assert_int_equal(f->seen.total, 201);
  assert_string_equal(f->seen.last, "999");
  assert_int_equal(f->seen.ended, 0);
  pthread_mutex_unlock(&f->seen.mu);
  kcr_watch_stop(w);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, KCR_ECANCELED);
  finish_watch(&f->seen, w);
}

static void test_client_watch_runs_once(void **state) {
  fixture *f = *state;
  kcr_watch_t *w;
  kcr_error_t err;
  assert_int_equal(start_watch(f->client, "ok", NULL, &f->seen, &w, NULL), 0);
  wait_end(&f->seen);
  assert_int_equal(f->seen.end_code, 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_watch_run(w, on_event, &f->seen, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "already run"));
  finish_watch(&f->seen, w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_client_watch_events_in_order_then_normal_end, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_reads_protobuf_frames, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_reads_a_protobuf_status, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_refused_with_gone, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_error_event_is_delivered, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_idle_connection_times_out, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_stop_ends_with_canceled, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_destroy_without_run, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_slow_consumer_never_delays_the_loop, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_consumer_past_max_buffered_loses_the_watch,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_event_after_a_burst_is_not_held_back, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_runs_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_watch_rejects_bad_arguments, setup, teardown),
  };
  return cmocka_run_group_tests_name("client_watch", tests, NULL, free_fixtures);
}
