/* SPDX-License-Identifier: MIT */
/*
 * pbscan.c: Kubernetes protobuf to compact JSON, driven by pb_schema.h's
 * tables (pbscan.h).
 *
 * DESIGN. A message is read twice: a first pass over its bytes notes, for
 * each field of its struct, where its first occurrence is and how many there
 * are (protobuf allows any order; encoding/json's order is the struct's); a
 * second pass walks the struct's fields in JSON order and writes each, going
 * back to the bytes noted for it. Repeated fields and map entries are read
 * from their first occurrence on, skipping what lies between. Nothing is
 * allocated: the noted positions live on the stack, one frame per nesting
 * level, at most MAX_DEPTH of them.
 *
 * What is written for an absent field follows what the API server's
 * encoding/json would write for the Go value that protobuf's decoder leaves:
 * the zero value, null for a nil slice, map or pointer, and nothing for any
 * of those under omitempty (but a struct that is not a pointer is always
 * written, as encoding/json does).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/alloc.h"
#include "util/jsonbytes.h"
#include "util/pb_schema.h"
#include "util/pbscan.h"

#define MAX_DEPTH 64   /* nesting of messages */
#define MAX_FIELDS 128 /* fields of one struct (the generator's largest is far below) */

/* the numbers of metav1.ObjectMeta's fields the transcoder reads (protobuf
 * field numbers never change once published) */
enum { META_NAME = 1, META_NAMESPACE = 3, META_RV = 6, META_MANAGED = 17 };
enum { LIST_META_RV = 2 }; /* metav1.ListMeta's resourceVersion */

/* role: what a message is to the transcoder. */
enum { ROLE_PLAIN, ROLE_TOP, ROLE_META, ROLE_LIST_META };

typedef struct pbt {
  kcr_buf_t *out;
  kcr_error_t *err;
  kcr__scan_meta_t *meta;
  int depth;
} pbt_t;

/* fld: one field as read from the wire. */
typedef struct fld {
  uint32_t num;
  unsigned wt;            /* wire type: 0 varint, 1 fixed64, 2 bytes, 5 fixed32 */
  uint64_t u;             /* 0, 1, 5 */
  const unsigned char *v; /* 2 */
  size_t n;
} fld_t;

/* out_rc: kcr_buf's error, which has freed the buffer: passed up as it is. */
#define TRY(x)                                                                                     \
  do {                                                                                             \
    int rc_ = (x);                                                                                 \
    if (rc_)                                                                                       \
      return rc_;                                                                                  \
  } while (0)

static int bad(pbt_t *t, const char *what) {
  (void)kcr_error_set(t->err, KCR_EPARSE, "protobuf: %s", what);
  return KCR_EPARSE; /* said here: the analyzer cannot see kcr_error_set's answer */
}

/* put appends n bytes: in place while they fit (kcr_buf's layout: len bytes
 * and a NUL in cap), through kcr_buf_append to grow. Most pieces are a few
 * bytes, so the call is most of their cost. */
static int put(pbt_t *t, const void *p, size_t n) {
  kcr_buf_t *b = t->out;
  if (b->data && n < b->cap - b->len && n <= b->max - b->len) {
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
  }
  return kcr_buf_append(b, p, n);
}

static int putc1(pbt_t *t, char c) {
  return put(t, &c, 1);
}

static int varint(const unsigned char **pp, const unsigned char *e, uint64_t *v) {
  const unsigned char *p = *pp;
  uint64_t r = 0;
  for (unsigned s = 0; s < 64 && p < e; s += 7) {
    unsigned c = *p++;
    r |= (uint64_t)(c & 0x7f) << s;
    if (c < 0x80) {
      *pp = p;
      *v = r;
      return 0;
    }
  }
  return -1;
}

