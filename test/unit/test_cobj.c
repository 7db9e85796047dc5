/* SPDX-License-Identifier: MIT */
/* test_cobj.c: the cache's compact object, its slots and a streamed list's collapse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cache/cobj.h"
#include "cache/store_internal.h"
#include "kcr/meta.h"
#include "kcr/store.h"
#include "testutil.h"
#include "util/jscan.h"

static const char CM[] =
    " {\"kind\":\"ConfigMap\", \"apiVersion\":\"v1\",\n"
    "  \"metadata\": {\"name\":\"cm-1\",\"namespace\":\"ns\",\"resourceVersion\":\"42\","
    "\"managedFields\":[{\"manager\":\"kubectl\"}]}} ";

/* meta_of fills a scan_meta as the scanner would. */
static kcr__scan_meta_t meta_of(const char *rv, const char *ns, const char *name) {
  kcr__scan_meta_t m;
  memset(&m, 0, sizeof(m));
  snprintf(m.rv, sizeof(m.rv), "%s", rv);
  snprintf(m.ns, sizeof(m.ns), "%s", ns);
  snprintf(m.name, sizeof(m.name), "%s", name);
  return m;
}

static void test_cobj_accessors(void **state) {
  kcr__scan_meta_t m = meta_of("5", "ns", "n");
  kcr_buf_t b;
  kcr__cobj_t *c = NULL;
  json_t *tree = NULL;
  char key[KCR_META_KEY_MAX];
  size_t len;
  (void)state;
  kcr_buf_init(&b, 1 << 20);
  assert_int_equal(kcr_buf_appends(&b, "{\"metadata\":{\"name\":\"n\"}}"), 0);
  assert_int_equal(kcr__cobj_from_buf(&b, 0, &m, &c), 0);
  assert_int_equal(b.len, 0);
  assert_string_equal(kcr__cobj_json(c, &len), "{\"metadata\":{\"name\":\"n\"}}");
  assert_int_equal(len, 25);
  assert_string_equal(kcr__cobj_rv(c), "5");
  assert_string_equal(kcr__cobj_ns(c), "ns");
  assert_string_equal(kcr__cobj_name(c), "n");
  assert_int_equal(kcr__cobj_key(c, key, sizeof(key)), 0);
  assert_string_equal(key, "ns/n");
  assert_int_equal(kcr__cobj_key(c, key, 4), KCR_ETOOBIG);
  assert_string_equal(key, "");
  assert_int_equal(kcr__cobj_parse(c, &tree), 0);
  assert_string_equal(kcr_meta_name(tree), "n");
  json_decref(tree);
  assert_ptr_equal(kcr__cobj_ref(c), c);
  kcr__cobj_unref(c);
  kcr__cobj_unref(c);
  kcr__cobj_unref(NULL);
  /* no name: no key */
  m = meta_of("", "", "");
  assert_int_equal(kcr_buf_appends(&b, "{}"), 0);
  assert_int_equal(kcr__cobj_from_buf(&b, 0, &m, &c), 0);
  assert_int_equal(kcr__cobj_key(c, key, sizeof(key)), KCR_EINVAL);
  kcr__cobj_unref(c);
  kcr_buf_free(&b);
}

/* A slot carries a compact object and gives it back; a tree in a slot is not
 * one, and the slot key function keys both. */
static void test_cobj_slots(void **state) {
  kcr__scan_meta_t m = meta_of("1", "", "cluster-wide");
  json_t *tree = json_pack("{s:{s:s, s:s}}", "metadata", "name", "t", "namespace", "ns");
  kcr__cobj_t *c = NULL;
  kcr_buf_t b;
  char key[KCR_META_KEY_MAX];
  (void)state;
  kcr_buf_init(&b, 1 << 20);
  assert_int_equal(kcr_buf_appends(&b, "{}"), 0);
  assert_int_equal(kcr__cobj_from_buf(&b, 0, &m, &c), 0);
  assert_ptr_equal(kcr__cobj_of_slot(kcr__cobj_slot(c)), c);
  assert_null(kcr__cobj_of_slot(tree));
  assert_null(kcr__cobj_of_slot(NULL));
  assert_null(kcr__cobj_slot(NULL));
  assert_int_equal(kcr__cobj_key_fn(kcr__cobj_slot(c), key, sizeof(key), NULL), 0);
  assert_string_equal(key, "cluster-wide");
  assert_int_equal(kcr__cobj_key_fn(tree, key, sizeof(key), NULL), 0);
  assert_string_equal(key, "ns/t");
  kcr__cobj_unref(c);
  json_decref(tree);
  kcr_buf_free(&b);
}

static int from_tree_once(json_t *obj, kcr__cobj_t **c) {
  kcr_buf_t b;
  int rc;
  kcr_buf_init(&b, 1 << 20);
  rc = kcr__cobj_from_tree(obj, &b, c);
  kcr_buf_free(&b);
  return rc;
}

