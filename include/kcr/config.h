/* SPDX-License-Identifier: MIT */
/*
 * kcr/config.h: how to reach and authenticate to an API server — client-go's
 * clientcmd (kubeconfig loading and merging), rest.InClusterConfig and the exec
 * credential plugin, and controller-runtime's config.GetConfig precedence.
 *
 * A kcr_rest_config_t is immutable once loaded, except for its credentials, which
 * it refreshes by itself: token files are re-read (bound tokens rotate), exec
 * plugins are re-run before their expirationTimestamp and after a 401. It is
 * reference-counted and safe to share between threads.
 */
#ifndef KCR_CONFIG_H
#define KCR_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_rest_config_t: opaque, reference-counted. */
typedef struct kcr_rest_config kcr_rest_config_t;

/*
 * kcr_config_options: what the command line and environment can override. Every
 * field may be NULL. Zero-initialise and set what you need.
 *   kubeconfig  an explicit file (--kubeconfig): used alone, never merged.
 *   context     a context name overriding current-context (--context).
 *   env         the environment to read (KUBECONFIG, HOME, KUBERNETES_SERVICE_*);
 *               NULL means the process's environment. Tests pass their own.
 *   sa_dir      the service-account directory for in-cluster config; NULL means
 *               KCR_SERVICE_ACCOUNT_DIR.
 */
typedef struct kcr_config_options {
  const char *kubeconfig;
  const char *context;
  char *const *env;
  const char *sa_dir;
} kcr_config_options;

/*
 * kcr_rest_config_load finds the configuration as controller-runtime does: the
 * explicit kubeconfig if given; else in-cluster config when KUBECONFIG is unset and
 * KUBERNETES_SERVICE_HOST/PORT are set; else the default rules (KUBECONFIG's files,
 * colon-separated and merged, else ~/.kube/config). On success *out is a new
 * reference. When in-cluster config fails and the default rules find nothing,
 * the in-cluster error is returned. Errors: KCR_ECONFIG (names the file, the line
 * where known and the field), KCR_ENOENT (no configuration found anywhere, or a
 * file a kubeconfig names is missing), KCR_ENOTSUP (auth-provider), KCR_ETOOBIG
 * (a file over its limit: 16 MiB for a kubeconfig), KCR_EIO, KCR_ENOMEM. Messages
 * quote no kubeconfig value but the names of contexts, clusters and users and the
 * paths and command an entry names (never a credential, server or namespace).
 * A context without a user, or naming one no file defines, loads without
 * credentials, as client-go. Any thread; reads files, does no network
 * I/O, runs no exec plugin (that happens at the first kcr_rest_config_credentials).
 * See docs/config.md.
 */
KCR_EXTERN int kcr_rest_config_load(const kcr_config_options *opts, kcr_rest_config_t **out,
                                    kcr_error_t *err);

/*
 * kcr_rest_config_from_kubeconfig loads one kubeconfig file (path) or, when path
 * is NULL, the KUBECONFIG/~/.kube/config rules of opts->env; context may be
 * NULL for current-context. *out: new reference. Errors as kcr_rest_config_load.
 */
KCR_EXTERN int kcr_rest_config_from_kubeconfig(const char *path, const char *context,
                                               const kcr_config_options *opts,
                                               kcr_rest_config_t **out, kcr_error_t *err);

/*
 * kcr_rest_config_in_cluster builds the in-cluster config: server from
 * KUBERNETES_SERVICE_HOST/PORT (IPv6 bracketed), CA and token file and namespace
 * from the service-account directory. opts may be NULL. *out: new reference.
 */
KCR_EXTERN int kcr_rest_config_in_cluster(const kcr_config_options *opts, kcr_rest_config_t **out,
                                          kcr_error_t *err);

