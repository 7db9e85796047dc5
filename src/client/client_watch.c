/* SPDX-License-Identifier: MIT */
/*
 * client_watch.c: a watch is a long-lived GET whose body is a stream of events.
 *
 * Who does what: the loop thread only moves bytes. Its write callback copies each
 * piece libcurl delivers into the watch's inbox (a list of chunks under the
 * watch's mutex) and wakes the consumer; it never parses, never calls user code
 * and never waits for anyone. The consumer, the thread in kcr_watch_run (a
 * reflector, a test), takes the chunks, feeds them to a kcr_watch_decoder and so
 * runs the event callback, then, once the transfer is done, turns how it ended
 * (libcurl's result, the HTTP status, an error body) into the end code. A slow
 * consumer therefore delays only its own watch. While the stream is busy the
 * consumer is woken per batch (BATCH_BYTES or LINGER_NS), not per read; a quiet
 * stream wakes it at its first byte (linger, below).
 *
 * Warning headers are kept the same way (the loop only copies them) and handed
 * to the client's warning handler on the consumer's thread, before the first
 * event is decoded (client.c, kcr__client_warnings).
 *
 * Bounds: the inbox holds at most max_buffered bytes. The loop cannot push back
 * without stalling every other stream of a shared HTTP/2 connection (pausing a
 * stream in libcurl 7.88 stops the whole connection's input), so a consumer that
 * falls that far behind ends its watch with KCR_ETOOBIG instead. A non-2xx
 * answer (a 410 for a too-old resourceVersion, a 403) is collected into a
 * bounded buffer instead of the inbox and parsed by the consumer.
 *
 * Dead connections: a watch that receives no byte for idle_timeout is aborted by
 * libcurl's low-speed check (less than 1 byte/s for that many seconds), so a
 * half-open connection ends the watch with KCR_ETIMEDOUT instead of hanging.
 *
 * Lifetime: the struct is shared by the owner's handle and the loop (from the
 * start closure until the done callback), with a reference count under its
 * mutex; whoever drops the last reference frees it. Since the loop calls nothing
 * of the owner's, kcr_watch_destroy never waits for the loop.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client/apierror_internal.h"
#include "client/client_internal.h"
#include "client/watch_internal.h"
#include "kcr/clock.h"
#include "kcr/log.h"
#include "util/alloc.h"
#include "util/list.h"
#include "util/pbscan.h"

#define ERROR_BODY_MAX ((size_t)64 * 1024)
#define DEFAULT_IDLE_NS (600 * KCR_NSEC_PER_SEC)
#define IDLE_MARGIN_NS (30 * KCR_NSEC_PER_SEC)
/* While bytes keep coming, the consumer is woken once per LINGER_NS or once
 * BATCH_BYTES are queued, whichever is first, not once per network read. */
#define LINGER_NS ((int64_t)1 * KCR_NSEC_PER_MSEC)
#define BATCH_BYTES ((size_t)64 * 1024)

/* chunk: bytes as the network delivered them, waiting for the consumer. */
typedef struct chunk {
  kcr__list_node_t link; /* in the inbox, or a batch taken from it */
  size_t len;
  char bytes[];
} chunk_t;

struct kcr_watch {
  kcr__transfer_t t; /* first member: the done callback casts back */
  kcr_client_t *client;
  struct curl_slist *headers;
  kcr_watch_decoder_t *decoder; /* consumer thread */
  kcr_watch_cb on_event;        /* consumer thread */
  void *data;                   /* consumer thread */
  size_t max_buffered;          /* immutable */
  char *path;                   /* immutable */
  int64_t started_ns;           /* immutable */
  long status;                  /* loop thread: 0 until the status line is known */
  /* Written by the loop until done is set, read by the consumer after. */
  kcr_buf_t error_body;
  char errbuf[CURL_ERROR_SIZE];
  CURLcode result;
  long final_status;
  char *content_type;

