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
 * kubebuilder's multiversion tutorial, version v2 (api/v2/cronjob_types.go
 * and groupversion_info.go), ported to a kcr type header with the same markers
 * and comments: the schedule becomes a struct of named string types. C needs
 * a type declared before its use, so CronSchedule and CronField come first.
 */

// +kubebuilder:object:generate=true
// +groupName=batch.tutorial.kubebuilder.io

#ifndef CRONJOB_V2_TYPES_H
#define CRONJOB_V2_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "kcr/crd.h"
#include "kcr/k8s/batch_v1.h"
#include "kcr/k8s/core_v1.h"
#include "kcr/meta_v1.h"
#include "kcr/time.h"

// EDIT THIS FILE!  THIS IS SCAFFOLDING FOR YOU TO OWN!
// NOTE: json names are the members' names in lowerCamelCase (+kcr:json=NAME to choose).

// +kubebuilder:docs-gen:collapse=Imports

/*
Since we're in a v2 package, controller-gen will assume this is for the v2
version automatically.  We could override that with the [`+versionName`
marker](/reference/markers/crd.md).
*/

/*
Finally, we'll define a wrapper type to represent a field.
We could attach additional validation to this field,
but for now we'll just use it for documentation purposes.
*/
// represents a Cron field specifier.
typedef char *cron_field_t;

/*
Next, we'll need to define a type to hold our schedule.
Based on our proposed YAML above, it'll have a field for
each corresponding Cron "field".
*/

// describes a Cron schedule.
typedef struct cron_schedule {
  // minute specifies the minutes during which the job executes.
  // +optional
  cron_field_t *minute;

  // hour specifies the hour during which the job executes.
  // +optional
  cron_field_t *hour;

  // dayOfMonth specifies the day of the month during which the job executes.
  // +optional
  cron_field_t *day_of_month;

  // month specifies the month during which the job executes.
  // +optional
  cron_field_t *month;

  // dayOfWeek specifies the day of the week during which the job executes.
  // +optional
  cron_field_t *day_of_week;
} cron_schedule_t;

/*
We'll leave our spec largely unchanged, except to change the schedule field to a new type.
*/

// ConcurrencyPolicy describes how the job will be handled.
// Only one of the following concurrent policies may be specified.
// If none of the following policies is specified, the default one
// is AllowConcurrent.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
typedef char *concurrency_policy_t;

// AllowConcurrent allows CronJobs to run concurrently.
#define ALLOW_CONCURRENT "Allow"
// ForbidConcurrent forbids concurrent runs, skipping next run if previous
// hasn't finished yet.
#define FORBID_CONCURRENT "Forbid"
// ReplaceConcurrent cancels currently running job and replaces it with a new one.
#define REPLACE_CONCURRENT "Replace"

// CronJobSpec defines the desired state of CronJob
typedef struct cron_job_spec {
  // schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.
  // +required
  cron_schedule_t schedule;

  /*
   */

  // startingDeadlineSeconds defines in seconds for starting the job if it misses scheduled
  // time for any reason.  Missed jobs executions will be counted as failed ones.
  // +optional
  // +kubebuilder:validation:Minimum=0
  int64_t *starting_deadline_seconds;

  // concurrencyPolicy defines how to treat concurrent executions of a Job.
  // Valid values are:
  // - "Allow" (default): allows CronJobs to run concurrently;
  // - "Forbid": forbids concurrent runs, skipping next run if previous run hasn't finished yet;
  // - "Replace": cancels currently running job and replaces it with a new one
  // +optional
  // +kubebuilder:default:=Allow
  concurrency_policy_t concurrency_policy;

  // suspend tells the controller to suspend subsequent executions, it does
  // not apply to already started executions.  Defaults to false.
  // +optional
  bool *suspend;

  // jobTemplate defines the job that will be created when executing a CronJob.
  // +required
  kcr_batch_v1_job_template_spec_t job_template;

  // successfulJobsHistoryLimit defines the number of successful finished jobs to retain.
  // This is a pointer to distinguish between explicit zero and not specified.
  // +optional
  // +kubebuilder:validation:Minimum=0
  int32_t *successful_jobs_history_limit;

  // failedJobsHistoryLimit defines the number of failed finished jobs to retain.
  // This is a pointer to distinguish between explicit zero and not specified.
  // +optional
  // +kubebuilder:validation:Minimum=0
  int32_t *failed_jobs_history_limit;
} cron_job_spec_t;

// CronJobStatus defines the observed state of CronJob.
typedef struct cron_job_status {
  // INSERT ADDITIONAL STATUS FIELD - define observed state of cluster
  // Important: Run "make" to regenerate code after modifying this file

  // active defines a list of pointers to currently running jobs.
  // +optional
  // +listType=atomic
  // +kubebuilder:validation:MinItems=1
  // +kubebuilder:validation:MaxItems=10
  KCR_LIST(kcr_core_v1_object_reference_t) active;

  // lastScheduleTime defines the information when was the last time the job was successfully scheduled.
  // +optional
  kcr_time_t *last_schedule_time;

  // For Kubernetes API conventions, see:
  // https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#typical-status-properties

  // conditions represent the current state of the CronJob resource.
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
} cron_job_status_t;

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +versionName=v2
// CronJob is the Schema for the cronjobs API
typedef struct cron_job {
  kcr_type_meta_t type_meta;

  // metadata is a standard object metadata
  // +optional
  kcr_meta_v1_object_meta_t metadata;

  // spec defines the desired state of CronJob
  // +required
  cron_job_spec_t spec;

  // status defines the observed state of CronJob
  // +optional
  cron_job_status_t status;
} cron_job_t;

// +kubebuilder:object:root=true

// CronJobList contains a list of CronJob
typedef struct cron_job_list {
  kcr_type_meta_t type_meta;
  kcr_meta_v1_object_meta_t metadata;
  KCR_LIST(cron_job_t) items;
} cron_job_list_t;

// +kubebuilder:docs-gen:collapse=Root Object Definitions

#endif /* CRONJOB_V2_TYPES_H */
