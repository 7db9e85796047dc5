/* SPDX-License-Identifier: MIT */
/*
 * kcr/objclient.h: the object client — controller-runtime's client.Client for
 * jansson objects. It is an interface (an ops table plus its data), so the same
 * reconciler runs against the manager's client (reads from the informer cache,
 * writes to the API server, kcr/manager.h), a test's fake, or anything else.
 *
 * Naming a kind: reads name it with a kcr_gvk (kcr/meta.h); writes take the
 * object itself, whose apiVersion and kind say what it is. Nothing else.
 *
 * Lists come back in the API server's shape, whoever answers: a new object
 *   {"apiVersion": "v1", "kind": "ConfigMapList",
 *    "metadata": {"resourceVersion": "...", "continue": "..."},
 *    "items": [ {...whole objects, with apiVersion and kind...} ]}
 * (the cache fills resourceVersion with what it has seen; "continue" only when a
 * limit cut the list short). kcr_cache_list answers in the same shape.
 *
 * Errors: 0 or a negative kcr_err (kcr/error.h), details in the optional
 * kcr_error_t, first error wins. A missing object is KCR_EAPI with
 * kcr_error_is_not_found true. A reconciler that tolerates one clears it on the
 * spot with kcr_ignore_not_found, so that a later real error is not masked:
 *
 *   rc = kcr_ignore_not_found(kcr_objclient_get(c, &gvk, ns, name, &obj, err), err);
 *
 * Threads: the verbs block; any thread but a client's loop thread.
 */
#ifndef KCR_OBJCLIENT_H
#define KCR_OBJCLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/client.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kcr_list_options: client.ListOptions; zero-initialise. Strings borrowed.
 *   ns              one namespace; NULL or "": all (that the client can see).
 *   label_selector  kcr_selector_parse syntax ("app=x,tier in (a,b)"); NULL: all.
 *   field_selector  "f=v" / "f==v" / "f!=v" terms, comma-separated. The server
 *                   answers the fields it supports; the cache answers
 *                   metadata.name, metadata.namespace, and equality on any field
 *                   it has an index of that exact name (kcr_cache_add_index),
 *                   as controller-runtime's cache does.
 *   index, index_value  objects whose cache index `index` holds index_value
 *                   (MatchingFields on an index by name); the cache only.
 *   limit           at most this many items (0: all); the list's
 *                   metadata.continue then says where to resume.
 *   continue_token  resume a limited list (from its metadata.continue).
 */
typedef struct kcr_list_options {
  const char *ns;
  const char *label_selector;
  const char *field_selector;
  const char *index;
  const char *index_value;
  long limit;
  const char *continue_token;
} kcr_list_options;

/*
 * kcr_apply_options: server-side apply (client.Apply); zero-initialise.
 *   field_manager  NULL: the client's own (a reconcile's client: the controller's
 *                  name, as controller-runtime's manager sets it).
 *   force          take over fields another manager owns (client.ForceOwnership).
 *   dry_run        dryRun=All (client.DryRunAll): the server validates, admits
 *                  and answers as it would, and persists nothing.
 *   field_validation  "Strict", "Warn" or "Ignore" (client.FieldValidation);
 *                  NULL: the server's default (Warn).
 * dry_run and field_validation need a client whose ops say
 * KCR_OBJCLIENT_WRITE_OPTIONS; another refuses them (KCR_ENOTSUP).
 */
typedef struct kcr_apply_options {
  const char *field_manager;
  bool force;
  bool dry_run;
  const char *field_validation;
} kcr_apply_options;

