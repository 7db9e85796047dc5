/* SPDX-License-Identifier: MIT */
/*
 * test_pbscan.c: the protobuf transcoder, against the API server's own
 * encodings. data/pb holds lists of the kinds in data/pb/objects.yaml as one
 * kube-apiserver sent them in protobuf and in JSON (data/pb/capture.py): each
 * protobuf answer, transcoded, must be the JSON answer's value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "client/watch_internal.h"
#include "kcr/buf.h"
#include "kcr/watch.h"
#include "testutil.h"
#include "util/jscan.h"
#include "util/pb_schema.h"
#include "util/pbscan.h"

#define FIXTURE(name) KCR_TEST_DATA_DIR "/pb/" name

static const char *const LISTS[] = {
    "configmaps",  "secrets",         "pods",   "services",  "deployments",
    "replicasets", "leases",          "events", "cronjobs",  "hpas",
    "pdbs",        "networkpolicies", "roles",  "namespace", "status-404",
};

/* transcode reads NAME.pb and returns its transcoding as a tree. */
static json_t *transcode(const char *name, kcr__scan_meta_t *meta) {
  char path[256];
  size_t len;
  unsigned char *pb;
  kcr_buf_t out;
  kcr_error_t err = {0};
  json_error_t jerr;
  json_t *got;
  snprintf(path, sizeof(path), FIXTURE("%s.pb"), name);
  pb = (unsigned char *)kcr_test_slurp(path, &len);
  assert_non_null(pb);
  kcr_buf_init(&out, 64 << 20);
  if (kcr__pb_object(pb, len, &out, meta, &err) != 0)
    fail_msg("%s: %s", name, err.message);
  got = json_loadb(out.data, out.len, 0, &jerr);
  if (!got)
    fail_msg("%s: not JSON: %s: %.200s", name, jerr.text, out.data);
  /* the output is minified: the scanner copies it byte for byte */
  {
    kcr_buf_t again;
    kcr__scan_meta_t m2;
    kcr_buf_init(&again, 64 << 20);
    if (json_is_object(json_object_get(got, "metadata")) && !json_object_get(got, "items")) {
      assert_int_equal(kcr__scan_object(out.data, out.len, &again, &m2), 0);
      assert_int_equal(again.len, out.len);
      assert_memory_equal(again.data, out.data, out.len);
    }
    kcr_buf_free(&again);
  }
  kcr_buf_free(&out);
  free(pb);
  return got;
}

static json_t *expected(const char *name) {
  char path[256];
  json_t *want;
  snprintf(path, sizeof(path), FIXTURE("%s.json"), name);
  want = json_load_file(path, 0, NULL);
  assert_non_null(want);
  /* an object's own managedFields are left out, as the scanner does */
  json_object_del(json_object_get(want, "metadata"), "managedFields");
  return want;
}

static void test_pbscan_matches_the_api_servers_json(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof(LISTS) / sizeof(LISTS[0]); i++) {
    json_t *got = transcode(LISTS[i], NULL), *want = expected(LISTS[i]);
    if (!json_equal(want, got)) {
      char *a = json_dumps(want, JSON_SORT_KEYS), *b = json_dumps(got, JSON_SORT_KEYS);
      print_error("%s:\nwant %s\ngot  %s\n", LISTS[i], a, b);
      free(a);
      free(b);
    }
    kcr_test_assert_json_equal(want, got);
    json_decref(got);
    json_decref(want);
  }
}

static void test_pbscan_notes_the_metadata(void **state) {
  kcr__scan_meta_t m;
  json_t *got, *want = expected("namespace");
  (void)state;
  memset(&m, 'x', sizeof(m));
  got = transcode("namespace", &m);
  assert_string_equal(m.name, "pbt");
  assert_string_equal(m.ns, "");
  assert_string_equal(m.rv, json_string_value(json_object_get(json_object_get(want, "metadata"),
                                                              "resourceVersion")));
  assert_true(m.has_kind && m.has_api_version);
  assert_string_equal(json_string_value(json_object_get(got, "kind")), "Namespace");
  json_decref(got);
  json_decref(want);
}

