/* SPDX-License-Identifier: MIT */
/*
 * yaml.c: a YAML file as jansson values, for kcr-gen. libyaml's document API
 * reads each document; its nodes become JSON the way sigs.k8s.io/yaml would
 * read a CRD: a plain scalar that spells null, a boolean, an integer or a
 * number becomes that, every other scalar (and every quoted one) a string.
 * Bounded: the file is at most GEN_YAML_MAX bytes, nesting at most
 * GEN_YAML_DEPTH deep, and at most GEN_YAML_NODES values are built in all (an
 * alias expands each time it is used, so this is what stops a "billion laughs"
 * file).
 *
 * It also writes JSON values as block YAML (gen_yaml_write, for `kcr-gen
 * crd`), keys sorted as controller-gen's output is: a string is plain when
 * every reader reads it back as that string, a `|-` literal block when it has
 * several lines of printable text, else double-quoted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "gen.h"
#include "kcr/buf.h"
#include "util/alloc.h"

#define GEN_YAML_MAX ((size_t)16 << 20)
#define GEN_YAML_DEPTH 128
#define GEN_YAML_NODES 1000000L

typedef struct conv {
  yaml_document_t *doc;
  long budget;
  char *msg;
  size_t size;
} conv;

static json_t *fail(conv *c, const yaml_node_t *n, const char *what) {
  gen_msgf(c->msg, c->size, "line %lu: %s", n ? (unsigned long)n->start_mark.line + 1 : 0UL, what);
  return NULL;
}

static bool is_one_of(const char *s, const char *const *list) {
  for (; *list; list++)
    if (strcmp(s, *list) == 0)
      return true;
  return false;
}

/* scalar turns a plain scalar into null, a boolean, an integer or a real. */
static json_t *scalar(const yaml_node_t *n) {
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
  static const char *const trues[] = {"true", "True", "TRUE", NULL};
  static const char *const falses[] = {"false", "False", "FALSE", NULL};
  const char *s = (const char *)n->data.scalar.value;
  size_t len = n->data.scalar.length;
  char *end;
  if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || strlen(s) != len)
    return json_stringn(s, len);
  if (is_one_of(s, nulls))
    return json_null();
  if (is_one_of(s, trues))
    return json_true();
  if (is_one_of(s, falses))
    return json_false();
  if ((s[0] >= '0' && s[0] <= '9') ||
      ((s[0] == '-' || s[0] == '+') && s[1] >= '0' && s[1] <= '9')) {
    long long i;
    double d;
    errno = 0;
    i = strtoll(s, &end, 10);
    if (*end == '\0' && errno == 0)
      return json_integer(i);
    errno = 0;
    d = strtod(s, &end);
    if (*end == '\0' && errno == 0)
      return json_real(d);
  }
  return json_stringn(s, len);
}

static json_t *convert(conv *c, const yaml_node_t *n, int depth) {
  json_t *out;
  if (!n)
    return fail(c, NULL, "broken YAML node");
  if (depth > GEN_YAML_DEPTH)
    return fail(c, n, "nested too deep");
  if (--c->budget < 0)
    return fail(c, n, "too many values (aliases expand each time they are used)");
  switch (n->type) {
  case YAML_SCALAR_NODE:
    if (!(out = scalar(n)))
      return fail(c, n, "out of memory");
    return out;
  case YAML_SEQUENCE_NODE:
    if (!(out = json_array()))
      return fail(c, n, "out of memory");
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
      json_t *v = convert(c, yaml_document_get_node(c->doc, *it), depth + 1);
      if (!v || json_array_append_new(out, v)) {
        json_decref(out);
        return v ? fail(c, n, "out of memory") : NULL;
      }
    }
    return out;
  case YAML_MAPPING_NODE:
    if (!(out = json_object()))
      return fail(c, n, "out of memory");
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
      yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
      json_t *v;
      if (!k || k->type != YAML_SCALAR_NODE) {
        json_decref(out);
        return fail(c, k ? k : n, "a mapping key is not a scalar");
      }
      v = convert(c, yaml_document_get_node(c->doc, p->value), depth + 1);
      if (!v ||
          json_object_setn_new(out, (const char *)k->data.scalar.value, k->data.scalar.length, v)) {
        json_decref(out);
        return v ? fail(c, k, "out of memory or a key that is not UTF-8") : NULL;
      }
    }
    return out;
  case YAML_NO_NODE:
  default:
    return fail(c, n, "empty YAML node");
  }
}

char *gen_read_file(const char *path, size_t max, size_t *len, char *msg, size_t size) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t n = 0, cap = 0;
  if (!f) {
    gen_msgf(msg, size, "cannot open: %s", strerror(errno));
    return NULL;
  }
  for (;;) {
    size_t got;
    if (n == cap) {
      char *nb;
      if (cap > max) {
        gen_msgf(msg, size, "larger than %zu bytes", max);
        goto fail;
      }
      cap = cap ? cap * 2 : 65536;
      cap = cap > max + 1 ? max + 1 : cap;
      if (!(nb = realloc(buf, cap))) {
        gen_msgf(msg, size, "out of memory");
        goto fail;
      }
      buf = nb;
    }
    got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
  }
  if (ferror(f)) {
    gen_msgf(msg, size, "read error");
    goto fail;
  }
  fclose(f);
  *len = n;
  return buf;
