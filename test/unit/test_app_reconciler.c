/* SPDX-License-Identifier: MIT */
/*
 * test_app_reconciler.c: the App operator's reconciler (kop_app_reconcile)
 * driven with the testing kit (kcr/testing.h), no cluster: the fake object
 * client holds the App and its children, the fake recorder keeps its Events,
 * kcr_testing_ctx_* gives it the context a worker would.
 *
 * The reconciler reads a child a create was refused for through a
 * kcr_client_t ("direct": uncached). That client is real: it talks HTTP to a
 * scripted server on 127.0.0.1:0 (test/unit/httpserver.c) whose handler
 * answers GET/POST/PUT of configmaps from the same fake tracker, so one store
 * holds everything the reconciler wrote. The directory ConfigMap is read
 * through it too (then written through the fake object client), unless the
 * reconciler's memo says the App's entry is already right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/app_desired.h"
#include "app/reconciler.h"
#include "httpserver.h"
#include "kcr/apierror.h"
#include "kcr/config.h"
#include "kcr/controllerutil.h"
#include "kcr/meta.h"
#include "kcr/testing.h"
#include "testutil.h"

#define DIR_NS "kcr-system"
#define FIXTURE(name) KCR_TEST_DATA_DIR "/operator/" name

static const kcr_gvk app_gvk = {KOP_APP_GROUP, KOP_APP_VERSION, KOP_APP_KIND};
static const kcr_gvk deploy_gvk = {"apps", "v1", "Deployment"};
static const kcr_gvk svc_gvk = {"", "v1", "Service"};
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};

typedef struct env {
  kcr_fake_client_t *fake;
  kcr_objclient c;
  kcr_event_recorder_t *events;
  kcr_test_http_t *http;
  kcr_client_t *direct;
  kcr_rest_config_t *cfg;
  kop_app_reconciler r;
  kcr_scheme_t *scheme;
  kop_app_directory_memo *memo;
  int direct_requests; /* what the scripted server answered */
  char dir[64];
} env_t;

/* ---- the direct client's server: configmaps from the fake tracker ---- */

static void respond_error(kcr_test_http_response *resp, const kcr_error_t *err) {
  static __thread char body[1024];
  json_t *st = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                         "status", "Failure", "message", err->message, "reason", err->reason,
                         "code", err->http_status);
  char *text = json_dumps(st, JSON_COMPACT);
  snprintf(body, sizeof(body), "%s", text ? text : "{}");
  free(text);
  json_decref(st);
  resp->status = err->http_status ? err->http_status : 500;
  resp->body = body;
}

static void respond_obj(kcr_test_http_response *resp, int status, json_t *obj) {
  static __thread char body[65536];
  char *text = json_dumps(obj, JSON_COMPACT);
  snprintf(body, sizeof(body), "%s", text ? text : "{}");
  free(text);
  resp->status = status;
  resp->body = body;
}

static void on_request(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  static const char prefix[] = "/api/v1/namespaces/";
  env_t *e = data;
  char ns[128] = "", name[256] = "";
  const char *p = req->path;
  json_t *obj = NULL, *body = NULL;
  kcr_error_t err;
  int rc;
  kcr_error_clear(&err);
  __atomic_add_fetch(&e->direct_requests, 1, __ATOMIC_SEQ_CST);
  if (strncmp(p, prefix, sizeof(prefix) - 1) != 0 ||
      sscanf(p + sizeof(prefix) - 1, "%127[^/]/configmaps/%255[^?]", ns, name) < 1 ||
      !strstr(p, "/configmaps")) {
    resp->status = 404;
    resp->body = "{}";
    return;
  }
  if (strcmp(req->method, "GET") == 0) {
    rc = kcr_objclient_get(&e->c, &cm_gvk, ns, name, &obj, &err);
  } else {
    json_error_t je;
    body = json_loadb(req->body, req->body_len, 0, &je);
    if (strcmp(req->method, "POST") == 0)
      rc = kcr_objclient_create(&e->c, body, &obj, &err);
    else if (strcmp(req->method, "PUT") == 0)
      rc = kcr_objclient_update(&e->c, body, NULL, &obj, &err);
    else
      rc = kcr_fake_error(&err, 405, "MethodNotAllowed", "method %s", req->method);
  }
  if (rc)
    respond_error(resp, &err);
  else
    respond_obj(resp, strcmp(req->method, "POST") == 0 ? 201 : 200, obj);
  json_decref(obj);
  json_decref(body);
}

