/* SPDX-License-Identifier: MIT */
/*
 * kcr/auth.h: delegated authentication and authorization (src/server/auth.c),
 * as controller-runtime's metrics filters (pkg/metrics/filters) do it for a
 * secure metrics endpoint: a request's bearer token is checked with a
 * TokenReview (authentication.k8s.io/v1) and the user it names with a
 * SubjectAccessReview (authorization.k8s.io/v1) for the request's verb on its
 * non-resource URL, both posted through a kcr client. Answers are cached as
 * upstream caches them (authentication 1 min, successes and failures alike;
 * authorization allow 5 min, deny 30 s), in caches of a fixed number of
 * entries, so a scrape storm costs one review of each kind per token, not one
 * per scrape. Errors (the API server unreachable, an error answer) are not
 * cached. Tokens are kept only as their SHA-256 digest. Every review posted
 * takes a token from a bucket of max_reviews_per_second; with none left the
 * request is refused (429) without a review, so a flood of distinct bogus
 * tokens costs the API server a bounded rate. A server (kcr/server.h) answers
 * cached requests on its worker with kcr_auth_cached and posts the others'
 * reviews from a small pool of threads, so a cached scrape never waits
 * behind a review.
 *
 * The identity the client authenticates as needs "create" on tokenreviews and
 * subjectaccessreviews (kubebuilder's metrics_auth_role.yaml grants it).
 */
#ifndef KCR_AUTH_H
#define KCR_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "kcr/client.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_auth_t: opaque; thread-safe. */
typedef struct kcr_auth kcr_auth_t;

/*
 * kcr_auth_options: zero-initialise.
 *   client        required (borrowed; must outlive the authorizer).
 *   authn_ttl_ns  how long a TokenReview's answer is kept; 0: 1 min.
 *   allow_ttl_ns  an allowing SubjectAccessReview; 0: 5 min.
 *   deny_ttl_ns   a denying one; 0: 30 s.
 *   cache_size    entries in each cache; 0: 1024. A full cache replaces the
 *                 entry closest to expiry.
 *   timeout_ns    each review's timeout; 0: 10 s.
 *   clock         for the cache's expiry and the review rate (borrowed);
 *                 NULL: the system clock.
 *   max_reviews_per_second  TokenReviews and SubjectAccessReviews posted per
 *                 second, with a burst of one second's worth; 0: 20.
 *   metrics       a registry for kcr_auth_reviews_total{kind}, _cache_hits_total
 *                 {cache}, _review_errors_total and _refused_total (borrowed);
 *                 NULL: none.
 */
typedef struct kcr_auth_options {
  kcr_client_t *client;
  int64_t authn_ttl_ns;
  int64_t allow_ttl_ns;
  int64_t deny_ttl_ns;
  size_t cache_size;
  int64_t timeout_ns;
  kcr_clock_t *clock;
  double max_reviews_per_second;
  kcr_metrics_registry_t *metrics;
} kcr_auth_options;

/* kcr_auth_create makes an authorizer. *out: new, NULL on failure. Errors:
 * KCR_EINVAL (no client), KCR_ENOMEM. Any thread. */
KCR_EXTERN int kcr_auth_create(const kcr_auth_options *o, kcr_auth_t **out, kcr_error_t *err);

/* kcr_auth_destroy frees it; no check may be running. NULL is ignored. */
KCR_EXTERN void kcr_auth_destroy(kcr_auth_t *a);

/*
 * kcr_auth_check decides a request, with the signature of kcr_server_auth_cb
 * (data is the kcr_auth_t): 200 allowed, 401 no token, a token the API server
 * does not authenticate, or a TokenReview that failed; 403 the user may not
 * (verb, path); 429 a review was needed and the review rate is spent; 500 the
 * SubjectAccessReview failed. Blocks on the reviews it must post: a worker
 * thread, never the loop's.
 */
KCR_EXTERN int kcr_auth_check(void *auth, const char *token, const char *verb, const char *path);

/*
 * kcr_auth_cached decides a request from the caches alone, with the same
 * signature and answers as kcr_auth_check, or returns 0 when a review is
 * needed (then call kcr_auth_check). Never blocks on the network: a server's
 * worker calls it so that cached scrapes are answered at once. Any thread.
 */
KCR_EXTERN int kcr_auth_cached(void *auth, const char *token, const char *verb, const char *path);

/*
 * kcr_auth_stats: what the authorizer did. token_reviews and access_reviews
 * count the reviews posted (errors included); authn_hits and authz_hits the
 * answers taken from the caches; errors the reviews that failed; refused the
 * requests answered 429 because the review rate was spent.
 */
typedef struct kcr_auth_stats {
  uint64_t token_reviews;
  uint64_t access_reviews;
  uint64_t authn_hits;
  uint64_t authz_hits;
  uint64_t errors;
  uint64_t refused;
} kcr_auth_stats;

/* kcr_auth_get_stats copies the counters. Any thread. */
KCR_EXTERN void kcr_auth_get_stats(kcr_auth_t *a, kcr_auth_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* KCR_AUTH_H */
