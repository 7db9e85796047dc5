/* SPDX-License-Identifier: MIT */
/*
 * shard_member.c: a replica's membership in a shard ring by Leases
 * (kcr/shard_member.h).
 *
 * DESIGN. One thread per member runs a loop: renew this replica's Lease, list
 * the ring's Leases, recompute the ring, wait a retry period. The renew is a
 * merge patch of the Lease's holder, duration, renewTime and ring label,
 * without a resourceVersion: nobody else writes this Lease, so there is no race
 * to guard against, and a patch that finds no Lease (the first renew, or after
 * someone deleted it) creates it. The fence is the start of the last successful
 * renew on the monotonic clock, as leader election's, so kcr_shard_member_may_own
 * turns false at the same moment the others could first drop this replica.
 *
 * Membership is decided by the Leases' own timestamps against the local wall
 * clock (the brief's rule, and what a replica that just started can use): a
 * skewed clock only delays or hastens a member's arrival in the ring. Where
 * two replicas owning one range at once would be a bug, the handover uses
 * leader election's stricter rule instead: a Lease that has not released the
 * current generation holds its ranges until the local monotonic clock has
 * seen it unchanged (its resourceVersion) for its lease duration.
 *
 * The handover runs on the member's thread after each list (handover()):
 * shrink to effective & target and drain, announce the generation on the
 * Lease (the next renew carries it; a change renews at once), grow to the
 * target once every other Lease allows it. effective is read by any thread
 * under mu; only the member's thread (and stop, after joining it) writes it.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "kcr/apierror.h"
#include "kcr/buf.h"
#include "kcr/log.h"
#include "kcr/meta.h"
#include "kcr/shard_member.h"
#include "kcr/time.h"
#include "manager/leaderelection_internal.h"
#include "manager/shard_member_internal.h"
#include "util/alloc.h"

#define RING_NAME_MAX 46 /* + "-" + 16 hex digits: a Lease name well under 253 */
#define IDENTITY_MAX 256

static const kcr_gvr lease_gvr = {"coordination.k8s.io", "v1", "leases"};

/* obs_t: when this process last saw a ring Lease change (member thread). */
typedef struct obs {
  char *lease;   /* its name */
  char *version; /* its resourceVersion then */
  int64_t since; /* monotonic ns at which it was first seen with that version */
  bool seen;     /* in the latest list */
} obs_t;

struct kcr_shard_member {
  kcr_client_t *client;
  char *ring_name, *ns, *identity, *lease_name, *selector;
  int64_t lease_ns, renew_ns, retry_ns;
  kcr_shard_ring_options ring_options;
  kcr_clock_t *clock;
  kcr_shard_member_change_cb on_change;
  void *data;
  kcr_shard_member_drain_cb on_drain;
  kcr_shard_member_effective_cb on_effective;
  kcr_shard_member_keys_cb keys;
  kcr_cancel_t *cancel;  /* fired by stop: aborts a request in flight */
  size_t expected;       /* expected_members; 0: none */
  int64_t started_at;    /* monotonic ns of start (member thread after) */
  bool grown;            /* member thread: the effective set has grown once */
  bool said_waiting;     /* member thread: the wait for expected members is logged */
  int64_t pending_since; /* member thread: target != effective since (ns); 0: settled */
  kcr_metric_child_t *m_members, *m_share, *m_keys, *m_shrinks, *m_grows, *m_handover;
  uint64_t *last_keys; /* member thread: the keys of the latest balanced ring */
  size_t nlast_keys;
  json_t *leases; /* member thread: the ring's Leases at the last list */
  obs_t *obs;     /* member thread: one per Lease of the last list */
  size_t nobs;
  bool abandon;  /* stop without draining or deleting the Lease (tests) */
  bool draining; /* member thread: a shrink waits for on_drain to say it is done */
  bool left;     /* member thread: leaving, and drained: the thread ends */

  pthread_t thread;
  int started; /* the owner's thread */

  pthread_mutex_t mu;
  pthread_cond_t cond;
  int stopping;                   /* protected by mu: end the thread now */
  int leaving;                    /* protected by mu: drain everything, then end */
  kcr_shard_ring_t *ring;         /* protected by mu; NULL before the first list */
  kcr_shard_set_t *effective;     /* protected by mu; written by the member's thread */
  char released[17];              /* protected by mu: the generation announced, "" none */
  atomic_int_fast64_t renewed_at; /* start of the last successful renew; INT64_MIN: none */
  atomic_bool lapsed;             /* the fence lapsed: nothing until the drain of everything ends */
};

