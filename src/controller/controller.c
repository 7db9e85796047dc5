/* SPDX-License-Identifier: MIT */
/*
 * controller.c: the controller — watches, event handlers, workers and the
 * reconcile result semantics (controller-runtime's builder + internal/controller).
 *
 * Design: set-up calls only record watches; start asks the source (the manager's
 * cache) for one shared informer per watched kind, registers a handler whose data
 * is the watch, waits for the informers to sync and starts N workers. Handlers
 * run on their listener threads (one per watch, no informer lock held): they
 * evaluate predicates and add "ns/name" keys to the workqueue (an add is a lock
 * and a hash lookup), so a watch's events wait for nothing but its own. Workers block in
 * kcr_workqueue_get; the queue guarantees a key is never on two workers at once, so the reconciler
 * needs no per-object locking.
 *
 * Priorities: with the priority queue (the default) a handler enqueues an
 * initial-list add and a resync update (equal resourceVersions) at
 * KCR_WORKQUEUE_PRIORITY_LOW, as controller-runtime's handlers do, and
 * everything else at 0; the worker takes the key's priority with it and a
 * requeue uses it (or the reconciler's res->priority). Without it the queue is
 * made with no_priority and ignores them all.
 *
 * Stop (graceful): the handlers are removed first (no new work), the
 * cancellation token fires (requests of reconciles in flight end with
 * KCR_ECANCELED, as Go's context does), the queue shuts down, and workers drop
 * any key still queued without reconciling it; stop then waits, bounded, for the
 * reconciles in flight. Workers are joined only in destroy, so a stop that timed
 * out can still return to a caller that wants to exit.
 *
 * Gate: the manager may install one (kcr__controller_set_gate, its leader
 * fence). A worker that takes a key while the gate is closed does not
 * reconcile it; the key goes back to the queue after GATE_RETRY, so nothing is
 * lost if the gate opens again and no worker spins while it stays closed.
 *
 * Locks: mu guards the lifecycle fields and the running count; it is not held
 * while calling the reconciler, the queue or an informer, and handlers never
 * take it. Metrics are children of the registry's families, looked up at
 * create; workers update them with atomics, no lock.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cache/informer_multi_internal.h"
#include "controller/controller_internal.h"
#include "controller/trace_parent_internal.h"
#include "kcr/apierror.h"
#include "kcr/controller.h"
#include "kcr/meta.h"
#include "kcr/rand.h"
#include "util/alloc.h"
#include "util/list.h"

#define DEFAULT_SYNC_TIMEOUT (120 * KCR_NSEC_PER_SEC)
#define NS_MAX 256
#define GATE_RETRY KCR_NSEC_PER_SEC
/* controller-runtime's default limiter with the priority queue:
 * ItemExponentialFailureRateLimiter(5 ms, 1000 s) */
#define PQ_BACKOFF_BASE (5 * KCR_NSEC_PER_MSEC)
#define PQ_BACKOFF_MAX (1000 * KCR_NSEC_PER_SEC)

/* controller-runtime's reconcile time buckets. */
static const double time_bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3,  0.35,
                                     0.4,   0.45, 0.5,   0.6,  0.7, 0.8,  0.9, 1.0,  1.25, 1.5,
                                     1.75,  2.0,  2.5,   3.0,  3.5, 4.0,  4.5, 5,    6,    7,
                                     8,     9,    10,    15,   20,  25,   30,  40,   50,   60};

/* The `result` label values, indexed by kcr_reconcile_outcome: the one table of
 * these names (the manager's collector reads it through the accessor below). */
static const char *const outcome_names[KCR_RECONCILE_OUTCOMES] = {
    [KCR_RECONCILE_SUCCESS] = "success",
    [KCR_RECONCILE_ERROR] = "error",
    [KCR_RECONCILE_REQUEUE] = "requeue",
    [KCR_RECONCILE_REQUEUE_AFTER] = "requeue_after",
};

const char *kcr_reconcile_outcome_name(kcr_reconcile_outcome o) {
  return (unsigned)o < KCR_RECONCILE_OUTCOMES ? outcome_names[o] : outcome_names[0];
}

typedef enum wkind { W_FOR, W_OWNS, W_MAP } wkind;

typedef struct watch {
  kcr__list_node_t link; /* in the controller's watches */
  kcr_controller_t *ctl;
  wkind kind;
  char *group, *version, *kind_name;
  kcr_predicate_t *pred;
  kcr_map_fn fn;
  void *fn_data;
  kcr_informer_t *inf; /* set by start */
  uint64_t handler_id;
  bool registered;
  bool raw;           /* inf given by the caller (kcr_controller_watches_informer) */
  bool metadata_only; /* the kind's metadata-only informer (the _metadata calls) */
} watch_t;

struct kcr_controller {
  char *name;
  kcr_reconcile_fn reconcile;
  void *data;
  int workers;
  int64_t sync_timeout;
  kcr_clock_t *clock;
  kcr_controller_source source;
  kcr_objclient client;
  kcr_objclient api_reader; /* ops NULL: none */
  kcr_workqueue_t *q;
  kcr_cancel_t *cancel;
  bool pq; /* the priority queue is on; immutable */

  /* set-up, then read-only once started */
  kcr__list_t watches; /* watch_t, in the order they were set */
  size_t nwatches;
  kcr_predicate_t **filters;
  size_t nfilters;
  char *primary_group; /* of the For kind; NULL until for */
  char *primary_kind;
  bool primary_namespaced;

  atomic_bool stopping; /* workers drop keys once set */
  atomic_int nchannels; /* channel sources watched (kcr_controller_watches_channel) */

  kcr__trace_parents_t *trace_parents; /* For() objects' traceparents (kcr/trace.h) */

  kcr__controller_gate_fn gate; /* set before start, then read-only; NULL: open */
  void *gate_data;
  kcr__controller_key_fn key_filter; /* set before start, then read-only; NULL: every key */
  void *key_data;

  pthread_mutex_t mu;
  pthread_cond_t cond;           /* running changed */
  pthread_t *threads;            /* protected by mu */
  int nthreads;                  /* protected by mu */
  int running;                   /* workers not yet exited; protected by mu */
  const char **inflight;         /* protected by mu: the keys workers hold (key filter only) */
  size_t ninflight, capinflight; /* protected by mu */
  bool started, stop_done;       /* protected by mu; started: set-up closed (warm-up or start) */
  bool workers_started;          /* protected by mu: kcr_controller_start was called */
  bool warmed;                   /* protected by mu: watches registered and synced */
  bool finished_logged;          /* protected by mu */

  /* metrics: children of the registry's families (NULL without a registry,
   * which the kcr_metric_* calls ignore); immutable pointers to atomics */
  kcr_metric_child_t *m_total[KCR_RECONCILE_OUTCOMES];
  kcr_metric_child_t *m_errors, *m_terminal, *m_time, *m_active, *m_max;
  kcr_metric_child_t *m_panics, *m_timeouts;
  int64_t reconcile_timeout; /* immutable; 0: no deadline */
};

