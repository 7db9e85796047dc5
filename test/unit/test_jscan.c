/* SPDX-License-Identifier: MIT */
/* test_jscan.c: the compact scanner, compact objects and the decoder's compact mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cache/store_internal.h"
#include "client/watch_internal.h"
#include "kcr/watch.h"
#include "testutil.h"
#include "util/jscan.h"

static const char CM[] =
    " {\"kind\":\"ConfigMap\", \"apiVersion\":\"v1\",\n"
    "  \"metadata\": {\"name\":\"cm-1\",\"namespace\":\"ns\",\"resourceVersion\":\"42\","
    "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:data\":{}}}],"
    "\"labels\":{\"a\":\"b\"}},\n"
    "  \"data\": {\"k\": \"v \\u00e9\", \"n\": [1, -2.5, true, false, null]}} ";

static const char CM_COMPACT[] =
    "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"cm-1\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"42\",\"labels\":{\"a\":\"b\"}},"
    "\"data\":{\"k\":\"v \\u00e9\",\"n\":[1,-2.5,true,false,null]}}";

static void test_jscan_minifies_and_strips_managed_fields(void **state) {
  kcr_buf_t out;
  kcr__scan_meta_t m;
  (void)state;
  kcr_buf_init(&out, 1 << 20);
  assert_int_equal(kcr__scan_object(CM, strlen(CM), &out, &m), 0);
  assert_string_equal(out.data, CM_COMPACT);
  assert_string_equal(m.name, "cm-1");
  assert_string_equal(m.ns, "ns");
  assert_string_equal(m.rv, "42");
  assert_true(m.has_kind && m.has_api_version);
  kcr_buf_free(&out);
}

static void test_jscan_managed_fields_first_and_alone(void **state) {
  static const char *const in[] = {
      "{\"metadata\":{\"managedFields\":[],\"name\":\"a\"}}",
      "{\"metadata\":{\"managedFields\":[]}}",
      "{\"metadata\":{\"name\":\"a\",\"managedFields\":{\"x\":[1]}}}",
      "{\"spec\":{\"managedFields\":1},\"metadata\":{\"managedFields\":2}}",
  };
  static const char *const want[] = {
      "{\"metadata\":{\"name\":\"a\"}}",
      "{\"metadata\":{}}",
      "{\"metadata\":{\"name\":\"a\"}}",
      "{\"spec\":{\"managedFields\":1},\"metadata\":{}}",
  };
  (void)state;
  for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
    kcr_buf_t out;
    kcr__scan_meta_t m;
    kcr_buf_init(&out, 1 << 20);
    assert_int_equal(kcr__scan_object(in[i], strlen(in[i]), &out, &m), 0);
    assert_string_equal(out.data, want[i]);
    kcr_buf_free(&out);
  }
}

static void test_jscan_last_duplicate_wins(void **state) {
  static const char in[] = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x\"},"
                           "\"metadata\":{\"name\":\"b\",\"name\":7,\"resourceVersion\":\"3\"}}";
  kcr_buf_t out;
  kcr__scan_meta_t m;
  (void)state;
  kcr_buf_init(&out, 1 << 20);
  assert_int_equal(kcr__scan_object(in, strlen(in), &out, &m), 0);
  /* jansson's tree of in: metadata {name: 7, resourceVersion: "3"} */
  assert_string_equal(m.name, "");
  assert_string_equal(m.ns, "");
  assert_string_equal(m.rv, "3");
  kcr_buf_free(&out);
}

