/* SPDX-License-Identifier: MIT */
/*
 * kcr/testing.h: the testing kit for operator authors (the testing layer,
 * src/testing/), as controller-runtime's pkg/client/fake and pkg/envtest:
 *
 *  - kcr_fake_client_*: an object tracker behind kcr_objclient_ops, so a
 *    reconciler runs against it without a cluster (fake.NewClientBuilder);
 *  - kcr_fake_recorder_*: an event recorder that records instead of sending;
 *  - kcr_testing_reconcile / kcr_testing_ctx_*: a reconcile context a test
 *    constructs, to call a kcr_reconcile_fn directly;
 *  - kcr_testing_log_*: captures the log lines a reconcile writes;
 *  - kcr_testenv_*: a real local control plane (etcd + kube-apiserver +
 *    kube-controller-manager) from the cached binaries, or an existing cluster,
 *    with CRDs installed and a REST config (envtest).
 *
 * docs/testing.md walks through a reconciler tested both ways. One header for
 * the kit, several sources (fake_client.c, testing.c, testenv.c): the kit is one
 * thing to a user.
 */
#ifndef KCR_TESTING_H
#define KCR_TESTING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/config.h"
#include "kcr/controller.h"
#include "kcr/error.h"
#include "kcr/events.h"
#include "kcr/log.h"
#include "kcr/objclient.h"
#include "kcr/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the fake object client ---- */

