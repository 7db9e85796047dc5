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
 *
 * Reads that skip the cache go to the API server through the REST client:
 * every read of the API reader (kcr__cache_client_api_reader, controller-
 * runtime's APIReader, which refuses writes), get and list of a kind the
 * owner disabled the cache for (client.Options.Cache.DisableFor), subresource
 * gets and metadata-only reads (an Accept header for PartialObjectMetadata).
 * Write options (dry run, field manager, field validation) go on the request
 * as they are; a dry run's answer is never noted, since nothing changed.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "cache/cache_client_internal.h"
#include "kcr/apierror.h"
#include "kcr/meta.h"
#include "util/alloc.h"

/* typed sets apiVersion and kind, which list items from the server lack. */
static int typed(json_t *obj, const char *av, const char *kind) {
  if (json_object_set_new(obj, "apiVersion", json_string(av)) != 0 ||
      json_object_set_new(obj, "kind", json_string(kind)) != 0)
    return KCR_ENOMEM;
  return 0;
}

/* typed_items puts apiVersion and kind on every item of the list *list; on
 * failure it drops the list (*list NULL). */
static int typed_items(json_t **list, const char *av, const char *kind, kcr_error_t *err) {
  json_t *item;
  size_t i;
  json_array_foreach(kcr_list_items(*list), i, item) {
    if (typed(item, av, kind) != 0) {
      json_decref(*list);
      *list = NULL;
      return kcr_error_set(err, KCR_ENOMEM, "object client: out of memory");
    }
  }
  return 0;
}

static int cached_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
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

static int cached_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                       json_t **out, kcr_error_t *err) {
  kcr__cache_client_t *cc = c->data;
  char av[2 * KCR_MAPPING_NAME_MAX + 2];
  int rc;
  *out = NULL;
  if (kcr_gvk_api_version(gvk, av, sizeof(av)) < 0)
    return kcr_error_set(err, KCR_EINVAL, "object client: the kind's group or version is too long");
  if ((rc = kcr_cache_list(cc->cache, gvk, o, out, err)) != 0)
    return rc;
  return typed_items(out, av, gvk->kind, err);
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
  kcr_request_options ro; /* the reconcile's cancel token, the fence's timeout, options */
  char rv[64];            /* the answer's resourceVersion, when it is not parsed */
} target_t;

/*
 * The writes below take out NULL (KCR_OBJCLIENT_OUT_OPTIONAL): the caller
 * does not want the answer, so it is not parsed; the client scans only its
 * resourceVersion (t->rv) for read-your-writes, and the object is named as
 * the request named it. A create by generateName has no name yet: not noted.
 * A dry run changed nothing: not noted either. note_answer notes a
 * successful write either way.
 */
static void note_answer(kcr__cache_client_t *cc, const target_t *t, json_t **out) {
  if (t->ro.dry_run)
    return;
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

/* fenced starts t for a write of a `what` (a kind, for the message): the
 * fence first (a leader or shard member past its renew deadline writes
 * nothing), then the
 * request options every write carries. */
static int fenced(const kcr_objclient *c, const char *what, target_t *t, kcr_error_t *err) {
  int64_t left = fence_left(c->data);
  memset(t, 0, sizeof(*t));
  if (left <= 0)
    return kcr_error_set(err, KCR_ECANCELED,
                         "not the leader, or not a shard member in time (the lease is "
                         "unrenewed past the renew deadline, or lost): write of %s refused",
                         what && *what ? what : "an object");
  t->ro.cancel = c->cancel;
  t->ro.resource_version_out = t->rv;
  t->ro.resource_version_out_size = sizeof(t->rv);
  if (left != INT64_MAX)
    t->ro.timeout_ns = left > KCR_NSEC_PER_MSEC ? left : KCR_NSEC_PER_MSEC;
  return 0;
}

/* target resolves the object's apiVersion/kind to a resource and scope, for
 * the writes below, after the fence. */
static int target(const kcr_objclient *c, const json_t *obj, target_t *t, kcr_error_t *err) {
  kcr__cache_client_t *cc = c->data;
  int rc;
  if ((rc = fenced(c, kcr_meta_kind(obj), t, err)) != 0)
    return rc;
  if (kcr_meta_gvk(obj, &t->gvk, t->group, sizeof(t->group)) != 0)
    return kcr_error_set(err, KCR_EINVAL, "object client: the object needs apiVersion and kind");
  if ((rc = kcr_rest_mapper_mapping_for_kind(cc->mapper, &t->gvk, &t->mp, err)) != 0)
    return rc;
  t->r = kcr_rest_mapping_gvr(&t->mp);
  t->ns = t->mp.namespaced ? kcr_meta_namespace(obj) : NULL;
  t->name = kcr_meta_name(obj);
  return 0;
}

/* with_options puts a write's options on its request. */
static void with_options(target_t *t, const kcr_write_options *o) {
  t->ro.dry_run = o->dry_run;
  t->ro.field_manager = o->field_manager;
  t->ro.field_validation = o->field_validation;
}

static int oc_create_with(const kcr_objclient *c, const json_t *obj, const kcr_write_options *o,
                          json_t **out, kcr_error_t *err) {
  target_t t;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = target(c, obj, &t, err)) != 0)
    return rc;
  with_options(&t, o);
  rc = kcr_client_create_object(((kcr__cache_client_t *)c->data)->client, &t.r, t.ns, (json_t *)obj,
                                &t.ro, out, err);
  if (rc == 0)
    note_answer(c->data, &t, out);
  return rc;
}

