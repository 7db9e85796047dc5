/* SPDX-License-Identifier: MIT */
/*
 * kcr/sharding.h: the hash ring of sharded controllers and the shard selector of
 * the API server's sharded list and watch (KEP-5866, feature gate
 * ShardedListAndWatch, alpha since Kubernetes 1.36).
 *
 * The API server hashes an object's metadata.namespace or metadata.uid with
 * 64-bit FNV-1a and, given the query parameter shardSelector (for example
 * "shardRange(object.metadata.namespace, '0x0', '0x8000000000000000')", ranges
 * OR-ed with "||"), sends only the objects whose hash falls in one of the
 * ranges [start, end). kcr_shard_hash is that hash; a kcr_shard_set_t is a set of
 * ranges with its selector text and a local membership test; a
 * kcr_shard_ring_t splits the whole space among the members of a ring (the live
 * replicas) deterministically, so every replica that sees the same members
 * computes the same split. docs/design.md ("Sharding") has the measurements
 * behind the default layout.
 *
 * All objects here are immutable once made and may be read from any thread.
 */
#ifndef KCR_SHARDING_H
#define KCR_SHARDING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/common.h"
#include "kcr/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_shard_key: which field is hashed. By namespace (the default) an owner
 * and its children in one namespace land on one replica, and every
 * cluster-scoped object on the replica that owns the hash of "". By uid, the
 * objects of one namespace spread over the replicas; their children follow
 * them by KCR_SHARD_KEY_OWNER_UID, which the API server cannot select on: an
 * informer on that key receives every object and keeps its shard itself. */
typedef enum kcr_shard_key {
  KCR_SHARD_KEY_NAMESPACE = 0, /* object.metadata.namespace */
  KCR_SHARD_KEY_UID = 1,       /* object.metadata.uid */
  /* the uid of the object's controller owner reference (the one with
   * controller: true), else the object's own metadata.uid: a child lands
   * where its owner does under KCR_SHARD_KEY_UID. Client side only. */
  KCR_SHARD_KEY_OWNER_UID = 2
} kcr_shard_key;

/* kcr_shard_range: the hashes first..last, both included (so the whole space,
 * whose exclusive end 2^64 has no uint64_t, is {0, UINT64_MAX}). */
typedef struct kcr_shard_range {
  uint64_t first;
  uint64_t last;
} kcr_shard_range;

/* kcr_shard_hash: 64-bit FNV-1a of s[0, len), what the API server computes for
 * a shard selector. s may be NULL when len is 0. Any thread. */
KCR_EXTERN uint64_t kcr_shard_hash(const char *s, size_t len);

/*
 * kcr_shard_object_hash: the hash of obj's (borrowed) field named by key; an
 * object without a namespace hashes as "". Errors: KCR_EINVAL (obj not an
 * object, or KCR_SHARD_KEY_UID and no metadata.uid, or
 * KCR_SHARD_KEY_OWNER_UID and neither a controller owner's uid nor its own),
 * *out left alone.
 */
KCR_EXTERN int kcr_shard_object_hash(const json_t *obj, kcr_shard_key key, uint64_t *out,
                                     kcr_error_t *err);

/* kcr_shard_set_t: a set of hash ranges, sorted, adjacent and overlapping
 * ranges merged. Opaque and immutable. */
typedef struct kcr_shard_set kcr_shard_set_t;

/*
 * kcr_shard_set_create: a new set in *out of the n ranges (borrowed; any order;
 * they may overlap). n may be 0: the empty set, which owns nothing. Errors:
 * KCR_EINVAL (a range whose first > last, ranges NULL with n > 0), KCR_ENOMEM;
 * *out is NULL on failure.
 */
KCR_EXTERN int kcr_shard_set_create(const kcr_shard_range *ranges, size_t n, kcr_shard_set_t **out,
                                    kcr_error_t *err);

/* kcr_shard_set_copy: a new copy of s in *out. Errors: KCR_EINVAL (s NULL), KCR_ENOMEM. */
KCR_EXTERN int kcr_shard_set_copy(const kcr_shard_set_t *s, kcr_shard_set_t **out,
                                  kcr_error_t *err);

/* kcr_shard_set_destroy frees s; NULL is a no-op. */
KCR_EXTERN void kcr_shard_set_destroy(kcr_shard_set_t *s);

/* kcr_shard_set_contains: whether hash h is in s (a binary search). */
KCR_EXTERN bool kcr_shard_set_contains(const kcr_shard_set_t *s, uint64_t h);

/* kcr_shard_set_ranges: the number of ranges; *out (when not NULL) gets the
 * sorted, merged ranges (borrowed, live as long as s). */
KCR_EXTERN size_t kcr_shard_set_ranges(const kcr_shard_set_t *s, const kcr_shard_range **out);

/* kcr_shard_set_intersect: a new set in *out of the hashes both a and b hold
 * (borrowed). Errors: KCR_EINVAL (a or b NULL), KCR_ENOMEM; *out NULL then. */
KCR_EXTERN int kcr_shard_set_intersect(const kcr_shard_set_t *a, const kcr_shard_set_t *b,
                                       kcr_shard_set_t **out, kcr_error_t *err);

/* kcr_shard_set_equal: whether a and b hold the same hashes. */
KCR_EXTERN bool kcr_shard_set_equal(const kcr_shard_set_t *a, const kcr_shard_set_t *b);

/* kcr_shard_set_share: the fraction of the hash space s holds, 0.0 .. 1.0. */
KCR_EXTERN double kcr_shard_set_share(const kcr_shard_set_t *s);

