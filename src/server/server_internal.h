/* SPDX-License-Identifier: MIT */
/*
 * server_internal.h: the server layer's shared state: struct kcr_server, its
 * checks and its memory budget, which server.c (lifecycle, checks), conn.c
 * (connections on the loop) and worker.c (the worker thread) all use, and the
 * certificate functions of tls.c. Each field says which thread or lock owns
 * it. Request parsing is http1_internal.h's; the connection and the job it
 * hands the worker are conn_internal.h's.
 */
#ifndef KCR_SERVER_INTERNAL_H
#define KCR_SERVER_INTERNAL_H

#include <assert.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "kcr/loop.h"
#include "kcr/metrics.h"
#include "kcr/server.h"
#include "util/container.h"
#include "util/list.h"

/* ---- tls.c: certificates (never on the loop thread: they read files) ---- */

/*
 * kcr__tls_ctx_from_files builds a server context (TLS 1.2-1.3, ALPN
 * http/1.1) from a PEM certificate chain and a PEM key. Returns a new context,
 * or NULL with the reason in msg (paths named, no key material); a leaf
 * certificate that has expired or is not yet valid is such a failure.
 */
SSL_CTX *kcr__tls_ctx_from_files(const char *cert_path, const char *key_path, char *msg,
                                 size_t size);

/* kcr__tls_ctx_self_signed builds a context around a new in-memory EC P-256
 * certificate for localhost, 127.0.0.1, ::1 and this host's name. New, or NULL
 * with msg. */
SSL_CTX *kcr__tls_ctx_self_signed(char *msg, size_t size);

/*
 * kcr__tls_self_signed makes a P-256 key and a self-signed certificate (one
 * year, serverAuth) with subject CN cn and SANs localhost, 127.0.0.1, ::1 plus
 * the ndns names in dns. *key_out and *cert_out are new. 0 or -1. Tests use it
 * to write certificate files.
 */
int kcr__tls_self_signed(const char *cn, const char *const *dns, size_t ndns, EVP_PKEY **key_out,
                         X509 **cert_out);

/* kcr__tls_stamp_t: what a poll compares, for the certificate and the key. */
typedef struct kcr__tls_stamp {
  uint64_t ino[2];
  int64_t size[2];
  int64_t mtime_ns[2];
  int64_t missing;
} kcr__tls_stamp_t;

/* kcr__tls_stamp stats both files into *out. */
void kcr__tls_stamp(const char *cert_path, const char *key_path, kcr__tls_stamp_t *out);

/* kcr__tls_stamp_equal tells whether nothing moved between a and b. */
int kcr__tls_stamp_equal(const kcr__tls_stamp_t *a, const kcr__tls_stamp_t *b);

/* ---- the server's state ---- */

/* MAX_CHECKS: the most checks one server takes. */
#define MAX_CHECKS 64
/* PROBE_BODY_MAX: a probe's verbose body: 65 lines of at most a 128-byte name
 * and 20 more. */
#define PROBE_BODY_MAX ((size_t)16 * 1024)
/* TEXT_PLAIN: the content type of every built-in answer but /metrics. */
#define TEXT_PLAIN "text/plain; charset=utf-8"
/* BUSY_TEXT: the 503 a request gets when the budget cannot take its work. */
#define BUSY_TEXT "503 server busy\n"
/* TLS_CBUF: a TLS connection reads ciphertext into a buffer of its own: one
 * record. */
#define TLS_CBUF ((size_t)17 * 1024)
/* TLS_SSL_COST: what OpenSSL holds for one connection (the SSL object, its
 * record buffers while in use), charged to the budget as an estimate:
 * OpenSSL's allocations do not go through ours. */
#define TLS_SSL_COST ((size_t)40 * 1024)

/* conn_t: one client connection (conn_internal.h). */
typedef struct kcr__conn conn_t;
/* job_t: one request for the worker (conn_internal.h). */
typedef struct kcr__job job_t;

/* kcr_server_check: one registered check; the list is the server's, under
 * checks_mu. */
struct kcr_server_check {
  char *name;
  kcr_probe_kind kind;
  kcr_check_cb cb;      /* NULL: a flag check (unless ecb) */
  kcr_check_err_cb ecb; /* a check that says why it failed */
  void *data;
  atomic_int flag;
  kcr__list_node_t link; /* in the server's checks, protected by checks_mu */
};