/*
 * kcr_fake_client_t: an in-memory object tracker answering the kcr_objclient
 * verbs the way the API server does. Thread-safe (one mutex): any number of
 * reconcile workers may share it.
 *
 * Objects are keyed by API group, kind, namespace and name (versions of a kind
 * share storage, as on the server). What it does, like controller-runtime's
 * fake client:
 *  - create assigns metadata.uid, metadata.resourceVersion (one counter for the
 *    whole tracker, as etcd's revision), creationTimestamp and generation 1;
 *    metadata.generateName with no name gets five random characters appended,
 *    after it is cut to its first 58 bytes (a generated name is at most 63, as
 *    the API server's names.SimpleNameGenerator makes them).
 *    A create that names a resourceVersion is refused (BadRequest), one without
 *    name or generateName is Invalid, an existing name is AlreadyExists (409).
 *  - update (PUT) with a resourceVersion other than the stored one is a Conflict
 *    (409, the API server's "the object has been modified" message); without a
 *    resourceVersion it is unconditional. generation grows when anything outside
 *    metadata and status changed. A missing object is NotFound (404); an
 *    update without metadata.name is Invalid (422, "metadata.name: Required
 *    value: name is required", as controller-runtime's fake answers).
 *  - by default every kind has the status subresource, as a CRD that declares
 *    it: update of "status" changes only .status (and the resourceVersion);
 *    update or patch of the object keeps the stored .status; create drops
 *    .status. Seeding with kcr_fake_client_add keeps the status given
 *    (WithObjects + WithStatusSubresource). kcr_fake_client_with_status_subresource
 *    switches to controller-runtime's rule, per kind (below).
 *  - patch: merge (RFC 7386) and JSON Patch (RFC 6902, test op included). JSON
 *    Patch keeps to the RFCs where the API server's library (evanphx/json-patch
 *    v4) does not: test compares numbers by value (1 equals 1.0; the server
 *    compares their text), and an array index in a path is "0" or digits
 *    without a leading zero (RFC 6901) anywhere in it ("01", "+1", "-1" are
 *    Invalid; the server takes them). Strategic merge patch as the server
 *    applies it (k8s.io/apimachinery strategicpatch) to the 24 built-in kinds
 *    whose OpenAPI schemas libkcr ships: lists merged by their patch-merge
 *    keys (containers and env by name, ports by containerPort...), merge
 *    lists of scalars (finalizers) unioned, other lists replaced, $patch
 *    (delete, replace), $deleteFromPrimitiveList, $retainKeys and
 *    $setElementOrder honoured; a bad patch is BadRequest (400); any other
 *    kind (a CRD) is UnsupportedMediaType (415), as the server refuses it.
 *  - only delete sets deletionTimestamp: an update or patch that sets one on a
 *    live object is Invalid (422, "metadata.deletionTimestamp: Invalid value:
 *    ...: field is immutable", as the API server answers), and one of a
 *    deleting object keeps the stored value.
 *  - delete of an object with finalizers sets deletionTimestamp (once) and
 *    keeps it; an update or patch that removes the last finalizer of such an
 *    object deletes it; adding a finalizer to it is Invalid (422), as the server
 *    forbids. Delete preconditions (uid, resourceVersion) give 409 Conflict.
 *    There is no garbage collector: owned objects stay.
 *  - list filters by namespace, label selector (kcr_selector_parse syntax) and
 *    field selector (metadata.name, metadata.namespace: =, ==, !=; a field
 *    index of the kind, kcr_fake_client_add_index: = and == only; any other
 *    field is BadRequest, as the server answers), and by
 *    kcr_list_options.index / index_value on such an index (one not
 *    registered: KCR_EINVAL, as the cache says); sorted by namespace and name,
 *    with limit and continue, and answers in the API server's List shape
 *    (kcr/objclient.h) with the tracker's current resourceVersion.
 *  - write options (kcr_write_options, kcr_delete_options.dry_run):
 *    dry_run runs every check of the write (Conflict, NotFound, AlreadyExists,
 *    Invalid, preconditions) and answers what would be stored, storing
 *    nothing: a dry-run create answers without a resourceVersion, a dry-run
 *    update or patch under the stored one. field_manager names the write's
 *    manager in metadata.managedFields (below). field_validation
 *    "Strict", "Warn" or "Ignore" is accepted (another value is BadRequest) and
 *    changes nothing: the fake has no schema, so Strict cannot refuse an
 *    unknown field (neither can controller-runtime's fake).
 *  - DeleteAllOf deletes each object a list with the same options selects
 *    (namespace, label and field selectors), each as a delete would
 *    (finalizers hold it; dry run deletes none).
 *  - metadata reads (kcr_objclient_get_metadata, _list_metadata) answer the
 *    objects reduced to {"apiVersion": "meta.k8s.io/v1", "kind":
 *    "PartialObjectMetadata", "metadata"}, in a PartialObjectMetadataList.
 *  - subresources: "status" get (the object) and update/patch; "scale" get and
 *    update of apps/v1 Deployments, ReplicaSets, StatefulSets and v1
 *    ReplicationControllers (an autoscaling/v1 Scale: spec.replicas, 1 when
 *    unset; status.replicas; status.selector as the server writes it); a kind
 *    without the subresource is NotFound ("the server could not find the
 *    requested resource"). "eviction" of a Pod (a policy Eviction body)
 *    deletes it as a delete would, dry run honoured (the option or the body's
 *    deleteOptions.dryRun), and answers a Status (201 Success); "token" of an
 *    existing ServiceAccount (a TokenRequest body) answers the TokenRequest
 *    with status.token "fake-token" and status.expirationTimestamp
 *    6041-01-01T00:00:00Z, as controller-runtime's fake. A body of the wrong
 *    kind is BadRequest; another subresource is KCR_ENOTSUP.
 *  - server-side apply: a field manager is required (the option or
 *    the client's field_manager; without one KCR_EINVAL, as kcr's client
 *    refuses it unsent: the server would answer 422), and the applied
 *    configuration may not carry metadata.managedFields (BadRequest);
 *    absent, the object is created; present, the applied configuration is
 *    merged into it: maps member by member (null is no value), lists of
 *    x-kubernetes-list-type map (or with a patch-merge key) by their keys,
 *    set lists unioned, other lists (and every list of a CRD) replaced. Dry
 *    run and the "status" subresource are honoured.
 *  - field ownership (metadata.managedFields) as the API server's field
 *    manager keeps it: a create, update or patch gives the fields it adds or
 *    changes to its manager (operation Update, per apiVersion; without a
 *    field_manager, "kcr", the name the server derives from kcr's
 *    User-Agent) and takes them from every other manager; a field removed
 *    leaves everyone. An apply makes its manager own exactly what it applies
 *    (operation Apply): changing a field another manager owns is a 409
 *    Conflict worded as the server words it ("Apply failed with 1 conflict:
 *    conflict with \"editor\" using apps/v1: .spec.replicas") unless force
 *    takes it over; applying the value it already has shares it; a field the
 *    manager applied before and no longer applies is removed from the object
 *    unless another manager owns it. A write through "status" owns only
 *    status, one through the object (of a kind with the status subresource)
 *    everything but status. An update that carries managedFields replaces
 *    them ([] clears them); an object seeded without managedFields is not
 *    tracked by updates, and the first apply to it gives what it has to
 *    "before-first-apply", as on the server. Sets follow the built-in kinds'
 *    list keys; every list of a CRD is atomic (owned whole), and where a
 *    schema would declare a map of structs the fake owns the map's keys one
 *    by one. The server's cap of 10 update managers is not applied. Answers
 *    leave metadata.managedFields out, as controller-runtime's fake does,
 *    unless kcr_fake_client_return_managed_fields says otherwise.
 *  - watches (kcr_objclient_watch) see every change a write or a seed makes,
 *    in order, as the server's watch does: the namespace, label and field
 *    selectors hold, an object that comes into or leaves the selection is ADDED or
 *    DELETED; no resource_version (or "0") starts with the current state,
 *    sorted by namespace and name; a version replays the changes after it
 *    from a history of the last 1,024 changes
 *    (kcr_fake_client_set_watch_history), and one older than that gets an
 *    ERROR event with 410 Expired and the end of the watch;
 *    send_initial_events (with allow_bookmarks, else Invalid) ends the
 *    current state with a BOOKMARK annotated k8s.io/initial-events-end;
 *    accept KCR_ACCEPT_PARTIAL_METADATA sends PartialObjectMetadata. A delete
 *    takes a resourceVersion of its own, as on the server. timeout_seconds
 *    ends the watch that long after it opened, as the server does (next then
 *    answers KCR_ECLOSED once what came before is handed over); without it
 *    the watch lasts until it is stopped or the fake is destroyed (then
 *    KCR_ECLOSED). Destroy the fake after the threads that use its watches
 *    are done with them.
 *  - errors are returned as the client returns the server's: KCR_EAPI with
 *    http_status, reason and message filled the way a metav1.Status fills them
 *    (kcr_error_is_not_found and friends work).
 * Objects passed in are copied; objects handed out are new deep copies, so a
 * test and a reconciler can mutate freely.
 */
