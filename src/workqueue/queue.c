/* SPDX-License-Identifier: MIT */
/*
 * queue.c: kcr_workqueue_t, client-go's workqueue (Type), delaying queue and
 * rate-limiting queue in one object.
 *
 * DESIGN: one mutex guards everything; one condition variable wakes getters and a
 * second wakes shutdown_with_drain. Each key the queue knows has exactly one
 * entry, found through the string hash map (util/hmap.h), holding the key inline and
 * three memberships: dirty (and then, unless processing, linked into the FIFO),
 * processing (linked into a list, for the unfinished-work metrics; both lists
 * are util/list.h's and share the entry's one link), and waiting
 * (a node in util/heap.h's min-heap, by ready time, then by arrival). An entry is
 * allocated when a key first arrives and freed when it leaves all three, so an
 * add of a dirty key, a re-add while processing, and a re-queue at done allocate
 * nothing; the only per-cycle allocation is the copy get hands out.
 *
 * There is no timer thread. client-go runs a goroutine that moves due keys from
 * the heap into the queue; here every operation first moves what is due, and a
 * getter with nothing to take sleeps until the heap's earliest ready time instead
 * of indefinitely (kcr_clock_timedwait, so a fake clock drives it in tests). An
 * add_after that becomes the new earliest wakes one getter to shorten its sleep;
 * each key moved into the queue wakes one more. The observable behaviour is
 * client-go's: a waiting getter receives a key when it becomes due, and len,
 * get and the metrics never show a due key as still waiting. A due key's
 * queue-duration clock starts at its ready time, which is when client-go's loop
 * would have added it. Once shutdown begins nothing more leaves the heap, as in
 * client-go, where the waiting loop stops.
 *
 * Metrics live on the registry the queue is given (kcr/metrics.h): create
 * registers the workqueue_* families and looks the queue's children up once, so
 * the hot path under the queue's lock is a few atomic updates and no other lock.
 * The two unfinished-work gauges depend on the time of the scrape: a collector
 * takes the lock, moves due keys (so depth is current) and sets them. Lock
 * order: the registry's lock, then the queue's. Only a named queue with a
 * registry keeps metrics; the others skip the clock reads.
 *
 * Priorities (controller-runtime's priority queue): a queued key at priority
 * 0, the only one a caller that names none uses, is linked into the FIFO list
 * exactly as before; a queued key at any other priority is filed in a second
 * min-heap (util/heap.h) keyed by (-priority, arrival), so get takes the
 * heap's top when its priority is above 0, else the FIFO's head, else the
 * heap's top. A queue that never sees a priority never touches the heap: its
 * add, get and done cost one more branch each. Moving a queued key up is a
 * remove and a push (or a rekey) with a fresh arrival number, so it goes to
 * the back of its new priority, as upstream. The heap's room is reserved for
 * every entry once the first priority arrives (and for each new entry after
 * that), so a key that becomes ready with its priority (promote, done) never
 * needs an allocation. An entry remembers the priority it is dirty at and,
 * separately, the one it will be ready at when its delay ends, since a key
 * can be dirty and waiting at once (client-go's delaying queue keeps both).
 *
 * Depth by priority: workqueue_depth's child for priority 0 is looked up at
 * create; another priority's the first time it is used, under the queue's
 * lock (the metric family's lock nests inside it; it is a leaf), then kept in
 * a small table, so later updates are atomic adds again. The table is bounded
 * (KCR_WORKQUEUE_MAX_PRIORITY_LABELS); a lookup that fails is kept as NULL, so
 * a key's increment and decrement always meet the same child.
 *
 * Contention: keys are hashed before the lock is taken, and a getter that finds
 * the queue empty first polls an atomic copy of the length for a few
 * microseconds with the lock released before it sleeps on the condition
 * variable. Workers that finish a key usually find the next one that way, and
 * the futex sleep/wake pair (a context switch on both sides) is skipped; on a
 * single CPU it never spins.
 */
#include "kcr/workqueue.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kcr/rand.h"
#include "util/alloc.h"
#include "util/heap.h"
#include "util/hmap.h"
#include "util/list.h"

