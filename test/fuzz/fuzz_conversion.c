/* SPDX-License-Identifier: MIT */
/*
 * fuzz_conversion.c: the webhook layer's ConversionReview decoding and answer
 * (src/server/webhook_internal.h) on arbitrary bytes, with a handler that
 * converts (copies, sets apiVersion), fails, or answers the wrong version or
 * kind depending on the object. Whatever comes in, the answer is a
 * ConversionReview with a response holding a string uid, a convertedObjects
 * array and result.status "Success" or "Failure"; a Failure has a message and
 * no objects; a Success holds one object per request object, in order, each
 * at the desired apiVersion with the request object's kind.
 */
#include <string.h>

#include "fuzz.h"
#include "server/webhook_internal.h"

static int on_convert(void *data, json_t *o, const char *desired, json_t **out, kcr_error_t *err) {
  json_t *c;
  (void)data;
  *out = NULL;
  if (json_object_get(o, "fail"))
    return kcr_error_set(err, KCR_EINVAL, "asked to fail");
  if (json_object_get(o, "none"))
    return 0;
  if (!(c = json_deep_copy(o)))
    return KCR_ENOMEM;
  json_object_set_new(c, "apiVersion", json_string(json_object_get(o, "wrong") ? "x/y" : desired));
  if (json_object_get(o, "rekind"))
    json_object_set_new(c, "kind", json_string("Other"));
  *out = c;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *out = kcr__conversion_review((const char *)data, size, on_convert, NULL, "/fuzz");
  json_t *in, *resp, *conv, *result, *objs, *o;
  const char *st, *desired;
  size_t i;
  if (!out)
    return 0; /* out of memory */
  FUZZ_CHECK(strcmp(json_string_value(json_object_get(out, "kind")), "ConversionReview") == 0);
  resp = json_object_get(out, "response");
  FUZZ_CHECK(json_is_object(resp));
  FUZZ_CHECK(json_is_string(json_object_get(resp, "uid")));
  conv = json_object_get(resp, "convertedObjects");
  FUZZ_CHECK(json_is_array(conv));
  result = json_object_get(resp, "result");
  st = json_string_value(json_object_get(result, "status"));
  FUZZ_CHECK(st && (strcmp(st, "Success") == 0 || strcmp(st, "Failure") == 0));
  if (strcmp(st, "Failure") == 0) {
    FUZZ_CHECK(json_is_string(json_object_get(result, "message")));
    FUZZ_CHECK(json_array_size(conv) == 0);
    json_decref(out);
    return 0;
  }
  /* Success: the request parsed, so compare with it. */
  in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  FUZZ_CHECK(in);
  objs = json_object_get(json_object_get(in, "request"), "objects");
  desired = json_string_value(json_object_get(json_object_get(in, "request"), "desiredAPIVersion"));
  FUZZ_CHECK(desired && json_array_size(objs) == json_array_size(conv));
  json_array_foreach(conv, i, o) {
    json_t *src = json_array_get(objs, i);
    FUZZ_CHECK(strcmp(json_string_value(json_object_get(o, "apiVersion")), desired) == 0);
    FUZZ_CHECK(json_equal(json_object_get(o, "kind"), json_object_get(src, "kind")));
  }
  json_decref(in);
  json_decref(out);
  return 0;
}
