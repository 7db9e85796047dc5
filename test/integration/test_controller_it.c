/* SPDX-License-Identifier: MIT */
/*
 * test_controller_it.c: controllers and the manager against the real apiserver:
 * 1000 ConfigMaps reconciled by 4 workers with no key ever on two workers at
 * once; each result kind doing what it should; a status write under the
 * generation predicate that does not loop; the owner mapping waking the owner
 * when a child is edited or deleted; SIGTERM with a reconcile in flight (a child
 * process) letting it finish and exiting 0; a channel source, a raw informer
 * and reconcile_all waking the reconciler; and the configmap-mirror example
 * (compiled in from examples/, run as a child process) doing its job.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/apierror.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/controllerutil.h"
#include "kcr/manager.h"
#include "kcr/meta.h"
#include "kcr_testenv.h"

/* The example, compiled in: its main becomes configmap_mirror_main. */
int configmap_mirror_main(int argc, char **argv);
#define main configmap_mirror_main
#include "../../examples/configmap-mirror/main.c" // NOLINT(bugprone-suspicious-include)
#undef main

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvr secrets = {"", "v1", "secrets"};
static const kcr_gvr namespaces = {"", "v1", "namespaces"};
static const kcr_gvr deployments = {"apps", "v1", "deployments"};
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};
static const kcr_gvk secret_gvk = {"", "v1", "Secret"};
static const kcr_gvk deploy_gvk = {"apps", "v1", "Deployment"};

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];
static char self[4096];

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void make_ns(const char *name, const char *label) {
  kcr_error_t err = {0};
  json_t *o = json_pack("{s:s, s:s, s:{s:s, s:{}}}", "apiVersion", "v1", "kind", "Namespace",
                        "metadata", "name", name, "labels");
  if (label)
    json_object_set_new(kcr_meta_labels(o), label, json_string("true"));
  if (kcr_client_create_object(client, &namespaces, NULL, o, NULL, NULL, &err) != 0)
    fail_msg("namespace %s: %s", name, err.message);
  json_decref(o);
}

static int group_setup(void **state) {
  kcr_client_options o;
  kcr_error_t err = {0};
  ssize_t n;
  (void)state;
  n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return -1;
  self[n] = '\0';
  if (kcr_testenv_start(&env) != 0)
    return -1;
  if (kcr_rest_config_from_kubeconfig(kcr_testenv_kubeconfig(env), NULL, NULL, &config, &err)) {
    fprintf(stderr, "config: %s\n", err.message);
    return -1;
  }
  memset(&o, 0, sizeof(o));
  o.config = config;
  if (kcr_client_create(&o, &client, &err) != 0)
    return -1;
  snprintf(ns, sizeof(ns), "kcr-it-ctl-%d", (int)getpid());
  make_ns(ns, NULL);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  kcr_client_delete(client, &namespaces, NULL, ns, NULL, NULL, NULL);
  kcr_client_destroy(client);
  kcr_rest_config_unref(config);
  kcr_testenv_stop(env);
  return 0;
}

/* ---- helpers ---- */

static json_t *cm(const char *name, const char *label) {
  return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                   "ConfigMap", "metadata", "name", name, "namespace", ns, "labels", "it", label,
                   "data", "v", "0");
}

static void create(const kcr_gvr *r, json_t *obj, json_t **out) {
  kcr_error_t err = {0};
  if (kcr_client_create_object(client, r, kcr_meta_namespace(obj), obj, NULL, out, &err) != 0)
    fail_msg("create %s: %s", kcr_meta_name(obj), err.message);
  json_decref(obj);
}

static void patch(const kcr_gvr *r, const char *name, const char *body) {
  kcr_error_t err = {0};
  if (kcr_client_patch(client, r, ns, name, KCR_PATCH_MERGE, body, strlen(body), NULL, NULL,
                       &err) != 0)
    fail_msg("patch %s: %s", name, err.message);
}

typedef struct runner {
  kcr_manager_t *m;
  pthread_t t;
  int rc;
} runner_t;

static void *run_main(void *arg) {
  runner_t *r = arg;
  kcr_error_t err = {0};
  r->rc = kcr_manager_run(r->m, &err);
  if (r->rc)
    fprintf(stderr, "manager: %s\n", err.message);
  return NULL;
}

static kcr_manager_t *new_manager(void) {
  kcr_manager_options o = {0};
  kcr_manager_t *m;
  kcr_error_t err = {0};
  o.config = config;
  o.default_namespace = ns;
  o.no_signal_handlers = true;
  if (kcr_manager_create(&o, &m, &err) != 0)
    fail_msg("manager: %s", err.message);
  return m;
}

