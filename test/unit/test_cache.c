/* SPDX-License-Identifier: MIT */
/*
 * test_cache.c: the informer cache against the scripted HTTP server: legacy
 * discovery (/api, /apis, /api/v1), ConfigMap lists per namespace and watches
 * the test scripts. Covers get (a new object the caller owns, managedFields
 * dropped), the NotFound error's shape, lists by namespace, label selector and
 * field index, scope errors, metadata-only kinds, the default namespace, reads
 * that time out before sync, and read-your-own-writes bookkeeping (a read waits
 * for a noted write that the watch delivers late; a write never seen times out;
 * writes of kinds without an informer are not recorded), and a cache that
 * refuses reads of kinds without an informer (reader_fail_on_missing_informer).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache_internal.h"
#include "cache/reflector_internal.h"
#include "httpserver.h"
#include "kcr/apierror.h"
#include "kcr/cache.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "testutil.h"

static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};
static const kcr_gvk ns_gvk = {"", "v1", "Namespace"};
static const kcr_gvk secret_gvk = {"", "v1", "Secret"};

#define MF "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Update\"}]"
#define CM(ns, name, rv, app, color)                                                               \
  "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns "\",\"resourceVersion\":\"" rv        \
  "\",\"labels\":{\"app\":\"" app "\"}," MF "},\"data\":{\"color\":\"" color "\"}}"

static const char *cms[][2] = {
    {"a", CM("a", "one", "5", "web", "red")},
    {"a", CM("a", "two", "6", "db", "blue")},
    {"b", CM("b", "three", "7", "web", "red")},
    {"a", CM("a", "r", "10", "ryow", "green")},
};

/* The watch of the ryow test: a padded bookmark, then (one chunk later) r at 20. */
static const char watch_late_event[] =
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
    "\"metadata\":{\"name\":\"r\",\"namespace\":\"a\",\"resourceVersion\":\"20\"},"
    "\"data\":{\"color\":\"late\"}}}\n";

/* The watch of the delete test: two goes at 30. */
static const char watch_delete_event[] =
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
    "\"metadata\":{\"name\":\"two\",\"namespace\":\"a\",\"resourceVersion\":\"30\"}}}\n";

static atomic_int forbid_lists;    /* lists answer 403 */
static atomic_int late_watches;    /* watches deliver watch_late_event after 300 ms */
static atomic_int late_deletes;    /* watches deliver watch_delete_event after 300 ms */
static atomic_int watch_requests;  /* watches seen */
static atomic_int stream_mode;     /* 0: refuse streaming lists (422), 1: serve them, 2: serve
                                      them with "one" sent twice, the second newer */
static atomic_int stream_requests; /* watches with sendInitialEvents=true seen */
static atomic_int cm_lists;        /* ConfigMap LISTs seen */
static atomic_int cm_all_lists;    /* of those, cluster-wide (no namespace in the path) */

/* stream_body: the streaming list of ConfigMaps (ns "" = all), then the
 * initial-events-end bookmark. */
static void stream_body(const char *ns, char *buf, size_t size) {
  size_t off = 0;
  for (size_t i = 0; i < sizeof(cms) / sizeof(cms[0]); i++) {
    if (ns && *ns && strcmp(ns, cms[i][0]) != 0)
      continue;
    off +=
        (size_t)snprintf(buf + off, size - off, "{\"type\":\"ADDED\",\"object\":%s}\n", cms[i][1]);
  }
  if (atomic_load(&stream_mode) == 2 && (!ns || !*ns || strcmp(ns, "a") == 0))
    off += (size_t)snprintf(buf + off, size - off, "{\"type\":\"ADDED\",\"object\":%s}\n",
                            CM("a", "one", "9", "web", "again"));
  snprintf(buf + off, size - off,
           "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
           "\"metadata\":{\"resourceVersion\":\"10\",\"annotations\":{"
           "\"k8s.io/initial-events-end\":\"true\"}}}}\n");
}

static void list_body(const char *ns, char *buf, size_t size) {
  size_t off = (size_t)snprintf(buf, size,
                                "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\","
                                "\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[");
  int first = 1;
  for (size_t i = 0; i < sizeof(cms) / sizeof(cms[0]); i++) {
    if (ns && strcmp(ns, cms[i][0]) != 0)
      continue;
    off += (size_t)snprintf(buf + off, size - off, "%s%s", first ? "" : ",", cms[i][1]);
    first = 0;
  }
  snprintf(buf + off, size - off, "]}");
}

/* the Accept header of the last streaming list (the handler's threads) */
static pthread_mutex_t accept_mu = PTHREAD_MUTEX_INITIALIZER;
static char stream_accept[256];

