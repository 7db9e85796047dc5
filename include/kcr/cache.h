/* SPDX-License-Identifier: MIT */
/*
 * kcr/cache.h: the informer cache — controller-runtime's cache.Cache: one shared
 * informer per kind, created on first use, and a reader over them (get, list by
 * namespace, label selector and field index) that hands out objects the caller
 * owns. Reads wait for the kind's informer to sync (bounded) and, after a write
 * noted with kcr_cache_note_write, wait until the cache has caught up with it:
 * read-your-own-writes, which controller-runtime lacks (controller-runtime#1464).
 *
 * Kinds are named by group/version/kind and mapped to resources through a lazy
 * REST mapper (kcr/discovery.h), so a CRD installed after start works.
 *
 * Threads: every function may be called from any thread except the client's loop
 * thread (reads may block on discovery or on sync). Not from inside an informer
 * handler either: a read may wait for that very informer.
 *
 * Errors common to the reader: KCR_EINVAL for a kind without version or kind, a
 * namespace given for a cluster-scoped kind, a namespaced get without one, or a
 * namespace the kind's informer does not watch (for a namespace set, worded
 * as controller-runtime: "unable to get: ns/name because of unknown namespace
 * for the cache"); KCR_ENOENT when the server does
 * not serve the kind (the message names it); KCR_ENOTCACHED when the cache
 * was made with reader_fail_on_missing_informer and the kind has no informer
 * yet; discovery's errors; KCR_ETIMEDOUT
 * when the kind's informer did not sync within sync_timeout (the message names
 * the kind and the informer's last list error, e.g. Forbidden) or a noted write
 * was not seen within ryow_timeout.
 */
#ifndef KCR_CACHE_H
#define KCR_CACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "kcr/client.h"
#include "kcr/common.h"
#include "kcr/discovery.h"
#include "kcr/error.h"
#include "kcr/informer.h"
#include "kcr/meta.h"
#include "kcr/objclient.h"
#include "kcr/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kcr_cache_by_object: how one kind is cached (controller-runtime's ByObject);
 * zero-initialise. Strings are copied.
 *   ns              only this namespace ("" or NULL: the cache's default).
 *   label_selector, field_selector  restrict what is cached.
 *   metadata_only   cache PartialObjectMetadata (apiVersion, kind, metadata
 *                   without managedFields) instead of whole objects, for kinds a
 *                   controller only needs to map to owners. The informer lists
 *                   and watches as PartialObjectMetadata
 *                   (kcr_informer_options.metadata_only): only metadata crosses
 *                   the network, and the objects read keep the kind's own
 *                   apiVersion and kind.
 *   transform       runs on each object before it is stored (after the
 *                   metadata-only reduction); NULL: drop managedFields. Called on
 *                   the informer's reflector thread: quick, and no cache calls.
 *   namespaces, namespaces_len  only this set of namespaces (controller-runtime's
 *                   ByObject[obj].Namespaces): one list-watch per namespace
 *                   behind the kind's one informer (see kcr_cache_options'
 *                   default_namespaces for how reads behave). Copied. Not with
 *                   ns; no empty or repeated name (KCR_EINVAL). Ignored for a
 *                   cluster-scoped kind, as the cache's default is.
 */
typedef struct kcr_cache_by_object {
  const char *ns;
  const char *label_selector;
  const char *field_selector;
  bool metadata_only;
  kcr_transform_fn transform;
  void *transform_data;
  const char *const *namespaces;
  size_t namespaces_len;
} kcr_cache_by_object;

