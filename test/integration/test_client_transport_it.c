/* SPDX-License-Identifier: MIT */
/*
 * test_client_transport_it.c: what the client adds around its requests,
 * against the real kube-apiserver of the local control plane:
 *   - impersonation with as-user-extra, read back from a SelfSubjectReview
 *     (authentication.k8s.io/v1), which echoes the user the server saw;
 *   - the API server's Warning header, provoked with fieldValidation=Warn and
 *     an unknown field, through a handler, the response and the default log;
 *   - HTTPS_PROXY through a CONNECT proxy of the test's own (loopback, a port
 *     the kernel picks), NO_PROXY and the loopback exemption bypassing it, and
 *     a kubeconfig proxy-url;
 *   - client certificate and CA files replaced on disk: new requests present
 *     the new certificate (the identity changes from kcr-admin to
 *     system:kube-controller-manager, both signed by the cluster's CA) and
 *     verify with the new CA.
 * The kubeconfigs it writes use the cluster's pki/ files (scripts/cluster.sh).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "config/config_internal.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/log.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static kcr_testenv_t *env;
static kcr_rest_config_t *admin_config;
static kcr_client_t *admin;
static char ns[64];
static char pki[512];
static char tmp[64];
static int api_port;

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_connect(&env, &admin_config, &admin) != 0)
    return -1;
  snprintf(pki, sizeof(pki), "%s/pki", kcr_testenv_dir(env));
  api_port = kcr_testenv_apiserver_port(env);
  snprintf(tmp, sizeof(tmp), "/tmp/kcr-it-transport-XXXXXX");
  if (api_port <= 0 || !mkdtemp(tmp))
    return -1;
  return kcr_it_create_namespace(admin, "kcr-it-transport", ns, sizeof(ns));
}

static int group_teardown(void **state) {
  char cmd[128];
  (void)state;
  kcr_it_disconnect(env, admin_config, admin, ns);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp);
  return 0;
}

/* ---- files ---- */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  char *buf;
  long n;
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  n = ftell(f);
  rewind(f);
  buf = calloc(1, (size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return buf;
}

/* put writes text into tmp/name through a rename, as a Secret update does. */
static void put(const char *name, const char *text) {
  char t[256], path[256];
  FILE *f;
  snprintf(t, sizeof(t), "%s/.%s.tmp", tmp, name);
  snprintf(path, sizeof(path), "%s/%s", tmp, name);
  f = fopen(t, "w");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(rename(t, path), 0);
}

/* copy_pki copies pki/<from> into tmp/<to>. */
static void copy_pki(const char *from, const char *to) {
  char path[600];
  char *text;
  snprintf(path, sizeof(path), "%s/%s", pki, from);
  text = slurp(path);
  put(to, text);
  free(text);
}

/*
 * config_for writes tmp/<name> (a kubeconfig for server, the cluster CA file
 * ca_path, the client certificate and key files given, plus extra cluster and
 * user lines, each indented four spaces) and loads it with env_vars as the
 * environment.
 */
static kcr_rest_config_t *config_for(const char *name, const char *server, const char *ca_path,
                                     const char *cert, const char *key, const char *cluster_extra,
                                     const char *user_extra, const char *const *env_vars) {
  char text[4096], path[256];
  kcr_config_options o;
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err;
  snprintf(text, sizeof(text),
           "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
           "clusters:\n- name: c\n  cluster:\n    server: %s\n    certificate-authority: %s\n%s"
           "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
           "users:\n- name: u\n  user:\n    client-certificate: %s\n    client-key: %s\n%s",
           server, ca_path, cluster_extra ? cluster_extra : "", cert, key,
           user_extra ? user_extra : "");
  put(name, text);
  snprintf(path, sizeof(path), "%s/%s", tmp, name);
  memset(&o, 0, sizeof(o));
  o.env = (char *const *)env_vars; /* only read */
  kcr_error_clear(&err);
  if (kcr_rest_config_from_kubeconfig(path, NULL, &o, &cfg, &err) != 0)
    fail_msg("kubeconfig %s: %s", name, err.message);
  return cfg;
}

/* admin_config_for is config_for with the admin's certificate and the cluster CA. */
static kcr_rest_config_t *admin_config_for(const char *name, const char *server,
                                           const char *cluster_extra, const char *user_extra,
                                           const char *const *env_vars) {
  char ca[600], cert[600], key[600];
  snprintf(ca, sizeof(ca), "%s/ca.crt", pki);
  snprintf(cert, sizeof(cert), "%s/admin.crt", pki);
  snprintf(key, sizeof(key), "%s/admin.key", pki);
  return config_for(name, server, ca, cert, key, cluster_extra, user_extra, env_vars);
}

static kcr_client_t *client_for(kcr_rest_config_t *cfg, const kcr_client_options *extra) {
  kcr_client_options o;
  kcr_client_t *c = NULL;
  kcr_error_t err;
  if (extra)
    o = *extra;
  else
    memset(&o, 0, sizeof(o));
  o.config = cfg;
  kcr_error_clear(&err);
  if (kcr_client_create(&o, &c, &err) != 0)
    fail_msg("client: %s", err.message);
  return c;
}

/* ---- SelfSubjectReview: who the server thinks we are ---- */

/* whoami creates a SelfSubjectReview; returns its status.userInfo (new), or
 * NULL with *rc set when the request failed. */
static json_t *whoami(kcr_client_t *c, int *rc, kcr_error_t *err) {
  static const char body[] =
      "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";
  kcr_request req = {0};
  kcr_response resp;
  json_t *j, *info;
  req.method = "POST";
  req.path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
  req.content_type = "application/json";
  req.body = body;
  req.body_len = sizeof(body) - 1;
  req.timeout_ns = 10 * KCR_NSEC_PER_SEC;
  kcr_error_clear(err);
  *rc = kcr_client_do(c, &req, &resp, err);
  if (*rc != 0) {
    kcr_response_free(&resp);
    return NULL;
  }
  j = json_loads(resp.body, 0, NULL);
  kcr_response_free(&resp);
  assert_non_null(j);
  info = json_incref(json_object_get(json_object_get(j, "status"), "userInfo"));
  json_decref(j);
  assert_non_null(info);
  return info;
}

static json_t *must_whoami(kcr_client_t *c) {
  kcr_error_t err;
  int rc;
  json_t *info = whoami(c, &rc, &err);
  if (!info)
    fail_msg("selfsubjectreview: %s (%s)", err.message, kcr_err_name(rc));
  return info;
}

static const char *username(json_t *info) {
  return json_string_value(json_object_get(info, "username"));
}

static bool has_string(json_t *arr, const char *s) {
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v) {
    if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
      return true;
  }
  return false;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- impersonation ---- */

/* The user the API server sees carries the kubeconfig's extras, one list per
 * key (the key lower-cased by the server, after it undid the escaping). */
static void test_it_impersonate_extra(void **state) {
  char server[64];
  kcr_rest_config_t *cfg;
  kcr_client_t *c;
  json_t *info, *extra;
  (void)state;
  snprintf(server, sizeof(server), "https://127.0.0.1:%d", api_port);
  cfg = admin_config_for("kubeconfig.impersonate", server, NULL,
                         "    as: kcr-it-someone\n"
                         "    as-groups: [kcr-it-group]\n"
                         "    as-user-extra:\n"
                         "      Example.com/Team Name: [blue, green]\n"
                         "      scopes: [view]\n",
                         NULL);
  c = client_for(cfg, NULL);
  info = must_whoami(c);
  assert_string_equal(username(info), "kcr-it-someone");
  assert_true(has_string(json_object_get(info, "groups"), "kcr-it-group"));
  extra = json_object_get(info, "extra");
  if (!json_is_object(extra)) {
    char *dump = json_dumps(info, JSON_COMPACT);
    fail_msg("no extra in userInfo: %s", dump);
  }
  assert_int_equal(json_array_size(json_object_get(extra, "example.com/team name")), 2);
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(extra, "example.com/team name"), 0)),
      "blue");
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(extra, "example.com/team name"), 1)),
      "green");
  assert_true(has_string(json_object_get(extra, "scopes"), "view"));
  json_decref(info);
  kcr_client_destroy(c);
  kcr_rest_config_unref(cfg);
}

