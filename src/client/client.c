/* SPDX-License-Identifier: MIT */
/*
 * client.c: the client object and synchronous requests.
 *
 * A request is built on the calling thread (URL, headers, TLS and credentials
 * applied to a fresh curl easy handle: credentials may need an exec plugin run,
 * which must never happen on the loop), then posted to the loop, which adds it to
 * the shared multi handle; the caller waits on a condition variable until the
 * loop's done callback fires. Connections live in the multi handle's pool, so
 * consecutive requests reuse them and concurrent ones multiplex over HTTP/2.
 *
 * Lifetime of a pending request (struct sync_req): it lives on the caller's stack
 * until it is done AND no posted closure can still reach it. Closures posted for
 * it (start, cancel) hold a reference count; the caller waits for done and for the
 * count to drop to zero before returning. Cancellation tokens keep a list of the
 * requests using them, under the token's mutex.
 *
 * Retries (client-go's rules): a 429 or 5xx answer with an integer Retry-After
 * header, at most max_retries times, sleeping the seconds the server asked for
 * (bounded by 60); GETs are also retried, after a second, when the connection
 * broke before an answer. A request's timeout_ns bounds the whole call: no retry
 * starts after it, and each attempt gets only what is left. Non-2xx answers
 * become a kcr_error_t from their metav1.Status.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "client/apierror_internal.h"
#include "client/client_internal.h"
#include "client/warning_internal.h"
#include "kcr/clock.h"
#include "kcr/log.h"
#include "kcr/trace.h"
#include "util/alloc.h"
#include "util/list.h"

#define DEFAULT_MAX_RESPONSE (256u << 20)
#define DEFAULT_MAX_RETRIES 10
#define MAX_RETRY_AFTER_SECONDS 60
#define CONNECT_TIMEOUT_MS 30000L

struct kcr_cancel {
  pthread_mutex_t mu;
  int fired;                   /* protected by mu: 0, or why: KCR_ECANCELED or KCR_ETIMEDOUT */
  kcr__list_t waiters;         /* protected by mu: the sync_reqs using the token */
  kcr__list_t children;        /* protected by mu: tokens derived from this one */
  kcr_cancel_t *parent;        /* immutable; NULL: none */
  kcr__list_node_t child_link; /* in parent->children; protected by parent->mu */
  kcr_clock_t *clock;          /* immutable, borrowed; NULL when deadline is 0 */
  int64_t deadline;            /* immutable: the earlier of its own and its parent's; 0: none */
};

/*
 * A new curl handle costs more than its request: libcurl gives each one its
 * own c-ares channel, which reads /etc/resolv.conf and /etc/nsswitch.conf
 * and seeds from /dev/urandom (three files opened and parsed, a few dozen
 * allocations). An operator making a dozen requests per object paid that a
 * dozen times, about a tenth of its CPU. Handles of finished requests are
 * reset and kept instead, up to EASY_POOL_MAX (about the requests in flight
 * at once); connections and the DNS cache live in the loop's multi handle
 * either way. The channel keeps the resolver configuration it read first:
 * the API server's address rarely needs DNS (in-cluster it is an IP), and
 * curl caches what it does resolve.
 */
#define EASY_POOL_MAX 16

struct kcr_client {
  kcr_rest_config_t *config; /* own reference */
  kcr_loop_t *loop;          /* own or shared */
  int owns_loop;
  size_t max_response;
  int64_t timeout_ns;
  int max_retries;
  char *user_agent;
  kcr_metric_t *m_requests; /* rest_client_requests_total; NULL: no metrics */
  kcr_metric_t *m_duration; /* rest_client_request_duration_seconds */
  char *host;               /* for metrics: host[:port] of the server */

  /* Where to send: base URL (server, possibly rewritten to tls-server-name) and
   * the CONNECT_TO mapping that keeps the real address. */
  char *base_url;
  struct curl_slist *connect_to;
  char *proxy; /* CURLOPT_PROXY: "" (direct) or a URL; see setup_proxy */

  /* Client-side token bucket; qps 0: off. */
  pthread_mutex_t rl_mu;
  double qps;          /* immutable */
  double burst;        /* immutable */
  double tokens;       /* protected by rl_mu */
  int64_t last_refill; /* protected by rl_mu */

  /* Credentials snapshot, reused while fresh. */
  pthread_mutex_t cred_mu;
  kcr_credentials creds;   /* protected by cred_mu */
  int have_creds;          /* protected by cred_mu */
  atomic_int plain_warned; /* set once the http:// credentials warning is logged */

  /* The API server's warnings (warning.c). */
  kcr_warning_handler warn_handler; /* immutable */
  void *warn_data;                  /* immutable */
  kcr_warning_mode warn_mode;       /* immutable */
  kcr__warning_seen_t warn_seen;    /* texts logged, for KCR_WARNINGS_DEDUPLICATE */

  /* Idle curl handles, reset, for the next request (easy_get, easy_put). */
  pthread_mutex_t pool_mu;
  CURL *pool[EASY_POOL_MAX]; /* protected by pool_mu */
  int pooled;                /* protected by pool_mu */
  atomic_ulong handles_made; /* curl_easy_init calls, for tests */
};

/* sync_req: one attempt of a synchronous request. */
typedef struct sync_req {
  kcr__transfer_t t;
  kcr_client_t *client;
  const char *method;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int done;             /* protected by mu */
  int refs;             /* protected by mu: closures posted and not yet run */
  CURLcode result;      /* written by the loop before done */
  kcr_buf_t body;       /* loop thread until done */
  int too_big;          /* loop thread until done */
  char retry_after[32]; /* loop thread until done: the Retry-After header, "" when none */
  kcr_buf_t warn_raw;   /* loop thread until done: Warning header values, one a line */
  char errbuf[CURL_ERROR_SIZE];
  int64_t started_ns;
  kcr_cancel_t *cancel;
  kcr__list_node_t cancel_link; /* in cancel->waiters; protected by cancel->mu */
} sync_req;

static int check_impersonation(const kcr_rest_config_t *cfg, kcr_error_t *err);

/* ---- small helpers ---- */

static void wipe_free(char *s) {
  if (s) {
    volatile char *p = s;
    while (*p)
      *p++ = '\0';
    kcr__free(s);
  }
}

/*
 * parse_server splits "https://host:port/prefix" into its parts. host keeps IPv6
 * brackets. Returns 0 or KCR_ECONFIG.
 */
static int parse_server(const char *server, char *scheme, size_t scheme_size, char *host,
                        size_t host_size, char *port, size_t port_size, const char **rest) {
  const char *p = strstr(server, "://"), *h, *end;
  size_t n;
  if (!p || (size_t)(p - server) >= scheme_size)
    return KCR_ECONFIG;
  memcpy(scheme, server, (size_t)(p - server));
  scheme[p - server] = '\0';
  h = p + 3;
  if (*h == '[') {
    end = strchr(h, ']');
    if (!end)
      return KCR_ECONFIG;
    end++;
  } else {
    end = h + strcspn(h, ":/");
  }
  n = (size_t)(end - h);
  if (n == 0 || n >= host_size)
    return KCR_ECONFIG;
  memcpy(host, h, n);
  host[n] = '\0';
  if (*end == ':') {
    const char *ps = end + 1;
    end = ps + strcspn(ps, "/");
    n = (size_t)(end - ps);
    if (n == 0 || n >= port_size)
      return KCR_ECONFIG;
    memcpy(port, ps, n);
    port[n] = '\0';
  } else {
    snprintf(port, port_size, "%s", strcmp(scheme, "http") == 0 ? "80" : "443");
  }
  *rest = end;
  return 0;
}

/* ---- client ---- */

