/* SPDX-License-Identifier: MIT */
/*
 * kcr/crd.h: the vocabulary of API type headers, the C form of kubebuilder's
 * api/<version>/<kind>_types.go: `kcr-gen crd` reads such a header (typedef'd
 * structs with kubebuilder's markers in `//` comments) and writes the CRD
 * (docs/kcr-gen.md, "CRDs from annotated headers"). Including this header makes
 * the type header plain C that a compiler takes too; kcr-gen itself reads the
 * macro names, not their expansion.
 */
#ifndef KCR_CRD_H
#define KCR_CRD_H

#include <stddef.h>

/*
 * KCR_LIST(T) declares a list member (`type: array`, items of T's schema): a
 * counted array of T, `T *items; size_t len;`.
 */
#define KCR_LIST(T)                                                                                \
  struct {                                                                                         \
    T *items;                                                                                      \
    size_t len;                                                                                    \
  }

/*
 * KCR_MAP(T) declares a map member with string keys (`type: object`,
 * `additionalProperties` of T's schema): a counted array of entries.
 */
#define KCR_MAP(T)                                                                                 \
  struct {                                                                                         \
    struct {                                                                                       \
      char *key;                                                                                   \
      T value;                                                                                     \
    } * items;                                                                                     \
    size_t len;                                                                                    \
  }

/*
 * kcr_type_meta_t is metav1.TypeMeta: a kind's struct holds one (any name),
 * and its schema gains apiVersion and kind, as Go's `json:",inline"` does.
 */
typedef struct kcr_type_meta {
  char *api_version;
  char *kind;
} kcr_type_meta_t;

#endif /* KCR_CRD_H */
