/* SPDX-License-Identifier: MIT */
/*
 * conditions.c: metav1.Condition helpers over a JSON array (apimachinery's
 * meta.SetStatusCondition and friends).
 *
 * Design: conditions are edited in place in the caller's array, member by member,
 * so that fields this code does not know (a CRD may add some) survive. "Now"
 * comes from a kcr_clock_t so tests can pin lastTransitionTime; it is written as
 * metav1.Time (whole seconds), as the API server would round it anyway.
 */
#include <string.h>

#include "kcr/controllerutil.h"
#include "kcr/meta.h"

json_t *kcr_conditions_get(json_t *obj, bool create) {
  json_t *status, *conds;
  if (!json_is_object(obj))
    return NULL;
  status = json_object_get(obj, "status");
  if (!status) {
    if (!create)
      return NULL;
    status = json_object();
    if (!status || json_object_set_new(obj, "status", status) != 0)
      return NULL;
  }
  if (!json_is_object(status))
    return NULL;
  conds = json_object_get(status, "conditions");
  if (!conds) {
    if (!create)
      return NULL;
    conds = json_array();
    if (!conds || json_object_set_new(status, "conditions", conds) != 0)
      return NULL;
  }
  return json_is_array(conds) ? conds : NULL;
}

json_t *kcr_condition_find(const json_t *conditions, const char *type) {
  size_t i;
  json_t *c;
  if (!json_is_array(conditions) || !type)
    return NULL;
  json_array_foreach(conditions, i, c) {
    const char *t = json_string_value(json_object_get(c, "type"));
    if (t && strcmp(t, type) == 0)
      return c;
  }
  return NULL;
}

static const char *str_or_empty(const char *s) {
  return s ? s : "";
}

/* set_string sets key to s unless it already holds s; *changed when it did. */
static int set_string(json_t *obj, const char *key, const char *s, bool *changed) {
  const char *cur = json_string_value(json_object_get(obj, key));
  if (cur && strcmp(cur, s) == 0)
    return 0;
  if (json_object_set_new(obj, key, json_string(s)) != 0)
    return KCR_ENOMEM;
  *changed = true;
  return 0;
}

static int set_time(json_t *obj, kcr_time_t t) {
  char buf[KCR_TIME_BUFSIZE];
  if (kcr_time_format(t, KCR_TIME_SECONDS, buf, sizeof(buf)) < 0)
    return KCR_EINVAL;
  return json_object_set_new(obj, "lastTransitionTime", json_string(buf)) == 0 ? 0 : KCR_ENOMEM;
}

int kcr_condition_set(json_t *conditions, const kcr_condition *c, kcr_clock_t *clock,
                      bool *changed) {
  json_t *cur;
  kcr_time_t when;
  bool ch = false;
  int rc;
  if (changed)
    *changed = false;
  if (!json_is_array(conditions) || !c || !c->type || !c->status)
    return KCR_EINVAL;
  when = c->last_transition_time;
  if (when.sec == 0 && when.nsec == 0)
    when = kcr_clock_wall(clock ? clock : kcr_clock_system());
  cur = kcr_condition_find(conditions, c->type);
  if (!cur) {
    json_t *n = json_object();
    if (!n)
      return KCR_ENOMEM;
    rc = set_string(n, "type", c->type, &ch);
    if (!rc)
      rc = set_string(n, "status", c->status, &ch);
    if (!rc)
      rc = json_object_set_new(n, "observedGeneration", json_integer(c->observed_generation))
               ? KCR_ENOMEM
               : 0;
    if (!rc)
      rc = set_time(n, when);
    if (!rc)
      rc = set_string(n, "reason", str_or_empty(c->reason), &ch);
    if (!rc)
      rc = set_string(n, "message", str_or_empty(c->message), &ch);
    if (!rc && json_array_append_new(conditions, n) != 0)
      return KCR_ENOMEM;
    if (rc) {
      json_decref(n);
      return rc;
    }
    if (changed)
      *changed = true;
    return 0;
  }
  {
    const char *st = json_string_value(json_object_get(cur, "status"));
    if (!st || strcmp(st, c->status) != 0) {
      if ((rc = set_string(cur, "status", c->status, &ch)) != 0 || (rc = set_time(cur, when)) != 0)
        return rc;
    }
  }
  if ((rc = set_string(cur, "reason", str_or_empty(c->reason), &ch)) != 0 ||
      (rc = set_string(cur, "message", str_or_empty(c->message), &ch)) != 0)
    return rc;
  {
    json_t *og = json_object_get(cur, "observedGeneration");
    if (!json_is_integer(og) || json_integer_value(og) != c->observed_generation) {
      if (json_object_set_new(cur, "observedGeneration", json_integer(c->observed_generation)))
        return KCR_ENOMEM;
      ch = true;
    }
  }
  if (changed)
    *changed = ch;
  return 0;
}

bool kcr_condition_remove(json_t *conditions, const char *type) {
  size_t i;
  json_t *c;
  if (!json_is_array(conditions) || !type)
    return false;
  json_array_foreach(conditions, i, c) {
    const char *t = json_string_value(json_object_get(c, "type"));
    if (t && strcmp(t, type) == 0) {
      json_array_remove(conditions, i);
      return true;
    }
  }
  return false;
}

static bool status_is(const json_t *conditions, const char *type, const char *want) {
  const char *st =
      json_string_value(json_object_get(kcr_condition_find(conditions, type), "status"));
  return st && strcmp(st, want) == 0;
}

bool kcr_condition_is_true(const json_t *conditions, const char *type) {
  return status_is(conditions, type, "True");
}

bool kcr_condition_is_false(const json_t *conditions, const char *type) {
  return status_is(conditions, type, "False");
}