/*
 * kcr_write_options: the options of a create, update or patch
 * (client.CreateOptions, UpdateOptions, PatchOptions, and their subresource
 * twins); zero-initialise. Strings borrowed.
 *   dry_run        dryRun=All (client.DryRunAll): the server validates, admits
 *                  and answers as it would, and persists nothing; the manager's
 *                  client does not wait to read such a write back.
 *   field_manager  fieldManager (client.FieldOwner): the name the server
 *                  records in metadata.managedFields for this write (operation
 *                  Update for a create, update or non-apply patch). NULL: the
 *                  default of a kcr_objclient_with_field_owner client, else the
 *                  server's, derived from the User-Agent. (The client's
 *                  field_manager member is only the default of applies.)
 *   field_validation  "Strict", "Warn" or "Ignore" (client.FieldValidation):
 *                  what the server does with a field it does not know, or one
 *                  given twice; NULL: its default (Warn: accept, drop the field,
 *                  answer with a Warning header). Strict refuses the write:
 *                  KCR_EAPI, HTTP 400, reason BadRequest, a message naming the
 *                  field (`strict decoding error: unknown field "spec.x"`).
 */
typedef struct kcr_write_options {
  bool dry_run;
  const char *field_manager;
  const char *field_validation;
} kcr_write_options;

/*
 * kcr_delete_options: zero-initialise.
 *   propagation_policy  "Foreground", "Background", "Orphan"; NULL: the kind's
 *                       default.
 *   grace_period_seconds  0 with has_grace_period: now; otherwise the default.
 *   precondition_uid, precondition_resource_version  refuse (409) unless they hold.
 *   dry_run             dryRun=All: the server answers as it would and deletes
 *                       nothing (needs KCR_OBJCLIENT_WRITE_OPTIONS, as above).
 */
typedef struct kcr_delete_options {
  const char *propagation_policy;
  bool has_grace_period;
  int64_t grace_period_seconds;
  const char *precondition_uid;
  const char *precondition_resource_version;
  bool dry_run;
} kcr_delete_options;

typedef struct kcr_objclient kcr_objclient;

/* kcr_objwatch_t: one open watch through an object client (below). Opaque. */
typedef struct kcr_objwatch kcr_objwatch_t;

/*
 * kcr_objclient_ops: an object client's verbs, named as the kcr_objclient_*
 * calls that reach them. c is the client the call came through (read c->data,
 * c->cancel, c->field_manager). Objects passed in are borrowed; *out receives a
 * new reference, NULL on failure (never NULL out pointers: the wrappers see to
 * it, unless flags has KCR_OBJCLIENT_OUT_OPTIONAL, below). Options are never
 * NULL (the wrappers pass zeroed ones). Every op is required except list,
 * apply and del, which may be NULL (KCR_ENOTSUP), and update_rv. Fill it with
 * designated initializers: members are added at the end as the interface
 * grows, and one left out is NULL.
 *   get     one object of gvk.
 *   list    the objects of gvk that o selects, as a List object (above).
 *   create  POST obj.
 *   update  PUT obj, or its subresource ("status", "scale"; NULL: the object).
 *   patch   PATCH the object obj names (its apiVersion, kind, namespace, name).
 *   apply   server-side apply of obj (a partial object: the fields this manager
 *           owns), or of its subresource.
 *   del     DELETE the object obj names. Deleting one that is gone is NotFound.
 * Added later, all optional (NULL: the call that reaches it is KCR_ENOTSUP,
 * except as said):
 *   update_rv  (below, with flags)
 *   create_with, update_with, patch_with  create, update, patch with write
 *           options (never NULL). update_with's body is what is PUT: NULL for
 *           obj itself, else the subresource's own object (a Scale) PUT to
 *           obj's subresource. NULL ops: a call whose options are all zero
 *           (and that has no body) goes to create, update or patch instead.
 *   delete_all_of  DELETE the collection of gvk that lo selects (ns, label
 *           and field selectors), with the delete options.
 *   get_subresource  GET the subresource sub of gvk's object ns/name.
 *   create_subresource  POST body to sub of the object obj names.
 *   get_metadata, list_metadata  get and list as PartialObjectMetadata and
 *           PartialObjectMetadataList (the metadata client).
 *   watch   open a watch of gvk in ns (NULL or "": every namespace) with o
 *           (never NULL): *out a new kcr_objwatch_t the implementation feeds
 *           (kcr_objwatch_create, below).
 */