typedef struct kcr_fake_client kcr_fake_client_t;

/* kcr_fake_verb: the verbs an interceptor sees (kcr_objclient_ops). */
typedef enum kcr_fake_verb {
  KCR_FAKE_GET = 0,
  KCR_FAKE_LIST,
  KCR_FAKE_CREATE,
  KCR_FAKE_UPDATE,
  KCR_FAKE_PATCH,
  KCR_FAKE_APPLY,
  KCR_FAKE_DELETE,
  KCR_FAKE_DELETE_ALL_OF, /* kcr_objclient_delete_all_of */
  KCR_FAKE_WATCH,         /* kcr_objclient_watch */
  KCR_FAKE_VERBS          /* how many */
} kcr_fake_verb;

/*
 * kcr_fake_call: one call as an interceptor sees it; everything borrowed for the
 * call. gvk: the kind (from the object for writes); ns, name: the object's (name
 * NULL for list and delete_all_of; for a create with generateName, "" until the
 * tracker picks one); obj: the object written (NULL for get, list, delete: then
 * see ns and name; a subresource's body, a Scale, Eviction or TokenRequest, when
 * there is one); subresource: "status", "scale", "eviction", "token" or NULL.
 * Metadata reads are KCR_FAKE_GET and KCR_FAKE_LIST, a subresource read is
 * KCR_FAKE_GET with subresource set, a subresource create KCR_FAKE_CREATE.
 */
