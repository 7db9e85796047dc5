/* SPDX-License-Identifier: MIT */
/*
 * kcr/informer.h: a shared informer — client-go's SharedIndexInformer: a
 * reflector lists and watches one resource into a DeltaFIFO, a processing thread
 * pops it into an indexed store (kcr/store.h, compact) and tells the registered
 * handlers what changed.
 *
 * Threads: the reflector has a thread of its own: it lists, and it decodes a
 * watch's bytes (the client's loop thread only receives them), runs the
 * transform and queues each event into the DeltaFIFO. The processing thread
 * pops the FIFO, updates the store and appends one notification per handler,
 * under the FIFO's and the handler list's locks. The store's index functions
 * (kcr_store_add_indexer on kcr_informer_store, kcr_cache_add_index) run there,
 * under those locks and the store's write lock: they must be quick and must not
 * call into the informer. Each handler runs on a listener thread of its own,
 * holding no informer lock (see kcr_event_handler).
 */
#ifndef KCR_INFORMER_H
#define KCR_INFORMER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "kcr/client.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/delta_fifo.h"
#include "kcr/discovery.h"
#include "kcr/error.h"
#include "kcr/metrics.h"
#include "kcr/sharding.h"
#include "kcr/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_informer_t: opaque, thread-safe. */
typedef struct kcr_informer kcr_informer_t;

/*
 * kcr_informer_options: zero-initialise and set what you need. Strings are copied.
 *   client          required; borrowed, must outlive the informer.
 *   gvk             the kind to watch: kcr_informer_create resolves it to its
 *                   resource through mapper (and refuses ns for a cluster-scoped
 *                   kind) unless resource.resource is set.
 *   mapper          borrowed, used by kcr_informer_create only; NULL: a mapper of
 *                   its own on client for that one lookup (a discovery round).
 *   resource, kind  the REST-level form, instead of gvk: group, version, resource
 *                   (plural), used as given; kind names it in messages (NULL:
 *                   gvk.kind, else the resource).
 *   ns              watch one namespace; NULL or "": all.
 *   label_selector, field_selector  restrict what is cached.
 *   resync_period_ns  0: no periodic resync.
 *   transform       changes each object before it is stored; NULL: drop
 *                   metadata.managedFields (controller-runtime's default
 *                   transform), the largest part of most objects that no
 *                   controller reads. Runs on the informer's reflector thread,
 *                   before the DeltaFIFO sees the object and under no lock.
 *   page_size       list page size; 0: 500.
 *   clock           for backoff; NULL: the system clock.
 *   min_watch_timeout_s / max_watch_timeout_s  each watch asks the server to end
 *                   it after a random time in this range; 0: 300 and 600.
 *   streaming_list  fill the cache with a streaming list (a watch with
 *                   sendInitialEvents, until the bookmark annotated
 *                   k8s.io/initial-events-end) instead of paged lists, falling back
 *                   to paged lists when the server refuses it (client-go's
 *                   WatchListClient).
 *   watch_idle_timeout_ns  a watch that receives no byte for this long is dead
 *                   (half-open connection) and is re-established; 0: the watch's
 *                   timeout + 30 s (kcr_watch_options.idle_timeout_ns).
 *   metrics         registry for the informer's kcr_informer_* series (borrowed,
 *                   must outlive the informer); NULL: none. See kcr_informer_stats
 *                   and docs/observability.md for what each one means.
 *   namespaces, namespaces_len  watch this set of namespaces instead of ns
 *                   (controller-runtime's multiNamespaceCache): one list-watch
 *                   per namespace, each with its own store, behind this one
 *                   informer. Handlers see the events of all of them (one call
 *                   at a time, in order within a namespace), has_synced is true
 *                   once every namespace has synced. The array and its strings
 *                   are copied. One namespace is the same as ns; more than one
 *                   makes kcr_informer_store return NULL (read through
 *                   kcr_cache_get / kcr_cache_list). Errors (KCR_EINVAL): both
 *                   ns and namespaces, an empty or a repeated name, a
 *                   cluster-scoped kind.
 *   metadata_only   list and watch as PartialObjectMetadata (client-go's
 *                   metadata informer): the Accept header asks the server for
 *                   each object's metadata only, so neither spec, data nor
 *                   status crosses the network. Stored objects are {"apiVersion",
 *                   "kind", "metadata"} with the watched kind's apiVersion and
 *                   kind (as controller-runtime restores them; the server sends
 *                   meta.k8s.io/v1 PartialObjectMetadata; an informer given a
 *                   resource without a kind keeps those) and no managedFields.
 *                   The transform (NULL: none beyond that reduction) sees them
 *                   in that form. A server that answers with whole objects has
 *                   them reduced on arrival; one that refuses the header (406)
 *                   is listed and watched for whole objects from then on,
 *                   reduced on arrival, with one log line saying so.
 *   shard, shard_key  list and watch only the objects whose shard_key hashes
 *                   into shard (borrowed, copied; NULL: all; kcr/sharding.h):
 *                   the API server's shardSelector for the namespace and uid
 *                   keys (a server that ignores it is filtered here, logged
 *                   once); KCR_SHARD_KEY_OWNER_UID is filtered here only:
 *                   every object crosses the network and is parsed once, and
 *                   the store keeps those whose controller owner (else the
 *                   object itself) has its uid in shard.
 *   json_wire       watch (and stream the list) in JSON even for a built-in
 *                   kind. By default a kind of Kubernetes' own API (one kcr has
 *                   the protobuf schema of: ConfigMaps, Pods, Deployments...;
 *                   not custom resources) is asked for in protobuf, as
 *                   client-go's clientset and controller-runtime's cache do,
 *                   and turned into the same compact JSON on arrival: the API
 *                   server spends less than half the CPU on it and sends it
 *                   sooner (docs/benchmarks.md). Paged lists stay JSON.
 */
