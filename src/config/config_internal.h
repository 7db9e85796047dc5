/* SPDX-License-Identifier: MIT */
/*
 * config_internal.h: config.c's internals, and the hooks the unit tests use.
 * Nothing here is public API.
 *
 * The config layer's files depend one way (scripts/check-includes.sh checks
 * it): config.c -> kubeconfig.h, proxy.h, credentials.h -> exec.h -> cfgutil.h.
 * Each header is its source's: kubeconfig.c parses and merges kubeconfig files,
 * proxy.c applies Go's proxy-from-environment rules, credentials.c owns the
 * refreshable credentials, exec.c runs exec plugins, cfgutil.c holds the
 * layer's limits and helpers, and config.c turns the chosen
 * context into a kcr_rest_config_t (and builds the in-cluster one). Including
 * this header brings in all of them, for the tests.
 */
#ifndef KCR_CONFIG_INTERNAL_H
#define KCR_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "config/cfgutil.h"
#include "config/credentials.h"
#include "config/exec.h"
#include "config/kubeconfig.h"
#include "config/proxy.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "kcr/error.h"
#include "util/alloc.h"
#include "util/file.h"

/* kcr__rest_config_creds returns cfg's credentials (borrowed). */
kcr__creds_t *kcr__rest_config_creds(kcr_rest_config_t *cfg);

/*
 * Test hooks. Call them right after loading, before cfg is shared.
 *   set_clock          credentials use clock (fake in tests) for the token-file
 *                      period and exec expiry; the pending re-read is rebased.
 *   set_token_period   the token-file re-read period.
 *   set_exec_limits    the exec plugin's timeout and stdout limit (0: keep).
 *   set_tls_period     the re-read period of the certificate, key and CA files.
 */
void kcr__rest_config_set_clock(kcr_rest_config_t *cfg, kcr_clock_t *clock);
void kcr__rest_config_set_token_period(kcr_rest_config_t *cfg, int64_t ns);
void kcr__rest_config_set_exec_limits(kcr_rest_config_t *cfg, int64_t timeout_ns,
                                      size_t max_stdout);
void kcr__rest_config_set_tls_period(kcr_rest_config_t *cfg, int64_t ns);

#endif /* KCR_CONFIG_INTERNAL_H */
