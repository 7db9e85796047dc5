/* SPDX-License-Identifier: MIT */
/*
 * warning.c: the Warning headers an API server sends (RFC 7234 section 5.5:
 * `299 - "text"`), parsed as apimachinery's net.ParseWarningHeaders does, and
 * the per-client memory of texts already logged.
 *
 * Parsing follows ParseWarningHeader byte for byte where it matters: the
 * value is trimmed of Unicode white space (Go's strings.TrimSpace) and split
 * at its first two single spaces into code, agent and the rest; the code is
 * exactly three ASCII digits; the agent is valid UTF-8 without control
 * characters (Go's unicode.IsControl: U+0000-U+001F, U+007F-U+009F); the text
 * is a quoted string in which a backslash makes the next byte literal; RFC
 * 2047 encoded words in it are decoded when mime.WordDecoder would (charsets
 * utf-8, iso-8859-1 and us-ascii; any other leaves the text as it came); the
 * result must be valid UTF-8 without control characters. An optional quoted
 * date follows (no escapes), then either the end or a comma and the next
 * warning. The first malformed warning ends the value; those before it stand.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/warning_internal.h"
#include "kcr/base64.h"
#include "kcr/buf.h"
#include "util/alloc.h"

#define MAX_WARNING_TEXT ((size_t)1 << 20)
#define RUNE_ERROR 0xFFFD

/* ---- UTF-8, as Go's unicode/utf8 reads it ---- */

/* decode_rune is utf8.DecodeRune: the rune at s (n > 0 bytes) and its size;
 * an invalid sequence is RUNE_ERROR of size 1. */
static long decode_rune(const unsigned char *s, size_t n, size_t *size) {
  unsigned char b = s[0];
  size_t need;
  long r, min;
  unsigned char lo = 0x80, hi = 0xBF;
  *size = 1;
  if (b < 0x80)
    return b;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 2;
    r = b & 0x1F;
    min = 0x80;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 3;
    r = b & 0x0F;
    min = 0x800;
    if (b == 0xE0)
      lo = 0xA0;
    else if (b == 0xED)
      hi = 0x9F; /* no surrogates */
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 4;
    r = b & 0x07;
    min = 0x10000;
    if (b == 0xF0)
      lo = 0x90;
    else if (b == 0xF4)
      hi = 0x8F;
  } else {
    return RUNE_ERROR;
  }
  if (n < need || s[1] < lo || s[1] > hi)
    return RUNE_ERROR;
  for (size_t i = 1; i < need; i++) {
    if (i > 1 && (s[i] < 0x80 || s[i] > 0xBF))
      return RUNE_ERROR;
    r = (r << 6) | (s[i] & 0x3F);
  }
  if (r < min)
    return RUNE_ERROR;
  *size = need;
  return r;
}

/* is_space is unicode.IsSpace. */
static bool is_space(long r) {
  switch (r) {
  case '\t':
  case '\n':
  case '\v':
  case '\f':
  case '\r':
  case ' ':
  case 0x85:
  case 0xA0:
  case 0x1680:
  case 0x2028:
  case 0x2029:
  case 0x202F:
  case 0x205F:
  case 0x3000:
    return true;
  default:
    return r >= 0x2000 && r <= 0x200A;
  }
}

/* is_control is unicode.IsControl. */
static bool is_control(long r) {
  return r < 0x20 || (r >= 0x7F && r < 0xA0);
}

/* trim_space is strings.TrimSpace on s[0..*n): moves *s and cuts *n. */
static void trim_space(const char **s, size_t *n) {
  const unsigned char *p = (const unsigned char *)*s;
  size_t i = 0, start = *n, end = 0;
  while (i < *n) {
    size_t sz;
    long r = decode_rune(p + i, *n - i, &sz);
    if (!is_space(r)) {
      if (start == *n)
        start = i;
      end = i + sz;
    }
    i += sz;
  }
  if (start == *n) {
    *n = 0;
    return;
  }
  *s += start;
  *n = end - start;
}

/* valid_text: valid UTF-8 (utf8.ValidString) without control characters. */
static bool valid_text(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    size_t sz;
    long r = decode_rune(p + i, n - i, &sz);
    if ((r == RUNE_ERROR && sz == 1) || is_control(r))
      return false;
    i += sz;
  }
  return true;
}

