/* SPDX-License-Identifier: MIT */
/*
 * test_leaderelection.c: the Lease elector on a fake clock against a scripted
 * HTTP server that keeps one Lease the way the apiserver does (404, 409 on a
 * stale resourceVersion, resourceVersion bumped on every write).
 */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller/controller_internal.h"
#include "httpserver.h"
#include "kcr/leaderelection.h"
#include "kcr/manager.h"
#include "testutil.h"

#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lock"
#define LEASES_PATH "/apis/coordination.k8s.io/v1/namespaces/ns/leases"

typedef struct fake_api {
  pthread_mutex_t mu;
  json_t *lease;
  int rv;
  int fail;
  int posts, puts, gets;
  kcr_clock_t *clock;  /* the fixture's fake clock, or NULL */
  int64_t last_put_at; /* its time when the last PUT arrived */
} fake_api_t;

static fake_api_t api;
/* The scripted server sends the body after the handler returns, on the
 * connection's own thread: one answer buffer per thread. */
static _Thread_local char body_buf[4096];

static void status(kcr_test_http_response *resp, int code, const char *reason) {
  resp->status = code;
  snprintf(body_buf, sizeof(body_buf),
           "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"%s\","
           "\"code\":%d,\"message\":\"%s\"}",
           reason, code, reason);
  resp->body = body_buf;
}

static void store(json_t *obj) {
  char rv[16];
  snprintf(rv, sizeof(rv), "%d", ++api.rv);
  json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string(rv));
  if (api.lease)
    json_decref(api.lease);
  api.lease = obj;
}

static void answer_lease(kcr_test_http_response *resp) {
  char *s = json_dumps(api.lease, JSON_COMPACT);
  snprintf(body_buf, sizeof(body_buf), "%s", s);
  free(s);
  resp->status = 200;
  resp->body = body_buf;
}

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  (void)data;
  pthread_mutex_lock(&api.mu);
  if (api.fail) {
    status(resp, 500, "InternalError");
  } else if (strcmp(req->method, "GET") == 0 && strcmp(req->path, LEASE_PATH) == 0) {
    api.gets++;
    if (api.lease)
      answer_lease(resp);
    else
      status(resp, 404, "NotFound");
  } else if (strcmp(req->method, "POST") == 0 &&
             strncmp(req->path, LEASES_PATH, strlen(LEASES_PATH)) == 0) {
    api.posts++;
    if (api.lease) {
      status(resp, 409, "AlreadyExists");
    } else {
      store(json_loadb(req->body, req->body_len, 0, NULL));
      answer_lease(resp);
      resp->status = 201;
    }
  } else if (strcmp(req->method, "PUT") == 0 &&
             strncmp(req->path, LEASE_PATH, strlen(LEASE_PATH)) == 0) {
    json_t *obj = json_loadb(req->body, req->body_len, 0, NULL);
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    api.puts++;
    if (api.clock)
      api.last_put_at = kcr_clock_now(api.clock);
    if (!api.lease) {
      status(resp, 404, "NotFound");
      json_decref(obj);
    } else if (!rv || strtol(rv, NULL, 10) != api.rv) {
      status(resp, 409, "Conflict");
      json_decref(obj);
    } else {
      store(obj);
      answer_lease(resp);
    }
  } else {
    status(resp, 404, "NotFound");
  }
  pthread_mutex_unlock(&api.mu);
}

/* set_holder writes the Lease as another process would. */
static void set_holder(const char *holder, int lease_seconds, const char *renew, int transitions) {
  json_t *obj = json_pack(
      "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:i,s:s,s:s,s:i}}", "apiVersion", "coordination.k8s.io/v1",
      "kind", "Lease", "metadata", "name", "lock", "namespace", "ns", "spec", "holderIdentity",
      holder, "leaseDurationSeconds", lease_seconds, "acquireTime", "2000-01-01T00:00:00.000000Z",
      "renewTime", renew, "leaseTransitions", transitions);
  pthread_mutex_lock(&api.mu);
  store(obj);
  pthread_mutex_unlock(&api.mu);
}

static json_t *lease_spec_copy(void) {
  json_t *s;
  pthread_mutex_lock(&api.mu);
  s = api.lease ? json_deep_copy(json_object_get(api.lease, "spec")) : NULL;
  pthread_mutex_unlock(&api.mu);
  return s;
}

