/* SPDX-License-Identifier: MIT */
/*
 * test_controllerutil.c: finalizers (and the exact JSON Patch that removes one),
 * owner references and their errors, status conditions' lastTransitionTime rules,
 * create-or-update / create-or-patch over a fake object client, merge patch diff.
 */
#include <string.h>

#include "kcr/apierror.h"
#include "kcr/controllerutil.h"
#include "kcr/meta.h"
#include "testutil.h"

static json_t *load(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  if (!j)
    fail_msg("bad fixture: %s", e.text);
  return j;
}

static void assert_json(const json_t *j, const char *want) {
  json_t *w = load(want);
  if (!json_equal(j, w)) {
    char *got = json_dumps(j, JSON_COMPACT);
    fail_msg("got %s\nwant %s", got, want);
  }
  json_decref(w);
}

static void test_controllerutil_finalizers(void **state) {
  json_t *o = load("{\"metadata\":{\"name\":\"x\"}}");
  bool ch;
  (void)state;
  assert_false(kcr_finalizer_contains(o, "a"));
  assert_int_equal(kcr_finalizer_add(o, "a", &ch), 0);
  assert_true(ch);
  assert_int_equal(kcr_finalizer_add(o, "a", &ch), 0);
  assert_false(ch);
  assert_int_equal(kcr_finalizer_add(o, "b", &ch), 0);
  assert_true(kcr_finalizer_contains(o, "a"));
  assert_json(kcr_meta_finalizers(o), "[\"a\",\"b\"]");
  assert_int_equal(kcr_finalizer_remove(o, "a", &ch), 0);
  assert_true(ch);
  assert_int_equal(kcr_finalizer_remove(o, "a", &ch), 0);
  assert_false(ch);
  assert_json(kcr_meta_finalizers(o), "[\"b\"]");
  json_decref(o);
  o = load("{\"metadata\":{\"finalizers\":{}}}");
  assert_int_equal(kcr_finalizer_add(o, "a", NULL), KCR_EINVAL);
  json_decref(o);
}

static void test_controllerutil_finalizer_patch_bytes(void **state) {
  json_t *o =
      load("{\"metadata\":{\"name\":\"x\",\"finalizers\":[\"a\",\"other.io/keep\",\"a\"]}}");
  char *patch = NULL;
  (void)state;
  assert_int_equal(kcr_finalizer_remove_patch(o, "a", &patch, NULL), 0);
  assert_string_equal(patch,
                      "[{\"op\":\"test\",\"path\":\"/metadata/finalizers\",\"value\":[\"a\","
                      "\"other.io/keep\",\"a\"]},{\"op\":\"remove\",\"path\":\"/metadata/"
                      "finalizers/2\"},{\"op\":\"remove\",\"path\":\"/metadata/finalizers/0\"}]");
  kcr_free(patch);
  assert_int_equal(kcr_finalizer_remove_patch(o, "absent", &patch, NULL), 0);
  assert_null(patch);
  KCR_TEST_ALLOC_LOOP(kcr_finalizer_remove_patch(o, "a", &patch, NULL),
                      (kcr_free(patch), patch = NULL));
  json_decref(o);
}

/* The light finalizer patch: a test of the list as read and an append, or,
 * with no list, a resourceVersion test and the new list. */
