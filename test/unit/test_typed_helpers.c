/* SPDX-License-Identifier: MIT */
/*
 * test_typed_helpers.c: kcr/typed.h on the App's generated types (kcr-gen's
 * kcr_gen_app_types): finalizers, owner references and conditions on meta_v1
 * structs (checked against what the JSON helpers write), merge patches from
 * typed values, typed create-or-update/create-or-patch over the fake client,
 * typed watches (kcr_typed_watch_next), kcr_event_record_meta, and the
 * error-record traps: after kcr_ignore_* the record is empty, and a helper
 * that tolerates NotFound leaves it empty, so a later failure reports itself.
 */
#include <string.h>

#include "app_v1alpha1.h"
#include "kcr/apierror.h"
#include "kcr/crd.h"
#include "kcr/events.h"
#include "kcr/testing.h"
#include "kcr/typed.h"
#include "testutil.h"

static const kcr_gvk APP = {"kcr.dev", "v1alpha1", "App"};

static json_t *load(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  if (!j)
    fail_msg("bad fixture: %s", e.text);
  return j;
}

static void assert_json(const json_t *j, const char *want) {
  json_t *w = load(want);
  if (!json_equal(j, w)) {
    char *got = json_dumps(j, JSON_COMPACT);
    fail_msg("got %s\nwant %s", got, want);
  }
  json_decref(w);
}

/* meta_of decodes a metadata fixture. */
static kcr_meta_v1_object_meta_t *meta_of(const char *text) {
  json_t *j = load(text);
  kcr_meta_v1_object_meta_t *m = NULL;
  assert_int_equal(kcr_meta_v1_object_meta_decode(j, &m, NULL), 0);
  json_decref(j);
  return m;
}

/* assert_meta compares meta's encoding with want. */
static void assert_meta(const kcr_meta_v1_object_meta_t *m, const char *want) {
  json_t *j = NULL;
  assert_int_equal(kcr_meta_v1_object_meta_encode(m, &j, NULL), 0);
  assert_json(j, want);
  json_decref(j);
}

/* ---- finalizers ---- */

static void test_typed_helpers_finalizers(void **state) {
  kcr_meta_v1_object_meta_t *m = meta_of("{\"name\":\"x\"}");
  bool ch;
  (void)state;
  assert_false(kcr_typed_finalizer_contains(m, "a"));
  assert_int_equal(kcr_typed_finalizer_add(m, "a", &ch), 0);
  assert_true(ch);
  assert_int_equal(kcr_typed_finalizer_add(m, "a", &ch), 0);
  assert_false(ch);
  assert_int_equal(kcr_typed_finalizer_add(m, "b", NULL), 0);
  assert_int_equal(kcr_typed_finalizer_add(m, "a", &ch), 0);
  assert_false(ch);
  assert_true(kcr_typed_finalizer_contains(m, "a"));
  assert_meta(m, "{\"name\":\"x\",\"finalizers\":[\"a\",\"b\"]}");
  assert_int_equal(kcr_typed_finalizer_remove(m, "a", &ch), 0);
  assert_true(ch);
  assert_int_equal(kcr_typed_finalizer_remove(m, "a", &ch), 0);
  assert_false(ch);
  assert_meta(m, "{\"name\":\"x\",\"finalizers\":[\"b\"]}");
  /* every occurrence goes; an emptied list stays, as the JSON helper's [] */
  kcr_meta_v1_object_meta_free(m);
  m = meta_of("{\"finalizers\":[\"a\",\"keep\",\"a\"]}");
  assert_int_equal(kcr_typed_finalizer_remove(m, "a", &ch), 0);
  assert_true(ch);
  assert_meta(m, "{\"finalizers\":[\"keep\"]}");
  assert_int_equal(kcr_typed_finalizer_remove(m, "keep", NULL), 0);
  assert_meta(m, "{\"finalizers\":[]}");
  /* bad arguments */
  assert_false(kcr_typed_finalizer_contains(NULL, "a"));
  assert_false(kcr_typed_finalizer_contains(m, NULL));
  assert_int_equal(kcr_typed_finalizer_add(NULL, "a", &ch), KCR_EINVAL);
  assert_false(ch);
  assert_int_equal(kcr_typed_finalizer_add(m, NULL, NULL), KCR_EINVAL);
  assert_int_equal(kcr_typed_finalizer_remove(NULL, "a", NULL), KCR_EINVAL);
  assert_int_equal(kcr_typed_finalizer_remove(m, NULL, NULL), KCR_EINVAL);
  kcr_meta_v1_object_meta_free(m);
}

/* Each failed allocation leaves the list as it was. */
static void test_typed_helpers_finalizer_alloc(void **state) {
  kcr_meta_v1_object_meta_t *m = meta_of("{\"finalizers\":[\"other\"]}");
  (void)state;
  KCR_TEST_ALLOC_LOOP(
      kcr_typed_finalizer_add(m, "kcr.dev/a", NULL),
      assert_true(m->finalizers_len == 1 || kcr_typed_finalizer_contains(m, "kcr.dev/a")));
  assert_meta(m, "{\"finalizers\":[\"other\",\"kcr.dev/a\"]}");
  kcr_meta_v1_object_meta_free(m);
}

/* ---- owner references ---- */

#define OWNER_META "{\"namespace\":\"ns\",\"name\":\"app\",\"uid\":\"u-1\"}"
#define OWNER_JSON                                                                                 \
  "{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"metadata\":" OWNER_META "}"

