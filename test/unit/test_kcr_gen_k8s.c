/* SPDX-License-Identifier: MIT */
/*
 * test_kcr_gen_k8s.c: the built-in kinds' types libkcr ships (the kcr/k8s
 * headers, which kcr-gen writes from the trimmed /openapi/v3 documents in
 * cmd/kcr-gen/openapi/k8s.json, one package per group-version): every kind
 * registers and round-trips through the scheme's codec; a Deployment,
 * a Service, a ConfigMap and a Pod as the local control plane returned them
 * (data/kcr-gen/k8s/, saved with kubectl get -o json) decode to typed values
 * with $ref'd types, int32/int64, int-or-string and quantities, and encode back
 * to the same bytes; unknown members survive at every level; errors name the
 * field; allocation failure is clean.
 */
#include <stdlib.h>
#include <string.h>

#include "kcr/error.h"
#include "kcr/k8s/apps_v1.h"
#include "kcr/k8s/autoscaling_v2.h"
#include "kcr/k8s/batch_v1.h"
#include "kcr/k8s/coordination_v1.h"
#include "kcr/k8s/core_v1.h"
#include "kcr/k8s/networking_v1.h"
#include "kcr/k8s/policy_v1.h"
#include "kcr/k8s/rbac_v1.h"
#include "kcr/scheme.h"
#include "testutil.h"

static json_t *load(const char *name) {
  char path[512];
  json_error_t je;
  json_t *j;
  snprintf(path, sizeof(path), "%s/kcr-gen/k8s/%s", KCR_TEST_DATA_DIR, name);
  if (!(j = json_load_file(path, 0, &je)))
    fail_msg("%s: %s", path, je.text);
  return j;
}

static json_t *parse(const char *text) {
  json_error_t je;
  json_t *j = json_loads(text, 0, &je);
  if (!j)
    fail_msg("bad test JSON: %s: %s", je.text, text);
  return j;
}

/* same_bytes: both values dumped sorted and compact are the same bytes. */
static void assert_same_bytes(const json_t *a, const json_t *b) {
  char *sa = json_dumps(a, JSON_SORT_KEYS | JSON_COMPACT);
  char *sb = json_dumps(b, JSON_SORT_KEYS | JSON_COMPACT);
  assert_non_null(sa);
  assert_non_null(sb);
  if (strcmp(sa, sb) != 0)
    fail_msg("round trip differs:\n in: %s\nout: %s", sa, sb);
  free(sa);
  free(sb);
}

typedef int (*dec_fn)(const json_t *, void **, kcr_error_t *, void *);
typedef int (*enc_fn)(const void *, json_t **, kcr_error_t *, void *);
typedef void (*free_fn)(void *, void *);

static void round_trip(const json_t *j, dec_fn dec, enc_fn enc, free_fn fr) {
  void *v = NULL;
  json_t *out = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  if (dec(j, &v, &err, NULL) != 0)
    fail_msg("decode: %s", err.message);
  if (enc(v, &out, &err, NULL) != 0)
    fail_msg("encode: %s", err.message);
  assert_same_bytes(j, out);
  json_decref(out);
  fr(v, NULL);
}

static void test_kcr_gen_k8s_round_trip(void **state) {
  static const struct {
    const char *file;
    dec_fn dec;
    enc_fn enc;
    free_fn fr;
  } cases[] = {
      {"deployment.json", kcr_apps_v1_deployment_scheme_decode,
       kcr_apps_v1_deployment_scheme_encode, kcr_apps_v1_deployment_scheme_free},
      {"service.json", kcr_core_v1_service_scheme_decode, kcr_core_v1_service_scheme_encode,
       kcr_core_v1_service_scheme_free},
      {"configmap.json", kcr_core_v1_config_map_scheme_decode, kcr_core_v1_config_map_scheme_encode,
       kcr_core_v1_config_map_scheme_free},
      {"pod.json", kcr_core_v1_pod_scheme_decode, kcr_core_v1_pod_scheme_encode,
       kcr_core_v1_pod_scheme_free},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_t *j = load(cases[i].file);
    round_trip(j, cases[i].dec, cases[i].enc, cases[i].fr);
    json_decref(j);
  }
}

static const char *entry_text(const kcr_core_v1_resource_requirements_limits_entry_t *e, size_t n,
                              const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(e[i].key, key) == 0)
      return e[i].value.text;
  return NULL;
}

