/* SPDX-License-Identifier: MIT */
/*
 * auth.c: delegated authentication and authorization (kcr/auth.h), the
 * TokenReview and SubjectAccessReview a secure metrics endpoint asks the API
 * server for, with the caches that keep a scrape storm from becoming an API
 * storm.
 *
 * DESIGN. Two caches of fixed size (cache_size entries each, allocated once),
 * keyed by SHA-256 digests: the authentication cache by the token's digest
 * (the token itself is never stored), the authorization cache by the digest of
 * the user's identity as the TokenReview returned it (serialized with sorted
 * keys) plus verb and path. A lookup scans the array (1024 entries of 32-byte
 * keys: microseconds, next to a review's milliseconds); an insert takes the
 * same key's slot, an expired slot, or the entry closest to expiry. One mutex
 * guards both caches; it is never held across a review, so two concurrent
 * misses for one token may both post (upstream does the same without its
 * request coalescing).
 *
 * BOUNDS. A server answers from the caches on its worker (kcr_auth_cached)
 * and sends only the misses to its small pool of review threads, so a scrape
 * whose token is cached never waits behind one that is not. Every review
 * posted takes a token from a bucket of max_reviews_per_second (refilled on
 * the clock, burst of one second's worth); with none left the request is
 * refused with 429 and no review is posted, so a flood of distinct bogus
 * tokens costs the API server at most that rate, however many connections
 * carry it; a repeated bad token costs one review per authn_ttl, as a good one.
 */
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "kcr/auth.h"
#include "kcr/log.h"
#include "kcr/metrics.h"
#include "server/auth_internal.h"
#include "util/alloc.h"

#define DEFAULT_CACHE 1024

typedef struct entry {
  unsigned char key[32];
  int64_t expires; /* 0: empty */
  int ok;          /* authenticated / allowed */
  char *user;      /* authentication: the user object, compact JSON; owned */
} entry_t;

struct kcr_auth {
  kcr_client_t *client;
  kcr_clock_t *clock;
  int64_t authn_ttl, allow_ttl, deny_ttl, timeout;
  size_t n;
  double rate; /* reviews per second */
  pthread_mutex_t mu;
  entry_t *authn; /* protected by mu */
  entry_t *authz; /* protected by mu */
  double tokens;  /* protected by mu: the review bucket */
  int64_t filled; /* protected by mu: when tokens was last refilled */
  atomic_uint_fast64_t st_tr, st_sar, st_authn_hits, st_authz_hits, st_errors, st_refused;
  /* The counters as metrics (options.metrics), or NULL. */
  kcr_metric_child_t *m_tr, *m_sar, *m_authn_hits, *m_authz_hits, *m_errors, *m_refused;
};

/* count adds one to a statistic and to its metric, when there is one. */
static void count(atomic_uint_fast64_t *st, kcr_metric_child_t *m) {
  atomic_fetch_add(st, 1);
  kcr_metric_inc(m); /* NULL is ignored */
}

/* take_review takes a token from the review bucket: 1, or 0 when the rate is
 * spent (counted as a refusal). */
static int take_review(kcr_auth_t *a) {
  int64_t now = kcr_clock_now(a->clock);
  int ok;
  pthread_mutex_lock(&a->mu);
  if (now > a->filled) {
    a->tokens += a->rate * (double)(now - a->filled) / (double)KCR_NSEC_PER_SEC;
    if (a->tokens > a->rate)
      a->tokens = a->rate;
    a->filled = now;
  }
  ok = a->tokens >= 1.0;
  if (ok)
    a->tokens -= 1.0;
  pthread_mutex_unlock(&a->mu);
  if (!ok)
    count(&a->st_refused, a->m_refused);
  return ok;
}

static void digest(const void *data, size_t len, unsigned char out[32]) {
  unsigned int n = 32;
  if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1)
    memset(out, 0, 32); /* cannot happen with the built-in provider */
}

/* lookup returns the live entry for key, or NULL. mu held. */
static entry_t *lookup(kcr_auth_t *a, entry_t *tab, const unsigned char key[32], int64_t now) {
  for (size_t i = 0; i < a->n; i++)
    if (tab[i].expires > now && memcmp(tab[i].key, key, 32) == 0)
      return &tab[i];
  return NULL;
}

/* slot picks where key goes: its own slot, an expired one, or the one that
 * expires first. mu held. */
static entry_t *slot(kcr_auth_t *a, entry_t *tab, const unsigned char key[32], int64_t now) {
  entry_t *best = &tab[0];
  for (size_t i = 0; i < a->n; i++) {
    if (memcmp(tab[i].key, key, 32) == 0 || tab[i].expires <= now)
      return &tab[i];
    if (tab[i].expires < best->expires)
      best = &tab[i];
  }
  return best;
}

