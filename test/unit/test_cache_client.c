/* SPDX-License-Identifier: MIT */
/*
 * test_cache_client.c: the cached object client (src/cache/cache_client.c)
 * against the scripted HTTP server, without a manager: reads come from the
 * cache with apiVersion and kind put back; writes go to the server; the
 * fence hook its owner installs is asked before every write, refuses a write
 * without sending it, and cuts the timeout of one that goes out. Kinds the
 * cache is disabled for and the API reader read from the server; write
 * options go on the request; a dry run is not noted; subresources, metadata
 * reads and delete_all_of reach the right URLs.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache_client_internal.h"
#include "cache/cache_internal.h"
#include "httpserver.h"
#include "kcr/apierror.h"
#include "kcr/cache.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "kcr/meta.h"
#include "testutil.h"

static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};

#define CM_ANSWER                                                                                  \
  "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"c\","                    \
  "\"namespace\":\"a\",\"resourceVersion\":\"42\"}}"

#define PARTIAL_ANSWER                                                                             \
  "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{"           \
  "\"name\":\"c\",\"namespace\":\"a\",\"resourceVersion\":\"9\"}}"

static atomic_int writes;     /* POST, PUT, PATCH and DELETE requests seen */
static atomic_int stall_post; /* a POST is answered only after 3 s */
static atomic_int gets;       /* GETs of one object (or its subresource) */
static atomic_int lists;      /* ConfigMap lists (not watches) */

/* The last write's and the last GET's request line, headers and body. */
static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_write[8192], last_write_body[4096], last_get[8192], last_get_headers[8192];

static void remember(char *dst, size_t size, const char *src, size_t len) {
  if (len >= size)
    len = size - 1;
  pthread_mutex_lock(&last_mu);
  if (len)
    memcpy(dst, src, len);
  dst[len] = '\0';
  pthread_mutex_unlock(&last_mu);
}

/* last copies one of the remembered strings for the test's thread. */
static const char *last(const char *what) {
  static char copy[8192];
  pthread_mutex_lock(&last_mu);
  snprintf(copy, sizeof(copy), "%s", what);
  pthread_mutex_unlock(&last_mu);
  return copy;
}

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  const char *p = req->path;
  (void)data;
  resp->status = 200;
  if (strcmp(req->method, "GET") != 0) {
    char line[8300];
    snprintf(line, sizeof(line), "%s %s", req->method, p);
    remember(last_write, sizeof(last_write), line, strlen(line));
    remember(last_write_body, sizeof(last_write_body), req->body, req->body ? req->body_len : 0);
    atomic_fetch_add(&writes, 1);
    if (strcmp(req->method, "POST") == 0 && atomic_load(&stall_post)) {
      resp->action = KCR_TEST_HTTP_STALL;
      resp->stall_ms = 3000;
      return;
    }
    resp->body = CM_ANSWER;
  } else if (strcmp(p, "/api") == 0) {
    resp->body = "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}";
  } else if (strcmp(p, "/apis") == 0) {
    resp->body = "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[]}";
  } else if (strcmp(p, "/api/v1") == 0) {
    resp->body = "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
                 "{\"name\":\"configmaps\",\"namespaced\":true,\"kind\":\"ConfigMap\"},"
                 "{\"name\":\"namespaces\",\"namespaced\":false,\"kind\":\"Namespace\"}]}";
  } else if (strncmp(p, "/api/v1/namespaces/a/configmaps/c", 33) == 0) {
    remember(last_get, sizeof(last_get), p, strlen(p));
    remember(last_get_headers, sizeof(last_get_headers), req->headers, strlen(req->headers));
    atomic_fetch_add(&gets, 1);
    resp->body = strstr(req->headers, "as=PartialObjectMetadata;") ? PARTIAL_ANSWER : CM_ANSWER;
  } else if (strstr(p, "watch=true") && strstr(p, "sendInitialEvents=true")) {
    resp->status = 422; /* no streaming lists: the cache lists, then watches */
    resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"reason\":\"Invalid\",\"code\":422}";
  } else if ((strstr(p, "configmaps?") || strcmp(p + strlen(p) - 11, "/configmaps") == 0) &&
             !strstr(p, "watch=true")) {
    atomic_fetch_add(&lists, 1);
    resp->body = "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{"
                 "\"resourceVersion\":\"10\"},\"items\":[{\"metadata\":{\"name\":\"c\","
                 "\"namespace\":\"a\",\"resourceVersion\":\"9\"},\"data\":{\"k\":\"v\"}}]}";
  } else if (strstr(p, "watch=true")) {
    static const char bookmark[] =
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
        "\"metadata\":{\"resourceVersion\":\"10\"}}}\n";
    resp->body = bookmark;
    resp->chunk_size = sizeof(bookmark) - 1;
    resp->hold_ms = 10000;
  } else {
    resp->status = 404;
    resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"reason\":\"NotFound\",\"code\":404}";
  }
}

