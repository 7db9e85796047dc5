/* SPDX-License-Identifier: MIT */
/*
 * typed.c: kcr/typed.h, the reconciler's helpers over typed values: finalizers,
 * owner references and conditions on kcr/meta_v1.h structs, merge patches from
 * typed before/after, and typed create-or-update/create-or-patch.
 *
 * Design: it sits in the scheme layer because half of it needs a kind's codec.
 * The struct edits are written for the structs (there is no JSON to go through),
 * with the JSON helpers' rules and error messages, and each one builds what it
 * adds before it touches the struct, so a failure leaves the struct as it was.
 * The arrays have no capacity field and jansson's allocator no realloc: growing
 * one allocates len + 1 elements, moves the old ones (by value) and frees the
 * old block. The operations on a whole object are the JSON ones (kcr_merge_patch_diff,
 * kcr_create_or_update, kcr_create_or_patch) with the codec around them: the
 * mutate callback the JSON helper calls decodes its object, runs the typed
 * mutate and encodes the result back in place, so there is one implementation
 * of read, compare, write.
 */
#include <stdio.h>
#include <string.h>

#include "api/controllerutil_internal.h"
#include "kcr/typed.h"
#include "scheme/scheme_internal.h"

/* ---- finalizers ---- */

bool kcr_typed_finalizer_contains(const kcr_meta_v1_object_meta_t *meta, const char *name) {
  if (!meta || !name)
    return false;
  for (size_t i = 0; i < meta->finalizers_len; i++) {
    if (meta->finalizers[i] && strcmp(meta->finalizers[i], name) == 0)
      return true;
  }
  return false;
}

/* grow makes *arr (n elements of size bytes) one element longer, the new one
 * zeroed, freeing the old block. KCR_ENOMEM leaves *arr as it was. */
static int grow(void **arr, size_t n, size_t size) {
  char *a = kcr_meta_v1_mem_calloc(n + 1, size);
  if (!a)
    return KCR_ENOMEM;
  if (n)
    memcpy(a, *arr, n * size);
  kcr_meta_v1_mem_free(*arr);
  *arr = a;
  return 0;
}

int kcr_typed_finalizer_add(kcr_meta_v1_object_meta_t *meta, const char *name, bool *changed) {
  char *copy;
  void *arr;
  if (changed)
    *changed = false;
  if (!meta || !name)
    return KCR_EINVAL;
  if (kcr_typed_finalizer_contains(meta, name))
    return 0;
  if (!(copy = kcr_meta_v1_mem_strdup(name)))
    return KCR_ENOMEM;
  arr = meta->finalizers;
  if (grow(&arr, meta->finalizers_len, sizeof(char *)) != 0) {
    kcr_meta_v1_mem_free(copy);
    return KCR_ENOMEM;
  }
  meta->finalizers = arr;
  meta->finalizers[meta->finalizers_len++] = copy;
  meta->has_finalizers = true;
  if (changed)
    *changed = true;
  return 0;
}

int kcr_typed_finalizer_remove(kcr_meta_v1_object_meta_t *meta, const char *name, bool *changed) {
  size_t kept = 0;
  if (changed)
    *changed = false;
  if (!meta || !name)
    return KCR_EINVAL;
  for (size_t i = 0; i < meta->finalizers_len; i++) {
    char *f = meta->finalizers[i];
    if (f && strcmp(f, name) == 0) {
      kcr_meta_v1_mem_free(f);
      if (changed)
        *changed = true;
    } else {
      meta->finalizers[kept++] = f;
    }
  }
  meta->finalizers_len = kept;
  return 0;
}

/* ---- labels and annotations (metav1.SetMetaDataLabel) ---- */

/*
 * STRMAP_OPS defines map_set_<name> and map_get_<name> over one generated
 * string map {entries, _len, has_}: every such map has its own entry type, all
 * of them {char *key; char *value;}.
 */
