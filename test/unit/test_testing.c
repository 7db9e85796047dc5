/* SPDX-License-Identifier: MIT */
/*
 * test_testing.c: the testing kit (kcr/testing.h). The fake client's cases
 * mirror controller-runtime's fake client tests (pkg/client/fake): object
 * metadata it assigns, generateName, optimistic concurrency, NotFound and
 * AlreadyExists worded as the API server words them, label and field
 * selectors, the status subresource, finalizers and deletionTimestamp, patches,
 * server-side apply without a field manager refused, interceptors; then the
 * recording event recorder, the reconcile context a test builds, log capture,
 * and several threads at once.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kcr/apierror.h"
#include "kcr/controllerutil.h"
#include "kcr/meta.h"
#include "kcr/testing.h"
#include "testutil.h"

static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};
static const kcr_gvk deploy_gvk = {"apps", "v1", "Deployment"};

typedef struct fixture {
  kcr_fake_client_t *f;
  kcr_objclient c;
  kcr_error_t err;
} fixture;

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof(*fx));
  assert_non_null(fx);
  assert_int_equal(kcr_fake_client_create(NULL, &fx->f, NULL), 0);
  fx->c = kcr_fake_client_objclient(fx->f);
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  kcr_fake_client_destroy(fx->f);
  free(fx);
  return 0;
}

static json_t *cm(const char *ns, const char *name, const char *labels_json) {
  json_error_t e;
  json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind",
                        "ConfigMap", "metadata", "namespace", ns, "name", name, "data", "k", "v");
  if (labels_json)
    json_object_set_new(json_object_get(o, "metadata"), "labels", json_loads(labels_json, 0, &e));
  return o;
}

static json_t *deployment(const char *ns, const char *name) {
  return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i}}", "apiVersion", "apps/v1", "kind",
                   "Deployment", "metadata", "namespace", ns, "name", name, "spec", "replicas", 1);
}

static json_t *get(fixture *fx, const kcr_gvk *gvk, const char *ns, const char *name) {
  json_t *out = NULL;
  kcr_error_clear(&fx->err);
  if (kcr_objclient_get(&fx->c, gvk, ns, name, &out, &fx->err) != 0)
    return NULL;
  return out;
}

/* ---- create: metadata it assigns, generateName, the errors ---- */

static void test_testing_create_assigns_metadata(void **state) {
  fixture *fx = *state;
  json_t *in = cm("default", "a", NULL), *out = NULL, *again;
  assert_int_equal(kcr_objclient_create(&fx->c, in, &out, &fx->err), 0);
  assert_non_null(kcr_meta_uid(out));
  assert_int_equal(strlen(kcr_meta_uid(out)), 36);
  assert_non_null(kcr_meta_resource_version(out));
  assert_non_null(kcr_meta_path_string(out, "metadata.creationTimestamp"));
  assert_int_equal(kcr_meta_generation(out), 1);
  again = get(fx, &cm_gvk, "default", "a");
  assert_non_null(again);
  assert_true(json_equal(out, again));
  /* readers own what they get: mutating it does not touch the tracker */
  json_object_set_new(again, "data", json_object());
  json_decref(again);
  again = get(fx, &cm_gvk, "default", "a");
  assert_string_equal(kcr_meta_path_string(again, "data.k"), "v");
  json_decref(again);
  json_decref(out);
  json_decref(in);
}

static void test_testing_create_generate_name(void **state) {
  fixture *fx = *state;
  json_t *in = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                         "metadata", "namespace", "default", "generateName", "job-");
  json_t *a = NULL, *b = NULL;
  assert_int_equal(kcr_objclient_create(&fx->c, in, &a, &fx->err), 0);
  assert_int_equal(kcr_objclient_create(&fx->c, in, &b, &fx->err), 0);
  assert_int_equal(strlen(kcr_meta_name(a)), strlen("job-") + 5);
  assert_memory_equal(kcr_meta_name(a), "job-", 4);
  assert_string_not_equal(kcr_meta_name(a), kcr_meta_name(b));
  assert_int_equal(kcr_fake_client_count(fx->f, &cm_gvk, "default"), 2);
  json_decref(a);
  json_decref(b);
  json_decref(in);
}

/*
 * generateName is cut to 58 bytes before the five random characters, so a
 * generated name is at most 63 (the API server's names.SimpleNameGenerator,
 * maxGeneratedNameLength = 63 - 5).
 */
static void test_testing_generate_name_truncated(void **state) {
  fixture *fx = *state;
  static const size_t lens[] = {57, 58, 59, 63, 100, 400};
  char base[401];
  for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
    size_t n = lens[i], kept = n > 58 ? 58 : n;
    json_t *in, *out = NULL;
    for (size_t j = 0; j < n; j++)
      base[j] = (char)('a' + j % 26);
    base[n] = '\0';
    in = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                   "namespace", "default", "generateName", base);
    assert_int_equal(kcr_objclient_create(&fx->c, in, &out, &fx->err), 0);
    assert_int_equal(strlen(kcr_meta_name(out)), kept + 5);
    assert_memory_equal(kcr_meta_name(out), base, kept);
    json_decref(out);
    json_decref(in);
  }
}

static void test_testing_create_errors(void **state) {
  fixture *fx = *state;
  json_t *in = deployment("default", "web"), *noname;
  assert_int_equal(kcr_objclient_create(&fx->c, in, NULL, &fx->err), 0);
  /* AlreadyExists, as the server words it */
  assert_int_equal(kcr_objclient_create(&fx->c, in, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_already_exists(&fx->err));
  assert_int_equal(fx->err.http_status, 409);
  assert_string_equal(fx->err.message, "deployments.apps \"web\" already exists");
  /* a resourceVersion on create */
  kcr_error_clear(&fx->err);
  json_object_set_new(json_object_get(in, "metadata"), "resourceVersion", json_string("7"));
  json_object_set_new(json_object_get(in, "metadata"), "name", json_string("other"));
  assert_int_equal(kcr_objclient_create(&fx->c, in, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_bad_request(&fx->err));
  /* neither name nor generateName */
  kcr_error_clear(&fx->err);
  noname = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                     "namespace", "default");
  assert_int_equal(kcr_objclient_create(&fx->c, noname, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_invalid(&fx->err));
  assert_int_equal(fx->err.http_status, 422);
  json_decref(noname);
  json_decref(in);
}

/* ---- get: NotFound ---- */

static void test_testing_get_not_found(void **state) {
  fixture *fx = *state;
  json_t *out = (json_t *)1;
  int rc = kcr_objclient_get(&fx->c, &deploy_gvk, "default", "nope", &out, &fx->err);
  assert_int_equal(rc, KCR_EAPI);
  assert_null(out);
  assert_true(kcr_error_is_not_found(&fx->err));
  assert_int_equal(fx->err.http_status, 404);
  assert_string_equal(fx->err.reason, "NotFound");
  assert_string_equal(fx->err.message, "deployments.apps \"nope\" not found");
  assert_int_equal(kcr_ignore_not_found(rc, &fx->err), 0);
  /* plurals as apimachinery guesses them: -s, -es, -ies, and endpoints as is */
  {
    static const struct {
      kcr_gvk gvk;
      const char *want;
    } plural[] = {{{"", "v1", "Endpoints"}, "endpoints \"nope\" not found"},
                  {{"", "v1", "Status"}, "statuses \"nope\" not found"},
                  {{"policy", "v1", "Policy"}, "policies.policy \"nope\" not found"}};
    for (size_t i = 0; i < sizeof(plural) / sizeof(plural[0]); i++) {
      assert_int_equal(kcr_objclient_get(&fx->c, &plural[i].gvk, "default", "nope", &out, &fx->err),
                       KCR_EAPI);
      assert_string_equal(fx->err.message, plural[i].want);
      kcr_error_clear(&fx->err);
    }
  }
  assert_int_equal(fx->err.code, KCR_OK);
  /* the namespace is part of the key */
  assert_int_equal(kcr_fake_client_add_json(fx->f,
                                            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                                            "\"metadata\":{\"namespace\":\"a\",\"name\":\"x\"}}",
                                            NULL),
                   0);
  assert_null(get(fx, &cm_gvk, "b", "x"));
  assert_true(kcr_error_is_not_found(&fx->err));
}

/* ---- update: optimistic concurrency, no-op writes, generation ---- */

static void test_testing_update_conflict(void **state) {
  fixture *fx = *state;
  json_t *in = cm("default", "a", NULL), *v1 = NULL, *v2 = NULL, *v3 = NULL;
  assert_int_equal(kcr_objclient_create(&fx->c, in, &v1, &fx->err), 0);
  json_object_set_new(json_object_get(v1, "data"), "k", json_string("v2"));
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, &v2, &fx->err), 0);
  assert_string_not_equal(kcr_meta_resource_version(v1), kcr_meta_resource_version(v2));
  /* v1 is stale now */
  json_object_set_new(json_object_get(v1, "data"), "k", json_string("v3"));
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_conflict(&fx->err));
  assert_int_equal(fx->err.http_status, 409);
  assert_string_equal(fx->err.message,
                      "Operation cannot be fulfilled on configmaps \"a\": the object has been "
                      "modified; please apply your changes to the latest version and try again");
  /* without a resourceVersion the update is unconditional */
  kcr_error_clear(&fx->err);
  json_object_del(json_object_get(v1, "metadata"), "resourceVersion");
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, &v3, &fx->err), 0);
  assert_string_equal(kcr_meta_path_string(v3, "data.k"), "v3");
  /* update of a missing object */
  json_object_set_new(json_object_get(v1, "metadata"), "name", json_string("gone"));
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_not_found(&fx->err));
  json_decref(v1);
  json_decref(v2);
  json_decref(v3);
  json_decref(in);
}

/*
 * An update names its object: without a name it is Invalid, not NotFound
 * (controller-runtime's versionedTracker answers field.Required on
 * metadata.name), for the object and its status alike.
 */
