/* SPDX-License-Identifier: MIT */
/*
 * kcr/webhook.h: admission and conversion webhooks (src/server/webhook.c),
 * as controller-runtime's pkg/webhook/admission and pkg/webhook/conversion
 * serve them: an HTTPS server
 * (kcr/server.h with TLS) whose paths are validating or mutating (defaulting)
 * handlers. Each POST carries an AdmissionReview (admission.k8s.io/v1); the
 * handler gets the decoded request (operation, object, old object, user info)
 * and answers allowed or denied with a message and warnings; a mutating
 * handler changes the object in place and the answer carries the JSON Patch
 * (RFC 6902) from the object it got to the one it left. A handler that fails
 * (returns an error) is answered as a denial with code 500 and its message,
 * never a dropped connection; so is a review that does not parse (code 400).
 *
 * Metrics, on the registry given (controller-runtime's names and labels):
 *   controller_runtime_webhook_requests_total{webhook, code}  (code: HTTP status)
 *   controller_runtime_webhook_requests_in_flight{webhook}
 *   controller_runtime_webhook_latency_seconds{webhook}       (histogram)
 * where webhook is the path.
 *
 * A conversion path takes a ConversionReview (apiextensions.k8s.io/v1, or
 * v1beta1: the answer has the request's apiVersion) and calls the handler once
 * per object, in order; the answer's convertedObjects keep that order. Any
 * failure (a handler error, an answer without the desired apiVersion or with
 * another kind, a review that does not parse) is answered with HTTP 200 and
 * result.status "Failure" with a message, so the API server reports the
 * webhook's reason, never a dropped connection.
 *
 * The metrics series are shared by both kinds of path.
 *
 * Typed webhooks sit on top of these handlers: kcr_webhook_server_register_typed
 * (kcr_webhook_for on a manager, kcr/manager.h) decodes each review's objects
 * with a kind's codec from a scheme and calls a defaulter or validator on the
 * generated C struct, at kubebuilder's paths; kcr_webhook_server_register_hub
 * converts between a kind's typed versions through a hub at "/convert".
 */
