/* SPDX-License-Identifier: MIT */
/*
 * leaderelection.c: Lease leader election (kcr/leaderelection.h).
 *
 * DESIGN. One thread per elector runs client-go's LeaderElector.Run: acquire
 * (tryAcquireOrRenew every retry period with 1.2 jitter, sliding), then renew
 * (rounds of tryAcquireOrRenew every retry period, each round bounded by the
 * renew deadline), then release or report the loss. tryAcquireOrRenew is a
 * straight transcription of client-go's: a fast path where the leader PUTs the
 * Lease it last wrote, else GET (create on NotFound), compare the raw spec with
 * the one last observed (a change resets observedTime on the LOCAL monotonic
 * clock), respect a live holder, and PUT with the resourceVersion read. Only the
 * local clock decides expiry; the record's renewTime is a change signal.
 *
 * Self-fencing (beyond client-go): every successful acquire or renew records
 * the monotonic time its attempt BEGAN; this process may write only while
 * now < that + renew deadline (fence_until). The start of the attempt, not the
 * answer, because the server may have applied the write at any moment after we
 * sent it, and other candidates count their lease_duration from when they saw
 * it. The renew loop's deadline is that same instant, never "now + renew
 * deadline" at the start of a round, so a process that wakes from a pause
 * (SIGSTOP, a frozen VM, a long GC-like stall) past it has lost at once,
 * without one more request. Reading the Lease and finding another holder whose
 * lease is still valid ends leadership at once as well. fence_until is an
 * atomic so the check is cheap on every write.
 *
 * All waits are kcr_clock_timedwait on one condition variable, so a fake clock
 * drives the elector in tests and kcr_leader_election_stop wakes it at once. A
 * kcr_cancel_t aborts requests in flight on stop; the release PUT then runs
 * without it. The observed record and the leader flag are under mu because
 * other threads read them (is_leader, the healthz check); everything else
 * belongs to the elector thread. Callbacks run on that thread with no lock held.
 */
#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcr/apierror.h"
#include "kcr/leaderelection.h"
#include "kcr/log.h"
#include "kcr/rand.h"
#include "kcr/time.h"
#include "manager/leaderelection_internal.h"
#include "util/alloc.h"

#define HOLDER_MAX 256

static const kcr_gvr lease_gvr = {"coordination.k8s.io", "v1", "leases"};

/* record_t: client-go's LeaderElectionRecord. */
typedef struct record {
  char holder[HOLDER_MAX];
  int lease_seconds;
  char acquire[KCR_TIME_BUFSIZE];
  char renew[KCR_TIME_BUFSIZE];
  long long transitions;
} record_t;

struct kcr_leader_election {
  kcr_client_t *client;
  char *name, *ns, *identity, *describe;
  int64_t lease_ns, renew_ns, retry_ns;
  int release_on_cancel;
  kcr_clock_t *clock;
  kcr_metric_child_t *status;
  kcr_leader_started_cb on_started;
  kcr_leader_stopped_cb on_stopped;
  kcr_leader_new_leader_cb on_new_leader;
  void *data;
  kcr_cancel_t *cancel;

  pthread_t thread;
  int started; /* owner thread */
  int joined;  /* owner thread */

  pthread_mutex_t mu;
  pthread_cond_t cond;
  int stop;              /* protected by mu */
  record_t observed;     /* protected by mu */
  int64_t observed_time; /* protected by mu: local monotonic ns */

  /* Writes are allowed while kcr_clock_now < fence_until: the start of the
   * last successful acquire/renew + renew_ns; 0 when not leading. Written by
   * the elector thread only, read by any. */
  _Atomic int64_t fence_until;

  /* elector thread only */
  json_t *lease;      /* the Lease last read or written */
  char *observed_raw; /* its spec, serialised, as last compared */
  char reported[HOLDER_MAX];
  int reported_set;
  uint64_t rng;
};

/* ---- options ---- */

