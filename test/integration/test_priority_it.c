/* SPDX-License-Identifier: MIT */
/*
 * test_priority_it.c: the priority queue against the real apiserver (issue 25
 * item 5). N ConfigMaps exist before the manager starts; one worker reconciles
 * them at WORK_MS each. Once it is under way, the test changes the ConfigMap
 * that comes last in the initial list and notes how long until the
 * reconciler sees the change, and how many objects of the initial list were
 * still waiting then. With the priority queue (the default) the change goes
 * ahead of the list; the control, in the same run, is a controller with
 * use_priority_queue false, where it waits for the whole list. The assertion
 * compares the two; it sets no time limit.
 *
 * Measurement: KCR_PRIORITY_IT_N (default 400), KCR_PRIORITY_IT_ROUNDS (1),
 * KCR_PRIORITY_IT_WORK_MS (5) scale it; each round runs priority on, then off,
 * and the figures are printed (docs/benchmarks.md has the 10k run).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/manager.h"
#include "kcr/meta.h"
#include "kcr_itutil.h"
#include "testutil.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};

/* sorts after every "cm-NNNNN": the last object of the initial list */
#define TARGET "cm-zz-target"

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];
static int n_objects = 400, rounds = 1, work_ms = 5;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int env_int(const char *name, int def) {
  const char *v = getenv(name);
  return v && *v ? (int)strtol(v, NULL, 10) : def;
}

typedef struct writer {
  int id, n;
} writer_t;

static void *create_many(void *arg) {
  writer_t *w = arg;
  for (int i = w->id; i <= n_objects; i += w->n) {
    kcr_error_t err = {0};
    char name[32];
    json_t *o;
    if (i == n_objects)
      snprintf(name, sizeof(name), "%s", TARGET);
    else
      snprintf(name, sizeof(name), "cm-%05d", i);
    o = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                  "ConfigMap", "metadata", "name", name, "namespace", ns, "labels", "it", "prio",
                  "data", "v", "0");
    if (kcr_client_create_object(client, &configmaps, ns, o, NULL, NULL, &err) != 0)
      fprintf(stderr, "create %s: %s\n", name, err.message);
    json_decref(o);
  }
  return NULL;
}

static int group_setup(void **state) {
  pthread_t th[8];
  writer_t w[8];
  (void)state;
  n_objects = env_int("KCR_PRIORITY_IT_N", n_objects);
  rounds = env_int("KCR_PRIORITY_IT_ROUNDS", rounds);
  work_ms = env_int("KCR_PRIORITY_IT_WORK_MS", work_ms);
  if (kcr_it_connect(&env, &config, &client) != 0 ||
      kcr_it_create_namespace(client, "kcr-it-prio", ns, sizeof(ns)) != 0)
    return -1;
  for (int i = 0; i < 8; i++) {
    w[i] = (writer_t){i, 8};
    pthread_create(&th[i], NULL, create_many, &w[i]);
  }
  for (int i = 0; i < 8; i++)
    pthread_join(th[i], NULL);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_disconnect(env, config, client, ns);
  return 0;
}

/* ---- one round ---- */

typedef struct seen {
  char marker[32];         /* the value the change writes; set before the patch */
  atomic_int reconciled;   /* reconciles of initial-list objects */
  atomic_llong target_at;  /* when the reconciler saw the change; 0: not yet */
  atomic_int waiting_then; /* initial-list objects not yet reconciled at that time */
  atomic_int marker_set;
} seen_t;

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  seen_t *s = data;
  (void)res;
  if (strcmp(req->name, TARGET) == 0 && atomic_load(&s->marker_set) &&
      atomic_load(&s->target_at) == 0) {
    json_t *obj = NULL;
    const kcr_objclient *c = kcr_reconcile_client(ctx);
    if (kcr_objclient_get(c, &cm_gvk, req->ns, req->name, &obj, NULL) == 0) {
      const char *v = json_string_value(json_object_get(json_object_get(obj, "data"), "v"));
      if (v && strcmp(v, s->marker) == 0) {
        atomic_store(&s->waiting_then, n_objects - atomic_load(&s->reconciled));
        atomic_store(&s->target_at, now_ns());
      }
      json_decref(obj);
    }
    return 0;
  }
  if (strcmp(req->name, TARGET) != 0)
    atomic_fetch_add(&s->reconciled, 1);
  kcr_it_sleep_ms(work_ms);
  return 0;
}

