/* SPDX-License-Identifier: MIT */
/* test_base64.c: RFC 4648 vectors, strict decoding, allocation failure. */
#include <string.h>

#include "kcr/base64.h"
#include "testutil.h"

static const char *const vectors[][2] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

static void test_base64_rfc4648_vectors(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
    char *enc;
    unsigned char *dec;
    size_t n;
    assert_int_equal(kcr_base64_encode(vectors[i][0], strlen(vectors[i][0]), &enc, NULL), 0);
    assert_string_equal(enc, vectors[i][1]);
    assert_int_equal(strlen(enc), kcr_base64_encoded_len(strlen(vectors[i][0])));
    kcr_free(enc);
    assert_int_equal(kcr_base64_decode(vectors[i][1], strlen(vectors[i][1]), &dec, &n, NULL), 0);
    assert_int_equal(n, strlen(vectors[i][0]));
    assert_string_equal((char *)dec, vectors[i][0]);
    kcr_free(dec);
  }
}

static void test_base64_all_bytes_round_trip(void **state) {
  unsigned char in[256], *out;
  char *enc;
  size_t n;
  (void)state;
  for (int i = 0; i < 256; i++)
    in[i] = (unsigned char)i;
  for (size_t len = 0; len <= sizeof(in); len++) {
    assert_int_equal(kcr_base64_encode(in, len, &enc, NULL), 0);
    assert_int_equal(kcr_base64_decode(enc, strlen(enc), &out, &n, NULL), 0);
    assert_int_equal(n, len);
    assert_memory_equal(out, in, len);
    kcr_free(enc);
    kcr_free(out);
  }
}

static void test_base64_skips_line_breaks(void **state) {
  unsigned char *out;
  size_t n;
  const char *wrapped = "Zm9v\r\nYmFy\nYg=\n=\n";
  (void)state;
  assert_int_equal(kcr_base64_decode(wrapped, strlen(wrapped), &out, &n, NULL), 0);
  assert_string_equal((char *)out, "foobarb");
  kcr_free(out);
}

static void expect_bad(const char *s, const char *fragment) {
  unsigned char *out = (unsigned char *)"sentinel";
  size_t n = 7;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_base64_decode(s, strlen(s), &out, &n, &err), KCR_EPARSE);
  assert_null(out);
  assert_int_equal(n, 0);
  if (!strstr(err.message, fragment))
    fail_msg("decoding \"%s\" said \"%s\", want \"%s\"", s, err.message, fragment);
}

static void test_base64_rejects_malformed(void **state) {
  (void)state;
  expect_bad("Zm9", "ends inside");
  expect_bad("Zg", "ends inside");
  expect_bad("Z===", "byte 1");
  expect_bad("Zm9v!", "byte 4");
  expect_bad("Zg==Zg==", "byte 4");
  expect_bad("Zm=v", "byte 3");
  expect_bad("Zh==", "non-zero bits");
  expect_bad("Zm9=", "non-zero bits");
  expect_bad("=", "byte 0");
  expect_bad("Zm9v Zg==", "byte 4");
}

static unsigned char *decoded;
static char *encoded;

static int decode_some(void) {
  size_t n;
  return kcr_base64_decode("Zm9vYmFy", 8, &decoded, &n, NULL);
}

static void test_base64_allocation_failure(void **state) {
  (void)state;
  KCR_TEST_ALLOC_LOOP(decode_some(), (kcr_free(decoded), decoded = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_base64_encode("abc", 3, &encoded, NULL),
                      (kcr_free(encoded), encoded = NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_base64_rfc4648_vectors),
      cmocka_unit_test(test_base64_all_bytes_round_trip),
      cmocka_unit_test(test_base64_skips_line_breaks),
      cmocka_unit_test(test_base64_rejects_malformed),
      cmocka_unit_test(test_base64_allocation_failure),
  };
  return cmocka_run_group_tests_name("base64", tests, NULL, NULL);
}
