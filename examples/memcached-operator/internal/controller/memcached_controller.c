/* SPDX-License-Identifier: MIT */
/*
 * memcached_controller.c: kubebuilder's getting-started Memcached controller
 * (internal/controller/memcached_controller.go, with the finalizer of the
 * operator-sdk version) in C, on typed objects only: the Memcached is
 * api/v1alpha1/memcached_types.h's own memcached_t (kcr-gen codecs), the
 * Deployment the built-in kcr_apps_v1_deployment_t, and both go through the
 * scheme's codecs (kcr_typed_get / _create / _update). A misspelt field is a
 * compile error.
 *
 * One pass, in the order of the Go tutorial:
 *   1. read the Memcached; gone: nothing to do (its Deployment goes with it,
 *      by the garbage collector, through the owner reference);
 *   2. no conditions yet: Available=Unknown "Reconciling";
 *   3. add the finalizer;
 *   4. being deleted: Degraded=Unknown, a Warning Event "Deleting",
 *      Degraded=True, remove the finalizer, stop;
 *   5. no Deployment: build it (owner reference, labels, restricted security
 *      context), create it, requeue after a minute;
 *   6. replicas differ from spec.size: update the Deployment, requeue;
 *   7. Available=True.
 * A failure to build, create or resize the Deployment is also written as
 * Available=False with the error's message, then returned (the controller
 * retries with backoff). Each write replaces the Memcached with the server's
 * answer, so the next write carries the newest resourceVersion (the Go
 * tutorial re-reads for the same reason). Status is written only when a
 * condition changed, so a steady state makes no writes.
 *
 * The RBAC this controller needs, for `kcr-gen rbac`:
 * +kcr:rbac:groups=cache.example.com,resources=memcacheds,verbs=get;list;watch;create;update;patch;delete
 * +kcr:rbac:groups=cache.example.com,resources=memcacheds/status,verbs=get;update;patch
 * +kcr:rbac:groups=cache.example.com,resources=memcacheds/finalizers,verbs=update
 * +kcr:rbac:groups=core,resources=events,verbs=create;patch
 * +kcr:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
 * +kcr:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
 * +kcr:rbac:groups=core,resources=pods,verbs=get;list;watch
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <kcr/kcr.h>

#include "kcr/k8s/apps_v1.h"
#include "memcached_codecs.h"
#include "memcached_controller.h"

static const kcr_gvk MEMCACHED = {MEMCACHED_GROUP, MEMCACHED_VERSION, MEMCACHED_KIND};
static const kcr_gvk DEPLOYMENT = {"apps", "v1", "Deployment"};

int memcached_register_types(kcr_scheme_t *s, kcr_error_t *err) {
  int rc = memcached_register(s, err);
  return rc ? rc : kcr_apps_v1_deployment_register(s, err);
}

const char *memcached_image(void) {
  const char *image = getenv("MEMCACHED_IMAGE");
  return image && *image ? image : MEMCACHED_DEFAULT_IMAGE;
}

/* size is spec.size; absent, 0 (Go's zero value: the tutorial has no default). */
static int32_t size(const memcached_t *m) {
  return m->spec.size ? *m->spec.size : 0;
}

/*
 * save writes *m (its status subresource when sub is "status") and replaces *m
 * with the server's answer, the object as it now is.
 */
static int save(const kcr_objclient *c, const kcr_scheme_t *s, memcached_t **m, const char *sub,
                kcr_error_t *err) {
  void *out = NULL;
  int rc = kcr_typed_update(c, s, &MEMCACHED, *m, sub, &out, err);
  if (rc == 0) {
    memcached_free(*m);
    *m = out;
  }
  return rc;
}

/*
 * set_condition sets the condition type (meta.SetStatusCondition) and writes
 * the status when that changed it. The message is formatted first, so it may
 * quote err->message.
 */
