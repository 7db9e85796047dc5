/* SPDX-License-Identifier: MIT */
/*
 * reflector.c: the informer's reflector (client-go's ListAndWatch), which keeps
 * one resource's DeltaFIFO up to date with the server.
 *
 * It owns its thread and everything that thread uses: the list, the watches,
 * the decoder's line hook, the backoff and the decisions between them. It lists
 * in pages (500 by default) into one array and Replaces the FIFO with it; then
 * watches from the list's resource version with bookmarks and a random timeout
 * in [300, 600] s. The loop thread only receives a watch's bytes; this thread
 * decodes them (kcr_watch_run), runs the transform and queues each event into
 * the FIFO, so neither the JSON parse nor a user's transform ever runs on the
 * loop. When a watch ends the reflector decides: a normal end (the server's
 * timeout) re-watches at once from the last resource version; a 410 (too old)
 * relists from scratch; a connection failure, an idle (half-open) connection or
 * a 429 backs off (800 ms doubling to 30 s, jittered, reset after 2 minutes
 * without trouble) and re-watches from the last version; any other failure
 * backs off and relists. A 410 on a list's continue token restarts the list
 * without one. With the streaming list, one watch with sendInitialEvents takes
 * the list's place (stream_object, stream_bookmark); a server that refuses it
 * is listed from then on.
 *
 * No tree on the way in: what the FIFO holds are compact objects
 * (cache/cobj.h), made once per object on this thread. With the default
 * transform a watch line is scanned straight into one (on_watch_line, the
 * decoder's line hook: no tree at all); a list page, or any object under a
 * custom transform, is parsed, transformed and dumped. The streaming list and
 * Replace therefore hold only compact forms; a relist reuses the objects the
 * store already holds at the listed version (reuse_stored).
 *
 * Threads: the reflector's own, started and stopped by its owner (the
 * informer), which also reads its state (mu) and counters (atomics) from any
 * thread. mu is held only to take a watch's own mutex (kcr_watch_stop), never
 * another lock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cobj.h"
#include "cache/reflector_internal.h"
#include "cache/store_internal.h"
#include "client/watch_internal.h"
#include "kcr/apierror.h"
#include "kcr/backoff.h"
#include "kcr/log.h"
#include "kcr/meta.h"
#include "kcr/rand.h"
#include "util/alloc.h"
#include "util/jscan.h"
#include "util/pbscan.h"

uint64_t kcr__reflector_parse_rv(const char *rv) {
  char *end;
  unsigned long long v;
  if (!rv || !*rv)
    return 0;
  v = strtoull(rv, &end, 10);
  return *end ? 0 : (uint64_t)v;
}

/* count_relist notes that the reflector will list again, and why. */
static void count_relist(kcr__reflector_t *r, kcr_informer_relist_reason why) {
  atomic_fetch_add(&r->relists[why], 1);
  kcr_metric_inc(r->m_relists[why]);
}

/* relist_reason classifies the failure that makes the reflector list again. */
static kcr_informer_relist_reason relist_reason(int code, const kcr_error_t *err) {
  if (code == KCR_EAPI && kcr_error_is_gone(err))
    return KCR_INFORMER_RELIST_GONE;
  if (code == KCR_ETIMEDOUT)
    return KCR_INFORMER_RELIST_TIMEOUT;
  return KCR_INFORMER_RELIST_ERROR;
}

/* trim_scratch frees the scratch buffer after one huge object, so that it
 * does not pin its size. */
static void trim_scratch(kcr__reflector_t *r) {
  if (r->scratch.cap > (size_t)256 * 1024)
    kcr_buf_free(&r->scratch);
}

/* to_compact makes *out, the compact object of tree (stolen: released on every
 * path); returns 0 or a kcr_err (*out NULL). */
static int to_compact(kcr__reflector_t *r, json_t *tree, kcr__cobj_t **out) {
  int rc = kcr__cobj_from_tree(tree, &r->scratch, out);
  json_decref(tree);
  trim_scratch(r);
  return rc;
}

/*
 * reuse_stored takes a listed compact object (steals cobj) and returns the one
 * the store holds under key when that is at the same resourceVersion (a new
 * reference; cobj is released), else cobj. A relist mostly lists objects the
 * store already has: keeping the stored ones and dropping each listed copy as
 * it arrives makes a relist's peak the store plus what changed, not twice the
 * store, and the Replace that follows shares the objects. Reflector thread.
 */
static kcr__cobj_t *reuse_stored(kcr__reflector_t *r, const char *key, kcr__cobj_t *cobj) {
  kcr__cobj_t *stored = NULL;
  const char *rv = kcr__cobj_rv(cobj);
  if (!rv[0] || kcr__store_get_compact(r->store, key, &stored) != 0)
    return cobj;
  if (stored != cobj && strcmp(kcr__cobj_rv(stored), rv) == 0) {
    kcr__cobj_unref(cobj);
    atomic_fetch_add(&r->reused, 1);
    return stored;
  }
  kcr__cobj_unref(stored);
  return cobj;
}

