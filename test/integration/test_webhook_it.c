/* SPDX-License-Identifier: MIT */
/*
 * test_webhook_it.c: admission webhooks registered on a manager
 * (kcr_manager_webhook_server), called by the real kube-apiserver through
 * clientConfig.url with a CA bundle (no kube-proxy here): a ConfigMap the
 * validating webhook refuses is refused through kubectl with the webhook's
 * message, and one that passes gets the label the mutating webhook adds (its
 * JSON Patch applied by the API server). The webhook metrics count the calls.
 * Typed webhooks (kcr_webhook_for) on ConfigMap's generated type, at
 * kubebuilder's paths: the defaulter's label reaches the stored object, and
 * the validator refuses a bad update with its message and a warning kubectl
 * shows.
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
#include "kcr/k8s/core_v1.h"
#include "kcr/kcr.h"
#include "kcr_testenv.h"

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static char ns[64], cfgname[64], ns2[64], cfgname2[64], dir[64];

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
  snprintf(ns2, sizeof(ns2), "kcr-twh-%d", (int)getpid());
  snprintf(cfgname2, sizeof(cfgname2), "kcr-it-twh-%d", (int)getpid());
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

/* delete_webhooks deletes the configurations named cfg and the namespace. */
static void delete_webhooks(const char *namespace, const char *cfg) {
  const char *d1[] = {"delete", "validatingwebhookconfiguration", cfg, "--ignore-not-found", NULL};
  const char *d2[] = {"delete", "mutatingwebhookconfiguration", cfg, "--ignore-not-found", NULL};
  const char *d3[] = {"delete", "namespace", namespace, "--wait=false", "--ignore-not-found", NULL};
  const char *const *cmds[] = {d1, d2, d3};
  for (int i = 0; i < 3; i++) {
    char *out = NULL;
    kcr_testenv_kubectl(env, cmds[i], &out);
    free(out);
  }
}

static int group_teardown(void **state) {
  char path[128];
  (void)state;
  delete_webhooks(ns, cfgname);
  delete_webhooks(ns2, cfgname2);
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

/* serving_manager makes r->m with a webhook server on 127.0.0.1:0 over the
 * certificate in dir. */
static void serving_manager(runner_t *r) {
  kcr_manager_options mo;
  kcr_manager_serving_options so;
  kcr_error_t err;
  memset(&mo, 0, sizeof(mo));
  mo.config = config;
  mo.no_signal_handlers = true;
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_create(&mo, &r->m, &err), 0);
  memset(&so, 0, sizeof(so));
  so.webhook_bind_address = "127.0.0.1:0";
  so.webhook_cert_dir = dir;
  assert_int_equal(kcr_manager_serve(r->m, &so, &err), 0);
}

/* run_manager runs r->m on *th and returns its webhook port once bound. */
static int run_manager(runner_t *r, pthread_t *th) {
  int port = 0;
  pthread_create(th, NULL, run_main, r);
  for (int i = 0; i < 300 && !port; i++) {
    port = kcr_manager_webhook_port(r->m);
    if (!port)
      sleep_ms(50);
  }
  assert_true(port > 0);
  return port;
}

/*
 * apply_webhooks creates the namespace, labelled label=namespace, and a
 * validating and a mutating configuration named cfg for ConfigMaps there: the
 * validating one (webhook v<cfg>) for vops at vpath, the mutating one for
 * CREATE at mpath, both on port with dir's certificate as their CA.
 */