static const kcr_write_options no_options;

static int oc_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  return oc_create_with(c, obj, &no_options, out, err);
}

/* named_body returns body, or (new) a copy of it named as obj when it has no
 * name: a subresource's own object (a Scale) is PUT to obj's URL, which the
 * REST client builds from the body's metadata.name. NULL without memory. */
static json_t *named_body(const json_t *obj, const json_t *body, const char *ns) {
  json_t *copy, *meta;
  if (*kcr_meta_name(body))
    return json_incref((json_t *)body);
  copy = json_deep_copy(body);
  meta = copy ? json_object_get(copy, "metadata") : NULL;
  if (copy && !json_is_object(meta)) {
    meta = json_object();
    if (json_object_set_new(copy, "metadata", meta) != 0)
      meta = NULL;
  }
  if (!meta || json_object_set_new(meta, "name", json_string(kcr_meta_name(obj))) != 0 ||
      (ns && *ns && json_object_set_new(meta, "namespace", json_string(ns)) != 0)) {
    json_decref(copy);
    return NULL;
  }
  return copy;
}

/* put PUTs obj (or body, to obj's subresource) through the fence, as t, and
 * notes the answer: parsed into *out, or (out NULL) only its version scanned
 * into t->rv. The answer of a status or scale PUT carries the object's new
 * resourceVersion, so it is noted as the object's. */
static int put(const kcr_objclient *c, const json_t *obj, const char *sub, const json_t *body,
               const kcr_write_options *o, json_t **out, target_t *t, kcr_error_t *err) {
  json_t *sent;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = target(c, obj, t, err)) != 0)
    return rc;
  with_options(t, o);
  t->ro.subresource = sub;
  sent = body ? named_body(obj, body, t->ns) : json_incref((json_t *)obj);
  if (!sent)
    return kcr_error_set(err, KCR_ENOMEM, "object client: out of memory");
  rc = kcr_client_update(((kcr__cache_client_t *)c->data)->client, &t->r, t->ns, sent, &t->ro, out,
                         err);
  json_decref(sent);
  if (rc == 0)
    note_answer(c->data, t, out);
  return rc;
}

static int oc_update(const kcr_objclient *c, const json_t *obj, const char *sub, json_t **out,
                     kcr_error_t *err) {
  target_t t;
  return put(c, obj, sub, NULL, &no_options, out, &t, err);
}

static int oc_update_with(const kcr_objclient *c, const json_t *obj, const char *sub,
                          const json_t *body, const kcr_write_options *o, json_t **out,
                          kcr_error_t *err) {
  target_t t;
  return put(c, obj, sub, body, o, out, &t, err);
}

static int oc_update_rv(const kcr_objclient *c, const json_t *obj, const char *sub, char *rv,
                        size_t rv_size, kcr_error_t *err) {
  target_t t;
  int rc = put(c, obj, sub, NULL, &no_options, NULL, &t, err);
  if (rc == 0 && strlen(t.rv) < rv_size)
    memcpy(rv, t.rv, strlen(t.rv) + 1);
  return rc;
}

