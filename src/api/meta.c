/* SPDX-License-Identifier: MIT */
/*
 * meta.c: metadata accessors, cache keys, the managedFields transform and label
 * selectors.
 *
 * Accessors read straight from the jansson tree and never allocate: a cache key
 * is written into the caller's buffer, a split key points into the key itself.
 * That keeps the hot paths of the store and the DeltaFIFO (which compute a key
 * per event under their locks) free of allocation and of failure other than bad
 * input.
 *
 * Label selectors follow apimachinery's labels.Parse closely: the same lexer
 * (whitespace and the special symbols = ! ( ) , > < end an identifier; "in" and
 * "notin" are keywords only where an operator is expected), the same grammar
 * and the same validation of keys (qualified names) and values (label values).
 * The parser first cuts the whole text into tokens with their byte offsets, so
 * that every error can say where it happened. A parsed selector is immutable:
 * requirements sorted by key, each with a sorted, duplicate-free value list.
 */
#include <assert.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/meta_internal.h"
#include "kcr/buf.h"
#include "kcr/meta.h"
#include "util/alloc.h"

/* --- accessors ----------------------------------------------------------- */

json_t *kcr_meta_metadata(const json_t *obj) {
  json_t *m = json_is_object(obj) ? json_object_get(obj, "metadata") : NULL;
  return json_is_object(m) ? m : NULL;
}

/* meta_field returns metadata.<name> (borrowed) or NULL. */
static json_t *meta_field(const json_t *obj, const char *name) {
  json_t *m = kcr_meta_metadata(obj);
  return m ? json_object_get(m, name) : NULL;
}

/* str_or_empty returns v's string value, "" when v is not a string. */
static const char *str_or_empty(const json_t *v) {
  const char *s = json_is_string(v) ? json_string_value(v) : NULL;
  return s ? s : "";
}

const char *kcr_meta_namespace(const json_t *obj) {
  return str_or_empty(meta_field(obj, "namespace"));
}

const char *kcr_meta_name(const json_t *obj) {
  return str_or_empty(meta_field(obj, "name"));
}

const char *kcr_meta_uid(const json_t *obj) {
  return str_or_empty(meta_field(obj, "uid"));
}

const char *kcr_meta_resource_version(const json_t *obj) {
  return str_or_empty(meta_field(obj, "resourceVersion"));
}

const char *kcr_meta_generate_name(const json_t *obj) {
  return str_or_empty(meta_field(obj, "generateName"));
}

const char *kcr_meta_api_version(const json_t *obj) {
  return str_or_empty(json_is_object(obj) ? json_object_get(obj, "apiVersion") : NULL);
}

const char *kcr_meta_kind(const json_t *obj) {
  return str_or_empty(json_is_object(obj) ? json_object_get(obj, "kind") : NULL);
}

int64_t kcr_meta_generation(const json_t *obj) {
  json_t *g = meta_field(obj, "generation");
  return json_is_integer(g) ? (int64_t)json_integer_value(g) : 0;
}

bool kcr_meta_is_deleting(const json_t *obj) {
  json_t *d = meta_field(obj, "deletionTimestamp");
  return d != NULL && !json_is_null(d);
}

json_t *kcr_meta_labels(const json_t *obj) {
  json_t *l = meta_field(obj, "labels");
  return json_is_object(l) ? l : NULL;
}

json_t *kcr_meta_annotations(const json_t *obj) {
  json_t *a = meta_field(obj, "annotations");
  return json_is_object(a) ? a : NULL;
}