/* ---- warnings ---- */

typedef struct warnings_seen {
  pthread_mutex_t mu;
  int n;
  char text[8][256];
  char method[16];
} warnings_seen;

static void on_warning(const kcr_warning *w, const char *method, const char *path, void *data) {
  warnings_seen *s = data;
  (void)path;
  pthread_mutex_lock(&s->mu);
  if (s->n < 8 && w->code == 299)
    snprintf(s->text[s->n++], sizeof(s->text[0]), "%s", w->text);
  snprintf(s->method, sizeof(s->method), "%s", method);
  pthread_mutex_unlock(&s->mu);
}

/* create_with_unknown_field POSTs a ConfigMap with a field the schema does not
 * know, asking the server to warn about it (fieldValidation=Warn). */
static void create_with_unknown_field(kcr_client_t *c, const char *name, kcr_response *resp) {
  char path[256], body[512];
  kcr_request req = {0};
  kcr_error_t err;
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps?fieldValidation=Warn", ns);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
           "\"data\":{\"a\":\"1\"},\"kcrBogusField\":true}",
           name);
  req.method = "POST";
  req.path = path;
  req.content_type = "application/json";
  req.body = body;
  req.body_len = strlen(body);
  kcr_error_clear(&err);
  if (kcr_client_do(c, &req, resp, &err) != 0)
    fail_msg("create %s: %s", name, err.message);
}

