/* SPDX-License-Identifier: MIT */
/*
 * test_cache_it.c: the informer cache against the real apiserver: get and list
 * of ConfigMaps (namespace, label selector, field index), the NotFound error's
 * shape, reads that wait for a new informer's sync, scope errors, a CRD installed
 * after the cache started, a metadata-only Secret informer, and
 * read-your-own-writes under a burst of 50 updates, and a manager whose cache
 * holds a set of namespaces (two of three).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/apierror.h"
#include "kcr/cache.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/informer.h"
#include "kcr/manager.h"
#include "kcr/meta.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvr secrets = {"", "v1", "secrets"};
static const kcr_gvr namespaces_gvr = {"", "v1", "namespaces"};
static const kcr_gvr crds = {"apiextensions.k8s.io", "v1", "customresourcedefinitions"};
static const kcr_gvr widgets = {"cacheit.kcr.dev", "v1", "widgets"};
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};
static const kcr_gvk secret_gvk = {"", "v1", "Secret"};
static const kcr_gvk ns_gvk = {"", "v1", "Namespace"};
static const kcr_gvk widget_gvk = {"cacheit.kcr.dev", "v1", "Widget"};

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];

#define CHECK(call)                                                                                \
  do {                                                                                             \
    kcr_error_t e_;                                                                                \
    kcr_error_clear(&e_);                                                                          \
    int rc_ = (call);                                                                              \
    if (rc_ != 0)                                                                                  \
      fail_msg("%s: %s (%s)", #call, e_.message, kcr_err_name(rc_));                               \
  } while (0)
#define E (&e_)

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0)
    return -1;
  return kcr_it_create_namespace(client, "kcr-it-cache", ns, sizeof(ns));
}

static int group_teardown(void **state) {
  (void)state;
  kcr_client_delete(client, &crds, NULL, "widgets.cacheit.kcr.dev", NULL, NULL, NULL);
  kcr_it_disconnect(env, config, client, ns);
  return 0;
}

static kcr_cache_t *make_cache(const char *default_ns) {
  kcr_cache_options o;
  kcr_cache_t *c = NULL;
  memset(&o, 0, sizeof(o));
  o.client = client;
  o.default_ns = default_ns;
  o.sync_timeout_ns = 60 * KCR_NSEC_PER_SEC;
  CHECK(kcr_cache_create(&o, &c, E));
  return c;
}

static void create_cm(const char *name, const char *app, const char *color) {
  json_t *o =
      json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                "metadata", "name", name, "labels", "app", app, "data", "color", color);
  CHECK(kcr_client_create_object(client, &configmaps, ns, o, NULL, NULL, E));
  json_decref(o);
}

static int color_index(const json_t *obj, kcr_index_values_t *values, void *data) {
  const char *v = kcr_meta_path_string(obj, "data.color");
  (void)data;
  return v ? kcr_index_values_add(values, v) : 0;
}

/* count_list lists through the cache and returns how many objects came back. */
static size_t count_list(kcr_cache_t *c, const kcr_list_options *o) {
  json_t *list = NULL;
  size_t n;
  CHECK(kcr_cache_list(c, &cm_gvk, o, &list, E));
  n = json_array_size(kcr_list_items(list));
  json_decref(list);
  return n;
}

