/* SPDX-License-Identifier: MIT */
/*
 * kcr_faultproxy: a fault-injecting TCP proxy for tests (see kcr_faultproxy.h).
 *
 * DESIGN. One proxy thread owns the listening socket and every connection;
 * nothing else touches a socket. The thread loops: take the control state
 * (stall, refuse, a pending cut, stop) under the mutex and acknowledge it,
 * poll the wake pipe, the listener and each connection's two sockets with a
 * 50 ms timeout, then move bytes. Control calls change the state under the
 * mutex, write one byte to the wake pipe and wait on the condition variable
 * until the thread has acknowledged their request number, which makes them
 * synchronous without the caller ever touching a socket.
 *
 * A connection is a client socket, a target socket (connected without
 * blocking; until it is, the client is not read) and one fixed buffer per
 * direction. A direction reads from its source only when its buffer is empty
 * and writes whenever it holds bytes, so memory per connection is bounded.
 * End of stream on a source becomes shutdown(SHUT_WR) on the destination once
 * the buffer is drained; when both directions have ended the sockets are
 * closed normally. Any error, a cut or stop closes both with SO_LINGER 0, so
 * the peers see a reset rather than a clean end.
 *
 * While stalled the connection sockets are left out of poll() entirely (a
 * blackhole neither reads nor writes nor notices a close); only a target
 * connect in progress is still completed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, pipe2, SOCK_CLOEXEC, MSG_NOSIGNAL */
#endif

#include "kcr_faultproxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

/* BUF_SIZE: bytes buffered per direction of a connection. */
#define BUF_SIZE 16384
/* POLL_MS: the longest the thread sleeps before looking at the control state. */
#define POLL_MS 50
/* ACCEPT_BATCH: connections accepted per loop turn, so one flood cannot starve I/O. */
#define ACCEPT_BATCH 64

/* dir: one direction of a connection. */
struct dir {
  char buf[BUF_SIZE];
  size_t off;           /* first unsent byte */
  size_t len;           /* bytes in buf from off */
  bool eof;             /* the source ended its stream */
  bool shut;            /* the destination got shutdown(SHUT_WR) */
  atomic_ullong *count; /* NULL, or where the bytes read from the source add up */
};

/* conn: a proxied connection; proxy thread only. */
struct conn {
  int cfd;         /* accepted client socket */
  int tfd;         /* socket to the target */
  bool connecting; /* tfd's connect() is in progress */
  struct dir up;   /* client -> target */
  struct dir down; /* target -> client */
};

struct kcr_faultproxy {
  /* Set before the thread starts, read-only afterwards. */
  int port;
  int lfd;     /* listening socket (proxy thread uses it) */
  int wake[2]; /* wake pipe: [0] read by the thread, [1] written by callers */
  struct sockaddr_storage target;
  socklen_t target_len;
  pthread_t thread;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stall;               /* protected by mu */
  bool refuse;              /* protected by mu */
  bool stopping;            /* protected by mu */
  bool cut_pending;         /* protected by mu */
  int cut_closed;           /* protected by mu: connections closed by the last cut */
  unsigned long req;        /* protected by mu: last request number */
  unsigned long ack;        /* protected by mu: last request the thread applied */
  unsigned long accepted;   /* protected by mu */
  int active;               /* protected by mu */
  atomic_ullong down_bytes; /* bytes read from the target, over every connection */

  struct conn *conns[KCR_FAULTPROXY_MAX_CONNS]; /* proxy thread */
  int nconns;                                   /* proxy thread */
};

