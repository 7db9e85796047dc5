/* SPDX-License-Identifier: MIT */
/*
 * bench_watch.c: watch-event decode throughput (BENCH.md U3), not run by the
 * tests. Builds two synthetic watch streams in memory, one of ~1 KiB ConfigMaps
 * and one of ~4 KB Pod-like objects, with the shape and escaping the API server
 * writes, and feeds each to a kcr_watch_decoder_t in 16 KiB chunks (libcurl's
 * CURL_MAX_WRITE_SIZE, so most lines are parsed in place and some are split) and
 * in one piece. Reports the median of several runs in MB/s and ns/event, next to
 * bare json_loadb over the same lines (the floor jansson sets).
 *
 *   bench_watch [-n RUNS] [-w DIR]   -w also writes the streams to DIR/*.jsonl
 *                                    so other implementations decode the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "kcr/buf.h"
#include "kcr/watch.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void must(int rc, const char *what) {
  if (rc != 0) {
    fprintf(stderr, "bench_watch: %s failed (%d)\n", what, rc);
    exit(1);
  }
}

/* gen_configmap appends one ADDED/MODIFIED event of a ~1 KiB ConfigMap. */
static void gen_configmap(kcr_buf_t *b, int i) {
  must(
      kcr_buf_appendf(
          b,
          "{\"type\":\"%s\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"
          "\"name\":\"app-config-%06d\",\"namespace\":\"bench\",\"uid\":\"5b1f2c0e-7d3a-4f0e-"
          "9a51-%012d\",\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2025-11-29T15:04:05Z\","
          "\"labels\":{\"app.kubernetes.io/name\":\"app\",\"app.kubernetes.io/"
          "instance\":\"app-%d\","
          "\"bench\":\"true\"},\"annotations\":{\"kcr.dev/note\":\"synthetic \\u003cbench\\u003e "
          "object\"}},\"data\":{",
          i % 3 ? "MODIFIED" : "ADDED", i, i, 100000 + i, i % 17),
      "append");
  for (int k = 0; k < 6; k++)
    must(kcr_buf_appendf(b,
                         "%s\"key-%d.properties\":\"log.level=info\\nfeature.%d=true\\nendpoint="
                         "https://svc-%d.bench.svc.cluster.local:8443/v1/items?limit=500\\n"
                         "retries=%d\\n\"",
                         k ? "," : "", k, k, i, k + i % 5),
         "append");
  must(kcr_buf_appends(b, "}}}\n"), "append");
}

