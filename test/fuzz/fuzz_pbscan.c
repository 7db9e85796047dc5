/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pbscan.c: the protobuf transcoder (util/pbscan.h). Input: byte 0 picks
 * the entry (0 mod 3: kcr__pb_object, 1: kcr__pb_event, 2: the watch decoder
 * in protobuf mode, fed the rest in two pieces split at byte 1's offset), the
 * rest is the bytes. Whatever the transcoder accepts must be one minified
 * JSON object jansson reads (flags 0, as the store does) with the kind and
 * apiVersion first, whose metadata gives the name, namespace and
 * resourceVersion it noted, and which the JSON scanner copies byte for byte
 * (when it accepts it at all: it refuses integers of 19 digits). A refusal
 * leaves the output as it was.
 */
#include <string.h>

#include <jansson.h>

#include "client/watch_internal.h"
#include "fuzz.h"
#include "kcr/buf.h"
#include "kcr/meta.h"
#include "kcr/watch.h"
#include "util/jscan.h"
#include "util/pbscan.h"

static void check(const kcr_buf_t *out, const kcr__scan_meta_t *meta) {
  json_error_t jerr;
  json_t *got;
  kcr_buf_t again;
  kcr__scan_meta_t m2;
  FUZZ_CHECK(memchr(out->data, '\0', out->len) == NULL);
  FUZZ_CHECK(strncmp(out->data, "{\"kind\":", 8) == 0);
  got = json_loadb(out->data, out->len, 0, &jerr);
  FUZZ_CHECK(got != NULL);
  FUZZ_CHECK(json_is_string(json_object_get(got, "kind")));
  FUZZ_CHECK(json_is_string(json_object_get(got, "apiVersion")));
  if (json_is_object(json_object_get(got, "metadata"))) {
    FUZZ_CHECK(strcmp(meta->name, kcr_meta_name(got)) == 0);
    FUZZ_CHECK(strcmp(meta->ns, kcr_meta_namespace(got)) == 0);
    FUZZ_CHECK(strcmp(meta->rv, kcr_meta_resource_version(got)) == 0);
    FUZZ_CHECK(json_object_get(json_object_get(got, "metadata"), "managedFields") == NULL);
  }
  kcr_buf_init(&again, (size_t)1 << 22);
  if (kcr__scan_object(out->data, out->len, &again, &m2) == 0) {
    FUZZ_CHECK(again.len == out->len);
    FUZZ_CHECK(memcmp(again.data, out->data, out->len) == 0);
  }
  kcr_buf_free(&again);
  json_decref(got);
}

static int on_event(const kcr_watch_event *ev, void *data) {
  (void)data;
  FUZZ_CHECK(json_is_object(ev->object));
  json_decref(ev->object);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kcr_buf_t out;
  kcr__scan_meta_t meta;
  kcr_error_t err = {0};
  char type[16];
  const unsigned char *in;
  size_t len;
  int rc;

  if (size < 2)
    return 0;
  in = data + 2;
  len = size - 2;
  if (data[0] % 3 == 2) {
    kcr_watch_decoder_t *dec;
    size_t cut = data[1] < len ? data[1] : len;
    if (kcr_watch_decoder_create((size_t)1 << 20, on_event, NULL, &dec, &err) != 0)
      return 0;
    kcr__watch_decoder_set_protobuf(dec);
    rc = kcr_watch_decoder_feed(dec, in, cut, &err);
    if (rc == 0)
      rc = kcr_watch_decoder_feed(dec, in + cut, len - cut, &err);
    if (rc == 0)
      rc = kcr_watch_decoder_finish(dec, &err);
    FUZZ_CHECK(rc <= 0);
    FUZZ_CHECK(rc == 0 || err.message[0] != '\0');
    kcr_watch_decoder_destroy(dec);
    return 0;
  }
  kcr_buf_init(&out, (size_t)1 << 20);
  FUZZ_CHECK(kcr_buf_appends(&out, "x") == 0);
  if (data[0] % 3 == 0)
    rc = kcr__pb_object(in, len, &out, &meta, &err);
  else
    rc = kcr__pb_event(in, len, type, sizeof(type), &out, &meta, &err);
  FUZZ_CHECK(rc == 0 || rc == KCR_EPARSE || rc == KCR_ENOTSUP || rc == KCR_ETOOBIG);
  if (rc == 0) {
    kcr_buf_t obj = {out.data + 1, out.len - 1, 0, 0};
    check(&obj, &meta);
  } else if (rc != KCR_ETOOBIG) {
    FUZZ_CHECK(out.len == 1 && err.message[0] != '\0');
  }
  kcr_buf_free(&out);
  return 0;
}
