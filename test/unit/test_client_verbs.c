/* SPDX-License-Identifier: MIT */
/*
 * test_client_verbs.c: the query and headers of the REST verbs' newer
 * options (src/client/client_verbs.c) against the scripted HTTP server:
 * fieldValidation with fieldManager and dryRun on every write, the Accept
 * header of a metadata-only read, a POST to a subresource (eviction, token),
 * and a dry-run delete of a collection.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpserver.h"
#include "kcr/client.h"
#include "testutil.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvr pods = {"", "v1", "pods"};

/* The last request the server saw. */
static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_method[16], last_path[8192], last_headers[16384], last_body[8192];

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  (void)data;
  pthread_mutex_lock(&last_mu);
  snprintf(last_method, sizeof(last_method), "%s", req->method);
  snprintf(last_path, sizeof(last_path), "%s", req->path);
  snprintf(last_headers, sizeof(last_headers), "%s", req->headers);
  snprintf(last_body, sizeof(last_body), "%.*s", (int)req->body_len, req->body ? req->body : "");
  pthread_mutex_unlock(&last_mu);
  resp->status = strcmp(req->method, "POST") == 0 ? 201 : 200;
  resp->body = "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"c\","
               "\"namespace\":\"default\",\"resourceVersion\":\"7\"}}";
}

/* seen copies one of the last request's fields under the lock (the
 * handler's thread wrote it), for the test's thread to read. */
static const char *seen(const char *field) {
  static char copy[16384];
  pthread_mutex_lock(&last_mu);
  snprintf(copy, sizeof(copy), "%s", field);
  pthread_mutex_unlock(&last_mu);
  return copy;
}
#define LAST_METHOD seen(last_method)
#define LAST_PATH seen(last_path)
#define LAST_HEADERS seen(last_headers)
#define LAST_BODY seen(last_body)

static int setup(void **state) {
  kcr_test_client *t = calloc(1, sizeof(*t));
  if (!t || kcr_test_client_start(handler, NULL, t) != 0)
    return -1;
  *state = t;
  return 0;
}

static int teardown(void **state) {
  kcr_test_client *t = *state;
  kcr_test_client_stop(t);
  free(t);
  return 0;
}

static json_t *cm(void) {
  return json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name",
                   "c");
}

/* Every write carries fieldManager, fieldValidation and dryRun when asked. */
static void test_client_verbs_write_options_in_query(void **state) {
  kcr_test_client *t = *state;
  kcr_request_options o;
  kcr_error_t err;
  json_t *obj = cm();
  kcr_error_clear(&err);
  memset(&o, 0, sizeof(o));
  o.field_manager = "mgr";
  o.field_validation = "Strict";
  o.dry_run = 1;

  assert_int_equal(kcr_client_create_object(t->client, &configmaps, "default", obj, &o, NULL, &err),
                   0);
  assert_string_equal(LAST_METHOD, "POST");
  assert_string_equal(LAST_PATH, "/api/v1/namespaces/default/configmaps?fieldManager=mgr&"
                                 "fieldValidation=Strict&dryRun=All");

  assert_int_equal(kcr_client_update(t->client, &configmaps, "default", obj, &o, NULL, &err), 0);
  assert_string_equal(LAST_METHOD, "PUT");
  assert_string_equal(LAST_PATH, "/api/v1/namespaces/default/configmaps/c?fieldManager=mgr&"
                                 "fieldValidation=Strict&dryRun=All");

  assert_int_equal(kcr_client_patch(t->client, &configmaps, "default", "c", KCR_PATCH_MERGE, "{}",
                                    2, &o, NULL, &err),
                   0);
  assert_string_equal(LAST_METHOD, "PATCH");
  assert_string_equal(LAST_PATH, "/api/v1/namespaces/default/configmaps/c?fieldManager=mgr&"
                                 "fieldValidation=Strict&dryRun=All");

  o.field_validation = "Ignore";
  o.force = 1;
  assert_int_equal(kcr_client_apply(t->client, &configmaps, "default", obj, &o, NULL, &err), 0);
  assert_string_equal(LAST_PATH, "/api/v1/namespaces/default/configmaps/c?fieldManager=mgr&"
                                 "force=true&fieldValidation=Ignore&dryRun=All");
  assert_non_null(strstr(LAST_HEADERS, "Content-Type: application/apply-patch+yaml\r\n"));

  /* A get ignores the write options. */
  assert_int_equal(kcr_client_get(t->client, &configmaps, "default", "c", &o, NULL, &err), 0);
  assert_string_equal(LAST_PATH, "/api/v1/namespaces/default/configmaps/c");
  json_decref(obj);
}

