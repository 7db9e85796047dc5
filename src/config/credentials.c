/* SPDX-License-Identifier: MIT */
/*
 * credentials.c: the credentials of a kcr_rest_config_t, and their refresh.
 *
 * Design: three kinds of source. Static ones (token, username/password, client
 * certificate) never change. A token file is re-read every token period (one
 * minute, as client-go's cachingTokenSource) and at once after a 401; a failed
 * re-read keeps the token it had and tries again ten seconds later, as client-go
 * keeps serving its cached token. An exec plugin runs on first use, again
 * shortly before the expirationTimestamp it reported (a quarter of the
 * credential's lifetime, at most ten seconds, before it), and again after a 401.
 *
 * All state is under one mutex, but the slow part (reading the file, running the
 * plugin) happens with the mutex released and the `refreshing` flag set: only
 * one refresh runs at a time, and callers that arrive meanwhile wait on the
 * condition variable and take its outcome (its credentials, or its error)
 * rather than starting another. `generation` changes only when the bytes change,
 * so a client can cache a snapshot and ask kcr_rest_config_credentials_fresh
 * (which never blocks) whether it is still good. Secrets are wiped when freed.
 *
 * TLS files (client-go's cert_rotation.go and ca_rotation.go): a client
 * certificate and key that both come from files, and a CA bundle from a file,
 * are read again every tls period (a minute) and right after a 401, in the same
 * refresh. New bytes replace the old only when they hold up: the certificate
 * must match the key (the check Go's tls.X509KeyPair makes), the CA file must
 * hold a certificate; otherwise the old ones stay. A rotation that writes the
 * two files one after the other can be caught between them, so a first failure
 * is retried a second later without a word, and only a second one in a row is
 * logged. A change bumps the generation, which sends the client for a new
 * snapshot: its next requests carry the new blobs, and libcurl, which compares
 * the certificate and CA blobs before reusing a connection, opens new
 * connections for them.
 */
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <string.h>

#include "config/credentials.h"
#include "kcr/log.h"
#include "util/alloc.h"
#include "util/file.h"

#define MAX_LEEWAY_NS (10 * KCR_NSEC_PER_SEC)
#define RETRY_AFTER_FAILED_READ_NS (10 * KCR_NSEC_PER_SEC)
#define RETRY_TORN_TLS_READ_NS KCR_NSEC_PER_SEC
#define MIN_TLS_REREAD_NS KCR_NSEC_PER_SEC /* a 401 re-reads the files at most this often */

int kcr__creds_init(kcr__creds_t *c, kcr_error_t *err) {
  memset(c, 0, sizeof(*c));
  if (pthread_mutex_init(&c->mu, NULL) != 0)
    return kcr_error_set(err, KCR_ESYS, "pthread_mutex_init failed");
  if (pthread_cond_init(&c->cond, NULL) != 0) {
    pthread_mutex_destroy(&c->mu);
    return kcr_error_set(err, KCR_ESYS, "pthread_cond_init failed");
  }
  c->clock = kcr_clock_system();
  c->token_period_ns = KCR__TOKEN_PERIOD_NS;
  c->tls_period_ns = KCR__TLS_PERIOD_NS;
  c->generation = 1;
  return 0;
}

void kcr__creds_free(kcr__creds_t *c) {
  kcr__wipe_free_str(c->static_token);
  kcr__wipe_free_str(c->username);
  kcr__wipe_free_str(c->password);
  kcr__wipe_free(c->static_cert, c->static_cert_len);
  kcr__wipe_free(c->static_key, c->static_key_len);
  kcr__free(c->token_file);
  kcr__exec_spec_free(c->exec);
  kcr__wipe_free_str(c->token);
  kcr__wipe_free(c->cert, c->cert_len);
  kcr__wipe_free(c->key, c->key_len);
  kcr__free(c->cert_file);
  kcr__free(c->key_file);
  kcr__free(c->ca_file);
  kcr__free(c->ca);
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->mu);
}

static int dynamic(const kcr__creds_t *c) {
  return c->token_file || c->exec;
}

/* read_token reads and trims a token file into a new string. */
static int read_token(const char *path, char **out, kcr_error_t *err) {
  char *buf = NULL;
  size_t len = 0, start = 0;
  int rc;
  *out = NULL;
  rc = kcr__read_file(path, KCR__TOKEN_FILE_MAX_BYTES, "token file", &buf, &len, err);
  if (rc < 0)
    return rc;
  while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
    buf[--len] = '\0';
  while (start < len && strchr(" \t\r\n", buf[start]))
    start++;
  if (start == len) {
    kcr__wipe_free(buf, len);
    return kcr_error_set(err, KCR_EAUTH, "token file %s is empty", path);
  }
  if (start) {
    memmove(buf, buf + start, len - start + 1);
    explicit_bzero(buf + len - start + 1, start);
  }
  *out = buf;
  return 0;
}

