/* SPDX-License-Identifier: MIT */
/* test_scheme.c: the kind registry: registration rules, lookups, built-ins, typed
 * codecs, and typed objects through an object client (kcr_typed_*), where a codec
 * that keeps what it does not know leaves newer fields alone on an update. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/meta.h"
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

static const kcr_kind_info app_kind = {.group = "kcr.dev",
                                       .version = "v1alpha1",
                                       .kind = "App",
                                       .decode = decode_app,
                                       .encode = encode_app,
                                       .free_typed = free_app};

static void test_scheme_register_and_lookup(void **state) {
  kcr_scheme_t *s;
  const kcr_kind_info *k;
  kcr_gvk g;
  kcr_error_t err;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  assert_int_equal(kcr_scheme_register(s, &app_kind, NULL), 0);
  k = kcr_scheme_lookup_gvk(s, &(kcr_gvk){"kcr.dev", "v1alpha1", "App"});
  assert_non_null(k);
  assert_string_equal(k->list_kind, "AppList");
  assert_ptr_equal(kcr_scheme_lookup_gvk(s, &(kcr_gvk){"kcr.dev", NULL, "App"}), k);
  assert_null(kcr_scheme_lookup_gvk(s, &(kcr_gvk){"kcr.dev", "v1", "App"}));
  assert_null(kcr_scheme_lookup_gvk(s, &(kcr_gvk){"", "v1alpha1", "App"}));
  assert_null(kcr_scheme_lookup_gvk(s, NULL));
  assert_null(kcr_scheme_lookup_gvk(s, &(kcr_gvk){"kcr.dev", "v1alpha1", NULL}));
  g = kcr_kind_info_gvk(k);
  assert_ptr_equal(g.kind, k->kind); /* borrowed from the entry */
  assert_ptr_equal(kcr_scheme_lookup_gvk(s, &g), k);
  kcr_error_clear(&err);
  assert_int_equal(kcr_scheme_register(s, &app_kind, &err), KCR_EEXIST);
  assert_non_null(strstr(err.message, "kcr.dev/v1alpha1, Kind=App"));
  kcr_scheme_destroy(s);
  kcr_scheme_destroy(NULL);
}

/* The deprecated loose-string lookup: the same entries as kcr_scheme_lookup_gvk. */
static void test_scheme_deprecated_lookup(void **state) {
  kcr_scheme_t *s;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  assert_int_equal(kcr_scheme_register(s, &app_kind, NULL), 0);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  assert_ptr_equal(kcr_scheme_lookup(s, "kcr.dev", NULL, "App"),
                   kcr_scheme_lookup_gvk(s, &(kcr_gvk){"kcr.dev", "v1alpha1", "App"}));
  assert_null(kcr_scheme_lookup(s, NULL, "v1alpha1", "App"));
#pragma GCC diagnostic pop
  kcr_scheme_destroy(s);
}

/*
 * The deprecated resource and namespaced: kept as registered and read back by
 * the deprecated kcr_scheme_lookup_resource and kcr_kind_info_gvr; the library
 * itself asks the REST mapper.
 */
static void test_scheme_deprecated_resource(void **state) {
  kcr_scheme_t *s;
  const kcr_kind_info *k;
  kcr_kind_info with = app_kind, other = app_kind;
  kcr_gvr r = {"kcr.dev", "v1alpha1", "apps"};
  kcr_error_t err;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  with.resource = "apps";
  with.namespaced = true;
  assert_int_equal(kcr_scheme_register(s, &with, NULL), 0);
  assert_non_null(k = kcr_scheme_lookup_resource(s, &r));
  assert_true(k->namespaced);
  r = kcr_kind_info_gvr(k);
  assert_string_equal(r.resource, "apps");
  /* a second kind may not claim the same resource */
  other.kind = "Other";
  other.resource = "apps";
  kcr_error_clear(&err);
  assert_int_equal(kcr_scheme_register(s, &other, &err), KCR_EEXIST);
  assert_non_null(strstr(err.message, "(resource apps)"));
  /* without one, a kind has none, and no lookup by resource finds it */
  other.resource = NULL;
  assert_int_equal(kcr_scheme_register(s, &other, NULL), 0);
  k = kcr_scheme_lookup_gvk(s, &(kcr_gvk){"kcr.dev", "v1alpha1", "Other"});
  assert_null(k->resource);
  assert_null(kcr_scheme_lookup_resource(s, &(kcr_gvr){"kcr.dev", "v1alpha1", ""}));
#pragma GCC diagnostic pop
  kcr_scheme_destroy(s);
}

