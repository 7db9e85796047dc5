/* SPDX-License-Identifier: MIT */
/*
 * events.c: the event recorder (kcr/events.h).
 *
 * DESIGN. Recording and sending are split by one mutex. kcr_event_record builds
 * the correlation key, looks it
 * up in a hash map of entries (util/hmap.h, randomly seeded: the keys carry
 * object names), and either counts the call
 * into the entry's series or, after the per-object token bucket (client-go's
 * spam filter) allows it, adds a new entry; either way the entry joins the
 * pending FIFO if it is not there yet. Nothing is allocated for a call that
 * joins a series, so a hot loop costs a hash lookup per call.
 *
 * The sender thread takes due entries off the FIFO: a new entry is POSTed as an
 * events.k8s.io/v1 Event (with its series if it already has one), a series
 * whose count moved is PATCHed (merge patch of series.count and
 * lastObservedTime) once its patch interval has passed, or at once while a
 * flush is asked for. Of the entries due, the one queued first goes first. So
 * that picking it does not walk every series waiting for its interval (about
 * one per object at scale), each queued entry is also filed in one of two
 * binary min-heaps (util/heap.h): "ready" (due now: not created yet, or its interval has
 * passed), ordered by its place in the FIFO, and "waiting" (created), ordered
 * by when its interval ends. The sender moves the waiting entries whose time
 * has come to ready, then takes ready's first: O(log N) a send, amortised.
 * While a flush or a stop is asked for every entry is due, and the FIFO's head
 * goes first. An entry whose created flag changes while it is queued (recorded
 * again during its own write) is filed again. The heaps' arrays hold a slot
 * for every entry in the table, reserved when the entry is made, so queueing
 * never allocates. The request body is built under the lock and sent without
 * it; the entry is marked busy meanwhile so eviction leaves it alone. A PATCH
 * answered 404 (the Event expired or was deleted) re-creates it. Entries whose
 * series window has passed are evicted lazily when the table is full. Waits
 * use kcr_clock_timedwait, so tests drive windows with a fake clock.
 *
 * The key is client-go's tools/events getKey: the reporting controller and
 * instance, the regarding object (apiVersion, kind, namespace, name, uid,
 * resourceVersion), type, reason and action; not the note. So "Created
 * Deployment x" and "Created Service x" in one pass (same App, same
 * resourceVersion) are one Event whose series counts 2: one POST and at most
 * one series PATCH instead of two POSTs, as controller-runtime's recorder
 * writes. The Event keeps the note it was created with, as client-go's does.
 * With a fence (a leader's write deadline), the sender asks it before each
 * write and drops the write while it says no: a paused leader that lost its
 * Lease sends no Event after its deadline, as its object writes do not.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kcr/apierror.h"
#include "kcr/events.h"
#include "kcr/log.h"
#include "kcr/rand.h"
#include "kcr/time.h"
#include "manager/events_internal.h"
#include "util/alloc.h"
#include "util/heap.h"
#include "util/hmap.h"
#include "util/list.h"

#define MAX_ENTRIES 4096
#define MAX_SPAM 4096

static const kcr_gvr events_gvr = {"events.k8s.io", "v1", "events"};

typedef struct entry {
  char *key;                        /* immutable; the entries map's key */
  kcr__list_node_t qlink;           /* protected by mu: the pending FIFO */
  uint64_t seq;                     /* protected by mu: its place in the FIFO */
  kcr__heap_t *heap;                /* protected by mu: the heap it is filed in, or NULL */
  kcr__heap_node_t hnode;           /* protected by mu: its node there (key: seq or due time) */
  int queued, busy;                 /* protected by mu */
  int created;                      /* protected by mu: POSTed successfully */
  long long count;                  /* protected by mu */
  long long sent_count;             /* protected by mu: count the server has */
  int64_t last_mono;                /* protected by mu */
  int64_t last_patch;               /* protected by mu */
  kcr_time_t first_wall, last_wall; /* protected by mu */
  char name[300];                   /* the Event's metadata.name */
  char ns[KCR_EVENT_FIELD_MAX * 2];
  json_t *regarding; /* immutable after insert */
  char type[16], reason[KCR_EVENT_FIELD_MAX], action[KCR_EVENT_FIELD_MAX];
  char note[KCR_EVENT_NOTE_MAX + 1];
} entry_t;

