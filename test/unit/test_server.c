/* SPDX-License-Identifier: MIT */
/* test_server.c: the probes/metrics server (kcr/server.h) against real sockets on
 * 127.0.0.1:0. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "httpserver.h"
#include "kcr/loop.h"
#include "kcr/manager.h"
#include "kcr/server.h"
#include "testutil.h"

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int dial(int port) {
  struct sockaddr_in a = {0};
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  return fd;
}

/* dial_from connects to port from the loopback address src ("127.0.0.2"). */
static int dial_from(int port, const char *src) {
  struct sockaddr_in a = {0}, b = {0};
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  b.sin_family = AF_INET;
  assert_int_equal(inet_pton(AF_INET, src, &b.sin_addr), 1);
  assert_int_equal(bind(fd, (struct sockaddr *)&b, sizeof(b)), 0);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  return fd;
}

static void send_all(int fd, const char *s, size_t n) {
  while (n) {
    ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
    if (w <= 0)
      return; /* the server may have closed on us: the caller checks the answer */
    s += w;
    n -= (size_t)w;
  }
}

/* read_until_close reads for at most timeout_ms; returns what came (new) and
 * *closed whether EOF was seen. */
static char *read_until_close(int fd, int timeout_ms, int *closed) {
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  int64_t deadline = now_ms() + timeout_ms;
  *closed = 0;
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int left = (int)(deadline - now_ms());
    ssize_t n;
    if (left <= 0 || poll(&p, 1, left) <= 0)
      break;
    if (len + 1 >= cap)
      buf = realloc(buf, cap *= 2);
    n = recv(fd, buf + len, cap - len - 1, 0);
    if (n <= 0) {
      *closed = 1;
      break;
    }
    len += (size_t)n;
  }
  buf[len] = '\0';
  return buf;
}

/* assert_closed: the server closes fd within timeout_ms, whatever it sent. */
static void assert_closed(int fd, int timeout_ms) {
  int closed;
  char *r = read_until_close(fd, timeout_ms, &closed);
  assert_true(closed);
  free(r);
}

/* read_response reads one answer (head + Content-Length body). New string. */
static char *read_response(int fd) {
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    char *he;
    ssize_t n;
    buf[len] = '\0';
    he = strstr(buf, "\r\n\r\n");
    if (he) {
      char *cl = strstr(buf, "Content-Length: ");
      size_t want = (size_t)(he - buf) + 4 + (cl ? strtoul(cl + 16, NULL, 10) : 0);
      if (strncmp(buf, "HEAD", 4) != 0 && len >= want)
        break;
    }
    if (poll(&p, 1, 5000) <= 0)
      break;
    if (len + 1 >= cap)
      buf = realloc(buf, cap *= 2);
    n = recv(fd, buf + len, cap - len - 1, 0);
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  return buf;
}

static char *get(int port, const char *request) {
  int fd = dial(port), closed;
  char *r;
  send_all(fd, request, strlen(request));
  r = read_until_close(fd, 5000, &closed);
  close(fd);
  return r;
}

static char *get_path(int port, const char *path) {
  char req[512];
  snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
  return get(port, req);
}

static const char *body_of(const char *r) {
  const char *b = strstr(r, "\r\n\r\n");
  return b ? b + 4 : "";
}

typedef struct fixture {
  kcr_loop_t *loop;
  kcr_server_t *srv;
  kcr_metrics_registry_t *reg;
  int port;
} fixture_t;

static fixture_t *start(kcr_server_options *o) {
  fixture_t *f = calloc(1, sizeof(*f));
  kcr_error_t err = {0};
  assert_int_equal(kcr_loop_create(&f->loop, NULL), 0);
  assert_int_equal(kcr_loop_start(f->loop, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&f->reg, NULL), 0);
  o->loop = f->loop;
  o->metrics = f->reg;
  o->probes = 1;
  if (!o->bind_address)
    o->bind_address = "127.0.0.1:0";
  assert_int_equal(kcr_server_create(o, &f->srv, &err), 0);
  f->port = kcr_server_port(f->srv);
  assert_true(f->port > 0);
  return f;
}

static void stop(fixture_t *f) {
  kcr_server_destroy(f->srv);
  kcr_loop_destroy(f->loop);
  kcr_metrics_registry_destroy(f->reg);
  free(f);
}

static int on_check_fail(void *data) {
  (void)data;
  return -1;
}

static void test_server_healthz_readyz(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  kcr_server_check_t *synced, *bad;
  char *r;
  (void)state;

  r = get_path(f->port, "/healthz");
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  assert_non_null(strstr(r, "Content-Type: text/plain; charset=utf-8\r\n"));
  assert_string_equal(body_of(r), "ok");
  free(r);

  assert_int_equal(kcr_server_add_flag_check(f->srv, KCR_PROBE_READYZ, "caches-synced", 0, &synced),
                   0);
  assert_int_equal(kcr_server_add_flag_check(f->srv, KCR_PROBE_READYZ, "caches-synced", 0, NULL),
                   KCR_EEXIST);
  assert_int_equal(
      kcr_server_add_check(f->srv, KCR_PROBE_READYZ, "bad name", on_check_fail, NULL, NULL),
      KCR_EINVAL);
  r = get_path(f->port, "/readyz");
  assert_non_null(strstr(r, "HTTP/1.1 500 Internal Server Error\r\n"));
  assert_string_equal(body_of(r), "[-]caches-synced failed: reason withheld\n"
                                  "[+]ping ok\n"
                                  "readyz check failed\n");
  free(r);
  r = get_path(f->port, "/healthz"); /* a readyz check does not affect healthz */
  assert_string_equal(body_of(r), "ok");
  free(r);
  r = get_path(f->port, "/readyz?exclude=caches-synced");
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  assert_string_equal(body_of(r), "ok");
  free(r);
  r = get_path(f->port, "/readyz?verbose&exclude=ping,caches-synced");
  assert_string_equal(body_of(r), "[+]caches-synced excluded: ok\n"
                                  "[+]ping excluded: ok\n"
                                  "readyz check passed\n");
  free(r);
  r = get_path(f->port, "/readyz/caches-synced");
  assert_non_null(strstr(r, "HTTP/1.1 500 "));
  free(r);
  kcr_server_check_set(synced, 1);
  r = get_path(f->port, "/readyz?verbose");
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  assert_string_equal(body_of(r), "[+]caches-synced ok\n[+]ping ok\nreadyz check passed\n");
  free(r);
  r = get_path(f->port, "/readyz/caches-synced");
  assert_string_equal(body_of(r), "ok");
  free(r);
  r = get_path(f->port, "/readyz/nope");
  assert_non_null(strstr(r, "HTTP/1.1 404 "));
  free(r);

  assert_int_equal(
      kcr_server_add_check(f->srv, KCR_PROBE_BOTH, "broken", on_check_fail, NULL, &bad), 0);
  r = get_path(f->port, "/healthz");
  assert_non_null(strstr(r, "HTTP/1.1 500 "));
  assert_non_null(strstr(body_of(r), "[-]broken failed: reason withheld\n"));
  assert_non_null(strstr(body_of(r), "healthz check failed\n"));
  free(r);
  kcr_server_remove_check(f->srv, bad);
  r = get_path(f->port, "/healthz");
  assert_string_equal(body_of(r), "ok");
  free(r);
  stop(f);
}

