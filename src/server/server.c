/* SPDX-License-Identifier: MIT */
/*
 * server.c: the server layer, the probes and metrics HTTP server (kcr/server.h):
 * its sockets on the I/O loop, its answers on a worker thread of its own.
 *
 * DESIGN. Everything with a uv handle runs on the loop thread: create and
 * destroy post a closure and wait on a condition variable for its outcome. A
 * connection is one allocation: a uv_tcp_t, a uv_timer_t, the uv_write_t of its
 * one reply in flight, and a fixed head buffer of max_header_bytes that bytes
 * are read straight into. The timer enforces the header timeout from a request's
 * first byte (a slowloris client trickling one byte a second is cut off when it
 * fires, however steady its trickle), the idle timeout between kept-alive
 * requests, and the time a reply may take to be answered and written. Requests
 * with a body are answered and the connection closed, since no endpoint takes one.
 *
 * One request at a time per connection. Once a request's head is complete the
 * connection stops reading (uv_read_stop) until its reply has been written (the
 * uv_write callback), then parses what it had already buffered and reads again.
 * A client that pipelines requests and never reads the replies therefore fills
 * its own socket buffers in the kernel, not our memory: the server holds at most
 * one reply per connection.
 *
 * Memory is a budget. Every allocation made for clients is charged to `held`
 * before it is made and released when freed: a connection (its struct and head
 * buffer), a job and the loop's queue node that posts its reply back, and a
 * reply body (charged at its maximum before rendering, trimmed to its actual
 * capacity after). When the budget (max_buffered_bytes) cannot take a new
 * connection it is refused, unless closing connections hold what it lacks:
 * then it waits in the listen queue until their close callbacks (see admit);
 * when the budget cannot take a job or a body, the request is
 * answered 503 from static text, which needs nothing. So `held` never exceeds
 * max_buffered_bytes (the bound kcr/server.h states); the only allocations
 * outside it are the few bytes of a refused connection's handle, freed on the
 * next loop iteration.
 *
 * The loop only parses requests and writes replies: it never runs user code.
 * Answers it can give from the request alone (400, 404, 405, 431, 503) it gives
 * at once. A probe or /metrics request becomes a job (a copy of what the answer
 * needs) queued to the server's worker thread, which runs the checks or renders
 * the registry (calling its collectors), builds the reply body and posts it back
 * with kcr_loop_post; the loop writes it. The worker never touches a
 * connection: job->conn is a loop-thread field, cleared when the connection goes
 * away first, and a reply whose connection is gone is dropped. A slow check
 * therefore delays only the probes queued behind it, never the loop
 * (test_server_slow_check_does_not_block_loop).
 *
 * TLS (options.tls) runs on the loop thread too, with OpenSSL over two memory
 * BIOs: uv_read hands ciphertext to the read BIO (conn->cbuf, one record's
 * worth, is what libuv reads into), SSL_read decrypts into the same head buffer
 * plain HTTP uses, and whatever OpenSSL writes (handshake messages, alerts,
 * encrypted replies) is drained from the write BIO into a chunk handed to
 * uv_write. OpenSSL never touches the socket, so no call can block and no
 * WANT_WRITE exists: the loop stays the only I/O thread, with the same timers,
 * shedding and budget (the header timeout covers the handshake, so a client
 * that stalls it is cut like a slowloris). A reply is encrypted TLS_SEGMENT
 * bytes at a time, the next piece once the last is written, so a big /metrics
 * body is not held twice. Per connection OpenSSL holds its SSL object, charged
 * to the budget as TLS_SSL_COST. The context (certificate) is swapped by the
 * worker when the watched files change (tls.c); a connection keeps the context
 * it was accepted with.
 *
 * /metrics may carry an auth hook (options.metrics_auth): the loop copies the
 * bearer token into the job, and the worker calls the hook before rendering,
 * so the TokenReview and SubjectAccessReview it may post never run on the loop.
 *
 * A connection frees itself when both of its handles' close callbacks have run
 * (libuv's rule: memory is reused only after close_cb). Checks live in a list
 * under checks_mu; the worker runs them with that lock held, which makes
 * kcr_server_remove_check a barrier. If the loop shuts down first, it closes our
 * handles without callbacks; destroy then joins the worker and frees the memory
 * directly.
 */
#include <assert.h>
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "kcr/clock.h"
#include "kcr/log.h"
#include "kcr/server.h"
#include "loop/loop_internal.h"
#include "server/server_internal.h"
#include "util/alloc.h"

#define MAX_CHECKS 64
/* A probe's verbose body: 65 lines of at most a 128-byte name and 20 more. */
#define PROBE_BODY_MAX ((size_t)16 * 1024)
/* kcr_loop_post's queue node for a job's reply, with malloc's overhead. */
#define POST_OVERHEAD ((size_t)64)
#define DEFAULT_MAX_BUFFERED ((size_t)16 * 1024 * 1024)
#define TEXT_PLAIN "text/plain; charset=utf-8"
/* A TLS connection reads ciphertext into a buffer of its own: one record. */
#define TLS_CBUF ((size_t)17 * 1024)
/* What OpenSSL holds for one connection (the SSL object, its record buffers
 * while in use), charged to the budget as an estimate: OpenSSL's allocations
 * do not go through ours. */
#define TLS_SSL_COST ((size_t)40 * 1024)
/* A reply is encrypted this many plaintext bytes at a time, each piece written
 * before the next is made, so a large /metrics body is not held twice. */
#define TLS_SEGMENT ((size_t)64 * 1024)
#define DEFAULT_CERT_POLL_NS (10 * KCR_NSEC_PER_SEC)

struct kcr_server_check {
  char *name;
  kcr_probe_kind kind;
  kcr_check_cb cb; /* NULL: a flag check */
  void *data;
  atomic_int flag;
  kcr_server_check_t *next; /* protected by checks_mu */
};

typedef struct job job_t;