static void le_free(kcr_leader_election_t *le) {
  kcr__free(le->name);
  kcr__free(le->ns);
  kcr__free(le->identity);
  kcr__free(le->describe);
  kcr__free(le->observed_raw);
  if (le->lease)
    json_decref(le->lease);
  kcr_cancel_destroy(le->cancel);
  pthread_mutex_destroy(&le->mu);
  pthread_cond_destroy(&le->cond);
  kcr__free(le);
}

int kcr__leader_identity(const char *given, char *buf, size_t size) {
  char host[256], uuid[KCR_UUID_BUFSIZE];
  int n;
  if (given && *given) {
    n = snprintf(buf, size, "%s", given);
  } else {
    if (gethostname(host, sizeof(host)) != 0)
      snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    if (kcr_uuid_v4(uuid) != 0)
      return KCR_ESYS;
    n = snprintf(buf, size, "%s_%s", host, uuid);
  }
  return n < 0 || (size_t)n >= size ? KCR_ETOOBIG : 0;
}

int kcr_leader_election_create(const kcr_leader_election_options *o, kcr_leader_election_t **out,
                               kcr_error_t *err) {
  kcr_leader_election_t *le;
  char nsbuf[256], id[512];
  const char *ns;
  int64_t lease, renew, retry;
  int rc;

  *out = NULL;
  if (!o || !o->client || !o->lease_name || !*o->lease_name)
    return kcr_error_set(err, KCR_EINVAL, "leader election: client and lease name are required");
  lease = o->lease_duration_ns ? o->lease_duration_ns : KCR_LEADER_LEASE_DURATION_DEFAULT;
  renew = o->renew_deadline_ns ? o->renew_deadline_ns : KCR_LEADER_RENEW_DEADLINE_DEFAULT;
  retry = o->retry_period_ns ? o->retry_period_ns : KCR_LEADER_RETRY_PERIOD_DEFAULT;
  if (lease <= renew)
    return kcr_error_set(err, KCR_EINVAL,
                         "leader election: leaseDuration must be greater than renewDeadline");
  if (retry <= 0 || (double)renew <= KCR_LEADER_JITTER_FACTOR * (double)retry)
    return kcr_error_set(err, KCR_EINVAL,
                         "leader election: renewDeadline must be greater than retryPeriod*1.2");
  if (lease < KCR_NSEC_PER_SEC)
    return kcr_error_set(err, KCR_EINVAL, "leader election: leaseDuration below one second");
  ns = o->lease_namespace;
  if (!ns || !*ns) {
    if (kcr_service_account_namespace(NULL, nsbuf, sizeof(nsbuf), NULL) != 0)
      return kcr_error_set(err, KCR_ECONFIG,
                           "leader election: no lease namespace given and not running in a "
                           "cluster (%s is missing); set the leader election namespace",
                           KCR_SERVICE_ACCOUNT_NAMESPACE_FILE);
    ns = nsbuf;
  }
  rc = kcr__leader_identity(o->identity, id, sizeof(id));
  if (rc == KCR_ESYS)
    return kcr_error_set(err, rc, "leader election: no randomness for an identity");
  if (rc || strlen(id) >= HOLDER_MAX)
    return kcr_error_set(err, KCR_EINVAL, "leader election: identity too long");

  le = kcr__calloc(1, sizeof(*le));
  if (!le)
    return kcr_error_set(err, KCR_ENOMEM, "leader election: out of memory");
  pthread_mutex_init(&le->mu, NULL);
  if (kcr_clock_cond_init(&le->cond) != 0) {
    pthread_mutex_destroy(&le->mu);
    kcr__free(le);
    return kcr_error_set(err, KCR_ESYS, "leader election: condition variable");
  }
  le->client = o->client;
  le->name = kcr__strdup(o->lease_name);
  le->ns = kcr__strdup(ns);
  le->identity = kcr__strdup(id);
  le->describe = kcr__malloc(strlen(ns) + strlen(o->lease_name) + 2);
  if (!le->name || !le->ns || !le->identity || !le->describe ||
      kcr_cancel_create(&le->cancel, NULL) != 0) {
    le_free(le);
    return kcr_error_set(err, KCR_ENOMEM, "leader election: out of memory");
  }
  sprintf(le->describe, "%s/%s", ns, o->lease_name);
  le->lease_ns = lease;
  le->renew_ns = renew;
  le->retry_ns = retry;
  le->release_on_cancel = o->release_on_cancel;
  le->clock = o->clock ? o->clock : kcr_clock_system();
  le->on_started = o->on_started_leading;
  le->on_stopped = o->on_stopped_leading ? o->on_stopped_leading : kcr_leader_election_exit_on_lost;
  le->on_new_leader = o->on_new_leader;
  le->data = o->callback_data;
  le->rng = kcr_rand_seed();
  atomic_init(&le->fence_until, 0);
  if (o->metrics) {
    static const char *const labels[] = {"name", NULL};
    kcr_metric_t *m;
    rc = kcr_metrics_gauge(o->metrics, "leader_election_master_status",
                           "Gauge of if the reporting system is master of the relevant lease, 0 "
                           "indicates backup, 1 indicates master. 'name' is the string used to "
                           "identify the lease. Please make sure to group by name.",
                           labels, &m, err);
    if (rc != 0) {
      le_free(le);
      return rc;
    }
    le->status = kcr_metric_withv(m, le->name, NULL);
    if (!le->status) {
      le_free(le);
      return kcr_error_set(err, KCR_ENOMEM, "leader election: out of memory");
    }
    kcr_metric_set(le->status, 0);
  }
  *out = le;
  return 0;
}

