/* SPDX-License-Identifier: MIT */
/*
 * kcr/watch.h: decoding a Kubernetes watch stream. The API server answers a
 * ?watch=1 request with one JSON event per line:
 *
 *   {"type":"ADDED","object":{"kind":"ConfigMap",...}}
 *
 * and the HTTP layer hands over the bytes in whatever pieces the network
 * delivers. A kcr_watch_decoder_t reassembles lines across those pieces, parses
 * each into an event and calls back with it. A line longer than the decoder's
 * limit is an error, not a reason to grow without bound. An ERROR event carries a
 * metav1.Status, which the decoder also converts to a kcr_error_t (see
 * kcr/apierror.h: kcr_error_is_gone tells a reflector to list again).
 *
 * Every error a decoder reports (bad JSON, an unknown event type, a line over the
 * limit, a callback that asked to stop, no memory) ends the stream: the decoder
 * refuses further input until kcr_watch_decoder_reset, as client-go stops a watch
 * whose stream it cannot decode.
 */
#ifndef KCR_WATCH_H
#define KCR_WATCH_H

#include <stddef.h>

#include <jansson.h>

#include "kcr/common.h"
#include "kcr/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_watch_event_type: the "type" of a watch event. */
typedef enum kcr_watch_event_type {
  KCR_WATCH_ADDED = 1,
  KCR_WATCH_MODIFIED = 2,
  KCR_WATCH_DELETED = 3,
  KCR_WATCH_BOOKMARK = 4, /* object has only kind, apiVersion and metadata.resourceVersion
                             (and annotations, e.g. k8s.io/initial-events-end) */
  KCR_WATCH_ERROR = 5     /* object is a metav1.Status */
} kcr_watch_event_type;

/*
 * kcr_watch_event_type_name returns the wire name of type ("ADDED"...), or
 * "UNKNOWN". Borrowed, static storage; any thread.
 */
KCR_EXTERN const char *kcr_watch_event_type_name(kcr_watch_event_type type);

/*
 * kcr_watch_event: one decoded event, handed to a kcr_watch_event_cb.
 *   type    the event type.
 *   object  the event's object, always a JSON object: a NEW reference that the
 *           callback owns on every path, including when it returns an error; it
 *           must json_decref it or keep it.
 *   error   for KCR_WATCH_ERROR, the Status as an error (code KCR_EAPI, or
 *           KCR_EPROTO when the object is not a Status), borrowed for the
 *           duration of the call (copy the struct to keep it); NULL for other
 *           types.
 */
typedef struct kcr_watch_event {
  kcr_watch_event_type type;
  json_t *object;
  const kcr_error_t *error;
} kcr_watch_event;

/*
 * kcr_watch_event_cb receives each event, in stream order, on the thread that
 * called kcr_watch_decoder_feed or _finish, inside that call. event is borrowed
 * for the call (event->object is not: see kcr_watch_event). Return 0 to go on,
 * or a negative kcr_err to stop: feed/finish then returns that code and the
 * decoder refuses further input. The callback must not call feed, finish, reset
 * or destroy on the decoder that called it.
 */
typedef int (*kcr_watch_event_cb)(const kcr_watch_event *event, void *data);

/* The default longest line a decoder accepts: 16 MiB, past the largest object
 * etcd will store (1.5 MiB by default) with room for big custom resources. */
#define KCR_WATCH_MAX_LINE_DEFAULT ((size_t)16 * 1024 * 1024)

/* kcr_watch_decoder_t: opaque; one stream's framing state. */
typedef struct kcr_watch_decoder kcr_watch_decoder_t;

/*
 * kcr_watch_decoder_create makes a decoder whose lines may be at most max_line
 * bytes, newline excluded (0: KCR_WATCH_MAX_LINE_DEFAULT), and which calls cb
 * with data for every event. It allocates only its own small struct; memory for a
 * line split across feeds grows as needed up to max_line. *out receives a new
 * decoder (release with kcr_watch_decoder_destroy), NULL on failure. Returns 0 or
 * KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_watch_decoder_create(size_t max_line, kcr_watch_event_cb cb, void *data,
                                        kcr_watch_decoder_t **out, kcr_error_t *err);

/*
 * kcr_watch_decoder_feed consumes len bytes of the stream (borrowed for the
 * call, NULL allowed when len is 0; a line that ends in them is parsed where it
 * lies, only an unfinished line is copied). Calls the callback for each complete line; empty and
 * white-space-only lines are skipped. Returns 0, or the first error, after which
 * the decoder refuses further input:
 *   KCR_EPARSE   a line is not JSON (the message names its line number and the
 *                stream byte where it starts);
 *   KCR_EPROTO   a line is JSON but not an event: not an object, no "type" or
 *                an unknown one, no "object" object;
 *   KCR_ETOOBIG  a line passed max_line (reported as soon as it does, before its
 *                end arrives);
 *   KCR_ENOMEM;
 *   or what the callback returned.
 * A decoder is used by one thread at a time; it takes no lock.
 */
KCR_EXTERN int kcr_watch_decoder_feed(kcr_watch_decoder_t *dec, const void *bytes, size_t len,
                                      kcr_error_t *err);

/*
 * kcr_watch_decoder_finish tells the decoder the stream ended: a last line
 * without a newline is decoded now. Errors as kcr_watch_decoder_feed. Afterwards
 * only _reset and _destroy may be called.
 */
KCR_EXTERN int kcr_watch_decoder_finish(kcr_watch_decoder_t *dec, kcr_error_t *err);

/*
 * kcr_watch_decoder_reset readies the decoder for a new stream (the same limit
 * and callback), dropping any unfinished line and any earlier error.
 */
KCR_EXTERN void kcr_watch_decoder_reset(kcr_watch_decoder_t *dec);

/* kcr_watch_decoder_destroy releases dec; NULL is ignored. */
KCR_EXTERN void kcr_watch_decoder_destroy(kcr_watch_decoder_t *dec);

#ifdef __cplusplus
}
#endif

#endif /* KCR_WATCH_H */
