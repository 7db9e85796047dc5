/* SPDX-License-Identifier: MIT */
/*
 * kcr/typed.h: the reconciler's helpers (kcr/controllerutil.h) over typed C
 * objects instead of json_t: finalizers and owner references on a
 * kcr_meta_v1_object_meta_t, status conditions on a kcr_meta_v1_condition_t
 * array (kcr/meta_v1.h), merge patches from a typed before/after
 * (client.MergeFrom), and create-or-update / create-or-patch with a typed
 * mutate function. Objects of a kind go through that kind's codec in a scheme
 * (kcr/scheme.h; kcr-gen's types register one). Recording an Event for a typed
 * object is kcr_event_record_meta (kcr/events.h).
 *
 * Each helper has the semantics of its JSON twin, named in its comment; the
 * typed ones differ in one way: a failed edit leaves the struct as it was.
 *
 * Memory: strings and arrays the helpers put into a meta or condition are
 * allocated with kcr_meta_v1_mem_calloc / _mem_strdup and released with
 * kcr_meta_v1_mem_free, as the struct's own free function expects; the helpers
 * free what they replace or remove. Growing an array reallocates it, so any
 * pointer into it (a kcr_meta_v1_condition_t * from kcr_typed_condition_find, a
 * finalizer string) is invalid after the next helper call that edits that array.
 *
 * Objects are borrowed unless a function says otherwise. Any thread; a value is
 * not locked, so the caller serialises access to one value. Errors: 0 or a
 * negative kcr_err, details in the optional kcr_error_t (first error wins).
 */
#ifndef KCR_TYPED_H
#define KCR_TYPED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/controllerutil.h"
#include "kcr/error.h"
#include "kcr/meta.h"
#include "kcr/meta_v1.h"
#include "kcr/objclient.h"
#include "kcr/scheme.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- finalizers (kcr_finalizer_contains/add/remove) ---- */

/*
 * kcr_typed_finalizer_contains tells whether meta's finalizers hold name
 * (controllerutil.ContainsFinalizer). false when meta or name is NULL.
 */
KCR_EXTERN bool kcr_typed_finalizer_contains(const kcr_meta_v1_object_meta_t *meta,
                                             const char *name);

/*
 * kcr_typed_finalizer_add appends a copy of name to meta's finalizers unless it
 * is there (controllerutil.AddFinalizer); has_finalizers becomes true. *changed
 * (may be NULL) tells whether meta changed. Returns 0, KCR_EINVAL (meta or name
 * NULL) or KCR_ENOMEM (meta unchanged).
 */
KCR_EXTERN int kcr_typed_finalizer_add(kcr_meta_v1_object_meta_t *meta, const char *name,
                                       bool *changed);

/*
 * kcr_typed_finalizer_remove removes and frees every occurrence of name from
 * meta's finalizers (controllerutil.RemoveFinalizer); an emptied list stays
 * present (has_finalizers true, length 0), as the JSON helper leaves []. *changed
 * as above. Returns 0 or KCR_EINVAL (meta or name NULL); never allocates.
 */
KCR_EXTERN int kcr_typed_finalizer_remove(kcr_meta_v1_object_meta_t *meta, const char *name,
                                          bool *changed);

/* ---- labels and annotations (metav1.SetMetaDataLabel) ---- */

/*
 * kcr_typed_label_set sets meta's label key to value (both copied), replacing
 * the value a label of that key had; has_labels becomes true
 * (metav1.SetMetaDataLabel). kcr_typed_annotation_set likewise for
 * annotations. Returns 0, KCR_EINVAL (an argument NULL) or KCR_ENOMEM (meta
 * unchanged).
 */
KCR_EXTERN int kcr_typed_label_set(kcr_meta_v1_object_meta_t *meta, const char *key,
                                   const char *value);
KCR_EXTERN int kcr_typed_annotation_set(kcr_meta_v1_object_meta_t *meta, const char *key,
                                        const char *value);

/*
 * kcr_typed_label returns the value of meta's label key, borrowed from meta:
 * valid until that label is next set or meta is freed; NULL when there is
 * none. kcr_typed_annotation likewise for annotations.
 */
