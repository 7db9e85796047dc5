/* SPDX-License-Identifier: MIT */
/*
 * reconciler.h: the App controller's reconcile function (kcr_reconcile_fn) and
 * its settings. Internal to kcr-operator.
 */
#ifndef KOP_RECONCILER_H
#define KOP_RECONCILER_H

#include "kcr/controller.h"
#include "kcr/events.h"
#include "kcr/scheme.h"
#include "kcr/shard_member.h"

/*
 * KOP_APP_CONFLICT_RECHECK_NS: how soon an App in NameConflict is reconciled
 * again (15 s). The object in the way is not the operator's, so it is not in the
 * cache and no event tells the App that it went; this requeue does. Why 15 s:
 * docs/design.md ("NameConflict is re-checked by time").
 */
#define KOP_APP_CONFLICT_RECHECK_NS (15 * KCR_NSEC_PER_SEC)

/*
 * kop_app_directory_memo: what this process wrote to the directory, one
 * entry per App key, so that a pass whose entry is already as wanted sends
 * nothing (reconciler.c, sync_directory). Thread-safe: the controller's
 * workers share it. An entry someone else removes by hand comes back at the
 * App's next change or the operator's next start, not at its next pass.
 */
typedef struct kop_app_directory_memo kop_app_directory_memo;

/* kop_app_directory_memo_create makes an empty memo (*out). 0 or KCR_ENOMEM. */
int kop_app_directory_memo_create(kop_app_directory_memo **out);

/* kop_app_directory_memo_destroy frees it. NULL is ignored. */
void kop_app_directory_memo_destroy(kop_app_directory_memo *m);

/*
 * kop_app_directory_memo_follow tells the memo which shard generation the
 * process works in (kcr_shard_member_generation): when it differs from the
 * last one given, every entry and the kept directory are forgotten. Sharded,
 * an App can move to another replica, which may change its entry, and come
 * back; what this process wrote before the move no longer says what the
 * directory holds. NULL or "" is a generation like any other. Thread-safe.
 */
void kop_app_directory_memo_follow(kop_app_directory_memo *m, const char *generation);

/*
 * kop_app_reconciler: the reconciler's data (borrowed for the controller's life).
 *   directory_namespace  where the ConfigMap app-directory lives: the operator's
 *                        own namespace.
 *   events               where to record what was created, updated, deleted or
 *                        refused, as Events regarding the App (NULL: none).
 *   direct               a client that talks to the API server directly, for
 *                        uncached reads only (writes go through the reconcile's
 *                        fenced object client): a child a create was refused
 *                        for (AlreadyExists), which the cache, holding only
 *                        labelled children, does not have.
 *   memo                 the directory memo (NULL: every pass writes its
 *                        entry, a no-op on the server when it is there).
 *   shard                the manager's shard member when sharded, else NULL:
 *                        the memo follows its generation (above).
 *   scheme               the App's and its children's kinds with kcr-gen's
 *                        codecs (kop_app_scheme_create): the App is read and
 *                        its status written as the generated C type.
 */
typedef struct kop_app_reconciler {
  const char *directory_namespace;
  kcr_event_recorder_t *events;
  kcr_client_t *direct;
  kop_app_directory_memo *memo;
  const kcr_scheme_t *scheme;
  kcr_shard_member_t *shard;
} kop_app_reconciler;

/*
 * kop_app_scheme_create makes a new scheme (*out; kcr_scheme_destroy) with App
 * kcr.dev/v1alpha1, apps/v1 Deployment, v1 Service and v1 ConfigMap and their
 * generated codecs. Returns 0 or kcr_scheme_register's error.
 */
int kop_app_scheme_create(kcr_scheme_t **out, kcr_error_t *err);

/*
 * kop_app_reconcile reconciles one App (data: a kop_app_reconciler). Returns 0,
 * or the error of a failed read or write (the controller then requeues with
 * backoff). A same-named child the App does not control is never touched: the
 * App reports Degraded with reason NameConflict, the pass succeeds and asks to
 * run again after KOP_APP_CONFLICT_RECHECK_NS.
 */
int kop_app_reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                      void *data);

#endif /* KOP_RECONCILER_H */