static void test_testing_update_without_name(void **state) {
  fixture *fx = *state;
  json_t *c1 = cm("default", "", NULL), *d1 = deployment("default", "web");
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_update(&fx->c, c1, NULL, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_invalid(&fx->err));
  assert_int_equal(fx->err.http_status, 422);
  assert_string_equal(fx->err.message,
                      "ConfigMap \"\" is invalid: metadata.name: Required value: name is required");
  kcr_error_clear(&fx->err);
  json_object_del(json_object_get(c1, "metadata"), "name");
  assert_int_equal(kcr_objclient_update(&fx->c, c1, "status", NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_invalid(&fx->err));
  kcr_error_clear(&fx->err);
  json_object_del(json_object_get(d1, "metadata"), "name");
  assert_int_equal(kcr_objclient_update(&fx->c, d1, NULL, NULL, &fx->err), KCR_EAPI);
  assert_string_equal(
      fx->err.message,
      "Deployment.apps \"\" is invalid: metadata.name: Required value: name is required");
  json_decref(c1);
  json_decref(d1);
}

static void test_testing_update_noop_and_generation(void **state) {
  fixture *fx = *state;
  json_t *in = deployment("default", "web"), *v1 = NULL, *v2 = NULL, *v3 = NULL, *v4 = NULL;
  assert_int_equal(kcr_objclient_create(&fx->c, in, &v1, &fx->err), 0);
  /* nothing changed: not a write, same resourceVersion (no hot loop) */
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, &v2, &fx->err), 0);
  assert_string_equal(kcr_meta_resource_version(v1), kcr_meta_resource_version(v2));
  /* metadata only: new resourceVersion, same generation */
  json_object_set_new(json_object_get(v2, "metadata"), "labels", json_pack("{s:s}", "a", "b"));
  assert_int_equal(kcr_objclient_update(&fx->c, v2, NULL, &v3, &fx->err), 0);
  assert_string_not_equal(kcr_meta_resource_version(v2), kcr_meta_resource_version(v3));
  assert_int_equal(kcr_meta_generation(v3), 1);
  /* spec: generation grows */
  json_object_set_new(json_object_get(v3, "spec"), "replicas", json_integer(3));
  assert_int_equal(kcr_objclient_update(&fx->c, v3, NULL, &v4, &fx->err), 0);
  assert_int_equal(kcr_meta_generation(v4), 2);
  /* the uid and creationTimestamp cannot be changed */
  json_object_set_new(json_object_get(v4, "metadata"), "uid", json_string("forged"));
  json_decref(v1);
  v1 = NULL;
  assert_int_equal(kcr_objclient_update(&fx->c, v4, NULL, &v1, &fx->err), 0);
  assert_string_not_equal(kcr_meta_uid(v1), "forged");
  json_decref(v1);
  json_decref(v2);
  json_decref(v3);
  json_decref(v4);
  json_decref(in);
}

/* ---- the status subresource ---- */

static void test_testing_status_subresource(void **state) {
  fixture *fx = *state;
  json_t *in = deployment("default", "web"), *v1 = NULL, *v2 = NULL, *v3 = NULL, *got;
  json_object_set_new(in, "status", json_pack("{s:i}", "readyReplicas", 9));
  /* create drops status */
  assert_int_equal(kcr_objclient_create(&fx->c, in, &v1, &fx->err), 0);
  assert_null(json_object_get(v1, "status"));
  /* update of "status" changes only the status */
  json_object_set_new(v1, "status", json_pack("{s:i}", "readyReplicas", 1));
  json_object_set_new(json_object_get(v1, "spec"), "replicas", json_integer(5));
  assert_int_equal(kcr_objclient_update(&fx->c, v1, "status", &v2, &fx->err), 0);
  assert_int_equal(json_integer_value(kcr_meta_path(v2, "status.readyReplicas")), 1);
  assert_int_equal(json_integer_value(kcr_meta_path(v2, "spec.replicas")), 1);
  assert_int_equal(kcr_meta_generation(v2), 1);
  /* update of the object ignores status */
  json_object_set_new(v2, "status", json_pack("{s:i}", "readyReplicas", 7));
  json_object_set_new(json_object_get(v2, "spec"), "replicas", json_integer(2));
  assert_int_equal(kcr_objclient_update(&fx->c, v2, NULL, &v3, &fx->err), 0);
  assert_int_equal(json_integer_value(kcr_meta_path(v3, "status.readyReplicas")), 1);
  assert_int_equal(json_integer_value(kcr_meta_path(v3, "spec.replicas")), 2);
  got = get(fx, &deploy_gvk, "default", "web");
  assert_true(json_equal(got, v3));
  /* seeding keeps the status given (WithObjects + WithStatusSubresource) */
  json_object_set_new(json_object_get(in, "metadata"), "name", json_string("seeded"));
  assert_int_equal(kcr_fake_client_add(fx->f, in, &fx->err), 0);
  json_decref(got);
  got = get(fx, &deploy_gvk, "default", "seeded");
  assert_int_equal(json_integer_value(kcr_meta_path(got, "status.readyReplicas")), 9);
  /* another subresource is not supported */
  assert_int_equal(kcr_objclient_update(&fx->c, v3, "binding", NULL, &fx->err), KCR_ENOTSUP);
  json_decref(got);
  json_decref(v1);
  json_decref(v2);
  json_decref(v3);
  json_decref(in);
}

/* ---- delete and finalizers ---- */

static void test_testing_finalizers(void **state) {
  fixture *fx = *state;
  json_t *in = cm("default", "a", NULL), *v1 = NULL, *d1, *d2, *v2 = NULL;
  json_object_set_new(json_object_get(in, "metadata"), "finalizers",
                      json_pack("[s, s]", "kcr.dev/one", "kcr.dev/two"));
  assert_int_equal(kcr_objclient_create(&fx->c, in, &v1, &fx->err), 0);
  /* finalizers hold it: deletionTimestamp set, still there */
  assert_int_equal(kcr_objclient_delete(&fx->c, v1, NULL, &fx->err), 0);
  d1 = get(fx, &cm_gvk, "default", "a");
  assert_non_null(d1);
  assert_true(kcr_meta_is_deleting(d1));
  assert_string_not_equal(kcr_meta_resource_version(d1), kcr_meta_resource_version(v1));
  /* a second delete changes nothing; through the deprecated name, once */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  assert_int_equal(kcr_objclient_del(&fx->c, v1, NULL, &fx->err), 0);
#pragma GCC diagnostic pop
  d2 = get(fx, &cm_gvk, "default", "a");
  assert_true(json_equal(d1, d2));
  json_decref(d2);
  /* no new finalizers on a deleting object */
  kcr_finalizer_add(d1, "kcr.dev/three", NULL);
  assert_int_equal(kcr_objclient_update(&fx->c, d1, NULL, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_invalid(&fx->err));
  assert_non_null(strstr(fx->err.message, "no new finalizers can be added"));
  kcr_error_clear(&fx->err);
  json_decref(d1);
  /* removing one of two: still there; the finalizer helper's JSON Patch (test op) */
  d1 = get(fx, &cm_gvk, "default", "a");
  assert_int_equal(kcr_finalizer_remove_remote(&fx->c, d1, "kcr.dev/one", &fx->err), 0);
  assert_false(kcr_finalizer_contains(d1, "kcr.dev/one"));
  json_decref(d1);
  d1 = get(fx, &cm_gvk, "default", "a");
  assert_non_null(d1);
  /* removing the last deletes it */
  kcr_finalizer_remove(d1, "kcr.dev/two", NULL);
  assert_int_equal(kcr_objclient_update(&fx->c, d1, NULL, &v2, &fx->err), 0);
  assert_null(get(fx, &cm_gvk, "default", "a"));
  assert_true(kcr_error_is_not_found(&fx->err));
  json_decref(d1);
  json_decref(v1);
  json_decref(v2);
  json_decref(in);
}

/*
 * Only a delete sets deletionTimestamp. An update or patch that sets one on a
 * live object is Invalid, as the API server answers (ValidateObjectMetaUpdate:
 * the field is immutable; the value shown as metav1.Time marshals it); on a
 * deleting object a write cannot change or drop it (BeforeUpdate keeps the
 * stored one) and that is not an error. A null is no value.
 */
static void test_testing_deletion_timestamp_immutable(void **state) {
  fixture *fx = *state;
  static const char want[] = "ConfigMap \"a\" is invalid: metadata.deletionTimestamp: Invalid "
                             "value: \"2026-01-02T03:04:05Z\": field is immutable";
  static const char merge[] = "{\"metadata\":{\"deletionTimestamp\":\"2026-01-02T03:04:05Z\"}}";
  static const char jp[] = "[{\"op\":\"add\",\"path\":\"/metadata/deletionTimestamp\","
                           "\"value\":\"2026-01-02T03:04:05Z\"}]";
  json_t *in = cm("default", "a", NULL), *v1 = NULL, *v2 = NULL, *got, *md;
  assert_int_equal(kcr_objclient_create(&fx->c, in, &v1, &fx->err), 0);
  md = json_object_get(v1, "metadata");
  json_object_set_new(md, "deletionTimestamp", json_string("2026-01-02T03:04:05Z"));
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_invalid(&fx->err));
  assert_int_equal(fx->err.http_status, 422);
  assert_string_equal(fx->err.message, want);
  /* shown in UTC, whole seconds, as metav1.Time marshals */
  kcr_error_clear(&fx->err);
  json_object_set_new(md, "deletionTimestamp", json_string("2026-01-02T04:04:05.5+01:00"));
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, NULL, &fx->err), KCR_EAPI);
  assert_string_equal(fx->err.message, want);
  kcr_error_clear(&fx->err);
  assert_int_equal(
      kcr_objclient_patch(&fx->c, v1, KCR_PATCH_MERGE, merge, strlen(merge), NULL, NULL, &fx->err),
      KCR_EAPI);
  assert_string_equal(fx->err.message, want);
  kcr_error_clear(&fx->err);
  assert_int_equal(
      kcr_objclient_patch(&fx->c, v1, KCR_PATCH_JSON, jp, strlen(jp), NULL, NULL, &fx->err),
      KCR_EAPI);
  assert_string_equal(fx->err.message, want);
  /* nothing was written */
  got = get(fx, &cm_gvk, "default", "a");
  assert_false(kcr_meta_is_deleting(got));
  assert_string_equal(kcr_meta_resource_version(got), kcr_meta_resource_version(v1));
  json_decref(got);
  /* null is no value: the update goes through */
  json_object_set_new(md, "deletionTimestamp", json_null());
  json_object_set_new(json_object_get(v1, "data"), "k", json_string("v2"));
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, &v2, &fx->err), 0);
  assert_false(kcr_meta_is_deleting(v2));
  json_decref(v2);
  v2 = NULL;
  /* a deleting object keeps its deletionTimestamp, without an error */
  json_decref(v1);
  v1 = get(fx, &cm_gvk, "default", "a");
  kcr_finalizer_add(v1, "kcr.dev/hold", NULL);
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, NULL, &fx->err), 0);
  assert_int_equal(kcr_objclient_delete(&fx->c, v1, NULL, &fx->err), 0);
  json_decref(v1);
  v1 = get(fx, &cm_gvk, "default", "a");
  got = json_deep_copy(v1);
  json_object_set_new(json_object_get(v1, "metadata"), "deletionTimestamp",
                      json_string("2030-01-01T00:00:00Z"));
  assert_int_equal(kcr_objclient_update(&fx->c, v1, NULL, &v2, &fx->err), 0);
  assert_string_equal(kcr_meta_path_string(v2, "metadata.deletionTimestamp"),
                      kcr_meta_path_string(got, "metadata.deletionTimestamp"));
  json_decref(got);
  json_decref(v2);
  json_decref(v1);
  json_decref(in);
}

