/* SPDX-License-Identifier: MIT */
/*
 * test_app_desired.c: the App's desired children (Deployment, Service,
 * ConfigMap) against JSON fixtures in data/operator, the config hash, ownership,
 * the directory entry, up-to-date checks and merges, and allocation failures.
 * The functions come from kcr-operator's library (target kop), as the binary
 * links them.
 */
#include <string.h>

#include "kcr/common.h"
#include "kcr/meta.h"
#include "testutil.h"

#include "app/app_desired.h"

#define FIXTURE(name) KCR_TEST_DATA_DIR "/operator/" name

static json_t *load_file(const char *path) {
  json_error_t e;
  json_t *j = json_load_file(path, 0, &e);
  if (!j) {
    fail_msg("%s:%d: %s", path, e.line, e.text);
  }
  return j;
}

static json_t *load(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  if (!j) {
    fail_msg("%s", e.text);
  }
  return j;
}

/* typed decodes an App fixture (kop_app_decode: checked) into a new typed App. */
static app_v1alpha1_t *typed(const json_t *app) {
  app_v1alpha1_t *a = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  if (kop_app_decode(app, &a, &err) != 0) {
    fail_msg("decode: %s", err.message);
  }
  return a;
}

/* desired_json builds child kind i (kop_app_children) of app and encodes it (*out new or NULL). */
static int desired_json(size_t i, const json_t *app, json_t **out, kcr_error_t *err) {
  const kop_app_child_kind *k = &kop_app_children[i];
  app_v1alpha1_t *a = NULL;
  void *v = NULL;
  int rc;
  *out = NULL;
  if ((rc = kop_app_decode(app, &a, err)) == 0 && (rc = k->desired(a, &v, err)) == 0 && v) {
    rc = k->encode(v, out, err);
  }
  if (v) {
    k->release(v);
  }
  app_v1alpha1_free(a);
  return rc;
}

#define DEPLOYMENT 0
#define SERVICE 1
#define CONFIGMAP 2
#define desired_deployment_json(app, out, err) desired_json(DEPLOYMENT, app, out, err)
#define desired_service_json(app, out, err) desired_json(SERVICE, app, out, err)
#define desired_configmap_json(app, out, err) desired_json(CONFIGMAP, app, out, err)

/*
 * update applies app onto the child have (JSON, as read) of kind i:
 * *after the result as JSON (new; may be NULL: not wanted), returns whether it
 * changed, -1 on error.
 */
static int update(size_t i, const json_t *app, const json_t *have, json_t **after) {
  const kop_app_child_kind *k = &kop_app_children[i];
  app_v1alpha1_t *a = typed(app);
  void *h = NULL, *v = NULL;
  bool changed = false;
  int rc;
  kcr_error_t err;
  kcr_error_clear(&err);
  rc = k->decode(have, &h, &err);
  if (rc == 0) {
    rc = kop_app_child_update(k, a, h, &v, &changed, &err);
  }
  if (rc == 0 && after) {
    rc = k->encode(v, after, &err);
  }
  if (rc != 0) {
    print_error("update: %s\n", err.message);
  }
  if (h) {
    k->release(h);
  }
  if (v) {
    k->release(v);
  }
  app_v1alpha1_free(a);
  return rc != 0 ? -1 : changed;
}

/* meta decodes obj's metadata into a new typed ObjectMeta. */
static kcr_meta_v1_object_meta_t *meta(const json_t *obj) {
  kcr_meta_v1_object_meta_t *m = NULL;
  assert_int_equal(kcr_meta_v1_object_meta_decode(json_object_get(obj, "metadata"), &m, NULL), 0);
  return m;
}

static void test_app_desired_deployment_full(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *want = load_file(FIXTURE("deployment_full.json"));
  json_t *got = NULL;
  json_t *ann;
  (void)state;
  ann = json_object_get(
      json_object_get(json_object_get(json_object_get(want, "spec"), "template"), "metadata"),
      "annotations");
  json_object_set_new(ann, KOP_APP_CONFIG_HASH_ANNOTATION, json_string("44fd9f329b1ca9cc"));
  assert_int_equal(desired_deployment_json(app, &got, NULL), 0);
  kcr_test_assert_json_equal(want, got);
  json_decref(got);
  json_decref(want);
  json_decref(app);
}

