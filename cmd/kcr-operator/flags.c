/* SPDX-License-Identifier: MIT */
/*
 * flags.c: kcr-operator's command-line and environment parsing.
 *
 * DESIGN: one table describes every flag (name, kind, where it lands, help
 * text), and the parser, the validation and --help all read it, so a flag
 * cannot be parsed without being documented. The parser neither allocates nor
 * prints: it fills a struct of borrowed strings and, on the first problem,
 * writes one line naming the flag (or variable) and what was expected, for
 * main() to print before exiting 2, as Go's flag package does. Values are
 * validated here (addresses, namespace and Lease names, ranges) so a typo fails
 * at start-up, not minutes later at the first reconcile.
 */
#include "flags.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The kinds of flag values. */
enum kind {
  K_STRING,
  K_BOOL,
  K_INT,
  K_LEVEL,
  K_FORMAT,
  K_STACKLEVEL,
  K_TIMEENC,
  K_ADDR,
  K_LABEL,
  K_SUBDOMAIN,
  K_NSLIST,
  K_SHARDS,
  K_SHARDKEY
};

/* One flag: its name, kind, where it goes (an offset into kop_flags), help. */
typedef struct flag_def {
  const char *name;
  enum kind kind;
  size_t offset;
  const char *defval;
  const char *help;
} flag_def;

#define F(field) offsetof(kop_flags, field)