static int scan_once(kcr__cobj_t **c) {
  kcr_buf_t b;
  kcr__scan_meta_t m;
  int rc;
  kcr_buf_init(&b, 1 << 20);
  rc = kcr__scan_object(CM, strlen(CM), &b, &m);
  if (rc == 0)
    rc = kcr__cobj_from_buf(&b, 0, &m, c);
  kcr_buf_free(&b);
  return rc;
}

/* From a tree: the same text and metadata as from the scanner; a tree's
 * bound is the scratch buffer's. */
static void test_cobj_from_tree(void **state) {
  json_t *tree = json_loads(CM, 0, NULL);
  kcr__cobj_t *a = NULL, *b = NULL;
  kcr_buf_t small;
  (void)state;
  assert_non_null(tree);
  assert_int_equal(kcr_meta_strip_managed_fields(tree), 0);
  assert_int_equal(scan_once(&a), 0);
  assert_int_equal(from_tree_once(tree, &b), 0);
  assert_string_equal(kcr__cobj_json(a, NULL), kcr__cobj_json(b, NULL));
  assert_string_equal(kcr__cobj_rv(b), "42");
  assert_string_equal(kcr__cobj_ns(b), "ns");
  assert_string_equal(kcr__cobj_name(b), "cm-1");
  kcr__cobj_unref(a);
  kcr__cobj_unref(b);
  kcr_buf_init(&small, 16);
  b = (kcr__cobj_t *)&small; /* must be reset to NULL on failure */
  assert_int_equal(kcr__cobj_from_tree(tree, &small, &b), KCR_ETOOBIG);
  assert_null(b);
  kcr_buf_free(&small);
  json_decref(tree);
}

/* parse_meta gives the whole tree's apiVersion, kind and metadata and nothing
 * else, past values that hold what a careless skip would trip on. */
static void test_cobj_parse_meta(void **state) {
  static const char *const texts[] = {
      "{\"kind\":\"Pod\",\"spec\":{\"a\":\"}\",\"b\":[\"]\",{\"c\":\"\\\"}\"}],\"d\":-1.5,"
      "\"e\":[true,false,null,{}]},\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\","
      "\"ownerReferences\":[{\"uid\":\"u\",\"controller\":true}]},\"status\":\"x,y\"}",
      "{\"metadata\":{}}",
      "{}",
      "{\"data\":{\"k\":\"v\"},\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"b\"}},\"z\":0}",
  };
  (void)state;
  for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
    kcr__scan_meta_t m = meta_of("1", "", "n");
    kcr_buf_t b;
    kcr__cobj_t *c = NULL;
    json_t *whole = NULL, *meta = NULL, *v;
    const char *key;
    void *tmp;
    kcr_buf_init(&b, 1 << 20);
    assert_int_equal(kcr_buf_appends(&b, texts[i]), 0);
    assert_int_equal(kcr__cobj_from_buf(&b, 0, &m, &c), 0);
    assert_int_equal(kcr__cobj_parse(c, &whole), 0);
    assert_int_equal(kcr__cobj_parse_meta(c, &meta), 0);
    /* the whole tree less every other member */
    json_object_foreach_safe(whole, tmp, key, v) {
      if (strcmp(key, "metadata") != 0 && strcmp(key, "kind") != 0 &&
          strcmp(key, "apiVersion") != 0)
        json_object_del(whole, key);
    }
    assert_true(json_equal(meta, whole));
    json_decref(meta);
    json_decref(whole);
    kcr__cobj_unref(c);
    kcr_buf_free(&b);
  }
}

static void test_cobj_allocation_failures(void **state) {
  json_t *obj = json_pack("{s:{s:s, s:s}}", "metadata", "name", "a", "resourceVersion", "1");
  kcr__cobj_t *c = NULL;
  json_t *tree = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(scan_once(&c), (kcr__cobj_unref(c), c = NULL));
  KCR_TEST_ALLOC_LOOP(from_tree_once(obj, &c), (kcr__cobj_unref(c), c = NULL));
  assert_int_equal(from_tree_once(obj, &c), 0);
  assert_string_equal(kcr__cobj_rv(c), "1");
  KCR_TEST_ALLOC_LOOP(kcr__cobj_parse(c, &tree), (json_decref(tree), tree = NULL));
  kcr__cobj_unref(c);
  json_decref(obj);
}

/* slot_of makes the slot of the compact object of
 * {"metadata":{name,namespace,resourceVersion}}. */
static json_t *slot_of(const char *ns, const char *name, const char *rv) {
  json_t *t = json_pack("{s:{s:s,s:s,s:s}}", "metadata", "name", name, "namespace", ns,
                        "resourceVersion", rv);
  kcr__cobj_t *c = NULL;
  assert_non_null(t);
  assert_int_equal(from_tree_once(t, &c), 0);
  json_decref(t);
  return kcr__cobj_slot(c);
}

