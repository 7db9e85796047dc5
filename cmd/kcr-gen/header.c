/* SPDX-License-Identifier: MIT */
/*
 * header.c: the reader of API type headers for `kcr-gen crd`: a hand-written
 * lexer and a recursive-descent parser over the small subset of C that the
 * header convention allows (docs/kcr-gen.md): `typedef struct [tag] { ... }
 * name;` and named types (`typedef char *name;`) at file level, each member `[const] TYPE [*...]
 * name;` or `KCR_LIST(TYPE) name;` / `KCR_MAP(TYPE) name;`. Preprocessor lines and block comments
 * are skipped; `//` comment lines on their own line are kept, grouped into runs of consecutive
 * lines, and each declaration takes the run right above it (its doc) and the run one blank line
 * above that (more markers), as controller-gen reads Go. Runs attached to nothing at file level are
 * the package's (+groupName). Anything else is refused at its FILE:LINE:COL (byte columns, from 1)
 * with the reason, rather than guessed at: the grammar is small on purpose, and the reasons to keep
 * it ours are in docs/design.md. The text must be UTF-8 without NUL bytes (descriptions become
 * JSON).
 *
 * Every allocation goes through libkcr's allocator (util/alloc.h), so a test
 * can fail each in turn; every array grows from input but input is bounded
 * (HDR_TEXT_MAX), so nothing here is unbounded.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gen.h"
#include "header.h"
#include "kcr/buf.h"
#include "util/alloc.h"

/* tkind: the token kinds the grammar needs; T_OTHER is anything else. */
typedef enum tkind { T_EOF, T_IDENT, T_PUNCT, T_OTHER } tkind;

/* tok: one token; p points into the text. */
typedef struct tok {
  tkind kind;
  const char *p;
  size_t n;
  int line, col;
} tok;

/* group: a run of own-line comment lines, lines[first .. first + n). */
typedef struct group {
  size_t first, n;
  int start, end; /* first and last line numbers */
  int depth;      /* brace depth where it sits: 0 is file level */
  bool used;
} group;

/*
 * parser: the lexer's position and the parse's state. lines collects every
 * own-line comment line in order; groups indexes them. failed is set by the
 * first error (the first error wins: later ones are not written over it).
 */
typedef struct parser {
  const char *name, *s;
  size_t len, i;
  int line, col;
  int depth;
  bool code_on_line; /* a token was already on the current line */
  hdr_line *lines;
  size_t nlines, caplines;
  group *groups;
  size_t ngroups, capgroups;
  size_t capstructs;
  tok cur;
  hdr_file *file;
  char *msg;
  size_t size;
  bool failed;
} parser;

/* fail records the first error at (line, col), prefixed with the file name. */
KCR_GEN_PRINTF(4, 5)
static int fail(parser *p, int line, int col, const char *fmt, ...) {
  va_list ap;
  if (p->failed)
    return -1;
  p->failed = true;
  va_start(ap, fmt);
  gen_vmsg_at(p->msg, p->size, p->name, line, col, fmt, ap);
  va_end(ap);
  return -1;
}

/* oom records an out-of-memory failure at the current token. */
static int oom(parser *p) {
  return fail(p, p->cur.line, p->cur.col, "out of memory");
}

/* grow makes room for one more element of size elem in *v (capacity *cap). */
static int grow(void **v, size_t *cap, size_t n, size_t elem) {
  size_t ncap;
  void *nv;
  if (n < *cap)
    return 0;
  ncap = *cap ? *cap * 2 : 8;
  if (ncap > SIZE_MAX / elem)
    return -1;
  nv = kcr__realloc(*v, ncap * elem);
  if (!nv)
    return -1;
  *v = nv;
  *cap = ncap;
  return 0;
}

/* advance moves over one byte, keeping line and column. */
static void advance(parser *p) {
  if (p->s[p->i] == '\n') {
    p->line++;
    p->col = 1;
    p->code_on_line = false;
  } else {
    p->col++;
  }
  p->i++;
}