static void test_typed_helpers_controller_ref(void **state) {
  kcr_meta_v1_object_meta_t *owner = meta_of(OWNER_META);
  kcr_meta_v1_object_meta_t *other =
      meta_of("{\"namespace\":\"ns\",\"name\":\"o\",\"uid\":\"u-2\"}");
  kcr_meta_v1_object_meta_t *m = meta_of("{\"namespace\":\"ns\",\"name\":\"child\"}");
  const kcr_gvk other_gvk = {"kcr.dev", "v2", "Other"};
  const kcr_meta_v1_owner_reference_t *ctl;
  json_t *jowner = load(OWNER_JSON);
  json_t *jobj = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"child\"}}");
  json_t *enc = NULL;
  kcr_error_t err = {0};
  (void)state;
  assert_false(kcr_typed_owner_ref_has_controller(m));
  assert_null(kcr_typed_owner_ref_controller(m));
  assert_int_equal(kcr_typed_owner_ref_set_controller(&APP, owner, m, &err), 0);
  /* exactly what the JSON helper writes */
  assert_int_equal(kcr_owner_ref_set_controller(jowner, jobj, NULL), 0);
  assert_int_equal(kcr_meta_v1_object_meta_encode(m, &enc, NULL), 0);
  assert_true(json_equal(json_object_get(enc, "ownerReferences"), kcr_meta_owner_references(jobj)));
  json_decref(enc);
  assert_true(kcr_typed_owner_ref_has_controller(m));
  ctl = kcr_typed_owner_ref_controller(m);
  assert_ptr_equal(ctl, &m->owner_references[0]);
  assert_string_equal(ctl->uid, "u-1");
  /* again, through another version of the kind: replaced, not duplicated */
  assert_int_equal(
      kcr_typed_owner_ref_set_controller(&(kcr_gvk){"kcr.dev", "v1beta1", "App"}, owner, m, &err),
      0);
  assert_int_equal(m->owner_references_len, 1);
  assert_string_equal(m->owner_references[0].api_version, "kcr.dev/v1beta1");
  /* another controller: AlreadyOwned, meta unchanged */
  assert_int_equal(kcr_typed_owner_ref_set_controller(&other_gvk, other, m, &err), KCR_EEXIST);
  assert_string_equal(err.message,
                      "Object ns/child is already owned by another App controller app");
  assert_int_equal(m->owner_references_len, 1);
  /* a plain owner alongside: no controller fields */
  assert_int_equal(kcr_typed_owner_ref_set(&other_gvk, other, m, NULL), 0);
  assert_meta(m, "{\"namespace\":\"ns\",\"name\":\"child\",\"ownerReferences\":["
                 "{\"apiVersion\":\"kcr.dev/v1beta1\",\"kind\":\"App\",\"name\":\"app\","
                 "\"uid\":\"u-1\",\"controller\":true,\"blockOwnerDeletion\":true},"
                 "{\"apiVersion\":\"kcr.dev/v2\",\"kind\":\"Other\",\"name\":\"o\","
                 "\"uid\":\"u-2\"}]}");
  /* remove: every reference to the owner, others kept */
  assert_int_equal(kcr_typed_owner_ref_remove(&APP, owner, m, NULL), 0);
  assert_int_equal(m->owner_references_len, 1);
  assert_false(kcr_typed_owner_ref_has_controller(m));
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_owner_ref_remove(&APP, owner, m, &err), KCR_ENOENT);
  assert_string_equal(err.message, "ns/child does not have an owner reference for App app");
  assert_int_equal(kcr_typed_owner_ref_remove(&other_gvk, other, m, NULL), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_owner_ref_remove(&other_gvk, other, m, &err), KCR_ENOENT);
  assert_string_equal(err.message, "ns/child does not have any owner references");
  kcr_meta_v1_object_meta_free(m);

  /* cross-namespace and cluster-scoped objects are refused, unchanged */
  m = meta_of("{\"namespace\":\"elsewhere\",\"name\":\"child\"}");
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_owner_ref_set_controller(&APP, owner, m, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "cross-namespace"));
  assert_int_equal(m->owner_references_len, 0);
  assert_false(m->has_owner_references);
  kcr_meta_v1_object_meta_free(m);
  m = meta_of("{\"name\":\"clusterwide\"}");
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_owner_ref_set(&APP, owner, m, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "cluster-scoped resource must not have a namespace-scoped"));
  /* a cluster-scoped owner may own anything */
  kcr_meta_v1_mem_free(other->namespace);
  other->namespace = NULL;
  assert_int_equal(kcr_typed_owner_ref_set(&other_gvk, other, m, NULL), 0);
  kcr_meta_v1_object_meta_free(m);
  /* an owner without a uid, a kind without a version, NULL arguments */
  m = meta_of("{\"namespace\":\"ns\",\"name\":\"c\"}");
  kcr_error_clear(&err);
  kcr_meta_v1_mem_free(owner->uid);
  owner->uid = NULL;
  assert_int_equal(kcr_typed_owner_ref_set(&APP, owner, m, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "owner needs apiVersion, kind, metadata.name and uid"));
  owner->uid = kcr_meta_v1_mem_strdup("u-1");
  assert_int_equal(kcr_typed_owner_ref_set(&(kcr_gvk){"kcr.dev", NULL, "App"}, owner, m, NULL),
                   KCR_EINVAL);
  assert_int_equal(kcr_typed_owner_ref_set(NULL, owner, m, NULL), KCR_EINVAL);
  assert_int_equal(kcr_typed_owner_ref_set_controller(&APP, NULL, m, NULL), KCR_EINVAL);
  assert_int_equal(kcr_typed_owner_ref_set_controller(&APP, owner, NULL, NULL), KCR_EINVAL);
  assert_int_equal(kcr_typed_owner_ref_remove(&APP, owner, NULL, NULL), KCR_EINVAL);
  assert_false(kcr_typed_owner_ref_has_controller(NULL));
  assert_int_equal(m->owner_references_len, 0);
  kcr_meta_v1_object_meta_free(m);
  kcr_meta_v1_object_meta_free(owner);
  kcr_meta_v1_object_meta_free(other);
  json_decref(jowner);
  json_decref(jobj);
}

static void test_typed_helpers_owner_ref_alloc(void **state) {
  kcr_meta_v1_object_meta_t *owner = meta_of(OWNER_META);
  kcr_meta_v1_object_meta_t *m = meta_of("{\"namespace\":\"ns\",\"name\":\"c\"}");
  (void)state;
  /* appending, then replacing the same owner: each failure leaves meta as it was */
  KCR_TEST_ALLOC_LOOP(kcr_typed_owner_ref_set_controller(&APP, owner, m, NULL),
                      assert_true(m->owner_references_len == 1 ||
                                  (m->owner_references_len == 0 && !m->has_owner_references)));
  KCR_TEST_ALLOC_LOOP(kcr_typed_owner_ref_set_controller(&APP, owner, m, NULL),
                      (assert_int_equal(m->owner_references_len, 1),
                       assert_string_equal(m->owner_references[0].uid, "u-1")));
  kcr_meta_v1_object_meta_free(m);
  kcr_meta_v1_object_meta_free(owner);
}

/* ---- conditions ---- */

