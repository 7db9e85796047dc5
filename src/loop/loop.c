/* SPDX-License-Identifier: MIT */
/*
 * loop.c: the I/O thread. A libuv loop drives one libcurl multi handle through
 * the multi_socket API: curl tells us which sockets to watch (on_curl_socket ->
 * a uv_poll_t per socket) and when to call it back (on_curl_timer -> one
 * uv_timer_t); libuv tells curl what happened (curl_multi_socket_action), and
 * finished transfers are handed to their owners' done callbacks.
 *
 * Other threads reach the loop through kcr_loop_post: a mutex-protected FIFO of
 * closures plus a uv_async_t doorbell. The loop swaps the whole FIFO out per
 * wake-up, so a burst of posts costs one wake-up (uv_async_send coalesces too).
 *
 * Shutdown (kcr_loop_stop) is a flag the doorbell handler sees after running what
 * was posted before it: abort every active transfer (done callbacks see
 * CURLE_ABORTED_BY_CALLBACK), clean up the multi handle (curl closes its
 * connections and removes their sockets), close every remaining handle, and let
 * uv_run return; the stopping thread joins, and destroy checks uv_loop_close.
 *
 * Nudging quiet HTTP/2 requests (issue 16, bug 12: an initial list that stalled
 * for 60 s). libcurl before 8.1.0 (Debian bookworm has 7.88.1) copies a stream's
 * DATA into that transfer's receive buffer; when the buffer is full it returns
 * NGHTTP2_ERR_PAUSE from nghttp2's data callback. nghttp2 then stops in the middle
 * of the frame, and finishes it (END_STREAM, stream closed) only on its next
 * nghttp2_session_mem_recv call, which libcurl makes only when new bytes come from
 * the socket. So when the paused frame is the response's last and the last bytes
 * on the wire, the transfer has all its data and never completes: no socket event
 * and no timer is due, nothing is lost by this glue, and the next bytes on the
 * connection (a watch bookmark, about a minute later) release it. Seen with the
 * loop's trace: the LIST page's stream got 16 KiB + 1267 bytes, "Unpaused", then
 * nothing until a bookmark arrived 59.5 s later. libcurl 8.1.0 stopped pausing
 * nghttp2 (it buffers per stream instead). Here a repeating timer looks at the
 * transfers that end on their own (kcr__transfer_t.nudge_when_quiet): one that has
 * received part of an HTTP/2 response and nothing since the previous tick gets a
 * HEAD / on the same connection (a duplicate of its handle, removed with it at the
 * latest); the answer's bytes make libcurl feed nghttp2 again. Once per quiet
 * stretch: a server that is merely slow costs one small request.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <uv.h>

#include "kcr/log.h"
#include "loop/loop_internal.h"
#include "util/alloc.h"
#include "util/list.h"

/* QUIET_MS: how long a partly answered HTTP/2 request may stay silent before its
 * connection is nudged (see above). A stall then costs at most two periods. */
#define QUIET_MS 250

typedef struct post {
  kcr__list_node_t link; /* in the loop's posts */
  kcr_loop_fn fn;
  void *data;
} post_t;

/* sock_t: one socket curl asked us to watch. */
typedef struct sock {
  uv_poll_t poll;
  curl_socket_t fd;
  kcr_loop_t *loop;
} sock_t;

struct kcr_loop {
  uv_loop_t uv;           /* loop thread (after start) */
  uv_async_t doorbell;    /* loop thread; uv_async_send from any thread */
  uv_timer_t curl_timer;  /* loop thread */
  uv_timer_t quiet_timer; /* loop thread: runs while a nudgeable transfer is active */
  uint64_t quiet_ms;      /* loop thread (or before start); 0: no nudging */
  CURLM *multi;           /* loop thread */
  pthread_t thread;       /* owner thread (create/start/stop) */
  int started;            /* owner thread */
  int joined;             /* owner thread */
  kcr__list_t active;     /* loop thread: transfers on the multi handle */