static void test_controllerutil_finalizer_add_patch_bytes(void **state) {
  json_t *o = load("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\","
                   "\"finalizers\":[\"other.io/keep\"]}}");
  json_t *bare = load("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\"}}");
  char *patch = NULL;
  (void)state;
  assert_int_equal(kcr_finalizer_add_patch(o, "kcr.dev/a", &patch, NULL), 0);
  assert_string_equal(patch, "[{\"op\":\"test\",\"path\":\"/metadata/finalizers\",\"value\":"
                             "[\"other.io/keep\"]},{\"op\":\"add\",\"path\":\"/metadata/"
                             "finalizers/-\",\"value\":\"kcr.dev/a\"}]");
  kcr_free(patch);
  assert_int_equal(kcr_finalizer_add_patch(bare, "kcr.dev/a", &patch, NULL), 0);
  assert_string_equal(patch, "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\","
                             "\"value\":\"7\"},{\"op\":\"add\",\"path\":\"/metadata/"
                             "finalizers\",\"value\":[\"kcr.dev/a\"]}]");
  kcr_free(patch);
  patch = NULL;
  assert_int_equal(kcr_finalizer_add_patch(o, "other.io/keep", &patch, NULL), 0);
  assert_null(patch);
  assert_int_equal(kcr_finalizer_add_patch(o, "", &patch, NULL), KCR_EINVAL);
  KCR_TEST_ALLOC_LOOP(kcr_finalizer_add_patch(o, "kcr.dev/a", &patch, NULL),
                      (kcr_free(patch), patch = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_finalizer_add_patch(bare, "kcr.dev/a", &patch, NULL),
                      (kcr_free(patch), patch = NULL));
  json_decref(o);
  json_decref(bare);
}

static const char *OWNER = "{\"apiVersion\":\"kcr.dev/v1\",\"kind\":\"App\",\"metadata\":{"
                           "\"namespace\":\"ns\",\"name\":\"app\",\"uid\":\"u-1\"}}";

static void test_controllerutil_controller_ref(void **state) {
  json_t *owner = load(OWNER);
  json_t *obj = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"child\"}}");
  json_t *other = load("{\"apiVersion\":\"kcr.dev/v2\",\"kind\":\"Other\",\"metadata\":{"
                       "\"namespace\":\"ns\",\"name\":\"o\",\"uid\":\"u-2\"}}");
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_owner_ref_set_controller(owner, obj, &err), 0);
  assert_json(kcr_meta_owner_references(obj),
              "[{\"apiVersion\":\"kcr.dev/v1\",\"kind\":\"App\",\"name\":\"app\",\"uid\":\"u-1\","
              "\"controller\":true,\"blockOwnerDeletion\":true}]");
  /* again: replaced, not duplicated */
  assert_int_equal(kcr_owner_ref_set_controller(owner, obj, &err), 0);
  assert_int_equal(json_array_size(kcr_meta_owner_references(obj)), 1);
  /* another controller: AlreadyOwned */
  assert_int_equal(kcr_owner_ref_set_controller(other, obj, &err), KCR_EEXIST);
  assert_non_null(strstr(err.message, "already owned by another App controller app"));
  assert_int_equal(json_array_size(kcr_meta_owner_references(obj)), 1);
  /* a plain owner is fine alongside */
  assert_int_equal(kcr_owner_ref_set(other, obj, NULL), 0);
  assert_json(json_array_get(kcr_meta_owner_references(obj), 1),
              "{\"apiVersion\":\"kcr.dev/v2\",\"kind\":\"Other\",\"name\":\"o\",\"uid\":\"u-2\"}");
  /* remove */
  assert_int_equal(kcr_owner_ref_remove(owner, obj, NULL), 0);
  assert_int_equal(json_array_size(kcr_meta_owner_references(obj)), 1);
  kcr_error_clear(&err);
  assert_int_equal(kcr_owner_ref_remove(owner, obj, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "does not have an owner reference"));
  json_decref(obj);

  /* cross-namespace and cluster-scoped children are refused */
  obj = load("{\"metadata\":{\"namespace\":\"elsewhere\",\"name\":\"child\"}}");
  kcr_error_clear(&err);
  assert_int_equal(kcr_owner_ref_set_controller(owner, obj, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "cross-namespace"));
  assert_null(kcr_meta_owner_references(obj));
  json_decref(obj);
  obj = load("{\"metadata\":{\"name\":\"clusterwide\"}}");
  kcr_error_clear(&err);
  assert_int_equal(kcr_owner_ref_set(owner, obj, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "cluster-scoped resource must not have a namespace-scoped"));
  json_decref(obj);
  /* an owner without a uid */
  obj = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\"}}");
  json_object_del(kcr_meta_metadata(owner), "uid");
  assert_int_equal(kcr_owner_ref_set(owner, obj, NULL), KCR_EINVAL);
  json_decref(obj);
  json_decref(owner);
  json_decref(other);
}

