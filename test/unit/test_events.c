/* SPDX-License-Identifier: MIT */
/*
 * test_events.c: the event recorder's correlator (series, spam filter, window)
 * on a fake clock, against a scripted HTTP server that records every write.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "httpserver.h"
#include "kcr/events.h"
#include "testutil.h"

#define EVENTS_PATH "/apis/events.k8s.io/v1/namespaces/ns/events"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int posts, patches, patch_404;
static json_t *last_post, *last_patch;
static _Thread_local char body_buf[256];

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  (void)data;
  pthread_mutex_lock(&mu);
  resp->status = 201;
  snprintf(body_buf, sizeof(body_buf), "{\"kind\":\"Event\"}");
  if (strcmp(req->method, "POST") == 0 && strcmp(req->path, EVENTS_PATH) == 0) {
    posts++;
    if (last_post)
      json_decref(last_post);
    last_post = json_loadb(req->body, req->body_len, 0, NULL);
  } else if (strcmp(req->method, "PATCH") == 0 &&
             strncmp(req->path, EVENTS_PATH "/", strlen(EVENTS_PATH) + 1) == 0) {
    patches++;
    if (last_patch)
      json_decref(last_patch);
    last_patch = json_loadb(req->body, req->body_len, 0, NULL);
    resp->status = 200;
    if (patch_404) {
      patch_404--;
      resp->status = 404;
      snprintf(body_buf, sizeof(body_buf),
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
               "\"reason\":\"NotFound\",\"code\":404}");
    }
  } else {
    resp->status = 404;
  }
  resp->body = body_buf;
  pthread_mutex_unlock(&mu);
}

typedef struct fixture {
  kcr_test_http_t *server;
  kcr_rest_config_t *config;
  kcr_client_t *client;
  kcr_clock_t *clock;
  kcr_event_recorder_t *rec;
  char dir[64];
  char kubeconfig[128];
} fixture_t;

/* The fence of the fenced fixture: how long writes are allowed (ns). */
static _Atomic int64_t fence_ns;

static int64_t on_fence(void *data) {
  (void)data;
  return atomic_load(&fence_ns);
}

static fixture_t *setup_fixture_fenced(bool fenced) {
  fixture_t *f = calloc(1, sizeof(*f));
  kcr_client_options co = {0};
  kcr_event_recorder_options eo = {0};
  kcr_time_t wall = {1700000000, 123456789};
  pthread_mutex_lock(&mu);
  posts = patches = patch_404 = 0;
  pthread_mutex_unlock(&mu);
  snprintf(f->dir, sizeof(f->dir), "/tmp/kcr-test-ev-XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  assert_int_equal(kcr_test_http_start(handler, NULL, &f->server), 0);
  assert_int_equal(kcr_test_kubeconfig(f->dir, kcr_test_http_port(f->server), NULL, f->kubeconfig,
                                       sizeof(f->kubeconfig)),
                   0);
  assert_int_equal(kcr_rest_config_from_kubeconfig(f->kubeconfig, NULL, NULL, &f->config, NULL), 0);
  co.config = f->config;
  assert_int_equal(kcr_client_create(&co, &f->client, NULL), 0);
  assert_int_equal(kcr_fake_clock_create(0, wall, &f->clock, NULL), 0);
  eo.client = f->client;
  eo.reporting_controller = "kcr.dev/test";
  eo.reporting_instance = "test-1";
  eo.clock = f->clock;
  if (fenced)
    eo.fence = on_fence;
  assert_int_equal(kcr_event_recorder_create(&eo, &f->rec, NULL), 0);
  return f;
}

static fixture_t *setup_fixture(void) {
  return setup_fixture_fenced(false);
}

static void teardown_fixture(fixture_t *f) {
  kcr_event_recorder_destroy(f->rec);
  kcr_client_destroy(f->client);
  kcr_rest_config_unref(f->config);
  kcr_test_http_stop(f->server);
  kcr_clock_destroy(f->clock);
  unlink(f->kubeconfig);
  rmdir(f->dir);
  free(f);
  pthread_mutex_lock(&mu);
  if (last_post)
    json_decref(last_post);
  if (last_patch)
    json_decref(last_patch);
  last_post = last_patch = NULL;
  pthread_mutex_unlock(&mu);
}

static const kcr_object_ref pod = {"v1", "Pod", "ns", "web-0", "uid-1", "42"};

static void test_events_body(void **state) {
  fixture_t *f = setup_fixture();
  json_t *reg;
  (void)state;
  assert_int_equal(
      kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Created", "Create", "created %d things", 3),
      0);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 1);
  assert_string_equal(json_string_value(json_object_get(last_post, "apiVersion")),
                      "events.k8s.io/v1");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(last_post, "metadata"), "name")),
      "web-0.17979cfe3d85cd15");
  assert_string_equal(json_string_value(json_object_get(last_post, "eventTime")),
                      "2023-11-14T22:13:20.123456Z");
  assert_string_equal(json_string_value(json_object_get(last_post, "reportingController")),
                      "kcr.dev/test");
  assert_string_equal(json_string_value(json_object_get(last_post, "reportingInstance")), "test-1");
  assert_string_equal(json_string_value(json_object_get(last_post, "type")), "Normal");
  assert_string_equal(json_string_value(json_object_get(last_post, "reason")), "Created");
  assert_string_equal(json_string_value(json_object_get(last_post, "action")), "Create");
  assert_string_equal(json_string_value(json_object_get(last_post, "note")), "created 3 things");
  assert_null(json_object_get(last_post, "series"));
  reg = json_object_get(last_post, "regarding");
  assert_string_equal(json_string_value(json_object_get(reg, "kind")), "Pod");
  assert_string_equal(json_string_value(json_object_get(reg, "uid")), "uid-1");
  assert_string_equal(json_string_value(json_object_get(reg, "resourceVersion")), "42");
  pthread_mutex_unlock(&mu);
  assert_int_equal(kcr_event_record(f->rec, &pod, "Bogus", "R", "A", "x"), KCR_EINVAL);
  assert_int_equal(kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "", "A", "x"), KCR_EINVAL);
  teardown_fixture(f);
}

