/* SPDX-License-Identifier: MIT */
/* test_loop.c: the I/O loop's thread, posting, ordering and shutdown. */
#include <pthread.h>
#include <stdatomic.h>

#include "kcr/loop.h"
#include "testutil.h"

struct counter {
  atomic_int n;
  atomic_int on_loop;
  int order[100];
  atomic_int next;
};

static void on_work(kcr_loop_t *loop, void *data) {
  struct counter *c = data;
  if (kcr_loop_on_thread(loop))
    atomic_fetch_add(&c->on_loop, 1);
  atomic_fetch_add(&c->n, 1);
}

static void test_loop_runs_posts_on_its_thread(void **state) {
  kcr_loop_t *loop;
  struct counter c = {0};
  (void)state;
  assert_int_equal(kcr_loop_create(&loop, NULL), 0);
  assert_int_equal(kcr_loop_start(loop, NULL), 0);
  assert_int_equal(kcr_loop_start(loop, NULL), KCR_EINVAL);
  assert_false(kcr_loop_on_thread(loop));
  for (int i = 0; i < 50; i++)
    assert_int_equal(kcr_loop_post(loop, on_work, &c), 0);
  kcr_loop_stop(loop); /* runs what was posted first */
  assert_int_equal(atomic_load(&c.n), 50);
  assert_int_equal(atomic_load(&c.on_loop), 50);
  assert_int_equal(kcr_loop_post(loop, on_work, &c), KCR_ECLOSED);
  kcr_loop_stop(loop);    /* idempotent */
  kcr_loop_destroy(loop); /* asserts uv_loop_close() == 0 */
}

struct ordered {
  int seen[64];
  int n; /* loop thread only */
};

static void on_ordered(kcr_loop_t *loop, void *data) {
  static int counter;
  struct ordered *o = data;
  (void)loop;
  o->seen[o->n++] = counter++;
}

static void test_loop_keeps_post_order(void **state) {
  kcr_loop_t *loop;
  struct ordered o = {{0}, 0};
  (void)state;
  assert_int_equal(kcr_loop_create(&loop, NULL), 0);
  assert_int_equal(kcr_loop_start(loop, NULL), 0);
  for (int i = 0; i < 64; i++)
    kcr_loop_post(loop, on_ordered, &o);
  kcr_loop_destroy(loop);
  assert_int_equal(o.n, 64);
  for (int i = 1; i < 64; i++)
    assert_int_equal(o.seen[i], o.seen[i - 1] + 1);
}

struct poster {
  kcr_loop_t *loop;
  struct counter *c;
};

static void *post_many(void *arg) {
  struct poster *p = arg;
  for (int i = 0; i < 1000; i++)
    kcr_loop_post(p->loop, on_work, p->c);
  return NULL;
}

static void test_loop_posts_from_many_threads_coalesce(void **state) {
  kcr_loop_t *loop;
  struct counter c = {0};
  struct poster p;
  pthread_t th[4];
  kcr_loop_stats st;
  (void)state;
  assert_int_equal(kcr_loop_create(&loop, NULL), 0);
  assert_int_equal(kcr_loop_start(loop, NULL), 0);
  p.loop = loop;
  p.c = &c;
  for (int i = 0; i < 4; i++)
    pthread_create(&th[i], NULL, post_many, &p);
  for (int i = 0; i < 4; i++)
    pthread_join(th[i], NULL);
  kcr_loop_stop(loop);
  assert_int_equal(atomic_load(&c.n), 4000);
  kcr_loop_get_stats(loop, &st);
  assert_true(st.wakeups >= 1 && st.wakeups <= 4001);
  kcr_loop_destroy(loop);
}

static void test_loop_destroy_without_start(void **state) {
  kcr_loop_t *loop;
  struct counter c = {0};
  (void)state;
  assert_int_equal(kcr_loop_create(&loop, NULL), 0);
  assert_int_equal(kcr_loop_post(loop, on_work, &c), 0);
  kcr_loop_destroy(loop);
  assert_int_equal(atomic_load(&c.n), 1);
  kcr_loop_destroy(NULL);
}

static kcr_loop_t *made;

static void test_loop_allocation_failure(void **state) {
  (void)state;
  KCR_TEST_ALLOC_LOOP(kcr_loop_create(&made, NULL), (kcr_loop_destroy(made), made = NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loop_runs_posts_on_its_thread),
      cmocka_unit_test(test_loop_keeps_post_order),
      cmocka_unit_test(test_loop_posts_from_many_threads_coalesce),
      cmocka_unit_test(test_loop_destroy_without_start),
      cmocka_unit_test(test_loop_allocation_failure),
  };
  return cmocka_run_group_tests_name("loop", tests, NULL, NULL);
}
