/* SPDX-License-Identifier: MIT */
/* testutil.c: the counting, failing allocator behind KCR_TEST_ALLOC_LOOP, and
 * the small helpers testutil.h declares (reading a test file, comparing JSON). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "kcr/common.h"
#include "kcr/manager.h"
#include "testutil.h"

static atomic_int thread_failures; /* KCR_TEST_THREAD_CHECK */

void kcr_test_thread_failed(void) {
  atomic_fetch_add(&thread_failures, 1);
}

int kcr_test_check_threads(void **state) {
  (void)state;
  return atomic_exchange(&thread_failures, 0) ? -1 : 0;
}

static atomic_long countdown; /* allocations left before failing; 0: never fail */
static atomic_int failed;

static int should_fail(void) {
  long left = atomic_load(&countdown);
  if (left == 0)
    return 0;
  if (left == 1 || atomic_fetch_sub(&countdown, 1) <= 1) {
    atomic_store(&countdown, 1);
    atomic_store(&failed, 1);
    return 1;
  }
  return 0;
}

static void *counting_malloc(size_t n) {
  return should_fail() ? NULL : malloc(n);
}

static void *counting_realloc(void *p, size_t n) {
  return should_fail() ? NULL : realloc(p, n);
}

void kcr_test_alloc_install(void) {
  atomic_store(&countdown, 0);
  atomic_store(&failed, 0);
  kcr_set_alloc_funcs(counting_malloc, counting_realloc, free);
}

void kcr_test_alloc_uninstall(void) {
  kcr_set_alloc_funcs(NULL, NULL, NULL);
}

void kcr_test_alloc_fail_at(long n) {
  atomic_store(&failed, 0);
  atomic_store(&countdown, n);
}

int kcr_test_alloc_failed(void) {
  return atomic_load(&failed);
}

static void *manager_main(void *arg) {
  kcr_test_manager_run *r = arg;
  r->rc = kcr_manager_run(r->m, NULL);
  return NULL;
}

void kcr_test_manager_start(kcr_test_manager_run *r, kcr_manager_t *m) {
  r->m = m;
  r->rc = 0;
  assert_int_equal(pthread_create(&r->th, NULL, manager_main, r), 0);
}

int kcr_test_manager_stop(kcr_test_manager_run *r) {
  kcr_manager_request_stop(r->m);
  pthread_join(r->th, NULL);
  return r->rc;
}

char *kcr_test_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t cap = 0;
  if (!f)
    fail_msg("%s: cannot open", path);
  *len = 0;
  for (;;) {
    if (cap - *len < 4096) {
      char *nb = realloc(buf, cap = cap * 2 + 4096);
      assert_non_null(nb);
      buf = nb;
    }
    size_t got = fread(buf + *len, 1, cap - *len - 1, f);
    *len += got;
    if (got == 0)
      break;
  }
  assert_false(ferror(f));
  fclose(f);
  buf[*len] = '\0';
  return buf;
}

void kcr_test_assert_json_equal(const json_t *want, const json_t *got) {
  if (!json_equal(want, got)) {
    char *w = json_dumps(want, JSON_SORT_KEYS | JSON_INDENT(1));
    char *g = json_dumps(got, JSON_SORT_KEYS | JSON_INDENT(1));
    print_error("want:\n%s\ngot:\n%s\n", w, g);
    free(w);
    free(g);
    fail();
  }
}
