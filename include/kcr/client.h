/* SPDX-License-Identifier: MIT */
/*
 * kcr/client.h: talking to the API server — client-go's rest and dynamic clients
 * with controller-runtime's client verbs on top.
 *
 * A kcr_client_t sends every request through one I/O loop (kcr/loop.h), so all
 * requests and watches share connections. The verbs below are synchronous: the
 * calling thread builds the request, the loop runs it, the caller waits. Any
 * thread may call them except the loop thread itself. Objects are jansson json_t:
 * arguments are borrowed, results are new references the caller owns.
 *
 * Errors: a non-2xx answer is KCR_EAPI with the server's metav1.Status in the
 * kcr_error_t (HTTP status, reason, message; see kcr/apierror.h for predicates);
 * transport failures are KCR_ECONN, KCR_ETLS, KCR_ETIMEDOUT, KCR_ECANCELED; a body
 * over the client's limit is KCR_ETOOBIG; a body that is not the JSON asked for is
 * KCR_EPROTO.
 *
 * Retries follow client-go: a 429 or 5xx answer carrying an integer Retry-After is
 * retried after that many seconds, at most max_retries times (10); GETs are also
 * retried on a connection reset. Nothing else is retried.
 */
#ifndef KCR_CLIENT_H
#define KCR_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/config.h"
#include "kcr/error.h"
#include "kcr/loop.h"
#include "kcr/metrics.h"
#include "kcr/watch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kcr_client_t: opaque; thread-safe. */
typedef struct kcr_client kcr_client_t;

/*
 * The series a client registers on kcr_client_options.metrics, client-go's
 * names and labels: rest_client_requests_total{code,method,host} (counter; code
 * is "<error>" when no answer came) and rest_client_request_duration_seconds{verb,
 * host} (histogram, client-go's buckets 0.005 ... 60 s). Each HTTP attempt counts
 * once when it ends (a watch as method "WATCH"), on the loop thread: one label
 * lookup under the family's lock, then atomics.
 */
#define KCR_CLIENT_METRIC_REQUESTS "rest_client_requests_total"
#define KCR_CLIENT_METRIC_DURATION "rest_client_request_duration_seconds"

/*
 * Warnings. An API server may answer with Warning headers (RFC 7234 section
 * 5.5, warn-code 299: a deprecated API, an unknown field under
 * fieldValidation=Warn, a value it will stop accepting). The client parses
 * them with apimachinery's ParseWarningHeaders rules (docs/client.md,
 * Warnings) and, as controller-runtime's client does, logs each at INFO under
 * the logger "KubeAPIWarningLogger"; by default each distinct text once per
 * client.
 *
 * kcr_warning: one warning of an answer.
 *   code   the warn-code (three digits; 299 from the API server).
 *   agent  the warn-agent ("-" from the API server).
 *   text   the warn-text: unquoted, backslash escapes resolved, RFC 2047 words
 *          decoded; valid UTF-8 without control characters; may be "".
 */
typedef struct kcr_warning {
  int code;
  char *agent;
  char *text;
} kcr_warning;

/*
 * kcr_warning_handler receives each warning of an answer, in the order they
 * came, with the request's method ("WATCH" for a watch) and path (with its
 * query); everything is borrowed for the call. It is called for every code
 * (the default logger keeps only 299 with a text). It runs on the thread that
 * made the request, once the final answer is in (the warnings of an attempt
 * that was retried are dropped, as client-go drops them), before the call
 * returns; for a watch, on the thread in kcr_watch_run, before the first event
 * (or before it returns). No lock of the client is held: it may block or use
 * the client.
 */
typedef void (*kcr_warning_handler)(const kcr_warning *w, const char *method, const char *path,
                                    void *data);

/* kcr_warning_mode: what the client does with warnings. */
typedef enum kcr_warning_mode {
  KCR_WARNINGS_DEDUPLICATE = 0, /* log each distinct 299 text once per client (the
                                   texts remembered are bounded: after 4096 others
                                   one may be logged again) */
  KCR_WARNINGS_LOG_ALL = 1,     /* log every 299 warning (controller-runtime's
                                   default since v0.20) */
  KCR_WARNINGS_OFF = 2          /* neither log nor call the handler (rest.NoWarnings) */
} kcr_warning_mode;

