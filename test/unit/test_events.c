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
#include <time.h>
#include <unistd.h>

#include "httpserver.h"
#include "kcr/events.h"
#include "kcr/manager.h"
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

static fixture_t *setup_fixture_with(kcr_test_http_handler h, bool fenced, int max_queue) {
  fixture_t *f = calloc(1, sizeof(*f));
  kcr_client_options co = {0};
  kcr_event_recorder_options eo = {0};
  kcr_time_t wall = {1700000000, 123456789};
  pthread_mutex_lock(&mu);
  posts = patches = patch_404 = 0;
  pthread_mutex_unlock(&mu);
  snprintf(f->dir, sizeof(f->dir), "/tmp/kcr-test-ev-XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  assert_int_equal(kcr_test_http_start(h, NULL, &f->server), 0);
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
  eo.max_queue = max_queue;
  assert_int_equal(kcr_event_recorder_create(&eo, &f->rec, NULL), 0);
  return f;
}

static fixture_t *setup_fixture_fenced(bool fenced) {
  return setup_fixture_with(handler, fenced, 0);
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

/*
 * The server of the tests below: it logs every write (the regarding object's
 * name, POST or PATCH, the series count it carries) and answers with an empty
 * body, in one send, so that thousands of writes stay quick (patch_404 as for
 * handler). While the gate is closed, a write about gate_name waits at it: the
 * sender is then busy, and the test queues what it likes before the sender
 * picks again. Waits are bounded (gate_wait).
 */
typedef struct sent {
  char name[32];
  bool post;
  long long count;
} sent_t;

static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_closed, blocked;
static char gate_name[32];
static sent_t *sent_log;
static int nsent, sent_cap;

/* gate_wait waits on gate_cond (mu held) for at most a minute; false on timeout. */
static bool gate_wait(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 60;
  return pthread_cond_timedwait(&gate_cond, &mu, &ts) == 0;
}

static void log_handler(const kcr_test_http_request *req, kcr_test_http_response *resp,
                        void *data) {
  json_t *body = json_loadb(req->body, req->body_len, 0, NULL);
  json_t *series = json_object_get(body, "series");
  const char *name = NULL;
  char buf[32] = "";
  bool post = strcmp(req->method, "POST") == 0;
  (void)data;
  if (post) {
    name = json_string_value(json_object_get(json_object_get(body, "regarding"), "name"));
  } else if (strncmp(req->path, EVENTS_PATH "/", strlen(EVENTS_PATH) + 1) == 0) {
    /* the Event's name is "<object>.<hex>" */
    const char *ev = req->path + strlen(EVENTS_PATH) + 1, *dot = strrchr(ev, '.');
    if (dot && (size_t)(dot - ev) < sizeof(buf)) {
      memcpy(buf, ev, (size_t)(dot - ev));
      buf[dot - ev] = '\0';
      name = buf;
    }
  }
  pthread_mutex_lock(&mu);
  if (gate_closed && name && strcmp(name, gate_name) == 0) {
    blocked = true;
    pthread_cond_broadcast(&gate_cond);
    while (gate_closed && gate_wait())
      ;
  }
  resp->status = post ? 201 : 200;
  if (!post && patch_404) {
    patch_404--;
    resp->status = 404;
  }
  if (nsent < sent_cap) {
    snprintf(sent_log[nsent].name, sizeof(sent_log[nsent].name), "%s", name ? name : "?");
    sent_log[nsent].post = post;
    sent_log[nsent].count = series ? json_integer_value(json_object_get(series, "count")) : 1;
  }
  nsent++;
  pthread_mutex_unlock(&mu);
  if (body)
    json_decref(body);
  resp->body = "";
}

/* close_gate makes the next write about name wait; wait_blocked waits for it. */
static void close_gate(const char *name) {
  pthread_mutex_lock(&mu);
  snprintf(gate_name, sizeof(gate_name), "%s", name);
  gate_closed = true;
  blocked = false;
  pthread_mutex_unlock(&mu);
}

static void wait_blocked(void) {
  bool ok = true;
  pthread_mutex_lock(&mu);
  while (!blocked && ok)
    ok = gate_wait();
  pthread_mutex_unlock(&mu);
  if (!ok)
    fail_msg("no write reached the gate");
}

static bool is_blocked(void) {
  bool b;
  pthread_mutex_lock(&mu);
  b = blocked;
  pthread_mutex_unlock(&mu);
  return b;
}

static void open_gate(void) {
  pthread_mutex_lock(&mu);
  gate_closed = false;
  pthread_cond_broadcast(&gate_cond);
  pthread_mutex_unlock(&mu);
}

static void log_start(int cap) {
  pthread_mutex_lock(&mu);
  sent_cap = cap;
  sent_log = calloc((size_t)cap, sizeof(*sent_log));
  nsent = 0;
  pthread_mutex_unlock(&mu);
}

static void log_end(void) {
  pthread_mutex_lock(&mu);
  free(sent_log);
  sent_log = NULL;
  sent_cap = nsent = 0;
  pthread_mutex_unlock(&mu);
}

static void want_set(sent_t *w, const char *name, bool post, long long count) {
  snprintf(w->name, sizeof(w->name), "%s", name);
  w->post = post;
  w->count = count;
}

/* wait_sent waits (real time, bounded) until the server has logged n writes. */
static void wait_sent(int n) {
  for (int i = 0; i < 60000; i++) {
    int got;
    pthread_mutex_lock(&mu);
    got = nsent;
    pthread_mutex_unlock(&mu);
    if (got >= n)
      return;
    usleep(1000);
  }
  fail_msg("the server saw fewer than %d writes", n);
}

/* expect_sent checks the server's writes [from, from + n) against want. */
static void expect_sent(int from, const sent_t *want, int n) {
  sent_t got = {{0}, false, 0};
  int total, bad = -1;
  pthread_mutex_lock(&mu); /* not held while failing: the next test needs it */
  total = nsent;
  for (int i = 0; i < n && from + i < total && bad < 0; i++) {
    got = sent_log[from + i];
    if (strcmp(got.name, want[i].name) != 0 || got.post != want[i].post ||
        got.count != want[i].count)
      bad = i;
  }
  pthread_mutex_unlock(&mu);
  if (bad >= 0)
    fail_msg("write %d: %s %s count %lld, want %s %s count %lld", from + bad,
             got.post ? "POST" : "PATCH", got.name, got.count, want[bad].post ? "POST" : "PATCH",
             want[bad].name, want[bad].count);
  assert_int_equal(total, from + n);
}

#define MANY 2000     /* series waiting for their PATCH at once */
#define MANY_LATE 200 /* new Events queued among them */
#define MANY_BATCH 5  /* POSTed at one fake instant: equal due times */
#define MANY_STRIDE (7 * KCR_NSEC_PER_MSEC)

static kcr_object_ref many_ref(char *name, size_t size, const char *prefix, int i) {
  kcr_object_ref ref = {"v1", "Pod", "ns", name, "uid", "1"};
  snprintf(name, size, "%s-%d", prefix, i);
  return ref;
}

/*
 * Thousands of series wait for their patch interval at once, with due times
 * spread over 400 ms (five share each): whatever is due is sent first-queued
 * first, whether it is a series PATCH or a new Event's POST, and nothing is
 * sent before its time. The queue bound counts what is queued, through all of it.
 */
static void test_events_many_series_due_order(void **state) {
  fixture_t *f;
  kcr_event_recorder_stats st;
  static int64_t due[MANY];
  static int qorder[MANY + MANY_LATE]; /* queue order: i < MANY a series, else late i-MANY */
  static long long counts[MANY];
  static sent_t want[MANY + MANY_LATE + 1];
  char name[32];
  kcr_object_ref ref;
  int base, nwant, nq = 0, nrec = 0, nagg = 0;
  int64_t now, prev;
  (void)state;
  log_start(2 * MANY + MANY_LATE + 8);
  /* room for every series and late Event, not one more */
  f = setup_fixture_with(log_handler, false, MANY + MANY_LATE);

  /* POSTs, MANY_BATCH at each fake millisecond, in a scrambled object order */
  for (int k = 0; k < MANY; k += MANY_BATCH) {
    for (int b = 0; b < MANY_BATCH; b++) {
      int i = ((k + b) * 7919) % MANY;
      ref = many_ref(name, sizeof(name), "s", i);
      assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "x"),
                       0);
      nrec++;
      due[i] = kcr_clock_now(f->clock) + 30 * KCR_NSEC_PER_SEC;
      want_set(&want[k + b], name, true, 1);
    }
    assert_int_equal(kcr_event_recorder_flush(f->rec, 10 * KCR_NSEC_PER_SEC), 0);
    kcr_fake_clock_step(f->clock, KCR_NSEC_PER_MSEC);
  }
  expect_sent(0, want, MANY); /* new Events go in the order they were recorded */

  /* Hold the sender in a POST, then queue every series again (another
   * scrambled order, counts 2..4) with a new Event after every tenth. */
  close_gate("blocker-0");
  ref = many_ref(name, sizeof(name), "blocker", 0);
  assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "x"), 0);
  nrec++;
  wait_blocked();
  for (int k = 0; k < MANY; k++) {
    int i = (k * 104729 + 13) % MANY;
    counts[i] = 2 + i % 3;
    ref = many_ref(name, sizeof(name), "s", i);
    for (long long c = 1; c < counts[i]; c++) {
      assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "y"),
                       0);
      nrec++;
      nagg++;
    }
    qorder[nq++] = i;
    if (k % 10 == 9) {
      ref = many_ref(name, sizeof(name), "late", k / 10);
      assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "z"),
                       0);
      nrec++;
      qorder[nq++] = MANY + k / 10;
    }
  }
  assert_int_equal(nq, MANY + MANY_LATE);
  /* the queue is full: one more new Event is dropped */
  ref = many_ref(name, sizeof(name), "over", 0);
  assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "o"),
                   KCR_EAGAIN);
  /* half the series due: they and the late Events go in queue order */
  kcr_fake_clock_step(f->clock, 30 * KCR_NSEC_PER_SEC - 200 * KCR_NSEC_PER_MSEC);
  now = kcr_clock_now(f->clock);
  want_set(&want[0], "blocker-0", true, 1);
  nwant = 1;
  for (int q = 0; q < nq; q++) {
    int i = qorder[q];
    if (i >= MANY) {
      snprintf(name, sizeof(name), "late-%d", i - MANY);
      want_set(&want[nwant++], name, true, 1);
    } else if (due[i] <= now) {
      snprintf(name, sizeof(name), "s-%d", i);
      want_set(&want[nwant++], name, false, counts[i]);
    }
  }
  assert_true(nwant > 1 + MANY_LATE + MANY / 3 && nwant < 1 + MANY_LATE + 2 * MANY / 3);
  base = MANY;
  open_gate();
  wait_sent(base + nwant);
  expect_sent(base, want, nwant);
  base += nwant;

  /* the rest, a few milliseconds at a time: in due order, ties in queue order */
  while (base < 2 * MANY + MANY_LATE + 1) {
    prev = now;
    kcr_fake_clock_step(f->clock, MANY_STRIDE);
    now = kcr_clock_now(f->clock);
    nwant = 0;
    for (int q = 0; q < nq; q++) {
      int i = qorder[q];
      if (i < MANY && due[i] > prev && due[i] <= now) {
        snprintf(name, sizeof(name), "s-%d", i);
        want_set(&want[nwant++], name, false, counts[i]);
      }
    }
    assert_true(now - prev < KCR_NSEC_PER_SEC); /* no stride may be missed */
    wait_sent(base + nwant);
    expect_sent(base, want, nwant);
    base += nwant;
  }
  /* nothing is left to send: the flush waits for the last answer to be counted */
  assert_int_equal(kcr_event_recorder_flush(f->rec, 10 * KCR_NSEC_PER_SEC), 0);
  expect_sent(base, want, 0);
  kcr_event_recorder_get_stats(f->rec, &st);
  assert_int_equal(st.recorded, nrec);
  assert_int_equal(st.aggregated, nagg);
  assert_int_equal(st.created, MANY + MANY_LATE + 1);
  assert_int_equal(st.patched, MANY);
  assert_int_equal(st.dropped, 1);
  assert_int_equal(st.failed, 0);
  /* all sent: the queue has room again */
  ref = many_ref(name, sizeof(name), "over", 0);
  assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "o"), 0);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 10 * KCR_NSEC_PER_SEC), 0);
  want_set(&want[0], "over-0", true, 1);
  expect_sent(base, want, 1);
  teardown_fixture(f);
  log_end();
}