#ifndef KCR_WEBHOOK_H
#define KCR_WEBHOOK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/loop.h"
#include "kcr/metrics.h"
#include "kcr/scheme.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kcr_admission_request: one AdmissionReview's request, borrowed for the
 * handler's call. object is the object to admit (NULL for DELETE); a mutating
 * handler may change it in place (it is the handler's copy). old_object is
 * set for UPDATE and DELETE. kind and resource are
 * {"group","version","kind"|"resource"} objects; user_info is
 * {"username","uid","groups","extra"}; raw is the whole request object.
 */
typedef struct kcr_admission_request {
  const char *uid;
  const char *operation; /* "CREATE", "UPDATE", "DELETE", "CONNECT" */
  const char *name;      /* may be "" (generateName) */
  const char *namespace_name;
  const char *sub_resource; /* "" without one */
  bool dry_run;
  json_t *kind;
  json_t *resource;
  json_t *object;
  json_t *old_object;
  json_t *user_info;
  json_t *raw;
} kcr_admission_request;

/* kcr_admission_response: the handler's answer; starts allowed, no message. */
typedef struct kcr_admission_response kcr_admission_response;

/* kcr_admission_deny makes the answer a denial (code 403, reason Forbidden)
 * with a message (printf-style; cut at 1 KiB). */
KCR_EXTERN void kcr_admission_deny(kcr_admission_response *r, const char *fmt, ...)
    KCR_PRINTF(2, 3);

/* kcr_admission_warn adds a warning (shown by kubectl; at most 16 kept, each
 * cut at 256 bytes), allowed or not. */
KCR_EXTERN void kcr_admission_warn(kcr_admission_response *r, const char *fmt, ...)
    KCR_PRINTF(2, 3);

/*
 * kcr_admission_cb: a handler. Returns 0 with its answer in resp, or a negative
 * kcr_err (err may carry the message): answered as a denial with code 500.
 * Runs on the webhook server's worker thread, one review at a time.
 */
typedef int (*kcr_admission_cb)(void *data, const kcr_admission_request *req,
                                kcr_admission_response *resp, kcr_error_t *err);

/*
 * kcr_conversion_cb: a conversion handler. object is one of the review's
 * objects (borrowed; the handler must not change it), desired_api_version the
 * review's desiredAPIVersion ("group/version"). Returns 0 with *out the
 * converted object (new: the server takes it), whose apiVersion is
 * desired_api_version and whose kind is object's; or a negative kcr_err with
 * *out NULL (err may carry the message), answered as a Failure naming the
 * object. Objects already at desired_api_version are copied into the answer
 * without a call. Runs on the webhook server's worker thread, one review at a
 * time.
 */
typedef int (*kcr_conversion_cb)(void *data, json_t *object, const char *desired_api_version,
                                 json_t **out, kcr_error_t *err);

/* kcr_webhook_server_t: opaque. */
typedef struct kcr_webhook_server kcr_webhook_server_t;

/*
 * kcr_webhook_server_options: zero-initialise.
 *   bind_address   e.g. ":9443" (controller-runtime's default port); required.
 *   cert_dir       the certificate directory, watched (kcr/server.h);
 *                  NULL: a self-signed in-memory certificate.
 *   cert_name, key_name  NULL: "tls.crt", "tls.key".
 *   cert_poll_interval_ns  0: 10 s.
 *   metrics        registry for the webhook and certwatcher series (borrowed).
 * A review body may be up to 7 MiB (413 beyond), as controller-runtime's
 * webhook reads; the server's clients share a 32 MiB memory budget
 * (kcr/server.h), and a review is decoded only within the bound in
 * docs/reliability.md.
 */
typedef struct kcr_webhook_server_options {
  const char *bind_address;
  const char *cert_dir;
  const char *cert_name;
  const char *key_name;
  int64_t cert_poll_interval_ns;
  kcr_metrics_registry_t *metrics;
} kcr_webhook_server_options;

/* kcr_webhook_server_create makes a server that is not listening yet; options
 * are copied. *out new. Errors: KCR_EINVAL, KCR_ENOMEM. Any thread. */
KCR_EXTERN int kcr_webhook_server_create(const kcr_webhook_server_options *o,
                                         kcr_webhook_server_t **out, kcr_error_t *err);

/*
 * kcr_webhook_server_register_validating / _mutating registers cb(data) for
 * path (copied; starts with '/', unique), as mgr.GetWebhookServer().Register
 * does. Only before kcr_webhook_server_start. Errors: KCR_EINVAL (bad path or
 * started), KCR_EEXIST, KCR_ENOMEM.
 */
KCR_EXTERN int kcr_webhook_server_register_validating(kcr_webhook_server_t *ws, const char *path,
                                                      kcr_admission_cb cb, void *data);
KCR_EXTERN int kcr_webhook_server_register_mutating(kcr_webhook_server_t *ws, const char *path,
                                                    kcr_admission_cb cb, void *data);

/*
 * kcr_webhook_server_register_conversion registers a conversion handler
 * cb(data) for path (the CRD's spec.conversion.webhook.clientConfig path, e.g.
 * "/convert"), with the same rules and errors as _register_validating.
 */
KCR_EXTERN int kcr_webhook_server_register_conversion(kcr_webhook_server_t *ws, const char *path,
                                                      kcr_conversion_cb cb, void *data);

/* ---- typed webhooks (controller-runtime's CustomDefaulter, CustomValidator) ---- */

/*
 * kcr_default_cb: a typed defaulter (admission.CustomDefaulter.Default). obj is
 * the request's object decoded with the kind's codec, the handler's to change in
 * place (with the kind's _mem_ allocations, as the struct's free expects); req
 * is the review (borrowed, for the user, the operation, dry run). Returns 0, or
 * a negative kcr_err that refuses the request as a validator's error does.
 */
typedef int (*kcr_default_cb)(void *data, const kcr_admission_request *req, void *obj,
                              kcr_error_t *err);

/*
 * kcr_validate_cb: a typed validator's ValidateCreate or ValidateDelete
 * (admission.CustomValidator). obj is the decoded object (the request's object
 * for CREATE, its oldObject for DELETE: the object being deleted), borrowed for
 * the call. Warnings go into warnings with kcr_admission_warn (shown by kubectl
 * whether or not the request is allowed). Returns 0 to allow, or a negative
 * kcr_err to refuse: see kcr_webhook_server_register_typed for the answer.
 */
typedef int (*kcr_validate_cb)(void *data, const kcr_admission_request *req, const void *obj,
                               kcr_admission_response *warnings, kcr_error_t *err);

/* kcr_validate_update_cb: ValidateUpdate, with the old and the new object
 * decoded (both borrowed for the call); otherwise as kcr_validate_cb. */
typedef int (*kcr_validate_update_cb)(void *data, const kcr_admission_request *req,
                                      const void *old_obj, const void *new_obj,
                                      kcr_admission_response *warnings, kcr_error_t *err);

/* kcr_custom_defaulter: zero-initialise; default_object required. */
typedef struct kcr_custom_defaulter {
  kcr_default_cb default_object;
  void *data;
} kcr_custom_defaulter;

/* kcr_custom_validator: zero-initialise; a NULL function allows its
 * operation without a call. */
typedef struct kcr_custom_validator {
  kcr_validate_cb validate_create;
  kcr_validate_update_cb validate_update;
  kcr_validate_cb validate_delete;
  void *data;
} kcr_custom_validator;

/*
 * kcr_webhook_mutate_path and kcr_webhook_validate_path write kubebuilder's
 * path for gvk (borrowed) into buf (size bytes): "/mutate-" or "/validate-",
 * the group with each '.' as '-', '-', the version, '-', the kind in lower
 * case (controller-runtime's generateMutatePath). The core group is empty, so
 * a core kind's path has two dashes: "/mutate--v1-configmap". Returns 0,
 * KCR_EINVAL (gvk, its version or its kind missing or empty) or KCR_ETOOBIG
 * (buf too small; buf then holds ""). Any thread.
 */
KCR_EXTERN int kcr_webhook_mutate_path(const kcr_gvk *gvk, char *buf, size_t size);
KCR_EXTERN int kcr_webhook_validate_path(const kcr_gvk *gvk, char *buf, size_t size);

/*
 * kcr_webhook_server_register_typed registers typed webhooks for the kind gvk
 * (borrowed; the scheme s must hold its codec, as kcr-gen's _register puts it,
 * and outlive ws): with d, a mutating handler at kcr_webhook_mutate_path; with
 * v, a validating handler at kcr_webhook_validate_path (d and v are copied;
 * their data must outlive ws). As ctrl.NewWebhookManagedBy(mgr).For(&T{})
 * .WithDefaulter(d).WithValidator(v). Each review's object (and oldObject) is
 * decoded with the kind's codec; an object of another apiVersion or kind, or
 * one that does not decode, is refused with code 400 and the codec's message.
 *
 * Defaulting: DELETE is allowed untouched; otherwise the defaulter runs on the
 * decoded object, which is then encoded, and the answer's JSON Patch is the
 * difference between the request's object and that encoding, less any removal
 * the codec alone makes (a member the decode-encode round trip drops, as
 * controller-runtime drops its scheme's removals): a codec that does not know a
 * field never deletes it.
 *
 * Validating: CREATE calls validate_create(object), UPDATE
 * validate_update(oldObject, object), DELETE validate_delete(oldObject),
 * CONNECT nothing (allowed); another operation is a 400. A callback's error
 * refuses the request, its warnings kept, as controller-runtime does:
 *   - an API error (err->code KCR_EAPI, from a client call or
 *     kcr_error_set_status, as an apierrors.StatusError): its HTTP status,
 *     reason and message;
 *   - KCR_ENOMEM: code 500, reason InternalError;
 *   - any other: code 403, reason Forbidden, err's message (or the code's
 *     description when err is empty).
 * A defaulter's error is answered the same way.
 *
 * Callbacks run on the webhook server's worker, one review at a time. Only
 * before kcr_webhook_server_start. Errors (nothing registered):
 * KCR_EINVAL (no d and no v, a defaulter without default_object, gvk without
 * version or kind, the server started), KCR_ENOENT (gvk not in s), KCR_ENOTSUP
 * (no codec), KCR_EEXIST (a path taken), KCR_ETOOBIG, KCR_ENOMEM.
 */
KCR_EXTERN int kcr_webhook_server_register_typed(kcr_webhook_server_t *ws, const kcr_scheme_t *s,
                                                 const kcr_gvk *gvk, const kcr_custom_defaulter *d,
                                                 const kcr_custom_validator *v, kcr_error_t *err);

/* ---- typed conversion (controller-runtime's Hub and Convertible) ---- */

/*
 * kcr_convert_to_hub_cb converts spoke, a typed value of a spoke version
 * (borrowed), into a new typed value of the hub version in *hub (release with
 * the hub kind's free; kcr does): conversion.Convertible.ConvertTo.
 * kcr_convert_from_hub_cb converts hub (borrowed) into a new spoke value in
 * *spoke: ConvertFrom. Both return 0, or a negative kcr_err with *out NULL
 * (err may carry the message), answered as a Failure naming the object.
 * apiVersion and kind are set by kcr when it encodes. Run on the webhook
 * server's worker, one review at a time.
 */
typedef int (*kcr_convert_to_hub_cb)(void *data, const void *spoke, void **hub, kcr_error_t *err);
typedef int (*kcr_convert_from_hub_cb)(void *data, const void *hub, void **spoke, kcr_error_t *err);

/* kcr_conversion_spoke: one spoke version of the hub's kind and its two
 * conversions; version is copied (group and kind are the hub's). */
typedef struct kcr_conversion_spoke {
  const char *version;
  kcr_convert_to_hub_cb convert_to;
  kcr_convert_from_hub_cb convert_from;
  void *data;
} kcr_conversion_spoke;

/*
 * KCR_WEBHOOK_CONVERT_PATH: where typed conversion is served, as
 * controller-runtime serves it ("/convert", the path a CRD's
 * spec.conversion.webhook.clientConfig names), one path for every kind.
 */
#define KCR_WEBHOOK_CONVERT_PATH "/convert"

/*
 * kcr_webhook_server_register_hub makes the kind hub (borrowed; its version is
 * the hub, as a type with a Hub() method) convertible through its spokes
 * (an array of n, copied) at KCR_WEBHOOK_CONVERT_PATH, every version decoded
 * and encoded with its codec in s (which outlives ws): an object at a spoke
 * version is converted to the hub with that spoke's convert_to, then from the
 * hub to the desired spoke with its convert_from (directly, when either end is
 * the hub), as controller-runtime's conversion webhook does. An object of a
 * kind or version not registered, or that does not decode, fails the review
 * with a message naming it. Several kinds share the path (register each hub
 * once). Only before kcr_webhook_server_start. Errors (nothing registered):
 * KCR_EINVAL (no spokes, a spoke without a version or either function, a
 * spoke at the hub's version or twice, the server started), KCR_ENOENT (a
 * version not in s), KCR_ENOTSUP (no codec), KCR_EEXIST (the kind registered
 * already, or the path taken by an untyped handler), KCR_ENOMEM.
 */
KCR_EXTERN int kcr_webhook_server_register_hub(kcr_webhook_server_t *ws, const kcr_scheme_t *s,
                                               const kcr_gvk *hub,
                                               const kcr_conversion_spoke *spokes, size_t n,
                                               kcr_error_t *err);

/* kcr_webhook_server_start binds and serves on loop (borrowed). Errors as
 * kcr_server_create. Not on the loop thread. */
KCR_EXTERN int kcr_webhook_server_start(kcr_webhook_server_t *ws, kcr_loop_t *loop,
                                        kcr_error_t *err);

/* kcr_webhook_server_stop stops serving (no handler runs once it returns). */
KCR_EXTERN void kcr_webhook_server_stop(kcr_webhook_server_t *ws);

/* kcr_webhook_server_port returns the bound port while serving, else 0. */
KCR_EXTERN int kcr_webhook_server_port(kcr_webhook_server_t *ws);

/* kcr_webhook_server_destroy stops and frees. NULL is ignored. */
KCR_EXTERN void kcr_webhook_server_destroy(kcr_webhook_server_t *ws);

#ifdef __cplusplus
}
#endif

#endif /* KCR_WEBHOOK_H */
