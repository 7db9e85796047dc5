/* SPDX-License-Identifier: MIT */
/*
 * test_objclient.c: the object client's calls over a recording stub
 * (src/api/objclient.c): write options reach the new ops, a client without
 * them falls back only when no option is set and otherwise refuses
 * (KCR_ENOTSUP) instead of dropping a dry run; apply and delete refuse dry
 * runs without KCR_OBJCLIENT_WRITE_OPTIONS; argument checks of the
 * collection, subresource and metadata calls; and kcr_objclient_with_field_owner
 * (every write names the owner unless the call names its own).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/objclient.h"
#include "testutil.h"

/* What the stub saw last. */
typedef struct seen {
  char op[32];
  char field_manager[64];
  char field_validation[16];
  bool dry_run;
  char sub[32];
  bool has_body;
  kcr_cancel_t *cancel;
  int calls;
} seen_t;

static seen_t seen;

static void saw(const kcr_objclient *c, const char *op, const kcr_write_options *o, const char *sub,
                const json_t *body) {
  int calls = seen.calls;
  memset(&seen, 0, sizeof(seen));
  seen.calls = calls;
  snprintf(seen.op, sizeof(seen.op), "%s", op);
  if (o) {
    snprintf(seen.field_manager, sizeof(seen.field_manager), "%s",
             o->field_manager ? o->field_manager : "");
    snprintf(seen.field_validation, sizeof(seen.field_validation), "%s",
             o->field_validation ? o->field_validation : "");
    seen.dry_run = o->dry_run;
  }
  snprintf(seen.sub, sizeof(seen.sub), "%s", sub ? sub : "");
  seen.has_body = body != NULL;
  seen.cancel = c->cancel;
  seen.calls++;
}

static json_t *answer(void) {
  return json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                   "name", "c", "resourceVersion", "5");
}

static int s_get(const kcr_objclient *c, const kcr_gvk *gvk, const char *ns, const char *name,
                 json_t **out, kcr_error_t *err) {
  (void)gvk;
  (void)ns;
  (void)name;
  (void)err;
  saw(c, "get", NULL, NULL, NULL);
  *out = answer();
  return 0;
}

static int s_create(const kcr_objclient *c, const json_t *obj, json_t **out, kcr_error_t *err) {
  (void)obj;
  (void)err;
  saw(c, "create", NULL, NULL, NULL);
  *out = answer();
  return 0;
}

static int s_update(const kcr_objclient *c, const json_t *obj, const char *sub, json_t **out,
                    kcr_error_t *err) {
  (void)obj;
  (void)err;
  saw(c, "update", NULL, sub, NULL);
  *out = answer();
  return 0;
}

static int s_patch(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                   const char *patch, size_t len, const char *sub, json_t **out, kcr_error_t *err) {
  (void)obj;
  (void)type;
  (void)patch;
  (void)len;
  (void)err;
  saw(c, "patch", NULL, sub, NULL);
  *out = answer();
  return 0;
}

static int s_apply(const kcr_objclient *c, const json_t *obj, const kcr_apply_options *o,
                   const char *sub, json_t **out, kcr_error_t *err) {
  kcr_write_options w = {.dry_run = o->dry_run,
                         .field_manager = o->field_manager,
                         .field_validation = o->field_validation};
  (void)obj;
  (void)err;
  saw(c, "apply", &w, sub, NULL);
  if (out)
    *out = answer();
  return 0;
}

static int s_del(const kcr_objclient *c, const json_t *obj, const kcr_delete_options *o,
                 kcr_error_t *err) {
  kcr_write_options w = {.dry_run = o->dry_run};
  (void)obj;
  (void)err;
  saw(c, "delete", &w, NULL, NULL);
  return 0;
}

static int s_create_with(const kcr_objclient *c, const json_t *obj, const kcr_write_options *o,
                         json_t **out, kcr_error_t *err) {
  (void)obj;
  (void)err;
  saw(c, "create_with", o, NULL, NULL);
  if (out)
    *out = answer();
  return 0;
}

static int s_update_with(const kcr_objclient *c, const json_t *obj, const char *sub,
                         const json_t *body, const kcr_write_options *o, json_t **out,
                         kcr_error_t *err) {
  (void)obj;
  (void)err;
  saw(c, "update_with", o, sub, body);
  if (out)
    *out = answer();
  return 0;
}

static int s_patch_with(const kcr_objclient *c, const json_t *obj, kcr_patch_type type,
                        const char *patch, size_t len, const char *sub, const kcr_write_options *o,
                        json_t **out, kcr_error_t *err) {
  (void)obj;
  (void)type;
  (void)patch;
  (void)len;
  (void)err;
  saw(c, "patch_with", o, sub, NULL);
  if (out)
    *out = answer();
  return 0;
}

