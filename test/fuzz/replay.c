/* SPDX-License-Identifier: MIT */
/*
 * replay.c: a main for a fuzz target built without libFuzzer (any compiler):
 * runs every file named on the command line, or found in a directory named
 * there, through LLVMFuzzerTestOneInput once. CTest runs each target over its
 * corpus this way, so every seed and every crash ever found is a regression test
 * in the ordinary, sanitizer and valgrind runs.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* run_file feeds one file to the target; returns 0, or -1 if it cannot be read. */
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  long n;

  if (!f) {
    perror(path);
    return -1;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    perror(path);
    fclose(f);
    return -1;
  }
  /* a copy of exactly the file's size, so ASan sees reads past the input's end */
  buf = malloc(n ? (size_t)n : 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    perror(path);
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

/* run_dir feeds every regular file of dir; returns how many, or -1. */
static int run_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4096];
  int count = 0;

  if (!d) {
    perror(dir);
    return -1;
  }
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (run_file(path) != 0) {
      closedir(d);
      return -1;
    }
    count++;
  }
  closedir(d);
  return count;
}

int main(int argc, char **argv) {
  int total = 0;

  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    struct stat st;
    int n;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      return 1;
    }
    n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
    if (n < 0)
      return 1;
    total += S_ISDIR(st.st_mode) ? n : 1;
  }
  printf("%s: %d inputs, no crash\n", argv[0], total);
  /* an empty corpus would make the test pass vacuously */
  return total > 0 ? 0 : 1;
}
