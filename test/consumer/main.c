/* SPDX-License-Identifier: MIT */
/*
 * consumer: a program outside the kcr tree that uses only the installed headers
 * and library, built once through pkg-config and once through find_package(kcr),
 * to prove the installed package is complete.
 */
#include <stdio.h>
#include <string.h>

#include <kcr/kcr.h>

int main(void) {
  kcr_buf_t b;
  kcr_time_t t;
  kcr_error_t err;
  char text[KCR_TIME_BUFSIZE];

  kcr_error_clear(&err);
  if (kcr_time_parse("2024-05-06T07:08:09.5Z", 22, &t, &err) != 0) {
    fprintf(stderr, "consumer: %s\n", err.message);
    return 1;
  }
  if (kcr_time_format(t, KCR_TIME_MICRO, text, sizeof(text)) < 0)
    return 1;
  kcr_buf_init(&b, 128);
  if (kcr_buf_appendf(&b, "kcr %s: %s", kcr_version_string(), text) != 0)
    return 1;
  printf("%s\n", kcr_buf_cstr(&b));
  if (strcmp(kcr_version_string(), KCR_VERSION_STRING) != 0)
    return 1;
  kcr_buf_free(&b);
  return 0;
}
