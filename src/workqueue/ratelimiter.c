/* SPDX-License-Identifier: MIT */
/*
 * ratelimiter.c: client-go's workqueue rate limiters behind kcr_ratelimiter_t.
 *
 * DESIGN: a limiter is an ops table plus a data pointer; the built-in ones are
 * ordinary users of that interface (their data is the limiter itself), so a
 * custom limiter and a built-in one go through the same four entry points and
 * max-of can hold either. Each built-in limiter has its own mutex, held only for
 * a hash lookup or a few arithmetic operations, so limiters can be called from
 * any worker thread; max-of takes no lock of its own, it only asks its members in
 * order. Per-item counts live in a kcr__hmap_t of small {count, key} records: the
 * first failure of a key allocates one record, later failures and forget of an
 * unknown key allocate nothing. The token bucket reproduces golang.org/x/time/rate
 * Reserve().Delay(): tokens refill continuously up to burst, each reservation
 * takes one token even into debt, and the delay is the time until the debt is
 * paid, computed in float64 seconds and truncated to nanoseconds as Go does.
 */
#include "kcr/ratelimiter.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kcr/error.h"
#include "kcr/rand.h"
#include "util/alloc.h"
#include "util/hmap.h"

struct kcr_ratelimiter {
  const kcr_ratelimiter_ops *ops;
  void *data;
};

static int make_ratelimiter(const kcr_ratelimiter_ops *ops, void *data, kcr_ratelimiter_t **out) {
  kcr_ratelimiter_t *rl;
  assert(ops && ops->when && out);
  *out = NULL;
  rl = kcr__malloc(sizeof(*rl));
  if (!rl) {
    if (ops->destroy)
      ops->destroy(data);
    return KCR_ENOMEM;
  }
  rl->ops = ops;
  rl->data = data;
  *out = rl;
  return 0;
}

