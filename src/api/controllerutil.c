/* SPDX-License-Identifier: MIT */
/*
 * controllerutil.c: finalizers, owner references, the object client's verbs and
 * create-or-update/create-or-patch (controller-runtime's controllerutil).
 *
 * Design: every helper edits the caller's json_t in place and leaves it unchanged
 * on error (owner references are built completely before the array is touched).
 * Removing a finalizer on the server is a JSON Patch whose first op tests the
 * whole finalizers array as read: a concurrent change by another controller makes
 * the server refuse the patch instead of letting us write back a list that drops
 * its finalizer, which a merge patch or an update of a stale copy would do.
 * Create-or-patch sends RFC 7386 merge patches computed here (kcr_merge_patch_diff)
 * without resourceVersion, as controller-runtime's client.MergeFrom does.
 */
#include <stdio.h>
#include <string.h>

#include "api/controllerutil_internal.h"
#include "kcr/apierror.h"
#include "kcr/controllerutil.h"
#include "kcr/meta.h"
#include "util/alloc.h"

/* ---- finalizers ---- */

bool kcr_finalizer_contains(const json_t *obj, const char *name) {
  size_t i;
  json_t *f;
  json_t *fins = kcr_meta_finalizers(obj);
  if (!json_is_array(fins) || !name)
    return false;
  json_array_foreach(fins, i, f) {
    if (json_is_string(f) && strcmp(json_string_value(f), name) == 0)
      return true;
  }
  return false;
}

int kcr_finalizer_add(json_t *obj, const char *name, bool *changed) {
  json_t *md, *fins;
  if (changed)
    *changed = false;
  if (!json_is_object(obj) || !name)
    return KCR_EINVAL;
  if (kcr_finalizer_contains(obj, name))
    return 0;
  md = json_object_get(obj, "metadata");
  if (!md) {
    md = json_object();
    if (!md || json_object_set_new(obj, "metadata", md) != 0)
      return KCR_ENOMEM;
  }
  if (!json_is_object(md))
    return KCR_EINVAL;
  fins = json_object_get(md, "finalizers");
  if (!fins || json_is_null(fins)) {
    fins = json_array();
    if (!fins || json_object_set_new(md, "finalizers", fins) != 0)
      return KCR_ENOMEM;
  }
  if (!json_is_array(fins))
    return KCR_EINVAL;
  if (json_array_append_new(fins, json_string(name)) != 0)
    return KCR_ENOMEM;
  if (changed)
    *changed = true;
  return 0;
}

int kcr_finalizer_remove(json_t *obj, const char *name, bool *changed) {
  json_t *fins;
  if (changed)
    *changed = false;
  if (!json_is_object(obj) || !name)
    return KCR_EINVAL;
  fins = kcr_meta_finalizers(obj);
  if (!fins)
    return 0;
  if (!json_is_array(fins))
    return KCR_EINVAL;
  for (size_t i = json_array_size(fins); i-- > 0;) {
    json_t *f = json_array_get(fins, i);
    if (json_is_string(f) && strcmp(json_string_value(f), name) == 0) {
      json_array_remove(fins, i);
      if (changed)
        *changed = true;
    }
  }
  return 0;
}

/* dump makes a kcr-allocated compact copy of j's JSON text. */
static int dump(const json_t *j, char **out) {
  size_t n = json_dumpb(j, NULL, 0, JSON_COMPACT);
  char *s;
  *out = NULL;
  if (n == 0)
    return KCR_ENOMEM;
  s = kcr__malloc(n + 1);
  if (!s)
    return KCR_ENOMEM;
  if (json_dumpb(j, s, n, JSON_COMPACT) != n) {
    kcr__free(s);
    return KCR_ENOMEM;
  }
  s[n] = '\0';
  *out = s;
  return 0;
}

