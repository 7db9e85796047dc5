/* SPDX-License-Identifier: MIT */
/*
 * predicate.c: event filters (controller-runtime's predicate package).
 *
 * Design: a predicate is a small immutable tree (built-ins, label selector,
 * custom functions, and/or/not), so any number of informer threads may evaluate
 * one without a lock. The stateless built-ins and the "out of memory" predicate
 * are static singletons: constructors that cannot fail never allocate, and a
 * constructor that fails returns the failed singleton, which and/or/not
 * propagate and the controller's set-up calls reject with KCR_ENOMEM. Callers
 * therefore check once, at the end of a chain (jansson's json_object_set_new
 * accepts a NULL from a failed json_string for the same reason).
 */
#include <string.h>

#include "controller/controller_internal.h"
#include "kcr/controller.h"
#include "kcr/meta.h"
#include "util/alloc.h"

typedef enum pkind {
  P_GENERATION,
  P_RESOURCE_VERSION,
  P_LABELS,
  P_ANNOTATIONS,
  P_SELECTOR,
  P_AND,
  P_OR,
  P_NOT,
  P_CUSTOM,
  P_FAILED
} pkind;

struct kcr_predicate {
  pkind kind;
  bool is_static;
  kcr_predicate_t *a, *b;
  kcr_selector_t *sel;
  kcr_predicate_funcs f;
  void *data;
};

static kcr_predicate_t generation_pred = {.kind = P_GENERATION, .is_static = true};
static kcr_predicate_t rv_pred = {.kind = P_RESOURCE_VERSION, .is_static = true};
static kcr_predicate_t labels_pred = {.kind = P_LABELS, .is_static = true};
static kcr_predicate_t annotations_pred = {.kind = P_ANNOTATIONS, .is_static = true};
static kcr_predicate_t failed_pred = {.kind = P_FAILED, .is_static = true};

kcr_predicate_t *kcr_predicate_generation_changed(void) {
  return &generation_pred;
}
kcr_predicate_t *kcr_predicate_resource_version_changed(void) {
  return &rv_pred;
}
kcr_predicate_t *kcr_predicate_labels_changed(void) {
  return &labels_pred;
}
kcr_predicate_t *kcr_predicate_annotations_changed(void) {
  return &annotations_pred;
}

bool kcr__predicate_failed(const kcr_predicate_t *p) {
  return p && p->kind == P_FAILED;
}

bool kcr__predicate_metadata_only(const kcr_predicate_t *p) {
  if (!p)
    return true;
  switch (p->kind) {
  case P_AND:
  case P_OR:
    return kcr__predicate_metadata_only(p->a) && kcr__predicate_metadata_only(p->b);
  case P_NOT:
    return kcr__predicate_metadata_only(p->a);
  case P_CUSTOM:
    return false;
  default:
    return true; /* generation, resourceVersion, labels, annotations, a selector */
  }
}

void kcr_predicate_destroy(kcr_predicate_t *p) {
  if (!p || p->is_static)
    return;
  kcr_predicate_destroy(p->a);
  kcr_predicate_destroy(p->b);
  kcr_selector_destroy(p->sel);
  if (p->kind == P_CUSTOM && p->f.destroy)
    p->f.destroy(p->data);
  kcr__free(p);
}

static kcr_predicate_t *combine(pkind kind, kcr_predicate_t *a, kcr_predicate_t *b) {
  kcr_predicate_t *p;
  if (!a || (kind != P_NOT && !b) || kcr__predicate_failed(a) || kcr__predicate_failed(b)) {
    kcr_predicate_destroy(a);
    kcr_predicate_destroy(b);
    return &failed_pred;
  }
  p = kcr__calloc(1, sizeof(*p));
  if (!p) {
    kcr_predicate_destroy(a);
    kcr_predicate_destroy(b);
    return &failed_pred;
  }
  p->kind = kind;
  p->a = a;
  p->b = b;
  return p;
}

kcr_predicate_t *kcr_predicate_and(kcr_predicate_t *a, kcr_predicate_t *b) {
  return combine(P_AND, a, b);
}