static void test_cache_it_configmaps(void **state) {
  kcr_cache_t *c;
  json_t *obj = NULL;
  kcr_error_t err;
  int seen = 0;
  (void)state;

  create_cm("web-1", "web", "red");
  create_cm("web-2", "web", "blue");
  create_cm("db-1", "db", "red");
  c = make_cache(NULL);
  CHECK(kcr_cache_add_index(c, &cm_gvk, "color", color_index, NULL, E));

  /* The first read creates the informer and waits for its sync. */
  CHECK(kcr_cache_get(c, &cm_gvk, ns, "web-1", &obj, E));
  assert_string_equal(kcr_meta_path_string(obj, "data.color"), "red");
  assert_null(json_object_get(kcr_meta_metadata(obj), "managedFields"));
  json_object_set_new(obj, "data", json_object()); /* ours to change */
  json_decref(obj);
  CHECK(kcr_cache_get(c, &cm_gvk, ns, "web-1", &obj, E));
  assert_string_equal(kcr_meta_path_string(obj, "data.color"), "red");
  json_decref(obj);

  /* NotFound, as the API server words it. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(c, &cm_gvk, ns, "nope", &obj, &err), KCR_EAPI);
  assert_true(kcr_error_is_not_found(&err));
  assert_int_equal(err.http_status, 404);
  assert_string_equal(err.reason, "NotFound");
  assert_string_equal(err.message, "configmaps \"nope\" not found");
  {
    /* The real server's answer for comparison. */
    kcr_error_t real;
    kcr_error_clear(&real);
    assert_int_equal(kcr_client_get(client, &configmaps, ns, "nope", NULL, &obj, &real), KCR_EAPI);
    assert_string_equal(real.message, err.message);
    assert_string_equal(real.reason, err.reason);
    assert_int_equal(real.http_status, err.http_status);
  }

  /* Lists: namespace (kube-root-ca.crt is there too), label selector, field index. */
  assert_int_equal(count_list(c, &(kcr_list_options){.ns = ns, .label_selector = "app"}), 3);
  assert_int_equal(count_list(c, &(kcr_list_options){.ns = ns, .label_selector = "app=web"}), 2);
  assert_int_equal(
      count_list(c, &(kcr_list_options){.ns = ns, .label_selector = "app,app notin (web)"}), 1);
  assert_int_equal(
      count_list(c, &(kcr_list_options){.ns = ns, .index = "color", .index_value = "red"}), 2);
  assert_int_equal(
      count_list(c, &(kcr_list_options){.ns = "default", .index = "color", .index_value = "red"}),
      0);
  assert_true(count_list(c, &(kcr_list_options){.index = "color", .index_value = "red"}) >= 2);
  assert_true(count_list(c, NULL) >= 4);

  /* A new object shows up. */
  create_cm("web-3", "web", "red");
  for (int i = 0; i < 100 && !seen; i++) {
    kcr_error_clear(&err);
    if (kcr_cache_get(c, &cm_gvk, ns, "web-3", &obj, &err) == 0) {
      seen = 1;
      json_decref(obj);
    } else {
      assert_true(kcr_error_is_not_found(&err));
      kcr_it_sleep_ms(50);
    }
  }
  assert_true(seen);
  assert_int_equal(
      count_list(c, &(kcr_list_options){.ns = ns, .index = "color", .index_value = "red"}), 3);
  {
    /* No transform of the user's: watch lines are scanned, never trees. */
    kcr_informer_t *inf = NULL;
    kcr_informer_stats st;
    CHECK(kcr_cache_get_informer(c, &cm_gvk, &inf, E));
    kcr_informer_get_stats(inf, &st);
    assert_true(st.scanned >= 1);
    assert_int_equal(st.scanned, st.received[KCR_WATCH_ADDED - 1] +
                                     st.received[KCR_WATCH_MODIFIED - 1] +
                                     st.received[KCR_WATCH_DELETED - 1]);
  }

  /* Scope errors. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(c, &ns_gvk, ns, ns, &obj, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "cluster-scoped"));
  CHECK(kcr_cache_get(c, &ns_gvk, NULL, ns, &obj, E));
  json_decref(obj);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(c, &(kcr_gvk){"", "v1", "NoSuchKind"}, ns, "x", &obj, &err),
                   KCR_ENOENT);
  CHECK(kcr_cache_wait_for_sync(c, 10 * KCR_NSEC_PER_SEC, E));
  kcr_cache_destroy(c);
}

static void test_cache_it_default_namespace(void **state) {
  kcr_cache_t *c = make_cache(ns);
  json_t *obj = NULL;
  kcr_error_t err;
  (void)state;
  create_cm("scoped", "scoped", "green");
  CHECK(kcr_cache_get(c, &cm_gvk, ns, "scoped", &obj, E));
  json_decref(obj);
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_cache_get(c, &cm_gvk, "kube-system", "extension-apiserver-authentication", &obj, &err),
      KCR_EINVAL);
  assert_non_null(strstr(err.message, "not cached"));
  /* Everything cached is in ns. */
  {
    json_t *list = NULL, *item;
    size_t i;
    CHECK(kcr_cache_list(c, &cm_gvk, NULL, &list, E));
    assert_true(json_array_size(kcr_list_items(list)) >= 1);
    json_array_foreach(kcr_list_items(list), i, item)
        assert_string_equal(kcr_meta_namespace(item), ns);
    json_decref(list);
  }
  kcr_cache_destroy(c);
}

