/* SPDX-License-Identifier: MIT */
/*
 * configmap-mirror: a complete kcr operator in one file.
 *
 * It copies every ConfigMap labelled kcr.dev/mirror=true in a source namespace
 * into every namespace labelled kcr.dev/mirror-target=true, keeps the copies in
 * step with the source, and deletes them when the source goes.
 *
 *   configmap-mirror [--kubeconfig FILE] [--source-namespace NS]
 *
 * The shape of every kcr operator: a manager, a controller with a primary kind
 * (the source ConfigMaps) and a secondary watch (namespaces, mapped to the
 * sources to copy into a new one), and a reconciler that reads from the cache and
 * writes with create-or-update. SIGTERM or Ctrl-C stops it gracefully.
 */
#include <stdio.h>
#include <string.h>

#include "kcr/apierror.h"
#include "kcr/config.h"
#include "kcr/manager.h"
#include "kcr/meta.h"
#include "kcr/store.h"

#define MIRROR_LABEL "kcr.dev/mirror"
#define COPY_LABEL "kcr.dev/mirror-of"
#define TARGET_LABEL "kcr.dev/mirror-target"

typedef struct mirror {
  const char *source_ns;
  kcr_informer_t *configmaps; /* the manager's, for the map function */
} mirror_t;

/* copy_data makes the copy's data equal the source's (the mutate function). */
static int copy_data(json_t *copy, void *src, kcr_error_t *err) {
  json_t *data = json_object_get(src, "data");
  (void)err;
  json_object_set_new(copy, "data", data ? json_deep_copy(data) : json_object());
  return 0;
}

/* delete_copies removes the copies of a source that is gone. */
static int delete_copies(kcr_reconcile_ctx *ctx, const char *name) {
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  char sel[300];
  json_t *list = NULL, *item;
  size_t i;
  int rc;
  snprintf(sel, sizeof(sel), COPY_LABEL "=%s", name);
  rc = kcr_objclient_list(c, "v1", "ConfigMap", NULL, sel, &list, kcr_reconcile_err(ctx));
  if (rc)
    return rc;
  json_array_foreach(json_object_get(list, "items"), i, item) {
    kcr_error_t e = {0};
    if ((rc = kcr_objclient_delete(c, item, &e)) != 0 && !kcr_error_is_not_found(&e))
      break;
    rc = 0;
  }
  json_decref(list);
  return rc;
}

static int reconcile(kcr_reconcile_ctx *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  kcr_error_t *err = kcr_reconcile_err(ctx);
  json_t *src = NULL, *targets = NULL, *ns;
  size_t i;
  int rc;
  (void)res;
  (void)data;
  rc = kcr_objclient_get(c, "v1", "ConfigMap", req->ns, req->name, &src, err);
  if (rc == KCR_EAPI && kcr_error_is_not_found(err))
    return delete_copies(ctx, req->name);
  if (rc)
    return rc;
  rc = kcr_objclient_list(c, "v1", "Namespace", NULL, TARGET_LABEL "=true", &targets, err);
  json_array_foreach(json_object_get(targets, "items"), i, ns) {
    json_t *copy;
    kcr_op_result op;
    if (rc || strcmp(kcr_meta_name(ns), req->ns) == 0 || kcr_meta_is_deleting(ns))
      continue;
    copy = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "namespace", kcr_meta_name(ns), "name", req->name, "labels",
                     COPY_LABEL, req->name);
    rc = kcr_create_or_update(c, copy, copy_data, src, &op, err);
    if (rc == 0 && op != KCR_OP_UNCHANGED)
      kcr_reconcile_log(ctx, KCR_LOG_INFO, "copy in %s %s", kcr_meta_name(ns),
                        kcr_op_result_name(op));
    json_decref(copy);
  }
  json_decref(targets);
  json_decref(src);
  return rc;
}

/* map_namespace: a namespace (new or relabelled) needs every source copied in. */
static void map_namespace(const json_t *ns, kcr_requests *reqs, void *data) {
  mirror_t *m = data;
  json_t *all = NULL, *cm;
  size_t i;
  (void)ns;
  if (kcr_store_list(kcr_informer_store(m->configmaps), &all) != 0)
    return;
  json_array_foreach(all, i, cm) {
    const char *v = kcr_meta_label(cm, MIRROR_LABEL);
    if (v && strcmp(v, "true") == 0 && strcmp(kcr_meta_namespace(cm), m->source_ns) == 0)
      kcr_requests_add(reqs, m->source_ns, kcr_meta_name(cm));
  }
  json_decref(all);
}

int main(int argc, char **argv) {
  static const kcr_gvk configmap = {"", "v1", "ConfigMap"}, namespace = {"", "v1", "Namespace"};
  kcr_config_options co = {0};
  kcr_rest_config_t *cfg = NULL;
  kcr_manager_options mo = {0};
  kcr_manager_t *mgr = NULL;
  kcr_controller_options o = {0};
  kcr_controller_t *ctl;
  kcr_predicate_t *sources = NULL;
  kcr_error_t err = {0};
  mirror_t m = {"default", NULL};
  int rc;

  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--kubeconfig") == 0)
      co.kubeconfig = argv[i + 1];
    else if (strcmp(argv[i], "--source-namespace") == 0)
      m.source_ns = argv[i + 1];
  }
  if ((rc = kcr_rest_config_load(&co, &cfg, &err)) != 0)
    goto out;
  mo.config = cfg;
  if ((rc = kcr_manager_create(&mo, &mgr, &err)) != 0 ||
      (rc = kcr_manager_get_informer(mgr, &configmap, &m.configmaps, &err)) != 0)
    goto out;

  o.name = "configmap-mirror";
  o.reconcile = reconcile;
  o.data = &m;
  o.max_concurrent_reconciles = 2;
  if ((rc = kcr_manager_new_controller(mgr, &o, &ctl, &err)) != 0 ||
      (rc = kcr_predicate_label_selector(MIRROR_LABEL "=true", &sources, &err)) != 0 ||
      (rc = kcr_controller_for(ctl, &configmap, sources, &err)) != 0 ||
      (rc = kcr_controller_watches(ctl, &namespace, map_namespace, &m,
                                   kcr_predicate_labels_changed(), &err)) != 0)
    goto out;

  rc = kcr_manager_run(mgr, &err); /* until SIGTERM/SIGINT */
out:
  if (rc)
    fprintf(stderr, "configmap-mirror: %s\n", err.message[0] ? err.message : kcr_strerror(rc));
  kcr_manager_destroy(mgr);
  kcr_rest_config_unref(cfg);
  return rc ? 1 : 0;
}
