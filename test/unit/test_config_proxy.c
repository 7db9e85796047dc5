/* SPDX-License-Identifier: MIT */
/*
 * test_config_proxy.c: kcr_rest_config_proxy_for against Go's
 * http.ProxyFromEnvironment rules (golang.org/x/net/http/httpproxy): which
 * variable serves which scheme, upper- and lower-case names, the loopback
 * exemption, every NO_PROXY form, the CGI refusal, and the kubeconfig's
 * proxy-url taking precedence over all of it. No network: the configs are
 * loaded from a kubeconfig with an environment of the test's own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcr/config.h"
#include "testutil.h"

static char dir[64];
static char path[128];

/* load writes a kubeconfig (with cluster_extra lines in its cluster) and loads
 * it with env (NULL-terminated "NAME=value" strings). */
static kcr_rest_config_t *load(const char *cluster_extra, const char *const *env) {
  kcr_config_options o;
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err;
  FILE *f;
  snprintf(dir, sizeof(dir), "/tmp/kcr-test-proxy-XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof(path), "%s/kubeconfig", dir);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f,
          "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
          "clusters:\n- name: c\n  cluster:\n    server: https://api.example.org:6443\n%s"
          "contexts:\n- name: c\n  context:\n    cluster: c\n",
          cluster_extra ? cluster_extra : "");
  assert_int_equal(fclose(f), 0);
  memset(&o, 0, sizeof(o));
  o.env = (char *const *)env; /* kcr_config_options.env is only read */
  kcr_error_clear(&err);
  if (kcr_rest_config_from_kubeconfig(path, NULL, &o, &cfg, &err) != 0)
    fail_msg("load: %s", err.message);
  unlink(path);
  rmdir(dir);
  return cfg;
}

/* expect asserts the proxy for url is want ("" for direct). */
static void expect(kcr_rest_config_t *cfg, const char *url, const char *want) {
  char buf[512];
  kcr_error_t err;
  kcr_error_clear(&err);
  if (kcr_rest_config_proxy_for(cfg, url, buf, sizeof(buf), &err) != 0)
    fail_msg("%s: %s", url, err.message);
  if (strcmp(buf, want) != 0)
    fail_msg("%s: proxy \"%s\", want \"%s\"", url, buf, want);
}

#define HP "http://proxy.corp:3128"

/* HTTPS_PROXY serves https URLs, HTTP_PROXY (a bare host:port gets http://)
 * serves http URLs; other schemes are never proxied. */
static void test_proxy_scheme_picks_variable(void **state) {
  const char *env[] = {"HTTPS_PROXY=" HP, "HTTP_PROXY=proxy.corp:8080", NULL};
  kcr_rest_config_t *cfg = load(NULL, env);
  (void)state;
  expect(cfg, "https://api.example.org:6443/api", HP);
  expect(cfg, "http://api.example.org/api", "http://proxy.corp:8080");
  expect(cfg, "HTTPS://api.example.org", HP); /* the scheme is case-insensitive */
  expect(cfg, "ftp://api.example.org", "");
  expect(cfg, "wss://api.example.org", "");
  kcr_rest_config_unref(cfg);
}

/* Upper case wins when both are set and not empty; an empty one is skipped. */
static void test_proxy_variable_case(void **state) {
  const char *both[] = {"https_proxy=http://lower:1", "HTTPS_PROXY=http://upper:1", NULL};
  const char *lower[] = {"https_proxy=http://lower:1", "HTTPS_PROXY=", "no_proxy=example.org",
                         NULL};
  const char *none[] = {"HTTP_PROXY=http://only-http:1", NULL};
  kcr_rest_config_t *cfg = load(NULL, both);
  (void)state;
  expect(cfg, "https://a.example.com", "http://upper:1");
  kcr_rest_config_unref(cfg);
  cfg = load(NULL, lower);
  expect(cfg, "https://a.example.com", "http://lower:1");
  expect(cfg, "https://api.example.org", ""); /* lower-case no_proxy applies */
  kcr_rest_config_unref(cfg);
  cfg = load(NULL, none);
  expect(cfg, "https://a.example.com", ""); /* HTTP_PROXY never serves https */
  kcr_rest_config_unref(cfg);
}

