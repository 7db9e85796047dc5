/* SPDX-License-Identifier: MIT */
/*
 * shard_member_internal.h: the pure part of shard membership
 * (manager/shard_member.c), reachable from the unit tests.
 */
#ifndef KCR_MANAGER_SHARD_MEMBER_INTERNAL_H
#define KCR_MANAGER_SHARD_MEMBER_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "kcr/time.h"

/*
 * kcr__shard_live_members writes into names (cap entries; borrowed from items)
 * the holderIdentity of each Lease of items (a JSON array, borrowed) that is
 * live at wall time now: a non-empty holder, a renewTime (or, without one, an
 * acquireTime) that parses, and leaseDurationSeconds > 0 with renewTime +
 * duration after now. A holder named twice counts once. *n: how many. Returns 0
 * or KCR_ETOOBIG (more than cap live members).
 */
int kcr__shard_live_members(const json_t *items, kcr_time_t now, const char **names, size_t cap,
                            size_t *n);

#endif /* KCR_MANAGER_SHARD_MEMBER_INTERNAL_H */
