/* SPDX-License-Identifier: MIT */
/*
 * fuzz_review_answer.c: the secure metrics' reading of TokenReview and
 * SubjectAccessReview answers (src/server/auth_internal.h) on arbitrary bytes,
 * parsed as the client parses an answer. The TokenReview reading says 1 only
 * for status.authenticated true and then gives a JSON object; the
 * SubjectAccessReview built from that user is a SubjectAccessReview whose
 * spec carries the non-resource attributes and only the user's string
 * username (as spec.user); the SubjectAccessReview reading says 1 only for
 * status.allowed true.
 */
#include <string.h>

#include "fuzz.h"
#include "kcr/error.h"
#include "server/auth_internal.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *res = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL), *sar, *spec, *u;
  char *user = NULL, name[256];
  int rc, allowed;
  if (!res)
    return 0; /* the client refuses what does not parse */
  rc = kcr__auth_token_review_user(res, &user);
  FUZZ_CHECK(rc == 0 || rc == 1 || rc == KCR_ENOMEM);
  FUZZ_CHECK(rc == 1 ? user != NULL : user == NULL);
  FUZZ_CHECK(rc != 1 ||
             json_is_true(json_object_get(json_object_get(res, "status"), "authenticated")));
  if (rc == 1) {
    u = json_loads(user, 0, NULL);
    FUZZ_CHECK(json_is_object(u));
    sar = kcr__auth_access_review(user, "get", "/metrics", name, sizeof(name));
    if (sar) {
      spec = json_object_get(sar, "spec");
      FUZZ_CHECK(strcmp(json_string_value(json_object_get(sar, "kind")), "SubjectAccessReview") ==
                 0);
      FUZZ_CHECK(strcmp(json_string_value(json_object_get(
                            json_object_get(spec, "nonResourceAttributes"), "path")),
                        "/metrics") == 0);
      FUZZ_CHECK(json_equal(json_object_get(spec, "user"), json_object_get(u, "username")) ||
                 (!json_object_get(spec, "user") && !json_object_get(u, "username")));
      FUZZ_CHECK(
          !json_is_string(json_object_get(u, "username")) ||
          strncmp(name, json_string_value(json_object_get(u, "username")), sizeof(name) - 1) == 0);
      json_decref(sar);
    }
    json_decref(u);
  }
  kcr__free(user);
  allowed = kcr__auth_access_review_allowed(res);
  FUZZ_CHECK(allowed == (json_is_true(json_object_get(json_object_get(res, "status"), "allowed"))));
  json_decref(res);
  return 0;
}
