/* SPDX-License-Identifier: MIT */
/*
 * httpserver.h: a scripted HTTP/1.1 server on 127.0.0.1 and a port the kernel
 * picks, for client tests that need exact control of what comes back: status,
 * headers, bodies, a dropped connection, a stall, a body trickled in chunks. It
 * never touches the network beyond loopback. One thread accepts; each connection
 * gets a thread; a handler chosen by the test decides every answer.
 */
#ifndef KCR_TEST_HTTPSERVER_H
#define KCR_TEST_HTTPSERVER_H

#include <stddef.h>

#include "kcr/client.h"
#include "kcr/config.h"

/* A request as the server read it. Borrowed by the handler for the call. */
typedef struct kcr_test_http_request {
  char method[16];
  char path[8192];     /* with the query string */
  char headers[16384]; /* raw header lines, "\r\n"-separated */
  const char *body;
  size_t body_len;
  int connection; /* 1-based number of the connection it came on */
  int index;      /* 1-based number of the request across the server's life */
} kcr_test_http_request;

/* What to do with a request. */
typedef enum kcr_test_http_action {
  KCR_TEST_HTTP_RESPOND = 0, /* send status, headers, body */
  KCR_TEST_HTTP_CLOSE,       /* close the connection without answering */
  KCR_TEST_HTTP_STALL,       /* send nothing for stall_ms, then close */
} kcr_test_http_action;

/*
 * kcr_test_http_response: filled by the handler (zeroed first). body is copied
 * before the handler returns. With chunk_size > 0 the body goes out with chunked
 * encoding, chunk_size bytes at a time, chunk_delay_ms apart (with pause_ms, a
 * chunk ends after pause_after bytes and the server waits pause_ms there), then
 * the connection is held hold_ms before the last chunk (a watch that stays open).
 */
typedef struct kcr_test_http_response {
  kcr_test_http_action action;
  int status;
  const char *content_type; /* NULL: application/json */
  char headers[1024];       /* extra header lines, each ending in "\r\n" */
  const char *body;
  size_t body_len; /* 0 with a body: strlen(body) */
  size_t chunk_size;
  int chunk_delay_ms;
  size_t pause_after;
  int pause_ms;
  int hold_ms;
  int stall_ms;
} kcr_test_http_response;

typedef void (*kcr_test_http_handler)(const kcr_test_http_request *req,
                                      kcr_test_http_response *resp, void *data);

typedef struct kcr_test_http kcr_test_http_t;

/* kcr_test_http_start listens on 127.0.0.1:0 and serves with handler. 0 or -1. */
int kcr_test_http_start(kcr_test_http_handler handler, void *data, kcr_test_http_t **out);

/* kcr_test_http_port returns the port the kernel picked. */
int kcr_test_http_port(const kcr_test_http_t *s);

/* kcr_test_http_connections returns how many connections were accepted. */
int kcr_test_http_connections(kcr_test_http_t *s);

/* kcr_test_http_requests returns how many requests were read. */
int kcr_test_http_requests(kcr_test_http_t *s);

/* kcr_test_http_stop closes every connection, joins every thread and frees s. */
void kcr_test_http_stop(kcr_test_http_t *s);

/*
 * kcr_test_kubeconfig writes a kubeconfig for http://127.0.0.1:port with the given
 * bearer token (may be NULL) into dir/kubeconfig and returns 0. path receives the
 * file's path (size bytes).
 */
int kcr_test_kubeconfig(const char *dir, int port, const char *token, char *path, size_t size);

/*
 * kcr_test_client: a scripted server, a kubeconfig in a temporary directory
 * pointing at it, and a config and client made from that kubeconfig.
 * kcr_test_client_start fills *t (serving with handler and data); returns 0 or
 * -1. kcr_test_client_stop releases all of it, the files included.
 */
typedef struct kcr_test_client {
  kcr_test_http_t *server;
  kcr_rest_config_t *config;
  kcr_client_t *client;
  char dir[64];
  char kubeconfig[128];
} kcr_test_client;

int kcr_test_client_start(kcr_test_http_handler handler, void *data, kcr_test_client *t);
void kcr_test_client_stop(kcr_test_client *t);

#endif /* KCR_TEST_HTTPSERVER_H */
