/* SPDX-License-Identifier: MIT */
/*
 * log.c: kcr's logger (kcr/log.h): the threshold, the handler, the structured
 * encoders and the built-in sink.
 *
 * DESIGN. Every line, printf-style (kcr_log) or with fields (kcr_log_fields),
 * becomes one kcr_log_record and goes to one handler, so an application that
 * replaces the handler sees the library's fields too, and the built-in sink is
 * simply the default handler. The threshold is an atomic, so any thread filters
 * without a lock before formatting anything; kcr_log formats on the caller's
 * stack (2 KiB). Encoding is a pure function of a record into a bounded
 * kcr_buf_t, so tests check exact bytes. The sink is process-wide, set once at
 * start-up (kcr_log_configure); one mutex around the write keeps lines whole.
 *
 * Redaction lives in the encoder, the one place every line passes: by key (a
 * value is replaced when its key names a credential, whatever the caller
 * passed, so a reconciler that logs a Secret's fields by mistake leaks nothing)
 * and by content (the word after "Bearer ", and an Authorization header's
 * value, inside any string), so a request header pasted into a message, as
 * libcurl's trace does, leaks nothing either.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#if defined(__GLIBC__) && defined(__has_include)
#if __has_include(<execinfo.h>)
#include <execinfo.h>
#define HAVE_BACKTRACE 1
#endif
#endif

#include "kcr/log.h"
#include "kcr/trace.h"

#define LINE_MAX_BYTES ((size_t)64 * 1024)
#define MAX_PAIRS 32
#define MAX_FRAMES 32
#define REDACTED "[REDACTED]"

/* ---- redaction ---- */

static const char *const sensitive[] = {"token",         "password", "passwd",     "secret",
                                        "authorization", "bearer",   "credential", "cookie",
                                        "apikey",        "api_key",  "privatekey", "private_key"};

bool kcr_log_key_is_sensitive(const char *key) {
  char low[128];
  size_t i;
  if (!key)
    return false;
  for (i = 0; key[i] && i + 1 < sizeof(low); i++)
    low[i] = (char)tolower((unsigned char)key[i]);
  low[i] = '\0';
  for (i = 0; i < sizeof(sensitive) / sizeof(sensitive[0]); i++)
    if (strstr(low, sensitive[i]))
      return true;
  return false;
}

/*
 * secret_at tells whether s[0..] begins a credential inside free text, and
 * returns how many bytes of prefix to keep (the words "Bearer " or
 * "Authorization: ") before the secret that follows; 0 when it does not.
 * at_word says whether s is at a word start.
 */
static size_t secret_at(const char *s, bool at_word) {
  if (!at_word)
    return 0;
  if (strncasecmp(s, "bearer ", 7) == 0)
    return 7;
  if (strncasecmp(s, "authorization: ", 15) == 0 || strncasecmp(s, "authorization=", 14) == 0)
    return s[13] == '=' ? 14 : 15;
  return 0;
}

/* secret_len is the length of the secret at s: up to a quote, bracket, comma or line end. */
static size_t secret_len(const char *s, bool header_value) {
  size_t n = 0;
  /* An Authorization value runs to the end of the header ("Basic x", "Bearer x"). */
  while (s[n] && s[n] != '"' && s[n] != ']' && s[n] != ',' && s[n] != '\r' && s[n] != '\n' &&
         (header_value || s[n] != ' '))
    n++;
  return n;
}

/* ---- encoding ---- */

static int put_escaped(kcr_buf_t *b, unsigned char c) {
  switch (c) {
  case '"':
    return kcr_buf_append(b, "\\\"", 2);
  case '\\':
    return kcr_buf_append(b, "\\\\", 2);
  case '\n':
    return kcr_buf_append(b, "\\n", 2);
  case '\r':
    return kcr_buf_append(b, "\\r", 2);
  case '\t':
    return kcr_buf_append(b, "\\t", 2);
  default:
    if (c < 0x20)
      return kcr_buf_appendf(b, "\\u%04x", c);
    return kcr_buf_appendc(b, (char)c);
  }
}

