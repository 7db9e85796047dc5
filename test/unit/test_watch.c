/* SPDX-License-Identifier: MIT */
/*
 * test_watch.c: watch stream framing. A recorded-like stream (data/watch/configmaps.jsonl)
 * must decode to the same events however it is cut: at every byte offset, and
 * byte by byte. Over-long lines, ERROR events, bad lines, a callback that stops
 * the stream, reuse after reset, and allocation failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client/watch_internal.h"
#include "kcr/apierror.h"
#include "kcr/watch.h"
#include "testutil.h"

#define MAX_EVENTS 64

/* collector_t records what the callback saw. */
typedef struct collector {
  int n;
  kcr_watch_event_type types[MAX_EVENTS];
  json_t *objects[MAX_EVENTS]; /* owned */
  kcr_error_t errors[MAX_EVENTS];
  int stop_at; /* return KCR_ECANCELED on this event (1-based); 0: never */
  /* compare mode: check against ref instead of keeping */
  const struct collector *ref;
  int mismatches;
} collector_t;

static int on_event(const kcr_watch_event *ev, void *data) {
  collector_t *c = data;
  int i = c->n++;

  assert_non_null(ev->object);
  assert_true(json_is_object(ev->object));
  assert_true(i < MAX_EVENTS);
  assert_true((ev->type == KCR_WATCH_ERROR) == (ev->error != NULL));
  if (c->ref) {
    if (i >= c->ref->n || c->ref->types[i] != ev->type ||
        !json_equal(c->ref->objects[i], ev->object))
      c->mismatches++;
    json_decref(ev->object);
  } else {
    c->types[i] = ev->type;
    c->objects[i] = ev->object;
    if (ev->error)
      c->errors[i] = *ev->error;
  }
  return c->stop_at == c->n ? KCR_ECANCELED : 0;
}

static void collector_free(collector_t *c) {
  for (int i = 0; i < c->n && !c->ref; i++)
    json_decref(c->objects[i]);
  memset(c, 0, sizeof(*c));
}

static char *read_data(const char *name, size_t *len) {
  char path[512];
  FILE *f;
  char *buf;
  long n;

  snprintf(path, sizeof(path), "%s/watch/%s", KCR_TEST_DATA_DIR, name);
  f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  n = ftell(f);
  assert_true(n > 0);
  rewind(f);
  buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* decode_all feeds data cut at the given offsets (ascending) and finishes. */
static int decode_all(collector_t *c, size_t max_line, const char *data, size_t len,
                      const size_t *cuts, size_t ncuts, kcr_error_t *err) {
  kcr_watch_decoder_t *dec;
  size_t from = 0;
  int rc;

  rc = kcr_watch_decoder_create(max_line, on_event, c, &dec, err);
  if (rc)
    return rc;
  for (size_t i = 0; i <= ncuts; i++) {
    size_t to = i < ncuts ? cuts[i] : len;
    rc = kcr_watch_decoder_feed(dec, data + from, to - from, err);
    if (rc)
      goto out;
    from = to;
  }
  rc = kcr_watch_decoder_finish(dec, err);
out:
  kcr_watch_decoder_destroy(dec);
  return rc;
}

static const char *const stream_types[] = {"ADDED", "ADDED",   "BOOKMARK", "MODIFIED",
                                           "ADDED", "DELETED", "BOOKMARK", "ERROR"};

static void test_watch_recorded_stream(void **state) {
  collector_t c = {0};
  size_t len;
  char *data = read_data("configmaps.jsonl", &len);
  json_t *md;
  (void)state;

  assert_int_equal(decode_all(&c, 0, data, len, NULL, 0, NULL), 0);
  assert_int_equal(c.n, 8);
  for (int i = 0; i < c.n; i++)
    assert_string_equal(kcr_watch_event_type_name(c.types[i]), stream_types[i]);
  md = json_object_get(c.objects[0], "metadata");
  assert_string_equal(json_string_value(json_object_get(md, "name")), "app-config");
  assert_string_equal(json_string_value(json_object_get(md, "resourceVersion")), "1201");
  /* the initial-events-end bookmark */
  md = json_object_get(c.objects[2], "metadata");
  assert_string_equal(json_string_value(json_object_get(md, "resourceVersion")), "1205");
  assert_string_equal(json_string_value(json_object_get(json_object_get(md, "annotations"),
                                                        "k8s.io/initial-events-end")),
                      "true");
  /* Go's \u003c escapes and UTF-8 come through */
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(c.objects[3], "data"), "greeting")),
      "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 <b>&</b>");
  /* the ERROR event: 410 Expired */
  assert_int_equal(c.errors[7].code, KCR_EAPI);
  assert_int_equal(c.errors[7].http_status, 410);
  assert_string_equal(c.errors[7].reason, "Expired");
  assert_string_equal(c.errors[7].message, "too old resource version: 1187 (1300)");
  assert_true(kcr_error_is_gone(&c.errors[7]));
  collector_free(&c);
  free(data);
}