static void start(runner_t *r) {
  pthread_create(&r->t, NULL, run_main, r);
  for (int i = 0; i < 3000 && !kcr_manager_started(r->m); i++)
    sleep_ms(10);
  assert_true(kcr_manager_started(r->m));
}

static void stop(runner_t *r) {
  kcr_manager_request_stop(r->m);
  pthread_join(r->t, NULL);
  assert_int_equal(r->rc, 0);
  kcr_manager_destroy(r->m);
}

static kcr_controller_t *new_controller(kcr_manager_t *m, const char *name, kcr_reconcile_fn fn,
                                        void *data, int workers) {
  kcr_controller_options o = {0};
  kcr_controller_t *c;
  kcr_error_t err = {0};
  o.name = name;
  o.reconcile = fn;
  o.data = data;
  o.max_concurrent_reconciles = workers;
  if (kcr_manager_add_controller(m, &o, &c, &err) != 0)
    fail_msg("controller: %s", err.message);
  return c;
}

static kcr_predicate_t *selector(const char *text) {
  kcr_predicate_t *p = NULL;
  assert_int_equal(kcr_predicate_label_selector(text, &p, NULL), 0);
  return p;
}

/* ---- 1000 objects, 4 workers, never one key on two workers ---- */

#define N_MANY 1000

typedef struct many {
  pthread_mutex_t mu;
  bool in_flight[N_MANY]; /* protected by mu */
  int done[N_MANY];       /* protected by mu */
  int current, peak, overlaps, distinct;
} many_t;

static int reconcile_many(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                          kcr_result *res, void *data) {
  many_t *s = data;
  int i = (int)strtol(req->name + 3, NULL, 10);
  (void)ctx;
  (void)res;
  if (i < 0 || i >= N_MANY)
    return 0;
  pthread_mutex_lock(&s->mu);
  if (s->in_flight[i])
    s->overlaps++;
  s->in_flight[i] = true;
  if (++s->current > s->peak)
    s->peak = s->current;
  pthread_mutex_unlock(&s->mu);
  sleep_ms(i % 3);
  pthread_mutex_lock(&s->mu);
  s->in_flight[i] = false;
  s->current--;
  if (s->done[i]++ == 0)
    s->distinct++;
  pthread_mutex_unlock(&s->mu);
  return 0;
}

typedef struct writer {
  int id, n;
} writer_t;

static void *write_many(void *arg) {
  writer_t *w = arg;
  char name[32];
  for (int i = w->id; i < N_MANY; i += w->n) {
    kcr_error_t err = {0};
    json_t *o;
    snprintf(name, sizeof(name), "cm-%04d", i);
    o = cm(name, "many");
    if (kcr_client_create_object(client, &configmaps, ns, o, NULL, NULL, &err) != 0)
      fprintf(stderr, "create %s: %s\n", name, err.message);
    json_decref(o);
    if (i % 3 == 0) { /* a second event for the same key, perhaps while it runs */
      char body[64];
      snprintf(body, sizeof(body), "{\"data\":{\"v\":\"%d\"}}", i);
      kcr_client_patch(client, &configmaps, ns, name, KCR_PATCH_MERGE, body, strlen(body), NULL,
                       NULL, NULL);
    }
  }
  return NULL;
}

/* ctl_metric reads controller_runtime_<family>{controller=name[,result]} from the
 * manager's registry, where the controller registered it. */
static double ctl_metric(runner_t *r, const char *family, const char *name, const char *result) {
  kcr_metric_t *m = kcr_metrics_find(kcr_manager_metrics(r->m), family);
  assert_non_null(m);
  return kcr_metric_value(result ? kcr_metric_withv(m, name, result, NULL)
                                 : kcr_metric_withv(m, name, NULL));
}

static void test_controller_it_many_no_overlap(void **state) {
  many_t s;
  runner_t r = {0};
  kcr_controller_t *c;
  pthread_t th[8];
  writer_t w[8];
  (void)state;
  memset(&s, 0, sizeof(s));
  pthread_mutex_init(&s.mu, NULL);
  r.m = new_manager();
  c = new_controller(r.m, "many", reconcile_many, &s, 4);
  assert_int_equal(kcr_controller_for(c, &cm_gvk, selector("it=many"), NULL), 0);
  start(&r);
  for (int i = 0; i < 8; i++) {
    w[i] = (writer_t){i, 8};
    pthread_create(&th[i], NULL, write_many, &w[i]);
  }
  for (int i = 0; i < 8; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < 6000; i++) {
    pthread_mutex_lock(&s.mu);
    int d = s.distinct;
    pthread_mutex_unlock(&s.mu);
    if (d == N_MANY)
      break;
    sleep_ms(10);
  }
  double successes = ctl_metric(&r, KCR_CONTROLLER_METRIC_RECONCILE_TOTAL, "many", "success");
  double max_concurrent = ctl_metric(&r, KCR_CONTROLLER_METRIC_MAX_CONCURRENT, "many", NULL);
  stop(&r);
  fprintf(stderr, "many: distinct %d, peak concurrency %d, overlaps %d, reconciles %.0f\n",
          s.distinct, s.peak, s.overlaps, successes);
  assert_int_equal(s.distinct, N_MANY);
  assert_int_equal(s.overlaps, 0);
  assert_true(s.peak > 1 && s.peak <= 4);
  assert_true(max_concurrent == 4);
  pthread_mutex_destroy(&s.mu);
  kcr_client_delete_collection(client, &configmaps, ns,
                               &(kcr_request_options){.label_selector = "it=many"}, NULL);
}