typedef struct spam {
  char *key; /* immutable; the spam map's key */
  double tokens;
  int64_t last;
} spam_t;

struct kcr_event_recorder {
  kcr_client_t *client;
  char *controller, *instance;
  kcr_clock_t *clock;
  int burst;
  int64_t refill_ns, window_ns, patch_ns;
  int max_queue;
  int64_t (*fence)(void *data);
  void *fence_data;

  pthread_mutex_t mu;
  pthread_cond_t cond;            /* wakes the sender */
  pthread_cond_t done_cond;       /* wakes flushers */
  kcr__hmap_t entries;            /* key -> entry_t; protected by mu */
  kcr__hmap_t spam;               /* object key -> spam_t; protected by mu */
  kcr__list_t pending;            /* protected by mu: the FIFO of queued entries */
  uint64_t qseq;                  /* protected by mu: the next entry_t.seq */
  kcr__heap_t ready;              /* protected by mu: queued entries due now, by seq */
  kcr__heap_t waiting;            /* protected by mu: queued created ones, by due time */
  int nqueued;                    /* protected by mu */
  int flushing;                   /* protected by mu */
  int stop;                       /* protected by mu */
  kcr_event_recorder_stats stats; /* protected by mu */
  pthread_t thread;
  bool has_thread; /* immutable: false for a sink recorder */

  /* immutable; set: every valid call goes to sink, nothing is sent (testing kit) */
  kcr__event_sink_fn sink;
  void (*sink_free)(void *data);
  void *sink_data;
};

static void entry_free(entry_t *e) {
  if (!e)
    return;
  kcr__free(e->key);
  if (e->regarding)
    json_decref(e->regarding);
  kcr__free(e);
}

/*
 * The two heaps are util/heap.h's, with a slot for every entry in the table
 * reserved when the entry is made, so filing never fails. An entry records
 * which heap it is in, so that it can be taken out from anywhere.
 */
static void heap_push(kcr__heap_t *h, entry_t *e, int64_t key) {
  e->heap = h;
  kcr__heap_push(h, &e->hnode, key, e->seq);
}

static void heap_remove(kcr__heap_t *h, entry_t *e) {
  assert(e->heap == h);
  e->heap = NULL;
  kcr__heap_remove(h, &e->hnode);
}

static entry_t *heap_top(const kcr__heap_t *h) {
  kcr__heap_node_t *n = kcr__heap_top(h);
  return n ? KCR__CONTAINER_OF(n, entry_t, hnode) : NULL;
}

/* heap_clear empties h (its entries stay as they are, filed nowhere). */
static void heap_clear(kcr__heap_t *h) {
  for (size_t i = 0; i < h->len; i++)
    KCR__CONTAINER_OF(h->v[i], entry_t, hnode)->heap = NULL;
  kcr__heap_clear(h);
}

/* file_entry files a queued entry by when it is due: a new one now, a created one
 * when its patch interval has passed since its last write. */
static void file_entry(kcr_event_recorder_t *r, entry_t *e) {
  int64_t due;
  if (!e->created) {
    heap_push(&r->ready, e, (int64_t)e->seq);
    return;
  }
  due = e->last_patch > INT64_MAX - r->patch_ns ? INT64_MAX : e->last_patch + r->patch_ns;
  heap_push(&r->waiting, e, due);
}

/* refile files e again after its created flag changed, if it is filed. */
static void refile(kcr_event_recorder_t *r, entry_t *e) {
  if (!e->heap)
    return;
  heap_remove(e->heap, e);
  file_entry(r, e);
}

static void enqueue(kcr_event_recorder_t *r, entry_t *e) {
  if (e->queued)
    return;
  e->queued = 1;
  e->seq = r->qseq++;
  kcr__list_push_back(&r->pending, &e->qlink);
  file_entry(r, e);
  r->nqueued++;
  pthread_cond_signal(&r->cond);
}