static void test_watch_split_at_every_offset(void **state) {
  collector_t ref = {0};
  size_t len;
  char *data = read_data("configmaps.jsonl", &len);
  (void)state;

  assert_int_equal(decode_all(&ref, 0, data, len, NULL, 0, NULL), 0);
  for (size_t cut = 0; cut <= len; cut++) {
    collector_t c = {0};
    kcr_error_t err;
    kcr_error_clear(&err);
    c.ref = &ref;
    if (decode_all(&c, 0, data, len, &cut, 1, &err) != 0)
      fail_msg("cut at %zu: %s", cut, err.message);
    if (c.n != ref.n || c.mismatches)
      fail_msg("cut at %zu: %d events, %d differ", cut, c.n, c.mismatches);
  }
  /* and in three pieces, around every line end */
  for (size_t i = 0; i < len; i++) {
    size_t cuts[2];
    collector_t c = {0};
    if (data[i] != '\n')
      continue;
    for (size_t a = i > 3 ? i - 3 : 0; a <= i + 1 && a <= len; a++) {
      cuts[0] = a;
      cuts[1] = a + 2 <= len ? a + 2 : len;
      memset(&c, 0, sizeof(c));
      c.ref = &ref;
      assert_int_equal(decode_all(&c, 0, data, len, cuts, 2, NULL), 0);
      assert_int_equal(c.n, ref.n);
      assert_int_equal(c.mismatches, 0);
    }
  }
  collector_free(&ref);
  free(data);
}

static void test_watch_byte_by_byte(void **state) {
  collector_t ref = {0}, c = {0};
  kcr_watch_decoder_t *dec;
  size_t len;
  char *data = read_data("configmaps.jsonl", &len);
  (void)state;

  assert_int_equal(decode_all(&ref, 0, data, len, NULL, 0, NULL), 0);
  c.ref = &ref;
  assert_int_equal(kcr_watch_decoder_create(0, on_event, &c, &dec, NULL), 0);
  for (size_t i = 0; i < len; i++)
    assert_int_equal(kcr_watch_decoder_feed(dec, data + i, 1, NULL), 0);
  assert_int_equal(kcr_watch_decoder_feed(dec, data, 0, NULL), 0); /* an empty chunk */
  assert_int_equal(kcr_watch_decoder_feed(dec, NULL, 0, NULL), 0);
  assert_int_equal(kcr_watch_decoder_finish(dec, NULL), 0);
  assert_int_equal(c.n, ref.n);
  assert_int_equal(c.mismatches, 0);
  kcr_watch_decoder_destroy(dec);
  collector_free(&ref);
  free(data);
}

