/* SPDX-License-Identifier: MIT */
/*
 * informer.c: the shared informer.
 *
 * Reflector (its own thread, cache/reflector.c): lists and watches the
 * resource into the FIFO as compact objects (cache/cobj.h). The informer owns
 * it: configures, starts and stops it, and reads its state and counters.
 *
 * Processing (its own thread): pops the FIFO; each delta updates the store and
 * becomes a notification appended to every listener's buffer, under the
 * handler-list lock, so that a handler added late can be given the store's
 * contents without missing or repeating an event. Nothing in a pop runs user
 * code: the FIFO lock is held only for the store update and the appends. A
 * notification holds the compact object, shared by all handlers through a
 * kcr__lazy_t, which the first listener to need the tree parses.
 *
 * Listeners (cache/listener.c): one thread per handler, fed by an unbounded
 * buffer, calls the handler in order. The informer keeps them in a list under
 * handlers_mu, appends to them and stops them.
 *
 * Read-your-own-writes: processed_rv is a resource version up to which every
 * change is in the store: the reflector's last known version (an event, a list or
 * a bookmark), taken once the FIFO has drained past it (read in that order, see
 * note_drained). It is not raised per popped delta: the FIFO pops keys in the
 * order they were first queued, so a popped key may carry a newer version than a
 * key still queued behind it. Waiters for a version sleep on cond.
 *
 * Diagnostics: counters are atomics bumped where things happen (an event
 * received, a handler called, a relist decided); with a registry they also
 * bump kcr_informer_* counter series looked up once at create, and a collector
 * refreshes the gauges (versions, FIFO depth, backlog, time since the last
 * event) at scrape time.
 *
 * A set of namespaces (kcr_informer_options.namespaces) is an informer per
 * namespace behind a shell whose calls go to cache/informer_multi.c.
 *
 * Lock order: the metrics registry (a collector) -> FIFO -> handlers_mu -> store
 * -> a listener's mu; the metrics registry (a collector) -> mu (sync and
 * read-your-own-writes state), which is held with no other lock of the
 * informer's. The reflector's own mu is held only to take a watch's own mutex
 * (kcr_watch_stop), never another.
 */
#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cobj.h"
#include "cache/informer_multi_internal.h"
#include "cache/listener_internal.h"
#include "cache/reflector_internal.h"
#include "cache/store_internal.h"
#include "kcr/clock.h"
#include "kcr/informer.h"
#include "kcr/log.h"
#include "kcr/meta.h"
#include "util/alloc.h"
#include "util/container.h"
#include "util/list.h"
#include "util/pbscan.h"

#define DEFAULT_PAGE 500

struct kcr_informer {
  kcr__multi_t *multi;  /* non-NULL: a shell over a namespace set; nothing else is set */
  kcr_informer_t *self; /* this informer, as a one-part array (kcr__informer_parts) */
  char *group, *version, *plural, *kind, *ns, *label_selector, *field_selector;
  kcr_shard_set_t *shard; /* NULL: not sharded (the reflector's first set) */
  char *shard_selector;   /* shard's selector text */
  pthread_mutex_t shard_mu;
  char *shown_selector; /* protected by shard_mu: the latest set_shard's selector */
  int64_t resync_ns;
  kcr_clock_t *clock;

  kcr_store_t *store;
  kcr_delta_fifo_t *fifo;
  kcr__reflector_t refl; /* lists and watches into fifo; configured at create */

  pthread_mutex_t handlers_mu;
  kcr__list_t handlers; /* protected by handlers_mu; kcr__listener_t by link, in order */
  uint64_t next_id;     /* protected by handlers_mu */

  pthread_t processor_thread;
  int started; /* owner thread */
  int stopped; /* owner thread */

  pthread_mutex_t mu;
  pthread_cond_t cond;
  int stopping;          /* protected by mu */
  uint64_t processed_rv; /* protected by mu */
  uint64_t lag_probe_rv; /* protected by mu: a bookmark's version, 0: none pending */
  int64_t lag_probe_ns;  /* protected by mu: when that bookmark was received */
  int synced;            /* protected by mu */

  /* diagnostics (kcr_informer_stats; the reflector's counters are in refl) */
  atomic_uint_fast64_t deliveries;
  atomic_int_fast64_t watch_lag_ns; /* bookmark received -> store past it; -1: none yet */
  /* metrics: children of the registry's families (immutable; NULL without) */
  kcr_metrics_registry_t *registry;   /* borrowed */
  kcr_metrics_collector_t *collector; /* refreshes the gauges */
  kcr_metric_child_t *m_deliveries;
  kcr_metric_child_t *m_seen_rv, *m_processed_rv, *m_depth, *m_since, *m_backlog;
  kcr_metric_child_t *m_lag;
  /* metadata_only: the user's transform, after the reduction (immutable) */
  kcr_transform_fn user_transform;
  void *user_transform_data;
};

/* ---- helpers ---- */

static char *dup_opt(const char *s) {
  return s && *s ? kcr__strdup(s) : NULL;
}

static const char *kind_name(kcr_informer_t *inf) {
  return inf->kind ? inf->kind : inf->plural;
}

static const char *const relist_names[KCR_INFORMER_RELIST_REASONS] = {"gone", "error", "timeout",
                                                                      "shard"};

const char *kcr_informer_relist_reason_name(kcr_informer_relist_reason r) {
  return (unsigned)r < KCR_INFORMER_RELIST_REASONS ? relist_names[r] : "unknown";
}

/* raise_processed also closes a pending bookmark probe: the watch-to-store
 * lag is the time from a bookmark's arrival until everything the watch
 * delivered before it is in the store (and its handlers notified). */
static void raise_processed(kcr_informer_t *inf, uint64_t rv) {
  pthread_mutex_lock(&inf->mu);
  if (rv > inf->processed_rv) {
    inf->processed_rv = rv;
    pthread_cond_broadcast(&inf->cond);
  }
  if (inf->lag_probe_rv && inf->processed_rv >= inf->lag_probe_rv) {
    atomic_store(&inf->watch_lag_ns, kcr_clock_now(inf->clock) - inf->lag_probe_ns);
    inf->lag_probe_rv = 0;
  }
  pthread_mutex_unlock(&inf->mu);
}

static int default_transform(json_t *obj, void *data) {
  (void)data;
  return kcr_meta_strip_managed_fields(obj);
}

/* metadata_transform reduces obj to apiVersion, kind and metadata without
 * managedFields, then runs the user's transform (the informer, data) if any:
 * what a metadata-only informer stores, whether the server sent
 * PartialObjectMetadata or, falling back, whole objects. */
static int metadata_transform(json_t *obj, void *data) {
  kcr_informer_t *inf = data;
  kcr__reflector_metadata_reduce(obj);
  return inf->user_transform ? inf->user_transform(obj, inf->user_transform_data) : 0;
}

/* ---- processing ---- */

/* distribute hands one change (compact objects, borrowed) to every listener.
 * handlers_mu held. */
