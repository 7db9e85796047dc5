/* SPDX-License-Identifier: MIT */
/*
 * kcr/log.h: kcr's one logger, structured as controller-runtime's (zap through
 * logr): each line has a level, a timestamp, the logger's name (the component
 * that wrote it: "config", "client", "controller"...), a message without a
 * trailing newline, and key/value fields. Lines go to one process-wide handler;
 * the default handler is the built-in sink, which encodes them as JSON
 * (production) or as zap's console line (development) and writes them whole to
 * stderr, or wherever kcr_log_configure says.
 *
 * controller-runtime's keys are named below so that log queries and dashboards
 * keep working: a reconcile's lines carry controller, controllerGroup,
 * controllerKind, namespace, name and reconcileID as fields, not in the message.
 *
 * Credentials are never written. The built-in encoder replaces the value of any
 * key that names one (token, password, secret, authorization, bearer,
 * credential, cookie, apikey, private key; any case, anywhere in the key) by
 * "[REDACTED]", and in every string it writes (message and values) the word
 * after "Bearer " (any case) as well, so a header pasted into a message leaks
 * nothing. Messages should carry no credential in the first place.
 */
#ifndef KCR_LOG_H
#define KCR_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "kcr/buf.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kcr_log_level: lower is more severe. Above INFO the levels are logr's
 * verbosities: KCR_LOG_V(n) is V(n), so DEBUG is V(1) (zap's "debug") and TRACE
 * is V(2); any larger value is a valid, still more verbose level (zap's
 * --zap-log-level=N enables V(0) to V(N)).
 */
typedef enum kcr_log_level {
  KCR_LOG_ERROR = 0,
  KCR_LOG_WARN = 1,
  KCR_LOG_INFO = 2,
  KCR_LOG_DEBUG = 3,
  KCR_LOG_TRACE = 4
} kcr_log_level;

/* KCR_LOG_V(n) is the level of logr's V(n) (n >= 0). */
#define KCR_LOG_V(n) ((kcr_log_level)(KCR_LOG_INFO + (n)))

/* controller-runtime's keys. */
#define KCR_LOG_KEY_CONTROLLER "controller"
#define KCR_LOG_KEY_CONTROLLER_GROUP "controllerGroup"
#define KCR_LOG_KEY_CONTROLLER_KIND "controllerKind"
#define KCR_LOG_KEY_NAMESPACE "namespace"
#define KCR_LOG_KEY_NAME "name"
#define KCR_LOG_KEY_RECONCILE_ID "reconcileID"
#define KCR_LOG_KEY_ERROR "error"
/* Set on every line written while the thread has a current span (kcr/trace.h). */
#define KCR_LOG_KEY_TRACE_ID "trace_id"
#define KCR_LOG_KEY_SPAN_ID "span_id"

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

/* kcr_log_record: one line. Everything borrowed. */
typedef struct kcr_log_record {
  kcr_time_t ts;
  kcr_log_level level;
  const char *logger; /* the component; NULL or "": left out */
  const char *msg;
  const kcr_log_field *fields;
  size_t nfields;
} kcr_log_record;

/*
 * kcr_log_cb receives one line (rec and all it points to borrowed for the call).
 * It runs on the thread that logged, the I/O loop included, so it must be quick
 * and must not call back into kcr.
 */
typedef void (*kcr_log_cb)(const kcr_log_record *rec, void *data);

/*
 * kcr_log_set_handler replaces the handler (NULL restores the built-in sink).
 * Call it before starting kcr's threads; it is not synchronised with lines
 * being logged.
 */
KCR_EXTERN void kcr_log_set_handler(kcr_log_cb cb, void *data);

/*
 * kcr_log_set_level drops lines less severe than level (default KCR_LOG_INFO).
 * Any thread.
 */
KCR_EXTERN void kcr_log_set_level(kcr_log_level level);

/* kcr_log_enabled tells whether a line at level would be written. Any thread. */
KCR_EXTERN bool kcr_log_enabled(kcr_log_level level);

/*
 * kcr_log_level_name returns "error", "warn", "info", "debug" or "trace" (also
 * for levels more verbose than TRACE), "unknown" for a negative level. Static.
 */
KCR_EXTERN const char *kcr_log_level_name(kcr_log_level level);

/*
 * kcr_log writes one line without fields, the message printf-formatted (cut at
 * 2 KiB), if level passes the threshold. Any thread.
 */
KCR_EXTERN void kcr_log(kcr_log_level level, const char *component, const char *fmt, ...)
    KCR_PRINTF(3, 4);

/*
 * kcr_log_fields writes one line with fields (borrowed). Any thread; with the
 * built-in sink, lines from several threads never interleave.
 */
KCR_EXTERN void kcr_log_fields(kcr_log_level level, const char *component, const char *msg,
                               const kcr_log_field *fields, size_t nfields);

/*
 * kcr_log_kv writes one line with string key/value pairs given as a
 * NULL-terminated argument list: kcr_log_kv(KCR_LOG_INFO, "app", "Reconciling",
 * "namespace", ns, "name", name, NULL). At most 32 pairs. Any thread.
 */
KCR_EXTERN void kcr_log_kv(kcr_log_level level, const char *component, const char *msg, ...);

/* ---- the built-in sink ---- */

/* kcr_log_format: the encoders. */
typedef enum kcr_log_format {
  KCR_LOG_FORMAT_JSON = 0,   /* {"level":"info","ts":"...","logger":"...","msg":"...",...} */
  KCR_LOG_FORMAT_CONSOLE = 1 /* ts<TAB>INFO<TAB>logger<TAB>msg<TAB>{"k": "v"} */
} kcr_log_format;

/* kcr_log_time_encoding: how "ts" is written (zap's --zap-time-encoding). */
typedef enum kcr_log_time_encoding {
  KCR_LOG_TIME_RFC3339_MICRO = 0, /* "2006-01-02T15:04:05.000000Z" (kcr's default) */
  KCR_LOG_TIME_EPOCH = 1,         /* 1136214245.000001 (float seconds) */
  KCR_LOG_TIME_MILLIS = 2,        /* 1136214245000.001 (float milliseconds) */
  KCR_LOG_TIME_NANO = 3,          /* 1136214245000001000 (integer nanoseconds) */
  KCR_LOG_TIME_ISO8601 = 4,       /* "2006-01-02T15:04:05.000Z" */
  KCR_LOG_TIME_RFC3339 = 5,       /* "2006-01-02T15:04:05Z" */
  KCR_LOG_TIME_RFC3339NANO = 6    /* "2006-01-02T15:04:05.999999999Z", trailing zeros cut */
} kcr_log_time_encoding;

/*
 * kcr_log_encode appends rec as one line (ending in "\n") to out, with the time
 * encoded as time_encoding. Strings are JSON-escaped; credentials are redacted
 * (above). Returns 0, KCR_ETOOBIG or KCR_ENOMEM (out is freed then, as kcr_buf
 * does). Any thread.
 */
KCR_EXTERN int kcr_log_encode(kcr_log_format format, kcr_log_time_encoding time_encoding,
                              const kcr_log_record *rec, kcr_buf_t *out);

/* kcr_log_key_is_sensitive tells whether a key's value is redacted. */
KCR_EXTERN bool kcr_log_key_is_sensitive(const char *key);

/* kcr_log_write_cb receives one encoded line (borrowed, with its "\n"). */
typedef void (*kcr_log_write_cb)(const char *line, size_t len, void *data);

/*
 * kcr_log_options: zero-initialise, then set what you need.
 *   format            JSON (0) or console.
 *   time_encoding     how "ts" is written (0: RFC 3339 with microseconds).
 *   level             lines less severe are dropped (0 is KCR_LOG_ERROR; set
 *                     KCR_LOG_INFO for the usual default).
 *   stacktrace        when true, lines at stacktrace_level or more severe carry a
 *                     "stacktrace" field (the caller's frames, one per line, as
 *                     glibc's backtrace_symbols writes them; left out where the
 *                     C library has no backtrace).
 *   fd                where lines go when write is NULL; 0 means stderr (2).
 *   write, write_data a sink instead of fd (tests, log shippers).
 *   clock             timestamps; NULL: the system clock (borrowed).
 */
typedef struct kcr_log_options {
  kcr_log_format format;
  kcr_log_time_encoding time_encoding;
  kcr_log_level level;
  bool stacktrace;
  kcr_log_level stacktrace_level;
  int fd;
  kcr_log_write_cb write;
  void *write_data;
  kcr_clock_t *clock;
} kcr_log_options;

/*
 * kcr_log_configure sets up the built-in sink from opts (NULL: JSON, INFO,
 * stderr), makes it the handler and sets the threshold to opts->level. Call it
 * at start-up, before kcr's threads run (like kcr_log_set_handler, it is not
 * synchronised with lines being written). Before any call, the sink writes
 * console lines at INFO to stderr.
 */
KCR_EXTERN void kcr_log_configure(const kcr_log_options *opts);

#ifdef __cplusplus
}
#endif

#endif /* KCR_LOG_H */
