/* SPDX-License-Identifier: MIT */
/*
 * server_internal.h: the server's HTTP request parsing, exposed for its fuzz
 * target (test/fuzz/fuzz_http_request.c) and tests. The server itself calls
 * these on the loop thread (the head) and the worker (the query); they are pure
 * functions of their arguments, safe on any thread.
 */
#ifndef KCR_SERVER_INTERNAL_H
#define KCR_SERVER_INTERNAL_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

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

/* ---- tls.c: certificates (never on the loop thread: they read files) ---- */

/*
 * kcr__tls_ctx_from_files builds a server context (TLS 1.2-1.3, ALPN
 * http/1.1) from a PEM certificate chain and a PEM key. Returns a new context,
 * or NULL with the reason in msg (paths named, no key material).
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

#endif /* KCR_SERVER_INTERNAL_H */
