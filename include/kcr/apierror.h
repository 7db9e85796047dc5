/* SPDX-License-Identifier: MIT */
/*
 * kcr/apierror.h: questions about an error the API server returned, as
 * k8s.io/apimachinery/pkg/api/errors asks them (IsNotFound, IsConflict...).
 *
 * An API error is a kcr_error_t whose code is KCR_EAPI: kcr filled it from the
 * server's metav1.Status (an error response, or a watch ERROR event), or, when the
 * server answered something that was not a Status, synthesized it from the HTTP
 * status as client-go's NewGenericServerResponse does. Every predicate is false
 * for NULL and for any other code (a file that is missing is KCR_ENOENT, never
 * "not found" in this sense).
 *
 * Like apimachinery, a predicate looks at the reason first; only when the reason
 * is not one Kubernetes defines (empty, or a reason kcr does not know) does it
 * fall back to the HTTP status. All are pure functions of err: any thread.
 */
#ifndef KCR_APIERROR_H
#define KCR_APIERROR_H

#include <stdbool.h>

#include "kcr/common.h"
#include "kcr/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_error_is_api tells whether err holds an error the API server returned. */
KCR_EXTERN bool kcr_error_is_api(const kcr_error_t *err);

/* kcr_error_is_not_found: reason NotFound, or HTTP 404 with an unknown reason. */
KCR_EXTERN bool kcr_error_is_not_found(const kcr_error_t *err);

/* kcr_error_is_already_exists: reason AlreadyExists (a create hit an existing name). */
KCR_EXTERN bool kcr_error_is_already_exists(const kcr_error_t *err);

/*
 * kcr_error_is_conflict: reason Conflict ("the object has been modified": re-read
 * and retry), or HTTP 409 with an unknown reason.
 */
KCR_EXTERN bool kcr_error_is_conflict(const kcr_error_t *err);

/* kcr_error_is_invalid: reason Invalid (causes says which fields), or HTTP 422. */
KCR_EXTERN bool kcr_error_is_invalid(const kcr_error_t *err);

/*
 * kcr_error_is_gone: reason Gone or Expired, or HTTP 410 with an unknown reason:
 * the resourceVersion asked for is too old, and a reflector must list again.
 * This is apimachinery's IsGone || IsResourceExpired, the pair client-go's
 * reflector tests together.
 */
KCR_EXTERN bool kcr_error_is_gone(const kcr_error_t *err);

/*
 * kcr_error_is_too_many_requests: reason TooManyRequests, or HTTP 429 whatever
 * the reason (as apimachinery, for compatibility). retry_after_seconds says how
 * long to wait.
 */
KCR_EXTERN bool kcr_error_is_too_many_requests(const kcr_error_t *err);

/* kcr_error_is_forbidden: reason Forbidden, or HTTP 403 with an unknown reason. */
KCR_EXTERN bool kcr_error_is_forbidden(const kcr_error_t *err);

/* kcr_error_is_unauthorized: reason Unauthorized, or HTTP 401 with an unknown reason. */
KCR_EXTERN bool kcr_error_is_unauthorized(const kcr_error_t *err);

/*
 * kcr_error_is_server_timeout: reason ServerTimeout only (the server asks the
 * client to retry; no HTTP status stands for it).
 */
KCR_EXTERN bool kcr_error_is_server_timeout(const kcr_error_t *err);

/* kcr_error_is_timeout: reason Timeout, or HTTP 504 with an unknown reason. */
KCR_EXTERN bool kcr_error_is_timeout(const kcr_error_t *err);

/* kcr_error_is_bad_request: reason BadRequest, or HTTP 400 with an unknown reason. */
KCR_EXTERN bool kcr_error_is_bad_request(const kcr_error_t *err);

/* kcr_error_is_internal_error: reason InternalError, or HTTP 500 with an unknown reason. */
KCR_EXTERN bool kcr_error_is_internal_error(const kcr_error_t *err);

/*
 * kcr_error_is_service_unavailable: reason ServiceUnavailable, or HTTP 503 with an
 * unknown reason.
 */
KCR_EXTERN bool kcr_error_is_service_unavailable(const kcr_error_t *err);

/*
 * kcr_error_set_status records an API error in err, as apimachinery's
 * NewForbidden, NewInvalid or NewConflict build a StatusError: code KCR_EAPI,
 * http_status (100..599), reason (copied, cut at KCR_ERROR_REASON_MAX; NULL:
 * ""), and the message printf-style. The first error wins, as kcr_error_set.
 * Returns KCR_EAPI, or KCR_EINVAL (recorded instead) for a status outside
 * 100..599. A typed webhook answers such an error with its status and reason
 * (kcr_webhook_server_register_typed). Any thread.
 */
KCR_EXTERN int kcr_error_set_status(kcr_error_t *err, int http_status, const char *reason,
                                    const char *fmt, ...) KCR_PRINTF(4, 5);

#ifdef __cplusplus
}
#endif

#endif /* KCR_APIERROR_H */