static void test_cache_it_metadata_only_secrets(void **state) {
  kcr_cache_t *c = make_cache(NULL);
  kcr_cache_by_object bo;
  json_t *s, *obj = NULL;
  (void)state;
  s = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
                "metadata", "name", "meta", "labels", "tier", "secret", "stringData", "password",
                "hunter2");
  CHECK(kcr_client_create_object(client, &secrets, ns, s, NULL, NULL, E));
  json_decref(s);
  memset(&bo, 0, sizeof(bo));
  bo.metadata_only = true;
  bo.ns = ns;
  CHECK(kcr_cache_set_by_object(c, &secret_gvk, &bo, E));
  CHECK(kcr_cache_get(c, &secret_gvk, ns, "meta", &obj, E));
  assert_null(json_object_get(obj, "data"));
  assert_null(json_object_get(obj, "type"));
  assert_null(json_object_get(kcr_meta_metadata(obj), "managedFields"));
  assert_string_equal(kcr_meta_kind(obj), "Secret");
  assert_string_equal(kcr_meta_api_version(obj), "v1");
  assert_string_equal(kcr_meta_label(obj, "tier"), "secret");
  assert_true(kcr_meta_uid(obj)[0] != '\0');
  json_decref(obj);
  {
    json_t *list = NULL, *item;
    size_t i;
    CHECK(kcr_cache_list(c, &secret_gvk, &(kcr_list_options){.label_selector = "tier"}, &list, E));
    assert_int_equal(json_array_size(kcr_list_items(list)), 1);
    json_array_foreach(kcr_list_items(list), i, item) assert_int_equal(json_object_size(item), 3);
    json_decref(list);
  }
  {
    /* Metadata only is a transform: every line becomes a tree and is cut. */
    kcr_informer_t *inf = NULL;
    kcr_informer_stats st;
    CHECK(kcr_cache_get_informer(c, &secret_gvk, &inf, E));
    kcr_informer_get_stats(inf, &st);
    assert_int_equal(st.scanned, 0);
  }
  kcr_cache_destroy(c);
}

static const char widget_crd[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.cacheit.kcr.dev\"},\"spec\":{\"group\":\"cacheit.kcr.dev\","
    "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\","
    "\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},\"versions\":[{\"name\":\"v1\","
    "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
    "\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":"
    "\"integer\"}}}}}}}]}}";

static void test_cache_it_crd_after_start(void **state) {
  kcr_cache_t *c = make_cache(NULL);
  json_t *crd, *w, *obj = NULL, *list = NULL;
  kcr_error_t err;
  int rc = -1;
  (void)state;

  /* The cache already discovered (ConfigMap); the kind is unknown for now. */
  CHECK(kcr_cache_wait_for_sync(c, KCR_NSEC_PER_SEC, E));
  CHECK(kcr_cache_list(c, &cm_gvk, &(kcr_list_options){.ns = ns}, &list, E));
  json_decref(list);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(c, &widget_gvk, ns, "w1", &obj, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "Widget"));

  crd = json_loads(widget_crd, 0, NULL);
  assert_non_null(crd);
  CHECK(kcr_client_create_object(client, &crds, NULL, crd, NULL, NULL, E));
  json_decref(crd);
  w = json_pack("{s:s, s:s, s:{s:s}, s:{s:i}}", "apiVersion", "cacheit.kcr.dev/v1", "kind",
                "Widget", "metadata", "name", "w1", "spec", "size", 3);
  for (int i = 0; i < 80; i++) {
    kcr_error_clear(&err);
    if (kcr_client_create_object(client, &widgets, ns, w, NULL, NULL, &err) == 0)
      break;
    kcr_it_sleep_ms(250);
  }
  assert_int_equal(err.code, 0);
  json_decref(w);
  /* The lazy mapper finds it (rediscovering at most once a second). */
  for (int i = 0; i < 40 && rc != 0; i++) {
    kcr_error_clear(&err);
    rc = kcr_cache_get(c, &widget_gvk, ns, "w1", &obj, &err);
    if (rc != 0) {
      assert_int_equal(rc, KCR_ENOENT);
      kcr_it_sleep_ms(250);
    }
  }
  if (rc != 0)
    fail_msg("Widget never readable: %s", err.message);
  assert_int_equal(json_integer_value(kcr_meta_path(obj, "spec.size")), 3);
  assert_string_equal(kcr_meta_kind(obj), "Widget");
  json_decref(obj);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(c, &widget_gvk, ns, "w2", &obj, &err), KCR_EAPI);
  assert_string_equal(err.message, "widgets.cacheit.kcr.dev \"w2\" not found");
  CHECK(kcr_cache_list(c, &widget_gvk, NULL, &list, E));
  assert_int_equal(json_array_size(kcr_list_items(list)), 1);
  json_decref(list);
  kcr_cache_destroy(c);
}

