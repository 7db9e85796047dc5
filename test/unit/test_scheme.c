/* SPDX-License-Identifier: MIT */
/* test_scheme.c: the kind registry: registration rules, lookups, built-ins, typed codecs. */
#include <stdlib.h>
#include <string.h>

#include "kcr/scheme.h"
#include "testutil.h"

typedef struct app {
  char image[64];
  int replicas;
} app_t;

static int decode_app(const json_t *obj, void **out, kcr_error_t *err, void *data) {
  json_t *spec = json_object_get(obj, "spec");
  const char *image = json_string_value(json_object_get(spec, "image"));
  app_t *a;
  (void)data;
  if (!image)
    return kcr_error_set(err, KCR_EPARSE, "App: spec.image is required");
  a = calloc(1, sizeof(*a));
  if (!a)
    return KCR_ENOMEM;
  snprintf(a->image, sizeof(a->image), "%s", image);
  a->replicas = (int)json_integer_value(json_object_get(spec, "replicas"));
  *out = a;
  return 0;
}

static int encode_app(const void *typed, json_t **out, kcr_error_t *err, void *data) {
  const app_t *a = typed;
  (void)err;
  (void)data;
  *out = json_pack("{s:{s:s, s:i}}", "spec", "image", a->image, "replicas", a->replicas);
  return *out ? 0 : KCR_ENOMEM;
}

static void free_app(void *typed, void *data) {
  (void)data;
  free(typed);
}

static const kcr_kind_info app_kind = {"kcr.dev", "v1alpha1", "App",      "apps",   NULL,
                                       true,      decode_app, encode_app, free_app, NULL};

static void test_scheme_register_and_lookup(void **state) {
  kcr_scheme_t *s;
  const kcr_kind_info *k;
  kcr_gvr r = {"kcr.dev", "v1alpha1", "apps"};
  kcr_error_t err;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s), 0);
  assert_int_equal(kcr_scheme_register(s, &app_kind, NULL), 0);
  k = kcr_scheme_lookup(s, "kcr.dev", "v1alpha1", "App");
  assert_non_null(k);
  assert_string_equal(k->resource, "apps");
  assert_string_equal(k->list_kind, "AppList");
  assert_true(k->namespaced);
  assert_ptr_equal(kcr_scheme_lookup(s, "kcr.dev", NULL, "App"), k);
  assert_ptr_equal(kcr_scheme_lookup_resource(s, &r), k);
  assert_null(kcr_scheme_lookup(s, "kcr.dev", "v1", "App"));
  assert_null(kcr_scheme_lookup(s, "", "v1alpha1", "App"));
  r = kcr_kind_info_gvr(k);
  assert_string_equal(r.resource, "apps");
  kcr_error_clear(&err);
  assert_int_equal(kcr_scheme_register(s, &app_kind, &err), KCR_EEXIST);
  assert_non_null(strstr(err.message, "kcr.dev/v1alpha1, Kind=App"));
  kcr_scheme_destroy(s);
  kcr_scheme_destroy(NULL);
}

static void test_scheme_rejects_incomplete_kinds(void **state) {
  kcr_scheme_t *s;
  kcr_kind_info k = app_kind;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s), 0);
  k.resource = NULL;
  assert_int_equal(kcr_scheme_register(s, &k, NULL), KCR_EINVAL);
  k = app_kind;
  k.encode = NULL; /* a codec in part */
  assert_int_equal(kcr_scheme_register(s, &k, NULL), KCR_EINVAL);
  k = app_kind;
  k.version = "";
  assert_int_equal(kcr_scheme_register(s, &k, NULL), KCR_EINVAL);
  kcr_scheme_destroy(s);
}