/* ---- the observed record ---- */

static int is_leader_locked(kcr_leader_election_t *le) {
  return strcmp(le->observed.holder, le->identity) == 0;
}

bool kcr_leader_election_is_leader(kcr_leader_election_t *le) {
  bool r;
  pthread_mutex_lock(&le->mu);
  r = is_leader_locked(le);
  pthread_mutex_unlock(&le->mu);
  return r;
}

const char *kcr_leader_election_identity(kcr_leader_election_t *le) {
  return le->identity;
}

int kcr_leader_election_leader(kcr_leader_election_t *le, char *buf, size_t size) {
  int n;
  pthread_mutex_lock(&le->mu);
  n = snprintf(buf, size, "%s", le->observed.holder);
  pthread_mutex_unlock(&le->mu);
  return (size_t)n < size ? n : KCR_ETOOBIG;
}

static void set_observed(kcr_leader_election_t *le, const record_t *r) {
  pthread_mutex_lock(&le->mu);
  le->observed = *r;
  le->observed_time = kcr_clock_now(le->clock);
  pthread_mutex_unlock(&le->mu);
}

/* lease_valid: client-go's isLeaseValid, on the local clock. */
static int lease_valid(kcr_leader_election_t *le, int64_t now) {
  int v;
  pthread_mutex_lock(&le->mu);
  v = le->observed_time + (int64_t)le->observed.lease_seconds * KCR_NSEC_PER_SEC > now;
  pthread_mutex_unlock(&le->mu);
  return v;
}

int kcr_leader_election_check(void *data) {
  kcr_leader_election_t *le = data;
  int bad;
  pthread_mutex_lock(&le->mu);
  bad = is_leader_locked(le) &&
        kcr_clock_now(le->clock) - le->observed_time > le->lease_ns + 20 * KCR_NSEC_PER_SEC;
  pthread_mutex_unlock(&le->mu);
  return bad ? -1 : 0;
}

int64_t kcr_leader_election_fence_remaining(kcr_leader_election_t *le) {
  int64_t until = atomic_load(&le->fence_until), left;
  if (until == 0)
    return 0;
  left = until - kcr_clock_now(le->clock);
  return left > 0 ? left : 0;
}

int kcr_leader_election_may_write(kcr_leader_election_t *le) {
  return kcr_leader_election_fence_remaining(le) > 0;
}

