/* SPDX-License-Identifier: MIT */
/*
 * kcr/controllerutil.h: the helpers a reconciler reaches for, over jansson
 * objects — controller-runtime's controllerutil (finalizers, owner references,
 * create-or-update, create-or-patch) and apimachinery's meta condition helpers
 * (status conditions).
 *
 * The helpers read and write through an object client (kcr/objclient.h): the
 * manager hands reconcilers one that reads from its cache and writes to the API
 * server (kcr/manager.h); tests plug in a fake.
 *
 * Objects are borrowed unless a function says otherwise; a function that
 * "changes obj" edits it in place. All functions may be called from any thread;
 * an object is not locked, so the caller serialises access to one object.
 * Errors: 0 or a negative kcr_err, details in the optional kcr_error_t.
 */
#ifndef KCR_CONTROLLERUTIL_H
#define KCR_CONTROLLERUTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/client.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/objclient.h"
#include "kcr/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- finalizers ---- */

/*
 * kcr_finalizer_contains tells whether obj's metadata.finalizers holds name
 * (controllerutil.ContainsFinalizer).
 */
KCR_EXTERN bool kcr_finalizer_contains(const json_t *obj, const char *name);

/*
 * kcr_finalizer_add appends name to obj's metadata.finalizers unless it is there
 * (controllerutil.AddFinalizer), creating metadata and the array as needed.
 * *changed (may be NULL) tells whether obj changed. Returns 0, KCR_EINVAL (obj not
 * an object, or finalizers not an array) or KCR_ENOMEM (obj unchanged).
 */
KCR_EXTERN int kcr_finalizer_add(json_t *obj, const char *name, bool *changed);

/*
 * kcr_finalizer_remove removes every occurrence of name from obj's
 * metadata.finalizers (controllerutil.RemoveFinalizer). *changed as above.
 * Returns 0 or KCR_EINVAL; never allocates.
 */
KCR_EXTERN int kcr_finalizer_remove(json_t *obj, const char *name, bool *changed);

/*
 * kcr_finalizer_remove_patch builds the JSON Patch (RFC 6902) that removes name
 * from the object on the server without clobbering anyone else's finalizers:
 *   [{"op":"test","path":"/metadata/finalizers","value":[...as in obj...]},
 *    {"op":"remove","path":"/metadata/finalizers/<i>"}, ...]
 * (one remove per occurrence, highest index first). If another writer changed the
 * list since obj was read, the test fails and the server refuses the whole patch
 * (422 Invalid, or 409 Conflict): re-read and try again. *out receives the new
 * NUL-terminated bytes (release with kcr_free), NULL on failure or when name is
 * not in the list (nothing to do: returns 0 with *out NULL). Returns 0, KCR_EINVAL
 * or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_finalizer_remove_patch(const json_t *obj, const char *name, char **out,
                                          kcr_error_t *err);

/*
 * kcr_finalizer_add_patch builds the JSON Patch (RFC 6902) that adds name to
 * the object's finalizers on the server without clobbering anyone else's and
 * without sending the whole object, as a full update does:
 *   [{"op":"test","path":"/metadata/finalizers","value":[...as in obj...]},
 *    {"op":"add","path":"/metadata/finalizers/-","value":"<name>"}]
 * or, when obj has no finalizers (a missing member cannot be tested),
 *   [{"op":"test","path":"/metadata/resourceVersion","value":"<rv>"},
 *    {"op":"add","path":"/metadata/finalizers","value":["<name>"]}]
 * (the test left out when obj has no resourceVersion). A concurrent change
 * makes the server refuse the whole patch (422 or 409): re-read and retry.
 * *out: new NUL-terminated bytes (kcr_free), NULL on failure or when name is
 * already there (returns 0). Returns 0, KCR_EINVAL or KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_finalizer_add_patch(const json_t *obj, const char *name, char **out,
                                       kcr_error_t *err);

/* ---- owner references ---- */

/*
 * kcr_owner_ref_set_controller makes owner the controller of obj
 * (controllerutil.SetControllerReference): an owner reference with apiVersion,
 * kind, name and uid of owner, controller and blockOwnerDeletion true, replacing a
 * reference to the same owner (same API group, kind and name) or appended.
 * Errors, with obj unchanged:
 *   KCR_EEXIST   another controller already owns obj (controller-runtime's
 *                AlreadyOwnedError; the message names it).
 *   KCR_EINVAL   owner is namespaced and obj is in another namespace (cross-
 *                namespace references are disallowed) or cluster-scoped (a
 *                cluster-scoped object must not have a namespaced owner); or
 *                owner lacks apiVersion, kind, name or uid.
 *   KCR_ENOMEM
 */