struct kcr_reconcile_ctx {
  kcr_controller_t *c;
  const char *ns, *name;
  kcr_objclient client;
  kcr_objclient api_reader;
  kcr_error_t err;
  char id[KCR_UUID_BUFSIZE];
  bool terminal;
  int64_t deadline;     /* 0: none */
  kcr_cancel_t *cancel; /* c->cancel, or the reconcile's own child of it with the deadline */
};

/* ---- the reconcile context ---- */

const kcr_objclient *kcr_requests_client(kcr_requests_t *r) {
  return &r->c->client;
}

const kcr_objclient *kcr_reconcile_client(kcr_reconcile_ctx_t *ctx) {
  return &ctx->client;
}
const kcr_objclient *kcr_reconcile_api_reader(kcr_reconcile_ctx_t *ctx) {
  return &ctx->api_reader;
}
kcr_cancel_t *kcr_reconcile_cancel(kcr_reconcile_ctx_t *ctx) {
  return ctx->cancel;
}
kcr_error_t *kcr_reconcile_err(kcr_reconcile_ctx_t *ctx) {
  return &ctx->err;
}
int64_t kcr_reconcile_deadline(kcr_reconcile_ctx_t *ctx) {
  return ctx->deadline;
}
const char *kcr_reconcile_id(kcr_reconcile_ctx_t *ctx) {
  return ctx->id;
}
const char *kcr_reconcile_controller_name(kcr_reconcile_ctx_t *ctx) {
  return ctx->c->name;
}

int kcr_reconcile_terminal(kcr_reconcile_ctx_t *ctx, int code) {
  ctx->terminal = true;
  return code < 0 ? code : KCR_EINTERNAL;
}

/*
 * ctl_fields puts controller-runtime's controller fields (controller,
 * controllerGroup, controllerKind; the last two once For is set) into f, which
 * has room for CTL_FIELDS_MAX; returns how many.
 */
#define CTL_FIELDS_MAX 8
static size_t ctl_fields(const kcr_controller_t *c, kcr_log_field *f) {
  size_t n = 0;
  f[n++] = KCR_LOG_STR(KCR_LOG_KEY_CONTROLLER, c->name);
  if (c->primary_kind) {
    f[n++] = KCR_LOG_STR(KCR_LOG_KEY_CONTROLLER_GROUP, c->primary_group ? c->primary_group : "");
    f[n++] = KCR_LOG_STR(KCR_LOG_KEY_CONTROLLER_KIND, c->primary_kind);
  }
  return n;
}

/* ctl_log writes one line with the controller's fields and a printf message. */
static void ctl_log(const kcr_controller_t *c, kcr_log_level level, const char *fmt, ...)
    KCR_PRINTF(3, 4);
static void ctl_log(const kcr_controller_t *c, kcr_log_level level, const char *fmt, ...) {
  kcr_log_field f[CTL_FIELDS_MAX];
  char msg[1024];
  va_list ap;
  if (!kcr_log_enabled(level))
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  kcr_log_fields(level, "controller", msg, f, ctl_fields(c, f));
}

/*
 * ctx_log writes one line with the reconcile's fields: the controller's, then
 * namespace, name, reconcileID, and error when given.
 */
static void ctx_log(kcr_reconcile_ctx_t *ctx, kcr_log_level level, const char *msg,
                    const char *error) {
  kcr_log_field f[CTL_FIELDS_MAX];
  size_t n = ctl_fields(ctx->c, f);
  f[n++] = KCR_LOG_STR(KCR_LOG_KEY_NAMESPACE, ctx->ns);
  f[n++] = KCR_LOG_STR(KCR_LOG_KEY_NAME, ctx->name);
  f[n++] = KCR_LOG_STR(KCR_LOG_KEY_RECONCILE_ID, ctx->id);
  if (error)
    f[n++] = KCR_LOG_STR(KCR_LOG_KEY_ERROR, error);
  kcr_log_fields(level, "controller", msg, f, n);
}

void kcr_reconcile_log_fields(kcr_reconcile_ctx_t *ctx, kcr_log_level level, const char *msg,
                              const kcr_log_field *fields, size_t n) {
  kcr_log_field f[CTL_FIELDS_MAX + 3 + KCR_RECONCILE_LOG_FIELDS_MAX + 1];
  size_t k, take = n < KCR_RECONCILE_LOG_FIELDS_MAX ? n : KCR_RECONCILE_LOG_FIELDS_MAX;
  if (!kcr_log_enabled(level))
    return;
  k = ctl_fields(ctx->c, f);
  f[k++] = KCR_LOG_STR(KCR_LOG_KEY_NAMESPACE, ctx->ns);
  f[k++] = KCR_LOG_STR(KCR_LOG_KEY_NAME, ctx->name);
  f[k++] = KCR_LOG_STR(KCR_LOG_KEY_RECONCILE_ID, ctx->id);
  if (take > 0)
    memcpy(f + k, fields, take * sizeof(*f));
  k += take;
  if (n > take)
    f[k++] = KCR_LOG_INT("droppedFields", n - take);
  kcr_log_fields(level, "controller", msg ? msg : "", f, k);
}

void kcr_reconcile_log(kcr_reconcile_ctx_t *ctx, kcr_log_level level, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  if (!kcr_log_enabled(level))
    return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  ctx_log(ctx, level, msg, NULL);
}

/* ---- create, set-up ---- */

/* register_metrics registers the controller_runtime_* families on r and creates
 * this controller's series at zero, as controller-runtime's initMetrics does. */
static int register_metrics(kcr_controller_t *c, kcr_metrics_registry_t *r, kcr_error_t *err) {
  static const char *const l1[] = {"controller", NULL};
  static const char *const l2[] = {"controller", "result", NULL};
  kcr_metric_t *total, *errors, *terminal, *time, *active, *max, *panics, *timeouts;
  int rc;
  bool ok;
  if ((rc = kcr_metrics_counter(r, KCR_CONTROLLER_METRIC_RECONCILE_TOTAL,
                                KCR_CONTROLLER_HELP_RECONCILE_TOTAL, l2, &total, err)) != 0 ||
      (rc = kcr_metrics_counter(r, KCR_CONTROLLER_METRIC_RECONCILE_ERRORS,
                                KCR_CONTROLLER_HELP_RECONCILE_ERRORS, l1, &errors, err)) != 0 ||
      (rc = kcr_metrics_counter(r, KCR_CONTROLLER_METRIC_TERMINAL_ERRORS,
                                KCR_CONTROLLER_HELP_TERMINAL_ERRORS, l1, &terminal, err)) != 0 ||
      (rc = kcr_metrics_counter(r, KCR_CONTROLLER_METRIC_RECONCILE_PANICS,
                                KCR_CONTROLLER_HELP_RECONCILE_PANICS, l1, &panics, err)) != 0 ||
      (rc = kcr_metrics_counter(r, KCR_CONTROLLER_METRIC_RECONCILE_TIMEOUTS,
                                KCR_CONTROLLER_HELP_RECONCILE_TIMEOUTS, l1, &timeouts, err)) != 0 ||
      (rc = kcr_metrics_histogram(r, KCR_CONTROLLER_METRIC_RECONCILE_TIME,
                                  KCR_CONTROLLER_HELP_RECONCILE_TIME, l1, time_bounds,
                                  sizeof(time_bounds) / sizeof(time_bounds[0]), &time, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, KCR_CONTROLLER_METRIC_ACTIVE_WORKERS,
                              KCR_CONTROLLER_HELP_ACTIVE_WORKERS, l1, &active, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, KCR_CONTROLLER_METRIC_MAX_CONCURRENT,
                              KCR_CONTROLLER_HELP_MAX_CONCURRENT, l1, &max, err)) != 0)
    return rc;
  ok = true;
  for (int o = 0; o < KCR_RECONCILE_OUTCOMES; o++) {
    c->m_total[o] = kcr_metric_withv(total, c->name, kcr_reconcile_outcome_name(o), NULL);
    ok = ok && c->m_total[o];
  }
  c->m_errors = kcr_metric_withv(errors, c->name, NULL);
  c->m_terminal = kcr_metric_withv(terminal, c->name, NULL);
  c->m_time = kcr_metric_withv(time, c->name, NULL);
  c->m_active = kcr_metric_withv(active, c->name, NULL);
  c->m_max = kcr_metric_withv(max, c->name, NULL);
  c->m_panics = kcr_metric_withv(panics, c->name, NULL);
  c->m_timeouts = kcr_metric_withv(timeouts, c->name, NULL);
  if (!ok || !c->m_errors || !c->m_terminal || !c->m_time || !c->m_active || !c->m_max ||
      !c->m_panics || !c->m_timeouts)
    return kcr_error_set(err, KCR_ENOMEM, "controller %s: out of memory for its metrics", c->name);
  kcr_metric_set(c->m_active, 0);
  kcr_metric_set(c->m_max, c->workers);
  return 0;
}

