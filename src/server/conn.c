/* SPDX-License-Identifier: MIT */
/*
 * conn.c: the server's connections on the I/O loop (conn_internal.h):
 * accepting and shedding them, reading requests into their head buffers,
 * routing each parsed head to an answer the loop gives itself or to a job for
 * the worker, writing replies, TLS records, and the timers that cut slow or
 * idle clients.
 *
 * DESIGN. Everything here runs on the loop thread and never runs user code. A
 * connection is one allocation: a uv_tcp_t, a uv_timer_t, the uv_write_t of
 * its one reply in flight, and a fixed head buffer of max_header_bytes that
 * bytes are read straight into. The timer enforces the header timeout from a
 * request's first byte (a slowloris client trickling one byte a second is cut
 * off when it fires, however steady its trickle), the idle timeout between
 * kept-alive requests, and the time a reply may take to be answered and
 * written. Requests with a body are answered and the connection closed, since
 * no built-in endpoint takes one; options.handler's requests read theirs into
 * the job's own buffer.
 *
 * One request at a time per connection. Once a request's head is complete the
 * connection stops reading (uv_read_stop) until its reply has been written
 * (the uv_write callback), then parses what it had already buffered and reads
 * again. A client that pipelines requests and never reads the replies
 * therefore fills its own socket buffers in the kernel, not our memory: the
 * server holds at most one reply per connection.
 *
 * Memory is the budget of server_internal.h. A connection (its struct and
 * head buffer), a job and the loop's queue node that posts its reply back are
 * charged before they are made. When the budget cannot take a new connection
 * it is refused, unless closing connections hold what it lacks: then it waits
 * in the listen queue until their close callbacks (see admit); when the budget
 * cannot take a job, the request is answered 503 from static text, which
 * needs nothing. The only allocations outside the budget are the few bytes of
 * a refused connection's handle, freed on the next loop iteration.
 *
 * Answers the loop can give from the request alone (400, 404, 405, 411, 413,
 * 431, 503) it gives at once. A probe, /metrics or handler request becomes a
 * job (a copy of what the answer needs, and for /metrics the bearer token)
 * queued to the worker (worker.c), which posts the answer back to
 * kcr__conn_job_done. job->conn is a loop-thread field, cleared when the
 * connection goes away first, and a reply whose connection is gone is dropped.
 *
 * TLS (options.tls) runs here too, with OpenSSL over two memory BIOs: uv_read
 * hands ciphertext to the read BIO (conn->cbuf, one record's worth, is what
 * libuv reads into), SSL_read decrypts into the same head buffer plain HTTP
 * uses, and whatever OpenSSL writes (handshake messages, alerts, encrypted
 * replies) is drained from the write BIO into a chunk handed to uv_write.
 * OpenSSL never touches the socket, so no call can block and no WANT_WRITE
 * exists: the loop stays the only I/O thread, with the same timers, shedding
 * and budget (the header timeout covers the handshake, so a client that
 * stalls it is cut like a slowloris). A reply is encrypted TLS_SEGMENT bytes
 * at a time, the next piece once the last is written, so a big /metrics body
 * is not held twice. Per connection OpenSSL holds its SSL object, charged to
 * the budget as TLS_SSL_COST; a connection keeps the context it was accepted
 * with.
 *
 * A connection frees itself when both of its handles' close callbacks have
 * run (libuv's rule: memory is reused only after close_cb).
 */
#include <assert.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <uv.h>

#include "kcr/error.h"
#include "kcr/server.h"
#include "server/conn_internal.h"
#include "server/http1_internal.h"
#include "server/server_internal.h"
#include "util/alloc.h"

/* POST_OVERHEAD: kcr_loop_post's queue node for a job's reply, with malloc's
 * overhead. */
#define POST_OVERHEAD ((size_t)64)
/* TLS_SEGMENT: a reply is encrypted this many plaintext bytes at a time, each
 * piece written before the next is made, so a large /metrics body is not held
 * twice. */
#define TLS_SEGMENT ((size_t)64 * 1024)

/* ---- connection lifetime ---- */

void kcr__conn_maybe_stop_done(kcr_server_t *s) {
  if (s->stopping && !s->listener_open && !s->tick_open && s->nconns == 0) {
    pthread_mutex_lock(&s->mu);
    s->stop_done = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
  }
}

static void admit(kcr_server_t *s);

void kcr__conn_free(conn_t *c) {
  kcr_server_t *s = c->srv;
  SSL_free(c->ssl); /* frees its BIOs */
  if (c->pending)
    kcr__job_free(c->pending);
  if (c->body) {
    kcr__free(c->body);
    uncharge(s, c->body_cap);
  }
  kcr__free(c);
  uncharge(s, s->conn_size);
}