/* KCR_SERVICE_ACCOUNT_DIR: where Kubernetes mounts a Pod's service-account files. */
#define KCR_SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/*
 * kcr_service_account_namespace reads the namespace a Pod runs in: the
 * "namespace" file of the service-account directory dir (NULL:
 * KCR_SERVICE_ACCOUNT_DIR), white space trimmed, copied into buf (size bytes).
 * This is the one reader of that file: in-cluster config, leader election and
 * the operator all ask it. Returns 0; KCR_ENOENT (no file: not in a Pod),
 * KCR_ECONFIG (the file is blank), KCR_ETOOBIG (the name does not fit in buf, or
 * the file is over 64 KiB), KCR_EIO, KCR_ENOMEM. buf is "" on failure. Any
 * thread; blocks on the file system.
 */
KCR_EXTERN int kcr_service_account_namespace(const char *dir, char *buf, size_t size,
                                             kcr_error_t *err);

/* kcr_rest_config_ref takes another reference; returns cfg. Any thread. */
KCR_EXTERN kcr_rest_config_t *kcr_rest_config_ref(kcr_rest_config_t *cfg);

/* kcr_rest_config_unref drops a reference; the last one frees. NULL is ignored. */
KCR_EXTERN void kcr_rest_config_unref(kcr_rest_config_t *cfg);

/*
 * Accessors. Each returns a borrowed value that lives as long as cfg; NULL (or 0)
 * when the setting is absent. Any thread.
 *   server            "https://host:port" with any path prefix, no trailing slash.
 *   namespace         the context's namespace, the service-account namespace
 *                     in-cluster, else "default".
 *   ca                the CA bundle as PEM bytes (*len set), NULL: system roots;
 *                     as read at load (a CA file that changes later reaches
 *                     requests through kcr_credentials.ca_pem).
 *   tls_server_name   the name to verify the server's certificate against.
 *   insecure          1 when insecure-skip-tls-verify is set (loading logs a warning).
 *   proxy_url         proxy-url of the cluster (kcr_rest_config_proxy_for tells
 *                     which proxy a request really takes).
 *   impersonate_user / impersonate_uid / impersonate_groups (NULL-terminated;
 *                     never NULL, empty when there are none)
 *   impersonate_extra as-user-extra flattened into key, value pairs, NULL-terminated
 *                     (a key with several values appears once per value); never
 *                     NULL, empty when there are none.
 *   source            where the config came from: a file path or "in-cluster".
 */
KCR_EXTERN const char *kcr_rest_config_server(const kcr_rest_config_t *cfg);
KCR_EXTERN const char *kcr_rest_config_namespace(const kcr_rest_config_t *cfg);
KCR_EXTERN const unsigned char *kcr_rest_config_ca(const kcr_rest_config_t *cfg, size_t *len);
KCR_EXTERN const char *kcr_rest_config_tls_server_name(const kcr_rest_config_t *cfg);
KCR_EXTERN int kcr_rest_config_insecure(const kcr_rest_config_t *cfg);
KCR_EXTERN const char *kcr_rest_config_proxy_url(const kcr_rest_config_t *cfg);
KCR_EXTERN const char *kcr_rest_config_impersonate_user(const kcr_rest_config_t *cfg);
KCR_EXTERN const char *kcr_rest_config_impersonate_uid(const kcr_rest_config_t *cfg);
KCR_EXTERN const char *const *kcr_rest_config_impersonate_groups(const kcr_rest_config_t *cfg);
KCR_EXTERN const char *const *kcr_rest_config_impersonate_extra(const kcr_rest_config_t *cfg);
KCR_EXTERN const char *kcr_rest_config_source(const kcr_rest_config_t *cfg);

/*
 * kcr_credentials: a snapshot of what authenticates a request. Every pointer is
 * new (owned by the snapshot) or NULL; release with kcr_credentials_free.
 *   bearer_token       "Authorization: Bearer ..." value, without the prefix.
 *   username/password  basic auth.
 *   client_cert_pem / client_key_pem  TLS client certificate and key as PEM bytes
 *                      (handed to libcurl as blobs: key material never touches disk).
 *   expiry             when these stop being valid ({0,0}: not known).
 *   generation         changes whenever the credentials change (the CA
 *                      included); pass it back to
 *                      kcr_rest_config_credentials_rejected after a 401.
 *   ca_pem / ca_len    the CA bundle to verify the server with, as PEM bytes;
 *                      NULL: the system roots. Not a credential, but it changes
 *                      with them: a certificate-authority file is re-read like
 *                      the client certificate files (docs/config.md).
 */
