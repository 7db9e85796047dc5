/* SPDX-License-Identifier: MIT */
/*
 * fuzz_kcr_gen.c: the decoders kcr-gen generates (docs/kcr-gen.md), over the
 * App's types and the built-in kinds'. Input: byte 0 picks the kind (App,
 * Deployment, Service, ConfigMap, Pod), the rest is JSON. What does not parse
 * as JSON is skipped. A value the decoder refuses leaves *out NULL with a
 * message that names where. A value it accepts must encode; the encoding must
 * decode again to an equal value (T_equal), whose encoding is the same JSON:
 * one round trip reaches the fixed point (nulls the server would prune, and
 * whole numbers written as 3.0, are normalised by the first). A copy equals
 * its original.
 */
#include <string.h>

#include <jansson.h>

#include "app_v1alpha1.h"
#include "app_v1beta1.h"
#include "fuzz.h"
#include "kcr/k8s/apps_v1.h"
#include "kcr/k8s/core_v1.h"

typedef struct kind {
  int (*dec)(const json_t *, void **, kcr_error_t *, void *);
  int (*enc)(const void *, json_t **, kcr_error_t *, void *);
  void (*fr)(void *, void *);
} kind;

/* The typed equal and copy of each kind, through void pointers. */
static bool eq_app(const void *a, const void *b) {
  return app_v1alpha1_equal(a, b);
}
static bool eq_dep(const void *a, const void *b) {
  return kcr_apps_v1_deployment_equal(a, b);
}
static bool eq_svc(const void *a, const void *b) {
  return kcr_core_v1_service_equal(a, b);
}
static bool eq_cm(const void *a, const void *b) {
  return kcr_core_v1_config_map_equal(a, b);
}
static bool eq_pod(const void *a, const void *b) {
  return kcr_core_v1_pod_equal(a, b);
}
static bool eq_beta(const void *a, const void *b) {
  return app_v1beta1_equal(a, b);
}
static int cp_beta(const void *v, void **out) {
  return app_v1beta1_copy(v, (app_v1beta1_t **)out, NULL);
}
static int cp_app(const void *v, void **out) {
  return app_v1alpha1_copy(v, (app_v1alpha1_t **)out, NULL);
}
static int cp_dep(const void *v, void **out) {
  return kcr_apps_v1_deployment_copy(v, (kcr_apps_v1_deployment_t **)out, NULL);
}
static int cp_svc(const void *v, void **out) {
  return kcr_core_v1_service_copy(v, (kcr_core_v1_service_t **)out, NULL);
}
static int cp_cm(const void *v, void **out) {
  return kcr_core_v1_config_map_copy(v, (kcr_core_v1_config_map_t **)out, NULL);
}
static int cp_pod(const void *v, void **out) {
  return kcr_core_v1_pod_copy(v, (kcr_core_v1_pod_t **)out, NULL);
}

static const struct {
  kind k;
  bool (*eq)(const void *, const void *);
  int (*cp)(const void *, void **);
} kinds[] = {
    {{app_v1alpha1_scheme_decode, app_v1alpha1_scheme_encode, app_v1alpha1_scheme_free},
     eq_app,
     cp_app},
    {{kcr_apps_v1_deployment_scheme_decode, kcr_apps_v1_deployment_scheme_encode,
      kcr_apps_v1_deployment_scheme_free},
     eq_dep,
     cp_dep},
    {{kcr_core_v1_service_scheme_decode, kcr_core_v1_service_scheme_encode,
      kcr_core_v1_service_scheme_free},
     eq_svc,
     cp_svc},
    {{kcr_core_v1_config_map_scheme_decode, kcr_core_v1_config_map_scheme_encode,
      kcr_core_v1_config_map_scheme_free},
     eq_cm,
     cp_cm},
    {{kcr_core_v1_pod_scheme_decode, kcr_core_v1_pod_scheme_encode, kcr_core_v1_pod_scheme_free},
     eq_pod,
     cp_pod},
    {{app_v1beta1_scheme_decode, app_v1beta1_scheme_encode, app_v1beta1_scheme_free},
     eq_beta,
     cp_beta},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *in, *out1 = NULL, *out2 = NULL;
  void *v1 = NULL, *v2 = NULL, *c = NULL;
  kcr_error_t err;
  size_t which;
  char *s1, *s2;
  int rc;
  if (size < 1)
    return 0;
  which = data[0] % (sizeof(kinds) / sizeof(kinds[0]));
  if (!(in = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)))
    return 0;
  kcr_error_clear(&err);
  v1 = (void *)1;
  rc = kinds[which].k.dec(in, &v1, &err, NULL);
  json_decref(in);
  if (rc != 0) {
    FUZZ_CHECK(rc == KCR_EPARSE);
    FUZZ_CHECK(v1 == NULL);
    FUZZ_CHECK(memchr(err.message, '\0', sizeof(err.message)) != NULL && err.message[0]);
    return 0;
  }
  FUZZ_CHECK(kinds[which].k.enc(v1, &out1, &err, NULL) == 0);
  FUZZ_CHECK(kinds[which].k.dec(out1, &v2, &err, NULL) == 0);
  FUZZ_CHECK(kinds[which].eq(v1, v2));
  FUZZ_CHECK(kinds[which].k.enc(v2, &out2, &err, NULL) == 0);
  s1 = json_dumps(out1, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
  s2 = json_dumps(out2, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
  FUZZ_CHECK(s1 && s2 && strcmp(s1, s2) == 0);
  free(s1);
  free(s2);
  FUZZ_CHECK(kinds[which].cp(v1, &c) == 0);
  FUZZ_CHECK(kinds[which].eq(v1, c));
  kinds[which].k.fr(c, NULL);
  kinds[which].k.fr(v2, NULL);
  kinds[which].k.fr(v1, NULL);
  json_decref(out1);
  json_decref(out2);
  return 0;
}