KCR_EXTERN const char *kcr_typed_label(const kcr_meta_v1_object_meta_t *meta, const char *key);
KCR_EXTERN const char *kcr_typed_annotation(const kcr_meta_v1_object_meta_t *meta, const char *key);

/*
 * kcr_typed_selector_match_labels adds every label of meta to sel's
 * matchLabels (a Deployment's selector from its Pod template's labels).
 * Returns 0, KCR_EINVAL or KCR_ENOMEM (sel may hold some of them).
 */
KCR_EXTERN int kcr_typed_selector_match_labels(kcr_meta_v1_label_selector_t *sel,
                                               const kcr_meta_v1_object_meta_t *meta);

/* ---- owner references (kcr_owner_ref_*) ---- */

/*
 * kcr_typed_owner_ref_set_controller makes the object owner (of kind owner_gvk;
 * both borrowed) the controller of the object whose metadata is meta
 * (controllerutil.SetControllerReference): a reference with the owner's
 * apiVersion, kind, name and uid, controller and blockOwnerDeletion true,
 * replacing a reference to the same owner (same API group, kind and name; the
 * version is not compared) or appended. Errors, with meta unchanged:
 *   KCR_EEXIST   another controller already owns the object (the message names it).
 *   KCR_EINVAL   owner is namespaced and meta is in another namespace or
 *                cluster-scoped; owner_gvk lacks version or kind; owner lacks
 *                name or uid; an argument is NULL.
 *   KCR_ENOMEM
 */
KCR_EXTERN int kcr_typed_owner_ref_set_controller(const kcr_gvk *owner_gvk,
                                                  const kcr_meta_v1_object_meta_t *owner,
                                                  kcr_meta_v1_object_meta_t *meta,
                                                  kcr_error_t *err);

/*
 * kcr_typed_owner_ref_set adds owner as a plain owner of meta's object
 * (controllerutil.SetOwnerReference): controller and blockOwnerDeletion unset;
 * replaces a reference to the same owner. Errors as
 * kcr_typed_owner_ref_set_controller, never KCR_EEXIST.
 */
KCR_EXTERN int kcr_typed_owner_ref_set(const kcr_gvk *owner_gvk,
                                       const kcr_meta_v1_object_meta_t *owner,
                                       kcr_meta_v1_object_meta_t *meta, kcr_error_t *err);

/*
 * kcr_typed_owner_ref_remove removes every reference to owner (same group, kind
 * and name) from meta (controllerutil.RemoveOwnerReference). Returns 0,
 * KCR_ENOENT when meta has no such reference, or KCR_EINVAL (an argument NULL).
 * Never allocates.
 */
KCR_EXTERN int kcr_typed_owner_ref_remove(const kcr_gvk *owner_gvk,
                                          const kcr_meta_v1_object_meta_t *owner,
                                          kcr_meta_v1_object_meta_t *meta, kcr_error_t *err);

/*
 * kcr_typed_owner_ref_controller returns meta's controller reference (the one
 * with controller true; metav1.GetControllerOf), borrowed from meta: valid until
 * meta's owner references are next changed (by these helpers or by hand) or meta
 * is freed. NULL when there is none or meta is NULL.
 */
KCR_EXTERN const kcr_meta_v1_owner_reference_t *
kcr_typed_owner_ref_controller(const kcr_meta_v1_object_meta_t *meta);

/*
 * kcr_typed_owner_ref_has_controller tells whether meta has a controller
 * reference (controllerutil.HasControllerReference).
 */
KCR_EXTERN bool kcr_typed_owner_ref_has_controller(const kcr_meta_v1_object_meta_t *meta);

/* ---- status conditions (kcr_condition_*, metav1.Condition) ---- */

/*
 * KCR_CONDITIONS(status) names a generated status struct's conditions as the
 * three arguments the condition helpers take: the array, its length and its
 * has_ flag. status is a pointer to the struct and must not be NULL.
 *   kcr_typed_condition_is_true(KCR_CONDITIONS(app->status), "Ready")
 */
#define KCR_CONDITIONS(status)                                                                     \
  &(status)->conditions, &(status)->conditions_len, &(status)->has_conditions

