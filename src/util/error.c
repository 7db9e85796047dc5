/* SPDX-License-Identifier: MIT */
/*
 * error.c: error codes and kcr_error_t. The code table comes from the one
 * KCR_ERRNO_MAP list in kcr/error.h, so names, numbers and descriptions cannot
 * drift apart. kcr_error_set keeps the first error recorded: the innermost
 * failure is the precise one, and outer layers add context with kcr_error_prefix.
 * The fields an API server's answer fills (http_status, reason,
 * retry_after_seconds, causes) are written by the client layer
 * (src/client/apierror.c); here they are only cleared, never set.
 */
#include <stdio.h>
#include <string.h>

#include "kcr/error.h"

const char *kcr_strerror(int code) {
  switch (code) {
  case KCR_OK:
    return "success";
#define XX(name, value, desc)                                                                      \
  case KCR_##name:                                                                                 \
    return desc;
    KCR_ERRNO_MAP(XX)
#undef XX
  default:
    return "unknown error";
  }
}

const char *kcr_err_name(int code) {
  switch (code) {
  case KCR_OK:
    return "KCR_OK";
#define XX(name, value, desc)                                                                      \
  case KCR_##name:                                                                                 \
    return "KCR_" #name;
    KCR_ERRNO_MAP(XX)
#undef XX
  default:
    return "KCR_UNKNOWN";
  }
}

void kcr_error_clear(kcr_error_t *err) {
  if (err)
    memset(err, 0, sizeof(*err));
}

int kcr_error_setv(kcr_error_t *err, int code, const char *fmt, va_list ap) {
  if (err && err->code == KCR_OK) {
    err->code = code;
    if (fmt)
      vsnprintf(err->message, sizeof(err->message), fmt, ap);
    else
      snprintf(err->message, sizeof(err->message), "%s", kcr_strerror(code));
  }
  return code;
}

int kcr_error_set(kcr_error_t *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kcr_error_setv(err, code, fmt, ap);
  va_end(ap);
  return code;
}

void kcr_error_prefix(kcr_error_t *err, const char *fmt, ...) {
  char old[KCR_ERROR_MESSAGE_MAX];
  va_list ap;
  int n;

  if (!err || err->code == KCR_OK)
    return;
  memcpy(old, err->message, sizeof(old));
  va_start(ap, fmt);
  n = vsnprintf(err->message, sizeof(err->message), fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof(err->message))
    return;
  snprintf(err->message + n, sizeof(err->message) - (size_t)n, "%s", old);
}