static void distribute(kcr_informer_t *inf, kcr__note_type type, bool initial,
                       kcr__cobj_t *old_cobj, kcr__cobj_t *cobj, const char *key,
                       const char *tombstone) {
  kcr__lazy_t *old_obj = NULL, *obj = NULL;
  int nomem = 0;
  if (kcr__list_empty(&inf->handlers))
    return;
  if ((old_cobj && !(old_obj = kcr__lazy_new(old_cobj))) || (cobj && !(obj = kcr__lazy_new(cobj))))
    nomem = 1;
  KCR__LIST_EACH(&inf->handlers, kcr__listener_t, link, h)
  if (nomem || kcr__listener_notify(h, type, initial, old_obj, obj, tombstone) != 0)
    kcr_log(KCR_LOG_ERROR, "informer", "%s: out of memory: a handler misses the %s of %s",
            kind_name(inf),
            type == KCR__NOTE_ADD      ? "add"
            : type == KCR__NOTE_UPDATE ? "update"
                                       : "delete",
            key);
  kcr__lazy_unref(old_obj);
  kcr__lazy_unref(obj);
}

/* process applies one key's deltas (compact objects) to the store and tells
 * the handlers. The FIFO lock is held; nothing is parsed here. */
static int process(const char *key, const kcr_delta *deltas, size_t n, bool initial, bool *requeue,
                   void *data) {
  kcr_informer_t *inf = data;
  int rc = 0;
  (void)requeue;

  pthread_mutex_lock(&inf->handlers_mu);
  for (size_t i = 0; i < n && rc == 0; i++) {
    const kcr_delta *d = &deltas[i];
    kcr__cobj_t *c = kcr__cobj_of_slot(d->object), *old = NULL;
    kcr_error_t err;
    kcr_error_clear(&err);
    if (d->type == KCR_DELTA_DELETED) {
      /* the deletion's version is the store's too, when it is newer (a tombstone's
       * last known state is older, and leaves it) */
      kcr__store_remove(inf->store, d->tombstone_key ? d->tombstone_key : key, c);
      distribute(inf, KCR__NOTE_DELETE, false, NULL, c, key, d->tombstone_key);
      continue;
    }
    assert(c); /* everything the reflector queues is compact */
    rc = kcr__store_put(inf->store, c, &old, &err);
    if (rc == 0 && old)
      distribute(inf, KCR__NOTE_UPDATE, false, old, c, key, NULL);
    else if (rc == 0)
      distribute(inf, KCR__NOTE_ADD, initial, NULL, c, key, NULL);
    kcr__cobj_unref(old);
    if (rc)
      kcr_log(KCR_LOG_ERROR, "informer", "%s: cannot store %s: %s", kind_name(inf), key,
              err.message);
  }
  pthread_mutex_unlock(&inf->handlers_mu);
  return rc;
}

/* note_drained: when the FIFO is empty, everything up to the reflector's last
 * version (read first) has been popped, and a pop holds the FIFO lock (which
 * kcr_delta_fifo_len takes) until its processing is done. An empty first list
 * pops nothing, so sync is noted here too. Any thread; mu not held. */
static void note_drained(kcr_informer_t *inf) {
  uint64_t rv;
  rv = kcr__reflector_last_rv(&inf->refl);
  if (kcr_delta_fifo_len(inf->fifo) == 0) {
    raise_processed(inf, rv);
    if (kcr_delta_fifo_has_synced(inf->fifo) && atomic_load(&inf->refl.lists) > 0) {
      pthread_mutex_lock(&inf->mu);
      if (!inf->synced) {
        inf->synced = 1;
        pthread_cond_broadcast(&inf->cond);
      }
      pthread_mutex_unlock(&inf->mu);
    }
  }
}

static void *processor_main(void *arg) {
  kcr_informer_t *inf = arg;
  int64_t next_resync = inf->resync_ns ? kcr_clock_now(inf->clock) + inf->resync_ns : 0;
  for (;;) {
    int rc = kcr_delta_fifo_pop(inf->fifo, process, inf);
    if (rc == KCR_ECLOSED)
      break;
    note_drained(inf);
    if (next_resync && kcr_clock_now(inf->clock) >= next_resync) {
      kcr_delta_fifo_resync(inf->fifo, NULL);
      next_resync = kcr_clock_now(inf->clock) + inf->resync_ns;
    }
  }
  return NULL;
}

/* ---- diagnostics ---- */

/* count_listeners sums the handlers' buffers. handlers_mu not held. */
static void count_listeners(kcr_informer_t *inf, uint64_t *backlog, uint64_t *handlers) {
  *backlog = 0;
  *handlers = 0;
  pthread_mutex_lock(&inf->handlers_mu);
  KCR__LIST_EACH(&inf->handlers, kcr__listener_t, link, h) {
    *backlog += kcr__listener_pending(h);
    (*handlers)++;
  }
  pthread_mutex_unlock(&inf->handlers_mu);
}

static double since_last_event(kcr_informer_t *inf) {
  int64_t last = atomic_load(&inf->refl.last_event_ns), now;
  if (!last)
    return 0;
  now = kcr_clock_now(inf->clock);
  return now > last ? (double)(now - last) / 1e9 : 0;
}

/* on_collect refreshes the gauges (the rendering thread, the registry's lock held). */
static void on_collect(kcr_metrics_emitter_t *e, void *data) {
  kcr_informer_t *inf = data;
  uint64_t backlog, handlers, processed;
  (void)e;
  pthread_mutex_lock(&inf->mu);
  processed = inf->processed_rv;
  pthread_mutex_unlock(&inf->mu);
  count_listeners(inf, &backlog, &handlers);
  kcr_metric_set(inf->m_seen_rv, (double)atomic_load(&inf->refl.last_seen_rv));
  kcr_metric_set(inf->m_processed_rv, (double)processed);
  kcr_metric_set(inf->m_depth, (double)kcr_delta_fifo_len(inf->fifo));
  kcr_metric_set(inf->m_backlog, (double)backlog);
  kcr_metric_set(inf->m_since, since_last_event(inf));
  if (atomic_load(&inf->watch_lag_ns) >= 0)
    kcr_metric_set(inf->m_lag, (double)atomic_load(&inf->watch_lag_ns) / 1e9);
}

/* register_metrics registers the kcr_informer_* families on r, creates this
 * informer's series at zero and adds the collector. */
