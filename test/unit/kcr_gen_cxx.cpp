// SPDX-License-Identifier: MIT
// kcr_gen_cxx.cpp: the public headers and kcr-gen's generated ones compile as
// C++ (unit_kcr_gen_cxx_headers runs the C++ compiler over this file with
// -fsyntax-only). Members whose names are C++ keywords are spelt with a
// trailing '_' in C++: a Deployment's spec.template, ObjectMeta's namespace.
#include "app_v1alpha1.h"
#include "app_v1beta1.h"
#include "kcr/k8s/apps_v1.h"
#include "kcr/kcr.h"
#include "kcr/testing.h"

int main() {
  kcr_apps_v1_deployment_spec_t spec = {};
  kcr_meta_v1_object_meta_t meta = {};
  app_v1beta1_spec_t beta = {};
  spec.template_ = nullptr;
  meta.namespace_ = nullptr;
  beta.service = nullptr;
  kcr_gvk gvk = app_v1alpha1_gvk();
  return gvk.kind == nullptr || spec.template_ || meta.namespace_ || beta.service;
}
