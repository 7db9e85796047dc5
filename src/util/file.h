/* SPDX-License-Identifier: MIT */
/*
 * file.h: the one bounded reader of small whole files (kubeconfigs, token files,
 * CA bundles, client keys, the service-account namespace). Every caller names
 * its maximum; nothing reads an unbounded file.
 */
#ifndef KCR_UTIL_FILE_H
#define KCR_UTIL_FILE_H

#include <stddef.h>

#include "kcr/error.h"

/*
 * kcr__read_file reads the whole file at path, at most max bytes, into a new
 * NUL-terminated buffer: *out (free with kcr__free, or kcr__wipe_free when it
 * holds a secret) and *len (may be NULL; the byte count without the NUL). what
 * names the file's role in messages ("token file"). An empty file is a success
 * with *len 0; a file of exactly max bytes is read; one byte more is
 * KCR_ETOOBIG, also for files whose size stat cannot tell (pipes, /proc).
 * Returns 0, KCR_ENOENT (no such file), KCR_EIO (cannot open, a directory, a
 * read error), KCR_ETOOBIG or KCR_ENOMEM; *out is NULL on failure. Messages
 * name what and the path, never the contents, and buffers that held any of it
 * are wiped before they are freed. Any thread; blocks on the file system.
 */
int kcr__read_file(const char *path, size_t max, const char *what, char **out, size_t *len,
                   kcr_error_t *err);

#endif /* KCR_UTIL_FILE_H */
