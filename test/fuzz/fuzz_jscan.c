/* SPDX-License-Identifier: MIT */
/*
 * fuzz_jscan.c: the compact scanner against jansson. Input: byte 0 picks the
 * entry (even: kcr__scan_object, odd: kcr__scan_event), the rest is the text.
 * The oracle is jansson itself: whatever the scanner accepts, json_loadb must
 * accept too, and parsing the scanner's output must give jansson's tree of the
 * input with metadata.managedFields deleted (for an event: its "object"), with
 * the name, namespace and resourceVersion kcr_meta reads from that tree, and
 * it must be minified: no white space outside strings. A refusal is always
 * allowed (the caller falls back to jansson).
 */
#include <string.h>

#include <jansson.h>

#include "cache/cobj.h"
#include "fuzz.h"
#include "kcr/buf.h"
#include "kcr/meta.h"
#include "util/jscan.h"

/* minified: no white space outside the strings of a valid JSON text. */
static int minified(const kcr_buf_t *out) {
  int in_string = 0;
  for (size_t i = 0; i < out->len; i++) {
    char c = out->data[i];
    if (in_string) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_string = 0;
    } else if (c == '"') {
      in_string = 1;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      return 0;
    }
  }
  return 1;
}

static void check_object(json_t *want, const kcr_buf_t *out, const kcr__scan_meta_t *meta) {
  json_error_t jerr;
  json_t *got, *md;
  FUZZ_CHECK(json_is_object(want));
  md = json_object_get(want, "metadata");
  if (json_is_object(md))
    json_object_del(md, "managedFields");
  FUZZ_CHECK(memchr(out->data, '\0', out->len) == NULL);
  FUZZ_CHECK(minified(out));
  got = json_loadb(out->data, out->len, 0, &jerr);
  FUZZ_CHECK(got != NULL);
  FUZZ_CHECK(json_equal(got, want));
  FUZZ_CHECK(strcmp(meta->name, kcr_meta_name(want)) == 0);
  FUZZ_CHECK(strcmp(meta->ns, kcr_meta_namespace(want)) == 0);
  FUZZ_CHECK(strcmp(meta->rv, kcr_meta_resource_version(want)) == 0);
  FUZZ_CHECK(meta->has_kind == (json_object_get(want, "kind") != NULL));
  FUZZ_CHECK(meta->has_api_version == (json_object_get(want, "apiVersion") != NULL));
  json_decref(got);
}

/* check_parse_meta: the compact object made from the output gives, parsed
 * for metadata alone, exactly the whole tree's apiVersion, kind and metadata. */
static void check_parse_meta(kcr_buf_t *out, const kcr__scan_meta_t *meta) {
  kcr__cobj_t *c = NULL;
  json_t *whole = NULL, *part = NULL, *want, *v;
  const char *key;
  if (kcr__cobj_from_buf(out, 0, meta, &c) != 0)
    return; /* out of memory or past the bound: out is gone */
  FUZZ_CHECK(kcr__cobj_parse(c, &whole) == 0);
  FUZZ_CHECK(kcr__cobj_parse_meta(c, &part) == 0);
  want = json_object();
  json_object_foreach(whole, key, v) {
    if (strcmp(key, "metadata") == 0 || strcmp(key, "kind") == 0 || strcmp(key, "apiVersion") == 0)
      json_object_set(want, key, v);
  }
  FUZZ_CHECK(json_equal(part, want));
  json_decref(want);
  json_decref(part);
  json_decref(whole);
  kcr__cobj_unref(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kcr_buf_t out;
  kcr__scan_meta_t meta;
  json_error_t jerr;
  char type[16];
  const char *text;
  size_t len;
  int rc;

  if (size < 1)
    return 0;
  text = (const char *)data + 1;
  len = size - 1;
  kcr_buf_init(&out, (size_t)1 << 20);
  if (data[0] % 2 == 0)
    rc = kcr__scan_object(text, len, &out, &meta);
  else
    rc = kcr__scan_event(text, len, type, sizeof(type), &out, &meta);
  FUZZ_CHECK(rc == 0 || rc == KCR_EPARSE || rc == KCR_ETOOBIG);
  if (rc == 0) {
    json_t *root = json_loadb(text, len, 0, &jerr);
    FUZZ_CHECK(root != NULL);
    if (data[0] % 2 == 0) {
      check_object(root, &out, &meta);
    } else {
      json_t *t = json_object_get(root, "type");
      FUZZ_CHECK(json_is_string(t) && strcmp(json_string_value(t), type) == 0);
      check_object(json_object_get(root, "object"), &out, &meta);
    }
    json_decref(root);
    check_parse_meta(&out, &meta);
  } else if (rc == KCR_EPARSE) {
    FUZZ_CHECK(out.len == 0);
  }
  kcr_buf_free(&out);
  return 0;
}