/* conn: one client connection; every field is loop thread. */
typedef struct conn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_write_t wreq; /* the reply in flight, while busy */
  kcr_server_t *srv;
  struct conn *prev, *next;
  size_t len;      /* bytes in buf */
  size_t head_len; /* the head being answered; consumed once its reply is written */
  int open_handles;
  int closing;
  int reading;      /* uv_read_start is in effect */
  int reading_head; /* a request's first byte has arrived */
  int busy;         /* a request is being answered: its job is out or its reply unsent */
  int heard;        /* bytes arrived since `since` (TLS: handshake records count) */
  int close_after;  /* the reply in flight ends the connection */
  uint64_t since;   /* loop time its current state (idle, head, reply) began */
  job_t *job;       /* the request the worker is answering, or NULL */
  job_t *pending;   /* a handler request whose body is still being read, or NULL */
  char *body;       /* the reply's owned body, charged body_cap bytes; NULL: static */
  size_t body_cap;
  char reply_head[384];
  /* TLS (NULL ssl: plain HTTP). The reply being encrypted: out_ptr/out_len
   * are its head and body, out_idx/out_off how far SSL_write has got. */
  SSL *ssl;
  BIO *rbio, *wbio; /* memory BIOs, owned by ssl: ciphertext in and out */
  char *cbuf;       /* TLS_CBUF bytes after buf: what uv_read delivers */
  const char *out_ptr[2];
  size_t out_len[2];
  int out_idx;
  size_t out_off;
  char buf[]; /* max_header + 1 bytes, then TLS_CBUF with TLS */
} conn_t;

/* What a TLS write completes: handshake or alert bytes (PLAIN), a piece of a
 * reply with more to come (MORE), its last piece (DONE), or the last bytes
 * before closing (CLOSE: a fatal alert). */
enum { CHUNK_PLAIN, CHUNK_MORE, CHUNK_DONE, CHUNK_CLOSE };

/* tls_chunk: ciphertext drained from a connection's write BIO, in flight. */
typedef struct tls_chunk {
  uv_write_t req;
  conn_t *c;
  int kind;
  size_t charged;
  char data[];
} tls_chunk;

enum { JOB_PROBE, JOB_METRICS, JOB_HANDLER };

/*
 * job: one request for the worker, with copies of what the answer needs. The
 * loop fills and queues it; the worker sets the answer and posts it back; the
 * loop sends and frees it. Only the loop reads or writes conn.
 */
struct job {
  job_t *next; /* protected by jobs_mu while queued */
  kcr_server_t *srv;
  conn_t *conn; /* loop thread; NULL once the connection is gone */
  size_t charged;
  int what;
  kcr_probe_kind kind;
  const char *kindname; /* static */
  const char *sub;      /* into text, or NULL: one check by name */
  const char *query;    /* into text, or NULL */
  const char *token;    /* into text, or NULL: the bearer token */
  const char *method;   /* into text (JOB_HANDLER) */
  const char *path;     /* into text (JOB_HANDLER) */
  char *req_body;       /* JOB_HANDLER: req_len bytes and a NUL, charged req_charged */
  size_t req_len, req_got, req_charged;
  int head_only;
  /* The answer: the worker's, then the loop's after the post. */
  int status;
  const char *content_type; /* static */
  const char *body;         /* static text, or owned */
  size_t body_len;
  char *owned; /* body when allocated, charged owned_cap */
  size_t owned_cap;
  char text[]; /* sub NUL query NUL token NUL, or method NUL path NUL query NUL */
};

struct kcr_server {
  kcr_loop_t *loop;
  kcr_metrics_registry_t *metrics;
  int probes;
  size_t max_header;
  size_t conn_size;  /* what one connection is charged */
  size_t conn_alloc; /* what one connection allocates */
  size_t max_buffered;
  size_t max_reply; /* largest reply body */
  uint64_t header_timeout_ms;
  uint64_t idle_timeout_ms;
  int max_conns;
  struct sockaddr_storage addr;

  uv_tcp_t listener;  /* loop thread */
  int listener_open;  /* loop thread */
  conn_t *conns;      /* loop thread */
  int nconns;         /* loop thread: allocated, closing ones included */
  int nactive;        /* loop thread: not closing */
  int accept_waiting; /* loop thread: a connection waits in the listen queue for
                       * the memory of closing ones (see admit) */
  atomic_int port;

  pthread_mutex_t mu; /* for the create/destroy handshakes */
  pthread_cond_t cond;
  int start_done;      /* protected by mu */
  int start_rc;        /* protected by mu */
  char start_msg[160]; /* protected by mu */
  int stop_done;       /* protected by mu */
  int stopping;        /* loop thread */

  pthread_mutex_t checks_mu;
  kcr_server_check_t *checks; /* protected by checks_mu */

  pthread_t worker;
  int worker_started;
  pthread_mutex_t jobs_mu;
  pthread_cond_t jobs_cond;
  job_t *jobs_head, *jobs_tail; /* protected by jobs_mu */
  job_t *orphans;               /* protected by jobs_mu: answered, never sent */
  int jobs_stop;                /* protected by jobs_mu */

  /* TLS. ctx is swapped by the worker's reload, read by the loop at accept. */
  int tls;
  pthread_mutex_t ctx_mu;
  SSL_CTX *ctx;               /* protected by ctx_mu */
  char *cert_path, *key_path; /* NULL: self-signed, not watched */
  int64_t cert_poll_ns;
  int64_t next_poll;      /* worker thread */
  kcr__tls_stamp_t stamp; /* worker thread (create, before it starts) */
  kcr_metric_child_t *m_cert_reads, *m_cert_errors;
  kcr_server_auth_cb auth;
  void *auth_data;
  kcr_server_handler_cb handler;
  void *handler_data;
  size_t max_body;

  atomic_size_t held, held_peak; /* the budget: bytes allocated for clients */
  atomic_uint_fast64_t st_connections, st_rejected, st_requests, st_timeouts, st_too_large, st_busy,
      st_shed, st_tls_errors, st_accept_waits;
};

/* ---- the memory budget ---- */

static void note_peak(kcr_server_t *s, size_t now) {
  size_t peak = atomic_load(&s->held_peak);
  while (now > peak && !atomic_compare_exchange_weak(&s->held_peak, &peak, now))
    ;
}

/* charge reserves n bytes of the budget; 0 when they do not fit. Any thread. */
static int charge(kcr_server_t *s, size_t n) {
  size_t cur = atomic_load(&s->held);
  do {
    if (n > s->max_buffered || cur > s->max_buffered - n)
      return 0;
  } while (!atomic_compare_exchange_weak(&s->held, &cur, cur + n));
  note_peak(s, cur + n);
  return 1;
}

/* charge_anyway counts n bytes that must be spent (a refused connection's
 * handle, freed on the next iteration). */
static void charge_anyway(kcr_server_t *s, size_t n) {
  note_peak(s, atomic_fetch_add(&s->held, n) + n);
}

static void uncharge(kcr_server_t *s, size_t n) {
  size_t before = atomic_fetch_sub(&s->held, n);
  assert(before >= n);
  (void)before;
}

/* ---- connection lifetime ---- */