/* ---- result kinds ---- */

typedef struct results {
  atomic_int calls[5];
  double first[5], last[5];
} results_t;

static const char *result_names[5] = {"r-ok", "r-error", "r-terminal", "r-requeue", "r-after"};

static int reconcile_results(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                             kcr_result *res, void *data) {
  results_t *s = data;
  int k = -1, n;
  for (int i = 0; i < 5; i++)
    if (strcmp(req->name, result_names[i]) == 0)
      k = i;
  if (k < 0)
    return 0;
  n = atomic_fetch_add(&s->calls[k], 1) + 1;
  if (n == 1)
    s->first[k] = now_s();
  s->last[k] = now_s();
  switch (k) {
  case 1: /* error twice, then success */
    return n <= 2 ? KCR_EIO : 0;
  case 2:
    return kcr_reconcile_terminal(ctx, KCR_EINVAL);
  case 3:
    res->requeue = n <= 2;
    return 0;
  case 4:
    if (n == 1)
      res->requeue_after_ns = 700 * KCR_NSEC_PER_MSEC;
    return 0;
  default:
    return 0;
  }
}

static void test_controller_it_result_kinds(void **state) {
  results_t s;
  runner_t r = {0};
  kcr_controller_t *c;
  (void)state;
  memset(&s, 0, sizeof(s));
  r.m = new_manager();
  c = new_controller(r.m, "results", reconcile_results, &s, 2);
  assert_int_equal(kcr_controller_for(c, &cm_gvk, selector("it=results"), NULL), 0);
  start(&r);
  for (int i = 0; i < 5; i++)
    create(&configmaps, cm(result_names[i], "results"), NULL);
  sleep_ms(3000);
  double terminal = ctl_metric(&r, KCR_CONTROLLER_METRIC_TERMINAL_ERRORS, "results", NULL);
  double errors = ctl_metric(&r, KCR_CONTROLLER_METRIC_RECONCILE_ERRORS, "results", NULL);
  double requeue = ctl_metric(&r, KCR_CONTROLLER_METRIC_RECONCILE_TOTAL, "results", "requeue");
  double requeue_after =
      ctl_metric(&r, KCR_CONTROLLER_METRIC_RECONCILE_TOTAL, "results", "requeue_after");
  stop(&r);
  assert_int_equal(atomic_load(&s.calls[0]), 1);
  assert_int_equal(atomic_load(&s.calls[1]), 3); /* 5 ms, 10 ms backoff */
  assert_int_equal(atomic_load(&s.calls[2]), 1); /* terminal: never again */
  assert_int_equal(atomic_load(&s.calls[3]), 3);
  assert_int_equal(atomic_load(&s.calls[4]), 2);
  assert_true(s.last[4] - s.first[4] >= 0.69);
  assert_true(terminal == 1);
  assert_true(errors == 3);
  assert_true(requeue == 2);
  assert_true(requeue_after == 1);
}

/* ---- status writes under the generation predicate ---- */

static int wait_calls(atomic_int *v, int want, int ms);

/* settle waits (up to 15 s) until *v has not changed for 2 s, and returns it. */
static int settle(atomic_int *v) {
  int last = atomic_load(v), still = 0;
  for (int i = 0; i < 150 && still < 20; i++) {
    sleep_ms(100);
    int now = atomic_load(v);
    still = now == last ? still + 1 : 0;
    last = now;
  }
  assert_true(still >= 20);
  return last;
}

typedef struct statusw {
  atomic_int calls;
  atomic_int writes;
} statusw_t;

static int reconcile_status(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                            kcr_result *res, void *data) {
  statusw_t *s = data;
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  kcr_error_t *err = kcr_reconcile_err(ctx);
  json_t *obj = NULL, *conds;
  char msg[64];
  int n = atomic_fetch_add(&s->calls, 1) + 1, rc;
  (void)res;
  if ((rc = kcr_objclient_get(c, &(kcr_gvk){"apps", "v1", "Deployment"}, req->ns, req->name, &obj,
                              err)) != 0)
    return rc;
  snprintf(msg, sizeof(msg), "reconcile %d", n);
  conds = kcr_conditions_get(obj, true);
  json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s}", "type", "KcrReconciled", "status",
                                         "True", "reason", "Done", "message", msg));
  rc = kcr_objclient_update(c, obj, "status", NULL, err);
  if (rc == 0)
    atomic_fetch_add(&s->writes, 1);
  json_decref(obj);
  return rc;
}