static void conn_unlink_free(conn_t *c) {
  kcr_server_t *s = c->srv;
  kcr__list_remove(&s->conns, &c->link);
  s->nconns--;
  if (c->job)
    c->job->conn = NULL; /* the worker's reply will be dropped */
  kcr__conn_free(c);
  /* Its memory is back: the connection waiting in the listen queue for it
   * may be admitted now. */
  if (s->accept_waiting && s->listener_open && !s->stopping)
    admit(s);
  kcr__conn_maybe_stop_done(s);
}

static void on_conn_handle_closed(uv_handle_t *h) {
  conn_t *c = h->data;
  if (--c->open_handles == 0)
    conn_unlink_free(c);
}

void kcr__conn_close(conn_t *c) {
  /* The loop's shutdown may have closed the handles already (write callbacks
   * then run with UV_ECANCELED). */
  if (c->closing || uv_is_closing((uv_handle_t *)&c->tcp))
    return;
  c->closing = 1;
  c->srv->nactive--;
  uv_timer_stop(&c->timer);
  uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
  uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
}

static void on_timer(uv_timer_t *t) {
  conn_t *c = t->data;
  if (c->reading_head)
    atomic_fetch_add(&c->srv->st_timeouts, 1);
  kcr__conn_close(c);
}

static void arm_timer(conn_t *c, uint64_t ms) {
  uv_timer_start(&c->timer, on_timer, ms, 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out);
static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);
static void process(conn_t *c);

static void read_start(conn_t *c) {
  if (c->reading || c->closing)
    return;
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
    kcr__conn_close(c);
    return;
  }
  c->reading = 1;
}

static void read_stop(conn_t *c) {
  if (c->reading)
    uv_read_stop((uv_stream_t *)&c->tcp);
  c->reading = 0;
}

/* ---- answers ---- */

static void tls_pump(conn_t *c);
static int tls_send_more(conn_t *c);

/* reply_done: a reply has been written (status 0) or could not be. */
static void reply_done(conn_t *c, int status) {
  kcr_server_t *s = c->srv;
  if (c->body) {
    kcr__free(c->body);
    uncharge(s, c->body_cap);
    c->body = NULL;
    c->body_cap = 0;
  }
  c->busy = 0;
  if (status < 0 || c->close_after || c->closing) {
    kcr__conn_close(c);
    return;
  }
  /* The reply is out: the next request may be parsed, then read. */
  memmove(c->buf, c->buf + c->head_len, c->len - c->head_len);
  c->len -= c->head_len;
  c->head_len = 0;
  c->reading_head = c->len > 0;
  c->heard = c->reading_head;
  c->since = uv_now(c->tcp.loop);
  arm_timer(c, c->reading_head ? s->header_timeout_ms : s->idle_timeout_ms);
  process(c);
  /* With TLS, records already received may hold the next request. */
  if (!c->busy && c->ssl)
    tls_pump(c);
  if (!c->busy)
    read_start(c);
}

static void on_write(uv_write_t *req, int status) {
  reply_done(req->data, status);
}

/*
 * send_reply writes one answer on c: body (body_len bytes) is static text, or
 * owned (then it is c's, charged owned_cap, freed once written). The connection
 * is busy until on_write. Loop thread.
 */
static void send_reply(conn_t *c, int status, const char *content_type, const char *extra,
                       const char *body, size_t body_len, char *owned, size_t owned_cap,
                       int head_only, int close_after) {
  kcr_server_t *s = c->srv;
  uv_buf_t bufs[2];
  int n;

  assert(!c->body);
  atomic_fetch_add(&s->st_requests, 1);
  c->busy = 1;
  c->since = uv_now(c->tcp.loop);
  c->close_after = close_after;
  c->body = owned;
  c->body_cap = owned_cap;
  read_stop(c);
  n = snprintf(c->reply_head, sizeof(c->reply_head),
               "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
               "X-Content-Type-Options: nosniff\r\n%s%s\r\n",
               status, kcr__http_reason(status), content_type, body_len, extra ? extra : "",
               close_after ? "Connection: close\r\n" : "");
  assert(n > 0 && (size_t)n < sizeof(c->reply_head));
  if (c->ssl) {
    c->out_ptr[0] = c->reply_head;
    c->out_len[0] = (size_t)n;
    c->out_ptr[1] = body;
    c->out_len[1] = head_only ? 0 : body_len;
    c->out_idx = 0;
    c->out_off = 0;
    if (tls_send_more(c) != 0) {
      kcr__conn_close(c);
      return;
    }
    arm_timer(c, s->idle_timeout_ms);
    return;
  }
  bufs[0] = uv_buf_init(c->reply_head, (unsigned)n);
  bufs[1] = uv_buf_init((char *)body, (unsigned)body_len);
  c->wreq.data = c;
  if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, head_only || !body_len ? 1 : 2, on_write) !=
      0) {
    if (c->body) {
      kcr__free(c->body);
      uncharge(s, c->body_cap);
      c->body = NULL;
    }
    kcr__conn_close(c);
    return;
  }
  /* A client that does not read its reply is cut off like an idle one. */
  arm_timer(c, s->idle_timeout_ms);
}

