/* SPDX-License-Identifier: MIT */
/*
 * kcr/manager.h: the manager — controller-runtime's manager: it owns the REST
 * client, the REST mapper, the informers the controllers share, the controllers
 * and any user runnables, starts them in controller-runtime's order and stops
 * them in reverse, with a graceful shutdown on SIGTERM/SIGINT.
 *
 * Start order (kcr_manager_run): server runnables (metrics and probe servers),
 * then the informers already asked for and their sync, then background
 * runnables and the controllers that need no leader election
 * (need_leader_election false), then — at once, or when the leader elector
 * says this process leads — the other controllers and leader runnables. Stop order is the reverse:
 * controllers and leader runnables (reconciles in flight finish), the flush of the event recorders
 * (kcr_manager_event_recorder), background runnables, the leader elector (releases the lease),
 * servers; the informers stop in kcr_manager_destroy. The whole stop is bounded by the graceful
 * shutdown timeout (default 30 s).
 *
 * Signals: kcr_manager_run handles SIGTERM and SIGINT (unless told not to): the
 * first starts the graceful stop and kcr_manager_run then returns 0; a second
 * exits the process with status 1 at once. The handler only writes a byte to a
 * pipe; a thread of the manager reads it (no async-signal-unsafe code runs in
 * the handler). One manager per process handles signals.
 *
 * Threads: create, new_controller, add_runnable and set_leader_elector before
 * run, from one thread; kcr_manager_request_stop, kcr_manager_event_recorder and
 * the leader callbacks from any thread.
 */
#ifndef KCR_MANAGER_H
#define KCR_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/cache.h"
#include "kcr/client.h"
#include "kcr/common.h"
#include "kcr/config.h"
#include "kcr/controller.h"
#include "kcr/controllerutil.h"
#include "kcr/discovery.h"
#include "kcr/error.h"
#include "kcr/events.h"
#include "kcr/metrics.h"
#include "kcr/server.h"
#include "kcr/shard_member.h"
#include "kcr/webhook.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_manager_t: opaque. */
typedef struct kcr_manager kcr_manager_t;

/*
 * kcr_manager_options: zero-initialise.
 *   config            required; borrowed (the client takes its reference).
 *   default_namespace watch only this namespace (NULL: all).
 *   graceful_shutdown_timeout_ns  0: 30 s; negative: do not wait.
 *   cache_sync_timeout_ns         how long reads and controllers wait for an
 *                                 informer to sync; 0: 2 min.
 *   ryow_timeout_ns   how long a read waits to see this process's own write;
 *                     0: 10 s.
 *   no_signal_handlers  kcr_manager_run leaves SIGTERM/SIGINT alone.
 *   qps, burst        the client's rate limit (kcr_client_options).
 *   user_agent        the client's User-Agent (kcr_client_options; NULL: the
 *                     default), e.g. to tell replicas apart in the audit log.
 *   disable_cache_for, disable_cache_for_len  kinds (an array, copied) that
 *                     the manager's client reads from the API server instead of
 *                     its informers (controller-runtime's
 *                     client.Options.Cache.DisableFor), matched on group,
 *                     version and kind: a get or list of one never makes an
 *                     informer, so reading one Secret does not cache every
 *                     Secret of the cluster. Writes are as for other kinds;
 *                     controllers watching such a kind still get its informer.
 *   reader_fail_on_missing_informer  a read through the manager's client of a
 *                     cached kind whose informer was not made beforehand
 *                     (kcr_manager_get_informer, a controller's for/owns/watches
 *                     once it started, kcr_cache_add_index) fails with
 *                     KCR_ENOTCACHED instead of making one
 *                     (kcr_cache_options.reader_fail_on_missing_informer).
 *   sync_period_ns    how often every informer of the manager's cache
 *                     re-delivers each object it holds as an update, so every
 *                     controller reconciles every object again (controller-
 *                     runtime's cache.Options.SyncPeriod): a safety net for
 *                     missed drift, not a polling loop. 0: controller-
 *                     runtime's default, 10 hours; negative: never. Each
 *                     informer's period is jittered to [0.9, 1.1) of it, as
 *                     controller-runtime does (kcr_cache_options.resync_jitter).
 *                     Before this option the manager never resynced.
 *   default_namespaces, default_namespaces_len  watch only this set of
 *                     namespaces (an array, copied; controller-runtime's
 *                     cache.Options.DefaultNamespaces): each namespaced kind's
 *                     informer is one list-watch per namespace, reads outside
 *                     the set fail, lists of all namespaces merge them
 *                     (kcr_cache_options.default_namespaces). Not with
 *                     default_namespace (KCR_EINVAL from kcr_manager_create);
 *                     a set of one is the same as default_namespace.
 *   enable_warmup     the default of kcr_controller_options.enable_warmup:
 *                     controllers that need leader election start their
 *                     informers and sync their caches on every replica, before
 *                     the elector campaigns, so that a new leader starts its
 *                     workers on a synced cache (controller-runtime's
 *                     Controller.EnableWarmup). The cost: a standby holds the
 *                     cache a leader would. false: a standby holds only what
 *                     other code asked for.
 *   disable_priority_queue  the controllers added to this manager use the
 *                     plain client-go queue unless their own
 *                     use_priority_queue says otherwise (controller-runtime's
 *                     config.Controller.UsePriorityQueue set to false; see
 *                     kcr_controller_options). false, the zero value: the
 *                     priority queue, upstream's default since v0.23.
 */
