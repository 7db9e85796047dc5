/* SPDX-License-Identifier: MIT */
/*
 * test_store.c: the indexed store, mirroring client-go's thread_safe_store_test.go
 * and index_test.go: CRUD, readers owning their copies, the namespace index,
 * multi-value indexes moving on update, empty sets dropped, indexers added late,
 * Index/ByIndex/IndexKeys/ListIndexFuncValues, replace, foreach, allocation
 * failure and a concurrent readers+writers run for TSan.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/store_internal.h"
#include "kcr/store.h"
#include "testutil.h"

static json_t *mk(const char *ns, const char *name, const char *rv, const char *labels_json) {
  json_error_t e;
  json_t *labels = labels_json ? json_loads(labels_json, 0, &e) : json_object();
  json_t *md = json_pack("{s:s, s:s, s:o}", "name", name, "resourceVersion", rv, "labels", labels);
  assert_non_null(md);
  if (ns)
    json_object_set_new(md, "namespace", json_string(ns));
  return json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", md);
}

/* by_label indexes the comma-separated values of label "vals" (0..n values). */
static char app_label[] = "app";
static char vals_label[] = "vals";

static int by_label(const json_t *obj, kcr_index_values_t *v, void *data) {
  const char *s = kcr_meta_label(obj, data ? (const char *)data : "vals");
  char tmp[256];
  char *save = NULL;
  if (!s)
    return 0;
  snprintf(tmp, sizeof(tmp), "%s", s);
  for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int rc = kcr_index_values_add(v, t);
    if (rc)
      return rc;
  }
  return 0;
}

static int failing_index(const json_t *obj, kcr_index_values_t *v, void *data) {
  (void)v;
  (void)data;
  return kcr_meta_label(obj, "poison") ? KCR_EINVAL : 0;
}

/* sorted_join renders a key vector sorted and comma-joined into buf. */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *join(char **v, size_t n, char *buf, size_t size) {
  size_t off = 0;
  qsort(v, n, sizeof(*v), cmp_str);
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++)
    off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? "," : "", v[i]);
  return buf;
}

static const char *index_keys(kcr_store_t *s, const char *index, const char *value, char *buf) {
  char **v = NULL;
  size_t n = 0;
  assert_int_equal(kcr_store_index_keys(s, index, value, &v, &n), 0);
  join(v, n, buf, 512);
  kcr_free(v);
  return buf;
}

static const char *index_values(kcr_store_t *s, const char *index, char *buf) {
  char **v = NULL;
  size_t n = 0;
  assert_int_equal(kcr_store_list_index_values(s, index, &v, &n), 0);
  join(v, n, buf, 512);
  kcr_free(v);
  return buf;
}

static const char *all_keys(kcr_store_t *s, char *buf) {
  char **v = NULL;
  size_t n = 0;
  assert_int_equal(kcr_store_list_keys(s, &v, &n), 0);
  assert_null(v[n]);
  join(v, n, buf, 512);
  kcr_free(v);
  return buf;
}

static void add(kcr_store_t *s, json_t *obj) {
  kcr_error_t err = {0};
  int rc = kcr_store_add(s, obj, &err);
  if (rc)
    fail_msg("add: %s", err.message);
  json_decref(obj);
}