/* the watch stream: its frames, each an event, the last the bookmark */
static void test_pbscan_reads_a_watch_stream(void **state) {
  size_t len, at, n, events = 0;
  unsigned char *s = (unsigned char *)kcr_test_slurp(FIXTURE("watch.pb"), &len);
  json_t *list = expected("configmaps");
  size_t pos = 0;
  char type[16] = "";
  (void)state;
  assert_non_null(s);
  while (pos < len) {
    kcr_buf_t out;
    kcr__scan_meta_t m;
    kcr_error_t err = {0};
    assert_int_equal(kcr__pb_frame(s + pos, len - pos, 1 << 20, &at, &n), 1);
    kcr_buf_init(&out, 1 << 20);
    if (kcr__pb_event(s + pos + at, n, type, sizeof(type), &out, &m, &err) != 0)
      fail_msg("frame %zu: %s", events, err.message);
    if (strcmp(type, "ADDED") == 0) {
      int found = 0;
      size_t i;
      json_t *item;
      json_array_foreach(json_object_get(list, "items"), i, item) {
        found |=
            strcmp(json_string_value(json_object_get(json_object_get(item, "metadata"), "name")),
                   m.name) == 0;
      }
      assert_true(found);
      assert_non_null(strstr(out.data, "\"kind\":\"ConfigMap\""));
      assert_null(strstr(out.data, "managedFields"));
    }
    kcr_buf_free(&out);
    pos += at + n;
    events++;
  }
  assert_string_equal(type, "BOOKMARK");
  assert_int_equal(events, json_array_size(json_object_get(list, "items")) + 1);
  /* a frame cut short asks for more; a length past the bound is refused */
  assert_int_equal(kcr__pb_frame(s, 3, 1 << 20, &at, &n), 0);
  assert_int_equal(kcr__pb_frame(s, 10, 1 << 20, &at, &n), 0);
  assert_int_equal(kcr__pb_frame(s, len, 8, &at, &n), KCR_ETOOBIG);
  json_decref(list);
  free(s);
}

typedef struct seen {
  int events, bookmarks, frames_taken;
  char names[16][64];
} seen_t;

static int on_event(const kcr_watch_event *ev, void *data) {
  seen_t *s = data;
  if (ev->type == KCR_WATCH_BOOKMARK)
    s->bookmarks++;
  else if (s->events < 16)
    snprintf(s->names[s->events], sizeof(s->names[0]), "%s",
             json_string_value(json_object_get(json_object_get(ev->object, "metadata"), "name")));
  if (ev->type != KCR_WATCH_BOOKMARK)
    s->events++;
  json_decref(ev->object);
  return 0;
}

static int take_every_other(const char *frame, size_t len, void *data) {
  seen_t *s = data;
  (void)frame;
  (void)len;
  return s->frames_taken++ % 2 == 0;
}

/* the decoder reads the same stream fed in pieces of every size */
static void test_pbscan_decoder_reads_frames_in_any_chunks(void **state) {
  size_t len;
  unsigned char *s = (unsigned char *)kcr_test_slurp(FIXTURE("watch.pb"), &len);
  json_t *list = expected("configmaps");
  size_t want = json_array_size(json_object_get(list, "items"));
  (void)state;
  for (size_t step = 1; step <= len; step += step < 16 ? 1 : 97) {
    kcr_watch_decoder_t *dec;
    kcr_error_t err = {0};
    seen_t seen = {0};
    assert_int_equal(kcr_watch_decoder_create(0, on_event, &seen, &dec, &err), 0);
    kcr__watch_decoder_set_protobuf(dec);
    for (size_t pos = 0; pos < len; pos += step) {
      size_t k = len - pos < step ? len - pos : step;
      if (kcr_watch_decoder_feed(dec, s + pos, k, &err) != 0)
        fail_msg("step %zu at %zu: %s", step, pos, err.message);
    }
    assert_int_equal(kcr_watch_decoder_finish(dec, &err), 0);
    assert_int_equal(seen.events, (int)want);
    assert_int_equal(seen.bookmarks, 1);
    kcr_watch_decoder_destroy(dec);
  }
  /* a frame hook takes what it wants; the rest reach the callback */
  {
    kcr_watch_decoder_t *dec;
    kcr_error_t err = {0};
    seen_t seen = {0};
    assert_int_equal(kcr_watch_decoder_create(0, on_event, &seen, &dec, &err), 0);
    kcr__watch_decoder_set_protobuf(dec);
    kcr__watch_decoder_set_frame_fn(dec, take_every_other, &seen);
    assert_int_equal(kcr_watch_decoder_feed(dec, s, len, &err), 0);
    assert_int_equal(kcr_watch_decoder_finish(dec, &err), 0);
    assert_int_equal(seen.frames_taken, (int)want + 1);
    assert_int_equal(seen.events + seen.bookmarks, (int)(want + 1) / 2);
    kcr_watch_decoder_destroy(dec);
  }
  /* a stream that ends inside a frame is an error */
  {
    kcr_watch_decoder_t *dec;
    kcr_error_t err = {0};
    seen_t seen = {0};
    assert_int_equal(kcr_watch_decoder_create(0, on_event, &seen, &dec, &err), 0);
    kcr__watch_decoder_set_protobuf(dec);
    assert_int_equal(kcr_watch_decoder_feed(dec, s, len - 1, &err), 0);
    assert_int_equal(kcr_watch_decoder_finish(dec, &err), KCR_EPROTO);
    kcr_watch_decoder_destroy(dec);
  }
  /* a frame longer than the limit is refused as soon as its length is in */
  {
    kcr_watch_decoder_t *dec;
    kcr_error_t err = {0};
    seen_t seen = {0};
    assert_int_equal(kcr_watch_decoder_create(64, on_event, &seen, &dec, &err), 0);
    kcr__watch_decoder_set_protobuf(dec);
    assert_int_equal(kcr_watch_decoder_feed(dec, s, 4, &err), KCR_ETOOBIG);
    kcr_watch_decoder_destroy(dec);
  }
  json_decref(list);
  free(s);
}