int kcr__shard_live_members(const json_t *items, kcr_time_t now, const char **names, size_t cap,
                            size_t *n) {
  size_t i;
  const json_t *lease;
  *n = 0;
  json_array_foreach(items, i, lease) {
    const json_t *spec = json_object_get(lease, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    const json_t *t = json_object_get(spec, "renewTime");
    json_int_t dur = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    kcr_time_t at;
    bool dup = false;
    if (!json_is_string(t))
      t = json_object_get(spec, "acquireTime");
    if (!holder || !*holder || dur <= 0 || !json_is_string(t) ||
        kcr_time_parse(json_string_value(t), json_string_length(t), &at, NULL) != 0)
      continue;
    if (kcr_time_cmp(kcr_time_add_ns(at, (int64_t)dur * KCR_NSEC_PER_SEC), now) <= 0)
      continue;
    for (size_t k = 0; k < *n && !dup; k++)
      dup = strcmp(names[k], holder) == 0;
    if (dup)
      continue;
    if (*n == cap)
      return KCR_ETOOBIG;
    names[(*n)++] = holder;
  }
  return 0;
}

static void obs_clear(kcr_shard_member_t *m) {
  for (size_t i = 0; i < m->nobs; i++) {
    kcr__free(m->obs[i].lease);
    kcr__free(m->obs[i].version);
  }
  kcr__free(m->obs);
  m->obs = NULL;
  m->nobs = 0;
}

static void member_free(kcr_shard_member_t *m) {
  obs_clear(m);
  kcr__free(m->last_keys);
  json_decref(m->leases);
  kcr_shard_set_destroy(m->effective);
  kcr__free(m->ring_name);
  kcr__free(m->ns);
  kcr__free(m->identity);
  kcr__free(m->lease_name);
  kcr__free(m->selector);
  kcr_cancel_destroy(m->cancel);
  kcr_shard_ring_destroy(m->ring);
  pthread_cond_destroy(&m->cond);
  pthread_mutex_destroy(&m->mu);
  kcr__free(m);
}

/* join: a new string a sep b, or NULL. */
static char *join(const char *a, char sep, const char *b) {
  size_t size = strlen(a) + strlen(b) + 2;
  char *s = kcr__malloc(size);
  if (s)
    snprintf(s, size, "%s%c%s", a, sep, b);
  return s;
}

/* HANDOVER_BOUNDS: kcr_shard_handover_duration_seconds' buckets, from a
 * drain of nothing to a crashed member's lease running out. */
static const double handover_bounds[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80};

/* member_metrics registers the member's families in r and takes its children. */
static int member_metrics(kcr_shard_member_t *m, kcr_metrics_registry_t *r, kcr_error_t *err) {
  static const char *const l1[] = {"ring", NULL}, *const l2[] = {"ring", "direction", NULL};
  kcr_metric_t *members, *share, *keys, *handovers, *dur;
  int rc;
  if ((rc = kcr_metrics_gauge(r, "kcr_shard_members", "Live members (Leases) of the shard ring.",
                              l1, &members, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, "kcr_shard_owned_share",
                              "Share of the hash space this replica reconciles now (0..1).", l1,
                              &share, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, "kcr_shard_owned_keys",
                              "Keys (namespaces) of a balanced ring in what this replica "
                              "reconciles now.",
                              l1, &keys, err)) != 0 ||
      (rc = kcr_metrics_counter(r, "kcr_shard_handovers_total",
                                "Changes of this replica's effective set: shrink (drained, then "
                                "released) or grow (after the others released).",
                                l2, &handovers, err)) != 0 ||
      (rc = kcr_metrics_histogram(
           r, "kcr_shard_handover_duration_seconds",
           "From a ring change this replica saw to its effective set reaching its target.", l1,
           handover_bounds, sizeof(handover_bounds) / sizeof(handover_bounds[0]), &dur, err)) != 0)
    return rc;
  if (!(m->m_members = kcr_metric_withv(members, m->ring_name, NULL)) ||
      !(m->m_share = kcr_metric_withv(share, m->ring_name, NULL)) ||
      !(m->m_keys = kcr_metric_withv(keys, m->ring_name, NULL)) ||
      !(m->m_shrinks = kcr_metric_withv(handovers, m->ring_name, "shrink", NULL)) ||
      !(m->m_grows = kcr_metric_withv(handovers, m->ring_name, "grow", NULL)) ||
      !(m->m_handover = kcr_metric_withv(dur, m->ring_name, NULL)))
    return kcr_error_set(err, KCR_ENOMEM, "shard member: out of memory");
  return 0;
}

int kcr_shard_member_create(const kcr_shard_member_options *o, kcr_shard_member_t **out,
                            kcr_error_t *err) {
  kcr_shard_member_t *m;
  char id[IDENTITY_MAX], hex[24];
  int64_t lease, renew, retry;
  int rc;

  *out = NULL;
  if (!o || !o->client || !o->ring || !*o->ring || !o->lease_namespace || !*o->lease_namespace)
    return kcr_error_set(err, KCR_EINVAL,
                         "shard member: client, ring and lease_namespace are required");
  if (strlen(o->ring) > RING_NAME_MAX)
    return kcr_error_set(err, KCR_EINVAL, "shard member: ring name longer than %d characters",
                         RING_NAME_MAX);
  lease = o->lease_duration_ns ? o->lease_duration_ns : 15 * KCR_NSEC_PER_SEC;
  renew = o->renew_deadline_ns ? o->renew_deadline_ns : 10 * KCR_NSEC_PER_SEC;
  retry = o->retry_period_ns ? o->retry_period_ns : 2 * KCR_NSEC_PER_SEC;
  if (!(lease > renew && renew > retry && retry > 0) || lease < KCR_NSEC_PER_SEC)
    return kcr_error_set(err, KCR_EINVAL,
                         "shard member: want lease_duration > renew_deadline > retry_period > 0 "
                         "and a lease of at least a second");
  rc = kcr__leader_identity(o->identity, id, sizeof(id));
  if (rc == KCR_ESYS)
    return kcr_error_set(err, rc, "shard member: no randomness for an identity");
  if (rc)
    return kcr_error_set(err, KCR_EINVAL, "shard member: identity too long");
  if (!(m = kcr__calloc(1, sizeof(*m))))
    return kcr_error_set(err, KCR_ENOMEM, "shard member: out of memory");
  pthread_mutex_init(&m->mu, NULL);
  if (kcr_clock_cond_init(&m->cond) != 0) {
    pthread_mutex_destroy(&m->mu);
    kcr__free(m);
    return kcr_error_set(err, KCR_ESYS, "shard member: condition variable");
  }
  snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)kcr_shard_hash(id, strlen(id)));
  m->client = o->client;
  m->ring_name = kcr__strdup(o->ring);
  m->ns = kcr__strdup(o->lease_namespace);
  m->identity = kcr__strdup(id);
  m->lease_name = join(o->ring, '-', hex);
  m->selector = join(KCR_SHARD_RING_LABEL, '=', o->ring);
  m->lease_ns = lease;
  m->renew_ns = renew;
  m->retry_ns = retry;
  m->ring_options = o->ring_options;
  m->clock = o->clock ? o->clock : kcr_clock_system();
  m->on_change = o->on_change;
  m->data = o->data;
  m->on_drain = o->on_drain;
  m->on_effective = o->on_effective;
  m->keys = o->keys;
  m->expected = o->expected_members;
  atomic_store(&m->renewed_at, INT64_MIN);
  atomic_init(&m->lapsed, false);
  if (!m->ring_name || !m->ns || !m->identity || !m->lease_name || !m->selector ||
      kcr_shard_set_create(NULL, 0, &m->effective, NULL) != 0 ||
      kcr_cancel_create(&m->cancel, NULL) != 0) {
    member_free(m);
    return kcr_error_set(err, KCR_ENOMEM, "shard member: out of memory");
  }
  if (o->metrics && (rc = member_metrics(m, o->metrics, err)) != 0) {
    member_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

/* renew patches (or creates) this replica's Lease; 0 or the client's error. */
static int renew(kcr_shard_member_t *m, kcr_error_t *err) {
  kcr_request_options ro = {0};
  char now[KCR_TIME_BUFSIZE];
  json_t *lease;
  char *text;
  int rc;

  char released[sizeof(m->released)];
  kcr_time_format(kcr_clock_wall(m->clock), KCR_TIME_MICRO, now, sizeof(now));
  pthread_mutex_lock(&m->mu);
  memcpy(released, m->released, sizeof(released));
  pthread_mutex_unlock(&m->mu);
  lease = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s, s:I, s:s}}", "apiVersion",
                    "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", m->lease_name,
                    "namespace", m->ns, "labels", KCR_SHARD_RING_LABEL, m->ring_name, "spec",
                    "holderIdentity", m->identity, "leaseDurationSeconds",
                    (json_int_t)(m->lease_ns / KCR_NSEC_PER_SEC), "renewTime", now);
  if (lease && *released &&
      json_object_set_new(json_object_get(lease, "metadata"), "annotations",
                          json_pack("{s:s}", KCR_SHARD_RELEASED_ANNOTATION, released)) != 0) {
    json_decref(lease);
    lease = NULL;
  }
  text = lease ? json_dumps(lease, JSON_COMPACT) : NULL;
  if (!text) {
    json_decref(lease);
    return kcr_error_set(err, KCR_ENOMEM, "shard member: out of memory");
  }
  ro.timeout_ns = m->renew_ns;
  ro.cancel = m->cancel;
  rc = kcr_client_patch(m->client, &lease_gvr, m->ns, m->lease_name, KCR_PATCH_MERGE, text,
                        strlen(text), &ro, NULL, err);
  if (rc == KCR_EAPI && kcr_error_is_not_found(err)) {
    kcr_error_clear(err);
    json_object_set_new(json_object_get(lease, "spec"), "acquireTime", json_string(now));
    rc = kcr_client_create_object(m->client, &lease_gvr, m->ns, lease, &ro, NULL, err);
  }
  kcr__free(text); /* jansson allocates through kcr's allocator */
  json_decref(lease);
  return rc;
}