/* peekc is the byte k ahead, or NUL past the end. */
static char peekc(const parser *p, size_t k) {
  return p->i + k < p->len ? p->s[p->i + k] : '\0';
}

/* add_comment keeps one own-line `//` comment (text from after the slashes). */
static int add_comment(parser *p, const char *text, size_t n, int line, int col) {
  group *g;
  char *t;
  if (grow((void **)&p->lines, &p->caplines, p->nlines, sizeof(*p->lines)))
    return fail(p, line, col, "out of memory");
  t = kcr__strndup(text, n);
  if (!t)
    return fail(p, line, col, "out of memory");
  p->lines[p->nlines] = (hdr_line){t, line, col};
  g = p->ngroups ? &p->groups[p->ngroups - 1] : NULL;
  if (g && g->end == line - 1 && g->depth == p->depth) {
    g->n++;
    g->end = line;
  } else {
    if (grow((void **)&p->groups, &p->capgroups, p->ngroups, sizeof(*p->groups))) {
      kcr__free(t);
      return fail(p, line, col, "out of memory");
    }
    p->groups[p->ngroups++] = (group){p->nlines, 1, line, line, p->depth, false};
  }
  p->nlines++;
  return 0;
}

/* is_ident_start tells whether c may start a C identifier. */
static bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* is_ident_char tells whether c may continue a C identifier. */
static bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* skip_space moves over white space, comments and preprocessor lines. */
static int skip_space(parser *p) {
  while (p->i < p->len) {
    char c = p->s[p->i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
      advance(p);
    } else if (c == '/' && peekc(p, 1) == '/') {
      size_t start = p->i + 2, end;
      int line = p->line, col = p->col;
      bool own = !p->code_on_line;
      while (p->i < p->len && p->s[p->i] != '\n')
        advance(p);
      end = p->i;
      if (own && add_comment(p, p->s + start, end - start, line, col))
        return -1;
    } else if (c == '/' && peekc(p, 1) == '*') {
      int line = p->line, col = p->col;
      advance(p);
      advance(p);
      while (p->i < p->len && !(p->s[p->i] == '*' && peekc(p, 1) == '/'))
        advance(p);
      if (p->i >= p->len)
        return fail(p, line, col, "unterminated /* comment");
      advance(p);
      advance(p);
    } else if (c == '#' && !p->code_on_line) {
      while (p->i < p->len && p->s[p->i] != '\n') {
        if (p->s[p->i] == '\\' && peekc(p, 1) == '\n')
          advance(p);
        advance(p);
      }
    } else {
      break;
    }
  }
  return 0;
}

/* next reads the next token into p->cur. */
static int next(parser *p) {
  if (skip_space(p))
    return -1;
  p->cur = (tok){T_EOF, p->s + p->i, 0, p->line, p->col};
  if (p->i >= p->len)
    return 0;
  p->code_on_line = true;
  if (is_ident_start(p->s[p->i])) {
    p->cur.kind = T_IDENT;
    while (p->i < p->len && is_ident_char(p->s[p->i])) {
      advance(p);
      p->cur.n++;
    }
  } else {
    p->cur.kind = strchr("{}()[];*,:=", p->s[p->i]) && p->s[p->i] ? T_PUNCT : T_OTHER;
    advance(p);
    p->cur.n = 1;
    if (p->cur.kind == T_PUNCT && p->cur.p[0] == '{')
      p->depth++;
    else if (p->cur.kind == T_PUNCT && p->cur.p[0] == '}')
      p->depth--;
  }
  return 0;
}

/* is reports whether the current token is the identifier or punctuation s. */
static bool is(const parser *p, const char *s) {
  return p->cur.kind != T_EOF && p->cur.n == strlen(s) && memcmp(p->cur.p, s, p->cur.n) == 0;
}

/*
 * describe quotes the current token for a message ("end of file" at the end);
 * a token longer than 40 bytes is quoted in part, marked "(cut)".
 */
