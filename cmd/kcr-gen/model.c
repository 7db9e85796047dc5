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
  s = xcalloc((size_t)(n < 0 ? 0 : n) + 1, 1);
  if (n > 0) { /* the arguments again, to print them this time */
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
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
  /* C's keywords, and the macros GNU C predefines (a PodSpec's os.linux) */
  static const char *const kw[] = {"linux",
                                   "unix",
                                   "i386",
                                   "auto",
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
      /* an acronym ends before a capital that starts a word (HTTPGet -> http_get),
       * but a plural 's' stays with it (podIPs -> pod_ips) */
      bool plural = name[i + 1] == 's' && !islower((unsigned char)name[i + 2]);
      bool next_low = i > 0 && isupper((unsigned char)name[i - 1]) &&
                      islower((unsigned char)name[i + 1]) && !plural;
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

/* refcache: the types made for components.schemas entries so far, by name. */
typedef struct refcache {
  char **names;
  gen_type **types;
  size_t n;
} refcache;

typedef struct walk {
  gen_version *v;
  idset *ids;
  char *msg;
  size_t size;
  const json_t *schemas; /* components.schemas (openapi), else NULL */
  refcache *refs;
  const char *pkg;     /* the package prefix that ref'd types are named under */
  bool ext;            /* libkcr's meta/v1 types are referenced, not made */
  const char *cur_pkg; /* the group-version of the type being walked (borrowed) */
} walk;

static gen_type *new_type(walk *w, const char *base_want, const char *path, const json_t *schema,
                          const char *ref);

#define REF_PREFIX "#/components/schemas/"

/*
 * deref follows a $ref, directly or as the one member of allOf (how
 * /openapi/v3 writes a field with a description), to its components.schemas
 * entry; *ref gets the entry's name. Returns schema itself when it has none.
 */
static const json_t *deref(const walk *w, const json_t *schema, const char **ref, int *bad) {
  const json_t *all = json_object_get(schema, "allOf");
  const char *r = str_of(schema, "$ref");
  *ref = NULL;
  *bad = 0;
  if (!r && json_array_size(all) == 1)
    r = str_of(json_array_get(all, 0), "$ref");
  if (!r)
    return schema;
  if (!w->schemas || strncmp(r, REF_PREFIX, strlen(REF_PREFIX)) != 0 ||
      !json_is_object(json_object_get(w->schemas, r + strlen(REF_PREFIX)))) {
    gen_msgf(w->msg, w->size, "$ref %s: not in components.schemas", r);
    *bad = 1;
    return NULL;
  }
  *ref = r + strlen(REF_PREFIX);
  return json_object_get(w->schemas, *ref);
}

/*
 * ref_base names the type of a components.schemas entry: the package prefix
 * and the last three parts of the name, in snake case
 * (io.k8s.api.apps.v1.DeploymentSpec under kcr -> kcr_apps_v1_deployment_spec).
 */
static char *ref_base(const char *pkg, const char *ref) {
  const char *start = ref + strlen(ref);
  char *sn, *out;
  for (int dots = 0; start > ref; start--)
    if (start[-1] == '.' && ++dots == 3)
      break;
  sn = snake(start); /* the dots become '_' */
  out = xprintf("%s_%s", pkg, sn);
  free(sn);
  return out;
}

/*
 * ref_pkg is the group-version package of a components.schemas entry
 * (io.k8s.api.apps.v1.DeploymentSpec -> apps_v1), new; NULL for a name
 * outside io.k8s.api.GROUP.VERSION.NAME.
 */
static char *ref_pkg(const char *ref) {
  static const char api[] = "io.k8s.api.";
  const char *g = ref + strlen(api), *v, *n;
  if (strncmp(ref, api, strlen(api)) != 0 || !(v = strchr(g, '.')) || !(n = strchr(v + 1, '.')) ||
      strchr(n + 1, '.') || v == g || n == v + 1 || !n[1])
    return NULL;
  return xprintf("%.*s_%.*s", (int)(v - g), g, (int)(n - v - 1), v + 1);
}

static bool type_is(const json_t *schema, const char *type) {
  const char *t = str_of(schema, "type");
  return t && strcmp(t, type) == 0;
}

/* is_quantity tells a resource.Quantity: oneOf string or number (OpenAPI v3). */
static bool is_quantity(const json_t *schema, const char *ref) {
  const json_t *one = json_object_get(schema, "oneOf");
  if (ref && strcmp(ref, "io.k8s.apimachinery.pkg.api.resource.Quantity") == 0)
    return true;
  return json_array_size(one) == 2 && type_is(json_array_get(one, 0), "string") &&
         type_is(json_array_get(one, 1), "number");
}

/* ref_find returns the type made for components.schemas entry ref, or NULL. */
static gen_type *ref_find(const walk *w, const char *ref) {
  for (size_t i = 0; w->refs && i < w->refs->n; i++)
    if (strcmp(w->refs->names[i], ref) == 0)
      return w->refs->types[i];
  return NULL;
}

static void refcache_free(refcache *c) {
  for (size_t i = 0; i < c->n; i++)
    free(c->names[i]);
  free(c->names);
  free(c->types);
}

static void ref_add(walk *w, const char *ref, gen_type *t) {
  refcache *c = w->refs;
  char **nn = realloc(c->names, (c->n + 1) * sizeof(*nn));
  gen_type **nt;
  if (nn)
    c->names = nn;
  nt = nn ? realloc(c->types, (c->n + 1) * sizeof(gen_type *)) // NOLINT(bugprone-sizeof-expression)
          : NULL;
  if (!nt) {
    fputs("kcr-gen: out of memory\n", stderr);
    exit(2);
  }
  c->types = nt;
  c->names[c->n] = xstrdup(ref);
  c->types[c->n++] = t;
}

/* ---- libkcr's meta/v1 types (kcr/meta_v1.h) ---- */

#define META_V1 "io.k8s.apimachinery.pkg.apis.meta.v1."

/* ext_types: the schemas libkcr ships as types, and their C names. */
static const struct {
  const char *schema, *base;
} ext_types[] = {
    {META_V1 "ObjectMeta", "kcr_meta_v1_object_meta"},
    {META_V1 "OwnerReference", "kcr_meta_v1_owner_reference"},
    {META_V1 "ManagedFieldsEntry", "kcr_meta_v1_managed_fields_entry"},
    {META_V1 "Condition", "kcr_meta_v1_condition"},
    {META_V1 "LabelSelector", "kcr_meta_v1_label_selector"},
    {META_V1 "LabelSelectorRequirement", "kcr_meta_v1_label_selector_requirement"},
};

/* add_type appends t (owned from now) to v's types. */
static void add_type(gen_version *v, gen_type *t) {
  gen_type **nt =
      realloc(v->types, (v->ntypes + 1) * sizeof(gen_type *)); // NOLINT(bugprone-sizeof-expression)
  if (!nt) {
    fputs("kcr-gen: out of memory\n", stderr);
    exit(2);
  }
  v->types = nt;
  v->types[v->ntypes++] = t;
}

/*
 * ext_type returns the type for libkcr's schema ref (one per package, made on
 * first use), or NULL when libkcr ships no type for ref or w makes its own.
 */
static gen_type *ext_type(walk *w, const char *ref) {
  gen_type *t;
  size_t i = 0, n = sizeof(ext_types) / sizeof(ext_types[0]);
  while (w->ext && i < n && strcmp(ext_types[i].schema, ref) != 0)
    i++;
  if (!w->ext || i == n)
    return NULL;
  if ((t = ref_find(w, ref)) != NULL)
    return t;
  t = xcalloc(1, sizeof(*t));
  t->base = xstrdup(ext_types[i].base);
  t->ext = xstrdup("kcr_meta_v1");
  t->header = xstrdup(GEN_EXT_HEADER);
  t->path = xstrdup(ref);
  id_add(w->ids, t->base);
  add_type(w->v, t);
  ref_add(w, ref, t);
  return t;
}

/*
 * is_condition tells a CRD's copy of metav1.Condition (what controller-gen
 * writes for []metav1.Condition): an object whose properties are type,
 * status, lastTransitionTime, reason and message, and perhaps
 * observedGeneration, and nothing else.
 */
static bool is_condition(const json_t *schema) {
  static const char *const need[] = {"type", "status", "lastTransitionTime", "reason", "message"};
  const json_t *props = json_object_get(schema, "properties");
  size_t n = sizeof(need) / sizeof(need[0]);
  if (!json_is_object(props))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!json_object_get(props, need[i]))
      return false;
  return json_object_size(props) == n + (json_object_get(props, "observedGeneration") ? 1 : 0);
}

/* classify fills sh for schema; base_want names an object type if one is needed. */
static int classify(walk *w, const json_t *schema, const char *base_want, const char *path,
                    gen_shape *sh, bool as_elem) {
  const char *type, *ref = NULL, *fmt;
  int bad;
  memset(sh, 0, sizeof(*sh));
  if (!json_is_object(schema)) {
    gen_msgf(w->msg, w->size, "%s: the schema is not an object", path);
    return -1;
  }
  if (!(schema = deref(w, schema, &ref, &bad)) || bad) {
    char *why = xstrdup(w->msg);
    gen_msgf(w->msg, w->size, "%s: %s", path, why);
    free(why);
    return -1;
  }
  type = str_of(schema, "type");
  fmt = str_of(schema, "format");
  if (json_is_true(json_object_get(schema, "x-kubernetes-int-or-string"))) {
    sh->kind = is_quantity_pattern(str_of(schema, "pattern")) ? GEN_QUANTITY : GEN_INTSTR;
    return 0;
  }
  if (fmt && strcmp(fmt, "int-or-string") == 0) {
    sh->kind = GEN_INTSTR;
    return 0;
  }
  if (is_quantity(schema, ref)) {
    sh->kind = GEN_QUANTITY;
    return 0;
  }
  if (ref && (sh->obj = ext_type(w, ref)) != NULL) {
    sh->kind = GEN_OBJECT;
    return 0;
  }
  if (ref && type && strcmp(type, "object") == 0 &&
      json_object_size(json_object_get(schema, "properties")) > 0) {
    /* one type per components.schemas entry, shared by every field that names it */
    gen_type *t = ref_find(w, ref);
    sh->kind = GEN_OBJECT;
    if (!t) {
      char *base = ref_base(w->pkg, ref);
      t = new_type(w, base, ref, schema, ref);
      free(base);
    }
    sh->obj = t;
    return t ? 0 : -1;
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
    if (!w->schemas && is_condition(items) && (sh->elem->obj = ext_type(w, META_V1 "Condition"))) {
      sh->elem->kind = GEN_OBJECT; /* a CRD's conditions: libkcr's typed helpers apply */
      return 0;
    }
    char *ipath = xprintf("%s[]", path);
    int rc = classify(w, items, base_want, ipath, sh->elem, true);
    free(ipath);
    return rc;
  } else if (strcmp(type, "object") == 0) {
    const json_t *props = json_object_get(schema, "properties");
    const json_t *addl = json_object_get(schema, "additionalProperties");
    if (json_object_size(props) > 0) {
      sh->kind = GEN_OBJECT;
      sh->obj = new_type(w, base_want, path, schema, NULL);
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
    gen_msgf(w->msg, w->size, "%s: unknown type \"%s\"", path, type);
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

/*
 * within tells whether s, what the schema at path makes, is at most max bytes;
 * when not, w's message names path, says what s is and why the limit.
 */
static bool within(walk *w, const char *path, const char *s, int max, const char *what,
                   const char *why) {
  size_t n = strlen(s);
  if (n <= (size_t)max)
    return true;
  gen_msgf(w->msg, w->size, "%s: %s is %zu bytes long, over %d: %s",
           path[0] ? path : "(the object)", what, n, max, why);
  return false;
}

static gen_type *new_type(walk *w, const char *base_want, const char *path, const json_t *schema,
                          const char *ref) {
  gen_type *t;
  const json_t *props = json_object_get(schema, "properties");
  const char *key;
  const json_t *sub;
  idset members = {0};
  size_t i = 0;
  const char *outer = w->cur_pkg;
  if (!within(w, path, base_want, GEN_NAME_MAX, "the C name of this object's type",
              "generated messages quote it in a C string literal; shorten the property names "
              "on the way"))
    return NULL;
  t = xcalloc(1, sizeof(*t));
  t->base = unique_base(w->ids, base_want);
  t->pkg = ref ? ref_pkg(ref) : w->cur_pkg ? xstrdup(w->cur_pkg) : NULL;
  t->path = xstrdup(path[0] ? path : "(the object)");
  t->desc = str_of(schema, "description") ? xstrdup(str_of(schema, "description")) : NULL;
  t->fields = xcalloc(json_object_size(props), sizeof(*t->fields));
  /* children follow their parent: register t before walking its fields */
  add_type(w->v, t);
  if (ref)
    ref_add(w, ref, t); /* before its fields: a type may reach itself */
  id_add(&members, "kcr_unknown");
  w->cur_pkg = t->pkg; /* an inline object belongs where its parent does */
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
    if (!within(w, cpath, key, GEN_LITERAL_MAX, "the property name",
                "the generated code holds it in a C string literal, and C takes at most 4095 "
                "bytes in one (C11 5.2.4.1)")) {
      rc = -1;
    } else if (!w->schemas && !path[0] && strcmp(key, "metadata") == 0 &&
               (f->shape.obj = ext_type(w, META_V1 "ObjectMeta")) != NULL) {
      f->shape.kind = GEN_OBJECT; /* a CRD's metadata: the typed ObjectMeta */
      rc = 0;
    } else {
      rc = classify(w, sub, child, cpath, &f->shape, false);
    }
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
      w->cur_pkg = outer;
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
  w->cur_pkg = outer;
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
    gen_msgf(w->msg, w->size, "no schema.openAPIV3Schema");
    return -1;
  }
  if (json_object_size(json_object_get(schema, "properties")) == 0) {
    gen_msgf(w->msg, w->size, "the schema has no properties");
    return -1;
  }
  for (const char *const *r = reserved; *r; r++) {
    char *id = xprintf("%s%s", v->prefix, *r);
    id_add(w->ids, id);
    free(id);
  }
  v->kinds = xcalloc(1, sizeof(*v->kinds));
  v->nkinds = 1;
  if (!(v->kinds[0].type = new_type(w, v->prefix, "", schema, NULL)))
    return -1;
  v->kinds[0].prefix = xstrdup(v->prefix);
  v->kinds[0].version = xstrdup(v->name);
  return 0;
}

/* listed tells whether name is one of the comma-separated names in list. */
static bool listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0)
      return true;
    p += len + (end ? 1 : 0);
  }
  return false;
}

