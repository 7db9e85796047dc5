/* SPDX-License-Identifier: MIT */
/*
 * leaderelection_internal.h: what the rest of the manager layer shares with
 * manager/leaderelection.c.
 */
#ifndef KCR_MANAGER_LEADERELECTION_INTERNAL_H
#define KCR_MANAGER_LEADERELECTION_INTERNAL_H

#include <stddef.h>

/*
 * kcr__leader_identity writes given (when not NULL or "") or else
 * "<hostname>_<uuid v4>", controller-runtime's default identity, into buf (size
 * bytes). Returns 0, KCR_ESYS (no randomness) or KCR_ETOOBIG (it does not fit).
 */
int kcr__leader_identity(const char *given, char *buf, size_t size);

#endif /* KCR_MANAGER_LEADERELECTION_INTERNAL_H */