static void put(kcr_auth_t *a, entry_t *tab, const unsigned char key[32], int ok, char *user,
                int64_t ttl) {
  int64_t now = kcr_clock_now(a->clock);
  entry_t *e;
  pthread_mutex_lock(&a->mu);
  e = slot(a, tab, key, now);
  kcr__free(e->user);
  memcpy(e->key, key, 32);
  e->ok = ok;
  e->user = user;
  e->expires = now + ttl;
  pthread_mutex_unlock(&a->mu);
}

static const kcr_gvr token_reviews = {"authentication.k8s.io", "v1", "tokenreviews"};
static const kcr_gvr access_reviews = {"authorization.k8s.io", "v1", "subjectaccessreviews"};

/* ---- the reviews' bodies and answers (auth_internal.h) ---- */

int kcr__auth_token_review_user(json_t *res, char **user) {
  json_t *st = json_object_get(res, "status"), *u;
  *user = NULL;
  if (!json_is_true(json_object_get(st, "authenticated")))
    return 0;
  u = json_object_get(st, "user");
  if (json_is_object(u))
    *user = json_dumps(u, JSON_COMPACT | JSON_SORT_KEYS);
  else
    *user = kcr__strdup("{}");
  return *user ? 1 : KCR_ENOMEM;
}

json_t *kcr__auth_access_review(const char *user_json, const char *verb, const char *path,
                                char *name, size_t name_size) {
  static const char *const keys[][2] = {
      {"username", "user"}, {"uid", "uid"}, {"groups", "groups"}, {"extra", "extra"}};
  json_t *u = json_loads(user_json, 0, NULL), *spec, *v;
  v = json_object_get(u, "username");
  snprintf(name, name_size, "%s", json_is_string(v) ? json_string_value(v) : "");
  if (!json_is_object(u)) {
    json_decref(u);
    return NULL;
  }
  spec = json_pack("{s:{s:s, s:s}}", "nonResourceAttributes", "path", path, "verb", verb);
  for (size_t i = 0; spec && i < sizeof(keys) / sizeof(keys[0]); i++)
    if ((v = json_object_get(u, keys[i][0])))
      json_object_set(spec, keys[i][1], v);
  json_decref(u);
  if (!spec)
    return NULL;
  return json_pack("{s:s, s:s, s:o}", "apiVersion", "authorization.k8s.io/v1", "kind",
                   "SubjectAccessReview", "spec", spec);
}

int kcr__auth_access_review_allowed(json_t *res) {
  return json_is_true(json_object_get(json_object_get(res, "status"), "allowed")) ? 1 : 0;
}

/*
 * authenticate posts a TokenReview. Returns 1 authenticated (*user: new
 * compact JSON of status.user), 0 not, or a negative kcr_err.
 */
static int authenticate(kcr_auth_t *a, const char *token, char **user) {
  kcr_request_options ro;
  json_t *rev, *res = NULL;
  kcr_error_t err;
  int rc;
  *user = NULL;
  rev = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                  "TokenReview", "spec", "token", token);
  if (!rev)
    return KCR_ENOMEM;
  memset(&ro, 0, sizeof(ro));
  ro.timeout_ns = a->timeout;
  kcr_error_clear(&err);
  count(&a->st_tr, a->m_tr);
  rc = kcr_client_create_object(a->client, &token_reviews, NULL, rev, &ro, &res, &err);
  json_decref(rev); /* held the token: gone now */
  if (rc != 0) {
    count(&a->st_errors, a->m_errors);
    kcr_log(KCR_LOG_ERROR, "auth", "TokenReview failed: %s", err.message);
    return rc;
  }
  rc = kcr__auth_token_review_user(res, user);
  json_decref(res);
  return rc;
}

/* authorize posts a SubjectAccessReview for user (compact JSON of a
 * TokenReview's status.user). 1 allowed, 0 not, or a negative kcr_err. */
static int authorize(kcr_auth_t *a, const char *user_json, const char *verb, const char *path,
                     char *name, size_t name_size) {
  kcr_request_options ro;
  json_t *rev = kcr__auth_access_review(user_json, verb, path, name, name_size), *res = NULL;
  kcr_error_t err;
  int rc, allowed;
  if (!rev)
    return KCR_ENOMEM;
  memset(&ro, 0, sizeof(ro));
  ro.timeout_ns = a->timeout;
  kcr_error_clear(&err);
  count(&a->st_sar, a->m_sar);
  rc = kcr_client_create_object(a->client, &access_reviews, NULL, rev, &ro, &res, &err);
  json_decref(rev);
  if (rc != 0) {
    count(&a->st_errors, a->m_errors);
    kcr_log(KCR_LOG_ERROR, "auth", "SubjectAccessReview for user %s failed: %s", name, err.message);
    return rc;
  }
  allowed = kcr__auth_access_review_allowed(res);
  json_decref(res);
  return allowed;
}

