/* SPDX-License-Identifier: MIT */
/*
 * test_objclient_it.c: the object client's newer calls through the manager's
 * client against the real apiserver (issue 25): dry runs that leave nothing
 * behind, field owners in managedFields, fieldValidation Strict / Ignore,
 * DeleteAllOf by label and field, the scale, status, eviction and token
 * subresources, PartialObjectMetadata get and list, the API reader, a kind the
 * cache is disabled for (no Secret informer after a Secret get), and
 * reader_fail_on_missing_informer, and watches (the server's stream through
 * kcr_objclient_watch).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/apierror.h"
#include "kcr/cache.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/manager.h"
#include "kcr/meta.h"
#include "kcr/objclient.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};
static const kcr_gvk secret_gvk = {"", "v1", "Secret"};
static const kcr_gvk pod_gvk = {"", "v1", "Pod"};
static const kcr_gvk deploy_gvk = {"apps", "v1", "Deployment"};
static const kcr_gvk ns_gvk = {"", "v1", "Namespace"};

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];

#define CHECK(call)                                                                                \
  do {                                                                                             \
    kcr_error_t e_;                                                                                \
    kcr_error_clear(&e_);                                                                          \
    int rc_ = (call);                                                                              \
    if (rc_ != 0)                                                                                  \
      fail_msg("%s: %s (%s)", #call, e_.message, kcr_err_name(rc_));                               \
  } while (0)
#define E (&e_)

#define PATCH_K "{\"data\":{\"k\":\"patched\"}}"
#define PATCH_K3 "{\"data\":{\"k3\":\"v3\"}}"
#define PATCH_K4 "{\"data\":{\"k4\":\"v4\"}}"

static json_t *cm(const char *name, const char *app) {
  return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                   "ConfigMap", "metadata", "name", name, "namespace", ns, "labels", "app", app,
                   "data", "k", "v");
}

static int group_setup(void **state) {
  json_t *plain;
  int rc;
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0 ||
      kcr_it_create_namespace(client, "kcr-it-objclient", ns, sizeof(ns)) != 0)
    return -1;
  plain = cm("plain", "plain");
  rc = kcr_client_create_object(client, &(kcr_gvr){"", "v1", "configmaps"}, ns, plain, NULL, NULL,
                                NULL);
  json_decref(plain);
  return rc;
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_disconnect(env, config, client, ns);
  return 0;
}

/* manager makes a manager (not run: its client reads and writes without it). */
static kcr_manager_t *manager(const kcr_manager_options *extra) {
  kcr_manager_options o;
  kcr_manager_t *m = NULL;
  if (extra)
    o = *extra;
  else
    memset(&o, 0, sizeof(o));
  o.config = config;
  o.no_signal_handlers = true;
  o.cache_sync_timeout_ns = 60 * KCR_NSEC_PER_SEC;
  CHECK(kcr_manager_create(&o, &m, E));
  return m;
}

/* exists reads name from the server (not a cache): 1, 0 on NotFound. */
static int exists(const kcr_objclient *reader, const kcr_gvk *gvk, const char *name) {
  json_t *obj = NULL;
  kcr_error_t err;
  int rc;
  kcr_error_clear(&err);
  rc = kcr_objclient_get(reader, gvk, ns, name, &obj, &err);
  json_decref(obj);
  if (rc == KCR_EAPI && kcr_error_is_not_found(&err))
    return 0;
  if (rc != 0)
    fail_msg("get %s: %s", name, err.message);
  return 1;
}

/* has_manager tells whether obj's managedFields name manager with operation op. */
static int has_manager(const json_t *obj, const char *manager_name, const char *op) {
  json_t *mf = json_object_get(json_object_get(obj, "metadata"), "managedFields"), *e;
  size_t i;
  json_array_foreach(mf, i, e) {
    const char *m = json_string_value(json_object_get(e, "manager"));
    const char *o = json_string_value(json_object_get(e, "operation"));
    if (m && o && strcmp(m, manager_name) == 0 && strcmp(o, op) == 0)
      return 1;
  }
  return 0;
}