/*
 * missing_version finds the first version of only that the CRD lacks: returns
 * where its name starts in only (*len bytes long), or NULL.
 */
static const char *missing_version(const json_t *versions, const char *only, size_t *len) {
  for (const char *p = only; *p;) {
    const char *end = strchr(p, ',');
    size_t i;
    const json_t *ver;
    bool found = false;
    *len = end ? (size_t)(end - p) : strlen(p);
    json_array_foreach(versions, i, ver) {
      const char *name = str_of(ver, "name");
      if (name && strlen(name) == *len && strncmp(name, p, *len) == 0)
        found = true;
    }
    if (!found || *len == 0)
      return p;
    p += *len + (end ? 1 : 0);
  }
  return NULL;
}

int gen_crd_build(const json_t *docs, const char *prefix_base, const char *only, const char *source,
                  gen_crd *crd, char *msg, size_t size) {
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
    gen_msgf(msg, size, "no CustomResourceDefinition in the file");
    return -1;
  }
  spec = json_object_get(doc, "spec");
  names = json_object_get(spec, "names");
  if (!str_of(spec, "group") || !str_of(names, "kind") || !str_of(names, "plural")) {
    gen_msgf(msg, size, "the CRD lacks spec.group, spec.names.kind or spec.names.plural");
    return -1;
  }
  crd->source = xstrdup(source);
  crd->group = xstrdup(str_of(spec, "group"));
  crd->kind = xstrdup(str_of(names, "kind"));
  crd->plural = xstrdup(str_of(names, "plural"));
  crd->list_kind =
      str_of(names, "listKind") ? xstrdup(str_of(names, "listKind")) : xprintf("%sList", crd->kind);
  crd->namespaced = !str_of(spec, "scope") || strcmp(str_of(spec, "scope"), "Cluster") != 0;
  if (only) {
    size_t len = 0;
    const char *lacking = missing_version(json_object_get(spec, "versions"), only, &len);
    if (lacking) {
      gen_msgf(msg, size, "the CRD has no version \"%.*s\"", (int)len, lacking);
      return -1;
    }
  }
  crd->versions = xcalloc(json_array_size(json_object_get(spec, "versions")), sizeof(gen_version));
  base = prefix_base ? xstrdup(prefix_base) : snake(crd->kind);
  json_array_foreach(json_object_get(spec, "versions"), i, ver) {
    idset ids = {0};
    refcache refs = {NULL, NULL, 0};
    walk w = {&crd->versions[crd->nversions], &ids, msg, size, NULL, &refs, NULL, true, NULL};
    int rc;
    if (!str_of(ver, "name") ||
        (only ? !listed(only, str_of(ver, "name")) : !json_is_true(json_object_get(ver, "served"))))
      continue;
    crd->nversions++;
    rc = version_build(&w, ver, base);
    id_free(&ids);
    refcache_free(&refs);
    if (rc == 0) {
      gen_kindinfo *k = &w.v->kinds[0];
      k->group = xstrdup(crd->group);
      k->kind = xstrdup(crd->kind);
      k->plural = xstrdup(crd->plural);
      k->list_kind = xstrdup(crd->list_kind);
      k->namespaced = crd->namespaced;
    }
    if (rc) {
      char *why = xstrdup(msg);
      gen_msgf(msg, size, "version %s: %s", str_of(ver, "name"), why);
      free(why);
      free(base);
      return -1;
    }
  }
  free(base);
  if (crd->nversions == 0) {
    gen_msgf(msg, size, "the CRD serves no version");
    return -1;
  }
  return 0;
}