/* dequeue takes a queued entry out of the FIFO and its heap. */
static void dequeue(kcr_event_recorder_t *r, entry_t *e) {
  kcr__list_remove(&r->pending, &e->qlink);
  if (e->heap)
    heap_remove(e->heap, e);
  e->queued = 0;
  r->nqueued--;
}

/* evict_expired drops entries whose window passed (not queued nor busy). */
static void evict_expired(kcr_event_recorder_t *r, int64_t now) {
  size_t i = 0;
  while (i < r->entries.cap) {
    entry_t *e = r->entries.slots[i].val;
    if (r->entries.slots[i].key && !e->queued && !e->busy && now - e->last_mono > r->window_ns) {
      /* Backward-shift deletion may move another entry into slot i: look again. */
      (void)kcr__hmap_del(&r->entries, e->key);
      entry_free(e);
      continue;
    }
    i++;
  }
}

static void spam_free_all(kcr_event_recorder_t *r) {
  KCR__HMAP_FOREACH(&r->spam, sl) {
    spam_t *x = sl->val;
    kcr__free(x->key);
    kcr__free(x);
  }
  kcr__hmap_free(&r->spam);
}

/* spam_allow: client-go's EventSourceObjectSpamFilter, a token bucket per object. */
static int spam_allow(kcr_event_recorder_t *r, const char *objkey, int64_t now) {
  spam_t *s = kcr__hmap_get(&r->spam, objkey);
  if (!s) {
    if (r->spam.len >= MAX_SPAM)
      spam_free_all(r); /* full: forget every bucket (they refill in refill_ns anyway) */
    s = kcr__calloc(1, sizeof(*s));
    if (!s || !(s->key = kcr__strdup(objkey)) || kcr__hmap_put(&r->spam, s->key, s)) {
      if (s)
        kcr__free(s->key);
      kcr__free(s);
      return 0;
    }
    s->tokens = r->burst;
    s->last = now;
  }
  s->tokens += (double)(now - s->last) / (double)r->refill_ns;
  if (s->tokens > r->burst)
    s->tokens = r->burst;
  s->last = now;
  if (s->tokens < 1.0)
    return 0;
  s->tokens -= 1.0;
  return 1;
}

static const char *nz(const char *s) {
  return s ? s : "";
}

static void cut(char *dst, size_t size, const char *src) {
  snprintf(dst, size, "%s", nz(src));
}

