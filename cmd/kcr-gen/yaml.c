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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "gen.h"

#define GEN_YAML_MAX (16L * 1024 * 1024)
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

static char *read_file(const char *path, size_t *len, char *msg, size_t size) {
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
      if ((long)cap >= GEN_YAML_MAX) {
        gen_msgf(msg, size, "larger than %ld bytes", GEN_YAML_MAX);
        goto fail;
      }
      cap = cap ? cap * 2 : 65536;
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
  yaml_parser_t parser;
  size_t len = 0;
  char *buf = read_file(path, &len, msg, size);
  json_t *docs;
  conv c = {NULL, GEN_YAML_NODES, msg, size};
  int rc = -1;
  *out = NULL;
  if (!buf)
    return -1;
  if (!(docs = json_array()) || !yaml_parser_initialize(&parser)) {
    json_decref(docs);
    free(buf);
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
  free(buf);
  return rc;
}