static void test_jscan_refuses_malformed_and_unhandled(void **state) {
  static const char *const bad[] = {
      "", " ", "[]", "1", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":1} x", "{\"a\":01}",
      "{\"a\":1.}", "{\"a\":-}", "{\"a\":tru}", "{\"a\":truex}", "{\"a\":\"\x01\"}",
      "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{\"a\":\"\\u0000\"}", "{\"a\":\"\\udc00\"}",
      "{\"a\":\"\\ud800\"}", "{\"a\":\"\\ud800\\u0041\"}", "{\"a\":\"\xc0\xaf\"}",
      "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xf4\x90\x80\x80\"}", "{\"a\":\"\xe2\x82\"}",
      "{\"a\":[1,]}", "{\"a\":[1 2]}", "{\"a\":\"unterminated}",
      /* valid JSON the scanner leaves to jansson */
      "{\"a\":1e5}", "{\"a\":1234567890123456789}", "{\"\\u0061\":1}",
      "{\"metadata\":{\"name\":\"a\\u0062\"}}"};
  (void)state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    kcr_buf_t out;
    kcr__scan_meta_t m;
    kcr_buf_init(&out, 1 << 20);
    assert_int_equal(kcr_buf_append(&out, "keep", 4), 0);
    if (kcr__scan_object(bad[i], strlen(bad[i]), &out, &m) != KCR_EPARSE)
      fail_msg("accepted: %s", bad[i]);
    assert_int_equal(out.len, 4); /* nothing appended */
    kcr_buf_free(&out);
  }
}

static void test_jscan_refuses_deep_nesting(void **state) {
  kcr_buf_t in, out;
  kcr__scan_meta_t m;
  (void)state;
  kcr_buf_init(&in, 1 << 20);
  kcr_buf_init(&out, 1 << 20);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(kcr_buf_appends(&in, "{\"a\":"), 0);
  assert_int_equal(kcr_buf_appendc(&in, '1'), 0);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(kcr_buf_appendc(&in, '}'), 0);
  assert_int_equal(kcr__scan_object(in.data, in.len, &out, &m), KCR_EPARSE);
  kcr_buf_free(&in);
  kcr_buf_free(&out);
}

static void test_jscan_output_bound(void **state) {
  kcr_buf_t out;
  kcr__scan_meta_t m;
  (void)state;
  kcr_buf_init(&out, 16);
  assert_int_equal(kcr__scan_object(CM, strlen(CM), &out, &m), KCR_ETOOBIG);
  kcr_buf_free(&out);
}

static void test_jscan_event(void **state) {
  static const char ev[] = "{\"object\":{\"metadata\":{\"name\":\"x\"}},\"type\":\"MODIFIED\","
                           "\"object\":{\"metadata\":{\"name\":\"y\",\"namespace\":\"z\"}}}";
  static const char *const bad[] = {"{\"type\":\"ADDED\"}",
                                    "{\"object\":{}}",
                                    "{\"type\":\"ADDED\",\"object\":[]}",
                                    "{\"type\":1,\"object\":{}}",
                                    "{}",
                                    "[]",
                                    "{\"type\":\"ADDED\",\"object\":{}} {}"};
  kcr_buf_t out;
  kcr__scan_meta_t m;
  char type[16];
  (void)state;
  kcr_buf_init(&out, 1 << 20);
  assert_int_equal(kcr__scan_event(ev, strlen(ev), type, sizeof(type), &out, &m), 0);
  assert_string_equal(type, "MODIFIED");
  assert_string_equal(out.data, "{\"metadata\":{\"name\":\"y\",\"namespace\":\"z\"}}");
  assert_string_equal(m.name, "y");
  assert_string_equal(m.ns, "z");
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    kcr_buf_reset(&out);
    if (kcr__scan_event(bad[i], strlen(bad[i]), type, sizeof(type), &out, &m) != KCR_EPARSE)
      fail_msg("accepted: %s", bad[i]);
    assert_int_equal(out.len, 0);
  }
  kcr_buf_free(&out);
}