typedef struct events {
  atomic_int started, stopped, lost;
  pthread_mutex_t mu;
  char leaders[8][256];
  int nleaders;
} events_t;

static void on_started(void *data) {
  events_t *e = data;
  atomic_fetch_add(&e->started, 1);
}

static void on_stopped(int lost, void *data) {
  events_t *e = data;
  atomic_store(&e->lost, lost);
  atomic_fetch_add(&e->stopped, 1);
}

static void on_new_leader(const char *id, void *data) {
  events_t *e = data;
  pthread_mutex_lock(&e->mu);
  if (e->nleaders < 8)
    snprintf(e->leaders[e->nleaders++], 256, "%s", id);
  pthread_mutex_unlock(&e->mu);
}

typedef struct fixture {
  kcr_test_http_t *server;
  kcr_rest_config_t *config;
  kcr_client_t *client;
  kcr_clock_t *clock;
  kcr_metrics_registry_t *reg;
  events_t ev;
  int target;
  char dir[64];
  char kubeconfig[128];
} fixture_t;

static fixture_t *setup_fixture(void) {
  fixture_t *f = calloc(1, sizeof(*f));
  kcr_client_options co = {0};
  kcr_time_t wall = {1700000000, 0};
  pthread_mutex_lock(&api.mu);
  if (api.lease)
    json_decref(api.lease);
  api.lease = NULL;
  api.rv = 0;
  api.fail = 0;
  api.posts = api.puts = api.gets = 0;
  api.clock = NULL;
  api.last_put_at = 0;
  pthread_mutex_unlock(&api.mu);
  pthread_mutex_init(&f->ev.mu, NULL);
  snprintf(f->dir, sizeof(f->dir), "/tmp/kcr-test-le-XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  assert_int_equal(kcr_test_http_start(handler, NULL, &f->server), 0);
  assert_int_equal(kcr_test_kubeconfig(f->dir, kcr_test_http_port(f->server), NULL, f->kubeconfig,
                                       sizeof(f->kubeconfig)),
                   0);
  assert_int_equal(kcr_rest_config_from_kubeconfig(f->kubeconfig, NULL, NULL, &f->config, NULL), 0);
  co.config = f->config;
  assert_int_equal(kcr_client_create(&co, &f->client, NULL), 0);
  assert_int_equal(kcr_fake_clock_create(1000 * KCR_NSEC_PER_SEC, wall, &f->clock, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&f->reg, NULL), 0);
  pthread_mutex_lock(&api.mu);
  api.clock = f->clock;
  pthread_mutex_unlock(&api.mu);
  return f;
}

static void teardown_fixture(fixture_t *f) {
  kcr_client_destroy(f->client);
  kcr_rest_config_unref(f->config);
  kcr_test_http_stop(f->server);
  pthread_mutex_lock(&api.mu);
  api.clock = NULL;
  pthread_mutex_unlock(&api.mu);
  kcr_clock_destroy(f->clock);
  kcr_metrics_registry_destroy(f->reg);
  unlink(f->kubeconfig);
  rmdir(f->dir);
  pthread_mutex_destroy(&f->ev.mu);
  free(f);
  pthread_mutex_lock(&api.mu);
  if (api.lease)
    json_decref(api.lease);
  api.lease = NULL;
  pthread_mutex_unlock(&api.mu);
}

static kcr_leader_election_options options(fixture_t *f, const char *id) {
  kcr_leader_election_options o = {0};
  o.client = f->client;
  o.lease_name = "lock";
  o.lease_namespace = "ns";
  o.identity = id;
  o.clock = f->clock;
  o.metrics = f->reg;
  o.release_on_cancel = 1;
  o.on_started_leading = on_started;
  o.on_stopped_leading = on_stopped;
  o.on_new_leader = on_new_leader;
  o.callback_data = &f->ev;
  return o;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

typedef int (*pred_fn)(fixture_t *f);

/* advance_until steps the fake clock by step_ms every real millisecond until
 * pred holds or real_ms pass; returns the fake nanoseconds stepped. */
static int64_t advance_until(fixture_t *f, int step_ms, int real_ms, pred_fn pred) {
  int64_t stepped = 0;
  for (int i = 0; i < real_ms && !(pred && pred(f)); i++) {
    kcr_fake_clock_step(f->clock, (int64_t)step_ms * KCR_NSEC_PER_MSEC);
    stepped += (int64_t)step_ms * KCR_NSEC_PER_MSEC;
    sleep_ms(1);
  }
  return stepped;
}

static int p_started(fixture_t *f) {
  return atomic_load(&f->ev.started) == 1;
}

static int p_stopped(fixture_t *f) {
  return atomic_load(&f->ev.stopped) == 1;
}

static int p_one_leader(fixture_t *f) {
  int n;
  pthread_mutex_lock(&f->ev.mu);
  n = f->ev.nleaders;
  pthread_mutex_unlock(&f->ev.mu);
  return n >= 1;
}

static int p_puts(fixture_t *f) {
  int p;
  pthread_mutex_lock(&api.mu);
  p = api.puts;
  pthread_mutex_unlock(&api.mu);
  return p >= f->target;
}

static void test_leaderelection_validation(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, NULL);
  kcr_leader_election_t *le = NULL;
  kcr_error_t err = {0};
  (void)state;
  o.lease_duration_ns = 10 * KCR_NSEC_PER_SEC; /* == renew deadline */
  assert_int_equal(kcr_leader_election_create(&o, &le, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "leaseDuration must be greater than renewDeadline"));
  o = options(f, NULL);
  o.retry_period_ns = 9 * KCR_NSEC_PER_SEC; /* 1.2 x 9 > 10 */
  kcr_error_clear(&err);
  assert_int_equal(kcr_leader_election_create(&o, &le, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "retryPeriod*1.2"));
  o = options(f, NULL);
  o.lease_namespace = NULL; /* no service-account file on a test machine */
  if (access(KCR_SERVICE_ACCOUNT_NAMESPACE_FILE, R_OK) != 0) {
    kcr_error_clear(&err);
    assert_int_equal(kcr_leader_election_create(&o, &le, &err), KCR_ECONFIG);
    assert_non_null(strstr(err.message, "namespace"));
  }
  o = options(f, NULL);
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  /* hostname_uuid */
  assert_non_null(strchr(kcr_leader_election_identity(le), '_'));
  assert_int_equal(strlen(strrchr(kcr_leader_election_identity(le), '_') + 1), 36);
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

static void test_leaderelection_acquire_renew_release(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, "me");
  kcr_leader_election_t *le;
  kcr_buf_t b;
  json_t *spec;
  int puts;
  (void)state;
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  assert_int_equal(kcr_leader_election_start(le, NULL), 0);
  advance_until(f, 0, 3000, p_started);
  assert_int_equal(atomic_load(&f->ev.started), 1);
  assert_true(kcr_leader_election_is_leader(le));
  assert_int_equal(kcr_leader_election_check(le), 0);
  spec = lease_spec_copy();
  assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "me");
  assert_int_equal(json_integer_value(json_object_get(spec, "leaseDurationSeconds")), 15);
  assert_int_equal(json_integer_value(json_object_get(spec, "leaseTransitions")), 0);
  /* MicroTime from the fake wall clock */
  assert_string_equal(json_string_value(json_object_get(spec, "renewTime")),
                      "2023-11-14T22:13:20.000000Z");
  json_decref(spec);
  kcr_buf_init(&b, 1 << 20);
  assert_int_equal(kcr_metrics_render(f->reg, &b), 0);
  assert_non_null(strstr(kcr_buf_cstr(&b), "leader_election_master_status{name=\"lock\"} 1\n"));
  kcr_buf_free(&b);

  /* renewals: a PUT every retry period (fast path) */
  pthread_mutex_lock(&api.mu);
  puts = api.puts;
  pthread_mutex_unlock(&api.mu);
  f->target = puts + 3;
  advance_until(f, 100, 3000, p_puts);
  spec = lease_spec_copy();
  assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "me");
  assert_string_equal(json_string_value(json_object_get(spec, "acquireTime")),
                      "2023-11-14T22:13:20.000000Z");
  assert_string_not_equal(json_string_value(json_object_get(spec, "renewTime")),
                          "2023-11-14T22:13:20.000000Z");
  json_decref(spec);

  /* release on cancel */
  kcr_leader_election_stop(le);
  assert_int_equal(atomic_load(&f->ev.stopped), 1);
  assert_int_equal(atomic_load(&f->ev.lost), 0);
  spec = lease_spec_copy();
  assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "");
  assert_int_equal(json_integer_value(json_object_get(spec, "leaseDurationSeconds")), 1);
  assert_int_equal(json_integer_value(json_object_get(spec, "leaseTransitions")), 0);
  json_decref(spec);
  kcr_buf_init(&b, 1 << 20);
  assert_int_equal(kcr_metrics_render(f->reg, &b), 0);
  assert_non_null(strstr(kcr_buf_cstr(&b), "leader_election_master_status{name=\"lock\"} 0\n"));
  kcr_buf_free(&b);
  pthread_mutex_lock(&f->ev.mu);
  assert_int_equal(f->ev.nleaders, 1);
  assert_string_equal(f->ev.leaders[0], "me");
  pthread_mutex_unlock(&f->ev.mu);
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