static const flag_def flag_defs[] = {
    {"kubeconfig", K_STRING, F(kubeconfig), "",
     "Path to a kubeconfig. Only required if out-of-cluster; default: in-cluster config, else "
     "$KUBECONFIG, else ~/.kube/config."},
    {"leader-elect", K_BOOL, F(leader_elect), "false",
     "Enable leader election for the controller manager, ensuring only one active instance."},
    {"leader-election-id", K_SUBDOMAIN, F(leader_election_id), KOP_DEFAULT_LEADER_ELECTION_ID,
     "Name of the Lease used for leader election."},
    {"leader-election-namespace", K_LABEL, F(leader_election_namespace), "",
     "Namespace of the leader election Lease; default: the operator's own namespace."},
    {"metrics-bind-address", K_ADDR, F(metrics_bind_address), KOP_DEFAULT_METRICS_ADDR,
     "Address the metrics endpoint binds to, e.g. :8443 (HTTPS) or :8080 (HTTP); 0 disables it."},
    {"metrics-secure", K_BOOL, F(metrics_secure), "true",
     "Serve metrics over HTTPS with authentication and authorization; false for plain HTTP."},
    {"metrics-cert-path", K_STRING, F(metrics_cert_path), "",
     "Directory holding the metrics server's certificate and key, watched and reloaded; "
     "default: a self-signed certificate made at start."},
    {"metrics-cert-name", K_STRING, F(metrics_cert_name), "tls.crt",
     "Name of the metrics server's certificate file in --metrics-cert-path."},
    {"metrics-cert-key", K_STRING, F(metrics_cert_key), "tls.key",
     "Name of the metrics server's key file in --metrics-cert-path."},
    {"webhook-bind-address", K_ADDR, F(webhook_bind_address), KOP_DEFAULT_WEBHOOK_ADDR,
     "Address the webhook server (HTTPS) binds to when --webhook-cert-path is given; 0 disables "
     "it."},
    {"webhook-cert-path", K_STRING, F(webhook_cert_path), "",
     "Directory holding the webhook server's certificate and key, watched and reloaded; the "
     "webhooks are served only when it is given."},
    {"webhook-cert-name", K_STRING, F(webhook_cert_name), "tls.crt",
     "Name of the webhook server's certificate file in --webhook-cert-path."},
    {"webhook-cert-key", K_STRING, F(webhook_cert_key), "tls.key",
     "Name of the webhook server's key file in --webhook-cert-path."},
    {"enable-http2", K_BOOL, F(enable_http2), "false",
     "Accepted for kubebuilder's manifests; the metrics and webhook servers speak HTTP/1.1 only "
     "(ALPN offers http/1.1), so true logs a warning and changes nothing."},
    {"health-probe-bind-address", K_ADDR, F(health_probe_bind_address), KOP_DEFAULT_PROBE_ADDR,
     "Address the /healthz and /readyz probe endpoint binds to; 0 disables it."},
    {"namespace", K_NSLIST, F(watch_namespace), "",
     "Watch Apps in this namespace only, or in these (comma-separated: a,b; one list-watch "
     "each); default: $WATCH_NAMESPACE, else all namespaces."},
    {"max-concurrent-reconciles", K_INT, F(max_concurrent_reconciles), "1",
     "Number of Apps reconciled in parallel (1..1024)."},
    {"zap-log-level", K_LEVEL, F(log_level), "info",
     "Log verbosity: debug, info, warn, error, or an integer N > 0 for logr's V(N) (1 is debug, "
     "larger is more verbose)."},
    {"zap-encoder", K_FORMAT, F(log_format), "json", "Log encoding: json or console."},
    {"zap-devel", K_BOOL, F(zap_devel), "false",
     "Development logging: console encoder, debug level, stack traces from warn (explicit "
     "--zap-* flags win)."},
    {"zap-stacktrace-level", K_STACKLEVEL, F(stacktrace_level), "error",
     "Level at and above which lines carry a stack trace: info, warn, error or panic (none)."},
    {"zap-time-encoding", K_TIMEENC, F(time_encoding), "",
     "Time encoding: epoch, millis, nano, iso8601, rfc3339 or rfc3339nano; default RFC 3339 "
     "with microseconds."},
    {"log-level", K_LEVEL, F(log_level), "info", "Alias of --zap-log-level."},
    {"log-format", K_FORMAT, F(log_format), "json", "Alias of --zap-encoder."},
    {"version", K_BOOL, F(show_version), "false", "Print the version and exit."},
    {"help", K_BOOL, F(show_help), "false", "Print this help and exit."},
    {"tracing", K_BOOL, F(tracing), "false",
     "Export OpenTelemetry traces over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (default "
     "http://localhost:4318); also on when that variable is set. The other OTEL_* variables "
     "apply (docs/observability.md)."},
    {"shard-ring", K_LABEL, F(shard_ring), "",
     "Run as one replica of this shard ring: every replica with the same ring reconciles its own "
     "part of the namespaces and caches only those (docs/sharding.md); excludes --leader-elect."},
    {"shards", K_SHARDS, F(shards), "auto",
     "With --shard-ring: auto (take a part as soon as the ring is seen), or N, the replicas "
     "expected: a replica takes its first part once N are in the ring, or after a lease "
     "duration, so the first one up never caches everything."},
    {"shard-key", K_SHARDKEY, F(shard_by_uid), "namespace",
     "With --shard-ring: what splits the Apps, namespace (an App and its children always land "
     "together) or uid (for Apps in one or few namespaces: each App by its uid, its children "
     "kept by their owner's uid, which every replica receives in full; docs/sharding.md)."},
    {"shard-namespace-selector", K_STRING, F(shard_namespace_selector), "",
     "With --shard-ring: a label selector for the namespaces the replicas split evenly (those "
     "that hold Apps); default: every namespace counts."},
    {"debug-endpoints", K_BOOL, F(debug_endpoints), "false",
     "Serve /debug/informers (every informer's counters, JSON) and /debug/heap (malloc_info) "
     "on the health probe address."},
};

#undef F

/* refuse writes the reason into msg and returns -1. */
static int refuse(char *msg, size_t size, const char *fmt, ...) KCR_PRINTF(3, 4);

static int refuse(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (size > 0) {
    vsnprintf(msg, size, fmt, ap);
  }
  va_end(ap);
  return -1;
}

/* parse_bool reads Go's strconv.ParseBool spellings. Returns 0 or -1. */
static int parse_bool(const char *s, bool *out) {
  static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
  static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (!strcmp(s, yes[i])) {
      *out = true;
      return 0;
    }
    if (!strcmp(s, no[i])) {
      *out = false;
      return 0;
    }
  }
  return -1;
}

/* parse_port reads a decimal port 0..65535 of exactly len bytes. */
static bool parse_port(const char *s, size_t len) {
  long v = 0;
  if (len == 0 || len > 5) {
    return false;
  }
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') {
      return false;
    }
    v = v * 10 + (s[i] - '0');
  }
  return v <= 65535;
}