static int register_metrics(kcr_informer_t *inf, kcr_metrics_registry_t *r, kcr_error_t *err) {
  static const char *const l3[] = {"group", "version", "kind", NULL};
  static const char *const l_type[] = {"group", "version", "kind", "type", NULL};
  static const char *const l_reason[] = {"group", "version", "kind", "reason", NULL};
  const char *g = inf->group, *v = inf->version, *k = kind_name(inf);
  kcr_metric_t *events, *deliv, *relists, *seen, *proc, *depth, *since, *backlog, *lag, *shard;
  int rc, ok = 1;

  if ((rc = kcr_metrics_counter(r, "kcr_informer_events_total",
                                "Watch events an informer received, by type.", l_type, &events,
                                err)) != 0 ||
      (rc = kcr_metrics_counter(r, "kcr_informer_handler_deliveries_total",
                                "Calls an informer made to its event handlers.", l3, &deliv,
                                err)) != 0 ||
      (rc = kcr_metrics_counter(r, "kcr_informer_relists_total",
                                "Lists an informer's reflector started after its first, by reason.",
                                l_reason, &relists, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, "kcr_informer_last_seen_resource_version",
                              "Resource version of the latest watch event received.", l3, &seen,
                              err)) != 0 ||
      (rc = kcr_metrics_gauge(r, "kcr_informer_last_processed_resource_version",
                              "Resource version up to which the informer's store is up to date.",
                              l3, &proc, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, "kcr_informer_queue_depth",
                              "Keys waiting in the informer's DeltaFIFO.", l3, &depth, err)) != 0 ||
      (rc =
           kcr_metrics_gauge(r, "kcr_informer_seconds_since_last_event",
                             "Seconds since the informer's latest watch event, bookmarks included.",
                             l3, &since, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, "kcr_informer_listener_backlog",
                              "Notifications waiting in the informer's handler buffers.", l3,
                              &backlog, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, "kcr_informer_watch_lag_seconds",
                              "Seconds from the latest measured bookmark's arrival until the "
                              "store held everything the watch sent before it.",
                              l3, &lag, err)) != 0 ||
      (rc = kcr_metrics_counter(r, "kcr_informer_shard_filtered_total",
                                "Objects outside a sharded informer's shard, dropped by the "
                                "informer: sent anyway by an API server that ignores "
                                "shardSelector, or filtered on the client by design (the "
                                "owner-uid key).",
                                l3, &shard, err)) != 0)
    return rc;
  for (int t = KCR_WATCH_ADDED; t <= KCR_WATCH_ERROR; t++)
    ok &= (inf->refl.m_received[t - 1] = kcr_metric_withv(
               events, g, v, k, kcr_watch_event_type_name((kcr_watch_event_type)t), NULL)) != NULL;
  for (int i = 0; i < KCR_INFORMER_RELIST_REASONS; i++)
    ok &= (inf->refl.m_relists[i] = kcr_metric_withv(relists, g, v, k, relist_names[i], NULL)) !=
          NULL;
  ok &= (inf->m_deliveries = kcr_metric_withv(deliv, g, v, k, NULL)) != NULL;
  ok &= (inf->m_seen_rv = kcr_metric_withv(seen, g, v, k, NULL)) != NULL;
  ok &= (inf->m_processed_rv = kcr_metric_withv(proc, g, v, k, NULL)) != NULL;
  ok &= (inf->m_depth = kcr_metric_withv(depth, g, v, k, NULL)) != NULL;
  ok &= (inf->m_since = kcr_metric_withv(since, g, v, k, NULL)) != NULL;
  ok &= (inf->m_backlog = kcr_metric_withv(backlog, g, v, k, NULL)) != NULL;
  ok &= (inf->m_lag = kcr_metric_withv(lag, g, v, k, NULL)) != NULL;
  ok &= (inf->refl.m_shard_filtered = kcr_metric_withv(shard, g, v, k, NULL)) != NULL;
  if (!ok || kcr_metrics_register_collector(r, on_collect, inf, &inf->collector) != 0)
    return kcr_error_set(err, KCR_ENOMEM, "informer %s: out of memory for its metrics",
                         kind_name(inf));
  inf->registry = r;
  return 0;
}

/* ---- lifecycle ---- */

kcr_informer_t *kcr__informer_shell(kcr__multi_t *m) {
  kcr_informer_t *inf = kcr__calloc(1, sizeof(*inf));
  if (inf) {
    inf->multi = m;
    inf->self = inf;
  }
  return inf;
}

kcr__multi_t *kcr__informer_multi_of(kcr_informer_t *inf) {
  return inf->multi;
}

const char *kcr__informer_ns(kcr_informer_t *inf) {
  return inf->ns;
}

kcr_informer_t *const *kcr__informer_self(kcr_informer_t *inf) {
  return &inf->self;
}

/* check_namespaces validates o's namespace set; 0 when it is usable. */
static int check_namespaces(const kcr_informer_options *o, kcr_error_t *err) {
  if (o->namespaces_len && o->ns && *o->ns)
    return kcr_error_set(err, KCR_EINVAL,
                         "informer: both ns (\"%s\") and a set of namespaces; give one", o->ns);
  return kcr__namespaces_check(o->namespaces, o->namespaces_len, "informer", err);
}

/* on_bookmark (the reflector, once a bookmark's version is the last) opens a
 * watch-lag probe when none is pending; an idle FIFO is past the bookmark at
 * once. */
static void on_bookmark(void *data, uint64_t rv) {
  kcr_informer_t *inf = data;
  if (rv) {
    pthread_mutex_lock(&inf->mu);
    if (!inf->lag_probe_rv) {
      inf->lag_probe_rv = rv;
      inf->lag_probe_ns = kcr_clock_now(inf->clock);
    }
    pthread_mutex_unlock(&inf->mu);
  }
  note_drained(inf);
}

/* on_listed (the reflector, once a list is stored and counted): a list the
 * processor drained before it was counted, or an empty one, which gives the
 * processor nothing to pop, is synced now, not when a waiter next looks. */
static void on_listed(void *data) {
  note_drained(data);
}

/* configure_reflector gives the reflector the options it runs by; the strings
 * are the informer's. */
static void configure_reflector(kcr_informer_t *inf, const kcr_informer_options *o) {
  kcr__reflector_t *r = &inf->refl;
  char api_version[256];
  if (inf->group && *inf->group)
    snprintf(api_version, sizeof(api_version), "%s/%s", inf->group, inf->version);
  else
    snprintf(api_version, sizeof(api_version), "%s", inf->version);
  r->client = o->client;
  r->resource.group = inf->group;
  r->resource.version = inf->version;
  r->resource.resource = inf->plural;
  r->ns = inf->ns;
  r->label_selector = inf->label_selector;
  r->field_selector = inf->field_selector;
  r->shard = inf->shard;
  r->shard_key = o->shard_key;
  r->shard_selector = inf->shard_selector;
  r->name = kind_name(inf);
  r->page_size = o->page_size > 0 ? o->page_size : DEFAULT_PAGE;
  r->min_timeout_s = o->min_watch_timeout_s > 0 ? o->min_watch_timeout_s : 300;
  r->max_timeout_s = o->max_watch_timeout_s >= r->min_timeout_s ? o->max_watch_timeout_s
                     : o->max_watch_timeout_s > 0               ? r->min_timeout_s
                                                                : 600;
  r->idle_ns = o->watch_idle_timeout_ns;
  r->stream_enabled = o->streaming_list;
  r->clock = inf->clock;
  r->transform = o->transform ? o->transform : default_transform;
  r->transform_data = o->transform ? o->transform_data : NULL;
  r->scan_watch = !o->transform;
  r->protobuf = !o->json_wire && inf->kind && kcr__pb_known(api_version, inf->kind);
  if (o->metadata_only) {
    /* Every object becomes a tree: the reflector restores its kind first. */
    inf->user_transform = o->transform;
    inf->user_transform_data = o->transform_data;
    r->transform = metadata_transform;
    r->transform_data = inf;
    r->scan_watch = 0;
    r->protobuf = 0;
    r->metadata_only = 1;
    r->kind = inf->kind;
  }
  r->fifo = inf->fifo;
  r->store = inf->store;
  r->on_bookmark = on_bookmark;
  r->on_listed = on_listed;
  r->data = inf;
}

/* The FIFO's known objects: the store, handing out its compact objects. */
static int known_list_keys(void *data, char ***out, size_t *n) {
  return kcr_store_list_keys(data, out, n);
}