static int oc_patch_with(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                         const char *patch, size_t len, const char *sub, const kcr_write_options *o,
                         json_t **out, kcr_error_t *err) {
  target_t t;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = target(c, obj, &t, err)) != 0)
    return rc;
  with_options(&t, o);
  t.ro.subresource = sub;
  if (type == KCR_PATCH_APPLY && !t.ro.field_manager)
    t.ro.field_manager = c->field_manager;
  rc = kcr_client_patch(((kcr__cache_client_t *)c->data)->client, &t.r, t.ns, t.name, type, patch,
                        len, &t.ro, out, err);
  if (rc == 0)
    note_answer(c->data, &t, out);
  return rc;
}

static int oc_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                    const char *patch, size_t len, const char *sub, json_t **out,
                    kcr_error_t *err) {
  return oc_patch_with(c, obj, type, patch, len, sub, &no_options, out, err);
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
  t.ro.dry_run = o->dry_run;
  t.ro.field_validation = o->field_validation;
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

/* delete_request puts the delete options on t's request. */
static void delete_request(target_t *t, const kcr_delete_options *o) {
  t->ro.grace_period_seconds = o->has_grace_period ? o->grace_period_seconds : -1;
  t->ro.propagation_policy = o->propagation_policy;
  t->ro.precondition_uid = o->precondition_uid;
  t->ro.precondition_resource_version = o->precondition_resource_version;
  t->ro.dry_run = o->dry_run;
}

static int oc_del(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                  kcr_error_t *err) {
  json_t *got = NULL;
  target_t t;
  int rc;
  if ((rc = target(c, obj, &t, err)) != 0)
    return rc;
  delete_request(&t, o);
  rc = kcr_client_delete(((kcr__cache_client_t *)c->data)->client, &t.r, t.ns, t.name, &t.ro, &got,
                         err);
  if (rc == 0 && !o->dry_run && got && t.gvk.kind && strcmp(kcr_meta_kind(got), t.gvk.kind) == 0)
    note(c->data, &t.gvk, got); /* the object as finalizers hold it */
  json_decref(got);
  return rc;
}

/* scope checks ns against the kind's scope as the cache does: a namespace
 * for a cluster-scoped kind is a mistake (a delete_all_of would otherwise
 * reach every object of the kind), a namespaced get needs one. */
static int scope(const kcr_gvk *gvk, const kcr_rest_mapping *mp, const char *ns, bool is_get,
                 kcr_error_t *err) {
  if (!mp->namespaced && ns && *ns)
    return kcr_error_set(err, KCR_EINVAL,
                         "object client: %s is cluster-scoped; name no namespace (got \"%s\")",
                         gvk->kind, ns);
  if (mp->namespaced && is_get && (!ns || !*ns))
    return kcr_error_set(err, KCR_EINVAL,
                         "object client: %s is namespaced; a get needs a namespace", gvk->kind);
  return 0;
}

static int oc_delete_all_of(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *lo,
                            const kcr_delete_options *o, kcr_error_t *err) {
  kcr__cache_client_t *cc = c->data;
  target_t t;
  int rc;
  if ((rc = fenced(c, gvk->kind, &t, err)) != 0)
    return rc;
  if ((rc = kcr_rest_mapper_mapping_for_kind(cc->mapper, gvk, &t.mp, err)) != 0 ||
      (rc = scope(gvk, &t.mp, lo->ns, false, err)) != 0)
    return rc;
  t.r = kcr_rest_mapping_gvr(&t.mp);
  delete_request(&t, o);
  t.ro.resource_version_out = NULL; /* no answer is read */
  t.ro.label_selector = lo->label_selector;
  t.ro.field_selector = lo->field_selector;
  t.ro.limit = lo->limit;
  t.ro.continue_token = lo->continue_token;
  return kcr_client_delete_collection(cc->client, &t.r, lo->ns, &t.ro, err);
}

static int oc_create_subresource(const kcr_objclient *c, const json_t *obj, const char *sub,
                                 const json_t *body, const kcr_write_options *o, json_t **out,
                                 kcr_error_t *err) {
  target_t t;
  int rc;
  if (out)
    *out = NULL;
  if ((rc = target(c, obj, &t, err)) != 0)
    return rc;
  with_options(&t, o);
  t.ro.subresource = sub;
  t.ro.resource_version_out = NULL; /* the answer (a Status, a token) is not the object's */
  return kcr_client_create_subresource(((kcr__cache_client_t *)c->data)->client, &t.r, t.ns, t.name,
                                       (json_t *)body, &t.ro, out, err);
}

/* ---- reads from the API server: the API reader, kinds the cache is
 * disabled for, subresources and metadata ---- */

/* direct_t: a read's resolved kind and request options. */
typedef struct direct {
  kcr_rest_mapping mp;
  kcr_gvr r;
  kcr_request_options ro;
} direct_t;

static int direct_start(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, bool is_get,
                        direct_t *d, kcr_error_t *err) {
  kcr__cache_client_t *cc = c->data;
  int rc;
  memset(d, 0, sizeof(*d));
  if ((rc = kcr_rest_mapper_mapping_for_kind(cc->mapper, gvk, &d->mp, err)) != 0 ||
      (rc = scope(gvk, &d->mp, ns, is_get, err)) != 0)
    return rc;
  d->r = kcr_rest_mapping_gvr(&d->mp);
  d->ro.cancel = c->cancel;
  return 0;
}

static int direct_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                      const char *sub, const char *accept, json_t **out, kcr_error_t *err) {
  direct_t d;
  int rc;
  *out = NULL;
  if ((rc = direct_start(c, gvk, ns, true, &d, err)) != 0)
    return rc;
  d.ro.subresource = sub;
  d.ro.accept = accept;
  return kcr_client_get(((kcr__cache_client_t *)c->data)->client, &d.r, d.mp.namespaced ? ns : NULL,
                        name, &d.ro, out, err);
}

