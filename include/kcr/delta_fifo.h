/* SPDX-License-Identifier: MIT */
/*
 * kcr/delta_fifo.h: the queue between a reflector and an informer (client-go
 * tools/cache DeltaFIFO, with EmitDeltaTypeReplaced = true).
 *
 * Each key has a list of deltas (what happened to the object, oldest first) and
 * keys come out in the order they first went in; a key that is already queued
 * keeps its place when more deltas arrive. Pop hands one key's deltas to a
 * processing function, with the FIFO's lock held, so that the consumer can
 * update its store (the "known objects") consistently with the queue.
 *
 * Semantics follow upstream exactly: only two trailing Deleted deltas collapse
 * (the one carrying the object wins over a tombstone); Replace queues Replaced
 * for every listed object and a Deleted tombstone (DeletedFinalStateUnknown) for
 * every key that vanished, taking the last known object from the queue or else
 * from the known objects; Resync queues Sync only for known keys with nothing
 * queued; HasSynced turns true once the first Replace's items have all been
 * popped (or an Add/Update/Delete came before any Replace).
 *
 * Objects (jansson vocabulary): kcr_delta_fifo_add/update/delete/replace do not
 * steal; the FIFO takes a reference of its own on each object (json_incref), so
 * the caller keeps and releases its own. The transform, when set, changes the
 * object in place (the caller sees that if it still holds it). Objects inside
 * the deltas a processing function receives are borrowed for the call: take a
 * reference to keep one, and treat them as read-only, since one object may be
 * shared by several deltas and by the caller that queued it.
 *
 * Threads: every function may be called from any thread; one mutex guards the
 * FIFO. Lock order: FIFO, then the known objects' store.
 */
#ifndef KCR_DELTA_FIFO_H
#define KCR_DELTA_FIFO_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/meta.h"
#include "kcr/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_delta_type: what happened (client-go DeltaType). */
typedef enum kcr_delta_type {
  KCR_DELTA_ADDED = 1,
  KCR_DELTA_UPDATED = 2,
  KCR_DELTA_DELETED = 3,
  KCR_DELTA_REPLACED = 4, /* listed again after a relist; may or may not have changed */
  KCR_DELTA_SYNC = 5      /* a periodic resync of an unchanged object */
} kcr_delta_type;

/* kcr_delta_type_name returns "Added", "Updated", ... (static), "Unknown" otherwise. */
KCR_EXTERN const char *kcr_delta_type_name(kcr_delta_type type);

/*
 * kcr_delta: one change. object is the state after the change (for Deleted,
 * the last state seen). A tombstone (client-go DeletedFinalStateUnknown: the
 * deletion was inferred by a relist, the final state is unknown) has type
 * KCR_DELTA_DELETED and tombstone_key set to its key; its object is the last
 * known state, and may be NULL when none is known.
 */
typedef struct kcr_delta {
  kcr_delta_type type;
  json_t *object;
  const char *tombstone_key;
} kcr_delta;

/*
 * kcr_deltas_free releases a delta array handed over by kcr_delta_fifo_get_by_key
 * (each object reference and the array). NULL is ignored.
 */
KCR_EXTERN void kcr_deltas_free(kcr_delta *deltas, size_t n);

/*
 * kcr_transform_fn changes obj in place before it is queued (the informer's
 * transform, usually kcr_meta_strip_managed_fields wrapped). It is not applied
 * to tombstones or to Sync deltas (those objects went through it already).
 * Returns 0 or a negative kcr_err that fails the call. Runs with the FIFO lock
 * held, so it must be quick: the informer therefore never sets one and
 * transforms on its reflector thread before queueing.
 */
typedef int (*kcr_transform_fn)(json_t *obj, void *data);

/* kcr_delta_fifo_options: all optional; zero means the default. */
typedef struct kcr_delta_fifo_options {
  kcr_key_fn key_fn; /* NULL: kcr_meta_key */
  void *key_data;
  const kcr_known_objects *known; /* copied; NULL: none (deletions inferred from the queue only) */
  kcr_transform_fn transform;     /* NULL: none */
  void *transform_data;
} kcr_delta_fifo_options;