static void test_kcr_gen_k8s_typed_fields(void **state) {
  json_t *j = load("deployment.json");
  kcr_apps_v1_deployment_t *d = NULL;
  kcr_core_v1_service_t *svc = NULL;
  const kcr_core_v1_container_t *c;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(kcr_apps_v1_deployment_decode(j, &d, &err), 0);
  json_decref(j);
  assert_string_equal(d->metadata->name, "web");
  assert_true(d->metadata->has_generation);
  assert_true(d->spec->has_replicas);
  assert_int_equal(d->spec->replicas, 2); /* int32 */
  assert_true(d->spec->strategy->rolling_update->has_max_surge);
  assert_true(d->spec->strategy->rolling_update->max_surge.is_string);
  assert_string_equal(d->spec->strategy->rolling_update->max_surge.str_value, "25%");
  assert_int_equal(d->spec->template->spec->containers_len, 1);
  c = &d->spec->template->spec->containers[0];
  assert_string_equal(c->name, "nginx");
  assert_string_equal(c->image, "nginx:1.27");
  assert_string_equal(entry_text(c->resources->limits, c->resources->limits_len, "cpu"), "500m");
  assert_string_equal(entry_text(c->resources->limits, c->resources->limits_len, "memory"), "64Mi");
  assert_true(d->spec->template->spec->has_termination_grace_period_seconds); /* int64 */
  assert_int_equal(d->spec->template->spec->termination_grace_period_seconds, 30);
  kcr_apps_v1_deployment_free(d);

  j = load("service.json");
  assert_int_equal(kcr_core_v1_service_decode(j, &svc, &err), 0);
  json_decref(j);
  assert_int_equal(svc->spec->ports_len, 1);
  assert_int_equal(svc->spec->ports[0].port, 80); /* required: no has_ flag */
  assert_true(svc->spec->ports[0].has_target_port);
  assert_false(svc->spec->ports[0].target_port.is_string);
  assert_int_equal(svc->spec->ports[0].target_port.int_value, 8080);
  kcr_core_v1_service_free(svc);

  {
    kcr_gvk g = kcr_apps_v1_deployment_gvk();
    assert_string_equal(g.group, "apps");
    assert_string_equal(g.version, "v1");
    assert_string_equal(g.kind, "Deployment");
    g = kcr_core_v1_config_map_gvk();
    assert_string_equal(g.group, "");
    assert_string_equal(KCR_CORE_V1_CONFIG_MAP_RESOURCE, "configmaps");
  }
}

static void test_kcr_gen_k8s_unknown_fields_survive(void **state) {
  json_t *j = load("pod.json"), *out = NULL;
  json_t *spec = json_object_get(j, "spec");
  json_t *ctr = json_array_get(json_object_get(spec, "containers"), 0);
  kcr_core_v1_pod_t *pod = NULL, *copy = NULL;
  (void)state;
  json_object_set_new(j, "futureTop", json_string("t"));
  json_object_set_new(spec, "futureSpec", parse("{\"a\": [1, {\"b\": null}]}"));
  json_object_set_new(ctr, "futureContainerField", json_true());
  json_object_set_new(json_object_get(j, "metadata"), "futureMeta", json_integer(7));
  json_object_set_new(json_object_get(j, "status"), "futureStatus", json_string("s"));
  assert_int_equal(kcr_core_v1_pod_decode(j, &pod, NULL), 0);
  assert_non_null(pod->kcr_unknown);
  assert_non_null(json_object_get(pod->spec->containers[0].kcr_unknown, "futureContainerField"));
  assert_int_equal(kcr_core_v1_pod_copy(pod, &copy, NULL), 0);
  assert_true(kcr_core_v1_pod_equal(pod, copy));
  json_object_set_new(copy->spec->kcr_unknown, "futureSpec", json_null());
  assert_false(kcr_core_v1_pod_equal(pod, copy));
  assert_int_equal(kcr_core_v1_pod_encode(pod, &out, NULL), 0);
  assert_same_bytes(j, out);
  json_decref(out);
  kcr_core_v1_pod_free(copy);
  kcr_core_v1_pod_free(pod);
  json_decref(j);
}