/* informer_kinds lists the kinds of the cache's informers: "ConfigMap,Secret". */
static void informer_kinds(kcr_manager_t *m, char *buf, size_t size) {
  json_t *d = kcr_cache_diagnostics(kcr_manager_cache(m)), *e;
  size_t i, off = 0;
  buf[0] = '\0';
  json_array_foreach(d, i, e) {
    off += (size_t)snprintf(buf + off, size - off, "%s%s", off ? "," : "",
                            json_string_value(json_object_get(e, "kind")));
  }
  json_decref(d);
}

/* A dry run of every write leaves the server as it was; the answers are
 * what the server would have stored. */
static void test_objclient_it_dry_run(void **state) {
  kcr_manager_t *m = manager(NULL);
  const kcr_objclient *c = kcr_manager_client(m), *r = kcr_manager_api_reader(m);
  kcr_write_options dry = {.dry_run = true};
  kcr_apply_options ao = {.field_manager = "kcr-it", .dry_run = true};
  kcr_delete_options dd = {.dry_run = true};
  json_t *obj = cm("dry", "dry"), *out = NULL, *kept = NULL;
  (void)state;

  CHECK(kcr_objclient_create_with(c, obj, &dry, &out, E));
  assert_string_equal(kcr_meta_name(out), "dry");
  json_decref(out);
  assert_int_equal(exists(r, &cm_gvk, "dry"), 0);
  CHECK(kcr_objclient_apply(c, obj, &ao, NULL, NULL, E));
  assert_int_equal(exists(r, &cm_gvk, "dry"), 0);

  /* Now for real; then dry-run update, patch, apply, delete and delete_all_of. */
  CHECK(kcr_objclient_create(c, obj, &kept, E));
  json_object_set_new(json_object_get(kept, "data"), "k", json_string("changed"));
  CHECK(kcr_objclient_update_with(c, kept, NULL, &dry, &out, E));
  assert_string_equal(kcr_meta_path_string(out, "data.k"), "changed"); /* what it would be */
  json_decref(out);
  CHECK(kcr_objclient_patch_with(c, obj, KCR_PATCH_MERGE, PATCH_K, strlen(PATCH_K), NULL, &dry,
                                 NULL, E));
  json_object_set_new(json_object_get(obj, "data"), "k", json_string("applied"));
  ao.force = true; /* data.k is the creator's: take it over, in a dry run */
  CHECK(kcr_objclient_apply(c, obj, &ao, NULL, NULL, E));
  CHECK(kcr_objclient_delete(c, obj, &dd, E));
  CHECK(kcr_objclient_delete_all_of(
      c, &cm_gvk, &(kcr_list_options){.ns = ns, .label_selector = "app=dry"}, &dd, E));
  CHECK(kcr_objclient_get(r, &cm_gvk, ns, "dry", &out, E));
  assert_string_equal(kcr_meta_path_string(out, "data.k"), "v");
  assert_string_equal(kcr_meta_resource_version(out), kcr_meta_resource_version(kept));
  assert_null(json_object_get(json_object_get(out, "metadata"), "deletionTimestamp"));
  json_decref(out);
  json_decref(kept);
  json_decref(obj);
  kcr_manager_destroy(m);
}

/* A field owner names the manager of every write in managedFields
 * (operation Update), per call or client-wide (kcr_objclient_with_field_owner),
 * the call's winning. */
