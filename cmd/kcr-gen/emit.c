/* SPDX-License-Identifier: MIT */
/*
 * emit.c: kcr-gen's model written as C. For one served version it writes a
 * header (the structs, their functions, the scheme hooks) and a source: the
 * runtime (runtime.inc, embedded at build time as kcr_gen_runtime[]) and, for
 * every type, five static element operations (kg_dec_/kg_enc_/kg_clear_/
 * kg_copy_/kg_eq_t_<type>) with the same shape as the runtime's scalar ones, so
 * that a field, a list element and a map value of any kind are handled by the
 * same few templates below. The public functions wrap those.
 *
 * Files are written to a temporary name and renamed, so a failed run leaves the
 * previous output whole (a build never sees half a file).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "kcr/buf.h"
#include "kcr_gen_runtime.h"
#include "kcr_gen_runtime_codecs.h"

/*
 * The pieces of a line that are made of input (a type's base, a property's
 * name, a description) are built in bounded growable buffers, one per role,
 * so that no name is ever cut: a struct's member type, an operation's name,
 * a condition, a comment. EMIT_MAX bounds each; identifiers are at most
 * GEN_NAME_MAX (model.c refuses longer), so only a description can reach it.
 * A buffer that fails (its limit, or memory) marks the output failed, and
 * write_file reports the file as not written.
 */
#define EMIT_MAX ((size_t)64 << 20)

/* the buffers: operation names, element types, member declarations, the
 * condition a field is encoded under, a comment's lead and its whole text */
enum { S_OP, S_TYPE, S_DECL, S_COND, S_LEAD, S_TEXT, S_ITEMS, S_LEN, S_REF, S_COUNT };

typedef struct out {
  FILE *f;
  int indent;
  kcr_buf_t s[S_COUNT];
  bool failed;
} out;

/* piece builds one piece in buffer slot and returns it ("" once failed). */
KCR_GEN_PRINTF(3, 4) static const char *piece(out *o, int slot, const char *fmt, ...) {
  va_list ap;
  int rc;
  kcr_buf_reset(&o->s[slot]);
  va_start(ap, fmt);
  rc = kcr_buf_vappendf(&o->s[slot], fmt, ap);
  va_end(ap);
  if (rc)
    o->failed = true;
  return kcr_buf_cstr(&o->s[slot]);
}

/* put writes one line at the current indentation (fmt has no newline). */
KCR_GEN_PRINTF(2, 3) static void put(out *o, const char *fmt, ...) {
  va_list ap;
  if (fmt[0])
    for (int i = 0; i < o->indent; i++)
      fputs("  ", o->f);
  va_start(ap, fmt);
  vfprintf(o->f, fmt, ap);
  va_end(ap);
  fputc('\n', o->f);
}

static void blank(out *o) {
  fputc('\n', o->f);
}

/* ---- element kinds ---- */

static const char *ctype(out *o, const gen_shape *sh) {
  if (!sh)
    return "json_t *";
  switch (sh->kind) {
  case GEN_STRING:
    return "char *";
  case GEN_INT32:
    return "int32_t ";
  case GEN_INT64:
    return "int64_t ";
  case GEN_NUMBER:
    return "double ";
  case GEN_BOOL:
    return "bool ";
  case GEN_INTSTR:
    return "kcr_int_or_string_t ";
  case GEN_QUANTITY:
    return "kcr_quantity_t ";
  case GEN_TIME:
    return "kcr_time_t ";
  case GEN_OBJECT:
    return piece(o, S_TYPE, "%s_t ", sh->obj->base);
  case GEN_JSON:
  default:
    return "json_t *";
  }
}

/* op is the suffix of an element's operations: kg_dec_<op>. */
static const char *op(out *o, const gen_shape *sh) {
  static const char *const names[] = {"string",   "int32", "int64", "number", "bool", "intstr",
                                      "quantity", "",      "json",  "",       "",     "time"};
  if (sh->kind == GEN_OBJECT)
    return piece(o, S_OP, "t_%s", sh->obj->base);
  return names[sh->kind];
}

static bool by_value(gen_kind k) {
  return k == GEN_INT32 || k == GEN_INT64 || k == GEN_NUMBER || k == GEN_BOOL || k == GEN_INTSTR ||
         k == GEN_QUANTITY || k == GEN_TIME;
}

static bool has_flag(const gen_field *f) {
  return !f->plain && !f->required &&
         (by_value(f->shape.kind) || f->shape.kind == GEN_LIST || f->shape.kind == GEN_MAP);
}

/* indirect tells a member held through a pointer the decoder allocates. */
static bool indirect(const gen_field *f) {
  return f->plain ? f->indirect : f->shape.kind == GEN_OBJECT;
}

/* items is a list's or map's array member: x, or x.items in a type header's KCR_LIST. */
static const char *items(out *o, const gen_field *f) {
  return f->plain ? piece(o, S_ITEMS, "%s.items", f->c_name) : f->c_name;
}

/* len is a list's or map's length member: x_len, or x.len in a type header's KCR_LIST. */
static const char *len(out *o, const gen_field *f) {
  return piece(o, S_LEN, f->plain ? "%s.len" : "%s_len", f->c_name);
}

/* ref is the address of var's member f as its element operations take it. */
static const char *ref(out *o, const gen_field *f, const char *var) {
  return piece(o, S_REF, indirect(f) ? "%s->%s" : "&%s->%s", var, f->c_name);
}

static const char *kind_word(gen_kind k) {
  static const char *const w[] = {"string",  "int32",         "int64",    "number",
                                  "boolean", "int-or-string", "quantity", "object",
                                  "JSON",    "list",          "map",      "date-time"};
  return w[k];
}

/* ---- comments ---- */

/* comment writes text as a wrapped C comment; "*" "/" inside becomes "* /". */
static void comment(out *o, const char *lead, const char *text) {
  size_t width = 96 - (size_t)o->indent * 2, n;
  const char *parts[2] = {lead, text ? text : ""}, *s;
  char prev = '\0';
  kcr_buf_reset(&o->s[S_TEXT]);
  for (int i = 0; i < 2; i++)
    for (const char *r = parts[i]; *r; r++) {
      char c = *r;
      if (c == '\n' || c == '\t' || c == '\r')
        c = ' ';
      if (prev == '*' && c == '/')
        c = '|';
      if (prev == '?' && c == '?')
        c = '.'; /* no trigraph in a comment */
      if (kcr_buf_appendc(&o->s[S_TEXT], c)) {
        o->failed = true;
        return;
      }
      prev = c;
    }
  s = kcr_buf_cstr(&o->s[S_TEXT]);
  while (*s == ' ')
    s++;
  if (strlen(s) + 6 <= width + 3) {
    put(o, "/* %s */", s);
    return;
  }
  put(o, "/*");
  while (*s) {
    while (*s == ' ')
      s++;
    n = strlen(s);
    if (n > width) {
      n = width;
      while (n > 0 && s[n] != ' ')
        n--;
      if (n == 0)
        n = width;
    }
    if (n == 0)
      break;
    put(o, " * %.*s", (int)n, s); /* n <= width */
    s += n;
  }
  put(o, " */");
}

