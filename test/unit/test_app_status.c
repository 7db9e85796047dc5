/* SPDX-License-Identifier: MIT */
/*
 * test_app_status.c: the App's status from the observed Deployment: replicas,
 * selector, url, the Available/Progressing/Degraded/Paused conditions with
 * metav1.Condition semantics (lastTransitionTime moves only on a status
 * change), "status changed?", and allocation failures. Time is a parameter, so
 * every timestamp below is exact.
 */
#include <string.h>

#include "kcr/common.h"
#include "kcr/meta.h"
#include "testutil.h"

#include "app/app_desired.h"
#include "app/app_status.h"

#define FIXTURE(name) KCR_TEST_DATA_DIR "/operator/" name

static const kcr_time_t T0 = {1735689600, 0};  /* 2025-01-01T00:00:00Z */
static const kcr_time_t T1 = {1735689660, 5};  /* 2025-01-01T00:01:00Z */
static const kcr_time_t T2 = {1735693200, 99}; /* 2025-01-01T01:00:00Z */

static json_t *load_file(const char *path) {
  json_error_t e;
  json_t *j = json_load_file(path, 0, &e);
  if (!j) {
    fail_msg("%s:%d: %s", path, e.line, e.text);
  }
  return j;
}

static json_t *load(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  if (!j) {
    fail_msg("%s", e.text);
  }
  return j;
}

/* cond returns the field of the condition of that type in status. */
static const char *cond(const json_t *status, const char *type, const char *field) {
  json_t *c = kop_condition_find(json_object_get(status, "conditions"), type);
  return c ? json_string_value(json_object_get(c, field)) : NULL;
}

/* status_of computes the status and stores it into app (as a status write would). */
static json_t *status_of(json_t *app, const json_t *dep, const char *reason, kcr_time_t now) {
  kop_app_observed obs = {dep, reason, reason ? "Deployment web exists and is not owned" : NULL};
  json_t *st = NULL;
  assert_int_equal(kop_app_status(app, &obs, now, &st, NULL), 0);
  return st;
}

static void test_app_status_ready_deployment(void **state) {
  json_t *app = load_file(FIXTURE("app_minimal.json"));
  json_t *dep = load_file(FIXTURE("deployment_server.json"));
  json_t *st;
  (void)state;
  json_object_set_new(json_object_get(app, "spec"), "port", json_integer(80));
  st = status_of(app, dep, NULL, T0);
  assert_int_equal(json_integer_value(json_object_get(st, "observedGeneration")), 1);
  assert_int_equal(json_integer_value(json_object_get(st, "replicas")), 1);
  assert_int_equal(json_integer_value(json_object_get(st, "readyReplicas")), 1);
  assert_string_equal(json_string_value(json_object_get(st, "selector")),
                      "app.kubernetes.io/name=tiny,app.kubernetes.io/instance=tiny");
  assert_string_equal(json_string_value(json_object_get(st, "url")), "http://tiny.default.svc:80");
  assert_string_equal(cond(st, "Available", "status"), "True");
  assert_string_equal(cond(st, "Available", "reason"), "MinimumReplicasAvailable");
  assert_string_equal(cond(st, "Available", "message"), "1/1 replicas ready");
  assert_string_equal(cond(st, "Available", "lastTransitionTime"), "2025-01-01T00:00:00Z");
  assert_string_equal(cond(st, "Progressing", "status"), "False");
  assert_string_equal(cond(st, "Progressing", "reason"), "RolloutComplete");
  assert_string_equal(cond(st, "Degraded", "status"), "False");
  assert_null(cond(st, "Paused", "status"));
  assert_int_equal(json_array_size(json_object_get(st, "conditions")), 3);
  json_decref(st);
  json_decref(dep);
  json_decref(app);
}

static void test_app_status_no_deployment_yet(void **state) {
  json_t *app = load_file(FIXTURE("app_minimal.json"));
  json_t *st;
  (void)state;
  st = status_of(app, NULL, NULL, T0);
  assert_int_equal(json_integer_value(json_object_get(st, "replicas")), 0);
  assert_int_equal(json_integer_value(json_object_get(st, "readyReplicas")), 0);
  assert_null(json_object_get(st, "url"));
  assert_string_equal(cond(st, "Available", "status"), "False");
  assert_string_equal(cond(st, "Available", "reason"), "DeploymentMissing");
  assert_string_equal(cond(st, "Progressing", "status"), "True");
  assert_string_equal(cond(st, "Progressing", "reason"), "Creating");
  json_decref(st);
  json_decref(app);
}