/*
 * Seeding a deleting object without finalizers is refused, as controller-runtime's
 * fake client builder refuses it (versionedTracker.Add): no server ever holds
 * one. With a finalizer it is seeded as given; a null deletionTimestamp is none.
 */
static void test_testing_seed_deleting_needs_finalizers(void **state) {
  fixture *fx = *state;
  static const char *const refused[] = {
      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"namespace\":\"d\","
      "\"name\":\"x\",\"deletionTimestamp\":\"2026-01-02T03:04:05Z\"}}",
      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"namespace\":\"d\","
      "\"name\":\"x\",\"deletionTimestamp\":\"2026-01-02T03:04:05Z\",\"finalizers\":[]}}"};
  json_t *got;
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    kcr_error_clear(&fx->err);
    assert_int_equal(kcr_fake_client_add_json(fx->f, refused[i], &fx->err), KCR_EINVAL);
    assert_string_equal(fx->err.message, "fake client: refusing to create obj x with "
                                         "metadata.deletionTimestamp but no finalizers");
  }
  assert_int_equal(kcr_fake_client_count(fx->f, &cm_gvk, NULL), 0);
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_fake_client_add_json(
                       fx->f,
                       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"namespace\":"
                       "\"d\",\"name\":\"x\",\"deletionTimestamp\":\"2026-01-02T03:04:05Z\","
                       "\"finalizers\":[\"kcr.dev/hold\"]}}",
                       &fx->err),
                   0);
  got = get(fx, &cm_gvk, "d", "x");
  assert_true(kcr_meta_is_deleting(got));
  json_decref(got);
  assert_int_equal(kcr_fake_client_add_json(fx->f,
                                            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                                            "\"metadata\":{\"namespace\":\"d\",\"name\":\"y\","
                                            "\"deletionTimestamp\":null}}",
                                            &fx->err),
                   0);
}

static void test_testing_delete(void **state) {
  fixture *fx = *state;
  json_t *in = cm("default", "a", NULL), *v1 = NULL;
  kcr_delete_options o;
  assert_int_equal(kcr_objclient_create(&fx->c, in, &v1, &fx->err), 0);
  /* preconditions */
  memset(&o, 0, sizeof(o));
  o.precondition_uid = "not-the-uid";
  assert_int_equal(kcr_objclient_delete(&fx->c, v1, &o, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_conflict(&fx->err));
  assert_non_null(strstr(fx->err.message, "Precondition failed: UID in precondition"));
  kcr_error_clear(&fx->err);
  o.precondition_uid = kcr_meta_uid(v1);
  o.precondition_resource_version = kcr_meta_resource_version(v1);
  /* no finalizers: gone at once */
  assert_int_equal(kcr_objclient_delete(&fx->c, v1, &o, &fx->err), 0);
  assert_null(get(fx, &cm_gvk, "default", "a"));
  assert_int_equal(kcr_objclient_delete(&fx->c, v1, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_not_found(&fx->err));
  assert_string_equal(fx->err.message, "configmaps \"a\" not found");
  json_decref(v1);
  json_decref(in);
}

/* ---- list: selectors, shape, paging ---- */

static void seed_list(fixture *fx) {
  static const char *const objs[][3] = {
      {"ns1", "b", "{\"app\":\"web\",\"env\":\"prod\"}"},
      {"ns1", "a", "{\"app\":\"web\",\"env\":\"dev\"}"},
      {"ns2", "c", "{\"app\":\"db\",\"env\":\"prod\"}"},
      {"ns2", "d", "{\"app\":\"web\",\"canary\":\"yes\"}"},
  };
  for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
    json_t *o = cm(objs[i][0], objs[i][1], objs[i][2]);
    assert_int_equal(kcr_objclient_create(&fx->c, o, NULL, &fx->err), 0);
    json_decref(o);
  }
  json_t *d = deployment("ns1", "web"); /* another kind: never in a ConfigMap list */
  assert_int_equal(kcr_objclient_create(&fx->c, d, NULL, &fx->err), 0);
  json_decref(d);
}

/* names lists "ns/name,ns/name" of a list call, or the error's reason. */
static void names(fixture *fx, const char *ns, const char *labels, const char *fields, char *buf,
                  size_t size) {
  kcr_list_options o;
  json_t *list = NULL, *item;
  size_t i, n = 0;
  memset(&o, 0, sizeof(o));
  o.ns = ns;
  o.label_selector = labels;
  o.field_selector = fields;
  kcr_error_clear(&fx->err);
  buf[0] = '\0';
  if (kcr_objclient_list(&fx->c, &cm_gvk, &o, &list, &fx->err) != 0) {
    snprintf(buf, size, "error:%s", fx->err.reason);
    return;
  }
  json_array_foreach(kcr_list_items(list), i, item) {
    n += (size_t)snprintf(buf + n, size - n, "%s%s/%s", i ? "," : "", kcr_meta_namespace(item),
                          kcr_meta_name(item));
  }
  json_decref(list);
}

static void test_testing_list_selectors(void **state) {
  fixture *fx = *state;
  static const struct {
    const char *ns, *labels, *fields, *want;
  } cases[] = {
      {NULL, NULL, NULL, "ns1/a,ns1/b,ns2/c,ns2/d"},
      {"ns1", NULL, NULL, "ns1/a,ns1/b"},
      {NULL, "app=web", NULL, "ns1/a,ns1/b,ns2/d"},
      {NULL, "app=web,env in (prod,dev)", NULL, "ns1/a,ns1/b"},
      {NULL, "env!=prod", NULL, "ns1/a,ns2/d"},
      {NULL, "canary", NULL, "ns2/d"},
      {NULL, "!canary,app notin (db)", NULL, "ns1/a,ns1/b"},
      {NULL, NULL, "metadata.name=c", "ns2/c"},
      {NULL, NULL, "metadata.namespace==ns2,metadata.name!=c", "ns2/d"},
      {"ns1", "app=web", "metadata.name!=a", "ns1/b"},
      {NULL, NULL, "spec.replicas=1", "error:BadRequest"},
      {NULL, "app in (", NULL, "error:BadRequest"},
      {"ns3", NULL, NULL, ""},
  };
  char got[512];
  seed_list(fx);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    names(fx, cases[i].ns, cases[i].labels, cases[i].fields, got, sizeof(got));
    if (strcmp(got, cases[i].want) != 0)
      fail_msg("case %zu (%s | %s): got %s, want %s", i, cases[i].labels ? cases[i].labels : "",
               cases[i].fields ? cases[i].fields : "", got, cases[i].want);
  }
}

static void test_testing_list_shape_and_paging(void **state) {
  fixture *fx = *state;
  kcr_list_options o;
  json_t *list = NULL, *page2 = NULL, *item;
  const char *cont;
  seed_list(fx);
  memset(&o, 0, sizeof(o));
  o.limit = 3;
  assert_int_equal(kcr_objclient_list(&fx->c, &cm_gvk, &o, &list, &fx->err), 0);
  assert_string_equal(json_string_value(json_object_get(list, "apiVersion")), "v1");
  assert_string_equal(json_string_value(json_object_get(list, "kind")), "ConfigMapList");
  assert_non_null(kcr_meta_path_string(list, "metadata.resourceVersion"));
  assert_int_equal(json_array_size(kcr_list_items(list)), 3);
  item = json_array_get(kcr_list_items(list), 0);
  assert_string_equal(json_string_value(json_object_get(item, "kind")), "ConfigMap");
  assert_string_equal(json_string_value(json_object_get(item, "apiVersion")), "v1");
  cont = kcr_meta_path_string(list, "metadata.continue");
  assert_non_null(cont);
  o.continue_token = cont;
  assert_int_equal(kcr_objclient_list(&fx->c, &cm_gvk, &o, &page2, &fx->err), 0);
  assert_int_equal(json_array_size(kcr_list_items(page2)), 1);
  assert_string_equal(kcr_meta_name(json_array_get(kcr_list_items(page2), 0)), "d");
  assert_null(kcr_meta_path_string(page2, "metadata.continue"));
  /* an index nobody registered (kcr_fake_client_add_index): KCR_EINVAL, as the cache */
  memset(&o, 0, sizeof(o));
  o.index = "spec.owner";
  o.index_value = "x";
  assert_int_equal(kcr_objclient_list(&fx->c, &cm_gvk, &o, NULL, &fx->err), KCR_EINVAL);
  json_decref(list);
  json_decref(page2);
}