/* ---- fixture ---- */

static int setup(void **state) {
  env_t *e = calloc(1, sizeof(*e));
  kcr_client_options co;
  kcr_config_options cfo;
  char kubeconfig[256];
  assert_non_null(e);
  assert_int_equal(kcr_fake_client_create(NULL, &e->fake, NULL), 0);
  e->c = kcr_fake_client_objclient(e->fake);
  assert_int_equal(kcr_fake_recorder_create(&e->events, NULL), 0);
  assert_int_equal(kcr_test_http_start(on_request, e, &e->http), 0);
  snprintf(e->dir, sizeof(e->dir), "/tmp/kcr-app-reconciler-XXXXXX");
  assert_non_null(mkdtemp(e->dir));
  assert_int_equal(kcr_test_kubeconfig(e->dir, kcr_test_http_port(e->http), NULL, kubeconfig,
                                       sizeof(kubeconfig)),
                   0);
  memset(&cfo, 0, sizeof(cfo));
  cfo.kubeconfig = kubeconfig;
  assert_int_equal(kcr_rest_config_load(&cfo, &e->cfg, NULL), 0);
  memset(&co, 0, sizeof(co));
  co.config = e->cfg;
  co.timeout_ns = 10 * KCR_NSEC_PER_SEC;
  assert_int_equal(kcr_client_create(&co, &e->direct, NULL), 0);
  unlink(kubeconfig);
  rmdir(e->dir);
  e->r.directory_namespace = DIR_NS;
  e->r.events = e->events;
  e->r.direct = e->direct;
  assert_int_equal(kop_app_scheme_create(&e->scheme, NULL), 0);
  e->r.scheme = e->scheme;
  assert_int_equal(kop_app_directory_memo_create(&e->memo), 0);
  e->r.memo = e->memo;
  *state = e;
  return 0;
}

static int teardown(void **state) {
  env_t *e = *state;
  kcr_client_destroy(e->direct);
  kcr_scheme_destroy(e->scheme);
  kop_app_directory_memo_destroy(e->memo);
  kcr_rest_config_unref(e->cfg);
  kcr_test_http_stop(e->http);
  kcr_event_recorder_destroy(e->events);
  kcr_fake_client_destroy(e->fake);
  free(e);
  return 0;
}

static void seed_app(env_t *e) {
  json_error_t je;
  json_t *app = json_load_file(FIXTURE("app_full.json"), 0, &je);
  assert_non_null(app);
  /* the tracker assigns uid and the rest */
  json_object_del(json_object_get(app, "metadata"), "uid");
  json_object_del(json_object_get(app, "metadata"), "generation");
  assert_int_equal(kcr_objclient_create(&e->c, app, NULL, NULL), 0);
  json_decref(app);
}

/* reconcile runs one pass for shop/web; returns its rc, err filled. */
static int reconcile(env_t *e, kcr_error_t *err) {
  static const kcr_reconcile_request req = {"shop", "web"};
  kcr_result res;
  kcr_error_clear(err);
  return kcr_testing_reconcile(kop_app_reconcile, &e->r, &e->c, &req, &res, err, NULL);
}

static json_t *get(env_t *e, const kcr_gvk *gvk, const char *ns, const char *name) {
  json_t *out = NULL;
  kcr_objclient_get(&e->c, gvk, ns, name, &out, NULL);
  return out;
}

static json_t *condition(json_t *app, const char *type) {
  return kcr_condition_find(kcr_meta_path(app, "status.conditions"), type);
}

static uint64_t writes(env_t *e) {
  return kcr_fake_client_calls(e->fake, KCR_FAKE_CREATE) +
         kcr_fake_client_calls(e->fake, KCR_FAKE_UPDATE) +
         kcr_fake_client_calls(e->fake, KCR_FAKE_PATCH) +
         kcr_fake_client_calls(e->fake, KCR_FAKE_DELETE);
}

/* ---- tests ---- */