static void note_accept(const char *headers) {
  const char *a = strcasestr(headers, "\r\nAccept:");
  pthread_mutex_lock(&accept_mu);
  stream_accept[0] = '\0';
  if (a) {
    a += strlen("\r\nAccept:");
    a += strspn(a, " ");
    snprintf(stream_accept, sizeof(stream_accept), "%.*s", (int)strcspn(a, "\r\n"), a);
  }
  pthread_mutex_unlock(&accept_mu);
}

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  static __thread char body[8192];
  const char *p = req->path;
  char ns[64] = "";
  (void)data;
  resp->status = 200;
  if (strcmp(p, "/api") == 0) {
    resp->body = "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}";
  } else if (strcmp(p, "/apis") == 0) {
    resp->body = "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[]}";
  } else if (strcmp(p, "/api/v1") == 0) {
    resp->body = "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
                 "{\"name\":\"configmaps\",\"namespaced\":true,\"kind\":\"ConfigMap\"},"
                 "{\"name\":\"secrets\",\"namespaced\":true,\"kind\":\"Secret\"},"
                 "{\"name\":\"namespaces\",\"namespaced\":false,\"kind\":\"Namespace\"}]}";
  } else if (strncmp(p, "/api/v1/namespaces?", 19) == 0 && !strstr(p, "watch=true")) {
    resp->body = "{\"kind\":\"NamespaceList\",\"apiVersion\":\"v1\",\"metadata\":{"
                 "\"resourceVersion\":\"10\"},\"items\":[{\"metadata\":{\"name\":\"a\","
                 "\"resourceVersion\":\"2\"}}]}";
  } else if (strncmp(p, "/api/v1/secrets?", 16) == 0 && !strstr(p, "watch=true")) {
    resp->status = 403;
    resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":"
                 "\"secrets is forbidden\",\"reason\":\"Forbidden\",\"code\":403}";
  } else if (strstr(p, "watch=true") && strstr(p, "sendInitialEvents=true")) {
    /* The streaming list (WatchList): refused as by a server without the
     * feature, or served for ConfigMaps. */
    atomic_fetch_add(&stream_requests, 1);
    if (!atomic_load(&stream_mode) || !strstr(p, "configmaps?")) {
      resp->status = 422;
      resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                   "\"message\":\"sendInitialEvents is forbidden for watch unless the "
                   "WatchList feature gate is enabled\",\"reason\":\"Invalid\",\"code\":422}";
      return;
    }
    if (sscanf(p, "/api/v1/namespaces/%63[^/]/configmaps?", ns) != 1)
      ns[0] = '\0';
    note_accept(req->headers);
    stream_body(ns, body, sizeof(body));
    resp->body = body;
    resp->hold_ms = 10000;
  } else if (strstr(p, "configmaps?") && !strstr(p, "watch=true")) {
    atomic_fetch_add(&cm_lists, 1);
    if (strncmp(p, "/api/v1/configmaps?", 19) == 0)
      atomic_fetch_add(&cm_all_lists, 1);
    if (atomic_load(&forbid_lists)) {
      resp->status = 403;
      resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                   "\"message\":\"configmaps is forbidden\",\"reason\":\"Forbidden\",\"code\":403}";
      return;
    }
    if (sscanf(p, "/api/v1/namespaces/%63[^/]/configmaps?", ns) != 1)
      ns[0] = '\0';
    list_body(ns[0] ? ns : NULL, body, sizeof(body));
    resp->body = body;
  } else if (strstr(p, "watch=true")) {
    /* A watch: quiet (a bookmark, then held open), or a late event. */
    int first = atomic_fetch_add(&watch_requests, 1) == 0;
    const char *late = !first                       ? NULL
                       : atomic_load(&late_deletes) ? watch_delete_event
                       : atomic_load(&late_watches) ? watch_late_event
                                                    : NULL;
    size_t n = strlen(late ? late : watch_late_event);
    int m = snprintf(body, sizeof(body),
                     "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\","
                     "\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"10\"}}}");
    memset(body + m, ' ', n - 1 - (size_t)m);
    body[n - 1] = '\n';
    if (late)
      memcpy(body + n, late, n + 1);
    else
      body[n] = '\0';
    resp->body = body;
    resp->chunk_size = n;
    resp->chunk_delay_ms = 300;
    resp->hold_ms = 10000;
  } else {
    resp->status = 404;
    resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"reason\":\"NotFound\",\"code\":404}";
  }
}

static bool fail_on_missing; /* the next setup's cache fails reads of kinds without an informer */
static bool next_json_wire;  /* the next setup's cache has json_wire */
static const char *const *next_nss; /* the next setup's default_namespaces (NULL-terminated) */

typedef struct fixture {
  kcr_test_http_t *server;
  kcr_rest_config_t *config;
  kcr_client_t *client;
  kcr_cache_t *cache;
  char dir[64];
  char kubeconfig[128];
} fixture;

static int setup_with(void **state, const char *default_ns, int64_t sync_ns, int64_t ryow_ns) {
  fixture *f = calloc(1, sizeof(*f));
  kcr_client_options opts;
  kcr_cache_options co;
  if (!f)
    return -1;
  atomic_store(&watch_requests, 0);
  snprintf(f->dir, sizeof(f->dir), "/tmp/kcr-test-cache-XXXXXX");
  if (!mkdtemp(f->dir) || kcr_test_http_start(handler, NULL, &f->server) != 0 ||
      kcr_test_kubeconfig(f->dir, kcr_test_http_port(f->server), "t", f->kubeconfig,
                          sizeof(f->kubeconfig)) != 0 ||
      kcr_rest_config_from_kubeconfig(f->kubeconfig, NULL, NULL, &f->config, NULL) != 0)
    return -1;
  memset(&opts, 0, sizeof(opts));
  opts.config = f->config;
  if (kcr_client_create(&opts, &f->client, NULL) != 0)
    return -1;
  memset(&co, 0, sizeof(co));
  co.client = f->client;
  co.default_ns = default_ns;
  co.sync_timeout_ns = sync_ns;
  co.ryow_timeout_ns = ryow_ns;
  co.reader_fail_on_missing_informer = fail_on_missing;
  co.json_wire = next_json_wire;
  co.default_namespaces = next_nss;
  while (next_nss && next_nss[co.default_namespaces_len])
    co.default_namespaces_len++;
  if (kcr_cache_create(&co, &f->cache, NULL) != 0)
    return -1;
  *state = f;
  return 0;
}

static int setup(void **state) {
  return setup_with(state, NULL, 10 * KCR_NSEC_PER_SEC, 3 * KCR_NSEC_PER_SEC);
}

static int setup_ns_a(void **state) {
  return setup_with(state, "a", 10 * KCR_NSEC_PER_SEC, 3 * KCR_NSEC_PER_SEC);
}

static int setup_short(void **state) {
  return setup_with(state, NULL, 300 * KCR_NSEC_PER_MSEC, 300 * KCR_NSEC_PER_MSEC);
}

static int setup_ryow(void **state) {
  return setup_with(state, NULL, 2 * KCR_NSEC_PER_SEC, KCR_NSEC_PER_SEC);
}

static int setup_fail_on_missing(void **state) {
  int rc;
  fail_on_missing = true;
  rc = setup(state);
  fail_on_missing = false;
  return rc;
}

/* setup_ns_set: a cache of the namespaces a and b (of the server's a and b). */
static int setup_ns_set(void **state) {
  static const char *const ab[] = {"a", "b", NULL};
  int rc;
  atomic_store(&cm_lists, 0);
  atomic_store(&cm_all_lists, 0);
  next_nss = ab;
  rc = setup(state);
  next_nss = NULL;
  return rc;
}

static int teardown(void **state) {
  fixture *f = *state;
  kcr_cache_destroy(f->cache);
  kcr_client_destroy(f->client);
  kcr_rest_config_unref(f->config);
  kcr_test_http_stop(f->server);
  unlink(f->kubeconfig);
  rmdir(f->dir);
  free(f);
  atomic_store(&forbid_lists, 0);
  atomic_store(&late_watches, 0);
  atomic_store(&late_deletes, 0);
  atomic_store(&stream_mode, 0);
  unsetenv("KUBE_FEATURE_WatchListClient");
  return 0;
}