static void test_app_desired_deployment_minimal(void **state) {
  json_t *app = load_file(FIXTURE("app_minimal.json"));
  json_t *want = load_file(FIXTURE("deployment_minimal.json"));
  json_t *got = NULL;
  (void)state;
  assert_int_equal(desired_deployment_json(app, &got, NULL), 0);
  kcr_test_assert_json_equal(want, got);
  json_decref(got);
  json_decref(want);
  json_decref(app);
}

static void test_app_desired_replicas_zero_stays_zero(void **state) {
  json_t *app = load("{\"metadata\":{\"name\":\"z\",\"namespace\":\"n\",\"uid\":\"u\"},"
                     "\"spec\":{\"image\":\"i\",\"replicas\":0}}");
  json_t *got = NULL;
  (void)state;
  assert_int_equal(desired_deployment_json(app, &got, NULL), 0);
  assert_true(json_is_integer(kcr_meta_path(got, "spec.replicas")));
  assert_int_equal(json_integer_value(kcr_meta_path(got, "spec.replicas")), 0);
  json_decref(got);
  json_decref(app);
}

static void test_app_desired_service(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *min = load_file(FIXTURE("app_minimal.json"));
  json_t *want = load_file(FIXTURE("service_full.json"));
  json_t *got = NULL;
  (void)state;
  assert_int_equal(desired_service_json(app, &got, NULL), 0);
  kcr_test_assert_json_equal(want, got);
  json_decref(got);
  got = (json_t *)1;
  assert_int_equal(desired_service_json(min, &got, NULL), 0);
  assert_null(got); /* no port, no Service */
  json_decref(want);
  json_decref(min);
  json_decref(app);
}

static void test_app_desired_configmap(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *min = load_file(FIXTURE("app_minimal.json"));
  json_t *want = load_file(FIXTURE("configmap_full.json"));
  json_t *got = NULL;
  (void)state;
  assert_int_equal(desired_configmap_json(app, &got, NULL), 0);
  kcr_test_assert_json_equal(want, got);
  json_decref(got);
  got = (json_t *)1;
  assert_int_equal(desired_configmap_json(min, &got, NULL), 0);
  assert_null(got);
  /* An empty config is no config (Go's len(map) == 0). */
  json_object_set_new(json_object_get(min, "spec"), "config", json_object());
  {
    app_v1alpha1_t *m = typed(min);
    assert_false(kop_app_has_config(m));
    app_v1alpha1_free(m);
  }
  assert_int_equal(desired_configmap_json(min, &got, NULL), 0);
  assert_null(got);
  json_decref(want);
  json_decref(min);
  json_decref(app);
}

/* raw decodes an App without checking it (the hash needs only the spec). */
static app_v1alpha1_t *raw(const char *text) {
  json_t *j = load(text);
  app_v1alpha1_t *a = NULL;
  assert_int_equal(app_v1alpha1_decode(j, &a, NULL), 0);
  json_decref(j);
  return a;
}

static void test_app_desired_config_hash_stable(void **state) {
  app_v1alpha1_t *a = raw("{\"spec\":{\"image\":\"i\",\"config\":{\"a\":\"1\",\"b\":\"2\"}}}");
  app_v1alpha1_t *b = raw("{\"spec\":{\"image\":\"i\",\"config\":{\"b\":\"2\",\"a\":\"1\"}}}");
  app_v1alpha1_t *c = raw("{\"spec\":{\"image\":\"i\",\"config\":{\"a\":\"1\",\"b\":\"3\"}}}");
  app_v1alpha1_t *none = raw("{\"spec\":{\"image\":\"i\"}}");
  app_v1alpha1_t *esc =
      raw("{\"spec\":{\"image\":\"i\",\"config\":{\"q\\\"/\":\"\\n\\u0001\u00e9\"}}}");
  char ha[KOP_APP_CONFIG_HASH_LEN + 1], hb[KOP_APP_CONFIG_HASH_LEN + 1];
  char hc[KOP_APP_CONFIG_HASH_LEN + 1], hn[KOP_APP_CONFIG_HASH_LEN + 1];
  char he[KOP_APP_CONFIG_HASH_LEN + 1];
  (void)state;
  assert_int_equal(kop_app_config_hash(a, ha, NULL), 0);
  assert_int_equal(kop_app_config_hash(b, hb, NULL), 0);
  assert_int_equal(kop_app_config_hash(c, hc, NULL), 0);
  assert_int_equal(kop_app_config_hash(none, hn, NULL), 0);
  assert_int_equal(strlen(ha), KOP_APP_CONFIG_HASH_LEN);
  assert_string_equal(ha, hb);
  assert_string_not_equal(ha, hc);
  assert_string_equal(ha, "21f76dfbfe6dfe21"); /* sha256({"a":"1","b":"2"}), as before */
  assert_string_equal(hn, "44136fa355b3678a"); /* sha256("{}") */
  /* escaped as jansson writes it: {"q\"/":"\n\u0001é"} */
  assert_int_equal(kop_app_config_hash(esc, he, NULL), 0);
  assert_string_equal(he, "1814c38e21c724f7");
  app_v1alpha1_free(a);
  app_v1alpha1_free(b);
  app_v1alpha1_free(c);
  app_v1alpha1_free(none);
  app_v1alpha1_free(esc);
}

