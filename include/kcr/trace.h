/* SPDX-License-Identifier: MIT */
/*
 * kcr/trace.h: OpenTelemetry-style tracing, off by default.
 *
 * A span is one timed operation (a reconcile, an API request, a cache read)
 * with a trace id (16 bytes) shared by every span of one trace, its own span
 * id (8 bytes), its parent's span id, a name, a kind and a few attributes.
 * The current span is per thread: kcr_span_start makes the new span a child
 * of the calling thread's current span (or of a remote parent read from a W3C
 * `traceparent`) and makes it current until kcr_span_end, so a reconciler's
 * synchronous client calls, which run on its worker thread, become children
 * of its reconcile span without any argument passing.
 *
 * Tracing is off until kcr_trace_configure turns it on; while off,
 * kcr_span_start costs one atomic load and returns NULL, and every function
 * taking a span accepts NULL. Spans that end are handed to the sink
 * (kcr_trace_set_sink; kcr/otlp.h's exporter is one) if the sampler chose
 * them; unsampled spans are still tracked so that the traceparent sent with
 * each request carries the trace with its "sampled" flag cleared, as the W3C
 * recommendation asks.
 *
 * The standard variables (kcr_trace_options_from_env) are read by
 * kcr-operator: OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_TRACES_SAMPLER and
 * OTEL_TRACES_SAMPLER_ARG, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and
 * OTEL_SDK_DISABLED.
 *
 * The annotation KCR_TRACEPARENT_ANNOTATION on an object carries a W3C
 * traceparent: a controller whose For() object carries it starts the
 * reconcile that the object's event triggers as a child of that span, so a
 * client that wrote the object sees the reconcile in its own trace.
 */
#ifndef KCR_TRACE_H
#define KCR_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/common.h"
#include "kcr/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* KCR_TRACEPARENT_ANNOTATION: the annotation a reconcile continues a trace from. */
#define KCR_TRACEPARENT_ANNOTATION "kcr.dev/traceparent"

/* Room for a traceparent's text ("00-<32 hex>-<16 hex>-<2 hex>"), NUL included. */
#define KCR_TRACEPARENT_BUFSIZE 56
/* Room for a trace id (32) / span id (16) in hex, NUL included. */
#define KCR_TRACE_ID_HEX_BUFSIZE 33
#define KCR_SPAN_ID_HEX_BUFSIZE 17

/*
 * kcr_span_context: what crosses a process boundary. A context is valid when
 * neither id is all zeros. flags bit 0 is "sampled".
 */
typedef struct kcr_span_context {
  uint8_t trace_id[16];
  uint8_t span_id[8];
  uint8_t flags;
  bool remote; /* read from a traceparent rather than made here */
} kcr_span_context;

#define KCR_TRACE_FLAG_SAMPLED 0x01

/*
 * kcr_traceparent_parse reads a W3C trace-context `traceparent` value of len
 * bytes (no NUL needed): version 00 exactly 55 bytes; a later version (not
 * ff) at least 55, its first four fields read as version 00's and anything
 * after a '-' ignored (the recommendation's forward-compatibility rule).
 * Lowercase hex only; all-zero ids, version ff and uppercase are refused.
 * Surrounding spaces and tabs are trimmed. Returns 0 with *out filled
 * (remote = true) or KCR_EINVAL. Any thread.
 */
KCR_EXTERN int kcr_traceparent_parse(const char *s, size_t len, kcr_span_context *out);

/*
 * kcr_traceparent_format writes ctx as version 00 into out (55 characters and
 * a NUL). Returns 0, or KCR_EINVAL for an invalid context. Any thread.
 */
KCR_EXTERN int kcr_traceparent_format(const kcr_span_context *ctx,
                                      char out[KCR_TRACEPARENT_BUFSIZE]);

/* kcr_trace_id_hex / kcr_span_id_hex write an id as lowercase hex. */
KCR_EXTERN void kcr_trace_id_hex(const uint8_t id[16], char out[KCR_TRACE_ID_HEX_BUFSIZE]);
KCR_EXTERN void kcr_span_id_hex(const uint8_t id[8], char out[KCR_SPAN_ID_HEX_BUFSIZE]);

/* kcr_span_context_valid: neither id is all zeros. */
KCR_EXTERN bool kcr_span_context_valid(const kcr_span_context *ctx);

/* ---- configuration ---- */