static void test_app_reconciler_creates_children(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  json_t *app, *dep, *svc, *cfg, *dir;
  seed_app(e);
  assert_int_equal(reconcile(e, &err), 0);
  app = get(e, &app_gvk, "shop", "web");
  assert_true(kcr_finalizer_contains(app, KOP_APP_FINALIZER));
  dep = get(e, &deploy_gvk, "shop", "web");
  svc = get(e, &svc_gvk, "shop", "web");
  cfg = get(e, &cm_gvk, "shop", "web" KOP_APP_CONFIG_SUFFIX);
  assert_non_null(dep);
  assert_non_null(svc);
  assert_non_null(cfg);
  {
    app_v1alpha1_t *a = NULL;
    kcr_meta_v1_object_meta_t *m = NULL;
    assert_int_equal(app_v1alpha1_decode(app, &a, NULL), 0);
    assert_int_equal(kcr_meta_v1_object_meta_decode(json_object_get(dep, "metadata"), &m, NULL), 0);
    assert_true(kop_app_owns(a, m));
    kcr_meta_v1_object_meta_free(m);
    app_v1alpha1_free(a);
  }
  assert_int_equal(json_integer_value(kcr_meta_path(dep, "spec.replicas")), 2);
  /* the directory was made with the entry */
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_non_null(dir);
  assert_true(json_object_size(json_object_get(dir, "data")) >= 1);
  /* status written: not yet Available (no ready replicas) */
  assert_non_null(condition(app, KOP_APP_COND_AVAILABLE));
  assert_string_equal(
      json_string_value(json_object_get(condition(app, KOP_APP_COND_AVAILABLE), "status")),
      "False");
  assert_int_equal(kcr_fake_recorder_count(e->events, KCR_EVENT_NORMAL, "Created"), 3);
  json_decref(app);
  json_decref(dep);
  json_decref(svc);
  json_decref(cfg);
  json_decref(dir);
}

static void test_app_reconciler_second_pass_writes_nothing(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  seed_app(e);
  assert_int_equal(reconcile(e, &err), 0);
  kcr_fake_client_reset_calls(e->fake);
  assert_int_equal(reconcile(e, &err), 0);
  assert_int_equal(writes(e), 0); /* no hot loop: the status did not change either */
}

static void test_app_reconciler_available(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  json_t *dep, *app, *out = NULL;
  seed_app(e);
  assert_int_equal(reconcile(e, &err), 0);
  /* what kube-controller-manager would write once the Pods are ready */
  dep = get(e, &deploy_gvk, "shop", "web");
  json_object_set_new(dep, "status",
                      json_pack("{s:I, s:i, s:i, s:i, s:i, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}",
                                "observedGeneration", (json_int_t)kcr_meta_generation(dep),
                                "replicas", 2, "updatedReplicas", 2, "readyReplicas", 2,
                                "availableReplicas", 2, "conditions", "type", "Available", "status",
                                "True", "reason", "MinimumReplicasAvailable", "type", "Progressing",
                                "status", "True", "reason", "NewReplicaSetAvailable"));
  assert_int_equal(kcr_objclient_update(&e->c, dep, "status", &out, &err), 0);
  assert_int_equal(reconcile(e, &err), 0);
  app = get(e, &app_gvk, "shop", "web");
  assert_int_equal(json_integer_value(kcr_meta_path(app, "status.readyReplicas")), 2);
  assert_string_equal(
      json_string_value(json_object_get(condition(app, KOP_APP_COND_AVAILABLE), "status")), "True");
  json_decref(app);
  json_decref(dep);
  json_decref(out);
}

static void test_app_reconciler_repairs_drift(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  json_t *dep, *fixed;
  seed_app(e);
  assert_int_equal(reconcile(e, &err), 0);
  dep = get(e, &deploy_gvk, "shop", "web");
  json_object_set_new(json_object_get(dep, "spec"), "replicas", json_integer(7));
  assert_int_equal(kcr_objclient_update(&e->c, dep, NULL, NULL, &err), 0);
  assert_int_equal(reconcile(e, &err), 0);
  fixed = get(e, &deploy_gvk, "shop", "web");
  assert_int_equal(json_integer_value(kcr_meta_path(fixed, "spec.replicas")), 2);
  assert_int_equal(kcr_fake_recorder_count(e->events, KCR_EVENT_NORMAL, "Updated"), 1);
  json_decref(dep);
  json_decref(fixed);
}