static void test_typed_helpers_conditions(void **state) {
  app_v1alpha1_status_t st = {0};
  kcr_meta_v1_condition_t *c;
  kcr_clock_t *clk;
  bool ch;
  json_t *jconds = json_array(), *enc = NULL;
  kcr_condition jready = {"Ready", "False", "Creating", "starting 1 of 3", 3, {0, 0}};
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1700000000, 0}, &clk, NULL), 0);
  assert_null(kcr_typed_condition_find(KCR_CONDITIONS(&st), "Ready"));
  assert_false(kcr_typed_condition_is_true(KCR_CONDITIONS(&st), "Ready"));
  assert_int_equal(kcr_typed_condition_set(KCR_CONDITIONS(&st), "Ready", "False", "Creating", 3,
                                           clk, &ch, "starting %d of %d", 1, 3),
                   0);
  assert_true(ch);
  assert_true(st.has_conditions);
  assert_int_equal(st.conditions_len, 1);
  /* exactly what the JSON helper writes */
  assert_int_equal(kcr_condition_set(jconds, &jready, clk, NULL), 0);
  assert_int_equal(kcr_meta_v1_condition_encode(&st.conditions[0], &enc, NULL), 0);
  assert_true(json_equal(enc, json_array_get(jconds, 0)));
  json_decref(enc);
  json_decref(jconds);
  c = kcr_typed_condition_find(KCR_CONDITIONS(&st), "Ready");
  assert_ptr_equal(c, &st.conditions[0]);
  assert_string_equal(c->last_transition_time, "2023-11-14T22:13:20Z");
  /* same status, new reason and generation: the time is kept, the rest updated */
  kcr_fake_clock_step(clk, 60 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_typed_condition_set(KCR_CONDITIONS(&st), "Ready", "False", "StillCreating",
                                           4, clk, &ch, "starting"),
                   0);
  assert_true(ch);
  c = kcr_typed_condition_find(KCR_CONDITIONS(&st), "Ready");
  assert_string_equal(c->last_transition_time, "2023-11-14T22:13:20Z");
  assert_string_equal(c->reason, "StillCreating");
  assert_string_equal(c->message, "starting");
  assert_int_equal(c->observed_generation, 4);
  /* nothing new: unchanged; the generation alone is a change */
  assert_int_equal(kcr_typed_condition_set(KCR_CONDITIONS(&st), "Ready", "False", "StillCreating",
                                           4, clk, &ch, "starting"),
                   0);
  assert_false(ch);
  assert_int_equal(kcr_typed_condition_set(KCR_CONDITIONS(&st), "Ready", "False", "StillCreating",
                                           5, clk, &ch, "starting"),
                   0);
  assert_true(ch);
  assert_false(kcr_typed_condition_is_true(KCR_CONDITIONS(&st), "Ready"));
  assert_true(kcr_typed_condition_is_false(KCR_CONDITIONS(&st), "Ready"));
  /* the status changes: the time moves; NULL reason and message are "" */
  assert_int_equal(
      kcr_typed_condition_set(KCR_CONDITIONS(&st), "Ready", "True", NULL, 5, clk, &ch, NULL), 0);
  assert_true(ch);
  c = kcr_typed_condition_find(KCR_CONDITIONS(&st), "Ready");
  assert_string_equal(c->last_transition_time, "2023-11-14T22:14:20Z");
  assert_string_equal(c->reason, "");
  assert_string_equal(c->message, "");
  assert_true(kcr_typed_condition_is_true(KCR_CONDITIONS(&st), "Ready"));
  assert_false(kcr_typed_condition_is_false(KCR_CONDITIONS(&st), "Ready"));
  /* a second type, a message longer than the formatting buffer */
  {
    char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(kcr_typed_condition_set(KCR_CONDITIONS(&st), "Degraded", "Unknown", "R", 1,
                                             NULL, NULL, "%s!", big),
                     0);
    c = kcr_typed_condition_find(KCR_CONDITIONS(&st), "Degraded");
    assert_int_equal(strlen(c->message), sizeof(big));
    assert_int_equal(c->message[sizeof(big) - 1], '!');
  }
  assert_int_equal(st.conditions_len, 2);
  /* remove keeps the others in order */
  assert_true(kcr_typed_condition_remove(KCR_CONDITIONS(&st), "Ready"));
  assert_false(kcr_typed_condition_remove(KCR_CONDITIONS(&st), "Ready"));
  assert_int_equal(st.conditions_len, 1);
  assert_string_equal(st.conditions[0].type, "Degraded");
  assert_true(kcr_typed_condition_remove(KCR_CONDITIONS(&st), "Degraded"));
  assert_int_equal(st.conditions_len, 0);
  assert_true(st.has_conditions);
  /* bad arguments */
  assert_int_equal(
      kcr_typed_condition_set(KCR_CONDITIONS(&st), NULL, "True", NULL, 0, clk, &ch, NULL),
      KCR_EINVAL);
  assert_false(ch);
  assert_int_equal(
      kcr_typed_condition_set(KCR_CONDITIONS(&st), "Ready", NULL, NULL, 0, clk, NULL, NULL),
      KCR_EINVAL);
  assert_int_equal(kcr_typed_condition_set(NULL, &st.conditions_len, &st.has_conditions, "Ready",
                                           "True", NULL, 0, clk, NULL, NULL),
                   KCR_EINVAL);
  assert_null(kcr_typed_condition_find(NULL, NULL, NULL, "Ready"));
  assert_null(kcr_typed_condition_find(KCR_CONDITIONS(&st), NULL));
  assert_false(kcr_typed_condition_remove(KCR_CONDITIONS(&st), NULL));
  app_v1alpha1_status_clear(&st);
  kcr_clock_destroy(clk);
}

/*
 * KCR_CONDITION_LIST: the condition helpers on a header type's
 * KCR_LIST(kcr_meta_v1_condition_t) member, which has no presence flag.
 */