/* ---- the header ---- */

/* upper is src in upper case followed by suffix, in buffer slot. */
static const char *upper(out *o, int slot, const char *src, const char *suffix) {
  kcr_buf_reset(&o->s[slot]);
  for (const char *p = src; *p; p++)
    if (kcr_buf_appendc(&o->s[slot], (char)toupper((unsigned char)*p)))
      o->failed = true;
  if (kcr_buf_appends(&o->s[slot], suffix))
    o->failed = true;
  return kcr_buf_cstr(&o->s[slot]);
}

/* emit_entries writes t's map entry structs; each holds its value by value. */
static void emit_entries(out *o, const gen_type *t) {
  for (size_t i = 0; i < t->nfields; i++) {
    const gen_field *f = &t->fields[i];
    if (f->shape.kind == GEN_MAP) {
      put(o, "/* %s_t: one entry of %s.%s. */", f->shape.entry, t->path, f->json_name);
      put(o, "struct %s {", f->shape.entry);
      put(o, "  char *key;");
      put(o, "  %svalue;", ctype(o, f->shape.elem));
      put(o, "};");
      blank(o);
    }
  }
}

/* cxx_keyword tells whether s is a C++ keyword that is not one in C. */
static bool cxx_keyword(const char *s) {
  static const char *const kw[] = {"alignas",
                                   "alignof",
                                   "and",
                                   "and_eq",
                                   "asm",
                                   "bitand",
                                   "bitor",
                                   "bool",
                                   "catch",
                                   "char8_t",
                                   "char16_t",
                                   "char32_t",
                                   "class",
                                   "compl",
                                   "concept",
                                   "consteval",
                                   "constexpr",
                                   "constinit",
                                   "const_cast",
                                   "co_await",
                                   "co_return",
                                   "co_yield",
                                   "decltype",
                                   "delete",
                                   "dynamic_cast",
                                   "explicit",
                                   "export",
                                   "false",
                                   "friend",
                                   "mutable",
                                   "namespace",
                                   "new",
                                   "noexcept",
                                   "not",
                                   "not_eq",
                                   "nullptr",
                                   "operator",
                                   "or",
                                   "or_eq",
                                   "private",
                                   "protected",
                                   "public",
                                   "reinterpret_cast",
                                   "requires",
                                   "static_assert",
                                   "static_cast",
                                   "template",
                                   "this",
                                   "thread_local",
                                   "throw",
                                   "true",
                                   "try",
                                   "typeid",
                                   "typename",
                                   "using",
                                   "virtual",
                                   "wchar_t",
                                   "xor",
                                   "xor_eq",
                                   NULL};
  for (const char *const *k = kw; *k; k++)
    if (strcmp(s, *k) == 0)
      return true;
  return false;
}

/*
 * member declares one member: type (ending in a space or '*') and name. A
 * name that is a C++ keyword (a Deployment's spec.template, ObjectMeta's
 * namespace) is spelt with a trailing '_' when the header is compiled as C++:
 * the same layout under a name C++ accepts, so C and C++ code share the types.
 */
static void member(out *o, const char *type, const char *name) {
  if (!cxx_keyword(name)) {
    put(o, "%s%s;", type, name);
    return;
  }
  fputs("#ifdef __cplusplus\n", o->f);
  put(o, "%s%s_;", type, name);
  fputs("#else\n", o->f);
  put(o, "%s%s;", type, name);
  fputs("#endif\n", o->f);
}

static void emit_struct(out *o, const gen_type *t) {
  comment(o, "", t->desc ? t->desc : t->path);
  /* the fields keep the schema's order, each beside its has_ flag, over padding */
  put(o, "struct %s { /* NOLINT(clang-analyzer-optin.performance.Padding) */", t->base);
  o->indent++;
  for (size_t i = 0; i < t->nfields; i++) {
    const gen_field *f = &t->fields[i];
    const char *lead =
        piece(o, S_LEAD, "%s (%s%s%s%s%s): ", f->json_name, f->required ? "required " : "",
              f->nullable ? "nullable " : "", kind_word(f->shape.kind), f->shape.elem ? " of " : "",
              f->shape.elem ? kind_word(f->shape.elem->kind) : "");
    comment(o, lead, f->desc ? f->desc : "");
    switch (f->shape.kind) {
    case GEN_LIST:
      member(o, piece(o, S_DECL, "%s*", ctype(o, f->shape.elem)), f->c_name);
      put(o, "size_t %s_len;", f->c_name);
      break;
    case GEN_MAP:
      member(o, piece(o, S_DECL, "%s_t *", f->shape.entry), f->c_name);
      put(o, "size_t %s_len;", f->c_name);
      break;
    case GEN_OBJECT:
      member(o, piece(o, S_DECL, "%s_t *", f->shape.obj->base), f->c_name);
      break;
    default:
      member(o, ctype(o, &f->shape), f->c_name);
      break;
    }
    if (has_flag(f))
      put(o, "bool has_%s;", f->c_name);
    if (f->nullable)
      put(o, "bool %s_null;", f->c_name);
  }
  put(o, "/* kcr_unknown: the members this type does not know (an object, or NULL), written");
  put(o, " * back unchanged by the encoder. */");
  put(o, "json_t *kcr_unknown;");
  o->indent--;
  put(o, "};");
  blank(o);
}

/* include_ext includes each header that declares a type v reaches (once). */
static void include_ext(out *o, const gen_version *v) {
  for (size_t i = 0; i < v->ntypes; i++) {
    const char *h = v->types[i]->ext ? v->types[i]->header : NULL;
    bool seen = false;
    for (size_t j = 0; h && j < i && !seen; j++)
      seen = v->types[j]->ext && v->types[j]->header && strcmp(v->types[j]->header, h) == 0;
    if (h && !seen)
      put(o, "#include \"%s\"", h);
  }
}

