/* SPDX-License-Identifier: MIT */
/*
 * leader_helper.c: one leader-election candidate for test_leader_it, as a
 * process of its own.
 *
 *   kcr_leader_helper KUBECONFIG NAMESPACE LEASE IDENTITY LOGFILE PORTFILE
 *
 * Appends "ACQUIRE <identity> <unix ns>" when it starts leading and "LOSE
 * <identity> <unix ns> <lost>" when it stops, to LOGFILE (O_APPEND, one write
 * per line). Serves /healthz, /readyz and /metrics on 127.0.0.1:0 and writes the
 * port to PORTFILE. SIGTERM: graceful stop (the lease is released), exit 0. A
 * lost lease: log, then the library's default, _exit(1).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/leaderelection.h"
#include "kcr/metrics.h"
#include "kcr/server.h"

static int log_fd = -1;
static const char *identity;
static volatile sig_atomic_t terminated;

static void log_line(const char *what, int lost) {
  char line[512];
  struct timespec ts;
  int n;
  clock_gettime(CLOCK_REALTIME, &ts);
  n = snprintf(line, sizeof(line), "%s %s %lld %d\n", what, identity,
               (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, lost);
  if (write(log_fd, line, (size_t)n) != n)
    _exit(3);
}

static void on_started(void *data) {
  (void)data;
  log_line("ACQUIRE", 0);
}

static void on_stopped(int lost, void *data) {
  log_line("LOSE", lost);
  kcr_leader_election_exit_on_lost(lost, data);
}

static void on_term(int sig) {
  (void)sig;
  terminated = 1;
}

int main(int argc, char **argv) {
  kcr_rest_config_t *cfg = NULL;
  kcr_client_t *client = NULL;
  kcr_client_options co = {0};
  kcr_leader_election_options lo = {0};
  kcr_leader_election_t *le = NULL;
  kcr_metrics_registry_t *reg = NULL;
  kcr_server_options so = {0};
  kcr_server_t *srv = NULL;
  kcr_error_t err = {0};
  struct sigaction sa;
  FILE *pf;

  if (argc != 7) {
    fprintf(stderr, "usage: %s KUBECONFIG NAMESPACE LEASE IDENTITY LOGFILE PORTFILE\n", argv[0]);
    return 2;
  }
  identity = argv[4];
  log_fd = open(argv[5], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0)
    return 2;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  if (kcr_metrics_registry_create(&reg, NULL) != 0 || kcr_metrics_register_process(reg, NULL) != 0)
    goto fail;
  if (kcr_rest_config_from_kubeconfig(argv[1], NULL, NULL, &cfg, &err) != 0)
    goto fail;
  co.config = cfg;
  co.metrics = reg;
  if (kcr_client_create(&co, &client, &err) != 0)
    goto fail;
  so.loop = kcr_client_loop(client);
  so.bind_address = "127.0.0.1:0";
  so.metrics = reg;
  so.probes = 1;
  if (kcr_server_create(&so, &srv, &err) != 0)
    goto fail;
  pf = fopen(argv[6], "w");
  if (!pf)
    goto fail;
  fprintf(pf, "%d\n", kcr_server_port(srv));
  fclose(pf);

  lo.client = client;
  lo.lease_namespace = argv[2];
  lo.lease_name = argv[3];
  lo.identity = identity;
  lo.release_on_cancel = 1;
  lo.metrics = reg;
  lo.on_started_leading = on_started;
  lo.on_stopped_leading = on_stopped;
  if (kcr_leader_election_create(&lo, &le, &err) != 0)
    goto fail;
  if (kcr_server_add_check(srv, KCR_PROBE_HEALTHZ, "leader-election", kcr_leader_election_check, le,
                           NULL) != 0)
    goto fail;
  if (kcr_leader_election_start(le, &err) != 0)
    goto fail;
  while (!terminated) {
    struct timespec ts = {0, 20000000L};
    nanosleep(&ts, NULL);
  }
  kcr_leader_election_destroy(le);
  kcr_server_destroy(srv);
  kcr_client_destroy(client);
  kcr_rest_config_unref(cfg);
  kcr_metrics_registry_destroy(reg);
  return 0;
fail:
  fprintf(stderr, "leader_helper %s: %s\n", identity, err.message);
  return 1;
}