/*
 * KCR_CONDITION_LIST(list) names a header type's conditions, a
 * KCR_LIST(kcr_meta_v1_condition_t) member (kcr/crd.h; what `kcr-gen codecs`
 * decodes), as the same three arguments: its items, its length, and no has_
 * flag (NULL: a list has none; it is encoded when it has items). list is a
 * pointer to the member and must not be NULL.
 *   kcr_typed_condition_set(KCR_CONDITION_LIST(&m->status.conditions), "Available", ...)
 */
#define KCR_CONDITION_LIST(list) &(list)->items, &(list)->len, NULL

/*
 * kcr_typed_condition_set sets the condition of the given type in the array
 * *conds of *len elements (meta.SetStatusCondition): a new type is appended
 * (the array reallocated; *has becomes true, has NULL for an array without a
 * presence flag, as KCR_CONDITION_LIST gives); for an existing one,
 * lastTransitionTime changes only when status changes, while reason, message
 * and observedGeneration are always brought up to date. The message is
 * message_fmt printf-style (NULL: ""); reason NULL means "". Times are RFC 3339
 * seconds from clock's wall reading (NULL: the system clock). Strings are copied.
 * *changed (may be NULL) tells whether anything changed. Returns 0, KCR_EINVAL
 * (conds, len, type or status NULL; an unformattable time) or KCR_ENOMEM;
 * on error the array is unchanged.
 */
KCR_EXTERN int kcr_typed_condition_set(kcr_meta_v1_condition_t **conds, size_t *len, bool *has,
                                       const char *type, const char *status, const char *reason,
                                       int64_t observed_generation, kcr_clock_t *clock,
                                       bool *changed, const char *message_fmt, ...)
    KCR_PRINTF(10, 11);

/*
 * kcr_typed_condition_find returns the condition of the given type
 * (meta.FindStatusCondition), borrowed from the array: valid until the next
 * kcr_typed_condition_set or kcr_typed_condition_remove on the same array (either
 * may move it), or until the array is freed. NULL when none. has is accepted for
 * KCR_CONDITIONS and KCR_CONDITION_LIST and not read.
 */
KCR_EXTERN kcr_meta_v1_condition_t *kcr_typed_condition_find(kcr_meta_v1_condition_t *const *conds,
                                                             const size_t *len, const bool *has,
                                                             const char *type);

/*
 * kcr_typed_condition_remove removes and frees the condition of the given type
 * (meta.RemoveStatusCondition); returns whether one was there. The array stays
 * present (*has unchanged) when it empties. Never allocates.
 */
KCR_EXTERN bool kcr_typed_condition_remove(kcr_meta_v1_condition_t **conds, size_t *len, bool *has,
                                           const char *type);

/*
 * kcr_typed_condition_is_true tells whether the condition of that type has
 * status "True" (meta.IsStatusConditionTrue); kcr_typed_condition_is_false
 * likewise "False". false when there is no such condition.
 */
KCR_EXTERN bool kcr_typed_condition_is_true(kcr_meta_v1_condition_t *const *conds,
                                            const size_t *len, const bool *has, const char *type);
KCR_EXTERN bool kcr_typed_condition_is_false(kcr_meta_v1_condition_t *const *conds,
                                             const size_t *len, const bool *has, const char *type);

/* ---- merge patches from typed values (client.MergeFrom) ---- */

/*
 * KCR_MERGE_FROM_OPTIMISTIC_LOCK: the patch carries after's
 * metadata.resourceVersion, so the server refuses it (409 Conflict) when the
 * object changed since it was read (client.MergeFromWithOptimisticLock).
 */
#define KCR_MERGE_FROM_OPTIMISTIC_LOCK 1u

/*
 * kcr_typed_merge_from computes the JSON merge patch (RFC 7386) that turns
 * before into after, two typed values of kind gvk (borrowed), encoding both with
 * the kind's codec in s and diffing them (kcr_merge_patch_diff). flags: 0 or
 * KCR_MERGE_FROM_OPTIMISTIC_LOCK. *out: a new object ({} when equal), NULL on
 * failure. Errors: KCR_ENOENT / KCR_ENOTSUP (kind not registered, no codec), the
 * codec's, KCR_EINVAL (an argument NULL; the lock asked for and after has no
 * resourceVersion), KCR_ENOMEM.
 */
