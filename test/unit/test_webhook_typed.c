/* SPDX-License-Identifier: MIT */
/*
 * test_webhook_typed.c: typed webhooks (kcr_webhook_server_register_typed,
 * kcr/webhook.h) on the built-in ConfigMap's generated type and on a
 * hand-written codec that drops what it does not know: kubebuilder's paths,
 * the JSON Patch a typed defaulter's change becomes (and no removal for what
 * the codec dropped), the validator's calls per operation, its warnings, and
 * how its errors become answers (403, an API error's own status, 500, 400 for
 * an object that does not decode). Reviews go through
 * kcr__webhook_server_review, without HTTP (test_webhook.c covers that).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/apierror.h"
#include "kcr/base64.h"
#include "kcr/k8s/core_v1.h"
#include "kcr/typed.h"
#include "kcr/webhook.h"
#include "server/webhook_internal.h"
#include "testutil.h"

static const kcr_gvk CM = {"", "v1", "ConfigMap"};

/* ---- paths ---- */

static void check_paths(const char *group, const char *version, const char *kind,
                        const char *mutate, const char *validate) {
  kcr_gvk g = {group, version, kind};
  char buf[256];
  assert_int_equal(kcr_webhook_mutate_path(&g, buf, sizeof(buf)), 0);
  assert_string_equal(buf, mutate);
  assert_int_equal(kcr_webhook_validate_path(&g, buf, sizeof(buf)), 0);
  assert_string_equal(buf, validate);
}

static void test_webhook_typed_paths(void **state) {
  kcr_gvk g = {"apps", "v1", "Deployment"}, bad = {"apps", "", "Deployment"};
  char small[20] = "junk";
  (void)state;
  check_paths("kcr.dev", "v1alpha1", "App", "/mutate-kcr-dev-v1alpha1-app",
              "/validate-kcr-dev-v1alpha1-app");
  check_paths("apps", "v1", "Deployment", "/mutate-apps-v1-deployment",
              "/validate-apps-v1-deployment");
  /* The core group is "": two dashes, as controller-runtime writes them. */
  check_paths("", "v1", "ConfigMap", "/mutate--v1-configmap", "/validate--v1-configmap");
  check_paths(NULL, "v1", "Pod", "/mutate--v1-pod", "/validate--v1-pod");
  check_paths("batch.tutorial.kubebuilder.io", "v1", "CronJob",
              "/mutate-batch-tutorial-kubebuilder-io-v1-cronjob",
              "/validate-batch-tutorial-kubebuilder-io-v1-cronjob");
  /* Dots only in the group: a version or kind keeps its characters. */
  check_paths("x.io", "v1beta1", "HTTPRoute", "/mutate-x-io-v1beta1-httproute",
              "/validate-x-io-v1beta1-httproute");
  assert_int_equal(kcr_webhook_mutate_path(&bad, small, sizeof(small)), KCR_EINVAL);
  assert_string_equal(small, "");
  assert_int_equal(kcr_webhook_mutate_path(NULL, small, sizeof(small)), KCR_EINVAL);
  strcpy(small, "junk");
  assert_int_equal(kcr_webhook_validate_path(&g, small, sizeof(small)), KCR_ETOOBIG);
  assert_string_equal(small, "");
  assert_int_equal(kcr_webhook_mutate_path(&g, small, 0), KCR_ETOOBIG);
}

/* ---- reviews ---- */

/* review_body builds an AdmissionReview (new string) for op with obj and old
 * (JSON text or "null"). */
#define REVIEW_FMT                                                                                 \
  "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"             \
  "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"ConfigMap\"},"           \
  "\"operation\":\"%s\",\"name\":\"a\",\"namespace\":\"ns\","                                      \
  "\"userInfo\":{\"username\":\"alice\"},\"object\":%s,\"oldObject\":%s}}"

static char *review_body(const char *op, const char *obj, const char *old) {
  size_t n = strlen(REVIEW_FMT) + strlen(op) + strlen(obj) + strlen(old) + 1;
  char *b = malloc(n);
  snprintf(b, n, REVIEW_FMT, op, obj, old);
  return b;
}

/* run posts the review to path on ws; returns its "response" (new). */
static json_t *run(kcr_webhook_server_t *ws, const char *path, const char *op, const char *obj,
                   const char *old) {
  char *b = review_body(op, obj, old);
  json_t *out = kcr__webhook_server_review(ws, path, b, strlen(b)), *resp;
  free(b);
  assert_non_null(out);
  resp = json_incref(json_object_get(out, "response"));
  assert_non_null(resp);
  assert_string_equal(json_string_value(json_object_get(resp, "uid")), "u-1");
  json_decref(out);
  return resp;
}

static int code_of(json_t *resp) {
  return (int)json_integer_value(json_object_get(json_object_get(resp, "status"), "code"));
}

static const char *reason_of(json_t *resp) {
  const char *r = json_string_value(json_object_get(json_object_get(resp, "status"), "reason"));
  return r ? r : "";
}

static const char *message_of(json_t *resp) {
  return json_string_value(json_object_get(json_object_get(resp, "status"), "message"));
}