static void test_typed_helpers_condition_list(void **state) {
  struct {
    KCR_LIST(kcr_meta_v1_condition_t) conditions;
  } st = {{0}};
  kcr_meta_v1_condition_t *c;
  bool ch = false;
  (void)state;
  assert_null(kcr_typed_condition_find(KCR_CONDITION_LIST(&st.conditions), "Available"));
  assert_int_equal(kcr_typed_condition_set(KCR_CONDITION_LIST(&st.conditions), "Available",
                                           "Unknown", "Reconciling", 1, NULL, &ch, "starting %d",
                                           1),
                   0);
  assert_true(ch);
  assert_int_equal(st.conditions.len, 1);
  assert_string_equal(st.conditions.items[0].message, "starting 1");
  assert_int_equal(kcr_typed_condition_set(KCR_CONDITION_LIST(&st.conditions), "Degraded", "False",
                                           "Fine", 1, NULL, NULL, NULL),
                   0);
  assert_int_equal(st.conditions.len, 2);
  c = kcr_typed_condition_find(KCR_CONDITION_LIST(&st.conditions), "Degraded");
  assert_non_null(c);
  assert_string_equal(c->reason, "Fine");
  assert_true(kcr_typed_condition_is_false(KCR_CONDITION_LIST(&st.conditions), "Degraded"));
  assert_false(kcr_typed_condition_is_true(KCR_CONDITION_LIST(&st.conditions), "Available"));
  assert_int_equal(kcr_typed_condition_set(KCR_CONDITION_LIST(&st.conditions), "Available", "True",
                                           "Ready", 2, NULL, &ch, "up"),
                   0);
  assert_true(ch);
  assert_true(kcr_typed_condition_is_true(KCR_CONDITION_LIST(&st.conditions), "Available"));
  assert_int_equal(st.conditions.items[0].observed_generation, 2);
  assert_true(kcr_typed_condition_remove(KCR_CONDITION_LIST(&st.conditions), "Available"));
  assert_false(kcr_typed_condition_remove(KCR_CONDITION_LIST(&st.conditions), "Available"));
  assert_int_equal(st.conditions.len, 1);
  assert_string_equal(st.conditions.items[0].type, "Degraded");
  for (size_t i = 0; i < st.conditions.len; i++)
    kcr_meta_v1_condition_clear(&st.conditions.items[i]);
  kcr_meta_v1_mem_free(st.conditions.items);
}

/* A failed allocation leaves the array as it was: no half-made condition. */
static void test_typed_helpers_condition_alloc(void **state) {
  app_v1alpha1_status_t st = {0};
  kcr_clock_t *clk;
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1700000000, 0}, &clk, NULL), 0);
  KCR_TEST_ALLOC_LOOP(
      kcr_typed_condition_set(KCR_CONDITIONS(&st), "Ready", "False", "Creating", 1, clk, NULL, "m"),
      assert_true(st.conditions_len <= 1));
  assert_int_equal(st.conditions_len, 1);
  KCR_TEST_ALLOC_LOOP(kcr_typed_condition_set(KCR_CONDITIONS(&st), "Ready", "True", "Available", 2,
                                              clk, NULL, "up"),
                      assert_true(strcmp(st.conditions[0].status, "True") != 0 ||
                                  strcmp(st.conditions[0].message, "up") == 0));
  assert_string_equal(st.conditions[0].reason, "Available");
  app_v1alpha1_status_clear(&st);
  kcr_clock_destroy(clk);
}

/* ---- events ---- */

static void test_typed_helpers_event_record_meta(void **state) {
  kcr_event_recorder_t *r = NULL;
  kcr_meta_v1_object_meta_t *m =
      meta_of("{\"namespace\":\"ns\",\"name\":\"app\",\"uid\":\"u-1\",\"resourceVersion\":\"7\"}");
  json_t *events;
  (void)state;
  assert_int_equal(kcr_fake_recorder_create(&r, NULL), 0);
  assert_int_equal(kcr_event_record_meta(r, &APP, m, KCR_EVENT_NORMAL, "Created", "Create",
                                         "created %d objects", 2),
                   0);
  events = kcr_fake_recorder_events(r);
  assert_json(events, "[{\"type\":\"Normal\",\"reason\":\"Created\",\"action\":\"Create\","
                      "\"note\":\"created 2 objects\",\"regarding\":{\"apiVersion\":"
                      "\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"namespace\":\"ns\",\"name\":"
                      "\"app\",\"uid\":\"u-1\"}}]");
  json_decref(events);
  /* core group: the apiVersion is the version alone */
  assert_int_equal(kcr_event_record_meta(r, &(kcr_gvk){"", "v1", "ConfigMap"}, m, KCR_EVENT_WARNING,
                                         "Failed", "Sync", NULL),
                   0);
  events = kcr_fake_recorder_events(r);
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(json_array_get(events, 1), "regarding"), "apiVersion")),
                      "v1");
  json_decref(events);
  assert_int_equal(kcr_event_record_meta(r, NULL, m, KCR_EVENT_NORMAL, "R", "A", "n"), KCR_EINVAL);
  assert_int_equal(kcr_event_record_meta(r, &APP, NULL, KCR_EVENT_NORMAL, "R", "A", "n"),
                   KCR_EINVAL);
  assert_int_equal(kcr_event_record_meta(r, &(kcr_gvk){"kcr.dev", NULL, "App"}, m, KCR_EVENT_NORMAL,
                                         "R", "A", "n"),
                   KCR_EINVAL);
  assert_int_equal(kcr_event_record_meta(r, &APP, m, "Bogus", "R", "A", "n"), KCR_EINVAL);
  assert_int_equal(kcr_fake_recorder_count(r, NULL, NULL), 2);
  kcr_event_recorder_destroy(r);
  kcr_meta_v1_object_meta_free(m);
}

/* ---- fixtures over the fake client ---- */

typedef struct fx {
  kcr_fake_client_t *f;
  kcr_objclient c;
  kcr_scheme_t *s;
} fx_t;

static int fx_setup(void **state) {
  fx_t *fx = calloc(1, sizeof(*fx));
  assert_non_null(fx);
  assert_int_equal(kcr_fake_client_create(NULL, &fx->f, NULL), 0);
  fx->c = kcr_fake_client_objclient(fx->f);
  assert_int_equal(kcr_scheme_create(&fx->s, NULL), 0);
  assert_int_equal(app_v1alpha1_register(fx->s, NULL), 0);
  *state = fx;
  return 0;
}

static int fx_teardown(void **state) {
  fx_t *fx = *state;
  kcr_fake_client_destroy(fx->f);
  kcr_scheme_destroy(fx->s);
  free(fx);
  return 0;
}

#define APP_JSON                                                                                   \
  "{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"metadata\":{\"namespace\":\"ns\","      \
  "\"name\":\"web\"},\"spec\":{\"image\":\"nginx:1\",\"replicas\":1},\"extra\":{\"kept\":true}}"

