/* SPDX-License-Identifier: MIT */
/*
 * test_kcr_gen.c: the code kcr-gen writes, compiled at build time from the
 * App CRD (config/crd/bases/kcr.dev_apps.yaml -> app_v1alpha1.h) and from a
 * handcrafted CRD with every schema shape (data/kcr-gen/shapes.yaml ->
 * shapes_v1.h, shapes_v2.h). Decode, encode, unknown members, error messages,
 * copy and equality, allocation failure, and typed get/list/update through a
 * fake object client. And property names of 400 and 2000 characters
 * (data/kcr-gen/long-names.yaml.in -> longnames_v1.h, issue 28).
 */
#include <stdlib.h>
#include <string.h>

#include "app_v1alpha1.h"
#include "kcr/error.h"
#include "kcr/meta.h"
#include "kcr/objclient.h"
#include "kcr/scheme.h"
#include "longnames_v1.h"
#include "shapes_v1.h"
#include "shapes_v2.h"
#include "testutil.h"

/* The sample App, config/samples/kcr_v1alpha1_app.yaml, as JSON. */
static json_t *load_sample(void) {
  json_error_t je;
  json_t *j = json_load_file(KCR_TEST_DATA_DIR "/kcr-gen/app_sample.json", 0, &je);
  if (!j)
    fail_msg("app_sample.json: %s", je.text);
  return j;
}

static json_t *parse(const char *text) {
  json_error_t je;
  json_t *j = json_loads(text, 0, &je);
  if (!j)
    fail_msg("bad test JSON: %s: %s", je.text, text);
  return j;
}

/* The sample with members the generated type lacks, at every level. */
static json_t *sample_with_unknowns(void) {
  json_t *j = load_sample();
  json_t *spec = json_object_get(j, "spec");
  json_object_set_new(j, "extraTop", json_string("top"));
  json_object_set_new(spec, "futureField", parse("{\"a\": [1, 2, {\"b\": null}]}"));
  json_object_set_new(json_array_get(json_object_get(spec, "env"), 0), "valueFrom",
                      parse("{\"secretKeyRef\": {\"name\": \"s\", \"key\": \"k\"}}"));
  json_object_set_new(json_object_get(spec, "resources"), "claims", parse("[{\"name\": \"gpu\"}]"));
  json_object_set_new(j, "status",
                      parse("{\"replicas\": 2, \"other\": \"kept\", \"conditions\": [{\"type\": "
                            "\"Available\", \"status\": \"True\", \"lastTransitionTime\": "
                            "\"2024-01-02T03:04:05Z\", \"reason\": \"Ready\", \"message\": \"\", "
                            "\"severity\": \"low\"}]}"));
  return j;
}

static const char *entry_value(const app_v1alpha1_spec_resources_requests_entry_t *e, size_t n,
                               const char *key) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(e[i].key, key) == 0)
      return e[i].value.text;
  return NULL;
}

static void test_kcr_gen_decode_sample(void **state) {
  json_t *j = load_sample();
  app_v1alpha1_t *app = NULL;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(app_v1alpha1_decode(j, &app, &err), 0);
  assert_string_equal(app->api_version, "kcr.dev/v1alpha1");
  assert_string_equal(app->kind, "App");
  assert_string_equal(app->metadata->name, "app-sample");
  assert_non_null(app->spec);
  assert_string_equal(app->spec->image, "nginx:1.27");
  assert_true(app->spec->has_replicas);
  assert_int_equal(app->spec->replicas, 2);
  assert_true(app->spec->has_port);
  assert_int_equal(app->spec->port, 80);
  assert_false(app->spec->has_paused);
  assert_true(app->spec->has_env);
  assert_int_equal(app->spec->env_len, 1);
  assert_string_equal(app->spec->env[0].name, "GREETING");
  assert_string_equal(app->spec->env[0].value, "hello from kcr");
  assert_int_equal(app->spec->config_len, 1);
  assert_string_equal(app->spec->config[0].key, "index.html");
  assert_string_equal(app->spec->config[0].value, "<h1>Hello from kcr-operator</h1>\n");
  assert_non_null(app->spec->resources);
  assert_int_equal(app->spec->resources->requests_len, 2);
  assert_string_equal(
      entry_value(app->spec->resources->requests, app->spec->resources->requests_len, "cpu"),
      "10m");
  assert_string_equal(
      entry_value(app->spec->resources->requests, app->spec->resources->requests_len, "memory"),
      "32Mi");
  assert_false(app->spec->resources->requests[0].value.is_int);
  assert_int_equal(app->spec->resources->limits_len, 1);
  assert_string_equal(app->spec->resources->limits[0].value.text, "64Mi");
  assert_null(app->status);
  assert_null(app->kcr_unknown);
  assert_null(app->spec->kcr_unknown);
  app_v1alpha1_free(app);
  json_decref(j);
}