int kcr_controller_create(const kcr_controller_options *o, kcr_controller_t **out,
                          kcr_error_t *err) {
  kcr_controller_t *c = NULL;
  kcr_workqueue_options qo;
  kcr_ratelimiter_t *rl = o ? o->rate_limiter : NULL;
  int rc;
  *out = NULL;
  if (!o || !o->name || !*o->name || !o->reconcile) {
    kcr_ratelimiter_destroy(rl);
    return kcr_error_set(err, KCR_EINVAL, "controller: a name and a reconciler are required");
  }
  c = kcr__calloc(1, sizeof(*c));
  if (!c) {
    kcr_ratelimiter_destroy(rl);
    return kcr_error_set(err, KCR_ENOMEM, "controller: out of memory");
  }
  c->reconcile = o->reconcile;
  c->data = o->data;
  c->workers = o->max_concurrent_reconciles > 0 ? o->max_concurrent_reconciles : 1;
  c->sync_timeout = o->cache_sync_timeout_ns > 0 ? o->cache_sync_timeout_ns : DEFAULT_SYNC_TIMEOUT;
  c->reconcile_timeout = o->reconcile_timeout_ns > 0 ? o->reconcile_timeout_ns : 0;
  c->clock = o->clock ? o->clock : kcr_clock_system();
  c->source = o->source;
  c->client = o->client;
  c->api_reader = o->api_reader;
  c->primary_namespaced = true;
  c->pq = !o->use_priority_queue || *o->use_priority_queue;
  atomic_init(&c->stopping, false);
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    kcr__free(c);
    kcr_ratelimiter_destroy(rl);
    return kcr_error_set(err, KCR_ESYS, "controller: mutex");
  }
  if (kcr_clock_cond_init(&c->cond) != 0) {
    pthread_mutex_destroy(&c->mu);
    kcr__free(c);
    kcr_ratelimiter_destroy(rl);
    return kcr_error_set(err, KCR_ESYS, "controller: condition variable");
  }
  /* controller-runtime with its priority queue: per-key backoff alone, no
   * overall bucket */
  rc = 0;
  if (!rl && c->pq &&
      kcr_ratelimiter_exponential_create(PQ_BACKOFF_BASE, PQ_BACKOFF_MAX, &rl, NULL) != 0)
    rc = KCR_ENOMEM; /* rl is still NULL */
  memset(&qo, 0, sizeof(qo));
  qo.name = o->name;
  qo.clock = o->clock;
  qo.rate_limiter = rl; /* stolen by the queue on every path */
  qo.metrics = o->metrics;
  qo.no_priority = !c->pq;
  c->name = rc == 0 ? kcr__strdup(o->name) : NULL;
  rc = c->name ? kcr_workqueue_create(&qo, &c->q, err) : (kcr_ratelimiter_destroy(rl), KCR_ENOMEM);
  if (rc == 0)
    rc = kcr_cancel_create(&c->cancel, NULL);
  if (rc == 0 && !(c->trace_parents = kcr__trace_parents_create()))
    rc = KCR_ENOMEM;
  if (rc == 0 && o->metrics)
    rc = register_metrics(c, o->metrics, err);
  if (rc) {
    kcr_error_set(err, rc, "controller %s: %s", o->name, kcr_strerror(rc));
    kcr_controller_destroy(c);
    return rc;
  }
  *out = c;
  return 0;
}

const char *kcr_controller_name(const kcr_controller_t *c) {
  return c->name;
}
kcr_workqueue_t *kcr_controller_queue(kcr_controller_t *c) {
  return c->q;
}

static bool is_started(kcr_controller_t *c) {
  bool s;
  pthread_mutex_lock(&c->mu);
  s = c->started;
  pthread_mutex_unlock(&c->mu);
  return s;
}

static int add_watch(kcr_controller_t *c, wkind kind, const kcr_gvk *gvk, kcr_map_fn fn,
                     void *fn_data, kcr_predicate_t *pred, kcr_error_t *err) {
  watch_t *w;
  if (kcr__predicate_failed(pred))
    return kcr_error_set(err, KCR_ENOMEM, "controller %s: predicate: out of memory", c->name);
  if (!gvk || !gvk->version || !gvk->kind || !*gvk->kind) {
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_EINVAL, "controller %s: a watch needs a version and a kind",
                         c->name);
  }
  if (is_started(c)) {
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_EINVAL, "controller %s: watches are set before start", c->name);
  }
  if (kind == W_FOR && c->primary_kind) {
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_EEXIST, "controller %s: for() was already called", c->name);
  }
  w = kcr__calloc(1, sizeof(*w));
  if (w) {
    w->group = kcr__strdup(gvk->group ? gvk->group : "");
    w->version = kcr__strdup(gvk->version);
    w->kind_name = kcr__strdup(gvk->kind);
  }
  if (!w || !w->group || !w->version || !w->kind_name) {
    if (w) {
      kcr__free(w->group);
      kcr__free(w->version);
      kcr__free(w->kind_name);
      kcr__free(w);
    }
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_ENOMEM, "controller %s: out of memory", c->name);
  }
  if (kind == W_FOR) {
    c->primary_group = kcr__strdup(w->group);
    c->primary_kind = kcr__strdup(w->kind_name);
    if (!c->primary_group || !c->primary_kind) {
      kcr__free(c->primary_group);
      kcr__free(c->primary_kind);
      c->primary_group = c->primary_kind = NULL;
      kcr__free(w->group);
      kcr__free(w->version);
      kcr__free(w->kind_name);
      kcr__free(w);
      kcr_predicate_destroy(pred);
      return kcr_error_set(err, KCR_ENOMEM, "controller %s: out of memory", c->name);
    }
  }
  w->ctl = c;
  w->kind = kind;
  w->pred = pred;
  w->fn = fn;
  w->fn_data = fn_data;
  kcr__list_push_back(&c->watches, &w->link);
  c->nwatches++;
  return 0;
}

