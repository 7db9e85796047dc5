/* SPDX-License-Identifier: MIT */
/*
 * test_client_it.c: the REST client against the real kube-apiserver of the local
 * control plane: every verb and patch type on ConfigMaps and on a custom
 * resource, paging, 409 conflicts with the server's message, server-side apply
 * conflicts and force, status and scale subresources, a CRD created after start
 * found by the lazy REST mapper, many watches multiplexed over one HTTP/2
 * connection, and 100 concurrent requests from 8 threads.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "kcr/discovery.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvr namespaces = {"", "v1", "namespaces"};
static const kcr_gvr crds = {"apiextensions.k8s.io", "v1", "customresourcedefinitions"};
static const kcr_gvr gadgets = {"it.kcr.dev", "v1", "gadgets"};

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];

#define CHECK(call)                                                                                \
  do {                                                                                             \
    kcr_error_t e_;                                                                                \
    int rc_;                                                                                       \
    kcr_error_clear(&e_);                                                                          \
    rc_ = (call);                                                                                  \
    if (rc_ != 0)                                                                                  \
      fail_msg("%s: %s (%s)", #call, e_.message, kcr_err_name(rc_));                               \
  } while (0)

/* E is the error variable the CHECK macro's calls write into. */
#define E (&e_)

static const char *name_of(json_t *obj) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

static const char *rv_of(json_t *obj) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0)
    return -1;
  return kcr_it_create_namespace(client, "kcr-it-client", ns, sizeof(ns));
}

static int group_teardown(void **state) {
  (void)state;
  kcr_client_delete(client, &crds, NULL, "gadgets.it.kcr.dev", NULL, NULL, NULL);
  kcr_it_disconnect(env, config, client, ns);
  return 0;
}

static json_t *configmap(const char *name, const char *key, const char *value) {
  return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                   "metadata", "name", name, "labels", "suite", "client-it", "data", key, value);
}