static int s_delete_all_of(const kcr_objclient *c, const kcr_gvk *gvk, const kcr_list_options *lo,
                           const kcr_delete_options *o, kcr_error_t *err) {
  kcr_write_options w = {.dry_run = o->dry_run};
  (void)gvk;
  (void)lo;
  (void)err;
  saw(c, "delete_all_of", &w, NULL, NULL);
  return 0;
}

static int s_create_subresource(const kcr_objclient *c, const json_t *obj, const char *sub,
                                const json_t *body, const kcr_write_options *o, json_t **out,
                                kcr_error_t *err) {
  (void)obj;
  (void)err;
  saw(c, "create_subresource", o, sub, body);
  if (out)
    *out = answer();
  return 0;
}

/* old: a client written before the options (the new ops NULL, no flags). */
static const kcr_objclient_ops old_ops = {.get = s_get,
                                          .create = s_create,
                                          .update = s_update,
                                          .patch = s_patch,
                                          .apply = s_apply,
                                          .del = s_del};

/* full: every op of this test. */
static const kcr_objclient_ops full_ops = {.get = s_get,
                                           .create = s_create,
                                           .update = s_update,
                                           .patch = s_patch,
                                           .apply = s_apply,
                                           .del = s_del,
                                           .flags = KCR_OBJCLIENT_OUT_OPTIONAL |
                                                    KCR_OBJCLIENT_WRITE_OPTIONS,
                                           .create_with = s_create_with,
                                           .update_with = s_update_with,
                                           .patch_with = s_patch_with,
                                           .delete_all_of = s_delete_all_of,
                                           .create_subresource = s_create_subresource};

static json_t *cm(void) {
  return json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                   "name", "c", "namespace", "a");
}

/* The write options reach the new ops as given. */
static void test_objclient_write_options_reach_ops(void **state) {
  kcr_objclient c = {&full_ops, NULL, NULL, NULL};
  kcr_write_options wo = {.dry_run = true, .field_manager = "m", .field_validation = "Strict"};
  json_t *obj = cm(), *out = NULL, *scale = json_object();
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_create_with(&c, obj, &wo, &out, &err), 0);
  assert_string_equal(seen.op, "create_with");
  assert_string_equal(seen.field_manager, "m");
  assert_string_equal(seen.field_validation, "Strict");
  assert_true(seen.dry_run);
  assert_non_null(out);
  json_decref(out);
  assert_int_equal(kcr_objclient_update_with(&c, obj, "status", &wo, NULL, &err), 0);
  assert_string_equal(seen.op, "update_with");
  assert_string_equal(seen.sub, "status");
  assert_false(seen.has_body);
  assert_int_equal(kcr_objclient_update_subresource(&c, obj, "scale", scale, NULL, NULL, &err), 0);
  assert_string_equal(seen.op, "update_with");
  assert_string_equal(seen.sub, "scale");
  assert_true(seen.has_body);
  assert_string_equal(seen.field_manager, ""); /* NULL options: zeroed */
  assert_int_equal(
      kcr_objclient_patch_with(&c, obj, KCR_PATCH_MERGE, "{}", 2, NULL, &wo, NULL, &err), 0);
  assert_string_equal(seen.op, "patch_with");
  assert_true(seen.dry_run);
  assert_int_equal(kcr_objclient_create_subresource(&c, obj, "eviction", scale, &wo, NULL, &err),
                   0);
  assert_string_equal(seen.op, "create_subresource");
  assert_string_equal(seen.sub, "eviction");
  {
    kcr_apply_options ao = {.field_manager = "m", .dry_run = true, .field_validation = "Ignore"};
    kcr_delete_options dopt = {.dry_run = true};
    assert_int_equal(kcr_objclient_apply(&c, obj, &ao, NULL, NULL, &err), 0);
    assert_string_equal(seen.field_validation, "Ignore");
    assert_true(seen.dry_run);
    assert_int_equal(kcr_objclient_delete(&c, obj, &dopt, &err), 0);
    assert_string_equal(seen.op, "delete");
    assert_true(seen.dry_run);
    assert_int_equal(kcr_objclient_delete_all_of(&c, &(kcr_gvk){"", "v1", "ConfigMap"},
                                                 &(kcr_list_options){.ns = "a"}, &dopt, &err),
                     0);
    assert_string_equal(seen.op, "delete_all_of");
    assert_true(seen.dry_run);
  }
  assert_int_equal(err.code, KCR_OK);
  json_decref(obj);
  json_decref(scale);
}