typedef struct fixture {
  kcr_test_client t; /* the scripted server and a client of it */
  kcr_client_t *client;
  kcr_rest_mapper_t *mapper;
  kcr_cache_t *cache;
  kcr__cache_client_t cc;
  atomic_int fence_calls;
  atomic_llong fence_ns; /* what the fence answers */
} fixture;

static int64_t on_fence(void *data) {
  fixture *f = data;
  atomic_fetch_add(&f->fence_calls, 1);
  return atomic_load(&f->fence_ns);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  kcr_cache_options co;
  if (!f)
    return -1;
  atomic_store(&writes, 0);
  atomic_store(&stall_post, 0);
  atomic_store(&gets, 0);
  atomic_store(&lists, 0);
  atomic_store(&f->fence_ns, INT64_MAX);
  if (kcr_test_client_start(handler, NULL, &f->t) != 0)
    return -1;
  f->client = f->t.client;
  if (kcr_rest_mapper_create(f->client, &f->mapper, NULL) != 0)
    return -1;
  memset(&co, 0, sizeof(co));
  co.client = f->client;
  co.mapper = f->mapper;
  co.sync_timeout_ns = 10 * KCR_NSEC_PER_SEC;
  co.ryow_timeout_ns = 3 * KCR_NSEC_PER_SEC;
  if (kcr_cache_create(&co, &f->cache, NULL) != 0)
    return -1;
  kcr__cache_client_init(&f->cc, f->client, f->mapper, f->cache, on_fence, f);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  kcr__cache_client_free(&f->cc);
  kcr_cache_destroy(f->cache);
  kcr_rest_mapper_destroy(f->mapper);
  kcr_test_client_stop(&f->t);
  free(f);
  return 0;
}

static json_t *cm(void) {
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                   "name", "c", "namespace", "a", "resourceVersion", "9");
}

/* A read comes from the cache, with the apiVersion and kind the compact
 * object and the list's items lack put back. */
static void test_cache_client_reads_typed(void **state) {
  fixture *f = *state;
  kcr_objclient c = kcr__cache_client_objclient(&f->cc);
  json_t *obj = NULL, *list = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_get(&c, &cm_gvk, "a", "c", &obj, &err), 0);
  assert_string_equal(kcr_meta_kind(obj), "ConfigMap");
  assert_string_equal(json_string_value(json_object_get(obj, "apiVersion")), "v1");
  assert_string_equal(kcr_meta_resource_version(obj), "9");
  assert_int_equal(kcr_objclient_list(&c, &cm_gvk, NULL, &list, &err), 0);
  assert_int_equal(json_array_size(kcr_list_items(list)), 1);
  assert_string_equal(kcr_meta_kind(json_array_get(kcr_list_items(list), 0)), "ConfigMap");
  assert_int_equal(atomic_load(&f->fence_calls), 0); /* reads are never fenced */
  json_decref(obj);
  json_decref(list);
}

/* A write goes to the server after asking the fence; update_rv hands back
 * the answer's resourceVersion. */
static void test_cache_client_writes_ask_fence(void **state) {
  fixture *f = *state;
  kcr_objclient c = kcr__cache_client_objclient(&f->cc);
  json_t *obj = cm(), *out = NULL;
  char rv[16];
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_create(&c, obj, &out, &err), 0);
  assert_string_equal(kcr_meta_resource_version(out), "42");
  json_decref(out);
  assert_int_equal(kcr_objclient_update_rv(&c, obj, NULL, rv, sizeof(rv), &err), 0);
  assert_string_equal(rv, "42");
  assert_int_equal(atomic_load(&f->fence_calls), 2);
  assert_int_equal(atomic_load(&writes), 2);
  json_decref(obj);
}