void kcr_leader_election_exit_on_lost(int lost, void *data) {
  (void)data;
  if (!lost)
    return;
  kcr_log(KCR_LOG_ERROR, "leaderelection", "leader election lost: exiting");
  _exit(1);
}

/* ---- the Lease lock ---- */

static json_t *record_to_spec(const record_t *r) {
  return json_pack("{s:s, s:i, s:s, s:s, s:I}", "holderIdentity", r->holder, "leaseDurationSeconds",
                   r->lease_seconds, "acquireTime", r->acquire, "renewTime", r->renew,
                   "leaseTransitions", (json_int_t)r->transitions);
}

static void spec_to_record(json_t *spec, record_t *r) {
  const char *s;
  memset(r, 0, sizeof(*r));
  if (!json_is_object(spec))
    return;
  if ((s = json_string_value(json_object_get(spec, "holderIdentity"))))
    snprintf(r->holder, sizeof(r->holder), "%s", s);
  r->lease_seconds = (int)json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
  if ((s = json_string_value(json_object_get(spec, "acquireTime"))))
    snprintf(r->acquire, sizeof(r->acquire), "%s", s);
  if ((s = json_string_value(json_object_get(spec, "renewTime"))))
    snprintf(r->renew, sizeof(r->renew), "%s", s);
  r->transitions = (long long)json_integer_value(json_object_get(spec, "leaseTransitions"));
}

static void request_options(kcr_leader_election_t *le, kcr_request_options *ro, int64_t timeout,
                            int cancellable) {
  memset(ro, 0, sizeof(*ro));
  ro->grace_period_seconds = -1;
  ro->timeout_ns = timeout > KCR_NSEC_PER_MSEC ? timeout : KCR_NSEC_PER_MSEC;
  ro->cancel = cancellable ? le->cancel : NULL;
}

static void keep_lease(kcr_leader_election_t *le, json_t *lease) {
  if (le->lease)
    json_decref(le->lease);
  le->lease = lease;
}

static int lock_get(kcr_leader_election_t *le, int64_t timeout, int cancellable, record_t *r,
                    char **raw, kcr_error_t *err) {
  kcr_request_options ro;
  json_t *lease = NULL;
  int rc;
  *raw = NULL;
  request_options(le, &ro, timeout, cancellable);
  rc = kcr_client_get(le->client, &lease_gvr, le->ns, le->name, &ro, &lease, err);
  if (rc != 0)
    return rc;
  spec_to_record(json_object_get(lease, "spec"), r);
  *raw = json_dumps(json_object_get(lease, "spec"), JSON_COMPACT | JSON_SORT_KEYS);
  keep_lease(le, lease);
  return *raw ? 0 : KCR_ENOMEM;
}

static int lock_create(kcr_leader_election_t *le, int64_t timeout, const record_t *r,
                       kcr_error_t *err) {
  kcr_request_options ro;
  json_t *obj, *created = NULL;
  int rc;
  obj = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
                  "Lease", "metadata", "name", le->name, "namespace", le->ns, "spec",
                  record_to_spec(r));
  if (!obj)
    return kcr_error_set(err, KCR_ENOMEM, "leader election: out of memory");
  request_options(le, &ro, timeout, 1);
  rc = kcr_client_create_object(le->client, &lease_gvr, le->ns, obj, &ro, &created, err);
  json_decref(obj);
  if (rc == 0)
    keep_lease(le, created);
  return rc;
}

static int lock_update(kcr_leader_election_t *le, int64_t timeout, const record_t *r,
                       int cancellable, kcr_error_t *err) {
  kcr_request_options ro;
  json_t *obj, *spec, *updated = NULL;
  int rc;
  if (!le->lease)
    return kcr_error_set(err, KCR_EINVAL, "leader election: lease not initialized");
  obj = json_deep_copy(le->lease);
  spec = record_to_spec(r);
  if (!obj || !spec || json_object_set_new(obj, "spec", spec) != 0) {
    if (obj)
      json_decref(obj);
    return kcr_error_set(err, KCR_ENOMEM, "leader election: out of memory");
  }
  request_options(le, &ro, timeout, cancellable);
  rc = kcr_client_update(le->client, &lease_gvr, le->ns, obj, &ro, &updated, err);
  json_decref(obj);
  if (rc == 0)
    keep_lease(le, updated);
  return rc;
}