static int known_get_by_key(void *data, const char *key, json_t **out) {
  kcr__cobj_t *c = NULL;
  int rc = kcr__store_get_compact(data, key, &c);
  *out = kcr__cobj_slot(c);
  return rc;
}

static bool known_contains(void *data, const char *key) {
  return kcr_store_contains(data, key);
}

/*
 * resolve_gvk maps o->gvk to its resource through o->mapper, or through a mapper
 * of its own on o->client made for this one lookup. *m: the mapping.
 */
static int resolve_gvk(const kcr_informer_options *o, kcr_rest_mapping *m, kcr_error_t *err) {
  kcr_rest_mapper_t *own = NULL;
  int rc = 0;
  if (!o->mapper)
    rc = kcr_rest_mapper_create(o->client, &own, err);
  if (rc == 0)
    rc = kcr_rest_mapper_mapping_for_kind(o->mapper ? o->mapper : own, &o->gvk, m, err);
  kcr_rest_mapper_destroy(own);
  if (rc == 0 && !m->namespaced && o->ns && *o->ns)
    rc =
        kcr_error_set(err, KCR_EINVAL, "informer: %s is cluster-scoped: ns must be empty", m->kind);
  return rc;
}

int kcr_informer_create(const kcr_informer_options *o, kcr_informer_t **out, kcr_error_t *err) {
  kcr_informer_t *inf;
  kcr_delta_fifo_options fo;
  kcr_known_objects known;
  kcr_rest_mapping m;
  kcr_gvr resource;
  const char *kind;
  int rc, reflector_rc;

  *out = NULL;
  if (!o || !o->client || (!o->resource.resource && (!o->gvk.kind || !*o->gvk.kind)))
    return kcr_error_set(err, KCR_EINVAL,
                         "informer: a client and a resource or a kind (gvk) are required");
  if ((rc = check_namespaces(o, err)) != 0)
    return rc;
  resource = o->resource;
  kind = o->kind && *o->kind ? o->kind : o->gvk.kind;
  if (!resource.resource) {
    if ((rc = resolve_gvk(o, &m, err)) != 0)
      return rc;
    if (!m.namespaced && o->namespaces_len)
      return kcr_error_set(err, KCR_EINVAL,
                           "informer: %s is cluster-scoped: it has no namespaces to watch", m.kind);
    resource = kcr_rest_mapping_gvr(&m);
  }
  if (!resource.version || !*resource.version || !*resource.resource)
    return kcr_error_set(err, KCR_EINVAL, "informer: the resource needs a version and a name");
  if (o->namespaces_len > 1) {
    kcr_informer_options mo = *o;
    mo.resource = resource; /* resolved once, for every part */
    mo.kind = kind;
    return kcr__informer_multi_create(&mo, out, err);
  }
  inf = kcr__calloc(1, sizeof(*inf));
  if (!inf)
    return kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
  pthread_mutex_init(&inf->mu, NULL);
  kcr_clock_cond_init(&inf->cond);
  pthread_mutex_init(&inf->handlers_mu, NULL);
  pthread_mutex_init(&inf->shard_mu, NULL);
  reflector_rc = kcr__reflector_init(&inf->refl);
  inf->group = kcr__strdup(resource.group ? resource.group : "");
  inf->version = kcr__strdup(resource.version);
  inf->plural = kcr__strdup(resource.resource);
  inf->kind = dup_opt(kind);
  inf->self = inf;
  inf->ns = dup_opt(o->namespaces_len ? o->namespaces[0] : o->ns);
  inf->label_selector = dup_opt(o->label_selector);
  inf->field_selector = dup_opt(o->field_selector);
  inf->resync_ns = o->resync_period_ns;
  inf->clock = o->clock ? o->clock : kcr_clock_system();
  atomic_store(&inf->watch_lag_ns, -1);
  if (!inf->group || !inf->version || !inf->plural || (kind && *kind && !inf->kind) ||
      ((o->namespaces_len || (o->ns && *o->ns)) && !inf->ns) ||
      (o->label_selector && !inf->label_selector) || (o->field_selector && !inf->field_selector)) {
    rc = kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
    goto fail;
  }
  if (o->shard &&
      ((rc = kcr_shard_set_copy(o->shard, &inf->shard, err)) != 0 ||
       (rc = kcr_shard_set_selector(inf->shard, o->shard_key, &inf->shard_selector, err)) != 0)) {
    kcr_error_prefix(err, "informer %s", kind_name(inf));
    goto fail;
  }
  if ((rc = kcr_store_create(NULL, NULL, &inf->store, NULL)) != 0 || reflector_rc != 0) {
    rc = rc ? rc : reflector_rc;
    kcr_error_set(err, rc, "informer: cannot create its store");
    goto fail;
  }
  known.list_keys = known_list_keys;
  known.get_by_key = known_get_by_key;
  known.contains = known_contains;
  known.data = inf->store;
  memset(&fo, 0, sizeof(fo));
  fo.known = &known;
  fo.key_fn = kcr__cobj_key_fn;
  if ((rc = kcr_delta_fifo_create(&fo, &inf->fifo, NULL)) != 0) {
    kcr_error_set(err, rc, "informer: cannot create its queue");
    goto fail;
  }
  configure_reflector(inf, o);
  if (o->metrics && (rc = register_metrics(inf, o->metrics, err)) != 0)
    goto fail;
  *out = inf;
  return 0;

fail:
  kcr_informer_destroy(inf);
  return rc;
}

int kcr_informer_add_handler(kcr_informer_t *inf, const kcr_event_handler *h, uint64_t *id,
                             kcr_error_t *err) {
  return kcr__informer_add_handler_flags(inf, h, 0, id, err);
}

int kcr__informer_add_handler_flags(kcr_informer_t *inf, const kcr_event_handler *h, unsigned flags,
                                    uint64_t *id, kcr_error_t *err) {
  kcr__listener_t *n;
  kcr__cobj_t **existing = NULL;
  size_t count = 0;
  int rc;

  if (inf->multi)
    return kcr__multi_add_handler(inf->multi, h, flags, id, err);
  rc = kcr__listener_start(h, flags, &inf->deliveries, inf->m_deliveries, &n);

  if (rc == KCR_ENOMEM)
    return kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
  if (rc)
    return kcr_error_set(err, KCR_ESYS, "informer %s: cannot start a handler's thread",
                         kind_name(inf));
  pthread_mutex_lock(&inf->handlers_mu);
  /* Under handlers_mu no delta is being applied: the store is consistent with
   * everything the other handlers have been handed. */
  rc = kcr__store_list_compact(inf->store, &existing, &count);
  for (size_t i = 0; i < count; i++) {
    kcr__lazy_t *l = rc == 0 ? kcr__lazy_new(existing[i]) : NULL;
    if (rc == 0 && (!l || (rc = kcr__listener_notify(n, KCR__NOTE_ADD, true, NULL, l, NULL)) != 0))
      rc = KCR_ENOMEM;
    kcr__lazy_unref(l);
    kcr__cobj_unref(existing[i]);
  }
  kcr__free(existing);
  if (rc) {
    pthread_mutex_unlock(&inf->handlers_mu);
    kcr__listener_stop_free(n);
    return kcr_error_set(err, rc, "informer %s: cannot hand the cached objects to a new handler",
                         kind_name(inf));
  }
  n->id = ++inf->next_id;
  kcr__list_push_back(&inf->handlers, &n->link);
  if (id)
    *id = n->id;
  pthread_mutex_unlock(&inf->handlers_mu);
  return 0;
}

