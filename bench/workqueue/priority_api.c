/* SPDX-License-Identifier: MIT */
/*
 * priority_api.c: one round of test/integration/test_priority_it.c's scenario
 * as a process of its own, so that bench/workqueue/run_priority_api.sh can
 * alternate it with controller-runtime's twin (bench/peers/go-cr-twins,
 * `priority`) in one run. The namespace holds the initial list (cm-<i>, from
 * bench/cache_sync/create.c); this program adds cm-zz-target if missing (it
 * sorts after every cm-<i>, so it is the last of the initial list), starts a
 * manager with one controller on the namespace's ConfigMaps (one worker,
 * WORK_MS of sleep per reconcile, priority queue on or off), waits until ten
 * are reconciled, changes cm-zz-target's data to a marker of its own and times
 * the change to the reconcile that reads the marker from the cache. It prints
 *
 *   impl=kcr pq=on|off n=N work_ms=W latency_ms=L waiting=K patch_ms=P
 *
 * where K is how many of the initial list had not been reconciled then and P
 * how long the PATCH took to return (part of L). With -D (diagnosis, not for
 * the figures) it also registers a handler of its own on the ConfigMaps'
 * informer, waits until that handler has been given the initial list, and
 * adds handler_ms=H: when an informer handler got the change, which splits L
 * into the way to the handlers and the way through the queue.
 *
 * Usage: priority_api -k KUBECONFIG -n NS -N COUNT -p on|off [-W WORK_MS] [-D]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kcr/kcr.h"

#define TARGET "cm-zz-target"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};

static char marker[64];
static atomic_int marker_set, reconciled, waiting_then;
static atomic_llong target_at, handler_at;
static atomic_long diag_adds;
static long n_objects;
static int work_ms = 1;

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* reconcile is test_priority_it's: the target is checked against the marker
 * in the cache, every other object costs work_ms. */
static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  (void)res;
  (void)data;
  if (strcmp(req->name, TARGET) == 0) {
    json_t *obj = NULL;
    if (atomic_load(&marker_set) && atomic_load(&target_at) == 0 &&
        kcr_objclient_get(kcr_reconcile_client(ctx), &cm_gvk, req->ns, req->name, &obj, NULL) ==
            0) {
      const char *v = json_string_value(json_object_get(json_object_get(obj, "data"), "v"));
      if (v && strcmp(v, marker) == 0) {
        atomic_store(&waiting_then, (int)n_objects - atomic_load(&reconciled));
        atomic_store(&target_at, now_ns());
      }
    }
    json_decref(obj);
    return 0;
  }
  atomic_fetch_add(&reconciled, 1);
  sleep_ms(work_ms);
  return 0;
}

/* on_diag_add counts the initial list given to the diagnosis handler. */
static void on_diag_add(json_t *obj, bool is_initial_list, void *data) {
  (void)obj;
  (void)is_initial_list;
  (void)data;
  atomic_fetch_add(&diag_adds, 1);
}

/* on_diag_update notes when an informer handler got the change. */
static void on_diag_update(json_t *old_obj, json_t *new_obj, void *data) {
  const char *v = json_string_value(json_object_get(json_object_get(new_obj, "data"), "v"));
  (void)old_obj;
  (void)data;
  if (v && atomic_load(&marker_set) && strcmp(v, marker) == 0 && atomic_load(&handler_at) == 0)
    atomic_store(&handler_at, now_ns());
}

static void *run_manager(void *arg) {
  kcr_error_t err = {0};
  if (kcr_manager_run(arg, &err) != 0)
    fprintf(stderr, "priority_api: run: %s\n", err.message);
  return NULL;
}