/* generated_by writes the first line of each file: its source and its kinds. */
static void generated_by(out *o, const gen_crd *crd, const gen_version *v) {
  fprintf(o->f, "/* Generated by kcr-gen from %s%s", crd->source, v->nkinds ? ":" : "");
  for (size_t i = 0; i < v->nkinds; i++)
    fprintf(o->f, "%s %s %s%s%s", i ? "," : "", v->kinds[i].kind, v->kinds[i].group,
            v->kinds[i].group[0] ? "/" : "", v->kinds[i].version);
  fputs(". Do not edit. */\n", o->f);
}

static void emit_header(out *o, const gen_crd *crd, const gen_version *v) {
  /* codecs are named after their file (the type header has the prefix's name) */
  const char *p = v->prefix, *up, *guard = v->user_header ? v->file : p;
  generated_by(o, crd, v);
  put(o, "#ifndef %s", upper(o, S_TEXT, guard, "_H"));
  put(o, "#define %s", upper(o, S_TEXT, guard, "_H"));
  blank(o);
  put(o, "#include <jansson.h>");
  put(o, "#include <stdbool.h>");
  put(o, "#include <stddef.h>");
  put(o, "#include <stdint.h>");
  blank(o);
  put(o, "#include \"kcr/error.h\"");
  put(o, "#include \"kcr/meta.h\"");
  put(o, "#include \"kcr/scheme.h\"");
  put(o, "#include \"kcr/types.h\"");
  if (v->user_header)
    put(o, "#include \"kcr/time.h\"");
  include_ext(o, v);
  if (v->user_header) {
    blank(o);
    put(o, "#include \"%s\"", v->user_header);
  }
  blank(o);
  put(o, "#ifdef __cplusplus");
  put(o, "extern \"C\" {");
  put(o, "#endif");
  blank(o);
  for (size_t i = 0; i < v->nkinds; i++) {
    const gen_kindinfo *k = &v->kinds[i];
    up = upper(o, S_TEXT, k->prefix, "");
    put(o, "#define %s_GROUP \"%s\"", up, k->group);
    put(o, "#define %s_VERSION \"%s\"", up, k->version);
    put(o, "#define %s_KIND \"%s\"", up, k->kind);
    put(o, "#define %s_RESOURCE \"%s\"", up, k->plural);
    blank(o);
  }
  for (size_t i = 0; i < v->ntypes; i++) {
    const gen_type *t = v->types[i];
    if (t->ext || t->plain)
      continue;
    put(o, "typedef struct %s %s_t;", t->base, t->base);
    for (size_t j = 0; j < t->nfields; j++)
      if (t->fields[j].shape.kind == GEN_MAP)
        put(o, "typedef struct %s %s_t;", t->fields[j].shape.entry, t->fields[j].shape.entry);
  }
  blank(o);
  /*
   * A struct holds other structs and map entries through pointers only, so the
   * structs may come in any order; a map entry holds its value by value, so the
   * entries come after every struct (types may reach each other through $ref).
   */
  for (size_t i = 0; i < v->ntypes; i++)
    if (!v->types[i]->ext && !v->types[i]->plain)
      emit_struct(o, v->types[i]);
  for (size_t i = 0; i < v->ntypes; i++)
    if (!v->types[i]->plain)
      emit_entries(o, v->types[i]);
  put(o, "/*");
  if (v->user_header) { /* the header's own structs: presence is their layout */
    put(o, " * For each struct T_t of %s, in this order:", v->user_header);
    put(o, " *   T_create  a new zeroed T (*out; release with T_free). 0 or KCR_ENOMEM.");
    put(o, " *   T_decode  a new T from json (borrowed). KCR_EPARSE names the field and the");
    put(o, " *             expected type; null is absent; members T does not declare are");
    put(o, " *             dropped, as Go's decoder drops them.");
    put(o, " *   T_encode  a new json_t from v (borrowed): a member through a pointer when");
    put(o, " *             set, an optional one held by value unless zero (a struct: unless");
    put(o, " *             {}), a required one always. KCR_EINVAL when a required pointer or");
    put(o, " *             string is NULL.");
    put(o, " *   T_copy    a new deep copy of v.");
    put(o, " *   T_equal   whether a and b hold the same values (maps regardless of order).");
    put(o, " *             NULL equals only NULL.");
  } else {
    put(o, " * For each type T above (T_t), in this order:");
    put(o, " *   T_create  a new zeroed T (*out; release with T_free). 0 or KCR_ENOMEM.");
    put(o, " *   T_decode  a new T from json (borrowed). KCR_EPARSE names the field and the");
    put(o, " *             expected type (\"spec.replicas: expected an integer, got a string\");");
    put(o, " *             members T does not know are kept in kcr_unknown, at every level.");
    put(o, " *   T_encode  a new json_t from v (borrowed), unknown members included. KCR_EINVAL");
    put(o, " *             when a required field is unset.");
    put(o, " *   T_copy    a new deep copy of v.");
    put(o, " *   T_equal   whether a and b hold the same values (unknown members compared as");
    put(o, " *             JSON, maps regardless of order). NULL equals only NULL.");
  }
  put(o, " *   T_free    releases v and everything it owns. NULL is ignored.");
  put(o, " *   T_clear   releases what v owns and zeroes v, which stays: for a T held by value");
  put(o, " *             (a list's element). NULL is ignored.");
  put(o, " * Every string, array and struct a T owns is allocated with jansson's allocator");
  put(o, " * (%s_mem_calloc, %s_mem_strdup); set fields with those. On failure *out is", p, p);
  put(o, " * NULL and err (optional) says why; nothing aborts. Any thread, one value at a time.");
  put(o, " */");
  for (size_t i = 0; i < v->ntypes; i++) {
    const char *b = v->types[i]->base;
    if (v->types[i]->ext)
      continue;
    put(o, "KCR_EXTERN int %s_create(%s_t **out, kcr_error_t *err);", b, b);
    put(o, "KCR_EXTERN int %s_decode(const json_t *json, %s_t **out, kcr_error_t *err);", b, b);
    put(o, "KCR_EXTERN int %s_encode(const %s_t *v, json_t **out, kcr_error_t *err);", b, b);
    put(o, "KCR_EXTERN int %s_copy(const %s_t *v, %s_t **out, kcr_error_t *err);", b, b, b);
    put(o, "KCR_EXTERN bool %s_equal(const %s_t *a, const %s_t *b);", b, b, b);
    put(o, "KCR_EXTERN void %s_free(%s_t *v);", b, b);
    put(o, "KCR_EXTERN void %s_clear(%s_t *v);", b, b);
    blank(o);
  }
  put(o, "/* %s_mem_calloc, _mem_strdup, _mem_free: the allocator the types use (new; NULL", p);
  put(o, " * when out of memory). */");
  put(o, "KCR_EXTERN void *%s_mem_calloc(size_t n, size_t size);", p);
  put(o, "KCR_EXTERN char *%s_mem_strdup(const char *s);", p);
  put(o, "KCR_EXTERN void %s_mem_free(void *ptr);", p);
  blank(o);
  for (size_t i = 0; i < v->nkinds; i++) {
    const gen_kindinfo *k = &v->kinds[i];
    const char *kp = k->prefix;
    put(o, "/* %s_gvk returns %s's group, version and kind (static strings). */", kp, k->kind);
    put(o, "KCR_EXTERN kcr_gvk %s_gvk(void);", kp);
    blank(o);
    put(o, "/*");
    put(o, " * %s_scheme_decode, _scheme_encode, _scheme_free: the kind's typed codec", kp);
    put(o, " * (kcr_decode_fn, kcr_encode_fn, kcr_free_typed_fn of kcr/scheme.h) over %s_t.", kp);
    put(o, " */");
    put(o,
        "KCR_EXTERN int %s_scheme_decode(const json_t *obj, void **out, kcr_error_t *err, void "
        "*data);",
        kp);
    put(o,
        "KCR_EXTERN int %s_scheme_encode(const void *typed, json_t **out, kcr_error_t *err, void "
        "*data);",
        kp);
    put(o, "KCR_EXTERN void %s_scheme_free(void *typed, void *data);", kp);
    blank(o);
    put(o, "/*");
    put(o, " * %s_register adds %s %s%s%s to s with the codec above,", kp, k->kind, k->group,
        k->group[0] ? "/" : "", k->version);
    put(o, " * so kcr_typed_get/list/create/update/patch work on %s_t. 0 or", kp);
    put(o, " * kcr_scheme_register's error.");
    put(o, " */");
    put(o, "KCR_EXTERN int %s_register(kcr_scheme_t *s, kcr_error_t *err);", kp);
    blank(o);
  }
  put(o, "#ifdef __cplusplus");
  put(o, "}");
  put(o, "#endif");
  blank(o);
  put(o, "#endif /* %s */", upper(o, S_TEXT, guard, "_H"));
}