/* refresh lists the ring's Leases and replaces the ring when its members
 * changed; the ring that changed is handed to on_change. */
static int refresh(kcr_shard_member_t *m, kcr_error_t *err) {
  kcr_request_options ro = {0};
  const char *names[KCR_SHARD_RING_MEMBERS_MAX];
  json_t *list = NULL;
  kcr_shard_ring_t *ring = NULL, *old;
  size_t n = 0;
  bool changed;
  int rc;

  ro.label_selector = m->selector;
  ro.timeout_ns = m->renew_ns;
  ro.cancel = m->cancel;
  if ((rc = kcr_client_list(m->client, &lease_gvr, m->ns, &ro, &list, err)) != 0)
    return rc;
  rc = kcr__shard_live_members(json_object_get(list, "items"), kcr_clock_wall(m->clock), names,
                               KCR_SHARD_RING_MEMBERS_MAX, &n);
  if (rc == 0 && m->keys) {
    kcr_shard_ring_options with = m->ring_options;
    uint64_t *keys = NULL;
    size_t nkeys = 0;
    rc = m->keys(&keys, &nkeys, m->data);
    if (rc == KCR_EAGAIN) { /* not known yet: no ring, nobody owns anything here */
      json_decref(list);
      return 0;
    }
    if (rc == 0) {
      with.keys = keys;
      with.nkeys = nkeys;
      rc = kcr_shard_ring_create(names, n, &with, &ring, err);
    } else {
      kcr_error_set(err, rc, "shard member: the keys to balance: %s", kcr_strerror(rc));
    }
    if (rc == 0) { /* kept for kcr_shard_owned_keys */
      kcr__free(m->last_keys);
      m->last_keys = keys;
      m->nlast_keys = nkeys;
      keys = NULL;
    }
    kcr__free(keys);
  } else if (rc == 0) {
    rc = kcr_shard_ring_create(names, n, &m->ring_options, &ring, err);
  } else {
    kcr_error_set(err, rc, "shard member: more than %d live members", KCR_SHARD_RING_MEMBERS_MAX);
  }
  if (rc == 0) {
    json_decref(m->leases);
    m->leases = json_incref(json_object_get(list, "items"));
  }
  json_decref(list); /* names borrowed from it: the ring has copied them */
  if (rc)
    return rc;
  pthread_mutex_lock(&m->mu);
  old = m->ring;
  changed = !old || kcr_shard_ring_size(old) != n || kcr_shard_ring_moved(old, ring) > 0.0;
  if (changed)
    m->ring = ring;
  pthread_mutex_unlock(&m->mu);
  if (!changed) {
    kcr_shard_ring_destroy(ring);
    return 0;
  }
  kcr_log(KCR_LOG_INFO, "sharding", "ring %s: %zu member(s)", m->ring_name, n);
  if (m->m_members)
    kcr_metric_set(m->m_members, (double)n);
  if (m->on_change)
    m->on_change(ring, m->data); /* only this thread replaces m->ring: ring lives on */
  kcr_shard_ring_destroy(old);
  return 0;
}