/*
 * An Event recorded again while its own write is on the wire is queued then:
 * after its POST it waits for the patch interval like any series, and after a
 * PATCH answered 404 it is POSTed again at once, series and all.
 */
static void test_events_requeued_while_sending(void **state) {
  fixture_t *f;
  kcr_event_recorder_stats st;
  const kcr_object_ref ref = {"v1", "Pod", "ns", "busy-0", "uid", "1"};
  sent_t want[4];
  (void)state;
  log_start(16);
  f = setup_fixture_with(log_handler, false, 0);
  want_set(&want[0], "busy-0", true, 1);
  want_set(&want[1], "busy-0", false, 2);
  want_set(&want[2], "busy-0", false, 3);
  want_set(&want[3], "busy-0", true, 4);

  close_gate("busy-0");
  assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "a"), 0);
  wait_blocked();
  assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "b"), 0);
  open_gate();
  wait_sent(1);
  usleep(100 * 1000); /* the sender is quick: a PATCH sent now would be seen */
  expect_sent(0, want, 1);
  kcr_fake_clock_step(f->clock, 30 * KCR_NSEC_PER_SEC);
  wait_sent(2);
  expect_sent(0, want, 2);

  /* the next PATCH waits at the gate; meanwhile one more; then the 404 */
  close_gate("busy-0");
  assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "c"), 0);
  kcr_fake_clock_step(f->clock, 30 * KCR_NSEC_PER_SEC);
  wait_blocked();
  assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "d"), 0);
  pthread_mutex_lock(&mu);
  patch_404 = 1;
  pthread_mutex_unlock(&mu);
  open_gate();
  wait_sent(4); /* no clock step: the POST is due at once */
  assert_int_equal(kcr_event_recorder_flush(f->rec, 10 * KCR_NSEC_PER_SEC), 0);
  expect_sent(0, want, 4);
  kcr_event_recorder_get_stats(f->rec, &st);
  assert_int_equal(st.created, 2);
  assert_int_equal(st.patched, 1);
  assert_int_equal(st.failed, 1);
  teardown_fixture(f);
  log_end();
}