static void respond_text(conn_t *c, int status, const char *text, int head_only, int close_after) {
  send_reply(c, status, TEXT_PLAIN, NULL, text, strlen(text), NULL, 0, head_only, close_after);
}

/* ---- TLS on the loop: memory BIOs around the TCP stream ---- */

static void got_plain(conn_t *c, size_t n);
static void got_body(conn_t *c, size_t n);

static void on_tls_written(uv_write_t *req, int status) {
  tls_chunk *ch = req->data;
  conn_t *c = ch->c;
  int kind = ch->kind;
  uncharge(c->srv, ch->charged);
  kcr__free(ch);
  if (kind == CHUNK_CLOSE) {
    kcr__conn_close(c);
  } else if (status < 0) {
    if (kind == CHUNK_PLAIN)
      kcr__conn_close(c);
    else
      reply_done(c, status);
  } else if (kind == CHUNK_MORE) {
    if (!c->closing && tls_send_more(c) != 0)
      reply_done(c, KCR_ENOMEM);
  } else if (kind == CHUNK_DONE) {
    reply_done(c, 0);
  }
}

/*
 * tls_flush writes out what OpenSSL has put in the write BIO, as one chunk of
 * the given kind (charged to the budget while in flight). uv_write keeps the
 * order, and the BIO is always drained whole, so the bytes reach the peer in
 * the order OpenSSL made them. Returns 0, or -1 (the caller closes). Loop thread.
 */
static int tls_flush(conn_t *c, int kind) {
  kcr_server_t *s = c->srv;
  size_t n = BIO_ctrl_pending(c->wbio), size;
  tls_chunk *ch;
  uv_buf_t b;
  if (n == 0 && kind == CHUNK_PLAIN)
    return 0;
  if (n == 0 && kind == CHUNK_CLOSE) {
    kcr__conn_close(c);
    return 0;
  }
  size = sizeof(*ch) + n;
  if (!charge(s, size))
    return -1;
  ch = kcr__malloc(size);
  if (!ch) {
    uncharge(s, size);
    return -1;
  }
  ch->c = c;
  ch->kind = kind;
  ch->charged = size;
  ch->req.data = ch;
  if (n > 0 && BIO_read(c->wbio, ch->data, (int)n) != (int)n) {
    kcr__free(ch);
    uncharge(s, size);
    return -1;
  }
  b = uv_buf_init(ch->data, (unsigned)n);
  if (uv_write(&ch->req, (uv_stream_t *)&c->tcp, &b, 1, on_tls_written) != 0) {
    kcr__free(ch);
    uncharge(s, size);
    return -1;
  }
  return 0;
}

/* tls_send_more encrypts the next TLS_SEGMENT bytes of the reply and writes
 * them; the chunk's completion asks for more. 0 or -1. Loop thread. */
static int tls_send_more(conn_t *c) {
  size_t budget = TLS_SEGMENT;
  while (c->out_idx < 2 && budget > 0) {
    size_t left = c->out_len[c->out_idx] - c->out_off, n;
    int r;
    if (left == 0) {
      c->out_idx++;
      c->out_off = 0;
      continue;
    }
    n = left < budget ? left : budget;
    r = SSL_write(c->ssl, c->out_ptr[c->out_idx] + c->out_off, (int)n);
    if (r <= 0) {
      ERR_clear_error();
      return -1;
    }
    c->out_off += (size_t)r;
    budget -= (size_t)r;
  }
  while (c->out_idx < 2 && c->out_off == c->out_len[c->out_idx]) {
    c->out_idx++;
    c->out_off = 0;
  }
  return tls_flush(c, c->out_idx >= 2 ? CHUNK_DONE : CHUNK_MORE);
}

/*
 * tls_pump decrypts what the read BIO holds into the head buffer and hands it
 * to the parser, until OpenSSL wants more ciphertext or the connection is
 * answering a request (what is left stays in the BIO; reading has stopped, so
 * it holds at most one read's worth). SSL_read also runs the handshake; its
 * messages, and a fatal alert before closing, are flushed here. Loop thread.
 */