  pthread_mutex_t mu;
  kcr__list_t posts; /* post_t, oldest first; protected by mu */
  int closing;       /* protected by mu */

  atomic_uint_fast64_t connections_opened;
  atomic_uint_fast64_t transfers_started;
  atomic_uint_fast64_t transfers_done;
  atomic_uint_fast64_t wakeups;
  atomic_uint_fast64_t nudges;
  atomic_int has_thread;
  pthread_t loop_thread; /* written once by the loop thread, before has_thread */
};

static void check_multi_info(kcr_loop_t *l);

static void on_sock_close(uv_handle_t *h) {
  kcr__free(h->data);
}

static void on_poll(uv_poll_t *h, int status, int events) {
  sock_t *s = h->data;
  kcr_loop_t *l = s->loop;
  int flags = 0, running;
  if (status < 0)
    flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE)
    flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE)
    flags |= CURL_CSELECT_OUT;
  curl_multi_socket_action(l->multi, s->fd, flags, &running);
  check_multi_info(l);
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
  kcr_loop_t *l = userp;
  sock_t *s = socketp;
  int events = 0;
  (void)easy;

  if (what == CURL_POLL_REMOVE) {
    if (s) {
      uv_poll_stop(&s->poll);
      uv_close((uv_handle_t *)&s->poll, on_sock_close);
      curl_multi_assign(l->multi, fd, NULL);
    }
    return 0;
  }
  if (!s) {
    s = kcr__calloc(1, sizeof(*s));
    if (!s)
      return -1;
    if (uv_poll_init_socket(&l->uv, &s->poll, fd) != 0) {
      kcr__free(s);
      return -1;
    }
    s->fd = fd;
    s->loop = l;
    s->poll.data = s;
    curl_multi_assign(l->multi, fd, s);
  }
  if (what & CURL_POLL_IN)
    events |= UV_READABLE;
  if (what & CURL_POLL_OUT)
    events |= UV_WRITABLE;
  uv_poll_start(&s->poll, events, on_poll);
  return 0;
}

