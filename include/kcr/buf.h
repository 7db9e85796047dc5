/* SPDX-License-Identifier: MIT */
/*
 * kcr/buf.h: a growable byte buffer with a hard maximum (curl's dynbuf idea).
 * Every buffer that input can grow (a watch line, a response body, an exec
 * plugin's output) is a kcr_buf_t with a named limit; exceeding it is
 * KCR_ETOOBIG, never unbounded memory. The contents are always NUL-terminated
 * once anything was appended, so text can be read as a C string.
 *
 * The struct lives in the caller's memory (often the stack), so its layout is
 * public; treat the fields as read-only and use the functions.
 */
#ifndef KCR_BUF_H
#define KCR_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "kcr/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_buf_t: data has len bytes plus a NUL; cap is allocated; max bounds len. */
typedef struct kcr_buf {
  char *data;
  size_t len;
  size_t cap;
  size_t max;
} kcr_buf_t;

/*
 * kcr_buf_init prepares an empty buffer that may hold at most max bytes (the
 * terminating NUL not counted). It allocates nothing. max must be > 0.
 */
KCR_EXTERN void kcr_buf_init(kcr_buf_t *b, size_t max);

/*
 * kcr_buf_free releases the memory and leaves an empty buffer with the same max,
 * ready for reuse. b may be NULL.
 */
KCR_EXTERN void kcr_buf_free(kcr_buf_t *b);

/* kcr_buf_reset empties the buffer but keeps its memory for reuse. */
KCR_EXTERN void kcr_buf_reset(kcr_buf_t *b);

/*
 * kcr_buf_append adds n bytes. Returns 0, KCR_ETOOBIG when len + n would pass
 * max, or KCR_ENOMEM. On either error the buffer is freed (as curl's dynbuf
 * does: a half-built value is worthless and holding it only wastes memory).
 */
KCR_EXTERN int kcr_buf_append(kcr_buf_t *b, const void *p, size_t n);

/* kcr_buf_appends adds a C string; errors as kcr_buf_append. */
KCR_EXTERN int kcr_buf_appends(kcr_buf_t *b, const char *s);

/* kcr_buf_appendc adds one byte; errors as kcr_buf_append. */
KCR_EXTERN int kcr_buf_appendc(kcr_buf_t *b, char c);

/* kcr_buf_appendf adds printf-formatted text; errors as kcr_buf_append. */
KCR_EXTERN int kcr_buf_appendf(kcr_buf_t *b, const char *fmt, ...) KCR_PRINTF(2, 3);

/* kcr_buf_vappendf is kcr_buf_appendf with a va_list. */
KCR_EXTERN int kcr_buf_vappendf(kcr_buf_t *b, const char *fmt, va_list ap) KCR_PRINTF(2, 0);

/*
 * kcr_buf_cstr returns the contents as a NUL-terminated string, "" when empty.
 * Borrowed: valid until the next call that changes the buffer.
 */
KCR_EXTERN const char *kcr_buf_cstr(const kcr_buf_t *b);

/* kcr_buf_len returns the number of bytes held. */
KCR_EXTERN size_t kcr_buf_len(const kcr_buf_t *b);

/*
 * kcr_buf_take hands the contents over: returns a new NUL-terminated string
 * (release it with kcr_free) and stores its length in *len if len is not NULL;
 * the buffer is left empty. An empty buffer yields a new "" (NULL only when that
 * allocation fails).
 */
KCR_EXTERN char *kcr_buf_take(kcr_buf_t *b, size_t *len);

/*
 * kcr_buf_consume drops the first n bytes (n <= len), moving the rest to the
 * front: the way a stream parser discards a line it has handled.
 */
KCR_EXTERN void kcr_buf_consume(kcr_buf_t *b, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* KCR_BUF_H */