static void test_server_routes_methods(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  kcr_metric_t *m;
  char *r;
  (void)state;
  assert_int_equal(kcr_metrics_counter(f->reg, "things_total", "Things.", NULL, &m, NULL), 0);
  kcr_metric_add(kcr_metric_with(m, NULL, 0), 3);
  r = get_path(f->port, "/metrics");
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  assert_non_null(strstr(body_of(r), "# TYPE things_total counter\nthings_total 3\n"));
  free(r);
  r = get_path(f->port, "/nowhere");
  assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
  free(r);
  r = get(f->port, "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  assert_non_null(strstr(r, "HTTP/1.1 405 Method Not Allowed\r\n"));
  assert_non_null(strstr(r, "Allow: GET, HEAD\r\n"));
  free(r);
  r = get(f->port, "HEAD /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
  assert_non_null(strstr(r, "Content-Length: 2\r\n"));
  assert_string_equal(body_of(r), "");
  free(r);
  r = get(f->port, "garbage\r\n\r\n");
  assert_non_null(strstr(r, "HTTP/1.1 400 "));
  free(r);
  stop(f);
}

static void test_server_keep_alive(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  int fd = dial(f->port), closed;
  char *r;
  const char *two = "GET /healthz HTTP/1.1\r\n\r\nGET /readyz HTTP/1.1\r\n\r\n";
  kcr_server_stats st;
  (void)state;
  send_all(fd, two, strlen(two)); /* pipelined */
  r = read_response(fd);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK"));
  free(r);
  r = read_until_close(fd, 300, &closed);
  assert_false(closed); /* still open: keep-alive */
  free(r);
  send_all(fd, "GET /healthz HTTP/1.0\r\n\r\n", 25);
  r = read_until_close(fd, 5000, &closed);
  assert_true(closed); /* HTTP/1.0 without keep-alive closes */
  assert_non_null(strstr(r, "Connection: close\r\n"));
  free(r);
  close(fd);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.requests, 3);
  assert_int_equal(st.connections, 1);
  stop(f);
}

/*
 * defer_accept_s: a connection that sends nothing is not handed to the server
 * (no connection counted, nothing to shed) while a client that speaks first is
 * served at once; the silent one arrives once it sends its first byte.
 */
static void test_server_defer_accept(void **state) {
  static const char ready[] = "GET /readyz HTTP/1.1\r\n\r\n";
  kcr_server_options o = {0};
  fixture_t *f;
  int idle[4], fd;
  char *r;
  kcr_server_stats st;
  (void)state;
  o.defer_accept_s = 5;
  o.max_connections = 2; /* four silent ones would have filled it twice over */
  f = start(&o);
  for (int i = 0; i < 4; i++)
    idle[i] = dial(f->port);
  usleep(300 * 1000);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.connections, 0);
  r = get_path(f->port, "/healthz");
  assert_string_equal(body_of(r), "ok");
  free(r);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.connections, 1);
  assert_int_equal(st.shed, 0);
  fd = idle[0];
  send_all(fd, ready, sizeof(ready) - 1);
  r = read_response(fd);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK"));
  free(r);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.connections, 2);
  for (int i = 0; i < 4; i++)
    close(idle[i]);
  stop(f);
}

static void test_server_oversized_request(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  char *big, *r;
  int fd, closed;
  kcr_server_stats st;
  (void)state;
  o.max_header_bytes = 1024;
  f = start(&o);
  big = malloc(4096);
  memset(big, 'a', 4095);
  big[4095] = '\0';
  memcpy(big, "GET /healthz HTTP/1.1\r\nX-Big: ", 30);
  fd = dial(f->port);
  send_all(fd, big, 4095);
  r = read_until_close(fd, 5000, &closed);
  assert_true(closed);
  assert_non_null(strstr(r, "HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  free(r);
  close(fd);
  free(big);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.too_large, 1);
  r = get_path(f->port, "/healthz"); /* the server is fine */
  assert_string_equal(body_of(r), "ok");
  free(r);
  stop(f);
}

static void test_server_slowloris(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  const char *req = "GET /healthz HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
  int fd, closed = 0;
  int64_t t0;
  size_t i;
  kcr_server_stats st;
  (void)state;
  o.header_timeout_ns = 300 * 1000000LL;
  f = start(&o);
  fd = dial(f->port);
  t0 = now_ms();
  /* One byte every 50 ms: steady, but the head would take ~3 s. */
  for (i = 0; i < strlen(req); i++) {
    struct pollfd p = {fd, POLLIN, 0};
    send_all(fd, req + i, 1);
    if (poll(&p, 1, 50) > 0) {
      char c;
      if (recv(fd, &c, 1, 0) <= 0) {
        closed = 1;
        break;
      }
    }
  }
  assert_true(closed);
  assert_true(now_ms() - t0 < 2000);
  close(fd);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.header_timeouts, 1);
  assert_int_equal(st.requests, 0);
  stop(f);
}

/* A check that takes 2 s, and records whether it ran on the loop thread. */
typedef struct slow_check {
  kcr_loop_t *loop;
  atomic_int started;
  atomic_int on_loop;
} slow_check_t;