/* next reads the field at *pp (before e) into f and moves past it. */
static int next(pbt_t *t, const unsigned char **pp, const unsigned char *e, fld_t *f) {
  uint64_t key, n;
  if (varint(pp, e, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
    return bad(t, "a field's key is malformed");
  f->num = (uint32_t)(key >> 3);
  f->wt = (unsigned)(key & 7);
  switch (f->wt) {
  case 0:
    if (varint(pp, e, &f->u))
      return bad(t, "a varint is cut short");
    return 0;
  case 1:
  case 5: {
    size_t w = f->wt == 1 ? 8 : 4;
    if ((size_t)(e - *pp) < w)
      return bad(t, "a fixed-width value is cut short");
    f->u = 0;
    for (size_t i = 0; i < w; i++)
      f->u |= (uint64_t)(*pp)[i] << (8 * i);
    *pp += w;
    return 0;
  }
  case 2:
    if (varint(pp, e, &n) || n > (uint64_t)(e - *pp))
      return bad(t, "a length runs past its message");
    f->v = *pp;
    f->n = (size_t)n;
    *pp += n;
    return 0;
  default:
    return bad(t, "a field has a wire type kcr does not read (groups)");
  }
}

/* ---- writing values ---- */

static int key(pbt_t *t, const kcr__pb_field_t *fd, int *comma) {
  const char *name = kcr__pb_names + fd->name;
  size_t n, k = 0;
  char buf[96];
  n = strnlen(name, sizeof(buf));
  if (n + 4 > sizeof(buf)) { /* no JSON name is this long; written in pieces */
    n = strlen(name);
    TRY(put(t, ",\"" + !*comma, *comma ? 2 : 1));
    *comma = 1;
    TRY(put(t, name, n));
    return put(t, "\":", 2);
  }
  if (*comma)
    buf[k++] = ',';
  buf[k++] = '"';
  memcpy(buf + k, name, n);
  k += n;
  buf[k++] = '"';
  buf[k++] = ':';
  *comma = 1;
  return put(t, buf, k);
}

/* str writes s[0, n) as a JSON string. */
static int str(pbt_t *t, const unsigned char *s, size_t n) {
  const unsigned char *p = s, *e = s + n, *run = s;
  TRY(putc1(t, '"'));
  for (;;) {
    uint64_t m;
    while (e - p >= 8) {
      if ((m = kcr__json_special8(p)) != 0) {
        p += (unsigned)__builtin_ctzll(m) >> 3;
        goto look;
      }
      p += 8;
    }
    while (p < e && *p >= 0x20 && *p != '"' && *p != '\\' && *p < 0x80)
      p++;
    if (p == e)
      break;
  look : {
    unsigned c = *p;
    char esc[8];
    size_t k;
    if (c >= 0x80) {
      if ((k = kcr__utf8_len(p, e)) != 0) {
        p += k;
        continue;
      }
      if (p > run)
        TRY(put(t, run, (size_t)(p - run)));
      TRY(put(t, "\\ufffd", 6)); /* as encoding/json writes invalid UTF-8 */
      run = ++p;
      continue;
    }
    if (c == 0)
      return bad(t, "a string holds a NUL, which kcr's store cannot hold");
    if (p > run)
      TRY(put(t, run, (size_t)(p - run)));
    switch (c) {
    case '"':
      k = (size_t)snprintf(esc, sizeof(esc), "\\\"");
      break;
    case '\\':
      k = (size_t)snprintf(esc, sizeof(esc), "\\\\");
      break;
    case '\n':
      k = (size_t)snprintf(esc, sizeof(esc), "\\n");
      break;
    case '\r':
      k = (size_t)snprintf(esc, sizeof(esc), "\\r");
      break;
    case '\t':
      k = (size_t)snprintf(esc, sizeof(esc), "\\t");
      break;
    default:
      k = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c);
      break;
    }
    TRY(put(t, esc, k));
    run = ++p;
  }
  }
  if (p > run)
    TRY(put(t, run, (size_t)(p - run)));
  return putc1(t, '"');
}

static int cstr(pbt_t *t, const char *s) {
  return str(t, (const unsigned char *)s, strlen(s));
}

static int num_u(pbt_t *t, uint64_t v) {
  char b[24], *w = b + sizeof(b);
  do {
    *--w = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return put(t, w, (size_t)(b + sizeof(b) - w));
}

static int num_i(pbt_t *t, int64_t v) {
  if (v >= 0)
    return num_u(t, (uint64_t)v);
  TRY(putc1(t, '-'));
  return num_u(t, (uint64_t)0 - (uint64_t)v);
}

static int base64(pbt_t *t, const unsigned char *s, size_t n) {
  static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char b[772];
  size_t k = 0;
  TRY(putc1(t, '"'));
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)s[i] << 16;
    if (i + 1 < n)
      v |= (unsigned)s[i + 1] << 8;
    if (i + 2 < n)
      v |= s[i + 2];
    b[k++] = a[v >> 18 & 63];
    b[k++] = a[v >> 12 & 63];
    b[k++] = i + 1 < n ? a[v >> 6 & 63] : '=';
    b[k++] = i + 2 < n ? a[v & 63] : '=';
    if (k + 4 > sizeof(b)) {
      TRY(put(t, b, k));
      k = 0;
    }
  }
  if (k)
    TRY(put(t, b, k));
  return putc1(t, '"');
}

