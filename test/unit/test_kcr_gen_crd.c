/* SPDX-License-Identifier: MIT */
/*
 * test_kcr_gen_crd.c: `kcr-gen crd` (cmd/kcr-gen/header.c, crd.c), CRDs from
 * C type headers with kubebuilder's markers. The acceptance test ports
 * kubebuilder's getting-started Memcached API to a header and compares
 * kcr-gen's CRD with the one controller-gen v0.21.0 wrote for the Go types
 * (test/unit/data/kcr-gen/kubebuilder/SOURCE). Then: parse and marker errors
 * with their exact FILE:LINE:COL messages, the shapes and kind-level markers,
 * several versions of a kind, the YAML writer on strings that need quoting,
 * the schema size bound, and an allocation-failure loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "crd.h"
#include "gen.h"
#include "kcr/buf.h"
#include "kcr/error.h"
#include "testutil.h"

#define KB_DIR KCR_TEST_DATA_DIR "/kcr-gen/kubebuilder"

/*
 * build_desc runs one set over the headers (name, text pairs) into *out, or
 * the error in msg, descriptions cut to max_desc bytes (-1: whole).
 */
static int build_desc(const char *const *hdrs, size_t n, long max_desc, json_t **out, char *msg,
                      size_t size) {
  crd_set *s;
  int rc = 0;
  *out = NULL;
  msg[0] = '\0';
  if (crd_set_create(&s)) {
    snprintf(msg, size, "out of memory");
    return KCR_ENOMEM;
  }
  crd_set_max_desc_len(s, max_desc);
  for (size_t k = 0; k < n && rc == 0; k++)
    rc = crd_set_add(s, hdrs[2 * k], hdrs[2 * k + 1], strlen(hdrs[2 * k + 1]), msg, size);
  if (rc == 0)
    rc = crd_set_build(s, out, msg, size);
  crd_set_destroy(s);
  if (rc == 0)
    return 0;
  return strstr(msg, "out of memory") || strstr(msg, "memory ran out") ? KCR_ENOMEM : KCR_EINVAL;
}

/* build is build_desc with descriptions whole. */
static int build(const char *const *hdrs, size_t n, json_t **out, char *msg, size_t size) {
  return build_desc(hdrs, n, -1, out, msg, size);
}

/* build1 builds one header named name and returns its only CRD (new), failing the test on error. */
static json_t *build1(const char *name, const char *text) {
  const char *h[] = {name, text};
  char msg[1024];
  json_t *arr, *crd;
  if (build(h, 1, &arr, msg, sizeof(msg)))
    fail_msg("%s", msg);
  assert_int_equal(json_array_size(arr), 1);
  crd = json_incref(json_array_get(arr, 0));
  json_decref(arr);
  return crd;
}

/* expect_error builds one header and checks the exact message. */
static void expect_error(const char *name, const char *text, const char *want) {
  const char *h[] = {name, text};
  char msg[1024];
  json_t *arr;
  int rc = build(h, 1, &arr, msg, sizeof(msg));
  if (rc == 0 || strcmp(msg, want) != 0) {
    fprintf(stderr, "header:\n%s\nwant: %s\ngot:  %s\n", text, want, rc ? msg : "(success)");
    json_decref(arr);
    fail();
  }
}

/* yaml_round_trip writes crd as YAML and reads it back (new). */
static json_t *yaml_round_trip(const json_t *crd) {
  kcr_buf_t b;
  char msg[256];
  json_t *docs, *v;
  kcr_buf_init(&b, (size_t)64 << 20);
  assert_int_equal(gen_yaml_write(&b, crd), 0);
  if (gen_yaml_parse(kcr_buf_cstr(&b), kcr_buf_len(&b), &docs, msg, sizeof(msg)))
    fail_msg("%s\n%s", msg, kcr_buf_cstr(&b));
  kcr_buf_free(&b);
  assert_int_equal(json_array_size(docs), 1);
  v = json_incref(json_array_get(docs, 0));
  json_decref(docs);
  return v;
}

/* A header marked +kubebuilder:skip makes no CRD, as controller-gen skips the package. */
static void test_kcr_gen_crd_skip(void **state) {
  const char *h[] = {"api/v1/s.h", "// +groupName=s.io\n// +kubebuilder:skip\n\n"
                                   "// +kubebuilder:object:root=true\n"
                                   "typedef struct {\n  int32_t x;\n} skipped_t;\n"};
  char msg[256];
  json_t *arr;
  (void)state;
  assert_int_equal(build(h, 1, &arr, msg, sizeof(msg)), 0);
  assert_int_equal(json_array_size(arr), 0);
  json_decref(arr);
}

/* versions returns crd.spec.versions (borrowed). */
static json_t *versions(const json_t *crd) {
  return json_object_get(json_object_get(crd, "spec"), "versions");
}

/* schema_of returns version i's openAPIV3Schema (borrowed). */
static json_t *schema_of(const json_t *crd, size_t i) {
  return json_object_get(json_object_get(json_array_get(versions(crd), i), "schema"),
                         "openAPIV3Schema");
}

/*
 * compare_n builds the headers at paths (at most two, descriptions cut to
 * max_desc) and compares their one CRD with controller-gen's at want_path. Normalisation, and all
 * of it: both CRDs are read as YAML into JSON values (so key order and YAML
 * style, such as go-yaml folding a long description, do not count), and
 * metadata.annotations is dropped from both after checking that it holds
 * only the generator's version (controller-gen.kubebuilder.io/version there,
 * kcr.dev/kcr-gen-version here).
 */