/* append_rune writes r as UTF-8 (bytes.Buffer.WriteRune). */
static int append_rune(kcr_buf_t *b, long r) {
  char u[4];
  size_t n;
  if (r < 0x80) {
    u[0] = (char)r;
    n = 1;
  } else if (r < 0x800) {
    u[0] = (char)(0xC0 | (r >> 6));
    u[1] = (char)(0x80 | (r & 0x3F));
    n = 2;
  } else {
    u[0] = (char)(0xE0 | (r >> 12));
    u[1] = (char)(0x80 | ((r >> 6) & 0x3F));
    u[2] = (char)(0x80 | (r & 0x3F));
    n = 3;
  }
  return kcr_buf_append(b, u, n);
}

/* ---- RFC 2047, as mime.WordDecoder.DecodeHeader ---- */

static int hex_value(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10; /* Go accepts lower case too */
  return -1;
}

/* q_decode is mime's qDecode into out; false on a malformed word. */
static bool q_decode(const char *s, size_t n, kcr_buf_t *out, int *rc) {
  for (size_t i = 0; i < n && *rc == 0; i++) {
    unsigned char c = (unsigned char)s[i];
    char d;
    if (c == '_') {
      d = ' ';
    } else if (c == '=') {
      int hi, lo;
      if (i + 2 >= n)
        return false;
      hi = hex_value((unsigned char)s[i + 1]);
      lo = hex_value((unsigned char)s[i + 2]);
      if (hi < 0 || lo < 0)
        return false;
      d = (char)(hi << 4 | lo);
      i += 2;
    } else if ((c >= ' ' && c <= '~') || c == '\n' || c == '\r' || c == '\t') {
      d = (char)c;
    } else {
      return false;
    }
    *rc = kcr_buf_appendc(out, d);
  }
  return true;
}

/* decode_word decodes an encoded word's text with encoding enc into out;
 * false when Go's decode fails. */
static bool decode_word(char enc, const char *text, size_t n, kcr_buf_t *out, int *rc) {
  if (enc == 'B' || enc == 'b') {
    unsigned char *bytes = NULL;
    size_t len = 0;
    int r = kcr_base64_decode(text, n, &bytes, &len, NULL);
    if (r == KCR_ENOMEM)
      *rc = r;
    if (r != 0)
      return false;
    *rc = kcr_buf_append(out, bytes, len);
    kcr__free(bytes);
    return true;
  }
  if (enc == 'Q' || enc == 'q')
    return q_decode(text, n, out, rc);
  return false;
}

/* convert is WordDecoder.convert without a CharsetReader: false for a charset
 * it does not know (DecodeHeader's error: the text stays as it came). */
static bool convert(const char *charset, size_t cl, const kcr_buf_t *content, kcr_buf_t *out,
                    int *rc) {
  const unsigned char *p = (const unsigned char *)kcr_buf_cstr(content);
  size_t n = kcr_buf_len(content);
  if (cl == 5 && strncasecmp(charset, "utf-8", 5) == 0) {
    *rc = kcr_buf_append(out, p, n);
  } else if (cl == 10 && strncasecmp(charset, "iso-8859-1", 10) == 0) {
    for (size_t i = 0; i < n && *rc == 0; i++)
      *rc = append_rune(out, p[i]);
  } else if (cl == 8 && strncasecmp(charset, "us-ascii", 8) == 0) {
    for (size_t i = 0; i < n && *rc == 0; i++)
      *rc = p[i] < 0x80 ? kcr_buf_appendc(out, (char)p[i]) : append_rune(out, RUNE_ERROR);
  } else {
    return false;
  }
  return true;
}

static bool has_non_whitespace(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
      return true;
  return false;
}

static const char *find(const char *s, size_t n, const char *what) {
  size_t wl = strlen(what);
  for (size_t i = 0; i + wl <= n; i++)
    if (memcmp(s + i, what, wl) == 0)
      return s + i;
  return NULL;
}

/*
 * decode_header is mime.WordDecoder.DecodeHeader: into out, or false when a
 * word names a charset it cannot convert (then the caller keeps the text as
 * it came). *rc reports memory errors.
 */