static const char *warning_of(json_t *resp, size_t i) {
  return json_string_value(json_array_get(json_object_get(resp, "warnings"), i));
}

/* patch_of returns the answer's JSON Patch ops, each dumped with sorted keys,
 * sorted and joined with '\n' (new string; "" without a patch). */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *patch_of(json_t *resp) {
  const char *b64 = json_string_value(json_object_get(resp, "patch"));
  unsigned char *raw = NULL;
  size_t raw_len = 0, n, len = 1;
  json_t *ops, *op;
  char **lines, *out;
  if (!b64)
    return strdup("");
  assert_string_equal(json_string_value(json_object_get(resp, "patchType")), "JSONPatch");
  assert_int_equal(kcr_base64_decode(b64, strlen(b64), &raw, &raw_len, NULL), 0);
  ops = json_loadb((const char *)raw, raw_len, 0, NULL);
  free(raw);
  assert_true(json_is_array(ops));
  n = json_array_size(ops);
  lines = calloc(n + 1, sizeof(*lines));
  json_array_foreach(ops, raw_len, op) {
    lines[raw_len] = json_dumps(op, JSON_COMPACT | JSON_SORT_KEYS);
    len += strlen(lines[raw_len]) + 1;
  }
  qsort(lines, n, sizeof(*lines), cmp_str);
  out = calloc(1, len);
  len = 0;
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(lines[i]);
    if (i)
      out[len++] = '\n';
    memcpy(out + len, lines[i], l + 1);
    len += l;
    free(lines[i]);
  }
  free(lines);
  json_decref(ops);
  return out;
}

/* ---- a typed defaulter and validator on ConfigMap ---- */

typedef struct calls {
  int defaults, creates, updates, deletes;
  char last_user[64];
} calls_t;

static const char *cm_data(const kcr_core_v1_config_map_t *cm, const char *key) {
  for (size_t i = 0; cm->has_data && i < cm->data_len; i++)
    if (strcmp(cm->data[i].key, key) == 0)
      return cm->data[i].value;
  return NULL;
}

/* cm_default labels the ConfigMap and sets data "mode" to "default" when
 * absent; data "fail" makes it fail with an API error. */
static int cm_default(void *data, const kcr_admission_request *req, void *obj, kcr_error_t *err) {
  kcr_core_v1_config_map_t *cm = obj;
  calls_t *c = data;
  kcr_core_v1_config_map_data_entry_t *d;
  int rc;
  c->defaults++;
  snprintf(c->last_user, sizeof(c->last_user), "%s",
           json_string_value(json_object_get(req->user_info, "username")));
  if (cm_data(cm, "fail"))
    return kcr_error_set_status(err, 422, "Invalid", "data.fail: defaulting refused");
  if ((rc = kcr_typed_label_set(cm->metadata, "kcr.dev/defaulted", "true")) != 0)
    return kcr_error_set(err, rc, "out of memory");
  if (cm_data(cm, "mode"))
    return 0;
  /* The array grows with the types' allocator, as their free expects. */
  d = kcr_core_v1_mem_calloc(cm->data_len + 1, sizeof(*d));
  if (!d)
    return kcr_error_set(err, KCR_ENOMEM, "out of memory");
  d[cm->data_len].key = kcr_core_v1_mem_strdup("mode");
  d[cm->data_len].value = kcr_core_v1_mem_strdup("default");
  if (!d[cm->data_len].key || !d[cm->data_len].value) {
    kcr_core_v1_mem_free(d[cm->data_len].key);
    kcr_core_v1_mem_free(d[cm->data_len].value);
    kcr_core_v1_mem_free(d);
    return kcr_error_set(err, KCR_ENOMEM, "out of memory");
  }
  if (cm->data_len > 0)
    memcpy(d, cm->data, cm->data_len * sizeof(*d));
  kcr_core_v1_mem_free(cm->data);
  cm->data = d;
  cm->data_len++;
  cm->has_data = true;
  return 0;
}

/* cm_validate_create refuses data "forbidden", warns about data "old". */
static int cm_validate_create(void *data, const kcr_admission_request *req, const void *obj,
                              kcr_admission_response *w, kcr_error_t *err) {
  const kcr_core_v1_config_map_t *cm = obj;
  calls_t *c = data;
  (void)req;
  c->creates++;
  if (cm_data(cm, "old"))
    kcr_admission_warn(w, "data.old is deprecated");
  if (cm_data(cm, "oom"))
    return kcr_error_set(err, KCR_ENOMEM, "no memory to validate");
  if (cm_data(cm, "silent"))
    return KCR_EINVAL;
  if (cm_data(cm, "forbidden"))
    return kcr_error_set(err, KCR_EINVAL, "data.forbidden is not allowed");
  return 0;
}

/* cm_validate_update refuses a change of data "locked" with an Invalid API
 * error and a warning. */
