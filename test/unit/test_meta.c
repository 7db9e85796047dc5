/* SPDX-License-Identifier: MIT */
/* test_meta.c: metadata accessors, keys, the managedFields transform, label selectors. */
#include <stdio.h>
#include <string.h>

#include "api/meta_internal.h"
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

/* --- apimachinery's pkg/labels/selector_test.go, case by case ---------------- */

/* parse_ok parses text, failing the test with the parser's message on error. */
static kcr_selector_t *parse_ok(const char *text) {
  kcr_selector_t *sel = NULL;
  kcr_error_t err = {0};
  if (kcr_selector_parse(text, &sel, &err) != 0)
    fail_msg("'%s': %s", text, err.message);
  return sel;
}

/* canon returns sel's String() in buf. */
static const char *canon(const kcr_selector_t *sel, char *buf, size_t size) {
  kcr_buf_t b;
  kcr_buf_init(&b, 4096);
  assert_int_equal(kcr_selector_string(sel, &b), 0);
  snprintf(buf, size, "%s", kcr_buf_cstr(&b));
  kcr_buf_free(&b);
  return buf;
}

static void expect_refused(const char *text) {
  kcr_selector_t *sel = NULL;
  kcr_error_t err = {0};
  int rc = kcr_selector_parse(text, &sel, &err);
  if (rc != KCR_EPARSE)
    fail_msg("'%s': expected a parse error, got %d", text, rc);
  assert_null(sel);
  assert_non_null(strstr(err.message, "selector: at "));
}

/* TestSelectorParse: what parses prints back as its text without spaces. */
static void test_meta_selector_upstream_parse(void **state) {
  static const char *const good[] = {
      "x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5",
  };
  static const char *const bad[] = {"x=a||y=b", "x==a==b", "!x=a", "x<a",
                                    /* NewRequirement: > and < need one integer */
                                    "x>", "x<", "x>,y", "x<=1", "x>=1", "x> 1 2"};
  char out[256], want[256];
  (void)state;
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    kcr_selector_t *sel = parse_ok(good[i]);
    size_t n = 0;
    for (const char *p = good[i]; *p; p++)
      if (*p != ' ')
        want[n++] = *p;
    want[n] = '\0';
    if (strcmp(canon(sel, out, sizeof(out)), want) != 0)
      fail_msg("'%s' restrings as '%s'", good[i], out);
    kcr_selector_destroy(sel);
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    expect_refused(bad[i]);
}

/* TestDeterministicParse */
static void test_meta_selector_upstream_deterministic(void **state) {
  kcr_selector_t *a = parse_ok("x=a,a=x"), *b = parse_ok("a=x,x=a");
  char s1[64], s2[64];
  (void)state;
  assert_string_equal(canon(a, s1, sizeof(s1)), canon(b, s2, sizeof(s2)));
  assert_string_equal(s1, "a=x,x=a");
  kcr_selector_destroy(a);
  kcr_selector_destroy(b);
}

/* A selector, a label set (JSON) and whether the one matches the other. */
typedef struct match_case {
  const char *sel, *labels;
  bool match;
} match_case_t;

static void run_match_cases(const match_case_t *cases, size_t n) {
  for (size_t i = 0; i < n; i++) {
    kcr_selector_t *sel = parse_ok(cases[i].sel);
    json_t *l = load(cases[i].labels);
    if (kcr_selector_matches(sel, l) != cases[i].match)
      fail_msg("'%s' on %s: matches %d, want %d", cases[i].sel, cases[i].labels, !cases[i].match,
               cases[i].match);
    json_decref(l);
    kcr_selector_destroy(sel);
  }
}

/* TestEverything, TestSelectorMatches, TestRequirementSelectorMatching, and the
 * integer comparisons of Requirement.Matches (strconv.ParseInt on the label). */