static void test_watch_last_line_without_newline(void **state) {
  collector_t c = {0};
  kcr_watch_decoder_t *dec;
  const char *s = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\"}}\n"
                  "{\"type\":\"DELETED\",\"object\":{\"kind\":\"ConfigMap\"}}";
  (void)state;
  assert_int_equal(kcr_watch_decoder_create(0, on_event, &c, &dec, NULL), 0);
  assert_int_equal(kcr_watch_decoder_feed(dec, s, strlen(s), NULL), 0);
  assert_int_equal(c.n, 1); /* the second line may go on */
  assert_int_equal(kcr_watch_decoder_finish(dec, NULL), 0);
  assert_int_equal(c.n, 2);
  assert_int_equal(c.types[1], KCR_WATCH_DELETED);
  kcr_watch_decoder_destroy(dec);
  collector_free(&c);
}

static void test_watch_empty_lines_ignored(void **state) {
  collector_t c = {0};
  const char *s = "\n\n  \r\n{\"type\":\"ADDED\",\"object\":{}}\r\n\n\t\n"
                  " {\"type\":\"MODIFIED\",\"object\":{}} \n\n  ";
  (void)state;
  assert_int_equal(decode_all(&c, 0, s, strlen(s), NULL, 0, NULL), 0);
  assert_int_equal(c.n, 2);
  assert_int_equal(c.types[0], KCR_WATCH_ADDED);
  assert_int_equal(c.types[1], KCR_WATCH_MODIFIED);
  collector_free(&c);
}

static void test_watch_over_long_line(void **state) {
  collector_t c = {0};
  kcr_watch_decoder_t *dec;
  kcr_error_t err;
  char line[128];
  const char *ok = "{\"type\":\"ADDED\",\"object\":{}}\n";
  size_t oklen = strlen(ok) - 1; /* 28 bytes without the newline */
  (void)state;

  /* a line of exactly the limit passes, one byte more does not */
  assert_int_equal(decode_all(&c, oklen, ok, oklen + 1, NULL, 0, NULL), 0);
  assert_int_equal(c.n, 1);
  collector_free(&c);
  kcr_error_clear(&err);
  assert_int_equal(decode_all(&c, oklen - 1, ok, oklen + 1, NULL, 0, &err), KCR_ETOOBIG);
  assert_int_equal(c.n, 0);
  assert_non_null(strstr(err.message, "line 1"));
  assert_non_null(strstr(err.message, "27-byte limit"));

  /* split: refused as soon as the buffered part passes the limit, without a newline */
  assert_int_equal(kcr_watch_decoder_create(64, on_event, &c, &dec, NULL), 0);
  assert_int_equal(kcr_watch_decoder_feed(dec, ok, strlen(ok), NULL), 0);
  memset(line, 'x', sizeof(line));
  assert_int_equal(kcr_watch_decoder_feed(dec, line, 40, NULL), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_watch_decoder_feed(dec, line, 25, &err), KCR_ETOOBIG);
  assert_non_null(strstr(err.message, "line 2 (byte 29)"));
  /* ...and refuses everything after */
  kcr_error_clear(&err);
  assert_int_equal(kcr_watch_decoder_feed(dec, ok, strlen(ok), &err), KCR_ETOOBIG);
  assert_non_null(strstr(err.message, "already failed"));
  assert_int_equal(c.n, 1);
  /* reset makes it usable again */
  kcr_watch_decoder_reset(dec);
  assert_int_equal(kcr_watch_decoder_feed(dec, ok, strlen(ok), NULL), 0);
  assert_int_equal(c.n, 2);
  kcr_watch_decoder_destroy(dec);
  collector_free(&c);
}

