/* SPDX-License-Identifier: MIT */
/*
 * kcr/rand.h: randomness for jitter and identities. kcr_rand_* is a small
 * non-cryptographic generator (xoshiro-style splitmix64) with caller-held state,
 * so each owner (a backoff, a workqueue) has its own and no lock is shared;
 * kcr_uuid_v4 uses the kernel's generator.
 */
#ifndef KCR_RAND_H
#define KCR_RAND_H

#include <stdint.h>

#include "kcr/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_rand_seed returns a seed from the kernel's generator (never 0). */
KCR_EXTERN uint64_t kcr_rand_seed(void);

/* kcr_rand_next advances *state and returns 64 random bits. */
KCR_EXTERN uint64_t kcr_rand_next(uint64_t *state);

/* kcr_rand_double returns a uniform value in [0, 1). */
KCR_EXTERN double kcr_rand_double(uint64_t *state);

/* Room for a UUID's text form, NUL included. */
#define KCR_UUID_BUFSIZE 37

/*
 * kcr_uuid_v4 writes a random (version 4) UUID, lowercase with dashes, into out.
 * Returns 0 or KCR_ESYS when the kernel's generator fails. Any thread.
 */
KCR_EXTERN int kcr_uuid_v4(char out[KCR_UUID_BUFSIZE]);

#ifdef __cplusplus
}
#endif

#endif /* KCR_RAND_H */