static void test_app_status_scaled_to_zero(void **state) {
  json_t *app = load_file(FIXTURE("app_minimal.json"));
  json_t *dep = load("{\"metadata\":{\"generation\":2},\"status\":{\"observedGeneration\":2}}");
  json_t *st;
  (void)state;
  json_object_set_new(json_object_get(app, "spec"), "replicas", json_integer(0));
  st = status_of(app, dep, NULL, T0);
  assert_string_equal(cond(st, "Available", "status"), "True");
  assert_string_equal(cond(st, "Available", "reason"), "ScaledToZero");
  assert_string_equal(cond(st, "Progressing", "reason"), "RolloutComplete");
  json_decref(st);
  json_decref(dep);
  json_decref(app);
}

static void test_app_status_rolling_out(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *dep = load("{\"metadata\":{\"generation\":5},\"status\":{\"observedGeneration\":5,"
                     "\"replicas\":3,\"updatedReplicas\":1,\"readyReplicas\":2,"
                     "\"availableReplicas\":2,\"conditions\":[{\"type\":\"Available\","
                     "\"status\":\"True\"}]}}");
  json_t *st;
  (void)state;
  st = status_of(app, dep, NULL, T0);
  assert_string_equal(cond(st, "Available", "status"), "True");
  assert_string_equal(cond(st, "Available", "message"), "2/2 replicas ready");
  assert_string_equal(cond(st, "Progressing", "status"), "True");
  assert_string_equal(cond(st, "Progressing", "reason"), "RollingOut");
  assert_int_equal(json_integer_value(json_object_get(st, "replicas")), 3);
  json_decref(st);
  json_decref(dep);
  json_decref(app);
}

static void test_app_status_not_ready(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  /* Ready replicas but the Deployment itself says it is not available. */
  json_t *dep = load("{\"metadata\":{\"generation\":1},\"status\":{\"observedGeneration\":1,"
                     "\"replicas\":2,\"updatedReplicas\":2,\"readyReplicas\":1,"
                     "\"availableReplicas\":1,\"conditions\":[{\"type\":\"Available\","
                     "\"status\":\"False\"}]}}");
  /* No Available condition at all (as a test marks status by hand): counts decide. */
  json_t *bare = load("{\"status\":{\"replicas\":2,\"updatedReplicas\":2,\"readyReplicas\":2,"
                      "\"availableReplicas\":2}}");
  json_t *st;
  (void)state;
  st = status_of(app, dep, NULL, T0);
  assert_string_equal(cond(st, "Available", "status"), "False");
  assert_string_equal(cond(st, "Available", "reason"), "ReplicasUnavailable");
  assert_string_equal(cond(st, "Available", "message"), "1/2 replicas ready");
  json_decref(st);
  st = status_of(app, bare, NULL, T0);
  assert_string_equal(cond(st, "Available", "status"), "True");
  assert_string_equal(cond(st, "Progressing", "status"), "False");
  json_decref(st);
  json_decref(bare);
  json_decref(dep);
  json_decref(app);
}

static void test_app_status_name_conflict(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *st;
  (void)state;
  st = status_of(app, NULL, KOP_APP_REASON_NAME_CONFLICT, T0);
  assert_string_equal(cond(st, "Degraded", "status"), "True");
  assert_string_equal(cond(st, "Degraded", "reason"), "NameConflict");
  assert_string_equal(cond(st, "Degraded", "message"), "Deployment web exists and is not owned");
  assert_string_equal(cond(st, "Progressing", "status"), "False");
  assert_string_equal(cond(st, "Available", "status"), "False");
  json_decref(st);
  json_decref(app);
}