static void expect_error(const char *file, const char *pointer_json, const char *want) {
  json_t *j = load(file), *patch = parse(pointer_json);
  kcr_apps_v1_deployment_t *d = NULL;
  kcr_error_t err;
  const char *key;
  json_t *v;
  kcr_error_clear(&err);
  /* pointer_json: {"spec": {"replicas": "x"}}: members merged into j, one level deep */
  json_object_foreach(patch, key, v) {
    json_t *dst = json_object_get(j, key);
    if (json_is_object(dst) && json_is_object(v))
      json_object_update(dst, v);
    else
      json_object_set(j, key, v);
  }
  assert_int_equal(kcr_apps_v1_deployment_decode(j, &d, &err), KCR_EPARSE);
  assert_null(d);
  assert_string_equal(err.message, want);
  json_decref(patch);
  json_decref(j);
}

static void test_kcr_gen_k8s_decode_errors(void **state) {
  (void)state;
  expect_error("deployment.json", "{\"spec\": {\"replicas\": \"2\"}}",
               "spec.replicas: expected an integer, got a string");
  expect_error("deployment.json", "{\"spec\": {\"replicas\": 4294967296}}",
               "spec.replicas: 4294967296 is out of range for int32");
  expect_error("deployment.json",
               "{\"spec\": {\"template\": {\"spec\": {\"containers\": [{\"image\": \"x\"}]}}}}",
               "spec.template.spec.containers[0].name: required field is missing");
  expect_error("deployment.json",
               "{\"spec\": {\"strategy\": {\"rollingUpdate\": {\"maxSurge\": true}}}}",
               "spec.strategy.rollingUpdate.maxSurge: expected an integer or a string, got a "
               "boolean");
  expect_error("deployment.json", "{\"metadata\": {\"labels\": {\"app\": 1}}}",
               "metadata.labels[app]: expected a string, got an integer");
}