static void test_meta_selector_upstream_matches(void **state) {
  static const match_case_t cases[] = {
      {"", "{\"x\":\"y\"}", true},
      {"x=y", "{\"x\":\"y\"}", true},
      {"x=y,z=w", "{\"x\":\"y\",\"z\":\"w\"}", true},
      {"x!=y,z!=w", "{\"x\":\"z\",\"z\":\"a\"}", true},
      {"notin=in", "{\"notin\":\"in\"}", true},
      {"x", "{\"x\":\"z\"}", true},
      {"!x", "{\"y\":\"z\"}", true},
      {"x>1", "{\"x\":\"2\"}", true},
      {"x<1", "{\"x\":\"0\"}", true},
      {"x=z", "{}", false},
      {"x=y", "{\"x\":\"z\"}", false},
      {"x=y,z=w", "{\"x\":\"w\",\"z\":\"w\"}", false},
      {"x!=y,z!=w", "{\"x\":\"z\",\"z\":\"w\"}", false},
      {"x", "{\"y\":\"z\"}", false},
      {"!x", "{\"x\":\"z\"}", false},
      {"x>1", "{\"x\":\"0\"}", false},
      {"x<1", "{\"x\":\"2\"}", false},
      {"foo=bar", "{\"foo\":\"bar\",\"baz\":\"blah\"}", true},
      {"baz=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", true},
      {"foo=bar,baz=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", true},
      {"foo=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", false},
      {"baz=bar", "{\"foo\":\"bar\",\"baz\":\"blah\"}", false},
      {"foo=bar,foobar=bar,baz=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", false},
      /* TestRequirementSelectorMatching */
      {"x in (foo),y notin (alpha)", "{\"x\":\"foo\",\"y\":\"baz\"}", true},
      {"x in (foo),y in (alpha)", "{\"x\":\"foo\",\"y\":\"baz\"}", false},
      {"x notin (),y", "{\"y\":\"\"}", true},
      {"!x,y", "{\"y\":\"\"}", true},
      {"x notin (),!y", "{\"y\":\"\"}", false},
      {"x in ()", "{\"y\":\"baz\"}", false},
      {"z>1", "{\"z\":\"2\"}", true},
      {"z>1", "{\"z\":\"v2\"}", false},
      /* ParseInt: a sign, then digits only, in int64 */
      {"x>1", "{\"x\":\" 2\"}", false},
      {"x>1", "{\"x\":\"\\t2\"}", false},
      {"x>1", "{\"x\":\"\\n2\"}", false},
      {"x>1", "{\"x\":\"2 \"}", false},
      {"x>1", "{\"x\":\"+2\"}", true},
      {"x>1", "{\"x\":\"002\"}", true},
      {"x<1", "{\"x\":\"-2\"}", true},
      {"x<1", "{\"x\":\"\"}", false},
      {"x<1", "{\"x\":\"-\"}", false},
      {"x<1", "{\"x\":\"0x0\"}", false},
      {"x<1", "{\"x\":\"1_0\"}", false},
      {"x>1", "{\"x\":\"9223372036854775807\"}", true},
      {"x>1", "{\"x\":\"9223372036854775808\"}", false},
      {"x<1", "{\"x\":\"-9223372036854775808\"}", true},
      {"x<1", "{\"x\":\"-9223372036854775809\"}", false},
      {"x>9223372036854775806", "{\"x\":\"9223372036854775807\"}", true},
      {"x>1", "{}", false},
      {"x<1", "{\"x\":1}", false},
  };
  kcr_selector_t *all = parse_ok("");
  (void)state;
  assert_true(kcr_selector_empty(all));
  assert_true(kcr_selector_empty(NULL));
  kcr_selector_destroy(all);
  run_match_cases(cases, sizeof(cases) / sizeof(cases[0]));
  /* A NUL inside the label's value ends no number early. */
  {
    kcr_selector_t *gt = parse_ok("x>1");
    json_t *l = json_object();
    json_object_set_new(l, "x", json_stringn("2\0003", 3));
    assert_false(kcr_selector_matches(gt, l));
    json_decref(l);
    kcr_selector_destroy(gt);
  }
}

/* TestLexer and TestLexerSequence: the longest operator wins; anything not
 * special is part of an identifier; in and notin are keywords. */