#define STRMAP_OPS(name, entry_t)                                                                  \
  static int map_set_##name(entry_t **v, size_t *len, bool *has, const char *key,                  \
                            const char *value) {                                                   \
    char *val;                                                                                     \
    size_t i = 0;                                                                                  \
    while (i < *len && strcmp((*v)[i].key, key) != 0)                                              \
      i++;                                                                                         \
    if (!(val = kcr_meta_v1_mem_strdup(value)))                                                    \
      return KCR_ENOMEM;                                                                           \
    if (i == *len) {                                                                               \
      char *k = kcr_meta_v1_mem_strdup(key);                                                       \
      if (!k || grow((void **)v, *len, sizeof(**v))) {                                             \
        kcr_meta_v1_mem_free(k);                                                                   \
        kcr_meta_v1_mem_free(val);                                                                 \
        return KCR_ENOMEM;                                                                         \
      }                                                                                            \
      (*v)[i].key = k;                                                                             \
      (*v)[i].value = NULL;                                                                        \
      (*len)++;                                                                                    \
    }                                                                                              \
    kcr_meta_v1_mem_free((*v)[i].value);                                                           \
    (*v)[i].value = val;                                                                           \
    *has = true;                                                                                   \
    return 0;                                                                                      \
  }                                                                                                \
  static const char *map_get_##name(const entry_t *v, size_t len, const char *key) {               \
    for (size_t i = 0; i < len; i++)                                                               \
      if (strcmp(v[i].key, key) == 0)                                                              \
        return v[i].value;                                                                         \
    return NULL;                                                                                   \
  }

STRMAP_OPS(labels, kcr_meta_v1_object_meta_labels_entry_t)
STRMAP_OPS(annotations, kcr_meta_v1_object_meta_annotations_entry_t)
STRMAP_OPS(match, kcr_meta_v1_label_selector_match_labels_entry_t)

int kcr_typed_label_set(kcr_meta_v1_object_meta_t *meta, const char *key, const char *value) {
  if (!meta || !key || !value)
    return KCR_EINVAL;
  return map_set_labels(&meta->labels, &meta->labels_len, &meta->has_labels, key, value);
}

const char *kcr_typed_label(const kcr_meta_v1_object_meta_t *meta, const char *key) {
  return meta && key ? map_get_labels(meta->labels, meta->labels_len, key) : NULL;
}

int kcr_typed_annotation_set(kcr_meta_v1_object_meta_t *meta, const char *key, const char *value) {
  if (!meta || !key || !value)
    return KCR_EINVAL;
  return map_set_annotations(&meta->annotations, &meta->annotations_len, &meta->has_annotations,
                             key, value);
}

const char *kcr_typed_annotation(const kcr_meta_v1_object_meta_t *meta, const char *key) {
  return meta && key ? map_get_annotations(meta->annotations, meta->annotations_len, key) : NULL;
}

int kcr_typed_selector_match_labels(kcr_meta_v1_label_selector_t *sel,
                                    const kcr_meta_v1_object_meta_t *meta) {
  if (!sel || !meta)
    return KCR_EINVAL;
  for (size_t i = 0; i < meta->labels_len; i++) {
    int rc = map_set_match(&sel->match_labels, &sel->match_labels_len, &sel->has_match_labels,
                           meta->labels[i].key, meta->labels[i].value);
    if (rc != 0)
      return rc;
  }
  (void)map_get_match;
  return 0;
}

/* ---- owner references ---- */

/* refers tells whether ref names the object of kind gvk called name (group,
 * kind and name, as kcr_owner_ref_refers_to). */
static bool refers(const kcr_meta_v1_owner_reference_t *ref, const kcr_gvk *gvk, const char *name) {
  return kcr__owner_ref_matches(ref->api_version, ref->kind, ref->name, gvk, name);
}

static const char *nz(const char *s) {
  return s ? s : "";
}

const kcr_meta_v1_owner_reference_t *
kcr_typed_owner_ref_controller(const kcr_meta_v1_object_meta_t *meta) {
  if (!meta)
    return NULL;
  for (size_t i = 0; i < meta->owner_references_len; i++) {
    const kcr_meta_v1_owner_reference_t *r = &meta->owner_references[i];
    if (r->has_controller && r->controller)
      return r;
  }
  return NULL;
}