int kcr_controller_for(kcr_controller_t *c, const kcr_gvk *gvk, kcr_predicate_t *pred,
                       kcr_error_t *err) {
  return add_watch(c, W_FOR, gvk, NULL, NULL, pred, err);
}

int kcr_controller_owns(kcr_controller_t *c, const kcr_gvk *gvk, kcr_predicate_t *pred,
                        kcr_error_t *err) {
  return add_watch(c, W_OWNS, gvk, NULL, NULL, pred, err);
}

int kcr_controller_watches(kcr_controller_t *c, const kcr_gvk *gvk, kcr_map_fn fn, void *data,
                           kcr_predicate_t *pred, kcr_error_t *err) {
  if (!fn) {
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_EINVAL, "controller %s: watches needs a map function", c->name);
  }
  return add_watch(c, W_MAP, gvk, fn, data, pred, err);
}

/* last_metadata_only marks the watch just added (rc 0) metadata-only. */
static int last_metadata_only(kcr_controller_t *c, int rc) {
  if (rc == 0)
    KCR__CONTAINER_OF(c->watches.last, watch_t, link)->metadata_only = true;
  return rc;
}

int kcr_controller_for_metadata(kcr_controller_t *c, const kcr_gvk *gvk, kcr_predicate_t *pred,
                                kcr_error_t *err) {
  return last_metadata_only(c, kcr_controller_for(c, gvk, pred, err));
}

int kcr_controller_owns_metadata(kcr_controller_t *c, const kcr_gvk *gvk, kcr_predicate_t *pred,
                                 kcr_error_t *err) {
  return last_metadata_only(c, kcr_controller_owns(c, gvk, pred, err));
}

int kcr_controller_watches_metadata(kcr_controller_t *c, const kcr_gvk *gvk, kcr_map_fn fn,
                                    void *data, kcr_predicate_t *pred, kcr_error_t *err) {
  return last_metadata_only(c, kcr_controller_watches(c, gvk, fn, data, pred, err));
}

int kcr_controller_watches_informer(kcr_controller_t *c, kcr_informer_t *inf, kcr_map_fn fn,
                                    void *data, kcr_predicate_t *pred, kcr_error_t *err) {
  static const kcr_gvk raw = {"", "raw", "informer"};
  watch_t *w;
  int rc;
  if (!inf || !fn) {
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_EINVAL,
                         "controller %s: a raw source needs an informer and a map "
                         "function",
                         c->name);
  }
  if ((rc = add_watch(c, W_MAP, &raw, fn, data, pred, err)) != 0)
    return rc;
  w = KCR__CONTAINER_OF(c->watches.last, watch_t, link);
  w->inf = inf;
  w->raw = true;
  return 0;
}

int kcr_controller_watches_channel(kcr_controller_t *c, kcr_channel_source_t *s, kcr_map_fn fn,
                                   void *data, kcr_predicate_t *pred, kcr_error_t *err) {
  int rc = kcr__channel_watch(c, c->q, c->name, s, fn, data, pred, err);
  if (rc == 0)
    atomic_fetch_add(&c->nchannels, 1);
  return rc;
}

static bool pass(watch_t *w, kcr_event_type t, const json_t *old_obj, const json_t *obj);

typedef struct all_walk {
  watch_t *w;
  int added, rc;
} all_walk_t;

/* reconcile_one: kcr_store_foreach's callback for reconcile_all with
 * predicates: the object as a generic event through the For watch. */
static int reconcile_one(const char *key, const char *json, size_t len, void *data) {
  all_walk_t *a = data;
  json_t *obj = json_loadb(json, len, 0, NULL);
  int rc = 0;
  if (!obj)
    return a->rc = KCR_ENOMEM;
  if (pass(a->w, KCR_EVENT_GENERIC, NULL, obj)) {
    rc = kcr_workqueue_add(a->w->ctl->q, key);
    a->added += rc == 0;
  }
  json_decref(obj);
  return rc == KCR_ENOMEM ? (a->rc = KCR_ENOMEM) : 0;
}

/* reconcile_store enqueues what one store holds for reconcile_all; the
 * number queued or a negative kcr_err. */
static int reconcile_store(kcr_controller_t *c, watch_t *fw, kcr_store_t *st) {
  all_walk_t a = {0};
  char **keys = NULL;
  size_t n = 0;
  if (fw->pred || c->nfilters > 0) { /* each object through the watch's predicates */
    a.w = fw;
    kcr_store_foreach(st, reconcile_one, &a);
    return a.rc ? a.rc : a.added;
  }
  if (kcr_store_list_keys(st, &keys, &n) != 0)
    return KCR_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    if (kcr_workqueue_add(c->q, keys[i]) == KCR_ENOMEM) {
      kcr_free(keys);
      return KCR_ENOMEM;
    }
  }
  kcr_free(keys);
  return (int)n;
}

int kcr_controller_reconcile_all(kcr_controller_t *c, kcr_error_t *err) {
  watch_t *fw = NULL;
  kcr_informer_t *const *parts;
  size_t nparts;
  int total = 0;
  if (!is_started(c))
    return kcr_error_set(err, KCR_EINVAL, "controller %s: reconcile_all before start", c->name);
  KCR__LIST_EACH(&c->watches, watch_t, link, w) {
    if (w->kind == W_FOR)
      fw = w;
  }
  if (!fw || !fw->inf)
    return kcr_error_set(err, KCR_EINVAL,
                         "controller %s: reconcile_all needs a primary kind "
                         "(for())",
                         c->name);
  /* An informer over a set of namespaces has a store per namespace. */
  nparts = kcr__informer_parts(fw->inf, &parts);
  for (size_t i = 0; i < nparts; i++) {
    int rc = reconcile_store(c, fw, kcr_informer_store(parts[i]));
    if (rc < 0)
      return kcr_error_set(err, rc, "controller %s: out of memory enqueueing", c->name);
    total += rc;
  }
  return total;
}

int kcr_controller_add_event_filter(kcr_controller_t *c, kcr_predicate_t *pred, kcr_error_t *err) {
  kcr_predicate_t **n;
  if (!pred)
    return 0;
  if (kcr__predicate_failed(pred))
    return kcr_error_set(err, KCR_ENOMEM, "controller %s: predicate: out of memory", c->name);
  if (is_started(c)) {
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_EINVAL, "controller %s: filters are set before start", c->name);
  }
  n = kcr__realloc(c->filters, (c->nfilters + 1) * sizeof(kcr_predicate_t *));
  if (!n) {
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_ENOMEM, "controller %s: out of memory", c->name);
  }
  c->filters = n;
  c->filters[c->nfilters++] = pred;
  return 0;
}

void kcr__controller_set_primary_namespaced(kcr_controller_t *c, bool namespaced) {
  c->primary_namespaced = namespaced;
}