/* put_json_string writes s quoted and escaped, credentials inside it redacted. */
static int put_json_string(kcr_buf_t *b, const char *s) {
  int rc = kcr_buf_appendc(b, '"');
  bool at_word = true;
  while (rc == 0 && *s) {
    size_t keep = secret_at(s, at_word);
    if (keep) {
      for (size_t i = 0; rc == 0 && i < keep; i++)
        rc = put_escaped(b, (unsigned char)s[i]);
      s += keep;
      if (rc == 0 && *s) {
        size_t n = secret_len(s, keep > 7);
        if (n > 0) {
          rc = kcr_buf_appends(b, REDACTED);
          s += n;
        }
      }
      at_word = false;
      continue;
    }
    at_word = !isalnum((unsigned char)*s) && *s != '-' && *s != '_';
    rc = put_escaped(b, (unsigned char)*s++);
  }
  if (rc == 0)
    rc = kcr_buf_appendc(b, '"');
  return rc;
}

static int put_value(kcr_buf_t *b, const kcr_log_field *f) {
  if (kcr_log_key_is_sensitive(f->key))
    return put_json_string(b, REDACTED);
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
  return (int)l > KCR_LOG_TRACE ? "TRACE" : "UNKNOWN";
}

/* trim_fraction cuts trailing zeros of a fraction of n digits; returns the digits left. */
static int trim_fraction(const char *digits, int n) {
  while (n > 0 && digits[n - 1] == '0')
    n--;
  return n;
}

/*
 * format_ts writes t as enc into buf; *quoted tells whether it is a string (JSON
 * quotes it) or a number.
 */
static void format_ts(kcr_time_t t, kcr_log_time_encoding enc, char *buf, size_t size,
                      bool *quoted) {
  char frac[16];
  int n;
  *quoted = false;
  switch (enc) {
  case KCR_LOG_TIME_EPOCH:
    snprintf(frac, sizeof(frac), "%09" PRId32, t.nsec);
    n = trim_fraction(frac, 9);
    snprintf(buf, size, "%" PRId64 "%s%.*s", t.sec, n ? "." : "", n, frac);
    return;
  case KCR_LOG_TIME_MILLIS:
    snprintf(frac, sizeof(frac), "%06" PRId32, t.nsec % 1000000);
    n = trim_fraction(frac, 6);
    snprintf(buf, size, "%" PRId64 "%s%.*s", t.sec * 1000 + t.nsec / 1000000, n ? "." : "", n,
             frac);
    return;
  case KCR_LOG_TIME_NANO:
    snprintf(buf, size, "%" PRId64, t.sec * KCR_NSEC_PER_SEC + t.nsec);
    return;
  case KCR_LOG_TIME_ISO8601:
  case KCR_LOG_TIME_RFC3339:
  case KCR_LOG_TIME_RFC3339NANO:
  case KCR_LOG_TIME_RFC3339_MICRO:
    break;
  }
  *quoted = true;
  if (enc == KCR_LOG_TIME_RFC3339 || enc == KCR_LOG_TIME_ISO8601) {
    if (kcr_time_format(t, KCR_TIME_SECONDS, buf, size) < 0)
      goto bad;
    if (enc == KCR_LOG_TIME_ISO8601) {
      size_t len = strlen(buf); /* "...05Z" -> "...05.000Z" */
      if (len + 4 < size)
        snprintf(buf + len - 1, size - (len - 1), ".%03dZ", (int)(t.nsec / 1000000));
    }
    return;
  }
  if (enc == KCR_LOG_TIME_RFC3339NANO) {
    char *dot;
    if (kcr_time_format(t, KCR_TIME_NANO, buf, size) < 0)
      goto bad;
    dot = strchr(buf, '.');
    if (dot) {
      n = trim_fraction(dot + 1, 9);
      snprintf(dot + (n ? n + 1 : 0), size - (size_t)(dot - buf), "Z");
    }
    return;
  }
  if (kcr_time_format(t, KCR_TIME_MICRO, buf, size) >= 0 || size == 0)
    return;
bad:
  snprintf(buf, size, "0000-00-00T00:00:00Z");
}