/* ---- the source: per-field templates ---- */

/* lv is the field's lvalue ("v->spec"); the json member is m. */
static void emit_decode_field(out *o, const gen_field *f) {
  const gen_shape *sh = &f->shape;
  const char *c = f->c_name, *it = items(o, f);
  if (indirect(f)) {
    put(o, "if (!(v->%s = kg_calloc(1, sizeof(*v->%s))))", c, c);
    put(o, "  rc = kg_nomem(p, err);");
    put(o, "else");
    put(o, "  rc = kg_dec_%s(m, v->%s, p, err);", op(o, sh), c);
    return;
  }
  switch (sh->kind) {
  case GEN_LIST:
    put(o, "if (!json_is_array(m)) {");
    put(o, "  rc = kg_expected(p, \"an array\", m, err);");
    put(o, "} else {");
    put(o, "  size_t n = json_array_size(m);");
    put(o, "  rc = 0;");
    put(o, "  if (n && !(v->%s = kg_calloc(n, sizeof(*v->%s))))", it, it);
    put(o, "    rc = kg_nomem(p, err);");
    put(o, "  for (size_t i = 0; rc == 0 && i < n; i++) {");
    put(o, "    size_t at2 = kg_push_index(p, i);");
    put(o, "    v->%s = i + 1;", len(o, f));
    put(o, "    rc = kg_dec_%s(json_array_get(m, i), &v->%s[i], p, err);", op(o, sh->elem), it);
    put(o, "    kg_pop(p, at2);");
    put(o, "  }");
    put(o, "}");
    break;
  case GEN_MAP:
    put(o, "if (!json_is_object(m)) {");
    put(o, "  rc = kg_expected(p, \"an object\", m, err);");
    put(o, "} else {");
    put(o, "  size_t n = json_object_size(m), i = 0, klen;");
    put(o, "  const char *k;");
    put(o, "  json_t *m2;");
    put(o, "  rc = 0;");
    put(o, "  if (n && !(v->%s = kg_calloc(n, sizeof(*v->%s))))", it, it);
    put(o, "    rc = kg_nomem(p, err);");
    put(o, "  json_object_keylen_foreach((json_t *)m, k, klen, m2) {");
    put(o, "    size_t at2;");
    put(o, "    if (rc)");
    put(o, "      break;");
    put(o, "    at2 = kg_push_key(p, k);");
    put(o, "    v->%s = i + 1;", len(o, f));
    put(o, "    if (klen != strlen(k))");
    put(o, "      rc = kcr_error_set(err, KCR_EPARSE, \"%%s: a key holds a NUL character\", "
           "kg_where(p));");
    put(o, "    else if (!(v->%s[i].key = kg_strdup(k)))", it);
    put(o, "      rc = kg_nomem(p, err);");
    put(o, "    else");
    put(o, "      rc = kg_dec_%s(m2, &v->%s[i].value, p, err);", op(o, sh->elem), it);
    put(o, "    kg_pop(p, at2);");
    put(o, "    i++;");
    put(o, "  }");
    put(o, "}");
    break;
  default:
    put(o, "rc = kg_dec_%s(m, &v->%s, p, err);", op(o, sh), c);
    break;
  }
  if (has_flag(f))
    put(o, "v->has_%s = rc == 0;", c);
}

/* present is the condition under which the field is written. */
static const char *present(out *o, const gen_field *f) {
  const char *c = f->c_name;
  if (has_flag(f))
    return piece(o, S_COND, "v->has_%s", c);
  if (f->plain && !indirect(f) && f->shape.kind != GEN_STRING) {
    /* a type header's member held by value: always there when required;
     * else left out when zero (a struct: when it encodes to {}, below) */
    if (f->required || f->shape.kind == GEN_OBJECT)
      return "1";
    if (f->shape.kind == GEN_LIST || f->shape.kind == GEN_MAP)
      return piece(o, S_COND, "v->%s", len(o, f));
    return piece(o, S_COND, "!kg_zero_%s(&v->%s)", op(o, &f->shape), c);
  }
  if (f->shape.kind == GEN_STRING || indirect(f) || f->shape.kind == GEN_JSON)
    return piece(o, S_COND, "v->%s", c);
  return "1";
}

