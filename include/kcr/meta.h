/* SPDX-License-Identifier: MIT */
/*
 * kcr/meta.h: object metadata over jansson objects (apimachinery's meta.Accessor
 * and metav1.ObjectMeta getters), the cache key of an object (client-go's
 * MetaNamespaceKeyFunc), the default informer transform, label selectors
 * (apimachinery labels.Parse and Selector.Matches) and dotted-path field access
 * for index functions.
 *
 * Every getter takes a borrowed object and returns borrowed data that stays valid
 * while the object is neither changed nor released. None of them allocates, locks
 * or fails on a malformed object: a missing or mistyped field reads as absent.
 * All functions may be called from any thread; an object is not locked, so the
 * caller serialises access to one object.
 */
#ifndef KCR_META_H
#define KCR_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kcr/common.h"
#include "kcr/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_gvk, the kind type, is declared in kcr/common.h (the REST mapper takes it too). */

/* KCR_GVK_GROUP_MAX: the size of a group buffer for kcr_meta_gvk (a DNS subdomain). */
#define KCR_GVK_GROUP_MAX 254

/*
 * kcr_meta_gvk reads obj's apiVersion and kind into *out: out->version and
 * out->kind borrow from obj, out->group points into group (size bytes, the group
 * copied there NUL-terminated). Returns 0, or KCR_EINVAL when obj lacks
 * apiVersion or kind or the group does not fit. Any thread.
 */
KCR_EXTERN int kcr_meta_gvk(const json_t *obj, kcr_gvk *out, char *group, size_t size);

/*
 * kcr_gvk_api_version writes gvk's apiVersion ("apps/v1", "v1") into buf (size
 * bytes). Returns its length, or KCR_ETOOBIG / KCR_EINVAL (no version). Any
 * thread.
 */
KCR_EXTERN int kcr_gvk_api_version(const kcr_gvk *gvk, char *buf, size_t size);

/*
 * KCR_META_KEY_MAX is the size, NUL included, of a buffer that holds any key
 * kcr_meta_key makes for a valid object (namespace <= 63 bytes, '/', name <= 253
 * bytes), with room to spare for custom key functions.
 */
#define KCR_META_KEY_MAX 512

/*
 * kcr_key_fn computes the cache key of obj (borrowed) into buf (size bytes, NUL
 * included). Returns 0, KCR_ETOOBIG when the key does not fit, or KCR_EINVAL when
 * obj has no key. data is the pointer registered with the function. The store
 * and the DeltaFIFO call it with their lock held: it must not call back into
 * them.
 */
typedef int (*kcr_key_fn)(const json_t *obj, char *buf, size_t size, void *data);

/* kcr_meta_metadata returns obj's "metadata" object (borrowed), NULL if absent. */
KCR_EXTERN json_t *kcr_meta_metadata(const json_t *obj);

/*
 * kcr_meta_namespace, kcr_meta_name, kcr_meta_uid, kcr_meta_resource_version,
 * kcr_meta_generate_name and kcr_meta_api_version / kcr_meta_kind return the
 * field as a borrowed string, "" when absent or not a string (as Go's getters
 * return the zero value). Never NULL.
 */
KCR_EXTERN const char *kcr_meta_namespace(const json_t *obj);
KCR_EXTERN const char *kcr_meta_name(const json_t *obj);
KCR_EXTERN const char *kcr_meta_uid(const json_t *obj);
KCR_EXTERN const char *kcr_meta_resource_version(const json_t *obj);
KCR_EXTERN const char *kcr_meta_generate_name(const json_t *obj);
KCR_EXTERN const char *kcr_meta_api_version(const json_t *obj);
KCR_EXTERN const char *kcr_meta_kind(const json_t *obj);

/* kcr_meta_generation returns metadata.generation, 0 when absent. */
KCR_EXTERN int64_t kcr_meta_generation(const json_t *obj);

/*
 * kcr_meta_is_deleting tells whether metadata.deletionTimestamp is set (the
 * object is being deleted and waits for its finalizers).
 */
KCR_EXTERN bool kcr_meta_is_deleting(const json_t *obj);

/*
 * kcr_meta_labels and kcr_meta_annotations return the map as a borrowed json
 * object, NULL when absent. kcr_meta_label and kcr_meta_annotation return one
 * value (borrowed), NULL when the key is absent.
 */
KCR_EXTERN json_t *kcr_meta_labels(const json_t *obj);
KCR_EXTERN json_t *kcr_meta_annotations(const json_t *obj);
KCR_EXTERN const char *kcr_meta_label(const json_t *obj, const char *key);
KCR_EXTERN const char *kcr_meta_annotation(const json_t *obj, const char *key);

/*
 * kcr_meta_owner_references returns metadata.ownerReferences (borrowed json
 * array), NULL when absent. kcr_meta_finalizers likewise for metadata.finalizers.
 */
KCR_EXTERN json_t *kcr_meta_owner_references(const json_t *obj);
KCR_EXTERN json_t *kcr_meta_finalizers(const json_t *obj);