/* kcr_delta_fifo_t: opaque. */
typedef struct kcr_delta_fifo kcr_delta_fifo_t;

/*
 * kcr_delta_fifo_process_cb handles the deltas of one key, popped from the
 * queue: key and deltas (oldest first, n >= 1) are borrowed for the call.
 * is_in_initial_list tells whether the key belongs to the first Replace not yet
 * fully popped (client-go's isInInitialList). Setting *requeue puts the same
 * deltas back at the end of the queue unless the key was queued meanwhile
 * (client-go's ErrRequeue). The return value is what kcr_delta_fifo_pop
 * returns. Runs with the FIFO's lock held: it must not call into the FIFO, and
 * should be quick.
 */
typedef int (*kcr_delta_fifo_process_cb)(const char *key, const kcr_delta *deltas, size_t n,
                                         bool is_in_initial_list, bool *requeue, void *data);

/*
 * kcr_delta_fifo_create makes an empty FIFO. opts may be NULL. *out receives a
 * new FIFO (release with kcr_delta_fifo_destroy), NULL on failure. Returns 0,
 * KCR_ENOMEM or KCR_ESYS.
 */
KCR_EXTERN int kcr_delta_fifo_create(const kcr_delta_fifo_options *opts, kcr_delta_fifo_t **out,
                                     kcr_error_t *err);

/*
 * kcr_delta_fifo_destroy releases f and what is queued. No thread may be using
 * it (close it and join the poppers first). NULL is ignored.
 */
KCR_EXTERN void kcr_delta_fifo_destroy(kcr_delta_fifo_t *f);

/*
 * kcr_delta_fifo_add queues an Added delta for obj (a new reference is taken;
 * obj is not stolen). Returns 0, KCR_EINVAL (obj has no key), KCR_ENOMEM or the
 * transform's error; on error nothing was queued.
 */
KCR_EXTERN int kcr_delta_fifo_add(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err);

/* kcr_delta_fifo_update queues an Updated delta; as kcr_delta_fifo_add. */
KCR_EXTERN int kcr_delta_fifo_update(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err);

/*
 * kcr_delta_fifo_delete queues a Deleted delta, unless the key is neither queued
 * nor known (then the deletion was already reported by a relist, and nothing is
 * queued). Errors as kcr_delta_fifo_add.
 */
KCR_EXTERN int kcr_delta_fifo_delete(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err);

/*
 * kcr_delta_fifo_add_new, _update_new and _delete_new are the stealing forms
 * (jansson's _new): they take over the caller's reference to obj on every path,
 * errors included. Producers on another thread than the consumer should use them:
 * the caller's reference is dropped under the FIFO's lock, so the object is
 * finally freed by the consumer, in order with its reads.
 */
KCR_EXTERN int kcr_delta_fifo_add_new(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err);
KCR_EXTERN int kcr_delta_fifo_update_new(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err);
KCR_EXTERN int kcr_delta_fifo_delete_new(kcr_delta_fifo_t *f, json_t *obj, kcr_error_t *err);

/*
 * kcr_delta_fifo_replace queues Replaced for every object of list (a borrowed
 * json array; a reference is taken on each element) and a Deleted tombstone for
 * every key queued or known that list lacks. resource_version is accepted for
 * parity with client-go and ignored. Returns 0, KCR_EINVAL (list not an array,
 * or an element without a key), KCR_ENOMEM or the transform's error; like
 * upstream, an error may leave part of the work queued.
 */
KCR_EXTERN int kcr_delta_fifo_replace(kcr_delta_fifo_t *f, json_t *list,
                                      const char *resource_version, kcr_error_t *err);

/*
 * kcr_delta_fifo_replace_new is kcr_delta_fifo_replace that steals list (on every
 * path; dropped under the FIFO's lock once anything was queued), for a producer on
 * another thread than the consumer: the listed objects are then freed by the
 * consumer, in order with its reads.
 */