int main(int argc, char **argv) {
  const char *kubeconfig = NULL, *ns = NULL, *pq_arg = NULL;
  kcr_config_options cfg = {0};
  kcr_rest_config_t *config = NULL;
  kcr_client_options clo = {0};
  kcr_client_t *client = NULL;
  kcr_manager_options mo = {0};
  kcr_controller_options co = {0};
  kcr_controller_t *c;
  kcr_manager_t *m = NULL;
  kcr_error_t err = {0};
  bool pq, diag = false;
  char body[128];
  long long t0, t_patched;
  json_t *o;
  pthread_t th;
  int opt;
  while ((opt = getopt(argc, argv, "k:n:N:p:W:D")) != -1) {
    switch (opt) {
    case 'k':
      kubeconfig = optarg;
      break;
    case 'n':
      ns = optarg;
      break;
    case 'N':
      n_objects = strtol(optarg, NULL, 10);
      break;
    case 'p':
      pq_arg = optarg;
      break;
    case 'W':
      work_ms = (int)strtol(optarg, NULL, 10);
      break;
    case 'D':
      diag = true;
      break;
    default:
      goto usage;
    }
  }
  if (!kubeconfig || !ns || n_objects <= 0 || !pq_arg ||
      (strcmp(pq_arg, "on") != 0 && strcmp(pq_arg, "off") != 0))
    goto usage;
  pq = strcmp(pq_arg, "on") == 0;
  kcr_log_set_level(KCR_LOG_WARN);
  cfg.kubeconfig = kubeconfig;
  if (kcr_rest_config_load(&cfg, &config, &err) != 0)
    goto fail;
  clo.config = config;
  clo.qps = -1;
  if (kcr_client_create(&clo, &client, &err) != 0)
    goto fail;
  o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                "metadata", "name", TARGET, "namespace", ns, "data", "v", "0");
  if (kcr_ignore_already_exists(
          kcr_client_create_object(client, &configmaps, ns, o, NULL, NULL, &err), &err) != 0) {
    json_decref(o);
    goto fail;
  }
  json_decref(o);

  snprintf(marker, sizeof(marker), "kcr-%s-%d-%lld", pq_arg, (int)getpid(), now_ns());
  mo.config = config;
  mo.default_namespace = ns;
  mo.no_signal_handlers = true;
  if (kcr_manager_create(&mo, &m, &err) != 0)
    goto fail;
  co.name = pq ? "prio-on" : "prio-off";
  co.reconcile = reconcile;
  co.max_concurrent_reconciles = 1;
  co.use_priority_queue = &pq;
  if (kcr_manager_add_controller(m, &co, &c, &err) != 0 ||
      kcr_controller_for(c, &cm_gvk, NULL, &err) != 0)
    goto fail;
  if (pthread_create(&th, NULL, run_manager, m) != 0)
    return 1;
  /* the worker is under way: the initial list is in the queue */
  for (int i = 0; i < 300000 && atomic_load(&reconciled) < 10; i++)
    sleep_ms(1);
  if (atomic_load(&reconciled) < 10) {
    fprintf(stderr, "priority_api: the initial list did not start\n");
    return 1;
  }
  if (diag) {
    kcr_event_handler h = {.on_add = on_diag_add, .on_update = on_diag_update};
    kcr_informer_t *inf;
    if (kcr_cache_get_informer(kcr_manager_cache(m), &cm_gvk, &inf, &err) != 0 ||
        kcr_informer_add_handler(inf, &h, NULL, &err) != 0)
      goto fail;
    for (int i = 0; i < 60000 && atomic_load(&diag_adds) < n_objects + 1; i++)
      sleep_ms(1);
  }
  atomic_store(&marker_set, 1);
  snprintf(body, sizeof(body), "{\"data\":{\"v\":\"%s\"}}", marker);
  t0 = now_ns();
  if (kcr_client_patch(client, &configmaps, ns, TARGET, KCR_PATCH_MERGE, body, strlen(body), NULL,
                       NULL, &err) != 0)
    goto fail;
  t_patched = now_ns();
  for (int i = 0; i < 600000 && atomic_load(&target_at) == 0; i++)
    sleep_ms(1);
  if (atomic_load(&target_at) == 0) {
    fprintf(stderr, "priority_api: the change was not seen in 600 s\n");
    return 1;
  }
  printf("impl=kcr pq=%s n=%ld work_ms=%d latency_ms=%.1f waiting=%d patch_ms=%.1f", pq_arg,
         n_objects, work_ms, (double)(atomic_load(&target_at) - t0) / 1e6,
         atomic_load(&waiting_then), (double)(t_patched - t0) / 1e6);
  if (diag)
    printf(" handler_ms=%.1f",
           atomic_load(&handler_at) ? (double)(atomic_load(&handler_at) - t0) / 1e6 : -1.0);
  printf("\n");
  fflush(stdout);
  kcr_manager_request_stop(m);
  pthread_join(th, NULL);
  kcr_manager_destroy(m);
  kcr_client_destroy(client);
  kcr_rest_config_unref(config);
  return 0;
usage:
  fprintf(stderr, "usage: priority_api -k KUBECONFIG -n NS -N COUNT -p on|off [-W WORK_MS]\n");
  return 2;
fail:
  fprintf(stderr, "priority_api: %s\n", err.message);
  return 1;
}