static void maybe_stop_done(kcr_server_t *s) {
  if (s->stopping && !s->listener_open && s->nconns == 0) {
    pthread_mutex_lock(&s->mu);
    s->stop_done = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
  }
}

static void job_free(job_t *j);
static void admit(kcr_server_t *s);

static void conn_free(conn_t *c) {
  kcr_server_t *s = c->srv;
  SSL_free(c->ssl); /* frees its BIOs */
  if (c->pending)
    job_free(c->pending);
  if (c->body) {
    kcr__free(c->body);
    uncharge(s, c->body_cap);
  }
  kcr__free(c);
  uncharge(s, s->conn_size);
}

static void conn_unlink_free(conn_t *c) {
  kcr_server_t *s = c->srv;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  s->nconns--;
  if (c->job)
    c->job->conn = NULL; /* the worker's reply will be dropped */
  conn_free(c);
  /* Its memory is back: the connection waiting in the listen queue for it
   * may be admitted now. */
  if (s->accept_waiting && s->listener_open && !s->stopping)
    admit(s);
  maybe_stop_done(s);
}

static void on_conn_handle_closed(uv_handle_t *h) {
  conn_t *c = h->data;
  if (--c->open_handles == 0)
    conn_unlink_free(c);
}

static void conn_close(conn_t *c) {
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
  conn_close(c);
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
    conn_close(c);
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

static const char *reason_phrase(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 411:
    return "Length Required";
  case 413:
    return "Content Too Large";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Unknown";
  }
}

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
    conn_close(c);
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
               status, reason_phrase(status), content_type, body_len, extra ? extra : "",
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
      conn_close(c);
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
    conn_close(c);
    return;
  }
  /* A client that does not read its reply is cut off like an idle one. */
  arm_timer(c, s->idle_timeout_ms);
}

static void respond_text(conn_t *c, int status, const char *text, int head_only, int close_after) {
  send_reply(c, status, TEXT_PLAIN, NULL, text, strlen(text), NULL, 0, head_only, close_after);
}

static const char busy_text[] = "503 server busy\n";

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
    conn_close(c);
  } else if (status < 0) {
    if (kind == CHUNK_PLAIN)
      conn_close(c);
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
    conn_close(c);
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
      conn_close(c);
    return;
  }
  if (!c->closing && tls_flush(c, CHUNK_PLAIN) != 0)
    conn_close(c);
}

/* ---- probes (the worker thread) ---- */

static void job_text(job_t *j, int status, const char *text) {
  j->status = status;
  j->content_type = TEXT_PLAIN;
  j->body = text;
  j->body_len = strlen(text);
}

/* job_take_body hands b's contents to j as its body; cap was charged for b. */
static void job_take_body(job_t *j, int status, const char *content_type, kcr_buf_t *b,
                          size_t charged) {
  kcr_server_t *s = j->srv;
  size_t cap = b->cap;
  assert(cap <= charged);
  j->owned = kcr_buf_take(b, &j->body_len);
  if (!j->owned) {
    uncharge(s, charged);
    job_text(j, 500, "500 out of memory\n");
    return;
  }
  if (cap == 0) /* kcr_buf_take allocated "" for an empty buffer */
    cap = 1;
  uncharge(s, charged - cap);
  j->owned_cap = cap;
  j->status = status;
  j->content_type = content_type;
  j->body = j->owned;
}

typedef struct part {
  const char *name;
  int healthy;
  int excluded;
} part_t;

static int cmp_part(const void *a, const void *b) {
  return strcmp(((const part_t *)a)->name, ((const part_t *)b)->name);
}

static int run_check(kcr_server_check_t *k) {
  if (!k->cb)
    return atomic_load(&k->flag) ? 0 : -1;
  return k->cb(k->data);
}