/* decode_encode decodes j as an App and encodes it back; a new object. */
static json_t *decode_encode(const json_t *j) {
  app_v1alpha1_t *app = NULL;
  json_t *out = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  if (app_v1alpha1_decode(j, &app, &err))
    fail_msg("decode: %s", err.message);
  if (app_v1alpha1_encode(app, &out, &err))
    fail_msg("encode: %s", err.message);
  app_v1alpha1_free(app);
  return out;
}

static void test_kcr_gen_round_trip(void **state) {
  json_t *j = load_sample(), *out = decode_encode(j);
  char *a = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
  char *b = json_dumps(out, JSON_SORT_KEYS | JSON_COMPACT);
  (void)state;
  assert_true(json_equal(j, out));
  assert_string_equal(a, b); /* the same bytes, once keys are in one order */
  free(a);
  free(b);
  json_decref(out);
  json_decref(j);
}

static void test_kcr_gen_unknown_fields_survive(void **state) {
  json_t *j = sample_with_unknowns(), *out;
  app_v1alpha1_t *app = NULL;
  (void)state;
  assert_int_equal(app_v1alpha1_decode(j, &app, NULL), 0);
  assert_non_null(json_object_get(app->kcr_unknown, "extraTop"));
  assert_non_null(json_object_get(app->spec->kcr_unknown, "futureField"));
  assert_null(json_object_get(app->spec->kcr_unknown, "image"));
  assert_non_null(json_object_get(app->spec->env[0].kcr_unknown, "valueFrom"));
  assert_non_null(json_object_get(app->spec->resources->kcr_unknown, "claims"));
  assert_string_equal(json_string_value(json_object_get(app->status->kcr_unknown, "other")),
                      "kept");
  assert_non_null(json_object_get(app->status->conditions[0].kcr_unknown, "severity"));
  assert_int_equal(app->status->replicas, 2);
  /* A change through the type leaves them in place. */
  app->spec->replicas = 7;
  assert_int_equal(app_v1alpha1_encode(app, &out, NULL), 0);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "spec"), "replicas")),
                   7);
  json_object_set_new(json_object_get(j, "spec"), "replicas", json_integer(7));
  assert_true(json_equal(j, out));
  json_decref(out);
  app_v1alpha1_free(app);
  json_decref(j);
}

typedef struct bad_case {
  const char *json;
  int code;
  const char *message;
} bad_case;