/* ---- built-in kinds from /openapi/v3 ---- */

static const char *const kind_reserved[] = {"_register",    "_scheme_decode", "_scheme_encode",
                                            "_scheme_free", "_gvk",           NULL};

/* find_kind looks for the schema whose x-kubernetes-group-version-kind is g/v/k. */
static const char *find_kind(const json_t *schemas, const char *g, const char *v, const char *k) {
  const char *name;
  const json_t *s;
  if (!g || !v || !k)
    return NULL;
  json_object_foreach((json_t *)schemas, name, s) {
    size_t i;
    const json_t *gvk;
    json_array_foreach(json_object_get(s, "x-kubernetes-group-version-kind"), i, gvk) {
      const char *gg = str_of(gvk, "group"), *gv = str_of(gvk, "version");
      const char *gk = str_of(gvk, "kind");
      if (strcmp(gg ? gg : "", g) == 0 && gv && strcmp(gv, v) == 0 && gk && strcmp(gk, k) == 0)
        return name;
    }
  }
  return NULL;
}

/* kind_parse fills k from "apps/v1/Deployment[=deployments[,cluster]]" and docs. */
static int kind_parse(const json_t *docs, const char *spec, gen_kindinfo *k, char *msg,
                      size_t size) {
  char *s = xstrdup(spec), *eq = strchr(s, '='), *v, *kind;
  size_t i;
  const json_t *d;
  if (eq)
    *eq++ = '\0';
  if (!(v = strchr(s, '/')) || !(kind = strchr(v + 1, '/')) || strchr(kind + 1, '/') || v == s ||
      kind == v + 1 || !kind[1]) {
    gen_msgf(msg, size, "%s: want GROUP/VERSION/KIND (core/v1/Pod)", spec);
    free(s);
    return -1;
  }
  *v++ = '\0';
  *kind++ = '\0';
  k->group = xstrdup(strcmp(s, "core") == 0 ? "" : s);
  k->version = xstrdup(v);
  k->kind = xstrdup(kind);
  k->list_kind = xprintf("%sList", kind);
  k->namespaced = true;
  if (eq) {
    char *comma = strchr(eq, ',');
    if (comma) {
      *comma++ = '\0';
      if (strcmp(comma, "cluster") != 0 && strcmp(comma, "namespaced") != 0) {
        gen_msgf(msg, size, "%s: the scope is cluster or namespaced", spec);
        free(s);
        return -1;
      }
      k->namespaced = strcmp(comma, "namespaced") == 0;
    }
    k->plural = *eq ? xstrdup(eq) : NULL;
  }
  json_array_foreach(docs, i, d) {
    size_t j;
    const json_t *r;
    json_array_foreach(json_object_get(d, "x-kcr-resources"), j, r) {
      const char *rg = str_of(r, "group") ? str_of(r, "group") : "";
      if (k->plural || !str_of(r, "resource") || strcmp(rg, k->group) != 0 ||
          !str_of(r, "version") || strcmp(str_of(r, "version"), k->version) != 0 ||
          !str_of(r, "kind") || strcmp(str_of(r, "kind"), k->kind) != 0)
        continue;
      k->plural = xstrdup(str_of(r, "resource"));
      k->namespaced = !json_is_false(json_object_get(r, "namespaced"));
    }
  }
  free(s);
  if (!k->plural) {
    gen_msgf(msg, size, "%s: no resource name: give %s=PLURAL or a document with x-kcr-resources",
             spec, spec);
    return -1;
  }
  return 0;
}