int kcr__http_query_has(const char *q, const char *key) {
  size_t kl = strlen(key);
  while (q && *q) {
    if (strncmp(q, key, kl) == 0 && (q[kl] == '\0' || q[kl] == '&' || q[kl] == '='))
      return 1;
    q = strchr(q, '&');
    if (q)
      q++;
  }
  return 0;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

int kcr__http_query_excludes(const char *q, const char *name) {
  char val[256];
  while (q && *q) {
    if (strncmp(q, "exclude=", 8) == 0) {
      size_t n = 0;
      const char *p = q + 8;
      while (*p && *p != '&' && n + 1 < sizeof(val)) {
        if (*p == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
          val[n++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
          p += 3;
        } else {
          val[n++] = *p == '+' ? ' ' : *p;
          p++;
        }
      }
      val[n] = '\0';
      if (*p && *p != '&') {
        /* Cut: the last name is a prefix of what was asked, so drop it. */
        char *comma = strrchr(val, ',');
        *(comma ? comma : val) = '\0';
      }
      for (char *save = NULL, *tok = strtok_r(val, ",", &save); tok;
           tok = strtok_r(NULL, ",", &save))
        if (strcmp(tok, name) == 0)
          return 1;
    }
    q = strchr(q, '&');
    if (q)
      q++;
  }
  return 0;
}

/* serve_probe answers a probe job: the worker thread, running user checks. */
static void serve_probe(job_t *j) {
  kcr_server_t *s = j->srv;
  kcr_probe_kind kind = j->kind;
  const char *kindname = j->kindname, *sub = j->sub, *query = j->query;
  part_t parts[MAX_CHECKS + 1];
  size_t n = 0;
  int failed = 0, verbose = kcr__http_query_has(query, "verbose"), rc = 0;
  kcr_buf_t b;

  pthread_mutex_lock(&s->checks_mu);
  if (sub) {
    int found = 0, ok = 1;
    if (strcmp(sub, "ping") == 0)
      found = 1;
    for (kcr_server_check_t *k = s->checks; k && !found; k = k->next) {
      if ((k->kind & kind) && strcmp(k->name, sub) == 0) {
        found = 1;
        ok = run_check(k) == 0;
      }
    }
    pthread_mutex_unlock(&s->checks_mu);
    if (!found)
      job_text(j, 404, "404 page not found\n");
    else if (ok)
      job_text(j, 200, "ok");
    else
      job_text(j, 500, "internal server error: check failed\n");
    return;
  }
  parts[n++] = (part_t){"ping", 1, kcr__http_query_excludes(query, "ping")};
  for (kcr_server_check_t *k = s->checks; k && n < MAX_CHECKS + 1; k = k->next) {
    if (!(k->kind & kind))
      continue;
    parts[n].name = k->name;
    parts[n].excluded = kcr__http_query_excludes(query, k->name);
    parts[n].healthy = parts[n].excluded || run_check(k) == 0;
    if (!parts[n].healthy) {
      failed = 1;
      kcr_log(KCR_LOG_DEBUG, "server", "%s check failed: %s", kindname, k->name);
    }
    n++;
  }
  qsort(parts, n, sizeof(parts[0]), cmp_part);
  if (!failed && !verbose) {
    pthread_mutex_unlock(&s->checks_mu);
    job_text(j, 200, "ok");
    return;
  }
  if (!charge(s, PROBE_BODY_MAX)) {
    pthread_mutex_unlock(&s->checks_mu);
    atomic_fetch_add(&s->st_busy, 1);
    job_text(j, 503, busy_text);
    return;
  }
  kcr_buf_init(&b, PROBE_BODY_MAX - 1);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (parts[i].excluded)
      rc = kcr_buf_appendf(&b, "[+]%s excluded: ok\n", parts[i].name);
    else if (parts[i].healthy)
      rc = kcr_buf_appendf(&b, "[+]%s ok\n", parts[i].name);
    else
      rc = kcr_buf_appendf(&b, "[-]%s failed: reason withheld\n", parts[i].name);
  }
  pthread_mutex_unlock(&s->checks_mu);
  if (rc == 0)
    rc = kcr_buf_appendf(&b, "%s check %s\n", kindname, failed ? "failed" : "passed");
  if (rc != 0) {
    kcr_buf_free(&b);
    uncharge(s, PROBE_BODY_MAX);
    job_text(j, 500, "500 out of memory\n");
    return;
  }
  job_take_body(j, failed ? 500 : 200, TEXT_PLAIN, &b, PROBE_BODY_MAX);
}

/* serve_metrics answers /metrics: the worker thread, running the collectors. */
static void serve_metrics(job_t *j) {
  kcr_server_t *s = j->srv;
  kcr_buf_t b;
  int rc;
  if (s->auth) {
    int st = s->auth(s->auth_data, j->token, "get", "/metrics");
    if (st != 200) {
      job_text(j, st == 401 || st == 403 ? st : 500,
               st == 401   ? "Unauthorized\n"
               : st == 403 ? "Forbidden\n"
                           : "Authorization failed\n");
      return;
    }
  }
  /* The body's largest size is charged before rendering, so a scrape never
   * takes the server past its budget; the unused part is given back after. */
  if (!charge(s, s->max_reply)) {
    atomic_fetch_add(&s->st_busy, 1);
    job_text(j, 503, busy_text);
    return;
  }
  kcr_buf_init(&b, s->max_reply - 1);
  rc = kcr_metrics_render(s->metrics, &b);
  if (rc != 0) {
    kcr_buf_free(&b);
    uncharge(s, s->max_reply);
    kcr_log(KCR_LOG_ERROR, "server", "rendering /metrics failed: %s", kcr_strerror(rc));
    job_text(j, 500, "metrics unavailable\n");
    return;
  }
  job_take_body(j, 200, KCR_METRICS_CONTENT_TYPE, &b, s->max_reply);
}

/* serve_handler answers a request for options.handler: the worker thread. */
static void serve_handler(job_t *j) {
  kcr_server_t *s = j->srv;
  kcr_server_request rq;
  kcr_server_response rs;
  memset(&rs, 0, sizeof(rs));
  if (!charge(s, s->max_reply)) {
    atomic_fetch_add(&s->st_busy, 1);
    job_text(j, 503, busy_text);
    return;
  }
  rq.method = j->method;
  rq.path = j->path;
  rq.query = j->query;
  rq.body = j->req_body ? j->req_body : "";
  rq.body_len = j->req_len;
  kcr_buf_init(&rs.body, s->max_reply - 1);
  s->handler(s->handler_data, &rq, &rs);
  if (j->req_body) { /* read: give its memory back before the reply is sent */
    kcr__free(j->req_body);
    uncharge(s, j->req_charged);
    j->req_body = NULL;
  }
  job_take_body(j, rs.status > 0 ? rs.status : 200,
                rs.content_type ? rs.content_type : "application/json", &rs.body, s->max_reply);
}

/* ---- the worker ---- */

static void job_free(job_t *j) {
  kcr_server_t *s = j->srv;
  if (j->req_body) {
    kcr__free(j->req_body);
    uncharge(s, j->req_charged);
  }
  if (j->owned) {
    kcr__free(j->owned);
    uncharge(s, j->owned_cap);
  }
  uncharge(s, j->charged);
  kcr__free(j);
}

/* on_job_done: the loop thread, with the answer the worker made. */
static void on_job_done(kcr_loop_t *loop, void *data) {
  job_t *j = data;
  conn_t *c = j->conn;
  (void)loop;
  if (!c || c->closing) {
    if (c)
      c->job = NULL;
    job_free(j);
    return;
  }
  c->job = NULL;
  send_reply(c, j->status, j->content_type, NULL, j->body, j->body_len, j->owned, j->owned_cap,
             j->head_only, c->close_after);
  j->owned = NULL; /* c has it now */
  job_free(j);
}

/* load_certs reads the certificate files into a new context and swaps it
 * in; on failure the old one stays. Counted as certwatcher counts. The worker
 * thread (or create, before the worker starts). */
static int load_certs(kcr_server_t *s, char *msg, size_t size) {
  SSL_CTX *ctx, *old;
  kcr_metric_inc(s->m_cert_reads);
  ctx = kcr__tls_ctx_from_files(s->cert_path, s->key_path, msg, size);
  if (!ctx) {
    kcr_metric_inc(s->m_cert_errors);
    return KCR_ECONFIG;
  }
  pthread_mutex_lock(&s->ctx_mu);
  old = s->ctx;
  s->ctx = ctx;
  pthread_mutex_unlock(&s->ctx_mu);
  SSL_CTX_free(old); /* connections using it hold their own reference */
  return 0;
}

/* poll_certs re-reads the certificate when its files have moved. Worker. */
static void poll_certs(kcr_server_t *s) {
  kcr__tls_stamp_t now;
  char msg[400];
  kcr__tls_stamp(s->cert_path, s->key_path, &now);
  if (kcr__tls_stamp_equal(&now, &s->stamp))
    return;
  s->stamp = now;
  if (load_certs(s, msg, sizeof(msg)) != 0)
    kcr_log(KCR_LOG_ERROR, "server", "certificate reload failed, keeping the old one: %s", msg);
  else
    kcr_log(KCR_LOG_INFO, "server", "certificate reloaded from %s", s->cert_path);
}

static void *worker_main(void *arg) {
  kcr_server_t *s = arg;
  kcr_clock_t *clk = kcr_clock_system();
  for (;;) {
    job_t *j;
    if (s->cert_path && kcr_clock_now(clk) >= s->next_poll) {
      poll_certs(s);
      s->next_poll = kcr_clock_now(clk) + s->cert_poll_ns;
    }
    pthread_mutex_lock(&s->jobs_mu);
    while (!s->jobs_head && !s->jobs_stop) {
      if (!s->cert_path) {
        pthread_cond_wait(&s->jobs_cond, &s->jobs_mu);
      } else if (kcr_clock_timedwait(clk, &s->jobs_cond, &s->jobs_mu, s->next_poll) ==
                 KCR_ETIMEDOUT) {
        break;
      }
    }
    j = s->jobs_head;
    if (!j) {
      int stop = s->jobs_stop;
      pthread_mutex_unlock(&s->jobs_mu);
      if (stop)
        return NULL;
      continue; /* time to poll the certificate */
    }
    s->jobs_head = j->next;
    if (!s->jobs_head)
      s->jobs_tail = NULL;
    pthread_mutex_unlock(&s->jobs_mu);
    if (j->what == JOB_METRICS)
      serve_metrics(j);
    else if (j->what == JOB_HANDLER)
      serve_handler(j);
    else
      serve_probe(j);
    /* A failed post means the loop is stopping: nobody will send this reply.
     * The connection may still point at the job, so it is kept until
     * stop_worker, which runs once the loop thread is gone. */
    if (kcr_loop_post(s->loop, on_job_done, j) != 0) {
      pthread_mutex_lock(&s->jobs_mu);
      j->next = s->orphans;
      s->orphans = j;
      pthread_mutex_unlock(&s->jobs_mu);
    }
  }
}

/* submit hands a probe or metrics request to the worker; the connection is busy
 * until the answer is back and written. 0, or KCR_ENOMEM when the budget or
 * malloc refuses. Loop thread. */
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
  if (s->jobs_tail)
    s->jobs_tail->next = j;
  else
    s->jobs_head = j;
  s->jobs_tail = j;
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
      job_free(j);
      j = NULL;
    }
  }
  if (!j) {
    atomic_fetch_add(&s->st_busy, 1);
    respond_text(c, 503, busy_text, h->head_only, 1);
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

/* ---- request parsing ---- */

/* header_value finds "name:" in the head's header lines (case-insensitive) and
 * returns the value's start with its length in *len, or NULL. */
static const char *header_value(const char *lines, const char *end, const char *name, size_t *len) {
  size_t nl = strlen(name);
  const char *p = lines;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *le = eol ? eol : end;
    if ((size_t)(le - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
      const char *v = p + nl + 1;
      while (v < le && (*v == ' ' || *v == '\t'))
        v++;
      while (le > v && (le[-1] == '\r' || le[-1] == ' ' || le[-1] == '\t'))
        le--;
      *len = (size_t)(le - v);
      return v;
    }
    if (!eol)
      break;
    p = eol + 1;
  }
  return NULL;
}

static int value_has_token(const char *v, size_t len, const char *token) {
  size_t tl = strlen(token);
  for (size_t i = 0; v && i + tl <= len; i++)
    if (strncasecmp(v + i, token, tl) == 0)
      return 1;
  return 0;
}

size_t kcr__http_head_end(const char *buf, size_t len) {
  for (size_t i = 0; i + 3 < len; i++)
    if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
      return i + 4;
  return 0;
}

/* next_token copies the white-space-separated token at *p (before end) into out
 * (size bytes with its NUL) and moves *p past it; -1 when there is none or it
 * does not fit. */
static int next_token(const char **p, const char *end, char *out, size_t size) {
  const char *t = *p;
  size_t n;
  while (t < end && (*t == ' ' || *t == '\t'))
    t++;
  for (n = 0; t + n < end && t[n] != ' ' && t[n] != '\t' && t[n] != '\r'; n++)
    ;
  if (n == 0 || n >= size)
    return -1;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
      return -1; /* control bytes (NUL included) are in no valid request line */
  memcpy(out, t, n);
  out[n] = '\0';
  *p = t + n;
  return 0;
}

int kcr__http_parse_head(const char *head, size_t len, kcr__http_head *out) {
  const char *end = head + len, *line_end = memchr(head, '\n', len), *v, *p = head;
  char version[16], *q;
  size_t vlen = 0;
  int http10;

  memset(out, 0, sizeof(*out));
  /* request-line = method SP target SP version, then only "\r" (white space
   * tolerated between and after the fields). */
  if (!line_end || next_token(&p, line_end, out->method, sizeof(out->method)) != 0 ||
      next_token(&p, line_end, out->target, sizeof(out->target)) != 0 ||
      next_token(&p, line_end, version, sizeof(version)) != 0 ||
      strncmp(version, "HTTP/1.", 7) != 0)
    return -1;
  while (p < line_end && (*p == ' ' || *p == '\t' || *p == '\r'))
    p++;
  if (p != line_end)
    return -1;
  http10 = strcmp(version, "HTTP/1.0") == 0;
  v = header_value(line_end + 1, end, "Connection", &vlen);
  if (http10 ? !value_has_token(v, vlen, "keep-alive") : value_has_token(v, vlen, "close"))
    out->close_after = 1;
  out->keep_alive = !out->close_after;
  out->content_length = -1;
  if ((v = header_value(line_end + 1, end, "Content-Length", &vlen))) {
    long long n = 0;
    size_t i;
    for (i = 0; i < vlen && v[i] >= '0' && v[i] <= '9' && n < (1LL << 40); i++)
      n = n * 10 + (v[i] - '0');
    out->content_length = i == vlen && vlen > 0 && n < (1LL << 40) ? n : -2;
  }
  out->chunked = header_value(line_end + 1, end, "Transfer-Encoding", &vlen) != NULL;
  /* The built-in endpoints take no body: answer, then close rather than read one. */
  if ((out->content_length != -1 && out->content_length != 0) || out->chunked)
    out->close_after = 1;
  q = strchr(out->target, '?');
  if (q) {
    *q = '\0';
    out->query = q + 1;
  }
  out->head_only = strcmp(out->method, "HEAD") == 0;
  return 0;
}

/*
 * bearer_token finds the token of "Authorization: Bearer <token>" in the head
 * (the scheme case-insensitive, the token up to white space, as the API
 * server's bearer-token authenticator reads it). Returns it (into head) with
 * its length, or NULL when there is none or it is empty.
 */
static const char *bearer_token(const char *head, size_t head_len, size_t *len) {
  const char *line_end = memchr(head, '\n', head_len), *v, *t;
  size_t vlen = 0, n = 0;
  if (!line_end)
    return NULL;
  v = header_value(line_end + 1, head + head_len, "Authorization", &vlen);
  if (!v || vlen < 7 || strncasecmp(v, "Bearer ", 7) != 0)
    return NULL;
  t = v + 7;
  while (t < v + vlen && *t == ' ')
    t++;
  while (t + n < v + vlen && t[n] != ' ' && t[n] != '\t')
    n++;
  if (n == 0)
    return NULL;
  *len = n;
  return t;
}

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
      const char *token = s->auth ? bearer_token(c->buf, head_len, &tl) : NULL;
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
      respond_text(c, 503, busy_text, head_only, close_after);
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
    conn_close(c);
    return;
  }
  if (n == 0 || c->closing)
    return;
  c->heard = 1;
  if (c->ssl) {
    if (BIO_write(c->rbio, c->cbuf, (int)n) != (int)n) {
      ERR_clear_error();
      conn_close(c);
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
 * shed_one closes the connection least worth keeping so that a new one can be
 * admitted; returns 0 when none may go. Order: idle connections (nothing
 * received since accept, or kept alive between requests), then ones sending a
 * head or, with TLS, a handshake (a client part-way through is worth more than
 * one that has sent nothing), then ones not reading their reply; the oldest in
 * its state first. A connection whose request is with the worker is never
 * shed: the server, not the client, owes it progress. Bounded by
 * max_connections. Loop thread.
 */
static int shed_one(kcr_server_t *s) {
  conn_t *victim = NULL;
  int victim_rank = 3;
  for (conn_t *c = s->conns; c; c = c->next) {
    int rank;
    if (c->closing || c->job)
      continue;
    rank = c->busy ? 2 : c->heard || c->len > 0 || c->pending ? 1 : 0;
    /* The list runs newest first: on a tie the later one is the older. */
    if (rank < victim_rank || (rank == victim_rank && c->since <= victim->since)) {
      victim = c;
      victim_rank = rank;
    }
  }
  if (!victim)
    return 0;
  atomic_fetch_add(&s->st_shed, 1);
  conn_close(victim);
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
 * refuses. Loop thread.
 */
static void admit(kcr_server_t *s) {
  uv_stream_t *l = (uv_stream_t *)&s->listener;
  conn_t *c;
  s->accept_waiting = 0;
  if (s->nactive >= s->max_conns && !shed_one(s)) {
    refuse(s, l);
    return;
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
      conn_free(c);
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
    conn_free(c);
    refuse(s, l);
    return;
  }
  c->tcp.data = c;
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  s->nactive++;
  c->since = uv_now(l->loop);
  uv_timer_init(l->loop, &c->timer);
  c->timer.data = c;
  c->open_handles = 2;
  atomic_fetch_add(&s->st_connections, 1);
  if (uv_accept(l, (uv_stream_t *)&c->tcp) != 0) {
    conn_close(c);
    return;
  }
  read_start(c);
  /* Nothing sent yet counts as reading a head: the header timeout applies. */
  c->reading_head = 1;
  arm_timer(c, s->header_timeout_ms);
}

static void on_connection(uv_stream_t *l, int status) {
  kcr_server_t *s = l->data;
  if (status < 0)
    return;
  admit(s);
}

/* ---- start / stop on the loop ---- */

static void start_finish(kcr_server_t *s, int rc, const char *msg) {
  pthread_mutex_lock(&s->mu);
  s->start_rc = rc;
  if (msg)
    snprintf(s->start_msg, sizeof(s->start_msg), "%s", msg);
  s->start_done = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->mu);
}

static void on_listener_closed_failed(uv_handle_t *h) {
  kcr_server_t *s = h->data;
  s->listener_open = 0;
  start_finish(s, KCR_ESYS, NULL); /* start_msg already says why */
}

static void do_start(kcr_loop_t *loop, void *data) {
  kcr_server_t *s = data;
  struct sockaddr_storage bound;
  int rc, namelen = sizeof(bound);

  if ((rc = uv_tcp_init(kcr__loop_uv(loop), &s->listener)) != 0) {
    start_finish(s, KCR_ESYS, uv_strerror(rc));
    return;
  }
  s->listener.data = s;
  s->listener_open = 1;
  if ((rc = uv_tcp_bind(&s->listener, (const struct sockaddr *)&s->addr, 0)) != 0 ||
      (rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection)) != 0 ||
      (rc = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &namelen)) != 0) {
    /* start_msg is written here and read by the creator after start_done. */
    pthread_mutex_lock(&s->mu);
    snprintf(s->start_msg, sizeof(s->start_msg), "%s", uv_strerror(rc));
    pthread_mutex_unlock(&s->mu);
    uv_close((uv_handle_t *)&s->listener, on_listener_closed_failed);
    return;
  }
  if (bound.ss_family == AF_INET6)
    atomic_store(&s->port, ntohs(((struct sockaddr_in6 *)&bound)->sin6_port));
  else
    atomic_store(&s->port, ntohs(((struct sockaddr_in *)&bound)->sin_port));
  start_finish(s, 0, NULL);
}