static void compare_n(const char *const *paths, size_t n, long max_desc, const char *want_path) {
  size_t len;
  const char *h[4];
  char *texts[2] = {NULL, NULL};
  char msg[1024];
  json_t *want_docs, *want, *crds, *got, *ann;
  assert_true(n <= 2);
  for (size_t k = 0; k < n; k++) {
    texts[k] = kcr_test_slurp(paths[k], &len);
    h[2 * k] = paths[k];
    h[2 * k + 1] = texts[k];
  }
  if (build_desc(h, n, max_desc, &crds, msg, sizeof(msg)))
    fail_msg("%s", msg);
  assert_int_equal(json_array_size(crds), 1);
  got = yaml_round_trip(json_array_get(crds, 0));
  kcr_test_assert_json_equal(json_array_get(crds, 0), got); /* the writer loses nothing */
  if (gen_yaml_load(want_path, &want_docs, msg, sizeof(msg)))
    fail_msg("%s", msg);
  want = json_array_get(want_docs, 0);
  ann = json_object_get(json_object_get(want, "metadata"), "annotations");
  assert_int_equal(json_object_size(ann), 1);
  assert_string_equal(
      json_string_value(json_object_get(ann, "controller-gen.kubebuilder.io/version")), "v0.21.0");
  ann = json_object_get(json_object_get(got, "metadata"), "annotations");
  assert_int_equal(json_object_size(ann), 1);
  assert_non_null(json_object_get(ann, "kcr.dev/kcr-gen-version"));
  json_object_del(json_object_get(want, "metadata"), "annotations");
  json_object_del(json_object_get(got, "metadata"), "annotations");
  kcr_test_assert_json_equal(want, got);
  json_decref(want_docs);
  json_decref(got);
  json_decref(crds);
  free(texts[0]);
  free(texts[1]);
}

/* compare is compare_n for one header. */
static void compare(const char *path, long max_desc, const char *want_path) {
  compare_n(&path, 1, max_desc, want_path);
}

/* The acceptance test: kubebuilder's getting-started Memcached. */
static void test_kcr_gen_crd_memcached(void **state) {
  (void)state;
  compare(KB_DIR "/api/v1alpha1/memcached_types.h", -1,
          KB_DIR "/cache.example.com_memcacheds.yaml");
}

/*
 * kubebuilder's CronJob tutorial, made as the tutorial makes it (maxDescLen=0):
 * a named string type with its enum, `:=` defaults, metav1.Time, and the
 * built-in JobTemplateSpec and ObjectReference.
 */
static void test_kcr_gen_crd_cronjob(void **state) {
  size_t len;
  char *text;
  const char *h[2];
  char msg[1024];
  json_t *arr;
  (void)state;
  compare(KB_DIR "/api/v1/cronjob_types.h", 0,
          KB_DIR "/batch.tutorial.kubebuilder.io_cronjobs.yaml");
  /* with descriptions, kcr-gen cannot give JobTemplateSpec's: refused, not guessed */
  text = kcr_test_slurp(KB_DIR "/api/v1/cronjob_types.h", &len);
  h[0] = "api/v1/cronjob_types.h";
  h[1] = text;
  assert_int_equal(build(h, 1, &arr, msg, sizeof(msg)), KCR_EINVAL);
  assert_string_equal(msg, "api/v1/cronjob_types.h:97:3: kcr_batch_v1_job_template_spec_t: "
                           "kcr-gen has this type's schema only without descriptions, as "
                           "controller-gen writes it with crd:maxDescLen=0: use --max-desc-len 0");
  free(text);
}

/* named_hdr: named types (a string with an enum, a list) and descriptions to cut. */
static const char named_hdr[] = "// +groupName=n.example.com\n\n"
                                "// Mode is how. It has two sentences.\n"
                                "// +kubebuilder:validation:Enum=Fast;Slow\n"
                                "typedef const char *mode_t_;\n"
                                "// Names are names\n"
                                "// +kubebuilder:validation:MaxItems=3\n"
                                "typedef KCR_LIST(char *) names_t;\n\n"
                                "// +kubebuilder:object:root=true\n"
                                "// Thing has a description longer than twenty bytes\n"
                                "typedef struct {\n"
                                "  // +kubebuilder:default:=Slow\n"
                                "  mode_t_ mode;\n"
                                "  // Wordswithoutanyspaceatalltocut\n"
                                "  names_t names;\n"
                                "} thing_t;\n";

/*
 * kubebuilder's multiversion tutorial: the CronJob at v1 (the storage
 * version) and at v2 (a struct schedule of named types), one CRD.
 */
static void test_kcr_gen_crd_multiversion(void **state) {
  const char *const paths[] = {KB_DIR "/multiversion/api/v2/cronjob_types.h",
                               KB_DIR "/multiversion/api/v1/cronjob_types.h"};
  (void)state;
  compare_n(paths, 2, 0, KB_DIR "/multiversion/batch.tutorial.kubebuilder.io_cronjobs.yaml");
}

/* Named types, and descriptions cut as controller-gen's crd:maxDescLen=N cuts them. */
static void test_kcr_gen_crd_named_types_and_desc_len(void **state) {
  const char *h[] = {"api/v1/t.h", named_hdr};
  char msg[512];
  json_t *arr, *props, *want;
  (void)state;
  assert_int_equal(build_desc(h, 1, 20, &arr, msg, sizeof(msg)), 0);
  props = json_object_get(schema_of(json_array_get(arr, 0), 0), "properties");
  want =
      json_pack("{s{sssss[ss]ss}s{sssss{ss}si}}", "mode", "type", "string", "description",
                "Mode is how.", "enum", "Fast", "Slow", "default", "Slow", "names", "type", "array",
                "description", "Wordswithoutanyspace...", "items", "type", "string", "maxItems", 3);
  kcr_test_assert_json_equal(want, props);
  assert_string_equal(
      json_string_value(json_object_get(schema_of(json_array_get(arr, 0), 0), "description")),
      "Thing has a...");
  json_decref(want);
  json_decref(arr);
  /* 0 drops them all */
  assert_int_equal(build_desc(h, 1, 0, &arr, msg, sizeof(msg)), 0);
  {
    char *t = json_dumps(json_array_get(arr, 0), 0);
    assert_non_null(t);
    assert_null(strstr(t, "\"description\""));
    free(t);
  }
  json_decref(arr);
}

