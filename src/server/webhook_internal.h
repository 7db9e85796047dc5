/* SPDX-License-Identifier: MIT */
/*
 * webhook_internal.h: the webhook layer's JSON Patch diff and review
 * decoders, exposed for its tests and fuzz targets. Pure functions of their
 * arguments (and the handler's), safe on any thread.
 */
#ifndef KCR_WEBHOOK_INTERNAL_H
#define KCR_WEBHOOK_INTERNAL_H

#include <jansson.h>

#include "kcr/webhook.h"

/*
 * kcr__json_patch_diff computes an RFC 6902 patch that turns from into to
 * (both borrowed): for objects, "remove" for keys gone, "add" for new keys and
 * the patch of each changed value; any other changed value (arrays included)
 * one "replace". *out: a new array (empty when equal). 0, KCR_ENOMEM, or
 * KCR_ETOOBIG for a JSON pointer over 4 KiB.
 */
int kcr__json_patch_diff(json_t *from, json_t *to, json_t **out);

/*
 * A review is decoded only if its jansson tree would cost at most
 * KCR_REVIEW_TREE_PER_BYTE times its size plus KCR_REVIEW_TREE_SLACK, and
 * never more than KCR_REVIEW_TREE_MAX: honest Kubernetes JSON costs 1 to 7
 * times its size (large strings near 1, small fields near 7), while a body of
 * empty objects costs 84, so a hostile review is refused before anything is
 * allocated for it.
 */
#define KCR_REVIEW_TREE_PER_BYTE 16u
/*
 * The webhook server's limits: a review body of up to 7 MiB, as
 * controller-runtime's webhook reads (an UPDATE carries the object and the
 * old object, each up to the API server's 3 MiB request limit), and a memory
 * budget of 32 MiB for its clients, so that the body limit is not cut to a
 * quarter of the general server's 16 MiB (kcr/server.h). With the tree bound
 * above, one review costs at most 7 MiB raw plus 32 MiB decoded.
 */
#define KCR_WEBHOOK_MAX_BODY ((size_t)7 * 1024 * 1024)
#define KCR_WEBHOOK_BUDGET ((size_t)32 * 1024 * 1024)
#define KCR_REVIEW_TREE_SLACK ((size_t)64 * 1024)
#define KCR_REVIEW_TREE_MAX ((size_t)32 * 1024 * 1024)

/*
 * kcr__json_tree_cost estimates, without allocating, the heap bytes jansson
 * takes to decode s[0..len): an upper bound for valid JSON (malformed input
 * gets some figure; the parser refuses it anyway). It stops counting once past
 * limit, so a refusal costs at most one pass over the bytes.
 */
size_t kcr__json_tree_cost(const char *s, size_t len, size_t limit);

/* kcr__review_tree_limit: the most a review of len bytes may cost to decode. */
size_t kcr__review_tree_limit(size_t len);

/*
 * kcr__admission_review decodes an AdmissionReview from body[0..len), runs cb
 * (a mutating one when mutating: the answer then carries the JSON Patch) and
 * returns the AdmissionReview answer (new; a denial with code 400 for a body
 * that is not a review or a review of an apiVersion other than
 * admission.k8s.io/v1 and v1beta1, 413 for one past kcr__review_tree_limit,
 * decoded or not), or NULL when memory ran out. name is for logs. On
 * the calling thread (the server's worker); the fuzz target calls it directly.
 */
json_t *kcr__admission_review(const char *body, size_t len, kcr_admission_cb cb, void *data,
                              int mutating, const char *name);

/*
 * kcr__conversion_review decodes a ConversionReview from body[0..len), runs
 * cb on each object not yet at the desired version and returns the
 * ConversionReview answer (new): result Success with convertedObjects in the
 * request's order, or Failure with a message and no objects (a body that is
 * not a review, a handler error, an answer of the wrong apiVersion or kind).
 * NULL when memory ran out. name is for logs. On the calling thread.
 */
json_t *kcr__conversion_review(const char *body, size_t len, kcr_conversion_cb cb, void *data,
                               const char *name);

/*
 * kcr__webhook_server_review runs the review in body[0..len) through the
 * handler registered on ws (borrowed) for path, as a POST there would, without
 * the HTTP layer or the metrics: the answer (new), or NULL for an unknown path
 * or out of memory. For tests of handlers; on the calling thread.
 */
json_t *kcr__webhook_server_review(kcr_webhook_server_t *ws, const char *path, const char *body,
                                   size_t len);

#endif /* KCR_WEBHOOK_INTERNAL_H */