/* sleep_or_stop waits ns on the reflector's clock (less when the shard moves);
 * returns 1 when stopping. */
static int sleep_or_stop(kcr__reflector_t *r, int64_t ns) {
  int64_t deadline = kcr_clock_now(r->clock) + ns;
  int stopping;
  pthread_mutex_lock(&r->mu);
  while (!r->stopping && !r->shard_change &&
         kcr_clock_timedwait(r->clock, &r->cond, &r->mu, deadline) != KCR_ETIMEDOUT)
    ;
  stopping = r->stopping;
  pthread_mutex_unlock(&r->mu);
  return stopping;
}

static int is_stopping(kcr__reflector_t *r) {
  int s;
  pthread_mutex_lock(&r->mu);
  s = r->stopping;
  pthread_mutex_unlock(&r->mu);
  return s;
}

static void set_last_error(kcr__reflector_t *r, const kcr_error_t *err) {
  pthread_mutex_lock(&r->mu);
  r->last_error = *err;
  pthread_mutex_unlock(&r->mu);
}

/* ---- metadata only ---- */

void kcr__reflector_metadata_reduce(json_t *obj) {
  const char *k;
  json_t *v, *tmp;
  json_object_foreach_safe(obj, tmp, k, v) {
    if (strcmp(k, "apiVersion") != 0 && strcmp(k, "kind") != 0 && strcmp(k, "metadata") != 0)
      json_object_del(obj, k);
  }
  kcr_meta_strip_managed_fields(obj);
}

/*
 * restore_kind gives a metadata-only reflector's object (borrowed) the watched
 * kind and apiVersion in place of meta.k8s.io/v1 PartialObjectMetadata, as
 * controller-runtime's metadata informer does, so that readers see what a
 * whole object reduced on arrival would show. Says once when the server sent
 * whole objects despite the Accept header (an API that cannot convert). 0 or
 * KCR_ENOMEM.
 */
static int restore_kind(kcr__reflector_t *r, json_t *obj) {
  const char *k = json_string_value(json_object_get(obj, "kind"));
  if (!r->metadata_only || !r->kind || !json_is_object(obj))
    return 0; /* without a kind, the server's PartialObjectMetadata stays as sent */
  if (r->meta_wire && !r->meta_whole_logged && (!k || strcmp(k, "PartialObjectMetadata") != 0)) {
    r->meta_whole_logged = 1;
    kcr_log(KCR_LOG_INFO, "reflector",
            "%s: the server sent whole objects for a metadata-only informer (%s, not "
            "PartialObjectMetadata); reducing them on arrival",
            r->name, k ? k : "no kind");
  }
  if (json_object_set_new(obj, "apiVersion", json_string(r->api_version)) != 0 ||
      json_object_set_new(obj, "kind", json_string(r->kind)) != 0)
    return KCR_ENOMEM;
  return 0;
}

/* refused_metadata: err is the server refusing a metadata-only request's
 * Accept header (406 Not Acceptable); it then gets plain JSON from now on,
 * reduced on arrival, and the log says so once. Reflector thread. */
static int refused_metadata(kcr__reflector_t *r, const kcr_error_t *err, const char *what) {
  if (!r->meta_wire || err->code != KCR_EAPI || err->http_status != 406)
    return 0;
  r->meta_wire = 0;
  kcr_log(KCR_LOG_WARN, "reflector",
          "%s: the server refused to %s as PartialObjectMetadata (406: %s); listing and "
          "watching whole objects from now on, reduced to their metadata on arrival",
          r->name, what, err->message);
  return 1;
}

/* ---- list ---- */

/* fill_kind gives list items the kind and apiVersion the list implies (a list's
 * items omit them; watch events carry them). */
static void fill_kind(json_t *list, json_t *item) {
  const char *lk = json_string_value(json_object_get(list, "kind"));
  const char *av = json_string_value(json_object_get(list, "apiVersion"));
  size_t n = lk ? strlen(lk) : 0;
  if (!json_object_get(item, "kind") && n > 4 && strcmp(lk + n - 4, "List") == 0)
    json_object_set_new(item, "kind", json_stringn(lk, n - 4));
  if (!json_object_get(item, "apiVersion") && av)
    json_object_set_new(item, "apiVersion", json_string(av));
}

/*
 * Sharding. The list and the watch carry shardSelector; a server without the
 * ShardedListAndWatch gate ignores it and sends everything. That shows in its
 * answers, whatever its version says: a list answer without metadata.shardInfo,
 * or an object whose hash is outside the shard. The reflector then says so once
 * and drops every such object itself (one FNV-1a hash per object), so the
 * store holds the shard either way.
 */

/* shard_ignored notes (and logs, the first time) that the server ignores the
 * shard selector; why says how it showed. */
