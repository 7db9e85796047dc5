/* SPDX-License-Identifier: MIT */
/*
 * kcr/leaderelection.h: leader election on a coordination.k8s.io/v1 Lease, with
 * client-go's algorithm (tools/leaderelection with a LeaseLock):
 *
 *  - a candidate tries to acquire every retry_period plus up to 1.2 x retry_period
 *    of jitter;
 *  - a holder is respected until observedTime + leaseDurationSeconds on the LOCAL
 *    clock, where observedTime is when this process last saw the Lease record
 *    change; the record's own timestamps are only change signals, so clock skew
 *    between processes does not matter;
 *  - the leader renews every retry_period; if it cannot renew for renew_deadline
 *    it has lost the lease. The deadline is measured from the start of the last
 *    successful renew on the monotonic clock, so a leader that wakes from a
 *    pause (SIGSTOP, a frozen VM) past it has lost at once;
 *  - a leader that reads the Lease and finds another holder whose lease has not
 *    expired has lost at once (client-go retries until the renew deadline);
 *  - every write is an optimistic PUT carrying the resourceVersion last read
 *    (a Conflict means someone else wrote first); leaseTransitions counts changes
 *    of holder; acquireTime and renewTime are MicroTime;
 *  - release on cancel: a graceful stop writes an empty holderIdentity with
 *    leaseDurationSeconds 1, so a standby takes over within a retry period.
 *
 * THE CONTRACT FOR A MANAGER: when the lease is lost (not released), stop all
 * leader-only work and exit the process non-zero at once, without a graceful
 * shutdown, as controller-runtime does. Two leaders must never act at the same
 * time; a process that lost its lease cannot know what the new leader is doing.
 * The default on_stopped_leading does exactly that (logs, then _exit(1)).
 *
 * SELF-FENCING (beyond client-go): a leader may write only while monotonic
 * now < start of its last successful renew + renew_deadline. Others take the
 * lease no sooner than lease_duration after they saw that renew, and
 * lease_duration > renew_deadline, so a leader that honours the fence has
 * stopped writing before the lease can pass, even when it is paused or cut off
 * and has no way of knowing. kcr_leader_election_may_write is the check; the
 * manager's object client and controller workers consult it (kcr/manager.h).
 * What it cannot stop: a request checked just before the process froze and
 * sent after it woke (microseconds of window per write), or bytes already in
 * the kernel's socket buffer (they arrive during the pause, before the lease
 * can pass).
 *
 * The elector runs on its own thread and waits with kcr_clock_timedwait, so a
 * fake clock (kcr/clock.h) drives it in tests.
 */
#ifndef KCR_LEADERELECTION_H
#define KCR_LEADERELECTION_H

#include <stdbool.h>
#include <stdint.h>

#include "kcr/client.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_leader_election_t: opaque. */
typedef struct kcr_leader_election kcr_leader_election_t;

/* client-go's and controller-runtime's defaults. */
#define KCR_LEADER_LEASE_DURATION_DEFAULT (15 * KCR_NSEC_PER_SEC)
#define KCR_LEADER_RENEW_DEADLINE_DEFAULT (10 * KCR_NSEC_PER_SEC)
#define KCR_LEADER_RETRY_PERIOD_DEFAULT (2 * KCR_NSEC_PER_SEC)
#define KCR_LEADER_JITTER_FACTOR 1.2

/* Where kcr_leader_election_create looks for the namespace in a Pod. */
#define KCR_SERVICE_ACCOUNT_NAMESPACE_FILE KCR_SERVICE_ACCOUNT_DIR "/namespace"

/*
 * Callbacks, each run on the elector's thread (never with a lock held), with the
 * options' callback_data:
 *   on_started_leading(data)         this process became the leader. Start the
 *                                    leader-only work elsewhere and return soon:
 *                                    renewing waits for it.
 *   on_stopped_leading(lost, data)   leadership ended: lost is 1 when the lease
 *                                    was lost (no renew for renew_deadline, or
 *                                    another live holder seen), 0 after a
 *                                    graceful stop (kcr_leader_election_stop)
 *                                    once the lease is released. Runs only if
 *                                    on_started_leading ran. NULL: the default,
 *                                    kcr_leader_election_exit_on_lost.
 *   on_new_leader(identity, data)    the holder seen in the Lease changed
 *                                    (including to this process); identity is
 *                                    borrowed for the call, "" when none.
 */
typedef void (*kcr_leader_started_cb)(void *data);
typedef void (*kcr_leader_stopped_cb)(int lost, void *data);
typedef void (*kcr_leader_new_leader_cb)(const char *identity, void *data);

