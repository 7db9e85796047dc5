/* SPDX-License-Identifier: MIT */
/*
 * test_kcr_gen_webhook.c: `kcr-gen webhook` (cmd/kcr-gen/webhook.c), webhook
 * configurations from +kubebuilder:webhook markers. The acceptance tests run
 * kubebuilder's own markers, ported to C files under
 * test/unit/data/kcr-gen/kubebuilder (see SOURCE there), and compare the YAML
 * with the config/webhook/manifests.yaml controller-gen wrote for the Go
 * sources: byte for byte, with no normalisation (the writer sorts keys and
 * lays out lists as sigs.k8s.io/yaml does). Then every argument and its
 * default, the patch, the configuration marker, the order, and each bad marker
 * by its exact FILE:LINE message, and an allocation-failure loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gen.h"
#include "kcr/buf.h"
#include "kcr/error.h"
#include "testutil.h"
#include "webhook.h"

#define KB_DIR KCR_TEST_DATA_DIR "/kcr-gen/kubebuilder"

/*
 * run reads the sources (name, text pairs), builds the configurations with
 * labels (may be NULL) and writes their YAML into *yaml (new, free with free),
 * or the message into msg. Returns 0, KCR_ENOMEM when memory ran out, or
 * KCR_EINVAL.
 */
static int run(const char *const *src, size_t n, const json_t *labels, char **yaml, char *msg,
               size_t size) {
  wh_set *s;
  json_t *docs = NULL;
  int rc = 0;
  kcr_buf_t b;
  *yaml = NULL;
  msg[0] = '\0';
  if (wh_set_create(&s)) {
    snprintf(msg, size, "out of memory");
    return KCR_ENOMEM;
  }
  for (size_t k = 0; k < n && rc == 0; k++)
    rc = wh_set_add(s, src[2 * k], src[2 * k + 1], strlen(src[2 * k + 1]), msg, size);
  if (rc == 0)
    rc = wh_set_build(s, labels, &docs, msg, size);
  wh_set_destroy(s);
  if (rc == 0) {
    kcr_buf_init(&b, (size_t)1 << 20);
    for (size_t k = 0; k < json_array_size(docs) && rc == 0; k++)
      rc = gen_yaml_write(&b, json_array_get(docs, k));
    if (rc == 0 && !(*yaml = strdup(kcr_buf_cstr(&b))))
      rc = -1;
    kcr_buf_free(&b);
    json_decref(docs);
    if (rc)
      snprintf(msg, size, "out of memory");
  }
  if (rc == 0)
    return 0;
  return strstr(msg, "out of memory") || strstr(msg, "memory ran out") ? KCR_ENOMEM : KCR_EINVAL;
}

/* golden runs the ported files under KB_DIR and compares with the golden file there. */
static void golden(const char *const *files, size_t n, const char *want_file) {
  const char **src = calloc(2 * n, sizeof(*src));
  char **texts = calloc(n, sizeof(*texts)), *want, *got, msg[512];
  size_t len;
  assert_non_null(src);
  assert_non_null(texts);
  for (size_t k = 0; k < n; k++) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", KB_DIR, files[k]);
    texts[k] = kcr_test_slurp(path, &len);
    src[2 * k] = files[k];
    src[2 * k + 1] = texts[k];
  }
  snprintf(msg, sizeof(msg), "%s/%s", KB_DIR, want_file);
  want = kcr_test_slurp(msg, &len);
  if (run(src, n, NULL, &got, msg, sizeof(msg)))
    fail_msg("%s", msg);
  assert_string_equal(got, want);
  free(got);
  free(want);
  for (size_t k = 0; k < n; k++)
    free(texts[k]);
  free(texts);
  free(src);
}

/* The CronJob tutorial: one defaulting and one validating webhook. */
static void test_kcr_gen_webhook_cronjob(void **state) {
  static const char *const files[] = {"internal/webhook/v1/cronjob_webhook.c"};
  (void)state;
  golden(files, 1, "webhook_manifests.yaml");
}

