/* SPDX-License-Identifier: MIT */
/*
 * cfgutil.h: the bottom of the config layer: its limits and the small helpers
 * every config file may use (cfgutil.c). It includes nothing of the layer, so
 * kubeconfig.h, exec.h, credentials.h and config_internal.h can all sit on it.
 */
#ifndef KCR_CONFIG_CFGUTIL_H
#define KCR_CONFIG_CFGUTIL_H

#include <stddef.h>

#include "kcr/time.h"

/* Limits. Every growable input of the config layer has one. */
#define KCR__KUBECONFIG_MAX_BYTES ((size_t)16 << 20) /* one kubeconfig file */
#define KCR__KUBECONFIG_MAX_DEPTH 64                 /* nested mappings and sequences in a file */
#define KCR__PEM_FILE_MAX_BYTES ((size_t)4 << 20)    /* CA bundle, client cert or key */
#define KCR__TOKEN_FILE_MAX_BYTES ((size_t)1 << 20)  /* token files */
#define KCR__SMALL_FILE_MAX_BYTES ((size_t)64 << 10) /* namespace file */
#define KCR__NAMESPACE_BUFSIZE 256                   /* a namespace name (63) fits */
#define KCR__EXEC_MAX_STDOUT ((size_t)1 << 20)       /* exec plugin stdout */
#define KCR__EXEC_STDERR_KEEP ((size_t)4096)         /* stderr kept for messages */
#define KCR__EXEC_TIMEOUT_NS (30 * KCR_NSEC_PER_SEC) /* exec plugin run time */
#define KCR__TOKEN_PERIOD_NS (60 * KCR_NSEC_PER_SEC) /* token file re-read period */
#define KCR__TLS_PERIOD_NS (60 * KCR_NSEC_PER_SEC)   /* cert, key and CA file re-read period */

/* kcr__strv_free frees a NULL-terminated array of strings. NULL ok. */
void kcr__strv_free(char **v);

/* kcr__env_get looks name up in env (NULL: the process's environment). Borrowed. */
const char *kcr__env_get(char *const *env, const char *name);

#endif /* KCR_CONFIG_CFGUTIL_H */
