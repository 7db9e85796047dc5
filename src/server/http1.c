/* SPDX-License-Identifier: MIT */
/*
 * http1.c: HTTP/1 request parsing for the server layer (http1_internal.h):
 * finding the end of a request head, reading its request line and the few
 * headers the server acts on, the query keys the probes take, the bearer
 * token /metrics' auth hook checks, and the reason phrases of the answers.
 *
 * DESIGN. Bytes in, values out: nothing here allocates, touches a connection
 * or knows a thread, so the fuzz target and the unit tests drive it on bytes
 * alone. A head is parsed in place, never NUL-terminated by the caller: each
 * header is searched in the lines between the request line and the blank line
 * (headers are few and heads are at most max_header_bytes, so a linear scan
 * per header beats building an index). The parser is strict where a mistake
 * would route a request wrongly (the request line: three fields, no control
 * bytes, HTTP/1.x, a target that fits) and lenient where it cannot (white
 * space around values, the case of header names). Content-Length and
 * Transfer-Encoding are only reported: what to do with a body is the
 * connection's call (conn.c).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/http1_internal.h"

/* header_value finds "name:" in the head's header lines (case-insensitive) and
 * returns the value's start with its length in *len, or NULL. */
static const char *header_value(const char *lines, const char *end, const char *name, size_t *len) {
  size_t nl = strlen(name);
  const char *p = lines;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    const char *le = eol ? eol : end;
    if ((size_t)(le - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
      const char *v = p + nl + 1;
      while (v < le && (*v == ' ' || *v == '\t'))
        v++;
      while (le > v && (le[-1] == '\r' || le[-1] == ' ' || le[-1] == '\t'))
        le--;
      *len = (size_t)(le - v);
      return v;
    }
    if (!eol)
      break;
    p = eol + 1;
  }
  return NULL;
}

static int value_has_token(const char *v, size_t len, const char *token) {
  size_t tl = strlen(token);
  for (size_t i = 0; v && i + tl <= len; i++)
    if (strncasecmp(v + i, token, tl) == 0)
      return 1;
  return 0;
}

size_t kcr__http_head_end(const char *buf, size_t len) {
  for (size_t i = 0; i + 3 < len; i++)
    if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
      return i + 4;
  return 0;
}

/* next_token copies the white-space-separated token at *p (before end) into out
 * (size bytes with its NUL) and moves *p past it; -1 when there is none or it
 * does not fit. */
static int next_token(const char **p, const char *end, char *out, size_t size) {
  const char *t = *p;
  size_t n;
  while (t < end && (*t == ' ' || *t == '\t'))
    t++;
  for (n = 0; t + n < end && t[n] != ' ' && t[n] != '\t' && t[n] != '\r'; n++)
    ;
  if (n == 0 || n >= size)
    return -1;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
      return -1; /* control bytes (NUL included) are in no valid request line */
  memcpy(out, t, n);
  out[n] = '\0';
  *p = t + n;
  return 0;
}

int kcr__http_parse_head(const char *head, size_t len, kcr__http_head *out) {
  const char *end = head + len, *line_end = memchr(head, '\n', len), *v, *p = head;
  char version[16], *q;
  size_t vlen = 0;
  int http10;

  memset(out, 0, sizeof(*out));
  /* request-line = method SP target SP version, then only "\r" (white space
   * tolerated between and after the fields). */
  if (!line_end || next_token(&p, line_end, out->method, sizeof(out->method)) != 0 ||
      next_token(&p, line_end, out->target, sizeof(out->target)) != 0 ||
      next_token(&p, line_end, version, sizeof(version)) != 0 ||
      strncmp(version, "HTTP/1.", 7) != 0)
    return -1;
  while (p < line_end && (*p == ' ' || *p == '\t' || *p == '\r'))
    p++;
  if (p != line_end)
    return -1;
  http10 = strcmp(version, "HTTP/1.0") == 0;
  v = header_value(line_end + 1, end, "Connection", &vlen);
  if (http10 ? !value_has_token(v, vlen, "keep-alive") : value_has_token(v, vlen, "close"))
    out->close_after = 1;
  out->keep_alive = !out->close_after;
  out->content_length = -1;
  if ((v = header_value(line_end + 1, end, "Content-Length", &vlen))) {
    long long n = 0;
    size_t i;
    for (i = 0; i < vlen && v[i] >= '0' && v[i] <= '9' && n < (1LL << 40); i++)
      n = n * 10 + (v[i] - '0');
    out->content_length = i == vlen && vlen > 0 && n < (1LL << 40) ? n : -2;
  }
  out->chunked = header_value(line_end + 1, end, "Transfer-Encoding", &vlen) != NULL;
  /* The built-in endpoints take no body: answer, then close rather than read one. */
  if ((out->content_length != -1 && out->content_length != 0) || out->chunked)
    out->close_after = 1;
  q = strchr(out->target, '?');
  if (q) {
    *q = '\0';
    out->query = q + 1;
  }
  out->head_only = strcmp(out->method, "HEAD") == 0;
  return 0;
}

int kcr__http_query_has(const char *q, const char *key) {
  size_t kl = strlen(key);
  while (q && *q) {
    if (strncmp(q, key, kl) == 0 && (q[kl] == '\0' || q[kl] == '&' || q[kl] == '='))
      return 1;
    q = strchr(q, '&');
    if (q)
      q++;
  }
  return 0;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

int kcr__http_query_excludes(const char *q, const char *name) {
  char val[256];
  while (q && *q) {
    if (strncmp(q, "exclude=", 8) == 0) {
      size_t n = 0;
      const char *p = q + 8;
      while (*p && *p != '&' && n + 1 < sizeof(val)) {
        if (*p == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
          val[n++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
          p += 3;
        } else {
          val[n++] = *p == '+' ? ' ' : *p;
          p++;
        }
      }
      val[n] = '\0';
      if (*p && *p != '&') {
        /* Cut: the last name is a prefix of what was asked, so drop it. */
        char *comma = strrchr(val, ',');
        *(comma ? comma : val) = '\0';
      }
      for (char *save = NULL, *tok = strtok_r(val, ",", &save); tok;
           tok = strtok_r(NULL, ",", &save))
        if (strcmp(tok, name) == 0)
          return 1;
    }
    q = strchr(q, '&');
    if (q)
      q++;
  }
  return 0;
}

/* kcr__http_bearer_token reads the value as the API server's bearer-token
 * authenticator does. */
const char *kcr__http_bearer_token(const char *head, size_t head_len, size_t *len) {
  const char *line_end = memchr(head, '\n', head_len), *v, *t;
  size_t vlen = 0, n = 0;
  if (!line_end)
    return NULL;
  v = header_value(line_end + 1, head + head_len, "Authorization", &vlen);
  if (!v || vlen < 7 || strncasecmp(v, "Bearer ", 7) != 0)
    return NULL;
  t = v + 7;
  while (t < v + vlen && *t == ' ')
    t++;
  while (t + n < v + vlen && t[n] != ' ' && t[n] != '\t')
    n++;
  if (n == 0)
    return NULL;
  *len = n;
  return t;
}

const char *kcr__http_reason(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 411:
    return "Length Required";
  case 413:
    return "Content Too Large";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Unknown";
  }
}