static int record_note(kcr_event_recorder_t *r, const kcr_object_ref *ref, const char *type,
                       const char *reason, const char *action, const char *note) {
  char objkey[1024], key[2560];
  entry_t *e;
  int64_t now;
  kcr_time_t wall;

  if (!ref || !ref->name || !*ref->name || !ref->kind || !type ||
      (strcmp(type, KCR_EVENT_NORMAL) != 0 && strcmp(type, KCR_EVENT_WARNING) != 0) || !reason ||
      !*reason || !action || !*action)
    return KCR_EINVAL;
  if (r->sink) {
    pthread_mutex_lock(&r->mu);
    r->stats.recorded++;
    pthread_mutex_unlock(&r->mu);
    return r->sink(r->sink_data, ref, type, reason, action, note);
  }
  snprintf(objkey, sizeof(objkey), "%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", r->controller,
           nz(ref->api_version), ref->kind, nz(ref->namespace_), ref->name, nz(ref->uid));
  /* client-go's getKey: not the note (see DESIGN). */
  snprintf(key, sizeof(key), "%s\x1f%s\x1f%s\x1f%s\x1f%s", objkey, nz(ref->resource_version), type,
           reason, action);

  pthread_mutex_lock(&r->mu);
  now = kcr_clock_now(r->clock);
  wall = kcr_clock_wall(r->clock);
  e = kcr__hmap_get(&r->entries, key);
  if (e && (now - e->last_mono <= r->window_ns || e->busy || e->queued)) {
    e->count++;
    e->last_mono = now;
    e->last_wall = wall;
    r->stats.recorded++;
    r->stats.aggregated++;
    enqueue(r, e);
    pthread_mutex_unlock(&r->mu);
    return 0;
  }
  if (e) { /* the series ended: unlink it, a new Event starts */
    (void)kcr__hmap_del(&r->entries, e->key);
    entry_free(e);
  }
  if (r->entries.len >= MAX_ENTRIES)
    evict_expired(r, now);
  if (r->entries.len >= MAX_ENTRIES || r->nqueued >= r->max_queue || !spam_allow(r, objkey, now)) {
    r->stats.dropped++;
    pthread_mutex_unlock(&r->mu);
    return KCR_EAGAIN;
  }
  e = kcr__calloc(1, sizeof(*e));
  if (e)
    kcr__heap_node_init(&e->hnode);
  /* a slot in each heap for every entry in the table: enqueue cannot fail */
  if (!e || kcr__heap_reserve(&r->ready, r->entries.len + 1) ||
      kcr__heap_reserve(&r->waiting, r->entries.len + 1) || !(e->key = kcr__strdup(key)) ||
      !(e->regarding =
            json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "apiVersion", nz(ref->api_version), "kind",
                      ref->kind, "namespace", nz(ref->namespace_), "name", ref->name, "uid",
                      nz(ref->uid), "resourceVersion", nz(ref->resource_version))) ||
      kcr__hmap_put(&r->entries, e->key, e)) {
    entry_free(e);
    r->stats.dropped++;
    pthread_mutex_unlock(&r->mu);
    return KCR_ENOMEM;
  }
  e->count = 1;
  e->last_mono = now;
  e->first_wall = e->last_wall = wall;
  cut(e->type, sizeof(e->type), type);
  cut(e->reason, sizeof(e->reason), reason);
  cut(e->action, sizeof(e->action), action);
  cut(e->note, sizeof(e->note), note);
  cut(e->ns, sizeof(e->ns), ref->namespace_ && *ref->namespace_ ? ref->namespace_ : "default");
  /* client-go names an Event "<object>.<unix nanoseconds in hex>" */
  snprintf(e->name, sizeof(e->name), "%.200s.%" PRIx64, ref->name,
           (uint64_t)wall.sec * 1000000000u + (uint64_t)wall.nsec);
  r->stats.recorded++;
  enqueue(r, e);
  pthread_mutex_unlock(&r->mu);
  return 0;
}

int kcr_event_record(kcr_event_recorder_t *r, const kcr_object_ref *ref, const char *type,
                     const char *reason, const char *action, const char *note_fmt, ...) {
  char note[KCR_EVENT_NOTE_MAX + 1];
  va_list ap;
  va_start(ap, note_fmt);
  vsnprintf(note, sizeof(note), note_fmt ? note_fmt : "", ap);
  va_end(ap);
  return record_note(r, ref, type, reason, action, note);
}

int kcr_event_record_object(kcr_event_recorder_t *r, json_t *obj, const char *type,
                            const char *reason, const char *action, const char *note_fmt, ...) {
  json_t *md = json_object_get(obj, "metadata");
  kcr_object_ref ref;
  char note[KCR_EVENT_NOTE_MAX + 1];
  va_list ap;
  ref.api_version = json_string_value(json_object_get(obj, "apiVersion"));
  ref.kind = json_string_value(json_object_get(obj, "kind"));
  ref.namespace_ = json_string_value(json_object_get(md, "namespace"));
  ref.name = json_string_value(json_object_get(md, "name"));
  ref.uid = json_string_value(json_object_get(md, "uid"));
  ref.resource_version = json_string_value(json_object_get(md, "resourceVersion"));
  va_start(ap, note_fmt);
  vsnprintf(note, sizeof(note), note_fmt ? note_fmt : "", ap);
  va_end(ap);
  return record_note(r, &ref, type, reason, action, note);
}

int kcr_event_record_meta(kcr_event_recorder_t *r, const kcr_gvk *gvk,
                          const kcr_meta_v1_object_meta_t *meta, const char *type,
                          const char *reason, const char *action, const char *note_fmt, ...) {
  char av[KCR_GVK_GROUP_MAX + 256];
  char note[KCR_EVENT_NOTE_MAX + 1];
  kcr_object_ref ref;
  va_list ap;
  if (!gvk || !meta || kcr_gvk_api_version(gvk, av, sizeof(av)) < 0)
    return KCR_EINVAL;
  ref.api_version = av;
  ref.kind = gvk->kind;
  ref.namespace_ = meta->namespace;
  ref.name = meta->name;
  ref.uid = meta->uid;
  ref.resource_version = meta->resource_version;
  va_start(ap, note_fmt);
  vsnprintf(note, sizeof(note), note_fmt ? note_fmt : "", ap);
  va_end(ap);
  return record_note(r, &ref, type, reason, action, note);
}

