/* SPDX-License-Identifier: MIT */
/*
 * test_fake_fields.c: field ownership in the fake client (issue 25):
 * metadata.managedFields kept as the API server's field manager keeps them.
 * An apply owns what it applies; changing a field another manager owns is a
 * 409 Conflict worded as the server words it, unless forced; the same value
 * is shared; a field the manager stops applying is removed unless another
 * owns it, and an element of a keyed list someone else still owns part of
 * stays with its key. Updates take what they change; [] clears the fields; an
 * object seeded without them is untracked until the first apply, which gives
 * what it has to before-first-apply. Answers drop managedFields unless asked.
 * The same sequences against the real API server: test_fake_smp_it.
 */
#include <stdio.h>
#include <string.h>

#include "kcr/apierror.h"
#include "kcr/meta.h"
#include "kcr/testing.h"
#include "testutil.h"

typedef struct fixture {
  kcr_fake_client_t *f;
  kcr_objclient c;
  kcr_error_t err;
} fixture;

static const kcr_gvk deploy = {"apps", "v1", "Deployment"};

static int setup(void **state) {
  fixture *fx = calloc(1, sizeof(fixture));
  if (!fx || kcr_fake_client_create(NULL, &fx->f, NULL) != 0)
    return -1;
  fx->c = kcr_fake_client_objclient(fx->f);
  kcr_fake_client_return_managed_fields(fx->f, true);
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture *fx = *state;
  kcr_fake_client_destroy(fx->f);
  free(fx);
  return 0;
}

static json_t *parse(const char *text) {
  json_error_t e;
  json_t *v = json_loads(text, 0, &e);
  if (!v)
    fail_msg("bad JSON in the test (%s): %s", e.text, text);
  return v;
}

#define DEPLOY(spec)                                                                               \
  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","              \
  "\"namespace\":\"ns\"},\"spec\":" spec "}"

/* apply applies text as manager (force as given); the call's code. */
static int apply(fixture *fx, const char *manager, const char *text, bool force) {
  json_t *a = parse(text);
  kcr_apply_options o = {manager, force, false, NULL};
  int rc;
  kcr_error_clear(&fx->err);
  rc = kcr_objclient_apply(&fx->c, a, &o, NULL, NULL, &fx->err);
  json_decref(a);
  return rc;
}

/* update reads the object, lets edit change it and updates it as manager. */
static int update(fixture *fx, const char *manager, void (*edit)(json_t *obj)) {
  kcr_write_options o = {false, manager, NULL};
  json_t *obj = NULL;
  int rc;
  kcr_error_clear(&fx->err);
  assert_int_equal(kcr_objclient_get(&fx->c, &deploy, "ns", "d", &obj, &fx->err), 0);
  edit(obj);
  rc = kcr_objclient_update_with(&fx->c, obj, NULL, &o, NULL, &fx->err);
  json_decref(obj);
  return rc;
}

/* stored: the object the fake holds (new). */
static json_t *stored(fixture *fx) {
  json_t *obj = NULL;
  kcr_error_t e;
  kcr_error_clear(&e);
  assert_int_equal(kcr_objclient_get(&fx->c, &deploy, "ns", "d", &obj, &e), 0);
  return obj;
}

/* fields: the fieldsV1 of manager's entry with operation op (borrowed from
 * obj), NULL when it has none. */
static const json_t *fields(const json_t *obj, const char *manager, const char *op) {
  const json_t *mf = kcr_meta_path(obj, "metadata.managedFields"), *e;
  size_t i;
  json_array_foreach((json_t *)mf, i, e) {
    if (strcmp(json_string_value(json_object_get(e, "manager")), manager) == 0 &&
        strcmp(json_string_value(json_object_get(e, "operation")), op) == 0)
      return json_object_get(e, "fieldsV1");
  }
  return NULL;
}

/* owns: whether manager's entry (op) has the FieldsV1 path "f:spec/f:replicas". */
static bool owns(const json_t *obj, const char *manager, const char *op, const char *path) {
  const json_t *n = fields(obj, manager, op);
  char buf[256], *save = NULL, *tok;
  snprintf(buf, sizeof(buf), "%s", path);
  for (tok = strtok_r(buf, "/", &save); n && tok; tok = strtok_r(NULL, "/", &save))
    n = json_object_get(n, tok);
  return n != NULL;
}