/*
 * kcr_manager_sharding: run this manager's controllers as one replica of a
 * shard ring (kcr/shard_member.h); zero-initialise (ring NULL: not sharded).
 *   ring             the ring's name: every replica of the operator gives the
 *                    same one; each holds a Lease labelled with it.
 *   lease_namespace  where the ring's Leases live; NULL: default_namespace,
 *                    else "default".
 *   identity         NULL: "<hostname>_<uuid v4>".
 *   lease_duration_ns, renew_deadline_ns, retry_period_ns  0: 15 s, 10 s, 2 s.
 *   hash_ring        false (the default): the namespaces that exist are split
 *                    evenly among the replicas (KCR_SHARD_RING_BALANCED, kept
 *                    up to date by a metadata-only informer on namespaces: the
 *                    operator needs list and watch on them); true: a
 *                    consistent-hash ring that ignores them
 *                    (KCR_SHARD_RING_VIRTUAL: a join moves only the joiner's
 *                    share, but a few namespaces can land unevenly, and names
 *                    that differ only in their last character all together).
 *   namespace_selector  with the balanced split, a label selector for the
 *                    namespaces it counts (NULL: all): those that hold the
 *                    operator's objects, so that namespaces without any
 *                    (kube-system) do not take a replica's share. The others
 *                    are still owned, by the replica whose range they fall in.
 *   key              KCR_SHARD_KEY_NAMESPACE (the default: see below) or
 *                    KCR_SHARD_KEY_UID, for workloads in one or few
 *                    namespaces: a key is hashed on the uid of its object in
 *                    the controller's For informer (a key whose object that
 *                    informer does not hold, because it is another replica's
 *                    or gone, is reconciled by no replica: clean up with a
 *                    finalizer or owner references). Informers are then
 *                    sharded by kind: a kind the controllers take only as
 *                    For lists and watches by uid on the server; a kind they
 *                    only own is listed and watched whole and kept by its
 *                    controller owner's uid (KCR_SHARD_KEY_OWNER_UID), so
 *                    children stay with their owner, at the cost of every
 *                    child crossing the network to every replica and one
 *                    parse each; any other kind (mapped by a function, or
 *                    only read) is cached whole. The ring is a virtual one of
 *                    256 points per member; hash_ring and namespace_selector
 *                    do not apply (KCR_EINVAL with a selector). Kinds whose
 *                    informer exists before the controllers' watches are set
 *                    are cached whole. docs/sharding.md measures it.
 *   expected_members 0: take a part as soon as the ring is seen; N: the
 *                    replicas expected: the first part is taken once N are in
 *                    the ring or a lease duration after the start
 *                    (kcr_shard_member_options.expected_members).
 * The member's metrics (kcr_shard_members, kcr_shard_owned_share,
 * kcr_shard_handovers_total, kcr_shard_handover_duration_seconds) go to the
 * manager's registry. Sharded, the manager joins the ring before its caches sync and waits until
 * it owns a part of the hash space; every informer of its cache lists and
 * watches only the namespaces whose FNV-1a falls in the replica's effective
 * set (kcr_informer_set_shard follows each handover), and every key is
 * checked against that set right before its reconcile (a key of another
 * replica is dropped). A handover drains the reconciles in flight of keys
 * that move before the replica releases them; kcr_manager_run's graceful
 * stop hands everything over and deletes the Lease, so the others take over
 * at once. Keys are hashed on their namespace (KCR_SHARD_KEY_NAMESPACE): an
 * owner and its children in one namespace stay on one replica, and every
 * cluster-scoped object goes to the replica that owns the hash of "".
 * Usually with leader election off: every replica runs its controllers.
 */
