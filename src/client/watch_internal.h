/* SPDX-License-Identifier: MIT */
/*
 * watch_internal.h: the decoder's compact mode, for the informer (no tree on
 * the way in).
 */
#ifndef KCR_CLIENT_WATCH_INTERNAL_H
#define KCR_CLIENT_WATCH_INTERNAL_H

#include <stdbool.h>

/*
 * kcr__watch_set_compact turns the compact mode on or off for the decoders fed
 * on the calling thread (thread-local: the informer's reflector sets it around
 * kcr_watch_run, which feeds its decoder on that thread). In compact mode an
 * ADDED, MODIFIED or DELETED event whose line kcr__scan_event accepts, and
 * whose object has a name, carries a compact object (util/jscan.h: a jansson
 * string, metadata.managedFields already dropped) instead of a tree; every
 * other line is decoded as usual, errors included.
 */
void kcr__watch_set_compact(bool on);

#endif /* KCR_CLIENT_WATCH_INTERNAL_H */