static void test_kcr_gen_k8s_alloc_failure(void **state) {
  json_t *j = load("deployment.json"), *out = NULL;
  kcr_apps_v1_deployment_t *d = NULL, *copy = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(kcr_apps_v1_deployment_decode(j, &d, NULL),
                      (kcr_apps_v1_deployment_free(d), d = NULL));
  assert_int_equal(kcr_apps_v1_deployment_decode(j, &d, NULL), 0);
  KCR_TEST_ALLOC_LOOP(kcr_apps_v1_deployment_encode(d, &out, NULL), (json_decref(out), out = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_apps_v1_deployment_copy(d, &copy, NULL),
                      (kcr_apps_v1_deployment_free(copy), copy = NULL));
  kcr_apps_v1_deployment_free(d);
  json_decref(j);
}

static void test_kcr_gen_k8s_register(void **state) {
  kcr_scheme_t *s = NULL;
  const kcr_kind_info *k;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  assert_int_equal(kcr_apps_v1_deployment_register(s, NULL), 0);
  assert_int_equal(kcr_core_v1_pod_register(s, NULL), 0);
  assert_non_null(k = kcr_scheme_lookup_gvk(s, &(kcr_gvk){"", "v1", "Pod"}));
  assert_string_equal(k->list_kind, "PodList");
  assert_non_null(k->decode);
  kcr_scheme_destroy(s);
}

/* Every kind libkcr ships (KCR_K8S_KINDS) registers with a scheme under its own
 * group/version/kind, and an object of it, with the fields its schema requires,
 * goes through the scheme's codec and back unchanged. */
#define WORKLOAD "{\"spec\":{\"selector\":{},\"template\":{}}}"
#define ROLE_REF                                                                                   \
  "{\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"r\"}}"
static void test_kcr_gen_k8s_every_kind(void **state) {
  static const struct {
    int (*reg)(kcr_scheme_t *, kcr_error_t *);
    kcr_gvk gvk;
    const char *api_version;
    const char *required; /* the fields the schema requires, as JSON */
  } kinds[] = {
      {kcr_core_v1_pod_register, {"", "v1", "Pod"}, "v1", NULL},
      {kcr_core_v1_service_register, {"", "v1", "Service"}, "v1", NULL},
      {kcr_core_v1_config_map_register, {"", "v1", "ConfigMap"}, "v1", NULL},
      {kcr_core_v1_secret_register, {"", "v1", "Secret"}, "v1", NULL},
      {kcr_core_v1_service_account_register, {"", "v1", "ServiceAccount"}, "v1", NULL},
      {kcr_core_v1_namespace_register, {"", "v1", "Namespace"}, "v1", NULL},
      {kcr_core_v1_persistent_volume_claim_register,
       {"", "v1", "PersistentVolumeClaim"},
       "v1",
       NULL},
      {kcr_core_v1_event_register, {"", "v1", "Event"}, "v1", "{\"involvedObject\":{}}"},
      {kcr_core_v1_endpoints_register, {"", "v1", "Endpoints"}, "v1", NULL},
      {kcr_apps_v1_deployment_register, {"apps", "v1", "Deployment"}, "apps/v1", WORKLOAD},
      {kcr_apps_v1_stateful_set_register, {"apps", "v1", "StatefulSet"}, "apps/v1", WORKLOAD},
      {kcr_apps_v1_daemon_set_register, {"apps", "v1", "DaemonSet"}, "apps/v1", WORKLOAD},
      {kcr_apps_v1_replica_set_register,
       {"apps", "v1", "ReplicaSet"},
       "apps/v1",
       "{\"spec\":{\"selector\":{}}}"},
      {kcr_batch_v1_job_register, {"batch", "v1", "Job"}, "batch/v1", NULL},
      {kcr_batch_v1_cron_job_register,
       {"batch", "v1", "CronJob"},
       "batch/v1",
       "{\"spec\":{\"schedule\":\"@daily\",\"jobTemplate\":{}}}"},
      {kcr_networking_v1_ingress_register,
       {"networking.k8s.io", "v1", "Ingress"},
       "networking.k8s.io/v1",
       NULL},
      {kcr_networking_v1_network_policy_register,
       {"networking.k8s.io", "v1", "NetworkPolicy"},
       "networking.k8s.io/v1",
       NULL},
      {kcr_policy_v1_pod_disruption_budget_register,
       {"policy", "v1", "PodDisruptionBudget"},
       "policy/v1",
       NULL},
      {kcr_rbac_v1_role_register,
       {"rbac.authorization.k8s.io", "v1", "Role"},
       "rbac.authorization.k8s.io/v1",
       NULL},
      {kcr_rbac_v1_cluster_role_register,
       {"rbac.authorization.k8s.io", "v1", "ClusterRole"},
       "rbac.authorization.k8s.io/v1",
       NULL},
      {kcr_rbac_v1_role_binding_register,
       {"rbac.authorization.k8s.io", "v1", "RoleBinding"},
       "rbac.authorization.k8s.io/v1",
       ROLE_REF},
      {kcr_rbac_v1_cluster_role_binding_register,
       {"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"},
       "rbac.authorization.k8s.io/v1",
       ROLE_REF},
      {kcr_coordination_v1_lease_register,
       {"coordination.k8s.io", "v1", "Lease"},
       "coordination.k8s.io/v1",
       NULL},
      {kcr_autoscaling_v2_horizontal_pod_autoscaler_register,
       {"autoscaling", "v2", "HorizontalPodAutoscaler"},
       "autoscaling/v2",
       "{\"spec\":{\"maxReplicas\":2,\"scaleTargetRef\":{\"kind\":\"Deployment\",\"name\":\"d\"}}"
       "}"},
  };
  kcr_scheme_t *s = NULL;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
    json_t *req = kinds[i].required ? json_loads(kinds[i].required, 0, NULL) : NULL;
    const kcr_kind_info *k;
    json_t *j = json_pack("{ss ss s{ss ss s{ss}}}", "apiVersion", kinds[i].api_version, "kind",
                          kinds[i].gvk.kind, "metadata", "name", "x", "namespace", "default",
                          "labels", "app", "x");
    char list[64];
    if (req) {
      assert_int_equal(json_object_update(j, req), 0);
      json_decref(req);
    }
    assert_int_equal(kinds[i].reg(s, NULL), 0);
    k = kcr_scheme_lookup_gvk(s, &kinds[i].gvk);
    if (!k) {
      json_decref(j);
      fail_msg("%s: not registered under %s/%s", kinds[i].gvk.kind, kinds[i].gvk.group,
               kinds[i].gvk.version);
      continue; /* not reached: cmocka's failure ends the test */
    }
    snprintf(list, sizeof(list), "%sList", kinds[i].gvk.kind);
    assert_string_equal(k->list_kind, list);
    round_trip(j, k->decode, k->encode, k->free_typed);
    json_decref(j);
  }
  kcr_scheme_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kcr_gen_k8s_round_trip),
      cmocka_unit_test(test_kcr_gen_k8s_typed_fields),
      cmocka_unit_test(test_kcr_gen_k8s_unknown_fields_survive),
      cmocka_unit_test(test_kcr_gen_k8s_decode_errors),
      cmocka_unit_test(test_kcr_gen_k8s_alloc_failure),
      cmocka_unit_test(test_kcr_gen_k8s_register),
      cmocka_unit_test(test_kcr_gen_k8s_every_kind),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