bool kcr_typed_owner_ref_has_controller(const kcr_meta_v1_object_meta_t *meta) {
  return kcr_typed_owner_ref_controller(meta) != NULL;
}

/* validate_owner applies the JSON helper's rules, with its messages. */
static int validate_owner(const kcr_gvk *gvk, const kcr_meta_v1_object_meta_t *owner,
                          const kcr_meta_v1_object_meta_t *meta, const char *av, kcr_error_t *err) {
  if (!gvk || !owner || !meta) {
    kcr_error_set(err, KCR_EINVAL, "owner reference: no owner kind, owner or object");
    return KCR_EINVAL; /* not kcr_error_set's answer: the analyzer cannot see it */
  }
  return kcr__owner_ref_validate(av, nz(gvk->kind), nz(owner->name), nz(owner->uid),
                                 nz(owner->namespace), nz(meta->namespace), err);
}

static int set_ref(const kcr_gvk *gvk, const kcr_meta_v1_object_meta_t *owner,
                   kcr_meta_v1_object_meta_t *meta, bool controller, kcr_error_t *err) {
  kcr_meta_v1_owner_reference_t ref = {0};
  char av[KCR_GVK_GROUP_MAX + 256];
  size_t i;
  int rc;
  /* no version (or one too long): an apiVersion of "", which validation refuses */
  if (!gvk || kcr_gvk_api_version(gvk, av, sizeof(av)) < 0)
    av[0] = '\0';
  if ((rc = validate_owner(gvk, owner, meta, av, err)) != 0)
    return rc;
  if (controller) {
    const kcr_meta_v1_owner_reference_t *existing = kcr_typed_owner_ref_controller(meta);
    if (existing && !refers(existing, gvk, owner->name))
      return kcr_error_set(
          err, KCR_EEXIST, "Object %s/%s is already owned by another %s controller %s",
          nz(meta->namespace), nz(meta->name), nz(existing->kind), nz(existing->name));
  }
  ref.controller = ref.has_controller = ref.block_owner_deletion = ref.has_block_owner_deletion =
      controller;
  if (!(ref.api_version = kcr_meta_v1_mem_strdup(av)) ||
      !(ref.kind = kcr_meta_v1_mem_strdup(gvk->kind)) ||
      !(ref.name = kcr_meta_v1_mem_strdup(owner->name)) ||
      !(ref.uid = kcr_meta_v1_mem_strdup(owner->uid)))
    goto nomem;
  for (i = 0; i < meta->owner_references_len; i++) {
    if (refers(&meta->owner_references[i], gvk, owner->name))
      break;
  }
  if (i < meta->owner_references_len) {
    kcr_meta_v1_owner_reference_clear(&meta->owner_references[i]);
  } else {
    void *arr = meta->owner_references;
    if (grow(&arr, meta->owner_references_len, sizeof(ref)) != 0)
      goto nomem;
    meta->owner_references = arr;
    meta->owner_references_len++;
  }
  meta->owner_references[i] = ref;
  meta->has_owner_references = true;
  return 0;
nomem:
  kcr_meta_v1_owner_reference_clear(&ref);
  return kcr_error_set(err, KCR_ENOMEM, "owner reference: out of memory");
}

int kcr_typed_owner_ref_set_controller(const kcr_gvk *owner_gvk,
                                       const kcr_meta_v1_object_meta_t *owner,
                                       kcr_meta_v1_object_meta_t *meta, kcr_error_t *err) {
  return set_ref(owner_gvk, owner, meta, true, err);
}

int kcr_typed_owner_ref_set(const kcr_gvk *owner_gvk, const kcr_meta_v1_object_meta_t *owner,
                            kcr_meta_v1_object_meta_t *meta, kcr_error_t *err) {
  return set_ref(owner_gvk, owner, meta, false, err);
}

