/* SPDX-License-Identifier: MIT */
/*
 * tls.c: the server's certificates, as controller-runtime's certwatcher keeps
 * them: an OpenSSL server context built from a certificate directory (tls.crt,
 * tls.key) or from a self-signed certificate made in memory, and the watcher
 * that rebuilds the context when the files change.
 *
 * DESIGN. A context is immutable once built; the server swaps the pointer
 * under a mutex and every new connection takes its own reference (SSL_new), so
 * a reload never disturbs a handshake in progress, and a connection keeps the
 * certificate it started with. The watcher polls: each poll stat()s both files
 * (stat follows symlinks, so a Kubernetes Secret volume's "..data" swap shows
 * as a new inode) and rebuilds only when inode, size or mtime moved. A rebuild
 * that fails (a half-written file, a key that does not match) keeps the old
 * context; it is tried once more on the next poll, since a rotation that writes
 * the two files one after the other can be read between them, and a second
 * failure on files that held still is counted in
 * certwatcher_read_certificate_errors_total. The next change is tried again.
 * A certificate outside its validity period is such a failure too: the leaf's
 * notAfter must be after now and its notBefore no later than now plus
 * NOT_BEFORE_SKEW_S (a certificate minted on a host whose clock runs a little
 * ahead is not refused). Go's crypto/tls server never checks its own
 * certificate's dates, so upstream serves an expired one and every client
 * fails its handshake; kcr refuses it deliberately (issue 28): at create that
 * fails create, on a reload it keeps the certificate that still works. The
 * check is made when the files are read, with the wall clock; a certificate
 * that expires while it is served stays until its files change.
 * Polling, not inotify: a Secret volume update is a rename of a directory the
 * watch does not cover, and a 10 s poll is what upstream falls back to anyway.
 *
 * These functions read files and generate keys: never call them on the loop
 * thread (the server calls them at create and on its worker thread).
 */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kcr/log.h"
#include "server/server_internal.h"

/* on_alpn selects http/1.1 when the client offers it; a client offering only
 * h2 gets no ALPN answer and falls back to HTTP/1.1 (HTTP/2 is not served). */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned int inlen, void *arg) {
  (void)ssl;
  (void)arg;
  for (unsigned int i = 0; i < inlen;) {
    unsigned int n = in[i];
    if (i + 1 + n > inlen)
      break;
    if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
      *out = in + i + 1;
      *outlen = (unsigned char)n;
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + n;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

/* new_ctx makes a server context with kcr's protocol settings. */
static SSL_CTX *new_ctx(void) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx)
    return NULL;
  /* TLS 1.2 and 1.3 (Go's crypto/tls default minimum is 1.2 for servers). */
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20") != 1) {
    SSL_CTX_free(ctx);
    return NULL;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                               SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET);
  /* No session cache and no tickets: nothing per client outlives its
   * connection, and a reloaded certificate is used by the very next handshake. */
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(ctx, on_alpn, NULL);
  return ctx;
}

/* NOT_BEFORE_SKEW_S: how far in the future a certificate's notBefore may lie
 * and the certificate still be taken, for clocks that disagree a little. */
#define NOT_BEFORE_SKEW_S ((time_t)5 * 60)

/* format_time writes t as RFC 3339 UTC ("2026-01-02T03:04:05Z"). */
static void format_time(const ASN1_TIME *t, char *out, size_t size) {
  struct tm tm;
  if (ASN1_TIME_to_tm(t, &tm) != 1 || strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    snprintf(out, size, "an unreadable time");
}

/* check_validity: 0 when cert is valid now (notBefore within the skew
 * allowance); else -1 with msg naming cert_path, the bound and its date. */
static int check_validity(const X509 *cert, const char *cert_path, char *msg, size_t size) {
  const ASN1_TIME *nb = X509_get0_notBefore(cert), *na = X509_get0_notAfter(cert);
  time_t now = time(NULL), latest = now + NOT_BEFORE_SKEW_S;
  /* X509_cmp_time: -1 when the time is at or before the one given, 1 when
   * after it, 0 when it cannot be read. */
  int after = X509_cmp_time(na, &now), before = X509_cmp_time(nb, &latest);
  char when[64];
  if (after == 0 || before == 0) {
    snprintf(msg, size, "certificate %s has an unreadable validity period", cert_path);
    return -1;
  }
  if (after < 0) {
    format_time(na, when, sizeof(when));
    snprintf(msg, size, "certificate %s expired at %s", cert_path, when);
    return -1;
  }
  if (before > 0) {
    format_time(nb, when, sizeof(when));
    snprintf(msg, size, "certificate %s is not valid before %s", cert_path, when);
    return -1;
  }
  return 0;
}

static void ssl_error_text(char *msg, size_t size) {
  unsigned long e = ERR_get_error();
  if (e)
    ERR_error_string_n(e, msg, size);
  else
    snprintf(msg, size, "unknown error");
  ERR_clear_error();
}

SSL_CTX *kcr__tls_ctx_from_files(const char *cert_path, const char *key_path, char *msg,
                                 size_t size) {
  SSL_CTX *ctx = new_ctx();
  char why[200];
  if (!ctx) {
    snprintf(msg, size, "cannot make a TLS context");
    return NULL;
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_path) != 1) {
    ssl_error_text(why, sizeof(why));
    snprintf(msg, size, "reading certificate %s: %s", cert_path, why);
    goto fail;
  }
  if (check_validity(SSL_CTX_get0_certificate(ctx), cert_path, msg, size) != 0) {
    ERR_clear_error();
    goto fail;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_path, SSL_FILETYPE_PEM) != 1) {
    ssl_error_text(why, sizeof(why));
    snprintf(msg, size, "reading key %s: %s", key_path, why);
    goto fail;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    snprintf(msg, size, "the key in %s does not match the certificate in %s", key_path, cert_path);
    goto fail;
  }
  return ctx;