KCR_PRINTF(8, 9)
static int set_condition(const kcr_objclient *c, const kcr_scheme_t *s, memcached_t **m,
                         const char *type, const char *status, const char *reason, kcr_error_t *err,
                         const char *fmt, ...) {
  char msg[1024];
  bool changed = false;
  va_list ap;
  int rc;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  rc = kcr_typed_condition_set(KCR_CONDITION_LIST(&(*m)->status.conditions), type, status, reason,
                               (*m)->metadata.generation, NULL, &changed, "%s", msg);
  if (rc != 0)
    return kcr_error_set(err, rc, "memcached: set condition %s: %s", type, kcr_strerror(rc));
  return changed ? save(c, s, m, "status", err) : 0;
}

/*
 * NEW, DUP and STRV allocate with the types' allocator or jump to nomem (STRV:
 * a list of strings, from an array); SET sets an optional scalar and its has_.
 */
#define NEW(p)                                                                                     \
  if (((p) = kcr_apps_v1_mem_calloc(1, sizeof(*(p)))) == NULL)                                     \
  goto nomem
#define DUP(p, str)                                                                                \
  if (((p) = kcr_apps_v1_mem_strdup(str)) == NULL)                                                 \
  goto nomem
#define STRV(o, f, src)                                                                            \
  if (strv(&(o)->f, &(o)->f##_len, &(o)->has_##f, src, sizeof(src) / sizeof(*(src))) != 0)         \
  goto nomem
#define SET(o, f, v) ((o)->f = (v), (o)->has_##f = true)

/* strv makes *v a copy of the n strings of src (a container's command, a capability list). */
static int strv(char ***v, size_t *len, bool *has, const char *const *src, size_t n) {
  if ((*v = kcr_apps_v1_mem_calloc(n, sizeof(**v))) == NULL)
    return KCR_ENOMEM;
  *len = n;
  *has = true;
  for (size_t i = 0; i < n; i++)
    if (((*v)[i] = kcr_apps_v1_mem_strdup(src[i])) == NULL)
      return KCR_ENOMEM;
  return 0;
}

/*
 * deployment_for makes *out the Deployment of m (deploymentForMemcached); also
 * on failure but out of memory, so the caller always frees it.
 */
static int deployment_for(const memcached_t *m, const char *image, kcr_apps_v1_deployment_t **out,
                          kcr_error_t *err) {
  static const char *const command[] = {"memcached", "--memory-limit=64", "-o", "modern", "-v"};
  static const char *const drop[] = {"ALL"};
  const char *const labels[][2] = {{"app.kubernetes.io/name", "memcached-operator"},
                                   {"app.kubernetes.io/instance", m->metadata.name},
                                   {"app.kubernetes.io/managed-by", "MemcachedController"}};
  kcr_apps_v1_deployment_t *d = NULL;
  kcr_core_v1_pod_template_spec_t *tmpl;
  kcr_core_v1_pod_spec_t *pod;
  kcr_core_v1_container_t *ctr;
  kcr_core_v1_security_context_t *sc;

  *out = NULL;
  NEW(d);
  DUP(d->api_version, "apps/v1");
  DUP(d->kind, "Deployment");
  NEW(d->metadata);
  DUP(d->metadata->name, m->metadata.name);
  DUP(d->metadata->namespace, m->metadata.namespace);
  NEW(d->spec);
  SET(d->spec, replicas, size(m));
  NEW(d->spec->selector);
  NEW(d->spec->template);
  tmpl = d->spec->template;
  NEW(tmpl->metadata);
  for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
    if (kcr_typed_label_set(tmpl->metadata, labels[i][0], labels[i][1]) != 0 ||
        kcr_typed_label_set(d->metadata, labels[i][0], labels[i][1]) != 0)
      goto nomem;
  if (kcr_typed_selector_match_labels(d->spec->selector, tmpl->metadata) != 0)
    goto nomem;
  NEW(tmpl->spec);
  pod = tmpl->spec;
  NEW(pod->security_context);
  SET(pod->security_context, run_as_non_root, true);
  NEW(pod->security_context->seccomp_profile);
  DUP(pod->security_context->seccomp_profile->type, "RuntimeDefault");
  if ((ctr = pod->containers = kcr_apps_v1_mem_calloc(1, sizeof(*ctr))) == NULL)
    goto nomem;
  pod->containers_len = 1;
  DUP(ctr->name, "memcached");
  DUP(ctr->image, image);
  DUP(ctr->image_pull_policy, "IfNotPresent");
  STRV(ctr, command, command);
  if ((ctr->ports = kcr_apps_v1_mem_calloc(1, sizeof(*ctr->ports))) == NULL)
    goto nomem;
  ctr->ports_len = 1;
  ctr->has_ports = true;
  ctr->ports[0].container_port = 11211;
  DUP(ctr->ports[0].name, "memcached");
  NEW(ctr->security_context); /* restricted: the Pod Security Standard */
  sc = ctr->security_context;
  SET(sc, run_as_non_root, true);
  SET(sc, run_as_user, 1001); /* the image's user is not numeric */
  SET(sc, allow_privilege_escalation, false);
  NEW(sc->capabilities);
  STRV(sc->capabilities, drop, drop);
  *out = d;
  /* the garbage collector deletes the Deployment with its Memcached */
  return kcr_typed_owner_ref_set_controller(&MEMCACHED, &m->metadata, d->metadata, err);
nomem:
  kcr_apps_v1_deployment_free(d);
  return kcr_error_set(err, KCR_ENOMEM, "memcached: deployment: out of memory");
}

/* finalize is the deletion branch: report, record the Event, let the object go. */
static int finalize(const memcached_reconciler_t *r, const kcr_objclient *c, memcached_t **m,
                    kcr_error_t *err) {
  int rc = set_condition(c, r->scheme, m, "Degraded", "Unknown", "Finalizing", err,
                         "Performing finalizer operations for the custom resource: %s ",
                         (*m)->metadata.name);
  if (rc != 0)
    return rc;
  /* The cleanup that is not an owned object's goes here; this one only tells. */
  if (r->recorder)
    kcr_event_record_meta(r->recorder, &MEMCACHED, &(*m)->metadata, KCR_EVENT_WARNING, "Deleting",
                          "Finalize", "Custom Resource %s is being deleted from the namespace %s",
                          (*m)->metadata.name, (*m)->metadata.namespace);
  rc = set_condition(c, r->scheme, m, "Degraded", "True", "Finalizing", err,
                     "Finalizer operations for custom resource %s name were successfully "
                     "accomplished",
                     (*m)->metadata.name);
  if (rc != 0)
    return rc;
  kcr_typed_finalizer_remove(&(*m)->metadata, MEMCACHED_FINALIZER, NULL);
  /* the last finalizer gone, the server deletes the object: no answer is kept */
  return kcr_typed_update(c, r->scheme, &MEMCACHED, *m, NULL, NULL, err);
}

/* ensure_deployment is steps 5 to 7: the Deployment exists, at spec.size replicas. */
static int ensure_deployment(const memcached_reconciler_t *r, const kcr_objclient *c,
                             memcached_t **m, kcr_result *res, kcr_error_t *err) {
  const char *name = (*m)->metadata.name, *ns = (*m)->metadata.namespace;
  kcr_apps_v1_deployment_t *found = NULL;
  int32_t want = size(*m);
  int rc;

  rc = kcr_ignore_not_found(
      kcr_typed_get(c, r->scheme, &DEPLOYMENT, ns, name, (void **)&found, err), err);
  if (rc != 0)
    return rc;
  if (found == NULL) {
    if ((rc = deployment_for(*m, r->image, &found, err)) == 0)
      rc = kcr_typed_create(c, r->scheme, &DEPLOYMENT, found, NULL, err);
    kcr_apps_v1_deployment_free(found);
    if (rc != 0) {
      set_condition(c, r->scheme, m, "Available", "False", "Reconciling", err,
                    "Failed to create Deployment for the custom resource (%s): (%s)",
                    (*m)->metadata.name, err->message);
      return rc;
    }
    res->requeue_after_ns = 60 * (int64_t)1000000000; /* look again once it has settled */
    return 0;
  }
  /* the server defaults replicas to 1 */
  if (found->spec && (found->spec->has_replicas ? found->spec->replicas : 1) != want) {
    SET(found->spec, replicas, want);
    rc = kcr_typed_update(c, r->scheme, &DEPLOYMENT, found, NULL, NULL, err);
    kcr_apps_v1_deployment_free(found);
    if (rc != 0) {
      set_condition(c, r->scheme, m, "Available", "False", "Resizing", err,
                    "Failed to update the size for the custom resource (%s): (%s)",
                    (*m)->metadata.name, err->message);
      return rc;
    }
    res->requeue = true; /* read the new state before reporting it */
    return 0;
  }
  kcr_apps_v1_deployment_free(found);
  return set_condition(c, r->scheme, m, "Available", "True", "Reconciling", err,
                       "Deployment for custom resource (%s) with %d replicas created successfully",
                       (*m)->metadata.name, (int)want);
}

int memcached_reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                        void *data) {
  const memcached_reconciler_t *r = data;
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  kcr_error_t *err = kcr_reconcile_err(ctx);
  memcached_t *m = NULL;
  int rc;

  rc = kcr_ignore_not_found(
      kcr_typed_get(c, r->scheme, &MEMCACHED, req->ns, req->name, (void **)&m, err), err);
  if (rc != 0 || m == NULL)
    return rc; /* deleted: the garbage collector takes the Deployment */
  if (m->status.conditions.len == 0) {
    rc = set_condition(c, r->scheme, &m, "Available", "Unknown", "Reconciling", err,
                       "Starting reconciliation");
    if (rc != 0)
      goto out;
  }
  /* a deleting object takes no new finalizer (the server refuses it) */
  if (!m->metadata.deletion_timestamp &&
      !kcr_typed_finalizer_contains(&m->metadata, MEMCACHED_FINALIZER)) {
    kcr_reconcile_log(ctx, KCR_LOG_INFO, "adding finalizer for Memcached");
    if ((rc = kcr_typed_finalizer_add(&m->metadata, MEMCACHED_FINALIZER, NULL)) != 0 ||
        (rc = save(c, r->scheme, &m, NULL, err)) != 0)
      goto out;
  }
  if (m->metadata.deletion_timestamp != NULL) {
    if (kcr_typed_finalizer_contains(&m->metadata, MEMCACHED_FINALIZER)) {
      kcr_reconcile_log(ctx, KCR_LOG_INFO, "performing finalizer operations for Memcached");
      rc = finalize(r, c, &m, err);
    }
    goto out;
  }
  rc = ensure_deployment(r, c, &m, res, err);
out:
  memcached_free(m);
  return rc;
}

int memcached_controller_setup(kcr_manager_t *mgr, kcr_scheme_t *scheme, kcr_error_t *err) {
  static memcached_reconciler_t reconciler; /* one manager per process */
  memcached_reconciler_t *r = &reconciler;
  kcr_controller_options o = {0};
  kcr_controller_t *ctl = NULL;
  int rc;

  if ((rc = memcached_register_types(scheme, err)) != 0)
    return rc;
  r->scheme = scheme;
  r->recorder = kcr_manager_event_recorder(mgr, "memcached-controller");
  r->image = memcached_image();
  o.name = "memcached";
  o.reconcile = memcached_reconcile;
  o.data = r;
  if ((rc = kcr_manager_add_controller(mgr, &o, &ctl, err)) != 0 ||
      (rc = kcr_controller_for(ctl, &MEMCACHED, NULL, err)) != 0)
    return rc;
  return kcr_controller_owns(ctl, &DEPLOYMENT, NULL, err);
}
