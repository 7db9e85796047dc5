/* SPDX-License-Identifier: MIT */
/*
 * credentials.h: the refreshable credentials of a kcr_rest_config_t
 * (credentials.c). They know the exec plugin runner below them, never the
 * config that embeds them: config.c's public kcr_rest_config_credentials* and
 * test hooks pass the kcr__creds_t in.
 */
#ifndef KCR_CONFIG_CREDENTIALS_H
#define KCR_CONFIG_CREDENTIALS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cfgutil.h"
#include "config/exec.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "kcr/error.h"
#include "kcr/time.h"

/*
 * kcr__creds_t: the refreshable credentials of a kcr_rest_config_t. The static
 * part is fixed at load; the current part is protected by mu. At most one
 * refresh runs at a time (refreshing), without mu held; other callers wait on
 * cond and take its outcome.
 */
typedef struct kcr__creds {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  kcr_clock_t *clock; /* set before sharing; the tests swap in a fake one */
  /* fixed at load (static_cert and static_key, protected by mu, change when
   * they come from files that change: see TLS files below) */
  char *static_token;
  char *username;
  char *password;
  unsigned char *static_cert;
  size_t static_cert_len;
  unsigned char *static_key;
  size_t static_key_len;
  char *token_file;        /* re-read every token_period_ns and after a 401 */
  int64_t token_period_ns; /* set before sharing */
  kcr__exec_spec_t *exec;  /* run when needed */
  /* protected by mu */
  char *token;         /* current bearer token (file or exec), NULL: static */
  unsigned char *cert; /* current exec client certificate */
  size_t cert_len;
  unsigned char *key;
  size_t key_len;
  kcr_time_t expiry;     /* of the exec credential, {0,0}: none */
  kcr_time_t refresh_at; /* wall time to re-run the plugin, shortly before expiry */
  int64_t next_read_ns;  /* clock reading when the token file is due */
  int have;              /* a dynamic credential was obtained */
  int rejected;          /* the server answered 401 to the current generation */
  uint64_t generation;
  int refreshing;
  uint64_t refresh_seq; /* counts finished refreshes */
  int last_rc;          /* outcome of the last refresh */
  kcr_error_t last_err;

  /*
   * TLS files re-read (client-go's certificate and CA rotation). The paths are
   * fixed at load: cert_file and key_file only when both came from files (no
   * -data), ca_file only for a CA read from a file. static_cert/static_key and
   * ca are then the bytes last read (protected by mu), replaced when the files
   * change and still hold a matching pair (a certificate bundle).
   */
  char *cert_file;
  char *key_file;
  char *ca_file;
  int64_t tls_period_ns; /* set before sharing */
  unsigned char *ca;     /* protected by mu: the CA bundle in force, NULL: system roots */
  size_t ca_len;
  int64_t tls_next_read_ns; /* protected by mu: clock reading when the files are due */
  int64_t tls_last_read_ns; /* protected by mu */
  int tls_reread;           /* protected by mu: a 401 asked for a re-read now */
  int tls_failures;         /* protected by mu: re-reads failed in a row */
} kcr__creds_t;

/* kcr__creds_init prepares an empty set of credentials. Returns 0 or KCR_ESYS. */
int kcr__creds_init(kcr__creds_t *c, kcr_error_t *err);

/* kcr__creds_free releases everything (wiping secrets). */
void kcr__creds_free(kcr__creds_t *c);

/*
 * kcr__creds_prime reads the token file once at load, as client-go does, so a
 * missing token file is a load error. Returns 0 or the read's error.
 */
int kcr__creds_prime(kcr__creds_t *c, kcr_error_t *err);

/*
 * kcr__creds_get hands out a snapshot of the current credentials (refreshing
 * first when due), as kcr_rest_config_credentials promises. Any thread.
 */
int kcr__creds_get(kcr__creds_t *c, kcr_credentials *out, kcr_error_t *err);

/* kcr__creds_fresh: kcr_rest_config_credentials_fresh for c. Any thread. */
int kcr__creds_fresh(kcr__creds_t *c, uint64_t generation);

/* kcr__creds_rejected: kcr_rest_config_credentials_rejected for c. Any thread. */
void kcr__creds_rejected(kcr__creds_t *c, uint64_t generation);

/* kcr__creds_set_clock and kcr__creds_set_token_period: the test hooks of
 * config_internal.h, for c (the pending token-file re-read is rebased). */
void kcr__creds_set_clock(kcr__creds_t *c, kcr_clock_t *clock);
void kcr__creds_set_token_period(kcr__creds_t *c, int64_t ns);

/*
 * kcr__creds_prime_tls schedules the first re-read of the TLS files, one
 * period after load (the load itself read them). Call once the paths are set.
 */
void kcr__creds_prime_tls(kcr__creds_t *c);

/* kcr__creds_set_tls_period: the test hook of config_internal.h (rebased). */
void kcr__creds_set_tls_period(kcr__creds_t *c, int64_t ns);

#endif /* KCR_CONFIG_CREDENTIALS_H */