typedef struct kcr_informer_options {
  kcr_client_t *client;
  kcr_gvk gvk;
  kcr_rest_mapper_t *mapper;
  kcr_gvr resource;
  const char *kind;
  const char *ns;
  const char *label_selector;
  const char *field_selector;
  int64_t resync_period_ns;
  kcr_transform_fn transform;
  void *transform_data;
  long page_size;
  kcr_clock_t *clock;
  long min_watch_timeout_s;
  long max_watch_timeout_s;
  int64_t watch_idle_timeout_ns;
  bool streaming_list;
  kcr_metrics_registry_t *metrics;
  const char *const *namespaces;
  size_t namespaces_len;
  const kcr_shard_set_t *shard;
  kcr_shard_key shard_key;
  bool metadata_only;
  bool json_wire;
} kcr_informer_options;

/*
 * kcr_event_handler: what an informer calls; any pointer may be NULL. Each
 * registered handler has a thread of its own (client-go's processorListener) fed
 * by an unbounded buffer: its calls come in event order, one at a time, and may
 * block, which delays that handler's later notifications and nothing else (not
 * the informer, not other handlers, not the I/O loop). Objects are borrowed for
 * the call and shared with the other handlers: take a reference to keep one,
 * never modify one (copy it first).
 *   on_add     a new object; is_initial_list is true while the informer delivers
 *              its first list (and for the existing objects a late handler gets).
 *   on_update  an object changed (or was relisted or resynced: old and new may be
 *              equal).
 *   on_delete  an object went away; tombstone_key is non-NULL when the deletion
 *              was inferred by a relist (client-go's DeletedFinalStateUnknown):
 *              obj is then the last state known, possibly NULL.
 */
typedef struct kcr_event_handler {
  void (*on_add)(json_t *obj, bool is_initial_list, void *data);
  void (*on_update)(json_t *old_obj, json_t *new_obj, void *data);
  void (*on_delete)(json_t *obj, const char *tombstone_key, void *data);
  void *data;
} kcr_event_handler;

/*
 * kcr_informer_create makes a stopped informer. *out: new informer. Errors:
 * KCR_EINVAL (no client, neither a resource nor gvk with a kind, or ns for a
 * cluster-scoped gvk), the mapper's (KCR_ENOENT: the server does not serve
 * gvk), KCR_ENOMEM. Resolving gvk may block on discovery: any thread but a
 * client's loop thread.
 */
KCR_EXTERN int kcr_informer_create(const kcr_informer_options *o, kcr_informer_t **out,
                                   kcr_error_t *err);

/*
 * kcr_informer_add_handler registers h (copied). A handler added after objects
 * are cached first receives each of them as an add with is_initial_list true,
 * before any later event. *id (may be NULL) receives a handle for
 * kcr_informer_remove_handler. Starts the handler's thread. Errors: KCR_ENOMEM,
 * KCR_ESYS (no thread). Any thread, handlers included.
 */
KCR_EXTERN int kcr_informer_add_handler(kcr_informer_t *inf, const kcr_event_handler *h,
                                        uint64_t *id, kcr_error_t *err);

/*
 * kcr_informer_remove_handler unregisters a handler and drops its pending
 * notifications; once it returns the handler is not called any more (a call in
 * progress is waited for). From inside that handler itself it returns at once and
 * the handler is not called again after the current call.
 */
