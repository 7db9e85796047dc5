/* SPDX-License-Identifier: MIT */
/*
 * test_heap.c: libkcr's one binary min-heap (util/heap.h), as the workqueue's
 * delaying queue and the event sender use it: order by key then tie, taking a
 * node out from anywhere, changing a key in place, clearing, churn checked
 * against a sorted reference, reservations that make pushes infallible, the
 * size bound, and allocation failure at every step.
 */
#include <stdlib.h>
#include <string.h>

#include "kcr/error.h"
#include "kcr/rand.h"
#include "testutil.h"
#include "util/alloc.h"
#include "util/heap.h"

/* pick returns a number in [0, n) from the test's own generator. */
static int pick(uint64_t *rng, int n) {
  return (int)(kcr_rand_next(rng) % (uint64_t)n);
}

typedef struct item {
  int id;
  kcr__heap_node_t node;
} item;

#define N 500

static item *of(kcr__heap_node_t *n) {
  return KCR__CONTAINER_OF(n, item, node);
}

/* check_shape asserts the heap property and every node's index. */
static void check_shape(const kcr__heap_t *h) {
  for (size_t i = 0; i < h->len; i++) {
    assert_int_equal(h->v[i]->idx, i);
    if (i > 0) {
      const kcr__heap_node_t *p = h->v[(i - 1) / 2], *c = h->v[i];
      assert_true(p->key < c->key || (p->key == c->key && p->tie <= c->tie));
    }
  }
}

static void test_heap_zero_heap_is_empty(void **state) {
  kcr__heap_t h = {0};
  (void)state;
  assert_null(kcr__heap_top(&h));
  assert_null(kcr__heap_pop(&h));
  kcr__heap_clear(&h);
  kcr__heap_free(&h);
  kcr__heap_free(&h);
}

