/* SPDX-License-Identifier: MIT */
/*
 * test_informer_it.c: the shared informer against the real apiserver: 5k
 * ConfigMaps listed (paged) and delivered as the initial list; a churn of 10k
 * creates, updates and deletes from 8 threads after which the cache equals a
 * fresh LIST exactly; read-your-own-writes under a burst of updates; a handler
 * added late gets the existing objects; a missing kind's sync error names it.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
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
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/informer.h"
#include "kcr/meta.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvk configmap_kind = {"", "v1", "ConfigMap"};

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0)
    return -1;
  return kcr_it_create_namespace(client, "kcr-it-informer", ns, sizeof(ns));
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_disconnect(env, config, client, ns);
  return 0;
}

/* ---- parallel writers ---- */

typedef struct writer {
  int id, nthreads, count;
  int op; /* 0: create, 1: churn */
  atomic_int *failures;
} writer_t;

static json_t *cm(const char *name, int v) {
  char val[32];
  snprintf(val, sizeof(val), "%d", v);
  return json_pack(
      "{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
      "metadata", "name", name, "labels", "it", "informer", "data", "v", val, "payload",
      "................................................................................"
      "................................................................................");
}

static void *write_main(void *arg) {
  writer_t *w = arg;
  char name[64];
  for (int i = w->id; i < w->count; i += w->nthreads) {
    kcr_error_t err;
    json_t *obj;
    int rc = 0;
    kcr_error_clear(&err);
    if (w->op == 0) {
      snprintf(name, sizeof(name), "cm-%05d", i);
      obj = cm(name, 0);
      rc = kcr_client_create_object(client, &configmaps, ns, obj, NULL, NULL, &err);
      json_decref(obj);
    } else {
      /* churn: i % 3 picks create of a new name, update of an old one, or delete */
      int kind = i % 3;
      if (kind == 0) {
        snprintf(name, sizeof(name), "churn-%05d", i);
        obj = cm(name, i);
        rc = kcr_client_create_object(client, &configmaps, ns, obj, NULL, NULL, &err);
        json_decref(obj);
      } else if (kind == 1) {
        char patch[64];
        snprintf(name, sizeof(name), "cm-%05d", i % 5000);
        snprintf(patch, sizeof(patch), "{\"data\":{\"v\":\"%d\"}}", i);
        rc = kcr_client_patch(client, &configmaps, ns, name, KCR_PATCH_MERGE, patch, strlen(patch),
                              NULL, NULL, &err);
        if (rc == KCR_EAPI && kcr_error_is_not_found(&err))
          rc = 0; /* deleted by an earlier op */
      } else {
        snprintf(name, sizeof(name), "cm-%05d", (i * 7) % 5000);
        rc = kcr_client_delete(client, &configmaps, ns, name, NULL, NULL, &err);
        if (rc == KCR_EAPI && kcr_error_is_not_found(&err))
          rc = 0;
      }
    }
    if (rc) {
      atomic_fetch_add(w->failures, 1);
      fprintf(stderr, "write %d: %s\n", i, err.message);
    }
  }
  return NULL;
}

static void run_writers(int op, int count) {
  enum { T = 8 };
  writer_t w[T];
  pthread_t th[T];
  atomic_int failures = 0;
  for (int i = 0; i < T; i++) {
    w[i] = (writer_t){i, T, count, op, &failures};
    pthread_create(&th[i], NULL, write_main, &w[i]);
  }
  for (int i = 0; i < T; i++)
    pthread_join(th[i], NULL);
  assert_int_equal(atomic_load(&failures), 0);
}

/* ---- handlers ---- */

typedef struct counts {
  atomic_int adds, initial_adds, updates, deletes;
} counts_t;

static void on_add(json_t *obj, bool initial, void *data) {
  counts_t *c = data;
  (void)obj;
  atomic_fetch_add(&c->adds, 1);
  if (initial)
    atomic_fetch_add(&c->initial_adds, 1);
}

