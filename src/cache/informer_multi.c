/* SPDX-License-Identifier: MIT */
/*
 * informer_multi.c: an informer over a set of namespaces (controller-runtime's
 * multiNamespaceInformer, cache/multi_namespace_cache.go): one ordinary
 * informer ("part") per namespace, each with its own reflector, FIFO and store,
 * behind one kcr_informer_t. A namespace's relist only touches its own store,
 * which a shared store could not promise (a relist replaces what it holds).
 *
 * Handlers: each registration puts a shim on every part. Parts call from
 * threads of their own, so the shim takes the registration's call_mu around
 * the user's call: the handler is called one at a time, as kcr/informer.h
 * promises, in order within a namespace. A handler removed from inside its own
 * call is only marked (its shims skip it from then on, has_synced is false);
 * the parts drop their shims at destroy, or at a second remove from outside,
 * since waiting for the other parts' calls there would wait on the call_mu
 * the caller holds.
 *
 * Lock order: a registration's call_mu -> the parts' locks (a shim holds it
 * while the part's listener waits on nothing else); mu (registrations) is held
 * only to walk or edit the list, never across a part's call.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cache/informer_multi_internal.h"
#include "kcr/clock.h"
#include "util/alloc.h"
#include "util/container.h"
#include "util/list.h"

typedef struct reg {
  kcr__list_node_t link; /* in the multi's regs */
  uint64_t id;
  kcr_event_handler user;
  pthread_mutex_t call_mu;
  atomic_bool removed; /* set under call_mu; read anywhere */
  uint64_t ids[];
} reg_t;

struct kcr__multi {
  size_t n;
  kcr_informer_t **parts; /* owned */
  kcr_informer_t *shell;  /* the kcr_informer_t handed out; frees this */
  pthread_mutex_t mu;
  kcr__list_t regs; /* reg_t; protected by mu */
  uint64_t next_id; /* protected by mu */
  int started;      /* owner thread */
};

/* current: the registration whose user handler this thread is calling. */
static _Thread_local reg_t *current;

int kcr__namespaces_check(const char *const *ns, size_t n, const char *who, kcr_error_t *err) {
  if (n && !ns)
    return kcr_error_set(err, KCR_EINVAL, "%s: %zu namespaces but no array", who, n);
  for (size_t i = 0; i < n; i++) {
    if (!ns[i] || !*ns[i])
      return kcr_error_set(err, KCR_EINVAL,
                           "%s: namespace %zu of the set is empty (all namespaces is no "
                           "namespace set at all)",
                           who, i + 1);
    for (size_t j = 0; j < i; j++)
      if (strcmp(ns[i], ns[j]) == 0)
        return kcr_error_set(err, KCR_EINVAL, "%s: namespace \"%s\" is in the set twice", who,
                             ns[i]);
  }
  return 0;
}

/* ---- handlers ---- */

static bool enter(reg_t *r) {
  pthread_mutex_lock(&r->call_mu);
  if (atomic_load(&r->removed)) {
    pthread_mutex_unlock(&r->call_mu);
    return false;
  }
  current = r;
  return true;
}

static void leave(reg_t *r) {
  current = NULL;
  pthread_mutex_unlock(&r->call_mu);
}

static void shim_add(json_t *obj, bool initial, void *data) {
  reg_t *r = data;
  if (r->user.on_add && enter(r)) {
    r->user.on_add(obj, initial, r->user.data);
    leave(r);
  }
}

static void shim_update(json_t *old_obj, json_t *new_obj, void *data) {
  reg_t *r = data;
  if (r->user.on_update && enter(r)) {
    r->user.on_update(old_obj, new_obj, r->user.data);
    leave(r);
  }
}

static void shim_delete(json_t *obj, const char *tombstone_key, void *data) {
  reg_t *r = data;
  if (r->user.on_delete && enter(r)) {
    r->user.on_delete(obj, tombstone_key, r->user.data);
    leave(r);
  }
}

static void reg_free(reg_t *r) {
  pthread_mutex_destroy(&r->call_mu);
  kcr__free(r);
}

/* find_reg returns id's registration (NULL if none), taken off m's list when
 * take is set. */
static reg_t *find_reg(kcr__multi_t *m, uint64_t id, bool take) {
  reg_t *found = NULL;
  pthread_mutex_lock(&m->mu);
  KCR__LIST_EACH(&m->regs, reg_t, link, r)
  if (r->id == id) {
    found = r;
    break;
  }
  if (found && take)
    kcr__list_remove(&m->regs, &found->link);
  pthread_mutex_unlock(&m->mu);
  return found;
}

