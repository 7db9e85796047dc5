/* SPDX-License-Identifier: MIT */
/*
 * serving.c: kcr_manager_serve, the glue controller-runtime's manager does for
 * its users: a metrics server, a probes server and a Lease elector, plugged into
 * the manager through its public seams (runnables and the leader-elector hook).
 *
 * - The servers are one SERVER runnable (started first, stopped last). /metrics
 *   serves the manager's registry, on which the client, the controllers, their
 *   queues and the elector registered their own series; nothing here converts
 *   anything into metrics.
 * - Webhooks (webhook_bind_address): the kcr_webhook_server_t exists from
 *   kcr_manager_serve on, so handlers can be registered before run; it starts
 *   and stops with the other servers and is freed with the state.
 * - Secure metrics (metrics_secure): the metrics server speaks HTTPS and its
 *   auth hook is a kcr_auth_t over the manager's REST client, made when the
 *   servers start and freed after the metrics server is gone (the hook runs on
 *   the server's worker thread until then).
 * - The state hangs off the manager through kcr__manager_set_serving, which
 *   frees it with serving_free; manager.c calls nothing here.
 * - "informer-sync" on /readyz is a flag check that a BACKGROUND runnable sets:
 *   background runnables start after the caches have synced.
 * - Debug endpoints (debug_endpoints): the probes server's handler answers
 *   GET /debug/informers (kcr_cache_diagnostics of the manager's cache) and
 *   GET /debug/heap (glibc's malloc_info XML) on its worker thread; off by
 *   default, since both tell more about the process than a probe should.
 * - The elector's fence (kcr_leader_election_fence_remaining) is the manager's
 *   write fence: past the renew deadline no write and no reconcile starts.
 * - The elector's started callback calls kcr_manager_leader_elected; a lost lease
 *   calls kcr_manager_leader_lost, which makes kcr_manager_run return at once
 *   (controller-runtime exits the process; kcr leaves the exit to main, which
 *   must exit non-zero). A graceful stop releases the lease when asked to.
 */
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "kcr/auth.h"
#include "kcr/cache.h"
#include "kcr/leaderelection.h"
#include "kcr/log.h"
#include "kcr/manager.h"
#include "kcr/server.h"
#include "kcr/webhook.h"
#include "manager/manager_internal.h"
#include "util/alloc.h"

typedef struct serving {
  kcr_manager_t *m;
  char *metrics_addr, *probe_addr;
  bool metrics_secure;
  bool debug_endpoints;
  char *cert_dir, *cert_name, *cert_key;
  kcr_auth_t *auth;               /* between server start and stop, with metrics_secure */
  kcr_webhook_server_t *webhooks; /* from kcr_manager_serve, with a webhook address */
  kcr_leader_election_options le_opts;
  char *lease_name, *lease_ns;
  bool leader_elect;
  kcr_leader_election_t *le;                /* created at elector start, destroyed with s (a
                                               probe may read it until the servers stop) */
  _Atomic(kcr_leader_election_t *) le_live; /* le, for the probe on the server's worker */
  kcr_server_t *metrics, *probes;           /* between server start and stop */
  kcr_server_check_t *synced;               /* on the probes server */
} serving_t;

static bool off(const char *addr) {
  return !addr || !*addr || strcmp(addr, "0") == 0;
}

/* on_leader_check: /healthz's leader-election check (the server's worker thread). */
static int on_leader_check(void *data) {
  serving_t *s = data;
  kcr_leader_election_t *le = atomic_load(&s->le_live);
  return le ? kcr_leader_election_check(le) : 0;
}

/* ---- debug endpoints (the probes server's worker thread) ---- */

static void debug_informers(serving_t *s, kcr_server_response *resp) {
  json_t *arr = kcr_cache_diagnostics(kcr_manager_cache(s->m));
  char *text = arr ? json_dumps(arr, JSON_INDENT(1)) : NULL;
  json_decref(arr);
  if (!text || kcr_buf_appends(&resp->body, text) != 0 || kcr_buf_appendc(&resp->body, '\n') != 0)
    resp->status = 500;
  kcr__free(text); /* jansson allocates through kcr's allocator */
}