int kcr_typed_owner_ref_remove(const kcr_gvk *owner_gvk, const kcr_meta_v1_object_meta_t *owner,
                               kcr_meta_v1_object_meta_t *meta, kcr_error_t *err) {
  size_t kept = 0;
  if (!owner_gvk || !owner || !meta)
    return kcr_error_set(err, KCR_EINVAL, "owner reference: no owner kind, owner or object");
  if (meta->owner_references_len == 0)
    return kcr_error_set(err, KCR_ENOENT, "%s/%s does not have any owner references",
                         nz(meta->namespace), nz(meta->name));
  for (size_t i = 0; i < meta->owner_references_len; i++) {
    kcr_meta_v1_owner_reference_t *r = &meta->owner_references[i];
    if (refers(r, owner_gvk, owner->name))
      kcr_meta_v1_owner_reference_clear(r);
    else
      meta->owner_references[kept++] = *r;
  }
  if (kept == meta->owner_references_len)
    return kcr_error_set(err, KCR_ENOENT, "%s/%s does not have an owner reference for %s %s",
                         nz(meta->namespace), nz(meta->name), nz(owner_gvk->kind), nz(owner->name));
  meta->owner_references_len = kept;
  return 0;
}

/* ---- status conditions ---- */

kcr_meta_v1_condition_t *kcr_typed_condition_find(kcr_meta_v1_condition_t *const *conds,
                                                  const size_t *len, const bool *has,
                                                  const char *type) {
  (void)has;
  if (!conds || !len || !type)
    return NULL;
  for (size_t i = 0; i < *len; i++) {
    if ((*conds)[i].type && strcmp((*conds)[i].type, type) == 0)
      return &(*conds)[i];
  }
  return NULL;
}

/* differs tells whether the string field cur must change to want. */
static bool differs(const char *cur, const char *want) {
  return !cur || strcmp(cur, want) != 0;
}

/* replace frees *field and makes it fresh (stolen), when fresh is not NULL. */
static void replace(char **field, char *fresh) {
  if (!fresh)
    return;
  kcr_meta_v1_mem_free(*field);
  *field = fresh;
}

int kcr_typed_condition_set(kcr_meta_v1_condition_t **conds, size_t *len, bool *has,
                            const char *type, const char *status, const char *reason,
                            int64_t observed_generation, kcr_clock_t *clock, bool *changed,
                            const char *message_fmt, ...) {
  char when[KCR_TIME_BUFSIZE], msg[1024], *m = msg;
  char *f_status = NULL, *f_reason = NULL, *f_message = NULL, *f_time = NULL, *f_type = NULL;
  kcr_meta_v1_condition_t *cur;
  bool transition;
  va_list ap, again;
  int n, rc = KCR_ENOMEM;
  if (changed)
    *changed = false;
  if (!conds || !len || !type || !status)
    return KCR_EINVAL;
  reason = nz(reason);
  va_start(ap, message_fmt);
  va_copy(again, ap);
  n = vsnprintf(msg, sizeof(msg), nz(message_fmt), ap);
  va_end(ap);
  if (n >= 0 && (size_t)n >= sizeof(msg)) { /* a long message: format it again, whole */
    if ((m = kcr_meta_v1_mem_calloc((size_t)n + 1, 1)))
      vsnprintf(m, (size_t)n + 1, nz(message_fmt), again);
  }
  va_end(again);
  if (n < 0)
    return KCR_EINVAL;
  if (!m)
    return KCR_ENOMEM;
  if (kcr_time_format(kcr_clock_wall(clock ? clock : kcr_clock_system()), KCR_TIME_SECONDS, when,
                      sizeof(when)) < 0) {
    rc = KCR_EINVAL;
    goto done;
  }
  cur = kcr_typed_condition_find(conds, len, has, type);
  transition = !cur || differs(cur->status, status);
  /* Everything that changes is copied first: an allocation failure must leave
   * the condition as it was. */
  if ((!cur && !(f_type = kcr_meta_v1_mem_strdup(type))) ||
      (transition && (!(f_status = kcr_meta_v1_mem_strdup(status)) ||
                      !(f_time = kcr_meta_v1_mem_strdup(when)))) ||
      ((!cur || differs(cur->reason, reason)) && !(f_reason = kcr_meta_v1_mem_strdup(reason))) ||
      ((!cur || differs(cur->message, m)) && !(f_message = kcr_meta_v1_mem_strdup(m))))
    goto done;
  if (!cur) {
    void *arr = *conds;
    if (grow(&arr, *len, sizeof(**conds)) != 0)
      goto done;
    *conds = arr;
    cur = &(*conds)[(*len)++];
    if (has) /* a header's KCR_LIST has no presence flag */
      *has = true;
    replace(&cur->type, f_type);
    f_type = NULL;
  }
  if (f_status || f_time || f_reason || f_message || !cur->has_observed_generation ||
      cur->observed_generation != observed_generation) {
    if (changed)
      *changed = true;
  }
  replace(&cur->status, f_status);
  replace(&cur->last_transition_time, f_time);
  replace(&cur->reason, f_reason);
  replace(&cur->message, f_message);
  f_status = f_time = f_reason = f_message = NULL;
  cur->observed_generation = observed_generation;
  cur->has_observed_generation = true;
  rc = 0;
done:
  kcr_meta_v1_mem_free(f_type);
  kcr_meta_v1_mem_free(f_status);
  kcr_meta_v1_mem_free(f_time);
  kcr_meta_v1_mem_free(f_reason);
  kcr_meta_v1_mem_free(f_message);
  if (m != msg)
    kcr_meta_v1_mem_free(m);
  return rc;
}

