/* SPDX-License-Identifier: MIT */
/*
 * kcr/metrics.h: a Prometheus metrics registry — counters, gauges and histograms
 * with label sets (client_golang's *Vec types), collectors that produce samples
 * at scrape time, and the text exposition format 0.0.4 that /metrics serves.
 *
 * This is the metrics layer: it depends on util only, and every other layer
 * registers its own series on a registry it is handed (an options field named
 * metrics; NULL means no metrics), under controller-runtime's names, so existing
 * dashboards and alerts work: rest_client_* (kcr_client_options.metrics),
 * workqueue_* (kcr_workqueue_options.metrics), controller_runtime_*
 * (kcr_controller_options.metrics), leader_election_master_status
 * (kcr_leader_election_options.metrics) and the process_* metrics here
 * (kcr_metrics_register_process). A manager creates one registry and hands it
 * to all of them (kcr_manager_metrics).
 *
 * Threads: everything here may be called from any thread. The hot path
 * (kcr_metric_add / _set / _observe on a child the caller looked up once) is a
 * few atomic operations and takes no lock. Looking a child up by label values
 * takes the family's lock. Rendering takes the registry's lock and runs the
 * collectors on the rendering thread.
 */
#ifndef KCR_METRICS_H
#define KCR_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "kcr/buf.h"
#include "kcr/common.h"
#include "kcr/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_metrics_registry_t: opaque; thread-safe. */
typedef struct kcr_metrics_registry kcr_metrics_registry_t;

/* kcr_metric_t: one metric family (name, help, type, label names). Opaque. */
typedef struct kcr_metric kcr_metric_t;

/* kcr_metric_child_t: one labelled series of a family. Opaque; lives as long as
 * the registry, so callers may keep the pointer and skip the lookup. */
typedef struct kcr_metric_child kcr_metric_child_t;

/* kcr_metric_type: the TYPE line of a family. */
typedef enum kcr_metric_type {
  KCR_METRIC_COUNTER = 0,
  KCR_METRIC_GAUGE = 1,
  KCR_METRIC_HISTOGRAM = 2,
  KCR_METRIC_UNTYPED = 3
} kcr_metric_type;

/* Limits: names, label counts, series per family, histogram buckets, and the
 * largest exposition kcr_metrics_render produces. */
#define KCR_METRICS_MAX_LABELS 16
#define KCR_METRICS_MAX_CHILDREN 10000
#define KCR_METRICS_MAX_BUCKETS 64
#define KCR_METRICS_MAX_OUTPUT ((size_t)64 * 1024 * 1024)

/* Prometheus' default histogram buckets (.005 ... 10 s). */
#define KCR_METRICS_DEFAULT_BUCKETS 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10

/*
 * kcr_metrics_registry_create makes an empty registry. *out: new, NULL on
 * failure. Returns 0 or KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_metrics_registry_create(kcr_metrics_registry_t **out, kcr_error_t *err);

/*
 * kcr_metrics_registry_destroy frees the registry, its families and children, and
 * unregisters its collectors (their data is not touched). Nothing may use it or
 * any of its metric pointers afterwards. NULL is ignored.
 */
KCR_EXTERN void kcr_metrics_registry_destroy(kcr_metrics_registry_t *r);

