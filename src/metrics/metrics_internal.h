/* SPDX-License-Identifier: MIT */
/*
 * metrics_internal.h: what the metrics module shares with its unit tests (a
 * testing build of the same sources).
 */
#ifndef KCR_METRICS_INTERNAL_H
#define KCR_METRICS_INTERNAL_H

/*
 * kcr__metrics_netstat_octets parses text, the contents of /proc/<pid>/net/netstat
 * (borrowed, NUL-terminated), and sets *in and *out to IpExt's InOctets and
 * OutOctets, each 0 when its column is missing, as client_golang's process
 * collector reads them. Returns 0, or -1 when text has no IpExt header and value
 * line pair (*in and *out are then 0). Any thread.
 */
int kcr__metrics_netstat_octets(const char *text, double *in, double *out);

#endif
