/* SPDX-License-Identifier: MIT */
/*
 * test_hmap.c: libkcr's one hash map (util/hmap.h), as the cache's store and
 * DeltaFIFO, the workqueue and rate limiters, metrics and events use it: basic
 * operations, seeded and pre-hashed calls, growth, backward-shift deletion
 * across collisions and the table's wrap-around (checked against a reference
 * model), deletion while sweeping, shrinking, reservations that make a sequence
 * of inserts all-or-nothing, and allocation failure at every step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/error.h"
#include "testutil.h"
#include "util/alloc.h"
#include "util/hmap.h"

#define NKEYS 2000

static char keys[NKEYS][16];

static int setup(void **state) {
  (void)state;
  for (int i = 0; i < NKEYS; i++)
    snprintf(keys[i], sizeof(keys[i]), "ns/pod-%d", i);
  return 0;
}

/* check_reachable asserts every occupied slot is found from its home slot. */
static void check_reachable(const kcr__hmap_t *m) {
  size_t n = 0;
  KCR__HMAP_FOREACH(m, s) {
    assert_ptr_equal(kcr__hmap_find(m, s->key), s);
    assert_true(s->hash == kcr__hmap_hash(m, s->key, NULL));
    n++;
  }
  assert_int_equal(n, m->len);
  if (m->cap)
    assert_true(m->len < m->cap && m->len <= m->cap - m->cap / 4);
}

static void test_hmap_zero_map_is_empty(void **state) {
  kcr__hmap_t m = {0};
  (void)state;
  assert_null(kcr__hmap_find(&m, "a"));
  assert_null(kcr__hmap_get(&m, "a"));
  assert_null(kcr__hmap_del(&m, "a"));
  kcr__hmap_shrink(&m);
  KCR__HMAP_FOREACH(&m, s) {
    fail();
  }
  kcr__hmap_free(&m);
  kcr__hmap_free(&m);
}

static void test_hmap_put_get_del(void **state) {
  kcr__hmap_t m = {0};
  int vals[3] = {1, 2, 3};
  (void)state;
  assert_int_equal(kcr__hmap_put(&m, "a", &vals[0]), 0);
  assert_int_equal(kcr__hmap_put(&m, "b", &vals[1]), 0);
  assert_int_equal(kcr__hmap_put(&m, "", &vals[2]), 0); /* the empty key is a key */
  assert_int_equal(m.len, 3);
  assert_ptr_equal(kcr__hmap_get(&m, "a"), &vals[0]);
  assert_ptr_equal(kcr__hmap_get(&m, "b"), &vals[1]);
  assert_ptr_equal(kcr__hmap_get(&m, ""), &vals[2]);
  assert_null(kcr__hmap_get(&m, "c"));
  assert_ptr_equal(kcr__hmap_find(&m, "b")->val, &vals[1]);
  kcr__hmap_find(&m, "b")->val = &vals[0]; /* a slot's value may be replaced in place */
  assert_ptr_equal(kcr__hmap_get(&m, "b"), &vals[0]);
  assert_ptr_equal(kcr__hmap_del(&m, "a"), &vals[0]);
  assert_null(kcr__hmap_del(&m, "a"));
  assert_null(kcr__hmap_get(&m, "a"));
  assert_int_equal(m.len, 2);
  check_reachable(&m);
  kcr__hmap_free(&m);
  assert_int_equal(m.len, 0);
  assert_null(m.slots);
}

/* The map compares whole keys: equal hashes or prefixes never match wrongly. */
static void test_hmap_keys_compare_exactly(void **state) {
  kcr__hmap_t m = {0};
  int v = 0;
  (void)state;
  assert_int_equal(kcr__hmap_put(&m, "default/app", &v), 0);
  assert_null(kcr__hmap_get(&m, "default/ap"));
  assert_null(kcr__hmap_get(&m, "default/app2"));
  assert_null(kcr__hmap_get(&m, "Default/app"));
  assert_non_null(kcr__hmap_get(&m, "default/app"));
  kcr__hmap_free(&m);
}

static void test_hmap_seed_and_hash(void **state) {
  kcr__hmap_t a = {0}, b;
  size_t len = 0;
  (void)state;
  kcr__hmap_init(&b, 0x1234567890abcdefULL);
  assert_true(kcr__hmap_hash(&a, "ns/name", &len) != kcr__hmap_hash(&b, "ns/name", NULL));
  assert_int_equal(len, 7);
  assert_true(kcr__hmap_hash(&b, "ns/name", NULL) == kcr__hmap_hash(&b, "ns/name", NULL));
  /* Every length around the 8-byte word boundary hashes its tail. */
  assert_true(kcr__hmap_hash(&a, "abcdefgh", NULL) != kcr__hmap_hash(&a, "abcdefghi", NULL));
  assert_true(kcr__hmap_hash(&a, "abcdefg", NULL) != kcr__hmap_hash(&a, "abcdefgh", NULL));
  assert_true(kcr__hmap_hash(&a, "", NULL) != kcr__hmap_hash(&a, "a", NULL));
  kcr__hmap_free(&b);
}

