/* SPDX-License-Identifier: MIT */
/*
 * test_discovery.c: the REST mapper against the scripted HTTP server serving
 * legacy discovery (/api, /apis, /api/v1, /apis/apps/v1 and /apis/apps/v1beta1).
 * Covers a kind named by kcr_gvk (core and named groups, the preferred version
 * when none is given, an exact version, the scope), the kind read back from a
 * mapping, bad input, a kind the server does not serve, and the deprecated
 * loose-string form answering as the kcr_gvk one.
 */
#include <stdlib.h>
#include <string.h>

#include "httpserver.h"
#include "kcr/discovery.h"
#include "testutil.h"

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  const char *p = req->path;
  (void)data;
  resp->status = 200;
  if (strcmp(p, "/api") == 0) {
    resp->body = "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]}";
  } else if (strcmp(p, "/apis") == 0) {
    resp->body = "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[{\"name\":\"apps\","
                 "\"versions\":[{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"},"
                 "{\"groupVersion\":\"apps/v1beta1\",\"version\":\"v1beta1\"}],"
                 "\"preferredVersion\":{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}}]}";
  } else if (strcmp(p, "/api/v1") == 0) {
    resp->body = "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
                 "{\"name\":\"configmaps\",\"namespaced\":true,\"kind\":\"ConfigMap\"},"
                 "{\"name\":\"namespaces\",\"namespaced\":false,\"kind\":\"Namespace\"}]}";
  } else if (strcmp(p, "/apis/apps/v1") == 0) {
    resp->body = "{\"kind\":\"APIResourceList\",\"groupVersion\":\"apps/v1\",\"resources\":["
                 "{\"name\":\"deployments\",\"namespaced\":true,\"kind\":\"Deployment\"},"
                 "{\"name\":\"deployments/status\",\"namespaced\":true,\"kind\":\"Deployment\"}]}";
  } else if (strcmp(p, "/apis/apps/v1beta1") == 0) {
    resp->body = "{\"kind\":\"APIResourceList\",\"groupVersion\":\"apps/v1beta1\",\"resources\":["
                 "{\"name\":\"deployments\",\"namespaced\":true,\"kind\":\"Deployment\"}]}";
  } else {
    resp->status = 404;
    resp->body = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                 "\"reason\":\"NotFound\",\"code\":404}";
  }
}

typedef struct fixture {
  kcr_test_client t;
  kcr_rest_mapper_t *mapper;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  if (!f || kcr_test_client_start(handler, NULL, &f->t) != 0 ||
      kcr_rest_mapper_create(f->t.client, &f->mapper, NULL) != 0)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  kcr_rest_mapper_destroy(f->mapper);
  kcr_test_client_stop(&f->t);
  free(f);
  return 0;
}

static void test_discovery_mapping_for_kind(void **state) {
  fixture *f = *state;
  const kcr_gvk cm = {NULL, "v1", "ConfigMap"}, ns = {"", NULL, "Namespace"};
  const kcr_gvk dep = {"apps", NULL, "Deployment"}, old = {"apps", "v1beta1", "Deployment"};
  kcr_rest_mapping m;
  kcr_gvk back;
  kcr_gvr r;

  assert_int_equal(kcr_rest_mapper_mapping_for_kind(f->mapper, &cm, &m, NULL), 0);
  assert_string_equal(m.resource, "configmaps");
  assert_true(m.namespaced);
  back = kcr_rest_mapping_gvk(&m);
  assert_string_equal(back.group, "");
  assert_string_equal(back.version, "v1");
  assert_string_equal(back.kind, "ConfigMap");
  assert_ptr_equal(back.kind, m.kind); /* borrowed from the mapping */

  assert_int_equal(kcr_rest_mapper_mapping_for_kind(f->mapper, &ns, &m, NULL), 0);
  assert_false(m.namespaced);

  /* No version: the server's preferred one; a version: that one. */
  assert_int_equal(kcr_rest_mapper_mapping_for_kind(f->mapper, &dep, &m, NULL), 0);
  assert_string_equal(m.version, "v1");
  assert_string_equal(m.resource, "deployments");
  assert_int_equal(kcr_rest_mapper_mapping_for_kind(f->mapper, &old, &m, NULL), 0);
  assert_string_equal(m.version, "v1beta1");
  r = kcr_rest_mapping_gvr(&m);
  assert_string_equal(r.group, "apps");
  assert_string_equal(r.resource, "deployments");
}

static void test_discovery_mapping_for_kind_bad_input(void **state) {
  fixture *f = *state;
  const kcr_gvk no_kind = {"", "v1", NULL}, empty = {"", "v1", ""};
  kcr_rest_mapping m;
  kcr_error_t err;

  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_mapper_mapping_for_kind(f->mapper, NULL, &m, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "a kind is required"));
  assert_int_equal(kcr_rest_mapper_mapping_for_kind(f->mapper, &no_kind, &m, NULL), KCR_EINVAL);
  assert_int_equal(kcr_rest_mapper_mapping_for_kind(f->mapper, &empty, &m, NULL), KCR_EINVAL);
}

static void test_discovery_unknown_kind(void **state) {
  fixture *f = *state;
  const kcr_gvk gadget = {"it.kcr.dev", "v1", "Gadget"};
  kcr_rest_mapping m;
  kcr_error_t err;

  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_mapper_mapping_for_kind(f->mapper, &gadget, &m, &err), KCR_ENOENT);
  assert_non_null(strstr(err.message, "it.kcr.dev/v1, Kind=Gadget"));
}

/* The deprecated loose-string form: the same answers as the kcr_gvk one. */
static void test_discovery_deprecated_mapping(void **state) {
  fixture *f = *state;
  kcr_rest_mapping m;
  kcr_error_t err;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  assert_int_equal(kcr_rest_mapper_mapping(f->mapper, "apps", NULL, "Deployment", &m, NULL), 0);
  assert_string_equal(m.resource, "deployments");
  kcr_error_clear(&err);
  assert_int_equal(kcr_rest_mapper_mapping(f->mapper, NULL, "v1", NULL, &m, &err), KCR_EINVAL);
#pragma GCC diagnostic pop
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_discovery_mapping_for_kind, setup, teardown),
      cmocka_unit_test_setup_teardown(test_discovery_mapping_for_kind_bad_input, setup, teardown),
      cmocka_unit_test_setup_teardown(test_discovery_unknown_kind, setup, teardown),
      cmocka_unit_test_setup_teardown(test_discovery_deprecated_mapping, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