static void on_listener_closed(uv_handle_t *h) {
  kcr_server_t *s = h->data;
  s->listener_open = 0;
  maybe_stop_done(s);
}

static void do_stop(kcr_loop_t *loop, void *data) {
  kcr_server_t *s = data;
  (void)loop;
  s->stopping = 1;
  if (s->listener_open && !uv_is_closing((uv_handle_t *)&s->listener))
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
  for (conn_t *c = s->conns; c; c = c->next)
    conn_close(c);
  maybe_stop_done(s);
}

static int parse_address(const char *a, struct sockaddr_storage *out) {
  char host[128];
  const char *colon;
  char *end;
  long port;
  size_t hl;
  if (!a)
    return KCR_EINVAL;
  if (a[0] == '[') {
    const char *rb = strchr(a, ']');
    if (!rb || rb[1] != ':')
      return KCR_EINVAL;
    hl = (size_t)(rb - a - 1);
    if (hl >= sizeof(host))
      return KCR_EINVAL;
    memcpy(host, a + 1, hl);
    host[hl] = '\0';
    colon = rb + 1;
  } else {
    colon = strrchr(a, ':');
    if (!colon)
      return KCR_EINVAL;
    hl = (size_t)(colon - a);
    if (hl >= sizeof(host))
      return KCR_EINVAL;
    memcpy(host, a, hl);
    host[hl] = '\0';
  }
  errno = 0;
  port = strtol(colon + 1, &end, 10);
  if (colon[1] == '\0' || *end != '\0' || errno || port < 0 || port > 65535)
    return KCR_EINVAL;
  memset(out, 0, sizeof(*out));
  if (a[0] == '[')
    return uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)out) == 0 ? 0 : KCR_EINVAL;
  return uv_ip4_addr(host[0] ? host : "0.0.0.0", (int)port, (struct sockaddr_in *)out) == 0
             ? 0
             : KCR_EINVAL;
}