static void test_app_desired_config_change_changes_template(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *d1 = NULL, *d2 = NULL;
  const char *h1, *h2;
  (void)state;
  assert_int_equal(desired_deployment_json(app, &d1, NULL), 0);
  json_object_set_new(kcr_meta_path(app, "spec.config"), "index.html", json_string("<h1>bye</h1>"));
  assert_int_equal(desired_deployment_json(app, &d2, NULL), 0);
  h1 = json_string_value(json_object_get(kcr_meta_path(d1, "spec.template.metadata.annotations"),
                                         KOP_APP_CONFIG_HASH_ANNOTATION));
  h2 = json_string_value(json_object_get(kcr_meta_path(d2, "spec.template.metadata.annotations"),
                                         KOP_APP_CONFIG_HASH_ANNOTATION));
  assert_non_null(h1);
  assert_non_null(h2);
  assert_string_not_equal(h1, h2);
  assert_int_equal(update(DEPLOYMENT, app, d1, NULL), 1); /* so the Deployment rolls */
  assert_int_equal(update(DEPLOYMENT, app, d2, NULL), 0);
  json_decref(d1);
  json_decref(d2);
  json_decref(app);
}

static void test_app_desired_invalid_app(void **state) {
  static const char *const bad[] = {
      "[]",
      "{\"spec\":{\"image\":\"i\"}}",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"spec\":{\"image\":\"i\"}}",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"}}",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},\"spec\":{\"image\":\"\"}}",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
      "\"spec\":{\"image\":\"i\",\"replicas\":-1}}",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
      "\"spec\":{\"image\":\"i\",\"replicas\":1001}}",
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\",\"uid\":\"u\"},"
      "\"spec\":{\"image\":\"i\",\"port\":70000}}",
  };
  (void)state;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *app = load(bad[i]);
    json_t *out = (json_t *)1;
    kcr_error_t err;
    kcr_error_clear(&err);
    assert_int_equal(desired_deployment_json(app, &out, &err), KCR_EINVAL);
    assert_null(out);
    assert_int_equal(err.code, KCR_EINVAL);
    assert_true(strlen(err.message) > 0);
    json_decref(app);
  }
  /* The typed builders and mutations check the typed App too. */
  {
    json_t *j = load_file(FIXTURE("app_full.json"));
    app_v1alpha1_t *a = typed(j);
    kcr_apps_v1_deployment_t *d = (kcr_apps_v1_deployment_t *)1;
    kcr_core_v1_config_map_t cm = {0};
    kcr_meta_v1_mem_free(a->spec->image);
    a->spec->image = NULL;
    assert_int_equal(kop_app_desired_deployment(a, &d, NULL), KCR_EINVAL);
    assert_null(d);
    assert_int_equal(kop_app_mutate_configmap(a, &cm, NULL), KCR_EINVAL);
    app_v1alpha1_free(a);
    json_decref(j);
  }
}