typedef struct entry {
  /* The FIFO while queued at priority 0, the processing list while processing,
   * rheap while queued at another priority: one at a time (a key made dirty
   * while processing waits outside both queues until done), so they share
   * the space; which one is in use follows from processing and prio. */
  union {
    kcr__list_node_t link;
    kcr__heap_node_t ready; /* rheap: key = -priority, tie = arrival order */
  };
  uint64_t hash;
  uint32_t keylen;
  int prio;              /* the priority it is dirty at (meaningful while dirty) */
  int64_t add_ns;        /* metrics: when it last became dirty; -1 when not recorded */
  int64_t start_ns;      /* metrics: when get handed it out */
  kcr__heap_node_t wait; /* waiting: key = when it is due, tie = arrival order */
  int wait_prio;         /* the priority it becomes ready at (meaningful while waiting) */
  unsigned char dirty;
  unsigned char processing;
  char key[];
} entry;

struct kcr_workqueue {
  pthread_mutex_t mu;
  pthread_cond_t cond;       /* getters wait here */
  pthread_cond_t drain_cond; /* shutdown_with_drain waits here */
  kcr_clock_t *clock;        /* borrowed */
  kcr_ratelimiter_t *limiter;
  char *name;        /* "" when unnamed */
  int metrics_on;    /* named, with a registry; immutable */
  kcr__hmap_t set;   /* key -> entry; protected by mu */
  kcr__list_t fifo;  /* queued keys of priority 0, oldest first; protected by mu */
  kcr__heap_t rheap; /* queued keys of other priorities; protected by mu */
  size_t len;        /* queued keys, in fifo and rheap */
  kcr__list_t proc;  /* keys being processed; protected by mu */
  size_t n_processing;
  kcr__heap_t heap; /* waiting keys by (ready time, arrival); protected by mu */
  uint64_t seq;
  int shutting_down; /* protected by mu */
  int drain;
  int getters; /* threads waiting in get */
  /* A copy of len (and 1 once shutting down) that an idle getter polls without
   * the lock for a moment before it sleeps; written under mu, read anywhere. */
  atomic_size_t hint;
  int spin;        /* spin iterations before sleeping: 0 on a single CPU; immutable */
  int no_priority; /* every key at priority 0; immutable */
  int prio_seen;   /* a priority other than 0 was given: rheap has room for
                      every entry; protected by mu */
  /* metrics (metrics_on): children of the registry's families, immutable
   * pointers to atomics; updated under mu so they move with the queue's state */
  kcr_metrics_registry_t *registry;   /* borrowed */
  kcr_metrics_collector_t *collector; /* the unfinished-work gauges */
  kcr_metric_child_t *m_depth, *m_adds, *m_retries;
  kcr_metric_child_t *m_queue_duration, *m_work_duration;
  kcr_metric_child_t *m_unfinished, *m_longest;
  /* depth by priority: m_depth is priority 0's; the family and the others
   * looked up so far (child NULL: the lookup failed, kept so), protected by mu */
  kcr_metric_t *f_depth;
  struct {
    int prio;
    kcr_metric_child_t *child;
  } pdepth[KCR_WORKQUEUE_MAX_PRIORITY_LABELS];
  size_t npdepth;
  kcr_metric_child_t *m_depth_overflow;
  int overflow_looked_up;
};

/* ---- metrics ---- */

#define HISTOGRAM_BUCKETS 12

/* Upper bounds in ns: 10 ns, 100 ns, ... 1000 s (ExponentialBuckets(1e-8, 10, 12)). */
static const int64_t bounds_ns[HISTOGRAM_BUCKETS] = {
    INT64_C(10),         INT64_C(100),         INT64_C(1000),         INT64_C(10000),
    INT64_C(100000),     INT64_C(1000000),     INT64_C(10000000),     INT64_C(100000000),
    INT64_C(1000000000), INT64_C(10000000000), INT64_C(100000000000), INT64_C(1000000000000)};

/* seconds converts as the bounds are converted, so an observation equal to a
 * bound lands in that bound's bucket. */
static double seconds(int64_t ns) {
  return (double)(ns < 0 ? 0 : ns) / 1e9;
}

static void observe(kcr_metric_child_t *h, int64_t ns) {
  kcr_metric_observe(h, seconds(ns));
}

