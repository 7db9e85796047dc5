/* SPDX-License-Identifier: MIT */
/*
 * mirror.h: the configmap-mirror operator's logic, apart from its main so that a
 * unit test can drive it with a fake object client.
 */
#ifndef MIRROR_H
#define MIRROR_H

#include "kcr/controller.h"
#include "kcr/objclient.h"

#define MIRROR_LABEL "kcr.dev/mirror"
#define COPY_LABEL "kcr.dev/mirror-of"
#define TARGET_LABEL "kcr.dev/mirror-target"

/* mirror_t: the operator's settings. */
typedef struct mirror {
  const char *source_ns; /* where the sources live */
} mirror_t;

/*
 * mirror_reconcile brings the copies of source req (in m->source_ns) in line:
 * one per target namespace while it exists, none once it is gone. Reads and
 * writes through c; ctx (may be NULL) only logs. Returns 0 or a kcr_err with err
 * saying why.
 */
int mirror_reconcile(const mirror_t *m, const kcr_objclient *c, kcr_reconcile_ctx_t *ctx,
                     const kcr_reconcile_request *req, kcr_error_t *err);

/* mirror_map_namespace maps a target namespace to every source (a kcr_map_fn;
 * data is the mirror_t). */
void mirror_map_namespace(const json_t *ns, kcr_requests_t *reqs, void *data);

#endif /* MIRROR_H */
