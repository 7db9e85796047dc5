/* SPDX-License-Identifier: MIT */
/*
 * file.c: bounded whole-file reads (util/file.h).
 *
 * DESIGN. A file read here may hold key material or a token, so it is read into
 * one buffer sized from fstat: a regular file with a size needs one allocation
 * and no realloc trail of copies left in freed memory. When stat cannot tell
 * (a pipe, a /proc file that reports 0) the buffer starts at a page and doubles,
 * each old copy wiped before it is freed, up to the caller's maximum. Past the
 * maximum one probe byte is enough to know the file is too big. Messages name
 * the path and its role, never the contents.
 */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"

#define UNKNOWN_SIZE_START 4096

/* grow_secret moves a buffer to a bigger one, wiping the old copy. */
static char *grow_secret(char *old, size_t used, size_t oldcap, size_t newcap) {
  char *p = kcr__malloc(newcap);
  if (!p)
    return NULL;
  memcpy(p, old, used);
  kcr__wipe_free(old, oldcap);
  return p;
}

static int too_big(kcr_error_t *err, const char *what, const char *path, size_t max) {
  return kcr_error_set(err, KCR_ETOOBIG, "%s %s: larger than its limit of %zu bytes", what, path,
                       max);
}

int kcr__read_file(const char *path, size_t max, const char *what, char **out, size_t *len,
                   kcr_error_t *err) {
  struct stat st;
  char *buf = NULL;
  size_t cap = 0, used = 0;
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
    rc = too_big(err, what, path, max);
    goto fail;
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0)
    cap = (size_t)st.st_size + 1;
  else
    cap = (max < UNKNOWN_SIZE_START ? max : UNKNOWN_SIZE_START) + 1;
  buf = kcr__malloc(cap);
  if (!buf) {
    rc = kcr_error_set(err, KCR_ENOMEM, "out of memory reading %s %s", what, path);
    goto fail;
  }
  for (;;) {
    ssize_t n;
    if (used + 1 == cap) {
      /* Full: one probe byte tells the end of the file from a file that grew
       * past its stat size (or whose size stat could not tell). */
      size_t ncap;
      char probe, *p;
      do
        n = read(fd, &probe, 1);
      while (n < 0 && errno == EINTR);
      if (n == 0)
        break;
      if (n < 0) {
        rc = kcr_error_set(err, KCR_EIO, "%s %s: read failed: %s", what, path, strerror(errno));
        goto fail;
      }
      if (used >= max) {
        rc = too_big(err, what, path, max);
        goto fail;
      }
      ncap = cap - 1 > (max - 1) / 2 ? max + 1 : (cap - 1) * 2 + 1;
      p = grow_secret(buf, used, cap, ncap);
      if (!p) {
        explicit_bzero(&probe, 1);
        rc = kcr_error_set(err, KCR_ENOMEM, "out of memory reading %s %s", what, path);
        goto fail;
      }
      buf = p;
      cap = ncap;
      buf[used++] = probe;
      explicit_bzero(&probe, 1);
      continue;
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
