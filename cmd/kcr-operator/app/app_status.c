/* SPDX-License-Identifier: MIT */
/*
 * app_status.c: an App's status from what the reconciler observed, with
 * metav1.Condition semantics.
 *
 * DESIGN: kop_app_status is a pure function of (App, observed Deployment,
 * failure reason, now). The status it returns starts from the App's current
 * conditions, so a condition whose status did not change keeps its
 * lastTransitionTime, and two reconciles that see the same world produce
 * byte-equal statuses: kop_app_status_changed (json_equal) then says "no
 * write", which is what stops a controller from updating its own status in a
 * loop (each write would trigger another reconcile). The clock is a parameter,
 * never read here, so tests pin time. Messages carry only counts that change
 * when the world does (ready/desired replicas), for the same reason.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "app/app_status.h"
#include "app_v1alpha1.h"
#include "kcr/clock.h"
#include "kcr/k8s/apps_v1.h"
#include "kcr/meta.h"
#include "kcr/typed.h"

json_t *kop_condition_find(const json_t *conditions, const char *type) {
  size_t i;
  json_t *c;
  json_array_foreach(conditions, i, c) {
    const char *t = json_string_value(json_object_get(c, "type"));
    if (t && !strcmp(t, type)) {
      return c;
    }
  }
  return NULL;
}

/* cond_index returns the index of the condition of that type, or -1. */
static long cond_index(const app_v1alpha1_status_t *st, const char *type) {
  for (size_t i = 0; st && i < st->conditions_len; i++) {
    if (st->conditions[i].type && !strcmp(st->conditions[i].type, type)) {
      return (long)i;
    }
  }
  return -1;
}

const kcr_meta_v1_condition_t *kop_condition_get(const app_v1alpha1_status_t *st,
                                                 const char *type) {
  long i = cond_index(st, type);
  return i < 0 ? NULL : &st->conditions[i];
}

/* cond_clear releases what one condition holds (the members app_v1alpha1.h declares). */
static void cond_clear(kcr_meta_v1_condition_t *c) {
  kcr_meta_v1_condition_clear(c);
}

bool kop_condition_remove(app_v1alpha1_status_t *st, const char *type) {
  long i = cond_index(st, type);
  if (i < 0) {
    return false;
  }
  cond_clear(&st->conditions[i]);
  memmove(&st->conditions[i], &st->conditions[i + 1],
          (st->conditions_len - (size_t)i - 1) * sizeof(st->conditions[0]));
  st->conditions_len--;
  return true;
}

int kop_condition_set(app_v1alpha1_status_t *st, const char *type, const char *status,
                      const char *reason, const char *message, int64_t generation, kcr_time_t now,
                      bool *changed, kcr_error_t *err) {
  char ts[KCR_TIME_BUFSIZE];
  kcr_clock_t *clock = NULL;
  int rc;
  if (changed) {
    *changed = false;
  }
  if (!st || !type || !*type || !status || !reason || !*reason) {
    return kcr_error_set(err, KCR_EINVAL, "condition: type, status and reason are required");
  }
  if (strcmp(status, "True") != 0 && strcmp(status, "False") != 0 &&
      strcmp(status, "Unknown") != 0) {
    return kcr_error_set(err, KCR_EINVAL, "condition %s: status must be True, False or Unknown",
                         type);
  }
  if (kcr_time_format(now, KCR_TIME_SECONDS, ts, sizeof ts) < 0) {
    return kcr_error_set(err, KCR_ERANGE, "condition %s: time out of range", type);
  }
  /* metav1 semantics are libkcr's (meta.SetStatusCondition), read at now. */
  if ((rc = kcr_fake_clock_create(0, now, &clock, err)) != 0) {
    return rc;
  }
  rc = kcr_typed_condition_set(KCR_CONDITIONS(st), type, status, reason, generation, clock, changed,
                               "%s", message ? message : "");
  kcr_clock_destroy(clock);
  return rc == 0 ? 0 : kcr_error_set(err, rc, "condition %s: %s", type, kcr_strerror(rc));
}

