/* SPDX-License-Identifier: MIT */
/*
 * fuzz_admission_typed.c: typed webhooks (kcr_webhook_server_register_typed)
 * on arbitrary reviews, decoded as the built-in ConfigMap by its generated
 * codec: byte 0 picks the path (even: the defaulter, which labels the object;
 * odd: the validator, which refuses data key "no" and warns about "old"), the
 * rest is the review. Whatever comes in, the answer is an AdmissionReview
 * whose "allowed" is a boolean; a denial has a code of 400 or more and a
 * message; a patch comes only with an allowed defaulting, is a non-empty
 * array of operations (admission_answer.h), and never removes anything: the defaulter only adds,
 * and what the codec's round trip drops is put back.
 */
#include <string.h>

#include "admission_answer.h"
#include "fuzz.h"
#include "kcr/apierror.h"
#include "kcr/k8s/core_v1.h"
#include "kcr/typed.h"
#include "server/webhook_internal.h"

static const kcr_gvk CM = {"", "v1", "ConfigMap"};

static int has_key(const kcr_core_v1_config_map_t *cm, const char *key) {
  for (size_t i = 0; cm->has_data && i < cm->data_len; i++)
    if (strcmp(cm->data[i].key, key) == 0)
      return 1;
  return 0;
}

static int on_default(void *data, const kcr_admission_request *req, void *obj, kcr_error_t *err) {
  kcr_core_v1_config_map_t *cm = obj;
  (void)data;
  (void)req;
  if (!cm->metadata && kcr_meta_v1_object_meta_create(&cm->metadata, err) != 0)
    return KCR_ENOMEM;
  return kcr_typed_label_set(cm->metadata, "fuzz", "1") == 0
             ? 0
             : kcr_error_set(err, KCR_ENOMEM, "out of memory");
}

static int on_create(void *data, const kcr_admission_request *req, const void *obj,
                     kcr_admission_response *w, kcr_error_t *err) {
  (void)data;
  (void)req;
  if (has_key(obj, "old"))
    kcr_admission_warn(w, "old");
  return has_key(obj, "no") ? kcr_error_set_status(err, 422, "Invalid", "no") : 0;
}

static int on_update(void *data, const kcr_admission_request *req, const void *old_obj,
                     const void *new_obj, kcr_admission_response *w, kcr_error_t *err) {
  (void)old_obj;
  return on_create(data, req, new_obj, w, err);
}

static kcr_webhook_server_t *server(void) {
  static kcr_webhook_server_t *ws;
  static kcr_scheme_t *s;
  kcr_custom_defaulter d = {on_default, NULL};
  kcr_custom_validator v = {on_create, on_update, on_create, NULL};
  kcr_webhook_server_options o = {0};
  if (ws)
    return ws;
  o.bind_address = "127.0.0.1:0";
  FUZZ_CHECK(kcr_scheme_create(&s, NULL) == 0);
  FUZZ_CHECK(kcr_core_v1_config_map_register(s, NULL) == 0);
  FUZZ_CHECK(kcr_webhook_server_create(&o, &ws, NULL) == 0);
  FUZZ_CHECK(kcr_webhook_server_register_typed(ws, s, &CM, &d, &v, NULL) == 0);
  return ws;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int mutate = size == 0 || (data[0] & 1) == 0;
  const char *path = mutate ? "/mutate--v1-configmap" : "/validate--v1-configmap";
  json_t *out;
  if (size == 0)
    return 0;
  out = kcr__webhook_server_review(server(), path, (const char *)data + 1, size - 1);
  if (!out)
    return 0; /* out of memory */
  check_admission_answer(out, mutate, 1);
  json_decref(out);
  return 0;
}