int kcr_finalizer_remove_patch(const json_t *obj, const char *name, char **out, kcr_error_t *err) {
  json_t *fins, *ops = NULL;
  int rc = KCR_ENOMEM;
  *out = NULL;
  if (!json_is_object(obj) || !name)
    return kcr_error_set(err, KCR_EINVAL, "finalizer patch: no object or name");
  fins = kcr_meta_finalizers(obj);
  if (!fins || !kcr_finalizer_contains(obj, name))
    return 0;
  ops = json_array();
  if (!ops || json_array_append_new(ops, json_pack("{s:s, s:s, s:O}", "op", "test", "path",
                                                   "/metadata/finalizers", "value", fins)) != 0)
    goto fail;
  for (size_t i = json_array_size(fins); i-- > 0;) {
    json_t *f = json_array_get(fins, i);
    char path[64];
    if (!json_is_string(f) || strcmp(json_string_value(f), name) != 0)
      continue;
    snprintf(path, sizeof(path), "/metadata/finalizers/%zu", i);
    if (json_array_append_new(ops, json_pack("{s:s, s:s}", "op", "remove", "path", path)) != 0)
      goto fail;
  }
  rc = dump(ops, out);
fail:
  json_decref(ops);
  if (rc)
    kcr_error_set(err, rc, "finalizer patch: out of memory");
  return rc;
}

int kcr_finalizer_add_patch(const json_t *obj, const char *name, char **out, kcr_error_t *err) {
  json_t *fins, *ops = NULL;
  const char *rv;
  int rc = KCR_ENOMEM;
  *out = NULL;
  if (!json_is_object(obj) || !name || !*name)
    return kcr_error_set(err, KCR_EINVAL, "finalizer patch: no object or name");
  if (kcr_finalizer_contains(obj, name))
    return 0;
  fins = kcr_meta_finalizers(obj);
  ops = json_array();
  if (!ops)
    goto fail;
  if (json_is_array(fins) && json_array_size(fins) > 0) {
    if (json_array_append_new(ops, json_pack("{s:s, s:s, s:O}", "op", "test", "path",
                                             "/metadata/finalizers", "value", fins)) != 0 ||
        json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "add", "path",
                                             "/metadata/finalizers/-", "value", name)) != 0)
      goto fail;
  } else {
    /* No list to test: an absent member cannot be tested for, so the
     * resourceVersion stands guard (a concurrent writer makes it 409). */
    rv = kcr_meta_resource_version(obj);
    if (rv && *rv &&
        json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "test", "path",
                                             "/metadata/resourceVersion", "value", rv)) != 0)
      goto fail;
    if (json_array_append_new(ops, json_pack("{s:s, s:s, s:[s]}", "op", "add", "path",
                                             "/metadata/finalizers", "value", name)) != 0)
      goto fail;
  }
  rc = dump(ops, out);
fail:
  json_decref(ops);
  if (rc)
    kcr_error_set(err, rc, "finalizer patch: out of memory");
  return rc;
}

/* ---- owner references ---- */

const char *kcr_api_version_group(const char *api_version, size_t *len) {
  const char *slash = api_version ? strchr(api_version, '/') : NULL;
  *len = slash ? (size_t)(slash - api_version) : 0;
  return api_version ? api_version : "";
}

bool kcr__owner_ref_matches(const char *api_version, const char *kind, const char *ref_name,
                            const kcr_gvk *gvk, const char *name) {
  const char *g = gvk && gvk->group ? gvk->group : "", *rg;
  size_t rglen;
  if (!api_version || !kind || !ref_name || !gvk || !gvk->kind || !name)
    return false;
  rg = kcr_api_version_group(api_version, &rglen);
  return strlen(g) == rglen && memcmp(rg, g, rglen) == 0 && strcmp(kind, gvk->kind) == 0 &&
         strcmp(ref_name, name) == 0;
}

bool kcr_owner_ref_refers_to(const json_t *ref, const kcr_gvk *gvk, const char *name) {
  return kcr__owner_ref_matches(json_string_value(json_object_get(ref, "apiVersion")),
                                json_string_value(json_object_get(ref, "kind")),
                                json_string_value(json_object_get(ref, "name")), gvk, name);
}

bool kcr_owner_ref_refers(const json_t *ref, const char *api_version, const char *kind,
                          const char *name) {
  char group[KCR_GVK_GROUP_MAX];
  const char *g;
  size_t len;
  kcr_gvk gvk;
  g = kcr_api_version_group(api_version, &len); /* NULL: the core group */
  if (len >= sizeof(group))
    return false;
  memcpy(group, g, len);
  group[len] = '\0';
  gvk = (kcr_gvk){group, NULL, kind};
  return kcr_owner_ref_refers_to(ref, &gvk, name);
}

