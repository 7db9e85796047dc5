/* SPDX-License-Identifier: MIT */
/*
 * webhook.h: `kcr-gen webhook` (webhook.c): the admission webhook
 * configurations a project serves, from +kubebuilder:webhook markers in its C
 * sources, the work controller-gen's webhook generator does for Go. A set
 * gathers the markers of every source, then builds at most one
 * MutatingWebhookConfiguration and one ValidatingWebhookConfiguration.
 */
#ifndef KCR_GEN_WEBHOOK_H
#define KCR_GEN_WEBHOOK_H

#include <jansson.h>
#include <stddef.h>

/* WH_TEXT_MAX bounds one source file kcr-gen webhook reads (16 MiB). */
#define WH_TEXT_MAX ((size_t)16 << 20)

/* wh_set: the markers read so far (opaque). */
typedef struct wh_set wh_set;

/* wh_set_create makes an empty set in *out. Returns 0 or -1 (out of memory). */
int wh_set_create(wh_set **out);

/* wh_set_destroy releases the set. NULL is ignored. */
void wh_set_destroy(wh_set *s);

/*
 * wh_set_add reads the markers in text (len bytes, any bytes) named name:
 * every comment line whose text starts with +kubebuilder:webhook: or
 * +kubebuilder:webhookconfiguration:. Returns 0, or -1 with "NAME:LINE: reason"
 * in msg (or "out of memory"); the set is then as it was.
 */
int wh_set_add(wh_set *s, const char *name, const char *text, size_t len, char *msg, size_t size);

/* wh_set_count tells how many +kubebuilder:webhook markers the set holds. */
size_t wh_set_count(const wh_set *s);

/*
 * wh_set_build writes into *out a new JSON array of the configurations: the
 * MutatingWebhookConfiguration, then the ValidatingWebhookConfiguration, each
 * only when a marker asks for one, their webhooks sorted by name. labels
 * (borrowed, may be NULL) is an object of string labels put on both. Returns 0,
 * or -1 with "NAME:LINE: reason" in msg (a check that needs every marker: a
 * webhook name used twice, say), *out then NULL.
 */
int wh_set_build(const wh_set *s, const json_t *labels, json_t **out, char *msg, size_t size);

#endif /* KCR_GEN_WEBHOOK_H */
