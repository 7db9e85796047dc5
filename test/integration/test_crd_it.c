/* SPDX-License-Identifier: MIT */
/*
 * Integration test of the App CRD (config/crd/bases/kcr.dev_apps.yaml) against
 * the local control plane, with kubectl as the client: the CRD becomes
 * Established; `kubectl explain app.spec` describes every field; the sample App
 * is accepted and defaulted; invalid Apps are refused with the schema's
 * messages; the scale subresource works (`kubectl scale app/NAME`); `kubectl get
 * apps` shows the printer columns, the Available one read from the status
 * conditions; the short name kapp works.
 *
 * Runs against the cluster named by KCR_TEST_KUBECONFIG (the CTest fixture
 * `controlplane`), or starts its own (test/support/kcr_testenv.h).
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

struct fixture {
  kcr_testenv_t *env;
  char ns[64];
  char crd[512];
  char sample[512];
};

static struct fixture fx;

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* trim removes trailing newlines and spaces in place. */
static void trim(char *s) {
  size_t len = strlen(s);
  while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' ')) {
    s[--len] = '\0';
  }
}

/* kubectl_ok runs kubectl, expects exit 0 and returns its trimmed stdout (new). */
static char *kubectl_ok(const char *const argv[]) {
  char *out = NULL;
  int rc = kcr_testenv_kubectl(fx.env, argv, &out);
  if (rc != 0) {
    print_error("kubectl %s %s ... exited %d, stdout: %s\n", argv[0],
                argv[1] != NULL ? argv[1] : "", rc, out != NULL ? out : "(none)");
  }
  assert_int_equal(rc, 0);
  if (out == NULL) {
    fail_msg("kubectl gave no output buffer");
    return NULL;
  }
  trim(out);
  return out;
}

/*
 * kubectl_create_all creates the manifest (text) in the test namespace with
 * stdout and stderr together (the API server's refusal is on stderr, which
 * kcr_testenv does not capture). Returns the exit status; *out is new.
 */