static void test_app_status_progress_deadline(void **state) {
  json_t *app = load_file(FIXTURE("app_minimal.json"));
  json_t *dep = load("{\"status\":{\"replicas\":1,\"updatedReplicas\":1,\"conditions\":["
                     "{\"type\":\"Progressing\",\"status\":\"False\","
                     "\"reason\":\"ProgressDeadlineExceeded\",\"message\":\"too slow\"}]}}");
  json_t *st;
  (void)state;
  st = status_of(app, dep, NULL, T0);
  assert_string_equal(cond(st, "Degraded", "status"), "True");
  assert_string_equal(cond(st, "Degraded", "reason"), "ProgressDeadlineExceeded");
  assert_string_equal(cond(st, "Degraded", "message"), "too slow");
  assert_string_equal(cond(st, "Progressing", "status"), "False");
  json_decref(st);
  json_decref(dep);
  json_decref(app);
}

static void test_app_status_paused(void **state) {
  json_t *app = load_file(FIXTURE("app_minimal.json"));
  json_t *st;
  (void)state;
  json_object_set_new(json_object_get(app, "spec"), "paused", json_true());
  st = status_of(app, NULL, NULL, T0);
  assert_string_equal(cond(st, "Paused", "status"), "True");
  assert_string_equal(cond(st, "Paused", "reason"), "Paused");
  json_object_set_new(app, "status", st);
  /* Unpaused: the condition goes away. */
  json_object_set_new(json_object_get(app, "spec"), "paused", json_false());
  st = status_of(app, NULL, NULL, T1);
  assert_null(cond(st, "Paused", "status"));
  assert_int_equal(json_array_size(json_object_get(st, "conditions")), 3);
  json_decref(st);
  json_decref(app);
}

/* The heart of "no hot loops": same world, same status, nothing to write. */
static void test_app_status_transitions_and_changed(void **state) {
  json_t *app = load_file(FIXTURE("app_minimal.json"));
  json_t *dep = load_file(FIXTURE("deployment_server.json"));
  json_t *st, *again;
  (void)state;
  st = status_of(app, NULL, NULL, T0);
  assert_true(kop_app_status_changed(app, st));
  json_object_set_new(app, "status", st);

  /* Same observation later: equal status, no write; times unchanged. */
  again = status_of(app, NULL, NULL, T1);
  assert_false(kop_app_status_changed(app, again));
  json_decref(again);

  /* The Deployment becomes ready at T1: Available flips, its time moves to T1;
   * Degraded stays False and keeps T0. */
  st = status_of(app, dep, NULL, T1);
  assert_true(kop_app_status_changed(app, st));
  assert_string_equal(cond(st, "Available", "lastTransitionTime"), "2025-01-01T00:01:00Z");
  assert_string_equal(cond(st, "Degraded", "lastTransitionTime"), "2025-01-01T00:00:00Z");
  assert_string_equal(cond(st, "Progressing", "lastTransitionTime"), "2025-01-01T00:01:00Z");
  json_object_set_new(app, "status", st);

  /* A new generation at T2 with the same outcome: observedGeneration moves,
   * transition times do not. */
  json_object_set_new(kcr_meta_metadata(app), "generation", json_integer(2));
  st = status_of(app, dep, NULL, T2);
  assert_true(kop_app_status_changed(app, st));
  assert_int_equal(json_integer_value(json_object_get(st, "observedGeneration")), 2);
  assert_string_equal(cond(st, "Available", "lastTransitionTime"), "2025-01-01T00:01:00Z");
  assert_int_equal(json_integer_value(json_object_get(
                       kop_condition_find(json_object_get(st, "conditions"), "Available"),
                       "observedGeneration")),
                   2);
  json_object_set_new(app, "status", st);
  again = status_of(app, dep, NULL, T2);
  assert_false(kop_app_status_changed(app, again));
  json_decref(again);
  json_decref(dep);
  json_decref(app);
}

static void test_app_status_keeps_foreign_conditions(void **state) {
  json_t *app = load_file(FIXTURE("app_minimal.json"));
  json_t *st;
  (void)state;
  json_object_set_new(app, "status",
                      load("{\"conditions\":[{\"type\":\"Custom\",\"status\":\"True\","
                           "\"reason\":\"X\",\"message\":\"\","
                           "\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}]}"));
  st = status_of(app, NULL, NULL, T0);
  assert_string_equal(cond(st, "Custom", "status"), "True");
  assert_int_equal(json_array_size(json_object_get(st, "conditions")), 4);
  json_decref(st);
  json_decref(app);
}

