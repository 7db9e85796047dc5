/* SPDX-License-Identifier: MIT */
/*
 * fuzz_time.c: kcr_time_parse on arbitrary bytes. Whatever parses must format
 * (when its UTC year is 0000..9999) and parse back to the same instant, and a
 * failure must leave the output untouched with a message.
 */
#include <string.h>

#include "fuzz.h"
#include "kcr/time.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const kcr_time_t sentinel = {-42, 42};
  kcr_time_t t = sentinel, t2;
  kcr_error_t err;
  char buf[KCR_TIME_BUFSIZE];
  int rc, n;

  kcr_error_clear(&err);
  rc = kcr_time_parse((const char *)data, size, &t, &err);
  if (rc != 0) {
    FUZZ_CHECK(rc == KCR_EPARSE && err.code == KCR_EPARSE && err.message[0] != '\0');
    FUZZ_CHECK(t.sec == sentinel.sec && t.nsec == sentinel.nsec);
    return 0;
  }
  FUZZ_CHECK(t.nsec >= 0 && t.nsec < 1000000000);
  for (int i = 0; i < 3; i++) {
    static const kcr_time_precision precisions[] = {KCR_TIME_SECONDS, KCR_TIME_MICRO,
                                                    KCR_TIME_NANO};
    n = kcr_time_format(t, precisions[i], buf, sizeof(buf));
    if (n == KCR_ERANGE)
      return 0; /* an offset moved it out of 0000..9999 in UTC */
    FUZZ_CHECK(n > 0 && (size_t)n == strlen(buf));
    FUZZ_CHECK(kcr_time_parse(buf, (size_t)n, &t2, NULL) == 0);
    /* seconds and micro are lossy: the round trip truncates, never moves forward */
    FUZZ_CHECK(kcr_time_cmp(t2, t) <= 0 && kcr_time_diff_ns(t, t2) < KCR_NSEC_PER_SEC);
    if (precisions[i] == KCR_TIME_NANO)
      FUZZ_CHECK(kcr_time_cmp(t, t2) == 0);
  }
  return 0;
}
