/* SPDX-License-Identifier: MIT */
/*
 * memcached_test.c: the Memcached controller in a manager against a real API
 * server (kcr/testing.h's test env: the cluster of $KCR_TEST_KUBECONFIG, in
 * kcr's tree the `controlplane` fixture's, else one it starts), with the CRD
 * of config/crd/bases installed. In a fresh namespace:
 *   1. a Memcached of size 1 gets its Deployment, controlled by it, and
 *      Available=True;
 *   2. with kwok's fake nodes (the fixture runs them), the Pods become
 *      available: scaling 1 -> 3 -> 2 is seen in the Deployment's status;
 *      size 0 is refused by the CRD's validation (minimum 1);
 *   3. deleting the Memcached records the finalizer's Warning Event
 *      "Deleting", the Memcached goes, and the garbage collector deletes the
 *      Deployment.
 * Without kwok nodes the availability checks are skipped (said on stderr).
 * Prints "ok".
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kcr/kcr.h>
#include <kcr/testing.h>

#include "kcr/k8s/apps_v1.h"
#include "memcached_codecs.h"
#include "memcached_controller.h"

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    fprintf(stderr, "memcached_test:%d: ", __LINE__);                                              \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fputc('\n', stderr);                                                                           \
    return 1;                                                                                      \
  } while (0)
#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      FAIL("%s (last error: %s)", #cond, err.message);                                             \
  } while (0)

/* WITHIN(s, cond): cond becomes true within s seconds, polled every 100 ms. */
#define WITHIN(s, cond)                                                                            \
  do {                                                                                             \
    int i_ = 0;                                                                                    \
    while (!(cond) && ++i_ < (s)*10)                                                               \
      nanosleep(&(struct timespec){0, 100000000}, NULL);                                           \
    CHECK(cond);                                                                                   \
  } while (0)
#define EVENTUALLY(cond) WITHIN(20, cond)

static const kcr_gvk MEMCACHED = {"cache.example.com", "v1alpha1", "Memcached"};
static const kcr_gvk DEPLOYMENT = {"apps", "v1", "Deployment"};
static const char *const NAME = "memcached-sample";

static kcr_manager_t *mgr;
static const kcr_objclient *client; /* the manager's: reads from its cache */
static kcr_client_t *direct;        /* straight to the API server */
static kcr_scheme_t *scheme;
static char ns[64];
static kcr_error_t err;

static void *run(void *arg) {
  static kcr_error_t run_err;
  (void)arg;
  if (kcr_manager_run(mgr, &run_err) != 0)
    fprintf(stderr, "memcached_test: manager: %s\n", run_err.message);
  return NULL;
}

static memcached_t *get_memcached(void) {
  void *m = NULL;
  kcr_error_t e = {0};
  kcr_typed_get(client, scheme, &MEMCACHED, ns, NAME, &m, &e);
  return m;
}

/* gone tells whether the API server no longer has the Memcached (read past the cache). */
static bool gone(const kcr_gvr *r) {
  json_t *obj = NULL;
  kcr_error_t e = {0};
  int rc = kcr_client_get(direct, r, ns, NAME, NULL, &obj, &e);
  json_decref(obj);
  return rc != 0 && kcr_error_is_not_found(&e);
}

/* deployment_is tells whether the Deployment wants, and (available) has, n replicas. */
static bool deployment_is(int32_t n, bool available, const char *owner_uid) {
  void *got = NULL;
  kcr_error_t e = {0};
  bool ok = false;
  if (kcr_typed_get(client, scheme, &DEPLOYMENT, ns, NAME, &got, &e) == 0) {
    kcr_apps_v1_deployment_t *d = got;
    const kcr_meta_v1_owner_reference_t *o = kcr_typed_owner_ref_controller(d->metadata);
    ok = d->spec->replicas == n && o && strcmp(o->kind, "Memcached") == 0 &&
         (!owner_uid || strcmp(o->uid, owner_uid) == 0) &&
         (!available ||
          (d->status && d->status->available_replicas == n && d->status->replicas == n));
    kcr_apps_v1_deployment_free(d);
  }
  return ok;
}

static bool available_with(const char *message) {
  memcached_t *m = get_memcached();
  kcr_meta_v1_condition_t *c =
      m ? kcr_typed_condition_find(KCR_CONDITION_LIST(&m->status.conditions), "Available") : NULL;
  bool ok = c && strcmp(c->status, "True") == 0 && strstr(c->message, message);
  memcached_free(m);
  return ok;
}

/* resize sets spec.size (re-read and retried on a conflict); returns the update's rc. */
static int resize(int32_t size, kcr_error_t *e) {
  int rc = -1;
  for (int attempt = 0; attempt < 5; attempt++) {
    memcached_t *m = get_memcached();
    if (m == NULL)
      return -1;
    if (!m->spec.size)
      m->spec.size = memcached_mem_calloc(1, sizeof(*m->spec.size));
    if (m->spec.size)
      *m->spec.size = size;
    *e = (kcr_error_t){0};
    rc = kcr_typed_update(client, scheme, &MEMCACHED, m, NULL, NULL, e);
    memcached_free(m);
    if (rc == 0 || !kcr_error_is_conflict(e))
      return rc;
  }
  return rc;
}

/* has_event tells whether the namespace holds the finalizer's Warning Event. */
static bool has_event(void) {
  static const kcr_gvr events = {"events.k8s.io", "v1", "events"};
  json_t *list = NULL, *item;
  kcr_error_t e = {0};
  size_t i;
  bool ok = false;
  if (kcr_client_list(direct, &events, ns, NULL, &list, &e) != 0)
    return false;
  json_array_foreach(json_object_get(list, "items"), i, item) {
    const char *reason = json_string_value(json_object_get(item, "reason"));
    const char *type = json_string_value(json_object_get(item, "type"));
    ok |= reason && type && strcmp(reason, "Deleting") == 0 && strcmp(type, "Warning") == 0;
  }
  json_decref(list);
  return ok;
}

