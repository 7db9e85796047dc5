/* SPDX-License-Identifier: MIT */
/*
 * client_internal.h: pieces of the client shared between its files (the watch
 * implementation builds on the request machinery).
 */
#ifndef KCR_CLIENT_INTERNAL_H
#define KCR_CLIENT_INTERNAL_H

#include <curl/curl.h>
#include <stdbool.h>

#include "kcr/buf.h"
#include "kcr/client.h"
#include "loop/loop_internal.h"

/*
 * kcr__client_prepare makes an easy handle (a reset one the client kept, or a
 * new one) for method + path (absolute, with the query) with the client's TLS,
 * proxy, auth, impersonation and User-Agent settings applied, and *headers
 * holding the header list to free after the transfer.
 * Fetches credentials (may block on an exec plugin): never on the loop thread.
 * Returns 0 or a kcr_err.
 */
/* kcr__client_handles_made says how many curl handles c has created (tests:
 * the client reuses them). Any thread. */
unsigned long kcr__client_handles_made(kcr_client_t *c);

int kcr__client_prepare(kcr_client_t *c, const char *method, const char *path, const char *accept,
                        const char *content_type, CURL **easy, struct curl_slist **headers,
                        kcr_error_t *err);

/*
 * kcr__client_transport_error turns a libcurl failure into a kcr_err and a message
 * naming the method, URL path and libcurl's detail.
 */
int kcr__client_transport_error(CURLcode rc, const char *method, const char *path,
                                const char *detail, kcr_error_t *err);

/* kcr__client_credentials_rejected passes a 401 on to the config (refresh next time). */
void kcr__client_credentials_rejected(kcr_client_t *c);

/*
 * kcr__client_on_curl_debug is the CURLOPT_DEBUGFUNCTION set with
 * KCR_CURL_VERBOSE: libcurl's text and header lines become DEBUG lines of the
 * logger "curl" (a header as a field named after it), each credential's value
 * replaced by "[REDACTED]" before the logger sees it; bodies and TLS data are
 * never logged. Any thread.
 */
int kcr__client_on_curl_debug(CURL *easy, curl_infotype type, char *data, size_t size, void *userp);

/* kcr__client_observe counts one finished attempt in the client's metrics, if any
 * (loop thread). */
void kcr__client_observe(kcr_client_t *c, const char *method, long code, double seconds);

/*
 * kcr__client_do is kcr_client_do for the verbs: group, resource and name (each
 * may be NULL) describe the target, so that an error without a Status body gets
 * client-go's message ("the server could not find the requested resource (get
 * configmaps foo)").
 */
int kcr__client_do(kcr_client_t *c, const kcr_request *req, kcr_response *resp, const char *group,
                   const char *resource, const char *name, kcr_error_t *err);

/*
 * kcr__client_build_path appends the URL path of a resource to b (percent-encoded
 * segments). Returns 0, KCR_EINVAL for an unusable segment, or a kcr_buf error.
 */
int kcr__client_build_path(kcr_buf_t *b, const kcr_gvr *r, const char *ns, const char *name,
                           const char *sub);

/*
 * kcr__client_add_param appends "?key=value" (first) or "&key=value", the value
 * percent-encoded; nothing when value is NULL or "".
 */
int kcr__client_add_param(kcr_buf_t *b, int *first, const char *key, const char *value);

/*
 * kcr__client_header_key_escape appends key to out as client-go's
 * headerKeyEscape writes an Impersonate-Extra- key: every byte that is not an
 * RFC 7230 token character, and '%', as %XX (upper-case hex). Returns 0 or a
 * kcr_buf error.
 */
int kcr__client_header_key_escape(const char *key, kcr_buf_t *out);

/* The most bytes of Warning header values kept for one answer; more are
 * dropped. */
#define KCR__CLIENT_WARNINGS_MAX ((size_t)64 * 1024)

/*
 * kcr__client_collect_warning: when the header line (len bytes, as libcurl's
 * header callback delivers it) is a Warning header, appends its value and a
 * newline to raw (bounded by KCR__CLIENT_WARNINGS_MAX) and returns true.
 * Loop thread; raw belongs to the transfer.
 */
bool kcr__client_collect_warning(kcr_buf_t *raw, const char *line, size_t len);

/*
 * kcr__client_warnings parses the values collected in raw, hands each warning
 * to the client's handler or logger (kcr_client_options.warnings), and, when
 * out is not NULL, gives them to the caller: *out new (NULL and *nout 0 when
 * there are none). The caller's thread, never the loop's. Returns 0 or
 * KCR_ENOMEM (then the warnings parsed so far were handled, none returned).
 */
int kcr__client_warnings(kcr_client_t *c, const char *method, const char *path,
                         const kcr_buf_t *raw, kcr_warning **out, size_t *nout);

#endif /* KCR_CLIENT_INTERNAL_H */
