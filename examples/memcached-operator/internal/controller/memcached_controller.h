/* SPDX-License-Identifier: MIT */
/*
 * memcached_controller.h: the Memcached controller of kubebuilder's
 * getting-started tutorial, on kcr's typed objects (docs/tutorial.md). A
 * Memcached (cache.example.com/v1alpha1) asks for spec.size memcached Pods;
 * the reconciler keeps a Deployment of that many replicas, owned by the
 * Memcached, and reports it in status.conditions (Available, and Degraded while
 * a deleted Memcached is being finalized).
 */
#ifndef MEMCACHED_CONTROLLER_H
#define MEMCACHED_CONTROLLER_H

#include <kcr/kcr.h>

#include "controllers.h" /* its memcached_controller_setup must match the one below */

/* MEMCACHED_FINALIZER: the finalizer the reconciler adds to every Memcached. */
#define MEMCACHED_FINALIZER "cache.example.com/finalizer"

/* MEMCACHED_DEFAULT_IMAGE: the operand image when $MEMCACHED_IMAGE is unset. */
#define MEMCACHED_DEFAULT_IMAGE "memcached:1.6.26-alpine3.19"

/*
 * memcached_reconciler_t: what the reconciler needs (the Go tutorial's
 * MemcachedReconciler). Every member is borrowed and must outlive the
 * controller; the reconciler only reads them, so several workers may share one.
 *   scheme    Memcached and Deployment registered (memcached_register_types).
 *   recorder  where the finalizer's Warning Event goes (NULL: none recorded).
 *   image     the memcached image of the Deployment (memcached_image()).
 */
typedef struct memcached_reconciler {
  const kcr_scheme_t *scheme;
  kcr_event_recorder_t *recorder;
  const char *image;
} memcached_reconciler_t;

/*
 * memcached_register_types registers the kinds the reconciler reads and writes
 * in s: Memcached cache.example.com/v1alpha1 and Deployment apps/v1. Errors as
 * kcr_scheme_register.
 */
int memcached_register_types(kcr_scheme_t *s, kcr_error_t *err);

/*
 * memcached_image returns $MEMCACHED_IMAGE when set and not empty, else
 * MEMCACHED_DEFAULT_IMAGE (borrowed: the environment's, or a literal).
 */
const char *memcached_image(void);

/*
 * memcached_reconcile is the kcr_reconcile_fn; data is a memcached_reconciler_t.
 * Runs on a controller worker; reads and writes through kcr_reconcile_client(ctx).
 */
int memcached_reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                        void *data);

/*
 * memcached_controller_setup registers the types in scheme and adds the
 * controller "memcached" to mgr: For Memcached, Owns Deployment
 * (SetupWithManager), with the manager's recorder "memcached-controller" and
 * memcached_image(). Its reconciler lives in a static: once per process, before
 * kcr_manager_run, on the thread that made mgr. The signature is the one
 * controllers.inc expects (kcr-gen create api).
 */
int memcached_controller_setup(kcr_manager_t *mgr, kcr_scheme_t *scheme, kcr_error_t *err);

#endif
