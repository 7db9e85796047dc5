/* SPDX-License-Identifier: MIT */
/*
 * watch.c: the watch stream decoder: newline-delimited JSON events reassembled
 * from arbitrary chunks.
 *
 * DESIGN. The decoder owns one kcr_buf_t, bounded by the line limit, for the only
 * bytes it must keep: the start of a line whose newline has not arrived yet. A
 * line that lies wholly inside one fed chunk, the common case for events smaller
 * than libcurl's buffer, is parsed in place with json_loadb and never copied; a
 * split line is completed in the buffer and parsed from there. Newlines are found
 * with memchr (a JSON text never holds a raw newline inside a string, so the
 * first '\n' ends the event). The buffer keeps its memory between lines unless a
 * large line grew it past RETAIN_MAX, so one 10 MiB object does not pin 10 MiB
 * for the life of the watch.
 *
 * The limit is checked before bytes are kept, so a stream that never sends a
 * newline costs at most max_line bytes and is refused as soon as it passes it.
 * Every error is sticky: a stream that produced garbage once is not trusted to
 * be framed right afterwards, and the caller's answer (close, back off, watch
 * again) is the same as client-go's.
 *
 * The line hook (watch_internal.h): the informer is offered each line before
 * jansson sees it and takes the ones it can store without a tree; a line it
 * leaves goes the usual way, so errors stay jansson's. What it makes of a line
 * is the cache's business: this file knows no stored form.
 *
 * Protobuf (kcr__watch_decoder_set_protobuf): the stream is then frames, each
 * a 4-byte big-endian length and a metav1.WatchEvent (util/pbscan.h), split
 * the same way (a frame inside one chunk is read in place, a split one
 * completed in the buffer) and bounded by the same limit. The frame hook is
 * offered each frame first, as the line hook is each line; a frame it leaves
 * is transcoded to JSON and parsed, so the callback gets the same trees
 * either way. Errors count frames as lines.
 *
 * Positions in errors count lines from 1 and stream bytes from 0, over all feeds
 * since create or reset, so a message can be matched against a capture.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "client/apierror_internal.h"
#include "client/watch_internal.h"
#include "kcr/buf.h"
#include "kcr/watch.h"
#include "util/alloc.h"
#include "util/pbscan.h"

/* A split-line buffer grown past this is freed after its line, not kept. */
#define RETAIN_MAX ((size_t)256 * 1024)

struct kcr_watch_decoder {
  kcr_watch_event_cb cb;
  void *data;
  size_t max_line;
  kcr_buf_t partial;          /* the unfinished line's bytes so far */
  uint64_t line_no;           /* number of the line being read, from 1 */
  uint64_t line_start;        /* stream offset of its first byte */
  uint64_t fed;               /* stream bytes taken by earlier feeds */
  int failed;                 /* the sticky error code, 0 while healthy */
  int finished;               /* finish was called */
  int in_callback;            /* guards against the callback re-entering */
  kcr__watch_line_fn line_fn; /* kcr__watch_decoder_set_line_fn; NULL: none */
  void *line_data;
  kcr__watch_line_fn frame_fn; /* kcr__watch_decoder_set_frame_fn; NULL: none */
  void *frame_data;
  int protobuf;   /* the stream is protobuf frames */
  kcr_buf_t json; /* protobuf: the object of a frame the hook left, as JSON */
};

void kcr__watch_decoder_set_line_fn(kcr_watch_decoder_t *dec, kcr__watch_line_fn fn, void *data) {
  dec->line_fn = fn;
  dec->line_data = data;
}

void kcr__watch_decoder_set_frame_fn(kcr_watch_decoder_t *dec, kcr__watch_line_fn fn, void *data) {
  dec->frame_fn = fn;
  dec->frame_data = data;
}

void kcr__watch_decoder_set_protobuf(kcr_watch_decoder_t *dec) {
  assert(dec->fed == 0 && dec->partial.len == 0);
  dec->protobuf = 1;
}

