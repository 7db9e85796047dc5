/* SPDX-License-Identifier: MIT */
/* test_http1.c: the server's HTTP/1 request parsing (src/server/http1.c) on
 * bytes alone, no socket. */
#include <stdlib.h>
#include <string.h>

#include "server/http1_internal.h"
#include "testutil.h"

static int parse(const char *head, kcr__http_head *h) {
  return kcr__http_parse_head(head, strlen(head), h);
}

/* The request parser the fuzz target drives, on the cases it must get right. */
static void test_http1_parse_head(void **state) {
  kcr__http_head h;
  char *big;
  (void)state;
  assert_int_equal(kcr__http_head_end("GET / HTTP/1.1\r\n\r\nGET", 23), 18);
  assert_int_equal(kcr__http_head_end("GET / HTTP/1.1\r\n\r", 17), 0);

  assert_int_equal(parse("GET /readyz?verbose&exclude=a HTTP/1.1\r\nHost: x\r\n\r\n", &h), 0);
  assert_string_equal(h.method, "GET");
  assert_string_equal(h.target, "/readyz");
  assert_string_equal(h.query, "verbose&exclude=a");
  assert_int_equal(h.head_only, 0);
  assert_int_equal(h.close_after, 0);
  assert_true(kcr__http_query_has(h.query, "verbose"));
  assert_false(kcr__http_query_has(h.query, "verb"));
  assert_true(kcr__http_query_excludes(h.query, "a"));

  assert_int_equal(parse("HEAD /healthz HTTP/1.0\r\n\r\n", &h), 0);
  assert_true(h.head_only);
  assert_true(h.close_after); /* HTTP/1.0 without keep-alive */
  assert_null(h.query);
  assert_int_equal(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &h), 0);
  assert_false(h.close_after);
  assert_int_equal(parse("GET / HTTP/1.1\r\ncontent-length: 3\r\n\r\n", &h), 0);
  assert_true(h.close_after); /* a body nobody reads */

  assert_int_equal(parse("garbage\r\n\r\n", &h), -1);
  assert_int_equal(parse("GET / HTTP/2\r\n\r\n", &h), -1);
  assert_int_equal(parse("GET / HTTP/1.1 extra\r\n\r\n", &h), -1);
  assert_int_equal(kcr__http_parse_head("G\0T / HTTP/1.1\r\n\r\n", 21, &h), -1);
  assert_int_equal(parse("ABCDEFGHIJKLMNOP / HTTP/1.1\r\n\r\n", &h), -1); /* 16-byte method */
  /* A target one byte over the limit is refused, not cut to fit. */
  big = malloc(KCR__HTTP_TARGET_MAX + 64);
  memcpy(big, "GET /", 5);
  memset(big + 5, 'a', KCR__HTTP_TARGET_MAX - 1 - 1);
  memcpy(big + 5 + KCR__HTTP_TARGET_MAX - 2, " HTTP/1.1\r\n\r\n", 14);
  assert_int_equal(parse(big, &h), 0);
  assert_int_equal(strlen(h.target), KCR__HTTP_TARGET_MAX - 1);
  memset(big + 5, 'a', KCR__HTTP_TARGET_MAX - 1);
  memcpy(big + 5 + KCR__HTTP_TARGET_MAX - 1, " HTTP/1.1\r\n\r\n", 14);
  assert_int_equal(parse(big, &h), -1);
  free(big);
}

/* exclude= decodes %XX and '+', splits on commas, and a name cut off at the
 * 255-byte limit matches nothing (not its prefix). */
static void test_http1_query_excludes(void **state) {
  char *big;
  (void)state;
  assert_true(kcr__http_query_excludes("exclude=a%2Cb+c", "b c"));
  assert_true(kcr__http_query_excludes("x=1&exclude=p&exclude=q", "q"));
  assert_false(kcr__http_query_excludes("exclude=,,", ""));
  big = malloc(512);
  memcpy(big, "exclude=", 8);
  memset(big + 8, 'x', 250);
  memcpy(big + 258, ",pingpong", 10);
  assert_false(kcr__http_query_excludes(big, "ping"));
  assert_false(kcr__http_query_excludes(big, "pingpong"));
  free(big);
}

/* The headers the server acts on: Content-Length read strictly (a value that is
 * not a plain number is reported, not guessed), Transfer-Encoding noted, and
 * keep-alive kept apart from the close a built-in endpoint's unread body
 * forces. */
static void test_http1_body_headers(void **state) {
  kcr__http_head h;
  (void)state;
  assert_int_equal(parse("POST /x HTTP/1.1\r\nContent-Length: 12\r\n\r\n", &h), 0);
  assert_int_equal(h.content_length, 12);
  assert_true(h.close_after);
  assert_true(h.keep_alive);
  assert_int_equal(parse("POST /x HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", &h), 0);
  assert_int_equal(h.content_length, -2);
  assert_int_equal(parse("GET /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", &h), 0);
  assert_int_equal(h.content_length, 0);
  assert_false(h.close_after);
  assert_int_equal(parse("GET /x HTTP/1.1\r\n\r\n", &h), 0);
  assert_int_equal(h.content_length, -1);
  assert_false(h.chunked);
  assert_int_equal(parse("POST /x HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n", &h), 0);
  assert_true(h.chunked);
  assert_true(h.close_after);
  assert_int_equal(parse("GET /x HTTP/1.1\r\nConnection: close\r\n\r\n", &h), 0);
  assert_true(h.close_after);
  assert_false(h.keep_alive);
}

/* The bearer token /metrics' auth hook gets: the scheme in any case, the token
 * up to white space, none when empty or another scheme. */
static void test_http1_bearer_token(void **state) {
  const char *head = "GET /metrics HTTP/1.1\r\nauthorization: bearer  abc.def ignored\r\n\r\n";
  const char *t;
  size_t len = 0;
  (void)state;
  t = kcr__http_bearer_token(head, strlen(head), &len);
  assert_non_null(t);
  assert_int_equal(len, 7);
  assert_memory_equal(t, "abc.def", 7);
  head = "GET /metrics HTTP/1.1\r\nAuthorization: Basic Zm9vOmJhcg==\r\n\r\n";
  assert_null(kcr__http_bearer_token(head, strlen(head), &len));
  head = "GET /metrics HTTP/1.1\r\nAuthorization: Bearer \r\n\r\n";
  assert_null(kcr__http_bearer_token(head, strlen(head), &len));
  head = "GET /metrics HTTP/1.1\r\n\r\n";
  assert_null(kcr__http_bearer_token(head, strlen(head), &len));
}

/* Reason phrases for the statuses the server sends. */
static void test_http1_reason(void **state) {
  (void)state;
  assert_string_equal(kcr__http_reason(200), "OK");
  assert_string_equal(kcr__http_reason(431), "Request Header Fields Too Large");
  assert_string_equal(kcr__http_reason(299), "Unknown");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_http1_parse_head),   cmocka_unit_test(test_http1_query_excludes),
      cmocka_unit_test(test_http1_body_headers), cmocka_unit_test(test_http1_bearer_token),
      cmocka_unit_test(test_http1_reason),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
