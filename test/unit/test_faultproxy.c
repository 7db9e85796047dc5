/* SPDX-License-Identifier: MIT */
/*
 * Unit test of kcr_faultproxy (test/support/kcr_faultproxy.h) without a
 * cluster: a tiny echo server on 127.0.0.1:0 runs in a thread of this test,
 * the proxy forwards to it, and each test drives clients through the proxy
 * while injecting a fault (stall, cut, refuse, a target that refuses). Meant
 * to run clean under TSan and ASan as well as valgrind.
 */
#include "../support/kcr_faultproxy.h"
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* WAIT_MS: how long a test waits for something that should happen. */
#define WAIT_MS 5000
/* QUIET_MS: how long a test waits to be sure nothing happens. */
#define QUIET_MS 300
#define ECHO_MAX_CLIENTS 32

/* --- echo server ------------------------------------------------------------ */

struct echo {
  int lfd;
  int port;
  int stop[2]; /* stop pipe */
  pthread_t thread;
};

static void *echo_main(void *arg) {
  struct echo *e = arg;
  struct pollfd pfds[2 + ECHO_MAX_CLIENTS];
  int clients[ECHO_MAX_CLIENTS];
  int n = 0;
  for (;;) {
    pfds[0] = (struct pollfd){e->stop[0], POLLIN, 0};
    pfds[1] = (struct pollfd){e->lfd, POLLIN, 0};
    for (int i = 0; i < n; i++)
      pfds[2 + i] = (struct pollfd){clients[i], POLLIN, 0};
    if (poll(pfds, 2 + (nfds_t)n, 1000) < 0 && errno != EINTR)
      break;
    if (pfds[0].revents != 0)
      break;
    int kept = 0;
    for (int i = 0; i < n; i++) {
      bool keep = true;
      if (pfds[2 + i].revents != 0) {
        char buf[8192];
        ssize_t r = recv(clients[i], buf, sizeof buf, 0);
        if (r <= 0) {
          keep = false;
        } else {
          for (ssize_t off = 0; off < r && keep;) {
            ssize_t w = send(clients[i], buf + off, (size_t)(r - off), MSG_NOSIGNAL);
            if (w <= 0)
              keep = false;
            else
              off += w;
          }
        }
      }
      if (keep)
        clients[kept++] = clients[i];
      else
        close(clients[i]);
    }
    n = kept;
    if (pfds[1].revents != 0) {
      int fd = accept(e->lfd, NULL, NULL);
      if (fd >= 0 && n < ECHO_MAX_CLIENTS)
        clients[n++] = fd;
      else if (fd >= 0)
        close(fd);
    }
  }
  for (int i = 0; i < n; i++)
    close(clients[i]);
  return NULL;
}

/* listen_loopback: a socket bound to 127.0.0.1:0, listening if `listening`;
 * its port in *port. */
static int listen_loopback(int *port, bool listening) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sin = {0};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sin;
  assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
  if (listening)
    assert_int_equal(listen(fd, 64), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
  *port = ntohs(sin.sin_port);
  return fd;
}

static void echo_start(struct echo *e) {
  e->lfd = listen_loopback(&e->port, true);
  assert_int_equal(pipe(e->stop), 0);
  assert_int_equal(pthread_create(&e->thread, NULL, echo_main, e), 0);
}

static void echo_stop(struct echo *e) {
  char b = 1;
  assert_int_equal(write(e->stop[1], &b, 1), 1);
  pthread_join(e->thread, NULL);
  close(e->stop[0]);
  close(e->stop[1]);
  close(e->lfd);
}

/* --- helpers ---------------------------------------------------------------- */

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int connect_port(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sin = {0};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sin.sin_port = htons((unsigned short)port);
  assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
  return fd;
}

/* recv_within: one recv after waiting up to ms for input. Returns the byte
 * count, 0 at end of stream, -ETIMEDOUT if nothing came, or -errno. */
static long recv_within(int fd, char *buf, size_t size, long ms) {
  struct pollfd pfd = {fd, POLLIN, 0};
  int pr = poll(&pfd, 1, (int)ms);
  if (pr == 0)
    return -ETIMEDOUT;
  if (pr < 0)
    return -errno;
  ssize_t n = recv(fd, buf, size, 0);
  return n >= 0 ? (long)n : -errno;
}

/* expect_echo sends msg on fd and expects it back within WAIT_MS. */
static void expect_echo(int fd, const char *msg) {
  size_t len = strlen(msg);
  assert_int_equal(send(fd, msg, len, MSG_NOSIGNAL), (ssize_t)len);
  char buf[256];
  size_t got = 0;
  long deadline = now_ms() + WAIT_MS;
  while (got < len) {
    long n = recv_within(fd, buf + got, sizeof buf - got, deadline - now_ms());
    assert_true(n > 0);
    got += (size_t)n;
  }
  assert_int_equal(got, len);
  assert_memory_equal(buf, msg, len);
}

/* expect_closed: fd's peer ended the connection (EOF or reset) within WAIT_MS. */
static void expect_closed(int fd) {
  char buf[64];
  long n = recv_within(fd, buf, sizeof buf, WAIT_MS);
  assert_true(n == 0 || n == -ECONNRESET);
}

