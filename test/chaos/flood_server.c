/* SPDX-License-Identifier: MIT */
/*
 * flood_server.c: one kcr server (kcr/server.h) with its defaults, for
 * shed_flood.py to flood: /healthz and /readyz, over TLS with a self-signed
 * certificate when the first argument is "tls". Prints "port=N" once
 * listening, then serves until SIGINT or SIGTERM. The same server code runs
 * the probe, metrics and webhook ports of a manager.
 *
 *   cc -std=c11 -D_GNU_SOURCE -Iinclude test/chaos/flood_server.c libkcr.a \
 *      $(pkg-config --libs libcurl jansson yaml-0.1 libuv openssl) -lm
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kcr/loop.h"
#include "kcr/metrics.h"
#include "kcr/server.h"

static volatile sig_atomic_t stopping;

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

int main(int argc, char **argv) {
  kcr_loop_t *loop = NULL;
  kcr_metrics_registry_t *reg = NULL;
  kcr_server_t *srv = NULL;
  kcr_server_options o;
  kcr_error_t err = {0};
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  memset(&o, 0, sizeof(o));
  o.bind_address = "127.0.0.1:0";
  o.probes = 1;
  o.tls = argc > 1 && strcmp(argv[1], "tls") == 0;
  /* a second argument "defer": TCP_DEFER_ACCEPT of 2 s (kcr_server_options.defer_accept_s) */
  o.defer_accept_s = argc > 2 && strcmp(argv[2], "defer") == 0 ? 2 : 0;
  if (kcr_loop_create(&loop, &err) != 0 || kcr_loop_start(loop, &err) != 0 ||
      kcr_metrics_registry_create(&reg, &err) != 0) {
    fprintf(stderr, "flood_server: %s\n", err.message);
    return 1;
  }
  o.loop = loop;
  o.metrics = reg;
  if (kcr_server_create(&o, &srv, &err) != 0) {
    fprintf(stderr, "flood_server: %s\n", err.message);
    return 1;
  }
  printf("port=%d\n", kcr_server_port(srv));
  fflush(stdout);
  while (!stopping)
    pause();
  {
    kcr_server_stats st;
    kcr_server_get_stats(srv, &st);
    fprintf(stderr, "flood_server: %llu connections, %llu shed, %llu refused\n",
            (unsigned long long)st.connections, (unsigned long long)st.shed,
            (unsigned long long)st.rejected);
  }
  kcr_server_destroy(srv);
  kcr_loop_destroy(loop);
  kcr_metrics_registry_destroy(reg);
  return 0;
}