/*
 * Read-your-writes through the manager's object client for writes whose
 * answer the caller does not want (out NULL): the client scans only the
 * resourceVersion and the manager notes it, so a cache read right after each
 * write sees that write, never the version before.
 */
static void test_controller_it_ryow_unparsed_answers(void **state) {
  runner_t r = {0};
  const kcr_objclient *oc;
  kcr_informer_t *inf = NULL;
  kcr_error_t err = {0};
  json_t *obj = NULL, *got = NULL;
  char value[32];
  (void)state;
  r.m = new_manager();
  start(&r);
  oc = kcr_manager_client(r.m);
  assert_int_equal(kcr_cache_get_informer(kcr_manager_cache(r.m), &cm_gvk, &inf, &err), 0);
  assert_int_equal(kcr_cache_wait_for_sync(kcr_manager_cache(r.m), 30 * KCR_NSEC_PER_SEC, &err), 0);
  obj = cm("ryow-unparsed", "ryow");
  if (kcr_objclient_create(oc, obj, NULL, &err) != 0)
    fail_msg("create: %s", err.message);
  for (int i = 1; i <= 20; i++) {
    json_decref(obj);
    obj = NULL;
    if (kcr_objclient_get(oc, &cm_gvk, ns, "ryow-unparsed", &obj, &err) != 0)
      fail_msg("get %d: %s", i, err.message);
    snprintf(value, sizeof(value), "%d", i);
    json_object_set_new(json_object_get(obj, "data"), "v", json_string(value));
    if (kcr_objclient_update(oc, obj, NULL, NULL, &err) != 0)
      fail_msg("update %d: %s", i, err.message);
    if (kcr_objclient_get(oc, &cm_gvk, ns, "ryow-unparsed", &got, &err) != 0)
      fail_msg("read after update %d: %s", i, err.message);
    assert_string_equal(kcr_meta_path_string(got, "data.v"), value);
    json_decref(got);
    got = NULL;
  }
  json_decref(obj);
  stop(&r);
}

static void test_controller_it_status_no_loop(void **state) {
  statusw_t s;
  runner_t r = {0};
  kcr_controller_t *c;
  json_t *d;
  int after_first;
  (void)state;
  memset(&s, 0, sizeof(s));
  r.m = new_manager();
  c = new_controller(r.m, "status", reconcile_status, &s, 1);
  assert_int_equal(kcr_controller_for(c, &deploy_gvk, kcr_predicate_generation_changed(), NULL), 0);
  start(&r);
  d = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, s:{s:[{s:s, "
                "s:s}]}}}}",
                "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", "gen",
                "namespace", ns, "spec", "replicas", 0, "selector", "matchLabels", "app", "gen",
                "template", "metadata", "labels", "app", "gen", "spec", "containers", "name", "c",
                "image", "busybox");
  assert_non_null(d);
  create(&deployments, d, NULL);
  /* A reconcile whose status write lost a race with kube-controller-manager (409)
   * is retried, so count successful writes, and check that the count settles:
   * our own status writes (same generation) never wake us. */
  after_first = settle(&s.calls);
  fprintf(stderr, "status: %d reconciles, %d status writes after create\n", after_first,
          atomic_load(&s.writes));
  assert_int_equal(atomic_load(&s.writes), 1);
  assert_true(after_first <= 3);
  patch(&deployments, "gen", "{\"spec\":{\"replicas\":1}}"); /* generation 2 */
  assert_true(wait_calls(&s.calls, after_first + 1, 5000) > after_first);
  settle(&s.calls);
  assert_int_equal(atomic_load(&s.writes), 2);
  stop(&r);
  kcr_client_delete(client, &deployments, ns, "gen", NULL, NULL, NULL);
}

/* ---- server-side apply through the reconciler's client ---- */

typedef struct applied {
  atomic_int applies;
  atomic_int failures;
  char manager[128]; /* the field manager the server recorded; written once */
} applied_t;

/* reconcile_apply applies a child ConfigMap "<name>-ssa" holding the source's
 * name, with no field manager given: the controller's name is the default. */
static int reconcile_apply(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                           kcr_result *res, void *data) {
  applied_t *a = data;
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  kcr_error_t *err = kcr_reconcile_err(ctx);
  char name[256];
  json_t *child, *out = NULL;
  int rc;
  (void)res;
  if (strstr(req->name, "-ssa"))
    return 0;
  snprintf(name, sizeof(name), "%s-ssa", req->name);
  child = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                    "metadata", "namespace", req->ns, "name", name, "data", "from", req->name);
  rc = kcr_objclient_apply(c, child, &(kcr_apply_options){.force = true}, NULL, &out, err);
  json_decref(child);
  if (rc) {
    atomic_fetch_add(&a->failures, 1);
    return rc;
  }
  {
    /* The server's own record of who owns the fields. */
    json_t *mf = json_object_get(kcr_meta_metadata(out), "managedFields");
    const char *mgr = json_string_value(json_object_get(json_array_get(mf, 0), "manager"));
    const char *op = json_string_value(json_object_get(json_array_get(mf, 0), "operation"));
    if (mgr && op && strcmp(op, "Apply") == 0 && !a->manager[0])
      snprintf(a->manager, sizeof(a->manager), "%s", mgr);
  }
  json_decref(out);
  atomic_fetch_add(&a->applies, 1);
  return 0;
}

static void test_controller_it_server_side_apply(void **state) {
  applied_t a;
  runner_t r = {0};
  kcr_controller_t *c;
  json_t *src, *got = NULL;
  (void)state;
  memset(&a, 0, sizeof(a));
  r.m = new_manager();
  c = new_controller(r.m, "ssa-applier", reconcile_apply, &a, 1);
  assert_int_equal(kcr_controller_for(c, &cm_gvk, selector("it=ssa"), NULL), 0);
  start(&r);
  src = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "ConfigMap",
                  "metadata", "name", "src", "namespace", ns, "labels", "it", "ssa");
  create(&configmaps, src, NULL);
  json_decref(src);
  assert_true(wait_calls(&a.applies, 1, 20000) >= 1);
  assert_int_equal(atomic_load(&a.failures), 0);
  stop(&r);
  assert_string_equal(a.manager, "ssa-applier");
  assert_int_equal(kcr_client_get(client, &configmaps, ns, "src-ssa", NULL, &got, NULL), 0);
  assert_string_equal(json_string_value(json_object_get(json_object_get(got, "data"), "from")),
                      "src");
  json_decref(got);
}

