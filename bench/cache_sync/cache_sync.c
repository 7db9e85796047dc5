/* SPDX-License-Identifier: MIT */
/*
 * cache_sync.c: start one informer on the ConfigMaps (with -r pods, the Pods) of
 * a namespace, wait for it to sync and print what that cost: time from start
 * to synced, CPU (user + system), VmRSS and VmHWM when synced, VmRSS and VmHWM
 * (the peak) after the settle time (-t, default 2 s; bench/cache_sync/run.sh's
 * RELIST=1 forces a relist during it), and the lists the informer stored (1,
 * plus one per relist). The kcr side of bench/cache_sync/run.sh;
 * bench/peers/go-cache-sync prints the same line for client-go.
 *
 * Usage: cache_sync -k KUBECONFIG -n NAMESPACE [-r configmaps|pods] [-s] [-H] [-T] [-J]
 *                   [-t SETTLE_S] [-m trim|wire]
 *   -r  the resource to cache (default configmaps)
 *   -s  streaming list (sendInitialEvents) instead of paged lists
 *   -H  register a handler that counts adds (as a controller's For would)
 *   -T  call malloc_trim(0) once synced and print the RSS after it too (how much
 *       of the RSS is heap glibc keeps but the cache does not use)
 *   -m  cache metadata only: trim, whole objects reduced to their metadata on
 *       arrival (a transform: the cache's metadata_only before issue 25); wire,
 *       listed and watched as PartialObjectMetadata (metadata_only). The line
 *       then says meta=.
 *   -J  JSON on the wire (kcr_informer_options.json_wire): impl=kcr-json; by
 *       default a built-in kind streams in protobuf
 *   -P  go through a byte-counting TCP proxy in this process
 *       (test/support/kcr_faultproxy.c, on the kubeconfig's loopback port) and
 *       print rx_bytes=, what the server sent until synced (TLS records, as
 *       they cross the network). The proxy's thread adds to cpu_s and sync_s:
 *       measure bytes and time in separate runs.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kcr/kcr.h"
#include "kcr_faultproxy.h"
#include "procstat.h"

static atomic_long adds;

static void on_add(json_t *obj, bool initial, void *data) {
  (void)obj;
  (void)initial;
  (void)data;
  atomic_fetch_add(&adds, 1);
}

/* trim_transform reduces an object to apiVersion, kind and metadata without
 * managedFields, as the cache's metadata_only did on arrival before it asked
 * the server for PartialObjectMetadata. */
static int trim_transform(json_t *obj, void *data) {
  const char *k;
  json_t *v, *tmp;
  (void)data;
  json_object_foreach_safe(obj, tmp, k, v) {
    if (strcmp(k, "apiVersion") != 0 && strcmp(k, "kind") != 0 && strcmp(k, "metadata") != 0)
      json_object_del(obj, k);
  }
  return kcr_meta_strip_managed_fields(obj);
}

/* proxied_kubeconfig starts *proxy towards the port of kubeconfig's
 * "server: https://127.0.0.1:PORT" and writes a copy of kubeconfig that points
 * at the proxy into path (a template, mkstemp). 0 or -1. */