static void shape_free(gen_shape *sh);

/* openapi_build is gen_openapi_build; ext says whether meta/v1 is libkcr's. */
static int openapi_build(const json_t *docs, const char *prefix, const char *const *kinds,
                         size_t nkinds, const char *source, bool ext, gen_crd *crd, char *msg,
                         size_t size) {
  json_t *schemas = json_object();
  idset ids = {0};
  refcache refs = {NULL, NULL, 0};
  gen_version *v;
  walk w;
  size_t i;
  const json_t *d;
  int rc = -1;
  const char *mem[] = {"_mem_calloc", "_mem_strdup", "_mem_free", NULL};
  memset(crd, 0, sizeof(*crd));
  if (!schemas) {
    fputs("kcr-gen: out of memory\n", stderr);
    exit(2);
  }
  json_array_foreach(docs, i, d) {
    const json_t *cs = json_object_get(json_object_get(d, "components"), "schemas");
    if (!json_is_object(cs)) {
      gen_msgf(msg, size, "document %zu has no components.schemas", i + 1);
      goto done;
    }
    json_object_update_missing(schemas, (json_t *)cs);
  }
  crd->source = xstrdup(source);
  crd->versions = xcalloc(1, sizeof(gen_version));
  crd->nversions = 1;
  v = &crd->versions[0];
  v->name = xstrdup(prefix);
  v->prefix = xstrdup(prefix);
  v->kinds = xcalloc(nkinds ? nkinds : 1, sizeof(*v->kinds));
  for (i = 0; i < nkinds; i++)
    v->nkinds += strchr(kinds[i], '/') ? 1 : 0;
  for (const char *const *r = mem; *r; r++) {
    char *id = xprintf("%s%s", prefix, *r);
    id_add(&ids, id);
    free(id);
  }
  memset(&w, 0, sizeof(w));
  w.v = v;
  w.ids = &ids;
  w.msg = msg;
  w.size = size;
  w.schemas = schemas;
  w.refs = &refs;
  w.pkg = prefix;
  w.ext = ext;
  for (size_t j = i = 0; j < nkinds; j++) {
    gen_kindinfo *k = &v->kinds[i];
    const char *name;
    char *base;
    if (!strchr(kinds[j], '/')) { /* a schema name: checked when it is walked */
      continue;
    }
    if (kind_parse(docs, kinds[j], k, msg, size))
      goto done;
    if (!(name = find_kind(schemas, k->group, k->version, k->kind))) {
      gen_msgf(msg, size, "%s: no schema has this x-kubernetes-group-version-kind", kinds[j]);
      goto done;
    }
    base = ref_base(prefix, name);
    for (const char *const *r = kind_reserved; *r; r++) {
      char *id = xprintf("%s%s", base, *r);
      id_add(&ids, id);
      free(id);
    }
    free(base);
    i++;
  }
  for (size_t j = i = 0; j < nkinds; j++) {
    bool is_kind = strchr(kinds[j], '/') != NULL;
    gen_kindinfo *k = is_kind ? &v->kinds[i++] : NULL;
    const char *name = k ? find_kind(schemas, k->group, k->version, k->kind) : kinds[j];
    json_t *wrap = json_pack("{ss}", "$ref", "");
    gen_shape sh;
    char *r = xprintf(REF_PREFIX "%s", name);
    json_object_set_new(wrap, "$ref", json_string(r));
    free(r);
    rc = classify(&w, wrap, prefix, name, &sh, false);
    json_decref(wrap);
    if (rc == 0 && (sh.kind != GEN_OBJECT || (k && sh.obj->ext))) {
      gen_msgf(msg, size, "%s: the schema %s is not an object with properties", kinds[j], name);
      rc = -1;
    }
    if (rc) {
      shape_free(&sh); /* a list or map of the wrong kind owns its element */
      goto done;
    }
    if (k) {
      k->type = sh.obj;
      k->prefix = xstrdup(sh.obj->base);
    }
  }
  rc = 0;
done:
  refcache_free(&refs);
  id_free(&ids);
  json_decref(schemas);
  return rc;
}

