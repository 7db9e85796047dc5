/* SPDX-License-Identifier: MIT */
/*
 * test_fake_smp_it.c: the fake client's strategic merge patch against the
 * real apiserver's (issue 25). Each case creates a Deployment on the server,
 * seeds the fake client with the object the server returned, applies one
 * strategic merge patch to both and compares the results: the fake's
 * metadata.finalizers and spec must be the server's, lists element for
 * element in the same order, minus only the defaults the server fills in on
 * what the patch added (a new container's terminationMessagePath...). Then
 * the fake's subset of server-side apply the same way, on the ground it
 * claims: a forced apply by a new manager onto an object another manager
 * created (maps and keyed lists merged, atomic lists replaced), and the
 * refusal without a field manager (the client's: it never sends one).
 */
#define _POSIX_C_SOURCE 200809L
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
#include "kcr/client.h"
#include "kcr/meta.h"
#include "kcr/testing.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static const kcr_gvr deploy_gvr = {"apps", "v1", "deployments"};

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0 ||
      kcr_it_create_namespace(client, "kcr-it-fake-smp", ns, sizeof(ns)) != 0)
    return -1;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_disconnect(env, config, client, ns);
  return 0;
}

/*
 * covered tells whether fake is server minus defaults: every member of a fake
 * map is in the server's map and covered, lists have the same length and are
 * covered element by element, scalars are equal.
 */
static bool covered(const json_t *fake, const json_t *server, char *where, size_t size) {
  if (json_is_object(fake) && json_is_object(server)) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)fake, k, v) {
      if (!covered(v, json_object_get(server, k), where, size)) {
        size_t n = strlen(where);
        snprintf(where + n, size - n, " <- %s", k);
        return false;
      }
    }
    return true;
  }
  if (json_is_array(fake) && json_is_array(server)) {
    if (json_array_size(fake) != json_array_size(server)) {
      snprintf(where, size, "lists of %zu and %zu elements", json_array_size(fake),
               json_array_size(server));
      return false;
    }
    for (size_t i = 0; i < json_array_size(fake); i++)
      if (!covered(json_array_get(fake, i), json_array_get(server, i), where, size))
        return false;
    return true;
  }
  if (server && json_equal(fake, server))
    return true;
  snprintf(where, size, "values differ");
  return false;
}

#define CONTAINERS                                                                                 \
  "[{\"name\":\"a\",\"image\":\"a:1\",\"env\":[{\"name\":\"X\",\"value\":\"1\"},{\"name\":\"Y\","  \
  "\"value\":\"2\"}],\"ports\":[{\"containerPort\":80,\"name\":\"http\"}]},{\"name\":\"b\","       \
  "\"image\":\"b:1\"}]"

/* same_as_server runs patch (apply: the applied configuration, with manager
 * "kcr-it-apply") on a fresh Deployment name on both sides. */