static void test_kcr_gen_decode_errors(void **state) {
  static const bad_case cases[] = {
      {"{\"spec\": {\"image\": \"x\", \"replicas\": \"2\"}}", KCR_EPARSE,
       "spec.replicas: expected an integer, got a string"},
      {"{\"spec\": {\"image\": \"x\", \"replicas\": 3000000000}}", KCR_EPARSE,
       "spec.replicas: 3000000000 is out of range for int32"},
      {"{\"spec\": {\"image\": \"x\", \"env\": [{\"name\": \"A\"}, {\"name\": 5}]}}", KCR_EPARSE,
       "spec.env[1].name: expected a string, got an integer"},
      {"{\"spec\": {\"image\": \"x\", \"env\": [{\"value\": \"v\"}]}}", KCR_EPARSE,
       "spec.env[0].name: required field is missing"},
      {"{\"spec\": {\"image\": \"x\", \"config\": {\"index.html\": 1}}}", KCR_EPARSE,
       "spec.config[index.html]: expected a string, got an integer"},
      {"{\"spec\": {\"image\": \"x\", \"resources\": {\"requests\": {\"cpu\": true}}}}", KCR_EPARSE,
       "spec.resources.requests[cpu]: expected a quantity (a string or an integer), got a "
       "boolean"},
      {"{\"spec\": {\"image\": \"x\", \"paused\": \"yes\"}}", KCR_EPARSE,
       "spec.paused: expected a boolean, got a string"},
      {"{\"spec\": {\"image\": \"x\", \"env\": {}}}", KCR_EPARSE,
       "spec.env: expected an array, got an object"},
      {"{\"spec\": {\"image\": \"x\"}, \"status\": {\"observedGeneration\": 1.5}}", KCR_EPARSE,
       "status.observedGeneration: expected an integer, got a number"},
      {"{\"spec\": {\"replicas\": 1}}", KCR_EPARSE, "spec.image: required field is missing"},
      {"{\"spec\": \"x\"}", KCR_EPARSE, "spec: expected an object, got a string"},
      {"{\"kind\": \"App\"}", KCR_EPARSE, "spec: required field is missing"},
      {"[1]", KCR_EPARSE, "(top level): expected an object, got an array"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_t *j = parse(cases[i].json);
    app_v1alpha1_t *app = (app_v1alpha1_t *)&app;
    kcr_error_t err;
    kcr_error_clear(&err);
    assert_int_equal(app_v1alpha1_decode(j, &app, &err), cases[i].code);
    assert_null(app);
    assert_int_equal(err.code, cases[i].code);
    assert_string_equal(err.message, cases[i].message);
    json_decref(j);
  }
}

static void test_kcr_gen_encode_required_unset(void **state) {
  json_t *j = load_sample(), *out = (json_t *)&out;
  app_v1alpha1_t *app = NULL;
  kcr_error_t err;
  (void)state;
  assert_int_equal(app_v1alpha1_decode(j, &app, NULL), 0);
  app_v1alpha1_mem_free(app->spec->image);
  app->spec->image = NULL;
  kcr_error_clear(&err);
  assert_int_equal(app_v1alpha1_encode(app, &out, &err), KCR_EINVAL);
  assert_null(out);
  assert_string_equal(err.message, "spec.image: required field is not set");
  app_v1alpha1_free(app);
  json_decref(j);
}

static void test_kcr_gen_copy_and_equal(void **state) {
  json_t *j = sample_with_unknowns(), *r;
  app_v1alpha1_t *a = NULL, *b = NULL;
  app_v1alpha1_spec_t *sc = NULL;
  app_v1alpha1_spec_resources_requests_entry_t tmp;
  (void)state;
  assert_int_equal(app_v1alpha1_decode(j, &a, NULL), 0);
  assert_int_equal(app_v1alpha1_copy(a, &b, NULL), 0);
  assert_ptr_not_equal(a->spec, b->spec);
  assert_ptr_not_equal(a->spec->image, b->spec->image);
  assert_true(app_v1alpha1_equal(a, b));
  assert_true(app_v1alpha1_equal(NULL, NULL));
  assert_false(app_v1alpha1_equal(a, NULL));
  /* a map is equal in any order */
  tmp = b->spec->resources->requests[0];
  b->spec->resources->requests[0] = b->spec->resources->requests[1];
  b->spec->resources->requests[1] = tmp;
  assert_true(app_v1alpha1_equal(a, b));
  /* a scalar, a flag, an unknown member: each makes a difference */
  b->spec->replicas = 3;
  assert_false(app_v1alpha1_equal(a, b));
  b->spec->replicas = 2;
  b->spec->has_paused = true;
  assert_false(app_v1alpha1_equal(a, b));
  b->spec->has_paused = false;
  assert_true(app_v1alpha1_equal(a, b));
  json_object_set_new(b->spec->kcr_unknown, "futureField", json_integer(1));
  assert_false(app_v1alpha1_equal(a, b));
  /* the copy is deep: changing it left a alone, and a still encodes as j */
  assert_int_equal(app_v1alpha1_encode(a, &r, NULL), 0);
  assert_true(json_equal(r, j));
  json_decref(r);
  /* a nested type on its own */
  assert_int_equal(app_v1alpha1_spec_copy(a->spec, &sc, NULL), 0);
  assert_true(app_v1alpha1_spec_equal(a->spec, sc));
  app_v1alpha1_spec_free(sc);
  app_v1alpha1_free(a);
  app_v1alpha1_free(b);
  json_decref(j);
}

static void test_kcr_gen_alloc_failure(void **state) {
  json_t *j = sample_with_unknowns(), *out = NULL;
  app_v1alpha1_t *app = NULL, *copy = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(app_v1alpha1_decode(j, &app, NULL), (app_v1alpha1_free(app), app = NULL));
  assert_int_equal(app_v1alpha1_decode(j, &app, NULL), 0);
  KCR_TEST_ALLOC_LOOP(app_v1alpha1_encode(app, &out, NULL), (json_decref(out), out = NULL));
  KCR_TEST_ALLOC_LOOP(app_v1alpha1_copy(app, &copy, NULL), (app_v1alpha1_free(copy), copy = NULL));
  app_v1alpha1_free(app);
  json_decref(j);
}

/* ---- typed get/list/update through a fake object client ---- */

typedef struct fake {
  json_t *stored; /* the one App the fake holds */
  int updates;
} fake;

static int fake_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                    json_t **out, kcr_error_t *err) {
  fake *f = c->data;
  (void)gvk;
  (void)ns;
  (void)name;
  (void)err;
  *out = json_deep_copy(f->stored);
  return 0;
}