/* A fence with nothing left refuses every write at once, sending nothing. */
static void test_cache_client_fence_refuses(void **state) {
  fixture *f = *state;
  kcr_objclient c = kcr__cache_client_objclient(&f->cc);
  kcr_apply_options ao = {.field_manager = "t"};
  json_t *obj = cm(), *out = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  atomic_store(&f->fence_ns, 0);
  assert_int_equal(kcr_objclient_create(&c, obj, &out, &err), KCR_ECANCELED);
  assert_null(out);
  assert_int_equal(kcr_objclient_update(&c, obj, NULL, &out, &err), KCR_ECANCELED);
  assert_int_equal(kcr_objclient_patch(&c, obj, KCR_PATCH_MERGE, "{}", 2, NULL, &out, &err),
                   KCR_ECANCELED);
  assert_int_equal(kcr_objclient_apply(&c, obj, &ao, NULL, &out, &err), KCR_ECANCELED);
  assert_int_equal(kcr_objclient_delete(&c, obj, NULL, &err), KCR_ECANCELED);
  assert_int_equal(atomic_load(&f->fence_calls), 5);
  assert_int_equal(atomic_load(&writes), 0);
  json_decref(obj);
}

/* A write that goes out gets its timeout cut to what the fence has left: a
 * stalled POST ends at about 300 ms, not at the server's 3 s. */
static void test_cache_client_fence_cuts_timeout(void **state) {
  fixture *f = *state;
  kcr_objclient c = kcr__cache_client_objclient(&f->cc);
  json_t *obj = cm(), *out = NULL;
  kcr_error_t err;
  int64_t t0, took;
  int rc;
  kcr_error_clear(&err);
  atomic_store(&stall_post, 1);
  atomic_store(&f->fence_ns, 300 * KCR_NSEC_PER_MSEC);
  t0 = kcr_clock_now(kcr_clock_system());
  rc = kcr_objclient_create(&c, obj, &out, &err);
  took = kcr_clock_now(kcr_clock_system()) - t0;
  assert_int_not_equal(rc, 0);
  assert_null(out);
  assert_true(took < 2 * KCR_NSEC_PER_SEC);
  assert_int_equal(atomic_load(&f->fence_calls), 1);
  json_decref(obj);
}

/* Without a fence (NULL hook) writes are never refused. */
static void test_cache_client_no_fence(void **state) {
  fixture *f = *state;
  kcr__cache_client_t cc;
  kcr_objclient c;
  json_t *obj = cm();
  kcr_error_t err;
  kcr_error_clear(&err);
  kcr__cache_client_init(&cc, f->client, f->mapper, f->cache, NULL, NULL);
  c = kcr__cache_client_objclient(&cc);
  assert_int_equal(kcr_objclient_create(&c, obj, NULL, &err), 0);
  assert_int_equal(atomic_load(&writes), 1);
  json_decref(obj);
}

static const kcr_gvk ns_gvk = {"", "v1", "Namespace"};

/* A kind the cache is disabled for (client.Options.Cache.DisableFor) is read
 * from the API server: get and list answer, items typed, and no informer is
 * made. Other kinds still read the cache. */
static void test_cache_client_uncached_kind(void **state) {
  fixture *f = *state;
  kcr_objclient c;
  json_t *obj = NULL, *list = NULL, *diag;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr__cache_client_disable_cache_for(&f->cc, &cm_gvk, 1, &err), 0);
  c = kcr__cache_client_objclient(&f->cc);
  assert_int_equal(kcr_objclient_get(&c, &cm_gvk, "a", "c", &obj, &err), 0);
  assert_string_equal(kcr_meta_resource_version(obj), "42"); /* the server's, not the cache's 9 */
  assert_int_equal(atomic_load(&gets), 1);
  json_decref(obj);
  assert_int_equal(kcr_objclient_list(&c, &cm_gvk, &(kcr_list_options){.ns = "a"}, &list, &err), 0);
  assert_int_equal(json_array_size(kcr_list_items(list)), 1);
  assert_string_equal(kcr_meta_kind(json_array_get(kcr_list_items(list), 0)), "ConfigMap");
  assert_int_equal(atomic_load(&lists), 1);
  json_decref(list);
  diag = kcr_cache_diagnostics(f->cache);
  assert_int_equal(json_array_size(diag), 0); /* no informer */
  json_decref(diag);
  /* What only the cache answers is refused, not silently dropped. */
  assert_int_equal(kcr_objclient_list(&c, &cm_gvk,
                                      &(kcr_list_options){.index = "x", .index_value = "y"}, &list,
                                      &err),
                   KCR_EINVAL);
  assert_null(list);
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_get(&c, &cm_gvk, NULL, "c", &obj, &err), KCR_EINVAL);
  assert_null(obj);
  /* A bad kind in the list is refused at set-up. */
  kcr__cache_client_free(&f->cc);
  assert_int_equal(kcr__cache_client_disable_cache_for(&f->cc, &(kcr_gvk){"", "v1", NULL}, 1, NULL),
                   KCR_EINVAL);
}