static void same_as_server_how(const char *name, const char *patch, bool apply) {
  char obj[2000], where[400] = "";
  json_error_t je;
  json_t *in, *created = NULL, *on_server = NULL, *on_fake = NULL;
  kcr_fake_client_t *f = NULL;
  kcr_objclient c;
  kcr_error_t err;
  const char *paths[] = {"spec", "metadata.finalizers"};
  snprintf(obj, sizeof(obj),
           "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"%s\","
           "\"namespace\":\"%s\",\"finalizers\":[\"example.com/a\",\"example.com/b\"]},\"spec\":"
           "{\"selector\":{\"matchLabels\":{\"app\":\"%s\"}},\"template\":{\"metadata\":{"
           "\"labels\":{\"app\":\"%s\"}},\"spec\":{\"containers\":" CONTAINERS
           ",\"volumes\":[{\"name\":\"v1\",\"emptyDir\":{}},{\"name\":\"v2\",\"emptyDir\":{}}],"
           "\"tolerations\":[{\"key\":\"t1\",\"operator\":\"Exists\"}]}}}}",
           name, ns, name, name);
  in = json_loads(obj, 0, &je);
  assert_non_null(in);
  kcr_error_clear(&err);
  if (kcr_client_create_object(client, &deploy_gvr, ns, in, NULL, &created, &err) != 0)
    fail_msg("create %s: %s", name, err.message);
  if (apply) {
    kcr_request_options ro;
    json_t *a;
    memset(&ro, 0, sizeof(ro));
    ro.field_manager = "kcr-it-apply";
    ro.force = 1;
    a = json_loads(patch, 0, &je);
    assert_non_null(a);
    json_object_set_new(json_object_get(a, "metadata"), "name", json_string(name));
    json_object_set_new(json_object_get(a, "metadata"), "namespace", json_string(ns));
    if (kcr_client_apply(client, &deploy_gvr, ns, a, &ro, &on_server, &err) != 0)
      fail_msg("server apply %s: %s", name, err.message);
    assert_int_equal(kcr_fake_client_create(NULL, &f, &err), 0);
    c = kcr_fake_client_objclient(f);
    assert_int_equal(kcr_fake_client_add(f, created, &err), 0);
    {
      kcr_apply_options ao = {"kcr-it-apply", true, false, NULL};
      if (kcr_objclient_apply(&c, a, &ao, NULL, &on_fake, &err) != 0)
        fail_msg("fake apply %s: %s", name, err.message);
    }
    json_decref(a);
  } else if (kcr_client_patch(client, &deploy_gvr, ns, name, KCR_PATCH_STRATEGIC, patch,
                              strlen(patch), NULL, &on_server, &err) != 0) {
    fail_msg("server patch %s: %s", name, err.message);
  }
  if (!apply) {
    assert_int_equal(kcr_fake_client_create(NULL, &f, &err), 0);
    c = kcr_fake_client_objclient(f);
    assert_int_equal(kcr_fake_client_add(f, created, &err), 0);
    if (kcr_objclient_patch(&c, created, KCR_PATCH_STRATEGIC, patch, strlen(patch), NULL, &on_fake,
                            &err) != 0)
      fail_msg("fake patch %s: %s", name, err.message);
  }
  for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
    const json_t *a = kcr_meta_path(on_fake, paths[i]), *b = kcr_meta_path(on_server, paths[i]);
    if (!(a == NULL && b == NULL) && !covered(a, b, where, sizeof(where))) {
      char *fa = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
      char *sb = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
      print_error("%s %s: %s\n fake:   %s\n server: %s\n", name, paths[i], where, fa, sb);
      free(fa);
      free(sb);
      fail();
    }
  }
  /* release the finalizers so the namespace can go */
  {
    static const char release[] = "{\"metadata\":{\"finalizers\":null}}";
    kcr_client_patch(client, &deploy_gvr, ns, name, KCR_PATCH_MERGE, release, strlen(release), NULL,
                     NULL, &err);
  }
  kcr_fake_client_destroy(f);
  json_decref(in);
  json_decref(created);
  json_decref(on_server);
  json_decref(on_fake);
}

static void same_as_server(const char *name, const char *patch) {
  same_as_server_how(name, patch, false);
}

#define POD(x) "{\"spec\":{\"template\":{\"spec\":" x "}}}"

static void test_fake_smp_it_lists_by_key(void **state) {
  (void)state;
  /* containers by name (one changed, one added), tolerations replaced */
  same_as_server("by-name", POD("{\"containers\":[{\"name\":\"b\",\"image\":\"b:2\"},{\"name\":"
                                "\"c\",\"image\":\"c:1\"}],\"tolerations\":[{\"key\":\"t2\","
                                "\"operator\":\"Exists\"}]}"));
  /* an added element alone: where upstream's order puts it */
  same_as_server("added-only", POD("{\"containers\":[{\"name\":\"c\",\"image\":\"c:1\"}]}"));
  /* env by name, ports by containerPort */
  same_as_server("env-ports",
                 POD("{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"Y\",\"value\":\"3\"},"
                     "{\"name\":\"Z\",\"value\":\"4\"}],\"ports\":[{\"containerPort\":443,"
                     "\"name\":\"https\"}]}]}"));
  /* finalizers: a scalar list merged as a set */
  same_as_server("finalizers", "{\"metadata\":{\"finalizers\":[\"example.com/c\"]}}");
}