/*
 * kcr_metrics_counter / _gauge / _histogram register a family. name must match
 * [a-zA-Z_:][a-zA-Z0-9_:]*, help is any text (escaped on output), label_names is
 * a NULL-terminated array of label names ([a-zA-Z_][a-zA-Z0-9_]*, not starting
 * with "__", and "le" is reserved for histograms) or NULL for none. For a
 * histogram, bounds holds nbounds strictly increasing finite upper bounds (+Inf
 * is implicit); nbounds 0 with bounds NULL takes KCR_METRICS_DEFAULT_BUCKETS.
 * Everything is copied. *out: the family, borrowed from the registry (lives as
 * long as it). Registering a name twice with the same type and labels returns
 * the existing family (so two components can share rest_client_requests_total);
 * a clash of type or labels is KCR_EEXIST. Errors: KCR_EINVAL (bad name, label
 * or bounds), KCR_EEXIST, KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_metrics_counter(kcr_metrics_registry_t *r, const char *name, const char *help,
                                   const char *const *label_names, kcr_metric_t **out,
                                   kcr_error_t *err);
KCR_EXTERN int kcr_metrics_gauge(kcr_metrics_registry_t *r, const char *name, const char *help,
                                 const char *const *label_names, kcr_metric_t **out,
                                 kcr_error_t *err);
KCR_EXTERN int kcr_metrics_histogram(kcr_metrics_registry_t *r, const char *name, const char *help,
                                     const char *const *label_names, const double *bounds,
                                     size_t nbounds, kcr_metric_t **out, kcr_error_t *err);

/*
 * kcr_metrics_find returns the family registered under name (borrowed, lives as
 * long as r), or NULL; what collectors emit is not found here. For tests and
 * tools that read a value: kcr_metric_value(kcr_metric_withv(kcr_metrics_find(r,
 * "workqueue_adds_total"), "q", "q", NULL)). Any thread; takes the registry's
 * lock, so not from inside a collector.
 */
KCR_EXTERN kcr_metric_t *kcr_metrics_find(kcr_metrics_registry_t *r, const char *name);

/*
 * kcr_metric_with returns the child for the label values (nvalues must equal the
 * family's label count; values are copied; NULL reads as ""), creating it at
 * zero on first use. Borrowed: lives as long as the registry. Returns NULL on
 * KCR_ENOMEM, on a wrong count, or when the family already holds
 * KCR_METRICS_MAX_CHILDREN series (an unbounded label is a bug; the sample is
 * dropped rather than memory grown). Any thread; takes the family's lock.
 */
KCR_EXTERN kcr_metric_child_t *kcr_metric_with(kcr_metric_t *m, const char *const *values,
                                               size_t nvalues);

/*
 * kcr_metric_withv is kcr_metric_with with the values as a NULL-terminated
 * argument list: kcr_metric_withv(m, "200", "GET", "host", NULL).
 */
KCR_EXTERN kcr_metric_child_t *kcr_metric_withv(kcr_metric_t *m, ...);

/*
 * The hot path; child may be NULL (a failed lookup), which is ignored. Any thread,
 * lock-free.
 *   kcr_metric_add      counter or gauge += v (a counter ignores v < 0 or NaN).
 *   kcr_metric_inc      += 1.
 *   kcr_metric_set      gauge = v (ignored on a counter or histogram).
 *   kcr_metric_observe  histogram: count the observation v in its bucket and sum.
 *   kcr_metric_value    reads a counter or gauge (for tests); a histogram's sum.
 *   kcr_metric_count    a histogram's count (0 for others).
 */
KCR_EXTERN void kcr_metric_add(kcr_metric_child_t *c, double v);
KCR_EXTERN void kcr_metric_inc(kcr_metric_child_t *c);
KCR_EXTERN void kcr_metric_set(kcr_metric_child_t *c, double v);
KCR_EXTERN void kcr_metric_observe(kcr_metric_child_t *c, double v);
KCR_EXTERN double kcr_metric_value(const kcr_metric_child_t *c);
KCR_EXTERN uint64_t kcr_metric_count(const kcr_metric_child_t *c);

/* ---- collectors: samples produced at scrape time ---- */

/* kcr_metrics_emitter_t: handed to a collector during a render. Opaque. */
typedef struct kcr_metrics_emitter kcr_metrics_emitter_t;

/*
 * kcr_metrics_collect_cb runs during kcr_metrics_render, on the rendering thread
 * (a server's worker or auth pool thread when /metrics is scraped, never the
 * I/O loop; it should be quick, as probes on the same server may wait behind
 * it),
 * with the registry's lock held: it must not call kcr_metrics_* functions other
 * than the emit functions below, and kcr_metric_set / _add / _inc / _observe on
 * children it looked up beforehand. Collectors run before the registered
 * families are written, so a collector may refresh gauges it owns (a value
 * computed at scrape time) and the same render shows them. Samples of the same
 * name from several collectors (or from a registered family) are merged under
 * one HELP/TYPE.
 */
