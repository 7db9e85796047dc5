/* SPDX-License-Identifier: MIT */
/*
 * test_informer.c: the reflector's fault handling against a scripted server: a
 * watch that ends with 410 relists and turns vanished objects into tombstone
 * deletes; a 429 on a watch backs off and resumes without relisting; a 410 on a
 * list's continue token restarts the list; a normal watch end resumes from the
 * last resource version. The diagnostics (kcr_informer_* metrics and
 * kcr_informer_diagnostics) follow what the script delivers. The informer names
 * its kind by kcr_gvk, resolved through the script's legacy discovery; the
 * REST-level form (resource and kind) and bad options are covered too.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/informer_multi_internal.h"
#include "httpserver.h"
#include "kcr/informer.h"
#include "kcr/meta.h"
#include "testutil.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvk configmap_kind = {"", "v1", "ConfigMap"};

typedef struct script {
  atomic_int lists, watches, continues, discoveries;
  atomic_int meta_lists, meta_watches; /* requests that asked for PartialObjectMetadata */
  atomic_int last_watch_meta;          /* the latest watch asked for it */
  int scenario;
  pthread_mutex_t mu;
  char watch_rvs[8][32]; /* protected by mu: resourceVersion of each watch request */
  char list_path[128];   /* protected by mu: the path of the last list */
} script_t;

/* watch_rv copies the resourceVersion the nth watch asked for. */
static const char *watch_rv(script_t *s, int n) {
  static char out[32];
  pthread_mutex_lock(&s->mu);
  snprintf(out, sizeof(out), "%s", s->watch_rvs[n]);
  pthread_mutex_unlock(&s->mu);
  return out;
}

enum {
  SC_GONE,
  SC_THROTTLE,
  SC_CONTINUE_EXPIRED,
  SC_NORMAL_END,
  SC_STREAM_REFUSED,
  SC_EVERY_TYPE,
  SC_LIST_FORBIDDEN,
  SC_GONE_UNCHANGED,
  SC_META,               /* the server speaks PartialObjectMetadata */
  SC_META_LIST_REFUSED,  /* it answers 406 to every metadata Accept header */
  SC_META_WATCH_REFUSED, /* lists as metadata, 406 to a metadata watch */
  SC_EMPTY               /* the first list holds nothing */
};