int kcr_log_encode(kcr_log_format format, kcr_log_time_encoding time_encoding,
                   const kcr_log_record *rec, kcr_buf_t *out) {
  char ts[KCR_TIME_BUFSIZE];
  bool quoted;
  const char *sep;
  int rc;
  format_ts(rec->ts, time_encoding, ts, sizeof(ts), &quoted);
  if (format == KCR_LOG_FORMAT_CONSOLE) {
    rc = kcr_buf_appendf(out, "%s\t%s\t", ts, upper_level(rec->level));
    if (rc == 0 && rec->logger && *rec->logger)
      rc = kcr_buf_appendf(out, "%s\t", rec->logger);
    /* the console message is not JSON: write it bare, but redacted and escaped */
    if (rc == 0) {
      kcr_buf_t m;
      kcr_buf_init(&m, LINE_MAX_BYTES);
      rc = put_json_string(&m, rec->msg ? rec->msg : "");
      if (rc == 0)
        rc = kcr_buf_append(out, kcr_buf_cstr(&m) + 1, kcr_buf_len(&m) - 2);
      kcr_buf_free(&m);
    }
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
    rc = kcr_buf_appendf(out,
                         quoted ? "{\"level\":\"%s\",\"ts\":\"%s\"" : "{\"level\":\"%s\",\"ts\":%s",
                         kcr_log_level_name(rec->level), ts);
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
  if (rc != 0)
    kcr_buf_free(out); /* also when the failure was in a buffer of its own (console msg) */
  return rc;
}

/* ---- the built-in sink ---- */

static kcr_log_format sink_format = KCR_LOG_FORMAT_CONSOLE;
static kcr_log_time_encoding sink_time;
static int sink_fd = 2;
static kcr_log_write_cb sink_write;
static void *sink_data;
static kcr_clock_t *sink_clock;
static bool sink_stacktrace;
static kcr_log_level sink_stacktrace_level;
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

/* stacktrace returns the caller's frames as one string (new, free with free), or NULL. */
static char *stacktrace(void) {
#ifdef HAVE_BACKTRACE
  void *frames[MAX_FRAMES];
  int n = backtrace(frames, MAX_FRAMES);
  char **names = n > 0 ? backtrace_symbols(frames, n) : NULL;
  kcr_buf_t b;
  char *s;
  if (!names)
    return NULL;
  kcr_buf_init(&b, (size_t)16 * 1024);
  /* frames 0..2 are this function, on_sink and kcr_log{,_fields} */
  for (int i = 3; i < n; i++)
    if (kcr_buf_appendf(&b, "%s%s", i > 3 ? "\n" : "", names[i]) != 0)
      break;
  free(names); /* one block, from backtrace_symbols' malloc */
  s = kcr_buf_len(&b) ? kcr_buf_take(&b, NULL) : NULL;
  kcr_buf_free(&b);
  return s;
#else
  return NULL;
#endif
}

static void on_sink(const kcr_log_record *in, void *data) {
  kcr_log_field fields[MAX_PAIRS + 1];
  kcr_log_record rec = *in;
  char *trace = NULL;
  kcr_buf_t b;
  (void)data;
  if (sink_stacktrace && (int)rec.level <= (int)sink_stacktrace_level && rec.nfields <= MAX_PAIRS &&
      (trace = stacktrace()) != NULL) {
    if (rec.nfields)
      memcpy(fields, rec.fields, rec.nfields * sizeof(fields[0]));
    fields[rec.nfields] = KCR_LOG_STR("stacktrace", trace);
    rec.fields = fields;
    rec.nfields++;
  }
  kcr_buf_init(&b, LINE_MAX_BYTES);
  if (kcr_log_encode(sink_format, sink_time, &rec, &b) == 0) {
    emit(kcr_buf_cstr(&b), kcr_buf_len(&b));
  } else {
    /* out of memory or a huge line: say so without the fields */
    rec.nfields = 0;
    rec.msg = "(log line dropped: too large or out of memory)";
    kcr_buf_init(&b, LINE_MAX_BYTES);
    if (kcr_log_encode(sink_format, sink_time, &rec, &b) == 0)
      emit(kcr_buf_cstr(&b), kcr_buf_len(&b));
  }
  kcr_buf_free(&b);
  kcr_free(trace);
}

/* ---- the front: threshold and handler ---- */

static kcr_log_cb handler = on_sink;
static void *handler_data;
static atomic_int threshold = KCR_LOG_INFO;

void kcr_log_set_handler(kcr_log_cb cb, void *data) {
  handler = cb ? cb : on_sink;
  handler_data = cb ? data : NULL;
}

void kcr_log_set_level(kcr_log_level level) {
  atomic_store(&threshold, (int)level);
}

bool kcr_log_enabled(kcr_log_level level) {
  return (int)level <= atomic_load(&threshold);
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
  return (int)level > KCR_LOG_TRACE ? "trace" : "unknown";
}

void kcr_log_fields(kcr_log_level level, const char *component, const char *msg,
                    const kcr_log_field *fields, size_t nfields) {
  kcr_log_record rec;
  kcr_span_context span;
  kcr_log_field with_trace[MAX_PAIRS + 2];
  char tid[KCR_TRACE_ID_HEX_BUFSIZE], sid[KCR_SPAN_ID_HEX_BUFSIZE];
  if (!kcr_log_enabled(level))
    return;
  rec.ts = kcr_clock_wall(sink_clock ? sink_clock : kcr_clock_system());
  rec.level = level;
  rec.logger = component ? component : "kcr";
  rec.msg = msg ? msg : "";
  rec.fields = fields;
  rec.nfields = fields ? nfields : 0;
  /* A line written inside a span carries its ids (the keys OpenTelemetry's
   * log bridges use), so a log search can jump to the trace. */
  if (rec.nfields <= MAX_PAIRS && kcr_trace_current(&span)) {
    if (rec.nfields)
      memcpy(with_trace, rec.fields, rec.nfields * sizeof(with_trace[0]));
    kcr_trace_id_hex(span.trace_id, tid);
    kcr_span_id_hex(span.span_id, sid);
    with_trace[rec.nfields++] = KCR_LOG_STR(KCR_LOG_KEY_TRACE_ID, tid);
    with_trace[rec.nfields++] = KCR_LOG_STR(KCR_LOG_KEY_SPAN_ID, sid);
    rec.fields = with_trace;
  }
  handler(&rec, handler_data);
}

void kcr_log(kcr_log_level level, const char *component, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  if (!kcr_log_enabled(level))
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  kcr_log_fields(level, component, msg, NULL, 0);
}

void kcr_log_kv(kcr_log_level level, const char *component, const char *msg, ...) {
  kcr_log_field f[MAX_PAIRS];
  size_t n = 0;
  const char *k;
  va_list ap;
  if (!kcr_log_enabled(level))
    return;
  va_start(ap, msg);
  while (n < MAX_PAIRS && (k = va_arg(ap, const char *)) != NULL) {
    f[n] = KCR_LOG_STR(k, va_arg(ap, const char *));
    n++;
  }
  va_end(ap);
  kcr_log_fields(level, component, msg, f, n);
}

void kcr_log_configure(const kcr_log_options *o) {
  kcr_log_options d = {0};
  if (!o) {
    d.level = KCR_LOG_INFO;
    o = &d;
  }
  sink_format = o->format;
  sink_time = o->time_encoding;
  sink_fd = o->fd > 0 ? o->fd : 2;
  sink_write = o->write;
  sink_data = o->write_data;
  sink_clock = o->clock;
  sink_stacktrace = o->stacktrace;
  sink_stacktrace_level = o->stacktrace_level;
  kcr_log_set_level(o->level);
  kcr_log_set_handler(NULL, NULL);
}