typedef struct kcr_credentials {
  char *bearer_token;
  char *username;
  char *password;
  unsigned char *client_cert_pem;
  size_t client_cert_len;
  unsigned char *client_key_pem;
  size_t client_key_len;
  kcr_time_t expiry;
  uint64_t generation;
  unsigned char *ca_pem;
  size_t ca_len;
} kcr_credentials;

/*
 * kcr_rest_config_credentials fills *out with a snapshot of the current
 * credentials, refreshing them first when needed: a token file is re-read once a
 * minute and right after a 401 (a failed re-read keeps the previous token);
 * client-certificate and client-key files (both files, no -data) and a
 * certificate-authority file are re-read once a minute and right after a 401,
 * the new bytes taken only when the certificate matches the key and the CA
 * file holds a certificate (else the previous ones stay); an
 * exec plugin runs on first use, shortly before its expirationTimestamp (a
 * quarter of the credential's lifetime, at most 10 s, early) and after a 401.
 * Only one refresh runs at a time; concurrent callers wait for it and share its
 * outcome. May block while an exec plugin runs (bounded by its timeout, 30 s),
 * so never call it on the I/O loop thread. Errors: KCR_EAUTH (the plugin could
 * not start, failed - its exit code and stderr are in the message - or printed
 * no usable ExecCredential), KCR_ETIMEDOUT, KCR_ETOOBIG (plugin stdout over
 * 1 MiB), KCR_ENOENT/KCR_EIO (token file), KCR_ESYS, KCR_ENOMEM. *out is zeroed
 * on failure. Any thread.
 */
KCR_EXTERN int kcr_rest_config_credentials(kcr_rest_config_t *cfg, kcr_credentials *out,
                                           kcr_error_t *err);

/*
 * kcr_rest_config_credentials_fresh tells whether a snapshot of that generation is
 * still current and unexpired, without blocking: the client asks it before reusing
 * a cached snapshot. Any thread.
 */
KCR_EXTERN int kcr_rest_config_credentials_fresh(kcr_rest_config_t *cfg, uint64_t generation);

/*
 * kcr_rest_config_credentials_rejected records that the server answered 401 to
 * credentials of that generation: the next kcr_rest_config_credentials refreshes
 * (re-runs the exec plugin, re-reads the token file). A stale generation is
 * ignored, so many requests failing at once cause one refresh. Any thread.
 */
KCR_EXTERN void kcr_rest_config_credentials_rejected(kcr_rest_config_t *cfg, uint64_t generation);

/* kcr_credentials_free releases a snapshot's memory (wiping secrets) and zeroes it. */
KCR_EXTERN void kcr_credentials_free(kcr_credentials *c);

/*
 * kcr_rest_config_proxy_for tells which proxy a request to url goes through,
 * as client-go decides it. With the cluster's proxy-url: that, for every URL
 * (loopback included). Without: Go's http.ProxyFromEnvironment over the
 * environment the config was loaded with (kcr_config_options.env, else the
 * process's, read once at load): HTTPS_PROXY (else https_proxy) for https
 * URLs, HTTP_PROXY (else http_proxy) for http ones, the first that is set and
 * not empty, "http://" put in front of a value without a scheme; never for the
 * host "localhost" or a loopback address; not for a host NO_PROXY (else
 * no_proxy) matches: "*", an IP or CIDR, or a domain ("foo.com": it and its
 * subdomains; ".foo.com" or "*.foo.com": its subdomains), each with an optional
 * ":port". docs/client.md has every rule. Writes the proxy URL into buf (size
 * bytes), "" for a direct connection. Returns 0; KCR_ECONFIG when url has no
 * scheme and host, or when HTTP_PROXY would serve an http URL while
 * REQUEST_METHOD is set (Go refuses a proxy a CGI request may have set);
 * KCR_ETOOBIG; KCR_EINVAL. Messages quote no URL. Any thread.
 */
KCR_EXTERN int kcr_rest_config_proxy_for(const kcr_rest_config_t *cfg, const char *url, char *buf,
                                         size_t size, kcr_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* KCR_CONFIG_H */