static int fake_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                     json_t **out, kcr_error_t *err) {
  fake *f = c->data;
  (void)gvk;
  (void)o;
  (void)err;
  *out = json_pack("{s:s, s:s, s:{s:s}, s:[O]}", "apiVersion", "kcr.dev/v1alpha1", "kind",
                   "AppList", "metadata", "resourceVersion", "9", "items", f->stored);
  return 0;
}

static int fake_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  (void)c;
  (void)err;
  *out = json_deep_copy(obj);
  return 0;
}

static int fake_update(const kcr_objclient *c, const json_t *obj, const char *subresource,
                       json_t **out, kcr_error_t *err) {
  fake *f = c->data;
  (void)subresource;
  (void)err;
  json_decref(f->stored);
  f->stored = json_deep_copy(obj);
  f->updates++;
  json_object_set_new(json_object_get(f->stored, "metadata"), "resourceVersion", json_string("2"));
  *out = json_deep_copy(f->stored);
  return 0;
}

/* fake_patch applies a merge patch of objects (no nulls) to the stored App. */
static int fake_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                      const char *patch, size_t patch_len, const char *subresource, json_t **out,
                      kcr_error_t *err) {
  fake *f = c->data;
  json_t *p;
  (void)subresource;
  if (type != KCR_PATCH_MERGE || strcmp(kcr_meta_name(obj), "app-sample") != 0)
    return kcr_error_set(err, KCR_ENOTSUP, "fake: only a merge patch of app-sample");
  if (!(p = json_loadb(patch, patch_len, 0, NULL)))
    return kcr_error_set(err, KCR_EPARSE, "fake: bad patch");
  json_object_update_recursive(f->stored, p);
  json_decref(p);
  f->updates++;
  *out = json_deep_copy(f->stored);
  return 0;
}

static const kcr_objclient_ops fake_ops = {.get = fake_get,
                                           .list = fake_list,
                                           .create = fake_create,
                                           .update = fake_update,
                                           .patch = fake_patch};

static void test_kcr_gen_typed_update_keeps_unknown(void **state) {
  fake f = {sample_with_unknowns(), 0};
  json_t *want = sample_with_unknowns();
  kcr_objclient c = {&fake_ops, &f, NULL, NULL};
  kcr_scheme_t *s = NULL;
  kcr_gvk gvk = app_v1alpha1_gvk();
  app_v1alpha1_t *app = NULL, *updated = NULL;
  void *got = NULL, **items = NULL;
  size_t n = 0;
  kcr_error_t err;
  const kcr_kind_info *k;
  json_t *spec;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(kcr_scheme_create(&s, &err), 0);
  assert_int_equal(app_v1alpha1_register(s, &err), 0);
  k = kcr_scheme_lookup_gvk(s, &(kcr_gvk){"kcr.dev", "v1alpha1", "App"});
  assert_non_null(k);
  assert_string_equal(k->list_kind, "AppList");
  assert_string_equal(APP_V1ALPHA1_RESOURCE,
                      "apps"); /* the REST mapper's to use, not the scheme's */
  assert_int_equal(app_v1alpha1_register(s, &err), KCR_EEXIST);
  kcr_error_clear(&err);

  assert_int_equal(kcr_typed_get(&c, s, &gvk, "default", "app-sample", &got, &err), 0);
  app = got;
  assert_string_equal(app->spec->image, "nginx:1.27");
  app->spec->replicas = 5;
  app->spec->has_paused = true;
  app->spec->paused = true;
  assert_int_equal(kcr_typed_update(&c, s, &gvk, app, NULL, &got, &err), 0);
  updated = got;
  assert_int_equal(f.updates, 1);
  /* the server saw the change and every member the type does not know */
  spec = json_object_get(f.stored, "spec");
  assert_int_equal(json_integer_value(json_object_get(spec, "replicas")), 5);
  assert_true(json_is_true(json_object_get(spec, "paused")));
  assert_true(json_equal(json_object_get(spec, "futureField"),
                         json_object_get(json_object_get(want, "spec"), "futureField")));
  assert_true(json_equal(
      json_object_get(json_array_get(json_object_get(spec, "env"), 0), "valueFrom"),
      json_object_get(json_array_get(json_object_get(json_object_get(want, "spec"), "env"), 0),
                      "valueFrom")));
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(f.stored, "status"), "other")), "kept");
  assert_string_equal(json_string_value(json_object_get(f.stored, "extraTop")), "top");
  assert_string_equal(json_string_value(json_object_get(f.stored, "apiVersion")),
                      "kcr.dev/v1alpha1");
  assert_string_equal(updated->metadata->resource_version, "2");
  assert_int_equal(updated->spec->replicas, 5);
  app_v1alpha1_free(app);
  app_v1alpha1_free(updated);

  assert_int_equal(kcr_typed_list(&c, s, &gvk, NULL, &items, &n, &err), 0);
  assert_int_equal(n, 1);
  assert_int_equal(((app_v1alpha1_t *)items[0])->spec->replicas, 5);
  kcr_typed_list_free(s, &gvk, items, n);

  /* a typed patch names the object by the typed value and decodes the result */
  assert_int_equal(kcr_typed_get(&c, s, &gvk, "default", "app-sample", &got, &err), 0);
  app = got;
  assert_int_equal(kcr_typed_patch(&c, s, &gvk, app, KCR_PATCH_MERGE, "{\"spec\":{\"replicas\":7}}",
                                   strlen("{\"spec\":{\"replicas\":7}}"), NULL, &got, &err),
                   0);
  updated = got;
  assert_int_equal(f.updates, 2);
  assert_int_equal(updated->spec->replicas, 7);
  assert_non_null(json_object_get(updated->spec->kcr_unknown, "futureField"));
  app_v1alpha1_free(updated);
  assert_int_equal(kcr_typed_patch(&c, s, &gvk, app, KCR_PATCH_JSON, "[]", 2, NULL, &got, &err),
                   KCR_ENOTSUP);
  assert_null(got);
  app_v1alpha1_free(app);
  kcr_error_clear(&err);

  kcr_scheme_destroy(s);
  json_decref(f.stored);
  json_decref(want);
}