static void shard_ignored(kcr__reflector_t *r, const char *why) {
  if (atomic_exchange(&r->shard_ignored, 1) == 0)
    kcr_log(KCR_LOG_WARN, "reflector",
            "%s: the API server ignores shardSelector (%s; is the ShardedListAndWatch feature "
            "gate on?): filtering the shard on the client",
            r->name, why);
}

/* sent_selector: the shardSelector the list and the watch carry: none on the
 * owner-uid key, which no API server selects on (the store is filtered here). */
static const char *sent_selector(const kcr__reflector_t *r) {
  return r->shard_key == KCR_SHARD_KEY_OWNER_UID ? NULL : r->shard_selector;
}

/* shard_keep says whether c belongs in the store: always without a shard;
 * with one, when its hash is in it (else it is counted and, unless the key is
 * the client-side owner uid, the server noted as ignoring the selector). */
static bool shard_keep(kcr__reflector_t *r, const kcr__cobj_t *c) {
  uint64_t h;
  if (!r->shard)
    return true;
  if (r->shard_key == KCR_SHARD_KEY_NAMESPACE) {
    const char *ns = kcr__cobj_ns(c);
    h = kcr_shard_hash(ns, strlen(ns));
  } else {
    json_t *tree = NULL;
    int rc = kcr__cobj_parse(c, &tree);
    if (rc == 0)
      rc = kcr_shard_object_hash(tree, r->shard_key, &h, NULL);
    json_decref(tree);
    if (rc) /* an object without a uid: the server could not have sharded it either */
      return true;
  }
  if (kcr_shard_set_contains(r->shard, h))
    return true;
  if (r->shard_key != KCR_SHARD_KEY_OWNER_UID)
    shard_ignored(r, "an object outside the shard arrived");
  atomic_fetch_add(&r->shard_filtered, 1);
  kcr_metric_inc(r->m_shard_filtered);
  return false;
}

/* do_list lists everything (paged) and replaces the FIFO's contents with it. */
static int do_list(kcr__reflector_t *r, kcr_error_t *err) {
  json_t *all = json_array(), *page = NULL;
  kcr_request_options o;
  char cont[4096] = "", rv[KCR__REFLECTOR_RV_MAX] = "", key[KCR_META_KEY_MAX];
  int rc = 0;

  if (!all)
    return kcr_error_set(err, KCR_ENOMEM, "list %s: out of memory", r->resource.resource);
  for (;;) {
    const char *next, *prv;
    size_t i;
    json_t *item;
    memset(&o, 0, sizeof(o));
    o.label_selector = r->label_selector;
    o.field_selector = r->field_selector;
    o.shard_selector = sent_selector(r);
    o.limit = r->page_size;
    o.continue_token = cont[0] ? cont : NULL;
    o.cancel = r->cancel;
    o.accept = r->meta_wire ? KCR_ACCEPT_PARTIAL_METADATA_LIST : NULL;
    rc = kcr_client_list(r->client, &r->resource, r->ns, &o, &page, err);
    if (rc && refused_metadata(r, err, "list")) {
      kcr_error_clear(err);
      json_array_clear(all);
      cont[0] = '\0';
      rv[0] = '\0';
      continue;
    }
    if (rc == KCR_EAPI && cont[0] && kcr_error_is_gone(err)) {
      /* The continue token expired (compaction): start over with a full list. */
      kcr_log(KCR_LOG_INFO, "reflector", "%s: list continue token expired, listing again", r->name);
      kcr_error_clear(err);
      count_relist(r, KCR_INFORMER_RELIST_GONE);
      json_array_clear(all);
      cont[0] = '\0';
      rv[0] = '\0'; /* the new list has a version of its own */
      continue;
    }
    if (rc)
      break;
    prv = json_string_value(json_object_get(json_object_get(page, "metadata"), "resourceVersion"));
    if (!rv[0] && prv)
      snprintf(rv, sizeof(rv), "%s", prv);
    if (sent_selector(r) && !json_object_get(json_object_get(page, "metadata"), "shardInfo"))
      shard_ignored(r, "its list answer has no metadata.shardInfo");
    json_array_foreach(json_object_get(page, "items"), i, item) {
      kcr__cobj_t *c;
      fill_kind(page, item);
      if ((rc = restore_kind(r, item)) != 0) {
        kcr_error_set(err, rc, "list %s: out of memory", r->resource.resource);
        break;
      }
      if ((rc = r->transform(item, r->transform_data)) != 0) {
        kcr_error_set(err, rc, "list %s: the transform refused an item: %s", r->resource.resource,
                      kcr_strerror(rc));
        break;
      }
      if ((rc = to_compact(r, json_incref(item), &c)) != 0) {
        kcr_error_set(err, rc, "list %s: cannot store an item: %s", r->resource.resource,
                      kcr_strerror(rc));
        break;
      }
      if (!shard_keep(r, c)) {
        kcr__cobj_unref(c);
        continue;
      }
      if (kcr__cobj_key(c, key, sizeof(key)) == 0)
        c = reuse_stored(r, key, c);
      if (json_array_append_new(all, kcr__cobj_slot(c)) != 0) {
        rc = kcr_error_set(err, KCR_ENOMEM, "list %s: out of memory", r->resource.resource);
        break;
      }
    }
    next = json_string_value(json_object_get(json_object_get(page, "metadata"), "continue"));
    snprintf(cont, sizeof(cont), "%s", next ? next : "");
    json_decref(page);
    page = NULL;
    if (rc || !cont[0])
      break;
  }
  if (rc == 0)
    rc = kcr_delta_fifo_replace_new(r->fifo, all, rv, err); /* steals all */
  else
    json_decref(all);
  if (rc == 0) {
    pthread_mutex_lock(&r->mu);
    snprintf(r->last_rv, sizeof(r->last_rv), "%s", rv);
    pthread_mutex_unlock(&r->mu);
    atomic_fetch_add(&r->lists, 1);
    if (r->on_listed)
      r->on_listed(r->data);
    kcr_log(KCR_LOG_DEBUG, "reflector", "%s: listed at resourceVersion %s", r->name, rv);
  }
  return rc;
}