/* every prefix of an object is refused, and leaves the buffer as it was */
static void test_pbscan_refuses_truncated_input(void **state) {
  size_t len;
  unsigned char *pb = (unsigned char *)kcr_test_slurp(FIXTURE("pods.pb"), &len);
  kcr_buf_t out;
  (void)state;
  kcr_buf_init(&out, 64 << 20);
  assert_int_equal(kcr_buf_appends(&out, "keep"), 0);
  for (size_t n = 0; n < len; n++) {
    kcr_error_t err = {0};
    int rc = kcr__pb_object(pb, n, &out, NULL, &err);
    /* a cut at a field boundary of the envelope may still be a whole (smaller) object */
    if (rc == 0) {
      assert_true(n > 4);
      out.len = 4;
      out.data[4] = '\0';
      continue;
    }
    assert_true(rc == KCR_EPARSE || rc == KCR_ENOTSUP);
    assert_true(err.message[0] != '\0');
    assert_int_equal(out.len, 4);
    assert_string_equal(out.data, "keep");
  }
  kcr_buf_free(&out);
  free(pb);
}

/* ---- hand-made messages ---- */

typedef struct pbw {
  unsigned char b[4096];
  size_t n;
} pbw_t;

static void w_varint(pbw_t *w, uint64_t v) {
  while (v >= 0x80) {
    w->b[w->n++] = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  w->b[w->n++] = (unsigned char)v;
}

static void w_bytes(pbw_t *w, unsigned num, const void *p, size_t n) {
  w_varint(w, (uint64_t)num << 3 | 2);
  w_varint(w, n);
  memcpy(w->b + w->n, p, n);
  w->n += n;
}

static void w_msg(pbw_t *w, unsigned num, const pbw_t *m) {
  w_bytes(w, num, m->b, m->n);
}

/* object wraps a kind's bytes in the envelope the API server writes. */
static void object(pbw_t *out, const char *api_version, const char *kind, const pbw_t *raw) {
  pbw_t tm = {0};
  memcpy(out->b, "k8s\0", 4);
  out->n = 4;
  w_bytes(&tm, 1, api_version, strlen(api_version));
  w_bytes(&tm, 2, kind, strlen(kind));
  w_msg(out, 1, &tm);
  w_msg(out, 2, raw);
}

/* a ConfigMap named "a" whose data has key k = v (vn bytes) */
static void configmap(pbw_t *out, const char *v, size_t vn) {
  pbw_t meta = {0}, entry = {0}, cm = {0};
  w_bytes(&meta, 1, "a", 1);
  w_bytes(&entry, 1, "k", 1);
  w_bytes(&entry, 2, v, vn);
  w_msg(&cm, 1, &meta);
  w_msg(&cm, 2, &entry);
  object(out, "v1", "ConfigMap", &cm);
}

static char *transcode_raw(const pbw_t *in, int *rc) {
  kcr_buf_t out;
  kcr_error_t err = {0};
  char *s;
  kcr_buf_init(&out, 1 << 20);
  *rc = kcr__pb_object(in->b, in->n, &out, NULL, &err);
  s = strdup(out.len ? out.data : "");
  kcr_buf_free(&out);
  return s;
}

static void test_pbscan_strings_as_json_wants_them(void **state) {
  static const struct {
    const char *in;
    size_t n;
    const char *want;
  } cases[] = {
      {"plain", 5, "\"plain\""},
      {"q\"b\\s/", 6, "\"q\\\"b\\\\s/\""},
      {"\n\r\t\x01\x1f", 5, "\"\\n\\r\\t\\u0001\\u001f\""},
      {"\xc3\xa9 \xe6\xbc\xa2 \xf0\x9f\x98\x80", 11, "\"\xc3\xa9 \xe6\xbc\xa2 \xf0\x9f\x98\x80\""},
      {"bad\xff!", 5, "\"bad\\ufffd!\""},
      {"\xc0\xaf", 2, "\"\\ufffd\\ufffd\""},            /* overlong */
      {"\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""}, /* a surrogate */
      {"long run of plain ASCII text then \"", 35, "\"long run of plain ASCII text then \\\"\""},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    pbw_t in = {0};
    char want[256], *got;
    int rc;
    configmap(&in, cases[i].in, cases[i].n);
    got = transcode_raw(&in, &rc);
    assert_int_equal(rc, 0);
    snprintf(want, sizeof(want),
             "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\"},"
             "\"data\":{\"k\":%s}}",
             cases[i].want);
    assert_string_equal(got, want);
    {
      json_t *tree = json_loads(got, 0, NULL);
      assert_non_null(tree);
      json_decref(tree);
    }
    free(got);
  }
  {
    pbw_t in = {0};
    int rc;
    char *got;
    configmap(&in, "a\0b", 3); /* the store cannot hold a NUL */
    got = transcode_raw(&in, &rc);
    assert_int_equal(rc, KCR_EPARSE);
    free(got);
  }
}

static void test_pbscan_refuses_what_it_does_not_know(void **state) {
  pbw_t raw = {0}, in = {0};
  kcr_buf_t out;
  kcr_error_t err = {0};
  (void)state;
  kcr_buf_init(&out, 1 << 20);
  object(&in, "example.com/v1", "Widget", &raw);
  assert_int_equal(kcr__pb_object(in.b, in.n, &out, NULL, &err), KCR_ENOTSUP);
  assert_non_null(strstr(err.message, "example.com/v1 Widget"));
  assert_int_equal(out.len, 0);
  memcpy(in.b, "k8z", 3);
  assert_int_equal(kcr__pb_object(in.b, in.n, &out, NULL, &err), KCR_EPARSE);
  assert_true(kcr__pb_known("v1", "ConfigMap"));
  assert_true(kcr__pb_known("apps/v1", "DeploymentList"));
  assert_false(kcr__pb_known("example.com/v1", "Widget"));
  assert_false(kcr__pb_known("v1", "configmap"));
  kcr_buf_free(&out);
}

/* the schema: every field number is unique within its struct */
static void test_pbscan_schema_is_consistent(void **state) {
  (void)state;
  assert_true(kcr__pb_nroots > 100);
  for (unsigned i = 1; i < kcr__pb_nroots; i++) {
    int c = strcmp(kcr__pb_roots[i - 1].api_version, kcr__pb_roots[i].api_version);
    assert_true(c < 0 || (c == 0 && strcmp(kcr__pb_roots[i - 1].kind, kcr__pb_roots[i].kind) < 0));
  }
  for (unsigned m = 0; m < kcr__pb_nmessages; m++) {
    const kcr__pb_message_t *msg = &kcr__pb_messages[m];
    assert_true(msg->first + msg->count <= kcr__pb_nfields);
    for (unsigned a = 0; a < msg->count; a++)
      for (unsigned b = a + 1; b < msg->count; b++)
        assert_int_not_equal(kcr__pb_fields[msg->first + a].number,
                             kcr__pb_fields[msg->first + b].number);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pbscan_matches_the_api_servers_json),
      cmocka_unit_test(test_pbscan_notes_the_metadata),
      cmocka_unit_test(test_pbscan_reads_a_watch_stream),
      cmocka_unit_test(test_pbscan_decoder_reads_frames_in_any_chunks),
      cmocka_unit_test(test_pbscan_refuses_truncated_input),
      cmocka_unit_test(test_pbscan_strings_as_json_wants_them),
      cmocka_unit_test(test_pbscan_refuses_what_it_does_not_know),
      cmocka_unit_test(test_pbscan_schema_is_consistent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