KCR_EXTERN int kcr_owner_ref_set_controller(const json_t *owner, json_t *obj, kcr_error_t *err);

/*
 * kcr_owner_ref_set adds owner as a plain owner of obj
 * (controllerutil.SetOwnerReference): no controller or blockOwnerDeletion field;
 * replaces a reference to the same owner. Same KCR_EINVAL and KCR_ENOMEM rules as
 * kcr_owner_ref_set_controller (never KCR_EEXIST).
 */
KCR_EXTERN int kcr_owner_ref_set(const json_t *owner, json_t *obj, kcr_error_t *err);

/*
 * kcr_owner_ref_remove removes obj's references to owner (same group, kind and
 * name) (controllerutil.RemoveOwnerReference). Returns 0, KCR_ENOENT when obj has
 * none, or KCR_EINVAL.
 */
KCR_EXTERN int kcr_owner_ref_remove(const json_t *owner, json_t *obj, kcr_error_t *err);

/*
 * kcr_owner_ref_refers_to tells whether the owner reference ref (borrowed) names
 * the object of kind gvk (borrowed) called name: group, kind and name compared,
 * the version ignored, as controller-runtime does. false when an argument is
 * NULL or ref lacks a field. Any thread.
 */
KCR_EXTERN bool kcr_owner_ref_refers_to(const json_t *ref, const kcr_gvk *gvk, const char *name);

/*
 * kcr_owner_ref_refers: kcr_owner_ref_refers_to with the kind as an apiVersion
 * and a kind (borrowed). Deprecated.
 */
KCR_DEPRECATED("since 2026-12-02: use kcr_owner_ref_refers_to")
KCR_EXTERN bool kcr_owner_ref_refers(const json_t *ref, const char *api_version, const char *kind,
                                     const char *name);

/*
 * kcr_api_version_group returns the group of an apiVersion ("apps/v1" -> "apps",
 * "v1" -> "") as a pointer into api_version and its length in *len.
 */
KCR_EXTERN const char *kcr_api_version_group(const char *api_version, size_t *len);

/* ---- status conditions (metav1.Condition) ---- */

/*
 * kcr_condition: one condition to set. Strings borrowed for the call.
 *   type, status  required; status is "True", "False" or "Unknown".
 *   reason, message  NULL means "".
 *   observed_generation  written as observedGeneration.
 *   last_transition_time  {0,0}: now (on clock); else this instant.
 */
typedef struct kcr_condition {
  const char *type;
  const char *status;
  const char *reason;
  const char *message;
  int64_t observed_generation;
  kcr_time_t last_transition_time;
} kcr_condition;

/*
 * kcr_conditions_get returns obj's status.conditions array (borrowed). With
 * create, makes status and the array when absent (NULL on KCR_ENOMEM, or when
 * status or conditions exist with another type).
 */
KCR_EXTERN json_t *kcr_conditions_get(json_t *obj, bool create);

/*
 * kcr_condition_set sets c in the conditions array (meta.SetStatusCondition):
 * a new type is appended; for an existing one, lastTransitionTime changes only
 * when status changes, while reason, message and observedGeneration are always
 * brought up to date. Times are RFC 3339 seconds; "now" is clock's wall reading
 * (NULL: the system clock). *changed (may be NULL) tells whether anything
 * changed. Returns 0, KCR_EINVAL (no type or status, conditions not an array, an
 * unformattable time) or KCR_ENOMEM (the array may hold a partial update of that
 * one condition).
 */
KCR_EXTERN int kcr_condition_set(json_t *conditions, const kcr_condition *c, kcr_clock_t *clock,
                                 bool *changed);

/*
 * kcr_condition_find returns the condition of the given type (borrowed from the
 * array), NULL when none (meta.FindStatusCondition).
 */
KCR_EXTERN json_t *kcr_condition_find(const json_t *conditions, const char *type);

/*
 * kcr_condition_remove removes the condition of the given type; returns whether
 * one was there (meta.RemoveStatusCondition).
 */
KCR_EXTERN bool kcr_condition_remove(json_t *conditions, const char *type);

/*
 * kcr_condition_is_true tells whether the condition of that type has status
 * "True" (meta.IsStatusConditionTrue); kcr_condition_is_false likewise "False".
 */