static int cm_validate_update(void *data, const kcr_admission_request *req, const void *old_obj,
                              const void *new_obj, kcr_admission_response *w, kcr_error_t *err) {
  const char *a = cm_data(old_obj, "locked"), *b = cm_data(new_obj, "locked");
  calls_t *c = data;
  (void)req;
  c->updates++;
  if (a && (!b || strcmp(a, b) != 0)) {
    kcr_admission_warn(w, "data.locked was %s", a);
    return kcr_error_set_status(err, 422, "Invalid", "data.locked: field is immutable");
  }
  return 0;
}

/* cm_validate_delete refuses deleting a ConfigMap labelled keep=true. */
static int cm_validate_delete(void *data, const kcr_admission_request *req, const void *obj,
                              kcr_admission_response *w, kcr_error_t *err) {
  const kcr_core_v1_config_map_t *cm = obj;
  calls_t *c = data;
  (void)req;
  (void)w;
  c->deletes++;
  if (cm->metadata && kcr_typed_label(cm->metadata, "keep"))
    return kcr_error_set(err, KCR_EINVAL, "%s is kept", cm->metadata->name);
  return 0;
}

typedef struct fix {
  kcr_scheme_t *s;
  kcr_webhook_server_t *ws;
  calls_t calls;
} fix_t;

static fix_t *setup(void) {
  fix_t *f = calloc(1, sizeof(*f));
  kcr_webhook_server_options o = {0};
  kcr_custom_defaulter d = {cm_default, NULL};
  kcr_custom_validator v = {cm_validate_create, cm_validate_update, cm_validate_delete, NULL};
  kcr_error_t err = {0};
  d.data = v.data = &f->calls;
  assert_int_equal(kcr_scheme_create(&f->s, NULL), 0);
  assert_int_equal(kcr_core_v1_config_map_register(f->s, NULL), 0);
  o.bind_address = "127.0.0.1:0";
  assert_int_equal(kcr_webhook_server_create(&o, &f->ws, NULL), 0);
  if (kcr_webhook_server_register_typed(f->ws, f->s, &CM, &d, &v, &err) != 0)
    fail_msg("register: %s", err.message);
  return f;
}

static void teardown(fix_t *f) {
  kcr_webhook_server_destroy(f->ws);
  kcr_scheme_destroy(f->s);
  free(f);
}

#define OBJ(meta, data)                                                                            \
  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\",\"namespace\":"      \
  "\"ns\"" meta "},\"data\":{" data "}}"

static void test_webhook_typed_default_patch(void **state) {
  fix_t *f = setup();
  json_t *r;
  char *p;
  (void)state;
  r = run(f->ws, "/mutate--v1-configmap", "CREATE", OBJ("", "\"a\":\"1\""), "null");
  assert_true(json_is_true(json_object_get(r, "allowed")));
  p = patch_of(r);
  assert_string_equal(p, "{\"op\":\"add\",\"path\":\"/data/mode\",\"value\":\"default\"}\n"
                         "{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{"
                         "\"kcr.dev/defaulted\":\"true\"}}");
  free(p);
  json_decref(r);
  assert_int_equal(f->calls.defaults, 1);
  assert_string_equal(f->calls.last_user, "alice");

  /* Labels already there: only the one label is added; fields kcr-gen's
   * codec does not know (extra) are kept, not removed. */
  r = run(f->ws, "/mutate--v1-configmap", "UPDATE",
          "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"extra\":{\"x\":1},\"metadata\":{"
          "\"name\":\"a\",\"labels\":{\"app\":\"x\"}},\"data\":{\"mode\":\"m\"}}",
          OBJ("", ""));
  p = patch_of(r);
  assert_string_equal(p, "{\"op\":\"add\",\"path\":\"/metadata/labels/kcr.dev~1defaulted\","
                         "\"value\":\"true\"}");
  free(p);
  json_decref(r);

  /* Nothing to change: no patch. */
  r = run(f->ws, "/mutate--v1-configmap", "CREATE",
          OBJ(",\"labels\":{\"kcr.dev/defaulted\":\"true\"}", "\"mode\":\"x\""), "null");
  assert_true(json_is_true(json_object_get(r, "allowed")));
  assert_null(json_object_get(r, "patch"));
  json_decref(r);

  /* DELETE is allowed untouched; the defaulter is not called. */
  r = run(f->ws, "/mutate--v1-configmap", "DELETE", "null", OBJ("", ""));
  assert_true(json_is_true(json_object_get(r, "allowed")));
  assert_null(json_object_get(r, "patch"));
  json_decref(r);
  assert_int_equal(f->calls.defaults, 3);

  /* A defaulter's API error keeps its status. */
  r = run(f->ws, "/mutate--v1-configmap", "CREATE", OBJ("", "\"fail\":\"1\""), "null");
  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_int_equal(code_of(r), 422);
  assert_string_equal(reason_of(r), "Invalid");
  assert_string_equal(message_of(r), "data.fail: defaulting refused");
  assert_null(json_object_get(r, "patch"));
  json_decref(r);

  /* An object that does not decode, or of another kind: 400, no call. */
  r = run(f->ws, "/mutate--v1-configmap", "CREATE", OBJ("", "\"a\":1"), "null");
  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_int_equal(code_of(r), 400);
  assert_string_equal(reason_of(r), "BadRequest");
  assert_non_null(strstr(message_of(r), "decoding the object as v1 ConfigMap: data"));
  json_decref(r);
  r = run(f->ws, "/mutate--v1-configmap", "CREATE",
          "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"a\"}}", "null");
  assert_int_equal(code_of(r), 400);
  assert_string_equal(message_of(r), "the object is v1 Secret; this webhook takes v1 ConfigMap");
  json_decref(r);
  assert_int_equal(f->calls.defaults, 4);
  teardown(f);
}