static void test_fake_fields_apply_conflict_and_force(void **state) {
  fixture *fx = *state;
  json_t *obj;
  assert_int_equal(apply(fx, "a", DEPLOY("{\"replicas\":2,\"paused\":false}"), false), 0);
  /* another manager changing a's field: 409, worded as the server */
  assert_int_equal(apply(fx, "b", DEPLOY("{\"replicas\":3}"), false), KCR_EAPI);
  assert_int_equal(fx->err.http_status, 409);
  assert_string_equal(fx->err.reason, "Conflict");
  assert_string_equal(fx->err.message,
                      "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas");
  obj = stored(fx);
  assert_int_equal(json_integer_value(kcr_meta_path(obj, "spec.replicas")), 2);
  assert_null(fields(obj, "b", "Apply"));
  json_decref(obj);
  /* two fields of two managers */
  assert_int_equal(apply(fx, "c", DEPLOY("{\"paused\":true}"), true), 0);
  assert_int_equal(apply(fx, "b", DEPLOY("{\"replicas\":3,\"paused\":false}"), false), KCR_EAPI);
  assert_string_equal(fx->err.message, "Apply failed with 2 conflicts: conflicts with \"a\":\n"
                                       "- .spec.replicas\nconflicts with \"c\":\n- .spec.paused");
  /* forced: b takes replicas over, a keeps the rest */
  assert_int_equal(apply(fx, "b", DEPLOY("{\"replicas\":3}"), true), 0);
  obj = stored(fx);
  assert_int_equal(json_integer_value(kcr_meta_path(obj, "spec.replicas")), 3);
  assert_true(owns(obj, "b", "Apply", "f:spec/f:replicas"));
  assert_false(owns(obj, "a", "Apply", "f:spec/f:replicas"));
  assert_null(fields(obj, "a", "Apply")); /* a owned replicas and paused, both taken */
  json_decref(obj);
}

static void test_fake_fields_apply_shares_same_value(void **state) {
  fixture *fx = *state;
  json_t *obj;
  assert_int_equal(apply(fx, "a", DEPLOY("{\"replicas\":2}"), false), 0);
  assert_int_equal(apply(fx, "b", DEPLOY("{\"replicas\":2}"), false), 0);
  obj = stored(fx);
  assert_true(owns(obj, "a", "Apply", "f:spec/f:replicas"));
  assert_true(owns(obj, "b", "Apply", "f:spec/f:replicas"));
  json_decref(obj);
  /* a stops applying it: b still owns it, so it stays */
  assert_int_equal(apply(fx, "a", DEPLOY("{}"), false), 0);
  obj = stored(fx);
  assert_int_equal(json_integer_value(kcr_meta_path(obj, "spec.replicas")), 2);
  json_decref(obj);
  /* b stops too: nobody owns it, it goes */
  assert_int_equal(apply(fx, "b", DEPLOY("{}"), false), 0);
  obj = stored(fx);
  assert_null(kcr_meta_path(obj, "spec.replicas"));
  json_decref(obj);
}

#define LABELS(x)                                                                                  \
  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","              \
  "\"namespace\":\"ns\",\"labels\":" x "}}"

static void test_fake_fields_apply_removes_what_it_drops(void **state) {
  fixture *fx = *state;
  json_t *obj;
  assert_int_equal(apply(fx, "a", LABELS("{\"x\":\"1\",\"y\":\"2\"}"), false), 0);
  assert_int_equal(apply(fx, "a", LABELS("{\"x\":\"1\"}"), false), 0);
  obj = stored(fx);
  assert_string_equal(json_string_value(kcr_meta_path(obj, "metadata.labels.x")), "1");
  assert_null(kcr_meta_path(obj, "metadata.labels.y"));
  assert_true(owns(obj, "a", "Apply", "f:metadata/f:labels/f:x"));
  assert_false(owns(obj, "a", "Apply", "f:metadata/f:labels/f:y"));
  json_decref(obj);
}