static void test_objclient_it_field_owner(void **state) {
  kcr_manager_t *m = manager(NULL);
  const kcr_objclient *c = kcr_manager_client(m), *r = kcr_manager_api_reader(m), *fc;
  kcr_field_owner_client fo;
  kcr_write_options mine = {.field_manager = "kcr-it-create"};
  json_t *obj = cm("owned", "owner"), *out = NULL;
  (void)state;

  CHECK(kcr_objclient_create_with(c, obj, &mine, NULL, E));
  CHECK(kcr_objclient_get(r, &cm_gvk, ns, "owned", &out, E));
  assert_true(has_manager(out, "kcr-it-create", "Update"));

  fc = kcr_objclient_with_field_owner(&fo, c, "kcr-it-owner");
  json_object_set_new(json_object_get(out, "data"), "k2", json_string("v2"));
  CHECK(kcr_objclient_update(fc, out, NULL, NULL, E));
  json_decref(out);
  CHECK(kcr_objclient_get(r, &cm_gvk, ns, "owned", &out, E));
  assert_true(has_manager(out, "kcr-it-owner", "Update"));
  json_decref(out);

  mine.field_manager = "kcr-it-patch";
  CHECK(kcr_objclient_patch_with(fc, obj, KCR_PATCH_MERGE, PATCH_K3, strlen(PATCH_K3), NULL, &mine,
                                 NULL, E));
  CHECK(kcr_objclient_patch(fc, obj, KCR_PATCH_MERGE, PATCH_K4, strlen(PATCH_K4), NULL, NULL, E));
  CHECK(kcr_objclient_get(r, &cm_gvk, ns, "owned", &out, E));
  assert_true(has_manager(out, "kcr-it-patch", "Update"));
  assert_string_equal(kcr_meta_path_string(out, "data.k4"), "v4");
  json_decref(out);

  /* An apply through the owner client is the owner's, operation Apply. */
  {
    json_t *partial =
        json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                  "metadata", "name", "owned", "namespace", ns, "data", "applied", "yes");
    CHECK(kcr_objclient_apply(fc, partial, NULL, NULL, &out, E));
    assert_true(has_manager(out, "kcr-it-owner", "Apply"));
    json_decref(out);
    json_decref(partial);
  }
  json_decref(obj);
  kcr_manager_destroy(m);
}

/* fieldValidation Strict makes the server refuse an unknown field with its
 * message; Ignore (and the default, Warn) accept the object. */