/* ---- owner mapping ---- */

typedef struct owners {
  atomic_int calls;
} owners_t;

static int reconcile_owner(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                           kcr_result *res, void *data) {
  owners_t *s = data;
  (void)ctx;
  (void)res;
  if (strcmp(req->name, "owner") == 0)
    atomic_fetch_add(&s->calls, 1);
  return 0;
}

static int wait_calls(atomic_int *v, int want, int ms) {
  for (int i = 0; i < ms / 10 && atomic_load(v) < want; i++)
    sleep_ms(10);
  return atomic_load(v);
}

/* owner_mapping: a child Secret's add, update and delete wake its owner; with
 * metadata_only the Secrets are owned metadata-only (builder.OnlyMetadata) and
 * the manager caches them without their data. */
static void owner_mapping(bool metadata_only) {
  owners_t s;
  runner_t r = {0};
  kcr_controller_t *c;
  json_t *owner = NULL, *child;
  kcr_error_t err = {0};
  memset(&s, 0, sizeof(s));
  create(&configmaps, cm("owner", "owners"), &owner);
  child = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                    "Secret", "metadata", "name", "child", "namespace", ns, "labels", "it",
                    "owners", "stringData", "k", "v");
  json_object_set_new(owner, "apiVersion", json_string("v1"));
  json_object_set_new(owner, "kind", json_string("ConfigMap"));
  assert_int_equal(kcr_owner_ref_set_controller(owner, child, &err), 0);
  r.m = new_manager();
  c = new_controller(r.m, "owners", reconcile_owner, &s, 1);
  assert_int_equal(kcr_controller_for(c, &cm_gvk, selector("it=owners"), NULL), 0);
  if (metadata_only)
    assert_int_equal(kcr_controller_owns_metadata(c, &secret_gvk, NULL, NULL), 0);
  else
    assert_int_equal(kcr_controller_owns(c, &secret_gvk, NULL, NULL), 0);
  start(&r);
  assert_int_equal(wait_calls(&s.calls, 1, 5000), 1); /* the owner's own add */
  create(&secrets, child, NULL);
  assert_true(wait_calls(&s.calls, 2, 5000) >= 2); /* the child's add wakes it */
  {
    kcr_informer_t *inf = NULL;
    json_t *cached = NULL;
    char key[128];
    snprintf(key, sizeof(key), "%s/child", ns);
    assert_int_equal(kcr_manager_get_informer(r.m, &secret_gvk, &inf, &err), 0);
    assert_int_equal(kcr_store_get_by_key(kcr_informer_store(inf), key, &cached), 0);
    assert_string_equal(kcr_meta_kind(cached), "Secret");
    assert_true((json_object_get(cached, "data") == NULL) == metadata_only);
    json_decref(cached);
  }
  sleep_ms(300);
  int before = atomic_load(&s.calls);
  patch(&secrets, "child", "{\"stringData\":{\"k\":\"edited\"}}");
  assert_true(wait_calls(&s.calls, before + 1, 5000) >= before + 1);
  sleep_ms(300);
  before = atomic_load(&s.calls);
  assert_int_equal(kcr_client_delete(client, &secrets, ns, "child", NULL, NULL, &err), 0);
  assert_true(wait_calls(&s.calls, before + 1, 5000) >= before + 1);
  stop(&r);
  json_decref(owner);
  /* the next variant makes them again */
  assert_int_equal(kcr_client_delete(client, &configmaps, ns, "owner", NULL, NULL, &err), 0);
}