/* direct_list lists from the server; items of whole objects get the
 * apiVersion and kind the server leaves out of them. */
static int direct_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                       const char *accept, json_t **out, kcr_error_t *err) {
  char av[2 * KCR_MAPPING_NAME_MAX + 2];
  direct_t d;
  int rc;
  *out = NULL;
  if ((o->index && *o->index) || o->index_value)
    return kcr_error_set(err, KCR_EINVAL,
                         "object client: list %s from the API server: an index is the cache's "
                         "(select by label or field instead)",
                         gvk->kind);
  if (kcr_gvk_api_version(gvk, av, sizeof(av)) < 0)
    return kcr_error_set(err, KCR_EINVAL, "object client: the kind's group or version is too long");
  if ((rc = direct_start(c, gvk, o->ns, false, &d, err)) != 0)
    return rc;
  d.ro.label_selector = o->label_selector;
  d.ro.field_selector = o->field_selector;
  d.ro.limit = o->limit;
  d.ro.continue_token = o->continue_token;
  d.ro.accept = accept;
  if ((rc = kcr_client_list(((kcr__cache_client_t *)c->data)->client, &d.r, o->ns, &d.ro, out,
                            err)) != 0 ||
      accept)
    return rc;
  return typed_items(out, av, gvk->kind, err);
}

static int oc_get_subresource(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                              const char *name, const char *sub, json_t **out, kcr_error_t *err) {
  return direct_get(c, gvk, ns, name, sub, NULL, out, err);
}

static int oc_get_metadata(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                           const char *name, json_t **out, kcr_error_t *err) {
  return direct_get(c, gvk, ns, name, NULL, KCR_ACCEPT_PARTIAL_METADATA, out, err);
}

static int oc_list_metadata(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                            json_t **out, kcr_error_t *err) {
  return direct_list(c, gvk, o, KCR_ACCEPT_PARTIAL_METADATA_LIST, out, err);
}

/* uncached tells whether reads of gvk skip the cache (the manager's
 * disable_cache_for): the same group, version and kind. */
static bool uncached(const kcr__cache_client_t *cc, const kcr_gvk *gvk) {
  for (size_t i = 0; i < cc->n_uncached; i++) {
    const kcr_gvk *u = &cc->uncached[i];
    if (strcmp(u->group ? u->group : "", gvk->group ? gvk->group : "") == 0 &&
        strcmp(u->version, gvk->version) == 0 && strcmp(u->kind, gvk->kind) == 0)
      return true;
  }
  return false;
}