static void test_leaderelection_respects_holder_by_local_clock(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, "me");
  kcr_leader_election_t *le;
  int64_t waited;
  json_t *spec;
  (void)state;
  /* renewTime is ancient, but only the local clock counts: the holder is
   * respected for 15 s from when we first saw this record. */
  set_holder("other", 15, "2000-01-01T00:00:00.000000Z", 4);
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  assert_int_equal(kcr_leader_election_start(le, NULL), 0);
  advance_until(f, 0, 3000, p_one_leader);
  pthread_mutex_lock(&f->ev.mu);
  assert_string_equal(f->ev.leaders[0], "other");
  pthread_mutex_unlock(&f->ev.mu);
  assert_false(kcr_leader_election_is_leader(le));
  waited = advance_until(f, 10, 10000, p_started);
  assert_int_equal(atomic_load(&f->ev.started), 1);
  /* not before 15 s, not after 15 s + 2 s retry + 2.4 s jitter (+ step slack) */
  assert_true(waited >= 15 * KCR_NSEC_PER_SEC);
  assert_true(waited <= 20 * KCR_NSEC_PER_SEC);
  spec = lease_spec_copy();
  assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "me");
  assert_int_equal(json_integer_value(json_object_get(spec, "leaseTransitions")), 5);
  json_decref(spec);
  pthread_mutex_lock(&f->ev.mu);
  assert_int_equal(f->ev.nleaders, 2);
  assert_string_equal(f->ev.leaders[1], "me");
  pthread_mutex_unlock(&f->ev.mu);
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

