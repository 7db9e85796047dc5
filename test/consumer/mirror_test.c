/* SPDX-License-Identifier: MIT */
/*
 * mirror_test: a user's unit test of the configmap-mirror reconciler, built
 * outside the kcr tree against the installed package only: the fake client
 * and the reconcile context of kcr/testing.h, no cluster. Prints "ok".
 */
#include <stdio.h>
#include <string.h>

#include <kcr/kcr.h>
#include <kcr/testing.h>

#include "mirror.h"

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  (void)res;
  return mirror_reconcile(data, kcr_reconcile_client(ctx), ctx, req, kcr_reconcile_err(ctx));
}

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "mirror_test: %s:%d: %s\n", __FILE__, __LINE__, #cond);                      \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main(void) {
  static const kcr_gvk configmap = {"", "v1", "ConfigMap"};
  kcr_reconcile_request req = {"src", "settings"};
  kcr_fake_client_t *f = NULL;
  kcr_objclient c;
  kcr_error_t err = {0};
  mirror_t m = {"src"};
  json_t *copy = NULL;

  CHECK(kcr_fake_client_create(NULL, &f, &err) == 0);
  c = kcr_fake_client_objclient(f);
  CHECK(kcr_fake_client_add_json(f,
                                 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
                                 "{\"name\":\"tgt\",\"labels\":{\"" TARGET_LABEL "\":\"true\"}}}",
                                 &err) == 0);
  CHECK(kcr_fake_client_add_json(
            f,
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
            "{\"namespace\":\"src\",\"name\":\"settings\",\"labels\":{\"" MIRROR_LABEL
            "\":\"true\"}},\"data\":{\"k\":\"v\"}}",
            &err) == 0);
  CHECK(kcr_testing_reconcile(reconcile, &m, &c, &req, NULL, &err, NULL) == 0);
  CHECK(kcr_objclient_get(&c, &configmap, "tgt", "settings", &copy, &err) == 0);
  CHECK(strcmp(json_string_value(json_object_get(json_object_get(copy, "data"), "k")), "v") == 0);
  json_decref(copy);
  kcr_fake_client_destroy(f);
  printf("ok\n");
  return 0;
}
