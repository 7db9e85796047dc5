/* SPDX-License-Identifier: MIT */
/*
 * msg.c: kcr-gen's one-line error messages. A message names the schema path or
 * file it is about, and input makes those as long as it likes (a property name
 * of thousands of characters); a message too long for the caller's buffer is
 * cut in the middle, with a visible mark, so that both the path it starts with
 * and the reason it ends with survive. Nothing is cut silently.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gen.h"
#include "kcr/buf.h"

/* MSG_MAX bounds the whole message before it is fitted to the caller's size. */
#define MSG_MAX ((size_t)16 << 20)
#define CUT_MARK " [...] "

void gen_msgf(char *msg, size_t size, const char *fmt, ...) {
  kcr_buf_t b;
  va_list ap;
  int rc;
  size_t len, room, mark = strlen(CUT_MARK), head, tail;
  if (size == 0)
    return;
  kcr_buf_init(&b, MSG_MAX);
  va_start(ap, fmt);
  rc = kcr_buf_vappendf(&b, fmt, ap);
  va_end(ap);
  if (rc) {
    snprintf(msg, size, "%s", "the error message is longer than 16 MiB, or memory ran out");
    return;
  }
  len = kcr_buf_len(&b);
  room = size - 1;
  if (len <= room) {
    memcpy(msg, kcr_buf_cstr(&b), len + 1);
  } else if (room <= mark) {
    memcpy(msg, kcr_buf_cstr(&b), room); /* no room even for the mark */
    msg[room] = '\0';
  } else {
    head = (room - mark) / 2;
    tail = room - mark - head;
    memcpy(msg, kcr_buf_cstr(&b), head);
    memcpy(msg + head, CUT_MARK, mark);
    memcpy(msg + head + mark, kcr_buf_cstr(&b) + len - tail, tail + 1);
  }
  kcr_buf_free(&b);
}

void gen_vmsg_at(char *msg, size_t size, const char *file, int line, int col, const char *fmt,
                 va_list ap) {
  kcr_buf_t b;
  kcr_buf_init(&b, MSG_MAX);
  if (kcr_buf_vappendf(&b, fmt, ap))
    gen_msgf(msg, size, "%s:%d:%d: out of memory", file, line, col);
  else
    gen_msgf(msg, size, "%s:%d:%d: %s", file, line, col, kcr_buf_cstr(&b));
  kcr_buf_free(&b);
}
