/* SPDX-License-Identifier: MIT */
/*
 * meta_internal.h: what meta.c shows its tests and fuzz targets, and the one
 * key joiner the cache's compact objects share with kcr_meta_key.
 */
#ifndef KCR_API_META_INTERNAL_H
#define KCR_API_META_INTERNAL_H

#include <stddef.h>

#include "kcr/buf.h"

/*
 * kcr__meta_join_key writes "ns/name" (or "name" when ns_len is 0) into buf,
 * the key kcr_meta_key gives. Returns 0, KCR_EINVAL (an empty name) or
 * KCR_ETOOBIG; buf holds "" on failure. Any thread.
 */
int kcr__meta_join_key(const char *ns, size_t ns_len, const char *name, size_t name_len, char *buf,
                       size_t size);

/*
 * kcr__selector_lex appends to buf the tokens the label selector parser cuts
 * text into, each as KIND'literal', separated by spaces and ending with EOS''
 * ("key in (v)" gives "IDENT'key' IN'in' OPEN'(' IDENT'v' CLOSE')' EOS''"). The
 * kinds: EOS CLOSE COMMA NOT DEQ EQ GT IDENT IN LT NEQ NOTIN OPEN. Returns 0,
 * KCR_ETOOBIG (text longer than KCR_SELECTOR_MAX, or buf full) or KCR_ENOMEM.
 * Any thread; for upstream's lexer tables.
 */
int kcr__selector_lex(const char *text, struct kcr_buf *buf);

#endif /* KCR_API_META_INTERNAL_H */