static void test_scheme_rejects_incomplete_kinds(void **state) {
  kcr_scheme_t *s;
  kcr_kind_info k = app_kind;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  k.kind = NULL;
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
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  assert_int_equal(kcr_scheme_add_builtins(s, NULL), 0);
  k = kcr_scheme_kind_of(s, cm);
  assert_non_null(k);
  assert_string_equal(k->kind, "ConfigMap");
  k = kcr_scheme_kind_of(s, dep);
  assert_string_equal(k->group, "apps");
  assert_string_equal(k->list_kind, "DeploymentList");
  assert_null(kcr_scheme_kind_of(s, odd));
  /* Two kinds may share a name across groups (core Event and events.k8s.io Event). */
  assert_string_not_equal(
      kcr_scheme_lookup_gvk(s, &(kcr_gvk){"", "v1", "Event"})->group,
      kcr_scheme_lookup_gvk(s, &(kcr_gvk){"events.k8s.io", "v1", "Event"})->group);
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
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
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

/* ---- typed objects through an object client ---- */

/* note_t: a typed object that knows two fields and keeps the rest as it came. */
typedef struct note {
  char name[64];
  char text[64];
  json_t *rest; /* the whole object as read: unknown fields survive an update */
} note_t;

static int decode_note(const json_t *obj, void **out, kcr_error_t *err, void *data) {
  const char *name = kcr_meta_name(obj);
  const char *text = json_string_value(json_object_get(json_object_get(obj, "data"), "text"));
  note_t *n;
  (void)data;
  if (!*name)
    return kcr_error_set(err, KCR_EPARSE, "Note: metadata.name is required");
  if (!(n = calloc(1, sizeof(*n))) || !(n->rest = json_deep_copy(obj))) {
    free(n);
    return KCR_ENOMEM;
  }
  snprintf(n->name, sizeof(n->name), "%s", name);
  snprintf(n->text, sizeof(n->text), "%s", text ? text : "");
  *out = n;
  return 0;
}

static int encode_note(const void *typed, json_t **out, kcr_error_t *err, void *data) {
  const note_t *n = typed;
  json_t *o = n->rest ? json_deep_copy(n->rest) : json_pack("{s:{}, s:{}}", "metadata", "data");
  (void)err;
  (void)data;
  if (!o)
    return KCR_ENOMEM;
  json_object_set_new(json_object_get(o, "metadata"), "name", json_string(n->name));
  json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string("ns"));
  if (!json_object_get(o, "data"))
    json_object_set_new(o, "data", json_object());
  json_object_set_new(json_object_get(o, "data"), "text", json_string(n->text));
  *out = o;
  return 0;
}

static void free_note(void *typed, void *data) {
  note_t *n = typed;
  (void)data;
  json_decref(n->rest);
  free(n);
}

/* One stored ConfigMap; list returns it twice. */
typedef struct store1 {
  json_t *obj;
  int writes;
} store1_t;

static int s_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                 json_t **out, kcr_error_t *err) {
  store1_t *st = c->data;
  (void)gvk;
  (void)ns;
  (void)name;
  (void)err;
  *out = json_deep_copy(st->obj);
  return 0;
}

static int s_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                  json_t **out, kcr_error_t *err) {
  store1_t *st = c->data;
  (void)gvk;
  (void)o;
  (void)err;
  *out = json_pack("{s:s, s:s, s:{}, s:[O, O]}", "apiVersion", "v1", "kind", "ConfigMapList",
                   "metadata", "items", st->obj, st->obj);
  return 0;
}

static int s_write(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  store1_t *st = c->data;
  (void)err;
  json_decref(st->obj);
  st->obj = json_deep_copy(obj);
  st->writes++;
  *out = json_deep_copy(obj);
  return 0;
}

static int s_update(const kcr_objclient *c, const json_t *obj, const char *sub, json_t **out,
                    kcr_error_t *err) {
  (void)sub;
  return s_write(c, obj, out, err);
}

static int s_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                   const char *patch, size_t len, const char *sub, json_t **out, kcr_error_t *err) {
  (void)c;
  (void)obj;
  (void)type;
  (void)patch;
  (void)len;
  (void)sub;
  *out = NULL;
  return kcr_error_set(err, KCR_ENOTSUP, "not in this test");
}

static const kcr_objclient_ops store1_ops = {
    .get = s_get, .list = s_list, .create = s_write, .update = s_update, .patch = s_patch};

