/* SPDX-License-Identifier: MIT */
/*
 * api/shared_types.h: types that api/v1/shape_types.h uses, coded in a package
 * of their own (kcr-gen codecs --uses; test_kcr_gen_codecs).
 */
#ifndef KCR_TEST_CODECS_SHARED_TYPES_H
#define KCR_TEST_CODECS_SHARED_TYPES_H

#include <stdint.h>

#include <kcr/crd.h>

// An endpoint: a struct another header's members hold by value, by pointer,
// in a list and in a map.
typedef struct {
  // +optional
  char *host;

  // +optional
  int32_t port;
} endpoint_t;

// A named string type.
typedef char *phase_t;

// A named list type.
typedef KCR_LIST(char *) names_t;

#endif /* KCR_TEST_CODECS_SHARED_TYPES_H */