static void on_update(json_t *o, json_t *n, void *data) {
  counts_t *c = data;
  (void)o;
  (void)n;
  atomic_fetch_add(&c->updates, 1);
}

static void on_delete(json_t *obj, const char *tombstone, void *data) {
  counts_t *c = data;
  (void)obj;
  (void)tombstone;
  atomic_fetch_add(&c->deletes, 1);
}

static uint64_t last_handler; /* the handler make_informer registered */

/* wait_handler_synced waits (bounded) until a handler has handled the first list. */
static void wait_handler_synced(kcr_informer_t *inf, uint64_t id) {
  for (int i = 0; i < 6000 && !kcr_informer_handler_has_synced(inf, id); i++)
    kcr_it_sleep_ms(10);
  assert_true(kcr_informer_handler_has_synced(inf, id));
}

static kcr_informer_t *make_informer(counts_t *c) {
  kcr_informer_options o;
  kcr_event_handler h = {on_add, on_update, on_delete, c};
  kcr_informer_t *inf;
  kcr_error_t err;
  memset(&o, 0, sizeof(o));
  o.client = client;
  o.gvk = configmap_kind; /* resolved through a discovery round of its own */
  o.ns = ns;
  o.label_selector = "it=informer";
  kcr_error_clear(&err);
  if (kcr_informer_create(&o, &inf, &err) != 0)
    fail_msg("informer: %s", err.message);
  if (c && kcr_informer_add_handler(inf, &h, &last_handler, &err) != 0)
    fail_msg("handler: %s", err.message);
  return inf;
}

/* cache_matches_list compares keys and resource versions with a fresh LIST. */
static int cache_matches_list(kcr_informer_t *inf, char *why, size_t why_size) {
  kcr_request_options o;
  json_t *list = NULL, *item;
  kcr_error_t err;
  size_t i, n;
  memset(&o, 0, sizeof(o));
  o.label_selector = "it=informer";
  kcr_error_clear(&err);
  if (kcr_client_list(client, &configmaps, ns, &o, &list, &err) != 0) {
    snprintf(why, why_size, "list: %.200s", err.message);
    return 0;
  }
  n = json_array_size(json_object_get(list, "items"));
  if (n != kcr_store_len(kcr_informer_store(inf))) {
    snprintf(why, why_size, "list has %zu, cache %zu", n, kcr_store_len(kcr_informer_store(inf)));
    json_decref(list);
    return 0;
  }
  json_array_foreach(json_object_get(list, "items"), i, item) {
    char key[600];
    json_t *cached = NULL;
    snprintf(key, sizeof(key), "%s/%s", ns, kcr_meta_name(item));
    if (kcr_store_get_by_key(kcr_informer_store(inf), key, &cached) != 0 ||
        strcmp(kcr_meta_resource_version(cached), kcr_meta_resource_version(item)) != 0) {
      snprintf(why, why_size, "%.100s differs (cache %.30s, list %.30s)", key,
               cached ? kcr_meta_resource_version(cached) : "missing",
               kcr_meta_resource_version(item));
      json_decref(cached);
      json_decref(list);
      return 0;
    }
    json_decref(cached);
  }
  json_decref(list);
  return 1;
}