typedef void (*kcr_metrics_collect_cb)(kcr_metrics_emitter_t *e, void *data);

/*
 * kcr_metrics_emit writes one counter, gauge or untyped sample: name and the
 * parallel arrays label_names/label_values of nlabels entries (borrowed for the
 * call). help and type apply when the name is first seen in this render.
 * Returns 0, or KCR_EINVAL (bad name, or the name already seen with another
 * type), KCR_ETOOBIG, KCR_ENOMEM; after an error the render fails with it.
 */
KCR_EXTERN int kcr_metrics_emit(kcr_metrics_emitter_t *e, const char *name, const char *help,
                                kcr_metric_type type, const char *const *label_names,
                                const char *const *label_values, size_t nlabels, double value);

/*
 * kcr_metrics_emit_histogram writes one histogram series: nbounds upper bounds
 * with their CUMULATIVE counts (observations <= bound), the total count (which
 * becomes the +Inf bucket) and the sum. Same rules as kcr_metrics_emit.
 */
KCR_EXTERN int kcr_metrics_emit_histogram(kcr_metrics_emitter_t *e, const char *name,
                                          const char *help, const char *const *label_names,
                                          const char *const *label_values, size_t nlabels,
                                          const double *bounds, const uint64_t *cumulative,
                                          size_t nbounds, uint64_t count, double sum);

/* kcr_metrics_collector_t: a registration handle. Opaque. */
typedef struct kcr_metrics_collector kcr_metrics_collector_t;

/*
 * kcr_metrics_register_collector adds cb(e, data) to every render. *out (may be
 * NULL): the handle for kcr_metrics_unregister_collector. Returns 0 or
 * KCR_ENOMEM. data is borrowed: it must outlive the registration. Any thread.
 */
KCR_EXTERN int kcr_metrics_register_collector(kcr_metrics_registry_t *r, kcr_metrics_collect_cb cb,
                                              void *data, kcr_metrics_collector_t **out);

/*
 * kcr_metrics_unregister_collector removes a collector; once it returns, the
 * callback is not running and will not run again, so its data may be freed.
 * NULL is ignored. Not from inside a collector.
 */
KCR_EXTERN void kcr_metrics_unregister_collector(kcr_metrics_registry_t *r,
                                                 kcr_metrics_collector_t *c);

/*
 * kcr_metrics_register_process registers the process collector: from /proc/self
 * at scrape time, process_cpu_seconds_total, process_open_fds, process_max_fds,
 * process_virtual_memory_bytes, process_virtual_memory_max_bytes (the soft
 * RLIMIT_AS), process_resident_memory_bytes, process_start_time_seconds and
 * process_network_receive_bytes_total / _transmit_bytes_total (IpExt InOctets
 * and OutOctets of /proc/self/net/netstat: the network namespace's, as
 * client_golang reads them), with client_golang's names and help. A value that
 * cannot be read is left out. Returns as kcr_metrics_register_collector.
 */
KCR_EXTERN int kcr_metrics_register_process(kcr_metrics_registry_t *r,
                                            kcr_metrics_collector_t **out);

/* ---- exposition ---- */

#define KCR_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/*
 * kcr_metrics_render appends the text exposition (format 0.0.4) of every family
 * and collector to out (a caller-initialised kcr_buf_t; its own maximum applies,
 * and KCR_METRICS_MAX_OUTPUT in any case): families sorted by name, each with
 * # HELP and # TYPE, label values escaped (\\, \", \n), histograms as
 * _bucket{le="..."} (cumulative, ending at +Inf), _sum and _count. Returns 0,
 * KCR_ETOOBIG (out is freed, as kcr_buf does), KCR_EINVAL (a collector emitted a
 * bad sample) or KCR_ENOMEM. Any thread (collectors run on it).
 */
KCR_EXTERN int kcr_metrics_render(kcr_metrics_registry_t *r, kcr_buf_t *out);

#ifdef __cplusplus
}
#endif

#endif /* KCR_METRICS_H */