static void test_controllerutil_owner_ref_refers_to(void **state) {
  json_t *ref = load("{\"apiVersion\":\"kcr.dev/v1\",\"kind\":\"App\",\"name\":\"app\"}");
  json_t *core = load("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"c\"}");
  const kcr_gvk app = {"kcr.dev", "v2", "App"}; /* the version is ignored */
  (void)state;
  assert_true(kcr_owner_ref_refers_to(ref, &app, "app"));
  assert_true(kcr_owner_ref_refers_to(ref, &(kcr_gvk){"kcr.dev", NULL, "App"}, "app"));
  assert_false(kcr_owner_ref_refers_to(ref, &(kcr_gvk){"", "v1", "App"}, "app"));
  assert_false(kcr_owner_ref_refers_to(ref, &(kcr_gvk){"kcr.dev", "v1", "Other"}, "app"));
  assert_false(kcr_owner_ref_refers_to(ref, &app, "other"));
  assert_false(kcr_owner_ref_refers_to(ref, NULL, "app"));
  assert_false(kcr_owner_ref_refers_to(ref, &app, NULL));
  assert_false(kcr_owner_ref_refers_to(ref, &(kcr_gvk){"kcr.dev", "v1", NULL}, "app"));
  assert_true(kcr_owner_ref_refers_to(core, &(kcr_gvk){NULL, "v1", "ConfigMap"}, "c"));
  assert_false(kcr_owner_ref_refers_to(core, &(kcr_gvk){"apps", "v1", "ConfigMap"}, "c"));
  /* the deprecated apiVersion form: the same comparison */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  assert_true(kcr_owner_ref_refers(ref, "kcr.dev/v9", "App", "app"));
  assert_false(kcr_owner_ref_refers(ref, "v1", "App", "app"));
  assert_true(kcr_owner_ref_refers(core, NULL, "ConfigMap", "c"));
#pragma GCC diagnostic pop
  json_decref(ref);
  json_decref(core);
}

static void test_controllerutil_owner_ref_alloc(void **state) {
  json_t *owner = load(OWNER);
  const char *fixture = "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\"}}";
  json_t *obj = load(fixture);
  (void)state;
  KCR_TEST_ALLOC_LOOP(kcr_owner_ref_set_controller(owner, obj, NULL),
                      (json_decref(obj), obj = load(fixture)));
  json_decref(obj);
  json_decref(owner);
}

static void test_controllerutil_conditions(void **state) {
  kcr_clock_t *clk;
  json_t *o = load("{\"metadata\":{\"name\":\"x\",\"generation\":3}}");
  json_t *conds, *c;
  bool ch;
  kcr_condition ready = {"Ready", "False", "Creating", "starting up", 3, {0, 0}};
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1700000000, 0}, &clk, NULL), 0);
  assert_null(kcr_conditions_get(o, false));
  conds = kcr_conditions_get(o, true);
  assert_non_null(conds);
  assert_int_equal(kcr_condition_set(conds, &ready, clk, &ch), 0);
  assert_true(ch);
  c = kcr_condition_find(conds, "Ready");
  assert_json(c, "{\"type\":\"Ready\",\"status\":\"False\",\"observedGeneration\":3,"
                 "\"lastTransitionTime\":\"2023-11-14T22:13:20Z\",\"reason\":\"Creating\","
                 "\"message\":\"starting up\"}");
  /* same status, new reason and generation: time kept, others updated */
  kcr_fake_clock_step(clk, 60 * KCR_NSEC_PER_SEC);
  ready.reason = "StillCreating";
  ready.observed_generation = 4;
  assert_int_equal(kcr_condition_set(conds, &ready, clk, &ch), 0);
  assert_true(ch);
  assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")),
                      "2023-11-14T22:13:20Z");
  assert_string_equal(json_string_value(json_object_get(c, "reason")), "StillCreating");
  assert_int_equal(json_integer_value(json_object_get(c, "observedGeneration")), 4);
  /* nothing new: unchanged */
  assert_int_equal(kcr_condition_set(conds, &ready, clk, &ch), 0);
  assert_false(ch);
  assert_false(kcr_condition_is_true(conds, "Ready"));
  assert_true(kcr_condition_is_false(conds, "Ready"));
  /* status changes: the time moves */
  ready.status = "True";
  ready.reason = "Available";
  ready.message = NULL;
  assert_int_equal(kcr_condition_set(conds, &ready, clk, &ch), 0);
  assert_true(ch);
  assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")),
                      "2023-11-14T22:14:20Z");
  assert_string_equal(json_string_value(json_object_get(c, "message")), "");
  assert_true(kcr_condition_is_true(conds, "Ready"));
  /* an explicit time wins */
  {
    kcr_condition deg = {"Degraded", "Unknown", "R", "m", 1, {1000, 0}};
    assert_int_equal(kcr_condition_set(conds, &deg, clk, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(kcr_condition_find(conds, "Degraded"),
                                                          "lastTransitionTime")),
                        "1970-01-01T00:16:40Z");
  }
  assert_int_equal(json_array_size(conds), 2);
  assert_true(kcr_condition_remove(conds, "Degraded"));
  assert_false(kcr_condition_remove(conds, "Degraded"));
  assert_null(kcr_condition_find(conds, "Degraded"));
  {
    kcr_condition bad = {NULL, "True", NULL, NULL, 0, {0, 0}};
    assert_int_equal(kcr_condition_set(conds, &bad, clk, NULL), KCR_EINVAL);
  }
  json_decref(o);
  kcr_clock_destroy(clk);
}