bool kop_valid_address(const char *addr) {
  const char *colon;
  if (!addr) {
    return false;
  }
  if (!strcmp(addr, "0")) {
    return true;
  }
  if (addr[0] == '[') {
    const char *end = strchr(addr, ']');
    if (!end || end == addr + 1 || end[1] != ':') {
      return false;
    }
    for (const char *p = addr + 1; p < end; p++) {
      if (!strchr("0123456789abcdefABCDEF:.%", *p)) {
        return false;
      }
    }
    return parse_port(end + 2, strlen(end + 2));
  }
  colon = strrchr(addr, ':');
  if (!colon || memchr(addr, ':', (size_t)(colon - addr))) {
    return false; /* no port, or an unbracketed IPv6 address */
  }
  for (const char *p = addr; p < colon; p++) {
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *p)) {
      return false;
    }
  }
  return parse_port(colon + 1, strlen(colon + 1));
}

/* label_ok checks one RFC 1123 label of len bytes: [a-z0-9]([-a-z0-9]*[a-z0-9])?. */
static bool label_ok(const char *s, size_t len) {
  if (len == 0 || len > 63 || s[0] == '-' || s[len - 1] == '-') {
    return false;
  }
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      return false;
    }
  }
  return true;
}

bool kop_valid_dns_label(const char *s) {
  return s && label_ok(s, strlen(s));
}

bool kop_valid_dns_subdomain(const char *s) {
  size_t len;
  if (!s || (len = strlen(s)) == 0 || len > 253) {
    return false;
  }
  for (const char *p = s;;) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (!label_ok(p, n)) {
      return false;
    }
    if (!dot) {
      return true;
    }
    p = dot + 1;
  }
}

/* The --zap-time-encoding names; "" (the default) is kcr's RFC 3339 with microseconds. */
static const struct {
  const char *name;
  kcr_log_time_encoding enc;
} time_encodings[] = {
    {"", KCR_LOG_TIME_RFC3339_MICRO},          {"epoch", KCR_LOG_TIME_EPOCH},
    {"millis", KCR_LOG_TIME_MILLIS},           {"nano", KCR_LOG_TIME_NANO},
    {"iso8601", KCR_LOG_TIME_ISO8601},         {"rfc3339", KCR_LOG_TIME_RFC3339},
    {"rfc3339nano", KCR_LOG_TIME_RFC3339NANO},
};

/*
 * parse_level reads a level name: debug, info, warn, error, trace (not for
 * stack traces), and panic for stack traces only (it maps to error; the
 * caller turns stack traces off). Returns 0 or -1.
 */
static int parse_level(const char *s, bool stacktrace, kcr_log_level *out) {
  static const struct {
    const char *name;
    kcr_log_level level;
  } names[] = {{"debug", KCR_LOG_DEBUG},
               {"info", KCR_LOG_INFO},
               {"warn", KCR_LOG_WARN},
               {"error", KCR_LOG_ERROR},
               {"trace", KCR_LOG_TRACE}};
  if (stacktrace && !strcmp(s, "panic")) {
    *out = KCR_LOG_ERROR;
    return 0;
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (!strcmp(s, names[i].name) && (!stacktrace || names[i].level != KCR_LOG_TRACE)) {
      *out = names[i].level;
      return 0;
    }
  }
  return -1;
}

/* set_value stores value into the field of def, checking it. 0 or -1 with msg. */
int kop_parse_namespaces(const char *value, kop_flags *out, const char *origin, char *msg,
                         size_t size) {
  size_t used = 0, len = strlen(value);
  const char *p = value;
  out->watch_namespace = NULL;
  out->watch_namespaces_len = 0;
  if (!*value) {
    return 0; /* every namespace */
  }
  if (len >= sizeof out->watch_namespaces_buf) {
    return refuse(msg, size, "invalid value for %s: too long (%zu bytes; at most %zu)", origin, len,
                  sizeof out->watch_namespaces_buf - 1);
  }
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    char *name = out->watch_namespaces_buf + used;
    memcpy(name, p, n);
    name[n] = '\0';
    used += n + 1;
    if (!*name) {
      return refuse(msg, size,
                    "invalid value \"%s\" for %s: an empty namespace in the list (want a or "
                    "a,b; \"\" alone means all namespaces)",
                    value, origin);
    }
    if (!kop_valid_dns_label(name)) {
      return refuse(msg, size,
                    "invalid namespace \"%s\" for %s: want a DNS label (lower-case letters, digits "
                    "and '-', at most 63)",
                    name, origin);
    }
    for (size_t i = 0; i < out->watch_namespaces_len; i++) {
      if (!strcmp(out->watch_namespaces[i], name)) {
        return refuse(msg, size, "invalid value \"%s\" for %s: namespace \"%s\" is given twice",
                      value, origin, name);
      }
    }
    if (out->watch_namespaces_len == KOP_MAX_NAMESPACES) {
      return refuse(msg, size, "invalid value for %s: more than %d namespaces", origin,
                    KOP_MAX_NAMESPACES);
    }
    out->watch_namespaces[out->watch_namespaces_len++] = name;
    if (!comma) {
      break;
    }
    p = comma + 1;
  }
  out->watch_namespace = value;
  return 0;
}