/* ---- every schema shape: data/kcr-gen/shapes.yaml ---- */

static const char *const shapes_full =
    "{\"apiVersion\": \"test.kcr.dev/v1\", \"kind\": \"Shape\", \"metadata\": {\"name\": \"s\"},"
    " \"spec\": {\"name\": \"n\", \"nick\": null, \"count\": 3, \"small\": -2147483648,"
    "  \"big\": 1099511627776, \"plain\": -9007199254740993, \"ratio\": 0.25, \"enabled\": false,"
    "  \"port\": \"http\", \"memory\": 1024, \"tags\": [], \"sizes\": [1, 2],"
    "  \"matrix\": [[1], [], [2, 3]],"
    "  \"items\": [{\"id\": 1, \"inner\": {\"deep\": \"d\", \"more\": 1}}, {\"id\": 2}],"
    "  \"labels\": {\"a\": \"1\", \"b\": \"\"}, \"limits\": {\"cpu\": 2, \"memory\": \"1Gi\"},"
    "  \"byName\": {\"x\": {\"weight\": 1.5}, \"y\": {}},"
    "  \"nested\": {\"level\": 1, \"child\": {\"leaf\": true}},"
    "  \"raw\": {\"any\": [\"thing\"]}, \"anything\": 5,"
    "  \"fooBar\": \"camel\", \"foo_bar\": \"snake\", \"switch\": \"kw\", \"kcrUnknown\": \"u\","
    "  \"later\": {\"x\": 1}},"
    " \"status\": {\"phase\": \"Ready\", \"since\": \"now\"}}";

