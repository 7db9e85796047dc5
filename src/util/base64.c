/* SPDX-License-Identifier: MIT */
/*
 * base64.c: RFC 4648 standard alphabet with padding. The decoder is strict in the
 * way Go's base64.StdEncoding is (which is what wrote the data we read): wrong
 * characters, missing or misplaced padding and non-zero trailing bits are errors;
 * CR and LF are skipped anywhere.
 */
#include <stdint.h>
#include <string.h>

#include "kcr/base64.h"
#include "util/alloc.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t kcr_base64_encoded_len(size_t n) {
  return (n + 2) / 3 * 4;
}

int kcr_base64_encode(const void *in, size_t n, char **out, kcr_error_t *err) {
  const unsigned char *p = in;
  char *o;
  size_t i, j = 0;

  *out = NULL;
  if (n > (SIZE_MAX - 1) / 4 * 3 - 2)
    return kcr_error_set(err, KCR_ETOOBIG, "base64: input of %zu bytes is too large", n);
  o = kcr__malloc(kcr_base64_encoded_len(n) + 1);
  if (!o)
    return kcr_error_set(err, KCR_ENOMEM, "base64: out of memory");
  for (i = 0; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    o[j++] = alphabet[v >> 18 & 63];
    o[j++] = alphabet[v >> 12 & 63];
    o[j++] = alphabet[v >> 6 & 63];
    o[j++] = alphabet[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
    o[j++] = alphabet[v >> 18 & 63];
    o[j++] = alphabet[v >> 12 & 63];
    o[j++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
    o[j++] = '=';
  }
  o[j] = '\0';
  *out = o;
  return 0;
}

/* value returns the 6-bit value of base64 character c, or -1. */
static int value(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

int kcr_base64_decode(const char *in, size_t len, unsigned char **out, size_t *out_len,
                      kcr_error_t *err) {
  unsigned char *o;
  uint32_t acc = 0;
  size_t i, j = 0, quad = 0, pad = 0;

  *out = NULL;
  *out_len = 0;
  o = kcr__malloc(len / 4 * 3 + 3 + 1);
  if (!o)
    return kcr_error_set(err, KCR_ENOMEM, "base64: out of memory");
  for (i = 0; i < len; i++) {
    unsigned char c = (unsigned char)in[i];
    int v;
    if (c == '\r' || c == '\n')
      continue;
    if (c == '=') {
      /* Padding may only fill the last one or two places of a quad. */
      if (quad < 2)
        goto bad;
      pad++;
      quad++;
      if (quad == 4)
        goto padded;
      continue;
    }
    if (pad)
      goto bad;
    v = value(c);
    if (v < 0)
      goto bad;
    acc = acc << 6 | (uint32_t)v;
    if (++quad == 4) {
      o[j++] = (unsigned char)(acc >> 16);
      o[j++] = (unsigned char)(acc >> 8);
      o[j++] = (unsigned char)acc;
      acc = 0;
      quad = 0;
    }
  }
  if (quad != 0 || pad != 0) {
    kcr__free(o);
    return kcr_error_set(err, KCR_EPARSE, "base64: input ends inside a group of four");
  }
  goto done;

padded:
  /* Only CR/LF may follow the padding. */
  for (i++; i < len; i++)
    if (in[i] != '\r' && in[i] != '\n')
      goto bad;
  if (pad == 2) {
    acc <<= 12; /* two data characters seen: 12 bits, 8 of them a byte */
    if (acc & 0xffff)
      goto trailing;
    o[j++] = (unsigned char)(acc >> 16);
  } else {
    acc <<= 6; /* three data characters: 18 bits, two bytes */
    if (acc & 0xff)
      goto trailing;
    o[j++] = (unsigned char)(acc >> 16);
    o[j++] = (unsigned char)(acc >> 8);
  }

done:
  o[j] = '\0';
  *out = o;
  *out_len = j;
  return 0;

trailing:
  kcr__free(o);
  return kcr_error_set(err, KCR_EPARSE, "base64: non-zero bits before the padding");
bad:
  kcr__free(o);
  return kcr_error_set(err, KCR_EPARSE, "base64: illegal data at input byte %zu", i);
}