fail:
  fclose(f);
  free(buf);
  return NULL;
}

int gen_yaml_load(const char *path, json_t **out, char *msg, size_t size) {
  size_t len = 0;
  char *buf = gen_read_file(path, GEN_YAML_MAX, &len, msg, size);
  int rc;
  *out = NULL;
  if (!buf)
    return -1;
  rc = gen_yaml_parse(buf, len, out, msg, size);
  free(buf);
  return rc;
}

int gen_yaml_parse(const char *buf, size_t len, json_t **out, char *msg, size_t size) {
  yaml_parser_t parser;
  json_t *docs;
  conv c = {NULL, GEN_YAML_NODES, msg, size};
  int rc = -1;
  *out = NULL;
  if (!(docs = json_array()) || !yaml_parser_initialize(&parser)) {
    json_decref(docs);
    gen_msgf(msg, size, "out of memory");
    return -1;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
  for (;;) {
    yaml_document_t doc;
    yaml_node_t *root;
    json_t *v;
    if (!yaml_parser_load(&parser, &doc)) {
      gen_msgf(msg, size, "line %lu: %s", (unsigned long)parser.problem_mark.line + 1,
               parser.problem ? parser.problem : "malformed YAML");
      goto done;
    }
    if (!(root = yaml_document_get_root_node(&doc))) {
      yaml_document_delete(&doc);
      break; /* the end of the stream */
    }
    c.doc = &doc;
    v = convert(&c, root, 0);
    yaml_document_delete(&doc);
    if (!v)
      goto done;
    if (json_array_append_new(docs, v)) {
      gen_msgf(msg, size, "out of memory");
      goto done;
    }
  }
  *out = docs;
  docs = NULL;
  rc = 0;
done:
  json_decref(docs);
  yaml_parser_delete(&parser);
  return rc;
}

/* ---- writing ---- */

/*
 * plain_ok tells whether s can be written as a plain scalar that every YAML
 * reader (this file's, go-yaml's YAML 1.1 rules) reads back as the same
 * string: no indicator first, nothing that reads as null, a boolean or a
 * number, no ": " or " #", no control bytes, no edge spaces.
 */
static bool plain_ok(const char *s, size_t len) {
  static const char *const words[] = {"null", "true", "false", "yes", "no", "on",
                                      "off",  "y",    "n",     "~",   NULL};
  if (len == 0 || strchr("-?:,[]{}#&*!|>'\"%@` .+0123456789", s[0]) || s[len - 1] == ' ' ||
      s[len - 1] == ':')
    return false;
  for (const char *const *w = words; *w; w++)
    if (strcasecmp(s, *w) == 0)
      return false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7f || (i + 1 < len && c == ':' && s[i + 1] == ' ') ||
        (i + 1 < len && c == ' ' && s[i + 1] == '#'))
      return false;
  }
  return true;
}

/*
 * literal_ok tells whether a multi-line s can be a `|-` literal block: lines
 * of printable text (tabs allowed) without trailing spaces, no leading space
 * on the first line, no final newline.
 */
static bool literal_ok(const char *s, size_t len) {
  if (len == 0 || !memchr(s, '\n', len) || s[0] == ' ' || s[0] == '\n' || s[len - 1] == '\n')
    return false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ||
        (c == ' ' && (i + 1 == len || s[i + 1] == '\n')))
      return false; /* a line's trailing spaces would not survive */
  }
  return true;
}

/* write_quoted writes s as a double-quoted scalar (JSON's escapes are YAML's). */
static int write_quoted(kcr_buf_t *b, const char *s, size_t len) {
  int rc = kcr_buf_appendc(b, '"');
  for (size_t i = 0; i < len && !rc; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      rc = kcr_buf_appendf(b, "\\%c", c);
    else if (c == '\n')
      rc = kcr_buf_appends(b, "\\n");
    else if (c == '\t')
      rc = kcr_buf_appends(b, "\\t");
    else if (c < 0x20 || c == 0x7f)
      rc = kcr_buf_appendf(b, "\\u%04x", c);
    else
      rc = kcr_buf_appendc(b, (char)c);
  }
  return rc ? rc : kcr_buf_appendc(b, '"');
}

/*
 * write_string writes a string scalar whose lines continue at indent; a key
 * (literal false) is never a literal block.
 */