typedef struct kcr_manager_sharding {
  const char *ring;
  const char *lease_namespace;
  const char *identity;
  int64_t lease_duration_ns;
  int64_t renew_deadline_ns;
  int64_t retry_period_ns;
  size_t expected_members;
  bool hash_ring;
  kcr_shard_key key;
  const char *namespace_selector;
} kcr_manager_sharding;

typedef struct kcr_manager_options {
  kcr_rest_config_t *config;
  const char *default_namespace;
  int64_t graceful_shutdown_timeout_ns;
  int64_t cache_sync_timeout_ns;
  int64_t ryow_timeout_ns;
  bool no_signal_handlers;
  double qps;
  int burst;
  const char *user_agent;
  const kcr_gvk *disable_cache_for;
  size_t disable_cache_for_len;
  bool reader_fail_on_missing_informer;
  int64_t sync_period_ns;
  const char *const *default_namespaces;
  size_t default_namespaces_len;
  bool enable_warmup;
  bool disable_priority_queue;
  kcr_manager_sharding sharding;
} kcr_manager_options;

/* kcr_manager_shard_member: the manager's shard member (borrowed, lives as
 * long as m), NULL when not sharded: its identity, effective set and Lease. */
KCR_EXTERN kcr_shard_member_t *kcr_manager_shard_member(kcr_manager_t *m);

/*
 * kcr_manager_create makes a manager with its client and mapper (nothing is
 * started or fetched yet). *out: new, NULL on failure. Errors: KCR_EINVAL (no
 * config), KCR_ENOMEM, KCR_ESYS, client errors.
 */
KCR_EXTERN int kcr_manager_create(const kcr_manager_options *o, kcr_manager_t **out,
                                  kcr_error_t *err);

/*
 * kcr_manager_destroy stops what still runs (waiting for ever), destroys the
 * controllers, the event recorders (kcr_manager_event_recorder), the informers,
 * the mapper and the client. NULL is ignored. Not while kcr_manager_run runs.
 */
KCR_EXTERN void kcr_manager_destroy(kcr_manager_t *m);

/* kcr_manager_rest_client returns the REST client (borrowed, lives as long as m). */
KCR_EXTERN kcr_client_t *kcr_manager_rest_client(kcr_manager_t *m);

/* kcr_manager_mapper returns the REST mapper (borrowed, lives as long as m). */
KCR_EXTERN kcr_rest_mapper_t *kcr_manager_mapper(kcr_manager_t *m);

/*
 * kcr_manager_cache returns the manager's cache (borrowed, lives as long as m):
 * the informers its controllers share. Set by-object options and indexes on it
 * before run.
 */
KCR_EXTERN kcr_cache_t *kcr_manager_cache(kcr_manager_t *m);

/*
 * kcr_manager_client returns the manager's object client (borrowed, lives as long
 * as m; no cancellation token): get and list read the manager's informers (one per
 * kind, made on first use, waited for until synced), objects the caller owns,
 * with apiVersion and kind set; create, update, patch and delete go to the API
 * server, and each successful write is noted so that a later read through this
 * client never returns an older version of what was written (read-your-own-
 * writes). A miss is KCR_EAPI with NotFound (kcr_error_is_not_found). Reconcilers
 * get the same client with their cancellation token from kcr_reconcile_client.
 * Kinds of disable_cache_for are read from the API server; so are subresource
 * gets and metadata-only reads (kcr/objclient.h). Every write option of
 * kcr/objclient.h is honoured (KCR_OBJCLIENT_WRITE_OPTIONS); a dry run is not
 * waited for by later reads.
 */