bool kcr_typed_condition_remove(kcr_meta_v1_condition_t **conds, size_t *len, bool *has,
                                const char *type) {
  kcr_meta_v1_condition_t *c = kcr_typed_condition_find(conds, len, has, type);
  size_t i;
  if (!c)
    return false;
  i = (size_t)(c - *conds);
  kcr_meta_v1_condition_clear(c);
  memmove(c, c + 1, (*len - i - 1) * sizeof(*c));
  (*len)--;
  return true;
}

static bool status_is(kcr_meta_v1_condition_t *const *conds, const size_t *len, const char *type,
                      const char *want) {
  const kcr_meta_v1_condition_t *c = kcr_typed_condition_find(conds, len, NULL, type);
  return c && c->status && strcmp(c->status, want) == 0;
}

bool kcr_typed_condition_is_true(kcr_meta_v1_condition_t *const *conds, const size_t *len,
                                 const bool *has, const char *type) {
  (void)has;
  return status_is(conds, len, type, "True");
}

bool kcr_typed_condition_is_false(kcr_meta_v1_condition_t *const *conds, const size_t *len,
                                  const bool *has, const char *type) {
  (void)has;
  return status_is(conds, len, type, "False");
}

/* ---- merge patches ---- */

int kcr_typed_merge_from(const kcr_scheme_t *s, const kcr_gvk *gvk, const void *before,
                         const void *after, unsigned flags, json_t **out, kcr_error_t *err) {
  const kcr_kind_info *k;
  json_t *b = NULL, *a = NULL, *md;
  const char *rv;
  int rc;
  *out = NULL;
  if (!before || !after)
    return kcr_error_set(err, KCR_EINVAL, "merge from: no before or after");
  if ((rc = kcr__scheme_codec_of(s, gvk, &k, err)) != 0 ||
      (rc = kcr_scheme_encode(k, before, &b, err)) != 0 ||
      (rc = kcr_scheme_encode(k, after, &a, err)) != 0)
    goto done;
  if ((rc = kcr_merge_patch_diff(b, a, out)) != 0) {
    kcr_error_set(err, rc, "merge from: %s", kcr_strerror(rc));
    goto done;
  }
  if (flags & KCR_MERGE_FROM_OPTIMISTIC_LOCK) {
    /* client.MergeFromWithOptimisticLock: the patch names the version read. */
    rv = kcr_meta_resource_version(a);
    if (!*rv) {
      rc = kcr_error_set(err, KCR_EINVAL,
                         "merge from: cannot use the optimistic lock, %s %s has no "
                         "resourceVersion",
                         k->kind, kcr_meta_name(a));
      goto done;
    }
    md = json_object_get(*out, "metadata");
    if (!md && json_object_set_new(*out, "metadata", md = json_object()) != 0)
      md = NULL;
    if (!md || json_object_set_new(md, "resourceVersion", json_string(rv)) != 0) {
      rc = kcr_error_set(err, KCR_ENOMEM, "merge from: out of memory");
      goto done;
    }
  }
done:
  if (rc) {
    json_decref(*out);
    *out = NULL;
  }
  json_decref(b);
  json_decref(a);
  return rc;
}

