/* SPDX-License-Identifier: MIT */
/*
 * store_internal.h: the store's entry points for compact objects
 * (util/jscan.h), which the informer uses so that an object travels from its
 * watch line to the store, and to its handlers, without a tree. For a store
 * with the default key function (kcr_meta_key) only.
 */
#ifndef KCR_CACHE_STORE_INTERNAL_H
#define KCR_CACHE_STORE_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "kcr/store.h"

/*
 * kcr__store_put stores cobj (a compact object, borrowed: the store takes a
 * reference) under its key, as kcr_store_add does with a tree; indexes other
 * than the namespace one get a parsed tree. *old (may be NULL) receives the
 * object it replaced (a new reference; NULL when the key was new). Returns 0,
 * KCR_EINVAL (no name), KCR_ENOMEM or an index function's error; on error
 * nothing changed. Any thread.
 */
int kcr__store_put(kcr_store_t *s, json_t *cobj, json_t **old, kcr_error_t *err);

/* kcr__store_get_compact returns the stored compact object of key (new
 * reference) in *out. Returns 0 or KCR_ENOENT. */
int kcr__store_get_compact(kcr_store_t *s, const char *key, json_t **out);

/*
 * kcr__store_list_compact returns every stored compact object: *out is a new
 * array of *n new references (release each with json_decref, the array with
 * kcr_free). Returns 0 or KCR_ENOMEM.
 */
int kcr__store_list_compact(kcr_store_t *s, json_t ***out, size_t *n);

/*
 * kcr__cobj_key_fn is a kcr_key_fn for compact objects (the DeltaFIFO's): the
 * key kcr_meta_key gives the object, KCR_EINVAL without a name. A tree is
 * handed to kcr_meta_key.
 */
int kcr__cobj_key_fn(const json_t *obj, char *buf, size_t size, void *data);

/*
 * kcr__cobj_collapse turns the events of a streamed list into the list a
 * Replace takes, as a map key -> object filled in order would: events (borrowed)
 * is an array of compact objects, each an add or update of its key, except one
 * that follows a JSON null, which deletes its key. *out is a new array of new
 * references: each key's last object unless its last event deleted it, in the
 * order in which the keys first came (a key deleted and added again comes where
 * it was added again). Collecting the events as an array keeps the stream from
 * allocating per object; the temporaries here are a few large blocks, freed
 * before return. Returns 0, KCR_EINVAL (an object without a name) or KCR_ENOMEM.
 */
int kcr__cobj_collapse(const json_t *events, json_t **out);

#endif /* KCR_CACHE_STORE_INTERNAL_H */