kcr_predicate_t *kcr_predicate_or(kcr_predicate_t *a, kcr_predicate_t *b) {
  return combine(P_OR, a, b);
}

kcr_predicate_t *kcr_predicate_not(kcr_predicate_t *a) {
  return combine(P_NOT, a, NULL);
}

kcr_predicate_t *kcr_predicate_custom(const kcr_predicate_funcs *f, void *data) {
  kcr_predicate_t *p = f ? kcr__calloc(1, sizeof(*p)) : NULL;
  if (!p) {
    if (f && f->destroy)
      f->destroy(data);
    return &failed_pred;
  }
  p->kind = P_CUSTOM;
  p->f = *f;
  p->data = data;
  return p;
}

int kcr_predicate_label_selector(const char *selector, kcr_predicate_t **out, kcr_error_t *err) {
  kcr_predicate_t *p;
  kcr_selector_t *sel = NULL;
  int rc;
  *out = NULL;
  rc = kcr_selector_parse(selector ? selector : "", &sel, err);
  if (rc)
    return rc;
  p = kcr__calloc(1, sizeof(*p));
  if (!p) {
    kcr_selector_destroy(sel);
    return kcr_error_set(err, KCR_ENOMEM, "predicate: out of memory");
  }
  p->kind = P_SELECTOR;
  p->sel = sel;
  *out = p;
  return 0;
}

/* str_changed compares two optional strings as Go compares two fields. */
static bool str_changed(const char *a, const char *b) {
  return strcmp(a, b) != 0;
}

/* map_changed is reflect.DeepEqual on two optional maps (absent equals empty? no:
 * Go's DeepEqual tells a nil map from an empty one, and so do we). */
static bool map_changed(const json_t *a, const json_t *b) {
  if (!a || !b)
    return a != b;
  return !json_equal(a, b);
}

bool kcr_predicate_eval(const kcr_predicate_t *p, kcr_event_type type, const json_t *old_obj,
                        const json_t *obj) {
  if (!p)
    return true;
  switch (p->kind) {
  case P_GENERATION:
  case P_RESOURCE_VERSION:
  case P_LABELS:
  case P_ANNOTATIONS:
    if (type != KCR_EVENT_UPDATE)
      return true;
    if (!old_obj || !obj)
      return false; /* upstream logs "Update event has no old or new object" */
    if (p->kind == P_GENERATION)
      return kcr_meta_generation(old_obj) != kcr_meta_generation(obj);
    if (p->kind == P_RESOURCE_VERSION)
      return str_changed(kcr_meta_resource_version(old_obj), kcr_meta_resource_version(obj));
    if (p->kind == P_LABELS)
      return map_changed(kcr_meta_labels(old_obj), kcr_meta_labels(obj));
    return map_changed(kcr_meta_annotations(old_obj), kcr_meta_annotations(obj));
  case P_SELECTOR:
    return obj && kcr_selector_matches_obj(p->sel, obj);
  case P_AND:
    return kcr_predicate_eval(p->a, type, old_obj, obj) &&
           kcr_predicate_eval(p->b, type, old_obj, obj);
  case P_OR:
    return kcr_predicate_eval(p->a, type, old_obj, obj) ||
           kcr_predicate_eval(p->b, type, old_obj, obj);
  case P_NOT:
    return !kcr_predicate_eval(p->a, type, old_obj, obj);
  case P_CUSTOM:
    switch (type) {
    case KCR_EVENT_CREATE:
      return p->f.create ? p->f.create(obj, p->data) : true;
    case KCR_EVENT_UPDATE:
      return p->f.update ? p->f.update(old_obj, obj, p->data) : true;
    case KCR_EVENT_DELETE:
      return p->f.del ? p->f.del(obj, p->data) : true;
    case KCR_EVENT_GENERIC:
    default:
      return p->f.generic ? p->f.generic(obj, p->data) : true;
    }
  case P_FAILED:
  default:
    return false;
  }
}