/* The parser's refusals: each names the file, line and byte column. */
static void test_kcr_gen_crd_parse_errors(void **state) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"typedef struct {\n  int x;\n} a_t;\n",
       "t.h:2:3: 'int': use int32_t, int64_t, bool or double (a field's width is explicit)"},
      {"typedef struct {\n  unsigned long x;\n} a_t;\n",
       "t.h:2:3: 'unsigned': use int32_t, int64_t, bool or double (a field's width is explicit)"},
      {"typedef struct {\n  int32_t x[4];\n} a_t;\n",
       "t.h:2:12: arrays are not supported: use KCR_LIST(int32_t) x"},
      {"typedef struct {\n  int32_t a, b;\n} a_t;\n",
       "t.h:2:12: declare one member per declaration (each has its own doc and markers)"},
      {"typedef struct {\n  struct { int32_t y; } x;\n} a_t;\n",
       "t.h:2:3: a struct member is named by its typedef: declare `typedef struct {...} name_t;` "
       "above and use name_t"},
      {"int f(void);\n", "t.h:1:1: expected a typedef struct declaration, got 'int' (a type "
                         "header holds only those, comments and preprocessor lines)"},
      {"typedef struct {\n  int32_t x;\n", "t.h:1:1: the struct is not closed before the end of "
                                           "the file"},
      {"// doc\n/* open\n", "t.h:2:1: unterminated /* comment"},
      {"typedef struct {\n  int32_t x;\n  int64_t x;\n} a_t;\n",
       "t.h:3:3: member x is already declared at 2:3"},
      {"typedef struct {\n  int32_t x\n} a_t;\n", "t.h:3:1: expected ';' after member x, got '}'"},
      {"typedef enum { A } e_t;\n", "t.h:1:9: typedef enum is not supported (an enumeration "
                                    "is a char * typedef with +kubebuilder:validation:Enum)"},
      {"typedef kcr_type_meta_t tm_t;\n",
       "t.h:1:9: kcr_type_meta_t is inlined into a struct: not in a list, a map or a typedef"},
      {"typedef struct foo foo_t;\n", "t.h:1:20: expected '{' opening the struct, got 'foo_t'"},
      {"typedef struct {\n  int32_t x a0123456789012345678901234567890123456789xyz;\n} a_t;\n",
       "t.h:2:13: expected ';' after member x, got 'a012345678901234567890123456789012345678' "
       "(cut)"},
      {"typedef struct {\n\tint32_t \xff;\n} a_t;\n", "t.h:2:10: not UTF-8 (byte 0xff)"},
      {"// caf\xc3\xa9\n// \xed\xa0\x80 (a surrogate)\n", "t.h:2:4: not UTF-8 (byte 0xed)"},
      {"typedef struct {\n  int32_t \xc3\xa9;\n} a_t;\n",
       "t.h:2:11: expected the member's name, got byte 0xc3"},
      {"typedef struct {\n  int32_t x;\n} a_t;\ntypedef struct {\n  bool y;\n} a_t;\n",
       "t.h:4:1: type a_t is already declared at 1:1"},
      {"typedef struct {\n  int32_t x : 3;\n} a_t;\n", "t.h:2:13: bit-fields are not supported"},
      {"typedef struct {\n  KCR_LIST(int32_t x;\n} a_t;\n",
       "t.h:2:20: expected ')' closing the list or map macro, got 'x'"},
      {"typedef struct {\n  foo_t x;\n} a_t;\n",
       "t.h:2:3: unknown type foo_t: declare it above as a typedef struct (here or in a "
       "header given before this one), or use int32_t, int64_t, bool, double, char *, a "
       "Kubernetes type kcr-gen knows (kcr_meta_v1_condition_t...) or KCR_LIST(T)/KCR_MAP(T)"},
      {"typedef struct {\n  b_t x;\n} a_t;\ntypedef struct {\n  int32_t y;\n} b_t;\n",
       "t.h:2:3: type b_t is declared below (at 4:1): declare it first"},
      {"typedef struct {\n  char x;\n} a_t;\n", "t.h:2:3: a string is char * (0 '*' here)"},
      {"typedef struct {\n  const char **x;\n} a_t;\n", "t.h:2:9: a string is char * (2 '*' here)"},
      {"typedef struct {\n  uint32_t x;\n} a_t;\n",
       "t.h:2:3: uint32_t: Kubernetes APIs use int32_t and int64_t (no unsigned or narrow "
       "integers)"},
  };
  (void)state;
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
    expect_error("t.h", cases[k].text, cases[k].want);
}

#define PKG "// +groupName=example.com\n// +versionName=v1\n\n"

