/* SPDX-License-Identifier: MIT */
/*
 * procstat.h: what the cache-sync contestants written in C (cache_sync.c,
 * null_reader.c) read about themselves: a monotonic clock, the CPU used, and
 * fields of /proc/self/status. Header-only: each is one file built with cc.
 */
#ifndef KCR_BENCH_PROCSTAT_H
#define KCR_BENCH_PROCSTAT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* cpu_s: user + system CPU of the process so far. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* status_kb reads one "Name:   123 kB" field of /proc/self/status. */
static long status_kb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(field);
  if (!f)
    return -1;
  while (fgets(line, sizeof(line), f))
    if (strncmp(line, field, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

#endif
