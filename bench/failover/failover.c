/* SPDX-License-Identifier: MIT */
/*
 * failover.c: one replica of a leader-elected manager with one controller on
 * the ConfigMaps of a namespace, for bench/failover/run.sh. It prints, each on
 * a line of its own with the CLOCK_REALTIME time in ns:
 *
 *   ELECTED <t>   the replica holds the Lease (its write fence opened)
 *   FIRST <t>     the first reconcile began
 *   ALL <t> <n>   n distinct ConfigMaps reconciled (n >= -N)
 *
 * With -x it exits 0 after ALL; without, it runs until it is killed. With -w
 * the replica warms its controller up while it does not lead
 * (kcr_manager_options.enable_warmup).
 *
 * Usage: failover -k KUBECONFIG -n NAMESPACE -l LEASE -N COUNT [-w] [-x]
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

static atomic_long reconciled;
static atomic_bool first;
static long want;
static bool exit_after_all;
static kcr_manager_t *mgr;

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Each ConfigMap is reconciled once: a Forget on success, and nothing writes
 * them during a run, so the count is of distinct keys. */
static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  long n;
  (void)ctx;
  (void)req;
  (void)res;
  (void)data;
  if (!atomic_exchange(&first, true)) {
    printf("FIRST %lld\n", now_ns());
    fflush(stdout);
  }
  n = atomic_fetch_add(&reconciled, 1) + 1;
  if (n == want) {
    printf("ALL %lld %ld\n", now_ns(), n);
    fflush(stdout);
    if (exit_after_all)
      kcr_manager_request_stop(mgr);
  }
  return 0;
}

static void *watch_elected(void *arg) {
  (void)arg;
  while (kcr_manager_fence_remaining(mgr) <= 0) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  printf("ELECTED %lld\n", now_ns());
  fflush(stdout);
  return NULL;
}

int main(int argc, char **argv) {
  const char *kubeconfig = NULL, *ns = NULL, *lease = NULL;
  static const kcr_gvk cm = {"", "v1", "ConfigMap"};
  kcr_manager_options mo = {0};
  kcr_manager_serving_options so = {0};
  kcr_controller_options co = {0};
  kcr_config_options cfg = {0};
  kcr_rest_config_t *config = NULL;
  kcr_controller_t *c;
  kcr_error_t err = {0};
  pthread_t th;
  bool warm = false;
  int opt;
  while ((opt = getopt(argc, argv, "k:n:l:N:wx")) != -1) {
    switch (opt) {
    case 'k':
      kubeconfig = optarg;
      break;
    case 'n':
      ns = optarg;
      break;
    case 'l':
      lease = optarg;
      break;
    case 'N':
      want = strtol(optarg, NULL, 10);
      break;
    case 'w':
      warm = true;
      break;
    case 'x':
      exit_after_all = true;
      break;
    default:
      fprintf(stderr, "usage: failover -k KUBECONFIG -n NS -l LEASE -N COUNT [-w] [-x]\n");
      return 2;
    }
  }
  if (!kubeconfig || !ns || !lease || want <= 0) {
    fprintf(stderr, "usage: failover -k KUBECONFIG -n NS -l LEASE -N COUNT [-w] [-x]\n");
    return 2;
  }
  kcr_log_set_level(KCR_LOG_WARN);
  cfg.kubeconfig = kubeconfig;
  if (kcr_rest_config_load(&cfg, &config, &err) != 0)
    goto fail;
  mo.config = config;
  mo.default_namespace = ns;
  mo.enable_warmup = warm;
  if (kcr_manager_create(&mo, &mgr, &err) != 0)
    goto fail;
  so.leader_elect = true;
  so.leader_election_id = lease;
  so.leader_election_namespace = ns;
  so.lease_duration_ns = 4 * KCR_NSEC_PER_SEC;
  so.renew_deadline_ns = 3 * KCR_NSEC_PER_SEC;
  so.retry_period_ns = 500 * KCR_NSEC_PER_MSEC;
  if (kcr_manager_serve(mgr, &so, &err) != 0)
    goto fail;
  co.name = "failover";
  co.reconcile = reconcile;
  co.max_concurrent_reconciles = 2;
  if (kcr_manager_add_controller(mgr, &co, &c, &err) != 0 ||
      kcr_controller_for(c, &cm, NULL, &err) != 0)
    goto fail;
  if (pthread_create(&th, NULL, watch_elected, NULL) != 0)
    return 1;
  pthread_detach(th);
  if (kcr_manager_run(mgr, &err) != 0)
    goto fail;
  return 0;
fail:
  fprintf(stderr, "failover: %s\n", err.message);
  return 1;
}