/* ---- patch ---- */

static void test_testing_patch(void **state) {
  fixture *fx = *state;
  json_t *in = deployment("default", "web"), *v1 = NULL, *v2 = NULL, *v3 = NULL;
  static const char merge[] = "{\"metadata\":{\"labels\":{\"x\":\"y\"}},\"spec\":{\"replicas\":4}}";
  static const char stale[] = "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"a\":1}}";
  static const char remove[] = "{\"metadata\":{\"labels\":{\"x\":null}}}";
  static const char jp_bad[] = "[{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":99},"
                               "{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":1}]";
  static const char jp[] = "[{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":4},"
                           "{\"op\":\"add\",\"path\":\"/spec/paused\",\"value\":true}]";
  assert_int_equal(kcr_objclient_create(&fx->c, in, &v1, &fx->err), 0);
  assert_int_equal(
      kcr_objclient_patch(&fx->c, v1, KCR_PATCH_MERGE, merge, strlen(merge), NULL, &v2, &fx->err),
      0);
  assert_string_equal(kcr_meta_label(v2, "x"), "y");
  assert_int_equal(json_integer_value(kcr_meta_path(v2, "spec.replicas")), 4);
  assert_int_equal(kcr_meta_generation(v2), 2);
  /* a patch carrying a stale resourceVersion conflicts */
  assert_int_equal(
      kcr_objclient_patch(&fx->c, v1, KCR_PATCH_MERGE, stale, strlen(stale), NULL, NULL, &fx->err),
      KCR_EAPI);
  assert_true(kcr_error_is_conflict(&fx->err));
  kcr_error_clear(&fx->err);
  /* JSON Patch: a failed test op rejects the whole patch */
  assert_int_equal(
      kcr_objclient_patch(&fx->c, v1, KCR_PATCH_JSON, jp_bad, strlen(jp_bad), NULL, NULL, &fx->err),
      KCR_EAPI);
  assert_true(kcr_error_is_invalid(&fx->err));
  kcr_error_clear(&fx->err);
  assert_int_equal(
      kcr_objclient_patch(&fx->c, v1, KCR_PATCH_JSON, jp, strlen(jp), NULL, &v3, &fx->err), 0);
  assert_true(json_is_true(kcr_meta_path(v3, "spec.paused")));
  json_decref(v3);
  v3 = NULL;
  /* null removes; a patch of status through "status" changes only status */
  assert_int_equal(kcr_objclient_patch(&fx->c, v1, KCR_PATCH_STRATEGIC, remove, strlen(remove),
                                       NULL, &v3, &fx->err),
                   0);
  assert_null(kcr_meta_label(v3, "x"));
  json_decref(v3);
  v3 = NULL;
  {
    static const char st[] = "{\"status\":{\"readyReplicas\":2},\"spec\":{\"replicas\":0}}";
    assert_int_equal(
        kcr_objclient_patch(&fx->c, v1, KCR_PATCH_MERGE, st, strlen(st), "status", &v3, &fx->err),
        0);
    assert_int_equal(json_integer_value(kcr_meta_path(v3, "status.readyReplicas")), 2);
    assert_int_equal(json_integer_value(kcr_meta_path(v3, "spec.replicas")), 4);
  }
  /* patch of a missing object */
  json_object_set_new(json_object_get(v1, "metadata"), "name", json_string("gone"));
  assert_int_equal(
      kcr_objclient_patch(&fx->c, v1, KCR_PATCH_MERGE, merge, strlen(merge), NULL, NULL, &fx->err),
      KCR_EAPI);
  assert_true(kcr_error_is_not_found(&fx->err));
  json_decref(v1);
  json_decref(v2);
  json_decref(v3);
  json_decref(in);
}

/* seed_web seeds the Deployment default/web with spec (a JSON object text). */
static void seed_web(fixture *fx, const char *spec) {
  char obj[600];
  snprintf(obj, sizeof(obj),
           "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"namespace\":"
           "\"default\",\"name\":\"web\"},\"spec\":%s}",
           spec);
  assert_int_equal(kcr_fake_client_add_json(fx->f, obj, &fx->err), 0);
}

/* json_patch_rc applies a JSON Patch to default/web (a Deployment) and returns the code. */
static int json_patch_rc(fixture *fx, const char *patch, json_t **out) {
  json_t *target = deployment("default", "web");
  int rc;
  kcr_error_clear(&fx->err);
  rc = kcr_objclient_patch(&fx->c, target, KCR_PATCH_JSON, patch, strlen(patch), NULL, out,
                           &fx->err);
  json_decref(target);
  return rc;
}

/*
 * An array index in a JSON Pointer is "0" or digits without a leading zero (RFC
 * 6901 section 4, RFC 6902 section 4): in the middle of a path as at its end.
 * Before, a middle token went through strtoul, which took "01", "+1" and " 1".
 */
static void test_testing_json_pointer_index(void **state) {
  fixture *fx = *state;
  static const char *const bad[] = {"01", "+1", " 1", "00", "1 ", "-1", "0x1", ""};
  char patch[200];
  json_t *out = NULL;
  seed_web(fx, "{\"items\":[{\"b\":1},{\"b\":2}]}");
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    snprintf(patch, sizeof(patch),
             "[{\"op\":\"replace\",\"path\":\"/spec/items/%s/b\",\"value\":9}]", bad[i]);
    if (json_patch_rc(fx, patch, NULL) != KCR_EAPI || !kcr_error_is_invalid(&fx->err))
      fail_msg("replace through index \"%s\" was not refused", bad[i]);
    snprintf(patch, sizeof(patch), "[{\"op\":\"test\",\"path\":\"/spec/items/%s/b\",\"value\":2}]",
             bad[i]);
    if (json_patch_rc(fx, patch, NULL) != KCR_EAPI || !kcr_error_is_invalid(&fx->err))
      fail_msg("test through index \"%s\" was not refused", bad[i]);
  }
  /* the canonical spellings still work: "0" and "1" */
  assert_int_equal(json_patch_rc(fx,
                                 "[{\"op\":\"test\",\"path\":\"/spec/items/0/b\",\"value\":1},"
                                 "{\"op\":\"replace\",\"path\":\"/spec/items/1/b\",\"value\":9}]",
                                 &out),
                   0);
  assert_int_equal(
      json_integer_value(json_object_get(json_array_get(kcr_meta_path(out, "spec.items"), 1), "b")),
      9);
  json_decref(out);
}

/*
 * The test op compares numbers by value (RFC 6902 section 4.6): 1, 1.0, 1e0 and
 * 100e-2 are one number, inside objects and arrays too; 1.5 is not 1, and a
 * number is never a string.
 */
static void test_testing_json_patch_test_numbers(void **state) {
  fixture *fx = *state;
  static const char *const same[] = {"1.0", "1e0", "100e-2", "1"};
  static const char *const other[] = {"1.5", "\"1\"", "true", "2", "0.999999"};
  char patch[300];
  seed_web(fx, "{\"replicas\":1,\"ratio\":0.5,\"big\":9007199254740993,\"items\":[{\"b\":1}]}");
  for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
    snprintf(patch, sizeof(patch),
             "[{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":%s},"
             "{\"op\":\"test\",\"path\":\"/spec/items\",\"value\":[{\"b\":%s}]}]",
             same[i], same[i]);
    if (json_patch_rc(fx, patch, NULL) != 0)
      fail_msg("test of 1 against %s failed: %s", same[i], fx->err.message);
  }
  for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
    snprintf(patch, sizeof(patch), "[{\"op\":\"test\",\"path\":\"/spec/replicas\",\"value\":%s}]",
             other[i]);
    if (json_patch_rc(fx, patch, NULL) != KCR_EAPI || !kcr_error_is_invalid(&fx->err))
      fail_msg("test of 1 against %s passed", other[i]);
  }
  /* a real against a real; an integer beyond 2^53 is not its nearest double */
  assert_int_equal(
      json_patch_rc(fx, "[{\"op\":\"test\",\"path\":\"/spec/ratio\",\"value\":5e-1}]", NULL), 0);
  assert_int_equal(json_patch_rc(fx,
                                 "[{\"op\":\"test\",\"path\":\"/spec/big\",\"value\":"
                                 "9007199254740992.0}]",
                                 NULL),
                   KCR_EAPI);
  assert_int_equal(
      json_patch_rc(fx, "[{\"op\":\"test\",\"path\":\"/spec/big\",\"value\":9007199254740993}]",
                    NULL),
      0);
}

/* server-side apply (test_fake_smp.c) needs a field manager, as the client */
static void test_testing_apply_needs_field_manager(void **state) {
  fixture *fx = *state;
  json_t *in = cm("default", "a", NULL);
  assert_int_equal(kcr_objclient_apply(&fx->c, in, NULL, NULL, NULL, &fx->err), KCR_EINVAL);
  assert_string_equal(fx->err.message, "apply: a field manager is required");
  assert_int_equal(kcr_fake_client_count(fx->f, &cm_gvk, NULL), 0);
  json_decref(in);
}

/* ---- interceptors ---- */

typedef struct icpt {
  int calls;
  kcr_fake_client_t *f;
  const char *seen_name;
} icpt_t;

static int fail_creates(const kcr_fake_call *call, kcr_error_t *err, void *data) {
  icpt_t *i = data;
  i->calls++;
  assert_int_equal(call->verb, KCR_FAKE_CREATE);
  assert_string_equal(call->gvk->kind, "ConfigMap");
  assert_non_null(call->obj);
  return kcr_fake_error(err, 500, "InternalError", "etcd is down");
}

