/* SPDX-License-Identifier: MIT */
/*
 * cache_internal.h: what test/unit/test_cache.c reaches inside cache.c — the
 * read-your-own-writes bookkeeping.
 */
#ifndef KCR_CACHE_CACHE_INTERNAL_H
#define KCR_CACHE_CACHE_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/cache.h"
#include "kcr/sharding.h"

/*
 * kcr__cache_set_shard shards the cache (the manager's sharding): informers
 * made from now on list and watch set (borrowed, copied) on key, and those
 * made already move to it (kcr_informer_set_shard). 0, KCR_ENOMEM, or the
 * first informer's error. Any thread.
 */
int kcr__cache_set_shard(kcr_cache_t *c, const kcr_shard_set_t *set, kcr_shard_key key,
                         kcr_error_t *err);

/*
 * kcr__cache_shard_keyer: the key a new informer of gvk (borrowed) is sharded
 * on, or -1 to leave it whole (it lists and watches everything, and
 * kcr__cache_set_shard passes it by). Called with the cache's lock held, as
 * each informer is made: must not call back into the cache.
 */
typedef int (*kcr__cache_shard_keyer)(const kcr_gvk *gvk, void *data);

/*
 * kcr__cache_set_shard_keyer makes fn (NULL: none) choose each new informer's
 * key instead of kcr__cache_set_shard's one key for all. Informers made
 * already keep theirs. Any thread.
 */
void kcr__cache_set_shard_keyer(kcr_cache_t *c, kcr__cache_shard_keyer fn, void *data);

/* kcr__cache_pending_writes returns how many noted writes reads still wait for. */
size_t kcr__cache_pending_writes(kcr_cache_t *c);

/*
 * kcr__cache_pending_rv returns the resourceVersion noted for the object with
 * store key key ("ns/name" or "name") of gvk's group and kind, 0 when none.
 */
uint64_t kcr__cache_pending_rv(kcr_cache_t *c, const kcr_gvk *gvk, const char *key);

/*
 * kcr__cache_jittered_period returns period scaled by 0.9 + u / 5 for u in
 * [0, 1) (controller-runtime's resync jitter: [0.9, 1.1) of the period); a
 * period <= 0 is returned as it is.
 */
int64_t kcr__cache_jittered_period(int64_t period, double u);

/* kcr__cache_resync_period returns the cache's resync period (0: none) and
 * in *jitter whether each informer's is jittered. Any thread. */
int64_t kcr__cache_resync_period(kcr_cache_t *c, bool *jitter);

#endif /* KCR_CACHE_CACHE_INTERNAL_H */