/* setup_stream: a server that serves streaming lists of ConfigMaps. */
static int setup_stream(void **state) {
  atomic_store(&stream_mode, 1);
  atomic_store(&stream_requests, 0);
  atomic_store(&cm_lists, 0);
  return setup(state);
}

/* setup_stream_json: streaming lists, the cache with json_wire. */
static int setup_stream_json(void **state) {
  int rc;
  next_json_wire = true;
  rc = setup_stream(state);
  next_json_wire = false;
  return rc;
}

/* setup_stream_twice: streaming lists that send "one" twice. */
static int setup_stream_twice(void **state) {
  int rc = setup_stream(state);
  atomic_store(&stream_mode, 2);
  return rc;
}

/* setup_stream_off: the same server, with client-go's switch turned off. */
static int setup_stream_off(void **state) {
  setenv("KUBE_FEATURE_WatchListClient", "false", 1);
  return setup_stream(state);
}

/* names renders the sorted names of a list: "one,r,two". */
static void names(json_t *list, char *buf, size_t size) {
  const char *v[16];
  size_t n = json_array_size(kcr_list_items(list)), off = 0;
  assert_true(n <= 16);
  for (size_t i = 0; i < n; i++)
    v[i] = kcr_meta_name(json_array_get(kcr_list_items(list), i));
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
      const char *t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++)
    off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? "," : "", v[i]);
}

static void expect_list(kcr_cache_t *c, const kcr_gvk *gvk, const kcr_list_options *o,
                        const char *want) {
  json_t *list = NULL;
  kcr_error_t err;
  char got[256];
  kcr_error_clear(&err);
  if (kcr_cache_list(c, gvk, o, &list, &err) != 0)
    fail_msg("list: %s", err.message);
  names(list, got, sizeof(got));
  assert_string_equal(got, want);
  json_decref(list);
}

static int color_index(const json_t *obj, kcr_index_values_t *values, void *data) {
  const char *v = kcr_meta_path_string(obj, "data.color");
  (void)data;
  return v ? kcr_index_values_add(values, v) : 0;
}

/*
 * The cache's informers fill themselves with a streaming list by default, as
 * client-go's do: one watch, no LIST. (Before, the cache left streaming_list
 * off and every informer paged LISTs: 21 requests for 10k objects.)
 */
static void test_cache_streaming_list_default(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), 0);
  assert_string_equal(kcr_meta_resource_version(obj), "5");
  assert_null(json_object_get(kcr_meta_metadata(obj), "managedFields"));
  json_decref(obj);
  assert_true(atomic_load(&stream_requests) >= 1);
  assert_int_equal(atomic_load(&cm_lists), 0);
}

/* A built-in kind is asked for in protobuf, with JSON as the fallback, which
 * this server (JSON only) takes: the objects arrive all the same. */
static void test_cache_asks_protobuf_for_built_in_kinds(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), 0);
  assert_string_equal(kcr_meta_path_string(obj, "data.color"), "red");
  json_decref(obj);
  pthread_mutex_lock(&accept_mu);
  assert_string_equal(stream_accept, "application/vnd.kubernetes.protobuf, application/json");
  pthread_mutex_unlock(&accept_mu);
}

/* json_wire keeps JSON. */
static void test_cache_json_wire_asks_json(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), 0);
  json_decref(obj);
  pthread_mutex_lock(&accept_mu);
  assert_string_equal(stream_accept, "application/json");
  pthread_mutex_unlock(&accept_mu);
}

/* An object streamed twice before the bookmark is stored once, as its later
 * self (the FIFO's Replace takes a key's last object; no collapse is needed
 * when no deletion came). */
static void test_cache_streamed_twice_keeps_the_last(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_list_options o = {0};
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), 0);
  assert_string_equal(kcr_meta_resource_version(obj), "9");
  assert_string_equal(kcr_meta_path_string(obj, "data.color"), "again");
  json_decref(obj);
  o.ns = "a";
  expect_list(f->cache, &cm_gvk, &o, "one,r,two");
}

/* KUBE_FEATURE_WatchListClient=false: paged LISTs, no streaming attempt. */
static void test_cache_streaming_list_env_off(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), 0);
  json_decref(obj);
  assert_int_equal(atomic_load(&stream_requests), 0);
  assert_true(atomic_load(&cm_lists) >= 1);
}

static void test_cache_get(void **state) {
  fixture *f = *state;
  json_t *obj = NULL, *again = NULL;
  kcr_error_t err;

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), 0);
  assert_string_equal(kcr_meta_resource_version(obj), "5");
  assert_string_equal(kcr_meta_kind(obj), "ConfigMap");
  assert_null(json_object_get(kcr_meta_metadata(obj), "managedFields"));
  /* The caller owns it: changing it changes nothing in the cache. */
  json_object_set_new(obj, "data", json_object());
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &again, &err), 0);
  assert_string_equal(kcr_meta_path_string(again, "data.color"), "red");
  assert_int_equal(json_object_get(again, "data")->refcount, 1);
  json_decref(obj);
  json_decref(again);

  /* Cluster-scoped kinds. */
  assert_int_equal(kcr_cache_get(f->cache, &ns_gvk, NULL, "a", &obj, &err), 0);
  json_decref(obj);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &ns_gvk, "a", "a", &obj, &err), KCR_EINVAL);
  assert_null(obj);
  assert_non_null(strstr(err.message, "Namespace is cluster-scoped"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_list(f->cache, &ns_gvk, &(kcr_list_options){.ns = "a"}, &obj, &err),
                   KCR_EINVAL);
  /* A namespaced get needs a namespace. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, NULL, "one", &obj, &err), KCR_EINVAL);
  /* A kind the server does not serve. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &(kcr_gvk){"", "v1", "Nope"}, "a", "x", &obj, &err),
                   KCR_ENOENT);
}

static void test_cache_not_found(void **state) {
  fixture *f = *state;
  json_t *obj = NULL;
  kcr_error_t err;

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "nope", &obj, &err), KCR_EAPI);
  assert_null(obj);
  assert_true(kcr_error_is_not_found(&err));
  assert_int_equal(err.code, KCR_EAPI);
  assert_int_equal(err.http_status, 404);
  assert_string_equal(err.reason, "NotFound");
  assert_string_equal(err.message, "configmaps \"nope\" not found");
  /* In another namespace, the same name is a miss too. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "b", "one", &obj, &err), KCR_EAPI);
  assert_true(kcr_error_is_not_found(&err));
  /* err may be NULL. */
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "b", "one", &obj, NULL), KCR_EAPI);
}