static void test_controller_it_owner_mapping(void **state) {
  (void)state;
  owner_mapping(false);
}

static void test_controller_it_owns_metadata_only(void **state) {
  (void)state;
  owner_mapping(true);
}

/* ---- sources from outside the cluster: a channel, a raw informer, reconcile_all ---- */

typedef struct outside {
  pthread_mutex_t mu;
  char names[64][64]; /* protected by mu: every reconcile's name, in order */
  int n;              /* protected by mu */
  atomic_int calls;
} outside_t;

static int reconcile_outside(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                             kcr_result *res, void *data) {
  outside_t *s = data;
  (void)ctx;
  (void)res;
  pthread_mutex_lock(&s->mu);
  if (s->n < 64)
    snprintf(s->names[s->n++], sizeof(s->names[0]), "%s", req->name);
  pthread_mutex_unlock(&s->mu);
  atomic_fetch_add(&s->calls, 1);
  return 0;
}

/* seen counts the reconciles of name so far. */
static int seen(outside_t *s, const char *name) {
  int k = 0;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < s->n; i++)
    k += strcmp(s->names[i], name) == 0;
  pthread_mutex_unlock(&s->mu);
  return k;
}

/* wait_seen waits (up to ms) until name has been reconciled want times. */
static int wait_seen(outside_t *s, const char *name, int want, int ms) {
  for (int i = 0; i < ms / 10 && seen(s, name) < want; i++)
    sleep_ms(10);
  return seen(s, name);
}

/* A Secret of the raw informer wakes the ConfigMap its "for" label names. */
static void map_secret_to_cm(const json_t *obj, kcr_requests_t *reqs, void *data) {
  const char *target = kcr_meta_label(obj, "for");
  (void)data;
  if (target)
    kcr_requests_add(reqs, kcr_meta_namespace(obj), target);
}

static void *push_from_thread(void *arg) {
  kcr_channel_source_t *src = arg;
  json_t *ev = json_pack("{s:{s:s, s:s}}", "metadata", "namespace", ns, "name", "out-b");
  kcr_channel_source_push_object(src, ev, NULL);
  json_decref(ev);
  return NULL;
}