static void test_meta_selector_upstream_lexer(void **state) {
  static const struct {
    const char *text, *tokens;
  } cases[] = {
      {"", "EOS''"},
      {",", "COMMA',' EOS''"},
      {"notin", "NOTIN'notin' EOS''"},
      {"in", "IN'in' EOS''"},
      {"=", "EQ'=' EOS''"},
      {"==", "DEQ'==' EOS''"},
      {">", "GT'>' EOS''"},
      {"<", "LT'<' EOS''"},
      {"!", "NOT'!' EOS''"},
      {"!=", "NEQ'!=' EOS''"},
      {"(", "OPEN'(' EOS''"},
      {")", "CLOSE')' EOS''"},
      {"~", "IDENT'~' EOS''"},
      {"||", "IDENT'||' EOS''"},
      {"key in ( value )", "IDENT'key' IN'in' OPEN'(' IDENT'value' CLOSE')' EOS''"},
      {"key notin ( value )", "IDENT'key' NOTIN'notin' OPEN'(' IDENT'value' CLOSE')' EOS''"},
      {"key in ( value1, value2 )",
       "IDENT'key' IN'in' OPEN'(' IDENT'value1' COMMA',' IDENT'value2' CLOSE')' EOS''"},
      {"key", "IDENT'key' EOS''"},
      {"!key", "NOT'!' IDENT'key' EOS''"},
      {"()", "OPEN'(' CLOSE')' EOS''"},
      {"x in (),y", "IDENT'x' IN'in' OPEN'(' CLOSE')' COMMA',' IDENT'y' EOS''"},
      {"== != (), = notin", "DEQ'==' NEQ'!=' OPEN'(' CLOSE')' COMMA',' EQ'=' NOTIN'notin' EOS''"},
      {"key>2", "IDENT'key' GT'>' IDENT'2' EOS''"},
      {"key<1", "IDENT'key' LT'<' IDENT'1' EOS''"},
      /* beyond upstream's tables: runs of specials, white space of each kind */
      {"!==", "NEQ'!=' EQ'=' EOS''"},
      {"===", "DEQ'==' EQ'=' EOS''"},
      {">=<", "GT'>' EQ'=' LT'<' EOS''"},
      {"\ta\r\nb ", "IDENT'a' IDENT'b' EOS''"},
      {"inx notinx", "IDENT'inx' IDENT'notinx' EOS''"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kcr_buf_t b;
    kcr_buf_init(&b, 4096);
    assert_int_equal(kcr__selector_lex(cases[i].text, &b), 0);
    if (strcmp(kcr_buf_cstr(&b), cases[i].tokens) != 0)
      fail_msg("'%s': tokens %s, want %s", cases[i].text, kcr_buf_cstr(&b), cases[i].tokens);
    kcr_buf_free(&b);
  }
}

/* TestRequirementConstructor, for what the text syntax can express: key and
 * value validation, and the operators' value rules. */
static void test_meta_selector_upstream_requirements(void **state) {
  static const struct {
    const char *text;
    bool ok;
  } cases[] = {
      {"x in (foo)", true},
      {"x notin (foo)", true},
      {"x", true},
      {"!x", true},
      {"1foo in (bar)", true},
      {"1234 in (bar)", true},
      {"y>1", true},
      {"z<6", true},
      {"foo>bar", false},
      {"barz<blah", false},
      {"x13>", false},
      {"x>-1", false},
      {"x>+1", false},
      {"x>1.5", false},
      {"x>1e3", false},
      {"x=a b", false},
      {"x>99999999999999999999", false},
  };
  char key[300], text[400];
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (cases[i].ok)
      kcr_selector_destroy(parse_ok(cases[i].text));
    else
      expect_refused(cases[i].text);
  }
  /* A key of 254 bytes breaks the DNS rule (len <= 253); so does a name of 64. */
  memset(key, 'a', 254);
  key[254] = '\0';
  expect_refused(key);
  key[63] = '\0';
  kcr_selector_destroy(parse_ok(key));
  key[63] = 'a';
  key[64] = '\0';
  expect_refused(key);
  /* A prefix of 253 bytes (labels of at most 63) is fine, of 254 it is not. */
  memset(key, 'a', 253);
  for (size_t i = 63; i < 253; i += 64)
    key[i] = '.';
  snprintf(key + 253, sizeof(key) - 253, "/n");
  kcr_selector_destroy(parse_ok(key));
  memmove(key + 1, key, strlen(key) + 1);
  expect_refused(key);
  /* A value of 254 bytes (or 64) is not a label value. */
  memset(text, 'a', sizeof(text));
  memcpy(text, "x16=", 4);
  text[4 + 254] = '\0';
  expect_refused(text);
  text[4 + 64] = '\0';
  expect_refused(text);
  text[4 + 63] = '\0';
  kcr_selector_destroy(parse_ok(text));
}