/* get reads the App ns/web. */
static app_v1alpha1_t *get(fx_t *fx) {
  void *out = NULL;
  assert_int_equal(kcr_typed_get(&fx->c, fx->s, &APP, "ns", "web", &out, NULL), 0);
  return out;
}

/* stored reads ns/web as JSON. */
static json_t *stored(fx_t *fx) {
  json_t *o = NULL;
  assert_int_equal(kcr_objclient_get(&fx->c, &APP, "ns", "web", &o, NULL), 0);
  return o;
}

/* skeleton makes a new App naming ns/web (spec.image is required to encode). */
static app_v1alpha1_t *skeleton(void) {
  app_v1alpha1_t *a = NULL;
  assert_int_equal(app_v1alpha1_create(&a, NULL), 0);
  assert_int_equal(kcr_meta_v1_object_meta_create(&a->metadata, NULL), 0);
  assert_int_equal(app_v1alpha1_spec_create(&a->spec, NULL), 0);
  a->metadata->namespace = kcr_meta_v1_mem_strdup("ns");
  a->metadata->name = kcr_meta_v1_mem_strdup("web");
  a->spec->image = kcr_meta_v1_mem_strdup("");
  return a;
}

/* ---- merge patches ---- */

static void test_typed_helpers_merge_from(void **state) {
  fx_t *fx = *state;
  app_v1alpha1_t *before, *after = NULL;
  void *out = NULL;
  json_t *p = NULL, *o;
  kcr_error_t err = {0};
  assert_int_equal(kcr_fake_client_add_json(fx->f, APP_JSON, NULL), 0);
  before = get(fx);
  assert_int_equal(app_v1alpha1_copy(before, &after, NULL), 0);
  /* equal: {} */
  assert_int_equal(kcr_typed_merge_from(fx->s, &APP, before, after, 0, &p, NULL), 0);
  assert_json(p, "{}");
  json_decref(p);
  after->spec->replicas = 3;
  assert_int_equal(kcr_typed_finalizer_add(after->metadata, "kcr.dev/cleanup", NULL), 0);
  assert_int_equal(kcr_typed_merge_from(fx->s, &APP, before, after, 0, &p, NULL), 0);
  assert_json(p, "{\"metadata\":{\"finalizers\":[\"kcr.dev/cleanup\"]},\"spec\":{\"replicas\":3}}");
  json_decref(p);
  assert_int_equal(
      kcr_typed_merge_from(fx->s, &APP, before, after, KCR_MERGE_FROM_OPTIMISTIC_LOCK, &p, NULL),
      0);
  assert_json(p, "{\"metadata\":{\"finalizers\":[\"kcr.dev/cleanup\"],\"resourceVersion\":\"1\"},"
                 "\"spec\":{\"replicas\":3}}");
  json_decref(p);
  /* sent: the server's answer, decoded; members the type does not know survive */
  assert_int_equal(kcr_typed_patch_merge_from(&fx->c, fx->s, &APP, before, after,
                                              KCR_MERGE_FROM_OPTIMISTIC_LOCK, NULL, &out, &err),
                   0);
  assert_int_equal(((app_v1alpha1_t *)out)->spec->replicas, 3);
  assert_true(kcr_typed_finalizer_contains(((app_v1alpha1_t *)out)->metadata, "kcr.dev/cleanup"));
  o = stored(fx);
  assert_int_equal(json_integer_value(kcr_meta_path(o, "spec.replicas")), 3);
  assert_json(json_object_get(o, "extra"), "{\"kept\":true}");
  json_decref(o);
  app_v1alpha1_free(out);
  out = NULL;
  /* the same patch again carries a stale resourceVersion: Conflict */
  after->spec->replicas = 4;
  assert_int_equal(kcr_typed_patch_merge_from(&fx->c, fx->s, &APP, before, after,
                                              KCR_MERGE_FROM_OPTIMISTIC_LOCK, NULL, &out, &err),
                   KCR_EAPI);
  assert_true(kcr_error_is_conflict(&err));
  assert_null(out);
  /* without the lock it goes through, out not wanted; status through the subresource */
  assert_int_equal(
      kcr_typed_patch_merge_from(&fx->c, fx->s, &APP, before, after, 0, NULL, NULL, NULL), 0);
  assert_int_equal(app_v1alpha1_status_create(&after->status, NULL), 0);
  after->status->url = kcr_meta_v1_mem_strdup("http://web");
  assert_int_equal(
      kcr_typed_patch_merge_from(&fx->c, fx->s, &APP, before, after, 0, "status", NULL, NULL), 0);
  o = stored(fx);
  assert_int_equal(json_integer_value(kcr_meta_path(o, "spec.replicas")), 4);
  assert_string_equal(json_string_value(kcr_meta_path(o, "status.url")), "http://web");
  json_decref(o);
  /* errors: no resourceVersion to lock on, unknown kind, NULL values */
  kcr_meta_v1_mem_free(after->metadata->resource_version);
  after->metadata->resource_version = NULL;
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_typed_merge_from(fx->s, &APP, before, after, KCR_MERGE_FROM_OPTIMISTIC_LOCK, &p, &err),
      KCR_EINVAL);
  assert_null(p);
  assert_non_null(strstr(err.message, "has no resourceVersion"));
  assert_int_equal(
      kcr_typed_merge_from(fx->s, &(kcr_gvk){"x.io", "v1", "Nope"}, before, after, 0, &p, NULL),
      KCR_ENOENT);
  assert_int_equal(kcr_typed_merge_from(fx->s, &APP, NULL, after, 0, &p, NULL), KCR_EINVAL);
  assert_int_equal(
      kcr_typed_patch_merge_from(&fx->c, fx->s, &APP, before, NULL, 0, NULL, &out, NULL),
      KCR_EINVAL);
  assert_null(out);
  /* an after the codec cannot encode (a required field unset) */
  kcr_meta_v1_mem_free(after->spec->image);
  after->spec->image = NULL;
  assert_int_equal(kcr_typed_merge_from(fx->s, &APP, before, after, 0, &p, NULL), KCR_EINVAL);
  assert_null(p);
  app_v1alpha1_free(before);
  app_v1alpha1_free(after);
}

