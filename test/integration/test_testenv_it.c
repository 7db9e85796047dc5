/* SPDX-License-Identifier: MIT */
/*
 * test_testenv_it.c: the installed test env (kcr/testing.h) as a user's
 * integration test uses it, the second half of docs/testing.md: join the
 * running cluster (use_existing, as envtest's USE_EXISTING_CLUSTER), install
 * the CRDs of config/crd/bases, take its REST config, and run the
 * configmap-mirror example's reconciler under a real manager until a copy
 * appears in the target namespace and goes away with its source.
 */
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
#include "kcr/manager.h"
#include "kcr/meta.h"
#include "kcr/testing.h"
#include "mirror.h"

static kcr_testenv_t *env;

static int group_setup(void **state) {
  kcr_testenv_options o;
  kcr_error_t err;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.use_existing = true;
  o.kubeconfig = getenv("KCR_TEST_KUBECONFIG");
  o.crd_directory = KCR_SOURCE_DIR "/config/crd/bases";
  kcr_error_clear(&err);
  if (kcr_testenv_start_with(&o, &env, &err) != 0) {
    fprintf(stderr, "test env: %s\n", err.message);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  return kcr_testenv_stop(env); /* joined: left running */
}

static kcr_client_t *client(kcr_rest_config_t **cfg) {
  kcr_client_options co;
  kcr_client_t *c = NULL;
  assert_int_equal(kcr_testenv_rest_config(env, cfg, NULL), 0);
  memset(&co, 0, sizeof(co));
  co.config = *cfg;
  co.timeout_ns = 30 * KCR_NSEC_PER_SEC;
  assert_int_equal(kcr_client_create(&co, &c, NULL), 0);
  return c;
}

static void test_testenv_joined_with_crds(void **state) {
  static const kcr_gvr crds = {"apiextensions.k8s.io", "v1", "customresourcedefinitions"};
  kcr_rest_config_t *cfg = NULL;
  kcr_client_t *c = client(&cfg);
  json_t *crd = NULL;
  kcr_error_t err;
  char bin[4096];
  (void)state;
  assert_false(kcr_testenv_owned(env));
  assert_non_null(kcr_testenv_kubectl_path(env));
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(c, &crds, NULL, "apps.kcr.dev", NULL, &crd, &err), 0);
  assert_string_equal(kcr_meta_path_string(crd, "spec.group"), "kcr.dev");
  /* the binaries the control plane runs from */
  assert_int_equal(kcr_testenv_binary_dir(bin, sizeof(bin), NULL), 0);
  strncat(bin, "/kube-apiserver", sizeof(bin) - strlen(bin) - 1);
  assert_int_equal(access(bin, X_OK), 0);
  json_decref(crd);
  kcr_client_destroy(c);
  kcr_rest_config_unref(cfg);
}

typedef struct run {
  kcr_manager_t *m;
  pthread_t t;
  int rc;
} run_t;

static void *run_main(void *arg) {
  run_t *r = arg;
  kcr_error_t err;
  kcr_error_clear(&err);
  r->rc = kcr_manager_run(r->m, &err);
  return NULL;
}

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  (void)res;
  return mirror_reconcile(data, kcr_reconcile_client(ctx), ctx, req, kcr_reconcile_err(ctx));
}

/* wait_copy polls until tgt/name exists with data.k == want (want NULL: until gone). */
static bool wait_copy(kcr_client_t *c, const char *tgt, const char *name, const char *want) {
  static const kcr_gvr cms = {"", "v1", "configmaps"};
  for (int i = 0; i < 300; i++) {
    json_t *obj = NULL;
    kcr_error_t err;
    int rc;
    kcr_error_clear(&err);
    rc = kcr_client_get(c, &cms, tgt, name, NULL, &obj, &err);
    if (want && rc == 0 && kcr_meta_path_string(obj, "data.k") &&
        strcmp(kcr_meta_path_string(obj, "data.k"), want) == 0) {
      json_decref(obj);
      return true;
    }
    json_decref(obj);
    if (!want && rc == KCR_EAPI && kcr_error_is_not_found(&err))
      return true;
    usleep(100 * 1000);
  }
  return false;
}