KCR_EXTERN int kcr_delta_fifo_replace_new(kcr_delta_fifo_t *f, json_t *list,
                                          const char *resource_version, kcr_error_t *err);

/*
 * kcr_delta_fifo_resync queues a Sync delta for every known object whose key has
 * nothing queued. Does nothing without known objects. Returns 0 or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_delta_fifo_resync(kcr_delta_fifo_t *f, kcr_error_t *err);

/*
 * kcr_delta_fifo_add_if_not_present queues copies of deltas (n >= 1, as a
 * processing function received them; objects get a new reference) under the key
 * of the newest one, unless that key is already queued (client-go
 * AddIfNotPresent). Returns 0, KCR_EINVAL (n == 0 or no key) or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_delta_fifo_add_if_not_present(kcr_delta_fifo_t *f, const kcr_delta *deltas,
                                                 size_t n, kcr_error_t *err);

/*
 * kcr_delta_fifo_pop waits until a key is queued, removes it and calls process
 * with its deltas (see kcr_delta_fifo_process_cb). Returns process's return
 * value, or KCR_ECLOSED once the FIFO is closed and empty (what is queued when
 * it closes is still handed out).
 */
KCR_EXTERN int kcr_delta_fifo_pop(kcr_delta_fifo_t *f, kcr_delta_fifo_process_cb process,
                                  void *data);

/* kcr_delta_fifo_close wakes every waiting pop; later pops drain, then fail. */
KCR_EXTERN void kcr_delta_fifo_close(kcr_delta_fifo_t *f);

/* kcr_delta_fifo_is_closed tells whether kcr_delta_fifo_close was called. */
KCR_EXTERN bool kcr_delta_fifo_is_closed(kcr_delta_fifo_t *f);

/*
 * kcr_delta_fifo_has_synced tells whether the items of the first Replace have all
 * been popped, or an add, update, delete or add-if-not-present came first.
 */
KCR_EXTERN bool kcr_delta_fifo_has_synced(kcr_delta_fifo_t *f);

/* kcr_delta_fifo_len returns the number of queued keys. */
KCR_EXTERN size_t kcr_delta_fifo_len(kcr_delta_fifo_t *f);

/*
 * kcr_delta_fifo_list_keys: the queued keys in queue order, as a new
 * NULL-terminated vector (one allocation, kcr_free). Returns 0 or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_delta_fifo_list_keys(kcr_delta_fifo_t *f, char ***out, size_t *n);

/*
 * kcr_delta_fifo_list: the object of each queued key's newest delta, in queue
 * order, as a new json array (a tombstone without an object is left out).
 * Returns 0 or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_delta_fifo_list(kcr_delta_fifo_t *f, json_t **out);

/*
 * kcr_delta_fifo_get_by_key copies the deltas queued under key: *out receives a
 * new array of *n deltas (release with kcr_deltas_free). Returns 0, KCR_ENOENT
 * or KCR_ENOMEM.
 */
KCR_EXTERN int kcr_delta_fifo_get_by_key(kcr_delta_fifo_t *f, const char *key, kcr_delta **out,
                                         size_t *n);

/* kcr_delta_fifo_get is kcr_delta_fifo_get_by_key with obj's key (KCR_EINVAL without). */
KCR_EXTERN int kcr_delta_fifo_get(kcr_delta_fifo_t *f, const json_t *obj, kcr_delta **out,
                                  size_t *n);

/*
 * kcr_delta_fifo_key_of writes the key of a delta list (client-go KeyOf): the
 * tombstone key of the newest delta, or the key function applied to its object.
 * Returns 0, KCR_EINVAL (n == 0 or no key) or KCR_ETOOBIG.
 */
KCR_EXTERN int kcr_delta_fifo_key_of(kcr_delta_fifo_t *f, const kcr_delta *deltas, size_t n,
                                     char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* KCR_DELTA_FIFO_H */
