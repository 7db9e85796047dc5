/* SPDX-License-Identifier: MIT */
/*
 * kcr/log.h: where kcr's own log lines go. The library never writes to stderr
 * behind the application's back except through the default handler, which the
 * application can replace. Each line has a level, the component that wrote it
 * ("config", "client", "reflector"...) and a message without a trailing newline;
 * messages never carry a credential.
 */
#ifndef KCR_LOG_H
#define KCR_LOG_H

#include "kcr/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_log_level: lower is more severe. */
typedef enum kcr_log_level {
  KCR_LOG_ERROR = 0,
  KCR_LOG_WARN = 1,
  KCR_LOG_INFO = 2,
  KCR_LOG_DEBUG = 3,
  KCR_LOG_TRACE = 4
} kcr_log_level;

/*
 * kcr_log_cb receives one line. component and msg are borrowed for the call.
 * It may run on any kcr thread, the I/O loop included, so it must be quick and
 * must not call back into kcr.
 */
typedef void (*kcr_log_cb)(kcr_log_level level, const char *component, const char *msg, void *data);

/*
 * kcr_log_set_handler replaces the handler (NULL restores the default, which
 * writes "LEVEL component: msg" lines to stderr). Call it before starting kcr's
 * threads; it is not synchronised with lines being logged.
 */
KCR_EXTERN void kcr_log_set_handler(kcr_log_cb cb, void *data);

/*
 * kcr_log_set_level drops lines less severe than level (default KCR_LOG_INFO).
 * Any thread.
 */
KCR_EXTERN void kcr_log_set_level(kcr_log_level level);

/* kcr_log_level_name returns "error", "warn", "info", "debug" or "trace". Static. */
KCR_EXTERN const char *kcr_log_level_name(kcr_log_level level);

/*
 * kcr_log writes one line through the handler if level passes the threshold.
 * Messages longer than 2 KiB are cut. Any thread.
 */
KCR_EXTERN void kcr_log(kcr_log_level level, const char *component, const char *fmt, ...)
    KCR_PRINTF(3, 4);

#ifdef __cplusplus
}
#endif

#endif /* KCR_LOG_H */