KCR_EXTERN const kcr_objclient *kcr_manager_client(kcr_manager_t *m);

/*
 * kcr_manager_unfenced_client is kcr_manager_client without the leader
 * fence (borrowed, lives as long as m): the same cache reads and
 * read-your-own-writes, but create/update/patch/delete go out whether or not
 * this process leads. It is what controllers with need_leader_election false
 * get from kcr_reconcile_client; use it from KCR_RUNNABLE_BACKGROUND
 * runnables, which run on every replica, for writes every replica may make
 * (its own status, per-Pod objects). Any thread.
 */
KCR_EXTERN const kcr_objclient *kcr_manager_unfenced_client(kcr_manager_t *m);

/*
 * kcr_manager_api_reader returns the manager's API reader (mgr.GetAPIReader();
 * borrowed, lives as long as m; no cancellation token: copy it and set .cancel
 * for one; a reconciler gets it with its token from kcr_reconcile_api_reader):
 * get and list (and the metadata reads) go straight to the API
 * server, never to an informer, and make none. A read sees the server's latest
 * state (not what the cache has caught up to); items of a list get apiVersion
 * and kind. It is a reader only, as controller-runtime's client.Reader: every
 * write through it is KCR_ENOTSUP ("the manager's API reader only reads").
 * Use it for a read that must not start a cluster-wide informer or must not
 * be stale (an object read once at start-up, a check before a delete). Any
 * thread, before, during or after run; its reads block (not on the client's
 * loop thread).
 */
KCR_EXTERN const kcr_objclient *kcr_manager_api_reader(kcr_manager_t *m);

/*
 * kcr_manager_get_informer returns the manager's shared informer for gvk
 * (borrowed, lives as long as m), making and starting it on first use. Not on the
 * client's loop thread (discovery may block).
 */
KCR_EXTERN int kcr_manager_get_informer(kcr_manager_t *m, const kcr_gvk *gvk, kcr_informer_t **out,
                                        kcr_error_t *err);

/*
 * kcr_manager_add_controller makes a controller the manager owns, starts and
 * stops (builder.ControllerManagedBy): o->source and o->client are filled in by
 * the manager (what the caller put there is ignored), and o->metrics, when NULL,
 * by the manager's registry (kcr_manager_metrics). *out (borrowed, lives as
 * long as m) is ready for kcr_controller_for / owns / watches. Errors: KCR_EEXIST
 * when a controller of that name exists, KCR_EINVAL after run started, and
 * kcr_controller_create's errors (o->rate_limiter is stolen on every path).
 *
 * Leader election: a controller runs only while this process leads, unless
 * o->need_leader_election points at false (controller-runtime's
 * NeedLeaderElection). Such a controller starts on every replica with the
 * background runnables, once the caches have synced and before the elector
 * campaigns, and stops with the other controllers. It is not fenced (the
 * choice kcr makes where controller-runtime has no fence at all): its workers
 * reconcile whether or not this process leads, and its reconcile client is
 * kcr_manager_unfenced_client, whose writes never wait for or ask the Lease.
 * The fence exists so that a deposed leader cannot write what the new leader
 * owns; a controller that runs on every replica at once owns nothing
 * exclusively, so its reconciler must be safe to run concurrently on all of
 * them (optimistic concurrency on resourceVersion, per-replica objects, or
 * writes that converge). The event recorders (kcr_manager_event_recorder)
 * stay fenced: events it records on a standby are counted as fenced, not
 * sent.
 */
KCR_EXTERN int kcr_manager_add_controller(kcr_manager_t *m, const kcr_controller_options *o,
                                          kcr_controller_t **out, kcr_error_t *err);

/*
 * kcr_manager_event_recorder returns the manager's event recorder for component
 * (mgr.GetEventRecorderFor): borrowed, owned by m. The first call for a
 * component name makes it (kcr_event_recorder_create with the manager's REST
 * client, reporting_controller component, the default reporting_instance
 * "<component>-<hostname>", and the manager's write fence,
 * kcr_manager_fence_remaining); later calls with the same name return the same
 * recorder. A graceful stop of kcr_manager_run flushes every recorder after the
 * controllers and leader runnables have stopped and before the leader elector
 * releases the Lease (bounded by the graceful shutdown timeout); a lost lease
 * flushes nothing. The pointer is valid until kcr_manager_destroy(m) is called,
 * which destroys the recorders (flushing what is left, up to 5 s each) after
 * the controllers and before the elector, the cache and the client: record
 * from reconcilers, runnables or the caller's threads, never from a thread that
 * outlives m. component: required, copied. Returns NULL (logged) when the
 * recorder cannot be made (out of memory, no thread). Any thread, before,
 * during or after run; thread-safe.
 */