/* seed_on_get: an interceptor that uses the client itself (no lock held). */
static int seed_on_get(const kcr_fake_call *call, kcr_error_t *err, void *data) {
  icpt_t *i = data;
  kcr_objclient c = kcr_fake_client_objclient(i->f);
  json_t *o = cm(call->ns, call->name, NULL);
  (void)err;
  i->calls++;
  kcr_objclient_create(&c, o, NULL, NULL);
  json_decref(o);
  return 0;
}

static void test_testing_interceptors(void **state) {
  fixture *fx = *state;
  icpt_t i = {0, fx->f, NULL};
  json_t *in = cm("default", "a", NULL), *got;
  kcr_fake_client_intercept(fx->f, KCR_FAKE_CREATE, fail_creates, &i);
  assert_int_equal(kcr_objclient_create(&fx->c, in, NULL, &fx->err), KCR_EAPI);
  assert_int_equal(fx->err.http_status, 500);
  assert_true(kcr_error_is_internal_error(&fx->err));
  assert_string_equal(fx->err.message, "etcd is down");
  assert_int_equal(i.calls, 1);
  assert_int_equal(kcr_fake_client_count(fx->f, &cm_gvk, NULL), 0); /* the tracker never ran */
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_CREATE), 1);
  kcr_fake_client_intercept(fx->f, KCR_FAKE_CREATE, NULL, NULL);
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_create(&fx->c, in, NULL, &fx->err), 0);
  assert_int_equal(i.calls, 1);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_CREATE), 2);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_UPDATE), 0);
  /* an interceptor may call the client: no deadlock */
  kcr_fake_client_intercept(fx->f, KCR_FAKE_GET, seed_on_get, &i);
  got = get(fx, &cm_gvk, "default", "made-by-interceptor");
  assert_non_null(got);
  assert_int_equal(i.calls, 2);
  kcr_fake_client_reset_calls(fx->f);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_CREATE), 0);
  json_decref(got);
  json_decref(in);
}

/* ---- controllerutil over the fake ---- */

static int set_data(json_t *obj, void *data, kcr_error_t *err) {
  (void)err;
  return json_object_set_new(obj, "data", json_pack("{s:s}", "k", (const char *)data));
}

static void test_testing_create_or_update(void **state) {
  fixture *fx = *state;
  json_t *obj = cm("default", "a", NULL);
  kcr_op_result r;
  assert_int_equal(kcr_create_or_update(&fx->c, obj, set_data, (void *)"one", &r, &fx->err), 0);
  assert_int_equal(r, KCR_OP_CREATED);
  assert_int_equal(kcr_create_or_update(&fx->c, obj, set_data, (void *)"one", &r, &fx->err), 0);
  assert_int_equal(r, KCR_OP_UNCHANGED);
  assert_int_equal(kcr_create_or_update(&fx->c, obj, set_data, (void *)"two", &r, &fx->err), 0);
  assert_int_equal(r, KCR_OP_UPDATED);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_UPDATE), 1);
  json_decref(obj);
}

/* ---- the recording event recorder ---- */

static void test_testing_fake_recorder(void **state) {
  kcr_event_recorder_t *r = NULL;
  json_t *obj = cm("default", "a", NULL), *evs;
  (void)state;
  assert_int_equal(kcr_fake_recorder_create(&r, NULL), 0);
  for (int i = 0; i < 30; i++) /* no spam filter, no series: every call kept */
    assert_int_equal(
        kcr_event_record_object(r, obj, KCR_EVENT_NORMAL, "Created", "Create", "n %d", i), 0);
  assert_int_equal(kcr_event_record_object(r, obj, KCR_EVENT_WARNING, "Failed", "Sync", "x"), 0);
  assert_int_equal(kcr_event_record_object(r, obj, "Bogus", "Failed", "Sync", "x"), KCR_EINVAL);
  assert_int_equal(kcr_fake_recorder_count(r, NULL, NULL), 31);
  assert_int_equal(kcr_fake_recorder_count(r, KCR_EVENT_NORMAL, "Created"), 30);
  assert_int_equal(kcr_fake_recorder_count(r, KCR_EVENT_WARNING, NULL), 1);
  evs = kcr_fake_recorder_events(r);
  assert_int_equal(json_array_size(evs), 31);
  assert_string_equal(kcr_meta_path_string(json_array_get(evs, 3), "note"), "n 3");
  assert_string_equal(kcr_meta_path_string(json_array_get(evs, 30), "regarding.kind"), "ConfigMap");
  assert_string_equal(kcr_meta_path_string(json_array_get(evs, 30), "regarding.namespace"),
                      "default");
  assert_int_equal(kcr_event_recorder_flush(r, 1000000), 0);
  json_decref(evs);
  kcr_event_recorder_destroy(r);
  json_decref(obj);
}

/* ---- the reconcile context and log capture ---- */

typedef struct probe {
  int calls;
  char controller[64];
  bool had_cancel;
} probe_t;

static int probe_reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                           kcr_result *res, void *data) {
  probe_t *p = data;
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  json_t *obj = NULL;
  int rc;
  p->calls++;
  snprintf(p->controller, sizeof(p->controller), "%s", kcr_reconcile_controller_name(ctx));
  p->had_cancel = c->cancel != NULL && c->cancel == kcr_reconcile_cancel(ctx);
  rc = kcr_objclient_get(c, &cm_gvk, req->ns, req->name, &obj, kcr_reconcile_err(ctx));
  if (rc)
    return kcr_error_is_not_found(kcr_reconcile_err(ctx)) ? kcr_reconcile_terminal(ctx, rc) : rc;
  kcr_reconcile_log(ctx, KCR_LOG_INFO, "saw %s", kcr_meta_name(obj));
  res->requeue_after_ns = 5;
  json_decref(obj);
  return 0;
}

static void test_testing_reconcile_ctx(void **state) {
  fixture *fx = *state;
  probe_t p = {0, "", false};
  kcr_reconcile_request req = {"default", "a"};
  kcr_testing_log_t *logs = NULL;
  kcr_testing_ctx_options o;
  kcr_testing_ctx_t *t = NULL;
  kcr_result res = {false, 0, 0};
  kcr_error_t err;
  json_t *in = cm("default", "a", NULL), *lines;
  bool terminal = true;

  /* missing object: the reconciler's terminal NotFound comes back */
  kcr_error_clear(&err);
  assert_int_equal(kcr_testing_reconcile(probe_reconcile, &p, &fx->c, &req, &res, &err, &terminal),
                   KCR_EAPI);
  assert_true(terminal);
  assert_true(kcr_error_is_not_found(&err));
  assert_string_equal(p.controller, "test");
  assert_true(p.had_cancel);

  assert_int_equal(kcr_objclient_create(&fx->c, in, NULL, &fx->err), 0);
  assert_int_equal(kcr_testing_log_capture(KCR_LOG_INFO, &logs, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.controller_name = "mirror";
  o.client = fx->c;
  assert_int_equal(kcr_testing_ctx_create(&o, &req, &t, NULL), 0);
  assert_int_equal(probe_reconcile(kcr_testing_ctx_get(t), kcr_testing_ctx_request(t), &res, &p),
                   0);
  assert_false(kcr_testing_ctx_terminal(t));
  assert_int_equal(res.requeue_after_ns, 5);
  assert_string_equal(p.controller, "mirror");
  assert_true(kcr_testing_log_contains(logs, "saw a"));
  lines = kcr_testing_log_lines(logs);
  assert_string_equal(kcr_meta_path_string(json_array_get(lines, 0), "controller"), "mirror");
  assert_string_equal(kcr_meta_path_string(json_array_get(lines, 0), "namespace"), "default");
  assert_string_equal(kcr_meta_path_string(json_array_get(lines, 0), "name"), "a");
  json_decref(lines);
  /* cancel fires the token the client carries */
  kcr_testing_ctx_cancel(t);
  assert_true(kcr_cancel_fired(kcr_reconcile_cancel(kcr_testing_ctx_get(t))));
  kcr_testing_ctx_reset(t);
  assert_int_equal(kcr_reconcile_err(kcr_testing_ctx_get(t))->code, KCR_OK);
  kcr_testing_ctx_destroy(t);
  kcr_testing_log_release(logs);
  json_decref(in);
}

/* ---- threads ---- */

typedef struct worker {
  kcr_objclient c;
  int id, conflicts, done;
} worker_t;

static void *bump(void *arg) {
  worker_t *w = arg;
  for (int i = 0; i < 50; i++) {
    kcr_error_t err;
    json_t *obj = NULL, *n;
    kcr_error_clear(&err);
    if (kcr_objclient_get(&w->c, &cm_gvk, "default", "counter", &obj, &err) != 0)
      continue;
    n = json_object_get(obj, "data");
    json_object_set_new(n, "count",
                        json_integer(json_integer_value(json_object_get(n, "count")) + 1));
    if (kcr_objclient_update(&w->c, obj, NULL, NULL, &err) == 0)
      w->done++;
    else if (kcr_error_is_conflict(&err))
      w->conflicts++;
    json_decref(obj);
  }
  return NULL;
}

static void test_testing_threads(void **state) {
  fixture *fx = *state;
  pthread_t th[4];
  worker_t w[4];
  json_t *counter =
      json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i}}", "apiVersion", "v1", "kind", "ConfigMap",
                "metadata", "namespace", "default", "name", "counter", "data", "count", 0);
  json_t *got;
  int done = 0;
  assert_int_equal(kcr_fake_client_add(fx->f, counter, NULL), 0);
  for (int i = 0; i < 4; i++) {
    w[i] = (worker_t){fx->c, i, 0, 0};
    assert_int_equal(pthread_create(&th[i], NULL, bump, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    done += w[i].done;
  }
  got = get(fx, &cm_gvk, "default", "counter");
  /* optimistic concurrency: exactly the successful updates counted, none lost */
  assert_int_equal(json_integer_value(kcr_meta_path(got, "data.count")), done);
  json_decref(got);
  json_decref(counter);
}

/* ---- write options: dry run, field manager, field validation ---- */

static void test_testing_dry_run(void **state) {
  fixture *fx = *state;
  json_t *in = cm("default", "a", NULL), *out = NULL, *stored, *stale;
  kcr_write_options dry = {.dry_run = true};
  kcr_delete_options ddry = {.dry_run = true};
  const char *rv;
  /* create: answered as if written, nothing stored */
  assert_int_equal(kcr_objclient_create_with(&fx->c, in, &dry, &out, &fx->err), 0);
  assert_string_equal(kcr_meta_name(out), "a");
  assert_non_null(kcr_meta_uid(out));
  assert_null(kcr_meta_path(out, "metadata.resourceVersion"));
  assert_int_equal(kcr_fake_client_count(fx->f, &cm_gvk, NULL), 0);
  json_decref(out);
  out = NULL;
  assert_int_equal(kcr_objclient_create(&fx->c, in, NULL, &fx->err), 0);
  /* a dry-run create of a taken name is still AlreadyExists */
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_create_with(&fx->c, in, &dry, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_already_exists(&fx->err));
  /* update: the answer has the change, the tracker does not; no new version */
  stored = get(fx, &cm_gvk, "default", "a");
  rv = kcr_meta_resource_version(stored);
  stale = json_deep_copy(stored);
  json_object_set_new(json_object_get(stored, "data"), "k", json_string("changed"));
  assert_int_equal(kcr_objclient_update_with(&fx->c, stored, NULL, &dry, &out, &fx->err), 0);
  assert_string_equal(kcr_meta_path_string(out, "data.k"), "changed");
  assert_string_equal(kcr_meta_resource_version(out), rv);
  json_decref(out);
  out = get(fx, &cm_gvk, "default", "a");
  assert_string_equal(kcr_meta_path_string(out, "data.k"), "v");
  assert_string_equal(kcr_meta_resource_version(out), rv);
  json_decref(out);
  out = NULL;
  /* patch: the same */
  assert_int_equal(kcr_objclient_patch_with(&fx->c, stored, KCR_PATCH_MERGE,
                                            "{\"data\":{\"k\":\"p\"}}", 18, NULL, &dry, &out,
                                            &fx->err),
                   0);
  assert_string_equal(kcr_meta_path_string(out, "data.k"), "p");
  json_decref(out);
  out = get(fx, &cm_gvk, "default", "a");
  assert_string_equal(kcr_meta_path_string(out, "data.k"), "v");
  json_decref(out);
  out = NULL;
  /* a dry run still checks: a stale resourceVersion is a Conflict */
  assert_int_equal(kcr_objclient_update(&fx->c, stored, NULL, NULL, &fx->err), 0);
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_update_with(&fx->c, stale, NULL, &dry, NULL, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_conflict(&fx->err));
  /* delete: nothing deleted; a missing object is still NotFound */
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_delete(&fx->c, in, &ddry, &fx->err), 0);
  assert_int_equal(kcr_fake_client_count(fx->f, &cm_gvk, NULL), 1);
  json_object_set_new(json_object_get(in, "metadata"), "name", json_string("gone"));
  assert_int_equal(kcr_objclient_delete(&fx->c, in, &ddry, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_not_found(&fx->err));
  json_decref(stored);
  json_decref(stale);
  json_decref(in);
}

static void test_testing_write_options(void **state) {
  fixture *fx = *state;
  json_t *in = cm("default", "a", NULL), *out = NULL;
  kcr_write_options wo = {.field_manager = "my-operator", .field_validation = "Strict"};
  /* accepted; the fake records no managedFields (nor does controller-runtime's) */
  json_object_set_new(in, "unknownField", json_true());
  assert_int_equal(kcr_objclient_create_with(&fx->c, in, &wo, &out, &fx->err), 0);
  assert_null(kcr_meta_path(out, "metadata.managedFields"));
  assert_string_not_equal(kcr_meta_resource_version(out), "");
  json_decref(out);
  out = NULL;
  /* a value the server does not know is BadRequest */
  wo.field_validation = "Sloppy";
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_update_with(&fx->c, in, NULL, &wo, &out, &fx->err), KCR_EAPI);
  assert_int_equal(fx->err.http_status, 400);
  assert_non_null(strstr(fx->err.message, "Sloppy"));
  assert_null(out);
  json_decref(in);
}

