/* SPDX-License-Identifier: MIT */
/*
 * trace_parent.c: a controller's table of traceparents read from its For()
 * objects' KCR_TRACEPARENT_ANNOTATION (kcr/trace.h).
 *
 * DESIGN. The event handler sees the object, the worker only its key, so
 * the context crosses the queue in this table: noted on each event (the
 * latest event wins, as the queue coalesces keys), taken by the reconcile.
 * One mutex, held for a lookup; entries are small fixed blocks.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "controller/trace_parent_internal.h"
#include "kcr/error.h"
#include "util/alloc.h"
#include "util/hmap.h"

#define MAX_ENTRIES 4096

typedef struct entry {
  kcr_span_context ctx;
  char key[]; /* the map's key points here */
} entry_t;

struct kcr__trace_parents {
  pthread_mutex_t mu;
  kcr__hmap_t map; /* protected by mu: key -> entry_t */
};

kcr__trace_parents_t *kcr__trace_parents_create(void) {
  kcr__trace_parents_t *t = kcr__calloc(1, sizeof(*t));
  if (!t)
    return NULL;
  pthread_mutex_init(&t->mu, NULL);
  return t;
}

void kcr__trace_parents_destroy(kcr__trace_parents_t *t) {
  if (!t)
    return;
  for (size_t i = 0; i < t->map.cap; i++)
    if (t->map.slots[i].key)
      kcr__free(t->map.slots[i].val);
  kcr__hmap_free(&t->map);
  pthread_mutex_destroy(&t->mu);
  kcr__free(t);
}

static const char *annotation(const json_t *obj) {
  json_t *a = json_object_get(json_object_get(obj, "metadata"), "annotations");
  return json_string_value(json_object_get(a, KCR_TRACEPARENT_ANNOTATION));
}

void kcr__trace_parents_note(kcr__trace_parents_t *t, const char *key, const json_t *obj) {
  kcr_span_context ctx;
  const char *tp;
  entry_t *e;
  bool have;
  if (!t || !key || !kcr_trace_enabled())
    return;
  tp = obj ? annotation(obj) : NULL;
  have = tp && kcr_traceparent_parse(tp, strlen(tp), &ctx) == 0;
  pthread_mutex_lock(&t->mu);
  e = kcr__hmap_get(&t->map, key);
  if (!have) {
    if (e) {
      kcr__hmap_del(&t->map, key);
      kcr__free(e);
    }
  } else if (e) {
    e->ctx = ctx;
  } else if (t->map.len < MAX_ENTRIES) {
    size_t n = strlen(key) + 1;
    e = kcr__malloc(sizeof(*e) + n);
    if (e) {
      e->ctx = ctx;
      memcpy(e->key, key, n);
      if (kcr__hmap_put(&t->map, e->key, e) != 0)
        kcr__free(e);
    }
  }
  pthread_mutex_unlock(&t->mu);
}

bool kcr__trace_parents_take(kcr__trace_parents_t *t, const char *key, kcr_span_context *out) {
  entry_t *e;
  if (!t || !key)
    return false;
  pthread_mutex_lock(&t->mu);
  e = t->map.len ? kcr__hmap_del(&t->map, key) : NULL;
  pthread_mutex_unlock(&t->mu);
  if (!e)
    return false;
  *out = e->ctx;
  kcr__free(e);
  return true;
}

kcr_span_t *kcr__reconcile_span_start(kcr__trace_parents_t *t, const char *key,
                                      const char *controller, const char *group, const char *kind,
                                      const char *ns, const char *name, const char *reconcile_id) {
  kcr_span_context parent;
  bool have;
  char sname[KCR_SPAN_NAME_MAX];
  kcr_span_t *s;
  if (!kcr_trace_enabled())
    return NULL;
  have = kcr__trace_parents_take(t, key, &parent);
  snprintf(sname, sizeof(sname), "Reconcile %s", controller ? controller : "");
  s = kcr_span_start(sname, KCR_SPAN_INTERNAL, have ? &parent : NULL);
  kcr_span_set_str(s, "kcr.controller", controller);
  if (group)
    kcr_span_set_str(s, "kcr.controller.group", group);
  if (kind)
    kcr_span_set_str(s, "kcr.controller.kind", kind);
  kcr_span_set_str(s, "k8s.namespace.name", ns);
  kcr_span_set_str(s, "k8s.object.name", name);
  kcr_span_set_str(s, "kcr.reconcile_id", reconcile_id);
  return s;
}

void kcr__reconcile_span_end(kcr_span_t *span, int rc, bool terminal, bool requeue,
                             int64_t requeue_after_ns, const char *message) {
  const char *result;
  if (!span)
    return;
  result = rc ? "error" : requeue_after_ns > 0 ? "requeue_after" : requeue ? "requeue" : "success";
  kcr_span_set_str(span, "kcr.reconcile.result", result);
  if (rc) {
    char msg[KCR_SPAN_MESSAGE_MAX];
    snprintf(msg, sizeof(msg), "%s%s%s%s", terminal ? "terminal error: " : "", kcr_err_name(rc),
             message && *message ? ": " : "", message ? message : "");
    kcr_span_set_status(span, KCR_SPAN_STATUS_ERROR, msg);
  }
  kcr_span_end(span);
}
