/* SPDX-License-Identifier: MIT */
/*
 * kcr/scheme.h: a registry of kinds (apimachinery's runtime.Scheme, reduced to
 * what a C operator needs): for each group/version/kind, its list kind and
 * optionally a typed codec, so that a program can map a kind to a C struct of
 * its own and convert between that struct and the json_t the client and cache
 * speak. Which resource serves a kind, and its scope, is the REST mapper's to
 * say (kcr_rest_mapper_mapping_for_kind, kcr/discovery.h), from the server.
 *
 * Threads: register kinds before sharing the scheme; lookups and codecs are then
 * safe from any thread (the scheme is not changed after that).
 */
#ifndef KCR_SCHEME_H
#define KCR_SCHEME_H

#include <jansson.h>
#include <stdbool.h>

#include "kcr/client.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/objclient.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kcr_decode_fn turns obj (borrowed) into a new typed value in *out (release with
 * the kind's free function). Returns 0 or a negative kcr_err (KCR_EPARSE with a
 * message naming the field for bad input).
 */
typedef int (*kcr_decode_fn)(const json_t *obj, void **out, kcr_error_t *err, void *data);

/*
 * kcr_encode_fn turns typed (borrowed) into a new json_t in *out; the scheme sets
 * apiVersion and kind afterwards. Returns 0 or a negative kcr_err.
 */
typedef int (*kcr_encode_fn)(const void *typed, json_t **out, kcr_error_t *err, void *data);

/* kcr_free_typed_fn releases a typed value made by the decode function. */
typedef void (*kcr_free_typed_fn)(void *typed, void *data);

/*
 * kcr_kind_info: one kind. group "" is the core group. list_kind NULL means kind +
 * "List". The codec functions are optional, all three or none. Strings are copied
 * by kcr_scheme_register; lookups return the scheme's copy. resource and
 * namespaced are deprecated and optional: kept as given, never read by kcr.
 */
typedef struct kcr_kind_info {
  const char *group;
  const char *version;
  const char *kind;
  const char *resource KCR_DEPRECATED("since 2026-12-02: use kcr_rest_mapper_mapping_for_kind");
  const char *list_kind;
  bool namespaced KCR_DEPRECATED("since 2026-12-02: use kcr_rest_mapper_mapping_for_kind");
  kcr_decode_fn decode;
  kcr_encode_fn encode;
  kcr_free_typed_fn free_typed;
  void *codec_data;
} kcr_kind_info;

/* kcr_scheme_t: opaque. */
typedef struct kcr_scheme kcr_scheme_t;

/* kcr_scheme_create makes an empty scheme. Returns 0 or KCR_ENOMEM. */
KCR_EXTERN int kcr_scheme_create(kcr_scheme_t **out, kcr_error_t *err);

/* kcr_scheme_destroy frees the scheme. NULL is ignored. */
KCR_EXTERN void kcr_scheme_destroy(kcr_scheme_t *s);

/*
 * kcr_scheme_register adds a kind. Errors: KCR_EINVAL (version or kind missing,
 * or a codec given only in part), KCR_EEXIST (the group/version/kind, or a
 * resource given, is registered already), KCR_ENOMEM.
 */
KCR_EXTERN int kcr_scheme_register(kcr_scheme_t *s, const kcr_kind_info *info, kcr_error_t *err);

/*
 * kcr_scheme_add_builtins registers the built-in kinds operators use most (core
 * v1 ConfigMap, Secret, Service, Pod, Namespace, ServiceAccount, Event,
 * PersistentVolumeClaim; apps/v1 Deployment, StatefulSet, DaemonSet, ReplicaSet;
 * batch/v1 Job; coordination.k8s.io/v1 Lease; events.k8s.io/v1 Event; rbac and
 * apiextensions kinds). Returns 0, KCR_EEXIST or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_scheme_add_builtins(kcr_scheme_t *s, kcr_error_t *err);

/*
 * kcr_scheme_lookup_gvk finds the kind gvk (borrowed) names: gvk->group "" or
 * NULL is the core group; gvk->version NULL or "" matches the first registered
 * version of group/kind. Returns a borrowed entry (valid for the scheme's life),
 * or NULL (not registered, or gvk or its kind NULL). Any thread.
 */
KCR_EXTERN const kcr_kind_info *kcr_scheme_lookup_gvk(const kcr_scheme_t *s, const kcr_gvk *gvk);

/* kcr_scheme_lookup: kcr_scheme_lookup_gvk with the kind as loose strings. Deprecated. */
KCR_DEPRECATED("since 2026-12-02: use kcr_scheme_lookup_gvk")
KCR_EXTERN const kcr_kind_info *kcr_scheme_lookup(const kcr_scheme_t *s, const char *group,
                                                  const char *version, const char *kind);

/* kcr_scheme_lookup_resource finds a kind registered with resource r, or NULL. Deprecated. */
KCR_DEPRECATED("since 2026-12-02: use kcr_rest_mapper_mapping_for_resource")
KCR_EXTERN const kcr_kind_info *kcr_scheme_lookup_resource(const kcr_scheme_t *s, const kcr_gvr *r);

/*
 * kcr_scheme_kind_of finds the kind of obj (borrowed) from its apiVersion and
 * kind. Returns the entry or NULL (unknown, or obj lacks them).
 */
KCR_EXTERN const kcr_kind_info *kcr_scheme_kind_of(const kcr_scheme_t *s, const json_t *obj);