/* The multiversion tutorial: v2's file first, yet sorted by name (v1, then v2). */
static void test_kcr_gen_webhook_multiversion(void **state) {
  static const char *const files[] = {"multiversion/internal/webhook/v2/cronjob_webhook.c",
                                      "multiversion/internal/webhook/v1/cronjob_webhook.c"};
  (void)state;
  golden(files, 2, "multiversion/webhook_manifests.yaml");
}

/*
 * testdata/project-v4: eleven webhooks over six files, custom paths, the core
 * group written groups="", a kind with only a defaulter.
 */
static void test_kcr_gen_webhook_project_v4(void **state) {
  static const char *const files[] = {
      "project-v4/internal/webhook/v1/sailor_webhook.c",
      "project-v4/internal/webhook/v1/pod_webhook.c",
      "project-v4/internal/webhook/v1/issuer_webhook.c",
      "project-v4/internal/webhook/v1/deployment_webhook.c",
      "project-v4/internal/webhook/v1/captain_webhook.c",
      "project-v4/internal/webhook/v1/admiral_webhook.c",
  };
  (void)state;
  golden(files, 6, "project-v4/webhook_manifests.yaml");
}

/* build_one runs one source text and returns its configurations as JSON (new). */
static json_t *build_one(const char *text, const json_t *labels) {
  wh_set *s;
  json_t *docs = NULL;
  char msg[512];
  assert_int_equal(wh_set_create(&s), 0);
  if (wh_set_add(s, "t.c", text, strlen(text), msg, sizeof(msg)) ||
      wh_set_build(s, labels, &docs, msg, sizeof(msg)))
    fail_msg("%s", msg);
  wh_set_destroy(s);
  return docs;
}

/* json_sq reads JSON written with ' for " (readable in a C string); new. */
static json_t *json_sq(const char *text) {
  char *t = strdup(text);
  json_t *v;
  json_error_t je;
  assert_non_null(t);
  for (char *c = t; *c; c++)
    if (*c == '\'')
      *c = '"';
  v = json_loads(t, 0, &je);
  if (!v)
    fail_msg("want: %s", je.text);
  free(t);
  return v;
}

/*
 * Every argument: case-insensitive words written as the API spells them,
 * verbs upper-cased, core as "", the Service's name, namespace and port, an
 * URL instead, timeoutSeconds (0 is unset), matchPolicy, reinvocationPolicy,
 * webhookVersions=v1, lists as {a,b}, quoted and raw strings, and the comment
 * styles C has; a configuration marker names the mutating configuration, and
 * labels go on both.
 */