/* depth_child returns workqueue_depth's child for priority prio (NULL: not
 * counted); mu held, metrics_on. */
static kcr_metric_child_t *depth_child(kcr_workqueue_t *q, int prio) {
  char label[16];
  size_t i;
  if (prio == 0)
    return q->m_depth;
  for (i = 0; i < q->npdepth; i++)
    if (q->pdepth[i].prio == prio)
      return q->pdepth[i].child;
  if (q->npdepth + 1 >= KCR_WORKQUEUE_MAX_PRIORITY_LABELS) { /* 0 has a slot too */
    if (!q->overflow_looked_up) {
      q->m_depth_overflow = kcr_metric_withv(q->f_depth, q->name, q->name,
                                             KCR_WORKQUEUE_PRIORITY_LABEL_OVERFLOW, NULL);
      q->overflow_looked_up = 1;
    }
    return q->m_depth_overflow;
  }
  snprintf(label, sizeof(label), "%d", prio);
  q->pdepth[q->npdepth].prio = prio;
  q->pdepth[q->npdepth].child = kcr_metric_withv(q->f_depth, q->name, q->name, label, NULL);
  return q->pdepth[q->npdepth++].child;
}

/* promote is below; the collector needs it. */
static void promote(kcr_workqueue_t *q);

/* on_collect sets the two gauges that depend on the time of the scrape (the
 * rendering thread, with the registry's lock held). */
static void on_collect(kcr_metrics_emitter_t *e, void *data) {
  kcr_workqueue_t *q = data;
  int64_t now, age, total = 0, oldest = 0;
  (void)e;
  pthread_mutex_lock(&q->mu);
  promote(q);
  now = kcr_clock_now(q->clock);
  KCR__LIST_FOREACH(&q->proc, n) {
    age = now - KCR__CONTAINER_OF(n, entry, link)->start_ns;
    total += age;
    if (age > oldest)
      oldest = age;
  }
  kcr_metric_set(q->m_unfinished, seconds(total));
  kcr_metric_set(q->m_longest, seconds(oldest));
  pthread_mutex_unlock(&q->mu);
}

/* register_metrics registers the workqueue_* families on r, creates the queue's
 * series at zero and adds the collector. */
static int register_metrics(kcr_workqueue_t *q, kcr_metrics_registry_t *r, kcr_error_t *err) {
  static const char *const l2[] = {"name", "controller", NULL};
  static const char *const l3[] = {"name", "controller", "priority", NULL};
  double bounds[HISTOGRAM_BUCKETS];
  kcr_metric_t *depth, *adds, *retries, *qd, *wd, *unf, *lng;
  int rc;

  for (int i = 0; i < HISTOGRAM_BUCKETS; i++)
    bounds[i] = seconds(bounds_ns[i]);
  if ((rc = kcr_metrics_gauge(r, KCR_WORKQUEUE_METRIC_DEPTH, KCR_WORKQUEUE_HELP_DEPTH, l3, &depth,
                              err)) != 0 ||
      (rc = kcr_metrics_counter(r, KCR_WORKQUEUE_METRIC_ADDS, KCR_WORKQUEUE_HELP_ADDS, l2, &adds,
                                err)) != 0 ||
      (rc = kcr_metrics_counter(r, KCR_WORKQUEUE_METRIC_RETRIES, KCR_WORKQUEUE_HELP_RETRIES, l2,
                                &retries, err)) != 0 ||
      (rc = kcr_metrics_histogram(r, KCR_WORKQUEUE_METRIC_QUEUE_DURATION,
                                  KCR_WORKQUEUE_HELP_QUEUE_DURATION, l2, bounds, HISTOGRAM_BUCKETS,
                                  &qd, err)) != 0 ||
      (rc = kcr_metrics_histogram(r, KCR_WORKQUEUE_METRIC_WORK_DURATION,
                                  KCR_WORKQUEUE_HELP_WORK_DURATION, l2, bounds, HISTOGRAM_BUCKETS,
                                  &wd, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, KCR_WORKQUEUE_METRIC_UNFINISHED_WORK,
                              KCR_WORKQUEUE_HELP_UNFINISHED_WORK, l2, &unf, err)) != 0 ||
      (rc = kcr_metrics_gauge(r, KCR_WORKQUEUE_METRIC_LONGEST_RUNNING,
                              KCR_WORKQUEUE_HELP_LONGEST_RUNNING, l2, &lng, err)) != 0)
    return rc;
  /* priority "0": controller-runtime v0.24's default queue (the priority
   * queue) counts depth per priority and makes the series of a priority when
   * it is first used; "" is its plain queue's (UsePriorityQueue false). */
  q->f_depth = depth;
  q->m_depth = kcr_metric_withv(depth, q->name, q->name,
                                q->no_priority ? "" : KCR_WORKQUEUE_DEFAULT_PRIORITY, NULL);
  q->m_adds = kcr_metric_withv(adds, q->name, q->name, NULL);
  q->m_retries = kcr_metric_withv(retries, q->name, q->name, NULL);
  q->m_queue_duration = kcr_metric_withv(qd, q->name, q->name, NULL);
  q->m_work_duration = kcr_metric_withv(wd, q->name, q->name, NULL);
  q->m_unfinished = kcr_metric_withv(unf, q->name, q->name, NULL);
  q->m_longest = kcr_metric_withv(lng, q->name, q->name, NULL);
  if (!q->m_depth || !q->m_adds || !q->m_retries || !q->m_queue_duration || !q->m_work_duration ||
      !q->m_unfinished || !q->m_longest ||
      kcr_metrics_register_collector(r, on_collect, q, &q->collector) != 0)
    return kcr_error_set(err, KCR_ENOMEM, "workqueue %s: out of memory for its metrics", q->name);
  q->registry = r;
  return 0;
}

