/* SPDX-License-Identifier: MIT */
/*
 * api/v1alpha1/memcached_types.h: the Memcached API of kubebuilder's
 * getting-started tutorial (cache.example.com/v1alpha1), as C types with
 * kubebuilder's markers: the source of
 * config/crd/bases/cache.example.com_memcacheds.yaml, which `make manifests`
 * writes from it with kcr-gen crd (docs/tutorial.md, "Define the API"). The
 * controller uses these structs themselves (memcached_t), coded at build time
 * by kcr-gen codecs.
 */
#ifndef MEMCACHED_API_V1ALPHA1_TYPES_H
#define MEMCACHED_API_V1ALPHA1_TYPES_H

#include <stdint.h>

#include <kcr/crd.h>
#include <kcr/meta_v1.h>

// +groupName=cache.example.com

// MemcachedSpec defines the desired state of Memcached.
typedef struct {
  // Size is the number of Memcached instances (1 to 3).
  // +kubebuilder:validation:Minimum=1
  // +kubebuilder:validation:Maximum=3
  // +optional
  int32_t *size;
} memcached_spec_t;

// MemcachedStatus defines the observed state of Memcached.
typedef struct {
  // Conditions are the Available and Degraded conditions of the Memcached.
  // +listType=map
  // +listMapKey=type
  // +optional
  KCR_LIST(kcr_meta_v1_condition_t) conditions;
} memcached_status_t;

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// Memcached is the Schema for the memcacheds API.
typedef struct {
  kcr_type_meta_t type_meta;

  // +optional
  kcr_meta_v1_object_meta_t metadata;

  // +optional
  memcached_spec_t spec;

  // +optional
  memcached_status_t status;
} memcached_t;

#endif /* MEMCACHED_API_V1ALPHA1_TYPES_H */