typedef struct kcr_objclient_ops {
  int (*get)(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
             json_t **out, kcr_error_t *err);
  int (*list)(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o, json_t **out,
              kcr_error_t *err);
  int (*create)(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err);
  int (*update)(const kcr_objclient *c, const json_t *obj, const char *subresource, json_t **out,
                kcr_error_t *err);
  int (*patch)(const kcr_objclient *c, const json_t *obj, kcr_patch_type type, const char *patch,
               size_t patch_len, const char *subresource, json_t **out, kcr_error_t *err);
  int (*apply)(const kcr_objclient *c, const json_t *obj, const kcr_apply_options *o,
               const char *subresource, json_t **out, kcr_error_t *err);
  int (*del)(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
             kcr_error_t *err);
  /* KCR_OBJCLIENT_OUT_OPTIONAL or 0 (the default of an initializer that
   * leaves it out). */
  unsigned flags;
  /* update_rv: optional (NULL: kcr_objclient_update_rv calls update with an
   * answer and reads the version from it). PUT obj, or its subresource, and
   * write the answer's metadata.resourceVersion into rv (rv_size bytes, at
   * least 1; NUL-terminated, "" when the answer has none or it does not fit)
   * without parsing the rest of the answer. */
  int (*update_rv)(const kcr_objclient *c, const json_t *obj, const char *subresource, char *rv,
                   size_t rv_size, kcr_error_t *err);
  int (*create_with)(const kcr_objclient *c, const json_t *obj, const kcr_write_options *o,
                     json_t **out, kcr_error_t *err);
  int (*update_with)(const kcr_objclient *c, const json_t *obj, const char *subresource,
                     const json_t *body, const kcr_write_options *o, json_t **out,
                     kcr_error_t *err);
  int (*patch_with)(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                    const char *patch, size_t patch_len, const char *subresource,
                    const kcr_write_options *o, json_t **out, kcr_error_t *err);
  int (*delete_all_of)(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *lo,
                       const kcr_delete_options *o, kcr_error_t *err);
  int (*get_subresource)(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                         const char *name, const char *subresource, json_t **out, kcr_error_t *err);
  int (*create_subresource)(const kcr_objclient *c, const json_t *obj, const char *subresource,
                            const json_t *body, const kcr_write_options *o, json_t **out,
                            kcr_error_t *err);
  int (*get_metadata)(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                      json_t **out, kcr_error_t *err);
  int (*list_metadata)(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                       json_t **out, kcr_error_t *err);
  int (*watch)(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
               const kcr_watch_options *o, kcr_objwatch_t **out, kcr_error_t *err);
} kcr_objclient_ops;

/*
 * KCR_OBJCLIENT_OUT_OPTIONAL: create, update, patch and apply (and
 * create_with, update_with, patch_with and create_subresource) take out NULL
 * when the caller passed NULL (it does not want the answer), so that an
 * implementation may skip parsing it. The manager's object client sets it.
 */
#define KCR_OBJCLIENT_OUT_OPTIONAL 1u

/*
 * KCR_OBJCLIENT_WRITE_OPTIONS: apply and del honour the members added to their
 * options later (kcr_apply_options.dry_run and field_validation,
 * kcr_delete_options.dry_run). Without it the wrappers refuse a call that sets
 * one (KCR_ENOTSUP) rather than let a dry run write for real. The manager's
 * object client sets it.
 */
#define KCR_OBJCLIENT_WRITE_OPTIONS 2u

/*
 * kcr_objclient: an object client by value (copy freely): its verbs, their data,
 * the cancellation token its requests carry (NULL: none) and the field manager
 * its server-side applies use by default (NULL: none; borrowed). The reconcile
 * context hands out one whose token fires when the controller stops and whose
 * field manager is the controller's name.
 */
struct kcr_objclient {
  const kcr_objclient_ops *ops;
  void *data;
  kcr_cancel_t *cancel;
  const char *field_manager;
};