int gen_openapi_build(const json_t *docs, const char *prefix, const char *const *kinds,
                      size_t nkinds, const char *source, gen_crd *crd, char *msg, size_t size) {
  /* libkcr's own package (prefix kcr) makes the meta/v1 types */
  return openapi_build(docs, prefix, kinds, nkinds, source, strcmp(prefix, "kcr") != 0, crd, msg,
                       size);
}

/* ---- one package per group-version ---- */

/* shape_type is the struct a field holds, itself or as a list's or map's element. */
static const gen_type *shape_type(const gen_shape *sh) {
  for (; sh; sh = sh->elem)
    if (sh->obj)
      return sh->obj;
  return NULL;
}

typedef struct split {
  const char **names; /* the packages, borrowed from their types' pkg */
  size_t n;
  bool *dep;                   /* dep[i * n + j]: package i reaches package j */
  const gen_type **from, **to; /* one such edge of each, for the message */
  int *mark;                   /* 0 new, 1 on the path, 2 done */
  size_t *order, norder;       /* packages after those they reach */
} split;

static size_t split_index(const split *sp, const char *pkg) {
  size_t i = 0;
  while (i < sp->n && strcmp(sp->names[i], pkg) != 0)
    i++;
  return i;
}

/* split_visit orders package i after those it reaches; -1 on a circle. */
static int split_visit(split *sp, size_t i, char *msg, size_t size) {
  if (sp->mark[i] == 2)
    return 0;
  sp->mark[i] = 1;
  for (size_t j = 0; j < sp->n; j++) {
    size_t e = i * sp->n + j;
    if (!sp->dep[e])
      continue;
    if (sp->mark[j] == 1) {
      size_t back = j * sp->n + i;
      /* j is on the path to i, so j reaches i, perhaps through others */
      gen_msgf(msg, size,
               "packages %s and %s reach each other (%s reaches %s, and %s reaches %s%s): "
               "one group-version's header would need the other's first; generate them "
               "without --split",
               sp->names[i], sp->names[j], sp->from[e]->path, sp->to[e]->path, sp->names[j],
               sp->dep[back] ? sp->to[back]->path : sp->names[i],
               sp->dep[back] ? "" : " through other packages");
      return -1;
    }
    if (split_visit(sp, j, msg, size))
      return -1;
  }
  sp->mark[i] = 2;
  sp->order[sp->norder++] = i;
  return 0;
}

/*
 * split_proxy returns v's reference to t, made elsewhere (another package's
 * type, or libkcr's), adding one to v's types if v has none yet.
 */
static gen_type *split_proxy(gen_version *v, const gen_type *t, const char *prefix,
                             const char *incdir) {
  gen_type *p;
  for (size_t i = 0; i < v->ntypes; i++)
    if (v->types[i]->ext && strcmp(v->types[i]->base, t->base) == 0)
      return v->types[i];
  p = xcalloc(1, sizeof(*p));
  p->base = xstrdup(t->base);
  p->ext = t->ext ? xstrdup(t->ext) : xprintf("%s_%s", prefix, t->pkg);
  p->header = t->ext ? xstrdup(t->header) : xprintf("%s/%s.h", incdir, t->pkg);
  p->path = xstrdup(t->path);
  add_type(v, p);
  return p;
}

int gen_openapi_split(const json_t *docs, const char *prefix, const char *incdir,
                      const char *const *kinds, size_t nkinds, const char *source, gen_crd *crd,
                      char *msg, size_t size) {
  gen_crd all;
  gen_version *v;
  split sp;
  size_t kept = 0;
  int rc = -1;
  memset(crd, 0, sizeof(*crd));
  memset(&sp, 0, sizeof(sp));
  if (openapi_build(docs, prefix, kinds, nkinds, source, true, &all, msg, size))
    goto done;
  v = &all.versions[0];
  sp.names = xcalloc(v->ntypes, sizeof(*sp.names));
  for (size_t i = 0; i < v->ntypes; i++) {
    const gen_type *t = v->types[i];
    if (t->ext)
      continue;
    if (!t->pkg) {
      gen_msgf(msg, size,
               "%s: not a schema of io.k8s.api.GROUP.VERSION, nor one libkcr ships "
               "(kcr/meta_v1.h); --split cannot place it",
               t->path);
      goto done;
    }
    if (split_index(&sp, t->pkg) == sp.n)
      sp.names[sp.n++] = t->pkg;
  }
  sp.dep = xcalloc(sp.n * sp.n, sizeof(*sp.dep));
  sp.from = xcalloc(sp.n * sp.n, sizeof(*sp.from)); // NOLINT(bugprone-sizeof-expression)
  sp.to = xcalloc(sp.n * sp.n, sizeof(*sp.to));     // NOLINT(bugprone-sizeof-expression)
  sp.mark = xcalloc(sp.n, sizeof(*sp.mark));
  sp.order = xcalloc(sp.n, sizeof(*sp.order));
  for (size_t i = 0; i < v->ntypes; i++) {
    const gen_type *t = v->types[i];
    size_t a = t->ext ? sp.n : split_index(&sp, t->pkg);
    for (size_t f = 0; a < sp.n && f < t->nfields; f++) {
      const gen_type *u = shape_type(&t->fields[f].shape);
      size_t b = u && !u->ext ? split_index(&sp, u->pkg) : sp.n;
      if (b < sp.n && b != a && !sp.dep[a * sp.n + b]) {
        sp.dep[a * sp.n + b] = true;
        sp.from[a * sp.n + b] = t;
        sp.to[a * sp.n + b] = u;
      }
    }
  }
  for (size_t i = 0; i < sp.n; i++)
    if (split_visit(&sp, i, msg, size))
      goto done;
  crd->source = xstrdup(source);
  crd->versions = xcalloc(sp.n, sizeof(gen_version));
  crd->nversions = sp.n;
  for (size_t o = 0; o < sp.norder; o++) {
    const char *name = sp.names[sp.order[o]];
    gen_version *pv = &crd->versions[o];
    pv->name = xstrdup(name);
    pv->prefix = xprintf("%s_%s", prefix, name);
    pv->file = xstrdup(name);
    pv->include = xprintf("%s/%s.h", incdir, name);
    pv->kinds = xcalloc(v->nkinds, sizeof(*pv->kinds));
    for (size_t k = 0; k < v->nkinds; k++)
      if (v->kinds[k].type && strcmp(v->kinds[k].type->pkg, name) == 0)
        pv->kinds[pv->nkinds++] = v->kinds[k];
    for (size_t i = 0; i < v->ntypes; i++) {
      gen_type *t = v->types[i];
      if (t->ext || strcmp(t->pkg, name) != 0)
        continue;
      add_type(pv, t);
    }
    /* what the package's own types reach elsewhere: references after them */
    for (size_t i = 0, own = pv->ntypes; i < own; i++)
      for (size_t f = 0; f < pv->types[i]->nfields; f++)
        for (gen_shape *sh = &pv->types[i]->fields[f].shape; sh; sh = sh->elem)
          if (sh->obj && (sh->obj->ext || strcmp(sh->obj->pkg, name) != 0))
            sh->obj = split_proxy(pv, sh->obj, prefix, incdir);
  }
  /* the packages own the types and kinds now; all keeps libkcr's references */
  for (size_t i = 0; i < v->ntypes; i++)
    if (v->types[i]->ext)
      v->types[kept++] = v->types[i];
  v->ntypes = kept;
  v->nkinds = 0;
  rc = 0;
done:
  gen_crd_free(&all);
  free(sp.names);
  free(sp.dep);
  free(sp.from);
  free(sp.to);
  free(sp.mark);
  free(sp.order);
  if (rc)
    gen_crd_free(crd);
  return rc;
}