/* ---- watch ---- */

/*
 * begin_event does what every watch event does first: count it, note the last
 * version seen and when. Returns whether the watch is still streaming its
 * initial list. Reflector thread.
 */
static int begin_event(kcr__reflector_t *r, kcr_watch_event_type type, const char *rv) {
  int streaming;
  if (type >= KCR_WATCH_ADDED && type <= KCR_WATCH_ERROR) {
    atomic_fetch_add(&r->received[type - 1], 1);
    kcr_metric_inc(r->m_received[type - 1]);
  }
  if (type != KCR_WATCH_ERROR && kcr__reflector_parse_rv(rv))
    atomic_store(&r->last_seen_rv, kcr__reflector_parse_rv(rv));
  atomic_store(&r->last_event_ns, kcr_clock_now(r->clock));
  pthread_mutex_lock(&r->mu);
  streaming = r->streaming;
  pthread_mutex_unlock(&r->mu);
  return streaming;
}

/* end_event records a queued object's or a bookmark's version as the last one
 * (rc 0), or logs why it could not be queued; returns rc. */
static int end_event(kcr__reflector_t *r, kcr_watch_event_type type, const char *rv, int rc,
                     const kcr_error_t *err) {
  if (rc == 0 && *rv) {
    pthread_mutex_lock(&r->mu);
    snprintf(r->last_rv, sizeof(r->last_rv), "%s", rv);
    pthread_mutex_unlock(&r->mu);
    if (type == KCR_WATCH_BOOKMARK && r->on_bookmark)
      r->on_bookmark(r->data, kcr__reflector_parse_rv(rv));
  }
  if (rc == 0 && type != KCR_WATCH_BOOKMARK)
    atomic_fetch_add(&r->events, 1);
  if (rc)
    kcr_log(KCR_LOG_ERROR, "reflector", "%s: cannot queue a watch event: %s", r->name,
            err->message);
  return rc;
}

/*
 * A streaming list (watch with sendInitialEvents) first sends the current
 * state: its object events collect in a private array of slots until the
 * bookmark annotated k8s.io/initial-events-end, which turns them
 * (kcr__cobj_collapse: a key's last object, deletions applied) into one
 * Replace, exactly what a paged list would have done; the same watch then goes
 * on as a normal one. Reflector thread (inside kcr_watch_run).
 */

/* stream_object collects one object event of the initial phase (c stolen). */
static int stream_object(kcr__reflector_t *r, kcr_watch_event_type type, kcr__cobj_t *c) {
  char key[KCR_META_KEY_MAX];
  int rc;
  if (kcr__cobj_key(c, key, sizeof(key)) != 0) {
    kcr_log(KCR_LOG_ERROR, "reflector", "%s: a streamed %s event has no name", r->name,
            kcr_watch_event_type_name(type));
    kcr__cobj_unref(c);
    return KCR_EPROTO;
  }
  /* In arrival order, a deletion marked by a null before it; no allocation per
   * object. An object at the version stored: keep the stored one. */
  if (type == KCR_WATCH_DELETED)
    r->stream_deleted = true;
  if (type == KCR_WATCH_DELETED && json_array_append_new(r->stream_items, json_null())) {
    kcr__cobj_unref(c);
    rc = KCR_ENOMEM;
  } else {
    if (type != KCR_WATCH_DELETED)
      c = reuse_stored(r, key, c);
    rc = json_array_append_new(r->stream_items, kcr__cobj_slot(c)) ? KCR_ENOMEM : 0;
  }
  if (rc)
    kcr_log(KCR_LOG_ERROR, "reflector", "%s: out of memory collecting a streamed list", r->name);
  return rc;
}

/* stream_bookmark ends the initial phase at the initial-events-end bookmark
 * (borrowed) at rv; other bookmarks are ignored while streaming. */