/* The workqueue's way: hash before the lock, then the _hashed calls. */
static void test_hmap_hashed_calls(void **state) {
  kcr__hmap_t m;
  int v = 7;
  uint64_t h;
  (void)state;
  kcr__hmap_init(&m, 42);
  h = kcr__hmap_hash(&m, "key", NULL);
  assert_null(kcr__hmap_get_hashed(&m, "key", h));
  assert_int_equal(kcr__hmap_reserve(&m, 1), 0);
  kcr__hmap_insert_hashed(&m, "key", h, &v);
  assert_ptr_equal(kcr__hmap_get_hashed(&m, "key", h), &v);
  assert_ptr_equal(kcr__hmap_get(&m, "key"), &v);
  assert_ptr_equal(kcr__hmap_find_hashed(&m, "key", h)->val, &v);
  assert_ptr_equal(kcr__hmap_del_hashed(&m, "key", h), &v);
  assert_int_equal(m.len, 0);
  kcr__hmap_free(&m);
}

static void test_hmap_grows_and_iterates(void **state) {
  kcr__hmap_t m = {0};
  static unsigned char seen[NKEYS];
  size_t n = 0;
  (void)state;
  for (int i = 0; i < NKEYS; i++)
    assert_int_equal(kcr__hmap_put(&m, keys[i], &seen[i]), 0);
  assert_int_equal(m.len, NKEYS);
  assert_true(m.cap >= NKEYS * 4 / 3 && (m.cap & (m.cap - 1)) == 0);
  check_reachable(&m);
  KCR__HMAP_FOREACH(&m, s) {
    unsigned char *p = s->val;
    assert_ptr_equal(p, &seen[p - seen]);
    assert_string_equal(s->key, keys[p - seen]);
    (*p)++;
    n++;
  }
  assert_int_equal(n, NKEYS);
  for (int i = 0; i < NKEYS; i++)
    assert_int_equal(seen[i], 1);
  kcr__hmap_free(&m);
}

/* Random inserts and deletes against a model: every present key stays found,
 * every removed one stays gone, whatever runs and collisions the churn makes. */
static void test_hmap_churn_matches_model(void **state) {
  kcr__hmap_t m;
  static int present[NKEYS];
  unsigned rng = 12345;
  (void)state;
  memset(present, 0, sizeof(present));
  kcr__hmap_init(&m, 99);
  for (int step = 0; step < 200000; step++) {
    int k;
    rng = rng * 1103515245u + 12345u;
    k = (int)((rng >> 8) % 300); /* few keys: a small, crowded table */
    if (present[k]) {
      assert_ptr_equal(kcr__hmap_del(&m, keys[k]), &present[k]);
      present[k] = 0;
    } else {
      assert_int_equal(kcr__hmap_put(&m, keys[k], &present[k]), 0);
      present[k] = 1;
    }
    if (step % 997 == 0) {
      check_reachable(&m);
      for (int i = 0; i < 300; i++)
        assert_true((kcr__hmap_get(&m, keys[i]) != NULL) == (present[i] != 0));
    }
  }
  kcr__hmap_free(&m);
}

/* Keys whose home is the last slot make a run that wraps to slot 0; deleting
 * from it must move the wrapped entries back across the end of the table. */
static void test_hmap_delete_across_wraparound(void **state) {
  kcr__hmap_t m = {0};
  char wrap[6][16];
  int nw = 0, v[6];
  (void)state;
  assert_int_equal(kcr__hmap_reserve(&m, 6), 0);
  assert_int_equal(m.cap, 8); /* 6 entries, 3/4 load: 8 slots */
  for (int i = 0; nw < 6 && i < 100000; i++) {
    char k[16];
    snprintf(k, sizeof(k), "w%d", i);
    if ((kcr__hmap_hash(&m, k, NULL) & 7) == 7 - (nw < 3 ? 0 : 1))
      snprintf(wrap[nw++], sizeof(wrap[0]), "%s", k);
  }
  assert_int_equal(nw, 6);
  for (int i = 0; i < 6; i++)
    kcr__hmap_insert(&m, wrap[i], &v[i]);
  check_reachable(&m);
  assert_non_null(m.slots[0].key); /* the run wrapped */
  for (int i = 0; i < 6; i++) {
    assert_ptr_equal(kcr__hmap_del(&m, wrap[i]), &v[i]);
    check_reachable(&m);
    for (int j = i + 1; j < 6; j++)
      assert_ptr_equal(kcr__hmap_get(&m, wrap[j]), &v[j]);
  }
  kcr__hmap_free(&m);
}

/* The cache's ryow sweep and the event recorder's eviction: delete while
 * walking the slots, looking at a slot again after a delete. */