/* ---- the sender ---- */

static json_t *series_json(const entry_t *e) {
  char t[KCR_TIME_BUFSIZE];
  if (kcr_time_format(e->last_wall, KCR_TIME_MICRO, t, sizeof(t)) < 0)
    t[0] = '\0';
  return json_pack("{s:I, s:s}", "count", (json_int_t)e->count, "lastObservedTime", t);
}

/* build_event: the full Event for a POST. Called with mu held. */
static json_t *build_event(kcr_event_recorder_t *r, const entry_t *e) {
  char t[KCR_TIME_BUFSIZE];
  json_t *ev;
  if (kcr_time_format(e->first_wall, KCR_TIME_MICRO, t, sizeof(t)) < 0)
    t[0] = '\0';
  ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:O}", "apiVersion",
                 "events.k8s.io/v1", "kind", "Event", "metadata", "name", e->name, "namespace",
                 e->ns, "eventTime", t, "reportingController", r->controller, "reportingInstance",
                 r->instance, "action", e->action, "reason", e->reason, "type", e->type, "note",
                 e->note, "regarding", e->regarding);
  if (ev && e->count > 1)
    json_object_set_new(ev, "series", series_json(e));
  return ev;
}

/* take_due takes the first queued entry (in FIFO order) that is due, or returns
 * NULL; then *wake gets the earliest time a queued series patch becomes due
 * (INT64_MAX: none). While flushing or stopping every entry is due. Called with
 * mu held. */
static entry_t *take_due(kcr_event_recorder_t *r, int64_t now, int64_t *wake) {
  entry_t *e;
  *wake = INT64_MAX;
  if (r->flushing || r->stop) {
    e = r->pending.first ? KCR__CONTAINER_OF(r->pending.first, entry_t, qlink) : NULL;
  } else {
    while ((e = heap_top(&r->waiting)) && e->hnode.key <= now) {
      heap_remove(&r->waiting, e);
      heap_push(&r->ready, e, (int64_t)e->seq);
    }
    e = heap_top(&r->ready);
    if (!e && heap_top(&r->waiting))
      *wake = heap_top(&r->waiting)->hnode.key;
  }
  if (e)
    dequeue(r, e);
  return e;
}

/* jfree releases what json_dumps returned, with jansson's allocator (which
 * kcr_set_alloc_funcs may have redirected). */
static void jfree(void *p) {
  json_free_t f = NULL;
  json_get_alloc_funcs(NULL, &f);
  if (p && f)
    f(p);
}