static void test_app_desired_owns(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *dep = load_file(FIXTURE("deployment_full.json"));
  json_t *unowned = load("{\"metadata\":{\"name\":\"web\"}}");
  json_t *other =
      load("{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"kcr.dev/v1alpha1\","
           "\"kind\":\"App\",\"name\":\"web\",\"uid\":\"another\",\"controller\":true}]}}");
  json_t *notctl = load("{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"kcr.dev/v1alpha1\","
                        "\"kind\":\"App\",\"name\":\"web\","
                        "\"uid\":\"11111111-2222-3333-4444-555555555555\"}]}}");
  json_t *wrongkind =
      load("{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
           "\"kind\":\"ReplicaSet\",\"name\":\"web\","
           "\"uid\":\"11111111-2222-3333-4444-555555555555\",\"controller\":true}]}}");
  app_v1alpha1_t *a = typed(app);
  kcr_meta_v1_object_meta_t *m[5];
  (void)state;
  m[0] = meta(dep);
  m[1] = meta(unowned);
  m[2] = meta(other);
  m[3] = meta(notctl);
  m[4] = meta(wrongkind);
  assert_true(kop_app_owns(a, m[0]));
  assert_false(kop_app_owns(a, m[1]));
  assert_false(kop_app_owns(a, m[2]));
  assert_false(kop_app_owns(a, m[3]));
  assert_false(kop_app_owns(a, m[4]));
  assert_false(kop_app_owns(a, NULL));
  for (size_t i = 0; i < 5; i++) {
    kcr_meta_v1_object_meta_free(m[i]);
  }
  app_v1alpha1_free(a);
  json_decref(app);
  json_decref(dep);
  json_decref(unowned);
  json_decref(other);
  json_decref(notctl);
  json_decref(wrongkind);
}

static void test_app_desired_strings(void **state) {
  json_t *japp = load_file(FIXTURE("app_full.json"));
  json_t *jmin = load_file(FIXTURE("app_minimal.json"));
  app_v1alpha1_t *app = typed(japp), *min = typed(jmin);
  char buf[KOP_APP_URL_MAX];
  char small[8];
  (void)state;
  assert_int_equal(kop_app_url(app, buf, sizeof buf), (int)strlen("http://web.shop.svc:8080"));
  assert_string_equal(buf, "http://web.shop.svc:8080");
  assert_int_equal(kop_app_url(min, buf, sizeof buf), 0);
  assert_string_equal(buf, "");
  assert_int_equal(kop_app_url(app, small, sizeof small), KCR_ETOOBIG);
  assert_true(kop_app_selector(app, buf, sizeof buf) > 0);
  assert_string_equal(buf, "app.kubernetes.io/name=web,app.kubernetes.io/instance=web");
  assert_int_equal(kop_app_selector(app, small, sizeof small), KCR_ETOOBIG);
  assert_int_equal(kop_app_directory_key(app, buf, sizeof buf), 8);
  assert_string_equal(buf, "shop.web");
  assert_int_equal(kop_app_directory_key(app, small, 4), KCR_ETOOBIG);
  assert_int_equal(kop_app_replicas(min), 1);
  assert_int_equal(kop_app_replicas(app), 2);
  assert_int_equal(kop_app_port(min), 0);
  assert_int_equal(kop_app_port(app), 8080);
  assert_false(kop_app_paused(min));
  assert_true(kop_app_has_config(app));
  app->spec->paused = app->spec->has_paused = true;
  assert_true(kop_app_paused(app));
  app_v1alpha1_free(app);
  app_v1alpha1_free(min);
  json_decref(japp);
  json_decref(jmin);
}

/*
 * dir_update applies the App's directory rule (want, then apply) to *cm, the
 * directory as JSON, replaced by its re-encoding.
 */
static int dir_update(json_t **cm, const json_t *japp, bool remove, bool *changed,
                      kcr_error_t *err) {
  char key[KCR_META_KEY_MAX], url[KOP_APP_URL_MAX];
  const char *want = NULL;
  app_v1alpha1_t *app = NULL;
  kcr_core_v1_config_map_t *dir = NULL;
  json_t *out = NULL;
  int rc = app_v1alpha1_decode(japp, &app, err);
  *changed = false;
  if (rc == 0) {
    rc = kcr_core_v1_config_map_decode(*cm, &dir, err);
  }
  if (rc == 0) {
    rc = kop_app_directory_want(app, remove, key, sizeof key, url, sizeof url, &want, err);
  }
  if (rc == 0) {
    rc = kop_app_directory_apply(dir, key, want, changed, err);
  }
  if (rc == 0 && (rc = kcr_core_v1_config_map_encode(dir, &out, err)) == 0) {
    json_decref(*cm);
    *cm = out;
  }
  kcr_core_v1_config_map_free(dir);
  app_v1alpha1_free(app);
  return rc;
}

#define DATA(cm) json_object_get((cm), "data")

