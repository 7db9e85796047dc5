/* SPDX-License-Identifier: MIT */
/*
 * pbscan.h: the transcoder from Kubernetes' protobuf encoding of a built-in
 * kind to the compact JSON the API server would have sent for it, without
 * metadata.managedFields: the text the store keeps (cache/cobj.h), the same
 * text kcr__scan_object (jscan.h) makes from the JSON encoding.
 *
 * What an object's JSON looks like is read from the generated tables of
 * pb_schema.h: members in the order encoding/json writes them, omitempty,
 * null for an absent slice or pointer, and the Go types with a JSON form of
 * their own (metav1.Time, Quantity, IntOrString, ...). A kind the tables do
 * not know is refused (KCR_ENOTSUP), never guessed.
 *
 * Strings are written as JSON wants them: '"', '\\' and control characters
 * escaped, invalid UTF-8 replaced with U+FFFD as encoding/json does. A NUL
 * in a string is refused (KCR_EPARSE), since the store's parser (jansson
 * without JSON_ALLOW_NUL) refuses "\u0000" too.
 *
 * test/fuzz/fuzz_pbscan.c checks that any output jansson can read.
 */
#ifndef KCR_UTIL_PBSCAN_H
#define KCR_UTIL_PBSCAN_H

#include <stddef.h>

#include "kcr/buf.h"
#include "kcr/error.h"
#include "util/jscan.h"

/* KCR__PB_CONTENT_TYPE is the media type of one object; the stream of a watch
 * adds ";stream=watch" and frames each event (kcr__pb_frame). */
#define KCR__PB_CONTENT_TYPE "application/vnd.kubernetes.protobuf"

/*
 * kcr__pb_object transcodes in[0, len), one object as the API server encodes
 * it: the magic "k8s\0" then a runtime.Unknown holding the apiVersion, the
 * kind and the object's bytes. It appends the object's compact JSON to out
 * ("kind" and "apiVersion" first, as the API server writes them) and, when
 * meta is not NULL, notes its name, namespace and resourceVersion there (a
 * list's or a Status's resourceVersion, and "" for name and namespace).
 * Returns 0; KCR_EPARSE (malformed bytes, a NUL in a string, a value JSON
 * cannot hold), KCR_ENOTSUP (a kind or an encoding the tables do not know),
 * each with err set and out at its old length; KCR_ETOOBIG or KCR_ENOMEM
 * (out has then been freed, kcr_buf's rule). Any thread; no allocation but
 * out's.
 */
int kcr__pb_object(const unsigned char *in, size_t len, kcr_buf_t *out, kcr__scan_meta_t *meta,
                   kcr_error_t *err);

/*
 * kcr__pb_event transcodes one frame of a watch stream (a metav1.WatchEvent:
 * its type, and its object as kcr__pb_object takes it): the type is copied to
 * type (size bytes, NUL-terminated; KCR_EPARSE when longer), the object
 * appended to out as kcr__pb_object does. Returns as kcr__pb_object.
 */
int kcr__pb_event(const unsigned char *in, size_t len, char *type, size_t size, kcr_buf_t *out,
                  kcr__scan_meta_t *meta, kcr_error_t *err);

/*
 * kcr__pb_frame finds the first frame of a watch stream in in[0, len): each
 * is a 4-byte big-endian length and that many bytes. Returns 1 and sets
 * *start and *n to the frame's bytes when a whole frame is there, 0 when more
 * bytes are needed, KCR_ETOOBIG when the length passes max.
 */
int kcr__pb_frame(const unsigned char *in, size_t len, size_t max, size_t *start, size_t *n);

/* kcr__pb_known says whether the tables know apiVersion and kind (a kind kcr
 * may ask the API server for in protobuf). */
int kcr__pb_known(const char *api_version, const char *kind);

#endif /* KCR_UTIL_PBSCAN_H */
