/* SPDX-License-Identifier: MIT */
/*
 * test_kcr_gen_split.c: `kcr-gen openapi --split` makes one package per
 * group-version, each type once. From test/unit/data/kcr-gen/split/two.json,
 * a/v1's Foo holds b/v1's Bar by pointer, as list elements (by value) and as
 * map values: the a_v1 package includes t/b_v1.h and goes through b_v1's
 * public functions, so a Foo decodes, copies, compares and encodes back whole,
 * Bar's unknown members included, and a bad field is named by its full path.
 */
#include <stdlib.h>
#include <string.h>

#include "t/a_v1.h"
#include "t/b_v1.h"
#include "testutil.h"

static const char foo_json[] =
    "{\"apiVersion\":\"a.example.com/v1\",\"kind\":\"Foo\","
    "\"spec\":{\"n\":3,\"inner\":{\"s\":\"x\"},\"extra\":true},"
    "\"items\":[{\"n\":1},{\"n\":2,\"inner\":{\"s\":\"y\",\"more\":[1]}}],"
    "\"byName\":{\"k\":{\"n\":4}},\"other\":{\"kept\":1}}";

static void test_kcr_gen_split_round_trip(void **state) {
  json_t *j = json_loads(foo_json, 0, NULL), *out = NULL;
  t_a_v1_foo_t *foo = NULL, *copy = NULL;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_non_null(j);
  assert_int_equal(t_a_v1_foo_decode(j, &foo, &err), 0);
  assert_non_null(foo->spec);
  assert_int_equal(foo->spec->n, 3);
  assert_string_equal(foo->spec->inner->s, "x");
  assert_int_equal(foo->items_len, 2);
  assert_int_equal(foo->items[1].n, 2);
  assert_string_equal(foo->items[1].inner->s, "y");
  assert_int_equal(foo->by_name_len, 1);
  assert_string_equal(foo->by_name[0].key, "k");
  assert_int_equal(foo->by_name[0].value.n, 4);
  assert_int_equal(t_a_v1_foo_copy(foo, &copy, NULL), 0);
  assert_true(t_a_v1_foo_equal(foo, copy));
  copy->items[0].n = 9; /* b_v1's equality, reached from a_v1 */
  assert_false(t_a_v1_foo_equal(foo, copy));
  assert_int_equal(t_a_v1_foo_encode(foo, &out, &err), 0);
  assert_true(json_equal(j, out));
  json_decref(out);
  t_a_v1_foo_free(copy);
  t_a_v1_foo_free(foo);
  json_decref(j);
}

static void test_kcr_gen_split_error_path(void **state) {
  json_t *j = json_loads("{\"items\":[{\"n\":1},{\"inner\":{\"s\":7}}]}", 0, NULL);
  t_a_v1_foo_t *foo = NULL;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(t_a_v1_foo_decode(j, &foo, &err), KCR_EPARSE);
  assert_null(foo);
  if (!strstr(err.message, "items[1].inner.s"))
    fail_msg("the error does not name items[1].inner.s: %s", err.message);
  json_decref(j);
}

static void test_kcr_gen_split_alloc_failure(void **state) {
  json_t *j = json_loads(foo_json, 0, NULL), *out = NULL;
  t_a_v1_foo_t *foo = NULL, *copy = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(t_a_v1_foo_decode(j, &foo, NULL), (t_a_v1_foo_free(foo), foo = NULL));
  assert_int_equal(t_a_v1_foo_decode(j, &foo, NULL), 0);
  KCR_TEST_ALLOC_LOOP(t_a_v1_foo_copy(foo, &copy, NULL), (t_a_v1_foo_free(copy), copy = NULL));
  KCR_TEST_ALLOC_LOOP(t_a_v1_foo_encode(foo, &out, NULL), (json_decref(out), out = NULL));
  t_a_v1_foo_free(foo);
  json_decref(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kcr_gen_split_round_trip),
      cmocka_unit_test(test_kcr_gen_split_error_path),
      cmocka_unit_test(test_kcr_gen_split_alloc_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
