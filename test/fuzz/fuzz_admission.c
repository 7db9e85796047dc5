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

#include "admission_answer.h"
#include "fuzz.h"
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
  if (!out)
    return 0; /* out of memory */
  check_admission_answer(out, 1, 0);
  json_decref(out);
  return 0;
}
