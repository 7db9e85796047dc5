/* SPDX-License-Identifier: MIT */
/*
 * jscan.h: the scanner that minifies an object's JSON bytes, without
 * managedFields and without building a jansson tree, and notes its metadata.
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
 * The scanner knows nothing of what its output becomes: the cache makes its
 * stored form from it (cache/cobj.h), the client scans write answers with it.
 */
#ifndef KCR_UTIL_JSCAN_H
#define KCR_UTIL_JSCAN_H

#include <stdbool.h>
#include <stddef.h>

#include "kcr/buf.h"
#include "kcr/error.h"

/* KCR__SCAN_KEY_MAX is the size of the name and namespace buffers, and the
 * longest "namespace/name" key plus its NUL the scanner accepts: kcr/meta.h's
 * KCR_META_KEY_MAX, which util cannot include (the cache checks they agree). */
#define KCR__SCAN_KEY_MAX 512

/* KCR__SCAN_RV_MAX is the size of the buffer for a resourceVersion. */
#define KCR__SCAN_RV_MAX 64

/*
 * kcr__scan_meta_t: what kcr__scan_object found in the object's (last)
 * metadata: name, namespace and resourceVersion, each "" when absent or not a
 * string (kcr_meta_name and friends).
 */
typedef struct kcr__scan_meta {
  char name[KCR__SCAN_KEY_MAX];
  char ns[KCR__SCAN_KEY_MAX];
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

#endif /* KCR_UTIL_JSCAN_H */