KCR_EXTERN void kcr_informer_remove_handler(kcr_informer_t *inf, uint64_t id);

/*
 * kcr_informer_set_shard moves a sharded informer (made with
 * kcr_informer_options.shard) to set (borrowed, copied), as a shard member's
 * effective set changes (kcr/shard_member.h): the running watch stops and the
 * informer lists again with the new shardSelector, so its store drops what
 * left the shard (handlers see deletes) and gains what came in (adds); the
 * relist counts under reason KCR_INFORMER_RELIST_SHARD. Before or after start;
 * a later call overrides one not yet taken. Errors: KCR_EINVAL (set NULL, an
 * informer that is not sharded, an empty set: the server reads an empty
 * selector as everything), KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_informer_set_shard(kcr_informer_t *inf, const kcr_shard_set_t *set,
                                      kcr_error_t *err);

/* kcr_informer_start starts the reflector and processing threads. Once only. */
KCR_EXTERN int kcr_informer_start(kcr_informer_t *inf, kcr_error_t *err);

/*
 * kcr_informer_stop stops and joins its threads: the reflector, the processor,
 * then each handler's (which finishes the call it is in and drops the rest of its
 * buffer, so a backlog never delays a stop); handlers are not called after it
 * returns. Idempotent. Not from inside a handler.
 */
KCR_EXTERN void kcr_informer_stop(kcr_informer_t *inf);

/* kcr_informer_destroy stops the informer and frees it. NULL is ignored. */
KCR_EXTERN void kcr_informer_destroy(kcr_informer_t *inf);

/*
 * kcr_informer_has_synced tells whether the first list has been stored and
 * handed to every handler's buffer (as client-go's HasSynced: a slow handler may
 * still be working through it). Any thread.
 */
KCR_EXTERN bool kcr_informer_has_synced(kcr_informer_t *inf);

/*
 * kcr_informer_handler_has_synced tells whether the informer has synced and the
 * handler id has been called for every object of the first list (for a handler
 * added later: every object the cache held then), as client-go's
 * ResourceEventHandlerRegistration.HasSynced. False for an unknown id. Any thread.
 */
KCR_EXTERN bool kcr_informer_handler_has_synced(kcr_informer_t *inf, uint64_t id);

/*
 * kcr_informer_wait_for_sync waits up to timeout_ns for has_synced. Returns 0, or
 * KCR_ETIMEDOUT with a message naming the kind and the last list or watch error
 * (missing RBAC and a CRD that is not installed are the usual causes).
 */
KCR_EXTERN int kcr_informer_wait_for_sync(kcr_informer_t *inf, int64_t timeout_ns,
                                          kcr_error_t *err);

/*
 * kcr_informer_store returns the informer's store (borrowed; lives as long as
 * inf). Read it freely; never write it. Add indexers before kcr_informer_start.
 * NULL for an informer over several namespaces (kcr_informer_options.namespaces):
 * each namespace has a store of its own; the cache reads and merges them.
 */
KCR_EXTERN kcr_store_t *kcr_informer_store(kcr_informer_t *inf);

/*
 * kcr_informer_wait_for_resource_version waits up to timeout_ns until the store
 * reflects every change up to resource version rv (decimal, as etcd writes them):
 * read-your-own-writes after a write that returned rv. Returns 0, KCR_ETIMEDOUT,
 * or KCR_EINVAL when rv is not a number (then nothing can be promised). Over
 * several namespaces: until every namespace's store has (an idle namespace gets
 * there with the watch's next bookmark).
 */
KCR_EXTERN int kcr_informer_wait_for_resource_version(kcr_informer_t *inf, const char *rv,
                                                      int64_t timeout_ns, kcr_error_t *err);

/* kcr_informer_relist_reason: why the reflector listed again (indexes
 * kcr_informer_stats.relists). */
typedef enum kcr_informer_relist_reason {
  KCR_INFORMER_RELIST_GONE = 0,    /* 410: the watch's or the list's version was compacted */
  KCR_INFORMER_RELIST_ERROR = 1,   /* any other failure of a watch or a list */
  KCR_INFORMER_RELIST_TIMEOUT = 2, /* a list that timed out, tried again */
  KCR_INFORMER_RELIST_SHARD = 3,   /* kcr_informer_set_shard moved the shard */
  KCR_INFORMER_RELIST_REASONS = 4
} kcr_informer_relist_reason;

/* kcr_informer_relist_reason_name: "gone", "error", "timeout" or "shard". */
KCR_EXTERN const char *kcr_informer_relist_reason_name(kcr_informer_relist_reason r);

