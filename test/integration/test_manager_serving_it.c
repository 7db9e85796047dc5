/* SPDX-License-Identifier: MIT */
/*
 * test_manager_serving_it.c: kcr_manager_serve against the real apiserver: a
 * manager with one controller, a metrics server, a probes server and Lease
 * leader election. /readyz turns ready once the caches sync; /metrics carries
 * controller_runtime_*, workqueue_*, rest_client_* and leader_election_master_status;
 * the controller reconciles only as leader; a graceful stop releases the Lease.
 * The manager's event recorder writes Events that kubectl shows, its series
 * flushed by the graceful stop.
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/kcr.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static atomic_int reconciles;

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  (void)ctx;
  (void)req;
  (void)res;
  (void)data;
  atomic_fetch_add(&reconciles, 1);
  return 0;
}

typedef struct runner {
  kcr_manager_t *m;
  int rc;
  kcr_error_t err;
} runner_t;

static void *run_main(void *arg) {
  runner_t *r = arg;
  kcr_error_clear(&r->err);
  r->rc = kcr_manager_run(r->m, &r->err);
  return NULL;
}

static int group_setup(void **state) {
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (kcr_testenv_start(&env) != 0)
    return -1;
  return kcr_rest_config_from_kubeconfig(kcr_testenv_kubeconfig(env), NULL, NULL, &config, NULL);
}

static int group_teardown(void **state) {
  (void)state;
  kcr_rest_config_unref(config);
  kcr_testenv_stop(env);
  curl_global_cleanup();
  return 0;
}

/* manager_options: the tests' managers: on the cluster, namespace default, no signals. */
static kcr_manager_options manager_options(void) {
  kcr_manager_options mo;
  memset(&mo, 0, sizeof(mo));
  mo.config = config;
  mo.no_signal_handlers = true;
  mo.default_namespace = "default";
  return mo;
}

static void test_manager_serves_probes_metrics_and_leads(void **state) {
  kcr_manager_options mo;
  kcr_manager_serving_options so;
  kcr_controller_options co;
  kcr_controller_t *c;
  kcr_gvk cm = {"", "v1", "ConfigMap"};
  kcr_error_t err;
  kcr_buf_t body;
  runner_t r;
  pthread_t th;
  char lease[64], *out = NULL;
  int probe = 0, metrics = 0, ready = 0;
  (void)state;

  mo = manager_options();
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_create(&mo, &r.m, &err), 0);
  memset(&co, 0, sizeof(co));
  co.name = "serving-test";
  co.reconcile = reconcile;
  assert_int_equal(kcr_manager_add_controller(r.m, &co, &c, &err), 0);
  assert_int_equal(kcr_controller_for(c, &cm, NULL, &err), 0);
  snprintf(lease, sizeof(lease), "kcr-serving-%d", (int)getpid());
  memset(&so, 0, sizeof(so));
  so.metrics_bind_address = "127.0.0.1:0";
  so.health_probe_bind_address = "127.0.0.1:0";
  so.leader_elect = true;
  so.leader_election_id = lease;
  so.leader_election_namespace = "default";
  so.leader_election_release_on_cancel = true;
  assert_int_equal(kcr_manager_serve(r.m, &so, &err), 0);
  /* Out of cluster, leader election without a namespace is refused up front. */
  {
    kcr_manager_t *m2;
    kcr_manager_serving_options bad = so;
    bad.leader_election_namespace = NULL;
    assert_int_equal(kcr_manager_create(&mo, &m2, NULL), 0);
    assert_int_equal(kcr_manager_serve(m2, &bad, NULL), KCR_ECONFIG);
    kcr_manager_destroy(m2);
  }

  pthread_create(&th, NULL, run_main, &r);
  kcr_buf_init(&body, 4 << 20);
  for (int i = 0; i < 300 && !ready; i++) {
    probe = kcr_manager_probe_port(r.m);
    if (probe && kcr_it_http_get(probe, "/readyz", &body) == 200)
      ready = 1;
    else
      kcr_it_sleep_ms(100);
  }
  assert_true(ready);
  assert_string_equal(kcr_buf_cstr(&body), "ok");
  assert_int_equal(kcr_it_http_get(probe, "/readyz?verbose", &body), 200);
  assert_non_null(strstr(kcr_buf_cstr(&body), "[+]informer-sync ok"));
  assert_int_equal(kcr_it_http_get(probe, "/healthz?verbose", &body), 200);
  assert_non_null(strstr(kcr_buf_cstr(&body), "[+]leaderElection ok"));
  /* Leading: the controller reconciles the namespace's ConfigMaps. */
  {
    char name[64];
    const char *argv[] = {"create", "configmap", name, "-n", "default", NULL};
    snprintf(name, sizeof(name), "serving-%d", (int)getpid());
    assert_int_equal(kcr_testenv_kubectl(env, argv, NULL), 0);
  }
  for (int i = 0; i < 300 && atomic_load(&reconciles) == 0; i++)
    kcr_it_sleep_ms(100);
  assert_true(atomic_load(&reconciles) > 0);

  metrics = kcr_manager_metrics_port(r.m);
  assert_int_not_equal(metrics, 0);
  assert_int_equal(kcr_it_http_get(metrics, "/metrics", &body), 200);
  assert_non_null(strstr(kcr_buf_cstr(&body),
                         "controller_runtime_reconcile_total{controller=\"serving-test\","
                         "result=\"success\"}"));
  assert_non_null(strstr(kcr_buf_cstr(&body), "workqueue_adds_total{"));
  assert_non_null(strstr(kcr_buf_cstr(&body), "controller_runtime_reconcile_time_seconds_bucket{"));
  assert_non_null(strstr(kcr_buf_cstr(&body), "rest_client_requests_total{"));
  assert_non_null(strstr(kcr_buf_cstr(&body), "leader_election_master_status{name=\""));
  assert_non_null(strstr(kcr_buf_cstr(&body), "process_resident_memory_bytes "));

  /* The Lease names this process; a graceful stop releases it. */
  {
    const char *argv[] = {
        "get", "lease", lease, "-n", "default", "-o", "jsonpath={.spec.holderIdentity}", NULL};
    assert_int_equal(kcr_testenv_kubectl(env, argv, &out), 0);
    assert_true(strlen(out) > 0);
    free(out);
    kcr_manager_request_stop(r.m);
    pthread_join(th, NULL);
    assert_int_equal(r.rc, 0);
    assert_int_equal(kcr_testenv_kubectl(env, argv, &out), 0);
    assert_string_equal(out, "");
    free(out);
  }
  kcr_buf_free(&body);
  kcr_manager_destroy(r.m);
}

