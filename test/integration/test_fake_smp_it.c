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
 * Then field ownership: the same sequence of applies and updates by several
 * managers on both sides, compared step by step: each step's outcome (the
 * conflict message word for word), the object's data or containers, and
 * metadata.managedFields entry for entry (manager, operation, apiVersion,
 * subresource, fieldsV1; not the time).
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

/* ---- field ownership, step by step against the server ---- */

static const kcr_gvr cm_gvr = {"", "v1", "configmaps"};

/* step: one write of a sequence, on a ConfigMap or a Deployment named by the
 * test: an apply of text (its metadata given the name and namespace) by
 * manager, or (text NULL) an update by manager that sets data key to value. */
typedef struct step {
  const char *manager;
  const char *text;
  bool force;
  const char *key, *value;
} step;

/* entries: obj's managedFields as {"manager|operation|apiVersion|subresource":
 * fieldsV1} (new). */
static json_t *entries(const json_t *obj) {
  json_t *out = json_object(), *e;
  size_t i;
  json_array_foreach(kcr_meta_path(obj, "metadata.managedFields"), i, e) {
    char k[400];
    const char *sub = json_string_value(json_object_get(e, "subresource"));
    snprintf(k, sizeof(k), "%s|%s|%s|%s", json_string_value(json_object_get(e, "manager")),
             json_string_value(json_object_get(e, "operation")),
             json_string_value(json_object_get(e, "apiVersion")), sub ? sub : "");
    json_object_set(out, k, json_object_get(e, "fieldsV1"));
  }
  return out;
}

/* run_step runs s on the server (srv) or the fake (c): 0 or the error. */
static int run_step(const step *s, const kcr_gvr *gvr, const char *name, kcr_objclient *c, bool srv,
                    kcr_error_t *err) {
  json_t *obj = NULL;
  json_error_t je;
  int rc;
  kcr_error_clear(err);
  if (s->text) {
    obj = json_loads(s->text, 0, &je);
    assert_non_null(obj);
    json_object_set_new(json_object_get(obj, "metadata"), "name", json_string(name));
    json_object_set_new(json_object_get(obj, "metadata"), "namespace", json_string(ns));
    if (srv) {
      kcr_request_options ro;
      memset(&ro, 0, sizeof(ro));
      ro.field_manager = s->manager;
      ro.force = s->force;
      rc = kcr_client_apply(client, gvr, ns, obj, &ro, NULL, err);
    } else {
      kcr_apply_options ao = {s->manager, s->force, false, NULL};
      rc = kcr_objclient_apply(c, obj, &ao, NULL, NULL, err);
    }
  } else {
    kcr_gvk gvk = {"", "v1", "ConfigMap"};
    kcr_request_options ro;
    memset(&ro, 0, sizeof(ro));
    ro.field_manager = s->manager;
    rc = srv ? kcr_client_get(client, gvr, ns, name, NULL, &obj, err)
             : kcr_objclient_get(c, &gvk, ns, name, &obj, err);
    assert_int_equal(rc, 0);
    json_object_set_new(json_object_get(obj, "data"), s->key, json_string(s->value));
    if (srv) {
      rc = kcr_client_update(client, gvr, ns, obj, &ro, NULL, err);
    } else {
      kcr_write_options wo = {false, s->manager, NULL};
      rc = kcr_objclient_update_with(c, obj, NULL, &wo, NULL, err);
    }
  }
  json_decref(obj);
  return rc;
}

/* same_steps runs steps on both sides and compares after each: the outcome,
 * the value at path (what the writes change) and the managedFields. */
static void same_steps(const kcr_gvr *gvr, const char *name, const step *steps, size_t n,
                       const char *path) {
  kcr_fake_client_t *f = NULL;
  kcr_objclient c;
  kcr_error_t es, ef;
  kcr_gvk gvk = {gvr->group, gvr->version, *gvr->group ? "Deployment" : "ConfigMap"};
  kcr_error_clear(&ef);
  assert_int_equal(kcr_fake_client_create(NULL, &f, &ef), 0);
  kcr_fake_client_return_managed_fields(f, true);
  c = kcr_fake_client_objclient(f);
  for (size_t i = 0; i < n; i++) {
    int rs = run_step(&steps[i], gvr, name, &c, true, &es);
    int rf = run_step(&steps[i], gvr, name, &c, false, &ef);
    json_t *os = NULL, *of = NULL, *ms, *mf;
    char where[400] = "";
    if (rs != rf ||
        (rs && (es.http_status != ef.http_status || strcmp(es.message, ef.message) != 0)))
      fail_msg("%s step %zu (%s): server %d %d \"%s\", fake %d %d \"%s\"", name, i,
               steps[i].manager, rs, es.http_status, es.message, rf, ef.http_status, ef.message);
    kcr_error_clear(&es);
    assert_int_equal(kcr_client_get(client, gvr, ns, name, NULL, &os, &es), 0);
    assert_int_equal(kcr_objclient_get(&c, &gvk, ns, name, &of, &ef), 0);
    ms = entries(os);
    mf = entries(of);
    if (!json_equal(ms, mf) ||
        !covered(kcr_meta_path(of, path), kcr_meta_path(os, path), where, sizeof(where))) {
      char *a = json_dumps(mf, JSON_COMPACT | JSON_SORT_KEYS);
      char *b = json_dumps(ms, JSON_COMPACT | JSON_SORT_KEYS);
      char *c1 = json_dumps(kcr_meta_path(of, path), JSON_COMPACT | JSON_ENCODE_ANY);
      char *c2 = json_dumps(kcr_meta_path(os, path), JSON_COMPACT | JSON_ENCODE_ANY);
      print_error("%s step %zu (%s) %s\n fake:   %s\n        %s\n server: %s\n        %s\n", name,
                  i, steps[i].manager, where, a, c1, b, c2);
      free(a);
      free(b);
      free(c1);
      free(c2);
      fail();
    }
    json_decref(ms);
    json_decref(mf);
    json_decref(os);
    json_decref(of);
  }
  kcr_fake_client_destroy(f);
}

