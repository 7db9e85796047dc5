/* SPDX-License-Identifier: MIT */
/*
 * shard_member_internal.h: the pure part of shard membership
 * (manager/shard_member.c), reachable from the unit tests.
 */
#ifndef KCR_MANAGER_SHARD_MEMBER_INTERNAL_H
#define KCR_MANAGER_SHARD_MEMBER_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/shard_member.h"
#include "kcr/sharding.h"

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

/*
 * kcr__shard_generation writes the generation of ring (16 hex digits, the
 * FNV-1a of the sorted member names and o's layout and vnodes, and for a
 * balanced ring each member's ranges, which the keys decide) into buf.
 */
void kcr__shard_generation(const kcr_shard_ring_t *ring, const kcr_shard_ring_options *o, char *buf,
                           size_t size);

/* kcr__shard_unchanged_fn: whether Lease name has been seen unchanged for ns. */
typedef bool (*kcr__shard_unchanged_fn)(const char *name, int64_t ns, void *data);

/*
 * kcr__shard_others_released: 1 when every Lease of leases (a list's items)
 * held by another identity than identity has released generation gen
 * (KCR_SHARD_RELEASED_ANNOTATION) or has been unchanged for its
 * leaseDurationSeconds by unchanged; else 0. The handover's rule for growing.
 */
int kcr__shard_others_released(const json_t *leases, const char *identity, const char *gen,
                               kcr__shard_unchanged_fn unchanged, void *data);

/* kcr__shard_member_abandon stops m as a crash would (tests): no drain, and
 * its Lease is left to expire. */
void kcr__shard_member_abandon(kcr_shard_member_t *m);

#endif /* KCR_MANAGER_SHARD_MEMBER_INTERNAL_H */
