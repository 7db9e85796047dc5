/* SPDX-License-Identifier: MIT */
/*
 * cfgutil.c: small helpers the config layer shares: bounded whole-file reads,
 * wiping secrets before freeing them, string vectors and environment lookups.
 *
 * Design: a file read here may hold key material or a token, so it is read into
 * one buffer sized from fstat (no realloc trail of copies left in freed memory),
 * and error messages name the path and its role but never the contents. Reads are
 * bounded: past the caller's maximum the result is KCR_ETOOBIG.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_internal.h"
#include "util/alloc.h"

extern char **environ;

void kcr__wipe_free(void *p, size_t n) {
  if (!p)
    return;
  explicit_bzero(p, n);
  kcr__free(p);
}

void kcr__wipe_free_str(char *s) {
  if (s)
    kcr__wipe_free(s, strlen(s));
}

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

/* grow_secret moves a secret buffer to a bigger one, wiping the old copy. */
static char *grow_secret(char *old, size_t used, size_t oldcap, size_t newcap) {
  char *p = kcr__malloc(newcap);
  if (!p)
    return NULL;
  memcpy(p, old, used);
  kcr__wipe_free(old, oldcap);
  return p;
}

int kcr__read_file(const char *path, size_t max, const char *what, char **out, size_t *len,
                   kcr_error_t *err) {
  struct stat st;
  char *buf = NULL;
  size_t cap, used = 0;
  int fd, rc;

  *out = NULL;
  if (len)
    *len = 0;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR)
      return kcr_error_set(err, KCR_ENOENT, "%s %s: no such file", what, path);
    return kcr_error_set(err, KCR_EIO, "%s %s: cannot open: %s", what, path, strerror(e));
  }
  if (fstat(fd, &st) != 0) {
    rc = kcr_error_set(err, KCR_EIO, "%s %s: cannot stat: %s", what, path, strerror(errno));
    goto fail;
  }
  if (S_ISDIR(st.st_mode)) {
    rc = kcr_error_set(err, KCR_EIO, "%s %s: is a directory", what, path);
    goto fail;
  }
  if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > (uint64_t)max) {
    rc = kcr_error_set(err, KCR_ETOOBIG, "%s %s: larger than its limit of %zu bytes", what, path,
                       max);
    goto fail;
  }
  cap = (S_ISREG(st.st_mode) ? (size_t)st.st_size : 4096) + 1;
  buf = kcr__malloc(cap);
  if (!buf) {
    rc = kcr_error_set(err, KCR_ENOMEM, "out of memory reading %s %s", what, path);
    goto fail;
  }
  for (;;) {
    ssize_t n;
    if (used + 1 == cap) {
      size_t ncap;
      char *p;
      if (used >= max) {
        /* One byte past max is enough to know it is too big. */
        char probe;
        n = read(fd, &probe, 1);
        if (n == 0)
          break;
        rc = kcr_error_set(err, KCR_ETOOBIG, "%s %s: larger than its limit of %zu bytes", what,
                           path, max);
        goto fail;
      }
      ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
      p = grow_secret(buf, used, cap, ncap);
      if (!p) {
        rc = kcr_error_set(err, KCR_ENOMEM, "out of memory reading %s %s", what, path);
        goto fail;
      }
      buf = p;
      cap = ncap;
    }
    n = read(fd, buf + used, cap - 1 - used);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      rc = kcr_error_set(err, KCR_EIO, "%s %s: read failed: %s", what, path, strerror(errno));
      goto fail;
    }
    if (n == 0)
      break;
    used += (size_t)n;
  }
  close(fd);
  buf[used] = '\0';
  *out = buf;
  if (len)
    *len = used;
  return 0;

fail:
  if (buf)
    kcr__wipe_free(buf, cap);
  close(fd);
  return rc;
}
