/* SPDX-License-Identifier: MIT */
/*
 * main.c: the kcr-operator executable's entry point.
 *
 * DESIGN: main parses flags and environment (flags.c: bad ones exit 2 with one
 * line on stderr), configures libkcr's structured logger as the --zap-* flags
 * ask (kcr/log.h: JSON or console lines on stderr, credentials redacted; the
 * library's own lines, the controller's reconcile lines with their
 * controller/namespace/name/reconcileID fields, and main's all go through it),
 * loads the REST config with controller-runtime's precedence
 * (--kubeconfig, in-cluster, KUBECONFIG, ~/.kube/config), then builds what a
 * kubebuilder main builds: a manager (cache restricted to --namespace when given),
 * the App controller (For App with the generation predicate; Owns Deployment,
 * Service and ConfigMap), and kcr_manager_serve for metrics, probes and leader
 * election (or, with --shard-ring, a shard ring: every replica reconciles the
 * Apps of its part of the namespaces, docs/sharding.md); with --webhook-cert-path, the manager's
 * webhook server with the App's validating, defaulting and conversion webhooks (app/app_webhook.h).
 * The cache holds only the children the operator labels (a label selector on
 * app.kubernetes.io/managed-by=kcr-operator per child kind, the cache's by-object options,
 * controller-runtime's ByObject): its memory does not grow with the ConfigMaps, Deployments and
 * Services of others. The event recorder asks the manager's write fence before each write, as the
 * object client does, so that a leader past its renew deadline sends no Event (the manager's
 * recorder, kcr_manager_event_recorder, which the manager flushes on a graceful stop). Exit codes:
 * 0 after a graceful stop (SIGTERM/SIGINT), 1 on a failure or a lost lease (never a graceful stop
 * then: two leaders must not act at once), 2 on bad flags or environment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "app/app_desired.h"
#include "app/app_webhook.h"
#include "app/reconciler.h"
#include "flags.h"
#include "kcr/config.h"
#include "kcr/log.h"
#include "kcr/manager.h"
#include "kcr/trace.h"

#ifndef KCR_OPERATOR_VERSION
#define KCR_OPERATOR_VERSION KCR_VERSION_STRING
#endif

extern char **environ;

/*
 * operator_namespace: where the operator keeps its directory ConfigMap: its own
 * namespace (POD_NAMESPACE, else the service-account file in a Pod), else the
 * leader election namespace, else the kubeconfig context's namespace.
 */
static void operator_namespace(const kop_flags *flags, kcr_rest_config_t *cfg, char *buf,
                               size_t size) {
  const char *env = getenv("POD_NAMESPACE");
  buf[0] = '\0';
  if (env && *env) {
    snprintf(buf, size, "%s", env);
    return;
  }
  if (kcr_service_account_namespace(NULL, buf, size, NULL) == 0)
    return; /* in a Pod: libkcr's one reader of the service-account file */
  snprintf(buf, size, "%s",
           flags->leader_election_namespace && *flags->leader_election_namespace
               ? flags->leader_election_namespace
               : kcr_rest_config_namespace(cfg));
}

/*
 * scope_children restricts the cache of each child kind to the objects the
 * operator labels, before the controller's Owns makes their informers. The list
 * and watch carry the selector, so the API server filters: nothing else is
 * transferred or stored.
 */
static int scope_children(kcr_manager_t *m, const kcr_gvk *kinds, size_t n, kcr_error_t *err) {
  kcr_cache_by_object bo;
  int rc = 0;
  memset(&bo, 0, sizeof(bo));
  bo.label_selector = KOP_APP_LABEL_MANAGED_BY "=" KOP_APP_MANAGED_BY;
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = kcr_cache_set_by_object(kcr_manager_cache(m), &kinds[i], &bo, err);
  return rc;
}

/* setup_tracing turns tracing on with --tracing or an OTEL_* endpoint (kcr/trace.h);
 * the manager then exports to the collector. */
static void setup_tracing(const kop_flags *flags) {
  kcr_trace_options o;
  memset(&o, 0, sizeof(o));
  if (kcr_trace_options_from_env(&o) != 0)
    kcr_log(KCR_LOG_WARN, "setup",
            "tracing: an OTEL_TRACES_SAMPLER* value is not understood; "
            "using parentbased_always_on");
  if (flags->tracing) {
    const char *off = getenv("OTEL_SDK_DISABLED");
    o.enabled = !(off && strcasecmp(off, "true") == 0);
  }
  if (!o.service_name[0])
    snprintf(o.service_name, sizeof(o.service_name), "%s", "kcr-operator");
  kcr_trace_configure(&o);
  if (o.enabled)
    kcr_log(KCR_LOG_INFO, "setup", "tracing: exporting to %s",
            o.traces_endpoint[0] ? o.traces_endpoint
                                 : (o.endpoint[0] ? o.endpoint : "http://localhost:4318"));
}