static void test_watch_endless_line_is_bounded(void **state) {
  collector_t c = {0};
  kcr_watch_decoder_t *dec;
  static char chunk[4096];
  size_t fed = 0;
  int rc = 0;
  (void)state;
  memset(chunk, 'x', sizeof(chunk));
  assert_int_equal(kcr_watch_decoder_create((size_t)64 * 1024, on_event, &c, &dec, NULL), 0);
  while (fed < (size_t)4 * 1024 * 1024) {
    rc = kcr_watch_decoder_feed(dec, chunk, sizeof(chunk), NULL);
    if (rc)
      break;
    fed += sizeof(chunk);
  }
  assert_int_equal(rc, KCR_ETOOBIG);
  assert_int_equal(fed, (size_t)64 * 1024); /* the chunk that crossed the limit was refused */
  kcr_watch_decoder_destroy(dec);
}

static void test_watch_error_event(void **state) {
  collector_t c = {0};
  const char *s =
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
      "\"status\":\"Failure\",\"message\":\"too old resource version: 5 (10)\",\"reason\":"
      "\"Expired\",\"code\":410}}\n"
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
      "\"Internal error occurred: etcd down\",\"reason\":\"InternalError\",\"details\":{"
      "\"causes\":[{\"message\":\"etcd down\"}],\"retryAfterSeconds\":2},\"code\":500}}\n"
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"ConfigMap\"}}\n";
  (void)state;
  assert_int_equal(decode_all(&c, 0, s, strlen(s), NULL, 0, NULL), 0);
  assert_int_equal(c.n, 3);
  assert_int_equal(c.types[0], KCR_WATCH_ERROR);
  assert_true(kcr_error_is_gone(&c.errors[0]));
  assert_string_equal(c.errors[0].message, "too old resource version: 5 (10)");
  assert_true(kcr_error_is_internal_error(&c.errors[1]));
  assert_string_equal(c.errors[1].causes, "etcd down");
  assert_int_equal(c.errors[1].retry_after_seconds, 2);
  /* an ERROR whose object is not a Status: the event comes, its error says so */
  assert_int_equal(c.errors[2].code, KCR_EPROTO);
  assert_false(kcr_error_is_api(&c.errors[2]));
  collector_free(&c);
}

/* valid_utf8 checks with jansson, which refuses invalid UTF-8. */
static int valid_utf8(const char *s) {
  json_t *j = json_string(s);
  int ok = j != NULL;
  json_decref(j);
  return ok;
}

/* expect_bad decodes a stream whose last line is bad. */
static void expect_bad(const char *s, int code, const char *fragment, int events) {
  collector_t c = {0};
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(decode_all(&c, 0, s, strlen(s), NULL, 0, &err), code);
  assert_int_equal(err.code, code);
  if (!strstr(err.message, fragment))
    fail_msg("decoding %s said \"%s\", want \"%s\"", s, err.message, fragment);
  assert_int_equal(c.n, events);
  assert_true(valid_utf8(err.message));
  collector_free(&c);
}

static void test_watch_unknown_type(void **state) {
  (void)state;
  expect_bad("{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"UPSERTED\",\"object\":{}}\n",
             KCR_EPROTO, "line 2 (byte 29): unknown event type \"UPSERTED\"", 1);
  expect_bad("{\"type\":\"added\",\"object\":{}}\n", KCR_EPROTO, "unknown event type", 0);
  expect_bad("{\"type\":\"\",\"object\":{}}\n", KCR_EPROTO, "unknown event type \"\"", 0);
  /* the server's text is escaped and cut on a character boundary */
  expect_bad("{\"type\":\"\\u0001A\\n\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93"
             "\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93"
             "\xe2\x9c\x93\xe2\x9c\x93\",\"object\":{}}\n",
             KCR_EPROTO, "unknown event type \"\\x01A\\n\xe2\x9c\x93\xe2\x9c\x93", 0);
}

static void test_watch_invalid_json_line(void **state) {
  (void)state;
  expect_bad("{\"type\":\"ADDED\",\"object\":{}}\n\n{\"type\":\"ADDED\",\"object\":{\"a\":}}\n",
             KCR_EPARSE, "line 3 (byte 30): invalid JSON at column", 1);
  expect_bad("{\"type\":\"ADDED\",\"object\":{}} trailing\n", KCR_EPARSE, "line 1 (byte 0)", 0);
  /* a truncated last line, completed by finish */
  expect_bad("{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"ADD", KCR_EPARSE, "line 2 (byte 29)",
             1);
}

