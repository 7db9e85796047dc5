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
 * thread (reads may block on discovery or on sync).
 *
 * THIS HEADER IS A CONTRACT: implementation in progress (issue 5).
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
#include "kcr/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_gvk: a kind. group "" is the core group. Strings borrowed for each call. */
typedef struct kcr_gvk {
  const char *group;
  const char *version;
  const char *kind;
} kcr_gvk;

/*
 * kcr_cache_by_object: how one kind is cached (controller-runtime's ByObject);
 * zero-initialise. Strings are copied.
 *   ns              only this namespace ("" or NULL: the cache's default).
 *   label_selector, field_selector  restrict what is cached.
 *   metadata_only   cache PartialObjectMetadata (apiVersion, kind, metadata)
 *                   instead of whole objects, for kinds a controller only needs to
 *                   map to owners.
 *   transform       NULL: drop managedFields.
 */
typedef struct kcr_cache_by_object {
  const char *ns;
  const char *label_selector;
  const char *field_selector;
  bool metadata_only;
  kcr_transform_fn transform;
  void *transform_data;
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
 */
typedef struct kcr_cache_options {
  kcr_client_t *client;
  kcr_rest_mapper_t *mapper;
  const char *default_ns;
  int64_t resync_period_ns;
  int64_t sync_timeout_ns;
  int64_t ryow_timeout_ns;
} kcr_cache_options;

/* kcr_cache_t: opaque, thread-safe. */
typedef struct kcr_cache kcr_cache_t;

/* kcr_cache_create makes an empty, started cache (informers start on first use). */
KCR_EXTERN int kcr_cache_create(const kcr_cache_options *o, kcr_cache_t **out, kcr_error_t *err);

/* kcr_cache_destroy stops every informer and frees the cache. NULL is ignored. */
KCR_EXTERN void kcr_cache_destroy(kcr_cache_t *c);

/*
 * kcr_cache_set_by_object sets how gvk is cached. Only before the kind's informer
 * exists: KCR_EEXIST afterwards.
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
 * kcr_cache_add_index registers a field index on the kind's store (controller-
 * runtime's IndexField): fn returns the values an object is indexed under. Before
 * the kind's informer starts (creates it stopped if needed).
 */
KCR_EXTERN int kcr_cache_add_index(kcr_cache_t *c, const kcr_gvk *gvk, const char *name,
                                   kcr_index_fn fn, void *data, kcr_error_t *err);

/*
 * kcr_cache_wait_for_sync waits until every informer created so far has synced,
 * up to timeout_ns. KCR_ETIMEDOUT names the kinds that did not.
 */
KCR_EXTERN int kcr_cache_wait_for_sync(kcr_cache_t *c, int64_t timeout_ns, kcr_error_t *err);

/*
 * kcr_cache_get reads one object: *out is a new reference the caller owns (mutate
 * freely). A miss is KCR_EAPI with a NotFound error (kcr_error_is_not_found), as
 * controller-runtime's reader returns. Waits for the kind's informer to sync (up
 * to sync_timeout: KCR_ETIMEDOUT) and for noted writes of this object.
 */
KCR_EXTERN int kcr_cache_get(kcr_cache_t *c, const kcr_gvk *gvk, const char *ns, const char *name,
                             json_t **out, kcr_error_t *err);

/*
 * kcr_cache_list_options: zero-initialise. ns NULL or "": all namespaces;
 * label_selector in kcr_selector_parse syntax; field_index/field_value: objects
 * whose index field_index holds field_value (from kcr_cache_add_index).
 */
typedef struct kcr_cache_list_options {
  const char *ns;
  const char *label_selector;
  const char *field_index;
  const char *field_value;
} kcr_cache_list_options;

/*
 * kcr_cache_list reads matching objects: *out is a new JSON array the caller owns.
 * Same waiting rules as kcr_cache_get. A bad selector is KCR_EPARSE.
 */
KCR_EXTERN int kcr_cache_list(kcr_cache_t *c, const kcr_gvk *gvk, const kcr_cache_list_options *o,
                              json_t **out, kcr_error_t *err);

/*
 * kcr_cache_note_write records that a write returned obj (borrowed; its kind,
 * namespace, name and resourceVersion are read): until the cache has seen that
 * version of that object, reads of it wait (up to ryow_timeout). The manager's
 * client calls it after every successful write.
 */
KCR_EXTERN void kcr_cache_note_write(kcr_cache_t *c, const kcr_gvk *gvk, const json_t *obj);

#ifdef __cplusplus
}
#endif

#endif /* KCR_CACHE_H */