static void test_it_configmap_verbs(void **state) {
  json_t *cm = configmap("verbs", "a", "1"), *got = NULL, *list = NULL;
  kcr_request_options o;
  const char *patch;
  (void)state;

  CHECK(kcr_client_create_object(client, &configmaps, ns, cm, NULL, &got, E));
  assert_string_equal(name_of(got), "verbs");
  json_decref(got);
  CHECK(kcr_client_get(client, &configmaps, ns, "verbs", NULL, &got, E));
  assert_string_equal(json_string_value(json_object_get(json_object_get(got, "data"), "a")), "1");

  /* update (PUT) */
  json_object_set_new(json_object_get(got, "data"), "b", json_string("2"));
  {
    json_t *updated = NULL;
    CHECK(kcr_client_update(client, &configmaps, ns, got, NULL, &updated, E));
    assert_string_not_equal(rv_of(updated), rv_of(got));
    json_decref(updated);
  }
  json_decref(got);

  /* merge patch */
  patch = "{\"data\":{\"c\":\"3\"}}";
  CHECK(kcr_client_patch(client, &configmaps, ns, "verbs", KCR_PATCH_MERGE, patch, strlen(patch),
                         NULL, &got, E));
  assert_string_equal(json_string_value(json_object_get(json_object_get(got, "data"), "c")), "3");
  json_decref(got);

  /* JSON patch with a test op: applies when the test holds, 422 when it does not */
  patch = "[{\"op\":\"test\",\"path\":\"/data/a\",\"value\":\"1\"},"
          "{\"op\":\"replace\",\"path\":\"/data/a\",\"value\":\"one\"}]";
  CHECK(kcr_client_patch(client, &configmaps, ns, "verbs", KCR_PATCH_JSON, patch, strlen(patch),
                         NULL, &got, E));
  assert_string_equal(json_string_value(json_object_get(json_object_get(got, "data"), "a")), "one");
  json_decref(got);
  {
    kcr_error_t err;
    kcr_error_clear(&err);
    assert_int_equal(kcr_client_patch(client, &configmaps, ns, "verbs", KCR_PATCH_JSON, patch,
                                      strlen(patch), NULL, NULL, &err),
                     KCR_EAPI);
    assert_int_equal(err.http_status, 422);
    assert_true(kcr_error_is_invalid(&err));
  }

  /* strategic merge patch */
  patch = "{\"metadata\":{\"labels\":{\"smp\":\"yes\"}}}";
  CHECK(kcr_client_patch(client, &configmaps, ns, "verbs", KCR_PATCH_STRATEGIC, patch,
                         strlen(patch), NULL, &got, E));
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(json_object_get(got, "metadata"), "labels"), "smp")),
                      "yes");
  json_decref(got);

  /* dry-run create leaves nothing behind */
  memset(&o, 0, sizeof(o));
  o.dry_run = 1;
  {
    json_t *dry = configmap("dry", "x", "y");
    kcr_error_t err;
    CHECK(kcr_client_create_object(client, &configmaps, ns, dry, &o, NULL, E));
    kcr_error_clear(&err);
    assert_int_equal(kcr_client_get(client, &configmaps, ns, "dry", NULL, NULL, &err), KCR_EAPI);
    assert_true(kcr_error_is_not_found(&err));
    json_decref(dry);
  }

  /* list with a label selector */
  memset(&o, 0, sizeof(o));
  o.label_selector = "smp=yes";
  CHECK(kcr_client_list(client, &configmaps, ns, &o, &list, E));
  assert_int_equal(json_array_size(json_object_get(list, "items")), 1);
  json_decref(list);

  /* delete; then NotFound */
  memset(&o, 0, sizeof(o));
  o.propagation_policy = "Background";
  CHECK(kcr_client_delete(client, &configmaps, ns, "verbs", &o, NULL, E));
  {
    kcr_error_t err;
    kcr_error_clear(&err);
    assert_int_equal(kcr_client_get(client, &configmaps, ns, "verbs", NULL, NULL, &err), KCR_EAPI);
    assert_true(kcr_error_is_not_found(&err));
    assert_non_null(strstr(err.message, "\"verbs\" not found"));
  }
  json_decref(cm);
}

static void test_it_paging_and_delete_collection(void **state) {
  kcr_request_options o;
  json_t *list = NULL;
  char name[32], cont[1024] = "";
  size_t total = 0;
  int pages = 0;
  (void)state;
  for (int i = 0; i < 12; i++) {
    json_t *cm;
    snprintf(name, sizeof(name), "page-%02d", i);
    cm = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "ConfigMap",
                   "metadata", "name", name, "labels", "paging", "yes");
    CHECK(kcr_client_create_object(client, &configmaps, ns, cm, NULL, NULL, E));
    json_decref(cm);
  }
  do {
    const char *next;
    memset(&o, 0, sizeof(o));
    o.label_selector = "paging=yes";
    o.limit = 5;
    o.continue_token = cont[0] ? cont : NULL;
    CHECK(kcr_client_list(client, &configmaps, ns, &o, &list, E));
    total += json_array_size(json_object_get(list, "items"));
    pages++;
    next = json_string_value(json_object_get(json_object_get(list, "metadata"), "continue"));
    snprintf(cont, sizeof(cont), "%s", next ? next : "");
    json_decref(list);
  } while (cont[0]);
  assert_int_equal(total, 12);
  assert_int_equal(pages, 3);

  memset(&o, 0, sizeof(o));
  o.label_selector = "paging=yes";
  CHECK(kcr_client_delete_collection(client, &configmaps, ns, &o, E));
  CHECK(kcr_client_list(client, &configmaps, ns, &o, &list, E));
  assert_int_equal(json_array_size(json_object_get(list, "items")), 0);
  json_decref(list);
}