static int set_value(kop_flags *out, const flag_def *def, const char *value, const char *origin,
                     char *msg, size_t size) {
  char *field = (char *)out + def->offset;
  switch (def->kind) {
  case K_STRING:
    *(const char **)(void *)field = *value ? value : NULL;
    return 0;
  case K_BOOL:
    if (parse_bool(value, (bool *)(void *)field) < 0) {
      return refuse(msg, size, "invalid boolean value \"%s\" for %s: want true or false", value,
                    origin);
    }
    return 0;
  case K_INT: {
    char *end = NULL;
    long v;
    errno = 0;
    v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < 1 || v > KOP_MAX_CONCURRENT_RECONCILES) {
      return refuse(msg, size, "invalid value \"%s\" for %s: want an integer in 1..%d", value,
                    origin, KOP_MAX_CONCURRENT_RECONCILES);
    }
    *(int *)(void *)field = (int)v;
    return 0;
  }
  case K_LEVEL: {
    char *end = NULL;
    long v;
    if (parse_level(value, false, (kcr_log_level *)(void *)field) == 0) {
      return 0;
    }
    errno = 0;
    v = value[0] >= '0' && value[0] <= '9' ? strtol(value, &end, 10) : -1;
    if (errno || !end || *end || v < 1 || v > KOP_MAX_VERBOSITY) {
      return refuse(msg, size,
                    "invalid value \"%s\" for %s: want debug, info, warn, error, or an integer "
                    "verbosity in 1..%d",
                    value, origin, KOP_MAX_VERBOSITY);
    }
    *(kcr_log_level *)(void *)field = KCR_LOG_V(v);
    return 0;
  }
  case K_STACKLEVEL:
    if (parse_level(value, true, (kcr_log_level *)(void *)field) < 0) {
      return refuse(msg, size, "invalid value \"%s\" for %s: want info, warn, error or panic",
                    value, origin);
    }
    out->stacktrace = strcmp(value, "panic") != 0;
    return 0;
  case K_TIMEENC:
    for (size_t i = 0; i < sizeof time_encodings / sizeof time_encodings[0]; i++) {
      if (!strcmp(value, time_encodings[i].name)) {
        *(kcr_log_time_encoding *)(void *)field = time_encodings[i].enc;
        return 0;
      }
    }
    return refuse(msg, size,
                  "invalid value \"%s\" for %s: want epoch, millis, nano, iso8601, rfc3339 or "
                  "rfc3339nano",
                  value, origin);
  case K_FORMAT:
    if (!strcmp(value, "json")) {
      *(kcr_log_format *)(void *)field = KCR_LOG_FORMAT_JSON;
    } else if (!strcmp(value, "console")) {
      *(kcr_log_format *)(void *)field = KCR_LOG_FORMAT_CONSOLE;
    } else {
      return refuse(msg, size, "invalid value \"%s\" for %s: want json or console", value, origin);
    }
    return 0;
  case K_ADDR:
    if (!kop_valid_address(value)) {
      return refuse(msg, size,
                    "invalid address \"%s\" for %s: want HOST:PORT, :PORT, [IPv6]:PORT or 0 (off)",
                    value, origin);
    }
    *(const char **)(void *)field = value;
    return 0;
  case K_LABEL:
    if (*value && !kop_valid_dns_label(value)) {
      return refuse(msg, size,
                    "invalid %s \"%s\" for %s: want a DNS label (lower-case letters, digits "
                    "and '-', at most 63)",
                    def->offset == offsetof(kop_flags, shard_ring) ? "ring name" : "namespace",
                    value, origin);
    }
    *(const char **)(void *)field = *value ? value : NULL;
    return 0;
  case K_NSLIST:
    return kop_parse_namespaces(value, out, origin, msg, size);
  case K_SHARDS: {
    char *end = NULL;
    long v;
    if (!strcmp(value, "auto")) {
      *(int *)(void *)field = 0;
      return 0;
    }
    errno = 0;
    v = value[0] >= '0' && value[0] <= '9' ? strtol(value, &end, 10) : -1;
    if (errno || !end || *end || v < 1 || v > KOP_MAX_SHARDS) {
      return refuse(msg, size, "invalid value \"%s\" for %s: want auto or an integer in 1..%d",
                    value, origin, KOP_MAX_SHARDS);
    }
    *(int *)(void *)field = (int)v;
    return 0;
  }
  case K_SHARDKEY:
    if (strcmp(value, "namespace") != 0 && strcmp(value, "uid") != 0) {
      return refuse(msg, size, "invalid value \"%s\" for %s: want namespace or uid", value, origin);
    }
    *(bool *)(void *)field = strcmp(value, "uid") == 0;
    return 0;
  case K_SUBDOMAIN:
    if (!kop_valid_dns_subdomain(value)) {
      return refuse(msg, size,
                    "invalid name \"%s\" for %s: want a DNS subdomain (lower-case letters, digits, "
                    "'-' and '.', at most 253)",
                    value, origin);
    }
    *(const char **)(void *)field = value;
    return 0;
  }
  return refuse(msg, size, "internal error: flag %s", def->name);
}

