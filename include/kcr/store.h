/* SPDX-License-Identifier: MIT */
/*
 * kcr/store.h: the thread-safe, indexed object store under every informer
 * (client-go tools/cache: ThreadSafeStore + Indexer).
 *
 * Objects are keyed by a key function (default kcr_meta_key: "namespace/name" or
 * "name"). The store does not keep jansson trees: each object is kept as its
 * compact JSON text (plus its key, resourceVersion and the values its indexes
 * extracted), which costs about its wire size instead of about ten times that.
 * Readers therefore always get a freshly parsed json_t of their own (a new
 * reference), which they may change freely; kcr_store_foreach reads the stored
 * text without parsing, for counting and scanning.
 *
 * Indexes: named index functions map an object to 0..n string values;
 * kcr_store_by_index(name, value) finds the objects that produced value. The
 * index "namespace" (KCR_STORE_INDEX_NAMESPACE, value metadata.namespace, "" for
 * cluster-scoped objects) is always present. An index added while objects are
 * stored indexes them at once.
 *
 * Threads: every function may be called from any thread; one rwlock guards the
 * store (readers share it). Parsing for readers happens outside the lock.
 * Callbacks (key, index and foreach functions) run with the lock held and must
 * not call back into the same store.
 *
 * String lists (keys, index values) are handed over as one allocation: a
 * NULL-terminated vector of strings, released with a single kcr_free.
 */
#ifndef KCR_STORE_H
#define KCR_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* KCR_STORE_INDEX_NAMESPACE is the name of the built-in namespace index. */
#define KCR_STORE_INDEX_NAMESPACE "namespace"

/* KCR_STORE_OBJECT_MAX bounds the compact JSON of one stored object (KCR_ETOOBIG). */
#define KCR_STORE_OBJECT_MAX 16777216u /* 16 MiB */

/* KCR_STORE_INDEX_VALUE_MAX bounds one index value, NUL included (KCR_ETOOBIG). */
#define KCR_STORE_INDEX_VALUE_MAX 4096

/* kcr_store_t: opaque. */
typedef struct kcr_store kcr_store_t;

/* kcr_index_values_t: the output list an index function appends to. Opaque. */
typedef struct kcr_index_values kcr_index_values_t;

/*
 * kcr_index_fn computes the index values of obj (borrowed, read-only) by calling
 * kcr_index_values_add for each; adding none is fine (the object is then absent
 * from that index). Returns 0 or a negative kcr_err, which fails the store
 * operation. Runs with the store's write lock held.
 */
typedef int (*kcr_index_fn)(const json_t *obj, kcr_index_values_t *values, void *data);

/*
 * kcr_index_values_add appends a copy of value. Returns 0, KCR_ETOOBIG (value
 * longer than KCR_STORE_INDEX_VALUE_MAX - 1) or KCR_ENOMEM. Only inside an index
 * function.
 */
KCR_EXTERN int kcr_index_values_add(kcr_index_values_t *values, const char *value);

/*
 * kcr_store_foreach_cb sees one stored object: key and json (its compact JSON
 * text, json_len bytes, NUL-terminated) are borrowed for the call. Returning
 * non-zero stops the iteration, and kcr_store_foreach returns that value.
 */
typedef int (*kcr_store_foreach_cb)(const char *key, const char *json, size_t json_len, void *data);

/*
 * kcr_store_create makes an empty store. key_fn (NULL: kcr_meta_key) and
 * key_data compute keys. *out receives a new store (release with
 * kcr_store_destroy), NULL on failure. Returns 0 or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_store_create(kcr_key_fn key_fn, void *key_data, kcr_store_t **out,
                                kcr_error_t *err);

/* kcr_store_destroy releases s and everything in it. NULL is ignored. */
KCR_EXTERN void kcr_store_destroy(kcr_store_t *s);

/*
 * kcr_store_add_indexer registers index function fn under name (copied) and
 * indexes every stored object with it (client-go's AddIndexers; the store
 * accepts it at any time). Returns 0, KCR_EEXIST when name is taken, or the
 * index function's error or KCR_ENOMEM, in which case the store is unchanged.
 */
KCR_EXTERN int kcr_store_add_indexer(kcr_store_t *s, const char *name, kcr_index_fn fn, void *data,
                                     kcr_error_t *err);

/*
 * kcr_store_add stores a compact copy of obj (borrowed; not kept) under its key,
 * replacing what the key held and moving its index entries (client-go Add and
 * Update are the same). The store's resourceVersion becomes obj's. Returns 0,
 * KCR_EINVAL (no key), KCR_ETOOBIG, KCR_ENOMEM or an index function's error;
 * on error the store is unchanged.
 */
KCR_EXTERN int kcr_store_add(kcr_store_t *s, const json_t *obj, kcr_error_t *err);

/* kcr_store_update is kcr_store_add. */
KCR_EXTERN int kcr_store_update(kcr_store_t *s, const json_t *obj, kcr_error_t *err);

/*
 * kcr_store_delete removes the object with obj's key (borrowed) and its index
 * entries. A missing key is not an error. obj's resourceVersion becomes the
 * store's when it is after it (client-go's DeleteWithObject takes it too), and
 * only then: a delete never moves the version back, and one that is no
 * positive decimal without a leading zero (apimachinery's
 * CompareResourceVersion) leaves it. Returns 0, KCR_EINVAL (no key) or
 * KCR_ENOMEM (the store unchanged).
 */
KCR_EXTERN int kcr_store_delete(kcr_store_t *s, const json_t *obj, kcr_error_t *err);

