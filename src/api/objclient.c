/* SPDX-License-Identifier: MIT */
/*
 * objclient.c: the object client's calls (kcr/objclient.h). Each one fills in
 * what the ops may rely on (options never NULL, an out pointer always there),
 * so an implementation of kcr_objclient_ops (the manager's, a test's fake) only
 * does the work; and the small helpers a reconciler needs around them.
 */
#include <string.h>

#include "kcr/apierror.h"
#include "kcr/meta.h"
#include "kcr/objclient.h"

/* hand_over gives tmp to *out, or drops it when the caller did not want it. */
static void hand_over(json_t *tmp, json_t **out) {
  if (out)
    *out = tmp;
  else
    json_decref(tmp);
}

static int unsupported(json_t **out, kcr_error_t *err, const char *verb) {
  if (out)
    *out = NULL;
  return kcr_error_set(err, KCR_ENOTSUP, "this object client cannot %s", verb);
}

int kcr_objclient_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                      json_t **out, kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc;
  if (!gvk || !gvk->version || !gvk->kind || !name) {
    if (out)
      *out = NULL;
    return kcr_error_set(err, KCR_EINVAL, "object client: get needs a kind and a name");
  }
  rc = c->ops->get(c, gvk, ns, name, &tmp, err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                       json_t **out, kcr_error_t *err) {
  kcr_list_options none;
  json_t *tmp = NULL;
  int rc;
  if (!c->ops->list)
    return unsupported(out, err, "list");
  if (!gvk || !gvk->version || !gvk->kind) {
    if (out)
      *out = NULL;
    return kcr_error_set(err, KCR_EINVAL, "object client: list needs a kind");
  }
  if (!o) {
    memset(&none, 0, sizeof(none));
    o = &none;
  }
  rc = c->ops->list(c, gvk, o, &tmp, err);
  hand_over(tmp, out);
  return rc;
}

/* answer says where a write's answer goes: nowhere when nobody wants it and
 * the client can skip it, else into tmp (handed over or released after). */
static json_t **answer(const kcr_objclient *c, json_t **out, json_t **tmp) {
  return !out && (c->ops->flags & KCR_OBJCLIENT_OUT_OPTIONAL) ? NULL : tmp;
}

int kcr_objclient_create(const kcr_objclient *c, const json_t *obj, json_t **out,
                         kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc = c->ops->create(c, obj, answer(c, out, &tmp), err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_update(const kcr_objclient *c, const json_t *obj, const char *subresource,
                         json_t **out, kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc = c->ops->update(c, obj, subresource, answer(c, out, &tmp), err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_update_rv(const kcr_objclient *c, const json_t *obj, const char *subresource,
                            char *rv, size_t rv_size, kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc;
  if (!rv || rv_size == 0)
    return kcr_error_set(err, KCR_EINVAL, "object client: update_rv needs room for the version");
  rv[0] = '\0';
  if (c->ops->update_rv) {
    rc = c->ops->update_rv(c, obj, subresource, rv, rv_size, err);
    if (rc)
      rv[0] = '\0';
    return rc;
  }
  rc = c->ops->update(c, obj, subresource, &tmp, err);
  if (rc == 0) {
    const char *v = tmp ? kcr_meta_resource_version(tmp) : "";
    size_t n = strlen(v);
    if (n < rv_size)
      memcpy(rv, v, n + 1);
  }
  json_decref(tmp);
  return rc;
}

int kcr_objclient_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                        const char *patch, size_t patch_len, const char *subresource, json_t **out,
                        kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc = c->ops->patch(c, obj, type, patch, patch_len, subresource, answer(c, out, &tmp), err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_apply(const kcr_objclient *c, const json_t *obj, const kcr_apply_options *o,
                        const char *subresource, json_t **out, kcr_error_t *err) {
  kcr_apply_options none;
  json_t *tmp = NULL;
  int rc;
  if (!c->ops->apply)
    return unsupported(out, err, "apply");
  if (!o) {
    memset(&none, 0, sizeof(none));
    o = &none;
  }
  rc = c->ops->apply(c, obj, o, subresource, answer(c, out, &tmp), err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_delete(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                         kcr_error_t *err) {
  kcr_delete_options none;
  if (!c->ops->del)
    return unsupported(NULL, err, "delete");
  if (!o) {
    memset(&none, 0, sizeof(none));
    o = &none;
  }
  return c->ops->del(c, obj, o, err);
}

int kcr_objclient_del(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                      kcr_error_t *err) {
  return kcr_objclient_delete(c, obj, o, err);
}

/* ignore clears err and returns 0 when rc is an API error that is(err) says
 * the caller tolerates; otherwise it returns rc. */
static int ignore(int rc, kcr_error_t *err, bool (*is)(const kcr_error_t *)) {
  if (rc == KCR_EAPI && err && is(err)) {
    kcr_error_clear(err);
    return 0;
  }
  return rc;
}

int kcr_ignore_not_found(int rc, kcr_error_t *err) {
  return ignore(rc, err, kcr_error_is_not_found);
}

int kcr_ignore_already_exists(int rc, kcr_error_t *err) {
  return ignore(rc, err, kcr_error_is_already_exists);
}

int kcr_ignore_conflict(int rc, kcr_error_t *err) {
  return ignore(rc, err, kcr_error_is_conflict);
}

json_t *kcr_list_items(const json_t *list) {
  json_t *items = json_object_get(list, "items");
  return json_is_array(items) ? items : NULL;
}