static void test_leaderelection_renewing_holder_kept(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, "me");
  kcr_leader_election_t *le;
  char renew[64];
  (void)state;
  set_holder("other", 15, "2000-01-01T00:00:00.000000Z", 0);
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  assert_int_equal(kcr_leader_election_start(le, NULL), 0);
  /* the other holder renews every 2 s for 60 s of fake time: we never lead */
  for (int i = 0; i < 30; i++) {
    snprintf(renew, sizeof(renew), "2000-01-01T00:00:%02d.000000Z", i + 1);
    set_holder("other", 15, renew, 0);
    advance_until(f, 100, 20, NULL);
  }
  assert_int_equal(atomic_load(&f->ev.started), 0);
  kcr_leader_election_stop(le);
  assert_int_equal(atomic_load(&f->ev.stopped), 0); /* never led: no stopped callback */
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

static void test_leaderelection_lost_after_renew_deadline(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, "me");
  kcr_leader_election_t *le;
  int64_t waited;
  (void)state;
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  assert_int_equal(kcr_leader_election_start(le, NULL), 0);
  advance_until(f, 0, 3000, p_started);
  assert_int_equal(atomic_load(&f->ev.started), 1);
  pthread_mutex_lock(&api.mu);
  api.fail = 1;
  pthread_mutex_unlock(&api.mu);
  waited = advance_until(f, 10, 10000, p_stopped);
  fprintf(stderr, "lost after %.3f s of fake time\n", (double)waited / 1e9);
  assert_int_equal(atomic_load(&f->ev.stopped), 1);
  assert_int_equal(atomic_load(&f->ev.lost), 1);
  /* at most retry period (the wait before the round) + renew deadline */
  assert_true(waited <= 13 * KCR_NSEC_PER_SEC);
  assert_true(waited >= 10 * KCR_NSEC_PER_SEC);
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

