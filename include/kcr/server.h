/* SPDX-License-Identifier: MIT */
/*
 * kcr/server.h: the server layer (src/server/), the HTTP/1.1 server
 * that the manager runs for health probes (/healthz, /readyz) and Prometheus
 * metrics (/metrics), as controller-runtime's HealthProbeBindAddress and
 * metrics server provide them. Its sockets live on the I/O loop (kcr/loop.h),
 * which only reads and parses requests and writes replies; the answers that need
 * user code (probe checks, /metrics with its collectors) are worked out on the
 * server's own worker thread, so a slow check never delays the loop. It is built
 * to survive hostile clients: a bounded request head (431 beyond it), a header
 * timeout (a client that trickles bytes is closed), an idle timeout for
 * kept-alive connections, a connection limit, and a memory budget (below).
 *
 * Answers:
 *   GET /healthz, /readyz   200 "ok" when every check of that kind passes; 500
 *                           listing each check as "[+]name ok" / "[-]name failed:
 *                           reason withheld" and "<kind> check failed" otherwise
 *                           (controller-runtime's text). ?verbose lists every
 *                           check on success too; ?exclude=name (repeatable,
 *                           or comma-separated) skips checks.
 *   GET /healthz/<name>     one check (/readyz/<name> too): 200 "ok", 500
 *                           "internal server error: <reason>" (a
 *                           kcr_check_err_cb's reason, else "check failed"),
 *                           or 404 if unknown.
 *   GET /metrics            the registry's text exposition, Content-Type
 *                           KCR_METRICS_CONTENT_TYPE.
 *   HEAD                    as GET without the body.
 *   others                  404 for an unknown path, 405 (Allow: GET, HEAD) for
 *                           another method.
 * Every probe kind has the built-in check "ping": the answer itself shows that
 * the loop and the worker are alive and not blocked.
 *
 * TLS (options.tls): HTTPS with TLS 1.2 or 1.3 and HTTP/1.1 (ALPN "http/1.1";
 * HTTP/2 is not served: a client offering only h2 gets no ALPN answer and
 * speaks HTTP/1.1). OpenSSL runs on the loop thread over memory BIOs, so a
 * handshake never blocks the loop; the certificate comes from a directory,
 * watched and reloaded as controller-runtime's certwatcher does, or is a
 * self-signed one made in memory. /metrics may be guarded by an authorization
 * callback (options.metrics_auth; kcr/auth.h provides TokenReview and
 * SubjectAccessReview), run on the worker thread.
 */
#ifndef KCR_SERVER_H
#define KCR_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "kcr/buf.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/loop.h"
#include "kcr/metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_server_t: opaque. */
typedef struct kcr_server kcr_server_t;

/*
 * kcr_server_auth_cb decides whether a request may be answered: token is the
 * request's bearer token (borrowed for the call; NULL when the request has no
 * "Authorization: Bearer" header), verb the Kubernetes verb ("get" for GET and
 * HEAD), path the URL path. Returns the HTTP status: 200 to answer, 401 (no or
 * a bad token), 403 (not allowed), 429 (too many decisions asked for now) or
 * 500 (the decision could not be made). Runs on a server thread, never the
 * loop's, possibly on several at once; it may block (options.metrics_auth).
 */
typedef int (*kcr_server_auth_cb)(void *data, const char *token, const char *verb,
                                  const char *path);

/* The pool that runs options.metrics_auth: its threads, and how many requests
 * may wait for one of them. */
#define KCR_SERVER_AUTH_THREADS 4
#define KCR_SERVER_AUTH_QUEUE 16

/*
 * kcr_server_request: a request for the handler (options.handler); everything
 * is borrowed for the call. body is NUL-terminated ("" without one).
 */
typedef struct kcr_server_request {
  const char *method;
  const char *path;
  const char *query; /* after '?', or NULL */
  const char *body;
  size_t body_len;
} kcr_server_request;

/*
 * kcr_server_response: what the handler answers. status 0 is 200;
 * content_type must be static (NULL: application/json); body is initialised by
 * the server with its bound (at most half the memory budget): append to it.
 */
typedef struct kcr_server_response {
  int status;
  const char *content_type;
  kcr_buf_t body;
} kcr_server_response;

/*
 * kcr_server_handler_cb answers every request that is not a probe or /metrics
 * (it answers 404 itself for paths it does not know). Runs on the server's
 * worker thread, one request at a time; a request body has been read whole
 * (Content-Length; a chunked body is refused with 411, one over
 * max_body_bytes with 413) before it is called.
 */