static void test_typed_helpers_merge_from_alloc(void **state) {
  fx_t *fx = *state;
  app_v1alpha1_t *before, *after = NULL;
  json_t *p = NULL;
  assert_int_equal(kcr_fake_client_add_json(fx->f, APP_JSON, NULL), 0);
  before = get(fx);
  assert_int_equal(app_v1alpha1_copy(before, &after, NULL), 0);
  after->spec->replicas = 2;
  KCR_TEST_ALLOC_LOOP(
      kcr_typed_merge_from(fx->s, &APP, before, after, KCR_MERGE_FROM_OPTIMISTIC_LOCK, &p, NULL),
      (json_decref(p), p = NULL));
  app_v1alpha1_free(before);
  app_v1alpha1_free(after);
}

/* ---- create or update ---- */

typedef struct want {
  const char *image;
  int32_t replicas;
  const char *url; /* NULL: status untouched */
} want_t;

static int on_mutate(void *obj, void *data, kcr_error_t *err) {
  app_v1alpha1_t *a = obj;
  const want_t *w = data;
  (void)err;
  kcr_meta_v1_mem_free(a->spec->image);
  a->spec->image = kcr_meta_v1_mem_strdup(w->image);
  a->spec->replicas = w->replicas;
  a->spec->has_replicas = true;
  if (w->url) {
    if (!a->status && app_v1alpha1_status_create(&a->status, NULL) != 0)
      return KCR_ENOMEM;
    kcr_meta_v1_mem_free(a->status->url);
    a->status->url = kcr_meta_v1_mem_strdup(w->url);
  }
  return a->spec->image ? 0 : KCR_ENOMEM;
}

static int on_rename(void *obj, void *data, kcr_error_t *err) {
  app_v1alpha1_t *a = obj;
  (void)data;
  (void)err;
  kcr_meta_v1_mem_free(a->metadata->name);
  a->metadata->name = kcr_meta_v1_mem_strdup("other");
  return 0;
}

static int on_refuse(void *obj, void *data, kcr_error_t *err) {
  (void)obj;
  (void)data;
  return kcr_error_set(err, KCR_ECANCELED, "mutate refused");
}

static void test_typed_helpers_create_or_update(void **state) {
  fx_t *fx = *state;
  void *obj = skeleton();
  void *given;
  want_t w = {"nginx:1", 2, NULL};
  kcr_op_result r;
  kcr_error_t err = {0};
  json_t *o;
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, &obj, on_mutate, &w, &r, &err),
                   0);
  assert_int_equal(r, KCR_OP_CREATED);
  assert_int_equal(err.code, 0); /* the NotFound of the read is not left behind */
  assert_string_equal(((app_v1alpha1_t *)obj)->metadata->resource_version, "1");
  assert_string_equal(((app_v1alpha1_t *)obj)->metadata->uid,
                      json_string_value(kcr_meta_path(o = stored(fx), "metadata.uid")));
  json_decref(o);
  /* the same state: nothing written (the codec's round trip is exact) */
  kcr_fake_client_reset_calls(fx->f);
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, &obj, on_mutate, &w, &r, &err),
                   0);
  assert_int_equal(r, KCR_OP_UNCHANGED);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_UPDATE), 0);
  /* a new state: one update; fields the type does not know survive */
  o = stored(fx);
  json_object_set_new(o, "extra", json_true());
  assert_int_equal(kcr_objclient_update(&fx->c, o, NULL, NULL, NULL), 0);
  json_decref(o);
  w.replicas = 5;
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, &obj, on_mutate, &w, &r, &err),
                   0);
  assert_int_equal(r, KCR_OP_UPDATED);
  assert_int_equal(((app_v1alpha1_t *)obj)->spec->replicas, 5);
  o = stored(fx);
  assert_int_equal(json_integer_value(kcr_meta_path(o, "spec.replicas")), 5);
  assert_true(json_is_true(json_object_get(o, "extra")));
  json_decref(o);
  /* renaming is refused, nothing written, *obj left as given */
  kcr_fake_client_reset_calls(fx->f);
  given = obj;
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, &obj, on_rename, NULL, &r, &err),
                   KCR_EINVAL);
  assert_non_null(strstr(err.message, "cannot mutate object name"));
  assert_ptr_equal(obj, given);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_UPDATE), 0);
  /* the mutate function's error is returned as it is */
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, &obj, on_refuse, NULL, &r, &err),
                   KCR_ECANCELED);
  assert_string_equal(err.message, "mutate refused");
  /* no mutate function: read only */
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, &obj, NULL, NULL, &r, NULL), 0);
  assert_int_equal(r, KCR_OP_UNCHANGED);
  /* an unknown kind, no object */
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &(kcr_gvk){"x.io", "v1", "Nope"}, &obj,
                                              on_mutate, &w, &r, NULL),
                   KCR_ENOENT);
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, NULL, on_mutate, &w, &r, NULL),
                   KCR_EINVAL);
  given = NULL;
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, &given, on_mutate, &w, &r, NULL),
                   KCR_EINVAL);
  app_v1alpha1_free(obj);
}

static void test_typed_helpers_create_or_patch(void **state) {
  fx_t *fx = *state;
  void *obj = skeleton();
  want_t w = {"nginx:1", 1, NULL};
  kcr_op_result r;
  json_t *o;
  assert_int_equal(kcr_typed_create_or_patch(&fx->c, fx->s, &APP, &obj, on_mutate, &w, &r, NULL),
                   0);
  assert_int_equal(r, KCR_OP_CREATED);
  kcr_fake_client_reset_calls(fx->f);
  assert_int_equal(kcr_typed_create_or_patch(&fx->c, fx->s, &APP, &obj, on_mutate, &w, &r, NULL),
                   0);
  assert_int_equal(r, KCR_OP_UNCHANGED);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_PATCH), 0);
  w.url = "http://web";
  assert_int_equal(kcr_typed_create_or_patch(&fx->c, fx->s, &APP, &obj, on_mutate, &w, &r, NULL),
                   0);
  assert_int_equal(r, KCR_OP_UPDATED_STATUS_ONLY);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_PATCH), 1);
  w.replicas = 3;
  w.url = "http://web:8080";
  assert_int_equal(kcr_typed_create_or_patch(&fx->c, fx->s, &APP, &obj, on_mutate, &w, &r, NULL),
                   0);
  assert_int_equal(r, KCR_OP_UPDATED_STATUS);
  assert_string_equal(((app_v1alpha1_t *)obj)->status->url, "http://web:8080");
  o = stored(fx);
  assert_int_equal(json_integer_value(kcr_meta_path(o, "spec.replicas")), 3);
  assert_string_equal(json_string_value(kcr_meta_path(o, "status.url")), "http://web:8080");
  json_decref(o);
  w.replicas = 4;
  w.url = NULL;
  assert_int_equal(kcr_typed_create_or_patch(&fx->c, fx->s, &APP, &obj, on_mutate, &w, &r, NULL),
                   0);
  assert_int_equal(r, KCR_OP_UPDATED);
  app_v1alpha1_free(obj);
}