static void test_informer_syncs_5k_then_converges_after_10k_churn(void **state) {
  counts_t c = {0};
  kcr_informer_t *inf;
  kcr_informer_stats st;
  kcr_error_t err;
  char why[256] = "";
  int ok = 0;
  (void)state;

  run_writers(0, 5000);
  inf = make_informer(&c);
  kcr_error_clear(&err);
  assert_int_equal(kcr_informer_start(inf, &err), 0);
  if (kcr_informer_wait_for_sync(inf, 60 * KCR_NSEC_PER_SEC, &err) != 0)
    fail_msg("sync: %s", err.message);
  assert_int_equal(kcr_store_len(kcr_informer_store(inf)), 5000);
  wait_handler_synced(inf, last_handler); /* handlers run on their own thread */
  assert_int_equal(atomic_load(&c.initial_adds), 5000);
  kcr_informer_get_stats(inf, &st);
  assert_int_equal(st.lists, 1);
  {
    /* managedFields were dropped by the default transform */
    json_t *one = NULL;
    char key[128];
    snprintf(key, sizeof(key), "%s/cm-00042", ns);
    assert_int_equal(kcr_store_get_by_key(kcr_informer_store(inf), key, &one), 0);
    assert_null(json_object_get(json_object_get(one, "metadata"), "managedFields"));
    assert_string_equal(json_string_value(json_object_get(one, "kind")), "ConfigMap");
    json_decref(one);
  }

  run_writers(1, 10000);
  for (int i = 0; i < 120 && !ok; i++) {
    ok = cache_matches_list(inf, why, sizeof(why));
    if (!ok)
      kcr_it_sleep_ms(500);
  }
  if (!ok)
    fail_msg("cache never matched a fresh list: %s", why);
  kcr_informer_get_stats(inf, &st);
  assert_int_equal(st.lists, 1); /* no relist was needed */
  assert_true(atomic_load(&c.updates) > 0 && atomic_load(&c.deletes) > 0);
  assert_true(atomic_load(&c.adds) > 5000);
  kcr_informer_destroy(inf);
}

static void test_informer_read_your_own_writes(void **state) {
  kcr_informer_t *inf = make_informer(NULL);
  json_t *obj = cm("ryow", 0), *out = NULL;
  kcr_error_t err;
  char key[128];
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(kcr_informer_start(inf, &err), 0);
  assert_int_equal(kcr_informer_wait_for_sync(inf, 60 * KCR_NSEC_PER_SEC, &err), 0);
  assert_int_equal(kcr_client_create_object(client, &configmaps, ns, obj, NULL, NULL, &err), 0);
  snprintf(key, sizeof(key), "%s/ryow", ns);
  for (int i = 1; i <= 50; i++) {
    char patch[64];
    json_t *cached = NULL;
    const char *rv;
    snprintf(patch, sizeof(patch), "{\"data\":{\"v\":\"%d\"}}", i);
    kcr_error_clear(&err);
    if (kcr_client_patch(client, &configmaps, ns, "ryow", KCR_PATCH_MERGE, patch, strlen(patch),
                         NULL, &out, &err) != 0)
      fail_msg("patch: %s", err.message);
    rv = kcr_meta_resource_version(out);
    if (kcr_informer_wait_for_resource_version(inf, rv, 10 * KCR_NSEC_PER_SEC, &err) != 0)
      fail_msg("wait for %s: %s", rv, err.message);
    /* The cache now has this write (or a later one): never an older version. */
    assert_int_equal(kcr_store_get_by_key(kcr_informer_store(inf), key, &cached), 0);
    assert_true(strtoull(kcr_meta_resource_version(cached), NULL, 10) >= strtoull(rv, NULL, 10));
    assert_int_equal(
        strtol(json_string_value(json_object_get(json_object_get(cached, "data"), "v")), NULL, 10),
        i);
    json_decref(cached);
    json_decref(out);
  }
  assert_int_equal(kcr_informer_wait_for_resource_version(inf, "abc", KCR_NSEC_PER_SEC, NULL),
                   KCR_EINVAL);
  json_decref(obj);
  kcr_informer_destroy(inf);
}

static void test_informer_late_handler_gets_existing_objects(void **state) {
  counts_t c = {0};
  kcr_informer_t *inf = make_informer(NULL);
  kcr_event_handler h = {on_add, on_update, on_delete, &c};
  kcr_error_t err;
  uint64_t id = 0;
  size_t have;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(kcr_informer_start(inf, &err), 0);
  assert_int_equal(kcr_informer_wait_for_sync(inf, 60 * KCR_NSEC_PER_SEC, &err), 0);
  have = kcr_store_len(kcr_informer_store(inf));
  assert_true(have > 0);
  assert_int_equal(kcr_informer_add_handler(inf, &h, &id, &err), 0);
  wait_handler_synced(inf, id);
  assert_int_equal(atomic_load(&c.initial_adds), (int)have);
  kcr_informer_destroy(inf);
}