static void test_app_reconciler_name_conflict(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  json_t *app, *svc, *deg;
  /* a Service of that name the App does not control */
  assert_int_equal(kcr_fake_client_add_json(e->fake,
                                            "{\"apiVersion\":\"v1\",\"kind\":\"Service\","
                                            "\"metadata\":{\"namespace\":\"shop\",\"name\":\"web\","
                                            "\"labels\":{\"owner\":\"someone-else\"}},"
                                            "\"spec\":{\"ports\":[{\"port\":1}]}}",
                                            NULL),
                   0);
  seed_app(e);
  assert_int_equal(reconcile(e, &err), 0);
  svc = get(e, &svc_gvk, "shop", "web");
  assert_string_equal(kcr_meta_label(svc, "owner"), "someone-else"); /* left alone */
  assert_int_equal(json_integer_value(kcr_meta_path(svc, "spec.ports.0.port")) == 1 ||
                       json_array_size(kcr_meta_path(svc, "spec.ports")) == 1,
                   1);
  app = get(e, &app_gvk, "shop", "web");
  deg = condition(app, KOP_APP_COND_DEGRADED);
  assert_non_null(deg);
  assert_string_equal(json_string_value(json_object_get(deg, "status")), "True");
  assert_string_equal(json_string_value(json_object_get(deg, "reason")),
                      KOP_APP_REASON_NAME_CONFLICT);
  assert_int_equal(
      kcr_fake_recorder_count(e->events, KCR_EVENT_WARNING, KOP_APP_REASON_NAME_CONFLICT), 1);
  json_decref(svc);
  json_decref(app);
}

static void test_app_reconciler_deletion_releases_finalizer(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  json_t *app, *dir;
  seed_app(e);
  assert_int_equal(reconcile(e, &err), 0);
  app = get(e, &app_gvk, "shop", "web");
  assert_int_equal(kcr_objclient_delete(&e->c, app, NULL, &err), 0);
  json_decref(app);
  app = get(e, &app_gvk, "shop", "web");
  assert_true(kcr_meta_is_deleting(app)); /* the finalizer holds it */
  json_decref(app);
  assert_int_equal(reconcile(e, &err), 0);
  assert_null(get(e, &app_gvk, "shop", "web")); /* released: gone */
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_int_equal(json_object_size(json_object_get(dir, "data")), 0);
  /* a pass for an App that is gone does nothing */
  kcr_fake_client_reset_calls(e->fake);
  assert_int_equal(reconcile(e, &err), 0);
  assert_int_equal(writes(e), 0);
  json_decref(dir);
}

static int fail_deployment_create(const kcr_fake_call *call, kcr_error_t *err, void *data) {
  (void)data;
  if (strcmp(call->gvk->kind, "Deployment") == 0)
    return kcr_fake_error(err, 500, "InternalError", "injected: etcdserver: request timed out");
  return 0;
}

static void test_app_reconciler_write_failure(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  json_t *app, *deg;
  seed_app(e);
  kcr_fake_client_intercept(e->fake, KCR_FAKE_CREATE, fail_deployment_create, NULL);
  assert_int_equal(reconcile(e, &err), KCR_EAPI);
  assert_int_equal(err.http_status, 500);
  assert_non_null(strstr(err.message, "injected"));
  assert_null(get(e, &deploy_gvk, "shop", "web"));
  /* the failure is reported in the App's status */
  app = get(e, &app_gvk, "shop", "web");
  deg = condition(app, KOP_APP_COND_DEGRADED);
  assert_non_null(deg);
  assert_string_equal(json_string_value(json_object_get(deg, "reason")), "ReconcileFailed");
  json_decref(app);
  /* the next pass, with the API healthy again, succeeds */
  kcr_fake_client_intercept(e->fake, KCR_FAKE_CREATE, NULL, NULL);
  assert_int_equal(reconcile(e, &err), 0);
  app = get(e, &deploy_gvk, "shop", "web");
  assert_non_null(app);
  json_decref(app);
}

static int conflict_on_status(const kcr_fake_call *call, kcr_error_t *err, void *data) {
  (void)data;
  if (call->subresource && strcmp(call->subresource, "status") == 0)
    return kcr_fake_error(err, 409, "Conflict", "injected conflict");
  return 0;
}

static void test_app_reconciler_status_conflict(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  seed_app(e);
  kcr_fake_client_intercept(e->fake, KCR_FAKE_UPDATE, conflict_on_status, NULL);
  assert_int_equal(reconcile(e, &err), KCR_EAPI);
  assert_true(kcr_error_is_conflict(&err)); /* requeued with backoff by a controller */
}

