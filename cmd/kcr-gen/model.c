/* SPDX-License-Identifier: MIT */
/*
 * model.c: from a CustomResourceDefinition (as JSON) to kcr-gen's model of C
 * types. Each served version's openAPIV3Schema is walked from the top: every
 * object schema with properties becomes a gen_type named by its path under the
 * version's prefix (spec.env[] of App v1alpha1 -> app_v1alpha1_spec_env), every
 * other schema a gen_shape (docs/kcr-gen.md has the table). Names are C
 * identifiers made from the JSON names (readyReplicas -> ready_replicas); a name
 * that would clash with a keyword, another member, or another generated
 * identifier gets a numeric suffix, so any valid schema yields valid C.
 *
 * kcr-gen is a short-lived build tool: running out of memory here prints a
 * message and exits (status 2) rather than unwinding every allocation.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* ---- allocation and strings ---- */

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) {
    fputs("kcr-gen: out of memory\n", stderr);
    exit(2);
  }
  return p;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xcalloc(n, 1), s, n);
}

KCR_GEN_PRINTF(1, 2) static char *xprintf(const char *fmt, ...) {
  va_list ap;
  int n;
  char *s;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  s = xcalloc((size_t)n + 1, 1);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

/* ---- identifiers ---- */

/* idset: the identifiers taken so far (a few hundred at most: a list will do). */
typedef struct idset {
  char **v;
  size_t n, cap;
} idset;

static bool id_taken(const idset *s, const char *id) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i], id) == 0)
      return true;
  return false;
}

static void id_add(idset *s, const char *id) {
  if (s->n == s->cap) {
    char **nv;
    s->cap = s->cap ? s->cap * 2 : 64;
    if (!(nv = realloc(s->v, s->cap * sizeof(*nv)))) {
      fputs("kcr-gen: out of memory\n", stderr);
      exit(2);
    }
    s->v = nv;
  }
  s->v[s->n++] = xstrdup(id);
}

static void id_free(idset *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i]);
  free(s->v);
}

static bool is_keyword(const char *s) {
  static const char *const kw[] = {"auto",
                                   "break",
                                   "case",
                                   "char",
                                   "const",
                                   "continue",
                                   "default",
                                   "do",
                                   "double",
                                   "else",
                                   "enum",
                                   "extern",
                                   "float",
                                   "for",
                                   "goto",
                                   "if",
                                   "inline",
                                   "int",
                                   "long",
                                   "register",
                                   "restrict",
                                   "return",
                                   "short",
                                   "signed",
                                   "sizeof",
                                   "static",
                                   "struct",
                                   "switch",
                                   "typedef",
                                   "union",
                                   "unsigned",
                                   "void",
                                   "volatile",
                                   "while",
                                   "_Alignas",
                                   "_Alignof",
                                   "_Atomic",
                                   "_Bool",
                                   "_Complex",
                                   "_Generic",
                                   "_Imaginary",
                                   "_Noreturn",
                                   "_Static_assert",
                                   "_Thread_local",
                                   "bool",
                                   "true",
                                   "false",
                                   "NULL",
                                   "errno",
                                   "assert",
                                   NULL};
  for (const char *const *k = kw; *k; k++)
    if (strcmp(s, *k) == 0)
      return true;
  return false;
}

/* snake makes a C identifier of a JSON name: readyReplicas -> ready_replicas. */
static char *snake(const char *name) {
  size_t len = strlen(name);
  char *out = xcalloc(len * 2 + 3, 1), *o = out;
  if (!isalpha((unsigned char)name[0]) && name[0] != '_')
    *o++ = 'f';
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)name[i];
    if (isupper(ch)) {
      bool prev_low =
          i > 0 && (islower((unsigned char)name[i - 1]) || isdigit((unsigned char)name[i - 1]));
      bool next_low =
          i > 0 && isupper((unsigned char)name[i - 1]) && islower((unsigned char)name[i + 1]);
      if ((prev_low || next_low) && o > out && o[-1] != '_')
        *o++ = '_';
      *o++ = (char)tolower(ch);
    } else if (isalnum(ch)) {
      *o++ = (char)ch;
    } else if (o > out && o[-1] != '_') {
      *o++ = '_';
    }
  }
  while (o > out + 1 && o[-1] == '_')
    o--;
  *o = '\0';
  if (out[0] == '\0' || (out[0] == '_' && out[1] == '\0'))
    memcpy(out, "field", sizeof("field"));
  return out;
}