static int stream_bookmark(kcr__reflector_t *r, const json_t *bookmark, const char *rv) {
  const char *end = kcr_meta_annotation(bookmark, "k8s.io/initial-events-end");
  json_t *items;
  kcr_error_t err;
  int rc;

  if (!end || strcmp(end, "true") != 0)
    return 0;
  /* The API server sends the state, one event per object, so there is
   * nothing to collapse unless a deletion came: the FIFO's Replace already
   * takes a key's last object when one comes twice. Collapsing anyway cost
   * a key and a map insert per object at the very end of the sync. */
  if (!r->stream_deleted)
    items = json_incref(r->stream_items);
  else if ((rc = kcr__cobj_collapse(r->stream_items, &items)) != 0)
    return rc;
  /* Freed now: it would otherwise stay until this watch ends. Not used again
   * once streaming is 0. */
  json_decref(r->stream_items);
  r->stream_items = NULL;
  kcr_error_clear(&err);
  rc = kcr_delta_fifo_replace_new(r->fifo, items, rv, &err); /* steals items */
  if (rc) {
    kcr_log(KCR_LOG_ERROR, "reflector", "%s: cannot store the streamed list: %s", r->name,
            err.message);
    return rc;
  }
  pthread_mutex_lock(&r->mu);
  r->streaming = 0;
  snprintf(r->last_rv, sizeof(r->last_rv), "%s", rv);
  pthread_mutex_unlock(&r->mu);
  atomic_fetch_add(&r->streams, 1);
  atomic_fetch_add(&r->lists, 1);
  if (r->on_listed)
    r->on_listed(r->data);
  kcr_log(KCR_LOG_DEBUG, "reflector", "%s: streamed list complete at resourceVersion %s", r->name,
          rv);
  return 0;
}

/* queue_object queues an ADDED, MODIFIED or DELETED event's compact object
 * (stolen) at rv, after begin_event said whether the watch is streaming. */
static int queue_object(kcr__reflector_t *r, kcr_watch_event_type type, kcr__cobj_t *c,
                        int streaming, const char *rv) {
  kcr_error_t err;
  int rc;
  if (!shard_keep(r, c)) {
    kcr__cobj_unref(c);
    if (streaming || !*rv)
      return 0;
    pthread_mutex_lock(&r->mu); /* the watch got this far, though nothing was queued */
    snprintf(r->last_rv, sizeof(r->last_rv), "%s", rv);
    pthread_mutex_unlock(&r->mu);
    return 0;
  }
  if (streaming)
    return stream_object(r, type, c);
  kcr_error_clear(&err);
  if (type == KCR_WATCH_ADDED)
    rc = kcr_delta_fifo_add_new(r->fifo, kcr__cobj_slot(c), &err);
  else if (type == KCR_WATCH_MODIFIED)
    rc = kcr_delta_fifo_update_new(r->fifo, kcr__cobj_slot(c), &err);
  else
    rc = kcr_delta_fifo_delete_new(r->fifo, kcr__cobj_slot(c), &err);
  return end_event(r, type, rv, rc, &err);
}

/* object_event_type parses the event types that carry an object, 0 otherwise. */
static kcr_watch_event_type object_event_type(const char *type) {
  if (strcmp(type, "ADDED") == 0)
    return KCR_WATCH_ADDED;
  if (strcmp(type, "MODIFIED") == 0)
    return KCR_WATCH_MODIFIED;
  if (strcmp(type, "DELETED") == 0)
    return KCR_WATCH_DELETED;
  return 0;
}

/*
 * take_scanned queues the object the scanner or the transcoder left in
 * r->scratch (rc: its answer; type and meta: what it read) when it is an
 * ADDED, MODIFIED or DELETED event of a named object: 1 (taken). Anything
 * else is left to the decoder (0), as is an object that cannot be made
 * compact; out of memory fails the stream.
 */
static int take_scanned(kcr__reflector_t *r, int rc, const char *type,
                        const kcr__scan_meta_t *meta) {
  kcr_watch_event_type t = rc == 0 ? object_event_type(type) : 0;
  kcr__cobj_t *c;
  if (!t || !meta->name[0]) {
    trim_scratch(r);
    return rc == KCR_ENOMEM ? rc : 0;
  }
  rc = kcr__cobj_from_buf(&r->scratch, 0, meta, &c);
  trim_scratch(r);
  if (rc)
    return rc == KCR_ENOMEM ? rc : 0;
  atomic_fetch_add(&r->scanned, 1);
  rc = queue_object(r, t, c, begin_event(r, t, meta->rv), meta->rv);
  return rc ? rc : 1;
}

/*
 * on_watch_line is the decoder's line hook (with the default transform): an
 * ADDED, MODIFIED or DELETED line the scanner accepts, whose object has a name,
 * becomes a compact object with no tree built (1: taken). Every other line is
 * left to the decoder (0), which parses it and reports its errors as jansson
 * sees them; on_watch_event then gets it.
 */