/* seed_directory_and_reconcile makes the directory with another App's entry,
 * then the fixture App, and runs its first pass. */
static void seed_directory_and_reconcile(env_t *e, kcr_error_t *err) {
  json_t *dir = kop_app_desired_directory(DIR_NS);
  json_object_set_new(json_object_get(dir, "data"), "other.x", json_string("http://x.other.svc:1"));
  assert_int_equal(kcr_objclient_create(&e->c, dir, NULL, NULL), 0);
  json_decref(dir);
  seed_app(e);
  assert_int_equal(reconcile(e, err), 0);
}

/* Another App's entry in the directory survives this App's set and removal. */
static void test_app_reconciler_directory_keys(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  json_t *dir, *app;
  seed_directory_and_reconcile(e, &err);
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_string_equal(json_string_value(json_object_get(json_object_get(dir, "data"), "other.x")),
                      "http://x.other.svc:1");
  assert_string_equal(json_string_value(json_object_get(json_object_get(dir, "data"), "shop.web")),
                      "http://web.shop.svc:8080");
  json_decref(dir);
  app = get(e, &app_gvk, "shop", "web");
  assert_int_equal(kcr_objclient_delete(&e->c, app, NULL, &err), 0);
  json_decref(app);
  assert_int_equal(reconcile(e, &err), 0);
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_int_equal(json_object_size(json_object_get(dir, "data")), 1);
  assert_non_null(json_object_get(json_object_get(dir, "data"), "other.x"));
  json_decref(dir);
}

/*
 * With the memo, a pass whose entry is already right does not even read the
 * directory; without it, the pass reads it (one GET) and writes nothing.
 */
static void test_app_reconciler_directory_memo(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  seed_app(e);
  assert_int_equal(reconcile(e, &err), 0);
  e->direct_requests = 0;
  kcr_fake_client_reset_calls(e->fake);
  assert_int_equal(reconcile(e, &err), 0);
  assert_int_equal(e->direct_requests, 0);
  assert_int_equal(writes(e), 0);
  e->r.memo = NULL;
  assert_int_equal(reconcile(e, &err), 0);
  assert_int_equal(e->direct_requests, 1);
  assert_int_equal(writes(e), 0);
}

static const char *dir_entry(json_t *dir, const char *key);

/*
 * Sharded, the App may have moved to another replica, which rewrote its entry
 * (here by hand), and back. Within one shard generation the memo still says
 * the entry is right and the pass sends nothing; once the memo follows a new
 * generation, the pass reads the directory and puts the entry back.
 */
static void test_app_reconciler_directory_memo_follows_shard(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  json_t *dir;
  seed_app(e);
  kop_app_directory_memo_follow(e->memo, "0000000000000001");
  assert_int_equal(reconcile(e, &err), 0);
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_string_equal(dir_entry(dir, "shop.web"), "http://web.shop.svc:8080");
  json_object_set_new(json_object_get(dir, "data"), "shop.web", json_string("http://moved:1"));
  assert_int_equal(kcr_objclient_update(&e->c, dir, NULL, NULL, &err), 0);
  json_decref(dir);
  e->direct_requests = 0;
  kop_app_directory_memo_follow(e->memo, "0000000000000001"); /* the same: kept */
  assert_int_equal(reconcile(e, &err), 0);
  assert_int_equal(e->direct_requests, 0);
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_string_equal(dir_entry(dir, "shop.web"), "http://moved:1");
  json_decref(dir);
  kop_app_directory_memo_follow(e->memo, "0000000000000002");
  assert_int_equal(reconcile(e, &err), 0);
  assert_int_equal(e->direct_requests, 1);
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_string_equal(dir_entry(dir, "shop.web"), "http://web.shop.svc:8080");
  json_decref(dir);
  e->direct_requests = 0; /* and right again from then on */
  assert_int_equal(reconcile(e, &err), 0);
  assert_int_equal(e->direct_requests, 0);
}

/* seed_named creates the fixture App under another name in shop. */
static void seed_named(env_t *e, const char *name) {
  json_error_t je;
  json_t *app = json_load_file(FIXTURE("app_full.json"), 0, &je);
  assert_non_null(app);
  json_object_del(json_object_get(app, "metadata"), "uid");
  json_object_del(json_object_get(app, "metadata"), "generation");
  json_object_set_new(json_object_get(app, "metadata"), "name", json_string(name));
  assert_int_equal(kcr_objclient_create(&e->c, app, NULL, NULL), 0);
  json_decref(app);
}