/*
 * kcr_client_options: zero-initialise, then set what you need.
 *   config       required; borrowed (the client takes its own reference).
 *   loop         a started loop to share; NULL: the client makes, starts and owns one.
 *   qps, burst   client-side token bucket; qps 0 turns it off (controller-runtime's
 *                default since v0.21). burst defaults to qps rounded up.
 *   max_response_bytes  largest body accepted; 0: 256 MiB.
 *   timeout_ns   timeout of each attempt of a request without its own; 0: none
 *                (as client-go's rest.Config.Timeout).
 *   max_retries  Retry-After retries; 0: 10; negative: none.
 *   user_agent   NULL: "kcr/<version> (linux)".
 *   metrics      borrowed, must outlive the client; NULL: no metrics. The client
 *                registers the series above on it (several clients share them).
 *   warning_handler, warning_data, warnings  what happens to the API server's
 *                warnings (Warnings, above); zero: each distinct text logged once.
 */
typedef struct kcr_client_options {
  kcr_rest_config_t *config;
  kcr_loop_t *loop;
  double qps;
  int burst;
  size_t max_response_bytes;
  int64_t timeout_ns;
  int max_retries;
  const char *user_agent;
  kcr_metrics_registry_t *metrics;
  /* Warnings (above). warning_handler, when set, replaces the logging and gets
   * warning_data; warnings picks the logging, and KCR_WARNINGS_OFF silences the
   * handler too. kcr_response.warnings holds an answer's warnings whatever
   * these say. */
  kcr_warning_handler warning_handler;
  void *warning_data;
  kcr_warning_mode warnings;
} kcr_client_options;

/*
 * kcr_client_create makes a client. *out: new client, NULL on failure. Errors:
 * KCR_EINVAL (no config), KCR_EEXIST (opts->metrics holds a clashing family of
 * one of the client's names), KCR_ENOMEM, KCR_ESYS. Any thread.
 */
KCR_EXTERN int kcr_client_create(const kcr_client_options *opts, kcr_client_t **out,
                                 kcr_error_t *err);

/*
 * kcr_client_destroy stops the client's own loop (if it made one; requests still
 * running end with KCR_ECANCELED) and frees the client. Requests from other threads
 * must have returned. NULL is ignored. Not on the loop thread.
 */
KCR_EXTERN void kcr_client_destroy(kcr_client_t *c);

/* kcr_client_loop returns the client's loop. Borrowed, lives as long as c. */
KCR_EXTERN kcr_loop_t *kcr_client_loop(kcr_client_t *c);

/* kcr_client_config returns the client's config. Borrowed, lives as long as c. */
KCR_EXTERN kcr_rest_config_t *kcr_client_config(kcr_client_t *c);

/*
 * kcr_cancel_t: a cancellation token shared by any number of requests (Go's
 * context.Context, for cancellation and deadlines). Opaque, thread-safe. A
 * token fires once, for one reason: kcr_cancel_fire (its requests end with
 * KCR_ECANCELED, Go's context.Canceled) or its deadline passing (KCR_ETIMEDOUT,
 * Go's context.DeadlineExceeded). A request whose token has fired fails at
 * once, before anything is sent; one in flight when it fires is aborted on the
 * loop and returns the token's reason; a Retry-After or reconnect retry that
 * would start after the deadline is not made (the last answer is returned).
 * A request's own timeout (kcr_request.timeout_ns, the client's timeout_ns)
 * still applies: whichever comes first ends it. Watches take no token.
 */
typedef struct kcr_cancel kcr_cancel_t;

/* kcr_cancel_create makes a token that is not cancelled and has no deadline.
 * Returns 0 or KCR_ENOMEM. Any thread. */
KCR_EXTERN int kcr_cancel_create(kcr_cancel_t **out, kcr_error_t *err);

