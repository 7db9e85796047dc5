/* SPDX-License-Identifier: MIT */
/*
 * otlp_internal.h: what the exporter makes of a collector's Retry-After, apart
 * from the network so that its edge cases can be tested on their own.
 */
#ifndef KCR_OTLP_OTLP_INTERNAL_H
#define KCR_OTLP_OTLP_INTERNAL_H

#include <stdint.h>

#include "kcr/time.h"

/* KCR__OTLP_RETRY_AFTER_MAX_NS caps the wait a Retry-After may ask for: the
 * exporter's own backoff cap, so a collector cannot park the exporter (and
 * the batch it holds) for longer than the exporter would wait by itself. */
#define KCR__OTLP_RETRY_AFTER_MAX_NS (30 * KCR_NSEC_PER_SEC)

/*
 * kcr__otlp_retry_after_ns reads a Retry-After value (RFC 9110 10.2.3) with
 * spaces, tabs and CR/LF around it allowed: delta-seconds (digits only), or
 * an HTTP-date (IMF-fixdate, or the obsolete RFC 850 and asctime forms, all
 * in GMT) taken against now (wall time). Returns the wait in nanoseconds,
 * capped at KCR__OTLP_RETRY_AFTER_MAX_NS (a delta too big for any integer is
 * capped too), or -1 when value is NULL, empty, malformed (a sign, a
 * fraction, a unit, an impossible date) or a date not after now: the caller
 * then waits its own backoff. "0" is a wait of 0.
 */
int64_t kcr__otlp_retry_after_ns(const char *value, kcr_time_t now);

#endif /* KCR_OTLP_OTLP_INTERNAL_H */
