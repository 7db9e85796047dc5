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

/* int_at returns the integer at obj.a.b (dotted path), 0 when absent. */
static int64_t int_at(const json_t *obj, const char *path) {
  json_t *v = kcr_meta_path(obj, path);
  return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* deployment_condition returns the Deployment's status condition of that type. */
static json_t *deployment_condition(const json_t *dep, const char *type) {
  return kop_condition_find(kcr_meta_path(dep, "status.conditions"), type);
}

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

/* judge decides Available, Progressing and Degraded. */
static void judge(const json_t *app, const kop_app_observed *obs, verdict *avail, verdict *prog,
                  verdict *degr) {
  const json_t *dep = obs ? obs->deployment : NULL;
  int64_t want = kop_app_replicas(app);
  int64_t ready = int_at(dep, "status.readyReplicas");
  int64_t available = int_at(dep, "status.availableReplicas");
  int64_t updated = int_at(dep, "status.updatedReplicas");
  int64_t replicas = int_at(dep, "status.replicas");
  json_t *dav = deployment_condition(dep, "Available");
  json_t *dprog = deployment_condition(dep, "Progressing");
  bool stuck = dprog && str_eq(dprog, "reason", "ProgressDeadlineExceeded");
  bool observed =
      dep && int_at(dep, "status.observedGeneration") >= int_at(dep, "metadata.generation");

  if (want == 0) {
    set_verdict(avail, "True", "ScaledToZero", "spec.replicas is 0");
  } else if (!dep) {
    set_verdict(avail, "False", "DeploymentMissing", "the Deployment does not exist yet");
  } else if (ready > 0 && (dav ? str_eq(dav, "status", "True") : available >= want)) {
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
    const char *m = json_string_value(json_object_get(dprog, "message"));
    set_verdict(degr, "True", "ProgressDeadlineExceeded", "%s", m ? m : "");
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
  int64_t gen = kcr_meta_generation(app);
  int bad = 0, rc, n;
  *out = NULL;
  if ((rc = kop_app_check(app, err)) < 0) {
    return rc;
  }
  if (kop_app_selector_string(app, selector, sizeof selector) < 0 ||
      (n = kop_app_url(app, url, sizeof url)) < 0) {
    return kcr_error_set(err, KCR_ETOOBIG, "app: name too long");
  }
  judge(app, obs, &v[0], &v[1], &v[2]);
  conds = json_is_array(old) ? json_deep_copy(old) : json_array();
  if (!conds) {
    return kcr_error_set(err, KCR_ENOMEM, "app status: out of memory");
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
  st = json_object();
  bad |= json_object_set_new(st, "observedGeneration", json_integer(gen));
  bad |= json_object_set_new(st, "replicas", json_integer(int_at(dep, "status.replicas")));
  bad |=
      json_object_set_new(st, "readyReplicas", json_integer(int_at(dep, "status.readyReplicas")));
  bad |= json_object_set_new(st, "selector", json_string(selector));
  if (n > 0) {
    bad |= json_object_set_new(st, "url", json_string(url));
  }
  bad |= json_object_set(st, "conditions", conds);
  if (bad) {
    rc = kcr_error_set(err, KCR_ENOMEM, "app status: out of memory");
    goto fail;
  }
  json_decref(conds);
  *out = st;
  return 0;
fail:
  json_decref(conds);
  json_decref(st);
  return rc;
}

bool kop_app_status_changed(const json_t *app, const json_t *status) {
  json_t *cur = json_object_get(app, "status");
  if (!cur) {
    return status != NULL;
  }
  return !json_equal(cur, status);
}