/* deployment_condition returns the Deployment's status condition of that type. */
static const kcr_apps_v1_deployment_condition_t *
deployment_condition(const kcr_apps_v1_deployment_status_t *st, const char *type) {
  for (size_t i = 0; st && i < st->conditions_len; i++) {
    if (st->conditions[i].type && !strcmp(st->conditions[i].type, type)) {
      return &st->conditions[i];
    }
  }
  return NULL;
}

/* streq tells whether s (NULL: absent) is want. */
static bool streq(const char *s, const char *want) {
  return s && !strcmp(s, want);
}

/* COUNT reads an optional int32 of a Deployment's status, 0 when absent. */
#define COUNT(st, field) ((st) && (st)->has_##field ? (int64_t)(st)->field : 0)

/* The verdicts of the three main conditions, before they are written. */
typedef struct verdict {
  const char *status;
  const char *reason;
  char message[256];
} verdict;

static void set_verdict(verdict *v, const char *status, const char *reason, const char *fmt, ...)
    KCR_PRINTF(4, 5);

static void set_verdict(verdict *v, const char *status, const char *reason, const char *fmt, ...) {
  va_list ap;
  v->status = status;
  v->reason = reason;
  va_start(ap, fmt);
  vsnprintf(v->message, sizeof v->message, fmt, ap);
  va_end(ap);
}

/*
 * judge decides Available, Progressing and Degraded from the Deployment's typed
 * status st (NULL: none) and its metadata.generation.
 */
static void judge(const app_v1alpha1_t *app, const kop_app_observed *obs,
                  const kcr_apps_v1_deployment_status_t *st, int64_t dep_generation, verdict *avail,
                  verdict *prog, verdict *degr) {
  const json_t *dep = obs ? obs->deployment : NULL;
  int64_t want = app->spec->has_replicas ? app->spec->replicas : 1;
  int64_t ready = COUNT(st, ready_replicas);
  int64_t available = COUNT(st, available_replicas);
  int64_t updated = COUNT(st, updated_replicas);
  int64_t replicas = COUNT(st, replicas);
  const kcr_apps_v1_deployment_condition_t *dav = deployment_condition(st, "Available");
  const kcr_apps_v1_deployment_condition_t *dprog = deployment_condition(st, "Progressing");
  bool stuck = dprog && streq(dprog->reason, "ProgressDeadlineExceeded");
  bool observed =
      dep && (st && st->has_observed_generation ? st->observed_generation : 0) >= dep_generation;

  if (want == 0) {
    set_verdict(avail, "True", "ScaledToZero", "spec.replicas is 0");
  } else if (!dep) {
    set_verdict(avail, "False", "DeploymentMissing", "the Deployment does not exist yet");
  } else if (ready > 0 && (dav ? streq(dav->status, "True") : available >= want)) {
    set_verdict(avail, "True", "MinimumReplicasAvailable", "%" PRId64 "/%" PRId64 " replicas ready",
                ready, want);
  } else {
    set_verdict(avail, "False", "ReplicasUnavailable", "%" PRId64 "/%" PRId64 " replicas ready",
                ready, want);
  }

  if (obs && obs->degraded_reason) {
    set_verdict(prog, "False", obs->degraded_reason, "reconciling failed: see Degraded");
  } else if (!dep) {
    set_verdict(prog, "True", "Creating", "creating the Deployment");
  } else if (stuck) {
    set_verdict(prog, "False", "ProgressDeadlineExceeded", "the Deployment's rollout is stuck");
  } else if (!observed || updated < want || replicas > updated || available < want) {
    set_verdict(prog, "True", "RollingOut",
                "%" PRId64 "/%" PRId64 " replicas updated, %" PRId64 " available", updated, want,
                available);
  } else {
    set_verdict(prog, "False", "RolloutComplete", "%" PRId64 " replicas up to date", want);
  }

  if (obs && obs->degraded_reason) {
    set_verdict(degr, "True", obs->degraded_reason, "%s",
                obs->degraded_message ? obs->degraded_message : "");
  } else if (stuck) {
    set_verdict(degr, "True", "ProgressDeadlineExceeded", "%s",
                dprog->message ? dprog->message : "");
  } else {
    set_verdict(degr, "False", "ReconcileSucceeded", "all children are as the spec says");
  }
}

