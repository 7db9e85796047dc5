/* SPDX-License-Identifier: MIT */
/*
 * informer_multi_internal.h: an informer over a set of namespaces
 * (controller-runtime's multiNamespaceInformer): one ordinary informer per
 * namespace (a "part"), behind one kcr_informer_t whose public calls fan out
 * (informer.c dispatches to the kcr__multi_* functions when inf is one).
 * The cache (cache.c) reads each part's store itself: kcr__informer_part_for
 * and kcr__informer_parts.
 */
#ifndef KCR_CACHE_INFORMER_MULTI_INTERNAL_H
#define KCR_CACHE_INFORMER_MULTI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/informer.h"

typedef struct kcr__multi kcr__multi_t;

/*
 * kcr__informer_multi_create makes the informer of o (o->namespaces_len > 1,
 * resource already resolved into o->resource): one part per namespace, each
 * made with o and that namespace. *out: new, NULL on failure.
 */
int kcr__informer_multi_create(const kcr_informer_options *o, kcr_informer_t **out,
                               kcr_error_t *err);

/* kcr__informer_shell makes the kcr_informer_t that dispatches to m (informer.c);
 * NULL without memory. kcr__informer_multi_of returns it back (NULL: an ordinary
 * informer). */
kcr_informer_t *kcr__informer_shell(kcr__multi_t *m);
kcr__multi_t *kcr__informer_multi_of(kcr_informer_t *inf);
/* kcr__informer_self: inf as a one-element array (lives as long as inf). */
kcr_informer_t *const *kcr__informer_self(kcr_informer_t *inf);
/* kcr__informer_ns: the namespace an ordinary informer watches, NULL: all. */
const char *kcr__informer_ns(kcr_informer_t *inf);

/*
 * kcr__informer_parts returns the ordinary informers behind inf (borrowed: an
 * array that lives as long as inf): inf itself (n = 1) unless it spans several
 * namespaces. kcr__informer_part_for returns the one watching ns, or NULL when
 * ns is not one of inf's (an informer of all namespaces, or of ns, returns
 * itself; ns NULL or "" returns inf when it is ordinary, else NULL).
 */
size_t kcr__informer_parts(kcr_informer_t *inf, kcr_informer_t *const **out);
kcr_informer_t *kcr__informer_part_for(kcr_informer_t *inf, const char *ns);

/*
 * kcr__informer_add_handler_flags is kcr_informer_add_handler with flags.
 * KCR__HANDLER_METADATA: the handler reads only the apiVersion, kind and
 * metadata of what it is handed (the controller's own handlers, whose
 * predicates are all of metadata), so it gets trees of those alone, parsed at
 * a fraction of the whole object's cost.
 */
#define KCR__HANDLER_METADATA 1u
int kcr__informer_add_handler_flags(kcr_informer_t *inf, const kcr_event_handler *h, unsigned flags,
                                    uint64_t *id, kcr_error_t *err);

/* The fan-out of each public call (kcr/informer.h for what they do). */
int kcr__multi_add_handler(kcr__multi_t *m, const kcr_event_handler *h, unsigned flags,
                           uint64_t *id, kcr_error_t *err);
void kcr__multi_remove_handler(kcr__multi_t *m, uint64_t id);
bool kcr__multi_handler_has_synced(kcr__multi_t *m, uint64_t id);
int kcr__multi_start(kcr__multi_t *m, kcr_error_t *err);
void kcr__multi_stop(kcr__multi_t *m);
void kcr__multi_free(kcr__multi_t *m);
bool kcr__multi_has_synced(kcr__multi_t *m);
int kcr__multi_wait_for_sync(kcr__multi_t *m, int64_t timeout_ns, kcr_error_t *err);
int kcr__multi_wait_for_resource_version(kcr__multi_t *m, const char *rv, int64_t timeout_ns,
                                         kcr_error_t *err);
void kcr__multi_get_stats(kcr__multi_t *m, kcr_informer_stats *out);
json_t *kcr__multi_diagnostics(kcr__multi_t *m);

/*
 * kcr__namespaces_check validates a namespace set: every name non-empty and
 * none repeated. Returns 0 or KCR_EINVAL with a message prefixed by who
 * ("cache", "informer") naming the bad entry.
 */
int kcr__namespaces_check(const char *const *ns, size_t n, const char *who, kcr_error_t *err);

#endif /* KCR_CACHE_INFORMER_MULTI_INTERNAL_H */
