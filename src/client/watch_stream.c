/* SPDX-License-Identifier: MIT */
/*
 * watch_stream.c: a watch is a long-lived GET whose body is a stream of events.
 * It runs as a transfer on the loop like any request, but its body goes through
 * a kcr_watch_decoder as it arrives, and each event is handed to the owner's
 * callback on the loop thread.
 *
 * Dead connections: a watch that receives no byte for idle_timeout is aborted by
 * libcurl's low-speed check (less than 1 byte/s for that many seconds), so a
 * half-open connection ends the watch with KCR_ETIMEDOUT instead of hanging.
 *
 * Lifetime: the struct is shared by the owner's handle and the loop (while the
 * transfer runs), with a reference count under its mutex. on_end runs exactly once,
 * on the loop, and is the loop's last touch. kcr_watch_destroy detaches the
 * callbacks on the loop thread (posting there and waiting, unless it already is
 * there), so after it returns no callback runs, even if the transfer was in the
 * middle of delivering events.
 *
 * A non-2xx answer (a 410 for a too-old resourceVersion, a 403) is collected into a
 * bounded buffer instead of the decoder and turned into the end error.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "client/client_internal.h"
#include "client/status.h"
#include "kcr/clock.h"
#include "kcr/log.h"
#include "util/alloc.h"

#define ERROR_BODY_MAX ((size_t)64 * 1024)
#define DEFAULT_IDLE_NS (600 * KCR_NSEC_PER_SEC)
#define IDLE_MARGIN_NS (30 * KCR_NSEC_PER_SEC)

struct kcr_watch {
  kcr__transfer_t t; /* first member: the done callback casts back */
  kcr_client_t *client;
  struct curl_slist *headers;
  kcr_watch_decoder_t *decoder;
  kcr_watch_cb on_event;
  kcr_watch_end_cb on_end;
  void *data;
  kcr_buf_t error_body; /* loop thread */
  long status;          /* loop thread: 0 until the status line is known */
  int failed;           /* loop thread: the write callback refused data */
  int stop_code;        /* loop thread: why the write callback refused */
  kcr_error_t error;    /* loop thread */
  int ended;            /* loop thread: on_end ran (or will never run) */
  int detached;         /* loop thread: no more callbacks */
  char errbuf[CURL_ERROR_SIZE];
  char *path;
  int64_t started_ns;

  pthread_mutex_t mu;
  pthread_cond_t cond;
  int refs;  /* protected by mu */
  int acked; /* protected by mu: a detach closure ran */
};

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
  kcr__free(w->path);
  pthread_cond_destroy(&w->cond);
  pthread_mutex_destroy(&w->mu);
  kcr__free(w);
}

static int on_decoded(const kcr_watch_event_t *ev, void *data) {
  kcr_watch_t *w = data;
  if (w->detached) {
    json_decref(ev->object);
    return KCR_ECANCELED;
  }
  return w->on_event(ev, w->data);
}

static size_t on_stream(char *bytes, size_t size, size_t n, void *userp) {
  kcr_watch_t *w = userp;
  size_t len = size * n;
  int rc;

  if (w->status == 0)
    curl_easy_getinfo(w->t.easy, CURLINFO_RESPONSE_CODE, &w->status);
  if (w->status < 200 || w->status > 299) {
    if (kcr_buf_append(&w->error_body, bytes, len) == 0)
      return len;
    /* An error body past its bound: keep what fits, the status says enough. */
    return len;
  }
  rc = kcr_watch_decoder_feed(w->decoder, bytes, len, &w->error);
  if (rc) {
    w->failed = 1;
    w->stop_code = rc;
    return CURL_WRITEFUNC_ERROR;
  }
  return len;
}

/* end runs on_end once (unless detached) and drops the loop's reference. */
static void end(kcr_watch_t *w, int code) {
  if (!w->ended) {
    w->ended = 1;
    if (!w->detached && w->on_end)
      w->on_end(code, code ? &w->error : NULL, w->data);
  }
  watch_unref(w);
}

static void on_watch_done(kcr__transfer_t *t, CURLcode result) {
  kcr_watch_t *w = (kcr_watch_t *)(void *)t;
  int code = 0;
  long status = 0;

  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  kcr__client_observe(w->client, "WATCH", status,
                      (double)(kcr_clock_now(kcr_clock_system()) - w->started_ns) / 1e9);
  if (w->failed) {
    code = w->stop_code; /* w->error already says why */
  } else if (result == CURLE_OK && (status < 200 || status > 299)) {
    kcr__error_response_t info = {status, NULL, NULL, "GET", NULL, NULL, NULL};
    char *ct = NULL;
    curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ct);
    info.content_type = ct;
    code = kcr__error_from_response(&w->error, &info, kcr_buf_cstr(&w->error_body),
                                    kcr_buf_len(&w->error_body));
    if (status == 401)
      kcr__client_credentials_rejected(w->client);
  } else if (result == CURLE_OPERATION_TIMEDOUT) {
    code = kcr_error_set(&w->error, KCR_ETIMEDOUT, "watch %s: no data within the idle timeout: %s",
                         w->path, w->errbuf);
  } else if (result != CURLE_OK) {
    code = kcr__client_transport_error(result, "watch", w->path, w->errbuf, &w->error);
  } else {
    code = kcr_watch_decoder_finish(w->decoder, &w->error);
  }
  end(w, code);
}

