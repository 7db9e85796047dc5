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
 * testdata/project-v4's Issuer webhook (testdata/project-v4/internal/webhook/v1/issuer_webhook.go),
 * ported to C: its +kubebuilder:webhook markers as upstream writes them, beside
 * the handlers a kcr project declares for them. `kcr-gen webhook` reads the
 * markers only.
 */
#include <stdbool.h>
#include <stddef.h>

typedef struct issuer_obj issuer_obj;

// +kubebuilder:webhook:path=/mutate-cert-manager-io-v1-issuer,mutating=true,failurePolicy=fail,sideEffects=None,groups=cert-manager.io,resources=issuers,verbs=create;update,versions=v1,name=missuer-v1.kb.io,admissionReviewVersions=v1

// IssuerDefaulter sets default values on the Kind Issuer when it is created or updated.
int issuer_default(issuer_obj *obj, char *msg, size_t size);