/* ---- the waiting heap (util/heap.h) ---- */

static entry *waiting_entry(kcr__heap_node_t *n) {
  return KCR__CONTAINER_OF(n, entry, wait);
}

/* ---- entries ---- */

static entry *ready_entry(kcr__heap_node_t *n) {
  return KCR__CONTAINER_OF(n, entry, ready);
}

static void maybe_free(kcr_workqueue_t *q, entry *e) {
  if (e->dirty || e->processing || kcr__heap_node_filed(&e->wait))
    return;
  (void)kcr__hmap_del_hashed(&q->set, e->key, e->hash);
  kcr__hmap_shrink(&q->set);
  kcr__free(e);
}

/* keyref: a key with its length and hash, computed before taking the lock (the
 * set's seed never changes after create) to keep the critical section short. */
typedef struct keyref {
  const char *key;
  size_t len;
  uint64_t hash;
} keyref;

static keyref make_keyref(kcr_workqueue_t *q, const char *key) {
  keyref k;
  k.key = key;
  k.hash = kcr__hmap_hash(&q->set, key, &k.len);
  return k;
}

/* lookup_or_make finds key's entry or makes one (not yet in any membership). */
static int lookup_or_make(kcr_workqueue_t *q, const keyref *k, entry **out) {
  size_t len = k->len;
  uint64_t h = k->hash;
  entry *e = kcr__hmap_get_hashed(&q->set, k->key, h);
  if (e) {
    *out = e;
    return 0;
  }
  if (kcr__hmap_reserve(&q->set, 1))
    return KCR_ENOMEM;
  /* once priorities are in use, every entry may need a slot in rheap */
  if (q->prio_seen && kcr__heap_reserve(&q->rheap, q->set.len + 1))
    return KCR_ENOMEM;
  if (len > UINT32_MAX || len > SIZE_MAX - sizeof(*e) - 1)
    return KCR_ENOMEM;
  e = kcr__malloc(sizeof(*e) + len + 1);
  if (!e)
    return KCR_ENOMEM;
  /* Field by field: the links are set when the entry is filed, and a memset
   * of this size compiles to `rep stos`, which costs more than the rest. */
  e->hash = h;
  e->keylen = (uint32_t)len;
  e->prio = 0;
  e->add_ns = -1;
  e->start_ns = 0;
  kcr__heap_node_init(&e->wait);
  e->wait_prio = 0;
  e->dirty = 0;
  e->processing = 0;
  memcpy(e->key, k->key, len + 1);
  kcr__hmap_insert_hashed(&q->set, e->key, h, e);
  *out = e;
  return 0;
}

