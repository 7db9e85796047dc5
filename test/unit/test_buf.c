/* SPDX-License-Identifier: MIT */
/* test_buf.c: the bounded buffer: growth, limits, take, consume, allocation failure. */
#include <string.h>

#include "kcr/buf.h"
#include "kcr/error.h"
#include "testutil.h"

static void test_buf_append_and_cstr(void **state) {
  kcr_buf_t b;
  (void)state;
  kcr_buf_init(&b, 1024);
  assert_string_equal(kcr_buf_cstr(&b), "");
  assert_int_equal(kcr_buf_appends(&b, "hello"), 0);
  assert_int_equal(kcr_buf_appendc(&b, ' '), 0);
  assert_int_equal(kcr_buf_appendf(&b, "%s-%d", "world", 42), 0);
  assert_string_equal(kcr_buf_cstr(&b), "hello world-42");
  assert_int_equal(kcr_buf_len(&b), 14);
  kcr_buf_reset(&b);
  assert_string_equal(kcr_buf_cstr(&b), "");
  assert_int_equal(kcr_buf_len(&b), 0);
  kcr_buf_free(&b);
  kcr_buf_free(NULL);
}

static void test_buf_grows_past_initial_capacity(void **state) {
  kcr_buf_t b;
  char chunk[100];
  (void)state;
  memset(chunk, 'x', sizeof(chunk));
  kcr_buf_init(&b, 1 << 20);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(kcr_buf_append(&b, chunk, sizeof(chunk)), 0);
  assert_int_equal(kcr_buf_len(&b), 100000);
  assert_true(b.cap <= b.max + 1);
  assert_int_equal(kcr_buf_cstr(&b)[100000], '\0');
  kcr_buf_free(&b);
}

static void test_buf_limit_is_exact(void **state) {
  kcr_buf_t b;
  (void)state;
  kcr_buf_init(&b, 10);
  assert_int_equal(kcr_buf_appends(&b, "0123456789"), 0);
  assert_true(b.cap <= 11);
  assert_int_equal(kcr_buf_appendc(&b, 'x'), KCR_ETOOBIG);
  /* A failed append frees the buffer: the partial value is dropped. */
  assert_int_equal(kcr_buf_len(&b), 0);
  assert_null(b.data);
  assert_int_equal(kcr_buf_appendf(&b, "%s", "01234567890"), KCR_ETOOBIG);
  assert_int_equal(kcr_buf_appends(&b, "ok"), 0);
  assert_string_equal(kcr_buf_cstr(&b), "ok");
  kcr_buf_free(&b);
}

static void test_buf_huge_append_does_not_overflow(void **state) {
  kcr_buf_t b;
  (void)state;
  kcr_buf_init(&b, SIZE_MAX - 1);
  assert_int_equal(kcr_buf_appends(&b, "a"), 0);
  assert_int_equal(kcr_buf_append(&b, "", SIZE_MAX - 1), KCR_ETOOBIG);
  kcr_buf_free(&b);
}

static void test_buf_take_hands_over(void **state) {
  kcr_buf_t b;
  size_t len = 99;
  char *s;
  (void)state;
  kcr_buf_init(&b, 100);
  s = kcr_buf_take(&b, &len);
  assert_non_null(s);
  assert_string_equal(s, "");
  assert_int_equal(len, 0);
  kcr_free(s);
  kcr_buf_appends(&b, "abc");
  s = kcr_buf_take(&b, &len);
  assert_string_equal(s, "abc");
  assert_int_equal(len, 3);
  assert_null(b.data);
  assert_int_equal(kcr_buf_len(&b), 0);
  kcr_free(s);
}

static void test_buf_consume_moves_rest(void **state) {
  kcr_buf_t b;
  (void)state;
  kcr_buf_init(&b, 100);
  kcr_buf_appends(&b, "line1\nline2\n");
  kcr_buf_consume(&b, 6);
  assert_string_equal(kcr_buf_cstr(&b), "line2\n");
  kcr_buf_consume(&b, 0);
  kcr_buf_consume(&b, 6);
  assert_string_equal(kcr_buf_cstr(&b), "");
  kcr_buf_free(&b);
}

static int build(kcr_buf_t *b) {
  int rc;
  kcr_buf_init(b, 1 << 16);
  for (int i = 0; i < 50; i++)
    if ((rc = kcr_buf_appendf(b, "item %d with some padding text;", i)) != 0)
      return rc;
  return 0;
}

/* take_empty: kcr_buf_take of an empty buffer allocates the "" it returns. */
static int take_empty(char **out) {
  kcr_buf_t b;
  kcr_buf_init(&b, 10);
  *out = kcr_buf_take(&b, NULL);
  return *out ? 0 : KCR_ENOMEM;
}

static void test_buf_allocation_failure(void **state) {
  kcr_buf_t b;
  char *taken = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(build(&b), kcr_buf_free(&b));
  KCR_TEST_ALLOC_LOOP(take_empty(&taken), kcr_free(taken));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_buf_append_and_cstr),
      cmocka_unit_test(test_buf_grows_past_initial_capacity),
      cmocka_unit_test(test_buf_limit_is_exact),
      cmocka_unit_test(test_buf_huge_append_does_not_overflow),
      cmocka_unit_test(test_buf_take_hands_over),
      cmocka_unit_test(test_buf_consume_moves_rest),
      cmocka_unit_test(test_buf_allocation_failure),
  };
  return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