static bool decode_header(const char *h, size_t n, kcr_buf_t *out, int *rc) {
  bool between = false;
  kcr_buf_t content;
  const char *first = find(h, n, "=?");
  if (!first) {
    *rc = kcr_buf_append(out, h, n);
    return true;
  }
  *rc = kcr_buf_append(out, h, (size_t)(first - h));
  n -= (size_t)(first - h);
  h = first;
  kcr_buf_init(&content, MAX_WARNING_TEXT);
  while (*rc == 0) {
    const char *start = find(h, n, "=?"), *q, *end;
    size_t cur, skip, cl;
    char enc;
    if (!start)
      break;
    skip = (size_t)(start - h);
    cur = skip + 2;
    q = memchr(h + cur, '?', n - cur);
    if (!q)
      break;
    cl = (size_t)(q - (h + cur));
    cur += cl + 1;
    if (n < cur + 4) /* len("Q??=") */
      break;
    enc = h[cur++];
    if (h[cur] != '?')
      break;
    cur++;
    end = find(h + cur, n - cur, "?=");
    if (!end)
      break;
    kcr_buf_reset(&content);
    if (!decode_word(enc, h + cur, (size_t)(end - (h + cur)), &content, rc)) {
      if (*rc)
        break;
      between = false;
      *rc = kcr_buf_append(out, h, skip + 2);
      h += skip + 2;
      n -= skip + 2;
      continue;
    }
    if (*rc)
      break;
    /* What comes before the word, unless it is white space between two words. */
    if (skip > 0 && (!between || has_non_whitespace(h, skip)))
      *rc = kcr_buf_append(out, h, skip);
    if (*rc == 0 && !convert(h + skip + 2, cl, &content, out, rc)) {
      kcr_buf_free(&content);
      return false;
    }
    n -= (size_t)(end + 2 - h);
    h = end + 2;
    between = true;
  }
  kcr_buf_free(&content);
  if (*rc == 0 && n > 0)
    *rc = kcr_buf_append(out, h, n);
  return true;
}

/* ---- ParseWarningHeader ---- */

/*
 * parse_quoted is apimachinery's parseQuotedString on s[0..n): the unquoted
 * text into out, *rest and *rest_len what follows the closing quote, trimmed.
 * Returns false on a missing quote.
 */
static bool parse_quoted(const char *s, size_t n, kcr_buf_t *out, const char **rest,
                         size_t *rest_len, int *rc) {
  bool escaping = false;
  if (n == 0 || s[0] != '"')
    return false;
  for (size_t i = 1; i < n && *rc == 0; i++) {
    char b = s[i];
    if (b == '"' && !escaping) {
      *rest = s + i + 1;
      *rest_len = n - i - 1;
      trim_space(rest, rest_len);
      return true;
    }
    if (b == '\\' && !escaping) {
      escaping = true;
      continue;
    }
    *rc = kcr_buf_appendc(out, b);
    escaping = false;
  }
  return false;
}

/* push adds a warning to the list, taking agent and text. */
static int push(kcr__warnings *list, int code, char *agent, char *text) {
  if (list->n == list->cap) {
    size_t cap = list->cap ? list->cap * 2 : 4;
    kcr_warning *p = kcr__realloc(list->items, cap * sizeof(*p));
    if (!p)
      return KCR_ENOMEM;
    list->items = p;
    list->cap = cap;
  }
  list->items[list->n].code = code;
  list->items[list->n].agent = agent;
  list->items[list->n].text = text;
  list->n++;
  return 0;
}

/*
 * parse_one reads one warning from h[0..n). Returns 1 with *rest set when it
 * parsed (and appended) one, 0 when the value is malformed there, or a
 * negative KCR_ENOMEM.
 */