/* ---- the handover ---- */

void kcr__shard_generation(const kcr_shard_ring_t *ring, const kcr_shard_ring_options *o, char *buf,
                           size_t size) {
  kcr_buf_t b;
  const char *name;
  kcr_buf_init(&b, (size_t)KCR_SHARD_RING_MEMBERS_MAX * 300);
  for (size_t i = 0; (name = kcr_shard_ring_member(ring, i)) != NULL; i++)
    kcr_buf_appendf(&b, "%s\n", name);
  kcr_buf_appendf(&b, "layout=%d vnodes=%u", (int)o->layout, o->vnodes);
  /* balanced: the keys move the boundaries, so two replicas that saw other
   * keys are in other generations (and neither grows until they agree) */
  for (size_t i = 0;
       o->layout == KCR_SHARD_RING_BALANCED && (name = kcr_shard_ring_member(ring, i)); i++) {
    kcr_shard_set_t *s = NULL;
    const kcr_shard_range *rg;
    size_t n;
    if (kcr_shard_ring_set(ring, name, &s, NULL) != 0) {
      kcr_buf_appendf(&b, "\n?"); /* out of memory: a generation nobody grows on */
      continue;
    }
    n = kcr_shard_set_ranges(s, &rg);
    for (size_t k = 0; k < n; k++)
      kcr_buf_appendf(&b, "\n%zu %016llx %016llx", i, (unsigned long long)rg[k].first,
                      (unsigned long long)rg[k].last);
    kcr_shard_set_destroy(s);
  }
  /* out of memory or past the bound: the hash of what fits, still the same
   * on every replica that sees the same members */
  snprintf(buf, size, "%016llx",
           (unsigned long long)kcr_shard_hash(kcr_buf_cstr(&b), kcr_buf_len(&b)));
  kcr_buf_free(&b);
}