const char *kcr_meta_label(const json_t *obj, const char *key) {
  json_t *l = kcr_meta_labels(obj);
  json_t *v = l ? json_object_get(l, key) : NULL;
  return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *kcr_meta_annotation(const json_t *obj, const char *key) {
  json_t *a = kcr_meta_annotations(obj);
  json_t *v = a ? json_object_get(a, key) : NULL;
  return json_is_string(v) ? json_string_value(v) : NULL;
}

json_t *kcr_meta_owner_references(const json_t *obj) {
  json_t *r = meta_field(obj, "ownerReferences");
  return json_is_array(r) ? r : NULL;
}

json_t *kcr_meta_finalizers(const json_t *obj) {
  json_t *f = meta_field(obj, "finalizers");
  return json_is_array(f) ? f : NULL;
}

json_t *kcr_meta_controller_ref(const json_t *obj) {
  json_t *refs = kcr_meta_owner_references(obj);
  size_t i;
  json_t *ref;
  json_array_foreach(refs, i, ref) {
    if (json_is_true(json_object_get(ref, "controller")))
      return ref;
  }
  return NULL;
}

json_t *kcr_meta_path(const json_t *obj, const char *path) {
  const json_t *cur = obj;
  const char *p = path;
  assert(path);
  while (cur) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (!json_is_object(cur))
      return NULL;
    cur = json_object_getn(cur, p, n);
    if (!dot)
      return (json_t *)cur;
    p = dot + 1;
  }
  return NULL;
}

