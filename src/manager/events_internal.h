/* SPDX-License-Identifier: MIT */
/*
 * events_internal.h: what events.c offers the testing layer: a recorder that
 * hands every call to a sink instead of correlating and sending it (the testing
 * kit's kcr_fake_recorder_create, kcr/testing.h).
 */
#ifndef KCR_EVENTS_INTERNAL_H
#define KCR_EVENTS_INTERNAL_H

#include "kcr/events.h"

/*
 * kcr__event_sink_fn receives one valid kcr_event_record call (everything
 * borrowed for the call; note already formatted and cut) on the recording
 * thread, without the recorder's lock. Its return value is the call's.
 */
typedef int (*kcr__event_sink_fn)(void *data, const kcr_object_ref *ref, const char *type,
                                  const char *reason, const char *action, const char *note);

/*
 * kcr__event_recorder_create_sink makes a recorder without a client or a
 * sender thread whose calls go to sink(data, ...). kcr_event_recorder_destroy
 * calls free_fn(data) (free_fn may be NULL). *out: new. KCR_ENOMEM.
 */
int kcr__event_recorder_create_sink(kcr__event_sink_fn sink, void (*free_fn)(void *data),
                                    void *data, kcr_event_recorder_t **out);

/* kcr__event_recorder_sink_data returns data when r is a sink recorder of sink, else NULL. */
void *kcr__event_recorder_sink_data(kcr_event_recorder_t *r, kcr__event_sink_fn sink);

#endif /* KCR_EVENTS_INTERNAL_H */