/* ---- DeleteAllOf ---- */

static void test_testing_delete_all_of(void **state) {
  fixture *fx = *state;
  kcr_list_options lo = {.ns = "ns1", .label_selector = "app=web"};
  kcr_delete_options dry = {.dry_run = true};
  json_t *held = cm("ns1", "held", "{\"app\":\"web\"}"), *got;
  char buf[200];
  seed_list(fx);
  json_object_set_new(json_object_get(held, "metadata"), "finalizers",
                      json_pack("[s]", "kcr.dev/hold"));
  assert_int_equal(kcr_fake_client_add(fx->f, held, &fx->err), 0);
  /* dry run: nothing goes */
  assert_int_equal(kcr_objclient_delete_all_of(&fx->c, &cm_gvk, &lo, &dry, &fx->err), 0);
  names(fx, NULL, NULL, NULL, buf, sizeof(buf));
  assert_string_equal(buf, "ns1/a,ns1/b,ns1/held,ns2/c,ns2/d");
  got = get(fx, &cm_gvk, "ns1", "held");
  assert_false(kcr_meta_is_deleting(got));
  json_decref(got);
  /* namespace ns1, app=web: a and b go, held is marked and kept, ns2 stays */
  assert_int_equal(kcr_objclient_delete_all_of(&fx->c, &cm_gvk, &lo, NULL, &fx->err), 0);
  names(fx, NULL, NULL, NULL, buf, sizeof(buf));
  assert_string_equal(buf, "ns1/held,ns2/c,ns2/d");
  got = get(fx, &cm_gvk, "ns1", "held");
  assert_true(kcr_meta_is_deleting(got));
  json_decref(got);
  /* a field selector, every namespace */
  memset(&lo, 0, sizeof(lo));
  lo.field_selector = "metadata.name=d";
  assert_int_equal(kcr_objclient_delete_all_of(&fx->c, &cm_gvk, &lo, NULL, &fx->err), 0);
  names(fx, NULL, NULL, NULL, buf, sizeof(buf));
  assert_string_equal(buf, "ns1/held,ns2/c");
  assert_int_equal(kcr_fake_client_count(fx->f, &deploy_gvk, NULL), 1); /* another kind */
  /* an unknown field is the server's BadRequest */
  lo.field_selector = "data.k=v";
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_delete_all_of(&fx->c, &cm_gvk, &lo, NULL, &fx->err), KCR_EAPI);
  assert_int_equal(fx->err.http_status, 400);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_DELETE_ALL_OF), 4);
  json_decref(held);
}

/* ---- metadata reads ---- */

static void test_testing_metadata(void **state) {
  fixture *fx = *state;
  kcr_list_options lo = {.ns = "ns1"};
  json_t *m = NULL, *list = NULL, *item;
  seed_list(fx);
  assert_int_equal(kcr_objclient_get_metadata(&fx->c, &cm_gvk, "ns1", "b", &m, &fx->err), 0);
  assert_string_equal(kcr_meta_api_version(m), "meta.k8s.io/v1");
  assert_string_equal(kcr_meta_kind(m), "PartialObjectMetadata");
  assert_string_equal(kcr_meta_name(m), "b");
  assert_non_null(kcr_meta_uid(m));
  assert_int_equal(json_object_size(m), 3); /* no data */
  assert_int_equal(kcr_objclient_list_metadata(&fx->c, &cm_gvk, &lo, &list, &fx->err), 0);
  assert_string_equal(kcr_meta_kind(list), "PartialObjectMetadataList");
  assert_string_equal(kcr_meta_api_version(list), "meta.k8s.io/v1");
  assert_int_equal(json_array_size(kcr_list_items(list)), 2);
  item = json_array_get(kcr_list_items(list), 0);
  assert_string_equal(kcr_meta_kind(item), "PartialObjectMetadata");
  assert_string_equal(kcr_meta_name(item), "a");
  assert_null(json_object_get(item, "data"));
  kcr_error_clear(&fx->err);
  json_decref(m);
  assert_int_equal(kcr_objclient_get_metadata(&fx->c, &cm_gvk, "ns1", "nope", &m, &fx->err),
                   KCR_EAPI);
  assert_true(kcr_error_is_not_found(&fx->err));
  assert_null(m);
  json_decref(list);
}

/* ---- the status subresource, per kind ---- */

static const kcr_gvk widget_gvk = {"example.com", "v1", "Widget"};

static json_t *widget(const char *name) {
  return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i}, s:{s:s}}", "apiVersion", "example.com/v1",
                   "kind", "Widget", "metadata", "namespace", "default", "name", name, "spec",
                   "size", 1, "status", "phase", "New");
}