/* getenv_in finds NAME in env, NULL when absent. */
static const char *getenv_in(char *const env[], const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; env && env[i]; i++) {
    if (!strncmp(env[i], name, n) && env[i][n] == '=') {
      return env[i] + n + 1;
    }
  }
  return NULL;
}

/* find_flag looks a flag up by name (len bytes). */
static const flag_def *find_flag(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof flag_defs / sizeof flag_defs[0]; i++) {
    if (strlen(flag_defs[i].name) == len && !strncmp(flag_defs[i].name, name, len)) {
      return &flag_defs[i];
    }
  }
  return NULL;
}

int kop_flags_parse(int argc, char *const argv[], char *const env[], kop_flags *out, char *msg,
                    size_t msg_size) {
  bool namespace_given = false, level_given = false, encoder_given = false,
       stacktrace_given = false;
  const char *wn;
  char origin[96];
  memset(out, 0, sizeof *out);
  if (msg_size > 0) {
    msg[0] = '\0';
  }
  for (size_t i = 0; i < sizeof flag_defs / sizeof flag_defs[0]; i++) {
    snprintf(origin, sizeof origin, "--%s", flag_defs[i].name);
    if (set_value(out, &flag_defs[i], flag_defs[i].defval, origin, msg, msg_size) < 0) {
      return -1;
    }
  }
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const char *name, *eq, *value;
    const flag_def *def;
    size_t len;
    if (!strcmp(arg, "--")) {
      if (i + 1 < argc) {
        return refuse(msg, msg_size, "unexpected argument \"%s\": kcr-operator takes only flags",
                      argv[i + 1]);
      }
      break;
    }
    if (arg[0] != '-' || arg[1] == '\0') {
      return refuse(msg, msg_size, "unexpected argument \"%s\": kcr-operator takes only flags",
                    arg);
    }
    name = arg + (arg[1] == '-' ? 2 : 1);
    if (!strcmp(name, "h")) {
      out->show_help = true;
      continue;
    }
    eq = strchr(name, '=');
    len = eq ? (size_t)(eq - name) : strlen(name);
    def = find_flag(name, len);
    if (!def) {
      return refuse(msg, msg_size, "unknown flag: --%.*s", (int)len, name);
    }
    snprintf(origin, sizeof origin, "--%s", def->name);
    if (eq) {
      value = eq + 1;
    } else if (def->kind == K_BOOL) {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return refuse(msg, msg_size, "flag needs an argument: --%s", def->name);
    }
    if ((def->kind == K_STRING || def->kind == K_TIMEENC) && *value == '\0') {
      return refuse(msg, msg_size, "flag needs a non-empty argument: --%s", def->name);
    }
    if (set_value(out, def, value, origin, msg, msg_size) < 0) {
      return -1;
    }
    namespace_given |= def->offset == offsetof(kop_flags, watch_namespace);
    level_given |= def->offset == offsetof(kop_flags, log_level);
    encoder_given |= def->offset == offsetof(kop_flags, log_format);
    stacktrace_given |= def->offset == offsetof(kop_flags, stacktrace_level);
  }
  /* --zap-devel changes the defaults only: a flag given explicitly wins. */
  if (out->zap_devel) {
    if (!level_given) {
      out->log_level = KCR_LOG_DEBUG;
    }
    if (!encoder_given) {
      out->log_format = KCR_LOG_FORMAT_CONSOLE;
    }
    if (!stacktrace_given) {
      out->stacktrace = true;
      out->stacktrace_level = KCR_LOG_WARN;
    }
  }
  if (out->shard_ring && strlen(out->shard_ring) > KOP_MAX_SHARD_RING) {
    return refuse(msg, msg_size,
                  "invalid value \"%s\" for --shard-ring: at most %d characters (it prefixes "
                  "each replica's Lease name)",
                  out->shard_ring, KOP_MAX_SHARD_RING);
  }
  if (out->shard_ring && out->leader_elect) {
    return refuse(msg, msg_size,
                  "--shard-ring and --leader-elect exclude each other: sharded, every replica "
                  "reconciles its own part; leave leader election off");
  }
  if (!out->shard_ring && out->shard_namespace_selector) {
    return refuse(msg, msg_size, "--shard-namespace-selector needs --shard-ring");
  }
  if (!out->shard_ring && out->shard_by_uid) {
    return refuse(msg, msg_size, "--shard-key=uid needs --shard-ring");
  }
  if (out->shard_by_uid && out->shard_namespace_selector) {
    return refuse(msg, msg_size,
                  "--shard-namespace-selector counts namespaces: it is for --shard-key=namespace, "
                  "not uid");
  }
  if (!out->shard_ring && out->shards) {
    return refuse(msg, msg_size, "--shards=%d needs --shard-ring", out->shards);
  }
  wn = getenv_in(env, "WATCH_NAMESPACE");
  /* Comma-separated, as kubebuilder's namespaced mode and operator-sdk read it. */
  if (!namespace_given && wn) {
    if (set_value(out, find_flag("namespace", 9), wn, "environment variable WATCH_NAMESPACE", msg,
                  msg_size) < 0) {
      return -1;
    }
  }
  return 0;
}