typedef struct kcr_fake_call {
  kcr_fake_verb verb;
  const kcr_gvk *gvk;
  const char *ns;
  const char *name;
  const json_t *obj;
  const char *subresource;
} kcr_fake_call;

/*
 * kcr_fake_intercept_cb runs before the tracker for every call of its verb
 * (controller-runtime's interceptor.Funcs). Return 0 to let the tracker do the
 * call, or a negative kcr_err (with err filled, for instance by kcr_fake_error)
 * to fail it without touching the tracker. Runs on the caller's thread, without
 * the tracker's lock held: it may call the client itself.
 */
typedef int (*kcr_fake_intercept_cb)(const kcr_fake_call *call, kcr_error_t *err, void *data);

/*
 * kcr_fake_client_create makes an empty tracker. clock (borrowed; NULL: the
 * system clock) stamps creationTimestamp and deletionTimestamp. *out: new, NULL
 * on failure. Errors: KCR_ENOMEM, KCR_ESYS. Any thread.
 */
KCR_EXTERN int kcr_fake_client_create(kcr_clock_t *clock, kcr_fake_client_t **out,
                                      kcr_error_t *err);

/* kcr_fake_client_destroy frees the tracker and every object. NULL is ignored. */
KCR_EXTERN void kcr_fake_client_destroy(kcr_fake_client_t *f);

/*
 * kcr_fake_client_add seeds obj (borrowed, copied; apiVersion, kind and
 * metadata.name required) as it is, status included (WithObjects): uid,
 * resourceVersion, creationTimestamp and generation are filled only when absent,
 * and the tracker's counter moves past a numeric resourceVersion given. An
 * existing object of that key is AlreadyExists. An object with a
 * deletionTimestamp and no finalizers is refused with KCR_EINVAL ("refusing to
 * create obj NAME with metadata.deletionTimestamp but no finalizers", as
 * controller-runtime's builder says): no server holds one. Interceptors are not
 * consulted.
 */
KCR_EXTERN int kcr_fake_client_add(kcr_fake_client_t *f, const json_t *obj, kcr_error_t *err);

/* kcr_fake_client_add_json is kcr_fake_client_add of a JSON text (KCR_EPARSE if bad). */
KCR_EXTERN int kcr_fake_client_add_json(kcr_fake_client_t *f, const char *json, kcr_error_t *err);

/*
 * kcr_fake_client_objclient returns the object client that reads and writes
 * the tracker (by value: copy freely; valid while f lives). Its cancel and
 * field_manager are NULL.
 */
KCR_EXTERN kcr_objclient kcr_fake_client_objclient(kcr_fake_client_t *f);

/*
 * kcr_fake_client_add_index registers a field index on kind gvk (its group and
 * kind; versions share it), as WithIndex on controller-runtime's fake builder
 * and kcr_cache_add_index on the cache: fn (data passed back) adds the values
 * an object is indexed under with kcr_index_values_add. A list of gvk with
 * kcr_list_options.index = name and index_value, or a field selector term
 * name=value, then answers the objects whose values include it (within o->ns,
 * or every namespace), as the cache does. fn runs at each such list (and
 * DeleteAllOf) on each object of the kind, on the caller's thread with the
 * tracker's lock held: it must not call the client. An error it returns fails
 * the list with that code. name is copied. Errors: KCR_EINVAL (no kind, name
 * or fn), KCR_EEXIST (the kind has an index of that name), KCR_ENOMEM. Any
 * thread.
 */
KCR_EXTERN int kcr_fake_client_add_index(kcr_fake_client_t *f, const kcr_gvk *gvk, const char *name,
                                         kcr_index_fn fn, void *data, kcr_error_t *err);

