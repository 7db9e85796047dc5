/* SPDX-License-Identifier: MIT */
/*
 * http1_internal.h: HTTP/1 request parsing on bytes alone (http1.c), for the
 * server's connections, its fuzz target (test/fuzz/fuzz_http_request.c) and
 * tests. Pure functions of their arguments, safe on any thread.
 */
#ifndef KCR_HTTP1_INTERNAL_H
#define KCR_HTTP1_INTERNAL_H

#include <stddef.h>

/* KCR__HTTP_TARGET_MAX: the longest request target accepted, NUL included. */
#define KCR__HTTP_TARGET_MAX 4096

/*
 * kcr__http_head: one parsed request head.
 *   method        NUL-terminated, at most 15 bytes, no white space.
 *   target        the path, NUL-terminated (the '?' replaced by NUL).
 *   query         into target, after the '?'; NULL without one.
 *   head_only     the method is HEAD.
 *   close_after   the connection ends with this answer: HTTP/1.0 without
 *                 keep-alive, "Connection: close", or a request body announced
 *                 (Content-Length other than 0, or Transfer-Encoding), since the
 *                 built-in endpoints read none.
 *   keep_alive    the connection may go on after this request if its body is
 *                 read (close_after without the body rule).
 *   content_length  the Content-Length value, -1 when absent, -2 when it is not
 *                 a plain decimal number (or more than one is given).
 *   chunked       Transfer-Encoding is present (a body of unknown length).
 */
typedef struct kcr__http_head {
  char method[16];
  char target[KCR__HTTP_TARGET_MAX];
  const char *query;
  int head_only;
  int close_after;
  int keep_alive;
  long long content_length;
  int chunked;
} kcr__http_head;

/*
 * kcr__http_head_end returns the length of the request head at the start of
 * buf[0..len) through its blank line ("\r\n\r\n"), or 0 while it is not
 * complete. buf need not be NUL-terminated.
 */
size_t kcr__http_head_end(const char *buf, size_t len);

/*
 * kcr__http_parse_head parses the head in head[0..len) (not NUL-terminated;
 * normally what kcr__http_head_end measured) into *out. Returns 0, or -1 for a
 * request the server answers 400 (no request line, not three fields, a target
 * over KCR__HTTP_TARGET_MAX - 1 bytes, a version other than HTTP/1.x).
 */
int kcr__http_parse_head(const char *head, size_t len, kcr__http_head *out);

/* kcr__http_query_has tells whether query q (NULL: none) has key, with or
 * without a value. */
int kcr__http_query_has(const char *q, const char *key);

/*
 * kcr__http_query_excludes tells whether name is listed in an exclude= value of
 * q (repeatable; comma-separated; percent and '+' decoded), as /healthz and
 * /readyz take it. A value is decoded into at most 255 bytes; a name cut off
 * by that limit matches nothing.
 */
int kcr__http_query_excludes(const char *q, const char *name);

/*
 * kcr__http_bearer_token finds the token of "Authorization: Bearer <token>" in
 * the head head[0..head_len) (the scheme case-insensitive, the token up to
 * white space). Returns it (into head) with its length in *len, or NULL when
 * there is none or it is empty.
 */
const char *kcr__http_bearer_token(const char *head, size_t head_len, size_t *len);

/* kcr__http_reason returns the reason phrase of the status codes the server
 * answers with ("Unknown" for others): static text. */
const char *kcr__http_reason(int status);

#endif /* KCR_HTTP1_INTERNAL_H */
