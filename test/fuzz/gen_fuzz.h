/* SPDX-License-Identifier: MIT */
/*
 * gen_fuzz.h: the checks kcr-gen's fuzz targets share (gen_fuzz.c): a refusal
 * names its place in the input, and a document kcr-gen writes as YAML reads
 * back as the same JSON. Each aborts through FUZZ_CHECK when it does not hold.
 */
#ifndef KCR_GEN_FUZZ_H
#define KCR_GEN_FUZZ_H

#include <jansson.h>

/*
 * gen_fuzz_check_place checks that msg is "NAME:N: reason", with numbers
 * numbers after the name (1: a line; 2: a line and a column) and a reason
 * that is not empty.
 */
void gen_fuzz_check_place(const char *msg, const char *name, int numbers);

/* gen_fuzz_check_yaml checks that doc (borrowed) written as YAML reads back equal. */
void gen_fuzz_check_yaml(const json_t *doc);

#endif /* KCR_GEN_FUZZ_H */