int kcr__multi_add_handler(kcr__multi_t *m, const kcr_event_handler *h, uint64_t *id,
                           kcr_error_t *err) {
  kcr_event_handler shim = {shim_add, shim_update, shim_delete, NULL};
  reg_t *r = kcr__calloc(1, sizeof(*r) + m->n * sizeof(uint64_t));
  size_t i;
  int rc = 0;

  if (!r)
    return kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
  if (h)
    r->user = *h;
  pthread_mutex_init(&r->call_mu, NULL);
  shim.data = r;
  for (i = 0; i < m->n && rc == 0; i++)
    rc = kcr_informer_add_handler(m->parts[i], &shim, &r->ids[i], err);
  if (rc) {
    for (size_t j = 0; j + 1 < i; j++)
      kcr_informer_remove_handler(m->parts[j], r->ids[j]);
    reg_free(r);
    return rc;
  }
  pthread_mutex_lock(&m->mu);
  r->id = ++m->next_id;
  kcr__list_push_back(&m->regs, &r->link);
  pthread_mutex_unlock(&m->mu);
  if (id)
    *id = r->id;
  return 0;
}

void kcr__multi_remove_handler(kcr__multi_t *m, uint64_t id) {
  reg_t *r;
  if (current && current->id == id && find_reg(m, id, false) == current) {
    /* This thread holds its call_mu: waiting for the other parts' calls
     * would wait on it. Only marked; a later remove (or destroy) drops it. */
    atomic_store(&current->removed, true);
    return;
  }
  r = find_reg(m, id, true);
  if (!r)
    return;
  pthread_mutex_lock(&r->call_mu); /* waits out a call in progress */
  atomic_store(&r->removed, true);
  pthread_mutex_unlock(&r->call_mu);
  for (size_t i = 0; i < m->n; i++)
    kcr_informer_remove_handler(m->parts[i], r->ids[i]);
  reg_free(r);
}

bool kcr__multi_handler_has_synced(kcr__multi_t *m, uint64_t id) {
  reg_t *r = find_reg(m, id, false);
  if (!r || atomic_load(&r->removed))
    return false;
  for (size_t i = 0; i < m->n; i++)
    if (!kcr_informer_handler_has_synced(m->parts[i], r->ids[i]))
      return false;
  return true;
}

/* ---- lifecycle ---- */

int kcr__informer_multi_create(const kcr_informer_options *o, kcr_informer_t **out,
                               kcr_error_t *err) {
  kcr__multi_t *m = kcr__calloc(1, sizeof(*m));
  kcr_informer_options po;
  int rc = 0;

  *out = NULL;
  /* An array of pointers: the elements are kcr_informer_t *, on purpose. */
  if (!m ||
      !(m->parts = kcr__calloc(o->namespaces_len,
                               sizeof(kcr_informer_t *)))) { // NOLINT(bugprone-sizeof-expression)
    kcr__free(m);
    return kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
  }
  pthread_mutex_init(&m->mu, NULL);
  po = *o;
  po.namespaces = NULL;
  po.namespaces_len = 0;
  for (size_t i = 0; i < o->namespaces_len && rc == 0; i++) {
    po.ns = o->namespaces[i];
    if ((rc = kcr_informer_create(&po, &m->parts[i], err)) == 0)
      m->n++;
  }
  if (rc == 0 && !(m->shell = kcr__informer_shell(m)))
    rc = kcr_error_set(err, KCR_ENOMEM, "informer: out of memory");
  if (rc) {
    kcr__multi_free(m);
    return rc;
  }
  *out = m->shell;
  return 0;
}

int kcr__multi_start(kcr__multi_t *m, kcr_error_t *err) {
  if (m->started)
    return kcr_error_set(err, KCR_EINVAL, "informer: already started");
  for (size_t i = 0; i < m->n; i++) {
    int rc = kcr_informer_start(m->parts[i], err);
    if (rc) {
      for (size_t j = 0; j < i; j++)
        kcr_informer_stop(m->parts[j]);
      return rc;
    }
  }
  m->started = 1;
  return 0;
}

void kcr__multi_stop(kcr__multi_t *m) {
  for (size_t i = 0; i < m->n; i++)
    kcr_informer_stop(m->parts[i]);
}

/* kcr__multi_free frees m, its parts and its shell (informer.c's destroy of a
 * shell comes here, and frees nothing else). */
void kcr__multi_free(kcr__multi_t *m) {
  kcr__list_node_t *node;
  if (!m)
    return;
  for (size_t i = 0; i < m->n; i++)
    kcr_informer_destroy(m->parts[i]); /* stops their listeners: no shim runs after */
  while ((node = kcr__list_pop_front(&m->regs)))
    reg_free(KCR__CONTAINER_OF(node, reg_t, link));
  kcr__free(m->parts);
  kcr__free(m->shell);
  pthread_mutex_destroy(&m->mu);
  kcr__free(m);
}