static void test_cache_list(void **state) {
  fixture *f = *state;
  kcr_error_t err;
  json_t *list = NULL;

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_add_index(f->cache, &cm_gvk, "color", color_index, NULL, &err), 0);
  assert_int_equal(kcr_cache_add_index(f->cache, &cm_gvk, "color", color_index, NULL, &err),
                   KCR_EEXIST);
  expect_list(f->cache, &cm_gvk, NULL, "one,r,three,two");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.ns = "a"}, "one,r,two");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.ns = "b"}, "three");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.ns = "zzz"}, "");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.label_selector = "app=web"}, "one,three");
  expect_list(f->cache, &cm_gvk,
              &(kcr_list_options){.label_selector = "app in (web,db)", .ns = "a"}, "one,two");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.label_selector = "app!=web"}, "r,two");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.index = "color", .index_value = "red"},
              "one,three");
  expect_list(f->cache, &cm_gvk,
              &(kcr_list_options){.index = "color", .index_value = "red", .ns = "b"}, "three");
  expect_list(f->cache, &cm_gvk,
              &(kcr_list_options){
                  .index = "color", .index_value = "red", .ns = "a", .label_selector = "app"},
              "one");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.index = "color", .index_value = "purple"},
              "");

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_list(f->cache, &cm_gvk,
                                  &(kcr_list_options){.label_selector = "app in (x"}, &list, &err),
                   KCR_EPARSE);
  assert_null(list);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_list(f->cache, &cm_gvk,
                                  &(kcr_list_options){.index = "size", .index_value = "1"}, &list,
                                  &err),
                   KCR_EINVAL);
  assert_non_null(strstr(err.message, "no index named size"));
  /* The list is the caller's. */
  assert_int_equal(kcr_cache_list(f->cache, &cm_gvk, NULL, &list, &err), 0);
  assert_int_equal(list->refcount, 1);
  json_decref(list);
}

/* The API server's list shape, field selectors as controller-runtime's cache
 * answers them, and limit/continue. */
static void test_cache_list_shape_fields_and_pages(void **state) {
  fixture *f = *state;
  kcr_error_t err;
  json_t *list = NULL, *page = NULL;
  char token[128];
  const char *order[] = {"one", "r", "two", "three"}; /* a/one a/r a/two b/three */

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_add_index(f->cache, &cm_gvk, "data.color", color_index, NULL, &err),
                   0);
  assert_int_equal(kcr_cache_list(f->cache, &cm_gvk, NULL, &list, &err), 0);
  assert_string_equal(kcr_meta_api_version(list), "v1");
  assert_string_equal(kcr_meta_kind(list), "ConfigMapList");
  assert_true(json_is_object(kcr_meta_metadata(list)));
  assert_null(json_object_get(kcr_meta_metadata(list), "continue"));
  assert_int_equal(json_array_size(kcr_list_items(list)), 4);
  for (size_t i = 0; i < 4; i++) /* ordered by namespace/name */
    assert_string_equal(kcr_meta_name(json_array_get(kcr_list_items(list), i)), order[i]);
  json_decref(list);

  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.field_selector = "metadata.name=r"}, "r");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.field_selector = "metadata.name!=r"},
              "one,three,two");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.field_selector = "metadata.namespace==b"},
              "three");
  expect_list(f->cache, &cm_gvk,
              &(kcr_list_options){.field_selector = "metadata.namespace!=b,metadata.name!=one"},
              "r,two");
  /* An indexed field, by the index's name. */
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.field_selector = "data.color=red"},
              "one,three");
  expect_list(f->cache, &cm_gvk,
              &(kcr_list_options){.field_selector = "data.color=red,metadata.namespace=a"}, "one");
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_list(f->cache, &cm_gvk,
                                  &(kcr_list_options){.field_selector = "data.size=1"}, &list,
                                  &err),
                   KCR_EINVAL);
  assert_non_null(strstr(err.message, "no index named data.size"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_list(f->cache, &cm_gvk,
                                  &(kcr_list_options){.field_selector = "metadata.name"}, &list,
                                  &err),
                   KCR_EPARSE);
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_cache_list(f->cache, &cm_gvk,
                     &(kcr_list_options){.ns = "a", .field_selector = "metadata.namespace=b"},
                     &list, &err),
      KCR_EINVAL);

  /* Pages of two: a/one a/r, then a/two b/three, then nothing left. */
  token[0] = '\0';
  for (size_t p = 0; p < 2; p++) {
    kcr_error_clear(&err);
    assert_int_equal(kcr_cache_list(f->cache, &cm_gvk,
                                    &(kcr_list_options){.limit = 2, .continue_token = token}, &page,
                                    &err),
                     0);
    assert_int_equal(json_array_size(kcr_list_items(page)), 2);
    assert_string_equal(kcr_meta_name(json_array_get(kcr_list_items(page), 0)), order[2 * p]);
    assert_string_equal(kcr_meta_name(json_array_get(kcr_list_items(page), 1)), order[2 * p + 1]);
    if (p == 0) {
      const char *c = json_string_value(json_object_get(kcr_meta_metadata(page), "continue"));
      assert_non_null(c);
      snprintf(token, sizeof(token), "%s", c);
    } else {
      assert_null(json_object_get(kcr_meta_metadata(page), "continue"));
    }
    json_decref(page);
  }
}

static void test_cache_metadata_only(void **state) {
  fixture *f = *state;
  kcr_cache_by_object bo;
  kcr_error_t err;
  json_t *obj = NULL;
  kcr_informer_t *inf = NULL;

  memset(&bo, 0, sizeof(bo));
  bo.metadata_only = true;
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_set_by_object(f->cache, &cm_gvk, &bo, &err), 0);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "two", &obj, &err), 0);
  assert_null(json_object_get(obj, "data"));
  assert_string_equal(kcr_meta_name(obj), "two");
  assert_string_equal(kcr_meta_label(obj, "app"), "db");
  assert_string_equal(kcr_meta_kind(obj), "ConfigMap");
  assert_string_equal(kcr_meta_api_version(obj), "v1");
  assert_null(json_object_get(kcr_meta_metadata(obj), "managedFields"));
  json_decref(obj);
  /* Too late once the informer exists. */
  assert_int_equal(kcr_cache_get_informer(f->cache, &cm_gvk, &inf, &err), 0);
  assert_non_null(inf);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_set_by_object(f->cache, &cm_gvk, &bo, &err), KCR_EEXIST);
  /* A bad label selector is refused at once. */
  bo.label_selector = "a in (";
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_set_by_object(f->cache, &ns_gvk, &bo, &err), KCR_EPARSE);
}