static void test_fake_smp_it_directives(void **state) {
  (void)state;
  same_as_server("delete",
                 "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"example.com/a\"]},"
                 "\"spec\":{\"template\":{\"spec\":{\"volumes\":[{\"name\":\"v1\",\"$patch\":"
                 "\"delete\"}]}}}}");
  same_as_server("replace", POD("{\"containers\":[{\"name\":\"z\",\"image\":\"z:1\"},{\"$patch\":"
                                "\"replace\"}]}"));
  same_as_server("order", POD("{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":"
                              "\"a\"}],\"containers\":[{\"name\":\"a\",\"image\":\"a:2\"}]}"));
  same_as_server("retain", "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"type\":"
                           "\"Recreate\"}}}");
}

/* An applied configuration (its name and namespace set by the caller). */
#define APPLIED(spec)                                                                              \
  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{"                             \
  "\"labels\":{\"tier\":\"web\"}},\"spec\":{\"template\":{\"spec\":" spec "}}}"

static void test_fake_apply_it_merge(void **state) {
  (void)state;
  /* containers and env by name, tolerations (atomic) replaced, a label added */
  same_as_server_how("apply-merge",
                     APPLIED("{\"containers\":[{\"name\":\"a\",\"image\":\"a:2\",\"env\":[{"
                             "\"name\":\"Z\",\"value\":\"9\"}]},{\"name\":\"c\",\"image\":\"c:1\"}"
                             "],\"tolerations\":[{\"key\":\"t9\",\"operator\":\"Exists\"}]}"),
                     true);
}

/* Without a field manager the client refuses an apply before sending it (the
 * server would answer 422), and the fake refuses it the same way. */
static void test_fake_apply_it_needs_manager(void **state) {
  static const kcr_gvk deploy = {"apps", "v1", "Deployment"};
  char *text, want[KCR_ERROR_MESSAGE_MAX];
  json_error_t je;
  json_t *a;
  kcr_fake_client_t *f = NULL;
  kcr_objclient c;
  kcr_error_t err;
  (void)state;
  a = json_loads(APPLIED("{}"), 0, &je);
  assert_non_null(a);
  json_object_set_new(json_object_get(a, "metadata"), "name", json_string("no-manager"));
  json_object_set_new(json_object_get(a, "metadata"), "namespace", json_string(ns));
  text = json_dumps(a, JSON_COMPACT);
  assert_non_null(text);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_patch(client, &deploy_gvr, ns, "no-manager", KCR_PATCH_APPLY, text,
                                    strlen(text), NULL, NULL, &err),
                   KCR_EINVAL);
  snprintf(want, sizeof(want), "%s", err.message);
  kcr_error_clear(&err);
  assert_int_equal(kcr_fake_client_create(NULL, &f, &err), 0);
  c = kcr_fake_client_objclient(f);
  assert_int_equal(kcr_objclient_apply(&c, a, NULL, NULL, NULL, &err), KCR_EINVAL);
  assert_string_equal(err.message, want);
  assert_int_equal(kcr_fake_client_count(f, &deploy, NULL), 0);
  kcr_fake_client_destroy(f);
  json_decref(a);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fake_smp_it_lists_by_key),
      cmocka_unit_test(test_fake_smp_it_directives),
      cmocka_unit_test(test_fake_apply_it_merge),
      cmocka_unit_test(test_fake_apply_it_needs_manager),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