static int kubectl_create_all(const char *manifest, char **out) {
  char path[] = "/tmp/kcr-crd-it-XXXXXX";
  char cmd[2048];
  char buf[4096];
  size_t len = 0;
  FILE *f, *p;
  int fd = mkstemp(path), status;
  assert_true(fd >= 0);
  f = fdopen(fd, "w");
  assert_non_null(f);
  fputs(manifest, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "'%s/bin/kubectl' --kubeconfig '%s' -n %s create -f %s 2>&1",
           kcr_testenv_dir(fx.env), kcr_testenv_kubeconfig(fx.env), fx.ns, path);
  p = popen(cmd, "r");
  assert_non_null(p);
  while (len + 1 < sizeof buf) {
    size_t n = fread(buf + len, 1, sizeof buf - 1 - len, p);
    if (n == 0) {
      break;
    }
    len += n;
  }
  buf[len] = '\0';
  status = pclose(p);
  unlink(path);
  *out = strdup(buf);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int setup(void **state) {
  const char *src;
  (void)state;
  if (kcr_testenv_start(&fx.env) != 0) {
    return -1;
  }
  src = kcr_testenv_source_dir();
  snprintf(fx.ns, sizeof fx.ns, "kcr-crd-it-%ld", (long)getpid());
  snprintf(fx.crd, sizeof fx.crd, "%s/config/crd/bases/kcr.dev_apps.yaml", src);
  snprintf(fx.sample, sizeof fx.sample, "%s/config/samples/kcr_v1alpha1_app.yaml", src);
  {
    const char *const apply[] = {"apply", "-f", fx.crd, NULL};
    const char *const mkns[] = {"create", "namespace", fx.ns, NULL};
    if (kcr_testenv_kubectl(fx.env, apply, NULL) != 0 ||
        kcr_testenv_wait_established(fx.env, "crd/apps.kcr.dev") != 0 ||
        kcr_testenv_kubectl(fx.env, mkns, NULL) != 0) {
      return -1;
    }
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (fx.env) {
    const char *const rmns[] = {"delete", "namespace", fx.ns, "--wait=false", NULL};
    (void)kcr_testenv_kubectl(fx.env, rmns, NULL);
    kcr_testenv_stop(fx.env);
    fx.env = NULL;
  }
  return 0;
}

/* The CRD is Established and names what issue 8 says. */
static void test_crd_established(void **state) {
  static const char jsonpath[] =
      "jsonpath={.spec.group} {.spec.names.kind} {.spec.names.plural} {.spec.names.shortNames[0]} "
      "{.spec.scope} {.spec.versions[0].name} "
      "{.status.conditions[?(@.type==\"Established\")].status}";
  const char *const get[] = {"get", "crd", "apps.kcr.dev", "-o", jsonpath, NULL};
  char *out;
  (void)state;
  out = kubectl_ok(get);
  assert_string_equal(out, "kcr.dev App apps kapp Namespaced v1alpha1 True");
  free(out);
}

/* kubectl explain app.spec describes each field (the schema is published). */
static void test_crd_explain(void **state) {
  static const char *const want[] = {"image",     "Container image to run",
                                     "replicas",  "Number of pods to run",
                                     "port",      "TCP port the container listens on",
                                     "env",       "Environment variables of the container",
                                     "config",    "Files to mount read-only",
                                     "resources", "Compute resources of the container",
                                     "paused",    "the operator changes none"};
  const char *const explain[] = {"explain", "app.spec", NULL};
  const char *const explain_env[] = {"explain", "app.spec.env.name", NULL};
  char *out = NULL;
  (void)state;
  /* The OpenAPI document is rebuilt a little after the CRD is Established. */
  for (int i = 0; i < 60; i++) {
    free(out);
    out = NULL;
    if (kcr_testenv_kubectl(fx.env, explain, &out) == 0 && out && strstr(out, "paused")) {
      break;
    }
    pause_ms(500);
  }
  assert_non_null(out);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    if (!strstr(out, want[i])) {
      fail_msg("kubectl explain app.spec lacks \"%s\":\n%s", want[i], out);
    }
  }
  assert_non_null(strstr(out, "-required-")); /* image */
  free(out);
  out = kubectl_ok(explain_env);
  assert_non_null(strstr(out, "a C identifier"));
  free(out);
}

/* The sample applies; defaults fill what it leaves out. */
static void test_crd_sample_and_defaults(void **state) {
  const char *const apply[] = {"apply", "-n", fx.ns, "-f", fx.sample, NULL};
  const char *const get[] = {"get",
                             "app",
                             "app-sample",
                             "-n",
                             fx.ns,
                             "-o",
                             "jsonpath={.spec.image} {.spec.replicas} {.spec.port} {.spec.paused}",
                             NULL};
  const char *const get_min[] = {
      "get", "kapp", "minimal", "-n", fx.ns, "-o", "jsonpath={.spec.replicas} {.spec.paused}",
      NULL};
  char *out;
  int rc;
  (void)state;
  out = kubectl_ok(apply);
  free(out);
  out = kubectl_ok(get);
  assert_string_equal(out, "nginx:1.27 2 80 false");
  free(out);
  rc = kubectl_create_all("apiVersion: kcr.dev/v1alpha1\nkind: App\nmetadata:\n  name: minimal\n"
                          "spec:\n  image: busybox\n",
                          &out);
  if (rc != 0) {
    fail_msg("create minimal: %s", out);
  }
  free(out);
  out = kubectl_ok(get_min);
  assert_string_equal(out, "1 false");
  free(out);
}

/* Invalid Apps are refused by the API server with the schema's messages. */
static void test_crd_invalid_refused(void **state) {
  static const struct {
    const char *spec;
    const char *want;
  } cases[] = {
      {"spec:\n  replicas: 1\n", "spec.image: Required value"},
      {"spec:\n  image: \"\"\n", "spec.image: Invalid value: \"\": spec.image in body should be at "
                                 "least 1 chars long"},
      {"spec:\n  image: x\n  replicas: -1\n",
       "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal "
       "to 0"},
      {"spec:\n  image: x\n  replicas: 1001\n", "spec.replicas in body should be less than or "
                                                "equal to 1000"},
      {"spec:\n  image: x\n  port: 0\n", "spec.port in body should be greater than or equal to 1"},
      {"spec:\n  image: x\n  port: 65536\n", "spec.port in body should be less than or equal to "
                                             "65535"},
      {"spec:\n  image: x\n  env:\n  - name: 1BAD\n", "spec.env[0].name in body should match"},
      {"spec:\n  image: x\n  resources:\n    limits:\n      memory: lots\n",
       "spec.resources.limits.memory in body should match"},
      {"{}\n", "spec: Required value"},
      {"spec:\n  image: x\n  config:\n    bad/key: v\n",
       "each config key is a file name of a ConfigMap"},
      {"spec:\n  image: x\n  config:\n    ..: v\n",
       "each config key is a file name of a ConfigMap"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char manifest[512];
    char *out = NULL;
    int rc;
    snprintf(manifest, sizeof manifest,
             "apiVersion: kcr.dev/v1alpha1\nkind: App\nmetadata:\n  name: bad-%zu\n%s", i,
             cases[i].spec[0] == '{' ? "" : cases[i].spec);
    rc = kubectl_create_all(manifest, &out);
    if (rc == 0 || !out || !strstr(out, cases[i].want)) {
      fail_msg("case %zu: rc %d, want \"%s\" in:\n%s", i, rc, cases[i].want, out ? out : "");
    }
    free(out);
  }
  /* Names the App's children could not carry (issue 16, bug 10). */
  {
    static const char *const names[] = {
        "dotted.name", "a234567890123456789012345678901234567890123456789012345678901234",
        "9starts-with-digit"};
    static const char *const want[] = {"must be a DNS label", "at most 63 characters",
                                       "must be a DNS label"};
    for (size_t i = 0; i < 3; i++) {
      char manifest[512], *out = NULL;
      int rc;
      snprintf(
          manifest, sizeof manifest,
          "apiVersion: kcr.dev/v1alpha1\nkind: App\nmetadata:\n  name: %s\nspec:\n  image: x\n",
          names[i]);
      rc = kubectl_create_all(manifest, &out);
      if (rc == 0 || !out || !strstr(out, want[i]))
        fail_msg("name %s: rc %d, want \"%s\" in:\n%s", names[i], rc, want[i], out ? out : "");
      free(out);
    }
  }
  /* Config past what a ConfigMap holds: two files of 600 KiB. */
  {
    size_t big = (size_t)600 * 1024, len = big * 2 + 512;
    char *manifest = malloc(len), *p, *out = NULL;
    int rc;
    assert_non_null(manifest);
    p = manifest + snprintf(manifest, len,
                            "apiVersion: kcr.dev/v1alpha1\nkind: App\nmetadata:\n  name: "
                            "bad-big\nspec:\n  image: x\n  config:\n    a: ");
    memset(p, 'x', big);
    p += big;
    p += snprintf(p, 16, "\n    b: ");
    memset(p, 'y', big);
    p += big;
    snprintf(p, 4, "\n");
    rc = kubectl_create_all(manifest, &out);
    free(manifest);
    if (rc == 0 || !out || !strstr(out, "config holds at most 1 MiB"))
      fail_msg("big config: rc %d, want the 1 MiB message in:\n%.2000s", rc, out ? out : "");
    free(out);
  }
  /* A name and config at the limits are accepted. */
  {
    char *out = NULL;
    int rc = kubectl_create_all(
        "apiVersion: kcr.dev/v1alpha1\nkind: App\nmetadata:\n  name: "
        "a23456789012345678901234567890123456789012345678901234567890123\nspec:\n  image: x\n"
        "  config:\n    app.conf_v-1: ok\n",
        &out);
    if (rc != 0)
      fail_msg("a valid App was refused:\n%s", out ? out : "");
    free(out);
  }
  /* Both problems of issue 8's example at once. */
  {
    char *out = NULL;
    int rc = kubectl_create_all("apiVersion: kcr.dev/v1alpha1\nkind: App\nmetadata:\n  name: "
                                "bad-both\nspec:\n  replicas: -1\n",
                                &out);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "spec.image: Required value"));
    assert_non_null(strstr(out, "spec.replicas: Invalid value: -1"));
    free(out);
  }
}