static bool wait_active(kcr_faultproxy_t *p, int want) {
  long deadline = now_ms() + WAIT_MS;
  while (kcr_faultproxy_active(p) != want) {
    if (now_ms() > deadline)
      return false;
    sleep_ms(5);
  }
  return true;
}

struct fx {
  struct echo echo;
  kcr_faultproxy_t *proxy;
};

static int setup(void **state) {
  struct fx *f = calloc(1, sizeof *f);
  assert_non_null(f);
  echo_start(&f->echo);
  assert_int_equal(kcr_faultproxy_start("127.0.0.1", f->echo.port, &f->proxy), 0);
  assert_true(kcr_faultproxy_port(f->proxy) > 0);
  assert_int_not_equal(kcr_faultproxy_port(f->proxy), f->echo.port);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fx *f = *state;
  kcr_faultproxy_stop(f->proxy);
  echo_stop(&f->echo);
  free(f);
  return 0;
}

/* --- tests ------------------------------------------------------------------ */

static void test_faultproxy_forwards(void **state) {
  struct fx *f = *state;
  int fd = connect_port(kcr_faultproxy_port(f->proxy));
  expect_echo(fd, "hello");
  expect_echo(fd, "again");
  assert_int_equal(kcr_faultproxy_connections(f->proxy), 1);
  assert_int_equal(kcr_faultproxy_active(f->proxy), 1);
  close(fd); /* a clean close travels through and both sides go */
  assert_true(wait_active(f->proxy, 0));
}

/* Half-close: the client's FIN reaches the target, the reply still comes back. */
static void test_faultproxy_half_close(void **state) {
  struct fx *f = *state;
  int fd = connect_port(kcr_faultproxy_port(f->proxy));
  assert_int_equal(send(fd, "bye", 3, MSG_NOSIGNAL), 3);
  assert_int_equal(shutdown(fd, SHUT_WR), 0);
  char buf[16];
  size_t got = 0;
  for (;;) {
    long n = recv_within(fd, buf + got, sizeof buf - got, WAIT_MS);
    assert_true(n >= 0);
    if (n == 0)
      break;
    got += (size_t)n;
  }
  assert_int_equal(got, 3);
  assert_memory_equal(buf, "bye", 3);
  close(fd);
  assert_true(wait_active(f->proxy, 0));
}

/* 4 MiB each way through 16 KiB buffers: order and content survive backpressure. */
static void test_faultproxy_bulk(void **state) {
  struct fx *f = *state;
  enum { TOTAL = 4 * 1024 * 1024 };
  unsigned char *out = malloc(TOTAL), *in = malloc(TOTAL);
  assert_non_null(out);
  assert_non_null(in);
  for (size_t i = 0; i < TOTAL; i++)
    out[i] = (unsigned char)((i * 2654435761u) >> 13);
  int fd = connect_port(kcr_faultproxy_port(f->proxy));
  size_t sent = 0, got = 0;
  long deadline = now_ms() + 30000;
  while (got < TOTAL) {
    assert_true(now_ms() < deadline);
    struct pollfd pfd = {fd, (short)(POLLIN | (sent < TOTAL ? POLLOUT : 0)), 0};
    assert_true(poll(&pfd, 1, 1000) >= 0);
    if ((pfd.revents & POLLOUT) && sent < TOTAL) {
      ssize_t n = send(fd, out + sent, TOTAL - sent > 65536 ? 65536 : TOTAL - sent,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0)
        sent += (size_t)n;
    }
    if (pfd.revents & POLLIN) {
      ssize_t n = recv(fd, in + got, TOTAL - got, MSG_DONTWAIT);
      assert_true(n > 0 || (n < 0 && errno == EAGAIN));
      if (n > 0)
        got += (size_t)n;
    }
  }
  assert_memory_equal(in, out, TOTAL);
  close(fd);
  free(out);
  free(in);
  assert_true(wait_active(f->proxy, 0));
}

static void test_faultproxy_stall(void **state) {
  struct fx *f = *state;
  int port = kcr_faultproxy_port(f->proxy);
  int a = connect_port(port);
  expect_echo(a, "before");

  kcr_faultproxy_stall(f->proxy, true);
  assert_int_equal(send(a, "held", 4, MSG_NOSIGNAL), 4);
  char buf[64];
  assert_int_equal(recv_within(a, buf, sizeof buf, QUIET_MS), -ETIMEDOUT);
  /* A new connection is accepted but gets nothing either. */
  int b = connect_port(port);
  assert_int_equal(send(b, "new", 3, MSG_NOSIGNAL), 3);
  assert_int_equal(recv_within(b, buf, sizeof buf, QUIET_MS), -ETIMEDOUT);
  assert_int_equal(kcr_faultproxy_connections(f->proxy), 2);
  assert_true(wait_active(f->proxy, 2));

  /* Unstalled, the held bytes flow in both connections. */
  kcr_faultproxy_stall(f->proxy, false);
  long n = recv_within(a, buf, sizeof buf, WAIT_MS);
  assert_int_equal(n, 4);
  assert_memory_equal(buf, "held", 4);
  n = recv_within(b, buf, sizeof buf, WAIT_MS);
  assert_int_equal(n, 3);
  assert_memory_equal(buf, "new", 3);
  expect_echo(a, "after");
  close(a);
  close(b);
  assert_true(wait_active(f->proxy, 0));
}