static void debug_heap(kcr_server_response *resp) {
#if defined(__GLIBC__)
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  int rc = f ? malloc_info(0, f) : -1;
  if (f)
    fclose(f);
  resp->content_type = "application/xml";
  if (rc != 0 || !text || kcr_buf_append(&resp->body, text, len) != 0)
    resp->status = 500;
  free(text); /* open_memstream's buffer: the C library's malloc */
#else
  resp->status = 501;
  resp->content_type = "text/plain";
  kcr_buf_appends(&resp->body, "no allocator statistics on this C library\n");
#endif
}

static void on_debug(void *data, const kcr_server_request *req, kcr_server_response *resp) {
  serving_t *s = data;
  bool informers = strcmp(req->path, "/debug/informers") == 0;
  bool heap = strcmp(req->path, "/debug/heap") == 0;
  if (!informers && !heap) {
    resp->status = 404;
    resp->content_type = "text/plain";
    kcr_buf_appends(&resp->body, "404 page not found\n");
    return;
  }
  if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
    resp->status = 405;
    resp->content_type = "text/plain";
    kcr_buf_appends(&resp->body, "405 method not allowed\n");
    return;
  }
  if (informers)
    debug_informers(s, resp);
  else
    debug_heap(resp);
}

/* ---- the metrics server's extra handlers (its worker thread) ---- */

static bool path_matches(const char *pattern, const char *path) {
  size_t n = strlen(pattern);
  if (n > 1 && pattern[n - 1] == '/')
    return strncmp(pattern, path, n) == 0;
  return strcmp(pattern, path) == 0;
}

/* on_extra answers a metrics-server path other than /metrics: the longest
 * pattern that matches wins (as Go's ServeMux), else 404. With metrics_secure
 * the server let only an authorized request through (handler_auth). */
static void on_extra(void *data, const kcr_server_request *req, kcr_server_response *resp) {
  serving_t *s = data;
  size_t n, best_len = 0;
  const kcr__manager_extra_handler *h = kcr__manager_extra_handlers(s->m, &n), *best = NULL;
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(h[i].path);
    if (l > best_len && path_matches(h[i].path, req->path)) {
      best = &h[i];
      best_len = l;
    }
  }
  if (!best) {
    resp->status = 404;
    resp->content_type = "text/plain";
    kcr_buf_appends(&resp->body, "404 page not found\n");
    return;
  }
  best->cb(best->data, req, resp);
}

/* add_user_checks registers the checks of kcr_manager_add_*_check. */
static int add_user_checks(serving_t *s, kcr_error_t *err) {
  size_t n;
  const kcr__manager_check *c = kcr__manager_checks(s->m, &n);
  for (size_t i = 0; i < n; i++) {
    int rc = kcr_server_add_check_err(s->probes, c[i].kind, c[i].name, c[i].cb, c[i].data, NULL);
    if (rc)
      return kcr_error_set(err, rc, "manager: cannot register the %s check %s: %s",
                           c[i].kind == KCR_PROBE_HEALTHZ ? "healthz" : "readyz", c[i].name,
                           kcr_strerror(rc));
  }
  return 0;
}

/* ---- the servers runnable ---- */

