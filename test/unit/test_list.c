/* SPDX-License-Identifier: MIT */
/*
 * test_list.c: libkcr's one intrusive list (util/list.h), as the workqueue,
 * the event recorder, the loop, a watch's inbox, the metrics registry, the
 * cache, the controller and cancel tokens use it: a FIFO, removal from
 * anywhere, pushing at the front, taking a whole list out, walking as nodes and
 * as elements, membership, walking while freeing, and a zero-initialised list
 * being valid. The list never allocates, so there is no failure loop; churn is
 * checked against an array model.
 */
#include <stdlib.h>
#include <string.h>

#include "kcr/rand.h"
#include "testutil.h"
#include "util/list.h"

/* pick returns a number in [0, n) from the test's own generator. */
static int pick(uint64_t *rng, int n) {
  return (int)(kcr_rand_next(rng) % (uint64_t)n);
}

typedef struct item {
  int id;
  kcr__list_node_t link;
} item;

static int id_of(const kcr__list_node_t *n) {
  return KCR__CONTAINER_OF(n, item, link)->id;
}

/* expect asserts l holds ids want[0..n) front to back, linked both ways. */
static void expect(const kcr__list_t *l, const int *want, size_t n) {
  size_t i = 0;
  const kcr__list_node_t *prev = NULL;
  KCR__LIST_FOREACH(l, it) {
    assert_true(i < n);
    assert_int_equal(id_of(it), want[i]);
    assert_ptr_equal(it->prev, prev);
    prev = it;
    i++;
  }
  assert_int_equal(i, n);
  assert_ptr_equal(l->last, prev);
  assert_int_equal(kcr__list_empty(l), n == 0);
}

static void test_list_zero_list_is_empty(void **state) {
  kcr__list_t l = {0};
  (void)state;
  assert_true(kcr__list_empty(&l));
  assert_null(kcr__list_pop_front(&l));
  KCR__LIST_FOREACH(&l, n) {
    fail();
  }
  kcr__list_take(&l, &l); /* empty into itself: nothing */
  assert_true(kcr__list_empty(&l));
}

static void test_list_fifo_order(void **state) {
  kcr__list_t l = {0};
  item it[4] = {{0, {0}}, {1, {0}}, {2, {0}}, {3, {0}}};
  const int all[] = {0, 1, 2, 3};
  (void)state;
  for (int i = 0; i < 4; i++)
    kcr__list_push_back(&l, &it[i].link);
  expect(&l, all, 4);
  for (int i = 0; i < 4; i++) {
    kcr__list_node_t *n = kcr__list_pop_front(&l);
    assert_int_equal(id_of(n), i);
    assert_null(n->prev);
    assert_null(n->next);
  }
  assert_true(kcr__list_empty(&l));
  assert_null(l.last);
}

static void test_list_remove_anywhere_and_push_front(void **state) {
  kcr__list_t l = {0};
  item it[5];
  (void)state;
  for (int i = 0; i < 5; i++) {
    it[i].id = i;
    kcr__list_push_back(&l, &it[i].link);
  }
  kcr__list_remove(&l, &it[2].link); /* middle */
  expect(&l, (const int[]){0, 1, 3, 4}, 4);
  kcr__list_remove(&l, &it[0].link); /* first */
  expect(&l, (const int[]){1, 3, 4}, 3);
  kcr__list_remove(&l, &it[4].link); /* last */
  expect(&l, (const int[]){1, 3}, 2);
  kcr__list_push_front(&l, &it[4].link);
  expect(&l, (const int[]){4, 1, 3}, 3);
  kcr__list_remove(&l, &it[1].link);
  kcr__list_remove(&l, &it[3].link);
  kcr__list_remove(&l, &it[4].link); /* the only one */
  expect(&l, NULL, 0);
  kcr__list_push_front(&l, &it[2].link); /* into an empty list */
  expect(&l, (const int[]){2}, 1);
}

