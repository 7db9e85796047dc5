/* SPDX-License-Identifier: MIT */
/*
 * app_desired.h: what the App asks for, as pure functions (part of kcr-operator's
 * kop library, not of libkcr; public kcr headers only): the App's constants, the
 * children it wants (Deployment, Service, ConfigMap), ownership, drift checks and
 * merges, and its entry in the directory ConfigMap. The status half is
 * app_status.h.
 *
 * Everything here takes borrowed objects and returns new ones, performs no
 * I/O and reads no clock: the reconciler (reconciler.c)
 * fetches the App and its children, calls these functions to decide what
 * the world should look like, and writes the difference. That split keeps every
 * rule of the App contract (issue 8, docs/operator.md) testable with JSON
 * fixtures alone.
 *
 * Errors follow kcr's model: 0 or a negative kcr_err, *out NULL on failure, err
 * may be NULL. KCR_EINVAL means the App is malformed (no name, namespace, uid or
 * spec.image: the API server's schema normally prevents it); KCR_ENOMEM means an
 * allocation failed. Any thread; no function keeps state.
 */
#ifndef KOP_APP_DESIRED_H
#define KOP_APP_DESIRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "app_v1alpha1.h"
#include "kcr/error.h"
#include "kcr/k8s/apps_v1.h"
#include "kcr/k8s/core_v1.h"
#include "kcr/meta_v1.h"
#include "kcr/time.h"

/* The App resource: group, version, kind, plural and the apiVersion of its objects. */
#define KOP_APP_GROUP "kcr.dev"
#define KOP_APP_VERSION "v1alpha1"
#define KOP_APP_API_VERSION "kcr.dev/v1alpha1"
#define KOP_APP_KIND "App"
#define KOP_APP_RESOURCE "apps"

/* KOP_APP_FINALIZER guards the App's entry in the directory ConfigMap. */
#define KOP_APP_FINALIZER "kcr.dev/directory"

/* KOP_APP_DIRECTORY_NAME is the ConfigMap, in the operator's namespace, listing App URLs. */
#define KOP_APP_DIRECTORY_NAME "app-directory"

/* The labels every child carries, and the value of managed-by. */
#define KOP_APP_LABEL_NAME "app.kubernetes.io/name"
#define KOP_APP_LABEL_INSTANCE "app.kubernetes.io/instance"
#define KOP_APP_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
#define KOP_APP_MANAGED_BY "kcr-operator"

/* KOP_APP_CONFIG_HASH_ANNOTATION: pod-template annotation holding the config's hash. */
#define KOP_APP_CONFIG_HASH_ANNOTATION "kcr.dev/config-hash"

/* KOP_APP_CONFIG_HASH_LEN: hex digits of that hash (the first 64 bits of SHA-256). */
#define KOP_APP_CONFIG_HASH_LEN 16

/* The container's name, and where the config files are mounted. */
#define KOP_APP_CONTAINER "app"
#define KOP_APP_CONFIG_MOUNT "/etc/app"
#define KOP_APP_CONFIG_VOLUME "config"

/* KOP_APP_CONFIG_SUFFIX: the ConfigMap of an App named N is N + this. */
#define KOP_APP_CONFIG_SUFFIX "-config"

/* The condition types an App reports. */
#define KOP_APP_COND_AVAILABLE "Available"
#define KOP_APP_COND_PROGRESSING "Progressing"
#define KOP_APP_COND_DEGRADED "Degraded"
#define KOP_APP_COND_PAUSED "Paused"

/* The reason of Degraded when a same-named child exists that the App does not own. */
#define KOP_APP_REASON_NAME_CONFLICT "NameConflict"

/* KOP_APP_URL_MAX: a buffer of this size holds any URL kop_app_url makes. */
#define KOP_APP_URL_MAX 384

/* kop_app_replicas returns spec.replicas, or the schema's default 1 when absent. */
int64_t kop_app_replicas(const app_v1alpha1_t *app);

/* kop_app_port returns spec.port, or 0 when it is unset. */
int kop_app_port(const app_v1alpha1_t *app);

/* kop_app_has_config tells whether spec.config has an entry (Go's len > 0). */
bool kop_app_has_config(const app_v1alpha1_t *app);

/* kop_app_paused tells whether spec.paused is true. */
bool kop_app_paused(const app_v1alpha1_t *app);

/*
 * kop_app_config_hash writes the hash of spec.config into out
 * (KOP_APP_CONFIG_HASH_LEN hex digits and a NUL): SHA-256 over the config's
 * canonical JSON (keys sorted, compact, strings escaped as jansson writes
 * them), truncated. Equal configs give equal hashes whatever their key order;
 * an App without config hashes "{}". Returns 0, KCR_ENOMEM, or KCR_EINTERNAL
 * when OpenSSL fails.
 */