static void on_loop_start(kcr_loop_t *loop, void *data) {
  kcr_watch_t *w = data;
  if (w->ended) {
    /* Stopped before it started. */
    watch_unref(w);
    return;
  }
  if (kcr__loop_add_transfer(loop, &w->t) != 0) {
    kcr_error_set(&w->error, KCR_ECANCELED, "watch %s: the loop is stopping", w->path);
    end(w, KCR_ECANCELED);
  }
}

static void on_loop_stop(kcr_loop_t *loop, void *data) {
  kcr_watch_t *w = data;
  if (w->t.active) {
    kcr_error_set(&w->error, KCR_ECANCELED, "watch %s: stopped", w->path);
    w->failed = 1;
    w->stop_code = KCR_ECANCELED;
    kcr__loop_cancel_transfer(loop, &w->t); /* calls on_watch_done -> end */
  } else if (!w->ended) {
    /* Not started yet: the start closure sees ended and lets go. */
    kcr_error_set(&w->error, KCR_ECANCELED, "watch %s: stopped", w->path);
    w->ended = 1;
    if (!w->detached && w->on_end)
      w->on_end(KCR_ECANCELED, &w->error, w->data);
  }
  watch_unref(w);
}

static void on_loop_detach(kcr_loop_t *loop, void *data) {
  kcr_watch_t *w = data;
  (void)loop;
  w->detached = 1;
  pthread_mutex_lock(&w->mu);
  w->acked = 1;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->mu);
  watch_unref(w);
}

static void watch_ref(kcr_watch_t *w) {
  pthread_mutex_lock(&w->mu);
  w->refs++;
  pthread_mutex_unlock(&w->mu);
}

void kcr_watch_stop(kcr_watch_t *w) {
  if (!w)
    return;
  watch_ref(w);
  /* Posted even from the loop thread: a callback inside libcurl's write path must
   * not remove its own transfer. */
  if (kcr_loop_post(kcr_client_loop(w->client), on_loop_stop, w) != 0)
    watch_unref(w); /* the loop is stopping and aborts every transfer itself */
}

void kcr_watch_destroy(kcr_watch_t *w) {
  kcr_loop_t *loop;
  if (!w)
    return;
  loop = kcr_client_loop(w->client);
  kcr_watch_stop(w);
  watch_ref(w);
  if (kcr_loop_on_thread(loop)) {
    on_loop_detach(loop, w);
  } else if (kcr_loop_post(loop, on_loop_detach, w) == 0) {
    pthread_mutex_lock(&w->mu);
    while (!w->acked)
      pthread_cond_wait(&w->cond, &w->mu);
    pthread_mutex_unlock(&w->mu);
  } else {
    /* The loop has stopped: it runs no callback any more. */
    watch_unref(w);
  }
  watch_unref(w);
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
                     kcr_watch_cb on_event, kcr_watch_end_cb on_end, void *data, kcr_watch_t **out,
                     kcr_error_t *err) {
  kcr_watch_t *w;
  kcr_buf_t path;
  int64_t idle_ns;
  long idle_s;
  int rc;

  *out = NULL;
  if (!on_event || !on_end)
    return kcr_error_set(err, KCR_EINVAL, "watch: both callbacks are required");
  w = kcr__calloc(1, sizeof(*w));
  if (!w)
    return kcr_error_set(err, KCR_ENOMEM, "watch: out of memory");
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cond, NULL);
  w->refs = 1; /* the owner's */
  w->client = c;
  w->on_event = on_event;
  w->on_end = on_end;
  w->data = data;
  w->t.done = on_watch_done;
  kcr_buf_init(&w->error_body, ERROR_BODY_MAX);
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
  rc = kcr__client_prepare(c, "GET", w->path, NULL, NULL, &w->t.easy, &w->headers, err);
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
  curl_easy_setopt(w->t.easy, CURLOPT_ERRORBUFFER, w->errbuf);
  idle_s = (long)((idle_ns + KCR_NSEC_PER_SEC - 1) / KCR_NSEC_PER_SEC);
  curl_easy_setopt(w->t.easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(w->t.easy, CURLOPT_LOW_SPEED_TIME, idle_s);
  w->started_ns = kcr_clock_now(kcr_clock_system());
  w->refs++; /* the loop's, until end() */
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
