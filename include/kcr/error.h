/* SPDX-License-Identifier: MIT */
/*
 * kcr/error.h: the error model. Every fallible kcr function returns 0 or a
 * negative kcr_err code, and takes an optional kcr_error_t * that it fills with
 * the details: the code again, the HTTP status, the metav1.Status reason, retry
 * hint and causes when the API server answered, and a message for a human.
 * Messages never carry a credential and have no trailing newline. Predicates over
 * API errors (NotFound, Conflict...) are in kcr/apierror.h.
 */
#ifndef KCR_ERROR_H
#define KCR_ERROR_H

#include <stdarg.h>

#include "kcr/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * KCR_ERRNO_MAP is the one list of error codes: XX(name, value, description).
 * Values are fixed forever (they are ABI); add new codes at the end.
 */
#define KCR_ERRNO_MAP(XX)                                                                          \
  XX(ENOMEM, -1, "out of memory")                                                                  \
  XX(EINVAL, -2, "invalid argument")                                                               \
  XX(ETOOBIG, -3, "value exceeds its size limit")                                                  \
  XX(EPARSE, -4, "malformed input")                                                                \
  XX(ERANGE, -5, "value out of range")                                                             \
  XX(EIO, -6, "input/output error")                                                                \
  XX(ENOENT, -7, "no such file or object")                                                         \
  XX(EEXIST, -8, "already exists")                                                                 \
  XX(ETIMEDOUT, -9, "timed out")                                                                   \
  XX(ECANCELED, -10, "operation canceled")                                                         \
  XX(ECLOSED, -11, "closed or shutting down")                                                      \
  XX(EAGAIN, -12, "resource temporarily unavailable")                                              \
  XX(ENOTSUP, -13, "not supported")                                                                \
  XX(ECONFIG, -14, "invalid configuration")                                                        \
  XX(ECONN, -15, "connection failed")                                                              \
  XX(ETLS, -16, "TLS failure")                                                                     \
  XX(EAUTH, -17, "authentication failed")                                                          \
  XX(EAPI, -18, "the API server returned an error status")                                         \
  XX(EPROTO, -19, "protocol violation")                                                            \
  XX(ESYS, -20, "system call failed")                                                              \
  XX(EINTERNAL, -21, "internal error")                                                             \
  XX(ENOTCACHED, -22, "the kind is not cached")

/* kcr_err: 0 is success, every error is negative. */
typedef enum kcr_err {
  KCR_OK = 0,
#define KCR__ERR_ENUM(name, value, desc) KCR_##name = (value),
  KCR_ERRNO_MAP(KCR__ERR_ENUM)
#undef KCR__ERR_ENUM
} kcr_err;

/* Sizes of the text fields of kcr_error_t, NUL included. Longer text is cut. */
#define KCR_ERROR_REASON_MAX 64
#define KCR_ERROR_MESSAGE_MAX 512
#define KCR_ERROR_CAUSES_MAX 512

/*
 * kcr_error_t: details of the first error of a call, on the caller's stack like
 * jansson's json_error_t. Plain data: copy it freely. Fields are only ever added
 * at the end.
 *   code        the kcr_err returned, KCR_OK when nothing failed.
 *   http_status the HTTP status the API server answered (for a metav1.Status,
 *               its code field when set), 0 when none.
 *   reason      the metav1.Status reason ("NotFound", "Conflict"...), "" when none
 *               or unknown.
 *   message     what went wrong, for a human; never a credential.
 *   retry_after_seconds  how long the server asked the client to wait before
 *               trying again (Status details.retryAfterSeconds, else an integer
 *               Retry-After header), 0 when it did not say.
 *   causes      the Status details.causes as "field: message; field: message"
 *               (a cause without a field is its message alone), or for a response
 *               that was not a Status, an excerpt of its body; "" when none.
 * Text fields are valid UTF-8 when kcr wrote them from server text: a cut never
 * splits a character.
 */
typedef struct kcr_error {
  int code;
  int http_status;
  char reason[KCR_ERROR_REASON_MAX];
  char message[KCR_ERROR_MESSAGE_MAX];
  int retry_after_seconds;
  char causes[KCR_ERROR_CAUSES_MAX];
} kcr_error_t;

/*
 * kcr_strerror returns the description of a kcr_err, or "unknown error".
 * Borrowed, static storage; any thread.
 */
KCR_EXTERN const char *kcr_strerror(int code);

/*
 * kcr_err_name returns the name of a kcr_err ("KCR_ENOMEM"), or "KCR_UNKNOWN".
 * Borrowed, static storage; any thread.
 */
KCR_EXTERN const char *kcr_err_name(int code);

/* kcr_error_clear resets err to "no error". err may be NULL. */
KCR_EXTERN void kcr_error_clear(kcr_error_t *err);

/*
 * kcr_error_set records an error in err unless err already holds one (the first
 * error wins, so the innermost and most precise failure is what the caller sees),
 * and returns code so that a failure path can read `return kcr_error_set(...)`.
 * err may be NULL. code must be negative.
 */
KCR_EXTERN int kcr_error_set(kcr_error_t *err, int code, const char *fmt, ...) KCR_PRINTF(3, 4);

/* kcr_error_setv is kcr_error_set with a va_list. */
KCR_EXTERN int kcr_error_setv(kcr_error_t *err, int code, const char *fmt, va_list ap)
    KCR_PRINTF(3, 0);

/*
 * kcr_error_prefix puts context in front of an error already recorded
 * ("kubeconfig /root/.kube/config: " + message), cutting the end if it no longer
 * fits. Does nothing when err is NULL or holds no error.
 */
KCR_EXTERN void kcr_error_prefix(kcr_error_t *err, const char *fmt, ...) KCR_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif

#endif /* KCR_ERROR_H */