typedef void (*kcr_server_handler_cb)(void *data, const kcr_server_request *req,
                                      kcr_server_response *resp);

/*
 * kcr_server_options: zero-initialise, then set what you need.
 *   loop               required: a started loop (borrowed; must outlive the server).
 *   bind_address       "host:port", ":port" (all IPv4 interfaces) or
 *                      "[v6addr]:port"; port 0 lets the kernel pick
 *                      (kcr_server_port tells which). Required.
 *   metrics            registry served at /metrics (borrowed); NULL: no /metrics.
 *   probes             non-zero: serve /healthz and /readyz.
 *   max_header_bytes   largest request head; 0: 8192. Beyond it: 431 and close.
 *   header_timeout_ns  time from a connection's accept (or a kept-alive
 *                      request's first byte) to a complete head; 0: 3 s.
 *                      Beyond it the connection is closed. 3 s: a kubelet
 *                      or Prometheus sends its whole head at once and a
 *                      kubelet probe gives up after 1 s anyway, so 3 s cuts
 *                      only clients that are not trying.
 *   idle_timeout_ns    a kept-alive connection with no request; 0: 60 s.
 *   max_connections    open connections at once; 0: 64. A new connection
 *                      on a full server sheds one: never one whose request
 *                      is being answered; those accepted in the same loop
 *                      iteration only after every other, and those not
 *                      reading their reply after those; then one from the
 *                      address holding the most connections; then the one
 *                      that has sent the least for the time it has been
 *                      held (bytes since accept, with those waiting unread,
 *                      over time since accept); the
 *                      oldest on a tie. At most half of max_connections
 *                      are shed in one loop iteration: further newcomers
 *                      wait in the listen queue for the next one, so a
 *                      batch of reconnects larger than the server cannot
 *                      shed every connection older than itself. Only when
 *                      every connection is being answered is the new one
 *                      closed at once. So neither idle nor trickling
 *                      connections, reconnecting however fast, starve the
 *                      probes.
 *   max_buffered_bytes the memory budget for clients; 0: 16 MiB. See below.
 *   tls                non-zero: serve HTTPS only (TLS 1.2 and 1.3).
 *   cert_dir           with tls: the directory holding cert_name and key_name
 *                      (PEM; the certificate file may hold a chain). They are
 *                      read at create (a failure fails create) and then
 *                      polled every cert_poll_interval_ns on the worker
 *                      thread: a change (inode, size or mtime of either) is
 *                      re-read and used by the next handshake; a file that
 *                      does not load is logged and counted, and the old
 *                      certificate is kept. A certificate that has expired,
 *                      or whose notBefore is more than 5 minutes ahead of the
 *                      clock, counts as not loading (at create too), though
 *                      upstream serves it. NULL: a self-signed EC P-256
 *                      certificate made in memory (SANs localhost, 127.0.0.1,
 *                      ::1 and the host name), as controller-runtime does.
 *   cert_name, key_name  file names in cert_dir; NULL: "tls.crt", "tls.key".
 *   cert_poll_interval_ns  0: 10 s.
 *   cert_metrics       registry for certwatcher_read_certificate_total and
 *                      certwatcher_read_certificate_errors_total (borrowed);
 *                      NULL: metrics (and none without it).
 *   metrics_auth       called for every /metrics request before it is
 *                      answered (see kcr_server_auth_cb); NULL: no check.
 *                      It runs on a pool of KCR_SERVER_AUTH_THREADS threads
 *                      started with the server, so requests whose check
 *                      blocks (a review) run side by side and never hold up
 *                      the probes; at most KCR_SERVER_AUTH_QUEUE wait for a
 *                      pool thread, and one more is answered 429.
 *   metrics_auth_cached  optional: the same decision from what is known
 *                      without blocking, or 0 when metrics_auth must be
 *                      asked (kcr_auth_cached). Runs on the worker, so a
 *                      request it decides never waits behind the pool.
 *   metrics_auth_data  their data (borrowed).
 *   handler            answers other paths, with request bodies (webhooks);
 *                      NULL: 404 for them.
 *   handler_data       its data (borrowed).
 *   max_body_bytes     largest request body the handler accepts; 0: 7 MiB
 *                      (controller-runtime's admission limit), at most a
 *                      quarter of max_buffered_bytes. A body is charged to the
 *                      budget while it is held.
 *   handler_auth       with metrics_auth and handler: every handler request
 *                      passes the same hook first, as /metrics does (verb
 *                      "get" for GET and HEAD, else the method in lower case;
 *                      path the URL path): 401, 403, 429 or 500 as for
 *                      /metrics, and the handler runs only on 200 (still on
 *                      the worker, one request at a time: a decision that
 *                      blocks is made on the auth pool, then the request goes
 *                      back to the worker). 0: handler requests are not
 *                      checked.
 *   defer_accept_s     > 0 (Linux): the kernel hands over a connection only
 *                      once its first bytes have arrived, or after that many
 *                      seconds (TCP_DEFER_ACCEPT). A client of these servers
 *                      speaks first (an HTTP request, a TLS ClientHello), so
 *                      a probe arrives with its request already waiting, and
 *                      cannot be taken for a holder that sends nothing and
 *                      shed before its first byte; idle holders reach the
 *                      server only after the delay. 0: off. Elsewhere
 *                      ignored.
 *
 * Memory. A connection answers one request at a time and stops reading while
 * its reply is unsent, so a client that pipelines requests without reading the
 * replies fills its own kernel socket buffers, not the server's memory. Every
 * allocation the server makes for its clients (a connection: about 1 KiB plus
 * max_header_bytes; a request handed to the worker; a reply body) is charged
 * to a budget of max_buffered_bytes before it is made; what does not fit is
 * refused (a connection is closed, a request answered 503 from static text).
 * A new connection the budget lacks room for only because connections being
 * closed (shed, timed out) still hold theirs waits in the listen queue for
 * that memory, one loop iteration, instead of being refused. So the memory a server holds for its
 * clients never exceeds max_buffered_bytes (16 MiB by default; kcr_manager_serve runs two servers),
 * one connection holds at most its own size plus one reply, and a /metrics
 * body may be at most half the budget (larger: 500). With TLS a connection is
 * charged 57 KiB more (a ciphertext buffer and an estimate of OpenSSL's own),
 * and the encrypted reply in flight (at most 64 KiB of plaintext at a time).
 * The stats show the figure (bytes_held, bytes_held_peak).
 */