static void test_kcr_gen_webhook_arguments(void **state) {
  const char *text =
      "/*\n"
      " * +kubebuilder:webhook:path=/m,mutating=true,failurePolicy=ignore,sideEffects=noneondryrun,"
      "groups=core;apps,resources={pods, deployments},verbs=CREATE;update;Delete;connect,"
      "versions=v1,name=\"m.example.com\",admissionReviewVersions={v1,v1beta1},"
      "matchPolicy=exact,timeoutSeconds=5,reinvocationPolicy=ifneeded,serviceName=hooks,"
      "serviceNamespace=ops,servicePort=8443,webhookVersions=v1\n"
      " */\n"
      "/* +kubebuilder:webhook:url=`https://h.example.com:9443/v`,mutating=false,"
      "failurePolicy=Fail,sideEffects=None,groups=*,resources=*,verbs=*,versions=*,"
      "name=v.example.com,admissionReviewVersions=v1,timeoutSeconds=0,matchPolicy=Equivalent */\n"
      "// +kubebuilder:webhookconfiguration:mutating=true,name=my-mutating\n"
      "int x; // +kubebuilder:webhook:not=a-marker (not at the comment's start)\n"
      "// the text +kubebuilder:webhook:neither=this\n"
      "// +kubebuilder:webhooks:another=marker\n";
  json_t *labels = json_pack("{ss}", "app.kubernetes.io/name", "x");
  json_t *got = build_one(text, labels), *want;
  (void)state;
  want = json_sq(
      "[{'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'MutatingWebhookConfiguration',"
      "  'metadata': {'labels': {'app.kubernetes.io/name': 'x'}, 'name': 'my-mutating'},"
      "  'webhooks': [{'admissionReviewVersions': ['v1', 'v1beta1'],"
      "    'clientConfig': {'service': {'name': 'hooks', 'namespace': 'ops', 'path': '/m',"
      "                                 'port': 8443}},"
      "    'failurePolicy': 'Ignore', 'matchPolicy': 'Exact', 'name': 'm.example.com',"
      "    'reinvocationPolicy': 'IfNeeded',"
      "    'rules': [{'apiGroups': ['', 'apps'], 'apiVersions': ['v1'],"
      "               'operations': ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'],"
      "               'resources': ['pods', 'deployments']}],"
      "    'sideEffects': 'NoneOnDryRun', 'timeoutSeconds': 5}]},"
      " {'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'ValidatingWebhookConfiguration',"
      "  'metadata': {'labels': {'app.kubernetes.io/name': 'x'},"
      "               'name': 'validating-webhook-configuration'},"
      "  'webhooks': [{'admissionReviewVersions': ['v1'],"
      "    'clientConfig': {'url': 'https://h.example.com:9443/v'},"
      "    'failurePolicy': 'Fail', 'matchPolicy': 'Equivalent', 'name': 'v.example.com',"
      "    'rules': [{'apiGroups': ['*'], 'apiVersions': ['*'], 'operations': ['*'],"
      "               'resources': ['*']}],"
      "    'sideEffects': 'None'}]}]");
  assert_non_null(want);
  kcr_test_assert_json_equal(want, got);
  json_decref(got);
  json_decref(want);
  json_decref(labels);
}

/*
 * patch= merges JSON onto the webhook: selectors and matchConditions added,
 * a field replaced (timeoutSeconds) and one removed (null); the result is
 * checked as the API server would (a patched timeout of 31 is refused).
 */
static void test_kcr_gen_webhook_patch(void **state) {
  const char *text =
      "// +kubebuilder:webhook:path=/v,mutating=false,failurePolicy=fail,sideEffects=None,"
      "groups=g,resources=r,verbs=create,versions=v1,name=v.g,admissionReviewVersions=v1,"
      "timeoutSeconds=3,matchPolicy=Exact,"
      "patch=`{\"namespaceSelector\":{\"matchLabels\":{\"hooks\":\"on\"}},\"timeoutSeconds\":25,"
      "\"matchPolicy\":null,\"matchConditions\":[{\"name\":\"n\",\"expression\":\"true\"}]}`\n";
  json_t *got = build_one(text, NULL);
  json_t *hook = json_array_get(json_object_get(json_array_get(got, 0), "webhooks"), 0);
  (void)state;
  assert_int_equal(json_array_size(got), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "kind")),
                      "ValidatingWebhookConfiguration");
  assert_int_equal(json_integer_value(json_object_get(hook, "timeoutSeconds")), 25);
  assert_null(json_object_get(hook, "matchPolicy"));
  assert_string_equal(
      json_string_value(json_object_get(
          json_object_get(json_object_get(hook, "namespaceSelector"), "matchLabels"), "hooks")),
      "on");
  assert_int_equal(json_array_size(json_object_get(hook, "matchConditions")), 1);
  assert_string_equal(json_string_value(json_object_get(hook, "failurePolicy")), "Fail");
  json_decref(got);
}