void kcr__controller_set_key_filter(kcr_controller_t *c, kcr__controller_key_fn fn, void *data) {
  c->key_filter = fn;
  c->key_data = data;
}

/* key_allowed asks the key filter about key ("ns/name" or "name"). */
static bool key_allowed(kcr_controller_t *c, const char *key) {
  char ns[256];
  const char *slash = strchr(key, '/');
  size_t len = slash ? (size_t)(slash - key) : 0;
  if (len >= sizeof(ns))
    len = sizeof(ns) - 1; /* namespaces are at most 63 characters: never cut */
  memcpy(ns, key, len);
  ns[len] = '\0';
  return c->key_filter(c, key, ns, slash ? slash + 1 : key, c->key_data);
}

kcr_informer_t *kcr__controller_primary_informer(kcr_controller_t *c) {
  KCR__LIST_EACH(&c->watches, watch_t, link, w) {
    if (w->kind == W_FOR)
      return w->inf;
  }
  return NULL;
}

unsigned kcr__controller_watch_roles(kcr_controller_t *c, const kcr_gvk *gvk) {
  static const unsigned bit[] = {
      [W_FOR] = KCR__WATCH_FOR, [W_OWNS] = KCR__WATCH_OWNS, [W_MAP] = KCR__WATCH_MAP};
  const char *g = gvk->group ? gvk->group : "";
  unsigned roles = 0;
  KCR__LIST_EACH(&c->watches, watch_t, link, w) {
    if (!w->raw && strcmp(w->group, g) == 0 && strcmp(w->kind_name, gvk->kind) == 0)
      roles |= bit[w->kind];
  }
  return roles;
}

/* hold notes key as in flight (before the filter is asked, so that a drain
 * that runs after a shrink sees it); false when out of memory. */
static bool hold(kcr_controller_t *c, const char *key) {
  bool ok = true;
  pthread_mutex_lock(&c->mu);
  if (c->ninflight == c->capinflight) {
    size_t cap = c->capinflight ? c->capinflight * 2 : 8;
    const char **v = kcr__realloc(c->inflight, cap * sizeof(*v));
    if (v) {
      c->inflight = v;
      c->capinflight = cap;
    } else {
      ok = false;
    }
  }
  if (ok)
    c->inflight[c->ninflight++] = key;
  pthread_mutex_unlock(&c->mu);
  return ok;
}

static void unhold(kcr_controller_t *c, const char *key) {
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->ninflight; i++) {
    if (c->inflight[i] == key) {
      c->inflight[i] = c->inflight[--c->ninflight];
      break;
    }
  }
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mu);
}

bool kcr__controller_drained(kcr_controller_t *c) {
  bool drained = true;
  if (!c->key_filter)
    return true;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->ninflight && drained; i++)
    drained = key_allowed(c, c->inflight[i]);
  pthread_mutex_unlock(&c->mu);
  return drained;
}

void kcr__controller_set_gate(kcr_controller_t *c, kcr__controller_gate_fn gate, void *data) {
  c->gate = gate;
  c->gate_data = data;
}

/* ---- event handlers (informer threads) ---- */

static void enqueue(kcr_controller_t *c, const char *ns, const char *name, int prio) {
  kcr_workqueue_add_opts ao = {0, false, prio};
  char key[KCR_META_KEY_MAX];
  int n = (ns && *ns) ? snprintf(key, sizeof(key), "%s/%s", ns, name)
                      : snprintf(key, sizeof(key), "%s", name);
  if (n < 0 || (size_t)n >= sizeof(key) || !*name) {
    ctl_log(c, KCR_LOG_ERROR, "cannot enqueue %s/%s", ns ? ns : "", name);
    return;
  }
  if (kcr_workqueue_add_with_opts(c->q, key, &ao) == KCR_ENOMEM)
    ctl_log(c, KCR_LOG_ERROR, "out of memory enqueueing %s", key);
}

int kcr_requests_add(kcr_requests_t *r, const char *ns, const char *name) {
  kcr_workqueue_add_opts ao = {0, false, r->priority};
  char key[KCR_META_KEY_MAX];
  int n;
  if (!name || !*name)
    return KCR_EINVAL;
  n = (ns && *ns) ? snprintf(key, sizeof(key), "%s/%s", ns, name)
                  : snprintf(key, sizeof(key), "%s", name);
  if (n < 0 || (size_t)n >= sizeof(key))
    return KCR_ETOOBIG;
  n = kcr_workqueue_add_with_opts(r->q, key, &ao);
  return n == KCR_ECLOSED ? 0 : n;
}

/* enqueue_owners: the child's controller owner, if it is of the primary kind. */
static void enqueue_owners(kcr_controller_t *c, const json_t *obj, int prio) {
  json_t *ref = kcr_meta_controller_ref(obj);
  const char *av, *kind, *name;
  size_t glen;
  const char *g;
  if (!ref || !c->primary_kind)
    return;
  av = json_string_value(json_object_get(ref, "apiVersion"));
  kind = json_string_value(json_object_get(ref, "kind"));
  name = json_string_value(json_object_get(ref, "name"));
  if (!av || !kind || !name)
    return;
  g = kcr_api_version_group(av, &glen);
  if (strlen(c->primary_group) != glen || memcmp(g, c->primary_group, glen) != 0 ||
      strcmp(kind, c->primary_kind) != 0)
    return;
  enqueue(c, c->primary_namespaced ? kcr_meta_namespace(obj) : "", name, prio);
}

/* enqueue_for enqueues what obj's event means for w's controller, at prio. */
static void enqueue_for(watch_t *w, const json_t *obj, int prio) {
  kcr_controller_t *c = w->ctl;
  if (!obj)
    return;
  switch (w->kind) {
  case W_FOR:
    if (kcr_trace_enabled()) {
      char key[KCR_META_KEY_MAX];
      if (kcr_meta_key(obj, key, sizeof(key)) == 0)
        kcr__trace_parents_note(c->trace_parents, key, obj);
    }
    enqueue(c, kcr_meta_namespace(obj), kcr_meta_name(obj), prio);
    break;
  case W_OWNS:
    enqueue_owners(c, obj, prio);
    break;
  case W_MAP: {
    kcr_requests_t r = {c, c->q, prio};
    w->fn(obj, &r, w->fn_data);
    break;
  }
  }
}

static bool pass(watch_t *w, kcr_event_type t, const json_t *old_obj, const json_t *obj) {
  kcr_controller_t *c = w->ctl;
  for (size_t i = 0; i < c->nfilters; i++)
    if (!kcr_predicate_eval(c->filters[i], t, old_obj, obj))
      return false;
  return kcr_predicate_eval(w->pred, t, old_obj, obj);
}

/* on_add: an object of the initial list goes in low (controller-runtime's
 * handlers, for events with IsInInitialList). */
static void on_add(json_t *obj, bool initial, void *data) {
  watch_t *w = data;
  if (pass(w, KCR_EVENT_CREATE, NULL, obj))
    enqueue_for(w, obj, initial ? KCR_WORKQUEUE_PRIORITY_LOW : KCR_WORKQUEUE_PRIORITY_DEFAULT);
}

