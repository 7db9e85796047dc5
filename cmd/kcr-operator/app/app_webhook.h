/* SPDX-License-Identifier: MIT */
/*
 * app_webhook.h: what only a webhook can do for the App (docs/operator.md,
 * "Webhooks"): validation the schema cannot express, defaulting, and the
 * conversion between the served versions v1alpha1 (storage) and v1beta1.
 *
 * The rules and the conversion are pure functions of json_t objects (any
 * thread); kop_app_webhooks_register puts the three handlers on a webhook
 * server at the fixed paths the manifests use. The handlers run on the webhook
 * server's worker thread and share no state.
 */
#ifndef KOP_APP_WEBHOOK_H
#define KOP_APP_WEBHOOK_H

#include <jansson.h>
#include <stddef.h>

#include "kcr/webhook.h"

/*
 * The paths, as kubebuilder names them. The markers under them are where
 * config/webhook/manifests.yaml comes from (`make manifests`, kcr-gen
 * webhook): each path once in C and once in its marker
 * (unit_kcr_gen_webhook_operator_paths holds them together). Both webhooks
 * fail closed, so an App is never stored without its defaults and checks;
 * status writes are not sent (resources=apps only).
 */
/* clang-format off */
// +kubebuilder:webhook:path=/validate-kcr-dev-v1alpha1-app,mutating=false,failurePolicy=fail,sideEffects=None,groups=kcr.dev,resources=apps,verbs=create;update,versions=v1alpha1,name=vapp-v1alpha1.kcr.dev,admissionReviewVersions=v1,timeoutSeconds=10
#define KOP_APP_VALIDATE_PATH "/validate-kcr-dev-v1alpha1-app"
// +kubebuilder:webhook:path=/mutate-kcr-dev-v1alpha1-app,mutating=true,failurePolicy=fail,sideEffects=None,groups=kcr.dev,resources=apps,verbs=create;update,versions=v1alpha1,name=mapp-v1alpha1.kcr.dev,admissionReviewVersions=v1,timeoutSeconds=10
#define KOP_APP_MUTATE_PATH "/mutate-kcr-dev-v1alpha1-app"
/* clang-format on */
#define KOP_APP_CONVERT_PATH "/convert"

/* The served versions. */
#define KOP_APP_V1ALPHA1 "kcr.dev/v1alpha1"
#define KOP_APP_V1BETA1 "kcr.dev/v1beta1"

/*
 * KOP_APP_PORT_NAME_ANNOTATION: where a v1alpha1 App keeps v1beta1's
 * spec.service.portName, which v1alpha1 has no field for. Reserved for the
 * conversion: on a v1alpha1 App with spec.port it becomes portName in v1beta1.
 */
#define KOP_APP_PORT_NAME_ANNOTATION "conversion.kcr.dev/service-port-name"

/* The requests the defaulting webhook gives an App without resources. */
#define KOP_APP_DEFAULT_CPU_REQUEST "10m"
#define KOP_APP_DEFAULT_MEMORY_REQUEST "64Mi"

/*
 * kop_app_validate checks a v1alpha1 App (app borrowed) against the rules the
 * CRD schema cannot express: unique env names, config keys that are ConfigMap
 * keys (Kubernetes' IsConfigMapKey: also refuses a leading ".."), requests not
 * above limits, a valid port name annotation, and, on an update (old not NULL),
 * no port change while spec.paused is true. On an update a rule the old object
 * already broke is not enforced (ratcheting: an App admitted before a rule
 * existed can still be updated, its finalizer removed). Returns the number of
 * problems; msg (size bytes) gets them joined with "; " ("" for none).
 */
int kop_app_validate(json_t *app, json_t *old, char *msg, size_t size);

/*
 * kop_app_warning writes a warning about app (borrowed) into msg (size bytes)
 * and returns 1, or returns 0: an image without a tag or digest, or with
 * ":latest", which rolls out whatever was pushed last.
 */
int kop_app_warning(json_t *app, char *msg, size_t size);

/*
 * kop_app_default sets, in place, what a v1alpha1 App (app borrowed) leaves
 * out: spec.resources.requests (cpu 10m, memory 64Mi) when spec.resources has
 * neither requests nor limits. Returns the number of fields set, or -1 when
 * memory ran out.
 */
int kop_app_default(json_t *app);

/*
 * kop_app_convert converts an App (obj borrowed, kcr.dev/v1alpha1 or v1beta1)
 * to desired ("kcr.dev/v1alpha1" or "kcr.dev/v1beta1"): *out new, a copy with
 * apiVersion desired. v1alpha1 spec.port is v1beta1 spec.service.port;
 * v1beta1 spec.service.portName lives in v1alpha1 as the annotation
 * KOP_APP_PORT_NAME_ANNOTATION. Every other field is copied as it is, so a
 * round trip either way gives back an equal object. Returns 0, or -1 with a
 * message in msg (an unknown version; memory) and *out NULL.
 */
int kop_app_convert(json_t *obj, const char *desired, json_t **out, char *msg, size_t size);

/*
 * kop_app_webhooks_register registers the validating, defaulting and
 * conversion handlers on ws (borrowed) at KOP_APP_VALIDATE_PATH,
 * KOP_APP_MUTATE_PATH and KOP_APP_CONVERT_PATH. Before the server starts.
 * Returns 0 or the first registration's error.
 */
int kop_app_webhooks_register(kcr_webhook_server_t *ws);

#endif /* KOP_APP_WEBHOOK_H */
