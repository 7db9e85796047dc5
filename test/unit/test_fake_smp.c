/* SPDX-License-Identifier: MIT */
/*
 * test_fake_smp.c: the fake client's strategic merge patch (issue 25): lists
 * merged by their OpenAPI patch-merge keys (containers and volumes by name,
 * env by name, ports by containerPort), scalar merge lists unioned
 * (finalizers), other lists replaced (tolerations), the directives $patch
 * (delete, replace), $deleteFromPrimitiveList, $setElementOrder and
 * $retainKeys, bad patches refused with 400, and a kind without a schema (a
 * CRD) refused with 415 as the API server does. Then the subset of
 * server-side apply: create when absent, merge by list-map keys, atomic lists
 * replaced, sets unioned, dry run, the status subresource, a CRD's lists
 * replaced. The patch table's agreement with the OpenAPI document is test
 * unit_fake_smp_table.
 */
#include <stdio.h>
#include <string.h>

#include "kcr/apierror.h"
#include "kcr/meta.h"
#include "kcr/testing.h"
#include "testutil.h"

/* fixture: the error of the last call (each call gets a fake client of its own). */
typedef struct fixture {
  kcr_error_t err;
} fixture;

static int setup(void **state) {
  *state = calloc(1, sizeof(fixture));
  return *state ? 0 : -1;
}

static int teardown(void **state) {
  free(*state);
  return 0;
}

static json_t *parse(const char *text) {
  json_error_t e;
  json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
  if (!v)
    fail_msg("bad JSON in the test (%s): %s", e.text, text);
  return v;
}

/*
 * smp seeds obj (JSON text), applies the strategic merge patch patch to it and
 * returns the call's code; *out (when not NULL) is the patched object.
 */
static int smp(fixture *fx, const char *obj, const char *patch, json_t **out) {
  json_t *o = parse(obj);
  kcr_fake_client_t *f = NULL;
  kcr_objclient c;
  int rc;
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_fake_client_create(NULL, &f, &fx->err), 0);
  c = kcr_fake_client_objclient(f);
  assert_int_equal(kcr_fake_client_add(f, o, &fx->err), 0);
  rc = kcr_objclient_patch(&c, o, KCR_PATCH_STRATEGIC, patch, strlen(patch), NULL, out, &fx->err);
  kcr_fake_client_destroy(f);
  json_decref(o);
  return rc;
}

/* expect_at checks the value at dotted path of obj equals want (JSON text). */
static void expect_at(const json_t *obj, const char *path, const char *want) {
  json_t *w = parse(want);
  const json_t *got = kcr_meta_path(obj, path);
  if (!got || !json_equal(got, w)) {
    char *g = got ? json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(w);
    fail_msg("%s: got %s, want %s", path, g ? g : "(nothing)", want);
  }
  json_decref(w);
}

#define DEPLOY(spec)                                                                               \
  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"namespace\":\"default\","   \
  "\"name\":\"web\",\"finalizers\":[\"a\",\"b\"]},\"spec\":{\"template\":{\"spec\":" spec "}}}"

#define PODSPEC "spec.template.spec"

static void test_fake_smp_containers_by_name(void **state) {
  fixture *fx = *state;
  json_t *out = NULL;
  assert_int_equal(
      smp(fx,
          DEPLOY("{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\"},{\"name\":\"b\",\"image\":"
                 "\"b:1\"}],\"tolerations\":[{\"key\":\"t1\"}]}"),
          "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"b:2\"},"
          "{\"name\":\"c\",\"image\":\"c:1\"}],\"tolerations\":[{\"key\":\"t2\"}]}}}}",
          &out),
      0);
  expect_at(out, PODSPEC ".containers",
            "[{\"name\":\"a\",\"image\":\"a:1\"},{\"name\":\"b\",\"image\":\"b:2\"},"
            "{\"name\":\"c\",\"image\":\"c:1\"}]");
  /* tolerations have no patch strategy: replaced */
  expect_at(out, PODSPEC ".tolerations", "[{\"key\":\"t2\"}]");
  json_decref(out);
}

