/* SPDX-License-Identifier: MIT */
/*
 * store_bench.c: memory per cached object and the cost of reads, for the compact
 * store against keeping parsed jansson trees (what the store was designed
 * against; docs/cache.md has the decision, bench/results/notes-20261201.txt
 * the figures).
 *
 * For N ConfigMaps with 1 KiB of data and N Pod-like objects (~4.5 KB on the
 * wire, 1.7 KB of it managedFields), each generated, passed through the default
 * transform (managedFields dropped) and stored, it reports:
 *   - wire bytes (compact JSON as the API server sends it, managedFields included)
 *   - heap bytes per object (glibc mallinfo2 in-use delta: payload plus malloc
 *     overhead) and the RSS delta, for: the compact store; parsed trees after the
 *     transform (a jansson object of trees, like a Go map of pointers); parsed
 *     trees without the transform;
 *   - get ns/op (parse of one object), ByIndex ns/op and ns/object (namespace
 *     index, N/100 objects per namespace), add/update ns/op, foreach ns/object,
 *     and json_deep_copy ns/op of a tree (the price of the deep copy a tree-keeping
 *     cache pays per read to give readers their own object).
 *
 * Not built or run by the test suite. Build and run with bench/store/run.sh.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "kcr/meta.h"
#include "kcr/store.h"

#define NAMESPACES 100

static char *pod_template;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static size_t heap_in_use(void) {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

static long rss_bytes(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    fclose(f);
  }
  return resident * 4096;
}

static json_t *gen_configmap(int i) {
  char data[1024 + 1];
  json_t *cm, *d = json_object();
  for (int k = 0; k < 8; k++) {
    char key[16];
    memset(data, 'a' + (i + k) % 26, 128);
    data[128] = '\0';
    snprintf(key, sizeof(key), "key-%d", k);
    json_object_set_new(d, key, json_string(data));
  }
  cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:s, s:s, s:s, "
                 "s:s, s:{s:{s:{}, s:{}, s:{}, s:{}, s:{}, s:{}, s:{}, s:{}}}}]}, s:o}",
                 "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", "cm", "namespace",
                 "ns", "uid", "5f0c7e2a-9b1d-4c3e-8a6f-000000000000", "resourceVersion", "1",
                 "creationTimestamp", "2024-05-01T10:00:00Z", "labels", "app", "web", "team",
                 "platform", "managedFields", "manager", "kubectl-client-side-apply", "operation",
                 "Update", "apiVersion", "v1", "time", "2024-05-01T10:00:00Z", "fieldsType",
                 "FieldsV1", "fieldsV1", "f:data", "f:key-0", "f:key-1", "f:key-2", "f:key-3",
                 "f:key-4", "f:key-5", "f:key-6", "f:key-7", "data", d);
  {
    char name[32], ns[16], uid[40], rv[16];
    json_t *md = json_object_get(cm, "metadata");
    snprintf(name, sizeof(name), "config-%06d", i);
    snprintf(ns, sizeof(ns), "team-%03d", i % NAMESPACES);
    snprintf(uid, sizeof(uid), "5f0c7e2a-9b1d-4c3e-8a6f-%012d", i);
    snprintf(rv, sizeof(rv), "%d", 1000 + i);
    json_object_set_new(md, "name", json_string(name));
    json_object_set_new(md, "namespace", json_string(ns));
    json_object_set_new(md, "uid", json_string(uid));
    json_object_set_new(md, "resourceVersion", json_string(rv));
  }
  return cm;
}

static json_t *gen_pod(int i) {
  char buf[8192];
  json_error_t e;
  json_t *o;
  snprintf(buf, sizeof(buf), pod_template, i, i % NAMESPACES, i, 1000 + i, i % 50);
  o = json_loads(buf, 0, &e);
  if (!o) {
    fprintf(stderr, "pod template: %s at %d\n", e.text, e.position);
    exit(1);
  }
  return o;
}

typedef json_t *(*gen_fn)(int i);

static size_t wire_size(const json_t *o) {
  return json_dumpb(o, NULL, 0, JSON_COMPACT);
}

/* measure_store fills a store with n objects and reports memory per object. */
static kcr_store_t *measure_store(gen_fn gen, int n, double *heap_per, double *rss_per,
                                  double *stored_json) {
  size_t h0, h1, json_total = 0;
  long r0, r1;
  kcr_store_t *s = NULL;
  malloc_trim(0);
  h0 = heap_in_use();
  r0 = rss_bytes();
  kcr_store_create(NULL, NULL, &s, NULL);
  for (int i = 0; i < n; i++) {
    json_t *o = gen(i);
    kcr_meta_strip_managed_fields(o);
    json_total += wire_size(o);
    if (kcr_store_add(s, o, NULL) != 0) {
      fprintf(stderr, "add failed\n");
      exit(1);
    }
    json_decref(o);
  }
  h1 = heap_in_use();
  r1 = rss_bytes();
  *heap_per = (double)(h1 - h0) / n;
  *rss_per = (double)(r1 - r0) / n;
  *stored_json = (double)json_total / n;
  return s;
}

