/* SPDX-License-Identifier: MIT */
/*
 * cache_client.c: the cached object client (cache_client_internal.h), the
 * kcr_objclient a manager hands its controllers: reads from the informer
 * cache, writes straight to the API server, each write noted so that the
 * next read waits for the cache to catch up with it (read-your-own-writes).
 * controller-runtime's client built with a cache reader.
 *
 * DESIGN. Reads (get, list) go to kcr_cache_get and kcr_cache_list and put
 * back apiVersion and kind, which the cache's compact objects and list items
 * lack. A write resolves the object's apiVersion/kind to a resource through
 * the REST mapper, sends it with the REST client, and notes the answer with
 * kcr_cache_note_write (or, when the caller takes no answer, only the
 * resourceVersion the client scanned, with kcr_cache_note_write_rv): the ops
 * set KCR_OBJCLIENT_OUT_OPTIONAL, so an answer nobody wants is never parsed.
 *
 * Before each write the client asks its fence, a hook its owner installs
 * (the manager's: what is left of the leader's renew deadline). A write the
 * fence refuses (<= 0 left) fails at once with KCR_ECANCELED and sends
 * nothing; one that goes out gets its timeout cut to what is left, so a
 * leader that loses its lease mid-request stops writing by the deadline.
 * The fence is called on the writing thread (a reconcile's worker) and must
 * be safe there. Nothing here locks: the struct is set once, then read only;
 * the client, the mapper and the cache are thread-safe on their own.
 */
#include <stdint.h>
#include <string.h>

#include "cache/cache_client_internal.h"
#include "kcr/apierror.h"
#include "kcr/meta.h"

/* typed sets apiVersion and kind, which list items from the server lack. */
static int typed(json_t *obj, const char *av, const char *kind) {
  if (json_object_set_new(obj, "apiVersion", json_string(av)) != 0 ||
      json_object_set_new(obj, "kind", json_string(kind)) != 0)
    return KCR_ENOMEM;
  return 0;
}

static int oc_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                  json_t **out, kcr_error_t *err) {
  kcr__cache_client_t *cc = c->data;
  char av[2 * KCR_MAPPING_NAME_MAX + 2];
  int rc;
  *out = NULL;
  if (kcr_gvk_api_version(gvk, av, sizeof(av)) < 0)
    return kcr_error_set(err, KCR_EINVAL, "object client: the kind's group or version is too long");
  rc = kcr_cache_get(cc->cache, gvk, ns, name, out, err);
  if (rc == 0 && (rc = typed(*out, av, gvk->kind)) != 0) {
    json_decref(*out);
    *out = NULL;
    kcr_error_set(err, rc, "object client: out of memory");
  }
  return rc;
}

static int oc_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                   json_t **out, kcr_error_t *err) {
  kcr__cache_client_t *cc = c->data;
  char av[2 * KCR_MAPPING_NAME_MAX + 2];
  json_t *item;
  size_t i;
  int rc;
  *out = NULL;
  if (kcr_gvk_api_version(gvk, av, sizeof(av)) < 0)
    return kcr_error_set(err, KCR_EINVAL, "object client: the kind's group or version is too long");
  if ((rc = kcr_cache_list(cc->cache, gvk, o, out, err)) != 0)
    return rc;
  json_array_foreach(kcr_list_items(*out), i, item) {
    if (typed(item, av, gvk->kind) != 0) {
      json_decref(*out);
      *out = NULL;
      return kcr_error_set(err, KCR_ENOMEM, "object client: out of memory");
    }
  }
  return 0;
}

static void note(kcr__cache_client_t *cc, const kcr_gvk *gvk, const json_t *obj) {
  if (obj && *kcr_meta_resource_version(obj))
    kcr_cache_note_write(cc->cache, gvk, obj);
}