static int on_servers_start(void *data, kcr_error_t *err) {
  serving_t *s = data;
  kcr_metrics_registry_t *reg = kcr_manager_metrics(s->m);
  kcr_loop_t *loop = kcr_client_loop(kcr_manager_rest_client(s->m));
  kcr_server_options so;
  int rc;

  if (!off(s->metrics_addr)) {
    memset(&so, 0, sizeof(so));
    so.loop = loop;
    so.bind_address = s->metrics_addr;
    so.metrics = reg;
    so.defer_accept_s = KCR_SERVER_DEFER_ACCEPT_S;
    {
      size_t nextra;
      kcr__manager_extra_handlers(s->m, &nextra);
      if (nextra) {
        so.handler = on_extra;
        so.handler_data = s;
        so.handler_auth = s->metrics_secure;
      }
    }
    if (s->metrics_secure) {
      kcr_auth_options ao;
      memset(&ao, 0, sizeof(ao));
      ao.client = kcr_manager_rest_client(s->m);
      ao.metrics = reg;
      if ((rc = kcr_auth_create(&ao, &s->auth, err)) != 0)
        goto fail;
      so.tls = 1;
      so.cert_dir = s->cert_dir;
      so.cert_name = s->cert_name;
      so.key_name = s->cert_key;
      so.metrics_auth = kcr_auth_check;
      so.metrics_auth_cached = kcr_auth_cached;
      so.metrics_auth_data = s->auth;
    }
    if ((rc = kcr_server_create(&so, &s->metrics, err)) != 0)
      goto fail;
    kcr_log(KCR_LOG_INFO, "manager", "serving metrics over %s on port %d",
            s->metrics_secure ? "HTTPS (authenticated)" : "HTTP", kcr_server_port(s->metrics));
  }
  if (!off(s->probe_addr)) {
    memset(&so, 0, sizeof(so));
    so.loop = loop;
    so.bind_address = s->probe_addr;
    so.probes = 1;
    so.defer_accept_s = KCR_SERVER_DEFER_ACCEPT_S;
    if (s->debug_endpoints) {
      so.handler = on_debug;
      so.handler_data = s;
      so.max_body_bytes = 1; /* GETs only */
    }
    if ((rc = kcr_server_create(&so, &s->probes, err)) != 0)
      goto fail;
    rc = kcr_server_add_flag_check(s->probes, KCR_PROBE_READYZ, "informer-sync", 0, &s->synced);
    if (rc == 0 && s->leader_elect)
      rc = kcr_server_add_check(s->probes, KCR_PROBE_HEALTHZ, "leaderElection", on_leader_check, s,
                                NULL);
    if (rc) {
      kcr_error_set(err, rc, "manager: cannot register the probes");
      goto fail;
    }
    if ((rc = add_user_checks(s, err)) != 0)
      goto fail;
    kcr_log(KCR_LOG_INFO, "manager", "serving health probes on port %d",
            kcr_server_port(s->probes));
  }
  if (s->webhooks) {
    if ((rc = kcr_webhook_server_start(s->webhooks, loop, err)) != 0)
      goto fail;
    kcr_log(KCR_LOG_INFO, "manager", "serving webhooks on port %d",
            kcr_webhook_server_port(s->webhooks));
  }
  return 0;

fail:
  kcr_webhook_server_stop(s->webhooks);
  kcr_server_destroy(s->metrics);
  kcr_server_destroy(s->probes);
  kcr_auth_destroy(s->auth);
  s->auth = NULL;
  s->metrics = s->probes = NULL;
  s->synced = NULL;
  return rc;
}

static void on_servers_stop(void *data) {
  serving_t *s = data;
  kcr_webhook_server_stop(s->webhooks);
  kcr_server_destroy(s->probes);
  kcr_server_destroy(s->metrics);
  kcr_auth_destroy(s->auth); /* its hook ran on the metrics server's worker */
  s->auth = NULL;
  s->probes = s->metrics = NULL;
  s->synced = NULL;
}

/* on_synced_start: background runnables start once the caches have synced. */
static int on_synced_start(void *data, kcr_error_t *err) {
  serving_t *s = data;
  (void)err;
  if (s->synced)
    kcr_server_check_set(s->synced, 1);
  return 0;
}

/* ---- the elector ---- */

static void on_started_leading(void *data) {
  serving_t *s = data;
  kcr_log(KCR_LOG_INFO, "manager", "became the leader (%s)", kcr_leader_election_identity(s->le));
  kcr_manager_leader_elected(s->m);
}

static void on_stopped_leading(int lost, void *data) {
  serving_t *s = data;
  if (lost) {
    kcr_log(KCR_LOG_ERROR, "manager", "leader election lost: stopping at once");
    kcr_manager_leader_lost(s->m);
  } else {
    kcr_log(KCR_LOG_INFO, "manager", "stopped leading; the lease is released");
  }
}

