/* SPDX-License-Identifier: MIT */
/*
 * channel.c: sources from outside the cluster (kcr/controller.h): the channel
 * source (controller-runtime's source.Channel), which any thread pushes
 * requests or generic events into, and the bookkeeping that detaches a
 * controller from the sources it watches when it is destroyed.
 *
 * DESIGN. A push is delivered on the pushing thread: for every controller
 * watching the source, the request is added to its workqueue, or the object
 * is filtered by the watch's predicate (a generic event) and mapped (the map
 * function, or the object's own key). The workqueue is thread-safe and
 * exists from the controller's create, so a push before the controller
 * starts waits in the queue for its workers, as events buffered in a Go
 * channel wait for the source to start; a push after it stopped is dropped,
 * as the queue drops it. There is no thread and no buffer of the source's
 * own: nothing to size, nothing to drain.
 *
 * Every source is on a process-wide list (registry_mu) so that
 * kcr__channel_forget_controller, called by kcr_controller_destroy, can take
 * the controller's watches out of every source it watches: a push after the
 * controller is gone then never touches it. Lock order: registry_mu, then a
 * source's mu. A push holds its source's mu (read) while it delivers, so a
 * map function must not watch or destroy that source; pushing into it again
 * from the map function is allowed (a read lock taken twice), but can wait
 * behind a writer. Read locks let pushes from many threads run at once.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "kcr/error.h"
#include "kcr/meta.h"
#include "kcr/workqueue.h"
#include "util/alloc.h"
#include "util/list.h"

typedef struct chan_watch {
  kcr__list_node_t link; /* in the source's watches */
  kcr_controller_t *ctl; /* only compared, never called: channel.c calls nothing in
                          * controller.c (no dependency circle) */
  kcr_workqueue_t *q;    /* ctl's */
  kcr_map_fn fn;
  void *fn_data;
  kcr_predicate_t *pred;
} chan_watch_t;

struct kcr_channel_source {
  kcr__list_node_t link; /* in registry */
  pthread_rwlock_t mu;
  kcr__list_t watches; /* chan_watch_t; protected by mu */
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static kcr__list_t registry; /* kcr_channel_source_t by link; protected by registry_mu */

int kcr_channel_source_create(kcr_channel_source_t **out, kcr_error_t *err) {
  kcr_channel_source_t *s;
  *out = NULL;
  s = kcr__calloc(1, sizeof(*s));
  if (!s)
    return kcr_error_set(err, KCR_ENOMEM, "channel source: out of memory");
  if (pthread_rwlock_init(&s->mu, NULL) != 0) {
    kcr__free(s);
    return kcr_error_set(err, KCR_ESYS, "channel source: pthread_rwlock_init failed");
  }
  pthread_mutex_lock(&registry_mu);
  kcr__list_push_back(&registry, &s->link);
  pthread_mutex_unlock(&registry_mu);
  *out = s;
  return 0;
}

static void watch_free(chan_watch_t *w) {
  kcr_predicate_destroy(w->pred);
  kcr__free(w);
}

void kcr_channel_source_destroy(kcr_channel_source_t *s) {
  if (!s)
    return;
  pthread_mutex_lock(&registry_mu);
  kcr__list_remove(&registry, &s->link);
  pthread_mutex_unlock(&registry_mu);
  KCR__LIST_FOREACH_SAFE(&s->watches, n, next) {
    watch_free(KCR__CONTAINER_OF(n, chan_watch_t, link));
  }
  pthread_rwlock_destroy(&s->mu);
  kcr__free(s);
}

int kcr__channel_watch(kcr_controller_t *c, kcr_workqueue_t *q, const char *name,
                       kcr_channel_source_t *s, kcr_map_fn fn, void *data, kcr_predicate_t *pred,
                       kcr_error_t *err) {
  chan_watch_t *w;
  if (kcr__predicate_failed(pred))
    return kcr_error_set(err, KCR_ENOMEM, "controller %s: predicate: out of memory", name);
  if (!s) {
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_EINVAL, "controller %s: no channel source", name);
  }
  w = kcr__calloc(1, sizeof(*w));
  if (!w) {
    kcr_predicate_destroy(pred);
    return kcr_error_set(err, KCR_ENOMEM, "controller %s: out of memory", name);
  }
  w->ctl = c;
  w->q = q;
  w->fn = fn;
  w->fn_data = data;
  w->pred = pred;
  pthread_rwlock_wrlock(&s->mu);
  kcr__list_push_back(&s->watches, &w->link);
  pthread_rwlock_unlock(&s->mu);
  return 0;
}