/* A client without the new ops: no option set falls back to the old op; an
 * option set is refused, and nothing is called (a dry run must not write). */
static void test_objclient_old_client_refuses_options(void **state) {
  kcr_objclient c = {&old_ops, NULL, NULL, NULL};
  kcr_write_options none = {0}, dry = {.dry_run = true};
  kcr_apply_options ao = {.field_manager = "m", .dry_run = true};
  kcr_delete_options dopt = {.dry_run = true};
  json_t *obj = cm(), *out = (json_t *)1, *body = json_object();
  kcr_error_t err;
  (void)state;
  seen.calls = 0;
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_create_with(&c, obj, &none, &out, &err), 0);
  assert_string_equal(seen.op, "create");
  json_decref(out);
  assert_int_equal(kcr_objclient_update_with(&c, obj, NULL, NULL, NULL, &err), 0);
  assert_string_equal(seen.op, "update");
  assert_int_equal(
      kcr_objclient_patch_with(&c, obj, KCR_PATCH_MERGE, "{}", 2, NULL, NULL, NULL, &err), 0);
  assert_string_equal(seen.op, "patch");
  assert_int_equal(seen.calls, 3);

  out = (json_t *)1;
  assert_int_equal(kcr_objclient_create_with(&c, obj, &dry, &out, &err), KCR_ENOTSUP);
  assert_null(out);
  assert_non_null(strstr(err.message, "cannot create with write options"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_objclient_update_with(&c, obj, NULL, &dry, NULL, &err), KCR_ENOTSUP);
  assert_int_equal(
      kcr_objclient_patch_with(&c, obj, KCR_PATCH_MERGE, "{}", 2, NULL, &dry, NULL, &err),
      KCR_ENOTSUP);
  assert_int_equal(kcr_objclient_apply(&c, obj, &ao, NULL, NULL, &err), KCR_ENOTSUP);
  assert_int_equal(kcr_objclient_delete(&c, obj, &dopt, &err), KCR_ENOTSUP);
  assert_int_equal(kcr_objclient_update_subresource(&c, obj, "scale", body, NULL, NULL, &err),
                   KCR_ENOTSUP);
  assert_int_equal(kcr_objclient_create_subresource(&c, obj, "eviction", body, NULL, NULL, &err),
                   KCR_ENOTSUP);
  assert_int_equal(
      kcr_objclient_delete_all_of(&c, &(kcr_gvk){"", "v1", "ConfigMap"}, NULL, NULL, &err),
      KCR_ENOTSUP);
  out = (json_t *)1;
  assert_int_equal(kcr_objclient_get_subresource(&c, &(kcr_gvk){"apps", "v1", "Deployment"}, "a",
                                                 "d", "scale", &out, &err),
                   KCR_ENOTSUP);
  assert_null(out);
  assert_int_equal(
      kcr_objclient_get_metadata(&c, &(kcr_gvk){"", "v1", "ConfigMap"}, "a", "c", &out, &err),
      KCR_ENOTSUP);
  assert_int_equal(
      kcr_objclient_list_metadata(&c, &(kcr_gvk){"", "v1", "ConfigMap"}, NULL, &out, &err),
      KCR_ENOTSUP);
  assert_int_equal(seen.calls, 3); /* none of the refused calls reached an op */
  /* A plain apply and delete still work. */
  ao.dry_run = false;
  assert_int_equal(kcr_objclient_apply(&c, obj, &ao, NULL, NULL, &err), 0);
  assert_int_equal(kcr_objclient_delete(&c, obj, NULL, &err), 0);
  json_decref(obj);
  json_decref(body);
}

/* Argument checks come before any op. */
static void test_objclient_argument_checks(void **state) {
  kcr_objclient c = {&full_ops, NULL, NULL, NULL};
  kcr_list_options by_index = {.index = "color", .index_value = "red"};
  json_t *obj = cm(), *out = (json_t *)1;
  kcr_error_t err;
  (void)state;
  seen.calls = 0;
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_objclient_delete_all_of(&c, &(kcr_gvk){"", "v1", "ConfigMap"}, &by_index, NULL, &err),
      KCR_EINVAL);
  assert_non_null(strstr(err.message, "an index is the cache's"));
  assert_int_equal(kcr_objclient_delete_all_of(&c, NULL, NULL, NULL, NULL), KCR_EINVAL);
  assert_int_equal(kcr_objclient_update_subresource(&c, obj, "scale", NULL, NULL, &out, NULL),
                   KCR_EINVAL);
  assert_null(out);
  assert_int_equal(kcr_objclient_create_subresource(&c, obj, NULL, obj, NULL, NULL, NULL),
                   KCR_EINVAL);
  assert_int_equal(
      kcr_objclient_get_subresource(&c, &(kcr_gvk){"", "v1", "Pod"}, "a", "p", "", &out, NULL),
      KCR_EINVAL);
  assert_int_equal(kcr_objclient_get_metadata(&c, NULL, "a", "p", &out, NULL), KCR_EINVAL);
  assert_int_equal(seen.calls, 0);
  json_decref(obj);
}