/* ---- the algorithm ---- */

static void now_micro(kcr_leader_election_t *le, char *buf) {
  if (kcr_time_format(kcr_clock_wall(le->clock), KCR_TIME_MICRO, buf, KCR_TIME_BUFSIZE) < 0)
    buf[0] = '\0';
}

static int64_t remaining(kcr_leader_election_t *le, int64_t deadline) {
  return deadline - kcr_clock_now(le->clock);
}

/* try_result: what one attempt found. */
typedef enum try_result {
  TRY_FAILED = 0, /* no answer, an error, or a conflict: try again */
  TRY_OK = 1,     /* acquired or renewed */
  TRY_HELD = 2    /* another holder whose lease has not expired */
} try_result;

/* succeeded records a successful acquire/renew whose attempt began at t0. */
static try_result succeeded(kcr_leader_election_t *le, const record_t *rec, int64_t t0) {
  set_observed(le, rec);
  atomic_store(&le->fence_until, t0 + le->renew_ns);
  return TRY_OK;
}

/*
 * try_acquire_or_renew: client-go's tryAcquireOrRenew. Every request of one
 * attempt shares one deadline (client-go's context), so a blackholed network
 * cannot stretch an attempt past the renew deadline.
 */
static try_result try_acquire_or_renew(kcr_leader_election_t *le, int64_t deadline) {
  record_t rec, old, observed;
  kcr_error_t err = {0};
  char *raw = NULL;
  int leader, rc;
  int64_t t0 = kcr_clock_now(le->clock);

  memset(&rec, 0, sizeof(rec));
  snprintf(rec.holder, sizeof(rec.holder), "%s", le->identity);
  rec.lease_seconds = (int)(le->lease_ns / KCR_NSEC_PER_SEC);
  now_micro(le, rec.renew);
  memcpy(rec.acquire, rec.renew, sizeof(rec.acquire));

  /* 1. fast path: the leader updates the Lease it last wrote. */
  pthread_mutex_lock(&le->mu);
  leader = is_leader_locked(le);
  observed = le->observed;
  pthread_mutex_unlock(&le->mu);
  if (leader && lease_valid(le, kcr_clock_now(le->clock))) {
    memcpy(rec.acquire, observed.acquire, sizeof(rec.acquire));
    rec.transitions = observed.transitions;
    if (lock_update(le, remaining(le, deadline), &rec, 1, &err) == 0)
      return succeeded(le, &rec, t0);
    kcr_log(KCR_LOG_INFO, "leaderelection",
            "failed to update lock %s optimistically: %s, falling back to slow path", le->describe,
            err.message);
    kcr_error_clear(&err);
  }

  /* 2. get or create. */
  if (remaining(le, deadline) <= 0)
    return TRY_FAILED;
  rc = lock_get(le, remaining(le, deadline), 1, &old, &raw, &err);
  if (rc != 0) {
    kcr__free(raw);
    if (!kcr_error_is_not_found(&err)) {
      kcr_log(KCR_LOG_ERROR, "leaderelection", "error retrieving resource lock %s: %s",
              le->describe, err.message);
      return TRY_FAILED;
    }
    kcr_error_clear(&err);
    if (remaining(le, deadline) <= 0 || lock_create(le, remaining(le, deadline), &rec, &err) != 0) {
      kcr_log(KCR_LOG_ERROR, "leaderelection", "error initially creating lock %s: %s", le->describe,
              err.message);
      return TRY_FAILED;
    }
    return succeeded(le, &rec, t0);
  }

  /* 3. a changed record restarts the local expiry clock. */
  if (!le->observed_raw || strcmp(le->observed_raw, raw) != 0) {
    set_observed(le, &old);
    kcr__free(le->observed_raw);
    le->observed_raw = raw;
  } else {
    kcr__free(raw);
  }
  leader = kcr_leader_election_is_leader(le);
  if (old.holder[0] && lease_valid(le, kcr_clock_now(le->clock)) && !leader) {
    kcr_log(KCR_LOG_DEBUG, "leaderelection", "lock %s is held by %s and has not yet expired",
            le->describe, old.holder);
    return TRY_HELD;
  }

  /* 4. take or keep it. */
  if (leader) {
    memcpy(rec.acquire, old.acquire, sizeof(rec.acquire));
    rec.transitions = old.transitions;
  } else {
    rec.transitions = old.transitions + 1;
  }
  if (remaining(le, deadline) <= 0 ||
      lock_update(le, remaining(le, deadline), &rec, 1, &err) != 0) {
    kcr_log(KCR_LOG_ERROR, "leaderelection", "failed to update lock %s: %s", le->describe,
            err.message);
    return TRY_FAILED;
  }
  return succeeded(le, &rec, t0);
}