/* The marker refusals: a bad value, an unknown name, the wrong place or type. */
static void test_kcr_gen_crd_marker_errors(void **state) {
  static const struct {
    const char *text, *want;
  } cases[] = {
      {PKG "typedef struct {\n  // +kubebuilder:validation:Minimum=abc\n  int32_t x;\n} a_t;\n",
       "t.h:5:6: +kubebuilder:validation:Minimum: \"abc\" is not a number"},
      {PKG "typedef struct {\n  // +kubebuilder:validation:Minimun=1\n  int32_t x;\n} a_t;\n",
       "t.h:5:6: unknown marker +kubebuilder:validation:Minimun"},
      {PKG "typedef struct {\n  // +kubebuilder:validation:MaxLength=3\n  int32_t x;\n} a_t;\n",
       "t.h:5:6: +kubebuilder:validation:MaxLength applies to string schemas, not to type integer"},
      {PKG "typedef struct {\n  //   +listType=bag\n  KCR_LIST(char *) x;\n} a_t;\n",
       "t.h:5:8: +listType: \"bag\" is not one of atomic set map"},
      {PKG "typedef struct {\n  // +kubebuilder:validation:MinItems=-1\n  KCR_LIST(char *) "
           "x;\n} a_t;\n",
       "t.h:5:6: +kubebuilder:validation:MinItems: \"-1\" is not a non-negative integer"},
      {PKG "typedef struct {\n  // +kubebuilder:object:root=true\n  int32_t x;\n} a_t;\n",
       "t.h:5:6: +kubebuilder:object:root belongs on a type (a typedef), not a member"},
      {PKG "// +optional\ntypedef struct {\n  int32_t x;\n} a_t;\n",
       "t.h:4:4: +optional belongs on a member, not a type"},
      {PKG "typedef struct {\n  // +groupName=x.io\n  int32_t x;\n} a_t;\n",
       "t.h:5:6: +groupName belongs on the package (a comment of its own, apart from any "
       "declaration)"},
      {PKG "// +kubebuilder:validation:Minimum=1\n\n\ntypedef struct {\n  int32_t x;\n} a_t;\n",
       "t.h:4:4: +kubebuilder:validation:Minimum is attached to no declaration: put it right "
       "above one (at most one blank line between)"},
      {PKG "typedef struct {\n  // +kubebuilder:default=abc\n  int32_t x;\n} a_t;\n",
       "t.h:5:6: +kubebuilder:default: \"abc\" is not a valid integer"},
      {PKG "typedef struct {\n  // +kubebuilder:validation:XValidation:message=\"m\"\n  int32_t "
           "x;\n} a_t;\n",
       "t.h:5:6: +kubebuilder:validation:XValidation needs a rule: "
       "+kubebuilder:validation:XValidation:rule=\"...\""},
      {PKG "typedef struct {\n  // +kubebuilder:validation:Pattern=\"^a\\q\"\n  char *x;\n} "
           "a_t;\n",
       "t.h:5:6: +kubebuilder:validation:Pattern: a malformed quoted string"},
      {PKG "// +kubebuilder:object:root=true\n// "
           "+kubebuilder:printcolumn:name=A,type=string,JSONpath=.x\ntypedef struct {\n  int32_t "
           "x;\n} a_t;\n",
       "t.h:5:4: +kubebuilder:printcolumn: unknown argument \"JSONpath\" (it takes name type "
       "JSONPath description format priority)"},
      {PKG "// +kubebuilder:object:root=true\n// +kubebuilder:printcolumn:name=A,type=string\n"
           "typedef struct {\n  int32_t x;\n} a_t;\n",
       "t.h:5:4: +kubebuilder:printcolumn needs name, type and JSONPath"},
      {PKG "// +kubebuilder:object:root=true\n// +kubebuilder:printcolumn:name=A,"
           "a_very_long_argument_name_that_is_not_cut_in_the_message_at_all=1\n"
           "typedef struct {\n  int32_t x;\n} a_t;\n",
       "t.h:5:4: +kubebuilder:printcolumn: unknown argument "
       "\"a_very_long_argument_name_that_is_not_cut_in_the_message_at_all\" (it takes name type "
       "JSONPath description format priority)"},
      {PKG "// +kubebuilder:object:root=true\n// +kubebuilder:resource:scope=Global\n"
           "typedef struct {\n  int32_t x;\n} a_t;\n",
       "t.h:5:4: +kubebuilder:resource: scope is Namespaced or Cluster"},
      {"// +kubebuilder:object:root=true\ntypedef struct {\n  int32_t x;\n} a_t;\n",
       "t.h:1:4: a kind needs its group: +groupName=GROUP in a comment of its own"},
      {"// +groupName=example.com\n\n// +kubebuilder:object:root=true\ntypedef struct {\n  "
       "int32_t x;\n} a_t;\n",
       "t.h:3:4: a kind needs its version: +versionName=VERSION, or the header in a directory "
       "named for it (api/v1alpha1/...); \"\" is not a version"},
      {PKG "// +groupName=other.io\n", "t.h:4:4: +groupName: \"other.io\" differs from "
                                       "\"example.com\" given before"},
      {PKG "typedef struct {\n  // +kcr:json=x\n  int32_t x;\n  int32_t y_;\n  // +kcr:json=x\n"
           "  bool z;\n} a_t;\n",
       "t.h:9:3: JSON name x is used twice in this struct"},
      {PKG "// +kubebuilder:object:root=true\n// +kcr:kind=httpRoute\n"
           "typedef struct {\n  int32_t x;\n} a_t;\n",
       "t.h:5:4: +kcr:kind takes the kind, up to 63 letters and digits starting with a capital: "
       "+kcr:kind=NAME"},
      {PKG "// +kubebuilder:object:root=true\n// +kcr:kind\n"
           "typedef struct {\n  int32_t x;\n} a_t;\n",
       "t.h:5:4: +kcr:kind takes the kind, up to 63 letters and digits starting with a capital: "
       "+kcr:kind=NAME"},
      {PKG "typedef struct {\n  // +kcr:kind=A\n  int32_t x;\n} a_t;\n",
       "t.h:5:6: +kcr:kind belongs on a type (a typedef), not a member"},
  };
  (void)state;
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
    expect_error("t.h", cases[k].text, cases[k].want);
}