static const char *const type_names[] = {NULL, "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

const char *kcr_watch_event_type_name(kcr_watch_event_type type) {
  if (type >= KCR_WATCH_ADDED && type <= KCR_WATCH_ERROR)
    return type_names[type];
  return "UNKNOWN";
}

/* event_type maps a wire name to its type, 0 when unknown. */
static kcr_watch_event_type event_type(const char *s) {
  switch (s[0]) {
  case 'A':
    return strcmp(s, "ADDED") == 0 ? KCR_WATCH_ADDED : 0;
  case 'M':
    return strcmp(s, "MODIFIED") == 0 ? KCR_WATCH_MODIFIED : 0;
  case 'D':
    return strcmp(s, "DELETED") == 0 ? KCR_WATCH_DELETED : 0;
  case 'B':
    return strcmp(s, "BOOKMARK") == 0 ? KCR_WATCH_BOOKMARK : 0;
  case 'E':
    return strcmp(s, "ERROR") == 0 ? KCR_WATCH_ERROR : 0;
  default:
    return 0;
  }
}

int kcr_watch_decoder_create(size_t max_line, kcr_watch_event_cb cb, void *data,
                             kcr_watch_decoder_t **out, kcr_error_t *err) {
  kcr_watch_decoder_t *dec;

  assert(cb && out);
  *out = NULL;
  dec = kcr__calloc(1, sizeof(*dec));
  if (!dec)
    return kcr_error_set(err, KCR_ENOMEM, "out of memory creating a watch decoder");
  dec->cb = cb;
  dec->data = data;
  dec->max_line = max_line ? max_line : KCR_WATCH_MAX_LINE_DEFAULT;
  kcr_buf_init(&dec->partial, dec->max_line + 4); /* + a protobuf frame's length */
  kcr_buf_init(&dec->json, dec->max_line);
  dec->line_no = 1;
  *out = dec;
  return 0;
}

void kcr_watch_decoder_reset(kcr_watch_decoder_t *dec) {
  assert(!dec->in_callback);
  kcr_buf_free(&dec->partial);
  kcr_buf_free(&dec->json);
  dec->protobuf = 0;
  dec->line_no = 1;
  dec->line_start = 0;
  dec->fed = 0;
  dec->failed = 0;
  dec->finished = 0;
}

void kcr_watch_decoder_destroy(kcr_watch_decoder_t *dec) {
  if (!dec)
    return;
  assert(!dec->in_callback);
  kcr_buf_free(&dec->partial);
  kcr_buf_free(&dec->json);
  kcr__free(dec);
}

/* fail makes code the decoder's sticky error and returns it. */
static int fail(kcr_watch_decoder_t *dec, int code) {
  dec->failed = code;
  kcr_buf_free(&dec->partial);
  return code;
}

/* too_big reports a line over the limit. */
static int too_big(kcr_watch_decoder_t *dec, kcr_error_t *err) {
  kcr_error_set(err, KCR_ETOOBIG,
                "watch stream line %" PRIu64 " (byte %" PRIu64
                ") is longer than the %zu-byte limit",
                dec->line_no, dec->line_start, dec->max_line);
  return fail(dec, KCR_ETOOBIG);
}

/* parse_error reports a line json_loadb refused, as KCR_ENOMEM when it ran out of
 * memory (see apierror.c: jansson does not always say so). */
static int parse_error(kcr_watch_decoder_t *dec, const json_error_t *jerr, size_t len,
                       kcr_error_t *err) {
  char text[JSON_ERROR_TEXT_LENGTH + 64];
  void *probe = NULL;
  int oom = jerr->text[0] == '\0' || json_error_code(jerr) == json_error_out_of_memory;

  if (!oom) {
    probe = kcr__malloc(len + 1);
    oom = probe == NULL;
    kcr__free(probe);
  }
  if (oom) {
    kcr_error_set(err, KCR_ENOMEM, "out of memory decoding watch stream line %" PRIu64,
                  dec->line_no);
    return fail(dec, KCR_ENOMEM);
  }
  /* jansson quotes the stream and cuts at 160 bytes: keep the message valid UTF-8 */
  kcr__escape_text(text, sizeof(text), jerr->text, strnlen(jerr->text, sizeof(jerr->text)));
  kcr_error_set(err, KCR_EPARSE,
                "watch stream line %" PRIu64 " (byte %" PRIu64 "): invalid JSON at column %d: %s",
                dec->line_no, dec->line_start, jerr->column, text);
  return fail(dec, KCR_EPARSE);
}

/* deliver hands one event to the callback. */
static int deliver(kcr_watch_decoder_t *dec, const kcr_watch_event *ev, kcr_error_t *err) {
  int rc;
  dec->in_callback = 1;
  rc = dec->cb(ev, dec->data);
  dec->in_callback = 0;
  assert(rc <= 0);
  if (rc < 0) {
    kcr_error_set(err, rc, "watch event callback stopped the stream at line %" PRIu64 ": %s",
                  dec->line_no, kcr_strerror(rc));
    return fail(dec, rc);
  }
  return 0;
}

/* offer_line hands a line to the line hook: 1 when the hook took it, 0 when
 * it goes jansson's way, or the sticky failure of the hook's error. */
static int offer_line(kcr_watch_decoder_t *dec, const char *line, size_t len, kcr_error_t *err) {
  int rc;
  dec->in_callback = 1;
  rc = dec->line_fn(line, len, dec->line_data);
  dec->in_callback = 0;
  if (rc < 0) {
    kcr_error_set(err, rc, "watch line hook stopped the stream at line %" PRIu64 ": %s",
                  dec->line_no, kcr_strerror(rc));
    return fail(dec, rc);
  }
  return rc > 0;
}

/* decode_event delivers an event of type (len bytes) with object (borrowed). */
static int decode_event(kcr_watch_decoder_t *dec, const char *type, size_t type_len, json_t *object,
                        kcr_error_t *err) {
  kcr_watch_event ev;
  kcr_error_t status_err;
  ev.type = event_type(type);
  if (ev.type == 0 || !json_is_object(object)) {
    if (ev.type == 0) {
      char name[48];
      kcr__escape_text(name, sizeof(name), type, type_len);
      kcr_error_set(err, KCR_EPROTO,
                    "watch stream line %" PRIu64 " (byte %" PRIu64 "): unknown event type \"%s\"",
                    dec->line_no, dec->line_start, name);
    } else
      kcr_error_set(err, KCR_EPROTO,
                    "watch stream line %" PRIu64 " (byte %" PRIu64
                    "): %s event without an \"object\" object",
                    dec->line_no, dec->line_start, kcr_watch_event_type_name(ev.type));
    return fail(dec, KCR_EPROTO);
  }
  ev.object = json_incref(object);
  ev.error = NULL;
  if (ev.type == KCR_WATCH_ERROR) {
    kcr_error_clear(&status_err);
    kcr__error_from_status(&status_err, ev.object, 0);
    ev.error = &status_err;
  }
  return deliver(dec, &ev, err);
}

/* decode_line parses one complete line (newline excluded) and calls back. */
static int decode_line(kcr_watch_decoder_t *dec, const char *line, size_t len, kcr_error_t *err) {
  json_error_t jerr;
  json_t *root, *type, *object;
  size_t i = 0;
  int rc;

  while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
    i++;
  if (i == len)
    return 0; /* an empty line is not an event */

  if (dec->line_fn && (rc = offer_line(dec, line, len, err)) != 0)
    return rc < 0 ? rc : 0;
  memset(&jerr, 0, sizeof(jerr));
  root = json_loadb(line, len, 0, &jerr);
  if (!root)
    return parse_error(dec, &jerr, len, err);
  type = json_object_get(root, "type");
  object = json_object_get(root, "object");
  if (!json_is_object(root) || !json_is_string(type)) {
    kcr_error_set(err, KCR_EPROTO,
                  "watch stream line %" PRIu64 " (byte %" PRIu64 ") is not an event: %s",
                  dec->line_no, dec->line_start,
                  json_is_object(root) ? "no \"type\" string" : "not a JSON object");
    json_decref(root);
    return fail(dec, KCR_EPROTO);
  }
  rc = decode_event(dec, json_string_value(type), json_string_length(type), object, err);
  json_decref(root);
  return rc;
}

/* decode_frame handles one protobuf frame: the frame hook's, else transcoded
 * and parsed as a line's object would be. */
static int decode_frame(kcr_watch_decoder_t *dec, const unsigned char *frame, size_t len,
                        kcr_error_t *err) {
  json_error_t jerr;
  json_t *object;
  kcr_error_t perr;
  char type[32];
  int rc;

  if (dec->frame_fn) {
    dec->in_callback = 1;
    rc = dec->frame_fn((const char *)frame, len, dec->frame_data);
    dec->in_callback = 0;
    if (rc < 0) {
      kcr_error_set(err, rc, "watch frame hook stopped the stream at frame %" PRIu64 ": %s",
                    dec->line_no, kcr_strerror(rc));
      return fail(dec, rc);
    }
    if (rc > 0)
      return 0;
  }
  kcr_error_clear(&perr);
  kcr_buf_reset(&dec->json);
  rc = kcr__pb_event(frame, len, type, sizeof(type), &dec->json, NULL, &perr);
  if (rc == KCR_ENOMEM || rc == KCR_ETOOBIG) {
    kcr_error_set(err, rc, "watch stream frame %" PRIu64 ": %s", dec->line_no,
                  rc == KCR_ENOMEM ? "out of memory" : "its JSON is past the line limit");
    return fail(dec, rc);
  }
  if (rc) {
    kcr_error_set(err, rc == KCR_ENOTSUP ? KCR_ENOTSUP : KCR_EPROTO,
                  "watch stream frame %" PRIu64 " (byte %" PRIu64 "): %s", dec->line_no,
                  dec->line_start, perr.message);
    return fail(dec, rc == KCR_ENOTSUP ? KCR_ENOTSUP : KCR_EPROTO);
  }
  memset(&jerr, 0, sizeof(jerr));
  object = json_loadb(dec->json.data, dec->json.len, 0, &jerr);
  if (dec->json.cap > RETAIN_MAX)
    kcr_buf_free(&dec->json);
  if (!object)
    return parse_error(dec, &jerr, len, err);
  rc = decode_event(dec, type, strlen(type), object, err);
  json_decref(object);
  return rc;
}

static size_t be32(const char *b) {
  const unsigned char *u = (const unsigned char *)b;
  return (size_t)u[0] << 24 | (size_t)u[1] << 16 | (size_t)u[2] << 8 | u[3];
}

/* feed_frames is kcr_watch_decoder_feed for a protobuf stream. */
static int feed_frames(kcr_watch_decoder_t *dec, const unsigned char *p, size_t len,
                       kcr_error_t *err) {
  const unsigned char *end = p + len, *start = p;
  size_t at, n;
  int rc;
  while (p < end) {
    if (dec->partial.len) { /* a frame split across chunks: complete it */
      size_t have = dec->partial.len, want = 4;
      if (have >= 4)
        want = 4 + be32(dec->partial.data);
      n = want - have;
      if (n > (size_t)(end - p))
        n = (size_t)(end - p);
      if (kcr_buf_append(&dec->partial, p, n) != 0) {
        kcr_error_set(err, KCR_ENOMEM, "out of memory buffering watch stream frame %" PRIu64,
                      dec->line_no);
        return fail(dec, KCR_ENOMEM);
      }
      p += n;
      have += n;
      if (have == 4 && want == 4) { /* its length is in */
        if (be32(dec->partial.data) > dec->max_line)
          return too_big(dec, err);
        if (be32(dec->partial.data) > 0)
          continue; /* now its bytes */
      } else if (have < want) {
        break; /* the chunk ended */
      }
      rc = decode_frame(dec, (const unsigned char *)dec->partial.data + 4, have - 4, err);
      if (dec->partial.cap > RETAIN_MAX)
        kcr_buf_free(&dec->partial);
      else
        kcr_buf_reset(&dec->partial);
    } else {
      rc = kcr__pb_frame(p, (size_t)(end - p), dec->max_line, &at, &n);
      if (rc == KCR_ETOOBIG)
        return too_big(dec, err);
      if (rc == 0) { /* the rest of this frame is in a later chunk */
        if (kcr_buf_append(&dec->partial, p, (size_t)(end - p)) != 0) {
          kcr_error_set(err, KCR_ENOMEM, "out of memory buffering watch stream frame %" PRIu64,
                        dec->line_no);
          return fail(dec, KCR_ENOMEM);
        }
        break;
      }
      rc = decode_frame(dec, p + at, n, err);
      p += at + n;
    }
    if (rc)
      return rc;
    dec->line_start = dec->fed + (uint64_t)(p - start);
    dec->line_no++;
  }
  dec->fed += len;
  return 0;
}

/* refused reports a call on a decoder that already failed. */
static int refused(const kcr_watch_decoder_t *dec, kcr_error_t *err) {
  return kcr_error_set(err, dec->failed, "watch stream already failed (%s); no more input taken",
                       kcr_err_name(dec->failed));
}

int kcr_watch_decoder_feed(kcr_watch_decoder_t *dec, const void *bytes, size_t len,
                           kcr_error_t *err) {
  const char *p = bytes, *end;
  int rc;

  assert(dec && !dec->in_callback && !dec->finished);
  if (dec->failed)
    return refused(dec, err);
  if (len == 0)
    return 0; /* bytes may be NULL: no arithmetic on it */
  if (dec->protobuf)
    return feed_frames(dec, bytes, len, err);
  end = p + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t seg = (size_t)((nl ? nl : end) - p);

    if (seg > dec->max_line - dec->partial.len)
      return too_big(dec, err);
    if (!nl) {
      /* the line goes on in a later chunk: keep what we have */
      if (kcr_buf_append(&dec->partial, p, seg) != 0) {
        kcr_error_set(err, KCR_ENOMEM, "out of memory buffering watch stream line %" PRIu64,
                      dec->line_no);
        return fail(dec, KCR_ENOMEM);
      }
      break;
    }
    if (dec->partial.len == 0) {
      rc = decode_line(dec, p, seg, err);
    } else {
      if (kcr_buf_append(&dec->partial, p, seg) != 0) {
        kcr_error_set(err, KCR_ENOMEM, "out of memory buffering watch stream line %" PRIu64,
                      dec->line_no);
        return fail(dec, KCR_ENOMEM);
      }
      rc = decode_line(dec, dec->partial.data, dec->partial.len, err);
      if (dec->partial.cap > RETAIN_MAX)
        kcr_buf_free(&dec->partial);
      else
        kcr_buf_reset(&dec->partial);
    }
    if (rc != 0)
      return rc;
    p = nl + 1;
    dec->line_start = dec->fed + (uint64_t)(p - (const char *)bytes);
    dec->line_no++;
  }
  dec->fed += len;
  return 0;
}

int kcr_watch_decoder_finish(kcr_watch_decoder_t *dec, kcr_error_t *err) {
  int rc = 0;

  assert(dec && !dec->in_callback && !dec->finished);
  dec->finished = 1;
  if (dec->failed)
    return refused(dec, err);
  if (dec->protobuf && dec->partial.len > 0)
    rc = kcr_error_set(err, KCR_EPROTO, "watch stream ended inside frame %" PRIu64, dec->line_no);
  else if (dec->partial.len > 0)
    rc = decode_line(dec, dec->partial.data, dec->partial.len, err);
  kcr_buf_free(&dec->partial);
  return rc;
}
