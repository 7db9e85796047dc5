/* SPDX-License-Identifier: MIT */
/*
 * jscan.h: the scanner that takes an object's JSON bytes to its stored form
 * without building a jansson tree, and that stored form, the compact object.
 *
 * The scanner is conservative by contract: when it accepts a text, jansson
 * (json_loadb, flags 0) accepts it too and parsing the scanner's output gives
 * the tree jansson would give with metadata.managedFields deleted. When it
 * refuses (KCR_EPARSE), the text may still be valid JSON that it does not
 * handle (escapes in keys, integers of 19 digits or more, exponents, deep
 * nesting): callers then take jansson's path, which reports real errors the
 * way it always did. test/fuzz/fuzz_jscan.c checks the contract against
 * jansson.
 *
 * A compact object (cobj) is a jansson string whose bytes are
 *   json NUL resourceVersion NUL namespace NUL name
 * (json is the object's minified text, which never holds a NUL). It travels in
 * the json_t slots of the DeltaFIFO and is what the store keeps, so one
 * allocation goes from the watch line to the cache.
 */
#ifndef KCR_UTIL_JSCAN_H
#define KCR_UTIL_JSCAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kcr/buf.h"
#include "kcr/error.h"
#include "kcr/meta.h"

/* KCR__SCAN_RV_MAX is the size of the buffer for a resourceVersion. */
#define KCR__SCAN_RV_MAX 64

/*
 * kcr__scan_meta_t: what kcr__scan_object found in the object's (last)
 * metadata: name, namespace and resourceVersion, each "" when absent or not a
 * string (kcr_meta_name and friends).
 */
typedef struct kcr__scan_meta {
  char name[KCR_META_KEY_MAX];
  char ns[KCR_META_KEY_MAX];
  char rv[KCR__SCAN_RV_MAX];
  bool has_kind;        /* a top-level "kind" member */
  bool has_api_version; /* a top-level "apiVersion" member */
} kcr__scan_meta_t;

/*
 * kcr__scan_object scans in[0, len), which must be one JSON object with
 * optional white space around it, and appends its minified text without
 * metadata.managedFields to out (nothing is appended on failure: out keeps its
 * length). Returns 0, KCR_EPARSE (not handled: see above; out keeps its
 * length), KCR_ETOOBIG (out's bound) or KCR_ENOMEM (after these two out has been
 * freed, kcr_buf's rule). Any thread; no allocation but out's.
 */
int kcr__scan_object(const char *in, size_t len, kcr_buf_t *out, kcr__scan_meta_t *meta);

/*
 * kcr__scan_event scans one watch line {"type":T,"object":{...}} (members in
 * any order, others allowed and checked): T unescaped into type (size bytes,
 * "" if missing or not a plain string), the object as kcr__scan_object does.
 * Returns 0 when both were found; KCR_EPARSE otherwise; KCR_ETOOBIG,
 * KCR_ENOMEM.
 */
int kcr__scan_event(const char *in, size_t len, char *type, size_t size, kcr_buf_t *out,
                    kcr__scan_meta_t *meta);

/*
 * kcr__cobj_from_buf makes a new compact object in *out from the text at
 * b[base, len) (as kcr__scan_object appended it), rv, ns and name, then
 * truncates b back to base. Returns 0, or KCR_ENOMEM / KCR_ETOOBIG (b freed).
 */
int kcr__cobj_from_buf(kcr_buf_t *b, size_t base, const char *rv, const char *ns, const char *name,
                       json_t **out);

/*
 * kcr__cobj_from_tree dumps obj (borrowed) compactly into a new compact object
 * in *out, with obj's resourceVersion, namespace and name ("" when absent).
 * scratch is the caller's buffer, kept between calls; its bound is the
 * object's. Returns 0, KCR_ETOOBIG or KCR_ENOMEM.
 */
int kcr__cobj_from_tree(const json_t *obj, kcr_buf_t *scratch, json_t **out);

/* kcr__cobj_is tells whether v is a compact object (a string) rather than a tree. */
static inline bool kcr__cobj_is(const json_t *v) {
  return json_is_string(v);
}

/* kcr__cobj_json returns the object's text (borrowed) and its length in *len. */
const char *kcr__cobj_json(const json_t *c, size_t *len);

/* kcr__cobj_rv returns the object's resourceVersion (borrowed, "" if none). */
const char *kcr__cobj_rv(const json_t *c);

/* kcr__cobj_ns and kcr__cobj_name return metadata.namespace and .name (borrowed, "" if none). */
const char *kcr__cobj_ns(const json_t *c);
const char *kcr__cobj_name(const json_t *c);

/* kcr__cobj_parse parses the object's text into a new tree. Returns 0 or KCR_ENOMEM. */
int kcr__cobj_parse(const json_t *c, json_t **out);

#endif /* KCR_UTIL_JSCAN_H */
