/* SPDX-License-Identifier: MIT */
/*
 * test_cache_metadata_it.c: metadata-only caching over the wire (issue 25),
 * against a real kube-apiserver of its own (--watch-cache=false, so that a
 * watch from a compacted version reaches etcd and gets its 410). Every client
 * here goes through a kcr_faultproxy, which counts the bytes the server sends.
 *   - a metadata-only cache of 10 KiB ConfigMaps receives a fraction of the
 *     bytes a whole-object cache of the same objects receives (both measured
 *     here, one after the other), and reads them as ConfigMaps with metadata
 *     only (the kind and apiVersion are the ConfigMap's, as before);
 *   - it sees an add, an update and a delete, through a handler and the store;
 *   - cut off while objects change and etcd compacts, its re-watch gets 410,
 *     it relists (paged and streamed) and converges to a fresh LIST.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#include "kcr/meta.h"
#include "kcr_faultproxy.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

#define OBJECTS 40
#define DATA_BYTES ((size_t)10 * 1024)

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};

static kcr_it_proxied it; /* a cluster of the test's own behind a fault proxy */

#define WAIT_FOR(cond, seconds, what)                                                              \
  do {                                                                                             \
    int ok_ = 0;                                                                                   \
    for (int i_ = 0; i_ < (seconds)*10 && !(ok_ = (cond)); i_++)                                   \
      kcr_it_sleep_ms(100);                                                                        \
    if (!ok_)                                                                                      \
      fail_msg("timed out waiting for %s", what);                                                  \
  } while (0)

/* put_cm applies ConfigMap name (label meta=yes) with DATA_BYTES of data that
 * gzip cannot shrink much, seeded by seed, so that list bodies stay large. */
static void put_cm(const char *name, unsigned seed) {
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  char *data = malloc(DATA_BYTES + 1);
  uint64_t x = 0x9e3779b97f4a7c15ULL ^ seed;
  kcr_request_options o;
  kcr_error_t err;
  json_t *cm;
  assert_non_null(data);
  for (size_t i = 0; i < DATA_BYTES; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    data[i] = alphabet[(x >> 33) % (sizeof(alphabet) - 1)];
  }
  data[DATA_BYTES] = '\0';
  cm = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                 "metadata", "name", name, "labels", "meta", "yes", "data", "payload", data);
  free(data);
  memset(&o, 0, sizeof(o));
  o.field_manager = "metadata-test";
  o.force = 1;
  kcr_error_clear(&err);
  if (kcr_client_apply(it.direct, &configmaps, "default", cm, &o, NULL, &err) != 0)
    fail_msg("apply %s: %s", name, err.message);
  json_decref(cm);
}

static void del_cm(const char *name) {
  if (kcr_it_delete(it.direct, &configmaps, "default", name) != 0)
    fail_msg("delete %s", name);
}

static int group_setup(void **state) {
  (void)state;
  return kcr_it_proxied_start(&it);
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_proxied_stop(&it);
  return 0;
}

/* new_cache makes a cache on the proxied client of the labelled ConfigMaps in
 * default, metadata-only or not, and its informer, synced. */
static kcr_cache_t *new_cache(bool metadata_only, kcr_informer_t **inf) {
  kcr_cache_options co;
  kcr_cache_by_object bo;
  kcr_cache_t *c = NULL;
  kcr_error_t err;
  memset(&co, 0, sizeof(co));
  co.client = it.proxied;
  memset(&bo, 0, sizeof(bo));
  bo.ns = "default";
  bo.label_selector = "meta=yes";
  bo.metadata_only = metadata_only;
  kcr_error_clear(&err);
  if (kcr_cache_create(&co, &c, &err) != 0 || kcr_cache_set_by_object(c, &cm_gvk, &bo, &err) != 0 ||
      kcr_cache_get_informer(c, &cm_gvk, inf, &err) != 0 ||
      kcr_informer_wait_for_sync(*inf, 60 * KCR_NSEC_PER_SEC, &err) != 0)
    fail_msg("cache: %s", err.message);
  return c;
}

/* synced_bytes: what the server sent for one cache to sync, alone on the proxy. */
static unsigned long long synced_bytes(bool metadata_only) {
  unsigned long long before = kcr_faultproxy_bytes_down(it.proxy);
  kcr_informer_t *inf = NULL;
  kcr_cache_t *c = new_cache(metadata_only, &inf);
  unsigned long long got = kcr_faultproxy_bytes_down(it.proxy) - before;
  assert_int_equal(kcr_store_len(kcr_informer_store(inf)), OBJECTS);
  kcr_cache_destroy(c);
  return got;
}