static void tls_pump(conn_t *c) {
  kcr_server_t *s = c->srv;
  while (!c->closing && !c->busy) {
    job_t *pj = c->pending;
    size_t room = pj ? pj->req_len - pj->req_got : s->max_header + 1 - c->len;
    int r = SSL_read(c->ssl, pj ? pj->req_body + pj->req_got : c->buf + c->len, (int)room);
    int e;
    if (r > 0) {
      if (pj)
        got_body(c, (size_t)r);
      else
        got_plain(c, (size_t)r);
      continue;
    }
    e = SSL_get_error(c->ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ)
      break;
    /* SSL_ERROR_ZERO_RETURN is the peer's close_notify; anything else is fatal. */
    if (e != SSL_ERROR_ZERO_RETURN && !SSL_is_init_finished(c->ssl))
      atomic_fetch_add(&s->st_tls_errors, 1);
    if (tls_flush(c, CHUNK_CLOSE) != 0)
      kcr__conn_close(c);
    return;
  }
  if (!c->closing && tls_flush(c, CHUNK_PLAIN) != 0)
    kcr__conn_close(c);
}

/* ---- jobs: the hand-off to the worker ---- */

void kcr__job_free(job_t *j) {
  kcr_server_t *s = j->srv;
  if (j->req_body) {
    kcr__free(j->req_body);
    uncharge(s, j->req_charged);
  }
  if (j->owned) {
    kcr__free(j->owned);
    uncharge(s, j->owned_cap);
  }
  kcr__free(j->htoken);
  uncharge(s, j->charged);
  kcr__free(j);
}

/* kcr__conn_job_done: the loop thread, with the answer the worker made. */
void kcr__conn_job_done(kcr_loop_t *loop, void *data) {
  job_t *j = data;
  conn_t *c = j->conn;
  (void)loop;
  if (!c || c->closing) {
    if (c)
      c->job = NULL;
    kcr__job_free(j);
    return;
  }
  c->job = NULL;
  send_reply(c, j->status, j->content_type, NULL, j->body, j->body_len, j->owned, j->owned_cap,
             j->head_only, c->close_after);
  j->owned = NULL; /* c has it now */
  kcr__job_free(j);
}

/* make_job allocates a job (charged) holding copies of a, b and t[0..tl) (each
 * NUL-terminated, NULL kept as NULL) at *pa, *pb, *pt. NULL when the budget or
 * malloc refuses. Loop thread. */
static job_t *make_job(conn_t *c, int what, const char *a, const char *b, const char *t, size_t tl,
                       const char **pa, const char **pb, const char **pt) {
  kcr_server_t *s = c->srv;
  size_t al = a ? strlen(a) + 1 : 0, bl = b ? strlen(b) + 1 : 0, tn = t ? tl + 1 : 0;
  size_t size = sizeof(job_t) + al + bl + tn;
  job_t *j;
  if (!charge(s, size + POST_OVERHEAD))
    return NULL;
  j = kcr__calloc(1, size);
  if (!j) {
    uncharge(s, size + POST_OVERHEAD);
    return NULL;
  }
  j->srv = s;
  j->conn = c;
  j->charged = size + POST_OVERHEAD;
  j->what = what;
  if (a) {
    memcpy(j->text, a, al);
    *pa = j->text;
  }
  if (b) {
    memcpy(j->text + al, b, bl);
    *pb = j->text + al;
  }
  if (t) {
    memcpy(j->text + al + bl, t, tl);
    j->text[al + bl + tl] = '\0';
    *pt = j->text + al + bl;
  }
  return j;
}

static void queue_job(conn_t *c, job_t *j, int close_after);

/* submit hands a probe or metrics request to the worker; the connection is busy
 * until the answer is back and written. 0, or KCR_ENOMEM when the budget or
 * malloc refuses. Loop thread. */
static int submit(conn_t *c, int what, kcr_probe_kind kind, const char *kindname, const char *sub,
                  const char *query, const char *token, size_t token_len, int head_only,
                  int close_after) {
  job_t *j;
  const char *unused = NULL;
  j = what == JOB_METRICS
          ? make_job(c, what, NULL, NULL, token, token_len, &unused, &unused, &unused)
          : make_job(c, what, sub, query, NULL, 0, &unused, &unused, &unused);
  if (!j)
    return KCR_ENOMEM;
  j->kind = kind;
  j->kindname = kindname;
  j->head_only = head_only;
  if (what == JOB_METRICS) {
    j->token = unused;
  } else {
    size_t sl = sub ? strlen(sub) + 1 : 0;
    j->sub = sub ? j->text : NULL;
    j->query = query ? j->text + sl : NULL;
  }
  queue_job(c, j, close_after);
  return 0;
}

/* queue_job hands j to the worker; c is busy until the answer is written. */
static void queue_job(conn_t *c, job_t *j, int close_after) {
  kcr_server_t *s = c->srv;
  c->job = j;
  c->busy = 1;
  c->close_after = close_after;
  read_stop(c);
  /* The worker's answer and its write share the idle timeout. */
  c->reading_head = 0;
  arm_timer(c, s->idle_timeout_ms);
  pthread_mutex_lock(&s->jobs_mu);
  kcr__list_push_back(&s->jobs, &j->link);
  pthread_cond_signal(&s->jobs_cond);
  pthread_mutex_unlock(&s->jobs_mu);
}

