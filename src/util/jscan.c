/* SPDX-License-Identifier: MIT */
/*
 * jscan.c: a validating JSON scanner that minifies one object on the way to the
 * store, dropping metadata.managedFields and noting the metadata the store keys
 * on, without a jansson tree (jscan.h). What the cache builds from its output
 * is the cache's business (cache/cobj.c).
 *
 * DESIGN. One pass over the bytes, recursive descent, output appended to a
 * caller's bounded buffer. The input is copied as it came (escapes as
 * written), in runs between what is left out: white space, and managedFields.
 * The API server's JSON has no white space, so an object is one or two copies,
 * not one per token. Parsing the output gives the input's values. Validation follows jansson's
 * rules where the scanner accepts: UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF), no
 * raw control character in a string, no \u0000, paired surrogate escapes, RFC 8259 numbers, one
 * value and nothing but white space after it. What jansson decides by numeric range (integers of 19
 * digits or more, exponents, huge reals) and what would need unescaping to compare (escapes in the
 * member names of the top level and of metadata, or in the metadata the scanner extracts) is
 * refused instead, and so is nesting past MAX_DEPTH. Escaped names deeper down are common
 * (managedFields' "k:{\"name\":\"web\"}" in every Pod) and copied as written. For the rare texts it
 * refuses, the caller falls back to jansson, so a refusal is never wrong, only slower.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "util/jscan.h"
#include "util/jsonbytes.h"

#define MAX_DEPTH 512 /* below jansson's 2048: deeper texts go to jansson */

/* role: what an object is to the scanner. */
enum { ROLE_PLAIN, ROLE_TOP, ROLE_META };

/* span: a string's raw bytes between its quotes. */
typedef struct span {
  const unsigned char *s;
  size_t n;
  bool plain; /* no backslash */
} span_t;

typedef struct scan {
  const unsigned char *p, *end;
  const unsigned char *mark; /* input before it is in out, or dropped */
  kcr_buf_t *out;
  int emit;  /* write to out */
  int depth; /* objects and arrays open */
  int rc;    /* out's error (KCR_ETOOBIG, KCR_ENOMEM), 0 for a refusal */
  /* the metadata of the current top-level object, as spans of the input */
  span_t name, ns, rv;
  bool have_name, have_ns, have_rv, has_kind, has_api_version;
} scan_t;

/* flush appends the input from mark to upto to out (unless emission is off:
 * then it is dropped) and moves mark there. */
static int flush(scan_t *s, const unsigned char *upto) {
  int rc;
  if (s->emit && upto > s->mark &&
      (rc = kcr_buf_append(s->out, s->mark, (size_t)(upto - s->mark)))) {
    s->rc = rc;
    return -1;
  }
  s->mark = upto;
  return 0;
}

static bool is_ws(unsigned c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* ws skips white space, which is the only thing (with managedFields) the
 * output leaves out: what came before it is flushed, and mark moves past it. */
static int ws(scan_t *s) {
  const unsigned char *p = s->p;
  if (p >= s->end || !is_ws(*p))
    return 0;
  if (flush(s, p))
    return -1;
  while (p < s->end && is_ws(*p))
    p++;
  s->p = s->mark = p;
  return 0;
}

static int hexval(unsigned c) {
  if (c >= '0' && c <= '9')
    return (int)(c - '0');
  if (c >= 'a' && c <= 'f')
    return (int)(c - 'a' + 10);
  if (c >= 'A' && c <= 'F')
    return (int)(c - 'A' + 10);
  return -1;
}

/* hex4 reads four hex digits at p. */
static int hex4(const unsigned char *p, const unsigned char *e, unsigned *v) {
  *v = 0;
  if (e - p < 4)
    return -1;
  for (int i = 0; i < 4; i++) {
    int h = hexval(p[i]);
    if (h < 0)
      return -1;
    *v = *v << 4 | (unsigned)h;
  }
  return 0;
}

/* skip_plain moves p to the first byte at or after it that special8 would
 * flag, or to within 8 bytes of e. */
static const unsigned char *skip_plain(const unsigned char *p, const unsigned char *e) {
  while (e - p >= 8) {
    uint64_t m = kcr__json_special8(p);
    if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      return p + (__builtin_ctzll(m) >> 3);
#else
      return p;
#endif
    }
    p += 8;
  }
  return p;
}

