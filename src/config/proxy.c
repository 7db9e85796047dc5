/* SPDX-License-Identifier: MIT */
/*
 * proxy.c: Go's http.ProxyFromEnvironment (golang.org/x/net/http/httpproxy),
 * the proxy client-go uses when a kubeconfig has no proxy-url.
 *
 * Rules, in Go's order (httpproxy's proxyForURL and useProxy):
 *   - https URLs use HTTPS_PROXY, http URLs HTTP_PROXY (upper case first, the
 *     first set and non-empty); in a CGI process (REQUEST_METHOD set) an http
 *     URL that HTTP_PROXY would serve is an error; other schemes go direct.
 *   - A proxy value without "scheme://host" gets "http://" in front; one that
 *     still has no host is ignored.
 *   - Never proxied: the host "localhost" (exactly, before lower-casing) and a
 *     loopback address (127.0.0.0/8, ::1, their IPv4-mapped forms).
 *   - NO_PROXY, comma-separated, each entry trimmed and lower-cased: "*" (every
 *     host); a CIDR (matches an IP host inside it); an IP with an optional port
 *     (an IP host equal to it); else a domain with an optional port: "foo.com"
 *     matches foo.com and its subdomains, ".foo.com" and "*.foo.com" only the
 *     subdomains. Domains never match an IP host; a port, when given, must be
 *     the request's (the scheme's default when the URL has none). Malformed
 *     entries are skipped.
 * Go converts non-ASCII names to punycode (IDNA) before comparing; kcr compares
 * bytes, which is the same for ASCII names (every API server address kcr meets).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config/cfgutil.h"
#include "config/proxy.h"
#include "util/alloc.h"

/* ---- environment ---- */

/* env_any is httpproxy's getEnvAny: the first of the names set and not empty. */
static const char *env_any(char *const *env, const char *upper, const char *lower) {
  const char *v = kcr__env_get(env, upper);
  if (v && *v)
    return v;
  v = kcr__env_get(env, lower);
  return v && *v ? v : NULL;
}

static int dup_or_null(const char *s, char **out) {
  *out = NULL;
  if (!s)
    return 0;
  *out = kcr__strdup(s);
  return *out ? 0 : KCR_ENOMEM;
}

int kcr__proxy_env_read(char *const *env, kcr__proxy_env_t *out) {
  const char *cgi = kcr__env_get(env, "REQUEST_METHOD");
  memset(out, 0, sizeof(*out));
  if (dup_or_null(env_any(env, "HTTP_PROXY", "http_proxy"), &out->http_proxy) != 0 ||
      dup_or_null(env_any(env, "HTTPS_PROXY", "https_proxy"), &out->https_proxy) != 0 ||
      dup_or_null(env_any(env, "NO_PROXY", "no_proxy"), &out->no_proxy) != 0) {
    kcr__proxy_env_free(out);
    return KCR_ENOMEM;
  }
  out->cgi = cgi && *cgi;
  return 0;
}

void kcr__proxy_env_free(kcr__proxy_env_t *p) {
  kcr__free(p->http_proxy);
  kcr__free(p->https_proxy);
  kcr__free(p->no_proxy);
  memset(p, 0, sizeof(*p));
}

/* ---- addresses, as Go's net.IP sees them ---- */

/* ip_t: an address in Go's net.IP form: 4 bytes (IPv4) or 16 (IPv6). */
typedef struct ip {
  unsigned char b[16];
  size_t len;
} ip_t;