static char log_text[8192];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_log(const kcr_log_record *rec, void *data) {
  size_t len;
  (void)data;
  if (!rec->logger || strcmp(rec->logger, "KubeAPIWarningLogger") != 0)
    return;
  pthread_mutex_lock(&log_mu);
  len = strlen(log_text);
  snprintf(log_text + len, sizeof(log_text) - len, "%s\n", rec->msg);
  pthread_mutex_unlock(&log_mu);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

/* The server's warning reaches the handler and the response; by default it is
 * logged once however often it comes. */
static void test_it_warning_header(void **state) {
  warnings_seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  kcr_client_options o = {0};
  kcr_client_t *c;
  kcr_response resp;
  (void)state;
  o.warning_handler = on_warning;
  o.warning_data = &s;
  c = client_for(admin_config, &o);
  create_with_unknown_field(c, "warned-1", &resp);
  assert_int_equal(resp.status, 201);
  assert_true(resp.nwarnings >= 1);
  assert_int_equal(resp.warnings[0].code, 299);
  assert_string_equal(resp.warnings[0].agent, "-");
  assert_non_null(strstr(resp.warnings[0].text, "unknown field \"kcrBogusField\""));
  kcr_response_free(&resp);
  assert_int_equal(s.n, 1);
  assert_non_null(strstr(s.text[0], "unknown field \"kcrBogusField\""));
  assert_string_equal(s.method, "POST");
  kcr_client_destroy(c);

  /* the default: logged once per client, however often it comes */
  log_text[0] = '\0';
  kcr_log_set_handler(on_log, NULL);
  c = client_for(admin_config, NULL);
  create_with_unknown_field(c, "warned-2", &resp);
  kcr_response_free(&resp);
  create_with_unknown_field(c, "warned-3", &resp);
  kcr_response_free(&resp);
  kcr_client_destroy(c);
  kcr_log_set_handler(NULL, NULL);
  assert_int_equal(count(log_text, "unknown field \"kcrBogusField\""), 1);
}

/* ---- proxy ---- */

/*
 * A CONNECT proxy on 127.0.0.1 and a port the kernel picks: each connection
 * reads one CONNECT request, records its target, connects there and then
 * copies bytes both ways until either side closes.
 */
typedef struct proxy {
  int fd;
  int port;
  pthread_t acceptor;
  atomic_int stopping;
  atomic_int connects;
  pthread_mutex_t mu;
  char last_target[128]; /* protected by mu */
} proxy_t;

typedef struct tunnel {
  proxy_t *p;
  int fd;
} tunnel_t;

static int dial(const char *host, const char *port) {
  struct addrinfo hints = {0}, *res = NULL;
  int fd = -1;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, &res) != 0)
    return -1;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  return fd;
}

