/* SPDX-License-Identifier: MIT */
/*
 * controllerutil_internal.h: the owner-reference rules controllerutil.c shares
 * with the typed helpers (src/scheme/typed.c), so both apply one set of rules
 * with one set of messages.
 */
#ifndef KCR_API_CONTROLLERUTIL_INTERNAL_H
#define KCR_API_CONTROLLERUTIL_INTERNAL_H

#include <stdbool.h>

#include "kcr/error.h"
#include "kcr/meta.h"

/*
 * kcr__owner_ref_matches tells whether the owner reference with api_version,
 * kind and ref_name (borrowed; NULL when absent) names the object of kind gvk
 * called name: group, kind and name compared, the version ignored. false when
 * any argument is NULL. Any thread.
 */
bool kcr__owner_ref_matches(const char *api_version, const char *kind, const char *ref_name,
                            const kcr_gvk *gvk, const char *name);

/*
 * kcr__owner_ref_validate is controller-runtime's validateOwner plus field
 * checks, over strings (all borrowed, "" when absent, never NULL): the owner's
 * apiVersion, kind, name and uid must be set; a namespaced owner (ons not "")
 * may own only objects of its namespace (objns). Returns 0 or KCR_EINVAL with
 * the message in err. Any thread.
 */
int kcr__owner_ref_validate(const char *api_version, const char *kind, const char *name,
                            const char *uid, const char *ons, const char *objns, kcr_error_t *err);

#endif /* KCR_API_CONTROLLERUTIL_INTERNAL_H */