/* got_body: n more bytes of the pending handler request's body arrived. */
static void got_body(conn_t *c, size_t n) {
  job_t *j = c->pending;
  j->req_got += n;
  if (j->req_got == j->req_len) {
    c->pending = NULL;
    j->req_body[j->req_len] = '\0';
    queue_job(c, j, c->close_after);
  }
}

/* attach_token copies the request's bearer token (if any) into j->htoken,
 * charged to the budget with the job. 0, or KCR_ENOMEM. Loop thread. */
static int attach_token(job_t *j, const char *head, size_t head_len) {
  size_t tl = 0;
  const char *t = kcr__http_bearer_token(head, head_len, &tl);
  if (!t)
    return 0;
  if (!charge(j->srv, tl + 1))
    return KCR_ENOMEM;
  j->htoken = kcr__malloc(tl + 1);
  if (!j->htoken) {
    uncharge(j->srv, tl + 1);
    return KCR_ENOMEM;
  }
  memcpy(j->htoken, t, tl);
  j->htoken[tl] = '\0';
  j->charged += tl + 1;
  return 0;
}

/*
 * start_handler begins a request for options.handler: refuses a body it cannot
 * take, else makes the job, takes what of the body is already buffered behind
 * the head and reads the rest into the job's own buffer (the connection is not
 * busy meanwhile, so the timer, shedding and close work as for a head). Loop
 * thread.
 */
static void start_handler(conn_t *c, const kcr__http_head *h, size_t head_len) {
  kcr_server_t *s = c->srv;
  const char *m = NULL, *p = NULL, *q = NULL;
  size_t cl, take;
  job_t *j;
  if (h->chunked) {
    respond_text(c, 411, "411 Length Required\n", h->head_only, 1);
    return;
  }
  if (h->content_length == -2) {
    respond_text(c, 400, "400 Bad Request\n", 0, 1);
    return;
  }
  cl = h->content_length > 0 ? (size_t)h->content_length : 0;
  if (cl > s->max_body) {
    respond_text(c, 413, "413 Content Too Large\n", h->head_only, 1);
    return;
  }
  j = make_job(c, JOB_HANDLER, h->method, h->target, h->query, h->query ? strlen(h->query) : 0, &m,
               &p, &q);
  if (j && cl > 0) {
    if (charge(s, cl + 1)) {
      j->req_body = kcr__malloc(cl + 1);
      if (!j->req_body)
        uncharge(s, cl + 1);
      else
        j->req_charged = cl + 1;
    }
    if (!j->req_body) {
      kcr__job_free(j);
      j = NULL;
    }
  }
  if (!j) {
    atomic_fetch_add(&s->st_busy, 1);
    respond_text(c, 503, BUSY_TEXT, h->head_only, 1);
    return;
  }
  if (s->handler_auth && attach_token(j, c->buf, head_len) != 0) {
    kcr__job_free(j);
    atomic_fetch_add(&s->st_busy, 1);
    respond_text(c, 503, BUSY_TEXT, h->head_only, 1);
    return;
  }
  j->method = m;
  j->path = p;
  j->query = q;
  j->head_only = h->head_only;
  j->req_len = cl;
  take = c->len - head_len < cl ? c->len - head_len : cl;
  if (take)
    memcpy(j->req_body, c->buf + head_len, take);
  c->head_len = head_len + take; /* consumed with the reply */
  c->close_after = !h->keep_alive;
  j->req_got = take;
  if (take == cl) {
    if (j->req_body)
      j->req_body[cl] = '\0';
    queue_job(c, j, c->close_after);
    return;
  }
  /* The rest of the body comes in within the idle timeout, trickled or not. */
  c->pending = j;
  c->reading_head = 0;
  arm_timer(c, s->idle_timeout_ms);
}

/* ---- requests: routing a parsed head ---- */

/* handle_head answers the request whose head is buf[0..head_len) (the blank line
 * included), or hands it to the worker; either way the connection is busy
 * afterwards, until on_write. */
