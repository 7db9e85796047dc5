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
 * testdata/project-v4's Admiral webhook (testdata/project-v4/internal/webhook/v1/admiral_webhook.go),
 * ported to C: its +kubebuilder:webhook markers as upstream writes them, beside
 * the handlers a kcr project declares for them. `kcr-gen webhook` reads the
 * markers only.
 */
#include <stdbool.h>
#include <stddef.h>

typedef struct admiral_obj admiral_obj;

// +kubebuilder:webhook:path=/mutate-crew-testproject-org-v1-admiral,mutating=true,failurePolicy=fail,sideEffects=None,groups=crew.testproject.org,resources=admirales,verbs=create;update,versions=v1,name=madmiral-v1.kb.io,admissionReviewVersions=v1

// AdmiralDefaulter sets default values on the Kind Admiral when it is created or updated.
int admiral_default(admiral_obj *obj, char *msg, size_t size);

// +kubebuilder:webhook:path=/custom-validate-admiral,mutating=false,failurePolicy=fail,sideEffects=None,groups=crew.testproject.org,resources=admirales,verbs=create;update,versions=v1,name=vadmiral-v1.kb.io,admissionReviewVersions=v1

// AdmiralValidator validates the Kind Admiral when it is created, updated, or deleted.
int admiral_validate_create(const admiral_obj *obj, char *msg, size_t size);
int admiral_validate_update(const admiral_obj *old, const admiral_obj *obj, char *msg, size_t size);
int admiral_validate_delete(const admiral_obj *obj, char *msg, size_t size);