/* measure_trees keeps n parsed trees in a jansson object keyed by ns/name. */
static json_t *measure_trees(gen_fn gen, int n, int strip, double *heap_per, double *rss_per) {
  size_t h0, h1;
  long r0, r1;
  json_t *map;
  malloc_trim(0);
  h0 = heap_in_use();
  r0 = rss_bytes();
  map = json_object();
  for (int i = 0; i < n; i++) {
    char key[KCR_META_KEY_MAX];
    json_t *o = gen(i);
    if (strip)
      kcr_meta_strip_managed_fields(o);
    kcr_meta_key(o, key, sizeof(key));
    json_object_set_new(map, key, o);
  }
  h1 = heap_in_use();
  r1 = rss_bytes();
  *heap_per = (double)(h1 - h0) / n;
  *rss_per = (double)(r1 - r0) / n;
  return map;
}

static int count_cb(const char *key, const char *json, size_t len, void *data) {
  (void)key;
  (void)json;
  *(size_t *)data += len;
  return 0;
}

static void run(const char *kind, gen_fn gen, int n) {
  double wire = 0, heap_store, rss_store, stored, heap_tree, rss_tree, heap_full, rss_full;
  double t0, t1;
  kcr_store_t *s;
  json_t *trees, *full;
  int ops;
  size_t bytes = 0;

  for (int i = 0; i < 100; i++) {
    json_t *o = gen(i);
    wire += (double)wire_size(o);
    json_decref(o);
  }
  wire /= 100;

  s = measure_store(gen, n, &heap_store, &rss_store, &stored);
  trees = measure_trees(gen, n, 1, &heap_tree, &rss_tree);
  json_decref(trees);
  full = measure_trees(gen, n, 0, &heap_full, &rss_full);
  json_decref(full);
  trees = measure_trees(gen, 1000, 1, &heap_tree, &rss_tree);

  printf("%s, N=%d\n", kind, n);
  printf("  wire size (managedFields included)      %8.0f B\n", wire);
  printf("  stored compact JSON (managedFields gone) %8.0f B\n", stored);
  printf("  compact store: heap per object           %8.0f B  (%.2fx wire)  RSS %8.0f B\n",
         heap_store, heap_store / wire, rss_store);
  printf("  jansson trees, transformed: heap/object  %8.0f B  (%.2fx wire)  RSS %8.0f B\n",
         heap_tree, heap_tree / wire, rss_tree);
  printf("  jansson trees, untransformed             %8.0f B  (%.2fx wire)  RSS %8.0f B\n",
         heap_full, heap_full / wire, rss_full);

  /* get: parse one object (random keys). */
  ops = 20000;
  t0 = now_ns();
  for (int i = 0; i < ops; i++) {
    char key[64];
    json_t *o = NULL;
    int k = (int)(((unsigned)i * 2654435761u) % (unsigned)n);
    snprintf(key, sizeof(key), "team-%03d/%s-%06d", k % NAMESPACES,
             kind[0] == 'C' ? "config" : "web-7d4b9c8f6d", k);
    if (kind[0] != 'C')
      snprintf(key, sizeof(key), "team-%03d/web-7d4b9c8f6d-%05d", k % NAMESPACES, k);
    if (kcr_store_get_by_key(s, key, &o) != 0) {
      fprintf(stderr, "get %s failed\n", key);
      exit(1);
    }
    json_decref(o);
  }
  t1 = now_ns();
  printf("  get (parse)                              %8.0f ns/op\n", (t1 - t0) / ops);

  /* deep copy of a tree: what a tree-keeping cache pays to hand out a copy. */
  {
    const char *k;
    json_t *v, *one = NULL;
    json_object_foreach(trees, k, v) {
      one = v;
      break;
    }
    t0 = now_ns();
    for (int i = 0; i < ops; i++)
      json_decref(json_deep_copy(one));
    t1 = now_ns();
    printf("  json_deep_copy of a tree (comparison)    %8.0f ns/op\n", (t1 - t0) / ops);
  }
  json_decref(trees);

  /* ByIndex on the namespace index: n / 100 objects per call. */
  ops = 200;
  t0 = now_ns();
  for (int i = 0; i < ops; i++) {
    char ns[16];
    json_t *arr = NULL;
    snprintf(ns, sizeof(ns), "team-%03d", i % NAMESPACES);
    kcr_store_by_index(s, KCR_STORE_INDEX_NAMESPACE, ns, &arr);
    json_decref(arr);
  }
  t1 = now_ns();
  printf("  ByIndex(namespace), %d objects/call     %8.0f ns/op  %6.0f ns/object\n", n / NAMESPACES,
         (t1 - t0) / ops, (t1 - t0) / ops / (n / NAMESPACES));

  /* IndexKeys: keys only, no parsing. */
  t0 = now_ns();
  for (int i = 0; i < ops; i++) {
    char ns[16], **keys = NULL;
    snprintf(ns, sizeof(ns), "team-%03d", i % NAMESPACES);
    kcr_store_index_keys(s, KCR_STORE_INDEX_NAMESPACE, ns, &keys, NULL);
    free(keys);
  }
  t1 = now_ns();
  printf("  IndexKeys(namespace)                     %8.0f ns/op\n", (t1 - t0) / ops);

  /* foreach: scan the stored text without parsing. */
  t0 = now_ns();
  kcr_store_foreach(s, count_cb, &bytes);
  t1 = now_ns();
  printf("  foreach                                  %8.1f ns/object\n", (t1 - t0) / n);

  /* update: serialise + re-index an existing key (client-go BenchmarkIndexer's add). */
  {
    json_t *objs[64];
    for (int i = 0; i < 64; i++) {
      objs[i] = gen(i * 7);
      kcr_meta_strip_managed_fields(objs[i]);
    }
    ops = 20000;
    t0 = now_ns();
    for (int i = 0; i < ops; i++)
      kcr_store_update(s, objs[i % 64], NULL);
    t1 = now_ns();
    for (int i = 0; i < 64; i++)
      json_decref(objs[i]);
    printf("  update (serialise + index)               %8.0f ns/op\n", (t1 - t0) / ops);
  }
  kcr_store_destroy(s);
  printf("\n");
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  long n;
  char *buf;
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n)
    exit(1);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10000;
  const char *tmpl = argc > 2 ? argv[2] : "bench/store/pod.json";
  pod_template = read_file(tmpl);
  printf("jansson %s, glibc malloc; heap = mallinfo2 in-use delta\n\n", JANSSON_VERSION);
  run("ConfigMap (1 KiB data)", gen_configmap, n);
  run("Pod", gen_pod, n);
  free(pod_template);
  return 0;
}
