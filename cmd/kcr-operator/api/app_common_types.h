/* SPDX-License-Identifier: MIT */
/* clang-format off */
/*
 * api/app_common_types.h: the App types v1alpha1 and v1beta1 share (the
 * container's environment and resources, the conditions and the status),
 * declared once. kcr-gen crd reads this header before the two version headers
 * that include it (scripts/manifests.sh), as a Go API package imports
 * another's types; it makes no CRD of its own. Each description is one `//`
 * line, hence clang-format off. docs/kcr-gen.md, "CRDs from annotated
 * headers".
 */
#ifndef KOP_API_APP_COMMON_TYPES_H
#define KOP_API_APP_COMMON_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "kcr/crd.h"
#include "kcr/meta_v1.h"
#include "kcr/time.h"
#include "kcr/types.h"

// EnvVar is one environment variable of the container.
typedef struct {
  // Name of the variable: a letter or underscore, then letters, digits or underscores (a C identifier).
  // +kubebuilder:validation:MinLength=1
  // +kubebuilder:validation:MaxLength=256
  // +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
  char *name;

  // Value of the variable; empty when unset.
  // +optional
  char *value;
} app_env_var_t;

// Compute resources of the container, as in a Pod's container.resources.
typedef struct {
  // Minimum resources the container needs, by name ("cpu", "memory", ...), as quantities such as "100m" or "64Mi".
  // +optional
  KCR_MAP(kcr_quantity_t) requests;

  // Maximum resources the container may use, by name ("cpu", "memory", ...), as quantities such as "500m" or "128Mi".
  // +optional
  KCR_MAP(kcr_quantity_t) limits;
} app_resources_t;

// Condition is one aspect of the App's state (metav1.Condition).
typedef struct {
  // Type of the condition in CamelCase, for example Available.
  // +kubebuilder:validation:MaxLength=316
  // +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
  char *type;

  // Status of the condition, one of True, False, Unknown.
  // +kubebuilder:validation:Enum="True";"False";Unknown
  char *status;

  // The metadata.generation of the App the condition was set from.
  // +kubebuilder:validation:Minimum=0
  // +optional
  int64_t observed_generation;

  // When the condition last changed from one status to another.
  kcr_time_t last_transition_time;

  // Programmatic identifier of the reason for the last transition, in CamelCase.
  // +kubebuilder:validation:MinLength=1
  // +kubebuilder:validation:MaxLength=1024
  // +kubebuilder:validation:Pattern=`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`
  char *reason;

  // Human-readable details of the last transition; may be empty.
  // +kubebuilder:validation:MaxLength=32768
  char *message;
} app_condition_t;

// AppStatus is the observed state of an App, written by kcr-operator.
typedef struct {
  // The metadata.generation of the App that this status describes.
  // +optional
  int64_t observed_generation;

  // Number of pods of the App's Deployment (the scale subresource's status replicas).
  // +optional
  int32_t replicas;

  // Number of the Deployment's pods that are ready.
  // +optional
  int32_t ready_replicas;

  // Label selector of the App's pods in string form, as the scale subresource reports it (used by kubectl scale and autoscalers).
  // +optional
  char *selector;

  // In-cluster URL of the App's Service, http://NAME.NAMESPACE.svc:PORT; absent when spec.port is unset.
  // +optional
  char *url;

  // Latest observations of the App's state: Available, Progressing, Degraded and, when spec.paused is true, Paused.
  // +listType=map
  // +listMapKey=type
  // +optional
  KCR_LIST(app_condition_t) conditions;
} app_status_t;

#endif /* KOP_API_APP_COMMON_TYPES_H */
