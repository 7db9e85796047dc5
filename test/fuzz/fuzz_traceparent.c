/* SPDX-License-Identifier: MIT */
/*
 * fuzz_traceparent.c: kcr_traceparent_parse on arbitrary bytes. Whatever
 * parses is a valid context that formats as version 00 and parses back to
 * the same ids and flags; a refusal leaves the output untouched.
 */
#include <string.h>

#include "fuzz.h"
#include "kcr/error.h"
#include "kcr/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kcr_span_context c, c2;
  char out[KCR_TRACEPARENT_BUFSIZE];
  int rc;
  memset(&c, 0x77, sizeof(c));
  rc = kcr_traceparent_parse((const char *)data, size, &c);
  if (rc != 0) {
    FUZZ_CHECK(rc == KCR_EINVAL);
    FUZZ_CHECK(c.flags == 0x77 && c.trace_id[0] == 0x77);
    return 0;
  }
  FUZZ_CHECK(kcr_span_context_valid(&c) && c.remote);
  FUZZ_CHECK(kcr_traceparent_format(&c, out) == 0);
  FUZZ_CHECK(strlen(out) == 55 && memcmp(out, "00-", 3) == 0);
  FUZZ_CHECK(kcr_traceparent_parse(out, strlen(out), &c2) == 0);
  FUZZ_CHECK(memcmp(c.trace_id, c2.trace_id, 16) == 0);
  FUZZ_CHECK(memcmp(c.span_id, c2.span_id, 8) == 0 && c.flags == c2.flags);
  return 0;
}
