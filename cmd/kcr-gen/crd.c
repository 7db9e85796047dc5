/* SPDX-License-Identifier: MIT */
/*
 * crd.c: `kcr-gen crd`: CRDs from API type headers, the job controller-gen
 * does for kubebuilder's Go types. header.c parses a header into structs,
 * members and their `//` comments; this file reads kubebuilder's markers in
 * those comments (the same names and argument syntax, so a Go type's markers
 * port verbatim), builds each struct's OpenAPI v3 schema as a jansson value
 * (a struct used by value is copied in where it is used, as controller-gen
 * flattens its references), and assembles one CustomResourceDefinition per
 * group and kind from every header that gives a version of it.
 *
 * The schemas of Kubernetes' own types (metav1.Condition, ObjectMeta,
 * TypeMeta, IntOrString, Quantity, Time; JobTemplateSpec and ObjectReference
 * in crd_known_large.json, read only when used) come from crd_known.json,
 * embedded at build time: they are what controller-gen writes, which the API server's OpenAPI
 * (k8s.json) is not (its descriptions are joined into one line and it lacks
 * the validation markers).
 *
 * Unknown `+kubebuilder:` markers are errors (a misspelt Minimun would
 * otherwise vanish); markers of other tools (+genclient, +k8s:, +kcr:rbac) and
 * kubebuilder's non-CRD ones (+kubebuilder:rbac, :webhook,
 * :webhookconfiguration, :docs-gen, :object:generate) are ignored;
 * +kubebuilder:skip skips the header. Every error is FILE:LINE:COL
 * and a reason.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crd.h"
#include "gen.h"
#include "header.h"
#include "kcr/buf.h"
#include "kcr_gen_crd_known.h"
#include "kcr_gen_crd_known_large.h"
#include "util/alloc.h"

/* vkind: one version of one kind, from one header. All members new. */
typedef struct vkind {
  char *group, *kind, *version, *where;
  char *scope;   /* from +kubebuilder:resource:scope, or NULL */
  json_t *names; /* plural, singular, shortNames, categories from markers */
  json_t *entry; /* the CRD's spec.versions[] element */
  bool storage;  /* +kubebuilder:storageversion */
} vkind;

struct crd_set {
  vkind *v;
  size_t n, cap;
  json_t *known; /* crd_known.json */
  json_t *large; /* crd_known_large.json, once a header needs it */
  long max_desc; /* crd_set_max_desc_len; -1: descriptions kept whole */
  /* the types of the headers added so far, for the headers after them: name
   * -> {"schema", "where"}, or {"where", "conflict"} when two headers declare
   * the name with different schemas (a name used by neither is no error) */
  json_t *shared;
  /* the C layout of the types (crd_set_layout): every header's structs by
   * name (the first declaration wins), and the last header's whole layout */
  json_t *layouts, *last;
};

/* scope bits: where a marker may sit. */
enum { S_FIELD = 1, S_TYPE = 2, S_PKG = 4 };

/*
 * mid: the markers kcr-gen understands. M_SCHEMA ones set one schema keyword
 * as their mdef says; the others have code of their own.
 */
typedef enum mid {
  M_IGNORE,
  M_SCHEMA,
  M_ENUM,
  M_XVALIDATION,
  M_DEFAULT,
  M_LIST_MAP_KEY,
  M_VREQUIRED,
  M_VOPTIONAL,
  M_OPTIONAL,
  M_REQUIRED,
  M_JSON,
  M_KIND,
  M_ROOT,
  M_SUB_STATUS,
  M_SUB_SCALE,
  M_RESOURCE,
  M_PRINTCOLUMN,
  M_STORAGE,
  M_DEPRECATED,
  M_UNSERVED,
  M_SKIP_VERSION,
  M_SKIP_PACKAGE,
  M_GROUP,
  M_VERSION
} mid;

/*
 * mdef: a marker's name, meaning and where it may sit. For M_SCHEMA: key is
 * the keyword it sets, val how its value reads ('n' a number, 'i' a count,
 * 's' a string, 'b' true unless =false, 'w' one of words), types the schema
 * types it applies to (NULL: any).
 */
typedef struct mdef {
  const char *name;
  mid id;
  int scope;
  const char *key;
  char val;
  const char *types, *words;
} mdef;

#define KB "kubebuilder:"
#define KBV "kubebuilder:validation:"
#define FT (S_FIELD | S_TYPE)
#define NUMERIC " integer number "
static const mdef defs[] = {
    {KBV "Minimum", M_SCHEMA, FT, "minimum", 'n', NUMERIC, NULL},
    {KBV "Maximum", M_SCHEMA, FT, "maximum", 'n', NUMERIC, NULL},
    {KBV "ExclusiveMinimum", M_SCHEMA, FT, "exclusiveMinimum", 'b', NUMERIC, NULL},
    {KBV "ExclusiveMaximum", M_SCHEMA, FT, "exclusiveMaximum", 'b', NUMERIC, NULL},
    {KBV "MultipleOf", M_SCHEMA, FT, "multipleOf", 'n', NUMERIC, NULL},
    {KBV "MinLength", M_SCHEMA, FT, "minLength", 'i', " string ", NULL},
    {KBV "MaxLength", M_SCHEMA, FT, "maxLength", 'i', " string ", NULL},
    {KBV "Pattern", M_SCHEMA, FT, "pattern", 's', " string ", NULL},
    {KBV "MinItems", M_SCHEMA, FT, "minItems", 'i', " array ", NULL},
    {KBV "MaxItems", M_SCHEMA, FT, "maxItems", 'i', " array ", NULL},
    {KBV "UniqueItems", M_SCHEMA, FT, "uniqueItems", 'b', " array ", NULL},
    {KBV "MinProperties", M_SCHEMA, FT, "minProperties", 'i', " object ", NULL},
    {KBV "MaxProperties", M_SCHEMA, FT, "maxProperties", 'i', " object ", NULL},
    {KBV "Format", M_SCHEMA, FT, "format", 's', NULL, NULL},
    {KBV "Type", M_SCHEMA, FT, "type", 's', NULL, NULL},
    {KBV "EmbeddedResource", M_SCHEMA, FT, "x-kubernetes-embedded-resource", 'b', NULL, NULL},
    {KBV "XIntOrString", M_SCHEMA, FT, "x-kubernetes-int-or-string", 'b', NULL, NULL},
    {KB "pruning:PreserveUnknownFields", M_SCHEMA, FT, "x-kubernetes-preserve-unknown-fields", 'b',
     NULL, NULL},
    {"nullable", M_SCHEMA, FT, "nullable", 'b', NULL, NULL},
    {"listType", M_SCHEMA, FT, "x-kubernetes-list-type", 'w', " array ", " atomic set map "},
    {"mapType", M_SCHEMA, FT, "x-kubernetes-map-type", 'w', " object ", " granular atomic "},
    {"structType", M_SCHEMA, FT, "x-kubernetes-map-type", 'w', " object ", " granular atomic "},
    {KBV "Enum", M_ENUM, FT, NULL, 0, NULL, NULL},
    {KBV "XValidation", M_XVALIDATION, FT, NULL, 0, NULL, NULL},
    {KB "default", M_DEFAULT, FT, NULL, 0, NULL, NULL},
    {"listMapKey", M_LIST_MAP_KEY, FT, NULL, 0, " array ", NULL},
    {KBV "Required", M_VREQUIRED, S_FIELD | S_PKG, NULL, 0, NULL, NULL},
    {KBV "Optional", M_VOPTIONAL, S_FIELD | S_PKG, NULL, 0, NULL, NULL},
    {"optional", M_OPTIONAL, S_FIELD, NULL, 0, NULL, NULL},
    {"required", M_REQUIRED, S_FIELD, NULL, 0, NULL, NULL},
    {"kcr:json", M_JSON, S_FIELD, NULL, 0, NULL, NULL},
    {"kcr:kind", M_KIND, S_TYPE, NULL, 0, NULL, NULL},
    {KB "object:root", M_ROOT, S_TYPE, NULL, 0, NULL, NULL},
    {KB "subresource:status", M_SUB_STATUS, S_TYPE, NULL, 0, NULL, NULL},
    {KB "subresource:scale", M_SUB_SCALE, S_TYPE, NULL, 0, NULL, NULL},
    {KB "resource", M_RESOURCE, S_TYPE, NULL, 0, NULL, NULL},
    {KB "printcolumn", M_PRINTCOLUMN, S_TYPE, NULL, 0, NULL, NULL},
    {KB "storageversion", M_STORAGE, S_TYPE, NULL, 0, NULL, NULL},
    {KB "deprecatedversion", M_DEPRECATED, S_TYPE, NULL, 0, NULL, NULL},
    {KB "unservedversion", M_UNSERVED, S_TYPE, NULL, 0, NULL, NULL},
    {KB "skipversion", M_SKIP_VERSION, S_TYPE, NULL, 0, NULL, NULL},
    {KB "skip", M_SKIP_PACKAGE, S_PKG, NULL, 0, NULL, NULL},
    {"groupName", M_GROUP, S_PKG, NULL, 0, NULL, NULL},
    {"versionName", M_VERSION, S_PKG, NULL, 0, NULL, NULL},
    /* kubebuilder's markers for other generators: known, and not the CRD's */
    {KB "object:generate", M_IGNORE, FT | S_PKG, NULL, 0, NULL, NULL},
    {KB "docs-gen", M_IGNORE, FT | S_PKG, NULL, 0, NULL, NULL},
    {KB "rbac", M_IGNORE, FT | S_PKG, NULL, 0, NULL, NULL},
    {KB "webhook", M_IGNORE, FT | S_PKG, NULL, 0, NULL, NULL},
    {KB "webhookconfiguration", M_IGNORE, FT | S_PKG, NULL, 0, NULL, NULL},

};

/* marker: one marker found in a comment; args is what follows its name. */
typedef struct marker {
  const mdef *def;
  const char *args; /* borrowed from the comment line */
  int line, col;
} marker;

/* mlist: the markers of one declaration. */
typedef struct mlist {
  marker *v;
  size_t n, cap;
} mlist;

/*
 * hctx: the state of reading one header: its parse, one schema per struct
 * (built in order, so a struct reaches only those above it), the package's
 * group, version and default, and the first error.
 */
