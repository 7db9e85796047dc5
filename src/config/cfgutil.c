/* SPDX-License-Identifier: MIT */
/*
 * cfgutil.c: small helpers the config layer shares: string vectors (wiped, as
 * they may carry plugin arguments and environment) and environment lookups.
 * Whole-file reads are util/file.h's and secret wiping util/alloc.h's.
 */
#include <string.h>

#include "config/cfgutil.h"
#include "util/alloc.h"

extern char **environ;

void kcr__strv_free(char **v) {
  if (!v)
    return;
  for (char **p = v; *p; p++)
    kcr__wipe_free_str(*p);
  kcr__free(v);
}

const char *kcr__env_get(char *const *env, const char *name) {
  size_t n = strlen(name);
  if (!env)
    env = environ;
  if (!env)
    return NULL;
  for (; *env; env++) {
    if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
      return *env + n + 1;
  }
  return NULL;
}