static const char *describe(const parser *p, char *out, size_t size) {
  if (p->cur.kind == T_EOF)
    return "end of file";
  if (p->cur.kind == T_OTHER &&
      ((unsigned char)p->cur.p[0] < 0x20 || (unsigned char)p->cur.p[0] >= 0x7f))
    snprintf(out, size, "byte 0x%02x", (unsigned char)p->cur.p[0]); /* UTF-8: its first byte */
  else
    snprintf(out, size, "'%.*s'%s", p->cur.n > 40 ? 40 : (int)p->cur.n, p->cur.p,
             p->cur.n > 40 ? " (cut)" : "");
  return out;
}

/* expect takes the punctuation or keyword s, or fails saying what came. */
static int expect(parser *p, const char *s, const char *what) {
  char d[64];
  if (!is(p, s))
    return fail(p, p->cur.line, p->cur.col, "expected %s, got %s", what, describe(p, d, sizeof(d)));
  return next(p);
}

/* take_ident copies the current identifier into *out and moves on. */
static int take_ident(parser *p, char **out, const char *what) {
  char d[64];
  if (p->cur.kind != T_IDENT)
    return fail(p, p->cur.line, p->cur.col, "expected %s, got %s", what, describe(p, d, sizeof(d)));
  *out = kcr__strndup(p->cur.p, p->cur.n);
  if (!*out)
    return oom(p);
  return next(p);
}

/* copy_group copies the lines of group g into c, marking it used. */
static int copy_group(parser *p, group *g, hdr_comments *c) {
  g->used = true;
  c->v = kcr__calloc(g->n, sizeof(*c->v));
  if (!c->v)
    return oom(p);
  for (size_t k = 0; k < g->n; k++) {
    const hdr_line *l = &p->lines[g->first + k];
    c->v[k] = (hdr_line){kcr__strdup(l->text), l->line, l->col};
    c->n++;
    if (!c->v[k].text)
      return oom(p);
  }
  return 0;
}

/*
 * find_group is the unused run at the current brace depth that ends on line
 * end, or NULL. Runs are in line order, so the search stops once past it.
 */
static group *find_group(parser *p, int end) {
  for (size_t k = p->ngroups; k-- > 0;) {
    group *g = &p->groups[k];
    if (g->end < end)
      return NULL;
    if (g->end == end && !g->used && g->depth == p->depth)
      return g;
  }
  return NULL;
}

/*
 * attach gives a declaration starting at line its doc (the run ending on the
 * line above) and pre (the run ending one blank line above the doc, or above
 * the declaration when it has no doc).
 */
static int attach(parser *p, int line, hdr_comments *doc, hdr_comments *pre) {
  group *g = find_group(p, line - 1);
  if (g) {
    if (copy_group(p, g, doc))
      return -1;
    g = find_group(p, g->start - 2);
  } else {
    g = find_group(p, line - 2);
  }
  return g ? copy_group(p, g, pre) : 0;
}

/* refuse_builtin refuses the C types whose width or meaning is not explicit. */
static int refuse_builtin(parser *p) {
  static const char *const bad[] = {"unsigned", "signed", "short", "long", "int", "float", NULL};
  for (const char *const *b = bad; *b; b++)
    if (is(p, *b))
      return fail(p, p->cur.line, p->cur.col,
                  "'%s': use int32_t, int64_t, bool or double (a field's width is explicit)", *b);
  if (is(p, "union") || is(p, "enum"))
    return fail(p, p->cur.line, p->cur.col,
                "'%.*s' members are not supported: use char * with "
                "+kubebuilder:validation:Enum for an enumeration",
                (int)p->cur.n, p->cur.p);
  if (is(p, "struct"))
    return fail(p, p->cur.line, p->cur.col,
                "a struct member is named by its typedef: declare `typedef struct {...} "
                "name_t;` above and use name_t");
  return 0;
}

/* parse_type reads [const] TYPE [*...] into f->type and f->ptr. */
static int parse_type(parser *p, hdr_field *f) {
  while (is(p, "const"))
    if (next(p))
      return -1;
  if (refuse_builtin(p))
    return -1;
  f->type_line = p->cur.line;
  f->type_col = p->cur.col;
  if (take_ident(p, &f->type, "a type name"))
    return -1;
  while (is(p, "*") || is(p, "const")) {
    if (is(p, "*"))
      f->ptr++;
    if (next(p))
      return -1;
  }
  return 0;
}