  pthread_mutex_t mu;
  pthread_cond_t cond; /* signalled when a chunk arrives, on done and on stop */
  int refs;            /* protected by mu */
  kcr__list_t inbox;   /* protected by mu: chunk_t, oldest first */
  size_t buffered;     /* protected by mu: bytes queued or being decoded */
  int waiting;         /* protected by mu: the consumer sleeps on cond */
  size_t wake_bytes;   /* protected by mu: wake it once this much is queued */
  int done;            /* protected by mu: the transfer has ended */
  int stopped;         /* protected by mu: kcr_watch_stop ran */
  int overflow;        /* protected by mu: the inbox passed max_buffered */
  int nomem;           /* protected by mu: a chunk could not be allocated */
  int ran;             /* protected by mu: kcr_watch_run was called */
  kcr_buf_t warn_raw;  /* protected by mu: Warning header values, one a line */
  int protobuf;        /* protected by mu: the answer's Content-Type is protobuf */
  int warned;          /* consumer thread: the warnings were handed over */
  int framed;          /* consumer thread: the decoder was told of protobuf */
};

static void free_chunks(kcr__list_t *chunks) {
  KCR__LIST_FOREACH_SAFE(chunks, n, next) {
    kcr__free(KCR__CONTAINER_OF(n, chunk_t, link));
  }
  *chunks = (kcr__list_t){0};
}

static void watch_unref(kcr_watch_t *w) {
  int last;
  pthread_mutex_lock(&w->mu);
  last = --w->refs == 0;
  pthread_mutex_unlock(&w->mu);
  if (!last)
    return;
  if (w->t.easy)
    curl_easy_cleanup(w->t.easy);
  curl_slist_free_all(w->headers);
  kcr_watch_decoder_destroy(w->decoder);
  kcr_buf_free(&w->error_body);
  kcr_buf_free(&w->warn_raw);
  free_chunks(&w->inbox);
  kcr__free(w->content_type);
  kcr__free(w->path);
  pthread_cond_destroy(&w->cond);
  pthread_mutex_destroy(&w->mu);
  kcr__free(w);
}

/* ---- the loop thread's side: bytes in, nothing else ---- */

/* on_stream is libcurl's write callback. Loop thread. */
static size_t on_stream(char *bytes, size_t size, size_t n, void *userp) {
  kcr_watch_t *w = userp;
  size_t len = size * n;
  chunk_t *c;
  int over;

  if (w->status == 0)
    curl_easy_getinfo(w->t.easy, CURLINFO_RESPONSE_CODE, &w->status);
  if (w->status < 200 || w->status > 299) {
    /* An error body past its bound: keep what fits, the status says enough. */
    (void)kcr_buf_append(&w->error_body, bytes, len);
    return len;
  }
  if (len == 0)
    return 0;
  pthread_mutex_lock(&w->mu);
  over = w->buffered + len > w->max_buffered;
  if (over)
    w->overflow = 1;
  pthread_mutex_unlock(&w->mu);
  if (over)
    return CURL_WRITEFUNC_ERROR;
  c = kcr__malloc(sizeof(*c) + len);
  if (!c) {
    pthread_mutex_lock(&w->mu);
    w->nomem = 1;
    pthread_mutex_unlock(&w->mu);
    return CURL_WRITEFUNC_ERROR;
  }
  c->len = len;
  memcpy(c->bytes, bytes, len);
  pthread_mutex_lock(&w->mu);
  kcr__list_push_back(&w->inbox, &c->link);
  w->buffered += len;
  if (w->waiting && w->buffered >= w->wake_bytes)
    pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->mu);
  return len;
}

/* on_watch_header keeps the Warning headers for the consumer. Loop thread. */
static size_t on_watch_header(char *data, size_t size, size_t n, void *userp) {
  kcr_watch_t *w = userp;
  size_t len = size * n;
  static const char ct[] = "content-type:";
  pthread_mutex_lock(&w->mu);
  if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    kcr_buf_reset(&w->warn_raw); /* a new response */
    w->protobuf = 0;
  } else if (len > sizeof(ct) && strncasecmp(data, ct, sizeof(ct) - 1) == 0) {
    const char *v = data + sizeof(ct) - 1, *e = data + len;
    while (v < e && (*v == ' ' || *v == '\t'))
      v++;
    w->protobuf = (size_t)(e - v) >= sizeof(KCR__PB_CONTENT_TYPE) - 1 &&
                  strncasecmp(v, KCR__PB_CONTENT_TYPE, sizeof(KCR__PB_CONTENT_TYPE) - 1) == 0;
  } else {
    (void)kcr__client_collect_warning(&w->warn_raw, data, len);
  }
  pthread_mutex_unlock(&w->mu);
  return len;
}