static void test_faultproxy_cut(void **state) {
  struct fx *f = *state;
  int port = kcr_faultproxy_port(f->proxy);
  int a = connect_port(port);
  int b = connect_port(port);
  expect_echo(a, "a");
  expect_echo(b, "b");
  assert_int_equal(kcr_faultproxy_active(f->proxy), 2);

  assert_int_equal(kcr_faultproxy_cut(f->proxy), 2);
  assert_int_equal(kcr_faultproxy_active(f->proxy), 0);
  expect_closed(a);
  expect_closed(b);
  close(a);
  close(b);

  /* New connections are still accepted and forwarded. */
  int c = connect_port(port);
  expect_echo(c, "c");
  assert_int_equal(kcr_faultproxy_connections(f->proxy), 3);
  /* A cut while stalled closes the stalled connections too. */
  kcr_faultproxy_stall(f->proxy, true);
  assert_int_equal(kcr_faultproxy_cut(f->proxy), 1);
  expect_closed(c);
  close(c);
  kcr_faultproxy_stall(f->proxy, false);
  assert_int_equal(kcr_faultproxy_cut(f->proxy), 0);
}

static void test_faultproxy_refuse(void **state) {
  struct fx *f = *state;
  int port = kcr_faultproxy_port(f->proxy);
  int open_before = connect_port(port);
  expect_echo(open_before, "x");

  kcr_faultproxy_refuse(f->proxy, true);
  int a = connect_port(port); /* the kernel completes the handshake */
  expect_closed(a);
  close(a);
  assert_int_equal(kcr_faultproxy_connections(f->proxy), 2);
  expect_echo(open_before, "still"); /* open connections are untouched */
  assert_int_equal(kcr_faultproxy_active(f->proxy), 1);

  kcr_faultproxy_refuse(f->proxy, false);
  int b = connect_port(port);
  expect_echo(b, "y");
  close(b);
  close(open_before);
  assert_true(wait_active(f->proxy, 0));
}

/* A target that refuses connections: the client is reset, nothing leaks. */
static void test_faultproxy_target_refuses(void **state) {
  (void)state;
  int port = 0;
  int bound = listen_loopback(&port, false); /* bound, not listening: refuses */
  kcr_faultproxy_t *p = NULL;
  assert_int_equal(kcr_faultproxy_start("127.0.0.1", port, &p), 0);
  int fd = connect_port(kcr_faultproxy_port(p));
  expect_closed(fd);
  close(fd);
  assert_true(wait_active(p, 0));
  assert_int_equal(kcr_faultproxy_connections(p), 1);
  kcr_faultproxy_stop(p);
  close(bound);
}

static void test_faultproxy_bad_arguments(void **state) {
  (void)state;
  kcr_faultproxy_t *p = (kcr_faultproxy_t *)&p;
  assert_int_equal(kcr_faultproxy_start(NULL, 80, &p), -EINVAL);
  assert_null(p);
  assert_int_equal(kcr_faultproxy_start("127.0.0.1", 0, &p), -EINVAL);
  assert_int_equal(kcr_faultproxy_start("127.0.0.1", 70000, &p), -EINVAL);
  assert_int_equal(kcr_faultproxy_start("127.0.0.1", 80, NULL), -EINVAL);
  assert_int_equal(kcr_faultproxy_start("no-such-host.invalid", 80, &p), -EHOSTUNREACH);
  assert_null(p);
  kcr_faultproxy_stop(NULL);
}

/* stop() with connections open (and stalled) resets them and frees all. */
static void test_faultproxy_stop_with_connections(void **state) {
  struct fx *f = *state;
  int port = kcr_faultproxy_port(f->proxy);
  int a = connect_port(port);
  expect_echo(a, "a");
  kcr_faultproxy_stall(f->proxy, true);
  int b = connect_port(port);
  long t0 = now_ms();
  kcr_faultproxy_stop(f->proxy);
  assert_true(now_ms() - t0 < 1000);
  f->proxy = NULL;
  expect_closed(a);
  expect_closed(b);
  close(a);
  close(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_faultproxy_forwards, setup, teardown),
      cmocka_unit_test_setup_teardown(test_faultproxy_half_close, setup, teardown),
      cmocka_unit_test_setup_teardown(test_faultproxy_bulk, setup, teardown),
      cmocka_unit_test_setup_teardown(test_faultproxy_stall, setup, teardown),
      cmocka_unit_test_setup_teardown(test_faultproxy_cut, setup, teardown),
      cmocka_unit_test_setup_teardown(test_faultproxy_refuse, setup, teardown),
      cmocka_unit_test(test_faultproxy_target_refuses),
      cmocka_unit_test(test_faultproxy_bad_arguments),
      cmocka_unit_test_setup_teardown(test_faultproxy_stop_with_connections, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