static void test_controller_it_outside_sources(void **state) {
  outside_t s;
  runner_t r = {0};
  kcr_controller_t *c;
  kcr_channel_source_t *src;
  kcr_informer_t *raw;
  kcr_informer_options io = {0};
  kcr_error_t err = {0};
  pthread_t th;
  json_t *sec;
  (void)state;
  memset(&s, 0, sizeof(s));
  pthread_mutex_init(&s.mu, NULL);
  create(&configmaps, cm("out-a", "outside"), NULL);
  create(&configmaps, cm("out-b", "outside"), NULL);
  create(&configmaps, cm("out-c", "outside"), NULL);
  assert_int_equal(kcr_channel_source_create(&src, &err), 0);
  /* A raw source: a Secret informer of the test's own, not the manager's. */
  io.client = client;
  io.gvk = secret_gvk;
  io.ns = ns;
  io.label_selector = "it=outside";
  assert_int_equal(kcr_informer_create(&io, &raw, &err), 0);
  assert_int_equal(kcr_informer_start(raw, &err), 0);

  r.m = new_manager();
  c = new_controller(r.m, "outside", reconcile_outside, &s, 2);
  assert_int_equal(kcr_controller_for(c, &cm_gvk, selector("it=outside"), NULL), 0);
  assert_int_equal(kcr_controller_watches_channel(c, src, NULL, NULL, NULL, &err), 0);
  assert_int_equal(kcr_controller_watches_informer(c, raw, map_secret_to_cm, NULL, NULL, &err), 0);
  /* Pushed before start: waits in the queue for the workers. */
  assert_int_equal(kcr_channel_source_push(src, ns, "from-before-start", &err), 0);
  start(&r);
  assert_int_equal(wait_seen(&s, "from-before-start", 1, 10000), 1);
  assert_int_equal(wait_seen(&s, "out-a", 1, 10000), 1);
  assert_int_equal(wait_seen(&s, "out-c", 1, 10000), 1);
  settle(&s.calls);

  /* A generic event from another thread: the object's own key. */
  pthread_create(&th, NULL, push_from_thread, src);
  pthread_join(th, NULL);
  assert_int_equal(wait_seen(&s, "out-b", 2, 10000), 2);

  /* The raw informer's Secret wakes out-c through the map function. */
  sec = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                  "Secret", "metadata", "name", "out-secret", "namespace", ns, "labels", "it",
                  "outside", "for", "out-c", "stringData", "k", "v");
  create(&secrets, sec, NULL);
  assert_int_equal(wait_seen(&s, "out-c", 2, 10000), 2);
  settle(&s.calls);

  /* reconcile_all: every ConfigMap the controller's informer holds, once more. */
  assert_int_equal(kcr_controller_reconcile_all(c, &err), 3);
  assert_int_equal(wait_seen(&s, "out-a", 2, 10000), 2);
  assert_int_equal(wait_seen(&s, "out-b", 3, 10000), 3);
  assert_int_equal(wait_seen(&s, "out-c", 3, 10000), 3);
  assert_int_equal(seen(&s, "from-before-start"), 1); /* not a cached object */

  stop(&r); /* destroys the controller, which leaves the source */
  assert_int_equal(kcr_channel_source_push(src, ns, "after-stop", &err), 0);
  kcr_channel_source_destroy(src);
  kcr_informer_stop(raw);
  kcr_informer_destroy(raw);
  kcr_client_delete(client, &secrets, ns, "out-secret", NULL, NULL, NULL);
  pthread_mutex_destroy(&s.mu);
}

/* ---- SIGTERM with a reconcile in flight (child process) ---- */

static int reconcile_slow(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                          kcr_result *res, void *data) {
  (void)ctx;
  (void)res;
  (void)data;
  printf("start %s\n", req->name);
  fflush(stdout);
  sleep_ms(2500);
  printf("done %s\n", req->name);
  fflush(stdout);
  return 0;
}

static int child_slow(const char *cns) {
  kcr_manager_options o = {0};
  kcr_manager_t *m;
  kcr_controller_options co = {0};
  kcr_controller_t *c;
  kcr_predicate_t *p = NULL;
  kcr_error_t err = {0};
  int rc;
  snprintf(ns, sizeof(ns), "%s", cns);
  if (kcr_rest_config_from_kubeconfig(getenv("KCR_TEST_KUBECONFIG"), NULL, NULL, &config, &err))
    return 2;
  o.config = config;
  o.default_namespace = ns;
  if (kcr_manager_create(&o, &m, &err))
    return 2;
  co.name = "slow";
  co.reconcile = reconcile_slow;
  if (kcr_manager_add_controller(m, &co, &c, &err) ||
      kcr_predicate_label_selector("it=slow", &p, &err) || kcr_controller_for(c, &cm_gvk, p, &err))
    return 2;
  printf("ready\n");
  fflush(stdout);
  rc = kcr_manager_run(m, &err);
  if (rc)
    fprintf(stderr, "child: %s\n", err.message);
  kcr_manager_destroy(m);
  kcr_rest_config_unref(config);
  return rc ? 1 : 0;
}

typedef struct child {
  pid_t pid;
  int out; /* read end of its stdout */
  char buf[8192];
  size_t len;
} child_t;

