/* SPDX-License-Identifier: MIT */
/*
 * fuzz_admission.c: the webhook layer's AdmissionReview decoding and answer
 * (src/server/webhook_internal.h) on arbitrary bytes, with a mutating handler
 * that adds, changes and removes fields. Whatever comes in, the answer is an
 * AdmissionReview with a response whose "allowed" is a boolean; a denial has
 * a status code; a patch is base64 of a non-empty JSON array of operations,
 * each with an op and a path that is "" or starts with '/'.
 */
#include <string.h>

#include "fuzz.h"
#include "kcr/base64.h"
#include "server/webhook_internal.h"

static int on_mutate(void *data, const kcr_admission_request *req, kcr_admission_response *resp,
                     kcr_error_t *err) {
  json_t *o = req->object;
  (void)data;
  if (!o)
    return 0;
  if (json_object_get(o, "fail"))
    return kcr_error_set(err, KCR_EINVAL, "asked to fail");
  if (json_object_get(o, "deny"))
    kcr_admission_deny(resp, "denied");
  json_object_set_new(o, "added/~key", json_integer(1));
  json_object_del(o, "remove");
  if (json_is_object(json_object_get(o, "spec")))
    json_object_set_new(json_object_get(o, "spec"), "x", json_string("y"));
  kcr_admission_warn(resp, "w");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *out = kcr__admission_review((const char *)data, size, on_mutate, NULL, 1, "/fuzz");
  json_t *resp, *allowed, *patch;
  if (!out)
    return 0; /* out of memory */
  FUZZ_CHECK(strcmp(json_string_value(json_object_get(out, "kind")), "AdmissionReview") == 0);
  resp = json_object_get(out, "response");
  FUZZ_CHECK(json_is_object(resp));
  FUZZ_CHECK(json_is_string(json_object_get(resp, "uid")));
  allowed = json_object_get(resp, "allowed");
  FUZZ_CHECK(json_is_boolean(allowed));
  if (json_is_false(allowed))
    FUZZ_CHECK(json_integer_value(json_object_get(json_object_get(resp, "status"), "code")) >= 400);
  patch = json_object_get(resp, "patch");
  if (patch) {
    unsigned char *raw = NULL;
    size_t raw_len = 0;
    json_t *ops;
    size_t i;
    json_t *op;
    FUZZ_CHECK(json_is_true(allowed));
    FUZZ_CHECK(kcr_base64_decode(json_string_value(patch), strlen(json_string_value(patch)), &raw,
                                 &raw_len, NULL) == 0);
    ops = json_loadb((const char *)raw, raw_len, 0, NULL);
    free(raw);
    FUZZ_CHECK(json_is_array(ops) && json_array_size(ops) > 0);
    json_array_foreach(ops, i, op) {
      const char *p = json_string_value(json_object_get(op, "path"));
      FUZZ_CHECK(json_is_string(json_object_get(op, "op")));
      FUZZ_CHECK(p && (p[0] == '\0' || p[0] == '/'));
    }
    json_decref(ops);
  }
  json_decref(out);
  return 0;
}