static int same_bytes(const void *a, size_t al, const void *b, size_t bl) {
  if (!a || !b)
    return a == b;
  return al == bl && memcmp(a, b, al) == 0;
}

static int same_str(const char *a, const char *b) {
  if (!a || !b)
    return a == b;
  return strcmp(a, b) == 0;
}

/* apply_token_locked installs a token read from the file (takes tok). */
static void apply_token_locked(kcr__creds_t *c, char *tok) {
  if (!same_str(c->token, tok)) {
    kcr__wipe_free_str(c->token);
    c->token = tok;
    c->generation++;
  } else {
    kcr__wipe_free_str(tok);
  }
  c->have = 1;
  c->rejected = 0;
  c->next_read_ns = kcr_clock_now(c->clock) + c->token_period_ns;
}

int kcr__creds_prime(kcr__creds_t *c, kcr_error_t *err) {
  char *tok = NULL;
  kcr_error_t e = {0};
  int rc;
  if (!c->token_file)
    return 0;
  rc = read_token(c->token_file, &tok, &e);
  if (rc == KCR_ENOMEM)
    return kcr_error_set(err, rc, "out of memory reading token file");
  if (rc < 0) {
    if (!c->static_token) {
      if (err && err->code == 0)
        *err = e;
      return rc;
    }
    /* client-go: with both token and tokenFile, the token stands in for the file. */
    kcr_log(KCR_LOG_WARN, "config", "%s; using the kubeconfig's token until it can be read",
            e.message);
    c->have = 1;
    c->next_read_ns = kcr_clock_now(c->clock) + RETRY_AFTER_FAILED_READ_NS;
    return 0;
  }
  pthread_mutex_lock(&c->mu);
  apply_token_locked(c, tok);
  pthread_mutex_unlock(&c->mu);
  return 0;
}

/* tls_files: whether some TLS file is re-read. */
static bool tls_files(const kcr__creds_t *c) {
  return c->cert_file || c->ca_file;
}

/* tls_due_locked tells whether the TLS files are due for a re-read. */
static bool tls_due_locked(kcr__creds_t *c) {
  return tls_files(c) && (c->tls_reread || kcr_clock_now(c->clock) >= c->tls_next_read_ns);
}

/* dynamic_due_locked tells whether the token file or plugin must be renewed. */
static int dynamic_due_locked(kcr__creds_t *c) {
  if (!dynamic(c))
    return 0;
  if (!c->have || c->rejected)
    return 1;
  if (c->exec) {
    if (c->expiry.sec == 0 && c->expiry.nsec == 0)
      return 0;
    return kcr_time_cmp(kcr_clock_wall(c->clock), c->refresh_at) >= 0;
  }
  return kcr_clock_now(c->clock) >= c->next_read_ns;
}

/* needs_refresh_locked tells whether anything must be renewed. */
static int needs_refresh_locked(kcr__creds_t *c) {
  return dynamic_due_locked(c) || tls_due_locked(c);
}

/* ---- TLS files ---- */

/* no_passphrase: an encrypted key is not one kcr can use (and OpenSSL must
 * never prompt on a terminal for it). */
static int no_passphrase(char *buf, int size, int rwflag, void *u) {
  (void)buf;
  (void)size;
  (void)rwflag;
  (void)u;
  return 0;
}

/* pem_cert reads the first certificate of a PEM text; NULL when there is none. */
static X509 *pem_cert(const unsigned char *p, size_t n) {
  BIO *b = n <= (size_t)KCR__PEM_FILE_MAX_BYTES ? BIO_new_mem_buf(p, (int)n) : NULL;
  X509 *x = b ? PEM_read_bio_X509(b, NULL, no_passphrase, NULL) : NULL;
  BIO_free(b);
  ERR_clear_error();
  return x;
}

/* pem_pair_ok: cert's first certificate belongs to key's private key. */
static bool pem_pair_ok(const unsigned char *cert, size_t cert_len, const unsigned char *key,
                        size_t key_len) {
  X509 *x = pem_cert(cert, cert_len);
  BIO *b =
      x && key_len <= (size_t)KCR__PEM_FILE_MAX_BYTES ? BIO_new_mem_buf(key, (int)key_len) : NULL;
  EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
  bool ok = k && X509_check_private_key(x, k) == 1;
  EVP_PKEY_free(k);
  BIO_free(b);
  X509_free(x);
  ERR_clear_error();
  return ok;
}

