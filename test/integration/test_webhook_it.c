/* SPDX-License-Identifier: MIT */
/*
 * test_webhook_it.c: admission webhooks registered on a manager
 * (kcr_manager_webhook_server), called by the real kube-apiserver through
 * clientConfig.url with a CA bundle (no kube-proxy here): a ConfigMap the
 * validating webhook refuses is refused through kubectl with the webhook's
 * message, and one that passes gets the label the mutating webhook adds (its
 * JSON Patch applied by the API server). The webhook metrics count the calls.
 */
#define _POSIX_C_SOURCE 200809L
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

#include "kcr/base64.h"
#include "kcr/kcr.h"
#include "kcr_testenv.h"

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static char ns[64], cfgname[64], dir[64];

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int on_validate(void *data, const kcr_admission_request *req, kcr_admission_response *resp,
                       kcr_error_t *err) {
  (void)data;
  (void)err;
  if (json_object_get(json_object_get(req->object, "data"), "forbidden"))
    kcr_admission_deny(resp, "data key \"forbidden\" is not allowed (kcr webhook)");
  return 0;
}

static int on_mutate(void *data, const kcr_admission_request *req, kcr_admission_response *resp,
                     kcr_error_t *err) {
  json_t *md = json_object_get(req->object, "metadata"), *labels;
  (void)data;
  (void)resp;
  (void)err;
  labels = json_object_get(md, "labels");
  if (!labels) {
    labels = json_object();
    json_object_set_new(md, "labels", labels);
  }
  json_object_set_new(labels, "kcr.dev/defaulted", json_string("true"));
  return 0;
}

