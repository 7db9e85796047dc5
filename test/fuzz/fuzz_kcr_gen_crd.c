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
#include <ctype.h>
#include <string.h>

#include <jansson.h>

#include "crd.h"
#include "fuzz.h"
#include "gen.h"
#include "kcr/buf.h"

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
    const char *p = msg + strlen(NAME);
    FUZZ_CHECK(strncmp(msg, NAME ":", strlen(NAME) + 1) == 0);
    p++;
    FUZZ_CHECK(isdigit((unsigned char)*p));
    while (isdigit((unsigned char)*p))
      p++;
    FUZZ_CHECK(*p++ == ':' && isdigit((unsigned char)*p));
    while (isdigit((unsigned char)*p))
      p++;
    FUZZ_CHECK(strncmp(p, ": ", 2) == 0 && p[2] != '\0');
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
    kcr_buf_t b;
    char msg[256];
    json_t *docs = NULL;
    FUZZ_CHECK(
        strcmp(json_string_value(json_object_get(crd, "kind")), "CustomResourceDefinition") == 0);
    kcr_buf_init(&b, (size_t)64 << 20);
    FUZZ_CHECK(gen_yaml_write(&b, crd) == 0);
    FUZZ_CHECK(gen_yaml_parse(kcr_buf_cstr(&b), kcr_buf_len(&b), &docs, msg, sizeof(msg)) == 0);
    FUZZ_CHECK(json_array_size(docs) == 1 && json_equal(json_array_get(docs, 0), crd));
    json_decref(docs);
    kcr_buf_free(&b);
  }
  again = run(data, size);
  FUZZ_CHECK(again && json_equal(again, crds));
  json_decref(again);
  json_decref(crds);
  return 0;
}