/* +kcr:kind names a kind the C name cannot spell; the plural follows it. */
static void test_kcr_gen_crd_kind_marker(void **state) {
  json_t *crd = build1("api/v1/r.h", "// +groupName=net.example.com\n\n"
                                     "// +kubebuilder:object:root=true\n"
                                     "// +kcr:kind=HTTPRoute\n"
                                     "typedef struct {\n  int32_t x;\n} http_route_t;\n");
  json_t *names = json_object_get(json_object_get(crd, "spec"), "names");
  (void)state;
  assert_string_equal(json_string_value(json_object_get(names, "kind")), "HTTPRoute");
  assert_string_equal(json_string_value(json_object_get(names, "listKind")), "HTTPRouteList");
  assert_string_equal(json_string_value(json_object_get(names, "plural")), "httproutes");
  assert_string_equal(json_string_value(json_object_get(json_object_get(crd, "metadata"), "name")),
                      "httproutes.net.example.com");
  json_decref(crd);
}

/* shared_port: a header of types only, which the headers after it may use. */
static const char shared_port[] = "// Port is one port.\n"
                                  "typedef struct {\n"
                                  "  // +kubebuilder:validation:Minimum=1\n"
                                  "  int32_t port;\n"
                                  "} port_t;\n";

/* shared_user: a kind whose member is a type of an earlier header. */
static const char shared_user[] = "// +groupName=example.com\n\n"
                                  "// +kubebuilder:object:root=true\n"
                                  "typedef struct {\n"
                                  "  // The main port.\n"
                                  "  port_t main;\n"
                                  "} widget_t;\n";

/* main_of: the schema of member main of the first CRD's kind in arr. */
static const json_t *main_of(const json_t *arr) {
  return json_object_get(json_object_get(schema_of(json_array_get(arr, 0), 0), "properties"),
                         "main");
}

/* run_shared builds the shared-types pair of headers; 0 or the error. */
static int run_shared(void) {
  const char *h[] = {"api/shared/port.h", shared_port, "api/v1/w.h", shared_user};
  char msg[512];
  json_t *arr = NULL;
  int rc = build(h, 2, &arr, msg, sizeof(msg));
  json_decref(arr);
  return rc;
}

/*
 * A header uses the types of the headers given before it (as a Go package
 * imports another's): in order only; the same name declared alike in two of
 * them is one type, declared differently an error where it is used; a type of
 * the header itself wins.
 */
static void test_kcr_gen_crd_shared_types(void **state) {
  const char *h[] = {"api/shared/port.h", shared_port, "api/v1/w.h", shared_user};
  const char *reversed[] = {"api/v1/w.h", shared_user, "api/shared/port.h", shared_port};
  const char *twice[] = {"api/a/port.h", shared_port,  "api/b/port.h",
                         shared_port,    "api/v1/w.h", shared_user};
  const char *clash[] = {"api/a/port.h", shared_port,
                         "api/b/port.h", "typedef struct {\n  char *port;\n} port_t;\n",
                         "api/v1/w.h",   shared_user};
  const char *own[] = {"api/b/port.h", "typedef struct {\n  char *port;\n} port_t;\n", "api/v1/w.h",
                       "// +groupName=example.com\n\ntypedef struct {\n  int32_t port;\n} "
                       "port_t;\n\n// +kubebuilder:object:root=true\ntypedef struct {\n  "
                       "port_t main;\n} widget_t;\n"};
  char msg[1024];
  json_t *arr, *want;
  (void)state;
  assert_int_equal(build(h, 2, &arr, msg, sizeof(msg)), 0);
  assert_int_equal(json_array_size(arr), 1);
  want = json_pack("{sssss{s{sssssi}}s[s]}", "type", "object", "description", "The main port.",
                   "properties", "port", "type", "integer", "format", "int32", "minimum", 1,
                   "required", "port");
  kcr_test_assert_json_equal(want, main_of(arr));
  json_decref(arr);
  assert_int_equal(build(twice, 3, &arr, msg, sizeof(msg)), 0);
  kcr_test_assert_json_equal(want, main_of(arr));
  json_decref(arr);
  json_decref(want);
  assert_int_equal(build(own, 2, &arr, msg, sizeof(msg)), 0);
  assert_string_equal(
      json_string_value(json_object_get(
          json_object_get(json_object_get(main_of(arr), "properties"), "port"), "type")),
      "integer");
  json_decref(arr);
  assert_int_equal(build(reversed, 2, &arr, msg, sizeof(msg)), KCR_EINVAL);
  assert_non_null(strstr(msg, "api/v1/w.h:6:3: unknown type port_t: declare it above as a "
                              "typedef struct (here or in a header given before this one)"));
  assert_int_equal(build(clash, 3, &arr, msg, sizeof(msg)), KCR_EINVAL);
  assert_string_equal(msg, "api/v1/w.h:6:3: type port_t is declared differently at "
                           "api/a/port.h:2:1 and at api/b/port.h:1:1: give the headers one of "
                           "them");
}

/* Markers of other tools, and kubebuilder's non-CRD ones, are ignored. */
static void test_kcr_gen_crd_other_markers(void **state) {
  json_t *crd = build1("api/v1/w.h", "// +groupName=example.com\n// +genclient\n"
                                     "// +kubebuilder:object:generate=true\n"
                                     "// +kubebuilder:webhookconfiguration:mutating=true\n"
                                     "// +kubebuilder:webhook:path=/m,mutating=true\n\n"
                                     "// +kubebuilder:object:root=true\n"
                                     "// +kubebuilder:rbac:groups=apps,resources=x,verbs=get\n"
                                     "// +k8s:openapi-gen=true\n"
                                     "typedef struct {\n  // +kcr:rbac:groups=x\n  int32_t x;\n"
                                     "} widget_t;\n");
  (void)state;
  assert_string_equal(json_string_value(json_object_get(json_object_get(crd, "metadata"), "name")),
                      "widgets.example.com");
  json_decref(crd);
}

