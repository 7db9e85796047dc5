/* SPDX-License-Identifier: MIT */
/*
 * httpserver.c: the scripted test server. Deliberately simple and blocking: one
 * accept thread, one thread per connection, HTTP/1.1 keep-alive, Content-Length
 * request bodies only (what libcurl sends for kcr). Stopping shuts every socket
 * down so blocked reads return, then joins everything.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "httpserver.h"

#define MAX_CONNS 256
#define MAX_REQUEST (4 << 20)

struct kcr_test_http {
  int listen_fd;
  int port;
  kcr_test_http_handler handler;
  void *data;
  pthread_t acceptor;
  atomic_int stopping;
  atomic_int connections;
  atomic_int requests;
  pthread_mutex_t mu;
  int fds[MAX_CONNS];           /* protected by mu */
  pthread_t threads[MAX_CONNS]; /* protected by mu */
  int nconns;                   /* protected by mu */
};

typedef struct conn {
  kcr_test_http_t *server;
  int fd;
  int id;
} conn_t;

static void sleep_ms(kcr_test_http_t *s, int ms) {
  while (ms > 0 && !atomic_load(&s->stopping)) {
    int step = ms > 10 ? 10 : ms;
    struct timespec ts = {0, step * 1000000L};
    nanosleep(&ts, NULL);
    ms -= step;
  }
}

static int send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static const char *reason(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 201:
    return "Created";
  case 401:
    return "Unauthorized";
  case 404:
    return "Not Found";
  case 409:
    return "Conflict";
  case 410:
    return "Gone";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  default:
    return "Status";
  }
}

/* respond sends resp; returns 0 to keep the connection, -1 to close it. */
static int respond(kcr_test_http_t *s, int fd, const kcr_test_http_response *r) {
  char head[2048];
  size_t len = r->body ? (r->body_len ? r->body_len : strlen(r->body)) : 0;
  int n;

  if (r->action == KCR_TEST_HTTP_CLOSE)
    return -1;
  if (r->action == KCR_TEST_HTTP_STALL) {
    sleep_ms(s, r->stall_ms);
    return -1;
  }
  if (r->chunk_size == 0) {
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n", r->status,
                 reason(r->status), r->content_type ? r->content_type : "application/json", len,
                 r->headers);
    if (send_all(fd, head, (size_t)n) || send_all(fd, r->body ? r->body : "", len))
      return -1;
    return 0;
  }
  n = snprintf(head, sizeof(head),
               "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n%s\r\n",
               r->status, reason(r->status), r->content_type ? r->content_type : "application/json",
               r->headers);
  if (send_all(fd, head, (size_t)n))
    return -1;
  for (size_t off = 0, part; off < len; off += part) {
    part = len - off < r->chunk_size ? len - off : r->chunk_size;
    if (r->pause_ms && off < r->pause_after && off + part > r->pause_after)
      part = r->pause_after - off; /* a chunk ends where the pause is */
    n = snprintf(head, sizeof(head), "%zx\r\n", part);
    if (send_all(fd, head, (size_t)n) || send_all(fd, r->body + off, part) ||
        send_all(fd, "\r\n", 2))
      return -1;
    sleep_ms(s, r->chunk_delay_ms);
    if (r->pause_ms && off + part == r->pause_after)
      sleep_ms(s, r->pause_ms);
  }
  sleep_ms(s, r->hold_ms);
  if (atomic_load(&s->stopping))
    return -1;
  return send_all(fd, "0\r\n\r\n", 5);
}

static void *serve(void *arg) {
  conn_t *c = arg;
  kcr_test_http_t *s = c->server;
  char *buf = malloc(MAX_REQUEST);
  size_t have = 0;

  while (buf && !atomic_load(&s->stopping)) {
    char *end = NULL;
    kcr_test_http_request *req;
    kcr_test_http_response resp;
    size_t head_len, body_len = 0, total;
    const char *cl;
    int keep;

    while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
      ssize_t r;
      if (have == MAX_REQUEST)
        goto out;
      r = recv(c->fd, buf + have, MAX_REQUEST - have, 0);
      if (r <= 0)
        goto out;
      have += (size_t)r;
    }
    head_len = (size_t)(end - buf) + 4;
    req = calloc(1, sizeof(*req));
    if (!req)
      goto out;
    sscanf(buf, "%15s %8191s", req->method, req->path);
    snprintf(req->headers, sizeof(req->headers), "%.*s", (int)head_len, buf);
    for (cl = req->headers; (cl = strchr(cl, '\n')) != NULL;) {
      cl++;
      if (strncasecmp(cl, "content-length:", 15) == 0)
        body_len = strtoul(cl + 15, NULL, 10);
    }
    total = head_len + body_len;
    while (have < total && total <= MAX_REQUEST) {
      ssize_t r = recv(c->fd, buf + have, MAX_REQUEST - have, 0);
      if (r <= 0) {
        free(req);
        goto out;
      }
      have += (size_t)r;
    }
    req->body = buf + head_len;
    req->body_len = body_len;
    req->connection = c->id;
    req->index = atomic_fetch_add(&s->requests, 1) + 1;
    memset(&resp, 0, sizeof(resp));
    resp.status = 200;
    s->handler(req, &resp, s->data);
    free(req);
    keep = respond(s, c->fd, &resp);
    memmove(buf, buf + total, have - total);
    have -= total;
    if (keep != 0)
      break;
  }
