/* SPDX-License-Identifier: MIT */
/*
 * test_file.c: the bounded small-file reader (util/file.h): missing, directory,
 * empty, exact size, one byte over, files whose size stat cannot tell (a FIFO,
 * /proc), and allocation failure at every step.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcr/error.h"
#include "testutil.h"
#include "util/alloc.h"
#include "util/file.h"

typedef struct fixture {
  char dir[64];
  char path[128];
} fixture;

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof(*fx));
  snprintf(fx->dir, sizeof(fx->dir), "/tmp/kcr-file-XXXXXX");
  if (!fx || !mkdtemp(fx->dir))
    return -1;
  snprintf(fx->path, sizeof(fx->path), "%s/f", fx->dir);
  signal(SIGPIPE, SIG_IGN); /* a FIFO writer whose reader gave up gets EPIPE */
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  unlink(fx->path);
  rmdir(fx->dir);
  free(fx);
  return 0;
}

static void write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static void test_file_missing(void **state) {
  fixture *fx = *state;
  kcr_error_t err = {0};
  char *out = (char *)"x";
  size_t len = 7;
  assert_int_equal(kcr__read_file(fx->path, 100, "token file", &out, &len, &err), KCR_ENOENT);
  assert_null(out);
  assert_int_equal(len, 0);
  assert_non_null(strstr(err.message, "token file"));
  assert_non_null(strstr(err.message, fx->path));
  assert_non_null(strstr(err.message, "no such file"));
}

static void test_file_directory(void **state) {
  fixture *fx = *state;
  kcr_error_t err = {0};
  char *out;
  assert_int_equal(kcr__read_file(fx->dir, 100, "kubeconfig", &out, NULL, &err), KCR_EIO);
  assert_null(out);
  assert_non_null(strstr(err.message, "is a directory"));
}

static void test_file_empty(void **state) {
  fixture *fx = *state;
  char *out;
  size_t len = 7;
  write_file(fx->path, "", 0);
  assert_int_equal(kcr__read_file(fx->path, 100, "namespace", &out, &len, NULL), 0);
  assert_non_null(out);
  assert_string_equal(out, "");
  assert_int_equal(len, 0);
  kcr__free(out);
}

static void test_file_exact_size_and_one_over(void **state) {
  fixture *fx = *state;
  kcr_error_t err = {0};
  char data[101], *out;
  size_t len;
  memset(data, 's', sizeof(data));
  write_file(fx->path, data, 100);
  assert_int_equal(kcr__read_file(fx->path, 100, "token file", &out, &len, NULL), 0);
  assert_int_equal(len, 100);
  assert_memory_equal(out, data, 100);
  assert_int_equal(out[100], '\0');
  kcr__free(out);

  write_file(fx->path, data, 101);
  assert_int_equal(kcr__read_file(fx->path, 100, "token file", &out, &len, &err), KCR_ETOOBIG);
  assert_null(out);
  assert_int_equal(len, 0);
  assert_non_null(strstr(err.message, "limit of 100 bytes"));
  assert_null(strstr(err.message, "sss")); /* never the contents */
}

/* A file with no size to stat: /proc reports 0 for what it generates. */
static void test_file_proc_unknown_size(void **state) {
  kcr_error_t err = {0};
  char *out;
  size_t len;
  (void)state;
  assert_int_equal(kcr__read_file("/proc/self/stat", 1 << 16, "stat", &out, &len, NULL), 0);
  assert_true(len > 10);
  assert_int_equal(strlen(out), len);
  kcr__free(out);
  assert_int_equal(kcr__read_file("/proc/self/stat", 4, "stat", &out, &len, &err), KCR_ETOOBIG);
  assert_null(out);
}

typedef struct writer {
  const char *path;
  size_t n;
  pthread_t thread;
} writer;

static void *write_fifo(void *arg) {
  writer *w = arg;
  char chunk[1000];
  int fd = open(w->path, O_WRONLY);
  memset(chunk, 'f', sizeof(chunk));
  for (size_t done = 0; fd >= 0 && done < w->n;) {
    size_t k = w->n - done < sizeof(chunk) ? w->n - done : sizeof(chunk);
    ssize_t m = write(fd, chunk, k);
    if (m <= 0)
      break; /* EPIPE: the reader stopped */
    done += (size_t)m;
  }
  if (fd >= 0)
    close(fd);
  return NULL;
}

static void start_writer(writer *w, const char *path, size_t n) {
  w->path = path;
  w->n = n;
  assert_int_equal(pthread_create(&w->thread, NULL, write_fifo, w), 0);
}

/* read_fifo reads a FIFO fed n bytes: the buffer grows past its first page. */
static int read_fifo(const char *path, size_t n, size_t max, char **out, size_t *len) {
  writer w;
  int rc;
  start_writer(&w, path, n);
  rc = kcr__read_file(path, max, "fifo", out, len, NULL);
  pthread_join(w.thread, NULL);
  return rc;
}

static void test_file_fifo_grows_to_max(void **state) {
  fixture *fx = *state;
  char *out;
  size_t len;
  assert_int_equal(mkfifo(fx->path, 0600), 0);
  assert_int_equal(read_fifo(fx->path, 10000, 10000, &out, &len), 0);
  assert_int_equal(len, 10000);
  assert_int_equal(out[0], 'f');
  assert_int_equal(out[9999], 'f');
  assert_int_equal(out[10000], '\0');
  kcr__free(out);
  assert_int_equal(read_fifo(fx->path, 10001, 10000, &out, &len), KCR_ETOOBIG);
  assert_null(out);
}

static void test_file_alloc_failure(void **state) {
  fixture *fx = *state;
  char *out = NULL;
  size_t len = 0;
  write_file(fx->path, "token", 5);
  KCR_TEST_ALLOC_LOOP(kcr__read_file(fx->path, 100, "token file", &out, &len, NULL),
                      (kcr__free(out), out = NULL));
  unlink(fx->path);
  assert_int_equal(mkfifo(fx->path, 0600), 0);
  KCR_TEST_ALLOC_LOOP(read_fifo(fx->path, 9000, 20000, &out, &len), (kcr__free(out), out = NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_file_missing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_directory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_empty, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_exact_size_and_one_over, setup, teardown),
      cmocka_unit_test(test_file_proc_unknown_size),
      cmocka_unit_test_setup_teardown(test_file_fifo_grows_to_max, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_alloc_failure, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