/* parse_member_type reads TYPE, KCR_LIST(TYPE) or KCR_MAP(TYPE) into f. */
static int parse_member_type(parser *p, hdr_field *f) {
  if (!is(p, "KCR_LIST") && !is(p, "KCR_MAP"))
    return parse_type(p, f);
  f->container = is(p, "KCR_LIST") ? HDR_LIST : HDR_MAP;
  if (next(p) || expect(p, "(", "'(' after the list or map macro") || parse_type(p, f) ||
      expect(p, ")", "')' closing the list or map macro"))
    return -1;
  return 0;
}

/* parse_field reads one member declaration into st, which has room for it. */
static int parse_field(parser *p, hdr_struct *st) {
  hdr_field *f;
  char d[64];
  f = &st->fields[st->nfields++]; /* the caller made room */
  memset(f, 0, sizeof(*f));
  f->line = p->cur.line;
  f->col = p->cur.col;
  if (attach(p, p->cur.line, &f->doc, &f->pre) || parse_member_type(p, f))
    return -1;
  if (take_ident(p, &f->name, "the member's name"))
    return -1;
  if (is(p, "["))
    return fail(p, p->cur.line, p->cur.col, "arrays are not supported: use KCR_LIST(%s%s) %s",
                f->type, f->ptr ? " *" : "", f->name);
  if (is(p, ","))
    return fail(p, p->cur.line, p->cur.col,
                "declare one member per declaration (each has its own doc and markers)");
  if (is(p, ":"))
    return fail(p, p->cur.line, p->cur.col, "bit-fields are not supported");
  if (!is(p, ";"))
    return fail(p, p->cur.line, p->cur.col, "expected ';' after member %s, got %s", f->name,
                describe(p, d, sizeof(d)));
  return next(p);
}

/* named_pos: a declared name, where, and its place in declaration order. */
typedef struct named_pos {
  const char *name;
  int line, col;
  size_t order;
} named_pos;

/* cmp_named orders by name, then declaration order. */
static int cmp_named(const void *a, const void *b) {
  const named_pos *x = a, *y = b;
  int r = strcmp(x->name, y->name);
  return r ? r : (x->order > y->order) - (x->order < y->order);
}

/*
 * check_dups fails on the first name (in declaration order) of v[0..n) that
 * repeats an earlier one: "WHAT NAME is already declared at L:C". Sorting
 * keeps it O(n log n) where comparing each pair would be quadratic in the
 * header's size. v is reordered.
 */
static int check_dups(parser *p, named_pos *v, size_t n, const char *what) {
  const named_pos *dup = NULL, *first = NULL;
  qsort(v, n, sizeof(*v), cmp_named);
  for (size_t k = 1; k < n; k++) {
    size_t j = k;
    if (strcmp(v[k].name, v[k - 1].name) != 0)
      continue;
    while (j > 0 && strcmp(v[j - 1].name, v[k].name) == 0)
      j--; /* v[j] is the name's first declaration, v[k] a later one */
    if (!dup || v[k].order < dup->order) {
      dup = &v[k];
      first = &v[j];
    }
  }
  if (!dup)
    return 0;
  return fail(p, dup->line, dup->col, "%s %s is already declared at %d:%d", what, dup->name,
              first->line, first->col);
}

/* check_members refuses two members of st with one name. */
static int check_members(parser *p, const hdr_struct *st) {
  named_pos *v = kcr__calloc(st->nfields ? st->nfields : 1, sizeof(*v));
  int rc;
  if (!v)
    return oom(p);
  for (size_t k = 0; k < st->nfields; k++)
    v[k] = (named_pos){st->fields[k].name, st->fields[k].line, st->fields[k].col, k};
  rc = check_dups(p, v, st->nfields, "member");
  kcr__free(v);
  return rc;
}

