/* SPDX-License-Identifier: MIT */
/*
 * create.c: create N ConfigMaps of about SIZE bytes of data (default 1024) in a
 * namespace (created if missing), from T threads sharing one client (HTTP/2
 * multiplexed), as fast as the apiserver takes them. Names are cm-<i>; an
 * object that exists already counts as created, so a run can be resumed.
 *
 * Usage: create -k KUBECONFIG -n NAMESPACE -N COUNT [-b SIZE] [-T THREADS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcr/kcr.h"

static kcr_client_t *client;
static const char *ns;
static long total, size = 1024;
static atomic_long next_i, failed;
static const kcr_gvr configmaps = {"", "v1", "configmaps"};

static void *worker(void *arg) {
  char *data = malloc((size_t)size + 1);
  (void)arg;
  for (long k = 0; k < size; k++)
    data[k] = (char)('a' + k % 26);
  data[size] = '\0';
  for (;;) {
    long i = atomic_fetch_add(&next_i, 1);
    char name[64];
    json_t *obj;
    kcr_error_t err;
    if (i >= total)
      break;
    snprintf(name, sizeof(name), "cm-%ld", i);
    obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                    "ConfigMap", "metadata", "name", name, "namespace", ns, "labels", "bench",
                    "cache-sync", "data", "payload", data);
    kcr_error_clear(&err);
    if (kcr_client_create_object(client, &configmaps, ns, obj, NULL, NULL, &err) != 0 &&
        !kcr_error_is_already_exists(&err)) {
      if (atomic_fetch_add(&failed, 1) < 5)
        fprintf(stderr, "create %s: %s\n", name, err.message);
    }
    json_decref(obj);
  }
  free(data);
  return NULL;
}

int main(int argc, char **argv) {
  const char *kubeconfig = getenv("KUBECONFIG");
  int threads = 16, c;
  pthread_t tid[64];
  kcr_rest_config_t *cfg = NULL;
  kcr_client_options co;
  kcr_error_t err;
  json_t *nsobj;
  static const kcr_gvr namespaces = {"", "v1", "namespaces"};

  ns = "bench";
  while ((c = getopt(argc, argv, "k:n:N:b:T:")) != -1) {
    switch (c) {
    case 'k':
      kubeconfig = optarg;
      break;
    case 'n':
      ns = optarg;
      break;
    case 'N':
      total = atol(optarg);
      break;
    case 'b':
      size = atol(optarg);
      break;
    case 'T':
      threads = atoi(optarg);
      break;
    default:
      fprintf(stderr, "usage: %s -k KUBECONFIG -n NS -N COUNT [-b SIZE] [-T THREADS]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1 || threads > 64)
    threads = 16;
  kcr_error_clear(&err);
  if (kcr_rest_config_from_kubeconfig(kubeconfig, NULL, NULL, &cfg, &err)) {
    fprintf(stderr, "config: %s\n", err.message);
    return 1;
  }
  memset(&co, 0, sizeof(co));
  co.config = cfg;
  if (kcr_client_create(&co, &client, &err)) {
    fprintf(stderr, "client: %s\n", err.message);
    return 1;
  }
  nsobj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                    "name", ns);
  if (kcr_client_create_object(client, &namespaces, NULL, nsobj, NULL, NULL, &err) != 0 &&
      !kcr_error_is_already_exists(&err)) {
    fprintf(stderr, "namespace: %s\n", err.message);
    return 1;
  }
  json_decref(nsobj);
  for (int t = 0; t < threads; t++)
    pthread_create(&tid[t], NULL, worker, NULL);
  for (int t = 0; t < threads; t++)
    pthread_join(tid[t], NULL);
  kcr_client_destroy(client);
  kcr_rest_config_unref(cfg);
  if (atomic_load(&failed)) {
    fprintf(stderr, "%ld creates failed\n", atomic_load(&failed));
    return 1;
  }
  return 0;
}