/* stop_worker joins the worker and drops the jobs it never took (their
 * connections are gone). */
static void stop_worker(kcr_server_t *s) {
  job_t *j, *next;
  if (!s->worker_started)
    return;
  pthread_mutex_lock(&s->jobs_mu);
  s->jobs_stop = 1;
  pthread_cond_signal(&s->jobs_cond);
  pthread_mutex_unlock(&s->jobs_mu);
  pthread_join(s->worker, NULL);
  s->worker_started = 0;
  for (j = s->jobs_head; j; j = next) {
    next = j->next;
    job_free(j);
  }
  for (j = s->orphans; j; j = next) {
    next = j->next;
    job_free(j);
  }
  s->jobs_head = s->jobs_tail = s->orphans = NULL;
}

static void server_free(kcr_server_t *s) {
  kcr_server_check_t *k, *kn;
  for (k = s->checks; k; k = kn) {
    kn = k->next;
    kcr__free(k->name);
    kcr__free(k);
  }
  SSL_CTX_free(s->ctx);
  kcr__free(s->cert_path);
  kcr__free(s->key_path);
  pthread_mutex_destroy(&s->ctx_mu);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->checks_mu);
  pthread_mutex_destroy(&s->jobs_mu);
  pthread_cond_destroy(&s->cond);
  pthread_cond_destroy(&s->jobs_cond);
  kcr__free(s);
}

