/* SPDX-License-Identifier: MIT */
/*
 * main.c: the memcached-operator manager, as kcr-gen init scaffolds it. It
 * loads the cluster configuration (--kubeconfig, KUBECONFIG, ~/.kube/config or
 * the Pod's service account), makes a manager with health probes, metrics and
 * optional leader election, adds every controller listed in
 * internal/controller/controllers.inc (kcr-gen create api appends to it: here
 * the Memcached's) and runs until SIGTERM or Ctrl-C. The Memcached operand
 * image is $MEMCACHED_IMAGE, else memcached:1.6.26-alpine3.19.
 */
#include <stdio.h>
#include <string.h>

#include <kcr/kcr.h>

#include "controllers.h"

static void usage(FILE *f) {
  fputs("usage: manager [--kubeconfig FILE] [--metrics-bind-address ADDR]\n"
        "               [--health-probe-bind-address ADDR] [--leader-elect]\n"
        "               [--leader-election-namespace NS] [--namespace NS]\n",
        f);
}

int main(int argc, char **argv) {
  kcr_config_options co = {0};
  kcr_manager_options mo = {0};
  kcr_manager_serving_options so = {
      .metrics_bind_address = "0",
      .health_probe_bind_address = ":8081",
      .leader_election_id = "memcached-operator.example.com",
  };
  kcr_rest_config_t *cfg = NULL;
  kcr_manager_t *mgr = NULL;
  kcr_scheme_t *scheme = NULL;
  kcr_error_t err = {0};
  int rc;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--leader-elect") == 0) {
      so.leader_elect = true;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (v && strcmp(a, "--kubeconfig") == 0) {
      co.kubeconfig = argv[++i];
    } else if (v && strcmp(a, "--metrics-bind-address") == 0) {
      so.metrics_bind_address = argv[++i];
    } else if (v && strcmp(a, "--health-probe-bind-address") == 0) {
      so.health_probe_bind_address = argv[++i];
    } else if (v && strcmp(a, "--leader-election-namespace") == 0) {
      so.leader_election_namespace = argv[++i];
    } else if (v && strcmp(a, "--namespace") == 0) {
      mo.default_namespace = argv[++i];
    } else {
      fprintf(stderr, "manager: unknown or incomplete flag %s\n", a);
      usage(stderr);
      return 2;
    }
  }

  if ((rc = kcr_rest_config_load(&co, &cfg, &err)) != 0)
    goto out;
  mo.config = cfg;
  if ((rc = kcr_scheme_create(&scheme, &err)) != 0 ||
      (rc = kcr_manager_create(&mo, &mgr, &err)) != 0 ||
      (rc = kcr_manager_serve(mgr, &so, &err)) != 0 ||
      (rc = setup_controllers(mgr, scheme, &err)) != 0)
    goto out;
  rc = kcr_manager_run(mgr, &err); /* until SIGTERM/SIGINT */
out:
  if (rc)
    fprintf(stderr, "manager: %s\n", err.message[0] ? err.message : kcr_strerror(rc));
  kcr_manager_destroy(mgr);
  kcr_scheme_destroy(scheme);
  kcr_rest_config_unref(cfg);
  return rc ? 1 : 0;
}