/* refers_to_object tells whether ref names obj (an object, or another owner
 * reference: both carry apiVersion and kind at the top). */
static bool refers_to_object(const json_t *ref, const json_t *obj, const char *name) {
  char group[KCR_GVK_GROUP_MAX];
  kcr_gvk gvk;
  return kcr_meta_gvk(obj, &gvk, group, sizeof(group)) == 0 &&
         kcr_owner_ref_refers_to(ref, &gvk, name);
}

int kcr__owner_ref_validate(const char *api_version, const char *kind, const char *name,
                            const char *uid, const char *ons, const char *objns, kcr_error_t *err) {
  if (!*api_version || !*kind || !*name || !*uid)
    return kcr_error_set(err, KCR_EINVAL,
                         "owner reference: owner needs apiVersion, kind, metadata.name and uid");
  if (*ons) {
    if (!*objns)
      return kcr_error_set(err, KCR_EINVAL,
                           "cluster-scoped resource must not have a namespace-scoped owner, "
                           "owner's namespace %s",
                           ons);
    if (strcmp(ons, objns) != 0)
      return kcr_error_set(err, KCR_EINVAL,
                           "cross-namespace owner references are disallowed, owner's namespace "
                           "%s, obj's namespace %s",
                           ons, objns);
  }
  return 0;
}

/* validate_owner is controller-runtime's validateOwner plus field checks. */
static int validate_owner(const json_t *owner, const json_t *obj, kcr_error_t *err) {
  if (!json_is_object(obj))
    return kcr_error_set(err, KCR_EINVAL, "owner reference: object is not a JSON object");
  return kcr__owner_ref_validate(kcr_meta_api_version(owner), kcr_meta_kind(owner),
                                 kcr_meta_name(owner), kcr_meta_uid(owner),
                                 kcr_meta_namespace(owner), kcr_meta_namespace(obj), err);
}

/* upsert replaces the reference to the same owner, or appends ref (stolen). */
static int upsert(json_t *obj, json_t *ref) {
  json_t *md = json_object_get(obj, "metadata"), *refs;
  size_t i;
  json_t *r;
  const char *n = json_string_value(json_object_get(ref, "name"));
  if (!md) {
    md = json_object();
    if (!md || json_object_set_new(obj, "metadata", md) != 0) {
      json_decref(ref);
      return KCR_ENOMEM;
    }
  }
  if (!json_is_object(md)) {
    json_decref(ref);
    return KCR_EINVAL;
  }
  refs = json_object_get(md, "ownerReferences");
  if (!refs || json_is_null(refs)) {
    refs = json_array();
    if (!refs || json_object_set_new(md, "ownerReferences", refs) != 0) {
      json_decref(ref);
      return KCR_ENOMEM;
    }
  }
  if (!json_is_array(refs)) {
    json_decref(ref);
    return KCR_EINVAL;
  }
  json_array_foreach(refs, i, r) {
    if (refers_to_object(r, ref, n))
      return json_array_set_new(refs, i, ref) == 0 ? 0 : KCR_ENOMEM;
  }
  return json_array_append_new(refs, ref) == 0 ? 0 : KCR_ENOMEM;
}

static int set_ref(const json_t *owner, json_t *obj, bool controller, kcr_error_t *err) {
  json_t *ref, *existing;
  int rc = validate_owner(owner, obj, err);
  if (rc)
    return rc;
  if (controller) {
    existing = kcr_meta_controller_ref(obj);
    if (existing && !refers_to_object(existing, owner, kcr_meta_name(owner))) {
      const char *ek = json_string_value(json_object_get(existing, "kind"));
      const char *en = json_string_value(json_object_get(existing, "name"));
      return kcr_error_set(err, KCR_EEXIST,
                           "Object %s/%s is already owned by another %s controller %s",
                           kcr_meta_namespace(obj), kcr_meta_name(obj), ek ? ek : "", en ? en : "");
    }
    ref = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "apiVersion", kcr_meta_api_version(owner),
                    "kind", kcr_meta_kind(owner), "name", kcr_meta_name(owner), "uid",
                    kcr_meta_uid(owner), "controller", 1, "blockOwnerDeletion", 1);
  } else {
    ref = json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", kcr_meta_api_version(owner), "kind",
                    kcr_meta_kind(owner), "name", kcr_meta_name(owner), "uid", kcr_meta_uid(owner));
  }
  if (!ref)
    return kcr_error_set(err, KCR_ENOMEM, "owner reference: out of memory");
  rc = upsert(obj, ref);
  if (rc)
    kcr_error_set(err, rc, "owner reference: %s", kcr_strerror(rc));
  return rc;
}

