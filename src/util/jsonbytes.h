/* SPDX-License-Identifier: MIT */
/*
 * jsonbytes.h: the byte-level checks of JSON strings that the JSON scanner
 * (jscan.c) and the protobuf transcoder (pbscan.c) share: UTF-8 by jansson's
 * rules (no overlong forms, no surrogates, nothing past U+10FFFF), and the
 * word-at-a-time search for the bytes a string cannot hold as they are.
 */
#ifndef KCR_UTIL_JSONBYTES_H
#define KCR_UTIL_JSONBYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* kcr__utf8_len returns the length of the valid UTF-8 sequence at p (whose
 * first byte is >= 0x80), before e; 0 if it is invalid or cut short. */
static inline size_t kcr__utf8_len(const unsigned char *p, const unsigned char *e) {
  unsigned c = p[0], v;
  size_t n;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    v = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    v = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    v = c & 0x07;
  } else {
    return 0;
  }
  if ((size_t)(e - p) < n)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80)
      return 0;
    v = v << 6 | (p[i] & 0x3F);
  }
  if ((n == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
      (n == 4 && (v < 0x10000 || v > 0x10FFFF)))
    return 0;
  return n;
}

/* kcr__json_special8: the bytes among the 8 at p that a string must look at
 * one by one ('"', '\\', control characters, anything past ASCII), as the
 * high bit of each such byte. The word-at-a-time tests may also flag a byte
 * above one that matches, never below: the lowest flag is exact, which is all
 * a caller may use. Most of a ConfigMap's data and most names hold no such
 * byte. */
static inline uint64_t kcr__json_special8(const unsigned char *p) {
  const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
  uint64_t w, q, b;
  memcpy(&w, p, sizeof(w));
  q = w ^ (ones * '"');
  b = w ^ (ones * '\\');
  return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & high;
}

#endif /* KCR_UTIL_JSONBYTES_H */
