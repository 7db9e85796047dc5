/* SPDX-License-Identifier: MIT */
/*
 * kcr/shard_member.h: one replica's membership in a shard ring, by Leases.
 *
 * Each replica holds a coordination.k8s.io/v1 Lease of its own, named
 * "<ring>-<16 hex digits of its identity's FNV-1a>" and labelled
 * KCR_SHARD_RING_LABEL=<ring>, and renews it every retry period. Every retry
 * period it also lists the ring's Leases; the members are the holders of those
 * whose renewTime + leaseDurationSeconds is still ahead of this process's wall
 * clock (so the replicas' clocks must agree to well within a lease duration).
 * From the members it computes the ring (kcr/sharding.h), the same on every
 * replica that sees the same Leases, and tells on_change when it changed. A
 * graceful stop deletes the Lease, so the others drop this replica at their
 * next list rather than after the lease duration.
 *
 * Handover. What the ring gives a replica (its target) is not what it may
 * reconcile (its effective set): a range moves without two replicas holding
 * it at once. On a ring change a replica first shrinks its effective set to
 * what it keeps, has on_drain wait for the reconciles in flight outside it,
 * and then writes KCR_SHARD_RELEASED_ANNOTATION=<the ring's generation> on
 * its Lease: a promise that its effective set lies within its target in that
 * ring. It grows to its target only once every other Lease of the ring
 * carries that promise for the same generation, or has been seen unchanged
 * on the local monotonic clock for its lease duration (leader election's
 * expiry rule: such a holder fenced itself at its renew deadline), or is
 * gone (a graceful stop drains, then deletes its Lease). Targets in one ring
 * are disjoint, so effective sets never overlap. A replica past its renew
 * deadline (kcr_shard_member_may_own false) owns nothing at once and starts
 * again from an empty effective set. The generation is the FNV-1a of the
 * sorted member names and the ring's layout, so replicas that see the same
 * members name the ring alike without a coordinator.
 */
#ifndef KCR_SHARD_MEMBER_H
#define KCR_SHARD_MEMBER_H

#include <stdbool.h>
#include <stdint.h>

#include "kcr/client.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/metrics.h"
#include "kcr/sharding.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The label that names a shard Lease's ring. */
#define KCR_SHARD_RING_LABEL "kcr.dev/shard-ring"

/* kcr_shard_member_t: opaque. */
typedef struct kcr_shard_member kcr_shard_member_t;

/* The annotation of a shard Lease that says its holder has released every
 * range outside its part of the ring of that generation (16 hex digits). */
#define KCR_SHARD_RELEASED_ANNOTATION "kcr.dev/shard-released"

/* kcr_shard_member_drain_cb: this replica now reconciles only keys in keep
 * (borrowed for the call): return whether the reconciles in flight of keys
 * outside it have all ended. Asked after a shrink, again every 50 ms until
 * it says so; nothing is announced or gained before. Must not block: the
 * member's thread keeps renewing the Lease meanwhile. No lock held. */
typedef bool (*kcr_shard_member_drain_cb)(const kcr_shard_set_t *keep, void *data);

/* kcr_shard_member_effective_cb: the effective set changed to effective
 * (borrowed for the call): after a drain, and when it grows. Same thread. */
typedef void (*kcr_shard_member_effective_cb)(const kcr_shard_set_t *effective, void *data);

/* kcr_shard_member_keys_cb: the hashes of the keys a balanced ring splits
 * (KCR_SHARD_RING_BALANCED), as a new array in *out (freed with kcr_free) of
 * *n; 0, KCR_EAGAIN while they are not known yet (no ring is made meanwhile:
 * nobody owns anything), or another kcr_err (logged, retried next period).
 * Asked on the member's thread at every list of the ring. */
typedef int (*kcr_shard_member_keys_cb)(uint64_t **out, size_t *n, void *data);

/* kcr_shard_member_change_cb: the ring changed (ring borrowed for the call;
 * kcr_shard_ring_set(ring, kcr_shard_member_identity(m), ...) is this
 * replica's part). Runs on the member's thread, no lock held; return soon. */
typedef void (*kcr_shard_member_change_cb)(const kcr_shard_ring_t *ring, void *data);

/*
 * kcr_shard_member_options: zero-initialise.
 *   client           required; borrowed, must outlive the member.
 *   ring             required: the ring's name (a label value, and the prefix of
 *                    the Lease name: at most 46 characters).
 *   lease_namespace  required: where the ring's Leases live.
 *   identity         NULL: "<hostname>_<uuid v4>", as leader election's.
 *   lease_duration_ns, renew_deadline_ns, retry_period_ns  0: 15 s, 10 s, 2 s;
 *                    lease_duration > renew_deadline > retry_period > 0.
 *   ring_options     the ring's layout (NULL fields: the defaults).
 *   clock            NULL: the system clock; borrowed.
 *   on_change, data  as above; may be NULL.
 *   on_drain, on_effective  the handover's (above); may be NULL (then a
 *                    shrink waits for nothing: the caller checks
 *                    kcr_shard_member_owns before each reconcile itself).
 *   keys             for a balanced ring_options.layout, where its keys come
 *                    from (above; NULL: none, the ring splits as contiguous).
 *                    A change of the keys is a change of the ring.
 *   metrics          NULL, or where the member's metrics go (borrowed, must
 *                    outlive it), each labelled ring: kcr_shard_members (live
 *                    Leases in the ring), kcr_shard_owned_share (the effective
 *                    set's share of the hash space, 0..1; with a balanced ring
 *                    it can be tiny while the set holds a third of the keys),
 *                    kcr_shard_owned_keys (how many keys of a balanced ring
 *                    the effective set holds: the load),
 *                    kcr_shard_handovers_total{direction=shrink|grow} and
 *                    kcr_shard_handover_duration_seconds (from the ring change
 *                    this replica saw to its effective set reaching its target).
 *   expected_members  0: take a part as soon as the ring is seen. N: the first
 *                    grow waits until the ring has N members, or a lease
 *                    duration after the start, whichever comes first, so the
 *                    first replica of N never takes (and caches) everything
 *                    for a moment. Later changes never wait on it.
 */
