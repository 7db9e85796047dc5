/* SPDX-License-Identifier: MIT */
/*
 * sharding.c: the FNV-1a hash of the API server's shard selectors, sets of hash
 * ranges and the ring that splits the space among replicas (kcr/sharding.h).
 *
 * DESIGN. A ring is a sorted array of segments that tile [0, 2^64): segment k
 * starts at seg_first[k] and ends where segment k + 1 starts (the last one at
 * UINT64_MAX), and belongs to member seg_owner[k]; adjacent segments of one
 * owner are merged, so an owner lookup is one binary search and a member's set
 * is a walk. Both layouts build the same array, so everything after the build
 * (sets, selectors, moved shares) is written once.
 *
 * A virtual ring places each member's points at a mix of the FNV-1a hash of
 * "name\0index": FNV-1a alone spreads names that differ in one trailing byte
 * poorly, so splitmix64's finaliser follows it. A hash belongs to the first
 * point at or after it, wrapping past UINT64_MAX to the lowest point. Two
 * members placing a point on the same value are ordered by name; the loser's
 * point is dropped (a measure-zero event that must still be deterministic).
 *
 * Nothing here depends on the order members were given in: names are sorted
 * first, so every replica that sees the same live Leases computes the same ring.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/buf.h"
#include "kcr/sharding.h"
#include "util/alloc.h"

#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL
#define TWO64 18446744073709551616.0 /* 2^64 as a double */

struct kcr_shard_set {
  size_t n;
  kcr_shard_range r[]; /* sorted, disjoint, not adjacent */
};

struct kcr_shard_ring {
  size_t nmembers;
  char **members; /* sorted by strcmp */
  size_t nseg;
  uint64_t *seg_first; /* seg_first[0] == 0 when nseg > 0 */
  size_t *seg_owner;   /* index into members */
};

uint64_t kcr_shard_hash(const char *s, size_t len) {
  uint64_t h = FNV64_OFFSET;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= FNV64_PRIME;
  }
  return h;
}

/* controller_owner_uid: the uid (borrowed) of md's owner reference marked
 * controller: true, NULL when there is none or it has no uid. */
static const json_t *controller_owner_uid(const json_t *md) {
  size_t i;
  const json_t *ref;
  json_array_foreach(json_object_get(md, "ownerReferences"), i, ref) {
    const json_t *uid = json_object_get(ref, "uid");
    if (json_is_true(json_object_get(ref, "controller")) && json_is_string(uid) &&
        json_string_length(uid) > 0)
      return uid;
  }
  return NULL;
}

int kcr_shard_object_hash(const json_t *obj, kcr_shard_key key, uint64_t *out, kcr_error_t *err) {
  const json_t *md, *v;
  if (!json_is_object(obj))
    return kcr_error_set(err, KCR_EINVAL, "shard hash: not an object");
  md = json_object_get(obj, "metadata");
  if (key == KCR_SHARD_KEY_NAMESPACE) {
    v = json_object_get(md, "namespace");
    if (!json_is_string(v)) {
      *out = kcr_shard_hash(NULL, 0);
      return 0;
    }
  } else if (key == KCR_SHARD_KEY_UID || key == KCR_SHARD_KEY_OWNER_UID) {
    v = key == KCR_SHARD_KEY_OWNER_UID ? controller_owner_uid(md) : NULL;
    if (!v)
      v = json_object_get(md, "uid");
    if (!json_is_string(v) || json_string_length(v) == 0)
      return kcr_error_set(err, KCR_EINVAL, "shard hash: the object has no metadata.uid");
  } else {
    return kcr_error_set(err, KCR_EINVAL, "shard hash: unknown key %d", (int)key);
  }
  *out = kcr_shard_hash(json_string_value(v), json_string_length(v));
  return 0;
}

/* ---- sets ---------------------------------------------------------------- */

static int cmp_range(const void *a, const void *b) {
  const kcr_shard_range *x = a, *y = b;
  if (x->first != y->first)
    return x->first < y->first ? -1 : 1;
  if (x->last != y->last)
    return x->last < y->last ? -1 : 1;
  return 0;
}

/* set_alloc: an uninitialised set for n ranges, or NULL. */
static kcr_shard_set_t *set_alloc(size_t n) {
  kcr_shard_set_t *s;
  if (n > (SIZE_MAX - sizeof(*s)) / sizeof(kcr_shard_range))
    return NULL;
  s = kcr__malloc(sizeof(*s) + n * sizeof(kcr_shard_range));
  if (s)
    s->n = 0;
  return s;
}

/* set_push appends [first, last] to s (room for it reserved), merging with the
 * previous range when they touch or overlap; ranges arrive sorted by first. */