/* digits writes v (0 <= v < 10^n) in n digits at b + k; returns the new k. */
static int digits(char *b, int k, int64_t v, int n) {
  for (int i = n - 1; i >= 0; i--) {
    b[k + i] = (char)('0' + v % 10);
    v /= 10;
  }
  return k + n;
}

/* time_json writes metav1.Time ({seconds=1, nanos=2}) in RFC 3339, UTC, to the
 * second, or with micro to the microsecond (MicroTime). */
static int time_json(pbt_t *t, const unsigned char *b, size_t n, int micro) {
  const unsigned char *p = b, *e = b + n;
  int64_t secs = 0, nanos = 0, days, rem, z, era, doe, yoe, y, doy, mp, d, m;
  char buf[40];
  int k;
  if (n == 0) /* the zero time: protobuf writes it empty, encoding/json as null */
    return put(t, "null", 4);
  while (p < e) {
    fld_t f;
    TRY(next(t, &p, e, &f));
    if (f.wt != 0)
      continue;
    if (f.num == 1)
      secs = (int64_t)f.u;
    else if (f.num == 2)
      nanos = (int32_t)f.u;
  }
  if (nanos < 0 || nanos >= 1000000000) { /* as time.Unix normalises */
    secs += nanos / 1000000000;
    nanos %= 1000000000;
    if (nanos < 0) {
      nanos += 1000000000;
      secs--;
    }
  }
  /* the year must be 0-9999 for Go's MarshalJSON: 253402300800 is year 10000 */
  if (secs < -62167219200 || secs >= 253402300800)
    return bad(t, "a time's year is outside 0-9999");
  days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  rem = secs - days * 86400;
  /* days since 1970-01-01 to a civil date (proleptic Gregorian) */
  z = days + 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = yoe + era * 400;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  k = 0;
  buf[k++] = '"';
  k = digits(buf, k, y, 4);
  buf[k++] = '-';
  k = digits(buf, k, m, 2);
  buf[k++] = '-';
  k = digits(buf, k, d, 2);
  buf[k++] = 'T';
  k = digits(buf, k, rem / 3600, 2);
  buf[k++] = ':';
  k = digits(buf, k, rem / 60 % 60, 2);
  buf[k++] = ':';
  k = digits(buf, k, rem % 60, 2);
  if (micro) {
    buf[k++] = '.';
    k = digits(buf, k, nanos / 1000, 6);
  }
  buf[k++] = 'Z';
  buf[k++] = '"';
  return put(t, buf, (size_t)k);
}

/* sub_field finds field num (wire type 2) in the message b[0, n) and reports
 * its bytes; 0 when absent. */
static int sub_bytes(pbt_t *t, const unsigned char *b, size_t n, uint32_t num,
                     const unsigned char **v, size_t *vn, int *found) {
  const unsigned char *p = b, *e = b + n;
  *found = 0;
  while (p < e) {
    fld_t f;
    TRY(next(t, &p, e, &f));
    if (f.num == num && f.wt == 2) {
      *v = f.v;
      *vn = f.n;
      *found = 1;
    }
  }
  return 0;
}

static int quantity_json(pbt_t *t, const unsigned char *b, size_t n) {
  const unsigned char *v = NULL;
  size_t vn = 0;
  int found;
  TRY(sub_bytes(t, b, n, 1, &v, &vn, &found));
  if (!found || vn == 0)
    return put(t, "\"0\"", 3); /* the zero Quantity */
  return str(t, v, vn);
}

