/* SPDX-License-Identifier: MIT */
/*
 * bench_workqueue.c: BENCH.md U1, the workqueue's add/get/done cost, in the same
 * shapes as bench/workqueue/go/main.go measures client-go (v0.37.2):
 *   seq        client-go's BenchmarkQueue: 100 keys, add+get+done each, one
 *              thread; ns per add+get+done.
 *   dedup      add of a key that is already dirty; ns per add.
 *   contended  P producers add 1M keys in all while W workers get+done (1x1 and
 *              4x4); keys drawn from 1000 (most adds find the key dirty: the
 *              controller's shape) or all distinct (every add is a full cycle);
 *              ns per add (wall time / adds), and keys processed.
 *   add_after  client-go's BenchmarkDelayingQueue_AddAfter: N keys at random
 *              delays up to 10 min on a fake clock, step, get them all; ns per key.
 * Each shape runs unnamed (no metrics) and named (metrics on).
 * Usage: bench_workqueue [rounds]  -- prints one line per shape, the median
 * of the rounds. Not run by the tests; bench/workqueue/run.sh builds it.
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

static kcr_workqueue_t *make_queue(const char *name, kcr_clock_t *clock) {
  kcr_workqueue_options opts = {name, clock, NULL};
  kcr_workqueue_t *q;
  if (kcr_workqueue_create(&opts, &q, NULL)) {
    fprintf(stderr, "create failed\n");
    exit(1);
  }
  return q;
}

static char keys[1000][32];

static double bench_seq(const char *name) {
  enum { ITER = 20000 };
  kcr_workqueue_t *q = make_queue(name, NULL);
  int64_t t0, total = 0;
  char *key;
  int i, j;
  for (i = 0; i < ITER; i++) {
    t0 = now_ns();
    for (j = 0; j < 100; j++) {
      kcr_workqueue_add(q, keys[j]);
      kcr_workqueue_get(q, &key);
      kcr_workqueue_done(q, key);
      kcr_free(key);
    }
    total += now_ns() - t0;
  }
  kcr_workqueue_destroy(q);
  return (double)total / (ITER * 100.0);
}

static double bench_dedup(const char *name) {
  enum { N = 2000000 };
  kcr_workqueue_t *q = make_queue(name, NULL);
  int64_t t0;
  int i;
  kcr_workqueue_add(q, "default/the-object");
  t0 = now_ns();
  for (i = 0; i < N; i++)
    kcr_workqueue_add(q, "default/the-object");
  t0 = now_ns() - t0;
  kcr_workqueue_destroy(q);
  return (double)t0 / N;
}

enum { MAX_THREADS = 8, ADDS = 1000000 };

static long last_processed;
static int n_producers, n_workers, distinct;
static char (*distinct_keys)[16]; /* ADDS keys "d-N" */

struct shared {
  kcr_workqueue_t *q;
  atomic_long processed;
  int id;
};

static void *producer(void *arg) {
  struct shared *s = arg;
  unsigned r = (unsigned)s->id * 2654435761u + 1;
  int i, per = ADDS / n_producers;
  for (i = 0; i < per; i++) {
    r = r * 1103515245u + 12345u;
    kcr_workqueue_add(s->q, distinct ? distinct_keys[s->id * per + i] : keys[(r >> 8) % 1000]);
  }
  return NULL;
}

static void *worker(void *arg) {
  struct shared *s = arg;
  char *key;
  long n = 0;
  while (kcr_workqueue_get(s->q, &key) == 0) {
    kcr_workqueue_done(s->q, key);
    kcr_free(key);
    n++;
  }
  atomic_fetch_add(&s->processed, n);
  return NULL;
}

/* bench_contended: ns per add (dedup-heavy shape: keys from 1000) or per key
 * (distinct: every add is a new key, so adds == gets == dones). */