static const unsigned char v4_in_v6[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/*
 * parse_ip reads s[0..n) as netip.ParseAddr does: dotted decimal (strict: four
 * fields, no leading zeros) gives 4 bytes, IPv6 text 16. With allow_zone a
 * non-empty "%zone" after an IPv6 address is accepted and dropped (as
 * AsSlice drops it). Returns true when s is an address.
 */
static bool parse_ip(const char *s, size_t n, bool allow_zone, ip_t *out) {
  char buf[64];
  const char *pct;
  if (n == 0 || n >= sizeof(buf))
    return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (strchr(buf, ':')) {
    pct = strchr(buf, '%');
    if (pct) {
      if (!allow_zone || pct[1] == '\0')
        return false;
      buf[pct - buf] = '\0';
    }
    out->len = 16;
    return inet_pton(AF_INET6, buf, out->b) == 1;
  }
  out->len = 4;
  return inet_pton(AF_INET, buf, out->b) == 1;
}

/* to4 is net.IP.To4 where it applies: an IPv4-mapped IPv6 address as 4 bytes. */
static ip_t to4(ip_t a) {
  if (a.len == 16 && memcmp(a.b, v4_in_v6, sizeof(v4_in_v6)) == 0) {
    memmove(a.b, a.b + 12, 4);
    a.len = 4;
  }
  return a;
}

/* to16 is net.IP.To16: an IPv4 address in its IPv4-mapped form. */
static ip_t to16(ip_t a) {
  if (a.len == 4) {
    memmove(a.b + 12, a.b, 4);
    memcpy(a.b, v4_in_v6, sizeof(v4_in_v6));
    a.len = 16;
  }
  return a;
}

/* is_loopback is net.IP.IsLoopback: 127.0.0.0/8 (mapped or not) or ::1. */
static bool is_loopback(ip_t a) {
  static const unsigned char v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  a = to4(a);
  if (a.len == 4)
    return a.b[0] == 127;
  return memcmp(a.b, v6_loopback, 16) == 0;
}

/* ip_equal is net.IP.Equal: an IPv4 address equals its mapped form. */
static bool ip_equal(ip_t a, ip_t b) {
  a = to16(a);
  b = to16(b);
  return memcmp(a.b, b.b, 16) == 0;
}

/* cidr_t: a network as net.IPNet.Contains uses it (networkNumberAndMask):
 * network and mask of the same length, 4 or 16 bytes. */
typedef struct cidr {
  ip_t net;
  unsigned char mask[16];
} cidr_t;

/*
 * parse_cidr reads "addr/bits" as net.ParseCIDR does (no zone; bits decimal,
 * at most the address's length in bits), then normalises it as Contains does:
 * a network whose masked address is IPv4-mapped is an IPv4 network.
 */
static bool parse_cidr(const char *s, cidr_t *out) {
  const char *slash = strchr(s, '/');
  const char *d;
  ip_t a;
  long bits = 0;
  size_t bitlen;
  if (!slash || !parse_ip(s, (size_t)(slash - s), false, &a))
    return false;
  for (d = slash + 1; *d >= '0' && *d <= '9'; d++) {
    bits = bits * 10 + (*d - '0');
    if (bits > 0xFFFFFF)
      return false;
  }
  bitlen = a.len * 8;
  if (d == slash + 1 || *d != '\0' || bits > (long)bitlen)
    return false;
  memset(out, 0, sizeof(*out));
  out->net.len = a.len;
  for (size_t i = 0; i < a.len; i++) {
    long left = bits - (long)i * 8;
    out->mask[i] = left >= 8 ? 0xff : left <= 0 ? 0 : (unsigned char)(0xff << (8 - left));
    out->net.b[i] = a.b[i] & out->mask[i];
  }
  if (out->net.len == 16 && memcmp(out->net.b, v4_in_v6, sizeof(v4_in_v6)) == 0) {
    out->net = to4(out->net);
    memmove(out->mask, out->mask + 12, 4);
  }
  return true;
}

static bool cidr_contains(const cidr_t *n, ip_t a) {
  a = to4(a);
  if (a.len != n->net.len)
    return false;
  for (size_t i = 0; i < a.len; i++)
    if ((a.b[i] & n->mask[i]) != n->net.b[i])
      return false;
  return true;
}

/* ---- host:port, as Go's net.SplitHostPort ---- */

/*
 * split_host_port splits s[0..n) at its last ':' into host and port, with
 * net.SplitHostPort's rules: a bracketed host ends right before that colon, an
 * unbracketed one holds no colon, no stray '[' or ']'. Returns false on a
 * missing port or any of those errors.
 */
static bool split_host_port(const char *s, size_t n, const char **host, size_t *host_len,
                            const char **port, size_t *port_len) {
  const char *colon = NULL, *h = s, *end;
  size_t j = 0, k = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == ':')
      colon = s + i;
  if (!colon)
    return false;
  if (n > 0 && s[0] == '[') {
    const char *close = memchr(s, ']', n);
    if (!close || close + 1 != colon)
      return false;
    h = s + 1;
    end = close;
    j = 1;
    k = (size_t)(close - s) + 1;
  } else {
    end = colon;
    if (memchr(s, ':', (size_t)(colon - s)))
      return false;
  }
  if (memchr(s + j, '[', n - j) || memchr(s + k, ']', n - k))
    return false;
  *host = h;
  *host_len = (size_t)(end - h);
  *port = colon + 1;
  *port_len = n - (size_t)(colon + 1 - s);
  return true;
}

/* ---- URLs ---- */

/* url_parts: what proxyForURL reads of a URL. host excludes IPv6 brackets. */
typedef struct url_parts {
  char scheme[16];
  char host[256];
  char port[16];
} url_parts;

/* scheme_len: the length of an RFC 3986 scheme at the start of s followed by
 * "://", or 0. */