/*
 * kcr_cancel_create_child makes a token that fires when parent fires (with the
 * parent's reason) or when clock's monotonic reading (kcr_clock_now) reaches
 * deadline_ns, whichever comes first (context.WithDeadline; for WithTimeout
 * pass kcr_clock_now(clock) + timeout). Firing the child does not fire the
 * parent. parent NULL: no parent; deadline_ns 0: no deadline of its own
 * (context.WithCancel); clock NULL: the system clock. A child's deadline is the
 * earlier of its own and its parent's (kcr_cancel_deadline). parent (borrowed)
 * must outlive the child; clock (borrowed) must outlive the token. A child of a
 * token that has already fired is born fired.
 *
 * *out: the new token, NULL on failure. Errors: KCR_EINVAL (out NULL, a
 * negative deadline, or a deadline on another clock than the parent's own
 * deadline), KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_cancel_create_child(kcr_cancel_t *parent, kcr_clock_t *clock,
                                       int64_t deadline_ns, kcr_cancel_t **out, kcr_error_t *err);

/*
 * kcr_cancel_fire cancels every request using the token and every token
 * derived from it, now and later: they return KCR_ECANCELED. A token that has
 * already fired (its deadline included) keeps its first reason. Any thread.
 * Idempotent.
 */
KCR_EXTERN void kcr_cancel_fire(kcr_cancel_t *t);

/*
 * kcr_cancel_err is Go's ctx.Err(): 0 while the token has not fired,
 * KCR_ECANCELED once it was fired (itself or through its parent), KCR_ETIMEDOUT
 * once its deadline has passed (the call notices a deadline that passed and
 * fires the token, so its requests in flight are aborted). Any thread.
 */
KCR_EXTERN int kcr_cancel_err(kcr_cancel_t *t);

/* kcr_cancel_fired tells whether the token has fired, for either reason
 * (kcr_cancel_err != 0). Any thread. */
KCR_EXTERN int kcr_cancel_fired(kcr_cancel_t *t);

/* kcr_cancel_deadline returns the token's deadline in nanoseconds on the clock
 * it was made with (the parent's when the parent's deadline is earlier), 0
 * when it has none. Any thread. */
KCR_EXTERN int64_t kcr_cancel_deadline(kcr_cancel_t *t);

/* kcr_cancel_destroy frees a token no request uses any more and that has no
 * child left (destroy the children first). NULL is ignored. */
KCR_EXTERN void kcr_cancel_destroy(kcr_cancel_t *t);

/*
 * kcr_request: a raw HTTP request. path is absolute with its query string
 * ("/api/v1/namespaces/default/configmaps?limit=500"); body/body_len may be empty;
 * content_type describes the body; accept defaults to "application/json";
 * timeout_ns bounds the whole call, Retry-After retries and their sleeps
 * included (as client-go's Request.Timeout); 0 uses the client's timeout, which
 * bounds each attempt. cancel may be NULL. Everything is borrowed for the call.
 */
typedef struct kcr_request {
  const char *method;
  const char *path;
  const char *content_type;
  const void *body;
  size_t body_len;
  const char *accept;
  int64_t timeout_ns;
  kcr_cancel_t *cancel;
} kcr_request;

/*
 * kcr_response: what came back. body is new (NUL-terminated, body_len bytes) and
 * content_type is new; release both with kcr_response_free. warnings holds the
 * nwarnings warnings of the answer (new, NULL when there are none; released by
 * kcr_response_free too), whatever kcr_client_options.warnings says.
 */
typedef struct kcr_response {
  long status;
  char *body;
  size_t body_len;
  char *content_type;
  kcr_warning *warnings;
  size_t nwarnings;
} kcr_response;

/*
 * kcr_client_do sends req and waits for the answer, retrying as described at the
 * top. Returns 0 for a 2xx answer; KCR_EAPI for any other answer (resp holds it
 * too); or a transport error (resp zeroed). resp may be NULL when the body is not
 * wanted. Blocks; not on the loop thread.
 */
KCR_EXTERN int kcr_client_do(kcr_client_t *c, const kcr_request *req, kcr_response *resp,
                             kcr_error_t *err);

/* kcr_response_free releases a response's memory and zeroes it. NULL is ignored. */
KCR_EXTERN void kcr_response_free(kcr_response *r);

/*
 * kcr_gvr: a group, version and resource (plural) — what a URL names. group ""
 * is the core group (/api/v1).
 */