/* gen_pod appends one event of a ~4 KB Pod with spec, status and managedFields. */
static void gen_pod(kcr_buf_t *b, int i) {
  must(
      kcr_buf_appendf(
          b,
          "{\"type\":\"%s\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
          "\"name\":\"web-7d9f8c6b5d-%05d\",\"generateName\":\"web-7d9f8c6b5d-\",\"namespace\":"
          "\"bench\",\"uid\":\"0a7c9e55-1b2d-4c3e-8f90-%012d\",\"resourceVersion\":\"%d\","
          "\"creationTimestamp\":\"2025-11-29T15:04:05Z\",\"labels\":{\"app\":\"web\","
          "\"pod-template-hash\":\"7d9f8c6b5d\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
          "\"kind\":\"ReplicaSet\",\"name\":\"web-7d9f8c6b5d\",\"uid\":\"9f8e7d6c-5b4a-4392-8172-"
          "6a5b4c3d2e1f\",\"controller\":true,\"blockOwnerDeletion\":true}],\"managedFields\":[{"
          "\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
          "\"time\":\"2025-11-29T15:04:05Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:"
          "metadata\""
          ":{\"f:generateName\":{},\"f:labels\":{\".\":{},\"f:app\":{},\"f:pod-template-hash\":{}},"
          "\"f:ownerReferences\":{\".\":{},\"k:{\\\"uid\\\":\\\"9f8e7d6c-5b4a-4392-8172-"
          "6a5b4c3d2e1f\\\"}\":{}}},\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"web\\\"}\":"
          "{"
          "\".\":{},\"f:image\":{},\"f:imagePullPolicy\":{},\"f:name\":{},\"f:ports\":{},"
          "\"f:resources\":{}}},\"f:dnsPolicy\":{},\"f:restartPolicy\":{},\"f:schedulerName\":{}}}}"
          ","
          "{\"manager\":\"kubelet\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
          "\"2025-11-29T15:04:09Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":{"
          "\"f:conditions\":{},\"f:containerStatuses\":{},\"f:hostIP\":{},\"f:phase\":{},"
          "\"f:podIP\":{},\"f:startTime\":{}}},\"subresource\":\"status\"}]},",
          i % 3 ? "MODIFIED" : "ADDED", i, i, 200000 + i),
      "append");
  must(
      kcr_buf_appendf(
          b,
          "\"spec\":{\"volumes\":[{\"name\":\"kube-api-access-%05d\",\"projected\":{\"sources\":[{"
          "\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},{\"configMap\":"
          "{\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}},{"
          "\"downwardAPI\":{\"items\":[{\"path\":\"namespace\",\"fieldRef\":{\"apiVersion\":\"v1\","
          "\"fieldPath\":\"metadata.namespace\"}}]}}],\"defaultMode\":420}}],\"containers\":[{"
          "\"name\":\"web\",\"image\":\"registry.example.com/"
          "web:1.27.%d\",\"args\":[\"--port=8080\","
          "\"--log-level=info\"],\"ports\":[{\"name\":\"http\",\"containerPort\":8080,\"protocol\":"
          "\"TCP\"}],\"env\":[{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":"
          "\"v1\",\"fieldPath\":\"metadata.name\"}}},{\"name\":\"GREETING\",\"value\":"
          "\"h\\u00e9llo "
          "\\u0026 welcome\"}],\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"256Mi\"},"
          "\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"}},\"volumeMounts\":[{\"name\":"
          "\"kube-api-access-%05d\",\"readOnly\":true,\"mountPath\":\"/var/run/secrets/"
          "kubernetes.io/serviceaccount\"}],\"livenessProbe\":{\"httpGet\":{\"path\":\"/healthz\","
          "\"port\":8080,\"scheme\":\"HTTP\"},\"initialDelaySeconds\":3,\"timeoutSeconds\":1,"
          "\"periodSeconds\":10,\"successThreshold\":1,\"failureThreshold\":3},"
          "\"terminationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":"
          "\"File\",\"imagePullPolicy\":\"IfNotPresent\"}],\"restartPolicy\":\"Always\","
          "\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\","
          "\"serviceAccountName\""
          ":\"default\",\"serviceAccount\":\"default\",\"nodeName\":\"node-%d\","
          "\"securityContext\":"
          "{},\"schedulerName\":\"default-scheduler\",\"tolerations\":[{\"key\":\"node.kubernetes."
          "io/"
          "not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},"
          "{"
          "\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"effect\":"
          "\"NoExecute\",\"tolerationSeconds\":300}],\"priority\":0,\"enableServiceLinks\":true,"
          "\"preemptionPolicy\":\"PreemptLowerPriority\"},",
          i, i % 10, i, i % 50),
      "append");
  must(
      kcr_buf_appendf(
          b,
          "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
          "\"PodReadyToStartContainers\","
          "\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2025-11-29T15:04:"
          "07Z\""
          "},{\"type\":\"Initialized\",\"status\":\"True\",\"lastProbeTime\":null,"
          "\"lastTransitionTime\":\"2025-11-29T15:04:05Z\"},{\"type\":\"Ready\",\"status\":"
          "\"True\","
          "\"lastProbeTime\":null,\"lastTransitionTime\":\"2025-11-29T15:04:09Z\"},{\"type\":"
          "\"ContainersReady\",\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":"
          "\"2025-11-29T15:04:09Z\"},{\"type\":\"PodScheduled\",\"status\":\"True\","
          "\"lastProbeTime\":null,\"lastTransitionTime\":\"2025-11-29T15:04:05Z\"}],\"hostIP\":"
          "\"10.0.%d.%d\",\"hostIPs\":[{\"ip\":\"10.0.%d.%d\"}],\"podIP\":\"10.244.%d.%d\","
          "\"podIPs\":[{\"ip\":\"10.244.%d.%d\"}],\"startTime\":\"2025-11-29T15:04:05Z\","
          "\"containerStatuses\":[{\"name\":\"web\",\"state\":{\"running\":{\"startedAt\":"
          "\"2025-11-29T15:04:08Z\"}},\"lastState\":{},\"ready\":true,\"restartCount\":0,\"image\":"
          "\"registry.example.com/web:1.27.%d\",\"imageID\":\"registry.example.com/web@sha256:"
          "4f2d5e8a9b7c6d1e0f3a2b5c8d7e6f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e\",\"containerID\":"
          "\"containerd://%064d\",\"started\":true}],\"qosClass\":\"Burstable\"}}}\n",
          i % 50, i % 250, i % 50, i % 250, i % 200, i % 250, i % 200, i % 250, i % 10, i),
      "append");
}

