/* SPDX-License-Identifier: MIT */
/*
 * Integration test of the local control plane (scripts/cluster.sh): the API
 * server is ready, reports the version that was built, serves a CRD and its
 * custom resources with schema validation, and kube-controller-manager's
 * garbage collector removes a dependent once its owner is deleted.
 *
 * Runs against the cluster named by KCR_TEST_KUBECONFIG (the CTest fixture
 * `controlplane`), or starts its own (see test/support/kcr_testenv.h).
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif

/* cmocka.h needs these first, in this order. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kcr_testenv.h"

#define GC_DEADLINE_S 60

struct fixture {
  kcr_testenv_t *env;
  char ns[64];
};

static struct fixture fx;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Path of a file under test/integration/testdata, in buf. */
static const char *testdata(char *buf, size_t size, const char *name) {
  int n = snprintf(buf, size, "%s/test/integration/testdata/%s", kcr_testenv_source_dir(), name);
  assert_true(n > 0 && (size_t)n < size);
  return buf;
}

/* Run kubectl, expect exit 0, return its trimmed stdout (caller frees). */
static char *kubectl_ok(const char *const argv[]) {
  char *out = NULL;
  int rc = kcr_testenv_kubectl(fx.env, argv, &out);
  if (rc != 0) {
    print_error("kubectl %s %s ... exited %d, stdout: %s\n", argv[0],
                argv[1] != NULL ? argv[1] : "", rc, out != NULL ? out : "(none)");
  }
  assert_int_equal(rc, 0);
  if (out == NULL) { /* cmocka's fail() does not return; this keeps analyzers informed */
    fail_msg("kubectl gave no output buffer");
    return NULL;
  }
  size_t len = strlen(out);
  while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
    out[--len] = '\0';
  return out;
}