static void set_push(kcr_shard_set_t *s, uint64_t first, uint64_t last) {
  if (s->n > 0) {
    kcr_shard_range *p = &s->r[s->n - 1];
    if (p->last == UINT64_MAX || first <= p->last + 1) {
      if (last > p->last)
        p->last = last;
      return;
    }
  }
  s->r[s->n].first = first;
  s->r[s->n].last = last;
  s->n++;
}

int kcr_shard_set_create(const kcr_shard_range *ranges, size_t n, kcr_shard_set_t **out,
                         kcr_error_t *err) {
  kcr_shard_range *sorted = NULL;
  kcr_shard_set_t *s;
  *out = NULL;
  if (n > 0 && !ranges)
    return kcr_error_set(err, KCR_EINVAL, "shard set: ranges is NULL");
  for (size_t i = 0; i < n; i++)
    if (ranges[i].first > ranges[i].last)
      return kcr_error_set(err, KCR_EINVAL,
                           "shard set: range %zu starts at 0x%" PRIx64 " after its end 0x%" PRIx64,
                           i, ranges[i].first, ranges[i].last);
  s = set_alloc(n);
  if (n > 0)
    sorted = kcr__malloc(n * sizeof(*sorted));
  if (!s || (n > 0 && !sorted)) {
    kcr__free(s);
    kcr__free(sorted);
    return kcr_error_set(err, KCR_ENOMEM, "shard set: out of memory");
  }
  if (n > 0) {
    memcpy(sorted, ranges, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), cmp_range);
  }
  for (size_t i = 0; i < n; i++)
    set_push(s, sorted[i].first, sorted[i].last);
  kcr__free(sorted);
  *out = s;
  return 0;
}

int kcr_shard_set_copy(const kcr_shard_set_t *s, kcr_shard_set_t **out, kcr_error_t *err) {
  kcr_shard_set_t *c;
  *out = NULL;
  if (!s)
    return kcr_error_set(err, KCR_EINVAL, "shard set copy: the set is NULL");
  if (!(c = set_alloc(s->n)))
    return kcr_error_set(err, KCR_ENOMEM, "shard set copy: out of memory");
  memcpy(c->r, s->r, s->n * sizeof(kcr_shard_range));
  c->n = s->n;
  *out = c;
  return 0;
}

void kcr_shard_set_destroy(kcr_shard_set_t *s) {
  kcr__free(s);
}

