/* clang-format off */
/* (a port keeps its upstream comment lines as they are: reflowing a long one
   would join it with the marker below it) */
/*
Copyright 2026 The Kubernetes authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/
// +kubebuilder:docs-gen:collapse=Apache License

/*
 * kubebuilder's getting-started Memcached API (api/v1alpha1/memcached_types.go
 * and groupversion_info.go), ported to a kcr type header with the same markers
 * and comments: `kcr-gen crd` makes the CRD controller-gen makes of the Go.
 */

// +kubebuilder:object:generate=true
// +groupName=cache.example.com

#ifndef MEMCACHED_TYPES_H
#define MEMCACHED_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "kcr/crd.h"
#include "kcr/meta_v1.h"

// EDIT THIS FILE!  THIS IS SCAFFOLDING FOR YOU TO OWN!
// NOTE: json names are the members' names in lowerCamelCase (+kcr:json=NAME to choose).

// +kubebuilder:docs-gen:collapse=Imports

// MemcachedSpec defines the desired state of Memcached
typedef struct memcached_spec {
  // INSERT ADDITIONAL SPEC FIELDS - desired state of cluster
  // Important: Run "make" to regenerate code after modifying this file
  // The following markers will use OpenAPI v3 schema to validate the value
  // More info: https://book.kubebuilder.io/reference/markers/crd-validation.html

  // size defines the number of Memcached instances
  // The following markers will use OpenAPI v3 schema to validate the value
  // More info: https://book.kubebuilder.io/reference/markers/crd-validation.html
  // +kubebuilder:validation:Minimum=1
  // +kubebuilder:validation:Maximum=3
  // +kubebuilder:validation:ExclusiveMaximum=false
  // +optional
  int32_t *size;
} memcached_spec_t;

// MemcachedStatus defines the observed state of Memcached.
typedef struct memcached_status {
  // INSERT ADDITIONAL STATUS FIELD - define observed state of cluster
  // Important: Run "make" to regenerate code after modifying this file

  // For Kubernetes API conventions, see:
  // https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#typical-status-properties

  // conditions represent the current state of the Memcached resource.
  // Each condition has a unique type and reflects the status of a specific aspect of the resource.
  //
  // Standard condition types include:
  // - "Available": the resource is fully functional
  // - "Progressing": the resource is being created or updated
  // - "Degraded": the resource failed to reach or maintain its desired state
  //
  // The status of each condition is one of True, False, or Unknown.
  // +listType=map
  // +listMapKey=type
  // +optional
  KCR_LIST(kcr_meta_v1_condition_t) conditions;
} memcached_status_t;

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// Memcached is the Schema for the memcacheds API
typedef struct memcached {
  kcr_type_meta_t type_meta;

  // metadata is a standard object metadata
  // +optional
  kcr_meta_v1_object_meta_t metadata;

  // spec defines the desired state of Memcached
  // +required
  memcached_spec_t spec;

  // status defines the observed state of Memcached
  // +optional
  memcached_status_t status;
} memcached_t;

// +kubebuilder:object:root=true

// MemcachedList contains a list of Memcached
typedef struct memcached_list {
  kcr_type_meta_t type_meta;
  kcr_meta_v1_object_meta_t metadata;
  KCR_LIST(memcached_t) items;
} memcached_list_t;

#endif /* MEMCACHED_TYPES_H */