static int oc_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                  json_t **out, kcr_error_t *err) {
  if (uncached(c->data, gvk))
    return direct_get(c, gvk, ns, name, NULL, NULL, out, err);
  return cached_get(c, gvk, ns, name, out, err);
}

static int oc_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                   json_t **out, kcr_error_t *err) {
  if (uncached(c->data, gvk))
    return direct_list(c, gvk, o, NULL, out, err);
  return cached_list(c, gvk, o, out, err);
}

/* ---- watches: always from the API server ---- */

/* server_watch: a kcr_watch_t read by a thread of its own into an objwatch. */
typedef struct server_watch {
  kcr_watch_t *kw;
  kcr_objwatch_t *ow;
  pthread_t thread;
  bool started; /* the thread runs (set before the watch is handed out) */
} server_watch_t;

static int server_watch_event(const kcr_watch_event *ev, void *data) {
  server_watch_t *sw = data;
  /* the event's object is ours: it moves to the consumer */
  return kcr_objwatch_send_new(
      sw->ow, ev->type, ev->object,
      ev->error); /* stopped, or a consumer too far behind: the stream ends */
}

static void *server_watch_main(void *data) {
  server_watch_t *sw = data;
  kcr_error_t err;
  int rc;
  kcr_error_clear(&err);
  rc = kcr_watch_run(sw->kw, server_watch_event, sw, &err);
  kcr_objwatch_close(sw->ow, rc == 0 ? KCR_ECLOSED : rc, &err);
  return NULL;
}

static void server_watch_stop(void *data) {
  kcr_watch_stop(((server_watch_t *)data)->kw);
}

static void server_watch_release(void *data) {
  server_watch_t *sw = data;
  if (sw->started)
    pthread_join(sw->thread, NULL);
  kcr_watch_destroy(sw->kw);
  kcr__free(sw);
}

static const kcr_objwatch_hooks server_watch_hooks = {server_watch_stop, server_watch_release};

static int oc_watch(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                    const kcr_watch_options *o, kcr_objwatch_t **out, kcr_error_t *err) {
  kcr__cache_client_t *cc = c->data;
  server_watch_t *sw;
  direct_t d;
  int rc;
  *out = NULL;
  if ((rc = direct_start(c, gvk, ns, false, &d, err)) != 0)
    return rc;
  if (!(sw = kcr__calloc(1, sizeof(*sw))))
    return kcr_error_set(err, KCR_ENOMEM, "object client: out of memory");
  if ((rc = kcr_client_watch(cc->client, &d.r, d.mp.namespaced ? ns : NULL, o, &sw->kw, err)) !=
      0) {
    kcr__free(sw);
    return rc;
  }
  if ((rc = kcr_objwatch_create(&server_watch_hooks, sw, &sw->ow, err)) != 0) {
    kcr_watch_destroy(sw->kw);
    kcr__free(sw);
    return rc;
  }
  if (pthread_create(&sw->thread, NULL, server_watch_main, sw) != 0) {
    kcr_objwatch_destroy(sw->ow); /* not started: release joins nothing */
    return kcr_error_set(err, KCR_ESYS, "object client: watch thread");
  }
  sw->started = true;
  *out = sw->ow;
  return 0;
}

static const kcr_objclient_ops cache_client_ops = {.get = oc_get,
                                                   .list = oc_list,
                                                   .create = oc_create,
                                                   .update = oc_update,
                                                   .patch = oc_patch,
                                                   .apply = oc_apply,
                                                   .del = oc_del,
                                                   .flags = KCR_OBJCLIENT_OUT_OPTIONAL |
                                                            KCR_OBJCLIENT_WRITE_OPTIONS,
                                                   .update_rv = oc_update_rv,
                                                   .create_with = oc_create_with,
                                                   .update_with = oc_update_with,
                                                   .patch_with = oc_patch_with,
                                                   .delete_all_of = oc_delete_all_of,
                                                   .get_subresource = oc_get_subresource,
                                                   .create_subresource = oc_create_subresource,
                                                   .get_metadata = oc_get_metadata,
                                                   .list_metadata = oc_list_metadata,
                                                   .watch = oc_watch};

/* ---- the API reader (mgr.GetAPIReader()): a client.Reader ---- */

static int ar_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                  json_t **out, kcr_error_t *err) {
  return direct_get(c, gvk, ns, name, NULL, NULL, out, err);
}

