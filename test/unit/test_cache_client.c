/* SPDX-License-Identifier: MIT */
/*
 * test_cache_client.c: the cached object client (src/cache/cache_client.c)
 * against the scripted HTTP server, without a manager: reads come from the
 * cache with apiVersion and kind put back; writes go to the server; the
 * fence hook its owner installs is asked before every write, refuses a write
 * without sending it, and cuts the timeout of one that goes out.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache_client_internal.h"
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

static atomic_int writes;     /* POST, PUT, PATCH and DELETE requests seen */
static atomic_int stall_post; /* a POST is answered only after 3 s */

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  const char *p = req->path;
  (void)data;
  resp->status = 200;
  if (strcmp(req->method, "GET") != 0) {
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
                 "{\"name\":\"configmaps\",\"namespaced\":true,\"kind\":\"ConfigMap\"}]}";
  } else if (strstr(p, "watch=true") && strstr(p, "sendInitialEvents=true")) {
    resp->status = 422; /* no streaming lists: the cache lists, then watches */
    resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"reason\":\"Invalid\",\"code\":422}";
  } else if (strstr(p, "configmaps?") && !strstr(p, "watch=true")) {
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cache_client_reads_typed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_writes_ask_fence, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_fence_refuses, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_fence_cuts_timeout, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_client_no_fence, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