/* ---- state ---- */

bool kcr__multi_has_synced(kcr__multi_t *m) {
  for (size_t i = 0; i < m->n; i++)
    if (!kcr_informer_has_synced(m->parts[i]))
      return false;
  return true;
}

static int64_t left_until(int64_t deadline) {
  int64_t left = deadline - kcr_clock_now(kcr_clock_system());
  return left > 0 ? left : 0;
}

int kcr__multi_wait_for_sync(kcr__multi_t *m, int64_t timeout_ns, kcr_error_t *err) {
  int64_t deadline = kcr_clock_now(kcr_clock_system()) + timeout_ns;
  for (size_t i = 0; i < m->n; i++) {
    int rc = kcr_informer_wait_for_sync(m->parts[i], left_until(deadline), err);
    if (rc) {
      kcr_error_prefix(err, "namespace %s: ", kcr__informer_ns(m->parts[i]));
      return rc;
    }
  }
  return 0;
}

int kcr__multi_wait_for_resource_version(kcr__multi_t *m, const char *rv, int64_t timeout_ns,
                                         kcr_error_t *err) {
  int64_t deadline = kcr_clock_now(kcr_clock_system()) + timeout_ns;
  for (size_t i = 0; i < m->n; i++) {
    int rc = kcr_informer_wait_for_resource_version(m->parts[i], rv, left_until(deadline), err);
    if (rc) {
      kcr_error_prefix(err, "namespace %s: ", kcr__informer_ns(m->parts[i]));
      return rc;
    }
  }
  return 0;
}

void kcr__multi_get_stats(kcr__multi_t *m, kcr_informer_stats *out) {
  memset(out, 0, sizeof(*out));
  out->watch_lag_seconds = -1.0;
  for (size_t i = 0; i < m->n; i++) {
    kcr_informer_stats s;
    kcr_informer_get_stats(m->parts[i], &s);
    out->lists += s.lists;
    out->streamed_lists += s.streamed_lists;
    out->relist_reused += s.relist_reused;
    out->scanned += s.scanned;
    out->watches += s.watches;
    out->watch_errors += s.watch_errors;
    out->events += s.events;
    out->processed_rv =
        i == 0 || s.processed_rv < out->processed_rv ? s.processed_rv : out->processed_rv;
    for (int t = 0; t < 5; t++)
      out->received[t] += s.received[t];
    out->deliveries += s.deliveries;
    for (int r = 0; r < KCR_INFORMER_RELIST_REASONS; r++)
      out->relists[r] += s.relists[r];
    if (s.last_seen_rv > out->last_seen_rv)
      out->last_seen_rv = s.last_seen_rv;
    out->queue_depth += s.queue_depth;
    out->listener_backlog += s.listener_backlog;
    out->handlers = s.handlers; /* every registration is on every part */
    if (i == 0 || s.seconds_since_last_event < out->seconds_since_last_event)
      out->seconds_since_last_event = s.seconds_since_last_event;
    if (s.watch_lag_seconds > out->watch_lag_seconds)
      out->watch_lag_seconds = s.watch_lag_seconds;
  }
}

json_t *kcr__multi_diagnostics(kcr__multi_t *m) {
  json_t *arr = json_array(), *o;
  for (size_t i = 0; i < m->n && arr; i++) {
    json_t *d = kcr_informer_diagnostics(m->parts[i]);
    if (!d || json_array_append_new(arr, d) != 0) {
      json_decref(arr);
      arr = NULL;
    }
  }
  o = arr ? json_pack("{s:o, s:b}", "namespaces", arr, "synced", kcr__multi_has_synced(m)) : NULL;
  return o;
}

/* ---- parts ---- */

size_t kcr__informer_parts(kcr_informer_t *inf, kcr_informer_t *const **out) {
  kcr__multi_t *m = kcr__informer_multi_of(inf);
  if (!m) {
    *out = kcr__informer_self(inf);
    return 1;
  }
  *out = m->parts;
  return m->n;
}

kcr_informer_t *kcr__informer_part_for(kcr_informer_t *inf, const char *ns) {
  kcr__multi_t *m = kcr__informer_multi_of(inf);
  const char *own;
  if (!m) {
    own = kcr__informer_ns(inf);
    return !own || !ns || !*ns || strcmp(own, ns) == 0 ? inf : NULL;
  }
  if (!ns || !*ns)
    return NULL;
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(kcr__informer_ns(m->parts[i]), ns) == 0)
      return m->parts[i];
  return NULL;
}