static void test_controllerutil_merge_diff(void **state) {
  json_t *a = load("{\"a\":1,\"b\":{\"c\":2,\"d\":3},\"e\":[1],\"gone\":true}");
  json_t *b = load("{\"a\":1,\"b\":{\"c\":2,\"d\":4,\"n\":null},\"e\":[1,2],\"new\":\"x\"}");
  json_t *p;
  (void)state;
  assert_int_equal(kcr_merge_patch_diff(a, b, &p), 0);
  assert_json(p, "{\"b\":{\"d\":4,\"n\":null},\"e\":[1,2],\"new\":\"x\",\"gone\":null}");
  json_decref(p);
  assert_int_equal(kcr_merge_patch_diff(a, a, &p), 0);
  assert_json(p, "{}");
  json_decref(p);
  json_decref(a);
  json_decref(b);
}

/* ---- a fake object client: one object in memory, writes recorded ---- */

typedef struct fake {
  json_t *stored; /* NULL: absent */
  int creates, updates, patches, status_patches;
  char last_patch[512];
  char last_sub[16];
} fake_t;

static int not_found(kcr_error_t *err) {
  if (err) {
    kcr_error_set(err, KCR_EAPI, "not found");
    err->http_status = 404;
    strcpy(err->reason, "NotFound");
  }
  return KCR_EAPI;
}

static int f_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                 json_t **out, kcr_error_t *err) {
  fake_t *f = c->data;
  (void)gvk;
  (void)ns;
  (void)name;
  *out = NULL;
  if (!f->stored)
    return not_found(err);
  *out = json_deep_copy(f->stored);
  return 0;
}

static int f_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  fake_t *f = c->data;
  (void)err;
  f->creates++;
  f->stored = json_deep_copy(obj);
  json_object_set_new(kcr_meta_metadata(f->stored), "resourceVersion", json_string("1"));
  *out = json_deep_copy(f->stored);
  return 0;
}

static int f_update(const kcr_objclient *c, const json_t *obj, const char *sub, json_t **out,
                    kcr_error_t *err) {
  fake_t *f = c->data;
  (void)sub;
  (void)err;
  f->updates++;
  json_decref(f->stored);
  f->stored = json_deep_copy(obj);
  *out = json_deep_copy(f->stored);
  return 0;
}

/* apply_merge applies an RFC 7386 patch (enough for the tests). */
static void apply_merge(json_t *target, json_t *patch) {
  const char *k;
  json_t *v;
  json_object_foreach(patch, k, v) {
    if (json_is_null(v))
      json_object_del(target, k);
    else if (json_is_object(v) && json_is_object(json_object_get(target, k)))
      apply_merge(json_object_get(target, k), v);
    else
      json_object_set(target, k, v);
  }
}

static int f_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                   const char *patch, size_t len, const char *sub, json_t **out, kcr_error_t *err) {
  fake_t *f = c->data;
  json_t *p = json_loadb(patch, len, 0, NULL);
  (void)obj;
  (void)err;
  assert_int_equal(type, KCR_PATCH_MERGE);
  snprintf(f->last_patch, sizeof(f->last_patch), "%.*s", (int)len, patch);
  snprintf(f->last_sub, sizeof(f->last_sub), "%s", sub ? sub : "");
  if (sub)
    f->status_patches++;
  else
    f->patches++;
  apply_merge(f->stored, p);
  json_decref(p);
  *out = json_deep_copy(f->stored);
  return 0;
}

static const kcr_objclient_ops fake_ops = {
    .get = f_get, .create = f_create, .update = f_update, .patch = f_patch};

static int set_data(json_t *obj, void *data, kcr_error_t *err) {
  (void)err;
  json_object_set_new(obj, "data", json_pack("{s:s}", "k", (const char *)data));
  return 0;
}

static int set_status(json_t *obj, void *data, kcr_error_t *err) {
  (void)err;
  json_object_set_new(obj, "status", json_pack("{s:s}", "phase", (const char *)data));
  return 0;
}

