/* SPDX-License-Identifier: MIT */
/*
 * fuzz_exec.c: the ExecCredential decoder (kcr__exec_parse) on arbitrary plugin
 * output. Byte 0 picks the configured apiVersion (even: v1, odd: v1beta1); the
 * rest is the plugin's stdout. A refusal is KCR_EAUTH (or KCR_ENOMEM) with the
 * result zeroed and a message that never quotes the output (seeds plant
 * SEKRET markers in every field); what decodes has a token or a certificate and
 * key together, equal to what jansson reads from the same status.
 */
#include <string.h>

#include "config/config_internal.h"
#include "fuzz.h"

static const char *str_member(json_t *status, const char *key) {
  const char *s = json_string_value(json_object_get(status, key));
  return s && *s ? s : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char command[] = "/usr/libexec/kcr-fuzz-plugin";
  static char v1[] = "client.authentication.k8s.io/v1";
  static char v1beta1[] = "client.authentication.k8s.io/v1beta1";
  kcr__exec_spec_t spec = {0};
  kcr__exec_result_t res;
  kcr_error_t err;
  json_t *root, *status;
  const char *out;
  size_t len;
  int rc;

  if (size < 1)
    return 0;
  spec.command = command;
  spec.api_version = data[0] % 2 ? v1beta1 : v1;
  out = (const char *)data + 1;
  len = size - 1;
  kcr_error_clear(&err);
  rc = kcr__exec_parse(&spec, out, len, &res, &err);
  if (rc != 0) {
    FUZZ_CHECK(rc == KCR_EAUTH || rc == KCR_ENOMEM);
    FUZZ_CHECK(err.code == rc && memchr(err.message, '\0', sizeof(err.message)) != NULL);
    FUZZ_CHECK(!res.token && !res.cert && !res.key && res.cert_len == 0 && res.key_len == 0);
    FUZZ_CHECK(res.expiry.sec == 0 && res.expiry.nsec == 0);
    FUZZ_CHECK(strstr(err.message, "SEKRET") == NULL);
    return 0;
  }
  FUZZ_CHECK(res.token || (res.cert && res.key));
  FUZZ_CHECK(!res.cert == !res.key);
  root = json_loadb(out, len, 0, NULL);
  FUZZ_CHECK(root != NULL);
  FUZZ_CHECK(strcmp(json_string_value(json_object_get(root, "apiVersion")), spec.api_version) == 0);
  status = json_object_get(root, "status");
  FUZZ_CHECK(json_is_object(status));
  if (res.token)
    FUZZ_CHECK(str_member(status, "token") && strcmp(res.token, str_member(status, "token")) == 0);
  else
    FUZZ_CHECK(str_member(status, "token") == NULL);
  if (res.cert) {
    const char *c = str_member(status, "clientCertificateData");
    const char *k = str_member(status, "clientKeyData");
    FUZZ_CHECK(c && res.cert_len == strlen(c) && memcmp(res.cert, c, res.cert_len) == 0);
    FUZZ_CHECK(k && res.key_len == strlen(k) && memcmp(res.key, k, res.key_len) == 0);
  }
  json_decref(root);
  kcr__exec_result_free(&res);
  return 0;
}