/* tls_read_t: one re-read of the TLS files, done without the lock. */
typedef struct tls_read {
  unsigned char *cert, *key, *ca;
  size_t cert_len, key_len, ca_len;
  bool pair_ok, ca_ok;
  char why[640]; /* the first failure, naming the files (an error message fits) */
} tls_read_t;

static void tls_read_free(tls_read_t *t) {
  kcr__wipe_free(t->cert, t->cert_len);
  kcr__wipe_free(t->key, t->key_len);
  kcr__free(t->ca);
  memset(t, 0, sizeof(*t));
}

/* read_tls reads the files (paths are fixed at load: no lock needed). */
static void read_tls(const kcr__creds_t *c, tls_read_t *t) {
  kcr_error_t e = {0};
  char *buf = NULL;
  memset(t, 0, sizeof(*t));
  if (c->cert_file) {
    if (kcr__read_file(c->cert_file, KCR__PEM_FILE_MAX_BYTES, "client-certificate", &buf,
                       &t->cert_len, &e) == 0) {
      t->cert = (unsigned char *)buf;
      buf = NULL;
      if (kcr__read_file(c->key_file, KCR__PEM_FILE_MAX_BYTES, "client-key", &buf, &t->key_len,
                         &e) == 0) {
        t->key = (unsigned char *)buf;
        t->pair_ok = pem_pair_ok(t->cert, t->cert_len, t->key, t->key_len);
        if (!t->pair_ok)
          snprintf(t->why, sizeof(t->why),
                   "client-certificate %s and client-key %s do not hold a certificate and its key",
                   c->cert_file, c->key_file);
      }
    }
    if (!t->why[0] && e.code)
      snprintf(t->why, sizeof(t->why), "%s", e.message);
  }
  if (c->ca_file) {
    kcr_error_clear(&e);
    buf = NULL;
    if (kcr__read_file(c->ca_file, KCR__PEM_FILE_MAX_BYTES, "certificate-authority", &buf,
                       &t->ca_len, &e) == 0) {
      X509 *x = pem_cert((unsigned char *)buf, t->ca_len);
      t->ca = (unsigned char *)buf;
      t->ca_ok = x != NULL;
      X509_free(x);
      if (!t->ca_ok && !t->why[0])
        snprintf(t->why, sizeof(t->why), "certificate-authority %s holds no PEM certificate",
                 c->ca_file);
    } else if (!t->why[0]) {
      snprintf(t->why, sizeof(t->why), "%s", e.message);
    }
  }
}

/* apply_tls_locked installs what read_tls found good and schedules the next
 * read. */
static void apply_tls_locked(kcr__creds_t *c, tls_read_t *t) {
  int64_t now = kcr_clock_now(c->clock);
  if (t->pair_ok && (!same_bytes(c->static_cert, c->static_cert_len, t->cert, t->cert_len) ||
                     !same_bytes(c->static_key, c->static_key_len, t->key, t->key_len))) {
    kcr__wipe_free(c->static_cert, c->static_cert_len);
    kcr__wipe_free(c->static_key, c->static_key_len);
    c->static_cert = t->cert;
    c->static_cert_len = t->cert_len;
    c->static_key = t->key;
    c->static_key_len = t->key_len;
    t->cert = t->key = NULL;
    t->cert_len = t->key_len = 0;
    c->generation++;
    kcr_log(KCR_LOG_INFO, "config",
            "client certificate %s changed: new connections present the new certificate",
            c->cert_file);
  }
  if (t->ca_ok && !same_bytes(c->ca, c->ca_len, t->ca, t->ca_len)) {
    kcr__free(c->ca);
    c->ca = t->ca;
    c->ca_len = t->ca_len;
    t->ca = NULL;
    t->ca_len = 0;
    c->generation++;
    kcr_log(KCR_LOG_INFO, "config",
            "certificate authority %s changed: new connections verify the server with it",
            c->ca_file);
  }
  c->tls_reread = 0;
  c->tls_last_read_ns = now;
  if (!t->why[0]) {
    c->tls_failures = 0;
    c->tls_next_read_ns = now + c->tls_period_ns;
    return;
  }
  /* A rotation caught half way (a new certificate, the old key) is tried again
   * a second later without a word; a failure on files that held still is
   * logged, and retried as a failed token-file read is. */
  if (++c->tls_failures == 1) {
    c->tls_next_read_ns = now + RETRY_TORN_TLS_READ_NS;
    return;
  }
  kcr_log(KCR_LOG_WARN, "config", "%s; keeping the certificates in use", t->why);
  c->tls_next_read_ns = now + RETRY_AFTER_FAILED_READ_NS;
}