/*
 * kcr_fake_client_with_status_subresource is WithStatusSubresource on
 * controller-runtime's fake builder. The first call switches the tracker from
 * its default (every kind has a status subresource) to controller-runtime's
 * rule: the built-in kinds that have one (Pod, Service, Namespace, Node,
 * PersistentVolume(Claim), ReplicationController, the apps/v1 workloads,
 * Job, CronJob, HorizontalPodAutoscaler, Ingress, NetworkPolicy,
 * PodDisruptionBudget, CertificateSigningRequest, VolumeAttachment,
 * CustomResourceDefinition, FlowSchema, PriorityLevelConfiguration) plus
 * every kind registered by a call (gvk: its group and kind; NULL registers
 * none, for the built-in set alone). A kind outside the set has no status
 * subresource: create, update and patch of the object write .status too, and
 * an update, patch or get of "status" is NotFound (404). Call it before the
 * objects are used; copied. Errors: KCR_EINVAL (a gvk without kind),
 * KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_fake_client_with_status_subresource(kcr_fake_client_t *f, const kcr_gvk *gvk,
                                                       kcr_error_t *err);

/*
 * kcr_fake_client_intercept installs cb for verb (replacing the previous one;
 * cb NULL removes it). Any thread; calls already past the interceptor are not
 * affected.
 */
KCR_EXTERN void kcr_fake_client_intercept(kcr_fake_client_t *f, kcr_fake_verb verb,
                                          kcr_fake_intercept_cb cb, void *data);

/*
 * kcr_fake_client_calls returns how many calls of verb reached the client,
 * intercepted or not (for asserting "wrote nothing"). Any thread.
 */
KCR_EXTERN uint64_t kcr_fake_client_calls(kcr_fake_client_t *f, kcr_fake_verb verb);

/*
 * kcr_fake_client_set_watch_history keeps the last n changes (default 1,024)
 * for watches that start at a resourceVersion; a watch from before the oldest
 * one kept is told 410 Expired. 0 keeps none, so that any watch from an
 * earlier version expires (to test a reflector's relist). Errors: KCR_EINVAL,
 * KCR_ENOMEM. Any thread.
 */
KCR_EXTERN int kcr_fake_client_set_watch_history(kcr_fake_client_t *f, size_t n, kcr_error_t *err);

/*
 * kcr_fake_client_return_managed_fields: whether answers (reads, writes,
 * watch events) carry metadata.managedFields, as the API server's do
 * (controller-runtime's WithReturnManagedFields). Off by default; the fake
 * keeps them either way. Any thread.
 */
KCR_EXTERN void kcr_fake_client_return_managed_fields(kcr_fake_client_t *f, bool on);

/* kcr_fake_client_reset_calls sets every call count back to 0. */
KCR_EXTERN void kcr_fake_client_reset_calls(kcr_fake_client_t *f);

/*
 * kcr_fake_client_count returns how many objects of gvk the tracker holds in
 * namespace ns (NULL: all). Any thread.
 */
KCR_EXTERN size_t kcr_fake_client_count(kcr_fake_client_t *f, const kcr_gvk *gvk, const char *ns);

/*
 * kcr_fake_error fills err as the client would for an API server failure:
 * code KCR_EAPI, the HTTP status, the Status reason ("Conflict",
 * "InternalError", ...) and a printf message. Returns KCR_EAPI, for
 * `return kcr_fake_error(err, 500, "InternalError", "etcd is down");` in an
 * interceptor. First error wins, as kcr_error_set.
 */
KCR_EXTERN int kcr_fake_error(kcr_error_t *err, int http_status, const char *reason,
                              const char *fmt, ...) KCR_PRINTF(4, 5);

/* ---- the recording event recorder ---- */

/*
 * kcr_fake_recorder_create makes an event recorder (usable wherever a
 * kcr_event_recorder_t is: kcr_event_record, kcr_event_record_object) that
 * sends nothing and keeps every call, in order, with no correlation or spam
 * filter (controller-runtime's record.FakeRecorder). *out: new, release with
 * kcr_event_recorder_destroy. Errors: KCR_ENOMEM, KCR_ESYS. Any thread.
 */
