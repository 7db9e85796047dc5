/* SPDX-License-Identifier: MIT */
/*
 * test_configmap_mirror.c: the example operator's reconciler against a fake
 * object client. A source that is gone deletes its copies, and when the list of
 * copies fails, the error it returns is the list's own (the NotFound of the
 * source was cleared with kcr_ignore_not_found and cannot mask it: the trap the
 * first-error-wins rule set before). A present source is copied into every
 * target namespace but its own.
 */
#include <stdio.h>
#include <string.h>

#include "kcr/apierror.h"
#include "kcr/controllerutil.h"
#include "kcr/meta.h"
#include "mirror.h"
#include "testutil.h"

typedef struct fake {
  json_t *source;       /* the source ConfigMap, or NULL: gone */
  json_t *copies;       /* the List the copies' list returns */
  json_t *targets;      /* the List of target namespaces */
  int list_fails;       /* the copies' list fails with a transport error */
  int creates, deletes; /* writes seen */
  char created_in[4][64];
} fake_t;

static int f_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                 json_t **out, kcr_error_t *err) {
  fake_t *f = c->data;
  *out = NULL;
  if (strcmp(gvk->kind, "ConfigMap") != 0 || !f->source ||
      strcmp(name, kcr_meta_name(f->source)) != 0 ||
      strcmp(ns, kcr_meta_namespace(f->source)) != 0) {
    /* As the manager's client words a miss. */
    kcr_error_set(err, KCR_EAPI, "configmaps \"%s\" not found", name);
    err->http_status = 404;
    snprintf(err->reason, sizeof(err->reason), "NotFound");
    return KCR_EAPI;
  }
  *out = json_deep_copy(f->source);
  return 0;
}

static int f_list(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *o,
                  json_t **out, kcr_error_t *err) {
  fake_t *f = c->data;
  (void)o;
  *out = NULL;
  if (strcmp(gvk->kind, "Namespace") == 0) {
    *out = json_deep_copy(f->targets);
    return 0;
  }
  if (f->list_fails)
    return kcr_error_set(err, KCR_ECONN, "list configmaps: connection refused");
  *out = json_deep_copy(f->copies);
  return 0;
}

static int f_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  fake_t *f = c->data;
  (void)err;
  if (f->creates < 4)
    snprintf(f->created_in[f->creates], sizeof(f->created_in[0]), "%s", kcr_meta_namespace(obj));
  f->creates++;
  *out = json_deep_copy(obj);
  return 0;
}

static int f_update(const kcr_objclient *c, const json_t *obj, const char *sub, json_t **out,
                    kcr_error_t *err) {
  (void)c;
  (void)sub;
  (void)err;
  *out = json_deep_copy(obj);
  return 0;
}

static int f_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                   const char *patch, size_t len, const char *sub, json_t **out, kcr_error_t *err) {
  (void)c;
  (void)type;
  (void)patch;
  (void)len;
  (void)sub;
  (void)err;
  *out = json_deep_copy(obj);
  return 0;
}

static int f_del(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                 kcr_error_t *err) {
  fake_t *f = c->data;
  (void)obj;
  (void)o;
  (void)err;
  f->deletes++;
  return 0;
}

static const kcr_objclient_ops fake_ops = {.get = f_get,
                                           .list = f_list,
                                           .create = f_create,
                                           .update = f_update,
                                           .patch = f_patch,
                                           .del = f_del};

static json_t *list_of(const char *kind, json_t *items) {
  return json_pack("{s:s, s:s, s:{}, s:o}", "apiVersion", "v1", "kind", kind, "metadata", "items",
                   items);
}

static void test_configmap_mirror_failed_list_reports_the_list_error(void **state) {
  fake_t f = {0};
  kcr_objclient c = {&fake_ops, &f, NULL, NULL};
  mirror_t m = {"src"};
  kcr_reconcile_request req = {"src", "settings"};
  kcr_error_t err;
  (void)state;
  f.list_fails = 1;
  kcr_error_clear(&err);
  assert_int_equal(mirror_reconcile(&m, &c, NULL, &req, &err), KCR_ECONN);
  assert_int_equal(err.code, KCR_ECONN);
  assert_string_equal(err.message, "list configmaps: connection refused");
  assert_null(strstr(err.message, "not found"));
}

static void test_configmap_mirror_gone_source_deletes_copies(void **state) {
  fake_t f = {0};
  kcr_objclient c = {&fake_ops, &f, NULL, NULL};
  mirror_t m = {"src"};
  kcr_reconcile_request req = {"src", "settings"};
  kcr_error_t err;
  (void)state;
  f.copies = list_of("ConfigMapList",
                     json_pack("[{s:s, s:s, s:{s:s, s:s}}, {s:s, s:s, s:{s:s, s:s}}]", "apiVersion",
                               "v1", "kind", "ConfigMap", "metadata", "namespace", "t1", "name",
                               "settings", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                               "namespace", "t2", "name", "settings"));
  kcr_error_clear(&err);
  assert_int_equal(mirror_reconcile(&m, &c, NULL, &req, &err), 0);
  assert_int_equal(err.code, KCR_OK); /* the source's NotFound was cleared */
  assert_int_equal(f.deletes, 2);
  json_decref(f.copies);
}

static void test_configmap_mirror_copies_into_targets(void **state) {
  fake_t f = {0};
  kcr_objclient c = {&fake_ops, &f, NULL, NULL};
  mirror_t m = {"src"};
  kcr_reconcile_request req = {"src", "settings"};
  kcr_error_t err;
  (void)state;
  f.source = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                       "metadata", "namespace", "src", "name", "settings", "data", "k", "v");
  f.targets = list_of("NamespaceList",
                      json_pack("[{s:{s:s}}, {s:{s:s}}, {s:{s:s}}]", "metadata", "name", "t1",
                                "metadata", "name", "src", "metadata", "name", "t2"));
  kcr_error_clear(&err);
  assert_int_equal(mirror_reconcile(&m, &c, NULL, &req, &err), 0);
  assert_int_equal(f.creates, 2); /* not into its own namespace */
  assert_string_equal(f.created_in[0], "t1");
  assert_string_equal(f.created_in[1], "t2");
  json_decref(f.source);
  json_decref(f.targets);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_configmap_mirror_failed_list_reports_the_list_error),
      cmocka_unit_test(test_configmap_mirror_gone_source_deletes_copies),
      cmocka_unit_test(test_configmap_mirror_copies_into_targets),
  };
  return cmocka_run_group_tests_name("configmap_mirror", tests, NULL, NULL);
}