/* A streamed list's events collapse as a map filled in order would hold them. */
static void test_cobj_collapse(void **state) {
  json_t *ev = json_array(), *out = NULL, *bad, *o;
  kcr__cobj_t *c;
  char buf[256] = "";
  size_t off = 0, i;
  (void)state;
  json_array_append_new(ev, slot_of("ns", "a", "1"));
  json_array_append_new(ev, slot_of("ns", "b", "2"));
  json_array_append_new(ev, slot_of("other", "a", "3")); /* another key */
  json_array_append_new(ev, slot_of("ns", "a", "4"));    /* an update keeps a's place */
  json_array_append_new(ev, json_null());
  json_array_append_new(ev, slot_of("ns", "b", "5")); /* b deleted */
  json_array_append_new(ev, json_null());
  json_array_append_new(ev, slot_of("ns", "x", "6")); /* deleting what is not there */
  json_array_append_new(ev, slot_of("ns", "c", "7"));
  json_array_append_new(ev, slot_of("ns", "b", "8")); /* b again, at the end */
  assert_int_equal(kcr__cobj_collapse(ev, &out), 0);
  json_array_foreach(out, i, o) {
    c = kcr__cobj_of_slot(o);
    assert_non_null(c);
    off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s/%s@%s", i ? "," : "",
                            kcr__cobj_ns(c), kcr__cobj_name(c), kcr__cobj_rv(c));
  }
  assert_string_equal(buf, "ns/a@4,other/a@3,ns/c@7,ns/b@8");
  json_decref(out);
  json_decref(ev);

  ev = json_array();
  assert_int_equal(kcr__cobj_collapse(ev, &out), 0);
  assert_int_equal(json_array_size(out), 0);
  json_decref(out);
  json_array_append_new(ev, slot_of("ns", "a", "1"));
  bad = json_pack("{s:{}}", "metadata");
  assert_int_equal(from_tree_once(bad, &c), 0);
  json_array_append_new(ev, kcr__cobj_slot(c)); /* no name */
  out = NULL;
  assert_int_equal(kcr__cobj_collapse(ev, &out), KCR_EINVAL);
  assert_null(out);
  json_array_set(ev, 1, bad); /* a tree is not a compact object */
  assert_int_equal(kcr__cobj_collapse(ev, &out), KCR_EINVAL);
  assert_null(out);
  json_decref(bad);
  json_decref(ev);
}

/* store_pod is a new Pod ns/name at resourceVersion rv; compact_pod the
 * same as a compact object. */
static json_t *store_pod(const char *name, const char *rv) {
  return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "Pod", "metadata",
                   "namespace", "ns", "name", name, "resourceVersion", rv);
}

static kcr__cobj_t *compact_pod(const char *name, const char *rv) {
  kcr__cobj_t *c = NULL;
  kcr_buf_t b;
  json_t *obj = store_pod(name, rv);
  kcr_buf_init(&b, (size_t)1 << 20);
  assert_int_equal(kcr__cobj_from_tree(obj, &b, &c), 0);
  kcr_buf_free(&b);
  json_decref(obj);
  return c;
}

/* The informer's delete: the deletion's last state, compact, moves the
 * store's resourceVersion forward only (a late one leaves it), and a key
 * already gone still takes the newer version. */
static void test_cobj_store_remove_version(void **state) {
  kcr_store_t *s = NULL;
  kcr__cobj_t *late = compact_pod("f", "250"), *last = compact_pod("f", "301");
  json_t *obj = store_pod("f", "300");
  char rv[32];
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  assert_int_equal(kcr_store_add(s, obj, NULL), 0);
  json_decref(obj);
  assert_int_equal(kcr__store_remove(s, "ns/f", late), 0);
  assert_int_equal(kcr_store_resource_version(s, rv, sizeof(rv)), 0);
  assert_string_equal(rv, "300");
  assert_int_equal(kcr__store_remove(s, "ns/f", last), KCR_ENOENT);
  kcr__cobj_unref(last); /* the store keeps its own reference */
  assert_int_equal(kcr_store_resource_version(s, rv, sizeof(rv)), 0);
  assert_string_equal(rv, "301");
  assert_int_equal(kcr__store_remove(s, "ns/f", NULL), KCR_ENOENT);
  kcr__cobj_unref(late);
  kcr_store_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cobj_accessors),  cmocka_unit_test(test_cobj_slots),
      cmocka_unit_test(test_cobj_from_tree),  cmocka_unit_test(test_cobj_allocation_failures),
      cmocka_unit_test(test_cobj_collapse),   cmocka_unit_test(test_cobj_store_remove_version),
      cmocka_unit_test(test_cobj_parse_meta),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