static void test_store_crud(void **state) {
  kcr_store_t *s = NULL;
  json_t *got = NULL, *list = NULL;
  char buf[512], rv[32];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  assert_int_equal(kcr_store_resource_version(s, rv, sizeof(rv)), 0);
  assert_string_equal(rv, "");
  add(s, mk("ns1", "a", "1", NULL));
  add(s, mk("ns1", "b", "2", NULL));
  add(s, mk(NULL, "c", "3", NULL));
  assert_int_equal(kcr_store_len(s), 3);
  assert_string_equal(all_keys(s, buf), "c,ns1/a,ns1/b");
  assert_int_equal(kcr_store_resource_version(s, rv, sizeof(rv)), 0);
  assert_string_equal(rv, "3");
  assert_int_equal(kcr_store_resource_version(s, rv, 1), KCR_ETOOBIG);

  assert_int_equal(kcr_store_get_by_key(s, "ns1/a", &got), 0);
  assert_string_equal(kcr_meta_resource_version(got), "1");
  assert_string_equal(kcr_meta_kind(got), "Pod");
  /* The reader owns its copy: changing it does not touch the store. */
  json_object_set_new(kcr_meta_metadata(got), "name", json_string("changed"));
  json_decref(got);
  assert_int_equal(kcr_store_get_by_key(s, "ns1/a", &got), 0);
  assert_string_equal(kcr_meta_name(got), "a");
  json_decref(got);
  assert_int_equal(kcr_store_get_by_key(s, "nope", &got), KCR_ENOENT);
  assert_null(got);
  assert_true(kcr_store_contains(s, "c"));
  assert_false(kcr_store_contains(s, "ns1/c"));

  add(s, mk("ns1", "a", "9", NULL));
  assert_int_equal(kcr_store_len(s), 3);
  {
    json_t *probe = mk("ns1", "a", "", NULL);
    assert_int_equal(kcr_store_get(s, probe, &got), 0);
    assert_string_equal(kcr_meta_resource_version(got), "9");
    json_decref(got);
    assert_int_equal(kcr_store_delete(s, probe, NULL), 0);
    assert_int_equal(kcr_store_delete(s, probe, NULL), 0); /* missing: not an error */
    json_decref(probe);
  }
  assert_int_equal(kcr_store_delete_key(s, "c"), 0);
  assert_int_equal(kcr_store_delete_key(s, "c"), KCR_ENOENT);
  assert_int_equal(kcr_store_list(s, &list), 0);
  assert_int_equal(json_array_size(list), 1);
  assert_string_equal(kcr_meta_name(json_array_get(list, 0)), "b");
  json_decref(list);

  {
    json_t *nokey = json_pack("{s:{}}", "metadata");
    kcr_error_t err = {0};
    assert_int_equal(kcr_store_add(s, nokey, &err), KCR_EINVAL);
    assert_non_null(strstr(err.message, "no key"));
    assert_int_equal(kcr_store_get(s, nokey, &got), KCR_EINVAL);
    json_decref(nokey);
  }
  kcr_store_destroy(s);
  kcr_store_destroy(NULL);
}

static void test_store_compact_text(void **state) {
  kcr_store_t *s = NULL;
  json_t *got = NULL;
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  add(s, json_loads("{ \"metadata\" : { \"name\" : \"x\", \"resourceVersion\": \"5\" },"
                    "  \"data\": {\"k\": \"v\", \"n\": 1.5, \"u\": \"\\u00e9\"} }",
                    0, NULL));
  assert_int_equal(kcr_store_get_by_key(s, "x", &got), 0);
  {
    char *text = json_dumps(got, JSON_COMPACT);
    assert_string_equal(text, "{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"5\"},"
                              "\"data\":{\"k\":\"v\",\"n\":1.5,\"u\":\"\xc3\xa9\"}}");
    free(text);
  }
  json_decref(got);
  kcr_store_destroy(s);
}

static void test_store_namespace_index(void **state) {
  kcr_store_t *s = NULL;
  json_t *got = NULL;
  char buf[512];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  add(s, mk("ns1", "a", "1", NULL));
  add(s, mk("ns1", "b", "1", NULL));
  add(s, mk("ns2", "a", "1", NULL));
  add(s, mk(NULL, "node", "1", NULL));
  assert_string_equal(index_keys(s, KCR_STORE_INDEX_NAMESPACE, "ns1", buf), "ns1/a,ns1/b");
  assert_string_equal(index_keys(s, KCR_STORE_INDEX_NAMESPACE, "", buf), "node");
  assert_string_equal(index_keys(s, KCR_STORE_INDEX_NAMESPACE, "none", buf), "");
  assert_string_equal(index_values(s, KCR_STORE_INDEX_NAMESPACE, buf), ",ns1,ns2");
  assert_int_equal(kcr_store_by_index(s, KCR_STORE_INDEX_NAMESPACE, "ns2", &got), 0);
  assert_int_equal(json_array_size(got), 1);
  assert_string_equal(kcr_meta_namespace(json_array_get(got, 0)), "ns2");
  json_decref(got);
  assert_int_equal(kcr_store_by_index(s, "nope", "x", &got), KCR_ENOENT);
  assert_null(got);
  {
    char **v = NULL;
    assert_int_equal(kcr_store_index_keys(s, "nope", "x", &v, NULL), KCR_ENOENT);
    assert_int_equal(kcr_store_list_index_values(s, "nope", &v, NULL), KCR_ENOENT);
  }
  /* Deleting the last object of a namespace drops the value (kubernetes#84959). */
  assert_int_equal(kcr_store_delete_key(s, "ns2/a"), 0);
  assert_string_equal(index_values(s, KCR_STORE_INDEX_NAMESPACE, buf), ",ns1");
  kcr_store_destroy(s);
}