static void test_fake_smp_env_and_ports(void **state) {
  fixture *fx = *state;
  json_t *out = NULL;
  assert_int_equal(
      smp(fx,
          DEPLOY("{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\",\"env\":[{\"name\":\"X\","
                 "\"value\":\"1\"},{\"name\":\"Y\",\"value\":\"2\"}],\"ports\":[{"
                 "\"containerPort\":80,\"name\":\"http\"}]}]}"),
          "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":"
          "\"Y\",\"value\":\"3\"}],\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"},{"
          "\"containerPort\":443,\"name\":\"https\"}]}]}}}}",
          &out),
      0);
  expect_at(out, PODSPEC ".containers",
            "[{\"name\":\"a\",\"image\":\"a:1\",\"env\":[{\"name\":\"X\",\"value\":\"1\"},{"
            "\"name\":\"Y\",\"value\":\"3\"}],\"ports\":[{\"containerPort\":80,\"name\":\"http\","
            "\"protocol\":\"TCP\"},{\"containerPort\":443,\"name\":\"https\"}]}]");
  json_decref(out);
}

static void test_fake_smp_finalizers_union(void **state) {
  fixture *fx = *state;
  json_t *out = NULL;
  assert_int_equal(smp(fx, DEPLOY("{}"), "{\"metadata\":{\"finalizers\":[\"b\",\"c\"]}}", &out), 0);
  expect_at(out, "metadata.finalizers", "[\"a\",\"b\",\"c\"]");
  json_decref(out);
}

static void test_fake_smp_delete_directives(void **state) {
  fixture *fx = *state;
  json_t *out = NULL;
  assert_int_equal(
      smp(fx,
          DEPLOY("{\"volumes\":[{\"name\":\"v1\",\"emptyDir\":{}},{\"name\":\"v2\",\"emptyDir\":{}}"
                 "],\"nodeSelector\":{\"zone\":\"a\"}}"),
          "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"a\"]},\"spec\":{\"template\":"
          "{\"spec\":{\"volumes\":[{\"name\":\"v1\",\"$patch\":\"delete\"}],\"nodeSelector\":{"
          "\"$patch\":\"delete\"}}}}}",
          &out),
      0);
  expect_at(out, PODSPEC ".volumes", "[{\"name\":\"v2\",\"emptyDir\":{}}]");
  expect_at(out, PODSPEC ".nodeSelector", "{}");
  expect_at(out, "metadata.finalizers", "[\"b\"]");
  json_decref(out);
}

static void test_fake_smp_replace_directive(void **state) {
  fixture *fx = *state;
  json_t *out = NULL;
  assert_int_equal(
      smp(fx,
          DEPLOY("{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\"}],\"nodeSelector\":{\"zone\":"
                 "\"a\",\"disk\":\"ssd\"}}"),
          "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"z\",\"image\":\"z:1\"},"
          "{\"$patch\":\"replace\"}],\"nodeSelector\":{\"$patch\":\"replace\",\"zone\":\"b\"}}}}}",
          &out),
      0);
  expect_at(out, PODSPEC ".containers", "[{\"name\":\"z\",\"image\":\"z:1\"}]");
  expect_at(out, PODSPEC ".nodeSelector", "{\"zone\":\"b\"}");
  json_decref(out);
}

static void test_fake_smp_order_and_retain_keys(void **state) {
  fixture *fx = *state;
  json_t *out = NULL;
  assert_int_equal(
      smp(fx,
          "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"namespace\":"
          "\"default\",\"name\":\"web\"},\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\","
          "\"rollingUpdate\":{\"maxSurge\":1}},\"template\":{\"spec\":{\"containers\":[{\"name\":"
          "\"a\"},{\"name\":\"b\"}]}}}}",
          "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"type\":\"Recreate\"},"
          "\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":"
          "\"a\"}]}}}}",
          &out),
      0);
  expect_at(out, "spec.strategy", "{\"type\":\"Recreate\"}");
  expect_at(out, PODSPEC ".containers", "[{\"name\":\"b\"},{\"name\":\"a\"}]");
  json_decref(out);
}