int kop_app_config_hash(const app_v1alpha1_t *app, char out[KOP_APP_CONFIG_HASH_LEN + 1],
                        kcr_error_t *err);

/*
 * kop_app_directory_key writes the App's directory key "<namespace>.<name>"
 * into buf. Returns its length or KCR_ETOOBIG.
 */
int kop_app_directory_key(const app_v1alpha1_t *app, char *buf, size_t size);

/*
 * kop_app_desired_directory returns a new, empty ConfigMap app-directory in
 * namespace ns (labels managed-by kcr-operator, "data": {}), to create when it
 * does not exist yet. NULL when out of memory.
 */
json_t *kop_app_desired_directory(const char *ns);

/* ---- the typed App and its typed children ----
 *
 * The reconciler reads the App once per pass as the C type kcr-gen generates
 * from the CRD (app_v1alpha1_t, build/.../app_v1alpha1.h) and its children as
 * libkcr's built-in types (kcr/k8s/apps_v1.h, core_v1.h). A child is brought in
 * line the controller-runtime way: decode what the server has, apply the App's
 * fields onto it (a mutate function: kop_app_mutate_*), and write it back only
 * when it is no longer _equal to what was read. The mutation sets only what the
 * App decides, so the server's defaults (a Service's clusterIP, a container's
 * imagePullPolicy, a volume's defaultMode) and fields the decoder does not know
 * (kcr_unknown) are kept and never count as drift. app is borrowed.
 */

/*
 * kop_app_decode decodes app (JSON) into *out (new; release with
 * app_v1alpha1_free) and checks it (kop_app_check). Errors: KCR_EINVAL
 * (not an App: a member of the wrong type, or a check failed, naming the
 * field), KCR_ENOMEM; *out NULL on failure.
 */
int kop_app_decode(const json_t *app, app_v1alpha1_t **out, kcr_error_t *err);

/*
 * kop_app_check verifies the fields every other function relies on:
 * metadata.name, metadata.namespace, metadata.uid and spec.image non-empty;
 * spec.replicas, when present, in 0..1000 and spec.port, when present, in
 * 1..65535. Returns 0 or KCR_EINVAL naming the field.
 */
int kop_app_check(const app_v1alpha1_t *app, kcr_error_t *err);

/*
 * kop_app_selector writes the pods' label selector in string form,
 * "app.kubernetes.io/name=N,app.kubernetes.io/instance=N", into buf;
 * kop_app_url writes "http://<name>.<namespace>.svc:<port>" when spec.port
 * is set (0 and "" when it is not). Both return the length, or KCR_ETOOBIG
 * when size is too small.
 */
int kop_app_selector(const app_v1alpha1_t *app, char *buf, size_t size);
int kop_app_url(const app_v1alpha1_t *app, char *buf, size_t size);

/*
 * kop_app_identity returns a new object {apiVersion, kind, metadata} whose
 * metadata is the App's own (shared, not copied): what the generic helpers that
 * read an object's identity take (kcr_meta_*, the finalizer patches, Events).
 * NULL when out of memory.
 */
json_t *kop_app_identity(const app_v1alpha1_t *app);

/*
 * kop_app_owns tells whether the child whose metadata is child is controlled
 * by this App: its controller ownerReference has kind App, an apiVersion of
 * group kcr.dev and the App's uid. A child with no controller, or another
 * controller, is not owned, and the reconciler must not take it over
 * (Degraded, reason NameConflict).
 */
bool kop_app_owns(const app_v1alpha1_t *app, const kcr_meta_v1_object_meta_t *child);

/*
 * kop_app_mutate_deployment applies the App's fields onto d (the Deployment as
 * read, or a skeleton naming it; edited in place with the generated types'
 * allocator): the child labels and the App's controller reference on its
 * metadata (other labels and references kept; KCR_EEXIST when another
 * controller owns it); spec.replicas as the App's (0 stays 0, absent 1); the
 * selector's and template's labels name and instance (and managed-by on the
 * template); one container "app" (the one there is kept with what the server
 * defaulted in it, any other container dropped) with the image, env (name and
 * value, an empty value left out as the API server does), resources and, when
 * spec.port is set, a containerPort "http"; when config is set, a volume
 * "config" from ConfigMap N-config (the only volume; an existing one keeps its
 * defaultMode) mounted read-only at /etc/app and the template annotation
 * kcr.dev/config-hash, all three removed when the App has no config. Errors:
 * KCR_EINVAL (kop_app_check), KCR_EEXIST, KCR_ENOMEM (d then half
 * edited: drop it).
 */
int kop_app_mutate_deployment(const app_v1alpha1_t *app, kcr_apps_v1_deployment_t *d,
                              kcr_error_t *err);

