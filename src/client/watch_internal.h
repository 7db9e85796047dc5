/* SPDX-License-Identifier: MIT */
/*
 * watch_internal.h: the decoder's line hook, for the informer (no tree on the
 * way in). A property of one decoder, set by its owner before feeding it.
 */
#ifndef KCR_CLIENT_WATCH_INTERNAL_H
#define KCR_CLIENT_WATCH_INTERNAL_H

#include <stddef.h>

#include "kcr/client.h"
#include "kcr/watch.h"

/*
 * kcr__watch_line_fn is offered each non-empty line of a stream (newline
 * excluded; borrowed for the call) before the decoder parses it, on the thread
 * that feeds the decoder. It returns 1 when it took the line (the decoder's
 * event callback is then not called for it), 0 to let the decoder parse it as
 * usual, or a negative kcr_err, which fails the stream as a callback's error
 * does. Like the event callback, it must not call back into the decoder.
 */
typedef int (*kcr__watch_line_fn)(const char *line, size_t len, void *data);

/* kcr__watch_decoder_set_line_fn sets dec's line hook (NULL: none), before the
 * decoder is fed. */
void kcr__watch_decoder_set_line_fn(kcr_watch_decoder_t *dec, kcr__watch_line_fn fn, void *data);

/*
 * kcr__watch_set_line_fn sets the line hook of w's decoder: the informer calls
 * it between kcr_client_watch and kcr_watch_run, so that the lines it can store
 * without a tree never become one.
 */
void kcr__watch_set_line_fn(kcr_watch_t *w, kcr__watch_line_fn fn, void *data);

/*
 * kcr__watch_decoder_set_frame_fn sets dec's frame hook (NULL: none): the
 * line hook's twin for a protobuf stream, offered each frame (a
 * metav1.WatchEvent, util/pbscan.h's kcr__pb_event reads it) with the same
 * contract.
 */
void kcr__watch_decoder_set_frame_fn(kcr_watch_decoder_t *dec, kcr__watch_line_fn fn, void *data);

/* kcr__watch_decoder_set_protobuf makes dec read a protobuf stream (4-byte
 * length-prefixed frames) instead of lines; before the first feed. */
void kcr__watch_decoder_set_protobuf(kcr_watch_decoder_t *dec);

/* kcr__watch_set_frame_fn sets the frame hook of w's decoder, as
 * kcr__watch_set_line_fn does the line hook. The watch switches its decoder
 * to frames itself when the answer's Content-Type is protobuf. */
void kcr__watch_set_frame_fn(kcr_watch_t *w, kcr__watch_line_fn fn, void *data);

/* KCR__ACCEPT_PROTOBUF asks for protobuf, or JSON where the server has none
 * (custom resources), as client-go's clientset does for built-in kinds. */
#define KCR__ACCEPT_PROTOBUF "application/vnd.kubernetes.protobuf, application/json"

#endif /* KCR_CLIENT_WATCH_INTERNAL_H */