/* assert_metadata_form: obj is a ConfigMap reduced to its metadata. */
static void assert_metadata_form(const json_t *obj) {
  const json_t *md = json_object_get(obj, "metadata");
  assert_string_equal(json_string_value(json_object_get(obj, "apiVersion")), "v1");
  assert_string_equal(json_string_value(json_object_get(obj, "kind")), "ConfigMap");
  assert_null(json_object_get(obj, "data"));
  assert_int_equal(json_object_size(obj), 3);
  assert_non_null(kcr_meta_name(obj));
  assert_non_null(kcr_meta_resource_version(obj));
  assert_null(json_object_get(md, "managedFields"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(md, "labels"), "meta")),
                      "yes");
}

static void test_cache_metadata_only_receives_a_fraction_of_the_bytes(void **state) {
  unsigned long long full, meta;
  char name[32];
  kcr_informer_t *inf = NULL;
  kcr_cache_t *c;
  kcr_error_t err;
  json_t *obj = NULL, *list = NULL, *item;
  size_t i;
  (void)state;
  for (int k = 0; k < OBJECTS; k++) {
    snprintf(name, sizeof(name), "meta-%02d", k);
    put_cm(name, (unsigned)k);
  }
  /* The same objects, whole and then metadata-only, one cache at a time. */
  full = synced_bytes(false);
  meta = synced_bytes(true);
  print_message("bytes from the server to sync %d ConfigMaps of %zu B: whole %llu, "
                "metadata-only %llu (%.3f)\n",
                OBJECTS, DATA_BYTES, full, meta, (double)meta / (double)full);
  /* Each object is ~10.5 KiB whole and ~0.3 KiB as metadata; trimmed on
   * arrival, both would cross the network whole. */
  assert_true(meta * 4 < full);

  c = new_cache(true, &inf);
  kcr_error_clear(&err);
  assert_int_equal(kcr_cache_get(c, &cm_gvk, "default", "meta-07", &obj, &err), 0);
  assert_metadata_form(obj);
  json_decref(obj);
  assert_int_equal(kcr_cache_list(c, &cm_gvk, &(kcr_list_options){.ns = "default"}, &list, &err),
                   0);
  assert_int_equal(json_array_size(json_object_get(list, "items")), OBJECTS);
  json_array_foreach(json_object_get(list, "items"), i, item) assert_metadata_form(item);
  json_decref(list);
  kcr_cache_destroy(c);
}

/* Events one handler saw. */
typedef struct {
  atomic_int adds, updates, deletes;
  atomic_int bad; /* an object not in metadata form */
} seen_t;

static int metadata_form(const json_t *obj) {
  const char *k = json_string_value(json_object_get(obj, "kind"));
  const char *av = json_string_value(json_object_get(obj, "apiVersion"));
  return k && av && strcmp(k, "ConfigMap") == 0 && strcmp(av, "v1") == 0 &&
         !json_object_get(obj, "data") &&
         !json_object_get(json_object_get(obj, "metadata"), "managedFields");
}

static void on_add(json_t *obj, bool initial, void *data) {
  seen_t *s = data;
  if (!initial && strcmp(kcr_meta_name(obj), "meta-new") == 0)
    atomic_fetch_add(&s->adds, 1);
  if (!metadata_form(obj))
    atomic_fetch_add(&s->bad, 1);
}

static void on_update(json_t *old_obj, json_t *new_obj, void *data) {
  seen_t *s = data;
  const char *v = kcr_meta_label(new_obj, "step");
  if (strcmp(kcr_meta_name(new_obj), "meta-new") == 0 && v && strcmp(v, "2") == 0)
    atomic_fetch_add(&s->updates, 1);
  if (!metadata_form(old_obj) || !metadata_form(new_obj))
    atomic_fetch_add(&s->bad, 1);
}

static void on_delete(json_t *obj, const char *tombstone_key, void *data) {
  seen_t *s = data;
  (void)tombstone_key;
  if (obj && strcmp(kcr_meta_name(obj), "meta-new") == 0)
    atomic_fetch_add(&s->deletes, 1);
  if (obj && !metadata_form(obj))
    atomic_fetch_add(&s->bad, 1);
}

static int has_key(kcr_informer_t *inf, const char *key) {
  return kcr_store_contains(kcr_informer_store(inf), key);
}