static void test_it_conflict_carries_server_message(void **state) {
  json_t *cm = configmap("conflict", "a", "1"), *v1 = NULL, *v2 = NULL;
  kcr_error_t err;
  (void)state;
  CHECK(kcr_client_create_object(client, &configmaps, ns, cm, NULL, &v1, E));
  CHECK(kcr_client_get(client, &configmaps, ns, "conflict", NULL, &v2, E));
  json_object_set_new(json_object_get(v2, "data"), "a", json_string("2"));
  CHECK(kcr_client_update(client, &configmaps, ns, v2, NULL, NULL, E));
  /* v1 carries the old resourceVersion now. */
  json_object_set_new(json_object_get(v1, "data"), "a", json_string("3"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_update(client, &configmaps, ns, v1, NULL, NULL, &err), KCR_EAPI);
  assert_int_equal(err.http_status, 409);
  assert_true(kcr_error_is_conflict(&err));
  assert_non_null(strstr(err.message, "the object has been modified"));
  /* A create of an existing name is AlreadyExists. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_create_object(client, &configmaps, ns, cm, NULL, NULL, &err),
                   KCR_EAPI);
  assert_true(kcr_error_is_already_exists(&err));
  json_decref(cm);
  json_decref(v1);
  json_decref(v2);
}

static void test_it_server_side_apply_conflict_and_force(void **state) {
  json_t *a = configmap("ssa", "k", "from-a"), *b = configmap("ssa", "k", "from-b"), *got = NULL;
  kcr_request_options o;
  kcr_error_t err;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.field_manager = "manager-a";
  CHECK(kcr_client_apply(client, &configmaps, ns, a, &o, &got, E));
  assert_string_equal(json_string_value(json_object_get(json_object_get(got, "data"), "k")),
                      "from-a");
  json_decref(got);
  o.field_manager = "manager-b";
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_apply(client, &configmaps, ns, b, &o, NULL, &err), KCR_EAPI);
  assert_int_equal(err.http_status, 409);
  assert_true(kcr_error_is_conflict(&err));
  assert_non_null(strstr(err.message, "manager-a"));
  o.force = 1;
  CHECK(kcr_client_apply(client, &configmaps, ns, b, &o, &got, E));
  assert_string_equal(json_string_value(json_object_get(json_object_get(got, "data"), "k")),
                      "from-b");
  json_decref(got);
  /* Apply without a field manager is refused before anything is sent. */
  o.field_manager = NULL;
  assert_int_equal(kcr_client_apply(client, &configmaps, ns, b, &o, NULL, NULL), KCR_EINVAL);
  json_decref(a);
  json_decref(b);
}

static const char gadget_crd[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"gadgets.it.kcr.dev\"},\"spec\":{\"group\":\"it.kcr.dev\","
    "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"gadgets\",\"singular\":\"gadget\","
    "\"kind\":\"Gadget\",\"listKind\":\"GadgetList\"},\"versions\":[{\"name\":\"v1\","
    "\"served\":true,\"storage\":true,\"subresources\":{\"status\":{},\"scale\":{"
    "\"specReplicasPath\":\".spec.replicas\",\"statusReplicasPath\":\".status.replicas\"}},"
    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":"
    "\"object\",\"properties\":{\"replicas\":{\"type\":\"integer\",\"minimum\":0}}},\"status\":{"
    "\"type\":\"object\",\"properties\":{\"replicas\":{\"type\":\"integer\"},\"phase\":{\"type\":"
    "\"string\"}}}}}}}]}}";

static void test_it_crd_after_start_status_and_scale(void **state) {
  const kcr_gvk gadget = {"it.kcr.dev", NULL, "Gadget"}, cm = {"", NULL, "ConfigMap"};
  const kcr_gvk dep = {"apps", NULL, "Deployment"}, nsk = {"", "v1", "Namespace"};
  kcr_rest_mapper_t *mapper;
  kcr_rest_mapping m;
  kcr_error_t err;
  json_t *crd, *g, *got = NULL;
  kcr_request_options o;
  const char *patch;
  int found = 0;
  (void)state;

  CHECK(kcr_rest_mapper_create(client, &mapper, E));
  /* Before the CRD exists the mapper does not know the kind. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_mapper_mapping_for_kind(mapper, &gadget, &m, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "Gadget"));
  CHECK(kcr_rest_mapper_mapping_for_kind(mapper, &cm, &m, E));
  assert_string_equal(m.resource, "configmaps");
  assert_true(m.namespaced);
  CHECK(kcr_rest_mapper_mapping_for_kind(mapper, &dep, &m, E));
  assert_string_equal(m.version, "v1");
  CHECK(kcr_rest_mapper_mapping_for_kind(mapper, &nsk, &m, E));
  assert_false(m.namespaced);

  crd = json_loads(gadget_crd, 0, NULL);
  assert_non_null(crd);
  CHECK(kcr_client_create_object(client, &crds, NULL, crd, NULL, NULL, E));
  json_decref(crd);
  /* The lazy mapper rediscovers on a miss (at most once a second). */
  for (int i = 0; i < 60 && !found; i++) {
    kcr_error_clear(&err);
    if (kcr_rest_mapper_mapping_for_kind(mapper, &gadget, &m, &err) == 0)
      found = 1;
    else
      kcr_it_sleep_ms(500);
  }
  assert_true(found);
  assert_string_equal(m.resource, "gadgets");
  assert_true(m.namespaced);
  {
    kcr_rest_mapper_stats st;
    kcr_rest_mapper_get_stats(mapper, &st);
    assert_true(st.discoveries >= 2);
    assert_true(st.aggregated);
  }
  kcr_rest_mapper_destroy(mapper);

  /* The resource can take a moment to be served after discovery lists it. */
  g = json_pack("{s:s, s:s, s:{s:s}, s:{s:i}}", "apiVersion", "it.kcr.dev/v1", "kind", "Gadget",
                "metadata", "name", "g1", "spec", "replicas", 1);
  for (int i = 0; i < 40; i++) {
    kcr_error_clear(&err);
    if (kcr_client_create_object(client, &gadgets, ns, g, NULL, NULL, &err) == 0)
      break;
    kcr_it_sleep_ms(250);
  }
  assert_int_equal(err.code, 0);
  json_decref(g);

  /* status subresource: a status change through the main resource is ignored,
   * through /status it sticks */
  patch = "{\"status\":{\"phase\":\"Ready\",\"replicas\":1}}";
  CHECK(kcr_client_patch(client, &gadgets, ns, "g1", KCR_PATCH_MERGE, patch, strlen(patch), NULL,
                         &got, E));
  assert_null(json_object_get(got, "status"));
  json_decref(got);
  memset(&o, 0, sizeof(o));
  o.subresource = "status";
  CHECK(kcr_client_patch(client, &gadgets, ns, "g1", KCR_PATCH_MERGE, patch, strlen(patch), &o,
                         &got, E));
  assert_string_equal(json_string_value(json_object_get(json_object_get(got, "status"), "phase")),
                      "Ready");
  json_decref(got);

  /* scale subresource: read, then write through it */
  o.subresource = "scale";
  CHECK(kcr_client_get(client, &gadgets, ns, "g1", &o, &got, E));
  assert_string_equal(json_string_value(json_object_get(got, "kind")), "Scale");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(got, "spec"), "replicas")),
                   1);
  json_object_set_new(json_object_get(got, "spec"), "replicas", json_integer(3));
  {
    json_t *scaled = NULL, *after = NULL;
    CHECK(kcr_client_update(client, &gadgets, ns, got, &o, &scaled, E));
    json_decref(scaled);
    CHECK(kcr_client_get(client, &gadgets, ns, "g1", NULL, &after, E));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(after, "spec"), "replicas")), 3);
    json_decref(after);
  }
  json_decref(got);
}

