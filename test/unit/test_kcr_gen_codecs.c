/* SPDX-License-Identifier: MIT */
/*
 * test_kcr_gen_codecs.c: `kcr-gen codecs`, the codecs of a type header's own
 * structs. kubebuilder's Memcached header (test/unit/data/kcr-gen/kubebuilder)
 * and a kind with every member shape (test/unit/data/kcr-gen/codecs: its
 * endpoint_t, phase_t and names_t from another header, coded by their own
 * package) are coded at build time (cmd/kcr-gen/CMakeLists.txt) and used here
 * under the headers' own names: JSON to the struct and back unchanged, the
 * zero values an optional member leaves out, unknown members dropped, error
 * messages, copy and equality, the typed client through the scheme hooks, and
 * an allocation-failure loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kcr/error.h"
#include "kcr/scheme.h"
#include "kcr/testing.h"
#include "kcr/typed.h"
#include "memcached_codecs.h"
#include "shape_codecs.h"
#include "shared_codecs.h"
#include "testutil.h"

static const char memcached_json[] =
    "{\"apiVersion\":\"cache.example.com/v1alpha1\",\"kind\":\"Memcached\","
    "\"metadata\":{\"name\":\"sample\",\"namespace\":\"default\",\"generation\":2,"
    "\"labels\":{\"app\":\"memcached\"}},"
    "\"spec\":{\"size\":3},"
    "\"status\":{\"conditions\":[{\"type\":\"Available\",\"status\":\"True\","
    "\"reason\":\"Reconciling\",\"message\":\"ok\","
    "\"lastTransitionTime\":\"2026-12-06T10:00:00Z\"}]}}";

static json_t *load(const char *text) {
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  if (!j)
    fail_msg("bad test JSON: %s", jerr.text);
  return j;
}

/* A Memcached decodes into the header's memcached_t and encodes back unchanged. */
static void test_codecs_memcached_round_trip(void **state) {
  json_t *j = load(memcached_json), *out = NULL;
  memcached_t *m = NULL, *c = NULL;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(memcached_decode(j, &m, &err), 0);
  assert_string_equal(m->type_meta.api_version, "cache.example.com/v1alpha1");
  assert_string_equal(m->type_meta.kind, "Memcached");
  assert_string_equal(m->metadata.name, "sample");
  assert_true(m->metadata.has_generation);
  assert_int_equal(m->metadata.generation, 2);
  assert_non_null(m->spec.size);
  assert_int_equal(*m->spec.size, 3);
  assert_int_equal(m->status.conditions.len, 1);
  assert_string_equal(m->status.conditions.items[0].type, "Available");
  assert_int_equal(memcached_encode(m, &out, &err), 0);
  kcr_test_assert_json_equal(j, out);
  json_decref(out);

  /* copy and equal; a change makes them differ */
  assert_int_equal(memcached_copy(m, &c, &err), 0);
  assert_true(memcached_equal(m, c));
  *c->spec.size = 2;
  assert_false(memcached_equal(m, c));
  memcached_free(c);
  c = NULL;
  assert_int_equal(memcached_copy(m, &c, &err), 0);
  c->status.conditions.len = 0;
  assert_false(memcached_equal(m, c));
  c->status.conditions.len = 1;
  assert_true(memcached_equal(m, c));
  memcached_free(c);

  /* spec is required; size is optional and unset when NULL */
  memcached_spec_clear(&m->spec);
  assert_null(m->spec.size);
  assert_int_equal(memcached_encode(m, &out, &err), 0);
  assert_true(json_is_object(json_object_get(out, "spec")));
  assert_int_equal(json_object_size(json_object_get(out, "spec")), 0);
  json_decref(out);
  memcached_free(m);
  json_decref(j);
  memcached_free(NULL);
}

static const char shape_json[] =
    "{\"apiVersion\":\"shapes.example.com/v1\",\"kind\":\"Shape\","
    "\"metadata\":{\"name\":\"s\"},"
    "\"spec\":{\"text\":\"hello\",\"optText\":\"x\",\"count\":7,\"big\":9000000000,"
    "\"flag\":false,\"enabled\":true,\"ratio\":0.5,\"target\":\"http\",\"memory\":\"64Mi\","
    "\"since\":\"2026-12-06T10:00:00Z\",\"phase\":\"Running\",\"aliases\":[\"a\",\"b\"],"
    "\"endpoints\":[{\"host\":\"h1\",\"port\":80},{\"host\":\"h2\"}],\"ports\":[1,2,3],"
    "\"labels\":{\"k\":\"v\",\"k2\":\"v2\"},\"byName\":{\"one\":{\"port\":1}},"
    "\"primary\":{\"host\":\"p\"},\"fallback\":{\"port\":8080},\"replicas\":0,"
    "\"x-custom\":\"c\"},"
    "\"status\":{\"observedGeneration\":4}}";

