/* SPDX-License-Identifier: MIT */
/*
 * cache_client_internal.h: the cached object client (cache_client.c): reads
 * from a kcr_cache_t, writes through a kcr_client_t, every write asking a
 * fence first. The manager embeds one and hands out its kcr_objclient.
 */
#ifndef KCR_CACHE_CACHE_CLIENT_INTERNAL_H
#define KCR_CACHE_CACHE_CLIENT_INTERNAL_H

#include <stdint.h>

#include "kcr/cache.h"
#include "kcr/client.h"
#include "kcr/discovery.h"
#include "kcr/objclient.h"

/*
 * kcr__cache_client_fence_fn: the write fence. Returns how long, in
 * nanoseconds, writes may still go out: INT64_MAX for no limit, <= 0 to
 * refuse the write. Called before every write, on the writing thread.
 */
typedef int64_t (*kcr__cache_client_fence_fn)(void *data);

/*
 * kcr__cache_client_t: one cached object client. Set by kcr__cache_client_init
 * before the first call, read-only after (any thread). client, mapper and
 * cache are borrowed and must outlive every call.
 */
typedef struct kcr__cache_client {
  kcr_client_t *client;
  kcr_rest_mapper_t *mapper;
  kcr_cache_t *cache;
  kcr__cache_client_fence_fn fence; /* NULL: writes are never fenced */
  void *fence_data;
  kcr_gvk *uncached; /* owned: kinds read from the API server, not the cache */
  size_t n_uncached;
} kcr__cache_client_t;

/* kcr__cache_client_init fills cc: reads from cache, writes through client
 * (kinds resolved by mapper), each write asking fence(fence_data) first
 * (fence NULL: none). */
void kcr__cache_client_init(kcr__cache_client_t *cc, kcr_client_t *client,
                            kcr_rest_mapper_t *mapper, kcr_cache_t *cache,
                            kcr__cache_client_fence_fn fence, void *fence_data);

/* kcr__cache_client_objclient returns the kcr_objclient whose ops are cc's
 * (data cc; no cancel token, no field manager: a controller sets its own). */
kcr_objclient kcr__cache_client_objclient(kcr__cache_client_t *cc);

/* kcr__cache_client_api_reader returns the kcr_objclient that reads (get,
 * list and the metadata reads) through cc's client straight from the API
 * server and refuses every write with KCR_ENOTSUP (mgr.GetAPIReader()). */
kcr_objclient kcr__cache_client_api_reader(kcr__cache_client_t *cc);

/* kcr__cache_client_disable_cache_for makes cc's get and list of the n kinds
 * gvks (copied) go to the API server instead of the cache. After init,
 * before the first call; once. 0, KCR_EINVAL (a kind without version or
 * kind) or KCR_ENOMEM; on failure kcr__cache_client_free still frees what
 * was copied. */
int kcr__cache_client_disable_cache_for(kcr__cache_client_t *cc, const kcr_gvk *gvks, size_t n,
                                        kcr_error_t *err);

/* kcr__cache_client_free releases what cc owns (not client, mapper, cache). */
void kcr__cache_client_free(kcr__cache_client_t *cc);

#endif /* KCR_CACHE_CACHE_CLIENT_INTERNAL_H */