/* client-go TestThreadSafeStoreIndexingFunctionsWithMultipleValues. */
static void test_store_update_moves_index_values(void **state) {
  kcr_store_t *s = NULL;
  char buf[512];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  assert_int_equal(kcr_store_add_indexer(s, "vals", by_label, NULL, NULL), 0);
  add(s, mk(NULL, "a", "1", "{\"vals\":\"x\"}"));
  add(s, mk(NULL, "b", "1", "{\"vals\":\"x,y\"}"));
  assert_string_equal(index_keys(s, "vals", "x", buf), "a,b");
  assert_string_equal(index_keys(s, "vals", "y", buf), "b");

  add(s, mk(NULL, "b", "2", "{\"vals\":\"y,z\"}"));
  assert_string_equal(index_keys(s, "vals", "x", buf), "a");
  assert_string_equal(index_keys(s, "vals", "y", buf), "b");
  assert_string_equal(index_keys(s, "vals", "z", buf), "b");
  assert_string_equal(index_values(s, "vals", buf), "x,y,z");

  add(s, mk(NULL, "b", "3", "{\"vals\":\"x,x,z\"}")); /* duplicates are one entry */
  assert_string_equal(index_keys(s, "vals", "x", buf), "a,b");
  assert_string_equal(index_values(s, "vals", buf), "x,z");

  add(s, mk(NULL, "b", "4", NULL)); /* no value: out of the index */
  assert_string_equal(index_keys(s, "vals", "x", buf), "a");
  assert_string_equal(index_values(s, "vals", buf), "x");

  assert_int_equal(kcr_store_delete_key(s, "a"), 0);
  assert_string_equal(index_values(s, "vals", buf), "");
  assert_string_equal(index_keys(s, "vals", "x", buf), "");
  kcr_store_destroy(s);
}

/* client-go TestAddIndexerAfterAdd / AddIndexers on a filled store. */
static void test_store_add_indexer_reindexes(void **state) {
  kcr_store_t *s = NULL;
  kcr_error_t err = {0};
  char buf[512];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  add(s, mk("ns", "a", "1", "{\"app\":\"web\"}"));
  add(s, mk("ns", "b", "1", "{\"app\":\"db\"}"));
  add(s, mk("ns", "c", "1", "{\"app\":\"web,db\"}"));
  assert_int_equal(kcr_store_add_indexer(s, "app", by_label, app_label, NULL), 0);
  assert_string_equal(index_keys(s, "app", "web", buf), "ns/a,ns/c");
  assert_string_equal(index_keys(s, "app", "db", buf), "ns/b,ns/c");
  assert_int_equal(kcr_store_add_indexer(s, "app", by_label, app_label, &err), KCR_EEXIST);
  assert_int_equal(kcr_store_add_indexer(s, "namespace", by_label, app_label, NULL), KCR_EEXIST);
  /* A second late indexer keeps the first one's values per object intact. */
  assert_int_equal(kcr_store_add_indexer(s, "vals", by_label, NULL, NULL), 0);
  add(s, mk("ns", "c", "2", "{\"app\":\"web\",\"vals\":\"q\"}"));
  assert_string_equal(index_keys(s, "app", "db", buf), "ns/b");
  assert_string_equal(index_keys(s, "vals", "q", buf), "ns/c");
  assert_string_equal(index_keys(s, KCR_STORE_INDEX_NAMESPACE, "ns", buf), "ns/a,ns/b,ns/c");
  /* An index function that fails leaves the store as it was. */
  assert_int_equal(kcr_store_add_indexer(s, "bad", failing_index, NULL, NULL), 0);
  {
    json_t *p = mk("ns", "a", "5", "{\"poison\":\"1\",\"app\":\"other\"}");
    json_t *got = NULL;
    kcr_error_clear(&err);
    assert_int_equal(kcr_store_add(s, p, &err), KCR_EINVAL);
    assert_non_null(strstr(err.message, "index bad"));
    json_decref(p);
    assert_int_equal(kcr_store_get_by_key(s, "ns/a", &got), 0);
    assert_string_equal(kcr_meta_resource_version(got), "1");
    json_decref(got);
    assert_string_equal(index_values(s, "app", buf), "db,web");
  }
  kcr_store_destroy(s);
}