static int proxied_kubeconfig(const char *kubeconfig, char *path, kcr_faultproxy_t **proxy) {
  static const char key[] = "server: https://127.0.0.1:";
  char buf[65536], *at;
  size_t n;
  FILE *f = fopen(kubeconfig, "r");
  int fd, port;
  if (!f)
    return -1;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  if (!(at = strstr(buf, key)) || (port = atoi(at + strlen(key))) <= 0 ||
      kcr_faultproxy_start("127.0.0.1", port, proxy) != 0 || (fd = mkstemp(path)) < 0)
    return -1;
  f = fdopen(fd, "w");
  if (!f)
    return -1;
  at += strlen(key);
  fprintf(f, "%.*s%d%s", (int)(at - buf), buf, kcr_faultproxy_port(*proxy),
          at + strspn(at, "0123456789"));
  return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  const char *kubeconfig = getenv("KUBECONFIG"), *ns = "default";
  double settle = 2, t0, t_sync, cpu;
  int stream = 0, handler = 0, trim = 0, pods = 0, c;
  const char *meta = NULL;
  kcr_faultproxy_t *proxy = NULL;
  char proxied[] = "/tmp/kcr-cache-sync-XXXXXX";
  int use_proxy = 0, json_wire = 0;
  unsigned long long rx = 0;
  long rss_trimmed = -1;
  long rss_synced, hwm_synced;
  kcr_informer_stats st;
  kcr_rest_config_t *cfg = NULL;
  kcr_client_t *client = NULL;
  kcr_informer_t *inf = NULL;
  kcr_client_options co;
  kcr_informer_options io;
  kcr_error_t err;

  while ((c = getopt(argc, argv, "k:n:r:sHTt:m:PJ")) != -1) {
    switch (c) {
    case 'k':
      kubeconfig = optarg;
      break;
    case 'n':
      ns = optarg;
      break;
    case 'r':
      if (strcmp(optarg, "pods") == 0)
        pods = 1;
      else if (strcmp(optarg, "configmaps") != 0) {
        fprintf(stderr, "-r is configmaps or pods\n");
        return 2;
      }
      break;
    case 's':
      stream = 1;
      break;
    case 'H':
      handler = 1;
      break;
    case 'T':
      trim = 1;
      break;
    case 't':
      settle = atof(optarg);
      break;
    case 'P':
      use_proxy = 1;
      break;
    case 'J':
      json_wire = 1;
      break;
    case 'm':
      if (strcmp(optarg, "trim") != 0 && strcmp(optarg, "wire") != 0) {
        fprintf(stderr, "-m is trim or wire\n");
        return 2;
      }
      meta = optarg;
      break;
    default:
      fprintf(stderr,
              "usage: %s -k KUBECONFIG -n NS [-r configmaps|pods] [-s] [-H] [-T] [-t SETTLE_S] "
              "[-m trim|wire] [-P] [-J]\n",
              argv[0]);
      return 2;
    }
  }
  kcr_log_set_level(KCR_LOG_WARN);
  kcr_error_clear(&err);
  if (use_proxy) {
    if (!kubeconfig || proxied_kubeconfig(kubeconfig, proxied, &proxy) != 0) {
      fprintf(stderr, "proxy: cannot proxy the kubeconfig's server\n");
      return 1;
    }
    kubeconfig = proxied;
  }
  t0 = now_s();
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
  memset(&io, 0, sizeof(io));
  io.client = client;
  io.resource = (kcr_gvr){"", "v1", pods ? "pods" : "configmaps"};
  io.kind = pods ? "Pod" : "ConfigMap";
  io.ns = ns;
  io.streaming_list = stream;
  io.json_wire = json_wire;
  if (meta && strcmp(meta, "trim") == 0)
    io.transform = trim_transform;
  else if (meta)
    io.metadata_only = true;
  if (kcr_informer_create(&io, &inf, &err)) {
    fprintf(stderr, "informer: %s\n", err.message);
    return 1;
  }
  if (handler) {
    kcr_event_handler h = {.on_add = on_add};
    if (kcr_informer_add_handler(inf, &h, NULL, &err)) {
      fprintf(stderr, "handler: %s\n", err.message);
      return 1;
    }
  }
  if (kcr_informer_start(inf, &err) ||
      kcr_informer_wait_for_sync(inf, 300 * KCR_NSEC_PER_SEC, &err)) {
    fprintf(stderr, "sync: %s\n", err.message);
    return 1;
  }
  t_sync = now_s() - t0;
  cpu = cpu_s();
  if (proxy)
    rx = kcr_faultproxy_bytes_down(proxy);
  rss_synced = status_kb("VmRSS");
  hwm_synced = status_kb("VmHWM");
  usleep((useconds_t)(settle * 1e6));
  kcr_informer_get_stats(inf, &st);
  printf("impl=%s objects=%zu sync_s=%.3f cpu_s=%.3f rss_synced_kb=%ld hwm_synced_kb=%ld"
         " rss_kb=%ld hwm_kb=%ld lists=%llu handler_adds=%ld",
         json_wire ? "kcr-json" : "kcr", kcr_store_len(kcr_informer_store(inf)), t_sync, cpu,
         rss_synced, hwm_synced, status_kb("VmRSS"), status_kb("VmHWM"),
         (unsigned long long)st.lists, atomic_load(&adds));
  if (meta)
    printf(" meta=%s", meta);
  if (proxy)
    printf(" rx_bytes=%llu", rx);
  if (trim) {
    malloc_trim(0);
    rss_trimmed = status_kb("VmRSS");
    printf(" rss_trimmed_kb=%ld", rss_trimmed);
  }
  printf("\n");
  fflush(stdout);
  kcr_informer_destroy(inf);
  kcr_client_destroy(client);
  kcr_rest_config_unref(cfg);
  if (proxy) {
    kcr_faultproxy_stop(proxy);
    unlink(proxied);
  }
  return 0;
}
