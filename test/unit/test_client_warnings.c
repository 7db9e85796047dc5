/* SPDX-License-Identifier: MIT */
/*
 * test_client_warnings.c: parsing the API server's Warning headers as
 * apimachinery's ParseWarningHeaders does (codes, agents, quoted texts and
 * their escapes, dates, several warnings in one value, RFC 2047 words, what is
 * refused and what survives a malformed tail), and the bounded memory of
 * texts a client has logged. No network.
 */
#include <stdio.h>
#include <string.h>

#include "client/warning_internal.h"
#include "testutil.h"

/* parse parses value and returns how many warnings it yielded into *list. */
static size_t parse(const char *value, kcr__warnings *list) {
  memset(list, 0, sizeof(*list));
  assert_int_equal(kcr__warnings_parse(value, strlen(value), list), 0);
  return list->n;
}

/* one asserts value yields exactly one warning: code, agent, text. */
static void one(const char *value, int code, const char *agent, const char *text) {
  kcr__warnings l;
  if (parse(value, &l) != 1)
    fail_msg("[%s]: %zu warnings, want 1", value, l.n);
  assert_int_equal(l.items[0].code, code);
  assert_string_equal(l.items[0].agent, agent);
  if (strcmp(l.items[0].text, text) != 0)
    fail_msg("[%s]: text [%s], want [%s]", value, l.items[0].text, text);
  kcr__warnings_free(&l);
}

/* none asserts value yields no warning. */
static void none(const char *value) {
  kcr__warnings l;
  if (parse(value, &l) != 0)
    fail_msg("[%s]: %zu warnings, want none", value, l.n);
  kcr__warnings_free(&l);
}

static void test_warning_basic(void **state) {
  (void)state;
  one("299 - \"Use apps/v1 Deployment\"", 299, "-", "Use apps/v1 Deployment");
  one("  299 - \"padded\"  ", 299, "-", "padded");
  one("\xc2\xa0"
      "299 - \"nbsp trimmed\"\xe3\x80\x80",
      299, "-", "nbsp trimmed"); /* U+00A0, U+3000 */
  one("199 kube-apiserver \"x\"", 199, "kube-apiserver", "x");
  one("000 agent \"any three digits\"", 0, "agent", "any three digits");
  one("299 - \"\"", 299, "-", "");
  one("299 \xc3\xa9t\xc3\xa9 \"utf-8 agent\"", 299, "\xc3\xa9t\xc3\xa9", "utf-8 agent");
  one("299 - \"caf\xc3\xa9 \xe2\x9c\x93\"", 299, "-", "caf\xc3\xa9 \xe2\x9c\x93");
}

/* A backslash makes the next byte literal; the text ends at the first
 * unescaped quote. */
static void test_warning_quoted_string(void **state) {
  (void)state;
  one("299 - \"say \\\"hi\\\"\"", 299, "-", "say \"hi\"");
  one("299 - \"a\\\\b\"", 299, "-", "a\\b");
  one("299 - \"\\n is n, \\x is x\"", 299, "-", "n is n, x is x");
  one("299 - \"trailing \\\\\"", 299, "-", "trailing \\");
  one("299 - \"comma, inside\"", 299, "-", "comma, inside");
}

/* An optional quoted date, then a comma and the next warning. */
static void test_warning_dates_and_lists(void **state) {
  kcr__warnings l;
  (void)state;
  one("299 - \"dated\" \"Wed, 21 Oct 2015 07:28:00 GMT\"", 299, "-", "dated");
  assert_int_equal(
      parse("299 - \"a\", 299 - \"b\" \"Wed, 21 Oct 2015 07:28:00 GMT\" ,299 x \"c\"", &l), 3);
  assert_string_equal(l.items[0].text, "a");
  assert_string_equal(l.items[1].text, "b");
  assert_string_equal(l.items[2].text, "c");
  assert_string_equal(l.items[2].agent, "x");
  kcr__warnings_free(&l);
  /* the first malformed warning ends the value; what came before stays */
  assert_int_equal(parse("299 - \"kept\", bogus, 299 - \"lost\"", &l), 1);
  assert_string_equal(l.items[0].text, "kept");
  kcr__warnings_free(&l);
  /* a trailing comma is fine */
  one("299 - \"x\",", 299, "-", "x");
}

