/* SPDX-License-Identifier: MIT */
/* clang-format off */
/*
 * api/v1alpha1/app_types.h: the App API at v1alpha1, as kubebuilder writes an API:
 * C types with its markers. This header, api/v1beta1/app_types.h and the
 * types they share, api/app_common_types.h, are the source of
 * config/crd/bases/kcr.dev_apps.yaml: `make manifests` writes it
 * with `kcr-gen crd`, and unit_kcr_gen_manifests_fresh fails when the
 * committed file is not, byte for byte, what they give. Each description is
 * one `//` line, hence clang-format off. docs/kcr-gen.md, "CRDs from
 * annotated headers".
 */
#ifndef KOP_API_V1ALPHA1_APP_TYPES_H
#define KOP_API_V1ALPHA1_APP_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "../app_common_types.h"
#include "kcr/crd.h"
#include "kcr/meta_v1.h"

// +groupName=kcr.dev

// AppSpec is the desired state of an App.
typedef struct {
  // Container image to run, for example "nginx:1.27". Required; it becomes the image of the Deployment's only container, named "app".
  // +kubebuilder:validation:MinLength=1
  char *image;

  // Number of pods to run (0 to 1000, default 1). 0 scales the App down and reports it Available with reason ScaledToZero. Also set through the scale subresource (kubectl scale app/NAME).
  // +kubebuilder:default=1
  // +kubebuilder:validation:Minimum=0
  // +kubebuilder:validation:Maximum=1000
  // +optional
  int32_t *replicas;

  // TCP port the container listens on (1 to 65535). When set, a ClusterIP Service of the App's name exposes it and status.url is http://NAME.NAMESPACE.svc:PORT; when unset, that Service is deleted.
  // +kubebuilder:validation:Minimum=1
  // +kubebuilder:validation:Maximum=65535
  // +optional
  int32_t *port;

  // Environment variables of the container, in order. Names are unique.
  // +listType=map
  // +listMapKey=name
  // +kubebuilder:validation:MaxItems=256
  // +optional
  KCR_LIST(app_env_var_t) env;

  // Files to mount read-only in the container at /etc/app, as a map of file name to content. When set, a ConfigMap NAME-config holds them and a hash of the content in the pod template rolls the Deployment when they change; when unset, that ConfigMap is deleted.
  // +kubebuilder:validation:MaxProperties=256
  // +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 253 && k != '.' && k != '..' && k.matches('^[-._a-zA-Z0-9]+$'))",message="each config key is a file name of a ConfigMap: at most 253 characters of letters, digits, '-', '_' and '.', and not '.' or '..'"
  // +kubebuilder:validation:XValidation:rule="self.map(k, size(k) + size(self[k])).sum() <= 1048576",message="config holds at most 1 MiB (names and contents together): a ConfigMap cannot hold more"
  // +optional
  KCR_MAP(char *) config;

  // Compute resources of the container, as in a Pod's container.resources.
  // +optional
  app_resources_t *resources;

  // When true, the operator changes none of the App's children and reports a Paused condition; status is still kept up to date.
  // +kubebuilder:default=false
  // +optional
  bool *paused;
} app_spec_t;

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=kapp
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statusreplicaspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name=Image,type=string,JSONPath=`.spec.image`,description="The container image the App runs."
// +kubebuilder:printcolumn:name=Desired,type=integer,JSONPath=`.spec.replicas`,description="The number of replicas asked for."
// +kubebuilder:printcolumn:name=Ready,type=integer,JSONPath=`.status.readyReplicas`,description="The number of replicas that are ready."
// +kubebuilder:printcolumn:name=Available,type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`,description="The status of the Available condition."
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:storageversion
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="an App's name must be at most 63 characters: it names the App's Service and is the value of its children's app.kubernetes.io/instance label"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="an App's name must be a DNS label: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, no dots (it names the App's Service)"

// App runs one container image as a Deployment, with an optional Service and an optional ConfigMap of files, managed by kcr-operator.
typedef struct {
  // APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.
  // +kcr:json=apiVersion
  // +optional
  char *api_version;

  // Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase.
  // +optional
  char *kind;

  // +optional
  kcr_meta_v1_object_meta_t metadata;

  app_spec_t spec;

  // +optional
  app_status_t status;
} app_t;

#endif /* KOP_API_V1ALPHA1_APP_TYPES_H */