/* string validates the string at s->p (a quote) and records its raw span. */
static int string(scan_t *s, span_t *sp) {
  const unsigned char *p = s->p + 1, *e = s->end;
  sp->s = p;
  sp->plain = true;
  while (p < e) {
    unsigned c;
    p = skip_plain(p, e);
    if (p >= e)
      break;
    c = *p;
    if (c == '"') {
      sp->n = (size_t)(p - sp->s);
      s->p = p + 1;
      return 0;
    }
    if (c < 0x20)
      return -1;
    if (c == '\\') {
      sp->plain = false;
      if (++p >= e)
        return -1;
      c = *p;
      if (c == 'u') {
        unsigned v, w;
        if (hex4(p + 1, e, &v) || v == 0 || (v >= 0xDC00 && v <= 0xDFFF))
          return -1;
        p += 5;
        if (v >= 0xD800 && v <= 0xDBFF) {
          if (e - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, e, &w) || w < 0xDC00 ||
              w > 0xDFFF)
            return -1;
          p += 6;
        }
        continue;
      }
      if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' &&
          c != 't')
        return -1;
      p++;
      continue;
    }
    if (c < 0x80) {
      p++;
      continue;
    }
    {
      size_t n = kcr__utf8_len(p, e);
      if (!n)
        return -1;
      p += n;
    }
  }
  return -1;
}

static bool is_digit(const unsigned char *p, const unsigned char *e) {
  return p < e && *p >= '0' && *p <= '9';
}

/* number checks an RFC 8259 number that jansson stores without range trouble. */
static int number(scan_t *s) {
  const unsigned char *p = s->p, *e = s->end, *digits;
  if (p < e && *p == '-')
    p++;
  digits = p;
  if (p < e && *p == '0')
    p++;
  else if (is_digit(p, e))
    while (is_digit(p, e))
      p++;
  else
    return -1;
  if (p - digits > 18)
    return -1; /* may not fit json_int_t (or a double, far beyond): jansson decides */
  if (p < e && *p == '.') {
    p++;
    if (!is_digit(p, e))
      return -1;
    while (is_digit(p, e))
      p++;
  }
  if (p < e && (*p == 'e' || *p == 'E'))
    return -1; /* an exponent may overflow a double: jansson decides */
  s->p = p;
  return 0;
}

static int literal(scan_t *s, const char *word, size_t n) {
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
    return -1;
  s->p += n;
  return 0;
}

static bool span_is(const span_t *sp, const char *lit) {
  size_t n = strlen(lit);
  return sp->n == n && memcmp(sp->s, lit, n) == 0;
}

static int value(scan_t *s, int role);

/*
 * object checks the object at s->p. Its bytes reach out through mark as they
 * came, but for white space and metadata.managedFields: for that member, out
 * is cut back to where the member began (with the comma before it, or, for a
 * first member, the comma after it is left out too), so in a metadata object
 * every member's start is flushed as it is reached. That is a handful of short
 * copies an object; everywhere else an object costs one.
 */