/* kcr_cache_get_metadata_informer: the kind's informer, made metadata-only
 * (what a controller's _metadata watch gets); a kind cached whole already is
 * refused, since the cache keeps one informer per kind. */
static void test_cache_get_metadata_informer(void **state) {
  fixture *f = *state;
  kcr_informer_t *inf = NULL, *again = NULL;
  kcr_error_t err;
  json_t *obj = NULL;

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get_metadata_informer(f->cache, &cm_gvk, &inf, &err), 0);
  assert_non_null(inf);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "two", &obj, &err), 0);
  assert_null(json_object_get(obj, "data"));
  assert_string_equal(kcr_meta_kind(obj), "ConfigMap");
  assert_string_equal(kcr_meta_label(obj, "app"), "db");
  json_decref(obj);
  assert_int_equal(kcr_cache_get_metadata_informer(f->cache, &cm_gvk, &again, &err), 0);
  assert_ptr_equal(again, inf);
  /* Namespaces are cached whole first: one informer per kind. */
  assert_int_equal(kcr_cache_get_informer(f->cache, &ns_gvk, &inf, &err), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get_metadata_informer(f->cache, &ns_gvk, &again, &err), KCR_EEXIST);
  assert_null(again);
  assert_non_null(strstr(err.message, "whole objects"));
}

/* controller-runtime's resync jitter: [0.9, 1.1) of the period */
static void test_cache_jittered_period(void **state) {
  const int64_t p = INT64_C(36000) * KCR_NSEC_PER_SEC;
  (void)state;
  assert_true(kcr__cache_jittered_period(p, 0.0) == p / 10 * 9);
  assert_true(kcr__cache_jittered_period(p, 0.5) == p);
  assert_true(kcr__cache_jittered_period(p, 0.999999) < p / 10 * 11);
  assert_true(kcr__cache_jittered_period(p, 0.999999) > p / 100 * 109);
  assert_true(kcr__cache_jittered_period(0, 0.7) == 0);
  assert_true(kcr__cache_jittered_period(-5, 0.7) == -5);
}

static void test_cache_metadata_transform(void **state) {
  json_t *o = json_pack("{s:s, s:s, s:{s:s, s:[{}]}, s:{}, s:{}}", "apiVersion", "v1", "kind",
                        "Secret", "metadata", "name", "x", "managedFields", "data", "spec");
  (void)state;
  kcr__reflector_metadata_reduce(o);
  assert_int_equal(json_object_size(o), 3);
  assert_int_equal(json_object_size(json_object_get(o, "metadata")), 1);
  json_decref(o);
}

static void test_cache_default_namespace(void **state) {
  fixture *f = *state;
  kcr_error_t err;
  json_t *obj = NULL;

  expect_list(f->cache, &cm_gvk, NULL, "one,r,two");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.ns = "a"}, "one,r,two");
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "b", "three", &obj, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "namespace \"b\" is not cached"));
  /* Cluster-scoped kinds ignore the default namespace. */
  assert_int_equal(kcr_cache_get(f->cache, &ns_gvk, NULL, "a", &obj, &err), 0);
  json_decref(obj);
}

static void test_cache_sync_timeout(void **state) {
  fixture *f = *state;
  kcr_error_t err;
  json_t *obj = NULL;
  int64_t t0 = kcr_clock_now(kcr_clock_system()), dt;

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &secret_gvk, "a", "s", &obj, &err), KCR_ETIMEDOUT);
  dt = kcr_clock_now(kcr_clock_system()) - t0;
  assert_true(dt >= 250 * KCR_NSEC_PER_MSEC);
  assert_true(dt < 5 * KCR_NSEC_PER_SEC);
  assert_non_null(strstr(err.message, "Secret"));
  assert_non_null(strstr(err.message, "forbidden"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_wait_for_sync(f->cache, 200 * KCR_NSEC_PER_MSEC, &err), KCR_ETIMEDOUT);
  assert_non_null(strstr(err.message, "Secret"));
}

static void test_cache_wait_for_sync(void **state) {
  fixture *f = *state;
  kcr_error_t err;
  kcr_informer_t *inf = NULL;

  kcr_error_clear(&err);
  /* An index creates the informer stopped; waiting for sync starts it. */
  assert_int_equal(kcr_cache_add_index(f->cache, &cm_gvk, "color", color_index, NULL, &err), 0);
  assert_int_equal(kcr_cache_wait_for_sync(f->cache, 5 * KCR_NSEC_PER_SEC, &err), 0);
  assert_int_equal(kcr_cache_get_informer(f->cache, &cm_gvk, &inf, &err), 0);
  assert_true(kcr_informer_has_synced(inf));
  assert_int_equal(kcr_store_len(kcr_informer_store(inf)), 4);
}

static json_t *written(const char *ns, const char *name, const char *rv) {
  return json_pack("{s:{s:s, s:s, s:s}}", "metadata", "namespace", ns, "name", name,
                   "resourceVersion", rv);
}