/* kcr_trace_sampler: OTEL_TRACES_SAMPLER's values. */
typedef enum kcr_trace_sampler {
  KCR_SAMPLER_PARENTBASED_ALWAYS_ON = 0, /* the default */
  KCR_SAMPLER_ALWAYS_ON = 1,
  KCR_SAMPLER_ALWAYS_OFF = 2,
  KCR_SAMPLER_TRACEIDRATIO = 3,
  KCR_SAMPLER_PARENTBASED_ALWAYS_OFF = 4,
  KCR_SAMPLER_PARENTBASED_TRACEIDRATIO = 5
} kcr_trace_sampler;

#define KCR_TRACE_MAX_RESOURCE_ATTRS 16

/*
 * kcr_trace_options: zero-initialise (or fill with kcr_trace_options_from_env).
 *   enabled         tracing on.
 *   sampler, ratio  the sampler; ratio in [0, 1] for the *traceidratio ones
 *                   (the trace id's last 8 bytes decide, so every process
 *                   decides alike for one trace).
 *   endpoint        OTLP/HTTP base URL ("http://host:4318"); the exporter
 *                   posts to <endpoint>/v1/traces unless traces_endpoint is
 *                   set, which is used as is. Empty: http://localhost:4318.
 *   service_name    resource attribute service.name (default "kcr").
 *   resource_keys/values, nresource: more resource attributes.
 *   export_interval_ns, export_timeout_ns, max_queue, max_batch: the batch
 *                   exporter's settings (OTEL_BSP_SCHEDULE_DELAY,
 *                   OTEL_BSP_EXPORT_TIMEOUT, in milliseconds,
 *                   OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE);
 *                   0: kcr/otlp.h's defaults.
 * Strings are copied into the struct (no pointers), so the options may live on
 * the stack.
 */
typedef struct kcr_trace_options {
  bool enabled;
  kcr_trace_sampler sampler;
  double ratio;
  char endpoint[512];
  char traces_endpoint[512];
  char service_name[128];
  size_t nresource;
  char resource_keys[KCR_TRACE_MAX_RESOURCE_ATTRS][64];
  char resource_values[KCR_TRACE_MAX_RESOURCE_ATTRS][128];
  int64_t export_interval_ns;
  int64_t export_timeout_ns;
  size_t max_queue;
  size_t max_batch;
} kcr_trace_options;

/*
 * kcr_trace_options_from_env fills *o from the OTEL_* variables (above and
 * OTEL_BSP_*), on
 * top of what *o holds: enabled is set when an endpoint variable is set (and
 * cleared by OTEL_SDK_DISABLED=true); OTEL_SERVICE_NAME wins over a
 * service.name in OTEL_RESOURCE_ATTRIBUTES (key=value pairs separated by
 * commas, values percent-decoded). Unknown sampler names leave the default
 * and return KCR_EINVAL (the rest is still read). Returns 0 or KCR_EINVAL.
 */
KCR_EXTERN int kcr_trace_options_from_env(kcr_trace_options *o);

/*
 * kcr_trace_configure applies o (copied; NULL turns tracing off). Call it at
 * start-up, before threads that trace run: spans started before a call that
 * turns tracing off still end normally.
 */
KCR_EXTERN void kcr_trace_configure(const kcr_trace_options *o);

/* kcr_trace_enabled tells whether tracing is on. Any thread. */
KCR_EXTERN bool kcr_trace_enabled(void);

/* kcr_trace_get_options copies the options in force into *o. */
KCR_EXTERN void kcr_trace_get_options(kcr_trace_options *o);

/* ---- spans ---- */

/* kcr_span_kind: OTLP's SpanKind values. */
typedef enum kcr_span_kind {
  KCR_SPAN_INTERNAL = 1,
  KCR_SPAN_SERVER = 2,
  KCR_SPAN_CLIENT = 3,
  KCR_SPAN_PRODUCER = 4,
  KCR_SPAN_CONSUMER = 5
} kcr_span_kind;

/* kcr_span_status: OTLP's status codes. */
typedef enum kcr_span_status {
  KCR_SPAN_STATUS_UNSET = 0,
  KCR_SPAN_STATUS_OK = 1,
  KCR_SPAN_STATUS_ERROR = 2
} kcr_span_status;

#define KCR_SPAN_MAX_ATTRS 12
#define KCR_SPAN_NAME_MAX 96
#define KCR_SPAN_VALUE_MAX 160
#define KCR_SPAN_MESSAGE_MAX 256