/* authz_key digests the identity, the verb and the path. 0, or -1. */
static int authz_key(const char *user, const char *verb, const char *path, unsigned char out[32]) {
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  unsigned int mdlen = 32;
  int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
           EVP_DigestUpdate(md, user, strlen(user) + 1) == 1 &&
           EVP_DigestUpdate(md, verb, strlen(verb) + 1) == 1 &&
           EVP_DigestUpdate(md, path, strlen(path) + 1) == 1 &&
           EVP_DigestFinal_ex(md, out, &mdlen) == 1;
  EVP_MD_CTX_free(md);
  return ok ? 0 : -1;
}

/* authz_cached: the cached authorization for zkey (1 allowed, 0 denied,
 * counted as a hit), or -1 when there is none. */
static int authz_cached(kcr_auth_t *a, const unsigned char zkey[32]) {
  entry_t *e;
  int ok;
  pthread_mutex_lock(&a->mu);
  e = lookup(a, a->authz, zkey, kcr_clock_now(a->clock));
  ok = e ? e->ok : -1;
  pthread_mutex_unlock(&a->mu);
  if (ok >= 0)
    count(&a->st_authz_hits, a->m_authz_hits);
  return ok;
}

/*
 * from_cache decides from the caches alone: the status, or 0 when a review
 * is needed, then with *user (new) the authenticated user and zkey its
 * authorization key when only the authorization is missing, *user NULL when
 * the token itself is unknown.
 */
static int from_cache(kcr_auth_t *a, const unsigned char tkey[32], const char *verb,
                      const char *path, char **user, unsigned char zkey[32]) {
  entry_t *e;
  int ok;
  *user = NULL;
  pthread_mutex_lock(&a->mu);
  e = lookup(a, a->authn, tkey, kcr_clock_now(a->clock));
  if (!e) {
    pthread_mutex_unlock(&a->mu);
    return 0;
  }
  ok = e->ok;
  *user = ok ? kcr__strdup(e->user) : NULL;
  pthread_mutex_unlock(&a->mu);
  count(&a->st_authn_hits, a->m_authn_hits);
  if (!ok)
    return 401;
  if (!*user || authz_key(*user, verb, path, zkey) != 0) {
    kcr__free(*user);
    *user = NULL;
    return 500;
  }
  ok = authz_cached(a, zkey);
  if (ok < 0)
    return 0;
  kcr__free(*user);
  *user = NULL;
  return ok ? 200 : 403;
}

int kcr_auth_cached(void *auth, const char *token, const char *verb, const char *path) {
  kcr_auth_t *a = auth;
  unsigned char tkey[32], zkey[32];
  char *user;
  int st;
  if (!token || !*token)
    return 401;
  digest(token, strlen(token), tkey);
  st = from_cache(a, tkey, verb, path, &user, zkey);
  kcr__free(user);
  return st;
}

int kcr_auth_check(void *auth, const char *token, const char *verb, const char *path) {
  kcr_auth_t *a = auth;
  unsigned char tkey[32], zkey[32];
  char *user = NULL, name[256];
  int rc, st;

  if (!token || !*token)
    return 401;
  digest(token, strlen(token), tkey);
  st = from_cache(a, tkey, verb, path, &user, zkey);
  if (st != 0)
    return st;
  if (!user) {
    if (!take_review(a))
      return 429;
    rc = authenticate(a, token, &user);
    if (rc < 0)
      return 401; /* as upstream: a failed review is "Authentication failed" */
    put(a, a->authn, tkey, rc, rc ? kcr__strdup(user) : NULL, a->authn_ttl);
    if (rc == 0)
      return 401;
    if (authz_key(user, verb, path, zkey) != 0) {
      kcr__free(user);
      return 500;
    }
    /* A token reviewed just now may name an identity already authorized. */
    rc = authz_cached(a, zkey);
    if (rc >= 0) {
      kcr__free(user);
      return rc ? 200 : 403;
    }
  }
  if (!take_review(a)) {
    kcr__free(user);
    return 429;
  }
  rc = authorize(a, user, verb, path, name, sizeof(name));
  kcr__free(user);
  if (rc < 0)
    return 500;
  put(a, a->authz, zkey, rc, NULL, rc ? a->allow_ttl : a->deny_ttl);
  if (!rc)
    kcr_log(KCR_LOG_DEBUG, "auth", "authorization denied for user %s (%s %s)", name, verb, path);
  return rc ? 200 : 403;
}

