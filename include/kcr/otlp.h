/* SPDX-License-Identifier: MIT */
/*
 * kcr/otlp.h: exporting spans (kcr/trace.h) to an OpenTelemetry collector
 * with OTLP over HTTP, JSON encoding (POST <endpoint>/v1/traces,
 * Content-Type application/json), through libcurl on a kcr loop.
 *
 * The exporter is the trace sink: an ended span is copied into a bounded
 * queue under one mutex and nothing more, so a reconcile never waits for the
 * collector. A thread of the exporter's own takes batches from the queue
 * (when one is full, or every interval), encodes them and posts them on the
 * loop, one request at a time. When the queue is full a new span is dropped;
 * when a batch cannot be delivered (collector gone, slow past the timeout,
 * non-2xx answer) its spans are dropped: both are counted
 * (kcr_otlp_exporter_stats, and kcr_trace_spans_dropped_total{reason} with a
 * registry).
 *
 * Only a collector that answers asks for a retry: on 429, 502, 503 or 504
 * (OTLP/HTTP's retryable codes) the batch is sent again, at most 5 times in
 * all, after the wait the answer's Retry-After gives (delta-seconds or an
 * HTTP-date, capped at 30 s) or, with none or a malformed one, after a
 * backoff of 1 s doubling (plus up to 20 % jitter); then it is dropped. The
 * batch waits in the exporter's own array while new spans keep going into
 * the bounded queue, dropped when it is full, so holding off costs no
 * memory. A collector that is gone or too slow is not retried: it loses
 * spans, never the operator's memory or time.
 */
#ifndef KCR_OTLP_H
#define KCR_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "kcr/buf.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/loop.h"
#include "kcr/metrics.h"
#include "kcr/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kcr_otlp_encode appends an ExportTraceServiceRequest in OTLP/JSON holding
 * spans[0..n) under one resource (service.name and the resource attributes
 * of opts; opts NULL: service.name "kcr") and one scope ("kcr") to out. Ids
 * are lowercase hex, times and integer values decimal strings, as the OTLP
 * JSON mapping says; bytes that are not UTF-8 become '?'. Returns 0,
 * KCR_ENOMEM or a kcr_buf error (KCR_ETOOBIG). Any thread.
 */
KCR_EXTERN int kcr_otlp_encode(const kcr_span_data *spans, size_t n, const kcr_trace_options *opts,
                               kcr_buf_t *out);

typedef struct kcr_otlp_exporter kcr_otlp_exporter_t;

/*
 * kcr_otlp_exporter_options: zero-initialise, then set.
 *   loop        the loop that carries the requests (borrowed; started; it
 *               must outlive the exporter). Required.
 *   url         where to POST; NULL: the traces endpoint of the options in
 *               force (kcr_trace_get_options): traces_endpoint as is, else
 *               endpoint + "/v1/traces".
 *   max_queue   spans held at most (0: the trace options' (OTEL_BSP_*), else
 *               2048, OTEL_BSP_MAX_QUEUE_SIZE's default).
 *   max_batch   spans per request at most (0: likewise, else 512).
 *   interval_ns how often a partial batch is sent (0: likewise, else 5 s).
 *   timeout_ns  one request's limit (0: likewise, else 10 s).
 *   metrics     registers kcr_trace_spans_exported_total and
 *               kcr_trace_spans_dropped_total{reason="queue_full"|"export_failed"}
 *               (NULL: none).
 */
typedef struct kcr_otlp_exporter_options {
  kcr_loop_t *loop;
  const char *url;
  size_t max_queue;
  size_t max_batch;
  int64_t interval_ns;
  int64_t timeout_ns;
  kcr_metrics_registry_t *metrics;
} kcr_otlp_exporter_options;

/*
 * kcr_otlp_exporter_create starts an exporter and makes it the trace sink
 * (kcr_trace_set_sink). *out: new, NULL on failure. Errors: KCR_EINVAL (no
 * loop, no URL), KCR_ENOMEM, KCR_ESYS (thread). Any thread but the loop's.
 */
KCR_EXTERN int kcr_otlp_exporter_create(const kcr_otlp_exporter_options *opts,
                                        kcr_otlp_exporter_t **out, kcr_error_t *err);

/*
 * kcr_otlp_exporter_flush asks the thread for a pass over what is queued now
 * and waits for its end, at most timeout_ns. A pass sends batch after batch
 * and stops at the first that fails (its spans dropped, the rest left for
 * the next pass); a batch the collector throttles is waited for and retried
 * first, past timeout_ns perhaps: then the flush returns KCR_ETIMEDOUT at
 * timeout_ns and the pass goes on. Returns 0 or KCR_ETIMEDOUT. Any thread
 * but the loop's.
 */
KCR_EXTERN int kcr_otlp_exporter_flush(kcr_otlp_exporter_t *e, int64_t timeout_ns);

/* kcr_otlp_exporter_stats: what the exporter has done so far. */
typedef struct kcr_otlp_exporter_stats {
  uint64_t exported;           /* spans the collector accepted (2xx) */
  uint64_t dropped_queue_full; /* spans refused because the queue was full */
  uint64_t dropped_failed;     /* spans of batches that could not be delivered */
  uint64_t requests;           /* requests made, failed ones included */
  uint64_t throttled;          /* answers 429, 502, 503 or 504 (each one a retry or a drop) */
  uint64_t queued;             /* spans waiting now */
} kcr_otlp_exporter_stats;

/* kcr_otlp_exporter_get_stats fills *out. Any thread. */
KCR_EXTERN void kcr_otlp_exporter_get_stats(kcr_otlp_exporter_t *e, kcr_otlp_exporter_stats *out);

/*
 * kcr_otlp_exporter_destroy stops being the sink, makes a last pass over
 * what is queued (what a failed batch leaves is dropped, so a collector that
 * is gone costs one request timeout at most), stops the thread and frees e.
 * A batch waiting to be retried, and the last pass, give up at once rather
 * than wait out a Retry-After. NULL: no-op. Call before stopping the loop.
 * Any thread but the loop's.
 */
KCR_EXTERN void kcr_otlp_exporter_destroy(kcr_otlp_exporter_t *e);

#ifdef __cplusplus
}
#endif

#endif /* KCR_OTLP_H */