static void test_kcr_gen_shapes_round_trip(void **state) {
  json_t *j = parse(shapes_full), *out = NULL;
  shapes_v1_t *v = NULL, *copy = NULL;
  shapes_v1_spec_t *s;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(shapes_v1_decode(j, &v, &err), 0);
  s = v->spec;
  assert_string_equal(s->name, "n");
  assert_null(s->nick);
  assert_true(s->nick_null);
  assert_int_equal(s->count, 3);
  assert_true(s->has_small);
  assert_int_equal(s->small, INT32_MIN);
  assert_int_equal(s->big, 1099511627776LL);
  assert_int_equal(s->plain, -9007199254740993LL);
  assert_true(s->has_ratio && s->ratio == 0.25);
  assert_true(s->has_enabled);
  assert_false(s->enabled);
  assert_true(s->port.is_string);
  assert_string_equal(s->port.str_value, "http");
  assert_true(s->memory.is_int);
  assert_string_equal(s->memory.text, "1024");
  assert_int_equal(s->tags_len, 0);
  assert_int_equal(s->sizes_len, 2);
  assert_int_equal(s->sizes[1], 2);
  assert_int_equal(s->matrix_len, 3);
  assert_int_equal(json_array_size(s->matrix[2]), 2);
  assert_true(s->has_items);
  assert_int_equal(s->items_len, 2);
  assert_int_equal(s->items[0].id, 1);
  assert_string_equal(s->items[0].inner->deep, "d");
  assert_non_null(json_object_get(s->items[0].inner->kcr_unknown, "more"));
  assert_null(s->items[1].inner);
  assert_int_equal(s->labels_len, 2);
  assert_string_equal(s->labels[1].value, "");
  assert_int_equal(s->limits_len, 2);
  assert_true(s->limits[0].value.is_int);
  assert_int_equal(s->by_name_len, 2);
  assert_true(s->by_name[0].value.has_weight);
  assert_false(s->by_name[1].value.has_weight);
  assert_false(s->nested_null);
  assert_int_equal(s->nested->child->leaf, true);
  assert_true(json_is_object(s->raw));
  assert_int_equal(json_integer_value(s->anything), 5);
  assert_string_equal(s->foo_bar, "camel");
  assert_string_equal(s->foo_bar2, "snake");
  assert_string_equal(s->switch2, "kw");
  assert_string_equal(s->kcr_unknown2, "u");
  assert_non_null(json_object_get(s->kcr_unknown, "later"));
  assert_string_equal(v->status->phase, "Ready");
  assert_int_equal(shapes_v1_encode(v, &out, &err), 0);
  assert_true(json_equal(j, out));
  assert_int_equal(shapes_v1_copy(v, &copy, &err), 0);
  assert_true(shapes_v1_equal(v, copy));
  copy->spec->memory.is_int = false; /* "1024" as a string is another value */
  assert_false(shapes_v1_equal(v, copy));
  shapes_v1_free(copy);
  json_decref(out);
  shapes_v1_free(v);
  KCR_TEST_ALLOC_LOOP(shapes_v1_decode(j, &v, NULL), (shapes_v1_free(v), v = NULL));
  json_decref(j);
}

static void test_kcr_gen_shapes_nulls_and_numbers(void **state) {
  /* nullable members keep their null; a null where null is not allowed is
   * kept as it came (built-in kinds' servers write them: a zero metav1.Time)
   * until a value is set; a whole number is written as one */
  json_t *j = parse("{\"spec\": {\"name\": \"n\", \"count\": 0, \"tags\": [\"t\"], \"items\": "
                    "null, \"nested\": null, \"small\": null, \"ratio\": 3, \"port\": 8080}}");
  json_t *want = parse("{\"spec\": {\"name\": \"n\", \"count\": 0, \"tags\": [\"t\"], \"items\": "
                       "null, \"nested\": null, \"small\": null, \"ratio\": 3, \"port\": 8080}}");
  json_t *out = NULL;
  shapes_v1_t *v = NULL;
  (void)state;
  assert_int_equal(shapes_v1_decode(j, &v, NULL), 0);
  assert_true(v->spec->items_null);
  assert_false(v->spec->has_items);
  assert_true(v->spec->nested_null);
  assert_null(v->spec->nested);
  assert_false(v->spec->has_small);
  assert_false(v->spec->port.is_string);
  assert_int_equal(v->spec->port.int_value, 8080);
  assert_int_equal(shapes_v1_encode(v, &out, NULL), 0);
  assert_true(json_equal(out, want));
  assert_true(json_is_integer(json_object_get(json_object_get(out, "spec"), "ratio")));
  json_decref(out);
  /* a value set later replaces the kept null */
  v->spec->small = 7;
  v->spec->has_small = true;
  assert_int_equal(shapes_v1_encode(v, &out, NULL), 0);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "spec"), "small")), 7);
  json_decref(out);
  v->spec->has_small = false;
  /* a required list and a required int32 are always written, even empty or 0 */
  v->spec->tags_len = 0;
  assert_int_equal(shapes_v1_encode(v, &out, NULL), 0);
  assert_int_equal(json_array_size(json_object_get(json_object_get(out, "spec"), "tags")), 0);
  assert_true(json_is_integer(json_object_get(json_object_get(out, "spec"), "count")));
  json_decref(out);
  v->spec->tags_len = 1;
  shapes_v1_free(v);
  json_decref(j);
  json_decref(want);
}

