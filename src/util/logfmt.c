/* SPDX-License-Identifier: MIT */
/*
 * logfmt.c: the structured log encoders and sink (kcr/logging.h).
 *
 * DESIGN. Encoding is a pure function of a record into a bounded kcr_buf_t, so
 * tests check exact bytes. The sink is process-wide, set once at start-up
 * (kcr_logging_install) like kcr_log's handler; the level threshold is an
 * atomic so any thread filters without a lock, and one mutex around the write
 * keeps lines from interleaving. Redaction is by key: a value is replaced when
 * its key names a credential, whatever the caller passed, so a reconciler that
 * logs a Secret's fields by mistake leaks nothing. Library lines (kcr_log) come
 * through on_kcr_log with the component as the logger name.
 */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kcr/logging.h"

#define LINE_MAX_BYTES ((size_t)64 * 1024)
#define MAX_PAIRS 32

static const char *const sensitive[] = {"token",         "password", "passwd",     "secret",
                                        "authorization", "bearer",   "credential", "cookie",
                                        "apikey",        "api_key",  "privatekey", "private_key"};

int kcr_log_key_is_sensitive(const char *key) {
  char low[128];
  size_t i;
  if (!key)
    return 0;
  for (i = 0; key[i] && i + 1 < sizeof(low); i++)
    low[i] = (char)tolower((unsigned char)key[i]);
  low[i] = '\0';
  for (i = 0; i < sizeof(sensitive) / sizeof(sensitive[0]); i++)
    if (strstr(low, sensitive[i]))
      return 1;
  return 0;
}

static int put_json_string(kcr_buf_t *b, const char *s) {
  int rc = kcr_buf_appendc(b, '"');
  for (; rc == 0 && *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '"':
      rc = kcr_buf_append(b, "\\\"", 2);
      break;
    case '\\':
      rc = kcr_buf_append(b, "\\\\", 2);
      break;
    case '\n':
      rc = kcr_buf_append(b, "\\n", 2);
      break;
    case '\r':
      rc = kcr_buf_append(b, "\\r", 2);
      break;
    case '\t':
      rc = kcr_buf_append(b, "\\t", 2);
      break;
    default:
      if (c < 0x20)
        rc = kcr_buf_appendf(b, "\\u%04x", c);
      else
        rc = kcr_buf_appendc(b, (char)c);
    }
  }
  if (rc == 0)
    rc = kcr_buf_appendc(b, '"');
  return rc;
}

static int put_value(kcr_buf_t *b, const kcr_log_field *f) {
  if (kcr_log_key_is_sensitive(f->key))
    return put_json_string(b, "[REDACTED]");
  switch (f->type) {
  case KCR_LOG_FIELD_STRING:
    return f->s ? put_json_string(b, f->s) : kcr_buf_appends(b, "null");
  case KCR_LOG_FIELD_INT:
    return kcr_buf_appendf(b, "%lld", f->i);
  case KCR_LOG_FIELD_FLOAT:
    if (!isfinite(f->f))
      return put_json_string(b, isnan(f->f) ? "NaN" : (f->f > 0 ? "+Inf" : "-Inf"));
    return kcr_buf_appendf(b, "%.17g", f->f);
  case KCR_LOG_FIELD_BOOL:
    return kcr_buf_appends(b, f->i ? "true" : "false");
  }
  return KCR_EINVAL;
}

static const char *upper_level(kcr_log_level l) {
  switch (l) {
  case KCR_LOG_ERROR:
    return "ERROR";
  case KCR_LOG_WARN:
    return "WARN";
  case KCR_LOG_INFO:
    return "INFO";
  case KCR_LOG_DEBUG:
    return "DEBUG";
  case KCR_LOG_TRACE:
    return "TRACE";
  }
  return "UNKNOWN";
}