static void emit_encode_field(out *o, const gen_field *f) {
  const gen_shape *sh = &f->shape;
  const char *c = f->c_name, *it = items(o, f);
  put(o, "at = kg_push(p, \"%s\");", f->json_lit);
  if (f->nullable) {
    put(o, "if (v->%s_null) {", c);
    put(o, "  rc = kg_set(o, \"%s\", json_null(), p, err);", f->json_lit);
    put(o, "} else");
  }
  put(o, "if (%s) {", present(o, f));
  o->indent++;
  put(o, "json_t *m = NULL;");
  switch (indirect(f) ? GEN_OBJECT : sh->kind) {
  case GEN_LIST:
    put(o, "rc = (m = json_array()) ? 0 : kg_nomem(p, err);");
    put(o, "for (size_t i = 0; rc == 0 && i < v->%s; i++) {", len(o, f));
    put(o, "  size_t at2 = kg_push_index(p, i);");
    put(o, "  json_t *e = NULL;");
    put(o, "  rc = kg_enc_%s(&v->%s[i], &e, p, err);", op(o, sh->elem), items(o, f));
    put(o, "  if (rc == 0 && json_array_append_new(m, e))");
    put(o, "    rc = kg_nomem(p, err);");
    put(o, "  kg_pop(p, at2);");
    put(o, "}");
    break;
  case GEN_MAP:
    put(o, "rc = (m = json_object()) ? 0 : kg_nomem(p, err);");
    put(o, "for (size_t i = 0; rc == 0 && i < v->%s; i++) {", len(o, f));
    put(o, "  size_t at2 = kg_push_key(p, v->%s[i].key ? v->%s[i].key : \"(NULL)\");", it, it);
    put(o, "  json_t *e = NULL;");
    put(o, "  if (!v->%s[i].key || !kg_utf8_ok(v->%s[i].key))", it, it);
    put(o, "    rc = kcr_error_set(err, KCR_EINVAL, \"%%s: the key is NULL or not UTF-8\", "
           "kg_where(p));");
    put(o, "  else");
    put(o, "    rc = kg_enc_%s(&v->%s[i].value, &e, p, err);", op(o, sh->elem), it);
    put(o, "  if (rc == 0 && json_object_set_new_nocheck(m, v->%s[i].key, e))", it);
    put(o, "    rc = kg_nomem(p, err);");
    put(o, "  kg_pop(p, at2);");
    put(o, "}");
    break;
  default: /* a struct through its pointer, anything else by its address */
    put(o, "rc = kg_enc_%s(%s, &m, p, err);", op(o, sh), ref(o, f, "v"));
    break;
  }
  if (f->plain && !f->required && !indirect(f) && sh->kind == GEN_OBJECT) {
    put(o, "if (rc == 0 && json_object_size(m) == 0)");
    put(o, "  json_decref(m); /* held by value, optional and empty: left out */");
    put(o, "else if (rc == 0)");
  } else {
    put(o, "if (rc == 0)");
  }
  put(o, "  rc = kg_set(o, \"%s\", m, p, err);", f->json_lit);
  put(o, "else");
  put(o, "  json_decref(m);");
  o->indent--;
  if (f->required) {
    put(o, "} else {");
    put(o, "  rc = kg_unset(p, err);");
  }
  put(o, "}");
  put(o, "kg_pop(p, at);");
  put(o, "if (rc)");
  put(o, "  goto fail;");
}

static void emit_clear_field(out *o, const gen_field *f) {
  const gen_shape *sh = &f->shape;
  const char *c = f->c_name, *it = items(o, f);
  if (indirect(f)) {
    put(o, "if (v->%s) {", c);
    put(o, "  kg_clear_%s(v->%s);", op(o, sh), c);
    put(o, "  kg_free(v->%s);", c);
    put(o, "}");
    return;
  }
  switch (sh->kind) {
  case GEN_LIST:
    put(o, "for (size_t i = 0; i < v->%s; i++)", len(o, f));
    put(o, "  kg_clear_%s(&v->%s[i]);", op(o, sh->elem), it);
    put(o, "kg_free(v->%s);", it);
    break;
  case GEN_MAP:
    put(o, "for (size_t i = 0; i < v->%s; i++) {", len(o, f));
    put(o, "  kg_free(v->%s[i].key);", it);
    put(o, "  kg_clear_%s(&v->%s[i].value);", op(o, sh->elem), it);
    put(o, "}");
    put(o, "kg_free(v->%s);", it);
    break;
  default:
    if (!by_value(sh->kind) || sh->kind == GEN_INTSTR || sh->kind == GEN_QUANTITY)
      put(o, "kg_clear_%s(&v->%s);", op(o, sh), c);
    break;
  }
}

static void emit_copy_field(out *o, const gen_field *f) {
  const gen_shape *sh = &f->shape;
  const char *c = f->c_name, *it = items(o, f);
  if (has_flag(f))
    put(o, "d->has_%s = s->has_%s;", c, c);
  if (f->nullable)
    put(o, "d->%s_null = s->%s_null;", c, c);
  if (indirect(f)) {
    put(o, "if (s->%s && !(d->%s = kg_calloc(1, sizeof(*d->%s))))", c, c, c);
    put(o, "  return KCR_ENOMEM;");
    put(o, "if (s->%s && kg_copy_%s(s->%s, d->%s))", c, op(o, sh), c, c);
    put(o, "  return KCR_ENOMEM;");
    return;
  }
  switch (sh->kind) {
  case GEN_LIST:
  case GEN_MAP:
    /* the length read once: the analyzer cannot tell s from d */
    put(o, "const size_t %s_n = s->%s;", c, len(o, f));
    put(o, "if (%s_n && !(d->%s = kg_calloc(%s_n, sizeof(*d->%s))))", c, it, c, it);
    put(o, "  return KCR_ENOMEM;");
    put(o, "for (size_t i = 0; i < %s_n; i++) {", c);
    put(o, "  d->%s = i + 1;", len(o, f));
    if (sh->kind == GEN_LIST) {
      put(o, "  if (kg_copy_%s(&s->%s[i], &d->%s[i]))", op(o, sh->elem), it, it);
    } else {
      put(o, "  if (kg_copy_string(&s->%s[i].key, &d->%s[i].key) ||", it, it);
      put(o, "      kg_copy_%s(&s->%s[i].value, &d->%s[i].value))", op(o, sh->elem), it, it);
    }
    put(o, "    return KCR_ENOMEM;");
    put(o, "}");
    break;
  default:
    put(o, "if (kg_copy_%s(&s->%s, &d->%s))", op(o, sh), c, c);
    put(o, "  return KCR_ENOMEM;");
    break;
  }
}