static void report_transition(kcr_leader_election_t *le) {
  char holder[HOLDER_MAX];
  pthread_mutex_lock(&le->mu);
  memcpy(holder, le->observed.holder, sizeof(holder));
  pthread_mutex_unlock(&le->mu);
  if (le->reported_set && strcmp(holder, le->reported) == 0)
    return;
  memcpy(le->reported, holder, sizeof(holder));
  le->reported_set = 1;
  if (holder[0])
    kcr_log(KCR_LOG_INFO, "leaderelection", "new leader of %s: %s", le->describe, holder);
  if (le->on_new_leader)
    le->on_new_leader(holder, le->data);
}

/* wait_until sleeps until the clock reaches deadline or stop; returns stop. */
static int wait_until(kcr_leader_election_t *le, int64_t deadline) {
  int stop;
  pthread_mutex_lock(&le->mu);
  while (!le->stop && kcr_clock_now(le->clock) < deadline)
    kcr_clock_timedwait(le->clock, &le->cond, &le->mu, deadline);
  stop = le->stop;
  pthread_mutex_unlock(&le->mu);
  return stop;
}

static int stopping(kcr_leader_election_t *le) {
  int s;
  pthread_mutex_lock(&le->mu);
  s = le->stop;
  pthread_mutex_unlock(&le->mu);
  return s;
}

/*
 * release: client-go's release (empty holder, leaseDurationSeconds 1). A renewal
 * cancelled by the stop may still have reached the server, leaving our
 * resourceVersion stale; on a Conflict we read the Lease again and, if we still
 * hold it, try once more, so that a graceful stop reliably frees the lease.
 */
static void release(kcr_leader_election_t *le) {
  record_t rec, cur;
  kcr_error_t err = {0};
  char *raw = NULL;
  int rc;
  if (!kcr_leader_election_is_leader(le))
    return;
  memset(&rec, 0, sizeof(rec));
  pthread_mutex_lock(&le->mu);
  rec.transitions = le->observed.transitions;
  pthread_mutex_unlock(&le->mu);
  rec.lease_seconds = 1;
  now_micro(le, rec.renew);
  memcpy(rec.acquire, rec.renew, sizeof(rec.acquire));
  rc = lock_update(le, le->renew_ns, &rec, 0, &err);
  if (rc != 0 && kcr_error_is_conflict(&err)) {
    kcr_error_clear(&err);
    rc = lock_get(le, le->renew_ns, 0, &cur, &raw, &err);
    kcr__free(raw);
    if (rc == 0 && strcmp(cur.holder, le->identity) != 0)
      return; /* someone else holds it now: nothing of ours to release */
    if (rc == 0) {
      rec.transitions = cur.transitions;
      rc = lock_update(le, le->renew_ns, &rec, 0, &err);
    }
  }
  if (rc != 0) {
    kcr_log(KCR_LOG_ERROR, "leaderelection", "failed to release lock %s: %s", le->describe,
            err.message);
    return;
  }
  set_observed(le, &rec);
  kcr_log(KCR_LOG_INFO, "leaderelection", "released lease %s", le->describe);
}