int kcr_log_encode(kcr_log_format format, const kcr_log_record *rec, kcr_buf_t *out) {
  char ts[KCR_TIME_BUFSIZE];
  const char *sep;
  int rc;
  if (kcr_time_format(rec->ts, KCR_TIME_MICRO, ts, sizeof(ts)) < 0)
    snprintf(ts, sizeof(ts), "0000-00-00T00:00:00.000000Z");
  if (format == KCR_LOG_FORMAT_CONSOLE) {
    rc = kcr_buf_appendf(out, "%s\t%s\t", ts, upper_level(rec->level));
    if (rc == 0 && rec->logger && *rec->logger)
      rc = kcr_buf_appendf(out, "%s\t", rec->logger);
    if (rc == 0)
      rc = kcr_buf_appends(out, rec->msg ? rec->msg : "");
    sep = "\t{";
    for (size_t i = 0; rc == 0 && i < rec->nfields; i++) {
      rc = kcr_buf_appends(out, sep);
      if (rc == 0)
        rc = put_json_string(out, rec->fields[i].key ? rec->fields[i].key : "");
      if (rc == 0)
        rc = kcr_buf_append(out, ": ", 2);
      if (rc == 0)
        rc = put_value(out, &rec->fields[i]);
      sep = ", ";
    }
    if (rc == 0 && rec->nfields)
      rc = kcr_buf_appendc(out, '}');
  } else {
    rc =
        kcr_buf_appendf(out, "{\"level\":\"%s\",\"ts\":\"%s\"", kcr_log_level_name(rec->level), ts);
    if (rc == 0 && rec->logger && *rec->logger) {
      rc = kcr_buf_appends(out, ",\"logger\":");
      if (rc == 0)
        rc = put_json_string(out, rec->logger);
    }
    if (rc == 0)
      rc = kcr_buf_appends(out, ",\"msg\":");
    if (rc == 0)
      rc = put_json_string(out, rec->msg ? rec->msg : "");
    for (size_t i = 0; rc == 0 && i < rec->nfields; i++) {
      rc = kcr_buf_appendc(out, ',');
      if (rc == 0)
        rc = put_json_string(out, rec->fields[i].key ? rec->fields[i].key : "");
      if (rc == 0)
        rc = kcr_buf_appendc(out, ':');
      if (rc == 0)
        rc = put_value(out, &rec->fields[i]);
    }
    if (rc == 0)
      rc = kcr_buf_appendc(out, '}');
  }
  if (rc == 0)
    rc = kcr_buf_appendc(out, '\n');
  return rc;
}

/* ---- the sink ---- */

static kcr_log_format sink_format;
static int sink_fd = 2;
static kcr_log_write_cb sink_write;
static void *sink_data;
static kcr_clock_t *sink_clock;
static atomic_int sink_level = KCR_LOG_INFO;
static pthread_mutex_t sink_mu = PTHREAD_MUTEX_INITIALIZER;

static void emit(const char *line, size_t len) {
  pthread_mutex_lock(&sink_mu);
  if (sink_write) {
    sink_write(line, len, sink_data);
  } else {
    while (len > 0) {
      ssize_t n = write(sink_fd, line, len);
      if (n <= 0)
        break;
      line += n;
      len -= (size_t)n;
    }
  }
  pthread_mutex_unlock(&sink_mu);
}

void kcr_log_fields(kcr_log_level level, const char *logger, const char *msg,
                    const kcr_log_field *fields, size_t nfields) {
  kcr_log_record rec;
  kcr_buf_t b;
  if ((int)level > atomic_load(&sink_level))
    return;
  rec.ts = kcr_clock_wall(sink_clock ? sink_clock : kcr_clock_system());
  rec.level = level;
  rec.logger = logger;
  rec.msg = msg;
  rec.fields = fields;
  rec.nfields = nfields;
  kcr_buf_init(&b, LINE_MAX_BYTES);
  if (kcr_log_encode(sink_format, &rec, &b) == 0) {
    emit(kcr_buf_cstr(&b), kcr_buf_len(&b));
  } else {
    /* out of memory or a huge line: say so without the fields */
    rec.nfields = 0;
    rec.msg = "(log line dropped: too large or out of memory)";
    kcr_buf_init(&b, LINE_MAX_BYTES);
    if (kcr_log_encode(sink_format, &rec, &b) == 0)
      emit(kcr_buf_cstr(&b), kcr_buf_len(&b));
  }
  kcr_buf_free(&b);
}

void kcr_logf(kcr_log_level level, const char *logger, const char *msg, ...) {
  kcr_log_field f[MAX_PAIRS];
  size_t n = 0;
  const char *k;
  va_list ap;
  if ((int)level > atomic_load(&sink_level))
    return;
  va_start(ap, msg);
  while (n < MAX_PAIRS && (k = va_arg(ap, const char *)) != NULL) {
    const char *v = va_arg(ap, const char *);
    f[n].key = k;
    f[n].type = KCR_LOG_FIELD_STRING;
    f[n].s = v;
    f[n].i = 0;
    f[n].f = 0.0;
    n++;
  }
  va_end(ap);
  kcr_log_fields(level, logger, msg, f, n);
}

static void on_kcr_log(kcr_log_level level, const char *component, const char *msg, void *data) {
  (void)data;
  kcr_log_fields(level, component, msg, NULL, 0);
}

void kcr_logging_install(const kcr_logging_options *o) {
  kcr_logging_options d = {0};
  if (!o) {
    d.level = KCR_LOG_INFO;
    o = &d;
  }
  sink_format = o->format;
  sink_fd = o->fd > 0 ? o->fd : 2;
  sink_write = o->write;
  sink_data = o->write_data;
  sink_clock = o->clock;
  atomic_store(&sink_level, (int)o->level);
  kcr_log_set_level(o->level);
  kcr_log_set_handler(on_kcr_log, NULL);
}
