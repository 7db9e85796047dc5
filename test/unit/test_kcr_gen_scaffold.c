/* SPDX-License-Identifier: MIT */
/*
 * test_kcr_gen_scaffold.c: kcr-gen's scaffolding (cmd/kcr-gen/scaffold.c).
 * First the text edits the commands are made of (commenting and uncommenting
 * a block, inserting above a marker line), the PROJECT file's resources and
 * the webhook manifests written from them, compared byte for byte with the
 * shape controller-gen gives; then init, create api and create webhook in a
 * temporary directory: the files each writes, the registration in cmd/main.c,
 * the config/default switches each turns on (and only those), the refusals
 * that change nothing, and a failed write that undoes the whole run; a kind
 * made types-first (its annotated header, the CRD made of it: what `make
 * manifests` writes, byte for byte) and one --crd-first. The
 * build and the tests of a scaffolded project are the integration test's
 * (test/integration/test_kcr_gen_scaffold.sh).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crd.h"
#include "gen.h"
#include "kcr/buf.h"
#include "scaffold.h"
#include "testutil.h"

/* ---- text edits ---- */

static void test_kcr_gen_scaffold_comment(void **state) {
  (void)state;
  char *c = gen_text_comment("- a\n  b: 1\n");
  assert_non_null(c);
  assert_string_equal(c, "#- a\n#  b: 1\n");
  free(c);
  c = gen_text_comment("");
  assert_string_equal(c, "");
  free(c);
}

static void test_kcr_gen_scaffold_uncomment(void **state) {
  (void)state;
  const char *text = "resources:\n#- ../crd\n- ../rbac\n#- ../webhook\n";
  char *out = NULL;

  assert_int_equal(gen_text_uncomment(text, "- ../webhook\n", &out), GEN_TEXT_OK);
  assert_string_equal(out, "resources:\n#- ../crd\n- ../rbac\n- ../webhook\n");
  /* switched on already: unchanged */
  char *again = NULL;
  assert_int_equal(gen_text_uncomment(out, "- ../webhook\n", &again), GEN_TEXT_OK);
  assert_string_equal(again, out);
  free(again);
  free(out);
  /* a block of several lines, the first line of the text */
  assert_int_equal(gen_text_uncomment("#- path: p.yaml\n#  target: x\nrest\n",
                                      "- path: p.yaml\n  target: x\n", &out),
                   GEN_TEXT_OK);
  assert_string_equal(out, "- path: p.yaml\n  target: x\nrest\n");
  free(out);
  /* only whole lines: "##- ../crd" is not "- ../crd" commented */
  assert_int_equal(gen_text_uncomment("x ##- ../crd\n", "- ../crd\n", &out), GEN_TEXT_NOTFOUND);
  assert_null(out);
  /* a block only partly there is not found */
  assert_int_equal(
      gen_text_uncomment("#- path: p.yaml\n#  target: y\n", "- path: p.yaml\n  target: x\n", &out),
      GEN_TEXT_NOTFOUND);
}

static void test_kcr_gen_scaffold_insert_before(void **state) {
  (void)state;
  char *out = NULL;
  assert_int_equal(gen_text_insert_before("resources:\n- a.yaml\n# +kcr-gen:scaffold:x\ntail\n",
                                          "+kcr-gen:scaffold:x", "- b.yaml\n", &out),
                   GEN_TEXT_OK);
  assert_string_equal(out, "resources:\n- a.yaml\n- b.yaml\n# +kcr-gen:scaffold:x\ntail\n");
  free(out);
  /* the marker's line keeps its indentation below the inserted lines */
  assert_int_equal(gen_text_insert_before("{\n    /* +m */\n}\n", "+m", "    f,\n", &out),
                   GEN_TEXT_OK);
  assert_string_equal(out, "{\n    f,\n    /* +m */\n}\n");
  free(out);
  /* a whole marker only: "+m:ab" is not "+m:a" */
  assert_int_equal(gen_text_insert_before("# +m:ab\n# +m:a\n", "+m:a", "x\n", &out), GEN_TEXT_OK);
  assert_string_equal(out, "# +m:ab\nx\n# +m:a\n");
  free(out);
  assert_int_equal(gen_text_insert_before("no marker\n", "+m", "x\n", &out), GEN_TEXT_NOTFOUND);
  assert_null(out);
}

/* ---- PROJECT and the webhook manifests ---- */

static const char project_text[] = "# comment\n"
                                   "layout: kcr.dev/v1\n"
                                   "domain: example.com\n"
                                   "projectName: widgets\n"
                                   "resources:\n"
                                   "  - group: demo\n"
                                   "    version: v1\n"
                                   "    kind: Widget\n"
                                   "    plural: widgets\n"
                                   "    namespaced: true\n"
                                   "  - group: ops\n"
                                   "    version: v1alpha1\n"
                                   "    kind: Admiral\n"
                                   "    plural: admirales\n"
                                   "    namespaced: false\n";