/* on_watch_done records how the transfer ended for the consumer. Loop thread. */
static void on_watch_done(kcr__transfer_t *t, CURLcode result) {
  kcr_watch_t *w = (kcr_watch_t *)(void *)t;
  long status = 0;
  char *ct = NULL;

  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ct);
  kcr__client_observe(w->client, "WATCH", status,
                      (double)(kcr_clock_now(kcr_clock_system()) - w->started_ns) / 1e9);
  w->result = result;
  w->final_status = status;
  w->content_type = ct ? kcr__strdup(ct) : NULL;
  pthread_mutex_lock(&w->mu);
  w->done = 1;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->mu);
  watch_unref(w); /* the loop's reference */
}

/* mark_done ends a transfer that never ran. Loop thread. */
static void mark_done(kcr_watch_t *w, CURLcode result) {
  w->result = result;
  pthread_mutex_lock(&w->mu);
  w->done = 1;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->mu);
  watch_unref(w);
}

static void on_loop_start(kcr_loop_t *loop, void *data) {
  kcr_watch_t *w = data;
  int stopped;
  pthread_mutex_lock(&w->mu);
  stopped = w->stopped;
  pthread_mutex_unlock(&w->mu);
  if (stopped || kcr__loop_add_transfer(loop, &w->t) != 0)
    mark_done(w, CURLE_ABORTED_BY_CALLBACK);
}

static void on_loop_stop(kcr_loop_t *loop, void *data) {
  kcr_watch_t *w = data;
  if (w->t.active)
    kcr__loop_cancel_transfer(loop, &w->t); /* calls on_watch_done */
  watch_unref(w);
}

/* ---- the consumer's side ---- */

void kcr_watch_stop(kcr_watch_t *w) {
  int post;
  if (!w)
    return;
  pthread_mutex_lock(&w->mu);
  post = !w->stopped && !w->done;
  w->stopped = 1;
  pthread_cond_broadcast(&w->cond);
  if (post)
    w->refs++;
  pthread_mutex_unlock(&w->mu);
  /* Posted even from the loop thread: a callback inside libcurl's write path must
   * not remove its own transfer. */
  if (post && kcr_loop_post(kcr_client_loop(w->client), on_loop_stop, w) != 0)
    watch_unref(w); /* the loop is stopping and aborts every transfer itself */
}

void kcr_watch_destroy(kcr_watch_t *w) {
  if (!w)
    return;
  kcr_watch_stop(w);
  watch_unref(w);
}

static int on_decoded(const kcr_watch_event *ev, void *data) {
  kcr_watch_t *w = data;
  int stopped;
  pthread_mutex_lock(&w->mu);
  stopped = w->stopped;
  pthread_mutex_unlock(&w->mu);
  if (stopped) {
    /* The callback stopped its own watch: no event after that one. */
    json_decref(ev->object);
    return KCR_ECANCELED;
  }
  return w->on_event(ev, w->data);
}

/* end_code turns the finished transfer into kcr_watch_run's answer. Consumer
 * thread, after done (so the loop's fields are stable). */