/*
 * kcr_meta_controller_ref returns the owner reference with "controller": true
 * (borrowed), NULL when none (metav1.GetControllerOf).
 */
KCR_EXTERN json_t *kcr_meta_controller_ref(const json_t *obj);

/*
 * kcr_meta_path returns the value at a dotted path ("spec.nodeName",
 * "metadata.labels.app") as a borrowed json_t, NULL when any step is missing or
 * not an object. A path segment cannot contain a dot; use json_object_get for
 * such keys.
 */
KCR_EXTERN json_t *kcr_meta_path(const json_t *obj, const char *path);

/*
 * kcr_meta_path_string returns the string at a dotted path (borrowed), NULL when
 * absent or not a string. The building block of field index functions.
 */
KCR_EXTERN const char *kcr_meta_path_string(const json_t *obj, const char *path);

/*
 * kcr_meta_key writes the cache key of obj into buf: "namespace/name", or "name"
 * for a cluster-scoped object (client-go's MetaNamespaceKeyFunc). Returns 0,
 * KCR_EINVAL when obj has no metadata.name (a string, not empty), or KCR_ETOOBIG
 * when size is too small (buf then holds ""). A buffer of KCR_META_KEY_MAX bytes
 * always suffices for valid objects.
 */
KCR_EXTERN int kcr_meta_key(const json_t *obj, char *buf, size_t size);

/*
 * kcr_meta_key_fn is kcr_meta_key with kcr_key_fn's signature (data unused), the
 * default key function of the store and the DeltaFIFO.
 */
KCR_EXTERN int kcr_meta_key_fn(const json_t *obj, char *buf, size_t size, void *data);

/*
 * kcr_meta_split_key splits a key made by kcr_meta_key (client-go's
 * SplitMetaNamespaceKey): "ns/name" gives *ns_len = 2 and *name = key + 3;
 * "name" gives *ns_len = 0 and *name = key. Both outputs borrow from key.
 * Returns 0, or KCR_EINVAL for a key with more than one '/' or an empty name.
 */
KCR_EXTERN int kcr_meta_split_key(const char *key, size_t *ns_len, const char **name);

/*
 * kcr_meta_strip_managed_fields removes metadata.managedFields from obj in
 * place: the default informer transform (the field is a large share of an
 * object's size and no controller reads it). Returns 0; an object without the
 * field is left as it is. Never fails.
 */
KCR_EXTERN int kcr_meta_strip_managed_fields(json_t *obj);

/*
 * Label selectors (apimachinery labels.Parse): a comma-separated list of
 * requirements, all of which must hold:
 *   key=value  key==value  key!=value   key in (v1,v2)   key notin (v1)
 *   key        !key        key>1        key<1   (integers)
 * Keys are qualified names ("prefix.example.com/name"), values are label values
 * (at most 63 bytes of [A-Za-z0-9._-], starting and ending alphanumeric, or
 * empty). The empty selector matches everything. != and notin also match an
 * object without the key, as upstream.
 */
typedef struct kcr_selector kcr_selector_t;

/*
 * kcr_selector_parse parses text. *out receives a new selector (release with
 * kcr_selector_destroy), NULL on failure. Returns 0, KCR_EPARSE (err's message
 * names the byte offset and what was expected, like "selector: at 7: found ')',
 * expected: identifier"), KCR_ETOOBIG (text longer than KCR_SELECTOR_MAX) or
 * KCR_ENOMEM. Any thread.
 */
#define KCR_SELECTOR_MAX 8192
KCR_EXTERN int kcr_selector_parse(const char *text, kcr_selector_t **out, kcr_error_t *err);

/*
 * kcr_selector_matches tells whether a label map (a borrowed json object of
 * string values; NULL is the empty map) satisfies sel. Non-string values are
 * treated as absent. sel is read-only: any number of threads may match at once.
 */
KCR_EXTERN bool kcr_selector_matches(const kcr_selector_t *sel, const json_t *labels);

/* kcr_selector_matches_obj is kcr_selector_matches on kcr_meta_labels(obj). */
KCR_EXTERN bool kcr_selector_matches_obj(const kcr_selector_t *sel, const json_t *obj);

/* kcr_selector_empty tells whether sel has no requirement (matches everything). */
KCR_EXTERN bool kcr_selector_empty(const kcr_selector_t *sel);

/*
 * kcr_selector_string writes sel's canonical form (requirements sorted by key,
 * as apimachinery's String(): "a=b,c in (x,y),!d") into buf, the form to send
 * as the labelSelector query parameter. Returns 0, or kcr_buf's errors.
 */
struct kcr_buf;
KCR_EXTERN int kcr_selector_string(const kcr_selector_t *sel, struct kcr_buf *buf);

/* kcr_selector_destroy releases sel. NULL is ignored. */
KCR_EXTERN void kcr_selector_destroy(kcr_selector_t *sel);

#ifdef __cplusplus
}
#endif

#endif /* KCR_META_H */