static int group_setup(void **state) {
  char cmd[1024];
  (void)state;
  if (kcr_testenv_start(&env) != 0)
    return -1;
  snprintf(ns, sizeof(ns), "kcr-wh-%d", (int)getpid());
  snprintf(cfgname, sizeof(cfgname), "kcr-it-wh-%d", (int)getpid());
  snprintf(dir, sizeof(dir), "/tmp/kcr-wh-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  /* The serving certificate, for 127.0.0.1: its own CA bundle. */
  snprintf(cmd, sizeof(cmd),
           "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
           "-subj /CN=kcr-webhook -addext subjectAltName=IP:127.0.0.1,DNS:localhost "
           "-keyout %s/tls.key -out %s/tls.crt 2>/dev/null",
           dir, dir);
  if (system(cmd) != 0)
    return -1;
  return kcr_rest_config_from_kubeconfig(kcr_testenv_kubeconfig(env), NULL, NULL, &config, NULL);
}

static int group_teardown(void **state) {
  const char *d1[] = {"delete", "validatingwebhookconfiguration", cfgname, "--ignore-not-found",
                      NULL};
  const char *d2[] = {"delete", "mutatingwebhookconfiguration", cfgname, "--ignore-not-found",
                      NULL};
  const char *d3[] = {"delete", "namespace", ns, "--wait=false", "--ignore-not-found", NULL};
  char path[128];
  char *out = NULL;
  (void)state;
  kcr_testenv_kubectl(env, d1, &out);
  free(out);
  out = NULL;
  kcr_testenv_kubectl(env, d2, &out);
  free(out);
  out = NULL;
  kcr_testenv_kubectl(env, d3, &out);
  free(out);
  snprintf(path, sizeof(path), "%s/tls.crt", dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/tls.key", dir);
  unlink(path);
  rmdir(dir);
  kcr_rest_config_unref(config);
  kcr_testenv_stop(env);
  return 0;
}

typedef struct runner {
  kcr_manager_t *m;
  int rc;
  kcr_error_t err;
} runner_t;

static void *run_main(void *arg) {
  runner_t *r = arg;
  kcr_error_clear(&r->err);
  r->rc = kcr_manager_run(r->m, &r->err);
  return NULL;
}

/* read_file returns the file's contents (new). */
static char *read_file(const char *path) {
  FILE *fp = fopen(path, "r");
  char *buf = calloc(1, 16384);
  size_t n;
  assert_non_null(fp);
  n = fread(buf, 1, 16383, fp);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

static void test_webhook_called_by_apiserver(void **state) {
  kcr_manager_options mo;
  kcr_manager_serving_options so;
  kcr_error_t err;
  runner_t r;
  pthread_t th;
  kcr_webhook_server_t *ws;
  char path[128], *pem, *ca = NULL, *yaml, *out = NULL;
  const char *apply[] = {"apply", "-f", "-", NULL};
  int port = 0, refused = 0;
  kcr_metric_t *m;
  (void)state;

  memset(&mo, 0, sizeof(mo));
  mo.config = config;
  mo.no_signal_handlers = true;
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_create(&mo, &r.m, &err), 0);
  memset(&so, 0, sizeof(so));
  so.webhook_bind_address = "127.0.0.1:0";
  so.webhook_cert_dir = dir;
  assert_int_equal(kcr_manager_serve(r.m, &so, &err), 0);
  ws = kcr_manager_webhook_server(r.m);
  assert_non_null(ws);
  assert_int_equal(
      kcr_webhook_server_register_validating(ws, "/validate-configmap", on_validate, NULL), 0);
  assert_int_equal(kcr_webhook_server_register_mutating(ws, "/mutate-configmap", on_mutate, NULL),
                   0);
  pthread_create(&th, NULL, run_main, &r);
  for (int i = 0; i < 300 && !port; i++) {
    port = kcr_manager_webhook_port(r.m);
    if (!port)
      sleep_ms(50);
  }
  assert_true(port > 0);

  snprintf(path, sizeof(path), "%s/tls.crt", dir);
  pem = read_file(path);
  assert_int_equal(kcr_base64_encode(pem, strlen(pem), &ca, NULL), 0);
  yaml = malloc(32768);
  snprintf(yaml, 32768,
           "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n"
           "    kcr-webhook-test: \"%s\"\n---\n"
           "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
           "metadata:\n  name: %s\nwebhooks:\n- name: vconfigmap.kcr.dev\n"
           "  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Fail\n"
           "  timeoutSeconds: 5\n"
           "  namespaceSelector:\n    matchLabels:\n      kcr-webhook-test: \"%s\"\n"
           "  rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n"
           "    operations: [CREATE, UPDATE]\n    resources: [configmaps]\n"
           "  clientConfig:\n    url: https://127.0.0.1:%d/validate-configmap\n"
           "    caBundle: %s\n---\n"
           "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n"
           "metadata:\n  name: %s\nwebhooks:\n- name: mconfigmap.kcr.dev\n"
           "  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Fail\n"
           "  timeoutSeconds: 5\n"
           "  namespaceSelector:\n    matchLabels:\n      kcr-webhook-test: \"%s\"\n"
           "  rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n"
           "    operations: [CREATE]\n    resources: [configmaps]\n"
           "  clientConfig:\n    url: https://127.0.0.1:%d/mutate-configmap\n"
           "    caBundle: %s\n",
           ns, ns, cfgname, ns, port, ca, cfgname, ns, port, ca);
  assert_int_equal(kcr_testenv_kubectl_input(env, apply, yaml, NULL), 0);

  /* The API server picks webhook configurations up through an informer: try
   * until the validating webhook answers. */
  for (int i = 0; i < 100 && !refused; i++) {
    const char *bad[] = {"create", "configmap", "bad", "-n", ns, "--from-literal=forbidden=1",
                         NULL};
    free(out);
    out = NULL;
    if (kcr_testenv_kubectl_combined(env, bad, &out) != 0 && out &&
        strstr(out, "data key \"forbidden\" is not allowed (kcr webhook)"))
      refused = 1;
    else
      sleep_ms(100);
    if (!refused && out && strstr(out, "configmap/bad created")) {
      const char *del[] = {"delete", "configmap", "bad", "-n", ns, NULL};
      char *o2 = NULL;
      kcr_testenv_kubectl(env, del, &o2);
      free(o2);
    }
  }
  print_message("kubectl said: %s", out ? out : "(nothing)\n");
  assert_true(refused);
  assert_non_null(strstr(out, "denied the request"));
  free(out);
  out = NULL;

  /* A ConfigMap that passes gets the mutating webhook's label. */
  {
    const char *good[] = {"create", "configmap", "good", "-n", ns, "--from-literal=a=1", NULL};
    const char *get[] = {"get",
                         "configmap",
                         "good",
                         "-n",
                         ns,
                         "-o",
                         "jsonpath={.metadata.labels.kcr\\.dev/defaulted}",
                         NULL};
    assert_int_equal(kcr_testenv_kubectl(env, good, &out), 0);
    free(out);
    out = NULL;
    assert_int_equal(kcr_testenv_kubectl(env, get, &out), 0);
    assert_string_equal(out, "true");
    free(out);
    out = NULL;
  }
  m = kcr_metrics_find(kcr_manager_metrics(r.m), "controller_runtime_webhook_requests_total");
  assert_non_null(m);
  assert_true(kcr_metric_value(kcr_metric_withv(m, "/validate-configmap", "200", NULL)) >= 2);
  assert_true(kcr_metric_value(kcr_metric_withv(m, "/mutate-configmap", "200", NULL)) >= 1);

  kcr_manager_request_stop(r.m);
  pthread_join(th, NULL);
  assert_int_equal(r.rc, 0);
  kcr_manager_destroy(r.m);
  free(yaml);
  free(pem);
  free(ca);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_webhook_called_by_apiserver),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