/* Go never proxies "localhost" or a loopback address, whatever the variables
 * say; "localhost" is compared before lower-casing, and 0.0.0.0 is not
 * loopback. */
static void test_proxy_loopback_never(void **state) {
  const char *env[] = {"HTTPS_PROXY=" HP, "HTTP_PROXY=" HP, NULL};
  kcr_rest_config_t *cfg = load(NULL, env);
  (void)state;
  expect(cfg, "https://localhost:6443", "");
  expect(cfg, "http://localhost", "");
  expect(cfg, "https://127.0.0.1:6443", "");
  expect(cfg, "https://127.200.3.4", "");
  expect(cfg, "https://[::1]:6443", "");
  expect(cfg, "https://[::ffff:127.0.0.1]:6443", "");
  expect(cfg, "https://user:pw@127.0.0.1:6443/x", "");
  expect(cfg, "https://LOCALHOST:6443", HP);
  expect(cfg, "https://localhost.localdomain", HP);
  expect(cfg, "https://0.0.0.0:6443", HP);
  expect(cfg, "https://[::2]", HP);
  expect(cfg, "https://127.0.0.01", HP); /* not an address in Go: a name */
  kcr_rest_config_unref(cfg);
}

/* Every NO_PROXY form Go knows. */
static void test_proxy_no_proxy_rules(void **state) {
  const char *env[] = {"HTTPS_PROXY=" HP,
                       "NO_PROXY= Example.COM ,.internal, *.svc,intra:8443 ,10.0.0.0/8, "
                       "192.168.1.5,[2001:db8::1]:6443,::ffff:172.16.0.0/108,::ffff:10.9.9.9,"
                       "fd00::/8,:80,bad/cidr,",
                       NULL};
  kcr_rest_config_t *cfg = load(NULL, env);
  (void)state;
  /* a domain: itself and its subdomains, any port, case-insensitive */
  expect(cfg, "https://example.com", "");
  expect(cfg, "https://a.b.EXAMPLE.com:8443", "");
  expect(cfg, "https://badexample.com", HP);
  /* ".domain" and "*.domain": subdomains only */
  expect(cfg, "https://x.internal", "");
  expect(cfg, "https://internal", HP);
  expect(cfg, "https://kubernetes.default.svc", "");
  expect(cfg, "https://svc", HP);
  /* a port must be the request's (443 when the URL has none) */
  expect(cfg, "https://intra:8443", "");
  expect(cfg, "https://intra", HP);
  expect(cfg, "https://sub.intra:8443", "");
  /* CIDR and IP entries match IP hosts only */
  expect(cfg, "https://10.1.2.3:6443", "");
  expect(cfg, "https://11.0.0.1", HP);
  expect(cfg, "https://192.168.1.5", "");
  expect(cfg, "https://192.168.1.6", HP);
  expect(cfg, "https://[2001:db8::1]:6443", "");
  expect(cfg, "https://[2001:db8::1]", HP);
  expect(cfg, "https://[fd12::3]", "");
  /* an IPv4-mapped CIDR is an IPv4 network (/108 is 172.16.0.0/12), a mapped
   * IP equals its IPv4 form */
  expect(cfg, "https://172.20.0.1", "");
  expect(cfg, "https://172.32.0.1", HP);
  expect(cfg, "https://10.9.9.9", "");
  /* an IP-looking name is a name: "010.0.0.1" is no IPv4 address to Go */
  expect(cfg, "https://010.0.0.1", HP);
  kcr_rest_config_unref(cfg);
}

/* "*" alone disables the proxy for every host; so does "*" among others. */
static void test_proxy_no_proxy_star(void **state) {
  const char *env[] = {"HTTPS_PROXY=" HP, "NO_PROXY=example.com, * ", NULL};
  kcr_rest_config_t *cfg = load(NULL, env);
  (void)state;
  expect(cfg, "https://anything.at.all", "");
  expect(cfg, "https://8.8.8.8", "");
  kcr_rest_config_unref(cfg);
}

/* Go refuses HTTP_PROXY for an http URL in a CGI process (REQUEST_METHOD set):
 * the variable may have come from the request's Proxy header. The message does
 * not quote the proxy, whose URL may hold a password. */