static void test_app_status_condition_set(void **state) {
  app_v1alpha1_status_t *st = NULL;
  bool changed = false;
  kcr_error_t err;
  (void)state;
  assert_int_equal(app_v1alpha1_status_create(&st, NULL), 0);
  assert_int_equal(kop_condition_set(st, "Ready", "True", "Ok", NULL, 1, T0, &changed, NULL), 0);
  assert_true(changed);
  assert_int_equal(kop_condition_set(st, "Ready", "True", "Ok", "", 1, T1, &changed, NULL), 0);
  assert_false(changed);
  assert_int_equal(kop_condition_set(st, "Ready", "True", "Ok", "more", 1, T1, &changed, NULL), 0);
  assert_true(changed);
  assert_string_equal(kop_condition_get(st, "Ready")->last_transition_time, "2025-01-01T00:00:00Z");
  assert_string_equal(kop_condition_get(st, "Ready")->message, "more");
  assert_int_equal(kop_condition_set(st, "Ready", "False", "Bad", "", 1, T2, &changed, NULL), 0);
  assert_string_equal(kop_condition_get(st, "Ready")->last_transition_time, "2025-01-01T01:00:00Z");
  /* a second type is appended after the first; replacing the first keeps the order */
  assert_int_equal(kop_condition_set(st, "Synced", "True", "Ok", "", 1, T2, &changed, NULL), 0);
  assert_int_equal(kop_condition_set(st, "Ready", "True", "Ok", "", 2, T2, &changed, NULL), 0);
  assert_int_equal(st->conditions_len, 2);
  assert_string_equal(st->conditions[0].type, "Ready");
  assert_int_equal(st->conditions[0].observed_generation, 2);
  assert_string_equal(st->conditions[1].type, "Synced");
  kcr_error_clear(&err);
  assert_int_equal(kop_condition_set(st, "Ready", "Maybe", "R", "", 1, T0, NULL, &err), KCR_EINVAL);
  assert_int_equal(kop_condition_set(st, "Ready", "True", "", "", 1, T0, NULL, NULL), KCR_EINVAL);
  assert_int_equal(kop_condition_set(NULL, "Ready", "True", "R", "", 1, T0, NULL, NULL),
                   KCR_EINVAL);
  assert_int_equal(kop_condition_set(st, "Other", "True", "R", "", 1,
                                     (kcr_time_t){INT64_C(400000000000), 0}, NULL, NULL),
                   KCR_ERANGE);
  assert_true(kop_condition_remove(st, "Ready"));
  assert_false(kop_condition_remove(st, "Ready"));
  assert_int_equal(st->conditions_len, 1);
  assert_string_equal(st->conditions[0].type, "Synced");
  assert_true(kop_condition_remove(st, "Synced"));
  assert_int_equal(st->conditions_len, 0);
  app_v1alpha1_status_free(st);
}

static void test_app_status_alloc_failures(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *dep = load_file(FIXTURE("deployment_server.json"));
  kop_app_observed obs = {dep, NULL, NULL};
  kop_app_observed conflict = {NULL, KOP_APP_REASON_NAME_CONFLICT, "taken"};
  json_t *out = NULL;
  (void)state;
  json_object_set_new(json_object_get(app, "spec"), "paused", json_true());
  KCR_TEST_ALLOC_LOOP(kop_app_status(app, &obs, T0, &out, NULL), (json_decref(out), out = NULL));
  assert_int_equal(kop_app_status(app, &obs, T0, &out, NULL), 0);
  json_object_set_new(app, "status", out);
  out = NULL;
  KCR_TEST_ALLOC_LOOP(kop_app_status(app, &conflict, T1, &out, NULL),
                      (json_decref(out), out = NULL));
  json_decref(dep);
  json_decref(app);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_app_status_ready_deployment),
      cmocka_unit_test(test_app_status_no_deployment_yet),
      cmocka_unit_test(test_app_status_scaled_to_zero),
      cmocka_unit_test(test_app_status_rolling_out),
      cmocka_unit_test(test_app_status_not_ready),
      cmocka_unit_test(test_app_status_name_conflict),
      cmocka_unit_test(test_app_status_progress_deadline),
      cmocka_unit_test(test_app_status_paused),
      cmocka_unit_test(test_app_status_transitions_and_changed),
      cmocka_unit_test(test_app_status_keeps_foreign_conditions),
      cmocka_unit_test(test_app_status_condition_set),
      cmocka_unit_test(test_app_status_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