static void test_store_index_and_by_index(void **state) {
  kcr_store_t *s = NULL;
  json_t *got = NULL, *probe;
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  assert_int_equal(kcr_store_add_indexer(s, "vals", by_label, NULL, NULL), 0);
  add(s, mk(NULL, "a", "1", "{\"vals\":\"x\"}"));
  add(s, mk(NULL, "b", "1", "{\"vals\":\"x,y\"}"));
  add(s, mk(NULL, "c", "1", "{\"vals\":\"z\"}"));
  probe = mk(NULL, "probe", "1", "{\"vals\":\"x,y\"}");
  /* Index: the union of the objects sharing any value, each once. */
  assert_int_equal(kcr_store_index(s, "vals", probe, &got), 0);
  assert_int_equal(json_array_size(got), 2);
  json_decref(got);
  assert_int_equal(kcr_store_index(s, "nope", probe, &got), KCR_ENOENT);
  json_decref(probe);
  assert_int_equal(kcr_store_by_index(s, "vals", "z", &got), 0);
  assert_int_equal(json_array_size(got), 1);
  assert_string_equal(kcr_meta_name(json_array_get(got, 0)), "c");
  json_decref(got);
  assert_int_equal(kcr_store_by_index(s, "vals", "none", &got), 0);
  assert_int_equal(json_array_size(got), 0);
  json_decref(got);
  kcr_store_destroy(s);
}

static void test_store_replace(void **state) {
  kcr_store_t *s = NULL;
  json_t *items, *got = NULL;
  kcr_error_t err = {0};
  char buf[512], rv[16];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  assert_int_equal(kcr_store_add_indexer(s, "vals", by_label, NULL, NULL), 0);
  add(s, mk("ns", "old", "1", "{\"vals\":\"x\"}"));
  add(s, mk("ns", "keep", "1", "{\"vals\":\"x\"}"));
  items = json_pack("[o,o,o]", mk("ns", "keep", "2", "{\"vals\":\"y\"}"),
                    mk("other", "new", "2", NULL), mk("ns", "keep", "3", "{\"vals\":\"z\"}"));
  assert_int_equal(kcr_store_replace(s, items, "100", NULL), 0);
  json_decref(items);
  assert_string_equal(all_keys(s, buf), "ns/keep,other/new");
  assert_int_equal(kcr_store_get_by_key(s, "ns/keep", &got), 0);
  assert_string_equal(kcr_meta_resource_version(got), "3"); /* a later duplicate wins */
  json_decref(got);
  assert_string_equal(index_values(s, "vals", buf), "z");
  assert_string_equal(index_values(s, KCR_STORE_INDEX_NAMESPACE, buf), "ns,other");
  assert_int_equal(kcr_store_resource_version(s, rv, sizeof(rv)), 0);
  assert_string_equal(rv, "100");

  /* A bad item fails the whole replace; the store keeps what it had. */
  items = json_pack("[o,{s:{}}]", mk("ns", "x", "1", NULL), "metadata");
  assert_int_equal(kcr_store_replace(s, items, "200", &err), KCR_EINVAL);
  json_decref(items);
  assert_string_equal(all_keys(s, buf), "ns/keep,other/new");
  items = json_object();
  assert_int_equal(kcr_store_replace(s, items, "1", NULL), KCR_EINVAL);
  json_decref(items);

  items = json_array();
  assert_int_equal(kcr_store_replace(s, items, NULL, NULL), 0);
  json_decref(items);
  assert_int_equal(kcr_store_len(s), 0);
  assert_string_equal(index_values(s, "vals", buf), "");
  assert_int_equal(kcr_store_resource_version(s, rv, sizeof(rv)), 0);
  assert_string_equal(rv, "");
  kcr_store_destroy(s);
}

/* delete_rv deletes (ns, name) by an object at rv and returns the store's rv. */
static const char *delete_rv(kcr_store_t *s, const char *name, const char *rv, char *buf,
                             size_t size) {
  json_t *o = mk("ns", name, rv, NULL);
  assert_int_equal(kcr_store_delete(s, o, NULL), 0);
  json_decref(o);
  assert_int_equal(kcr_store_resource_version(s, buf, size), 0);
  return buf;
}

