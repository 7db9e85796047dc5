/* SPDX-License-Identifier: MIT */
/*
 * test_kcr_gen_roundtrip_it.c: kcr-gen's types against real objects. An App,
 * a Deployment (and the ReplicaSet's Pods the controller manager makes of
 * it), a Service, a ConfigMap and a bare Pod are created on the local control
 * plane; each is read back as the API server's own JSON (kubectl get --raw),
 * decoded with the generated type, encoded again, and compared with what was
 * read as bytes (both dumped with sorted keys): managedFields, status,
 * defaults and all. Every member the server sent must be known to the type
 * (kcr_unknown is NULL at the top), so the committed documents
 * (cmd/kcr-gen/openapi/k8s.json) really are this server's.
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

#include <jansson.h>

#include "app_v1alpha1.h"
#include "app_v1beta1.h"
#include "kcr/k8s/apps_v1.h"
#include "kcr/k8s/core_v1.h"
#include "kcr_testenv.h"

static kcr_testenv_t *env;
static char ns[64];

static const char manifest[] =
    "apiVersion: apps/v1\n"
    "kind: Deployment\n"
    "metadata: {name: web, labels: {app: web}, annotations: {note: \"<b>&</b>\"}}\n"
    "spec:\n"
    "  replicas: 2\n"
    "  selector: {matchLabels: {app: web}}\n"
    "  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: \"50%\"}}\n"
    "  template:\n"
    "    metadata: {labels: {app: web}}\n"
    "    spec:\n"
    "      containers:\n"
    "      - name: nginx\n"
    "        image: nginx:1.27\n"
    "        ports: [{containerPort: 80, name: http}]\n"
    "        env: [{name: A, value: \"1\"}, {name: B, valueFrom: {fieldRef: {fieldPath: "
    "metadata.name}}}]\n"
    "        resources: {limits: {cpu: 500m, memory: 64Mi}, requests: {cpu: \"0.1\"}}\n"
    "        readinessProbe: {httpGet: {path: /, port: http}}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Service\n"
    "metadata: {name: web}\n"
    "spec: {selector: {app: web}, ports: [{port: 80, targetPort: http, name: http}]}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: ConfigMap\n"
    "metadata: {name: cfg}\n"
    "data: {index.html: \"<h1>hi</h1>\\n\", empty: \"\"}\n"
    "binaryData: {blob: AAEC}\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata: {name: bare}\n"
    "spec:\n"
    "  containers: [{name: c, image: busybox, command: [sleep, \"3600\"]}]\n"
    "  volumes: [{name: v, configMap: {name: cfg, defaultMode: 0644}}]\n"
    "  tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]\n";

/*
 * The base CRD does not serve v1beta1 (only config/default does, behind the
 * conversion webhook). A copy under a group of its own, rt.kcr.dev, serves
 * both versions and stores v1beta1, so that a v1beta1 App is a real object of
 * this server (pruned, defaulted) without the webhook and without changing the
 * App CRD other tests use.
 */
static const char beta_group[] = "rt.kcr.dev";
static const char beta_app[] =
    "apiVersion: rt.kcr.dev/v1beta1\n"
    "kind: App\n"
    "metadata: {name: beta, labels: {tier: web}, annotations: {note: \"<b>&</b>\"}}\n"
    "spec:\n"
    "  image: nginx:1.27\n"
    "  service: {port: 8080, portName: web}\n"
    "  env: [{name: A, value: \"1\"}, {name: B}]\n"
    "  config: {index.html: \"<h1>hi</h1>\\n\"}\n"
    "  resources: {requests: {cpu: \"0.1\", memory: 64Mi}, limits: {memory: 128Mi}}\n";