static int object(scan_t *s, int role) {
  size_t emitted = 0, at_comma = 0;
  if (++s->depth > MAX_DEPTH)
    return -1;
  s->p++;
  if (ws(s))
    return -1;
  if (s->p < s->end && *s->p == '}') {
    s->p++;
    s->depth--;
    return 0;
  }
  for (;;) {
    span_t key;
    int skip = 0, child = ROLE_PLAIN, save = s->emit;
    span_t *grab = NULL;
    bool *have = NULL;
    size_t at_member = 0;

    if (ws(s))
      return -1;
    if (role == ROLE_META) {
      if (flush(s, s->p))
        return -1;
      at_member = s->out->len;
    }
    /* A member name with escapes is copied as written, which parses back to
     * the same name, except where the scanner itself reads names (the top
     * level and the metadata): there it would need unescaping to compare. */
    if (s->p >= s->end || *s->p != '"' || string(s, &key) || (!key.plain && role != ROLE_PLAIN))
      return -1;
    if (ws(s))
      return -1;
    if (s->p >= s->end || *s->p != ':')
      return -1;
    s->p++;
    if (ws(s))
      return -1;
    if (role == ROLE_TOP) {
      if (span_is(&key, "metadata")) {
        /* jansson keeps the last of duplicate members: so does the metadata */
        s->have_name = s->have_ns = s->have_rv = false;
        child = ROLE_META;
      } else if (span_is(&key, "kind")) {
        s->has_kind = true;
      } else if (span_is(&key, "apiVersion")) {
        s->has_api_version = true;
      }
    } else if (role == ROLE_META) {
      if (span_is(&key, "managedFields"))
        skip = 1;
      else if (span_is(&key, "name"))
        grab = &s->name, have = &s->have_name;
      else if (span_is(&key, "namespace"))
        grab = &s->ns, have = &s->have_ns;
      else if (span_is(&key, "resourceVersion"))
        grab = &s->rv, have = &s->have_rv;
    }
    if (skip) {
      if (s->emit) {
        s->out->len = emitted ? at_comma : at_member;
        if (s->out->data)
          s->out->data[s->out->len] = '\0';
      }
      s->emit = 0;
    } else {
      emitted++;
    }
    if (grab) {
      *have = false;
      if (s->p < s->end && *s->p == '"') {
        if (string(s, grab) || !grab->plain)
          return -1;
        *have = true;
      } else if (value(s, ROLE_PLAIN)) {
        return -1;
      }
    } else if (value(s, child)) {
      return -1;
    }
    if (skip) {
      s->emit = save;
      s->mark = s->p;
    }
    if (ws(s))
      return -1;
    if (s->p < s->end && *s->p == ',') {
      if (role == ROLE_META) {
        if (flush(s, s->p))
          return -1;
        at_comma = s->out->len;
      }
      s->p++;
      if (skip && !emitted)
        s->mark = s->p; /* a first member left out: its comma too */
      continue;
    }
    if (s->p < s->end && *s->p == '}') {
      s->p++;
      s->depth--;
      return 0;
    }
    return -1;
  }
}

static int array(scan_t *s) {
  if (++s->depth > MAX_DEPTH)
    return -1;
  s->p++;
  if (ws(s))
    return -1;
  if (s->p < s->end && *s->p == ']') {
    s->p++;
    s->depth--;
    return 0;
  }
  for (;;) {
    if (ws(s) || value(s, ROLE_PLAIN) || ws(s))
      return -1;
    if (s->p < s->end && *s->p == ',') {
      s->p++;
      continue;
    }
    if (s->p < s->end && *s->p == ']') {
      s->p++;
      s->depth--;
      return 0;
    }
    return -1;
  }
}

static int value(scan_t *s, int role) {
  span_t sp;
  if (s->p >= s->end)
    return -1;
  switch (*s->p) {
  case '{':
    return object(s, role);
  case '[':
    return array(s);
  case '"':
    return string(s, &sp);
  case 't':
    return literal(s, "true", 4);
  case 'f':
    return literal(s, "false", 5);
  case 'n':
    return literal(s, "null", 4);
  default:
    return number(s);
  }
}

/* copy_span copies a plain span into buf (size bytes); -1 if it does not fit. */
static int copy_span(const span_t *sp, char *buf, size_t size) {
  if (sp->n >= size)
    return -1;
  memcpy(buf, sp->s, sp->n);
  buf[sp->n] = '\0';
  return 0;
}

/* finish_meta fills meta from the scan; -1 when a value does not fit. */
static int finish_meta(const scan_t *s, kcr__scan_meta_t *meta) {
  memset(meta, 0, sizeof(*meta));
  meta->has_kind = s->has_kind;
  meta->has_api_version = s->has_api_version;
  if (s->have_rv && copy_span(&s->rv, meta->rv, sizeof(meta->rv)))
    return -1;
  if (s->have_ns && copy_span(&s->ns, meta->ns, sizeof(meta->ns)))
    return -1;
  if (s->have_name && copy_span(&s->name, meta->name, sizeof(meta->name)))
    return -1;
  /* kcr_meta_key's bound: a key that would not fit goes to jansson's path */
  if (strlen(meta->ns) + strlen(meta->name) + 2 > KCR__SCAN_KEY_MAX)
    return -1;
  return 0;
}