static const char list_two[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"100\"},"
    "\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"90\"}},"
    "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"resourceVersion\":\"91\"}}]}";
static const char list_empty[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"300\"},"
    "\"items\":[]}";
static const char list_one[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"200\"},"
    "\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"150\"}}]}";
/* the relist of SC_GONE_UNCHANGED: a as first listed, b gone */
static const char list_a_unchanged[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"200\"},"
    "\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"90\"}}]}";
static const char page_one[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"100\","
    "\"continue\":\"tok1\"},\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
    "\"resourceVersion\":\"90\"}}]}";
static const char gone[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"The provided "
    "continue parameter is too old\",\"reason\":\"Expired\",\"code\":410}";
static const char event_then_gone[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"c\",\"namespace\":\"ns\",\"resourceVersion\":\"101\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
    "\"Failure\",\"message\":\"too old resource version: 100 (150)\",\"reason\":\"Expired\","
    "\"code\":410}}\n";
static const char one_event[] =
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"120\"}}}\n";

/* every_type: one event of each kind, then the watch stays open. */
static const char every_type[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"d\",\"namespace\":\"ns\",\"resourceVersion\":\"101\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"d\",\"namespace\":\"ns\",\"resourceVersion\":\"102\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"d\",\"namespace\":\"ns\",\"resourceVersion\":\"103\"}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"resourceVersion\":\"104\"}}}\n";

/* The metadata-only scenarios: what a server sends as PartialObjectMetadata
 * (a list's items carry their kind) and as whole objects. */
static const char meta_list[] =
    "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{"
    "\"resourceVersion\":\"100\"},\"items\":[{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":"
    "\"meta.k8s.io/v1\",\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":"
    "\"90\",\"managedFields\":[{\"manager\":\"m\"}]}}]}";
static const char whole_list[] =
    "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"100\"},"
    "\"items\":[{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"90\"},"
    "\"data\":{\"big\":\"xxxxxxxx\"}}]}";
static const char meta_event[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":"
    "\"meta.k8s.io/v1\",\"metadata\":{\"name\":\"m\",\"namespace\":\"ns\",\"resourceVersion\":"
    "\"101\"}}}\n";
static const char whole_event[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"m\",\"namespace\":\"ns\",\"resourceVersion\":\"101\"},\"data\":{\"big\":\"x\"}}}\n";
static const char not_acceptable[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"only the "
    "following media types are accepted: application/json\",\"reason\":\"NotAcceptable\","
    "\"code\":406}";

static bool meta_scenario(const script_t *s) {
  return s->scenario == SC_META || s->scenario == SC_META_LIST_REFUSED ||
         s->scenario == SC_META_WATCH_REFUSED;
}

/* meta_handler answers the metadata-only scenarios. */
static void meta_handler(script_t *s, const kcr_test_http_request *req,
                         kcr_test_http_response *resp) {
  bool watch = strstr(req->path, "watch=true") != NULL;
  bool meta = strstr(req->headers,
                     watch ? "as=PartialObjectMetadata;" : "as=PartialObjectMetadataList;") != NULL;
  if (watch) {
    atomic_fetch_add(&s->watches, 1);
    atomic_fetch_add(&s->meta_watches, meta);
    atomic_store(&s->last_watch_meta, meta);
  } else {
    atomic_fetch_add(&s->lists, 1);
    atomic_fetch_add(&s->meta_lists, meta);
  }
  if (meta &&
      (s->scenario == SC_META_LIST_REFUSED || (watch && s->scenario == SC_META_WATCH_REFUSED))) {
    resp->status = 406;
    resp->body = not_acceptable;
    return;
  }
  if (!watch) {
    resp->body = meta ? meta_list : whole_list;
    return;
  }
  resp->body = meta ? meta_event : whole_event;
  resp->chunk_size = 1000;
  resp->hold_ms = 20000;
}

/* discovery answers the legacy discovery documents: core v1 only. */
static bool discovery(const char *path, kcr_test_http_response *resp) {
  if (strcmp(path, "/api") == 0)
    resp->body = "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}";
  else if (strcmp(path, "/apis") == 0)
    resp->body = "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[]}";
  else if (strcmp(path, "/api/v1") == 0)
    resp->body = "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
                 "{\"name\":\"configmaps\",\"namespaced\":true,\"kind\":\"ConfigMap\"},"
                 "{\"name\":\"namespaces\",\"namespaced\":false,\"kind\":\"Namespace\"}]}";
  else
    return false;
  return true;
}

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  script_t *s = data;
  if (discovery(req->path, resp)) {
    atomic_fetch_add(&s->discoveries, 1);
    return;
  }
  if (meta_scenario(s)) {
    meta_handler(s, req, resp);
    return;
  }
  if (!strstr(req->path, "watch=true")) {
    int n;
    pthread_mutex_lock(&s->mu);
    snprintf(s->list_path, sizeof(s->list_path), "%.100s", req->path);
    pthread_mutex_unlock(&s->mu);
    if (strstr(req->path, "continue=tok1")) {
      atomic_fetch_add(&s->continues, 1);
      resp->status = 410;
      resp->body = gone;
      return;
    }
    n = atomic_fetch_add(&s->lists, 1);
    if (s->scenario == SC_LIST_FORBIDDEN && n == 0) {
      resp->status = 403;
      resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                   "\"message\":\"configmaps is forbidden\",\"reason\":\"Forbidden\",\"code\":403}";
      return;
    }
    if (s->scenario == SC_CONTINUE_EXPIRED)
      resp->body = n == 0 ? page_one : list_one;
    else if (s->scenario == SC_GONE_UNCHANGED)
      resp->body = n == 0 ? list_two : list_a_unchanged;
    else if (s->scenario == SC_EMPTY)
      resp->body = list_empty;
    else
      resp->body = n == 0 ? list_two : list_one;
    return;
  }
  if (strstr(req->path, "sendInitialEvents=true")) {
    /* A server without WatchList refuses the streaming list. */
    resp->status = 422;
    resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"message\":\"sendInitialEvents is forbidden for watch unless the WatchList "
                 "feature gate is enabled\",\"reason\":\"Invalid\",\"code\":422}";
    return;
  }
  {
    int n = atomic_fetch_add(&s->watches, 1);
    const char *rv = strstr(req->path, "resourceVersion=");
    pthread_mutex_lock(&s->mu);
    if (n < 8 && rv)
      snprintf(s->watch_rvs[n], sizeof(s->watch_rvs[n]), "%.*s", (int)strcspn(rv + 16, "&"),
               rv + 16);
    pthread_mutex_unlock(&s->mu);
    if ((s->scenario == SC_GONE || s->scenario == SC_GONE_UNCHANGED) && n == 0) {
      resp->body = event_then_gone;
      resp->chunk_size = 64;
      return;
    }
    if (s->scenario == SC_THROTTLE && n == 0) {
      resp->status = 429;
      resp->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
                   "\"code\":429,\"message\":\"slow down\"}";
      return;
    }
    if (s->scenario == SC_EVERY_TYPE && n == 0) {
      resp->body = every_type;
      resp->chunk_size = 1000;
      resp->hold_ms = 20000;
      return;
    }
    if (s->scenario == SC_NORMAL_END && n == 0) {
      resp->body = one_event;
      resp->chunk_size = 1000; /* then the stream ends: the server's timeout */
      return;
    }
    /* later watches stay open with nothing to say */
    resp->body = "";
    resp->chunk_size = 1;
    resp->hold_ms = 20000;
  }
}

typedef struct seen {
  pthread_mutex_t mu;
  int adds, updates, deletes, tombstones;
  char last_tombstone[64];
} seen_t;

static void on_add(json_t *obj, bool initial, void *data) {
  seen_t *s = data;
  (void)obj;
  (void)initial;
  pthread_mutex_lock(&s->mu);
  s->adds++;
  pthread_mutex_unlock(&s->mu);
}

static void on_update(json_t *o, json_t *n, void *data) {
  seen_t *s = data;
  (void)o;
  (void)n;
  pthread_mutex_lock(&s->mu);
  s->updates++;
  pthread_mutex_unlock(&s->mu);
}

static void on_delete(json_t *obj, const char *tombstone, void *data) {
  seen_t *s = data;
  (void)obj;
  pthread_mutex_lock(&s->mu);
  s->deletes++;
  if (tombstone) {
    s->tombstones++;
    snprintf(s->last_tombstone, sizeof(s->last_tombstone), "%s", tombstone);
  }
  pthread_mutex_unlock(&s->mu);
}

typedef struct fixture {
  script_t script;
  seen_t seen;
  kcr_test_http_t *server;
  kcr_rest_config_t *config;
  kcr_client_t *client;
  kcr_metrics_registry_t *metrics;
  kcr_informer_t *inf;
  char dir[64], kubeconfig[128];
} fixture;

static fixture *start_opts(int scenario, bool streaming, bool metadata_only);

static fixture *start(int scenario) {
  return start_opts(scenario, false, false);
}

static fixture *start_with(int scenario, bool streaming) {
  return start_opts(scenario, streaming, false);
}

static fixture *start_opts(int scenario, bool streaming, bool metadata_only) {
  fixture *f = calloc(1, sizeof(*f));
  kcr_client_options co;
  kcr_informer_options io;
  kcr_event_handler h;
  assert_non_null(f);
  f->script.scenario = scenario;
  pthread_mutex_init(&f->script.mu, NULL);
  pthread_mutex_init(&f->seen.mu, NULL);
  snprintf(f->dir, sizeof(f->dir), "/tmp/kcr-test-informer-XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  assert_int_equal(kcr_test_http_start(handler, &f->script, &f->server), 0);
  assert_int_equal(kcr_test_kubeconfig(f->dir, kcr_test_http_port(f->server), "t", f->kubeconfig,
                                       sizeof(f->kubeconfig)),
                   0);
  assert_int_equal(kcr_rest_config_from_kubeconfig(f->kubeconfig, NULL, NULL, &f->config, NULL), 0);
  memset(&co, 0, sizeof(co));
  co.config = f->config;
  assert_int_equal(kcr_client_create(&co, &f->client, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&f->metrics, NULL), 0);
  memset(&io, 0, sizeof(io));
  io.metrics = f->metrics;
  io.client = f->client;
  io.gvk = configmap_kind;
  io.streaming_list = streaming;
  io.metadata_only = metadata_only;
  assert_int_equal(kcr_informer_create(&io, &f->inf, NULL), 0);
  h = (kcr_event_handler){on_add, on_update, on_delete, &f->seen};
  assert_int_equal(kcr_informer_add_handler(f->inf, &h, NULL, NULL), 0);
  assert_int_equal(kcr_informer_start(f->inf, NULL), 0);
  return f;
}

static void stop(fixture *f) {
  kcr_informer_destroy(f->inf);
  kcr_metrics_registry_destroy(f->metrics);
  kcr_client_destroy(f->client);
  kcr_rest_config_unref(f->config);
  kcr_test_http_stop(f->server);
  unlink(f->kubeconfig);
  rmdir(f->dir);
  pthread_mutex_destroy(&f->seen.mu);
  pthread_mutex_destroy(&f->script.mu);
  free(f);
}

/* wait_for polls cond (a few seconds at most: backoff is 0.8-1.6 s). */
#define WAIT_FOR(cond)                                                                             \
  do {                                                                                             \
    for (int i_ = 0; i_ < 800 && !(cond); i_++) {                                                  \
      struct timespec ts_ = {0, 10 * 1000000L};                                                    \
      nanosleep(&ts_, NULL);                                                                       \
    }                                                                                              \
    assert_true(cond);                                                                             \
  } while (0)

/* seen reads one of the handler's counters under its lock. */
static int seen(fixture *f, const int *counter) {
  int v;
  pthread_mutex_lock(&f->seen.mu);
  v = *counter;
  pthread_mutex_unlock(&f->seen.mu);
  return v;
}

static int store_has(fixture *f, const char *key) {
  return kcr_store_contains(kcr_informer_store(f->inf), key);
}

static void test_informer_gone_watch_relists_with_tombstones(void **state) {
  fixture *f = start(SC_GONE);
  kcr_informer_stats st;
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  WAIT_FOR(atomic_load(&f->script.lists) == 2 && store_has(f, "ns/a") && !store_has(f, "ns/b") &&
           !store_has(f, "ns/c"));
  assert_string_equal(watch_rv(&f->script, 0), "100");
  /* b and c vanished in the relist: deletions inferred, final state unknown.
   * Handlers run on their own thread: wait for it to catch up. */
  WAIT_FOR(seen(f, &f->seen.tombstones) == 2);
  WAIT_FOR(seen(f, &f->seen.adds) == 3); /* a, b, then c from the watch */
  WAIT_FOR(atomic_load(&f->script.watches) >= 2);
  assert_string_equal(watch_rv(&f->script, 1), "200");
  kcr_informer_get_stats(f->inf, &st);
  assert_int_equal(st.lists, 2);
  assert_true(st.watch_errors >= 1);
  assert_int_equal(st.relist_reused, 0); /* a came back at a new version */
  stop(f);
}

/* lists_counted: the lists the informer's stats count. */
static uint64_t lists_counted(fixture *f) {
  kcr_informer_stats st;
  kcr_informer_get_stats(f->inf, &st);
  return st.lists;
}

/* A relist that brings an object at the version the store holds keeps the
 * stored object (the listed copy is dropped as it arrives); the handlers see
 * the relist as for any other: an update of a, the vanished ones deleted. */
static void test_informer_relist_keeps_unchanged_objects(void **state) {
  fixture *f = start(SC_GONE_UNCHANGED);
  kcr_informer_stats st;
  json_t *a = NULL;
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  WAIT_FOR(atomic_load(&f->script.lists) == 2 && !store_has(f, "ns/b") && !store_has(f, "ns/c"));
  WAIT_FOR(seen(f, &f->seen.tombstones) == 2);
  WAIT_FOR(seen(f, &f->seen.updates) == 1);
  /* the reflector counts a list after handing it to the FIFO, so the
   * handlers can see the relist first */
  WAIT_FOR(lists_counted(f) == 2);
  kcr_informer_get_stats(f->inf, &st);
  assert_int_equal(st.relist_reused, 1);
  assert_int_equal(kcr_store_get_by_key(kcr_informer_store(f->inf), "ns/a", &a), 0);
  assert_string_equal(kcr_meta_resource_version(a), "90");
  json_decref(a);
  stop(f);
}

static void test_informer_throttled_watch_backs_off_without_relist(void **state) {
  fixture *f = start(SC_THROTTLE);
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  WAIT_FOR(atomic_load(&f->script.watches) >= 2);
  assert_int_equal(atomic_load(&f->script.lists), 1);
  assert_string_equal(watch_rv(&f->script, 1), "100"); /* resumed where it was */
  stop(f);
}

static void test_informer_expired_continue_restarts_list(void **state) {
  fixture *f = start(SC_CONTINUE_EXPIRED);
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  assert_int_equal(atomic_load(&f->script.continues), 1);
  assert_int_equal(atomic_load(&f->script.lists), 2);
  assert_true(store_has(f, "ns/a"));
  assert_int_equal(kcr_store_len(kcr_informer_store(f->inf)), 1);
  WAIT_FOR(atomic_load(&f->script.watches) >= 1);
  assert_string_equal(watch_rv(&f->script, 0), "200");
  stop(f);
}

/* reentrant: a handler that calls back into its informer. */
typedef struct reentrant {
  kcr_informer_t *inf;
  atomic_int calls;
} reentrant_t;

static void on_add_reentrant(json_t *obj, bool initial, void *data) {
  reentrant_t *r = data;
  kcr_informer_stats st;
  json_t *all = NULL;
  (void)obj;
  (void)initial;
  kcr_informer_get_stats(r->inf, &st); /* the FIFO's lock and the handler list's */
  if (kcr_store_list(kcr_informer_store(r->inf), &all) == 0) /* the store's */
    atomic_fetch_add(&r->calls, 1);
  json_decref(all);
}

/* kcr/informer.h's contract: a handler holds no informer lock, so one that
 * takes them all (stats, a store read) neither deadlocks nor waits. */
static void test_informer_handlers_hold_no_informer_lock(void **state) {
  fixture *f = start(SC_NORMAL_END);
  reentrant_t r = {f->inf, 0};
  kcr_event_handler h = {on_add_reentrant, NULL, NULL, &r};
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  assert_int_equal(kcr_informer_add_handler(f->inf, &h, NULL, NULL), 0);
  WAIT_FOR(atomic_load(&r.calls) == 2); /* both listed objects, as a late handler's adds */
  stop(f);
}

/* keeper: a handler that keeps a copy of every object it is handed. */
typedef struct keeper {
  pthread_mutex_t mu;
  json_t *seen; /* array */
} keeper_t;

static void on_add_keep(json_t *obj, bool initial, void *data) {
  keeper_t *k = data;
  (void)initial;
  pthread_mutex_lock(&k->mu);
  json_array_append_new(k->seen, json_deep_copy(obj));
  pthread_mutex_unlock(&k->mu);
}

static size_t kept(keeper_t *k) {
  size_t n;
  pthread_mutex_lock(&k->mu);
  n = json_array_size(k->seen);
  pthread_mutex_unlock(&k->mu);
  return n;
}

/* A handler registered for metadata (the controller's, kcr__informer_add_
 * handler_flags) is handed the apiVersion, kind and metadata of what a plain
 * handler gets whole, and nothing else. */
static void test_informer_metadata_handler_gets_metadata_alone(void **state) {
  fixture *f = start_opts(SC_META, false, false); /* whole objects, with data */
  keeper_t whole = {PTHREAD_MUTEX_INITIALIZER, json_array()};
  keeper_t meta = {PTHREAD_MUTEX_INITIALIZER, json_array()};
  kcr_event_handler hw = {on_add_keep, NULL, NULL, &whole};
  kcr_event_handler hm = {on_add_keep, NULL, NULL, &meta};
  size_t i;
  json_t *w;
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  WAIT_FOR(store_has(f, "ns/m"));
  assert_int_equal(kcr_informer_add_handler(f->inf, &hw, NULL, NULL), 0);
  assert_int_equal(kcr__informer_add_handler_flags(f->inf, &hm, KCR__HANDLER_METADATA, NULL, NULL),
                   0);
  WAIT_FOR(kept(&whole) == 2 && kept(&meta) == 2);
  json_array_foreach(whole.seen, i, w) {
    json_t *m = json_array_get(meta.seen, i), *want = json_object(), *v;
    const char *key;
    assert_non_null(json_object_get(w, "data"));
    json_object_foreach(w, key, v) {
      if (strcmp(key, "metadata") == 0 || strcmp(key, "kind") == 0 ||
          strcmp(key, "apiVersion") == 0)
        json_object_set(want, key, v);
    }
    assert_true(json_equal(m, want));
    assert_null(json_object_get(m, "data"));
    json_decref(want);
  }
  stop(f);
  json_decref(whole.seen);
  json_decref(meta.seen);
}

static void test_informer_normal_end_resumes_from_last_version(void **state) {
  fixture *f = start(SC_NORMAL_END);
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  WAIT_FOR(atomic_load(&f->script.watches) >= 2);
  assert_string_equal(watch_rv(&f->script, 1), "120");
  assert_int_equal(atomic_load(&f->script.lists), 1);
  WAIT_FOR(seen(f, &f->seen.updates) == 1);
  assert_int_equal(kcr_informer_wait_for_resource_version(f->inf, "120", KCR_NSEC_PER_SEC, NULL),
                   0);
  stop(f);
}

static void test_informer_refused_streaming_list_falls_back_to_paged_list(void **state) {
  fixture *f = start_with(SC_STREAM_REFUSED, true);
  kcr_informer_stats st;
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  assert_int_equal(kcr_store_len(kcr_informer_store(f->inf)), 2);
  assert_int_equal(atomic_load(&f->script.lists), 1);
  kcr_informer_get_stats(f->inf, &st);
  assert_int_equal(st.streamed_lists, 0);
  assert_int_equal(st.lists, 1);
  WAIT_FOR(atomic_load(&f->script.watches) >= 1);
  assert_string_equal(watch_rv(&f->script, 0), "100"); /* a plain watch after the list */
  stop(f);
}

/* assert_stored_metadata: key is stored as a ConfigMap (kind and apiVersion
 * restored) with nothing but metadata, and no managedFields. */
static void assert_stored_metadata(fixture *f, const char *key) {
  json_t *o = NULL;
  assert_int_equal(kcr_store_get_by_key(kcr_informer_store(f->inf), key, &o), 0);
  assert_string_equal(json_string_value(json_object_get(o, "kind")), "ConfigMap");
  assert_string_equal(json_string_value(json_object_get(o, "apiVersion")), "v1");
  assert_int_equal(json_object_size(o), 3);
  assert_null(json_object_get(json_object_get(o, "metadata"), "managedFields"));
  json_decref(o);
}

static void test_informer_metadata_only_lists_and_watches_partial_metadata(void **state) {
  fixture *f = start_opts(SC_META, false, true);
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  assert_stored_metadata(f, "ns/a");
  WAIT_FOR(store_has(f, "ns/m"));
  assert_stored_metadata(f, "ns/m");
  assert_int_equal(atomic_load(&f->script.meta_lists), 1);
  assert_int_equal(atomic_load(&f->script.meta_watches), atomic_load(&f->script.watches));
  stop(f);
}

static void test_informer_metadata_only_refused_list_falls_back(void **state) {
  fixture *f = start_opts(SC_META_LIST_REFUSED, false, true);
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  assert_stored_metadata(f, "ns/a"); /* a whole object, reduced on arrival */
  WAIT_FOR(store_has(f, "ns/m"));
  assert_stored_metadata(f, "ns/m");
  /* One refused list, then plain JSON only, without a wait. */
  assert_int_equal(atomic_load(&f->script.meta_lists), 1);
  assert_int_equal(atomic_load(&f->script.lists), 2);
  assert_int_equal(atomic_load(&f->script.meta_watches), 0);
  stop(f);
}

static void test_informer_metadata_only_refused_watch_falls_back(void **state) {
  fixture *f = start_opts(SC_META_WATCH_REFUSED, false, true);
  kcr_informer_stats st;
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  WAIT_FOR(store_has(f, "ns/m"));
  assert_stored_metadata(f, "ns/m");
  assert_int_equal(atomic_load(&f->script.meta_watches), 1);
  assert_int_equal(atomic_load(&f->script.last_watch_meta), 0);
  kcr_informer_get_stats(f->inf, &st);
  assert_int_equal(st.lists, 1); /* re-watched from the list's version, no relist */
  stop(f);
}

/* metric reads one kcr_informer_* series of the ConfigMap informer; extra is
 * the value of the type or reason label, NULL for the families without one. */
static double metric(fixture *f, const char *name, const char *extra) {
  kcr_metric_t *m = kcr_metrics_find(f->metrics, name);
  assert_non_null(m);
  return kcr_metric_value(extra ? kcr_metric_withv(m, "", "v1", "ConfigMap", extra, NULL)
                                : kcr_metric_withv(m, "", "v1", "ConfigMap", NULL));
}

/* render returns the registry's exposition (the caller frees it). */
static char *render(fixture *f) {
  kcr_buf_t b;
  char *out;
  kcr_buf_init(&b, 1 << 20);
  assert_int_equal(kcr_metrics_render(f->metrics, &b), 0);
  out = strndup(b.data, b.len);
  kcr_buf_free(&b);
  assert_non_null(out);
  return out;
}

static int handler_calls(fixture *f) {
  return seen(f, &f->seen.adds) + seen(f, &f->seen.updates) + seen(f, &f->seen.deletes);
}

/* An empty list gives the processor nothing to pop: the reflector's note
 * that it is stored must bring the store to its version by itself, not
 * leave that to the next waiter's look (a sync that took 50 ms for an empty
 * namespace). Nothing here calls has_synced or a wait, which look too. */
static uint64_t processed_rv(fixture *f) {
  kcr_informer_stats st;
  kcr_informer_get_stats(f->inf, &st);
  return st.processed_rv;
}

static void test_informer_empty_list_is_processed_without_a_waiter(void **state) {
  fixture *f = start(SC_EMPTY);
  (void)state;
  WAIT_FOR(processed_rv(f) == 300);
  assert_int_equal(handler_calls(f), 0);
  stop(f);
}

static void test_informer_metrics_count_events_by_type(void **state) {
  fixture *f = start(SC_EVERY_TYPE);
  kcr_informer_stats st;
  char *text;
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  /* a and b from the list; d added, modified, deleted by the watch */
  WAIT_FOR(handler_calls(f) == 5);
  assert_int_equal(kcr_informer_wait_for_resource_version(f->inf, "104", KCR_NSEC_PER_SEC, NULL),
                   0);
  WAIT_FOR(metric(f, "kcr_informer_handler_deliveries_total", NULL) == 5);
  assert_true(metric(f, "kcr_informer_events_total", "ADDED") == 1);
  assert_true(metric(f, "kcr_informer_events_total", "MODIFIED") == 1);
  assert_true(metric(f, "kcr_informer_events_total", "DELETED") == 1);
  assert_true(metric(f, "kcr_informer_events_total", "BOOKMARK") == 1);
  assert_true(metric(f, "kcr_informer_events_total", "ERROR") == 0);
  assert_true(metric(f, "kcr_informer_relists_total", "gone") == 0);
  assert_true(metric(f, "kcr_informer_relists_total", "error") == 0);
  /* the gauges are refreshed by a scrape */
  text = render(f);
  assert_non_null(strstr(text, "kcr_informer_last_seen_resource_version{group=\"\",version=\"v1\","
                               "kind=\"ConfigMap\"} 104\n"));
  assert_non_null(strstr(text, "kcr_informer_last_processed_resource_version{group=\"\","
                               "version=\"v1\",kind=\"ConfigMap\"} 104\n"));
  assert_non_null(strstr(text, "kcr_informer_queue_depth{group=\"\",version=\"v1\","
                               "kind=\"ConfigMap\"} 0\n"));
  assert_non_null(strstr(text, "kcr_informer_listener_backlog{group=\"\",version=\"v1\","
                               "kind=\"ConfigMap\"} 0\n"));
  assert_non_null(strstr(text, "kcr_informer_events_total{group=\"\",version=\"v1\","
                               "kind=\"ConfigMap\",type=\"BOOKMARK\"} 1\n"));
  free(text);
  assert_true(metric(f, "kcr_informer_seconds_since_last_event", NULL) >= 0);
  assert_true(metric(f, "kcr_informer_seconds_since_last_event", NULL) < 20);
  kcr_informer_get_stats(f->inf, &st);
  assert_int_equal(st.received[KCR_WATCH_ADDED - 1], 1);
  assert_int_equal(st.received[KCR_WATCH_BOOKMARK - 1], 1);
  assert_int_equal(st.last_seen_rv, 104);
  assert_int_equal(st.deliveries, 5);
  assert_int_equal(st.handlers, 1);
  /* the bookmark measured the watch-to-store lag: the store was past it soon */
  WAIT_FOR((kcr_informer_get_stats(f->inf, &st), st.watch_lag_seconds >= 0));
  assert_true(st.watch_lag_seconds < 5);
  text = render(f);
  assert_non_null(strstr(text, "kcr_informer_watch_lag_seconds{group=\"\",version=\"v1\","
                               "kind=\"ConfigMap\"} "));
  free(text);
  stop(f);
}

static void test_informer_metrics_count_a_gone_relist(void **state) {
  fixture *f = start(SC_GONE);
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  WAIT_FOR(atomic_load(&f->script.lists) == 2 && store_has(f, "ns/a") && !store_has(f, "ns/c"));
  WAIT_FOR(seen(f, &f->seen.tombstones) == 2);
  assert_true(metric(f, "kcr_informer_relists_total", "gone") == 1);
  assert_true(metric(f, "kcr_informer_relists_total", "error") == 0);
  assert_true(metric(f, "kcr_informer_events_total", "ADDED") == 1);
  assert_true(metric(f, "kcr_informer_events_total", "ERROR") == 1);
  /* adds of a, b and c, the relist's update of a, and two tombstones */
  WAIT_FOR(handler_calls(f) == 6);
  WAIT_FOR(metric(f, "kcr_informer_handler_deliveries_total", NULL) == 6);
  stop(f);
}

static void test_informer_metrics_count_a_failed_list(void **state) {
  fixture *f = start(SC_LIST_FORBIDDEN);
  (void)state;
  /* the 403 backs off (0.8-1.6 s), then the second list succeeds */
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  assert_int_equal(atomic_load(&f->script.lists), 2);
  assert_true(metric(f, "kcr_informer_relists_total", "error") == 1);
  assert_true(metric(f, "kcr_informer_relists_total", "gone") == 0);
  assert_true(metric(f, "kcr_informer_relists_total", "timeout") == 0);
  stop(f);
}

static void test_informer_diagnostics_json(void **state) {
  fixture *f = start(SC_EVERY_TYPE);
  json_t *d, *ev, *rl;
  (void)state;
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  WAIT_FOR(handler_calls(f) == 5);
  assert_int_equal(kcr_informer_wait_for_resource_version(f->inf, "104", KCR_NSEC_PER_SEC, NULL),
                   0);
  WAIT_FOR(metric(f, "kcr_informer_handler_deliveries_total", NULL) == 5);
  d = kcr_informer_diagnostics(f->inf);
  assert_non_null(d);
  assert_string_equal(json_string_value(json_object_get(d, "group")), "");
  assert_string_equal(json_string_value(json_object_get(d, "version")), "v1");
  assert_string_equal(json_string_value(json_object_get(d, "resource")), "configmaps");
  assert_string_equal(json_string_value(json_object_get(d, "kind")), "ConfigMap");
  assert_string_equal(json_string_value(json_object_get(d, "namespace")), "");
  assert_true(json_is_true(json_object_get(d, "synced")));
  ev = json_object_get(d, "events");
  assert_true(json_is_object(ev));
  assert_int_equal(json_integer_value(json_object_get(ev, "ADDED")), 1);
  assert_int_equal(json_integer_value(json_object_get(ev, "MODIFIED")), 1);
  assert_int_equal(json_integer_value(json_object_get(ev, "DELETED")), 1);
  assert_int_equal(json_integer_value(json_object_get(ev, "BOOKMARK")), 1);
  assert_int_equal(json_integer_value(json_object_get(ev, "ERROR")), 0);
  rl = json_object_get(d, "relists");
  assert_true(json_is_object(rl));
  assert_int_equal(json_object_size(rl), 4);
  assert_int_equal(json_integer_value(json_object_get(rl, "gone")), 0);
  assert_non_null(json_object_get(rl, "shard"));
  assert_int_equal(json_integer_value(json_object_get(rl, "shard")), 0);
  assert_int_equal(json_integer_value(json_object_get(d, "deliveries")), 5);
  assert_int_equal(json_integer_value(json_object_get(d, "lists")), 1);
  assert_int_equal(json_integer_value(json_object_get(d, "watches")), 1);
  assert_int_equal(json_integer_value(json_object_get(d, "watchErrors")), 0);
  assert_string_equal(json_string_value(json_object_get(d, "lastSeenResourceVersion")), "104");
  assert_string_equal(json_string_value(json_object_get(d, "lastProcessedResourceVersion")), "104");
  assert_int_equal(json_integer_value(json_object_get(d, "queueDepth")), 0);
  assert_int_equal(json_integer_value(json_object_get(d, "listenerBacklog")), 0);
  assert_int_equal(json_integer_value(json_object_get(d, "handlers")), 1);
  /* the list's a and b; d came and went */
  assert_int_equal(json_integer_value(json_object_get(d, "objects")), 2);
  assert_true(json_is_real(json_object_get(d, "secondsSinceLastEvent")));
  assert_null(json_object_get(d, "lastError"));
  json_decref(d);
  stop(f);
}

/* create_with makes (and destroys) an informer with o on f's client; its result. */
static int create_with(fixture *f, kcr_informer_options o, kcr_error_t *err) {
  kcr_informer_t *inf = NULL;
  int rc;
  o.client = f->client;
  kcr_error_clear(err);
  rc = kcr_informer_create(&o, &inf, err);
  assert_true(rc == 0 ? inf != NULL : inf == NULL);
  kcr_informer_destroy(inf);
  return rc;
}

static void test_informer_options_name_the_kind(void **state) {
  fixture *f = start(SC_NORMAL_END);
  kcr_informer_options o;
  kcr_rest_mapper_t *mapper;
  kcr_rest_mapper_stats ms;
  kcr_error_t err;
  int before;
  (void)state;
  /* The fixture's informer named its kind by gvk: the list went to its resource. */
  assert_int_equal(kcr_informer_wait_for_sync(f->inf, 5 * KCR_NSEC_PER_SEC, NULL), 0);
  pthread_mutex_lock(&f->script.mu);
  assert_int_equal(strncmp(f->script.list_path, "/api/v1/configmaps?", 19), 0);
  pthread_mutex_unlock(&f->script.mu);
  assert_true(atomic_load(&f->script.discoveries) >= 3);

  /* The REST-level form is used as given: no discovery. */
  before = atomic_load(&f->script.discoveries);
  memset(&o, 0, sizeof(o));
  o.resource = configmaps;
  o.kind = "ConfigMap";
  assert_int_equal(create_with(f, o, &err), 0);
  assert_int_equal(atomic_load(&f->script.discoveries), before);

  /* A mapper given is used (and kept): one round for two informers. */
  assert_int_equal(kcr_rest_mapper_create(f->client, &mapper, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.gvk = configmap_kind;
  o.mapper = mapper;
  o.ns = "ns";
  assert_int_equal(create_with(f, o, &err), 0);
  assert_int_equal(create_with(f, o, &err), 0);
  kcr_rest_mapper_get_stats(mapper, &ms);
  assert_int_equal(ms.discoveries, 1);

  /* Bad options are clear errors. */
  memset(&o, 0, sizeof(o));
  assert_int_equal(create_with(f, o, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "a resource or a kind (gvk)"));
  o.gvk = (kcr_gvk){"", "v1", ""};
  assert_int_equal(create_with(f, o, &err), KCR_EINVAL);
  o.gvk = (kcr_gvk){"", "v1", "Namespace"};
  o.mapper = mapper;
  o.ns = "ns";
  assert_int_equal(create_with(f, o, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "Namespace is cluster-scoped"));
  o.ns = NULL;
  assert_int_equal(create_with(f, o, &err), 0);
  o.gvk = (kcr_gvk){"it.kcr.dev", "v1", "Gadget"};
  assert_int_equal(create_with(f, o, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "Kind=Gadget"));
  memset(&o, 0, sizeof(o));
  o.resource = (kcr_gvr){"", NULL, "configmaps"};
  assert_int_equal(create_with(f, o, &err), KCR_EINVAL);
  kcr_rest_mapper_destroy(mapper);
  stop(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_informer_gone_watch_relists_with_tombstones),
      cmocka_unit_test(test_informer_throttled_watch_backs_off_without_relist),
      cmocka_unit_test(test_informer_expired_continue_restarts_list),
      cmocka_unit_test(test_informer_normal_end_resumes_from_last_version),
      cmocka_unit_test(test_informer_handlers_hold_no_informer_lock),
      cmocka_unit_test(test_informer_refused_streaming_list_falls_back_to_paged_list),
      cmocka_unit_test(test_informer_empty_list_is_processed_without_a_waiter),
      cmocka_unit_test(test_informer_metrics_count_events_by_type),
      cmocka_unit_test(test_informer_metrics_count_a_gone_relist),
      cmocka_unit_test(test_informer_metrics_count_a_failed_list),
      cmocka_unit_test(test_informer_diagnostics_json),
      cmocka_unit_test(test_informer_relist_keeps_unchanged_objects),
      cmocka_unit_test(test_informer_options_name_the_kind),
      cmocka_unit_test(test_informer_metadata_only_lists_and_watches_partial_metadata),
      cmocka_unit_test(test_informer_metadata_only_refused_list_falls_back),
      cmocka_unit_test(test_informer_metadata_handler_gets_metadata_alone),
      cmocka_unit_test(test_informer_metadata_only_refused_watch_falls_back),
  };
  return cmocka_run_group_tests_name("informer", tests, NULL, NULL);
}