static int send_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void *tunnel_main(void *arg) {
  tunnel_t *t = arg;
  char head[4096], host[128], port[16];
  size_t len = 0;
  int up = -1;
  while (len < sizeof(head) - 1) {
    ssize_t r = recv(t->fd, head + len, sizeof(head) - 1 - len, 0);
    if (r <= 0)
      goto out;
    len += (size_t)r;
    head[len] = '\0';
    if (strstr(head, "\r\n\r\n"))
      break;
  }
  if (sscanf(head, "CONNECT %127s", host) != 1)
    goto out;
  pthread_mutex_lock(&t->p->mu);
  snprintf(t->p->last_target, sizeof(t->p->last_target), "%s", host);
  pthread_mutex_unlock(&t->p->mu);
  atomic_fetch_add(&t->p->connects, 1);
  {
    char *colon = strrchr(host, ':');
    if (!colon)
      goto out;
    snprintf(port, sizeof(port), "%s", colon + 1);
    *colon = '\0';
    if (host[0] == '[') {
      memmove(host, host + 1, strlen(host));
      host[strlen(host) - 1] = '\0';
    }
  }
  up = dial(host, port);
  if (up < 0) {
    send_all(t->fd, "HTTP/1.1 502 Bad Gateway\r\n\r\n", 28);
    goto out;
  }
  if (send_all(t->fd, "HTTP/1.1 200 Connection established\r\n\r\n", 39) != 0)
    goto out;
  for (;;) {
    struct pollfd fds[2] = {{t->fd, POLLIN, 0}, {up, POLLIN, 0}};
    char buf[16384];
    if (atomic_load(&t->p->stopping))
      break;
    if (poll(fds, 2, 200) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; i++) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t r = recv(fds[i].fd, buf, sizeof(buf), 0);
        if (r <= 0 || send_all(fds[1 - i].fd, buf, (size_t)r) != 0)
          goto out;
      }
    }
  }
out:
  if (up >= 0)
    close(up);
  close(t->fd);
  free(t);
  return NULL;
}

static void *accept_main(void *arg) {
  proxy_t *p = arg;
  while (!atomic_load(&p->stopping)) {
    struct pollfd pfd = {p->fd, POLLIN, 0};
    int c;
    pthread_t th;
    tunnel_t *t;
    if (poll(&pfd, 1, 100) <= 0)
      continue;
    c = accept(p->fd, NULL, NULL);
    if (c < 0)
      continue;
    t = calloc(1, sizeof(*t));
    if (!t) {
      close(c);
      continue;
    }
    t->p = p;
    t->fd = c;
    if (pthread_create(&th, NULL, tunnel_main, t) != 0) {
      close(c);
      free(t);
      continue;
    }
    pthread_detach(th);
  }
  return NULL;
}