static void test_webhook_typed_validate(void **state) {
  fix_t *f = setup();
  json_t *r;
  (void)state;
  /* Allowed, with a warning. */
  r = run(f->ws, "/validate--v1-configmap", "CREATE", OBJ("", "\"old\":\"1\""), "null");
  assert_true(json_is_true(json_object_get(r, "allowed")));
  assert_null(json_object_get(r, "status"));
  assert_string_equal(warning_of(r, 0), "data.old is deprecated");
  json_decref(r);

  /* A plain error: 403 Forbidden with its message, the warning kept. */
  r = run(f->ws, "/validate--v1-configmap", "CREATE", OBJ("", "\"old\":\"1\",\"forbidden\":\"1\""),
          "null");
  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_int_equal(code_of(r), 403);
  assert_string_equal(reason_of(r), "Forbidden");
  assert_string_equal(message_of(r), "data.forbidden is not allowed");
  assert_string_equal(warning_of(r, 0), "data.old is deprecated");
  json_decref(r);

  /* An error without a message: the code's description. Out of memory: 500. */
  r = run(f->ws, "/validate--v1-configmap", "CREATE", OBJ("", "\"silent\":\"1\""), "null");
  assert_int_equal(code_of(r), 403);
  assert_string_equal(message_of(r), "invalid argument");
  json_decref(r);
  r = run(f->ws, "/validate--v1-configmap", "CREATE", OBJ("", "\"oom\":\"1\""), "null");
  assert_int_equal(code_of(r), 500);
  assert_string_equal(reason_of(r), "InternalError");
  assert_string_equal(message_of(r), "no memory to validate");
  json_decref(r);
  assert_int_equal(f->calls.creates, 4);

  /* UPDATE: old and new decoded; an API error keeps its code and reason. */
  r = run(f->ws, "/validate--v1-configmap", "UPDATE", OBJ("", "\"locked\":\"b\""),
          OBJ("", "\"locked\":\"a\""));
  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_int_equal(code_of(r), 422);
  assert_string_equal(reason_of(r), "Invalid");
  assert_string_equal(message_of(r), "data.locked: field is immutable");
  assert_string_equal(warning_of(r, 0), "data.locked was a");
  json_decref(r);
  r = run(f->ws, "/validate--v1-configmap", "UPDATE", OBJ("", "\"locked\":\"a\""),
          OBJ("", "\"locked\":\"a\""));
  assert_true(json_is_true(json_object_get(r, "allowed")));
  json_decref(r);
  /* An oldObject that does not decode: 400, no call. */
  r = run(f->ws, "/validate--v1-configmap", "UPDATE", OBJ("", ""), OBJ("", "\"x\":[]"));
  assert_int_equal(code_of(r), 400);
  assert_non_null(strstr(message_of(r), "decoding the oldObject as v1 ConfigMap"));
  json_decref(r);
  assert_int_equal(f->calls.updates, 2);

  /* DELETE validates the oldObject, the object being deleted. */
  r = run(f->ws, "/validate--v1-configmap", "DELETE", "null",
          OBJ(",\"labels\":{\"keep\":\"true\"}", ""));
  assert_int_equal(code_of(r), 403);
  assert_string_equal(message_of(r), "a is kept");
  json_decref(r);
  r = run(f->ws, "/validate--v1-configmap", "DELETE", "null", OBJ("", ""));
  assert_true(json_is_true(json_object_get(r, "allowed")));
  json_decref(r);
  r = run(f->ws, "/validate--v1-configmap", "DELETE", "null", "null");
  assert_int_equal(code_of(r), 400);
  assert_string_equal(message_of(r), "the review has no oldObject to decode");
  json_decref(r);
  assert_int_equal(f->calls.deletes, 2);

  /* CONNECT is allowed without a call; an unknown operation is a 400. */
  r = run(f->ws, "/validate--v1-configmap", "CONNECT", "null", "null");
  assert_true(json_is_true(json_object_get(r, "allowed")));
  json_decref(r);
  r = run(f->ws, "/validate--v1-configmap", "PATCH", OBJ("", ""), "null");
  assert_int_equal(code_of(r), 400);
  assert_string_equal(message_of(r), "unknown operation \"PATCH\"");
  json_decref(r);
  assert_int_equal(f->calls.creates + f->calls.updates + f->calls.deletes, 8);
  teardown(f);
}

/* ---- a codec that drops what it does not know (as a Go struct does) ---- */

typedef struct widget {
  char *name;
  long long replicas;
  int has_replicas;
} widget_t;