static void emit_equal_field(out *o, const gen_field *f) {
  const gen_shape *sh = &f->shape;
  const char *c = f->c_name, *it = items(o, f);
  if (f->nullable) {
    put(o, "if (a->%s_null != b->%s_null)", c, c);
    put(o, "  return false;");
  }
  if (has_flag(f)) {
    put(o, "if (a->has_%s != b->has_%s)", c, c);
    put(o, "  return false;");
  }
  if (indirect(f)) {
    put(o, "if (!a->%s != !b->%s || (a->%s && !kg_eq_%s(a->%s, b->%s)))", c, c, c, op(o, sh), c, c);
    put(o, "  return false;");
    return;
  }
  switch (sh->kind) {
  case GEN_LIST:
    put(o, "if (a->%s != b->%s)", len(o, f), len(o, f));
    put(o, "  return false;");
    put(o, "for (size_t i = 0; i < a->%s; i++)", len(o, f));
    put(o, "  if (!kg_eq_%s(&a->%s[i], &b->%s[i]))", op(o, sh->elem), it, it);
    put(o, "    return false;");
    break;
  case GEN_MAP:
    put(o, "if (a->%s != b->%s)", len(o, f), len(o, f));
    put(o, "  return false;");
    put(o, "for (size_t i = 0; i < a->%s; i++) {", len(o, f));
    put(o, "  size_t j = 0;");
    put(o, "  while (j < b->%s && !kg_eq_string(&a->%s[i].key, &b->%s[j].key))", len(o, f), it, it);
    put(o, "    j++;");
    put(o, "  if (j == b->%s || !kg_eq_%s(&a->%s[i].value, &b->%s[j].value))", len(o, f),
        op(o, sh->elem), it, it);
    put(o, "    return false;");
    put(o, "}");
    break;
  default:
    if (has_flag(f))
      put(o, "if (a->has_%s && !kg_eq_%s(&a->%s, &b->%s))", c, op(o, sh), c, c);
    else
      put(o, "if (!kg_eq_%s(&a->%s, &b->%s))", op(o, sh), c, c);
    put(o, "  return false;");
    break;
  }
}

/* ---- the source: per-type functions ---- */

static void emit_type_ops(out *o, const gen_type *t) {
  const char *b = t->base;
  size_t nreq = 0;
  put(o, "/* ---- %s_t: %s ---- */", b, t->path);
  blank(o);
  /* decode */
  put(o, "static int kg_dec_t_%s(const json_t *j, %s_t *v, kg_path *p, kcr_error_t *err) {", b, b);
  o->indent++;
  put(o, "const char *key;");
  put(o, "size_t key_len;");
  put(o, "json_t *m;");
  for (size_t i = 0; i < t->nfields; i++)
    if (t->fields[i].required) {
      put(o, "bool seen_%s = false;", t->fields[i].c_name);
      nreq++;
    }
  put(o, "if (!json_is_object(j))");
  put(o, "  return kg_expected(p, \"an object\", j, err);");
  put(o, "json_object_keylen_foreach((json_t *)j, key, key_len, m) {");
  o->indent++;
  put(o, "size_t at = kg_push(p, key);");
  put(o, "int rc = 0;");
  for (size_t i = 0; i < t->nfields; i++) {
    const gen_field *f = &t->fields[i];
    put(o, "%sif (kg_key_is(key, key_len, \"%s\", %zu)) {", i ? "} else " : "", f->json_lit,
        strlen(f->json_name));
    o->indent++;
    if (t->plain) {
      /* a type header's struct keeps no null: a null member is an absent one */
      put(o, "if (!json_is_null(m)) {");
      o->indent++;
    } else if (f->shape.kind != GEN_JSON) {
      put(o, "if (json_is_null(m)) {");
      if (f->nullable)
        put(o, "  v->%s_null = true;", f->c_name);
      else /* servers write null for unset fields that are not nullable (a zero
            * metav1.Time): kept as is, so the object round-trips; a value set
            * later replaces it (fields are encoded after the kept members) */
        put(o, "  rc = kg_keep(&v->kcr_unknown, key, key_len, m, p, err);");
      if (f->required && f->nullable)
        put(o, "  seen_%s = true;", f->c_name);
      put(o, "} else {");
      o->indent++;
    }
    emit_decode_field(o, f);
    if (f->required)
      put(o, "seen_%s = rc == 0;", f->c_name);
    if (f->shape.kind != GEN_JSON || t->plain) {
      o->indent--;
      put(o, "}");
    }
    o->indent--;
  }
  if (t->plain) { /* members the type does not know are dropped, as Go's decoder drops them */
    put(o, "}");
  } else {
    put(o, "%s{", t->nfields ? "} else " : "");
    put(o, "  rc = kg_keep(&v->kcr_unknown, key, key_len, m, p, err);");
    put(o, "}");
  }
  put(o, "kg_pop(p, at);");
  put(o, "if (rc)");
  put(o, "  return rc;");
  o->indent--;
  put(o, "}");
  for (size_t i = 0; i < t->nfields && nreq; i++)
    if (t->fields[i].required) {
      put(o, "if (!seen_%s)", t->fields[i].c_name);
      put(o, "  return kg_missing(p, \"%s\", err);", t->fields[i].json_lit);
    }
  put(o, "return 0;");
  o->indent--;
  put(o, "}");
  blank(o);
  /* encode */
  put(o, "static int kg_enc_t_%s(const %s_t *v, json_t **out, kg_path *p, kcr_error_t *err) {", b,
      b);
  o->indent++;
  put(o, "json_t *o = NULL;");
  put(o, "size_t at;");
  put(o, "int rc;");
  put(o, "*out = NULL;");
  put(o, "if ((rc = kg_start(%s, &o, p, err)) != 0)", t->plain ? "NULL" : "v->kcr_unknown");
  put(o, "  return rc;");
  put(o, "(void)at;");
  for (size_t i = 0; i < t->nfields; i++)
    emit_encode_field(o, &t->fields[i]);
  put(o, "*out = o;");
  put(o, "return 0;");
  if (t->nfields) {
    put(o, "fail:");
    put(o, "json_decref(o);");
    put(o, "return rc;");
  }
  o->indent--;
  put(o, "}");
  blank(o);
  /* clear */
  put(o, "static void kg_clear_t_%s(%s_t *v) {", b, b);
  o->indent++;
  for (size_t i = 0; i < t->nfields; i++)
    emit_clear_field(o, &t->fields[i]);
  if (!t->plain)
    put(o, "json_decref(v->kcr_unknown);");
  put(o, "memset(v, 0, sizeof(*v));");
  o->indent--;
  put(o, "}");
  blank(o);
  /* copy: d is zeroed; on failure the caller clears it */
  put(o, "static int kg_copy_t_%s(const %s_t *s, %s_t *d) {", b, b, b);
  o->indent++;
  for (size_t i = 0; i < t->nfields; i++)
    emit_copy_field(o, &t->fields[i]);
  put(o, "%s", t->plain ? "return 0;" : "return kg_copy_json(&s->kcr_unknown, &d->kcr_unknown);");
  o->indent--;
  put(o, "}");
  blank(o);
  /* equal */
  put(o, "static bool kg_eq_t_%s(const %s_t *a, const %s_t *b) {", b, b, b);
  o->indent++;
  for (size_t i = 0; i < t->nfields; i++)
    emit_equal_field(o, &t->fields[i]);
  put(o, "%s", t->plain ? "return true;" : "return kg_eq_unknown(a->kcr_unknown, b->kcr_unknown);");
  o->indent--;
  put(o, "}");
  blank(o);
}

