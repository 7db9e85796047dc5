/* SPDX-License-Identifier: MIT */
/*
 * fuzz_selector.c: kcr_selector_parse on arbitrary text (up to the first NUL).
 * A refusal is KCR_EPARSE or KCR_ETOOBIG with a "selector: " message that is
 * valid UTF-8 when the text was; what parses prints a canonical form that parses
 * back to the same form, and both selectors agree on label sets built from the
 * text's own identifiers.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kcr/buf.h"
#include "kcr/meta.h"

/* utf8_ok checks that s is valid UTF-8 (jansson's json_string refuses anything else). */
static int utf8_ok(const char *s) {
  json_t *j = json_string(s);
  int ok = j != NULL;
  json_decref(j);
  return ok;
}

static char *canonical(const kcr_selector_t *sel) {
  kcr_buf_t b;
  char *out;
  kcr_buf_init(&b, (size_t)4 * KCR_SELECTOR_MAX);
  FUZZ_CHECK(kcr_selector_string(sel, &b) == 0);
  out = strdup(kcr_buf_cstr(&b));
  kcr_buf_free(&b);
  FUZZ_CHECK(out != NULL);
  return out;
}

/* is_delim: the bytes that end an identifier in the selector syntax. */
static int is_delim(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || strchr("=!(),<>", c) != NULL;
}

/*
 * label_sets builds four label maps from the runs of non-delimiter bytes of
 * text taken in pairs (key, value): all pairs; every other pair; values replaced
 * by "7"; the empty map. Runs that are not valid UTF-8 are skipped.
 */
static void label_sets(const char *text, json_t *sets[4]) {
  char *key = NULL;
  size_t pair = 0;
  for (int i = 0; i < 4; i++)
    sets[i] = json_object();
  for (const char *p = text; *p;) {
    size_t n = 0;
    char *word;
    while (*p && is_delim(*p))
      p++;
    while (p[n] && !is_delim(p[n]))
      n++;
    if (n == 0)
      break;
    word = strndup(p, n);
    p += n;
    FUZZ_CHECK(word != NULL);
    if (!key) {
      key = word;
      continue;
    }
    if (utf8_ok(key) && utf8_ok(word)) {
      json_object_set_new(sets[0], key, json_string(word));
      if (pair % 2 == 0)
        json_object_set_new(sets[1], key, json_string(word));
      json_object_set_new(sets[2], key, json_string("7"));
    }
    free(key);
    free(word);
    key = NULL;
    pair++;
  }
  free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = strndup((const char *)data, size);
  kcr_selector_t *sel = NULL, *again = NULL;
  kcr_error_t err;
  json_t *sets[4];
  char *c1, *c2;
  int rc;

  FUZZ_CHECK(text != NULL);
  kcr_error_clear(&err);
  rc = kcr_selector_parse(text, &sel, &err);
  if (rc != 0) {
    FUZZ_CHECK(rc == KCR_EPARSE || rc == KCR_ETOOBIG);
    FUZZ_CHECK(sel == NULL && err.code == rc);
    FUZZ_CHECK(memchr(err.message, '\0', sizeof(err.message)) != NULL);
    FUZZ_CHECK(strncmp(err.message, "selector: ", 10) == 0);
    if (utf8_ok(text))
      FUZZ_CHECK(utf8_ok(err.message));
    free(text);
    return 0;
  }
  c1 = canonical(sel);
  FUZZ_CHECK(kcr_selector_parse(c1, &again, NULL) == 0);
  c2 = canonical(again);
  FUZZ_CHECK(strcmp(c1, c2) == 0);
  FUZZ_CHECK(kcr_selector_empty(sel) == kcr_selector_empty(again));
  FUZZ_CHECK(kcr_selector_empty(sel) == (c1[0] == '\0'));
  label_sets(text, sets);
  for (size_t i = 0; i < 4; i++) {
    FUZZ_CHECK(kcr_selector_matches(sel, sets[i]) == kcr_selector_matches(again, sets[i]));
    json_decref(sets[i]);
  }
  FUZZ_CHECK(kcr_selector_matches(sel, NULL) == kcr_selector_matches(again, NULL));
  free(c1);
  free(c2);
  kcr_selector_destroy(sel);
  kcr_selector_destroy(again);
  free(text);
  return 0;
}