/*
 * kcr_cache_options: zero-initialise.
 *   client          required; borrowed.
 *   mapper          borrowed; NULL: the cache makes (and owns) one on client.
 *   default_ns      restrict every kind to one namespace unless its by-object
 *                   options say otherwise (NULL: all namespaces).
 *   resync_period_ns  for every informer; 0: none.
 *   sync_timeout_ns   how long a read waits for a new informer to sync (0: 2 min).
 *   ryow_timeout_ns   how long a read waits to see a noted write (0: 10 s).
 *   metrics         registry for every informer's kcr_informer_* series
 *                   (kcr_informer_options.metrics); borrowed, must outlive the
 *                   cache; NULL: none.
 *   reader_fail_on_missing_informer  a read (kcr_cache_get, kcr_cache_list) of
 *                   a kind whose informer was not made beforehand
 *                   (kcr_cache_get_informer, kcr_cache_add_index, a controller
 *                   watching the kind) fails with KCR_ENOTCACHED ("Secret
 *                   (/v1, Kind=Secret) is not cached") instead of making one
 *                   (controller-runtime's ReaderFailOnMissingInformer and
 *                   ErrResourceNotCached). Nothing is sent to the server.
 *   resync_jitter   each informer's resync period is resync_period_ns times a
 *                   factor drawn uniformly from [0.9, 1.1) when the informer is
 *                   made (controller-runtime's jitter of SyncPeriod), so the
 *                   informers of a process, and the replicas of a Deployment,
 *                   do not all resync at the same moment. false: exactly
 *                   resync_period_ns.
 *   json_wire       every informer watches in JSON, built-in kinds too
 *                   (kcr_informer_options.json_wire); by default a built-in
 *                   kind is streamed in protobuf, as controller-runtime does.
 *   default_namespaces, default_namespaces_len  restrict every namespaced kind
 *                   to this set of namespaces unless its by-object options say
 *                   otherwise (controller-runtime's DefaultNamespaces; its
 *                   multiNamespaceCache). Copied. One name is default_ns; with
 *                   more, each kind's informer is one list-watch per namespace
 *                   (kcr_informer_options.namespaces): a get or a list in a
 *                   namespace outside the set is KCR_EINVAL ("unable to get:
 *                   c/x because of unknown namespace for the cache"), a list
 *                   without a namespace merges every namespace's objects (one
 *                   List, ordered by namespace/name; its resourceVersion is
 *                   the highest namespace's), a list in one namespace reads
 *                   that one. Handlers see the events of every namespace; the
 *                   informer has synced once all have. Cluster-scoped kinds
 *                   keep one cluster-wide watch. Not with default_ns; no
 *                   empty or repeated name (KCR_EINVAL from kcr_cache_create).
 *                   RBAC: list and watch in each namespace (a Role per
 *                   namespace does; docs/cache.md).
 */
typedef struct kcr_cache_options {
  kcr_client_t *client;
  kcr_rest_mapper_t *mapper;
  const char *default_ns;
  int64_t resync_period_ns;
  int64_t sync_timeout_ns;
  int64_t ryow_timeout_ns;
  kcr_metrics_registry_t *metrics;
  bool reader_fail_on_missing_informer;
  bool resync_jitter;
  const char *const *default_namespaces;
  size_t default_namespaces_len;
  bool json_wire;
} kcr_cache_options;

/* kcr_cache_t: opaque, thread-safe. */
typedef struct kcr_cache kcr_cache_t;

/*
 * kcr_cache_create makes an empty, started cache (informers start on first use).
 * *out: a new cache (kcr_cache_destroy), NULL on failure. Errors: KCR_EINVAL (no
 * client), KCR_ENOMEM. Nothing is fetched until the first use of a kind.
 */
KCR_EXTERN int kcr_cache_create(const kcr_cache_options *o, kcr_cache_t **out, kcr_error_t *err);

/*
 * kcr_cache_destroy stops every informer and frees the cache, its informers and,
 * if it made it, its mapper. No other call on c may be running or follow. NULL is
 * ignored.
 */
KCR_EXTERN void kcr_cache_destroy(kcr_cache_t *c);

/*
 * kcr_cache_set_by_object sets how gvk is cached (o and its strings are copied).
 * Only before the kind's informer exists: KCR_EEXIST afterwards. A label selector
 * that does not parse is KCR_EPARSE; ns together with namespaces, or an empty
 * or repeated namespace, KCR_EINVAL.
 */
KCR_EXTERN int kcr_cache_set_by_object(kcr_cache_t *c, const kcr_gvk *gvk,
                                       const kcr_cache_by_object *o, kcr_error_t *err);

/*
 * kcr_cache_get_informer returns the kind's informer (borrowed; lives as long as
 * the cache), creating and starting it on first use; it does not wait for sync.
 * Errors: KCR_ENOENT (the server does not serve the kind), discovery errors.
 */
KCR_EXTERN int kcr_cache_get_informer(kcr_cache_t *c, const kcr_gvk *gvk, kcr_informer_t **out,
                                      kcr_error_t *err);

/*
 * kcr_cache_get_metadata_informer is kcr_cache_get_informer for a kind cached
 * metadata-only (kcr_cache_by_object.metadata_only; controller-runtime's
 * informer of metav1.PartialObjectMetadata): it makes the kind metadata-only
 * first when its informer does not exist yet, keeping its other by-object
 * options. The cache keeps one informer per kind, so every read of the kind
 * then sees metadata only. Errors: KCR_EEXIST when the kind's informer exists
 * already with whole objects (a read or a watch made it first), and
 * kcr_cache_get_informer's.
 */
KCR_EXTERN int kcr_cache_get_metadata_informer(kcr_cache_t *c, const kcr_gvk *gvk,
                                               kcr_informer_t **out, kcr_error_t *err);

