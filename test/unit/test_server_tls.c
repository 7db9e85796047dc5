/* SPDX-License-Identifier: MIT */
/*
 * test_server_tls.c: the server's HTTPS (kcr/server.h, options.tls) against an
 * OpenSSL client on 127.0.0.1:0: protocol versions, the self-signed
 * certificate, reloading a certificate directory, a bad, expired or not yet
 * valid file kept out, large replies, keep-alive, garbage handshakes and the
 * /metrics auth hook.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kcr/clock.h"
#include "kcr/loop.h"
#include "kcr/server.h"
#include "server/server_internal.h"
#include "testutil.h"

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int dial(int port) {
  struct sockaddr_in a = {0};
  struct timeval tv = {5, 0};
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  /* Every blocking read in these tests gives up after 5 s. */
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return fd;
}

/* tcli: a blocking TLS client. */
typedef struct tcli {
  int fd;
  SSL_CTX *ctx;
  SSL *ssl;
} tcli;

/* tcli_open connects and handshakes with versions [minv, maxv]; 0 or -1. */
static int tcli_open(tcli *t, int port, int minv, int maxv) {
  static const unsigned char alpn[] = "\x08http/1.1";
  t->fd = dial(port);
  t->ctx = SSL_CTX_new(TLS_client_method());
  assert_non_null(t->ctx);
  /* Security level 0 lets this client offer TLS 1.0/1.1: the server, not the
   * client, must be what refuses them. */
  SSL_CTX_set_security_level(t->ctx, 0);
  if (maxv < TLS1_2_VERSION)
    SSL_CTX_set_cipher_list(t->ctx, "DEFAULT:@SECLEVEL=0");
  SSL_CTX_set_min_proto_version(t->ctx, minv);
  SSL_CTX_set_max_proto_version(t->ctx, maxv);
  t->ssl = SSL_new(t->ctx);
  SSL_set_fd(t->ssl, t->fd);
  SSL_set_tlsext_host_name(t->ssl, "localhost");
  SSL_set_alpn_protos(t->ssl, alpn, sizeof(alpn) - 1);
  if (SSL_connect(t->ssl) != 1) {
    ERR_clear_error();
    return -1;
  }
  return 0;
}

static void tcli_close(tcli *t) {
  SSL_free(t->ssl);
  SSL_CTX_free(t->ctx);
  close(t->fd);
  ERR_clear_error();
}

static void tcli_send(tcli *t, const char *s) {
  assert_int_equal(SSL_write(t->ssl, s, (int)strlen(s)), (int)strlen(s));
}

/* tcli_response reads one answer (head + Content-Length body). New string. */
static char *tcli_response(tcli *t) {
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    char *he;
    int n;
    buf[len] = '\0';
    he = strstr(buf, "\r\n\r\n");
    if (he) {
      char *cl = strstr(buf, "Content-Length: ");
      size_t want = (size_t)(he - buf) + 4 + (cl ? strtoul(cl + 16, NULL, 10) : 0);
      if (len >= want)
        break;
    }
    if (len + 1 >= cap)
      buf = realloc(buf, cap *= 2);
    n = SSL_read(t->ssl, buf + len, (int)(cap - len - 1));
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  ERR_clear_error();
  return buf;
}

/* tls_get makes one request on a new TLS 1.2-1.3 connection; the answer is
 * new, *cn (may be NULL) the peer's subject CN. */
static char *tls_get(int port, const char *path, const char *auth, char *cn, size_t cn_size) {
  tcli t;
  char req[512];
  char *r;
  if (tcli_open(&t, port, TLS1_2_VERSION, TLS1_3_VERSION) != 0) {
    tcli_close(&t);
    return strdup("");
  }
  if (cn) {
    X509 *peer = SSL_get1_peer_certificate(t.ssl);
    assert_non_null(peer);
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, (int)cn_size);
    X509_free(peer);
  }
  snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n%s%s%sConnection: close\r\n\r\n", path,
           auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "");
  tcli_send(&t, req);
  r = tcli_response(&t);
  tcli_close(&t);
  return r;
}

/* warm_up makes one handshake whose outcome does not matter: the first in a
 * process initialises OpenSSL's tables, which under valgrind takes longer than
 * the server's 3 s header timeout (that timeout covers the handshake). */