KCR_EXTERN kcr_event_recorder_t *kcr_manager_event_recorder(kcr_manager_t *m,
                                                            const char *component);

/* kcr_manager_controller_count / _at enumerate the controllers. */
KCR_EXTERN size_t kcr_manager_controller_count(kcr_manager_t *m);
KCR_EXTERN kcr_controller_t *kcr_manager_controller_at(kcr_manager_t *m, size_t i);

/*
 * kcr_runnable_group: when a runnable starts (and, in reverse, stops).
 * controller-runtime's LeaderElectionRunnable: NeedLeaderElection() true (or
 * a runnable without the method) is KCR_RUNNABLE_LEADER; false is
 * KCR_RUNNABLE_BACKGROUND, which starts on every replica after the caches
 * sync, before the elector campaigns, as controller-runtime's "Others" group.
 * The fence is the manager's client's: a background runnable that writes on
 * a standby uses kcr_manager_unfenced_client.
 */
typedef enum kcr_runnable_group {
  KCR_RUNNABLE_LEADER = 0,     /* with the controllers: only while leading (default) */
  KCR_RUNNABLE_BACKGROUND = 1, /* after the informers sync; no leader election needed */
  KCR_RUNNABLE_SERVER = 2      /* first of all (metrics, probes); stopped last */
} kcr_runnable_group;

/*
 * kcr_runnable: a user component. Strings and the struct are copied.
 *   start   begin (return promptly; run on threads of your own). A failure
 *           aborts kcr_manager_run, which stops what had started and returns it.
 *   stop    end and wait for your threads (may be NULL). Runs on the thread of
 *           kcr_manager_run, only if start succeeded.
 */
typedef struct kcr_runnable {
  const char *name;
  int (*start)(void *data, kcr_error_t *err);
  void (*stop)(void *data);
  void *data;
  kcr_runnable_group group;
} kcr_runnable;

/* kcr_manager_add_runnable registers r. Before run. Returns 0, KCR_EINVAL or KCR_ENOMEM. */
KCR_EXTERN int kcr_manager_add_runnable(kcr_manager_t *m, const kcr_runnable *r, kcr_error_t *err);

/*
 * kcr_leader_elector: the seam for leader election (a Lease elector plugs in
 * here). Without one, this process always leads. The struct is copied.
 *   start  begin campaigning; return promptly. Call kcr_manager_leader_elected(m)
 *          on becoming leader, kcr_manager_leader_lost(m) on losing the lease.
 *   stop   stop campaigning and release the lease; called during the graceful
 *          stop after the leader group has stopped.
 *   fence  NULL: writes are never fenced. Else how long, in ns, this process
 *          may still write as the leader (<= 0: not now; the Lease elector's is
 *          kcr_leader_election_fence_remaining). While it is <= 0 the manager's
 *          object client fails create/update/patch/delete at once with
 *          KCR_ECANCELED ("not the leader..."), and controller workers start no
 *          reconcile (a key taken meanwhile waits 1 s in the queue); otherwise a
 *          write's timeout is cut to it. Called on worker threads before every
 *          write and reconcile: quick and thread-safe. Reads are not fenced, nor
 *          is the direct client (kcr_manager_rest_client): its writers ask
 *          kcr_manager_fence_remaining.
 */
typedef struct kcr_leader_elector {
  int (*start)(void *data, kcr_manager_t *m, kcr_error_t *err);
  void (*stop)(void *data);
  void *data;
  int64_t (*fence)(void *data);
} kcr_leader_elector;

/*
 * kcr_manager_fence_remaining returns how long, in ns, this process may still
 * write as the leader: the installed elector's fence, INT64_MAX when there is
 * no elector or it has no fence, <= 0 when writes are refused. It is what the
 * manager's object client checks before every write; writers that bypass that
 * client (kcr_manager_rest_client, an event recorder: its options' fence) check
 * it themselves. Any thread, once the elector is installed (before run); quick.
 */