static void test_jscan_cobj_accessors(void **state) {
  kcr_buf_t b;
  json_t *c = NULL, *tree = NULL;
  char key[KCR_META_KEY_MAX];
  size_t len;
  (void)state;
  kcr_buf_init(&b, 1 << 20);
  assert_int_equal(kcr_buf_appends(&b, "{\"metadata\":{\"name\":\"n\"}}"), 0);
  assert_int_equal(kcr__cobj_from_buf(&b, 0, "5", "ns", "n", &c), 0);
  assert_int_equal(b.len, 0);
  assert_true(kcr__cobj_is(c));
  assert_string_equal(kcr__cobj_json(c, &len), "{\"metadata\":{\"name\":\"n\"}}");
  assert_int_equal(len, 25);
  assert_string_equal(kcr__cobj_rv(c), "5");
  assert_string_equal(kcr__cobj_ns(c), "ns");
  assert_string_equal(kcr__cobj_name(c), "n");
  assert_int_equal(kcr__cobj_key_fn(c, key, sizeof(key), NULL), 0);
  assert_string_equal(key, "ns/n");
  assert_int_equal(kcr__cobj_key_fn(c, key, 4, NULL), KCR_ETOOBIG);
  assert_int_equal(kcr__cobj_parse(c, &tree), 0);
  assert_string_equal(kcr_meta_name(tree), "n");
  json_decref(tree);
  json_decref(c);
  /* no name: no key */
  assert_int_equal(kcr_buf_appends(&b, "{}"), 0);
  assert_int_equal(kcr__cobj_from_buf(&b, 0, "", "", "", &c), 0);
  assert_int_equal(kcr__cobj_key_fn(c, key, sizeof(key), NULL), KCR_EINVAL);
  json_decref(c);
  kcr_buf_free(&b);
}

static int from_tree_once(json_t *obj, json_t **c) {
  kcr_buf_t b;
  int rc;
  kcr_buf_init(&b, 1 << 20);
  rc = kcr__cobj_from_tree(obj, &b, c);
  kcr_buf_free(&b);
  return rc;
}

static int scan_once(json_t **c) {
  kcr_buf_t b;
  kcr__scan_meta_t m;
  int rc;
  kcr_buf_init(&b, 1 << 20);
  rc = kcr__scan_object(CM, strlen(CM), &b, &m);
  if (rc == 0)
    rc = kcr__cobj_from_buf(&b, 0, m.rv, m.ns, m.name, c);
  kcr_buf_free(&b);
  return rc;
}

static void test_jscan_allocation_failures(void **state) {
  json_t *obj = json_pack("{s:{s:s, s:s}}", "metadata", "name", "a", "resourceVersion", "1");
  json_t *c = NULL, *tree = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(scan_once(&c), (json_decref(c), c = NULL));
  KCR_TEST_ALLOC_LOOP(from_tree_once(obj, &c), (json_decref(c), c = NULL));
  assert_int_equal(from_tree_once(obj, &c), 0);
  assert_string_equal(kcr__cobj_rv(c), "1");
  KCR_TEST_ALLOC_LOOP(kcr__cobj_parse(c, &tree), (json_decref(tree), tree = NULL));
  json_decref(c);
  json_decref(obj);
}

/* decoder compact mode */

typedef struct seen {
  int n;
  kcr_watch_event_type type[4];
  json_t *obj[4];
} seen_t;

static int on_event(const kcr_watch_event *ev, void *data) {
  seen_t *s = data;
  if (s->n < 4) {
    s->type[s->n] = ev->type;
    s->obj[s->n++] = ev->object;
  } else {
    json_decref(ev->object);
  }
  return 0;
}

/* cobj_of makes the compact object of {"metadata":{name,namespace,resourceVersion}}. */
static json_t *cobj_of(const char *ns, const char *name, const char *rv) {
  json_t *t = json_pack("{s:{s:s,s:s,s:s}}", "metadata", "name", name, "namespace", ns,
                        "resourceVersion", rv);
  json_t *c = NULL;
  assert_non_null(t);
  assert_int_equal(from_tree_once(t, &c), 0);
  json_decref(t);
  return c;
}

