/* SPDX-License-Identifier: MIT */
/*
 * fuzz_netstat.c: kcr__metrics_netstat_octets (the process collector's reader
 * of /proc/self/net/netstat) on arbitrary text. It never reads past the NUL,
 * returns 0 or -1, leaves both values 0 on -1, and finds the same answer twice.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "metrics/metrics_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  double in = -1, out = -1, in2 = -2, out2 = -2;
  int rc;
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0'; /* the collector's reader gives NUL-terminated text */
  rc = kcr__metrics_netstat_octets(text, &in, &out);
  FUZZ_CHECK(rc == 0 || rc == -1);
  if (rc == -1)
    FUZZ_CHECK(in == 0 && out == 0);
  FUZZ_CHECK(kcr__metrics_netstat_octets(text, &in2, &out2) == rc);
  FUZZ_CHECK((in == in2 || (in != in && in2 != in2)) &&
             (out == out2 || (out != out && out2 != out2)));
  free(text);
  return 0;
}