static int widget_decode(const json_t *obj, void **out, kcr_error_t *err, void *data) {
  json_t *r = json_object_get(json_object_get(obj, "spec"), "replicas");
  widget_t *w = calloc(1, sizeof(*w));
  (void)data;
  if (!w)
    return kcr_error_set(err, KCR_ENOMEM, "out of memory");
  w->name = strdup(json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
  if (r) {
    w->replicas = json_integer_value(r);
    w->has_replicas = 1;
  }
  *out = w;
  return 0;
}

static int widget_encode(const void *typed, json_t **out, kcr_error_t *err, void *data) {
  const widget_t *w = typed;
  json_t *spec = json_object();
  (void)data;
  if (w->has_replicas)
    json_object_set_new(spec, "replicas", json_integer(w->replicas));
  *out = json_pack("{s:{s:s}, s:o}", "metadata", "name", w->name, "spec", spec);
  return *out ? 0 : kcr_error_set(err, KCR_ENOMEM, "out of memory");
}

static void widget_free(void *typed, void *data) {
  widget_t *w = typed;
  (void)data;
  free(w->name);
  free(w);
}

static int widget_default(void *data, const kcr_admission_request *req, void *obj,
                          kcr_error_t *err) {
  widget_t *w = obj;
  (void)data;
  (void)req;
  (void)err;
  if (!w->has_replicas) {
    w->replicas = 1;
    w->has_replicas = 1;
  }
  return 0;
}

static void test_webhook_typed_default_keeps_dropped(void **state) {
  kcr_kind_info info = {0};
  kcr_gvk g = {"example.com", "v1", "Widget"};
  kcr_custom_defaulter d = {widget_default, NULL};
  kcr_webhook_server_options o = {0};
  kcr_webhook_server_t *ws;
  kcr_scheme_t *s;
  json_t *r;
  char *p;
  (void)state;
  info.group = "example.com";
  info.version = "v1";
  info.kind = "Widget";
  info.decode = widget_decode;
  info.encode = widget_encode;
  info.free_typed = widget_free;
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  assert_int_equal(kcr_scheme_register(s, &info, NULL), 0);
  o.bind_address = "127.0.0.1:0";
  assert_int_equal(kcr_webhook_server_create(&o, &ws, NULL), 0);
  assert_int_equal(kcr_webhook_server_register_typed(ws, s, &g, &d, NULL, NULL), 0);
  /* The codec knows metadata.name and spec.replicas only: the status, the
   * labels and spec.other survive, the one change is the replicas. */
  r = run(ws, "/mutate-example-com-v1-widget", "CREATE",
          "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\","
          "\"labels\":{\"a\":\"b\"}},\"spec\":{\"other\":[1,2]},\"status\":{\"ok\":true}}",
          "null");
  assert_true(json_is_true(json_object_get(r, "allowed")));
  p = patch_of(r);
  assert_string_equal(p, "{\"op\":\"add\",\"path\":\"/spec/replicas\",\"value\":1}");
  free(p);
  json_decref(r);
  /* A validator path was not asked for. */
  assert_null(kcr__webhook_server_review(ws, "/validate-example-com-v1-widget", "{}", 2));
  kcr_webhook_server_destroy(ws);
  kcr_scheme_destroy(s);
}

/* ---- registration ---- */

static int untyped(void *data, const kcr_admission_request *req, kcr_admission_response *resp,
                   kcr_error_t *err) {
  (void)data;
  (void)req;
  (void)resp;
  (void)err;
  return 0;
}

static void test_webhook_typed_register_errors(void **state) {
  kcr_kind_info bare = {0};
  kcr_gvk bare_gvk = {"example.com", "v1", "Bare"}, missing = {"example.com", "v1", "Nope"};
  kcr_gvk nover = {"", "", "ConfigMap"};
  kcr_custom_defaulter d = {cm_default, NULL}, empty = {NULL, NULL};
  kcr_custom_validator v = {cm_validate_create, NULL, NULL, NULL};
  kcr_webhook_server_options o = {0};
  kcr_webhook_server_t *ws;
  kcr_scheme_t *s;
  kcr_error_t err;
  calls_t calls = {0};
  json_t *r;
  (void)state;
  d.data = v.data = &calls;
  bare.group = "example.com";
  bare.version = "v1";
  bare.kind = "Bare";
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  assert_int_equal(kcr_core_v1_config_map_register(s, NULL), 0);
  assert_int_equal(kcr_scheme_register(s, &bare, NULL), 0);
  o.bind_address = "127.0.0.1:0";
  assert_int_equal(kcr_webhook_server_create(&o, &ws, NULL), 0);

  kcr_error_clear(&err);
  assert_int_equal(kcr_webhook_server_register_typed(ws, s, &CM, NULL, NULL, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "a defaulter"));
  assert_int_equal(kcr_webhook_server_register_typed(ws, s, &CM, &empty, &v, NULL), KCR_EINVAL);
  assert_int_equal(kcr_webhook_server_register_typed(ws, s, &nover, &d, NULL, NULL), KCR_EINVAL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_webhook_server_register_typed(ws, s, &missing, &d, NULL, &err), KCR_ENOENT);
  assert_string_equal(err.message, "webhook: kind example.com/v1 Nope is not in the scheme");
  assert_int_equal(kcr_webhook_server_register_typed(ws, s, &bare_gvk, &d, NULL, NULL),
                   KCR_ENOTSUP);

  /* The validating path is taken: nothing is registered, not even the
   * defaulter's path. */
  assert_int_equal(
      kcr_webhook_server_register_validating(ws, "/validate--v1-configmap", untyped, NULL), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_webhook_server_register_typed(ws, s, &CM, &d, &v, &err), KCR_EEXIST);
  assert_string_equal(err.message, "webhook: /validate--v1-configmap is registered already");
  assert_null(kcr__webhook_server_review(ws, "/mutate--v1-configmap", "{}", 2));
  /* The defaulter alone fits. */
  assert_int_equal(kcr_webhook_server_register_typed(ws, s, &CM, &d, NULL, NULL), 0);
  r = run(ws, "/mutate--v1-configmap", "CREATE", OBJ("", ""), "null");
  assert_non_null(json_object_get(r, "patch"));
  json_decref(r);
  assert_int_equal(calls.defaults, 1);
  assert_int_equal(kcr_webhook_server_register_typed(ws, s, &CM, &d, NULL, NULL), KCR_EEXIST);
  kcr_webhook_server_destroy(ws);
  kcr_scheme_destroy(s);
}

/* ---- conversion through a hub ---- */

/* A Gadget's versions keep one number under another name each (codec data:
 * the spec field); v2 is the hub. v1 -> hub multiplies by 10, hub -> v3 adds
 * 1, so a v1 -> v3 answer shows that both steps ran, in order. */
typedef struct gadget {
  char *name;
  long long n;
} gadget_t;

static int gadget_decode(const json_t *obj, void **out, kcr_error_t *err, void *data) {
  json_t *v = json_object_get(json_object_get(obj, "spec"), data);
  gadget_t *g;
  if (!json_is_integer(v))
    return kcr_error_set(err, KCR_EPARSE, "spec.%s: expected an integer", (const char *)data);
  g = calloc(1, sizeof(*g));
  g->name = strdup(json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
  g->n = json_integer_value(v);
  *out = g;
  return 0;
}

static int gadget_encode(const void *typed, json_t **out, kcr_error_t *err, void *data) {
  const gadget_t *g = typed;
  *out = json_pack("{s:{s:s}, s:{s:I}}", "metadata", "name", g->name, "spec", (const char *)data,
                   (json_int_t)g->n);
  return *out ? 0 : kcr_error_set(err, KCR_ENOMEM, "out of memory");
}

static gadget_t *gadget_new(const gadget_t *from, long long n) {
  gadget_t *g = calloc(1, sizeof(*g));
  g->name = strdup(from->name);
  g->n = n;
  return g;
}

static int v1_to_hub(void *data, const void *spoke, void **hub, kcr_error_t *err) {
  const gadget_t *g = spoke;
  (void)data;
  *hub = NULL;
  if (g->n < 0)
    return kcr_error_set(err, KCR_EINVAL, "size %lld cannot be negative", g->n);
  *hub = gadget_new(g, g->n * 10);
  return 0;
}

static int v1_from_hub(void *data, const void *hub, void **spoke, kcr_error_t *err) {
  const gadget_t *g = hub;
  (void)data;
  (void)err;
  *spoke = gadget_new(g, g->n / 10);
  return 0;
}

static int v3_to_hub(void *data, const void *spoke, void **hub, kcr_error_t *err) {
  const gadget_t *g = spoke;
  (void)data;
  (void)err;
  *hub = gadget_new(g, g->n - 1);
  return 0;
}

static int v3_from_hub(void *data, const void *hub, void **spoke, kcr_error_t *err) {
  const gadget_t *g = hub;
  (void)data;
  (void)err;
  *spoke = gadget_new(g, g->n + 1);
  return 0;
}

static void register_gadget(kcr_scheme_t *s, const char *version, const char *field) {
  kcr_kind_info info = {0};
  info.group = "example.com";
  info.version = version;
  info.kind = "Gadget";
  info.decode = gadget_decode;
  info.encode = gadget_encode;
  info.free_typed = widget_free; /* same layout: name first */
  info.codec_data = (void *)field;
  assert_int_equal(kcr_scheme_register(s, &info, NULL), 0);
}

/* convert_one converts one Gadget (its JSON) to desired; returns the
 * review's response (new). */
static json_t *convert_one(kcr_webhook_server_t *ws, const char *obj, const char *desired) {
  char body[1024];
  json_t *out, *resp;
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
           "\"request\":{\"uid\":\"c\",\"desiredAPIVersion\":\"%s\",\"objects\":[%s]}}",
           desired, obj);
  out = kcr__webhook_server_review(ws, KCR_WEBHOOK_CONVERT_PATH, body, strlen(body));
  assert_non_null(out);
  resp = json_incref(json_object_get(out, "response"));
  json_decref(out);
  return resp;
}

/* converted returns the one converted object, dumped with sorted keys (new). */
static char *converted(json_t *resp) {
  json_t *objs = json_object_get(resp, "convertedObjects");
  assert_string_equal(json_string_value(json_object_get(json_object_get(resp, "result"), "status")),
                      "Success");
  assert_int_equal(json_array_size(objs), 1);
  return json_dumps(json_array_get(objs, 0), JSON_COMPACT | JSON_SORT_KEYS);
}

static const char *failure(json_t *resp) {
  assert_string_equal(json_string_value(json_object_get(json_object_get(resp, "result"), "status")),
                      "Failure");
  return json_string_value(json_object_get(json_object_get(resp, "result"), "message"));
}

#define GADGET(v, field, n)                                                                        \
  "{\"apiVersion\":\"example.com/" v "\",\"kind\":\"Gadget\",\"metadata\":{\"name\":\"g\"},"       \
  "\"spec\":{\"" field "\":" n "}}"

static void test_webhook_typed_conversion(void **state) {
  kcr_gvk hub = {"example.com", "v2", "Gadget"};
  kcr_conversion_spoke spokes[] = {{"v1", v1_to_hub, v1_from_hub, NULL},
                                   {"v3", v3_to_hub, v3_from_hub, NULL}};
  kcr_webhook_server_options o = {0};
  kcr_webhook_server_t *ws;
  kcr_scheme_t *s;
  json_t *r;
  char *got;
  (void)state;
  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  register_gadget(s, "v1", "size");
  register_gadget(s, "v2", "replicas");
  register_gadget(s, "v3", "count");
  o.bind_address = "127.0.0.1:0";
  assert_int_equal(kcr_webhook_server_create(&o, &ws, NULL), 0);
  assert_int_equal(kcr_webhook_server_register_hub(ws, s, &hub, spokes, 2, NULL), 0);

  /* spoke -> hub -> spoke: both functions, in order. */
  r = convert_one(ws, GADGET("v1", "size", "2"), "example.com/v3");
  got = converted(r);
  assert_string_equal(got, "{\"apiVersion\":\"example.com/v3\",\"kind\":\"Gadget\",\"metadata\":"
                           "{\"name\":\"g\"},\"spec\":{\"count\":21}}");
  free(got);
  json_decref(r);
  /* hub -> spoke and spoke -> hub: one function each. */
  r = convert_one(ws, GADGET("v2", "replicas", "30"), "example.com/v1");
  got = converted(r);
  assert_non_null(strstr(got, "\"spec\":{\"size\":3}"));
  free(got);
  json_decref(r);
  r = convert_one(ws, GADGET("v3", "count", "21"), "example.com/v2");
  got = converted(r);
  assert_non_null(strstr(got, "\"apiVersion\":\"example.com/v2\""));
  assert_non_null(strstr(got, "\"spec\":{\"replicas\":20}"));
  free(got);
  json_decref(r);

  /* Failures name the object: a conversion's error, a bad object, an
   * unregistered version. */
  r = convert_one(ws, GADGET("v1", "size", "-1"), "example.com/v2");
  assert_string_equal(failure(r), "converting Gadget g from example.com/v1 to example.com/v2: "
                                  "size -1 cannot be negative");
  json_decref(r);
  r = convert_one(ws, GADGET("v1", "size", "\"x\""), "example.com/v2");
  assert_string_equal(failure(r), "converting Gadget g from example.com/v1 to example.com/v2: "
                                  "decoding it as example.com/v1: spec.size: expected an integer");
  json_decref(r);
  r = convert_one(ws, GADGET("v9", "size", "1"), "example.com/v2");
  assert_string_equal(failure(r), "converting Gadget g from example.com/v9 to example.com/v2: no "
                                  "conversion of Gadget from example.com/v9 to example.com/v2 is "
                                  "registered");
  json_decref(r);

  /* Registration errors leave nothing behind. */
  {
    kcr_conversion_spoke at_hub[] = {{"v2", v1_to_hub, v1_from_hub, NULL}};
    kcr_conversion_spoke twice[] = {{"v1", v1_to_hub, v1_from_hub, NULL},
                                    {"v1", v1_to_hub, v1_from_hub, NULL}};
    kcr_conversion_spoke unknown[] = {{"v7", v1_to_hub, v1_from_hub, NULL}};
    kcr_conversion_spoke half[] = {{"v1", v1_to_hub, NULL, NULL}};
    kcr_gvk other = {"example.com", "v2", "Other"};
    kcr_webhook_server_t *ws2;
    kcr_error_t err;
    assert_int_equal(kcr_webhook_server_register_hub(ws, s, &hub, spokes, 2, NULL), KCR_EEXIST);
    assert_int_equal(kcr_webhook_server_register_hub(ws, s, &other, spokes, 2, NULL), KCR_ENOENT);
    assert_int_equal(kcr_webhook_server_create(&o, &ws2, NULL), 0);
    assert_int_equal(kcr_webhook_server_register_hub(ws2, s, &hub, at_hub, 1, NULL), KCR_EINVAL);
    assert_int_equal(kcr_webhook_server_register_hub(ws2, s, &hub, twice, 2, NULL), KCR_EINVAL);
    assert_int_equal(kcr_webhook_server_register_hub(ws2, s, &hub, half, 1, NULL), KCR_EINVAL);
    assert_int_equal(kcr_webhook_server_register_hub(ws2, s, &hub, spokes, 0, NULL), KCR_EINVAL);
    kcr_error_clear(&err);
    assert_int_equal(kcr_webhook_server_register_hub(ws2, s, &hub, unknown, 1, &err), KCR_ENOENT);
    assert_string_equal(err.message, "webhook: kind example.com/v7 Gadget is not in the scheme");
    assert_null(kcr__webhook_server_review(ws2, KCR_WEBHOOK_CONVERT_PATH, "{}", 2));
    /* An untyped /convert is in the way. */
    assert_int_equal(
        kcr_webhook_server_register_validating(ws2, KCR_WEBHOOK_CONVERT_PATH, untyped, NULL), 0);
    assert_int_equal(kcr_webhook_server_register_hub(ws2, s, &hub, spokes, 2, NULL), KCR_EEXIST);
    kcr_webhook_server_destroy(ws2);
  }
  kcr_webhook_server_destroy(ws);
  kcr_scheme_destroy(s);
}

/* ---- out of memory ---- */

static fix_t *oom_fix;
static json_t *oom_out;

/* oom_review runs a defaulting and a validating review; 0 when both gave
 * their full answers, KCR_ENOMEM when either answer is missing or is the
 * server's 500. */
static int oom_review(void) {
  char *b = review_body("CREATE", OBJ("", "\"old\":\"1\""), "null");
  json_t *resp;
  int rc = 0;
  oom_out = kcr__webhook_server_review(oom_fix->ws, "/mutate--v1-configmap", b, strlen(b));
  resp = json_object_get(oom_out, "response");
  if (!oom_out || !json_is_true(json_object_get(resp, "allowed")) ||
      !json_object_get(resp, "patch"))
    rc = KCR_ENOMEM;
  json_decref(oom_out);
  oom_out = kcr__webhook_server_review(oom_fix->ws, "/validate--v1-configmap", b, strlen(b));
  resp = json_object_get(oom_out, "response");
  if (!oom_out || !json_is_true(json_object_get(resp, "allowed")) ||
      json_array_size(json_object_get(resp, "warnings")) != 1)
    rc = KCR_ENOMEM;
  free(b);
  return rc;
}

/* oom_convert converts a v1 Gadget to v3 on oom_ws: 0 for the full answer,
 * KCR_ENOMEM for none or a Failure. */
static kcr_webhook_server_t *oom_ws;

static int oom_convert(void) {
  json_t *resp;
  const char *st;
  char body[512];
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
           "\"request\":{\"uid\":\"c\",\"desiredAPIVersion\":\"example.com/v3\",\"objects\":"
           "[%s]}}",
           GADGET("v1", "size", "2"));
  oom_out = kcr__webhook_server_review(oom_ws, KCR_WEBHOOK_CONVERT_PATH, body, strlen(body));
  resp = json_object_get(oom_out, "response");
  st = json_string_value(json_object_get(json_object_get(resp, "result"), "status"));
  return st && strcmp(st, "Success") == 0 &&
                 json_integer_value(json_object_get(
                     json_object_get(json_array_get(json_object_get(resp, "convertedObjects"), 0),
                                     "spec"),
                     "count")) == 21
             ? 0
             : KCR_ENOMEM;
}