typedef struct kcr_gvr {
  const char *group;
  const char *version;
  const char *resource;
} kcr_gvr;

/* kcr_patch_type: the Content-Type of a patch. */
typedef enum kcr_patch_type {
  KCR_PATCH_MERGE = 0,     /* application/merge-patch+json (RFC 7386) */
  KCR_PATCH_JSON = 1,      /* application/json-patch+json (RFC 6902) */
  KCR_PATCH_STRATEGIC = 2, /* application/strategic-merge-patch+json (built-in kinds) */
  KCR_PATCH_APPLY = 3      /* application/apply-patch+yaml: server-side apply */
} kcr_patch_type;

/*
 * kcr_request_options: the query parameters and knobs of the verbs; zero-initialise
 * and set what applies (each verb ignores what it does not use). Strings are
 * borrowed for the call.
 *   subresource        "status", "scale", ... (get, update, patch)
 *   label_selector, field_selector, limit, continue_token    (list, delete_collection)
 *   resource_version, resource_version_match                 (get, list)
 *   field_manager, force, dry_run                            (create, update, patch)
 *   dry_run            also delete and delete_collection: dryRun=All
 *   propagation_policy "Foreground", "Background", "Orphan"  (delete)
 *   precondition_uid, precondition_resource_version          (delete)
 *   grace_period_seconds  -1: unset                           (delete); 0 is "now"
 *   timeout_ns, cancel  as in kcr_request
 *   field_validation   "Strict", "Warn" or "Ignore": what the server does with
 *                      a field it does not know or one given twice
 *                      (fieldValidation; create, update, patch, apply,
 *                      create_subresource); NULL: the server's default (Warn).
 *                      Strict turns such a field into a 400 BadRequest
 *                      (KCR_EAPI) whose message names the field.
 *   accept             the Accept header (get, list); NULL: "application/json".
 *                      KCR_ACCEPT_PARTIAL_METADATA(_LIST) asks for metadata only.
 *   shard_selector     shardSelector (list): only objects whose hashed field is
 *                      in the ranges (kcr/sharding.h). A server without the
 *                      ShardedListAndWatch gate ignores it and sends everything;
 *                      such a list has no metadata.shardInfo.
 */
typedef struct kcr_request_options {
  const char *subresource;
  const char *label_selector;
  const char *field_selector;
  long limit;
  const char *continue_token;
  const char *resource_version;
  const char *resource_version_match;
  const char *field_manager;
  int force;
  int dry_run;
  const char *propagation_policy;
  const char *precondition_uid;
  const char *precondition_resource_version;
  int64_t grace_period_seconds;
  int64_t timeout_ns;
  kcr_cancel_t *cancel;
  /* When the call's out is NULL and this is set: the answer's
   * metadata.resourceVersion, NUL-terminated, "" when it has none or does not
   * fit (resource_version_out_size bytes), scanned from the bytes without
   * building a tree. What the manager's object client needs from a write
   * whose answer nobody reads, to keep the cache's read-your-writes. */
  char *resource_version_out;
  size_t resource_version_out_size;
  const char *field_validation;
  const char *accept;
  const char *shard_selector;
} kcr_request_options;

/*
 * The Accept headers of a metadata-only read (the metadata client's): the
 * server answers a get with a meta.k8s.io/v1 PartialObjectMetadata (apiVersion,
 * kind and metadata, no spec, data or status) and a list with a
 * PartialObjectMetadataList; an API that cannot do that answers with whole
 * objects (the plain application/json that ends each header).
 */
#define KCR_ACCEPT_PARTIAL_METADATA                                                                \
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
#define KCR_ACCEPT_PARTIAL_METADATA_LIST                                                           \
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

