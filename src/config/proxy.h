/* SPDX-License-Identifier: MIT */
/*
 * proxy.h: which proxy a request goes through when the kubeconfig names none:
 * Go's http.ProxyFromEnvironment (golang.org/x/net/http/httpproxy), which
 * client-go's transports use (proxy.c).
 */
#ifndef KCR_CONFIG_PROXY_H
#define KCR_CONFIG_PROXY_H

#include <stddef.h>

#include "kcr/error.h"

/*
 * kcr__proxy_env_t: the proxy settings of an environment, read as
 * httpproxy.FromEnvironment reads them: HTTP_PROXY else http_proxy, HTTPS_PROXY
 * else https_proxy, NO_PROXY else no_proxy (the first that is set and not
 * empty), and whether REQUEST_METHOD is set (a CGI process). Strings are new
 * or NULL.
 */
typedef struct kcr__proxy_env {
  char *http_proxy;
  char *https_proxy;
  char *no_proxy;
  int cgi;
} kcr__proxy_env_t;

/* kcr__proxy_env_read fills *out from env (NULL: the process's environment).
 * Returns 0 or KCR_ENOMEM (then *out is empty). */
int kcr__proxy_env_read(char *const *env, kcr__proxy_env_t *out);

/* kcr__proxy_env_free releases *p and zeroes it. */
void kcr__proxy_env_free(kcr__proxy_env_t *p);

/*
 * kcr__proxy_for_url is httpproxy's proxyForURL: the proxy for url
 * ("scheme://host[:port]..."), written into buf (size bytes) as a URL with a
 * scheme ("http://" put in front of a bare host:port, as Go does), or "" for a
 * direct connection. HTTPS_PROXY serves https URLs, HTTP_PROXY http ones, no
 * other scheme is proxied; never localhost or a loopback address; not a host
 * NO_PROXY matches ("*", an IP, a CIDR, a domain and its subdomains, ".domain"
 * for subdomains only, "*.domain", each with an optional ":port"). Returns 0;
 * KCR_ECONFIG when HTTP_PROXY would serve an http URL in a CGI process (Go
 * refuses: the variable may come from the request's Proxy header) or when url
 * has no scheme and host; KCR_ETOOBIG when the proxy does not fit. Messages
 * quote neither URL. Any thread.
 */
int kcr__proxy_for_url(const kcr__proxy_env_t *p, const char *url, char *buf, size_t size,
                       kcr_error_t *err);

#endif /* KCR_CONFIG_PROXY_H */
