/* SPDX-License-Identifier: MIT */
/*
 * fuzz_watch.c: the watch decoder on arbitrary streams. Input: byte 0 picks where
 * the stream is cut in two, byte 1 the line limit (0: the default, else 16 bytes
 * per unit, so over-long lines are reached), the rest is the stream. The oracle
 * is the same stream fed whole: the events, in order and equal, and the result
 * code must not depend on where the network cut the bytes.
 */
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "kcr/watch.h"

#define MAX_KEPT 256

typedef struct run {
  int n;
  kcr_watch_event_type types[MAX_KEPT];
  json_t *objects[MAX_KEPT];
} run_t;

/* utf8_ok checks that s is valid UTF-8 (jansson's json_string refuses anything else). */
static int utf8_ok(const char *s) {
  json_t *j = json_string(s);
  int ok = j != NULL;
  json_decref(j);
  return ok;
}

static int on_event(const kcr_watch_event *ev, void *data) {
  run_t *r = data;
  FUZZ_CHECK(ev->type >= KCR_WATCH_ADDED && ev->type <= KCR_WATCH_ERROR);
  FUZZ_CHECK(json_is_object(ev->object));
  FUZZ_CHECK((ev->type == KCR_WATCH_ERROR) == (ev->error != NULL));
  if (ev->error) {
    FUZZ_CHECK(ev->error->code == KCR_EAPI || ev->error->code == KCR_EPROTO);
    FUZZ_CHECK(memchr(ev->error->message, '\0', sizeof(ev->error->message)) != NULL);
    FUZZ_CHECK(memchr(ev->error->causes, '\0', sizeof(ev->error->causes)) != NULL);
    FUZZ_CHECK(utf8_ok(ev->error->message) && utf8_ok(ev->error->causes));
  }
  if (r->n < MAX_KEPT) {
    r->types[r->n] = ev->type;
    r->objects[r->n] = ev->object;
  } else {
    json_decref(ev->object);
  }
  r->n++;
  return 0;
}

static int decode(run_t *r, size_t max_line, const uint8_t *s, size_t len, size_t cut) {
  kcr_watch_decoder_t *dec;
  kcr_error_t err;
  int rc;

  kcr_error_clear(&err);
  FUZZ_CHECK(kcr_watch_decoder_create(max_line, on_event, r, &dec, &err) == 0);
  rc = kcr_watch_decoder_feed(dec, s, cut, &err);
  if (rc == 0)
    rc = kcr_watch_decoder_feed(dec, s + cut, len - cut, &err);
  if (rc == 0)
    rc = kcr_watch_decoder_finish(dec, &err);
  FUZZ_CHECK(rc == 0 || rc == KCR_EPARSE || rc == KCR_EPROTO || rc == KCR_ETOOBIG);
  FUZZ_CHECK(err.code == rc);
  FUZZ_CHECK(utf8_ok(err.message));
  kcr_watch_decoder_destroy(dec);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  run_t whole = {0}, split = {0};
  size_t max_line, cut, len;
  const uint8_t *s;
  int rc1, rc2;

  if (size < 2)
    return 0;
  s = data + 2;
  len = size - 2;
  cut = len * data[0] / 255;
  max_line = (size_t)data[1] * 16;
  rc1 = decode(&whole, max_line, s, len, len);
  rc2 = decode(&split, max_line, s, len, cut);
  FUZZ_CHECK(rc1 == rc2);
  FUZZ_CHECK(whole.n == split.n);
  for (int i = 0; i < whole.n && i < MAX_KEPT; i++) {
    FUZZ_CHECK(whole.types[i] == split.types[i]);
    FUZZ_CHECK(json_equal(whole.objects[i], split.objects[i]));
    json_decref(whole.objects[i]);
    json_decref(split.objects[i]);
  }
  return 0;
}