int gen_version_name_files(gen_version *v, const char *prefix, const char *file,
                           const char *include) {
  free(v->prefix);
  free(v->file);
  free(v->include);
  v->prefix = xprintf("%s_%s", prefix, file);
  v->file = xstrdup(file);
  v->include = include ? xstrdup(include) : NULL;
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
      free(t->ext);
      free(t->header);
      free(t->pkg);
      free(t->path);
      free(t->desc);
      free(t);
    }
    free(v->types);
    for (size_t j = 0; j < v->nkinds; j++) {
      gen_kindinfo *k = &v->kinds[j];
      free(k->group);
      free(k->version);
      free(k->kind);
      free(k->plural);
      free(k->list_kind);
      free(k->prefix);
    }
    free(v->kinds);
    free(v->name);
    free(v->prefix);
    free(v->file);
    free(v->include);
    free(v->user_header);
  }
  free(crd->versions);
  free(crd->group);
  free(crd->kind);
  free(crd->list_kind);
  free(crd->plural);
  free(crd->source);
  memset(crd, 0, sizeof(*crd));
}

/* ---- codecs for a type header's own structs (kcr-gen codecs) ---- */

/* hdr_ext: the Kubernetes types a type header may name, and whose functions code them. */
static const struct {
  const char *ctype, *base, *ext, *header;
} hdr_ext[] = {
    {"kcr_meta_v1_object_meta_t", "kcr_meta_v1_object_meta", "kcr_meta_v1", GEN_EXT_HEADER},
    {"kcr_meta_v1_condition_t", "kcr_meta_v1_condition", "kcr_meta_v1", GEN_EXT_HEADER},
    {"kcr_batch_v1_job_template_spec_t", "kcr_batch_v1_job_template_spec", "kcr_batch_v1",
     "kcr/k8s/batch_v1.h"},
    {"kcr_core_v1_object_reference_t", "kcr_core_v1_object_reference", "kcr_core_v1",
     "kcr/k8s/core_v1.h"},
};

/* cwalk: the state of modelling one header's codecs. */
typedef struct cwalk {
  gen_version *v;
  const json_t *structs; /* the header's, in its order */
  const json_t *shared;  /* the earlier headers' types by name */
  const char *file;      /* the header, for messages */
  char *msg;
  size_t size;
} cwalk;

KCR_GEN_PRINTF(5, 6)
static int cfail_at(cwalk *w, const json_t *at, const char *line, const char *col, const char *fmt,
                    ...) {
  va_list ap;
  va_start(ap, fmt);
  gen_vmsg_at(w->msg, w->size, w->file, (int)json_integer_value(json_object_get(at, line)),
              (int)json_integer_value(json_object_get(at, col)), fmt, ap);
  va_end(ap);
  return -1;
}

/* own_struct finds the header's struct named name, or NULL. */
static const json_t *own_struct(const cwalk *w, const char *name) {
  size_t i;
  const json_t *st;
  json_array_foreach(w->structs, i, st) {
    if (strcmp(str_of(st, "name"), name) == 0)
      return st;
  }
  return NULL;
}

/* find_base finds the package's type (own or ext) whose base is base, or NULL. */
static gen_type *find_base(const gen_version *v, const char *base) {
  for (size_t i = 0; i < v->ntypes; i++)
    if (strcmp(v->types[i]->base, base) == 0)
      return v->types[i];
  return NULL;
}

/* ext_of is the type another package codes (made on first use). */
static gen_type *ext_of(gen_version *v, const char *base, const char *ext, const char *header) {
  gen_type *t = find_base(v, base);
  if (t)
    return t;
  t = xcalloc(1, sizeof(*t));
  t->base = xstrdup(base);
  t->ext = xstrdup(ext);
  t->header = xstrdup(header);
  t->path = xstrdup(header);
  add_type(v, t);
  return t;
}

/* cut_t is name less its "_t" (new), or NULL when it does not end so. */
static char *cut_t(const char *name) {
  size_t n = strlen(name);
  if (n < 3 || strcmp(name + n - 2, "_t") != 0)
    return NULL;
  char *b = xstrdup(name);
  b[n - 2] = '\0';
  return b;
}

/*
 * elem_kind classifies the element type name (aliases followed) into sh:
 * a scalar, a string (char, ptr one), or a struct. *ptr is the '*' count left
 * for the member itself. 0, or -1 with the error at the member m.
 */