/* c_literal escapes s for the inside of a C string literal. */
static char *c_literal(const char *s) {
  char *out = xcalloc(strlen(s) * 4 + 1, 1), *o = out;
  for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
    if (*u == '"' || *u == '\\') {
      *o++ = '\\';
      *o++ = (char)*u;
    } else if (*u < 0x20 || *u >= 0x7f || *u == '?') {
      o += sprintf(o, "\\%03o", *u);
    } else {
      *o++ = (char)*u;
    }
  }
  return out;
}

/* The suffixes every type base carries (struct tag, typedef, functions). */
static const char *const type_suffixes[] = {"",      "_t",     "_decode", "_encode", "_free",
                                            "_copy", "_equal", "_create", NULL};

/* unique_base finds want, want2, want3... whose every suffixed form is free. */
static char *unique_base(idset *ids, const char *want) {
  for (int n = 1;; n++) {
    char *cand = n == 1 ? xstrdup(want) : xprintf("%s%d", want, n);
    bool free_all = true;
    for (const char *const *s = type_suffixes; *s && free_all; s++) {
      char *id = xprintf("%s%s", cand, *s);
      free_all = !id_taken(ids, id);
      free(id);
    }
    if (free_all) {
      for (const char *const *s = type_suffixes; *s; s++) {
        char *id = xprintf("%s%s", cand, *s);
        id_add(ids, id);
        free(id);
      }
      return cand;
    }
    free(cand);
  }
}

/* ---- schemas ---- */

static const char *str_of(const json_t *o, const char *key) {
  return json_string_value(json_object_get(o, key));
}

static bool is_quantity_pattern(const char *p) {
  /* The pattern controller-gen writes for resource.Quantity begins so. */
  return p && strncmp(p, "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))", 36) == 0;
}

typedef struct walk {
  gen_version *v;
  idset *ids;
  char *msg;
  size_t size;
} walk;

static gen_type *new_type(walk *w, const char *base_want, const char *path, const json_t *schema);

/* classify fills sh for schema; base_want names an object type if one is needed. */
static int classify(walk *w, const json_t *schema, const char *base_want, const char *path,
                    gen_shape *sh, bool as_elem) {
  const char *type = str_of(schema, "type");
  memset(sh, 0, sizeof(*sh));
  if (!json_is_object(schema)) {
    snprintf(w->msg, w->size, "%s: the schema is not an object", path);
    return -1;
  }
  if (json_is_true(json_object_get(schema, "x-kubernetes-int-or-string"))) {
    sh->kind = is_quantity_pattern(str_of(schema, "pattern")) ? GEN_QUANTITY : GEN_INTSTR;
    return 0;
  }
  if (!type) {
    sh->kind = GEN_JSON;
  } else if (strcmp(type, "string") == 0) {
    sh->kind = GEN_STRING;
  } else if (strcmp(type, "integer") == 0) {
    const char *f = str_of(schema, "format");
    sh->kind = f && strcmp(f, "int32") == 0 ? GEN_INT32 : GEN_INT64;
  } else if (strcmp(type, "number") == 0) {
    sh->kind = GEN_NUMBER;
  } else if (strcmp(type, "boolean") == 0) {
    sh->kind = GEN_BOOL;
  } else if (strcmp(type, "array") == 0) {
    const json_t *items = json_object_get(schema, "items");
    if (as_elem || !json_is_object(items)) {
      sh->kind = GEN_JSON; /* a list of lists, or items unknown: kept whole */
      return 0;
    }
    sh->kind = GEN_LIST;
    sh->elem = xcalloc(1, sizeof(*sh->elem));
    char *ipath = xprintf("%s[]", path);
    int rc = classify(w, items, base_want, ipath, sh->elem, true);
    free(ipath);
    return rc;
  } else if (strcmp(type, "object") == 0) {
    const json_t *props = json_object_get(schema, "properties");
    const json_t *addl = json_object_get(schema, "additionalProperties");
    if (json_object_size(props) > 0) {
      sh->kind = GEN_OBJECT;
      sh->obj = new_type(w, base_want, path, schema);
      return sh->obj ? 0 : -1;
    }
    if (json_is_object(addl) && !as_elem) {
      char *vpath = xprintf("%s[*]", path);
      int rc;
      sh->kind = GEN_MAP;
      sh->elem = xcalloc(1, sizeof(*sh->elem));
      rc = classify(w, addl, base_want, vpath, sh->elem, true);
      free(vpath);
      if (rc)
        return rc;
      return 0;
    }
    sh->kind = GEN_JSON;
  } else {
    snprintf(w->msg, w->size, "%s: unknown type \"%s\"", path, type);
    return -1;
  }
  return 0;
}