/* What a manager's probe, metrics and webhook servers use for
 * kcr_server_options.defer_accept_s. */
#define KCR_SERVER_DEFER_ACCEPT_S 2

typedef struct kcr_server_options {
  kcr_loop_t *loop;
  const char *bind_address;
  kcr_metrics_registry_t *metrics;
  int probes;
  size_t max_header_bytes;
  int64_t header_timeout_ns;
  int64_t idle_timeout_ns;
  int max_connections;
  size_t max_buffered_bytes;
  int tls;
  const char *cert_dir;
  const char *cert_name;
  const char *key_name;
  int64_t cert_poll_interval_ns;
  kcr_metrics_registry_t *cert_metrics;
  kcr_server_auth_cb metrics_auth;
  kcr_server_auth_cb metrics_auth_cached;
  void *metrics_auth_data;
  kcr_server_handler_cb handler;
  void *handler_data;
  size_t max_body_bytes;
  int handler_auth;
  int defer_accept_s;
} kcr_server_options;

/*
 * kcr_server_create binds and starts listening (on the loop thread; this call
 * waits for the outcome). *out: new server, NULL on failure. Errors: KCR_EINVAL
 * (bad options or address), KCR_ESYS (bind/listen failed: the message names the
 * address and the reason), KCR_ECONFIG (the certificate or key cannot be read), KCR_ECLOSED (the
 * loop is stopping), KCR_ENOMEM. Any thread except the loop's.
 */
KCR_EXTERN int kcr_server_create(const kcr_server_options *opts, kcr_server_t **out,
                                 kcr_error_t *err);

/* kcr_server_port returns the bound TCP port. Any thread. */
KCR_EXTERN int kcr_server_port(const kcr_server_t *s);

/*
 * kcr_server_destroy stops listening, closes every connection and frees the
 * server. Call it before kcr_loop_stop, or after kcr_loop_stop has returned
 * (not while it runs). NULL is ignored. Any thread except the loop's.
 */
KCR_EXTERN void kcr_server_destroy(kcr_server_t *s);

/* kcr_probe_kind: which endpoints a check belongs to (a bit set). */
typedef enum kcr_probe_kind {
  KCR_PROBE_HEALTHZ = 1,
  KCR_PROBE_READYZ = 2,
  KCR_PROBE_BOTH = 3
} kcr_probe_kind;