/* unchanged tells a resync (or a relist that found nothing new) from a change:
 * both sides carry the same resourceVersion, controller-runtime's test. */
static bool unchanged(const json_t *old_obj, const json_t *new_obj) {
  const char *a, *b;
  if (!old_obj || !new_obj)
    return false;
  a = kcr_meta_resource_version(old_obj);
  b = kcr_meta_resource_version(new_obj);
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static void on_update(json_t *old_obj, json_t *new_obj, void *data) {
  watch_t *w = data;
  int prio;
  if (!pass(w, KCR_EVENT_UPDATE, old_obj, new_obj))
    return;
  prio = unchanged(old_obj, new_obj) ? KCR_WORKQUEUE_PRIORITY_LOW : KCR_WORKQUEUE_PRIORITY_DEFAULT;
  if (w->kind == W_FOR) {
    enqueue_for(w, new_obj ? new_obj : old_obj, prio);
    return;
  }
  enqueue_for(w, old_obj, prio);
  enqueue_for(w, new_obj, prio);
}

static void on_delete(json_t *obj, const char *tombstone_key, void *data) {
  watch_t *w = data;
  if (!obj) {
    ctl_log(w->ctl, KCR_LOG_DEBUG, "delete of %s without a final state, dropped",
            tombstone_key ? tombstone_key : "?");
    return;
  }
  if (pass(w, KCR_EVENT_DELETE, NULL, obj))
    enqueue_for(w, obj, KCR_WORKQUEUE_PRIORITY_DEFAULT);
}

static unsigned handler_flags(const kcr_controller_t *c, const watch_t *w);

bool kcr__controller_handler(kcr_controller_t *c, size_t i, kcr_event_handler *out) {
  kcr__list_node_t *n = c->watches.first;
  watch_t *w;
  while (n && i--)
    n = n->next;
  if (!n)
    return false;
  w = KCR__CONTAINER_OF(n, watch_t, link);
  out->on_add = on_add;
  out->on_update = on_update;
  out->on_delete = on_delete;
  out->data = w;
  return true;
}

unsigned kcr__controller_handler_flags(kcr_controller_t *c, size_t i) {
  kcr__list_node_t *n = c->watches.first;
  while (n && i--)
    n = n->next;
  return n ? handler_flags(c, KCR__CONTAINER_OF(n, watch_t, link)) : 0;
}

/* ---- reconcile ---- */

static void observe(kcr_controller_t *c, int64_t ns, kcr_reconcile_outcome o, bool error,
                    bool terminal) {
  kcr_metric_inc(c->m_total[o]);
  if (error)
    kcr_metric_inc(c->m_errors);
  if (terminal)
    kcr_metric_inc(c->m_terminal);
  kcr_metric_observe(c->m_time, (double)ns / 1e9);
}

static void active(kcr_controller_t *c, int d) {
  kcr_metric_add(c->m_active, d);
}

/* ctx_init makes ctx a fresh context of c for ns/name (borrowed). */
static void ctx_init(kcr_reconcile_ctx_t *ctx, kcr_controller_t *c, const char *ns,
                     const char *name) {
  memset(ctx, 0, sizeof(*ctx));
  ctx->c = c;
  ctx->ns = ns;
  ctx->name = name;
  ctx->client = c->client;
  ctx->client.cancel = c->cancel;
  ctx->api_reader = c->api_reader;
  ctx->api_reader.cancel = c->cancel;
  ctx->cancel = c->cancel;
  if (!ctx->client.field_manager)
    ctx->client.field_manager = c->name; /* as controller-runtime's manager names its applies */
  if (kcr_uuid_v4(ctx->id) != 0)
    snprintf(ctx->id, sizeof(ctx->id), "%s", "00000000-0000-0000-0000-000000000000");
}

kcr_reconcile_ctx_t *kcr__reconcile_ctx_create(kcr_controller_t *c, const char *ns,
                                               const char *name) {
  kcr_reconcile_ctx_t *ctx = kcr__malloc(sizeof(*ctx));
  if (ctx)
    ctx_init(ctx, c, ns, name);
  return ctx;
}

void kcr__reconcile_ctx_reset(kcr_reconcile_ctx_t *ctx) {
  ctx_init(ctx, ctx->c, ctx->ns, ctx->name);
}

bool kcr__reconcile_ctx_terminal(const kcr_reconcile_ctx_t *ctx) {
  return ctx->terminal;
}

void kcr__reconcile_ctx_destroy(kcr_reconcile_ctx_t *ctx) {
  kcr__free(ctx);
}

/* reconcile_key reconciles key, handed out at priority prio, and acts on the result. */
static void reconcile_key(kcr_controller_t *c, const char *key, int prio) {
  kcr_reconcile_ctx_t ctx;
  kcr_reconcile_request req;
  kcr_result res;
  kcr_workqueue_add_opts ao;
  char ns[NS_MAX];
  size_t nslen;
  const char *name;
  int64_t t0, dt;
  kcr_span_t *span;
  kcr_cancel_t *deadline_token = NULL;
  int rc;
  if (kcr_meta_split_key(key, &nslen, &name) != 0 || nslen >= sizeof(ns)) {
    ctl_log(c, KCR_LOG_ERROR, "bad key %s, dropped", key);
    kcr_workqueue_forget(c->q, key);
    return;
  }
  memcpy(ns, key, nslen);
  ns[nslen] = '\0';
  ctx_init(&ctx, c, ns, name);
  req.ns = ns;
  req.name = name;
  memset(&res, 0, sizeof(res));
  res.priority = prio;

  span = kcr__reconcile_span_start(c->trace_parents, key, c->name, c->primary_group,
                                   c->primary_kind, ns, name, ctx.id);
  active(c, 1);
  t0 = kcr_clock_now(c->clock);
  if (c->reconcile_timeout > 0) {
    /* The reconcile's own token (context.WithTimeout of the controller's):
     * its requests end at the deadline, and at the controller's stop. */
    ctx.deadline = t0 + c->reconcile_timeout;
    if (kcr_cancel_create_child(c->cancel, c->clock, ctx.deadline, &deadline_token, NULL) == 0)
      ctx.client.cancel = ctx.api_reader.cancel = ctx.cancel = deadline_token;
    else
      ctl_log(c, KCR_LOG_ERROR, "out of memory: %s runs without its deadline token", key);
  }
  rc = c->reconcile(&ctx, &req, &res, c->data);
  dt = kcr_clock_now(c->clock) - t0;
  kcr_cancel_destroy(deadline_token);
  active(c, -1);
  /* As controller-runtime: only a reconcile still running when its own deadline
   * passed is a timeout, not one that finished in time. */
  if (c->reconcile_timeout > 0 && dt >= c->reconcile_timeout)
    kcr_metric_inc(c->m_timeouts);

  /* every requeue goes in at the result's priority, as upstream's */
  memset(&ao, 0, sizeof(ao));
  ao.priority = res.priority;
  if (rc != 0) {
    ao.rate_limited = true;
    if (ctx.terminal)
      kcr_workqueue_forget(c->q, key);
    else
      kcr_workqueue_add_with_opts(c->q, key, &ao);
    observe(c, dt, KCR_RECONCILE_ERROR, true, ctx.terminal);
    char error[KCR_ERROR_MESSAGE_MAX + 64];
    if (res.requeue || res.requeue_after_ns > 0)
      ctx_log(&ctx, KCR_LOG_WARN,
              "Warning: Reconciler returned both a non-zero result and a non-nil error. The "
              "result will always be ignored if the error is non-nil and the non-nil error "
              "causes requeuing with exponential backoff",
              NULL);
    snprintf(error, sizeof(error), "%s%s%s%s", ctx.terminal ? "terminal error: " : "",
             kcr_err_name(rc), ctx.err.message[0] ? ": " : "", ctx.err.message);
    ctx_log(&ctx, KCR_LOG_ERROR, "Reconciler error", error);
  } else if (res.requeue_after_ns > 0) {
    kcr_workqueue_forget(c->q, key);
    ao.after_ns = res.requeue_after_ns;
    kcr_workqueue_add_with_opts(c->q, key, &ao);
    observe(c, dt, KCR_RECONCILE_REQUEUE_AFTER, false, false);
  } else if (res.requeue) {
    ao.rate_limited = true;
    kcr_workqueue_add_with_opts(c->q, key, &ao);
    observe(c, dt, KCR_RECONCILE_REQUEUE, false, false);
  } else {
    kcr_workqueue_forget(c->q, key);
    observe(c, dt, KCR_RECONCILE_SUCCESS, false, false);
    if (kcr_log_enabled(KCR_LOG_V(5)))
      ctx_log(&ctx, KCR_LOG_V(5), "Reconcile successful", NULL); /* as controller-runtime's V(5) */
  }
  kcr__reconcile_span_end(span, rc, ctx.terminal, res.requeue, res.requeue_after_ns,
                          ctx.err.message);
}

int kcr__controller_process_next(kcr_controller_t *c) {
  char *key = NULL;
  int rc, prio = 0;
  for (;;) {
    rc = kcr_workqueue_get_with_priority(c->q, &key, &prio);
    if (rc == KCR_ENOMEM) {
      struct timespec ts = {0, 10L * 1000 * 1000};
      nanosleep(&ts, NULL);
      continue;
    }
    break;
  }
  if (rc)
    return rc;
  if (atomic_load(&c->stopping)) {
    /* dropped: the controller is stopping */
  } else if (c->gate && !c->gate(c->gate_data)) {
    kcr_log(KCR_LOG_DEBUG, "controller", "controller=%s: not leading, %s not reconciled", c->name,
            key);
    kcr_workqueue_add_opts ao = {GATE_RETRY, false, prio};
    kcr_workqueue_add_with_opts(c->q, key, &ao);
  } else if (c->key_filter) {
    /* sharded: held first, then asked, so that a drain cannot miss it */
    if (!hold(c, key)) {
      kcr_workqueue_add_opts ao = {GATE_RETRY, false, prio};
      kcr_workqueue_add_with_opts(c->q, key, &ao); /* out of memory: later */
    } else {
      if (key_allowed(c, key))
        reconcile_key(c, key, prio);
      else
        kcr_workqueue_forget(c->q, key); /* another replica's now */
      unhold(c, key);
    }
  } else {
    reconcile_key(c, key, prio);
  }
  kcr_workqueue_done(c->q, key);
  kcr_free(key);
  return 0;
}

static void *worker_main(void *arg) {
  kcr_controller_t *c = arg;
  while (kcr__controller_process_next(c) == 0) {
  }
  pthread_mutex_lock(&c->mu);
  c->running--;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* ---- start, stop ---- */

static void unregister(kcr_controller_t *c) {
  KCR__LIST_EACH(&c->watches, watch_t, link, w) {
    if (w->registered) {
      kcr_informer_remove_handler(w->inf, w->handler_id);
      w->registered = false;
    }
  }
}

/* handler_flags: a For or Owns watch whose predicates are all of metadata
 * reads only metadata (enqueue_for, unchanged), so its handler is handed
 * metadata alone; a mapping function may read anything. */
static unsigned handler_flags(const kcr_controller_t *c, const watch_t *w) {
  if (w->kind == W_MAP || !kcr__predicate_metadata_only(w->pred))
    return 0;
  for (size_t i = 0; i < c->nfilters; i++)
    if (!kcr__predicate_metadata_only(c->filters[i]))
      return 0;
  return KCR__HANDLER_METADATA;
}

static int register_watches(kcr_controller_t *c, kcr_error_t *err) {
  int rc;
  KCR__LIST_EACH(&c->watches, watch_t, link, w) {
    kcr_gvk gvk = {w->group, w->version, w->kind_name};
    kcr_event_handler h = {on_add, on_update, on_delete, w};
    if (w->metadata_only && !c->source.get_metadata_informer)
      rc = kcr_error_set(err, KCR_ENOTSUP, "no metadata-only informers from this source");
    else if (w->metadata_only)
      rc = c->source.get_metadata_informer(c->source.data, &gvk, &w->inf, err);
    else
      rc = w->raw ? 0 : c->source.get_informer(c->source.data, &gvk, &w->inf, err);
    if (rc != 0) {
      kcr_error_prefix(err, "controller %s: kind %s: ", c->name, w->kind_name);
      return rc;
    }
    if ((rc = kcr__informer_add_handler_flags(w->inf, &h, handler_flags(c, w), &w->handler_id,
                                              err)) != 0) {
      kcr_error_prefix(err, "controller %s: kind %s: ", c->name, w->kind_name);
      return rc;
    }
    w->registered = true;
  }
  return 0;
}

/* check_startable: what start and warm-up both need of the set-up. */
static int check_startable(kcr_controller_t *c, kcr_error_t *err) {
  bool has_for = c->primary_kind != NULL, has_owns = false, needs_source = false;
  KCR__LIST_EACH(&c->watches, watch_t, link, w)
  has_owns |= w->kind == W_OWNS;
  if (kcr__list_empty(&c->watches) && atomic_load(&c->nchannels) == 0)
    return kcr_error_set(err, KCR_EINVAL, "controller %s: nothing to watch (call for())", c->name);
  if (has_owns && !has_for)
    return kcr_error_set(err, KCR_EINVAL, "controller %s: owns() needs for()", c->name);
  KCR__LIST_EACH(&c->watches, watch_t, link, w)
  needs_source |= !w->raw;
  if (!c->source.get_informer && needs_source)
    return kcr_error_set(err, KCR_EINVAL, "controller %s: no informer source", c->name);
  return 0;
}

/*
 * start_sources: the part of a start that needs no worker, run once, by
 * kcr_controller_warmup or else by kcr_controller_start: learn the For kind's
 * scope, register a handler on every watched informer (its events fill the
 * queue from here on) and wait for them all to sync.
 */
static int start_sources(kcr_controller_t *c, kcr_error_t *err) {
  int64_t deadline;
  int rc;
  if (c->primary_kind && c->source.is_namespaced) {
    kcr_gvk pg = {c->primary_group, KCR__CONTAINER_OF(c->watches.first, watch_t, link)->version,
                  c->primary_kind};
    KCR__LIST_EACH(&c->watches, watch_t, link, w)
    if (w->kind == W_FOR)
      pg.version = w->version;
    if ((rc = c->source.is_namespaced(c->source.data, &pg, &c->primary_namespaced, err)) != 0) {
      kcr_error_prefix(err, "controller %s: ", c->name);
      return rc;
    }
  }
  if ((rc = register_watches(c, err)) != 0)
    goto fail;
  deadline = kcr_clock_now(kcr_clock_system()) + c->sync_timeout;
  KCR__LIST_EACH(&c->watches, watch_t, link, w) {
    int64_t left = deadline - kcr_clock_now(kcr_clock_system());
    rc = kcr_informer_wait_for_sync(w->inf, left > 0 ? left : 1, err);
    if (rc) {
      kcr_error_prefix(err, "controller %s: timed out waiting for cache to be synced for Kind %s: ",
                       c->name, w->kind_name);
      goto fail;
    }
  }
  /* ...and until each handler has been called for the whole first list, as
   * controller-runtime's Kind source waits on its handler registration's
   * HasSynced: otherwise a change that arrives now waits behind the rest of
   * the list in the handler's buffer, where no queue priority reaches it. */
  KCR__LIST_EACH(&c->watches, watch_t, link, w) {
    while (!kcr_informer_handler_has_synced(w->inf, w->handler_id)) {
      struct timespec ts = {0, 1000L * 1000};
      if (kcr_clock_now(kcr_clock_system()) >= deadline) {
        rc = kcr_error_set(err, KCR_ETIMEDOUT,
                           "controller %s: timed out waiting for the handler of Kind %s to see "
                           "its first list",
                           c->name, w->kind_name);
        goto fail;
      }
      nanosleep(&ts, NULL);
    }
  }
  pthread_mutex_lock(&c->mu);
  c->warmed = true;
  pthread_mutex_unlock(&c->mu);
  return 0;
fail:
  unregister(c);
  return rc;
}

/*
 * close_setup checks the set-up and closes it for warm-up (start false) or
 * start: refused after a start or a stop; *warmed tells whether the sources
 * have started already.
 */
static int close_setup(kcr_controller_t *c, bool start, bool *warmed, kcr_error_t *err) {
  int rc;
  if ((rc = check_startable(c, err)) != 0)
    return rc;
  pthread_mutex_lock(&c->mu);
  if (c->workers_started || c->stop_done) {
    pthread_mutex_unlock(&c->mu);
    return kcr_error_set(err, KCR_EINVAL, "controller %s: %s", c->name,
                         start ? "started twice" : "warm-up after start or stop");
  }
  c->started = true; /* set-up calls are refused from here on */
  c->workers_started = start;
  *warmed = c->warmed;
  pthread_mutex_unlock(&c->mu);
  return 0;
}

int kcr_controller_warmup(kcr_controller_t *c, kcr_error_t *err) {
  bool warmed = false;
  int rc;
  if ((rc = close_setup(c, false, &warmed, err)) != 0 || warmed)
    return rc;
  ctl_log(c, KCR_LOG_INFO, "Warming up Controller");
  return start_sources(c, err);
}

int kcr_controller_start(kcr_controller_t *c, kcr_error_t *err) {
  bool warmed = false;
  int rc;
  if ((rc = close_setup(c, true, &warmed, err)) != 0)
    return rc;
  if (!warmed && (rc = start_sources(c, err)) != 0)
    return rc;
  ctl_log(c, KCR_LOG_INFO, "Starting Controller");
  pthread_mutex_lock(&c->mu);
  c->threads = kcr__calloc((size_t)c->workers, sizeof(pthread_t));
  if (!c->threads) {
    pthread_mutex_unlock(&c->mu);
    rc = kcr_error_set(err, KCR_ENOMEM, "controller %s: out of memory", c->name);
    goto fail;
  }
  for (int i = 0; i < c->workers; i++) {
    if (pthread_create(&c->threads[i], NULL, worker_main, c) != 0)
      break;
    c->nthreads++;
    c->running++;
  }
  pthread_mutex_unlock(&c->mu);
  if (c->nthreads == 0) {
    rc = kcr_error_set(err, KCR_ESYS, "controller %s: cannot start workers", c->name);
    goto fail;
  }
  {
    kcr_log_field f[CTL_FIELDS_MAX];
    size_t n = ctl_fields(c, f);
    f[n++] = KCR_LOG_INT("worker count", c->nthreads);
    kcr_log_fields(KCR_LOG_INFO, "controller", "Starting workers", f, n);
  }
  return 0;
fail:
  unregister(c);
  return rc;
}

int kcr_controller_stop(kcr_controller_t *c, int64_t timeout_ns) {
  int64_t deadline;
  bool was_started = false;
  int rc = 0;
  atomic_store(&c->stopping, true);
  pthread_mutex_lock(&c->mu);
  if (!c->stop_done) {
    c->stop_done = true;
    was_started = c->started;
    pthread_mutex_unlock(&c->mu);
    if (was_started)
      ctl_log(c, KCR_LOG_INFO, "Shutdown signal received, waiting for all workers to finish");
    unregister(c);
    if (c->cancel)
      kcr_cancel_fire(c->cancel);
    kcr_workqueue_shutdown(c->q);
    pthread_mutex_lock(&c->mu);
  }
  deadline = kcr_clock_now(kcr_clock_system()) + timeout_ns;
  while (c->running > 0) {
    if (timeout_ns <= 0) {
      pthread_cond_wait(&c->cond, &c->mu);
    } else if (kcr_clock_timedwait(kcr_clock_system(), &c->cond, &c->mu, deadline) ==
                   KCR_ETIMEDOUT &&
               c->running > 0) {
      rc = KCR_ETIMEDOUT;
      break;
    }
  }
  was_started = rc == 0 && c->nthreads > 0 && !c->finished_logged;
  if (was_started)
    c->finished_logged = true;
  pthread_mutex_unlock(&c->mu);
  if (was_started)
    ctl_log(c, KCR_LOG_INFO, "All workers finished");
  return rc;
}

void kcr_controller_destroy(kcr_controller_t *c) {
  if (!c)
    return;
  if (atomic_load(&c->nchannels) > 0)
    kcr__channel_forget_controller(c);
  if (c->q) {
    kcr_controller_stop(c, 0);
    for (int i = 0; i < c->nthreads; i++)
      pthread_join(c->threads[i], NULL);
  }
  kcr__free(c->threads);
  kcr__free(c->inflight);
  KCR__LIST_FOREACH_SAFE(&c->watches, n, next) {
    watch_t *w = KCR__CONTAINER_OF(n, watch_t, link);
    kcr_predicate_destroy(w->pred);
    kcr__free(w->group);
    kcr__free(w->version);
    kcr__free(w->kind_name);
    kcr__free(w);
  }
  for (size_t i = 0; i < c->nfilters; i++)
    kcr_predicate_destroy(c->filters[i]);
  kcr__free(c->filters);
  kcr_workqueue_destroy(c->q);
  kcr_cancel_destroy(c->cancel);
  kcr__trace_parents_destroy(c->trace_parents);
  kcr__free(c->primary_group);
  kcr__free(c->primary_kind);
  kcr__free(c->name);
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->mu);
  kcr__free(c);
}
