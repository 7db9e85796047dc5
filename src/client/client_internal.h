/* SPDX-License-Identifier: MIT */
/*
 * client_internal.h: pieces of the client shared between its files (the watch
 * implementation builds on the request machinery).
 */
#ifndef KCR_CLIENT_INTERNAL_H
#define KCR_CLIENT_INTERNAL_H

#include <curl/curl.h>

#include "kcr/buf.h"
#include "kcr/client.h"
#include "loop/loop_internal.h"

/*
 * kcr__client_prepare makes an easy handle for method + path (absolute, with the
 * query) with the client's TLS, proxy, auth, impersonation and User-Agent settings
 * applied, and *headers holding the header list to free after the transfer.
 * Fetches credentials (may block on an exec plugin): never on the loop thread.
 * Returns 0 or a kcr_err.
 */
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

#endif /* KCR_CLIENT_INTERNAL_H */
