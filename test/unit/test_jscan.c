/* SPDX-License-Identifier: MIT */
/* test_jscan.c: the scanner that minifies objects without a tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "kcr/buf.h"
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
      "{\"metadata\": { \"managedFields\" : [ 1 ] , \"name\" : \"a\" } }",
      "{\"metadata\":{\"name\":\"a\" , \"managedFields\":1 ,\"managedFields\":2, \"uid\":\"u\"}}",
      "{\"metadata\":{\"managedFields\":1,\"managedFields\":2}}",
      "{\"metadata\":{\"managedFields\":1 , \"managedFields\":2 ,\"name\":\"a\"}}",
  };
  static const char *const want[] = {
      "{\"metadata\":{\"name\":\"a\"}}",
      "{\"metadata\":{}}",
      "{\"metadata\":{\"name\":\"a\"}}",
      "{\"spec\":{\"managedFields\":1},\"metadata\":{}}",
      "{\"metadata\":{\"name\":\"a\"}}",
      "{\"metadata\":{\"name\":\"a\",\"uid\":\"u\"}}",
      "{\"metadata\":{}}",
      "{\"metadata\":{\"name\":\"a\"}}",
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
      "{\"metadata\":{\"name\":\"a\\u0062\"}}",
      /* names the scanner reads: "name", "managedFields" once unescaped */
      "{\"metadata\":{\"na\\u006de\":\"x\"}}", "{\"metadata\":{\"managed\\u0046ields\":[]}}"};
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

/* Escaped member names below the top level and metadata are copied as
 * written: a Pod's managedFields are full of them ("k:{\"name\":\"web\"}"),
 * and they parse back to the names jansson reads. */
static void test_jscan_escaped_names_deeper_down(void **state) {
  static const char in[] =
      "{\"metadata\":{\"name\":\"p\",\"managedFields\":[{\"fieldsV1\":{\"f:spec\":"
      "{\"k:{\\\"name\\\":\\\"web\\\"}\":{}}}}]},"
      "\"spec\":{\"containers\":[{\"k\\u0062\":1,\"a\\\"b\":{\"c\\/d\":2}}]}}";
  kcr_buf_t out;
  kcr__scan_meta_t m;
  json_t *want, *got;
  (void)state;
  kcr_buf_init(&out, 1 << 20);
  assert_int_equal(kcr__scan_object(in, strlen(in), &out, &m), 0);
  assert_string_equal(m.name, "p");
  /* jansson's tree of the input without managedFields */
  want = json_loads(in, 0, NULL);
  assert_non_null(want);
  json_object_del(json_object_get(want, "metadata"), "managedFields");
  got = json_loadb(out.data, out.len, 0, NULL);
  assert_non_null(got);
  assert_true(json_equal(want, got));
  assert_non_null(json_object_get(
      json_array_get(json_object_get(json_object_get(got, "spec"), "containers"), 0), "kb"));
  json_decref(want);
  json_decref(got);
  kcr_buf_free(&out);
}

/* Long strings go 8 bytes at a time until a byte needs a look: a special
 * byte at each position of a 20-byte string is found as the byte loop finds
 * it, the same decision as jansson's and the same value back. */
static void test_jscan_special_byte_at_every_position(void **state) {
  static const char *const specials[] = {"\x01",     "\x1f", "\\n",  "\\\"", "\\u00e9",
                                         "\xc3\xa9", "\x80", "\xff", "\x7f", " "};
  (void)state;
  for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++)
    for (int at = 0; at < 20; at++) {
      char in[128];
      kcr_buf_t out;
      kcr__scan_meta_t m;
      json_t *want;
      int rc;
      snprintf(in, sizeof(in), "{\"data\":{\"v\":\"%.*s%s%.*s\"}}", at, "aaaaaaaaaaaaaaaaaaaa",
               specials[k], 19 - at, "bbbbbbbbbbbbbbbbbbbb");
      kcr_buf_init(&out, 1 << 16);
      rc = kcr__scan_object(in, strlen(in), &out, &m);
      want = json_loads(in, 0, NULL);
      if (rc == 0) {
        json_t *got = json_loadb(out.data, out.len, 0, NULL);
        if (!want || !got || !json_equal(want, got))
          fail_msg("special %zu at %d: accepted, but not as jansson reads it", k, at);
        json_decref(got);
      } else if (want) { /* a plain escape or UTF-8: the byte loop takes it */
        fail_msg("special %zu at %d: refused (%d), jansson accepts", k, at, rc);
      }
      json_decref(want);
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

static void test_jscan_allocation_failures(void **state) {
  kcr_buf_t b;
  kcr__scan_meta_t m;
  (void)state;
  kcr_buf_init(&b, 1 << 20);
  KCR_TEST_ALLOC_LOOP(kcr__scan_object(CM, strlen(CM), &b, &m), kcr_buf_reset(&b));
  assert_string_equal(m.rv, "42");
  kcr_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_jscan_minifies_and_strips_managed_fields),
      cmocka_unit_test(test_jscan_managed_fields_first_and_alone),
      cmocka_unit_test(test_jscan_last_duplicate_wins),
      cmocka_unit_test(test_jscan_refuses_malformed_and_unhandled),
      cmocka_unit_test(test_jscan_escaped_names_deeper_down),
      cmocka_unit_test(test_jscan_special_byte_at_every_position),
      cmocka_unit_test(test_jscan_refuses_deep_nesting),
      cmocka_unit_test(test_jscan_output_bound),
      cmocka_unit_test(test_jscan_event),
      cmocka_unit_test(test_jscan_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
