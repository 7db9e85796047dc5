/* SPDX-License-Identifier: MIT */
/*
 * test_client_transport.c: what the client adds around a request, against a
 * scripted HTTP server on loopback: client-go's impersonation headers (extras
 * included), the proxy chosen from the environment and the kubeconfig, and the
 * API server's Warning headers.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_internal.h"
#include "httpserver.h"
#include "kcr/buf.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/log.h"
#include "testutil.h"

/* ---- a server that echoes what it was sent ---- */

static void echo_handler(const kcr_test_http_request *req, kcr_test_http_response *resp,
                         void *data) {
  static __thread char out[40000];
  json_t *j = json_pack("{s:s, s:s, s:s}", "method", req->method, "path", req->path, "headers",
                        req->headers);
  char *text = json_dumps(j, JSON_COMPACT);
  (void)data;
  snprintf(out, sizeof(out), "%s", text);
  free(text);
  json_decref(j);
  resp->body = out;
}

/* The scripted server, a kubeconfig in a temporary directory, config, client. */
typedef kcr_test_client fixture;

/* write_file writes text to dir/name; path receives the file's path. */
static void write_file(const char *dir, const char *name, const char *text, char *path,
                       size_t size) {
  FILE *f;
  snprintf(path, size, "%s/%s", dir, name);
  f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

/* serve starts f's scripted server with handler. */
static void serve(fixture *f, kcr_test_http_handler handler) {
  memset(f, 0, sizeof(*f));
  snprintf(f->dir, sizeof(f->dir), "/tmp/kcr-test-transport-XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  assert_int_equal(kcr_test_http_start(handler, NULL, &f->server), 0);
}

/*
 * load writes a kubeconfig whose cluster server is server (NULL: the scripted
 * server, http://127.0.0.1:PORT), with cluster_extra lines in the cluster and
 * user_yaml lines in the user (each indented four spaces), loads it with env as
 * the environment (NULL: the process's), and makes a client with extra's
 * options. Returns what kcr_client_create returned, or the load's error.
 */
static int load(fixture *f, const char *server, const char *cluster_extra, const char *user_yaml,
                char *const *env, const kcr_client_options *extra, kcr_error_t *err) {
  char text[4096], own[64];
  kcr_config_options co;
  kcr_client_options opts;
  if (!server) {
    snprintf(own, sizeof(own), "http://127.0.0.1:%d", kcr_test_http_port(f->server));
    server = own;
  }
  snprintf(text, sizeof(text),
           "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
           "clusters:\n- name: test\n  cluster:\n    server: %s\n%s"
           "contexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n"
           "users:\n- name: test\n  user:\n    token: t0k3n\n%s",
           server, cluster_extra ? cluster_extra : "", user_yaml ? user_yaml : "");
  write_file(f->dir, "kubeconfig", text, f->kubeconfig, sizeof(f->kubeconfig));
  memset(&co, 0, sizeof(co));
  co.env = env;
  if (kcr_rest_config_from_kubeconfig(f->kubeconfig, NULL, &co, &f->config, err) != 0)
    return -1;
  if (extra)
    opts = *extra;
  else
    memset(&opts, 0, sizeof(opts));
  opts.config = f->config;
  return kcr_client_create(&opts, &f->client, err);
}

/* start is serve then load with the scripted server as the API server. */
static int start(fixture *f, kcr_test_http_handler handler, const char *user_yaml,
                 const kcr_client_options *extra, kcr_error_t *err) {
  serve(f, handler);
  return load(f, NULL, NULL, user_yaml, NULL, extra, err);
}

static void stop(fixture *f) {
  char path[256];
  kcr_client_destroy(f->client);
  kcr_rest_config_unref(f->config);
  kcr_test_http_stop(f->server);
  unlink(f->kubeconfig);
  snprintf(path, sizeof(path), "%s/ca.crt", f->dir);
  unlink(path);
  rmdir(f->dir);
}

/* get_echo GETs /api/v1/namespaces/default/configmaps/echo; returns the echo. */
static json_t *get_echo(fixture *f) {
  kcr_request req = {0};
  kcr_response resp;
  kcr_error_t err;
  json_t *j;
  req.method = "GET";
  req.path = "/api/v1/namespaces/default/configmaps/echo";
  kcr_error_clear(&err);
  if (kcr_client_do(f->client, &req, &resp, &err) != 0)
    fail_msg("echo: %s", err.message);
  j = json_loads(resp.body, 0, NULL);
  kcr_response_free(&resp);
  assert_non_null(j);
  return j;
}

/* ---- impersonation ---- */

static void assert_escaped(const char *key, const char *want) {
  kcr_buf_t b;
  kcr_buf_init(&b, 1024);
  assert_int_equal(kcr__client_header_key_escape(key, &b), 0);
  assert_string_equal(kcr_buf_cstr(&b), want);
  kcr_buf_free(&b);
}

/* client-go's headerKeyEscape: RFC 7230 token bytes stay, the rest (and '%')
 * become %XX in upper-case hex. */
static void test_impersonate_extra_key_escape(void **state) {
  (void)state;
  assert_escaped("scopes", "scopes");
  assert_escaped("Az09!#$&'*+-.^_`|~", "Az09!#$&'*+-.^_`|~");
  assert_escaped("example.com/key", "example.com%2Fkey");
  assert_escaped("a b:c=d%e", "a%20b%3Ac%3Dd%25e");
  assert_escaped("\"(),;<>?@[\\]{}", "%22%28%29%2C%3B%3C%3E%3F%40%5B%5C%5D%7B%7D");
  assert_escaped("\x7f\x01", "%7F%01");
  assert_escaped("\xc3\xa9t\xc3\xa9", "%C3%A9t%C3%A9"); /* "été": each byte */
  assert_escaped("", "");
}

/* as-user-extra goes on the wire as Impersonate-Extra-<key> headers, one per
 * value, next to Impersonate-User, -Uid and -Group. */
static void test_impersonate_extra_headers_sent(void **state) {
  fixture f;
  kcr_error_t err;
  json_t *r;
  const char *h;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(start(&f, echo_handler,
                         "    as: alice\n    as-uid: u-42\n    as-groups: [devs, ops]\n"
                         "    as-user-extra:\n"
                         "      scopes: [view, edit]\n"
                         "      example.com/team name%: [blue]\n"
                         "      empty: ['']\n",
                         NULL, &err),
                   0);
  r = get_echo(&f);
  h = json_string_value(json_object_get(r, "headers"));
  assert_non_null(strstr(h, "Impersonate-User: alice\r\n"));
  assert_non_null(strstr(h, "Impersonate-Uid: u-42\r\n"));
  assert_non_null(strstr(h, "Impersonate-Group: devs\r\n"));
  assert_non_null(strstr(h, "Impersonate-Group: ops\r\n"));
  assert_non_null(strstr(h, "Impersonate-Extra-scopes: view\r\n"));
  assert_non_null(strstr(h, "Impersonate-Extra-scopes: edit\r\n"));
  /* view before edit: the order of the list */
  assert_true(strstr(h, "Impersonate-Extra-scopes: view") <
              strstr(h, "Impersonate-Extra-scopes: edit"));
  assert_non_null(strstr(h, "Impersonate-Extra-example.com%2Fteam%20name%25: blue\r\n"));
  /* an empty value is sent empty, not dropped */
  assert_non_null(strstr(h, "Impersonate-Extra-empty:"));
  json_decref(r);
  stop(&f);
}

/* A value a header cannot carry (a line break would end it early) is refused
 * when the client is made, without quoting it. */
static void test_impersonate_control_character_refused(void **state) {
  fixture f;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(start(&f, echo_handler,
                         "    as: alice\n"
                         "    as-user-extra:\n"
                         "      scopes: [\"a\\r\\nX-Injected: 1\"]\n",
                         NULL, &err),
                   KCR_ECONFIG);
  assert_non_null(strstr(err.message, "as-user-extra"));
  assert_null(strstr(err.message, "Injected"));
  assert_null(f.client);
  stop(&f);
}

/* ---- proxy ---- */

/*
 * The origin is the fixture's echo server; a second echo server stands in for
 * the proxy (an http:// request through an HTTP proxy is sent to the proxy
 * with the absolute URL as its target, no CONNECT). The origin is addressed as
 * 0.0.0.0:PORT where a test needs a host Go would proxy: 0.0.0.0 is not a
 * loopback address to Go, and Linux delivers a connection to it over lo.
 */
typedef struct proxy_case {
  fixture f;
  kcr_test_http_t *proxy;
  char origin[64];    /* http://0.0.0.0:PORT of the origin */
  char proxy_url[64]; /* http://127.0.0.1:PORT of the proxy */
} proxy_case;

static void proxy_start(proxy_case *pc) {
  serve(&pc->f, echo_handler);
  assert_int_equal(kcr_test_http_start(echo_handler, NULL, &pc->proxy), 0);
  snprintf(pc->origin, sizeof(pc->origin), "http://0.0.0.0:%d", kcr_test_http_port(pc->f.server));
  snprintf(pc->proxy_url, sizeof(pc->proxy_url), "http://127.0.0.1:%d",
           kcr_test_http_port(pc->proxy));
}

static void proxy_stop(proxy_case *pc) {
  kcr_test_http_stop(pc->proxy);
  stop(&pc->f);
}

/* HTTP_PROXY of the load environment sends an http request through the proxy,
 * absolute URL and all. */
static void test_proxy_from_environment_used(void **state) {
  proxy_case pc;
  char var[96];
  const char *env[3];
  kcr_error_t err;
  json_t *r;
  char want[128];
  (void)state;
  proxy_start(&pc);
  snprintf(var, sizeof(var), "HTTP_PROXY=%s", pc.proxy_url);
  env[0] = var;
  env[1] = "HTTPS_PROXY=http://127.0.0.1:9"; /* https only: not used for http */
  env[2] = NULL;
  kcr_error_clear(&err);
  assert_int_equal(load(&pc.f, pc.origin, NULL, NULL, (char *const *)env, NULL, &err), 0);
  r = get_echo(&pc.f);
  snprintf(want, sizeof(want), "%s/api/v1/namespaces/default/configmaps/echo", pc.origin);
  assert_string_equal(json_string_value(json_object_get(r, "path")), want);
  json_decref(r);
  assert_int_equal(kcr_test_http_requests(pc.proxy), 1);
  assert_int_equal(kcr_test_http_requests(pc.f.server), 0);
  proxy_stop(&pc);
}

/* run_direct loads with env and asserts the request reached the origin
 * directly, the proxy seeing nothing. */
static void expect_direct(proxy_case *pc, const char *server, const char *cluster_extra,
                          const char *const *env) {
  kcr_error_t err;
  json_t *r;
  kcr_error_clear(&err);
  assert_int_equal(load(&pc->f, server, cluster_extra, NULL, (char *const *)env, NULL, &err), 0);
  r = get_echo(&pc->f);
  assert_string_equal(json_string_value(json_object_get(r, "path")),
                      "/api/v1/namespaces/default/configmaps/echo");
  json_decref(r);
  assert_int_equal(kcr_test_http_requests(pc->proxy), 0);
  assert_int_equal(kcr_test_http_requests(pc->f.server), 1);
}

/* NO_PROXY naming the host bypasses the proxy. */
static void test_proxy_no_proxy_bypasses(void **state) {
  proxy_case pc;
  char var[96];
  const char *env[3];
  (void)state;
  proxy_start(&pc);
  snprintf(var, sizeof(var), "http_proxy=%s", pc.proxy_url);
  env[0] = var;
  env[1] = "no_proxy=example.com,0.0.0.0/32";
  env[2] = NULL;
  expect_direct(&pc, pc.origin, NULL, env);
  proxy_stop(&pc);
}

/* Go never proxies a loopback address. */
static void test_proxy_loopback_direct(void **state) {
  proxy_case pc;
  char var[96], origin[64];
  const char *env[2];
  (void)state;
  proxy_start(&pc);
  snprintf(var, sizeof(var), "HTTP_PROXY=%s", pc.proxy_url);
  env[0] = var;
  env[1] = NULL;
  snprintf(origin, sizeof(origin), "http://127.0.0.1:%d", kcr_test_http_port(pc.f.server));
  expect_direct(&pc, origin, NULL, env);
  proxy_stop(&pc);
}

/* libcurl's own reading of http_proxy / HTTP_PROXY is off: the process's
 * variables do not count when the config was loaded with another
 * environment. */
static void test_proxy_process_environment_not_read_by_libcurl(void **state) {
  proxy_case pc;
  const char *env[] = {NULL};
  (void)state;
  proxy_start(&pc);
  assert_int_equal(setenv("http_proxy", pc.proxy_url, 1), 0);
  assert_int_equal(setenv("HTTP_PROXY", pc.proxy_url, 1), 0);
  expect_direct(&pc, pc.origin, NULL, env);
  unsetenv("http_proxy");
  unsetenv("HTTP_PROXY");
  proxy_stop(&pc);
}

/* The kubeconfig's proxy-url carries every request, loopback included, and no
 * NO_PROXY (libcurl would read the process's by itself) takes it away. */
static void test_proxy_url_used_despite_no_proxy(void **state) {
  proxy_case pc;
  char extra[128], origin[64];
  const char *env[] = {"NO_PROXY=127.0.0.1", NULL};
  kcr_error_t err;
  json_t *r;
  (void)state;
  proxy_start(&pc);
  snprintf(extra, sizeof(extra), "    proxy-url: %s\n", pc.proxy_url);
  snprintf(origin, sizeof(origin), "http://127.0.0.1:%d", kcr_test_http_port(pc.f.server));
  assert_int_equal(setenv("NO_PROXY", "127.0.0.1", 1), 0);
  assert_int_equal(setenv("no_proxy", "127.0.0.1", 1), 0);
  kcr_error_clear(&err);
  assert_int_equal(load(&pc.f, origin, extra, NULL, (char *const *)env, NULL, &err), 0);
  r = get_echo(&pc.f);
  unsetenv("NO_PROXY");
  unsetenv("no_proxy");
  assert_non_null(strstr(json_string_value(json_object_get(r, "path")), "http://127.0.0.1:"));
  json_decref(r);
  assert_int_equal(kcr_test_http_requests(pc.proxy), 1);
  assert_int_equal(kcr_test_http_requests(pc.f.server), 0);
  proxy_stop(&pc);
}

/* A proxy scheme Go's transport cannot use is refused at create. */
static void test_proxy_unsupported_scheme_refused(void **state) {
  proxy_case pc;
  const char *env[] = {"HTTP_PROXY=ftp://proxy.corp:21", NULL};
  kcr_error_t err;
  (void)state;
  proxy_start(&pc);
  kcr_error_clear(&err);
  assert_int_equal(load(&pc.f, pc.origin, NULL, NULL, (char *const *)env, NULL, &err), KCR_ECONFIG);
  assert_null(strstr(err.message, "proxy.corp"));
  proxy_stop(&pc);
}

/* ---- warnings ---- */

static atomic_int warn_calls;

/* warn_handler: answers with Warning headers; /retry says 429 (with a warning
 * of its own) once first; watches stream two events. */
static void warn_handler(const kcr_test_http_request *req, kcr_test_http_response *resp,
                         void *data) {
  (void)data;
  if (strstr(req->path, "watch=true")) {
    snprintf(resp->headers, sizeof(resp->headers),
             "Warning: 299 - \"watching a deprecated API\"\r\n");
    resp->body = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{"
                 "\"name\":\"a\",\"resourceVersion\":\"1\"}}}\n"
                 "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{"
                 "\"name\":\"b\",\"resourceVersion\":\"2\"}}}\n";
    resp->chunk_size = 64;
    return;
  }
  if (strstr(req->path, "/retry") && atomic_fetch_add(&warn_calls, 1) == 0) {
    resp->status = 429;
    snprintf(resp->headers, sizeof(resp->headers),
             "Retry-After: 0\r\nWarning: 299 - \"from the attempt that was retried\"\r\n");
    resp->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":429}";
    return;
  }
  snprintf(resp->headers, sizeof(resp->headers),
           "Warning: 299 - \"v1beta1 is deprecated\", 299 - \"say \\\"hi\\\"\"\r\n"
           "Warning: 199 kube-apiserver \"not a 299\"\r\n");
  resp->body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"w\"}}";
}

/* seen: what a warning handler was given. */
typedef struct seen {
  pthread_mutex_t mu;
  int n;
  int code[16];
  char text[16][64];
  char method[16];
  char path[128];
  pthread_t thread[16];
  int events_before[16]; /* events a watch had delivered when the warning came */
  int events;
} seen;

static void on_warning(const kcr_warning *w, const char *method, const char *path, void *data) {
  seen *s = data;
  pthread_mutex_lock(&s->mu);
  if (s->n < 16) {
    s->code[s->n] = w->code;
    snprintf(s->text[s->n], sizeof(s->text[0]), "%s", w->text);
    s->thread[s->n] = pthread_self();
    s->events_before[s->n] = s->events;
    snprintf(s->method, sizeof(s->method), "%s", method);
    snprintf(s->path, sizeof(s->path), "%s", path);
    s->n++;
  }
  pthread_mutex_unlock(&s->mu);
}

/* log_text collects the lines of the logger "KubeAPIWarningLogger". */
static char log_text[4096];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_log(const kcr_log_record *rec, void *data) {
  size_t len;
  (void)data;
  if (!rec->logger || strcmp(rec->logger, "KubeAPIWarningLogger") != 0)
    return;
  pthread_mutex_lock(&log_mu);
  len = strlen(log_text);
  snprintf(log_text + len, sizeof(log_text) - len, "%s %s\n", kcr_log_level_name(rec->level),
           rec->msg);
  pthread_mutex_unlock(&log_mu);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static void do_get(fixture *f, const char *path, kcr_response *resp) {
  kcr_request req = {0};
  kcr_error_t err;
  req.method = "GET";
  req.path = path;
  kcr_error_clear(&err);
  if (kcr_client_do(f->client, &req, resp, &err) != 0)
    fail_msg("%s: %s", path, err.message);
}

/* start_seen starts a client whose warnings go to on_warning(s), with mode. */
static void start_seen(fixture *f, seen *s, kcr_warning_mode mode) {
  kcr_client_options o = {0};
  kcr_error_t err;
  o.warning_handler = on_warning;
  o.warning_data = s;
  o.warnings = mode;
  kcr_error_clear(&err);
  if (start(f, warn_handler, NULL, &o, &err) != 0)
    fail_msg("start: %s", err.message);
}

/* Every warning of the answer, in order, reaches the handler on the caller's
 * thread with the request's method and path, and the response. */
static void test_warnings_handler_and_response(void **state) {
  fixture f;
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  kcr_response resp;
  kcr_error_t err;
  (void)state;
  start_seen(&f, &s, KCR_WARNINGS_DEDUPLICATE);
  kcr_error_clear(&err);
  do_get(&f, "/api/v1/namespaces/default/configmaps/w", &resp);
  assert_int_equal(resp.nwarnings, 3);
  assert_int_equal(resp.warnings[0].code, 299);
  assert_string_equal(resp.warnings[0].agent, "-");
  assert_string_equal(resp.warnings[0].text, "v1beta1 is deprecated");
  assert_string_equal(resp.warnings[1].text, "say \"hi\"");
  assert_int_equal(resp.warnings[2].code, 199);
  assert_string_equal(resp.warnings[2].agent, "kube-apiserver");
  kcr_response_free(&resp);
  assert_null(resp.warnings);
  assert_int_equal(s.n, 3);
  assert_string_equal(s.text[0], "v1beta1 is deprecated");
  assert_string_equal(s.text[1], "say \"hi\"");
  assert_int_equal(s.code[2], 199);
  assert_string_equal(s.method, "GET");
  assert_string_equal(s.path, "/api/v1/namespaces/default/configmaps/w");
  for (int i = 0; i < 3; i++)
    assert_true(pthread_equal(s.thread[i], pthread_self()));
  /* a verb's answer goes to the handler too */
  {
    static const kcr_gvr cms = {"", "v1", "configmaps"};
    json_t *obj = NULL;
    assert_int_equal(kcr_client_get(f.client, &cms, "default", "w", NULL, &obj, &err), 0);
    json_decref(obj);
    assert_int_equal(s.n, 6);
  }
  stop(&f);
}

/* run_logged makes three requests with mode and returns what was logged. */
static void run_logged(kcr_warning_mode mode) {
  fixture f;
  kcr_client_options o = {0};
  kcr_response resp;
  kcr_error_t err;
  o.warnings = mode;
  log_text[0] = '\0';
  kcr_log_set_handler(on_log, NULL);
  kcr_error_clear(&err);
  assert_int_equal(start(&f, warn_handler, NULL, &o, &err), 0);
  for (int i = 0; i < 3; i++) {
    do_get(&f, "/api/v1/namespaces/default/configmaps/w", &resp);
    assert_int_equal(resp.nwarnings, 3); /* the response has them whatever the mode */
    kcr_response_free(&resp);
  }
  stop(&f);
  kcr_log_set_handler(NULL, NULL);
}

/* By default each distinct 299 text is logged once per client, at INFO, under
 * KubeAPIWarningLogger; other codes are not logged. */
static void test_warnings_logged_once_by_default(void **state) {
  (void)state;
  run_logged(KCR_WARNINGS_DEDUPLICATE);
  assert_int_equal(count(log_text, "info v1beta1 is deprecated\n"), 1);
  assert_int_equal(count(log_text, "info say \"hi\"\n"), 1);
  assert_int_equal(count(log_text, "not a 299"), 0);
  /* a new client remembers nothing of the last one's */
  run_logged(KCR_WARNINGS_DEDUPLICATE);
  assert_int_equal(count(log_text, "v1beta1 is deprecated"), 1);
}

static void test_warnings_log_all_and_off(void **state) {
  (void)state;
  run_logged(KCR_WARNINGS_LOG_ALL);
  assert_int_equal(count(log_text, "info v1beta1 is deprecated\n"), 3);
  assert_int_equal(count(log_text, "not a 299"), 0);
  run_logged(KCR_WARNINGS_OFF);
  assert_string_equal(log_text, "");
}

/* KCR_WARNINGS_OFF silences a handler too. */
static void test_warnings_off_silences_handler(void **state) {
  fixture f;
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  kcr_response resp;
  kcr_error_t err;
  (void)state;
  start_seen(&f, &s, KCR_WARNINGS_OFF);
  kcr_error_clear(&err);
  do_get(&f, "/api/v1/namespaces/default/configmaps/w", &resp);
  assert_int_equal(resp.nwarnings, 3);
  kcr_response_free(&resp);
  assert_int_equal(s.n, 0);
  stop(&f);
}

/* The warnings of an attempt that was retried are dropped, as client-go only
 * handles the final answer's. */
static void test_warnings_of_retried_attempt_dropped(void **state) {
  fixture f;
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  kcr_response resp;
  kcr_error_t err;
  (void)state;
  atomic_store(&warn_calls, 0);
  start_seen(&f, &s, KCR_WARNINGS_DEDUPLICATE);
  kcr_error_clear(&err);
  do_get(&f, "/api/v1/namespaces/default/configmaps/retry", &resp);
  assert_int_equal(atomic_load(&warn_calls), 2);
  assert_int_equal(resp.nwarnings, 3);
  kcr_response_free(&resp);
  assert_int_equal(s.n, 3);
  for (int i = 0; i < s.n; i++)
    assert_null(strstr(s.text[i], "retried"));
  stop(&f);
}

static int count_event(const kcr_watch_event *ev, void *data) {
  seen *s = data;
  json_decref(ev->object);
  pthread_mutex_lock(&s->mu);
  s->events++;
  pthread_mutex_unlock(&s->mu);
  return 0;
}

/* A watch's warnings reach the handler on the thread in kcr_watch_run, before
 * its first event. */
static void test_warnings_of_watch(void **state) {
  static const kcr_gvr cms = {"", "v1", "configmaps"};
  fixture f;
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  kcr_watch_t *w = NULL;
  kcr_error_t err;
  (void)state;
  start_seen(&f, &s, KCR_WARNINGS_DEDUPLICATE);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_watch(f.client, &cms, "default", NULL, &w, &err), 0);
  assert_int_equal(kcr_watch_run(w, count_event, &s, &err), 0);
  kcr_watch_destroy(w);
  assert_int_equal(s.events, 2);
  assert_int_equal(s.n, 1);
  assert_string_equal(s.text[0], "watching a deprecated API");
  assert_string_equal(s.method, "WATCH");
  assert_non_null(strstr(s.path, "watch=true"));
  assert_int_equal(s.events_before[0], 0);
  assert_true(pthread_equal(s.thread[0], pthread_self()));
  stop(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_impersonate_extra_key_escape),
      cmocka_unit_test(test_impersonate_extra_headers_sent),
      cmocka_unit_test(test_impersonate_control_character_refused),
      cmocka_unit_test(test_proxy_from_environment_used),
      cmocka_unit_test(test_proxy_no_proxy_bypasses),
      cmocka_unit_test(test_proxy_loopback_direct),
      cmocka_unit_test(test_proxy_process_environment_not_read_by_libcurl),
      cmocka_unit_test(test_proxy_url_used_despite_no_proxy),
      cmocka_unit_test(test_proxy_unsupported_scheme_refused),
      cmocka_unit_test(test_warnings_handler_and_response),
      cmocka_unit_test(test_warnings_logged_once_by_default),
      cmocka_unit_test(test_warnings_log_all_and_off),
      cmocka_unit_test(test_warnings_off_silences_handler),
      cmocka_unit_test(test_warnings_of_retried_attempt_dropped),
      cmocka_unit_test(test_warnings_of_watch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