/* target_t: where a write goes, resolved once per call (see target). */
typedef struct target {
  char group[KCR_GVK_GROUP_MAX];
  kcr_gvk gvk; /* gvk.group points into group, the rest into the object */
  kcr_rest_mapping mp;
  kcr_gvr r;              /* points into mp */
  const char *ns;         /* NULL for cluster-scoped kinds */
  const char *name;       /* the object's */
  kcr_request_options ro; /* the reconcile's cancel token, the fence's timeout */
  char rv[64];            /* the answer's resourceVersion, when it is not parsed */
} target_t;

/*
 * The writes below take out NULL (KCR_OBJCLIENT_OUT_OPTIONAL): the caller
 * does not want the answer, so it is not parsed; the client scans only its
 * resourceVersion (t->rv) for read-your-writes, and the object is named as
 * the request named it. A create by generateName has no name yet: not noted.
 * note_answer notes a successful write either way.
 */
static void note_answer(kcr__cache_client_t *cc, const target_t *t, json_t **out) {
  if (out)
    note(cc, &t->gvk, *out);
  else if (t->rv[0] && t->name && *t->name)
    kcr_cache_note_write_rv(cc->cache, &t->gvk, t->ns, t->name, t->rv);
}

/* fence_left asks the write fence how long writes may still go out
 * (INT64_MAX: no fence). */
static int64_t fence_left(const kcr__cache_client_t *cc) {
  return cc->fence ? cc->fence(cc->fence_data) : INT64_MAX;
}

/* target resolves the object's apiVersion/kind to a resource and scope, for
 * the writes below, after the fence: a leader past its renew deadline writes
 * nothing. */
static int target(const kcr_objclient *c, const json_t *obj, target_t *t, kcr_error_t *err) {
  kcr__cache_client_t *cc = c->data;
  int64_t left = fence_left(cc);
  int rc;
  memset(t, 0, sizeof(*t));
  if (left <= 0)
    return kcr_error_set(err, KCR_ECANCELED,
                         "not the leader (the lease is unrenewed past the renew deadline, or "
                         "lost): write of %s refused",
                         *kcr_meta_kind(obj) ? kcr_meta_kind(obj) : "an object");
  if (kcr_meta_gvk(obj, &t->gvk, t->group, sizeof(t->group)) != 0)
    return kcr_error_set(err, KCR_EINVAL, "object client: the object needs apiVersion and kind");
  if ((rc = kcr_rest_mapper_mapping_for_kind(cc->mapper, &t->gvk, &t->mp, err)) != 0)
    return rc;
  t->r = kcr_rest_mapping_gvr(&t->mp);
  t->ns = t->mp.namespaced ? kcr_meta_namespace(obj) : NULL;
  t->name = kcr_meta_name(obj);
  t->ro.cancel = c->cancel;
  t->ro.resource_version_out = t->rv;
  t->ro.resource_version_out_size = sizeof(t->rv);
  if (left != INT64_MAX)
    t->ro.timeout_ns = left > KCR_NSEC_PER_MSEC ? left : KCR_NSEC_PER_MSEC;
  return 0;
}

static int oc_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  target_t t;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = target(c, obj, &t, err)) != 0)
    return rc;
  rc = kcr_client_create_object(((kcr__cache_client_t *)c->data)->client, &t.r, t.ns, (json_t *)obj,
                                &t.ro, out, err);
  if (rc == 0)
    note_answer(c->data, &t, out);
  return rc;
}

/* put PUTs obj (or its subresource) through the fence, as t, and notes the
 * answer: parsed into *out, or (out NULL) only its version scanned into t->rv. */
static int put(const kcr_objclient *c, const json_t *obj, const char *sub, json_t **out,
               target_t *t, kcr_error_t *err) {
  int rc;
  if (out)
    *out = NULL;
  if ((rc = target(c, obj, t, err)) != 0)
    return rc;
  t->ro.subresource = sub;
  rc = kcr_client_update(((kcr__cache_client_t *)c->data)->client, &t->r, t->ns, (json_t *)obj,
                         &t->ro, out, err);
  if (rc == 0)
    note_answer(c->data, t, out);
  return rc;
}