static void test_objclient_it_field_validation(void **state) {
  kcr_manager_t *m = manager(NULL);
  const kcr_objclient *c = kcr_manager_client(m), *r = kcr_manager_api_reader(m);
  kcr_write_options strict = {.field_validation = "Strict"},
                    ignore = {.field_validation = "Ignore"};
  kcr_apply_options ao = {.field_manager = "kcr-it", .field_validation = "Strict"};
  json_t *obj = cm("strict", "fv"), *out = NULL;
  kcr_error_t err;
  int rc;
  (void)state;
  json_object_set_new(obj, "bogus", json_string("x"));

  kcr_error_clear(&err);
  rc = kcr_objclient_create_with(c, obj, &strict, NULL, &err);
  assert_int_equal(rc, KCR_EAPI);
  assert_int_equal(err.http_status, 400);
  assert_string_equal(err.reason, "BadRequest");
  if (!strstr(err.message, "unknown field \"bogus\""))
    fail_msg("message: %s", err.message);
  fprintf(stderr, "Strict: %s\n", err.message);
  assert_int_equal(exists(r, &cm_gvk, "strict"), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_apply(c, obj, &ao, NULL, NULL, &err), KCR_EAPI);
  assert_non_null(strstr(err.message, "bogus"));

  CHECK(kcr_objclient_create_with(c, obj, &ignore, &out, E));
  assert_null(json_object_get(out, "bogus"));
  json_decref(out);
  assert_int_equal(exists(r, &cm_gvk, "strict"), 1);
  /* An update with the field is refused too when strict. */
  CHECK(kcr_objclient_get(r, &cm_gvk, ns, "strict", &out, E));
  json_object_set_new(out, "bogus", json_string("y"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_update_with(c, out, NULL, &strict, NULL, &err), KCR_EAPI);
  assert_int_equal(err.http_status, 400);
  json_decref(out);
  json_decref(obj);
  kcr_manager_destroy(m);
}

/* DeleteAllOf deletes what its selectors select, nothing else. */
static void test_objclient_it_delete_all_of(void **state) {
  kcr_manager_t *m = manager(NULL);
  const kcr_objclient *c = kcr_manager_client(m), *r = kcr_manager_api_reader(m);
  const char *names[] = {"del-a1", "del-a2", "del-b1", "del-f1", "del-f2"};
  const char *apps[] = {"del", "del", "keep", "f", "f"};
  (void)state;
  for (size_t i = 0; i < 5; i++) {
    json_t *o = cm(names[i], apps[i]);
    CHECK(kcr_objclient_create(c, o, NULL, E));
    json_decref(o);
  }
  CHECK(kcr_objclient_delete_all_of(
      c, &cm_gvk, &(kcr_list_options){.ns = ns, .label_selector = "app=del"}, NULL, E));
  assert_int_equal(exists(r, &cm_gvk, "del-a1"), 0);
  assert_int_equal(exists(r, &cm_gvk, "del-a2"), 0);
  assert_int_equal(exists(r, &cm_gvk, "del-b1"), 1);
  CHECK(kcr_objclient_delete_all_of(c, &cm_gvk,
                                    &(kcr_list_options){.ns = ns,
                                                        .label_selector = "app=f",
                                                        .field_selector = "metadata.name=del-f1"},
                                    &(kcr_delete_options){.propagation_policy = "Background"}, E));
  assert_int_equal(exists(r, &cm_gvk, "del-f1"), 0);
  assert_int_equal(exists(r, &cm_gvk, "del-f2"), 1);
  assert_int_equal(exists(r, &cm_gvk, "del-b1"), 1);
  kcr_manager_destroy(m);
}

/* scale get/update on a Deployment (spec.replicas changes at once, no
 * controller needed), read back through the cache; status get and update. */
static void test_objclient_it_scale_and_status(void **state) {
  kcr_manager_t *m = manager(NULL);
  const kcr_objclient *c = kcr_manager_client(m);
  json_t *d = json_pack(
      "{s:s,s:s,s:{s:s,s:s},s:{s:i,s:{s:{s:s}},s:{s:{s:{s:s}},s:{s:[{s:s,s:s}]}}}}", "apiVersion",
      "apps/v1", "kind", "Deployment", "metadata", "name", "scaled", "namespace", ns, "spec",
      "replicas", 1, "selector", "matchLabels", "app", "scaled", "template", "metadata", "labels",
      "app", "scaled", "spec", "containers", "name", "c", "image", "registry.invalid/none:1");
  json_t *scale = NULL, *out = NULL, *body;
  (void)state;
  CHECK(kcr_objclient_create(c, d, NULL, E));
  CHECK(kcr_objclient_get(c, &deploy_gvk, ns, "scaled", &out, E)); /* the informer */
  json_decref(out);

  CHECK(kcr_objclient_get_subresource(c, &deploy_gvk, ns, "scaled", "scale", &scale, E));
  assert_string_equal(kcr_meta_kind(scale), "Scale");
  assert_string_equal(json_string_value(json_object_get(scale, "apiVersion")), "autoscaling/v1");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(scale, "spec"), "replicas")),
                   1);
  json_decref(scale);

  /* A body without metadata is named as the Deployment. */
  body = json_pack("{s:s,s:s,s:{s:i}}", "apiVersion", "autoscaling/v1", "kind", "Scale", "spec",
                   "replicas", 3);
  CHECK(kcr_objclient_update_subresource(c, d, "scale", body, NULL, &scale, E));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(scale, "spec"), "replicas")),
                   3);
  json_decref(scale);
  json_decref(body);
  /* The cached client sees it at once (the scale answer's version is noted). */
  CHECK(kcr_objclient_get(c, &deploy_gvk, ns, "scaled", &out, E));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "spec"), "replicas")),
                   3);

  json_decref(out);

  /* status: read and written as the object itself; on the test's Namespace,
   * whose status no controller touches while it lives (a cluster-scoped
   * subresource, too). */
  CHECK(kcr_objclient_get_subresource(c, &ns_gvk, NULL, ns, "status", &out, E));
  assert_string_equal(kcr_meta_kind(out), "Namespace");
  assert_string_equal(kcr_meta_path_string(out, "status.phase"), "Active");
  json_object_set_new(
      json_object_get(out, "status"), "conditions",
      json_pack("[{s:s,s:s,s:s}]", "type", "KcrIt", "status", "True", "reason", "Tested"));
  CHECK(kcr_objclient_update_with(c, out, "status", NULL, NULL, E));
  json_decref(out);
  CHECK(kcr_objclient_get(kcr_manager_api_reader(m), &ns_gvk, NULL, ns, &out, E));
  assert_string_equal(
      json_string_value(json_object_get(
          json_array_get(json_object_get(json_object_get(out, "status"), "conditions"), 0),
          "reason")),
      "Tested");
  json_decref(out);
  json_decref(d);
  kcr_manager_destroy(m);
}