static int setup_target(kcr_client_t *c, kcr_error_t *err) {
  const char *server = kcr_rest_config_server(c->config);
  const char *sni = kcr_rest_config_tls_server_name(c->config);
  char scheme[16], host[256], port[16], buf[1024];
  const char *rest;
  kcr_buf_t url;
  int rc;

  if (!server || !*server)
    return kcr_error_set(err, KCR_ECONFIG, "client: the config has no server");
  if (parse_server(server, scheme, sizeof(scheme), host, sizeof(host), port, sizeof(port), &rest) !=
      0)
    return kcr_error_set(err, KCR_ECONFIG, "client: cannot parse server URL \"%s\"", server);
  snprintf(buf, sizeof(buf), "%s:%s", host, port);
  c->host = kcr__strdup(buf);
  if (!c->host)
    return kcr_error_set(err, KCR_ENOMEM, "client: out of memory");
  kcr_buf_init(&url, 4096);
  if (sni && *sni) {
    /* Verify the server's certificate (and send SNI) for tls-server-name while
     * connecting to the configured address: address the URL to that name and map
     * the name to the real host with CONNECT_TO. */
    const char *bare = host;
    char plain[256];
    if (host[0] == '[') {
      snprintf(plain, sizeof(plain), "%.*s", (int)strlen(host) - 2, host + 1);
      bare = plain;
    }
    rc = kcr_buf_appendf(&url, "%s://%s:%s%s", scheme, sni, port, rest);
    if (rc == 0) {
      snprintf(buf, sizeof(buf), "%s:%s:%s:%s", sni, port, host[0] == '[' ? host : bare, port);
      c->connect_to = curl_slist_append(NULL, buf);
      if (!c->connect_to)
        rc = KCR_ENOMEM;
    }
  } else {
    rc = kcr_buf_appends(&url, server);
  }
  /* No trailing slash: paths start with one. */
  while (rc == 0 && url.len > 0 && url.data[url.len - 1] == '/')
    url.data[--url.len] = '\0';
  if (rc == 0) {
    c->base_url = kcr_buf_take(&url, NULL);
    if (!c->base_url)
      rc = KCR_ENOMEM;
  }
  kcr_buf_free(&url);
  if (rc)
    return kcr_error_set(err, rc, "client: cannot build the server URL");
  return 0;
}

/*
 * setup_proxy decides, once, which proxy the client's requests take: the one
 * client-go would (kcr_rest_config_proxy_for: proxy-url, else Go's
 * ProxyFromEnvironment over the config's load environment), for the real
 * server URL (tls-server-name changes only what TLS verifies). Every handle
 * then gets it as CURLOPT_PROXY, "" meaning direct, and CURLOPT_NOPROXY "":
 * libcurl reads http_proxy, HTTPS_PROXY and NO_PROXY by itself, with rules of
 * its own (it would even apply NO_PROXY to a proxy-url), and neither may
 * override kcr's decision. A socks5 proxy becomes socks5h: Go hands the host
 * name to the proxy to resolve, libcurl's socks5 resolves it locally.
 */
static int setup_proxy(kcr_client_t *c, kcr_error_t *err) {
  char proxy[2048];
  const char *scheme_end;
  int rc = kcr_rest_config_proxy_for(c->config, kcr_rest_config_server(c->config), proxy,
                                     sizeof(proxy), err);
  if (rc != 0)
    return rc;
  scheme_end = strstr(proxy, "://");
  if (proxy[0] &&
      !(scheme_end && ((scheme_end - proxy == 4 && strncasecmp(proxy, "http", 4) == 0) ||
                       (scheme_end - proxy == 5 && strncasecmp(proxy, "https", 5) == 0) ||
                       (scheme_end - proxy == 6 && strncasecmp(proxy, "socks5", 6) == 0) ||
                       (scheme_end - proxy == 7 && strncasecmp(proxy, "socks5h", 7) == 0))))
    return kcr_error_set(err, KCR_ECONFIG,
                         "client: the proxy's scheme is not supported (http, https, socks5 and "
                         "socks5h are)");
  if (scheme_end && scheme_end - proxy == 6) {
    char h[sizeof(proxy) + 1];
    snprintf(h, sizeof(h), "socks5h%s", scheme_end);
    c->proxy = kcr__strdup(h);
  } else {
    c->proxy = kcr__strdup(proxy);
  }
  if (!c->proxy)
    return kcr_error_set(err, KCR_ENOMEM, "client: out of memory");
  return 0;
}

/* register_metrics registers the client's two families (shared with any other
 * client on the same registry). */
static int register_metrics(kcr_client_t *c, kcr_metrics_registry_t *r, kcr_error_t *err) {
  static const char *const req_labels[] = {"code", "method", "host", NULL};
  static const char *const dur_labels[] = {"verb", "host", NULL};
  static const double buckets[] = {0.005, 0.025, 0.1, 0.25, 0.5,  1.0,
                                   2.0,   4.0,   8.0, 15.0, 30.0, 60.0};
  int rc =
      kcr_metrics_counter(r, KCR_CLIENT_METRIC_REQUESTS,
                          "Number of HTTP requests, partitioned by status code, method, and host.",
                          req_labels, &c->m_requests, err);
  if (rc == 0)
    rc = kcr_metrics_histogram(
        r, KCR_CLIENT_METRIC_DURATION, "Request latency in seconds. Broken down by verb, and host.",
        dur_labels, buckets, sizeof(buckets) / sizeof(buckets[0]), &c->m_duration, err);
  if (rc != 0)
    c->m_requests = c->m_duration = NULL;
  return rc;
}

int kcr_client_create(const kcr_client_options *opts, kcr_client_t **out, kcr_error_t *err) {
  kcr_client_t *c;
  char ua[128];
  int rc;

  *out = NULL;
  if (!opts || !opts->config)
    return kcr_error_set(err, KCR_EINVAL, "client: options need a config");
  c = kcr__calloc(1, sizeof(*c));
  if (!c)
    return kcr_error_set(err, KCR_ENOMEM, "client: out of memory");
  c->config = kcr_rest_config_ref(opts->config);
  c->max_response = opts->max_response_bytes ? opts->max_response_bytes : DEFAULT_MAX_RESPONSE;
  c->timeout_ns = opts->timeout_ns;
  c->max_retries = opts->max_retries == 0  ? DEFAULT_MAX_RETRIES
                   : opts->max_retries < 0 ? 0
                                           : opts->max_retries;
  c->qps = opts->qps > 0 ? opts->qps : 0;
  c->burst = opts->burst > 0 ? opts->burst : ceil(c->qps);
  if (c->burst < 1)
    c->burst = 1;
  c->tokens = c->burst;
  c->last_refill = kcr_clock_now(kcr_clock_system());
  pthread_mutex_init(&c->rl_mu, NULL);
  pthread_mutex_init(&c->cred_mu, NULL);
  pthread_mutex_init(&c->pool_mu, NULL);
  kcr__warning_seen_init(&c->warn_seen);
  c->warn_handler = opts->warning_handler;
  c->warn_data = opts->warning_data;
  c->warn_mode = opts->warnings;
  snprintf(ua, sizeof(ua), "kcr/%s (linux)", kcr_version_string());
  c->user_agent = kcr__strdup(opts->user_agent ? opts->user_agent : ua);
  if (!c->user_agent) {
    rc = kcr_error_set(err, KCR_ENOMEM, "client: out of memory");
    goto fail;
  }
  if ((rc = setup_target(c, err)) != 0 || (rc = setup_proxy(c, err)) != 0 ||
      (rc = check_impersonation(c->config, err)) != 0)
    goto fail;
  if (opts->metrics && (rc = register_metrics(c, opts->metrics, err)) != 0)
    goto fail;
  if (opts->loop) {
    c->loop = opts->loop;
  } else {
    if ((rc = kcr_loop_create(&c->loop, err)) != 0)
      goto fail;
    c->owns_loop = 1;
    if ((rc = kcr_loop_start(c->loop, err)) != 0)
      goto fail;
  }
  *out = c;
  return 0;

fail:
  kcr_client_destroy(c);
  return rc;
}