/* shuffle fills a with 0..n-1 in an order fixed by seed (Fisher-Yates, an LCG). */
static void shuffle(int *a, int n, uint64_t seed) {
  for (int i = 0; i < n; i++)
    a[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j, t;
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    j = (int)((seed >> 33) % (uint64_t)(i + 1));
    t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

/*
 * A flush that times out (here: the sender is held in one of the series'
 * PATCHes) ends its hurry: what it did not send goes out when due, in
 * due order, not at once. The flush took its entries from the middle of the
 * due-ordered queue: the rest must still come out in order.
 */
static void test_events_flush_cut_short(void **state) {
  enum { N = 1000, GATE = 500 };
  fixture_t *f;
  kcr_event_recorder_stats st;
  static int64_t due[N];
  static int porder[N], qorder[N];
  static sent_t want[N];
  char name[32];
  kcr_object_ref ref;
  int base = 0, nwant;
  int64_t now, prev;
  (void)state;
  log_start(2 * N + 8);
  f = setup_fixture_with(log_handler, false, N);
  shuffle(porder, N, 1);
  shuffle(qorder, N, 2);
  for (int k = 0; k < N; k++) { /* POSTs, one each fake millisecond */
    ref = many_ref(name, sizeof(name), "s", porder[k]);
    assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "x"), 0);
    due[porder[k]] = kcr_clock_now(f->clock) + 30 * KCR_NSEC_PER_SEC;
    assert_int_equal(kcr_event_recorder_flush(f->rec, 10 * KCR_NSEC_PER_SEC), 0);
    kcr_fake_clock_step(f->clock, KCR_NSEC_PER_MSEC);
  }
  wait_sent(N);
  base = N;
  for (int k = 0; k < N; k++) { /* every series waits for its PATCH, another order */
    ref = many_ref(name, sizeof(name), "s", qorder[k]);
    assert_int_equal(kcr_event_record(f->rec, &ref, KCR_EVENT_NORMAL, "Created", "Create", "y"), 0);
  }
  snprintf(name, sizeof(name), "s-%d", qorder[GATE]);
  close_gate(name);
  /* Flushes send in queue order until the gate holds the sender, and time out;
   * short ones, as many as it takes (a slow build needs more than one): between
   * them nothing is due. */
  for (int i = 0; !is_blocked(); i++) {
    assert_true(i < 600);
    assert_int_equal(kcr_event_recorder_flush(f->rec, 100 * KCR_NSEC_PER_MSEC), KCR_ETIMEDOUT);
  }
  open_gate();
  for (int k = 0; k <= GATE; k++) {
    snprintf(name, sizeof(name), "s-%d", qorder[k]);
    want_set(&want[k], name, false, 2);
  }
  wait_sent(base + GATE + 1);
  usleep(100 * 1000); /* nothing else is due: a write sent now would be seen */
  expect_sent(base, want, GATE + 1);
  base += GATE + 1;
  /* then one fake millisecond at a time: the series due in it, if not sent */
  kcr_fake_clock_step(f->clock, 30 * KCR_NSEC_PER_SEC - N * KCR_NSEC_PER_MSEC - KCR_NSEC_PER_MSEC);
  now = kcr_clock_now(f->clock);
  for (int s = 0; s <= N; s++) {
    prev = now;
    kcr_fake_clock_step(f->clock, KCR_NSEC_PER_MSEC);
    now = kcr_clock_now(f->clock);
    nwant = 0;
    for (int k = GATE + 1; k < N; k++) {
      if (due[qorder[k]] > prev && due[qorder[k]] <= now) {
        snprintf(name, sizeof(name), "s-%d", qorder[k]);
        want_set(&want[nwant++], name, false, 2);
      }
    }
    wait_sent(base + nwant);
    expect_sent(base, want, nwant);
    base += nwant;
  }
  assert_int_equal(base, 2 * N);
  assert_int_equal(kcr_event_recorder_flush(f->rec, 10 * KCR_NSEC_PER_SEC), 0);
  expect_sent(base, want, 0);
  kcr_event_recorder_get_stats(f->rec, &st);
  assert_int_equal(st.created, N);
  assert_int_equal(st.patched, N);
  teardown_fixture(f);
  log_end();
}

