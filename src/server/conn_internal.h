/* SPDX-License-Identifier: MIT */
/*
 * conn_internal.h: the server's connections (conn.c): the connection struct,
 * the TLS chunk in flight, and the job a connection hands the worker with the
 * answer the worker puts back, shared by conn.c (the loop thread) and
 * worker.c (the worker thread). Each field says which thread owns it.
 */
#ifndef KCR_CONN_INTERNAL_H
#define KCR_CONN_INTERNAL_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "kcr/loop.h"
#include "server/server_internal.h"

/* conn: one client connection; every field is loop thread. */
struct kcr__conn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_write_t wreq; /* the reply in flight, while busy */
  kcr_server_t *srv;
  kcr__list_node_t link; /* in srv->conns */
  size_t len;            /* bytes in buf */
  size_t head_len;       /* the head being answered; consumed once its reply is written */
  int open_handles;
  int closing;
  int reading;            /* uv_read_start is in effect */
  int reading_head;       /* a request's first byte has arrived */
  int busy;               /* a request is being answered: its job is out or its reply unsent */
  int heard;              /* bytes arrived since `since` (TLS: handshake records count) */
  int close_after;        /* the reply in flight ends the connection */
  uint64_t since;         /* loop time its current state (idle, head, reply) began */
  uint64_t accepted;      /* loop time it was accepted */
  uint64_t accepted_iter; /* the server's iter when it was accepted */
  uint64_t bytes_in;      /* bytes received since accept (TLS: ciphertext) */
  uint64_t peer;          /* a hash of the peer's address (0: unknown) */
  job_t *job;             /* the request the worker is answering, or NULL */
  job_t *pending;         /* a handler request whose body is still being read, or NULL */
  char *body;             /* the reply's owned body, charged body_cap bytes; NULL: static */
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
};

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
struct kcr__job {
  kcr__list_node_t link; /* in srv->jobs or srv->orphans, protected by jobs_mu */
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
  char *htoken;   /* JOB_HANDLER with handler_auth: the bearer token, or NULL;
                     owned, its size part of charged */
  int authorized; /* JOB_HANDLER with handler_auth: the auth hook said 200 */
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

/* ---- conn.c: called from server.c and worker.c ---- */

/* kcr__conn_on_connection is the listener's connection callback (uv_listen):
 * admits the waiting connection. Loop thread. */
void kcr__conn_on_connection(uv_stream_t *l, int status);

/* kcr__conn_close starts closing c (its handles' close callbacks free it).
 * Loop thread. */
void kcr__conn_close(conn_t *c);

/* kcr__conn_free frees c and gives back its budget, without closing its
 * handles: for a loop that has already closed them. */
void kcr__conn_free(conn_t *c);

/* kcr__conn_on_tick is the server's prepare callback: a new loop iteration
 * begins; a connection held back by admit's turnover bound is admitted. */
void kcr__conn_on_tick(uv_prepare_t *p);

/* kcr__conn_maybe_stop_done tells a destroy waiting on mu that the server has
 * stopped, once it is stopping and the listener and every connection are
 * closed. Loop thread. */
void kcr__conn_maybe_stop_done(kcr_server_t *s);

/* kcr__conn_job_done sends the answer the worker put in job data (posted with
 * kcr_loop_post), or drops it when its connection is gone. Loop thread. */
void kcr__conn_job_done(kcr_loop_t *loop, void *data);

/* kcr__job_free frees j with its request body and answer and gives back their
 * budget. Any thread that owns j. */
void kcr__job_free(job_t *j);

#endif /* KCR_CONN_INTERNAL_H */
