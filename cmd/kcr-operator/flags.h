/* SPDX-License-Identifier: MIT */
/*
 * flags.h: kcr-operator's command line and environment, parsed into one struct
 * (kubebuilder's flags where they exist, so its manifests and habits carry over).
 *
 * Both "--flag=value" and "--flag value" are accepted, and a single dash works
 * as well as two (as Go's flag package). Boolean flags take no separate value:
 * "--leader-elect" or "--leader-elect=false" (values as Go's
 * strconv.ParseBool). "--" ends the flags; positional arguments are an error.
 * The environment: WATCH_NAMESPACE (the namespaces to watch, comma-separated
 * as --namespace; "" for all) when --namespace is not given. Nothing is
 * allocated: every string in the result is borrowed from argv or the
 * environment, or lives in the result itself (the namespace list).
 */
#ifndef KOP_FLAGS_H
#define KOP_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kcr/log.h"

/* Defaults, as kubebuilder's scaffolded main.go has them. */
#define KOP_DEFAULT_LEADER_ELECTION_ID "kcr-operator.kcr.dev"
#define KOP_DEFAULT_METRICS_ADDR "0"
#define KOP_DEFAULT_PROBE_ADDR ":8081"
#define KOP_DEFAULT_WEBHOOK_ADDR ":9443"
#define KOP_MAX_CONCURRENT_RECONCILES 1024
/* KOP_MAX_SHARDS: the largest --shards=N; KOP_MAX_SHARD_RING: the longest
 * --shard-ring (kcr_shard_member_options.ring's bound). */
#define KOP_MAX_SHARDS 4096
#define KOP_MAX_SHARD_RING 46
/* KOP_MAX_NAMESPACES: how many namespaces --namespace a,b,... may name. */
#define KOP_MAX_NAMESPACES 256

/* KOP_MAX_VERBOSITY: the largest integer --zap-log-level (zap's levels are int8). */
#define KOP_MAX_VERBOSITY 127

/*
 * kop_flags: the parsed settings. Strings are borrowed (argv, environ or
 * static defaults); NULL means "not set".
 *   kubeconfig                 --kubeconfig: NULL uses controller-runtime's rules
 *                              (in-cluster, KUBECONFIG, ~/.kube/config).
 *   leader_elect               --leader-elect (default false).
 *   leader_election_id         --leader-election-id: the Lease's name.
 *   leader_election_namespace  --leader-election-namespace: NULL = the operator's
 *                              own namespace.
 *   metrics_bind_address       --metrics-bind-address: "0" turns metrics off.
 *   metrics_secure             --metrics-secure (default true): HTTPS with
 *                              authentication and authorization.
 *   metrics_cert_path          --metrics-cert-path: the certificate directory;
 *                              NULL: a self-signed certificate.
 *   metrics_cert_name, metrics_cert_key  --metrics-cert-name, --metrics-cert-key
 *                              (defaults tls.crt, tls.key).
 *   webhook_bind_address       --webhook-bind-address (default ":9443",
 *                              controller-runtime's port; "0" turns it off).
 *   webhook_cert_path          --webhook-cert-path: the webhook server's
 *                              certificate directory (watched); the webhooks are
 *                              served only when it is set (NULL: no webhooks).
 *   webhook_cert_name, webhook_cert_key  --webhook-cert-name, --webhook-cert-key
 *                              (defaults tls.crt, tls.key).
 *   enable_http2               --enable-http2 (default false): accepted; the
 *                              servers speak HTTP/1.1 only, true is logged.
 *   health_probe_bind_address  --health-probe-bind-address ("0" turns it off).
 *   watch_namespace            --namespace, else WATCH_NAMESPACE: NULL (or the
 *                              environment's "") watches every namespace; else
 *                              the value as given ("a" or "a,b").
 *   watch_namespaces, watch_namespaces_len  the same split at commas (each a
 *                              DNS label, none empty or repeated): {"a"} or
 *                              {"a", "b"}; 0 for every namespace. The strings
 *                              live in watch_namespaces_buf.
 *   max_concurrent_reconciles  --max-concurrent-reconciles (default 1).
 *   The logs, as controller-runtime's zap flags (its zap.Options.BindFlags):
 *   log_level                  --zap-log-level (alias --log-level): debug, info,
 *                              warn, error, trace, or an integer N > 0 meaning
 *                              logr's V(N), i.e. KCR_LOG_V(N): 1 is debug, and
 *                              larger is more verbose (default info).
 *   log_format                 --zap-encoder (alias --log-format): json or
 *                              console (default json, kubebuilder's production).
 *   zap_devel                  --zap-devel: development defaults: console,
 *                              debug, stack traces from warn; each flag given
 *                              explicitly still wins, whatever the order.
 *   stacktrace, stacktrace_level  --zap-stacktrace-level: lines at this level or
 *                              more severe carry a stacktrace: info, warn, error
 *                              (default; warn with --zap-devel) or panic (kcr
 *                              never logs at panic: no stack traces).
 *   time_encoding              --zap-time-encoding: epoch, millis, nano,
 *                              iso8601, rfc3339 or rfc3339nano; not given: RFC
 *                              3339 with microseconds.
 *   show_version, show_help    --version, --help / -h.
 *   tracing                    --tracing: export OpenTelemetry traces (the
 *                              OTEL_* variables configure them, kcr/trace.h).
 *   debug_endpoints            --debug-endpoints: /debug/informers and
 *                              /debug/heap on the probes server.
 *   shard_ring, shards         --shard-ring (NULL: not sharded) and --shards
 *                              (0: auto; N: the replicas expected before the
 *                              first part is taken).
 *   shard_namespace_selector   --shard-namespace-selector (NULL: every
 *                              namespace counts in the even split).
 *   shard_by_uid               --shard-key=uid (false: namespace).
 */
