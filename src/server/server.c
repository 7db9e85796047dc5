/* SPDX-License-Identifier: MIT */
/*
 * server.c: the server layer, the probes and metrics HTTP server (kcr/server.h):
 * creating and destroying a server, its listener on the I/O loop, its checks
 * and its statistics. Its connections are conn.c's, its request parsing
 * http1.c's, its worker thread worker.c's, its certificates tls.c's.
 *
 * DESIGN. Sockets live on the loop thread, answers on a worker thread of the
 * server's own. Everything with a uv handle runs on the loop thread: create
 * and destroy post a closure (do_start, do_stop) and wait on a condition
 * variable for its outcome; the listener hands each connection to conn.c.
 * The worker is started before the listener opens and joined after it has
 * closed, so no job outlives the server. If the loop shuts down first, it
 * closes our handles without callbacks; destroy then joins the worker and
 * frees the connections directly.
 *
 * Memory is a budget (server_internal.h): every allocation made for clients
 * is charged to `held` before it is made and released when freed, so `held`
 * never exceeds max_buffered_bytes (the bound kcr/server.h states). create
 * sizes it: a connection's cost, the largest reply body (half the budget, at
 * most what /metrics may render) and the largest handler request body.
 *
 * TLS (options.tls) is set up here: the certificate is loaded (or made) at
 * create, before the worker starts, and the worker reloads it when its files
 * change (tls.c). /metrics may carry an auth hook (options.metrics_auth),
 * which the worker calls, never the loop.
 *
 * Checks live in a list under checks_mu; the worker runs them with that lock
 * held, which makes kcr_server_remove_check a barrier.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <uv.h>

#include "kcr/clock.h"
#include "kcr/log.h"
#include "kcr/server.h"
#include "loop/loop_internal.h"
#include "server/conn_internal.h"
#include "server/server_internal.h"
#include "server/worker_internal.h"
#include "util/alloc.h"

/* LISTEN_BACKLOG: connections the kernel holds until they are accepted (the
 * kernel caps it at net.core.somaxconn). With 128, a flood of reconnecting
 * holders overflowed the queue, and a probe's dropped handshake was retried
 * only after 1 s, past kubelet's timeout, whatever the shedding chose; Go's
 * servers listen with somaxconn. Queued connections cost kernel memory, not
 * the server's budget. */
#define LISTEN_BACKLOG 1024

/* DEFAULT_MAX_BUFFERED: the budget when options.max_buffered_bytes is 0. */
#define DEFAULT_MAX_BUFFERED ((size_t)16 * 1024 * 1024)
/* DEFAULT_CERT_POLL_NS: how often the worker stats the certificate files. */
#define DEFAULT_CERT_POLL_NS (10 * KCR_NSEC_PER_SEC)

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

/* defer_accept sets TCP_DEFER_ACCEPT on the bound listener when asked
 * (kcr_server_options.defer_accept_s); 0 or a libuv error. */
static int defer_accept(kcr_server_t *s) {
#ifdef TCP_DEFER_ACCEPT
  uv_os_fd_t fd;
  int secs = s->defer_accept_s;
  if (secs <= 0)
    return 0;
  if (uv_fileno((uv_handle_t *)&s->listener, &fd) != 0)
    return UV_EINVAL;
  if (setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs)) != 0)
    return uv_translate_sys_error(errno);
#else
  (void)s;
#endif
  return 0;
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
      (rc = defer_accept(s)) != 0 ||
      (rc = uv_listen((uv_stream_t *)&s->listener, LISTEN_BACKLOG, kcr__conn_on_connection)) != 0 ||
      (rc = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &namelen)) != 0) {
    /* start_msg is written here and read by the creator after start_done. */
    pthread_mutex_lock(&s->mu);
    snprintf(s->start_msg, sizeof(s->start_msg), "%s", uv_strerror(rc));
    pthread_mutex_unlock(&s->mu);
    uv_close((uv_handle_t *)&s->listener, on_listener_closed_failed);
    return;
  }
  uv_prepare_init(kcr__loop_uv(loop), &s->tick);
  s->tick.data = s;
  s->tick_open = 1;
  uv_prepare_start(&s->tick, kcr__conn_on_tick);
  if (bound.ss_family == AF_INET6)
    atomic_store(&s->port, ntohs(((struct sockaddr_in6 *)&bound)->sin6_port));
  else
    atomic_store(&s->port, ntohs(((struct sockaddr_in *)&bound)->sin_port));
  start_finish(s, 0, NULL);
}

static void on_listener_closed(uv_handle_t *h) {
  kcr_server_t *s = h->data;
  s->listener_open = 0;
  kcr__conn_maybe_stop_done(s);
}

static void on_tick_closed(uv_handle_t *h) {
  kcr_server_t *s = h->data;
  s->tick_open = 0;
  kcr__conn_maybe_stop_done(s);
}