static int on_watch_line(const char *line, size_t len, void *data) {
  kcr__reflector_t *r = data;
  kcr__scan_meta_t meta;
  char type[16];
  int rc;

  kcr_buf_reset(&r->scratch);
  rc = kcr__scan_event(line, len, type, sizeof(type), &r->scratch, &meta);
  return take_scanned(r, rc, type, &meta);
}

/*
 * on_watch_frame is on_watch_line for a protobuf stream: an ADDED, MODIFIED or
 * DELETED frame of a kind the transcoder knows becomes a compact object from
 * its JSON (util/pbscan.h), with no tree built. Every other frame is left to
 * the decoder, which transcodes and parses it and reports its errors.
 */
static int on_watch_frame(const char *frame, size_t len, void *data) {
  kcr__reflector_t *r = data;
  kcr__scan_meta_t meta;
  char type[16];
  int rc;

  kcr_buf_reset(&r->scratch);
  /* no message: a frame refused here goes to the decoder, which reports it */
  rc = kcr__pb_event((const unsigned char *)frame, len, type, sizeof(type), &r->scratch, &meta,
                     NULL);
  return take_scanned(r, rc, type, &meta);
}

/* on_watch_event handles the events the line hook left to the decoder: objects
 * under a custom transform or that the scanner refused, bookmarks and errors.
 * Reflector thread. */
static int on_watch_event(const kcr_watch_event *ev, void *data) {
  kcr__reflector_t *r = data;
  const char *v = kcr_meta_resource_version(ev->object);
  kcr_error_t err;
  kcr__cobj_t *c;
  char rv[KCR__REFLECTOR_RV_MAX];
  int rc, streaming;

  snprintf(rv, sizeof(rv), "%s", v ? v : ""); /* before anything takes the object */
  streaming = begin_event(r, ev->type, rv);
  switch (ev->type) {
  case KCR_WATCH_ADDED:
  case KCR_WATCH_MODIFIED:
  case KCR_WATCH_DELETED:
    if ((rc = restore_kind(r, ev->object)) != 0 ||
        (rc = r->transform(ev->object, r->transform_data)) != 0) {
      kcr_log(KCR_LOG_ERROR, "reflector", "%s: the transform refused a watch event: %s", r->name,
              kcr_strerror(rc));
      json_decref(ev->object);
      return rc;
    }
    if ((rc = to_compact(r, ev->object, &c)) != 0) {
      kcr_log(KCR_LOG_ERROR, "reflector", "%s: cannot queue a watch event: %s", r->name,
              kcr_strerror(rc));
      return rc;
    }
    return queue_object(r, ev->type, c, streaming, rv);
  case KCR_WATCH_BOOKMARK:
    rc = streaming ? stream_bookmark(r, ev->object, rv) : 0;
    json_decref(ev->object);
    if (streaming)
      return rc;
    kcr_error_clear(&err);
    return end_event(r, ev->type, rv, 0, &err);
  case KCR_WATCH_ERROR:
  default:
    pthread_mutex_lock(&r->mu);
    r->watch_err = *ev->error;
    r->watch_gone = kcr_error_is_gone(ev->error);
    pthread_mutex_unlock(&r->mu);
    json_decref(ev->object);
    return KCR_EAPI;
  }
}

typedef enum { NEXT_WATCH, NEXT_BACKOFF_WATCH, NEXT_RELIST } next_t;

/*
 * watch_once runs one watch to its end and says what to do next. With stream, the
 * watch first streams the current state (sendInitialEvents) in place of a list;
 * *streamed tells whether that initial phase completed.
 */