/* Eviction (create on pods/eviction): a dry run leaves the pod; a real one
 * deletes it (without a node at once; on a kwok node gracefully). A
 * TokenRequest (create on serviceaccounts/token) returns status.token. */
static void test_objclient_it_eviction_and_token(void **state) {
  kcr_manager_t *m = manager(NULL);
  const kcr_objclient *c = kcr_manager_client(m), *r = kcr_manager_api_reader(m);
  json_t *pod = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:[{s:s,s:s}]}}", "apiVersion", "v1", "kind",
                          "Pod", "metadata", "name", "evictee", "namespace", ns, "spec",
                          "containers", "name", "c", "image", "registry.invalid/none:1");
  json_t *ev = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "policy/v1", "kind", "Eviction",
                         "metadata", "name", "evictee", "namespace", ns);
  json_t *sa = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                         "metadata", "name", "kcr-it-sa", "namespace", ns);
  json_t *tr =
      json_pack("{s:s,s:s,s:{s:[s],s:i}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                "TokenRequest", "spec", "audiences", "kcr-it", "expirationSeconds", 600);
  kcr_write_options dry = {.dry_run = true};
  json_t *out = NULL, *got = NULL;
  (void)state;

  CHECK(kcr_objclient_create(c, pod, NULL, E));
  CHECK(kcr_objclient_create_subresource(c, pod, "eviction", ev, &dry, &out, E));
  json_decref(out);
  assert_int_equal(exists(r, &pod_gvk, "evictee"), 1);
  CHECK(kcr_objclient_get(r, &pod_gvk, ns, "evictee", &got, E));
  assert_null(json_object_get(json_object_get(got, "metadata"), "deletionTimestamp"));
  json_decref(got);
  CHECK(kcr_objclient_create_subresource(c, pod, "eviction", ev, NULL, &out, E));
  assert_string_equal(kcr_meta_kind(out), "Status");
  assert_string_equal(json_string_value(json_object_get(out, "status")), "Success");
  json_decref(out);
  /* Gone, or (scheduled to a kwok node) going: one read, so that a pod that
   * goes between two reads is no failure. */
  {
    kcr_error_t err;
    int rc;
    kcr_error_clear(&err);
    rc = kcr_objclient_get(r, &pod_gvk, ns, "evictee", &got, &err);
    if (rc == 0)
      assert_non_null(json_object_get(json_object_get(got, "metadata"), "deletionTimestamp"));
    else if (!(rc == KCR_EAPI && kcr_error_is_not_found(&err)))
      fail_msg("get evictee: %s", err.message);
    json_decref(got);
  }

  CHECK(kcr_objclient_create(c, sa, NULL, E));
  CHECK(kcr_objclient_create_subresource(c, sa, "token", tr, NULL, &out, E));
  assert_string_equal(kcr_meta_kind(out), "TokenRequest");
  assert_true(strlen(kcr_meta_path_string(out, "status.token")) > 20);
  assert_true(*kcr_meta_path_string(out, "status.expirationTimestamp"));
  json_decref(out);
  json_decref(pod);
  json_decref(ev);
  json_decref(sa);
  json_decref(tr);
  kcr_manager_destroy(m);
}

/* PartialObjectMetadata: get and list answer metadata only, of the kinds
 * the server names. */