typedef struct kcr_shard_member_options {
  kcr_client_t *client;
  const char *ring;
  const char *lease_namespace;
  const char *identity;
  int64_t lease_duration_ns;
  int64_t renew_deadline_ns;
  int64_t retry_period_ns;
  kcr_shard_ring_options ring_options;
  kcr_clock_t *clock;
  kcr_shard_member_change_cb on_change;
  void *data;
  kcr_shard_member_drain_cb on_drain;
  kcr_shard_member_effective_cb on_effective;
  kcr_metrics_registry_t *metrics;
  size_t expected_members;
  kcr_shard_member_keys_cb keys;
} kcr_shard_member_options;

/*
 * kcr_shard_member_create validates o and makes a member (not running). Strings
 * are copied. *out: new, NULL on failure. Errors: KCR_EINVAL (a missing or bad
 * option; the message names it), KCR_ESYS (no randomness), KCR_ENOMEM.
 */
KCR_EXTERN int kcr_shard_member_create(const kcr_shard_member_options *o, kcr_shard_member_t **out,
                                       kcr_error_t *err);

/* kcr_shard_member_start starts the member's thread: renew, list, wait, over
 * again. 0, or KCR_ESYS / KCR_EINVAL (started twice). Any thread. */
KCR_EXTERN int kcr_shard_member_start(kcr_shard_member_t *m, kcr_error_t *err);

/* kcr_shard_member_stop hands everything over (a SIGTERM, without waiting
 * for the Lease to expire): the member's thread shrinks to the empty set and
 * waits for on_drain, still renewing, then ends; the Lease is then deleted
 * (waiting at most renew_deadline for the API server). It waits as long as a
 * reconcile does. Idempotent; not from a callback. */
KCR_EXTERN void kcr_shard_member_stop(kcr_shard_member_t *m);

/* kcr_shard_member_destroy stops m (as kcr_shard_member_stop) and frees it;
 * NULL is a no-op. */
KCR_EXTERN void kcr_shard_member_destroy(kcr_shard_member_t *m);

/* kcr_shard_member_identity: this replica's identity (borrowed, lives as long as m). */
KCR_EXTERN const char *kcr_shard_member_identity(const kcr_shard_member_t *m);

/* kcr_shard_member_lease_name: the name of this replica's Lease (borrowed). */
KCR_EXTERN const char *kcr_shard_member_lease_name(const kcr_shard_member_t *m);

/*
 * kcr_shard_member_set: a new set in *out of what this replica owns in the
 * latest ring it computed (the empty set before the first list). n_members
 * (may be NULL) gets the ring's size. Errors: KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_shard_member_set(kcr_shard_member_t *m, kcr_shard_set_t **out, size_t *n_members,
                                    kcr_error_t *err);

/* kcr_shard_member_may_own: whether this replica is within its self-fence:
 * monotonic now < the start of its last successful renew + renew_deadline.
 * False before the first renew and after a stop. Any thread. */
KCR_EXTERN bool kcr_shard_member_may_own(kcr_shard_member_t *m);

/*
 * kcr_shard_member_effective: a new set in *out of what this replica may
 * reconcile now (the handover above): empty before its first grow, and while
 * kcr_shard_member_may_own is false. Errors: KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_shard_member_effective(kcr_shard_member_t *m, kcr_shard_set_t **out,
                                          kcr_error_t *err);

/* kcr_shard_member_fence_remaining: how long this replica may still act on
 * its effective set, in ns: the start of its last successful renew plus the
 * renew deadline, minus now; <= 0 once past it, before the first renew and
 * after a stop. A manager's object client asks it before each write. Any
 * thread. */
KCR_EXTERN int64_t kcr_shard_member_fence_remaining(kcr_shard_member_t *m);

/* kcr_shard_member_owns: whether hash h (kcr_shard_object_hash) is in the
 * effective set and the fence holds: the check right before a reconcile. Any
 * thread. */
KCR_EXTERN bool kcr_shard_member_owns(kcr_shard_member_t *m, uint64_t h);

/* kcr_shard_member_generation: the generation of the ring the member last
 * released into (16 hex digits, "" before the first), in buf of size >= 17. */
KCR_EXTERN void kcr_shard_member_generation(kcr_shard_member_t *m, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* KCR_SHARD_MEMBER_H */
