/* SPDX-License-Identifier: MIT */
/*
 * buf.c: the bounded growable buffer. Growth doubles (at least 64 bytes) and never
 * allocates past max + 1, so a limit of 1 MiB costs at most 1 MiB of memory. Any
 * failure frees the buffer: a caller that hits a limit has no use for the prefix,
 * and dropping it at once keeps a hostile stream from pinning memory.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kcr/buf.h"
#include "kcr/error.h"
#include "util/alloc.h"

#define MIN_CAP 64

void kcr_buf_init(kcr_buf_t *b, size_t max) {
  assert(b && max > 0);
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->max = max;
}

void kcr_buf_free(kcr_buf_t *b) {
  if (!b)
    return;
  kcr__free(b->data);
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
}

void kcr_buf_reset(kcr_buf_t *b) {
  b->len = 0;
  if (b->data)
    b->data[0] = '\0';
}

/* grow makes room for need more bytes plus the NUL. */
static int grow(kcr_buf_t *b, size_t need) {
  size_t want, cap;
  char *p;

  if (need > b->max - b->len) {
    kcr_buf_free(b);
    return KCR_ETOOBIG;
  }
  want = b->len + need + 1;
  if (want <= b->cap)
    return 0;
  cap = b->cap ? b->cap : MIN_CAP;
  while (cap < want)
    cap = cap > (SIZE_MAX / 2) ? want : cap * 2;
  if (cap > b->max + 1)
    cap = b->max + 1;
  p = kcr__realloc(b->data, cap);
  if (!p) {
    kcr_buf_free(b);
    return KCR_ENOMEM;
  }
  b->data = p;
  b->cap = cap;
  return 0;
}

int kcr_buf_append(kcr_buf_t *b, const void *p, size_t n) {
  int rc = grow(b, n);
  if (rc)
    return rc;
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int kcr_buf_appends(kcr_buf_t *b, const char *s) {
  return kcr_buf_append(b, s, strlen(s));
}

int kcr_buf_appendc(kcr_buf_t *b, char c) {
  return kcr_buf_append(b, &c, 1);
}

int kcr_buf_vappendf(kcr_buf_t *b, const char *fmt, va_list ap) {
  va_list ap2;
  int n, rc;

  va_copy(ap2, ap);
  n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    kcr_buf_free(b);
    return KCR_EINVAL;
  }
  rc = grow(b, (size_t)n);
  if (rc)
    return rc;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

int kcr_buf_appendf(kcr_buf_t *b, const char *fmt, ...) {
  va_list ap;
  int rc;
  va_start(ap, fmt);
  rc = kcr_buf_vappendf(b, fmt, ap);
  va_end(ap);
  return rc;
}

const char *kcr_buf_cstr(const kcr_buf_t *b) {
  return b->data ? b->data : "";
}

size_t kcr_buf_len(const kcr_buf_t *b) {
  return b->len;
}

char *kcr_buf_take(kcr_buf_t *b, size_t *len) {
  char *p = b->data;
  if (len)
    *len = b->len;
  if (!p)
    p = kcr__strdup("");
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  return p;
}

void kcr_buf_consume(kcr_buf_t *b, size_t n) {
  assert(n <= b->len);
  if (n == 0)
    return;
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
  b->data[b->len] = '\0';
}