typedef struct kop_flags {
  const char *kubeconfig;
  bool leader_elect;
  const char *leader_election_id;
  const char *leader_election_namespace;
  const char *metrics_bind_address;
  bool metrics_secure;
  const char *metrics_cert_path;
  const char *metrics_cert_name;
  const char *metrics_cert_key;
  const char *webhook_bind_address;
  const char *webhook_cert_path;
  const char *webhook_cert_name;
  const char *webhook_cert_key;
  bool enable_http2;
  const char *health_probe_bind_address;
  const char *watch_namespace;
  int max_concurrent_reconciles;
  kcr_log_level log_level;
  kcr_log_format log_format;
  bool zap_devel;
  bool stacktrace;
  kcr_log_level stacktrace_level;
  kcr_log_time_encoding time_encoding;
  bool show_version;
  bool show_help;
  bool tracing;
  bool debug_endpoints;
  bool shard_by_uid;
  const char *shard_ring;
  const char *shard_namespace_selector;
  int shards; /* --shards: 0 for auto */
  const char *watch_namespaces[KOP_MAX_NAMESPACES];
  size_t watch_namespaces_len;
  char watch_namespaces_buf[KOP_MAX_NAMESPACES * 64];
} kop_flags;

/*
 * kop_flags_parse fills *out from argv (argc entries, argv[0] the program) and
 * env (NULL-terminated "NAME=value" strings; NULL: no environment). Returns 0, or
 * -1 with a one-line reason in msg (msg_size bytes) naming the flag or variable
 * and the value expected; the caller prints it and exits 2. --help and --version
 * stop nothing: they are reported in the result and the rest is still checked.
 */
int kop_flags_parse(int argc, char *const argv[], char *const env[], kop_flags *out, char *msg,
                    size_t msg_size);

/*
 * kop_flags_usage writes the --help text (every flag, its default and its
 * environment variable) to f.
 */
void kop_flags_usage(FILE *f, const char *prog);

/*
 * kop_flags_log_options fills *out (kcr_log_options for kcr_log_configure) from
 * the parsed flags: encoder, level, stack traces and time encoding; fd stderr.
 */
void kop_flags_log_options(const kop_flags *flags, kcr_log_options *out);

/*
 * kop_flags_name returns the name (without dashes, static) of the i-th flag the
 * parser knows, NULL past the last one: the table --help prints, for tests and
 * completion scripts.
 */
const char *kop_flags_name(size_t i);

/*
 * kop_valid_address tells whether addr is a bind address: "0" (off), ":PORT",
 * "HOST:PORT" or "[IPv6]:PORT" with PORT 0..65535.
 */
bool kop_valid_address(const char *addr);

/*
 * kop_parse_namespaces reads a namespace list ("" for all, "a", "a,b") into
 * out's watch_namespace (value itself, borrowed; NULL for "") and
 * watch_namespaces. Returns 0, or -1 with a one-line reason in msg naming
 * origin ("--namespace", "environment variable WATCH_NAMESPACE") and the bad
 * entry: an empty one ("a,,b", "a,"), one that is not a DNS label, a repeated
 * one, more than KOP_MAX_NAMESPACES, or a value that does not fit.
 */
int kop_parse_namespaces(const char *value, kop_flags *out, const char *origin, char *msg,
                         size_t size);

/* kop_valid_dns_label tells whether s is an RFC 1123 label (a namespace name). */
bool kop_valid_dns_label(const char *s);

/* kop_valid_dns_subdomain tells whether s is an RFC 1123 subdomain (a Lease name). */
bool kop_valid_dns_subdomain(const char *s);

#endif /* KOP_FLAGS_H */