void kcr_informer_remove_handler(kcr_informer_t *inf, uint64_t id) {
  kcr__listener_t *dead = NULL;
  if (inf->multi) {
    kcr__multi_remove_handler(inf->multi, id);
    return;
  }
  pthread_mutex_lock(&inf->handlers_mu);
  KCR__LIST_EACH(&inf->handlers, kcr__listener_t, link, h)
  if (h->id == id) {
    dead = h;
    break;
  }
  if (dead)
    kcr__list_remove(&inf->handlers, &dead->link);
  pthread_mutex_unlock(&inf->handlers_mu);
  if (dead)
    kcr__listener_stop_free(dead); /* waits out a call in progress */
}

bool kcr_informer_handler_has_synced(kcr_informer_t *inf, uint64_t id) {
  bool synced = false;
  if (inf->multi)
    return kcr__multi_handler_has_synced(inf->multi, id);
  if (!kcr_informer_has_synced(inf))
    return false;
  pthread_mutex_lock(&inf->handlers_mu);
  KCR__LIST_EACH(&inf->handlers, kcr__listener_t, link, h)
  if (h->id == id) {
    synced = kcr__listener_synced(h);
    break;
  }
  pthread_mutex_unlock(&inf->handlers_mu);
  return synced;
}

int kcr_informer_start(kcr_informer_t *inf, kcr_error_t *err) {
  if (inf->multi)
    return kcr__multi_start(inf->multi, err);
  if (inf->started)
    return kcr_error_set(err, KCR_EINVAL, "informer %s: already started", kind_name(inf));
  if (pthread_create(&inf->processor_thread, NULL, processor_main, inf) != 0)
    return kcr_error_set(err, KCR_ESYS, "informer %s: cannot start a thread", kind_name(inf));
  if (kcr__reflector_start(&inf->refl) != 0) {
    kcr_delta_fifo_close(inf->fifo);
    pthread_join(inf->processor_thread, NULL);
    return kcr_error_set(err, KCR_ESYS, "informer %s: cannot start a thread", kind_name(inf));
  }
  inf->started = 1;
  return 0;
}

void kcr_informer_stop(kcr_informer_t *inf) {
  kcr__list_t handlers = {0};
  kcr__list_node_t *node;
  if (inf->multi) {
    kcr__multi_stop(inf->multi);
    return;
  }
  if (!inf->started || inf->stopped)
    return;
  inf->stopped = 1;
  pthread_mutex_lock(&inf->mu);
  inf->stopping = 1;
  pthread_cond_broadcast(&inf->cond);
  pthread_mutex_unlock(&inf->mu);
  kcr__reflector_stop(&inf->refl);
  kcr_delta_fifo_close(inf->fifo);
  pthread_join(inf->processor_thread, NULL);
  /* The listeners last: each finishes the call it is in and drops the rest. */
  pthread_mutex_lock(&inf->handlers_mu);
  kcr__list_take(&handlers, &inf->handlers);
  pthread_mutex_unlock(&inf->handlers_mu);
  while ((node = kcr__list_pop_front(&handlers)))
    kcr__listener_stop_free(KCR__CONTAINER_OF(node, kcr__listener_t, link));
}

void kcr_informer_destroy(kcr_informer_t *inf) {
  kcr__list_node_t *node;
  if (!inf)
    return;
  if (inf->multi) {
    kcr__multi_free(inf->multi); /* frees inf, its shell */
    return;
  }
  kcr_informer_stop(inf);
  kcr_metrics_unregister_collector(inf->registry, inf->collector);
  while ((node = kcr__list_pop_front(&inf->handlers))) /* never started: listeners still run */
    kcr__listener_stop_free(KCR__CONTAINER_OF(node, kcr__listener_t, link));
  kcr_delta_fifo_destroy(inf->fifo);
  kcr_store_destroy(inf->store);
  kcr__reflector_destroy(&inf->refl);
  kcr__free(inf->group);
  kcr__free(inf->version);
  kcr__free(inf->plural);
  kcr__free(inf->kind);
  kcr__free(inf->ns);
  kcr__free(inf->label_selector);
  kcr__free(inf->field_selector);
  kcr_shard_set_destroy(inf->shard);
  kcr_free(inf->shard_selector);
  pthread_cond_destroy(&inf->cond);
  pthread_mutex_destroy(&inf->mu);
  pthread_mutex_destroy(&inf->handlers_mu);
  pthread_mutex_destroy(&inf->shard_mu);
  kcr__free(inf->shown_selector);
  kcr__free(inf);
}

bool kcr_informer_has_synced(kcr_informer_t *inf) {
  bool s;
  if (inf->multi)
    return kcr__multi_has_synced(inf->multi);
  note_drained(inf);
  pthread_mutex_lock(&inf->mu);
  s = inf->synced;
  pthread_mutex_unlock(&inf->mu);
  return s;
}

int kcr_informer_wait_for_sync(kcr_informer_t *inf, int64_t timeout_ns, kcr_error_t *err) {
  int64_t deadline = kcr_clock_now(kcr_clock_system()) + timeout_ns;
  int synced;
  kcr_error_t last;
  if (inf->multi)
    return kcr__multi_wait_for_sync(inf->multi, timeout_ns, err);
  note_drained(inf);
  pthread_mutex_lock(&inf->mu);
  while (!inf->synced && !inf->stopping) {
    int64_t step = kcr_clock_now(kcr_clock_system()) + 50 * KCR_NSEC_PER_MSEC;
    kcr_clock_timedwait(kcr_clock_system(), &inf->cond, &inf->mu,
                        step < deadline ? step : deadline);
    if (kcr_clock_now(kcr_clock_system()) >= deadline)
      break;
    pthread_mutex_unlock(&inf->mu);
    note_drained(inf);
    pthread_mutex_lock(&inf->mu);
  }
  synced = inf->synced;
  pthread_mutex_unlock(&inf->mu);
  if (synced)
    return 0;
  kcr__reflector_last_error(&inf->refl, &last);
  return kcr_error_set(err, KCR_ETIMEDOUT,
                       "timed out waiting for the cache of %s (%s%s%s) to sync%s%s; usual causes: "
                       "the kind is not served (CRD not installed) or RBAC forbids list/watch",
                       kind_name(inf), inf->group[0] ? inf->group : "core", "/", inf->version,
                       last.code ? ": last error: " : "", last.code ? last.message : "");
}

kcr_store_t *kcr_informer_store(kcr_informer_t *inf) {
  return inf->store; /* NULL in a shell */
}