/* Every member shape decodes into the header's struct and encodes back unchanged. */
static void test_codecs_shapes_round_trip(void **state) {
  json_t *j = load(shape_json), *out = NULL;
  shape_t *v = NULL, *c = NULL;
  shape_spec_t *s;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(shape_decode(j, &v, &err), 0);
  s = &v->spec;
  assert_string_equal(s->text, "hello");
  assert_string_equal(s->opt_text, "x");
  assert_int_equal(s->count, 7);
  assert_non_null(s->big);
  assert_int_equal(*s->big, 9000000000LL);
  assert_non_null(s->flag);
  assert_false(*s->flag);
  assert_true(s->enabled);
  assert_true(s->ratio > 0.49 && s->ratio < 0.51);
  assert_true(s->target.is_string);
  assert_string_equal(s->target.str_value, "http");
  assert_non_null(s->memory);
  assert_string_equal(s->memory->text, "64Mi");
  assert_int_equal(s->since.sec, 1796551200);
  assert_string_equal(s->phase, "Running");
  assert_int_equal(s->aliases.len, 2);
  assert_string_equal(s->aliases.items[1], "b");
  assert_int_equal(s->endpoints.len, 2);
  assert_string_equal(s->endpoints.items[0].host, "h1");
  assert_int_equal(s->endpoints.items[0].port, 80);
  assert_int_equal(s->ports.len, 3);
  assert_int_equal(s->ports.items[2], 3);
  assert_int_equal(s->labels.len, 2);
  assert_int_equal(s->by_name.len, 1);
  assert_string_equal(s->by_name.items[0].key, "one");
  assert_int_equal(s->by_name.items[0].value.port, 1);
  assert_non_null(s->primary);
  assert_string_equal(s->primary->host, "p");
  assert_int_equal(s->fallback.port, 8080);
  assert_string_equal(s->custom, "c");
  assert_int_equal(v->status.observed_generation, 4);
  assert_int_equal(shape_encode(v, &out, &err), 0);
  kcr_test_assert_json_equal(j, out);
  json_decref(out);

  assert_int_equal(shape_copy(v, &c, &err), 0);
  assert_true(shape_equal(v, c));
  /* maps compare in any order */
  {
    struct {
      char *key;
      char *value;
    } t = {c->spec.labels.items[0].key, c->spec.labels.items[0].value};
    c->spec.labels.items[0].key = c->spec.labels.items[1].key;
    c->spec.labels.items[0].value = c->spec.labels.items[1].value;
    c->spec.labels.items[1].key = t.key;
    c->spec.labels.items[1].value = t.value;
  }
  assert_true(shape_equal(v, c));
  c->spec.primary->port = 1;
  assert_false(shape_equal(v, c));
  shape_free(c);
  c = NULL;
  assert_int_equal(shape_copy(v, &c, &err), 0);
  c->spec.since.sec++;
  assert_false(shape_equal(v, c));
  shape_free(c);
  shape_free(v);
  json_decref(j);
}

/*
 * Optional members held by value are left out when zero (a struct when it
 * encodes to {}); required ones are always written; null is absent; members
 * the header does not declare are dropped.
 */
static void test_codecs_zero_values(void **state) {
  json_t *j = load("{\"spec\":{\"text\":\"t\",\"replicas\":0,\"count\":null,\"zzz\":1,"
                   "\"fallback\":{},\"endpoints\":[]},\"extra\":true}"),
         *out = NULL, *want = load("{\"spec\":{\"text\":\"t\",\"replicas\":0}}");
  shape_t *v = NULL;
  kcr_error_t err;
  (void)state;
  kcr_error_clear(&err);
  assert_int_equal(shape_decode(j, &v, &err), 0);
  assert_int_equal(v->spec.count, 0);
  assert_int_equal(shape_encode(v, &out, &err), 0);
  kcr_test_assert_json_equal(want, out);
  json_decref(out);
  shape_free(v);
  json_decref(j);
  json_decref(want);

  /* a new value, set through the package's allocator */
  assert_int_equal(shape_create(&v, &err), 0);
  v->spec.text = shape_mem_strdup("made");
  v->spec.replicas = 2;
  v->spec.enabled = true;
  v->spec.fallback.port = 1;
  v->spec.since.sec = 86400;
  assert_int_equal(shape_encode(v, &out, &err), 0);
  want = load("{\"spec\":{\"text\":\"made\",\"replicas\":2,\"enabled\":true,"
              "\"fallback\":{\"port\":1},\"since\":\"1970-01-02T00:00:00Z\"}}");
  kcr_test_assert_json_equal(want, out);
  json_decref(out);
  json_decref(want);
  shape_free(v);
}