static void test_cache_it_read_your_own_writes(void **state) {
  kcr_cache_t *c = make_cache(NULL);
  json_t *obj = NULL;
  unsigned long long prev = 0;
  (void)state;

  create_cm("ryow", "ryow", "v0");
  CHECK(kcr_cache_get(c, &cm_gvk, ns, "ryow", &obj, E));
  json_decref(obj);
  for (int i = 1; i <= 50; i++) {
    char patch[64], want[16];
    json_t *out = NULL, *cached = NULL, *list = NULL, *item;
    unsigned long long wrote, got;
    size_t k;
    snprintf(patch, sizeof(patch), "{\"data\":{\"color\":\"v%d\"}}", i);
    snprintf(want, sizeof(want), "v%d", i);
    CHECK(kcr_client_patch(client, &configmaps, ns, "ryow", KCR_PATCH_MERGE, patch, strlen(patch),
                           NULL, &out, E));
    kcr_cache_note_write(c, &cm_gvk, out);
    wrote = strtoull(kcr_meta_resource_version(out), NULL, 10);
    assert_true(wrote > prev);
    prev = wrote;
    json_decref(out);
    /* Never an older version than the write returned. */
    CHECK(kcr_cache_get(c, &cm_gvk, ns, "ryow", &cached, E));
    got = strtoull(kcr_meta_resource_version(cached), NULL, 10);
    if (got < wrote)
      fail_msg("update %d: cache has %llu, write returned %llu", i, got, wrote);
    assert_string_equal(kcr_meta_path_string(cached, "data.color"), want);
    json_decref(cached);
    /* Every other update, a list reads it right after the write instead. */
    if (i % 2 == 0) {
      snprintf(patch, sizeof(patch), "{\"data\":{\"color\":\"l%d\"}}", i);
      snprintf(want, sizeof(want), "l%d", i);
      CHECK(kcr_client_patch(client, &configmaps, ns, "ryow", KCR_PATCH_MERGE, patch, strlen(patch),
                             NULL, &out, E));
      kcr_cache_note_write(c, &cm_gvk, out);
      json_decref(out);
      CHECK(kcr_cache_list(c, &cm_gvk, &(kcr_list_options){.ns = ns, .label_selector = "app=ryow"},
                           &list, E));
      assert_int_equal(json_array_size(kcr_list_items(list)), 1);
      json_array_foreach(kcr_list_items(list), k, item)
          assert_string_equal(kcr_meta_path_string(item, "data.color"), want);
      json_decref(list);
    }
  }
  kcr_cache_destroy(c);
}

static void create_cm_in(const char *where, const char *name) {
  json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                        "metadata", "name", name, "data", "where", where);
  CHECK(kcr_client_create_object(client, &configmaps, where, o, NULL, NULL, E));
  json_decref(o);
}

typedef struct heard {
  pthread_mutex_t mu;
  char want[64]; /* the namespace of the ConfigMap waited for */
  int live;      /* adds of "new" in want after the initial list */
  int initial;   /* initial adds */
} heard_t;

static void heard_add(json_t *obj, bool initial, void *data) {
  heard_t *h = data;
  pthread_mutex_lock(&h->mu);
  if (initial)
    h->initial++;
  else if (strcmp(kcr_meta_name(obj), "new") == 0 && strcmp(kcr_meta_namespace(obj), h->want) == 0)
    h->live++;
  pthread_mutex_unlock(&h->mu);
}

/* has_name tells whether a List holds an object named name in namespace where. */
static bool has_name(json_t *list, const char *where, const char *name) {
  json_t *item;
  size_t i;
  json_array_foreach(kcr_list_items(list), i, item) {
    if (strcmp(kcr_meta_name(item), name) == 0 && strcmp(kcr_meta_namespace(item), where) == 0)
      return true;
  }
  return false;
}

/*
 * A manager caching namespaces {a, b} of three with ConfigMaps in all: a list
 * of all returns a's and b's only, a get in c is the clear error, a new
 * ConfigMap in b reaches an event handler, and the cluster-scoped Namespace
 * kind is still listed whole.
 */