/* shapes_hdr: every member shape, most validation markers and the kind-level ones. */
static const char shapes_hdr[] =
    "// +groupName=shapes.example.com\n"
    "// +kubebuilder:validation:Optional\n"
    "\n"
    "// Port is one port.\n"
    "// +kubebuilder:validation:XValidation:rule=\"self.port > 0\",message=\"port, positive\"\n"
    "typedef struct {\n"
    "  // +kubebuilder:validation:Minimum=1\n"
    "  // +kubebuilder:validation:Maximum=65535\n"
    "  // +required\n"
    "  int32_t port;\n"
    "  // +kubebuilder:validation:Enum=TCP;UDP\n"
    "  // +kubebuilder:default=TCP\n"
    "  char *protocol;\n"
    "} port_t;\n"
    "\n"
    "typedef struct shape_spec {\n"
    "  // The image.\n"
    "  //\n"
    "  //\n"
    "  // Second paragraph.   \n"
    "  // +kubebuilder:validation:MinLength=1\n"
    "  // +kubebuilder:validation:MaxLength=253\n"
    "  // +kubebuilder:validation:Pattern=`^[a-z]+(:[0-9]+)?$`\n"
    "  char *image;\n"
    "  // +kubebuilder:validation:MinItems=1\n"
    "  // +listType=map\n"
    "  // +listMapKey=port\n"
    "  // +listMapKey=protocol\n"
    "  KCR_LIST(port_t) ports;\n"
    "  // +kubebuilder:default={a,b}\n"
    "  // +listType=set\n"
    "  KCR_LIST(char *) tags;\n"
    "  // +mapType=atomic\n"
    "  KCR_MAP(int64_t) limits;\n"
    "  // +kubebuilder:validation:ExclusiveMinimum=true\n"
    "  // +kubebuilder:default=0.5\n"
    "  double ratio;\n"
    "  // +kubebuilder:default=true\n"
    "  bool *enabled;\n"
    "  // +kcr:json=URL\n"
    "  // +kubebuilder:validation:Format=uri\n"
    "  const char *url;\n"
    "  // +nullable\n"
    "  port_t *main_port;\n"
    "  kcr_int_or_string_t max_surge;\n"
    "  // +kubebuilder:pruning:PreserveUnknownFields\n"
    "  // +kubebuilder:default={}\n"
    "  KCR_MAP(char *) extra;\n"
    "} shape_spec_t;\n"
    "\n"
    "// +kubebuilder:object:root=true\n"
    "// +kubebuilder:subresource:status\n"
    "// +kubebuilder:subresource:scale:specpath=.spec.replicas,statusreplicaspath=.status."
    "replicas,selectorpath=.status.selector\n"
    "// +kubebuilder:resource:scope=Cluster,shortName=sh;shp,categories={all,kcr},"
    "singular=shape\n"
    "// +kubebuilder:printcolumn:name=\"Image\",type=string,JSONPath=`.spec.image`,"
    "description=\"the image, quoted\",priority=1\n"
    "// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=.metadata.creationTimestamp\n"
    "// +kubebuilder:deprecatedversion:warning=\"use v2\"\n"
    "// A shape.\n"
    "typedef struct {\n"
    "  kcr_type_meta_t tm;\n"
    "  kcr_meta_v1_object_meta_t metadata;\n"
    "  // +required\n"
    "  shape_spec_t spec;\n"
    "} shape_t;\n";