static int dup_mem(const void *p, size_t n, void *out) {
  unsigned char *q;
  *(unsigned char **)out = NULL;
  if (!p)
    return 0;
  q = kcr__malloc(n + 1);
  if (!q)
    return KCR_ENOMEM;
  memcpy(q, p, n);
  q[n] = '\0';
  *(unsigned char **)out = q;
  return 0;
}

static int snapshot_locked(kcr__creds_t *c, kcr_credentials *out, kcr_error_t *err) {
  const char *tok = c->token ? c->token : c->static_token;
  const unsigned char *cert = c->cert ? c->cert : c->static_cert;
  const unsigned char *key = c->cert ? c->key : c->static_key;
  size_t cert_len = c->cert ? c->cert_len : c->static_cert_len;
  size_t key_len = c->cert ? c->key_len : c->static_key_len;

  memset(out, 0, sizeof(*out));
  if ((tok && dup_mem(tok, strlen(tok), &out->bearer_token) < 0) ||
      (c->username && dup_mem(c->username, strlen(c->username), &out->username) < 0) ||
      (c->password && dup_mem(c->password, strlen(c->password), &out->password) < 0) ||
      dup_mem(cert, cert_len, &out->client_cert_pem) < 0 ||
      dup_mem(key, key_len, &out->client_key_pem) < 0 ||
      dup_mem(c->ca, c->ca_len, &out->ca_pem) < 0) {
    kcr_credentials_free(out);
    return kcr_error_set(err, KCR_ENOMEM, "out of memory copying credentials");
  }
  out->client_cert_len = cert ? cert_len : 0;
  out->client_key_len = key ? key_len : 0;
  out->ca_len = c->ca ? c->ca_len : 0;
  out->expiry = c->expiry;
  out->generation = c->generation;
  return 0;
}

/* apply_exec_locked installs a plugin's result (takes its secrets). */
static void apply_exec_locked(kcr__creds_t *c, kcr__exec_result_t *r) {
  kcr_time_t now = kcr_clock_wall(c->clock);
  if (!same_str(c->token, r->token) || !same_bytes(c->cert, c->cert_len, r->cert, r->cert_len) ||
      !same_bytes(c->key, c->key_len, r->key, r->key_len)) {
    kcr__wipe_free_str(c->token);
    kcr__wipe_free(c->cert, c->cert_len);
    kcr__wipe_free(c->key, c->key_len);
    c->token = r->token;
    c->cert = r->cert;
    c->cert_len = r->cert_len;
    c->key = r->key;
    c->key_len = r->key_len;
    r->token = NULL;
    r->cert = NULL;
    r->key = NULL;
    r->cert_len = r->key_len = 0;
    c->generation++;
  }
  c->expiry = r->expiry;
  if (r->expiry.sec != 0 || r->expiry.nsec != 0) {
    int64_t life = kcr_time_diff_ns(r->expiry, now);
    int64_t leeway = life > 0 ? life / 4 : 0;
    if (leeway > MAX_LEEWAY_NS)
      leeway = MAX_LEEWAY_NS;
    c->refresh_at = kcr_time_add_ns(r->expiry, -leeway);
  }
  c->have = 1;
  c->rejected = 0;
}

/* refresh does the slow part, without the lock. */
static int refresh(kcr__creds_t *c, char **tok, kcr__exec_result_t *res, kcr_error_t *err) {
  if (c->exec) {
    kcr_buf_t out;
    int rc;
    kcr_buf_init(&out, c->exec->max_stdout);
    rc = kcr__exec_run(c->exec, &out, err);
    if (rc == 0)
      rc = kcr__exec_parse(c->exec, kcr_buf_cstr(&out), kcr_buf_len(&out), res, err);
    if (out.data)
      explicit_bzero(out.data, out.len);
    kcr_buf_free(&out);
    return rc;
  }
  return read_token(c->token_file, tok, err);
}