#define CONTAINERS(x) DEPLOY("{\"template\":{\"spec\":{\"containers\":" x "}}}")

static void test_fake_fields_keyed_list_elements(void **state) {
  fixture *fx = *state;
  json_t *obj;
  const json_t *c;
  assert_int_equal(
      apply(fx, "a", CONTAINERS("[{\"name\":\"c\",\"image\":\"c:1\",\"args\":[\"x\"]}]"), false),
      0);
  /* b forces the image of a's element: the element stays a's, the image b's */
  assert_int_equal(apply(fx, "b", CONTAINERS("[{\"name\":\"c\",\"image\":\"c:2\"}]"), false),
                   KCR_EAPI);
  assert_string_equal(fx->err.message, "Apply failed with 1 conflict: conflict with \"a\": "
                                       ".spec.template.spec.containers[name=\"c\"].image");
  assert_int_equal(apply(fx, "b", CONTAINERS("[{\"name\":\"c\",\"image\":\"c:2\"}]"), true), 0);
  obj = stored(fx);
  assert_true(
      owns(obj, "a", "Apply", "f:spec/f:template/f:spec/f:containers/k:{\"name\":\"c\"}/f:args"));
  assert_false(
      owns(obj, "a", "Apply", "f:spec/f:template/f:spec/f:containers/k:{\"name\":\"c\"}/f:image"));
  assert_true(
      owns(obj, "b", "Apply", "f:spec/f:template/f:spec/f:containers/k:{\"name\":\"c\"}/f:image"));
  json_decref(obj);
  /* a drops the element: b's part of it stays, with its key; a's args go */
  assert_int_equal(apply(fx, "a", CONTAINERS("[]"), false), 0);
  obj = stored(fx);
  c = json_array_get(kcr_meta_path(obj, "spec.template.spec.containers"), 0);
  assert_non_null(c);
  assert_int_equal(json_array_size(kcr_meta_path(obj, "spec.template.spec.containers")), 1);
  assert_string_equal(json_string_value(json_object_get(c, "name")), "c");
  assert_string_equal(json_string_value(json_object_get(c, "image")), "c:2");
  assert_null(json_object_get(c, "args"));
  json_decref(obj);
}

/* field names of any length are owned one by one: two long keys that share
 * their first 600 characters stay apart */
static void test_fake_fields_long_names(void **state) {
  fixture *fx = *state;
  char prefix[601], both[2000], one[1400];
  json_t *obj;
  memset(prefix, 'k', 600);
  prefix[600] = '\0';
  snprintf(both, sizeof(both), LABELS("{\"%s1\":\"a\",\"%s2\":\"b\"}"), prefix, prefix);
  snprintf(one, sizeof(one), LABELS("{\"%s1\":\"a\"}"), prefix);
  assert_int_equal(apply(fx, "a", both, false), 0);
  assert_int_equal(apply(fx, "a", one, false), 0);
  obj = stored(fx);
  assert_int_equal(json_object_size(kcr_meta_path(obj, "metadata.labels")), 1);
  json_decref(obj);
}

static void set_replicas_5(json_t *obj) {
  json_object_set_new(json_object_get(obj, "spec"), "replicas", json_integer(5));
}

static void test_fake_fields_update_takes_over(void **state) {
  fixture *fx = *state;
  json_t *obj;
  const json_t *mf;
  assert_int_equal(apply(fx, "a", DEPLOY("{\"replicas\":2,\"paused\":false}"), false), 0);
  assert_int_equal(update(fx, "editor", set_replicas_5), 0);
  obj = stored(fx);
  assert_true(owns(obj, "editor", "Update", "f:spec/f:replicas"));
  assert_false(owns(obj, "a", "Apply", "f:spec/f:replicas"));
  assert_true(owns(obj, "a", "Apply", "f:spec/f:paused"));
  /* entries as the server writes them: Apply before Update, with their time */
  mf = kcr_meta_path(obj, "metadata.managedFields");
  assert_int_equal(json_array_size(mf), 2);
  assert_string_equal(json_string_value(json_object_get(json_array_get(mf, 0), "operation")),
                      "Apply");
  assert_string_equal(json_string_value(json_object_get(json_array_get(mf, 1), "apiVersion")),
                      "apps/v1");
  assert_string_equal(json_string_value(json_object_get(json_array_get(mf, 1), "fieldsType")),
                      "FieldsV1");
  assert_non_null(json_object_get(json_array_get(mf, 1), "time"));
  json_decref(obj);
  /* a applying its old value again now conflicts with the updater */
  assert_int_equal(apply(fx, "a", DEPLOY("{\"replicas\":2,\"paused\":false}"), false), KCR_EAPI);
  assert_string_equal(fx->err.message, "Apply failed with 1 conflict: conflict with \"editor\" "
                                       "using apps/v1: .spec.replicas");
}