/* close_reset closes fd so that its peer sees a reset (RST), not a FIN. */
static void close_reset(int fd) {
  if (fd < 0)
    return;
  struct linger lg = {1, 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(fd);
}

/* conn_close closes both sockets of c (reset or clean) and frees it. */
static void conn_close(struct conn *c, bool reset) {
  if (reset) {
    close_reset(c->cfd);
    close_reset(c->tfd);
  } else {
    close(c->cfd);
    if (c->tfd >= 0)
      close(c->tfd);
  }
  free(c);
}

/* conn_open starts proxying the accepted socket cfd: a new conn connecting
 * to the target, or NULL (cfd untouched) if that failed at once. */
static struct conn *conn_open(kcr_faultproxy_t *p, int cfd) {
  struct conn *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->cfd = cfd;
  c->down.count = &p->down_bytes;
  c->tfd = socket(p->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->tfd < 0) {
    free(c);
    return NULL;
  }
  if (connect(c->tfd, (const struct sockaddr *)&p->target, p->target_len) == 0) {
    c->connecting = false;
  } else if (errno == EINPROGRESS) {
    c->connecting = true;
  } else {
    close(c->tfd);
    free(c);
    return NULL;
  }
  return c;
}

/* dir_events: what a direction needs from its source and destination. */
static short src_events(const struct dir *d) {
  return (d->len == 0 && !d->eof) ? POLLIN : 0;
}

static short dst_events(const struct dir *d) {
  return d->len > 0 ? POLLOUT : 0;
}

/* want_read: src can be read for d (it was polled for input and something
 * happened on it). */
static bool want_read(const struct dir *d, short rev) {
  return d->len == 0 && !d->eof && (rev & (POLLIN | POLLHUP | POLLERR)) != 0;
}

/* dir_pump moves bytes for one direction: read src if d's buffer is empty and
 * src is ready, then write what is buffered to dst (a would-block write just
 * waits for POLLOUT), then pass an ended stream on. Returns false on an
 * error that ends the connection. */
static bool dir_pump(struct dir *d, int src, int dst, short src_rev) {
  if (want_read(d, src_rev)) {
    ssize_t n = recv(src, d->buf, sizeof d->buf, 0);
    if (n > 0) {
      d->off = 0;
      d->len = (size_t)n;
      if (d->count)
        atomic_fetch_add(d->count, (unsigned long long)n);
    } else if (n == 0) {
      d->eof = true;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return false;
    }
  }
  while (d->len > 0) {
    ssize_t n = send(dst, d->buf + d->off, d->len, MSG_NOSIGNAL);
    if (n > 0) {
      d->off += (size_t)n;
      d->len -= (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    if (n < 0 && errno == EINTR)
      continue;
    return false;
  }
  if (d->eof && d->len == 0 && !d->shut) {
    (void)shutdown(dst, SHUT_WR);
    d->shut = true;
  }
  return true;
}

/* Result of conn_service. */
enum { CONN_KEEP, CONN_DONE, CONN_FAILED };

/* conn_service handles poll results for c. */
static int conn_service(struct conn *c, short crev, short trev, bool stalled) {
  if (c->connecting) {
    if (trev == 0)
      return CONN_KEEP;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->tfd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
      return CONN_FAILED; /* target refused or unreachable: reset the client */
    c->connecting = false;
    return CONN_KEEP;
  }
  if (stalled)
    return CONN_KEEP;
  if (!dir_pump(&c->up, c->cfd, c->tfd, crev))
    return CONN_FAILED;
  if (!dir_pump(&c->down, c->tfd, c->cfd, trev))
    return CONN_FAILED;
  return (c->up.shut && c->down.shut) ? CONN_DONE : CONN_KEEP;
}

/* close_all closes every connection with a reset; returns how many. */
static int close_all(kcr_faultproxy_t *p) {
  int n = p->nconns;
  for (int i = 0; i < p->nconns; i++) {
    conn_close(p->conns[i], true);
    p->conns[i] = NULL;
  }
  p->nconns = 0;
  return n;
}

/* accept_some accepts what the listener has (up to ACCEPT_BATCH). */
static void accept_some(kcr_faultproxy_t *p, bool refuse) {
  for (int i = 0; i < ACCEPT_BATCH; i++) {
    int fd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return; /* EAGAIN, or a transient error (ECONNABORTED, EMFILE): next turn */
    struct conn *c = NULL;
    if (!refuse && p->nconns < KCR_FAULTPROXY_MAX_CONNS)
      c = conn_open(p, fd);
    pthread_mutex_lock(&p->mu);
    p->accepted++;
    if (c != NULL)
      p->active++;
    pthread_mutex_unlock(&p->mu);
    if (c == NULL)
      close_reset(fd);
    else
      p->conns[p->nconns++] = c;
  }
}

static void drain_wake(int fd) {
  char buf[64];
  while (read(fd, buf, sizeof buf) > 0) {
  }
}

static void *proxy_main(void *arg) {
  kcr_faultproxy_t *p = arg;
  struct pollfd pfds[2 + 2 * KCR_FAULTPROXY_MAX_CONNS];

  for (;;) {
    /* Apply and acknowledge the control state. */
    pthread_mutex_lock(&p->mu);
    bool stalled = p->stall;
    bool refuse = p->refuse;
    if (p->stopping) {
      pthread_mutex_unlock(&p->mu);
      break;
    }
    if (p->cut_pending) {
      int n = close_all(p);
      p->active -= n;
      p->cut_closed = n;
      p->cut_pending = false;
    }
    p->ack = p->req;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);

    pfds[0] = (struct pollfd){p->wake[0], POLLIN, 0};
    pfds[1] = (struct pollfd){p->lfd, POLLIN, 0};
    int n = p->nconns;
    for (int i = 0; i < n; i++) {
      struct conn *c = p->conns[i];
      short ce = 0, te = 0;
      if (c->connecting) {
        te = POLLOUT;
      } else if (!stalled) {
        ce = (short)(src_events(&c->up) | dst_events(&c->down));
        te = (short)(src_events(&c->down) | dst_events(&c->up));
      }
      /* An fd with nothing wanted is left out: POLLHUP would make poll spin. */
      pfds[2 + 2 * i] = (struct pollfd){ce != 0 ? c->cfd : -1, ce, 0};
      pfds[3 + 2 * i] = (struct pollfd){te != 0 ? c->tfd : -1, te, 0};
    }
    int pr = poll(pfds, 2 + 2 * (nfds_t)n, POLL_MS);
    if (pr < 0) {
      if (errno == EINTR)
        continue;
      perror("kcr_faultproxy: poll");
      break; /* not expected; stop() still joins and frees */
    }
    if (pfds[0].revents != 0)
      drain_wake(p->wake[0]);

    int closed = 0, kept = 0;
    for (int i = 0; i < n; i++) {
      struct conn *c = p->conns[i];
      int r = conn_service(c, pfds[2 + 2 * i].revents, pfds[3 + 2 * i].revents, stalled);
      if (r == CONN_KEEP) {
        p->conns[kept++] = c;
      } else {
        conn_close(c, r == CONN_FAILED);
        closed++;
      }
    }
    p->nconns = kept;
    if (closed > 0) {
      pthread_mutex_lock(&p->mu);
      p->active -= closed;
      pthread_mutex_unlock(&p->mu);
    }
    if (pfds[1].revents != 0)
      accept_some(p, refuse);
  }

  int n = close_all(p);
  pthread_mutex_lock(&p->mu);
  p->active -= n;
  p->stopping = true; /* also after a poll failure, so callers do not wait forever */
  p->ack = p->req;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* wake_locked wakes the proxy thread; called with p->mu held. */
static void wake_locked(kcr_faultproxy_t *p) {
  char b = 1;
  ssize_t n = write(p->wake[1], &b, 1);
  (void)n; /* a full pipe already wakes the thread */
}

/* request applies a change made under p->mu: returns once the proxy thread
 * has taken it (or has exited). Called with p->mu held. */
static void request_locked(kcr_faultproxy_t *p) {
  unsigned long my = ++p->req;
  wake_locked(p);
  while (p->ack < my && !p->stopping)
    pthread_cond_wait(&p->cv, &p->mu);
}

int kcr_faultproxy_start(const char *target_host, int target_port, kcr_faultproxy_t **out) {
  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (target_host == NULL || target_port <= 0 || target_port > 65535)
    return -EINVAL;

  kcr_faultproxy_t *p = calloc(1, sizeof *p);
  if (p == NULL)
    return -ENOMEM;
  p->lfd = -1;
  p->wake[0] = p->wake[1] = -1;
  int rc = 0;
  bool mu_ok = false, cv_ok = false;

  char portstr[16];
  snprintf(portstr, sizeof portstr, "%d", target_port);
  struct addrinfo hints = {0};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  struct addrinfo *ai = NULL;
  if (getaddrinfo(target_host, portstr, &hints, &ai) != 0 || ai == NULL ||
      ai->ai_addrlen > sizeof p->target) {
    rc = -EHOSTUNREACH;
    goto fail;
  }
  memcpy(&p->target, ai->ai_addr, ai->ai_addrlen);
  p->target_len = ai->ai_addrlen;
  freeaddrinfo(ai);
  ai = NULL;

  p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (p->lfd < 0) {
    rc = -errno;
    goto fail;
  }
  int one = 1;
  (void)setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sin = {0};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sin.sin_port = 0;
  socklen_t slen = sizeof sin;
  if (bind(p->lfd, (struct sockaddr *)&sin, sizeof sin) != 0 || listen(p->lfd, 128) != 0 ||
      getsockname(p->lfd, (struct sockaddr *)&sin, &slen) != 0) {
    rc = -errno;
    goto fail;
  }
  p->port = ntohs(sin.sin_port);
  if (pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    rc = -errno;
    goto fail;
  }
  if ((rc = pthread_mutex_init(&p->mu, NULL)) != 0) {
    rc = -rc;
    goto fail;
  }
  mu_ok = true;
  if ((rc = pthread_cond_init(&p->cv, NULL)) != 0) {
    rc = -rc;
    goto fail;
  }
  cv_ok = true;
  if ((rc = pthread_create(&p->thread, NULL, proxy_main, p)) != 0) {
    rc = -rc;
    goto fail;
  }
  *out = p;
  return 0;

fail:
  if (ai != NULL)
    freeaddrinfo(ai);
  if (cv_ok)
    pthread_cond_destroy(&p->cv);
  if (mu_ok)
    pthread_mutex_destroy(&p->mu);
  if (p->wake[0] >= 0)
    close(p->wake[0]);
  if (p->wake[1] >= 0)
    close(p->wake[1]);
  if (p->lfd >= 0)
    close(p->lfd);
  free(p);
  return rc != 0 ? rc : -EIO;
}

int kcr_faultproxy_port(const kcr_faultproxy_t *p) {
  return p->port;
}

int kcr_faultproxy_cut(kcr_faultproxy_t *p) {
  pthread_mutex_lock(&p->mu);
  p->cut_pending = true;
  p->cut_closed = 0;
  request_locked(p);
  int n = p->cut_closed;
  pthread_mutex_unlock(&p->mu);
  return n;
}

void kcr_faultproxy_stall(kcr_faultproxy_t *p, bool on) {
  pthread_mutex_lock(&p->mu);
  p->stall = on;
  request_locked(p);
  pthread_mutex_unlock(&p->mu);
}

void kcr_faultproxy_refuse(kcr_faultproxy_t *p, bool on) {
  pthread_mutex_lock(&p->mu);
  p->refuse = on;
  request_locked(p);
  pthread_mutex_unlock(&p->mu);
}

unsigned long kcr_faultproxy_connections(kcr_faultproxy_t *p) {
  pthread_mutex_lock(&p->mu);
  unsigned long n = p->accepted;
  pthread_mutex_unlock(&p->mu);
  return n;
}

unsigned long long kcr_faultproxy_bytes_down(kcr_faultproxy_t *p) {
  return atomic_load(&p->down_bytes);
}

int kcr_faultproxy_active(kcr_faultproxy_t *p) {
  pthread_mutex_lock(&p->mu);
  int n = p->active;
  pthread_mutex_unlock(&p->mu);
  return n;
}

void kcr_faultproxy_stop(kcr_faultproxy_t *p) {
  if (p == NULL)
    return;
  pthread_mutex_lock(&p->mu);
  p->stopping = true;
  wake_locked(p);
  pthread_mutex_unlock(&p->mu);
  pthread_join(p->thread, NULL);
  close(p->lfd);
  close(p->wake[0]);
  close(p->wake[1]);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
