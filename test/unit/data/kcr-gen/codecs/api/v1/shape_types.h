/* SPDX-License-Identifier: MIT */
/*
 * api/v1/shape_types.h: a kind with every member shape `kcr-gen codecs`
 * codes, for test_kcr_gen_codecs: scalars by value and by pointer, strings,
 * the Kubernetes scalars, named types, lists and maps of scalars and
 * structs, structs by value and by pointer, another header's types (coded
 * by their own package), TypeMeta and ObjectMeta, conditions, and a JSON
 * name of its own.
 */
#ifndef KCR_TEST_CODECS_SHAPE_TYPES_H
#define KCR_TEST_CODECS_SHAPE_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include <kcr/crd.h>
#include <kcr/meta_v1.h>
#include <kcr/time.h>
#include <kcr/types.h>

#include "api/shared_types.h"

// +groupName=shapes.example.com

// The desired state.
typedef struct {
  // A required string.
  char *text;

  // +optional
  char *opt_text;

  // +optional
  int32_t count;

  // +optional
  int64_t *big;

  // +optional
  bool *flag;

  // +optional
  bool enabled;

  // +optional
  double ratio;

  // +optional
  kcr_int_or_string_t target;

  // +optional
  kcr_quantity_t *memory;

  // +optional
  kcr_time_t since;

  // +optional
  phase_t phase;

  // +optional
  names_t aliases;

  // +optional
  KCR_LIST(endpoint_t) endpoints;

  // +optional
  KCR_LIST(int32_t) ports;

  // +optional
  KCR_MAP(char *) labels;

  // +optional
  KCR_MAP(endpoint_t) by_name;

  // +optional
  endpoint_t *primary;

  // +optional
  endpoint_t fallback;

  // A required count held by value: always written.
  int32_t replicas;

  // +optional
  // +kcr:json=x-custom
  char *custom;
} shape_spec_t;

// The observed state.
typedef struct {
  // +optional
  int64_t observed_generation;

  // +optional
  KCR_LIST(kcr_meta_v1_condition_t) conditions;
} shape_status_t;

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// Shape has every member shape.
typedef struct {
  kcr_type_meta_t type_meta;

  // +optional
  kcr_meta_v1_object_meta_t metadata;

  shape_spec_t spec;

  // +optional
  shape_status_t status;
} shape_t;

#endif /* KCR_TEST_CODECS_SHAPE_TYPES_H */