static void test_app_desired_directory(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *cm = kop_app_desired_directory("kcr-system");
  bool changed = false;
  (void)state;
  assert_string_equal(kcr_meta_name(cm), KOP_APP_DIRECTORY_NAME);
  assert_string_equal(kcr_meta_namespace(cm), "kcr-system");
  assert_int_equal(json_object_size(DATA(cm)), 0);
  assert_int_equal(dir_update(&cm, app, false, &changed, NULL), 0);
  assert_true(changed);
  assert_string_equal(json_string_value(json_object_get(DATA(cm), "shop.web")),
                      "http://web.shop.svc:8080");
  /* Same again: nothing to write. */
  assert_int_equal(dir_update(&cm, app, false, &changed, NULL), 0);
  assert_false(changed);
  /* Port changed: entry updated. */
  json_object_set_new(json_object_get(app, "spec"), "port", json_integer(9090));
  assert_int_equal(dir_update(&cm, app, false, &changed, NULL), 0);
  assert_true(changed);
  assert_string_equal(json_string_value(json_object_get(DATA(cm), "shop.web")),
                      "http://web.shop.svc:9090");
  /* Port unset: entry removed. */
  json_object_del(json_object_get(app, "spec"), "port");
  assert_int_equal(dir_update(&cm, app, false, &changed, NULL), 0);
  assert_true(changed);
  assert_null(json_object_get(DATA(cm), "shop.web"));
  /* Port back, then the finalizer removes it. */
  json_object_set_new(json_object_get(app, "spec"), "port", json_integer(80));
  assert_int_equal(dir_update(&cm, app, false, &changed, NULL), 0);
  assert_int_equal(dir_update(&cm, app, true, &changed, NULL), 0);
  assert_true(changed);
  assert_int_equal(json_object_size(DATA(cm)), 0);
  /* Deleting App: no entry either. */
  json_object_set_new(kcr_meta_metadata(app), "deletionTimestamp",
                      json_string("2025-01-01T00:00:00Z"));
  assert_int_equal(dir_update(&cm, app, false, &changed, NULL), 0);
  assert_false(changed);
  assert_int_equal(json_object_size(DATA(cm)), 0);
  assert_int_equal(kop_app_directory_apply(NULL, "k", "v", &changed, NULL), KCR_EINVAL);
  json_decref(cm);
  json_decref(app);
}

/* The directory's other entries stay; a failed allocation leaves it as it was. */
static void test_app_desired_directory_apply(void **state) {
  json_t *j = load("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                   "\"name\":\"app-directory\",\"namespace\":\"kcr-system\"},"
                   "\"data\":{\"a.x\":\"http://x.a.svc:1\",\"b.y\":\"http://y.b.svc:2\"}}");
  kcr_core_v1_config_map_t *dir = NULL, *before = NULL;
  bool changed = false;
  (void)state;
  assert_int_equal(kcr_core_v1_config_map_decode(j, &dir, NULL), 0);
  assert_int_equal(kcr_core_v1_config_map_copy(dir, &before, NULL), 0);
  kcr_test_alloc_install();
  kcr_test_alloc_fail_at(1);
  assert_int_equal(kop_app_directory_apply(dir, "c.z", "http://z.c.svc:3", &changed, NULL),
                   KCR_ENOMEM);
  kcr_test_alloc_fail_at(0);
  kcr_test_alloc_uninstall();
  assert_false(changed);
  assert_true(kcr_core_v1_config_map_equal(dir, before));
  assert_int_equal(kop_app_directory_apply(dir, "c.z", "http://z.c.svc:3", &changed, NULL), 0);
  assert_true(changed);
  assert_int_equal(dir->data_len, 3);
  assert_int_equal(kop_app_directory_apply(dir, "a.x", NULL, &changed, NULL), 0);
  assert_true(changed);
  assert_int_equal(dir->data_len, 2);
  for (size_t i = 0; i < dir->data_len; i++) {
    assert_string_not_equal(dir->data[i].key, "a.x");
    assert_true(strcmp(dir->data[i].key, "b.y") == 0 || strcmp(dir->data[i].key, "c.z") == 0);
  }
  assert_int_equal(kop_app_directory_apply(dir, "a.x", NULL, &changed, NULL), 0);
  assert_false(changed);
  kcr_core_v1_config_map_free(before);
  kcr_core_v1_config_map_free(dir);
  json_decref(j);
}

