/* SPDX-License-Identifier: MIT */
/*
 * trace.c: the span core (kcr/trace.h): ids, the W3C traceparent, the
 * sampler, the per-thread current span, and handing ended spans to a sink.
 *
 * DESIGN. Nothing here knows about HTTP or OTLP: the exporter (the otlp
 * layer, src/otlp/otlp.c) is a sink set from above, so util stays at the
 * bottom of the layers. The per-thread current span is a plain thread-local pointer:
 * a span is started and ended on one thread, and its parent pointer restores
 * the previous current span at the end, so nesting needs no stack of its own.
 * Ids come from a per-thread generator seeded from the kernel (no lock).
 * The configuration is written at start-up and read after one atomic load
 * of `enabled` (release/acquire), as kcr_trace_configure documents.
 * trace.c never logs: log.c calls kcr_trace_current, and the other direction
 * would be a circle.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kcr/clock.h"
#include "kcr/error.h"
#include "kcr/rand.h"
#include "kcr/trace.h"
#include "util/alloc.h"

struct kcr_span {
  kcr_span_data d;
  struct kcr_span *parent; /* the thread's current span before this one */
  bool sampled;
};

static atomic_bool g_enabled;
static kcr_trace_options g_opts; /* written by kcr_trace_configure only */

static pthread_rwlock_t g_sink_lock = PTHREAD_RWLOCK_INITIALIZER;
static kcr_trace_sink_cb g_sink; /* protected by g_sink_lock */
static void *g_sink_data;        /* protected by g_sink_lock */

static _Thread_local kcr_span_t *t_current;
static _Thread_local bool t_suppressed;
static _Thread_local uint64_t t_rand;

/* ---- ids and traceparent ---- */

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1; /* uppercase is invalid in a traceparent */
}

static int read_hex(const char *s, uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return -1;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

static void write_hex(const uint8_t *in, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static bool all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i])
      return false;
  return true;
}

bool kcr_span_context_valid(const kcr_span_context *ctx) {
  return ctx && !all_zero(ctx->trace_id, 16) && !all_zero(ctx->span_id, 8);
}

void kcr_trace_id_hex(const uint8_t id[16], char out[KCR_TRACE_ID_HEX_BUFSIZE]) {
  write_hex(id, 16, out);
}

void kcr_span_id_hex(const uint8_t id[8], char out[KCR_SPAN_ID_HEX_BUFSIZE]) {
  write_hex(id, 8, out);
}