/* check_types refuses two types of the file with one name. */
static int check_types(parser *p) {
  const hdr_file *f = p->file;
  named_pos *v = kcr__calloc(f->nstructs ? f->nstructs : 1, sizeof(*v));
  int rc;
  if (!v)
    return oom(p);
  for (size_t k = 0; k < f->nstructs; k++)
    v[k] = (named_pos){f->structs[k].name, f->structs[k].line, f->structs[k].col, k};
  rc = check_dups(p, v, f->nstructs, "type");
  kcr__free(v);
  return rc;
}

/*
 * parse_alias reads the rest of `typedef TYPE name;` (or a list or map): a
 * named type (Go's `type ConcurrencyPolicy string`), whose doc and markers
 * go wherever it is used.
 */
static int parse_alias(parser *p, hdr_struct *st) {
  char d[64];
  if (!(st->alias = kcr__calloc(1, sizeof(*st->alias))))
    return oom(p);
  st->alias->line = p->cur.line;
  st->alias->col = p->cur.col;
  if (parse_member_type(p, st->alias) || take_ident(p, &st->name, "the typedef's name"))
    return -1;
  if (!is(p, ";"))
    return fail(p, p->cur.line, p->cur.col, "expected ';' after typedef %s, got %s", st->name,
                describe(p, d, sizeof(d)));
  return next(p);
}

/*
 * parse_typedef reads `typedef struct [tag] { member... } name;`, or a named
 * type (parse_alias). The members' capacity is kept in cap here: hdr_struct
 * has no field for it.
 */
static int parse_typedef(parser *p) {
  hdr_file *file = p->file;
  hdr_struct *st;
  size_t cap = 0;
  char d[64];
  if (grow((void **)&file->structs, &p->capstructs, file->nstructs, sizeof(*file->structs)))
    return oom(p);
  st = &file->structs[file->nstructs++];
  memset(st, 0, sizeof(*st));
  st->line = p->cur.line;
  st->col = p->cur.col;
  if (attach(p, p->cur.line, &st->doc, &st->pre) || next(p))
    return -1;
  if (is(p, "enum") || is(p, "union"))
    return fail(p, p->cur.line, p->cur.col,
                "typedef %.*s is not supported (an enumeration is a char * typedef with "
                "+kubebuilder:validation:Enum)",
                (int)p->cur.n, p->cur.p);
  if (!is(p, "struct"))
    return parse_alias(p, st);
  if (next(p))
    return -1;
  if (p->cur.kind == T_IDENT && next(p)) /* the tag, if any, is not used */
    return -1;
  if (!is(p, "{"))
    return fail(p, p->cur.line, p->cur.col, "expected '{' opening the struct, got %s",
                describe(p, d, sizeof(d)));
  if (next(p))
    return -1;
  while (!is(p, "}")) {
    if (p->cur.kind == T_EOF)
      return fail(p, st->line, st->col, "the struct is not closed before the end of the file");
    if (grow((void **)&st->fields, &cap, st->nfields, sizeof(*st->fields)))
      return oom(p);
    if (parse_field(p, st))
      return -1;
  }
  if (check_members(p, st) || next(p) || take_ident(p, &st->name, "the typedef's name after '}'"))
    return -1;
  if (!is(p, ";"))
    return fail(p, p->cur.line, p->cur.col, "expected ';' after typedef %s, got %s", st->name,
                describe(p, d, sizeof(d)));
  return next(p);
}

size_t hdr_utf8_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4;
  else
    return 0;
  if (c == 0xe0)
    lo = 0xa0;
  else if (c == 0xed)
    hi = 0x9f;
  else if (c == 0xf0)
    lo = 0x90;
  else if (c == 0xf4)
    hi = 0x8f;
  if (len > n || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t k = 2; k < len; k++)
    if (s[k] < 0x80 || s[k] > 0xbf)
      return 0;
  return len;
}

/*
 * check_text refuses text that is not UTF-8 (descriptions and marker values
 * become JSON strings) or holds a NUL, at the offending byte.
 */
