/* SPDX-License-Identifier: MIT */
/*
 * app_status.h: the App's status as a pure function of what the reconciler
 * observed (part of kcr-operator's kop library): observedGeneration, replicas,
 * selector, url and the metav1.Condition list (Available, Progressing, Degraded,
 * Paused). Errors and threads as app_desired.h: 0 or a negative kcr_err, *out
 * NULL on failure, err may be NULL; any thread, no state.
 */
#ifndef KOP_APP_STATUS_H
#define KOP_APP_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "app/app_desired.h"
#include "kcr/error.h"
#include "kcr/time.h"

/*
 * kop_app_observed: what the reconciler saw, for kop_app_status.
 *   deployment        the App's own Deployment as read (borrowed), NULL when it
 *                     does not exist or is not owned by the App (never pass an
 *                     unowned same-named Deployment: its replicas are not ours).
 *   degraded_reason   NULL when reconciling succeeded; else the CamelCase reason
 *                     of Degraded=True (e.g. KOP_APP_REASON_NAME_CONFLICT).
 *   degraded_message  the message with it (may be NULL: "").
 */
typedef struct kop_app_observed {
  const json_t *deployment;
  const char *degraded_reason;
  const char *degraded_message;
} kop_app_observed;

/*
 * kop_app_status computes the App's status (*out new) from the App (its spec
 * and current status) and what was observed, at wall time now:
 *   observedGeneration  metadata.generation
 *   replicas, readyReplicas  from the Deployment's status (0 without one)
 *   selector            kop_app_selector
 *   url                 kop_app_url, absent without a port
 *   conditions          Available: True when spec.replicas is 0 (ScaledToZero),
 *                       or when the Deployment has ready replicas and its own
 *                       Available condition is True (when it has none: when
 *                       availableReplicas reaches spec.replicas); else False.
 *                       Progressing: True while the Deployment rolls out (not yet
 *                       observed, replicas not all updated or available), False
 *                       once complete (RolloutComplete) or stuck
 *                       (ProgressDeadlineExceeded).
 *                       Degraded: True with the given reason, or with
 *                       ProgressDeadlineExceeded; else False (ReconcileSucceeded).
 *                       Paused: True while spec.paused; removed otherwise.
 * Conditions follow metav1.Condition: lastTransitionTime (now, whole seconds)
 * changes only when a condition's status changes; reason, message and
 * observedGeneration are refreshed. Conditions of other types that the App's
 * status already has are kept. Errors: KCR_EINVAL, KCR_ERANGE (now out of
 * range), KCR_ENOMEM.
 */
int kop_app_status(const json_t *app, const kop_app_observed *obs, kcr_time_t now, json_t **out,
                   kcr_error_t *err);

/*
 * kop_app_status_changed tells whether status (as kop_app_status made it)
 * differs from the App's current .status, i.e. whether a status write is due.
 */
bool kop_app_status_changed(const json_t *app, const json_t *status);

/*
 * kop_app_status_of is kop_app_status on the typed App: *out is a new typed
 * status (release with app_v1alpha1_status_free). The reconciler's form; the
 * JSON one decodes the App and encodes the answer.
 */
int kop_app_status_of(const app_v1alpha1_t *app, const kop_app_observed *obs, kcr_time_t now,
                      app_v1alpha1_status_t **out, kcr_error_t *err);

/*
 * kop_app_status_differs is kop_app_status_changed for typed values: whether
 * status (borrowed) differs from app->status (generated equality, unknown
 * members included).
 */
bool kop_app_status_differs(const app_v1alpha1_t *app, const app_v1alpha1_status_t *status);

/*
 * kop_condition_set sets a condition in st's conditions (changed in place):
 * kcr_typed_condition_set (kcr/typed.h, apimachinery meta.SetStatusCondition)
 * read at now, after the App's own checks. A new type is appended with
 * lastTransitionTime now; an existing one is updated where it is, keeping its
 * lastTransitionTime unless status changes. status is "True", "False" or
 * "Unknown" and reason non-empty (KCR_EINVAL otherwise); message NULL reads as
 * "". *changed (may be NULL) tells whether anything changed. Errors:
 * KCR_EINVAL, KCR_ERANGE (now), KCR_ENOMEM (st then unchanged).
 */
int kop_condition_set(app_v1alpha1_status_t *st, const char *type, const char *status,
                      const char *reason, const char *message, int64_t generation, kcr_time_t now,
                      bool *changed, kcr_error_t *err);

/* kop_condition_get returns st's condition of that type (borrowed), NULL when absent. */
const kcr_meta_v1_condition_t *kop_condition_get(const app_v1alpha1_status_t *st, const char *type);

/*
 * kop_condition_find returns the condition of that type in a JSON conditions
 * array (borrowed), NULL when absent or conditions is not an array.
 */
json_t *kop_condition_find(const json_t *conditions, const char *type);

/* kop_condition_remove removes st's condition of that type; returns whether it was there. */
bool kop_condition_remove(app_v1alpha1_status_t *st, const char *type);

#endif /* KOP_APP_STATUS_H */