static void test_scheme_typed_objects_through_a_client(void **state) {
  static const kcr_gvk cm = {"", "v1", "ConfigMap"}, secret = {"", "v1", "Secret"},
                       ghost = {"x.dev", "v1", "Ghost"};
  kcr_kind_info k = {"",   "v1",        "ConfigMap", "configmaps", NULL,
                     true, decode_note, encode_note, free_note,    NULL};
  store1_t st = {NULL, 0};
  kcr_objclient c = {&store1_ops, &st, NULL, NULL};
  kcr_scheme_t *s;
  kcr_error_t err;
  note_t *n = NULL, *back = NULL, fresh = {"new", "hello", NULL};
  void **items = NULL;
  size_t count = 0;
  (void)state;

  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  assert_int_equal(kcr_scheme_register(s, &k, NULL), 0);
  assert_int_equal(kcr_scheme_register(s,
                                       &(kcr_kind_info){"", "v1", "Secret", "secrets", NULL, true,
                                                        NULL, NULL, NULL, NULL},
                                       NULL),
                   0);
  /* An object from a newer server, with a field the type does not know. */
  st.obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s}, s:{s:b}}", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", "n1", "namespace", "ns", "resourceVersion",
                     "7", "data", "text", "old", "futureField", "kept", true);
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_get(&c, s, &cm, "ns", "n1", (void **)&n, &err), 0);
  assert_string_equal(n->name, "n1");
  assert_string_equal(n->text, "old");
  snprintf(n->text, sizeof(n->text), "new text");
  assert_int_equal(kcr_typed_update(&c, s, &cm, n, NULL, (void **)&back, &err), 0);
  assert_string_equal(back->text, "new text");
  /* What went to the server still carries the field the type does not know. */
  assert_true(json_is_true(json_object_get(json_object_get(st.obj, "futureField"), "kept")));
  assert_string_equal(kcr_meta_resource_version(st.obj), "7");
  assert_string_equal(kcr_meta_api_version(st.obj), "v1"); /* set by the scheme */
  kcr_scheme_free_typed(kcr_scheme_lookup_gvk(s, &(kcr_gvk){"", "v1", "ConfigMap"}), back);
  kcr_scheme_free_typed(kcr_scheme_lookup_gvk(s, &(kcr_gvk){"", "v1", "ConfigMap"}), n);

  assert_int_equal(kcr_typed_list(&c, s, &cm, NULL, &items, &count, &err), 0);
  assert_int_equal(count, 2);
  assert_string_equal(((note_t *)items[1])->text, "new text");
  kcr_typed_list_free(s, &cm, items, count);

  assert_int_equal(kcr_typed_create(&c, s, &cm, &fresh, (void **)&back, &err), 0);
  assert_string_equal(back->name, "new");
  assert_string_equal(kcr_meta_kind(st.obj), "ConfigMap");
  assert_int_equal(st.writes, 2);
  kcr_scheme_free_typed(kcr_scheme_lookup_gvk(s, &(kcr_gvk){"", "v1", "ConfigMap"}), back);
  /* A write whose answer the caller does not want: out NULL, still sent. */
  snprintf(fresh.text, sizeof(fresh.text), "no answer");
  assert_int_equal(kcr_typed_update(&c, s, &cm, &fresh, NULL, NULL, &err), 0);
  assert_int_equal(st.writes, 3);
  assert_string_equal(json_string_value(json_object_get(json_object_get(st.obj, "data"), "text")),
                      "no answer");

  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_get(&c, s, &ghost, "ns", "x", (void **)&n, &err), KCR_ENOENT);
  assert_null(n);
  assert_non_null(strstr(err.message, "Ghost is not registered"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_get(&c, s, &secret, "ns", "x", (void **)&n, &err), KCR_ENOTSUP);
  assert_non_null(strstr(err.message, "no typed codec"));
  json_decref(st.obj);
  kcr_scheme_destroy(s);
}

static kcr_scheme_t *made;

static int build(void) {
  int rc = kcr_scheme_create(&made, NULL);
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
      cmocka_unit_test(test_scheme_deprecated_lookup),
      cmocka_unit_test(test_scheme_deprecated_resource),
      cmocka_unit_test(test_scheme_rejects_incomplete_kinds),
      cmocka_unit_test(test_scheme_builtins_and_kind_of),
      cmocka_unit_test(test_scheme_typed_codec_round_trip),
      cmocka_unit_test(test_scheme_typed_objects_through_a_client),
      cmocka_unit_test(test_scheme_allocation_failure),
  };
  return cmocka_run_group_tests_name("scheme", tests, NULL, NULL);
}