static int end_code(kcr_watch_t *w, int overflow, int nomem, kcr_error_t *err) {
  long status = w->final_status;
  if (nomem)
    return kcr_error_set(err, KCR_ENOMEM, "watch %s: out of memory", w->path);
  if (overflow)
    return kcr_error_set(err, KCR_ETOOBIG,
                         "watch %s: the consumer fell more than %zu bytes behind the stream",
                         w->path, w->max_buffered);
  if (w->result == CURLE_OK && (status < 200 || status > 299)) {
    kcr__error_response_t info = {status, NULL, NULL, "GET", NULL, NULL, NULL};
    kcr_buf_t json;
    kcr_error_t perr;
    int rc;
    info.content_type = w->content_type;
    if (status == 401)
      kcr__client_credentials_rejected(w->client);
    kcr_buf_init(&json, ERROR_BODY_MAX * 4);
    kcr_error_clear(&perr);
    /* a Status in protobuf, when protobuf was asked for: read as its JSON */
    if (w->content_type &&
        strncasecmp(w->content_type, KCR__PB_CONTENT_TYPE, sizeof(KCR__PB_CONTENT_TYPE) - 1) == 0 &&
        kcr__pb_object((const unsigned char *)kcr_buf_cstr(&w->error_body),
                       kcr_buf_len(&w->error_body), &json, NULL, &perr) == 0) {
      info.content_type = "application/json";
      rc = kcr__error_from_response(err, &info, kcr_buf_cstr(&json), kcr_buf_len(&json));
    } else {
      rc = kcr__error_from_response(err, &info, kcr_buf_cstr(&w->error_body),
                                    kcr_buf_len(&w->error_body));
    }
    kcr_buf_free(&json);
    return rc;
  }
  if (w->result == CURLE_OPERATION_TIMEDOUT)
    return kcr_error_set(err, KCR_ETIMEDOUT, "watch %s: no data within the idle timeout: %s",
                         w->path, w->errbuf);
  if (w->result == CURLE_ABORTED_BY_CALLBACK)
    return kcr_error_set(err, KCR_ECANCELED, "watch %s: stopped", w->path);
  if (w->result != CURLE_OK)
    return kcr__client_transport_error(w->result, "watch", w->path, w->errbuf, err);
  return kcr_watch_decoder_finish(w->decoder, err);
}

/*
 * take_warnings hands the answer's warnings to the client's handler or logger,
 * once, on the consumer's thread: when the first bytes of the stream are in
 * (headers come before them) or the transfer has ended. Called with w->mu
 * held; drops it while the handler runs.
 */
static void take_warnings(kcr_watch_t *w) {
  kcr_buf_t raw;
  if (w->warned)
    return;
  w->warned = 1;
  if (kcr_buf_len(&w->warn_raw) == 0)
    return;
  raw = w->warn_raw;
  kcr_buf_init(&w->warn_raw, KCR__CLIENT_WARNINGS_MAX);
  pthread_mutex_unlock(&w->mu);
  (void)kcr__client_warnings(w->client, "WATCH", w->path, &raw, NULL, NULL);
  kcr_buf_free(&raw);
  pthread_mutex_lock(&w->mu);
}

void kcr__watch_set_line_fn(kcr_watch_t *w, kcr__watch_line_fn fn, void *data) {
  kcr__watch_decoder_set_line_fn(w->decoder, fn, data); /* before run: the decoder is idle */
}

void kcr__watch_set_frame_fn(kcr_watch_t *w, kcr__watch_line_fn fn, void *data) {
  kcr__watch_decoder_set_frame_fn(w->decoder, fn, data);
}

/*
 * linger is the consumer's wait right after it decoded a batch: while the
 * stream is busy (a streaming list, a burst of events), the next bytes are
 * likely on their way, and waking for every read of the network (a few KiB)
 * would cost two context switches each, a third of a 10k sync's CPU. So the
 * loop is told to wake the consumer only once BATCH_BYTES are queued, and the
 * consumer sleeps at most LINGER_NS. If nothing came by then, the caller
 * waits for the next byte as usual, so an event on a quiet watch is never
 * delayed. Called with w->mu held.
 */
static void linger(kcr_watch_t *w) {
  kcr_clock_t *clk = kcr_clock_system();
  int64_t deadline = kcr_clock_now(clk) + LINGER_NS;
  w->wake_bytes = BATCH_BYTES;
  w->waiting = 1;
  while (w->buffered < BATCH_BYTES && !w->done && !w->stopped &&
         kcr_clock_timedwait(clk, &w->cond, &w->mu, deadline) == 0) {
  }
  w->waiting = 0;
  w->wake_bytes = 1;
}

