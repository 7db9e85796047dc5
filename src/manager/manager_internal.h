/* SPDX-License-Identifier: MIT */
/*
 * manager_internal.h: what manager.c offers the other files of the manager layer
 * (serving.c). The dependency points one way: serving.c calls manager.c, and
 * manager.c calls nothing in serving.c; it only frees what it was handed, through
 * the function handed with it.
 */
#ifndef KCR_MANAGER_INTERNAL_H
#define KCR_MANAGER_INTERNAL_H

#include "kcr/manager.h"

/* kcr__manager_free_fn releases state attached to a manager. */
typedef void (*kcr__manager_free_fn)(void *state);

/*
 * kcr__manager_set_serving attaches serving.c's state to m (stolen: m calls
 * free_fn(state) in kcr_manager_destroy, after the controllers and before the
 * cache and the client). Once per manager: KCR_EEXIST when state is attached
 * already (nothing is taken then). Set-up thread.
 */
int kcr__manager_set_serving(kcr_manager_t *m, void *state, kcr__manager_free_fn free_fn);

/* kcr__manager_serving returns the attached state (borrowed), or NULL. */
void *kcr__manager_serving(kcr_manager_t *m);

/* kcr__manager_check: a check added with kcr_manager_add_healthz_check or
 * _readyz_check (the manager owns name). */
typedef struct kcr__manager_check {
  char *name;
  kcr_probe_kind kind; /* KCR_PROBE_HEALTHZ or KCR_PROBE_READYZ */
  kcr_check_err_cb cb;
  void *data;
} kcr__manager_check;

/* kcr__manager_extra_handler: a handler added with
 * kcr_manager_add_metrics_extra_handler (the manager owns path). */
typedef struct kcr__manager_extra_handler {
  char *path;
  kcr_server_handler_cb cb;
  void *data;
} kcr__manager_extra_handler;

/* kcr__manager_checks returns the added checks (borrowed; *n of them), in the
 * order added. Fixed once run starts: read it from the run thread on. */
const kcr__manager_check *kcr__manager_checks(kcr_manager_t *m, size_t *n);

/* kcr__manager_extra_handlers returns the metrics server's extra handlers
 * (borrowed; *n of them). Fixed once run starts: any thread from then on. */
const kcr__manager_extra_handler *kcr__manager_extra_handlers(kcr_manager_t *m, size_t *n);

#endif /* KCR_MANAGER_INTERNAL_H */