int kcr_informer_wait_for_resource_version(kcr_informer_t *inf, const char *rv, int64_t timeout_ns,
                                           kcr_error_t *err) {
  uint64_t want = kcr__reflector_parse_rv(rv);
  int64_t deadline = kcr_clock_now(kcr_clock_system()) + timeout_ns;
  int ok;
  if (inf->multi)
    return kcr__multi_wait_for_resource_version(inf->multi, rv, timeout_ns, err);
  if (!want)
    return kcr_error_set(err, KCR_EINVAL, "informer %s: resourceVersion \"%s\" is not a number",
                         kind_name(inf), rv ? rv : "");
  note_drained(inf);
  pthread_mutex_lock(&inf->mu);
  while (inf->processed_rv < want && !inf->stopping) {
    /* The processor raises processed_rv after each pop; a bookmark past the
     * write raises it through the drained check. */
    int64_t step = kcr_clock_now(kcr_clock_system()) + 20 * KCR_NSEC_PER_MSEC;
    kcr_clock_timedwait(kcr_clock_system(), &inf->cond, &inf->mu,
                        step < deadline ? step : deadline);
    if (kcr_clock_now(kcr_clock_system()) >= deadline)
      break;
    pthread_mutex_unlock(&inf->mu);
    note_drained(inf);
    pthread_mutex_lock(&inf->mu);
  }
  ok = inf->processed_rv >= want;
  pthread_mutex_unlock(&inf->mu);
  if (ok)
    return 0;
  return kcr_error_set(err, KCR_ETIMEDOUT,
                       "informer %s: the cache did not reach resourceVersion %s in time",
                       kind_name(inf), rv);
}

void kcr_informer_get_stats(kcr_informer_t *inf, kcr_informer_stats *out) {
  if (inf->multi) {
    kcr__multi_get_stats(inf->multi, out);
    return;
  }
  out->lists = atomic_load(&inf->refl.lists);
  out->watches = atomic_load(&inf->refl.watches);
  out->watch_errors = atomic_load(&inf->refl.watch_errors);
  out->events = atomic_load(&inf->refl.events);
  out->streamed_lists = atomic_load(&inf->refl.streams);
  out->relist_reused = atomic_load(&inf->refl.reused);
  out->scanned = atomic_load(&inf->refl.scanned);
  pthread_mutex_lock(&inf->mu);
  out->processed_rv = inf->processed_rv;
  pthread_mutex_unlock(&inf->mu);
  for (int i = 0; i < 5; i++)
    out->received[i] = atomic_load(&inf->refl.received[i]);
  out->deliveries = atomic_load(&inf->deliveries);
  for (int i = 0; i < KCR_INFORMER_RELIST_REASONS; i++)
    out->relists[i] = atomic_load(&inf->refl.relists[i]);
  out->last_seen_rv = atomic_load(&inf->refl.last_seen_rv);
  out->queue_depth = kcr_delta_fifo_len(inf->fifo);
  count_listeners(inf, &out->listener_backlog, &out->handlers);
  out->seconds_since_last_event = since_last_event(inf);
  out->watch_lag_seconds =
      atomic_load(&inf->watch_lag_ns) >= 0 ? (double)atomic_load(&inf->watch_lag_ns) / 1e9 : -1.0;
  out->shard_filtered = atomic_load(&inf->refl.shard_filtered);
  out->shard_ignored = atomic_load(&inf->refl.shard_ignored) != 0;
}

/* set_u64 / set_rv add one member to a diagnostics object; return 0 or -1. */
static int set_u64(json_t *o, const char *name, uint64_t v) {
  return json_object_set_new(o, name, json_integer((json_int_t)v));
}

static int set_rv(json_t *o, const char *name, uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%" PRIu64, v);
  return json_object_set_new(o, name, json_string(v ? buf : ""));
}