bool kcr_shard_set_contains(const kcr_shard_set_t *s, uint64_t h) {
  size_t lo = 0, hi;
  if (!s)
    return false;
  hi = s->n;
  while (lo < hi) { /* the first range whose last >= h */
    size_t mid = lo + (hi - lo) / 2;
    if (s->r[mid].last < h)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->n && s->r[lo].first <= h;
}

size_t kcr_shard_set_ranges(const kcr_shard_set_t *s, const kcr_shard_range **out) {
  if (out)
    *out = s ? s->r : NULL;
  return s ? s->n : 0;
}

/* width: the number of hashes in [first, last] as a double (2^64 fits). */
int kcr_shard_set_intersect(const kcr_shard_set_t *a, const kcr_shard_set_t *b,
                            kcr_shard_set_t **out, kcr_error_t *err) {
  kcr_shard_set_t *s;
  *out = NULL;
  if (!a || !b)
    return kcr_error_set(err, KCR_EINVAL, "shard set: intersect needs two sets");
  if (!(s = set_alloc(a->n + b->n)))
    return kcr_error_set(err, KCR_ENOMEM, "shard set: out of memory");
  for (size_t i = 0, j = 0; i < a->n && j < b->n;) {
    uint64_t lo = a->r[i].first > b->r[j].first ? a->r[i].first : b->r[j].first;
    uint64_t hi = a->r[i].last < b->r[j].last ? a->r[i].last : b->r[j].last;
    if (lo <= hi)
      set_push(s, lo, hi); /* sorted by first, since both inputs are */
    if (a->r[i].last < b->r[j].last)
      i++;
    else
      j++;
  }
  *out = s;
  return 0;
}

bool kcr_shard_set_equal(const kcr_shard_set_t *a, const kcr_shard_set_t *b) {
  if (a->n != b->n)
    return false;
  return a->n == 0 || memcmp(a->r, b->r, a->n * sizeof(kcr_shard_range)) == 0;
}

static double width(uint64_t first, uint64_t last) {
  return (double)(last - first) + 1.0;
}

double kcr_shard_set_share(const kcr_shard_set_t *s) {
  double sum = 0.0;
  for (size_t i = 0; s && i < s->n; i++)
    sum += width(s->r[i].first, s->r[i].last);
  return sum / TWO64;
}

int kcr_shard_set_selector(const kcr_shard_set_t *s, kcr_shard_key key, char **out,
                           kcr_error_t *err) {
  const char *field;
  kcr_buf_t b;
  int rc = 0;
  *out = NULL;
  if (!s)
    return kcr_error_set(err, KCR_EINVAL, "shard selector: the set is NULL");
  if (key == KCR_SHARD_KEY_NAMESPACE)
    field = "object.metadata.namespace";
  else if (key == KCR_SHARD_KEY_UID)
    field = "object.metadata.uid";
  else if (key == KCR_SHARD_KEY_OWNER_UID)
    field = "object.metadata.ownerReferences[controller].uid";
  else
    return kcr_error_set(err, KCR_EINVAL, "shard selector: unknown key %d", (int)key);
  if (s->n == 0)
    return kcr_error_set(err, KCR_EINVAL,
                         "shard selector: the set is empty (an empty selector selects everything)");
  kcr_buf_init(&b, KCR_SHARD_SELECTOR_MAX);
  for (size_t i = 0; rc == 0 && i < s->n; i++) {
    char end[24];
    if (s->r[i].last == UINT64_MAX)
      snprintf(end, sizeof(end), "10000000000000000");
    else
      snprintf(end, sizeof(end), "%016" PRIx64, s->r[i].last + 1);
    rc = kcr_buf_appendf(&b, "%sshardRange(%s, '0x%016" PRIx64 "', '0x%s')", i ? " || " : "", field,
                         s->r[i].first, end);
  }
  if (rc == 0 && !(*out = kcr_buf_take(&b, NULL)))
    rc = KCR_ENOMEM;
  kcr_buf_free(&b); /* empty after a take; what an error left behind */
  if (rc == KCR_ETOOBIG)
    return kcr_error_set(err, rc, "shard selector: %zu ranges make more than %zu bytes", s->n,
                         KCR_SHARD_SELECTOR_MAX);
  if (rc)
    return kcr_error_set(err, rc, "shard selector: out of memory");
  return 0;
}

/* ---- rings --------------------------------------------------------------- */

/* mix: splitmix64's finaliser, so that near-identical names spread. */
static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* point_of: where member name places its point i on a virtual ring. */
static uint64_t point_of(const char *name, unsigned i) {
  uint64_t h = kcr_shard_hash(name, strlen(name) + 1); /* the NUL separates name and index */
  for (int k = 0; k < 4; k++) {
    h ^= (i >> (8 * k)) & 0xffu;
    h *= FNV64_PRIME;
  }
  return mix(h);
}

typedef struct point {
  uint64_t at;
  size_t owner;
} point;

static int cmp_point(const void *a, const void *b) {
  const point *x = a, *y = b;
  if (x->at != y->at)
    return x->at < y->at ? -1 : 1;
  return x->owner < y->owner ? -1 : x->owner > y->owner; /* names are sorted: owner order */
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* seg_push appends a segment [first, ...) of owner to r, merging with the last
 * one when it has the same owner. r's arrays have room. */
static void seg_push(kcr_shard_ring_t *r, uint64_t first, size_t owner) {
  if (r->nseg > 0 && r->seg_owner[r->nseg - 1] == owner)
    return;
  r->seg_first[r->nseg] = first;
  r->seg_owner[r->nseg] = owner;
  r->nseg++;
}

static int build_contiguous(kcr_shard_ring_t *r) {
  size_t n = r->nmembers;
  /* 2^64 = n * q + (rem + 1): member i starts at floor(i * 2^64 / n). */
  uint64_t q = UINT64_MAX / n, rem = UINT64_MAX % n;
  r->seg_first = kcr__calloc(n, sizeof(uint64_t));
  r->seg_owner = kcr__calloc(n, sizeof(size_t));
  if (!r->seg_first || !r->seg_owner)
    return KCR_ENOMEM;
  for (size_t i = 0; i < n; i++)
    seg_push(r, (uint64_t)i * q + (uint64_t)i * (rem + 1) / n, i);
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* build_balanced: member i (name order) owns the keys [i*K/n, (i+1)*K/n) of
 * the sorted distinct keys, its range starting midway between its first key
 * and the key before it (the first member's at 0); a member with no keys
 * owns nothing. */
static int build_balanced(kcr_shard_ring_t *r, const uint64_t *keys, size_t nkeys) {
  size_t n = r->nmembers, k = 0, started = 0;
  uint64_t *sorted;
  if (nkeys == 0)
    return build_contiguous(r);
  if (!(sorted = kcr__calloc(nkeys, sizeof(uint64_t))))
    return KCR_ENOMEM;
  memcpy(sorted, keys, nkeys * sizeof(uint64_t));
  qsort(sorted, nkeys, sizeof(uint64_t), cmp_u64);
  for (size_t i = 0; i < nkeys; i++) /* distinct */
    if (k == 0 || sorted[k - 1] != sorted[i])
      sorted[k++] = sorted[i];
  r->seg_first = kcr__calloc(n, sizeof(uint64_t));
  r->seg_owner = kcr__calloc(n, sizeof(size_t));
  if (!r->seg_first || !r->seg_owner) {
    kcr__free(sorted);
    return KCR_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    size_t lo = i * k / n, hi = (i + 1) * k / n; /* n, k <= 2^24: no overflow */
    if (lo == hi)
      continue; /* no key of its own: nothing */
    if (started++ == 0)
      seg_push(r, 0, i);
    else /* sorted[lo-1] < first <= sorted[lo] */
      seg_push(r, sorted[lo - 1] + (sorted[lo] - sorted[lo - 1]) / 2 + 1, i);
  }
  kcr__free(sorted);
  return 0;
}

static int build_virtual(kcr_shard_ring_t *r, unsigned vnodes) {
  size_t n = r->nmembers, np = n * vnodes, m = 0;
  point *p = kcr__calloc(np, sizeof(point));
  if (!p)
    return KCR_ENOMEM;
  for (size_t i = 0; i < n; i++)
    for (unsigned k = 0; k < vnodes; k++)
      p[i * vnodes + k] = (point){point_of(r->members[i], k), i};
  qsort(p, np, sizeof(point), cmp_point);
  for (size_t i = 0; i < np; i++) /* drop a point that lost a tie */
    if (m == 0 || p[m - 1].at != p[i].at)
      p[m++] = p[i];
  /* Segments: [0, p0] and (p_last, MAX] go to p0's owner; (p_{k-1}, p_k] to p_k's. */
  r->seg_first = kcr__calloc(m + 1, sizeof(uint64_t));
  r->seg_owner = kcr__calloc(m + 1, sizeof(size_t));
  if (!r->seg_first || !r->seg_owner) {
    kcr__free(p);
    return KCR_ENOMEM;
  }
  seg_push(r, 0, p[0].owner);
  for (size_t k = 1; k < m; k++)
    seg_push(r, p[k - 1].at + 1, p[k].owner);
  if (p[m - 1].at != UINT64_MAX)
    seg_push(r, p[m - 1].at + 1, p[0].owner);
  kcr__free(p);
  return 0;
}

int kcr_shard_ring_create(const char *const *members, size_t n, const kcr_shard_ring_options *o,
                          kcr_shard_ring_t **out, kcr_error_t *err) {
  kcr_shard_ring_options opts = {0};
  kcr_shard_ring_t *r;
  int rc;
  *out = NULL;
  if (o)
    opts = *o;
  if (opts.layout != KCR_SHARD_RING_VIRTUAL && opts.layout != KCR_SHARD_RING_CONTIGUOUS &&
      opts.layout != KCR_SHARD_RING_BALANCED)
    return kcr_error_set(err, KCR_EINVAL, "shard ring: unknown layout %d", (int)opts.layout);
  if (opts.layout == KCR_SHARD_RING_BALANCED &&
      ((opts.nkeys > 0 && !opts.keys) || opts.nkeys > KCR_SHARD_RING_KEYS_MAX))
    return kcr_error_set(err, KCR_EINVAL, "shard ring: %zu keys %s", opts.nkeys,
                         opts.keys ? "(too many)" : "but no array");
  if (opts.vnodes == 0)
    opts.vnodes = KCR_SHARD_RING_VNODES_DEFAULT;
  if (opts.vnodes > KCR_SHARD_RING_VNODES_MAX)
    return kcr_error_set(err, KCR_EINVAL, "shard ring: %u points per member (at most %d)",
                         opts.vnodes, KCR_SHARD_RING_VNODES_MAX);
  if (n > KCR_SHARD_RING_MEMBERS_MAX)
    return kcr_error_set(err, KCR_EINVAL, "shard ring: %zu members (at most %d)", n,
                         KCR_SHARD_RING_MEMBERS_MAX);
  if (n > 0 && !members)
    return kcr_error_set(err, KCR_EINVAL, "shard ring: members is NULL");
  for (size_t i = 0; i < n; i++)
    if (!members[i] || !members[i][0])
      return kcr_error_set(err, KCR_EINVAL, "shard ring: member %zu has no name", i);
  if (!(r = kcr__calloc(1, sizeof(*r))))
    return kcr_error_set(err, KCR_ENOMEM, "shard ring: out of memory");
  if (n > 0 && !(r->members = kcr__calloc(n, sizeof(char *))))
    goto nomem;
  for (size_t i = 0; i < n; i++) {
    if (!(r->members[i] = kcr__strdup(members[i])))
      goto nomem;
    r->nmembers++;
  }
  if (n > 0)
    qsort(r->members, n, sizeof(char *), cmp_name);
  for (size_t i = 1; i < n; i++)
    if (strcmp(r->members[i - 1], r->members[i]) == 0) {
      rc = kcr_error_set(err, KCR_EINVAL, "shard ring: member '%.200s' is named twice",
                         r->members[i]);
      kcr_shard_ring_destroy(r);
      return rc;
    }
  if (n > 0) {
    rc = opts.layout == KCR_SHARD_RING_CONTIGUOUS ? build_contiguous(r)
         : opts.layout == KCR_SHARD_RING_BALANCED ? build_balanced(r, opts.keys, opts.nkeys)
                                                  : build_virtual(r, opts.vnodes);
    if (rc)
      goto nomem;
  }
  *out = r;
  return 0;
nomem:
  kcr_shard_ring_destroy(r);
  return kcr_error_set(err, KCR_ENOMEM, "shard ring: out of memory");
}

void kcr_shard_ring_destroy(kcr_shard_ring_t *r) {
  if (!r)
    return;
  for (size_t i = 0; r->members && i < r->nmembers; i++)
    kcr__free(r->members[i]);
  kcr__free(r->members);
  kcr__free(r->seg_first);
  kcr__free(r->seg_owner);
  kcr__free(r);
}

size_t kcr_shard_ring_size(const kcr_shard_ring_t *r) {
  return r ? r->nmembers : 0;
}

const char *kcr_shard_ring_member(const kcr_shard_ring_t *r, size_t i) {
  return r && i < r->nmembers ? r->members[i] : NULL;
}

/* seg_of: the index of the segment that holds h (nseg > 0). */
static size_t seg_of(const kcr_shard_ring_t *r, uint64_t h) {
  size_t lo = 0, hi = r->nseg; /* the last segment whose first <= h */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->seg_first[mid] <= h)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* seg_last: the last hash of segment k. */
static uint64_t seg_last(const kcr_shard_ring_t *r, size_t k) {
  return k + 1 < r->nseg ? r->seg_first[k + 1] - 1 : UINT64_MAX;
}

const char *kcr_shard_ring_owner(const kcr_shard_ring_t *r, uint64_t h) {
  if (!r || r->nseg == 0)
    return NULL;
  return r->members[r->seg_owner[seg_of(r, h)]];
}

int kcr_shard_ring_set(const kcr_shard_ring_t *r, const char *member, kcr_shard_set_t **out,
                       kcr_error_t *err) {
  kcr_shard_set_t *s;
  size_t idx = SIZE_MAX, count = 0;
  *out = NULL;
  if (!r || !member)
    return kcr_error_set(err, KCR_EINVAL, "shard ring set: the ring or the member is NULL");
  for (size_t i = 0; i < r->nmembers; i++)
    if (strcmp(r->members[i], member) == 0)
      idx = i;
  for (size_t k = 0; k < r->nseg; k++)
    count += r->seg_owner[k] == idx;
  if (!(s = set_alloc(count)))
    return kcr_error_set(err, KCR_ENOMEM, "shard ring set: out of memory");
  for (size_t k = 0; k < r->nseg; k++)
    if (r->seg_owner[k] == idx)
      set_push(s, r->seg_first[k], seg_last(r, k));
  *out = s;
  return 0;
}

double kcr_shard_ring_moved(const kcr_shard_ring_t *a, const kcr_shard_ring_t *b) {
  size_t i = 0, j = 0;
  uint64_t at = 0;
  double moved = 0.0;
  bool ea = !a || a->nseg == 0, eb = !b || b->nseg == 0;
  if (ea && eb)
    return 0.0;
  if (ea || eb)
    return 1.0;
  /* Walk both tilings together, one piece where neither changes owner at a time. */
  for (;;) {
    uint64_t la = seg_last(a, i), lb = seg_last(b, j), last = la < lb ? la : lb;
    if (strcmp(a->members[a->seg_owner[i]], b->members[b->seg_owner[j]]) != 0)
      moved += width(at, last);
    if (last == UINT64_MAX)
      break;
    at = last + 1;
    if (la == last)
      i++;
    if (lb == last)
      j++;
  }
  return moved / TWO64;
}
