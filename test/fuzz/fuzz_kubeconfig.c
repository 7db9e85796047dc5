/* SPDX-License-Identifier: MIT */
/*
 * fuzz_kubeconfig.c: the kubeconfig loader (kcr__kubeconfig_merge_text: libyaml,
 * the depth bound, the fixed kubeconfig shape, base64, extensions) on arbitrary
 * bytes. A refusal is KCR_ECONFIG (or KCR_ENOMEM) with a message naming the
 * file; what loads can be merged again without change (every name is already
 * taken, so the first file keeps them all), and every entry is found by its name.
 */
#include <string.h>

#include "config/config_internal.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kcr__kubeconfig_t *kc = NULL;
  kcr_error_t err;
  size_t nc, nu, nx;
  int rc;

  FUZZ_CHECK(kcr__kubeconfig_create(&kc, NULL) == 0);
  kcr_error_clear(&err);
  rc = kcr__kubeconfig_merge_text(kc, "fuzz.yaml", "/fuzz", (const char *)data, size, &err);
  if (rc != 0) {
    FUZZ_CHECK(rc == KCR_ECONFIG || rc == KCR_ENOMEM);
    FUZZ_CHECK(err.code == rc && memchr(err.message, '\0', sizeof(err.message)) != NULL);
    if (rc == KCR_ECONFIG)
      FUZZ_CHECK(strncmp(err.message, "kubeconfig fuzz.yaml", 20) == 0);
    kcr__kubeconfig_destroy(kc);
    return 0;
  }
  nc = kc->nclusters;
  nu = kc->nusers;
  nx = kc->ncontexts;
  for (size_t i = 0; i < nc; i++)
    FUZZ_CHECK(kcr__kubeconfig_find_cluster(kc, kc->clusters[i]->name) == kc->clusters[i]);
  for (size_t i = 0; i < nu; i++)
    FUZZ_CHECK(kcr__kubeconfig_find_user(kc, kc->users[i]->name) == kc->users[i]);
  for (size_t i = 0; i < nx; i++)
    FUZZ_CHECK(kcr__kubeconfig_find_context(kc, kc->contexts[i]->name) == kc->contexts[i]);
  FUZZ_CHECK(
      kcr__kubeconfig_merge_text(kc, "again.yaml", "/fuzz", (const char *)data, size, NULL) == 0);
  FUZZ_CHECK(kc->nclusters == nc && kc->nusers == nu && kc->ncontexts == nx);
  kcr__kubeconfig_destroy(kc);
  return 0;
}