KCR_EXTERN int64_t kcr_manager_fence_remaining(kcr_manager_t *m);

/* kcr_manager_set_leader_elector installs le (copied). Before run. */
KCR_EXTERN void kcr_manager_set_leader_elector(kcr_manager_t *m, const kcr_leader_elector *le);

/*
 * kcr_manager_leader_elected tells the manager this process leads: controllers
 * and leader runnables start. Any thread; idempotent.
 */
KCR_EXTERN void kcr_manager_leader_elected(kcr_manager_t *m);

/*
 * kcr_manager_leader_lost tells the manager the lease is lost: kcr_manager_run
 * stops at once without a graceful shutdown (controllers' tokens fire, nothing is
 * waited for) and returns KCR_ECANCELED ("leader election lost"); the program
 * should exit non-zero. Any thread.
 */
KCR_EXTERN void kcr_manager_leader_lost(kcr_manager_t *m);

/*
 * kcr_manager_run starts everything (order above), then blocks until a signal,
 * kcr_manager_request_stop or a lost lease, and stops gracefully. Returns 0 after
 * a graceful stop; KCR_ETIMEDOUT when something did not stop within the graceful
 * shutdown timeout; KCR_ECANCELED when leadership was lost; or the error of a
 * start (a controller whose informers did not sync names the kind). Once only.
 */
KCR_EXTERN int kcr_manager_run(kcr_manager_t *m, kcr_error_t *err);

/*
 * kcr_manager_request_stop asks kcr_manager_run to stop gracefully (the first
 * signal does the same). Any thread, before or during run.
 */
KCR_EXTERN void kcr_manager_request_stop(kcr_manager_t *m);

/* kcr_manager_started tells whether run has started the leader group: the
 * controllers that need leader election and the leader runnables (so, with an
 * elector, whether this process has led). Any thread. */
KCR_EXTERN bool kcr_manager_started(kcr_manager_t *m);

/*
 * kcr_manager_metrics returns the manager's metrics registry (borrowed; lives as
 * long as m). The manager hands it down: its client registers rest_client_*,
 * each controller controller_runtime_* and its queue workqueue_*, the elector
 * of kcr_manager_serve leader_election_master_status; the process_* collector
 * is on it too. Register your own metrics in it as well.
 */
KCR_EXTERN kcr_metrics_registry_t *kcr_manager_metrics(kcr_manager_t *m);

/*
 * kcr_manager_serving_options: what kubebuilder's main wires from its flags;
 * zero-initialise.
 *   metrics_bind_address       /metrics ("host:port", ":port"; port 0 lets the
 *                              kernel pick); NULL, "" or "0": off (kubebuilder's
 *                              default).
 *   health_probe_bind_address  /healthz and /readyz; NULL, "" or "0": off.
 *   leader_elect               campaign for a Lease; controllers and leader
 *                              runnables run only while leading.
 *   leader_election_id         the Lease's name (required with leader_elect).
 *   leader_election_namespace  NULL: the service-account namespace (in a Pod);
 *                              required out of cluster.
 *   leader_election_release_on_cancel  release the Lease on a graceful stop.
 *   lease_duration_ns, renew_deadline_ns, retry_period_ns  0: 15 s, 10 s, 2 s.
 *   metrics_secure             serve /metrics over HTTPS (TLS 1.2/1.3) and let
 *                              only requests whose bearer token a TokenReview
 *                              authenticates and a SubjectAccessReview allows
 *                              ("get" on the nonResourceURL /metrics) through:
 *                              401 otherwise, 403 when not allowed. The reviews
 *                              go through the manager's REST client (its
 *                              identity needs "create" on tokenreviews and
 *                              subjectaccessreviews) and are cached (kcr/auth.h).
 *                              This is kubebuilder's --metrics-secure with
 *                              filters.WithAuthenticationAndAuthorization.
 *   metrics_cert_dir           with metrics_secure: the certificate directory,
 *                              watched and reloaded (kubebuilder's
 *                              --metrics-cert-path); NULL or "": a self-signed
 *                              certificate made in memory.
 *   metrics_cert_name, metrics_cert_key  file names in it; NULL: "tls.crt",
 *                              "tls.key".
 *   webhook_bind_address       the admission webhook server (HTTPS; kcr/webhook.h),
 *                              e.g. ":9443" (controller-runtime's port); NULL, ""
 *                              or "0": none. Register handlers on
 *                              kcr_manager_webhook_server before kcr_manager_run.
 *   webhook_cert_dir, webhook_cert_name, webhook_cert_key  as for metrics
 *                              (kubebuilder's --webhook-cert-path/-name/-key);
 *                              NULL dir: a self-signed certificate.
 *   debug_endpoints            the probes server also answers GET
 *                              /debug/informers (kcr_cache_diagnostics: every
 *                              informer's counters, JSON) and /debug/heap
 *                              (glibc's malloc_info XML). Off by default: they
 *                              are not behind authentication.
 */