static int elem_kind(cwalk *w, const json_t *m, const char *type, int *ptr, gen_shape *sh) {
  static const struct {
    const char *name;
    gen_kind kind;
  } scalars[] = {{"int32_t", GEN_INT32},
                 {"int64_t", GEN_INT64},
                 {"bool", GEN_BOOL},
                 {"double", GEN_NUMBER},
                 {"kcr_int_or_string_t", GEN_INTSTR},
                 {"kcr_quantity_t", GEN_QUANTITY},
                 {"kcr_time_t", GEN_TIME}};
  const json_t *st;
  if (strcmp(type, "char") == 0) {
    if (*ptr != 1)
      return cfail_at(w, m, "type_line", "type_col", "a string is char * (%d '*' here)", *ptr);
    sh->kind = GEN_STRING;
    *ptr = 0;
    return 0;
  }
  for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
    if (strcmp(type, scalars[i].name) == 0) {
      sh->kind = scalars[i].kind;
      return 0;
    }
  for (size_t i = 0; i < sizeof(hdr_ext) / sizeof(hdr_ext[0]); i++)
    if (strcmp(type, hdr_ext[i].ctype) == 0) {
      sh->kind = GEN_OBJECT;
      sh->obj = ext_of(w->v, hdr_ext[i].base, hdr_ext[i].ext, hdr_ext[i].header);
      return 0;
    }
  if ((st = own_struct(w, type)) != NULL || (st = json_object_get(w->shared, type)) != NULL) {
    const char *origin = str_of(st, "file");
    char *base = cut_t(type);
    if (!base)
      return cfail_at(w, m, "type_line", "type_col",
                      "%s: kcr-gen codecs names a type's functions after its name less _t: "
                      "name it %s_t",
                      type, type);
    sh->kind = GEN_OBJECT;
    if (origin && !own_struct(w, type)) { /* an earlier header's, coded in its own package */
      char pkg[256], *header;
      if (gen_codecs_prefix(origin, pkg, sizeof(pkg))) {
        free(base);
        return cfail_at(w, m, "type_line", "type_col", "%s: no package name in %s", type, origin);
      }
      header = xprintf("%s_codecs.h", pkg);
      sh->obj = ext_of(w->v, base, pkg, header);
      free(header);
    } else {
      sh->obj = find_base(w->v, base);
    }
    free(base);
    if (!sh->obj)
      return cfail_at(w, m, "type_line", "type_col", "type %s is not coded here", type);
    return 0;
  }
  return cfail_at(w, m, "type_line", "type_col", "%s: kcr-gen codecs cannot code this type", type);
}

/*
 * resolve gives field f the shape member m (its C layout) has: named types
 * followed to what they name, then a scalar, string, struct, list or map of
 * one. What C holds in a way the codecs do not take (a list of pointers, a
 * pointer to a list or a string, a list of lists) is an error at the member.
 */
static int resolve(cwalk *w, const json_t *m, gen_field *f) {
  const char *type = str_of(m, "type"), *cont = str_of(m, "container");
  int ptr = (int)json_integer_value(json_object_get(m, "ptr"));
  bool list = strcmp(cont, "list") == 0, map = strcmp(cont, "map") == 0;
  gen_shape *sh = &f->shape;
  for (int hops = 0;; hops++) {
    const json_t *st = own_struct(w, type);
    const json_t *alias;
    if (!st)
      st = json_object_get(w->shared, type);
    alias = json_object_get(st, "alias");
    if (!alias)
      break;
    const char *acont = str_of(alias, "container");
    int aptr = (int)json_integer_value(json_object_get(alias, "ptr"));
    if (hops > 32)
      return cfail_at(w, m, "type_line", "type_col", "%s: named types nest too deep", type);
    if (strcmp(acont, "one") != 0) {
      if (list || map)
        return cfail_at(w, m, "type_line", "type_col",
                        "%s: a list or map of lists or maps cannot be coded (C has no place "
                        "for the inner one's length): use a struct with a KCR_LIST member",
                        type);
      if (ptr)
        return cfail_at(w, m, "type_line", "type_col",
                        "%s: a pointer to a list or map cannot be coded: drop the '*' (an "
                        "empty one is the unset one)",
                        type);
      list = strcmp(acont, "list") == 0;
      map = strcmp(acont, "map") == 0;
    }
    if (strcmp(str_of(alias, "type"), "char") == 0 && ptr)
      return cfail_at(w, m, "type_line", "type_col",
                      "%s: a pointer to a string cannot be coded: drop the '*' (NULL is the "
                      "unset string)",
                      type);
    ptr += aptr;
    type = str_of(alias, "type");
  }
  if (elem_kind(w, m, type, &ptr, list || map ? (sh->elem = xcalloc(1, sizeof(*sh->elem))) : sh))
    return -1;
  if (ptr > 1)
    return cfail_at(w, m, "type_line", "type_col", "%s: at most one '*' (an optional member)",
                    type);
  if (list || map) {
    if (ptr)
      return cfail_at(w, m, "type_line", "type_col",
                      "%s: a list or map of pointers cannot be coded: hold the elements by "
                      "value",
                      type);
    sh->kind = list ? GEN_LIST : GEN_MAP;
    return 0;
  }
  f->indirect = ptr == 1;
  return 0;
}

/* inline_meta adds TypeMeta's apiVersion and kind, members of member m. */
static void inline_meta(gen_type *t, const json_t *m) {
  static const char *const names[][2] = {{"apiVersion", "api_version"}, {"kind", "kind"}};
  for (int k = 0; k < 2; k++) {
    gen_field *f = &t->fields[t->nfields++];
    f->json_name = xstrdup(names[k][0]);
    f->json_lit = c_literal(names[k][0]);
    f->c_name = xprintf("%s.%s", str_of(m, "c"), names[k][1]);
    f->shape.kind = GEN_STRING;
    f->plain = true;
  }
}