static int setup(void **state) {
  (void)state;
  if (kcr_testenv_start(&fx.env) != 0) {
    print_error("could not start or join a control plane\n");
    return -1;
  }
  snprintf(fx.ns, sizeof fx.ns, "kcr-it-%ld-%ld", (long)getpid(), (long)time(NULL));
  const char *const argv[] = {"create", "namespace", fx.ns, NULL};
  if (kcr_testenv_kubectl(fx.env, argv, NULL) != 0) {
    print_error("could not create namespace %s\n", fx.ns);
    kcr_testenv_stop(fx.env);
    fx.env = NULL;
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (fx.env == NULL)
    return 0;
  const char *const argv[] = {"delete",       "namespace",          fx.ns,
                              "--wait=false", "--ignore-not-found", NULL};
  kcr_testenv_kubectl(fx.env, argv, NULL);
  int rc = kcr_testenv_stop(fx.env);
  fx.env = NULL;
  return rc;
}

static void test_ready(void **state) {
  (void)state;
  assert_int_equal(kcr_testenv_wait_ready(fx.env, 60), 0);
  const char *const argv[] = {"get", "--raw=/readyz", NULL};
  char *out = kubectl_ok(argv);
  assert_string_equal(out, "ok");
  free(out);

  /* The default namespace exists, the admin is a cluster admin. */
  const char *const ns[] = {"get", "namespace", "default", "-o", "name", NULL};
  out = kubectl_ok(ns);
  assert_string_equal(out, "namespace/default");
  free(out);
  const char *const can[] = {"auth", "can-i", "*", "*", "--all-namespaces", NULL};
  out = kubectl_ok(can);
  assert_string_equal(out, "yes");
  free(out);
}

static void test_versions(void **state) {
  (void)state;
  const char *const argv[] = {"version", "-o", "json", NULL};
  char *out = kubectl_ok(argv);
  /* Client (kubectl) and server (kube-apiserver) both carry the release
   * version set by the build's ldflags, not the v0.0.0 placeholder. */
  assert_null(strstr(out, "v0.0.0"));
  const char *p = strstr(out, "\"clientVersion\"");
  assert_non_null(p);
  assert_non_null(strstr(p, "\"gitVersion\": \"v1."));
  p = strstr(out, "\"serverVersion\"");
  assert_non_null(p);
  assert_non_null(strstr(p, "\"gitVersion\": \"v1."));
  free(out);
}

static void test_crd_and_custom_resource(void **state) {
  (void)state;
  char path[4096];
  const char *const apply_crd[] = {"apply", "-f", testdata(path, sizeof path, "widgets.crd.yaml"),
                                   NULL};
  free(kubectl_ok(apply_crd));
  assert_int_equal(kcr_testenv_wait_established(fx.env, "crd/widgets.test.kcr.dev"), 0);

  /* Discovery may lag the Established condition briefly: retry the apply. */
  const char *const apply_cr[] = {
      "apply", "-n", fx.ns, "-f", testdata(path, sizeof path, "widget.yaml"), NULL};
  int rc = -1;
  for (double deadline = now_s() + 30; rc != 0 && now_s() < deadline;) {
    rc = kcr_testenv_kubectl(fx.env, apply_cr, NULL);
    if (rc != 0)
      pause_ms(500);
  }
  assert_int_equal(rc, 0);

  const char *const get[] = {"get",
                             "widgets.test.kcr.dev",
                             "canary",
                             "-n",
                             fx.ns,
                             "-o",
                             "jsonpath={.spec.size}/{.spec.color}",
                             NULL};
  char *out = kubectl_ok(get);
  assert_string_equal(out, "3/blue");
  free(out);

  /* A list may be served from the apiserver's watch cache of a resource whose CRD
   * was just established, which can lag the write by a moment (seen under load):
   * wait for it, bounded. */
  const char *const list[] = {"get", "widgets", "-n", fx.ns, "-o", "name", NULL};
  for (int i = 0; i < 50; i++) {
    out = kubectl_ok(list);
    if (strcmp(out, "widget.test.kcr.dev/canary") == 0)
      break;
    free(out);
    out = NULL;
    pause_ms(200);
  }
  assert_non_null(out);
  assert_string_equal(out, "widget.test.kcr.dev/canary");
  free(out);

  /* The structural schema is enforced: size must be >= 1. */
  char bad[4096];
  const char *const apply_bad[] = {
      "apply", "-n", fx.ns, "-f", testdata(bad, sizeof bad, "invalid-widget.yaml"), NULL};
  rc = kcr_testenv_kubectl(fx.env, apply_bad, NULL);
  assert_true(rc > 0);
}

static void test_garbage_collection(void **state) {
  (void)state;
  const char *const create[] = {
      "create", "configmap", "gc-owner", "-n", fx.ns, "--from-literal=role=owner", NULL};
  free(kubectl_ok(create));
  const char *const get_uid[] = {
      "get", "configmap", "gc-owner", "-n", fx.ns, "-o", "jsonpath={.metadata.uid}", NULL};
  char *uid = kubectl_ok(get_uid);
  assert_true(strlen(uid) >= 32);

  char manifest[1024];
  int n = snprintf(manifest, sizeof manifest,
                   "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                   "\"metadata\":{\"name\":\"gc-dependent\",\"namespace\":\"%s\","
                   "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                   "\"name\":\"gc-owner\",\"uid\":\"%s\"}]},"
                   "\"data\":{\"role\":\"dependent\"}}",
                   fx.ns, uid);
  assert_true(n > 0 && (size_t)n < sizeof manifest);
  free(uid);
  const char *const apply[] = {"apply", "-f", "-", NULL};
  char *out = NULL;
  assert_int_equal(kcr_testenv_kubectl_input(fx.env, apply, manifest, &out), 0);
  free(out);

  const char *const get_dep[] = {"get",
                                 "configmap",
                                 "gc-dependent",
                                 "-n",
                                 fx.ns,
                                 "-o",
                                 "jsonpath={.metadata.ownerReferences[0].name}",
                                 NULL};
  out = kubectl_ok(get_dep);
  assert_string_equal(out, "gc-owner");
  free(out);

  /* Delete the owner (background propagation): the garbage collector in
   * kube-controller-manager must delete the dependent. */
  const char *const del[] = {"delete", "configmap", "gc-owner", "-n", fx.ns, NULL};
  free(kubectl_ok(del));
  double start = now_s();
  const char *const probe[] = {
      "get", "configmap", "gc-dependent", "-n", fx.ns, "--ignore-not-found", "-o", "name", NULL};
  int gone = 0;
  while (!gone && now_s() - start < GC_DEADLINE_S) {
    out = kubectl_ok(probe);
    gone = out[0] == '\0';
    free(out);
    if (!gone)
      pause_ms(250);
  }
  if (!gone)
    print_error("dependent still present %d s after its owner was deleted; see %s/logs\n",
                GC_DEADLINE_S, kcr_testenv_dir(fx.env));
  assert_true(gone);
  print_message("garbage collector removed the dependent in %.1f s\n", now_s() - start);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ready),
      cmocka_unit_test(test_versions),
      cmocka_unit_test(test_crd_and_custom_resource),
      cmocka_unit_test(test_garbage_collection),
  };
  return cmocka_run_group_tests_name("controlplane", tests, setup, teardown);
}