void kcr_client_destroy(kcr_client_t *c) {
  if (!c)
    return;
  if (c->owns_loop)
    kcr_loop_destroy(c->loop);
  kcr_credentials_free(&c->creds);
  while (c->pooled > 0)
    curl_easy_cleanup(c->pool[--c->pooled]);
  pthread_mutex_destroy(&c->pool_mu);
  pthread_mutex_destroy(&c->rl_mu);
  pthread_mutex_destroy(&c->cred_mu);
  kcr__warning_seen_free(&c->warn_seen);
  curl_slist_free_all(c->connect_to);
  kcr__free(c->base_url);
  kcr__free(c->proxy);
  kcr__free(c->host);
  kcr__free(c->user_agent);
  kcr_rest_config_unref(c->config);
  kcr__free(c);
}

kcr_loop_t *kcr_client_loop(kcr_client_t *c) {
  return c->loop;
}

kcr_rest_config_t *kcr_client_config(kcr_client_t *c) {
  return c->config;
}

void kcr__client_observe(kcr_client_t *c, const char *method, long code, double seconds) {
  char codes[24];
  if (!c->m_requests)
    return;
  if (code > 0)
    snprintf(codes, sizeof(codes), "%ld", code);
  else
    snprintf(codes, sizeof(codes), "<error>"); /* client-go's label for no answer */
  if (!method)
    method = "";
  kcr_metric_inc(kcr_metric_withv(c->m_requests, codes, method, c->host ? c->host : "", NULL));
  kcr_metric_observe(kcr_metric_withv(c->m_duration, method, c->host ? c->host : "", NULL),
                     seconds);
}

void kcr__client_credentials_rejected(kcr_client_t *c) {
  uint64_t gen = 0;
  pthread_mutex_lock(&c->cred_mu);
  if (c->have_creds) {
    gen = c->creds.generation;
    c->have_creds = 0;
  }
  pthread_mutex_unlock(&c->cred_mu);
  kcr_rest_config_credentials_rejected(c->config, gen);
}

/* ---- cancellation tokens ---- */

/*
 * A token fires once, for one reason (kept in fired): kcr_cancel_fire
 * (KCR_ECANCELED) or its deadline (KCR_ETIMEDOUT, Go's DeadlineExceeded). A
 * deadline is noticed lazily, by whoever asks (kcr_cancel_err) or by a request
 * waiting on the token, which waits only until the deadline (attempt). Firing
 * walks down to the children under each token's mu in turn: parent -> child,
 * then token -> request. A child's deadline is the earlier of its own and its
 * parent's, so a child never has to look up at its parent.
 */

static int make_cancel(kcr_cancel_t **out) {
  kcr_cancel_t *t = kcr__calloc(1, sizeof(*t));
  *out = NULL;
  if (!t)
    return KCR_ENOMEM;
  pthread_mutex_init(&t->mu, NULL);
  *out = t;
  return 0;
}

int kcr_cancel_create(kcr_cancel_t **out, kcr_error_t *err) {
  int rc = make_cancel(out);
  if (rc)
    kcr_error_set(err, rc, "cancel token: %s", kcr_strerror(rc));
  return rc;
}

static void post_cancel(struct sync_req *r);

/* fire_locked fires t (t->mu held) and its children for why. */
static void fire_locked(kcr_cancel_t *t, int why) {
  if (t->fired)
    return;
  t->fired = why;
  KCR__LIST_FOREACH(&t->waiters, n) {
    post_cancel(KCR__CONTAINER_OF(n, struct sync_req, cancel_link));
  }
  KCR__LIST_FOREACH(&t->children, n) {
    kcr_cancel_t *child = KCR__CONTAINER_OF(n, kcr_cancel_t, child_link);
    pthread_mutex_lock(&child->mu);
    fire_locked(child, why);
    pthread_mutex_unlock(&child->mu);
  }
}

/* check_locked fires t when its deadline has passed (t->mu held) and returns
 * why it fired, 0 while it has not. */
static int check_locked(kcr_cancel_t *t) {
  if (!t->fired && t->deadline && kcr_clock_now(t->clock) >= t->deadline)
    fire_locked(t, KCR_ETIMEDOUT);
  return t->fired;
}

int kcr_cancel_create_child(kcr_cancel_t *parent, kcr_clock_t *clock, int64_t deadline_ns,
                            kcr_cancel_t **out, kcr_error_t *err) {
  kcr_cancel_t *t;
  int rc;
  if (out)
    *out = NULL;
  if (!out || deadline_ns < 0)
    return kcr_error_set(err, KCR_EINVAL, "cancel token: %s",
                         !out ? "no out pointer" : "negative deadline");
  if (deadline_ns && !clock)
    clock = kcr_clock_system();
  if (parent && parent->deadline && deadline_ns && parent->clock != clock)
    return kcr_error_set(err, KCR_EINVAL,
                         "cancel token: a deadline on another clock than its parent's");
  if ((rc = kcr_cancel_create(&t, err)) != 0)
    return rc;
  t->clock = deadline_ns ? clock : NULL;
  t->deadline = deadline_ns;
  if (parent) {
    t->parent = parent;
    if (parent->deadline && (!t->deadline || parent->deadline < t->deadline)) {
      t->clock = parent->clock;
      t->deadline = parent->deadline;
    }
    pthread_mutex_lock(&parent->mu);
    if (check_locked(parent))
      t->fired = parent->fired; /* born fired: nothing can wait on t yet */
    else
      kcr__list_push_back(&parent->children, &t->child_link);
    pthread_mutex_unlock(&parent->mu);
  }
  *out = t;
  return 0;
}

int kcr_cancel_err(kcr_cancel_t *t) {
  int why;
  pthread_mutex_lock(&t->mu);
  why = check_locked(t);
  pthread_mutex_unlock(&t->mu);
  return why;
}

int kcr_cancel_fired(kcr_cancel_t *t) {
  return kcr_cancel_err(t) != 0;
}

int64_t kcr_cancel_deadline(kcr_cancel_t *t) {
  return t->deadline;
}

void kcr_cancel_destroy(kcr_cancel_t *t) {
  if (!t)
    return;
  assert(kcr__list_empty(&t->waiters));
  assert(kcr__list_empty(&t->children));
  if (t->parent) {
    pthread_mutex_lock(&t->parent->mu);
    if (kcr__list_linked(&t->parent->children, &t->child_link))
      kcr__list_remove(&t->parent->children, &t->child_link);
    pthread_mutex_unlock(&t->parent->mu);
  }
  pthread_mutex_destroy(&t->mu);
  kcr__free(t);
}

/* cancel_message says why a request of a fired token ended (why: what
 * kcr_cancel_err returned). */
static const char *cancel_message(int why) {
  return why == KCR_ETIMEDOUT ? "deadline exceeded" : "canceled";
}

static void req_unref(sync_req *r) {
  pthread_mutex_lock(&r->mu);
  r->refs--;
  pthread_cond_broadcast(&r->cond);
  pthread_mutex_unlock(&r->mu);
}

static void on_loop_cancel(kcr_loop_t *loop, void *data) {
  sync_req *r = data;
  kcr__loop_cancel_transfer(loop, &r->t);
  req_unref(r);
}

/* post_cancel asks the loop to abort r; r->refs covers the closure. */
static void post_cancel(sync_req *r) {
  pthread_mutex_lock(&r->mu);
  r->refs++;
  pthread_mutex_unlock(&r->mu);
  if (kcr_loop_post(r->client->loop, on_loop_cancel, r) != 0)
    req_unref(r); /* the loop is stopping: it aborts every transfer anyway */
}

void kcr_cancel_fire(kcr_cancel_t *t) {
  pthread_mutex_lock(&t->mu);
  fire_locked(t, KCR_ECANCELED);
  pthread_mutex_unlock(&t->mu);
}

/* cancel_attach registers r with its token; why it fired if it already has. */
static int cancel_attach(sync_req *r) {
  int rc = 0;
  if (!r->cancel)
    return 0;
  pthread_mutex_lock(&r->cancel->mu);
  if ((rc = check_locked(r->cancel)) == 0) {
    kcr__list_push_front(&r->cancel->waiters, &r->cancel_link);
  }
  pthread_mutex_unlock(&r->cancel->mu);
  return rc;
}