static void test_objclient_it_metadata(void **state) {
  kcr_manager_t *m = manager(NULL);
  const kcr_objclient *c = kcr_manager_client(m);
  json_t *obj = cm("meta-only", "meta"), *out = NULL, *item;
  char kinds[256];
  size_t i;
  (void)state;
  CHECK(kcr_objclient_create(c, obj, NULL, E));
  CHECK(kcr_objclient_get_metadata(c, &cm_gvk, ns, "meta-only", &out, E));
  assert_string_equal(kcr_meta_kind(out), "PartialObjectMetadata");
  assert_string_equal(json_string_value(json_object_get(out, "apiVersion")), "meta.k8s.io/v1");
  assert_string_equal(kcr_meta_name(out), "meta-only");
  assert_string_equal(kcr_meta_label(out, "app"), "meta");
  assert_null(json_object_get(out, "data"));
  json_decref(out);

  CHECK(kcr_objclient_list_metadata(
      c, &cm_gvk, &(kcr_list_options){.ns = ns, .label_selector = "app=meta"}, &out, E));
  assert_string_equal(kcr_meta_kind(out), "PartialObjectMetadataList");
  assert_int_equal(json_array_size(kcr_list_items(out)), 1);
  json_array_foreach(kcr_list_items(out), i, item) {
    assert_string_equal(kcr_meta_name(item), "meta-only");
    assert_null(json_object_get(item, "data"));
  }
  /* The server's items carry their kind. */
  item = json_array_get(kcr_list_items(out), 0);
  assert_string_equal(kcr_meta_kind(item), "PartialObjectMetadata");
  assert_string_equal(json_string_value(json_object_get(item, "apiVersion")), "meta.k8s.io/v1");
  json_decref(out);
  informer_kinds(m, kinds, sizeof(kinds));
  assert_string_equal(kinds, ""); /* metadata reads make no informer */
  json_decref(obj);
  kcr_manager_destroy(m);
}

/* The API reader reads the server without an informer and refuses writes. */
static void test_objclient_it_api_reader(void **state) {
  kcr_manager_t *m = manager(NULL);
  const kcr_objclient *r = kcr_manager_api_reader(m);
  json_t *obj = cm("read-direct", "reader"), *out = NULL;
  kcr_error_t err;
  char kinds[256];
  (void)state;
  CHECK(
      kcr_client_create_object(client, &(kcr_gvr){"", "v1", "configmaps"}, ns, obj, NULL, NULL, E));
  CHECK(kcr_objclient_get(r, &cm_gvk, ns, "read-direct", &out, E));
  assert_string_equal(kcr_meta_path_string(out, "data.k"), "v");
  json_decref(out);
  CHECK(kcr_objclient_list(r, &cm_gvk,
                           &(kcr_list_options){.ns = ns, .label_selector = "app=reader"}, &out, E));
  assert_int_equal(json_array_size(kcr_list_items(out)), 1);
  assert_string_equal(kcr_meta_kind(json_array_get(kcr_list_items(out), 0)), "ConfigMap");
  json_decref(out);
  informer_kinds(m, kinds, sizeof(kinds));
  assert_string_equal(kinds, "");
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_delete(r, obj, NULL, &err), KCR_ENOTSUP);
  assert_non_null(strstr(err.message, "API reader only reads"));
  assert_int_equal(exists(r, &cm_gvk, "read-direct"), 1);
  json_decref(obj);
  kcr_manager_destroy(m);
}

/* disable_cache_for Secrets: the manager's client gets a Secret from the
 * server and no Secret informer exists afterwards; ConfigMaps still make
 * theirs. */
static void test_objclient_it_disable_cache_for(void **state) {
  kcr_manager_options o;
  kcr_manager_t *m;
  const kcr_objclient *c;
  json_t *s = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
                        "Secret", "metadata", "name", "uncached", "namespace", ns, "labels", "app",
                        "uncached", "stringData", "password", "hunter2");
  json_t *out = NULL;
  char kinds[256];
  (void)state;
  memset(&o, 0, sizeof(o));
  o.disable_cache_for = &secret_gvk;
  o.disable_cache_for_len = 1;
  m = manager(&o);
  c = kcr_manager_client(m);
  CHECK(kcr_objclient_create(c, s, NULL, E));
  CHECK(kcr_objclient_get(c, &secret_gvk, ns, "uncached", &out, E));
  assert_string_equal(kcr_meta_path_string(out, "data.password"), "aHVudGVyMg==");
  json_decref(out);
  CHECK(kcr_objclient_list(
      c, &secret_gvk, &(kcr_list_options){.ns = ns, .label_selector = "app=uncached"}, &out, E));
  assert_int_equal(json_array_size(kcr_list_items(out)), 1);
  assert_string_equal(kcr_meta_kind(json_array_get(kcr_list_items(out), 0)), "Secret");
  json_decref(out);
  informer_kinds(m, kinds, sizeof(kinds));
  assert_string_equal(kinds, "");

  CHECK(kcr_objclient_get(c, &cm_gvk, ns, "plain", &out, E));
  json_decref(out);
  informer_kinds(m, kinds, sizeof(kinds));
  assert_string_equal(kinds, "ConfigMap");
  json_decref(s);
  kcr_manager_destroy(m);
}