/* kubectl scale goes through the scale subresource. */
static void test_crd_scale(void **state) {
  const char *const scale[] = {"scale", "app/app-sample", "-n", fx.ns, "--replicas=3", NULL};
  const char *const get[] = {
      "get", "app", "app-sample", "-n", fx.ns, "-o", "jsonpath={.spec.replicas}", NULL};
  const char *const get_scale[] = {"get",        "app",
                                   "app-sample", "-n",
                                   fx.ns,        "--subresource=scale",
                                   "-o",         "jsonpath={.kind} {.spec.replicas}",
                                   NULL};
  char *out;
  (void)state;
  out = kubectl_ok(scale);
  assert_non_null(strstr(out, "scaled"));
  free(out);
  out = kubectl_ok(get);
  assert_string_equal(out, "3");
  free(out);
  out = kubectl_ok(get_scale);
  assert_string_equal(out, "Scale 3");
  free(out);
}

/* kubectl get apps prints Image, Desired, Ready, Available, Age. */
static void test_crd_printer_columns(void **state) {
  const char *const status[] = {
      "patch",
      "app",
      "app-sample",
      "-n",
      fx.ns,
      "--subresource=status",
      "--type=merge",
      "-p",
      "{\"status\":{\"replicas\":3,\"readyReplicas\":3,\"selector\":"
      "\"app.kubernetes.io/name=app-sample,app.kubernetes.io/instance=app-sample\","
      "\"conditions\":[{\"type\":\"Available\",\"status\":\"True\",\"reason\":"
      "\"MinimumReplicasAvailable\",\"message\":\"3/3 replicas ready\",\"lastTransitionTime\":"
      "\"2025-01-01T00:00:00Z\"}]}}",
      NULL};
  const char *const get[] = {"get", "apps", "-n", fx.ns, NULL};
  const char *const get_scale[] = {"get",        "app",
                                   "app-sample", "-n",
                                   fx.ns,        "--subresource=scale",
                                   "-o",         "jsonpath={.status.replicas} {.status.selector}",
                                   NULL};
  char *out, *line;
  char name[64], image[64], desired[16], ready[16], available[16];
  (void)state;
  out = kubectl_ok(status);
  free(out);
  out = kubectl_ok(get);
  if (!strstr(out, "NAME") || !strstr(out, "IMAGE") || !strstr(out, "DESIRED") ||
      !strstr(out, "READY") || !strstr(out, "AVAILABLE") || !strstr(out, "AGE")) {
    fail_msg("kubectl get apps lacks a column:\n%s", out);
  }
  assert_true(strstr(out, "NAME") < strstr(out, "IMAGE"));
  assert_true(strstr(out, "IMAGE") < strstr(out, "DESIRED"));
  assert_true(strstr(out, "DESIRED") < strstr(out, "READY"));
  assert_true(strstr(out, "READY") < strstr(out, "AVAILABLE"));
  assert_non_null(strstr(strstr(out, "AVAILABLE"), " AGE")); /* not IMAGE's "AGE" */
  line = strstr(out, "app-sample");
  assert_non_null(line);
  assert_int_equal(sscanf(line, "%63s %63s %15s %15s %15s", name, image, desired, ready, available),
                   5);
  assert_string_equal(image, "nginx:1.27");
  assert_string_equal(desired, "3");
  assert_string_equal(ready, "3");
  assert_string_equal(available, "True");
  free(out);
  out = kubectl_ok(get_scale);
  assert_string_equal(out,
                      "3 app.kubernetes.io/name=app-sample,app.kubernetes.io/instance=app-sample");
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crd_established),
      cmocka_unit_test(test_crd_explain),
      cmocka_unit_test(test_crd_sample_and_defaults),
      cmocka_unit_test(test_crd_invalid_refused),
      cmocka_unit_test(test_crd_scale),
      cmocka_unit_test(test_crd_printer_columns),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