static void handle_head(conn_t *c, size_t head_len) {
  kcr_server_t *s = c->srv;
  kcr__http_head h;
  const char *method = h.method, *path = h.target, *query;
  int head_only, close_after;

  if (kcr__http_parse_head(c->buf, head_len, &h) != 0) {
    respond_text(c, 400, "400 Bad Request\n", 0, 1);
    return;
  }
  query = h.query;
  head_only = h.head_only;
  close_after = h.close_after;
  {
    int is_healthz = s->probes && (strcmp(path, "/healthz") == 0 || strcmp(path, "/healthz/") == 0);
    int is_readyz = s->probes && (strcmp(path, "/readyz") == 0 || strcmp(path, "/readyz/") == 0);
    int is_sub = s->probes &&
                 (strncmp(path, "/healthz/", 9) == 0 || strncmp(path, "/readyz/", 8) == 0) &&
                 !is_healthz && !is_readyz;
    int is_metrics = s->metrics && strcmp(path, "/metrics") == 0;
    int rc;
    if (!is_healthz && !is_readyz && !is_sub && !is_metrics) {
      if (s->handler)
        start_handler(c, &h, head_len);
      else
        respond_text(c, 404, "404 page not found\n", head_only, close_after);
      return;
    }
    if (!head_only && strcmp(method, "GET") != 0) {
      send_reply(c, 405, TEXT_PLAIN, "Allow: GET, HEAD\r\n", "405 method not allowed\n", 23, NULL,
                 0, 0, close_after);
      return;
    }
    if (is_metrics) {
      size_t tl = 0;
      const char *token = s->auth ? kcr__http_bearer_token(c->buf, head_len, &tl) : NULL;
      rc = submit(c, JOB_METRICS, 0, NULL, NULL, NULL, token, tl, head_only, close_after);
    } else if (is_healthz)
      rc = submit(c, JOB_PROBE, KCR_PROBE_HEALTHZ, "healthz", NULL, query, NULL, 0, head_only,
                  close_after);
    else if (is_readyz)
      rc = submit(c, JOB_PROBE, KCR_PROBE_READYZ, "readyz", NULL, query, NULL, 0, head_only,
                  close_after);
    else if (path[1] == 'h')
      rc = submit(c, JOB_PROBE, KCR_PROBE_HEALTHZ, "healthz", path + 9, query, NULL, 0, head_only,
                  close_after);
    else
      rc = submit(c, JOB_PROBE, KCR_PROBE_READYZ, "readyz", path + 8, query, NULL, 0, head_only,
                  close_after);
    if (rc != 0) {
      atomic_fetch_add(&s->st_busy, 1);
      respond_text(c, 503, BUSY_TEXT, head_only, close_after);
    }
  }
}

/* process parses the next complete request in c's buffer, if any, and starts
 * answering it (the connection is busy until the reply is written). */
static void process(conn_t *c) {
  size_t head_len;
  if (c->closing || c->busy || c->len == 0)
    return;
  head_len = kcr__http_head_end(c->buf, c->len);
  if (head_len == 0) {
    if (c->len >= c->srv->max_header) {
      atomic_fetch_add(&c->srv->st_too_large, 1);
      c->head_len = c->len;
      respond_text(c, 431, "431 Request Header Fields Too Large\n", 0, 1);
    }
    return;
  }
  c->head_len = head_len;
  handle_head(c, head_len);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out) {
  conn_t *c = h->data;
  size_t room = c->srv->max_header - c->len;
  (void)suggested;
  if (c->ssl) {
    *out = uv_buf_init(c->cbuf, (unsigned)TLS_CBUF);
    return;
  }
  if (c->pending) {
    job_t *j = c->pending;
    *out = uv_buf_init(j->req_body + j->req_got, (unsigned)(j->req_len - j->req_got));
    return;
  }
  /* The buffer is one byte larger than max_header, so room is never zero. */
  *out = uv_buf_init(c->buf + c->len, (unsigned)(room + 1));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
  conn_t *c = st->data;
  (void)buf;
  if (n < 0) {
    kcr__conn_close(c);
    return;
  }
  if (n == 0 || c->closing)
    return;
  c->heard = 1;
  c->bytes_in += (uint64_t)n;
  if (c->ssl) {
    if (BIO_write(c->rbio, c->cbuf, (int)n) != (int)n) {
      ERR_clear_error();
      kcr__conn_close(c);
      return;
    }
    tls_pump(c);
    return;
  }
  if (c->pending)
    got_body(c, (size_t)n);
  else
    got_plain(c, (size_t)n);
}

/* got_plain: n bytes of request arrived at buf + len. */
static void got_plain(conn_t *c, size_t n) {
  if (!c->reading_head) {
    c->reading_head = 1;
    c->since = uv_now(c->tcp.loop);
    arm_timer(c, c->srv->header_timeout_ms);
  }
  c->len += n;
  process(c);
}

/* ---- accepting ---- */

static void on_refused_closed(uv_handle_t *h) {
  kcr_server_t *s = h->data;
  kcr__free(h);
  uncharge(s, sizeof(uv_tcp_t));
}

/* refuse accepts the pending connection only to close it at once. */
static void refuse(kcr_server_t *s, uv_stream_t *l) {
  uv_tcp_t *t;
  atomic_fetch_add(&s->st_rejected, 1);
  charge_anyway(s, sizeof(*t));
  t = kcr__malloc(sizeof(*t));
  if (!t || uv_tcp_init(l->loop, t) != 0) {
    kcr__free(t);
    uncharge(s, sizeof(*t));
    return;
  }
  t->data = s;
  (void)uv_accept(l, (uv_stream_t *)t);
  uv_close((uv_handle_t *)t, on_refused_closed);
}

