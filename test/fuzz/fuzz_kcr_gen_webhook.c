/* SPDX-License-Identifier: MIT */
/*
 * fuzz_kcr_gen_webhook.c: `kcr-gen webhook`'s marker reader
 * (cmd/kcr-gen/webhook.c) and the YAML writer behind it. Input: the bytes of
 * one source file, named fuzz.c. A refusal is a message that names the file
 * and a line ("fuzz.c:L: ...") and leaves the set empty. What is accepted
 * builds at most two configurations, the mutating one first, each with its
 * webhooks sorted by name, a service or a URL, sideEffects None or
 * NoneOnDryRun and a timeout in 1..30; their YAML reads back as the same JSON,
 * and a second run gives the same.
 */
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "gen_fuzz.h"
#include "webhook.h"

#define NAME "fuzz.c"

/* check_hook checks what the builder promises of one webhook. */
static void check_hook(const json_t *h, const char *prev) {
  const json_t *cc = json_object_get(h, "clientConfig"), *t = json_object_get(h, "timeoutSeconds");
  const char *name = json_string_value(json_object_get(h, "name"));
  const char *se = json_string_value(json_object_get(h, "sideEffects"));
  FUZZ_CHECK(name && name[0]);
  FUZZ_CHECK(!prev || strcmp(prev, name) < 0); /* sorted, no name twice */
  FUZZ_CHECK(se && (strcmp(se, "None") == 0 || strcmp(se, "NoneOnDryRun") == 0));
  FUZZ_CHECK(!t || (json_integer_value(t) >= 1 && json_integer_value(t) <= 30));
  FUZZ_CHECK(json_array_size(json_object_get(h, "admissionReviewVersions")) > 0);
  FUZZ_CHECK(json_is_object(cc));
}

/* run builds the configurations of the source, or NULL with the message checked. */
static json_t *run(const uint8_t *data, size_t size) {
  wh_set *s = NULL;
  char msg[1024] = "";
  json_t *out = NULL;
  FUZZ_CHECK(wh_set_create(&s) == 0);
  if (wh_set_add(s, NAME, (const char *)data, size, msg, sizeof(msg)) == 0) {
    if (wh_set_build(s, NULL, &out, msg, sizeof(msg)))
      gen_fuzz_check_place(msg, NAME, 1);
  } else {
    gen_fuzz_check_place(msg, NAME, 1);
    FUZZ_CHECK(wh_set_count(s) == 0);
  }
  wh_set_destroy(s);
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *docs = run(data, size), *again, *doc;
  size_t i;
  if (!docs)
    return 0;
  FUZZ_CHECK(json_array_size(docs) <= 2);
  json_array_foreach(docs, i, doc) {
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *prev = NULL;
    json_t *h;
    size_t k;
    FUZZ_CHECK(kind && (strcmp(kind, "MutatingWebhookConfiguration") == 0 ||
                        (strcmp(kind, "ValidatingWebhookConfiguration") == 0 &&
                         (i == 0 || json_array_size(docs) == 2))));
    FUZZ_CHECK(json_array_size(json_object_get(doc, "webhooks")) > 0);
    json_array_foreach(json_object_get(doc, "webhooks"), k, h) {
      check_hook(h, prev);
      prev = json_string_value(json_object_get(h, "name"));
    }
    gen_fuzz_check_yaml(doc);
  }
  again = run(data, size);
  FUZZ_CHECK(again && json_equal(again, docs));
  json_decref(again);
  json_decref(docs);
  return 0;
}