/* tls_setup loads (or makes) the certificate and registers the certwatcher
 * counters. The creating thread, before the worker starts. */
static int tls_setup(kcr_server_t *s, const kcr_server_options *o, kcr_error_t *err) {
  kcr_metrics_registry_t *reg = o->cert_metrics ? o->cert_metrics : o->metrics;
  char msg[400];
  s->tls = 1;
  s->cert_poll_ns = o->cert_poll_interval_ns > 0 ? o->cert_poll_interval_ns : DEFAULT_CERT_POLL_NS;
  if (reg) {
    kcr_metric_t *m = NULL;
    if (kcr_metrics_counter(reg, "certwatcher_read_certificate_total",
                            "Total number of certificate reads", NULL, &m, NULL) == 0)
      s->m_cert_reads = kcr_metric_with(m, NULL, 0);
    if (kcr_metrics_counter(reg, "certwatcher_read_certificate_errors_total",
                            "Total number of certificate read errors", NULL, &m, NULL) == 0)
      s->m_cert_errors = kcr_metric_with(m, NULL, 0);
  }
  if (!o->cert_dir || !*o->cert_dir) {
    s->ctx = kcr__tls_ctx_self_signed(msg, sizeof(msg));
    if (!s->ctx)
      return kcr_error_set(err, KCR_ECONFIG, "server: %s", msg);
    return 0;
  }
  {
    const char *cn = o->cert_name && *o->cert_name ? o->cert_name : "tls.crt";
    const char *kn = o->key_name && *o->key_name ? o->key_name : "tls.key";
    size_t dl = strlen(o->cert_dir), cl = dl + strlen(cn) + 2, kl = dl + strlen(kn) + 2;
    s->cert_path = kcr__malloc(cl);
    s->key_path = kcr__malloc(kl);
    if (!s->cert_path || !s->key_path)
      return kcr_error_set(err, KCR_ENOMEM, "server: out of memory");
    snprintf(s->cert_path, cl, "%s/%s", o->cert_dir, cn);
    snprintf(s->key_path, kl, "%s/%s", o->cert_dir, kn);
  }
  kcr__tls_stamp(s->cert_path, s->key_path, &s->stamp);
  if (load_certs(s, msg, sizeof(msg)) != 0)
    return kcr_error_set(err, KCR_ECONFIG, "server: %s", msg);
  return 0;
}

int kcr_server_create(const kcr_server_options *o, kcr_server_t **out, kcr_error_t *err) {
  kcr_server_t *s;
  int rc;

  *out = NULL;
  if (!o || !o->loop || !o->bind_address)
    return kcr_error_set(err, KCR_EINVAL, "server: loop and bind_address are required");
  assert(!kcr_loop_on_thread(o->loop));
  s = kcr__calloc(1, sizeof(*s));
  if (!s)
    return kcr_error_set(err, KCR_ENOMEM, "server: out of memory");
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->checks_mu, NULL);
  pthread_mutex_init(&s->jobs_mu, NULL);
  pthread_mutex_init(&s->ctx_mu, NULL);
  pthread_cond_init(&s->cond, NULL);
  kcr_clock_cond_init(&s->jobs_cond); /* the worker's waits time out on the monotonic clock */
  if (parse_address(o->bind_address, &s->addr) != 0) {
    server_free(s);
    return kcr_error_set(err, KCR_EINVAL, "server: bad bind address \"%s\"", o->bind_address);
  }
  s->loop = o->loop;
  s->metrics = o->metrics;
  s->probes = o->probes;
  s->max_header = o->max_header_bytes ? o->max_header_bytes : 8192;
  s->header_timeout_ms =
      (uint64_t)((o->header_timeout_ns > 0 ? o->header_timeout_ns : 3 * KCR_NSEC_PER_SEC) /
                 KCR_NSEC_PER_MSEC);
  s->idle_timeout_ms =
      (uint64_t)((o->idle_timeout_ns > 0 ? o->idle_timeout_ns : 60 * KCR_NSEC_PER_SEC) /
                 KCR_NSEC_PER_MSEC);
  if (s->header_timeout_ms == 0)
    s->header_timeout_ms = 1;
  if (s->idle_timeout_ms == 0)
    s->idle_timeout_ms = 1;
  s->max_conns = o->max_connections > 0 ? o->max_connections : 64;
  s->conn_alloc = sizeof(conn_t) + s->max_header + 1 + (o->tls ? TLS_CBUF : 0);
  s->conn_size = s->conn_alloc + (o->tls ? TLS_SSL_COST : 0);
  s->max_buffered = o->max_buffered_bytes ? o->max_buffered_bytes : DEFAULT_MAX_BUFFERED;
  s->max_reply = s->max_buffered / 2;
  if (s->max_reply > KCR_METRICS_MAX_OUTPUT + 1)
    s->max_reply = KCR_METRICS_MAX_OUTPUT + 1;
  if (s->max_reply < PROBE_BODY_MAX || s->max_buffered < s->conn_size + PROBE_BODY_MAX) {
    server_free(s);
    return kcr_error_set(err, KCR_EINVAL, "server: max_buffered_bytes %zu is too small",
                         s->max_buffered);
  }
  s->auth = o->metrics_auth;
  s->auth_data = o->metrics_auth_data;
  s->handler = o->handler;
  s->handler_data = o->handler_data;
  s->max_body = o->max_body_bytes ? o->max_body_bytes : (size_t)7 * 1024 * 1024;
  if (s->max_body > s->max_buffered / 4)
    s->max_body = s->max_buffered / 4;
  if (o->tls && (rc = tls_setup(s, o, err)) != 0) {
    server_free(s);
    return rc;
  }

  if (pthread_create(&s->worker, NULL, worker_main, s) != 0) {
    server_free(s);
    return kcr_error_set(err, KCR_ESYS, "server: cannot start the worker thread");
  }
  s->worker_started = 1;
  rc = kcr_loop_post(s->loop, do_start, s);
  if (rc != 0) {
    stop_worker(s);
    server_free(s);
    return kcr_error_set(err, rc, "server: the loop is not accepting work");
  }
  pthread_mutex_lock(&s->mu);
  while (!s->start_done)
    pthread_cond_wait(&s->cond, &s->mu);
  rc = s->start_rc;
  pthread_mutex_unlock(&s->mu);
  if (rc != 0) {
    kcr_error_set(err, rc, "server: listening on %s: %s", o->bind_address, s->start_msg);
    stop_worker(s);
    server_free(s);
    return rc;
  }
  kcr_log(KCR_LOG_INFO, "server", "serving %s on %s (port %d)", s->tls ? "HTTPS" : "HTTP",
          o->bind_address, atomic_load(&s->port));
  *out = s;
  return 0;
}

