/* SPDX-License-Identifier: MIT */
/*
 * meta_internal.h: what meta.c shows its tests and fuzz targets, nothing more.
 */
#ifndef KCR_API_META_INTERNAL_H
#define KCR_API_META_INTERNAL_H

#include "kcr/buf.h"

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
