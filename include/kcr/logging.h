/* SPDX-License-Identifier: MIT */
/*
 * kcr/logging.h: structured logs as controller-runtime writes them (zap through
 * logr): a level, an RFC 3339 timestamp, the logger's name, a message and
 * key/value pairs, encoded as JSON (production) or as zap's console line
 * (development). controller-runtime's keys are named below so that log queries
 * and dashboards keep working.
 *
 * kcr_logging_install makes these encoders the kcr_log handler (kcr/log.h), so
 * the library's own lines come out in the same format (logger = component).
 *
 * Credentials are never written: the value of any key that names one (token,
 * password, secret, authorization, bearer, credential, cookie, apikey,
 * private key; any case, anywhere in the key) is replaced by "[REDACTED]".
 */
#ifndef KCR_LOGGING_H
#define KCR_LOGGING_H

#include <stddef.h>

#include "kcr/buf.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/log.h"
#include "kcr/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* controller-runtime's keys. */
#define KCR_LOG_KEY_CONTROLLER "controller"
#define KCR_LOG_KEY_CONTROLLER_GROUP "controllerGroup"
#define KCR_LOG_KEY_CONTROLLER_KIND "controllerKind"
#define KCR_LOG_KEY_NAMESPACE "namespace"
#define KCR_LOG_KEY_NAME "name"
#define KCR_LOG_KEY_RECONCILE_ID "reconcileID"
#define KCR_LOG_KEY_ERROR "error"

/* kcr_log_format: the encoders. */
typedef enum kcr_log_format {
  KCR_LOG_FORMAT_JSON = 0,   /* {"level":"info","ts":"...","logger":"...","msg":"...",...} */
  KCR_LOG_FORMAT_CONSOLE = 1 /* ts<TAB>INFO<TAB>logger<TAB>msg<TAB>{"k": "v"} */
} kcr_log_format;

/* kcr_log_field_type and kcr_log_field: one key/value pair (borrowed). */
typedef enum kcr_log_field_type {
  KCR_LOG_FIELD_STRING = 0,
  KCR_LOG_FIELD_INT = 1,
  KCR_LOG_FIELD_FLOAT = 2,
  KCR_LOG_FIELD_BOOL = 3
} kcr_log_field_type;

typedef struct kcr_log_field {
  const char *key;
  kcr_log_field_type type;
  const char *s; /* STRING; NULL is written as null */
  long long i;   /* INT, BOOL */
  double f;      /* FLOAT */
} kcr_log_field;

#define KCR_LOG_STR(k, v) ((kcr_log_field){(k), KCR_LOG_FIELD_STRING, (v), 0, 0.0})
#define KCR_LOG_INT(k, v) ((kcr_log_field){(k), KCR_LOG_FIELD_INT, NULL, (long long)(v), 0.0})
#define KCR_LOG_FLOAT(k, v) ((kcr_log_field){(k), KCR_LOG_FIELD_FLOAT, NULL, 0, (double)(v)})
#define KCR_LOG_BOOL(k, v) ((kcr_log_field){(k), KCR_LOG_FIELD_BOOL, NULL, !!(v), 0.0})

/* kcr_log_record: one line to encode. Everything borrowed. */
typedef struct kcr_log_record {
  kcr_time_t ts;
  kcr_log_level level;
  const char *logger; /* NULL or "": left out */
  const char *msg;
  const kcr_log_field *fields;
  size_t nfields;
} kcr_log_record;

/*
 * kcr_log_encode appends rec as one line (ending in "\n") to out. Strings are
 * JSON-escaped; sensitive keys are redacted. Returns 0, KCR_ETOOBIG or
 * KCR_ENOMEM (out is freed then, as kcr_buf does). Any thread.
 */
KCR_EXTERN int kcr_log_encode(kcr_log_format format, const kcr_log_record *rec, kcr_buf_t *out);

/* kcr_log_key_is_sensitive tells whether a key's value is redacted. */
KCR_EXTERN int kcr_log_key_is_sensitive(const char *key);

/* kcr_log_write_cb receives one encoded line (borrowed, with its "\n"). */
typedef void (*kcr_log_write_cb)(const char *line, size_t len, void *data);

/*
 * kcr_logging_options: zero-initialise, then set what you need.
 *   format   JSON (0) or console.
 *   level    lines less severe are dropped (0 is KCR_LOG_ERROR; set
 *            KCR_LOG_INFO for the usual default).
 *   fd       where lines go when write is NULL; 0 means stderr (2).
 *   write, write_data  a sink instead of fd (tests, log shippers).
 *   clock    timestamps; NULL: the system clock (borrowed).
 */
typedef struct kcr_logging_options {
  kcr_log_format format;
  kcr_log_level level;
  int fd;
  kcr_log_write_cb write;
  void *write_data;
  kcr_clock_t *clock;
} kcr_logging_options;

/*
 * kcr_logging_install configures the structured logger and installs it as the
 * kcr_log handler (kcr_log_set_handler) with the same level. Call it at start-up,
 * before kcr's threads run (like kcr_log_set_handler, it is not synchronised
 * with lines being written). Lines are written whole, one at a time.
 */
KCR_EXTERN void kcr_logging_install(const kcr_logging_options *opts);

/*
 * kcr_log_fields writes one structured line (any thread; lines from several
 * threads never interleave).
 */
KCR_EXTERN void kcr_log_fields(kcr_log_level level, const char *logger, const char *msg,
                               const kcr_log_field *fields, size_t nfields);

/*
 * kcr_logf writes one line with string key/value pairs given as a
 * NULL-terminated argument list: kcr_logf(KCR_LOG_INFO, "app", "Reconciling",
 * "namespace", ns, "name", name, NULL). At most 32 pairs. Any thread.
 */
KCR_EXTERN void kcr_logf(kcr_log_level level, const char *logger, const char *msg, ...);

#ifdef __cplusplus
}
#endif

#endif /* KCR_LOGGING_H */