static void test_scheme_builtins_and_kind_of(void **state) {
  kcr_scheme_t *s;
  json_t *cm = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", "ConfigMap");
  json_t *dep = json_pack("{s:s, s:s}", "apiVersion", "apps/v1", "kind", "Deployment");
  json_t *odd = json_pack("{s:s}", "kind", "ConfigMap");
  const kcr_kind_info *k;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s), 0);
  assert_int_equal(kcr_scheme_add_builtins(s, NULL), 0);
  k = kcr_scheme_kind_of(s, cm);
  assert_non_null(k);
  assert_string_equal(k->resource, "configmaps");
  k = kcr_scheme_kind_of(s, dep);
  assert_string_equal(k->group, "apps");
  assert_string_equal(k->resource, "deployments");
  assert_null(kcr_scheme_kind_of(s, odd));
  assert_false(kcr_scheme_lookup(s, "", "v1", "Namespace")->namespaced);
  /* Two kinds may share a name across groups (core Event and events.k8s.io Event). */
  assert_string_not_equal(kcr_scheme_lookup(s, "", "v1", "Event")->group,
                          kcr_scheme_lookup(s, "events.k8s.io", "v1", "Event")->group);
  assert_int_equal(kcr_scheme_add_builtins(s, NULL), KCR_EEXIST);
  json_decref(cm);
  json_decref(dep);
  json_decref(odd);
  kcr_scheme_destroy(s);
}

static void test_scheme_typed_codec_round_trip(void **state) {
  kcr_scheme_t *s;
  json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:i}}", "apiVersion", "kcr.dev/v1alpha1", "kind",
                          "App", "spec", "image", "nginx:1.27", "replicas", 3);
  json_t *bad =
      json_pack("{s:s, s:s, s:{}}", "apiVersion", "kcr.dev/v1alpha1", "kind", "App", "spec");
  json_t *cm = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", "ConfigMap");
  json_t *back = NULL;
  void *typed = NULL;
  kcr_error_t err;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s), 0);
  assert_int_equal(kcr_scheme_register(s, &app_kind, NULL), 0);
  assert_int_equal(kcr_scheme_add_builtins(s, NULL), 0);
  assert_int_equal(kcr_scheme_decode(s, obj, &typed, NULL), 0);
  assert_string_equal(((app_t *)typed)->image, "nginx:1.27");
  assert_int_equal(((app_t *)typed)->replicas, 3);
  assert_int_equal(kcr_scheme_encode(kcr_scheme_kind_of(s, obj), typed, &back, NULL), 0);
  assert_true(json_equal(back, obj));
  kcr_scheme_free_typed(kcr_scheme_kind_of(s, obj), typed);
  json_decref(back);
  kcr_error_clear(&err);
  assert_int_equal(kcr_scheme_decode(s, bad, &typed, &err), KCR_EPARSE);
  assert_null(typed);
  assert_string_equal(err.message, "App: spec.image is required");
  kcr_error_clear(&err);
  assert_int_equal(kcr_scheme_decode(s, cm, &typed, &err), KCR_ENOTSUP);
  json_object_set_new(cm, "kind", json_string("Nope"));
  assert_int_equal(kcr_scheme_decode(s, cm, &typed, NULL), KCR_ENOENT);
  json_decref(obj);
  json_decref(bad);
  json_decref(cm);
  kcr_scheme_destroy(s);
}

static kcr_scheme_t *made;

static int build(void) {
  int rc = kcr_scheme_create(&made);
  if (rc == 0)
    rc = kcr_scheme_add_builtins(made, NULL);
  return rc;
}

static void test_scheme_allocation_failure(void **state) {
  (void)state;
  KCR_TEST_ALLOC_LOOP(build(), (kcr_scheme_destroy(made), made = NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scheme_register_and_lookup),
      cmocka_unit_test(test_scheme_rejects_incomplete_kinds),
      cmocka_unit_test(test_scheme_builtins_and_kind_of),
      cmocka_unit_test(test_scheme_typed_codec_round_trip),
      cmocka_unit_test(test_scheme_allocation_failure),
  };
  return cmocka_run_group_tests_name("scheme", tests, NULL, NULL);
}