static void warm_up(int port) {
  tcli t;
  (void)tcli_open(&t, port, TLS1_2_VERSION, TLS1_3_VERSION);
  tcli_close(&t);
}

typedef struct fixture {
  kcr_loop_t *loop;
  kcr_server_t *srv;
  kcr_metrics_registry_t *reg;
  int port;
} fixture_t;

static fixture_t *start(kcr_server_options *o) {
  fixture_t *f = calloc(1, sizeof(*f));
  kcr_error_t err = {0};
  assert_int_equal(kcr_loop_create(&f->loop, NULL), 0);
  assert_int_equal(kcr_loop_start(f->loop, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&f->reg, NULL), 0);
  o->loop = f->loop;
  o->metrics = f->reg;
  o->probes = 1;
  o->tls = 1;
  o->bind_address = "127.0.0.1:0";
  if (kcr_server_create(o, &f->srv, &err) != 0)
    fail_msg("kcr_server_create: %s", err.message);
  f->port = kcr_server_port(f->srv);
  assert_true(f->port > 0);
  warm_up(f->port);
  return f;
}

static void stop(fixture_t *f) {
  kcr_server_destroy(f->srv);
  kcr_loop_destroy(f->loop);
  kcr_metrics_registry_destroy(f->reg);
  free(f);
}

static double counter(kcr_metrics_registry_t *reg, const char *name) {
  kcr_metric_t *m = kcr_metrics_find(reg, name);
  return m ? kcr_metric_value(kcr_metric_with(m, NULL, 0)) : -1;
}