static void emit_public(out *o, const gen_type *t) {
  const char *b = t->base;
  put(o, "int %s_create(%s_t **out, kcr_error_t *err) {", b, b);
  /* KCR_ENOMEM itself, not kcr_error_set's answer, which the analyzer cannot see */
  put(o, "  if (!(*out = kg_calloc(1, sizeof(**out)))) {");
  put(o, "    kcr_error_set(err, KCR_ENOMEM, \"%s: out of memory\");", b);
  put(o, "    return KCR_ENOMEM;");
  put(o, "  }");
  put(o, "  return 0;");
  put(o, "}");
  blank(o);
  put(o, "int %s_decode(const json_t *json, %s_t **out, kcr_error_t *err) {", b, b);
  put(o, "  kg_path p = {{0}, 0};");
  put(o, "  %s_t *v;", b);
  put(o, "  int rc;");
  put(o, "  *out = NULL;");
  put(o, "  if ((rc = %s_create(&v, err)) != 0)", b);
  put(o, "    return rc;");
  put(o, "  if ((rc = kg_dec_t_%s(json, v, &p, err)) != 0) {", b);
  put(o, "    %s_free(v);", b);
  put(o, "    return rc;");
  put(o, "  }");
  put(o, "  *out = v;");
  put(o, "  return 0;");
  put(o, "}");
  blank(o);
  put(o, "int %s_encode(const %s_t *v, json_t **out, kcr_error_t *err) {", b, b);
  put(o, "  kg_path p = {{0}, 0};");
  put(o, "  return kg_enc_t_%s(v, out, &p, err);", b);
  put(o, "}");
  blank(o);
  put(o, "int %s_copy(const %s_t *v, %s_t **out, kcr_error_t *err) {", b, b, b);
  put(o, "  int rc;");
  put(o, "  if ((rc = %s_create(out, err)) != 0)", b);
  put(o, "    return rc;");
  put(o, "  if (kg_copy_t_%s(v, *out)) {", b);
  put(o, "    %s_free(*out);", b);
  put(o, "    *out = NULL;");
  put(o, "    return kcr_error_set(err, KCR_ENOMEM, \"%s: out of memory\");", b);
  put(o, "  }");
  put(o, "  return 0;");
  put(o, "}");
  blank(o);
  put(o, "bool %s_equal(const %s_t *a, const %s_t *b) {", b, b, b);
  put(o, "  if (!a || !b)");
  put(o, "    return a == b;");
  put(o, "  return a == b || kg_eq_t_%s(a, b);", b);
  put(o, "}");
  blank(o);
  put(o, "void %s_free(%s_t *v) {", b, b);
  put(o, "  if (!v)");
  put(o, "    return;");
  put(o, "  kg_clear_t_%s(v);", b);
  put(o, "  kg_free(v);");
  put(o, "}");
  blank(o);
  put(o, "void %s_clear(%s_t *v) {", b, b);
  put(o, "  if (v)");
  put(o, "    kg_clear_t_%s(v);", b);
  put(o, "}");
  blank(o);
}

/*
 * emit_ext_ops writes the element operations of a libkcr type over its public
 * functions: decode and copy make a new value and move it into place, errors
 * get the field's path in front.
 */
static void emit_ext_ops(out *o, const gen_type *t) {
  const char *b = t->base, *m = t->ext;
  put(o, "/* ---- %s_t: %s's, through its public functions ---- */", b, t->header);
  blank(o);
  put(o, "static int kg_dec_t_%s(const json_t *j, %s_t *v, kg_path *p, kcr_error_t *err) {", b, b);
  put(o, "  %s_t *t = NULL;", b);
  put(o, "  bool had = err && err->code;");
  put(o, "  int rc = %s_decode(j, &t, err);", b);
  put(o, "  if (rc) {");
  put(o, "    if (!had)");
  put(o, "      kg_rebase(p, err);");
  put(o, "    return rc;");
  put(o, "  }");
  put(o, "  *v = *t;");
  put(o, "  %s_mem_free(t);", m);
  put(o, "  return 0;");
  put(o, "}");
  blank(o);
  put(o, "static int kg_enc_t_%s(const %s_t *v, json_t **out, kg_path *p, kcr_error_t *err) {", b,
      b);
  put(o, "  bool had = err && err->code;");
  put(o, "  int rc = %s_encode(v, out, err);", b);
  put(o, "  if (rc && !had)");
  put(o, "    kg_rebase(p, err);");
  put(o, "  return rc;");
  put(o, "}");
  blank(o);
  put(o, "static void kg_clear_t_%s(%s_t *v) {", b, b);
  put(o, "  %s_clear(v);", b);
  put(o, "}");
  blank(o);
  put(o, "static int kg_copy_t_%s(const %s_t *s, %s_t *d) {", b, b, b);
  put(o, "  %s_t *t = NULL;", b);
  put(o, "  if (%s_copy(s, &t, NULL))", b);
  put(o, "    return KCR_ENOMEM;");
  put(o, "  *d = *t;");
  put(o, "  %s_mem_free(t);", m);
  put(o, "  return 0;");
  put(o, "}");
  blank(o);
  put(o, "static bool kg_eq_t_%s(const %s_t *a, const %s_t *b) {", b, b, b);
  put(o, "  return %s_equal(a, b);", b);
  put(o, "}");
  blank(o);
}

