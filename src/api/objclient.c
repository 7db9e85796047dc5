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
  if ((o->dry_run || o->field_validation) && !(c->ops->flags & KCR_OBJCLIENT_WRITE_OPTIONS))
    return unsupported(out, err, "apply with dry run or field validation");
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
  if (o->dry_run && !(c->ops->flags & KCR_OBJCLIENT_WRITE_OPTIONS))
    return unsupported(NULL, err, "delete with dry run");
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

/* ---- write options, collections, subresources, metadata ---- */

static const kcr_write_options no_write_options;

static bool write_options_set(const kcr_write_options *o) {
  return o && (o->dry_run || o->field_manager || o->field_validation);
}

int kcr_objclient_create_with(const kcr_objclient *c, const json_t *obj, const kcr_write_options *o,
                              json_t **out, kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc;
  if (!c->ops->create_with) {
    if (write_options_set(o))
      return unsupported(out, err,
                         "create with write options (dry run, field manager, "
                         "field validation)");
    return kcr_objclient_create(c, obj, out, err);
  }
  rc = c->ops->create_with(c, obj, o ? o : &no_write_options, answer(c, out, &tmp), err);
  hand_over(tmp, out);
  return rc;
}

/* update_with reaches the update_with op (body NULL: obj itself). */
static int update_with(const kcr_objclient *c, const json_t *obj, const char *subresource,
                       const json_t *body, const kcr_write_options *o, json_t **out,
                       kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc = c->ops->update_with(c, obj, subresource, body, o ? o : &no_write_options,
                               answer(c, out, &tmp), err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_update_with(const kcr_objclient *c, const json_t *obj, const char *subresource,
                              const kcr_write_options *o, json_t **out, kcr_error_t *err) {
  if (!c->ops->update_with) {
    if (write_options_set(o))
      return unsupported(out, err,
                         "update with write options (dry run, field manager, "
                         "field validation)");
    return kcr_objclient_update(c, obj, subresource, out, err);
  }
  return update_with(c, obj, subresource, NULL, o, out, err);
}

int kcr_objclient_update_subresource(const kcr_objclient *c, const json_t *obj,
                                     const char *subresource, const json_t *body,
                                     const kcr_write_options *o, json_t **out, kcr_error_t *err) {
  if (!subresource || !*subresource || !json_is_object(body)) {
    if (out)
      *out = NULL;
    return kcr_error_set(err, KCR_EINVAL,
                         "object client: update_subresource needs a subresource and its body");
  }
  if (!c->ops->update_with)
    return unsupported(out, err, "update a subresource with a body of its own");
  return update_with(c, obj, subresource, body, o, out, err);
}

int kcr_objclient_patch_with(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                             const char *patch, size_t patch_len, const char *subresource,
                             const kcr_write_options *o, json_t **out, kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc;
  if (!c->ops->patch_with) {
    if (write_options_set(o))
      return unsupported(out, err,
                         "patch with write options (dry run, field manager, "
                         "field validation)");
    return kcr_objclient_patch(c, obj, type, patch, patch_len, subresource, out, err);
  }
  rc = c->ops->patch_with(c, obj, type, patch, patch_len, subresource, o ? o : &no_write_options,
                          answer(c, out, &tmp), err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_delete_all_of(const kcr_objclient *c, const kcr_gvk *gvk,
                                const kcr_list_options *lo, const kcr_delete_options *o,
                                kcr_error_t *err) {
  kcr_list_options no_list;
  kcr_delete_options no_delete;
  if (!gvk || !gvk->version || !gvk->kind)
    return kcr_error_set(err, KCR_EINVAL, "object client: delete_all_of needs a kind");
  if (lo && ((lo->index && *lo->index) || lo->index_value))
    return kcr_error_set(err, KCR_EINVAL,
                         "object client: delete_all_of %s: an index is the cache's, the API "
                         "server selects by namespace, labels and fields only",
                         gvk->kind);
  if (!c->ops->delete_all_of)
    return unsupported(NULL, err, "delete all of a kind");
  if (!lo) {
    memset(&no_list, 0, sizeof(no_list));
    lo = &no_list;
  }
  if (!o) {
    memset(&no_delete, 0, sizeof(no_delete));
    o = &no_delete;
  }
  return c->ops->delete_all_of(c, gvk, lo, o, err);
}

int kcr_objclient_get_subresource(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                                  const char *name, const char *subresource, json_t **out,
                                  kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc;
  if (!gvk || !gvk->version || !gvk->kind || !name || !subresource || !*subresource) {
    if (out)
      *out = NULL;
    return kcr_error_set(err, KCR_EINVAL,
                         "object client: get_subresource needs a kind, a name and a subresource");
  }
  if (!c->ops->get_subresource)
    return unsupported(out, err, "get a subresource");
  rc = c->ops->get_subresource(c, gvk, ns, name, subresource, &tmp, err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_create_subresource(const kcr_objclient *c, const json_t *obj,
                                     const char *subresource, const json_t *body,
                                     const kcr_write_options *o, json_t **out, kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc;
  if (!subresource || !*subresource || !json_is_object(body)) {
    if (out)
      *out = NULL;
    return kcr_error_set(err, KCR_EINVAL,
                         "object client: create_subresource needs a subresource and its body");
  }
  if (!c->ops->create_subresource)
    return unsupported(out, err, "create a subresource");
  rc = c->ops->create_subresource(c, obj, subresource, body, o ? o : &no_write_options,
                                  answer(c, out, &tmp), err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_get_metadata(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                               const char *name, json_t **out, kcr_error_t *err) {
  json_t *tmp = NULL;
  int rc;
  if (!gvk || !gvk->version || !gvk->kind || !name) {
    if (out)
      *out = NULL;
    return kcr_error_set(err, KCR_EINVAL, "object client: get_metadata needs a kind and a name");
  }
  if (!c->ops->get_metadata)
    return unsupported(out, err, "get metadata only");
  rc = c->ops->get_metadata(c, gvk, ns, name, &tmp, err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_list_metadata(const kcr_objclient *c, const kcr_gvk *gvk,
                                const kcr_list_options *o, json_t **out, kcr_error_t *err) {
  kcr_list_options none;
  json_t *tmp = NULL;
  int rc;
  if (!gvk || !gvk->version || !gvk->kind) {
    if (out)
      *out = NULL;
    return kcr_error_set(err, KCR_EINVAL, "object client: list_metadata needs a kind");
  }
  if (!c->ops->list_metadata)
    return unsupported(out, err, "list metadata only");
  if (!o) {
    memset(&none, 0, sizeof(none));
    o = &none;
  }
  rc = c->ops->list_metadata(c, gvk, o, &tmp, err);
  hand_over(tmp, out);
  return rc;
}

int kcr_objclient_watch(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                        const kcr_watch_options *o, kcr_objwatch_t **out, kcr_error_t *err) {
  kcr_watch_options none;
  if (!out)
    return kcr_error_set(err, KCR_EINVAL, "object client: watch needs somewhere to put it");
  *out = NULL;
  if (!gvk || !gvk->version || !gvk->kind)
    return kcr_error_set(err, KCR_EINVAL, "object client: watch needs a kind");
  if (!c->ops->watch)
    return kcr_error_set(err, KCR_ENOTSUP, "this object client cannot watch");
  if (!o) {
    memset(&none, 0, sizeof(none));
    o = &none;
  }
  return c->ops->watch(c, gvk, ns, o, out, err);
}

/* ---- kcr_objclient_with_field_owner: every write names the owner ---- */

/* fo_inner is the client the wrapper passes a call to: its inner client,
 * carrying the wrapper copy's cancel token when it has one. */
static kcr_objclient fo_inner(const kcr_objclient *c) {
  const kcr_field_owner_client *fo = c->data;
  kcr_objclient in = fo->inner;
  if (c->cancel)
    in.cancel = c->cancel;
  return in;
}

/* fo_options: o with the owner as the field manager unless o names one. */
static kcr_write_options fo_options(const kcr_objclient *c, const kcr_write_options *o) {
  const kcr_field_owner_client *fo = c->data;
  kcr_write_options w = *o;
  if (!w.field_manager)
    w.field_manager = fo->owner;
  return w;
}

static int fo_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                  json_t **out, kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  return kcr_objclient_get(&in, gvk, ns, name, out, err);
}

static int fo_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                   json_t **out, kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  return kcr_objclient_list(&in, gvk, o, out, err);
}

static int fo_create_with(const kcr_objclient *c, const json_t *obj, const kcr_write_options *o,
                          json_t **out, kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  kcr_write_options w = fo_options(c, o);
  return kcr_objclient_create_with(&in, obj, &w, out, err);
}

static int fo_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  return fo_create_with(c, obj, &no_write_options, out, err);
}

static int fo_update_with(const kcr_objclient *c, const json_t *obj, const char *sub,
                          const json_t *body, const kcr_write_options *o, json_t **out,
                          kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  kcr_write_options w = fo_options(c, o);
  if (body)
    return kcr_objclient_update_subresource(&in, obj, sub, body, &w, out, err);
  return kcr_objclient_update_with(&in, obj, sub, &w, out, err);
}

static int fo_update(const kcr_objclient *c, const json_t *obj, const char *sub, json_t **out,
                     kcr_error_t *err) {
  return fo_update_with(c, obj, sub, NULL, &no_write_options, out, err);
}

static int fo_patch_with(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                         const char *patch, size_t len, const char *sub, const kcr_write_options *o,
                         json_t **out, kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  kcr_write_options w = fo_options(c, o);
  return kcr_objclient_patch_with(&in, obj, type, patch, len, sub, &w, out, err);
}

static int fo_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                    const char *patch, size_t len, const char *sub, json_t **out,
                    kcr_error_t *err) {
  return fo_patch_with(c, obj, type, patch, len, sub, &no_write_options, out, err);
}

static int fo_apply(const kcr_objclient *c, const json_t *obj, const kcr_apply_options *o,
                    const char *sub, json_t **out, kcr_error_t *err) {
  const kcr_field_owner_client *fo = c->data;
  kcr_objclient in = fo_inner(c);
  kcr_apply_options a = *o;
  if (!a.field_manager)
    a.field_manager = fo->owner;
  return kcr_objclient_apply(&in, obj, &a, sub, out, err);
}

static int fo_del(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                  kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  return kcr_objclient_delete(&in, obj, o, err);
}

static int fo_delete_all_of(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *lo,
                            const kcr_delete_options *o, kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  return kcr_objclient_delete_all_of(&in, gvk, lo, o, err);
}

static int fo_get_subresource(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                              const char *name, const char *sub, json_t **out, kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  return kcr_objclient_get_subresource(&in, gvk, ns, name, sub, out, err);
}

static int fo_create_subresource(const kcr_objclient *c, const json_t *obj, const char *sub,
                                 const json_t *body, const kcr_write_options *o, json_t **out,
                                 kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  kcr_write_options w = fo_options(c, o);
  return kcr_objclient_create_subresource(&in, obj, sub, body, &w, out, err);
}

static int fo_get_metadata(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                           const char *name, json_t **out, kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  return kcr_objclient_get_metadata(&in, gvk, ns, name, out, err);
}

static int fo_list_metadata(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                            json_t **out, kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  return kcr_objclient_list_metadata(&in, gvk, o, out, err);
}

static int fo_watch(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                    const kcr_watch_options *o, kcr_objwatch_t **out, kcr_error_t *err) {
  kcr_objclient in = fo_inner(c);
  return kcr_objclient_watch(&in, gvk, ns, o, out, err);
}

/* Every call goes through the inner client's wrappers, which check what it
 * supports: so this client claims every flag. */
static const kcr_objclient_ops field_owner_ops = {
    .get = fo_get,
    .list = fo_list,
    .create = fo_create,
    .update = fo_update,
    .patch = fo_patch,
    .apply = fo_apply,
    .del = fo_del,
    .flags = KCR_OBJCLIENT_OUT_OPTIONAL | KCR_OBJCLIENT_WRITE_OPTIONS,
    .create_with = fo_create_with,
    .update_with = fo_update_with,
    .patch_with = fo_patch_with,
    .delete_all_of = fo_delete_all_of,
    .get_subresource = fo_get_subresource,
    .create_subresource = fo_create_subresource,
    .get_metadata = fo_get_metadata,
    .list_metadata = fo_list_metadata,
    .watch = fo_watch,
};

const kcr_objclient *kcr_objclient_with_field_owner(kcr_field_owner_client *fo,
                                                    const kcr_objclient *inner, const char *owner) {
  memset(fo, 0, sizeof(*fo));
  fo->inner = *inner;
  fo->owner = owner;
  fo->client.ops = &field_owner_ops;
  fo->client.data = fo;
  fo->client.field_manager = owner;
  return &fo->client;
}