/* round runs one manager with one controller (priority queue pq) and returns
 * the change's latency in ns; *waiting: initial-list objects still waiting. */
static int64_t round_once(bool pq, int round, int *waiting) {
  kcr_manager_options mo = {0};
  kcr_controller_options co = {0};
  kcr_controller_t *c;
  kcr_error_t err = {0};
  kcr_predicate_t *sel = NULL;
  kcr_test_manager_run r = {0};
  kcr_manager_t *m;
  seen_t s;
  char body[96];
  int64_t t0;
  memset(&s, 0, sizeof(s));
  snprintf(s.marker, sizeof(s.marker), "%s-%d", pq ? "on" : "off", round);
  mo.config = config;
  mo.default_namespace = ns;
  mo.no_signal_handlers = true;
  if (kcr_manager_create(&mo, &m, &err) != 0)
    fail_msg("manager: %s", err.message);
  co.name = pq ? "prio-on" : "prio-off";
  co.reconcile = reconcile;
  co.data = &s;
  co.max_concurrent_reconciles = 1;
  co.use_priority_queue = &pq;
  if (kcr_manager_add_controller(m, &co, &c, &err) != 0)
    fail_msg("controller: %s", err.message);
  assert_int_equal(kcr_predicate_label_selector("it=prio", &sel, NULL), 0);
  assert_int_equal(kcr_controller_for(c, &cm_gvk, sel, NULL), 0);
  kcr_test_manager_start(&r, m);
  /* the worker is under way: the initial list is in the queue */
  for (int i = 0; i < 60000 && atomic_load(&s.reconciled) < 10; i++)
    kcr_it_sleep_ms(1);
  assert_true(atomic_load(&s.reconciled) >= 10);
  atomic_store(&s.marker_set, 1);
  snprintf(body, sizeof(body), "{\"data\":{\"v\":\"%s\"}}", s.marker);
  t0 = now_ns();
  if (kcr_client_patch(client, &configmaps, ns, TARGET, KCR_PATCH_MERGE, body, strlen(body), NULL,
                       NULL, &err) != 0)
    fail_msg("patch: %s", err.message);
  for (int i = 0; i < 600000 && atomic_load(&s.target_at) == 0; i++)
    kcr_it_sleep_ms(1);
  assert_true(atomic_load(&s.target_at) != 0);
  assert_int_equal(kcr_test_manager_stop(&r), 0);
  kcr_manager_destroy(m);
  *waiting = atomic_load(&s.waiting_then);
  return atomic_load(&s.target_at) - t0;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void test_priority_it_change_overtakes_initial_list(void **state) {
  int64_t on[32], off[32];
  int won = 0, woff = 0, mid;
  (void)state;
  if (rounds < 1 || rounds > 32)
    rounds = 1;
  for (int i = 0; i < rounds; i++) {
    on[i] = round_once(true, i, &won);
    off[i] = round_once(false, i, &woff);
    fprintf(stderr,
            "round %d (N %d, %d ms per reconcile, 1 worker): priority on %.1f ms (%d of the list "
            "still waiting), off %.1f ms (%d waiting)\n",
            i + 1, n_objects, work_ms, (double)on[i] / 1e6, won, (double)off[i] / 1e6, woff);
    /* the change overtook the list only with the priority queue */
    assert_true(won > woff);
    assert_true(won > 0);
    assert_true(on[i] < off[i]);
  }
  qsort(on, (size_t)rounds, sizeof(on[0]), cmp64);
  qsort(off, (size_t)rounds, sizeof(off[0]), cmp64);
  mid = rounds / 2;
  fprintf(stderr,
          "priority on: median %.1f ms (%.1f..%.1f); off: median %.1f ms (%.1f..%.1f); "
          "off/on %.0fx\n",
          (double)on[mid] / 1e6, (double)on[0] / 1e6, (double)on[rounds - 1] / 1e6,
          (double)off[mid] / 1e6, (double)off[0] / 1e6, (double)off[rounds - 1] / 1e6,
          (double)off[mid] / (double)on[mid]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_priority_it_change_overtakes_initial_list),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