static int on_check_slow(void *data) {
  slow_check_t *sc = data;
  struct timespec ts = {2, 0};
  if (kcr_loop_on_thread(sc->loop))
    atomic_store(&sc->on_loop, 1);
  atomic_store(&sc->started, 1);
  nanosleep(&ts, NULL);
  return 0;
}

static void on_posted(kcr_loop_t *loop, void *data) {
  (void)loop;
  atomic_store((_Atomic int64_t *)data, now_ms());
}

static void test_server_idle_and_connection_limit(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  int a, b, c, closed;
  char *r;
  kcr_server_stats st;
  (void)state;
  o.max_connections = 2;
  o.idle_timeout_ns = 200 * 1000000LL;
  f = start(&o);
  a = dial(f->port);
  r = read_until_close(a, 50, &closed); /* a is the older */
  free(r);
  b = dial(f->port);
  r = read_until_close(b, 50, &closed);
  free(r);
  /* The server is full: a third connection sheds the oldest idle one, a. */
  c = dial(f->port);
  r = read_until_close(a, 2000, &closed);
  assert_true(closed);
  assert_string_equal(r, "");
  free(r);
  close(a);
  /* a kept-alive connection is closed after the idle timeout */
  send_all(c, "GET /healthz HTTP/1.1\r\n\r\n", 25);
  r = read_until_close(c, 3000, &closed);
  assert_non_null(strstr(r, "200 OK"));
  assert_true(closed);
  free(r);
  close(c);
  close(b);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.shed, 1);
  assert_int_equal(st.rejected, 0);
  stop(f);
}

/* on_stall blocks the loop thread for 300 ms, so that connections queue in
 * the listener's backlog and are accepted in one batch. */
static void on_stall(kcr_loop_t *loop, void *data) {
  struct timespec ts = {0, 300 * 1000000L};
  (void)loop;
  atomic_store((atomic_int *)data, 1);
  nanosleep(&ts, NULL);
}

/* stall_loop blocks f's loop thread for 300 ms from now (on_stall) and
 * returns once it is blocked. */
static void stall_loop(fixture_t *f) {
  atomic_int stalled = 0;
  int64_t t0 = now_ms();
  assert_int_equal(kcr_loop_post(f->loop, on_stall, &stalled), 0);
  while (!atomic_load(&stalled) && now_ms() - t0 < 3000) {
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  assert_true(atomic_load(&stalled));
}

/* Issue 28, finding 2: two holders that have each sent one byte fill the
 * server. A probe and then a reconnecting holder arrive in one accept batch:
 * the holder's admission sheds the other holder, not the probe, which was
 * accepted in the same batch and has its whole request waiting unread. */
static void test_server_shed_spares_probe_in_batch(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  int a, b, p, h, closed;
  char *r;
  kcr_server_stats st;
  (void)state;
  o.max_connections = 2;
  f = start(&o);
  a = dial(f->port);
  send_all(a, "G", 1);
  b = dial(f->port);
  send_all(b, "G", 1);
  r = read_until_close(a, 100, &closed); /* let the server read both */
  assert_false(closed);
  free(r);
  stall_loop(f);
  p = dial(f->port); /* both wait in the backlog while the loop is stalled */
  send_all(p, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 44);
  h = dial(f->port);
  send_all(h, "G", 1);
  r = read_until_close(p, 3000, &closed);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  assert_true(closed);
  free(r);
  assert_closed(a, 1000); /* shed to admit the probe */
  assert_closed(b, 1000); /* shed to admit the holder, in the probe's stead */
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.shed, 2);
  assert_int_equal(st.rejected, 0);
  close(a);
  close(b);
  close(p);
  close(h);
  stop(f);
}

/* Issue 28, finding 2, TLS floods of 1000: a batch of reconnects larger than
 * the server used to shed every connection older than the batch, since each
 * shed left one fewer candidate outside it and the last one left was the
 * client that had sent most. Here 7 one-byte holders and a client P that has
 * sent 4000 bytes of an unfinished head (a TLS handshake in progress looks
 * the same) fill a server of 8; 20 holders arrive in one batch. At most half
 * the server turns over per loop iteration, the holders rank below P, and P
 * finishes its request and is answered. */
static void test_server_shed_bounded_per_iteration(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  int old[7], fresh[20], p, closed;
  char head[4096];
  char *r;
  kcr_server_stats st;
  size_t n;
  (void)state;
  o.max_connections = 8;
  o.max_header_bytes = 8192;
  f = start(&o);
  for (int i = 0; i < 7; i++) {
    old[i] = dial(f->port);
    send_all(old[i], "G", 1);
  }
  p = dial(f->port);
  n = (size_t)snprintf(head, sizeof(head), "GET /healthz HTTP/1.1\r\nConnection: close\r\n");
  while (n + 24 < sizeof(head))
    n += (size_t)snprintf(head + n, sizeof(head) - n, "X-Pad: %016zu\r\n", n);
  send_all(p, head, n);                  /* no blank line yet: the head is not complete */
  r = read_until_close(p, 100, &closed); /* let the server read them all */
  assert_false(closed);
  free(r);
  stall_loop(f);
  for (int i = 0; i < 20; i++) /* all in the backlog while the loop is stalled */
    fresh[i] = dial(f->port);
  /* Let the batch be accepted and shed, then finish P's request. */
  r = read_until_close(p, 500, &closed);
  assert_false(closed);
  free(r);
  send_all(p, "\r\n", 2);
  r = read_until_close(p, 3000, &closed);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  free(r);
  for (int i = 0; i < 7; i++)
    assert_closed(old[i], 1000);
  kcr_server_get_stats(f->srv, &st);
  assert_true(st.shed >= 20);
  assert_int_equal(st.rejected, 0);
  for (int i = 0; i < 7; i++)
    close(old[i]);
  for (int i = 0; i < 20; i++)
    close(fresh[i]);
  close(p);
  stop(f);
}

/* A kept-alive client that has made a request is worth more than a holder
 * that has sent one byte in the same time, though it is older and idle. */
