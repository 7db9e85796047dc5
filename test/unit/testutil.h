/* SPDX-License-Identifier: MIT */
/*
 * testutil.h: helpers shared by the unit tests: cmocka's includes in the order it
 * needs them, a counting allocator that can fail the Nth allocation, for the
 * allocation-failure loops STYLE.md asks of every parser and constructor, and
 * a whole-file reader and a JSON comparison that prints both sides.
 */
#ifndef KCR_TESTUTIL_H
#define KCR_TESTUTIL_H

#include <pthread.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

/*
 * kcr_test_alloc_install routes kcr's allocations through the counting allocator
 * and stops failing; kcr_test_alloc_uninstall restores malloc.
 */
void kcr_test_alloc_install(void);
void kcr_test_alloc_uninstall(void);

/* kcr_test_alloc_fail_at makes allocation number n (1-based, counted from this
 * call) and every later one fail; 0 never fails. */
void kcr_test_alloc_fail_at(long n);

/* kcr_test_alloc_failed tells whether any allocation failed since fail_at. */
int kcr_test_alloc_failed(void);

/*
 * kcr_test_slurp reads the whole file at path into a new NUL-terminated
 * buffer (free with free) and its length, without the NUL, into *len; the
 * test fails when it cannot.
 */
char *kcr_test_slurp(const char *path, size_t *len);

struct json_t;

/*
 * kcr_test_assert_json_equal fails the test, printing both values (keys
 * sorted), when want and got (borrowed) are not equal JSON.
 */
void kcr_test_assert_json_equal(const struct json_t *want, const struct json_t *got);

/*
 * KCR_TEST_ALLOC_LOOP(call, cleanup) runs `call` (an expression yielding an int
 * kcr_err) with allocation 1, 2, 3... failing, until a run completes without any
 * failed allocation. Every run in which an allocation failed must return
 * KCR_ENOMEM; `cleanup` runs after each run (success or not) to release what it
 * made. The final, successful run must return 0. Leaks show under valgrind/ASan.
 */
#define KCR_TEST_ALLOC_LOOP(call, cleanup)                                                         \
  do {                                                                                             \
    kcr_test_alloc_install();                                                                      \
    for (long n_ = 1;; n_++) {                                                                     \
      int rc_;                                                                                     \
      kcr_test_alloc_fail_at(n_);                                                                  \
      rc_ = (call);                                                                                \
      if (!kcr_test_alloc_failed()) {                                                              \
        kcr_test_alloc_fail_at(0);                                                                 \
        assert_int_equal(rc_, 0);                                                                  \
        cleanup;                                                                                   \
        break;                                                                                     \
      }                                                                                            \
      kcr_test_alloc_fail_at(0);                                                                   \
      assert_int_equal(rc_, KCR_ENOMEM);                                                           \
      cleanup;                                                                                     \
      assert_true(n_ < 100000);                                                                    \
    }                                                                                              \
    kcr_test_alloc_uninstall();                                                                    \
  } while (0)

/*
 * KCR_TEST_THREAD_CHECK(cond) counts a failed check on a thread other than
 * the test's, where cmocka's assertions must not run (they longjmp to the
 * main thread's frame); kcr_test_check_threads, a teardown, fails the test
 * when any was counted, and starts the count over.
 */
#define KCR_TEST_THREAD_CHECK(cond)                                                                \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      kcr_test_thread_failed();                                                                    \
  } while (0)
void kcr_test_thread_failed(void);
int kcr_test_check_threads(void **state);

/*
 * kcr_test_manager_run: a manager's kcr_manager_run on a thread of its own.
 * kcr_test_manager_start starts it (m borrowed); kcr_test_manager_stop asks
 * it to stop, joins it and returns what kcr_manager_run returned.
 */
typedef struct kcr_test_manager_run {
  struct kcr_manager *m;
  pthread_t th;
  int rc;
} kcr_test_manager_run;

void kcr_test_manager_start(kcr_test_manager_run *r, struct kcr_manager *m);
int kcr_test_manager_stop(kcr_test_manager_run *r);

#endif /* KCR_TESTUTIL_H */