typedef struct counter {
  long events;
} counter_t;

static int on_event(const kcr_watch_event *ev, void *data) {
  ((counter_t *)data)->events++;
  json_decref(ev->object);
  return 0;
}

/* run_decoder feeds the stream in chunks of chunk bytes; returns seconds. */
static double run_decoder(const char *s, size_t len, size_t chunk, long *events) {
  kcr_watch_decoder_t *dec;
  counter_t c = {0};
  double t0;

  must(kcr_watch_decoder_create(0, on_event, &c, &dec, NULL), "create");
  t0 = now_s();
  for (size_t off = 0; off < len; off += chunk)
    must(kcr_watch_decoder_feed(dec, s + off, len - off < chunk ? len - off : chunk, NULL), "feed");
  must(kcr_watch_decoder_finish(dec, NULL), "finish");
  t0 = now_s() - t0;
  kcr_watch_decoder_destroy(dec);
  *events = c.events;
  return t0;
}

/* run_loadb parses every line with bare json_loadb: jansson's own cost. */
static double run_loadb(const char *s, size_t len, long *events) {
  const char *p = s, *end = s + len;
  double t0 = now_s();
  *events = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    json_t *j = json_loadb(p, (size_t)(nl - p), 0, NULL);
    if (!j)
      must(1, "json_loadb");
    json_decref(j);
    (*events)++;
    p = nl + 1;
  }
  return now_s() - t0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void report(const char *name, const char *how, double *t, int runs, size_t len,
                   long events) {
  qsort(t, (size_t)runs, sizeof(double), cmp_double);
  printf("%-10s %-22s %8.1f MB/s  %7.0f ns/event  (min-max %.1f-%.1f MB/s, %ld events, %.1f "
         "MB)\n",
         name, how, (double)len / 1e6 / t[runs / 2], t[runs / 2] * 1e9 / (double)events,
         (double)len / 1e6 / t[runs - 1], (double)len / 1e6 / t[0], events, (double)len / 1e6);
}

int main(int argc, char **argv) {
  int runs = 7;
  const char *dir = NULL;
  struct {
    const char *name;
    void (*gen)(kcr_buf_t *, int);
    int n;
  } streams[] = {{"configmaps", gen_configmap, 20000}, {"pods", gen_pod, 5000}};

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
      dir = argv[++i];
    else {
      fprintf(stderr, "usage: %s [-n RUNS] [-w DIR]\n", argv[0]);
      return 2;
    }
  }
  if (runs < 1 || runs > 100)
    runs = 7;

  for (size_t k = 0; k < sizeof(streams) / sizeof(streams[0]); k++) {
    kcr_buf_t b;
    double t[100];
    long events = 0;

    kcr_buf_init(&b, (size_t)1 << 30);
    for (int i = 0; i < streams[k].n; i++)
      streams[k].gen(&b, i);
    if (dir) {
      char path[1024];
      FILE *f;
      snprintf(path, sizeof(path), "%s/%s.jsonl", dir, streams[k].name);
      f = fopen(path, "wb");
      if (!f || fwrite(b.data, 1, b.len, f) != b.len || fclose(f) != 0) {
        perror(path);
        return 1;
      }
    }
    printf("%s: %d events, %.0f bytes/event\n", streams[k].name, streams[k].n,
           (double)b.len / streams[k].n);
    for (int r = 0; r < runs; r++)
      t[r] = run_decoder(b.data, b.len, 16384, &events);
    report(streams[k].name, "decoder, 16 KiB chunks", t, runs, b.len, events);
    for (int r = 0; r < runs; r++)
      t[r] = run_decoder(b.data, b.len, 1024, &events);
    report(streams[k].name, "decoder, 1 KiB chunks", t, runs, b.len, events);
    for (int r = 0; r < runs; r++)
      t[r] = run_decoder(b.data, b.len, b.len, &events);
    report(streams[k].name, "decoder, one chunk", t, runs, b.len, events);
    for (int r = 0; r < runs; r++)
      t[r] = run_loadb(b.data, b.len, &events);
    report(streams[k].name, "bare json_loadb", t, runs, b.len, events);
    kcr_buf_free(&b);
  }
  return 0;
}