static int check_text(parser *p) {
  int line = 1, col = 1;
  for (size_t i = 0; i < p->len;) {
    size_t n = hdr_utf8_len((const unsigned char *)p->s + i, p->len - i);
    if (n == 0 || p->s[i] == '\0')
      return fail(p, line, col, "%s (byte 0x%02x)", n ? "a NUL byte" : "not UTF-8",
                  (unsigned char)p->s[i]);
    if (p->s[i] == '\n') {
      line++;
      col = 1;
    } else {
      col += (int)n; /* columns count bytes, as the lexer's do */
    }
    i += n;
  }
  return 0;
}

/* parse_file reads declarations to the end, then keeps the unattached runs. */
static int parse_file(parser *p) {
  hdr_comments *fc = &p->file->free_comments;
  size_t n = 0;
  char d[64];
  if (next(p))
    return -1;
  while (p->cur.kind != T_EOF) {
    if (!is(p, "typedef"))
      return fail(p, p->cur.line, p->cur.col,
                  "expected a typedef struct declaration, got %s (a type header holds only "
                  "those, comments and preprocessor lines)",
                  describe(p, d, sizeof(d)));
    if (parse_typedef(p))
      return -1;
  }
  if (check_types(p))
    return -1;
  for (size_t k = 0; k < p->ngroups; k++)
    if (!p->groups[k].used && p->groups[k].depth == 0)
      n += p->groups[k].n;
  if (n == 0)
    return 0;
  fc->v = kcr__calloc(n, sizeof(*fc->v));
  if (!fc->v)
    return oom(p);
  for (size_t k = 0; k < p->ngroups; k++) {
    const group *g = &p->groups[k];
    if (g->used || g->depth != 0)
      continue;
    for (size_t j = 0; j < g->n; j++) {
      /* handed over: the parser's copy is cleared so it is freed once */
      fc->v[fc->n++] = p->lines[g->first + j];
      p->lines[g->first + j].text = NULL;
    }
  }
  return 0;
}

/* comments_free releases the lines of c and empties it. */
static void comments_free(hdr_comments *c) {
  for (size_t k = 0; k < c->n; k++)
    kcr__free(c->v[k].text);
  kcr__free(c->v);
  c->v = NULL;
  c->n = 0;
}

void hdr_file_free(hdr_file *f) {
  if (!f)
    return;
  for (size_t k = 0; k < f->nstructs; k++) {
    hdr_struct *st = &f->structs[k];
    for (size_t j = 0; j < st->nfields; j++) {
      kcr__free(st->fields[j].name);
      kcr__free(st->fields[j].type);
      comments_free(&st->fields[j].doc);
      comments_free(&st->fields[j].pre);
    }
    kcr__free(st->fields);
    if (st->alias) {
      kcr__free(st->alias->type);
      kcr__free(st->alias);
    }
    kcr__free(st->name);
    comments_free(&st->doc);
    comments_free(&st->pre);
  }
  kcr__free(f->structs);
  comments_free(&f->free_comments);
  kcr__free(f->name);
  kcr__free(f);
}

int hdr_parse(const char *name, const char *text, size_t len, hdr_file **out, char *msg,
              size_t size) {
  parser p;
  int rc;
  *out = NULL;
  memset(&p, 0, sizeof(p));
  p.name = name;
  p.s = text;
  p.len = len;
  p.line = 1;
  p.col = 1;
  p.msg = msg;
  p.size = size;
  if (len > HDR_TEXT_MAX) {
    gen_msgf(msg, size, "%s: longer than %zu bytes", name, HDR_TEXT_MAX);
    return -1;
  }
  p.file = kcr__calloc(1, sizeof(*p.file));
  if (!p.file || !(p.file->name = kcr__strdup(name))) {
    gen_msgf(msg, size, "%s: out of memory", name);
    hdr_file_free(p.file);
    return -1;
  }
  rc = check_text(&p) || parse_file(&p) ? -1 : 0;
  for (size_t k = 0; k < p.nlines; k++)
    kcr__free(p.lines[k].text);
  kcr__free(p.lines);
  kcr__free(p.groups);
  if (rc) {
    hdr_file_free(p.file);
    return -1;
  }
  *out = p.file;
  return 0;
}