static void test_cache_ryow(void **state) {
  fixture *f = *state;
  kcr_error_t err;
  json_t *obj = NULL, *w;
  kcr_informer_t *inf = NULL;
  int64_t t0, dt;

  /* No informer yet: nothing to wait for later. */
  w = written("a", "r", "15");
  kcr_cache_note_write(f->cache, &cm_gvk, w);
  json_decref(w);
  assert_int_equal(kcr__cache_pending_writes(f->cache), 0);

  atomic_store(&late_watches, 1);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get_informer(f->cache, &cm_gvk, &inf, &err), 0);
  assert_int_equal(kcr_cache_wait_for_sync(f->cache, 5 * KCR_NSEC_PER_SEC, &err), 0);
  /* The write returned 20; the watch delivers 20 about 300 ms after it opens. */
  w = written("a", "r", "20");
  kcr_cache_note_write(f->cache, &cm_gvk, w);
  json_decref(w);
  /* Noted by name, as the manager does for an answer it did not parse. */
  kcr_cache_note_write_rv(f->cache, &cm_gvk, "a", "r", "18");
  assert_int_equal(kcr__cache_pending_rv(f->cache, &cm_gvk, "a/r"), 20);
  kcr_cache_note_write_rv(f->cache, &cm_gvk, "a", "", "30"); /* no name: ignored */
  kcr_cache_note_write_rv(f->cache, &cm_gvk, "a", "r", NULL);
  assert_int_equal(kcr__cache_pending_writes(f->cache), 1);
  /* Unparseable or older versions change nothing. */
  w = written("a", "r", "x");
  kcr_cache_note_write(f->cache, &cm_gvk, w);
  json_decref(w);
  w = written("a", "r", "12");
  kcr_cache_note_write(f->cache, &cm_gvk, w);
  json_decref(w);
  assert_int_equal(kcr__cache_pending_writes(f->cache), 1);
  assert_int_equal(kcr__cache_pending_rv(f->cache, &cm_gvk, "a/r"), 20);
  /* Other objects do not wait. */
  t0 = kcr_clock_now(kcr_clock_system());
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), 0);
  json_decref(obj);
  assert_true(kcr_clock_now(kcr_clock_system()) - t0 < 800 * KCR_NSEC_PER_MSEC);
  /* The written one does, and sees 20. */
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "r", &obj, &err), 0);
  assert_string_equal(kcr_meta_resource_version(obj), "20");
  assert_string_equal(kcr_meta_path_string(obj, "data.color"), "late");
  json_decref(obj);
  assert_int_equal(kcr__cache_pending_writes(f->cache), 0);

  /* A version the watch never delivers: the read times out, the entry goes. */
  w = written("a", "one", "99");
  kcr_cache_note_write(f->cache, &cm_gvk, w);
  json_decref(w);
  t0 = kcr_clock_now(kcr_clock_system());
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), KCR_ETIMEDOUT);
  dt = kcr_clock_now(kcr_clock_system()) - t0;
  assert_true(dt >= 900 * KCR_NSEC_PER_MSEC);
  assert_non_null(strstr(err.message, "resourceVersion 99"));
  assert_int_equal(kcr__cache_pending_writes(f->cache), 0);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), 0);
  json_decref(obj);

  /* A list waits likewise, only for writes in its namespace. */
  w = written("b", "three", "98");
  kcr_cache_note_write(f->cache, &cm_gvk, w);
  json_decref(w);
  t0 = kcr_clock_now(kcr_clock_system());
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.ns = "a"}, "one,r,two");
  assert_true(kcr_clock_now(kcr_clock_system()) - t0 < 800 * KCR_NSEC_PER_MSEC);
  assert_int_equal(kcr__cache_pending_writes(f->cache), 1);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_list(f->cache, &cm_gvk, NULL, &obj, &err), KCR_ETIMEDOUT);
  assert_non_null(strstr(err.message, "b/three"));
  assert_int_equal(kcr__cache_pending_writes(f->cache), 0);
}

/*
 * A deletion the watch delivers moves a list's resourceVersion on, as
 * client-go's store takes the version of deletes too (1.36); before, the list
 * kept the version of the last add or list (10) after two went at 30.
 */
static void test_cache_list_version_after_delete(void **state) {
  fixture *f = *state;
  kcr_informer_t *inf = NULL;
  json_t *list = NULL;
  kcr_error_t err;
  char got[256] = "";

  atomic_store(&late_deletes, 1);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get_informer(f->cache, &cm_gvk, &inf, &err), 0);
  assert_int_equal(kcr_cache_wait_for_sync(f->cache, 5 * KCR_NSEC_PER_SEC, &err), 0);
  /* the watch delivers the deletion about 300 ms after it opens */
  for (int i = 0; i < 100; i++) {
    json_decref(list);
    list = NULL;
    assert_int_equal(kcr_cache_list(f->cache, &cm_gvk, NULL, &list, &err), 0);
    names(list, got, sizeof(got));
    if (strcmp(got, "one,r,three") == 0)
      break;
    usleep(50 * 1000);
  }
  assert_string_equal(got, "one,r,three");
  assert_string_equal(kcr_meta_path_string(list, "metadata.resourceVersion"), "30");
  json_decref(list);
}

static void test_cache_ryow_sweep(void **state) {
  fixture *f = *state;
  kcr_error_t err;
  kcr_informer_t *inf = NULL;
  char name[32];

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get_informer(f->cache, &cm_gvk, &inf, &err), 0);
  assert_int_equal(kcr_cache_wait_for_sync(f->cache, 5 * KCR_NSEC_PER_SEC, &err), 0);
  /* Writes at versions the informer has processed (the list was at 10) are
   * swept once the map grows, without any read. */
  for (int i = 0; i < 600; i++) {
    json_t *w;
    snprintf(name, sizeof(name), "w%d", i);
    w = written("a", name, "9");
    kcr_cache_note_write(f->cache, &cm_gvk, w);
    json_decref(w);
  }
  assert_true(kcr__cache_pending_writes(f->cache) < 256);
}

static int any_index(const json_t *obj, kcr_index_values_t *values, void *data) {
  (void)data;
  return kcr_index_values_add(values, kcr_meta_name(obj));
}

/*
 * reader_fail_on_missing_informer: a read of a kind without an informer is
 * KCR_ENOTCACHED (controller-runtime's ErrResourceNotCached), sends nothing and
 * makes no informer; once kcr_cache_get_informer or kcr_cache_add_index made
 * the kind's informer, reads of it work.
 */
static void test_cache_fail_on_missing_informer(void **state) {
  fixture *f = *state;
  kcr_informer_t *inf = NULL;
  json_t *obj = (json_t *)1, *diag;
  kcr_error_t err;
  int before = kcr_test_http_requests(f->server);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), KCR_ENOTCACHED);
  assert_null(obj);
  assert_int_equal(err.code, KCR_ENOTCACHED);
  assert_non_null(strstr(err.message, "ConfigMap (/v1, Kind=ConfigMap) is not cached"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_list(f->cache, &ns_gvk, NULL, &obj, &err), KCR_ENOTCACHED);
  assert_non_null(strstr(err.message, "Namespace (/v1, Kind=Namespace) is not cached"));
  assert_int_equal(kcr_test_http_requests(f->server), before);
  diag = kcr_cache_diagnostics(f->cache);
  assert_int_equal(json_array_size(diag), 0);
  json_decref(diag);

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get_informer(f->cache, &cm_gvk, &inf, &err), 0);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), 0);
  assert_string_equal(kcr_meta_name(obj), "one");
  json_decref(obj);
  assert_int_equal(kcr_cache_add_index(f->cache, &ns_gvk, "name", any_index, NULL, &err), 0);
  expect_list(f->cache, &ns_gvk, NULL, "a");
  /* Still nothing for the kind nobody asked for. */
  assert_int_equal(kcr_cache_get(f->cache, &secret_gvk, "a", "s", &obj, NULL), KCR_ENOTCACHED);
  diag = kcr_cache_diagnostics(f->cache);
  assert_int_equal(json_array_size(diag), 2);
  json_decref(diag);
}