static void *run(void *arg) {
  kcr_leader_election_t *le = arg;
  int ok = 0, lost = 0;

  kcr_log(KCR_LOG_INFO, "leaderelection", "attempting to acquire leader lease %s...", le->describe);
  /* acquire: JitterUntil(retryPeriod, 1.2, sliding) */
  while (!stopping(le)) {
    int64_t wait;
    ok = try_acquire_or_renew(le, kcr_clock_now(le->clock) + le->renew_ns) == TRY_OK;
    report_transition(le);
    if (ok)
      break;
    wait = le->retry_ns +
           (int64_t)(kcr_rand_double(&le->rng) * KCR_LEADER_JITTER_FACTOR * (double)le->retry_ns);
    if (wait_until(le, kcr_clock_now(le->clock) + wait))
      break;
  }
  if (!ok) {
    atomic_store(&le->fence_until, 0); /* a stop raced with the acquisition */
    return NULL;
  }
  kcr_log(KCR_LOG_INFO, "leaderelection", "successfully acquired lease %s", le->describe);
  kcr_metric_set(le->status, 1);
  if (le->on_started)
    le->on_started(le->data);

  /* renew: each round runs until the fence, the last success + renew deadline;
   * a round that starts past it (after a pause) has lost without a request. */
  for (;;) {
    int64_t fence = atomic_load(&le->fence_until);
    try_result r = TRY_FAILED;
    for (;;) {
      int64_t now = kcr_clock_now(le->clock);
      if (stopping(le) || now >= fence)
        break;
      r = try_acquire_or_renew(le, fence);
      report_transition(le);
      if (r != TRY_FAILED || stopping(le))
        break;
      now = kcr_clock_now(le->clock);
      if (wait_until(le, now + le->retry_ns < fence ? now + le->retry_ns : fence))
        break;
    }
    if (stopping(le))
      break;
    if (r != TRY_OK) {
      lost = 1;
      if (r == TRY_HELD)
        kcr_log(KCR_LOG_ERROR, "leaderelection", "lease %s is held by another: lost", le->describe);
      else
        kcr_log(KCR_LOG_ERROR, "leaderelection", "failed to renew lease %s: timed out",
                le->describe);
      break;
    }
    if (wait_until(le, kcr_clock_now(le->clock) + le->retry_ns))
      break;
  }
  atomic_store(&le->fence_until, 0);
  kcr_metric_set(le->status, 0);
  if (!lost && le->release_on_cancel)
    release(le);
  kcr_log(KCR_LOG_INFO, "leaderelection", "stopped leading %s%s", le->describe,
          lost ? " (lease lost)" : "");
  le->on_stopped(lost, le->data);
  return NULL;
}

int kcr_leader_election_start(kcr_leader_election_t *le, kcr_error_t *err) {
  if (le->started)
    return kcr_error_set(err, KCR_EINVAL, "leader election: already started");
  if (pthread_create(&le->thread, NULL, run, le) != 0)
    return kcr_error_set(err, KCR_ESYS, "leader election: cannot start thread: %s",
                         strerror(errno));
  le->started = 1;
  return 0;
}

void kcr_leader_election_stop(kcr_leader_election_t *le) {
  if (!le->started || le->joined)
    return;
  pthread_mutex_lock(&le->mu);
  le->stop = 1;
  pthread_cond_broadcast(&le->cond);
  pthread_mutex_unlock(&le->mu);
  kcr_cancel_fire(le->cancel);
  pthread_join(le->thread, NULL);
  le->joined = 1;
}

void kcr_leader_election_destroy(kcr_leader_election_t *le) {
  if (!le)
    return;
  kcr_leader_election_stop(le);
  le_free(le);
}