/* ---- the error record's traps ---- */

static int fail_500(const kcr_fake_call *call, kcr_error_t *err, void *data) {
  (void)call;
  (void)data;
  return kcr_fake_error(err, 500, "InternalError", "etcd is down");
}

/* After kcr_ignore_*, err is empty: the next failure records its own message. */
static void test_typed_helpers_ignore_clears(void **state) {
  fx_t *fx = *state;
  kcr_error_t err = {0};
  json_t *o = NULL, *stale;
  int rc;
  rc = kcr_objclient_get(&fx->c, &APP, "ns", "web", &o, &err);
  assert_int_equal(rc, KCR_EAPI);
  assert_int_equal(kcr_ignore_not_found(rc, &err), 0);
  assert_int_equal(err.code, 0);
  assert_string_equal(err.message, "");
  kcr_fake_client_intercept(fx->f, KCR_FAKE_GET, fail_500, NULL);
  assert_int_equal(kcr_objclient_get(&fx->c, &APP, "ns", "web", &o, &err), KCR_EAPI);
  assert_string_equal(err.message, "etcd is down");
  assert_false(kcr_error_is_not_found(&err));
  /* not the ignored kind: returned, err untouched */
  assert_int_equal(kcr_ignore_not_found(KCR_EAPI, &err), KCR_EAPI);
  assert_int_equal(kcr_ignore_already_exists(KCR_EAPI, &err), KCR_EAPI);
  assert_int_equal(kcr_ignore_conflict(KCR_EAPI, &err), KCR_EAPI);
  assert_string_equal(err.message, "etcd is down");
  assert_int_equal(kcr_ignore_not_found(KCR_ENOMEM, NULL), KCR_ENOMEM);
  assert_int_equal(kcr_ignore_conflict(0, NULL), 0);
  kcr_fake_client_intercept(fx->f, KCR_FAKE_GET, NULL, NULL);
  kcr_error_clear(&err);

  /* AlreadyExists */
  o = load(APP_JSON);
  assert_int_equal(kcr_objclient_create(&fx->c, o, NULL, NULL), 0);
  rc = kcr_objclient_create(&fx->c, o, NULL, &err);
  assert_int_equal(rc, KCR_EAPI);
  assert_true(kcr_error_is_already_exists(&err));
  assert_int_equal(kcr_ignore_conflict(rc, &err), KCR_EAPI); /* another kind: kept */
  assert_int_equal(kcr_ignore_already_exists(rc, &err), 0);
  assert_int_equal(err.code, 0);
  kcr_fake_client_intercept(fx->f, KCR_FAKE_CREATE, fail_500, NULL);
  assert_int_equal(kcr_objclient_create(&fx->c, o, NULL, &err), KCR_EAPI);
  assert_string_equal(err.message, "etcd is down");
  kcr_fake_client_intercept(fx->f, KCR_FAKE_CREATE, NULL, NULL);
  kcr_error_clear(&err);
  json_decref(o);

  /* Conflict: an update of a stale copy */
  stale = stored(fx);
  o = stored(fx);
  assert_int_equal(kcr_objclient_update(&fx->c, o, NULL, NULL, NULL), 0);
  json_object_set_new(o, "extra", json_true());
  assert_int_equal(kcr_objclient_update(&fx->c, o, NULL, NULL, NULL), 0);
  rc = kcr_objclient_update(&fx->c, stale, NULL, NULL, &err);
  assert_int_equal(rc, KCR_EAPI);
  assert_true(kcr_error_is_conflict(&err));
  assert_int_equal(kcr_ignore_not_found(rc, &err), KCR_EAPI);
  assert_int_equal(kcr_ignore_conflict(rc, &err), 0);
  assert_int_equal(err.code, 0);
  kcr_fake_client_intercept(fx->f, KCR_FAKE_UPDATE, fail_500, NULL);
  assert_int_equal(kcr_objclient_update(&fx->c, stale, NULL, NULL, &err), KCR_EAPI);
  assert_string_equal(err.message, "etcd is down");
  kcr_fake_client_intercept(fx->f, KCR_FAKE_UPDATE, NULL, NULL);
  json_decref(o);
  json_decref(stale);
}

/* create-or-update tolerates the NotFound of its read without recording it: a
 * failing create reports itself, JSON and typed. */
static void test_typed_helpers_not_found_tolerated(void **state) {
  fx_t *fx = *state;
  kcr_error_t err = {0};
  void *obj = skeleton();
  json_t *j = load(APP_JSON);
  want_t w = {"nginx:1", 1, NULL};
  kcr_fake_client_intercept(fx->f, KCR_FAKE_CREATE, fail_500, NULL);
  assert_int_equal(kcr_create_or_update(&fx->c, j, NULL, NULL, NULL, &err), KCR_EAPI);
  assert_string_equal(err.message, "etcd is down");
  assert_false(kcr_error_is_not_found(&err));
  kcr_error_clear(&err);
  assert_int_equal(kcr_create_or_patch(&fx->c, j, NULL, NULL, NULL, &err), KCR_EAPI);
  assert_string_equal(err.message, "etcd is down");
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, &obj, on_mutate, &w, NULL, &err),
                   KCR_EAPI);
  assert_string_equal(err.message, "etcd is down");
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_create_or_patch(&fx->c, fx->s, &APP, &obj, on_mutate, &w, NULL, &err),
                   KCR_EAPI);
  assert_string_equal(err.message, "etcd is down");
  assert_int_equal(kcr_fake_client_count(fx->f, &APP, NULL), 0);
  /* a read that fails otherwise is reported as it is */
  kcr_fake_client_intercept(fx->f, KCR_FAKE_CREATE, NULL, NULL);
  kcr_fake_client_intercept(fx->f, KCR_FAKE_GET, fail_500, NULL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_create_or_update(&fx->c, fx->s, &APP, &obj, on_mutate, &w, NULL, &err),
                   KCR_EAPI);
  assert_string_equal(err.message, "etcd is down");
  kcr_fake_client_intercept(fx->f, KCR_FAKE_GET, NULL, NULL);
  /* and a create that succeeds leaves err empty */
  kcr_error_clear(&err);
  assert_int_equal(kcr_create_or_update(&fx->c, j, NULL, NULL, NULL, &err), 0);
  assert_int_equal(err.code, 0);
  assert_string_equal(err.message, "");
  json_decref(j);
  app_v1alpha1_free(obj);
}