static void on_curl_timeout(uv_timer_t *h) {
  kcr_loop_t *l = h->data;
  int running;
  curl_multi_socket_action(l->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  check_multi_info(l);
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp) {
  kcr_loop_t *l = userp;
  (void)multi;
  /* curl asks not to be called back from inside this callback: a 0 ms timer runs
   * on the next loop iteration. */
  if (timeout_ms < 0)
    uv_timer_stop(&l->curl_timer);
  else
    uv_timer_start(&l->curl_timer, on_curl_timeout, (uint64_t)timeout_ms, 0);
  return 0;
}

static curl_socket_t on_open_socket(void *data, curlsocktype purpose, struct curl_sockaddr *addr) {
  kcr_loop_t *l = data;
  (void)purpose;
  atomic_fetch_add(&l->connections_opened, 1);
  return socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
}

static void unlink_transfer(kcr_loop_t *l, kcr__transfer_t *t) {
  kcr__list_remove(&l->active, &t->link);
  t->active = 0;
}

/* drop_nudge removes t's nudge, if any: it never outlives t, whose headers,
 * body and options it borrowed through curl_easy_duphandle. */
static void drop_nudge(kcr_loop_t *l, kcr__transfer_t *t) {
  if (!t->nudge)
    return;
  curl_multi_remove_handle(l->multi, t->nudge);
  curl_easy_cleanup(t->nudge);
  t->nudge = NULL;
}

/* finish ends transfer t with result: off the multi handle, then its callback. */
static void finish(kcr_loop_t *l, kcr__transfer_t *t, CURLcode result) {
  drop_nudge(l, t);
  curl_multi_remove_handle(l->multi, t->easy);
  unlink_transfer(l, t);
  atomic_fetch_add(&l->transfers_done, 1);
  t->done(t, result);
}

static void check_multi_info(kcr_loop_t *l) {
  CURLMsg *msg;
  int pending;
  while ((msg = curl_multi_info_read(l->multi, &pending)) != NULL) {
    char *priv = NULL;
    kcr__transfer_t *t;
    if (msg->msg != CURLMSG_DONE)
      continue;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
    t = (kcr__transfer_t *)(void *)priv;
    assert(t);
    if (msg->easy_handle == t->nudge) {
      drop_nudge(l, t); /* it has done its job, or failed: either way, gone */
      continue;
    }
    assert(t->easy == msg->easy_handle);
    finish(l, t, msg->data.result);
  }
}

static size_t on_discard(char *data, size_t size, size_t n, void *userp) {
  (void)data;
  (void)userp;
  return size * n;
}

/* nudge_url writes scheme://host:port/ of t's URL into a new string (curl_free). */
static char *nudge_url(kcr__transfer_t *t) {
  char *eff = NULL, *url = NULL;
  CURLU *u;
  curl_easy_getinfo(t->easy, CURLINFO_EFFECTIVE_URL, &eff);
  if (!eff || !(u = curl_url()))
    return NULL;
  if (curl_url_set(u, CURLUPART_URL, eff, 0) != CURLUE_OK ||
      curl_url_set(u, CURLUPART_PATH, "/", 0) != CURLUE_OK ||
      curl_url_set(u, CURLUPART_QUERY, NULL, 0) != CURLUE_OK ||
      curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK)
    url = NULL;
  curl_url_cleanup(u);
  return url;
}

/* nudge sends HEAD / on t's connection (see the top of the file). A failure only
 * means no nudge. */
static void nudge(kcr_loop_t *l, kcr__transfer_t *t) {
  char *url = nudge_url(t);
  CURL *e;
  if (!url)
    return;
  e = curl_easy_duphandle(t->easy);
  if (e) {
    /* The duplicate shares t's header list and body pointer: it is removed no
     * later than t (drop_nudge in finish). */
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    /* On the HTTP/2 connection t uses, whichever way it was made: libcurl 7.88
     * trips over prior knowledge on a reused connection. */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_discard);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, NULL);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_discard);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, NULL);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)(void *)t);
    if (curl_multi_add_handle(l->multi, e) == CURLM_OK) {
      t->nudge = e;
      atomic_fetch_add(&l->nudges, 1);
    } else {
      curl_easy_cleanup(e);
    }
  }
  curl_free(url);
}

/* on_quiet_tick nudges the connections of quiet, partly answered HTTP/2 requests. */
static void on_quiet_tick(uv_timer_t *h) {
  kcr_loop_t *l = h->data;
  int any = 0;
  KCR__LIST_FOREACH(&l->active, n) {
    kcr__transfer_t *t = KCR__CONTAINER_OF(n, kcr__transfer_t, link);
    curl_off_t body = 0, seen;
    long head = 0, version = 0;
    if (!t->nudge_when_quiet)
      continue;
    any = 1;
    curl_easy_getinfo(t->easy, CURLINFO_SIZE_DOWNLOAD_T, &body);
    curl_easy_getinfo(t->easy, CURLINFO_HEADER_SIZE, &head);
    seen = body + head;
    if (seen != t->seen) {
      t->seen = seen; /* progress since the last tick */
      continue;
    }
    /* Quiet for a whole tick. Nothing received yet: the server is still working,
     * libcurl holds nothing. Nudged at this count already: once is enough. */
    if (seen == 0 || t->nudge || t->nudged_at == seen)
      continue;
    curl_easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &version);
    if (version != CURL_HTTP_VERSION_2_0)
      continue;
    t->nudged_at = seen;
    nudge(l, t);
  }
  if (!any)
    uv_timer_stop(h);
}