static void test_testing_status_per_kind(void **state) {
  fixture *fx = *state;
  json_t *w = widget("w"), *out = NULL, *got;
  /* the default: every kind has one, so an update keeps the stored status */
  assert_int_equal(kcr_fake_client_add(fx->f, w, &fx->err), 0);
  got = get(fx, &widget_gvk, "default", "w");
  json_object_set_new(json_object_get(got, "status"), "phase", json_string("Ready"));
  assert_int_equal(kcr_objclient_update(&fx->c, got, NULL, &out, &fx->err), 0);
  assert_string_equal(kcr_meta_path_string(out, "status.phase"), "New");
  json_decref(out);
  json_decref(got);
  /* controller-runtime's rule: a kind not registered has none */
  assert_int_equal(kcr_fake_client_with_status_subresource(fx->f, NULL, &fx->err), 0);
  got = get(fx, &widget_gvk, "default", "w");
  json_object_set_new(json_object_get(got, "status"), "phase", json_string("Ready"));
  assert_int_equal(kcr_objclient_update(&fx->c, got, NULL, &out, &fx->err), 0);
  assert_string_equal(kcr_meta_path_string(out, "status.phase"), "Ready"); /* written */
  json_decref(out);
  out = NULL;
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_update(&fx->c, got, "status", &out, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_not_found(&fx->err));
  kcr_error_clear(&fx->err);
  assert_int_equal(
      kcr_objclient_patch(&fx->c, got, KCR_PATCH_MERGE, "{}", 2, "status", &out, &fx->err),
      KCR_EAPI);
  assert_true(kcr_error_is_not_found(&fx->err));
  kcr_error_clear(&fx->err);
  assert_int_equal(
      kcr_objclient_get_subresource(&fx->c, &widget_gvk, "default", "w", "status", &out, &fx->err),
      KCR_EAPI);
  assert_int_equal(fx->err.http_status, 404);
  /* create keeps the status of a kind without the subresource */
  json_object_set_new(json_object_get(w, "metadata"), "name", json_string("w2"));
  assert_int_equal(kcr_objclient_create(&fx->c, w, &out, &fx->err), 0);
  assert_string_equal(kcr_meta_path_string(out, "status.phase"), "New");
  json_decref(out);
  /* a built-in kind with one keeps it */
  {
    json_t *d = deployment("default", "web"), *dout = NULL;
    json_object_set_new(d, "status", json_pack("{s:i}", "replicas", 3));
    assert_int_equal(kcr_objclient_create(&fx->c, d, &dout, &fx->err), 0);
    assert_null(json_object_get(dout, "status"));
    json_decref(dout);
    json_decref(d);
  }
  /* registered: it has one again */
  assert_int_equal(kcr_fake_client_with_status_subresource(fx->f, &widget_gvk, &fx->err), 0);
  json_decref(got);
  got = get(fx, &widget_gvk, "default", "w");
  json_object_set_new(json_object_get(got, "status"), "phase", json_string("Done"));
  assert_int_equal(kcr_objclient_update(&fx->c, got, NULL, &out, &fx->err), 0);
  assert_string_equal(kcr_meta_path_string(out, "status.phase"), "Ready"); /* kept */
  json_decref(out);
  assert_int_equal(kcr_objclient_update(&fx->c, got, "status", &out, &fx->err), 0);
  assert_string_equal(kcr_meta_path_string(out, "status.phase"), "Done");
  json_decref(out);
  assert_int_equal(
      kcr_objclient_get_subresource(&fx->c, &widget_gvk, "default", "w", "status", &out, &fx->err),
      0);
  assert_string_equal(kcr_meta_path_string(out, "status.phase"), "Done");
  json_decref(out);
  assert_int_equal(
      kcr_fake_client_with_status_subresource(fx->f, &(kcr_gvk){"", "v1", NULL}, &fx->err),
      KCR_EINVAL);
  json_decref(got);
  json_decref(w);
}

/* ---- field indexes ---- */

static int by_owner(const json_t *obj, kcr_index_values_t *v, void *data) {
  const char *owner = kcr_meta_path_string(obj, "data.owner");
  (void)data;
  return owner ? kcr_index_values_add(v, owner) : 0;
}

static int failing_index(const json_t *obj, kcr_index_values_t *v, void *data) {
  (void)obj;
  (void)v;
  (void)data;
  return KCR_ERANGE;
}

static void seed_owned(fixture *fx, const char *ns, const char *name, const char *owner) {
  json_t *o = cm(ns, name, NULL);
  json_object_set_new(json_object_get(o, "data"), "owner", json_string(owner));
  assert_int_equal(kcr_fake_client_add(fx->f, o, &fx->err), 0);
  json_decref(o);
}

static void index_names(fixture *fx, const kcr_list_options *lo, char *buf, size_t size) {
  json_t *list = NULL, *it;
  size_t i;
  buf[0] = '\0';
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_list(&fx->c, &cm_gvk, lo, &list, &fx->err), 0);
  json_array_foreach(kcr_list_items(list), i, it) {
    strncat(buf, kcr_meta_namespace(it), size - strlen(buf) - 1);
    strncat(buf, "/", size - strlen(buf) - 1);
    strncat(buf, kcr_meta_name(it), size - strlen(buf) - 1);
    strncat(buf, ",", size - strlen(buf) - 1);
  }
  json_decref(list);
}

static void test_testing_field_index(void **state) {
  fixture *fx = *state;
  kcr_list_options lo = {.index = "owner", .index_value = "ann"};
  char buf[200];
  assert_int_equal(kcr_fake_client_add_index(fx->f, &cm_gvk, "owner", by_owner, NULL, &fx->err), 0);
  seed_owned(fx, "a", "one", "ann");
  seed_owned(fx, "a", "two", "bob");
  seed_owned(fx, "b", "three", "ann");
  /* MatchingFields by index name, every namespace, then one */
  index_names(fx, &lo, buf, sizeof(buf));
  assert_string_equal(buf, "a/one,b/three,");
  lo.ns = "b";
  index_names(fx, &lo, buf, sizeof(buf));
  assert_string_equal(buf, "b/three,");
  /* a field selector on the index name, with the built-in fields */
  memset(&lo, 0, sizeof(lo));
  lo.field_selector = "owner=ann,metadata.namespace=a";
  index_names(fx, &lo, buf, sizeof(buf));
  assert_string_equal(buf, "a/one,");
  lo.field_selector = "owner==bob";
  index_names(fx, &lo, buf, sizeof(buf));
  assert_string_equal(buf, "a/two,");
  /* != on an index is refused (equality only), as controller-runtime's fake */
  lo.field_selector = "owner!=bob";
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_list(&fx->c, &cm_gvk, &lo, NULL, &fx->err), KCR_EAPI);
  assert_int_equal(fx->err.http_status, 400);
  /* an index of another kind does not answer for this one */
  lo.field_selector = "owner=ann";
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_list(&fx->c, &deploy_gvk, &lo, NULL, &fx->err), KCR_EAPI);
  assert_int_equal(fx->err.http_status, 400);
  /* an index not registered, or without a value: KCR_EINVAL, as the cache */
  memset(&lo, 0, sizeof(lo));
  lo.index = "nope";
  lo.index_value = "x";
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_list(&fx->c, &cm_gvk, &lo, NULL, &fx->err), KCR_EINVAL);
  assert_non_null(strstr(fx->err.message, "kcr_fake_client_add_index"));
  lo.index = "owner";
  lo.index_value = NULL;
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_list(&fx->c, &cm_gvk, &lo, NULL, &fx->err), KCR_EINVAL);
  /* DeleteAllOf by an indexed field */
  memset(&lo, 0, sizeof(lo));
  lo.field_selector = "owner=ann";
  assert_int_equal(kcr_objclient_delete_all_of(&fx->c, &cm_gvk, &lo, NULL, &fx->err), 0);
  assert_int_equal(kcr_fake_client_count(fx->f, &cm_gvk, NULL), 1);
  /* registering: taken names, bad arguments; an index function's error fails the list */
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_fake_client_add_index(fx->f, &cm_gvk, "owner", by_owner, NULL, &fx->err),
                   KCR_EEXIST);
  assert_int_equal(kcr_fake_client_add_index(fx->f, &cm_gvk, "x", NULL, NULL, NULL), KCR_EINVAL);
  assert_int_equal(kcr_fake_client_add_index(fx->f, &cm_gvk, "", by_owner, NULL, NULL), KCR_EINVAL);
  assert_int_equal(kcr_fake_client_add_index(fx->f, &cm_gvk, "bad", failing_index, NULL, NULL), 0);
  lo.field_selector = "bad=x";
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_list(&fx->c, &cm_gvk, &lo, NULL, &fx->err), KCR_ERANGE);
}

/* ---- scale, eviction, token ---- */

static void test_testing_scale(void **state) {
  fixture *fx = *state;
  json_t *d = deployment("default", "web"), *scale = NULL, *out = NULL, *got;
  kcr_write_options dry = {.dry_run = true};
  const char *rv;
  json_object_set_new(json_object_get(d, "spec"), "selector",
                      json_pack("{s:{s:s, s:s}, s:[{s:s, s:s, s:[s, s]}]}", "matchLabels", "tier",
                                "front", "app", "web", "matchExpressions", "key", "env", "operator",
                                "In", "values", "prod", "dev"));
  json_object_set_new(json_object_get(d, "spec"), "replicas", json_integer(3));
  json_object_set_new(d, "status", json_pack("{s:i}", "replicas", 2));
  assert_int_equal(kcr_fake_client_add(fx->f, d, &fx->err), 0);
  assert_int_equal(kcr_objclient_get_subresource(&fx->c, &deploy_gvk, "default", "web", "scale",
                                                 &scale, &fx->err),
                   0);
  assert_string_equal(kcr_meta_api_version(scale), "autoscaling/v1");
  assert_string_equal(kcr_meta_kind(scale), "Scale");
  assert_string_equal(kcr_meta_name(scale), "web");
  assert_int_equal(json_integer_value(kcr_meta_path(scale, "spec.replicas")), 3);
  assert_int_equal(json_integer_value(kcr_meta_path(scale, "status.replicas")), 2);
  assert_string_equal(kcr_meta_path_string(scale, "status.selector"),
                      "app=web,env in (dev,prod),tier=front");
  rv = kcr_meta_resource_version(scale);
  assert_string_not_equal(rv, "");
  /* dry run: answered, not written */
  json_object_set_new(json_object_get(scale, "spec"), "replicas", json_integer(5));
  assert_int_equal(
      kcr_objclient_update_subresource(&fx->c, d, "scale", scale, &dry, &out, &fx->err), 0);
  assert_int_equal(json_integer_value(kcr_meta_path(out, "spec.replicas")), 5);
  json_decref(out);
  got = get(fx, &deploy_gvk, "default", "web");
  assert_int_equal(json_integer_value(kcr_meta_path(got, "spec.replicas")), 3);
  json_decref(got);
  /* written: spec.replicas moves, a new version and generation */
  assert_int_equal(
      kcr_objclient_update_subresource(&fx->c, d, "scale", scale, NULL, &out, &fx->err), 0);
  assert_string_equal(kcr_meta_kind(out), "Scale");
  assert_int_equal(json_integer_value(kcr_meta_path(out, "spec.replicas")), 5);
  assert_string_not_equal(kcr_meta_resource_version(out), rv);
  json_decref(out);
  got = get(fx, &deploy_gvk, "default", "web");
  assert_int_equal(json_integer_value(kcr_meta_path(got, "spec.replicas")), 5);
  assert_int_equal(kcr_meta_generation(got), 2);
  json_decref(got);
  /* the Scale's stale resourceVersion is a Conflict */
  kcr_error_clear(&fx->err);
  assert_int_equal(
      kcr_objclient_update_subresource(&fx->c, d, "scale", scale, NULL, &out, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_conflict(&fx->err));
  /* the body must be a Scale; a kind without scale is NotFound */
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_update_subresource(&fx->c, d, "scale", d, NULL, &out, &fx->err),
                   KCR_EAPI);
  assert_int_equal(fx->err.http_status, 400);
  {
    json_t *c = cm("default", "a", NULL);
    assert_int_equal(kcr_fake_client_add(fx->f, c, NULL), 0);
    kcr_error_clear(&fx->err);
    assert_int_equal(
        kcr_objclient_get_subresource(&fx->c, &cm_gvk, "default", "a", "scale", &out, &fx->err),
        KCR_EAPI);
    assert_int_equal(fx->err.http_status, 404);
    json_decref(c);
  }
  json_decref(scale);
  json_decref(d);
}