static void test_informer_sync_error_names_the_kind(void **state) {
  kcr_informer_options o;
  kcr_informer_t *inf;
  kcr_error_t err;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.client = client;
  /* By kind, the mapper says at once that the server does not serve it. */
  o.gvk = (kcr_gvk){"nothere.kcr.dev", "v1", "Ghost"};
  kcr_error_clear(&err);
  assert_int_equal(kcr_informer_create(&o, &inf, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "Kind=Ghost"));
  /* By resource (the REST-level form), it is found out when the list fails. */
  o.resource = (kcr_gvr){"nothere.kcr.dev", "v1", "ghosts"};
  o.kind = "Ghost";
  kcr_error_clear(&err);
  assert_int_equal(kcr_informer_create(&o, &inf, &err), 0);
  assert_int_equal(kcr_informer_start(inf, &err), 0);
  assert_int_equal(kcr_informer_wait_for_sync(inf, 2 * KCR_NSEC_PER_SEC, &err), KCR_ETIMEDOUT);
  assert_non_null(strstr(err.message, "Ghost"));
  assert_non_null(strstr(err.message, "CRD not installed"));
  assert_non_null(strstr(err.message, "last error"));
  kcr_informer_destroy(inf);
}

static void test_informer_streaming_list(void **state) {
  counts_t c = {0};
  kcr_informer_options o;
  kcr_event_handler h = {on_add, on_update, on_delete, &c};
  kcr_informer_t *inf;
  kcr_informer_stats st;
  kcr_error_t err;
  char why[256] = "";
  json_t *obj;
  int ok = 0;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.client = client;
  o.gvk = configmap_kind;
  o.ns = ns;
  o.label_selector = "it=informer";
  o.streaming_list = true;
  kcr_error_clear(&err);
  assert_int_equal(kcr_informer_create(&o, &inf, &err), 0);
  assert_int_equal(kcr_informer_add_handler(inf, &h, &last_handler, &err), 0);
  assert_int_equal(kcr_informer_start(inf, &err), 0);
  if (kcr_informer_wait_for_sync(inf, 60 * KCR_NSEC_PER_SEC, &err) != 0)
    fail_msg("sync: %s", err.message);
  wait_handler_synced(inf, last_handler);
  kcr_informer_get_stats(inf, &st);
  /* The state came from the watch's initial events, not from a list. */
  assert_int_equal(st.streamed_lists, 1);
  assert_int_equal(st.lists, 1);
  assert_true(cache_matches_list(inf, why, sizeof(why)));
  assert_int_equal(atomic_load(&c.initial_adds), (int)kcr_store_len(kcr_informer_store(inf)));
  /* The same watch goes on delivering changes. */
  obj = cm("streamed-later", 1);
  assert_int_equal(kcr_client_create_object(client, &configmaps, ns, obj, NULL, NULL, &err), 0);
  json_decref(obj);
  for (int i = 0; i < 100 && !ok; i++) {
    ok = cache_matches_list(inf, why, sizeof(why));
    if (!ok)
      kcr_it_sleep_ms(100);
  }
  if (!ok)
    fail_msg("cache never matched a fresh list: %s", why);
  kcr_informer_get_stats(inf, &st);
  assert_int_equal(st.watches, 1);
  kcr_informer_destroy(inf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_informer_syncs_5k_then_converges_after_10k_churn),
      cmocka_unit_test(test_informer_read_your_own_writes),
      cmocka_unit_test(test_informer_late_handler_gets_existing_objects),
      cmocka_unit_test(test_informer_sync_error_names_the_kind),
      cmocka_unit_test(test_informer_streaming_list),
  };
  return cmocka_run_group_tests_name("informer_it", tests, group_setup, group_teardown);
}
