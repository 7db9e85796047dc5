/* SPDX-License-Identifier: MIT */
/*
 * crd.h: `kcr-gen crd` (crd.c): CustomResourceDefinitions from API type
 * headers that carry kubebuilder's markers, the work controller-gen does for
 * Go types. A set gathers headers (each one version of a group's kinds) and
 * then builds one CRD per group and kind, all its versions together.
 */
#ifndef KCR_GEN_CRD_H
#define KCR_GEN_CRD_H

#include <jansson.h>
#include <stddef.h>

/* CRD_SCHEMA_NODES_MAX bounds the schema of one kind: structs used by value are
 * copied into every place they appear, so nesting could otherwise blow up. */
#define CRD_SCHEMA_NODES_MAX 200000

/* CRD_SCHEMA_DEPTH_MAX bounds how deep a kind's schema nests (JSON levels),
 * so that the CRD, inside its envelope, stays within what kcr-gen's own YAML
 * reader takes (128 levels) and no step recurses deeply. */
#define CRD_SCHEMA_DEPTH_MAX 100

/* crd_set: the versions read so far (opaque). */
typedef struct crd_set crd_set;

/* crd_set_create makes an empty set in *out. Returns 0 or -1 (out of memory). */
int crd_set_create(crd_set **out);

/*
 * crd_set_max_desc_len cuts every description in the schemas to n bytes as
 * controller-gen's crd:maxDescLen=N does (0 drops them; n < 0, the default,
 * keeps them whole). Set it before adding headers: a Kubernetes type whose
 * schema kcr-gen has only without descriptions needs 0.
 */
void crd_set_max_desc_len(crd_set *s, long n);

/* crd_set_destroy releases the set. NULL is ignored. */
void crd_set_destroy(crd_set *s);

/*
 * crd_set_add parses the header text (len bytes) named name (used in messages
 * and, without +versionName, for its version: the directory it sits in) and
 * adds the kinds it declares (+kubebuilder:object:root=true). Returns 0, or -1
 * with "NAME:LINE:COL: reason" in msg; the set is then as it was.
 */
int crd_set_add(crd_set *s, const char *name, const char *text, size_t len, char *msg, size_t size);

/*
 * crd_set_layout sets *out to the C layout of the header crd_set_add took
 * last (a new reference; -1 and NULL before any), what `kcr-gen codecs`
 * (codecs.c) needs to code the header's own structs:
 *   {"file": NAME,
 *    "structs": [{"name", "line", "col", "alias": MEMBER (a named type),
 *                 "fields": [MEMBER...]}...] in the header's order,
 *    "kinds": [{"struct", "group", "version", "kind"}...],
 *    "shared": {TYPE: struct, with its "file"} (the headers added before it)}
 * where a MEMBER is {"c", "type", "ptr", "container" ("one", "list", "map"),
 * "json", "required", "inline" (TypeMeta's), "line", "col", "type_line",
 * "type_col"}; the JSON names and required are what the CRD says.
 */
int crd_set_layout(const crd_set *s, json_t **out);

/*
 * crd_set_build writes into *out a new JSON array of the CRDs, one per group
 * and kind, ordered by group then plural, each an apiextensions.k8s.io/v1
 * CustomResourceDefinition with its versions ordered by name. Returns 0, or -1
 * with a message in msg (several versions and no storage version, say).
 */
int crd_set_build(const crd_set *s, json_t **out, char *msg, size_t size);

#endif /* KCR_GEN_CRD_H */