int kcr_ratelimiter_create(const kcr_ratelimiter_ops *ops, void *data, kcr_ratelimiter_t **out,
                           kcr_error_t *err) {
  int rc = make_ratelimiter(ops, data, out);
  if (rc)
    kcr_error_set(err, rc, "rate limiter: %s",
                  rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

int kcr_ratelimiter_when(kcr_ratelimiter_t *rl, const char *key, int64_t *delay_ns) {
  int rc;
  assert(rl && key && delay_ns);
  *delay_ns = 0;
  rc = rl->ops->when(rl->data, key, delay_ns);
  if (rc || *delay_ns < 0) /* an error or a custom limiter's negative delay: now */
    *delay_ns = 0;
  return rc;
}

void kcr_ratelimiter_forget(kcr_ratelimiter_t *rl, const char *key) {
  assert(rl && key);
  if (rl->ops->forget)
    rl->ops->forget(rl->data, key);
}

int kcr_ratelimiter_num_requeues(kcr_ratelimiter_t *rl, const char *key) {
  assert(rl && key);
  return rl->ops->num_requeues ? rl->ops->num_requeues(rl->data, key) : 0;
}

void kcr_ratelimiter_destroy(kcr_ratelimiter_t *rl) {
  int builtin;
  if (!rl)
    return;
  /* A built-in limiter is its own data, freed by its destroy; a custom one is a
   * wrapper around the caller's data. Decide before destroy frees anything. */
  builtin = rl->data == (void *)rl;
  if (rl->ops->destroy)
    rl->ops->destroy(rl->data);
  if (!builtin)
    kcr__free(rl);
}

/* ---- per-item failure counts (exponential and fast-slow) ---- */

typedef struct item_count {
  uint64_t hash;
  int failures;
  char key[];
} item_count;

typedef struct per_item {
  kcr_ratelimiter_t base; /* first: data == the limiter itself */
  pthread_mutex_t mu;
  kcr__hmap_t counts; /* key -> item_count, protected by mu */
  int64_t a_ns;       /* exponential: base; fast-slow: fast */
  int64_t b_ns;       /* exponential: max; fast-slow: slow */
  int max_fast;       /* fast-slow only */
} per_item;

/* count_failure bumps key's count under mu and returns the count before it. */
static int count_failure(per_item *p, const char *key, int *before) {
  size_t len;
  uint64_t h = kcr__hmap_hash(&p->counts, key, &len);
  item_count *c = kcr__hmap_get_hashed(&p->counts, key, h);
  if (!c) {
    if (kcr__hmap_reserve(&p->counts, 1))
      return KCR_ENOMEM;
    c = kcr__malloc(sizeof(*c) + len + 1);
    if (!c)
      return KCR_ENOMEM;
    c->hash = h;
    c->failures = 0;
    memcpy(c->key, key, len + 1);
    kcr__hmap_insert_hashed(&p->counts, c->key, h, c);
  }
  *before = c->failures;
  if (c->failures < INT_MAX)
    c->failures++;
  return 0;
}

static void per_item_forget(void *data, const char *key) {
  per_item *p = data;
  uint64_t h;
  item_count *c;
  pthread_mutex_lock(&p->mu);
  h = kcr__hmap_hash(&p->counts, key, NULL);
  c = kcr__hmap_get_hashed(&p->counts, key, h);
  if (c) {
    (void)kcr__hmap_del_hashed(&p->counts, c->key, h);
    kcr__hmap_shrink(&p->counts);
    kcr__free(c);
  }
  pthread_mutex_unlock(&p->mu);
}

static int per_item_num_requeues(void *data, const char *key) {
  per_item *p = data;
  item_count *c;
  int n;
  pthread_mutex_lock(&p->mu);
  c = kcr__hmap_get(&p->counts, key);
  n = c ? c->failures : 0;
  pthread_mutex_unlock(&p->mu);
  return n;
}

static void per_item_destroy(void *data) {
  per_item *p = data;
  KCR__HMAP_FOREACH(&p->counts, sl) {
    kcr__free(sl->val);
  }
  kcr__hmap_free(&p->counts);
  pthread_mutex_destroy(&p->mu);
  kcr__free(p);
}

static int exponential_when(void *data, const char *key, int64_t *delay_ns) {
  per_item *p = data;
  int exp, rc;
  double backoff;
  pthread_mutex_lock(&p->mu);
  rc = count_failure(p, key, &exp);
  pthread_mutex_unlock(&p->mu);
  if (rc)
    return rc;
  /* As client-go: compute in float64 so 2^exp cannot overflow an integer. */
  backoff = ldexp((double)p->a_ns, exp);
  if (backoff >= 9223372036854775807.0 || backoff > (double)p->b_ns)
    *delay_ns = p->b_ns;
  else
    *delay_ns = (int64_t)backoff;
  return 0;
}

static int fast_slow_when(void *data, const char *key, int64_t *delay_ns) {
  per_item *p = data;
  int before, rc;
  pthread_mutex_lock(&p->mu);
  rc = count_failure(p, key, &before);
  pthread_mutex_unlock(&p->mu);
  if (rc)
    return rc;
  *delay_ns = before < p->max_fast ? p->a_ns : p->b_ns;
  return 0;
}

static const kcr_ratelimiter_ops exponential_ops = {exponential_when, per_item_forget,
                                                    per_item_num_requeues, per_item_destroy};
static const kcr_ratelimiter_ops fast_slow_ops = {fast_slow_when, per_item_forget,
                                                  per_item_num_requeues, per_item_destroy};

static int per_item_create(const kcr_ratelimiter_ops *ops, int64_t a_ns, int64_t b_ns, int max_fast,
                           kcr_ratelimiter_t **out) {
  per_item *p = kcr__calloc(1, sizeof(*p));
  if (!p)
    return KCR_ENOMEM;
  if (pthread_mutex_init(&p->mu, NULL)) {
    kcr__free(p);
    return KCR_ESYS;
  }
  kcr__hmap_init(&p->counts, kcr_rand_seed());
  p->base.ops = ops;
  p->base.data = p;
  p->a_ns = a_ns;
  p->b_ns = b_ns;
  p->max_fast = max_fast;
  *out = &p->base;
  return 0;
}

static int make_ratelimiter_exponential(int64_t base_ns, int64_t max_ns, kcr_ratelimiter_t **out) {
  assert(out);
  *out = NULL;
  if (base_ns < 0 || max_ns < 0)
    return KCR_EINVAL;
  return per_item_create(&exponential_ops, base_ns, max_ns, 0, out);
}

int kcr_ratelimiter_exponential_create(int64_t base_ns, int64_t max_ns, kcr_ratelimiter_t **out,
                                       kcr_error_t *err) {
  int rc = make_ratelimiter_exponential(base_ns, max_ns, out);
  if (rc)
    kcr_error_set(err, rc, "exponential rate limiter: %s",
                  rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

static int make_ratelimiter_fast_slow(int64_t fast_ns, int64_t slow_ns, int max_fast_attempts,
                                      kcr_ratelimiter_t **out) {
  assert(out);
  *out = NULL;
  if (fast_ns < 0 || slow_ns < 0 || max_fast_attempts < 0)
    return KCR_EINVAL;
  return per_item_create(&fast_slow_ops, fast_ns, slow_ns, max_fast_attempts, out);
}

int kcr_ratelimiter_fast_slow_create(int64_t fast_ns, int64_t slow_ns, int max_fast_attempts,
                                     kcr_ratelimiter_t **out, kcr_error_t *err) {
  int rc = make_ratelimiter_fast_slow(fast_ns, slow_ns, max_fast_attempts, out);
  if (rc)
    kcr_error_set(err, rc, "fast-slow rate limiter: %s",
                  rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

/* ---- token bucket ---- */

typedef struct bucket {
  kcr_ratelimiter_t base; /* first: data == the limiter itself */
  pthread_mutex_t mu;
  kcr_clock_t *clock; /* borrowed */
  double qps;
  int burst;
  double tokens; /* protected by mu */
  int64_t last;  /* protected by mu: monotonic ns of the last reservation */
} bucket;

static int bucket_when(void *data, const char *key, int64_t *delay_ns) {
  bucket *b = data;
  int64_t now, last, elapsed_sec, elapsed_nsec;
  double tokens, wait_ns;
  (void)key;
  if (isinf(b->qps)) {
    *delay_ns = 0;
    return 0;
  }
  pthread_mutex_lock(&b->mu);
  now = kcr_clock_now(b->clock);
  last = b->last < now ? b->last : now;
  /* advance: refill for the time since the last reservation, up to burst. */
  /* Go's Duration.Seconds(): whole seconds plus the fraction, then times the rate. */
  elapsed_sec = (now - last) / KCR_NSEC_PER_SEC;
  elapsed_nsec = (now - last) % KCR_NSEC_PER_SEC;
  tokens = b->tokens + ((double)elapsed_sec + (double)elapsed_nsec / 1e9) * b->qps;
  if (tokens > (double)b->burst)
    tokens = (double)b->burst;
  if (b->burst < 1) {
    /* Go: n > burst is never granted; the state does not move. */
    pthread_mutex_unlock(&b->mu);
    *delay_ns = KCR_RATELIMITER_NEVER;
    return 0;
  }
  tokens -= 1.0;
  wait_ns = tokens < 0 ? 1e9 * (-tokens / b->qps) : 0.0;
  b->last = now;
  b->tokens = tokens;
  pthread_mutex_unlock(&b->mu);
  *delay_ns = wait_ns >= 9223372036854775807.0 ? KCR_RATELIMITER_NEVER : (int64_t)wait_ns;
  return 0;
}

static void bucket_destroy(void *data) {
  bucket *b = data;
  pthread_mutex_destroy(&b->mu);
  kcr__free(b);
}

static const kcr_ratelimiter_ops bucket_ops = {bucket_when, NULL, NULL, bucket_destroy};

static int make_ratelimiter_bucket(double qps, int burst, kcr_clock_t *clock,
                                   kcr_ratelimiter_t **out) {
  bucket *b;
  assert(out);
  *out = NULL;
  if (!(qps > 0) || burst < 0) /* also refuses NaN */
    return KCR_EINVAL;
  b = kcr__calloc(1, sizeof(*b));
  if (!b)
    return KCR_ENOMEM;
  if (pthread_mutex_init(&b->mu, NULL)) {
    kcr__free(b);
    return KCR_ESYS;
  }
  b->base.ops = &bucket_ops;
  b->base.data = b;
  b->clock = clock ? clock : kcr_clock_system();
  b->qps = qps;
  b->burst = burst;
  b->tokens = (double)burst;
  b->last = kcr_clock_now(b->clock);
  *out = &b->base;
  return 0;
}

int kcr_ratelimiter_bucket_create(double qps, int burst, kcr_clock_t *clock,
                                  kcr_ratelimiter_t **out, kcr_error_t *err) {
  int rc = make_ratelimiter_bucket(qps, burst, clock, out);
  if (rc)
    kcr_error_set(err, rc, "bucket rate limiter: %s",
                  rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

/* ---- max-of ---- */

typedef struct max_of {
  kcr_ratelimiter_t base; /* first: data == the limiter itself */
  size_t n;
  kcr_ratelimiter_t *limiters[]; /* owned */
} max_of;

static int max_of_when(void *data, const char *key, int64_t *delay_ns) {
  max_of *m = data;
  int64_t best = 0, d;
  size_t i;
  int rc, first_rc = 0;
  /* Every member counts the failure, as in client-go, even past an error. */
  for (i = 0; i < m->n; i++) {
    rc = kcr_ratelimiter_when(m->limiters[i], key, &d);
    if (rc && !first_rc)
      first_rc = rc;
    if (!rc && d > best)
      best = d;
  }
  if (first_rc)
    return first_rc;
  *delay_ns = best;
  return 0;
}

static void max_of_forget(void *data, const char *key) {
  max_of *m = data;
  size_t i;
  for (i = 0; i < m->n; i++)
    kcr_ratelimiter_forget(m->limiters[i], key);
}

static int max_of_num_requeues(void *data, const char *key) {
  max_of *m = data;
  int best = 0, v;
  size_t i;
  for (i = 0; i < m->n; i++) {
    v = kcr_ratelimiter_num_requeues(m->limiters[i], key);
    if (v > best)
      best = v;
  }
  return best;
}

static void max_of_destroy(void *data) {
  max_of *m = data;
  size_t i;
  for (i = 0; i < m->n; i++)
    kcr_ratelimiter_destroy(m->limiters[i]);
  kcr__free(m);
}

static const kcr_ratelimiter_ops max_of_ops = {max_of_when, max_of_forget, max_of_num_requeues,
                                               max_of_destroy};

static int make_ratelimiter_max_of(kcr_ratelimiter_t *const *limiters, size_t n,
                                   kcr_ratelimiter_t **out) {
  max_of *m = NULL;
  size_t i;
  int rc = KCR_EINVAL;

  assert(out);
  *out = NULL;
  if (!limiters || n == 0)
    return KCR_EINVAL;
  for (i = 0; i < n; i++)
    if (!limiters[i])
      goto fail;
  rc = KCR_ENOMEM;
  if (n > (SIZE_MAX - sizeof(*m)) / sizeof(kcr_ratelimiter_t *))
    goto fail;
  m = kcr__malloc(sizeof(*m) + n * sizeof(kcr_ratelimiter_t *));
  if (!m)
    goto fail;
  m->base.ops = &max_of_ops;
  m->base.data = m;
  m->n = n;
  memcpy(m->limiters, limiters, n * sizeof(kcr_ratelimiter_t *));
  *out = &m->base;
  return 0;

fail:
  for (i = 0; i < n; i++)
    kcr_ratelimiter_destroy(limiters[i]);
  return rc;
}

int kcr_ratelimiter_max_of_create(kcr_ratelimiter_t *const *limiters, size_t n,
                                  kcr_ratelimiter_t **out, kcr_error_t *err) {
  int rc = make_ratelimiter_max_of(limiters, n, out);
  if (rc)
    kcr_error_set(err, rc, "max-of rate limiter: %s",
                  rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

static int make_ratelimiter_default(kcr_clock_t *clock, kcr_ratelimiter_t **out) {
  kcr_ratelimiter_t *parts[2] = {NULL, NULL};
  int rc;
  assert(out);
  *out = NULL;
  rc = kcr_ratelimiter_exponential_create(5 * KCR_NSEC_PER_MSEC, 1000 * KCR_NSEC_PER_SEC, &parts[0],
                                          NULL);
  if (rc)
    return rc;
  rc = kcr_ratelimiter_bucket_create(10.0, 100, clock, &parts[1], NULL);
  if (rc) {
    kcr_ratelimiter_destroy(parts[0]);
    return rc;
  }
  return kcr_ratelimiter_max_of_create(parts, 2, out, NULL);
}

int kcr_ratelimiter_default_create(kcr_clock_t *clock, kcr_ratelimiter_t **out, kcr_error_t *err) {
  int rc = make_ratelimiter_default(clock, out);
  if (rc)
    kcr_error_set(err, rc, "default rate limiter: %s",
                  rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}