/* kcr_server: one server; every field says its thread or lock (no mark:
 * set at create, read-only after). */
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
  kcr__list_t conns;  /* loop thread; conn_t by link, newest first */
  int nconns;         /* loop thread: allocated, closing ones included */
  int nactive;        /* loop thread: not closing */
  int accept_waiting; /* loop thread: a connection waits in the listen queue for
                       * the memory of closing ones (see admit) */
  int accept_paused;  /* loop thread: a connection waits in the listen queue for
                       * the next iteration: this one shed enough (see admit) */
  uv_prepare_t tick;  /* loop thread: counts loop iterations (kcr__conn_on_tick) */
  uint64_t iter;      /* loop thread: the loop iteration, as tick counts them */
  int tick_open;      /* loop thread */
  int iter_sheds;     /* loop thread: admissions that shed in this iteration */
  atomic_int port;

  pthread_mutex_t mu; /* for the create/destroy handshakes */
  pthread_cond_t cond;
  int start_done;      /* protected by mu */
  int start_rc;        /* protected by mu */
  char start_msg[160]; /* protected by mu */
  int stop_done;       /* protected by mu */
  int stopping;        /* loop thread */

  pthread_mutex_t checks_mu;
  kcr__list_t checks; /* protected by checks_mu; kcr_server_check_t by link, in order */

  pthread_t worker;
  int worker_started;
  pthread_mutex_t jobs_mu;
  pthread_cond_t jobs_cond;
  kcr__list_t jobs;    /* protected by jobs_mu; job_t by link, oldest first */
  kcr__list_t orphans; /* protected by jobs_mu; job_t by link: answered, never sent */
  /* The auth pool (options.metrics_auth): its threads take /metrics jobs
   * from auth_jobs, decide, render and post the answer. */
  pthread_t auth_threads[KCR_SERVER_AUTH_THREADS];
  pthread_cond_t auth_cond;
  pthread_mutex_t reply_mu; /* held while a /metrics reply is charged and rendered */
  kcr__list_t auth_jobs;    /* protected by jobs_mu; job_t by link, oldest first */
  int jobs_stop;            /* protected by jobs_mu */
  int auth_queued;          /* protected by jobs_mu: the length of auth_jobs */
  int auth_started;         /* threads running */

  /* TLS. ctx is swapped by the worker's reload, read by the loop at accept. */
  int tls;
  pthread_mutex_t ctx_mu;
  SSL_CTX *ctx;               /* protected by ctx_mu */
  char *cert_path, *key_path; /* NULL: self-signed, not watched */
  int64_t cert_poll_ns;
  int64_t next_poll;      /* worker thread */
  kcr__tls_stamp_t stamp; /* worker thread (create, before it starts) */
  int cert_unsettled;     /* worker: the last read of changed files failed */
  kcr_metric_child_t *m_cert_reads, *m_cert_errors;
  kcr_server_auth_cb auth;
  kcr_server_auth_cb auth_cached;
  void *auth_data;
  kcr_server_handler_cb handler;
  void *handler_data;
  int handler_auth;   /* handler requests pass auth (and auth_cached) first */
  int defer_accept_s; /* TCP_DEFER_ACCEPT seconds; 0: off */
  size_t max_body;

  atomic_size_t held, held_peak; /* the budget: bytes allocated for clients */
  atomic_uint_fast64_t st_connections, st_rejected, st_requests, st_timeouts, st_too_large, st_busy,
      st_shed, st_tls_errors, st_accept_waits, st_auth_refused;
};

/* ---- the memory budget (any thread) ---- */

/* note_peak raises held_peak to now. */
static inline void note_peak(kcr_server_t *s, size_t now) {
  size_t peak = atomic_load(&s->held_peak);
  while (now > peak && !atomic_compare_exchange_weak(&s->held_peak, &peak, now))
    ;
}

/* charge reserves n bytes of the budget; 0 when they do not fit. Any thread. */
static inline int charge(kcr_server_t *s, size_t n) {
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
static inline void charge_anyway(kcr_server_t *s, size_t n) {
  note_peak(s, atomic_fetch_add(&s->held, n) + n);
}

/* uncharge gives n bytes back to the budget. Any thread. */
static inline void uncharge(kcr_server_t *s, size_t n) {
  size_t before = atomic_fetch_sub(&s->held, n);
  assert(before >= n);
  (void)before;
}

#endif /* KCR_SERVER_INTERNAL_H */