/* A streamed list's events collapse as a map filled in order would hold them. */
static void test_cobj_collapse(void **state) {
  json_t *ev = json_array(), *out = NULL, *bad;
  char buf[256] = "";
  size_t off = 0, i;
  json_t *o;
  (void)state;
  json_array_append_new(ev, cobj_of("ns", "a", "1"));
  json_array_append_new(ev, cobj_of("ns", "b", "2"));
  json_array_append_new(ev, cobj_of("other", "a", "3")); /* another key */
  json_array_append_new(ev, cobj_of("ns", "a", "4"));    /* an update keeps a's place */
  json_array_append_new(ev, json_null());
  json_array_append_new(ev, cobj_of("ns", "b", "5")); /* b deleted */
  json_array_append_new(ev, json_null());
  json_array_append_new(ev, cobj_of("ns", "x", "6")); /* deleting what is not there */
  json_array_append_new(ev, cobj_of("ns", "c", "7"));
  json_array_append_new(ev, cobj_of("ns", "b", "8")); /* b again, at the end */
  assert_int_equal(kcr__cobj_collapse(ev, &out), 0);
  json_array_foreach(out, i, o) {
    off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s/%s@%s", i ? "," : "",
                            kcr__cobj_ns(o), kcr__cobj_name(o), kcr__cobj_rv(o));
  }
  assert_string_equal(buf, "ns/a@4,other/a@3,ns/c@7,ns/b@8");
  json_decref(out);
  json_decref(ev);

  ev = json_array();
  assert_int_equal(kcr__cobj_collapse(ev, &out), 0);
  assert_int_equal(json_array_size(out), 0);
  json_decref(out);
  json_array_append_new(ev, cobj_of("ns", "a", "1"));
  bad = json_pack("{s:{}}", "metadata");
  assert_int_equal(from_tree_once(bad, &o), 0);
  json_decref(bad);
  json_array_append_new(ev, o); /* no name */
  out = NULL;
  assert_int_equal(kcr__cobj_collapse(ev, &out), KCR_EINVAL);
  assert_null(out);
  json_decref(ev);
}

static void test_jscan_decoder_compact_mode(void **state) {
  static const char stream[] =
      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\","
      "\"managedFields\":[1]}}}\n"
      "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"2\"}}}\n"
      "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"b\"},\"x\":1e3}}\n"
      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}\n";
  kcr_watch_decoder_t *dec;
  seen_t s = {0};
  size_t len;
  (void)state;
  assert_int_equal(kcr_watch_decoder_create(0, on_event, &s, &dec, NULL), 0);
  kcr__watch_decoder_set_compact(dec, true);
  assert_int_equal(kcr_watch_decoder_feed(dec, stream, strlen(stream), NULL), 0);
  assert_int_equal(s.n, 4);
  assert_int_equal(s.type[0], KCR_WATCH_ADDED);
  assert_true(kcr__cobj_is(s.obj[0])); /* scanned */
  assert_string_equal(kcr__cobj_json(s.obj[0], &len),
                      "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}");
  assert_string_equal(kcr__cobj_rv(s.obj[0]), "1");
  assert_true(json_is_object(s.obj[1])); /* bookmarks stay trees */
  assert_int_equal(s.type[2], KCR_WATCH_DELETED);
  assert_true(json_is_object(s.obj[2])); /* an exponent: left to jansson */
  assert_true(json_is_object(s.obj[3])); /* no name: left to jansson */
  for (int i = 0; i < s.n; i++)
    json_decref(s.obj[i]);
  kcr_watch_decoder_destroy(dec);
}

static void test_jscan_decoder_compact_mode_keeps_errors(void **state) {
  static const char stream[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":1}\n";
  kcr_watch_decoder_t *dec;
  seen_t s = {0};
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(kcr_watch_decoder_create(0, on_event, &s, &dec, NULL), 0);
  kcr__watch_decoder_set_compact(dec, true);
  assert_int_equal(kcr_watch_decoder_feed(dec, stream, strlen(stream), &err), KCR_EPARSE);
  assert_non_null(strstr(err.message, "invalid JSON"));
  assert_int_equal(s.n, 0);
  kcr_watch_decoder_destroy(dec);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_jscan_minifies_and_strips_managed_fields),
      cmocka_unit_test(test_jscan_managed_fields_first_and_alone),
      cmocka_unit_test(test_jscan_last_duplicate_wins),
      cmocka_unit_test(test_jscan_refuses_malformed_and_unhandled),
      cmocka_unit_test(test_jscan_refuses_deep_nesting),
      cmocka_unit_test(test_jscan_output_bound),
      cmocka_unit_test(test_jscan_event),
      cmocka_unit_test(test_jscan_cobj_accessors),
      cmocka_unit_test(test_jscan_allocation_failures),
      cmocka_unit_test(test_jscan_decoder_compact_mode),
      cmocka_unit_test(test_jscan_decoder_compact_mode_keeps_errors),
      cmocka_unit_test(test_cobj_collapse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
