/* SPDX-License-Identifier: MIT */
/*
 * objwatch.c: an object client's watch (kcr/objclient.h): a queue of events
 * between whatever feeds it (the fake's tracker, a thread reading the API
 * server's stream) and the thread that calls kcr_objwatch_next.
 *
 * DESIGN. One mutex and one condition variable guard a singly linked FIFO of
 * events and the watch's end (why it ended, and the error that said so). The
 * producer never waits for the consumer: a queue past KCR_OBJWATCH_MAX_QUEUED
 * ends the watch instead, as a watch whose reader fell behind ends in the API
 * server. The hooks run with no lock held, so a producer may take its own
 * locks in them (the fake takes its tracker's, under which it also sends).
 * An event's object changes hands whole (send_new steals it): jansson's
 * reference counts are not read in order across threads, so the producer
 * must not keep a reference that it drops while the consumer holds one.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "kcr/objclient.h"
#include "util/alloc.h"

typedef struct node {
  struct node *next;
  kcr_watch_event_type type;
  json_t *obj;
  bool has_error;
  kcr_error_t error;
} node_t;

struct kcr_objwatch {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const kcr_objwatch_hooks *hooks; /* immutable */
  void *data;                      /* immutable */
  node_t *head, *tail;             /* protected by mu */
  size_t n;                        /* protected by mu */
  int end;                         /* protected by mu: 0 open, else why it is over */
  bool stopped;                    /* protected by mu: the consumer stopped it (stop hook ran) */
  kcr_error_t end_err;             /* protected by mu: the end's details */
  struct timespec expires;         /* protected by mu: a normal end then; tv_sec 0: never */
  kcr_error_t last;                /* consumer's: the error of the last ERROR event */
};

static void drop_all(kcr_objwatch_t *w) {
  node_t *n = w->head, *next;
  for (; n; n = next) {
    next = n->next;
    json_decref(n->obj);
    kcr__free(n);
  }
  w->head = w->tail = NULL;
  w->n = 0;
}

int kcr_objwatch_create(const kcr_objwatch_hooks *hooks, void *data, kcr_objwatch_t **out,
                        kcr_error_t *err) {
  static const kcr_objwatch_hooks none = {NULL, NULL};
  pthread_condattr_t ca;
  kcr_objwatch_t *w;
  *out = NULL;
  if (!(w = kcr__calloc(1, sizeof(*w))))
    return kcr_error_set(err, KCR_ENOMEM, "watch: out of memory");
  if (pthread_mutex_init(&w->mu, NULL) != 0) {
    kcr__free(w);
    return kcr_error_set(err, KCR_ESYS, "watch: mutex");
  }
  /* timed waits against the monotonic clock: a wall clock step moves nothing */
  if (pthread_condattr_init(&ca) != 0 || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
      pthread_cond_init(&w->cv, &ca) != 0) {
    pthread_mutex_destroy(&w->mu);
    kcr__free(w);
    return kcr_error_set(err, KCR_ESYS, "watch: condition variable");
  }
  pthread_condattr_destroy(&ca);
  w->hooks = hooks ? hooks : &none;
  w->data = data;
  *out = w;
  return 0;
}

/* before: whether a is earlier than b. */
static bool before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* expired_locked ends the watch normally (KCR_ECLOSED) once its expiry has
 * passed, as a server ends a watch after timeoutSeconds. mu held. */
static void expired_locked(kcr_objwatch_t *w);

/* end_locked ends the watch with why (first end wins). mu held. */
static void end_locked(kcr_objwatch_t *w, int why, const kcr_error_t *err) {
  if (w->end)
    return;
  w->end = why;
  kcr_error_clear(&w->end_err);
  if (err && err->code != KCR_OK)
    w->end_err = *err;
  else
    kcr_error_set(&w->end_err, why, "watch: %s", kcr_strerror(why));
  pthread_cond_broadcast(&w->cv);
}

