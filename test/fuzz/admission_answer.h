/* SPDX-License-Identifier: MIT */
/*
 * admission_answer.h: the oracle the admission fuzz targets share (fuzz_admission,
 * fuzz_admission_typed): what every AdmissionReview answer must look like.
 */
#ifndef KCR_FUZZ_ADMISSION_ANSWER_H
#define KCR_FUZZ_ADMISSION_ANSWER_H

#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "kcr/base64.h"

/*
 * check_admission_answer checks out (borrowed): an AdmissionReview whose
 * response has a string uid and a boolean allowed; a denial has a code of 400
 * or more and a message; a patch comes only when allowed (and may_patch), and
 * is base64 of a non-empty array of operations, each with an op (never
 * "remove" when no_remove) and a path that is "" or starts with '/'.
 */
static inline void check_admission_answer(json_t *out, int may_patch, int no_remove) {
  json_t *resp = json_object_get(out, "response"), *allowed, *patch;
  FUZZ_CHECK(strcmp(json_string_value(json_object_get(out, "kind")), "AdmissionReview") == 0);
  FUZZ_CHECK(json_is_object(resp));
  FUZZ_CHECK(json_is_string(json_object_get(resp, "uid")));
  allowed = json_object_get(resp, "allowed");
  FUZZ_CHECK(json_is_boolean(allowed));
  if (json_is_false(allowed)) {
    json_t *st = json_object_get(resp, "status");
    FUZZ_CHECK(json_integer_value(json_object_get(st, "code")) >= 400);
    FUZZ_CHECK(json_is_string(json_object_get(st, "message")));
  }
  patch = json_object_get(resp, "patch");
  if (patch) {
    unsigned char *raw = NULL;
    size_t raw_len = 0, i;
    json_t *ops, *op;
    FUZZ_CHECK(may_patch && json_is_true(allowed));
    FUZZ_CHECK(kcr_base64_decode(json_string_value(patch), strlen(json_string_value(patch)), &raw,
                                 &raw_len, NULL) == 0);
    ops = json_loadb((const char *)raw, raw_len, 0, NULL);
    free(raw);
    FUZZ_CHECK(json_is_array(ops) && json_array_size(ops) > 0);
    json_array_foreach(ops, i, op) {
      const char *p = json_string_value(json_object_get(op, "path"));
      const char *o = json_string_value(json_object_get(op, "op"));
      FUZZ_CHECK(o && (!no_remove || strcmp(o, "remove") != 0));
      FUZZ_CHECK(p && (p[0] == '\0' || p[0] == '/'));
    }
    json_decref(ops);
  }
}

#endif /* KCR_FUZZ_ADMISSION_ANSWER_H */