static int ar_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                   json_t **out, kcr_error_t *err) {
  return direct_list(c, gvk, o, NULL, out, err);
}

static int ar_refuse(json_t **out, kcr_error_t *err) {
  if (out)
    *out = NULL;
  return kcr_error_set(err, KCR_ENOTSUP,
                       "the manager's API reader only reads (get, list); write through "
                       "kcr_manager_client");
}

static int ar_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  (void)c;
  (void)obj;
  return ar_refuse(out, err);
}

static int ar_update(const kcr_objclient *c, const json_t *obj, const char *sub, json_t **out,
                     kcr_error_t *err) {
  (void)c;
  (void)obj;
  (void)sub;
  return ar_refuse(out, err);
}

static int ar_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                    const char *patch, size_t len, const char *sub, json_t **out,
                    kcr_error_t *err) {
  (void)c;
  (void)obj;
  (void)type;
  (void)patch;
  (void)len;
  (void)sub;
  return ar_refuse(out, err);
}

static int ar_apply(const kcr_objclient *c, const json_t *obj, const kcr_apply_options *o,
                    const char *sub, json_t **out, kcr_error_t *err) {
  (void)c;
  (void)obj;
  (void)o;
  (void)sub;
  return ar_refuse(out, err);
}

static int ar_del(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                  kcr_error_t *err) {
  (void)c;
  (void)obj;
  (void)o;
  return ar_refuse(NULL, err);
}

static int ar_delete_all_of(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *lo,
                            const kcr_delete_options *o, kcr_error_t *err) {
  (void)c;
  (void)gvk;
  (void)lo;
  (void)o;
  return ar_refuse(NULL, err);
}

/* The other writes are NULL: a call with options is KCR_ENOTSUP, one without
 * reaches create, update or patch above. Metadata reads are reads. */
static const kcr_objclient_ops api_reader_ops = {.get = ar_get,
                                                 .list = ar_list,
                                                 .create = ar_create,
                                                 .update = ar_update,
                                                 .patch = ar_patch,
                                                 .apply = ar_apply,
                                                 .del = ar_del,
                                                 .flags = KCR_OBJCLIENT_WRITE_OPTIONS,
                                                 .delete_all_of = ar_delete_all_of,
                                                 .get_metadata = oc_get_metadata,
                                                 .list_metadata = oc_list_metadata,
                                                 .watch = oc_watch};

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

kcr_objclient kcr__cache_client_api_reader(kcr__cache_client_t *cc) {
  kcr_objclient c;
  memset(&c, 0, sizeof(c));
  c.ops = &api_reader_ops;
  c.data = cc;
  return c;
}

int kcr__cache_client_disable_cache_for(kcr__cache_client_t *cc, const kcr_gvk *gvks, size_t n,
                                        kcr_error_t *err) {
  kcr_gvk *v;
  if (n == 0)
    return 0;
  v = kcr__calloc(n, sizeof(*v));
  if (!v)
    return kcr_error_set(err, KCR_ENOMEM, "object client: out of memory");
  cc->uncached = v;
  for (size_t i = 0; i < n; i++) {
    if (!gvks[i].version || !*gvks[i].version || !gvks[i].kind || !*gvks[i].kind)
      return kcr_error_set(err, KCR_EINVAL,
                           "object client: a kind to read uncached needs a version and a kind");
    v[i].group = kcr__strdup(gvks[i].group ? gvks[i].group : "");
    v[i].version = kcr__strdup(gvks[i].version);
    v[i].kind = kcr__strdup(gvks[i].kind);
    cc->n_uncached = i + 1; /* freed by kcr__cache_client_free, even when half made */
    if (!v[i].group || !v[i].version || !v[i].kind)
      return kcr_error_set(err, KCR_ENOMEM, "object client: out of memory");
  }
  return 0;
}

void kcr__cache_client_free(kcr__cache_client_t *cc) {
  for (size_t i = 0; i < cc->n_uncached; i++) {
    kcr__free((char *)cc->uncached[i].group);
    kcr__free((char *)cc->uncached[i].version);
    kcr__free((char *)cc->uncached[i].kind);
  }
  kcr__free(cc->uncached);
  cc->uncached = NULL;
  cc->n_uncached = 0;
}
