/* SPDX-License-Identifier: MIT */
/* gen_fuzz.c: the checks kcr-gen's fuzz targets share (gen_fuzz.h). */
#include <ctype.h>
#include <string.h>

#include "fuzz.h"
#include "gen.h"
#include "gen_fuzz.h"
#include "kcr/buf.h"

void gen_fuzz_check_place(const char *msg, const char *name, int numbers) {
  const char *p = msg + strlen(name);
  FUZZ_CHECK(strncmp(msg, name, strlen(name)) == 0);
  for (int k = 0; k < numbers; k++) {
    FUZZ_CHECK(*p++ == ':' && isdigit((unsigned char)*p));
    while (isdigit((unsigned char)*p))
      p++;
  }
  FUZZ_CHECK(strncmp(p, ": ", 2) == 0 && p[2] != '\0');
}

void gen_fuzz_check_yaml(const json_t *doc) {
  kcr_buf_t b;
  char msg[256];
  json_t *back = NULL;
  kcr_buf_init(&b, (size_t)64 << 20);
  FUZZ_CHECK(gen_yaml_write(&b, doc) == 0);
  FUZZ_CHECK(gen_yaml_parse(kcr_buf_cstr(&b), kcr_buf_len(&b), &back, msg, sizeof(msg)) == 0);
  FUZZ_CHECK(json_array_size(back) == 1 && json_equal(json_array_get(back, 0), doc));
  json_decref(back);
  kcr_buf_free(&b);
}