void kop_flags_log_options(const kop_flags *flags, kcr_log_options *out) {
  memset(out, 0, sizeof *out);
  out->format = flags->log_format;
  out->time_encoding = flags->time_encoding;
  out->level = flags->log_level;
  out->stacktrace = flags->stacktrace;
  out->stacktrace_level = flags->stacktrace_level;
  out->fd = 2;
}

const char *kop_flags_name(size_t i) {
  return i < sizeof flag_defs / sizeof flag_defs[0] ? flag_defs[i].name : NULL;
}

void kop_flags_usage(FILE *f, const char *prog) {
  fprintf(f,
          "Usage: %s [flags]\n\n"
          "kcr-operator runs the App operator (apps.kcr.dev): for each App it keeps a\n"
          "Deployment, an optional Service and ConfigMap, and a directory entry.\n\n"
          "Flags (--flag=value or --flag value):\n",
          prog);
  for (size_t i = 0; i < sizeof flag_defs / sizeof flag_defs[0]; i++) {
    const flag_def *d = &flag_defs[i];
    const char *arg = d->kind == K_BOOL                               ? ""
                      : d->kind == K_INT                              ? " int"
                      : d->kind == K_ADDR                             ? " address"
                      : d->kind == K_FORMAT                           ? " encoder"
                      : d->kind == K_LEVEL || d->kind == K_STACKLEVEL ? " level"
                      : d->kind == K_TIMEENC                          ? " encoding"
                      : d->kind == K_SHARDS                           ? " auto|N"
                      : d->kind == K_SHARDKEY                         ? " namespace|uid"
                                                                      : " string";
    fprintf(f, "  --%s%s\n        %s", d->name, arg, d->help);
    if (*d->defval && d->kind != K_BOOL) {
      fprintf(f, " (default \"%s\")", d->defval);
    } else if (d->kind == K_BOOL && !strcmp(d->defval, "true")) {
      fprintf(f, " (default true)");
    }
    fputc('\n', f);
  }
  fprintf(f, "\nEnvironment:\n"
             "  WATCH_NAMESPACE   namespace(s) to watch when --namespace is not given: a or a,b\n"
             "                    (\"\": all)\n"
             "  KUBECONFIG        kubeconfig files to merge when --kubeconfig is not given\n"
             "\nExit status: 0 after --help or --version, 2 for bad flags or environment,\n"
             "1 when the operator fails.\n");
}