/* A Service's ports merge by port; a ServiceAccount's secrets by name. */
static void test_fake_smp_core_kinds(void **state) {
  fixture *fx = *state;
  json_t *out = NULL;
  assert_int_equal(smp(fx,
                       "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"namespace\":"
                       "\"default\",\"name\":\"svc\"},\"spec\":{\"ports\":[{\"port\":80,"
                       "\"targetPort\":8080}]}}",
                       "{\"spec\":{\"ports\":[{\"port\":80,\"name\":\"http\"}]}}", &out),
                   0);
  expect_at(out, "spec.ports", "[{\"port\":80,\"targetPort\":8080,\"name\":\"http\"}]");
  json_decref(out);
}

static void test_fake_smp_bad_patch(void **state) {
  fixture *fx = *state;
  /* an element of a merged list without its merge key */
  assert_int_equal(smp(fx, DEPLOY("{\"containers\":[{\"name\":\"a\"}]}"),
                       "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}}}",
                       NULL),
                   KCR_EAPI);
  assert_int_equal(fx->err.http_status, 400);
  assert_true(kcr_error_is_bad_request(&fx->err));
}

/* A kind with no schema (a CRD): 415 UnsupportedMediaType, as the server. */
static void test_fake_smp_crd_refused(void **state) {
  fixture *fx = *state;
  json_t *out = NULL;
  assert_int_equal(smp(fx,
                       "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{"
                       "\"namespace\":\"default\",\"name\":\"w\"},\"spec\":{\"size\":1}}",
                       "{\"spec\":{\"size\":2}}", &out),
                   KCR_EAPI);
  assert_null(out);
  assert_int_equal(fx->err.http_status, 415);
  assert_string_equal(fx->err.reason, "UnsupportedMediaType");
}

/* ---- server-side apply ---- */

/* apply_to seeds obj (JSON text, or NULL for none), applies applied with
 * manager "test" (and o's dry_run, subresource) and returns the code; *out is
 * the answer and *stored what the fake then holds. */
static int apply_to(fixture *fx, const char *obj, const char *applied, bool dry_run,
                    const char *subresource, json_t **out, json_t **stored) {
  json_t *a = parse(applied);
  kcr_fake_client_t *f = NULL;
  kcr_objclient c;
  kcr_apply_options o = {"test", true, dry_run, NULL};
  kcr_gvk gvk;
  char group[KCR_GVK_GROUP_MAX];
  int rc;
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_fake_client_create(NULL, &f, &fx->err), 0);
  c = kcr_fake_client_objclient(f);
  if (obj)
    assert_int_equal(kcr_fake_client_add_json(f, obj, &fx->err), 0);
  rc = kcr_objclient_apply(&c, a, &o, subresource, out, &fx->err);
  assert_int_equal(kcr_meta_gvk(a, &gvk, group, sizeof(group)), 0);
  {
    kcr_error_t e;
    kcr_error_clear(&e);
    if (kcr_objclient_get(&c, &gvk, kcr_meta_namespace(a), kcr_meta_name(a), stored, &e) != 0)
      *stored = NULL;
  }
  kcr_fake_client_destroy(f);
  json_decref(a);
  return rc;
}

#define LIVE                                                                                       \
  DEPLOY("{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\",\"args\":[\"x\",\"y\"],\"env\":[{"    \
         "\"name\":\"X\",\"value\":\"1\"}]}]}")