typedef struct watch_count {
  pthread_mutex_t mu;
  int added;
  int ended;
} watch_count;

static int on_event(const kcr_watch_event *ev, void *data) {
  watch_count *c = data;
  pthread_mutex_lock(&c->mu);
  if (ev->type == KCR_WATCH_ADDED)
    c->added++;
  pthread_mutex_unlock(&c->mu);
  json_decref(ev->object);
  return 0;
}

/* run_watch consumes one watch on its own thread until it ends. */
typedef struct runner {
  kcr_watch_t *w;
  watch_count *c;
  pthread_t thread;
} runner_t;

static void *run_watch(void *arg) {
  runner_t *r = arg;
  (void)kcr_watch_run(r->w, on_event, r->c, NULL);
  pthread_mutex_lock(&r->c->mu);
  r->c->ended++;
  pthread_mutex_unlock(&r->c->mu);
  return NULL;
}

static void test_it_watches_share_one_connection(void **state) {
  enum { N = 20 };
  kcr_watch_t *w[N];
  runner_t run[N];
  watch_count c;
  kcr_watch_options o;
  kcr_loop_stats before, after;
  json_t *cm;
  int added = 0;
  (void)state;

  pthread_mutex_init(&c.mu, NULL);
  c.added = c.ended = 0;
  /* One request first, so the connection exists and speaks HTTP/2. */
  CHECK(kcr_client_get(client, &namespaces, NULL, ns, NULL, NULL, E));
  kcr_loop_get_stats(kcr_client_loop(client), &before);
  memset(&o, 0, sizeof(o));
  o.label_selector = "watched=yes";
  o.timeout_seconds = 120;
  for (int i = 0; i < N; i++) {
    CHECK(kcr_client_watch(client, &configmaps, ns, &o, &w[i], E));
    run[i].w = w[i];
    run[i].c = &c;
    assert_int_equal(pthread_create(&run[i].thread, NULL, run_watch, &run[i]), 0);
  }
  kcr_it_sleep_ms(300);
  cm = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "ConfigMap",
                 "metadata", "name", "watched", "labels", "watched", "yes");
  CHECK(kcr_client_create_object(client, &configmaps, ns, cm, NULL, NULL, E));
  json_decref(cm);
  for (int i = 0; i < 100 && added < N; i++) {
    kcr_it_sleep_ms(100);
    pthread_mutex_lock(&c.mu);
    added = c.added;
    pthread_mutex_unlock(&c.mu);
  }
  assert_int_equal(added, N);
  kcr_loop_get_stats(kcr_client_loop(client), &after);
  /* Twenty watches and a create went over the connection that already existed. */
  assert_int_equal(after.connections_opened, before.connections_opened);
  for (int i = 0; i < N; i++)
    kcr_watch_stop(w[i]);
  for (int i = 0; i < N; i++) {
    pthread_join(run[i].thread, NULL);
    kcr_watch_destroy(w[i]);
  }
  assert_int_equal(c.ended, N);
  pthread_mutex_destroy(&c.mu);
}

static void *hammer(void *arg) {
  int *ok = arg;
  for (int i = 0; i < 13; i++) {
    json_t *obj = NULL;
    if (kcr_client_get(client, &namespaces, NULL, ns, NULL, &obj, NULL) == 0 && obj)
      (*ok)++;
    json_decref(obj);
  }
  return NULL;
}

static void test_it_concurrent_requests(void **state) {
  pthread_t th[8];
  int ok[8] = {0}, total = 0;
  (void)state;
  for (int i = 0; i < 8; i++)
    pthread_create(&th[i], NULL, hammer, &ok[i]);
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    total += ok[i];
  }
  assert_int_equal(total, 104);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_it_configmap_verbs),
      cmocka_unit_test(test_it_paging_and_delete_collection),
      cmocka_unit_test(test_it_conflict_carries_server_message),
      cmocka_unit_test(test_it_server_side_apply_conflict_and_force),
      cmocka_unit_test(test_it_crd_after_start_status_and_scale),
      cmocka_unit_test(test_it_watches_share_one_connection),
      cmocka_unit_test(test_it_concurrent_requests),
  };
  return cmocka_run_group_tests_name("client_it", tests, group_setup, group_teardown);
}