static void test_warning_refused(void **state) {
  (void)state;
  none("");
  none("   ");
  none("299");
  none("299 -");
  none("299 - ");
  none("29 - \"two digits\"");
  none("2999 - \"four digits\"");
  none("2a9 - \"not digits\"");
  none("299  \"empty agent\"");
  none("299 -  \"two spaces\""); /* the text segment must start with the quote */
  none("299 - unquoted");
  none("299 - \"unterminated");
  none("299 - \"x\" junk");
  none("299 - \"x\" \"unterminated date");
  none("299 a\x01gent \"control in agent\"");
  none("299 \xff \"invalid utf-8 agent\"");
  none("299 - \"tab\tinside\""); /* a tab is a control character to Go */
  none("299 - \"C1 \xc2\x85 control\"");
  none("299 - \"invalid \xc3\x28 utf-8\"");
  none("299 - \"surrogate \xed\xa0\x80\"");
  none("299 - \"overlong \xc0\xaf\"");
}

/* RFC 2047 encoded words are decoded when mime.WordDecoder would. */
static void test_warning_rfc2047(void **state) {
  (void)state;
  one("299 - \"=?UTF-8?Q?caf=C3=A9?=\"", 299, "-", "caf\xc3\xa9");
  one("299 - \"=?utf-8?q?a_b=3d?=\"", 299, "-", "a b=");
  one("299 - \"=?ISO-8859-1?Q?caf=E9?=\"", 299, "-", "caf\xc3\xa9");
  one("299 - \"=?us-ascii?Q?x=E9?=\"", 299, "-", "x\xef\xbf\xbd");
  one("299 - \"=?utf-8?B?aGVsbG8=?=\"", 299, "-", "hello");
  one("299 - \"pre =?utf-8?q?a?= =?utf-8?q?b?= post\"", 299, "-", "pre ab post");
  one("299 - \"=?utf-8?q?a?= x =?utf-8?q?b?=\"", 299, "-", "a x b");
  /* an unknown charset leaves the text as it came */
  one("299 - \"=?koi8-r?q?x?= raw\"", 299, "-", "=?koi8-r?q?x?= raw");
  /* a word that does not decode is kept as text */
  one("299 - \"=?utf-8?x?abc?=\"", 299, "-", "=?utf-8?x?abc?=");
  one("299 - \"=?utf-8?B?not base64?=\"", 299, "-", "=?utf-8?B?not base64?=");
  one("299 - \"=?utf-8?q?=4?=\"", 299, "-", "=?utf-8?q?=4?=");
  /* decoding into a control character makes the warning invalid */
  none("299 - \"=?utf-8?q?a=01?=\"");
}

/* Each distinct text once; the memory is bounded and starts over when full. */
static void test_warning_seen_bounded(void **state) {
  kcr__warning_seen_t s;
  char text[32];
  (void)state;
  kcr__warning_seen_init(&s);
  assert_true(kcr__warning_seen_first(&s, "a"));
  assert_false(kcr__warning_seen_first(&s, "a"));
  assert_true(kcr__warning_seen_first(&s, "b"));
  assert_false(kcr__warning_seen_first(&s, "a"));
  for (int i = 0; i < KCR__WARNING_SEEN_MAX - 2; i++) {
    snprintf(text, sizeof(text), "w%d", i);
    assert_true(kcr__warning_seen_first(&s, text));
  }
  assert_int_equal(s.count, KCR__WARNING_SEEN_MAX);
  /* full: the next one starts the memory over, so "a" is new again after it */
  assert_true(kcr__warning_seen_first(&s, "fresh"));
  assert_int_equal(s.count, 1);
  assert_true(kcr__warning_seen_first(&s, "a"));
  kcr__warning_seen_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_warning_basic),           cmocka_unit_test(test_warning_quoted_string),
      cmocka_unit_test(test_warning_dates_and_lists), cmocka_unit_test(test_warning_refused),
      cmocka_unit_test(test_warning_rfc2047),         cmocka_unit_test(test_warning_seen_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