static void test_kcr_gen_scaffold_project(void **state) {
  (void)state;
  gen_resource r[4];
  size_t n = 0;
  char *out = NULL;

  assert_int_equal(gen_project_resources(project_text, r, 4, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(r[0].kind, "Widget");
  assert_string_equal(r[1].group, "ops");
  assert_string_equal(r[1].version, "v1alpha1");
  assert_string_equal(r[1].plural, "admirales");
  assert_true(r[0].namespaced);
  assert_false(r[1].namespaced);
  assert_false(r[0].defaulting || r[0].validation);
  assert_int_equal(gen_project_resources(project_text, r, 1, &n), -1);

  /* webhooks go at the end of their kind's entry, not the file's */
  r[0].defaulting = true;
  assert_int_equal(gen_project_add_webhooks(project_text, &r[0], NULL, 0, &out), GEN_TEXT_OK);
  assert_non_null(strstr(out, "    namespaced: true\n"
                              "    webhooks:\n"
                              "      defaulting: true\n"
                              "      webhookVersion: v1\n"
                              "  - group: ops\n"));
  gen_resource again[4];
  assert_int_equal(gen_project_resources(out, again, 4, &n), 0);
  assert_int_equal(n, 2);
  assert_true(again[0].defaulting);
  assert_false(again[0].validation);
  assert_false(again[1].defaulting);
  assert_string_equal(again[1].kind, "Admiral");
  free(out);

  gen_resource missing = {.group = "demo", .version = "v2", .kind = "Widget"};
  assert_int_equal(gen_project_add_webhooks(project_text, &missing, NULL, 0, &out),
                   GEN_TEXT_NOTFOUND);
  assert_null(out);

  /* a conversion webhook with its spokes, read back */
  static const char *const spokes[] = {"v2", "v3"};
  r[1].conversion = true;
  assert_int_equal(gen_project_add_webhooks(project_text, &r[1], spokes, 2, &out), GEN_TEXT_OK);
  assert_non_null(strstr(out, "    namespaced: false\n"
                              "    webhooks:\n"
                              "      conversion: true\n"
                              "      spoke:\n"
                              "      - v2\n"
                              "      - v3\n"
                              "      webhookVersion: v1\n"));
  assert_int_equal(gen_project_resources(out, again, 4, &n), 0);
  assert_true(again[1].conversion);
  assert_false(again[1].defaulting || again[1].validation);
  /* a webhook added to a kind that has one joins its block, spokes kept */
  char *merged = NULL;
  gen_resource validation = r[1];
  validation.conversion = false;
  validation.validation = true;
  assert_int_equal(gen_project_add_webhooks(out, &validation, NULL, 0, &merged), GEN_TEXT_OK);
  assert_non_null(strstr(merged, "    webhooks:\n"
                                 "      conversion: true\n"
                                 "      spoke:\n"
                                 "      - v2\n"
                                 "      - v3\n"
                                 "      validation: true\n"
                                 "      webhookVersion: v1\n"));
  assert_int_equal(gen_project_resources(merged, again, 4, &n), 0);
  assert_true(again[1].conversion && again[1].validation);
  free(merged);
  free(out);
}

/* controller-gen's manifests.yaml for a defaulting and validating Widget and
 * a validating Admiral: one configuration of each kind, webhooks sorted by
 * name ("vadmiral-..." before "vwidget-..."). */
static const char want_manifests[] = "---\n"
                                     "apiVersion: admissionregistration.k8s.io/v1\n"
                                     "kind: MutatingWebhookConfiguration\n"
                                     "metadata:\n"
                                     "  name: mutating-webhook-configuration\n"
                                     "webhooks:\n"
                                     "- admissionReviewVersions:\n"
                                     "  - v1\n"
                                     "  clientConfig:\n"
                                     "    service:\n"
                                     "      name: webhook-service\n"
                                     "      namespace: system\n"
                                     "      path: /mutate-demo-example-com-v1-widget\n"
                                     "  failurePolicy: Fail\n"
                                     "  name: mwidget-v1.kb.io\n"
                                     "  rules:\n"
                                     "  - apiGroups:\n"
                                     "    - demo.example.com\n"
                                     "    apiVersions:\n"
                                     "    - v1\n"
                                     "    operations:\n"
                                     "    - CREATE\n"
                                     "    - UPDATE\n"
                                     "    resources:\n"
                                     "    - widgets\n"
                                     "  sideEffects: None\n"
                                     "---\n"
                                     "apiVersion: admissionregistration.k8s.io/v1\n"
                                     "kind: ValidatingWebhookConfiguration\n"
                                     "metadata:\n"
                                     "  name: validating-webhook-configuration\n"
                                     "webhooks:\n"
                                     "- admissionReviewVersions:\n"
                                     "  - v1\n"
                                     "  clientConfig:\n"
                                     "    service:\n"
                                     "      name: webhook-service\n"
                                     "      namespace: system\n"
                                     "      path: /validate-ops-example-com-v1alpha1-admiral\n"
                                     "  failurePolicy: Fail\n"
                                     "  name: vadmiral-v1alpha1.kb.io\n"
                                     "  rules:\n"
                                     "  - apiGroups:\n"
                                     "    - ops.example.com\n"
                                     "    apiVersions:\n"
                                     "    - v1alpha1\n"
                                     "    operations:\n"
                                     "    - CREATE\n"
                                     "    - UPDATE\n"
                                     "    resources:\n"
                                     "    - admirales\n"
                                     "  sideEffects: None\n"
                                     "- admissionReviewVersions:\n"
                                     "  - v1\n"
                                     "  clientConfig:\n"
                                     "    service:\n"
                                     "      name: webhook-service\n"
                                     "      namespace: system\n"
                                     "      path: /validate-demo-example-com-v1-widget\n"
                                     "  failurePolicy: Fail\n"
                                     "  name: vwidget-v1.kb.io\n"
                                     "  rules:\n"
                                     "  - apiGroups:\n"
                                     "    - demo.example.com\n"
                                     "    apiVersions:\n"
                                     "    - v1\n"
                                     "    operations:\n"
                                     "    - CREATE\n"
                                     "    - UPDATE\n"
                                     "    resources:\n"
                                     "    - widgets\n"
                                     "  sideEffects: None\n";

static void test_kcr_gen_scaffold_manifests(void **state) {
  (void)state;
  gen_resource r[2] = {
      {.group = "demo",
       .version = "v1",
       .kind = "Widget",
       .plural = "widgets",
       .defaulting = true,
       .validation = true},
      {.group = "ops",
       .version = "v1alpha1",
       .kind = "Admiral",
       .plural = "admirales",
       .validation = true},
  };
  char *m = gen_webhook_manifests("example.com", r, 2);
  assert_non_null(m);
  assert_string_equal(m, want_manifests);
  free(m);
  /* no defaulting webhook: no MutatingWebhookConfiguration at all */
  r[0].defaulting = false;
  m = gen_webhook_manifests("example.com", r, 2);
  assert_null(strstr(m, "Mutating"));
  assert_non_null(strstr(m, "name: vwidget-v1.kb.io"));
  free(m);
  m = gen_webhook_manifests("example.com", r, 0);
  assert_string_equal(m, "");
  free(m);
}

/* ---- the commands, in a temporary directory ---- */

/* `kcr-gen create api` for Widget's second version. */
static const char *const widget_v2[] = {"create", "api",    "--group", "demo", "--version",
                                        "v2",     "--kind", "Widget",  NULL};

/* `kcr-gen create webhook` for Widget, defaulting only. */
static const char *const wh[] = {"create", "webhook", "--group", "demo",         "--version",
                                 "v1",     "--kind",  "Widget",  "--defaulting", NULL};

typedef struct proj {
  char dir[64];
  char path[256];
} proj;

/* file: DIR/rel's content (new), or NULL when there is none. */
static char *file(proj *p, const char *rel) {
  snprintf(p->path, sizeof(p->path), "%s/w/%s", p->dir, rel);
  FILE *f = fopen(p->path, "rb");
  if (!f)
    return NULL;
  char *buf = calloc(1, 1 << 16);
  assert_non_null(buf);
  size_t n = fread(buf, 1, (1 << 16) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static bool has(proj *p, const char *rel, const char *needle) {
  char *t = file(p, rel);
  bool yes = t && strstr(t, needle);
  free(t);
  return yes;
}

/* stored: the storage: value of version in a generated CRD's text (keys
 * sorted, so it follows the version's name, schema and served), or "". */
static const char *stored(proj *p, const char *crd, const char *version) {
  static char out[8];
  char needle[64], *t = file(p, crd), *at, *next, *st;
  snprintf(needle, sizeof(needle), "\n  - name: %s\n", version);
  out[0] = '\0';
  if (t && (at = strstr(t, needle)) != NULL) {
    next = strstr(at + 1, "\n  - name: ");
    st = strstr(at, "\n    storage: ");
    if (st && (!next || st < next))
      sscanf(st, "\n    storage: %7s", out);
  }
  free(t);
  return out;
}

/* assert_generated: DIR/w/crd is, byte for byte, what `kcr-gen crd` (so
 * `make manifests`) makes of the n type headers. */
static void assert_generated(proj *p, const char *crd, const char *const *headers, size_t n) {
  crd_set *set;
  json_t *crds;
  kcr_buf_t b;
  char msg[1024];
  char *want = file(p, crd);
  assert_non_null(want);
  assert_int_equal(crd_set_create(&set), 0);
  for (size_t i = 0; i < n; i++) {
    char *text = file(p, headers[i]);
    assert_non_null(text);
    if (crd_set_add(set, headers[i], text, strlen(text), msg, sizeof(msg)))
      fail_msg("%s", msg);
    free(text);
  }
  if (crd_set_build(set, &crds, msg, sizeof(msg)))
    fail_msg("%s", msg);
  assert_int_equal(json_array_size(crds), 1);
  kcr_buf_init(&b, (size_t)1 << 24);
  assert_int_equal(gen_yaml_write(&b, json_array_get(crds, 0)), 0);
  assert_string_equal(kcr_buf_cstr(&b), want);
  kcr_buf_free(&b);
  json_decref(crds);
  crd_set_destroy(set);
  free(want);
}

/* run: the command (words, NULL-terminated after the command name) in DIR/w. */
static int run(proj *p, const char *const *words) {
  char *argv[32];
  int argc = 0;
  char where[128];
  snprintf(where, sizeof(where), "%s/w", p->dir);
  for (int i = 1; words[i]; i++)
    argv[argc++] = (char *)words[i];
  argv[argc++] = where;
  argv[argc] = NULL;
  if (strcmp(words[0], "init") == 0)
    return gen_scaffold_init(argc, argv);
  return gen_scaffold_create(argc, argv);
}

static int setup_proj(void **state) {
  proj *p = calloc(1, sizeof(*p));
  assert_non_null(p);
  snprintf(p->dir, sizeof(p->dir), "/tmp/kcr-gen-scaffold.XXXXXX");
  assert_non_null(mkdtemp(p->dir));
  setenv("KCR_GEN_CLANG_FORMAT", "none", 1);
  static const char *const init[] = {"init", "--domain", "example.com", NULL};
  static const char *const api[] = {"create", "api",    "--group", "demo", "--version",
                                    "v1",     "--kind", "Widget",  NULL};
  static const char *const api2[] = {"create", "api",    "--group", "demo",        "--version",
                                     "v1",     "--kind", "Gizmo",   "--crd-first", NULL};
  assert_int_equal(run(p, init), 0);
  assert_int_equal(run(p, api), 0);
  assert_int_equal(run(p, api2), 0);
  *state = p;
  return 0;
}

static int teardown_proj(void **state) {
  proj *p = *state;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", p->dir);
  assert_int_equal(system(cmd), 0);
  free(p);
  return 0;
}

/* init --namespaced: the manager's RBAC is a Role and a RoleBinding in its own
 * namespace, which it watches (WATCH_NAMESPACE from the Pod's), and the
 * manifests target writes the markers' rules into that Role (the integration
 * test runs it). */
static void test_kcr_gen_scaffold_init_namespaced(void **state) {
  proj *p = calloc(1, sizeof(*p));
  static const char *const init[] = {"init", "--domain", "example.com", "--namespaced", NULL};
  (void)state;
  assert_non_null(p);
  snprintf(p->dir, sizeof(p->dir), "/tmp/kcr-gen-scaffold.XXXXXX");
  assert_non_null(mkdtemp(p->dir));
  setenv("KCR_GEN_CLANG_FORMAT", "none", 1);
  assert_int_equal(run(p, init), 0);
  assert_true(has(p, "config/rbac/role.yaml",
                  "kind: Role\nmetadata:\n  name: manager-role\n  namespace: system\nrules: []\n"));
  assert_true(has(p, "config/rbac/role_binding.yaml", "kind: RoleBinding\n"));
  assert_true(has(p, "config/rbac/role_binding.yaml",
                  "  name: manager-rolebinding\n  namespace: system\nroleRef:\n"
                  "  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n"));
  assert_true(has(p, "config/manager/manager.yaml",
                  "        - name: WATCH_NAMESPACE\n          valueFrom:\n            fieldRef:\n"
                  "              fieldPath: metadata.namespace\n"));
  assert_true(has(p, "CMakeLists.txt", "rbac --role-name manager-role --namespace system -o "));
  assert_true(has(p, "PROJECT", "\nnamespaced: true\n"));
  /* the leader election Role is one either way; metrics auth stays cluster-wide */
  assert_true(has(p, "config/rbac/metrics_auth_role.yaml", "kind: ClusterRole\n"));
  teardown_proj((void **)&p);
}

/* init and create api: go/v4's config/, with ../crd switched on by create api. */
static void test_kcr_gen_scaffold_init_and_api(void **state) {
  proj *p = *state;
  static const char *const files[] = {
      "config/default/metrics_service.yaml",
      "config/default/manager_metrics_patch.yaml",
      "config/default/cert_metrics_manager_patch.yaml",
      "config/rbac/metrics_auth_role.yaml",
      "config/rbac/metrics_auth_role_binding.yaml",
      "config/rbac/metrics_reader_role.yaml",
      "config/prometheus/monitor.yaml",
      "config/prometheus/monitor_tls_patch.yaml",
      "config/network-policy/allow-metrics-traffic.yaml",
      "config/rbac/widget_admin_role.yaml",
      "config/rbac/widget_editor_role.yaml",
      "config/rbac/gizmo_viewer_role.yaml",
      "config/crd/kustomizeconfig.yaml",
      ".clang-format",
      ".clang-tidy",
      "test/e2e/e2e_test.sh",
  };
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    char *t = file(p, files[i]);
    if (!t)
      fail_msg("no %s", files[i]);
    free(t);
  }
  /* the types-first Widget's controller uses its header's own structs, coded
   * by kcr-gen codecs; the --crd-first Gizmo's the types of its CRD */
  assert_true(has(p, "api/types.cmake",
                  "kcr_gen_codecs(widget_codecs INCLUDE_ROOT ${CMAKE_CURRENT_SOURCE_DIR}\n"
                  "  HEADERS ${CMAKE_CURRENT_SOURCE_DIR}/api/v1/widget_types.h)\n"
                  "list(APPEND PROJECT_TYPES widget_codecs)\n"));
  assert_true(has(p, "api/types.cmake", "PREFIX widget VERSIONS v1)\n"));
  assert_true(has(p, "api/types.cmake", "PREFIX gizmo VERSIONS v1)\n"));
  assert_false(has(p, "api/types.cmake", "gizmo_codecs"));
  assert_true(has(p, "internal/controller/widget_controller.c", "#include \"widget_codecs.h\"\n"));
  assert_true(has(p, "internal/controller/widget_controller.c", "  widget_t *obj = NULL,"));
  assert_true(has(p, "internal/controller/widget_controller.c",
                  "  if (obj->status.observed_generation != generation) {\n"));
  assert_true(has(p, "test/widget_controller_test.c", "CHECK(obj->spec.foo != NULL"));
  assert_true(has(p, "internal/controller/gizmo_controller.c", "#include \"gizmo_v1.h\"\n"));
  assert_true(has(p, "internal/controller/gizmo_controller.c", "  gizmo_v1_t *obj = NULL,"));
  /* no webhook parts before create webhook */
  char *t = file(p, "config/webhook/service.yaml");
  assert_null(t);
  assert_true(has(p, "config/default/kustomization.yaml", "\n- ../crd\n"));
  assert_true(has(p, "config/default/kustomization.yaml", "\n#- ../webhook\n"));
  assert_true(has(p, "config/default/kustomization.yaml", "\n#replacements:\n"));
  assert_true(has(p, "config/crd/kustomization.yaml",
                  "- bases/demo.example.com_widgets.yaml\n- bases/demo.example.com_gizmos.yaml\n"
                  "# +kcr-gen:scaffold:crd-resources\n"));
  assert_true(has(p, "config/rbac/kustomization.yaml",
                  "- widget_admin_role.yaml\n- widget_editor_role.yaml\n"
                  "- widget_viewer_role.yaml\n- gizmo_admin_role.yaml\n"));
  assert_true(has(p, "config/rbac/widget_editor_role.yaml", "  name: widget-editor-role\n"));
  assert_true(has(p, "config/rbac/role.yaml",
                  "kind: ClusterRole\nmetadata:\n  name: manager-role\n"
                  "rules: []\n"));
  assert_true(has(p, "config/rbac/role_binding.yaml", "kind: ClusterRoleBinding\n"));
  assert_false(has(p, "config/manager/manager.yaml", "WATCH_NAMESPACE"));
  assert_false(has(p, "PROJECT", "namespaced: true\nresources:"));
  assert_true(has(p, "cmd/main.c", ".metrics_secure = true"));
  assert_true(has(p, "cmd/main.c", ".metrics_bind_address = \"0\""));
}

/* create webhook: the typed webhook files, main.c, config/ and PROJECT. */
static void test_kcr_gen_scaffold_webhook(void **state) {
  proj *p = *state;
  static const char *const wh2[] = {"create", "webhook",   "--group",
                                    "demo",   "--version", "v1",
                                    "--kind", "Gizmo",     "--programmatic-validation",
                                    NULL};
  const char *kd = "config/default/kustomization.yaml";

  assert_int_equal(run(p, wh), 0);
  assert_true(has(p, "internal/webhook/v1/widget_webhook.c",
                  "// +kubebuilder:webhook:path=/mutate-demo-example-com-v1-widget,mutating=true,"
                  "failurePolicy=fail,sideEffects=None,groups=demo.example.com,resources=widgets,"
                  "verbs=create;update,versions=v1,name=mwidget-v1.kb.io,"
                  "admissionReviewVersions=v1\n"));
  assert_false(has(p, "internal/webhook/v1/widget_webhook.c", "validate"));
  assert_true(has(p, "internal/webhook/v1/widget_webhook.c",
                  "kcr_webhook_for(mgr, scheme, &gvk, &defaulter, NULL, err)"));
  assert_true(has(p, "internal/webhook/v1/widget_webhook_test.c", "test_default()"));
  /* on the header's own struct, the controller's */
  assert_true(has(p, "internal/webhook/v1/widget_webhook.c", "  widget_t *o = obj;\n"));
  assert_true(has(p, "internal/webhook/v1/widget_webhook.c", "  if (o->spec.foo == NULL &&"));
  assert_true(has(p, "internal/webhook/v1/widget_webhook.h", "#include \"widget_codecs.h\"\n"));
  assert_true(has(p, "cmd/main.c", "#include \"v1/widget_webhook.h\"\n/* +kcr-gen:scaffold"));
  assert_true(has(p, "cmd/main.c", "    widget_v1_webhook_setup,\n    /* +kcr-gen:scaffold"));
  /* the switches of a defaulting webhook, and not the validating CA's */
  assert_true(has(p, kd, "\n- ../webhook\n"));
  assert_true(has(p, kd, "\n- ../certmanager\n"));
  assert_true(
      has(p, kd, "\n- path: manager_webhook_patch.yaml\n  target:\n    kind: Deployment\n"));
  assert_true(has(p, kd, "\nreplacements:\n"));
  assert_true(has(p, kd, "\n    - select:\n        kind: MutatingWebhookConfiguration\n"));
  assert_true(has(p, kd, "\n#    - select:\n#        kind: ValidatingWebhookConfiguration\n"));
  assert_true(has(p, kd, "\n#- ../prometheus\n"));
  assert_true(has(p, kd, "\n#- ../network-policy\n"));
  assert_true(has(p, "config/network-policy/kustomization.yaml",
                  "- allow-metrics-traffic.yaml\n- allow-webhook-traffic.yaml\n"));
  assert_true(has(p, "PROJECT",
                  "    kind: Widget\n    plural: widgets\n    namespaced: true\n"
                  "    webhooks:\n      defaulting: true\n"));

  /* a second kind: the validating CA goes on, the manifests hold both */
  assert_int_equal(run(p, wh2), 0);
  assert_true(has(p, kd, "\n    - select:\n        kind: ValidatingWebhookConfiguration\n"));
  assert_true(has(p, "cmd/main.c", "    widget_v1_webhook_setup,\n    gizmo_v1_webhook_setup,\n"));
  assert_true(has(p, "internal/webhook/v1/gizmo_webhook.c",
                  "  if (o->spec != NULL && o->spec->foo != NULL && o->spec->foo[0] == '\\0')"));
  char *m = file(p, "config/webhook/manifests.yaml");
  assert_non_null(m);
  assert_non_null(strstr(m, "name: mwidget-v1.kb.io"));
  assert_non_null(strstr(m, "name: vgizmo-v1.kb.io"));
  assert_null(strstr(m, "name: vwidget-v1.kb.io"));
  assert_null(strstr(m, "name: mgizmo-v1.kb.io"));
  free(m);
  /* the network policy is listed once */
  char *np = file(p, "config/network-policy/kustomization.yaml");
  assert_non_null(np);
  const char *once = strstr(np, "allow-webhook-traffic");
  assert_non_null(once);
  assert_null(strstr(once + 1, "allow-webhook-traffic"));
  free(np);
}

/* create api for a second version, then create webhook --conversion: the
 * version joins the CRD and the types, the hub registers its spokes. */
static void test_kcr_gen_scaffold_conversion(void **state) {
  proj *p = *state;
  static const char *const conv[] = {"create",       "webhook", "--group", "demo",
                                     "--version",    "v1",      "--kind",  "Widget",
                                     "--conversion", "--spoke", "v2",      NULL};
  static const char *const other[] = {"create", "api",    "--group", "ops", "--version",
                                      "v2",     "--kind", "Widget",  NULL};
  static const char *const bad_spoke[] = {"create",       "webhook", "--group", "demo",
                                          "--version",    "v1",      "--kind",  "Gizmo",
                                          "--conversion", "--spoke", "v9",      NULL};
  const char *crd = "config/crd/bases/demo.example.com_widgets.yaml";

  static const char *const hdrs[] = {"api/v1/widget_types.h", "api/v2/widget_types.h"};

  assert_int_equal(run(p, other), 1); /* the kind's C names are per project */
  assert_int_equal(run(p, widget_v2), 0);
  /* types-first: v2 gets its header, served and not stored; the CRD is made
   * again from both */
  assert_true(has(p, hdrs[0], "// +kubebuilder:storageversion\n"));
  assert_false(has(p, hdrs[1], "+kubebuilder:storageversion"));
  assert_string_equal(stored(p, crd, "v1"), "true");
  assert_string_equal(stored(p, crd, "v2"), "false");
  assert_generated(p, crd, hdrs, 2);
  /* v1 stays coded from its header; v2, whose header has the same C names,
   * joins the CRD's types */
  assert_true(has(p, "api/types.cmake", "/api/v1/widget_types.h)\n"));
  assert_true(has(p, "api/types.cmake", "PREFIX widget VERSIONS v1 v2)\n"));
  assert_true(has(p, "config/samples/kustomization.yaml", "- demo_v2_widget.yaml\n"));
  assert_true(has(p, "PROJECT", "  - group: demo\n    version: v2\n    kind: Widget\n"));
  char *t = file(p, "internal/controller/widget_controller.c");
  assert_non_null(t); /* the v1 controller stays the kind's one */
  free(t);
  assert_int_equal(run(p, widget_v2), 1);

  assert_int_equal(run(p, bad_spoke), 1);
  assert_int_equal(run(p, conv), 0);
  assert_true(has(p, "internal/webhook/v1/widget_conversion.c",
                  "int widget_v2_convert_to_hub(void *data, const void *spoke, void **hub,"));
  assert_true(has(p, "internal/webhook/v1/widget_conversion.c",
                  "{\"v2\", widget_v2_convert_to_hub, widget_v2_convert_from_hub, NULL}"));
  assert_true(has(p, "internal/webhook/v1/widget_conversion_test.c", "test_v2()"));
  /* the hub is v1's header type, the spoke v2's from the CRD */
  assert_true(has(p, "internal/webhook/v1/widget_conversion.c", "  widget_t *h = NULL;\n"));
  assert_true(has(p, "internal/webhook/v1/widget_conversion.c", "  widget_v2_t *s = NULL;\n"));
  assert_true(has(p, "internal/webhook/v1/widget_conversion.c",
                  "  if ((rc = widget_v2_register(scheme, err)) != 0)\n"));
  t = file(p, "internal/webhook/v1/widget_webhook.c");
  assert_null(t); /* no admission webhook was asked for */
  assert_true(has(p, "cmd/main.c", "#include \"v1/widget_conversion.h\"\n"));
  assert_true(has(p, "cmd/main.c", "    widget_v1_conversion_setup,\n"));
  assert_true(has(p, "config/crd/patches/webhook_in_widgets.yaml", "      path: /convert\n"));
  assert_true(has(p, "config/crd/kustomization.yaml",
                  "\npatches:\n- path: patches/webhook_in_widgets.yaml\n"
                  "# +kcr-gen:scaffold:crd-patches\n"));
  assert_true(has(p, "config/default/kustomization.yaml",
                  "    - select:\n        kind: CustomResourceDefinition\n"
                  "        name: widgets.demo.example.com\n"));
  assert_true(has(p, "PROJECT", "      conversion: true\n      spoke:\n      - v2\n"));
  /* the hub (v1) stays the version stored */
  assert_string_equal(stored(p, crd, "v1"), "true");
  assert_string_equal(stored(p, crd, "v2"), "false");
  assert_generated(p, crd, hdrs, 2);
}

/* --conversion with the newer version as the hub of a --crd-first kind: it
 * becomes the one stored, edited in the CRD YAML. */
static void test_kcr_gen_scaffold_conversion_hub_stored(void **state) {
  proj *p = *state;
  static const char *const v2[] = {"create", "api",    "--group", "demo", "--version",
                                   "v2",     "--kind", "Gizmo",   NULL};
  static const char *const conv[] = {"create",       "webhook", "--group", "demo",
                                     "--version",    "v2",      "--kind",  "Gizmo",
                                     "--conversion", "--spoke", "v1",      NULL};
  const char *crd = "config/crd/bases/demo.example.com_gizmos.yaml";
  assert_int_equal(run(p, v2), 0);
  assert_int_equal(run(p, conv), 0);
  assert_true(has(p, crd, "    - name: v1\n      served: true\n      storage: false\n"));
  assert_true(has(p, crd, "    - name: v2\n      served: true\n      storage: true\n"));
  assert_true(has(p, "internal/webhook/v2/gizmo_conversion.c", "int gizmo_v1_convert_to_hub("));
}

/* --conversion with v2 as the hub of a types-first kind: the storageversion
 * marker moves to v2's header, and the CRD follows. */
static void test_kcr_gen_scaffold_types_hub_stored(void **state) {
  proj *p = *state;
  static const char *const conv[] = {"create",       "webhook", "--group", "demo",
                                     "--version",    "v2",      "--kind",  "Widget",
                                     "--conversion", "--spoke", "v1",      NULL};
  static const char *const hdrs[] = {"api/v1/widget_types.h", "api/v2/widget_types.h"};
  const char *crd = "config/crd/bases/demo.example.com_widgets.yaml";
  assert_int_equal(run(p, widget_v2), 0);
  /* every version of a types-first kind has its header: without v1's, refused */
  char hdr[300], away[310];
  snprintf(hdr, sizeof(hdr), "%s/w/%s", p->dir, hdrs[0]);
  snprintf(away, sizeof(away), "%s.away", hdr);
  assert_int_equal(rename(hdr, away), 0);
  assert_int_equal(run(p, conv), 1);
  assert_int_equal(rename(away, hdr), 0);
  assert_int_equal(run(p, conv), 0);
  assert_false(has(p, hdrs[0], "+kubebuilder:storageversion"));
  assert_true(
      has(p, hdrs[1], "// +kubebuilder:storageversion\n// +kubebuilder:object:root=true\n"));
  assert_string_equal(stored(p, crd, "v1"), "false");
  assert_string_equal(stored(p, crd, "v2"), "true");
  assert_generated(p, crd, hdrs, 2);
}

/* snapshot: every file's content under DIR/w, for "nothing changed". */
static char *snapshot(proj *p) {
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "cd %s/w && find . -type f | sort | xargs cat | cksum", p->dir);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  char *out = calloc(1, 128);
  assert_non_null(out);
  assert_non_null(fgets(out, 128, f));
  assert_int_equal(pclose(f), 0);
  return out;
}

/* refusals: each exits before writing anything */
static void test_kcr_gen_scaffold_webhook_refusals(void **state) {
  proj *p = *state;
  static const char *const unknown[] = {"create", "webhook", "--group", "demo",         "--version",
                                        "v2",     "--kind",  "Widget",  "--defaulting", NULL};
  static const char *const none[] = {"create", "webhook", "--group", "demo", "--version",
                                     "v1",     "--kind",  "Widget",  NULL};
  static const char *const conv[] = {"create", "webhook", "--group", "demo",         "--version",
                                     "v1",     "--kind",  "Widget",  "--conversion", NULL};
  char *before = snapshot(p);
  assert_int_equal(run(p, unknown), 1);
  assert_int_equal(run(p, none), 2);
  assert_int_equal(run(p, conv), 2);
  assert_int_equal(run(p, wh), 0);
  char *after_one = snapshot(p);
  assert_string_not_equal(before, after_one);
  assert_int_equal(run(p, wh), 1); /* a defaulting webhook there already */
  char *after = snapshot(p);
  assert_string_equal(after_one, after);
  free(before);
  free(after_one);
  free(after);
}

/* assert_refused: the command exits 1 and changes no file. */
static void assert_refused(proj *p, const char *const *words) {
  char *before = snapshot(p);
  assert_int_equal(run(p, words), 1);
  char *after = snapshot(p);
  assert_string_equal(before, after);
  free(before);
  free(after);
}

/*
 * create api writes a kind types-first: its header with kubebuilder's markers
 * (the plural, scope and kind the C names cannot say), and the CRD made of
 * it; --crd-first writes the CRD and no header. A header kcr-gen cannot read
 * stops a later create api with its FILE:LINE:COL, nothing written.
 */
static void test_kcr_gen_scaffold_types_first(void **state) {
  proj *p = *state;
  static const char *const route[] = {"create",    "api",     "--group",          "net",
                                      "--version", "v1beta1", "--kind",           "HTTPRoute",
                                      "--plural",  "routes",  "--cluster-scoped", NULL};
  static const char *const widget_h[] = {"api/v1/widget_types.h"};
  static const char *const route_h[] = {"api/v1beta1/http_route_types.h"};
  const char *route_crd = "config/crd/bases/net.example.com_routes.yaml";
  char *t;

  assert_true(has(p, widget_h[0], "// +groupName=demo.example.com\n"));
  assert_true(has(p, widget_h[0],
                  "// +kubebuilder:object:root=true\n"
                  "// +kubebuilder:subresource:status\n"
                  "// +kubebuilder:storageversion\n\n"
                  "// Widget is the Schema for the widgets API.\n"));
  assert_true(has(p, widget_h[0], "  char *foo;\n} widget_spec_t;\n"));
  assert_true(has(p, widget_h[0], "  KCR_LIST(kcr_meta_v1_condition_t) conditions;\n"));
  assert_generated(p, "config/crd/bases/demo.example.com_widgets.yaml", widget_h, 1);
  /* Gizmo is --crd-first: the scaffolded CRD, no header */
  assert_null(t = file(p, "api/v1/gizmo_types.h"));
  assert_true(has(p, "config/crd/bases/demo.example.com_gizmos.yaml",
                  "# +kcr-gen:scaffold:crd-versions\n"));

  assert_int_equal(run(p, route), 0);
  assert_true(has(p, route_h[0],
                  "// +kubebuilder:resource:path=routes,scope=Cluster\n"
                  "// +kcr:kind=HTTPRoute\n"));
  assert_true(has(p, route_crd, "    kind: HTTPRoute\n"));
  assert_true(has(p, route_crd, "  scope: Cluster\n"));
  assert_generated(p, route_crd, route_h, 1);

  /* --crd-first for a new version of a types-first kind: refused, nothing written */
  static const char *const v2_crd_first[] = {"create",      "api", "--group", "demo",
                                             "--version",   "v2",  "--kind",  "Widget",
                                             "--crd-first", NULL};
  assert_refused(p, v2_crd_first);

  /* a header kcr-gen cannot read: refused, with where, and nothing written */
  snprintf(p->path, sizeof(p->path), "%s/w/api/v1/widget_types.h", p->dir);
  FILE *f = fopen(p->path, "a");
  assert_non_null(f);
  fputs("// +kubebuilder:validation:Minimun=1\ntypedef int32_t bad_t;\n", f);
  fclose(f);
  assert_refused(p, widget_v2);
}

/* put: DIR/rel's content made text. */
static void put(proj *p, const char *rel, const char *text) {
  snprintf(p->path, sizeof(p->path), "%s/w/%s", p->dir, rel);
  FILE *f = fopen(p->path, "wb");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

/* put_edit: DIR/rel with its first from made to (which must be there). */
static void put_edit(proj *p, const char *rel, const char *from, const char *to) {
  char *t = file(p, rel), *at, *out;
  assert_non_null(t);
  assert_non_null(at = strstr(t, from));
  size_t size = strlen(t) + strlen(to) + 1;
  out = calloc(1, size);
  assert_non_null(out);
  snprintf(out, size, "%.*s%s%s", (int)(at - t), t, to, at + strlen(from));
  put(p, rel, out);
  free(out);
  free(t);
}

/*
 * create webhook adds the type of admission webhook a kind's file lacks (either
 * order), keeping what the user wrote there; a type the file has, or a file
 * whose setup line was changed by hand, is refused with nothing written.
 */
static void test_kcr_gen_scaffold_webhook_add_type(void **state) {
  proj *p = *state;
  static const char *const val[] = {"create", "webhook",   "--group",
                                    "demo",   "--version", "v1",
                                    "--kind", "Widget",    "--programmatic-validation",
                                    NULL};
  static const char *const gval[] = {"create", "webhook",   "--group",
                                     "demo",   "--version", "v1",
                                     "--kind", "Gizmo",     "--programmatic-validation",
                                     NULL};
  static const char *const gdef[] = {"create", "webhook", "--group", "demo",         "--version",
                                     "v1",     "--kind",  "Gizmo",   "--defaulting", NULL};
  static const char *const both[] = {
      "create", "webhook", "--group", "demo",         "--version",
      "v1",     "--kind",  "Widget",  "--defaulting", "--programmatic-validation",
      NULL};
  const char *c = "internal/webhook/v1/widget_webhook.c",
             *h = "internal/webhook/v1/widget_webhook.h",
             *t = "internal/webhook/v1/widget_webhook_test.c";
  const char *user = "\n/* the user's own helper */\nint widget_user_helper(void) { return 42; }\n";

  /* defaulting, then the user's code, then validation added */
  assert_int_equal(run(p, wh), 0);
  put_edit(p, c, "  return 0;\n}\n", "  return 0; /* the user's default */\n}\n");
  char *text = file(p, c);
  assert_non_null(text);
  size_t tl = strlen(text);
  text = realloc(text, tl + strlen(user) + 1);
  assert_non_null(text);
  memcpy(text + tl, user, strlen(user) + 1);
  put(p, c, text);
  free(text);
  assert_int_equal(run(p, val), 0);
  assert_true(has(p, c, "  return 0; /* the user's default */\n}\n"));
  assert_true(has(p, c, user));
  assert_true(has(p, c, "name=vwidget-v1.kb.io,admissionReviewVersions=v1\n"));
  assert_true(has(p, c,
                  "      .validate_delete = widget_v1_webhook_validate_delete};\n"
                  "  return kcr_webhook_for(mgr, scheme, &gvk, &defaulter, &validator, err);\n"));
  text = file(p, c);
  assert_non_null(text);
  assert_true(strstr(text, "int widget_v1_webhook_validate_delete(") <
              strstr(text, "int widget_v1_webhook_setup("));
  free(text);
  assert_true(has(p, h, "kcr_error_t *err);\n\n#endif\n"));
  assert_true(has(p, h, "int widget_v1_webhook_validate_create("));
  assert_true(has(p, t, "static int test_validate(void) {"));
  assert_true(has(p, t,
                  "  if (test_default() != 0)\n    return 1;\n"
                  "  if (test_validate() != 0)\n    return 1;\n  printf(\"ok\\n\");\n"));
  assert_true(has(p, "PROJECT",
                  "    webhooks:\n      defaulting: true\n      validation: true\n"
                  "      webhookVersion: v1\n"));
  assert_true(has(p, "config/default/kustomization.yaml",
                  "\n    - select:\n        kind: ValidatingWebhookConfiguration\n"));
  assert_true(has(p, "config/webhook/manifests.yaml", "name: vwidget-v1.kb.io"));
  assert_true(has(p, "config/webhook/manifests.yaml", "name: mwidget-v1.kb.io"));
  text = file(p, "cmd/main.c");
  assert_non_null(text); /* the setup is listed once */
  const char *once = strstr(text, "    widget_v1_webhook_setup,\n");
  assert_non_null(once);
  assert_null(strstr(once + 8, "widget_v1_webhook_setup"));
  free(text);
  /* a type the file has: refused, whether asked alone or with the other */
  assert_refused(p, wh);
  assert_refused(p, val);
  assert_refused(p, both);

  /* validation, then defaulting, on the CRD's type; a setup changed by hand
   * is refused until it is put back */
  assert_int_equal(run(p, gval), 0);
  const char *gc = "internal/webhook/v1/gizmo_webhook.c";
  put_edit(p, gc, "&gvk, NULL, &validator, err)", "&gvk, NULL, &validator,\n err)");
  assert_refused(p, gdef);
  put_edit(p, gc, "&gvk, NULL, &validator,\n err)", "&gvk, NULL, &validator, err)");
  assert_int_equal(run(p, gdef), 0);
  assert_true(
      has(p, gc, "  return kcr_webhook_for(mgr, scheme, &gvk, &defaulter, &validator, err);\n"));
  assert_true(has(p, gc,
                  "  const kcr_custom_defaulter defaulter = {.default_object = "
                  "gizmo_v1_webhook_default};\n  return kcr_webhook_for("));
  assert_true(has(p, gc, "int gizmo_v1_webhook_default(void *data,"));
  assert_true(has(p, "internal/webhook/v1/gizmo_webhook_test.c",
                  "  if (test_validate() != 0)\n    return 1;\n"
                  "  if (test_default() != 0)\n    return 1;\n"));
  assert_true(has(p, "config/webhook/manifests.yaml", "name: mgizmo-v1.kb.io"));
  assert_true(has(p, "config/default/kustomization.yaml",
                  "\n    - select:\n        kind: MutatingWebhookConfiguration\n"));
}

/* a write that fails undoes the run: new files gone, edited ones as before */
static void test_kcr_gen_scaffold_webhook_undo(void **state) {
  proj *p = *state;
  char blocker[256];
  /* config/certmanager as a file: the first write below it fails */
  snprintf(blocker, sizeof(blocker), "%s/w/config/certmanager", p->dir);
  FILE *f = fopen(blocker, "w");
  assert_non_null(f);
  fclose(f);
  char *before = snapshot(p);
  assert_int_equal(run(p, wh), 1);
  char *after = snapshot(p);
  assert_string_equal(before, after);
  char *t = file(p, "internal/webhook/v1/widget_webhook.c");
  assert_null(t);
  assert_false(has(p, "cmd/main.c", "widget_v1_webhook_setup"));
  free(before);
  free(after);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kcr_gen_scaffold_comment),
      cmocka_unit_test(test_kcr_gen_scaffold_uncomment),
      cmocka_unit_test(test_kcr_gen_scaffold_insert_before),
      cmocka_unit_test(test_kcr_gen_scaffold_project),
      cmocka_unit_test(test_kcr_gen_scaffold_manifests),
      cmocka_unit_test(test_kcr_gen_scaffold_init_namespaced),
      cmocka_unit_test_setup_teardown(test_kcr_gen_scaffold_init_and_api, setup_proj,
                                      teardown_proj),
      cmocka_unit_test_setup_teardown(test_kcr_gen_scaffold_webhook, setup_proj, teardown_proj),
      cmocka_unit_test_setup_teardown(test_kcr_gen_scaffold_conversion, setup_proj, teardown_proj),
      cmocka_unit_test_setup_teardown(test_kcr_gen_scaffold_conversion_hub_stored, setup_proj,
                                      teardown_proj),
      cmocka_unit_test_setup_teardown(test_kcr_gen_scaffold_types_hub_stored, setup_proj,
                                      teardown_proj),
      cmocka_unit_test_setup_teardown(test_kcr_gen_scaffold_types_first, setup_proj, teardown_proj),
      cmocka_unit_test_setup_teardown(test_kcr_gen_scaffold_webhook_refusals, setup_proj,
                                      teardown_proj),
      cmocka_unit_test_setup_teardown(test_kcr_gen_scaffold_webhook_add_type, setup_proj,
                                      teardown_proj),
      cmocka_unit_test_setup_teardown(test_kcr_gen_scaffold_webhook_undo, setup_proj,
                                      teardown_proj),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
