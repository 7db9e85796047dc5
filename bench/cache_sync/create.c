/* SPDX-License-Identifier: MIT */
/*
 * create.c: create N ConfigMaps of about SIZE bytes of data (default 1024), or
 * with -r pods N Pods, in a namespace (created if missing), from T threads
 * sharing one client (HTTP/2 multiplexed), as fast as the apiserver takes
 * them. Names are cm-<i> or pod-<i>; an object that exists already counts as
 * created, so a run can be resumed.
 *
 * A Pod is a minimal valid one as a Deployment's would look: four labels, one
 * container (image kcr.invalid/pause:1, never pulled: the bench cluster runs
 * no scheduler and no kubelet, so the Pods stay Pending and never change), a
 * port, four env vars, resource requests and limits.
 *
 * -w prints "wire_bytes=B": the size of object 0 as the apiserver serves it
 * (compact JSON, managedFields included), read back after the creates; with
 * -N 0 it creates object 0 for that and deletes it again.
 *
 * Usage: create -k KUBECONFIG -n NAMESPACE -N COUNT [-r configmaps|pods] [-b SIZE]
 *               [-T THREADS] [-w]
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
static int pods;
static char *data;
static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvr podsr = {"", "v1", "pods"};

/* object_name writes the name of object i. */
static void object_name(char *buf, size_t len, long i) {
  snprintf(buf, len, pods ? "pod-%ld" : "cm-%ld", i);
}

/* make_object returns object i (new). */
static json_t *make_object(long i) {
  char name[64];
  object_name(name, sizeof(name), i);
  if (!pods)
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                     "ConfigMap", "metadata", "name", name, "namespace", ns, "labels", "bench",
                     "cache-sync", "data", "payload", data);
  return json_pack(
      "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s, s:s}},"
      " s:{s:b, s:[{s:s, s:s, s:[{s:s, s:i, s:s}], s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s},"
      " {s:s, s:s}], s:{s:{s:s, s:s}, s:{s:s, s:s}}}]}}",
      "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace", ns, "labels",
      "bench", "cache-sync", "app.kubernetes.io/name", "web", "app.kubernetes.io/instance",
      "web-bench", "pod-template-hash", "5d8f7c9b6d", "spec", "automountServiceAccountToken", 0,
      "containers", "name", "web", "image", "kcr.invalid/pause:1", "ports", "name", "http",
      "containerPort", 8080, "protocol", "TCP", "env", "name", "LOG_LEVEL", "value", "info", "name",
      "LISTEN_ADDR", "value", ":8080", "name", "CONFIG_PATH", "value", "/etc/web/config.yaml",
      "name", "UPSTREAM_URL", "value", "http://backend.bench.svc:9090", "resources", "requests",
      "cpu", "100m", "memory", "64Mi", "limits", "cpu", "500m", "memory", "128Mi");
}

/* create_one creates object i; an existing one counts as created. For Pods it
 * retries while the namespace's default ServiceAccount does not exist yet (the
 * ServiceAccount admission plugin refuses Pods until the controller made it). */
static int create_one(long i, kcr_error_t *err) {
  json_t *obj = make_object(i);
  int rc = -1;
  for (int attempt = 0; attempt < 100; attempt++) {
    kcr_error_clear(err);
    if (kcr_client_create_object(client, pods ? &podsr : &configmaps, ns, obj, NULL, NULL, err) ==
            0 ||
        kcr_error_is_already_exists(err)) {
      rc = 0;
      break;
    }
    if (!pods || strstr(err->message, "serviceaccount") == NULL)
      break;
    usleep(100000);
  }
  json_decref(obj);
  return rc;
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    long i = atomic_fetch_add(&next_i, 1);
    kcr_error_t err;
    if (i >= total)
      break;
    if (create_one(i, &err) != 0 && atomic_fetch_add(&failed, 1) < 5)
      fprintf(stderr, "create %ld: %s\n", i, err.message);
  }
  return NULL;
}

/* print_wire_bytes prints the served size of object 0, creating it first (and
 * deleting it after) if the namespace is to hold none. */
static int print_wire_bytes(void) {
  char name[64];
  json_t *obj = NULL;
  char *text;
  kcr_error_t err;
  const kcr_gvr *r = pods ? &podsr : &configmaps;
  object_name(name, sizeof(name), 0);
  if (total == 0 && create_one(0, &err) != 0) {
    fprintf(stderr, "create %s: %s\n", name, err.message);
    return -1;
  }
  kcr_error_clear(&err);
  if (kcr_client_get(client, r, ns, name, NULL, &obj, &err) != 0) {
    fprintf(stderr, "get %s: %s\n", name, err.message);
    return -1;
  }
  text = json_dumps(obj, JSON_COMPACT);
  printf("wire_bytes=%zu\n", text ? strlen(text) : 0);
  free(text);
  json_decref(obj);
  if (total == 0) {
    json_t *out = NULL;
    kcr_error_clear(&err);
    if (kcr_client_delete(client, r, ns, name, NULL, &out, &err) != 0) {
      fprintf(stderr, "delete %s: %s\n", name, err.message);
      return -1;
    }
    json_decref(out);
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *kubeconfig = getenv("KUBECONFIG");
  int threads = 16, wire = 0, c;
  pthread_t tid[64];
  kcr_rest_config_t *cfg = NULL;
  kcr_client_options co;
  kcr_error_t err;
  json_t *nsobj;
  static const kcr_gvr namespaces = {"", "v1", "namespaces"};

  ns = "bench";
  while ((c = getopt(argc, argv, "k:n:N:r:b:T:w")) != -1) {
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
    case 'r':
      if (strcmp(optarg, "pods") == 0)
        pods = 1;
      else if (strcmp(optarg, "configmaps") != 0) {
        fprintf(stderr, "-r is configmaps or pods\n");
        return 2;
      }
      break;
    case 'w':
      wire = 1;
      break;
    case 'b':
      size = atol(optarg);
      break;
    case 'T':
      threads = atoi(optarg);
      break;
    default:
      fprintf(stderr,
              "usage: %s -k KUBECONFIG -n NS -N COUNT [-r configmaps|pods] [-b SIZE]"
              " [-T THREADS] [-w]\n",
              argv[0]);
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
  data = malloc((size_t)size + 1);
  for (long k = 0; k < size; k++)
    data[k] = (char)('a' + k % 26);
  data[size] = '\0';
  for (int t = 0; t < threads; t++)
    pthread_create(&tid[t], NULL, worker, NULL);
  for (int t = 0; t < threads; t++)
    pthread_join(tid[t], NULL);
  if (!atomic_load(&failed) && wire && print_wire_bytes() != 0)
    atomic_fetch_add(&failed, 1);
  free(data);
  kcr_client_destroy(client);
  kcr_rest_config_unref(cfg);
  if (atomic_load(&failed)) {
    fprintf(stderr, "%ld creates failed\n", atomic_load(&failed));
    return 1;
  }
  return 0;
}