static void test_app_desired_up_to_date_ignores_server_defaults(void **state) {
  json_t *app = load_file(FIXTURE("app_minimal.json"));
  json_t *server = load_file(FIXTURE("deployment_server.json"));
  json_t *merged = NULL, *again = NULL;
  (void)state;
  /* What the server defaulted is no drift: nothing to write. */
  assert_int_equal(update(DEPLOYMENT, app, server, NULL), 0);
  /* Drift: someone changed the image. */
  json_object_set_new(json_array_get(kcr_meta_path(server, "spec.template.spec.containers"), 0),
                      "image", json_string("evil:latest"));
  /* and a field this decoder does not know, which must survive the update */
  json_object_set_new(kcr_meta_path(server, "spec.template.spec"), "futureField",
                      json_string("kept"));
  assert_int_equal(update(DEPLOYMENT, app, server, &merged), 1);
  assert_int_equal(update(DEPLOYMENT, app, merged, NULL), 0);
  assert_string_equal(
      json_string_value(json_object_get(
          json_array_get(kcr_meta_path(merged, "spec.template.spec.containers"), 0), "image")),
      "busybox");
  /* The update keeps what the server and others own. */
  assert_string_equal(kcr_meta_label(merged, "team"), "blue");
  assert_string_equal(kcr_meta_annotation(merged, "deployment.kubernetes.io/revision"), "2");
  assert_string_equal(kcr_meta_resource_version(merged), "812");
  assert_int_equal(json_integer_value(kcr_meta_path(merged, "spec.progressDeadlineSeconds")), 600);
  assert_string_equal(json_string_value(json_object_get(
                          json_array_get(kcr_meta_path(merged, "spec.template.spec.containers"), 0),
                          "imagePullPolicy")),
                      "Always");
  assert_string_equal(json_string_value(kcr_meta_path(merged, "spec.template.spec.futureField")),
                      "kept");
  assert_non_null(kcr_meta_path(merged, "status"));
  json_decref(merged);
  /* Drift: a label of ours removed. */
  json_object_del(kcr_meta_labels(server), KOP_APP_LABEL_MANAGED_BY);
  assert_int_equal(update(DEPLOYMENT, app, server, &again), 1);
  assert_string_equal(kcr_meta_label(again, KOP_APP_LABEL_MANAGED_BY), KOP_APP_MANAGED_BY);
  json_decref(again);
  /* Drift: replicas changed. */
  json_object_set_new(kcr_meta_path(server, "spec"), "replicas", json_integer(5));
  assert_int_equal(update(DEPLOYMENT, app, server, &again), 1);
  assert_int_equal(json_integer_value(kcr_meta_path(again, "spec.replicas")), 1);
  json_decref(again);
  json_decref(server);
  json_decref(app);
}

/* A Service as the server keeps it: clusterIP and the rest stay, no drift. */
static void test_app_desired_service_keeps_server_fields(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *svc = NULL, *merged = NULL;
  (void)state;
  assert_int_equal(desired_service_json(app, &svc, NULL), 0);
  json_object_set_new(json_object_get(svc, "spec"), "clusterIP", json_string("10.0.0.7"));
  json_object_set_new(json_object_get(svc, "spec"), "sessionAffinity", json_string("None"));
  json_object_set_new(json_object_get(svc, "spec"), "ipFamilies", json_pack("[s]", "IPv4"));
  assert_int_equal(update(SERVICE, app, svc, NULL), 0);
  /* Drift: the port changed. */
  json_object_set_new(json_array_get(kcr_meta_path(svc, "spec.ports"), 0), "port", json_integer(1));
  assert_int_equal(update(SERVICE, app, svc, &merged), 1);
  assert_int_equal(json_integer_value(json_object_get(
                       json_array_get(kcr_meta_path(merged, "spec.ports"), 0), "port")),
                   8080);
  assert_string_equal(json_string_value(kcr_meta_path(merged, "spec.clusterIP")), "10.0.0.7");
  assert_string_equal(json_string_value(kcr_meta_path(merged, "spec.sessionAffinity")), "None");
  assert_int_equal(json_array_size(kcr_meta_path(merged, "spec.ipFamilies")), 1);
  json_decref(merged);
  json_decref(svc);
  json_decref(app);
}