static int make_memcached(int32_t size) {
  memcached_t *m = NULL;
  int rc;
  if (memcached_create(&m, &err) != 0 ||
      (m->spec.size = memcached_mem_calloc(1, sizeof(*m->spec.size))) == NULL) {
    memcached_free(m);
    return -1;
  }
  m->type_meta.api_version = memcached_mem_strdup("cache.example.com/v1alpha1");
  m->type_meta.kind = memcached_mem_strdup("Memcached");
  m->metadata.name = memcached_mem_strdup(NAME);
  m->metadata.namespace = memcached_mem_strdup(ns);
  *m->spec.size = size;
  rc = kcr_typed_create(client, scheme, &MEMCACHED, m, NULL, &err);
  memcached_free(m);
  return rc;
}

static int kwok_nodes(void) {
  static const kcr_gvr nodes = {"", "v1", "nodes"};
  kcr_request_options lo = {.label_selector = "type=kwok"};
  json_t *list = NULL;
  kcr_error_t e = {0};
  int n = 0;
  if (kcr_client_list(direct, &nodes, NULL, &lo, &list, &e) == 0)
    n = (int)json_array_size(json_object_get(list, "items"));
  json_decref(list);
  return n;
}

static int scenario(void) {
  static const kcr_gvr memcacheds = {"cache.example.com", "v1alpha1", "memcacheds"};
  static const kcr_gvr deployments = {"apps", "v1", "deployments"};
  bool kwok = kwok_nodes() > 0;
  memcached_t *m;
  char uid[64];

  if (!kwok)
    fprintf(stderr, "memcached_test: no kwok nodes: skipping the availability checks\n");
  CHECK(make_memcached(1) == 0);
  EVENTUALLY(available_with("(memcached-sample) with 1 replicas created successfully"));
  CHECK((m = get_memcached()) != NULL);
  snprintf(uid, sizeof uid, "%s", m->metadata.uid);
  CHECK(kcr_typed_finalizer_contains(&m->metadata, MEMCACHED_FINALIZER));
  memcached_free(m);
  EVENTUALLY(deployment_is(1, kwok, uid));

  CHECK(resize(3, &err) == 0);
  EVENTUALLY(deployment_is(3, kwok, uid));
  EVENTUALLY(available_with("with 3 replicas created successfully"));
  {
    kcr_error_t e = {0};
    CHECK(resize(0, &e) != 0); /* the CRD: minimum 1 */
    CHECK(e.http_status == 422);
  }
  CHECK(resize(2, &err) == 0);
  EVENTUALLY(deployment_is(2, kwok, uid));
  EVENTUALLY(available_with("with 2 replicas created successfully"));

  CHECK(kcr_client_delete(direct, &memcacheds, ns, NAME, NULL, NULL, &err) == 0);
  EVENTUALLY(gone(&memcacheds));
  EVENTUALLY(has_event());
  /*
   * The garbage collector, through the owner reference. It learns of a new
   * CRD's resource at its next discovery sync (every 30 s) and retries an
   * unknown owner with backoff, so the first test after the CRD's install may
   * wait that long (test_operator_e2e.sh allows 60 s too).
   */
  WITHIN(60, gone(&deployments));
  return 0;
}

int main(void) {
  static const kcr_gvr namespaces = {"", "v1", "namespaces"};
  kcr_testenv_options to = {.crd_directory = CRD_DIR};
  kcr_testenv_t *env = NULL;
  kcr_rest_config_t *cfg = NULL;
  kcr_client_options co = {0};
  kcr_manager_options mo = {0};
  json_t *obj;
  pthread_t th;
  int rc = 1;

  snprintf(ns, sizeof ns, "memcached-it-%ld", (long)getpid());
  if (kcr_testenv_start_with(&to, &env, &err) != 0 || kcr_testenv_rest_config(env, &cfg, &err) != 0)
    goto out;
  co.config = cfg;
  if (kcr_client_create(&co, &direct, &err) != 0)
    goto out;
  obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                  "name", ns);
  rc = kcr_client_create_object(direct, &namespaces, NULL, obj, NULL, NULL, &err);
  json_decref(obj);
  if (rc != 0)
    goto out;
  mo.config = cfg;
  mo.default_namespace = ns;
  mo.no_signal_handlers = true;
  mo.graceful_shutdown_timeout_ns = 5 * (int64_t)1000000000;
  if ((rc = kcr_scheme_create(&scheme, &err)) != 0 ||
      (rc = kcr_manager_create(&mo, &mgr, &err)) != 0 ||
      (rc = memcached_controller_setup(mgr, scheme, &err)) != 0)
    goto out;
  client = kcr_manager_client(mgr);
  pthread_create(&th, NULL, run, NULL);
  rc = scenario();
  kcr_manager_request_stop(mgr);
  pthread_join(th, NULL);
  kcr_client_delete(direct, &namespaces, NULL, ns, NULL, NULL, &(kcr_error_t){0});
out:
  if (rc != 0 && err.message[0])
    fprintf(stderr, "memcached_test: %s\n", err.message);
  kcr_manager_destroy(mgr);
  kcr_scheme_destroy(scheme);
  kcr_client_destroy(direct);
  kcr_rest_config_unref(cfg);
  kcr_testenv_stop(env);
  if (rc != 0)
    return 1;
  printf("ok\n");
  return 0;
}