static void test_watch_not_an_event(void **state) {
  (void)state;
  expect_bad("[1,2]\n", KCR_EPROTO, "not a JSON object", 0);
  expect_bad("{\"object\":{}}\n", KCR_EPROTO, "no \"type\" string", 0);
  expect_bad("{\"type\":1,\"object\":{}}\n", KCR_EPROTO, "no \"type\" string", 0);
  expect_bad("{\"type\":\"ADDED\"}\n", KCR_EPROTO, "ADDED event without an \"object\" object", 0);
  expect_bad("{\"type\":\"BOOKMARK\",\"object\":\"x\"}\n", KCR_EPROTO, "BOOKMARK event without", 0);
}

static void test_watch_callback_stops_stream(void **state) {
  collector_t c = {0};
  kcr_watch_decoder_t *dec;
  kcr_error_t err;
  const char *s = "{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"ADDED\",\"object\":{}}\n"
                  "{\"type\":\"ADDED\",\"object\":{}}\n";
  (void)state;
  c.stop_at = 2;
  kcr_error_clear(&err);
  assert_int_equal(kcr_watch_decoder_create(0, on_event, &c, &dec, NULL), 0);
  assert_int_equal(kcr_watch_decoder_feed(dec, s, strlen(s), &err), KCR_ECANCELED);
  assert_non_null(strstr(err.message, "stopped the stream at line 2"));
  assert_int_equal(c.n, 2); /* the third event was not delivered */
  assert_int_equal(kcr_watch_decoder_finish(dec, NULL), KCR_ECANCELED);
  kcr_watch_decoder_destroy(dec);
  collector_free(&c);
}

static void test_watch_type_names(void **state) {
  (void)state;
  assert_string_equal(kcr_watch_event_type_name(KCR_WATCH_ADDED), "ADDED");
  assert_string_equal(kcr_watch_event_type_name(KCR_WATCH_MODIFIED), "MODIFIED");
  assert_string_equal(kcr_watch_event_type_name(KCR_WATCH_DELETED), "DELETED");
  assert_string_equal(kcr_watch_event_type_name(KCR_WATCH_BOOKMARK), "BOOKMARK");
  assert_string_equal(kcr_watch_event_type_name(KCR_WATCH_ERROR), "ERROR");
  assert_string_equal(kcr_watch_event_type_name((kcr_watch_event_type)0), "UNKNOWN");
  assert_string_equal(kcr_watch_event_type_name((kcr_watch_event_type)99), "UNKNOWN");
}

/* counting_cb just counts and drops, allocating nothing itself. */
static int counting_cb(const kcr_watch_event *ev, void *data) {
  (*(int *)data)++;
  json_decref(ev->object);
  return 0;
}

static int decode_counting(const char *data, size_t len, size_t cut1, size_t cut2, int *n) {
  kcr_watch_decoder_t *dec;
  int rc;
  *n = 0;
  rc = kcr_watch_decoder_create(0, counting_cb, n, &dec, NULL);
  if (rc)
    return rc;
  if ((rc = kcr_watch_decoder_feed(dec, data, cut1, NULL)) == 0 &&
      (rc = kcr_watch_decoder_feed(dec, data + cut1, cut2 - cut1, NULL)) == 0 &&
      (rc = kcr_watch_decoder_feed(dec, data + cut2, len - cut2, NULL)) == 0)
    rc = kcr_watch_decoder_finish(dec, NULL);
  kcr_watch_decoder_destroy(dec);
  return rc;
}