/* What the App decides alone is set exactly; what the server defaulted in it stays. */
static void test_app_desired_update_decided_fields(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *dep = NULL, *merged = NULL, *plain = NULL;
  json_t *containers, *tmpl;
  (void)state;
  assert_int_equal(desired_deployment_json(app, &dep, NULL), 0);
  containers = kcr_meta_path(dep, "spec.template.spec.containers");
  json_object_set_new(json_array_get(containers, 0), "imagePullPolicy",
                      json_string("IfNotPresent"));
  json_object_set_new(
      json_object_get(json_array_get(kcr_meta_path(dep, "spec.template.spec.volumes"), 0),
                      "configMap"),
      "defaultMode", json_integer(420));
  /* server defaults alone: no drift */
  assert_int_equal(update(DEPLOYMENT, app, dep, NULL), 0);
  /* a container someone added goes; ours keeps its defaults */
  json_array_append_new(containers, json_pack("{s:s, s:s}", "name", "sidecar", "image", "x"));
  assert_int_equal(update(DEPLOYMENT, app, dep, &merged), 1);
  containers = kcr_meta_path(merged, "spec.template.spec.containers");
  assert_int_equal(json_array_size(containers), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(containers, 0), "name")),
                      KOP_APP_CONTAINER);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(containers, 0), "imagePullPolicy")),
      "IfNotPresent");
  assert_int_equal(
      json_integer_value(json_object_get(
          json_object_get(json_array_get(kcr_meta_path(merged, "spec.template.spec.volumes"), 0),
                          "configMap"),
          "defaultMode")),
      420);
  assert_int_equal(update(DEPLOYMENT, app, merged, NULL), 0);
  /* the config removed from the App: its volume, mount and hash go */
  json_object_del(json_object_get(app, "spec"), "config");
  assert_int_equal(update(DEPLOYMENT, app, merged, &plain), 1);
  tmpl = kcr_meta_path(plain, "spec.template");
  assert_null(kcr_meta_path(tmpl, "spec.volumes"));
  assert_null(
      json_object_get(json_array_get(kcr_meta_path(tmpl, "spec.containers"), 0), "volumeMounts"));
  assert_null(
      json_object_get(kcr_meta_path(tmpl, "metadata.annotations"), KOP_APP_CONFIG_HASH_ANNOTATION));
  assert_int_equal(update(DEPLOYMENT, app, plain, NULL), 0);
  json_decref(plain);
  json_decref(merged);
  json_decref(dep);
  json_decref(app);
}

static void test_app_desired_merge_takes_controller_ref(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *cm_have =
      load("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
           "\"name\":\"web-config\",\"namespace\":\"shop\",\"ownerReferences\":["
           "{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"name\":\"t\",\"uid\":\"t1\"}]},"
           "\"data\":{\"old\":\"gone\",\"index.html\":\"x\"}}");
  json_t *merged = NULL;
  app_v1alpha1_t *a = typed(app);
  kcr_meta_v1_object_meta_t *m;
  (void)state;
  assert_int_equal(update(CONFIGMAP, app, cm_have, &merged), 1);
  assert_int_equal(update(CONFIGMAP, app, merged, NULL), 0);
  m = meta(merged);
  assert_true(kop_app_owns(a, m));
  kcr_meta_v1_object_meta_free(m);
  /* The non-controller reference stays; data is exactly the config. */
  assert_int_equal(json_array_size(kcr_meta_owner_references(merged)), 2);
  assert_null(json_object_get(json_object_get(merged, "data"), "old"));
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(merged, "data"), "index.html")),
      "<h1>hi</h1>");
  json_decref(merged);
  {
    /* Another controller's child is never taken over, not even by a mutation. */
    json_t *theirs = load("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                          "\"name\":\"web-config\",\"namespace\":\"shop\",\"ownerReferences\":["
                          "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"r\","
                          "\"uid\":\"r1\",\"controller\":true}]}}");
    kcr_core_v1_config_map_t *cm = NULL;
    kcr_error_t err;
    kcr_error_clear(&err);
    assert_int_equal(kcr_core_v1_config_map_decode(theirs, &cm, NULL), 0);
    assert_int_equal(kop_app_mutate_configmap(a, cm, &err), KCR_EEXIST);
    kcr_core_v1_config_map_free(cm);
    json_decref(theirs);
  }
  {
    void *after = (void *)1;
    bool changed = true;
    assert_int_equal(
        kop_app_child_update(&kop_app_children[CONFIGMAP], a, NULL, &after, &changed, NULL),
        KCR_EINVAL);
    assert_null(after);
  }
  app_v1alpha1_free(a);
  json_decref(cm_have);
  json_decref(app);
}

