/* SPDX-License-Identifier: MIT */
/*
 * controllers.h: the controllers of memcached-operator. Each line of controllers.inc
 * (kcr-gen create api appends one per kind) names a controller NAME whose file
 * NAME_controller.c defines
 *
 *   int NAME_controller_setup(kcr_manager_t *mgr, kcr_scheme_t *scheme, kcr_error_t *err);
 *
 * which registers the kind's types in scheme and adds the controller to mgr.
 */
#ifndef CONTROLLERS_H
#define CONTROLLERS_H

#include <kcr/kcr.h>

#define KCR_CONTROLLER(name)                                                                       \
  int name##_controller_setup(kcr_manager_t *mgr, kcr_scheme_t *scheme, kcr_error_t *err);
#include "controllers.inc"
#undef KCR_CONTROLLER

/* setup_controllers runs every NAME_controller_setup in controllers.inc. */
int setup_controllers(kcr_manager_t *mgr, kcr_scheme_t *scheme, kcr_error_t *err);

#endif