static void test_testing_eviction_and_token(void **state) {
  fixture *fx = *state;
  static const kcr_gvk pod_gvk = {"", "v1", "Pod"};
  json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata",
                          "namespace", "default", "name", "p");
  json_t *sa = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                         "metadata", "namespace", "default", "name", "bot");
  json_t *ev = json_pack("{s:s, s:s}", "apiVersion", "policy/v1", "kind", "Eviction");
  json_t *tr = json_pack("{s:s, s:s, s:{s:[s]}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                         "TokenRequest", "spec", "audiences", "api");
  json_t *out = NULL;
  kcr_write_options dry = {.dry_run = true};
  assert_int_equal(kcr_fake_client_add(fx->f, pod, &fx->err), 0);
  /* eviction: dry run keeps the pod, a real one deletes it */
  assert_int_equal(
      kcr_objclient_create_subresource(&fx->c, pod, "eviction", ev, &dry, &out, &fx->err), 0);
  assert_int_equal(kcr_fake_client_count(fx->f, &pod_gvk, NULL), 1);
  json_decref(out);
  assert_int_equal(
      kcr_objclient_create_subresource(&fx->c, pod, "eviction", ev, NULL, &out, &fx->err), 0);
  assert_string_equal(kcr_meta_kind(out), "Status");
  assert_int_equal(json_integer_value(json_object_get(out, "code")), 201);
  assert_int_equal(kcr_fake_client_count(fx->f, &pod_gvk, NULL), 0);
  json_decref(out);
  out = NULL;
  kcr_error_clear(&fx->err);
  assert_int_equal(
      kcr_objclient_create_subresource(&fx->c, pod, "eviction", ev, NULL, &out, &fx->err),
      KCR_EAPI);
  assert_true(kcr_error_is_not_found(&fx->err));
  /* the wrong body, the wrong kind */
  kcr_error_clear(&fx->err);
  assert_int_equal(
      kcr_objclient_create_subresource(&fx->c, pod, "eviction", tr, NULL, &out, &fx->err),
      KCR_EAPI);
  assert_int_equal(fx->err.http_status, 400);
  kcr_error_clear(&fx->err);
  assert_int_equal(
      kcr_objclient_create_subresource(&fx->c, sa, "eviction", ev, NULL, &out, &fx->err), KCR_EAPI);
  assert_int_equal(fx->err.http_status, 404);
  /* token: a fake one for a ServiceAccount that exists */
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_create_subresource(&fx->c, sa, "token", tr, NULL, &out, &fx->err),
                   KCR_EAPI);
  assert_true(kcr_error_is_not_found(&fx->err));
  assert_int_equal(kcr_fake_client_add(fx->f, sa, &fx->err), 0);
  assert_int_equal(kcr_objclient_create_subresource(&fx->c, sa, "token", tr, NULL, &out, &fx->err),
                   0);
  assert_string_equal(kcr_meta_kind(out), "TokenRequest");
  assert_string_equal(kcr_meta_path_string(out, "status.token"), "fake-token");
  assert_string_equal(kcr_meta_path_string(out, "status.expirationTimestamp"),
                      "6041-01-01T00:00:00Z");
  assert_string_equal(json_string_value(json_array_get(kcr_meta_path(out, "spec.audiences"), 0)),
                      "api");
  assert_string_equal(kcr_meta_name(out), "bot");
  json_decref(out);
  /* another subresource */
  assert_int_equal(kcr_objclient_create_subresource(&fx->c, sa, "binding", tr, NULL, &out, NULL),
                   KCR_ENOTSUP);
  json_decref(pod);
  json_decref(sa);
  json_decref(ev);
  json_decref(tr);
}

/* ---- allocation failures ---- */

static int alloc_run(kcr_fake_client_t **f) {
  json_t *o = cm("default", "a", "{\"x\":\"y\"}");
  kcr_objclient c;
  kcr_list_options lo;
  int rc;
  memset(&lo, 0, sizeof(lo));
  lo.label_selector = "x=y";
  rc = kcr_fake_client_create(NULL, f, NULL);
  if (rc == 0) {
    c = kcr_fake_client_objclient(*f);
    rc = kcr_objclient_create(&c, o, NULL, NULL);
    if (rc == 0)
      rc = kcr_objclient_list(&c, &cm_gvk, &lo, NULL, NULL);
  }
  json_decref(o);
  return rc;
}

/* alloc_run_new: the verbs added with the write options, through every
 * allocation failure. */
static int alloc_run_new(kcr_fake_client_t **f) {
  json_t *o = cm("default", "a", "{\"x\":\"y\"}"), *d = deployment("default", "web");
  json_t *scale = json_pack("{s:s, s:s, s:{s:i}}", "apiVersion", "autoscaling/v1", "kind", "Scale",
                            "spec", "replicas", 4);
  json_t *ev = json_pack("{s:s, s:s}", "apiVersion", "policy/v1", "kind", "Eviction");
  json_t *out = NULL;
  kcr_write_options dry = {.dry_run = true};
  kcr_list_options lo = {.field_selector = "owner=v", .label_selector = "x=y"};
  kcr_objclient c;
  int rc;
  json_object_set_new(json_object_get(o, "data"), "owner", json_string("v"));
  json_object_set_new(json_object_get(d, "spec"), "selector",
                      json_pack("{s:{s:s}, s:[{s:s, s:s, s:[s]}]}", "matchLabels", "app", "web",
                                "matchExpressions", "key", "env", "operator", "NotIn", "values",
                                "x"));
  rc = kcr_fake_client_create(NULL, f, NULL);
  if (rc == 0)
    rc = kcr_fake_client_add_index(*f, &cm_gvk, "owner", by_owner, NULL, NULL);
  if (rc == 0)
    rc = kcr_fake_client_with_status_subresource(*f, &cm_gvk, NULL);
  if (rc == 0) {
    c = kcr_fake_client_objclient(*f);
    rc = kcr_objclient_create_with(&c, o, &dry, NULL, NULL);
  }
  if (rc == 0)
    rc = kcr_objclient_create(&c, o, NULL, NULL);
  if (rc == 0)
    rc = kcr_fake_client_add(*f, d, NULL);
  if (rc == 0)
    rc = kcr_objclient_update_subresource(&c, d, "scale", scale, NULL, NULL, NULL);
  if (rc == 0)
    rc = kcr_objclient_get_subresource(&c, &deploy_gvk, "default", "web", "scale", &out, NULL);
  json_decref(out);
  out = NULL;
  if (rc == 0)
    rc = kcr_objclient_list(&c, &cm_gvk, &lo, NULL, NULL);
  if (rc == 0)
    rc = kcr_objclient_list_metadata(&c, &cm_gvk, &lo, NULL, NULL);
  if (rc == 0)
    rc = kcr_objclient_get_metadata(&c, &cm_gvk, "default", "a", NULL, NULL);
  if (rc == 0)
    rc = kcr_objclient_delete_all_of(&c, &cm_gvk, &lo, NULL, NULL);
  json_object_set_new(o, "kind", json_string("Pod"));
  if (rc == 0)
    rc = kcr_fake_client_add(*f, o, NULL);
  if (rc == 0)
    rc = kcr_objclient_create_subresource(&c, o, "eviction", ev, NULL, NULL, NULL);
  json_decref(o);
  json_decref(d);
  json_decref(scale);
  json_decref(ev);
  return rc;
}

static void test_testing_alloc_failures(void **state) {
  kcr_fake_client_t *f = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(alloc_run(&f), (kcr_fake_client_destroy(f), f = NULL));
  KCR_TEST_ALLOC_LOOP(alloc_run_new(&f), (kcr_fake_client_destroy(f), f = NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_testing_create_assigns_metadata, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_create_generate_name, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_generate_name_truncated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_create_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_get_not_found, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_update_conflict, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_update_without_name, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_update_noop_and_generation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_status_subresource, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_finalizers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_deletion_timestamp_immutable, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_seed_deleting_needs_finalizers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_delete, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_list_selectors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_list_shape_and_paging, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_patch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_json_pointer_index, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_json_patch_test_numbers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_apply_needs_field_manager, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_interceptors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_create_or_update, setup, teardown),
      cmocka_unit_test(test_testing_fake_recorder),
      cmocka_unit_test_setup_teardown(test_testing_reconcile_ctx, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_dry_run, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_write_options, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_delete_all_of, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_metadata, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_status_per_kind, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_field_index, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_scale, setup, teardown),
      cmocka_unit_test_setup_teardown(test_testing_eviction_and_token, setup, teardown),
      cmocka_unit_test(test_testing_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