KCR_EXTERN int kcr_fake_recorder_create(kcr_event_recorder_t **out, kcr_error_t *err);

/*
 * kcr_fake_recorder_events returns a new JSON array of what r recorded, oldest
 * first: each {"type", "reason", "action", "note", "regarding": {"apiVersion",
 * "kind", "namespace", "name", "uid"}} (absent fields omitted). NULL when r is
 * not a fake recorder or memory ran out. Any thread.
 */
KCR_EXTERN json_t *kcr_fake_recorder_events(kcr_event_recorder_t *r);

/*
 * kcr_fake_recorder_count returns how many recorded events have this type and
 * reason (either NULL: any). Any thread.
 */
KCR_EXTERN size_t kcr_fake_recorder_count(kcr_event_recorder_t *r, const char *type,
                                          const char *reason);

/* ---- a reconcile context for tests ---- */

/*
 * kcr_testing_ctx_options: zero-initialise.
 *   controller_name  what kcr_reconcile_controller_name answers and log lines
 *                    name; NULL: "test". Copied.
 *   client           the object client kcr_reconcile_client hands out (usually
 *                    kcr_fake_client_objclient); copied by value. Its cancel is
 *                    replaced by the context's own token (kcr_testing_ctx_cancel).
 *   api_reader       what kcr_reconcile_api_reader hands out (a fake client's
 *                    objclient too, or zero: none); the same token.
 */
typedef struct kcr_testing_ctx_options {
  const char *controller_name;
  kcr_objclient client;
  kcr_objclient api_reader;
} kcr_testing_ctx_options;

/*
 * kcr_testing_ctx_t: a reconcile context made by a test; it owns a
 * kcr_reconcile_ctx_t (kcr_testing_ctx_get) that lives until destroy.
 */
typedef struct kcr_testing_ctx kcr_testing_ctx_t;

/*
 * kcr_testing_ctx_create makes a context for request req (strings copied). *out:
 * new, NULL on failure. Errors: KCR_EINVAL (no name), KCR_ENOMEM, KCR_ESYS.
 */
KCR_EXTERN int kcr_testing_ctx_create(const kcr_testing_ctx_options *o,
                                      const kcr_reconcile_request *req, kcr_testing_ctx_t **out,
                                      kcr_error_t *err);

/*
 * kcr_testing_ctx_get returns the reconcile context to pass to a
 * kcr_reconcile_fn (borrowed; valid until destroy). Its error record
 * (kcr_reconcile_err) is cleared by each kcr_testing_ctx_reset.
 */
KCR_EXTERN kcr_reconcile_ctx_t *kcr_testing_ctx_get(kcr_testing_ctx_t *t);

/* kcr_testing_ctx_request returns the request the context was made for (borrowed). */
KCR_EXTERN const kcr_reconcile_request *kcr_testing_ctx_request(kcr_testing_ctx_t *t);

/* kcr_testing_ctx_terminal tells whether the reconciler marked its error terminal. */
KCR_EXTERN bool kcr_testing_ctx_terminal(kcr_testing_ctx_t *t);

/* kcr_testing_ctx_cancel fires the context's cancellation token (controller stop). */
KCR_EXTERN void kcr_testing_ctx_cancel(kcr_testing_ctx_t *t);

/* kcr_testing_ctx_reset clears the error record, the terminal mark and the id, for another pass. */
KCR_EXTERN void kcr_testing_ctx_reset(kcr_testing_ctx_t *t);

/* kcr_testing_ctx_destroy frees t. NULL is ignored. */
KCR_EXTERN void kcr_testing_ctx_destroy(kcr_testing_ctx_t *t);

/*
 * kcr_testing_reconcile runs fn(ctx, req, res, data) once with a fresh context
 * over client, as a controller worker would, and returns what fn returned. res
 * (may be NULL) receives the result; err (may be NULL) receives the context's
 * error record (kcr_reconcile_err) when fn failed; terminal (may be NULL) says
 * whether fn marked its error terminal. A context that cannot be made gives its
 * own error (KCR_ENOMEM...). Blocking; any thread.
 */