/*
 * reconcile_spans wraps the App's reconcile with two V(2) lines, its start and
 * its end on the monotonic clock (one clock for every process of the
 * machine), so that the logs of several replicas show whether two of them
 * ever reconciled one App at once (test/chaos/sharded.py checks that).
 */
static int reconcile_spans(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                           kcr_result *res, void *data) {
  struct timespec t0, t1;
  int rc;
  if (!kcr_log_enabled(KCR_LOG_V(2)))
    return kop_app_reconcile(ctx, req, res, data);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  kcr_reconcile_log(ctx, KCR_LOG_V(2), "reconcile start mono=%lld",
                    (long long)t0.tv_sec * 1000000000LL + t0.tv_nsec);
  rc = kop_app_reconcile(ctx, req, res, data);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  kcr_reconcile_log(ctx, KCR_LOG_V(2), "reconcile end mono=%lld rc=%d",
                    (long long)t1.tv_sec * 1000000000LL + t1.tv_nsec, rc);
  return rc;
}

/* run builds the manager and the App controller and runs them. Returns the exit code. */
static int run(const kop_flags *flags, kcr_rest_config_t *cfg) {
  static kop_app_reconciler rec;
  static char dir_ns[256];
  const kcr_gvk app = {KOP_APP_GROUP, KOP_APP_VERSION, KOP_APP_KIND};
  const kcr_gvk children[] = {
      {"apps", "v1", "Deployment"}, {"", "v1", "Service"}, {"", "v1", "ConfigMap"}};
  kcr_manager_options mo;
  kcr_manager_serving_options so;
  kcr_controller_options co;
  kcr_manager_t *m = NULL;
  kcr_scheme_t *scheme = NULL;
  kop_app_directory_memo *memo = NULL;
  kcr_controller_t *c;
  kcr_error_t err;
  int rc;

  operator_namespace(flags, cfg, dir_ns, sizeof(dir_ns));
  rec.directory_namespace = dir_ns;
  memset(&mo, 0, sizeof(mo));
  mo.config = cfg;
  if (flags->watch_namespaces_len > 1) { /* --namespace a,b: one list-watch per namespace */
    mo.default_namespaces = flags->watch_namespaces;
    mo.default_namespaces_len = flags->watch_namespaces_len;
  } else {
    mo.default_namespace = flags->watch_namespace;
  }
  if (flags->shard_ring) { /* every replica reconciles its part (docs/sharding.md) */
    mo.sharding.ring = flags->shard_ring;
    mo.sharding.lease_namespace = dir_ns;
    mo.sharding.expected_members = (size_t)flags->shards;
    mo.sharding.namespace_selector = flags->shard_namespace_selector;
    mo.sharding.key = flags->shard_by_uid ? KCR_SHARD_KEY_UID : KCR_SHARD_KEY_NAMESPACE;
  }
  kcr_error_clear(&err);
  rc = kcr_manager_create(&mo, &m, &err);
  if (rc == 0) {
    rec.shard = kcr_manager_shard_member(m);
    rec.events = kcr_manager_event_recorder(m, "kcr.dev/kcr-operator");
    if (!rec.events)
      rc = kcr_error_set(&err, KCR_ENOMEM, "no event recorder");
    rec.direct = kcr_manager_rest_client(m);
  }
  if (rc == 0)
    rc = kop_app_scheme_create(&scheme, &err);
  if (rc == 0 && (rc = kop_app_directory_memo_create(&memo)) != 0)
    kcr_error_set(&err, rc, "out of memory");
  rec.scheme = scheme;
  rec.memo = memo;
  if (rc == 0)
    rc = scope_children(m, children, sizeof(children) / sizeof(children[0]), &err);
  if (rc == 0) {
    memset(&co, 0, sizeof(co));
    co.name = "app";
    co.reconcile = reconcile_spans;
    co.data = &rec;
    co.max_concurrent_reconciles = flags->max_concurrent_reconciles;
    rc = kcr_manager_add_controller(m, &co, &c, &err);
  }
  if (rc == 0)
    rc = kcr_controller_for(c, &app, kcr_predicate_generation_changed(), &err);
  for (size_t i = 0; i < sizeof(children) / sizeof(children[0]) && rc == 0; i++)
    rc = kcr_controller_owns(c, &children[i], NULL, &err);
  if (rc == 0) {
    memset(&so, 0, sizeof(so));
    so.metrics_bind_address = flags->metrics_bind_address;
    so.metrics_secure = flags->metrics_secure;
    so.metrics_cert_dir = flags->metrics_cert_path;
    so.metrics_cert_name = flags->metrics_cert_name;
    so.metrics_cert_key = flags->metrics_cert_key;
    if (flags->webhook_cert_path) {
      so.webhook_bind_address = flags->webhook_bind_address;
      so.webhook_cert_dir = flags->webhook_cert_path;
      so.webhook_cert_name = flags->webhook_cert_name;
      so.webhook_cert_key = flags->webhook_cert_key;
    }
    so.health_probe_bind_address = flags->health_probe_bind_address;
    so.debug_endpoints = flags->debug_endpoints;
    so.leader_elect = flags->leader_elect;
    so.leader_election_id = flags->leader_election_id;
    so.leader_election_namespace = flags->leader_election_namespace;
    so.leader_election_release_on_cancel = true;
    rc = kcr_manager_serve(m, &so, &err);
  }
  if (rc == 0 && kcr_manager_webhook_server(m)) {
    rc = kop_app_webhooks_register(kcr_manager_webhook_server(m));
    if (rc)
      kcr_error_set(&err, rc, "registering the App's webhooks: %s", kcr_strerror(rc));
  }
  if (rc) {
    kcr_log(KCR_LOG_ERROR, "setup", "unable to set up the manager: %s", err.message);
    kcr_manager_destroy(m);
    kcr_scheme_destroy(scheme);
    kop_app_directory_memo_destroy(memo);
    kcr_rest_config_unref(cfg);
    return 1;
  }
  kcr_log(KCR_LOG_INFO, "setup", "starting the manager (directory in namespace %s)", dir_ns);
  rc = kcr_manager_run(m, &err);
  if (rc == KCR_ECANCELED) {
    /* The lease was lost: exit at once, without tearing anything down. */
    kcr_log(KCR_LOG_ERROR, "setup", "leader election lost");
    _exit(1);
  }
  if (rc)
    kcr_log(KCR_LOG_ERROR, "setup", "manager stopped: %s", err.message);
  else
    kcr_log(KCR_LOG_INFO, "setup", "manager stopped");
  kcr_manager_destroy(m);
  kcr_scheme_destroy(scheme);
  kop_app_directory_memo_destroy(memo);
  kcr_rest_config_unref(cfg);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  kcr_log_options lo;
  kop_flags flags;
  kcr_config_options copts;
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err;
  char msg[512];

  if (kop_flags_parse(argc, argv, environ, &flags, msg, sizeof msg) < 0) {
    fprintf(stderr, "kcr-operator: %s\nRun 'kcr-operator --help' for usage.\n", msg);
    return 2;
  }
  if (flags.show_help) {
    kop_flags_usage(stdout, "kcr-operator");
    return 0;
  }
  if (flags.show_version) {
    printf("kcr-operator %s (libkcr %s)\n", KCR_OPERATOR_VERSION, kcr_version_string());
    return 0;
  }
  kop_flags_log_options(&flags, &lo);
  kcr_log_configure(&lo);
  if (flags.enable_http2)
    kcr_log(KCR_LOG_WARN, "setup",
            "--enable-http2: HTTP/2 is not served; the metrics and webhook servers offer "
            "http/1.1 only (ALPN), which every Kubernetes client speaks");
  setup_tracing(&flags);

  memset(&copts, 0, sizeof copts);
  copts.kubeconfig = flags.kubeconfig;
  kcr_error_clear(&err);
  if (kcr_rest_config_load(&copts, &cfg, &err) < 0) {
    kcr_log(KCR_LOG_ERROR, "setup", "unable to load the REST config: %s", err.message);
    return 1;
  }
  kcr_log(KCR_LOG_INFO, "setup", "REST config from %s: server %s, namespace %s",
          kcr_rest_config_source(cfg), kcr_rest_config_server(cfg), kcr_rest_config_namespace(cfg));
  kcr_log(KCR_LOG_INFO, "setup",
          "settings: watch namespace %s, leader election %s (lease %s), metrics %s, probes %s, "
          "%d concurrent reconciles",
          flags.watch_namespace ? flags.watch_namespace : "(all)",
          flags.leader_elect ? "on" : "off", flags.leader_election_id, flags.metrics_bind_address,
          flags.health_probe_bind_address, flags.max_concurrent_reconciles);
  if (flags.webhook_cert_path && strcmp(flags.webhook_bind_address, "0") != 0)
    kcr_log(KCR_LOG_INFO, "setup", "webhooks %s, %s, %s on %s (certificates in %s)",
            KOP_APP_VALIDATE_PATH, KOP_APP_MUTATE_PATH, KOP_APP_CONVERT_PATH,
            flags.webhook_bind_address, flags.webhook_cert_path);
  else
    kcr_log(KCR_LOG_INFO, "setup", "webhooks off (%s)",
            flags.webhook_cert_path ? "--webhook-bind-address=0" : "no --webhook-cert-path");
  return run(&flags, cfg);
}
