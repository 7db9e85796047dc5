/* SPDX-License-Identifier: MIT */
/*
 * manager.c: the manager — runnables in controller-runtime's start order, the
 * graceful stop in reverse, signals, the leader-election seam, and the wiring
 * of its object client (src/cache/cache_client.c: informer reads, direct
 * writes, read-your-own-writes) to the leader fence.
 *
 * Design: kcr_manager_run is a small state machine on the caller's thread. It
 * starts the groups in order (servers, informer sync, background, then leader
 * group at once or when elected), then sleeps on a condition variable until an
 * event arrives: a stop request (kcr_manager_request_stop, or the first signal,
 * relayed by the signal thread), "elected" or "lost" from the elector. The stop
 * walks the groups in reverse within one deadline (graceful_shutdown_timeout);
 * controllers get the time that is left for their reconciles in flight.
 *
 * Signals use a self-pipe: the handler saves errno, writes the signal number to
 * a non-blocking pipe and returns. The signal thread reads it: the first signal
 * requests the stop, a second calls _exit(1) (controller-runtime's os.Exit(1)).
 * run closes the thread by writing a 0 byte and restores the old handlers.
 *
 * Fencing: with an elector that has a fence, the manager installs it as the
 * object client's write fence (on_write_fence): every write asks it first and
 * fails at once (KCR_ECANCELED) once the leader is past its renew deadline,
 * and a write that goes out gets its timeout cut to what is left of it. Each
 * controller's workers are gated on the same fence (on_gate).
 *
 * Event recorders (kcr_manager_event_recorder): one per component name, made on
 * first use and kept on a list that only grows (new entries go in front, under
 * mu), so the stop can walk a snapshot of it without the lock. The graceful
 * stop flushes them once the controllers and leader runnables have stopped and
 * before the elector releases the Lease (the recorders ask the manager's fence,
 * which says no once it is released); kcr_manager_destroy destroys them after
 * the controllers and before the elector, the cache and the client they use.
 *
 * Lock: mu guards the event flags, the state and the recorders' list head; it is
 * never held while calling a runnable, a controller or the elector.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache_client_internal.h"
#include "cache/cache_internal.h"
#include "cache/informer_multi_internal.h"
#include "controller/controller_internal.h"
#include "kcr/events.h"
#include "kcr/log.h"
#include "kcr/manager.h"
#include "kcr/otlp.h"
#include "kcr/trace.h"
#include "manager/manager_internal.h"
#include "util/alloc.h"

#define DEFAULT_GRACE (30 * KCR_NSEC_PER_SEC)
#define DEFAULT_SYNC (120 * KCR_NSEC_PER_SEC)
#define DEFAULT_RYOW (10 * KCR_NSEC_PER_SEC)
#define DEFAULT_SYNC_PERIOD (INT64_C(10) * 3600 * KCR_NSEC_PER_SEC) /* controller-runtime's */

typedef struct runnable {
  kcr_runnable r;
  char *name;
  bool started; /* run thread only */
} runnable_t;

/* recorder_t: a component's event recorder; immutable once on the list. */
typedef struct recorder {
  struct recorder *next;
  kcr_event_recorder_t *r; /* owned */
  char *component;         /* owned */
} recorder_t;

struct kcr_manager {
  kcr_client_t *client;
  kcr_rest_mapper_t *mapper;
  kcr_cache_t *cache;
  kcr__cache_client_t cclient;         /* the object client's state; read-only after create */
  kcr_objclient objclient;             /* its ops over cclient; read-only after create */
  kcr_objclient apireader;             /* the API reader over cclient; read-only after create */
  kcr__cache_client_t cclient_nofence; /* as cclient without the fence; read-only after create */
  kcr_objclient unfenced;              /* its ops over cclient_nofence */
  int64_t grace_ns, sync_ns;
  kcr_shard_key shard_key; /* immutable: what shard keys hash on (namespace or uid) */
  bool no_pq;              /* options.disable_priority_queue; immutable */
  bool handle_signals;
  bool warmup_default; /* immutable: kcr_manager_options.enable_warmup */

  kcr_controller_t **ctls; /* set-up thread, then read-only */
  bool *ctl_started;       /* run thread only */
  bool *ctl_le;            /* set-up thread, then read-only: needs leader election */
  bool *ctl_warm;          /* set-up thread, then read-only: warmed up before leading */
  size_t nctls;
  runnable_t *runs;
  size_t nruns;
  kcr_leader_elector le;
  bool has_le;
  kcr_metrics_registry_t *metrics; /* owned; handed down to the client, the controllers
                                      and the elector, which register their series */
  kcr_otlp_exporter_t *exporter;   /* owned; NULL unless tracing is on (kcr/trace.h) */
  kcr__manager_check *checks;      /* set-up thread, then read-only; names owned */
  size_t nchecks;
  kcr__manager_extra_handler *extra; /* set-up thread, then read-only; paths owned */
  size_t nextra;
  void *serving; /* owned: freed with serving_free */
  kcr__manager_free_fn serving_free;

  pthread_mutex_t mu;
  pthread_cond_t cond;
  bool stop_requested;   /* protected by mu */
  bool elected;          /* protected by mu */
  bool lost;             /* protected by mu */
  bool ran;              /* protected by mu */
  recorder_t *recorders; /* protected by mu (the head; the entries are immutable) */
  atomic_bool leading_started;
  kcr_shard_member_t *shard; /* owned; NULL: not sharded */
  kcr_informer_t *shard_ns;  /* owned: the namespaces a balanced ring splits; NULL: none */
  char *shard_ns_selector;   /* owned: those namespaces' label selector; NULL: all */
  atomic_bool shard_left;    /* a graceful stop has handed the shard over */
  bool shard_owns_some;      /* protected by mu: the member has grown once */
};

/* ---- the leader fence ---- */

/* fence_left: how long this process may still write (INT64_MAX: no fence). */
static int64_t fence_left(kcr_manager_t *m) {
  if (!m->has_le || !m->le.fence)
    return INT64_MAX;
  return m->le.fence(m->le.data);
}