int kcr_traceparent_parse(const char *s, size_t len, kcr_span_context *out) {
  kcr_span_context c;
  uint8_t version;
  if (!s || !out)
    return KCR_EINVAL;
  while (len && (*s == ' ' || *s == '\t'))
    s++, len--;
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
    len--;
  /* vv-<32>-<16>-ff: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 */
  if (len < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-')
    return KCR_EINVAL;
  memset(&c, 0, sizeof(c));
  if (read_hex(s, &version, 1) != 0 || version == 0xff)
    return KCR_EINVAL;
  if (version == 0 && len != 55)
    return KCR_EINVAL;
  if (version != 0 && len > 55 && s[55] != '-')
    return KCR_EINVAL;
  if (read_hex(s + 3, c.trace_id, 16) != 0 || read_hex(s + 36, c.span_id, 8) != 0 ||
      read_hex(s + 53, &c.flags, 1) != 0)
    return KCR_EINVAL;
  if (!kcr_span_context_valid(&c))
    return KCR_EINVAL;
  c.remote = true;
  *out = c;
  return 0;
}

int kcr_traceparent_format(const kcr_span_context *ctx, char out[KCR_TRACEPARENT_BUFSIZE]) {
  char tid[KCR_TRACE_ID_HEX_BUFSIZE], sid[KCR_SPAN_ID_HEX_BUFSIZE];
  if (!kcr_span_context_valid(ctx)) {
    out[0] = '\0';
    return KCR_EINVAL;
  }
  kcr_trace_id_hex(ctx->trace_id, tid);
  kcr_span_id_hex(ctx->span_id, sid);
  snprintf(out, KCR_TRACEPARENT_BUFSIZE, "00-%s-%s-%02x", tid, sid, ctx->flags);
  return 0;
}

static void random_bytes(uint8_t *p, size_t n) {
  do {
    for (size_t i = 0; i < n; i += 8) {
      uint64_t r;
      if (!t_rand)
        t_rand = kcr_rand_seed();
      r = kcr_rand_next(&t_rand);
      for (size_t j = 0; j < 8 && i + j < n; j++)
        p[i + j] = (uint8_t)(r >> (8 * j));
    }
  } while (all_zero(p, n));
}

/* ---- configuration ---- */

static bool env_true(const char *v) {
  return v && strcasecmp(v, "true") == 0;
}

static int sampler_from_name(const char *v, kcr_trace_sampler *out) {
  static const struct {
    const char *name;
    kcr_trace_sampler s;
  } names[] = {
      {"always_on", KCR_SAMPLER_ALWAYS_ON},
      {"always_off", KCR_SAMPLER_ALWAYS_OFF},
      {"traceidratio", KCR_SAMPLER_TRACEIDRATIO},
      {"parentbased_always_on", KCR_SAMPLER_PARENTBASED_ALWAYS_ON},
      {"parentbased_always_off", KCR_SAMPLER_PARENTBASED_ALWAYS_OFF},
      {"parentbased_traceidratio", KCR_SAMPLER_PARENTBASED_TRACEIDRATIO},
  };
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (strcmp(v, names[i].name) == 0) {
      *out = names[i].s;
      return 0;
    }
  return KCR_EINVAL;
}

/* pct_decode copies n bytes of in into out (size), decoding %XX, trimming spaces. */
static void pct_decode(const char *in, size_t n, char *out, size_t size) {
  size_t o = 0;
  while (n && isspace((unsigned char)*in))
    in++, n--;
  while (n && isspace((unsigned char)in[n - 1]))
    n--;
  for (size_t i = 0; i < n && o + 1 < size; i++) {
    if (in[i] == '%' && i + 2 < n && isxdigit((unsigned char)in[i + 1]) &&
        isxdigit((unsigned char)in[i + 2])) {
      char hex[3] = {in[i + 1], in[i + 2], 0};
      out[o++] = (char)strtol(hex, NULL, 16);
      i += 2;
    } else {
      out[o++] = in[i];
    }
  }
  out[o] = '\0';
}

static void add_resource(kcr_trace_options *o, const char *k, size_t klen, const char *v,
                         size_t vlen) {
  char key[64];
  size_t i;
  pct_decode(k, klen, key, sizeof(key));
  if (!key[0])
    return;
  for (i = 0; i < o->nresource; i++)
    if (strcmp(o->resource_keys[i], key) == 0)
      break;
  if (i == o->nresource) {
    if (o->nresource == KCR_TRACE_MAX_RESOURCE_ATTRS)
      return;
    o->nresource++;
  }
  snprintf(o->resource_keys[i], sizeof(o->resource_keys[i]), "%s", key);
  pct_decode(v, vlen, o->resource_values[i], sizeof(o->resource_values[i]));
}

/* env_count reads a positive integer variable (at most 10^9) into *n (0: unset).
 * Returns 0, or KCR_EINVAL for a value that is not one. */
static int env_count(const char *name, size_t *n) {
  const char *v = getenv(name);
  char *end;
  unsigned long long x;
  *n = 0;
  if (!v || !*v)
    return 0;
  x = strtoull(v, &end, 10);
  if (*end || x == 0 || x > 1000000000ULL || *v == '-')
    return KCR_EINVAL;
  *n = (size_t)x;
  return 0;
}

int kcr_trace_options_from_env(kcr_trace_options *o) {
  const char *v;
  size_t n;
  int rc = 0;
  if ((v = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) && *v) {
    snprintf(o->endpoint, sizeof(o->endpoint), "%s", v);
    o->enabled = true;
  }
  if ((v = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) && *v) {
    snprintf(o->traces_endpoint, sizeof(o->traces_endpoint), "%s", v);
    o->enabled = true;
  }
  if ((v = getenv("OTEL_TRACES_SAMPLER")) && *v && sampler_from_name(v, &o->sampler) != 0)
    rc = KCR_EINVAL;
  if ((v = getenv("OTEL_TRACES_SAMPLER_ARG")) && *v) {
    char *end;
    double r = strtod(v, &end);
    if (*end || !(r >= 0.0 && r <= 1.0))
      rc = KCR_EINVAL;
    else
      o->ratio = r;
  } else if (o->sampler == KCR_SAMPLER_TRACEIDRATIO ||
             o->sampler == KCR_SAMPLER_PARENTBASED_TRACEIDRATIO) {
    if (o->ratio == 0.0)
      o->ratio = 1.0; /* the specification's default argument */
  }
  if ((v = getenv("OTEL_RESOURCE_ATTRIBUTES")) && *v) {
    while (*v) {
      const char *comma = strchr(v, ','), *eq;
      size_t len = comma ? (size_t)(comma - v) : strlen(v);
      eq = memchr(v, '=', len);
      if (eq)
        add_resource(o, v, (size_t)(eq - v), eq + 1, len - (size_t)(eq - v) - 1);
      v += len;
      if (*v == ',')
        v++;
    }
  }
  rc |= env_count("OTEL_BSP_SCHEDULE_DELAY", &n);
  if (n)
    o->export_interval_ns = (int64_t)n * KCR_NSEC_PER_MSEC;
  rc |= env_count("OTEL_BSP_EXPORT_TIMEOUT", &n);
  if (n)
    o->export_timeout_ns = (int64_t)n * KCR_NSEC_PER_MSEC;
  rc |= env_count("OTEL_BSP_MAX_QUEUE_SIZE", &n);
  if (n)
    o->max_queue = n;
  rc |= env_count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &n);
  if (n)
    o->max_batch = n;
  if ((v = getenv("OTEL_SERVICE_NAME")) && *v)
    snprintf(o->service_name, sizeof(o->service_name), "%s", v);
  if (!o->service_name[0])
    for (size_t i = 0; i < o->nresource; i++)
      if (strcmp(o->resource_keys[i], "service.name") == 0)
        snprintf(o->service_name, sizeof(o->service_name), "%s", o->resource_values[i]);
  if (env_true(getenv("OTEL_SDK_DISABLED")))
    o->enabled = false;
  return rc;
}