/* prio_reserve prepares for a first priority other than 0: room in rheap for
 * every entry there is and one more. 0 or KCR_ENOMEM (nothing changed). */
static int prio_reserve(kcr_workqueue_t *q, int prio) {
  if (prio == 0 || q->prio_seen)
    return 0;
  if (kcr__heap_reserve(&q->rheap, q->set.len + 1))
    return KCR_ENOMEM;
  q->prio_seen = 1;
  return 0;
}

/* file puts a queued e where its priority belongs; room is reserved. */
static void file(kcr_workqueue_t *q, entry *e) {
  if (e->prio == 0) {
    kcr__list_push_back(&q->fifo, &e->link);
  } else {
    kcr__heap_node_init(&e->ready); /* the union held list links */
    kcr__heap_push(&q->rheap, &e->ready, -(int64_t)e->prio, q->seq++);
  }
}

static void push(kcr_workqueue_t *q, entry *e) {
  file(q, e);
  q->len++;
  atomic_store_explicit(&q->hint, q->len, memory_order_relaxed);
  if (q->getters)
    pthread_cond_signal(&q->cond);
}

/* raise_prio moves a dirty e up to prio (> its own): to the back of prio if queued. */
static void raise_prio(kcr_workqueue_t *q, entry *e, int prio) {
  if (q->metrics_on) {
    kcr_metric_add(depth_child(q, e->prio), -1);
    kcr_metric_add(depth_child(q, prio), 1);
  }
  if (!e->processing) { /* queued: refile it */
    if (e->prio == 0)
      kcr__list_remove(&q->fifo, &e->link);
    else
      kcr__heap_remove(&q->rheap, &e->ready);
    e->prio = prio;
    file(q, e);
  } else {
    e->prio = prio;
  }
}

/* make_dirty is client-go's Add past the shutdown check, at priority prio
 * (rheap has room when prio is not 0). now_ns < 0: read the clock. */
static void make_dirty(kcr_workqueue_t *q, entry *e, int64_t now_ns, int prio) {
  if (e->dirty) {
    if (prio > e->prio)
      raise_prio(q, e, prio);
    return;
  }
  e->prio = prio;
  if (q->metrics_on) {
    kcr_metric_inc(q->m_adds);
    kcr_metric_add(prio == 0 ? q->m_depth : depth_child(q, prio), 1);
    if (e->add_ns < 0)
      e->add_ns = now_ns >= 0 ? now_ns : kcr_clock_now(q->clock);
  }
  e->dirty = 1;
  if (!e->processing)
    push(q, e);
}

/* promote moves every due waiting key into the queue (the waiting loop's job). */
static void promote(kcr_workqueue_t *q) {
  int64_t now;
  if (!q->heap.len || q->shutting_down)
    return;
  now = kcr_clock_now(q->clock);
  while (q->heap.len && kcr__heap_top(&q->heap)->key <= now) {
    entry *e = waiting_entry(kcr__heap_pop(&q->heap));
    make_dirty(q, e, e->wait.key, e->wait_prio);
  }
}

/* ---- idle getters ---- */

/* SPIN_ITERATIONS: how long an idle getter polls before sleeping, a few
 * microseconds. A worker that has just finished a key very often finds the
 * next one added within that time; catching it without a futex sleep and wake
 * (a context switch on each side) roughly halves the cost of a contended
 * add/get cycle. Go's scheduler does the same with its spinning threads. */
#define SPIN_ITERATIONS 200

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* spin_for_work polls the hint with mu released; 1 if work (or shutdown) showed up. */
static int spin_for_work(kcr_workqueue_t *q) {
  int i;
  for (i = 0; i < q->spin; i++) {
    if (atomic_load_explicit(&q->hint, memory_order_relaxed))
      return 1;
    cpu_relax();
  }
  return 0;
}

/* ---- lifecycle ---- */

/* init_mutex makes the queue's lock. Critical sections are a few dozen
 * instructions, so under contention spinning briefly before sleeping (glibc's
 * adaptive mutex, what Go's sync.Mutex does too) beats going to the kernel. */