/* The member shapes, validation markers and kind-level markers, in one kind. */
static void test_kcr_gen_crd_shapes(void **state) {
  json_t *crd = build1("api/v1beta1/shape_types.h", shapes_hdr), *want, *spec, *entry;
  json_error_t je;
  (void)state;
  spec = json_object_get(json_object_get(schema_of(crd, 0), "properties"), "spec");
  want = json_loads(
      "{\"type\": \"object\", \"properties\": {"
      " \"image\": {\"type\": \"string\", \"description\": \"The image.\\n\\nSecond paragraph.\","
      "  \"minLength\": 1, \"maxLength\": 253, \"pattern\": \"^[a-z]+(:[0-9]+)?$\"},"
      " \"ports\": {\"type\": \"array\", \"minItems\": 1, \"x-kubernetes-list-type\": \"map\","
      "  \"x-kubernetes-list-map-keys\": [\"port\", \"protocol\"],"
      "  \"items\": {\"type\": \"object\", \"description\": \"Port is one port.\","
      "   \"required\": [\"port\"],"
      "   \"x-kubernetes-validations\": [{\"rule\": \"self.port > 0\", \"message\": \"port, "
      "positive\"}],"
      "   \"properties\": {\"port\": {\"type\": \"integer\", \"format\": \"int32\", \"minimum\": 1,"
      "    \"maximum\": 65535}, \"protocol\": {\"type\": \"string\", \"enum\": [\"TCP\", \"UDP\"],"
      "    \"default\": \"TCP\"}}}},"
      " \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"default\": [\"a\", "
      "\"b\"], \"x-kubernetes-list-type\": \"set\"},"
      " \"limits\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"integer\", "
      "\"format\": \"int64\"}, \"x-kubernetes-map-type\": \"atomic\"},"
      " \"ratio\": {\"type\": \"number\", \"exclusiveMinimum\": true, \"default\": 0.5},"
      " \"enabled\": {\"type\": \"boolean\", \"default\": true},"
      " \"URL\": {\"type\": \"string\", \"format\": \"uri\"},"
      " \"mainPort\": {\"type\": \"object\", \"description\": \"Port is one port.\","
      "  \"nullable\": true, \"required\": [\"port\"],"
      "  \"x-kubernetes-validations\": [{\"rule\": \"self.port > 0\", \"message\": \"port, "
      "positive\"}],"
      "  \"properties\": {\"port\": {\"type\": \"integer\", \"format\": \"int32\", \"minimum\": 1,"
      "   \"maximum\": 65535}, \"protocol\": {\"type\": \"string\", \"enum\": [\"TCP\", \"UDP\"],"
      "   \"default\": \"TCP\"}}},"
      " \"maxSurge\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"string\"}],"
      "  \"x-kubernetes-int-or-string\": true},"
      " \"extra\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\"},"
      "  \"x-kubernetes-preserve-unknown-fields\": true, \"default\": {}}"
      "}}",
      0, &je);
  if (!want)
    fail_msg("want: %d: %s", je.column, je.text);
  kcr_test_assert_json_equal(want, spec);
  json_decref(want);
  want = json_pack("[s]", "spec");
  kcr_test_assert_json_equal(want, json_object_get(schema_of(crd, 0), "required"));
  json_decref(want);
  entry = json_array_get(versions(crd), 0);
  want = json_loads(
      "{\"name\": \"v1beta1\", \"served\": true, \"storage\": true, \"deprecated\": true,"
      " \"deprecationWarning\": \"use v2\","
      " \"subresources\": {\"status\": {}, \"scale\": {\"specReplicasPath\": \".spec.replicas\","
      "  \"statusReplicasPath\": \".status.replicas\", \"labelSelectorPath\": "
      "\".status.selector\"}},"
      " \"additionalPrinterColumns\": [{\"name\": \"Image\", \"type\": \"string\", \"jsonPath\": "
      "\".spec.image\", \"description\": \"the image, quoted\", \"priority\": 1},"
      "  {\"name\": \"Age\", \"type\": \"date\", \"jsonPath\": \".metadata.creationTimestamp\"}]}",
      0, &je);
  assert_non_null(want);
  json_object_del(entry, "schema");
  kcr_test_assert_json_equal(want, entry);
  json_decref(want);
  want = json_loads("{\"group\": \"shapes.example.com\", \"scope\": \"Cluster\", \"names\": "
                    "{\"kind\": \"Shape\", \"listKind\": \"ShapeList\", \"plural\": \"shapes\", "
                    "\"singular\": \"shape\", \"shortNames\": [\"sh\", \"shp\"], "
                    "\"categories\": [\"all\", \"kcr\"]}, \"versions\": []}",
                    0, &je);
  assert_non_null(want);
  json_array_clear(versions(crd));
  kcr_test_assert_json_equal(want, json_object_get(crd, "spec"));
  json_decref(want);
  json_decref(crd);
}

/* Two headers, two versions of one kind: one CRD, the storage version marked. */
static void test_kcr_gen_crd_versions(void **state) {
  static const char v1[] = "// +groupName=batch.example.com\n\n"
                           "// +kubebuilder:object:root=true\n"
                           "typedef struct {\n  int32_t a;\n} cron_job_t;\n";
  static const char v2[] = "// +groupName=batch.example.com\n\n"
                           "// +kubebuilder:object:root=true\n"
                           "// +kubebuilder:storageversion\n"
                           "typedef struct {\n  int64_t a;\n} cron_job_t;\n";
  const char *h[] = {"api/v2/cronjob_types.h", v2, "api/v1/cronjob_types.h", v1};
  char msg[512];
  json_t *arr, *crd;
  (void)state;
  assert_int_equal(build(h, 2, &arr, msg, sizeof(msg)), 0);
  assert_int_equal(json_array_size(arr), 1);
  crd = json_array_get(arr, 0);
  assert_string_equal(json_string_value(json_object_get(json_object_get(crd, "metadata"), "name")),
                      "cronjobs.batch.example.com");
  assert_int_equal(json_array_size(versions(crd)), 2);
  assert_string_equal(json_string_value(json_object_get(json_array_get(versions(crd), 0), "name")),
                      "v1");
  assert_true(json_is_false(json_object_get(json_array_get(versions(crd), 0), "storage")));
  assert_true(json_is_true(json_object_get(json_array_get(versions(crd), 1), "storage")));
  json_decref(arr);
  /* without the storage version marker */
  h[1] = v1;
  h[0] = "api/v2/cronjob_types.h";
  assert_int_equal(build(h, 2, &arr, msg, sizeof(msg)), KCR_EINVAL);
  assert_string_equal(msg, "api/v1/cronjob_types.h:4:1: CronJob has 2 versions and none marked "
                           "+kubebuilder:storageversion");
  /* the same version twice */
  h[0] = "api/v1/other.h";
  assert_int_equal(build(h, 2, &arr, msg, sizeof(msg)), KCR_EINVAL);
  assert_string_equal(msg, "api/v1/cronjob_types.h:4:1: batch.example.com/v1 CronJob is also "
                           "declared at api/v1/other.h:4:1");
}