typedef struct kcr_manager_serving_options {
  const char *metrics_bind_address;
  const char *health_probe_bind_address;
  bool leader_elect;
  const char *leader_election_id;
  const char *leader_election_namespace;
  bool leader_election_release_on_cancel;
  int64_t lease_duration_ns;
  int64_t renew_deadline_ns;
  int64_t retry_period_ns;
  bool metrics_secure;
  const char *metrics_cert_dir;
  const char *metrics_cert_name;
  const char *metrics_cert_key;
  const char *webhook_bind_address;
  const char *webhook_cert_dir;
  const char *webhook_cert_name;
  const char *webhook_cert_key;
  bool debug_endpoints;
} kcr_manager_serving_options;

/*
 * kcr_manager_serve wires the pieces a production manager runs besides its
 * controllers, as controller-runtime's manager does: the metrics server (the
 * manager's registry plus controller_runtime_* and workqueue_* for every
 * controller), the probes server (/healthz: ping and, with leader election, the
 * elector's health; /readyz: ping and "informer-sync", healthy once the caches
 * have synced), and a Lease leader elector. Losing the lease makes
 * kcr_manager_run return KCR_ECANCELED at once (the program must exit non-zero).
 * Before kcr_manager_run; once. Errors: KCR_EINVAL (bad options), KCR_ECONFIG (no
 * lease namespace out of cluster), KCR_ENOMEM. Servers bind when the manager
 * starts; a bind failure makes kcr_manager_run fail.
 */
KCR_EXTERN int kcr_manager_serve(kcr_manager_t *m, const kcr_manager_serving_options *o,
                                 kcr_error_t *err);

/*
 * kcr_manager_add_healthz_check / kcr_manager_add_readyz_check add a check to
 * the probes server (mgr.AddHealthzCheck / mgr.AddReadyzCheck; check is a
 * healthz.Checker): check(data, err) returns 0 when healthy, else a negative
 * kcr_err with the reason in *err. /healthz (/readyz) answers 200 "ok" when
 * every check of its kind passes, else 500 listing each as "[+]name ok" or
 * "[-]name failed: reason withheld" (controller-runtime withholds the reason
 * there: the endpoint is public); ?verbose lists them on success too, and
 * ?exclude=name skips one. /healthz/<name> (/readyz/<name>) runs that check
 * alone: 200 "ok", or 500 "internal server error: <reason>". The built-in
 * checks stay: "ping" on both, "informer-sync" on /readyz, "leaderElection" on
 * /healthz with leader election. Served only when kcr_manager_serve is given
 * a health_probe_bind_address; registered on the probes server when it starts.
 *
 * Threads: a check runs on the probes server's worker thread (never the I/O
 * loop's, never a controller's), one check at a time, while a probe is being
 * answered: it must be quick (a kubelet gives up after its timeoutSeconds,
 * 1 s by default, and every probe queues behind a slow check), must not block
 * on the API server, and must be thread-safe with respect to what it reads.
 * It must not call kcr_server_* or kcr_manager_* set-up functions. data is
 * borrowed and must outlive m.
 *
 * name: copied; [a-zA-Z0-9_.-], 1..128 characters. Errors: KCR_EINVAL (bad
 * name, NULL check, after kcr_manager_run started: "unable to add new checker
 * because healthz endpoint has already been created"), KCR_EEXIST (a check of
 * that name exists for that endpoint, built-in ones included: "healthz
 * checker "x" already exists"), KCR_ENOMEM. Set-up thread, before run.
 */