/*
 * kcr_manager_event_recorder against the apiserver: an Event about a ConfigMap,
 * its reporting controller the component, recorded twice: the POST goes out at
 * once, the series PATCH (count 2) inside its 30 s interval only because the
 * graceful stop flushes before kcr_manager_run returns.
 */
static void test_manager_event_recorder_writes_events(void **state) {
  static const kcr_gvr configmaps = {"", "v1", "configmaps"};
  kcr_manager_options mo;
  kcr_manager_t *m;
  kcr_event_recorder_t *rec;
  kcr_error_t err;
  json_t *cm, *created = NULL, *list, *ev;
  char name[64];
  (void)state;

  mo = manager_options();
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_create(&mo, &m, &err), 0);
  rec = kcr_manager_event_recorder(m, "kcr.dev/manager-it");
  assert_non_null(rec);
  assert_ptr_equal(kcr_manager_event_recorder(m, "kcr.dev/manager-it"), rec);
  snprintf(name, sizeof(name), "kcr-mgr-events-%d", (int)getpid());
  cm = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name",
                 name);
  assert_int_equal(kcr_client_create_object(kcr_manager_rest_client(m), &configmaps, "default", cm,
                                            NULL, &created, &err),
                   0);
  json_decref(cm);
  /* created first, so that the second record is a series PATCH, not in the POST */
  for (int i = 0; i < 2; i++) {
    assert_int_equal(kcr_event_record_object(rec, created, KCR_EVENT_NORMAL, "Reconciled",
                                             "Reconcile", "reconciled %s", name),
                     0);
    if (i == 0)
      assert_int_equal(kcr_event_recorder_flush(rec, 30 * KCR_NSEC_PER_SEC), 0);
  }
  kcr_manager_request_stop(m);
  assert_int_equal(kcr_manager_run(m, &err), 0);

  list = kcr_it_events_about(env, "default", name);
  assert_non_null(list);
  assert_int_equal(json_array_size(list), 1);
  ev = json_array_get(list, 0);
  assert_string_equal(json_string_value(json_object_get(ev, "reason")), "Reconciled");
  assert_string_equal(json_string_value(json_object_get(ev, "reportingComponent")),
                      "kcr.dev/manager-it");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "series"), "count")), 2);
  json_decref(list);
  kcr_client_delete(kcr_manager_rest_client(m), &configmaps, "default", name, NULL, NULL, NULL);
  kcr_manager_destroy(m);
  json_decref(created);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_manager_serves_probes_metrics_and_leads),
      cmocka_unit_test(test_manager_event_recorder_writes_events),
  };
  return cmocka_run_group_tests_name("manager_serving_it", tests, group_setup, group_teardown);
}