/* TestToString: the canonical form of each requirement kind. */
static void test_meta_selector_upstream_to_string(void **state) {
  static const struct {
    const char *text, *out;
  } cases[] = {
      {"x in (abc,def),y notin (jkl),z", "x in (abc,def),y notin (jkl),z"},
      {"x notin (abc,def),y!=jkl,!z", "x notin (abc,def),y!=jkl,!z"},
      {"x notin (abc),y in (jkl,mno),z notin ()", "x notin (abc),y in (jkl,mno),z notin ()"},
      {"x=abc,y==jkl,z!=a,z", "x=abc,y==jkl,z!=a,z"},
      {"x>2,y<8,z", "x>2,y<8,z"},
      {"z, y<8, x>2", "x>2,y<8,z"},
      {"x in (def,abc,def)", "x in (abc,def)"},
  };
  char out[256];
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kcr_selector_t *sel = parse_ok(cases[i].text);
    if (strcmp(canon(sel, out, sizeof(out)), cases[i].out) != 0)
      fail_msg("'%s' prints as '%s', want '%s'", cases[i].text, out, cases[i].out);
    kcr_selector_destroy(sel);
  }
  /* "x in (abc,def)," (a trailing empty requirement) is not a selector. */
  expect_refused("x in (abc,def),");
}

/* TestSetSelectorParser: text, and the parsed selector in canonical form (NULL:
 * refused). */
static void test_meta_selector_upstream_set_parser(void **state) {
  static const struct {
    const char *text, *out;
  } cases[] = {
      {"", ""},
      {"\rx", "x"},
      {"this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"},
      {"this-is-another-dns.domain.com/key-with-dash in (so,what)",
       "this-is-another-dns.domain.com/key-with-dash in (so,what)"},
      {"0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
       "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"},
      {"foo  in\t (abc)", "foo in (abc)"},
      {"x notin\n (abc)", "x notin (abc)"},
      {"x  notin\t\t\t(abc,def)", "x notin (abc,def)"},
      {"x in (abc,def)", "x in (abc,def)"},
      {"x in (abc,)", "x in (,abc)"},
      {"x in ()", "x in ()"},
      {"x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"},
      {"x,y in (a)", "x,y in (a)"},
      {"x=a", "x=a"},
      {"x>1", "x>1"},
      {"x<7", "x<7"},
      {"x=a,y!=b", "x=a,y!=b"},
      {"x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"},
      {"x=a||y=b", NULL},
      {"x,,y", NULL},
      {",x,y", NULL},
      {"x nott in (y)", NULL},
      {"x notin ( )", "x notin ()"},
      {"x notin (, a)", "x notin (,a)"},
      {"a in (xyz),", NULL},
      {"a in (xyz)b notin ()", NULL},
      {"a ", "a"},
      {"a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"},
      {"a in (xyz abc)", NULL},
      {"a notin(", NULL},
      {"a (", NULL},
      {"(", NULL},
  };
  char out[256];
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (!cases[i].out) {
      expect_refused(cases[i].text);
      continue;
    }
    kcr_selector_t *sel = parse_ok(cases[i].text);
    if (strcmp(canon(sel, out, sizeof(out)), cases[i].out) != 0)
      fail_msg("'%s' parses as '%s', want '%s'", cases[i].text, out, cases[i].out);
    kcr_selector_destroy(sel);
  }
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
      cmocka_unit_test(test_meta_selector_upstream_parse),
      cmocka_unit_test(test_meta_selector_upstream_deterministic),
      cmocka_unit_test(test_meta_selector_upstream_matches),
      cmocka_unit_test(test_meta_selector_upstream_lexer),
      cmocka_unit_test(test_meta_selector_upstream_requirements),
      cmocka_unit_test(test_meta_selector_upstream_to_string),
      cmocka_unit_test(test_meta_selector_upstream_set_parser),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