/* kcr_kind_info_gvk returns the entry's kind (strings borrowed from k). Any thread. */
KCR_EXTERN kcr_gvk kcr_kind_info_gvk(const kcr_kind_info *k);

/* kcr_kind_info_gvr returns the entry's group, version and resource (borrowed). Deprecated. */
KCR_DEPRECATED("since 2026-12-02: use kcr_rest_mapping_gvr")
KCR_EXTERN kcr_gvr kcr_kind_info_gvr(const kcr_kind_info *k);

/*
 * kcr_scheme_decode converts obj into its kind's typed value (*out new; release
 * with kcr_scheme_free_typed). Errors: KCR_ENOENT (kind not registered),
 * KCR_ENOTSUP (no codec), or the codec's error.
 */
KCR_EXTERN int kcr_scheme_decode(const kcr_scheme_t *s, const json_t *obj, void **out,
                                 kcr_error_t *err);

/*
 * kcr_scheme_encode converts a typed value of kind k into a new json_t with
 * apiVersion and kind set. Errors as kcr_scheme_decode.
 */
KCR_EXTERN int kcr_scheme_encode(const kcr_kind_info *k, const void *typed, json_t **out,
                                 kcr_error_t *err);

/* kcr_scheme_free_typed releases a typed value of kind k. NULL is ignored. */
KCR_EXTERN void kcr_scheme_free_typed(const kcr_kind_info *k, void *typed);

/* ---- typed objects through an object client ---- */

/*
 * The object client's verbs on typed values: each encodes or decodes with the
 * kind's codec in s (registered with kcr_scheme_register; KCR_ENOENT when the
 * kind is not, KCR_ENOTSUP when it has no codec) around the kcr_objclient_*
 * call of the same name, so a reconciler can read and write its own C structs.
 * Typed values going in are borrowed; *out receives a new typed value (release
 * with kcr_scheme_free_typed), NULL on failure; the writes take out NULL when
 * the caller does not want the server's answer (it is then not decoded). A
 * codec that keeps the fields it does not know (as kcr-gen's does) makes an
 * update through an old type leave them as they are. Blocking; any thread but
 * a client's loop thread.
 *   kcr_typed_get      one object of gvk.
 *   kcr_typed_list     *items: a new array of *n typed values (release with
 *                      kcr_typed_list_free); o as kcr_objclient_list.
 *   kcr_typed_create   create typed (a value of kind gvk).
 *   kcr_typed_update   update typed or its subresource ("status"; NULL: the object).
 *   kcr_typed_delete   delete the object typed names (its apiVersion, kind,
 *                      namespace, name), o as kcr_objclient_delete (NULL: defaults).
 *   kcr_typed_patch    PATCH the object typed names (its apiVersion, kind, namespace,
 *                      name) with patch (patch_len bytes of the given type; borrowed)
 *                      or its subresource, as kcr_objclient_patch; *out is the result.
 */
KCR_EXTERN int kcr_typed_get(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                             const char *ns, const char *name, void **out, kcr_error_t *err);
KCR_EXTERN int kcr_typed_list(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                              const kcr_list_options *o, void ***items, size_t *n,
                              kcr_error_t *err);
KCR_EXTERN int kcr_typed_create(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                                const void *typed, void **out, kcr_error_t *err);
KCR_EXTERN int kcr_typed_update(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                                const void *typed, const char *subresource, void **out,
                                kcr_error_t *err);
KCR_EXTERN int kcr_typed_delete(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                                const void *typed, const kcr_delete_options *o, kcr_error_t *err);
KCR_EXTERN int kcr_typed_patch(const kcr_objclient *c, const kcr_scheme_t *s, const kcr_gvk *gvk,
                               const void *typed, kcr_patch_type type, const char *patch,
                               size_t patch_len, const char *subresource, void **out,
                               kcr_error_t *err);

/*
 * kcr_typed_watch_next is kcr_objwatch_next (kcr/objclient.h) for a watch of
 * gvk opened with kcr_objclient_watch: *type the event's type and, for ADDED,
 * MODIFIED and DELETED, *out a new typed value (kcr_scheme_free_typed); for a
 * BOOKMARK *out is NULL. An ERROR event is returned as its error (KCR_EAPI,
 * err holding the Status: kcr_error_is_gone for 410 Expired), *type
 * KCR_WATCH_ERROR; the next call then tells how the watch ended. Other
 * returns as kcr_objwatch_next (KCR_EAGAIN: nothing in time), and
 * KCR_ENOENT/KCR_ENOTSUP for a kind s has no codec for.
 *
 *   while ((rc = kcr_typed_watch_next(w, s, &gvk, -1, &type, (void **)&app, err)) == 0) {
 *     if (app) { ... app->spec ...; kcr_scheme_free_typed(k, app); }
 *   }
 */
KCR_EXTERN int kcr_typed_watch_next(kcr_objwatch_t *w, const kcr_scheme_t *s, const kcr_gvk *gvk,
                                    int64_t timeout_ns, kcr_watch_event_type *type, void **out,
                                    kcr_error_t *err);

/* kcr_typed_list_free releases what kcr_typed_list returned (kind gvk). NULL ignored. */
KCR_EXTERN void kcr_typed_list_free(const kcr_scheme_t *s, const kcr_gvk *gvk, void **items,
                                    size_t n);

#ifdef __cplusplus
}
#endif

#endif /* KCR_SCHEME_H */
