/* SPDX-License-Identifier: MIT */
/*
 * fence_helper.c: one replica of a leader-elected manager for
 * test_leader_fence_it, as a process of its own.
 *
 *   kcr_fence_helper KUBECONFIG NAMESPACE LEASE USER_AGENT LOGFILE
 *
 * A manager (client User-Agent USER_AGENT, so the audit log tells replicas
 * apart) campaigns for LEASE in NAMESPACE with short durations (lease 4 s,
 * renew deadline 3 s, retry 0.5 s). While leading, its controller reconciles
 * the ConfigMap "fence-trigger" every 100 ms by patching "fence-target"
 * through the manager's object client: a steady stream of leader-only writes.
 * Appends "ACQUIRE <user agent> <unix ns>" when it starts leading and
 * "EXIT <user agent> <unix ns> <rc>" when the manager returns, to LOGFILE.
 * SIGTERM: graceful stop (the lease is released), exit 0; a lost lease: exit 1.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kcr/config.h"
#include "kcr/controller.h"
#include "kcr/manager.h"

static int log_fd = -1;
static const char *agent;
static atomic_long writes;

static void log_line(const char *what, int rc) {
  char line[512];
  struct timespec ts;
  int n;
  clock_gettime(CLOCK_REALTIME, &ts);
  n = snprintf(line, sizeof(line), "%s %s %lld %d\n", what, agent,
               (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, rc);
  if (write(log_fd, line, (size_t)n) != n)
    _exit(3);
}

static int on_reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                        void *data) {
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  char patch[256];
  json_t *out = NULL, *target;
  int n, rc;
  (void)data;
  if (strcmp(req->name, "fence-trigger") != 0)
    return 0;
  n = snprintf(patch, sizeof(patch), "{\"data\":{\"writer\":\"%s\",\"n\":\"%ld\"}}", agent,
               atomic_fetch_add(&writes, 1));
  target = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "namespace", req->ns, "name", "fence-target");
  rc = kcr_objclient_patch(c, target, KCR_PATCH_MERGE, patch, (size_t)n, NULL, &out,
                           kcr_reconcile_err(ctx));
  json_decref(target);
  json_decref(out);
  res->requeue_after_ns = 100 * KCR_NSEC_PER_MSEC;
  return rc;
}

static int on_leading(void *data, kcr_error_t *err) {
  (void)data;
  (void)err;
  log_line("ACQUIRE", 0);
  return 0;
}

int main(int argc, char **argv) {
  static const kcr_gvk configmaps = {"", "v1", "ConfigMap"};
  kcr_rest_config_t *cfg = NULL;
  kcr_manager_options mo = {0};
  kcr_manager_serving_options so = {0};
  kcr_controller_options co = {0};
  kcr_runnable r = {"acquire-log", on_leading, NULL, NULL, KCR_RUNNABLE_LEADER};
  kcr_manager_t *m = NULL;
  kcr_controller_t *c = NULL;
  kcr_error_t err = {0};
  int rc;

  if (argc != 6) {
    fprintf(stderr, "usage: %s KUBECONFIG NAMESPACE LEASE USER_AGENT LOGFILE\n", argv[0]);
    return 2;
  }
  agent = argv[4];
  atomic_init(&writes, 0);
  log_fd = open(argv[5], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0)
    return 2;
  if (kcr_rest_config_from_kubeconfig(argv[1], NULL, NULL, &cfg, &err) != 0)
    goto fail;
  mo.config = cfg;
  mo.default_namespace = argv[2];
  mo.user_agent = agent;
  mo.graceful_shutdown_timeout_ns = 5 * KCR_NSEC_PER_SEC;
  if (kcr_manager_create(&mo, &m, &err) != 0)
    goto fail;
  so.leader_elect = true;
  so.leader_election_id = argv[3];
  so.leader_election_namespace = argv[2];
  so.leader_election_release_on_cancel = true;
  so.lease_duration_ns = 4 * KCR_NSEC_PER_SEC;
  so.renew_deadline_ns = 3 * KCR_NSEC_PER_SEC;
  so.retry_period_ns = 500 * KCR_NSEC_PER_MSEC;
  if (kcr_manager_serve(m, &so, &err) != 0)
    goto fail;
  co.name = "fence";
  co.reconcile = on_reconcile;
  if (kcr_manager_add_controller(m, &co, &c, &err) != 0 ||
      kcr_controller_for(c, &configmaps, NULL, &err) != 0 ||
      kcr_manager_add_runnable(m, &r, &err) != 0)
    goto fail;
  rc = kcr_manager_run(m, &err);
  log_line("EXIT", rc);
  if (rc == KCR_ECANCELED)
    _exit(1); /* lost: no graceful teardown, as controller-runtime */
  kcr_manager_destroy(m);
  kcr_rest_config_unref(cfg);
  return rc == 0 ? 0 : 1;
fail:
  fprintf(stderr, "fence_helper %s: %s\n", agent, err.message);
  kcr_manager_destroy(m);
  kcr_rest_config_unref(cfg);
  return 1;
}