/*
 * The verbs through c. out may be NULL when the result is not wanted; o may be
 * NULL for the defaults. Blocking; any thread but a client's loop thread.
 * kcr_objclient_get: *out new. kcr_objclient_list: *out a new List object.
 * kcr_objclient_update / _patch / _apply: subresource NULL for the object itself.
 */
KCR_EXTERN int kcr_objclient_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                                 const char *name, json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_objclient_list(const kcr_objclient *c, const kcr_gvk *gvk,
                                  const kcr_list_options *o, json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_objclient_create(const kcr_objclient *c, const json_t *obj, json_t **out,
                                    kcr_error_t *err);
KCR_EXTERN int kcr_objclient_update(const kcr_objclient *c, const json_t *obj,
                                    const char *subresource, json_t **out, kcr_error_t *err);
/*
 * kcr_objclient_update_rv is kcr_objclient_update for a caller that keeps the
 * object it sent and needs of the answer only its new resourceVersion (to send
 * the object again later, say): rv (rv_size bytes, at least 1) receives it,
 * NUL-terminated, "" when the answer has none or it does not fit. The
 * manager's client scans it from the answer's bytes without parsing them;
 * another client parses the answer. On failure rv is "". Blocking; any thread
 * but a client's loop thread.
 */
KCR_EXTERN int kcr_objclient_update_rv(const kcr_objclient *c, const json_t *obj,
                                       const char *subresource, char *rv, size_t rv_size,
                                       kcr_error_t *err);
KCR_EXTERN int kcr_objclient_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                                   const char *patch, size_t patch_len, const char *subresource,
                                   json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_objclient_apply(const kcr_objclient *c, const json_t *obj,
                                   const kcr_apply_options *o, const char *subresource,
                                   json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_objclient_delete(const kcr_objclient *c, const json_t *obj,
                                    const kcr_delete_options *o, kcr_error_t *err);

/* kcr_objclient_del is kcr_objclient_delete's old name (the ops field keeps
 * it: delete is a C++ keyword). */
KCR_DEPRECATED("since 2026-12-02: use kcr_objclient_delete")
KCR_EXTERN int kcr_objclient_del(const kcr_objclient *c, const json_t *obj,
                                 const kcr_delete_options *o, kcr_error_t *err);

/*
 * The verbs with write options (kcr_write_options; o NULL: none, the same as
 * the calls above). Blocking; any thread but a client's loop thread.
 * kcr_objclient_create_with / _update_with / _patch_with: create, update
 * (subresource NULL: the object; "status": its status) and patch with options:
 *
 *   kcr_write_options wo = {.dry_run = true, .field_validation = "Strict"};
 *   rc = kcr_objclient_create_with(c, cm, &wo, &answer, err); // nothing stored
 */
KCR_EXTERN int kcr_objclient_create_with(const kcr_objclient *c, const json_t *obj,
                                         const kcr_write_options *o, json_t **out,
                                         kcr_error_t *err);
KCR_EXTERN int kcr_objclient_update_with(const kcr_objclient *c, const json_t *obj,
                                         const char *subresource, const kcr_write_options *o,
                                         json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_objclient_patch_with(const kcr_objclient *c, const json_t *obj,
                                        kcr_patch_type type, const char *patch, size_t patch_len,
                                        const char *subresource, const kcr_write_options *o,
                                        json_t **out, kcr_error_t *err);

/*
 * kcr_objclient_delete_all_of is client.DeleteAllOf: one DELETE of the
 * collection of gvk, of the objects lo selects (lo->ns: one namespace, NULL or
 * "": every namespace; label_selector; field_selector; NULL lo: all of them),
 * with the delete options o (propagation, grace period, preconditions, dry run;
 * NULL: none). lo->index is the cache's, not the server's: KCR_EINVAL. The
 * server deletes what matches when the request arrives and answers once
 * (objects with finalizers stay until they are removed). Blocking; any thread
 * but a client's loop thread.
 */
KCR_EXTERN int kcr_objclient_delete_all_of(const kcr_objclient *c, const kcr_gvk *gvk,
                                           const kcr_list_options *lo, const kcr_delete_options *o,
                                           kcr_error_t *err);

/*
 * Subresources (client.SubResource(name)): always from and to the API server,
 * never the cache.
 *   kcr_objclient_get_subresource  GET gvk's object ns/name's subresource ("scale":
 *       an autoscaling/v1 Scale; "status": the whole object). *out new.
 *   kcr_objclient_update_subresource  PUT body (borrowed; the subresource's own
 *       object, e.g. a Scale with spec.replicas and, for a conflict check,
 *       metadata.resourceVersion) to the subresource of the object obj names (its
 *       apiVersion, kind, namespace and name). For "status" the body is the
 *       object itself: kcr_objclient_update_with(c, obj, "status", ...).
 *   kcr_objclient_create_subresource  POST body to the subresource of the
 *       object obj names: a policy/v1 Eviction to a Pod's "eviction" (the answer
 *       is a Status; a PodDisruptionBudget that forbids it is 429
 *       TooManyRequests), an authentication.k8s.io/v1 TokenRequest to a
 *       ServiceAccount's "token" (the answer is the TokenRequest with
 *       status.token and status.expirationTimestamp).
 * o: write options (NULL: none). *out new, may be NULL when not wanted.
 * Blocking; any thread but a client's loop thread.
 */
KCR_EXTERN int kcr_objclient_get_subresource(const kcr_objclient *c, const kcr_gvk *gvk,
                                             const char *ns, const char *name,
                                             const char *subresource, json_t **out,
                                             kcr_error_t *err);
KCR_EXTERN int kcr_objclient_update_subresource(const kcr_objclient *c, const json_t *obj,
                                                const char *subresource, const json_t *body,
                                                const kcr_write_options *o, json_t **out,
                                                kcr_error_t *err);
KCR_EXTERN int kcr_objclient_create_subresource(const kcr_objclient *c, const json_t *obj,
                                                const char *subresource, const json_t *body,
                                                const kcr_write_options *o, json_t **out,
                                                kcr_error_t *err);

/*
 * Metadata-only reads (controller-runtime's metadata client, a
 * PartialObjectMetadata object): the request asks the server for metadata only
 * (KCR_ACCEPT_PARTIAL_METADATA, kcr/client.h), so the body that crosses the
 * network carries no spec, data or status. kcr_objclient_get_metadata: *out is
 * a new {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
 * "metadata": {...}}; kcr_objclient_list_metadata: a new
 * PartialObjectMetadataList whose items are such objects, as the server sends
 * them. The manager's client reads them from the API server, not from its
 * informers. Blocking; any thread but a client's loop thread.
 */
KCR_EXTERN int kcr_objclient_get_metadata(const kcr_objclient *c, const kcr_gvk *gvk,
                                          const char *ns, const char *name, json_t **out,
                                          kcr_error_t *err);
KCR_EXTERN int kcr_objclient_list_metadata(const kcr_objclient *c, const kcr_gvk *gvk,
                                           const kcr_list_options *o, json_t **out,
                                           kcr_error_t *err);

/*
 * Watches (client.WithWatch's Watch): a stream of the changes to the objects of
 * gvk in ns (NULL or "": every namespace) that o selects (kcr/client.h's
 * kcr_watch_options: label and field selectors, resource_version,
 * allow_bookmarks, send_initial_events, timeout_seconds, accept; o NULL: all
 * of them, from now). A watch always goes to whoever answers the client's
 * writes (the manager's client and its API reader: the API server; a fake
 * client: its tracker), never to an informer cache. resource_version NULL or
 * "" starts with the current state, as ADDED events, then the changes;
 * a version starts after it, and one the server no longer has ends the watch
 * with an ERROR event holding a 410 Expired Status (kcr_error_is_gone), as it
 * ends a reflector's.
 *
 * kcr_objclient_watch opens it: *out a new watch (kcr_objwatch_destroy), NULL
 * on failure. What is wrong before anything is sent (arguments, a kind the
 * mapper does not know, credentials) is returned here; a client without the
 * verb: KCR_ENOTSUP. A refusal by whoever answers (KCR_EAPI, e.g. 400 for a
 * selector it cannot parse) comes here from the fake client, and from the
 * first kcr_objwatch_next from the API server, whose answer comes after the
 * call returns. Blocking; any thread but a client's loop thread.
 *
 * kcr_objwatch_next hands over the next event, in the order the changes
 * happened: ev->type, ev->object a new reference the caller owns (decode it
 * with kcr_scheme_decode, or take the typed object at once with
 * kcr_typed_watch_next, kcr/scheme.h), ev->error for an ERROR event
 * (borrowed, valid until the next call on w). It waits at most timeout_ns (<
 * 0: as long as it takes; 0: only looks). Returns 0 with an event; KCR_EAGAIN
 * when none came in time (the watch goes on); otherwise the watch is over, and
 * every later call says the same: KCR_ECLOSED when the stream ended as streams
 * do (the server's timeoutSeconds, a fake destroyed), KCR_ECANCELED after
 * kcr_objwatch_stop, KCR_ETOOBIG when the caller fell more than
 * KCR_OBJWATCH_MAX_QUEUED events behind, or the transport's error (err
 * filled). Events already queued when a stream ends are handed over first. One
 * thread at a time calls next.
 *
 *   kcr_objwatch_t *w;
 *   kcr_watch_event ev;
 *   rc = kcr_objclient_watch(c, &gvk, "default", NULL, &w, err);
 *   while (rc == 0 && (rc = kcr_objwatch_next(w, -1, &ev, err)) == 0) {
 *     ... ev.type, ev.object ...
 *     json_decref(ev.object);
 *   }
 *   kcr_objwatch_destroy(w);
 *
 * kcr_objwatch_stop ends the watch (Stop()): next returns KCR_ECANCELED (at
 * once, if it waits), undelivered events are dropped. Idempotent; any thread.
 * kcr_objwatch_destroy stops the watch, waits for whatever feeds it to let go
 * and frees it; not while another thread is in next. NULL is ignored.
 */
KCR_EXTERN int kcr_objclient_watch(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns,
                                   const kcr_watch_options *o, kcr_objwatch_t **out,
                                   kcr_error_t *err);
KCR_EXTERN int kcr_objwatch_next(kcr_objwatch_t *w, int64_t timeout_ns, kcr_watch_event *ev,
                                 kcr_error_t *err);
KCR_EXTERN void kcr_objwatch_stop(kcr_objwatch_t *w);
KCR_EXTERN void kcr_objwatch_destroy(kcr_objwatch_t *w);

/* KCR_OBJWATCH_MAX_QUEUED: the most events a watch holds for a caller that
 * does not take them; one more ends the watch with KCR_ETOOBIG (a reflector
 * would list again) instead of growing without bound. */
#define KCR_OBJWATCH_MAX_QUEUED 65536

/*
 * The feeding side, for an implementation of kcr_objclient_ops.watch.
 * kcr_objwatch_hooks: what the watch calls on its producer (data), each at
 * most once, never with the watch's lock held:
 *   stop     (may be NULL) the consumer stopped or destroyed the watch: stop
 *            feeding it. After stop returns, calls to kcr_objwatch_send_new and
 *            _close are still safe (they are dropped) until release.
 *   release  (may be NULL) kcr_objwatch_destroy, after stop: let go of the
 *            watch for good (join a thread that feeds it, free data). w is
 *            freed when release returns.
 * kcr_objwatch_create makes an open watch with hooks (borrowed; static
 * storage) and data; *out new. KCR_ENOMEM, KCR_ESYS.
 * kcr_objwatch_send_new queues one event: obj stolen on every path (it goes
 * to the consumer as it is: do not keep a reference to it, as jansson's
 * reference counts are not safe to drop on two threads), error the Status
 * of an ERROR event (copied; NULL otherwise). Returns 0, KCR_ECANCELED when
 * the watch is stopped or closed (the event is dropped; stop feeding),
 * KCR_ETOOBIG when the queue was full (the watch is now over), KCR_ENOMEM,
 * KCR_EINVAL. Never blocks on the consumer; any thread.
 * kcr_objwatch_close ends the stream with why (0: KCR_ECLOSED, a normal end;
 * else a negative kcr_err, err its details, copied, may be NULL). The consumer
 * gets what was queued first. Only the first close counts; any thread.
 * kcr_objwatch_expire_after ends the watch normally (KCR_ECLOSED, as a close
 * with 0) ns from now on the monotonic clock, as the API server ends a watch
 * after its timeoutSeconds: events queued before then are still handed over,
 * later ones dropped. ns <= 0 does nothing. Any thread.
 */
typedef struct kcr_objwatch_hooks {
  void (*stop)(void *data);
  void (*release)(void *data);
} kcr_objwatch_hooks;

KCR_EXTERN int kcr_objwatch_create(const kcr_objwatch_hooks *hooks, void *data,
                                   kcr_objwatch_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_objwatch_send_new(kcr_objwatch_t *w, kcr_watch_event_type type, json_t *obj,
                                     const kcr_error_t *error);
KCR_EXTERN void kcr_objwatch_close(kcr_objwatch_t *w, int why, const kcr_error_t *err);
KCR_EXTERN void kcr_objwatch_expire_after(kcr_objwatch_t *w, int64_t ns);

/*
 * kcr_field_owner_client: the storage of a client made by
 * kcr_objclient_with_field_owner. Its members are private; the caller keeps it
 * alive (a reconcile's stack frame will do) as long as its client is used.
 */
typedef struct kcr_field_owner_client {
  kcr_objclient client;
  kcr_objclient inner;
  const char *owner;
} kcr_field_owner_client;

/*
 * kcr_objclient_with_field_owner is client.WithFieldOwner: it makes, in fo, a
 * client that passes every call to inner (copied into fo) and names owner
 * (borrowed; must outlive fo) as the field manager of every write that does not
 * name one itself: create, update, patch, apply and the subresource writes, as
 * kcr_write_options.field_manager and kcr_apply_options.field_manager (over
 * inner's own field_manager). A per-call field manager wins. Returns &fo->client
 * (copy it freely while fo lives; a cancel token set on a copy is what its
 * calls carry, else inner's). Any thread; the client is as thread-safe as inner.
 *
 *   kcr_field_owner_client fo;
 *   const kcr_objclient *c = kcr_objclient_with_field_owner(&fo, kcr_reconcile_client(ctx),
 *                                                           "my-operator");
 */
KCR_EXTERN const kcr_objclient *kcr_objclient_with_field_owner(kcr_field_owner_client *fo,
                                                               const kcr_objclient *inner,
                                                               const char *owner);

/*
 * kcr_ignore_not_found is client.IgnoreNotFound: when rc is a NotFound error
 * (KCR_EAPI and kcr_error_is_not_found(err)), it clears err and returns 0;
 * otherwise it returns rc and leaves err alone. err may be NULL (then any
 * KCR_EAPI cannot be told apart and is returned as is). Any thread.
 */
KCR_EXTERN int kcr_ignore_not_found(int rc, kcr_error_t *err);

/*
 * kcr_ignore_already_exists is kcr_ignore_not_found for AlreadyExists (a create
 * that found the name taken: kcr_error_is_already_exists), and
 * kcr_ignore_conflict for Conflict (kcr_error_is_conflict): 0 with err cleared,
 * or rc with err untouched. Any thread.
 */
KCR_EXTERN int kcr_ignore_already_exists(int rc, kcr_error_t *err);
KCR_EXTERN int kcr_ignore_conflict(int rc, kcr_error_t *err);

/*
 * kcr_list_items returns the items array of a List object (borrowed; an empty
 * array's worth of nothing when list has none: NULL). Any thread.
 */
KCR_EXTERN json_t *kcr_list_items(const json_t *list);

#ifdef __cplusplus
}
#endif

#endif /* KCR_OBJCLIENT_H */