KCR_EXTERN int kcr_manager_add_healthz_check(kcr_manager_t *m, const char *name,
                                             kcr_check_err_cb check, void *data, kcr_error_t *err);
KCR_EXTERN int kcr_manager_add_readyz_check(kcr_manager_t *m, const char *name,
                                            kcr_check_err_cb check, void *data, kcr_error_t *err);

/*
 * kcr_manager_add_metrics_extra_handler serves handler on the metrics server
 * at path (controller-runtime's metricsserver.Options.ExtraHandlers and
 * mgr.AddMetricsServerExtraHandler), e.g. a /debug/pprof-like page next to
 * /metrics. path: copied; starts with '/'; matched exactly, except that a path
 * ending in '/' also takes every path below it (as Go's ServeMux). With
 * metrics_secure the request passes the same authentication and authorization
 * as /metrics first (a TokenReview of its bearer token, a SubjectAccessReview
 * of the nonResourceURL path with verb "get" for GET/HEAD, else the method in
 * lower case): 401 without a valid token, 403 when not allowed, and handler
 * never sees it. Other paths of the metrics server answer 404.
 *
 * handler runs on the metrics server's worker thread, one request at a time
 * (kcr_server_handler_cb: append the body to resp->body, set status and a
 * static content_type); scrapes of /metrics wait behind it, so keep it quick.
 * data is borrowed and must outlive m. Served only when kcr_manager_serve is
 * given a metrics_bind_address.
 *
 * Errors: KCR_EINVAL (NULL handler, a path not starting with '/', after run
 * started), KCR_EEXIST ("/metrics": "overriding builtin /metrics endpoint is
 * not allowed"; a path added before: "can't register extra handler by
 * duplicate path ... on metrics http server"), KCR_ENOMEM. Set-up thread,
 * before run.
 */
KCR_EXTERN int kcr_manager_add_metrics_extra_handler(kcr_manager_t *m, const char *path,
                                                     kcr_server_handler_cb handler, void *data,
                                                     kcr_error_t *err);

/*
 * kcr_manager_metrics_port / kcr_manager_probe_port return the bound port of each
 * server once the manager has started it, else 0. Any thread.
 */
KCR_EXTERN int kcr_manager_metrics_port(kcr_manager_t *m);
KCR_EXTERN int kcr_manager_probe_port(kcr_manager_t *m);

/*
 * kcr_manager_webhook_server returns the manager's webhook server (borrowed,
 * lives as long as m), as mgr.GetWebhookServer(): register handlers on it
 * before kcr_manager_run; it serves with the metrics and probes servers, its
 * series on the manager's registry. NULL unless kcr_manager_serve was given a
 * webhook_bind_address. kcr_manager_webhook_port: its bound port once serving,
 * else 0. Any thread.
 */
KCR_EXTERN kcr_webhook_server_t *kcr_manager_webhook_server(kcr_manager_t *m);
KCR_EXTERN int kcr_manager_webhook_port(kcr_manager_t *m);

/*
 * kcr_webhook_for registers typed webhooks for the kind gvk on the manager's
 * webhook server, as ctrl.NewWebhookManagedBy(mgr).For(&T{}).WithDefaulter(d)
 * .WithValidator(v).Complete(): a defaulter (d, may be NULL) at
 * "/mutate-<group>-<version>-<kind>", a validator (v, may be NULL) at
 * "/validate-...", kubebuilder's paths (kcr_webhook_mutate_path), each review
 * decoded with gvk's codec in s (borrowed; outlives m). Semantics, threads and
 * errors as kcr_webhook_server_register_typed (kcr/webhook.h), plus KCR_EINVAL
 * when m serves no webhooks (kcr_manager_serve without webhook_bind_address).
 * Before kcr_manager_run, from the thread that sets the manager up.
 */
KCR_EXTERN int kcr_webhook_for(kcr_manager_t *m, const kcr_scheme_t *s, const kcr_gvk *gvk,
                               const kcr_custom_defaulter *d, const kcr_custom_validator *v,
                               kcr_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* KCR_MANAGER_H */