static void test_webhook_typed_alloc_failures(void **state) {
  kcr_gvk hub = {"example.com", "v2", "Gadget"};
  kcr_conversion_spoke spokes[] = {{"v1", v1_to_hub, v1_from_hub, NULL},
                                   {"v3", v3_to_hub, v3_from_hub, NULL}};
  kcr_webhook_server_options o = {0};
  kcr_scheme_t *s;
  (void)state;
  oom_fix = setup();
  KCR_TEST_ALLOC_LOOP(oom_review(), (json_decref(oom_out), oom_out = NULL));
  teardown(oom_fix);

  assert_int_equal(kcr_scheme_create(&s, NULL), 0);
  register_gadget(s, "v1", "size");
  register_gadget(s, "v2", "replicas");
  register_gadget(s, "v3", "count");
  o.bind_address = "127.0.0.1:0";
  assert_int_equal(kcr_webhook_server_create(&o, &oom_ws, NULL), 0);
  assert_int_equal(kcr_webhook_server_register_hub(oom_ws, s, &hub, spokes, 2, NULL), 0);
  KCR_TEST_ALLOC_LOOP(oom_convert(), (json_decref(oom_out), oom_out = NULL));
  kcr_webhook_server_destroy(oom_ws);
  kcr_scheme_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_webhook_typed_paths),
      cmocka_unit_test(test_webhook_typed_default_patch),
      cmocka_unit_test(test_webhook_typed_validate),
      cmocka_unit_test(test_webhook_typed_default_keeps_dropped),
      cmocka_unit_test(test_webhook_typed_register_errors),
      cmocka_unit_test(test_webhook_typed_conversion),
      cmocka_unit_test(test_webhook_typed_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