static void test_watch_alloc_failure(void **state) {
  size_t len;
  char *data = read_data("configmaps.jsonl", &len);
  int n = 0;
  (void)state;
  /* cuts inside the first and fifth lines, so that buffering fails too; the last
   * line lacks its newline, so finish parses it */
  KCR_TEST_ALLOC_LOOP(decode_counting(data, len - 1, 100, 1500, &n), (void)0);
  assert_int_equal(n, 8);
  free(data);
}

/* The line hook: what it takes never reaches the callback, what it leaves is
 * decoded as usual (errors included), and its error fails the stream. */
typedef struct hooked {
  int offered, taken, events;
  int fail_at; /* offer number whose hook fails, 0: never */
} hooked_t;

static int on_line(const char *line, size_t len, void *data) {
  hooked_t *h = data;
  h->offered++;
  if (h->fail_at && h->offered == h->fail_at)
    return KCR_ENOMEM;
  if (len > 6 && memcmp(line, "{\"take", 6) == 0) {
    h->taken++;
    return 1;
  }
  return 0;
}

static int on_hooked_event(const kcr_watch_event *ev, void *data) {
  ((hooked_t *)data)->events++;
  json_decref(ev->object);
  return 0;
}

static void test_watch_line_hook(void **state) {
  static const char stream[] = "{\"take\":1}\n"
                               "\n"
                               "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
                               "{\"take\":2}\n";
  static const char bad[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":1}\n";
  kcr_watch_decoder_t *dec;
  hooked_t h = {0};
  kcr_error_t err;
  (void)state;
  assert_int_equal(kcr_watch_decoder_create(0, on_hooked_event, &h, &dec, NULL), 0);
  kcr__watch_decoder_set_line_fn(dec, on_line, &h);
  assert_int_equal(kcr_watch_decoder_feed(dec, stream, strlen(stream), NULL), 0);
  assert_int_equal(h.offered, 3); /* not the empty line */
  assert_int_equal(h.taken, 2);
  assert_int_equal(h.events, 1);
  /* a line the hook leaves keeps jansson's error */
  kcr_error_clear(&err);
  assert_int_equal(kcr_watch_decoder_feed(dec, bad, strlen(bad), &err), KCR_EPARSE);
  assert_non_null(strstr(err.message, "invalid JSON"));
  kcr_watch_decoder_destroy(dec);

  memset(&h, 0, sizeof(h));
  h.fail_at = 2;
  assert_int_equal(kcr_watch_decoder_create(0, on_hooked_event, &h, &dec, NULL), 0);
  kcr__watch_decoder_set_line_fn(dec, on_line, &h);
  kcr_error_clear(&err);
  assert_int_equal(kcr_watch_decoder_feed(dec, stream, strlen(stream), &err), KCR_ENOMEM);
  assert_non_null(strstr(err.message, "line 3"));
  assert_int_equal(h.events, 0);
  /* sticky: nothing more is taken */
  assert_int_not_equal(kcr_watch_decoder_feed(dec, "{}\n", 3, NULL), 0);
  assert_int_equal(h.offered, 2);
  kcr_watch_decoder_destroy(dec);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_watch_recorded_stream),
      cmocka_unit_test(test_watch_split_at_every_offset),
      cmocka_unit_test(test_watch_byte_by_byte),
      cmocka_unit_test(test_watch_last_line_without_newline),
      cmocka_unit_test(test_watch_empty_lines_ignored),
      cmocka_unit_test(test_watch_over_long_line),
      cmocka_unit_test(test_watch_endless_line_is_bounded),
      cmocka_unit_test(test_watch_error_event),
      cmocka_unit_test(test_watch_unknown_type),
      cmocka_unit_test(test_watch_invalid_json_line),
      cmocka_unit_test(test_watch_not_an_event),
      cmocka_unit_test(test_watch_callback_stops_stream),
      cmocka_unit_test(test_watch_type_names),
      cmocka_unit_test(test_watch_alloc_failure),
      cmocka_unit_test(test_watch_line_hook),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