static int init_mutex(pthread_mutex_t *mu) {
  pthread_mutexattr_t attr;
  int rc;
  if (pthread_mutexattr_init(&attr))
    return KCR_ESYS;
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  (void)pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
  rc = pthread_mutex_init(mu, &attr);
  pthread_mutexattr_destroy(&attr);
  return rc ? KCR_ESYS : 0;
}

int kcr_workqueue_create(const kcr_workqueue_options *opts, kcr_workqueue_t **out,
                         kcr_error_t *err) {
  static const kcr_workqueue_options defaults = {NULL, NULL, NULL, NULL, false};
  kcr_workqueue_t *q;
  int rc, have_mu = 0, have_cond = 0;

  assert(out);
  *out = NULL;
  if (!opts)
    opts = &defaults;
  q = kcr__calloc(1, sizeof(*q));
  if (!q) {
    kcr_ratelimiter_destroy(opts->rate_limiter);
    return kcr_error_set(err, KCR_ENOMEM, "workqueue: out of memory");
  }
  q->clock = opts->clock ? opts->clock : kcr_clock_system();
  q->limiter = opts->rate_limiter;
  rc = KCR_ENOMEM;
  q->name = kcr__strdup(opts->name ? opts->name : "");
  if (!q->name)
    goto fail;
  q->metrics_on = q->name[0] != '\0' && opts->metrics;
  q->no_priority = opts->no_priority;
  q->spin = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? SPIN_ITERATIONS : 0;
  atomic_init(&q->hint, 0);
  if (!q->limiter && (rc = kcr_ratelimiter_default_create(q->clock, &q->limiter, NULL)))
    goto fail;
  rc = KCR_ESYS;
  if (init_mutex(&q->mu))
    goto fail;
  have_mu = 1;
  if (kcr_clock_cond_init(&q->cond))
    goto fail;
  have_cond = 1;
  if (pthread_cond_init(&q->drain_cond, NULL))
    goto fail;
  kcr__hmap_init(&q->set, kcr_rand_seed());
  if (q->metrics_on && (rc = register_metrics(q, opts->metrics, err)) != 0) {
    kcr_workqueue_destroy(q);
    return rc;
  }
  *out = q;
  return 0;

fail:
  if (have_cond)
    pthread_cond_destroy(&q->cond);
  if (have_mu)
    pthread_mutex_destroy(&q->mu);
  kcr_ratelimiter_destroy(q->limiter);
  kcr__free(q->name);
  kcr__free(q);
  return kcr_error_set(err, rc, "workqueue: %s", kcr_strerror(rc));
}

void kcr_workqueue_destroy(kcr_workqueue_t *q) {
  if (!q)
    return;
  kcr_metrics_unregister_collector(q->registry, q->collector);
  KCR__HMAP_FOREACH(&q->set, sl) {
    kcr__free(sl->val);
  }
  kcr__hmap_free(&q->set);
  kcr__heap_free(&q->heap);
  kcr__heap_free(&q->rheap);
  kcr_ratelimiter_destroy(q->limiter);
  pthread_cond_destroy(&q->drain_cond);
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->mu);
  kcr__free(q->name);
  kcr__free(q);
}

/* ---- adding ---- */

/* add_now is client-go's Add at priority prio (count_retry: AddAfter with no
 * delay). */
static int add_now(kcr_workqueue_t *q, const char *key, int count_retry, int prio) {
  keyref k = make_keyref(q, key);
  entry *e;
  int rc;
  pthread_mutex_lock(&q->mu);
  if (q->shutting_down) {
    pthread_mutex_unlock(&q->mu);
    return KCR_ECLOSED;
  }
  promote(q);
  if ((rc = prio_reserve(q, prio)) == 0 && (rc = lookup_or_make(q, &k, &e)) == 0) {
    if (count_retry && q->metrics_on)
      kcr_metric_inc(q->m_retries);
    make_dirty(q, e, -1, prio);
  }
  pthread_mutex_unlock(&q->mu);
  return rc;
}

int kcr_workqueue_add(kcr_workqueue_t *q, const char *key) {
  assert(q && key);
  return add_now(q, key, 0, 0);
}

