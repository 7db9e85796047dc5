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
#include "k8s.h"
#include "kcr/meta.h"

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

bool kop_condition_remove(json_t *conditions, const char *type) {
  size_t i;
  json_t *c;
  json_array_foreach(conditions, i, c) {
    const char *t = json_string_value(json_object_get(c, "type"));
    if (t && !strcmp(t, type)) {
      json_array_remove(conditions, i);
      return true;
    }
  }
  return false;
}

/* str_eq tells whether obj[key] is the string s. */
static bool str_eq(const json_t *obj, const char *key, const char *s) {
  const char *v = json_string_value(json_object_get(obj, key));
  return v && !strcmp(v, s);
}

int kop_condition_set(json_t *conditions, const char *type, const char *status, const char *reason,
                      const char *message, int64_t generation, kcr_time_t now, bool *changed,
                      kcr_error_t *err) {
  char ts[KCR_TIME_BUFSIZE];
  json_t *cur, *next;
  bool same_status;
  int bad = 0;
  if (changed) {
    *changed = false;
  }
  if (!json_is_array(conditions) || !type || !*type || !status || !reason || !*reason) {
    return kcr_error_set(err, KCR_EINVAL, "condition: type, status and reason are required");
  }
  if (strcmp(status, "True") != 0 && strcmp(status, "False") != 0 &&
      strcmp(status, "Unknown") != 0) {
    return kcr_error_set(err, KCR_EINVAL, "condition %s: status must be True, False or Unknown",
                         type);
  }
  if (!message) {
    message = "";
  }
  cur = kop_condition_find(conditions, type);
  same_status = cur && str_eq(cur, "status", status);
  if (same_status && str_eq(cur, "reason", reason) && str_eq(cur, "message", message) &&
      json_integer_value(json_object_get(cur, "observedGeneration")) == generation &&
      json_is_string(json_object_get(cur, "lastTransitionTime"))) {
    return 0;
  }
  next = json_object();
  bad |= json_object_set_new(next, "type", json_string(type));
  bad |= json_object_set_new(next, "status", json_string(status));
  bad |= json_object_set_new(next, "observedGeneration", json_integer(generation));
  if (same_status && json_is_string(json_object_get(cur, "lastTransitionTime"))) {
    bad |= json_object_set(next, "lastTransitionTime", json_object_get(cur, "lastTransitionTime"));
  } else {
    if (kcr_time_format(now, KCR_TIME_SECONDS, ts, sizeof ts) < 0) {
      json_decref(next);
      return kcr_error_set(err, KCR_ERANGE, "condition %s: time out of range", type);
    }
    bad |= json_object_set_new(next, "lastTransitionTime", json_string(ts));
  }
  bad |= json_object_set_new(next, "reason", json_string(reason));
  bad |= json_object_set_new(next, "message", json_string(message));
  if (bad) {
    json_decref(next);
    return kcr_error_set(err, KCR_ENOMEM, "condition %s: out of memory", type);
  }
  if (cur) {
    size_t i;
    json_t *c;
    json_array_foreach(conditions, i, c) {
      if (c == cur) {
        break;
      }
    }
    /* Replacing in place keeps the order of conditions stable across reconciles. */
    bad = json_array_set_new(conditions, i, next);
  } else {
    bad = json_array_append_new(conditions, next);
  }
  if (bad) {
    return kcr_error_set(err, KCR_ENOMEM, "condition %s: out of memory", type);
  }
  if (changed) {
    *changed = true;
  }
  return 0;
}