int64_t kcr_manager_fence_remaining(kcr_manager_t *m) {
  return fence_left(m);
}

/* on_gate: the controllers' worker gate (worker threads). */
static bool on_gate(void *data) {
  return fence_left(data) > 0;
}

/* shard_fenced: left, or less when sharded: the shard member's fence. */
static int64_t shard_fenced(kcr_manager_t *m, int64_t left) {
  if (m->shard) {
    int64_t s = kcr_shard_member_fence_remaining(m->shard);
    if (s < left)
      left = s;
  }
  return left;
}

/* on_write_fence: the event recorders' fence, asked before each write (a
 * recorder's sender thread): the leader fence, and sharded the shard
 * member's until a graceful stop has handed everything over (the flush then
 * sends what the drained reconciles recorded). */
static int64_t on_write_fence(void *data) {
  kcr_manager_t *m = data;
  int64_t left = fence_left(m);
  return atomic_load(&m->shard_left) ? left : shard_fenced(m, left);
}

/* on_object_fence: the object client's, asked before each write (the writing
 * thread): the leader fence, and sharded, the shard member's too: a replica
 * paused past its renew deadline may resume in the middle of a reconcile
 * whose key another replica has taken over meanwhile; its writes are then
 * refused, as a deposed leader's are. */
static int64_t on_object_fence(void *data) {
  kcr_manager_t *m = data;
  return shard_fenced(m, fence_left(m));
}

/* ---- sharding ---- */

/* SHARD_UID_VNODES: points per member of the uid key's ring. Every object is a
 * key there, so the spread of the space is the spread of the load: 256
 * points hold the largest of 3 shares near 1.12 of the smallest (64: 1.24;
 * docs/design.md), and only the For kind's lists and watches carry the
 * larger selector. */
#define SHARD_UID_VNODES 256

/* primary_uid_hash: the hash of the uid of key's object in c's For informer
 * (one parse of the stored object); false when the informer holds none: the
 * object is another replica's, or gone. */
static bool primary_uid_hash(kcr_informer_t *inf, const char *key, const char *ns, uint64_t *h) {
  kcr_informer_t *part = kcr__informer_part_for(inf, ns);
  kcr_store_t *st = part ? kcr_informer_store(part) : NULL;
  json_t *obj = NULL;
  bool ok;
  if (!st || kcr_store_get_by_key(st, key, &obj) != 0)
    return false;
  ok = kcr_shard_object_hash(obj, KCR_SHARD_KEY_UID, h, NULL) == 0;
  json_decref(obj);
  return ok;
}

/* on_shard_key: the controllers' key filter (worker threads, and the member's
 * drain): the key hashes into the member's effective set. On the namespace
 * key, its namespace; on the uid key, its object's uid as c's For informer
 * holds it (a controller without a For kind hashes the namespace). */
static bool on_shard_key(kcr_controller_t *c, const char *key, const char *ns, const char *name,
                         void *data) {
  kcr_manager_t *m = data;
  kcr_informer_t *inf;
  uint64_t h;
  (void)name;
  if (m->shard_key == KCR_SHARD_KEY_UID && (inf = kcr__controller_primary_informer(c)) != NULL) {
    if (!primary_uid_hash(inf, key, ns, &h))
      return false;
  } else {
    h = kcr_shard_hash(ns, strlen(ns));
  }
  return kcr_shard_member_owns(m->shard, h);
}

/* on_shard_kind: on the uid key, what each kind's informer is sharded on
 * (the cache's keyer, under its lock): a kind the controllers only take as
 * For on its uid, server side; one they only own on its controller owner's
 * uid, on the client, so that children land with their owners; any other
 * (mapped by a function, both owned and For, or only read) is cached whole,
 * since nothing says which replica its objects matter to. */
static int on_shard_kind(const kcr_gvk *gvk, void *data) {
  kcr_manager_t *m = data;
  unsigned roles = 0;
  for (size_t i = 0; i < m->nctls; i++)
    roles |= kcr__controller_watch_roles(m->ctls[i], gvk);
  if (roles == KCR__WATCH_FOR)
    return KCR_SHARD_KEY_UID;
  if (roles == KCR__WATCH_OWNS)
    return KCR_SHARD_KEY_OWNER_UID;
  return -1;
}

/* on_shard_drain: every controller's reconciles in flight are of keys still
 * owned (the member's thread). */
static bool on_shard_drain(const kcr_shard_set_t *keep, void *data) {
  kcr_manager_t *m = data;
  (void)keep;
  for (size_t i = 0; i < m->nctls; i++)
    if (!kcr__controller_drained(m->ctls[i]))
      return false;
  return true;
}

/* on_shard_effective: the informers follow the effective set (an empty one
 * keeps the last: the key filter refuses everything meanwhile, and a
 * selector cannot say "nothing"); the first grow lets run go on. */
static void on_shard_effective(const kcr_shard_set_t *set, void *data) {
  kcr_manager_t *m = data;
  kcr_error_t err;
  if (kcr_shard_set_share(set) <= 0.0)
    return;
  kcr_error_clear(&err);
  if (kcr__cache_set_shard(m->cache, set, m->shard_key, &err) != 0)
    kcr_log(KCR_LOG_ERROR, "manager", "sharding: the informers cannot follow the shard: %s",
            err.message);
  pthread_mutex_lock(&m->mu);
  m->shard_owns_some = true;
  pthread_cond_broadcast(&m->cond);
  pthread_mutex_unlock(&m->mu);
}

/* shard_keys: the hashes of the namespaces that exist, for the balanced ring
 * (kcr_shard_member_keys_cb); KCR_EAGAIN until their informer has synced. */