/*
 * kcr_store_delete_key removes the object stored under key; it names no
 * version, so the store's stays. Returns 0 or KCR_ENOENT.
 */
KCR_EXTERN int kcr_store_delete_key(kcr_store_t *s, const char *key);

/*
 * kcr_store_get_by_key parses the object stored under key: *out receives a new
 * reference, NULL on failure. Returns 0, KCR_ENOENT or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_store_get_by_key(kcr_store_t *s, const char *key, json_t **out);

/* kcr_store_get is kcr_store_get_by_key with obj's key; KCR_EINVAL when obj has none. */
KCR_EXTERN int kcr_store_get(kcr_store_t *s, const json_t *obj, json_t **out);

/* kcr_store_contains tells whether key is stored, without parsing anything. */
KCR_EXTERN bool kcr_store_contains(kcr_store_t *s, const char *key);

/* kcr_store_len returns the number of stored objects. */
KCR_EXTERN size_t kcr_store_len(kcr_store_t *s);

/*
 * kcr_store_list parses every stored object: *out receives a new json array (in
 * no particular order), NULL on failure. Returns 0 or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_store_list(kcr_store_t *s, json_t **out);

/*
 * kcr_store_list_keys: *out receives a new NULL-terminated vector of the stored
 * keys (one allocation, release with kcr_free), *n (if not NULL) their number.
 * Returns 0 or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_store_list_keys(kcr_store_t *s, char ***out, size_t *n);

/*
 * kcr_store_replace makes the store hold exactly the objects of items (a
 * borrowed json array; a later duplicate key wins) and sets its resourceVersion
 * to resource_version (may be NULL), rebuilding every index (client-go Replace).
 * All or nothing: returns 0, or KCR_EINVAL (an item without a key, or items not
 * an array), KCR_ETOOBIG, KCR_ENOMEM or an index function's error with the store
 * unchanged.
 */
KCR_EXTERN int kcr_store_replace(kcr_store_t *s, const json_t *items, const char *resource_version,
                                 kcr_error_t *err);

/*
 * kcr_store_resource_version copies the store's resourceVersion into buf: that
 * of the last add, update or replace, or of a later delete whose version was
 * after it ("" before any). Returns 0 or KCR_ETOOBIG.
 */
KCR_EXTERN int kcr_store_resource_version(kcr_store_t *s, char *buf, size_t size);

/*
 * kcr_store_by_index parses the objects whose index index_name holds value: *out
 * receives a new json array, NULL on failure. Returns 0, KCR_ENOENT (no such
 * index) or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_store_by_index(kcr_store_t *s, const char *index_name, const char *value,
                                  json_t **out);

/*
 * kcr_store_index_keys: the keys of the objects whose index index_name holds
 * value, as a new vector (see kcr_store_list_keys). Returns 0, KCR_ENOENT or
 * KCR_ENOMEM.
 */
KCR_EXTERN int kcr_store_index_keys(kcr_store_t *s, const char *index_name, const char *value,
                                    char ***out, size_t *n);

/*
 * kcr_store_list_index_values: every value index index_name currently holds, as
 * a new vector (see kcr_store_list_keys). Returns 0, KCR_ENOENT or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_store_list_index_values(kcr_store_t *s, const char *index_name, char ***out,
                                           size_t *n);

/*
 * kcr_store_index runs index index_name's function on obj (borrowed) and parses
 * the objects that share any of its values (client-go Index): *out receives a new
 * json array. Returns 0, KCR_ENOENT, KCR_ENOMEM or the index function's error.
 */
KCR_EXTERN int kcr_store_index(kcr_store_t *s, const char *index_name, const json_t *obj,
                               json_t **out);

/*
 * kcr_store_foreach calls cb for every stored object under the read lock,
 * without parsing. Returns 0 or the first non-zero value cb returned.
 */
KCR_EXTERN int kcr_store_foreach(kcr_store_t *s, kcr_store_foreach_cb cb, void *data);

/*
 * kcr_store_foreach_index is kcr_store_foreach over the objects whose index
 * index_name holds value. Returns 0, KCR_ENOENT (no such index) or cb's value.
 */
KCR_EXTERN int kcr_store_foreach_index(kcr_store_t *s, const char *index_name, const char *value,
                                       kcr_store_foreach_cb cb, void *data);

/*
 * kcr_known_objects: what a DeltaFIFO consults to learn which objects its
 * consumer already knows (client-go's KeyListerGetter), usually the informer's
 * store. The functions are called with the DeltaFIFO's lock held, from whichever
 * thread called into it.
 *   list_keys   *out: new NULL-terminated vector (one allocation, kcr_free);
 *               returns 0 or KCR_ENOMEM.
 *   get_by_key  *out: a new reference; returns 0, KCR_ENOENT or KCR_ENOMEM.
 *   contains    whether key is known, without building the object; may be NULL
 *               (get_by_key is used instead).
 */
typedef struct kcr_known_objects {
  int (*list_keys)(void *data, char ***out, size_t *n);
  int (*get_by_key)(void *data, const char *key, json_t **out);
  bool (*contains)(void *data, const char *key);
  void *data;
} kcr_known_objects;

/*
 * kcr_store_known_objects fills *out with s as known objects for a DeltaFIFO. s
 * is borrowed: it must outlive the FIFO.
 */
KCR_EXTERN void kcr_store_known_objects(kcr_store_t *s, kcr_known_objects *out);

#ifdef __cplusplus
}
#endif

#endif /* KCR_STORE_H */