/* Allocation failures: every builder returns KCR_ENOMEM cleanly, nothing leaks. */
static void test_app_desired_alloc_failures(void **state) {
  json_t *app = load_file(FIXTURE("app_full.json"));
  json_t *server = load_file(FIXTURE("deployment_server.json"));
  json_t *out = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(desired_deployment_json(app, &out, NULL), (json_decref(out), out = NULL));
  KCR_TEST_ALLOC_LOOP(desired_service_json(app, &out, NULL), (json_decref(out), out = NULL));
  KCR_TEST_ALLOC_LOOP(desired_configmap_json(app, &out, NULL), (json_decref(out), out = NULL));
  {
    const kop_app_child_kind *k = &kop_app_children[DEPLOYMENT];
    json_t *min = load_file(FIXTURE("app_minimal.json")); /* the server's Deployment's App */
    app_v1alpha1_t *a = typed(min);
    void *have = NULL, *after = NULL;
    bool changed = false;
    json_decref(min);
    json_object_set_new(kcr_meta_path(server, "spec"), "replicas", json_integer(5));
    assert_int_equal(k->decode(server, &have, NULL), 0);
    KCR_TEST_ALLOC_LOOP(kop_app_child_update(k, a, have, &after, &changed, NULL),
                        (after ? k->release(after) : (void)0, after = NULL));
    k->release(have);
    app_v1alpha1_free(a);
  }
  json_decref(server);
  json_decref(app);
}

/* The typed App's directory entry: key and URL, or NULL when it must go. */
static void test_app_desired_directory_want(void **state) {
  json_t *j = load_file(FIXTURE("app_full.json"));
  app_v1alpha1_t *app = NULL;
  char key[KCR_META_KEY_MAX], url[KOP_APP_URL_MAX], tiny[4];
  const char *want = NULL;
  (void)state;
  assert_int_equal(kop_app_decode(j, &app, NULL), 0);
  assert_int_equal(
      kop_app_directory_want(app, false, key, sizeof key, url, sizeof url, &want, NULL), 0);
  assert_string_equal(key, "shop.web");
  assert_string_equal(want, "http://web.shop.svc:8080");
  assert_int_equal(kop_app_directory_want(app, true, key, sizeof key, url, sizeof url, &want, NULL),
                   0);
  assert_null(want);
  assert_int_equal(
      kop_app_directory_want(app, false, tiny, sizeof tiny, url, sizeof url, &want, NULL),
      KCR_ETOOBIG);
  app->spec->has_port = false;
  assert_int_equal(
      kop_app_directory_want(app, false, key, sizeof key, url, sizeof url, &want, NULL), 0);
  assert_null(want);
  app->spec->has_port = true;
  app->metadata->deletion_timestamp = kcr_meta_v1_mem_strdup("2025-01-01T00:00:00Z");
  assert_int_equal(
      kop_app_directory_want(app, false, key, sizeof key, url, sizeof url, &want, NULL), 0);
  assert_null(want);
  app_v1alpha1_free(app);
  json_decref(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_app_desired_deployment_full),
      cmocka_unit_test(test_app_desired_deployment_minimal),
      cmocka_unit_test(test_app_desired_replicas_zero_stays_zero),
      cmocka_unit_test(test_app_desired_service),
      cmocka_unit_test(test_app_desired_configmap),
      cmocka_unit_test(test_app_desired_config_hash_stable),
      cmocka_unit_test(test_app_desired_config_change_changes_template),
      cmocka_unit_test(test_app_desired_invalid_app),
      cmocka_unit_test(test_app_desired_owns),
      cmocka_unit_test(test_app_desired_strings),
      cmocka_unit_test(test_app_desired_directory),
      cmocka_unit_test(test_app_desired_directory_apply),
      cmocka_unit_test(test_app_desired_directory_want),
      cmocka_unit_test(test_app_desired_up_to_date_ignores_server_defaults),
      cmocka_unit_test(test_app_desired_update_decided_fields),
      cmocka_unit_test(test_app_desired_merge_takes_controller_ref),
      cmocka_unit_test(test_app_desired_service_keeps_server_fields),
      cmocka_unit_test(test_app_desired_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
