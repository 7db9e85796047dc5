/* SPDX-License-Identifier: MIT */
/*
 * kubeconfig.h: the parsed, merged kubeconfig (kubeconfig.c). config.c turns it
 * into a kcr_rest_config_t; nothing here knows about credentials or plugins.
 */
#ifndef KCR_CONFIG_KUBECONFIG_H
#define KCR_CONFIG_KUBECONFIG_H

#include <jansson.h>
#include <stddef.h>

#include "config/cfgutil.h"
#include "kcr/error.h"

/* kcr__kc_exec: users[].user.exec of a kubeconfig, paths already resolved. */
typedef struct kcr__kc_exec {
  char *command;
  char **args; /* NULL-terminated, never NULL */
  size_t nargs;
  char **env; /* "NAME=value" entries, NULL-terminated, never NULL */
  size_t nenv;
  char *api_version;
  char *install_hint;
  char *interactive_mode;
  int provide_cluster_info;
} kcr__kc_exec_t;

/* kcr__kc_cluster: one named cluster. file is borrowed from the kubeconfig. */
typedef struct kcr__kc_cluster {
  char *name;
  const char *file;
  int line;
  char *server;
  char *ca_file;
  unsigned char *ca_data;
  size_t ca_data_len;
  char *tls_server_name;
  char *proxy_url;
  int insecure;
  int disable_compression;
  json_t *exec_extension; /* extensions[client.authentication.k8s.io/exec] */
} kcr__kc_cluster_t;

/* kcr__kc_user: one named user (AuthInfo). file is borrowed from the kubeconfig. */
typedef struct kcr__kc_user {
  char *name;
  const char *file;
  int line;
  char *client_cert_file;
  unsigned char *client_cert_data;
  size_t client_cert_data_len;
  char *client_key_file;
  unsigned char *client_key_data;
  size_t client_key_data_len;
  char *token;
  char *token_file;
  char *username;
  char *password;
  char *as;
  char *as_uid;
  char **as_groups; /* NULL-terminated, never NULL */
  size_t nas_groups;
  char **as_extra; /* key, value pairs, NULL-terminated, never NULL */
  size_t nas_extra;
  char *auth_provider; /* the auth-provider's name ("" when unnamed), NULL if absent */
  kcr__kc_exec_t *exec;
} kcr__kc_user_t;

/* kcr__kc_context: one named context. file is borrowed from the kubeconfig. */
typedef struct kcr__kc_context {
  char *name;
  const char *file;
  int line;
  char *cluster;
  char *user;
  char *namespace;
} kcr__kc_context_t;

/*
 * kcr__kubeconfig_t: the merged view of one or more kubeconfig files. Entries
 * keep the file (and line) that defined them, for messages and path resolution.
 */
typedef struct kcr__kubeconfig {
  char **files; /* owned; every file that was read */
  size_t nfiles;
  kcr__kc_cluster_t **clusters;
  size_t nclusters;
  kcr__kc_user_t **users;
  size_t nusers;
  kcr__kc_context_t **contexts;
  size_t ncontexts;
  char *current_context;
  const char *current_context_file;
} kcr__kubeconfig_t;

/*
 * kcr__kubeconfig_create makes an empty kubeconfig. Returns 0 or KCR_ENOMEM.
 */
int kcr__kubeconfig_create(kcr__kubeconfig_t **out, kcr_error_t *err);

/* kcr__kubeconfig_destroy frees kc and everything in it, wiping secrets. NULL ok. */
void kcr__kubeconfig_destroy(kcr__kubeconfig_t *kc);

/*
 * kcr__kubeconfig_merge_file parses the file at path and merges it into kc: a
 * named cluster/user/context already in kc is kept whole (the first file wins
 * it), current-context is taken only if kc has none. Relative paths in the file
 * resolve against its directory. Returns 0, KCR_ENOENT (no such file; the caller
 * decides whether that matters), KCR_EIO, KCR_ETOOBIG, KCR_ECONFIG (with file,
 * line and field), KCR_ENOMEM.
 */
int kcr__kubeconfig_merge_file(kcr__kubeconfig_t *kc, const char *path, kcr_error_t *err);

/*
 * kcr__kubeconfig_merge_text is kcr__kubeconfig_merge_file for text already in
 * memory; name is how messages call it and dir is where relative paths resolve.
 */
int kcr__kubeconfig_merge_text(kcr__kubeconfig_t *kc, const char *name, const char *dir,
                               const char *text, size_t len, kcr_error_t *err);

/* kcr__kubeconfig_find_* return the named entry (borrowed) or NULL. */
kcr__kc_cluster_t *kcr__kubeconfig_find_cluster(const kcr__kubeconfig_t *kc, const char *name);
kcr__kc_user_t *kcr__kubeconfig_find_user(const kcr__kubeconfig_t *kc, const char *name);
kcr__kc_context_t *kcr__kubeconfig_find_context(const kcr__kubeconfig_t *kc, const char *name);

#endif /* KCR_CONFIG_KUBECONFIG_H */