fail:
  SSL_CTX_free(ctx);
  return NULL;
}

int kcr__tls_self_signed(const char *cn, const char *const *dns, size_t ndns, EVP_PKEY **key_out,
                         X509 **cert_out) {
  EVP_PKEY *key = EVP_EC_gen("P-256");
  X509 *x = X509_new();
  X509V3_CTX v3;
  X509_EXTENSION *ext = NULL;
  char san[1024];
  size_t off;
  unsigned char serial[16];
  BIGNUM *bn = NULL;
  int ok = 0;

  *key_out = NULL;
  *cert_out = NULL;
  if (!key || !x)
    goto done;
  off = (size_t)snprintf(san, sizeof(san), "DNS:localhost,IP:127.0.0.1,IP:::1");
  for (size_t i = 0; i < ndns && off < sizeof(san); i++)
    if (dns[i] && *dns[i] && strcmp(dns[i], "localhost") != 0)
      off += (size_t)snprintf(san + off, sizeof(san) - off, ",DNS:%s", dns[i]);
  if (off >= sizeof(san))
    goto done;
  if (RAND_bytes(serial, sizeof(serial)) != 1)
    goto done;
  serial[0] &= 0x7f; /* a positive serial */
  if (!(bn = BN_bin2bn(serial, sizeof(serial), NULL)) ||
      !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) || X509_set_version(x, 2) != 1 ||
      !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(x), 365L * 24 * 3600) || X509_set_pubkey(x, key) != 1 ||
      X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
                                 (const unsigned char *)(cn ? cn : "localhost"), -1, -1, 0) != 1 ||
      X509_set_issuer_name(x, X509_get_subject_name(x)) != 1)
    goto done;
  X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
  if (!(ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, san)) ||
      X509_add_ext(x, ext, -1) != 1)
    goto done;
  X509_EXTENSION_free(ext);
  if (!(ext = X509V3_EXT_conf_nid(NULL, &v3, NID_ext_key_usage, "serverAuth")) ||
      X509_add_ext(x, ext, -1) != 1)
    goto done;
  X509_EXTENSION_free(ext);
  ext = NULL;
  if (X509_sign(x, key, EVP_sha256()) <= 0)
    goto done;
  ok = 1;
done:
  X509_EXTENSION_free(ext);
  BN_free(bn);
  ERR_clear_error();
  if (!ok) {
    EVP_PKEY_free(key);
    X509_free(x);
    return -1;
  }
  *key_out = key;
  *cert_out = x;
  return 0;
}

SSL_CTX *kcr__tls_ctx_self_signed(char *msg, size_t size) {
  char host[256];
  const char *dns[1] = {host};
  EVP_PKEY *key;
  X509 *cert;
  SSL_CTX *ctx;
  if (gethostname(host, sizeof(host)) != 0)
    host[0] = '\0';
  host[sizeof(host) - 1] = '\0';
  if (kcr__tls_self_signed(host[0] ? host : "localhost", dns, 1, &key, &cert) != 0) {
    snprintf(msg, size, "cannot generate a self-signed certificate");
    return NULL;
  }
  ctx = new_ctx();
  if (!ctx || SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
    SSL_CTX_free(ctx);
    ctx = NULL;
    ERR_clear_error();
    snprintf(msg, size, "cannot use the self-signed certificate");
  }
  EVP_PKEY_free(key);
  X509_free(cert);
  return ctx;
}

void kcr__tls_stamp(const char *cert_path, const char *key_path, kcr__tls_stamp_t *out) {
  struct stat st;
  const char *paths[2] = {cert_path, key_path};
  memset(out, 0, sizeof(*out));
  for (int i = 0; i < 2; i++) {
    if (stat(paths[i], &st) != 0) {
      out->missing = 1;
      continue;
    }
    out->ino[i] = (uint64_t)st.st_ino;
    out->size[i] = (int64_t)st.st_size;
    out->mtime_ns[i] = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  }
}

int kcr__tls_stamp_equal(const kcr__tls_stamp_t *a, const kcr__tls_stamp_t *b) {
  return memcmp(a, b, sizeof(*a)) == 0;
}