static next_t watch_once(kcr__reflector_t *r, int stream, int *streamed) {
  kcr_watch_options o;
  kcr_watch_t *w = NULL;
  kcr_error_t err;
  char rv[KCR__REFLECTOR_RV_MAX];
  uint64_t seed = kcr_rand_seed();
  long span = r->max_timeout_s - r->min_timeout_s;
  int code, gone, rc;

  pthread_mutex_lock(&r->mu);
  snprintf(rv, sizeof(rv), "%s", r->last_rv);
  r->watch_gone = 0;
  r->streaming = stream;
  kcr_error_clear(&r->watch_err);
  pthread_mutex_unlock(&r->mu);
  *streamed = 0;
  if (stream) {
    json_decref(r->stream_items);
    r->stream_items = json_array();
    r->stream_deleted = false;
    if (!r->stream_items)
      return NEXT_BACKOFF_WATCH;
  }

  memset(&o, 0, sizeof(o));
  o.label_selector = r->label_selector;
  o.field_selector = r->field_selector;
  o.shard_selector = sent_selector(r);
  o.resource_version = rv;
  o.allow_bookmarks = 1;
  o.idle_timeout_ns = r->idle_ns;
  o.accept = r->meta_wire ? KCR_ACCEPT_PARTIAL_METADATA : r->protobuf ? KCR__ACCEPT_PROTOBUF : NULL;
  if (stream) {
    o.send_initial_events = 1;
    o.resource_version_match = "NotOlderThan";
  }
  o.timeout_seconds = r->min_timeout_s + (span > 0 ? (long)(seed % (uint64_t)(span + 1)) : 0);
  kcr_error_clear(&err);
  r->meta_refused = 0;
  rc = kcr_client_watch(r->client, &r->resource, r->ns, &o, &w, &err);
  if (rc) {
    set_last_error(r, &err);
    kcr_log(KCR_LOG_WARN, "reflector", "%s: cannot start a watch: %s", r->name, err.message);
    return NEXT_BACKOFF_WATCH;
  }
  atomic_fetch_add(&r->watches, 1);
  pthread_mutex_lock(&r->mu);
  r->watch = w;
  if (r->stopping)
    kcr_watch_stop(w); /* kcr__reflector_stop ran before it could see the watch */
  pthread_mutex_unlock(&r->mu);
  kcr_error_clear(&err);
  if (r->scan_watch) {
    kcr__watch_set_line_fn(w, on_watch_line, r);
    kcr__watch_set_frame_fn(w, on_watch_frame, r);
  }
  code = kcr_watch_run(w, on_watch_event, r, &err); /* decodes here, on this thread */
  pthread_mutex_lock(&r->mu);
  r->watch = NULL;
  pthread_mutex_unlock(&r->mu);
  kcr_watch_destroy(w);

  json_decref(r->stream_items);
  r->stream_items = NULL;
  pthread_mutex_lock(&r->mu);
  *streamed = stream && !r->streaming;
  r->streaming = 0;
  if (code && r->watch_err.code == KCR_OK)
    r->watch_err = err;
  gone = r->watch_gone || (code == KCR_EAPI && kcr_error_is_gone(&r->watch_err));
  err = r->watch_err;
  if (code)
    r->last_error = err;
  pthread_mutex_unlock(&r->mu);

  if (code == 0)
    return NEXT_WATCH;
  atomic_fetch_add(&r->watch_errors, 1);
  if (code == KCR_ECANCELED)
    return NEXT_WATCH; /* stopping: the caller sees it */
  if (refused_metadata(r, &err, "watch")) {
    r->meta_refused = 1;
    return NEXT_WATCH; /* at once, from the same version, for whole objects */
  }
  if (gone) {
    kcr_log(KCR_LOG_INFO, "reflector", "%s: watch from resourceVersion %s expired: %s", r->name, rv,
            err.message);
    count_relist(r, KCR_INFORMER_RELIST_GONE);
    return NEXT_RELIST;
  }
  kcr_log(KCR_LOG_WARN, "reflector", "%s: watch ended: %s", r->name, err.message);
  if (code == KCR_ECONN || code == KCR_ETIMEDOUT || code == KCR_ETLS ||
      kcr_error_is_too_many_requests(&err) || (code == KCR_EAPI && err.http_status >= 500))
    return NEXT_BACKOFF_WATCH;
  count_relist(r, relist_reason(code, &err));
  return NEXT_RELIST;
}

/* take_shard_change makes a shard set by kcr__reflector_set_shard the one
 * lists and watches send; 1 when there was one (the caller relists).
 * Reflector thread. */
static int take_shard_change(kcr__reflector_t *r) {
  kcr_shard_set_t *set;
  char *sel;
  pthread_mutex_lock(&r->mu);
  if (!r->shard_change) {
    pthread_mutex_unlock(&r->mu);
    return 0;
  }
  set = r->next_shard;
  sel = r->next_selector;
  r->next_shard = NULL;
  r->next_selector = NULL;
  r->shard_change = 0;
  pthread_mutex_unlock(&r->mu);
  kcr_shard_set_destroy(r->own_shard);
  kcr_free(r->own_selector);
  r->own_shard = set;
  r->own_selector = sel;
  r->shard = set;
  r->shard_selector = sel;
  kcr_log(KCR_LOG_INFO, "reflector", "%s: shard moved to %.4f of the space: listing again", r->name,
          kcr_shard_set_share(set));
  count_relist(r, KCR_INFORMER_RELIST_SHARD);
  return 1;
}

void kcr__reflector_set_shard(kcr__reflector_t *r, kcr_shard_set_t *set, char *selector) {
  kcr_shard_set_t *old_set;
  char *old_sel;
  pthread_mutex_lock(&r->mu);
  old_set = r->next_shard;
  old_sel = r->next_selector;
  r->next_shard = set;
  r->next_selector = selector;
  r->shard_change = 1;
  pthread_cond_broadcast(&r->cond);
  kcr_watch_stop(r->watch); /* under mu, as stop does: the reflector relists at once */
  pthread_mutex_unlock(&r->mu);
  kcr_shard_set_destroy(old_set);
  kcr_free(old_sel);
}

