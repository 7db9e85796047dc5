/* SPDX-License-Identifier: MIT */
/* test_meta.c: metadata accessors, keys, the managedFields transform, label selectors. */
#include <string.h>

#include "kcr/buf.h"
#include "kcr/meta.h"
#include "testutil.h"

static json_t *load(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  assert_non_null(j);
  return j;
}

static void test_meta_accessors(void **state) {
  json_t *o = load("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
                   "\"namespace\":\"ns\",\"name\":\"p\",\"uid\":\"u-1\",\"resourceVersion\":\"42\","
                   "\"generation\":7,\"deletionTimestamp\":\"2024-01-01T00:00:00Z\","
                   "\"labels\":{\"app\":\"web\"},\"annotations\":{\"a\":\"b\"},"
                   "\"finalizers\":[\"x\"],"
                   "\"ownerReferences\":[{\"name\":\"o1\"},{\"name\":\"o2\",\"controller\":true}]},"
                   "\"spec\":{\"nodeName\":\"n1\",\"n\":{\"x.y\":1}}}");
  json_t *empty = load("{}");
  (void)state;
  assert_string_equal(kcr_meta_namespace(o), "ns");
  assert_string_equal(kcr_meta_name(o), "p");
  assert_string_equal(kcr_meta_uid(o), "u-1");
  assert_string_equal(kcr_meta_resource_version(o), "42");
  assert_string_equal(kcr_meta_api_version(o), "v1");
  assert_string_equal(kcr_meta_kind(o), "Pod");
  assert_int_equal(kcr_meta_generation(o), 7);
  assert_true(kcr_meta_is_deleting(o));
  assert_string_equal(kcr_meta_label(o, "app"), "web");
  assert_null(kcr_meta_label(o, "nope"));
  assert_string_equal(kcr_meta_annotation(o, "a"), "b");
  assert_int_equal(json_object_size(kcr_meta_labels(o)), 1);
  assert_int_equal(json_array_size(kcr_meta_owner_references(o)), 2);
  assert_int_equal(json_array_size(kcr_meta_finalizers(o)), 1);
  assert_string_equal(json_string_value(json_object_get(kcr_meta_controller_ref(o), "name")), "o2");
  assert_string_equal(kcr_meta_path_string(o, "spec.nodeName"), "n1");
  assert_string_equal(kcr_meta_path_string(o, "metadata.labels.app"), "web");
  assert_null(kcr_meta_path_string(o, "spec.n"));
  assert_null(kcr_meta_path(o, "spec.nodeName.x"));
  assert_null(kcr_meta_path(o, "spec.missing.x"));
  assert_non_null(kcr_meta_path(o, "spec.n"));

  /* Absent fields read as Go's zero values, never NULL strings. */
  assert_string_equal(kcr_meta_namespace(empty), "");
  assert_string_equal(kcr_meta_name(empty), "");
  assert_string_equal(kcr_meta_namespace(NULL), "");
  assert_int_equal(kcr_meta_generation(empty), 0);
  assert_false(kcr_meta_is_deleting(empty));
  assert_null(kcr_meta_labels(empty));
  assert_null(kcr_meta_controller_ref(empty));
  assert_null(kcr_meta_metadata(empty));
  json_decref(o);
  json_decref(empty);
}