out:
  free(buf);
  shutdown(c->fd, SHUT_RDWR);
  free(c);
  return NULL;
}

static void *accept_loop(void *arg) {
  kcr_test_http_t *s = arg;
  while (!atomic_load(&s->stopping)) {
    struct pollfd p = {s->listen_fd, POLLIN, 0};
    conn_t *c;
    int fd;
    if (poll(&p, 1, 20) <= 0)
      continue;
    fd = accept(s->listen_fd, NULL, NULL);
    if (fd < 0)
      continue;
    c = calloc(1, sizeof(*c));
    pthread_mutex_lock(&s->mu);
    if (!c || s->nconns == MAX_CONNS) {
      pthread_mutex_unlock(&s->mu);
      free(c);
      close(fd);
      continue;
    }
    c->server = s;
    c->fd = fd;
    c->id = atomic_fetch_add(&s->connections, 1) + 1;
    s->fds[s->nconns] = fd;
    if (pthread_create(&s->threads[s->nconns], NULL, serve, c) != 0) {
      pthread_mutex_unlock(&s->mu);
      free(c);
      close(fd);
      continue;
    }
    s->nconns++;
    pthread_mutex_unlock(&s->mu);
  }
  return NULL;
}

int kcr_test_http_start(kcr_test_http_handler handler, void *data, kcr_test_http_t **out) {
  struct sockaddr_in addr;
  socklen_t alen = sizeof(addr);
  kcr_test_http_t *s = calloc(1, sizeof(*s));
  int one = 1;

  *out = NULL;
  if (!s)
    return -1;
  s->handler = handler;
  s->data = data;
  pthread_mutex_init(&s->mu, NULL);
  s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
      listen(s->listen_fd, 128) != 0 ||
      getsockname(s->listen_fd, (struct sockaddr *)&addr, &alen) != 0) {
    if (s->listen_fd >= 0)
      close(s->listen_fd);
    free(s);
    return -1;
  }
  s->port = ntohs(addr.sin_port);
  if (pthread_create(&s->acceptor, NULL, accept_loop, s) != 0) {
    close(s->listen_fd);
    free(s);
    return -1;
  }
  *out = s;
  return 0;
}

int kcr_test_http_port(const kcr_test_http_t *s) {
  return s->port;
}

int kcr_test_http_connections(kcr_test_http_t *s) {
  return atomic_load(&s->connections);
}

int kcr_test_http_requests(kcr_test_http_t *s) {
  return atomic_load(&s->requests);
}

void kcr_test_http_stop(kcr_test_http_t *s) {
  if (!s)
    return;
  atomic_store(&s->stopping, 1);
  pthread_join(s->acceptor, NULL);
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < s->nconns; i++)
    shutdown(s->fds[i], SHUT_RDWR);
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < s->nconns; i++) {
    pthread_join(s->threads[i], NULL);
    close(s->fds[i]);
  }
  close(s->listen_fd);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

int kcr_test_kubeconfig(const char *dir, int port, const char *token, char *path, size_t size) {
  FILE *f;
  snprintf(path, size, "%s/kubeconfig", dir);
  f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(f,
          "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
          "clusters:\n- name: test\n  cluster:\n    server: http://127.0.0.1:%d\n"
          "contexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n"
          "    namespace: testns\n"
          "users:\n- name: test\n  user:\n",
          port);
  if (token)
    fprintf(f, "    token: %s\n", token);
  else
    fprintf(f, "    username: u\n    password: p\n");
  return fclose(f) == 0 ? 0 : -1;
}

int kcr_test_client_start(kcr_test_http_handler handler, void *data, kcr_test_client *t) {
  kcr_client_options o;
  memset(t, 0, sizeof(*t));
  snprintf(t->dir, sizeof(t->dir), "/tmp/kcr-test-client-XXXXXX");
  if (!mkdtemp(t->dir) || kcr_test_http_start(handler, data, &t->server) != 0 ||
      kcr_test_kubeconfig(t->dir, kcr_test_http_port(t->server), "t", t->kubeconfig,
                          sizeof(t->kubeconfig)) != 0 ||
      kcr_rest_config_from_kubeconfig(t->kubeconfig, NULL, NULL, &t->config, NULL) != 0)
    return -1;
  memset(&o, 0, sizeof(o));
  o.config = t->config;
  return kcr_client_create(&o, &t->client, NULL) == 0 ? 0 : -1;
}

void kcr_test_client_stop(kcr_test_client *t) {
  kcr_client_destroy(t->client);
  kcr_rest_config_unref(t->config);
  kcr_test_http_stop(t->server);
  if (t->kubeconfig[0])
    unlink(t->kubeconfig);
  rmdir(t->dir);
  memset(t, 0, sizeof(*t));
}
