/* SPDX-License-Identifier: MIT */
/*
 * otlp.c: the OTLP/HTTP JSON encoder and the batching exporter (kcr/otlp.h).
 *
 * DESIGN. The sink (on_span, any thread that ends a span) copies the span
 * into a ring of max_queue fixed slots under `mu` and signals the exporter
 * thread when a batch is full; it never allocates and never waits for
 * anything but that mutex. The exporter thread takes at most max_batch spans
 * into its own array, encodes them off the loop, and posts one
 * libcurl transfer to the loop, waiting for its done callback; one request
 * at a time, so a slow collector backs spans up into the ring, which then
 * drops new ones (counted). The exporter's thread starts no span of its own
 * (kcr_trace_suppress), so exporting never feeds itself.
 *
 * RETRIES. Only what OTLP/HTTP calls retryable is retried: an answer of 429,
 * 502, 503 or 504. The batch stays in the thread's array and is sent again,
 * at most MAX_ATTEMPTS times in all, after the Retry-After the collector gave
 * (capped at KCR__OTLP_RETRY_AFTER_MAX_NS) or else after the exporter's
 * backoff. The thread waits on `cond`, not holding `mu`, so spans keep going
 * into the ring meanwhile and a full ring drops them as ever; a stop ends the
 * wait at once and drops the batch, so a throttling collector delays a
 * shutdown no more than a gone one. A connection error or timeout is not
 * retried: a collector that is gone would hold every batch for nothing.
 *
 * A layer of its own (otlp), just above the loop: the exporter needs the
 * loop's curl transfers, the metrics registry and util's span core, and
 * nothing of the REST client, which it must not go through anyway (the
 * client starts a span per request). Spans stay in util, since the logger
 * stamps each record with the current span, and only the manager, above,
 * creates an exporter and sets it as the sink.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcr/backoff.h"
#include "kcr/clock.h"
#include "kcr/log.h"
#include "kcr/otlp.h"
#include "loop/loop_internal.h"
#include "otlp/otlp_internal.h"
#include "util/alloc.h"

#define DEFAULT_QUEUE 2048
#define DEFAULT_BATCH 512
#define DEFAULT_INTERVAL (5 * KCR_NSEC_PER_SEC)
#define DEFAULT_TIMEOUT (10 * KCR_NSEC_PER_SEC)
#define MAX_BODY (64u << 20)
/* A retryable batch is sent at most this often; with no Retry-After the waits
 * between are the backoff's: 1 s doubling (plus up to 20 %), capped like a
 * Retry-After, so 1 + 2 + 4 + 8 s at most before the batch is dropped. */
#define MAX_ATTEMPTS 5
#define RETRY_BACKOFF                                                                              \
  ((kcr_backoff_config){KCR_NSEC_PER_SEC, KCR__OTLP_RETRY_AFTER_MAX_NS, 2.0, 0.2, 0})

/* ---- encoding ----
 *
 * Written straight into the buffer rather than through a jansson tree: a
 * batch is hundreds of spans of a dozen small objects each, and building and
 * freeing the tree cost about 65 us per span (measured); this costs a few. */

/* utf8_len: the length of the valid UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_len(const unsigned char *s) {
  if (s[0] < 0x80)
    return 1;
  if (s[0] >= 0xc2 && s[0] <= 0xdf)
    return (s[1] & 0xc0) == 0x80 ? 2 : 0;
  if (s[0] >= 0xe0 && s[0] <= 0xef) {
    if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
      return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f))
      return 0; /* overlong, or a surrogate */
    return 3;
  }
  if (s[0] >= 0xf0 && s[0] <= 0xf4) {
    if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
      return 0;
    if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
      return 0;
    return 4;
  }
  return 0;
}

/* put_str appends s as a JSON string; bytes that are not UTF-8 become '?'.
 * Runs of bytes that need nothing are appended at once. */
