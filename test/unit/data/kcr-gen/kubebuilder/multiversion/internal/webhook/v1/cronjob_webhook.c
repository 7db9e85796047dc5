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
 * the multiversion tutorial's v1 CronJob webhook
 * (docs/book/src/multiversion-tutorial/testdata/project/internal/webhook/v1/cronjob_webhook.go),
 * ported to C: its +kubebuilder:webhook markers as upstream writes them, beside
 * the handlers a kcr project declares for them. `kcr-gen webhook` reads the
 * markers only.
 */
#include <stdbool.h>
#include <stddef.h>

typedef struct cron_job_obj cron_job_obj;

// +kubebuilder:webhook:path=/mutate-batch-tutorial-kubebuilder-io-v1-cronjob,mutating=true,failurePolicy=fail,sideEffects=None,groups=batch.tutorial.kubebuilder.io,resources=cronjobs,verbs=create;update,versions=v1,name=mcronjob-v1.kb.io,admissionReviewVersions=v1

// CronJobDefaulter sets default values on the Kind CronJob when it is created or updated.
int cron_job_default(cron_job_obj *obj, char *msg, size_t size);

// +kubebuilder:webhook:path=/validate-batch-tutorial-kubebuilder-io-v1-cronjob,mutating=false,failurePolicy=fail,sideEffects=None,groups=batch.tutorial.kubebuilder.io,resources=cronjobs,verbs=create;update,versions=v1,name=vcronjob-v1.kb.io,admissionReviewVersions=v1

// CronJobValidator validates the Kind CronJob when it is created, updated, or deleted.
int cron_job_validate_create(const cron_job_obj *obj, char *msg, size_t size);
int cron_job_validate_update(const cron_job_obj *old, const cron_job_obj *obj, char *msg, size_t size);
int cron_job_validate_delete(const cron_job_obj *obj, char *msg, size_t size);
