/* SPDX-License-Identifier: MIT */
/*
 * kcr/base64.h: standard base64 (RFC 4648, "+/" and "=" padding), as Kubernetes
 * uses for Secret data and the *-data fields of a kubeconfig. Decoding is strict
 * like Go's base64.StdEncoding: padding required, no stray characters, except
 * that CR and LF are skipped (PEM-style wrapped text decodes).
 */
#ifndef KCR_BASE64_H
#define KCR_BASE64_H

#include <stddef.h>

#include "kcr/common.h"
#include "kcr/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_base64_encoded_len returns the text length encoding n bytes yields. */
KCR_EXTERN size_t kcr_base64_encoded_len(size_t n);

/*
 * kcr_base64_encode encodes n bytes of in. Returns 0 and a new NUL-terminated
 * string in *out (release with kcr_free; its length is kcr_base64_encoded_len(n)),
 * or KCR_ETOOBIG when the result would not fit in memory arithmetic, or
 * KCR_ENOMEM. *out is NULL on failure. Any thread.
 */
KCR_EXTERN int kcr_base64_encode(const void *in, size_t n, char **out, kcr_error_t *err);

/*
 * kcr_base64_decode decodes len characters of in. Returns 0 with a new buffer in
 * *out holding *out_len bytes plus a NUL after them (so decoded text reads as a C
 * string; release with kcr_free), or KCR_EPARSE naming the offending offset, or
 * KCR_ENOMEM. *out is NULL and *out_len 0 on failure. Any thread.
 */
KCR_EXTERN int kcr_base64_decode(const char *in, size_t len, unsigned char **out, size_t *out_len,
                                 kcr_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* KCR_BASE64_H */