/*
 * The verbs. r names the resource; ns is the namespace (NULL or "" for
 * cluster-scoped resources and for listing across all namespaces); o may be NULL.
 * On success *out (when out is not NULL) is a new reference to the object the
 * server returned; on failure it is NULL.
 *
 * kcr_client_get      GET one object (or its subresource).
 * kcr_client_list     GET a list: {"items": [...], "metadata": {"continue", ...}}.
 * kcr_client_create_object  POST obj (borrowed). (kcr_client_create makes the client.)
 * kcr_client_update   PUT obj (borrowed) to the name in its metadata.
 * kcr_client_patch    PATCH name with patch bytes of the given type; for
 *                     KCR_PATCH_APPLY, field_manager is required.
 * kcr_client_apply    server-side apply of obj (borrowed; serialised as JSON,
 *                     which is valid YAML) with field_manager (required) and force.
 * kcr_client_delete   DELETE name; *out is what the server returned (the object
 *                     while finalizers hold it, or a Status).
 * kcr_client_delete_collection  DELETE every object matching the selectors.
 * kcr_client_create_subresource  POST obj (borrowed) to name's subresource
 *                     o->subresource (required): "eviction" of a Pod, "token"
 *                     of a ServiceAccount; *out is what the server returned.
 */
KCR_EXTERN int kcr_client_get(kcr_client_t *c, const kcr_gvr *r, const char *ns, const char *name,
                              const kcr_request_options *o, json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_client_list(kcr_client_t *c, const kcr_gvr *r, const char *ns,
                               const kcr_request_options *o, json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_client_create_object(kcr_client_t *c, const kcr_gvr *r, const char *ns,
                                        json_t *obj, const kcr_request_options *o, json_t **out,
                                        kcr_error_t *err);
KCR_EXTERN int kcr_client_update(kcr_client_t *c, const kcr_gvr *r, const char *ns, json_t *obj,
                                 const kcr_request_options *o, json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_client_patch(kcr_client_t *c, const kcr_gvr *r, const char *ns, const char *name,
                                kcr_patch_type type, const char *patch, size_t patch_len,
                                const kcr_request_options *o, json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_client_apply(kcr_client_t *c, const kcr_gvr *r, const char *ns, json_t *obj,
                                const kcr_request_options *o, json_t **out, kcr_error_t *err);
KCR_EXTERN int kcr_client_delete(kcr_client_t *c, const kcr_gvr *r, const char *ns,
                                 const char *name, const kcr_request_options *o, json_t **out,
                                 kcr_error_t *err);
KCR_EXTERN int kcr_client_delete_collection(kcr_client_t *c, const kcr_gvr *r, const char *ns,
                                            const kcr_request_options *o, kcr_error_t *err);
KCR_EXTERN int kcr_client_create_subresource(kcr_client_t *c, const kcr_gvr *r, const char *ns,
                                             const char *name, json_t *obj,
                                             const kcr_request_options *o, json_t **out,
                                             kcr_error_t *err);

/*
 * kcr_client_path builds the URL path of a resource into buf (size bytes):
 * /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]] or /apis/GROUP/VERSION/...; every
 * segment is percent-encoded. Returns the length, KCR_ETOOBIG, or KCR_EINVAL for an
 * empty resource or version, or a name with a '/'. Any thread.
 */
KCR_EXTERN int kcr_client_path(const kcr_gvr *r, const char *ns, const char *name,
                               const char *subresource, char *buf, size_t size);

/*
 * kcr_watch_options: the query of a watch; zero-initialise and set what applies.
 *   label_selector, field_selector, shard_selector  as for list.
 *   resource_version        start after this version ("" or NULL: from now, with
 *                           the current state first as ADDED events).
 *   resource_version_match  "NotOlderThan" with send_initial_events (streaming list).
 *   timeout_seconds         the server ends the watch after this long (0: the
 *                           server's default); reflectors pick 300..600 at random.
 *   allow_bookmarks         ask for BOOKMARK events.
 *   send_initial_events     stream the current state first, then a bookmark
 *                           annotated k8s.io/initial-events-end.
 *   idle_timeout_ns         no byte for this long means the connection is dead
 *                           (half-open); the watch ends with KCR_ETIMEDOUT. 0:
 *                           timeout_seconds + 30 s when timeout_seconds is set,
 *                           else 10 minutes. Granularity one second.
 *   max_line                longest event accepted (0: KCR_WATCH_MAX_LINE_DEFAULT).
 *   max_buffered            most bytes the loop may hold for the consumer, received but
 *                           not yet decoded, before the watch ends with KCR_ETOOBIG
 *                           (0: KCR_WATCH_MAX_BUFFERED_DEFAULT). The loop never waits
 *                           for a consumer: one that falls this far behind loses its
 *                           watch (a reflector then re-watches from its last version)
 *                           instead of growing the process without bound.
 *   accept                  the Accept header; NULL: "application/json".
 *                           KCR_ACCEPT_PARTIAL_METADATA makes each event's object
 *                           a PartialObjectMetadata (the metadata client's watch).
 */
typedef struct kcr_watch_options {
  const char *label_selector;
  const char *field_selector;
  const char *resource_version;
  const char *resource_version_match;
  long timeout_seconds;
  int allow_bookmarks;
  int send_initial_events;
  int64_t idle_timeout_ns;
  size_t max_line;
  size_t max_buffered;
  const char *shard_selector;
  const char *accept;
} kcr_watch_options;

/* The default of kcr_watch_options.max_buffered: 256 MiB, a streaming list of
 * about 170k 1 KiB objects that the consumer has not begun to decode. */
#define KCR_WATCH_MAX_BUFFERED_DEFAULT ((size_t)256 * 1024 * 1024)

/*
 * kcr_watch_t: one open watch. Opaque. The loop thread only moves its bytes: it
 * appends what the network delivers to the watch's inbox. Decoding and the event
 * callback run on the thread that calls kcr_watch_run, so a slow consumer delays
 * nothing but its own watch.
 */
typedef struct kcr_watch kcr_watch_t;

/*
 * kcr_watch_cb receives each event, on the thread in kcr_watch_run, in stream
 * order (kcr/watch.h: the event's object is a NEW reference the callback owns on
 * every path). It may block (the loop goes on receiving into the inbox). Return
 * 0 to go on, or a negative kcr_err to end the watch with that code. It may call
 * kcr_watch_stop, but not kcr_watch_destroy, on its own watch.
 */
typedef int (*kcr_watch_cb)(const kcr_watch_event *event, void *data);

/*
 * kcr_client_watch starts a watch of r in ns (NULL or "": all namespaces) and
 * returns at once; the loop starts receiving at once too. Consume it with
 * kcr_watch_run. *out: the new watch (release with kcr_watch_destroy), NULL on
 * failure. Errors before the watch starts (bad arguments, credentials, a stopped
 * loop) are returned here. Not on the loop thread (credentials may need an exec
 * plugin).
 */
KCR_EXTERN int kcr_client_watch(kcr_client_t *c, const kcr_gvr *r, const char *ns,
                                const kcr_watch_options *o, kcr_watch_t **out, kcr_error_t *err);

/*
 * kcr_watch_run decodes the watch's stream on the calling thread and calls
 * on_event for each event, until the watch ends; then it returns why: 0 when the
 * server closed it normally (timeoutSeconds), or KCR_EAPI (the server refused it,
 * e.g. 410 Gone: err holds the Status), KCR_ETIMEDOUT (idle timeout),
 * KCR_ECONN/KCR_ETLS (transport), KCR_ECANCELED (kcr_watch_stop, or the loop
 * stopped), KCR_EPARSE/KCR_EPROTO/KCR_ETOOBIG (a bad stream, or a consumer past
 * max_buffered), or what on_event returned. Once per watch: a second call returns
 * KCR_EINVAL. Any thread but the loop's.
 */
KCR_EXTERN int kcr_watch_run(kcr_watch_t *w, kcr_watch_cb on_event, void *data, kcr_error_t *err);

/*
 * kcr_watch_stop ends the watch: kcr_watch_run returns KCR_ECANCELED (at once if
 * it is waiting; after the current callback if one runs), bytes not yet decoded
 * are dropped, and the transfer is cancelled on the loop. Idempotent. Any thread,
 * the loop's and on_event included.
 */
KCR_EXTERN void kcr_watch_stop(kcr_watch_t *w);

/*
 * kcr_watch_destroy stops the watch and releases the caller's handle; the loop
 * lets go of its own share once the transfer has ended. Not while kcr_watch_run
 * runs on the watch (stop it, let run return, then destroy). NULL is ignored.
 */
KCR_EXTERN void kcr_watch_destroy(kcr_watch_t *w);

#ifdef __cplusplus
}
#endif

#endif /* KCR_CLIENT_H */
