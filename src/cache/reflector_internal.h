/* SPDX-License-Identifier: MIT */
/*
 * reflector_internal.h: the informer's reflector (cache/reflector.c), which
 * lists and watches one resource into a DeltaFIFO on a thread of its own.
 *
 * The informer embeds one kcr__reflector_t: it fills the configuration, starts
 * and stops the thread, and reads the state and counters below; nothing else
 * touches one. The reflector knows nothing of the informer: what it must tell
 * it (a bookmark's version is recorded) goes through on_bookmark.
 */
#ifndef KCR_CACHE_REFLECTOR_INTERNAL_H
#define KCR_CACHE_REFLECTOR_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "kcr/buf.h"
#include "kcr/informer.h"
#include "kcr/sharding.h"

#define KCR__REFLECTOR_RV_MAX 64

typedef struct kcr__reflector {
  /* Configuration: set by the owner between kcr__reflector_init and
   * kcr__reflector_start, then immutable. Strings are the owner's. */
  kcr_client_t *client;
  kcr_gvr resource;
  const char *ns, *label_selector, *field_selector; /* NULL: none */
  const char *name;                                 /* for the log: the kind, or the resource */
  /* sharded: the owner's set (NULL: not sharded), its key and its selector
   * text, sent with every list and watch */
  const kcr_shard_set_t *shard;
  kcr_shard_key shard_key;
  const char *shard_selector;
  long page_size;
  long min_timeout_s, max_timeout_s;
  int64_t idle_ns;
  kcr_clock_t *clock;
  kcr_transform_fn transform; /* reflector thread: runs before the FIFO sees an object */
  void *transform_data;
  bool scan_watch; /* the default transform, done by the scanner */
  /* protobuf: watch (and stream the list) in protobuf, transcoded to JSON on
   * arrival (util/pbscan.h); only for a kind the transcoder knows */
  bool protobuf;
  /* metadata_only: list and watch as PartialObjectMetadata and give each
   * object kind and the resource's apiVersion (kind NULL: both as sent). */
  bool metadata_only;
  const char *kind;
  kcr_delta_fifo_t *fifo; /* the owner's: where everything listed and watched goes */
  kcr_store_t *store;     /* the owner's: listed objects at a stored version are reused */
  /* on_bookmark is called on the reflector thread once a bookmark's version is
   * the last one (rv: it as a number, 0 if it is not one); no lock held. */
  void (*on_bookmark)(void *data, uint64_t rv);
  /* on_listed is called on the reflector thread once a list (paged or
   * streamed) is in the FIFO and counted in lists; no lock held. */
  void (*on_listed)(void *data);
  void *data;
  kcr_metric_child_t *m_received[5]; /* by kcr_watch_event_type - 1; NULL: no metrics */
  kcr_metric_child_t *m_relists[KCR_INFORMER_RELIST_REASONS];
  kcr_metric_child_t *m_shard_filtered;

  /* reflector thread */
  kcr_buf_t scratch;     /* the scanner's output, dumped trees */
  int stream_enabled;    /* use the streaming list (set by the owner before start) */
  json_t *stream_items;  /* while streaming: its events' slots (kcr__cobj_collapse) */
  bool stream_deleted;   /* while streaming: a DELETED event is among them */
  int meta_wire;         /* metadata_only and the server has not refused it (406) */
  int meta_refused;      /* the last watch was refused for its Accept header */
  int meta_whole_logged; /* logged once that the server sent whole objects */
  char api_version[256]; /* the resource's group/version, for metadata_only */
  pthread_t thread;
  int started; /* owner thread */

  pthread_mutex_t mu; /* held only to take a watch's own mutex (kcr_watch_stop) */
  pthread_cond_t cond;
  int stopping;                        /* protected by mu */
  int shard_change;                    /* protected by mu: next_* are waiting to be taken */
  char last_rv[KCR__REFLECTOR_RV_MAX]; /* protected by mu: the last known version */
  kcr_watch_t *watch;                  /* protected by mu: the running watch */
  kcr_error_t watch_err;               /* protected by mu */
  int watch_gone;                      /* protected by mu: a 410 ERROR event arrived */
  kcr_error_t last_error;              /* protected by mu: the latest failure */
  int streaming;               /* protected by mu: the watch is delivering its initial events */
  kcr_shard_set_t *next_shard; /* protected by mu: a shard to move to (set_shard) */
  char *next_selector;         /* protected by mu: its selector */
  kcr_shard_set_t *own_shard;  /* reflector thread: what shard points at after a move */
  char *own_selector;          /* reflector thread: what shard_selector points at then */
  kcr_cancel_t *cancel;        /* fired on stop: aborts a list in flight */

  /* Counters: atomics, bumped by the reflector thread, read by any. */
  atomic_uint_fast64_t lists, watches, watch_errors, events;
  atomic_uint_fast64_t streams;
  atomic_uint_fast64_t reused;      /* listed objects kept as stored (reuse_stored) */
  atomic_uint_fast64_t scanned;     /* watch objects that came as compact objects */
  atomic_uint_fast64_t received[5]; /* by kcr_watch_event_type - 1 */
  atomic_uint_fast64_t relists[KCR_INFORMER_RELIST_REASONS];
  atomic_uint_fast64_t last_seen_rv;
  atomic_uint_fast64_t shard_filtered; /* objects outside the shard, dropped here */
  atomic_int shard_ignored;            /* the server ignores shardSelector (logged once) */
  atomic_int_fast64_t last_event_ns;   /* the reflector's clock; set at start */
} kcr__reflector_t;

/* kcr__reflector_init readies r (zeroed, as in a calloc'ed owner) for its
 * configuration. Returns 0 or KCR_ENOMEM; either way kcr__reflector_destroy
 * frees it. */
int kcr__reflector_init(kcr__reflector_t *r);

/*
 * kcr__reflector_set_shard moves a sharded reflector to set (stolen) with its
 * selector text (stolen): the running watch is stopped and the reflector
 * lists again with them (a relist of reason KCR_INFORMER_RELIST_SHARD), so
 * Replace drops what left the shard and adds what came in. Any thread.
 */
void kcr__reflector_set_shard(kcr__reflector_t *r, kcr_shard_set_t *set, char *selector);

/* kcr__reflector_start starts the reflector's thread; 0 or KCR_ESYS. */
int kcr__reflector_start(kcr__reflector_t *r);

/* kcr__reflector_stop stops the watch and any list in flight and joins the
 * thread; once stopped, nothing is queued into the FIFO. Owner thread. */
void kcr__reflector_stop(kcr__reflector_t *r);

/* kcr__reflector_destroy frees what r holds (stopped, or never started). */
void kcr__reflector_destroy(kcr__reflector_t *r);

/* kcr__reflector_last_rv returns the reflector's last known version (an
 * event, a list or a bookmark) as a number. Any thread; takes mu. */
uint64_t kcr__reflector_last_rv(kcr__reflector_t *r);

/* kcr__reflector_last_error copies the reflector's latest failure (code
 * KCR_OK: none). Any thread; takes mu. */
void kcr__reflector_last_error(kcr__reflector_t *r, kcr_error_t *out);

/* kcr__reflector_metadata_reduce reduces obj in place to apiVersion, kind and
 * metadata without managedFields (a PartialObjectMetadata's fields). Never fails. */
void kcr__reflector_metadata_reduce(json_t *obj);

/* kcr__reflector_parse_rv reads a resourceVersion as a number: 0 when it is
 * empty or not one. */
uint64_t kcr__reflector_parse_rv(const char *rv);

#endif /* KCR_CACHE_REFLECTOR_INTERNAL_H */