/* accept sets the Accept header of a get and a list; the default stays. */
static void test_client_verbs_accept_header(void **state) {
  kcr_test_client *t = *state;
  kcr_request_options o;
  kcr_error_t err;
  json_t *out = NULL;
  kcr_error_clear(&err);
  memset(&o, 0, sizeof(o));
  o.accept = KCR_ACCEPT_PARTIAL_METADATA;
  assert_int_equal(kcr_client_get(t->client, &configmaps, "default", "c", &o, &out, &err), 0);
  assert_non_null(out);
  assert_non_null(strstr(LAST_HEADERS, "Accept: application/json;as=PartialObjectMetadata;"
                                       "g=meta.k8s.io;v=v1,application/json\r\n"));
  json_decref(out);
  o.accept = KCR_ACCEPT_PARTIAL_METADATA_LIST;
  assert_int_equal(kcr_client_list(t->client, &configmaps, "default", &o, NULL, &err), 0);
  assert_non_null(strstr(LAST_HEADERS, "Accept: application/json;as=PartialObjectMetadataList;"
                                       "g=meta.k8s.io;v=v1,application/json\r\n"));
  assert_int_equal(kcr_client_get(t->client, &configmaps, "default", "c", NULL, NULL, &err), 0);
  assert_non_null(strstr(LAST_HEADERS, "Accept: application/json\r\n"));
}

/* create_subresource POSTs the body to name/subresource, with the write
 * options; a name and a subresource are required. */
static void test_client_verbs_create_subresource(void **state) {
  kcr_test_client *t = *state;
  kcr_request_options o;
  kcr_error_t err;
  json_t *ev = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "policy/v1", "kind", "Eviction",
                         "metadata", "name", "p", "namespace", "default");
  json_t *out = NULL;
  kcr_error_clear(&err);
  memset(&o, 0, sizeof(o));
  o.subresource = "eviction";
  o.dry_run = 1;
  assert_int_equal(
      kcr_client_create_subresource(t->client, &pods, "default", "p", ev, &o, &out, &err), 0);
  assert_non_null(out);
  json_decref(out);
  assert_string_equal(LAST_METHOD, "POST");
  assert_string_equal(LAST_PATH, "/api/v1/namespaces/default/pods/p/eviction?dryRun=All");
  assert_non_null(strstr(LAST_BODY, "\"kind\":\"Eviction\""));
  o.subresource = NULL;
  assert_int_equal(
      kcr_client_create_subresource(t->client, &pods, "default", "p", ev, &o, &out, &err),
      KCR_EINVAL);
  assert_null(out);
  o.subresource = "eviction";
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_client_create_subresource(t->client, &pods, "default", NULL, ev, &o, NULL, &err),
      KCR_EINVAL);
  json_decref(ev);
}

/* A dry-run delete of a collection: selectors in the query, dryRun in the
 * DeleteOptions body. */
static void test_client_verbs_delete_collection_dry_run(void **state) {
  kcr_test_client *t = *state;
  kcr_request_options o;
  kcr_error_t err;
  json_t *body;
  kcr_error_clear(&err);
  memset(&o, 0, sizeof(o));
  o.label_selector = "app=x";
  o.dry_run = 1;
  o.grace_period_seconds = -1;
  assert_int_equal(kcr_client_delete_collection(t->client, &configmaps, "default", &o, &err), 0);
  assert_string_equal(LAST_METHOD, "DELETE");
  assert_string_equal(LAST_PATH, "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dx");
  body = json_loads(LAST_BODY, 0, NULL);
  assert_non_null(body);
  assert_string_equal(json_string_value(json_array_get(json_object_get(body, "dryRun"), 0)), "All");
  json_decref(body);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_client_verbs_write_options_in_query, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_verbs_accept_header, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_verbs_create_subresource, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_verbs_delete_collection_dry_run, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
