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
 * testdata/project-v4's Sailor webhook (testdata/project-v4/internal/webhook/v1/sailor_webhook.go),
 * ported to C: its +kubebuilder:webhook markers as upstream writes them, beside
 * the handlers a kcr project declares for them. `kcr-gen webhook` reads the
 * markers only.
 */
#include <stdbool.h>
#include <stddef.h>

typedef struct sailor_obj sailor_obj;

// +kubebuilder:webhook:path=/custom-mutate-sailor,mutating=true,failurePolicy=fail,sideEffects=None,groups=crew.testproject.org,resources=sailors,verbs=create;update,versions=v1,name=msailor-v1.kb.io,admissionReviewVersions=v1

// SailorDefaulter sets default values on the Kind Sailor when it is created or updated.
int sailor_default(sailor_obj *obj, char *msg, size_t size);

// +kubebuilder:webhook:path=/custom-validate-sailor,mutating=false,failurePolicy=fail,sideEffects=None,groups=crew.testproject.org,resources=sailors,verbs=create;update,versions=v1,name=vsailor-v1.kb.io,admissionReviewVersions=v1

// SailorValidator validates the Kind Sailor when it is created, updated, or deleted.
int sailor_validate_create(const sailor_obj *obj, char *msg, size_t size);
int sailor_validate_update(const sailor_obj *old, const sailor_obj *obj, char *msg, size_t size);
int sailor_validate_delete(const sailor_obj *obj, char *msg, size_t size);