/*
 * A delete tells the store's resourceVersion too (client-go's store takes it
 * from DeleteWithObject since 1.36), but only forward: a delete seen late, or
 * a version that is no positive decimal (apimachinery's CompareResourceVersion
 * refuses it), leaves it where it is. Longer is later ("100" after "99").
 */
static void test_store_delete_advances_resource_version(void **state) {
  static const char *const not_versions[] = {"", "x", "07", "0", "-9", "8a", "1 "};
  kcr_store_t *s = NULL;
  json_t *items;
  char rv[32];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  /* before anything: the first delete sets it */
  assert_string_equal(delete_rv(s, "none", "4", rv, sizeof(rv)), "4");
  add(s, mk("ns", "a", "5", NULL));
  add(s, mk("ns", "b", "6", NULL));
  assert_string_equal(delete_rv(s, "a", "7", rv, sizeof(rv)), "7");
  assert_int_equal(kcr_store_len(s), 1);
  assert_string_equal(delete_rv(s, "b", "3", rv, sizeof(rv)), "7"); /* late: not back */
  assert_int_equal(kcr_store_len(s), 0);
  for (size_t i = 0; i < sizeof(not_versions) / sizeof(not_versions[0]); i++)
    assert_string_equal(delete_rv(s, "gone", not_versions[i], rv, sizeof(rv)), "7");
  assert_string_equal(delete_rv(s, "gone", "12", rv, sizeof(rv)), "12"); /* a missing key too */
  add(s, mk("ns", "c", "99", NULL));
  assert_string_equal(delete_rv(s, "c", "100", rv, sizeof(rv)), "100");
  assert_string_equal(delete_rv(s, "c", "99", rv, sizeof(rv)), "100");
  /* after a replace it moves on from the replace's version */
  items = json_array();
  assert_int_equal(kcr_store_replace(s, items, "200", NULL), 0);
  json_decref(items);
  assert_string_equal(delete_rv(s, "d", "150", rv, sizeof(rv)), "200");
  assert_string_equal(delete_rv(s, "d", "201", rv, sizeof(rv)), "201");
  /* deleting by key alone names no version */
  add(s, mk("ns", "e", "300", NULL));
  assert_int_equal(kcr_store_delete_key(s, "ns/e"), 0);
  assert_int_equal(kcr_store_resource_version(s, rv, sizeof(rv)), 0);
  assert_string_equal(rv, "300");
  /* the informer's way, with a compact last state: test_cobj.c */
  add(s, mk("ns", "f", "301", NULL));
  assert_int_equal(kcr_store_delete_key(s, "ns/f"), 0);
  assert_int_equal(kcr_store_resource_version(s, rv, sizeof(rv)), 0);
  assert_string_equal(rv, "301");
  kcr_store_destroy(s);
}

typedef struct count_ctx {
  size_t n, bytes;
  int stop_at;
} count_ctx_t;

static int on_obj(const char *key, const char *json, size_t len, void *data) {
  count_ctx_t *c = data;
  assert_non_null(key);
  assert_int_equal(strlen(json), len);
  assert_int_equal(json[0], '{');
  c->n++;
  c->bytes += len;
  return (int)c->n == c->stop_at ? 7 : 0;
}

static void test_store_foreach(void **state) {
  kcr_store_t *s = NULL;
  count_ctx_t c = {0, 0, 0};
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  add(s, mk("ns", "a", "1", NULL));
  add(s, mk("ns", "b", "1", NULL));
  add(s, mk("ns2", "c", "1", NULL));
  assert_int_equal(kcr_store_foreach(s, on_obj, &c), 0);
  assert_int_equal(c.n, 3);
  c = (count_ctx_t){0, 0, 2};
  assert_int_equal(kcr_store_foreach(s, on_obj, &c), 7);
  assert_int_equal(c.n, 2);
  c = (count_ctx_t){0, 0, 0};
  assert_int_equal(kcr_store_foreach_index(s, KCR_STORE_INDEX_NAMESPACE, "ns", on_obj, &c), 0);
  assert_int_equal(c.n, 2);
  assert_int_equal(kcr_store_foreach_index(s, "nope", "ns", on_obj, &c), KCR_ENOENT);
  kcr_store_destroy(s);
}

