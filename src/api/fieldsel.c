/* SPDX-License-Identifier: MIT */
/*
 * fieldsel.c: the field selector parser (api/fieldsel_internal.h).
 *
 * DESIGN. A field selector is much poorer than a label selector: no sets, no
 * existence tests, only equality and inequality, and which fields mean
 * anything depends on who answers (the API server knows a few per kind, the
 * cache its indexes, the fake client the object's name and namespace). So the
 * parser only cuts the text into terms and leaves their meaning to the caller.
 * It copies the text into the parsed selector and splits it there, so parsing
 * never allocates and a selector lives on the caller's stack; both the text
 * and the number of terms are bounded. The operator is looked for as upstream
 * does: "!=" anywhere in the term first, then "==", then "=".
 */
#include "api/fieldsel_internal.h"

#include <string.h>

int kcr__fieldsel_parse(const char *text, kcr__fieldsel_t *out, kcr_error_t *err) {
  size_t len;
  char *term, *next;

  out->n = 0;
  out->buf[0] = '\0';
  if (!text)
    return 0;
  len = strlen(text);
  if (len > KCR__FIELDSEL_MAX)
    return kcr_error_set(err, KCR_ETOOBIG, "field selector: longer than %d bytes",
                         KCR__FIELDSEL_MAX);
  memcpy(out->buf, text, len + 1);
  for (term = out->buf; term; term = next) {
    kcr__fieldsel_term_t *t;
    char *op, *value;
    bool negate = false;

    next = strchr(term, ',');
    if (next)
      *next++ = '\0';
    if (!*term)
      continue;
    if ((op = strstr(term, "!=")) != NULL) {
      negate = true;
      value = op + 2;
    } else if ((op = strstr(term, "==")) != NULL) {
      value = op + 2;
    } else if ((op = strchr(term, '=')) != NULL) {
      value = op + 1;
    } else {
      return kcr_error_set(err, KCR_EPARSE,
                           "field selector: term '%.200s' has no = or != (want field=value)", term);
    }
    *op = '\0';
    if (!*term)
      return kcr_error_set(err, KCR_EPARSE, "field selector: a term without a field");
    if (out->n == KCR__FIELDSEL_TERMS)
      return kcr_error_set(err, KCR_ETOOBIG, "field selector: more than %d terms",
                           KCR__FIELDSEL_TERMS);
    t = &out->terms[out->n++];
    t->field = term;
    t->value = value;
    t->negate = negate;
  }
  return 0;
}