int kcr_typed_patch_merge_from(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                               const void *before, const void *after, unsigned flags,
                               const char *subresource, void **out, kcr_error_t *err) {
  json_t *patch = NULL;
  char *bytes;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = kcr_typed_merge_from(s, gvk, before, after, flags, &patch, err)) != 0)
    return rc;
  bytes = json_dumps(patch, JSON_COMPACT);
  json_decref(patch);
  if (!bytes)
    return kcr_error_set(err, KCR_ENOMEM, "merge from: out of memory");
  rc = kcr_typed_patch(c, s, gvk, after, KCR_PATCH_MERGE, bytes, strlen(bytes), subresource, out,
                       err);
  kcr_meta_v1_mem_free(bytes); /* json_dumps: jansson's allocator, as the types' */
  return rc;
}

/* ---- create or update ---- */

/* mutation: what the JSON helper's mutate callback needs to run a typed one. */
typedef struct mutation {
  const kcr_kind_info *k;
  kcr_typed_mutate_fn f;
  void *data;
} mutation_t;

/* on_mutate is the kcr_mutate_fn the JSON helper calls: obj is decoded, the
 * typed mutate runs, and obj becomes the encoding of the result. */
static int on_mutate(json_t *obj, void *data, kcr_error_t *err) {
  mutation_t *m = data;
  void *typed = NULL;
  json_t *enc = NULL;
  int rc;
  if (!m->f)
    return 0;
  if ((rc = m->k->decode(obj, &typed, err, m->k->codec_data)) != 0)
    return rc;
  rc = m->f(typed, m->data, err);
  if (rc == 0)
    rc = kcr_scheme_encode(m->k, typed, &enc, err);
  kcr_scheme_free_typed(m->k, typed);
  if (rc == 0) {
    json_object_clear(obj);
    if (json_object_update(obj, enc) != 0)
      rc = kcr_error_set(err, KCR_ENOMEM, "create or update: out of memory");
  }
  json_decref(enc);
  return rc;
}

static int typed_upsert(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                        void **obj, kcr_typed_mutate_fn f, void *data, bool patch,
                        kcr_op_result *res, kcr_error_t *err) {
  mutation_t m = {NULL, f, data};
  json_t *j = NULL;
  void *got = NULL;
  int rc;
  if (res)
    *res = KCR_OP_UNCHANGED;
  if (!obj || !*obj)
    return kcr_error_set(err, KCR_EINVAL, "create or update: no object");
  if ((rc = kcr__scheme_codec_of(s, gvk, &m.k, err)) != 0 ||
      (rc = kcr_scheme_encode(m.k, *obj, &j, err)) != 0)
    return rc;
  rc = patch ? kcr_create_or_patch(c, j, on_mutate, &m, res, err)
             : kcr_create_or_update(c, j, on_mutate, &m, res, err);
  if (rc == 0)
    rc = m.k->decode(j, &got, err, m.k->codec_data);
  json_decref(j);
  if (rc)
    return rc;
  kcr_scheme_free_typed(m.k, *obj);
  *obj = got;
  return 0;
}

int kcr_typed_create_or_update(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                               void **obj, kcr_typed_mutate_fn f, void *data, kcr_op_result *res,
                               kcr_error_t *err) {
  return typed_upsert(c, s, gvk, obj, f, data, false, res, err);
}

int kcr_typed_create_or_patch(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                              void **obj, kcr_typed_mutate_fn f, void *data, kcr_op_result *res,
                              kcr_error_t *err) {
  return typed_upsert(c, s, gvk, obj, f, data, true, res, err);
}