/* Structs used by value are copied in: nesting that multiplies is refused, not built. */
static void test_kcr_gen_crd_schema_bound(void **state) {
  kcr_buf_t b;
  (void)state;
  kcr_buf_init(&b, (size_t)1 << 20);
  assert_int_equal(kcr_buf_appends(&b, "typedef struct {\n  int32_t x;\n} t0_t;\n"), 0);
  for (int k = 1; k <= 20; k++)
    assert_int_equal(kcr_buf_appendf(&b,
                                     "typedef struct {\n  t%d_t a;\n  t%d_t b;\n  t%d_t c;\n"
                                     "} t%d_t;\n",
                                     k - 1, k - 1, k - 1, k),
                     0);
  /* 3^n copies of t0: the bound stops it at t9, 44 lines down */
  expect_error("t.h", kcr_buf_cstr(&b),
               "t.h:44:1: the schema of t9_t has more than 200000 values (structs nest by value "
               "too often)");
  kcr_buf_free(&b);
}

/* A chain of structs each holding the one before is refused at the depth bound. */
static void test_kcr_gen_crd_depth_bound(void **state) {
  kcr_buf_t b;
  (void)state;
  kcr_buf_init(&b, (size_t)1 << 20);
  assert_int_equal(kcr_buf_appends(&b, "typedef struct {\n  int32_t x;\n} t0_t;\n"), 0);
  for (int k = 1; k <= 1000; k++)
    assert_int_equal(
        kcr_buf_appendf(&b, "typedef struct {\n  // +optional\n  t%d_t a;\n} t%d_t;\n", k - 1, k),
        0);
  /* t0 is 4 levels deep and each struct adds 2 (properties, the member): t49 is 102 */
  expect_error("t.h", kcr_buf_cstr(&b),
               "t.h:196:1: the schema of t49_t nests more than 100 levels deep (structs within "
               "structs)");
  kcr_buf_free(&b);
}

/* The YAML writer: strings that a plain scalar would change read back the same. */
static void test_kcr_gen_crd_yaml_strings(void **state) {
  static const char *const strs[] = {
      "True",      "false",        "null",        "~",     "1",   "1.5",
      "0x1F",      "-1",           "+1",          ".inf",  "",    " lead",
      "trail ",    "a: b",         "a #b",        "#x",    "- x", "[x]",
      "{x}",       "*x",           "&x",          "!x",    "|x",  ">x",
      "%x",        "@x",           "`x",          "'x",    "\"x", "yes",
      "On",        "a\nb",         "a\n\nb",      "a \nb", "\na", "a\n",
      "tab\there", "\x01",         "caf\xc3\xa9", "x:",    "::",  "?x",
      ",x",        "line\r\nnext", "  \n  ",      "a\\b"};
  json_t *obj = json_object(), *arr = json_array(), *back;
  (void)state;
  for (size_t k = 0; k < sizeof(strs) / sizeof(strs[0]); k++) {
    json_object_set_new(obj, strs[k], json_string(strs[k]));
    json_array_append_new(arr, json_string(strs[k]));
  }
  json_object_set_new(obj, "list", arr);
  json_object_set_new(
      obj, "nested",
      json_pack("{s[{si}[]{}]sfsfsnsb}", "l", "a", 1, "r", 0.1, "whole", 3.0, "n", "t", 1));
  back = yaml_round_trip(obj);
  kcr_test_assert_json_equal(obj, back);
  json_decref(back);
  json_decref(obj);
}

/*
 * run_header is one whole run of the header (descriptions cut to max_desc)
 * for the allocation-failure loop.
 */
static int run_header(const char *name, const char *text, long max_desc) {
  const char *h[] = {name, text};
  char msg[512];
  json_t *arr = NULL;
  kcr_buf_t b;
  int rc = build_desc(h, 1, max_desc, &arr, msg, sizeof(msg));
  if (rc == 0) {
    kcr_buf_init(&b, (size_t)1 << 20);
    rc = gen_yaml_write(&b, json_array_get(arr, 0));
    kcr_buf_free(&b);
  }
  json_decref(arr);
  return rc;
}

/*
 * Every allocation failing in turn, over three headers (the Memcached port,
 * the shapes, the named types with cut descriptions) and a pair that shares
 * a type: each failed run says
 * "out of memory" (never another error), and nothing leaks.
 */
static void test_kcr_gen_crd_alloc_failure(void **state) {
  size_t len;
  char *text = kcr_test_slurp(KB_DIR "/api/v1alpha1/memcached_types.h", &len);
  (void)state;
  KCR_TEST_ALLOC_LOOP(run_header("api/v1alpha1/memcached_types.h", text, -1), (void)0);
  KCR_TEST_ALLOC_LOOP(run_header("api/v1beta1/shape_types.h", shapes_hdr, -1), (void)0);
  KCR_TEST_ALLOC_LOOP(run_header("api/v1/t.h", named_hdr, 20), (void)0);
  KCR_TEST_ALLOC_LOOP(run_shared(), (void)0);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kcr_gen_crd_memcached),
      cmocka_unit_test(test_kcr_gen_crd_cronjob),
      cmocka_unit_test(test_kcr_gen_crd_multiversion),
      cmocka_unit_test(test_kcr_gen_crd_named_types_and_desc_len),
      cmocka_unit_test(test_kcr_gen_crd_parse_errors),
      cmocka_unit_test(test_kcr_gen_crd_marker_errors),
      cmocka_unit_test(test_kcr_gen_crd_other_markers),
      cmocka_unit_test(test_kcr_gen_crd_kind_marker),
      cmocka_unit_test(test_kcr_gen_crd_shared_types),
      cmocka_unit_test(test_kcr_gen_crd_skip),
      cmocka_unit_test(test_kcr_gen_crd_shapes),
      cmocka_unit_test(test_kcr_gen_crd_versions),
      cmocka_unit_test(test_kcr_gen_crd_schema_bound),
      cmocka_unit_test(test_kcr_gen_crd_depth_bound),
      cmocka_unit_test(test_kcr_gen_crd_yaml_strings),
      cmocka_unit_test(test_kcr_gen_crd_alloc_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
