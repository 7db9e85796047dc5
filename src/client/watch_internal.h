/* SPDX-License-Identifier: MIT */
/*
 * watch_internal.h: the decoder's compact mode, for the informer (no tree on
 * the way in). A property of one decoder, set by its owner before feeding it.
 */
#ifndef KCR_CLIENT_WATCH_INTERNAL_H
#define KCR_CLIENT_WATCH_INTERNAL_H

#include <stdbool.h>

#include "kcr/client.h"
#include "kcr/watch.h"

/*
 * kcr__watch_decoder_set_compact turns dec's compact mode on or off (before it is
 * fed). In compact mode an ADDED, MODIFIED or DELETED event whose line
 * kcr__scan_event accepts, and whose object has a name, carries a compact object
 * (util/jscan.h: a jansson string, metadata.managedFields already dropped)
 * instead of a tree; every other line is decoded as usual, errors included.
 */
void kcr__watch_decoder_set_compact(kcr_watch_decoder_t *dec, bool on);

/*
 * kcr__watch_set_compact sets the compact mode of w's decoder: the informer
 * calls it between kcr_client_watch and kcr_watch_run.
 */
void kcr__watch_set_compact(kcr_watch_t *w, bool on);

#endif /* KCR_CLIENT_WATCH_INTERNAL_H */