/* The API reader reads from the server and refuses every write, sending
 * nothing. */
static void test_cache_client_api_reader(void **state) {
  fixture *f = *state;
  kcr_objclient c = kcr__cache_client_api_reader(&f->cc);
  kcr_apply_options ao = {.field_manager = "t"};
  kcr_write_options wo = {.dry_run = true};
  json_t *obj = cm(), *out = (json_t *)1, *diag;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_get(&c, &cm_gvk, "a", "c", &out, &err), 0);
  assert_string_equal(kcr_meta_resource_version(out), "42");
  json_decref(out);
  assert_int_equal(kcr_objclient_list(&c, &cm_gvk, NULL, &out, &err), 0);
  json_decref(out);
  diag = kcr_cache_diagnostics(f->cache);
  assert_int_equal(json_array_size(diag), 0);
  json_decref(diag);
  out = (json_t *)1;
  assert_int_equal(kcr_objclient_create(&c, obj, &out, &err), KCR_ENOTSUP);
  assert_null(out);
  assert_non_null(strstr(err.message, "API reader only reads"));
  assert_int_equal(kcr_objclient_update(&c, obj, NULL, NULL, &err), KCR_ENOTSUP);
  assert_int_equal(kcr_objclient_patch(&c, obj, KCR_PATCH_MERGE, "{}", 2, NULL, NULL, &err),
                   KCR_ENOTSUP);
  assert_int_equal(kcr_objclient_apply(&c, obj, &ao, NULL, NULL, &err), KCR_ENOTSUP);
  assert_int_equal(kcr_objclient_delete(&c, obj, NULL, &err), KCR_ENOTSUP);
  assert_int_equal(kcr_objclient_create_with(&c, obj, &wo, NULL, &err), KCR_ENOTSUP);
  assert_int_equal(kcr_objclient_delete_all_of(&c, &cm_gvk, NULL, NULL, &err), KCR_ENOTSUP);
  assert_int_equal(atomic_load(&writes), 0);
  assert_int_equal(atomic_load(&f->fence_calls), 0);
  json_decref(obj);
}

/* Write options go on the request; a dry run is not noted for
 * read-your-own-writes (nothing changed), a real write is. */
static void test_cache_client_write_options(void **state) {
  fixture *f = *state;
  kcr_objclient c = kcr__cache_client_objclient(&f->cc);
  kcr_write_options wo = {.dry_run = true, .field_manager = "m", .field_validation = "Strict"};
  kcr_delete_options dopt = {.dry_run = true};
  kcr_apply_options ao = {.field_manager = "t", .dry_run = true, .field_validation = "Warn"};
  json_t *obj = cm(), *out = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_get(&c, &cm_gvk, "a", "c", &out, &err), 0); /* the informer */
  json_decref(out);
  assert_int_equal(kcr_objclient_create_with(&c, obj, &wo, NULL, &err), 0);
  assert_string_equal(last(last_write), "POST /api/v1/namespaces/a/configmaps?fieldManager=m&"
                                        "fieldValidation=Strict&dryRun=All");
  assert_int_equal(kcr_objclient_update_with(&c, obj, NULL, &wo, &out, &err), 0);
  assert_string_equal(last(last_write), "PUT /api/v1/namespaces/a/configmaps/c?fieldManager=m&"
                                        "fieldValidation=Strict&dryRun=All");
  json_decref(out);
  assert_int_equal(
      kcr_objclient_patch_with(&c, obj, KCR_PATCH_MERGE, "{}", 2, "status", &wo, NULL, &err), 0);
  assert_string_equal(last(last_write), "PATCH /api/v1/namespaces/a/configmaps/c/status?"
                                        "fieldManager=m&fieldValidation=Strict&dryRun=All");
  assert_int_equal(kcr_objclient_apply(&c, obj, &ao, NULL, NULL, &err), 0);
  assert_string_equal(last(last_write), "PATCH /api/v1/namespaces/a/configmaps/c?fieldManager=t&"
                                        "fieldValidation=Warn&dryRun=All");
  assert_int_equal(kcr_objclient_delete(&c, obj, &dopt, &err), 0);
  assert_non_null(strstr(last(last_write_body), "\"dryRun\":[\"All\"]"));
  assert_int_equal(kcr__cache_pending_writes(f->cache), 0);
  assert_int_equal(err.code, KCR_OK);
  /* The same update for real is noted (42, above the cache's 9). */
  assert_int_equal(kcr_objclient_update_with(&c, obj, NULL, NULL, NULL, &err), 0);
  assert_int_equal(kcr__cache_pending_writes(f->cache), 1);
  json_decref(obj);
}

