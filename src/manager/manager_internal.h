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

#endif /* KCR_MANAGER_INTERNAL_H */