static void test_testenv_mirror_end_to_end(void **state) {
  static const kcr_gvr namespaces = {"", "v1", "namespaces"}, cms = {"", "v1", "configmaps"};
  static const kcr_gvk configmap = {"", "v1", "ConfigMap"}, namespace = {"", "v1", "Namespace"};
  kcr_rest_config_t *cfg = NULL;
  kcr_client_t *c = client(&cfg);
  char src[64], tgt[64];
  mirror_t m;
  kcr_manager_options mo;
  kcr_controller_options o;
  kcr_controller_t *ctl = NULL;
  kcr_predicate_t *sources = NULL;
  run_t r;
  json_t *ns, *cm;
  kcr_error_t err;
  (void)state;

  snprintf(src, sizeof(src), "mirror-src-%ld", (long)getpid());
  snprintf(tgt, sizeof(tgt), "mirror-tgt-%ld", (long)getpid());
  m.source_ns = src;
  kcr_error_clear(&err);
  ns = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
                 src);
  assert_int_equal(kcr_client_create_object(c, &namespaces, NULL, ns, NULL, NULL, &err), 0);
  json_decref(ns);
  ns = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "Namespace",
                 "metadata", "name", tgt, "labels", TARGET_LABEL, "true");
  assert_int_equal(kcr_client_create_object(c, &namespaces, NULL, ns, NULL, NULL, &err), 0);
  json_decref(ns);
  cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                 "ConfigMap", "metadata", "name", "settings", "namespace", src, "labels",
                 MIRROR_LABEL, "true", "data", "k", "v1");
  assert_int_equal(kcr_client_create_object(c, &cms, src, cm, NULL, NULL, &err), 0);
  json_decref(cm);

  /* the example's main, with the test env's config */
  memset(&mo, 0, sizeof(mo));
  mo.config = cfg;
  mo.no_signal_handlers = true;
  mo.graceful_shutdown_timeout_ns = 5 * KCR_NSEC_PER_SEC;
  memset(&r, 0, sizeof(r));
  assert_int_equal(kcr_manager_create(&mo, &r.m, &err), 0);
  memset(&o, 0, sizeof(o));
  o.name = "configmap-mirror";
  o.reconcile = reconcile;
  o.data = &m;
  assert_int_equal(kcr_manager_add_controller(r.m, &o, &ctl, &err), 0);
  assert_int_equal(kcr_predicate_label_selector(MIRROR_LABEL "=true", &sources, &err), 0);
  assert_int_equal(kcr_controller_for(ctl, &configmap, sources, &err), 0);
  assert_int_equal(kcr_controller_watches(ctl, &namespace, mirror_map_namespace, &m,
                                          kcr_predicate_labels_changed(), &err),
                   0);
  assert_int_equal(pthread_create(&r.t, NULL, run_main, &r), 0);

  assert_true(wait_copy(c, tgt, "settings", "v1"));
  /* the source changes: the copy follows */
  {
    static const char patch[] = "{\"data\":{\"k\":\"v2\"}}";
    assert_int_equal(kcr_client_patch(c, &cms, src, "settings", KCR_PATCH_MERGE, patch,
                                      strlen(patch), NULL, NULL, &err),
                     0);
  }
  assert_true(wait_copy(c, tgt, "settings", "v2"));
  /* the source goes: so does the copy */
  assert_int_equal(kcr_client_delete(c, &cms, src, "settings", NULL, NULL, &err), 0);
  assert_true(wait_copy(c, tgt, "settings", NULL));

  kcr_manager_request_stop(r.m);
  pthread_join(r.t, NULL);
  assert_int_equal(r.rc, 0);
  kcr_manager_destroy(r.m);
  kcr_client_delete(c, &namespaces, NULL, src, NULL, NULL, NULL);
  kcr_client_delete(c, &namespaces, NULL, tgt, NULL, NULL, NULL);
  kcr_client_destroy(c);
  kcr_rest_config_unref(cfg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_testenv_joined_with_crds),
      cmocka_unit_test(test_testenv_mirror_end_to_end),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