static void test_events_hot_loop_aggregates(void **state) {
  fixture_t *f = setup_fixture();
  kcr_event_recorder_stats st;
  (void)state;
  for (int i = 0; i < 1000; i++)
    assert_int_equal(
        kcr_event_record(f->rec, &pod, KCR_EVENT_WARNING, "Failed", "Reconcile", "boom"), 0);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  kcr_event_recorder_get_stats(f->rec, &st);
  assert_int_equal(st.recorded, 1000);
  assert_int_equal(st.aggregated, 999);
  assert_int_equal(st.created, 1);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 1);
  assert_true(patches <= 2);
  /* the last write carries the full count */
  if (patches)
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(last_patch, "series"), "count")), 1000);
  else
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(last_post, "series"), "count")), 1000);
  pthread_mutex_unlock(&mu);
  /* more of the same later: one coalesced PATCH per patch interval */
  for (int i = 0; i < 10; i++)
    kcr_event_record(f->rec, &pod, KCR_EVENT_WARNING, "Failed", "Reconcile", "boom");
  kcr_fake_clock_step(f->clock, 31 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 1);
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(last_patch, "series"), "count")), 1010);
  assert_non_null(json_object_get(json_object_get(last_patch, "series"), "lastObservedTime"));
  pthread_mutex_unlock(&mu);
  teardown_fixture(f);
}

static void test_events_spam_filter(void **state) {
  fixture_t *f = setup_fixture();
  int ok = 0, dropped = 0;
  (void)state;
  for (int i = 0; i < 100; i++) {
    /* Different reasons: the note alone does not make a new Event (client-go's key). */
    char reason[32];
    int rc;
    snprintf(reason, sizeof(reason), "Failed%d", i);
    rc = kcr_event_record(f->rec, &pod, KCR_EVENT_WARNING, reason, "Reconcile", "error %d", i);
    if (rc == 0)
      ok++;
    else if (rc == KCR_EAGAIN)
      dropped++;
  }
  assert_int_equal(ok, 25);
  assert_int_equal(dropped, 75);
  /* another object has its own bucket */
  {
    kcr_object_ref other = pod;
    other.name = "web-1";
    assert_int_equal(kcr_event_record(f->rec, &other, KCR_EVENT_WARNING, "Failed", "R", "x"), 0);
  }
  /* one token back every 5 minutes */
  kcr_fake_clock_step(f->clock, 300 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_event_record(f->rec, &pod, KCR_EVENT_WARNING, "New", "Reconcile", "new"), 0);
  assert_int_equal(kcr_event_record(f->rec, &pod, KCR_EVENT_WARNING, "New2", "Reconcile", "new2"),
                   KCR_EAGAIN);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 10 * KCR_NSEC_PER_SEC), 0);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 27);
  pthread_mutex_unlock(&mu);
  teardown_fixture(f);
}