static int by_name_key(const json_t *obj, char *buf, size_t size, void *data) {
  (void)data;
  return snprintf(buf, size, "k-%s", kcr_meta_name(obj)) < (int)size ? 0 : KCR_ETOOBIG;
}

static void test_store_custom_key(void **state) {
  kcr_store_t *s = NULL;
  json_t *got = NULL;
  (void)state;
  assert_int_equal(kcr_store_create(by_name_key, NULL, &s, NULL), 0);
  add(s, mk("ns", "a", "1", NULL));
  assert_int_equal(kcr_store_get_by_key(s, "k-a", &got), 0);
  json_decref(got);
  kcr_store_destroy(s);
}

/* The namespace index's value is the stored object's namespace, not a copy:
 * with a key that does not hold the namespace, an update under the same key
 * moves it, beside another index, through Replace and on delete. */
static void test_store_custom_key_moves_namespace(void **state) {
  kcr_store_t *s = NULL;
  json_t *list;
  char buf[512];
  (void)state;
  assert_int_equal(kcr_store_create(by_name_key, NULL, &s, NULL), 0);
  add(s, mk("ns1", "a", "1", NULL));
  add(s, mk("ns1", "b", "1", NULL));
  assert_string_equal(index_keys(s, KCR_STORE_INDEX_NAMESPACE, "ns1", buf), "k-a,k-b");
  add(s, mk("ns2", "a", "2", NULL));
  assert_string_equal(index_keys(s, KCR_STORE_INDEX_NAMESPACE, "ns1", buf), "k-b");
  assert_string_equal(index_keys(s, KCR_STORE_INDEX_NAMESPACE, "ns2", buf), "k-a");
  assert_int_equal(kcr_store_add_indexer(s, "vals", by_label, NULL, NULL), 0);
  add(s, mk("ns3", "b", "2", "{\"vals\":\"x\"}"));
  assert_string_equal(index_values(s, KCR_STORE_INDEX_NAMESPACE, buf), "ns2,ns3");
  assert_string_equal(index_keys(s, "vals", "x", buf), "k-b");
  list = json_pack("[o,o]", mk("ns4", "a", "3", "{\"vals\":\"x\"}"), mk("ns2", "b", "3", NULL));
  assert_int_equal(kcr_store_replace(s, list, "3", NULL), 0);
  json_decref(list);
  assert_string_equal(index_values(s, KCR_STORE_INDEX_NAMESPACE, buf), "ns2,ns4");
  assert_string_equal(index_keys(s, KCR_STORE_INDEX_NAMESPACE, "ns4", buf), "k-a");
  assert_string_equal(index_keys(s, "vals", "x", buf), "k-a");
  assert_int_equal(kcr_store_delete_key(s, "k-a"), 0);
  assert_string_equal(index_values(s, KCR_STORE_INDEX_NAMESPACE, buf), "ns2");
  assert_string_equal(index_values(s, "vals", buf), "");
  kcr_store_destroy(s);
}

static void test_store_index_value_too_long(void **state) {
  kcr_store_t *s = NULL;
  char *big = malloc(KCR_STORE_INDEX_VALUE_MAX + 1);
  json_t *o;
  (void)state;
  memset(big, 'a', KCR_STORE_INDEX_VALUE_MAX);
  big[KCR_STORE_INDEX_VALUE_MAX] = '\0';
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  o = json_pack("{s:{s:s,s:s}}", "metadata", "name", "a", "namespace", big);
  assert_int_equal(kcr_store_add(s, o, NULL), KCR_ETOOBIG);
  assert_int_equal(kcr_store_len(s), 0);
  json_decref(o);
  free(big);
  kcr_store_destroy(s);
}

/* --- allocation failure ---------------------------------------------------- */

static kcr_store_t *fs;

static void fill(kcr_store_t *s) {
  assert_int_equal(kcr_store_add_indexer(s, "vals", by_label, NULL, NULL), 0);
  for (int i = 0; i < 6; i++) {
    char name[16], vals[32];
    snprintf(name, sizeof(name), "o%d", i);
    snprintf(vals, sizeof(vals), "{\"vals\":\"v%d,w%d\"}", i % 3, i % 2);
    add(s, mk(i % 2 ? "ns1" : "ns2", name, "1", vals));
  }
}