static int shard_keys(uint64_t **out, size_t *n, void *data) {
  kcr_manager_t *m = data;
  char **keys = NULL;
  size_t nk = 0;
  int rc;
  *out = NULL;
  *n = 0;
  if (!kcr_informer_has_synced(m->shard_ns))
    return KCR_EAGAIN;
  if ((rc = kcr_store_list_keys(kcr_informer_store(m->shard_ns), &keys, &nk)) != 0)
    return rc;
  if (nk && !(*out = kcr__calloc(nk, sizeof(uint64_t))))
    rc = KCR_ENOMEM;
  for (size_t i = 0; i < nk && rc == 0; i++)
    (*out)[i] = kcr_shard_hash(keys[i], strlen(keys[i]));
  kcr_free(keys); /* one allocation, the strings with it */
  if (rc == 0)
    *n = nk;
  return rc;
}

/* shard_namespaces makes the informer of the namespaces (metadata only, not
 * sharded, apart from the cache: a cluster-scoped kind in a sharded cache
 * would hash on "") whose names the balanced ring splits. */
static int shard_namespaces(kcr_manager_t *m, kcr_error_t *err) {
  static const kcr_gvr namespaces = {"", "v1", "namespaces"};
  kcr_informer_options io;
  memset(&io, 0, sizeof(io));
  io.client = m->client;
  io.resource = namespaces;
  io.kind = "Namespace";
  io.label_selector = m->shard_ns_selector;
  io.metadata_only = true;
  io.metrics = m->metrics;
  return kcr_informer_create(&io, &m->shard_ns, err);
}

/* shard_create makes the manager's shard member and shards its cache on the
 * whole space until the first grow narrows it. */
static int shard_create(kcr_manager_t *m, const kcr_manager_options *o, kcr_error_t *err) {
  const kcr_manager_sharding *sh = &o->sharding;
  kcr_shard_member_options so = {0};
  kcr_shard_range all = {0, UINT64_MAX};
  kcr_shard_set_t *whole = NULL;
  int rc;
  so.client = m->client;
  so.ring = sh->ring;
  so.lease_namespace = sh->lease_namespace    ? sh->lease_namespace
                       : o->default_namespace ? o->default_namespace
                                              : "default";
  so.identity = sh->identity;
  so.lease_duration_ns = sh->lease_duration_ns;
  so.renew_deadline_ns = sh->renew_deadline_ns;
  so.retry_period_ns = sh->retry_period_ns;
  so.on_drain = on_shard_drain;
  so.on_effective = on_shard_effective;
  so.data = m;
  so.metrics = m->metrics;
  so.expected_members = sh->expected_members;
  if (sh->key != KCR_SHARD_KEY_NAMESPACE && sh->key != KCR_SHARD_KEY_UID)
    return kcr_error_set(err, KCR_EINVAL,
                         "manager: sharding.key must be KCR_SHARD_KEY_NAMESPACE or "
                         "KCR_SHARD_KEY_UID (the owner uid follows from the uid key)");
  if (sh->key == KCR_SHARD_KEY_UID && sh->namespace_selector)
    return kcr_error_set(err, KCR_EINVAL,
                         "manager: sharding.namespace_selector counts namespaces: it is for the "
                         "namespace key, not the uid key");
  m->shard_key = sh->key;
  if (sh->key == KCR_SHARD_KEY_UID) { /* uids hash evenly: a fine virtual ring */
    so.ring_options.layout = KCR_SHARD_RING_VIRTUAL;
    so.ring_options.vnodes = SHARD_UID_VNODES;
    kcr__cache_set_shard_keyer(m->cache, on_shard_kind, m);
  } else if (!sh->hash_ring) {
    if (sh->namespace_selector && !(m->shard_ns_selector = kcr__strdup(sh->namespace_selector)))
      return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
    if ((rc = shard_namespaces(m, err)) != 0)
      return rc;
    so.ring_options.layout = KCR_SHARD_RING_BALANCED;
    so.keys = shard_keys;
  }
  if ((rc = kcr_shard_member_create(&so, &m->shard, err)) != 0 ||
      (rc = kcr_shard_set_create(&all, 1, &whole, err)) != 0)
    return rc;
  rc = kcr__cache_set_shard(m->cache, whole, m->shard_key, err);
  kcr_shard_set_destroy(whole);
  return rc;
}

/* shard_join starts the member and waits until it owns a part of the space,
 * or a stop is asked (KCR_ECANCELED). Run thread. */
static int shard_join(kcr_manager_t *m, kcr_error_t *err) {
  bool owns, stop;
  int rc;
  if (m->shard_ns && (rc = kcr_informer_start(m->shard_ns, err)) != 0)
    return rc;
  if ((rc = kcr_shard_member_start(m->shard, err)) != 0)
    return rc;
  kcr_log(KCR_LOG_INFO, "manager", "sharding: joined ring as %s; waiting for a part of it",
          kcr_shard_member_identity(m->shard));
  pthread_mutex_lock(&m->mu);
  while (!m->shard_owns_some && !m->stop_requested)
    pthread_cond_wait(&m->cond, &m->mu);
  owns = m->shard_owns_some;
  stop = m->stop_requested;
  pthread_mutex_unlock(&m->mu);
  if (stop && !owns)
    return kcr_error_set(err, KCR_ECANCELED, "manager: stopped before owning a shard");
  return 0;
}

kcr_shard_member_t *kcr_manager_shard_member(kcr_manager_t *m) {
  return m->shard;
}

/* ---- controller source ---- */

static int src_get_informer(void *data, const kcr_gvk *gvk, kcr_informer_t **out,
                            kcr_error_t *err) {
  kcr_manager_t *m = data;
  return kcr_cache_get_informer(m->cache, gvk, out, err);
}

static int src_get_metadata_informer(void *data, const kcr_gvk *gvk, kcr_informer_t **out,
                                     kcr_error_t *err) {
  kcr_manager_t *m = data;
  return kcr_cache_get_metadata_informer(m->cache, gvk, out, err);
}