int kcr_objwatch_send_new(kcr_objwatch_t *w, kcr_watch_event_type type, json_t *obj,
                          const kcr_error_t *error) {
  node_t *n;
  int rc = 0;
  if (!w || !obj) {
    json_decref(obj);
    return KCR_EINVAL;
  }
  if (!(n = kcr__calloc(1, sizeof(*n)))) {
    json_decref(obj);
    return KCR_ENOMEM;
  }
  n->type = type;
  n->obj = obj; /* the producer's reference moves: it touches obj no more */
  if (error) {
    n->has_error = true;
    n->error = *error;
  }
  pthread_mutex_lock(&w->mu);
  expired_locked(w);
  if (w->end) {
    rc = KCR_ECANCELED;
  } else if (w->n >= KCR_OBJWATCH_MAX_QUEUED) {
    kcr_error_t e;
    kcr_error_clear(&e);
    kcr_error_set(&e, KCR_ETOOBIG,
                  "watch: the consumer fell %d events behind; the watch ends (watch again "
                  "from the last version seen, or list)",
                  KCR_OBJWATCH_MAX_QUEUED);
    end_locked(w, KCR_ETOOBIG, &e);
    rc = KCR_ETOOBIG;
  } else {
    if (w->tail)
      w->tail->next = n;
    else
      w->head = n;
    w->tail = n;
    w->n++;
    n = NULL;
    pthread_cond_signal(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  if (n) {
    json_decref(n->obj);
    kcr__free(n);
  }
  return rc;
}

static struct timespec deadline_of(int64_t ns);

void kcr_objwatch_expire_after(kcr_objwatch_t *w, int64_t ns) {
  if (!w || ns <= 0)
    return;
  pthread_mutex_lock(&w->mu);
  w->expires = deadline_of(ns);
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

void kcr_objwatch_close(kcr_objwatch_t *w, int why, const kcr_error_t *err) {
  if (!w)
    return;
  pthread_mutex_lock(&w->mu);
  end_locked(w, why ? why : KCR_ECLOSED, err);
  pthread_mutex_unlock(&w->mu);
}

static void expired_locked(kcr_objwatch_t *w) {
  struct timespec now;
  if (w->end || w->expires.tv_sec == 0)
    return;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (!before(&now, &w->expires))
    end_locked(w, KCR_ECLOSED, NULL);
}

/* deadline_of: now + ns on the monotonic clock. */
static struct timespec deadline_of(int64_t ns) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_sec += (time_t)(ns / 1000000000);
  t.tv_nsec += (long)(ns % 1000000000);
  if (t.tv_nsec >= 1000000000) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000;
  }
  return t;
}

int kcr_objwatch_next(kcr_objwatch_t *w, int64_t timeout_ns, kcr_watch_event *ev,
                      kcr_error_t *err) {
  struct timespec until;
  node_t *n;
  int rc;
  if (ev)
    memset(ev, 0, sizeof(*ev));
  if (!w || !ev)
    return kcr_error_set(err, KCR_EINVAL, "watch: next needs a watch and an event");
  if (timeout_ns > 0)
    until = deadline_of(timeout_ns);
  pthread_mutex_lock(&w->mu);
  if (!w->head)
    expired_locked(w);
  while (!w->head && !w->end && timeout_ns != 0) {
    bool expiring = w->expires.tv_sec != 0 && (timeout_ns < 0 || before(&w->expires, &until));
    if (!expiring && timeout_ns < 0) {
      pthread_cond_wait(&w->cv, &w->mu);
    } else if (pthread_cond_timedwait(&w->cv, &w->mu, expiring ? &w->expires : &until) ==
               ETIMEDOUT) {
      expired_locked(w);
      if (!expiring)
        break;
    }
  }
  if (w->stopped || (!w->head && w->end)) {
    bool stopped = w->stopped;
    kcr_error_t e = w->end_err;
    rc = stopped ? KCR_ECANCELED : w->end;
    pthread_mutex_unlock(&w->mu);
    if (stopped)
      return kcr_error_set(err, KCR_ECANCELED, "watch: stopped");
    if (err && err->code == KCR_OK)
      *err = e;
    return rc;
  }
  if (!(n = w->head)) {
    pthread_mutex_unlock(&w->mu);
    return KCR_EAGAIN; /* no event in time; not an error worth a message */
  }
  w->head = n->next;
  if (!w->head)
    w->tail = NULL;
  w->n--;
  pthread_mutex_unlock(&w->mu);
  ev->type = n->type;
  ev->object = n->obj;
  if (n->has_error) {
    w->last = n->error;
    ev->error = &w->last;
  }
  kcr__free(n);
  return 0;
}

/* stop_once marks the watch stopped and runs the producer's stop hook once. */
static void stop_once(kcr_objwatch_t *w) {
  bool call;
  pthread_mutex_lock(&w->mu);
  call = !w->stopped;
  w->stopped = true;
  end_locked(w, KCR_ECANCELED, NULL);
  drop_all(w);
  pthread_mutex_unlock(&w->mu);
  if (call && w->hooks->stop)
    w->hooks->stop(w->data);
}

void kcr_objwatch_stop(kcr_objwatch_t *w) {
  if (w)
    stop_once(w);
}

void kcr_objwatch_destroy(kcr_objwatch_t *w) {
  if (!w)
    return;
  stop_once(w);
  if (w->hooks->release)
    w->hooks->release(w->data);
  pthread_mutex_lock(&w->mu);
  drop_all(w); /* what a producer sent between stop and release */
  pthread_mutex_unlock(&w->mu);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  kcr__free(w);
}