/* consistent checks the store against the contents fill() made plus extra. */
static void check_filled(kcr_store_t *s, const char *extra_vals) {
  char buf[512];
  assert_string_equal(index_values(s, "vals", buf), extra_vals);
  assert_string_equal(index_keys(s, "vals", "v0", buf), "ns1/o3,ns2/o0");
  assert_string_equal(index_values(s, KCR_STORE_INDEX_NAMESPACE, buf), "ns1,ns2");
}

static int try_add(json_t *obj) {
  return kcr_store_add(fs, obj, NULL);
}

static void after_add(const char *vals_ok, const char *vals_fail, int rc) {
  char buf[512];
  if (rc == 0) {
    assert_string_equal(index_values(fs, "vals", buf), vals_ok);
    (void)kcr_store_delete_key(fs, "ns1/new");
  } else {
    check_filled(fs, vals_fail);
  }
}

static void test_store_add_alloc_failure(void **state) {
  json_t *fresh = mk("ns1", "new", "2", "{\"vals\":\"v0,n1,n2\"}");
  json_t *moved = mk("ns2", "o2", "2", "{\"vals\":\"v2,m1,m2\"}");
  int rc = 0;
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &fs, NULL), 0);
  fill(fs);
  /* A new key with new index values. */
  KCR_TEST_ALLOC_LOOP(rc = try_add(fresh), after_add("n1,n2,v0,v1,v2,w0,w1", "v0,v1,v2,w0,w1", rc));
  /* An existing key whose index values move (o2 had v2,w0). */
  KCR_TEST_ALLOC_LOOP(rc = try_add(moved), after_add("m1,m2,v0,v1,v2,w0,w1", "v0,v1,v2,w0,w1", rc));
  json_decref(fresh);
  json_decref(moved);
  kcr_store_destroy(fs);
}

static int try_delete(json_t *obj) {
  return kcr_store_delete(fs, obj, NULL);
}

static void after_delete(int rc) {
  char rv[16];
  assert_int_equal(kcr_store_resource_version(fs, rv, sizeof(rv)), 0);
  assert_string_equal(rv, rc == 0 ? "8" : "1");
  assert_int_equal(kcr_store_contains(fs, "ns1/o1"), rc != 0);
}

/* A delete that cannot copy its version changes nothing. */
static void test_store_delete_alloc_failure(void **state) {
  json_t *obj = mk("ns1", "o1", "8", NULL);
  int rc = 0;
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &fs, NULL), 0);
  fill(fs);
  KCR_TEST_ALLOC_LOOP(rc = try_delete(obj), after_delete(rc));
  json_decref(obj);
  kcr_store_destroy(fs);
}

static int try_replace(json_t *items) {
  return kcr_store_replace(fs, items, "9", NULL);
}

static void after_replace(int rc) {
  if (rc)
    check_filled(fs, "v0,v1,v2,w0,w1");
}

static void test_store_replace_alloc_failure(void **state) {
  json_t *items = json_pack("[o,o,o]", mk("a", "x", "1", "{\"vals\":\"p,q\"}"),
                            mk("b", "y", "1", "{\"vals\":\"q\"}"), mk("a", "x", "2", NULL));
  int rc = 0;
  char buf[512];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &fs, NULL), 0);
  fill(fs);
  KCR_TEST_ALLOC_LOOP(rc = try_replace(items), after_replace(rc));
  assert_string_equal(all_keys(fs, buf), "a/x,b/y");
  assert_string_equal(index_values(fs, "vals", buf), "q");
  json_decref(items);
  kcr_store_destroy(fs);
}

static int try_add_indexer(void) {
  return kcr_store_add_indexer(fs, "app", by_label, vals_label, NULL);
}

static void after_add_indexer(int rc) {
  char **v = NULL;
  if (rc) {
    assert_int_equal(kcr_store_list_index_values(fs, "app", &v, NULL), KCR_ENOENT);
    check_filled(fs, "v0,v1,v2,w0,w1");
  }
}

static void test_store_add_indexer_alloc_failure(void **state) {
  int rc = 0;
  char buf[512];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &fs, NULL), 0);
  fill(fs);
  KCR_TEST_ALLOC_LOOP(rc = try_add_indexer(), after_add_indexer(rc));
  assert_string_equal(index_values(fs, "app", buf), "v0,v1,v2,w0,w1");
  check_filled(fs, "v0,v1,v2,w0,w1");
  kcr_store_destroy(fs);
}