typedef struct seen {
  pthread_mutex_t mu;
  int adds, in_call, overlapped;
  char names[128];
} seen_t;

static void seen_add(json_t *obj, bool initial, void *data) {
  seen_t *s = data;
  size_t off;
  (void)initial;
  pthread_mutex_lock(&s->mu);
  if (s->in_call++)
    s->overlapped = 1;
  s->adds++;
  off = strlen(s->names);
  snprintf(s->names + off, sizeof(s->names) - off, "%s%s/%s", off ? "," : "",
           kcr_meta_namespace(obj), kcr_meta_name(obj));
  pthread_mutex_unlock(&s->mu);
  usleep(2000); /* a second namespace's call, unserialised, would land here */
  pthread_mutex_lock(&s->mu);
  s->in_call--;
  pthread_mutex_unlock(&s->mu);
}

typedef struct self_remover {
  kcr_informer_t *inf;
  atomic_ulong id;
  atomic_int calls;
} self_remover_t;

static void remove_self(json_t *obj, bool initial, void *data) {
  self_remover_t *r = data;
  (void)obj;
  (void)initial;
  atomic_fetch_add(&r->calls, 1);
  while (!atomic_load(&r->id)) /* add_handler has not returned the id yet */
    usleep(1000);
  kcr_informer_remove_handler(r->inf, atomic_load(&r->id));
}

/* A handler of a namespace set that removes itself from inside its call is
 * not called again, by any namespace (as an ordinary informer's). */
static void test_cache_namespace_set_remove_inside(void **state) {
  fixture *f = *state;
  self_remover_t r = {0};
  kcr_event_handler h = {remove_self, NULL, NULL, &r};
  uint64_t id = 0;
  assert_int_equal(kcr_cache_get_informer(f->cache, &cm_gvk, &r.inf, NULL), 0);
  assert_int_equal(kcr_cache_wait_for_sync(f->cache, 10 * KCR_NSEC_PER_SEC, NULL), 0);
  assert_int_equal(kcr_informer_add_handler(r.inf, &h, &id, NULL), 0);
  atomic_store(&r.id, id);
  for (int i = 0; i < 500 && !atomic_load(&r.calls); i++)
    usleep(10000);
  usleep(200000); /* the other namespace's initial adds, were they delivered */
  assert_int_equal(atomic_load(&r.calls), 1);
  assert_false(kcr_informer_handler_has_synced(r.inf, id));
  kcr_informer_remove_handler(r.inf, id); /* from outside: drops it for good */
}

/*
 * A cache of the namespace set {a, b}: each namespace is listed on its own (no
 * cluster-wide list), a list of all merges both, a list of one reads that one,
 * a read in another namespace is controller-runtime's "unknown namespace"
 * error, a handler hears every namespace one call at a time, and the
 * cluster-scoped Namespace kind is still read whole.
 */
static void test_cache_namespace_set(void **state) {
  fixture *f = *state;
  kcr_informer_t *inf = NULL;
  kcr_informer_stats st;
  kcr_error_t err;
  json_t *obj = NULL, *list = NULL, *diag;
  seen_t seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
  kcr_event_handler h = {seen_add, NULL, NULL, &seen};
  uint64_t id = 0;

  /* An index made before the first read is on every namespace's store. */
  assert_int_equal(kcr_cache_add_index(f->cache, &cm_gvk, "color", color_index, NULL, NULL), 0);
  expect_list(f->cache, &cm_gvk, NULL, "one,r,three,two");
  assert_int_equal(atomic_load(&cm_lists), 2);
  assert_int_equal(atomic_load(&cm_all_lists), 0);
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.ns = "a"}, "one,r,two");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.ns = "b"}, "three");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.label_selector = "app=web"}, "one,three");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.field_selector = "metadata.namespace=b"},
              "three");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.index = "color", .index_value = "red"},
              "one,three");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.field_selector = "color=red"}, "one,three");
  /* Pages across the merge: a/one, a/r | a/two, b/three. */
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.limit = 2}, "one,r");
  expect_list(f->cache, &cm_gvk, &(kcr_list_options){.limit = 2, .continue_token = "a/r"},
              "three,two");
  /* The merged list is ordered by namespace/name and carries a version. */
  assert_int_equal(kcr_cache_list(f->cache, &cm_gvk, NULL, &list, NULL), 0);
  assert_string_equal(kcr_meta_namespace(json_array_get(kcr_list_items(list), 3)), "b");
  assert_string_equal(kcr_meta_path_string(list, "metadata.resourceVersion"), "10");
  json_decref(list);

  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "b", "three", &obj, &err), 0);
  assert_string_equal(kcr_meta_name(obj), "three");
  json_decref(obj);
  obj = (json_t *)1;
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "c", "x", &obj, &err), KCR_EINVAL);
  assert_null(obj);
  assert_non_null(
      strstr(err.message, "unable to get: c/x because of unknown namespace for the cache"));
  assert_non_null(strstr(err.message, "namespaces a, b"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_list(f->cache, &cm_gvk, &(kcr_list_options){.ns = "c"}, &obj, &err),
                   KCR_EINVAL);
  assert_non_null(strstr(err.message, "unable to list: c because of unknown namespace"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "nope", &obj, &err), KCR_EAPI);
  assert_true(kcr_error_is_not_found(&err));

  /* One informer for the kind, over both namespaces. */
  assert_int_equal(kcr_cache_get_informer(f->cache, &cm_gvk, &inf, NULL), 0);
  assert_null(kcr_informer_store(inf));
  assert_true(kcr_informer_has_synced(inf));
  assert_int_equal(kcr_informer_add_handler(inf, &h, &id, NULL), 0);
  for (int i = 0; i < 500 && !kcr_informer_handler_has_synced(inf, id); i++)
    usleep(10000);
  assert_true(kcr_informer_handler_has_synced(inf, id));
  pthread_mutex_lock(&seen.mu);
  assert_int_equal(seen.adds, 4);
  assert_non_null(strstr(seen.names, "b/three"));
  assert_int_equal(seen.overlapped, 0);
  pthread_mutex_unlock(&seen.mu);
  kcr_informer_get_stats(inf, &st);
  assert_int_equal(st.lists, 2);
  assert_int_equal(st.handlers, 1);
  kcr_informer_remove_handler(inf, id);
  assert_false(kcr_informer_handler_has_synced(inf, id));
  kcr_informer_get_stats(inf, &st);
  assert_int_equal(st.handlers, 0);

  /* Cluster-scoped: one cluster-wide informer, as before. */
  expect_list(f->cache, &ns_gvk, NULL, "a");
  diag = kcr_cache_diagnostics(f->cache);
  assert_int_equal(json_array_size(diag), 3); /* ConfigMap in a, in b; Namespace */
  json_decref(diag);
}