/* member names a field takes in its struct: base, has_base, base_len, base_null. */
static bool field_needs_has(const gen_field *f) {
  switch (f->shape.kind) {
  case GEN_INT32:
  case GEN_INT64:
  case GEN_NUMBER:
  case GEN_BOOL:
  case GEN_INTSTR:
  case GEN_QUANTITY:
  case GEN_LIST:
  case GEN_MAP:
    return !f->required;
  default:
    return false;
  }
}

static bool members_free(idset *m, const gen_field *f, const char *cand) {
  char *ids[4];
  bool ok = true;
  ids[0] = xstrdup(cand);
  ids[1] = field_needs_has(f) ? xprintf("has_%s", cand) : NULL;
  ids[2] = f->shape.kind == GEN_LIST || f->shape.kind == GEN_MAP ? xprintf("%s_len", cand) : NULL;
  ids[3] = f->nullable ? xprintf("%s_null", cand) : NULL;
  for (int i = 0; i < 4; i++) {
    if (ids[i] && (id_taken(m, ids[i]) || is_keyword(ids[i])))
      ok = false;
  }
  for (int i = 0; i < 4; i++) {
    if (ok && ids[i])
      id_add(m, ids[i]);
    free(ids[i]);
  }
  return ok;
}

static bool in_required(const json_t *schema, const char *name) {
  size_t i;
  const json_t *r;
  json_array_foreach(json_object_get(schema, "required"), i, r) {
    if (json_is_string(r) && strcmp(json_string_value(r), name) == 0)
      return true;
  }
  return false;
}

static gen_type *new_type(walk *w, const char *base_want, const char *path, const json_t *schema) {
  gen_type *t = xcalloc(1, sizeof(*t));
  const json_t *props = json_object_get(schema, "properties");
  const char *key;
  const json_t *sub;
  idset members = {0};
  size_t i = 0;
  gen_type **nt;
  t->base = unique_base(w->ids, base_want);
  t->path = xstrdup(path[0] ? path : "(the object)");
  t->desc = str_of(schema, "description") ? xstrdup(str_of(schema, "description")) : NULL;
  t->fields = xcalloc(json_object_size(props), sizeof(*t->fields));
  /* children follow their parent: register t before walking its fields */
  nt = realloc(w->v->types,
               (w->v->ntypes + 1) * sizeof(gen_type *)); // NOLINT(bugprone-sizeof-expression)
  if (!nt) {
    fputs("kcr-gen: out of memory\n", stderr);
    exit(2);
  }
  w->v->types = nt;
  w->v->types[w->v->ntypes++] = t;
  id_add(&members, "kcr_unknown");
  json_object_foreach((json_t *)props, key, sub) {
    gen_field *f = &t->fields[i];
    char *cpath = path[0] ? xprintf("%s.%s", path, key) : xstrdup(key);
    char *sn = snake(key), *child;
    int rc;
    f->json_name = xstrdup(key);
    f->json_lit = c_literal(key);
    f->required = in_required(schema, key);
    f->nullable = json_is_true(json_object_get(sub, "nullable"));
    f->desc = str_of(sub, "description") ? xstrdup(str_of(sub, "description")) : NULL;
    child = xprintf("%s_%s", t->base, sn);
    rc = classify(w, sub, child, cpath, &f->shape, false);
    if (rc == 0 && f->shape.kind == GEN_MAP) {
      char *entry = xprintf("%s_entry", child);
      f->shape.entry = unique_base(w->ids, entry);
      free(entry);
    }
    free(child);
    free(cpath);
    t->nfields = ++i;
    if (rc) {
      free(sn);
      id_free(&members);
      return NULL;
    }
    for (int n = 1;; n++) {
      char *cand = n == 1 ? xstrdup(sn) : xprintf("%s%d", sn, n);
      if (members_free(&members, f, cand)) {
        f->c_name = cand;
        break;
      }
      free(cand);
    }
    free(sn);
  }
  id_free(&members);
  return t;
}

/* ---- the CRD ---- */