static void test_proxy_cgi_refuses_http_proxy(void **state) {
  const char *env[] = {"REQUEST_METHOD=GET", "HTTP_PROXY=http://u:s3cr3t@evil:1", "HTTPS_PROXY=" HP,
                       NULL};
  kcr_rest_config_t *cfg = load(NULL, env);
  char buf[256];
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_config_proxy_for(cfg, "http://api.example.org", buf, sizeof(buf), &err),
                   KCR_ECONFIG);
  assert_non_null(strstr(err.message, "CGI"));
  assert_null(strstr(err.message, "s3cr3t"));
  assert_string_equal(buf, "");
  expect(cfg, "https://api.example.org", HP); /* HTTPS_PROXY is not affected */
  kcr_rest_config_unref(cfg);
}

/* A value with a control character is ignored (Go cannot parse it either way);
 * one that parses to no usable host is refused, where Go would fail every
 * request it serves, but not for requests the proxy would not serve. */
static void test_proxy_bogus_value(void **state) {
  const char *ignored[] = {"HTTPS_PROXY=http://a\x01b:1", "HTTP_PROXY=socks5://s:1080", NULL};
  const char *broken[] = {"HTTPS_PROXY=a b", NULL};
  kcr_rest_config_t *cfg = load(NULL, ignored);
  char buf[64];
  kcr_error_t err;
  (void)state;
  expect(cfg, "https://api.example.org", "");
  expect(cfg, "http://api.example.org", "socks5://s:1080");
  kcr_rest_config_unref(cfg);
  cfg = load(NULL, broken);
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_rest_config_proxy_for(cfg, "https://api.example.org", buf, sizeof(buf), &err),
      KCR_ECONFIG);
  assert_non_null(strstr(err.message, "HTTPS_PROXY"));
  assert_null(strstr(err.message, "a b"));
  expect(cfg, "https://127.0.0.1", "");
  kcr_rest_config_unref(cfg);
}

/* The kubeconfig's proxy-url is client-go's http.ProxyURL: every request takes
 * it, loopback included, whatever the variables and NO_PROXY say. */
static void test_proxy_url_wins(void **state) {
  const char *env[] = {"HTTPS_PROXY=" HP, "NO_PROXY=*", NULL};
  kcr_rest_config_t *cfg = load("    proxy-url: socks5://kube-proxy:1080\n", env);
  (void)state;
  expect(cfg, "https://api.example.org:6443", "socks5://kube-proxy:1080");
  expect(cfg, "https://127.0.0.1:6443", "socks5://kube-proxy:1080");
  assert_string_equal(kcr_rest_config_proxy_url(cfg), "socks5://kube-proxy:1080");
  kcr_rest_config_unref(cfg);
}

/* Without any variable, and for a URL that is not one, nothing is proxied. */
static void test_proxy_none_and_bad_url(void **state) {
  const char *env[] = {NULL};
  kcr_rest_config_t *cfg = load(NULL, env);
  char buf[8];
  kcr_error_t err;
  (void)state;
  expect(cfg, "https://api.example.org", "");
  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_config_proxy_for(cfg, "api.example.org", buf, sizeof(buf), &err),
                   KCR_ECONFIG);
  kcr_rest_config_unref(cfg);
  {
    const char *e2[] = {"HTTPS_PROXY=" HP, NULL};
    cfg = load(NULL, e2);
    kcr_error_clear(&err);
    assert_int_equal(kcr_rest_config_proxy_for(cfg, "https://a.b", buf, sizeof(buf), &err),
                     KCR_ETOOBIG);
    assert_string_equal(buf, "");
    kcr_rest_config_unref(cfg);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_proxy_scheme_picks_variable),
      cmocka_unit_test(test_proxy_variable_case),
      cmocka_unit_test(test_proxy_loopback_never),
      cmocka_unit_test(test_proxy_no_proxy_rules),
      cmocka_unit_test(test_proxy_no_proxy_star),
      cmocka_unit_test(test_proxy_cgi_refuses_http_proxy),
      cmocka_unit_test(test_proxy_bogus_value),
      cmocka_unit_test(test_proxy_url_wins),
      cmocka_unit_test(test_proxy_none_and_bad_url),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