/* observe notes when each Lease of the last list changed (its
 * resourceVersion), on the monotonic clock; a Lease no longer listed is
 * forgotten. Member thread. */
static void observe(kcr_shard_member_t *m) {
  int64_t now = kcr_clock_now(m->clock);
  size_t i;
  json_t *lease;
  for (size_t k = 0; k < m->nobs; k++)
    m->obs[k].seen = false;
  json_array_foreach(m->leases, i, lease) {
    const char *name =
        json_string_value(json_object_get(json_object_get(lease, "metadata"), "name"));
    const char *rv = kcr_meta_resource_version(lease);
    obs_t *o = NULL;
    if (!name || !rv)
      continue;
    for (size_t k = 0; k < m->nobs && !o; k++)
      if (strcmp(m->obs[k].lease, name) == 0)
        o = &m->obs[k];
    if (!o) {
      obs_t *v = kcr__realloc(m->obs, (m->nobs + 1) * sizeof(*v));
      if (!v)
        continue; /* unobserved: it never counts as expired, the safe side */
      m->obs = v;
      o = &m->obs[m->nobs];
      memset(o, 0, sizeof(*o));
      if (!(o->lease = kcr__strdup(name))) {
        continue;
      }
      m->nobs++;
    }
    if (!o->version || strcmp(o->version, rv) != 0) {
      char *v = kcr__strdup(rv);
      if (!v)
        continue;
      kcr__free(o->version);
      o->version = v;
      o->since = now;
    }
    o->seen = true;
  }
  for (size_t k = m->nobs; k-- > 0;) {
    if (m->obs[k].seen)
      continue;
    kcr__free(m->obs[k].lease);
    kcr__free(m->obs[k].version);
    m->obs[k] = m->obs[--m->nobs];
  }
}