static void proxy_start(proxy_t *p) {
  struct sockaddr_in a = {0};
  socklen_t al = sizeof(a);
  memset(p, 0, sizeof(*p));
  pthread_mutex_init(&p->mu, NULL);
  p->fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(p->fd >= 0);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0; /* the kernel picks */
  assert_int_equal(bind(p->fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(p->fd, 16), 0);
  assert_int_equal(getsockname(p->fd, (struct sockaddr *)&a, &al), 0);
  p->port = ntohs(a.sin_port);
  assert_int_equal(pthread_create(&p->acceptor, NULL, accept_main, p), 0);
}

/* proxy_stop stops accepting; tunnels end when their client (destroyed first)
 * closes, or within 200 ms of stopping. */
static void proxy_stop(proxy_t *p) {
  atomic_store(&p->stopping, 1);
  pthread_join(p->acceptor, NULL);
  close(p->fd);
  sleep_ms(300);
}

/* list_configmaps lists the namespace's ConfigMaps through c. */
static void list_configmaps(kcr_client_t *c) {
  static const kcr_gvr cms = {"", "v1", "configmaps"};
  json_t *list = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  if (kcr_client_list(c, &cms, ns, NULL, &list, &err) != 0)
    fail_msg("list: %s", err.message);
  assert_true(json_is_array(json_object_get(list, "items")));
  json_decref(list);
}

/*
 * HTTPS_PROXY carries the requests, as a CONNECT tunnel to the server's real
 * address (0.0.0.0: no loopback address to Go, reached over lo on Linux; the
 * certificate is verified for tls-server-name localhost); NO_PROXY naming the
 * host sends them direct; a loopback server is never proxied.
 */
static void test_it_proxy_from_environment(void **state) {
  proxy_t p;
  char server[64], loopback[64], var[64], want[64];
  const char *via[] = {var, NULL};
  const char *bypass[] = {var, "NO_PROXY=example.com,0.0.0.0", NULL};
  kcr_rest_config_t *cfg;
  kcr_client_t *c;
  (void)state;
  proxy_start(&p);
  snprintf(var, sizeof(var), "HTTPS_PROXY=http://127.0.0.1:%d", p.port);
  snprintf(server, sizeof(server), "https://0.0.0.0:%d", api_port);
  snprintf(loopback, sizeof(loopback), "https://127.0.0.1:%d", api_port);

  cfg = admin_config_for("kubeconfig.proxy", server, "    tls-server-name: localhost\n", NULL, via);
  c = client_for(cfg, NULL);
  list_configmaps(c);
  list_configmaps(c);
  assert_true(atomic_load(&p.connects) >= 1);
  snprintf(want, sizeof(want), "0.0.0.0:%d", api_port);
  pthread_mutex_lock(&p.mu);
  assert_string_equal(p.last_target, want);
  pthread_mutex_unlock(&p.mu);
  kcr_client_destroy(c);
  kcr_rest_config_unref(cfg);

  atomic_store(&p.connects, 0);
  cfg = admin_config_for("kubeconfig.noproxy", server, "    tls-server-name: localhost\n", NULL,
                         bypass);
  c = client_for(cfg, NULL);
  list_configmaps(c);
  assert_int_equal(atomic_load(&p.connects), 0);
  kcr_client_destroy(c);
  kcr_rest_config_unref(cfg);

  cfg = admin_config_for("kubeconfig.loopback", loopback, NULL, NULL, via);
  c = client_for(cfg, NULL);
  list_configmaps(c);
  assert_int_equal(atomic_load(&p.connects), 0);
  kcr_client_destroy(c);
  kcr_rest_config_unref(cfg);
  proxy_stop(&p);
}

/* A kubeconfig proxy-url carries every request, a loopback server's too. */
static void test_it_proxy_url(void **state) {
  proxy_t p;
  char server[64], extra[96], want[64];
  const char *no_env[] = {NULL};
  kcr_rest_config_t *cfg;
  kcr_client_t *c;
  (void)state;
  proxy_start(&p);
  snprintf(server, sizeof(server), "https://127.0.0.1:%d", api_port);
  snprintf(extra, sizeof(extra), "    proxy-url: http://127.0.0.1:%d\n", p.port);
  cfg = admin_config_for("kubeconfig.proxyurl", server, extra, NULL, no_env);
  c = client_for(cfg, NULL);
  list_configmaps(c);
  assert_true(atomic_load(&p.connects) >= 1);
  snprintf(want, sizeof(want), "127.0.0.1:%d", api_port);
  pthread_mutex_lock(&p.mu);
  assert_string_equal(p.last_target, want);
  pthread_mutex_unlock(&p.mu);
  kcr_client_destroy(c);
  kcr_rest_config_unref(cfg);
  proxy_stop(&p);
}

/* ---- certificate and CA files ---- */

/* wait_user polls a SelfSubjectReview until the server sees want, for up to
 * timeout_ms. */
static void wait_user(kcr_client_t *c, const char *want, int timeout_ms) {
  char last[128] = "";
  for (int waited = 0; waited <= timeout_ms; waited += 200) {
    kcr_error_t err;
    int rc;
    json_t *info = whoami(c, &rc, &err);
    if (info) {
      snprintf(last, sizeof(last), "%s", username(info));
      json_decref(info);
      if (strcmp(last, want) == 0)
        return;
    } else {
      snprintf(last, sizeof(last), "error %s", kcr_err_name(rc));
    }
    sleep_ms(200);
  }
  fail_msg("the server still sees \"%s\", want \"%s\"", last, want);
}

/* wait_tls_failure polls until a request fails TLS verification. */
static void wait_tls_failure(kcr_client_t *c, int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 200) {
    kcr_error_t err;
    int rc;
    json_t *info = whoami(c, &rc, &err);
    if (!info && rc == KCR_ETLS)
      return;
    json_decref(info);
    sleep_ms(200);
  }
  fail_msg("requests still verify the server with the old CA");
}