/* reader_fail_on_missing_informer: a read of a kind without an informer is
 * KCR_ENOTCACHED and makes none; after kcr_manager_get_informer it reads. */
static void test_objclient_it_fail_on_missing_informer(void **state) {
  kcr_manager_options o;
  kcr_manager_t *m;
  kcr_informer_t *inf = NULL;
  json_t *out = (json_t *)1;
  kcr_error_t err;
  char kinds[256];
  (void)state;
  memset(&o, 0, sizeof(o));
  o.reader_fail_on_missing_informer = true;
  m = manager(&o);
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_get(kcr_manager_client(m), &cm_gvk, ns, "plain", &out, &err),
                   KCR_ENOTCACHED);
  assert_null(out);
  assert_non_null(strstr(err.message, "ConfigMap (/v1, Kind=ConfigMap) is not cached"));
  informer_kinds(m, kinds, sizeof(kinds));
  assert_string_equal(kinds, "");
  CHECK(kcr_manager_get_informer(m, &cm_gvk, &inf, E));
  CHECK(kcr_objclient_get(kcr_manager_client(m), &cm_gvk, ns, "plain", &out, E));
  assert_string_equal(kcr_meta_name(out), "plain");
  json_decref(out);
  kcr_manager_destroy(m);
}

/* next_of waits up to 30 s for the watch's next event and checks its type and name. */
static json_t *next_of(kcr_objwatch_t *w, kcr_watch_event_type type, const char *name) {
  kcr_watch_event ev;
  kcr_error_t err;
  int rc;
  kcr_error_clear(&err);
  rc = kcr_objwatch_next(w, 30 * KCR_NSEC_PER_SEC, &ev, &err);
  if (rc != 0)
    fail_msg("next: %s (%s), want %s %s", kcr_err_name(rc), err.message,
             kcr_watch_event_type_name(type), name);
  if (ev.type != type || strcmp(kcr_meta_name(ev.object), name) != 0)
    fail_msg("got %s %s, want %s %s", kcr_watch_event_type_name(ev.type), kcr_meta_name(ev.object),
             kcr_watch_event_type_name(type), name);
  return ev.object;
}

typedef struct waiter {
  kcr_objwatch_t *w;
  int rc;
} waiter_t;

static void *wait_forever(void *d) {
  waiter_t *wt = d;
  kcr_watch_event ev;
  wt->rc = kcr_objwatch_next(wt->w, -1, &ev, NULL);
  if (wt->rc == 0)
    json_decref(ev.object);
  return NULL;
}

/* Watch through the manager's client: the server's stream, selectors, replay
 * from a version, PartialObjectMetadata, a stop from another thread while
 * next waits (the reading thread is joined by destroy), the end of a stream
 * and a refused selector. */