int kcr_server_port(const kcr_server_t *s) {
  return atomic_load(&((kcr_server_t *)s)->port);
}

void kcr_server_destroy(kcr_server_t *s) {
  conn_t *c, *next;
  if (!s)
    return;
  assert(!kcr_loop_on_thread(s->loop));
  if (kcr_loop_post(s->loop, do_stop, s) == 0) {
    pthread_mutex_lock(&s->mu);
    while (!s->stop_done)
      pthread_cond_wait(&s->cond, &s->mu);
    pthread_mutex_unlock(&s->mu);
    stop_worker(s);
  } else {
    /* The loop has stopped and closed our handles without callbacks; jobs
     * still out are freed by stop_worker. */
    stop_worker(s);
    for (c = s->conns; c; c = next) {
      next = c->next;
      conn_free(c);
    }
  }
  server_free(s);
}

/* ---- checks ---- */

static int valid_check_name(const char *n) {
  if (!n || !*n || strlen(n) > 128)
    return 0;
  for (; *n; n++)
    if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') || (*n >= '0' && *n <= '9') ||
          *n == '_' || *n == '-' || *n == '.'))
      return 0;
  return 1;
}

static int add_check(kcr_server_t *s, kcr_probe_kind kind, const char *name, kcr_check_cb cb,
                     void *data, int healthy, kcr_server_check_t **out) {
  kcr_server_check_t *k, **tail;
  int n = 0;
  if (out)
    *out = NULL;
  if (!valid_check_name(name) || strcmp(name, "ping") == 0 || !(kind & KCR_PROBE_BOTH))
    return KCR_EINVAL;
  k = kcr__calloc(1, sizeof(*k));
  if (!k || !(k->name = kcr__strdup(name))) {
    kcr__free(k);
    return KCR_ENOMEM;
  }
  k->kind = kind;
  k->cb = cb;
  k->data = data;
  atomic_init(&k->flag, healthy ? 1 : 0);
  pthread_mutex_lock(&s->checks_mu);
  for (tail = &s->checks; *tail; tail = &(*tail)->next, n++) {
    if (((*tail)->kind & kind) && strcmp((*tail)->name, name) == 0)
      break;
  }
  if (*tail || n >= MAX_CHECKS) {
    int rc = *tail ? KCR_EEXIST : KCR_ETOOBIG;
    pthread_mutex_unlock(&s->checks_mu);
    kcr__free(k->name);
    kcr__free(k);
    return rc;
  }
  *tail = k;
  pthread_mutex_unlock(&s->checks_mu);
  if (out)
    *out = k;
  return 0;
}

int kcr_server_add_check(kcr_server_t *s, kcr_probe_kind kind, const char *name, kcr_check_cb cb,
                         void *data, kcr_server_check_t **out) {
  assert(cb);
  return add_check(s, kind, name, cb, data, 1, out);
}

int kcr_server_add_flag_check(kcr_server_t *s, kcr_probe_kind kind, const char *name, int healthy,
                              kcr_server_check_t **out) {
  return add_check(s, kind, name, NULL, NULL, healthy, out);
}

void kcr_server_check_set(kcr_server_check_t *c, int healthy) {
  if (c)
    atomic_store(&c->flag, healthy ? 1 : 0);
}

void kcr_server_remove_check(kcr_server_t *s, kcr_server_check_t *c) {
  kcr_server_check_t **p;
  if (!s || !c)
    return;
  pthread_mutex_lock(&s->checks_mu);
  for (p = &s->checks; *p; p = &(*p)->next) {
    if (*p == c) {
      *p = c->next;
      break;
    }
  }
  pthread_mutex_unlock(&s->checks_mu);
  kcr__free(c->name);
  kcr__free(c);
}

void kcr_server_get_stats(kcr_server_t *s, kcr_server_stats *out) {
  out->connections = atomic_load(&s->st_connections);
  out->rejected = atomic_load(&s->st_rejected);
  out->requests = atomic_load(&s->st_requests);
  out->header_timeouts = atomic_load(&s->st_timeouts);
  out->too_large = atomic_load(&s->st_too_large);
  out->busy = atomic_load(&s->st_busy);
  out->shed = atomic_load(&s->st_shed);
  out->tls_errors = atomic_load(&s->st_tls_errors);
  out->accept_waits = atomic_load(&s->st_accept_waits);
  out->bytes_held = atomic_load(&s->held);
  out->bytes_held_peak = atomic_load(&s->held_peak);
}
