/* SPDX-License-Identifier: MIT */
/*
 * kcr/time.h: wall-clock instants and RFC 3339 text as Kubernetes writes it:
 * metav1.Time as "2006-01-02T15:04:05Z" (whole seconds) and metav1.MicroTime as
 * "2006-01-02T15:04:05.000000Z" (microseconds). Parsing accepts what Go's
 * time.Parse(time.RFC3339, s) accepts (metav1.Time decodes with it), and only
 * that: an uppercase "T" and "Z" (Go refuses "t" and "z", which RFC 3339
 * allows), fractional seconds after a "." or a "," of any number of digits
 * (nanoseconds kept, later digits dropped, not rounded), a +hh:mm/-hh:mm offset
 * up to 24 hours and 60 minutes, and, as Go's parser, a one-digit hour.
 * test/unit/test_time.c holds the table this was measured on.
 */
#ifndef KCR_TIME_H
#define KCR_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "kcr/common.h"
#include "kcr/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_time_t: seconds since 1970-01-01T00:00:00Z plus 0..999999999 nanoseconds. */
typedef struct kcr_time {
  int64_t sec;
  int32_t nsec;
} kcr_time_t;

/* Nanosecond multiples for durations, which kcr keeps in int64_t nanoseconds. */
#define KCR_NSEC_PER_USEC INT64_C(1000)
#define KCR_NSEC_PER_MSEC INT64_C(1000000)
#define KCR_NSEC_PER_SEC INT64_C(1000000000)

/* Precision of kcr_time_format's fractional seconds. */
typedef enum kcr_time_precision {
  KCR_TIME_SECONDS = 0, /* metav1.Time:      2006-01-02T15:04:05Z */
  KCR_TIME_MICRO = 6,   /* metav1.MicroTime: 2006-01-02T15:04:05.000000Z */
  KCR_TIME_NANO = 9     /* RFC3339Nano, always nine digits */
} kcr_time_precision;

/* Room kcr_time_format needs for any year 0000..9999 at any precision. */
#define KCR_TIME_BUFSIZE 40

/*
 * kcr_time_parse reads a timestamp of len bytes (no NUL needed) as Go's
 * time.Parse(time.RFC3339, ...) does (see above) into *out, converted to UTC.
 * Years 0000..9999. Returns 0 or KCR_EPARSE with a message naming what is
 * wrong; *out is untouched on error. err may be NULL. Any thread.
 */
KCR_EXTERN int kcr_time_parse(const char *s, size_t len, kcr_time_t *out, kcr_error_t *err);

/*
 * kcr_time_format writes t in UTC with a "Z" suffix and the given precision into
 * buf (size bytes, NUL-terminated). Returns the length written, or KCR_ERANGE when
 * t's year is outside 0000..9999 or nsec outside 0..999999999, or KCR_ETOOBIG when
 * size is too small (KCR_TIME_BUFSIZE always suffices). Any thread.
 */
KCR_EXTERN int kcr_time_format(kcr_time_t t, kcr_time_precision precision, char *buf, size_t size);

/* kcr_time_cmp returns <0, 0 or >0 as a is before, equal to or after b. */
KCR_EXTERN int kcr_time_cmp(kcr_time_t a, kcr_time_t b);

/* kcr_time_add_ns returns t moved by ns nanoseconds (negative moves back). */
KCR_EXTERN kcr_time_t kcr_time_add_ns(kcr_time_t t, int64_t ns);

/*
 * kcr_time_diff_ns returns a - b in nanoseconds, saturated to INT64_MIN/INT64_MAX
 * when it does not fit (about 292 years).
 */
KCR_EXTERN int64_t kcr_time_diff_ns(kcr_time_t a, kcr_time_t b);

#ifdef __cplusplus
}
#endif

#endif /* KCR_TIME_H */