static void test_cache_it_namespace_set(void **state) {
  char a[64], b[64], c3[64];
  const char *set[2];
  kcr_manager_options mo;
  kcr_manager_t *m = NULL;
  const kcr_objclient *mc;
  kcr_informer_t *inf = NULL;
  heard_t heard = {.mu = PTHREAD_MUTEX_INITIALIZER};
  kcr_event_handler h = {heard_add, NULL, NULL, &heard};
  json_t *list = NULL, *obj = NULL, *item;
  kcr_error_t err;
  size_t i;
  (void)state;

  assert_int_equal(kcr_it_create_namespace(client, "kcr-it-nsa", a, sizeof(a)), 0);
  assert_int_equal(kcr_it_create_namespace(client, "kcr-it-nsb", b, sizeof(b)), 0);
  assert_int_equal(kcr_it_create_namespace(client, "kcr-it-nsc", c3, sizeof(c3)), 0);
  create_cm_in(a, "in-a");
  create_cm_in(b, "in-b");
  create_cm_in(c3, "in-c");
  set[0] = a;
  set[1] = b;
  memset(&mo, 0, sizeof(mo));
  mo.config = config;
  mo.no_signal_handlers = true;
  mo.cache_sync_timeout_ns = 60 * KCR_NSEC_PER_SEC;
  mo.default_namespaces = set;
  mo.default_namespaces_len = 2;
  CHECK(kcr_manager_create(&mo, &m, E));
  mc = kcr_manager_client(m);

  CHECK(kcr_objclient_list(mc, &cm_gvk, NULL, &list, E));
  assert_true(has_name(list, a, "in-a"));
  assert_true(has_name(list, b, "in-b"));
  assert_false(has_name(list, c3, "in-c"));
  json_array_foreach(kcr_list_items(list), i, item) {
    const char *where = kcr_meta_namespace(item);
    if (strcmp(where, a) != 0 && strcmp(where, b) != 0)
      fail_msg("list of all: %s/%s is outside the set", where, kcr_meta_name(item));
  }
  json_decref(list);
  CHECK(kcr_objclient_list(mc, &cm_gvk, &(kcr_list_options){.ns = b}, &list, E));
  assert_true(has_name(list, b, "in-b"));
  assert_false(has_name(list, a, "in-a"));
  json_decref(list);

  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_get(mc, &cm_gvk, c3, "in-c", &obj, &err), KCR_EINVAL);
  assert_null(obj);
  if (!strstr(err.message, "because of unknown namespace for the cache"))
    fail_msg("get in c: %s", err.message);
  CHECK(kcr_objclient_get(mc, &cm_gvk, a, "in-a", &obj, E));
  json_decref(obj);

  /* A new ConfigMap in b reaches a handler of the kind's one informer. */
  snprintf(heard.want, sizeof(heard.want), "%s", b);
  CHECK(kcr_manager_get_informer(m, &cm_gvk, &inf, E));
  CHECK(kcr_informer_add_handler(inf, &h, NULL, E));
  create_cm_in(b, "new");
  for (int t = 0; t < 300; t++) {
    int live;
    pthread_mutex_lock(&heard.mu);
    live = heard.live;
    pthread_mutex_unlock(&heard.mu);
    if (live)
      break;
    kcr_it_sleep_ms(100);
  }
  pthread_mutex_lock(&heard.mu);
  assert_int_equal(heard.live, 1);
  assert_true(heard.initial >= 2); /* in-a, in-b (and each namespace's kube-root-ca.crt) */
  pthread_mutex_unlock(&heard.mu);

  /* Cluster-scoped: every namespace, the one outside the set included. */
  CHECK(kcr_objclient_list(mc, &ns_gvk, NULL, &list, E));
  assert_true(has_name(list, "", a));
  assert_true(has_name(list, "", c3));
  assert_true(has_name(list, "", "default"));
  json_decref(list);

  kcr_manager_destroy(m);
  kcr_client_delete(client, &namespaces_gvr, NULL, a, NULL, NULL, NULL);
  kcr_client_delete(client, &namespaces_gvr, NULL, b, NULL, NULL, NULL);
  kcr_client_delete(client, &namespaces_gvr, NULL, c3, NULL, NULL, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_it_configmaps),
      cmocka_unit_test(test_cache_it_default_namespace),
      cmocka_unit_test(test_cache_it_metadata_only_secrets),
      cmocka_unit_test(test_cache_it_crd_after_start),
      cmocka_unit_test(test_cache_it_read_your_own_writes),
      cmocka_unit_test(test_cache_it_namespace_set),
  };
  return cmocka_run_group_tests_name("cache_it", tests, group_setup, group_teardown);
}