static void on_new_leader(const char *identity, void *data) {
  (void)data;
  kcr_log(KCR_LOG_INFO, "manager", "new leader observed: %s", *identity ? identity : "(none)");
}

static int on_elector_start(void *data, kcr_manager_t *m, kcr_error_t *err) {
  serving_t *s = data;
  int rc;
  (void)m;
  if (s->le)
    return kcr_error_set(err, KCR_EINVAL, "manager: the elector was started before");
  rc = kcr_leader_election_create(&s->le_opts, &s->le, err);
  if (rc == 0 && (rc = kcr_leader_election_start(s->le, err)) != 0) {
    kcr_leader_election_destroy(s->le);
    s->le = NULL;
  }
  if (rc == 0)
    atomic_store(&s->le_live, s->le);
  return rc;
}

/* on_elector_fence: the manager's write fence (worker threads). Before the
 * elector exists this process does not lead: 0. */
static int64_t on_elector_fence(void *data) {
  serving_t *s = data;
  kcr_leader_election_t *le = atomic_load(&s->le_live);
  return le ? kcr_leader_election_fence_remaining(le) : 0;
}

/* on_elector_stop stops campaigning (releasing the lease if asked); the elector
 * itself is freed with the serving state, after the probes server is gone. */
static void on_elector_stop(void *data) {
  serving_t *s = data;
  if (s->le)
    kcr_leader_election_stop(s->le);
}

/* ---- public ---- */

/* serving_free releases the state (the manager's destroy, through the function
 * handed to kcr__manager_set_serving). */
static void serving_free(void *serving) {
  serving_t *s = serving;
  if (!s)
    return;
  on_servers_stop(s);
  kcr_webhook_server_destroy(s->webhooks);
  on_elector_stop(s);
  atomic_store(&s->le_live, NULL);
  kcr_leader_election_destroy(s->le);
  kcr__free(s->metrics_addr);
  kcr__free(s->probe_addr);
  kcr__free(s->cert_dir);
  kcr__free(s->cert_name);
  kcr__free(s->cert_key);
  kcr__free(s->lease_name);
  kcr__free(s->lease_ns);
  kcr__free(s);
}

static char *dup_opt(const char *v, int *oom) {
  char *d;
  if (!v)
    return NULL;
  d = kcr__strdup(v);
  if (!d)
    *oom = 1;
  return d;
}