/* register_metrics makes the authorizer's counters in reg; a failure leaves
 * that metric out. */
static void register_metrics(kcr_auth_t *a, kcr_metrics_registry_t *reg) {
  static const char *const kind[] = {"kind", NULL}, *const cache[] = {"cache", NULL};
  kcr_metric_t *m = NULL;
  if (kcr_metrics_counter(reg, "kcr_auth_reviews_total",
                          "TokenReviews (kind=token) and SubjectAccessReviews (kind=access) "
                          "posted for authenticated endpoints",
                          kind, &m, NULL) == 0) {
    a->m_tr = kcr_metric_withv(m, "token", NULL);
    a->m_sar = kcr_metric_withv(m, "access", NULL);
  }
  if (kcr_metrics_counter(reg, "kcr_auth_cache_hits_total",
                          "Authentication and authorization answers taken from the caches", cache,
                          &m, NULL) == 0) {
    a->m_authn_hits = kcr_metric_withv(m, "authentication", NULL);
    a->m_authz_hits = kcr_metric_withv(m, "authorization", NULL);
  }
  if (kcr_metrics_counter(reg, "kcr_auth_review_errors_total",
                          "Reviews that failed (the API server unreachable or an error answer)",
                          NULL, &m, NULL) == 0)
    a->m_errors = kcr_metric_with(m, NULL, 0);
  if (kcr_metrics_counter(reg, "kcr_auth_refused_total",
                          "Requests refused with 429 because the review rate was spent", NULL, &m,
                          NULL) == 0)
    a->m_refused = kcr_metric_with(m, NULL, 0);
}

int kcr_auth_create(const kcr_auth_options *o, kcr_auth_t **out, kcr_error_t *err) {
  kcr_auth_t *a;
  *out = NULL;
  if (!o || !o->client)
    return kcr_error_set(err, KCR_EINVAL, "auth: a client is required");
  a = kcr__calloc(1, sizeof(*a));
  if (!a)
    return kcr_error_set(err, KCR_ENOMEM, "auth: out of memory");
  a->client = o->client;
  a->clock = o->clock ? o->clock : kcr_clock_system();
  a->authn_ttl = o->authn_ttl_ns > 0 ? o->authn_ttl_ns : 60 * KCR_NSEC_PER_SEC;
  a->rate = o->max_reviews_per_second > 0 ? o->max_reviews_per_second : 20;
  a->tokens = a->rate;
  a->filled = kcr_clock_now(a->clock);
  a->allow_ttl = o->allow_ttl_ns > 0 ? o->allow_ttl_ns : 300 * KCR_NSEC_PER_SEC;
  a->deny_ttl = o->deny_ttl_ns > 0 ? o->deny_ttl_ns : 30 * KCR_NSEC_PER_SEC;
  a->timeout = o->timeout_ns > 0 ? o->timeout_ns : 10 * KCR_NSEC_PER_SEC;
  a->n = o->cache_size ? o->cache_size : DEFAULT_CACHE;
  a->authn = kcr__calloc(a->n, sizeof(entry_t));
  a->authz = kcr__calloc(a->n, sizeof(entry_t));
  if (!a->authn || !a->authz) {
    kcr__free(a->authn);
    kcr__free(a->authz);
    kcr__free(a);
    return kcr_error_set(err, KCR_ENOMEM, "auth: out of memory");
  }
  pthread_mutex_init(&a->mu, NULL);
  if (o->metrics)
    register_metrics(a, o->metrics);
  *out = a;
  return 0;
}

void kcr_auth_destroy(kcr_auth_t *a) {
  if (!a)
    return;
  for (size_t i = 0; i < a->n; i++)
    kcr__free(a->authn[i].user);
  kcr__free(a->authn);
  kcr__free(a->authz);
  pthread_mutex_destroy(&a->mu);
  kcr__free(a);
}

void kcr_auth_get_stats(kcr_auth_t *a, kcr_auth_stats *out) {
  out->token_reviews = atomic_load(&a->st_tr);
  out->access_reviews = atomic_load(&a->st_sar);
  out->authn_hits = atomic_load(&a->st_authn_hits);
  out->authz_hits = atomic_load(&a->st_authz_hits);
  out->errors = atomic_load(&a->st_errors);
  out->refused = atomic_load(&a->st_refused);
}