/* get_recorder: a thread asking the manager for the "kcr.dev/race" recorder. */
static void *get_recorder(void *m) {
  return kcr_manager_event_recorder(m, "kcr.dev/race");
}

/*
 * The manager's recorders: one per component, the same pointer for the same
 * name (from racing threads too); a graceful stop sends what waits (a series
 * PATCH still inside its 30 s interval) before kcr_manager_run returns, and
 * kcr_manager_destroy sends what was recorded after.
 */
static void test_events_manager_recorder(void **state) {
  fixture_t *f = setup_fixture();
  kcr_manager_options mo = {0};
  kcr_manager_t *m;
  kcr_event_recorder_t *a, *b;
  pthread_t t[2];
  void *got[2];
  const char *inst;
  (void)state;
  mo.config = f->config;
  mo.no_signal_handlers = true;
  assert_int_equal(kcr_manager_create(&mo, &m, NULL), 0);
  a = kcr_manager_event_recorder(m, "kcr.dev/a");
  assert_non_null(a);
  assert_ptr_equal(kcr_manager_event_recorder(m, "kcr.dev/a"), a);
  b = kcr_manager_event_recorder(m, "kcr.dev/b");
  assert_non_null(b);
  assert_ptr_not_equal(a, b);
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&t[i], NULL, get_recorder, m), 0);
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_join(t[i], &got[i]), 0);
  assert_non_null(got[0]);
  assert_ptr_equal(got[0], got[1]);

  assert_int_equal(kcr_event_record(a, &pod, KCR_EVENT_NORMAL, "Created", "Create", "x"), 0);
  assert_int_equal(kcr_event_recorder_flush(a, 5 * KCR_NSEC_PER_SEC), 0);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 1);
  assert_string_equal(json_string_value(json_object_get(last_post, "reportingController")),
                      "kcr.dev/a");
  inst = json_string_value(json_object_get(last_post, "reportingInstance"));
  assert_non_null(inst);
  assert_int_equal(strncmp(inst, "kcr.dev/a-", strlen("kcr.dev/a-")), 0);
  pthread_mutex_unlock(&mu);
  /* counted into the series: its PATCH waits for the patch interval */
  assert_int_equal(kcr_event_record(a, &pod, KCR_EVENT_NORMAL, "Created", "Create", "x"), 0);
  kcr_manager_request_stop(m);
  assert_int_equal(kcr_manager_run(m, NULL), 0);
  pthread_mutex_lock(&mu);
  assert_int_equal(posts, 1);
  assert_int_equal(patches, 1); /* flushed by the stop */
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(last_patch, "series"), "count")), 2);
  pthread_mutex_unlock(&mu);
  assert_int_equal(kcr_event_record(a, &pod, KCR_EVENT_NORMAL, "Created", "Create", "x"), 0);
  kcr_manager_destroy(m);
  pthread_mutex_lock(&mu);
  assert_int_equal(patches, 2); /* flushed by the destroy */
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
      cmocka_unit_test(test_events_many_series_due_order),
      cmocka_unit_test(test_events_requeued_while_sending),
      cmocka_unit_test(test_events_flush_cut_short),
      cmocka_unit_test(test_events_manager_recorder),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
