/* SPDX-License-Identifier: MIT */
/* test_predicate.c: the built-in predicates, selectors and combinators, as a table. */
#include <string.h>

#include "controller/controller_internal.h"
#include "kcr/controller.h"
#include "testutil.h"

static json_t *obj(int gen, const char *rv, const char *labels, const char *ann) {
  char text[512];
  json_error_t e;
  json_t *j;
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"name\":\"x\",\"generation\":%d,\"resourceVersion\":\"%s\"%s%s%s%s}}",
           gen, rv, labels ? ",\"labels\":" : "", labels ? labels : "",
           ann ? ",\"annotations\":" : "", ann ? ann : "");
  j = json_loads(text, 0, &e);
  if (!j)
    fail_msg("fixture: %s", e.text);
  return j;
}

typedef struct row {
  const char *name;
  json_t *old_obj, *new_obj;
  int which; /* 0 gen, 1 rv, 2 labels, 3 annotations */
  bool want_update;
} row_t;

static kcr_predicate_t *builtin(int which) {
  switch (which) {
  case 0:
    return kcr_predicate_generation_changed();
  case 1:
    return kcr_predicate_resource_version_changed();
  case 2:
    return kcr_predicate_labels_changed();
  default:
    return kcr_predicate_annotations_changed();
  }
}

static void test_predicate_builtin_table(void **state) {
  row_t rows[] = {
      {"gen same", obj(1, "1", NULL, NULL), obj(1, "2", NULL, NULL), 0, false},
      {"gen bumped", obj(1, "1", NULL, NULL), obj(2, "2", NULL, NULL), 0, true},
      {"rv same (resync)", obj(1, "5", NULL, NULL), obj(1, "5", NULL, NULL), 1, false},
      {"rv changed", obj(1, "5", NULL, NULL), obj(1, "6", NULL, NULL), 1, true},
      {"labels same", obj(1, "1", "{\"a\":\"1\"}", NULL), obj(2, "2", "{\"a\":\"1\"}", NULL), 2,
       false},
      {"labels changed", obj(1, "1", "{\"a\":\"1\"}", NULL), obj(1, "2", "{\"a\":\"2\"}", NULL), 2,
       true},
      {"labels added", obj(1, "1", NULL, NULL), obj(1, "2", "{\"a\":\"2\"}", NULL), 2, true},
      {"annotations same", obj(1, "1", NULL, "{\"n\":\"1\"}"), obj(1, "2", NULL, "{\"n\":\"1\"}"),
       3, false},
      {"annotations changed", obj(1, "1", NULL, "{\"n\":\"1\"}"), obj(1, "2", NULL, NULL), 3, true},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    kcr_predicate_t *p = builtin(rows[i].which);
    if (kcr_predicate_eval(p, KCR_EVENT_UPDATE, rows[i].old_obj, rows[i].new_obj) !=
        rows[i].want_update)
      fail_msg("row %s: update", rows[i].name);
    /* create, delete and generic always pass */
    assert_true(kcr_predicate_eval(p, KCR_EVENT_CREATE, NULL, rows[i].new_obj));
    assert_true(kcr_predicate_eval(p, KCR_EVENT_DELETE, NULL, rows[i].new_obj));
    assert_true(kcr_predicate_eval(p, KCR_EVENT_GENERIC, NULL, rows[i].new_obj));
    /* an update without an old object is refused, as upstream */
    assert_false(kcr_predicate_eval(p, KCR_EVENT_UPDATE, NULL, rows[i].new_obj));
    kcr_predicate_destroy(p);
    json_decref(rows[i].old_obj);
    json_decref(rows[i].new_obj);
  }
}

static bool only_named_x(const json_t *o, void *data) {
  (void)data;
  return strcmp(json_string_value(json_object_get(json_object_get(o, "metadata"), "name")), "x") ==
         0;
}

static int destroyed;
static void on_destroy(void *data) {
  (void)data;
  destroyed++;
}

static void test_predicate_combinators(void **state) {
  json_t *a = obj(1, "1", "{\"app\":\"web\"}", NULL), *b = obj(2, "2", "{\"app\":\"db\"}", NULL);
  kcr_predicate_t *sel = NULL, *p;
  kcr_predicate_funcs f = {only_named_x, NULL, NULL, NULL, on_destroy};
  (void)state;
  assert_int_equal(kcr_predicate_label_selector("app=web", &sel, NULL), 0);
  assert_true(kcr_predicate_eval(sel, KCR_EVENT_CREATE, NULL, a));
  assert_false(kcr_predicate_eval(sel, KCR_EVENT_CREATE, NULL, b));
  /* updates look at the new object */
  assert_false(kcr_predicate_eval(sel, KCR_EVENT_UPDATE, a, b));
  assert_true(kcr_predicate_eval(sel, KCR_EVENT_UPDATE, b, a));
  /* and(selector, generation): an update from b (gen 2) to a (gen 1) passes both */
  p = kcr_predicate_and(sel, kcr_predicate_generation_changed());
  assert_true(kcr_predicate_eval(p, KCR_EVENT_UPDATE, b, a));
  assert_false(kcr_predicate_eval(p, KCR_EVENT_UPDATE, a, a));
  p = kcr_predicate_not(p);
  assert_true(kcr_predicate_eval(p, KCR_EVENT_UPDATE, a, a));
  p = kcr_predicate_or(p, kcr_predicate_custom(&f, NULL));
  assert_true(kcr_predicate_eval(p, KCR_EVENT_CREATE, NULL, b)); /* custom: name x */
  assert_true(
      kcr_predicate_eval(p, KCR_EVENT_UPDATE, b, a)); /* not(and) false, NULL update passes */
  assert_true(kcr_predicate_eval(NULL, KCR_EVENT_DELETE, NULL, a));
  kcr_predicate_destroy(p);
  assert_int_equal(destroyed, 1);
  assert_int_equal(kcr_predicate_label_selector("app in (", &sel, NULL), KCR_EPARSE);
  assert_null(sel);
  json_decref(a);
  json_decref(b);
}

static void test_predicate_out_of_memory(void **state) {
  kcr_predicate_t *p = NULL;
  (void)state;
  kcr_test_alloc_install();
  kcr_test_alloc_fail_at(1);
  p = kcr_predicate_and(kcr_predicate_labels_changed(), kcr_predicate_annotations_changed());
  p = kcr_predicate_not(p);
  kcr_test_alloc_fail_at(0);
  kcr_test_alloc_uninstall();
  assert_true(kcr__predicate_failed(p));
  assert_false(kcr_predicate_eval(p, KCR_EVENT_CREATE, NULL, NULL));
  kcr_predicate_destroy(p); /* a no-op on the singleton */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_predicate_builtin_table),
      cmocka_unit_test(test_predicate_combinators),
      cmocka_unit_test(test_predicate_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