static void cancel_detach(sync_req *r) {
  if (!r->cancel)
    return;
  pthread_mutex_lock(&r->cancel->mu);
  if (kcr__list_linked(&r->cancel->waiters, &r->cancel_link))
    kcr__list_remove(&r->cancel->waiters, &r->cancel_link);
  pthread_mutex_unlock(&r->cancel->mu);
}

/* ---- KCR_CURL_VERBOSE: libcurl's trace, credentials redacted ---- */

/* secret_at finds, in line[0..n), the start of a header whose value is a
 * credential ("Authorization:", "Proxy-Authorization:", "Cookie:", "Set-Cookie:",
 * any case), returning the offset just past its colon, or 0. It looks anywhere
 * in the line: libcurl 7.88 traces HTTP/2 headers as text ("h2h3 [authorization:
 * Bearer ...]"), not as header lines. */
static size_t secret_at(const char *line, size_t n) {
  static const char *const names[] = {"authorization:", "cookie:"};
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
      size_t len = strlen(names[k]);
      if (n - i >= len && strncasecmp(line + i, names[k], len) == 0)
        return i + len;
    }
  return 0;
}

/* ---- building a request ---- */

/* rate_wait takes a token from the client-side bucket, sleeping until one is due. */
static int rate_wait(kcr_client_t *c, kcr_cancel_t *cancel) {
  int64_t wait_ns;
  if (c->qps <= 0)
    return 0;
  pthread_mutex_lock(&c->rl_mu);
  {
    int64_t now = kcr_clock_now(kcr_clock_system());
    c->tokens += (double)(now - c->last_refill) / 1e9 * c->qps;
    if (c->tokens > c->burst)
      c->tokens = c->burst;
    c->last_refill = now;
    c->tokens -= 1; /* reserve, possibly going negative: later callers queue up */
    wait_ns = c->tokens >= 0 ? 0 : (int64_t)(-c->tokens / c->qps * 1e9);
  }
  pthread_mutex_unlock(&c->rl_mu);
  while (wait_ns > 0) {
    int64_t step = wait_ns > 50 * KCR_NSEC_PER_MSEC ? 50 * KCR_NSEC_PER_MSEC : wait_ns;
    struct timespec ts = {(time_t)(step / KCR_NSEC_PER_SEC), (long)(step % KCR_NSEC_PER_SEC)};
    int why = cancel ? kcr_cancel_err(cancel) : 0;
    if (why)
      return why;
    nanosleep(&ts, NULL);
    wait_ns -= step;
  }
  return 0;
}

/* current_credentials refreshes the snapshot when stale and applies it to easy. */
static int apply_credentials(kcr_client_t *c, CURL *easy, struct curl_slist **headers,
                             kcr_error_t *err) {
  kcr_credentials fresh;
  int rc = 0;

  pthread_mutex_lock(&c->cred_mu);
  if (!c->have_creds || !kcr_rest_config_credentials_fresh(c->config, c->creds.generation)) {
    pthread_mutex_unlock(&c->cred_mu);
    /* Not under cred_mu: an exec plugin may run for a while. Two threads may both
     * fetch; the config serialises refreshes, so both get the same result. */
    rc = kcr_rest_config_credentials(c->config, &fresh, err);
    if (rc)
      return rc;
    pthread_mutex_lock(&c->cred_mu);
    kcr_credentials_free(&c->creds);
    c->creds = fresh;
    c->have_creds = 1;
  }
  /* Without TLS a token or password crosses the network in clear, and a client
   * certificate is never presented: say so, once per client. */
  if ((c->creds.bearer_token || c->creds.password || c->creds.client_key_pem) &&
      strncmp(c->base_url, "http://", 7) == 0 && !atomic_exchange(&c->plain_warned, 1))
    kcr_log(KCR_LOG_WARN, "client", "the API server URL is http:// (no TLS): %s",
            c->creds.bearer_token || c->creds.password
                ? "the credentials are sent in clear text to anyone on the path"
                : "the client certificate and key are configured but cannot be used");
  if (c->creds.bearer_token) {
    char *h;
    size_t n = strlen(c->creds.bearer_token) + sizeof("Authorization: Bearer ");
    h = kcr__malloc(n);
    if (!h) {
      rc = KCR_ENOMEM;
    } else {
      struct curl_slist *l;
      snprintf(h, n, "Authorization: Bearer %s", c->creds.bearer_token);
      l = curl_slist_append(*headers, h);
      wipe_free(h);
      if (l)
        *headers = l;
      else
        rc = KCR_ENOMEM;
    }
  } else if (c->creds.username) {
    curl_easy_setopt(easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    curl_easy_setopt(easy, CURLOPT_USERNAME, c->creds.username);
    curl_easy_setopt(easy, CURLOPT_PASSWORD, c->creds.password ? c->creds.password : "");
  }
  /* The CA bundle travels with the credentials: a certificate-authority file is
   * re-read like the client certificate's, and a change bumps the generation.
   * libcurl compares the blobs before reusing a connection, so new bytes mean
   * new connections (docs/client.md, Certificate files). */
  if (rc == 0 && c->creds.ca_pem) {
    struct curl_blob ca = {c->creds.ca_pem, c->creds.ca_len, CURL_BLOB_COPY};
    if (curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &ca) != CURLE_OK)
      rc = KCR_ENOMEM;
  }
  if (rc == 0 && c->creds.client_cert_pem && c->creds.client_key_pem) {
    struct curl_blob cert = {c->creds.client_cert_pem, c->creds.client_cert_len, CURL_BLOB_COPY};
    struct curl_blob key = {c->creds.client_key_pem, c->creds.client_key_len, CURL_BLOB_COPY};
    curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    if (curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &cert) != CURLE_OK ||
        curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &key) != CURLE_OK)
      rc = KCR_ENOMEM;
  }
  pthread_mutex_unlock(&c->cred_mu);
  if (rc)
    return kcr_error_set(err, rc, "client: cannot apply credentials");
  return 0;
}

/* secret_header tells whether a header named name (len bytes) carries a credential. */
static bool secret_header(const char *name, size_t len) {
  static const char *const names[] = {"authorization", "proxy-authorization", "cookie",
                                      "set-cookie"};
  for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
    if (strlen(names[k]) == len && strncasecmp(name, names[k], len) == 0)
      return true;
  return false;
}

/*
 * trace_line logs one line of libcurl's trace (len bytes, no newline). A header
 * line "Name: value" is logged with its name as the key; a text line as the
 * message. A credential never leaves this function: the value of a credential
 * header, and whatever follows "authorization:" or "cookie:" in a text line
 * (libcurl 7.88 traces HTTP/2 headers as text, "h2h3 [authorization: ...]"), is
 * replaced by [REDACTED] here, so a handler installed with kcr_log_set_handler
 * never sees it either.
 */
static void trace_line(const char *what, bool header, const char *line, size_t len) {
  char buf[1024], name[128];
  const char *colon;
  size_t cut;
  if (len >= sizeof(buf))
    len = sizeof(buf) - 1;
  memcpy(buf, line, len);
  buf[len] = '\0';
  colon = header ? strchr(buf, ':') : NULL;
  if (colon && colon > buf && (size_t)(colon - buf) < sizeof(name) &&
      !memchr(buf, ' ', (size_t)(colon - buf))) {
    kcr_log_field f;
    const char *value = colon + 1;
    memcpy(name, buf, (size_t)(colon - buf));
    name[colon - buf] = '\0';
    value += strspn(value, " \t");
    if (secret_header(name, strlen(name)))
      value = "[REDACTED]";
    f = KCR_LOG_STR(name, value);
    kcr_log_fields(KCR_LOG_DEBUG, "curl", what, &f, 1);
    return;
  }
  if ((cut = secret_at(buf, len)) != 0) {
    const char *close = memchr(buf + cut, ']', len - cut);
    snprintf(buf + cut, sizeof(buf) - cut, " [REDACTED]%s", close ? "]" : "");
  }
  if (header) {
    kcr_log_field f = KCR_LOG_STR("line", buf);
    kcr_log_fields(KCR_LOG_DEBUG, "curl", what, &f, 1);
    return;
  }
  kcr_log_fields(KCR_LOG_DEBUG, "curl", buf, NULL, 0);
}