static void spawn(child_t *ch, const char *mode, const char *arg1, const char *arg2,
                  const char *arg3, const char *arg4) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  fflush(NULL);
  ch->pid = fork();
  assert_true(ch->pid >= 0);
  if (ch->pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    close(p[1]);
    setenv("KCR_TEST_KUBECONFIG", kcr_testenv_kubeconfig(env), 1);
    execl(self, self, mode, arg1, arg2, arg3, arg4, (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  ch->out = p[0];
  ch->len = 0;
  ch->buf[0] = '\0';
}

/* wait_for reads the child's stdout until it holds text or ms pass. */
static bool wait_for(child_t *ch, const char *text, int ms) {
  double deadline = now_s() + ms / 1000.0;
  while (!strstr(ch->buf, text)) {
    struct pollfd pfd = {ch->out, POLLIN, 0};
    int left = (int)((deadline - now_s()) * 1000);
    ssize_t n;
    if (left <= 0 || poll(&pfd, 1, left) <= 0)
      return false;
    n = read(ch->out, ch->buf + ch->len, sizeof(ch->buf) - 1 - ch->len);
    if (n <= 0)
      return strstr(ch->buf, text) != NULL;
    ch->len += (size_t)n;
    ch->buf[ch->len] = '\0';
  }
  return true;
}

static int reap(child_t *ch, int ms) {
  int status = 0;
  for (int i = 0; i < ms / 10; i++) {
    if (waitpid(ch->pid, &status, WNOHANG) == ch->pid) {
      close(ch->out);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    sleep_ms(10);
  }
  kill(ch->pid, SIGKILL);
  waitpid(ch->pid, &status, 0);
  close(ch->out);
  return -1;
}

static void test_controller_it_sigterm_graceful(void **state) {
  child_t ch;
  double t0;
  int rc;
  (void)state;
  spawn(&ch, "--child-slow", ns, NULL, NULL, NULL);
  assert_true(wait_for(&ch, "ready", 30000));
  create(&configmaps, cm("slow-1", "slow"), NULL);
  assert_true(wait_for(&ch, "start slow-1", 15000));
  t0 = now_s();
  kill(ch.pid, SIGTERM);
  assert_true(wait_for(&ch, "done slow-1", 10000)); /* the reconcile in flight finishes */
  rc = reap(&ch, 30000);
  fprintf(stderr, "sigterm: exit %d after %.2f s\n", rc, now_s() - t0);
  assert_int_equal(rc, 0);
  assert_true(now_s() - t0 < 30);
}

static void test_controller_it_second_signal(void **state) {
  child_t ch;
  (void)state;
  spawn(&ch, "--child-slow", ns, NULL, NULL, NULL);
  assert_true(wait_for(&ch, "ready", 30000));
  create(&configmaps, cm("slow-2", "slow"), NULL);
  assert_true(wait_for(&ch, "start slow-2", 15000));
  kill(ch.pid, SIGTERM);
  sleep_ms(200);
  kill(ch.pid, SIGINT);
  assert_int_equal(reap(&ch, 5000), 1); /* at once, before the reconcile is done */
  assert_null(strstr(ch.buf, "done slow-2"));
}

/* ---- the example ---- */

static bool wait_copy(const char *tns, const char *name, const char *want_v, int ms) {
  for (int i = 0; i < ms / 50; i++) {
    json_t *o = NULL;
    int rc = kcr_client_get(client, &configmaps, tns, name, NULL, &o, NULL);
    const char *v = rc == 0 ? kcr_meta_path_string(o, "data.v") : NULL;
    bool ok = want_v ? (v && strcmp(v, want_v) == 0) : rc != 0;
    json_decref(o);
    if (ok)
      return true;
    sleep_ms(50);
  }
  return false;
}

static void test_controller_it_example_mirror(void **state) {
  child_t ch;
  char target[96];
  json_t *src;
  (void)state;
  snprintf(target, sizeof(target), "%s-target", ns);
  make_ns(target, "kcr.dev/mirror-target");
  src = cm("mirrored", "example");
  json_object_set_new(kcr_meta_labels(src), "kcr.dev/mirror", json_string("true"));
  create(&configmaps, src, NULL);
  spawn(&ch, "--example", "--kubeconfig", kcr_testenv_kubeconfig(env), "--source-namespace", ns);
  assert_true(wait_copy(target, "mirrored", "0", 30000));
  patch(&configmaps, "mirrored", "{\"data\":{\"v\":\"1\"}}");
  assert_true(wait_copy(target, "mirrored", "1", 15000));
  assert_int_equal(kcr_client_delete(client, &configmaps, ns, "mirrored", NULL, NULL, NULL), 0);
  assert_true(wait_copy(target, "mirrored", NULL, 15000));
  kill(ch.pid, SIGTERM);
  assert_int_equal(reap(&ch, 30000), 0);
  kcr_client_delete(client, &namespaces, NULL, target, NULL, NULL, NULL);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_controller_it_many_no_overlap),
      cmocka_unit_test(test_controller_it_result_kinds),
      cmocka_unit_test(test_controller_it_ryow_unparsed_answers),
      cmocka_unit_test(test_controller_it_status_no_loop),
      cmocka_unit_test(test_controller_it_owner_mapping),
      cmocka_unit_test(test_controller_it_owns_metadata_only),
      cmocka_unit_test(test_controller_it_server_side_apply),
      cmocka_unit_test(test_controller_it_outside_sources),
      cmocka_unit_test(test_controller_it_sigterm_graceful),
      cmocka_unit_test(test_controller_it_second_signal),
      cmocka_unit_test(test_controller_it_example_mirror),
  };
  if (argc >= 3 && strcmp(argv[1], "--child-slow") == 0)
    return child_slow(argv[2]);
  if (argc >= 2 && strcmp(argv[1], "--example") == 0) {
    argv[1] = argv[0];
    return configmap_mirror_main(argc - 1, argv + 1);
  }
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