/*
 * sent_bytes: what c has sent since accept, counting bytes that have arrived
 * but not been read yet. A connection accepted a moment ago has often sent
 * its whole request already, still in the socket: it is a client waiting for
 * the server, not an idle one. Only asked of connections with nothing read.
 */
static uint64_t sent_bytes(const conn_t *c) {
  uv_os_fd_t fd;
  int pending = 0;
  if (c->bytes_in > 0)
    return c->bytes_in;
  if (uv_fileno((const uv_handle_t *)&c->tcp, &fd) != 0 || ioctl(fd, FIONREAD, &pending) != 0 ||
      pending < 0)
    return 0;
  return (uint64_t)pending;
}

/* peer_hash: a hash of t's peer address, port left out (FNV-1a over the
 * address bytes); 0 when it cannot be read. */
static uint64_t peer_hash(uv_tcp_t *t) {
  struct sockaddr_storage ss;
  int len = (int)sizeof(ss);
  const unsigned char *p;
  size_t n;
  uint64_t h = 1469598103934665603ULL;
  if (uv_tcp_getpeername(t, (struct sockaddr *)&ss, &len) != 0)
    return 0;
  if (ss.ss_family == AF_INET) {
    p = (const unsigned char *)&((struct sockaddr_in *)&ss)->sin_addr;
    n = sizeof(struct in_addr);
  } else if (ss.ss_family == AF_INET6) {
    p = (const unsigned char *)&((struct sockaddr_in6 *)&ss)->sin6_addr;
    n = sizeof(struct in6_addr);
  } else {
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ULL;
  return h ? h : 1;
}

/* PEER_SLOTS: the table shed_one counts connections per peer in; peers past
 * it count as holding one connection. */
#define PEER_SLOTS 256

typedef struct peer_count {
  uint64_t peer;
  int n;
} peer_count;

/* peer_slot finds (or makes) peer's slot in tab; NULL when tab is full. */
static peer_count *peer_slot(peer_count *tab, uint64_t peer) {
  size_t i = (size_t)(peer % PEER_SLOTS);
  for (size_t k = 0; k < PEER_SLOTS; k++, i = (i + 1) % PEER_SLOTS) {
    if (tab[i].peer == peer || tab[i].peer == 0) {
      tab[i].peer = peer;
      return &tab[i];
    }
  }
  return NULL;
}

/*
 * shed_one closes the connection least worth keeping so that a new one can be
 * admitted; returns 0 when none may go. A connection whose request is with
 * the worker is never shed: the server, not the client, owes it progress.
 * Of the others, in order:
 *   1. the group: connections accepted in this loop iteration go only after
 *      every other (in a burst of reconnects accepted in one batch, the probe
 *      accepted among them has not been read yet), and connections not
 *      reading their reply after those. admit bounds how many may shed in
 *      one iteration, so that a batch larger than the server cannot make
 *      the older connections it spares the only candidates left;
 *   2. the peer: a connection from the address holding the most connections
 *      goes first, so a flood from one address is shed before the kubelet's
 *      probe or a Prometheus, which hold one or two each;
 *   3. the rate: the fewest bytes since accept (with what waits unread in its
 *      socket), plus one, over the milliseconds since accept, plus one. That
 *      puts a slowloris, which trickles a byte now and then, and a holder,
 *      which sends nothing, before a client that sent its request at once,
 *      and before a kept-alive client that has made requests;
 *   4. the age: oldest first.
 * Bounded by max_connections (two passes over the connections). Loop thread.
 */
static int shed_one(kcr_server_t *s) {
  peer_count tab[PEER_SLOTS];
  conn_t *victim = NULL;
  uint64_t now = uv_now(s->listener.loop);
  int victim_group = 3, victim_same = 0;
  double victim_rate = 0;
  memset(tab, 0, sizeof(tab));
  KCR__LIST_EACH(&s->conns, conn_t, link, c) {
    peer_count *pc;
    if (!c->closing && c->peer && (pc = peer_slot(tab, c->peer)))
      pc->n++;
  }
  KCR__LIST_EACH(&s->conns, conn_t, link, c) {
    peer_count *pc;
    int group, same;
    double rate;
    if (c->closing || c->job)
      continue;
    group = c->busy ? 2 : c->accepted_iter == s->iter ? 1 : 0;
    if (group > victim_group)
      continue;
    pc = c->peer ? peer_slot(tab, c->peer) : NULL;
    same = pc ? pc->n : 1;
    if (group == victim_group && same < victim_same)
      continue;
    /* Every connection is credited one byte at accept: a client that has not
     * had the time to send yet is not taken for one that sends nothing. */
    rate = (double)(sent_bytes(c) + 1) / (double)(now - c->accepted + 1);
    /* The list runs newest first: on a tie the later one is the older. */
    if (group < victim_group || same > victim_same || rate < victim_rate ||
        (rate == victim_rate && c->accepted <= victim->accepted)) {
      victim = c;
      victim_group = group;
      victim_same = same;
      victim_rate = rate;
    }
  }
  if (!victim)
    return 0;
  atomic_fetch_add(&s->st_shed, 1);
  kcr__conn_close(victim);
  return 1;
}

/*
 * admit takes the connection waiting in the listener's queue. A full server
 * sheds one to make room: the probe that just connected is worth more than a
 * connection that has sent nothing for seconds. When the budget cannot take
 * it only because connections already closing still hold their memory (a
 * burst of sheds frees it at the end of this loop iteration, in the close
 * callbacks), the connection is not refused but left in the queue: libuv
 * stops watching the listener until uv_accept, and conn_unlink_free admits
 * it once that memory is back. Only a budget spent on live connections
 * refuses.
 *
 * At most half the connections may be shed for newcomers in one loop
 * iteration (iter_sheds); the next newcomer then waits in the listen queue
 * until the next iteration (kcr__conn_on_tick). Without the bound, a flood
 * of reconnects accepted in one batch larger than the server sheds every
 * connection older than the batch, whatever their rank: each shed leaves
 * one fewer candidate outside the batch, and the last candidate left is
 * the probe that had sent its whole request. With it, half the server
 * turns over per iteration at most, and the lowest-ranked half goes.
 * Loop thread.
 */
static void admit(kcr_server_t *s) {
  uv_stream_t *l = (uv_stream_t *)&s->listener;
  conn_t *c;
  s->accept_waiting = 0;
  s->accept_paused = 0;
  if (s->nactive >= s->max_conns) {
    if (s->iter_sheds >= (s->max_conns + 1) / 2) {
      s->accept_paused = 1; /* libuv stops watching the listener until uv_accept */
      return;
    }
    if (!shed_one(s)) {
      refuse(s, l);
      return;
    }
    s->iter_sheds++;
  }
  if (!charge(s, s->conn_size)) {
    if (s->nconns > s->nactive) {
      s->accept_waiting = 1;
      atomic_fetch_add(&s->st_accept_waits, 1);
      return;
    }
    refuse(s, l);
    return;
  }
  c = kcr__calloc(1, s->conn_alloc);
  if (!c) {
    uncharge(s, s->conn_size);
    refuse(s, l);
    return;
  }
  c->srv = s;
  if (s->tls) {
    pthread_mutex_lock(&s->ctx_mu);
    c->ssl = SSL_new(s->ctx); /* takes its own reference to the context */
    pthread_mutex_unlock(&s->ctx_mu);
    c->rbio = BIO_new(BIO_s_mem());
    c->wbio = BIO_new(BIO_s_mem());
    if (!c->ssl || !c->rbio || !c->wbio) {
      BIO_free(c->rbio);
      BIO_free(c->wbio);
      c->rbio = c->wbio = NULL;
      ERR_clear_error();
      kcr__conn_free(c);
      refuse(s, l);
      return;
    }
    /* An empty read BIO means "wait for more", not end of file. */
    BIO_set_mem_eof_return(c->rbio, -1);
    SSL_set_bio(c->ssl, c->rbio, c->wbio);
    SSL_set_accept_state(c->ssl);
    c->cbuf = c->buf + s->max_header + 1;
  }
  if (uv_tcp_init(l->loop, &c->tcp) != 0) {
    kcr__conn_free(c);
    refuse(s, l);
    return;
  }
  c->tcp.data = c;
  kcr__list_push_front(&s->conns, &c->link);
  s->nconns++;
  s->nactive++;
  c->since = c->accepted = uv_now(l->loop);
  c->accepted_iter = s->iter;
  uv_timer_init(l->loop, &c->timer);
  c->timer.data = c;
  c->open_handles = 2;
  atomic_fetch_add(&s->st_connections, 1);
  if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0) {
    kcr__conn_close(c);
    return;
  }
  c->peer = peer_hash(&c->tcp);
  read_start(c);
  /* Nothing sent yet counts as reading a head: the header timeout applies. */
  c->reading_head = 1;
  arm_timer(c, s->header_timeout_ms);
}

void kcr__conn_on_tick(uv_prepare_t *p) {
  kcr_server_t *s = p->data;
  s->iter++;
  s->iter_sheds = 0;
  if (s->accept_paused && s->listener_open && !s->stopping)
    admit(s);
}

void kcr__conn_on_connection(uv_stream_t *l, int status) {
  kcr_server_t *s = l->data;
  if (status < 0)
    return;
  admit(s);
}