/* kcr_objclient_with_field_owner: every write names the owner unless the
 * call names a manager; apply's owner wins over the inner client's default;
 * reads pass through; a cancel token set on a copy is what calls carry. */
static void test_objclient_with_field_owner(void **state) {
  kcr_objclient inner = {&full_ops, NULL, NULL, "controller-name"};
  kcr_field_owner_client fo;
  const kcr_objclient *c = kcr_objclient_with_field_owner(&fo, &inner, "owner");
  kcr_objclient copy;
  kcr_write_options mine = {.field_manager = "mine"};
  kcr_apply_options ao = {0};
  kcr_cancel_t *tok = NULL;
  json_t *obj = cm(), *out = NULL, *body = json_object();
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_string_equal(c->field_manager, "owner");

  assert_int_equal(kcr_objclient_create(c, obj, NULL, &err), 0);
  assert_string_equal(seen.op, "create_with");
  assert_string_equal(seen.field_manager, "owner");
  assert_int_equal(kcr_objclient_create_with(c, obj, &mine, NULL, &err), 0);
  assert_string_equal(seen.field_manager, "mine");
  assert_int_equal(kcr_objclient_update(c, obj, "status", NULL, &err), 0);
  assert_string_equal(seen.op, "update_with");
  assert_string_equal(seen.field_manager, "owner");
  assert_string_equal(seen.sub, "status");
  assert_int_equal(kcr_objclient_update_subresource(c, obj, "scale", body, NULL, NULL, &err), 0);
  assert_true(seen.has_body);
  assert_string_equal(seen.field_manager, "owner");
  assert_int_equal(kcr_objclient_patch(c, obj, KCR_PATCH_MERGE, "{}", 2, NULL, NULL, &err), 0);
  assert_string_equal(seen.op, "patch_with");
  assert_string_equal(seen.field_manager, "owner");
  assert_int_equal(kcr_objclient_apply(c, obj, &ao, NULL, NULL, &err), 0);
  assert_string_equal(seen.op, "apply");
  assert_string_equal(seen.field_manager, "owner");
  ao.field_manager = "mine";
  assert_int_equal(kcr_objclient_apply(c, obj, &ao, NULL, NULL, &err), 0);
  assert_string_equal(seen.field_manager, "mine");
  assert_int_equal(kcr_objclient_create_subresource(c, obj, "token", body, NULL, &out, &err), 0);
  assert_string_equal(seen.field_manager, "owner");
  assert_non_null(out);
  json_decref(out);
  out = NULL;

  /* The update_rv fallback goes through update, with the owner. */
  {
    char rv[8];
    assert_int_equal(kcr_objclient_update_rv(c, obj, NULL, rv, sizeof(rv), &err), 0);
    assert_string_equal(rv, "5");
    assert_string_equal(seen.field_manager, "owner");
  }

  assert_int_equal(kcr_objclient_get(c, &(kcr_gvk){"", "v1", "ConfigMap"}, "a", "c", &out, &err),
                   0);
  assert_string_equal(seen.op, "get");
  assert_null(seen.cancel);
  json_decref(out);
  assert_int_equal(kcr_cancel_create(&tok, NULL), 0);
  copy = *c;
  copy.cancel = tok;
  assert_int_equal(kcr_objclient_delete(&copy, obj, NULL, &err), 0);
  assert_string_equal(seen.op, "delete");
  assert_ptr_equal(seen.cancel, tok);
  assert_int_equal(err.code, KCR_OK);

  /* Over a client without the new ops, the owner cannot be honoured. */
  {
    kcr_objclient old = {&old_ops, NULL, NULL, NULL};
    kcr_field_owner_client fo2;
    const kcr_objclient *c2 = kcr_objclient_with_field_owner(&fo2, &old, "owner");
    assert_int_equal(kcr_objclient_create(c2, obj, NULL, &err), KCR_ENOTSUP);
  }
  kcr_cancel_destroy(tok);
  json_decref(obj);
  json_decref(body);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_objclient_write_options_reach_ops),
      cmocka_unit_test(test_objclient_old_client_refuses_options),
      cmocka_unit_test(test_objclient_argument_checks),
      cmocka_unit_test(test_objclient_with_field_owner),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