/* reflector_main is the reflector thread: list (or stream), then watch, until stopped. */
static void *reflector_main(void *arg) {
  kcr__reflector_t *r = arg;
  kcr_backoff_t backoff;
  int need_list = 1;

  kcr_backoff_init(&backoff, KCR_BACKOFF_REFLECTOR, r->clock, 0);
  while (!is_stopping(r)) {
    next_t next;
    int streamed = 0;
    if (take_shard_change(r))
      need_list = 1;
    if (need_list && r->stream_enabled) {
      /* The streaming list: one watch streams the state, then goes on watching. */
      next = watch_once(r, 1, &streamed);
      if (is_stopping(r))
        break;
      if (streamed) {
        need_list = 0;
      } else if (r->meta_refused) {
        continue; /* refused for the Accept header, not the streaming list */
      } else {
        kcr_error_t last;
        pthread_mutex_lock(&r->mu);
        last = r->last_error;
        pthread_mutex_unlock(&r->mu);
        /* A server that refuses it (a 4xx other than 410/429: WatchList off, an old
         * server) never will: list from now on, as client-go falls back. */
        if (last.code == KCR_EAPI && last.http_status >= 400 && last.http_status < 500 &&
            last.http_status != 410 && last.http_status != 429) {
          kcr_log(KCR_LOG_INFO, "reflector", "%s: streaming list refused (%s); listing instead",
                  r->name, last.message);
          r->stream_enabled = 0;
          continue;
        }
        if (next != NEXT_RELIST) /* watch_once counted that one */
          count_relist(r, relist_reason(last.code, &last));
        if (sleep_or_stop(r, kcr_backoff_next(&backoff)))
          break;
        continue;
      }
      if (next == NEXT_WATCH)
        continue;
      if (next == NEXT_RELIST)
        need_list = 1;
      if (sleep_or_stop(r, kcr_backoff_next(&backoff)))
        break;
      continue;
    }
    if (need_list) {
      kcr_error_t err;
      kcr_error_clear(&err);
      if (do_list(r, &err) != 0) {
        if (is_stopping(r))
          break;
        set_last_error(r, &err);
        kcr_log(KCR_LOG_WARN, "reflector", "%s: list failed: %s", r->name, err.message);
        count_relist(r, relist_reason(err.code, &err));
        if (sleep_or_stop(r, kcr_backoff_next(&backoff)))
          break;
        continue;
      }
      need_list = 0;
    }
    next = watch_once(r, 0, &streamed);
    if (is_stopping(r))
      break;
    if (next == NEXT_WATCH)
      continue;
    if (next == NEXT_RELIST)
      need_list = 1;
    if (sleep_or_stop(r, kcr_backoff_next(&backoff)))
      break;
  }
  return NULL;
}

/* ---- the owner's side ---- */

int kcr__reflector_init(kcr__reflector_t *r) {
  pthread_mutex_init(&r->mu, NULL);
  kcr_clock_cond_init(&r->cond);
  kcr_buf_init(&r->scratch, KCR_STORE_OBJECT_MAX);
  return kcr_cancel_create(&r->cancel, NULL);
}

int kcr__reflector_start(kcr__reflector_t *r) {
  atomic_store(&r->last_event_ns, kcr_clock_now(r->clock));
  r->meta_wire = r->metadata_only;
  if (r->resource.group && *r->resource.group)
    snprintf(r->api_version, sizeof(r->api_version), "%s/%s", r->resource.group,
             r->resource.version);
  else
    snprintf(r->api_version, sizeof(r->api_version), "%s", r->resource.version);
  if (pthread_create(&r->thread, NULL, reflector_main, r) != 0)
    return KCR_ESYS;
  r->started = 1;
  return 0;
}

void kcr__reflector_stop(kcr__reflector_t *r) {
  if (!r->started)
    return;
  r->started = 0;
  pthread_mutex_lock(&r->mu);
  r->stopping = 1;
  pthread_cond_broadcast(&r->cond);
  kcr_watch_stop(r->watch); /* under mu: the reflector destroys it only after clearing r->watch */
  pthread_mutex_unlock(&r->mu);
  kcr_cancel_fire(r->cancel);
  pthread_join(r->thread, NULL);
}

void kcr__reflector_destroy(kcr__reflector_t *r) {
  json_decref(r->stream_items);
  kcr_shard_set_destroy(r->own_shard);
  kcr_free(r->own_selector);
  kcr_shard_set_destroy(r->next_shard);
  kcr_free(r->next_selector);
  kcr_buf_free(&r->scratch);
  kcr_cancel_destroy(r->cancel);
  pthread_cond_destroy(&r->cond);
  pthread_mutex_destroy(&r->mu);
}

uint64_t kcr__reflector_last_rv(kcr__reflector_t *r) {
  uint64_t rv;
  pthread_mutex_lock(&r->mu);
  rv = kcr__reflector_parse_rv(r->last_rv);
  pthread_mutex_unlock(&r->mu);
  return rv;
}

void kcr__reflector_last_error(kcr__reflector_t *r, kcr_error_t *out) {
  pthread_mutex_lock(&r->mu);
  *out = r->last_error;
  pthread_mutex_unlock(&r->mu);
}