int kcr__shard_others_released(const json_t *leases, const char *identity, const char *gen,
                               kcr__shard_unchanged_fn unchanged, void *data) {
  size_t i;
  json_t *lease;
  json_array_foreach(leases, i, lease) {
    const json_t *spec = json_object_get(lease, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    const char *name =
        json_string_value(json_object_get(json_object_get(lease, "metadata"), "name"));
    const char *said = json_string_value(
        json_object_get(json_object_get(json_object_get(lease, "metadata"), "annotations"),
                        KCR_SHARD_RELEASED_ANNOTATION));
    json_int_t dur = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    if (holder && strcmp(holder, identity) == 0)
      continue;
    if (said && strcmp(said, gen) == 0)
      continue;
    if (name && dur > 0 && unchanged(name, (int64_t)dur * KCR_NSEC_PER_SEC, data))
      continue; /* fenced: unchanged for its lease duration */
    return 0;
  }
  return 1;
}

/* unchanged_for: whether this process has seen Lease name unchanged for at
 * least ns (kcr__shard_unchanged_fn over the member's observations). */
static bool unchanged_for(const char *name, int64_t ns, void *data) {
  kcr_shard_member_t *m = data;
  int64_t now = kcr_clock_now(m->clock);
  for (size_t k = 0; k < m->nobs; k++)
    if (strcmp(m->obs[k].lease, name) == 0)
      return now - m->obs[k].since >= ns;
  return false;
}

/* owned_keys: how many keys of the latest balanced ring fall in set. */
static size_t owned_keys(const kcr_shard_member_t *m, const kcr_shard_set_t *set) {
  size_t n = 0;
  for (size_t i = 0; i < m->nlast_keys; i++)
    n += kcr_shard_set_contains(set, m->last_keys[i]);
  return n;
}

/* set_effective makes next (stolen) the effective set and tells on_effective;
 * after a shrink nothing is announced or gained until on_drain says the
 * reconciles outside it have ended (drain_done). */
static void set_effective(kcr_shard_member_t *m, kcr_shard_set_t *next, bool shrink) {
  kcr_shard_set_t *old;
  pthread_mutex_lock(&m->mu);
  old = m->effective;
  m->effective = next;
  pthread_mutex_unlock(&m->mu);
  kcr_log(KCR_LOG_INFO, "sharding", "ring %s: %s to %.4f of the space", m->ring_name,
          shrink ? "shrinks" : "grows", kcr_shard_set_share(next));
  if (m->m_share) {
    kcr_metric_set(m->m_share, kcr_shard_set_share(next));
    kcr_metric_set(m->m_keys, (double)owned_keys(m, next));
    kcr_metric_inc(shrink ? m->m_shrinks : m->m_grows);
  }
  if (shrink)
    m->draining = true;
  if (m->on_effective)
    m->on_effective(next, m->data); /* only this thread replaces it: next lives on */
  kcr_shard_set_destroy(old);
}

/* drain_done: whether no shrink waits for its reconciles any more (asks
 * on_drain while one does). */
static bool drain_done(kcr_shard_member_t *m) {
  if (m->draining && (!m->on_drain || m->on_drain(m->effective, m->data))) {
    m->draining = false;
    kcr_log(KCR_LOG_INFO, "sharding", "ring %s: drained", m->ring_name);
  }
  return !m->draining;
}

/* waits_for_members: whether the first grow still waits for the expected
 * members (expected_members): fewer in the ring, and less than a lease
 * duration since the start. Member thread. */
static bool waits_for_members(kcr_shard_member_t *m) {
  bool wait = !m->grown && m->expected && kcr_shard_ring_size(m->ring) < m->expected &&
              kcr_clock_now(m->clock) - m->started_at < m->lease_ns;
  if (wait && !m->said_waiting) {
    kcr_log(KCR_LOG_INFO, "sharding",
            "ring %s: %zu of %zu expected member(s); taking a part once all are in, or a lease "
            "duration after the start",
            m->ring_name, kcr_shard_ring_size(m->ring), m->expected);
    m->said_waiting = true;
  }
  return wait;
}

/* handover moves the effective set towards the target of the latest ring
 * (file comment). Member thread. */
static void handover(kcr_shard_member_t *m) {
  kcr_shard_set_t *target = NULL, *keep;
  char gen[sizeof(m->released)];
  bool announce, leaving;
  pthread_mutex_lock(&m->mu);
  leaving = m->leaving;
  pthread_mutex_unlock(&m->mu);
  observe(m);
  if (leaving || !kcr_shard_member_may_own(m)) {
    /* leaving, or past the renew deadline (the others may take everything
     * soon): nothing, at once */
    if (kcr_shard_set_share(m->effective) > 0.0 && kcr_shard_set_create(NULL, 0, &keep, NULL) == 0)
      set_effective(m, keep, true);
    if (drain_done(m)) {
      if (leaving)
        m->left = true;
      else if (atomic_load(&m->lapsed) && atomic_load(&m->renewed_at) != INT64_MIN &&
               kcr_clock_now(m->clock) < atomic_load(&m->renewed_at) + m->renew_ns) {
        /* renewed again and nothing of before runs any more: start over */
        atomic_store(&m->lapsed, false);
        kcr_log(KCR_LOG_INFO, "sharding",
                "ring %s: fenced, drained; owning again from the next "
                "handover",
                m->ring_name);
      }
    }
    return;
  }
  if (!m->ring || kcr_shard_ring_set(m->ring, m->identity, &target, NULL) != 0)
    return;
  kcr__shard_generation(m->ring, &m->ring_options, gen, sizeof(gen));
  if (m->pending_since == 0 && !kcr_shard_set_equal(target, m->effective))
    m->pending_since = kcr_clock_now(m->clock);
  if (kcr_shard_set_intersect(m->effective, target, &keep, NULL) == 0 &&
      !kcr_shard_set_equal(keep, m->effective))
    set_effective(m, keep, true);
  else
    kcr_shard_set_destroy(keep);
  if (!drain_done(m)) { /* announced once the reconciles outside have ended */
    kcr_shard_set_destroy(target);
    return;
  }
  pthread_mutex_lock(&m->mu);
  announce = strcmp(m->released, gen) != 0;
  if (announce)
    memcpy(m->released, gen, sizeof(gen)); /* true now: effective lies within target */
  pthread_mutex_unlock(&m->mu);
  if (announce) {
    kcr_error_t err;
    int64_t start = kcr_clock_now(m->clock);
    kcr_error_clear(&err);
    if (renew(m, &err) == 0)
      atomic_store(&m->renewed_at, start);
    kcr_log(KCR_LOG_INFO, "sharding", "ring %s: released into generation %s", m->ring_name, gen);
  }
  if (!kcr_shard_set_equal(target, m->effective) && !waits_for_members(m) &&
      kcr__shard_others_released(m->leases, m->identity, gen, unchanged_for, m)) {
    set_effective(m, target, false);
    m->grown = true;
    target = NULL;
  }
  if ((!target || kcr_shard_set_equal(target, m->effective)) && m->pending_since) {
    if (m->m_handover) /* settled: the handover this replica saw is over */
      kcr_metric_observe(m->m_handover,
                         (double)(kcr_clock_now(m->clock) - m->pending_since) / KCR_NSEC_PER_SEC);
    m->pending_since = 0;
  }
  kcr_shard_set_destroy(target);
}

/*
 * lapse notes a fence that has lapsed since the last renew (a process paused
 * or starved past the renew deadline, or renews failing): the member then
 * owns nothing, and its fence stays shut, until every reconcile of before
 * has ended, even once a renew succeeds again. Without it a reconcile paused
 * in the middle would find the fence open after the renew that follows the
 * pause, while another replica owns its key. Returns whether it lapsed now.
 * Member thread.
 */
static bool lapse(kcr_shard_member_t *m, int64_t now) {
  int64_t at = atomic_load(&m->renewed_at);
  if (at == INT64_MIN || now < at + m->renew_ns || atomic_load(&m->lapsed))
    return false;
  atomic_store(&m->lapsed, true);
  kcr_log(KCR_LOG_WARN, "sharding", "ring %s: not renewed for the renew deadline: fenced",
          m->ring_name);
  return true;
}

/* DRAIN_POLL_NS: how often a drain in progress is asked again. */
#define DRAIN_POLL_NS (50 * KCR_NSEC_PER_MSEC)

static void *member_main(void *arg) {
  kcr_shard_member_t *m = arg;
  int64_t next_renew = kcr_clock_now(m->clock);
  for (;;) {
    kcr_error_t err;
    int64_t now = kcr_clock_now(m->clock), deadline;
    int leaving;
    if (lapse(m, now))
      handover(m);           /* empty at once, before a renew makes the fence look valid again */
    if (now >= next_renew) { /* every retry period: renew, list */
      kcr_error_clear(&err);
      if (renew(m, &err) == 0)
        atomic_store(&m->renewed_at, now);
      else if (!kcr_cancel_fired(m->cancel))
        kcr_log(KCR_LOG_WARN, "sharding", "ring %s: cannot renew Lease %s/%s: %s", m->ring_name,
                m->ns, m->lease_name, err.message);
      kcr_error_clear(&err);
      if (!kcr_cancel_fired(m->cancel) && refresh(m, &err) != 0 && !kcr_cancel_fired(m->cancel))
        kcr_log(KCR_LOG_WARN, "sharding", "ring %s: cannot list its Leases: %s", m->ring_name,
                err.message);
      next_renew = now + m->retry_ns;
    }
    if (!kcr_cancel_fired(m->cancel))
      handover(m);
    if (m->left)
      return NULL; /* drained on the way out: stop deletes the Lease */
    deadline = next_renew;
    if (m->draining && kcr_clock_now(m->clock) + DRAIN_POLL_NS < deadline)
      deadline = kcr_clock_now(m->clock) + DRAIN_POLL_NS;
    pthread_mutex_lock(&m->mu);
    leaving = m->leaving;
    while (!m->stopping && m->leaving == leaving && kcr_clock_now(m->clock) < deadline)
      kcr_clock_timedwait(m->clock, &m->cond, &m->mu, deadline);
    if (m->stopping) {
      pthread_mutex_unlock(&m->mu);
      return NULL;
    }
    pthread_mutex_unlock(&m->mu);
  }
}

int kcr_shard_member_start(kcr_shard_member_t *m, kcr_error_t *err) {
  if (m->started)
    return kcr_error_set(err, KCR_EINVAL, "shard member: already started");
  m->started_at = kcr_clock_now(m->clock);
  if (pthread_create(&m->thread, NULL, member_main, m) != 0)
    return kcr_error_set(err, KCR_ESYS, "shard member: cannot start its thread");
  m->started = 1;
  return 0;
}

void kcr_shard_member_stop(kcr_shard_member_t *m) {
  kcr_request_options ro = {0};
  if (!m || m->started != 1)
    return;
  pthread_mutex_lock(&m->mu);
  if (m->abandon)
    m->stopping = 1; /* a crash, for tests: no drain, the Lease stays until it expires */
  else
    m->leaving = 1; /* the thread drains everything, still renewing, then ends */
  pthread_cond_broadcast(&m->cond);
  pthread_mutex_unlock(&m->mu);
  if (m->abandon)
    kcr_cancel_fire(m->cancel);
  pthread_join(m->thread, NULL);
  m->started = 2;
  atomic_store(&m->renewed_at, INT64_MIN);
  if (m->abandon)
    return;
  /* Deleting the Lease tells the others at their next list. */
  ro.timeout_ns = m->renew_ns;
  kcr_client_delete(m->client, &lease_gvr, m->ns, m->lease_name, &ro, NULL, NULL);
}

void kcr_shard_member_destroy(kcr_shard_member_t *m) {
  if (!m)
    return;
  kcr_shard_member_stop(m);
  member_free(m);
}

const char *kcr_shard_member_identity(const kcr_shard_member_t *m) {
  return m->identity;
}

const char *kcr_shard_member_lease_name(const kcr_shard_member_t *m) {
  return m->lease_name;
}

int kcr_shard_member_set(kcr_shard_member_t *m, kcr_shard_set_t **out, size_t *n_members,
                         kcr_error_t *err) {
  int rc;
  pthread_mutex_lock(&m->mu);
  if (n_members)
    *n_members = kcr_shard_ring_size(m->ring);
  if (m->ring)
    rc = kcr_shard_ring_set(m->ring, m->identity, out, err);
  else
    rc = kcr_shard_set_create(NULL, 0, out, err);
  pthread_mutex_unlock(&m->mu);
  return rc;
}

void kcr__shard_member_abandon(kcr_shard_member_t *m) {
  m->abandon = true;
  kcr_shard_member_stop(m);
}

int kcr_shard_member_effective(kcr_shard_member_t *m, kcr_shard_set_t **out, kcr_error_t *err) {
  int rc;
  if (!kcr_shard_member_may_own(m))
    return kcr_shard_set_create(NULL, 0, out, err);
  pthread_mutex_lock(&m->mu);
  rc = kcr_shard_set_copy(m->effective, out, err);
  pthread_mutex_unlock(&m->mu);
  return rc;
}

bool kcr_shard_member_owns(kcr_shard_member_t *m, uint64_t h) {
  bool in;
  if (!kcr_shard_member_may_own(m))
    return false;
  pthread_mutex_lock(&m->mu);
  in = kcr_shard_set_contains(m->effective, h);
  pthread_mutex_unlock(&m->mu);
  return in;
}

void kcr_shard_member_generation(kcr_shard_member_t *m, char *buf, size_t size) {
  pthread_mutex_lock(&m->mu);
  snprintf(buf, size, "%s", m->released);
  pthread_mutex_unlock(&m->mu);
}

int64_t kcr_shard_member_fence_remaining(kcr_shard_member_t *m) {
  /* renewed_at first: the member thread sets lapsed before the renew that
   * follows a lapse, so a fresh renewed_at comes with lapsed seen */
  int64_t at = atomic_load(&m->renewed_at);
  if (at == INT64_MIN || atomic_load(&m->lapsed))
    return INT64_MIN;
  return at + m->renew_ns - kcr_clock_now(m->clock);
}

bool kcr_shard_member_may_own(kcr_shard_member_t *m) {
  return kcr_shard_member_fence_remaining(m) > 0;
}
