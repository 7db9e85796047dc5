/* SPDX-License-Identifier: MIT */
/*
 * time.c: RFC 3339 parse and format without the C library's time zone machinery
 * (timegm and gmtime_r depend on TZ handling and year ranges that vary): dates are
 * converted with Howard Hinnant's days-from-civil arithmetic, exact for the
 * proleptic Gregorian calendar. The parser accepts exactly what Go's
 * time.Parse(time.RFC3339, s) accepts, metav1.Time's decoder (test_time.c holds
 * the table measured against Go): an uppercase 'T' and 'Z' only; an hour of one
 * or two digits (Go reads the layout's "15" so); a fraction after '.' or ',' of
 * any number of digits, the first nine kept and the rest dropped; a +hh:mm or
 * -hh:mm offset up to 24 hours and 60 minutes; no leap second (60).
 */
#include <stdio.h>
#include <string.h>

#include "kcr/time.h"

/* days_from_civil returns days since 1970-01-01 of y-m-d (m 1..12). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  int64_t era, yoe, doy, doe;
  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* civil_from_days is the inverse of days_from_civil. */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  int64_t era, doe, yoe, doy, mp;
  z += 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int is_leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* digits reads exactly n decimal digits at s[*pos]; -1 if any is missing. */
static int digits(const char *s, size_t len, size_t *pos, int n) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (*pos >= len || s[*pos] < '0' || s[*pos] > '9')
      return -1;
    v = v * 10 + (s[*pos] - '0');
    (*pos)++;
  }
  return v;
}

/* expect consumes character c at s[*pos]; 0 if it is there, -1 if not. */
static int expect(const char *s, size_t len, size_t *pos, char c) {
  if (*pos >= len || s[*pos] != c)
    return -1;
  (*pos)++;
  return 0;
}

static int fail(kcr_error_t *err, const char *s, size_t len, const char *what) {
  int shown = len > 64 ? 64 : (int)len;
  return kcr_error_set(err, KCR_EPARSE, "invalid RFC 3339 time \"%.*s%s\": %s", shown, s,
                       len > 64 ? "..." : "", what);
}

/* is_digit: s[pos] is a decimal digit. */
static int is_digit(const char *s, size_t len, size_t pos) {
  return pos < len && s[pos] >= '0' && s[pos] <= '9';
}

int kcr_time_parse(const char *s, size_t len, kcr_time_t *out, kcr_error_t *err) {
  size_t pos = 0;
  int year, mon, day, hour, min, sec, nsec = 0, offset = 0;

  if (!s)
    return fail(err, "", 0, "no text");
  year = digits(s, len, &pos, 4);
  if (year < 0 || expect(s, len, &pos, '-'))
    return fail(err, s, len, "expected a year as YYYY-");
  mon = digits(s, len, &pos, 2);
  if (mon < 0 || expect(s, len, &pos, '-'))
    return fail(err, s, len, "expected a month as MM-");
  day = digits(s, len, &pos, 2);
  if (day < 0)
    return fail(err, s, len, "expected a day as DD");
  if (expect(s, len, &pos, 'T'))
    return fail(err, s, len, "expected 'T' between date and time");
  /* Go's "15" takes one digit when a second does not follow */
  hour = digits(s, len, &pos, is_digit(s, len, pos + 1) ? 2 : 1);
  if (hour < 0 || expect(s, len, &pos, ':'))
    return fail(err, s, len, "expected an hour as hh:");
  min = digits(s, len, &pos, 2);
  if (min < 0 || expect(s, len, &pos, ':'))
    return fail(err, s, len, "expected minutes as mm:");
  sec = digits(s, len, &pos, 2);
  if (sec < 0)
    return fail(err, s, len, "expected seconds as ss");
  if (pos < len && (s[pos] == '.' || s[pos] == ',')) {
    int n = 0;
    if (!is_digit(s, len, pos + 1))
      return fail(err, s, len, "expected digits after the '.' or ','");
    for (pos++; is_digit(s, len, pos); pos++, n++)
      if (n < 9)
        nsec = nsec * 10 + (s[pos] - '0');
    for (; n < 9; n++)
      nsec *= 10;
  }
  if (pos < len && s[pos] == 'Z') {
    pos++;
  } else if (pos < len && (s[pos] == '+' || s[pos] == '-')) {
    int sign = s[pos] == '-' ? -1 : 1, oh, om;
    pos++;
    oh = digits(s, len, &pos, 2);
    if (oh < 0 || expect(s, len, &pos, ':'))
      return fail(err, s, len, "expected a zone offset as +hh:mm");
    om = digits(s, len, &pos, 2);
    if (om < 0)
      return fail(err, s, len, "expected a zone offset as +hh:mm");
    if (oh > 24 || om > 60) /* Go's bounds: some write 24:00 */
      return fail(err, s, len, "zone offset out of range");
    offset = sign * (oh * 3600 + om * 60);
  } else {
    return fail(err, s, len, "expected 'Z' or a zone offset");
  }
  if (pos != len)
    return fail(err, s, len, "unexpected text after the zone");
  if (mon < 1 || mon > 12)
    return fail(err, s, len, "month out of range");
  if (day < 1 || day > days_in_month(year, mon))
    return fail(err, s, len, "day out of range");
  if (hour > 23)
    return fail(err, s, len, "hour out of range");
  if (min > 59)
    return fail(err, s, len, "minute out of range");
  if (sec > 59)
    return fail(err, s, len, "second out of range");

  out->sec = days_from_civil(year, mon, day) * 86400 + (int64_t)hour * 3600 + (int64_t)min * 60 +
             sec - offset;
  out->nsec = nsec;
  return 0;
}