static int parse_one(const char *h, size_t n, kcr__warnings *list, const char **rest,
                     size_t *rest_len) {
  const char *sp1, *sp2, *after = NULL, *tail;
  size_t after_len = 0, tail_len;
  kcr_buf_t raw, text;
  char *agent = NULL, *t = NULL;
  int rc = 0, ok = 0;

  trim_space(&h, &n);
  sp1 = memchr(h, ' ', n);
  if (!sp1)
    return 0;
  sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - h));
  if (!sp2)
    return 0;
  /* code: ^[0-9]{3}$ */
  if (sp1 - h != 3 || h[0] < '0' || h[0] > '9' || h[1] < '0' || h[1] > '9' || h[2] < '0' ||
      h[2] > '9')
    return 0;
  /* agent: not empty, valid UTF-8, no control character */
  if (sp2 == sp1 + 1 || !valid_text(sp1 + 1, (size_t)(sp2 - sp1 - 1)))
    return 0;
  tail = sp2 + 1;
  tail_len = n - (size_t)(tail - h);
  if (tail_len == 0)
    return 0;
  kcr_buf_init(&raw, MAX_WARNING_TEXT);
  kcr_buf_init(&text, MAX_WARNING_TEXT);
  if (!parse_quoted(tail, tail_len, &raw, &after, &after_len, &rc))
    goto out;
  /* tolerate RFC 2047 encoded words (warnings written to RFC 2616) */
  if (rc == 0 && !decode_header(kcr_buf_cstr(&raw), kcr_buf_len(&raw), &text, &rc) && rc == 0) {
    kcr_buf_reset(&text);
    rc = kcr_buf_append(&text, kcr_buf_cstr(&raw), kcr_buf_len(&raw));
  }
  if (rc || !valid_text(kcr_buf_cstr(&text), kcr_buf_len(&text)))
    goto out;
  if (after_len > 0 && after[0] == '"') {
    const char *close = memchr(after + 1, '"', after_len - 1);
    if (!close)
      goto out; /* unterminated date */
    after_len -= (size_t)(close + 1 - after);
    after = close + 1;
    trim_space(&after, &after_len);
  }
  if (after_len > 0) {
    if (after[0] != ',')
      goto out; /* unexpected token after warn-date */
    after++;
    after_len--;
    trim_space(&after, &after_len);
  }
  agent = kcr__strndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
  t = kcr_buf_len(&text) ? kcr_buf_take(&text, NULL) : kcr__strdup("");
  if (!agent || !t ||
      push(list, (h[0] - '0') * 100 + (h[1] - '0') * 10 + (h[2] - '0'), agent, t) != 0) {
    rc = KCR_ENOMEM;
    goto out;
  }
  agent = t = NULL;
  *rest = after;
  *rest_len = after_len;
  ok = 1;
out:
  kcr__free(agent);
  kcr__free(t);
  kcr_buf_free(&raw);
  kcr_buf_free(&text);
  return rc ? rc : ok;
}

int kcr__warnings_parse(const char *value, size_t len, kcr__warnings *list) {
  while (len > 0) {
    const char *rest = NULL;
    size_t rest_len = 0;
    int r = parse_one(value, len, list, &rest, &rest_len);
    if (r < 0)
      return r;
    if (r == 0)
      break; /* Go skips the rest of a malformed header */
    value = rest;
    len = rest_len;
  }
  return 0;
}

void kcr__warnings_free(kcr__warnings *list) {
  for (size_t i = 0; i < list->n; i++) {
    kcr__free(list->items[i].agent);
    kcr__free(list->items[i].text);
  }
  kcr__free(list->items);
  memset(list, 0, sizeof(*list));
}

/* ---- texts already logged ---- */

#define SEEN_SLOTS ((size_t)2 * KCR__WARNING_SEEN_MAX)

void kcr__warning_seen_init(kcr__warning_seen_t *s) {
  memset(s, 0, sizeof(*s));
  pthread_mutex_init(&s->mu, NULL);
}

void kcr__warning_seen_free(kcr__warning_seen_t *s) {
  kcr__free(s->slots);
  pthread_mutex_destroy(&s->mu);
}

/* fnv1a: FNV-1a, 64 bits; 0 (the empty slot) is moved to 1. */
static uint64_t fnv1a(const char *s) {
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    h ^= *p;
    h *= 1099511628211ULL;
  }
  return h ? h : 1;
}

bool kcr__warning_seen_first(kcr__warning_seen_t *s, const char *text) {
  uint64_t h = fnv1a(text);
  size_t i;
  bool first = true;
  pthread_mutex_lock(&s->mu);
  if (!s->slots)
    s->slots = kcr__calloc(SEEN_SLOTS, sizeof(uint64_t));
  if (s->slots) {
    if (s->count >= KCR__WARNING_SEEN_MAX) {
      memset(s->slots, 0, SEEN_SLOTS * sizeof(uint64_t));
      s->count = 0;
    }
    for (i = (size_t)(h % SEEN_SLOTS); s->slots[i] != 0; i = (i + 1) % SEEN_SLOTS)
      if (s->slots[i] == h) {
        first = false;
        break;
      }
    if (first) {
      s->slots[i] = h;
      s->count++;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return first;
}