/* codec_type models the header's struct st (not a named type) as a plain type. */
static int codec_type(cwalk *w, const json_t *st) {
  const json_t *fields = json_object_get(st, "fields"), *m;
  char *base = cut_t(str_of(st, "name"));
  gen_type *t;
  size_t i;
  if (!base)
    return cfail_at(w, st, "line", "col",
                    "%s: kcr-gen codecs names a type's functions after its name less _t: name "
                    "it %s_t",
                    str_of(st, "name"), str_of(st, "name"));
  if (json_array_size(fields) == 0) {
    free(base);
    return cfail_at(w, st, "line", "col", "%s has no members to code", str_of(st, "name"));
  }
  t = xcalloc(1, sizeof(*t));
  t->base = base;
  t->plain = true;
  t->path = xstrdup(w->file);
  t->fields = xcalloc(json_array_size(fields) * 2, sizeof(*t->fields));
  add_type(w->v, t);
  json_array_foreach(fields, i, m) {
    gen_field *f;
    if (json_is_true(json_object_get(m, "inline"))) {
      if (json_integer_value(json_object_get(m, "ptr")) != 0)
        return cfail_at(w, m, "type_line", "type_col", "%s is held by value, not through a '*'",
                        str_of(m, "type"));
      inline_meta(t, m);
      continue;
    }
    f = &t->fields[t->nfields++];
    f->json_name = xstrdup(str_of(m, "json"));
    f->json_lit = c_literal(f->json_name);
    f->c_name = xstrdup(str_of(m, "c"));
    f->required = json_is_true(json_object_get(m, "required"));
    f->plain = true;
    if (strlen(f->json_name) > GEN_LITERAL_MAX)
      return cfail_at(w, m, "line", "col", "the JSON name is over %d bytes", GEN_LITERAL_MAX);
    if (resolve(w, m, f))
      return -1;
  }
  return 0;
}

/* kind_crd finds the CRD of group and kind among crds, or NULL. */
static const json_t *kind_crd(const json_t *crds, const char *group, const char *kind) {
  size_t i;
  const json_t *c;
  json_array_foreach(crds, i, c) {
    const json_t *spec = json_object_get(c, "spec");
    if (str_of(spec, "group") && strcmp(str_of(spec, "group"), group) == 0 &&
        str_of(json_object_get(spec, "names"), "kind") &&
        strcmp(str_of(json_object_get(spec, "names"), "kind"), kind) == 0)
      return c;
  }
  return NULL;
}

/*
 * codec_names checks that no two functions of the package share a name (a
 * struct foo_scheme_t beside a kind foo_t would): an error at the struct.
 */
static int codec_names(cwalk *w) {
  static const char *const kind_fns[] = {"_gvk",           "_register",    "_scheme_decode",
                                         "_scheme_encode", "_scheme_free", NULL};
  static const char *const mem_fns[] = {"_mem_calloc", "_mem_strdup", "_mem_free", NULL};
  idset ids = {0};
  int rc = 0;
  for (const char *const *s = mem_fns; *s; s++) {
    char *id = xprintf("%s%s", w->v->prefix, *s);
    id_add(&ids, id);
    free(id);
  }
  for (size_t k = 0; k < w->v->nkinds; k++)
    for (const char *const *s = kind_fns; *s; s++) {
      char *id = xprintf("%s%s", w->v->kinds[k].prefix, *s);
      id_add(&ids, id);
      free(id);
    }
  for (size_t i = 0; i < w->v->ntypes && rc == 0; i++) {
    const gen_type *t = w->v->types[i];
    for (const char *const *s = type_suffixes + 2; *s && rc == 0 && !t->ext; s++) {
      char *id = xprintf("%s%s", t->base, *s);
      if (id_taken(&ids, id)) {
        char *name = xprintf("%s_t", t->base);
        rc = cfail_at(w, own_struct(w, name), "line", "col",
                      "%s: its function %s is also the kind's or the package's: rename the type",
                      name, id);
        free(name);
      }
      free(id);
    }
  }
  id_free(&ids);
  return rc;
}

int gen_codecs_prefix(const char *path, char *out, size_t size) {
  const char *name = strrchr(path, '/');
  size_t n;
  name = name ? name + 1 : path;
  n = strcspn(name, ".");
  if (n > 6 && strncmp(name + n - 6, "_types", 6) == 0)
    n -= 6;
  if (n == 0 || n >= size || (name[0] >= '0' && name[0] <= '9'))
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
          name[i] == '_'))
      return -1;
    out[i] = name[i];
  }
  out[n] = '\0';
  return 0;
}

int gen_codecs_build(const json_t *layout, const json_t *crds, const char *prefix,
                     const char *include, gen_crd *crd, char *msg, size_t size) {
  const json_t *structs = json_object_get(layout, "structs"), *st, *k;
  cwalk w = {NULL, structs, json_object_get(layout, "shared"), str_of(layout, "file"), msg, size};
  gen_version *v;
  size_t i;
  memset(crd, 0, sizeof(*crd));
  crd->source = xstrdup(w.file);
  crd->versions = xcalloc(1, sizeof(gen_version));
  crd->nversions = 1;
  v = w.v = &crd->versions[0];
  v->prefix = xstrdup(prefix);
  v->file = xprintf("%s_codecs", prefix);
  v->user_header = xstrdup(include);
  json_array_foreach(structs, i, st) {
    if (!json_object_get(st, "alias") && codec_type(&w, st))
      return -1;
  }
  v->kinds = xcalloc(json_array_size(json_object_get(layout, "kinds")) + 1, sizeof(*v->kinds));
  json_array_foreach(json_object_get(layout, "kinds"), i, k) {
    gen_kindinfo *ki = &v->kinds[v->nkinds];
    const json_t *c = kind_crd(crds, str_of(k, "group"), str_of(k, "kind"));
    const json_t *spec = json_object_get(c, "spec"), *names = json_object_get(spec, "names");
    char *base = cut_t(str_of(k, "struct"));
    if (!c || !base || !(ki->type = find_base(v, base))) {
      free(base);
      gen_msgf(msg, size, "%s: kind %s: no CRD or no type made for it", w.file, str_of(k, "kind"));
      return -1;
    }
    v->nkinds++;
    ki->prefix = base;
    ki->group = xstrdup(str_of(k, "group"));
    ki->version = xstrdup(str_of(k, "version"));
    ki->kind = xstrdup(str_of(k, "kind"));
    ki->plural = xstrdup(str_of(names, "plural"));
    ki->list_kind = xstrdup(str_of(names, "listKind"));
    ki->namespaced = !str_of(spec, "scope") || strcmp(str_of(spec, "scope"), "Cluster") != 0;
    if (!v->name)
      v->name = xstrdup(ki->version);
  }
  return codec_names(&w);
}