/*
 * kcr_leader_election_options: zero-initialise, then set what you need.
 *   client           required; borrowed, must outlive the elector.
 *   lease_name       required (--leader-election-id).
 *   lease_namespace  NULL: read KCR_SERVICE_ACCOUNT_NAMESPACE_FILE (in a Pod);
 *                    out of cluster it must be given, else KCR_ECONFIG.
 *   identity         NULL: "<hostname>_<uuid v4>", as controller-runtime.
 *   lease_duration_ns, renew_deadline_ns, retry_period_ns   0: 15 s, 10 s, 2 s.
 *                    Must satisfy lease_duration > renew_deadline >
 *                    1.2 x retry_period > 0 (client-go's validation).
 *   release_on_cancel  non-zero: a graceful stop releases the lease.
 *   clock            NULL: the system clock; borrowed.
 *   metrics          NULL: none; else leader_election_master_status{name} is
 *                    registered there (1 while leading, 0 otherwise).
 *   callbacks        as above; callback_data is handed to each.
 */
typedef struct kcr_leader_election_options {
  kcr_client_t *client;
  const char *lease_name;
  const char *lease_namespace;
  const char *identity;
  int64_t lease_duration_ns;
  int64_t renew_deadline_ns;
  int64_t retry_period_ns;
  int release_on_cancel;
  kcr_clock_t *clock;
  kcr_metrics_registry_t *metrics;
  kcr_leader_started_cb on_started_leading;
  kcr_leader_stopped_cb on_stopped_leading;
  kcr_leader_new_leader_cb on_new_leader;
  void *callback_data;
} kcr_leader_election_options;

/*
 * kcr_leader_election_create validates the options and makes an elector (not
 * running). Strings are copied. *out: new, NULL on failure. Errors: KCR_EINVAL
 * (missing client or name, durations out of order; the message says which),
 * KCR_ECONFIG (no namespace and no service-account file), KCR_ENOMEM,
 * KCR_ESYS. Any thread.
 */
KCR_EXTERN int kcr_leader_election_create(const kcr_leader_election_options *opts,
                                          kcr_leader_election_t **out, kcr_error_t *err);

/*
 * kcr_leader_election_start starts the elector's thread: acquire, then renew
 * until lost or stopped. Returns 0, KCR_EINVAL if started before, or KCR_ESYS.
 * Any thread.
 */
KCR_EXTERN int kcr_leader_election_start(kcr_leader_election_t *le, kcr_error_t *err);

/*
 * kcr_leader_election_stop ends the election and joins the thread: requests in
 * flight are cancelled; if leading and release_on_cancel is set, the lease is
 * released (one PUT, bounded by renew_deadline); on_stopped_leading(0) runs if
 * it was leading. Idempotent. Not from a callback. Any other thread.
 */
KCR_EXTERN void kcr_leader_election_stop(kcr_leader_election_t *le);

/* kcr_leader_election_destroy stops if needed and frees. NULL is ignored. */
KCR_EXTERN void kcr_leader_election_destroy(kcr_leader_election_t *le);

/* kcr_leader_election_is_leader tells whether this process holds the lease now
 * (as last observed). Any thread. */
KCR_EXTERN bool kcr_leader_election_is_leader(kcr_leader_election_t *le);

/*
 * kcr_leader_election_identity returns this candidate's identity. Borrowed,
 * lives as long as le. Any thread.
 */
KCR_EXTERN const char *kcr_leader_election_identity(kcr_leader_election_t *le);

/*
 * kcr_leader_election_leader copies the identity of the holder last observed
 * ("" when none) into buf (size bytes). Returns its length, or KCR_ETOOBIG.
 * Any thread.
 */
KCR_EXTERN int kcr_leader_election_leader(kcr_leader_election_t *le, char *buf, size_t size);

/*
 * kcr_leader_election_check is a kcr_check_cb (kcr/server.h) for /healthz:
 * data is the elector. Healthy unless this process is the leader and its lease
 * has gone unrenewed for lease_duration + 20 s (client-go's
 * HealthzAdaptor with controller-runtime's 20 s timeout): a leader stuck while
 * renewing. Quick; any thread.
 */
KCR_EXTERN int kcr_leader_election_check(void *data);

/*
 * kcr_leader_election_fence_remaining returns how long, in ns on the elector's
 * clock, this process may still write as the leader: the start of its last
 * successful acquire or renew + renew_deadline - now; 0 when that has passed or
 * when it does not lead (before acquiring, after losing or stopping). It turns
 * 0 by the clock alone, before the elector thread runs again. Lock-free (one
 * atomic load and a clock read); any thread.
 */
KCR_EXTERN int64_t kcr_leader_election_fence_remaining(kcr_leader_election_t *le);

/*
 * kcr_leader_election_may_write is kcr_leader_election_fence_remaining(le) > 0:
 * 1 while this process leads and is inside its renew deadline, else 0. Check
 * it right before every write that only the leader may make. Any thread.
 */
KCR_EXTERN int kcr_leader_election_may_write(kcr_leader_election_t *le);

/*
 * kcr_leader_election_exit_on_lost is the default on_stopped_leading: when lost
 * is 1 it logs "leader election lost" at error level and calls _exit(1) (no
 * atexit handlers, no graceful shutdown: the contract above); when lost is 0 it
 * does nothing.
 */
KCR_EXTERN void kcr_leader_election_exit_on_lost(int lost, void *data);

#ifdef __cplusplus
}
#endif

#endif /* KCR_LEADERELECTION_H */