/*
 * kcr_cache_add_index registers a field index on the kind's store (controller-
 * runtime's IndexField): fn (called with the store's write lock held, on the
 * informer's thread; data is passed back) adds the values an object is indexed
 * under, and kcr_cache_list finds objects by index = name and index_value (or a
 * field selector term name=value),
 * within one namespace or all. Best before the kind's informer starts: it is
 * created stopped if needed, and the next read or kcr_cache_wait_for_sync starts
 * it; added later, the index is built over what is stored at once. Errors:
 * KCR_EINVAL (no name or fn), KCR_EEXIST (name taken), the lookup's errors.
 */
KCR_EXTERN int kcr_cache_add_index(kcr_cache_t *c, const kcr_gvk *gvk, const char *name,
                                   kcr_index_fn fn, void *data, kcr_error_t *err);

/*
 * kcr_cache_wait_for_sync starts every informer created so far that is not yet
 * running, and waits until all have synced, up to timeout_ns. KCR_ETIMEDOUT
 * names the kinds that did not and the first one's reason.
 */
KCR_EXTERN int kcr_cache_wait_for_sync(kcr_cache_t *c, int64_t timeout_ns, kcr_error_t *err);

/*
 * kcr_cache_get reads one object: *out is a new reference the caller owns (mutate
 * freely), NULL on failure. ns is required for namespaced kinds and must be NULL
 * or "" for cluster-scoped ones. A miss is KCR_EAPI with a NotFound error worded
 * as the API server words it (http_status 404, reason "NotFound", message
 * `configmaps "x" not found`; kcr_error_is_not_found is true). Creates and starts
 * the kind's informer on first use and waits for its sync (up to sync_timeout:
 * KCR_ETIMEDOUT), then for a noted write of this object (up to ryow_timeout:
 * KCR_ETIMEDOUT, after which the write is no longer waited for).
 */
KCR_EXTERN int kcr_cache_get(kcr_cache_t *c, const kcr_gvk *gvk, const char *ns, const char *name,
                             json_t **out, kcr_error_t *err);

/*
 * kcr_cache_list reads the objects of gvk that o selects (NULL: all the kind's
 * informer holds) as a new List object the caller owns (kcr/objclient.h: the API
 * server's shape, items ordered by namespace/name), NULL on failure. Same waiting
 * rules as kcr_cache_get, for every noted write of the kind in the namespace.
 * What o may ask (kcr_list_options): ns; label_selector; field_selector terms on
 * metadata.name, metadata.namespace, or equality on a field with an index of
 * that exact name; index/index_value; limit and continue_token. Errors: a bad
 * selector is KCR_EPARSE; a field selector term on a field without an index, an
 * index never added, index without index_value, or a continue token not made by
 * this cache is KCR_EINVAL, with a message that says which.
 */
KCR_EXTERN int kcr_cache_list(kcr_cache_t *c, const kcr_gvk *gvk, const kcr_list_options *o,
                              json_t **out, kcr_error_t *err);

/*
 * kcr_cache_note_write records that a write returned obj (borrowed; its
 * namespace, name and resourceVersion are read; gvk names its kind): until the
 * cache has seen that version of that object, reads of it wait (up to
 * ryow_timeout). The manager's client calls it after every successful write.
 * Cheap (a hash insert under a mutex), never fails, any thread. Ignored when obj
 * has no name or no decimal resourceVersion (a delete's Status), or when no
 * informer of the kind exists yet (one made later lists after this write). At
 * most 65536 writes are remembered at once; satisfied ones are dropped by the
 * read that sees them, or swept as the map grows.
 */
KCR_EXTERN void kcr_cache_note_write(kcr_cache_t *c, const kcr_gvk *gvk, const json_t *obj);

/*
 * kcr_cache_note_write_rv is kcr_cache_note_write for a write whose answer was
 * not parsed: the object is named by ns (NULL or "" for cluster-scoped kinds)
 * and name, and rv is the resourceVersion the answer carried. Same rules.
 */
KCR_EXTERN void kcr_cache_note_write_rv(kcr_cache_t *c, const kcr_gvk *gvk, const char *ns,
                                        const char *name, const char *rv);

/*
 * kcr_cache_diagnostics returns a JSON array with kcr_informer_diagnostics of
 * every informer the cache has made (new reference; NULL without memory): the
 * body of /debug/informers. Any thread.
 */
KCR_EXTERN json_t *kcr_cache_diagnostics(kcr_cache_t *c);

#ifdef __cplusplus
}
#endif

#endif /* KCR_CACHE_H */
