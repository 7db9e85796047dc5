/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h: what every fuzz target shares: libFuzzer's entry point, and a check
 * that aborts (so libFuzzer and the replay driver both report it as a crash)
 * when an invariant of the code under test does not hold.
 */
#ifndef KCR_FUZZ_H
#define KCR_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* LLVMFuzzerTestOneInput runs one input; libFuzzer's or replay.c's main calls it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* FUZZ_CHECK aborts with the failed condition when cond is false. */
#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

#endif /* KCR_FUZZ_H */
