/* SPDX-License-Identifier: MIT */
/*
 * store_internal.h: the store's entry points for compact objects
 * (cache/cobj.h), which the informer uses so that an object travels from its
 * watch line to the store, and to its handlers, without a tree. For a store
 * with the default key function (kcr_meta_key) only.
 */
#ifndef KCR_CACHE_STORE_INTERNAL_H
#define KCR_CACHE_STORE_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cache/cobj.h"
#include "kcr/store.h"

/*
 * kcr__store_put stores cobj (a compact object, borrowed: the store takes a
 * reference) under its key, as kcr_store_add does with a tree; indexes other
 * than the namespace one get a parsed tree. *old (may be NULL) receives the
 * object it replaced (a new reference; NULL when the key was new). Returns 0,
 * KCR_EINVAL (no name), KCR_ENOMEM or an index function's error; on error
 * nothing changed. Any thread.
 */
int kcr__store_put(kcr_store_t *s, kcr__cobj_t *cobj, kcr__cobj_t **old, kcr_error_t *err);

/*
 * kcr__store_remove removes key and its index entries, as kcr_store_delete_key
 * does. last (borrowed, may be NULL) is the object's last state, the one its
 * deletion came with: when its resourceVersion is after the store's, the store
 * takes it (a reference to last, no allocation). Returns 0 or KCR_ENOENT (the
 * version is taken even then). Any thread.
 */
int kcr__store_remove(kcr_store_t *s, const char *key, kcr__cobj_t *last);

/* kcr__store_get_compact returns the stored compact object of key (new
 * reference) in *out. Returns 0 or KCR_ENOENT. */
int kcr__store_get_compact(kcr_store_t *s, const char *key, kcr__cobj_t **out);

/*
 * kcr__store_list_compact returns every stored compact object: *out is a new
 * array of *n new references (release each with kcr__cobj_unref, the array
 * with kcr_free). Returns 0 or KCR_ENOMEM.
 */
int kcr__store_list_compact(kcr_store_t *s, kcr__cobj_t ***out, size_t *n);

/*
 * kcr__index_values_contain runs the index function fn (data passed back) on
 * obj (borrowed) outside any store, and sets *found when value is one of the
 * values it adds (the fake client's field indexes, kcr/testing.h). Returns 0,
 * or fn's error, KCR_ETOOBIG or KCR_ENOMEM (then *found is false). Any thread.
 */
int kcr__index_values_contain(kcr_index_fn fn, void *data, const json_t *obj, const char *value,
                              bool *found);

#endif /* KCR_CACHE_STORE_INTERNAL_H */