/* deployment_condition returns the Deployment's status condition of that type. */
static const k8s_apps_v1_deployment_condition_t *
deployment_condition(const k8s_apps_v1_deployment_status_t *st, const char *type) {
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
static void judge(const json_t *app, const kop_app_observed *obs,
                  const k8s_apps_v1_deployment_status_t *st, int64_t dep_generation, verdict *avail,
                  verdict *prog, verdict *degr) {
  const json_t *dep = obs ? obs->deployment : NULL;
  int64_t want = kop_app_replicas(app);
  int64_t ready = COUNT(st, ready_replicas);
  int64_t available = COUNT(st, available_replicas);
  int64_t updated = COUNT(st, updated_replicas);
  int64_t replicas = COUNT(st, replicas);
  const k8s_apps_v1_deployment_condition_t *dav = deployment_condition(st, "Available");
  const k8s_apps_v1_deployment_condition_t *dprog = deployment_condition(st, "Progressing");
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

int kop_app_status(const json_t *app, const kop_app_observed *obs, kcr_time_t now, json_t **out,
                   kcr_error_t *err) {
  char selector[KCR_META_KEY_MAX + 64];
  char url[KOP_APP_URL_MAX];
  verdict v[3];
  static const char *const types[3] = {KOP_APP_COND_AVAILABLE, KOP_APP_COND_PROGRESSING,
                                       KOP_APP_COND_DEGRADED};
  json_t *old = json_object_get(json_object_get(app, "status"), "conditions");
  json_t *st = NULL, *conds = NULL;
  const json_t *dep = obs ? obs->deployment : NULL;
  k8s_apps_v1_deployment_status_t *ds = NULL;
  app_v1alpha1_status_t status;
  int64_t gen = kcr_meta_generation(app);
  int rc, n;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0) {
    return rc;
  }
  if (kop_app_selector_string(app, selector, sizeof selector) < 0 ||
      (n = kop_app_url(app, url, sizeof url)) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: name too long");
  }
  /* Only the status is read: the Deployment may be a partial object (tests). */
  if (dep && json_object_get(dep, "status") &&
      (rc = k8s_apps_v1_deployment_status_decode(json_object_get(dep, "status"), &ds, err)) < 0) {
    return rc;
  }
  judge(app, obs, ds, kcr_meta_generation(dep), &v[0], &v[1], &v[2]);
  conds = json_is_array(old) ? json_deep_copy(old) : json_array();
  if (!conds) {
    rc = kcr_error_set(err, KCR_ENOMEM, "app status: out of memory");
    goto fail;
  }
  for (int i = 0; i < 3; i++) {
    if ((rc = kop_condition_set(conds, types[i], v[i].status, v[i].reason, v[i].message, gen, now,
                                NULL, err)) < 0) {
      goto fail;
    }
  }
  if (kop_app_paused(app)) {
    rc =
        kop_condition_set(conds, KOP_APP_COND_PAUSED, "True", "Paused",
                          "spec.paused is true: the children are not changed", gen, now, NULL, err);
    if (rc < 0) {
      goto fail;
    }
  } else {
    kop_condition_remove(conds, KOP_APP_COND_PAUSED);
  }
  /* The scalars as the typed status (borrowed strings: encoded, never freed);
   * the conditions stay the JSON array kop_condition_set keeps in order. */
  memset(&status, 0, sizeof status);
  status.observed_generation = gen;
  status.has_observed_generation = true;
  status.replicas = (int32_t)COUNT(ds, replicas);
  status.has_replicas = true;
  status.ready_replicas = (int32_t)COUNT(ds, ready_replicas);
  status.has_ready_replicas = true;
  status.selector = selector;
  status.url = n > 0 ? url : NULL;
  if ((rc = app_v1alpha1_status_encode(&status, &st, err)) < 0) {
    goto fail;
  }
  if (json_object_set(st, "conditions", conds) < 0) {
    rc = kcr_error_set(err, KCR_ENOMEM, "app status: out of memory");
    goto fail;
  }
  json_decref(conds);
  k8s_apps_v1_deployment_status_free(ds);
  *out = st;
  return 0;
fail:
  json_decref(conds);
  json_decref(st);
  k8s_apps_v1_deployment_status_free(ds);
  return rc;
}

bool kop_app_status_changed(const json_t *app, const json_t *status) {
  json_t *cur = json_object_get(app, "status");
  if (!cur) {
    return status != NULL;
  }
  return !json_equal(cur, status);
}