static void test_objclient_it_watch(void **state) {
  kcr_manager_t *m = manager(NULL);
  const kcr_objclient *c = kcr_manager_client(m);
  kcr_watch_options o = {.label_selector = "app=watched"};
  kcr_objwatch_t *w = NULL;
  json_t *obj = cm("watched", "watched"), *out = NULL, *ev;
  kcr_watch_event e;
  kcr_error_t err;
  waiter_t wt = {0};
  pthread_t t;
  char kinds[256], rv[32];
  int rc;
  (void)state;
  CHECK(kcr_objclient_watch(c, &cm_gvk, ns, &o, &w, E));
  CHECK(kcr_objclient_create(c, obj, &out, E));
  snprintf(rv, sizeof(rv), "%s", kcr_meta_resource_version(out));
  json_decref(next_of(w, KCR_WATCH_ADDED, "watched"));
  CHECK(kcr_objclient_patch(c, out, KCR_PATCH_MERGE, PATCH_K, strlen(PATCH_K), NULL, NULL, E));
  ev = next_of(w, KCR_WATCH_MODIFIED, "watched");
  assert_string_equal(kcr_meta_path_string(ev, "data.k"), "patched");
  json_decref(ev);
  /* leaving the selection ends the object for this watch */
  CHECK(kcr_objclient_patch(c, out, KCR_PATCH_MERGE, "{\"metadata\":{\"labels\":{\"app\":\"x\"}}}",
                            strlen("{\"metadata\":{\"labels\":{\"app\":\"x\"}}}"), NULL, NULL, E));
  json_decref(next_of(w, KCR_WATCH_DELETED, "watched"));
  /* plain ConfigMap in the namespace did not come: only the selection */
  assert_int_equal(kcr_objwatch_next(w, 0, &e, NULL), KCR_EAGAIN);
  kcr_objwatch_destroy(w);
  informer_kinds(m, kinds, sizeof(kinds));
  assert_string_equal(kinds, ""); /* a watch is no informer */

  /* from the create's version, metadata only: the changes after it replayed */
  o.label_selector = NULL;
  o.field_selector = "metadata.name=watched";
  o.resource_version = rv;
  o.accept = KCR_ACCEPT_PARTIAL_METADATA;
  CHECK(kcr_objclient_watch(kcr_manager_api_reader(m), &cm_gvk, ns, &o, &w, E));
  ev = next_of(w, KCR_WATCH_MODIFIED, "watched");
  assert_string_equal(kcr_meta_kind(ev), "PartialObjectMetadata");
  assert_null(json_object_get(ev, "data"));
  json_decref(ev);
  json_decref(next_of(w, KCR_WATCH_MODIFIED, "watched"));
  /* stop from another thread while next waits */
  wt.w = w;
  assert_int_equal(pthread_create(&t, NULL, wait_forever, &wt), 0);
  kcr_objwatch_stop(w);
  pthread_join(t, NULL);
  assert_int_equal(wt.rc, KCR_ECANCELED);
  kcr_objwatch_destroy(w);

  /* the server's timeoutSeconds ends the stream as streams end: KCR_ECLOSED
   * (410 Expired needs an etcd compaction: the fake's test and the reflector's
   * fault tests cover it) */
  o.accept = NULL;
  o.field_selector = "metadata.name=none";
  o.resource_version = NULL;
  o.timeout_seconds = 1;
  CHECK(kcr_objclient_watch(c, &cm_gvk, ns, &o, &w, E));
  kcr_error_clear(&err);
  rc = kcr_objwatch_next(w, 30 * KCR_NSEC_PER_SEC, &e, &err);
  assert_int_equal(rc, KCR_ECLOSED);
  assert_int_equal(kcr_objwatch_next(w, 0, &e, NULL), KCR_ECLOSED);
  kcr_objwatch_destroy(w);
  o.timeout_seconds = 0;
  o.field_selector = NULL;

  /* a selector the server cannot parse ends the watch with its 400 */
  o.resource_version = NULL;
  o.label_selector = "app in (";
  rc = kcr_objclient_watch(c, &cm_gvk, ns, &o, &w, &err);
  if (rc == 0) {
    kcr_error_clear(&err);
    rc = kcr_objwatch_next(w, 30 * KCR_NSEC_PER_SEC, &e, &err);
    kcr_objwatch_destroy(w);
  }
  assert_int_equal(rc, KCR_EAPI);
  assert_true(kcr_error_is_bad_request(&err));
  json_decref(obj);
  json_decref(out);
  kcr_manager_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_objclient_it_dry_run),
      cmocka_unit_test(test_objclient_it_field_owner),
      cmocka_unit_test(test_objclient_it_field_validation),
      cmocka_unit_test(test_objclient_it_delete_all_of),
      cmocka_unit_test(test_objclient_it_scale_and_status),
      cmocka_unit_test(test_objclient_it_eviction_and_token),
      cmocka_unit_test(test_objclient_it_metadata),
      cmocka_unit_test(test_objclient_it_api_reader),
      cmocka_unit_test(test_objclient_it_disable_cache_for),
      cmocka_unit_test(test_objclient_it_fail_on_missing_informer),
      cmocka_unit_test(test_objclient_it_watch),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