static void test_heap_orders_by_key_then_tie(void **state) {
  kcr__heap_t h = {0};
  item it[6];
  const int64_t keys[6] = {30, 10, 20, 10, 30, 10};
  const int want[6] = {1, 3, 5, 2, 0, 4};
  (void)state;
  assert_int_equal(kcr__heap_reserve(&h, 6), 0);
  for (int i = 0; i < 6; i++) {
    it[i].id = i;
    kcr__heap_node_init(&it[i].node);
    assert_false(kcr__heap_node_filed(&it[i].node));
    kcr__heap_push(&h, &it[i].node, keys[i], (uint64_t)i);
    assert_true(kcr__heap_node_filed(&it[i].node));
    check_shape(&h);
  }
  for (int i = 0; i < 6; i++) {
    kcr__heap_node_t *n = kcr__heap_pop(&h);
    assert_non_null(n);
    assert_int_equal(of(n)->id, want[i]);
    assert_false(kcr__heap_node_filed(n));
    check_shape(&h);
  }
  assert_null(kcr__heap_pop(&h));
  kcr__heap_free(&h);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* churn: pushes, removals from the middle and re-keys, against a sorted model. */
static void test_heap_churn_matches_model(void **state) {
  kcr__heap_t h = {0};
  static item it[N];
  int64_t model[N];
  size_t nmodel = 0;
  (void)state;
  uint64_t rng = 7; /* a fixed seed: the same sequence every run */
  assert_int_equal(kcr__heap_reserve(&h, N), 0);
  for (int i = 0; i < N; i++) {
    it[i].id = i;
    kcr__heap_node_init(&it[i].node);
    kcr__heap_push(&h, &it[i].node, pick(&rng, 100), (uint64_t)i);
  }
  check_shape(&h);
  for (int round = 0; round < 4 * N; round++) {
    item *x = &it[pick(&rng, N)];
    int op = pick(&rng, 3);
    if (!kcr__heap_node_filed(&x->node))
      kcr__heap_push(&h, &x->node, pick(&rng, 100), (uint64_t)round);
    else if (op == 0)
      kcr__heap_remove(&h, &x->node);
    else
      kcr__heap_rekey(&h, &x->node, pick(&rng, 100), x->node.tie);
    check_shape(&h);
  }
  for (int i = 0; i < N; i++)
    if (kcr__heap_node_filed(&it[i].node))
      model[nmodel++] = it[i].node.key;
  assert_int_equal(nmodel, h.len);
  qsort(model, nmodel, sizeof(model[0]), cmp_i64);
  for (size_t i = 0; i < nmodel; i++)
    assert_int_equal(kcr__heap_pop(&h)->key, model[i]);
  assert_int_equal(h.len, 0);
  kcr__heap_free(&h);
}

static void test_heap_remove_last_and_top(void **state) {
  kcr__heap_t h = {0};
  item a = {1, {0}}, b = {2, {0}}, c = {3, {0}};
  (void)state;
  kcr__heap_node_init(&a.node);
  kcr__heap_node_init(&b.node);
  kcr__heap_node_init(&c.node);
  assert_int_equal(kcr__heap_reserve(&h, 3), 0);
  kcr__heap_push(&h, &a.node, 1, 0);
  kcr__heap_push(&h, &b.node, 2, 0);
  kcr__heap_push(&h, &c.node, 3, 0);
  kcr__heap_remove(&h, h.v[h.len - 1]); /* the last slot: nothing moves */
  check_shape(&h);
  kcr__heap_remove(&h, &a.node); /* the top */
  assert_ptr_equal(kcr__heap_top(&h), &b.node);
  kcr__heap_rekey(&h, &b.node, 10, 0);
  assert_ptr_equal(kcr__heap_top(&h), &b.node);
  kcr__heap_clear(&h);
  assert_false(kcr__heap_node_filed(&b.node));
  assert_null(kcr__heap_top(&h));
  /* clear keeps the reservation */
  assert_true(h.cap >= 3);
  kcr__heap_push(&h, &a.node, 5, 0);
  kcr__heap_free(&h);
}

static void test_heap_reserve_holds_and_is_bounded(void **state) {
  kcr__heap_t h = {0};
  (void)state;
  assert_int_equal(kcr__heap_reserve(&h, 0), 0);
  assert_null(h.v);
  assert_int_equal(kcr__heap_reserve(&h, 17), 0);
  assert_true(h.cap >= 17);
  assert_int_equal(kcr__heap_reserve(&h, 5), 0); /* never shrinks */
  assert_true(h.cap >= 17);
  assert_int_equal(kcr__heap_reserve(&h, KCR__HEAP_MAX + 1), KCR_ENOMEM);
  assert_int_equal(kcr__heap_reserve(&h, SIZE_MAX), KCR_ENOMEM);
  assert_true(h.cap >= 17);
  kcr__heap_free(&h);
}

/* fill reserves one slot at a time, as the workqueue does, and pushes. */
static int fill(kcr__heap_t *h, item *it, int n) {
  for (int i = 0; i < n; i++) {
    int rc = kcr__heap_reserve(h, h->len + 1);
    if (rc)
      return rc;
    kcr__heap_node_init(&it[i].node);
    kcr__heap_push(h, &it[i].node, n - i, 0);
  }
  return 0;
}

static void test_heap_alloc_failure(void **state) {
  kcr__heap_t h = {0};
  static item it[N];
  (void)state;
  KCR_TEST_ALLOC_LOOP(fill(&h, it, N), (check_shape(&h), kcr__heap_free(&h)));
  /* A failed reserve leaves the heap unchanged and usable. */
  assert_int_equal(fill(&h, it, 10), 0);
  KCR_TEST_ALLOC_LOOP(kcr__heap_reserve(&h, 1000), (check_shape(&h), (void)0));
  assert_int_equal(h.len, 10);
  assert_int_equal(kcr__heap_top(&h)->key, 1);
  kcr__heap_free(&h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_heap_zero_heap_is_empty),
      cmocka_unit_test(test_heap_orders_by_key_then_tie),
      cmocka_unit_test(test_heap_churn_matches_model),
      cmocka_unit_test(test_heap_remove_last_and_top),
      cmocka_unit_test(test_heap_reserve_holds_and_is_bounded),
      cmocka_unit_test(test_heap_alloc_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