int kcr__loop_add_transfer(kcr_loop_t *l, kcr__transfer_t *t) {
  int closing;
  assert(kcr_loop_on_thread(l));
  pthread_mutex_lock(&l->mu);
  closing = l->closing;
  pthread_mutex_unlock(&l->mu);
  if (closing || !l->multi)
    return KCR_ECLOSED;
  curl_easy_setopt(t->easy, CURLOPT_PRIVATE, (char *)(void *)t);
  curl_easy_setopt(t->easy, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
  curl_easy_setopt(t->easy, CURLOPT_OPENSOCKETDATA, l);
  if (curl_multi_add_handle(l->multi, t->easy) != CURLM_OK)
    return KCR_EIO;
  t->active = 1;
  t->nudge = NULL;
  t->seen = t->nudged_at = 0;
  kcr__list_push_front(&l->active, &t->link);
  atomic_fetch_add(&l->transfers_started, 1);
  if (t->nudge_when_quiet && l->quiet_ms && !uv_is_active((uv_handle_t *)&l->quiet_timer))
    uv_timer_start(&l->quiet_timer, on_quiet_tick, l->quiet_ms, l->quiet_ms);
  return 0;
}

void kcr__loop_cancel_transfer(kcr_loop_t *l, kcr__transfer_t *t) {
  assert(kcr_loop_on_thread(l));
  if (t->active)
    finish(l, t, CURLE_ABORTED_BY_CALLBACK);
}

uv_loop_t *kcr__loop_uv(kcr_loop_t *l) {
  return &l->uv;
}

void kcr__loop_set_quiet_ms(kcr_loop_t *l, uint64_t ms) {
  l->quiet_ms = ms;
  if (!ms)
    uv_timer_stop(&l->quiet_timer);
}

uint64_t kcr__loop_nudges(kcr_loop_t *l) {
  return atomic_load(&l->nudges);
}

static void on_close_any(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h))
    uv_close(h, h->type == UV_POLL ? on_sock_close : NULL);
}

/* shut_down runs on the loop thread after the last posted closure. */
static void shut_down(kcr_loop_t *l) {
  while (!kcr__list_empty(&l->active))
    finish(l, KCR__CONTAINER_OF(l->active.first, kcr__transfer_t, link), CURLE_ABORTED_BY_CALLBACK);
  curl_multi_cleanup(l->multi);
  l->multi = NULL;
  uv_walk(&l->uv, on_close_any, NULL);
}

static void on_doorbell(uv_async_t *h) {
  kcr_loop_t *l = h->data;
  kcr__list_t batch;
  int closing;

  atomic_fetch_add(&l->wakeups, 1);
  for (;;) {
    batch = (kcr__list_t){0};
    pthread_mutex_lock(&l->mu);
    kcr__list_take(&batch, &l->posts);
    closing = l->closing;
    pthread_mutex_unlock(&l->mu);
    if (kcr__list_empty(&batch))
      break;
    KCR__LIST_FOREACH_SAFE(&batch, n, next) {
      post_t *p = KCR__CONTAINER_OF(n, post_t, link);
      p->fn(l, p->data);
      kcr__free(p);
    }
  }
  if (closing && l->multi)
    shut_down(l);
}

static void *loop_main(void *arg) {
  kcr_loop_t *l = arg;
  l->loop_thread = pthread_self();
  atomic_store(&l->has_thread, 1);
  uv_run(&l->uv, UV_RUN_DEFAULT);
  return NULL;
}