static void test_meta_key(void **state) {
  json_t *ns = load("{\"metadata\":{\"namespace\":\"default\",\"name\":\"web\"}}");
  json_t *cl = load("{\"metadata\":{\"name\":\"node-1\"}}");
  json_t *bad = load("{\"metadata\":{\"namespace\":\"x\"}}");
  char buf[KCR_META_KEY_MAX], small[5];
  size_t ns_len;
  const char *name;
  (void)state;

  assert_int_equal(kcr_meta_key(ns, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "default/web");
  assert_int_equal(kcr_meta_key_fn(cl, buf, sizeof(buf), NULL), 0);
  assert_string_equal(buf, "node-1");
  assert_int_equal(kcr_meta_key(bad, buf, sizeof(buf)), KCR_EINVAL);
  assert_int_equal(kcr_meta_key(NULL, buf, sizeof(buf)), KCR_EINVAL);
  assert_int_equal(kcr_meta_key(ns, small, sizeof(small)), KCR_ETOOBIG);
  assert_string_equal(small, "");

  assert_int_equal(kcr_meta_split_key("default/web", &ns_len, &name), 0);
  assert_int_equal(ns_len, 7);
  assert_string_equal(name, "web");
  assert_int_equal(kcr_meta_split_key("node-1", &ns_len, &name), 0);
  assert_int_equal(ns_len, 0);
  assert_string_equal(name, "node-1");
  assert_int_equal(kcr_meta_split_key("a/b/c", &ns_len, &name), KCR_EINVAL);
  assert_int_equal(kcr_meta_split_key("a/", &ns_len, &name), KCR_EINVAL);
  assert_int_equal(kcr_meta_split_key("", &ns_len, &name), KCR_EINVAL);
  json_decref(ns);
  json_decref(cl);
  json_decref(bad);
}

static void test_meta_strip_managed_fields(void **state) {
  json_t *o = load("{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"kubectl\"}]}}");
  json_t *none = load("{\"kind\":\"X\"}");
  (void)state;
  assert_int_equal(kcr_meta_strip_managed_fields(o), 0);
  assert_null(json_object_get(kcr_meta_metadata(o), "managedFields"));
  assert_string_equal(kcr_meta_name(o), "a");
  assert_int_equal(kcr_meta_strip_managed_fields(none), 0);
  assert_int_equal(kcr_meta_strip_managed_fields(NULL), 0);
  json_decref(o);
  json_decref(none);
}

/* A row of the selector table: text, canonical form (NULL: parse error), and
 * match results against three label sets. */
typedef struct sel_case {
  const char *text;
  const char *canon;
  int m1, m2, m3;
} sel_case_t;

static void test_meta_selector_table(void **state) {
  /* m1: {app: web, tier: fe, n: "5"}; m2: {app: db}; m3: {} */
  static const sel_case_t cases[] = {
      {"", "", 1, 1, 1},
      {"app=web", "app=web", 1, 0, 0},
      {"app==web", "app==web", 1, 0, 0},
      {"app!=web", "app!=web", 0, 1, 1},
      {"app in (web,db)", "app in (db,web)", 1, 1, 0},
      {"app in (web, web ,db)", "app in (db,web)", 1, 1, 0},
      {"app notin (web)", "app notin (web)", 0, 1, 1},
      {"app", "app", 1, 1, 0},
      {"!app", "!app", 0, 0, 1},
      {"tier,app=web", "app=web,tier", 1, 0, 0},
      {" app = web , tier ", "app=web,tier", 1, 0, 0},
      {"n>4", "n>4", 1, 0, 0},
      {"n<5", "n<5", 0, 0, 0},
      {"n<6,!x", "n<6,!x", 1, 0, 0},
      {"app=", "app=", 0, 0, 0},
      {"app in ()", "app in ()", 0, 0, 0},
      {"app in (,web)", "app in (,web)", 1, 0, 0},
      {"app in (web,)", "app in (,web)", 1, 0, 0},
      {"in=notin", "in=notin", 0, 0, 0},
      {"example.com/app=web", "example.com/app=web", 0, 0, 0},
      {"app in (in,notin)", "app in (in,notin)", 0, 0, 0},
      /* errors */
      {"app=web,", NULL, 0, 0, 0},
      {",app", NULL, 0, 0, 0},
      {"app=(web)", NULL, 0, 0, 0},
      {"app in web", NULL, 0, 0, 0},
      {"app in (web", NULL, 0, 0, 0},
      {"app in (web))", NULL, 0, 0, 0},
      {"app web", NULL, 0, 0, 0},
      {"!app=web", NULL, 0, 0, 0},
      {"app>x", NULL, 0, 0, 0},
      {"app>-1", NULL, 0, 0, 0},
      {"-app=x", NULL, 0, 0, 0},
      {"app=-x", NULL, 0, 0, 0},
      {"Example.com/app=x", NULL, 0, 0, 0},
      {"a/b/c", NULL, 0, 0, 0},
      {"/app", NULL, 0, 0, 0},
      {"app=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL, 0, 0,
       0},
      {"app notin", NULL, 0, 0, 0},
      {"app in (x,,)", NULL, 0, 0, 0},
      {"app in (,,x)", "app in (,x)", 0, 0, 0},
      {"=web", NULL, 0, 0, 0},
      {"app==", "app==", 0, 0, 0},
  };
  json_t *l1 = load("{\"app\":\"web\",\"tier\":\"fe\",\"n\":\"5\"}");
  json_t *l2 = load("{\"app\":\"db\"}");
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const sel_case_t *c = &cases[i];
    kcr_selector_t *sel = NULL;
    kcr_error_t err = {0};
    int rc = kcr_selector_parse(c->text, &sel, &err);
    if (!c->canon) {
      if (rc != KCR_EPARSE)
        fail_msg("case %zu '%s': expected a parse error, got %d", i, c->text, rc);
      assert_null(sel);
      assert_non_null(strstr(err.message, "selector: at "));
      continue;
    }
    if (rc != 0)
      fail_msg("case %zu '%s': %s", i, c->text, err.message);
    kcr_buf_t b;
    kcr_buf_init(&b, 1024);
    assert_int_equal(kcr_selector_string(sel, &b), 0);
    if (strcmp(kcr_buf_cstr(&b), c->canon) != 0)
      fail_msg("case %zu '%s': canonical '%s', want '%s'", i, c->text, kcr_buf_cstr(&b), c->canon);
    kcr_buf_free(&b);
    if (kcr_selector_matches(sel, l1) != (bool)c->m1 ||
        kcr_selector_matches(sel, l2) != (bool)c->m2 ||
        kcr_selector_matches(sel, NULL) != (bool)c->m3)
      fail_msg("case %zu '%s': matches %d %d %d, want %d %d %d", i, c->text,
               kcr_selector_matches(sel, l1), kcr_selector_matches(sel, l2),
               kcr_selector_matches(sel, NULL), c->m1, c->m2, c->m3);
    assert_int_equal(kcr_selector_empty(sel), c->text[0] == '\0');
    kcr_selector_destroy(sel);
  }
  json_decref(l1);
  json_decref(l2);
  kcr_selector_destroy(NULL);
}

