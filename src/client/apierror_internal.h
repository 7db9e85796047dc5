/* SPDX-License-Identifier: MIT */
/*
 * apierror_internal.h: turning what the API server said about a failure into a kcr_error_t.
 * The request code calls kcr__error_from_response on every response outside
 * 200..206; the watch decoder calls kcr__error_from_status on an ERROR event's
 * object. Both write only into an empty kcr_error_t (first error wins) and never
 * allocate on the way out, except for parsing the body.
 */
#ifndef KCR_CLIENT_APIERROR_INTERNAL_H
#define KCR_CLIENT_APIERROR_INTERNAL_H

#include <stddef.h>

#include <jansson.h>

#include "kcr/error.h"

/* KCR__STATUS_EXCERPT_MAX bounds how much of a non-Status body an error quotes
 * (client-go's maxUnstructuredResponseTextBytes); the text fields cut it further. */
#define KCR__STATUS_EXCERPT_MAX 2048

/*
 * kcr__error_response_t: what kcr__error_from_response knows about the request
 * and its response. Every string is borrowed for the call; NULL means absent.
 *   http_status   the response's status code.
 *   content_type  the Content-Type header (NULL: none, which client-go reads as
 *                 JSON and as text).
 *   retry_after   the Retry-After header; only a whole number of seconds counts.
 *   verb          the HTTP method ("GET", "POST"...); POST turns a bare 409 into
 *                 AlreadyExists, and the synthesized message names it in lower case.
 *   group         the resource's API group ("" or NULL: the core group).
 *   resource      the resource's plural ("configmaps"); NULL when the request was
 *                 not for a resource (discovery, /version).
 *   name          the object's name; NULL or "" for a collection.
 */
typedef struct kcr__error_response {
  long http_status;
  const char *content_type;
  const char *retry_after;
  const char *verb;
  const char *group;
  const char *resource;
  const char *name;
} kcr__error_response_t;

/*
 * kcr__error_from_response converts a response to an error. A status of 200..206
 * is success: returns 0 and reads nothing. Otherwise, when the body is JSON
 * (Content-Type application/json or none) holding a metav1.Status with status
 * "Failure", err gets its code (else the HTTP status), reason, message, causes and
 * retryAfterSeconds (else the Retry-After header); any other body (HTML from a
 * proxy, truncated or non-JSON text, a wrong content type, nothing) gives
 * client-go's generic error for the status code, with a bounded, escaped excerpt
 * of the body in causes (and in the message where client-go puts it there).
 * Returns KCR_EAPI, or KCR_ENOMEM when parsing the body ran out of memory (then
 * err->http_status still holds the status). body may be NULL when len is 0.
 */
int kcr__error_from_response(kcr_error_t *err, const kcr__error_response_t *resp, const char *body,
                             size_t len);

/*
 * kcr__error_from_status converts a metav1.Status object (borrowed) that the
 * server sent, such as a watch ERROR event's object, to an error. Its "status"
 * field is not consulted: the caller already knows this is a failure. code is
 * the Status's code; http_status is used only when the Status has none. Returns
 * KCR_EAPI, or KCR_EPROTO when status is not a JSON object or names a kind other
 * than Status. Never allocates.
 */
int kcr__error_from_status(kcr_error_t *err, const json_t *status, long http_status);

/*
 * kcr__escape_text writes server-supplied text (len bytes of src, white space at
 * either end trimmed) into dst (cap bytes, NUL-terminated, cap >= 8) as printable,
 * valid UTF-8: control characters become \n, \t, \r or \xNN, bytes that are not
 * UTF-8 become \xNN, and a cut is marked "..." and never splits a character.
 * For putting what a peer sent into an error message.
 */
void kcr__escape_text(char *dst, size_t cap, const char *src, size_t len);

/*
 * kcr__retry_after_seconds parses a Retry-After header value as client-go does
 * (a whole number of seconds; the HTTP-date form is ignored). Returns the
 * seconds (capped at INT_MAX), or -1 when value is NULL or not a number.
 */
int kcr__retry_after_seconds(const char *value);

#endif /* KCR_CLIENT_APIERROR_INTERNAL_H */