int kcr__creds_get(kcr__creds_t *c, kcr_credentials *out, kcr_error_t *err) {
  int rc;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    char *tok = NULL;
    kcr__exec_result_t res = {0};
    kcr_error_t e = {0};
    tls_read_t tls;
    int do_dynamic, do_tls;

    if (!needs_refresh_locked(c))
      break;
    if (c->refreshing) {
      uint64_t seq = c->refresh_seq;
      while (c->refreshing && c->refresh_seq == seq)
        pthread_cond_wait(&c->cond, &c->mu);
      if (c->refresh_seq == seq)
        continue;
      /* Take the outcome of the refresh we waited for. */
      if (c->last_rc < 0) {
        rc = c->last_rc;
        if (err && err->code == 0)
          *err = c->last_err;
        pthread_mutex_unlock(&c->mu);
        return rc;
      }
      break;
    }
    c->refreshing = 1;
    do_dynamic = dynamic_due_locked(c);
    do_tls = tls_due_locked(c);
    pthread_mutex_unlock(&c->mu);
    rc = do_dynamic ? refresh(c, &tok, &res, &e) : 0;
    if (do_tls)
      read_tls(c, &tls);
    pthread_mutex_lock(&c->mu);
    if (do_tls) {
      apply_tls_locked(c, &tls);
      tls_read_free(&tls);
    }
    if (!do_dynamic) {
      /* the TLS files alone: they never fail a snapshot */
    } else if (rc == 0) {
      if (c->exec)
        apply_exec_locked(c, &res);
      else
        apply_token_locked(c, tok);
    } else if (!c->exec && c->have && rc != KCR_ENOMEM) {
      /* Keep the token we have, as client-go's cachingTokenSource does. */
      kcr_log(KCR_LOG_WARN, "config", "%s; keeping the previous token", e.message);
      c->rejected = 0;
      c->next_read_ns = kcr_clock_now(c->clock) + RETRY_AFTER_FAILED_READ_NS;
      rc = 0;
    }
    kcr__exec_result_free(&res);
    c->refreshing = 0;
    c->refresh_seq++;
    c->last_rc = rc;
    c->last_err = e;
    pthread_cond_broadcast(&c->cond);
    if (rc < 0) {
      pthread_mutex_unlock(&c->mu);
      if (err && err->code == 0)
        *err = e;
      return rc;
    }
    break;
  }
  rc = snapshot_locked(c, out, err);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int kcr__creds_fresh(kcr__creds_t *c, uint64_t generation) {
  int fresh;
  pthread_mutex_lock(&c->mu);
  fresh = generation == c->generation && !needs_refresh_locked(c);
  pthread_mutex_unlock(&c->mu);
  return fresh;
}

void kcr__creds_rejected(kcr__creds_t *c, uint64_t generation) {
  pthread_mutex_lock(&c->mu);
  if (generation == c->generation && dynamic(c) && c->have)
    c->rejected = 1;
  /* A 401 to a file certificate: it may have expired and been rotated. */
  if (generation == c->generation && tls_files(c) &&
      kcr_clock_now(c->clock) - c->tls_last_read_ns >= MIN_TLS_REREAD_NS)
    c->tls_reread = 1;
  pthread_mutex_unlock(&c->mu);
}

void kcr_credentials_free(kcr_credentials *c) {
  if (!c)
    return;
  kcr__wipe_free_str(c->bearer_token);
  kcr__wipe_free_str(c->username);
  kcr__wipe_free_str(c->password);
  kcr__wipe_free(c->client_cert_pem, c->client_cert_len);
  kcr__wipe_free(c->client_key_pem, c->client_key_len);
  kcr__free(c->ca_pem);
  memset(c, 0, sizeof(*c));
}

/* ---- test hooks ---- */

void kcr__creds_set_clock(kcr__creds_t *c, kcr_clock_t *clock) {
  pthread_mutex_lock(&c->mu);
  c->clock = clock ? clock : kcr_clock_system();
  if (c->token_file)
    c->next_read_ns = kcr_clock_now(c->clock) + c->token_period_ns;
  c->tls_last_read_ns = kcr_clock_now(c->clock);
  c->tls_next_read_ns = c->tls_last_read_ns + c->tls_period_ns;
  pthread_mutex_unlock(&c->mu);
}

void kcr__creds_prime_tls(kcr__creds_t *c) {
  pthread_mutex_lock(&c->mu);
  c->tls_last_read_ns = kcr_clock_now(c->clock);
  c->tls_next_read_ns = c->tls_last_read_ns + c->tls_period_ns;
  pthread_mutex_unlock(&c->mu);
}

void kcr__creds_set_tls_period(kcr__creds_t *c, int64_t ns) {
  pthread_mutex_lock(&c->mu);
  c->tls_period_ns = ns;
  c->tls_next_read_ns = kcr_clock_now(c->clock) + ns;
  pthread_mutex_unlock(&c->mu);
}

void kcr__creds_set_token_period(kcr__creds_t *c, int64_t ns) {
  pthread_mutex_lock(&c->mu);
  c->token_period_ns = ns;
  if (c->token_file)
    c->next_read_ns = kcr_clock_now(c->clock) + ns;
  pthread_mutex_unlock(&c->mu);
}
