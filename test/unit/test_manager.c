/* SPDX-License-Identifier: MIT */
/*
 * test_manager.c: the manager's options and start order with no API server
 * behind it (a scripted server that answers 404 to anything): the cache's
 * resync period and which runnables and controllers start without leading.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "cache/cache_internal.h"
#include "httpserver.h"
#include "kcr/manager.h"
#include "testutil.h"

static void api_404(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  (void)req;
  (void)data;
  resp->status = 404;
  resp->body = "{}";
}

/* resync_of makes a manager with sync_period_ns and returns its cache's
 * resync period; *jitter tells whether it is jittered. */
static int64_t resync_of(int64_t sync_period_ns, bool *jitter) {
  kcr_test_client tc;
  kcr_manager_options mo = {0};
  kcr_manager_t *m;
  int64_t p;
  assert_int_equal(kcr_test_client_start(api_404, NULL, &tc), 0);
  mo.config = tc.config;
  mo.no_signal_handlers = true;
  mo.sync_period_ns = sync_period_ns;
  assert_int_equal(kcr_manager_create(&mo, &m, NULL), 0);
  p = kcr__cache_resync_period(kcr_manager_cache(m), jitter);
  kcr_manager_destroy(m);
  kcr_test_client_stop(&tc);
  return p;
}

static void test_manager_sync_period(void **state) {
  bool jitter = false;
  (void)state;
  /* controller-runtime's default: 10 hours, jittered */
  assert_true(resync_of(0, &jitter) == INT64_C(36000) * KCR_NSEC_PER_SEC);
  assert_true(jitter);
  assert_true(resync_of(30 * KCR_NSEC_PER_SEC, &jitter) == 30 * KCR_NSEC_PER_SEC);
  assert_true(jitter);
  assert_true(resync_of(-1, &jitter) == 0); /* never */
}

/* ---- leader election: what starts on a standby ---- */

typedef struct order {
  atomic_int seq;                    /* the next step's number */
  atomic_int background, leader, le; /* the step each started at (0: never) */
} order_t;

static int on_background(void *data, kcr_error_t *err) {
  order_t *o = data;
  (void)err;
  atomic_store(&o->background, atomic_fetch_add(&o->seq, 1) + 1);
  return 0;
}

static int on_leader(void *data, kcr_error_t *err) {
  order_t *o = data;
  (void)err;
  atomic_store(&o->leader, atomic_fetch_add(&o->seq, 1) + 1);
  return 0;
}

/* the elector of a standby: campaigns, never wins, may never write */
static int on_le_start(void *data, kcr_manager_t *m, kcr_error_t *err) {
  order_t *o = data;
  (void)m;
  (void)err;
  atomic_store(&o->le, atomic_fetch_add(&o->seq, 1) + 1);
  return 0;
}

static int64_t on_le_fence(void *data) {
  (void)data;
  return 0;
}

static int create_cm(const kcr_objclient *c, kcr_error_t *err) {
  json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                          "metadata", "name", "x", "namespace", "ns");
  json_t *out = NULL;
  int rc = c->ops->create(c, obj, &out, err);
  json_decref(obj);
  json_decref(out);
  return rc;
}

static void test_manager_standby_runs_background_unfenced(void **state) {
  kcr_test_client tc;
  kcr_manager_options mo = {0};
  kcr_manager_t *m;
  order_t o;
  kcr_runnable bg = {"bg", on_background, NULL, NULL, KCR_RUNNABLE_BACKGROUND};
  kcr_runnable ld = {"ld", on_leader, NULL, NULL, KCR_RUNNABLE_LEADER};
  kcr_leader_elector le = {on_le_start, NULL, NULL, on_le_fence};
  kcr_test_manager_run run;
  kcr_error_t err = {0};
  int before;
  (void)state;
  memset(&o, 0, sizeof(o));
  bg.data = ld.data = le.data = &o;
  assert_int_equal(kcr_test_client_start(api_404, NULL, &tc), 0);
  mo.config = tc.config;
  mo.no_signal_handlers = true;
  assert_int_equal(kcr_manager_create(&mo, &m, NULL), 0);
  assert_int_equal(kcr_manager_add_runnable(m, &bg, NULL), 0);
  assert_int_equal(kcr_manager_add_runnable(m, &ld, NULL), 0);
  kcr_manager_set_leader_elector(m, &le);
  kcr_test_manager_start(&run, m);
  for (int i = 0; i < 10000 && atomic_load(&o.le) == 0; i++) {
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  /* the background runnable started, before the elector campaigned; the
   * leader runnable did not */
  assert_int_equal(atomic_load(&o.background), 1);
  assert_int_equal(atomic_load(&o.le), 2);
  assert_int_equal(atomic_load(&o.leader), 0);
  assert_false(kcr_manager_started(m));

  /* the fenced client refuses without a request; the unfenced one writes */
  before = kcr_test_http_requests(tc.server);
  assert_int_equal(create_cm(kcr_manager_client(m), &err), KCR_ECANCELED);
  assert_int_equal(kcr_test_http_requests(tc.server), before);
  kcr_error_clear(&err);
  assert_int_not_equal(create_cm(kcr_manager_unfenced_client(m), &err), KCR_ECANCELED);
  assert_true(kcr_test_http_requests(tc.server) > before); /* it went out (404 here) */

  assert_int_equal(kcr_test_manager_stop(&run), 0);
  assert_int_equal(atomic_load(&o.leader), 0);
  kcr_manager_destroy(m);
  kcr_test_client_stop(&tc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_manager_sync_period),
      cmocka_unit_test(test_manager_standby_runs_background_unfenced),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
