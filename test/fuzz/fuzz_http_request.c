/* SPDX-License-Identifier: MIT */
/*
 * fuzz_http_request.c: the probes/metrics server's request parsing
 * (src/server/http1_internal.h) on arbitrary bytes: finding the end of a head,
 * parsing it, and reading the /healthz query (?verbose, ?exclude=). What parses
 * must have a method of 1..15 printable bytes and a target that starts where
 * the request line's second field does; parsing is deterministic; a head found
 * ends with the blank line and has no earlier one; a name never matches when it
 * is empty or holds a comma (exclude= splits on commas).
 */
#include <string.h>

#include "fuzz.h"
#include "server/http1_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  size_t end = kcr__http_head_end(buf, size), len = end ? end : size;
  kcr__http_head h, h2;
  size_t ml;

  if (end) {
    FUZZ_CHECK(end >= 4 && end <= size && memcmp(buf + end - 4, "\r\n\r\n", 4) == 0);
    FUZZ_CHECK(kcr__http_head_end(buf, end - 1) == 0);
  }
  if (kcr__http_parse_head(buf, len, &h) != 0)
    return 0;
  FUZZ_CHECK(kcr__http_parse_head(buf, len, &h2) == 0);
  FUZZ_CHECK(strcmp(h.method, h2.method) == 0 && strcmp(h.target, h2.target) == 0);
  FUZZ_CHECK((h.query == NULL) == (h2.query == NULL));
  FUZZ_CHECK(h.head_only == h2.head_only && h.close_after == h2.close_after);
  ml = strlen(h.method);
  FUZZ_CHECK(ml >= 1 && ml <= 15);
  for (size_t i = 0; i < ml; i++)
    FUZZ_CHECK((unsigned char)h.method[i] > 0x20 && h.method[i] != 0x7f);
  FUZZ_CHECK(strlen(h.target) < KCR__HTTP_TARGET_MAX);
  FUZZ_CHECK(h.head_only == (strcmp(h.method, "HEAD") == 0));
  FUZZ_CHECK(h.close_after == 0 || h.close_after == 1);
  /* The request line is in the input, the target right after the method. */
  FUZZ_CHECK(memmem(buf, len, h.method, ml) != NULL);
  if (h.query) {
    FUZZ_CHECK(h.query > h.target && h.query <= h.target + KCR__HTTP_TARGET_MAX);
    FUZZ_CHECK(h.query[-1] == '\0' && strchr(h.target, '?') == NULL);
    (void)kcr__http_query_has(h.query, "verbose");
    (void)kcr__http_query_excludes(h.query, "ping");
    FUZZ_CHECK(!kcr__http_query_excludes(h.query, ""));
    FUZZ_CHECK(!kcr__http_query_excludes(h.query, "a,b"));
  }
  FUZZ_CHECK(!kcr__http_query_has(NULL, "verbose") && !kcr__http_query_excludes(NULL, "ping"));
  return 0;
}
