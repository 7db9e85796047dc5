/* SPDX-License-Identifier: MIT */
/*
 * configmap-mirror: a complete kcr operator (logic in mirror.c).
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

#include "kcr/config.h"
#include "kcr/manager.h"
#include "mirror.h"

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  (void)res;
  return mirror_reconcile(data, kcr_reconcile_client(ctx), ctx, req, kcr_reconcile_err(ctx));
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
  mirror_t m = {"default"};
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
  if ((rc = kcr_manager_create(&mo, &mgr, &err)) != 0)
    goto out;
  o.name = "configmap-mirror";
  o.reconcile = reconcile;
  o.data = &m;
  o.max_concurrent_reconciles = 2;
  if ((rc = kcr_manager_add_controller(mgr, &o, &ctl, &err)) != 0 ||
      (rc = kcr_predicate_label_selector(MIRROR_LABEL "=true", &sources, &err)) != 0 ||
      (rc = kcr_controller_for(ctl, &configmap, sources, &err)) != 0 ||
      (rc = kcr_controller_watches(ctl, &namespace, mirror_map_namespace, &m,
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