KCR_EXTERN int kcr_typed_merge_from(const kcr_scheme_t *s, const kcr_gvk *gvk, const void *before,
                                    const void *after, unsigned flags, json_t **out,
                                    kcr_error_t *err);

/*
 * kcr_typed_patch_merge_from sends kcr_typed_merge_from's patch for the object
 * after names, or its subresource ("status"; NULL: the object), through c with
 * kcr_typed_patch (client.Patch(ctx, after, client.MergeFrom(before))). The
 * patch is sent even when empty, as controller-runtime does. *out (may be NULL:
 * not wanted, not decoded): the server's answer as a new typed value of kind
 * gvk (release with kcr_scheme_free_typed), NULL on failure. Errors:
 * kcr_typed_merge_from's, then the request's (KCR_EAPI with
 * kcr_error_is_conflict true when the optimistic lock failed). Blocking; any
 * thread but a client's loop thread.
 */
KCR_EXTERN int kcr_typed_patch_merge_from(const kcr_objclient *c, const kcr_scheme_t *s,
                                          const kcr_gvk *gvk, const void *before, const void *after,
                                          unsigned flags, const char *subresource, void **out,
                                          kcr_error_t *err);

/* ---- create or update, typed (kcr_create_or_update / kcr_create_or_patch) ---- */

/*
 * kcr_typed_mutate_fn brings obj, a typed value of the helper's kind (the
 * object as read, or the skeleton when it does not exist yet), to the wanted
 * state, editing it in place with kcr_meta_v1_mem_* allocations. obj is the
 * helper's: valid only during the call, never kept. It must not change the name
 * or namespace. Return 0 or a negative kcr_err (which aborts the operation and
 * is returned). Runs on the caller's thread.
 */
typedef int (*kcr_typed_mutate_fn)(void *obj, void *data, kcr_error_t *err);

/*
 * kcr_typed_create_or_update is kcr_create_or_update for typed values of kind
 * gvk (the kind's codec in s): *obj (in: a typed value naming the object by
 * metadata namespace and name, owned by the caller; it must encode, so the
 * kind's required fields are set) is encoded; the object is read through c;
 * absent, the skeleton is mutated and created; present, what was read is
 * decoded, mutated, and written back (an update) only when its encoding differs
 * from what was read. The comparison is on the encoded JSON, so the
 * codec must round-trip what the server sends (kcr-gen's does: unknown members
 * are kept). On success the value *obj pointed to is freed and *obj is a new
 * typed value holding the object as last written or read (release with
 * kcr_scheme_free_typed); on failure *obj is left as given (a write may have
 * happened if only decoding the answer failed: *res says). *res (may be NULL)
 * receives the result. f NULL: no mutation. Errors: KCR_EINVAL (obj or *obj
 * NULL; mutate changed the name or namespace), KCR_ENOENT / KCR_ENOTSUP (kind
 * not registered, no codec), the codec's, the mutate function's, the read's or
 * the write's (a NotFound on the read is not an error and leaves err empty).
 * Blocking; any thread but a client's loop thread.
 */
KCR_EXTERN int kcr_typed_create_or_update(const kcr_objclient *c, const kcr_scheme_t *s,
                                          const kcr_gvk *gvk, void **obj, kcr_typed_mutate_fn f,
                                          void *data, kcr_op_result *res, kcr_error_t *err);

/*
 * kcr_typed_create_or_patch is kcr_create_or_patch for typed values, as
 * kcr_typed_create_or_update: merge patches of the difference, one for
 * everything but status (KCR_OP_UPDATED) and one through the status subresource
 * (KCR_OP_UPDATED_STATUS, KCR_OP_UPDATED_STATUS_ONLY). No write when nothing
 * changed. Ownership, errors and threads as kcr_typed_create_or_update.
 */
KCR_EXTERN int kcr_typed_create_or_patch(const kcr_objclient *c, const kcr_scheme_t *s,
                                         const kcr_gvk *gvk, void **obj, kcr_typed_mutate_fn f,
                                         void *data, kcr_op_result *res, kcr_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* KCR_TYPED_H */