static void test_leaderelection_taken_over(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, "me");
  kcr_leader_election_t *le;
  (void)state;
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  assert_int_equal(kcr_leader_election_start(le, NULL), 0);
  advance_until(f, 0, 3000, p_started);
  /* someone else writes the Lease (our fast path now conflicts; the slow path
   * sees a live holder); we keep failing until the renew deadline: lost */
  set_holder("usurper", 15, "2000-01-01T00:00:00.000000Z", 1);
  advance_until(f, 50, 5000, p_stopped);
  assert_int_equal(atomic_load(&f->ev.lost), 1);
  pthread_mutex_lock(&f->ev.mu);
  assert_string_equal(f->ev.leaders[f->ev.nleaders - 1], "usurper");
  pthread_mutex_unlock(&f->ev.mu);
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

static int api_requests(void) {
  int n;
  pthread_mutex_lock(&api.mu);
  n = api.gets + api.puts + api.posts;
  pthread_mutex_unlock(&api.mu);
  return n;
}

/* The fence: writes are allowed until the start of the last successful renew
 * + renew deadline, by the clock alone, whatever the elector thread is doing. */
static void test_leaderelection_fence_deadline(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, "me");
  kcr_leader_election_t *le;
  int64_t left, waited;
  (void)state;
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  assert_int_equal(kcr_leader_election_may_write(le), 0); /* not leading yet */
  assert_int_equal(kcr_leader_election_fence_remaining(le), 0);
  assert_int_equal(kcr_leader_election_start(le, NULL), 0);
  advance_until(f, 0, 3000, p_started);
  assert_int_equal(atomic_load(&f->ev.started), 1);
  assert_int_equal(kcr_leader_election_may_write(le), 1);
  left = kcr_leader_election_fence_remaining(le);
  assert_true(left > 0 && left <= 10 * KCR_NSEC_PER_SEC);

  /* the apiserver stops answering; let an attempt in flight finish */
  pthread_mutex_lock(&api.mu);
  api.fail = 1;
  pthread_mutex_unlock(&api.mu);
  sleep_ms(100);
  left = kcr_leader_election_fence_remaining(le);
  assert_true(left > KCR_NSEC_PER_MSEC);
  kcr_fake_clock_step(f->clock, left - KCR_NSEC_PER_MSEC);
  assert_int_equal(kcr_leader_election_may_write(le), 1);
  assert_true(kcr_leader_election_fence_remaining(le) <= KCR_NSEC_PER_MSEC);
  kcr_fake_clock_step(f->clock, 2 * KCR_NSEC_PER_MSEC);
  /* fenced at once, before the elector has noticed anything */
  assert_int_equal(kcr_leader_election_may_write(le), 0);
  assert_int_equal(kcr_leader_election_fence_remaining(le), 0);
  /* and the elector reports the loss at its next look, within a retry period
   * (plus the fake time stepped while a failing request ran) */
  waited = advance_until(f, 10, 5000, p_stopped);
  assert_int_equal(atomic_load(&f->ev.lost), 1);
  assert_true(waited <= 3 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_leader_election_may_write(le), 0);
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

/*
 * wait_renew_taken waits (real time, at most 10 s) until the elector has taken
 * the answer to the last PUT the fake API server saw: a pause (a clock step)
 * before that would make it take the answer after waking and count it as a
 * renew made then. Its fence runs from that attempt's start, at most one
 * advance_until step (100 ms) before the PUT arrived; the attempt before
 * started a retry period (2 s) earlier. Waited for on the elector's own
 * state, not for a time: a loaded machine may take any time to run it.
 */
static void wait_renew_taken(fixture_t *f, kcr_leader_election_t *le) {
  int64_t t0 = kcr_clock_now(kcr_clock_system()), put_at;
  pthread_mutex_lock(&api.mu);
  put_at = api.last_put_at;
  pthread_mutex_unlock(&api.mu);
  while (kcr_clock_now(f->clock) + kcr_leader_election_fence_remaining(le) <
             put_at - 100 * KCR_NSEC_PER_MSEC + 10 * KCR_NSEC_PER_SEC &&
         kcr_clock_now(kcr_clock_system()) - t0 < 10 * KCR_NSEC_PER_SEC)
    sleep_ms(1);
}