/* Subresources: a get goes to the server; an update PUTs the body to the
 * object's subresource, named as the object when it has no name; a create
 * POSTs it. The metadata reads ask for PartialObjectMetadata. */
static void test_cache_client_subresources_and_metadata(void **state) {
  fixture *f = *state;
  kcr_objclient c = kcr__cache_client_objclient(&f->cc);
  json_t *obj = cm(), *out = NULL, *scale, *sent;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_get_subresource(&c, &cm_gvk, "a", "c", "scale", &out, &err), 0);
  assert_string_equal(last(last_get), "/api/v1/namespaces/a/configmaps/c/scale");
  json_decref(out);
  scale = json_pack("{s:s,s:s,s:{s:i}}", "apiVersion", "autoscaling/v1", "kind", "Scale", "spec",
                    "replicas", 3);
  assert_int_equal(kcr_objclient_update_subresource(&c, obj, "scale", scale, NULL, NULL, &err), 0);
  assert_string_equal(last(last_write), "PUT /api/v1/namespaces/a/configmaps/c/scale");
  sent = json_loads(last(last_write_body), 0, NULL);
  assert_string_equal(kcr_meta_name(sent), "c");
  assert_string_equal(kcr_meta_namespace(sent), "a");
  assert_string_equal(kcr_meta_kind(sent), "Scale");
  assert_null(json_object_get(scale, "metadata")); /* the caller's body is left alone */
  json_decref(sent);
  assert_int_equal(kcr_objclient_create_subresource(&c, obj, "eviction", scale, NULL, &out, &err),
                   0);
  assert_string_equal(last(last_write), "POST /api/v1/namespaces/a/configmaps/c/eviction");
  json_decref(out);

  assert_int_equal(kcr_objclient_get_metadata(&c, &cm_gvk, "a", "c", &out, &err), 0);
  assert_string_equal(kcr_meta_kind(out), "PartialObjectMetadata");
  assert_non_null(strstr(last(last_get_headers), "Accept: " KCR_ACCEPT_PARTIAL_METADATA "\r\n"));
  json_decref(out);
  assert_int_equal(kcr_objclient_list_metadata(&c, &cm_gvk, NULL, &out, &err), 0);
  json_decref(out);
  assert_int_equal(err.code, KCR_OK);
  json_decref(obj);
  json_decref(scale);
}

/* delete_all_of: one DELETE of the collection with the selectors; a
 * namespace for a cluster-scoped kind is refused (it would reach them all). */
static void test_cache_client_delete_all_of(void **state) {
  fixture *f = *state;
  kcr_objclient c = kcr__cache_client_objclient(&f->cc);
  kcr_list_options lo = {.ns = "a", .label_selector = "app=x", .field_selector = "metadata.name=c"};
  kcr_delete_options dopt = {.propagation_policy = "Background"};
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_delete_all_of(&c, &cm_gvk, &lo, &dopt, &err), 0);
  assert_string_equal(last(last_write), "DELETE /api/v1/namespaces/a/configmaps?labelSelector=app"
                                        "%3Dx&fieldSelector=metadata.name%3Dc");
  assert_non_null(strstr(last(last_write_body), "\"propagationPolicy\":\"Background\""));
  assert_int_equal(atomic_load(&f->fence_calls), 1);
  assert_int_equal(kcr_objclient_delete_all_of(&c, &ns_gvk, &lo, NULL, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "cluster-scoped"));
  assert_int_equal(atomic_load(&writes), 1);
  atomic_store(&f->fence_ns, 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_delete_all_of(&c, &cm_gvk, &lo, NULL, &err), KCR_ECANCELED);
  assert_int_equal(atomic_load(&writes), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cache_client_reads_typed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_writes_ask_fence, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_fence_refuses, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_fence_cuts_timeout, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_no_fence, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_uncached_kind, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_api_reader, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_write_options, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_subresources_and_metadata, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_delete_all_of, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
