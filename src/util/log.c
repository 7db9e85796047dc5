/* SPDX-License-Identifier: MIT */
/*
 * log.c: the log sink. The threshold is an atomic so any thread can check it
 * without a lock; formatting happens on the caller's stack (2 KiB) so logging
 * never allocates, and works while memory is short.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "kcr/log.h"

static void on_default_log(kcr_log_level level, const char *component, const char *msg,
                           void *data) {
  (void)data;
  fprintf(stderr, "%s %s: %s\n", kcr_log_level_name(level), component, msg);
}

static kcr_log_cb handler = on_default_log;
static void *handler_data;
static atomic_int threshold = KCR_LOG_INFO;

void kcr_log_set_handler(kcr_log_cb cb, void *data) {
  handler = cb ? cb : on_default_log;
  handler_data = cb ? data : NULL;
}

void kcr_log_set_level(kcr_log_level level) {
  atomic_store(&threshold, (int)level);
}

const char *kcr_log_level_name(kcr_log_level level) {
  switch (level) {
  case KCR_LOG_ERROR:
    return "error";
  case KCR_LOG_WARN:
    return "warn";
  case KCR_LOG_INFO:
    return "info";
  case KCR_LOG_DEBUG:
    return "debug";
  case KCR_LOG_TRACE:
    return "trace";
  }
  return "unknown";
}

void kcr_log(kcr_log_level level, const char *component, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  if ((int)level > atomic_load(&threshold))
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  handler(level, component ? component : "kcr", msg, handler_data);
}