static int set_both(json_t *obj, void *data, kcr_error_t *err) {
  set_data(obj, data, err);
  return set_status(obj, data, err);
}

static int rename_it(json_t *obj, void *data, kcr_error_t *err) {
  (void)data;
  (void)err;
  json_object_set_new(kcr_meta_metadata(obj), "name", json_string("other"));
  return 0;
}

static json_t *skeleton(void) {
  return load("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"namespace\":\"ns\","
              "\"name\":\"cm\"}}");
}

static void test_controllerutil_create_or_update(void **state) {
  fake_t f = {0};
  kcr_objclient c = {&fake_ops, &f, NULL, NULL};
  kcr_op_result r;
  json_t *obj = skeleton();
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_create_or_update(&c, obj, set_data, (void *)"v1", &r, NULL), 0);
  assert_int_equal(r, KCR_OP_CREATED);
  assert_string_equal(kcr_op_result_name(r), "created");
  assert_string_equal(kcr_meta_resource_version(obj), "1");
  json_decref(obj);
  obj = skeleton();
  assert_int_equal(kcr_create_or_update(&c, obj, set_data, (void *)"v1", &r, NULL), 0);
  assert_int_equal(r, KCR_OP_UNCHANGED);
  assert_int_equal(f.updates, 0);
  assert_int_equal(kcr_create_or_update(&c, obj, set_data, (void *)"v2", &r, NULL), 0);
  assert_int_equal(r, KCR_OP_UPDATED);
  assert_int_equal(f.updates, 1);
  assert_string_equal(json_string_value(kcr_meta_path(f.stored, "data.k")), "v2");
  assert_int_equal(kcr_create_or_update(&c, obj, rename_it, NULL, &r, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "cannot mutate object name"));
  assert_int_equal(f.updates, 1);
  json_decref(obj);
  json_decref(f.stored);
}

static void test_controllerutil_create_or_patch(void **state) {
  fake_t f = {0};
  kcr_objclient c = {&fake_ops, &f, NULL, NULL};
  kcr_op_result r;
  json_t *obj = skeleton();
  (void)state;
  assert_int_equal(kcr_create_or_patch(&c, obj, set_data, (void *)"v1", &r, NULL), 0);
  assert_int_equal(r, KCR_OP_CREATED);
  assert_int_equal(kcr_create_or_patch(&c, obj, set_data, (void *)"v1", &r, NULL), 0);
  assert_int_equal(r, KCR_OP_UNCHANGED);
  assert_int_equal(f.patches + f.status_patches, 0);
  assert_int_equal(kcr_create_or_patch(&c, obj, set_data, (void *)"v2", &r, NULL), 0);
  assert_int_equal(r, KCR_OP_UPDATED);
  assert_string_equal(f.last_patch, "{\"data\":{\"k\":\"v2\"}}");
  assert_int_equal(kcr_create_or_patch(&c, obj, set_status, (void *)"Ready", &r, NULL), 0);
  assert_int_equal(r, KCR_OP_UPDATED_STATUS_ONLY);
  assert_string_equal(f.last_patch, "{\"status\":{\"phase\":\"Ready\"}}");
  assert_string_equal(f.last_sub, "status");
  assert_int_equal(f.patches, 1);
  assert_int_equal(kcr_create_or_patch(&c, obj, set_both, (void *)"v3", &r, NULL), 0);
  assert_int_equal(r, KCR_OP_UPDATED_STATUS);
  assert_string_equal(kcr_op_result_name(r), "updatedStatus");
  assert_int_equal(f.patches, 2);
  assert_int_equal(f.status_patches, 2);
  assert_string_equal(json_string_value(kcr_meta_path(obj, "status.phase")), "v3");
  json_decref(obj);
  json_decref(f.stored);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_controllerutil_finalizers),
      cmocka_unit_test(test_controllerutil_finalizer_patch_bytes),
      cmocka_unit_test(test_controllerutil_finalizer_add_patch_bytes),
      cmocka_unit_test(test_controllerutil_controller_ref),
      cmocka_unit_test(test_controllerutil_owner_ref_refers_to),
      cmocka_unit_test(test_controllerutil_owner_ref_alloc),
      cmocka_unit_test(test_controllerutil_conditions),
      cmocka_unit_test(test_controllerutil_merge_diff),
      cmocka_unit_test(test_controllerutil_create_or_update),
      cmocka_unit_test(test_controllerutil_create_or_patch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