int kcr_loop_create(kcr_loop_t **out, kcr_error_t *err) {
  kcr_loop_t *l;

  *out = NULL;
  l = kcr__calloc(1, sizeof(*l));
  if (!l)
    return kcr_error_set(err, KCR_ENOMEM, "loop: out of memory");
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    kcr__free(l);
    return kcr_error_set(err, KCR_ESYS, "loop: libcurl global initialisation failed");
  }
  if (pthread_mutex_init(&l->mu, NULL) != 0)
    goto fail_curl;
  if (uv_loop_init(&l->uv) != 0)
    goto fail_mutex;
  if (uv_async_init(&l->uv, &l->doorbell, on_doorbell) != 0 ||
      uv_timer_init(&l->uv, &l->curl_timer) != 0 || uv_timer_init(&l->uv, &l->quiet_timer) != 0)
    goto fail_uv;
  l->doorbell.data = l;
  l->curl_timer.data = l;
  l->quiet_timer.data = l;
  /* Only libcurl before 8.1.0 pauses nghttp2 (see the top of the file). */
  l->quiet_ms = curl_version_info(CURLVERSION_NOW)->version_num < 0x080100 ? QUIET_MS : 0;
  l->multi = curl_multi_init();
  if (!l->multi)
    goto fail_uv;
  curl_multi_setopt(l->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
  curl_multi_setopt(l->multi, CURLMOPT_SOCKETDATA, l);
  curl_multi_setopt(l->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
  curl_multi_setopt(l->multi, CURLMOPT_TIMERDATA, l);
  curl_multi_setopt(l->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  *out = l;
  return 0;

fail_uv:
  /* Handles initialised on a loop that never ran: close them and spin it once. */
  uv_walk(&l->uv, on_close_any, NULL);
  uv_run(&l->uv, UV_RUN_DEFAULT);
  uv_loop_close(&l->uv);
fail_mutex:
  pthread_mutex_destroy(&l->mu);
fail_curl:
  curl_global_cleanup();
  kcr__free(l);
  return kcr_error_set(err, KCR_ESYS, "loop: libuv or libcurl initialisation failed");
}

int kcr_loop_start(kcr_loop_t *l, kcr_error_t *err) {
  if (l->started)
    return kcr_error_set(err, KCR_EINVAL, "loop: already started");
  if (pthread_create(&l->thread, NULL, loop_main, l) != 0)
    return kcr_error_set(err, KCR_ESYS, "loop: cannot create the loop thread");
  l->started = 1;
  return 0;
}

int kcr_loop_post(kcr_loop_t *l, kcr_loop_fn fn, void *data) {
  post_t *p = kcr__malloc(sizeof(*p));
  if (!p)
    return KCR_ENOMEM;
  p->fn = fn;
  p->data = data;
  pthread_mutex_lock(&l->mu);
  if (l->closing) {
    pthread_mutex_unlock(&l->mu);
    kcr__free(p);
    return KCR_ECLOSED;
  }
  kcr__list_push_back(&l->posts, &p->link);
  pthread_mutex_unlock(&l->mu);
  uv_async_send(&l->doorbell);
  return 0;
}

void kcr_loop_stop(kcr_loop_t *l) {
  assert(!kcr_loop_on_thread(l));
  pthread_mutex_lock(&l->mu);
  l->closing = 1;
  pthread_mutex_unlock(&l->mu);
  if (l->started && !l->joined) {
    uv_async_send(&l->doorbell);
    pthread_join(l->thread, NULL);
    l->joined = 1;
  } else if (!l->started && l->multi) {
    /* Never started: tear down on this thread, which then owns the loop. */
    on_doorbell(&l->doorbell);
    uv_run(&l->uv, UV_RUN_DEFAULT);
  }
}

void kcr_loop_destroy(kcr_loop_t *l) {
  int rc;
  if (!l)
    return;
  kcr_loop_stop(l);
  rc = uv_loop_close(&l->uv);
  if (rc != 0)
    kcr_log(KCR_LOG_ERROR, "loop", "handles left open at destroy: %s", uv_strerror(rc));
  assert(rc == 0);
  pthread_mutex_destroy(&l->mu);
  curl_global_cleanup();
  kcr__free(l);
}

int kcr_loop_on_thread(const kcr_loop_t *l) {
  kcr_loop_t *m = (kcr_loop_t *)l;
  return atomic_load(&m->has_thread) && pthread_equal(m->loop_thread, pthread_self());
}

void kcr_loop_get_stats(kcr_loop_t *l, kcr_loop_stats *out) {
  out->connections_opened = atomic_load(&l->connections_opened);
  out->transfers_started = atomic_load(&l->transfers_started);
  out->transfers_done = atomic_load(&l->transfers_done);
  out->wakeups = atomic_load(&l->wakeups);
}