static void send_entry(kcr_event_recorder_t *r, entry_t *e) {
  kcr_error_t err = {0};
  kcr_request_options ro;
  json_t *body = NULL;
  char *patch = NULL;
  int create = !e->created, rc;
  long long count = e->count;
  int64_t left = r->fence ? r->fence(r->fence_data) : INT64_MAX;

  if (!create && e->count == e->sent_count)
    return; /* nothing new */
  if (left <= 0) {
    /* Not allowed to write: drop this write; a later record sends it again. */
    e->sent_count = e->count;
    r->stats.fenced++;
    return;
  }
  if (create) {
    body = build_event(r, e);
  } else {
    json_t *p = json_pack("{s:o}", "series", series_json(e));
    patch = p ? json_dumps(p, JSON_COMPACT) : NULL;
    if (p)
      json_decref(p);
  }
  e->busy = 1;
  e->last_patch = kcr_clock_now(r->clock);
  pthread_mutex_unlock(&r->mu);

  memset(&ro, 0, sizeof(ro));
  ro.grace_period_seconds = -1;
  ro.timeout_ns = 30 * KCR_NSEC_PER_SEC;
  if (left < ro.timeout_ns)
    ro.timeout_ns = left > KCR_NSEC_PER_MSEC ? left : KCR_NSEC_PER_MSEC;
  if (create)
    rc = body ? kcr_client_create_object(r->client, &events_gvr, e->ns, body, &ro, NULL, &err)
              : kcr_error_set(&err, KCR_ENOMEM, "out of memory");
  else
    rc = patch ? kcr_client_patch(r->client, &events_gvr, e->ns, e->name, KCR_PATCH_MERGE, patch,
                                  strlen(patch), &ro, NULL, &err)
               : kcr_error_set(&err, KCR_ENOMEM, "out of memory");
  if (rc != 0)
    kcr_log(KCR_LOG_WARN, "events", "%s event %s/%s (%s): %s", create ? "creating" : "patching",
            e->ns, e->name, e->reason, err.message);
  if (body)
    json_decref(body);
  jfree(patch);

  pthread_mutex_lock(&r->mu);
  e->busy = 0;
  if (rc == 0) {
    if (!e->created) {
      e->created = 1;
      refile(r, e); /* recorded again while being POSTed: now due after the interval */
    }
    e->sent_count = count;
    if (create)
      r->stats.created++;
    else
      r->stats.patched++;
    if (e->count != e->sent_count)
      enqueue(r, e);
  } else {
    r->stats.failed++;
    if (!create && kcr_error_is_not_found(&err)) {
      e->created = 0; /* expired or deleted: create it again, series and all */
      refile(r, e);
      enqueue(r, e);
    }
  }
}

static void *sender(void *arg) {
  kcr_event_recorder_t *r = arg;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    int64_t wake, now = kcr_clock_now(r->clock);
    entry_t *e = take_due(r, now, &wake);
    if (e) {
      send_entry(r, e);
      pthread_cond_broadcast(&r->done_cond);
      continue;
    }
    if (r->flushing)
      pthread_cond_broadcast(&r->done_cond);
    if (r->stop)
      break;
    if (wake == INT64_MAX)
      wake = now + 10 * KCR_NSEC_PER_SEC;
    kcr_clock_timedwait(r->clock, &r->cond, &r->mu, wake);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

int kcr_event_recorder_create(const kcr_event_recorder_options *o, kcr_event_recorder_t **out,
                              kcr_error_t *err) {
  kcr_event_recorder_t *r;
  char host[256], inst[512];
  *out = NULL;
  if (!o || !o->client || !o->reporting_controller || !*o->reporting_controller)
    return kcr_error_set(err, KCR_EINVAL, "events: client and reporting controller are required");
  r = kcr__calloc(1, sizeof(*r));
  if (!r)
    return kcr_error_set(err, KCR_ENOMEM, "events: out of memory");
  kcr__hmap_init(&r->entries, kcr_rand_seed());
  kcr__hmap_init(&r->spam, kcr_rand_seed());
  if (o->reporting_instance && *o->reporting_instance) {
    snprintf(inst, sizeof(inst), "%s", o->reporting_instance);
  } else {
    if (gethostname(host, sizeof(host)) != 0)
      snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    snprintf(inst, sizeof(inst), "%s-%s", o->reporting_controller, host);
  }
  inst[KCR_EVENT_FIELD_MAX - 1] = '\0';
  r->controller = kcr__strndup(o->reporting_controller,
                               strnlen(o->reporting_controller, KCR_EVENT_FIELD_MAX - 1));
  r->instance = kcr__strdup(inst);
  if (!r->controller || !r->instance) {
    kcr__free(r->controller);
    kcr__free(r->instance);
    kcr__free(r);
    return kcr_error_set(err, KCR_ENOMEM, "events: out of memory");
  }
  r->client = o->client;
  r->clock = o->clock ? o->clock : kcr_clock_system();
  r->burst = o->burst > 0 ? o->burst : 25;
  r->refill_ns = o->refill_period_ns > 0 ? o->refill_period_ns : 300 * KCR_NSEC_PER_SEC;
  r->window_ns = o->series_window_ns > 0 ? o->series_window_ns : 360 * KCR_NSEC_PER_SEC;
  r->patch_ns = o->patch_interval_ns > 0 ? o->patch_interval_ns : 30 * KCR_NSEC_PER_SEC;
  r->max_queue = o->max_queue > 0 ? o->max_queue : 1000;
  r->fence = o->fence;
  r->fence_data = o->fence_data;
  pthread_mutex_init(&r->mu, NULL);
  kcr_clock_cond_init(&r->cond);
  pthread_cond_init(&r->done_cond, NULL);
  if (pthread_create(&r->thread, NULL, sender, r) != 0) {
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cond);
    pthread_cond_destroy(&r->done_cond);
    kcr__free(r->controller);
    kcr__free(r->instance);
    kcr__free(r);
    return kcr_error_set(err, KCR_ESYS, "events: cannot start the sender thread");
  }
  r->has_thread = true;
  *out = r;
  return 0;
}

