/* SPDX-License-Identifier: MIT */
/*
 * fieldsel_internal.h: the one field selector parser of libkcr, beside the
 * label selectors of meta.c. The cache's list (which answers metadata.name,
 * metadata.namespace and indexed fields) and the fake client's list (which
 * answers metadata.name and metadata.namespace) both parse with it and decide
 * for themselves what each term means.
 */
#ifndef KCR_API_FIELDSEL_INTERNAL_H
#define KCR_API_FIELDSEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "kcr/error.h"

/* KCR__FIELDSEL_MAX: the longest selector text, in bytes. */
#define KCR__FIELDSEL_MAX 1023

/* KCR__FIELDSEL_TERMS: the most terms one selector holds. */
#define KCR__FIELDSEL_TERMS 32

/* kcr__fieldsel_term_t: one requirement, field = value or field != value. */
typedef struct kcr__fieldsel_term {
  const char *field; /* not empty; points into the selector's buffer */
  const char *value; /* may be empty; points into the selector's buffer */
  bool negate;       /* != */
} kcr__fieldsel_term_t;

/* kcr__fieldsel_t: a parsed selector; it owns the text its terms point into. */
typedef struct kcr__fieldsel {
  char buf[KCR__FIELDSEL_MAX + 1];
  kcr__fieldsel_term_t terms[KCR__FIELDSEL_TERMS];
  size_t n;
} kcr__fieldsel_t;

/*
 * kcr__fieldsel_parse parses text (NULL or "" select everything) as
 * apimachinery's fields.ParseSelector reads it: terms separated by commas
 * (empty ones skipped), each "field=value", "field==value" or "field!=value",
 * the operator found in that order of preference; nothing is trimmed. Fills
 * *out (no allocation). Returns 0, KCR_EPARSE (a term without an operator or
 * without a field) or KCR_ETOOBIG (text longer than KCR__FIELDSEL_MAX, or more
 * than KCR__FIELDSEL_TERMS terms), with err's message saying which.
 */
int kcr__fieldsel_parse(const char *text, kcr__fieldsel_t *out, kcr_error_t *err);

#endif /* KCR_API_FIELDSEL_INTERNAL_H */