static void test_fake_apply_creates(void **state) {
  fixture *fx = *state;
  json_t *out = NULL, *stored = NULL;
  assert_int_equal(apply_to(fx, NULL, LIVE, false, NULL, &out, &stored), 0);
  assert_non_null(stored);
  expect_at(stored, PODSPEC ".containers",
            "[{\"name\":\"a\",\"image\":\"a:1\",\"args\":[\"x\",\"y\"],\"env\":[{\"name\":"
            "\"X\",\"value\":\"1\"}]}]");
  assert_non_null(kcr_meta_resource_version(out));
  json_decref(out);
  json_decref(stored);
  /* a dry run creates nothing */
  assert_int_equal(apply_to(fx, NULL, LIVE, true, NULL, &out, &stored), 0);
  assert_null(stored);
  json_decref(out);
}

static void test_fake_apply_merges_by_keys(void **state) {
  fixture *fx = *state;
  json_t *out = NULL, *stored = NULL;
  assert_int_equal(
      apply_to(fx, LIVE,
               DEPLOY("{\"containers\":[{\"name\":\"a\",\"image\":\"a:2\",\"args\":[\"z\"],"
                      "\"env\":[{\"name\":\"Y\",\"value\":\"2\"}]},{\"name\":\"b\"}]}"),
               false, NULL, &out, &stored),
      0);
  /* containers and env are list-type map: merged by name; args atomic: replaced;
   * finalizers a set: unioned */
  expect_at(stored, PODSPEC ".containers",
            "[{\"name\":\"a\",\"image\":\"a:2\",\"args\":[\"z\"],\"env\":[{\"name\":\"X\","
            "\"value\":\"1\"},{\"name\":\"Y\",\"value\":\"2\"}]},{\"name\":\"b\"}]");
  expect_at(stored, "metadata.finalizers", "[\"a\",\"b\"]");
  json_decref(out);
  json_decref(stored);
}

static void test_fake_apply_dry_run_and_status(void **state) {
  fixture *fx = *state;
  json_t *out = NULL, *stored = NULL;
  static const char applied[] =
      "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"namespace\":"
      "\"default\",\"name\":\"web\"},\"spec\":{\"replicas\":5},\"status\":{\"readyReplicas\":"
      "3}}";
  assert_int_equal(apply_to(fx, LIVE, applied, true, NULL, &out, &stored), 0);
  expect_at(out, "spec.replicas", "5");
  assert_null(kcr_meta_path(stored, "spec.replicas"));
  json_decref(out);
  json_decref(stored);
  /* through "status" only .status changes */
  assert_int_equal(apply_to(fx, LIVE, applied, false, "status", &out, &stored), 0);
  expect_at(stored, "status.readyReplicas", "3");
  assert_null(kcr_meta_path(stored, "spec.replicas"));
  json_decref(out);
  json_decref(stored);
}

/* A CRD's schema is unknown here: maps merge, every list is replaced. */
static void test_fake_apply_crd(void **state) {
  fixture *fx = *state;
  json_t *out = NULL, *stored = NULL;
  assert_int_equal(
      apply_to(fx,
               "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{"
               "\"namespace\":\"default\",\"name\":\"w\"},\"spec\":{\"size\":1,\"tags\":"
               "[\"a\"]}}",
               "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{"
               "\"namespace\":\"default\",\"name\":\"w\"},\"spec\":{\"tags\":[\"b\"]}}",
               false, NULL, &out, &stored),
      0);
  expect_at(stored, "spec", "{\"size\":1,\"tags\":[\"b\"]}");
  json_decref(out);
  json_decref(stored);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fake_smp_containers_by_name, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_smp_env_and_ports, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_smp_finalizers_union, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_smp_delete_directives, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_smp_replace_directive, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_smp_order_and_retain_keys, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_smp_core_kinds, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_smp_bad_patch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_smp_crd_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_apply_creates, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_apply_merges_by_keys, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_apply_dry_run_and_status, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_apply_crd, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
