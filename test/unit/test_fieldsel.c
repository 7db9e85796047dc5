/* SPDX-License-Identifier: MIT */
/*
 * test_fieldsel.c: libkcr's one field selector parser (api/fieldsel_internal.h),
 * as the cache's and the fake client's lists use it: the three operators and
 * their order of preference, empty terms and values, what is refused, and the
 * bounds on text and terms. It never allocates, so there is no failure loop.
 */
#include <stdio.h>
#include <string.h>

#include "api/fieldsel_internal.h"
#include "kcr/error.h"
#include "testutil.h"

/* render writes the terms as "field=value|field!=value" for comparison. */
static void render(const kcr__fieldsel_t *fs, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < fs->n; i++)
    n += (size_t)snprintf(buf + n, size - n, "%s%s%s%s", i ? "|" : "", fs->terms[i].field,
                          fs->terms[i].negate ? "!=" : "=", fs->terms[i].value);
}

static void test_fieldsel_parses_operators(void **state) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {NULL, ""},
      {"", ""},
      {",,", ""},
      {"metadata.name=a", "metadata.name=a"},
      {"metadata.name==a", "metadata.name=a"},
      {"metadata.name!=a", "metadata.name!=a"},
      {"metadata.namespace=b,metadata.name!=a", "metadata.namespace=b|metadata.name!=a"},
      {"a=,b!=", "a=|b!="},
      {"a==b=c", "a=b=c"},  /* "==" before "=" */
      {"a=b!=c", "a=b!=c"}, /* "!=" first, anywhere in the term */
      {"a = b", "a = b"},   /* nothing is trimmed */
      {",a=1,,b=2,", "a=1|b=2"},
  };
  char got[256];
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kcr__fieldsel_t fs;
    kcr_error_t err;
    kcr_error_clear(&err);
    assert_int_equal(kcr__fieldsel_parse(cases[i].text, &fs, &err), 0);
    render(&fs, got, sizeof(got));
    if (strcmp(got, cases[i].want) != 0)
      fail_msg("case %zu (%s): got %s, want %s", i, cases[i].text ? cases[i].text : "NULL", got,
               cases[i].want);
  }
}

static void test_fieldsel_refuses_bad_terms(void **state) {
  static const char *const bad[] = {"metadata.name", "a=1,b", "=a", "!=a", "==a"};
  (void)state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    kcr__fieldsel_t fs;
    kcr_error_t err;
    kcr_error_clear(&err);
    assert_int_equal(kcr__fieldsel_parse(bad[i], &fs, &err), KCR_EPARSE);
    assert_non_null(strstr(err.message, "field selector:"));
  }
}

static void test_fieldsel_bounds(void **state) {
  static char text[KCR__FIELDSEL_MAX + 2];
  kcr__fieldsel_t fs;
  kcr_error_t err;
  size_t n = 0;
  (void)state;
  /* exactly KCR__FIELDSEL_TERMS terms is fine, one more is not */
  for (int i = 0; i < KCR__FIELDSEL_TERMS; i++)
    n += (size_t)snprintf(text + n, sizeof(text) - n, "%sf%d=v", i ? "," : "", i);
  kcr_error_clear(&err);
  assert_int_equal(kcr__fieldsel_parse(text, &fs, &err), 0);
  assert_int_equal(fs.n, KCR__FIELDSEL_TERMS);
  snprintf(text + n, sizeof(text) - n, ",x=y");
  kcr_error_clear(&err);
  assert_int_equal(kcr__fieldsel_parse(text, &fs, &err), KCR_ETOOBIG);
  /* the longest text is fine, one byte more is not */
  memset(text, 'a', KCR__FIELDSEL_MAX);
  text[0] = 'f';
  text[1] = '=';
  text[KCR__FIELDSEL_MAX] = '\0';
  kcr_error_clear(&err);
  assert_int_equal(kcr__fieldsel_parse(text, &fs, &err), 0);
  assert_int_equal(strlen(fs.terms[0].value), KCR__FIELDSEL_MAX - 2);
  text[KCR__FIELDSEL_MAX] = 'a';
  text[KCR__FIELDSEL_MAX + 1] = '\0';
  kcr_error_clear(&err);
  assert_int_equal(kcr__fieldsel_parse(text, &fs, &err), KCR_ETOOBIG);
  assert_int_equal(fs.n, 0);
  /* NULL err is allowed, as everywhere */
  assert_int_equal(kcr__fieldsel_parse("nope", &fs, NULL), KCR_EPARSE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fieldsel_parses_operators),
      cmocka_unit_test(test_fieldsel_refuses_bad_terms),
      cmocka_unit_test(test_fieldsel_bounds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