/* A pause (SIGSTOP) longer than the lease: on waking, the renew deadline has
 * passed since the last renew, so leadership is lost without one more request,
 * even though nobody else took the Lease in the meantime. */
static void test_leaderelection_pause_loses_without_renewing(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, "me");
  kcr_leader_election_t *le;
  int before;
  (void)state;
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  assert_int_equal(kcr_leader_election_start(le, NULL), 0);
  advance_until(f, 0, 3000, p_started);
  pthread_mutex_lock(&api.mu);
  f->target = api.puts + 2;
  pthread_mutex_unlock(&api.mu);
  advance_until(f, 100, 3000, p_puts); /* renewing normally */
  wait_renew_taken(f, le);
  assert_int_equal(kcr_leader_election_may_write(le), 1);
  before = api_requests();

  kcr_fake_clock_step(f->clock, 25 * KCR_NSEC_PER_SEC); /* the pause */
  assert_int_equal(kcr_leader_election_may_write(le), 0);
  /* Stepped, in case the elector armed its retry timer only after the pause. */
  advance_until(f, 100, 3000, p_stopped);
  assert_int_equal(atomic_load(&f->ev.stopped), 1);
  assert_int_equal(atomic_load(&f->ev.lost), 1);
  assert_int_equal(api_requests(), before); /* no renew after waking */
  assert_false(kcr_leader_election_may_write(le));
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

/* Reading the Lease and finding another live holder ends leadership at once
 * (at the next renew, one retry period), not after the renew deadline. */
static void test_leaderelection_other_holder_ends_at_once(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, "me");
  kcr_leader_election_t *le;
  int64_t waited;
  (void)state;
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  assert_int_equal(kcr_leader_election_start(le, NULL), 0);
  advance_until(f, 0, 3000, p_started);
  sleep_ms(50);
  set_holder("usurper", 15, "2000-01-01T00:00:00.000000Z", 1);
  waited = advance_until(f, 10, 5000, p_stopped);
  fprintf(stderr, "lost to another holder after %.3f s of fake time\n", (double)waited / 1e9);
  assert_int_equal(atomic_load(&f->ev.stopped), 1);
  assert_int_equal(atomic_load(&f->ev.lost), 1);
  /* the retry period (2 s) plus the fake time stepped while two requests ran;
   * retrying until the renew deadline would take 12 s */
  assert_true(waited <= 4 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_leader_election_may_write(le), 0);
  pthread_mutex_lock(&f->ev.mu);
  assert_string_equal(f->ev.leaders[f->ev.nleaders - 1], "usurper");
  pthread_mutex_unlock(&f->ev.mu);
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

/* ---- the manager honours the fence ---- */

typedef struct gated {
  atomic_int calls;
} gated_t;

static int on_reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                        void *data) {
  gated_t *g = data;
  (void)ctx;
  (void)req;
  (void)res;
  atomic_fetch_add(&g->calls, 1);
  return 0;
}

static int on_le_start(void *data, kcr_manager_t *m, kcr_error_t *err) {
  (void)m;
  return kcr_leader_election_start(data, err);
}

static void on_le_stop(void *data) {
  kcr_leader_election_stop(data);
}

static int64_t on_le_fence(void *data) {
  return kcr_leader_election_fence_remaining(data);
}

static void assert_writes_fenced(const kcr_objclient *c) {
  json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                          "metadata", "name", "x", "namespace", "ns");
  json_t *out = NULL;
  kcr_error_t err = {0};
  int before = api_requests();
  assert_int_equal(c->ops->create(c, obj, &out, &err), KCR_ECANCELED);
  assert_non_null(strstr(err.message, "not the leader"));
  assert_null(out);
  kcr_error_clear(&err);
  assert_int_equal(c->ops->update(c, obj, "status", &out, &err), KCR_ECANCELED);
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_patch(c, obj, KCR_PATCH_MERGE, "{}", 2, NULL, &out, &err),
                   KCR_ECANCELED);
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_apply(c, obj, NULL, NULL, &out, &err), KCR_ECANCELED);
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_delete(c, obj, NULL, &err), KCR_ECANCELED);
  assert_int_equal(api_requests(), before); /* refused without a request */
  json_decref(obj);
}