static json_t *single_diagnostics(kcr_informer_t *inf) {
  kcr_informer_stats st;
  kcr_error_t last;
  json_t *o = json_object(), *ev = json_object(), *rl = json_object(), *shard = NULL;
  int bad = !o || !ev || !rl;
  bool synced = kcr_informer_has_synced(inf);

  if (inf->shard_selector) { /* the latest set_shard's, else the first */
    pthread_mutex_lock(&inf->shard_mu);
    shard = json_string(inf->shown_selector ? inf->shown_selector : inf->shard_selector);
    pthread_mutex_unlock(&inf->shard_mu);
    bad |= !shard;
  }

  kcr_informer_get_stats(inf, &st);
  kcr__reflector_last_error(&inf->refl, &last);
  for (int t = KCR_WATCH_ADDED; t <= KCR_WATCH_ERROR && !bad; t++)
    bad |= set_u64(ev, kcr_watch_event_type_name((kcr_watch_event_type)t), st.received[t - 1]);
  for (int i = 0; i < KCR_INFORMER_RELIST_REASONS && !bad; i++)
    bad |= set_u64(rl, relist_names[i], st.relists[i]);
  if (!bad)
    bad = json_object_set_new(o, "group", json_string(inf->group)) ||
          json_object_set_new(o, "version", json_string(inf->version)) ||
          json_object_set_new(o, "resource", json_string(inf->plural)) ||
          json_object_set_new(o, "kind", json_string(inf->kind ? inf->kind : "")) ||
          json_object_set_new(o, "namespace", json_string(inf->ns ? inf->ns : "")) ||
          json_object_set_new(o, "synced", json_boolean(synced)) ||
          json_object_set(o, "events", ev) || json_object_set(o, "relists", rl) ||
          set_u64(o, "deliveries", st.deliveries) || set_u64(o, "lists", st.lists) ||
          set_u64(o, "watches", st.watches) || set_u64(o, "watchErrors", st.watch_errors) ||
          set_rv(o, "lastSeenResourceVersion", st.last_seen_rv) ||
          set_rv(o, "lastProcessedResourceVersion", st.processed_rv) ||
          set_u64(o, "queueDepth", st.queue_depth) ||
          set_u64(o, "listenerBacklog", st.listener_backlog) ||
          set_u64(o, "handlers", st.handlers) || set_u64(o, "objects", kcr_store_len(inf->store)) ||
          json_object_set_new(o, "secondsSinceLastEvent", json_real(st.seconds_since_last_event)) ||
          (st.watch_lag_seconds >= 0 &&
           json_object_set_new(o, "watchLagSeconds", json_real(st.watch_lag_seconds))) ||
          (last.code && json_object_set_new(o, "lastError", json_string(last.message))) ||
          (inf->shard_selector &&
           (json_object_set(o, "shardSelector", shard) ||
            set_u64(o, "shardFiltered", st.shard_filtered) ||
            json_object_set_new(o, "shardIgnored", json_boolean(st.shard_ignored)) ||
            json_object_set_new(o, "shardClientSide",
                                json_boolean(inf->refl.shard_key == KCR_SHARD_KEY_OWNER_UID))));
  json_decref(shard);
  json_decref(ev);
  json_decref(rl);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *kcr_informer_diagnostics(kcr_informer_t *inf) {
  return inf->multi ? kcr__multi_diagnostics(inf->multi) : single_diagnostics(inf);
}

/* ---- an informer over a set of namespaces ---- */

/*
 * It lives in this file because the two depend on each other: the public
 * kcr_informer_* calls dispatch to it, and it is made of ordinary informers.
 *
 * An informer over a set of namespaces (controller-runtime's
 * multiNamespaceInformer, cache/multi_namespace_cache.go): one ordinary
 * informer ("part") per namespace, each with its own reflector, FIFO and store,
 * behind one kcr_informer_t. A namespace's relist only touches its own store,
 * which a shared store could not promise (a relist replaces what it holds).
 *
 * Handlers: each registration puts a shim on every part. Parts call from
 * threads of their own, so the shim takes the registration's call_mu around
 * the user's call: the handler is called one at a time, as kcr/informer.h
 * promises, in order within a namespace. A handler removed from inside its own
 * call is only marked (its shims skip it from then on, has_synced is false);
 * the parts drop their shims at destroy, or at a second remove from outside,
 * since waiting for the other parts' calls there would wait on the call_mu
 * the caller holds.
 *
 * Lock order: a registration's call_mu -> the parts' locks (a shim holds it
 * while the part's listener waits on nothing else); mu (registrations) is held
 * only to walk or edit the list, never across a part's call.
 */

typedef struct reg {
  kcr__list_node_t link; /* in the multi's regs */
  uint64_t id;
  kcr_event_handler user;
  pthread_mutex_t call_mu;
  atomic_bool removed; /* set under call_mu; read anywhere */
  uint64_t ids[];
} reg_t;

struct kcr__multi {
  size_t n;
  kcr_informer_t **parts; /* owned */
  kcr_informer_t *shell;  /* the kcr_informer_t handed out; frees this */
  pthread_mutex_t mu;
  kcr__list_t regs; /* reg_t; protected by mu */
  uint64_t next_id; /* protected by mu */
  int started;      /* owner thread */
};

/* current: the registration whose user handler this thread is calling. */
static _Thread_local reg_t *current;

int kcr__namespaces_check(const char *const *ns, size_t n, const char *who, kcr_error_t *err) {
  if (n && !ns)
    return kcr_error_set(err, KCR_EINVAL, "%s: %zu namespaces but no array", who, n);
  for (size_t i = 0; i < n; i++) {
    if (!ns[i] || !*ns[i])
      return kcr_error_set(err, KCR_EINVAL,
                           "%s: namespace %zu of the set is empty (all namespaces is no "
                           "namespace set at all)",
                           who, i + 1);
    for (size_t j = 0; j < i; j++)
      if (strcmp(ns[i], ns[j]) == 0)
        return kcr_error_set(err, KCR_EINVAL, "%s: namespace \"%s\" is in the set twice", who,
                             ns[i]);
  }
  return 0;
}

/* ---- handlers ---- */

static bool enter(reg_t *r) {
  pthread_mutex_lock(&r->call_mu);
  if (atomic_load(&r->removed)) {
    pthread_mutex_unlock(&r->call_mu);
    return false;
  }
  current = r;
  return true;
}

static void leave(reg_t *r) {
  current = NULL;
  pthread_mutex_unlock(&r->call_mu);
}

static void shim_add(json_t *obj, bool initial, void *data) {
  reg_t *r = data;
  if (r->user.on_add && enter(r)) {
    r->user.on_add(obj, initial, r->user.data);
    leave(r);
  }
}

static void shim_update(json_t *old_obj, json_t *new_obj, void *data) {
  reg_t *r = data;
  if (r->user.on_update && enter(r)) {
    r->user.on_update(old_obj, new_obj, r->user.data);
    leave(r);
  }
}

static void shim_delete(json_t *obj, const char *tombstone_key, void *data) {
  reg_t *r = data;
  if (r->user.on_delete && enter(r)) {
    r->user.on_delete(obj, tombstone_key, r->user.data);
    leave(r);
  }
}

static void reg_free(reg_t *r) {
  pthread_mutex_destroy(&r->call_mu);
  kcr__free(r);
}

/* find_reg returns id's registration (NULL if none), taken off m's list when
 * take is set. */
static reg_t *find_reg(kcr__multi_t *m, uint64_t id, bool take) {
  reg_t *found = NULL;
  pthread_mutex_lock(&m->mu);
  KCR__LIST_EACH(&m->regs, reg_t, link, r)
  if (r->id == id) {
    found = r;
    break;
  }
  if (found && take)
    kcr__list_remove(&m->regs, &found->link);
  pthread_mutex_unlock(&m->mu);
  return found;
}

int kcr__multi_add_handler(kcr__multi_t *m, const kcr_event_handler *h, unsigned flags,
                           uint64_t *id, kcr_error_t *err) {
  kcr_event_handler shim = {shim_add, shim_update, shim_delete, NULL};
  reg_t *r = kcr__calloc(1, sizeof(*r) + m->n * sizeof(uint64_t));
  size_t i;
  int rc = 0;

  if (!r)
    return kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
  if (h)
    r->user = *h;
  pthread_mutex_init(&r->call_mu, NULL);
  shim.data = r;
  for (i = 0; i < m->n && rc == 0; i++)
    rc = kcr__informer_add_handler_flags(m->parts[i], &shim, flags, &r->ids[i], err);
  if (rc) {
    for (size_t j = 0; j + 1 < i; j++)
      kcr_informer_remove_handler(m->parts[j], r->ids[j]);
    reg_free(r);
    return rc;
  }
  pthread_mutex_lock(&m->mu);
  r->id = ++m->next_id;
  kcr__list_push_back(&m->regs, &r->link);
  pthread_mutex_unlock(&m->mu);
  if (id)
    *id = r->id;
  return 0;
}

void kcr__multi_remove_handler(kcr__multi_t *m, uint64_t id) {
  reg_t *r;
  if (current && current->id == id && find_reg(m, id, false) == current) {
    /* This thread holds its call_mu: waiting for the other parts' calls
     * would wait on it. Only marked; a later remove (or destroy) drops it. */
    atomic_store(&current->removed, true);
    return;
  }
  r = find_reg(m, id, true);
  if (!r)
    return;
  pthread_mutex_lock(&r->call_mu); /* waits out a call in progress */
  atomic_store(&r->removed, true);
  pthread_mutex_unlock(&r->call_mu);
  for (size_t i = 0; i < m->n; i++)
    kcr_informer_remove_handler(m->parts[i], r->ids[i]);
  reg_free(r);
}

bool kcr__multi_handler_has_synced(kcr__multi_t *m, uint64_t id) {
  reg_t *r = find_reg(m, id, false);
  if (!r || atomic_load(&r->removed))
    return false;
  for (size_t i = 0; i < m->n; i++)
    if (!kcr_informer_handler_has_synced(m->parts[i], r->ids[i]))
      return false;
  return true;
}

/* ---- lifecycle ---- */

int kcr__informer_multi_create(const kcr_informer_options *o, kcr_informer_t **out,
                               kcr_error_t *err) {
  kcr__multi_t *m = kcr__calloc(1, sizeof(*m));
  kcr_informer_options po;
  int rc = 0;

  *out = NULL;
  /* An array of pointers: the elements are kcr_informer_t *, on purpose. */
  if (!m ||
      !(m->parts = kcr__calloc(o->namespaces_len,
                               sizeof(kcr_informer_t *)))) { // NOLINT(bugprone-sizeof-expression)
    kcr__free(m);
    return kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
  }
  pthread_mutex_init(&m->mu, NULL);
  po = *o;
  po.namespaces = NULL;
  po.namespaces_len = 0;
  for (size_t i = 0; i < o->namespaces_len && rc == 0; i++) {
    po.ns = o->namespaces[i];
    if ((rc = kcr_informer_create(&po, &m->parts[i], err)) == 0)
      m->n++;
  }
  if (rc == 0 && !(m->shell = kcr__informer_shell(m)))
    rc = kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
  if (rc) {
    kcr__multi_free(m);
    return rc;
  }
  *out = m->shell;
  return 0;
}

int kcr__multi_start(kcr__multi_t *m, kcr_error_t *err) {
  if (m->started)
    return kcr_error_set(err, KCR_EINVAL, "informer: already started");
  for (size_t i = 0; i < m->n; i++) {
    int rc = kcr_informer_start(m->parts[i], err);
    if (rc) {
      for (size_t j = 0; j < i; j++)
        kcr_informer_stop(m->parts[j]);
      return rc;
    }
  }
  m->started = 1;
  return 0;
}

void kcr__multi_stop(kcr__multi_t *m) {
  for (size_t i = 0; i < m->n; i++)
    kcr_informer_stop(m->parts[i]);
}

/* kcr__multi_free frees m, its parts and its shell (informer.c's destroy of a
 * shell comes here, and frees nothing else). */
void kcr__multi_free(kcr__multi_t *m) {
  kcr__list_node_t *node;
  if (!m)
    return;
  for (size_t i = 0; i < m->n; i++)
    kcr_informer_destroy(m->parts[i]); /* stops their listeners: no shim runs after */
  while ((node = kcr__list_pop_front(&m->regs)))
    reg_free(KCR__CONTAINER_OF(node, reg_t, link));
  kcr__free(m->parts);
  kcr__free(m->shell);
  pthread_mutex_destroy(&m->mu);
  kcr__free(m);
}

/* ---- state ---- */

bool kcr__multi_has_synced(kcr__multi_t *m) {
  for (size_t i = 0; i < m->n; i++)
    if (!kcr_informer_has_synced(m->parts[i]))
      return false;
  return true;
}

static int64_t left_until(int64_t deadline) {
  int64_t left = deadline - kcr_clock_now(kcr_clock_system());
  return left > 0 ? left : 0;
}

int kcr__multi_wait_for_sync(kcr__multi_t *m, int64_t timeout_ns, kcr_error_t *err) {
  int64_t deadline = kcr_clock_now(kcr_clock_system()) + timeout_ns;
  for (size_t i = 0; i < m->n; i++) {
    int rc = kcr_informer_wait_for_sync(m->parts[i], left_until(deadline), err);
    if (rc) {
      kcr_error_prefix(err, "namespace %s: ", kcr__informer_ns(m->parts[i]));
      return rc;
    }
  }
  return 0;
}

int kcr__multi_wait_for_resource_version(kcr__multi_t *m, const char *rv, int64_t timeout_ns,
                                         kcr_error_t *err) {
  int64_t deadline = kcr_clock_now(kcr_clock_system()) + timeout_ns;
  for (size_t i = 0; i < m->n; i++) {
    int rc = kcr_informer_wait_for_resource_version(m->parts[i], rv, left_until(deadline), err);
    if (rc) {
      kcr_error_prefix(err, "namespace %s: ", kcr__informer_ns(m->parts[i]));
      return rc;
    }
  }
  return 0;
}

void kcr__multi_get_stats(kcr__multi_t *m, kcr_informer_stats *out) {
  memset(out, 0, sizeof(*out));
  out->watch_lag_seconds = -1.0;
  for (size_t i = 0; i < m->n; i++) {
    kcr_informer_stats s;
    kcr_informer_get_stats(m->parts[i], &s);
    out->lists += s.lists;
    out->streamed_lists += s.streamed_lists;
    out->relist_reused += s.relist_reused;
    out->scanned += s.scanned;
    out->watches += s.watches;
    out->watch_errors += s.watch_errors;
    out->events += s.events;
    out->processed_rv =
        i == 0 || s.processed_rv < out->processed_rv ? s.processed_rv : out->processed_rv;
    for (int t = 0; t < 5; t++)
      out->received[t] += s.received[t];
    out->deliveries += s.deliveries;
    for (int r = 0; r < KCR_INFORMER_RELIST_REASONS; r++)
      out->relists[r] += s.relists[r];
    if (s.last_seen_rv > out->last_seen_rv)
      out->last_seen_rv = s.last_seen_rv;
    out->queue_depth += s.queue_depth;
    out->listener_backlog += s.listener_backlog;
    out->handlers = s.handlers; /* every registration is on every part */
    if (i == 0 || s.seconds_since_last_event < out->seconds_since_last_event)
      out->seconds_since_last_event = s.seconds_since_last_event;
    if (s.watch_lag_seconds > out->watch_lag_seconds)
      out->watch_lag_seconds = s.watch_lag_seconds;
    out->shard_filtered += s.shard_filtered;
    out->shard_ignored |= s.shard_ignored;
  }
}

json_t *kcr__multi_diagnostics(kcr__multi_t *m) {
  json_t *arr = json_array(), *o;
  for (size_t i = 0; i < m->n && arr; i++) {
    json_t *d = kcr_informer_diagnostics(m->parts[i]);
    if (!d || json_array_append_new(arr, d) != 0) {
      json_decref(arr);
      arr = NULL;
    }
  }
  o = arr ? json_pack("{s:o, s:b}", "namespaces", arr, "synced", kcr__multi_has_synced(m)) : NULL;
  return o;
}

/* ---- parts ---- */

int kcr_informer_set_shard(kcr_informer_t *inf, const kcr_shard_set_t *set, kcr_error_t *err) {
  kcr_informer_t *const *parts;
  size_t n = kcr__informer_parts(inf, &parts);
  if (!set)
    return kcr_error_set(err, KCR_EINVAL, "informer: set_shard needs a set");
  for (size_t i = 0; i < n; i++) {
    kcr_informer_t *p = parts[i];
    kcr_shard_set_t *copy = NULL;
    char *sel = NULL, *shown = NULL;
    int rc;
    if (!p->shard)
      return kcr_error_set(err, KCR_EINVAL,
                           "informer %s: not sharded (kcr_informer_options.shard): it lists "
                           "everything",
                           kind_name(p));
    if ((rc = kcr_shard_set_copy(set, &copy, err)) != 0 ||
        (rc = kcr_shard_set_selector(copy, p->refl.shard_key, &sel, err)) != 0 ||
        !(shown = kcr__strdup(sel))) {
      kcr_shard_set_destroy(copy);
      kcr_free(sel);
      return rc ? rc : kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
    }
    pthread_mutex_lock(&p->shard_mu);
    kcr__free(p->shown_selector);
    p->shown_selector = shown;
    pthread_mutex_unlock(&p->shard_mu);
    kcr__reflector_set_shard(&p->refl, copy, sel);
  }
  return 0;
}

size_t kcr__informer_parts(kcr_informer_t *inf, kcr_informer_t *const **out) {
  kcr__multi_t *m = kcr__informer_multi_of(inf);
  if (!m) {
    *out = kcr__informer_self(inf);
    return 1;
  }
  *out = m->parts;
  return m->n;
}

kcr_informer_t *kcr__informer_part_for(kcr_informer_t *inf, const char *ns) {
  kcr__multi_t *m = kcr__informer_multi_of(inf);
  const char *own;
  if (!m) {
    own = kcr__informer_ns(inf);
    return !own || !ns || !*ns || strcmp(own, ns) == 0 ? inf : NULL;
  }
  if (!ns || !*ns)
    return NULL;
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(kcr__informer_ns(m->parts[i]), ns) == 0)
      return m->parts[i];
  return NULL;
}