static void do_stop(kcr_loop_t *loop, void *data) {
  kcr_server_t *s = data;
  (void)loop;
  s->stopping = 1;
  if (s->listener_open && !uv_is_closing((uv_handle_t *)&s->listener))
    uv_close((uv_handle_t *)&s->listener, on_listener_closed);
  if (s->tick_open && !uv_is_closing((uv_handle_t *)&s->tick))
    uv_close((uv_handle_t *)&s->tick, on_tick_closed);
  KCR__LIST_EACH(&s->conns, conn_t, link, c)
  kcr__conn_close(c);
  kcr__conn_maybe_stop_done(s);
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

static void server_free(kcr_server_t *s) {
  kcr__list_node_t *n;
  while ((n = kcr__list_pop_front(&s->checks))) {
    kcr_server_check_t *k = KCR__CONTAINER_OF(n, kcr_server_check_t, link);
    kcr__free(k->name);
    kcr__free(k);
  }
  SSL_CTX_free(s->ctx);
  kcr__free(s->cert_path);
  kcr__free(s->key_path);
  pthread_mutex_destroy(&s->ctx_mu);
  pthread_mutex_destroy(&s->reply_mu);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->checks_mu);
  pthread_mutex_destroy(&s->jobs_mu);
  pthread_cond_destroy(&s->cond);
  pthread_cond_destroy(&s->jobs_cond);
  pthread_cond_destroy(&s->auth_cond);
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
  if (kcr__worker_load_certs(s, 1, msg, sizeof(msg)) != 0)
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
  pthread_mutex_init(&s->reply_mu, NULL);
  pthread_cond_init(&s->cond, NULL);
  kcr_clock_cond_init(&s->jobs_cond); /* the worker's waits time out on the monotonic clock */
  pthread_cond_init(&s->auth_cond, NULL);
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
  s->auth_cached = o->metrics_auth_cached;
  s->auth_data = o->metrics_auth_data;
  s->handler = o->handler;
  s->handler_data = o->handler_data;
  s->handler_auth = o->handler_auth && o->metrics_auth && o->handler;
  s->max_body = o->max_body_bytes ? o->max_body_bytes : (size_t)7 * 1024 * 1024;
  s->defer_accept_s = o->defer_accept_s;
  if (s->max_body > s->max_buffered / 4)
    s->max_body = s->max_buffered / 4;
  if (o->tls && (rc = tls_setup(s, o, err)) != 0) {
    server_free(s);
    return rc;
  }

  if (pthread_create(&s->worker, NULL, kcr__worker_main, s) != 0) {
    server_free(s);
    return kcr_error_set(err, KCR_ESYS, "server: cannot start the worker thread");
  }
  s->worker_started = 1;
  if (s->auth && kcr__worker_start_auth(s) != 0) {
    kcr__worker_stop(s);
    server_free(s);
    return kcr_error_set(err, KCR_ESYS, "server: cannot start the auth threads");
  }
  rc = kcr_loop_post(s->loop, do_start, s);
  if (rc != 0) {
    kcr__worker_stop(s);
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
    kcr__worker_stop(s);
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
  kcr__list_node_t *n;
  if (!s)
    return;
  assert(!kcr_loop_on_thread(s->loop));
  if (kcr_loop_post(s->loop, do_stop, s) == 0) {
    pthread_mutex_lock(&s->mu);
    while (!s->stop_done)
      pthread_cond_wait(&s->cond, &s->mu);
    pthread_mutex_unlock(&s->mu);
    kcr__worker_stop(s);
  } else {
    /* The loop has stopped and closed our handles without callbacks; jobs
     * still out are freed by stop_worker. */
    kcr__worker_stop(s);
    while ((n = kcr__list_pop_front(&s->conns)))
      kcr__conn_free(KCR__CONTAINER_OF(n, conn_t, link));
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
                     kcr_check_err_cb ecb, void *data, int healthy, kcr_server_check_t **out) {
  kcr_server_check_t *k;
  int n = 0, rc = 0;
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
  k->ecb = ecb;
  k->data = data;
  atomic_init(&k->flag, healthy ? 1 : 0);
  pthread_mutex_lock(&s->checks_mu);
  KCR__LIST_EACH(&s->checks, kcr_server_check_t, link, have) {
    if ((have->kind & kind) && strcmp(have->name, name) == 0) {
      rc = KCR_EEXIST;
      break;
    }
    n++;
  }
  if (rc == 0 && n >= MAX_CHECKS)
    rc = KCR_ETOOBIG;
  if (rc) {
    pthread_mutex_unlock(&s->checks_mu);
    kcr__free(k->name);
    kcr__free(k);
    return rc;
  }
  kcr__list_push_back(&s->checks, &k->link);
  pthread_mutex_unlock(&s->checks_mu);
  if (out)
    *out = k;
  return 0;
}

int kcr_server_add_check(kcr_server_t *s, kcr_probe_kind kind, const char *name, kcr_check_cb cb,
                         void *data, kcr_server_check_t **out) {
  assert(cb);
  return add_check(s, kind, name, cb, NULL, data, 1, out);
}

int kcr_server_add_check_err(kcr_server_t *s, kcr_probe_kind kind, const char *name,
                             kcr_check_err_cb cb, void *data, kcr_server_check_t **out) {
  assert(cb);
  return add_check(s, kind, name, NULL, cb, data, 1, out);
}

int kcr_server_add_flag_check(kcr_server_t *s, kcr_probe_kind kind, const char *name, int healthy,
                              kcr_server_check_t **out) {
  return add_check(s, kind, name, NULL, NULL, NULL, healthy, out);
}

void kcr_server_check_set(kcr_server_check_t *c, int healthy) {
  if (c)
    atomic_store(&c->flag, healthy ? 1 : 0);
}

void kcr_server_remove_check(kcr_server_t *s, kcr_server_check_t *c) {
  if (!s || !c)
    return;
  pthread_mutex_lock(&s->checks_mu);
  if (kcr__list_linked(&s->checks, &c->link))
    kcr__list_remove(&s->checks, &c->link);
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
  out->auth_refused = atomic_load(&s->st_auth_refused);
  out->tls_errors = atomic_load(&s->st_tls_errors);
  out->accept_waits = atomic_load(&s->st_accept_waits);
  out->bytes_held = atomic_load(&s->held);
  out->bytes_held_peak = atomic_load(&s->held_peak);
}