/*
 * kcr_informer_stats: counters for tests, metrics and diagnostics.
 *   lists        complete lists stored (1 after the first sync; more after 410s),
 *                streamed ones included.
 *   streamed_lists  of those, how many came from a streaming list.
 *   relist_reused  objects a list (a relist: the first finds the store empty)
 *                brought at the version the store held: the stored object was
 *                kept and the listed copy freed as it arrived.
 *   scanned      watch events (ADDED, MODIFIED, DELETED; a streaming list's
 *                included) whose object was scanned from its line straight
 *                into the stored form, with no tree: all of them when the
 *                informer has no transform (the default drops managedFields),
 *                none with one.
 *   watches      watches started.
 *   watch_errors watches that ended with an error.
 *   events       watch events queued.
 *   processed_rv the highest resource version the store reflects.
 *   received     watch events received, by type: received[type - 1] for a
 *                kcr_watch_event_type (ADDED, MODIFIED, DELETED, BOOKMARK, and
 *                ERROR), those of a streaming list's initial phase included.
 *   deliveries   handler calls made (each registered handler counts its own).
 *   relists      lists started after the first one, by reason.
 *   last_seen_rv the resource version of the latest event received (0: none, or
 *                not a number).
 *   queue_depth  keys waiting in the DeltaFIFO.
 *   listener_backlog  notifications waiting in the handlers' buffers (all
 *                handlers together).
 *   handlers     handlers registered.
 *   seconds_since_last_event  since the latest watch event (bookmarks count),
 *                or since kcr_informer_start when none came yet; 0 if not started.
 */
typedef struct kcr_informer_stats {
  uint64_t lists;
  uint64_t streamed_lists;
  uint64_t relist_reused;
  uint64_t scanned;
  uint64_t watches;
  uint64_t watch_errors;
  uint64_t events;
  uint64_t processed_rv;
  uint64_t received[5];
  uint64_t deliveries;
  uint64_t relists[KCR_INFORMER_RELIST_REASONS];
  uint64_t last_seen_rv;
  uint64_t queue_depth;
  uint64_t listener_backlog;
  uint64_t handlers;
  double seconds_since_last_event;
  double watch_lag_seconds; /* latest bookmark's arrival -> the store past it; -1: none yet */
  /* sharded informers: objects outside the shard the informer dropped (sent
   * anyway by a server that ignores shardSelector, or, on the owner-uid key,
   * filtered here by design); whether the server was seen to ignore it */
  uint64_t shard_filtered;
  bool shard_ignored;
} kcr_informer_stats;

/* kcr_informer_get_stats copies the counters. Any thread (takes the FIFO's and
 * the handlers' locks, so not from inside a FIFO pop). */
KCR_EXTERN void kcr_informer_get_stats(kcr_informer_t *inf, kcr_informer_stats *out);

/*
 * kcr_informer_diagnostics returns the informer's stats as a JSON object (new
 * reference; NULL without memory), the shape of one entry of /debug/informers:
 *   {"group":"","version":"v1","resource":"configmaps","kind":"ConfigMap",
 *    "namespace":"" ,"synced":true,
 *    "events":{"ADDED":n,"MODIFIED":n,"DELETED":n,"BOOKMARK":n,"ERROR":n},
 *    "deliveries":n,"relists":{"gone":n,"error":n,"timeout":n},
 *    "lists":n,"watches":n,"watchErrors":n,
 *    "lastSeenResourceVersion":"123","lastProcessedResourceVersion":"120",
 *    "queueDepth":n,"listenerBacklog":n,"handlers":n,
 *    "objects":n (what the store holds now),
 *    "secondsSinceLastEvent":1.5,
 *    "watchLagSeconds":0.002 (once a bookmark was measured: from its arrival
 *    until the store held everything the watch sent before it),
 *    "lastError":"..." (only after a failure),
 *    "shardSelector":"shardRange(...)", "shardFiltered":n,
 *    "shardIgnored":false, "shardClientSide":false (only when sharded;
 *    client side: the owner-uid key, whose selector text is never sent)}
 * Resource versions are strings, as the API writes them. Any thread, as
 * kcr_informer_get_stats. Over several namespaces: {"namespaces":[one object
 * of the shape above per namespace], "synced":all of them}. kcr_informer_get_stats
 * then sums the counters; processed_rv is the lowest namespace's, last_seen_rv
 * the highest, seconds_since_last_event the smallest.
 */
KCR_EXTERN json_t *kcr_informer_diagnostics(kcr_informer_t *inf);

#ifdef __cplusplus
}
#endif

#endif /* KCR_INFORMER_H */