static int intorstring_json(pbt_t *t, const unsigned char *b, size_t n) {
  const unsigned char *p = b, *e = b + n, *s = (const unsigned char *)"";
  size_t sn = 0;
  uint64_t type = 0, iv = 0;
  while (p < e) {
    fld_t f;
    TRY(next(t, &p, e, &f));
    if (f.num == 1 && f.wt == 0)
      type = f.u;
    else if (f.num == 2 && f.wt == 0)
      iv = f.u;
    else if (f.num == 3 && f.wt == 2) {
      s = f.v;
      sn = f.n;
    }
  }
  if (type == 1)
    return str(t, s, sn);
  return num_i(t, (int32_t)iv);
}

/* raw_json writes RawExtension's or FieldsV1's bytes (field 1), JSON the
 * API server keeps as it came: read and written again compact by jansson, so
 * that what is stored is valid and minified whatever was written; absent or
 * empty: null. Rare on the hot path (an object's own managedFields are left
 * out), so a tree is affordable here. */
static int raw_json(pbt_t *t, const unsigned char *b, size_t n) {
  const unsigned char *v = NULL;
  size_t vn = 0;
  json_t *tree;
  char *text;
  int found, rc;
  TRY(sub_bytes(t, b, n, 1, &v, &vn, &found));
  if (!found || vn == 0)
    return put(t, "null", 4);
  if (vn >= 4 && memcmp(v, "k8s\0", 4) == 0)
    return kcr_error_set(t->err, KCR_ENOTSUP,
                         "protobuf: an embedded object is protobuf, which kcr does not read");
  tree = json_loadb((const char *)v, vn, JSON_DECODE_ANY, NULL);
  if (!tree)
    return bad(t, "an embedded JSON value is malformed");
  text = json_dumps(tree, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(tree);
  if (!text)
    return KCR_ENOMEM;
  rc = put(t, text, strlen(text));
  kcr__free(text); /* jansson allocates through kcr's functions */
  return rc;
}

static int string_list_json(pbt_t *t, const unsigned char *b, size_t n) {
  const unsigned char *p = b, *e = b + n;
  int first = 1;
  TRY(putc1(t, '['));
  while (p < e) {
    fld_t f;
    TRY(next(t, &p, e, &f));
    if (f.num != 1 || f.wt != 2)
      continue;
    if (!first)
      TRY(putc1(t, ','));
    first = 0;
    TRY(str(t, f.v, f.n));
  }
  return putc1(t, ']');
}

static int message(pbt_t *t, unsigned mi, const unsigned char *b, const unsigned char *e,
                   int *comma, int role);

static int is_varint_kind(unsigned kind) {
  return kind == KCR__PB_BOOL || kind == KCR__PB_INT32 || kind == KCR__PB_INT64;
}

/* scalar writes one varint value of kind. */
static int scalar(pbt_t *t, unsigned kind, uint64_t u) {
  if (kind == KCR__PB_BOOL)
    return u ? put(t, "true", 4) : put(t, "false", 5);
  return num_i(t, kind == KCR__PB_INT32 ? (int32_t)u : (int64_t)u);
}

/* value writes one value of fd's kind read from f (a map's value or a repeated
 * field's element, or the field itself). */
static int value(pbt_t *t, const kcr__pb_field_t *fd, const fld_t *f, int role) {
  unsigned kind = fd->kind;
  if (is_varint_kind(kind)) {
    if (f->wt != 0)
      return bad(t, "a number has the wrong wire type");
    return scalar(t, kind, f->u);
  }
  if (f->wt != 2)
    return bad(t, "a string or message has the wrong wire type");
  switch (kind) {
  case KCR__PB_STRING:
    return str(t, f->v, f->n);
  case KCR__PB_BYTES:
    return base64(t, f->v, f->n);
  case KCR__PB_MESSAGE:
    return message(t, fd->sub, f->v, f->v + f->n, NULL, role);
  case KCR__PB_TIME:
    return time_json(t, f->v, f->n, 0);
  case KCR__PB_MICROTIME:
    return time_json(t, f->v, f->n, 1);
  case KCR__PB_QUANTITY:
    return quantity_json(t, f->v, f->n);
  case KCR__PB_INTORSTRING:
    return intorstring_json(t, f->v, f->n);
  case KCR__PB_RAW:
  case KCR__PB_FIELDSV1:
    return raw_json(t, f->v, f->n);
  case KCR__PB_STRING_LIST:
    return string_list_json(t, f->v, f->n);
  default:
    return kcr_error_set(t->err, KCR_EINTERNAL, "protobuf: the tables name kind %u", kind);
  }
}

/* zero_of writes the JSON of a value of fd's kind that is absent from the wire
 * and is not a pointer, slice or map: what encoding/json writes for Go's zero
 * value. */
static int zero_of(pbt_t *t, const kcr__pb_field_t *fd) {
  switch (fd->kind) {
  case KCR__PB_STRING:
    return put(t, "\"\"", 2);
  case KCR__PB_BOOL:
    return put(t, "false", 5);
  case KCR__PB_MESSAGE:
    return message(t, fd->sub, NULL, NULL, NULL, ROLE_PLAIN);
  case KCR__PB_QUANTITY:
    return put(t, "\"0\"", 3);
  case KCR__PB_INTORSTRING:
  case KCR__PB_INT32:
  case KCR__PB_INT64:
    return putc1(t, '0');
  case KCR__PB_BYTES: /* a nil []byte */
  case KCR__PB_STRING_LIST:
  case KCR__PB_TIME:
  case KCR__PB_MICROTIME:
  case KCR__PB_RAW:
  case KCR__PB_FIELDSV1:
  default:
    return put(t, "null", 4);
  }
}

/* absent writes what a field missing from the wire is in JSON, if anything. */
static int absent(pbt_t *t, const kcr__pb_field_t *fd, int *comma) {
  unsigned fl = fd->flags;
  if (fl & KCR__PBF_OMITZERO)
    return 0;
  if (fl & (KCR__PBF_POINTER | KCR__PBF_REPEATED | KCR__PBF_MAP | KCR__PBF_NULLABLE) ||
      fd->kind == KCR__PB_STRING_LIST) {
    if (fl & KCR__PBF_OMITEMPTY)
      return 0;
    TRY(key(t, fd, comma));
    return put(t, "null", 4);
  }
  if ((fl & KCR__PBF_OMITEMPTY) &&
      (fd->kind == KCR__PB_STRING || fd->kind == KCR__PB_BYTES || is_varint_kind(fd->kind)))
    return 0;
  TRY(key(t, fd, comma));
  return zero_of(t, fd);
}

/* empty says whether encoding/json's omitempty leaves f out (a field that is
 * neither a pointer nor a struct). */
static int empty(const kcr__pb_field_t *fd, const fld_t *f) {
  switch (fd->kind) {
  case KCR__PB_STRING:
  case KCR__PB_BYTES:
    return f->wt == 2 && f->n == 0;
  case KCR__PB_STRING_LIST: {
    /* empty when it holds no item */
    const unsigned char *p, *e;
    if (f->wt != 2)
      return 0;
    p = f->v;
    e = f->v + f->n;
    while (p < e) {
      uint64_t k, n;
      if (varint(&p, e, &k))
        return 0;
      if ((k >> 3) == 1)
        return 0;
      if ((k & 7) == 2) {
        if (varint(&p, e, &n) || n > (uint64_t)(e - p))
          return 0;
        p += n;
      } else if ((k & 7) == 0) {
        if (varint(&p, e, &n))
          return 0;
      } else {
        return 0;
      }
    }
    return 1;
  }
  default:
    return is_varint_kind(fd->kind) && f->wt == 0 && f->u == 0;
  }
}

/* map_entry writes one entry {key=1, value=2} of a map field. */
static int map_entry(pbt_t *t, const kcr__pb_field_t *fd, const fld_t *f, int first) {
  const unsigned char *p, *e;
  fld_t k = {0}, v = {0};
  int have_k = 0, have_v = 0;
  if (f->wt != 2)
    return bad(t, "a map entry has the wrong wire type");
  p = f->v;
  e = f->v + f->n;
  while (p < e) {
    fld_t x;
    TRY(next(t, &p, e, &x));
    if (x.num == 1) {
      k = x;
      have_k = 1;
    } else if (x.num == 2) {
      v = x;
      have_v = 1;
    }
  }
  if (have_k && k.wt != 2)
    return bad(t, "a map key is not a string");
  if (!first)
    TRY(putc1(t, ','));
  TRY(have_k ? str(t, k.v, k.n) : put(t, "\"\"", 2));
  TRY(putc1(t, ':'));
  if (!have_v) {
    if (fd->kind == KCR__PB_BYTES)
      return put(t, "\"\"", 2);
    return zero_of(t, fd);
  }
  return value(t, fd, &v, ROLE_PLAIN);
}

/* field writes fd, whose first occurrence starts at at (cnt of them, before e). */
static int field(pbt_t *t, const kcr__pb_field_t *fd, const unsigned char *at, uint32_t cnt,
                 const unsigned char *e, int *comma, int role) {
  unsigned fl = fd->flags;
  const unsigned char *p = at;
  fld_t f;
  int child = ROLE_PLAIN;
  if (role == ROLE_TOP && fd->kind == KCR__PB_MESSAGE) {
    if (fd->sub == kcr__pb_object_meta)
      child = ROLE_META;
    else if (strcmp(kcr__pb_names + kcr__pb_messages[fd->sub].name, "meta/v1.ListMeta") == 0)
      child = ROLE_LIST_META; /* a list's, or a Status's */
  }
  if (fl & KCR__PBF_INLINE) {
    if (!cnt)
      return message(t, fd->sub, NULL, NULL, comma, ROLE_PLAIN);
    TRY(next(t, &p, e, &f));
    if (f.wt != 2)
      return bad(t, "an embedded struct has the wrong wire type");
    return message(t, fd->sub, f.v, f.v + f.n, comma, ROLE_PLAIN);
  }
  if (!cnt)
    return absent(t, fd, comma);
  if (fl & (KCR__PBF_MAP | KCR__PBF_REPEATED)) {
    int first = 1;
    TRY(key(t, fd, comma));
    TRY(putc1(t, fl & KCR__PBF_MAP ? '{' : '['));
    while (cnt) {
      TRY(next(t, &p, e, &f));
      if (f.num != fd->number)
        continue;
      cnt--;
      if (fl & KCR__PBF_MAP) {
        TRY(map_entry(t, fd, &f, first));
        first = 0;
      } else if (f.wt == 2 && is_varint_kind(fd->kind)) {
        const unsigned char *q = f.v, *qe = f.v + f.n; /* packed */
        while (q < qe) {
          uint64_t u = 0;
          if (varint(&q, qe, &u))
            return bad(t, "a packed varint is cut short");
          if (!first)
            TRY(putc1(t, ','));
          first = 0;
          TRY(scalar(t, fd->kind, u));
        }
      } else {
        if (!first)
          TRY(putc1(t, ','));
        first = 0;
        TRY(value(t, fd, &f, ROLE_PLAIN));
      }
    }
    return putc1(t, fl & KCR__PBF_MAP ? '}' : ']');
  }
  /* one value: protobuf lets the last occurrence win; the API server writes one */
  TRY(next(t, &p, e, &f));
  while (--cnt) {
    fld_t g;
    TRY(next(t, &p, e, &g));
    if (g.num == fd->number)
      f = g;
    else
      cnt++;
  }
  if ((fl & KCR__PBF_OMITEMPTY) && !(fl & KCR__PBF_POINTER) && empty(fd, &f))
    return 0;
  if ((fl & KCR__PBF_OMITZERO) && !(fl & KCR__PBF_POINTER) &&
      (((fd->kind == KCR__PB_TIME || fd->kind == KCR__PB_MICROTIME) && f.wt == 2 && f.n == 0) ||
       empty(fd, &f)))
    return 0;
  TRY(key(t, fd, comma));
  return value(t, fd, &f, child);
}

/* note copies a metadata string into one of kcr__scan_meta_t's buffers. */
static int note(pbt_t *t, const fld_t *f, char *dst, size_t size) {
  if (f->wt != 2 || f->n >= size)
    return bad(t, "an object's name, namespace or resourceVersion is too long");
  /* what JSON writes as it is: the noted text must be the tree's (the JSON
   * scanner refuses escapes there too; the caller then takes the tree's way) */
  for (size_t i = 0; i < f->n; i++)
    if (f->v[i] < 0x20 || f->v[i] >= 0x7f || f->v[i] == '"' || f->v[i] == '\\')
      return bad(t, "an object's name, namespace or resourceVersion is not plain ASCII");
  memcpy(dst, f->v, f->n);
  dst[f->n] = '\0';
  return 0;
}

/* message writes struct mi read from b[0, e - b): as an object of its own, or
 * (comma not NULL) its members into the object being written. */
static int message(pbt_t *t, unsigned mi, const unsigned char *b, const unsigned char *e,
                   int *comma, int role) {
  const kcr__pb_message_t *m = &kcr__pb_messages[mi];
  const kcr__pb_field_t *fields = &kcr__pb_fields[m->first];
  const unsigned char *at[MAX_FIELDS];
  uint32_t cnt[MAX_FIELDS];
  const unsigned char *p = b;
  unsigned last = 0;
  int own = 0, rc;
  if (m->count > MAX_FIELDS)
    return kcr_error_set(t->err, KCR_EINTERNAL, "protobuf: %s has too many fields",
                         kcr__pb_names + m->name);
  if (++t->depth > MAX_DEPTH)
    return bad(t, "messages nest too deep");
  memset(cnt, 0, m->count * sizeof(cnt[0]));
  while (p < e) {
    const unsigned char *tag = p;
    fld_t f;
    unsigned i;
    TRY(next(t, &p, e, &f));
    /* the next field in JSON order is the usual guess */
    if (last + 1 < m->count && fields[last + 1].number == f.num) {
      i = last + 1;
    } else {
      for (i = 0; i < m->count && fields[i].number != f.num; i++)
        ;
      if (i == m->count)
        continue; /* a field newer than the tables: skipped, as Go's decoder does */
    }
    last = i;
    if (role == ROLE_META && t->meta) {
      if (f.num == META_NAME)
        TRY(note(t, &f, t->meta->name, sizeof(t->meta->name)));
      else if (f.num == META_NAMESPACE)
        TRY(note(t, &f, t->meta->ns, sizeof(t->meta->ns)));
      else if (f.num == META_RV)
        TRY(note(t, &f, t->meta->rv, sizeof(t->meta->rv)));
    } else if (role == ROLE_LIST_META && t->meta && f.num == LIST_META_RV) {
      TRY(note(t, &f, t->meta->rv, sizeof(t->meta->rv)));
    }
    if (!cnt[i]++)
      at[i] = tag;
  }
  if (!comma) {
    TRY(putc1(t, '{'));
    comma = &own;
  }
  for (unsigned i = 0; i < m->count; i++) {
    if (role == ROLE_META && fields[i].number == META_MANAGED)
      continue;
    if ((rc = field(t, &fields[i], cnt[i] ? at[i] : NULL, cnt[i], e, comma, role)) != 0)
      return rc;
  }
  t->depth--;
  if (comma == &own)
    return putc1(t, '}');
  return 0;
}

/* ---- objects, events, frames ---- */

static int root_cmp(const void *k, const void *r) {
  const char *const *key2 = k;
  const kcr__pb_root_t *root = r;
  int c = strcmp(key2[0], root->api_version);
  return c ? c : strcmp(key2[1], root->kind);
}

static const kcr__pb_root_t *find_root(const char *api_version, const char *kind) {
  const char *k[2] = {api_version, kind};
  return bsearch(k, kcr__pb_roots, kcr__pb_nroots, sizeof(kcr__pb_roots[0]), root_cmp);
}

int kcr__pb_known(const char *api_version, const char *kind) {
  return api_version && kind && find_root(api_version, kind) != NULL;
}

/* copy_small copies a short string field of the envelope into dst. */
static int copy_small(pbt_t *t, const fld_t *f, char *dst, size_t size, const char *what) {
  if (f->wt != 2 || f->n >= size || memchr(f->v, 0, f->n))
    return kcr_error_set(t->err, KCR_EPARSE, "protobuf: the object's %s is malformed", what);
  memcpy(dst, f->v, f->n);
  dst[f->n] = '\0';
  return 0;
}

static int object(pbt_t *t, const unsigned char *in, size_t len) {
  const unsigned char *p, *e = in + len, *raw = NULL;
  char api_version[128] = "", kind[128] = "";
  size_t raw_n = 0;
  const kcr__pb_root_t *root;
  int comma = 1;
  if (len < 4 || memcmp(in, "k8s\0", 4) != 0)
    return bad(t, "an object does not start with the magic k8s\\0");
  p = in + 4;
  while (p < e) {
    fld_t f;
    TRY(next(t, &p, e, &f));
    if (f.num == 1 && f.wt == 2) { /* typeMeta */
      const unsigned char *q = f.v, *qe = f.v + f.n;
      while (q < qe) {
        fld_t g;
        TRY(next(t, &q, qe, &g));
        if (g.num == 1)
          TRY(copy_small(t, &g, api_version, sizeof(api_version), "apiVersion"));
        else if (g.num == 2)
          TRY(copy_small(t, &g, kind, sizeof(kind), "kind"));
      }
    } else if (f.num == 2 && f.wt == 2) {
      raw = f.v;
      raw_n = f.n;
    } else if (f.num == 3 && f.wt == 2 && f.n > 0) {
      return kcr_error_set(t->err, KCR_ENOTSUP, "protobuf: content encoding %.*s is not read",
                           (int)(f.n > 32 ? 32 : f.n), (const char *)f.v);
    }
  }
  if (!(root = find_root(api_version, kind)))
    return kcr_error_set(t->err, KCR_ENOTSUP, "protobuf: kcr has no schema for %s %s", api_version,
                         kind);
  if (t->meta) {
    t->meta->name[0] = t->meta->ns[0] = t->meta->rv[0] = '\0';
    t->meta->has_kind = t->meta->has_api_version = true;
  }
  TRY(put(t, "{\"kind\":", 8));
  TRY(cstr(t, kind));
  TRY(put(t, ",\"apiVersion\":", 14));
  TRY(cstr(t, api_version));
  TRY(message(t, root->message, raw, raw ? raw + raw_n : NULL, &comma, ROLE_TOP));
  if (t->meta && strlen(t->meta->ns) + strlen(t->meta->name) + 2 > KCR__SCAN_KEY_MAX)
    return bad(t, "an object's namespace and name are too long");
  return putc1(t, '}');
}

/* finish undoes a failed transcoding's output, unless kcr_buf freed it. */
static int finish(kcr_buf_t *out, size_t old, int rc) {
  if (rc && rc != KCR_ENOMEM && rc != KCR_ETOOBIG && out->len > old) {
    out->len = old;
    out->data[old] = '\0';
  }
  return rc;
}

int kcr__pb_object(const unsigned char *in, size_t len, kcr_buf_t *out, kcr__scan_meta_t *meta,
                   kcr_error_t *err) {
  pbt_t t = {out, err, meta, 0};
  size_t old = out->len;
  return finish(out, old, object(&t, in, len));
}

int kcr__pb_event(const unsigned char *in, size_t len, char *type, size_t size, kcr_buf_t *out,
                  kcr__scan_meta_t *meta, kcr_error_t *err) {
  pbt_t t = {out, err, meta, 0};
  const unsigned char *p = in, *e = in + len, *obj = NULL;
  size_t obj_n = 0, old = out->len;
  int have_type = 0;
  while (p < e) {
    fld_t f;
    int rc = next(&t, &p, e, &f);
    if (rc)
      return rc;
    if (f.num == 1 && f.wt == 2) {
      if (f.n >= size || memchr(f.v, 0, f.n))
        return kcr_error_set(err, KCR_EPARSE, "protobuf: a watch event's type is malformed");
      memcpy(type, f.v, f.n);
      type[f.n] = '\0';
      have_type = 1;
    } else if (f.num == 2 && f.wt == 2) { /* RawExtension {raw=1} */
      const unsigned char *q = f.v, *qe = f.v + f.n;
      while (q < qe) {
        fld_t g;
        if ((rc = next(&t, &q, qe, &g)) != 0)
          return rc;
        if (g.num == 1 && g.wt == 2) {
          obj = g.v;
          obj_n = g.n;
        }
      }
    }
  }
  if (!have_type || !obj)
    return kcr_error_set(err, KCR_EPARSE, "protobuf: a watch event without %s",
                         have_type ? "an object" : "a type");
  return finish(out, old, object(&t, obj, obj_n));
}

int kcr__pb_frame(const unsigned char *in, size_t len, size_t max, size_t *start, size_t *n) {
  size_t k;
  if (len < 4)
    return 0;
  k = (size_t)in[0] << 24 | (size_t)in[1] << 16 | (size_t)in[2] << 8 | in[3];
  if (k > max)
    return KCR_ETOOBIG;
  if (len - 4 < k)
    return 0;
  *start = 4;
  *n = k;
  return 1;
}