static int beta_crd(const char *src) {
  char path[600], *text = NULL, *out = NULL;
  json_t *crd, *ver;
  json_error_t je;
  size_t i;
  int rc = -1;
  snprintf(path, sizeof path, "%s/config/crd/bases/kcr.dev_apps.yaml", src);
  {
    const char *const show[] = {"create", "--dry-run=client", "-o", "json", "-f", path, NULL};
    if (kcr_testenv_kubectl(env, show, &out) != 0)
      return -1;
  }
  if (!(crd = json_loads(out, 0, &je)))
    goto done;
  json_object_set_new(json_object_get(crd, "metadata"), "name", json_string("apps.rt.kcr.dev"));
  json_object_set_new(json_object_get(crd, "spec"), "group", json_string(beta_group));
  json_array_foreach(json_object_get(json_object_get(crd, "spec"), "versions"), i, ver) {
    bool beta = strcmp(json_string_value(json_object_get(ver, "name")), "v1beta1") == 0;
    json_object_set_new(ver, "served", json_true());
    json_object_set_new(ver, "storage", json_boolean(beta));
  }
  if (!(text = json_dumps(crd, JSON_COMPACT)))
    goto done;
  {
    const char *const apply[] = {"apply", "-f", "-", NULL};
    const char *const app[] = {"-n", ns, "apply", "-f", "-", NULL};
    if (kcr_testenv_kubectl_input(env, apply, text, NULL) != 0 ||
        kcr_testenv_wait_established(env, "crd/apps.rt.kcr.dev") != 0)
      goto done;
    /* Discovery may lag the Established condition by a moment. */
    for (int tries = 0; tries < 50; tries++) {
      if ((rc = kcr_testenv_kubectl_input(env, app, beta_app, NULL)) == 0)
        break;
      struct timespec ts = {0, 200 * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
done:
  free(text);
  free(out);
  json_decref(crd);
  return rc;
}

static int setup(void **state) {
  char path[600];
  const char *src;
  (void)state;
  if (kcr_testenv_start(&env) != 0)
    return -1;
  src = kcr_testenv_source_dir();
  snprintf(ns, sizeof ns, "kcr-gen-it-%ld", (long)getpid());
  {
    const char *const mkns[] = {"create", "namespace", ns, NULL};
    const char *const apply[] = {"-n", ns, "apply", "-f", "-", NULL};
    if (kcr_testenv_kubectl(env, mkns, NULL) != 0 ||
        kcr_testenv_kubectl_input(env, apply, manifest, NULL) != 0)
      return -1;
  }
  snprintf(path, sizeof path, "%s/config/crd/bases/kcr.dev_apps.yaml", src);
  {
    const char *const crd[] = {"apply", "-f", path, NULL};
    if (kcr_testenv_kubectl(env, crd, NULL) != 0 ||
        kcr_testenv_wait_established(env, "crd/apps.kcr.dev") != 0)
      return -1;
  }
  if (beta_crd(src) != 0)
    return -1;
  snprintf(path, sizeof path, "%s/config/samples/kcr_v1alpha1_app.yaml", src);
  {
    const char *const app[] = {"-n", ns, "apply", "-f", path, NULL};
    if (kcr_testenv_kubectl(env, app, NULL) != 0)
      return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (env) {
    const char *const rmns[] = {"delete", "namespace", ns, "--wait=false", NULL};
    const char *const rmcrd[] = {"delete", "crd", "apps.rt.kcr.dev", "--wait=false", NULL};
    (void)kcr_testenv_kubectl(env, rmns, NULL);
    (void)kcr_testenv_kubectl(env, rmcrd, NULL);
    kcr_testenv_stop(env);
    env = NULL;
  }
  return 0;
}

/* raw GETs path from the API server and parses it (new). */
static json_t *raw(const char *path) {
  const char *const get[] = {"get", "--raw", path, NULL};
  char *out = NULL;
  json_error_t je;
  json_t *j;
  int rc = kcr_testenv_kubectl(env, get, &out);
  if (rc != 0)
    fail_msg("kubectl get --raw %s exited %d", path, rc);
  if (!(j = json_loads(out, 0, &je)))
    fail_msg("%s: %s", path, je.text);
  free(out);
  return j;
}

typedef int (*dec_fn)(const json_t *, void **, kcr_error_t *, void *);
typedef int (*enc_fn)(const void *, json_t **, kcr_error_t *, void *);
typedef void (*free_fn)(void *, void *);

/* round_trip decodes obj, encodes it again and wants the same sorted bytes. */
static void round_trip(const json_t *obj, dec_fn dec, enc_fn enc, free_fn fr) {
  void *v = NULL;
  json_t *out = NULL;
  char *want, *got;
  kcr_error_t err;
  kcr_error_clear(&err);
  if (dec(obj, &v, &err, NULL) != 0)
    fail_msg("decode: %s", err.message);
  /* every typed value starts with its kcr_unknown member's peers; the top
   * level must have none: the type knows all that this server sends */
  if (enc(v, &out, &err, NULL) != 0)
    fail_msg("encode: %s", err.message);
  want = json_dumps(obj, JSON_SORT_KEYS | JSON_COMPACT);
  got = json_dumps(out, JSON_SORT_KEYS | JSON_COMPACT);
  assert_non_null(want);
  assert_non_null(got);
  if (strcmp(want, got) != 0) {
    /* the whole objects would be cut short in the message: name the first
     * byte that differs and show what is around it on both sides */
    size_t at = 0;
    while (want[at] && want[at] == got[at])
      at++;
    size_t from = at > 120 ? at - 120 : 0;
    fail_msg("round trip differs at byte %zu:\n in: ...%.240s\nout: ...%.240s", at, want + from,
             got + from);
  }
  print_message("round trip: %zu bytes of %s %s\n", strlen(want),
                json_string_value(json_object_get(obj, "kind")),
                json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
  free(want);
  free(got);
  json_decref(out);
  fr(v, NULL);
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_kcr_gen_roundtrip_builtin(void **state) {
  char path[256];
  json_t *j, *pods = NULL;
  (void)state;
  snprintf(path, sizeof path, "/apis/apps/v1/namespaces/%s/deployments/web", ns);
  j = raw(path);
  {
    kcr_apps_v1_deployment_t *d = NULL;
    assert_int_equal(kcr_apps_v1_deployment_decode(j, &d, NULL), 0);
    assert_null(d->kcr_unknown);
    assert_null(d->spec->kcr_unknown);
    assert_null(d->spec->template->spec->containers[0].kcr_unknown);
    assert_true(d->spec->strategy->rolling_update->max_unavailable.is_string);
    assert_false(d->spec->strategy->rolling_update->max_surge.is_string);
    kcr_apps_v1_deployment_free(d);
  }
  round_trip(j, kcr_apps_v1_deployment_scheme_decode, kcr_apps_v1_deployment_scheme_encode,
             kcr_apps_v1_deployment_scheme_free);
  json_decref(j);
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/services/web", ns);
  j = raw(path);
  round_trip(j, kcr_core_v1_service_scheme_decode, kcr_core_v1_service_scheme_encode,
             kcr_core_v1_service_scheme_free);
  json_decref(j);
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/configmaps/cfg", ns);
  j = raw(path);
  round_trip(j, kcr_core_v1_config_map_scheme_decode, kcr_core_v1_config_map_scheme_encode,
             kcr_core_v1_config_map_scheme_free);
  json_decref(j);
  /* the bare Pod and the Deployment's two (made by the ReplicaSet controller) */
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
  for (int i = 0; i < 300; i++) {
    json_decref(pods);
    pods = raw(path);
    if (json_array_size(json_object_get(pods, "items")) >= 3)
      break;
    pause_ms(100);
  }
  assert_true(json_array_size(json_object_get(pods, "items")) >= 3);
  {
    size_t i;
    json_t *pod;
    json_array_foreach(json_object_get(pods, "items"), i, pod) {
      /* a list's items lack apiVersion and kind; a GET of each has them */
      char one[320];
      json_t *p;
      snprintf(one, sizeof one, "%s/%s", path,
               json_string_value(json_object_get(json_object_get(pod, "metadata"), "name")));
      p = raw(one);
      round_trip(p, kcr_core_v1_pod_scheme_decode, kcr_core_v1_pod_scheme_encode,
                 kcr_core_v1_pod_scheme_free);
      json_decref(p);
    }
  }
  json_decref(pods);
}

static void test_kcr_gen_roundtrip_app(void **state) {
  char path[256];
  json_t *j;
  app_v1alpha1_t *app = NULL;
  (void)state;
  snprintf(path, sizeof path, "/apis/kcr.dev/v1alpha1/namespaces/%s/apps/app-sample", ns);
  j = raw(path);
  assert_int_equal(app_v1alpha1_decode(j, &app, NULL), 0);
  assert_string_equal(app->spec->image, "nginx:1.27");
  assert_null(app->kcr_unknown);
  app_v1alpha1_free(app);
  round_trip(j, app_v1alpha1_scheme_decode, app_v1alpha1_scheme_encode, app_v1alpha1_scheme_free);
  json_decref(j);
}

/* v1beta1, the version config/default serves: spec.service instead of spec.port. */
static void test_kcr_gen_roundtrip_app_v1beta1(void **state) {
  char path[256];
  json_t *j;
  app_v1beta1_t *app = NULL;
  (void)state;
  snprintf(path, sizeof path, "/apis/%s/v1beta1/namespaces/%s/apps/beta", beta_group, ns);
  j = raw(path);
  assert_int_equal(app_v1beta1_decode(j, &app, NULL), 0);
  assert_string_equal(app->spec->image, "nginx:1.27");
  assert_non_null(app->spec->service);
  assert_int_equal(app->spec->service->port, 8080);
  assert_string_equal(app->spec->service->port_name, "web");
  assert_null(app->kcr_unknown);
  assert_null(app->spec->kcr_unknown);
  app_v1beta1_free(app);
  round_trip(j, app_v1beta1_scheme_decode, app_v1beta1_scheme_encode, app_v1beta1_scheme_free);
  json_decref(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kcr_gen_roundtrip_builtin),
      cmocka_unit_test(test_kcr_gen_roundtrip_app),
      cmocka_unit_test(test_kcr_gen_roundtrip_app_v1beta1),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