static int create_and_destroy(void) {
  kcr_store_t *s = NULL;
  int rc = kcr_store_create(NULL, NULL, &s, NULL);
  kcr_store_destroy(s);
  return rc;
}

static void test_store_create_alloc_failure(void **state) {
  (void)state;
  KCR_TEST_ALLOC_LOOP(create_and_destroy(), (void)0);
}

/* --- concurrency ----------------------------------------------------------- */

#define CONC_KEYS 64
#define CONC_OPS 800

static void *writer(void *arg) {
  kcr_store_t *s = arg;
  unsigned seed = 7;
  for (int i = 0; i < CONC_OPS; i++) {
    char name[16], rv[16], vals[32];
    int k = (int)(rand_r(&seed) % CONC_KEYS);
    snprintf(name, sizeof(name), "o%d", k);
    snprintf(rv, sizeof(rv), "%d", i);
    snprintf(vals, sizeof(vals), "{\"vals\":\"v%d\"}", i % 5);
    if (i % 7 == 0) {
      (void)kcr_store_delete_key(s, name);
    } else {
      json_t *o = mk("ns", name, rv, vals);
      assert_int_equal(kcr_store_add(s, o, NULL), 0);
      json_decref(o);
    }
  }
  return NULL;
}

static int count_only(const char *key, const char *json, size_t len, void *data) {
  (void)key;
  (void)json;
  (void)len;
  ++*(size_t *)data;
  return 0;
}

static void *reader(void *arg) {
  kcr_store_t *s = arg;
  for (int i = 0; i < CONC_OPS / 8; i++) {
    json_t *got = NULL;
    size_t n = 0;
    if (kcr_store_get_by_key(s, "ns/o1", &got) == 0) {
      json_object_set_new(got, "mutated", json_true()); /* readers own their copies */
      json_decref(got);
    }
    assert_int_equal(kcr_store_by_index(s, "vals", "v1", &got), 0);
    json_decref(got);
    assert_int_equal(kcr_store_list(s, &got), 0);
    json_decref(got);
    assert_int_equal(kcr_store_foreach(s, count_only, &n), 0);
    assert_true(n <= CONC_KEYS);
  }
  return NULL;
}

static void test_store_concurrent(void **state) {
  kcr_store_t *s = NULL;
  pthread_t w[2], r[2];
  json_t *all = NULL;
  char buf[512];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  assert_int_equal(kcr_store_add_indexer(s, "vals", by_label, NULL, NULL), 0);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(pthread_create(&w[i], NULL, writer, s), 0);
    assert_int_equal(pthread_create(&r[i], NULL, reader, s), 0);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(w[i], NULL);
    pthread_join(r[i], NULL);
  }
  /* The index agrees with the objects. */
  assert_int_equal(kcr_store_list(s, &all), 0);
  for (size_t i = 0; i < json_array_size(all); i++) {
    const json_t *o = json_array_get(all, i);
    char key[64];
    snprintf(key, sizeof(key), "ns/%s", kcr_meta_name(o));
    assert_non_null(strstr(index_keys(s, "vals", kcr_meta_label(o, "vals"), buf), key));
  }
  json_decref(all);
  kcr_store_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_store_crud),
      cmocka_unit_test(test_store_compact_text),
      cmocka_unit_test(test_store_namespace_index),
      cmocka_unit_test(test_store_update_moves_index_values),
      cmocka_unit_test(test_store_add_indexer_reindexes),
      cmocka_unit_test(test_store_index_and_by_index),
      cmocka_unit_test(test_store_replace),
      cmocka_unit_test(test_store_delete_advances_resource_version),
      cmocka_unit_test(test_store_foreach),
      cmocka_unit_test(test_store_custom_key),
      cmocka_unit_test(test_store_custom_key_moves_namespace),
      cmocka_unit_test(test_store_index_value_too_long),
      cmocka_unit_test(test_store_add_alloc_failure),
      cmocka_unit_test(test_store_delete_alloc_failure),
      cmocka_unit_test(test_store_replace_alloc_failure),
      cmocka_unit_test(test_store_add_indexer_alloc_failure),
      cmocka_unit_test(test_store_create_alloc_failure),
      cmocka_unit_test(test_store_concurrent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