/*
 * kop_app_mutate_service applies the App's fields onto s: the metadata as for
 * the Deployment, type ClusterIP, the selector keys name and instance (others
 * kept), one TCP port "http" with port and targetPort spec.port (an existing
 * "http" port keeps its other fields; any other port dropped). KCR_EINVAL when
 * the App has no port. Other errors as kop_app_mutate_deployment.
 */
int kop_app_mutate_service(const app_v1alpha1_t *app, kcr_core_v1_service_t *s, kcr_error_t *err);

/*
 * kop_app_mutate_configmap applies the App's fields onto cm: the metadata as
 * for the Deployment, and data exactly spec.config (keys the config dropped
 * go). Errors as kop_app_mutate_deployment.
 */
int kop_app_mutate_configmap(const app_v1alpha1_t *app, kcr_core_v1_config_map_t *cm,
                             kcr_error_t *err);

/*
 * kop_app_desired_{deployment,service,configmap}_of build the child the App
 * asks for (*out new; release with the type's _free): a skeleton (apiVersion,
 * kind, name, namespace) with the mutation above applied, which is what is
 * created when the child does not exist. The Service is named like the App and
 * *out is NULL (0 returned) when the App has no port; the ConfigMap is N-config
 * and *out is NULL when the App has no config: a child that exists must then be
 * deleted if the App owns it. Errors as the mutations, KCR_ETOOBIG (name).
 */
int kop_app_desired_deployment(const app_v1alpha1_t *app, kcr_apps_v1_deployment_t **out,
                               kcr_error_t *err);
int kop_app_desired_service(const app_v1alpha1_t *app, kcr_core_v1_service_t **out,
                            kcr_error_t *err);
int kop_app_desired_configmap(const app_v1alpha1_t *app, kcr_core_v1_config_map_t **out,
                              kcr_error_t *err);

/*
 * kop_app_child_kind: one kind of child, its functions on void * values of
 * its type, for the reconciler's loop over kop_app_children (Deployment,
 * Service, ConfigMap, in that order). The child of an App named N is called N
 * + suffix.
 */
typedef struct kop_app_child_kind {
  const char *kind;
  kcr_gvk gvk;
  kcr_gvr gvr; /* for uncached reads through the direct client */
  const char *suffix;
  int (*desired)(const app_v1alpha1_t *app, void **out, kcr_error_t *err);
  int (*mutate)(const app_v1alpha1_t *app, void *obj, kcr_error_t *err);
  int (*decode)(const json_t *json, void **out, kcr_error_t *err);
  int (*encode)(const void *obj, json_t **out, kcr_error_t *err);
  int (*copy)(const void *obj, void **out, kcr_error_t *err);
  bool (*equal)(const void *a, const void *b);
  void (*release)(void *obj);
  const kcr_meta_v1_object_meta_t *(*meta)(const void *obj);
} kop_app_child_kind;

#define KOP_APP_CHILDREN 3
extern const kop_app_child_kind kop_app_children[KOP_APP_CHILDREN];

/*
 * kop_app_child_update brings have (a child of kind k as read, borrowed) in
 * line with the App: *after is a new copy of it with k->mutate applied, and
 * *changed tells whether it differs from have (k->equal). Unchanged, the
 * reconciler writes nothing, which is what keeps it out of hot loops; changed,
 * *after is what to PUT. Errors: the mutation's, KCR_EINVAL (have NULL),
 * KCR_ENOMEM; *after NULL on failure.
 */
int kop_app_child_update(const kop_app_child_kind *k, const app_v1alpha1_t *app, const void *have,
                         void **after, bool *changed, kcr_error_t *err);

/*
 * kop_app_directory_want writes the App's directory key "<namespace>.<name>"
 * into key and sets *want to the entry it wants: url (the App's URL, written
 * there) or NULL when the entry must go (remove, the App is being deleted, or
 * it has no port): the rule kop_app_directory_apply then applies. Errors:
 * KCR_ETOOBIG (*want NULL).
 */
int kop_app_directory_want(const app_v1alpha1_t *app, bool remove, char *key, size_t key_size,
                           char *url, size_t url_size, const char **want, kcr_error_t *err);

/*
 * kop_app_directory_apply sets the entry key of the directory ConfigMap dir
 * (borrowed, changed in place) to want, or removes key when want is NULL;
 * *changed tells whether dir changed, so that the caller writes only then.
 * Errors: KCR_EINVAL (dir or key NULL), KCR_ENOMEM (dir then unchanged).
 */
int kop_app_directory_apply(kcr_core_v1_config_map_t *dir, const char *key, const char *want,
                            bool *changed, kcr_error_t *err);

#endif /* KOP_APP_DESIRED_H */