/* decode_error decodes text as a Shape and checks the error's code and message. */
static void decode_error(const char *text, int code, const char *want) {
  json_t *j = load(text);
  shape_t *v = NULL;
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(shape_decode(j, &v, &err), code);
  assert_null(v);
  assert_string_equal(err.message, want);
  json_decref(j);
}

static void test_codecs_errors(void **state) {
  shape_t *v = NULL;
  json_t *out = NULL;
  kcr_error_t err;
  (void)state;
  decode_error("{\"spec\":{\"replicas\":1}}", KCR_EPARSE, "spec.text: required field is missing");
  decode_error("{\"spec\":{\"text\":\"t\",\"replicas\":1,\"count\":\"x\"}}", KCR_EPARSE,
               "spec.count: expected an integer, got a string");
  decode_error("{\"spec\":{\"text\":\"t\",\"replicas\":1,\"endpoints\":[{\"port\":true}]}}",
               KCR_EPARSE, "spec.endpoints[0].port: expected an integer, got a boolean");
  decode_error("{\"spec\":{\"text\":\"t\",\"replicas\":1,\"since\":\"yesterday\"}}", KCR_EPARSE,
               "spec.since: not an RFC 3339 date-time");
  decode_error("{\"metadata\":{\"name\":1}}", KCR_EPARSE,
               "metadata.name: expected a string, got an integer");
  decode_error("[]", KCR_EPARSE, "(top level): expected an object, got an array");
  /* a required string left NULL */
  kcr_error_clear(&err);
  assert_int_equal(shape_create(&v, &err), 0);
  assert_int_equal(shape_encode(v, &out, &err), KCR_EINVAL);
  assert_null(out);
  assert_string_equal(err.message, "spec.text: required field is not set");
  shape_free(v);
}

/* The typed client reads and writes the header's struct through the scheme hooks. */
static void test_codecs_typed_client(void **state) {
  kcr_fake_client_t *f = NULL;
  kcr_scheme_t *scheme = NULL;
  kcr_objclient c;
  kcr_error_t err;
  kcr_gvk gvk = memcached_gvk();
  memcached_t *m = NULL, *updated = NULL;
  const kcr_kind_info *k;
  void *got = NULL;
  (void)state;
  kcr_error_clear(&err);
  assert_string_equal(MEMCACHED_GROUP, "cache.example.com");
  assert_string_equal(MEMCACHED_VERSION, "v1alpha1");
  assert_string_equal(MEMCACHED_KIND, "Memcached");
  assert_string_equal(MEMCACHED_RESOURCE, "memcacheds");
  assert_int_equal(kcr_scheme_create(&scheme, &err), 0);
  assert_int_equal(memcached_register(scheme, &err), 0);
  k = kcr_scheme_lookup_gvk(scheme, &gvk);
  assert_non_null(k);
  assert_string_equal(k->list_kind, "MemcachedList");
  assert_int_equal(kcr_fake_client_create(NULL, &f, &err), 0);
  c = kcr_fake_client_objclient(f);
  assert_int_equal(kcr_fake_client_add_json(f, memcached_json, &err), 0);
  assert_int_equal(kcr_typed_get(&c, scheme, &gvk, "default", "sample", &got, &err), 0);
  m = got;
  assert_int_equal(*m->spec.size, 3);
  *m->spec.size = 1;
  assert_int_equal(kcr_typed_update(&c, scheme, &gvk, m, NULL, &got, &err), 0);
  updated = got;
  assert_int_equal(*updated->spec.size, 1);
  assert_string_equal(updated->type_meta.kind, "Memcached");
  memcached_free(updated);
  memcached_free(m);
  assert_int_equal(kcr_typed_get(&c, scheme, &gvk, "default", "sample", &got, &err), 0);
  m = got;
  assert_int_equal(*m->spec.size, 1);
  memcached_free(m);
  kcr_fake_client_destroy(f);
  kcr_scheme_destroy(scheme);
}

/* Every allocation of decode, encode and copy may fail: KCR_ENOMEM, nothing leaked. */
static void test_codecs_alloc_failures(void **state) {
  json_t *j = load(shape_json), *out = NULL;
  shape_t *v = NULL, *c = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(shape_decode(j, &v, NULL), (shape_free(v), v = NULL));
  assert_int_equal(shape_decode(j, &v, NULL), 0);
  KCR_TEST_ALLOC_LOOP(shape_encode(v, &out, NULL), (json_decref(out), out = NULL));
  KCR_TEST_ALLOC_LOOP(shape_copy(v, &c, NULL), (shape_free(c), c = NULL));
  shape_free(v);
  json_decref(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_codecs_memcached_round_trip),
      cmocka_unit_test(test_codecs_shapes_round_trip),
      cmocka_unit_test(test_codecs_zero_values),
      cmocka_unit_test(test_codecs_errors),
      cmocka_unit_test(test_codecs_typed_client),
      cmocka_unit_test(test_codecs_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
