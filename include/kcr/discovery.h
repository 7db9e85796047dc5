/* SPDX-License-Identifier: MIT */
/*
 * kcr/discovery.h: which resources the API server serves, and the REST mapper
 * that turns a kind (kcr_gvk) into the resource a URL names and says whether it
 * is namespaced — client-go's discovery client and controller-runtime's lazy
 * REST mapper. The mapper is kcr's one answer to kind -> resource: the cache,
 * the informer, the cached client and the manager all ask it.
 *
 * Discovery prefers the aggregated form (apidiscovery.k8s.io/v2: two requests for
 * the whole server) and falls back to the per-group-version documents on servers
 * that do not offer it. The mapper is lazy: a kind it does not know triggers a
 * fresh discovery (at most once per second), so a CRD installed after start is
 * found without a restart.
 */
#ifndef KCR_DISCOVERY_H
#define KCR_DISCOVERY_H

#include "kcr/client.h"
#include "kcr/common.h"
#include "kcr/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes of kcr_rest_mapping's fields, NUL included (DNS subdomain names fit). */
#define KCR_MAPPING_NAME_MAX 256
#define KCR_MAPPING_VERSION_MAX 64

/*
 * kcr_rest_mapping: one kind's REST mapping, as plain data (copy freely). The
 * kcr_gvk and kcr_gvr returned by kcr_rest_mapping_gvk and _gvr point into it.
 */
typedef struct kcr_rest_mapping {
  char group[KCR_MAPPING_NAME_MAX];
  char version[KCR_MAPPING_VERSION_MAX];
  char kind[KCR_MAPPING_NAME_MAX];
  char resource[KCR_MAPPING_NAME_MAX];
  int namespaced;
} kcr_rest_mapping;

/* kcr_rest_mapping_gvk returns m's kind (strings borrowed from m). Any thread. */
KCR_EXTERN kcr_gvk kcr_rest_mapping_gvk(const kcr_rest_mapping *m);

/* kcr_rest_mapping_gvr returns m's group, version and resource (borrowed from m). */
KCR_EXTERN kcr_gvr kcr_rest_mapping_gvr(const kcr_rest_mapping *m);

/* kcr_rest_mapper_t: opaque, thread-safe. */
typedef struct kcr_rest_mapper kcr_rest_mapper_t;

/*
 * kcr_rest_mapper_create makes a mapper that discovers through client (borrowed;
 * must outlive the mapper). Nothing is fetched until the first lookup. Returns 0
 * or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_rest_mapper_create(kcr_client_t *client, kcr_rest_mapper_t **out,
                                      kcr_error_t *err);

/* kcr_rest_mapper_destroy frees the mapper. NULL is ignored. */
KCR_EXTERN void kcr_rest_mapper_destroy(kcr_rest_mapper_t *m);

/*
 * kcr_rest_mapper_mapping_for_kind finds the mapping of gvk (borrowed) at
 * gvk->version (NULL or "": the server's preferred version); gvk->group "" or
 * NULL is the core group. On a miss it rediscovers (unless it did so less than a
 * second ago) and looks again. Returns 0 with *out filled, KCR_EINVAL (gvk or
 * its kind missing), KCR_ENOENT when the server does not serve the kind (the
 * message names it), or the error of the discovery request. Blocks on the
 * network when it rediscovers: any thread but a client's loop thread.
 */
KCR_EXTERN int kcr_rest_mapper_mapping_for_kind(kcr_rest_mapper_t *m, const kcr_gvk *gvk,
                                                kcr_rest_mapping *out, kcr_error_t *err);

/*
 * kcr_rest_mapper_mapping: kcr_rest_mapper_mapping_for_kind with the kind as
 * loose strings (borrowed). Deprecated.
 */
KCR_DEPRECATED("since 2026-12-02: use kcr_rest_mapper_mapping_for_kind")
KCR_EXTERN int kcr_rest_mapper_mapping(kcr_rest_mapper_t *m, const char *group, const char *version,
                                       const char *kind, kcr_rest_mapping *out, kcr_error_t *err);

/*
 * kcr_rest_mapper_mapping_for_resource finds the mapping of a group/version/
 * resource (plural): the kind and scope a resource URL serves. Same rules.
 */
KCR_EXTERN int kcr_rest_mapper_mapping_for_resource(kcr_rest_mapper_t *m, const kcr_gvr *r,
                                                    kcr_rest_mapping *out, kcr_error_t *err);

/*
 * kcr_rest_mapper_reset forgets everything discovered, so the next lookup asks the
 * server again. Any thread.
 */
KCR_EXTERN void kcr_rest_mapper_reset(kcr_rest_mapper_t *m);

/*
 * kcr_rest_mapper_stats: how discovery went, for tests and metrics.
 *   discoveries  complete discovery rounds run.
 *   aggregated   1 when the last round used aggregated discovery.
 *   mappings     kinds known.
 */
typedef struct kcr_rest_mapper_stats {
  unsigned long discoveries;
  int aggregated;
  size_t mappings;
} kcr_rest_mapper_stats;

/* kcr_rest_mapper_get_stats copies the counters. Any thread. */
KCR_EXTERN void kcr_rest_mapper_get_stats(kcr_rest_mapper_t *m, kcr_rest_mapper_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* KCR_DISCOVERY_H */