static void test_server_tls_versions(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  kcr_server_stats st;
  tcli t;
  X509 *peer;
  char *r;
  const unsigned char *proto;
  unsigned int plen;
  (void)state;

  /* TLS 1.3, and the in-memory certificate names localhost and 127.0.0.1. */
  assert_int_equal(tcli_open(&t, f->port, TLS1_3_VERSION, TLS1_3_VERSION), 0);
  assert_int_equal(SSL_version(t.ssl), TLS1_3_VERSION);
  SSL_get0_alpn_selected(t.ssl, &proto, &plen);
  assert_int_equal(plen, 8);
  assert_memory_equal(proto, "http/1.1", 8);
  peer = SSL_get1_peer_certificate(t.ssl);
  assert_non_null(peer);
  assert_int_equal(X509_check_host(peer, "localhost", 0, 0, NULL), 1);
  assert_int_equal(X509_check_ip_asc(peer, "127.0.0.1", 0), 1);
  X509_free(peer);
  tcli_send(&t, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  r = tcli_response(&t);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK"));
  assert_non_null(strstr(r, "\r\n\r\nok"));
  free(r);
  tcli_close(&t);

  /* TLS 1.2. */
  assert_int_equal(tcli_open(&t, f->port, TLS1_2_VERSION, TLS1_2_VERSION), 0);
  assert_int_equal(SSL_version(t.ssl), TLS1_2_VERSION);
  tcli_send(&t, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  r = tcli_response(&t);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK"));
  free(r);
  tcli_close(&t);

  /* TLS 1.1 and 1.0 are refused, and counted. */
  assert_int_equal(tcli_open(&t, f->port, TLS1_1_VERSION, TLS1_1_VERSION), -1);
  tcli_close(&t);
  assert_int_equal(tcli_open(&t, f->port, TLS1_VERSION, TLS1_VERSION), -1);
  tcli_close(&t);
  kcr_server_get_stats(f->srv, &st);
  assert_true(st.tls_errors >= 2);

  /* Plain HTTP on the HTTPS port is a failed handshake, not an answer. */
  {
    int fd = dial(f->port);
    char buf[256];
    ssize_t n;
    assert_int_equal(write(fd, "GET /healthz HTTP/1.1\r\n\r\n", 25), 25);
    n = read(fd, buf, sizeof(buf));
    assert_true(n <= 0 || memmem(buf, (size_t)n, "HTTP/1.1 200", 12) == NULL);
    close(fd);
  }
  /* The server still serves. */
  r = tls_get(f->port, "/readyz", NULL, NULL, 0);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK"));
  free(r);
  stop(f);
}

/* publish writes key (when non-NULL) or cert into dir/name through a
 * temporary file and a rename, as a Secret update would. */
static void publish(const char *dir, const char *name, EVP_PKEY *key, X509 *cert) {
  char tmp[512], path[512];
  FILE *fp;
  snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
  fp = fopen(tmp, "w");
  assert_non_null(fp);
  if (key)
    assert_int_equal(PEM_write_PrivateKey(fp, key, NULL, NULL, 0, NULL, NULL), 1);
  else
    assert_int_equal(PEM_write_X509(fp, cert), 1);
  fclose(fp);
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  assert_int_equal(rename(tmp, path), 0);
}

/* write_pair_valid writes a certificate with subject CN cn, valid from now +
 * nb_s to now + na_s, into dir. keep_key: sign it with the key already in
 * dir and write only the certificate (one rename: a poll never sees half a
 * pair); else a new key is written first. */
static void write_pair_valid(const char *dir, const char *cn, long nb_s, long na_s, int keep_key) {
  EVP_PKEY *key;
  X509 *cert;
  assert_int_equal(kcr__tls_self_signed(cn, NULL, 0, &key, &cert), 0);
  if (keep_key) {
    char path[512];
    FILE *fp;
    EVP_PKEY_free(key);
    snprintf(path, sizeof(path), "%s/tls.key", dir);
    fp = fopen(path, "r");
    assert_non_null(fp);
    key = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
    fclose(fp);
    assert_non_null(key);
    assert_int_equal(X509_set_pubkey(cert, key), 1);
  }
  assert_non_null(X509_gmtime_adj(X509_getm_notBefore(cert), nb_s));
  assert_non_null(X509_gmtime_adj(X509_getm_notAfter(cert), na_s));
  assert_true(X509_sign(cert, key, EVP_sha256()) > 0);
  if (!keep_key)
    publish(dir, "tls.key", key, NULL);
  publish(dir, "tls.crt", NULL, cert);
  EVP_PKEY_free(key);
  X509_free(cert);
}

/* write_pair writes a new key and a certificate valid now with subject CN cn
 * into dir. */
static void write_pair(const char *dir, const char *cn) {
  write_pair_valid(dir, cn, -3600, 365L * 24 * 3600, 0);
}

/* remove_dir removes a directory write_pair filled. */
static void remove_dir(const char *dir) {
  char path[512];
  snprintf(path, sizeof(path), "%s/tls.crt", dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/tls.key", dir);
  unlink(path);
  rmdir(dir);
}

/* wait_cn polls until the server presents CN want; 0 once it does. */
static int wait_cn(int port, const char *want, int timeout_ms) {
  int64_t deadline = now_ms() + timeout_ms;
  do {
    char cn[128] = "";
    char *r = tls_get(port, "/healthz", NULL, cn, sizeof(cn));
    free(r);
    if (strcmp(cn, want) == 0)
      return 0;
    usleep(20 * 1000);
  } while (now_ms() < deadline);
  return -1;
}

/* wait_errors polls until certwatcher_read_certificate_errors_total reaches
 * want; 0 once it does. */
static int wait_errors(kcr_metrics_registry_t *reg, double want, int timeout_ms) {
  int64_t deadline = now_ms() + timeout_ms;
  while (counter(reg, "certwatcher_read_certificate_errors_total") < want) {
    if (now_ms() >= deadline)
      return -1;
    usleep(10 * 1000);
  }
  return 0;
}

/* start_watching fills dir (a mkdtemp template) with a pair for CN cn and
 * starts a server on it that polls every 200 ms: long enough that the gap
 * between write_pair's two renames never spans two polls, even under
 * valgrind on a loaded machine. */
static fixture_t *start_watching(char *dir, const char *cn) {
  kcr_server_options o = {0};
  assert_non_null(mkdtemp(dir));
  write_pair(dir, cn);
  o.cert_dir = dir;
  o.cert_poll_interval_ns = 200 * KCR_NSEC_PER_MSEC;
  return start(&o);
}

/* assert_serves: a new connection is answered 200, presenting CN want. */
static void assert_serves(int port, const char *want) {
  char cn[128] = "";
  char *r = tls_get(port, "/healthz", NULL, cn, sizeof(cn));
  assert_string_equal(cn, want);
  assert_non_null(strstr(r, "200 OK"));
  free(r);
}

static void test_server_tls_reload(void **state) {
  char dir[] = "/tmp/kcr-tls-XXXXXX", path[512];
  fixture_t *f;
  kcr_server_stats st;
  FILE *fp;
  (void)state;

  f = start_watching(dir, "first");
  assert_true(counter(f->reg, "certwatcher_read_certificate_total") == 1);
  assert_true(counter(f->reg, "certwatcher_read_certificate_errors_total") == 0);
  assert_serves(f->port, "first");

  /* New files are served without a restart. */
  write_pair(dir, "second");
  assert_int_equal(wait_cn(f->port, "second", 5000), 0);
  assert_true(counter(f->reg, "certwatcher_read_certificate_total") >= 2);
  assert_true(counter(f->reg, "certwatcher_read_certificate_errors_total") == 0);

  /* A certificate file that does not parse is counted, and the old one stays. */
  snprintf(path, sizeof(path), "%s/tls.crt", dir);
  fp = fopen(path, "w");
  assert_non_null(fp);
  fputs("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n", fp);
  fclose(fp);
  assert_int_equal(wait_errors(f->reg, 1, 5000), 0);
  assert_serves(f->port, "second");

  /* A later good pair is taken again. */
  write_pair(dir, "third");
  assert_int_equal(wait_cn(f->port, "third", 5000), 0);
  assert_true(counter(f->reg, "certwatcher_read_certificate_errors_total") == 1);

  /* A new key whose certificate does not follow is torn: once it has held
   * still for a poll it is counted, and "third" is still served... */
  {
    EVP_PKEY *key;
    X509 *cert;
    assert_int_equal(kcr__tls_self_signed("unused", NULL, 0, &key, &cert), 0);
    publish(dir, "tls.key", key, NULL);
    EVP_PKEY_free(key);
    X509_free(cert);
  }
  assert_int_equal(wait_errors(f->reg, 2, 5000), 0);
  assert_serves(f->port, "third");
  /* ...until the certificate for that key arrives. */
  write_pair_valid(dir, "fourth", -3600, 365L * 24 * 3600, 1);
  assert_int_equal(wait_cn(f->port, "fourth", 5000), 0);
  assert_true(counter(f->reg, "certwatcher_read_certificate_errors_total") == 2);
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.tls_errors, 0);
  stop(f);
  remove_dir(dir);
}

/* A reloaded certificate that has expired, or is not yet valid, is refused
 * and counted; the old one is still served; a later valid one is taken. */
static void test_server_tls_reload_refuses_out_of_date(void **state) {
  char dir[] = "/tmp/kcr-tls-XXXXXX";
  fixture_t *f;
  (void)state;

  f = start_watching(dir, "current");
  assert_true(counter(f->reg, "certwatcher_read_certificate_errors_total") == 0);

  /* Expired a day ago, with the same key: only the dates are wrong. */
  write_pair_valid(dir, "expired", -2L * 24 * 3600, -24L * 3600, 1);
  assert_int_equal(wait_errors(f->reg, 1, 5000), 0);
  assert_serves(f->port, "current");

  /* Valid only from tomorrow. */
  write_pair_valid(dir, "future", 24L * 3600, 2L * 24 * 3600, 1);
  assert_int_equal(wait_errors(f->reg, 2, 5000), 0);
  assert_serves(f->port, "current");

  write_pair_valid(dir, "renewed", -3600, 365L * 24 * 3600, 1);
  assert_int_equal(wait_cn(f->port, "renewed", 5000), 0);
  assert_true(counter(f->reg, "certwatcher_read_certificate_errors_total") == 2);
  stop(f);
  remove_dir(dir);
}

/* create_fails: kcr_server_create with cert_dir fails with KCR_ECONFIG, one
 * read error counted; its message is copied to msg. */
static void create_fails(const char *cert_dir, char *msg, size_t size) {
  kcr_server_options o = {0};
  kcr_loop_t *loop;
  kcr_server_t *s = NULL;
  kcr_metrics_registry_t *reg;
  kcr_error_t err = {0};
  assert_int_equal(kcr_loop_create(&loop, NULL), 0);
  assert_int_equal(kcr_loop_start(loop, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&reg, NULL), 0);
  o.loop = loop;
  o.metrics = reg;
  o.bind_address = "127.0.0.1:0";
  o.tls = 1;
  o.cert_dir = cert_dir;
  assert_int_equal(kcr_server_create(&o, &s, &err), KCR_ECONFIG);
  assert_null(s);
  assert_true(counter(reg, "certwatcher_read_certificate_errors_total") == 1);
  snprintf(msg, size, "%s", err.message);
  kcr_loop_destroy(loop);
  kcr_metrics_registry_destroy(reg);
}

static void test_server_tls_bad_dir_fails_create(void **state) {
  char msg[512];
  (void)state;
  create_fails("/nonexistent/kcr-certs", msg, sizeof(msg));
  assert_non_null(strstr(msg, "/nonexistent/kcr-certs/tls.crt"));
}

/* create_refuses writes into dir a certificate valid from now + nb_s to now +
 * na_s and checks that create fails with "certificate DIR/tls.crt BOUND "
 * followed by a date as "2026-01-02T03:04:05Z". */
/* is_rfc3339_utc: p starts with a date as "2026-01-02T03:04:05Z". */
static int is_rfc3339_utc(const char *p) {
  static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
  for (size_t i = 0; shape[i]; i++) {
    if (shape[i] == 'd' ? p[i] < '0' || p[i] > '9' : p[i] != shape[i])
      return 0;
  }
  return 1;
}

static void create_refuses(const char *dir, long nb_s, long na_s, const char *bound) {
  char want[600], msg[512], *at;
  write_pair_valid(dir, "refused", nb_s, na_s, 0);
  create_fails(dir, msg, sizeof(msg));
  snprintf(want, sizeof(want), "certificate %s/tls.crt %s ", dir, bound);
  at = strstr(msg, want);
  if (!at) {
    fail_msg("message: %s", msg);
    return;
  }
  assert_true(is_rfc3339_utc(at + strlen(want)));
}

/* An expired certificate in cert_dir fails create, naming file, bound and date. */
static void test_server_tls_expired_fails_create(void **state) {
  char dir[] = "/tmp/kcr-tls-XXXXXX";
  (void)state;
  assert_non_null(mkdtemp(dir));
  create_refuses(dir, -2L * 24 * 3600, -24L * 3600, "expired at");
  remove_dir(dir);
}

/* A certificate valid only from tomorrow fails create; one whose notBefore is
 * a minute ahead (clock skew) is taken. */
static void test_server_tls_not_yet_valid_fails_create(void **state) {
  char dir[] = "/tmp/kcr-tls-XXXXXX";
  kcr_server_options o = {0};
  fixture_t *f;
  (void)state;
  assert_non_null(mkdtemp(dir));
  create_refuses(dir, 24L * 3600, 2L * 24 * 3600, "is not valid before");

  write_pair_valid(dir, "skewed", 60, 365L * 24 * 3600, 0);
  o.cert_dir = dir;
  f = start(&o);
  assert_serves(f->port, "skewed");
  assert_true(counter(f->reg, "certwatcher_read_certificate_errors_total") == 0);
  stop(f);
  remove_dir(dir);
}

/* A /metrics body far over one TLS segment (64 KiB) and several requests on
 * one connection, sent at once: each answered in order. */
static void test_server_tls_large_reply_keep_alive(void **state) {
  kcr_server_options o = {0};
  fixture_t *f = start(&o);
  kcr_metric_t *m;
  const char *labels[] = {"name", NULL};
  tcli t;
  char *r;
  (void)state;
  assert_int_equal(kcr_metrics_counter(f->reg, "big_total", "a large family", labels, &m, NULL), 0);
  for (int i = 0; i < 3000; i++) {
    char v[96];
    snprintf(v, sizeof(v), "series-with-a-rather-long-label-value-%06d", i);
    kcr_metric_inc(kcr_metric_withv(m, v, NULL));
  }
  assert_int_equal(tcli_open(&t, f->port, TLS1_2_VERSION, TLS1_3_VERSION), 0);
  tcli_send(&t, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  for (int i = 0; i < 3; i++) {
    char *cl, *body;
    r = tcli_response(&t);
    assert_non_null(strstr(r, "HTTP/1.1 200 OK"));
    cl = strstr(r, "Content-Length: ");
    body = strstr(r, "\r\n\r\n") + 4;
    assert_non_null(cl);
    assert_int_equal(strlen(body), strtoul(cl + 16, NULL, 10));
    if (i != 1) {
      assert_true(strlen(body) > (size_t)150 * 1024); /* several TLS segments */
      assert_non_null(strstr(body, "series-with-a-rather-long-label-value-002999"));
    } else {
      assert_string_equal(body, "ok");
    }
    free(r);
  }
  tcli_close(&t);
  stop(f);
}

/* Garbage instead of a ClientHello, and a client that stops mid-handshake:
 * both closed, neither stops service. */
static void test_server_tls_garbage_and_stalled_handshake(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  kcr_server_stats st;
  char buf[512], *r;
  int fd, stalled;
  ssize_t n;
  int64_t t0;
  (void)state;
  /* Short enough to test, long enough for a handshake under valgrind. */
  o.header_timeout_ns = 1500 * KCR_NSEC_PER_MSEC;
  f = start(&o);
  fd = dial(f->port);
  memset(buf, 0x16, sizeof(buf)); /* looks like a handshake record, is not */
  assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
  while ((n = read(fd, buf, sizeof(buf))) > 0)
    ;
  assert_true(n == 0 || n < 0);
  close(fd);
  /* A client that connects and sends nothing is cut at the header timeout. */
  stalled = dial(f->port);
  t0 = now_ms();
  n = read(stalled, buf, sizeof(buf));
  assert_true(n <= 0);
  assert_true(now_ms() - t0 >= 1000 && now_ms() - t0 < 6000);
  close(stalled);
  r = tls_get(f->port, "/healthz", NULL, NULL, 0);
  assert_non_null(strstr(r, "200 OK"));
  free(r);
  kcr_server_get_stats(f->srv, &st);
  assert_true(st.tls_errors >= 1);
  assert_true(st.header_timeouts >= 1);
  stop(f);
}

/* peer_closed: whether the server closed fd within ms (a read sees EOF or a
 * reset rather than timing out). */
static int peer_closed(int fd, int ms) {
  struct timeval tv = {ms / 1000, (suseconds_t)(ms % 1000) * 1000};
  char b[64];
  ssize_t n;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  n = read(fd, b, sizeof(b));
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* A full server sheds a connection that has sent nothing before an older one
 * part-way through its handshake. */
static void test_server_tls_shed_prefers_silent(void **state) {
  kcr_server_options o = {0};
  fixture_t *f;
  kcr_server_stats st;
  int part, silent, third;
  (void)state;
  o.max_connections = 2;
  f = start(&o);
  part = dial(f->port);
  (void)write(part, "\x16\x03\x01\x02\x00\x01", 6); /* a ClientHello's start */
  usleep(300 * 1000);                               /* the server reads it */
  silent = dial(f->port);
  usleep(300 * 1000);
  third = dial(f->port);
  assert_true(peer_closed(silent, 2000));
  assert_false(peer_closed(part, 300));
  kcr_server_get_stats(f->srv, &st);
  assert_int_equal(st.shed, 1);
  close(part);
  close(silent);
  close(third);
  stop(f);
}

/* 1000 connections that never finish a handshake (half of them send a
 * partial ClientHello): the server sheds them to stay within its connection
 * cap and memory budget, and a real client is served at its first try. A
 * burst of sheds leaves the closing connections charged until their close
 * callbacks run; a connection arriving then waits in the listen queue for that
 * memory (accept_waits) rather than being refused, so none is rejected. */
static void test_server_tls_connection_flood(void **state) {
  enum { N = 1000 };
  kcr_server_options o = {0};
  fixture_t *f;
  kcr_server_stats st;
  static int fds[N];
  char *r;
  (void)state;
  f = start(&o);
  for (int i = 0; i < N; i++) {
    fds[i] = dial(f->port);
    if (i % 2) /* a record header promising more than is sent */
      (void)write(fds[i], "\x16\x03\x01\x02\x00\x01", 6);
  }
  r = tls_get(f->port, "/healthz", NULL, NULL, 0);
  assert_non_null(strstr(r, "200 OK"));
  free(r);
  kcr_server_get_stats(f->srv, &st);
  print_message("flood: shed %llu, timed out %llu, waits %llu, rejected %llu\n",
                (unsigned long long)st.shed, (unsigned long long)st.header_timeouts,
                (unsigned long long)st.accept_waits, (unsigned long long)st.rejected);
  /* All but the 63 newest went: shed, or cut at the header timeout when a
   * stalled dial (the listen queue full) made the flood take seconds. */
  assert_true(st.shed + st.header_timeouts >= N - 64);
  assert_int_equal(st.rejected, 0);
  assert_true(st.bytes_held_peak <= (size_t)16 * 1024 * 1024);
  for (int i = 0; i < N; i++)
    close(fds[i]);
  stop(f);
}

/* The auth hook: its answers become the status; it runs off the loop. */
typedef struct authrec {
  kcr_loop_t *loop;
  atomic_int calls;
  atomic_int on_loop;
  char last_verb[16], last_path[64];
} authrec;

static int on_auth(void *data, const char *token, const char *verb, const char *path) {
  authrec *a = data;
  atomic_fetch_add(&a->calls, 1);
  if (kcr_loop_on_thread(a->loop))
    atomic_store(&a->on_loop, 1);
  snprintf(a->last_verb, sizeof(a->last_verb), "%s", verb);
  snprintf(a->last_path, sizeof(a->last_path), "%s", path);
  if (!token)
    return 401;
  if (strcmp(token, "good-token") == 0)
    return 200;
  if (strcmp(token, "other-token") == 0)
    return 403;
  if (strcmp(token, "broken") == 0)
    return 500;
  return 401;
}

static void test_server_tls_metrics_auth(void **state) {
  kcr_server_options o = {0};
  authrec a;
  fixture_t *f;
  char *r;
  (void)state;
  memset(&a, 0, sizeof(a));
  o.metrics_auth = on_auth;
  o.metrics_auth_data = &a;
  f = start(&o);
  a.loop = f->loop;
  r = tls_get(f->port, "/metrics", NULL, NULL, 0);
  assert_non_null(strstr(r, "HTTP/1.1 401 Unauthorized"));
  free(r);
  r = tls_get(f->port, "/metrics", "Bearer good-token", NULL, 0);
  assert_non_null(strstr(r, "HTTP/1.1 200 OK"));
  assert_non_null(strstr(r, "certwatcher_read_certificate_total"));
  free(r);
  r = tls_get(f->port, "/metrics", "bearer   other-token", NULL, 0);
  assert_non_null(strstr(r, "HTTP/1.1 403 Forbidden"));
  free(r);
  r = tls_get(f->port, "/metrics", "Bearer broken", NULL, 0);
  assert_non_null(strstr(r, "HTTP/1.1 500"));
  free(r);
  r = tls_get(f->port, "/metrics", "Basic Zm9vOmJhcg==", NULL, 0);
  assert_non_null(strstr(r, "HTTP/1.1 401"));
  free(r);
  r = tls_get(f->port, "/metrics", "Bearer ", NULL, 0);
  assert_non_null(strstr(r, "HTTP/1.1 401"));
  free(r);
  assert_int_equal(atomic_load(&a.calls), 6);
  assert_string_equal(a.last_verb, "get");
  assert_string_equal(a.last_path, "/metrics");
  /* Probes are not behind the hook. */
  r = tls_get(f->port, "/healthz", NULL, NULL, 0);
  assert_non_null(strstr(r, "200 OK"));
  free(r);
  assert_int_equal(atomic_load(&a.calls), 6);
  assert_int_equal(atomic_load(&a.on_loop), 0);
  stop(f);
}

int main(void) {
  /* A server may close before the client is done writing (a refused
   * handshake, a 413): that must be an error return, not a signal. */
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_server_tls_versions),
      cmocka_unit_test(test_server_tls_reload),
      cmocka_unit_test(test_server_tls_bad_dir_fails_create),
      cmocka_unit_test(test_server_tls_expired_fails_create),
      cmocka_unit_test(test_server_tls_not_yet_valid_fails_create),
      cmocka_unit_test(test_server_tls_reload_refuses_out_of_date),
      cmocka_unit_test(test_server_tls_large_reply_keep_alive),
      cmocka_unit_test(test_server_tls_garbage_and_stalled_handshake),
      cmocka_unit_test(test_server_tls_metrics_auth),
      cmocka_unit_test(test_server_tls_shed_prefers_silent),
      cmocka_unit_test(test_server_tls_connection_flood),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
