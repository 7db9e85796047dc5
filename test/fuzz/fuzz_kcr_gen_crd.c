/* SPDX-License-Identifier: MIT */
/*
 * fuzz_kcr_gen_crd.c: `kcr-gen crd`'s header parser and marker reader
 * (cmd/kcr-gen/header.c, crd.c) and the YAML writer behind it. Input: the
 * bytes of one type header, named api/v1/fuzz.h. A refusal is a message that
 * names the file, a line and a column ("api/v1/fuzz.h:L:C: ..."), or the size
 * limit. What is accepted builds CRDs, each an apiextensions.k8s.io/v1
 * CustomResourceDefinition, whose YAML reads back as the same JSON (the writer
 * quotes what a plain scalar would change), and a second run gives the same.
 */
#include <string.h>

#include <jansson.h>

#include "crd.h"
#include "fuzz.h"
#include "gen_fuzz.h"

#define NAME "api/v1/fuzz.h"

/* run builds the CRDs of the header, or NULL with the message checked. */
static json_t *run(const uint8_t *data, size_t size) {
  crd_set *s = NULL;
  char msg[1024] = "";
  json_t *out = NULL;
  FUZZ_CHECK(crd_set_create(&s) == 0);
  if (crd_set_add(s, NAME, (const char *)data, size, msg, sizeof(msg)) == 0) {
    FUZZ_CHECK(crd_set_build(s, &out, msg, sizeof(msg)) == 0);
  } else {
    gen_fuzz_check_place(msg, NAME, 2);
  }
  crd_set_destroy(s);
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *crds = run(data, size), *again, *crd;
  size_t i;
  if (!crds)
    return 0;
  json_array_foreach(crds, i, crd) {
    FUZZ_CHECK(
        strcmp(json_string_value(json_object_get(crd, "kind")), "CustomResourceDefinition") == 0);
    gen_fuzz_check_yaml(crd);
  }
  again = run(data, size);
  FUZZ_CHECK(again && json_equal(again, crds));
  json_decref(again);
  json_decref(crds);
  return 0;
}