void kcr_trace_configure(const kcr_trace_options *o) {
  atomic_store_explicit(&g_enabled, false, memory_order_release);
  if (!o || !o->enabled)
    return;
  g_opts = *o;
  if (!g_opts.service_name[0])
    snprintf(g_opts.service_name, sizeof(g_opts.service_name), "%s", "kcr");
  if (!g_opts.endpoint[0])
    snprintf(g_opts.endpoint, sizeof(g_opts.endpoint), "%s", "http://localhost:4318");
  atomic_store_explicit(&g_enabled, true, memory_order_release);
}

bool kcr_trace_enabled(void) {
  return atomic_load_explicit(&g_enabled, memory_order_acquire);
}

void kcr_trace_get_options(kcr_trace_options *o) {
  if (kcr_trace_enabled())
    *o = g_opts;
  else
    memset(o, 0, sizeof(*o));
}

void kcr_trace_set_sink(kcr_trace_sink_cb cb, void *data) {
  pthread_rwlock_wrlock(&g_sink_lock);
  g_sink = cb;
  g_sink_data = data;
  pthread_rwlock_unlock(&g_sink_lock);
}

/* ---- spans ---- */

/* ratio_sampled: the trace id's last 8 bytes, big-endian, below ratio * 2^64. */
static bool ratio_sampled(const uint8_t id[16], double ratio) {
  uint64_t v = 0;
  if (ratio >= 1.0)
    return true;
  if (ratio <= 0.0)
    return false;
  for (int i = 8; i < 16; i++)
    v = v << 8 | id[i];
  return (double)v < ratio * 18446744073709551616.0;
}

static bool decide(const kcr_span_context *parent, const uint8_t trace_id[16]) {
  bool has_parent = parent != NULL;
  bool parent_sampled = has_parent && (parent->flags & KCR_TRACE_FLAG_SAMPLED);
  switch (g_opts.sampler) {
  case KCR_SAMPLER_ALWAYS_ON:
    return true;
  case KCR_SAMPLER_ALWAYS_OFF:
    return false;
  case KCR_SAMPLER_TRACEIDRATIO:
    return ratio_sampled(trace_id, g_opts.ratio);
  case KCR_SAMPLER_PARENTBASED_ALWAYS_OFF:
    return has_parent ? parent_sampled : false;
  case KCR_SAMPLER_PARENTBASED_TRACEIDRATIO:
    return has_parent ? parent_sampled : ratio_sampled(trace_id, g_opts.ratio);
  case KCR_SAMPLER_PARENTBASED_ALWAYS_ON:
  default:
    return has_parent ? parent_sampled : true;
  }
}