static int put_str(kcr_buf_t *b, const char *str) {
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  int rc = kcr_buf_appendc(b, '"');
  while (rc == 0 && *s) {
    const unsigned char *run = s;
    size_t n;
    while (*s >= 0x20 && *s != '"' && *s != '\\' && (n = utf8_len(s)) > 0)
      s += n;
    if (s > run)
      rc = kcr_buf_append(b, run, (size_t)(s - run));
    if (rc || !*s)
      break;
    if (*s == '"' || *s == '\\') {
      char e[2] = {'\\', (char)*s};
      rc = kcr_buf_append(b, e, 2);
    } else if (*s < 0x20) {
      rc = kcr_buf_appendf(b, "\\u%04x", *s);
    } else {
      rc = kcr_buf_appendc(b, '?'); /* not UTF-8 */
    }
    s++;
  }
  return rc ? rc : kcr_buf_appendc(b, '"');
}

static int put_kv_str(kcr_buf_t *b, bool comma, const char *key, const char *value) {
  int rc = kcr_buf_appends(b, comma ? ",{\"key\":" : "{\"key\":");
  if (rc == 0)
    rc = put_str(b, key);
  if (rc == 0)
    rc = kcr_buf_appends(b, ",\"value\":{\"stringValue\":");
  if (rc == 0)
    rc = put_str(b, value);
  return rc ? rc : kcr_buf_appends(b, "}}");
}

static int put_kv_int(kcr_buf_t *b, bool comma, const char *key, int64_t value) {
  int rc = kcr_buf_appends(b, comma ? ",{\"key\":" : "{\"key\":");
  if (rc == 0)
    rc = put_str(b, key);
  return rc ? rc : kcr_buf_appendf(b, ",\"value\":{\"intValue\":\"%lld\"}}", (long long)value);
}

static int put_span(kcr_buf_t *b, const kcr_span_data *s, bool comma) {
  char tid[KCR_TRACE_ID_HEX_BUFSIZE], sid[KCR_SPAN_ID_HEX_BUFSIZE], pid[KCR_SPAN_ID_HEX_BUFSIZE];
  static const uint8_t zero[8];
  int rc;
  kcr_trace_id_hex(s->ctx.trace_id, tid);
  kcr_span_id_hex(s->ctx.span_id, sid);
  rc = kcr_buf_appendf(b, "%s{\"traceId\":\"%s\",\"spanId\":\"%s\"", comma ? "," : "", tid, sid);
  if (rc == 0 && memcmp(s->parent_span_id, zero, 8) != 0) {
    kcr_span_id_hex(s->parent_span_id, pid);
    rc = kcr_buf_appendf(b, ",\"parentSpanId\":\"%s\"", pid);
  }
  if (rc == 0)
    rc = kcr_buf_appendf(b, ",\"flags\":%u,\"name\":", (unsigned)s->ctx.flags);
  if (rc == 0)
    rc = put_str(b, s->name);
  if (rc == 0)
    rc = kcr_buf_appendf(b,
                         ",\"kind\":%d,\"startTimeUnixNano\":\"%lld\",\"endTimeUnixNano\":\"%lld\","
                         "\"attributes\":[",
                         (int)s->kind, (long long)s->start_unix_ns, (long long)s->end_unix_ns);
  for (size_t i = 0; rc == 0 && i < s->nattrs && i < KCR_SPAN_MAX_ATTRS; i++) {
    const kcr_span_attr *a = &s->attrs[i];
    rc = a->type == KCR_SPAN_ATTR_INT ? put_kv_int(b, i > 0, a->key, a->i)
                                      : put_kv_str(b, i > 0, a->key, a->s);
  }
  if (rc == 0)
    rc = kcr_buf_appends(b, "],\"status\":{");
  if (rc == 0 && s->status != KCR_SPAN_STATUS_UNSET) {
    rc = kcr_buf_appendf(b, "\"code\":%d", (int)s->status);
    if (rc == 0 && s->status_message[0]) {
      rc = kcr_buf_appends(b, ",\"message\":");
      if (rc == 0)
        rc = put_str(b, s->status_message);
    }
  }
  return rc ? rc : kcr_buf_appends(b, "}}");
}