typedef struct hctx {
  crd_set *set;
  const hdr_file *f;
  json_t **schemas;
  const hdr_struct **by_name; /* the structs sorted by name, for struct_index */
  char *group, *version;
  bool default_optional;
  bool skip; /* +kubebuilder:skip: the header's kinds make no CRD */
  vkind *added;
  size_t nadded, capadded;
  /* the C layout of the header (crd_set_layout): its structs in order, the
   * members of the struct being built, and its kinds */
  json_t *lay, *lay_fields, *lay_kinds;
  char *msg;
  size_t size;
  bool failed;
} hctx;

/* cfail records the first error, at file:line:col. */
KCR_GEN_PRINTF(4, 5)
static int cfail(hctx *c, int line, int col, const char *fmt, ...) {
  va_list ap;
  if (c->failed)
    return -1;
  c->failed = true;
  va_start(ap, fmt);
  gen_vmsg_at(c->msg, c->size, c->f->name, line, col, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- marker arguments (controller-gen's syntax) ---- */

/*
 * seg_end is where the value starting at s (n bytes) ends at a top-level sep:
 * quotes ("..." with escapes, `...`) and braces nest. Returns the length.
 */
static size_t seg_end(const char *s, size_t n, char sep) {
  int depth = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '"' || ch == '`') {
      for (i++; i < n && s[i] != ch; i++)
        if (ch == '"' && s[i] == '\\')
          i++;
    } else if (ch == '{') {
      depth++;
    } else if (ch == '}') {
      depth--;
    } else if (ch == sep && depth == 0) {
      return i;
    }
  }
  return n;
}

/*
 * unquote makes a new string of the value s (n bytes): a "..." string with Go's
 * simple escapes, a `...` raw string, or the bare text as it is. NULL when out
 * of memory or malformed (*bad set).
 */
static char *unquote(const char *s, size_t n, bool *bad) {
  kcr_buf_t b;
  char *out;
  *bad = false;
  if (n >= 2 && s[0] == '`' && s[n - 1] == '`')
    return kcr__strndup(s + 1, n - 2);
  if (n == 0 || s[0] != '"')
    return kcr__strndup(s, n);
  if (n < 2 || s[n - 1] != '"') {
    *bad = true;
    return NULL;
  }
  kcr_buf_init(&b, n + 1);
  for (size_t i = 1; i + 1 < n; i++) {
    char ch = s[i];
    if (ch == '\\') {
      static const char from[] = "\\\"ntr'", to[] = "\\\"\n\t\r'";
      const char *k = i + 2 < n ? strchr(from, s[i + 1]) : NULL;
      if (!k || !*k) {
        kcr_buf_free(&b);
        *bad = true;
        return NULL;
      }
      ch = to[k - from];
      i++;
    }
    if (kcr_buf_appendc(&b, ch))
      return NULL; /* the buffer freed itself */
  }
  out = kcr_buf_take(&b, NULL);
  return out;
}

/* num parses a whole value as an integer or a finite real into *out (new). */
static int num(const char *s, size_t n, json_t **out) {
  char t[64], *end;
  long long i;
  double d;
  *out = NULL;
  if (n == 0 || n >= sizeof(t))
    return -1;
  memcpy(t, s, n);
  t[n] = '\0';
  errno = 0;
  i = strtoll(t, &end, 10);
  if (*end == '\0' && errno == 0) {
    *out = json_integer(i);
    return *out ? 0 : -2;
  }
  errno = 0;
  d = strtod(t, &end);
  if (*end != '\0' || errno != 0 || !isfinite(d) || t[0] == ' ')
    return -1;
  *out = json_real(d);
  return *out ? 0 : -2;
}

/*
 * guess reads a value whose type the schema does not say: a number, true or
 * false, else a string (quoted or bare). want narrows it: "string" keeps any
 * bare text a string. New, or NULL (out of memory or a malformed quote).
 */
static json_t *guess(const char *s, size_t n, const char *want) {
  json_t *v = NULL;
  bool bad;
  char *t;
  bool stringy = want && strcmp(want, "string") == 0;
  if (!stringy && n > 0 && s[0] != '"' && s[0] != '`') {
    if (num(s, n, &v) == 0)
      return v;
    if (n == 4 && memcmp(s, "true", 4) == 0)
      return json_true();
    if (n == 5 && memcmp(s, "false", 5) == 0)
      return json_false();
  }
  if (!(t = unquote(s, n, &bad)))
    return NULL;
  v = json_string(t);
  kcr__free(t);
  return v;
}

/*
 * word_in tells whether the n bytes at w are one of the words of list, a
 * space-separated list with a space at each end (" atomic set map ").
 */
static bool word_in(const char *list, const char *w, size_t n) {
  for (const char *p = strchr(list, ' '); p && p[1]; p = strchr(p + 1, ' ')) {
    size_t len = strcspn(p + 1, " ");
    if (len == n && n > 0 && memcmp(p + 1, w, n) == 0)
      return true;
  }
  return false;
}

/* trim_space narrows s/n to its text without leading or trailing blanks. */
static void trim_space(const char **s, size_t *n) {
  while (*n > 0 && (**s == ' ' || **s == '\t')) {
    (*s)++;
    (*n)--;
  }
  while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
    (*n)--;
}

/*
 * list_value reads `a;b;c` or `{a,b,c}` into a new array, each element as
 * guess reads it. NULL on a malformed element or out of memory.
 */
static json_t *list_value(const char *s, size_t n, const char *want) {
  json_t *arr = json_array();
  char sep = ';';
  trim_space(&s, &n);
  if (n >= 2 && s[0] == '{' && s[n - 1] == '}') {
    s++;
    n -= 2;
    sep = ',';
  }
  while (arr && n > 0) {
    size_t k = seg_end(s, n, sep);
    const char *e = s;
    size_t en = k;
    json_t *v;
    trim_space(&e, &en);
    v = guess(e, en, want);
    if (!v || json_array_append_new(arr, v)) {
      json_decref(arr);
      return NULL;
    }
    s += k < n ? k + 1 : k;
    n -= k < n ? k + 1 : k;
  }
  return arr;
}

/*
 * single is the value of a one-argument marker: the text after '=' (or ':='),
 * or NULL when the marker has none (a flag). *bad is set for `name:...`.
 */
static const char *single(const marker *m, bool *bad) {
  if (m->args[0] == ':' && m->args[1] == '=') {
    *bad = false;
    return m->args + 2; /* +kubebuilder:default:=V, the form kubebuilder scaffolds */
  }
  *bad = m->args[0] == ':';
  return m->args[0] == '=' ? m->args + 1 : NULL;
}

/*
 * named finds key in a named-argument marker (`name:k=v,k2=v2`) and points
 * *v and *vn at its raw value. Returns 1 found, 0 absent, -1 malformed (an
 * argument without '=' or one not in allowed, a space-separated list).
 */
static int named(hctx *c, const marker *m, const char *allowed, const char *key, const char **v,
                 size_t *vn) {
  const char *s = m->args;
  size_t n = strlen(s);
  int found = 0;
  if (n == 0)
    return 0;
  if (s[0] != ':')
    return cfail(c, m->line, m->col, "+%s takes named arguments: +%s:KEY=VALUE,...", m->def->name,
                 m->def->name);
  s++;
  n--;
  while (n > 0) {
    size_t k = seg_end(s, n, ','), kn;
    const char *eq = memchr(s, '=', k);
    if (!eq)
      return cfail(c, m->line, m->col, "+%s: argument \"%.*s\" has no '='", m->def->name, (int)k,
                   s);
    kn = (size_t)(eq - s);
    if (!word_in(allowed, s, kn))
      return cfail(c, m->line, m->col, "+%s: unknown argument \"%.*s\" (it takes %.*s)",
                   m->def->name, (int)kn, s, (int)strlen(allowed) - 2, allowed + 1);
    if (kn == strlen(key) && memcmp(s, key, kn) == 0) {
      *v = eq + 1;
      *vn = k - kn - 1;
      found = 1;
    }
    s += k < n ? k + 1 : k;
    n -= k < n ? k + 1 : k;
  }
  return found;
}

/* named_str is named for a string argument: a new string in *out, or NULL. */
static int named_str(hctx *c, const marker *m, const char *allowed, const char *key, char **out) {
  const char *v = NULL;
  size_t vn = 0;
  bool bad;
  int rc = named(c, m, allowed, key, &v, &vn);
  *out = NULL;
  if (rc <= 0)
    return rc;
  *out = unquote(v, vn, &bad);
  if (!*out)
    return cfail(c, m->line, m->col, "+%s: %s: %s", m->def->name, key,
                 bad ? "a malformed quoted string" : "out of memory");
  return 1;
}

/* ---- collecting markers ---- */

/* find_def is the longest marker name that text starts with, ending at '=', ':' or the end. */
static const mdef *find_def(const char *text) {
  const mdef *best = NULL;
  for (size_t k = 0; k < sizeof(defs) / sizeof(defs[0]); k++) {
    size_t n = strlen(defs[k].name);
    if (strncmp(text, defs[k].name, n) == 0 && strchr("=:", text[n]) &&
        (!best || n > strlen(best->name)))
      best = &defs[k];
  }
  return best;
}

/* marker_text points at a line's marker (after '+'), or NULL: not a marker line. */
static const char *marker_text(const hdr_line *l) {
  const char *t = l->text;
  while (*t == ' ' || *t == '\t')
    t++;
  return *t == '+' ? t + 1 : NULL;
}

/* scope_name says in words where a marker of scope bits belongs. */
static const char *scope_name(int scope) {
  if (scope == S_PKG)
    return "the package (a comment of its own, apart from any declaration)";
  if (scope == S_TYPE)
    return "a type (a typedef), not a member";
  if (!(scope & S_TYPE))
    return "a member, not a type";
  return "a type or a member";
}

/*
 * collect appends the markers of comments c that may sit at scope to l; on a
 * typedef's comments (pkg_ok), package markers are skipped (read_package took
 * them). An unknown +kubebuilder: marker, or one in the wrong place, fails.
 */
static int collect(hctx *c, const hdr_comments *cm, int scope, bool pkg_ok, mlist *l) {
  for (size_t k = 0; k < cm->n; k++) {
    const hdr_line *ln = &cm->v[k];
    const char *t = marker_text(ln);
    const mdef *d;
    int col;
    if (!t)
      continue;
    col = ln->col + 2 + (int)(t - 1 - ln->text);
    d = find_def(t);
    if (!d) {
      if (strncmp(t, KB, strlen(KB)) == 0)
        return cfail(c, ln->line, col, "unknown marker +%.*s", (int)strcspn(t, "= \t"), t);
      continue; /* another tool's marker */
    }
    if (d->id == M_IGNORE)
      continue;
    if (!(d->scope & scope)) {
      if (pkg_ok && (d->scope & S_PKG))
        continue;
      if (scope == S_PKG)
        return cfail(c, ln->line, col,
                     "+%s is attached to no declaration: put it right above one (at most one "
                     "blank line between)",
                     d->name);
      return cfail(c, ln->line, col, "+%s belongs on %s", d->name, scope_name(d->scope));
    }
    if (l->n == l->cap) {
      size_t ncap = l->cap ? l->cap * 2 : 8;
      marker *nv = kcr__realloc(l->v, ncap * sizeof(*nv));
      if (!nv)
        return cfail(c, ln->line, col, "out of memory");
      l->v = nv;
      l->cap = ncap;
    }
    l->v[l->n++] = (marker){d, t + strlen(d->name), ln->line, col};
  }
  return 0;
}

/* has finds the last marker id in l, or NULL. */
static const marker *has(const mlist *l, mid id) {
  for (size_t k = l->n; k-- > 0;)
    if (l->v[k].def->id == id)
      return &l->v[k];
  return NULL;
}

/* flag reads a marker that is true bare or with =true, false with =false. */
static int flag(hctx *c, const marker *m, bool *out) {
  bool bad;
  const char *v = single(m, &bad);
  if (bad || (v && strcmp(v, "true") != 0 && strcmp(v, "false") != 0))
    return cfail(c, m->line, m->col, "+%s takes true or false: +%s or +%s=false", m->def->name,
                 m->def->name, m->def->name);
  *out = !v || strcmp(v, "true") == 0;
  return 0;
}

/* ---- descriptions ---- */

/*
 * doc_text is the description of comments cm as Go's CommentGroup.Text gives
 * it after controller-gen drops the marker lines: one leading space dropped,
 * trailing blanks cut, runs of empty lines made one, leading and trailing
 * empty lines dropped, joined by newlines. New string, or NULL when empty
 * (*oom set when memory ran out).
 */
static char *doc_text(const hdr_comments *cm, bool *oom) {
  kcr_buf_t b;
  size_t pending = 0;
  bool any = false;
  char *out;
  *oom = false;
  kcr_buf_init(&b, HDR_TEXT_MAX);
  for (size_t k = 0; k < cm->n; k++) {
    const char *t = cm->v[k].text;
    size_t n;
    if (marker_text(&cm->v[k]))
      continue;
    if (t[0] == ' ')
      t++;
    n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t' || t[n - 1] == '\r'))
      n--;
    if (n == 0) {
      pending = any ? 1 : 0;
      continue;
    }
    if ((any && kcr_buf_appends(&b, pending ? "\n\n" : "\n")) || kcr_buf_append(&b, t, n)) {
      *oom = true;
      return NULL;
    }
    any = true;
    pending = 0;
  }
  if (!any)
    return NULL;
  out = kcr_buf_take(&b, NULL);
  *oom = out == NULL;
  return out;
}

/* set_desc sets s's description from comments cm, when they have one. */
static int set_desc(hctx *c, json_t *s, const hdr_comments *cm, int line, int col) {
  bool oom;
  char *d = doc_text(cm, &oom);
  int rc = 0;
  if (oom)
    return cfail(c, line, col, "out of memory");
  if (d && json_object_set_new(s, "description", json_string(d)))
    rc = cfail(c, line, col, "out of memory");
  kcr__free(d);
  return rc;
}

/* ---- schemas ---- */

/* stype is the schema's "type", or NULL (int-or-string has none). */
static const char *stype(const json_t *s) {
  return json_string_value(json_object_get(s, "type"));
}

/* need_type fails unless s's type is one of types (space-separated), or s has none. */
static int need_type(hctx *c, const marker *m, const json_t *s, const char *types) {
  const char *t = stype(s);
  if (!t || word_in(types, t, strlen(t)))
    return 0;
  return cfail(c, m->line, m->col, "+%s applies to %.*s schemas, not to type %s", m->def->name,
               (int)strlen(types) - 2, types + 1, t);
}

/* set_num sets key to a number marker value; count: a non-negative integer. */
static int set_num(hctx *c, json_t *s, const marker *m, const char *key, bool count) {
  bool bad;
  const char *v = single(m, &bad);
  json_t *n = NULL;
  int rc;
  if (bad || !v)
    return cfail(c, m->line, m->col, "+%s takes a value: +%s=N", m->def->name, m->def->name);
  rc = num(v, strlen(v), &n);
  if (rc == -2)
    return cfail(c, m->line, m->col, "out of memory");
  if (rc || (count && (!json_is_integer(n) || json_integer_value(n) < 0))) {
    json_decref(n);
    return cfail(c, m->line, m->col, "+%s: \"%s\" is not a %s", m->def->name, v,
                 count ? "non-negative integer" : "number");
  }
  return json_object_set_new(s, key, n) ? cfail(c, m->line, m->col, "out of memory") : 0;
}

/* set_str sets key to a string marker value (quoted or bare). */
static int set_str(hctx *c, json_t *s, const marker *m, const char *key) {
  bool bad;
  const char *v = single(m, &bad);
  char *t;
  int rc = 0;
  if (bad || !v || !*v)
    return cfail(c, m->line, m->col, "+%s takes a value: +%s=VALUE", m->def->name, m->def->name);
  if (!(t = unquote(v, strlen(v), &bad)))
    return cfail(c, m->line, m->col, "+%s: %s", m->def->name,
                 bad ? "a malformed quoted string" : "out of memory");
  if (json_object_set_new(s, key, json_string(t)))
    rc = cfail(c, m->line, m->col, "out of memory");
  kcr__free(t);
  return rc;
}

/* set_true sets key to true when the flag marker says so. */
static int set_true(hctx *c, json_t *s, const marker *m, const char *key) {
  bool on = false;
  if (flag(c, m, &on))
    return -1;
  if (on && json_object_set_new(s, key, json_true()))
    return cfail(c, m->line, m->col, "out of memory");
  return 0;
}

/* one_of sets key to the marker's value, which must be one of words (space-separated). */
static int one_of(hctx *c, json_t *s, const marker *m, const char *key, const char *words) {
  bool bad;
  const char *v = single(m, &bad);
  if (bad || !v)
    return cfail(c, m->line, m->col, "+%s takes one of %.*s", m->def->name, (int)strlen(words) - 2,
                 words + 1);
  if (!word_in(words, v, strlen(v)))
    return cfail(c, m->line, m->col, "+%s: \"%s\" is not one of %.*s", m->def->name, v,
                 (int)strlen(words) - 2, words + 1);
  return json_object_set_new(s, key, json_string(v)) ? cfail(c, m->line, m->col, "out of memory")
                                                     : 0;
}

/* append_to appends v (stolen) to the array s[key], making it. */
static int append_to(hctx *c, json_t *s, const char *key, json_t *v, const marker *m) {
  json_t *a = json_object_get(s, key);
  if (!v)
    return cfail(c, m->line, m->col, "out of memory");
  if (!a) {
    a = json_array();
    if (!a || json_object_set_new(s, key, a)) {
      json_decref(v);
      return cfail(c, m->line, m->col, "out of memory");
    }
  }
  return json_array_append_new(a, v) ? cfail(c, m->line, m->col, "out of memory") : 0;
}

/* xvalidation adds one x-kubernetes-validations rule. */
static int xvalidation(hctx *c, json_t *s, const marker *m) {
  static const char allowed[] = " rule message messageExpression reason fieldPath optionalOldSelf ";
  static const char *const keys[] = {"rule",   "message",   "messageExpression",
                                     "reason", "fieldPath", NULL};
  json_t *r = json_object();
  const char *v;
  size_t vn;
  int rc;
  if (!r)
    return cfail(c, m->line, m->col, "out of memory");
  for (const char *const *k = keys; *k; k++) {
    char *t;
    if ((rc = named_str(c, m, allowed, *k, &t)) < 0) {
      json_decref(r);
      return -1;
    }
    if (rc && json_object_set_new(r, *k, json_string(t))) {
      kcr__free(t);
      json_decref(r);
      return cfail(c, m->line, m->col, "out of memory");
    }
    kcr__free(t);
  }
  if ((rc = named(c, m, allowed, "optionalOldSelf", &v, &vn)) == 1) {
    if (json_object_set_new(r, "optionalOldSelf",
                            vn == 5 && !memcmp(v, "false", 5) ? json_false() : json_true())) {
      json_decref(r);
      return cfail(c, m->line, m->col, "out of memory");
    }
  }
  if (rc < 0 || !json_object_get(r, "rule")) {
    json_decref(r);
    return rc < 0 ? -1
                  : cfail(c, m->line, m->col, "+%s needs a rule: +%s:rule=\"...\"", m->def->name,
                          m->def->name);
  }
  return append_to(c, s, "x-kubernetes-validations", r, m);
}

/* typed_value reads a default or enum element as the schema's type says. */
static json_t *typed_value(hctx *c, const marker *m, const json_t *s, const char *v) {
  const char *t = stype(s);
  size_t n = strlen(v);
  json_t *out = NULL;
  if (t && strcmp(t, "array") == 0) {
    out = list_value(v, n, stype(json_object_get(s, "items")));
  } else if (t && strcmp(t, "object") == 0) {
    if (strcmp(v, "{}") != 0) {
      cfail(c, m->line, m->col, "+%s: an object's default can only be {} for now", m->def->name);
      return NULL;
    }
    out = json_object();
  } else {
    out = guess(v, n, t);
    if (out && t &&
        (((!strcmp(t, "integer") && !json_is_integer(out)) ||
          (!strcmp(t, "number") && !json_is_number(out)) ||
          (!strcmp(t, "boolean") && !json_is_boolean(out))))) {
      json_decref(out);
      cfail(c, m->line, m->col, "+%s: \"%s\" is not a valid %s", m->def->name, v, t);
      return NULL;
    }
  }
  if (!out)
    cfail(c, m->line, m->col, "+%s: \"%s\" is malformed (or out of memory)", m->def->name, v);
  return out;
}

/* apply_schema applies an M_SCHEMA marker: the keyword its mdef names. */
static int apply_schema(hctx *c, json_t *s, const marker *m) {
  const mdef *d = m->def;
  if (d->types && need_type(c, m, s, d->types))
    return -1;
  switch (d->val) {
  case 'n':
  case 'i':
    return set_num(c, s, m, d->key, d->val == 'i');
  case 's':
    return set_str(c, s, m, d->key);
  case 'w':
    return one_of(c, s, m, d->key, d->words);
  default:
    return set_true(c, s, m, d->key);
  }
}

/* apply puts the schema markers of l onto schema s. */
static int apply(hctx *c, json_t *s, const mlist *l) {
  for (size_t k = 0; k < l->n; k++) {
    const marker *m = &l->v[k];
    bool bad;
    const char *v = single(m, &bad);
    json_t *j;
    int rc = 0;
    switch (m->def->id) {
    case M_SCHEMA:
      rc = apply_schema(c, s, m);
      break;
    case M_ENUM:
      if (bad || !v || !*v)
        rc = cfail(c, m->line, m->col, "+%s takes values: +%s=A;B;C", m->def->name, m->def->name);
      else if (!(j = list_value(v, strlen(v), stype(s))) || json_object_set_new(s, "enum", j))
        rc = cfail(c, m->line, m->col, "+%s: malformed values (or out of memory)", m->def->name);
      break;
    case M_XVALIDATION:
      rc = xvalidation(c, s, m);
      break;
    case M_DEFAULT:
      if (bad || !v)
        rc = cfail(c, m->line, m->col, "+%s takes a value: +%s=VALUE", m->def->name, m->def->name);
      else if (!(j = typed_value(c, m, s, v)))
        rc = -1;
      else if (json_object_set_new(s, "default", j))
        rc = cfail(c, m->line, m->col, "out of memory");
      break;
    case M_LIST_MAP_KEY:
      rc = need_type(c, m, s, m->def->types);
      if (!rc && (bad || !v || !*v))
        rc = cfail(c, m->line, m->col, "+%s takes a member's JSON name: +%s=NAME", m->def->name,
                   m->def->name);
      if (!rc)
        rc = append_to(c, s, "x-kubernetes-list-map-keys", json_string(v), m);
      break;
    default:
      break; /* not a schema marker */
    }
    if (rc)
      return -1;
  }
  return 0;
}

/*
 * measure counts s's values into *nodes and its nesting depth into *depth,
 * stopping once past CRD_SCHEMA_NODES_MAX or CRD_SCHEMA_DEPTH_MAX (so the
 * recursion itself stays shallow).
 */
static void measure(const json_t *s, int level, size_t *nodes, int *depth) {
  const char *k;
  json_t *v;
  size_t i;
  ++*nodes;
  if (level > *depth)
    *depth = level;
  if (*nodes > CRD_SCHEMA_NODES_MAX || *depth > CRD_SCHEMA_DEPTH_MAX)
    return;
  if (json_is_object(s)) {
    json_object_foreach((json_t *)s, k, v) {
      measure(v, level + 1, nodes, depth);
      if (*nodes > CRD_SCHEMA_NODES_MAX || *depth > CRD_SCHEMA_DEPTH_MAX)
        return;
    }
  } else if (json_is_array(s)) {
    json_array_foreach(s, i, v) {
      measure(v, level + 1, nodes, depth);
      if (*nodes > CRD_SCHEMA_NODES_MAX || *depth > CRD_SCHEMA_DEPTH_MAX)
        return;
    }
  }
}

/* cmp_struct_name orders struct pointers by name (the parser refused duplicates). */
static int cmp_struct_name(const void *a, const void *b) {
  return strcmp((*(const hdr_struct *const *)a)->name, (*(const hdr_struct *const *)b)->name);
}

/* struct_index is the index of the struct named name in the header, or -1. */
static long struct_index(const hctx *c, const char *name) {
  hdr_struct key, *pk = &key, **hit;
  size_t w = sizeof(*c->by_name); // NOLINT(bugprone-sizeof-expression)
  key.name = (char *)name;
  hit = bsearch(&pk, c->by_name, c->f->nstructs, w, cmp_struct_name);
  return hit ? (long)(*hit - c->f->structs) : -1;
}

/*
 * elem_schema is the new schema of fd's element type, for a member of struct
 * number self. NULL with the error recorded.
 */
static json_t *elem_schema(hctx *c, size_t self, const hdr_field *fd) {
  static const struct {
    const char *name;
    const char *type, *format;
  } scalars[] = {{"int32_t", "integer", "int32"},
                 {"int64_t", "integer", "int64"},
                 {"bool", "boolean", NULL},
                 {"double", "number", NULL}};
  const json_t *known = json_object_get(c->set->known, fd->type);
  long idx;
  json_t *s;
  if (strcmp(fd->type, "char") == 0) {
    if (fd->ptr != 1) {
      cfail(c, fd->type_line, fd->type_col, "a string is char * (%d '*' here)", fd->ptr);
      return NULL;
    }
    s = json_pack("{ss}", "type", "string");
    goto done;
  }
  if (fd->ptr > 1) {
    cfail(c, fd->type_line, fd->type_col, "%s: at most one '*' (an optional member)", fd->type);
    return NULL;
  }
  for (size_t k = 0; k < sizeof(scalars) / sizeof(scalars[0]); k++) {
    if (strcmp(fd->type, scalars[k].name) != 0)
      continue;
    s = scalars[k].format
            ? json_pack("{ssss}", "type", scalars[k].type, "format", scalars[k].format)
            : json_pack("{ss}", "type", scalars[k].type);
    goto done;
  }
  if (known && json_is_true(json_object_get(known, "nodescs")) && c->set->max_desc != 0) {
    cfail(c, fd->type_line, fd->type_col,
          "%s: kcr-gen has this type's schema only without descriptions, as controller-gen "
          "writes it with crd:maxDescLen=0: use --max-desc-len 0",
          fd->type);
    return NULL;
  }
  if (known && json_is_true(json_object_get(known, "large"))) {
    if (!c->set->large && !(c->set->large = json_loads(kcr_gen_crd_known_large, 0, NULL))) {
      cfail(c, fd->line, fd->col, "out of memory");
      return NULL;
    }
    known = json_object_get(c->set->large, fd->type);
  }
  if (known && json_object_get(known, "schema")) {
    s = json_deep_copy(json_object_get(known, "schema"));
    goto done;
  }
  idx = struct_index(c, fd->type);
  if (idx >= 0 && (size_t)idx < self) {
    s = json_deep_copy(c->schemas[idx]);
    goto done;
  }
  if (idx >= 0) {
    cfail(c, fd->type_line, fd->type_col, "type %s is declared below (at %d:%d): declare it first",
          fd->type, c->f->structs[idx].line, c->f->structs[idx].col);
    return NULL;
  }
  if ((known = json_object_get(c->set->shared, fd->type)) != NULL) {
    if (json_object_get(known, "conflict")) {
      cfail(c, fd->type_line, fd->type_col,
            "type %s is declared differently at %s and at %s: give the headers one of them",
            fd->type, json_string_value(json_object_get(known, "where")),
            json_string_value(json_object_get(known, "conflict")));
      return NULL;
    }
    s = json_deep_copy(json_object_get(known, "schema"));
    goto done;
  }
  if (strncmp(fd->type, "uint", 4) == 0 || strncmp(fd->type, "int8", 4) == 0 ||
      strncmp(fd->type, "int16", 5) == 0) {
    cfail(c, fd->type_line, fd->type_col,
          "%s: Kubernetes APIs use int32_t and int64_t (no unsigned or narrow integers)", fd->type);
    return NULL;
  }
  cfail(c, fd->type_line, fd->type_col,
        "unknown type %s: declare it above as a typedef struct (here or in a header given "
        "before this one), or use int32_t, int64_t, bool, double, char *, a Kubernetes type "
        "kcr-gen knows (kcr_meta_v1_condition_t...) or KCR_LIST(T)/KCR_MAP(T)",
        fd->type);
  return NULL;
done:
  if (!s)
    cfail(c, fd->line, fd->col, "out of memory");
  return s;
}

/* json_name is the member's JSON name: +kcr:json=NAME, else lowerCamel of its C name. */
static char *json_name(hctx *c, const hdr_field *fd, const mlist *l) {
  const marker *m = has(l, M_JSON);
  kcr_buf_t b;
  bool up = false, bad;
  char *out;
  if (m) {
    const char *v = single(m, &bad);
    if (bad || !v || !*v) {
      cfail(c, m->line, m->col, "+kcr:json takes the JSON name: +kcr:json=NAME");
      return NULL;
    }
    out = kcr__strdup(v);
    goto done;
  }
  kcr_buf_init(&b, strlen(fd->name) + 1);
  for (const char *p = fd->name; *p; p++) {
    if (*p == '_') {
      up = true;
      continue;
    }
    if (kcr_buf_appendc(&b, up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p))
      break;
    up = false;
  }
  out = kcr_buf_take(&b, NULL);
done:
  if (!out)
    cfail(c, fd->line, fd->col, "out of memory");
  return out;
}

/*
 * shaped_schema is the new schema of fd's type as written: the element's, or
 * a list or map of it. NULL with the error recorded.
 */
static json_t *shaped_schema(hctx *c, size_t self, const hdr_field *fd) {
  json_t *e, *s;
  if (json_object_get(json_object_get(c->set->known, fd->type), "inline")) {
    cfail(c, fd->type_line, fd->type_col,
          "%s is inlined into a struct: not in a list, a map or "
          "a typedef",
          fd->type);
    return NULL;
  }
  if (!(e = elem_schema(c, self, fd)))
    return NULL;
  if (fd->container == HDR_LIST)
    s = json_pack("{ssso}", "type", "array", "items", e);
  else if (fd->container == HDR_MAP)
    s = json_pack("{ssso}", "type", "object", "additionalProperties", e);
  else
    s = e;
  if (!s)
    cfail(c, fd->line, fd->col, "out of memory");
  return s;
}

/*
 * lay_field is the C layout of member (or named type) fd: its C name, element
 * type, '*' count and container, and where it is. NULL when out of memory.
 */
static json_t *lay_field(const hdr_field *fd) {
  static const char *const containers[] = {"one", "list", "map"};
  json_t *l = json_pack("{sssisssisisisi}", "type", fd->type, "ptr", fd->ptr, "container",
                        containers[fd->container], "line", fd->line, "col", fd->col, "type_line",
                        fd->type_line, "type_col", fd->type_col);
  if (l && fd->name && json_object_set_new(l, "c", json_string(fd->name))) {
    json_decref(l);
    return NULL;
  }
  return l;
}

/*
 * lay_member records member fd of the struct being built in c->lay_fields: its
 * JSON name (NULL for an inlined one, such as TypeMeta) and whether it is
 * required. 0, or -1 after cfail.
 */
static int lay_member(hctx *c, const hdr_field *fd, const char *json, bool required, bool inl) {
  json_t *l = lay_field(fd);
  if (!l)
    return cfail(c, fd->line, fd->col, "out of memory");
  if ((json && json_object_set_new(l, "json", json_string(json))) ||
      json_object_set_new(l, "required", json_boolean(required)) ||
      json_object_set_new(l, "inline", json_boolean(inl))) {
    json_decref(l);
    return cfail(c, fd->line, fd->col, "out of memory");
  }
  if (json_array_append_new(c->lay_fields, l)) /* l is the array's, or freed */
    return cfail(c, fd->line, fd->col, "out of memory");
  return 0;
}

/*
 * member adds field fd of struct number self to props (and its JSON name to
 * req when required).
 */
static int member(hctx *c, size_t self, const hdr_field *fd, json_t *props, json_t *req) {
  const json_t *known = json_object_get(c->set->known, fd->type);
  mlist l = {NULL, 0, 0};
  json_t *s = NULL;
  char *name = NULL;
  bool required = !c->default_optional;
  int rc = -1;
  if (collect(c, &fd->pre, S_FIELD, false, &l) || collect(c, &fd->doc, S_FIELD, false, &l))
    goto done;
  if (known && json_object_get(known, "inline")) {
    const char *k;
    json_t *v;
    if (fd->container != HDR_ONE) {
      cfail(c, fd->line, fd->col, "%s is inlined into its struct: not in a list or map", fd->type);
      goto done;
    }
    json_object_foreach(json_object_get(known, "inline"), k, v) {
      if (json_object_get(props, k)) {
        cfail(c, fd->line, fd->col, "JSON name %s is used twice", k);
        goto done;
      }
      if (json_object_set_new(props, k, json_deep_copy(v))) {
        cfail(c, fd->line, fd->col, "out of memory");
        goto done;
      }
    }
    rc = lay_member(c, fd, NULL, false, true);
    goto done;
  }
  if (!(name = json_name(c, fd, &l)) || !(s = shaped_schema(c, self, fd)))
    goto done;
  if (known && json_object_get(known, "nodesc"))
    json_object_del(s, "description");
  else if (set_desc(c, s, &fd->doc, fd->line, fd->col))
    goto done;
  if (apply(c, s, &l))
    goto done;
  for (size_t k = 0; k < l.n; k++) {
    mid id = l.v[k].def->id;
    if (id == M_OPTIONAL || id == M_VOPTIONAL)
      required = false;
    else if (id == M_REQUIRED || id == M_VREQUIRED)
      required = true;
  }
  if (json_object_get(props, name)) {
    cfail(c, fd->line, fd->col, "JSON name %s is used twice in this struct", name);
    goto done;
  }
  if (lay_member(c, fd, name, required, false))
    goto done;
  if (json_object_set_new(props, name, s)) {
    s = NULL;
    cfail(c, fd->line, fd->col, "out of memory");
    goto done;
  }
  s = NULL;
  if (required && json_array_append_new(req, json_string(name))) {
    cfail(c, fd->line, fd->col, "out of memory");
    goto done;
  }
  rc = 0;
done:
  json_decref(s);
  kcr__free(name);
  kcr__free(l.v);
  return rc;
}

/* cmp_json_str orders two JSON strings by strcmp (controller-gen sorts required). */
static int cmp_json_str(const void *a, const void *b) {
  return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* sort_strings sorts a JSON array of strings in place. */
static int sort_strings(json_t *arr) {
  size_t n = json_array_size(arr);
  json_t **v = kcr__calloc(n ? n : 1, sizeof(*v)); // NOLINT(bugprone-sizeof-expression)
  if (!v)
    return -1;
  for (size_t k = 0; k < n; k++)
    v[k] = json_incref(json_array_get(arr, k));
  qsort(v, n, sizeof(*v), cmp_json_str); // NOLINT(bugprone-sizeof-expression)
  json_array_clear(arr);
  for (size_t k = 0; k < n; k++)
    if (json_array_append_new(arr, v[k])) {
      for (size_t j = k + 1; j < n; j++)
        json_decref(v[j]);
      kcr__free(v);
      return -1;
    }
  kcr__free(v);
  return 0;
}

/* build_struct makes c->schemas[i], the schema of struct (or named type) number i. */
static int build_struct(hctx *c, size_t i) {
  const hdr_struct *st = &c->f->structs[i];
  mlist l = {NULL, 0, 0};
  json_t *s = json_pack("{ss}", "type", "object"), *props = json_object(), *req = json_array();
  json_t *lay = NULL;
  int rc = -1;
  c->lay_fields = json_array();
  if (!s || !props || !req || !c->lay_fields) {
    cfail(c, st->line, st->col, "out of memory");
    goto done;
  }
  if (collect(c, &st->pre, S_TYPE, true, &l) || collect(c, &st->doc, S_TYPE, true, &l))
    goto done;
  if (st->alias) {
    json_decref(s);
    if (!(s = shaped_schema(c, i, st->alias)))
      goto done;
  }
  for (size_t k = 0; k < st->nfields; k++)
    if (member(c, i, &st->fields[k], props, req))
      goto done;
  if (json_object_size(props) > 0 && json_object_set(s, "properties", props)) {
    cfail(c, st->line, st->col, "out of memory");
    goto done;
  }
  if (json_array_size(req) > 0 && (sort_strings(req) || json_object_set(s, "required", req))) {
    cfail(c, st->line, st->col, "out of memory");
    goto done;
  }
  if (set_desc(c, s, &st->doc, st->line, st->col) || apply(c, s, &l))
    goto done;
  {
    size_t nodes = 0;
    int depth = 0;
    measure(s, 1, &nodes, &depth);
    if (nodes > CRD_SCHEMA_NODES_MAX) {
      cfail(c, st->line, st->col,
            "the schema of %s has more than %d values (structs nest by value too often)", st->name,
            CRD_SCHEMA_NODES_MAX);
      goto done;
    }
    if (depth > CRD_SCHEMA_DEPTH_MAX) {
      cfail(c, st->line, st->col,
            "the schema of %s nests more than %d levels deep (structs within structs)", st->name,
            CRD_SCHEMA_DEPTH_MAX);
      goto done;
    }
  }
  lay = json_pack("{sssisisO}", "name", st->name, "line", st->line, "col", st->col, "fields",
                  c->lay_fields);
  if (!lay || (st->alias && json_object_set_new(lay, "alias", lay_field(st->alias))) ||
      json_array_append(c->lay, lay)) {
    cfail(c, st->line, st->col, "out of memory");
    goto done;
  }
  c->schemas[i] = s;
  s = NULL;
  rc = 0;
done:
  json_decref(s);
  json_decref(props);
  json_decref(req);
  json_decref(lay);
  json_decref(c->lay_fields);
  c->lay_fields = NULL;
  kcr__free(l.v);
  return rc;
}

/* ---- kinds ---- */

/* kind_name is the kind of a struct named memcached_t or cron_job: UpperCamel, _t cut. */
static char *kind_name(const char *name) {
  size_t n = strlen(name);
  kcr_buf_t b;
  bool up = true;
  if (n > 2 && strcmp(name + n - 2, "_t") == 0)
    n -= 2;
  kcr_buf_init(&b, n + 1);
  for (size_t k = 0; k < n; k++) {
    char ch = name[k];
    if (ch == '_') {
      up = true;
      continue;
    }
    if (kcr_buf_appendc(&b, up && ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch))
      return NULL;
    up = false;
  }
  return kcr_buf_take(&b, NULL);
}

/* lower makes a new lowercase copy of s. */
static char *lower(const char *s) {
  char *t = kcr__strdup(s);
  for (char *p = t; p && *p; p++)
    if (*p >= 'A' && *p <= 'Z')
      *p = (char)(*p - 'A' + 'a');
  return t;
}

/* plural is kubebuilder's plural of a lowercase kind (memcached -> memcacheds). */
static char *plural(const char *singular) {
  size_t n = strlen(singular);
  kcr_buf_t b;
  kcr_buf_init(&b, n + 4);
  if (n > 1 && singular[n - 1] == 'y' && !strchr("aeiou", singular[n - 2])) {
    if (kcr_buf_append(&b, singular, n - 1) || kcr_buf_appends(&b, "ies"))
      return NULL;
  } else if (n > 0 && (strchr("sxz", singular[n - 1]) ||
                       (n > 1 && singular[n - 1] == 'h' && strchr("cs", singular[n - 2])))) {
    if (kcr_buf_appends(&b, singular) || kcr_buf_appends(&b, "es"))
      return NULL;
  } else if (kcr_buf_appends(&b, singular) || kcr_buf_appendc(&b, 's')) {
    return NULL;
  }
  return kcr_buf_take(&b, NULL);
}

/* set_list_arg sets obj[key] to the list value of the named argument arg, if given. */
static int set_list_arg(hctx *c, const marker *m, const char *allowed, const char *arg, json_t *obj,
                        const char *key) {
  const char *v = NULL;
  size_t vn = 0;
  int rc = named(c, m, allowed, arg, &v, &vn);
  json_t *l;
  if (rc <= 0)
    return rc;
  if (!(l = list_value(v, vn, "string")) || json_object_set_new(obj, key, l))
    return cfail(c, m->line, m->col, "+%s: %s: malformed (or out of memory)", m->def->name, arg);
  return 0;
}

/* set_str_arg sets obj[key] to the string argument arg, if given. */
static int set_str_arg(hctx *c, const marker *m, const char *allowed, const char *arg, json_t *obj,
                       const char *key) {
  char *t;
  int rc = named_str(c, m, allowed, arg, &t);
  if (rc <= 0)
    return rc;
  rc = json_object_set_new(obj, key, json_string(t)) ? cfail(c, m->line, m->col, "out of memory")
                                                     : 0;
  kcr__free(t);
  return rc;
}

/* printcolumn adds one additionalPrinterColumns entry to the version entry. */
static int printcolumn(hctx *c, const marker *m, json_t *entry) {
  static const char allowed[] = " name type JSONPath description format priority ";
  json_t *col = json_object();
  const char *v;
  size_t vn;
  int rc;
  if (!col)
    return cfail(c, m->line, m->col, "out of memory");
  if (set_str_arg(c, m, allowed, "name", col, "name") ||
      set_str_arg(c, m, allowed, "type", col, "type") ||
      set_str_arg(c, m, allowed, "JSONPath", col, "jsonPath") ||
      set_str_arg(c, m, allowed, "description", col, "description") ||
      set_str_arg(c, m, allowed, "format", col, "format")) {
    json_decref(col);
    return -1;
  }
  if ((rc = named(c, m, allowed, "priority", &v, &vn)) == 1) {
    json_t *p = NULL;
    int nrc = num(v, vn, &p);
    if (nrc || !json_is_integer(p)) {
      json_decref(p);
      json_decref(col);
      return cfail(c, m->line, m->col, "+%s: %s", m->def->name,
                   nrc == -2 ? "out of memory" : "priority is an integer");
    }
    if (json_object_set_new(col, "priority", p)) {
      json_decref(col);
      return cfail(c, m->line, m->col, "out of memory");
    }
  }
  if (rc < 0 || !json_object_get(col, "name") || !json_object_get(col, "type") ||
      !json_object_get(col, "jsonPath")) {
    json_decref(col);
    return rc < 0 ? -1
                  : cfail(c, m->line, m->col, "+%s needs name, type and JSONPath", m->def->name);
  }
  return append_to(c, entry, "additionalPrinterColumns", col, m);
}

/* scale sets the scale subresource. */
static int scale(hctx *c, const marker *m, json_t *sub) {
  static const char allowed[] = " specpath statusreplicaspath selectorpath ";
  json_t *sc = json_object();
  if (!sc || json_object_set_new(sub, "scale", sc))
    return cfail(c, m->line, m->col, "out of memory");
  if (set_str_arg(c, m, allowed, "specpath", sc, "specReplicasPath") ||
      set_str_arg(c, m, allowed, "statusreplicaspath", sc, "statusReplicasPath") ||
      set_str_arg(c, m, allowed, "selectorpath", sc, "labelSelectorPath"))
    return -1;
  if (!json_object_get(sc, "specReplicasPath") || !json_object_get(sc, "statusReplicasPath"))
    return cfail(c, m->line, m->col, "+%s needs specpath and statuspath", m->def->name);
  return 0;
}

/* resource reads +kubebuilder:resource into v's names and scope. */
static int resource(hctx *c, const marker *m, vkind *v) {
  static const char allowed[] = " path shortName categories singular scope ";
  char *scope = NULL;
  int rc;
  if (set_str_arg(c, m, allowed, "path", v->names, "plural") ||
      set_str_arg(c, m, allowed, "singular", v->names, "singular") ||
      set_list_arg(c, m, allowed, "shortName", v->names, "shortNames") ||
      set_list_arg(c, m, allowed, "categories", v->names, "categories"))
    return -1;
  if ((rc = named_str(c, m, allowed, "scope", &scope)) < 0)
    return -1;
  if (rc && strcmp(scope, "Namespaced") != 0 && strcmp(scope, "Cluster") != 0) {
    kcr__free(scope);
    return cfail(c, m->line, m->col, "+%s: scope is Namespaced or Cluster", m->def->name);
  }
  if (rc) {
    kcr__free(v->scope);
    v->scope = scope;
  }
  return 0;
}

/* vkind_free releases one version's members. */
static void vkind_free(vkind *v) {
  kcr__free(v->group);
  kcr__free(v->kind);
  kcr__free(v->version);
  kcr__free(v->where);
  kcr__free(v->scope);
  json_decref(v->names);
  json_decref(v->entry);
}

/* type_markers reads the kind-level markers of root struct st into v. */
static int type_markers(hctx *c, const mlist *l, vkind *v, bool *skip) {
  json_t *entry = v->entry, *sub = NULL;
  *skip = false;
  for (size_t k = 0; k < l->n; k++) {
    const marker *m = &l->v[k];
    bool on = false;
    switch (m->def->id) {
    case M_SUB_STATUS:
    case M_SUB_SCALE:
      if (!sub && (!(sub = json_object()) || json_object_set_new(entry, "subresources", sub)))
        return cfail(c, m->line, m->col, "out of memory");
      if (m->def->id == M_SUB_STATUS && json_object_set_new(sub, "status", json_object()))
        return cfail(c, m->line, m->col, "out of memory");
      if (m->def->id == M_SUB_SCALE && scale(c, m, sub))
        return -1;
      break;
    case M_PRINTCOLUMN:
      if (printcolumn(c, m, entry))
        return -1;
      break;
    case M_RESOURCE:
      if (resource(c, m, v))
        return -1;
      break;
    case M_STORAGE:
      if (flag(c, m, &on))
        return -1;
      v->storage = on;
      break;
    case M_UNSERVED:
      if (flag(c, m, &on))
        return -1;
      if (on && json_object_set_new(entry, "served", json_false()))
        return cfail(c, m->line, m->col, "out of memory");
      break;
    case M_SKIP_VERSION:
      if (flag(c, m, skip))
        return -1;
      break;
    case M_DEPRECATED:
      if (json_object_set_new(entry, "deprecated", json_true()))
        return cfail(c, m->line, m->col, "out of memory");
      if (set_str_arg(c, m, " warning ", "warning", entry, "deprecationWarning"))
        return -1;
      break;
    default:
      break;
    }
  }
  return 0;
}

/*
 * kind_marker replaces *kind (the kind the struct's name gives) with the one
 * +kcr:kind=NAME names, for a kind whose name the C name cannot give
 * (HTTPRoute: http_route_t reads HttpRoute). 0, or -1 after cfail.
 */
static int kind_marker(hctx *c, const mlist *l, char **kind) {
  const marker *m = has(l, M_KIND);
  const char *v;
  bool bad;
  size_t k = 0;
  if (!m)
    return 0;
  v = single(m, &bad);
  if (!bad && v && v[0] >= 'A' && v[0] <= 'Z')
    for (k = 1; (v[k] >= 'a' && v[k] <= 'z') || (v[k] >= 'A' && v[k] <= 'Z') ||
                (v[k] >= '0' && v[k] <= '9');
         k++)
      ;
  if (bad || !v || k == 0 || v[k] != '\0' || k > 63)
    return cfail(c, m->line, m->col,
                 "+kcr:kind takes the kind, up to 63 letters and digits starting with a capital: "
                 "+kcr:kind=NAME");
  kcr__free(*kind);
  if (!(*kind = kcr__strdup(v)))
    return cfail(c, m->line, m->col, "out of memory");
  return 0;
}

/* add_kind makes the version entry of root struct number i and keeps it. */
static int add_kind(hctx *c, size_t i, const mlist *l) {
  const hdr_struct *st = &c->f->structs[i];
  vkind v;
  bool skip;
  char where[64];
  size_t kn;
  memset(&v, 0, sizeof(v));
  snprintf(where, sizeof(where), ":%d:%d", st->line, st->col);
  v.kind = kind_name(st->name);
  kn = v.kind ? strlen(v.kind) : 0;
  if (kn > 4 && strcmp(v.kind + kn - 4, "List") == 0) {
    for (size_t k = 0; k < st->nfields; k++)
      if (strcmp(st->fields[k].name, "items") == 0) {
        kcr__free(v.kind); /* the list type: the CRD names it listKind */
        return 0;
      }
  }
  if (kind_marker(c, l, &v.kind)) {
    kcr__free(v.kind);
    return -1;
  }
  v.group = kcr__strdup(c->group);
  v.version = kcr__strdup(c->version);
  v.names = json_object();
  v.entry = json_pack("{sss{sO}sbsb}", "name", c->version, "schema", "openAPIV3Schema",
                      c->schemas[i], "served", 1, "storage", 0);
  if (v.names)
    v.where = kcr__malloc(strlen(c->f->name) + strlen(where) + 1);
  if (!v.kind || !v.group || !v.version || !v.names || !v.entry || !v.where) {
    vkind_free(&v);
    return cfail(c, st->line, st->col, "out of memory");
  }
  memcpy(v.where, c->f->name, strlen(c->f->name));
  memcpy(v.where + strlen(c->f->name), where, strlen(where) + 1);
  if (type_markers(c, l, &v, &skip) || skip) {
    vkind_free(&v);
    return skip && !c->failed ? 0 : -1;
  }
  if (c->nadded == c->capadded) {
    size_t ncap = c->capadded ? c->capadded * 2 : 4;
    vkind *nv = kcr__realloc(c->added, ncap * sizeof(*nv));
    if (!nv) {
      vkind_free(&v);
      return cfail(c, st->line, st->col, "out of memory");
    }
    c->added = nv;
    c->capadded = ncap;
  }
  c->added[c->nadded++] = v;
  if (json_array_append_new(c->lay_kinds, json_pack("{ssssssss}", "struct", st->name, "group",
                                                    v.group, "version", v.version, "kind", v.kind)))
    return cfail(c, st->line, st->col, "out of memory");
  return 0;
}

/* version_ok tells whether v is a Kubernetes version name (v1, v1alpha1, v2beta3). */
static bool version_ok(const char *v) {
  const char *p = v;
  if (*p++ != 'v' || !(*p >= '1' && *p <= '9'))
    return false;
  while (*p >= '0' && *p <= '9')
    p++;
  if (strncmp(p, "alpha", 5) == 0)
    p += 5;
  else if (strncmp(p, "beta", 4) == 0)
    p += 4;
  else
    return *p == '\0';
  if (!(*p >= '1' && *p <= '9'))
    return false;
  while (*p >= '0' && *p <= '9')
    p++;
  return *p == '\0';
}

/* pkg_value sets *out to a new copy of a package marker's value. */
static int pkg_value(hctx *c, const marker *m, char **out) {
  bool bad;
  const char *v = single(m, &bad);
  if (bad || !v || !*v)
    return cfail(c, m->line, m->col, "+%s takes a value: +%s=VALUE", m->def->name, m->def->name);
  if (*out && strcmp(*out, v) != 0)
    return cfail(c, m->line, m->col, "+%s: \"%s\" differs from \"%s\" given before", m->def->name,
                 v, *out);
  kcr__free(*out);
  if (!(*out = kcr__strdup(v)))
    return cfail(c, m->line, m->col, "out of memory");
  return 0;
}

/*
 * read_package takes the package markers: from comments attached to nothing,
 * and those in a typedef's comments (a file-top +groupName right above, or
 * one blank line above, the first typedef: C has no package clause to hold
 * them). Other markers attached to nothing are refused:
 * they would otherwise be lost without a word.
 */
static int read_package(hctx *c) {
  mlist l = {NULL, 0, 0};
  int rc = -1;
  if (collect(c, &c->f->free_comments, S_PKG, false, &l))
    goto done;
  for (size_t k = 0; k < 2 * c->f->nstructs; k++) {
    const hdr_struct *st = &c->f->structs[k / 2];
    const hdr_comments *cm = k % 2 ? &st->doc : &st->pre;
    for (size_t j = 0; j < cm->n; j++) {
      const char *t = marker_text(&cm->v[j]);
      const mdef *d = t ? find_def(t) : NULL;
      hdr_comments one = {&cm->v[j], 1};
      if (d && d->scope & S_PKG && !(d->scope & S_TYPE) && d->id != M_IGNORE &&
          collect(c, &one, S_PKG, false, &l))
        goto done;
    }
  }
  for (size_t k = 0; k < l.n; k++) {
    const marker *m = &l.v[k];
    if (m->def->id == M_GROUP && pkg_value(c, m, &c->group))
      goto done;
    if (m->def->id == M_VERSION && pkg_value(c, m, &c->version))
      goto done;
    if (m->def->id == M_VOPTIONAL || m->def->id == M_VREQUIRED)
      c->default_optional = m->def->id == M_VOPTIONAL;
    if (m->def->id == M_SKIP_PACKAGE)
      c->skip = true;
  }
  rc = 0;
done:
  kcr__free(l.v);
  return rc;
}

/*
 * dir_version sets *out to the header's directory name (api/v1alpha1/x.h ->
 * v1alpha1), new, or leaves it NULL when the path has none. -1: out of memory.
 */
static int dir_version(const char *path, char **out) {
  const char *end = strrchr(path, '/'), *start;
  if (!end)
    return 0;
  start = end;
  while (start > path && start[-1] != '/')
    start--;
  *out = kcr__strndup(start, (size_t)(end - start));
  return *out ? 0 : -1;
}

/* add_header is crd_set_add on a parsed header; c->added collects the kinds. */
static int add_header(hctx *c) {
  const hdr_file *f = c->f;
  if (read_package(c))
    return -1;
  if (c->skip)
    return 0; /* as controller-gen skips a package marked so */
  if (!c->version && dir_version(f->name, &c->version))
    return cfail(c, 1, 1, "out of memory");
  if (!(c->lay = json_array()) || !(c->lay_kinds = json_array()))
    return cfail(c, 1, 1, "out of memory");
  c->schemas = kcr__calloc(f->nstructs ? f->nstructs : 1,
                           sizeof(*c->schemas)); // NOLINT(bugprone-sizeof-expression)
  c->by_name = kcr__calloc(f->nstructs ? f->nstructs : 1,
                           sizeof(*c->by_name)); // NOLINT(bugprone-sizeof-expression)
  if (!c->schemas || !c->by_name)
    return cfail(c, 1, 1, "out of memory");
  for (size_t i = 0; i < f->nstructs; i++)
    c->by_name[i] = &f->structs[i];
  qsort(c->by_name, f->nstructs, sizeof(c->by_name[0]), // NOLINT(bugprone-sizeof-expression)
        cmp_struct_name);
  for (size_t i = 0; i < f->nstructs; i++)
    if (build_struct(c, i))
      return -1;
  for (size_t i = 0; i < f->nstructs; i++) {
    const hdr_struct *st = &f->structs[i];
    mlist l = {NULL, 0, 0};
    const marker *root;
    bool on = false;
    int rc = 0;
    if (collect(c, &st->pre, S_TYPE, true, &l) || collect(c, &st->doc, S_TYPE, true, &l)) {
      kcr__free(l.v);
      return -1;
    }
    root = has(&l, M_ROOT);
    if (root && flag(c, root, &on) == 0 && on) {
      if (!c->group)
        rc = cfail(c, root->line, root->col,
                   "a kind needs its group: +groupName=GROUP in a comment of its own");
      else if (!c->version || !version_ok(c->version))
        rc = cfail(c, root->line, root->col,
                   "a kind needs its version: +versionName=VERSION, or the header in a "
                   "directory named for it (api/v1alpha1/...); \"%s\" is not a version",
                   c->version ? c->version : "");
      else
        rc = add_kind(c, i, &l);
    }
    kcr__free(l.v);
    if (rc || c->failed)
      return -1;
  }
  return 0;
}

/* known_load parses the embedded crd_known.json. */
static json_t *known_load(void) {
  return json_loads(kcr_gen_crd_known, 0, NULL);
}

int crd_set_create(crd_set **out) {
  crd_set *s = kcr__calloc(1, sizeof(*s));
  *out = NULL;
  if (!s)
    return -1;
  s->max_desc = -1;
  if (!(s->known = known_load())) {
    kcr__free(s);
    return -1;
  }
  *out = s;
  return 0;
}

void crd_set_max_desc_len(crd_set *s, long n) {
  s->max_desc = n < 0 ? -1 : n;
}

void crd_set_destroy(crd_set *s) {
  if (!s)
    return;
  for (size_t k = 0; k < s->n; k++)
    vkind_free(&s->v[k]);
  kcr__free(s->v);
  json_decref(s->known);
  json_decref(s->large);
  json_decref(s->shared);
  json_decref(s->layouts);
  json_decref(s->last);
  kcr__free(s);
}

/*
 * share_types returns a new copy of the set's shared types with those of the
 * header c read added (a name declared again with the same schema is one
 * type; with another, both places are kept as a conflict, an error only where
 * the name is used). NULL with msg set when memory ran out.
 */
static json_t *share_types(const hctx *c, char *msg, size_t size) {
  json_t *next = c->set->shared ? json_copy(c->set->shared) : json_object();
  char where[64];
  for (size_t i = 0; next && c->schemas && i < c->f->nstructs; i++) {
    const hdr_struct *st = &c->f->structs[i];
    const json_t *had = json_object_get(next, st->name);
    json_t *entry;
    kcr_buf_t b;
    char *at;
    if (had && (json_object_get(had, "conflict") ||
                json_equal(json_object_get(had, "schema"), c->schemas[i])))
      continue;
    snprintf(where, sizeof(where), ":%d:%d", st->line, st->col);
    kcr_buf_init(&b, strlen(c->f->name) + sizeof(where));
    if (kcr_buf_appends(&b, c->f->name) || kcr_buf_appends(&b, where) ||
        !(at = kcr_buf_take(&b, NULL))) {
      json_decref(next);
      next = NULL;
      break;
    }
    entry = had ? json_pack("{sOss}", "where", json_object_get(had, "where"), "conflict", at)
                : json_pack("{sOss}", "schema", c->schemas[i], "where", at);
    kcr__free(at);
    if (!entry || json_object_set_new(next, st->name, entry)) {
      json_decref(next);
      next = NULL;
    }
  }
  if (!next)
    gen_msgf(msg, size, "%s: out of memory", c->f->name);
  return next;
}

/*
 * layout_of makes the C layout of the header c read (crd_set_layout) into
 * *last, and into *layouts a copy of the set's layouts with its structs added
 * (each with its "file"; a name known already keeps its first declaration).
 * 0, or -1 with msg set when memory ran out.
 */
static int layout_of(const hctx *c, json_t **last, json_t **layouts, char *msg, size_t size) {
  json_t *st;
  size_t i;
  *layouts = c->set->layouts ? json_copy(c->set->layouts) : json_object();
  *last = json_pack("{sss[]s[]s{}}", "file", c->f->name, "structs", "kinds", "shared");
  if (!*layouts || !*last ||
      (c->set->layouts && json_object_set(*last, "shared", c->set->layouts)) ||
      (c->lay && json_object_set(*last, "structs", c->lay)) ||
      (c->lay_kinds && json_object_set(*last, "kinds", c->lay_kinds)))
    goto oom;
  json_array_foreach(c->lay, i, st) {
    const char *n = json_string_value(json_object_get(st, "name"));
    json_t *e;
    if (json_object_get(*layouts, n))
      continue;
    if (!(e = json_copy(st)))
      goto oom;
    if (json_object_set_new(e, "file", json_string(c->f->name))) {
      json_decref(e);
      goto oom;
    }
    if (json_object_set_new(*layouts, n, e)) /* e is freed */
      goto oom;
  }
  return 0;
oom:
  json_decref(*layouts);
  json_decref(*last);
  *layouts = *last = NULL;
  gen_msgf(msg, size, "%s: out of memory", c->f->name);
  return -1;
}

int crd_set_layout(const crd_set *s, json_t **out) {
  *out = s->last ? json_incref(s->last) : NULL;
  return *out ? 0 : -1;
}

int crd_set_add(crd_set *s, const char *name, const char *text, size_t len, char *msg,
                size_t size) {
  hdr_file *f = NULL;
  hctx c;
  json_t *shared = NULL, *last = NULL, *layouts = NULL;
  int rc = -1;
  if (hdr_parse(name, text, len, &f, msg, size))
    return -1;
  memset(&c, 0, sizeof(c));
  c.set = s;
  c.f = f;
  c.msg = msg;
  c.size = size;
  if (add_header(&c) || !(shared = share_types(&c, msg, size)) ||
      layout_of(&c, &last, &layouts, msg, size))
    goto done;
  if (s->n + c.nadded > s->cap) {
    size_t ncap = s->cap ? s->cap : 4;
    vkind *nv;
    while (ncap < s->n + c.nadded)
      ncap *= 2;
    if (!(nv = kcr__realloc(s->v, ncap * sizeof(*nv)))) {
      gen_msgf(msg, size, "%s: out of memory", name);
      goto done;
    }
    s->v = nv;
    s->cap = ncap;
  }
  for (size_t k = 0; k < c.nadded; k++) {
    const vkind *a = &c.added[k];
    for (size_t j = 0; j < s->n + k; j++) {
      const vkind *b = j < s->n ? &s->v[j] : &c.added[j - s->n];
      if (!strcmp(b->group, a->group) && !strcmp(b->kind, a->kind) &&
          !strcmp(b->version, a->version)) {
        gen_msgf(msg, size, "%s: %s/%s %s is also declared at %s", a->where, a->group, a->version,
                 a->kind, b->where);
        goto done;
      }
    }
  }
  for (size_t k = 0; k < c.nadded; k++)
    s->v[s->n++] = c.added[k];
  c.nadded = 0;
  json_decref(s->shared);
  s->shared = shared;
  shared = NULL;
  json_decref(s->last);
  s->last = last;
  last = NULL;
  json_decref(s->layouts);
  s->layouts = layouts;
  layouts = NULL;
  rc = 0;
done:
  json_decref(shared);
  json_decref(last);
  json_decref(layouts);
  json_decref(c.lay);
  json_decref(c.lay_kinds);
  json_decref(c.lay_fields);
  for (size_t k = 0; k < c.nadded; k++)
    vkind_free(&c.added[k]);
  kcr__free(c.added);
  for (size_t i = 0; c.schemas && i < f->nstructs; i++)
    json_decref(c.schemas[i]);
  kcr__free(c.schemas);
  kcr__free((void *)c.by_name);
  kcr__free(c.group);
  kcr__free(c.version);
  hdr_file_free(f);
  return rc;
}

/*
 * cut_desc is controller-gen's truncateString: d cut to max bytes, then back to
 * the last sentence end ('.', '!', '?': the ASCII part of Unicode's STerm), or
 * else the last white space and "...". A cut never splits a UTF-8 sequence
 * (jansson keeps strings valid). New string, or NULL when out of memory.
 */
static char *cut_desc(const char *d, size_t max) {
  kcr_buf_t b;
  size_t n = max;
  while (n > 0 && ((unsigned char)d[n] & 0xc0) == 0x80)
    n--;
  kcr_buf_init(&b, max + 4);
  for (size_t k = n; k-- > 1;)
    if (strchr(".!?", d[k]) && d[k]) {
      if (kcr_buf_append(&b, d, k + 1))
        return NULL;
      return kcr_buf_take(&b, NULL);
    }
  for (size_t k = n; k-- > 1;)
    if (strchr(" \t\n\r\v\f", d[k]) && d[k]) {
      n = k;
      break;
    }
  if (kcr_buf_append(&b, d, n) || kcr_buf_appends(&b, "..."))
    return NULL;
  return kcr_buf_take(&b, NULL);
}

/* trim_descs applies max to every description in schema s and its subschemas. */
static int trim_descs(json_t *s, long max) {
  static const char *const one[] = {"items", "additionalProperties", "not", NULL};
  static const char *const many[] = {"anyOf", "allOf", "oneOf", NULL};
  const char *d = json_string_value(json_object_get(s, "description")), *k;
  json_t *v;
  size_t i;
  if (!json_is_object(s))
    return 0;
  if (d && max == 0) {
    json_object_del(s, "description");
  } else if (d && strlen(d) > (size_t)max) {
    char *t = cut_desc(d, (size_t)max);
    if (!t || json_object_set_new(s, "description", json_string(t))) {
      kcr__free(t);
      return -1;
    }
    kcr__free(t);
  }
  json_object_foreach(json_object_get(s, "properties"), k, v) {
    if (trim_descs(v, max))
      return -1;
  }
  for (const char *const *o = one; *o; o++)
    if (trim_descs(json_object_get(s, *o), max))
      return -1;
  for (const char *const *o = many; *o; o++)
    json_array_foreach(json_object_get(s, *o), i, v) {
      if (trim_descs(v, max))
        return -1;
    }
  return 0;
}

/* cmp_vkind orders versions by group, kind, then version name. */
static int cmp_vkind(const void *a, const void *b) {
  const vkind *x = *(const vkind *const *)a, *y = *(const vkind *const *)b;
  int r = strcmp(x->group, y->group);
  if (!r)
    r = strcmp(x->kind, y->kind);
  return r ? r : strcmp(x->version, y->version);
}

/*
 * merge_names folds one version's resource names into names, refusing two
 * versions that say different things.
 */
static int merge_names(json_t *names, const vkind *v, char *msg, size_t size) {
  const char *k;
  json_t *val;
  json_object_foreach(v->names, k, val) {
    json_t *have = json_object_get(names, k);
    if (have && !json_equal(have, val)) {
      gen_msgf(msg, size, "%s: +kubebuilder:resource %s differs between versions of %s", v->where,
               k, v->kind);
      return -1;
    }
    if (json_object_set(names, k, val)) {
      gen_msgf(msg, size, "out of memory");
      return -1;
    }
  }
  return 0;
}

/*
 * one_crd makes the CRD of the n versions v[0..n) of one group and kind,
 * descriptions cut to max_desc bytes (-1: whole).
 */
static json_t *one_crd(vkind *const *v, size_t n, long max_desc, char *msg, size_t size) {
  json_t *crd = NULL, *names = json_object(), *versions = json_array();
  const char *scope = NULL, *plural_s;
  char *singular = lower(v[0]->kind), *pl = NULL, *list_kind = NULL, *name = NULL;
  size_t nstorage = 0, nserved = 0;
  for (size_t k = 0; k < n; k++) {
    if (v[k]->scope && scope && strcmp(scope, v[k]->scope) != 0) {
      gen_msgf(msg, size, "%s: scope %s differs from another version's %s", v[k]->where,
               v[k]->scope, scope);
      goto fail;
    }
    scope = v[k]->scope ? v[k]->scope : scope;
    nstorage += v[k]->storage;
  }
  if (n > 1 && nstorage != 1) {
    gen_msgf(msg, size, "%s: %s has %zu versions and %s +kubebuilder:storageversion", v[0]->where,
             v[0]->kind, n, nstorage ? "more than one marked" : "none marked");
    goto fail;
  }
  if (!names || !versions || !singular)
    goto oom;
  for (size_t k = 0; k < n; k++) {
    json_t *e = json_deep_copy(v[k]->entry);
    if (!e || json_array_append_new(versions, e) ||
        json_object_set_new(e, "storage", json_boolean(n == 1 || v[k]->storage)))
      goto oom; /* e, once appended, is the array's */
    if (max_desc >= 0 &&
        trim_descs(json_object_get(json_object_get(e, "schema"), "openAPIV3Schema"), max_desc))
      goto oom;
    nserved += json_is_true(json_object_get(e, "served"));
    if (merge_names(names, v[k], msg, size))
      goto fail;
  }
  if (!json_object_get(names, "singular") &&
      json_object_set_new(names, "singular", json_string(singular)))
    goto oom;
  if (nserved == 0) {
    gen_msgf(msg, size, "%s: %s serves no version (every one is +kubebuilder:unservedversion)",
             v[0]->where, v[0]->kind);
    goto fail;
  }
  if (!(plural_s = json_string_value(json_object_get(names, "plural")))) {
    if (!(pl = plural(json_string_value(json_object_get(names, "singular")))) ||
        json_object_set_new(names, "plural", json_string(pl)))
      goto oom;
    plural_s = pl;
  }
  list_kind = kcr__malloc(strlen(v[0]->kind) + 5);
  name = kcr__malloc(strlen(plural_s) + strlen(v[0]->group) + 2);
  if (!list_kind || !name)
    goto oom;
  sprintf(list_kind, "%sList", v[0]->kind);
  sprintf(name, "%s.%s", plural_s, v[0]->group);
  if (json_object_set_new(names, "kind", json_string(v[0]->kind)) ||
      json_object_set_new(names, "listKind", json_string(list_kind)))
    goto oom;
  crd = json_pack("{sssss{s{ss}ss}s{sssOsssO}}", "apiVersion", "apiextensions.k8s.io/v1", "kind",
                  "CustomResourceDefinition", "metadata", "annotations", "kcr.dev/kcr-gen-version",
                  KCR_GEN_VERSION, "name", name, "spec", "group", v[0]->group, "names", names,
                  "scope", scope ? scope : "Namespaced", "versions", versions);
  if (!crd)
    goto oom;
  kcr__free(name);
  kcr__free(list_kind);
  json_decref(names);
  json_decref(versions);
  kcr__free(singular);
  kcr__free(pl);
  return crd;
oom:
  gen_msgf(msg, size, "out of memory");
fail:
  kcr__free(name);
  kcr__free(list_kind);
  json_decref(names);
  json_decref(versions);
  kcr__free(singular);
  kcr__free(pl);
  return NULL;
}

int crd_set_build(const crd_set *s, json_t **out, char *msg, size_t size) {
  vkind **v = kcr__calloc(s->n ? s->n : 1, sizeof(*v)); // NOLINT(bugprone-sizeof-expression)
  json_t *arr = json_array();
  *out = NULL;
  if (!v || !arr) {
    gen_msgf(msg, size, "out of memory");
    goto fail;
  }
  for (size_t k = 0; k < s->n; k++)
    v[k] = &s->v[k];
  qsort(v, s->n, sizeof(*v), cmp_vkind); // NOLINT(bugprone-sizeof-expression)
  for (size_t k = 0; k < s->n;) {
    size_t e = k + 1;
    json_t *crd;
    while (e < s->n && !strcmp(v[e]->group, v[k]->group) && !strcmp(v[e]->kind, v[k]->kind))
      e++;
    if (!(crd = one_crd(v + k, e - k, s->max_desc, msg, size)))
      goto fail;
    if (json_array_append_new(arr, crd)) {
      gen_msgf(msg, size, "out of memory");
      goto fail;
    }
    k = e;
  }
  kcr__free(v);
  *out = arr;
  return 0;
fail:
  kcr__free(v);
  json_decref(arr);
  return -1;
}