static void test_cache_metadata_only_sees_add_update_delete(void **state) {
  seen_t seen;
  kcr_event_handler h = {on_add, on_update, on_delete, &seen};
  kcr_informer_t *inf = NULL;
  kcr_cache_t *c;
  kcr_error_t err;
  static const char patch[] = "{\"metadata\":{\"labels\":{\"step\":\"2\"}}}";
  (void)state;
  memset(&seen, 0, sizeof(seen));
  c = new_cache(true, &inf);
  kcr_error_clear(&err);
  assert_int_equal(kcr_informer_add_handler(inf, &h, NULL, &err), 0);
  put_cm("meta-new", 99);
  WAIT_FOR(atomic_load(&seen.adds) == 1, 30, "the add");
  if (kcr_client_patch(it.direct, &configmaps, "default", "meta-new", KCR_PATCH_MERGE, patch,
                       strlen(patch), NULL, NULL, &err) != 0)
    fail_msg("patch: %s", err.message);
  WAIT_FOR(atomic_load(&seen.updates) == 1, 30, "the update");
  del_cm("meta-new");
  WAIT_FOR(atomic_load(&seen.deletes) == 1, 30, "the delete");
  assert_false(has_key(inf, "default/meta-new"));
  assert_int_equal(atomic_load(&seen.bad), 0);
  kcr_cache_destroy(c);
}

/* converged: the cache's store equals a fresh LIST (keys and versions). */
static int converged(kcr_informer_t *inf) {
  kcr_store_t *store = kcr_informer_store(inf);
  json_t *all = NULL, *obj;
  size_t i;
  int ok = kcr_it_store_equals_list(it.direct, store, &configmaps, "default", "meta=yes");
  if (ok && kcr_store_list(store, &all) == 0)
    json_array_foreach(all, i, obj) ok = ok && metadata_form(obj);
  json_decref(all);
  return ok;
}

static uint64_t lists(kcr_informer_t *inf) {
  kcr_informer_stats st;
  kcr_informer_get_stats(inf, &st);
  return st.lists;
}

/* relist_after_gone: cut off while one object changes, one goes and one comes
 * and etcd compacts; the re-watch gets 410, the cache relists (paged or
 * streamed) and converges, still in metadata form. */
static void relist_after_gone(bool streaming) {
  kcr_informer_stats st;
  kcr_informer_t *inf = NULL;
  kcr_cache_t *c;
  uint64_t before;
  char rev[64];
  json_t *gone = NULL;
  setenv("KUBE_FEATURE_WatchListClient", streaming ? "true" : "false", 1);
  put_cm("gone-a", 1);
  put_cm("gone-b", 1);
  c = new_cache(true, &inf);
  WAIT_FOR(converged(inf), 30, "the first sync");
  before = lists(inf);
  kcr_faultproxy_refuse(it.proxy, true);
  kcr_faultproxy_cut(it.proxy);
  for (unsigned k = 2; k < 12; k++)
    put_cm("gone-a", k);
  del_cm("gone-b");
  put_cm("gone-c", 1);
  assert_int_equal(kcr_testenv_compact(it.env, rev, sizeof(rev)), 0);
  kcr_faultproxy_refuse(it.proxy, false);
  WAIT_FOR(lists(inf) > before, 90, "a relist after 410");
  WAIT_FOR(converged(inf), 60, "convergence after the relist");
  assert_int_not_equal(kcr_store_get_by_key(kcr_informer_store(inf), "default/gone-b", &gone), 0);
  kcr_informer_get_stats(inf, &st);
  assert_true(st.relists[KCR_INFORMER_RELIST_GONE] >= 1);
  if (streaming)
    assert_true(st.streamed_lists >= 2);
  kcr_cache_destroy(c);
  del_cm("gone-a");
  del_cm("gone-c");
  unsetenv("KUBE_FEATURE_WatchListClient");
}

static void test_cache_metadata_only_relists_after_gone(void **state) {
  (void)state;
  relist_after_gone(false);
}

static void test_cache_metadata_only_streamed_relist_after_gone(void **state) {
  (void)state;
  relist_after_gone(true);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_metadata_only_receives_a_fraction_of_the_bytes),
      cmocka_unit_test(test_cache_metadata_only_sees_add_update_delete),
      cmocka_unit_test(test_cache_metadata_only_relists_after_gone),
      cmocka_unit_test(test_cache_metadata_only_streamed_relist_after_gone),
  };
  return cmocka_run_group_tests_name("cache_metadata_it", tests, group_setup, group_teardown);
}