/* Labels and annotations: set, replace, read; a selector from the labels. */
static void test_typed_helpers_labels(void **state) {
  kcr_meta_v1_object_meta_t *m = NULL;
  kcr_meta_v1_label_selector_t *sel = NULL;
  json_t *j = NULL;
  (void)state;
  assert_int_equal(kcr_meta_v1_object_meta_create(&m, NULL), 0);
  assert_int_equal(kcr_meta_v1_label_selector_create(&sel, NULL), 0);
  assert_null(kcr_typed_label(m, "app"));
  assert_int_equal(kcr_typed_label_set(m, "app", "web"), 0);
  assert_int_equal(kcr_typed_label_set(m, "tier", "front"), 0);
  assert_int_equal(kcr_typed_label_set(m, "app", "db"), 0);
  assert_int_equal(m->labels_len, 2);
  assert_true(m->has_labels);
  assert_string_equal(kcr_typed_label(m, "app"), "db");
  assert_int_equal(kcr_typed_annotation_set(m, "note", "x"), 0);
  assert_string_equal(kcr_typed_annotation(m, "note"), "x");
  assert_int_equal(kcr_typed_label_set(m, NULL, "v"), KCR_EINVAL);
  assert_int_equal(kcr_typed_selector_match_labels(sel, m), 0);
  assert_int_equal(kcr_meta_v1_label_selector_encode(sel, &j, NULL), 0);
  assert_string_equal(json_string_value(json_object_get(json_object_get(j, "matchLabels"), "app")),
                      "db");
  assert_int_equal(json_object_size(json_object_get(j, "matchLabels")), 2);
  json_decref(j);
  kcr_meta_v1_label_selector_free(sel);
  kcr_meta_v1_object_meta_free(m);
}

/* ---- typed watches ---- */

static void test_typed_helpers_watch(void **state) {
  fx_t *fx = *state;
  kcr_watch_options o = {.send_initial_events = 1, .allow_bookmarks = 1};
  kcr_watch_event_type type;
  kcr_objwatch_t *w = NULL;
  kcr_error_t err;
  void *out = NULL;
  const kcr_gvk unknown = {"kcr.dev", "v1alpha1", "Nope"};
  assert_int_equal(kcr_fake_client_add_json(fx->f, APP_JSON, NULL), 0);
  assert_int_equal(kcr_objclient_watch(&fx->c, &APP, "ns", &o, &w, NULL), 0);
  /* the current state, typed */
  assert_int_equal(kcr_typed_watch_next(w, fx->s, &APP, 0, &type, &out, NULL), 0);
  assert_int_equal(type, KCR_WATCH_ADDED);
  assert_string_equal(((app_v1alpha1_t *)out)->spec->image, "nginx:1");
  app_v1alpha1_free(out);
  /* the bookmark: no object */
  out = (void *)1;
  assert_int_equal(kcr_typed_watch_next(w, fx->s, &APP, 0, &type, &out, NULL), 0);
  assert_int_equal(type, KCR_WATCH_BOOKMARK);
  assert_null(out);
  /* nothing more yet */
  assert_int_equal(kcr_typed_watch_next(w, fx->s, &APP, 0, &type, &out, NULL), KCR_EAGAIN);
  /* a change */
  {
    app_v1alpha1_t *a = get(fx), *b = NULL;
    assert_int_equal(app_v1alpha1_copy(a, &b, NULL), 0);
    b->spec->replicas = 4;
    assert_int_equal(kcr_typed_patch_merge_from(&fx->c, fx->s, &APP, a, b, 0, NULL, &out, NULL), 0);
    app_v1alpha1_free(out);
    app_v1alpha1_free(a);
    app_v1alpha1_free(b);
  }
  assert_int_equal(kcr_typed_watch_next(w, fx->s, &APP, 0, &type, &out, NULL), 0);
  assert_int_equal(type, KCR_WATCH_MODIFIED);
  assert_int_equal(((app_v1alpha1_t *)out)->spec->replicas, 4);
  app_v1alpha1_free(out);
  /* a kind the scheme has no codec for */
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_watch_next(w, fx->s, &unknown, 0, &type, &out, &err), KCR_ENOENT);
  kcr_objwatch_destroy(w);
  /* an ERROR event is returned as its error, then the end */
  assert_int_equal(kcr_fake_client_set_watch_history(fx->f, 0, NULL), 0);
  o = (kcr_watch_options){.resource_version = "1"};
  assert_int_equal(kcr_objclient_watch(&fx->c, &APP, "ns", &o, &w, NULL), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_typed_watch_next(w, fx->s, &APP, 0, &type, &out, &err), KCR_EAPI);
  assert_int_equal(type, KCR_WATCH_ERROR);
  assert_null(out);
  assert_true(kcr_error_is_gone(&err));
  assert_int_equal(kcr_typed_watch_next(w, fx->s, &APP, 0, &type, &out, NULL), KCR_ECLOSED);
  kcr_objwatch_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_typed_helpers_finalizers),
      cmocka_unit_test(test_typed_helpers_labels),
      cmocka_unit_test(test_typed_helpers_finalizer_alloc),
      cmocka_unit_test(test_typed_helpers_controller_ref),
      cmocka_unit_test(test_typed_helpers_owner_ref_alloc),
      cmocka_unit_test(test_typed_helpers_conditions),
      cmocka_unit_test(test_typed_helpers_condition_list),
      cmocka_unit_test(test_typed_helpers_condition_alloc),
      cmocka_unit_test(test_typed_helpers_event_record_meta),
      cmocka_unit_test_setup_teardown(test_typed_helpers_merge_from, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_typed_helpers_merge_from_alloc, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_typed_helpers_create_or_update, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_typed_helpers_create_or_patch, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_typed_helpers_watch, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_typed_helpers_ignore_clears, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_typed_helpers_not_found_tolerated, fx_setup,
                                      fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
