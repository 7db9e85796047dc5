/* SPDX-License-Identifier: MIT */
/* controllers.c: setup_controllers (see controllers.h). */
#include "controllers.h"

int setup_controllers(kcr_manager_t *mgr, kcr_scheme_t *scheme, kcr_error_t *err) {
  int rc = 0;
  (void)mgr;
  (void)scheme;
  (void)err;
#define KCR_CONTROLLER(name)                                                                       \
  if (rc == 0)                                                                                     \
    rc = name##_controller_setup(mgr, scheme, err);
#include "controllers.inc"
#undef KCR_CONTROLLER
  return rc;
}