static void emit_source(out *o, const gen_crd *crd, const gen_version *v, const char *header) {
  const char *p = v->prefix;
  generated_by(o, crd, v);
  put(o, "#include \"%s\"", header);
  blank(o);
  fwrite(kcr_gen_runtime, 1, sizeof(kcr_gen_runtime) - 1, o->f);
  blank(o);
  if (v->user_header) {
    fwrite(kcr_gen_runtime_codecs, 1, sizeof(kcr_gen_runtime_codecs) - 1, o->f);
    blank(o);
  }
  for (size_t i = 0; i < v->ntypes; i++) {
    const char *b = v->types[i]->base;
    put(o, "static int kg_dec_t_%s(const json_t *j, %s_t *v, kg_path *p, kcr_error_t *err);", b, b);
    put(o, "static int kg_enc_t_%s(const %s_t *v, json_t **out, kg_path *p, kcr_error_t *err);", b,
        b);
    put(o, "static void kg_clear_t_%s(%s_t *v);", b, b);
    put(o, "static int kg_copy_t_%s(const %s_t *s, %s_t *d);", b, b, b);
    put(o, "static bool kg_eq_t_%s(const %s_t *a, const %s_t *b);", b, b, b);
  }
  blank(o);
  for (size_t i = 0; i < v->ntypes; i++) {
    if (v->types[i]->ext)
      emit_ext_ops(o, v->types[i]);
    else
      emit_type_ops(o, v->types[i]);
  }
  for (size_t i = 0; i < v->ntypes; i++)
    if (!v->types[i]->ext)
      emit_public(o, v->types[i]);
  put(o, "void *%s_mem_calloc(size_t n, size_t size) {", p);
  put(o, "  return kg_calloc(n, size);");
  put(o, "}");
  blank(o);
  put(o, "char *%s_mem_strdup(const char *s) {", p);
  put(o, "  return s ? kg_strdup(s) : NULL;");
  put(o, "}");
  blank(o);
  put(o, "void %s_mem_free(void *ptr) {", p);
  put(o, "  kg_free(ptr);");
  put(o, "}");
  blank(o);
  for (size_t i = 0; i < v->nkinds; i++) {
    const gen_kindinfo *k = &v->kinds[i];
    const char *kp = k->prefix;
    put(o, "kcr_gvk %s_gvk(void) {", kp);
    put(o, "  kcr_gvk g = {\"%s\", \"%s\", \"%s\"};", k->group, k->version, k->kind);
    put(o, "  return g;");
    put(o, "}");
    blank(o);
    put(o, "int %s_scheme_decode(const json_t *obj, void **out, kcr_error_t *err, void *data) {",
        kp);
    put(o, "  %s_t *v = NULL;", kp);
    put(o, "  int rc = %s_decode(obj, &v, err);", kp);
    put(o, "  (void)data;");
    put(o, "  *out = v;");
    put(o, "  return rc;");
    put(o, "}");
    blank(o);
    put(o, "int %s_scheme_encode(const void *typed, json_t **out, kcr_error_t *err, void *data) {",
        kp);
    put(o, "  (void)data;");
    put(o, "  return %s_encode(typed, out, err);", kp);
    put(o, "}");
    blank(o);
    put(o, "void %s_scheme_free(void *typed, void *data) {", kp);
    put(o, "  (void)data;");
    put(o, "  %s_free(typed);", kp);
    put(o, "}");
    blank(o);
    put(o, "int %s_register(kcr_scheme_t *s, kcr_error_t *err) {", kp);
    put(o, "  kcr_kind_info k;");
    put(o, "  memset(&k, 0, sizeof(k));");
    put(o, "  k.group = \"%s\";", k->group);
    put(o, "  k.version = \"%s\";", k->version);
    put(o, "  k.kind = \"%s\";", k->kind);
    put(o, "  k.list_kind = \"%s\";", k->list_kind);
    put(o, "  k.decode = %s_scheme_decode;", kp);
    put(o, "  k.encode = %s_scheme_encode;", kp);
    put(o, "  k.free_typed = %s_scheme_free;", kp);
    put(o, "  return kcr_scheme_register(s, &k, err);");
    put(o, "}");
    blank(o);
  }
}

/* ---- files ---- */

static int write_file(const char *dir, const gen_crd *crd, const gen_version *v, bool header,
                      char *msg, size_t size) {
  const char *base = v->file ? v->file : v->prefix;
  kcr_buf_t path, tmp, hname;
  out o;
  int rc = -1;
  memset(&o, 0, sizeof(o));
  for (int i = 0; i < S_COUNT; i++)
    kcr_buf_init(&o.s[i], EMIT_MAX);
  kcr_buf_init(&path, EMIT_MAX);
  kcr_buf_init(&tmp, EMIT_MAX);
  kcr_buf_init(&hname, EMIT_MAX);
  if (kcr_buf_appendf(&path, "%s/%s.%s", dir, base, header ? "h" : "c") ||
      kcr_buf_appendf(&tmp, "%s.tmp", kcr_buf_cstr(&path)) ||
      kcr_buf_appendf(&hname, "%s%s", v->include ? v->include : base, v->include ? "" : ".h")) {
    gen_msgf(msg, size, "%s/%s.%s: out of memory", dir, base, header ? "h" : "c");
    goto done;
  }
  if (gen_mkdirs(kcr_buf_cstr(&path)) != 0 || !(o.f = fopen(kcr_buf_cstr(&tmp), "w"))) {
    gen_msgf(msg, size, "%s: %s", kcr_buf_cstr(&tmp), strerror(errno));
    goto done;
  }
  if (header)
    emit_header(&o, crd, v);
  else
    emit_source(&o, crd, v, kcr_buf_cstr(&hname));
  if (ferror(o.f) | fclose(o.f) || o.failed) {
    if (o.failed)
      gen_msgf(msg, size, "%s: out of memory, or a description longer than %zu bytes",
               kcr_buf_cstr(&tmp), EMIT_MAX);
    else
      gen_msgf(msg, size, "%s: write failed", kcr_buf_cstr(&tmp));
    remove(kcr_buf_cstr(&tmp));
    goto done;
  }
  if (rename(kcr_buf_cstr(&tmp), kcr_buf_cstr(&path))) {
    gen_msgf(msg, size, "%s: %s", kcr_buf_cstr(&path), strerror(errno));
    remove(kcr_buf_cstr(&tmp));
    goto done;
  }
  rc = 0;
done:
  for (int i = 0; i < S_COUNT; i++)
    kcr_buf_free(&o.s[i]);
  kcr_buf_free(&path);
  kcr_buf_free(&tmp);
  kcr_buf_free(&hname);
  return rc;
}

int gen_emit(const gen_crd *crd, const gen_version *v, const char *dir, char *msg, size_t size) {
  if (write_file(dir, crd, v, true, msg, size))
    return -1;
  return write_file(dir, crd, v, false, msg, size);
}