/* expect_error runs text as t.c and wants exactly msg. */
static void expect_error(const char *text, const char *want) {
  const char *src[] = {"t.c", text};
  char *yaml = NULL, msg[1024];
  int rc = run(src, 1, NULL, &yaml, msg, sizeof(msg));
  if (rc != KCR_EINVAL || strcmp(msg, want) != 0)
    fail_msg("for %s\ngot  (%d) %s\nwant %s", text, rc, msg, want);
  assert_null(yaml);
}

#define OK_ARGS                                                                                    \
  "failurePolicy=fail,sideEffects=None,groups=g,resources=r,verbs=create,versions=v1,"             \
  "admissionReviewVersions=v1"
#define HOOK(extra) "x\n// +kubebuilder:webhook:path=/p,mutating=true,name=a.b," OK_ARGS extra "\n"

/* Each bad marker, by its exact message at FILE:LINE. */
static void test_kcr_gen_webhook_errors(void **state) {
  (void)state;
  expect_error("// +kubebuilder:webhook:path=/p,mutating=true," OK_ARGS "\n",
               "t.c:1: +kubebuilder:webhook: name is required");
  expect_error("// +kubebuilder:webhook\n", "t.c:1: +kubebuilder:webhook: mutating is required");
  expect_error(HOOK(",verb=get"),
               "t.c:2: +kubebuilder:webhook: unknown argument \"verb\" (mutating, failurePolicy, "
               "groups, resources, verbs, versions, name, admissionReviewVersions, matchPolicy, "
               "sideEffects, timeoutSeconds, path, url, serviceName, serviceNamespace, "
               "servicePort, webhookVersions, reinvocationPolicy, patch)");
  expect_error(HOOK(",name=c.d"), "t.c:2: +kubebuilder:webhook: name is given twice");
  expect_error(HOOK(",timeoutSeconds"), "t.c:2: +kubebuilder:webhook: want timeoutSeconds=VALUE");
  expect_error("// +kubebuilder:webhook:path=/p,mutating=yes,name=a," OK_ARGS "\n",
               "t.c:1: mutating: want true or false");
  expect_error(HOOK(",timeoutSeconds=5s"), "t.c:2: timeoutSeconds: want an integer");
  expect_error(HOOK(",servicePort=99999999999"), "t.c:2: servicePort: out of range for int32");
  expect_error(HOOK(",timeoutSeconds=31"), "t.c:2: timeoutSeconds: want 1 to 30 seconds");
  expect_error(HOOK(",url=https://x"),
               "t.c:2: give either path= (the webhook Service's path) or url=, one of them");
  expect_error("// +kubebuilder:webhook:mutating=true,name=a," OK_ARGS "\n",
               "t.c:1: give either path= (the webhook Service's path) or url=, one of them");
  expect_error("// +kubebuilder:webhook:url=https://x,serviceName=s,mutating=true,name=a," OK_ARGS
               "\n",
               "t.c:1: serviceName, serviceNamespace and servicePort go with path=, not url=");
  expect_error(HOOK(",matchPolicy=fuzzy"),
               "t.c:2: matchPolicy: \"fuzzy\" is not one of Exact, Equivalent");
  expect_error(HOOK(",reinvocationPolicy=always"),
               "t.c:2: reinvocationPolicy: \"always\" is not one of Never, IfNeeded");
  expect_error("// +kubebuilder:webhook:path=/p,mutating=true,name=a,failurePolicy=failz,"
               "sideEffects=None,groups=g,resources=r,verbs=create,versions=v1,"
               "admissionReviewVersions=v1\n",
               "t.c:1: failurePolicy: \"failz\" is not one of Ignore, Fail");
  expect_error("// +kubebuilder:webhook:path=/p,mutating=true,name=a,failurePolicy=fail,"
               "groups=g,resources=r,verbs=create,versions=v1,admissionReviewVersions=v1\n",
               "t.c:1: sideEffects is required in admissionregistration.k8s.io/v1 (None or "
               "NoneOnDryRun)");
  expect_error("// +kubebuilder:webhook:path=/p,mutating=true,name=a,failurePolicy=fail,"
               "sideEffects=some,groups=g,resources=r,verbs=create,versions=v1,"
               "admissionReviewVersions=v1\n",
               "t.c:1: sideEffects: \"Some\" is not allowed in admissionregistration.k8s.io/v1 "
               "(None or NoneOnDryRun)");
  expect_error("// +kubebuilder:webhook:path=/p,mutating=true,name=a,failurePolicy=fail,"
               "sideEffects=None,groups=g,resources=r,verbs=create;get,versions=v1,"
               "admissionReviewVersions=v1\n",
               "t.c:1: verbs: \"get\" is not one of create, update, delete, connect, *");
  expect_error("// +kubebuilder:webhook:path=/p,mutating=true,name=a,failurePolicy=fail,"
               "sideEffects=None,groups=g,resources=r,verbs=create,versions=v1,"
               "admissionReviewVersions=\n",
               "t.c:1: admissionReviewVersions: at least one version is required in "
               "admissionregistration.k8s.io/v1");
  expect_error(HOOK(",webhookVersions=v1beta1"),
               "t.c:2: webhookVersions: \"v1beta1\" is not supported (v1)");
  expect_error(
      "// +kubebuilder:webhook:path=/p,mutating=false,name=a,reinvocationPolicy=Never," OK_ARGS
      "\n",
      "t.c:1: reinvocationPolicy is for mutating webhooks only");
  expect_error("// +kubebuilder:webhook:groups={a,b\n",
               "t.c:1: groups: want ',' or '}' in the list");
  expect_error(HOOK(",path=\"/x"), "t.c:2: +kubebuilder:webhook: path is given twice");
  expect_error("// +kubebuilder:webhook:path=\"/x,mutating=true\n",
               "t.c:1: path: the string has no closing \"");
  expect_error("// +kubebuilder:webhook:path=\"/\\x\"\n",
               "t.c:1: path: unsupported escape \\x in a quoted string (\\\" \\\\ \\n \\t \\r)");
  expect_error("// +kubebuilder:webhook:path=/a\xff\n", "t.c:1: path: the value is not UTF-8 text");
  expect_error(HOOK(" }"), "t.c:2: +kubebuilder:webhook: want ',' after admissionReviewVersions's "
                           "value, not \"}\"");
  expect_error(HOOK(",=x"), "t.c:2: +kubebuilder:webhook: want an argument name at \"=x\"");
  expect_error(HOOK(",patch=`{\"objectSelector\":`"),
               "t.c:2: patch: not JSON: unexpected token near end of file (at character 18)");
  expect_error(HOOK(",patch=`[1]`"), "t.c:2: patch: want a JSON object");
  expect_error(HOOK(",patch=`{\"scope\":\"x\"}`"),
               "t.c:2: patch: a mutating webhook has no field \"scope\"");
  expect_error(HOOK(",patch=`{\"rules\":[{\"$patch\":\"delete\"}]}`"),
               "t.c:2: patch: $patch: strategic merge patch directives are not supported");
  expect_error(HOOK(",patch=`{\"sideEffects\":1}`"), "t.c:2: sideEffects: want a string");
  expect_error(HOOK("") "// +kubebuilder:webhook:path=/q,mutating=true,name=a.b," OK_ARGS "\n",
               "t.c:3: the mutating webhook name \"a.b\" is used twice (also at t.c:2)");
  expect_error("// +kubebuilder:webhookconfiguration:mutating=false,name=a\n"
               "/* +kubebuilder:webhookconfiguration:mutating=false */\n",
               "t.c:2: a second validating webhook configuration marker (the first is at t.c:1)");
  expect_error("// +kubebuilder:webhookconfiguration:name=a\n",
               "t.c:1: +kubebuilder:webhookconfiguration: mutating is required");
}