int kcr_time_format(kcr_time_t t, kcr_time_precision precision, char *buf, size_t size) {
  int64_t days, rem, y;
  int m, d, n;
  char frac[12] = "";

  if (t.nsec < 0 || t.nsec > 999999999)
    return KCR_ERANGE;
  /* 0000-01-01 .. 9999-12-31 */
  if (t.sec < INT64_C(-62167219200) || t.sec > INT64_C(253402300799))
    return KCR_ERANGE;
  days = t.sec / 86400;
  rem = t.sec % 86400;
  if (rem < 0) {
    rem += 86400;
    days--;
  }
  civil_from_days(days, &y, &m, &d);
  if (precision == KCR_TIME_MICRO)
    snprintf(frac, sizeof(frac), ".%06d", (int)(t.nsec / 1000));
  else if (precision == KCR_TIME_NANO)
    snprintf(frac, sizeof(frac), ".%09d", (int)t.nsec);
  n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", (int)y, m, d, (int)(rem / 3600),
               (int)(rem / 60 % 60), (int)(rem % 60), frac);
  if (n < 0 || (size_t)n >= size)
    return KCR_ETOOBIG;
  return n;
}

int kcr_time_cmp(kcr_time_t a, kcr_time_t b) {
  if (a.sec != b.sec)
    return a.sec < b.sec ? -1 : 1;
  if (a.nsec != b.nsec)
    return a.nsec < b.nsec ? -1 : 1;
  return 0;
}

kcr_time_t kcr_time_add_ns(kcr_time_t t, int64_t ns) {
  int64_t s = ns / KCR_NSEC_PER_SEC, n = ns % KCR_NSEC_PER_SEC + t.nsec;
  if (n < 0) {
    n += KCR_NSEC_PER_SEC;
    s--;
  } else if (n >= KCR_NSEC_PER_SEC) {
    n -= KCR_NSEC_PER_SEC;
    s++;
  }
  t.sec += s;
  t.nsec = (int32_t)n;
  return t;
}

int64_t kcr_time_diff_ns(kcr_time_t a, kcr_time_t b) {
  int64_t ds, dn, r;
  if (__builtin_sub_overflow(a.sec, b.sec, &ds))
    return a.sec > b.sec ? INT64_MAX : INT64_MIN;
  dn = (int64_t)a.nsec - b.nsec;
  if (__builtin_mul_overflow(ds, KCR_NSEC_PER_SEC, &r) || __builtin_add_overflow(r, dn, &r))
    return ds > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