static int reconcile_named(env_t *e, const char *name, kcr_error_t *err) {
  kcr_reconcile_request req = {"shop", name};
  kcr_result res;
  kcr_error_clear(err);
  return kcr_testing_reconcile(kop_app_reconcile, &e->r, &e->c, &req, &res, err, NULL);
}

static const char *dir_entry(json_t *dir, const char *key) {
  return json_string_value(json_object_get(json_object_get(dir, "data"), key));
}

/*
 * The next App's pass starts from the directory as this process last wrote
 * it: no read. When someone else changed the directory since, the write from
 * that copy is refused (409): the pass reads the directory and writes again,
 * and keeps the other writer's entry. When the directory was deleted, the
 * pass makes it again.
 */
static void test_app_reconciler_directory_from_last_write(void **state) {
  env_t *e = *state;
  kcr_error_t err;
  json_t *dir;
  seed_directory_and_reconcile(e, &err);
  assert_int_equal(e->direct_requests, 1); /* the first pass reads it */
  e->direct_requests = 0;
  seed_named(e, "api");
  assert_int_equal(reconcile_named(e, "api", &err), 0);
  assert_int_equal(e->direct_requests, 0);
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_string_equal(dir_entry(dir, "other.x"), "http://x.other.svc:1");
  assert_string_equal(dir_entry(dir, "shop.web"), "http://web.shop.svc:8080");
  assert_string_equal(dir_entry(dir, "shop.api"), "http://api.shop.svc:8080");
  /* someone else writes the directory */
  json_object_set_new(json_object_get(dir, "data"), "outside.y", json_string("http://y:2"));
  assert_int_equal(kcr_objclient_update(&e->c, dir, NULL, NULL, &err), 0);
  json_decref(dir);
  seed_named(e, "db");
  assert_int_equal(reconcile_named(e, "db", &err), 0);
  assert_int_equal(e->direct_requests, 1); /* 409 from the kept copy, then a read */
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_string_equal(dir_entry(dir, "outside.y"), "http://y:2");
  assert_string_equal(dir_entry(dir, "shop.api"), "http://api.shop.svc:8080");
  assert_string_equal(dir_entry(dir, "shop.db"), "http://db.shop.svc:8080");
  /* the directory deleted: 404 from the kept copy, then a read, then a create */
  assert_int_equal(kcr_objclient_delete(&e->c, dir, NULL, &err), 0);
  json_decref(dir);
  e->direct_requests = 0;
  seed_named(e, "cache");
  assert_int_equal(reconcile_named(e, "cache", &err), 0);
  assert_int_equal(e->direct_requests, 1);
  dir = get(e, &cm_gvk, DIR_NS, KOP_APP_DIRECTORY_NAME);
  assert_non_null(dir);
  assert_string_equal(dir_entry(dir, "shop.cache"), "http://cache.shop.svc:8080");
  json_decref(dir);
}

/* An App the generated type cannot decode is a terminal error: no retry, no write. */
static void test_app_reconciler_undecodable_app(void **state) {
  static const kcr_reconcile_request req = {"shop", "web"};
  env_t *e = *state;
  json_error_t je;
  json_t *app = json_load_file(FIXTURE("app_full.json"), 0, &je);
  kcr_result res;
  kcr_error_t err;
  bool terminal = false;
  uint64_t before;
  assert_non_null(app);
  json_object_del(json_object_get(app, "metadata"), "uid");
  json_object_set_new(json_object_get(app, "spec"), "replicas", json_string("two"));
  assert_int_equal(kcr_objclient_create(&e->c, app, NULL, NULL), 0);
  json_decref(app);
  before = writes(e);
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_testing_reconcile(kop_app_reconcile, &e->r, &e->c, &req, &res, &err, &terminal),
      KCR_EINVAL);
  assert_true(terminal);
  assert_non_null(strstr(err.message, "replicas"));
  assert_int_equal(writes(e), before);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_app_reconciler_creates_children, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_second_pass_writes_nothing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_available, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_repairs_drift, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_name_conflict, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_deletion_releases_finalizer, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_write_failure, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_status_conflict, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_undecodable_app, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_directory_keys, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_directory_memo, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_directory_memo_follows_shard, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_app_reconciler_directory_from_last_write, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
