/* SPDX-License-Identifier: MIT */
/*
 * fuzz_base64.c: kcr_base64_decode on arbitrary bytes. What decodes must encode
 * to text that decodes to the same bytes; a failure leaves *out NULL.
 */
#include <string.h>

#include "fuzz.h"
#include "kcr/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *out = (unsigned char *)"x", *again = NULL;
  size_t n = 99, n2 = 0;
  char *enc = NULL;
  kcr_error_t err;
  int rc;

  kcr_error_clear(&err);
  rc = kcr_base64_decode((const char *)data, size, &out, &n, &err);
  if (rc != 0) {
    FUZZ_CHECK(rc == KCR_EPARSE || rc == KCR_ENOMEM);
    FUZZ_CHECK(out == NULL && n == 0 && err.code == rc);
    return 0;
  }
  FUZZ_CHECK(n <= size / 4 * 3 && out[n] == '\0');
  FUZZ_CHECK(kcr_base64_encode(out, n, &enc, NULL) == 0);
  FUZZ_CHECK(strlen(enc) == kcr_base64_encoded_len(n) && strlen(enc) <= size);
  FUZZ_CHECK(kcr_base64_decode(enc, strlen(enc), &again, &n2, NULL) == 0);
  FUZZ_CHECK(n2 == n && memcmp(again, out, n) == 0);
  kcr_free(out);
  kcr_free(enc);
  kcr_free(again);
  return 0;
}