static void test_list_take_appends_whole_list(void **state) {
  kcr__list_t a = {0}, b = {0};
  item it[5];
  (void)state;
  for (int i = 0; i < 5; i++) {
    it[i].id = i;
    kcr__list_push_back(i < 2 ? &a : &b, &it[i].link);
  }
  kcr__list_take(&a, &b);
  expect(&a, (const int[]){0, 1, 2, 3, 4}, 5);
  expect(&b, NULL, 0);
  kcr__list_take(&b, &a); /* into an empty list */
  expect(&b, (const int[]){0, 1, 2, 3, 4}, 5);
  expect(&a, NULL, 0);
  kcr__list_take(&b, &a); /* from an empty list */
  expect(&b, (const int[]){0, 1, 2, 3, 4}, 5);
}

static void test_list_foreach_safe_frees(void **state) {
  kcr__list_t l = {0};
  int n = 0;
  (void)state;
  for (int i = 0; i < 10; i++) {
    item *x = malloc(sizeof(*x));
    assert_non_null(x);
    x->id = i;
    kcr__list_push_back(&l, &x->link);
  }
  KCR__LIST_FOREACH_SAFE(&l, it, next) {
    assert_int_equal(id_of(it), n++);
    kcr__list_remove(&l, it);
    free(KCR__CONTAINER_OF(it, item, link));
  }
  assert_int_equal(n, 10);
  assert_true(kcr__list_empty(&l));
}

static void test_list_each_and_linked(void **state) {
  kcr__list_t l = {0}, other = {0};
  item it[3] = {{0, {0}}, {1, {0}}, {2, {0}}};
  int n = 0;
  (void)state;
  KCR__LIST_EACH(&l, item, link, x) {
    (void)x;
    fail();
  }
  for (int i = 0; i < 3; i++) {
    assert_false(kcr__list_linked(&l, &it[i].link));
    kcr__list_push_back(&l, &it[i].link);
    assert_true(kcr__list_linked(&l, &it[i].link));
  }
  assert_false(kcr__list_linked(&other, &it[0].link) && other.first != NULL);
  KCR__LIST_EACH(&l, item, link, x)
  assert_int_equal(x->id, n++);
  assert_int_equal(n, 3);
  kcr__list_remove(&l, &it[0].link); /* the first: prev is NULL in the list too */
  assert_false(kcr__list_linked(&l, &it[0].link));
  assert_true(kcr__list_linked(&l, &it[1].link));
}

/* churn: random pushes at both ends, pops and removals, against an array. */
static void test_list_churn_matches_model(void **state) {
  enum { N = 64 };
  kcr__list_t l = {0};
  item it[N];
  int model[N], nmodel = 0;
  bool in[N] = {false};
  (void)state;
  uint64_t rng = 11; /* a fixed seed: the same sequence every run */
  for (int i = 0; i < N; i++)
    it[i].id = i;
  for (int round = 0; round < 5000; round++) {
    int x = pick(&rng, N);
    if (!in[x]) {
      if (pick(&rng, 2)) {
        kcr__list_push_back(&l, &it[x].link);
        model[nmodel++] = x;
      } else {
        kcr__list_push_front(&l, &it[x].link);
        memmove(model + 1, model, (size_t)nmodel * sizeof(int));
        model[0] = x;
        nmodel++;
      }
      in[x] = true;
    } else if (pick(&rng, 4) == 0) {
      int y = id_of(kcr__list_pop_front(&l));
      assert_int_equal(y, model[0]);
      memmove(model, model + 1, (size_t)(nmodel - 1) * sizeof(int));
      nmodel--;
      in[y] = false;
    } else {
      int j = 0;
      kcr__list_remove(&l, &it[x].link);
      while (model[j] != x)
        j++;
      memmove(model + j, model + j + 1, (size_t)(nmodel - j - 1) * sizeof(int));
      nmodel--;
      in[x] = false;
    }
    expect(&l, model, (size_t)nmodel);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list_zero_list_is_empty),
      cmocka_unit_test(test_list_fifo_order),
      cmocka_unit_test(test_list_remove_anywhere_and_push_front),
      cmocka_unit_test(test_list_take_appends_whole_list),
      cmocka_unit_test(test_list_foreach_safe_frees),
      cmocka_unit_test(test_list_each_and_linked),
      cmocka_unit_test(test_list_churn_matches_model),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
