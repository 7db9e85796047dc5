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
 */
#include <string.h>

#include "config/credentials.h"
#include "kcr/log.h"
#include "util/alloc.h"
#include "util/file.h"

#define MAX_LEEWAY_NS (10 * KCR_NSEC_PER_SEC)
#define RETRY_AFTER_FAILED_READ_NS (10 * KCR_NSEC_PER_SEC)

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

/* needs_refresh_locked tells whether the current credentials must be renewed. */
static int needs_refresh_locked(kcr__creds_t *c) {
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
      dup_mem(key, key_len, &out->client_key_pem) < 0) {
    kcr_credentials_free(out);
    return kcr_error_set(err, KCR_ENOMEM, "out of memory copying credentials");
  }
  out->client_cert_len = cert ? cert_len : 0;
  out->client_key_len = key ? key_len : 0;
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
    pthread_mutex_unlock(&c->mu);
    rc = refresh(c, &tok, &res, &e);
    pthread_mutex_lock(&c->mu);
    if (rc == 0) {
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
  memset(c, 0, sizeof(*c));
}

/* ---- test hooks ---- */

void kcr__creds_set_clock(kcr__creds_t *c, kcr_clock_t *clock) {
  pthread_mutex_lock(&c->mu);
  c->clock = clock ? clock : kcr_clock_system();
  if (c->token_file)
    c->next_read_ns = kcr_clock_now(c->clock) + c->token_period_ns;
  pthread_mutex_unlock(&c->mu);
}

void kcr__creds_set_token_period(kcr__creds_t *c, int64_t ns) {
  pthread_mutex_lock(&c->mu);
  c->token_period_ns = ns;
  if (c->token_file)
    c->next_read_ns = kcr_clock_now(c->clock) + ns;
  pthread_mutex_unlock(&c->mu);
}
