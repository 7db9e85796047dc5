/* SPDX-License-Identifier: MIT */
/* manager_internal.h: what serving.c shares with manager.c. */
#ifndef KCR_MANAGER_INTERNAL_H
#define KCR_MANAGER_INTERNAL_H

#include "kcr/manager.h"

/* kcr__manager_serving_slot: where serving.c keeps its state in the manager. */
void **kcr__manager_serving_slot(kcr_manager_t *m);

/* kcr__manager_serving_free releases serving.c's state (NULL is ignored). */
void kcr__manager_serving_free(void *serving);

#endif /* KCR_MANAGER_INTERNAL_H */