KCR_EXTERN int kcr_testing_reconcile(kcr_reconcile_fn fn, void *data, const kcr_objclient *client,
                                     const kcr_reconcile_request *req, kcr_result *res,
                                     kcr_error_t *err, bool *terminal);

/* ---- captured logs ---- */

/*
 * kcr_testing_log_t: captures every log line (kcr/log.h, any component) while
 * it is installed. The log handler is process-wide: one capture at a time.
 */
typedef struct kcr_testing_log kcr_testing_log_t;

/*
 * kcr_testing_log_capture installs a capture at level (lines below it are not
 * kept, and the process log level is set to it). *out: new. Errors: KCR_ENOMEM,
 * KCR_ESYS. Release with kcr_testing_log_release, which restores the default
 * handler (kcr_log_set_handler(NULL, NULL)) and level KCR_LOG_INFO.
 */
KCR_EXTERN int kcr_testing_log_capture(kcr_log_level level, kcr_testing_log_t **out,
                                       kcr_error_t *err);

/*
 * kcr_testing_log_lines returns a new JSON array of the captured lines, oldest
 * first: {"level", "component", "msg", and each field as a string}. Any thread.
 */
KCR_EXTERN json_t *kcr_testing_log_lines(kcr_testing_log_t *l);

/* kcr_testing_log_contains tells whether a captured message contains text. */
KCR_EXTERN bool kcr_testing_log_contains(kcr_testing_log_t *l, const char *text);

/* kcr_testing_log_release uninstalls and frees l. NULL is ignored. */
KCR_EXTERN void kcr_testing_log_release(kcr_testing_log_t *l);

/* ---- the test environment (envtest) ---- */

/*
 * kcr_testenv_t: a running control plane for integration tests. Two ways in:
 *  - joined: with use_existing (or the environment variable
 *    KCR_USE_EXISTING_CLUSTER set to "true" or "1", envtest's
 *    USE_EXISTING_CLUSTER), the cluster of the kubeconfig named by
 *    o->kubeconfig, else $KCR_TEST_KUBECONFIG, else $KUBECONFIG, else
 *    ~/.kube/config. kcr_testenv_stop leaves it running.
 *  - started: otherwise `cluster.sh up DIR` into a fresh directory (mkdtemp
 *    under $TMPDIR or /tmp) starts etcd, kube-apiserver and
 *    kube-controller-manager from the binaries cached in the binary directory
 *    (kcr-envtest builds them there); kcr_testenv_stop brings it down (nothing
 *    left running, no fixed port: cluster.sh picks free ones) and removes DIR
 *    unless $KCR_TESTENV_KEEP is set.
 * The compatibility case: with $KCR_TEST_KUBECONFIG set (kcr's own CTest
 * fixture shares one cluster that way), that cluster is joined too.
 */
typedef struct kcr_testenv kcr_testenv_t;

/*
 * kcr_testenv_options: zero-initialise.
 *   crd_directory     apply every *.yaml / *.yml / *.json in it (not recursive)
 *                     and wait until each CRD is Established; NULL: none.
 *   kubeconfig        the cluster to join (with use_existing); NULL: see above.
 *   use_existing      join instead of starting (also KCR_USE_EXISTING_CLUSTER).
 *   cluster_script    cluster.sh to start with; NULL: $KCR_CLUSTER_SCRIPT, else
 *                     the installed one (<prefix>/share/kcr/cluster.sh).
 *   start_timeout_s   how long starting and joining may take; 0:
 *                     $KCR_TESTENV_UP_TIMEOUT, else 300.
 *   kwok              start with `cluster.sh up --kwok`: kube-scheduler and kwok
 *                     with fake nodes too, so Deployments become Available.
 */
