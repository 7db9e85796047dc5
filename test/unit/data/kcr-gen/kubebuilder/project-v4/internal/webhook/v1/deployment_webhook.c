/* clang-format off */
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

/*
 * testdata/project-v4's Deployment webhook (testdata/project-v4/internal/webhook/v1/deployment_webhook.go),
 * ported to C: its +kubebuilder:webhook markers as upstream writes them, beside
 * the handlers a kcr project declares for them. `kcr-gen webhook` reads the
 * markers only.
 */
#include <stdbool.h>
#include <stddef.h>

typedef struct deployment_obj deployment_obj;

// +kubebuilder:webhook:path=/mutate-apps-v1-deployment,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments,verbs=create;update,versions=v1,name=mdeployment-v1.kb.io,admissionReviewVersions=v1

// DeploymentDefaulter sets default values on the Kind Deployment when it is created or updated.
int deployment_default(deployment_obj *obj, char *msg, size_t size);

// +kubebuilder:webhook:path=/validate-apps-v1-deployment,mutating=false,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments,verbs=create;update,versions=v1,name=vdeployment-v1.kb.io,admissionReviewVersions=v1

// DeploymentValidator validates the Kind Deployment when it is created, updated, or deleted.
int deployment_validate_create(const deployment_obj *obj, char *msg, size_t size);
int deployment_validate_update(const deployment_obj *old, const deployment_obj *obj, char *msg, size_t size);
int deployment_validate_delete(const deployment_obj *obj, char *msg, size_t size);