static void scan_init(scan_t *s, const char *in, size_t len, kcr_buf_t *out) {
  memset(s, 0, sizeof(*s));
  s->p = (const unsigned char *)in;
  s->end = s->p + len;
  s->mark = s->p;
  s->out = out;
  s->emit = 1;
}

/* refused maps a failed scan to its code, dropping what it appended. */
static int refused(scan_t *s, size_t base) {
  if (s->rc)
    return s->rc; /* kcr_buf_append freed out */
  s->out->len = base;
  if (s->out->data)
    s->out->data[base] = '\0';
  return KCR_EPARSE;
}

int kcr__scan_object(const char *in, size_t len, kcr_buf_t *out, kcr__scan_meta_t *meta) {
  scan_t s;
  size_t base = out->len;
  scan_init(&s, in, len, out);
  (void)ws(&s); /* nothing before it to flush */
  if (s.p >= s.end || *s.p != '{' || object(&s, ROLE_TOP) || flush(&s, s.p))
    return refused(&s, base);
  (void)ws(&s); /* flushed just now */
  if (s.p != s.end || finish_meta(&s, meta))
    return refused(&s, base);
  return 0;
}

int kcr__scan_event(const char *in, size_t len, char *type, size_t size, kcr_buf_t *out,
                    kcr__scan_meta_t *meta) {
  scan_t s, obj;
  size_t base = out->len;
  bool have_obj = false;

  type[0] = '\0';
  scan_init(&s, in, len, out);
  s.emit = 0;
  (void)ws(&s); /* s emits nothing */
  if (s.p >= s.end || *s.p != '{')
    return refused(&s, base);
  s.p++;
  s.depth = 1;
  (void)ws(&s); /* s emits nothing */
  if (s.p < s.end && *s.p == '}')
    return refused(&s, base); /* no type, no object */
  for (;;) {
    span_t key;
    (void)ws(&s); /* s emits nothing */
    if (s.p >= s.end || *s.p != '"' || string(&s, &key) || !key.plain)
      return refused(&s, base);
    (void)ws(&s); /* s emits nothing */
    if (s.p >= s.end || *s.p != ':')
      return refused(&s, base);
    s.p++;
    (void)ws(&s); /* s emits nothing */
    if (span_is(&key, "object")) {
      /* the last "object" wins, as in jansson */
      out->len = base;
      have_obj = false;
      if (s.p < s.end && *s.p == '{') {
        scan_init(&obj, (const char *)s.p, (size_t)(s.end - s.p), out);
        obj.depth = 1;
        if (object(&obj, ROLE_TOP) || flush(&obj, obj.p)) {
          s.rc = obj.rc;
          return refused(&s, base);
        }
        s.p = obj.p;
        if (finish_meta(&obj, meta))
          return refused(&s, base);
        have_obj = true;
      } else if (value(&s, ROLE_PLAIN)) {
        return refused(&s, base);
      }
    } else if (span_is(&key, "type")) {
      span_t t;
      type[0] = '\0';
      if (s.p < s.end && *s.p == '"') {
        if (string(&s, &t))
          return refused(&s, base);
        if (!t.plain || copy_span(&t, type, size))
          type[0] = '\0';
      } else if (value(&s, ROLE_PLAIN)) {
        return refused(&s, base);
      }
    } else if (value(&s, ROLE_PLAIN)) {
      return refused(&s, base);
    }
    (void)ws(&s); /* s emits nothing */
    if (s.p < s.end && *s.p == ',') {
      s.p++;
      continue;
    }
    if (s.p < s.end && *s.p == '}') {
      s.p++;
      break;
    }
    return refused(&s, base);
  }
  (void)ws(&s); /* s emits nothing */
  if (s.p != s.end || !have_obj || !type[0])
    return refused(&s, base);
  return 0;
}