/* add_after is client-go's AddAfter, the key becoming ready at priority prio. */
static int add_after(kcr_workqueue_t *q, const char *key, int64_t delay_ns, int prio) {
  keyref k;
  entry *e;
  int64_t now, ready;
  int rc;

  if (delay_ns <= 0)
    return add_now(q, key, 1, prio);
  k = make_keyref(q, key);
  pthread_mutex_lock(&q->mu);
  if (q->shutting_down) {
    pthread_mutex_unlock(&q->mu);
    return KCR_ECLOSED;
  }
  promote(q);
  now = kcr_clock_now(q->clock);
  if ((rc = kcr__heap_reserve(&q->heap, q->heap.len + 1)) || (rc = prio_reserve(q, prio)) ||
      (rc = lookup_or_make(q, &k, &e))) {
    pthread_mutex_unlock(&q->mu);
    return rc;
  }
  if (q->metrics_on)
    kcr_metric_inc(q->m_retries);
  ready = delay_ns > INT64_MAX - now ? INT64_MAX : now + delay_ns;
  if (kcr__heap_node_filed(&e->wait)) {
    /* Already waiting: keep the earlier ready time and the higher priority. */
    if (ready < e->wait.key)
      kcr__heap_rekey(&q->heap, &e->wait, ready, e->wait.tie);
    if (prio > e->wait_prio)
      e->wait_prio = prio;
  } else {
    e->wait_prio = prio;
    kcr__heap_push(&q->heap, &e->wait, ready, q->seq++);
  }
  /* A new earliest ready time: one getter must shorten its sleep. */
  if (e->wait.idx == 0 && q->getters)
    pthread_cond_signal(&q->cond);
  pthread_mutex_unlock(&q->mu);
  return 0;
}

int kcr_workqueue_add_after(kcr_workqueue_t *q, const char *key, int64_t delay_ns) {
  assert(q && key);
  return add_after(q, key, delay_ns, 0);
}

int kcr_workqueue_add_rate_limited(kcr_workqueue_t *q, const char *key) {
  int64_t delay;
  int rc;
  assert(q && key);
  rc = kcr_ratelimiter_when(q->limiter, key, &delay);
  if (rc)
    return rc;
  return add_after(q, key, delay, 0);
}

int kcr_workqueue_add_with_opts(kcr_workqueue_t *q, const char *key,
                                const kcr_workqueue_add_opts *opts) {
  int64_t delay;
  int prio, rc;
  assert(q && key);
  if (!opts)
    return add_now(q, key, 0, 0);
  prio = q->no_priority ? 0 : opts->priority;
  if (!opts->rate_limited)
    return opts->after_ns > 0 ? add_after(q, key, opts->after_ns, prio) : add_now(q, key, 0, prio);
  if ((rc = kcr_ratelimiter_when(q->limiter, key, &delay)) != 0)
    return rc;
  /* as upstream's AddWithOpts: the shorter of the two delays */
  if (opts->after_ns > 0 && opts->after_ns < delay)
    delay = opts->after_ns;
  return add_after(q, key, delay, prio);
}

void kcr_workqueue_forget(kcr_workqueue_t *q, const char *key) {
  assert(q && key);
  kcr_ratelimiter_forget(q->limiter, key);
}

int kcr_workqueue_num_requeues(kcr_workqueue_t *q, const char *key) {
  assert(q && key);
  return kcr_ratelimiter_num_requeues(q->limiter, key);
}

/* ---- processing ---- */

/* next returns the queued entry get hands out next (q->len > 0). */
static entry *next(kcr_workqueue_t *q) {
  kcr__heap_node_t *top = kcr__heap_top(&q->rheap);
  if (top && (top->key < 0 || kcr__list_empty(&q->fifo)))
    return ready_entry(top);
  return KCR__CONTAINER_OF(q->fifo.first, entry, link);
}

