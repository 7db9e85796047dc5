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
 */
typedef struct kcr_apply_options {
  const char *field_manager;
  bool force;
} kcr_apply_options;

/*
 * kcr_delete_options: zero-initialise.
 *   propagation_policy  "Foreground", "Background", "Orphan"; NULL: the kind's
 *                       default.
 *   grace_period_seconds  0 with has_grace_period: now; otherwise the default.
 *   precondition_uid, precondition_resource_version  refuse (409) unless they hold.
 */
typedef struct kcr_delete_options {
  const char *propagation_policy;
  bool has_grace_period;
  int64_t grace_period_seconds;
  const char *precondition_uid;
  const char *precondition_resource_version;
} kcr_delete_options;

typedef struct kcr_objclient kcr_objclient;

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
} kcr_objclient_ops;

/*
 * KCR_OBJCLIENT_OUT_OPTIONAL: create, update, patch and apply take out NULL
 * when the caller passed NULL (it does not want the answer), so that an
 * implementation may skip parsing it. The manager's object client sets it.
 */
#define KCR_OBJCLIENT_OUT_OPTIONAL 1u

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