const char *kcr_meta_path_string(const json_t *obj, const char *path) {
  json_t *v = kcr_meta_path(obj, path);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* --- keys ---------------------------------------------------------------- */

int kcr__meta_join_key(const char *ns, size_t ns_len, const char *name, size_t name_len, char *buf,
                       size_t size) {
  size_t at = ns_len ? ns_len + 1 : 0;
  assert(buf && size > 0);
  buf[0] = '\0';
  if (name_len == 0)
    return KCR_EINVAL;
  if (at + name_len + 1 > size)
    return KCR_ETOOBIG;
  if (ns_len) {
    memcpy(buf, ns, ns_len);
    buf[ns_len] = '/';
  }
  memcpy(buf + at, name, name_len);
  buf[at + name_len] = '\0';
  return 0;
}

int kcr_meta_key(const json_t *obj, char *buf, size_t size) {
  json_t *name = meta_field(obj, "name");
  const char *ns = kcr_meta_namespace(obj);
  assert(buf && size > 0);
  if (!json_is_string(name)) {
    buf[0] = '\0';
    return KCR_EINVAL;
  }
  return kcr__meta_join_key(ns, strlen(ns), json_string_value(name), json_string_length(name), buf,
                            size);
}

int kcr_meta_key_fn(const json_t *obj, char *buf, size_t size, void *data) {
  (void)data;
  return kcr_meta_key(obj, buf, size);
}

int kcr_meta_split_key(const char *key, size_t *ns_len, const char **name) {
  const char *slash = strchr(key, '/');
  assert(key && ns_len && name);
  if (!slash) {
    *ns_len = 0;
    *name = key;
    return *key ? 0 : KCR_EINVAL;
  }
  if (strchr(slash + 1, '/') || slash[1] == '\0')
    return KCR_EINVAL;
  *ns_len = (size_t)(slash - key);
  *name = slash + 1;
  return 0;
}

int kcr_meta_strip_managed_fields(json_t *obj) {
  json_t *m = kcr_meta_metadata(obj);
  if (m)
    (void)json_object_del(m, "managedFields");
  return 0;
}

/* --- label selectors ----------------------------------------------------- */

typedef enum op {
  OP_EXISTS,
  OP_NOT_EXISTS,
  OP_EQUALS,
  OP_DOUBLE_EQUALS,
  OP_NOT_EQUALS,
  OP_IN,
  OP_NOT_IN,
  OP_GT,
  OP_LT
} op_t;

/* req: one requirement; vals sorted and unique; num is the value of Gt/Lt. */
typedef struct req {
  char *key;
  op_t op;
  size_t nvals;
  char **vals;
  int64_t num;
} req_t;

struct kcr_selector {
  size_t n;
  req_t *reqs;
};

typedef enum tok {
  T_ERROR,
  T_EOS,
  T_CLOSE,
  T_COMMA,
  T_NOT,
  T_DEQ,
  T_EQ,
  T_GT,
  T_IDENT,
  T_IN,
  T_LT,
  T_NEQ,
  T_NOTIN,
  T_OPEN
} tok_t;

/* token: a lexeme of the selector text: [pos, pos + len). */
typedef struct token {
  tok_t t;
  size_t pos, len;
} token_t;

/* parser: the token list and the cursor. */
typedef struct parser {
  const char *text;
  token_t *toks;
  size_t ntoks, cur;
  kcr_error_t *err;
} parser_t;

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

/* lex_special matches the longest operator at p (as upstream's greedy scan). */
static tok_t lex_special(const char *p, size_t *len) {
  *len = 1;
  switch (p[0]) {
  case '(':
    return T_OPEN;
  case ')':
    return T_CLOSE;
  case ',':
    return T_COMMA;
  case '>':
    return T_GT;
  case '<':
    return T_LT;
  case '=':
    if (p[1] == '=') {
      *len = 2;
      return T_DEQ;
    }
    return T_EQ;
  case '!':
    if (p[1] == '=') {
      *len = 2;
      return T_NEQ;
    }
    return T_NOT;
  default:
    return T_ERROR;
  }
}

/* lex cuts text into tokens, ending with T_EOS. */
static int lex(parser_t *ps) {
  const char *s = ps->text;
  size_t i = 0, cap = 16;
  ps->toks = kcr__malloc(cap * sizeof(*ps->toks));
  if (!ps->toks)
    return KCR_ENOMEM;
  for (;;) {
    token_t tk;
    while (is_space(s[i]))
      i++;
    tk.pos = i;
    if (s[i] == '\0') {
      tk.t = T_EOS;
      tk.len = 0;
    } else if (is_special(s[i])) {
      tk.t = lex_special(s + i, &tk.len);
    } else {
      size_t j = i;
      while (s[j] && !is_space(s[j]) && !is_special(s[j]))
        j++;
      tk.len = j - i;
      tk.t = T_IDENT;
      if (tk.len == 2 && memcmp(s + i, "in", 2) == 0)
        tk.t = T_IN;
      else if (tk.len == 5 && memcmp(s + i, "notin", 5) == 0)
        tk.t = T_NOTIN;
    }
    if (ps->ntoks == cap) {
      token_t *n = kcr__realloc(ps->toks, 2 * cap * sizeof(*ps->toks));
      if (!n)
        return KCR_ENOMEM;
      ps->toks = n;
      cap *= 2;
    }
    ps->toks[ps->ntoks++] = tk;
    if (tk.t == T_EOS)
      return 0;
    i += tk.len;
  }
}

/* peek returns the current token; in a value position keywords are identifiers. */
static token_t peek(const parser_t *ps, bool values) {
  token_t tk = ps->toks[ps->cur];
  if (values && (tk.t == T_IN || tk.t == T_NOTIN))
    tk.t = T_IDENT;
  return tk;
}

static token_t next(parser_t *ps, bool values) {
  token_t tk = peek(ps, values);
  if (tk.t != T_EOS)
    ps->cur++;
  return tk;
}

/* quoted: how much of a token an error quotes: at most 64 bytes, cut before a
 * UTF-8 continuation byte so that the message stays valid UTF-8 (an Event or a
 * condition built from it would otherwise be refused). */
static int quoted(const char *s, size_t len) {
  size_t n = len > 64 ? 64 : len;
  while (n < len && n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
    n--;
  return (int)n;
}

/* fail records a parse error at tk: "found 'lit', expected: what". */
static int fail(parser_t *ps, token_t tk, const char *what) {
  return kcr_error_set(ps->err, KCR_EPARSE, "selector: at %zu: found '%.*s', expected: %s", tk.pos,
                       quoted(ps->text + tk.pos, tk.len), ps->text + tk.pos, what);
}

static bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* valid_name: 1..63 of [A-Za-z0-9._-], alphanumeric at both ends. Empty ok if allow_empty. */
static bool valid_name(const char *s, size_t n, bool allow_empty) {
  if (n == 0)
    return allow_empty;
  if (n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
      return false;
  return true;
}

/* valid_subdomain: a DNS-1123 subdomain (lower case labels joined by dots). */
static bool valid_subdomain(const char *s, size_t n) {
  size_t start = 0;
  if (n == 0 || n > 253)
    return false;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == '.') {
      size_t len = i - start;
      if (len == 0 || s[start] == '-' || s[i - 1] == '-')
        return false;
      start = i + 1;
    } else if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-')) {
      return false;
    }
  }
  return true;
}