static int src_is_namespaced(void *data, const kcr_gvk *gvk, bool *out, kcr_error_t *err) {
  kcr_manager_t *m = data;
  kcr_rest_mapping mp = {0};
  int rc = kcr_rest_mapper_mapping_for_kind(m->mapper, gvk, &mp, err);
  *out = rc == 0 ? mp.namespaced != 0 : true;
  return rc;
}

/* ---- create, set-up ---- */

/* start_exporter: with tracing on, spans go to the collector through the
 * manager's own loop, counted on its registry. A collector that cannot be
 * set up never stops the manager: tracing is best effort. */
static void start_exporter(kcr_manager_t *m) {
  kcr_otlp_exporter_options eo;
  kcr_error_t e;
  if (!kcr_trace_enabled())
    return;
  memset(&eo, 0, sizeof(eo));
  eo.loop = kcr_client_loop(m->client);
  eo.metrics = m->metrics;
  kcr_error_clear(&e);
  if (kcr_otlp_exporter_create(&eo, &m->exporter, &e) != 0)
    kcr_log(KCR_LOG_WARN, "manager", "tracing: no exporter, spans are dropped: %s", e.message);
}

int kcr_manager_create(const kcr_manager_options *o, kcr_manager_t **out, kcr_error_t *err) {
  kcr_manager_t *m;
  kcr_client_options co;
  kcr_cache_options cao;
  int rc;
  *out = NULL;
  if (!o || !o->config)
    return kcr_error_set(err, KCR_EINVAL, "manager: a REST config is required");
  m = kcr__calloc(1, sizeof(*m));
  if (!m)
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  m->grace_ns = o->graceful_shutdown_timeout_ns ? o->graceful_shutdown_timeout_ns : DEFAULT_GRACE;
  m->sync_ns = o->cache_sync_timeout_ns > 0 ? o->cache_sync_timeout_ns : DEFAULT_SYNC;
  m->warmup_default = o->enable_warmup;
  m->no_pq = o->disable_priority_queue;
  m->handle_signals = !o->no_signal_handlers;
  atomic_init(&m->leading_started, false);
  if (pthread_mutex_init(&m->mu, NULL) != 0) {
    kcr__free(m);
    return kcr_error_set(err, KCR_ESYS, "manager: mutex");
  }
  if (kcr_clock_cond_init(&m->cond) != 0) {
    pthread_mutex_destroy(&m->mu);
    kcr__free(m);
    return kcr_error_set(err, KCR_ESYS, "manager: condition variable");
  }
  memset(&co, 0, sizeof(co));
  co.config = o->config;
  co.qps = o->qps;
  co.burst = o->burst;
  co.user_agent = o->user_agent;
  /* Every manager keeps a metrics registry and hands it down: the REST client,
   * each controller and its queue, and the elector register their own series on
   * it; kcr_manager_serve exposes it on /metrics. */
  rc = kcr_metrics_registry_create(&m->metrics, NULL);
  if (rc == 0)
    rc = kcr_metrics_register_process(m->metrics, NULL);
  if (rc) {
    kcr_metrics_registry_destroy(m->metrics);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->mu);
    kcr__free(m);
    return kcr_error_set(err, rc, "manager: cannot create its metrics registry");
  }
  co.metrics = m->metrics;
  memset(&cao, 0, sizeof(cao));
  cao.default_ns = o->default_namespace;
  cao.sync_timeout_ns = m->sync_ns;
  cao.ryow_timeout_ns = o->ryow_timeout_ns > 0 ? o->ryow_timeout_ns : DEFAULT_RYOW;
  cao.metrics = m->metrics;
  cao.reader_fail_on_missing_informer = o->reader_fail_on_missing_informer;
  cao.resync_period_ns = o->sync_period_ns == 0  ? DEFAULT_SYNC_PERIOD
                         : o->sync_period_ns < 0 ? 0
                                                 : o->sync_period_ns;
  cao.resync_jitter = true;
  cao.default_namespaces = o->default_namespaces; /* copied by the cache */
  cao.default_namespaces_len = o->default_namespaces_len;
  rc = kcr_client_create(&co, &m->client, err);
  if (rc == 0)
    rc = kcr_rest_mapper_create(m->client, &m->mapper, err);
  if (rc == 0) {
    cao.client = m->client;
    cao.mapper = m->mapper;
    rc = kcr_cache_create(&cao, &m->cache, err);
  }
  if (rc) {
    kcr_error_set(err, rc, "manager: %s", kcr_strerror(rc));
    kcr_manager_destroy(m);
    return rc;
  }
  kcr__cache_client_init(&m->cclient, m->client, m->mapper, m->cache, on_object_fence, m);
  kcr__cache_client_init(&m->cclient_nofence, m->client, m->mapper, m->cache, NULL, NULL);
  rc = kcr__cache_client_disable_cache_for(
      &m->cclient, o->disable_cache_for, o->disable_cache_for ? o->disable_cache_for_len : 0, err);
  if (rc == 0)
    rc = kcr__cache_client_disable_cache_for(&m->cclient_nofence, o->disable_cache_for,
                                             o->disable_cache_for ? o->disable_cache_for_len : 0,
                                             err);
  if (rc) {
    kcr_manager_destroy(m);
    return rc;
  }
  m->objclient = kcr__cache_client_objclient(&m->cclient);
  m->apireader = kcr__cache_client_api_reader(&m->cclient);
  m->unfenced = kcr__cache_client_objclient(&m->cclient_nofence);
  if (o->sharding.ring && (rc = shard_create(m, o, err)) != 0) {
    kcr_manager_destroy(m);
    return rc;
  }
  start_exporter(m);
  *out = m;
  return 0;
}

kcr_client_t *kcr_manager_rest_client(kcr_manager_t *m) {
  return m->client;
}
kcr_rest_mapper_t *kcr_manager_mapper(kcr_manager_t *m) {
  return m->mapper;
}
kcr_cache_t *kcr_manager_cache(kcr_manager_t *m) {
  return m->cache;
}
const kcr_objclient *kcr_manager_client(kcr_manager_t *m) {
  return &m->objclient;
}
const kcr_objclient *kcr_manager_unfenced_client(kcr_manager_t *m) {
  return &m->unfenced;
}
const kcr_objclient *kcr_manager_api_reader(kcr_manager_t *m) {
  return &m->apireader;
}
size_t kcr_manager_controller_count(kcr_manager_t *m) {
  return m->nctls;
}