/* By-object namespaces override the default set, and bad sets are refused. */
static void test_cache_namespace_set_by_object(void **state) {
  static const char *const b_zz[] = {"b", "zz"}, *const dup[] = {"b", "b"}, *const empty[] = {""};
  fixture *f = *state;
  kcr_cache_by_object bo = {.namespaces = b_zz, .namespaces_len = 2};
  kcr_error_t err;
  json_t *obj = NULL;

  assert_int_equal(kcr_cache_set_by_object(f->cache, &cm_gvk, &bo, NULL), 0);
  expect_list(f->cache, &cm_gvk, NULL, "three");
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(f->cache, &cm_gvk, "a", "one", &obj, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "unable to get: a/one because of unknown namespace"));
  assert_non_null(strstr(err.message, "namespaces b, zz"));

  bo.namespaces = dup;
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_set_by_object(f->cache, &secret_gvk, &bo, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "namespace \"b\" is in the set twice"));
  bo.namespaces = empty;
  bo.namespaces_len = 1;
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_set_by_object(f->cache, &secret_gvk, &bo, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "namespace 1 of the set is empty"));
  bo.namespaces = b_zz;
  bo.ns = "a";
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_set_by_object(f->cache, &secret_gvk, &bo, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "both ns (\"a\") and a set of namespaces"));
  /* A namespace set on a cluster-scoped kind is ignored, as the default is. */
  bo.ns = NULL;
  assert_int_equal(kcr_cache_set_by_object(f->cache, &ns_gvk, &bo, NULL), 0);
  expect_list(f->cache, &ns_gvk, NULL, "a");
}

/* kcr_informer_create refuses a bad namespace set before any request. */
static void test_informer_namespace_set_errors(void **state) {
  static const char *const ab[] = {"a", "b"};
  fixture *f = *state;
  kcr_informer_options o;
  kcr_informer_t *inf = (kcr_informer_t *)1;
  kcr_error_t err;

  memset(&o, 0, sizeof(o));
  o.client = f->client;
  o.gvk = ns_gvk;
  o.namespaces = ab;
  o.namespaces_len = 2;
  kcr_error_clear(&err);
  assert_int_equal(kcr_informer_create(&o, &inf, &err), KCR_EINVAL);
  assert_null(inf);
  assert_non_null(strstr(err.message, "Namespace is cluster-scoped"));
  o.gvk = cm_gvk;
  o.ns = "a";
  kcr_error_clear(&err);
  assert_int_equal(kcr_informer_create(&o, &inf, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "both ns"));
  o.ns = NULL;
  assert_int_equal(kcr_informer_create(&o, &inf, NULL), 0);
  assert_null(kcr_informer_store(inf));
  kcr_informer_destroy(inf); /* never started */
}

static void test_cache_create_errors(void **state) {
  kcr_cache_t *c = (kcr_cache_t *)1;
  kcr_cache_options o;
  kcr_error_t err;
  (void)state;
  memset(&o, 0, sizeof(o));
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_create(&o, &c, &err), KCR_EINVAL);
  assert_null(c);
  kcr_cache_destroy(NULL);
  {
    static const char *const ab[] = {"a", "b"}, *const aa[] = {"a", "a"};
    static char not_a_client;
    o.client = (kcr_client_t *)(void *)&not_a_client;
    o.default_ns = "a";
    o.default_namespaces = ab;
    o.default_namespaces_len = 2;
    kcr_error_clear(&err);
    assert_int_equal(kcr_cache_create(&o, &c, &err), KCR_EINVAL);
    assert_non_null(strstr(err.message, "both default_ns"));
    o.default_ns = NULL;
    o.default_namespaces = aa;
    kcr_error_clear(&err);
    assert_int_equal(kcr_cache_create(&o, &c, &err), KCR_EINVAL);
    assert_non_null(strstr(err.message, "namespace \"a\" is in the set twice"));
    assert_null(c);
  }
}

static void test_cache_create_alloc(void **state) {
  static char not_a_client; /* create only keeps the pointer */
  kcr_cache_t *c = NULL;
  kcr_cache_options o;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.client = (kcr_client_t *)(void *)&not_a_client;
  o.default_ns = "a";
  KCR_TEST_ALLOC_LOOP(kcr_cache_create(&o, &c, NULL), (kcr_cache_destroy(c), c = NULL));
  {
    static const char *const ab[] = {"a", "b"};
    o.default_ns = NULL;
    o.default_namespaces = ab;
    o.default_namespaces_len = 2;
  }
  KCR_TEST_ALLOC_LOOP(kcr_cache_create(&o, &c, NULL), (kcr_cache_destroy(c), c = NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_create_errors),
      cmocka_unit_test(test_cache_metadata_transform),
      cmocka_unit_test(test_cache_create_alloc),
      cmocka_unit_test_setup_teardown(test_cache_get, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_streaming_list_default, setup_stream, teardown),
      cmocka_unit_test_setup_teardown(test_cache_asks_protobuf_for_built_in_kinds, setup_stream,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cache_json_wire_asks_json, setup_stream_json, teardown),
      cmocka_unit_test_setup_teardown(test_cache_streamed_twice_keeps_the_last, setup_stream_twice,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cache_streaming_list_env_off, setup_stream_off,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cache_not_found, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_list, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_list_shape_fields_and_pages, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_metadata_only, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_get_metadata_informer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_default_namespace, setup_ns_a, teardown),
      cmocka_unit_test_setup_teardown(test_cache_namespace_set, setup_ns_set, teardown),
      cmocka_unit_test_setup_teardown(test_cache_namespace_set_by_object, setup_ns_set, teardown),
      cmocka_unit_test_setup_teardown(test_cache_namespace_set_remove_inside, setup_ns_set,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_informer_namespace_set_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_sync_timeout, setup_short, teardown),
      cmocka_unit_test_setup_teardown(test_cache_wait_for_sync, setup, teardown),
      cmocka_unit_test(test_cache_jittered_period),
      cmocka_unit_test_setup_teardown(test_cache_ryow, setup_ryow, teardown),
      cmocka_unit_test_setup_teardown(test_cache_list_version_after_delete, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_ryow_sweep, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_fail_on_missing_informer, setup_fail_on_missing,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