/*
 * kcr_check_cb: a health or readiness check. Returns 0 when healthy, anything
 * else when not. Runs on the server's worker thread (never the loop's) while a
 * probe is answered, one check at a time, with the server's check list locked:
 * it must not call kcr_server_* functions. It may take its time, but probes
 * queue behind it (a kubelet gives up after its timeoutSeconds, 1 s by default).
 */
typedef int (*kcr_check_cb)(void *data);

/*
 * kcr_check_err_cb: a check that says why it failed (controller-runtime's
 * healthz.Checker, which returns an error). Returns 0 when healthy, else a
 * negative kcr_err with the reason in *err (never NULL; cleared before the
 * call). The reason is answered on /healthz/<name> ("internal server error:
 * <reason>") and logged at debug level; the aggregate endpoints withhold it,
 * as controller-runtime does. Same thread and lock rules as kcr_check_cb.
 */
typedef int (*kcr_check_err_cb)(void *data, kcr_error_t *err);

/* kcr_server_check_t: a registered check. Opaque. */
typedef struct kcr_server_check kcr_server_check_t;

/*
 * kcr_server_add_check registers cb(data) under name (copied; [a-zA-Z0-9_.-],
 * unique per kind) for the kinds given. *out (may be NULL): handle for
 * kcr_server_remove_check and kcr_server_check_set. data is borrowed until the
 * check is removed or the server destroyed. Errors: KCR_EINVAL (bad name),
 * KCR_EEXIST (name taken), KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_server_add_check(kcr_server_t *s, kcr_probe_kind kind, const char *name,
                                    kcr_check_cb cb, void *data, kcr_server_check_t **out);

/*
 * kcr_server_add_check_err is kcr_server_add_check for a check that says why
 * it failed (kcr_check_err_cb). Same rules and errors.
 */
KCR_EXTERN int kcr_server_add_check_err(kcr_server_t *s, kcr_probe_kind kind, const char *name,
                                        kcr_check_err_cb cb, void *data, kcr_server_check_t **out);

/*
 * kcr_server_add_flag_check registers a check whose state is a flag the owner
 * sets with kcr_server_check_set: the hook for "caches synced" (set it once the
 * informers have synced) and similar conditions known on another thread.
 * healthy is the initial state. Same errors as kcr_server_add_check.
 */
KCR_EXTERN int kcr_server_add_flag_check(kcr_server_t *s, kcr_probe_kind kind, const char *name,
                                         int healthy, kcr_server_check_t **out);

/* kcr_server_check_set sets a flag check's state (non-zero: healthy). Any thread,
 * lock-free. Ignored on a callback check. */
KCR_EXTERN void kcr_server_check_set(kcr_server_check_t *c, int healthy);

/*
 * kcr_server_remove_check unregisters a check; once it returns its callback is
 * not running and will not run again (it waits for a running check). NULL is
 * ignored. Any thread except the loop's and the callback's own.
 */
KCR_EXTERN void kcr_server_remove_check(kcr_server_t *s, kcr_server_check_t *c);

/*
 * kcr_server_stats: counters for tests and logs. Read with kcr_server_get_stats.
 *   connections         accepted and served.
 *   rejected            closed at once (over max_connections with nothing
 *                       to shed, or the memory budget spent on live
 *                       connections).
 *   shed                closed to admit a newer connection.
 *   requests            answered (any status).
 *   header_timeouts     closed because a head did not complete in time.
 *   too_large           answered 431.
 *   busy                answered 503: the memory budget was spent.
 *   tls_errors          TLS handshakes that failed (bad records, a refused
 *                       protocol version, no shared cipher).
 *   auth_refused        /metrics requests answered 429 because the auth
 *                       pool's queue was full.
 *   accept_waits        times a new connection was left in the listen queue
 *                       until closing connections gave their memory back
 *                       (a burst of sheds), instead of being refused.
 *   bytes_held          bytes now charged to the memory budget.
 *   bytes_held_peak     the most ever charged (never above max_buffered_bytes).
 */
typedef struct kcr_server_stats {
  uint64_t connections;
  uint64_t rejected;
  uint64_t requests;
  uint64_t header_timeouts;
  uint64_t too_large;
  uint64_t busy;
  uint64_t shed;
  uint64_t tls_errors;
  uint64_t accept_waits;
  uint64_t auth_refused;
  size_t bytes_held;
  size_t bytes_held_peak;
} kcr_server_stats;

/* kcr_server_get_stats copies the counters. Any thread. */
KCR_EXTERN void kcr_server_get_stats(kcr_server_t *s, kcr_server_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* KCR_SERVER_H */