/* valid_key: a qualified name, "[prefix/]name". */
static bool valid_key(const char *s, size_t n) {
  const char *slash = memchr(s, '/', n);
  if (!slash)
    return valid_name(s, n, false);
  if (memchr(slash + 1, '/', n - (size_t)(slash - s) - 1))
    return false;
  return valid_subdomain(s, (size_t)(slash - s)) &&
         valid_name(slash + 1, n - (size_t)(slash - s) - 1, false);
}

static void req_free(req_t *r) {
  kcr__free(r->key);
  for (size_t i = 0; i < r->nvals; i++)
    kcr__free(r->vals[i]);
  kcr__free(r->vals);
}

/* add_value inserts a value into r's sorted set (duplicates ignored). */
static int add_value(req_t *r, const char *s, size_t n) {
  size_t lo = 0, hi = r->nvals;
  char *v = kcr__strndup(s, n), **nv;
  if (!v)
    return KCR_ENOMEM;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(r->vals[mid], v);
    if (c == 0) {
      kcr__free(v);
      return 0;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  nv = kcr__realloc(r->vals, (r->nvals + 1) * sizeof(*nv));
  if (!nv) {
    kcr__free(v);
    return KCR_ENOMEM;
  }
  r->vals = nv;
  memmove(nv + lo + 1, nv + lo, (r->nvals - lo) * sizeof(*nv));
  nv[lo] = v;
  r->nvals++;
  return 0;
}

/* check_value validates a value token of r as a label value. */
static int check_value(parser_t *ps, token_t tk) {
  if (!valid_name(ps->text + tk.pos, tk.len, true))
    return kcr_error_set(ps->err, KCR_EPARSE,
                         "selector: at %zu: invalid label value '%.*s': at most 63 characters of "
                         "[A-Za-z0-9._-], starting and ending with an alphanumeric",
                         tk.pos, quoted(ps->text + tk.pos, tk.len), ps->text + tk.pos);
  return 0;
}

/* parse_set parses "(v1, v2, ...)" for in/notin, including upstream's empty forms. */
static int parse_set(parser_t *ps, req_t *r) {
  token_t tk = next(ps, true);
  int rc;
  if (tk.t != T_OPEN)
    return fail(ps, tk, "'('");
  tk = peek(ps, true);
  if (tk.t == T_CLOSE) { /* "()" is the set {""} */
    next(ps, true);
    return add_value(r, "", 0);
  }
  if (tk.t != T_IDENT && tk.t != T_COMMA)
    return fail(ps, tk, "',', ')' or identifier");
  for (;;) {
    tk = next(ps, true);
    if (tk.t == T_IDENT) {
      if ((rc = check_value(ps, tk)) || (rc = add_value(r, ps->text + tk.pos, tk.len)))
        return rc;
      tk = peek(ps, true);
      if (tk.t == T_COMMA)
        continue;
      if (tk.t == T_CLOSE)
        break;
      return fail(ps, tk, "',' or ')'");
    }
    if (tk.t != T_COMMA)
      return fail(ps, tk, "',', or identifier");
    /* A comma with nothing before it, after it or between two is the empty value. */
    if (r->nvals == 0 && (rc = add_value(r, "", 0)))
      return rc;
    tk = peek(ps, true);
    if (tk.t == T_CLOSE) {
      if ((rc = add_value(r, "", 0)))
        return rc;
      break;
    }
    if (tk.t == T_COMMA) {
      next(ps, true);
      if ((rc = add_value(r, "", 0)))
        return rc;
    }
  }
  tk = next(ps, true);
  assert(tk.t == T_CLOSE);
  return 0;
}

/*
 * parse_int64 reads s[0..n) as Go's strconv.ParseInt(s, 10, 64) does: an optional
 * sign, then one or more decimal digits, nothing else, within int64. Unlike
 * strtoll it skips no leading white space, so the label " 2" is not a number.
 */
static bool parse_int64(const char *s, size_t n, int64_t *out) {
  bool neg = false;
  uint64_t v = 0, limit = (uint64_t)INT64_MAX;
  size_t i = 0;
  if (n > 0 && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    limit += neg; /* |INT64_MIN| */
    i = 1;
  }
  if (i == n)
    return false;
  for (; i < n; i++) {
    unsigned d = (unsigned char)s[i] - '0';
    if (d > 9 || v > (limit - d) / 10)
      return false;
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return true;
}

/* parse_exact parses the value after =, ==, !=, > or <; nothing means "" (which
 * > and < refuse: it is not an integer, as upstream's NewRequirement says). */
static int parse_exact(parser_t *ps, req_t *r) {
  token_t tk = peek(ps, true);
  int rc;
  if (tk.t == T_EOS || tk.t == T_COMMA) {
    if (r->op == OP_GT || r->op == OP_LT) {
      tk.len = 0;
      goto notint;
    }
    return add_value(r, "", 0);
  }
  tk = next(ps, true);
  if (tk.t != T_IDENT)
    return fail(ps, tk, "identifier");
  if ((rc = check_value(ps, tk)))
    return rc;
  if ((r->op == OP_GT || r->op == OP_LT) && !parse_int64(ps->text + tk.pos, tk.len, &r->num))
    goto notint;
  return add_value(r, ps->text + tk.pos, tk.len);
notint:
  return kcr_error_set(
      ps->err, KCR_EPARSE,
      "selector: at %zu: for '>' and '<' the value must be an integer, found '%.*s'", tk.pos,
      quoted(ps->text + tk.pos, tk.len), ps->text + tk.pos);
}

/* parse_req parses one requirement into r (zeroed by the caller). */
static int parse_req(parser_t *ps, req_t *r) {
  token_t tk = next(ps, true);
  bool negated = false;
  if (tk.t == T_NOT) {
    negated = true;
    tk = next(ps, true);
  }
  if (tk.t != T_IDENT)
    return fail(ps, tk, "identifier");
  if (!valid_key(ps->text + tk.pos, tk.len))
    return kcr_error_set(ps->err, KCR_EPARSE,
                         "selector: at %zu: invalid label key '%.*s': a qualified name "
                         "([prefix/]name, name at most 63 characters of [A-Za-z0-9._-])",
                         tk.pos, quoted(ps->text + tk.pos, tk.len), ps->text + tk.pos);
  r->key = kcr__strndup(ps->text + tk.pos, tk.len);
  if (!r->key)
    return KCR_ENOMEM;
  if (negated) {
    r->op = OP_NOT_EXISTS;
    return 0;
  }
  tk = peek(ps, true);
  if (tk.t == T_EOS || tk.t == T_COMMA) {
    r->op = OP_EXISTS;
    return 0;
  }
  tk = next(ps, false);
  switch (tk.t) {
  case T_IN:
    r->op = OP_IN;
    return parse_set(ps, r);
  case T_NOTIN:
    r->op = OP_NOT_IN;
    return parse_set(ps, r);
  case T_EQ:
    r->op = OP_EQUALS;
    break;
  case T_DEQ:
    r->op = OP_DOUBLE_EQUALS;
    break;
  case T_NEQ:
    r->op = OP_NOT_EQUALS;
    break;
  case T_GT:
    r->op = OP_GT;
    break;
  case T_LT:
    r->op = OP_LT;
    break;
  default:
    return fail(ps, tk, "!=, <, =, ==, >, in, notin");
  }
  return parse_exact(ps, r);
}

void kcr_selector_destroy(kcr_selector_t *sel) {
  if (!sel)
    return;
  for (size_t i = 0; i < sel->n; i++)
    req_free(&sel->reqs[i]);
  kcr__free(sel->reqs);
  kcr__free(sel);
}

/* parse_all runs the top-level loop: requirements separated by commas. */
static int parse_all(parser_t *ps, kcr_selector_t *sel) {
  size_t cap = 0;
  for (;;) {
    token_t tk = peek(ps, true);
    int rc;
    if (tk.t == T_EOS)
      return 0;
    if (tk.t != T_IDENT && tk.t != T_NOT)
      return fail(ps, tk, "!, identifier, or 'end of string'");
    if (sel->n == cap) {
      size_t ncap = cap ? cap * 2 : 4;
      req_t *n = kcr__realloc(sel->reqs, ncap * sizeof(*n));
      if (!n)
        return KCR_ENOMEM;
      sel->reqs = n;
      cap = ncap;
    }
    memset(&sel->reqs[sel->n], 0, sizeof(req_t));
    sel->n++; /* counted at once so that a failure frees what was parsed */
    if ((rc = parse_req(ps, &sel->reqs[sel->n - 1])))
      return rc;
    tk = next(ps, true);
    if (tk.t == T_EOS)
      return 0;
    if (tk.t != T_COMMA)
      return fail(ps, tk, "',' or 'end of string'");
    tk = peek(ps, true);
    if (tk.t != T_IDENT && tk.t != T_NOT)
      return fail(ps, tk, "identifier after ','");
  }
}

int kcr_selector_parse(const char *text, kcr_selector_t **out, kcr_error_t *err) {
  parser_t ps = {.text = text, .err = err};
  kcr_selector_t *sel;
  int rc;

  assert(text && out);
  *out = NULL;
  if (strlen(text) > KCR_SELECTOR_MAX)
    return kcr_error_set(err, KCR_ETOOBIG, "selector: longer than %d bytes", KCR_SELECTOR_MAX);
  sel = kcr__calloc(1, sizeof(*sel));
  if (!sel)
    return kcr_error_set(err, KCR_ENOMEM, "selector: out of memory");
  if ((rc = lex(&ps)) == 0)
    rc = parse_all(&ps, sel);
  kcr__free(ps.toks);
  if (rc) {
    kcr_selector_destroy(sel);
    if (rc == KCR_ENOMEM)
      kcr_error_set(err, rc, "selector: out of memory");
    return rc;
  }
  /* Stable insertion sort by key, as apimachinery sorts requirements. */
  for (size_t i = 1; i < sel->n; i++) {
    req_t r = sel->reqs[i];
    size_t j = i;
    while (j > 0 && strcmp(sel->reqs[j - 1].key, r.key) > 0) {
      sel->reqs[j] = sel->reqs[j - 1];
      j--;
    }
    sel->reqs[j] = r;
  }
  *out = sel;
  return 0;
}

int kcr__selector_lex(const char *text, struct kcr_buf *buf) {
  static const char *const names[] = {
      [T_ERROR] = "ERROR", [T_EOS] = "EOS",  [T_CLOSE] = "CLOSE", [T_COMMA] = "COMMA",
      [T_NOT] = "NOT",     [T_DEQ] = "DEQ",  [T_EQ] = "EQ",       [T_GT] = "GT",
      [T_IDENT] = "IDENT", [T_IN] = "IN",    [T_LT] = "LT",       [T_NEQ] = "NEQ",
      [T_NOTIN] = "NOTIN", [T_OPEN] = "OPEN"};
  parser_t ps = {.text = text};
  int rc;
  assert(text && buf);
  if (strlen(text) > KCR_SELECTOR_MAX)
    return KCR_ETOOBIG;
  rc = lex(&ps);
  for (size_t i = 0; i < ps.ntoks && rc == 0; i++)
    rc = kcr_buf_appendf(buf, "%s%s'%.*s'", i ? " " : "", names[ps.toks[i].t], (int)ps.toks[i].len,
                         text + ps.toks[i].pos);
  kcr__free(ps.toks);
  return rc;
}

/* has_value tells whether v is in r's sorted value set. */
static bool has_value(const req_t *r, const char *v) {
  size_t lo = 0, hi = r->nvals;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(r->vals[mid], v);
    if (c == 0)
      return true;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

static bool req_matches(const req_t *r, const json_t *labels) {
  json_t *jv = labels ? json_object_get(labels, r->key) : NULL;
  const char *v = json_is_string(jv) ? json_string_value(jv) : NULL;
  switch (r->op) {
  case OP_EXISTS:
    return v != NULL;
  case OP_NOT_EXISTS:
    return v == NULL;
  case OP_EQUALS:
  case OP_DOUBLE_EQUALS:
  case OP_IN:
    return v != NULL && has_value(r, v);
  case OP_NOT_EQUALS:
  case OP_NOT_IN:
    return v == NULL || !has_value(r, v);
  case OP_GT:
  case OP_LT: {
    int64_t n;
    if (!v || !parse_int64(v, json_string_length(jv), &n))
      return false;
    return r->op == OP_GT ? n > r->num : n < r->num;
  }
  }
  return false;
}

bool kcr_selector_matches(const kcr_selector_t *sel, const json_t *labels) {
  assert(sel);
  if (labels && !json_is_object(labels))
    labels = NULL;
  for (size_t i = 0; i < sel->n; i++)
    if (!req_matches(&sel->reqs[i], labels))
      return false;
  return true;
}

bool kcr_selector_matches_obj(const kcr_selector_t *sel, const json_t *obj) {
  return kcr_selector_matches(sel, kcr_meta_labels(obj));
}

bool kcr_selector_empty(const kcr_selector_t *sel) {
  return sel == NULL || sel->n == 0;
}

int kcr_selector_string(const kcr_selector_t *sel, struct kcr_buf *buf) {
  static const char *const ops[] = {
      [OP_EXISTS] = "",          [OP_NOT_EXISTS] = "",   [OP_EQUALS] = "=",
      [OP_DOUBLE_EQUALS] = "==", [OP_NOT_EQUALS] = "!=", [OP_IN] = " in ",
      [OP_NOT_IN] = " notin ",   [OP_GT] = ">",          [OP_LT] = "<"};
  int rc = 0;
  assert(sel && buf);
  for (size_t i = 0; i < sel->n && rc == 0; i++) {
    const req_t *r = &sel->reqs[i];
    bool set = r->op == OP_IN || r->op == OP_NOT_IN;
    if (i > 0)
      rc = kcr_buf_appendc(buf, ',');
    if (rc == 0 && r->op == OP_NOT_EXISTS)
      rc = kcr_buf_appendc(buf, '!');
    if (rc == 0)
      rc = kcr_buf_appendf(buf, "%s%s%s", r->key, ops[r->op], set ? "(" : "");
    for (size_t j = 0; j < r->nvals && rc == 0; j++)
      rc = kcr_buf_appendf(buf, "%s%s", j ? "," : "", r->vals[j]);
    if (rc == 0 && set)
      rc = kcr_buf_appendc(buf, ')');
  }
  if (rc == 0 && buf->len == 0)
    rc = kcr_buf_append(buf, "", 0);
  return rc;
}

/* ---- kinds ---- */

int kcr_meta_gvk(const json_t *obj, kcr_gvk *out, char *group, size_t size) {
  const char *av = kcr_meta_api_version(obj), *kind = kcr_meta_kind(obj), *slash;
  size_t glen;
  memset(out, 0, sizeof(*out));
  if (!*av || !*kind || size == 0)
    return KCR_EINVAL;
  slash = strchr(av, '/');
  glen = slash ? (size_t)(slash - av) : 0;
  if (glen >= size || (slash && !slash[1]))
    return KCR_EINVAL;
  memcpy(group, av, glen);
  group[glen] = '\0';
  out->group = group;
  out->version = slash ? slash + 1 : av;
  out->kind = kind;
  return 0;
}

int kcr_gvk_api_version(const kcr_gvk *gvk, char *buf, size_t size) {
  int n;
  if (!gvk->version || !*gvk->version)
    return KCR_EINVAL;
  n = gvk->group && *gvk->group ? snprintf(buf, size, "%s/%s", gvk->group, gvk->version)
                                : snprintf(buf, size, "%s", gvk->version);
  return n < 0 || (size_t)n >= size ? KCR_ETOOBIG : n;
}