static int write_string(kcr_buf_t *b, const char *s, size_t len, int indent, bool literal) {
  int rc;
  if (plain_ok(s, len) && !memchr(s, '\n', len))
    return kcr_buf_append(b, s, len);
  if (!literal || !literal_ok(s, len))
    return write_quoted(b, s, len);
  rc = kcr_buf_appends(b, "|-");
  for (size_t i = 0; i < len && !rc;) {
    const char *nl = memchr(s + i, '\n', len - i);
    size_t n = nl ? (size_t)(nl - (s + i)) : len - i;
    rc = kcr_buf_appendc(b, '\n');
    if (!rc && n > 0)
      rc = kcr_buf_appendf(b, "%*s%.*s", indent, "", (int)n, s + i);
    i += n + 1;
  }
  return rc;
}

/* write_real writes the shortest decimal that reads back as d, with a '.' or 'e'. */
static int write_real(kcr_buf_t *b, double d) {
  char t[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(t, sizeof(t), "%.*g", prec, d);
    if (strtod(t, NULL) == d)
      break;
  }
  if (!strpbrk(t, ".eEn")) /* a whole value: keep it a real for the reader */
    return kcr_buf_appendf(b, "%s.0", t);
  return kcr_buf_appends(b, t);
}

/* cmp_keys orders object keys as strcmp does (controller-gen's order). */
static int cmp_keys(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* write_node: below; write_object and it call each other. */
static int write_node(kcr_buf_t *b, const json_t *v, int indent, bool inline_first);

/* write_scalar writes a non-container value (an empty container as {} or []). */
static int write_scalar(kcr_buf_t *b, const json_t *v, int indent) {
  switch (json_typeof(v)) {
  case JSON_STRING:
    return write_string(b, json_string_value(v), json_string_length(v), indent, true);
  case JSON_INTEGER:
    return kcr_buf_appendf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  case JSON_REAL:
    return write_real(b, json_real_value(v));
  case JSON_TRUE:
    return kcr_buf_appends(b, "true");
  case JSON_FALSE:
    return kcr_buf_appends(b, "false");
  case JSON_NULL:
    return kcr_buf_appends(b, "null");
  case JSON_OBJECT:
    return kcr_buf_appends(b, "{}");
  case JSON_ARRAY:
    return kcr_buf_appends(b, "[]");
  }
  return -1;
}

/* is_block tells whether v is written as an indented block (a non-empty container). */
static bool is_block(const json_t *v) {
  return (json_is_object(v) && json_object_size(v) > 0) ||
         (json_is_array(v) && json_array_size(v) > 0);
}

/*
 * write_object writes the members in key order at indent; inline_first says
 * the first line is already placed (after a list's "- ").
 */
static int write_object(kcr_buf_t *b, const json_t *v, int indent, bool inline_first) {
  size_t n = json_object_size(v), k = 0;
  const char **keys = kcr__calloc(n ? n : 1, sizeof(*keys));
  const char *key;
  json_t *val;
  int rc = 0;
  if (!keys)
    return -1;
  json_object_foreach((json_t *)v, key, val) {
    keys[k++] = key;
  }
  qsort(keys, n, sizeof(*keys), cmp_keys);
  for (k = 0; k < n && !rc; k++) {
    val = json_object_get(v, keys[k]);
    if (k > 0 || !inline_first)
      rc = kcr_buf_appendf(b, "%*s", indent, "");
    if (!rc)
      rc = write_string(b, keys[k], strlen(keys[k]), indent + 2, false);
    if (!rc)
      rc = kcr_buf_appendc(b, ':');
    if (!rc && is_block(val)) {
      rc = kcr_buf_appendc(b, '\n');
      if (!rc)
        rc = write_node(b, val, json_is_array(val) ? indent : indent + 2, false);
    } else if (!rc) {
      rc = kcr_buf_appendc(b, ' ');
      if (!rc)
        rc = write_scalar(b, val, indent + 2);
      if (!rc)
        rc = kcr_buf_appendc(b, '\n');
    }
  }
  kcr__free(keys);
  return rc;
}

/* write_node writes a value whose lines start at indent. */
static int write_node(kcr_buf_t *b, const json_t *v, int indent, bool inline_first) {
  int rc = 0;
  if (json_is_object(v) && json_object_size(v) > 0)
    return write_object(b, v, indent, inline_first);
  if (json_is_array(v) && json_array_size(v) > 0) {
    for (size_t i = 0; i < json_array_size(v) && !rc; i++) {
      const json_t *e = json_array_get(v, i);
      if (i > 0 || !inline_first)
        rc = kcr_buf_appendf(b, "%*s", indent, "");
      if (!rc)
        rc = kcr_buf_appends(b, "- ");
      if (!rc && is_block(e)) {
        rc = write_node(b, e, indent + 2, true);
      } else if (!rc) {
        rc = write_scalar(b, e, indent + 2);
        if (!rc)
          rc = kcr_buf_appendc(b, '\n');
      }
    }
    return rc;
  }
  rc = write_scalar(b, v, indent);
  return rc ? rc : kcr_buf_appendc(b, '\n');
}

int gen_yaml_write(kcr_buf_t *b, const json_t *doc) {
  int rc = kcr_buf_appends(b, "---\n");
  return rc ? rc : write_node(b, doc, 0, false);
}