static void test_meta_selector_error_position(void **state) {
  kcr_selector_t *sel = NULL;
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_selector_parse("a=b, c in (x,", &sel, &err), KCR_EPARSE);
  assert_string_equal(err.message, "selector: at 13: found '', expected: ',', or identifier");
  kcr_error_clear(&err);
  assert_int_equal(kcr_selector_parse("a=b,c d", &sel, &err), KCR_EPARSE);
  assert_string_equal(err.message,
                      "selector: at 6: found 'd', expected: !=, <, =, ==, >, in, notin");
  kcr_error_clear(&err);
  assert_int_equal(kcr_selector_parse("app=x!", &sel, &err), KCR_EPARSE);
  assert_string_equal(err.message, "selector: at 5: found '!', expected: ',' or 'end of string'");
}

static void test_meta_selector_matches_obj(void **state) {
  json_t *o = load("{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web\",\"bad\":1}}}");
  kcr_selector_t *sel = NULL;
  (void)state;
  assert_int_equal(kcr_selector_parse("app=web,!bad", &sel, NULL), 0);
  /* A non-string label value counts as absent. */
  assert_true(kcr_selector_matches_obj(sel, o));
  kcr_selector_destroy(sel);
  json_decref(o);
}

static int parse_and_free(const char *text) {
  kcr_selector_t *sel = NULL;
  int rc = kcr_selector_parse(text, &sel, NULL);
  kcr_selector_destroy(sel);
  return rc;
}

static void test_meta_selector_alloc_failure(void **state) {
  (void)state;
  KCR_TEST_ALLOC_LOOP(parse_and_free("a=b,c in (x,,y,z),!d,e notin (p),f,g>3,h!=i,j==k"), (void)0);
}

static void test_meta_selector_too_long(void **state) {
  char *big = malloc(KCR_SELECTOR_MAX + 2);
  kcr_selector_t *sel = NULL;
  (void)state;
  memset(big, 'a', KCR_SELECTOR_MAX + 1);
  big[KCR_SELECTOR_MAX + 1] = '\0';
  assert_int_equal(kcr_selector_parse(big, &sel, NULL), KCR_ETOOBIG);
  free(big);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_meta_accessors),
      cmocka_unit_test(test_meta_key),
      cmocka_unit_test(test_meta_strip_managed_fields),
      cmocka_unit_test(test_meta_selector_table),
      cmocka_unit_test(test_meta_selector_error_position),
      cmocka_unit_test(test_meta_selector_matches_obj),
      cmocka_unit_test(test_meta_selector_alloc_failure),
      cmocka_unit_test(test_meta_selector_too_long),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