/*
 * kcr__client_on_curl_debug is libcurl's debug callback under KCR_CURL_VERBOSE:
 * its trace goes through kcr's logger (debug lines, logger "curl", in the
 * application's log format, credentials redacted by trace_line) instead of raw
 * onto stderr, where it would print every request's Authorization header.
 * Bodies and TLS data are left out. Loop thread.
 */
int kcr__client_on_curl_debug(CURL *easy, curl_infotype type, char *data, size_t size,
                              void *userp) {
  const char *what;
  bool header = true;
  (void)easy;
  (void)userp;
  switch (type) {
  case CURLINFO_TEXT:
    what = NULL;
    header = false;
    break;
  case CURLINFO_HEADER_OUT:
    what = "request header";
    break;
  case CURLINFO_HEADER_IN:
    what = "response header";
    break;
  default:
    return 0;
  }
  if (!kcr_log_enabled(KCR_LOG_DEBUG))
    return 0;
  while (size > 0) {
    const char *nl = memchr(data, '\n', size);
    size_t len = nl ? (size_t)(nl - data) : size;
    size_t line_len = len > 0 && data[len - 1] == '\r' ? len - 1 : len;
    if (line_len > 0)
      trace_line(what, header, data, line_len);
    data += nl ? len + 1 : len;
    size -= nl ? len + 1 : len;
  }
  return 0;
}

static int add_header(struct curl_slist **headers, const char *name, const char *value) {
  char line[1024];
  struct curl_slist *l;
  if (snprintf(line, sizeof(line), "%s%s", name, value) >= (int)sizeof(line))
    return KCR_ETOOBIG;
  l = curl_slist_append(*headers, line);
  if (!l)
    return KCR_ENOMEM;
  *headers = l;
  return 0;
}

/* ---- impersonation (client-go's impersonatingRoundTripper) ---- */

/* The longest header line the client builds from configured values. */
#define MAX_HEADER_LINE ((size_t)64 * 1024)

/*
 * add_named_header appends "name: value". An empty value goes as "name;",
 * libcurl's way of sending a header with nothing after the colon: a bare
 * "name:" would remove the header instead, where Go sends it empty.
 */
static int add_named_header(struct curl_slist **headers, const char *name, const char *value) {
  kcr_buf_t line;
  struct curl_slist *l;
  int rc;
  kcr_buf_init(&line, MAX_HEADER_LINE);
  rc = *value ? kcr_buf_appendf(&line, "%s: %s", name, value) : kcr_buf_appendf(&line, "%s;", name);
  if (rc == 0) {
    l = curl_slist_append(*headers, kcr_buf_cstr(&line));
    if (l)
      *headers = l;
    else
      rc = KCR_ENOMEM;
  }
  kcr_buf_free(&line);
  return rc;
}

/* header_token_byte: an RFC 7230 tchar other than '%', what client-go's
 * headerKeyEscape leaves as it is. */