int kcr_workqueue_get_with_priority(kcr_workqueue_t *q, char **key_out, int *priority) {
  entry *e;
  char *copy;

  assert(q && key_out);
  *key_out = NULL;
  if (priority)
    *priority = 0;
  pthread_mutex_lock(&q->mu);
  for (int spun = 0;;) {
    promote(q);
    if (q->len)
      break;
    if (q->shutting_down) {
      pthread_mutex_unlock(&q->mu);
      return KCR_ECLOSED;
    }
    if (!spun && q->spin && !q->heap.len) {
      spun = 1;
      pthread_mutex_unlock(&q->mu);
      (void)spin_for_work(q);
      pthread_mutex_lock(&q->mu);
      continue;
    }
    q->getters++;
    if (q->heap.len)
      (void)kcr_clock_timedwait(q->clock, &q->cond, &q->mu, kcr__heap_top(&q->heap)->key);
    else
      pthread_cond_wait(&q->cond, &q->mu);
    q->getters--;
  }
  e = next(q);
  copy = kcr__malloc(e->keylen + 1);
  if (!copy) {
    pthread_mutex_unlock(&q->mu);
    return KCR_ENOMEM;
  }
  memcpy(copy, e->key, e->keylen + 1);

  if (e->prio == 0)
    kcr__list_remove(&q->fifo, &e->link);
  else
    kcr__heap_remove(&q->rheap, &e->ready);
  q->len--;
  atomic_store_explicit(&q->hint, q->len, memory_order_relaxed);
  e->dirty = 0;
  e->processing = 1;
  kcr__list_push_back(&q->proc, &e->link);
  q->n_processing++;
  if (q->metrics_on) {
    int64_t now = kcr_clock_now(q->clock);
    kcr_metric_add(e->prio == 0 ? q->m_depth : depth_child(q, e->prio), -1);
    if (e->add_ns >= 0)
      observe(q->m_queue_duration, now - e->add_ns);
    e->add_ns = -1;
    e->start_ns = now;
  }
  if (priority)
    *priority = e->prio;
  pthread_mutex_unlock(&q->mu);
  *key_out = copy;
  return 0;
}

int kcr_workqueue_get(kcr_workqueue_t *q, char **key_out) {
  return kcr_workqueue_get_with_priority(q, key_out, NULL);
}

void kcr_workqueue_done(kcr_workqueue_t *q, const char *key) {
  keyref k;
  entry *e;
  assert(q && key);
  k = make_keyref(q, key);
  pthread_mutex_lock(&q->mu);
  e = kcr__hmap_get_hashed(&q->set, key, k.hash);
  if (!e || !e->processing) {
    pthread_mutex_unlock(&q->mu);
    return;
  }
  if (q->metrics_on)
    observe(q->m_work_duration, kcr_clock_now(q->clock) - e->start_ns);
  e->processing = 0;
  kcr__list_remove(&q->proc, &e->link);
  q->n_processing--;
  if (e->dirty)
    push(q, e);
  else
    maybe_free(q, e);
  if (q->n_processing == 0 && q->drain)
    pthread_cond_broadcast(&q->drain_cond);
  pthread_mutex_unlock(&q->mu);
}

size_t kcr_workqueue_len(kcr_workqueue_t *q) {
  size_t n;
  assert(q);
  pthread_mutex_lock(&q->mu);
  promote(q);
  n = q->len;
  pthread_mutex_unlock(&q->mu);
  return n;
}

/* ---- shutdown ---- */

void kcr_workqueue_shutdown(kcr_workqueue_t *q) {
  assert(q);
  pthread_mutex_lock(&q->mu);
  q->drain = 0;
  q->shutting_down = 1;
  atomic_store_explicit(&q->hint, 1, memory_order_relaxed);
  pthread_cond_broadcast(&q->cond);
  pthread_cond_broadcast(&q->drain_cond);
  pthread_mutex_unlock(&q->mu);
}

void kcr_workqueue_shutdown_with_drain(kcr_workqueue_t *q) {
  assert(q);
  pthread_mutex_lock(&q->mu);
  q->drain = 1;
  q->shutting_down = 1;
  atomic_store_explicit(&q->hint, 1, memory_order_relaxed);
  pthread_cond_broadcast(&q->cond);
  while (q->n_processing && q->drain)
    pthread_cond_wait(&q->drain_cond, &q->mu);
  pthread_mutex_unlock(&q->mu);
}

int kcr_workqueue_shutting_down(kcr_workqueue_t *q) {
  int v;
  assert(q);
  pthread_mutex_lock(&q->mu);
  v = q->shutting_down;
  pthread_mutex_unlock(&q->mu);
  return v;
}

const char *kcr_workqueue_name(kcr_workqueue_t *q) {
  assert(q);
  return q->name;
}