kcr_controller_t *kcr_manager_controller_at(kcr_manager_t *m, size_t i) {
  return i < m->nctls ? m->ctls[i] : NULL;
}

int kcr_manager_get_informer(kcr_manager_t *m, const kcr_gvk *gvk, kcr_informer_t **out,
                             kcr_error_t *err) {
  return kcr_cache_get_informer(m->cache, gvk, out, err);
}

static bool has_run(kcr_manager_t *m) {
  bool r;
  pthread_mutex_lock(&m->mu);
  r = m->ran;
  pthread_mutex_unlock(&m->mu);
  return r;
}

int kcr_manager_add_controller(kcr_manager_t *m, const kcr_controller_options *o,
                               kcr_controller_t **out, kcr_error_t *err) {
  kcr_controller_options co;
  kcr_controller_t **nc;
  bool *ns, *nl, *nw, need_le;
  int rc;
  *out = NULL;
  if (!o || has_run(m)) {
    if (o)
      kcr_ratelimiter_destroy(o->rate_limiter);
    return kcr_error_set(err, KCR_EINVAL, "manager: controllers are added before run");
  }
  for (size_t i = 0; o->name && i < m->nctls; i++) {
    if (strcmp(kcr_controller_name(m->ctls[i]), o->name) == 0) {
      kcr_ratelimiter_destroy(o->rate_limiter);
      return kcr_error_set(err, KCR_EEXIST,
                           "controller with name %s already exists. Controller names must be "
                           "unique to avoid multiple controllers reporting the same metric",
                           o->name);
    }
  }
  nc = kcr__realloc(m->ctls, (m->nctls + 1) * sizeof(kcr_controller_t *));
  if (nc)
    m->ctls = nc;
  ns = nc ? kcr__realloc(m->ctl_started, (m->nctls + 1) * sizeof(*ns)) : NULL;
  if (ns)
    m->ctl_started = ns;
  nl = ns ? kcr__realloc(m->ctl_le, (m->nctls + 1) * sizeof(*nl)) : NULL;
  if (nl)
    m->ctl_le = nl;
  nw = nl ? kcr__realloc(m->ctl_warm, (m->nctls + 1) * sizeof(*nw)) : NULL;
  if (nw)
    m->ctl_warm = nw;
  if (!nc || !ns || !nl || !nw) {
    kcr_ratelimiter_destroy(o->rate_limiter);
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  }
  need_le = !o->need_leader_election || *o->need_leader_election;
  co = *o;
  co.source.get_informer = src_get_informer;
  co.source.is_namespaced = src_is_namespaced;
  co.source.get_metadata_informer = src_get_metadata_informer;
  co.source.data = m;
  co.client = need_le ? m->objclient : m->unfenced;
  co.api_reader = m->apireader;
  co.need_leader_election = NULL;
  co.enable_warmup = NULL;
  if (!co.metrics)
    co.metrics = m->metrics;
  if (co.cache_sync_timeout_ns <= 0)
    co.cache_sync_timeout_ns = m->sync_ns;
  if (!co.use_priority_queue && m->no_pq) {
    static const bool off = false;
    co.use_priority_queue = &off; /* the manager's default for its controllers */
  }
  if ((rc = kcr_controller_create(&co, out, err)) != 0)
    return rc;
  if (need_le) /* the others reconcile on every replica: never gated */
    kcr__controller_set_gate(*out, on_gate, m);
  if (m->shard)
    kcr__controller_set_key_filter(*out, on_shard_key, m);
  m->ctls[m->nctls] = *out;
  m->ctl_started[m->nctls] = false;
  m->ctl_le[m->nctls] = need_le;
  m->ctl_warm[m->nctls] = need_le && (o->enable_warmup ? *o->enable_warmup : m->warmup_default);
  m->nctls++;
  return 0;
}

int kcr_manager_add_runnable(kcr_manager_t *m, const kcr_runnable *r, kcr_error_t *err) {
  runnable_t *n;
  if (!r || !r->start || has_run(m))
    return kcr_error_set(err, KCR_EINVAL,
                         "manager: a runnable needs start and is added before run");
  n = kcr__realloc(m->runs, (m->nruns + 1) * sizeof(*n));
  if (!n)
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  m->runs = n;
  memset(&n[m->nruns], 0, sizeof(*n));
  n[m->nruns].r = *r;
  n[m->nruns].name = kcr__strdup(r->name ? r->name : "runnable");
  if (!n[m->nruns].name)
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  n[m->nruns].r.name = n[m->nruns].name;
  m->nruns++;
  return 0;
}

kcr_metrics_registry_t *kcr_manager_metrics(kcr_manager_t *m) {
  return m->metrics;
}

/* ---- probe checks and metrics extra handlers ---- */