/*
 * A file with a bad marker leaves the set as it was: the markers read before
 * the error in that file are dropped, the other files' kept.
 */
static void test_kcr_gen_webhook_add_undo(void **state) {
  const char *good = "// +kubebuilder:webhook:path=/p,mutating=true,name=a.b," OK_ARGS "\n";
  const char *bad = "// +kubebuilder:webhook:path=/q,mutating=true,name=c.d," OK_ARGS "\n"
                    "// +kubebuilder:webhookconfiguration:mutating=true,name=mine\n"
                    "// +kubebuilder:webhook:name=e\n";
  wh_set *s;
  json_t *docs;
  char msg[256];
  (void)state;
  assert_int_equal(wh_set_create(&s), 0);
  assert_int_equal(wh_set_add(s, "a.c", good, strlen(good), msg, sizeof(msg)), 0);
  assert_int_equal(wh_set_add(s, "b.c", bad, strlen(bad), msg, sizeof(msg)), -1);
  assert_string_equal(msg, "b.c:3: +kubebuilder:webhook: mutating is required");
  assert_int_equal(wh_set_count(s), 1);
  assert_int_equal(wh_set_build(s, NULL, &docs, msg, sizeof(msg)), 0);
  assert_int_equal(json_array_size(docs), 1);
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(json_array_get(docs, 0), "metadata"), "name")),
                      "mutating-webhook-configuration");
  json_decref(docs);
  wh_set_destroy(s);
}