static void test_kcr_gen_shapes_errors(void **state) {
  static const bad_case cases[] = {
      {"{\"spec\": {\"count\": 1, \"tags\": []}}", KCR_EPARSE,
       "spec.name: required field is missing"},
      {"{\"spec\": {\"name\": \"n\", \"tags\": []}}", KCR_EPARSE,
       "spec.count: required field is missing"},
      {"{\"spec\": {\"name\": \"n\", \"count\": 1}}", KCR_EPARSE,
       "spec.tags: required field is missing"},
      {"{\"spec\": {\"name\": \"n\", \"count\": 1, \"tags\": [], \"small\": 2147483648}}",
       KCR_EPARSE, "spec.small: 2147483648 is out of range for int32"},
      {"{\"spec\": {\"name\": \"n\", \"count\": 1, \"tags\": [], \"ratio\": \"1\"}}", KCR_EPARSE,
       "spec.ratio: expected a number, got a string"},
      {"{\"spec\": {\"name\": \"n\", \"count\": 1, \"tags\": [], \"port\": 1.5}}", KCR_EPARSE,
       "spec.port: expected an integer or a string, got a number"},
      {"{\"spec\": {\"name\": \"n\", \"count\": 1, \"tags\": [1]}}", KCR_EPARSE,
       "spec.tags[0]: expected a string, got an integer"},
      {"{\"spec\": {\"name\": \"n\", \"count\": 1, \"tags\": [], \"items\": [{\"inner\": {}}]}}",
       KCR_EPARSE, "spec.items[0].id: required field is missing"},
      {"{\"spec\": {\"name\": \"n\", \"count\": 1, \"tags\": [], \"byName\": {\"k\": "
       "{\"weight\": true}}}}",
       KCR_EPARSE, "spec.byName[k].weight: expected a number, got a boolean"},
      {"{\"spec\": {\"name\": \"n\", \"count\": 1, \"tags\": [], \"nested\": {\"child\": "
       "{\"leaf\": 1}}}}",
       KCR_EPARSE, "spec.nested.child.leaf: expected a boolean, got an integer"},
      {"{\"spec\": {\"name\": \"n\", \"count\": 1, \"tags\": [], \"labels\": []}}", KCR_EPARSE,
       "spec.labels: expected an object, got an array"},
      {"{\"spec\": {\"name\": \"a\\u0000b\", \"count\": 1, \"tags\": []}}", KCR_EPARSE,
       "spec.name: the string holds a NUL character"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_error_t je;
    json_t *j = json_loads(cases[i].json, JSON_ALLOW_NUL, &je);
    shapes_v1_t *v = NULL;
    kcr_error_t err;
    assert_non_null(j);
    kcr_error_clear(&err);
    assert_int_equal(shapes_v1_decode(j, &v, &err), cases[i].code);
    assert_null(v);
    assert_string_equal(err.message, cases[i].message);
    json_decref(j);
  }
}

static void test_kcr_gen_shapes_versions(void **state) {
  /* v2 is a type of its own: what it lacks (spec.name...) is kept as unknown */
  json_t *j = parse(shapes_full), *out = NULL;
  shapes_v2_t *v = NULL;
  kcr_scheme_t *s = NULL;
  const kcr_kind_info *k;
  (void)state;
  assert_int_equal(shapes_v2_decode(j, &v, NULL), 0);
  assert_null(v->spec->added);
  assert_non_null(json_object_get(v->spec->kcr_unknown, "name"));
  assert_int_equal(shapes_v2_encode(v, &out, NULL), 0);
  assert_true(json_equal(j, out));
  json_decref(out);
  shapes_v2_free(v);
  /* both served versions register */
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  assert_int_equal(shapes_v1_register(s, NULL), 0);
  assert_int_equal(shapes_v2_register(s, NULL), 0);
  k = kcr_scheme_lookup_gvk(s, &(kcr_gvk){"test.kcr.dev", "v2", "Shape"});
  assert_non_null(k);
  assert_string_equal(k->list_kind, "ShapeList");
  /* through the scheme's codec: apiVersion and kind come from the scheme */
  {
    void *typed = NULL;
    assert_int_equal(kcr_scheme_decode(s, j, &typed, NULL), 0);
    assert_int_equal(kcr_scheme_encode(kcr_scheme_kind_of(s, j), typed, &out, NULL), 0);
    assert_true(json_equal(j, out));
    kcr_scheme_free_typed(kcr_scheme_kind_of(s, j), typed);
    json_decref(out);
  }
  kcr_scheme_destroy(s);
  json_decref(j);
}

/*
 * The long names, as cmake made them (cmd/kcr-gen/CMakeLists.txt): NAME_A is
 * 400 characters, NAME_B 2000, lower case, so each is its own C name too.
 */
#define KG_STR_(x) #x
#define KG_STR(x) KG_STR_(x)
#define KG_CAT_(a, b) a##b
#define KG_CAT(a, b) KG_CAT_(a, b)
#define NAME_A KCR_GEN_NAME_A
#define NAME_B KCR_GEN_NAME_B
#define KEY_A KG_STR(KCR_GEN_NAME_A)
#define KEY_B KG_STR(KCR_GEN_NAME_B)

static void test_kcr_gen_long_names_round_trip(void **state) {
  json_t *j, *out = NULL;
  longnames_v1_t *v = NULL, *copy = NULL;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(strlen(KEY_A), 400);
  assert_int_equal(strlen(KEY_B), 2000);
  j = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:i}, s:{s:{s:[{s:s, s:b}], s:{s:{s:f}}}}}",
                "apiVersion", "test.kcr.dev/v1", "kind", "LongName", "metadata", "name", "n",
                "spec", KEY_A, "a string", KEY_B, 7, "status", KEY_A, KEY_B, KEY_A, "in a list",
                KEY_B, 1, KEY_A, "k", KEY_B, 0.5);
  assert_non_null(j);
  assert_int_equal(longnames_v1_decode(j, &v, &err), 0);
  /* every field decoded into its member, none kept as unknown */
  assert_null(v->kcr_unknown);
  assert_null(v->spec->kcr_unknown);
  assert_string_equal(v->spec->NAME_A, "a string");
  assert_true(v->spec->KG_CAT(has_, NAME_B));
  assert_false(v->spec->KG_CAT(NAME_B, _null));
  assert_int_equal(v->spec->NAME_B, 7);
  assert_null(v->status->kcr_unknown);
  assert_null(v->status->NAME_A->kcr_unknown);
  assert_int_equal(v->status->NAME_A->KG_CAT(NAME_B, _len), 1);
  assert_null(v->status->NAME_A->NAME_B[0].kcr_unknown);
  assert_string_equal(v->status->NAME_A->NAME_B[0].NAME_A, "in a list");
  assert_true(v->status->NAME_A->NAME_B[0].KG_CAT(has_, NAME_B));
  assert_true(v->status->NAME_A->NAME_B[0].NAME_B);
  assert_int_equal(v->status->NAME_A->KG_CAT(NAME_A, _len), 1);
  assert_string_equal(v->status->NAME_A->NAME_A[0].key, "k");
  assert_null(v->status->NAME_A->NAME_A[0].value.kcr_unknown);
  assert_true(v->status->NAME_A->NAME_A[0].value.NAME_B == 0.5);
  /* and back, whole; copy and equality reach the long members too */
  assert_int_equal(longnames_v1_encode(v, &out, &err), 0);
  assert_true(json_equal(j, out));
  assert_int_equal(longnames_v1_copy(v, &copy, &err), 0);
  assert_true(longnames_v1_equal(v, copy));
  copy->status->NAME_A->NAME_A[0].value.NAME_B = 1.5;
  assert_false(longnames_v1_equal(v, copy));
  longnames_v1_free(copy);
  json_decref(out);
  /* null where the 2000-character field is nullable; the required field missing */
  longnames_v1_free(v);
  v = NULL;
  json_object_set_new(json_object_get(j, "spec"), KEY_B, json_null());
  assert_int_equal(longnames_v1_decode(j, &v, &err), 0);
  assert_true(v->spec->KG_CAT(NAME_B, _null));
  assert_int_equal(longnames_v1_encode(v, &out, &err), 0);
  assert_true(json_equal(j, out));
  json_decref(out);
  longnames_v1_free(v);
  v = NULL;
  json_object_del(json_object_get(j, "spec"), KEY_A);
  assert_int_equal(longnames_v1_decode(j, &v, &err), KCR_EPARSE);
  assert_null(v);
  assert_non_null(strstr(err.message, "required field is missing"));
  json_decref(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kcr_gen_decode_sample),
      cmocka_unit_test(test_kcr_gen_round_trip),
      cmocka_unit_test(test_kcr_gen_unknown_fields_survive),
      cmocka_unit_test(test_kcr_gen_decode_errors),
      cmocka_unit_test(test_kcr_gen_encode_required_unset),
      cmocka_unit_test(test_kcr_gen_copy_and_equal),
      cmocka_unit_test(test_kcr_gen_alloc_failure),
      cmocka_unit_test(test_kcr_gen_typed_update_keeps_unknown),
      cmocka_unit_test(test_kcr_gen_shapes_round_trip),
      cmocka_unit_test(test_kcr_gen_shapes_nulls_and_numbers),
      cmocka_unit_test(test_kcr_gen_shapes_errors),
      cmocka_unit_test(test_kcr_gen_shapes_versions),
      cmocka_unit_test(test_kcr_gen_long_names_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