static const char CHECK_NAME_CHARS[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";

static bool check_taken(kcr_manager_t *m, kcr_probe_kind kind, const char *name) {
  if (strcmp(name, "ping") == 0 ||
      (kind == KCR_PROBE_READYZ && strcmp(name, "informer-sync") == 0) ||
      (kind == KCR_PROBE_HEALTHZ && strcmp(name, "leaderElection") == 0))
    return true;
  for (size_t i = 0; i < m->nchecks; i++)
    if (m->checks[i].kind == kind && strcmp(m->checks[i].name, name) == 0)
      return true;
  return false;
}

static int add_check(kcr_manager_t *m, kcr_probe_kind kind, const char *name, kcr_check_err_cb cb,
                     void *data, kcr_error_t *err) {
  const char *what = kind == KCR_PROBE_HEALTHZ ? "healthz" : "readyz";
  kcr__manager_check *n;
  size_t len = name ? strlen(name) : 0;
  if (has_run(m))
    return kcr_error_set(err, KCR_EINVAL,
                         "unable to add new checker because %s endpoint has already been created",
                         what);
  if (!cb)
    return kcr_error_set(err, KCR_EINVAL, "manager: the %s check needs a function", what);
  if (len == 0 || len > 128 || strspn(name, CHECK_NAME_CHARS) != len)
    return kcr_error_set(err, KCR_EINVAL,
                         "manager: bad %s check name \"%s\" (1 to 128 of [a-zA-Z0-9_.-])", what,
                         name ? name : "(null)");
  if (check_taken(m, kind, name))
    return kcr_error_set(err, KCR_EEXIST, "%s checker \"%s\" already exists", what, name);
  n = kcr__realloc(m->checks, (m->nchecks + 1) * sizeof(*n));
  if (!n)
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  m->checks = n;
  n[m->nchecks] = (kcr__manager_check){kcr__strdup(name), kind, cb, data};
  if (!n[m->nchecks].name)
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  m->nchecks++;
  return 0;
}

int kcr_manager_add_healthz_check(kcr_manager_t *m, const char *name, kcr_check_err_cb check,
                                  void *data, kcr_error_t *err) {
  return add_check(m, KCR_PROBE_HEALTHZ, name, check, data, err);
}

int kcr_manager_add_readyz_check(kcr_manager_t *m, const char *name, kcr_check_err_cb check,
                                 void *data, kcr_error_t *err) {
  return add_check(m, KCR_PROBE_READYZ, name, check, data, err);
}

const kcr__manager_check *kcr__manager_checks(kcr_manager_t *m, size_t *n) {
  *n = m->nchecks;
  return m->checks;
}

int kcr_manager_add_metrics_extra_handler(kcr_manager_t *m, const char *path,
                                          kcr_server_handler_cb handler, void *data,
                                          kcr_error_t *err) {
  kcr__manager_extra_handler *n;
  if (has_run(m))
    return kcr_error_set(err, KCR_EINVAL, "manager: metrics extra handlers are added before run");
  if (!handler)
    return kcr_error_set(err, KCR_EINVAL, "manager: the metrics extra handler needs a function");
  if (!path || path[0] != '/')
    return kcr_error_set(err, KCR_EINVAL,
                         "manager: a metrics extra handler's path must start with '/' (got "
                         "\"%s\")",
                         path ? path : "(null)");
  if (strcmp(path, "/metrics") == 0)
    return kcr_error_set(err, KCR_EEXIST, "overriding builtin /metrics endpoint is not allowed");
  for (size_t i = 0; i < m->nextra; i++)
    if (strcmp(m->extra[i].path, path) == 0)
      return kcr_error_set(err, KCR_EEXIST,
                           "can't register extra handler by duplicate path \"%s\" on metrics "
                           "http server",
                           path);
  n = kcr__realloc(m->extra, (m->nextra + 1) * sizeof(*n));
  if (!n)
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  m->extra = n;
  n[m->nextra] = (kcr__manager_extra_handler){kcr__strdup(path), handler, data};
  if (!n[m->nextra].path)
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  m->nextra++;
  return 0;
}

const kcr__manager_extra_handler *kcr__manager_extra_handlers(kcr_manager_t *m, size_t *n) {
  *n = m->nextra;
  return m->extra;
}

int kcr__manager_set_serving(kcr_manager_t *m, void *state, kcr__manager_free_fn free_fn) {
  if (m->serving)
    return KCR_EEXIST;
  m->serving = state;
  m->serving_free = free_fn;
  return 0;
}

void *kcr__manager_serving(kcr_manager_t *m) {
  return m->serving;
}

/* ---- event recorders ---- */

kcr_event_recorder_t *kcr_manager_event_recorder(kcr_manager_t *m, const char *component) {
  kcr_event_recorder_options eo;
  recorder_t *e;
  kcr_error_t err;
  assert(m && component && *component);
  pthread_mutex_lock(&m->mu);
  for (e = m->recorders; e; e = e->next)
    if (strcmp(e->component, component) == 0)
      break;
  if (!e && (e = kcr__calloc(1, sizeof(*e))) != NULL) {
    memset(&eo, 0, sizeof(eo));
    eo.client = m->client;
    eo.reporting_controller = component;
    eo.fence = on_write_fence;
    eo.fence_data = m;
    kcr_error_clear(&err);
    if ((e->component = kcr__strdup(component)) == NULL)
      kcr_error_set(&err, KCR_ENOMEM, "out of memory");
    else
      kcr_event_recorder_create(&eo, &e->r, &err);
    if (e->r) {
      e->next = m->recorders;
      m->recorders = e;
    } else {
      kcr_log(KCR_LOG_ERROR, "manager", "no event recorder for %s: %s", component, err.message);
      kcr__free(e->component);
      kcr__free(e);
      e = NULL;
    }
  }
  pthread_mutex_unlock(&m->mu);
  return e ? e->r : NULL;
}

void kcr_manager_set_leader_elector(kcr_manager_t *m, const kcr_leader_elector *le) {
  m->has_le = le != NULL;
  if (le)
    m->le = *le;
}

static void signal_event(kcr_manager_t *m, bool *flag) {
  pthread_mutex_lock(&m->mu);
  *flag = true;
  pthread_cond_broadcast(&m->cond);
  pthread_mutex_unlock(&m->mu);
}

void kcr_manager_leader_elected(kcr_manager_t *m) {
  signal_event(m, &m->elected);
}
void kcr_manager_leader_lost(kcr_manager_t *m) {
  signal_event(m, &m->lost);
}
void kcr_manager_request_stop(kcr_manager_t *m) {
  signal_event(m, &m->stop_requested);
}
bool kcr_manager_started(kcr_manager_t *m) {
  return atomic_load(&m->leading_started);
}

/* ---- signals ---- */

static int sig_pipe[2] = {-1, -1};

static void on_signal(int signo) {
  int saved = errno;
  unsigned char b = (unsigned char)signo;
  ssize_t n = write(sig_pipe[1], &b, 1);
  (void)n;
  errno = saved;
}

static void *signal_main(void *arg) {
  kcr_manager_t *m = arg;
  int count = 0;
  for (;;) {
    unsigned char b;
    ssize_t n = read(sig_pipe[0], &b, 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || b == 0)
      return NULL;
    if (++count == 1) {
      kcr_log(KCR_LOG_INFO, "manager", "signal %d received: stopping gracefully", b);
      kcr_manager_request_stop(m);
    } else {
      kcr_log(KCR_LOG_ERROR, "manager", "second signal %d received: exiting", b);
      _exit(1);
    }
  }
}

typedef struct sigstate {
  bool on;
  pthread_t thread;
  struct sigaction old_term, old_int;
} sigstate_t;

static int signals_start(kcr_manager_t *m, sigstate_t *s, kcr_error_t *err) {
  struct sigaction sa;
  memset(s, 0, sizeof(*s));
  if (pipe(sig_pipe) != 0)
    return kcr_error_set(err, KCR_ESYS, "manager: pipe: %s", strerror(errno));
  fcntl(sig_pipe[1], F_SETFL, fcntl(sig_pipe[1], F_GETFL) | O_NONBLOCK);
  fcntl(sig_pipe[0], F_SETFD, FD_CLOEXEC);
  fcntl(sig_pipe[1], F_SETFD, FD_CLOEXEC);
  if (pthread_create(&s->thread, NULL, signal_main, m) != 0) {
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    sig_pipe[0] = sig_pipe[1] = -1;
    return kcr_error_set(err, KCR_ESYS, "manager: cannot start the signal thread");
  }
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &s->old_term);
  sigaction(SIGINT, &sa, &s->old_int);
  s->on = true;
  return 0;
}