KCR_EXTERN bool kcr_condition_is_true(const json_t *conditions, const char *type);
KCR_EXTERN bool kcr_condition_is_false(const json_t *conditions, const char *type);

/*
 * kcr_finalizer_remove_remote removes finalizer name from obj on the server with
 * kcr_finalizer_remove_patch's JSON Patch (never clobbering other finalizers),
 * then makes obj what the server returned. No request when obj does not hold
 * name. A concurrent change of the list makes the server refuse: KCR_EAPI with
 * kcr_error_is_invalid or kcr_error_is_conflict true; re-read and retry (a
 * reconciler simply returns the error). Blocking.
 */
KCR_EXTERN int kcr_finalizer_remove_remote(const kcr_objclient *c, json_t *obj, const char *name,
                                           kcr_error_t *err);

/*
 * kcr_finalizer_add_remote adds finalizer name to obj on the server with
 * kcr_finalizer_add_patch's JSON Patch (about 100 bytes where an update sends
 * the whole object), then makes obj what the server returned. No request when
 * obj holds name already. A concurrent change: KCR_EAPI with
 * kcr_error_is_invalid or kcr_error_is_conflict; re-read and retry. Blocking;
 * a worker thread.
 */
KCR_EXTERN int kcr_finalizer_add_remote(const kcr_objclient *c, json_t *obj, const char *name,
                                        kcr_error_t *err);

/* ---- create or update ---- */

/* kcr_op_result: what create-or-update/patch did (controllerutil.OperationResult). */
typedef enum kcr_op_result {
  KCR_OP_UNCHANGED = 0,          /* "unchanged": nothing written */
  KCR_OP_CREATED = 1,            /* "created" */
  KCR_OP_UPDATED = 2,            /* "updated" */
  KCR_OP_UPDATED_STATUS = 3,     /* "updatedStatus": object and status patched */
  KCR_OP_UPDATED_STATUS_ONLY = 4 /* "updatedStatusOnly" */
} kcr_op_result;

/* kcr_op_result_name returns controller-runtime's word for r. Static storage. */
KCR_EXTERN const char *kcr_op_result_name(kcr_op_result r);

/*
 * kcr_mutate_fn brings obj (the current object, or the skeleton when it does not
 * exist yet) to the wanted state. It must not change the name or namespace.
 * Return 0 or a negative kcr_err (which aborts the operation and is returned).
 */
typedef int (*kcr_mutate_fn)(json_t *obj, void *data, kcr_error_t *err);

/*
 * kcr_create_or_update (controllerutil.CreateOrUpdate): obj names the object
 * (apiVersion, kind, metadata.namespace and name). Reads it through c; if absent,
 * mutates the skeleton obj and creates it (KCR_OP_CREATED); else replaces obj's
 * contents with what was read, mutates, and updates only when the result differs
 * (json_equal) from what was read (KCR_OP_UPDATED, else KCR_OP_UNCHANGED, no
 * write). On success obj holds the object as last written or read. *res (may be
 * NULL) receives the result. KCR_EINVAL when the mutate function changed the name
 * or namespace; otherwise the read's, the mutation's or the write's error.
 */
KCR_EXTERN int kcr_create_or_update(const kcr_objclient *c, json_t *obj, kcr_mutate_fn f,
                                    void *data, kcr_op_result *res, kcr_error_t *err);

/*
 * kcr_create_or_patch (controllerutil.CreateOrPatch): as kcr_create_or_update, but
 * writes JSON merge patches of the difference: one for everything but status
 * (KCR_OP_UPDATED) and one through the status subresource for status
 * (KCR_OP_UPDATED_STATUS when both, KCR_OP_UPDATED_STATUS_ONLY when only status
 * changed). No write when nothing changed.
 */
KCR_EXTERN int kcr_create_or_patch(const kcr_objclient *c, json_t *obj, kcr_mutate_fn f, void *data,
                                   kcr_op_result *res, kcr_error_t *err);

/*
 * kcr_merge_patch_diff computes the JSON merge patch (RFC 7386) that turns before
 * into after (both borrowed): changed and added members with their new values,
 * removed members as null, nested objects recursively; arrays are replaced whole.
 * *out: a new object, {} when equal; NULL on KCR_ENOMEM.
 */
KCR_EXTERN int kcr_merge_patch_diff(const json_t *before, const json_t *after, json_t **out);

#ifdef __cplusplus
}
#endif

#endif /* KCR_CONTROLLERUTIL_H */
