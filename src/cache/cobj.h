/* SPDX-License-Identifier: MIT */
/*
 * cobj.h: the cache's stored form of an object, the compact object.
 *
 * A compact object is immutable and reference counted. It holds
 *   json NUL resourceVersion NUL namespace NUL name
 * where json is the object's minified text without metadata.managedFields
 * (which never holds a NUL). The informer makes one from each watch line (the
 * scanner's output, util/jscan.h) or from a tree, and it is what the store
 * keeps, so one allocation goes from the watch line to the cache.
 *
 * kcr__cobj_t is a type of its own so that the compiler tells it from a tree:
 * no function that takes a json_t * accepts one. Underneath it is a jansson
 * string, so that it can ride in the json_t * slots of the DeltaFIFO's deltas
 * and of the arrays a Replace takes. Those slots are the only place where the
 * two meet; kcr__cobj_slot and kcr__cobj_of_slot are the crossing, and
 * nothing outside this file asks a json_t * whether it is a compact object
 * (scripts/lint.sh checks).
 */
#ifndef KCR_CACHE_COBJ_H
#define KCR_CACHE_COBJ_H

#include <jansson.h>
#include <stddef.h>

#include "kcr/buf.h"
#include "util/jscan.h"

/* kcr__cobj_t: opaque; see above. */
typedef struct kcr__cobj kcr__cobj_t;

/*
 * kcr__cobj_from_buf makes a new compact object in *out from the text at
 * b[base, len) (as kcr__scan_object appended it) and meta's resourceVersion,
 * namespace and name, then truncates b back to base. Returns 0, or
 * KCR_ENOMEM / KCR_ETOOBIG (b freed, *out NULL).
 */
int kcr__cobj_from_buf(kcr_buf_t *b, size_t base, const kcr__scan_meta_t *meta, kcr__cobj_t **out);

/*
 * kcr__cobj_from_tree dumps obj (borrowed) compactly into a new compact object
 * in *out, with obj's resourceVersion, namespace and name ("" when absent).
 * scratch is the caller's buffer, kept between calls; its bound is the
 * object's. Returns 0, KCR_ETOOBIG or KCR_ENOMEM (*out NULL).
 */
int kcr__cobj_from_tree(const json_t *obj, kcr_buf_t *scratch, kcr__cobj_t **out);

/* kcr__cobj_ref takes a reference (returns c); kcr__cobj_unref drops one.
 * Both accept NULL. Any thread. */
kcr__cobj_t *kcr__cobj_ref(kcr__cobj_t *c);
void kcr__cobj_unref(kcr__cobj_t *c);

/* kcr__cobj_json returns the object's text (borrowed) and, when len is not
 * NULL, its length. */
const char *kcr__cobj_json(const kcr__cobj_t *c, size_t *len);

/* kcr__cobj_rv, kcr__cobj_ns and kcr__cobj_name return metadata.resourceVersion,
 * .namespace and .name (borrowed, "" if none). */
const char *kcr__cobj_rv(const kcr__cobj_t *c);
const char *kcr__cobj_ns(const kcr__cobj_t *c);
const char *kcr__cobj_name(const kcr__cobj_t *c);

/* kcr__cobj_parse parses the object's text into a new tree. Returns 0 or
 * KCR_ENOMEM (the text is always valid JSON). */
int kcr__cobj_parse(const kcr__cobj_t *c, json_t **out);

/*
 * kcr__cobj_parse_meta parses only the object's apiVersion, kind and metadata
 * into a new tree (the rest is skipped, not parsed): what a handler that reads
 * nothing else needs, at a fraction of the allocations. Returns 0 or
 * KCR_ENOMEM.
 */
int kcr__cobj_parse_meta(const kcr__cobj_t *c, json_t **out);

/*
 * kcr__cobj_key writes the key kcr_meta_key would give the object
 * ("namespace/name", or "name") into buf. Returns 0, KCR_EINVAL (no name) or
 * KCR_ETOOBIG (buf holds "" then).
 */
int kcr__cobj_key(const kcr__cobj_t *c, char *buf, size_t size);

/*
 * kcr__cobj_slot returns c as the json_t * a DeltaFIFO delta or a Replace
 * array carries: the same reference, not a new one (a stealing call that takes
 * the slot takes c's reference). NULL stays NULL.
 */
json_t *kcr__cobj_slot(kcr__cobj_t *c);

/*
 * kcr__cobj_of_slot returns the compact object a slot carries (borrowed, as
 * the slot was), or NULL when the slot holds a tree or nothing.
 */
kcr__cobj_t *kcr__cobj_of_slot(const json_t *slot);

/*
 * kcr__cobj_key_fn is a kcr_key_fn for slots (the informer's DeltaFIFO): a
 * compact object's kcr__cobj_key, a tree's kcr_meta_key.
 */
int kcr__cobj_key_fn(const json_t *slot, char *buf, size_t size, void *data);

/*
 * kcr__cobj_collapse turns the events of a streamed list into the list a
 * Replace takes, as a map key -> object filled in order would: events (borrowed)
 * is an array of slots of compact objects, each an add or update of its key,
 * except one that follows a JSON null, which deletes its key. *out is a new
 * array of new references: each key's last object unless its last event deleted
 * it, in the order in which the keys first came (a key deleted and added again
 * comes where it was added again). Collecting the events as an array keeps the
 * stream from allocating per object; the temporaries here are a few large
 * blocks, freed before return. Returns 0, KCR_EINVAL (a tree, or an object
 * without a name) or KCR_ENOMEM.
 */
int kcr__cobj_collapse(const json_t *events, json_t **out);

#endif /* KCR_CACHE_COBJ_H */