int kcr_owner_ref_set_controller(const json_t *owner, json_t *obj, kcr_error_t *err) {
  return set_ref(owner, obj, true, err);
}

int kcr_owner_ref_set(const json_t *owner, json_t *obj, kcr_error_t *err) {
  return set_ref(owner, obj, false, err);
}

int kcr_owner_ref_remove(const json_t *owner, json_t *obj, kcr_error_t *err) {
  json_t *refs = kcr_meta_owner_references(obj);
  bool found = false;
  if (!json_is_object(obj) || !json_is_object(owner))
    return kcr_error_set(err, KCR_EINVAL, "owner reference: not a JSON object");
  if (!json_is_array(refs) || json_array_size(refs) == 0)
    return kcr_error_set(err, KCR_ENOENT, "%s %s does not have any owner references",
                         kcr_meta_kind(obj), kcr_meta_name(obj));
  for (size_t i = json_array_size(refs); i-- > 0;) {
    if (refers_to_object(json_array_get(refs, i), owner, kcr_meta_name(owner))) {
      json_array_remove(refs, i);
      found = true;
    }
  }
  if (!found)
    return kcr_error_set(err, KCR_ENOENT, "%s %s does not have an owner reference for %s %s",
                         kcr_meta_kind(obj), kcr_meta_name(obj), kcr_meta_kind(owner),
                         kcr_meta_name(owner));
  return 0;
}

/* replace_contents makes obj hold src's members (obj keeps its identity). */
static int replace_contents(json_t *obj, json_t *src) {
  json_object_clear(obj);
  return json_object_update(obj, src) == 0 ? 0 : KCR_ENOMEM;
}

/* send_patch sends a JSON Patch made by kcr_finalizer_{add,remove}_patch (patch:
 * new, freed here; NULL: nothing to send) and makes obj the server's answer. */
static int send_patch(const kcr_objclient *c, json_t *obj, int rc, char *patch, kcr_error_t *err) {
  json_t *got = NULL;
  if (rc || !patch) {
    kcr__free(patch);
    return rc;
  }
  rc = kcr_objclient_patch(c, obj, KCR_PATCH_JSON, patch, strlen(patch), NULL, &got, err);
  kcr__free(patch);
  if (rc == 0 && got)
    rc = replace_contents(obj, got);
  json_decref(got);
  return rc;
}

int kcr_finalizer_remove_remote(const kcr_objclient *c, json_t *obj, const char *name,
                                kcr_error_t *err) {
  char *patch = NULL;
  int rc = kcr_finalizer_remove_patch(obj, name, &patch, err);
  return send_patch(c, obj, rc, patch, err);
}

int kcr_finalizer_add_remote(const kcr_objclient *c, json_t *obj, const char *name,
                             kcr_error_t *err) {
  char *patch = NULL;
  int rc = kcr_finalizer_add_patch(obj, name, &patch, err);
  return send_patch(c, obj, rc, patch, err);
}

/* ---- create or update ---- */

const char *kcr_op_result_name(kcr_op_result r) {
  switch (r) {
  case KCR_OP_CREATED:
    return "created";
  case KCR_OP_UPDATED:
    return "updated";
  case KCR_OP_UPDATED_STATUS:
    return "updatedStatus";
  case KCR_OP_UPDATED_STATUS_ONLY:
    return "updatedStatusOnly";
  case KCR_OP_UNCHANGED:
  default:
    return "unchanged";
  }
}

