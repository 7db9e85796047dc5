/* SPDX-License-Identifier: MIT */
/*
 * warning_internal.h: the API server's Warning headers (warning.c): parsing
 * them as apimachinery's ParseWarningHeaders does, and remembering which texts
 * a client has logged.
 */
#ifndef KCR_CLIENT_WARNING_INTERNAL_H
#define KCR_CLIENT_WARNING_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/client.h"

/* kcr__warnings: a growing list of parsed warnings. Zero-initialise. */
typedef struct kcr__warnings {
  kcr_warning *items;
  size_t n;
  size_t cap;
} kcr__warnings;

/*
 * kcr__warnings_parse parses one Warning header value (len bytes) and appends
 * each warning in it to *list, as apimachinery's ParseWarningHeader does:
 * `code agent "text" ["date"]`, comma-separated, a three-digit code, an agent
 * of valid UTF-8 without control characters, a quoted text whose backslash
 * escapes are resolved and whose RFC 2047 encoded words are decoded (utf-8,
 * iso-8859-1, us-ascii; B and Q), which must then be valid UTF-8 without
 * control characters. At the first malformed warning the rest of the value is
 * skipped, what came before it kept. Returns 0 or KCR_ENOMEM (the list keeps
 * what it had).
 */
int kcr__warnings_parse(const char *value, size_t len, kcr__warnings *list);

/* kcr__warnings_free releases the list's strings and array and zeroes it. */
void kcr__warnings_free(kcr__warnings *list);

/*
 * kcr__warning_seen_t: the texts a client has logged, as 64-bit hashes (a
 * long-running controller must not grow without bound: at most
 * KCR__WARNING_SEEN_MAX texts are remembered, then the memory starts over, so
 * a text can be logged again after that many others). Thread-safe.
 */
#define KCR__WARNING_SEEN_MAX 4096
typedef struct kcr__warning_seen {
  pthread_mutex_t mu;
  uint64_t *slots; /* protected by mu: open addressing, 2 * MAX slots, 0 empty */
  size_t count;    /* protected by mu */
} kcr__warning_seen_t;

void kcr__warning_seen_init(kcr__warning_seen_t *s);
void kcr__warning_seen_free(kcr__warning_seen_t *s);

/* kcr__warning_seen_first records text and tells whether it is new (true also
 * when memory for the table is short: better a repeat than a lost warning). */
bool kcr__warning_seen_first(kcr__warning_seen_t *s, const char *text);

#endif /* KCR_CLIENT_WARNING_INTERNAL_H */