static size_t scheme_len(const char *s) {
  size_t i = 0;
  if (!isalpha((unsigned char)s[0]))
    return 0;
  while (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')
    i++;
  return strncmp(s + i, "://", 3) == 0 ? i : 0;
}

/*
 * parse_url fills *u from "scheme://[userinfo@]host[:port][/...]" (the scheme
 * lower-cased, as Go's url.Parse does). Returns false when there is no scheme
 * or no host, or a part does not fit.
 */
static bool parse_url(const char *url, url_parts *u) {
  size_t sl = scheme_len(url), alen;
  const char *auth, *at, *host, *hend, *port = NULL;
  memset(u, 0, sizeof(*u));
  if (sl == 0 || sl >= sizeof(u->scheme))
    return false;
  for (size_t i = 0; i < sl; i++)
    u->scheme[i] = (char)tolower((unsigned char)url[i]);
  auth = url + sl + 3;
  alen = strcspn(auth, "/?#");
  at = NULL;
  for (size_t i = 0; i < alen; i++)
    if (auth[i] == '@')
      at = auth + i;
  host = at ? at + 1 : auth;
  hend = auth + alen;
  if (host < hend && *host == '[') {
    const char *close = memchr(host, ']', (size_t)(hend - host));
    if (!close)
      return false;
    if (close + 1 < hend && close[1] == ':')
      port = close + 2;
    host++;
    hend = close;
  } else if (host < hend) {
    const char *colon = memchr(host, ':', (size_t)(hend - host));
    if (colon) {
      port = colon + 1;
      hend = colon;
    }
  }
  if (hend <= host || (size_t)(hend - host) >= sizeof(u->host))
    return false;
  memcpy(u->host, host, (size_t)(hend - host));
  if (port) {
    size_t pl = (size_t)(auth + alen - port);
    if (pl >= sizeof(u->port))
      return false;
    memcpy(u->port, port, pl);
  }
  return true;
}

/* default_port is httpproxy's portMap. */
static const char *default_port(const char *scheme) {
  if (strcmp(scheme, "http") == 0)
    return "80";
  if (strcmp(scheme, "https") == 0)
    return "443";
  if (strcmp(scheme, "socks5") == 0)
    return "1080";
  return "";
}

/* proxy_kind: what httpproxy's parseProxy makes of a value. */
typedef enum proxy_kind {
  PROXY_NONE,   /* unset, or a value Go cannot parse either way: ignored */
  PROXY_URL,    /* a usable proxy URL */
  PROXY_BROKEN, /* Go keeps a URL it cannot connect through: every request fails */
} proxy_kind;

/*
 * proxy_value is httpproxy's parseProxy: value as it is when it has a scheme
 * and a host, else "http://" + value when that has one (*prefix set). A control
 * character makes both of Go's url.Parse calls fail: the value is ignored. Any
 * other value without a usable host ("a b", "proxy:") leaves Go with a proxy
 * URL that fails each request it serves.
 */
static proxy_kind proxy_value(const char *value, bool *prefix) {
  url_parts u;
  char tmp[2048];
  *prefix = false;
  if (!value)
    return PROXY_NONE;
  for (const unsigned char *p = (const unsigned char *)value; *p; p++)
    if (*p < ' ' || *p == 0x7f)
      return PROXY_NONE;
  if (parse_url(value, &u) && !strchr(u.host, ' '))
    return PROXY_URL;
  if (snprintf(tmp, sizeof(tmp), "http://%s", value) >= (int)sizeof(tmp) || !parse_url(tmp, &u) ||
      strchr(u.host, ' '))
    return PROXY_BROKEN;
  *prefix = true;
  return PROXY_URL;
}

/* ---- NO_PROXY ---- */

/* trim_lower copies s[0..n), ASCII white space trimmed and lower-cased, into
 * buf; false when it does not fit. */
static bool trim_lower(const char *s, size_t n, char *buf, size_t size) {
  while (n > 0 && isspace((unsigned char)*s))
    s++, n--;
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    n--;
  if (n >= size)
    return false;
  for (size_t i = 0; i < n; i++)
    buf[i] = (char)tolower((unsigned char)s[i]);
  buf[n] = '\0';
  return true;
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t sl = strlen(s), xl = strlen(suffix);
  return sl >= xl && memcmp(s + sl - xl, suffix, xl) == 0;
}

/*
 * entry_matches tells whether one NO_PROXY entry p (trimmed, lower-cased, not
 * empty, not "*") excludes the request's host (lower-cased), port and address
 * (ip NULL when the host is a name), following httpproxy's config.init and
 * its matchers.
 */
static bool entry_matches(const char *p, const char *host, const char *port, const ip_t *ip) {
  cidr_t net;
  ip_t pip;
  const char *ph, *pp = "";
  size_t phl, ppl = 0;
  char phost[256], pport[16];

  if (parse_cidr(p, &net))
    return ip && cidr_contains(&net, *ip);
  if (split_host_port(p, strlen(p), &ph, &phl, &pp, &ppl)) {
    if (phl == 0)
      return false; /* no host part: malformed, ignored */
    if (ph[0] == '[' && ph[phl - 1] == ']')
      ph++, phl -= 2;
  } else {
    ph = p;
    phl = strlen(p);
    pp = "";
    ppl = 0;
  }
  if (phl >= sizeof(phost) || ppl >= sizeof(pport))
    return false;
  memcpy(phost, ph, phl);
  phost[phl] = '\0';
  memcpy(pport, pp, ppl);
  pport[ppl] = '\0';
  if (parse_ip(phost, phl, false, &pip))
    return ip && ip_equal(pip, *ip) && (pport[0] == '\0' || strcmp(pport, port) == 0);
  if (phl == 0 || ip)
    return false; /* a domain never matches an IP host */
  {
    /* "*.foo.com" is ".foo.com"; "foo.com" is ".foo.com" that also matches
     * foo.com itself. */
    char dom[258];
    const char *d = phost;
    bool match_host = false;
    if (strncmp(d, "*.", 2) == 0)
      d++;
    if (d[0] != '.') {
      match_host = true;
      snprintf(dom, sizeof(dom), ".%s", d);
    } else {
      snprintf(dom, sizeof(dom), "%s", d);
    }
    if (has_suffix(host, dom) || (match_host && strcmp(host, dom + 1) == 0))
      return pport[0] == '\0' || strcmp(pport, port) == 0;
  }
  return false;
}

/* no_proxy_matches runs the entries of NO_PROXY list against the request. */
static bool no_proxy_matches(const char *list, const char *host, const char *port, const ip_t *ip) {
  const char *s = list;
  char entry[512] = {0};
  if (!list)
    return false;
  /* "*" anywhere disables the proxy for every host, whatever comes before. */
  for (s = list;;) {
    size_t n = strcspn(s, ",");
    if (trim_lower(s, n, entry, sizeof(entry)) && strcmp(entry, "*") == 0)
      return true;
    if (s[n] == '\0')
      break;
    s += n + 1;
  }
  for (s = list;;) {
    size_t n = strcspn(s, ",");
    if (trim_lower(s, n, entry, sizeof(entry)) && entry[0] && entry_matches(entry, host, port, ip))
      return true;
    if (s[n] == '\0')
      break;
    s += n + 1;
  }
  return false;
}

/* use_proxy is httpproxy's useProxy for host and port (the request's). */
static bool use_proxy(const kcr__proxy_env_t *p, const char *host, const char *port) {
  char lower[256];
  ip_t ip;
  bool is_ip;
  /* SplitHostPort(JoinHostPort(host, port)) fails on a stray bracket. */
  if (strchr(host, '[') || strchr(host, ']'))
    return false;
  if (strcmp(host, "localhost") == 0)
    return false;
  is_ip = parse_ip(host, strlen(host), true, &ip);
  if (is_ip && is_loopback(ip))
    return false;
  if (!trim_lower(host, strlen(host), lower, sizeof(lower)))
    return true;
  return !no_proxy_matches(p->no_proxy, lower, port, is_ip ? &ip : NULL);
}

int kcr__proxy_for_url(const kcr__proxy_env_t *p, const char *url, char *buf, size_t size,
                       kcr_error_t *err) {
  url_parts u;
  const char *value = NULL, *var = NULL;
  proxy_kind kind;
  bool prefix;
  int n;

  if (size)
    buf[0] = '\0';
  if (!parse_url(url, &u))
    return kcr_error_set(err, KCR_ECONFIG, "proxy: the URL has no scheme and host");
  if (strcmp(u.scheme, "https") == 0) {
    value = p->https_proxy;
    var = "HTTPS_PROXY";
  } else if (strcmp(u.scheme, "http") == 0) {
    value = p->http_proxy;
    var = "HTTP_PROXY";
  }
  kind = proxy_value(value, &prefix);
  if (kind == PROXY_NONE)
    return 0;
  if (strcmp(u.scheme, "http") == 0 && p->cgi)
    return kcr_error_set(err, KCR_ECONFIG,
                         "proxy: refusing to use HTTP_PROXY in a CGI environment (REQUEST_METHOD "
                         "is set; see golang.org/s/cgihttpproxy)");
  if (!use_proxy(p, u.host, u.port[0] ? u.port : default_port(u.scheme)))
    return 0;
  if (kind == PROXY_BROKEN)
    return kcr_error_set(err, KCR_ECONFIG,
                         "proxy: %s (or its lower-case form) names no proxy host; Go would fail "
                         "every request it serves",
                         var);
  n = snprintf(buf, size, "%s%s", prefix ? "http://" : "", value);
  if (n < 0 || (size_t)n >= size) {
    if (size)
      buf[0] = '\0';
    return kcr_error_set(err, KCR_ETOOBIG, "proxy: the proxy URL is longer than %zu bytes",
                         size ? size - 1 : 0);
  }
  return 0;
}