static void apply_webhooks(const char *namespace, const char *label, const char *cfg, int port,
                           const char *vops, const char *vpath, const char *mpath) {
  const char *apply[] = {"apply", "-f", "-", NULL};
  char path[128], *pem, *ca = NULL, *yaml = malloc(32768);
  snprintf(path, sizeof(path), "%s/tls.crt", dir);
  pem = read_file(path);
  assert_int_equal(kcr_base64_encode(pem, strlen(pem), &ca, NULL), 0);
  snprintf(yaml, 32768,
           "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n"
           "    %s: \"%s\"\n---\n"
           "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
           "metadata:\n  name: %s\nwebhooks:\n- name: v%s.kcr.dev\n"
           "  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Fail\n"
           "  timeoutSeconds: 5\n"
           "  namespaceSelector:\n    matchLabels:\n      %s: \"%s\"\n"
           "  rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n"
           "    operations: [%s]\n    resources: [configmaps]\n"
           "  clientConfig:\n    url: https://127.0.0.1:%d%s\n"
           "    caBundle: %s\n---\n"
           "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\n"
           "metadata:\n  name: %s\nwebhooks:\n- name: m%s.kcr.dev\n"
           "  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Fail\n"
           "  timeoutSeconds: 5\n"
           "  namespaceSelector:\n    matchLabels:\n      %s: \"%s\"\n"
           "  rules:\n  - apiGroups: [\"\"]\n    apiVersions: [v1]\n"
           "    operations: [CREATE]\n    resources: [configmaps]\n"
           "  clientConfig:\n    url: https://127.0.0.1:%d%s\n"
           "    caBundle: %s\n",
           namespace, label, namespace, cfg, cfg, label, namespace, vops, port, vpath, ca, cfg, cfg,
           label, namespace, port, mpath, ca);
  assert_int_equal(kcr_testenv_kubectl_input(env, apply, yaml, NULL), 0);
  free(yaml);
  free(pem);
  free(ca);
}

static void test_webhook_called_by_apiserver(void **state) {
  runner_t r;
  pthread_t th;
  kcr_webhook_server_t *ws;
  char *out = NULL;
  int port, refused = 0;
  kcr_metric_t *m;
  (void)state;

  serving_manager(&r);
  ws = kcr_manager_webhook_server(r.m);
  assert_non_null(ws);
  assert_int_equal(
      kcr_webhook_server_register_validating(ws, "/validate-configmap", on_validate, NULL), 0);
  assert_int_equal(kcr_webhook_server_register_mutating(ws, "/mutate-configmap", on_mutate, NULL),
                   0);
  port = run_manager(&r, &th);
  apply_webhooks(ns, "kcr-webhook-test", cfgname, port, "CREATE, UPDATE", "/validate-configmap",
                 "/mutate-configmap");

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
}

/* ---- typed webhooks (kcr_webhook_for) on ConfigMap ---- */

static const kcr_gvk CM = {"", "v1", "ConfigMap"};

static const char *cm_value(const kcr_core_v1_config_map_t *cm, const char *key) {
  for (size_t i = 0; cm->has_data && i < cm->data_len; i++)
    if (strcmp(cm->data[i].key, key) == 0)
      return cm->data[i].value;
  return NULL;
}

/* typed_default labels every ConfigMap it is asked about. */
static int typed_default(void *data, const kcr_admission_request *req, void *obj,
                         kcr_error_t *err) {
  kcr_core_v1_config_map_t *cm = obj;
  (void)data;
  (void)req;
  if (kcr_typed_label_set(cm->metadata, "kcr.dev/typed-defaulted", "true") != 0)
    return kcr_error_set(err, KCR_ENOMEM, "out of memory");
  return 0;
}

/* typed_update refuses a change of data "locked", with a warning. */
static int typed_update(void *data, const kcr_admission_request *req, const void *old_obj,
                        const void *new_obj, kcr_admission_response *w, kcr_error_t *err) {
  const char *was = cm_value(old_obj, "locked"), *now = cm_value(new_obj, "locked");
  (void)data;
  (void)req;
  if (!was || (now && strcmp(was, now) == 0))
    return 0;
  kcr_admission_warn(w, "data.locked was \"%s\" (kcr typed webhook)", was);
  return kcr_error_set(err, KCR_EINVAL, "data.locked: field is immutable (kcr typed webhook)");
}