static void test_hmap_sweep_deletes_while_walking(void **state) {
  kcr__hmap_t m = {0};
  static int val[NKEYS];
  size_t i = 0;
  (void)state;
  for (int k = 0; k < 500; k++) {
    val[k] = k;
    assert_int_equal(kcr__hmap_put(&m, keys[k], &val[k]), 0);
  }
  while (i < m.cap) {
    kcr__hmap_slot_t *s = &m.slots[i];
    if (s->key && *(int *)s->val % 3 != 0) {
      (void)kcr__hmap_del(&m, s->key);
      continue;
    }
    i++;
  }
  for (int k = 0; k < 500; k++)
    assert_true((kcr__hmap_get(&m, keys[k]) != NULL) == (k % 3 == 0));
  check_reachable(&m);
  kcr__hmap_free(&m);
}

static void test_hmap_shrink(void **state) {
  kcr__hmap_t m = {0};
  int v = 0;
  size_t big;
  (void)state;
  for (int k = 0; k < 1000; k++)
    assert_int_equal(kcr__hmap_put(&m, keys[k], &v), 0);
  big = m.cap;
  for (int k = 0; k < 1000; k++) {
    size_t before = m.cap;
    (void)kcr__hmap_del(&m, keys[k]);
    kcr__hmap_shrink(&m);
    assert_true(m.cap == before || m.cap == before / 2); /* one step at a time */
    check_reachable(&m);
  }
  assert_true(m.cap < big);
  assert_int_equal(m.cap, KCR__HMAP_SHRINK_MIN); /* never below the floor */
  kcr__hmap_shrink(&m);
  assert_int_equal(m.cap, KCR__HMAP_SHRINK_MIN);
  /* A failed shrink keeps the larger table, and the map stays whole. */
  for (int k = 0; k < 100; k++)
    assert_int_equal(kcr__hmap_put(&m, keys[k], &v), 0);
  for (int k = 0; k < 95; k++)
    (void)kcr__hmap_del(&m, keys[k]);
  big = m.cap;
  kcr_test_alloc_install();
  kcr_test_alloc_fail_at(1);
  kcr__hmap_shrink(&m);
  kcr_test_alloc_fail_at(0);
  kcr_test_alloc_uninstall();
  assert_int_equal(m.cap, big);
  check_reachable(&m);
  kcr__hmap_free(&m);
}

/* reserve(n) first, then n inserts that cannot fail: the store's all-or-nothing
 * replace. Deletes in between keep the reservation. */
static void test_hmap_reserve_holds(void **state) {
  kcr__hmap_t m = {0};
  int v = 0;
  size_t cap;
  (void)state;
  assert_int_equal(kcr__hmap_reserve(&m, 0), 0);
  assert_int_equal(kcr__hmap_reserve(&m, 100), 0);
  cap = m.cap;
  for (int k = 0; k < 50; k++)
    kcr__hmap_insert(&m, keys[k], &v);
  for (int k = 0; k < 10; k++)
    (void)kcr__hmap_del(&m, keys[k]);
  for (int k = 50; k < 110; k++)
    kcr__hmap_insert(&m, keys[k], &v);
  assert_int_equal(m.cap, cap); /* no allocation after the reservation */
  assert_int_equal(m.len, 100);
  assert_int_equal(kcr__hmap_reserve(&m, SIZE_MAX), KCR_ENOMEM); /* overflow, unchanged */
  assert_int_equal(kcr__hmap_reserve(&m, SIZE_MAX / 2), KCR_ENOMEM);
  assert_int_equal(m.len, 100);
  check_reachable(&m);
  kcr__hmap_free(&m);
}

/* fill puts n keys one by one; any failure leaves the map as it was before it. */
static int fill(kcr__hmap_t *m, int n) {
  for (int k = 0; k < n; k++) {
    size_t len = m->len;
    if (kcr__hmap_put(m, keys[k], keys[k]) != 0) {
      assert_int_equal(m->len, len);
      check_reachable(m);
      return KCR_ENOMEM;
    }
  }
  return 0;
}

static void test_hmap_alloc_failure(void **state) {
  kcr__hmap_t m = {0};
  (void)state;
  KCR_TEST_ALLOC_LOOP(fill(&m, 300), kcr__hmap_free(&m));
  /* A failed reserve leaves the map unchanged and usable. */
  assert_int_equal(fill(&m, 10), 0);
  KCR_TEST_ALLOC_LOOP(kcr__hmap_reserve(&m, 1000), (check_reachable(&m), (void)0));
  assert_int_equal(m.len, 10);
  kcr__hmap_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hmap_zero_map_is_empty),
      cmocka_unit_test(test_hmap_put_get_del),
      cmocka_unit_test(test_hmap_keys_compare_exactly),
      cmocka_unit_test(test_hmap_seed_and_hash),
      cmocka_unit_test(test_hmap_hashed_calls),
      cmocka_unit_test(test_hmap_grows_and_iterates),
      cmocka_unit_test(test_hmap_churn_matches_model),
      cmocka_unit_test(test_hmap_delete_across_wraparound),
      cmocka_unit_test(test_hmap_sweep_deletes_while_walking),
      cmocka_unit_test(test_hmap_shrink),
      cmocka_unit_test(test_hmap_reserve_holds),
      cmocka_unit_test(test_hmap_alloc_failure),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