static void test_server_shed_keeps_client_that_sent(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  int a, b, c, closed;
  char *r;
  kcr_server_stats st;
  (void)state;
  o.max_connections = 2;
  f = start(&o);
  a = dial(f->port);
  send_all(a, "GET /healthz HTTP/1.1\r\n\r\n", 25);
  r = read_response(a);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  free(r);
  b = dial(f->port);
  send_all(b, "G", 1);
  r = read_until_close(b, 100, &closed);
  assert_false(closed);
  free(r);
  c = dial(f->port);
  send_all(c, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 44);
  r = read_until_close(c, 3000, &closed);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  free(r);
  assert_closed(b, 1000);                           /* the holder went */
  send_all(a, "GET /healthz HTTP/1.1\r\n\r\n", 25); /* a is still served */
  r = read_response(a);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  free(r);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.shed, 1);
  close(a);
  close(b);
  close(c);
  stop(f);
}

/* A flood from one address is shed before a lone client from another, even
 * when the flood's connections have sent more: with 127.0.0.2 holding two of
 * three connections, a newcomer sheds one of those, not the client from
 * 127.0.0.1 that has sent one byte. */
static void test_server_shed_busiest_peer_first(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  int h1, h2, me, n, closed;
  char *r;
  kcr_server_stats st;
  (void)state;
  o.max_connections = 3;
  f = start(&o);
  me = dial_from(f->port, "127.0.0.1");
  send_all(me, "G", 1);
  h1 = dial_from(f->port, "127.0.0.2");
  send_all(h1, "GET /healthz HTTP/1.1\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 62);
  h2 = dial_from(f->port, "127.0.0.2");
  send_all(h2, "GET /healthz HTTP/1.1\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 62);
  r = read_until_close(me, 100, &closed); /* let the server read all three */
  assert_false(closed);
  free(r);
  n = dial_from(f->port, "127.0.0.3");
  assert_closed(h1, 1000); /* the busiest peer's, the one with the lower rate (older) */
  send_all(me, "ET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 43);
  r = read_until_close(me, 3000, &closed);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  free(r);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.shed, 1);
  close(me);
  close(h1);
  close(h2);
  close(n);
  stop(f);
}

/* An auth hook that blocks on a gate for every token but "good", which the
 * cached hook answers at once: a stand-in for TokenReviews that take long. */
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int open;
  int inside; /* calls blocked on the gate */
} gate_t;

static int gate_check(void *data, const char *token, const char *verb, const char *path) {
  gate_t *g = data;
  (void)verb;
  (void)path;
  if (!token)
    return 401;
  pthread_mutex_lock(&g->mu);
  g->inside++;
  pthread_cond_broadcast(&g->cond);
  while (!g->open)
    pthread_cond_wait(&g->cond, &g->mu);
  g->inside--;
  pthread_mutex_unlock(&g->mu);
  return 200;
}

static int gate_cached(void *data, const char *token, const char *verb, const char *path) {
  (void)data;
  (void)verb;
  (void)path;
  return token && strcmp(token, "good") == 0 ? 200 : 0;
}

static int gate_inside(gate_t *g) {
  int n;
  pthread_mutex_lock(&g->mu);
  n = g->inside;
  pthread_mutex_unlock(&g->mu);
  return n;
}

/* Issue 28, finding 4: /metrics requests whose auth blocks run on the auth
 * pool, side by side; a cached token and the probes are answered meanwhile;
 * past the pool's queue a request is refused with 429; all the others are
 * answered once the reviews return. */
static void test_server_auth_pool(void **state) {
  enum { NSLOW = KCR_SERVER_AUTH_THREADS + KCR_SERVER_AUTH_QUEUE + 1 };
  kcr_server_options o = {0};
  gate_t g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
  fixture_t *f;
  int fds[NSLOW], ok = 0, refused = 0;
  int64_t t0;
  char req[128], *r;
  kcr_server_stats st;
  (void)state;
  o.metrics_auth = gate_check;
  o.metrics_auth_cached = gate_cached;
  o.metrics_auth_data = &g;
  f = start(&o);
  for (int i = 0; i < KCR_SERVER_AUTH_THREADS; i++) {
    fds[i] = dial(f->port);
    snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nAuthorization: Bearer slow-%d\r\n\r\n", i);
    send_all(fds[i], req, strlen(req));
  }
  t0 = now_ms();
  while (gate_inside(&g) < KCR_SERVER_AUTH_THREADS && now_ms() - t0 < 5000) {
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  assert_int_equal(gate_inside(&g), KCR_SERVER_AUTH_THREADS); /* side by side */
  r = get(f->port,
          "GET /metrics HTTP/1.1\r\nAuthorization: Bearer good\r\nConnection: close\r\n\r\n");
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  free(r);
  r = get_path(f->port, "/healthz");
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  free(r);
  /* The queue takes KCR_SERVER_AUTH_QUEUE more; one of the next batch is refused. */
  for (int i = KCR_SERVER_AUTH_THREADS; i < NSLOW; i++) {
    fds[i] = dial(f->port);
    snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nAuthorization: Bearer slow-%d\r\n\r\n", i);
    send_all(fds[i], req, strlen(req));
  }
  t0 = now_ms();
  do {
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
    kcr_server_get_stats(f->srv, &st);
  } while (st.auth_refused < 1 && now_ms() - t0 < 5000);
  assert_int_equal(st.auth_refused, 1);
  assert_int_equal(gate_inside(&g), KCR_SERVER_AUTH_THREADS);
  pthread_mutex_lock(&g.mu);
  g.open = 1;
  pthread_cond_broadcast(&g.cond);
  pthread_mutex_unlock(&g.mu);
  for (int i = 0; i < NSLOW; i++) {
    r = read_response(fds[i]);
    ok += strstr(r, "HTTP/1.1 200 OK\r\n") != NULL;
    refused += strstr(r, "HTTP/1.1 429 ") != NULL;
    if (!strstr(r, "HTTP/1.1 200 OK\r\n") && !strstr(r, "HTTP/1.1 429 "))
      print_message("slow-%d answered: %.40s\n", i, r); /* what failed, before the assert */
    free(r);
    close(fds[i]);
  }
  assert_int_equal(ok, NSLOW - 1);
  assert_int_equal(refused, 1);
  stop(f);
}

/* A connection whose request is with the worker is never shed: when every
 * connection is, a new one is refused. */
static void test_server_full_of_work_refuses(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  slow_check_t sc;
  int a, b, closed;
  int64_t t0;
  char *r;
  kcr_server_stats st;
  (void)state;
  o.max_connections = 1;
  f = start(&o);
  memset(&sc, 0, sizeof(sc));
  sc.loop = f->loop;
  assert_int_equal(
      kcr_server_add_check(f->srv, KCR_PROBE_HEALTHZ, "slow", on_check_slow, &sc, NULL), 0);
  a = dial(f->port);
  send_all(a, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 44);
  t0 = now_ms();
  while (!atomic_load(&sc.started) && now_ms() - t0 < 3000) {
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  b = dial(f->port);
  r = read_until_close(b, 1000, &closed);
  assert_true(closed);
  assert_string_equal(r, "");
  free(r);
  close(b);
  r = read_until_close(a, 5000, &closed);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  free(r);
  close(a);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.rejected, 1);
  assert_int_equal(st.shed, 0);
  stop(f);
}

static void test_server_bind_errors(void **state) {
  kcr_server_options o = {0}, o2 = {0};
  fixture_t *f = start(&o);
  kcr_server_t *s2 = NULL;
  kcr_error_t err = {0};
  char addr[64];
  (void)state;
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", f->port);
  o2.loop = f->loop;
  o2.probes = 1;
  o2.bind_address = addr;
  assert_int_equal(kcr_server_create(&o2, &s2, &err), KCR_ESYS);
  assert_null(s2);
  assert_non_null(strstr(err.message, "address already in use"));
  o2.bind_address = "nonsense";
  assert_int_equal(kcr_server_create(&o2, &s2, NULL), KCR_EINVAL);
  o2.bind_address = "127.0.0.1:99999";
  assert_int_equal(kcr_server_create(&o2, &s2, NULL), KCR_EINVAL);
  o2.bind_address = ":0";
  assert_int_equal(kcr_server_create(&o2, &s2, NULL), 0);
  assert_true(kcr_server_port(s2) > 0);
  kcr_server_destroy(s2);
  stop(f);
}

static void test_server_destroy_with_open_connections(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  int a = dial(f->port), b = dial(f->port), closed;
  char *r;
  (void)state;
  send_all(a, "GET /hea", 8);
  kcr_server_destroy(f->srv);
  f->srv = NULL;
  r = read_until_close(a, 2000, &closed);
  assert_true(closed);
  free(r);
  close(a);
  close(b);
  stop(f);
}

static void test_server_loop_stopped_first(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  int a = dial(f->port), closed;
  char *r = read_until_close(a, 100, &closed);
  (void)state;
  free(r);
  kcr_loop_stop(f->loop);
  kcr_server_destroy(f->srv);
  f->srv = NULL;
  close(a);
  stop(f);
}

/* While a check sleeps 2 s, the loop still runs posted closures and answers
 * other connections at once: the check runs on the server's worker. */
static void test_server_slow_check_does_not_block_loop(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  slow_check_t sc = {.loop = f->loop};
  _Atomic int64_t ran = 0;
  int64_t t0, posted_ms, other_ms;
  int a, closed;
  char *r;
  (void)state;
  assert_int_equal(
      kcr_server_add_check(f->srv, KCR_PROBE_HEALTHZ, "slow", on_check_slow, &sc, NULL), 0);
  a = dial(f->port);
  t0 = now_ms();
  send_all(a, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 44);
  while (!atomic_load(&sc.started) && now_ms() - t0 < 3000) {
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  assert_true(atomic_load(&sc.started));

  /* A closure posted to the loop runs while the check sleeps. */
  posted_ms = now_ms();
  assert_int_equal(kcr_loop_post(f->loop, on_posted, (void *)&ran), 0);
  while (!atomic_load(&ran) && now_ms() - posted_ms < 3000) {
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  assert_true(atomic_load(&ran) != 0);
  posted_ms = atomic_load(&ran) - posted_ms;

  /* So does a request the loop answers by itself. */
  other_ms = now_ms();
  r = get_path(f->port, "/nowhere");
  other_ms = now_ms() - other_ms;
  assert_non_null(strstr(r, "HTTP/1.1 404 Not Found\r\n"));
  free(r);
  print_message("slow check: posted closure ran after %lld ms, 404 answered in %lld ms\n",
                (long long)posted_ms, (long long)other_ms);
  assert_true(posted_ms < 500);
  assert_true(other_ms < 500);

  r = read_until_close(a, 5000, &closed);
  assert_true(closed);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  assert_true(now_ms() - t0 >= 1900);
  free(r);
  close(a);
  assert_int_equal(atomic_load(&sc.on_loop), 0);
  stop(f);
}

/* rss_bytes: this process's resident set size, or 0 when unknown. */
static size_t rss_bytes(void) {
  char line[128], *p;
  long resident;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  p = fgets(line, sizeof(line), f);
  fclose(f);
  if (!p)
    return 0;
  (void)strtol(line, &p, 10); /* total pages, then resident pages */
  resident = strtol(p, NULL, 10);
  return resident > 0 ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

/* rss_meaningful: sanitizers and valgrind keep freed memory (quarantine) and
 * add their own, so RSS says nothing about the server there. */
static int rss_meaningful(void) {
  const char *pre = getenv("LD_PRELOAD");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return 0;
#endif
#endif
  return !(pre && strstr(pre, "vgpreload"));
}

/* Bug 16.2: clients that pipeline requests and never read the replies. The
 * server answers one request per connection at a time and stops reading while
 * the reply is unsent, so its memory stays within the budget (and far below:
 * one connection's buffer each), and the process's RSS does not grow with the
 * flood. */
static void test_server_pipelining_without_reading_is_bounded(void **state) {
  enum { NCONN = 32 };
  kcr_server_options o = {0};
  fixture_t *f;
  static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  size_t reqlen = sizeof(req) - 1, blob_len = reqlen * 256, off[NCONN] = {0}, rss0, rss1;
  char *blob = malloc(blob_len), *r;
  int fds[NCONN];
  uint64_t sent = 0;
  int64_t t0;
  kcr_server_stats st;
  (void)state;
  o.max_buffered_bytes = (size_t)16 * 1024 * 1024;
  f = start(&o);
  for (size_t i = 0; i < blob_len; i += reqlen)
    memcpy(blob + i, req, reqlen);
  rss0 = rss_bytes();
  for (int i = 0; i < NCONN; i++) {
    int small = 4096;
    struct sockaddr_in a = {0};
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fds[i] >= 0);
    setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)f->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fds[i], (struct sockaddr *)&a, sizeof(a)), 0);
    fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
  }
  /* Flood for 3 s, never reading. */
  t0 = now_ms();
  while (now_ms() - t0 < 3000) {
    int progressed = 0;
    for (int i = 0; i < NCONN; i++) {
      ssize_t w = send(fds[i], blob + off[i], blob_len - off[i], MSG_NOSIGNAL);
      if (w > 0) {
        sent += (uint64_t)w;
        off[i] = (off[i] + (size_t)w) % blob_len;
        progressed = 1;
      }
    }
    if (!progressed) {
      struct timespec ts = {0, 2 * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  rss1 = rss_bytes();
  kcr_server_get_stats(f->srv, &st);
  print_message("pipelining: %d connections sent %llu bytes (%llu requests); server answered "
                "%llu, held peak %zu bytes (budget %zu), RSS %zu -> %zu KiB\n",
                NCONN, (unsigned long long)sent, (unsigned long long)(sent / reqlen),
                (unsigned long long)st.requests, st.bytes_held_peak, o.max_buffered_bytes,
                rss0 / 1024, rss1 / 1024);
  assert_true(st.bytes_held_peak <= o.max_buffered_bytes);
  /* One connection's buffer and one small reply each, nothing per request. */
  assert_true(st.bytes_held_peak <=
              (size_t)NCONN * (o.max_header_bytes ? o.max_header_bytes : 8192) * 2);
  if (rss_meaningful())
    assert_true(rss1 < rss0 + (size_t)24 * 1024 * 1024);
  for (int i = 0; i < NCONN; i++)
    close(fds[i]);
  free(blob);
  r = get_path(f->port, "/healthz"); /* the server is fine */
  assert_string_equal(body_of(r), "ok");
  free(r);
  stop(f);
}

/* Bug 16.3: 150 connections that send nothing, and 30 that stall halfway
 * through a head, hold the server full; probes still get in (the oldest idle
 * connections are shed to admit them) and each answers within 1 s. */
static void test_server_idle_connections_do_not_starve_probes(void **state) {
  enum { NIDLE = 150, NSLOW = 30, NPROBES = 30 };
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  int idle[NIDLE + NSLOW];
  int64_t worst = 0;
  kcr_server_stats st;
  char *r;
  (void)state;
  for (int i = 0; i < NIDLE + NSLOW; i++) {
    idle[i] = dial(f->port);
    if (i >= NIDLE)
      send_all(idle[i], "GET /hea", 8);
  }
  r = read_until_close(idle[0], 100, &(int){0}); /* let the server accept them */
  free(r);
  for (int i = 0; i < NPROBES; i++) {
    int64_t t0 = now_ms(), took;
    int fd = dial(f->port), closed;
    send_all(fd, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", 44);
    r = read_until_close(fd, 1000, &closed);
    took = now_ms() - t0;
    if (took > worst)
      worst = took;
    assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
    assert_string_equal(body_of(r), "ok");
    assert_true(closed);
    assert_true(took < 1000);
    free(r);
    close(fd);
  }
  kcr_server_get_stats(f->srv, &st);
  print_message("idle flood: %d idle + %d stalled connections, %d probes, slowest %lld ms, "
                "%llu shed, %llu refused\n",
                NIDLE, NSLOW, NPROBES, (long long)worst, (unsigned long long)st.shed,
                (unsigned long long)st.rejected);
  assert_int_equal(st.rejected, 0);
  assert_true(st.shed >= NIDLE + NSLOW - 64);
  for (int i = 0; i < NIDLE + NSLOW; i++)
    close(idle[i]);
  stop(f);
}

/* With the defaults, a connection that sends nothing is cut after the 3 s
 * header timeout. */
static void test_server_default_first_byte_timeout(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  int fd = dial(f->port), closed;
  int64_t t0 = now_ms(), took;
  char *r = read_until_close(fd, 6000, &closed);
  (void)state;
  took = now_ms() - t0;
  assert_true(closed);
  assert_string_equal(r, "");
  assert_true(took >= 2500 && took < 4500);
  free(r);
  close(fd);
  stop(f);
}

/* ---- checks that say why (kcr_server_add_check_err) ---- */

static int on_err_check(void *data, kcr_error_t *err) {
  atomic_int *healthy = data;
  if (atomic_load(healthy))
    return 0;
  return kcr_error_set(err, KCR_EAGAIN, "the queue is stuck");
}

/* expect_path GETs path and asserts the status line starts with status and,
 * when body is not NULL, the body. */
static void expect_path(int port, const char *path, const char *status, const char *body) {
  char *r = get_path(port, path);
  assert_non_null(strstr(r, status));
  if (body)
    assert_string_equal(body_of(r), body);
  free(r);
}

static void test_server_check_reasons(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  atomic_int a, b;
  (void)state;
  atomic_init(&a, 1);
  atomic_init(&b, 1);
  assert_int_equal(
      kcr_server_add_check_err(f->srv, KCR_PROBE_READYZ, "alpha", on_err_check, &a, NULL), 0);
  assert_int_equal(
      kcr_server_add_check_err(f->srv, KCR_PROBE_READYZ, "beta", on_err_check, &b, NULL), 0);
  assert_int_equal(
      kcr_server_add_check_err(f->srv, KCR_PROBE_READYZ, "alpha", on_err_check, &a, NULL),
      KCR_EEXIST);

  expect_path(f->port, "/readyz", "HTTP/1.1 200 OK\r\n", "ok");
  expect_path(f->port, "/readyz?verbose", "HTTP/1.1 200 OK\r\n",
              "[+]alpha ok\n[+]beta ok\n[+]ping ok\nreadyz check passed\n");

  atomic_store(&b, 0);
  expect_path(f->port, "/readyz", "HTTP/1.1 500 ",
              "[+]alpha ok\n[-]beta failed: reason withheld\n[+]ping ok\n"
              "readyz check failed\n");
  /* one check alone: its reason, as controller-runtime's CheckHandler */
  expect_path(f->port, "/readyz/beta", "HTTP/1.1 500 ",
              "internal server error: the queue is stuck\n");
  expect_path(f->port, "/readyz/alpha", "HTTP/1.1 200 OK\r\n", "ok");
  expect_path(f->port, "/readyz?exclude=beta", "HTTP/1.1 200 OK\r\n", NULL);
  /* readiness checks are not health checks */
  expect_path(f->port, "/healthz", "HTTP/1.1 200 OK\r\n", NULL);
  expect_path(f->port, "/healthz/beta", "HTTP/1.1 404 ", NULL);
  stop(f);
}

/* ---- handler requests behind the auth hook (handler_auth) ---- */

typedef struct hauth {
  atomic_int handled;
  char verb[16], path[64]; /* what the blocking hook was last asked */
  pthread_mutex_t mu;
} hauth_t;

/* hauth_check: the blocking decision (auth pool): "pool-ok" passes, "pool-no"
 * is forbidden, no token is 401. */
static int hauth_check(void *data, const char *token, const char *verb, const char *path) {
  hauth_t *h = data;
  pthread_mutex_lock(&h->mu);
  snprintf(h->verb, sizeof(h->verb), "%s", verb);
  snprintf(h->path, sizeof(h->path), "%s", path);
  pthread_mutex_unlock(&h->mu);
  if (!token)
    return 401;
  return strcmp(token, "pool-ok") == 0 ? 200 : 403;
}

/* hauth_cached: "cached-ok" passes without the pool, "cached-no" is refused. */
static int hauth_cached(void *data, const char *token, const char *verb, const char *path) {
  (void)data;
  (void)verb;
  (void)path;
  if (token && strcmp(token, "cached-ok") == 0)
    return 200;
  if (token && strcmp(token, "cached-no") == 0)
    return 403;
  return 0;
}

static void hauth_handler(void *data, const kcr_server_request *req, kcr_server_response *resp) {
  hauth_t *h = data;
  atomic_fetch_add(&h->handled, 1);
  resp->content_type = "text/plain";
  kcr_buf_appendf(&resp->body, "handled %s %s", req->method, req->path);
}

static char *req_with_token(int port, const char *method, const char *path, const char *token) {
  char req[512];
  if (token)
    snprintf(req, sizeof(req),
             "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\n"
             "Connection: close\r\n\r\n",
             method, path, token);
  else
    snprintf(req, sizeof(req),
             "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", method,
             path);
  return get(port, req);
}

/* start_hauth serves hauth_handler behind hauth_check (and hauth_cached with
 * handler_auth). */
static fixture_t *start_hauth(hauth_t *h, int handler_auth) {
  kcr_server_options o = {0};
  memset(h, 0, sizeof(*h));
  atomic_init(&h->handled, 0);
  pthread_mutex_init(&h->mu, NULL);
  o.metrics_auth = hauth_check;
  o.metrics_auth_cached = handler_auth ? hauth_cached : NULL;
  o.metrics_auth_data = h;
  o.handler = hauth_handler;
  o.handler_data = h;
  o.handler_auth = handler_auth;
  return start(&o);
}

/* expect sends method path with token (may be NULL) and asserts the status
 * line starts with status and, when body is not NULL, the body. */
static void expect(int port, const char *method, const char *path, const char *token,
                   const char *status, const char *body) {
  char *r = req_with_token(port, method, path, token);
  assert_non_null(strstr(r, status));
  if (body)
    assert_string_equal(body_of(r), body);
  free(r);
}

static void test_server_handler_auth(void **state) {
  hauth_t h;
  fixture_t *f = start_hauth(&h, 1);
  (void)state;
  expect(f->port, "GET", "/extra", NULL, "HTTP/1.1 401 ", NULL);
  expect(f->port, "GET", "/extra", "cached-no", "HTTP/1.1 403 ", NULL);
  expect(f->port, "GET", "/extra", "pool-no", "HTTP/1.1 403 ", NULL);
  assert_int_equal(atomic_load(&h.handled), 0); /* never reached the handler */
  expect(f->port, "GET", "/extra", "cached-ok", "HTTP/1.1 200 OK\r\n", "handled GET /extra");
  expect(f->port, "POST", "/extra/sub", "pool-ok", "HTTP/1.1 200 OK\r\n",
         "handled POST /extra/sub");
  assert_int_equal(atomic_load(&h.handled), 2);
  pthread_mutex_lock(&h.mu);
  assert_string_equal(h.verb, "post"); /* the method, as a Kubernetes verb */
  assert_string_equal(h.path, "/extra/sub");
  pthread_mutex_unlock(&h.mu);
  /* the probes are not behind the hook */
  expect(f->port, "GET", "/healthz", NULL, "HTTP/1.1 200 OK\r\n", "ok");
  stop(f);
  pthread_mutex_destroy(&h.mu);
}

/* without handler_auth, handler requests are not checked (the webhook server) */
static void test_server_handler_without_auth(void **state) {
  hauth_t h;
  fixture_t *f = start_hauth(&h, 0);
  (void)state;
  expect(f->port, "GET", "/extra", NULL, "HTTP/1.1 200 OK\r\n", "handled GET /extra");
  expect(f->port, "GET", "/metrics", NULL, "HTTP/1.1 401 ", NULL);
  stop(f);
  pthread_mutex_destroy(&h.mu);
}

/* ---- the manager's checks and metrics extra handlers ---- */

static void api_404(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  (void)req;
  (void)data;
  resp->status = 404;
  resp->body = "{}";
}

static char X_[] = "x", TREE_[] = "tree", DEEP_[] = "deep";

static void extra_handler(void *data, const kcr_server_request *req, kcr_server_response *resp) {
  resp->content_type = "text/plain";
  kcr_buf_appendf(&resp->body, "%s at %s", (const char *)data, req->path);
}

static void test_server_manager_checks_and_extra_handlers(void **state) {
  kcr_test_client tc;
  kcr_manager_options mo = {0};
  kcr_manager_serving_options so = {0};
  kcr_manager_t *m;
  kcr_error_t err = {0};
  atomic_int healthy, ready;
  kcr_test_manager_run run;
  int pp = 0, mp = 0;
  char *r;
  (void)state;
  atomic_init(&healthy, 1);
  atomic_init(&ready, 0);
  assert_int_equal(kcr_test_client_start(api_404, NULL, &tc), 0);
  mo.config = tc.config;
  mo.no_signal_handlers = true;
  assert_int_equal(kcr_manager_create(&mo, &m, NULL), 0);
  so.metrics_bind_address = "127.0.0.1:0";
  so.health_probe_bind_address = "127.0.0.1:0";
  assert_int_equal(kcr_manager_serve(m, &so, NULL), 0);

  assert_int_equal(kcr_manager_add_healthz_check(m, "worker", on_err_check, &healthy, &err), 0);
  assert_int_equal(kcr_manager_add_readyz_check(m, "worker", on_err_check, &ready, &err), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_add_healthz_check(m, "worker", on_err_check, &healthy, &err),
                   KCR_EEXIST);
  assert_string_equal(err.message, "healthz checker \"worker\" already exists");
  assert_int_equal(kcr_manager_add_readyz_check(m, "informer-sync", on_err_check, &ready, &err),
                   KCR_EEXIST);
  assert_int_equal(kcr_manager_add_healthz_check(m, "ping", on_err_check, &ready, &err),
                   KCR_EEXIST);
  assert_int_equal(kcr_manager_add_healthz_check(m, "bad name", on_err_check, &ready, &err),
                   KCR_EINVAL);
  assert_int_equal(kcr_manager_add_healthz_check(m, "", on_err_check, &ready, &err), KCR_EINVAL);
  assert_int_equal(kcr_manager_add_healthz_check(m, "nofn", NULL, NULL, &err), KCR_EINVAL);

  assert_int_equal(kcr_manager_add_metrics_extra_handler(m, "/debug/x", extra_handler, X_, &err),
                   0);
  assert_int_equal(kcr_manager_add_metrics_extra_handler(m, "/tree/", extra_handler, TREE_, &err),
                   0);
  assert_int_equal(
      kcr_manager_add_metrics_extra_handler(m, "/tree/deep", extra_handler, DEEP_, &err), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_add_metrics_extra_handler(m, "/metrics", extra_handler, X_, &err),
                   KCR_EEXIST);
  assert_string_equal(err.message, "overriding builtin /metrics endpoint is not allowed");
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_add_metrics_extra_handler(m, "/debug/x", extra_handler, X_, &err),
                   KCR_EEXIST);
  assert_non_null(strstr(err.message, "duplicate path \"/debug/x\""));
  assert_int_equal(kcr_manager_add_metrics_extra_handler(m, "debug", extra_handler, X_, &err),
                   KCR_EINVAL);
  assert_int_equal(kcr_manager_add_metrics_extra_handler(m, "/y", NULL, NULL, &err), KCR_EINVAL);

  kcr_test_manager_start(&run, m);
  for (int i = 0; i < 10000 && !kcr_manager_started(m); i++) {
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  assert_true(kcr_manager_started(m));
  pp = kcr_manager_probe_port(m);
  mp = kcr_manager_metrics_port(m);
  assert_true(pp > 0 && mp > 0);

  /* after run: refused */
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_add_healthz_check(m, "late", on_err_check, &healthy, &err),
                   KCR_EINVAL);
  assert_non_null(strstr(err.message, "already been created"));
  assert_int_equal(kcr_manager_add_metrics_extra_handler(m, "/late", extra_handler, X_, &err),
                   KCR_EINVAL);

  expect_path(pp, "/healthz?verbose", "HTTP/1.1 200 OK\r\n",
              "[+]ping ok\n[+]worker ok\nhealthz check passed\n");
  expect_path(pp, "/readyz", "HTTP/1.1 500 ",
              "[+]informer-sync ok\n[+]ping ok\n"
              "[-]worker failed: reason withheld\nreadyz check failed\n");
  expect_path(pp, "/readyz/worker", "HTTP/1.1 500 ", "internal server error: the queue is stuck\n");
  atomic_store(&ready, 1);
  expect_path(pp, "/readyz", "HTTP/1.1 200 OK\r\n", "ok");

  expect_path(mp, "/debug/x", "HTTP/1.1 200 OK\r\n", "x at /debug/x");
  expect_path(mp, "/tree/a/b", "HTTP/1.1 200 OK\r\n", "tree at /tree/a/b");
  /* the longest pattern wins */
  expect_path(mp, "/tree/deep", "HTTP/1.1 200 OK\r\n", "deep at /tree/deep");
  expect_path(mp, "/debug/x/more", "HTTP/1.1 404 ", NULL);
  r = get_path(mp, "/metrics");
  assert_non_null(strstr(r, "HTTP/1.1 200 OK\r\n"));
  assert_non_null(strstr(body_of(r), "process_"));
  free(r);

  assert_int_equal(kcr_test_manager_stop(&run), 0);
  kcr_manager_destroy(m);
  kcr_test_client_stop(&tc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_server_healthz_readyz),
      cmocka_unit_test(test_server_routes_methods),
      cmocka_unit_test(test_server_keep_alive),
      cmocka_unit_test(test_server_defer_accept),
      cmocka_unit_test(test_server_oversized_request),
      cmocka_unit_test(test_server_slowloris),
      cmocka_unit_test(test_server_idle_and_connection_limit),
      cmocka_unit_test(test_server_shed_spares_probe_in_batch),
      cmocka_unit_test(test_server_shed_bounded_per_iteration),
      cmocka_unit_test(test_server_shed_keeps_client_that_sent),
      cmocka_unit_test(test_server_shed_busiest_peer_first),
      cmocka_unit_test(test_server_auth_pool),
      cmocka_unit_test(test_server_full_of_work_refuses),
      cmocka_unit_test(test_server_bind_errors),
      cmocka_unit_test(test_server_destroy_with_open_connections),
      cmocka_unit_test(test_server_loop_stopped_first),
      cmocka_unit_test(test_server_slow_check_does_not_block_loop),
      cmocka_unit_test(test_server_pipelining_without_reading_is_bounded),
      cmocka_unit_test(test_server_idle_connections_do_not_starve_probes),
      cmocka_unit_test(test_server_default_first_byte_timeout),
      cmocka_unit_test(test_server_check_reasons),
      cmocka_unit_test(test_server_handler_auth),
      cmocka_unit_test(test_server_handler_without_auth),
      cmocka_unit_test(test_server_manager_checks_and_extra_handlers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