static void test_typed_webhook_called_by_apiserver(void **state) {
  kcr_custom_defaulter d = {typed_default, NULL};
  kcr_custom_validator v = {NULL, typed_update, NULL, NULL};
  kcr_manager_options mo;
  kcr_scheme_t *scheme;
  kcr_error_t err;
  runner_t r;
  pthread_t th;
  char path[128], mpath[128], vpath[128], *out = NULL;
  int port, labelled = 0, refused = 0;
  (void)state;

  assert_int_equal(kcr_scheme_create(&scheme, NULL), 0);
  assert_int_equal(kcr_core_v1_config_map_register(scheme, NULL), 0);
  /* A manager that serves no webhooks: refused with a reason. */
  memset(&mo, 0, sizeof(mo));
  mo.config = config;
  mo.no_signal_handlers = true;
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_create(&mo, &r.m, &err), 0);
  assert_int_equal(kcr_webhook_for(r.m, scheme, &CM, &d, &v, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "serves no webhooks"));
  kcr_manager_destroy(r.m);

  serving_manager(&r);
  kcr_error_clear(&err);
  if (kcr_webhook_for(r.m, scheme, &CM, &d, &v, &err) != 0)
    fail_msg("kcr_webhook_for: %s", err.message);
  assert_int_equal(kcr_webhook_mutate_path(&CM, mpath, sizeof(mpath)), 0);
  assert_int_equal(kcr_webhook_validate_path(&CM, vpath, sizeof(vpath)), 0);
  assert_string_equal(mpath, "/mutate--v1-configmap");
  port = run_manager(&r, &th);
  apply_webhooks(ns2, "kcr-typed-webhook-test", cfgname2, port, "UPDATE", vpath, mpath);

  /* The defaulter: a created ConfigMap gets its label, set on the typed
   * struct, through the JSON Patch kcr computed. The API server picks the
   * configuration up through an informer: try until it does. */
  for (int i = 0; i < 100 && !labelled; i++) {
    char name[32];
    const char *create[] = {"create", "configmap", name, "-n", ns2, "--from-literal=locked=a",
                            NULL};
    const char *get[] = {"get",
                         "configmap",
                         name,
                         "-n",
                         ns2,
                         "-o",
                         "jsonpath={.metadata.labels.kcr\\.dev/typed-defaulted}",
                         NULL};
    snprintf(name, sizeof(name), "cm-%d", i);
    free(out);
    out = NULL;
    assert_int_equal(kcr_testenv_kubectl(env, create, &out), 0);
    free(out);
    out = NULL;
    assert_int_equal(kcr_testenv_kubectl(env, get, &out), 0);
    if (strcmp(out, "true") == 0) {
      labelled = 1;
      snprintf(path, sizeof(path), "%s", name);
    } else {
      sleep_ms(100);
    }
  }
  assert_true(labelled);
  free(out);
  out = NULL;

  /* The validator: changing data.locked is refused with the validator's
   * message, and kubectl shows its warning. */
  for (int i = 0; i < 100 && !refused; i++) {
    char patch[64];
    const char *p[] = {"patch", "configmap", path, "-n", ns2, "--type=merge", "-p", patch, NULL};
    snprintf(patch, sizeof(patch), "{\"data\":{\"locked\":\"b%d\"}}", i);
    free(out);
    out = NULL;
    if (kcr_testenv_kubectl_combined(env, p, &out) != 0 && out &&
        strstr(out, "data.locked: field is immutable (kcr typed webhook)"))
      refused = 1;
    else
      sleep_ms(100);
  }
  print_message("kubectl said: %s", out ? out : "(nothing)\n");
  assert_true(refused);
  assert_non_null(strstr(out, "denied the request"));
  assert_non_null(strstr(out, "Warning: data.locked was \""));
  free(out);
  out = NULL;

  /* Another change passes, and the lock held. */
  {
    const char *p[] = {"patch", "configmap",    path, "-n",
                       ns2,     "--type=merge", "-p", "{\"data\":{\"other\":\"1\"}}",
                       NULL};
    const char *get[] = {"get", "configmap", path, "-n", ns2, "-o", "jsonpath={.data.other}", NULL};
    assert_int_equal(kcr_testenv_kubectl_combined(env, p, &out), 0);
    assert_null(strstr(out, "Warning"));
    free(out);
    out = NULL;
    assert_int_equal(kcr_testenv_kubectl(env, get, &out), 0);
    assert_string_equal(out, "1");
    free(out);
    out = NULL;
  }

  kcr_manager_request_stop(r.m);
  pthread_join(th, NULL);
  assert_int_equal(r.rc, 0);
  kcr_manager_destroy(r.m);
  kcr_scheme_destroy(scheme);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_webhook_called_by_apiserver),
      cmocka_unit_test(test_typed_webhook_called_by_apiserver),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