/*
 * The client certificate and key files are replaced (kcr-admin's by
 * kube-controller-manager's, signed by the same CA): new requests present the
 * new certificate. The CA file is replaced by an unrelated CA: new
 * connections fail verification; put back, they succeed again. The re-read
 * period is cut to a second (config_internal.h) so the test does not wait a
 * minute for each step.
 */
static void test_it_certificate_files_reloaded(void **state) {
  char server[64], ca[256], cert[256], key[256];
  kcr_rest_config_t *cfg;
  kcr_client_t *c;
  json_t *info;
  (void)state;
  copy_pki("admin.crt", "tls.crt");
  copy_pki("admin.key", "tls.key");
  copy_pki("ca.crt", "ca.crt");
  snprintf(server, sizeof(server), "https://127.0.0.1:%d", api_port);
  snprintf(ca, sizeof(ca), "%s/ca.crt", tmp);
  snprintf(cert, sizeof(cert), "%s/tls.crt", tmp);
  snprintf(key, sizeof(key), "%s/tls.key", tmp);
  cfg = config_for("kubeconfig.reload", server, ca, cert, key, NULL, NULL, NULL);
  kcr__rest_config_set_tls_period(cfg, KCR_NSEC_PER_SEC);
  c = client_for(cfg, NULL);
  info = must_whoami(c);
  assert_string_equal(username(info), "kcr-admin");
  json_decref(info);

  copy_pki("kube-controller-manager.key", "tls.key");
  copy_pki("kube-controller-manager.crt", "tls.crt");
  wait_user(c, "system:kube-controller-manager", 20000);

  /* a CA file whose certificate did not sign the server's (the admin's client
   * certificate; not the server's own either, which libcurl's partial-chain
   * verification would accept) */
  copy_pki("admin.crt", "ca.crt");
  wait_tls_failure(c, 20000);
  copy_pki("ca.crt", "ca.crt");
  wait_user(c, "system:kube-controller-manager", 20000);

  kcr_client_destroy(c);
  kcr_rest_config_unref(cfg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_it_impersonate_extra),
      cmocka_unit_test(test_it_warning_header),
      cmocka_unit_test(test_it_proxy_from_environment),
      cmocka_unit_test(test_it_proxy_url),
      cmocka_unit_test(test_it_certificate_files_reloaded),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
