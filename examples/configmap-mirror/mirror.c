/* SPDX-License-Identifier: MIT */
/*
 * mirror.c: copies every ConfigMap labelled kcr.dev/mirror=true in a source
 * namespace into every namespace labelled kcr.dev/mirror-target=true, keeps the
 * copies in step, and deletes them when the source goes.
 *
 * Every read is a cached list or get through the object client; a NotFound that
 * is expected is cleared on the spot with kcr_ignore_not_found, so the error the
 * reconciler returns always says what really went wrong.
 */
#include <stdio.h>
#include <string.h>

#include "kcr/controllerutil.h"
#include "kcr/meta.h"
#include "mirror.h"

static const kcr_gvk configmap = {"", "v1", "ConfigMap"}, namespace = {"", "v1", "Namespace"};

/* copy_data makes the copy's data equal the source's (the mutate function). */
static int copy_data(json_t *copy, void *src, kcr_error_t *err) {
  json_t *data = json_object_get(src, "data");
  if (json_object_set_new(copy, "data", data ? json_deep_copy(data) : json_object()) != 0)
    return kcr_error_set(err, KCR_ENOMEM, "out of memory");
  return 0;
}

/* delete_copies removes the copies of a source that is gone. */
static int delete_copies(const kcr_objclient *c, const char *name, kcr_error_t *err) {
  char sel[300];
  json_t *list = NULL, *item;
  size_t i;
  int rc;
  snprintf(sel, sizeof(sel), COPY_LABEL "=%s", name);
  rc = kcr_objclient_list(c, &configmap, &(kcr_list_options){.label_selector = sel}, &list, err);
  json_array_foreach(kcr_list_items(list), i, item) {
    /* Gone already is what we want. */
    if ((rc = kcr_ignore_not_found(kcr_objclient_delete(c, item, NULL, err), err)) != 0)
      break;
  }
  json_decref(list);
  return rc;
}

int mirror_reconcile(const mirror_t *m, const kcr_objclient *c, kcr_reconcile_ctx_t *ctx,
                     const kcr_reconcile_request *req, kcr_error_t *err) {
  json_t *src = NULL, *targets = NULL, *ns;
  size_t i;
  int rc;
  (void)m;
  rc = kcr_ignore_not_found(kcr_objclient_get(c, &configmap, req->ns, req->name, &src, err), err);
  if (rc == 0 && !src)
    return delete_copies(c, req->name, err);
  if (rc == 0)
    rc = kcr_objclient_list(
        c, &namespace, &(kcr_list_options){.label_selector = TARGET_LABEL "=true"}, &targets, err);
  json_array_foreach(kcr_list_items(targets), i, ns) {
    json_t *copy;
    kcr_op_result op = KCR_OP_UNCHANGED;
    if (rc || strcmp(kcr_meta_name(ns), req->ns) == 0 || kcr_meta_is_deleting(ns))
      continue;
    copy = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "namespace", kcr_meta_name(ns), "name", req->name, "labels",
                     COPY_LABEL, req->name);
    rc = copy ? kcr_create_or_update(c, copy, copy_data, src, &op, err)
              : kcr_error_set(err, KCR_ENOMEM, "out of memory");
    if (rc == 0 && op != KCR_OP_UNCHANGED && ctx)
      kcr_reconcile_log(ctx, KCR_LOG_INFO, "copy in %s %s", kcr_meta_name(ns),
                        kcr_op_result_name(op));
    json_decref(copy);
  }
  json_decref(targets);
  json_decref(src);
  return rc;
}

void mirror_map_namespace(const json_t *ns, kcr_requests_t *reqs, void *data) {
  const mirror_t *m = data;
  json_t *list = NULL, *cm;
  size_t i;
  (void)ns;
  /* Every source, from the cache, as r.List in Go. */
  if (kcr_objclient_list(
          kcr_requests_client(reqs), &configmap,
          &(kcr_list_options){.ns = m->source_ns, .label_selector = MIRROR_LABEL "=true"}, &list,
          NULL) != 0)
    return;
  json_array_foreach(kcr_list_items(list), i, cm)
      kcr_requests_add(reqs, m->source_ns, kcr_meta_name(cm));
  json_decref(list);
}