void kcr__channel_forget_controller(kcr_controller_t *c) {
  pthread_mutex_lock(&registry_mu);
  KCR__LIST_EACH(&registry, kcr_channel_source_t, link, s) {
    pthread_rwlock_wrlock(&s->mu);
    KCR__LIST_FOREACH_SAFE(&s->watches, n, next) {
      chan_watch_t *w = KCR__CONTAINER_OF(n, chan_watch_t, link);
      if (w->ctl == c) {
        kcr__list_remove(&s->watches, &w->link);
        watch_free(w);
      }
    }
    pthread_rwlock_unlock(&s->mu);
  }
  pthread_mutex_unlock(&registry_mu);
}

/* request_key writes "ns/name" (or "name") into key; 0, KCR_EINVAL or KCR_ETOOBIG. */
static int request_key(const char *ns, const char *name, char *key, size_t size) {
  int n;
  if (!name || !*name)
    return KCR_EINVAL;
  n = (ns && *ns) ? snprintf(key, size, "%s/%s", ns, name) : snprintf(key, size, "%s", name);
  return n < 0 || (size_t)n >= size ? KCR_ETOOBIG : 0;
}

int kcr_channel_source_push(kcr_channel_source_t *s, const char *ns, const char *name,
                            kcr_error_t *err) {
  char key[KCR_META_KEY_MAX];
  int rc = 0;
  if (!s)
    return kcr_error_set(err, KCR_EINVAL, "channel source: NULL");
  if (request_key(ns, name, key, sizeof(key)) != 0)
    return kcr_error_set(err, KCR_EINVAL,
                         "channel source: a request needs a name of at most %d "
                         "bytes with its namespace",
                         KCR_META_KEY_MAX - 1);
  pthread_rwlock_rdlock(&s->mu);
  KCR__LIST_EACH(&s->watches, chan_watch_t, link, w) {
    if (kcr_workqueue_add(w->q, key) == KCR_ENOMEM && rc == 0)
      rc = kcr_error_set(err, KCR_ENOMEM, "channel source: out of memory enqueueing %s", key);
  }
  pthread_rwlock_unlock(&s->mu);
  return rc;
}

int kcr_channel_source_push_object(kcr_channel_source_t *s, const json_t *obj, kcr_error_t *err) {
  char key[KCR_META_KEY_MAX];
  int rc = 0;
  if (!s || !json_is_object(obj))
    return kcr_error_set(err, KCR_EINVAL, "channel source: a generic event needs an object");
  pthread_rwlock_rdlock(&s->mu);
  KCR__LIST_EACH(&s->watches, chan_watch_t, link, w) {
    if (!kcr_predicate_eval(w->pred, KCR_EVENT_GENERIC, NULL, obj))
      continue;
    if (w->fn) {
      kcr_requests_t r = {w->ctl, w->q, KCR_WORKQUEUE_PRIORITY_DEFAULT};
      w->fn(obj, &r, w->fn_data);
      continue;
    }
    if (request_key(kcr_meta_namespace(obj), kcr_meta_name(obj), key, sizeof(key)) != 0) {
      if (rc == 0)
        rc = kcr_error_set(err, KCR_EINVAL,
                           "channel source: the object has no name to enqueue (give the "
                           "watch a map function)");
      continue;
    }
    if (kcr_workqueue_add(w->q, key) == KCR_ENOMEM && rc == 0)
      rc = kcr_error_set(err, KCR_ENOMEM, "channel source: out of memory enqueueing %s", key);
  }
  pthread_rwlock_unlock(&s->mu);
  return rc;
}