static void clear_managed(json_t *obj) {
  json_object_set_new(json_object_get(obj, "metadata"), "managedFields", json_array());
}

static void no_change(json_t *obj) {
  (void)obj;
}

static void test_fake_fields_untracked_and_reset(void **state) {
  fixture *fx = *state;
  json_t *obj;
  /* seeded without managedFields: updates do not start tracking */
  assert_int_equal(
      kcr_fake_client_add_json(fx->f, DEPLOY("{\"replicas\":1,\"paused\":true}"), &fx->err), 0);
  assert_int_equal(update(fx, "editor", set_replicas_5), 0);
  obj = stored(fx);
  assert_null(kcr_meta_path(obj, "metadata.managedFields"));
  json_decref(obj);
  /* the first apply gives the rest to before-first-apply */
  assert_int_equal(apply(fx, "a", DEPLOY("{\"replicas\":5}"), false), 0);
  obj = stored(fx);
  assert_true(owns(obj, "before-first-apply", "Update", "f:spec/f:paused"));
  assert_true(owns(obj, "before-first-apply", "Update", "f:spec/f:replicas"));
  assert_true(owns(obj, "a", "Apply", "f:spec/f:replicas"));
  json_decref(obj);
  /* an update that changes nothing keeps them; [] clears them */
  assert_int_equal(update(fx, "editor", no_change), 0);
  obj = stored(fx);
  assert_non_null(kcr_meta_path(obj, "metadata.managedFields"));
  json_decref(obj);
  assert_int_equal(update(fx, "editor", clear_managed), 0);
  obj = stored(fx);
  assert_null(kcr_meta_path(obj, "metadata.managedFields"));
  json_decref(obj);
}

static void test_fake_fields_create_and_answers(void **state) {
  fixture *fx = *state;
  json_t *obj = parse(DEPLOY("{\"replicas\":1}")), *got = NULL;
  assert_int_equal(kcr_objclient_create(&fx->c, obj, NULL, &fx->err), 0);
  got = stored(fx);
  /* no field manager: the name the server derives from kcr's User-Agent */
  assert_true(owns(got, "kcr", "Update", "f:spec/f:replicas"));
  json_decref(got);
  /* answers leave them out by default, as controller-runtime's fake */
  kcr_fake_client_return_managed_fields(fx->f, false);
  got = stored(fx);
  assert_null(kcr_meta_path(got, "metadata.managedFields"));
  json_decref(got);
  /* an applied configuration may not carry them */
  json_object_set_new(json_object_get(obj, "metadata"), "managedFields",
                      parse("[{\"manager\":\"x\",\"operation\":\"Apply\"}]"));
  {
    kcr_apply_options o = {"a", false, false, NULL};
    kcr_error_clear(&fx->err);
    assert_int_equal(kcr_objclient_apply(&fx->c, obj, &o, NULL, NULL, &fx->err), KCR_EAPI);
    assert_int_equal(fx->err.http_status, 400);
    assert_string_equal(fx->err.message, "metadata.managedFields must be nil");
  }
  json_decref(obj);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fake_fields_apply_conflict_and_force, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_fields_apply_shares_same_value, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_fields_apply_removes_what_it_drops, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_fake_fields_keyed_list_elements, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_fields_long_names, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_fields_update_takes_over, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_fields_untracked_and_reset, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fake_fields_create_and_answers, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