static void test_events_window_and_recreate(void **state) {
  fixture_t *f = setup_fixture();
  (void)state;
  kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Synced", "Sync", "ok");
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  /* past the 6-minute window: a new Event, not a series */
  kcr_fake_clock_step(f->clock, 361 * KCR_NSEC_PER_SEC);
  kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Synced", "Sync", "ok");
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 2);
  assert_int_equal(patches, 0);
  patch_404 = 1;
  pthread_mutex_unlock(&mu);
  /* the series PATCH finds the Event gone: it is created again with its series */
  kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Synced", "Sync", "ok");
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  pthread_mutex_lock(&mu);
  assert_int_equal(patches, 1);
  assert_int_equal(posts, 3);
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(last_post, "series"), "count")), 2);
  pthread_mutex_unlock(&mu);
  teardown_fixture(f);
}

/*
 * Events that differ only in their note are one Event, as client-go's
 * tools/events key (type, reason, action, controller, regarding) has it: the
 * three Created events of a new App's pass cost one POST (and at most one
 * series PATCH), not three. Another resourceVersion of the object is another
 * Event.
 */
static void test_events_note_not_in_key(void **state) {
  fixture_t *f = setup_fixture();
  kcr_event_recorder_stats st;
  kcr_object_ref later = pod;
  json_t *series;
  (void)state;
  assert_int_equal(kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Created", "Create",
                                    "Created Deployment ns/web"),
                   0);
  assert_int_equal(kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Created", "Create",
                                    "Created Service ns/web"),
                   0);
  assert_int_equal(kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Created", "Create",
                                    "Created ConfigMap ns/web-config"),
                   0);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  kcr_event_recorder_get_stats(f->rec, &st);
  assert_int_equal(st.recorded, 3);
  assert_int_equal(st.aggregated, 2);
  assert_int_equal(st.created, 1);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 1);
  assert_true(patches <= 1);
  assert_string_equal(json_string_value(json_object_get(last_post, "note")),
                      "Created Deployment ns/web");
  series = json_object_get(patches ? last_patch : last_post, "series");
  assert_int_equal(json_integer_value(json_object_get(series, "count")), 3);
  pthread_mutex_unlock(&mu);
  later.resource_version = "43";
  assert_int_equal(kcr_event_record(f->rec, &later, KCR_EVENT_NORMAL, "Created", "Create",
                                    "Created Deployment ns/web"),
                   0);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 2);
  pthread_mutex_unlock(&mu);
  teardown_fixture(f);
}

/* A recorder with a fence sends nothing while the fence says no, and counts it. */
static void test_events_fence_drops_writes(void **state) {
  fixture_t *f;
  kcr_event_recorder_stats st;
  (void)state;
  atomic_store(&fence_ns, 0);
  f = setup_fixture_fenced(true);
  assert_int_equal(kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Created", "Create", "a"), 0);
  assert_int_equal(kcr_event_record(f->rec, &pod, KCR_EVENT_WARNING, "Failed", "Reconcile", "b"),
                   0);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  kcr_event_recorder_get_stats(f->rec, &st);
  assert_int_equal(st.recorded, 2);
  assert_int_equal(st.fenced, 2);
  assert_int_equal(st.created, 0);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 0);
  assert_int_equal(patches, 0);
  pthread_mutex_unlock(&mu);
  /* Writes allowed again: the event recorded again is sent, with its count. */
  atomic_store(&fence_ns, 10 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Created", "Create", "a"), 0);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  kcr_event_recorder_get_stats(f->rec, &st);
  assert_int_equal(st.fenced, 2);
  assert_int_equal(st.created, 1);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 1);
  assert_string_equal(json_string_value(json_object_get(last_post, "note")), "a");
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(last_post, "series"), "count")), 2);
  pthread_mutex_unlock(&mu);
  /* Fenced again: the series PATCH is dropped too. */
  atomic_store(&fence_ns, -1);
  kcr_event_record(f->rec, &pod, KCR_EVENT_NORMAL, "Created", "Create", "a");
  assert_int_equal(kcr_event_recorder_flush(f->rec, 5 * KCR_NSEC_PER_SEC), 0);
  kcr_event_recorder_get_stats(f->rec, &st);
  assert_int_equal(st.fenced, 3);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 1);
  assert_int_equal(patches, 0);
  pthread_mutex_unlock(&mu);
  teardown_fixture(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_events_body),
      cmocka_unit_test(test_events_hot_loop_aggregates),
      cmocka_unit_test(test_events_spam_filter),
      cmocka_unit_test(test_events_window_and_recreate),
      cmocka_unit_test(test_events_fence_drops_writes),
      cmocka_unit_test(test_events_note_not_in_key),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