typedef struct key {
  char ns[256];
  char name[256];
} objkey_t;

static void key_of(const json_t *obj, objkey_t *k) {
  snprintf(k->ns, sizeof(k->ns), "%s", kcr_meta_namespace(obj));
  snprintf(k->name, sizeof(k->name), "%s", kcr_meta_name(obj));
}

/* mutate runs f and checks that the object's key did not change. */
static int mutate(json_t *obj, kcr_mutate_fn f, void *data, const objkey_t *k, kcr_error_t *err) {
  int rc;
  if (!f)
    return 0;
  rc = f(obj, data, err);
  if (rc)
    return rc;
  if (strcmp(k->ns, kcr_meta_namespace(obj)) != 0 || strcmp(k->name, kcr_meta_name(obj)) != 0)
    return kcr_error_set(err, KCR_EINVAL,
                         "MutateFn cannot mutate object name and/or object namespace");
  return 0;
}

/*
 * get_or_create does the common first half: read; if absent, mutate and create
 * (*created). On success with !*created, obj holds what was read.
 */
static int get_or_create(const kcr_objclient *c, json_t *obj, kcr_mutate_fn f, void *data,
                         const objkey_t *k, bool *created, kcr_error_t *err) {
  json_t *got = NULL;
  kcr_error_t gerr = {0};
  int rc;
  char group[KCR_GVK_GROUP_MAX];
  kcr_gvk gvk;
  *created = false;
  if (kcr_meta_gvk(obj, &gvk, group, sizeof(group)) != 0)
    return kcr_error_set(err, KCR_EINVAL, "create or update: the object needs apiVersion and kind");
  rc = kcr_objclient_get(c, &gvk, k->ns, k->name, &got, &gerr);
  if (rc == 0) {
    rc = replace_contents(obj, got);
    json_decref(got);
    return rc;
  }
  if (!kcr_error_is_not_found(&gerr)) {
    if (err && err->code == 0)
      *err = gerr;
    return rc;
  }
  if ((rc = mutate(obj, f, data, k, err)) != 0)
    return rc;
  if ((rc = kcr_objclient_create(c, obj, &got, err)) != 0)
    return rc;
  rc = got ? replace_contents(obj, got) : 0;
  json_decref(got);
  *created = true;
  return rc;
}

int kcr_create_or_update(const kcr_objclient *c, json_t *obj, kcr_mutate_fn f, void *data,
                         kcr_op_result *res, kcr_error_t *err) {
  objkey_t k;
  json_t *before = NULL, *got = NULL;
  bool created;
  int rc;
  if (res)
    *res = KCR_OP_UNCHANGED;
  if (!json_is_object(obj))
    return kcr_error_set(err, KCR_EINVAL, "create or update: not a JSON object");
  key_of(obj, &k);
  if ((rc = get_or_create(c, obj, f, data, &k, &created, err)) != 0)
    return rc;
  if (created) {
    if (res)
      *res = KCR_OP_CREATED;
    return 0;
  }
  before = json_deep_copy(obj);
  if (!before)
    return kcr_error_set(err, KCR_ENOMEM, "create or update: out of memory");
  if ((rc = mutate(obj, f, data, &k, err)) != 0)
    goto done;
  if (json_equal(before, obj))
    goto done;
  if ((rc = kcr_objclient_update(c, obj, NULL, &got, err)) != 0)
    goto done;
  if (got)
    rc = replace_contents(obj, got);
  if (res)
    *res = KCR_OP_UPDATED;
done:
  json_decref(before);
  json_decref(got);
  return rc;
}

