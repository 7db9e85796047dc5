/* SPDX-License-Identifier: MIT */
/*
 * test_apierror.c: metav1.Status bodies as real API servers send them, and what is
 * synthesized when a body is not a Status; the apierror.h predicates; Retry-After;
 * allocation failure while parsing.
 */
#include <limits.h>
#include <string.h>

#include <jansson.h>

#include "client/apierror_internal.h"
#include "kcr/apierror.h"
#include "testutil.h"

static const char body_404[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"configmaps \\\"x\\\" not "
    "found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},"
    "\"code\":404}\n";

static const char body_409_conflict[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"Operation cannot be fulfilled on configmaps \\\"app-config\\\": the object has "
    "been modified; please apply your changes to the latest version and try "
    "again\",\"reason\":\"Conflict\",\"details\":{\"name\":\"app-config\",\"kind\":"
    "\"configmaps\"},\"code\":409}\n";

static const char body_409_exists[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"configmaps \\\"app-config\\\" already "
    "exists\",\"reason\":\"AlreadyExists\",\"details\":{\"name\":\"app-config\",\"kind\":"
    "\"configmaps\"},\"code\":409}\n";

static const char body_422[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"ConfigMap \\\"Bad_Name\\\" is invalid: [metadata.name: Invalid value: "
    "\\\"Bad_Name\\\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character, data[a b]: "
    "Invalid value: \\\"a b\\\": a valid config key must consist of alphanumeric characters, "
    "'-', '_' or '.']\",\"reason\":\"Invalid\",\"details\":{\"name\":\"Bad_Name\",\"kind\":"
    "\"ConfigMap\",\"causes\":[{\"reason\":\"FieldValueInvalid\",\"message\":\"Invalid value: "
    "\\\"Bad_Name\\\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric "
    "character\",\"field\":\"metadata.name\"},{\"reason\":\"FieldValueInvalid\",\"message\":"
    "\"Invalid value: \\\"a b\\\": a valid config key must consist of alphanumeric characters, "
    "'-', '_' or '.'\",\"field\":\"data[a b]\"}]},\"code\":422}\n";

static const char body_429[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"Too many requests, please try again "
    "later.\",\"reason\":\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":7},\"code\":429}"
    "\n";

static const char body_410[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"The provided continue parameter is too old to display a consistent list "
    "result. You can start a new list without the continue parameter, or use the continue token "
    "in this response to retrieve the remainder of the "
    "results.\",\"reason\":\"Expired\",\"code\":410}\n";

static const char body_403[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"configmaps is forbidden: User \\\"system:anonymous\\\" cannot list resource "
    "\\\"configmaps\\\" in API group \\\"\\\" in the namespace "
    "\\\"default\\\"\",\"reason\":\"Forbidden\",\"details\":{\"kind\":\"configmaps\"},\"code\":"
    "403}\n";

static const char body_401[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                               "\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":"
                               "\"Unauthorized\",\"code\":401}\n";

static const char body_500_html[] =
    "<html>\r\n<head><title>500 Internal Server Error</title></head>\r\n<body>\r\n"
    "<center><h1>500 Internal Server Error</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n";

/* from parses body as the response to GET configmaps foo. */
static int from(kcr_error_t *err, long status, const char *ctype, const char *body, size_t len) {
  kcr__error_response_t r = {status, ctype, NULL, "GET", "", "configmaps", "foo"};
  kcr_error_clear(err);
  return kcr__error_from_response(err, &r, body, len);
}

#define FROM(err, status, body) from(err, status, "application/json", body, strlen(body))

static void test_apierror_not_found(void **state) {
  kcr_error_t err;
  (void)state;
  assert_int_equal(FROM(&err, 404, body_404), KCR_EAPI);
  assert_int_equal(err.code, KCR_EAPI);
  assert_int_equal(err.http_status, 404);
  assert_string_equal(err.reason, "NotFound");
  assert_string_equal(err.message, "configmaps \"x\" not found");
  assert_string_equal(err.causes, "");
  assert_int_equal(err.retry_after_seconds, 0);
  assert_true(kcr_error_is_not_found(&err));
  assert_false(kcr_error_is_conflict(&err));
  assert_false(kcr_error_is_gone(&err));
}

static void test_apierror_conflict_and_already_exists(void **state) {
  kcr_error_t err;
  (void)state;
  assert_int_equal(FROM(&err, 409, body_409_conflict), KCR_EAPI);
  assert_string_equal(err.reason, "Conflict");
  assert_non_null(strstr(err.message, "the object has been modified"));
  assert_true(kcr_error_is_conflict(&err));
  assert_false(kcr_error_is_already_exists(&err));

  assert_int_equal(FROM(&err, 409, body_409_exists), KCR_EAPI);
  assert_string_equal(err.message, "configmaps \"app-config\" already exists");
  assert_true(kcr_error_is_already_exists(&err));
  /* a known reason other than Conflict: the 409 alone does not make it a conflict */
  assert_false(kcr_error_is_conflict(&err));
}

static void test_apierror_invalid_with_causes(void **state) {
  kcr_error_t err;
  (void)state;
  assert_int_equal(FROM(&err, 422, body_422), KCR_EAPI);
  assert_int_equal(err.http_status, 422);
  assert_string_equal(err.reason, "Invalid");
  assert_true(kcr_error_is_invalid(&err));
  assert_string_equal(err.causes,
                      "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain "
                      "must consist of lower case alphanumeric characters, '-' or '.', and must "
                      "start and end with an alphanumeric character; data[a b]: Invalid value: "
                      "\"a b\": a valid config key must consist of alphanumeric characters, '-', "
                      "'_' or '.'");
}

static void test_apierror_too_many_requests_retry_after(void **state) {
  kcr_error_t err;
  kcr__error_response_t r = {429, "application/json", "3", "GET", NULL, "pods", NULL};
  (void)state;
  kcr_error_clear(&err);
  /* details.retryAfterSeconds wins over the header */
  assert_int_equal(kcr__error_from_response(&err, &r, body_429, strlen(body_429)), KCR_EAPI);
  assert_int_equal(err.retry_after_seconds, 7);
  assert_true(kcr_error_is_too_many_requests(&err));
  /* with no details, the header */
  kcr_error_clear(&err);
  assert_int_equal(kcr__error_from_response(&err, &r, body_401, strlen(body_401)), KCR_EAPI);
  assert_int_equal(err.retry_after_seconds, 3);
  /* a bare 429 */
  kcr_error_clear(&err);
  r.retry_after = "12";
  assert_int_equal(kcr__error_from_response(&err, &r, NULL, 0), KCR_EAPI);
  assert_string_equal(err.reason, "TooManyRequests");
  assert_int_equal(err.retry_after_seconds, 12);
  assert_string_equal(err.message, "the server has received too many requests and has asked us "
                                   "to try again later (get pods)");
}

static void test_apierror_expired_is_gone(void **state) {
  kcr_error_t err;
  (void)state;
  assert_int_equal(FROM(&err, 410, body_410), KCR_EAPI);
  assert_string_equal(err.reason, "Expired");
  assert_int_equal(err.http_status, 410);
  assert_true(kcr_error_is_gone(&err));
  assert_false(kcr_error_is_not_found(&err));
  /* a bare 410: no reason, but still gone */
  assert_int_equal(from(&err, 410, NULL, NULL, 0), KCR_EAPI);
  assert_string_equal(err.reason, "");
  assert_true(kcr_error_is_gone(&err));
  assert_string_equal(err.message, "the server responded with the status code 410 but did not "
                                   "return more information (get configmaps foo)");
}

static void test_apierror_forbidden_and_unauthorized(void **state) {
  kcr_error_t err;
  (void)state;
  assert_int_equal(FROM(&err, 403, body_403), KCR_EAPI);
  assert_true(kcr_error_is_forbidden(&err));
  assert_non_null(strstr(err.message, "system:anonymous"));
  assert_int_equal(FROM(&err, 401, body_401), KCR_EAPI);
  assert_true(kcr_error_is_unauthorized(&err));
  assert_string_equal(err.message, "Unauthorized");
  /* a plain-text 403 keeps the server's words, as client-go does */
  assert_int_equal(from(&err, 403, "text/plain; charset=utf-8", "no way\n", 7), KCR_EAPI);
  assert_string_equal(err.message, "no way (get configmaps foo)");
  assert_true(kcr_error_is_forbidden(&err));
}

static void test_apierror_html_500(void **state) {
  kcr_error_t err;
  (void)state;
  assert_int_equal(from(&err, 500, "text/html", body_500_html, strlen(body_500_html)), KCR_EAPI);
  assert_int_equal(err.http_status, 500);
  assert_string_equal(err.reason, "InternalError");
  assert_true(kcr_error_is_internal_error(&err));
  assert_string_equal(
      err.message,
      "an error on the server (\"<html>\\r\\n<head><title>500 Internal Server "
      "Error</title></head>\\r\\n<body>\\r\\n<center><h1>500 Internal Server "
      "Error</h1></center>\\r\\n<hr><center>nginx</center>\\r\\n</body>\\r\\n</html>\") has "
      "prevented the request from succeeding (get configmaps foo)");
  assert_non_null(strstr(err.causes, "<title>500 Internal Server Error</title>"));
  /* a 502 from a proxy is an internal error too */
  assert_int_equal(from(&err, 502, "text/html", body_500_html, strlen(body_500_html)), KCR_EAPI);
  assert_string_equal(err.reason, "InternalError");
}

static void test_apierror_empty_body(void **state) {
  kcr_error_t err;
  kcr__error_response_t r = {503, NULL, "5", "DELETE", "apps", "deployments", "web"};
  (void)state;
  assert_int_equal(from(&err, 404, NULL, "", 0), KCR_EAPI);
  assert_string_equal(err.reason, "NotFound");
  assert_string_equal(err.message,
                      "the server could not find the requested resource (get configmaps foo)");
  assert_string_equal(err.causes, "");
  assert_true(kcr_error_is_not_found(&err));
  kcr_error_clear(&err);
  assert_int_equal(kcr__error_from_response(&err, &r, NULL, 0), KCR_EAPI);
  assert_string_equal(err.reason, "ServiceUnavailable");
  assert_string_equal(err.message, "the server is currently unable to handle the request (delete "
                                   "deployments.apps web)");
  assert_int_equal(err.retry_after_seconds, 5);
  assert_true(kcr_error_is_service_unavailable(&err));
}

static void test_apierror_generic_messages(void **state) {
  static const struct {
    long status;
    const char *verb, *reason, *message;
  } cases[] = {
      {400, "GET", "BadRequest",
       "the server rejected our request for an unknown reason (get configmaps foo)"},
      {401, "GET", "Unauthorized",
       "the server has asked for the client to provide credentials (get configmaps foo)"},
      {405, "GET", "MethodNotAllowed",
       "the server does not allow this method on the requested resource (get configmaps foo)"},
      {409, "PUT", "Conflict", "the server reported a conflict (put configmaps foo)"},
      {409, "POST", "AlreadyExists", "the server reported a conflict (post configmaps foo)"},
      {422, "PATCH", "Invalid",
       "the server rejected our request due to an error in our request (patch configmaps foo)"},
      {504, "GET", "Timeout",
       "the server was unable to return a response in the time allotted, but may still be "
       "processing the request (get configmaps foo)"},
      {418, "GET", "",
       "the server responded with the status code 418 but did not return more information (get "
       "configmaps foo)"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kcr_error_t err;
    kcr__error_response_t r = {cases[i].status, NULL, NULL, cases[i].verb, "", "configmaps", "foo"};
    kcr_error_clear(&err);
    assert_int_equal(kcr__error_from_response(&err, &r, NULL, 0), KCR_EAPI);
    assert_string_equal(err.reason, cases[i].reason);
    assert_string_equal(err.message, cases[i].message);
    assert_int_equal(err.http_status, cases[i].status);
  }
}

static void test_apierror_not_a_status(void **state) {
  kcr_error_t err;
  kcr__error_response_t r = {409, "application/json", NULL, "POST", NULL, NULL, NULL};
  const char *truncated = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Fail";
  const char *configmap = "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"status\":\"Failure\"}";
  const char *success = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Success\"}";
  (void)state;
  /* truncated JSON: generic, with the excerpt; no resource: no parenthesis */
  kcr_error_clear(&err);
  assert_int_equal(kcr__error_from_response(&err, &r, truncated, strlen(truncated)), KCR_EAPI);
  assert_string_equal(err.reason, "AlreadyExists");
  assert_string_equal(err.message, "the server reported a conflict");
  assert_string_equal(err.causes, truncated);
  /* JSON of another kind, or a Status that is not a failure */
  assert_int_equal(from(&err, 500, NULL, configmap, strlen(configmap)), KCR_EAPI);
  assert_string_equal(err.reason, "InternalError");
  assert_int_equal(from(&err, 500, NULL, success, strlen(success)), KCR_EAPI);
  assert_string_equal(err.reason, "InternalError");
  /* a Status under a content type we did not ask for is not read as one */
  assert_int_equal(
      from(&err, 404, "application/vnd.kubernetes.protobuf", body_404, strlen(body_404)), KCR_EAPI);
  assert_string_equal(err.message,
                      "the server could not find the requested resource (get configmaps foo)");
  /* ...but parameters and case do not matter */
  assert_int_equal(from(&err, 404, "Application/JSON; charset=utf-8", body_404, strlen(body_404)),
                   KCR_EAPI);
  assert_string_equal(err.message, "configmaps \"x\" not found");
  /* a 2xx is not an error */
  assert_int_equal(from(&err, 200, NULL, body_404, strlen(body_404)), 0);
  assert_int_equal(err.code, KCR_OK);
  assert_int_equal(from(&err, 201, NULL, NULL, 0), 0);
}

static void test_apierror_excerpt_is_escaped_and_bounded(void **state) {
  kcr_error_t err;
  char big[8192];
  const char bin[] = "\x00\xff\x01ok\"\\\n\xc3\xa9";
  (void)state;
  assert_int_equal(from(&err, 500, "application/octet-stream", bin, sizeof(bin) - 1), KCR_EAPI);
  assert_string_equal(err.causes, "\\x00\\xff\\x01ok\"\\\\n\xc3\xa9");
  assert_string_equal(err.message,
                      "an error on the server (\"\\x00\\xff\\x01ok\\\"\\\\\\n\xc3\xa9\") "
                      "has prevented the request from succeeding (get configmaps "
                      "foo)");
  memset(big, 'a', sizeof(big));
  assert_int_equal(from(&err, 500, "text/plain", big, sizeof(big)), KCR_EAPI);
  assert_true(strlen(err.causes) < sizeof(err.causes));
  assert_non_null(strstr(err.causes, "aaa..."));
  assert_true(strlen(err.message) < sizeof(err.message));
}

/* valid_utf8 checks with jansson, which refuses invalid UTF-8. */
static int valid_utf8(const char *s) {
  json_t *j = json_string(s);
  int ok = j != NULL;
  json_decref(j);
  return ok;
}

static void test_apierror_cut_keeps_utf8(void **state) {
  kcr_error_t err;
  char body[4096], *p;
  (void)state;
  /* a message of 300 two-byte characters and 300 three-byte ones, cut at 511 bytes */
  for (int shift = 0; shift < 3; shift++) {
    p = body;
    p += sprintf(p, "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Invalid\","
                    "\"message\":\"");
    for (int i = 0; i < shift; i++)
      *p++ = 'x';
    for (int i = 0; i < 300; i++)
      p += sprintf(p, i % 2 ? "\xc3\xa9" : "\xe2\x9c\x93");
    p += sprintf(p, "\",\"details\":{\"causes\":[{\"field\":\"spec\",\"message\":\"");
    for (int i = 0; i < 300; i++)
      p += sprintf(p, "\xe2\x9c\x93");
    p += sprintf(p, "\"}]},\"code\":422}");
    assert_int_equal(from(&err, 422, NULL, body, (size_t)(p - body)), KCR_EAPI);
    assert_true(strlen(err.message) >= sizeof(err.message) - 4);
    assert_true(valid_utf8(err.message));
    assert_true(valid_utf8(err.causes));
    /* the same body as an excerpt */
    assert_int_equal(from(&err, 500, "text/plain", body, (size_t)(p - body)), KCR_EAPI);
    assert_true(valid_utf8(err.message));
    assert_true(valid_utf8(err.causes));
  }
}

static void test_apierror_first_error_wins(void **state) {
  kcr_error_t err;
  kcr__error_response_t r = {404, NULL, NULL, "GET", NULL, "pods", "p"};
  (void)state;
  kcr_error_clear(&err);
  kcr_error_set(&err, KCR_ETIMEDOUT, "earlier");
  assert_int_equal(kcr__error_from_response(&err, &r, body_404, strlen(body_404)), KCR_EAPI);
  assert_int_equal(err.code, KCR_ETIMEDOUT);
  assert_string_equal(err.message, "earlier");
  assert_string_equal(err.reason, "");
  assert_int_equal(kcr__error_from_response(NULL, &r, body_404, strlen(body_404)), KCR_EAPI);
  assert_int_equal(kcr__error_from_response(NULL, &r, NULL, 0), KCR_EAPI);
}

static void test_apierror_from_status_object(void **state) {
  kcr_error_t err;
  json_t *st = json_pack("{s:s, s:s, s:s, s:i}", "kind", "Status", "reason", "Expired", "message",
                         "too old resource version: 1 (2)", "code", 410);
  json_t *cm = json_pack("{s:s}", "kind", "ConfigMap");
  json_t *nokind = json_pack("{s:s}", "reason", "Gone");
  json_t *arr = json_array();
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(kcr__error_from_status(&err, st, 0), KCR_EAPI);
  assert_int_equal(err.http_status, 410);
  assert_true(kcr_error_is_gone(&err));
  assert_string_equal(err.message, "too old resource version: 1 (2)");
  kcr_error_clear(&err);
  assert_int_equal(kcr__error_from_status(&err, cm, 0), KCR_EPROTO);
  assert_non_null(strstr(err.message, "ConfigMap"));
  assert_false(kcr_error_is_api(&err));
  kcr_error_clear(&err);
  assert_int_equal(kcr__error_from_status(&err, arr, 0), KCR_EPROTO);
  /* no kind, no code, no message: the HTTP status fills in */
  kcr_error_clear(&err);
  assert_int_equal(kcr__error_from_status(&err, nokind, 500), KCR_EAPI);
  assert_int_equal(err.http_status, 500);
  assert_true(kcr_error_is_gone(&err));
  assert_non_null(strstr(err.message, "an error on the server"));
  json_decref(st);
  json_decref(cm);
  json_decref(nokind);
  json_decref(arr);
}

static void test_apierror_predicate_table(void **state) {
  enum { NF, AE, CF, IV, GN, TM, FB, UA, ST, TO, BR, IE, SU, NPRED };
  static bool (*const preds[NPRED])(const kcr_error_t *) = {kcr_error_is_not_found,
                                                            kcr_error_is_already_exists,
                                                            kcr_error_is_conflict,
                                                            kcr_error_is_invalid,
                                                            kcr_error_is_gone,
                                                            kcr_error_is_too_many_requests,
                                                            kcr_error_is_forbidden,
                                                            kcr_error_is_unauthorized,
                                                            kcr_error_is_server_timeout,
                                                            kcr_error_is_timeout,
                                                            kcr_error_is_bad_request,
                                                            kcr_error_is_internal_error,
                                                            kcr_error_is_service_unavailable};
  static const struct {
    const char *reason;
    int status;
    unsigned want; /* bit i: preds[i] is true */
  } rows[] = {
      {"NotFound", 404, 1u << NF},
      {"", 404, 1u << NF},
      {"SomethingNew", 404, 1u << NF}, /* an unknown reason falls back to the status */
      {"Conflict", 404, 1u << CF},     /* a known reason decides alone */
      {"AlreadyExists", 409, 1u << AE},
      {"", 409, 1u << CF},
      {"Conflict", 409, 1u << CF},
      {"Invalid", 422, 1u << IV},
      {"", 422, 1u << IV},
      {"Gone", 410, 1u << GN},
      {"Expired", 410, 1u << GN},
      {"Expired", 0, 1u << GN},
      {"", 410, 1u << GN},
      {"TooManyRequests", 429, 1u << TM},
      {"ServiceUnavailable", 429, (1u << TM) | (1u << SU)}, /* 429 counts whatever the reason */
      {"Forbidden", 403, 1u << FB},
      {"", 403, 1u << FB},
      {"Unauthorized", 401, 1u << UA},
      {"", 401, 1u << UA},
      {"ServerTimeout", 500, 1u << ST},
      {"", 500, 1u << IE}, /* no status means ServerTimeout */
      {"Timeout", 504, 1u << TO},
      {"", 504, 1u << TO},
      {"BadRequest", 400, 1u << BR},
      {"InternalError", 500, 1u << IE},
      {"ServiceUnavailable", 503, 1u << SU},
      {"", 0, 0},
      {"", 418, 0},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    kcr_error_t err;
    kcr_error_clear(&err);
    err.code = KCR_EAPI;
    err.http_status = rows[i].status;
    snprintf(err.reason, sizeof(err.reason), "%s", rows[i].reason);
    for (int p = 0; p < NPRED; p++) {
      int want = (rows[i].want >> p) & 1;
      if (!!preds[p](&err) != want)
        fail_msg("row %zu (%s, %d): predicate %d is %d, want %d", i, rows[i].reason, rows[i].status,
                 p, !want, want);
    }
    /* never for a non-API error or NULL */
    err.code = KCR_ENOENT;
    for (int p = 0; p < NPRED; p++)
      assert_false(preds[p](&err));
    assert_false(preds[i % NPRED](NULL));
  }
}

static void test_apierror_retry_after_header(void **state) {
  (void)state;
  assert_int_equal(kcr__retry_after_seconds("5"), 5);
  assert_int_equal(kcr__retry_after_seconds(" 10\r\n"), 10);
  assert_int_equal(kcr__retry_after_seconds("+3"), 3);
  assert_int_equal(kcr__retry_after_seconds("0"), 0);
  assert_int_equal(kcr__retry_after_seconds("99999999999999999999"), INT_MAX);
  assert_int_equal(kcr__retry_after_seconds("-1"), -1);
  assert_int_equal(kcr__retry_after_seconds(""), -1);
  assert_int_equal(kcr__retry_after_seconds("1.5"), -1);
  assert_int_equal(kcr__retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT"), -1);
  assert_int_equal(kcr__retry_after_seconds(NULL), -1);
}

/* parse_ok parses body and turns the expected KCR_EAPI into 0 for the loop. */
static int parse_ok(kcr_error_t *err, long status, const char *body) {
  int rc = FROM(err, status, body);
  if (rc == KCR_EAPI) {
    assert_int_equal(err->http_status, status);
    return 0;
  }
  assert_int_equal(err->code, rc);
  return rc;
}

static void test_apierror_alloc_failure(void **state) {
  kcr_error_t err;
  (void)state;
  KCR_TEST_ALLOC_LOOP(parse_ok(&err, 404, body_404), (void)0);
  KCR_TEST_ALLOC_LOOP(parse_ok(&err, 422, body_422), (void)0);
  KCR_TEST_ALLOC_LOOP(parse_ok(&err, 429, body_429), (void)0);
  KCR_TEST_ALLOC_LOOP(parse_ok(&err, 410, body_410), (void)0);
  assert_string_equal(err.reason, "Expired");
}

/* kcr_error_set_status builds an API error (apierrors.NewConflict...): the
 * predicates see it, the first error wins, a status outside 100..599 is refused. */
static void test_apierror_set_status(void **state) {
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(kcr_error_set_status(&err, 409, "Conflict", "x %d", 1), KCR_EAPI);
  assert_int_equal(err.code, KCR_EAPI);
  assert_int_equal(err.http_status, 409);
  assert_true(kcr_error_is_conflict(&err));
  assert_string_equal(err.message, "x 1");
  assert_int_equal(kcr_error_set_status(&err, 422, "Invalid", "y"), KCR_EAPI);
  assert_int_equal(err.http_status, 409);
  kcr_error_clear(&err);
  assert_int_equal(kcr_error_set_status(&err, 42, NULL, "z"), KCR_EINVAL);
  assert_int_equal(err.code, KCR_EINVAL);
  assert_int_equal(kcr_error_set_status(NULL, 403, NULL, "z"), KCR_EAPI);
  assert_string_equal(err.reason, "");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_apierror_not_found),
      cmocka_unit_test(test_apierror_conflict_and_already_exists),
      cmocka_unit_test(test_apierror_invalid_with_causes),
      cmocka_unit_test(test_apierror_too_many_requests_retry_after),
      cmocka_unit_test(test_apierror_expired_is_gone),
      cmocka_unit_test(test_apierror_forbidden_and_unauthorized),
      cmocka_unit_test(test_apierror_html_500),
      cmocka_unit_test(test_apierror_empty_body),
      cmocka_unit_test(test_apierror_generic_messages),
      cmocka_unit_test(test_apierror_not_a_status),
      cmocka_unit_test(test_apierror_excerpt_is_escaped_and_bounded),
      cmocka_unit_test(test_apierror_cut_keeps_utf8),
      cmocka_unit_test(test_apierror_first_error_wins),
      cmocka_unit_test(test_apierror_set_status),
      cmocka_unit_test(test_apierror_from_status_object),
      cmocka_unit_test(test_apierror_predicate_table),
      cmocka_unit_test(test_apierror_retry_after_header),
      cmocka_unit_test(test_apierror_alloc_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