#define CM(data) "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{},\"data\":" data "}"

/* Shared values, conflicts (one and several managers), force, a field the
 * applier drops that another still owns, an update taking a field over and
 * the applier then in conflict with the updater. */
static void test_fake_fields_it_configmap(void **state) {
  static const step steps[] = {
      {"a", CM("{\"x\":\"1\",\"y\":\"2\"}"), false, NULL, NULL},
      {"b", CM("{\"x\":\"1\"}"), false, NULL, NULL},
      {"b", CM("{\"x\":\"2\"}"), false, NULL, NULL},
      {"c", CM("{\"z\":\"3\"}"), false, NULL, NULL},
      {"b", CM("{\"x\":\"2\",\"z\":\"4\",\"y\":\"5\"}"), false, NULL, NULL},
      {"b", CM("{\"x\":\"2\"}"), true, NULL, NULL},
      {"a", CM("{\"y\":\"2\"}"), false, NULL, NULL},
      {"editor", NULL, false, "x", "7"},
      {"editor", NULL, false, "w", "8"},
      {"a", CM("{\"x\":\"9\",\"y\":\"2\"}"), false, NULL, NULL},
      {"b", CM("{}"), false, NULL, NULL},
      {"a", CM("{\"x\":\"9\"}"), true, NULL, NULL},
  };
  (void)state;
  same_steps(&cm_gvr, "fields-cm", steps, sizeof(steps) / sizeof(steps[0]), "data");
}

#define DEPLOY_APPLY(containers)                                                                   \
  "{\"apiVersion\":\"apps/"                                                                        \
  "v1\",\"kind\":\"Deployment\",\"metadata\":{},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":" \
  "\"f\"}},"                                                                                       \
  "\"template\":{\"metadata\":{\"labels\":{\"app\":\"f\"}},\"spec\":{\"containers\":" containers   \
  "}}}}"
#define DEPLOY_PART(containers)                                                                    \
  "{\"apiVersion\":\"apps/"                                                                        \
  "v1\",\"kind\":\"Deployment\",\"metadata\":{},\"spec\":{\"template\":{\"spec\":{"                \
  "\"containers\":" containers "}}}}"
#define DEPLOY_BARE                                                                                \
  "{\"apiVersion\":\"apps/"                                                                        \
  "v1\",\"kind\":\"Deployment\",\"metadata\":{},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":" \
  "\"f\"}},"                                                                                       \
  "\"template\":{\"metadata\":{\"labels\":{\"app\":\"f\"}}}}}"

/* Keyed lists: a conflict inside an element (its path as the server writes
 * it), a forced takeover of one field of another manager's element, and the
 * element a manager drops staying with what another owns in it. */
static void test_fake_fields_it_containers(void **state) {
  static const step steps[] = {
      {"a",
       DEPLOY_APPLY("[{\"name\":\"c\",\"image\":\"c:1\",\"args\":[\"x\"]},{\"name\":\"d\","
                    "\"image\":\"d:1\"}]"),
       false, NULL, NULL},
      {"b", DEPLOY_PART("[{\"name\":\"c\",\"image\":\"c:2\"}]"), false, NULL, NULL},
      {"b", DEPLOY_PART("[{\"name\":\"c\",\"image\":\"c:2\"}]"), true, NULL, NULL},
      {"a", DEPLOY_APPLY("[{\"name\":\"d\",\"image\":\"d:1\"}]"), false, NULL, NULL},
      {"a", DEPLOY_BARE, false, NULL, NULL},
  };
  (void)state;
  same_steps(&deploy_gvr, "fields-deploy", steps, sizeof(steps) / sizeof(steps[0]),
             "spec.template.spec.containers");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fake_smp_it_lists_by_key),
      cmocka_unit_test(test_fake_smp_it_directives),
      cmocka_unit_test(test_fake_apply_it_merge),
      cmocka_unit_test(test_fake_apply_it_needs_manager),
      cmocka_unit_test(test_fake_fields_it_configmap),
      cmocka_unit_test(test_fake_fields_it_containers),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