int kcr_merge_patch_diff(const json_t *before, const json_t *after, json_t **out) {
  json_t *p = json_object();
  const char *key;
  json_t *av;
  *out = NULL;
  if (!p)
    return KCR_ENOMEM;
  if (!json_is_object(before) || !json_is_object(after)) {
    json_decref(p);
    return KCR_EINVAL;
  }
  json_object_foreach((json_t *)after, key, av) {
    json_t *bv = json_object_get(before, key);
    json_t *d = NULL;
    if (bv && json_equal(bv, av))
      continue;
    if (json_is_object(bv) && json_is_object(av)) {
      int rc = kcr_merge_patch_diff(bv, av, &d);
      if (rc) {
        json_decref(p);
        return rc;
      }
    } else {
      d = json_deep_copy(av);
    }
    if (!d || json_object_set_new(p, key, d) != 0) {
      json_decref(p);
      return KCR_ENOMEM;
    }
  }
  json_object_foreach((json_t *)before, key, av) {
    if (!json_object_get(after, key) && json_object_set_new(p, key, json_null()) != 0) {
      json_decref(p);
      return KCR_ENOMEM;
    }
  }
  *out = p;
  return 0;
}

/* patch_part sends a merge patch from before to after (both without status, or
 * both {"status": ...}) through sub; obj receives the result. */
static int patch_part(const kcr_objclient *c, json_t *obj, const json_t *before,
                      const json_t *after, const char *sub, kcr_error_t *err) {
  json_t *diff = NULL, *got = NULL;
  char *bytes = NULL;
  int rc = kcr_merge_patch_diff(before, after, &diff);
  if (rc == 0)
    rc = dump(diff, &bytes);
  json_decref(diff);
  if (rc)
    return kcr_error_set(err, rc, "create or patch: %s", kcr_strerror(rc));
  rc = kcr_objclient_patch(c, obj, KCR_PATCH_MERGE, bytes, strlen(bytes), sub, &got, err);
  kcr__free(bytes);
  if (rc == 0 && got)
    rc = replace_contents(obj, got);
  json_decref(got);
  return rc;
}

int kcr_create_or_patch(const kcr_objclient *c, json_t *obj, kcr_mutate_fn f, void *data,
                        kcr_op_result *res, kcr_error_t *err) {
  objkey_t k;
  json_t *before = NULL, *after = NULL, *bstatus = NULL, *astatus = NULL;
  kcr_op_result r = KCR_OP_UNCHANGED;
  bool created;
  int rc;
  if (res)
    *res = KCR_OP_UNCHANGED;
  if (!json_is_object(obj))
    return kcr_error_set(err, KCR_EINVAL, "create or patch: not a JSON object");
  key_of(obj, &k);
  if ((rc = get_or_create(c, obj, f, data, &k, &created, err)) != 0)
    return rc;
  if (created) {
    if (res)
      *res = KCR_OP_CREATED;
    return 0;
  }
  rc = KCR_ENOMEM;
  if (!(before = json_deep_copy(obj)))
    goto fail;
  bstatus = json_incref(json_object_get(before, "status"));
  json_object_del(before, "status");
  if ((rc = mutate(obj, f, data, &k, err)) != 0)
    goto fail;
  rc = KCR_ENOMEM;
  if (!(after = json_deep_copy(obj)))
    goto fail;
  astatus = json_incref(json_object_get(after, "status"));
  json_object_del(after, "status");
  if (!json_equal(before, after)) {
    if ((rc = patch_part(c, obj, before, after, NULL, err)) != 0)
      goto fail;
    r = KCR_OP_UPDATED;
  }
  if ((bstatus || astatus) && !(bstatus && astatus && json_equal(bstatus, astatus))) {
    json_t *bw = json_object(), *aw = json_object();
    rc = KCR_ENOMEM;
    if (bw && aw && (!bstatus || json_object_set(bw, "status", bstatus) == 0) &&
        json_object_set(aw, "status", astatus ? astatus : json_null()) == 0) {
      /* The first patch's answer carries the server's status: send ours again. */
      rc = patch_part(c, obj, bw, aw, "status", err);
    } else {
      kcr_error_set(err, rc, "create or patch: out of memory");
    }
    json_decref(bw);
    json_decref(aw);
    if (rc)
      goto fail;
    r = r == KCR_OP_UPDATED ? KCR_OP_UPDATED_STATUS : KCR_OP_UPDATED_STATUS_ONLY;
  }
  rc = 0;
fail:
  if (rc == KCR_ENOMEM)
    kcr_error_set(err, rc, "create or patch: out of memory");
  if (res)
    *res = r;
  json_decref(before);
  json_decref(after);
  json_decref(bstatus);
  json_decref(astatus);
  return rc;
}