int kcr_otlp_encode(const kcr_span_data *spans, size_t n, const kcr_trace_options *opts,
                    kcr_buf_t *out) {
  const char *service = opts && opts->service_name[0] ? opts->service_name : "kcr";
  int rc = kcr_buf_appends(out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
  if (rc == 0)
    rc = put_kv_str(out, false, "service.name", service);
  for (size_t i = 0; rc == 0 && opts && i < opts->nresource && i < KCR_TRACE_MAX_RESOURCE_ATTRS;
       i++)
    if (strcmp(opts->resource_keys[i], "service.name") != 0)
      rc = put_kv_str(out, true, opts->resource_keys[i], opts->resource_values[i]);
  if (rc == 0)
    rc = kcr_buf_appends(out, "]},\"scopeSpans\":[{\"scope\":{\"name\":\"kcr\"},\"spans\":[");
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = put_span(out, &spans[i], i > 0);
  return rc ? rc : kcr_buf_appends(out, "]}]}]}");
}

/* ---- Retry-After ----
 *
 * Parsed by hand rather than with strptime (its day and month names follow
 * the locale) or curl_getdate (it takes far more than an HTTP-date). */

#define RETRY_AFTER_MAX_S (KCR__OTLP_RETRY_AFTER_MAX_NS / KCR_NSEC_PER_SEC)

static const char *const day_names[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
static const char *const day_names_long[7] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                              "Friday", "Saturday", "Sunday"};
static const char *const month_names[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* take_lit advances *p past lit when it starts there. */
static bool take_lit(const char **p, const char *lit) {
  size_t n = strlen(lit);
  if (strncmp(*p, lit, n) != 0)
    return false;
  *p += n;
  return true;
}

/* take_name advances *p past the first of names[0..n) that starts there and
 * returns its index, or -1 (none of names is a prefix of another). */
static int take_name(const char **p, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (take_lit(p, names[i]))
      return i;
  return -1;
}

/* take_num reads exactly ndigits digits at *p into *v. */
static bool take_num(const char **p, int ndigits, int *v) {
  *v = 0;
  for (int i = 0; i < ndigits; i++) {
    if (!isdigit((unsigned char)(*p)[i]))
      return false;
    *v = *v * 10 + ((*p)[i] - '0');
  }
  *p += ndigits;
  return true;
}

typedef struct http_date {
  int year, month, mday, hour, min, sec; /* month 0..11 */
} http_date_t;

/* take_clock reads time-of-day, 2DIGIT ":" 2DIGIT ":" 2DIGIT. */
static bool take_clock(const char **p, http_date_t *d) {
  return take_num(p, 2, &d->hour) && take_lit(p, ":") && take_num(p, 2, &d->min) &&
         take_lit(p, ":") && take_num(p, 2, &d->sec);
}

static bool leap_year(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* unix_seconds: d as seconds since the epoch; false for a date that is not
 * one (31 Nov, 29 Feb of a common year, 24:00:00). sec may be 60, a leap
 * second, which the grammar allows. */
static bool unix_seconds(const http_date_t *d, int64_t *out) {
  static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int64_t y = d->year - 1, days;
  if (d->month < 0 || d->mday < 1 ||
      d->mday > mdays[d->month] + (d->month == 1 && leap_year(d->year)) || d->hour > 23 ||
      d->min > 59 || d->sec > 60)
    return false;
  days = y * 365 + y / 4 - y / 100 + y / 400 - 719162; /* days from 1 Jan 1 to 1 Jan 1970 */
  for (int m = 0; m < d->month; m++)
    days += mdays[m] + (m == 1 && leap_year(d->year));
  days += d->mday - 1;
  *out = days * 86400 + (int64_t)d->hour * 3600 + (int64_t)d->min * 60 + d->sec;
  return true;
}

/* parse_http_date reads the three forms of RFC 9110 5.6.7; a two-digit year
 * (RFC 850) more than 50 years after now's is taken a century earlier. */
static bool parse_http_date(const char *s, int64_t now_s, int64_t *out) {
  http_date_t d = {0};
  const char *p = s;
  bool ok;
  if (take_name(&p, day_names, 7) >= 0 && take_lit(&p, ", ")) { /* Sun, 06 Nov 1994 08:49:37 GMT */
    ok = take_num(&p, 2, &d.mday) && take_lit(&p, " ") &&
         (d.month = take_name(&p, month_names, 12)) >= 0 && take_lit(&p, " ") &&
         take_num(&p, 4, &d.year) && take_lit(&p, " ") && take_clock(&p, &d) &&
         take_lit(&p, " GMT");
  } else if ((p = s, take_name(&p, day_names_long, 7) >= 0) && take_lit(&p, ", ")) {
    /* Sunday, 06-Nov-94 08:49:37 GMT */
    time_t now = (time_t)now_s;
    struct tm tm;
    ok = take_num(&p, 2, &d.mday) && take_lit(&p, "-") &&
         (d.month = take_name(&p, month_names, 12)) >= 0 && take_lit(&p, "-") &&
         take_num(&p, 2, &d.year) && take_lit(&p, " ") && take_clock(&p, &d) &&
         take_lit(&p, " GMT") && gmtime_r(&now, &tm) != NULL;
    if (ok) {
      int now_year = tm.tm_year + 1900;
      d.year += now_year - now_year % 100;
      if (d.year > now_year + 50)
        d.year -= 100;
    }
  } else if ((p = s, take_name(&p, day_names, 7) >= 0) && take_lit(&p, " ")) {
    /* Sun Nov  6 08:49:37 1994 */
    ok = (d.month = take_name(&p, month_names, 12)) >= 0 && take_lit(&p, " ") &&
         (take_lit(&p, " ") ? take_num(&p, 1, &d.mday) : take_num(&p, 2, &d.mday)) &&
         take_lit(&p, " ") && take_clock(&p, &d) && take_lit(&p, " ") && take_num(&p, 4, &d.year);
  } else {
    ok = false;
  }
  return ok && *p == '\0' && unix_seconds(&d, out);
}

static bool is_ows(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int64_t kcr__otlp_retry_after_ns(const char *value, kcr_time_t now) {
  const char *p = value, *end, *q;
  char date[40];
  int64_t secs = 0, ns;
  if (!p)
    return -1;
  while (is_ows(*p))
    p++;
  end = p + strlen(p);
  while (end > p && is_ows(end[-1]))
    end--;
  if (end == p)
    return -1;
  for (q = p; q < end && isdigit((unsigned char)*q); q++)
    if (secs <= RETRY_AFTER_MAX_S) /* stops growing past the cap: no overflow */
      secs = secs * 10 + (*q - '0');
  if (q == end) /* delta-seconds */
    return secs >= RETRY_AFTER_MAX_S ? KCR__OTLP_RETRY_AFTER_MAX_NS : secs * KCR_NSEC_PER_SEC;
  if ((size_t)(end - p) >= sizeof(date))
    return -1;
  memcpy(date, p, (size_t)(end - p));
  date[end - p] = '\0';
  if (!parse_http_date(date, now.sec, &secs))
    return -1;
  if (secs - now.sec > RETRY_AFTER_MAX_S)
    return KCR__OTLP_RETRY_AFTER_MAX_NS;
  ns = (secs - now.sec) * KCR_NSEC_PER_SEC - now.nsec;
  return ns > 0 ? ns : -1;
}

/* ---- the exporter ---- */

typedef struct xfer {
  kcr__transfer_t t; /* first member */
  kcr_otlp_exporter_t *e;
} xfer_t;

struct kcr_otlp_exporter {
  kcr_loop_t *loop;
  char *url;
  size_t max_queue, max_batch;
  int64_t interval_ns, timeout_ns;
  kcr_trace_options opts; /* resource attributes, copied at create */

  pthread_mutex_t mu;
  pthread_cond_t cond;  /* spans queued, flush asked, stopping, transfer done */
  kcr_span_data *ring;  /* protected by mu: max_queue slots */
  size_t head, count;   /* protected by mu */
  bool stopping;        /* protected by mu */
  uint64_t flush_asked; /* protected by mu: flush generation asked */
  uint64_t flush_done;  /* protected by mu: generation completed */
  bool xfer_done;       /* protected by mu */
  CURLcode xfer_result; /* protected by mu */

  kcr_span_data *batch;  /* exporter thread: max_batch slots */
  kcr_backoff_t backoff; /* exporter thread: between retries of a batch */
  pthread_t thread;

  atomic_uint_fast64_t exported, dropped_full, dropped_failed, requests, throttled;
  kcr_metric_child_t *m_exported, *m_dropped_full, *m_dropped_failed;
};

static void on_span(const kcr_span_data *s, void *data) {
  kcr_otlp_exporter_t *e = data;
  bool full;
  pthread_mutex_lock(&e->mu);
  full = e->count == e->max_queue;
  if (!full) {
    e->ring[(e->head + e->count) % e->max_queue] = *s;
    e->count++;
    if (e->count >= e->max_batch)
      pthread_cond_broadcast(&e->cond);
  }
  pthread_mutex_unlock(&e->mu);
  if (full) {
    atomic_fetch_add(&e->dropped_full, 1);
    kcr_metric_inc(e->m_dropped_full);
  }
}

static void on_xfer_done(kcr__transfer_t *t, CURLcode result) {
  xfer_t *x = (xfer_t *)(void *)t;
  kcr_otlp_exporter_t *e = x->e;
  pthread_mutex_lock(&e->mu);
  e->xfer_result = result;
  e->xfer_done = true;
  pthread_cond_broadcast(&e->cond);
  pthread_mutex_unlock(&e->mu);
}

static void on_loop_start(kcr_loop_t *loop, void *data) {
  xfer_t *x = data;
  if (kcr__loop_add_transfer(loop, &x->t) != 0)
    on_xfer_done(&x->t, CURLE_ABORTED_BY_CALLBACK);
}

static size_t on_discard(char *p, size_t size, size_t n, void *userp) {
  (void)p, (void)userp;
  return size * n;
}

typedef enum send_result { SEND_OK, SEND_FAILED, SEND_RETRY } send_result;

/* retryable: the answers OTLP/HTTP says to retry. */
static bool retryable(long code) {
  return code == 429 || code == 502 || code == 503 || code == 504;
}

/* send_batch posts body and waits for the answer: SEND_OK for a 2xx,
 * SEND_RETRY for a retryable one, with *wait_ns the Retry-After it carried
 * (-1: none that counts), else SEND_FAILED. */
static send_result send_batch(kcr_otlp_exporter_t *e, const char *body, size_t len,
                              int64_t *wait_ns) {
  struct curl_slist *headers = NULL, *h;
  struct curl_header *ra;
  xfer_t x;
  long code = 0;
  bool ok = false;
  send_result res = SEND_FAILED;
  *wait_ns = -1;
  memset(&x, 0, sizeof(x));
  x.e = e;
  x.t.done = on_xfer_done;
  x.t.nudge_when_quiet = 1;
  if (!(x.t.easy = curl_easy_init()))
    return SEND_FAILED;
  h = curl_slist_append(headers, "Content-Type: application/json");
  if (h)
    headers = h;
  if (h && (h = curl_slist_append(headers, "Expect:")) != NULL)
    headers = h;
  curl_easy_setopt(x.t.easy, CURLOPT_URL, e->url);
  curl_easy_setopt(x.t.easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(x.t.easy, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(x.t.easy, CURLOPT_PROXY, "");
  curl_easy_setopt(x.t.easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(x.t.easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl_easy_setopt(x.t.easy, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(x.t.easy, CURLOPT_WRITEFUNCTION, on_discard);
  curl_easy_setopt(x.t.easy, CURLOPT_TIMEOUT_MS, (long)(e->timeout_ns / KCR_NSEC_PER_MSEC));
  curl_easy_setopt(x.t.easy, CURLOPT_CONNECTTIMEOUT_MS, (long)(e->timeout_ns / KCR_NSEC_PER_MSEC));
  pthread_mutex_lock(&e->mu);
  e->xfer_done = false;
  pthread_mutex_unlock(&e->mu);
  atomic_fetch_add(&e->requests, 1);
  if (kcr_loop_post(e->loop, on_loop_start, &x) == 0) {
    pthread_mutex_lock(&e->mu);
    while (!e->xfer_done)
      pthread_cond_wait(&e->cond, &e->mu);
    ok = e->xfer_result == CURLE_OK;
    pthread_mutex_unlock(&e->mu);
    if (ok)
      curl_easy_getinfo(x.t.easy, CURLINFO_RESPONSE_CODE, &code);
  }
  if (code >= 200 && code <= 299) {
    res = SEND_OK;
  } else if (retryable(code)) {
    res = SEND_RETRY;
    /* the last response's, should a redirect have come first */
    if (curl_easy_header(x.t.easy, "Retry-After", 0, CURLH_HEADER, -1, &ra) == CURLHE_OK)
      *wait_ns = kcr__otlp_retry_after_ns(ra->value, kcr_clock_wall(kcr_clock_system()));
  }
  curl_easy_cleanup(x.t.easy);
  curl_slist_free_all(headers);
  return res;
}

/* hold_off waits ns without holding mu, so spans keep going into the ring
 * (and a full ring drops them); false when the exporter is stopping, at once:
 * the batch is then given up rather than the shutdown delayed. */
static bool hold_off(kcr_otlp_exporter_t *e, int64_t ns) {
  kcr_clock_t *clk = kcr_clock_system();
  int64_t deadline = kcr_clock_now(clk) + ns;
  bool stopping;
  pthread_mutex_lock(&e->mu);
  while (!e->stopping && kcr_clock_now(clk) < deadline)
    kcr_clock_timedwait(clk, &e->cond, &e->mu, deadline);
  stopping = e->stopping;
  pthread_mutex_unlock(&e->mu);
  return !stopping;
}

/* deliver sends body until the collector takes it, refuses it for good, or
 * MAX_ATTEMPTS retryable answers have come back; true when it took it. */
static bool deliver(kcr_otlp_exporter_t *e, const char *body, size_t len) {
  kcr_backoff_reset(&e->backoff);
  for (int attempt = 1;; attempt++) {
    int64_t wait_ns;
    send_result res = send_batch(e, body, len, &wait_ns);
    if (res != SEND_RETRY)
      return res == SEND_OK;
    atomic_fetch_add(&e->throttled, 1);
    if (attempt == MAX_ATTEMPTS)
      return false;
    if (wait_ns < 0)
      wait_ns = kcr_backoff_next(&e->backoff);
    if (!hold_off(e, wait_ns))
      return false;
  }
}

/* export_some sends up to max_batch queued spans; returns how many it took
 * and sets *ok to whether they were delivered. */
static size_t export_some(kcr_otlp_exporter_t *e, bool *delivered) {
  kcr_buf_t body;
  size_t n;
  bool ok = false;
  pthread_mutex_lock(&e->mu);
  n = e->count < e->max_batch ? e->count : e->max_batch;
  for (size_t i = 0; i < n; i++)
    e->batch[i] = e->ring[(e->head + i) % e->max_queue];
  e->head = (e->head + n) % e->max_queue;
  e->count -= n;
  pthread_mutex_unlock(&e->mu);
  *delivered = true;
  if (!n)
    return 0;
  kcr_buf_init(&body, MAX_BODY);
  if (kcr_otlp_encode(e->batch, n, &e->opts, &body) == 0)
    ok = deliver(e, kcr_buf_cstr(&body), kcr_buf_len(&body));
  kcr_buf_free(&body);
  if (ok) {
    atomic_fetch_add(&e->exported, n);
    kcr_metric_add(e->m_exported, (double)n);
  } else {
    atomic_fetch_add(&e->dropped_failed, n);
    kcr_metric_add(e->m_dropped_failed, (double)n);
  }
  *delivered = ok;
  return n;
}

/* drop_rest counts what is still queued as undeliverable and empties the ring. */
static void drop_rest(kcr_otlp_exporter_t *e) {
  size_t n;
  pthread_mutex_lock(&e->mu);
  n = e->count;
  e->count = 0;
  pthread_mutex_unlock(&e->mu);
  if (n) {
    atomic_fetch_add(&e->dropped_failed, n);
    kcr_metric_add(e->m_dropped_failed, (double)n);
  }
}

static void *exporter_main(void *arg) {
  kcr_otlp_exporter_t *e = arg;
  kcr_clock_t *clk = kcr_clock_system();
  kcr_trace_suppress(true);
  pthread_mutex_lock(&e->mu);
  for (;;) {
    int64_t deadline = kcr_clock_now(clk) + e->interval_ns;
    uint64_t gen;
    bool stop, ok = true;
    while (!e->stopping && e->count < e->max_batch && e->flush_asked == e->flush_done &&
           kcr_clock_now(clk) < deadline)
      kcr_clock_timedwait(clk, &e->cond, &e->mu, deadline);
    stop = e->stopping;
    gen = e->flush_asked;
    pthread_mutex_unlock(&e->mu);
    /* A flush or the final pass sends everything queued now; a timer pass
     * or a full batch sends what is there, batch by batch. */
    while (export_some(e, &ok) == e->max_batch && ok && !stop)
      ;
    /* The final pass gives up at the first failure: a collector that is gone
     * delays a shutdown by one request timeout at most. */
    if (stop)
      while (ok && export_some(e, &ok) > 0)
        ;
    if (stop)
      drop_rest(e);
    pthread_mutex_lock(&e->mu);
    e->flush_done = gen;
    pthread_cond_broadcast(&e->cond);
    if (stop)
      break;
  }
  pthread_mutex_unlock(&e->mu);
  return NULL;
}

static char *traces_url(void) {
  kcr_trace_options o;
  kcr_buf_t b;
  char *s;
  kcr_trace_get_options(&o);
  if (o.traces_endpoint[0])
    return kcr__strdup(o.traces_endpoint);
  if (!o.endpoint[0])
    return NULL;
  size_t n = strlen(o.endpoint);
  while (n && o.endpoint[n - 1] == '/')
    n--;
  kcr_buf_init(&b, 4096);
  if (kcr_buf_append(&b, o.endpoint, n) != 0 || kcr_buf_appends(&b, "/v1/traces") != 0) {
    kcr_buf_free(&b);
    return NULL;
  }
  s = kcr_buf_take(&b, NULL);
  kcr_buf_free(&b);
  return s;
}

static int register_metrics(kcr_otlp_exporter_t *e, kcr_metrics_registry_t *r, kcr_error_t *err) {
  static const char *const reason[] = {"reason", NULL};
  kcr_metric_t *exported, *dropped;
  int rc = kcr_metrics_counter(r, "kcr_trace_spans_exported_total",
                               "Spans the OTLP collector accepted.", NULL, &exported, err);
  if (rc == 0)
    rc = kcr_metrics_counter(r, "kcr_trace_spans_dropped_total",
                             "Spans dropped: the export queue was full, or their batch could "
                             "not be delivered.",
                             reason, &dropped, err);
  if (rc)
    return rc;
  e->m_exported = kcr_metric_withv(exported, NULL);
  e->m_dropped_full = kcr_metric_withv(dropped, "queue_full", NULL);
  e->m_dropped_failed = kcr_metric_withv(dropped, "export_failed", NULL);
  return 0;
}

int kcr_otlp_exporter_create(const kcr_otlp_exporter_options *o, kcr_otlp_exporter_t **out,
                             kcr_error_t *err) {
  kcr_otlp_exporter_t *e;
  int rc;
  *out = NULL;
  if (!o || !o->loop)
    return kcr_error_set(err, KCR_EINVAL, "otlp: an exporter needs a loop");
  e = kcr__calloc(1, sizeof(*e));
  if (!e)
    return kcr_error_set(err, KCR_ENOMEM, "otlp: out of memory");
  e->loop = o->loop;
  kcr_trace_get_options(&e->opts);
  /* the options win, then the trace options (OTEL_BSP_*), then the defaults */
  e->max_queue = o->max_queue        ? o->max_queue
                 : e->opts.max_queue ? e->opts.max_queue
                                     : DEFAULT_QUEUE;
  e->max_batch = o->max_batch        ? o->max_batch
                 : e->opts.max_batch ? e->opts.max_batch
                                     : DEFAULT_BATCH;
  if (e->max_batch > e->max_queue)
    e->max_batch = e->max_queue;
  e->interval_ns = o->interval_ns > 0               ? o->interval_ns
                   : e->opts.export_interval_ns > 0 ? e->opts.export_interval_ns
                                                    : DEFAULT_INTERVAL;
  e->timeout_ns = o->timeout_ns > 0               ? o->timeout_ns
                  : e->opts.export_timeout_ns > 0 ? e->opts.export_timeout_ns
                                                  : DEFAULT_TIMEOUT;
  e->url = o->url ? kcr__strdup(o->url) : traces_url();
  if (!e->url) {
    kcr__free(e);
    return kcr_error_set(err, KCR_EINVAL, "otlp: no collector URL (is tracing configured?)");
  }
  e->ring = kcr__calloc(e->max_queue, sizeof(*e->ring));
  e->batch = kcr__calloc(e->max_batch, sizeof(*e->batch));
  if (!e->ring || !e->batch) {
    rc = kcr_error_set(err, KCR_ENOMEM, "otlp: out of memory");
    goto fail;
  }
  if (o->metrics && (rc = register_metrics(e, o->metrics, err)) != 0)
    goto fail;
  (void)kcr_backoff_init(&e->backoff, RETRY_BACKOFF, NULL, 0); /* a valid config: cannot fail */
  pthread_mutex_init(&e->mu, NULL);
  if (kcr_clock_cond_init(&e->cond) != 0) {
    pthread_mutex_destroy(&e->mu);
    rc = kcr_error_set(err, KCR_ESYS, "otlp: cannot make a condition variable");
    goto fail;
  }
  if (pthread_create(&e->thread, NULL, exporter_main, e) != 0) {
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->mu);
    rc = kcr_error_set(err, KCR_ESYS, "otlp: cannot start the exporter thread");
    goto fail;
  }
  kcr_trace_set_sink(on_span, e);
  *out = e;
  return 0;

fail:
  kcr__free(e->ring);
  kcr__free(e->batch);
  kcr__free(e->url);
  kcr__free(e);
  return rc;
}

int kcr_otlp_exporter_flush(kcr_otlp_exporter_t *e, int64_t timeout_ns) {
  kcr_clock_t *clk = kcr_clock_system();
  int64_t deadline = kcr_clock_now(clk) + timeout_ns;
  uint64_t gen;
  int rc = 0;
  pthread_mutex_lock(&e->mu);
  gen = ++e->flush_asked;
  pthread_cond_broadcast(&e->cond);
  while (e->flush_done < gen && !e->stopping) {
    if (kcr_clock_now(clk) >= deadline) {
      rc = KCR_ETIMEDOUT;
      break;
    }
    kcr_clock_timedwait(clk, &e->cond, &e->mu, deadline);
  }
  pthread_mutex_unlock(&e->mu);
  return rc;
}

void kcr_otlp_exporter_get_stats(kcr_otlp_exporter_t *e, kcr_otlp_exporter_stats *out) {
  memset(out, 0, sizeof(*out));
  out->exported = atomic_load(&e->exported);
  out->dropped_queue_full = atomic_load(&e->dropped_full);
  out->dropped_failed = atomic_load(&e->dropped_failed);
  out->requests = atomic_load(&e->requests);
  out->throttled = atomic_load(&e->throttled);
  pthread_mutex_lock(&e->mu);
  out->queued = e->count;
  pthread_mutex_unlock(&e->mu);
}

void kcr_otlp_exporter_destroy(kcr_otlp_exporter_t *e) {
  if (!e)
    return;
  kcr_trace_set_sink(NULL, NULL); /* returns once no thread is inside on_span */
  pthread_mutex_lock(&e->mu);
  e->stopping = true;
  pthread_cond_broadcast(&e->cond);
  pthread_mutex_unlock(&e->mu);
  pthread_join(e->thread, NULL);
  pthread_cond_destroy(&e->cond);
  pthread_mutex_destroy(&e->mu);
  kcr__free(e->ring);
  kcr__free(e->batch);
  kcr__free(e->url);
  kcr__free(e);
}