int kcr_watch_run(kcr_watch_t *w, kcr_watch_cb on_event, void *data, kcr_error_t *err) {
  int rc = 0, overflow, nomem, decoded = 0;

  if (!w || !on_event)
    return kcr_error_set(err, KCR_EINVAL, "watch: a watch and an event callback are required");
  pthread_mutex_lock(&w->mu);
  if (w->ran) {
    pthread_mutex_unlock(&w->mu);
    return kcr_error_set(err, KCR_EINVAL, "watch %s: already run", w->path);
  }
  w->ran = 1;
  w->on_event = on_event;
  w->data = data;
  for (;;) {
    kcr__list_t batch = {0};
    kcr__list_node_t *n;
    size_t fed = 0;
    if (decoded && kcr__list_empty(&w->inbox) && !w->done && !w->stopped)
      linger(w); /* right after a batch */
    while (kcr__list_empty(&w->inbox) && !w->done && !w->stopped) {
      w->waiting = 1;
      pthread_cond_wait(&w->cond, &w->mu);
      w->waiting = 0;
    }
    if (w->stopped) {
      rc = kcr_error_set(err, KCR_ECANCELED, "watch %s: stopped", w->path);
      break;
    }
    take_warnings(w); /* may drop and retake mu */
    if (w->stopped) {
      rc = kcr_error_set(err, KCR_ECANCELED, "watch %s: stopped", w->path);
      break;
    }
    if (kcr__list_empty(&w->inbox))
      break;                         /* done, and everything received is decoded */
    if (!w->framed && w->protobuf) { /* the headers came before these bytes */
      kcr__watch_decoder_set_protobuf(w->decoder);
      w->framed = 1;
    }
    kcr__list_take(&batch, &w->inbox);
    pthread_mutex_unlock(&w->mu);
    while (rc == 0 && (n = kcr__list_pop_front(&batch)) != NULL) {
      chunk_t *c = KCR__CONTAINER_OF(n, chunk_t, link);
      fed += c->len;
      rc = kcr_watch_decoder_feed(w->decoder, c->bytes, c->len, err);
      kcr__free(c);
    }
    free_chunks(&batch);
    if (rc) {
      kcr_watch_stop(w); /* the stream is over for us: let the loop drop it */
      return rc;
    }
    pthread_mutex_lock(&w->mu);
    w->buffered -= fed;
    decoded = 1;
  }
  overflow = w->overflow;
  nomem = w->nomem;
  pthread_mutex_unlock(&w->mu);
  if (rc)
    return rc;
  return end_code(w, overflow, nomem, err);
}

static int build_watch_path(kcr_buf_t *b, const kcr_gvr *r, const char *ns,
                            const kcr_watch_options *o, int64_t *idle_ns) {
  char num[32];
  int first = 1, rc;
  rc = kcr__client_build_path(b, r, ns, NULL, NULL);
  if (rc == 0)
    rc = kcr__client_add_param(b, &first, "watch", "true");
  if (rc == 0 && o) {
    rc = kcr__client_add_param(b, &first, "labelSelector", o->label_selector);
    if (rc == 0)
      rc = kcr__client_add_param(b, &first, "fieldSelector", o->field_selector);
    if (rc == 0)
      rc = kcr__client_add_param(b, &first, "shardSelector", o->shard_selector);
    if (rc == 0)
      rc = kcr__client_add_param(b, &first, "resourceVersion", o->resource_version);
    if (rc == 0)
      rc = kcr__client_add_param(b, &first, "resourceVersionMatch", o->resource_version_match);
    if (rc == 0 && o->allow_bookmarks)
      rc = kcr__client_add_param(b, &first, "allowWatchBookmarks", "true");
    if (rc == 0 && o->send_initial_events)
      rc = kcr__client_add_param(b, &first, "sendInitialEvents", "true");
    if (rc == 0 && o->timeout_seconds > 0) {
      snprintf(num, sizeof(num), "%ld", o->timeout_seconds);
      rc = kcr__client_add_param(b, &first, "timeoutSeconds", num);
    }
  }
  *idle_ns = DEFAULT_IDLE_NS;
  if (o && o->idle_timeout_ns > 0)
    *idle_ns = o->idle_timeout_ns;
  else if (o && o->timeout_seconds > 0)
    *idle_ns = o->timeout_seconds * KCR_NSEC_PER_SEC + IDLE_MARGIN_NS;
  return rc;
}