static void signals_stop(sigstate_t *s) {
  unsigned char zero = 0;
  ssize_t n;
  if (!s->on)
    return;
  sigaction(SIGTERM, &s->old_term, NULL);
  sigaction(SIGINT, &s->old_int, NULL);
  n = write(sig_pipe[1], &zero, 1);
  (void)n;
  pthread_join(s->thread, NULL);
  close(sig_pipe[0]);
  close(sig_pipe[1]);
  sig_pipe[0] = sig_pipe[1] = -1;
  s->on = false;
}

/* ---- run ---- */

static int start_group(kcr_manager_t *m, kcr_runnable_group g, kcr_error_t *err) {
  for (size_t i = 0; i < m->nruns; i++) {
    runnable_t *r = &m->runs[i];
    int rc;
    if (r->r.group != g || r->started)
      continue;
    if ((rc = r->r.start(r->r.data, err)) != 0) {
      kcr_error_prefix(err, "runnable %s: ", r->name);
      return rc;
    }
    r->started = true;
  }
  return 0;
}

static void stop_group(kcr_manager_t *m, kcr_runnable_group g) {
  for (size_t i = m->nruns; i-- > 0;) {
    runnable_t *r = &m->runs[i];
    if (r->r.group != g || !r->started)
      continue;
    if (r->r.stop)
      r->r.stop(r->r.data);
    r->started = false;
  }
}

/* start_controllers starts the controllers that need leader election (le)
 * or those that do not (!le). */
static int start_controllers(kcr_manager_t *m, bool le, kcr_error_t *err) {
  int rc;
  for (size_t i = 0; i < m->nctls; i++) {
    if (m->ctl_le[i] != le || m->ctl_started[i])
      continue;
    if ((rc = kcr_controller_start(m->ctls[i], err)) != 0)
      return rc;
    m->ctl_started[i] = true;
  }
  return 0;
}

/* warm_controllers warms up the controllers that asked for it (run thread). */
static int warm_controllers(kcr_manager_t *m, kcr_error_t *err) {
  int rc;
  for (size_t i = 0; i < m->nctls; i++)
    if (m->ctl_warm[i] && (rc = kcr_controller_warmup(m->ctls[i], err)) != 0)
      return rc;
  return 0;
}

static int start_leading(kcr_manager_t *m, kcr_error_t *err) {
  int rc;
  if ((rc = start_controllers(m, true, err)) != 0)
    return rc;
  if ((rc = start_group(m, KCR_RUNNABLE_LEADER, err)) != 0)
    return rc;
  atomic_store(&m->leading_started, true);
  return 0;
}

static int64_t left(int64_t deadline) {
  int64_t l = deadline - kcr_clock_now(kcr_clock_system());
  return l > 0 ? l : 1;
}

/* flush_recorders sends what the recorders hold, by deadline (run thread). */
static void flush_recorders(kcr_manager_t *m, int64_t deadline) {
  recorder_t *e;
  pthread_mutex_lock(&m->mu);
  e = m->recorders;
  pthread_mutex_unlock(&m->mu);
  for (; e; e = e->next)
    if (kcr_event_recorder_flush(e->r, left(deadline)) != 0)
      kcr_log(KCR_LOG_WARN, "manager", "events of %s not all sent before the grace period ended",
              e->component);
}

/*
 * stop_all stops everything that started, in reverse order, by deadline. With
 * flush (a graceful stop), the event recorders send what the stopped
 * controllers recorded while this process may still write.
 */