static void test_leaderelection_manager_fenced(void **state) {
  fixture_t *f = setup_fixture();
  kcr_leader_election_options o = options(f, "me");
  kcr_leader_election_t *le;
  kcr_manager_options mo = {0};
  kcr_manager_t *m;
  kcr_controller_options co = {0};
  kcr_controller_t *c;
  kcr_leader_elector seam;
  gated_t g;
  (void)state;
  atomic_init(&g.calls, 0);
  assert_int_equal(kcr_leader_election_create(&o, &le, NULL), 0);
  mo.config = f->config;
  mo.no_signal_handlers = true;
  assert_int_equal(kcr_manager_create(&mo, &m, NULL), 0);
  assert_true(kcr_manager_fence_remaining(m) == INT64_MAX); /* no elector: never fenced */
  seam = (kcr_leader_elector){on_le_start, on_le_stop, le, on_le_fence};
  kcr_manager_set_leader_elector(m, &seam);
  co.name = "gated";
  co.reconcile = on_reconcile;
  co.data = &g;
  co.clock = f->clock;
  assert_int_equal(kcr_manager_add_controller(m, &co, &c, NULL), 0);

  /* not leading: writes refused, workers do not reconcile */
  assert_true(kcr_manager_fence_remaining(m) <= 0);
  assert_writes_fenced(kcr_manager_client(m));
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(c), "ns/a"), 0);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_int_equal(atomic_load(&g.calls), 0);
  assert_int_equal(kcr_workqueue_len(kcr_controller_queue(c)), 0); /* back in 1 s */

  /* leading: the key comes back and is reconciled */
  assert_int_equal(seam.start(le, m, NULL), 0);
  advance_until(f, 0, 20000, p_started); /* returns once true: slack for valgrind */
  assert_int_equal(atomic_load(&f->ev.started), 1);
  /* The elector renews once right after acquiring. Until that request has been
   * made, the pause below could catch it mid-flight and count its GET. */
  f->target = 1;
  advance_until(f, 0, 20000, p_puts);
  kcr_fake_clock_step(f->clock, KCR_NSEC_PER_SEC);
  for (int i = 0; i < 20000 && kcr_workqueue_len(kcr_controller_queue(c)) == 0; i++)
    sleep_ms(1);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_int_equal(atomic_load(&g.calls), 1);
  assert_true(kcr_manager_fence_remaining(m) > 0);
  assert_true(kcr_manager_fence_remaining(m) <= 10 * KCR_NSEC_PER_SEC);

  /* paused past the renew deadline: fenced before the elector wakes */
  wait_renew_taken(f, le);
  kcr_fake_clock_step(f->clock, 25 * KCR_NSEC_PER_SEC);
  assert_true(kcr_manager_fence_remaining(m) <= 0);
  assert_writes_fenced(kcr_manager_client(m));
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(c), "ns/b"), 0);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_int_equal(atomic_load(&g.calls), 1);
  /* stepped, in case the elector armed its retry timer only after the pause */
  advance_until(f, 100, 20000, p_stopped);
  assert_int_equal(atomic_load(&f->ev.lost), 1);

  seam.stop(le);
  kcr_manager_destroy(m);
  kcr_leader_election_destroy(le);
  teardown_fixture(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leaderelection_validation),
      cmocka_unit_test(test_leaderelection_acquire_renew_release),
      cmocka_unit_test(test_leaderelection_respects_holder_by_local_clock),
      cmocka_unit_test(test_leaderelection_renewing_holder_kept),
      cmocka_unit_test(test_leaderelection_lost_after_renew_deadline),
      cmocka_unit_test(test_leaderelection_taken_over),
      cmocka_unit_test(test_leaderelection_fence_deadline),
      cmocka_unit_test(test_leaderelection_pause_loses_without_renewing),
      cmocka_unit_test(test_leaderelection_other_holder_ends_at_once),
      cmocka_unit_test(test_leaderelection_manager_fenced),
  };
  pthread_mutex_init(&api.mu, NULL);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