int kcr_manager_serve(kcr_manager_t *m, const kcr_manager_serving_options *o, kcr_error_t *err) {
  kcr_runnable servers = {"servers", on_servers_start, on_servers_stop, NULL, KCR_RUNNABLE_SERVER};
  kcr_runnable synced = {"informer-sync-probe", on_synced_start, NULL, NULL,
                         KCR_RUNNABLE_BACKGROUND};
  serving_t *s;
  int oom = 0, rc;

  if (!o)
    return kcr_error_set(err, KCR_EINVAL, "manager: serving options are required");
  if (kcr__manager_serving(m))
    return kcr_error_set(err, KCR_EINVAL, "manager: kcr_manager_serve was called already");
  if (o->leader_elect && (!o->leader_election_id || !*o->leader_election_id))
    return kcr_error_set(err, KCR_EINVAL, "manager: leader election needs an id (the Lease name)");
  s = kcr__calloc(1, sizeof(*s));
  if (!s)
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  s->m = m;
  s->metrics_addr = dup_opt(o->metrics_bind_address, &oom);
  s->probe_addr = dup_opt(o->health_probe_bind_address, &oom);
  s->lease_name = dup_opt(o->leader_election_id, &oom);
  s->lease_ns = dup_opt(o->leader_election_namespace, &oom);
  s->cert_dir = dup_opt(o->metrics_cert_dir, &oom);
  s->cert_name = dup_opt(o->metrics_cert_name, &oom);
  s->cert_key = dup_opt(o->metrics_cert_key, &oom);
  s->metrics_secure = o->metrics_secure;
  s->debug_endpoints = o->debug_endpoints;
  if (!oom && !off(o->webhook_bind_address)) {
    kcr_webhook_server_options wo;
    memset(&wo, 0, sizeof(wo));
    wo.bind_address = o->webhook_bind_address;
    wo.cert_dir = o->webhook_cert_dir;
    wo.cert_name = o->webhook_cert_name;
    wo.key_name = o->webhook_cert_key;
    wo.metrics = kcr_manager_metrics(m);
    if ((rc = kcr_webhook_server_create(&wo, &s->webhooks, err)) != 0) {
      serving_free(s);
      return rc;
    }
  }
  if (oom) {
    serving_free(s);
    return kcr_error_set(err, KCR_ENOMEM, "manager: out of memory");
  }
  s->leader_elect = o->leader_elect;
  if (kcr__manager_set_serving(m, s, serving_free) != 0) {
    serving_free(s);
    return kcr_error_set(err, KCR_EINVAL, "manager: kcr_manager_serve was called already");
  }
  servers.data = s;
  synced.data = s;
  if ((rc = kcr_manager_add_runnable(m, &servers, err)) != 0 ||
      (rc = kcr_manager_add_runnable(m, &synced, err)) != 0)
    return rc;
  if (o->leader_elect) {
    kcr_leader_elector le = {on_elector_start, on_elector_stop, s, on_elector_fence};
    kcr_leader_election_t *probe = NULL;
    memset(&s->le_opts, 0, sizeof(s->le_opts));
    s->le_opts.client = kcr_manager_rest_client(m);
    s->le_opts.lease_name = s->lease_name;
    s->le_opts.lease_namespace = s->lease_ns;
    s->le_opts.lease_duration_ns = o->lease_duration_ns;
    s->le_opts.renew_deadline_ns = o->renew_deadline_ns;
    s->le_opts.retry_period_ns = o->retry_period_ns;
    s->le_opts.release_on_cancel = o->leader_election_release_on_cancel;
    s->le_opts.on_started_leading = on_started_leading;
    s->le_opts.on_stopped_leading = on_stopped_leading;
    s->le_opts.on_new_leader = on_new_leader;
    s->le_opts.callback_data = s;
    /* Validate now (durations, namespace) so a bad flag fails before run; the
     * instance that campaigns is made at start, with the metric. */
    if ((rc = kcr_leader_election_create(&s->le_opts, &probe, err)) != 0)
      return rc;
    kcr_leader_election_destroy(probe);
    s->le_opts.metrics = kcr_manager_metrics(m);
    kcr_manager_set_leader_elector(m, &le);
  }
  return 0;
}

int kcr_manager_metrics_port(kcr_manager_t *m) {
  serving_t *s = kcr__manager_serving(m);
  return s && s->metrics ? kcr_server_port(s->metrics) : 0;
}

kcr_webhook_server_t *kcr_manager_webhook_server(kcr_manager_t *m) {
  serving_t *s = kcr__manager_serving(m);
  return s ? s->webhooks : NULL;
}

int kcr_webhook_for(kcr_manager_t *m, const kcr_scheme_t *s, const kcr_gvk *gvk,
                    const kcr_custom_defaulter *d, const kcr_custom_validator *v,
                    kcr_error_t *err) {
  kcr_webhook_server_t *ws = m ? kcr_manager_webhook_server(m) : NULL;
  if (!ws)
    return kcr_error_set(err, KCR_EINVAL,
                         "webhook: the manager serves no webhooks (kcr_manager_serve with a "
                         "webhook_bind_address first)");
  return kcr_webhook_server_register_typed(ws, s, gvk, d, v, err);
}

int kcr_manager_webhook_port(kcr_manager_t *m) {
  serving_t *s = kcr__manager_serving(m);
  return s ? kcr_webhook_server_port(s->webhooks) : 0;
}

int kcr_manager_probe_port(kcr_manager_t *m) {
  serving_t *s = kcr__manager_serving(m);
  return s && s->probes ? kcr_server_port(s->probes) : 0;
}