static int oc_update(const kcr_objclient *c, const json_t *obj, const char *sub, json_t **out,
                     kcr_error_t *err) {
  target_t t;
  return put(c, obj, sub, out, &t, err);
}

static int oc_update_rv(const kcr_objclient *c, const json_t *obj, const char *sub, char *rv,
                        size_t rv_size, kcr_error_t *err) {
  target_t t;
  int rc = put(c, obj, sub, NULL, &t, err);
  if (rc == 0 && strlen(t.rv) < rv_size)
    memcpy(rv, t.rv, strlen(t.rv) + 1);
  return rc;
}

static int oc_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                    const char *patch, size_t len, const char *sub, json_t **out,
                    kcr_error_t *err) {
  target_t t;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = target(c, obj, &t, err)) != 0)
    return rc;
  t.ro.subresource = sub;
  if (type == KCR_PATCH_APPLY)
    t.ro.field_manager = c->field_manager;
  rc = kcr_client_patch(((kcr__cache_client_t *)c->data)->client, &t.r, t.ns, t.name, type, patch,
                        len, &t.ro, out, err);
  if (rc == 0)
    note_answer(c->data, &t, out);
  return rc;
}

static int oc_apply(const kcr_objclient *c, const json_t *obj, const kcr_apply_options *o,
                    const char *sub, json_t **out, kcr_error_t *err) {
  target_t t;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = target(c, obj, &t, err)) != 0)
    return rc;
  t.ro.subresource = sub;
  t.ro.field_manager = o->field_manager ? o->field_manager : c->field_manager;
  t.ro.force = o->force;
  if (!t.ro.field_manager || !*t.ro.field_manager)
    return kcr_error_set(err, KCR_EINVAL,
                         "apply %s: no field manager (set kcr_apply_options.field_manager; a "
                         "reconcile's client uses the controller's name)",
                         t.gvk.kind);
  rc = kcr_client_apply(((kcr__cache_client_t *)c->data)->client, &t.r, t.ns, (json_t *)obj, &t.ro,
                        out, err);
  if (rc == 0)
    note_answer(c->data, &t, out);
  return rc;
}

static int oc_del(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                  kcr_error_t *err) {
  json_t *got = NULL;
  target_t t;
  int rc;
  if ((rc = target(c, obj, &t, err)) != 0)
    return rc;
  t.ro.grace_period_seconds = o->has_grace_period ? o->grace_period_seconds : -1;
  t.ro.propagation_policy = o->propagation_policy;
  t.ro.precondition_uid = o->precondition_uid;
  t.ro.precondition_resource_version = o->precondition_resource_version;
  rc = kcr_client_delete(((kcr__cache_client_t *)c->data)->client, &t.r, t.ns, t.name, &t.ro, &got,
                         err);
  if (rc == 0 && got && t.gvk.kind && strcmp(kcr_meta_kind(got), t.gvk.kind) == 0)
    note(c->data, &t.gvk, got); /* the object as finalizers hold it */
  json_decref(got);
  return rc;
}

static const kcr_objclient_ops cache_client_ops = {.get = oc_get,
                                                   .list = oc_list,
                                                   .create = oc_create,
                                                   .update = oc_update,
                                                   .patch = oc_patch,
                                                   .apply = oc_apply,
                                                   .del = oc_del,
                                                   .flags = KCR_OBJCLIENT_OUT_OPTIONAL,
                                                   .update_rv = oc_update_rv};

void kcr__cache_client_init(kcr__cache_client_t *cc, kcr_client_t *client,
                            kcr_rest_mapper_t *mapper, kcr_cache_t *cache,
                            kcr__cache_client_fence_fn fence, void *fence_data) {
  memset(cc, 0, sizeof(*cc));
  cc->client = client;
  cc->mapper = mapper;
  cc->cache = cache;
  cc->fence = fence;
  cc->fence_data = fence_data;
}

kcr_objclient kcr__cache_client_objclient(kcr__cache_client_t *cc) {
  kcr_objclient c;
  memset(&c, 0, sizeof(c));
  c.ops = &cache_client_ops;
  c.data = cc;
  return c;
}