/*
 * kcr_shard_set_selector: the shardSelector text for s on key, in *out (new;
 * release with kcr_free): shardRange(object.metadata.namespace, '0x<first>',
 * '0x<last + 1>') per range, joined with " || ", each bound 16 hex digits (the
 * API server refuses '0x0': it wants '0x0000000000000000'); the end of the
 * space is '0x10000000000000000'. Errors: KCR_EINVAL (s NULL, a bad key, or s empty:
 * the server reads an empty selector as "everything"), KCR_ETOOBIG (longer than
 * KCR_SHARD_SELECTOR_MAX), KCR_ENOMEM. For KCR_SHARD_KEY_OWNER_UID the
 * field reads object.metadata.ownerReferences[controller].uid: a text to show
 * (kcr_informer_debug), never sent, since no API server takes it.
 */
#define KCR_SHARD_SELECTOR_MAX ((size_t)1024 * 1024)
KCR_EXTERN int kcr_shard_set_selector(const kcr_shard_set_t *s, kcr_shard_key key, char **out,
                                      kcr_error_t *err);

/* kcr_shard_ring_layout: how the ring splits the space among its members. */
typedef enum kcr_shard_ring_layout {
  /* Consistent hashing: each member places vnodes points on the ring and owns
   * the hashes up to each of its points; a join or a leave moves only the
   * joiner's or leaver's share. The default. */
  KCR_SHARD_RING_VIRTUAL = 0,
  /* One contiguous range per member, members in name order, equal widths:
   * perfect balance and one range each, but a join or leave shifts every
   * boundary after it. */
  KCR_SHARD_RING_CONTIGUOUS = 1,
  /* The keys that exist (kcr_shard_ring_options.keys: their hashes) split
   * into equal counts, one contiguous run of them per member in name order,
   * each boundary midway between two neighbouring keys: every member owns
   * floor(K/n) or ceil(K/n) of them, however their hashes cluster. FNV-1a
   * puts names that differ only in their last byte within 2^48 of each other
   * (team-1 .. team-9), so a hash ring gives such namespaces all to one
   * member; this layout does not. A key that appears later falls in the
   * range around it until the ring is made again. No keys: as contiguous. */
  KCR_SHARD_RING_BALANCED = 2
} kcr_shard_ring_layout;

/* The default number of points per member of a KCR_SHARD_RING_VIRTUAL ring. */
#define KCR_SHARD_RING_VNODES_DEFAULT 64
/* The most points per member. */
#define KCR_SHARD_RING_VNODES_MAX 4096
/* The most members of a ring. */
#define KCR_SHARD_RING_MEMBERS_MAX 4096

/* kcr_shard_ring_options: zero-initialise. vnodes: points per member of a
 * virtual ring (0: KCR_SHARD_RING_VNODES_DEFAULT; ignored otherwise). keys,
 * nkeys: for a balanced ring, the hashes of the keys to split (borrowed for
 * the create; any order, repeats count once; at most KCR_SHARD_RING_KEYS_MAX);
 * ignored otherwise. */
typedef struct kcr_shard_ring_options {
  kcr_shard_ring_layout layout;
  unsigned vnodes;
  const uint64_t *keys;
  size_t nkeys;
} kcr_shard_ring_options;

/* The most keys a balanced ring splits. */
#define KCR_SHARD_RING_KEYS_MAX (1u << 24)

/* kcr_shard_ring_t: an immutable split of the hash space among named members. */
typedef struct kcr_shard_ring kcr_shard_ring_t;

/*
 * kcr_shard_ring_create: a new ring in *out of the n member names (borrowed,
 * copied; any order: the ring depends only on the set). o may be NULL (the
 * defaults). n may be 0: a ring in which nobody owns anything. Errors:
 * KCR_EINVAL (a NULL, empty or repeated name, more than
 * KCR_SHARD_RING_MEMBERS_MAX members, vnodes above KCR_SHARD_RING_VNODES_MAX, an
 * unknown layout, nkeys without keys or above KCR_SHARD_RING_KEYS_MAX),
 * KCR_ENOMEM; *out is NULL on failure.
 */
KCR_EXTERN int kcr_shard_ring_create(const char *const *members, size_t n,
                                     const kcr_shard_ring_options *o, kcr_shard_ring_t **out,
                                     kcr_error_t *err);

/* kcr_shard_ring_destroy frees r; NULL is a no-op. */
KCR_EXTERN void kcr_shard_ring_destroy(kcr_shard_ring_t *r);

/* kcr_shard_ring_size: the number of members. */
KCR_EXTERN size_t kcr_shard_ring_size(const kcr_shard_ring_t *r);

/* kcr_shard_ring_member: member i (borrowed) in name order, NULL past the end. */
KCR_EXTERN const char *kcr_shard_ring_member(const kcr_shard_ring_t *r, size_t i);

/* kcr_shard_ring_owner: the member (borrowed) that owns hash h; NULL for an
 * empty ring. */
KCR_EXTERN const char *kcr_shard_ring_owner(const kcr_shard_ring_t *r, uint64_t h);

/*
 * kcr_shard_ring_set: a new set in *out of what member owns (the empty set for
 * a name that is not a member). Errors: KCR_EINVAL (r or member NULL),
 * KCR_ENOMEM.
 */
KCR_EXTERN int kcr_shard_ring_set(const kcr_shard_ring_t *r, const char *member,
                                  kcr_shard_set_t **out, kcr_error_t *err);

/* kcr_shard_ring_moved: the fraction of the hash space (0.0 .. 1.0) whose owner
 * differs between a and b; a hash owned by nobody in one of them counts as moved
 * when the other has an owner. */
KCR_EXTERN double kcr_shard_ring_moved(const kcr_shard_ring_t *a, const kcr_shard_ring_t *b);

#ifdef __cplusplus
}
#endif

#endif /* KCR_SHARDING_H */
