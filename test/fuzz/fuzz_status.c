/* SPDX-License-Identifier: MIT */
/*
 * fuzz_status.c: an error response's body turned into a kcr_error_t. Input: byte
 * 0 picks the HTTP status, byte 1 the content type, verb and Retry-After header;
 * the rest is the body. Every result must be an API error (or success for 2xx)
 * whose text fields are NUL-terminated, valid UTF-8, and whose predicates agree
 * with the reason and status. The body is also given to kcr__error_from_status
 * when it is JSON, as a watch ERROR event's object would be.
 */
#include <string.h>

#include <jansson.h>

#include "client/apierror_internal.h"
#include "fuzz.h"
#include "kcr/apierror.h"

static const long statuses[] = {200, 201, 206, 101, 302, 400, 401, 403, 404, 405, 406, 409,
                                410, 415, 418, 422, 429, 500, 502, 503, 504, 0,   999, -1};
static const char *const content_types[] = {NULL,
                                            "application/json",
                                            "text/html; charset=utf-8",
                                            "text/plain",
                                            "application/vnd.kubernetes.protobuf",
                                            "",
                                            " Application/JSON ; charset=utf-8",
                                            "text/"};
static const char *const verbs[] = {"GET", "POST", "PUT", NULL};
static const char *const retry_afters[] = {NULL, "1", "abc", "99999999999"};

/* utf8_ok checks that s is valid UTF-8 (jansson's json_string refuses anything else). */
static int utf8_ok(const char *s) {
  json_t *j = json_string(s);
  int ok = j != NULL;
  json_decref(j);
  return ok;
}

static void check_text(const kcr_error_t *err) {
  FUZZ_CHECK(memchr(err->reason, '\0', sizeof(err->reason)) != NULL);
  FUZZ_CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL);
  FUZZ_CHECK(memchr(err->causes, '\0', sizeof(err->causes)) != NULL);
  FUZZ_CHECK(utf8_ok(err->reason) && utf8_ok(err->message) && utf8_ok(err->causes));
  FUZZ_CHECK(err->retry_after_seconds >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kcr__error_response_t r = {0};
  kcr_error_t err;
  json_t *j;
  int rc;

  if (size < 2)
    return 0;
  r.http_status = statuses[data[0] % (sizeof(statuses) / sizeof(statuses[0]))];
  r.content_type = content_types[data[1] & 7];
  r.verb = verbs[(data[1] >> 3) & 3];
  r.retry_after = retry_afters[(data[1] >> 5) & 3];
  r.resource = data[1] & 0x80 ? "configmaps" : NULL;
  r.group = "";
  r.name = "foo";

  kcr_error_clear(&err);
  rc = kcr__error_from_response(&err, &r, (const char *)data + 2, size - 2);
  if (r.http_status >= 200 && r.http_status <= 206) {
    FUZZ_CHECK(rc == 0 && err.code == KCR_OK);
  } else {
    FUZZ_CHECK(rc == KCR_EAPI && err.code == KCR_EAPI);
    FUZZ_CHECK(err.http_status >= 0 && err.http_status <= 999);
    FUZZ_CHECK(err.message[0] != '\0');
    check_text(&err);
    FUZZ_CHECK(!kcr_error_is_not_found(&err) || strcmp(err.reason, "NotFound") == 0 ||
               err.http_status == 404);
    FUZZ_CHECK(!kcr_error_is_gone(&err) || strcmp(err.reason, "Gone") == 0 ||
               strcmp(err.reason, "Expired") == 0 || err.http_status == 410);
  }

  j = json_loadb((const char *)data + 2, size - 2, JSON_DECODE_ANY, NULL);
  if (j) {
    kcr_error_clear(&err);
    rc = kcr__error_from_status(&err, j, r.http_status);
    FUZZ_CHECK(rc == KCR_EAPI || rc == KCR_EPROTO);
    FUZZ_CHECK(err.code == rc);
    check_text(&err);
    json_decref(j);
  }
  return 0;
}