static int version_build(walk *w, const json_t *ver, const char *prefix_base) {
  const json_t *schema = json_object_get(json_object_get(ver, "schema"), "openAPIV3Schema");
  gen_version *v = w->v;
  const char *reserved[] = {"_register",    "_scheme_decode", "_scheme_encode",
                            "_scheme_free", "_mem_calloc",    "_mem_strdup",
                            "_mem_free",    "_gvk",           NULL};
  v->name = xstrdup(str_of(ver, "name"));
  v->prefix = xprintf("%s_%s", prefix_base, v->name);
  for (char *p = v->prefix; *p; p++)
    *p = isalnum((unsigned char)*p) ? (char)tolower((unsigned char)*p) : '_';
  if (!json_is_object(schema)) {
    snprintf(w->msg, w->size, "no schema.openAPIV3Schema");
    return -1;
  }
  if (json_object_size(json_object_get(schema, "properties")) == 0) {
    snprintf(w->msg, w->size, "the schema has no properties");
    return -1;
  }
  for (const char *const *r = reserved; *r; r++) {
    char *id = xprintf("%s%s", v->prefix, *r);
    id_add(w->ids, id);
    free(id);
  }
  if (!new_type(w, v->prefix, "", schema))
    return -1;
  return 0;
}

int gen_crd_build(const json_t *docs, const char *prefix_base, const char *source, gen_crd *crd,
                  char *msg, size_t size) {
  const json_t *doc = NULL, *d, *spec, *names, *ver;
  size_t i;
  char *base;
  memset(crd, 0, sizeof(*crd));
  json_array_foreach(docs, i, d) {
    const char *k = str_of(d, "kind");
    if (k && strcmp(k, "CustomResourceDefinition") == 0) {
      doc = d;
      break;
    }
  }
  if (!doc) {
    snprintf(msg, size, "no CustomResourceDefinition in the file");
    return -1;
  }
  spec = json_object_get(doc, "spec");
  names = json_object_get(spec, "names");
  if (!str_of(spec, "group") || !str_of(names, "kind") || !str_of(names, "plural")) {
    snprintf(msg, size, "the CRD lacks spec.group, spec.names.kind or spec.names.plural");
    return -1;
  }
  crd->source = xstrdup(source);
  crd->group = xstrdup(str_of(spec, "group"));
  crd->kind = xstrdup(str_of(names, "kind"));
  crd->plural = xstrdup(str_of(names, "plural"));
  crd->list_kind =
      str_of(names, "listKind") ? xstrdup(str_of(names, "listKind")) : xprintf("%sList", crd->kind);
  crd->namespaced = !str_of(spec, "scope") || strcmp(str_of(spec, "scope"), "Cluster") != 0;
  crd->versions = xcalloc(json_array_size(json_object_get(spec, "versions")), sizeof(gen_version));
  base = prefix_base ? xstrdup(prefix_base) : snake(crd->kind);
  json_array_foreach(json_object_get(spec, "versions"), i, ver) {
    idset ids = {0};
    walk w = {&crd->versions[crd->nversions], &ids, msg, size};
    int rc;
    if (!str_of(ver, "name") || !json_is_true(json_object_get(ver, "served")))
      continue;
    crd->nversions++;
    rc = version_build(&w, ver, base);
    id_free(&ids);
    if (rc) {
      char tmp[512];
      snprintf(tmp, sizeof(tmp), "%s", msg);
      snprintf(msg, size, "version %s: %s", str_of(ver, "name"), tmp);
      free(base);
      return -1;
    }
  }
  free(base);
  if (crd->nversions == 0) {
    snprintf(msg, size, "the CRD serves no version");
    return -1;
  }
  return 0;
}

static void shape_free(gen_shape *sh) {
  if (sh->elem) {
    shape_free(sh->elem);
    free(sh->elem);
  }
  free(sh->entry);
}

void gen_crd_free(gen_crd *crd) {
  for (size_t i = 0; i < crd->nversions; i++) {
    gen_version *v = &crd->versions[i];
    for (size_t j = 0; j < v->ntypes; j++) {
      gen_type *t = v->types[j];
      for (size_t k = 0; k < t->nfields; k++) {
        free(t->fields[k].json_name);
        free(t->fields[k].json_lit);
        free(t->fields[k].c_name);
        free(t->fields[k].desc);
        shape_free(&t->fields[k].shape);
      }
      free(t->fields);
      free(t->base);
      free(t->path);
      free(t->desc);
      free(t);
    }
    free(v->types);
    free(v->name);
    free(v->prefix);
  }
  free(crd->versions);
  free(crd->group);
  free(crd->kind);
  free(crd->list_kind);
  free(crd->plural);
  free(crd->source);
  memset(crd, 0, sizeof(*crd));
}
