/* SPDX-License-Identifier: MIT */
/*
 * header.h: the restricted C grammar `kcr-gen crd` reads (header.c): typedef'd
 * structs whose members are scalars, strings, other structs and the list and
 * map macros of kcr/crd.h, with `//` comments kept for their markers and
 * descriptions. What it does not allow is an error at FILE:LINE:COL.
 */
#ifndef KCR_GEN_HEADER_H
#define KCR_GEN_HEADER_H

#include <stdbool.h>
#include <stddef.h>

/* HDR_TEXT_MAX bounds the header text kcr-gen reads (a generous 4 MiB). */
#define HDR_TEXT_MAX ((size_t)4 << 20)

/* hdr_line: one `//` comment line: text after the slashes (new), where it sits. */
typedef struct hdr_line {
  char *text;
  int line, col;
} hdr_line;

/*
 * hdr_comments: a run of comment lines. For a declaration, doc is the group
 * right above it and pre the group one blank line above that (controller-gen
 * reads markers in both; only doc is the description).
 */
typedef struct hdr_comments {
  hdr_line *v;
  size_t n;
} hdr_comments;

/* hdr_container: what wraps a member's element type. */
typedef enum hdr_container {
  HDR_ONE,  /* T x */
  HDR_LIST, /* KCR_LIST(T) x */
  HDR_MAP   /* KCR_MAP(T) x: string keys */
} hdr_container;

/*
 * hdr_field: one struct member. type is the element type's name ("int32_t",
 * "char", "memcached_spec_t"); ptr counts its '*'. line/col locate the member's
 * first token, type_line/type_col the type name.
 */
typedef struct hdr_field {
  char *name;
  char *type;
  int ptr;
  hdr_container container;
  int line, col, type_line, type_col;
  hdr_comments doc, pre;
} hdr_field;

/*
 * hdr_struct: one `typedef struct [tag] { ... } name;`, or, when alias is not
 * NULL, a named type `typedef TYPE name;` (alias's type, ptr and container
 * say what it names; its name and comments are unused).
 */
typedef struct hdr_struct {
  char *name;
  int line, col;
  hdr_field *fields;
  size_t nfields;
  hdr_field *alias;
  hdr_comments doc, pre;
} hdr_struct;

/*
 * hdr_file: a parsed header. free_comments holds the comment lines attached to
 * no declaration: the package-level markers (+groupName) live there.
 */
typedef struct hdr_file {
  char *name;
  hdr_struct *structs;
  size_t nstructs;
  hdr_comments free_comments;
} hdr_file;

/*
 * hdr_parse parses text (len bytes, not NUL-terminated necessarily) named name
 * into a new *out (release with hdr_file_free). Returns 0, or -1 with
 * "NAME:LINE:COL: reason" in msg (and *out NULL). Out of memory is an error
 * like the others.
 */
int hdr_parse(const char *name, const char *text, size_t len, hdr_file **out, char *msg,
              size_t size);

/*
 * hdr_utf8_len is the length of the well-formed UTF-8 sequence at s (n > 0
 * bytes left), or 0: overlong forms, surrogates and code points past U+10FFFF
 * are refused, as jansson refuses them in a string. kcr-gen's one UTF-8
 * check (the header parser's, and webhook.c's for marker values).
 */
size_t hdr_utf8_len(const unsigned char *s, size_t n);

/* hdr_file_free releases what hdr_parse made. NULL is ignored. */
void hdr_file_free(hdr_file *f);

#endif /* KCR_GEN_HEADER_H */