static double bench_contended(const char *name) {
  struct shared s[MAX_THREADS];
  struct shared w;
  pthread_t pt[MAX_THREADS], wt[MAX_THREADS];
  int64_t t0;
  int i;
  w.q = make_queue(name, NULL);
  atomic_init(&w.processed, 0);
  t0 = now_ns();
  for (i = 0; i < n_workers; i++)
    pthread_create(&wt[i], NULL, worker, &w);
  for (i = 0; i < n_producers; i++) {
    s[i].q = w.q;
    s[i].id = i;
    pthread_create(&pt[i], NULL, producer, &s[i]);
  }
  for (i = 0; i < n_producers; i++)
    pthread_join(pt[i], NULL);
  kcr_workqueue_shutdown(w.q);
  for (i = 0; i < n_workers; i++)
    pthread_join(wt[i], NULL);
  t0 = now_ns() - t0;
  kcr_workqueue_destroy(w.q);
  last_processed = atomic_load(&w.processed);
  return (double)t0 / (double)ADDS;
}

static double bench_add_after(const char *name) {
  enum { N = 200000 };
  kcr_clock_t *clock;
  kcr_time_t wall = {0, 0};
  kcr_workqueue_t *q;
  char(*k)[16] = malloc(sizeof(*k) * N);
  char *key;
  uint64_t r = 88172645463325252ull;
  int64_t t0;
  int i;
  kcr_fake_clock_create(0, wall, &clock, NULL);
  q = make_queue(name, clock);
  for (i = 0; i < N; i++)
    snprintf(k[i], sizeof(k[i]), "%d", i);
  t0 = now_ns();
  for (i = 0; i < N; i++) {
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    kcr_workqueue_add_after(q, k[i], (int64_t)(r % (600ull * 1000000000ull)));
  }
  kcr_fake_clock_step(clock, 660ll * 1000000000ll);
  for (i = 0; i < N; i++) {
    kcr_workqueue_get(q, &key);
    kcr_free(key);
  }
  t0 = now_ns() - t0;
  kcr_workqueue_destroy(q);
  kcr_clock_destroy(clock);
  free(k);
  return (double)t0 / N;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void report(const char *shape, const char *name, double (*fn)(const char *), int rounds) {
  double v[64], lo, hi;
  int i;
  for (i = 0; i < rounds; i++)
    v[i] = fn(name);
  qsort(v, (size_t)rounds, sizeof(v[0]), cmp_double);
  lo = v[0];
  hi = v[rounds - 1];
  printf("%-10s %-8s %8.1f ns/op  (min %.1f, max %.1f, %d rounds)", shape,
         name ? "metrics" : "plain", v[rounds / 2], lo, hi, rounds);
  if (fn == bench_contended)
    printf("  %dx%d%s processed %ld", n_producers, n_workers, distinct ? " distinct" : "",
           last_processed);
  printf("\n");
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5, i;
  if (rounds < 1 || rounds > 64)
    rounds = 5;
  for (i = 0; i < 1000; i++)
    snprintf(keys[i], sizeof(keys[i]), "namespace-%d/key-%d", i % 10, i);
  /* client-go's BenchmarkQueue uses "key-N"; the first 100 here are as short. */
  for (i = 0; i < 100; i++)
    snprintf(keys[i], sizeof(keys[i]), "key-%d", i);
  report("seq", NULL, bench_seq, rounds);
  report("seq", "bench", bench_seq, rounds);
  report("dedup", NULL, bench_dedup, rounds);
  report("dedup", "bench", bench_dedup, rounds);
  distinct_keys = malloc(sizeof(*distinct_keys) * ADDS);
  for (i = 0; i < ADDS; i++)
    snprintf(distinct_keys[i], sizeof(distinct_keys[i]), "d-%d", i);
  {
    static const int shapes[][3] = {{1, 1, 0}, {4, 4, 0}, {1, 1, 1}, {4, 4, 1}};
    size_t j;
    for (j = 0; j < sizeof(shapes) / sizeof(shapes[0]); j++) {
      n_producers = shapes[j][0];
      n_workers = shapes[j][1];
      distinct = shapes[j][2];
      report("contended", NULL, bench_contended, rounds);
      report("contended", "bench", bench_contended, rounds);
    }
  }
  free(distinct_keys);
  report("add_after", NULL, bench_add_after, rounds);
  report("add_after", "bench", bench_add_after, rounds);
  return 0;
}
