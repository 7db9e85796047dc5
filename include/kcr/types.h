/* SPDX-License-Identifier: MIT */
/*
 * kcr/types.h: the small value types of Kubernetes objects that kcr-gen's
 * generated structs share, so that a CRD's types and the built-in kinds' types
 * (docs/kcr-gen.md) hold them in one form. Plain structs: no functions, and
 * the strings they own are allocated by the generated code's allocator
 * (jansson's, see each package's _mem_strdup).
 */
#ifndef KCR_TYPES_H
#define KCR_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * kcr_int_or_string_t: an int-or-string value (intstr.IntOrString,
 * x-kubernetes-int-or-string): int_value when !is_string, else str_value
 * (owned by the struct that holds it; NULL only when unset).
 */
typedef struct kcr_int_or_string {
  bool is_string;
  int64_t int_value;
  char *str_value;
} kcr_int_or_string_t;

/*
 * kcr_quantity_t: a resource quantity ("100m", "64Mi", 2) as its text (owned
 * by the struct that holds it). is_int: it was, and is written back as, a JSON
 * integer. Compared as text: "1" and "1000m" differ.
 */
typedef struct kcr_quantity {
  char *text;
  bool is_int;
} kcr_quantity_t;

#ifdef __cplusplus
}
#endif

#endif /* KCR_TYPES_H */