typedef enum kcr_span_attr_type {
  KCR_SPAN_ATTR_STRING = 0,
  KCR_SPAN_ATTR_INT = 1
} kcr_span_attr_type;

/* kcr_span_attr: one attribute; key is a static string (borrowed for ever). */
typedef struct kcr_span_attr {
  const char *key;
  kcr_span_attr_type type;
  char s[KCR_SPAN_VALUE_MAX]; /* STRING, cut to fit */
  int64_t i;                  /* INT */
} kcr_span_attr;

/*
 * kcr_span_data: an ended span as the sink receives it (plain data, no
 * pointers but the attributes' static keys). Times are wall-clock Unix
 * nanoseconds.
 */
typedef struct kcr_span_data {
  kcr_span_context ctx;
  uint8_t parent_span_id[8]; /* zeros: a root span */
  char name[KCR_SPAN_NAME_MAX];
  kcr_span_kind kind;
  int64_t start_unix_ns;
  int64_t end_unix_ns;
  kcr_span_status status;
  char status_message[KCR_SPAN_MESSAGE_MAX];
  size_t nattrs;
  kcr_span_attr attrs[KCR_SPAN_MAX_ATTRS];
} kcr_span_data;

/*
 * kcr_trace_sink_cb receives each sampled span as it ends, on the thread that
 * ended it (span borrowed for the call). It must be quick and never block: it
 * runs inside reconciles and client calls.
 */
typedef void (*kcr_trace_sink_cb)(const kcr_span_data *span, void *data);

/*
 * kcr_trace_set_sink sets the sink (NULL: ended spans are dropped). Any
 * thread; a call returns only once no thread is still inside the previous
 * sink, so its data may be freed after kcr_trace_set_sink(NULL, NULL).
 */
KCR_EXTERN void kcr_trace_set_sink(kcr_trace_sink_cb cb, void *data);

/* kcr_span_t: a live span, owned by the thread that started it. */
typedef struct kcr_span kcr_span_t;

/*
 * kcr_span_start starts a span named name (cut to KCR_SPAN_NAME_MAX - 1) as
 * a child of the calling thread's current span, or of parent when parent is
 * valid (a remote context from a traceparent), or as a root, and makes it the
 * thread's current span. Returns a new span, to be ended with kcr_span_end on
 * the same thread, or NULL when tracing is off (or memory ran out: tracing
 * never fails the caller). Spans nest: end them in reverse order.
 */
KCR_EXTERN kcr_span_t *kcr_span_start(const char *name, kcr_span_kind kind,
                                      const kcr_span_context *parent);

/*
 * kcr_span_set_str / _int add an attribute (key: a static string; value
 * copied, cut to fit); a key set twice keeps the last value; beyond
 * KCR_SPAN_MAX_ATTRS attributes the rest are dropped. s NULL or NULL span: no-op.
 */
KCR_EXTERN void kcr_span_set_str(kcr_span_t *s, const char *key, const char *value);
KCR_EXTERN void kcr_span_set_int(kcr_span_t *s, const char *key, int64_t value);

/* kcr_span_set_name renames the span (the name is copied). */
KCR_EXTERN void kcr_span_set_name(kcr_span_t *s, const char *name);

/*
 * kcr_span_set_status sets the status (message copied, kept only for ERROR,
 * as OTLP says).
 */
KCR_EXTERN void kcr_span_set_status(kcr_span_t *s, kcr_span_status status, const char *message);

/* kcr_span_context_of copies s's context into *out (zeros for NULL). */
KCR_EXTERN void kcr_span_context_of(const kcr_span_t *s, kcr_span_context *out);

/*
 * kcr_span_end ends s: its end time is taken, it goes to the sink if sampled,
 * the thread's current span becomes s's parent again, and s is freed. NULL:
 * no-op.
 */
KCR_EXTERN void kcr_span_end(kcr_span_t *s);

/*
 * kcr_trace_current copies the calling thread's current span context into
 * *out and returns true, or returns false when the thread has no span. Any
 * thread (it reads only that thread's state).
 */
KCR_EXTERN bool kcr_trace_current(kcr_span_context *out);

/*
 * kcr_trace_suppress(true) makes the calling thread start no span until
 * kcr_trace_suppress(false) (the exporter's own requests must not be
 * traced). Returns the previous setting.
 */
KCR_EXTERN bool kcr_trace_suppress(bool on);

#ifdef __cplusplus
}
#endif

#endif /* KCR_TRACE_H */
