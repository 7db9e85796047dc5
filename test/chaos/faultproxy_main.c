/* SPDX-License-Identifier: MIT */
/*
 * faultproxy_main.c: kcr_faultproxy (test/support) as a process, for the chaos
 * suite (test/chaos/chaos.py), which compiles it with the system C compiler.
 *
 * Usage: kcr-faultproxy HOST PORT. Prints "port N" (the loopback port it listens
 * on) on stdout, then reads one command per line on stdin and answers each with
 * one line once the proxy thread has applied it:
 *   stall 1|0    stop / resume forwarding in both directions -> "ok"
 *   refuse 1|0   reset / accept new connections              -> "ok"
 *   cut          reset every open connection                 -> "cut N"
 *   stats        -> "connections N active M"
 * EOF on stdin stops the proxy and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr_faultproxy.h"

int main(int argc, char **argv) {
  kcr_faultproxy_t *p = NULL;
  char line[128];
  int rc;

  if (argc != 3) {
    fprintf(stderr, "usage: %s HOST PORT\n", argv[0]);
    return 2;
  }
  rc = kcr_faultproxy_start(argv[1], atoi(argv[2]), &p);
  if (rc < 0) {
    fprintf(stderr, "kcr-faultproxy: start failed: %s\n", strerror(-rc));
    return 1;
  }
  printf("port %d\n", kcr_faultproxy_port(p));
  fflush(stdout);
  while (fgets(line, sizeof line, stdin)) {
    if (!strcmp(line, "stall 1\n") || !strcmp(line, "stall 0\n")) {
      kcr_faultproxy_stall(p, line[6] == '1');
      printf("ok\n");
    } else if (!strcmp(line, "refuse 1\n") || !strcmp(line, "refuse 0\n")) {
      kcr_faultproxy_refuse(p, line[7] == '1');
      printf("ok\n");
    } else if (!strcmp(line, "cut\n")) {
      printf("cut %d\n", kcr_faultproxy_cut(p));
    } else if (!strcmp(line, "stats\n")) {
      printf("connections %lu active %d\n", kcr_faultproxy_connections(p),
             kcr_faultproxy_active(p));
    } else {
      printf("error unknown command\n");
    }
    fflush(stdout);
  }
  kcr_faultproxy_stop(p);
  return 0;
}