static bool header_token_byte(unsigned char b) {
  if ((b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z'))
    return true;
  return b != '\0' && strchr("!#$&'*+-.^_`|~", b) != NULL;
}

int kcr__client_header_key_escape(const char *key, kcr_buf_t *out) {
  static const char hex[] = "0123456789ABCDEF";
  int rc = 0;
  for (const unsigned char *p = (const unsigned char *)key; *p && rc == 0; p++) {
    if (header_token_byte(*p)) {
      rc = kcr_buf_appendc(out, (char)*p);
    } else {
      char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      rc = kcr_buf_append(out, esc, sizeof(esc));
    }
  }
  return rc;
}

/* valid_header_value is Go's httpguts.ValidHeaderFieldValue: no control
 * character but a tab. */
static bool valid_header_value(const char *v) {
  for (const unsigned char *p = (const unsigned char *)v; *p; p++)
    if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
      return false;
  return true;
}

/*
 * check_impersonation refuses, at create, impersonation values that cannot go
 * in a header (Go's transport refuses each such request with "invalid header
 * field value"): a CR or LF would end the header early. The message names the
 * field, never the value.
 */
static int check_impersonation(const kcr_rest_config_t *cfg, kcr_error_t *err) {
  const char *user = kcr_rest_config_impersonate_user(cfg);
  const char *uid = kcr_rest_config_impersonate_uid(cfg);
  const char *const *groups = kcr_rest_config_impersonate_groups(cfg);
  const char *const *extra = kcr_rest_config_impersonate_extra(cfg);
  const char *bad = NULL;
  if (user && !valid_header_value(user))
    bad = "as";
  else if (uid && !valid_header_value(uid))
    bad = "as-uid";
  for (; !bad && groups && *groups; groups++)
    if (!valid_header_value(*groups))
      bad = "as-groups";
  for (; !bad && extra && extra[0] && extra[1]; extra += 2)
    if (!valid_header_value(extra[1]))
      bad = "as-user-extra";
  if (bad)
    return kcr_error_set(err, KCR_ECONFIG,
                         "client: a value of the user's %s holds a control character, which an "
                         "HTTP header cannot carry",
                         bad);
  return 0;
}

/*
 * add_impersonation adds client-go's impersonation headers: Impersonate-User,
 * Impersonate-Uid, one Impersonate-Group per group and one
 * Impersonate-Extra-<key> per value of each as-user-extra key, the key
 * percent-encoded as client-go's headerKeyEscape does (the API server
 * unescapes it, then lower-cases it).
 */
static int add_impersonation(const kcr_rest_config_t *cfg, struct curl_slist **headers) {
  const char *user = kcr_rest_config_impersonate_user(cfg);
  const char *uid = kcr_rest_config_impersonate_uid(cfg);
  const char *const *groups = kcr_rest_config_impersonate_groups(cfg);
  const char *const *extra = kcr_rest_config_impersonate_extra(cfg);
  int rc = 0;
  if (user)
    rc = add_named_header(headers, "Impersonate-User", user);
  if (rc == 0 && uid)
    rc = add_named_header(headers, "Impersonate-Uid", uid);
  for (; rc == 0 && groups && *groups; groups++)
    rc = add_named_header(headers, "Impersonate-Group", *groups);
  for (; rc == 0 && extra && extra[0] && extra[1]; extra += 2) {
    kcr_buf_t name;
    kcr_buf_init(&name, MAX_HEADER_LINE);
    rc = kcr_buf_appends(&name, "Impersonate-Extra-");
    if (rc == 0)
      rc = kcr__client_header_key_escape(extra[0], &name);
    if (rc == 0)
      rc = add_named_header(headers, kcr_buf_cstr(&name), extra[1]);
    kcr_buf_free(&name);
  }
  return rc;
}

/* easy_get takes a pooled handle (reset when it was put back), or makes one. */
static CURL *easy_get(kcr_client_t *c) {
  CURL *easy = NULL;
  pthread_mutex_lock(&c->pool_mu);
  if (c->pooled > 0)
    easy = c->pool[--c->pooled];
  pthread_mutex_unlock(&c->pool_mu);
  if (easy)
    return easy;
  atomic_fetch_add(&c->handles_made, 1);
  return curl_easy_init();
}

unsigned long kcr__client_handles_made(kcr_client_t *c) {
  return atomic_load(&c->handles_made);
}

/* easy_put resets a handle whose transfer is over (out of the multi handle)
 * and keeps it, or frees it when the pool is full. */
static void easy_put(kcr_client_t *c, CURL *easy) {
  if (!easy)
    return;
  curl_easy_reset(easy);
  pthread_mutex_lock(&c->pool_mu);
  if (c->pooled < EASY_POOL_MAX) {
    c->pool[c->pooled++] = easy;
    easy = NULL;
  }
  pthread_mutex_unlock(&c->pool_mu);
  curl_easy_cleanup(easy);
}

int kcr__client_prepare(kcr_client_t *c, const char *method, const char *path, const char *accept,
                        const char *content_type, CURL **easy_out, struct curl_slist **headers_out,
                        kcr_error_t *err) {
  struct curl_slist *headers = NULL;
  kcr_buf_t url;
  CURL *easy;
  int rc;

  *easy_out = NULL;
  *headers_out = NULL;
  easy = easy_get(c);
  if (!easy)
    return kcr_error_set(err, KCR_ENOMEM, "client: cannot create a curl handle");
  kcr_buf_init(&url, (size_t)64 * 1024);
  if ((rc = kcr_buf_appends(&url, c->base_url)) != 0 || (rc = kcr_buf_appends(&url, path)) != 0) {
    kcr_error_set(err, rc, "client: request URL too long (%zu bytes of path)", strlen(path));
    goto fail;
  }
  curl_easy_setopt(easy, CURLOPT_URL, kcr_buf_cstr(&url));
  kcr_buf_free(&url);
  if (c->connect_to)
    curl_easy_setopt(easy, CURLOPT_CONNECT_TO, c->connect_to);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  /* KCR_CURL_VERBOSE=1: libcurl's own trace, for debugging the wire, as debug
   * lines through kcr's logger, credentials redacted before they leave
   * (kcr__client_on_curl_debug, docs/client.md). */
  if (getenv("KCR_CURL_VERBOSE")) {
    curl_easy_setopt(easy, CURLOPT_DEBUGFUNCTION, kcr__client_on_curl_debug);
    curl_easy_setopt(easy, CURLOPT_VERBOSE, 1L);
  }
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, 30L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
  curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(easy, CURLOPT_USERAGENT, c->user_agent);
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "https,http");
  if (strcmp(method, "GET") != 0)
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method);
  if (kcr_rest_config_insecure(c->config)) {
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  /* kcr's own choice, never libcurl's reading of the environment (setup_proxy). */
  curl_easy_setopt(easy, CURLOPT_PROXY, c->proxy);
  curl_easy_setopt(easy, CURLOPT_NOPROXY, "");
  if ((rc = add_header(&headers, "Accept: ", accept ? accept : "application/json")) != 0)
    goto fail_header;
  if (content_type && (rc = add_header(&headers, "Content-Type: ", content_type)) != 0)
    goto fail_header;
  /* curl would otherwise wait a second for "100 Continue" on large bodies. */
  if ((rc = add_header(&headers, "Expect:", "")) != 0)
    goto fail_header;
  if ((rc = add_impersonation(c->config, &headers)) != 0)
    goto fail_header;
  /* W3C trace context: the apiserver's own spans (and etcd's behind them)
   * join the caller's trace. */
  {
    kcr_span_context span;
    char tp[KCR_TRACEPARENT_BUFSIZE];
    if (kcr_trace_current(&span) && kcr_traceparent_format(&span, tp) == 0 &&
        (rc = add_header(&headers, "traceparent: ", tp)) != 0)
      goto fail_header;
  }
  if ((rc = apply_credentials(c, easy, &headers, err)) != 0)
    goto fail;
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  *easy_out = easy;
  *headers_out = headers;
  return 0;

fail_header:
  kcr_error_set(err, rc, "client: cannot build request headers");
fail:
  kcr_buf_free(&url);
  curl_slist_free_all(headers);
  easy_put(c, easy);
  return rc;
}

int kcr__client_transport_error(CURLcode rc, const char *method, const char *path,
                                const char *detail, kcr_error_t *err) {
  int code;
  switch (rc) {
  case CURLE_OPERATION_TIMEDOUT:
    code = KCR_ETIMEDOUT;
    break;
  case CURLE_ABORTED_BY_CALLBACK:
    code = KCR_ECANCELED;
    break;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_ENGINE_NOTFOUND:
  case CURLE_SSL_ENGINE_SETFAILED:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_SSL_SHUTDOWN_FAILED:
    code = KCR_ETLS;
    break;
  case CURLE_OUT_OF_MEMORY:
    code = KCR_ENOMEM;
    break;
  case CURLE_URL_MALFORMAT:
  case CURLE_UNSUPPORTED_PROTOCOL:
    code = KCR_ECONFIG;
    break;
  default:
    code = KCR_ECONN;
    break;
  }
  return kcr_error_set(err, code, "%s %s: %s%s%s", method, path, curl_easy_strerror(rc),
                       detail && *detail ? ": " : "", detail ? detail : "");
}

/* ---- the API server's warnings ---- */

bool kcr__client_collect_warning(kcr_buf_t *raw, const char *line, size_t len) {
  static const char name[] = "warning:";
  size_t n = sizeof(name) - 1;
  if (len < n || strncasecmp(line, name, n) != 0)
    return false;
  line += n;
  len -= n;
  /* The value, without the white space around it (as Go's textproto keeps it). */
  while (len && (*line == ' ' || *line == '\t'))
    line++, len--;
  while (len && (line[len - 1] == '\r' || line[len - 1] == '\n' || line[len - 1] == ' ' ||
                 line[len - 1] == '\t'))
    len--;
  /* Past the bound the rest is dropped: a warning is advice, never worth the memory. */
  if (kcr_buf_len(raw) + len + 1 <= KCR__CLIENT_WARNINGS_MAX) {
    (void)kcr_buf_append(raw, line, len);
    (void)kcr_buf_appendc(raw, '\n');
  }
  return true;
}

/* handle_warning does what the client's options say with one warning. */
static void handle_warning(kcr_client_t *c, const kcr_warning *w, const char *method,
                           const char *path) {
  if (c->warn_mode == KCR_WARNINGS_OFF)
    return;
  if (c->warn_handler) {
    c->warn_handler(w, method, path, c->warn_data);
    return;
  }
  /* controller-runtime's KubeAPIWarningLogger: code 299 with a text, at info. */
  if (w->code != 299 || !w->text[0])
    return;
  if (c->warn_mode == KCR_WARNINGS_DEDUPLICATE && !kcr__warning_seen_first(&c->warn_seen, w->text))
    return;
  kcr_log(KCR_LOG_INFO, "KubeAPIWarningLogger", "%s", w->text);
}

int kcr__client_warnings(kcr_client_t *c, const char *method, const char *path,
                         const kcr_buf_t *raw, kcr_warning **out, size_t *nout) {
  kcr__warnings list = {0};
  const char *p = kcr_buf_cstr(raw);
  size_t left = kcr_buf_len(raw);
  int rc = 0;
  if (out) {
    *out = NULL;
    *nout = 0;
  }
  while (left > 0 && rc == 0) {
    const char *nl = memchr(p, '\n', left);
    size_t len = nl ? (size_t)(nl - p) : left;
    rc = kcr__warnings_parse(p, len, &list);
    p += nl ? len + 1 : len;
    left -= nl ? len + 1 : len;
  }
  for (size_t i = 0; i < list.n; i++)
    handle_warning(c, &list.items[i], method, path);
  if (rc == 0 && out && list.n > 0) {
    *out = list.items;
    *nout = list.n;
    memset(&list, 0, sizeof(list));
  }
  kcr__warnings_free(&list);
  return rc;
}

/* ---- running a request on the loop ---- */

static size_t on_body(char *data, size_t size, size_t n, void *userp) {
  sync_req *r = userp;
  size_t len = size * n;
  if (kcr_buf_append(&r->body, data, len) != 0) {
    r->too_big = 1;
    return CURL_WRITEFUNC_ERROR;
  }
  return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *userp) {
  sync_req *r = userp;
  size_t len = size * n;
  static const char name[] = "retry-after:";
  if (kcr__client_collect_warning(&r->warn_raw, data, len)) {
    /* kept for the caller's thread, which parses it */
  } else if (len > sizeof(name) - 1 && strncasecmp(data, name, sizeof(name) - 1) == 0) {
    const char *v = data + sizeof(name) - 1;
    size_t vl = len - (sizeof(name) - 1);
    while (vl && (*v == ' ' || *v == '\t'))
      v++, vl--;
    while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
      vl--;
    if (vl < sizeof(r->retry_after)) {
      memcpy(r->retry_after, v, vl);
      r->retry_after[vl] = '\0';
    }
  } else if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    r->retry_after[0] = '\0'; /* a new response (after a redirect or 100) */
    kcr_buf_reset(&r->warn_raw);
  }
  return len;
}