int kcr_client_watch(kcr_client_t *c, const kcr_gvr *r, const char *ns, const kcr_watch_options *o,
                     kcr_watch_t **out, kcr_error_t *err) {
  kcr_watch_t *w;
  kcr_buf_t path;
  int64_t idle_ns;
  long idle_s;
  int rc;

  *out = NULL;
  w = kcr__calloc(1, sizeof(*w));
  if (!w)
    return kcr_error_set(err, KCR_ENOMEM, "watch: out of memory");
  pthread_mutex_init(&w->mu, NULL);
  if (kcr_clock_cond_init(&w->cond) != 0) {
    pthread_mutex_destroy(&w->mu);
    kcr__free(w);
    return kcr_error_set(err, KCR_ESYS, "watch: cannot initialise a condition variable");
  }
  w->wake_bytes = 1;
  w->refs = 1; /* the owner's */
  w->client = c;
  w->max_buffered = o && o->max_buffered ? o->max_buffered : KCR_WATCH_MAX_BUFFERED_DEFAULT;
  w->t.done = on_watch_done;
  kcr_buf_init(&w->error_body, ERROR_BODY_MAX);
  kcr_buf_init(&w->warn_raw, KCR__CLIENT_WARNINGS_MAX);
  kcr_buf_init(&path, (size_t)64 * 1024);
  rc = build_watch_path(&path, r, ns, o, &idle_ns);
  if (rc) {
    kcr_buf_free(&path);
    kcr_error_set(err, rc, "watch: invalid resource or namespace, or a URL too long");
    goto fail;
  }
  w->path = kcr_buf_take(&path, NULL);
  if (!w->path) {
    rc = kcr_error_set(err, KCR_ENOMEM, "watch: out of memory");
    goto fail;
  }
  rc = kcr_watch_decoder_create(o ? o->max_line : 0, on_decoded, w, &w->decoder, err);
  if (rc)
    goto fail;
  rc = kcr__client_prepare(c, "GET", w->path, o ? o->accept : NULL, NULL, &w->t.easy, &w->headers,
                           err);
  if (rc)
    goto fail;
  /* No compression on watch streams. The apiserver gzips them when asked, and
   * libcurl 7.88 fails such a stream with CURLE_WRITE_ERROR once a streaming
   * list's burst of initial events arrives (reproduced: 2000 ConfigMaps); events
   * are flushed one by one anyway, where gzip gains little. Lists and gets keep
   * gzip, where it pays. */
  curl_easy_setopt(w->t.easy, CURLOPT_ACCEPT_ENCODING, NULL);
  curl_easy_setopt(w->t.easy, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(w->t.easy, CURLOPT_WRITEDATA, w);
  curl_easy_setopt(w->t.easy, CURLOPT_HEADERFUNCTION, on_watch_header);
  curl_easy_setopt(w->t.easy, CURLOPT_HEADERDATA, w);
  curl_easy_setopt(w->t.easy, CURLOPT_ERRORBUFFER, w->errbuf);
  idle_s = (long)((idle_ns + KCR_NSEC_PER_SEC - 1) / KCR_NSEC_PER_SEC);
  curl_easy_setopt(w->t.easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(w->t.easy, CURLOPT_LOW_SPEED_TIME, idle_s);
  w->started_ns = kcr_clock_now(kcr_clock_system());
  w->refs++; /* the loop's, until the transfer is done */
  rc = kcr_loop_post(kcr_client_loop(c), on_loop_start, w);
  if (rc) {
    w->refs--;
    kcr_error_set(err, rc, "watch %s: the client's loop is stopped", w->path);
    goto fail;
  }
  *out = w;
  return 0;

fail:
  watch_unref(w);
  return rc;
}