int kop_app_status_of(const app_v1alpha1_t *app, const kop_app_observed *obs, kcr_time_t now,
                      app_v1alpha1_status_t **out, kcr_error_t *err) {
  char selector[KCR_META_KEY_MAX + 64];
  char url[KOP_APP_URL_MAX];
  verdict v[3];
  static const char *const types[3] = {KOP_APP_COND_AVAILABLE, KOP_APP_COND_PROGRESSING,
                                       KOP_APP_COND_DEGRADED};
  const json_t *dep = obs ? obs->deployment : NULL;
  kcr_apps_v1_deployment_status_t *ds = NULL;
  app_v1alpha1_status_t *st = NULL, old;
  int64_t gen = app->metadata && app->metadata->has_generation ? app->metadata->generation : 0;
  int rc, n;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0) {
    return rc;
  }
  if (kop_app_selector(app, selector, sizeof selector) < 0 ||
      (n = kop_app_url(app, url, sizeof url)) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: name too long");
  }
  /* Only the status is read: the Deployment may be a partial object (tests). */
  if (dep && json_object_get(dep, "status") &&
      (rc = kcr_apps_v1_deployment_status_decode(json_object_get(dep, "status"), &ds, err)) < 0) {
    return rc;
  }
  judge(app, obs, ds, kcr_meta_generation(dep), &v[0], &v[1], &v[2]);
  /* A new status that starts from the current conditions only: a condition whose
   * status does not change keeps its lastTransitionTime. */
  memset(&old, 0, sizeof old);
  if (app->status && app->status->has_conditions) {
    old.conditions = app->status->conditions;
    old.conditions_len = app->status->conditions_len;
  }
  old.has_conditions = true;
  if ((rc = app_v1alpha1_status_copy(&old, &st, err)) < 0) {
    goto fail;
  }
  for (int i = 0; i < 3; i++) {
    if ((rc = kop_condition_set(st, types[i], v[i].status, v[i].reason, v[i].message, gen, now,
                                NULL, err)) < 0) {
      goto fail;
    }
  }
  if (app->spec->has_paused && app->spec->paused) {
    rc =
        kop_condition_set(st, KOP_APP_COND_PAUSED, "True", "Paused",
                          "spec.paused is true: the children are not changed", gen, now, NULL, err);
    if (rc < 0) {
      goto fail;
    }
  } else {
    kop_condition_remove(st, KOP_APP_COND_PAUSED);
  }
  st->observed_generation = gen;
  st->has_observed_generation = true;
  st->replicas = (int32_t)COUNT(ds, replicas);
  st->has_replicas = true;
  st->ready_replicas = (int32_t)COUNT(ds, ready_replicas);
  st->has_ready_replicas = true;
  st->selector = app_v1alpha1_mem_strdup(selector);
  st->url = n > 0 ? app_v1alpha1_mem_strdup(url) : NULL;
  if (!st->selector || (n > 0 && !st->url)) {
    rc = kcr_error_set(err, KCR_ENOMEM, "app status: out of memory");
    goto fail;
  }
  kcr_apps_v1_deployment_status_free(ds);
  *out = st;
  return 0;
fail:
  app_v1alpha1_status_free(st);
  kcr_apps_v1_deployment_status_free(ds);
  return rc;
}

bool kop_app_status_differs(const app_v1alpha1_t *app, const app_v1alpha1_status_t *status) {
  if (!app->status || !status) {
    return app->status != status;
  }
  return !app_v1alpha1_status_equal(app->status, status);
}

int kop_app_status(const json_t *app, const kop_app_observed *obs, kcr_time_t now, json_t **out,
                   kcr_error_t *err) {
  app_v1alpha1_t *a = NULL;
  app_v1alpha1_status_t *st = NULL;
  int rc;
  *out = NULL;
  if ((rc = kop_app_decode(app, &a, err)) == 0 &&
      (rc = kop_app_status_of(a, obs, now, &st, err)) == 0) {
    rc = app_v1alpha1_status_encode(st, out, err);
  }
  app_v1alpha1_status_free(st);
  app_v1alpha1_free(a);
  return rc;
}

bool kop_app_status_changed(const json_t *app, const json_t *status) {
  json_t *cur = json_object_get(app, "status");
  if (!cur) {
    return status != NULL;
  }
  return !json_equal(cur, status);
}