static int64_t unix_ns(void) {
  kcr_time_t t = kcr_clock_wall(kcr_clock_system());
  return t.sec * KCR_NSEC_PER_SEC + t.nsec;
}

kcr_span_t *kcr_span_start(const char *name, kcr_span_kind kind, const kcr_span_context *parent) {
  kcr_span_context local;
  const kcr_span_context *p = NULL;
  kcr_span_t *s;
  if (!kcr_trace_enabled() || t_suppressed)
    return NULL;
  s = kcr__calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  if (parent && kcr_span_context_valid(parent)) {
    p = parent;
  } else if (t_current) {
    local = t_current->d.ctx;
    p = &local;
  }
  if (p) {
    memcpy(s->d.ctx.trace_id, p->trace_id, 16);
    memcpy(s->d.parent_span_id, p->span_id, 8);
  } else {
    random_bytes(s->d.ctx.trace_id, 16);
  }
  random_bytes(s->d.ctx.span_id, 8);
  s->sampled = decide(p, s->d.ctx.trace_id);
  s->d.ctx.flags = s->sampled ? KCR_TRACE_FLAG_SAMPLED : 0;
  snprintf(s->d.name, sizeof(s->d.name), "%s", name ? name : "");
  s->d.kind = kind;
  s->d.start_unix_ns = unix_ns();
  s->parent = t_current;
  t_current = s;
  return s;
}

static kcr_span_attr *attr_slot(kcr_span_t *s, const char *key) {
  for (size_t i = 0; i < s->d.nattrs; i++)
    if (strcmp(s->d.attrs[i].key, key) == 0)
      return &s->d.attrs[i];
  if (s->d.nattrs == KCR_SPAN_MAX_ATTRS)
    return NULL;
  s->d.attrs[s->d.nattrs].key = key;
  return &s->d.attrs[s->d.nattrs++];
}

void kcr_span_set_str(kcr_span_t *s, const char *key, const char *value) {
  kcr_span_attr *a;
  if (!s || !key || !value || !(a = attr_slot(s, key)))
    return;
  a->type = KCR_SPAN_ATTR_STRING;
  snprintf(a->s, sizeof(a->s), "%s", value);
}

void kcr_span_set_int(kcr_span_t *s, const char *key, int64_t value) {
  kcr_span_attr *a;
  if (!s || !key || !(a = attr_slot(s, key)))
    return;
  a->type = KCR_SPAN_ATTR_INT;
  a->i = value;
}

void kcr_span_set_name(kcr_span_t *s, const char *name) {
  if (s && name)
    snprintf(s->d.name, sizeof(s->d.name), "%s", name);
}

void kcr_span_set_status(kcr_span_t *s, kcr_span_status status, const char *message) {
  if (!s)
    return;
  s->d.status = status;
  snprintf(s->d.status_message, sizeof(s->d.status_message), "%s",
           status == KCR_SPAN_STATUS_ERROR && message ? message : "");
}

void kcr_span_context_of(const kcr_span_t *s, kcr_span_context *out) {
  if (s)
    *out = s->d.ctx;
  else
    memset(out, 0, sizeof(*out));
}

void kcr_span_end(kcr_span_t *s) {
  if (!s)
    return;
  s->d.end_unix_ns = unix_ns();
  if (s->d.end_unix_ns < s->d.start_unix_ns)
    s->d.end_unix_ns = s->d.start_unix_ns; /* the wall clock stepped back */
  /* Out-of-order ends are a caller's bug; restore what this span replaced so
   * the thread never keeps a freed span as current. */
  if (t_current == s)
    t_current = s->parent;
  if (s->sampled) {
    pthread_rwlock_rdlock(&g_sink_lock);
    if (g_sink)
      g_sink(&s->d, g_sink_data);
    pthread_rwlock_unlock(&g_sink_lock);
  }
  kcr__free(s);
}

bool kcr_trace_current(kcr_span_context *out) {
  if (!t_current)
    return false;
  if (out)
    *out = t_current->d.ctx;
  return true;
}

bool kcr_trace_suppress(bool on) {
  bool was = t_suppressed;
  t_suppressed = on;
  return was;
}