int kcr__event_recorder_create_sink(kcr__event_sink_fn sink, void (*free_fn)(void *data),
                                    void *data, kcr_event_recorder_t **out) {
  kcr_event_recorder_t *r;
  *out = NULL;
  r = kcr__calloc(1, sizeof(*r));
  if (!r)
    return KCR_ENOMEM;
  r->controller = kcr__strdup("test");
  r->instance = kcr__strdup("test");
  if (!r->controller || !r->instance || pthread_mutex_init(&r->mu, NULL) != 0) {
    kcr__free(r->controller);
    kcr__free(r->instance);
    kcr__free(r);
    return KCR_ENOMEM;
  }
  kcr_clock_cond_init(&r->cond);
  pthread_cond_init(&r->done_cond, NULL);
  r->clock = kcr_clock_system();
  r->sink = sink;
  r->sink_free = free_fn;
  r->sink_data = data;
  *out = r;
  return 0;
}

void *kcr__event_recorder_sink_data(kcr_event_recorder_t *r, kcr__event_sink_fn sink) {
  return r && r->sink == sink ? r->sink_data : NULL;
}

static int busy_any(kcr_event_recorder_t *r) {
  KCR__HMAP_FOREACH(&r->entries, sl) {
    if (((entry_t *)sl->val)->busy)
      return 1;
  }
  return 0;
}

int kcr_event_recorder_flush(kcr_event_recorder_t *r, int64_t timeout_ns) {
  struct timespec ts;
  int rc = 0;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)(timeout_ns / KCR_NSEC_PER_SEC);
  ts.tv_nsec += (long)(timeout_ns % KCR_NSEC_PER_SEC);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&r->mu);
  r->flushing++;
  pthread_cond_signal(&r->cond);
  while (!kcr__list_empty(&r->pending) || busy_any(r)) {
    if (pthread_cond_timedwait(&r->done_cond, &r->mu, &ts) == ETIMEDOUT) {
      rc = (!kcr__list_empty(&r->pending) || busy_any(r)) ? KCR_ETIMEDOUT : 0;
      break;
    }
  }
  r->flushing--;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

void kcr_event_recorder_get_stats(kcr_event_recorder_t *r, kcr_event_recorder_stats *out) {
  pthread_mutex_lock(&r->mu);
  *out = r->stats;
  pthread_mutex_unlock(&r->mu);
}

void kcr_event_recorder_destroy(kcr_event_recorder_t *r) {
  if (!r)
    return;
  kcr_event_recorder_flush(r, 5 * KCR_NSEC_PER_SEC);
  pthread_mutex_lock(&r->mu);
  r->stop = 1;
  r->pending = (kcr__list_t){0}; /* what is left after the flush is dropped */
  heap_clear(&r->ready);
  heap_clear(&r->waiting);
  pthread_cond_signal(&r->cond);
  pthread_mutex_unlock(&r->mu);
  if (r->has_thread)
    pthread_join(r->thread, NULL);
  if (r->sink_free)
    r->sink_free(r->sink_data);
  KCR__HMAP_FOREACH(&r->entries, sl) {
    entry_free(sl->val);
  }
  kcr__hmap_free(&r->entries);
  kcr__heap_free(&r->ready);
  kcr__heap_free(&r->waiting);
  spam_free_all(r);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cond);
  pthread_cond_destroy(&r->done_cond);
  kcr__free(r->controller);
  kcr__free(r->instance);
  kcr__free(r);
}
