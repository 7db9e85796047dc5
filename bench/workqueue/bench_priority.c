/* SPDX-License-Identifier: MIT */
/*
 * bench_priority.c: what the priority queue buys a controller after a restart
 * (issue 25 item 5), measured at the queue: N keys of an initial list are
 * added at KCR_WORKQUEUE_PRIORITY_LOW, as a controller's handler adds them,
 * while W workers drain them, each spending WORK_US per key (a reconcile);
 * when half of the list has been added, one fresh change is added at
 * priority 0, and the time from that add to a worker's get of it is the
 * latency. The same run with the queue made no_priority (the plain client-go
 * queue, controller-runtime's UsePriorityQueue=false) is the control. Runs
 * alternate on, off, on, off... and each side's median and range are printed,
 * then the ratio of the medians.
 *
 * Usage: bench_priority [rounds [keys [workers [work_us]]]]
 *        defaults:       7       10000  2         100
 * A queue-level figure: no informer, no API server. Not run by the tests;
 * bench/workqueue/run_priority.sh builds and runs it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcr/workqueue.h"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct run {
  kcr_workqueue_t *q;
  long work_us;
  atomic_llong fresh_added; /* when the fresh key was added; 0: not yet */
  atomic_llong fresh_got;   /* when a worker got it */
  atomic_long handed;       /* keys handed out */
} run_t;

static void *worker(void *arg) {
  run_t *r = arg;
  char *key;
  while (kcr_workqueue_get(r->q, &key) == 0) {
    struct timespec ts = {0, r->work_us * 1000};
    if (strcmp(key, "fresh/change") == 0)
      atomic_store(&r->fresh_got, now_ns());
    atomic_fetch_add(&r->handed, 1);
    nanosleep(&ts, NULL); /* the reconcile */
    kcr_workqueue_done(r->q, key);
    kcr_free(key);
  }
  return NULL;
}

/* one runs the scenario once and returns the fresh key's latency in ns. */
static int64_t one(bool pq, int keys, int workers, long work_us) {
  kcr_workqueue_options o;
  kcr_workqueue_add_opts low = {0, false, KCR_WORKQUEUE_PRIORITY_LOW};
  pthread_t th[16];
  run_t r;
  char key[32];
  memset(&o, 0, sizeof(o));
  o.no_priority = !pq;
  memset(&r, 0, sizeof(r));
  r.work_us = work_us;
  atomic_init(&r.fresh_added, 0);
  atomic_init(&r.fresh_got, 0);
  atomic_init(&r.handed, 0);
  if (kcr_workqueue_create(&o, &r.q, NULL) != 0) {
    fprintf(stderr, "create failed\n");
    exit(1);
  }
  for (int i = 0; i < workers; i++)
    pthread_create(&th[i], NULL, worker, &r);
  for (int i = 0; i < keys; i++) {
    if (i == keys / 2) {
      atomic_store(&r.fresh_added, now_ns());
      kcr_workqueue_add(r.q, "fresh/change");
    }
    snprintf(key, sizeof(key), "default/cm-%05d", i);
    kcr_workqueue_add_with_opts(r.q, key, &low);
  }
  while (atomic_load(&r.fresh_got) == 0) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  kcr_workqueue_shutdown(r.q); /* the rest is dropped */
  for (int i = 0; i < workers; i++)
    pthread_join(th[i], NULL);
  kcr_workqueue_destroy(r.q);
  return atomic_load(&r.fresh_got) - atomic_load(&r.fresh_added);
}

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 7;
  int keys = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 10000;
  int workers = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 2;
  long work_us = argc > 4 ? strtol(argv[4], NULL, 10) : 100;
  int64_t on[64], off[64];
  int mid;
  if (rounds < 1 || rounds > 64 || keys < 2 || workers < 1 || workers > 16 || work_us < 0) {
    fprintf(stderr, "usage: bench_priority [rounds<=64 [keys [workers<=16 [work_us]]]]\n");
    return 2;
  }
  printf("keys %d, workers %d, work %ld us per key, fresh change added after %d keys\n", keys,
         workers, work_us, keys / 2);
  for (int i = 0; i < rounds; i++) {
    on[i] = one(true, keys, workers, work_us);
    off[i] = one(false, keys, workers, work_us);
    printf("round %d: priority on %.3f ms, off %.3f ms\n", i + 1, on[i] / 1e6, off[i] / 1e6);
    fflush(stdout);
  }
  qsort(on, (size_t)rounds, sizeof(on[0]), cmp);
  qsort(off, (size_t)rounds, sizeof(off[0]), cmp);
  mid = rounds / 2;
  printf("priority on : median %.3f ms (min %.3f, max %.3f)\n", on[mid] / 1e6, on[0] / 1e6,
         on[rounds - 1] / 1e6);
  printf("priority off: median %.3f ms (min %.3f, max %.3f)\n", off[mid] / 1e6, off[0] / 1e6,
         off[rounds - 1] / 1e6);
  printf("off/on ratio of medians: %.0fx\n", (double)off[mid] / (double)on[mid]);
  return 0;
}
