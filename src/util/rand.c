/* SPDX-License-Identifier: MIT */
/*
 * rand.c: splitmix64 for jitter (fast, good enough for spreading retries, and its
 * state is one word the owner keeps) and getrandom(2) for seeds and UUIDs.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

#include "kcr/error.h"
#include "kcr/rand.h"

static int fill(void *p, size_t n) {
  unsigned char *b = p;
  while (n > 0) {
    ssize_t r = getrandom(b, n, 0);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return KCR_ESYS;
    }
    b += r;
    n -= (size_t)r;
  }
  return 0;
}

uint64_t kcr_rand_seed(void) {
  uint64_t s = 0;
  if (fill(&s, sizeof(s)) != 0 || s == 0)
    s = 0x9e3779b97f4a7c15u ^ (uint64_t)(uintptr_t)&s;
  return s;
}

uint64_t kcr_rand_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

double kcr_rand_double(uint64_t *state) {
  return (double)(kcr_rand_next(state) >> 11) * 0x1.0p-53;
}

int kcr_uuid_v4(char out[KCR_UUID_BUFSIZE]) {
  unsigned char b[16];
  if (fill(b, sizeof(b)) != 0)
    return KCR_ESYS;
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(out, KCR_UUID_BUFSIZE,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
           b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return 0;
}