/* A source without markers builds no configuration. */
static void test_kcr_gen_webhook_none(void **state) {
  json_t *docs = build_one("int main(void) { return 0; }\n", NULL);
  (void)state;
  assert_int_equal(json_array_size(docs), 0);
  json_decref(docs);
}

/* run_all is one whole run for the allocation-failure loop. */
static int run_all(const char *const *src, size_t n) {
  char *yaml = NULL, msg[512];
  json_t *labels = json_pack("{ss}", "a", "b");
  int rc;
  if (!labels)
    return KCR_ENOMEM;
  rc = run(src, n, labels, &yaml, msg, sizeof(msg));
  json_decref(labels);
  free(yaml);
  if (rc && rc != KCR_ENOMEM)
    fail_msg("%s", msg);
  return rc;
}

/*
 * Every allocation failing in turn, over the CronJob tutorial's file and one
 * marker with every argument and a patch: each failed run says "out of
 * memory" (never another error), and nothing leaks.
 */
static void test_kcr_gen_webhook_alloc_failure(void **state) {
  size_t len;
  char *text = kcr_test_slurp(KB_DIR "/internal/webhook/v1/cronjob_webhook.c", &len);
  const char *src[] = {
      "c.c", text, "t.c",
      "// +kubebuilder:webhookconfiguration:mutating=true,name=mine\n"
      "// +kubebuilder:webhook:path=/p,mutating=true,name=a.b,matchPolicy=Exact,"
      "timeoutSeconds=3,serviceName=s,serviceNamespace=n,servicePort=1,webhookVersions=v1,"
      "reinvocationPolicy=Never," OK_ARGS ",patch=`{\"objectSelector\":{\"matchLabels\":{\"a\":"
      "\"b\"}},\"timeoutSeconds\":null}`\n"};
  (void)state;
  KCR_TEST_ALLOC_LOOP(run_all(src, 2), (void)0);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kcr_gen_webhook_cronjob),
      cmocka_unit_test(test_kcr_gen_webhook_multiversion),
      cmocka_unit_test(test_kcr_gen_webhook_project_v4),
      cmocka_unit_test(test_kcr_gen_webhook_arguments),
      cmocka_unit_test(test_kcr_gen_webhook_patch),
      cmocka_unit_test(test_kcr_gen_webhook_errors),
      cmocka_unit_test(test_kcr_gen_webhook_add_undo),
      cmocka_unit_test(test_kcr_gen_webhook_none),
      cmocka_unit_test(test_kcr_gen_webhook_alloc_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