typedef struct kcr_testenv_options {
  const char *crd_directory;
  const char *kubeconfig;
  bool use_existing;
  const char *cluster_script;
  int start_timeout_s;
  bool kwok;
} kcr_testenv_options;

/*
 * kcr_testenv_start_with starts or joins a cluster (see kcr_testenv_t), waits
 * until the API server is ready (/readyz), then installs the CRDs of
 * o->crd_directory. *out: new, NULL on failure. Errors: KCR_EINVAL,
 * KCR_ENOENT (no script, binaries or kubeconfig: the message says what to run),
 * KCR_ETIMEDOUT, KCR_ESYS, KCR_ENOMEM, or what installing the CRDs met. Blocks
 * for as long as starting takes; any thread. o may be NULL.
 */
KCR_EXTERN int kcr_testenv_start_with(const kcr_testenv_options *o, kcr_testenv_t **out,
                                      kcr_error_t *err);

/*
 * kcr_testenv_start is kcr_testenv_start_with(NULL, out, &err) that reports a
 * failure on stderr ("kcr_testenv: ...") and returns -1 (0 on success).
 */
KCR_EXTERN int kcr_testenv_start(kcr_testenv_t **out);

/*
 * kcr_testenv_rest_config loads a REST config for the environment's admin
 * kubeconfig (kcr_rest_config_load). *out: new reference. Errors as that call.
 */
KCR_EXTERN int kcr_testenv_rest_config(const kcr_testenv_t *env, kcr_rest_config_t **out,
                                       kcr_error_t *err);

/*
 * kcr_testenv_install_crds applies the CRDs of dir (as crd_directory above) and
 * waits up to timeout_s (0: 60) for each to be Established. Uses kubectl (the
 * cluster's own, $KCR_KUBECTL, or kubectl on PATH).
 */
KCR_EXTERN int kcr_testenv_install_crds(kcr_testenv_t *env, const char *dir, int timeout_s,
                                        kcr_error_t *err);

/* kcr_testenv_kubeconfig: the admin kubeconfig's path (borrowed, until stop). */
KCR_EXTERN const char *kcr_testenv_kubeconfig(const kcr_testenv_t *env);

/* kcr_testenv_dir: the cluster directory, the kubeconfig's (borrowed, until stop). */
KCR_EXTERN const char *kcr_testenv_dir(const kcr_testenv_t *env);

/* kcr_testenv_kubectl_path: the kubectl the environment uses (borrowed, until stop). */
KCR_EXTERN const char *kcr_testenv_kubectl_path(const kcr_testenv_t *env);

/* kcr_testenv_owned tells whether kcr_testenv_start started the cluster (stop brings it down). */
KCR_EXTERN bool kcr_testenv_owned(const kcr_testenv_t *env);

/* kcr_testenv_cluster_script: the cluster.sh in use, NULL when joined (borrowed). */
KCR_EXTERN const char *kcr_testenv_cluster_script(const kcr_testenv_t *env);

/*
 * kcr_testenv_stop releases env: a started cluster is brought down and its
 * directory removed (kept, and its path printed, with $KCR_TESTENV_KEEP); a
 * joined one is left running. NULL is a no-op. Returns 0, or -1 when bringing
 * the cluster down failed.
 */
KCR_EXTERN int kcr_testenv_stop(kcr_testenv_t *env);

/*
 * kcr_testenv_binary_dir writes the directory of the cached control-plane
 * binaries (etcd, kube-apiserver, kube-controller-manager, kubectl) into buf:
 * $KCR_BIN_DIR when set, else the newest ~/.cache/kcr/envtest/<version> (made
 * by `kcr-envtest use`), else the newest ~/.cache/kcr/k8s/<version>/bin
 * ($KCR_CACHE replaces ~/.cache/kcr) that holds kube-apiserver. Returns 0,
 * KCR_ENOENT when there is none (`kcr-envtest use` builds them), KCR_ETOOBIG.
 */
KCR_EXTERN int kcr_testenv_binary_dir(char *buf, size_t size, kcr_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* KCR_TESTING_H */
