/* SPDX-License-Identifier: MIT */
/*
 * scheme_internal.h: what scheme.c shares with the typed helpers of its layer
 * (typed.c).
 */
#ifndef KCR_SCHEME_INTERNAL_H
#define KCR_SCHEME_INTERNAL_H

#include "kcr/error.h"
#include "kcr/meta.h"
#include "kcr/scheme.h"

/*
 * kcr__scheme_codec_of finds gvk's entry in s (*k, borrowed for the scheme's
 * life), or says why not: KCR_ENOENT (not registered), KCR_ENOTSUP (no codec),
 * with *k NULL. Any thread.
 */
int kcr__scheme_codec_of(const kcr_scheme_t *s, const kcr_gvk *gvk, const kcr_kind_info **k,
                         kcr_error_t *err);

#endif /* KCR_SCHEME_INTERNAL_H */