static void on_sync_done(kcr__transfer_t *t, CURLcode result) {
  sync_req *r = (sync_req *)(void *)t; /* t is the first member */
  long code = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
  kcr__client_observe(r->client, r->method, code,
                      (double)(kcr_clock_now(kcr_clock_system()) - r->started_ns) / 1e9);
  pthread_mutex_lock(&r->mu);
  r->result = result;
  r->done = 1;
  pthread_cond_broadcast(&r->cond);
  pthread_mutex_unlock(&r->mu);
}

static void on_loop_start(kcr_loop_t *loop, void *data) {
  sync_req *r = data;
  if (kcr__loop_add_transfer(loop, &r->t) != 0)
    on_sync_done(&r->t, CURLE_ABORTED_BY_CALLBACK);
  req_unref(r);
}

/* attempt runs one HTTP exchange. Returns 0 when an answer (any status) came. */
static int attempt(kcr_client_t *c, const kcr_request *req, long *status, kcr_buf_t *body,
                   char *content_type, size_t ct_size, char *retry_after, size_t ra_size,
                   kcr_buf_t *warnings, kcr_error_t *err) {
  struct curl_slist *headers = NULL;
  sync_req r;
  int64_t timeout = req->timeout_ns ? req->timeout_ns : c->timeout_ns;
  int rc;

  memset(&r, 0, sizeof(r));
  r.client = c;
  r.method = req->method;
  r.cancel = req->cancel;
  r.t.done = on_sync_done;
  r.t.nudge_when_quiet = 1; /* a request ends on its own (loop.c: nudging) */
  kcr_buf_init(&r.body, c->max_response);
  kcr_buf_init(&r.warn_raw, KCR__CLIENT_WARNINGS_MAX);
  if ((rc = rate_wait(c, req->cancel)) != 0)
    return kcr_error_set(err, rc, "%s %s: %s", req->method, req->path, cancel_message(rc));
  rc = kcr__client_prepare(c, req->method, req->path, req->accept, req->content_type, &r.t.easy,
                           &headers, err);
  if (rc)
    return rc;
  curl_easy_setopt(r.t.easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(r.t.easy, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(r.t.easy, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(r.t.easy, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(r.t.easy, CURLOPT_ERRORBUFFER, r.errbuf);
  if (req->body_len || strcmp(req->method, "POST") == 0 || strcmp(req->method, "PUT") == 0 ||
      strcmp(req->method, "PATCH") == 0) {
    curl_easy_setopt(r.t.easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    curl_easy_setopt(r.t.easy, CURLOPT_POSTFIELDS, req->body_len ? req->body : "");
  }
  if (timeout > 0)
    curl_easy_setopt(r.t.easy, CURLOPT_TIMEOUT_MS, (long)((timeout + 999999) / 1000000));
  pthread_mutex_init(&r.mu, NULL);
  if (kcr_clock_cond_init(&r.cond) != 0) {
    pthread_mutex_destroy(&r.mu);
    easy_put(c, r.t.easy);
    curl_slist_free_all(headers);
    return kcr_error_set(err, KCR_ESYS, "%s %s: cannot make a condition variable", req->method,
                         req->path);
  }
  r.started_ns = kcr_clock_now(kcr_clock_system());

  if ((rc = cancel_attach(&r)) == 0) {
    /* Attached, r is visible to kcr_cancel_fire, whose post_cancel may already
     * hold a reference: count the loop's under r.mu, never overwrite. */
    pthread_mutex_lock(&r.mu);
    r.refs++;
    pthread_mutex_unlock(&r.mu);
    if ((rc = kcr_loop_post(c->loop, on_loop_start, &r)) != 0) {
      pthread_mutex_lock(&r.mu);
      r.refs--;
      pthread_mutex_unlock(&r.mu);
    }
  }
  if (rc == 0) {
    /* With a deadline on the token, wait only until it passes, then fire the
     * token (kcr_cancel_err notices the deadline), which posts the cancel of
     * every request using it, this one included. */
    int64_t dl = r.cancel ? r.cancel->deadline : 0;
    pthread_mutex_lock(&r.mu);
    while (!r.done || r.refs > 0) {
      if (dl && kcr_clock_timedwait(r.cancel->clock, &r.cond, &r.mu, dl) == KCR_ETIMEDOUT) {
        pthread_mutex_unlock(&r.mu);
        (void)kcr_cancel_err(r.cancel); /* takes the token's mu, then r.mu */
        pthread_mutex_lock(&r.mu);
        dl = 0;
      } else if (!dl) {
        pthread_cond_wait(&r.cond, &r.mu);
      }
    }
    pthread_mutex_unlock(&r.mu);
  }
  cancel_detach(&r);
  /* A cancel posted between done and detach still holds a reference. */
  pthread_mutex_lock(&r.mu);
  while (r.refs > 0)
    pthread_cond_wait(&r.cond, &r.mu);
  pthread_mutex_unlock(&r.mu);

  /* A transfer the token aborted ends as its token says: KCR_ETIMEDOUT when
   * its deadline passed (the loop only knows it was aborted). */
  if (rc == 0 && r.result == CURLE_ABORTED_BY_CALLBACK && r.cancel && kcr_cancel_err(r.cancel))
    rc = kcr_cancel_err(r.cancel);
  if (rc == KCR_ECANCELED || rc == KCR_ETIMEDOUT) {
    kcr_error_set(err, rc, "%s %s: %s", req->method, req->path, cancel_message(rc));
  } else if (rc == KCR_ECLOSED) {
    kcr_error_set(err, rc, "%s %s: the client's loop is stopped", req->method, req->path);
  } else if (rc) {
    kcr_error_set(err, rc, "%s %s: cannot post to the loop", req->method, req->path);
  } else if (r.too_big) {
    rc = kcr_error_set(err, KCR_ETOOBIG, "%s %s: response body larger than the limit of %zu bytes",
                       req->method, req->path, c->max_response);
  } else if (r.result != CURLE_OK) {
    rc = kcr__client_transport_error(r.result, req->method, req->path, r.errbuf, err);
  } else {
    char *ct = NULL;
    curl_easy_getinfo(r.t.easy, CURLINFO_RESPONSE_CODE, status);
    curl_easy_getinfo(r.t.easy, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(content_type, ct_size, "%s", ct ? ct : "");
    snprintf(retry_after, ra_size, "%s", r.retry_after);
    *body = r.body;
    kcr_buf_init(&r.body, c->max_response);
    *warnings = r.warn_raw;
    kcr_buf_init(&r.warn_raw, KCR__CLIENT_WARNINGS_MAX);
  }
  kcr_buf_free(&r.body);
  kcr_buf_free(&r.warn_raw);
  easy_put(c, r.t.easy);
  curl_slist_free_all(headers);
  pthread_cond_destroy(&r.cond);
  pthread_mutex_destroy(&r.mu);
  return rc;
}

/* retry_delay returns the Retry-After seconds (at most 60) or -1 when there is none. */
static int retry_delay(const char *v) {
  int n = kcr__retry_after_seconds(v);
  return n > MAX_RETRY_AFTER_SECONDS ? MAX_RETRY_AFTER_SECONDS : n;
}

static int sleep_cancellable(int64_t ns, kcr_cancel_t *cancel) {
  while (ns > 0) {
    int64_t step = ns > 50 * KCR_NSEC_PER_MSEC ? 50 * KCR_NSEC_PER_MSEC : ns;
    struct timespec ts = {(time_t)(step / KCR_NSEC_PER_SEC), (long)(step % KCR_NSEC_PER_SEC)};
    int why = cancel ? kcr_cancel_err(cancel) : 0;
    if (why)
      return why;
    nanosleep(&ts, NULL);
    ns -= step;
  }
  return 0;
}

/* before_deadline: whether a retry after sleeping ns would still start before
 * deadline (0: none) and before the deadline of the token (NULL: none). */
static bool before_deadline(int64_t deadline, kcr_cancel_t *cancel, int64_t ns) {
  if (cancel && cancel->deadline && kcr_clock_now(cancel->clock) + ns >= cancel->deadline)
    return false;
  return deadline == 0 || kcr_clock_now(kcr_clock_system()) + ns < deadline;
}

int kcr_client_do(kcr_client_t *c, const kcr_request *req, kcr_response *resp, kcr_error_t *err) {
  return kcr__client_do(c, req, resp, NULL, NULL, NULL, err);
}

/* client_do is kcr__client_do without its span; *status_out and *retries_out
 * tell the span what happened (status 0: no answer). */
static int client_do(kcr_client_t *c, const kcr_request *req, kcr_response *resp, const char *group,
                     const char *resource, const char *name, long *status_out, int *retries_out,
                     kcr_error_t *err) {
  int retries = 0, rc;
  kcr_request one;
  int64_t deadline = 0;

  if (resp)
    memset(resp, 0, sizeof(*resp));
  if (!req || !req->method || !req->path || req->path[0] != '/')
    return kcr_error_set(err, KCR_EINVAL, "client: a request needs a method and an absolute path");
  assert(!kcr_loop_on_thread(c->loop));
  /* A fired token (cancelled, or past its deadline) refuses the request before
   * anything is built or sent. */
  if (req->cancel && (rc = kcr_cancel_err(req->cancel)) != 0)
    return kcr_error_set(err, rc, "%s %s: %s", req->method, req->path, cancel_message(rc));
  /* The request's own timeout bounds the whole call, retries and their sleeps
   * included (client-go's Request.Timeout is a context over the retry loop): a
   * leader's write fenced at its renew deadline must not be retried past it. */
  one = *req;
  if (req->timeout_ns > 0)
    deadline = kcr_clock_now(kcr_clock_system()) + req->timeout_ns;
  for (;;) {
    kcr_buf_t body, warnings;
    char ct[128] = "", ra[32] = "";
    long status = 0;
    int delay;
    kcr_error_t attempt_err;

    if (deadline) {
      int64_t left = deadline - kcr_clock_now(kcr_clock_system());
      one.timeout_ns = left > KCR_NSEC_PER_MSEC ? left : KCR_NSEC_PER_MSEC;
    }
    kcr_error_clear(&attempt_err);
    kcr_buf_init(&body, c->max_response);
    kcr_buf_init(&warnings, KCR__CLIENT_WARNINGS_MAX);
    *retries_out = retries;
    rc = attempt(c, &one, &status, &body, ct, sizeof(ct), ra, sizeof(ra), &warnings, &attempt_err);
    *status_out = status;
    if (rc) {
      /* GETs are safe to repeat when the connection broke before an answer. */
      if ((rc == KCR_ECONN) && strcmp(req->method, "GET") == 0 && retries < c->max_retries &&
          before_deadline(deadline, req->cancel, KCR_NSEC_PER_SEC)) {
        retries++;
        kcr_log(KCR_LOG_DEBUG, "client", "retrying %s %s after: %s", req->method, req->path,
                attempt_err.message);
        if (sleep_cancellable(KCR_NSEC_PER_SEC, req->cancel) == 0)
          continue;
      }
      if (err && err->code == KCR_OK)
        *err = attempt_err;
      return rc;
    }
    delay = retry_delay(ra);
    if ((status == 429 || status >= 500) && delay >= 0 && retries < c->max_retries &&
        before_deadline(deadline, req->cancel, (int64_t)delay * KCR_NSEC_PER_SEC)) {
      retries++;
      kcr_log(KCR_LOG_DEBUG, "client", "%s %s: HTTP %ld, retrying in %d s (attempt %d)",
              req->method, req->path, status, delay, retries + 1);
      kcr_buf_free(&body);
      kcr_buf_free(&warnings); /* client-go handles the final answer's only */
      if ((rc = sleep_cancellable(delay * KCR_NSEC_PER_SEC, req->cancel)) != 0)
        return kcr_error_set(err, rc, "%s %s: %s", req->method, req->path, cancel_message(rc));
      continue;
    }
    if (status == 401)
      kcr__client_credentials_rejected(c);
    {
      int wrc = kcr__client_warnings(c, req->method, req->path, &warnings,
                                     resp ? &resp->warnings : NULL, resp ? &resp->nwarnings : NULL);
      kcr_buf_free(&warnings);
      if (wrc != 0 && resp) {
        kcr_buf_free(&body);
        return kcr_error_set(err, wrc, "%s %s: out of memory", req->method, req->path);
      }
    }
    rc = 0;
    if (status < 200 || status > 299) {
      kcr__error_response_t info = {
          status, ct[0] ? ct : NULL, ra[0] ? ra : NULL, req->method, group, resource, name};
      rc = kcr__error_from_response(err, &info, kcr_buf_cstr(&body), kcr_buf_len(&body));
    }
    if (resp) {
      resp->status = status;
      resp->content_type = kcr__strdup(ct);
      resp->body = kcr_buf_take(&body, &resp->body_len);
      if (!resp->content_type || !resp->body) {
        kcr_response_free(resp);
        kcr_buf_free(&body);
        return kcr_error_set(err, KCR_ENOMEM, "%s %s: out of memory", req->method, req->path);
      }
    }
    kcr_buf_free(&body);
    return rc;
  }
}

/*
 * kcr__client_do traces the call as one CLIENT span, a child of the calling
 * thread's current span (a reconcile's), retries included: the attempts'
 * requests carry its traceparent (kcr__client_prepare), so the apiserver's
 * spans become its children.
 */
int kcr__client_do(kcr_client_t *c, const kcr_request *req, kcr_response *resp, const char *group,
                   const char *resource, const char *name, kcr_error_t *err) {
  kcr_span_t *span = NULL;
  long status = 0;
  int retries = 0, rc;
  if (kcr_trace_enabled() && req && req->method) {
    char sname[KCR_SPAN_NAME_MAX];
    snprintf(sname, sizeof(sname), "%s %s", req->method, resource ? resource : "request");
    if ((span = kcr_span_start(sname, KCR_SPAN_CLIENT, NULL)) != NULL) {
      kcr_span_set_str(span, "http.request.method", req->method);
      kcr_span_set_str(span, "url.path", req->path);
      kcr_span_set_str(span, "server.address", c->host);
      if (resource)
        kcr_span_set_str(span, "k8s.resource", resource);
      if (group && *group)
        kcr_span_set_str(span, "k8s.group", group);
      if (name)
        kcr_span_set_str(span, "k8s.object.name", name);
    }
  }
  rc = client_do(c, req, resp, group, resource, name, &status, &retries, err);
  if (span) {
    if (status)
      kcr_span_set_int(span, "http.response.status_code", status);
    kcr_span_set_int(span, "http.request.resend_count", retries);
    if (rc != 0 || status >= 500 || status == 0)
      kcr_span_set_status(span, KCR_SPAN_STATUS_ERROR,
                          err && err->message[0] ? err->message : kcr_err_name(rc));
    kcr_span_end(span);
  }
  return rc;
}

void kcr_response_free(kcr_response *r) {
  kcr__warnings list;
  if (!r)
    return;
  list.items = r->warnings;
  list.n = r->nwarnings;
  list.cap = r->nwarnings;
  kcr__warnings_free(&list);
  kcr__free(r->body);
  kcr__free(r->content_type);
  memset(r, 0, sizeof(*r));
}