static int stop_all(kcr_manager_t *m, int64_t grace_ns, bool le_started, bool flush) {
  int64_t deadline = kcr_clock_now(kcr_clock_system()) + (grace_ns > 0 ? grace_ns : 1);
  int rc = 0;
  /* sharded: hand every range over first (drained, Lease deleted), so the
   * other replicas take over now rather than after the lease */
  kcr_shard_member_stop(m->shard);
  atomic_store(&m->shard_left, true); /* the recorders may flush */
  /* controllers first: all stop taking work at once, then each is waited for */
  for (size_t i = m->nctls; i-- > 0;)
    if (m->ctl_started[i] || m->ctl_warm[i]) /* a warm one has handlers to remove */
      kcr_controller_stop(m->ctls[i], 1);
  for (size_t i = m->nctls; i-- > 0;) {
    if (m->ctl_started[i] && kcr_controller_stop(m->ctls[i], left(deadline)) != 0)
      rc = KCR_ETIMEDOUT;
  }
  stop_group(m, KCR_RUNNABLE_LEADER);
  if (flush)
    flush_recorders(m, deadline);
  stop_group(m, KCR_RUNNABLE_BACKGROUND);
  if (le_started && m->le.stop)
    m->le.stop(m->le.data);
  stop_group(m, KCR_RUNNABLE_SERVER);
  return rc;
}

int kcr_manager_run(kcr_manager_t *m, kcr_error_t *err) {
  sigstate_t sig = {0};
  bool le_started = false, leading = false;
  int rc = 0;
  pthread_mutex_lock(&m->mu);
  if (m->ran) {
    pthread_mutex_unlock(&m->mu);
    return kcr_error_set(err, KCR_EINVAL, "manager: run twice");
  }
  m->ran = true;
  pthread_mutex_unlock(&m->mu);

  if (m->handle_signals && (rc = signals_start(m, &sig, err)) != 0)
    return rc;
  kcr_log(KCR_LOG_INFO, "manager", "Starting manager");
  if ((rc = start_group(m, KCR_RUNNABLE_SERVER, err)) != 0)
    goto stop;
  if (m->shard && (rc = shard_join(m, err)) != 0)
    goto stop;
  if ((rc = kcr_cache_wait_for_sync(m->cache, m->sync_ns, err)) != 0)
    goto stop;
  if ((rc = start_group(m, KCR_RUNNABLE_BACKGROUND, err)) != 0)
    goto stop;
  /* controllers that need no leader election: every replica, before the
   * elector campaigns (controller-runtime's "Others" group) */
  if ((rc = start_controllers(m, false, err)) != 0)
    goto stop;
  /* warm-up (controller-runtime's Warmup group): before the elector
   * campaigns, so that a replica that wins leads on synced caches */
  if ((rc = warm_controllers(m, err)) != 0)
    goto stop;
  if (m->has_le && m->le.start) {
    if ((rc = m->le.start(m->le.data, m, err)) != 0)
      goto stop;
    le_started = true;
  } else {
    if ((rc = start_leading(m, err)) != 0)
      goto stop;
    leading = true;
  }
  for (;;) {
    bool stop, lost, elected;
    pthread_mutex_lock(&m->mu);
    while (!m->stop_requested && !m->lost && !(m->elected && !leading))
      pthread_cond_wait(&m->cond, &m->mu);
    stop = m->stop_requested;
    lost = m->lost;
    elected = m->elected;
    pthread_mutex_unlock(&m->mu);
    if (lost) {
      kcr_log(KCR_LOG_ERROR, "manager", "leader election lost");
      stop_all(m, 1, false, false);
      signals_stop(&sig);
      return kcr_error_set(err, KCR_ECANCELED, "leader election lost");
    }
    if (stop)
      break;
    if (elected && !leading) {
      kcr_log(KCR_LOG_INFO, "manager", "elected leader: starting controllers");
      leading = true;
      if ((rc = start_leading(m, err)) != 0)
        goto stop;
    }
  }
stop:
  if (rc)
    kcr_log(KCR_LOG_ERROR, "manager", "start failed: %s", err ? err->message : kcr_strerror(rc));
  kcr_log(KCR_LOG_INFO, "manager", "Stopping and waiting for runnables");
  if (stop_all(m, m->grace_ns, le_started, true) != 0 && rc == 0)
    rc = kcr_error_set(err, KCR_ETIMEDOUT,
                       "failed waiting for all runnables to end within grace period of %.0f s",
                       (double)m->grace_ns / 1e9);
  signals_stop(&sig);
  if (rc == 0)
    kcr_log(KCR_LOG_INFO, "manager", "Stopped gracefully");
  return rc;
}

void kcr_manager_destroy(kcr_manager_t *m) {
  if (!m)
    return;
  kcr_shard_member_destroy(m->shard); /* before the controllers its drain asks */
  kcr_informer_destroy(m->shard_ns);  /* after the member that asks it */
  kcr__free(m->shard_ns_selector);
  for (size_t i = 0; i < m->nctls; i++)
    kcr_controller_destroy(m->ctls[i]);
  /* the recorders send through the client and ask the elector's fence (serving) */
  for (recorder_t *e = m->recorders, *next; e; e = next) {
    next = e->next;
    kcr_event_recorder_destroy(e->r);
    kcr__free(e->component);
    kcr__free(e);
  }
  kcr__free(m->ctls);
  kcr__free(m->ctl_started);
  kcr__free(m->ctl_le);
  kcr__free(m->ctl_warm);
  for (size_t i = 0; i < m->nruns; i++)
    kcr__free(m->runs[i].name);
  kcr__free(m->runs);
  for (size_t i = 0; i < m->nchecks; i++)
    kcr__free(m->checks[i].name);
  kcr__free(m->checks);
  for (size_t i = 0; i < m->nextra; i++)
    kcr__free(m->extra[i].path);
  kcr__free(m->extra);
  if (m->serving_free)
    m->serving_free(m->serving);
  kcr_cache_destroy(m->cache);
  kcr_otlp_exporter_destroy(m->exporter); /* sends what the controllers left, on the
                                             client's loop, which must still run */
  kcr_rest_mapper_destroy(m->mapper);
  kcr_client_destroy(m->client);
  kcr__cache_client_free(&m->cclient);
  kcr__cache_client_free(&m->cclient_nofence);
  kcr_metrics_registry_destroy(m->metrics);
  pthread_cond_destroy(&m->cond);
  pthread_mutex_destroy(&m->mu);
  kcr__free(m);
}
