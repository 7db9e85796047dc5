/* SPDX-License-Identifier: MIT */
/*
 * test_app_webhook.c: the App's webhook logic (cmd/kcr-operator/app/
 * app_webhook.h): each validation rule with its message, ratcheting on
 * update, the paused-port rule, the image warning, defaulting, the
 * conversion's mapping, and the round trip property (v1alpha1 -> v1beta1 ->
 * v1alpha1 and back the other way give equal objects) on hand-written and
 * generated objects; and the three handlers through AdmissionReview and
 * ConversionReview bodies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/webhook_internal.h"
#include "testutil.h"

#include "app/app_webhook.h"
#include "app_v1alpha1.h"
#include "app_v1beta1.h"

static json_t *load(const char *s) {
  json_error_t e;
  json_t *j = json_loads(s, 0, &e);
  if (!j)
    fail_msg("bad JSON in the test: %s: %s", e.text, s);
  return j;
}

/* validate returns the message for app (and old), "" when valid. */
static int validate(const char *app, const char *old, char *msg, size_t size) {
  json_t *a = load(app), *o = old ? load(old) : NULL;
  int n = kop_app_validate(a, o, msg, size);
  json_decref(a);
  json_decref(o);
  return n;
}

#define APP(spec) "{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"spec\":" spec "}"

static void test_app_webhook_valid(void **state) {
  char msg[1024];
  (void)state;
  assert_int_equal(validate(APP("{\"image\":\"nginx:1.27\",\"port\":80,\"env\":[{\"name\":\"A\"},"
                                "{\"name\":\"B\",\"value\":\"x\"}],\"config\":{\"index.html\":\"\","
                                "\"a-b_c.d\":\"x\",\".hidden\":\"\"},\"resources\":{\"requests\":{"
                                "\"cpu\":\"100m\",\"memory\":\"64Mi\"},\"limits\":{\"cpu\":\"0.5\","
                                "\"memory\":\"1Gi\"}}}"),
                            NULL, msg, sizeof(msg)),
                   0);
  assert_string_equal(msg, "");
  assert_int_equal(validate(APP("{}"), NULL, msg, sizeof(msg)), 0);
}

static void test_app_webhook_env_duplicates(void **state) {
  char msg[1024];
  (void)state;
  assert_int_equal(validate(APP("{\"env\":[{\"name\":\"A\"},{\"name\":\"B\"},{\"name\":\"A\","
                                "\"value\":\"2\"}]}"),
                            NULL, msg, sizeof(msg)),
                   1);
  assert_string_equal(msg, "spec.env[2].name: duplicate name \"A\" (also spec.env[0]): a "
                           "container's variables are unique by name");
}

static void test_app_webhook_config_keys(void **state) {
  char msg[1024];
  (void)state;
  assert_int_equal(validate(APP("{\"config\":{\"..data\":\"x\"}}"), NULL, msg, sizeof(msg)), 1);
  assert_string_equal(msg, "spec.config[\"..data\"]: not a valid file name: a file name does not "
                           "start with '..' (the kubelet keeps its own ..data and timestamped "
                           "entries in a ConfigMap volume)");
  assert_int_equal(validate(APP("{\"config\":{\"a/b\":\"x\"}}"), NULL, msg, sizeof(msg)), 1);
  assert_non_null(strstr(msg, "spec.config[\"a/b\"]: not a valid file name: a file name has only"));
  assert_int_equal(
      validate(APP("{\"config\":{\".\":\"\",\"..\":\"\",\"\":\"\"}}"), NULL, msg, sizeof(msg)), 3);
  {
    char big[300], app[400];
    memset(big, 'a', 254);
    big[254] = '\0';
    snprintf(app, sizeof(app), APP("{\"config\":{\"%s\":\"\"}}"), big);
    assert_int_equal(validate(app, NULL, msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, "at most 253 characters"));
    big[253] = '\0';
    snprintf(app, sizeof(app), APP("{\"config\":{\"%s\":\"\"}}"), big);
    assert_int_equal(validate(app, NULL, msg, sizeof(msg)), 0);
  }
}

static void test_app_webhook_resources(void **state) {
  char msg[1024];
  (void)state;
  assert_int_equal(validate(APP("{\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"1Gi\"},"
                                "\"limits\":{\"cpu\":\"500m\",\"memory\":\"1024Mi\"}}}"),
                            NULL, msg, sizeof(msg)),
                   1);
  assert_string_equal(msg, "spec.resources.requests.cpu: 2 must be less than or equal to the limit "
                           "500m (the Deployment's pods would be refused)");
  /* Units of every kind compare by value; integers are quantities too. */
  assert_int_equal(validate(APP("{\"resources\":{\"requests\":{\"a\":\"1k\",\"b\":\"1Ki\",\"c\":1,"
                                "\"d\":\"1e3\",\"e\":\"1500m\"},\"limits\":{\"a\":\"1000\",\"b\":"
                                "\"1024\",\"c\":\"1\",\"d\":\"1k\",\"e\":\"1.5\"}}}"),
                            NULL, msg, sizeof(msg)),
                   0);
  assert_int_equal(validate(APP("{\"resources\":{\"requests\":{\"a\":\"1001\",\"b\":\"1025\"},"
                                "\"limits\":{\"a\":\"1k\",\"b\":\"1Ki\"}}}"),
                            NULL, msg, sizeof(msg)),
                   2);
  /* What is not a quantity is the schema's business, not compared here. */
  assert_int_equal(validate(APP("{\"resources\":{\"requests\":{\"cpu\":\"inf\",\"x\":\"0x10\"},"
                                "\"limits\":{\"cpu\":\"1\",\"x\":\"1\"}}}"),
                            NULL, msg, sizeof(msg)),
                   0);
}

static void test_app_webhook_port_name(void **state) {
  char msg[1024];
  const char *ok[] = {"http", "web-1", "a", "x123456789012ab"};
  const char *bad[] = {"HTTP", "-a", "a-", "a--b", "123", "", "x123456789012abc", "a_b"};
  (void)state;
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    char app[256];
    snprintf(app, sizeof(app),
             "{\"metadata\":{\"annotations\":{\"" KOP_APP_PORT_NAME_ANNOTATION "\":\"%s\"}}}",
             ok[i]);
    assert_int_equal(validate(app, NULL, msg, sizeof(msg)), 0);
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char app[256];
    snprintf(app, sizeof(app),
             "{\"metadata\":{\"annotations\":{\"" KOP_APP_PORT_NAME_ANNOTATION "\":\"%s\"}}}",
             bad[i]);
    assert_int_equal(validate(app, NULL, msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, "is not a port name"));
  }
}

static void test_app_webhook_paused_port(void **state) {
  char msg[1024];
  (void)state;
  assert_int_equal(validate(APP("{\"paused\":true,\"port\":8080}"),
                            APP("{\"paused\":true,\"port\":80}"), msg, sizeof(msg)),
                   1);
  assert_string_equal(msg, "spec.port: cannot change from 80 to 8080 while spec.paused is true: a "
                           "paused App's Service and status.url would not follow; set spec.paused "
                           "to false in the same update");
  /* Pausing and changing the port at once is refused too; set and unset count. */
  assert_int_equal(
      validate(APP("{\"paused\":true,\"port\":8080}"), APP("{\"port\":80}"), msg, sizeof(msg)), 1);
  assert_int_equal(
      validate(APP("{\"paused\":true}"), APP("{\"paused\":true,\"port\":80}"), msg, sizeof(msg)),
      1);
  assert_non_null(strstr(msg, "from 80 to unset"));
  /* Unpausing in the same update, or other changes while paused: allowed. */
  assert_int_equal(validate(APP("{\"paused\":false,\"port\":8080}"),
                            APP("{\"paused\":true,\"port\":80}"), msg, sizeof(msg)),
                   0);
  assert_int_equal(validate(APP("{\"paused\":true,\"port\":80,\"replicas\":3}"),
                            APP("{\"paused\":true,\"port\":80}"), msg, sizeof(msg)),
                   0);
  /* A CREATE has no old object: paused with a port is fine. */
  assert_int_equal(validate(APP("{\"paused\":true,\"port\":80}"), NULL, msg, sizeof(msg)), 0);
}

static void test_app_webhook_ratchet(void **state) {
  char msg[1024];
  const char *old =
      APP("{\"config\":{\"..data\":\"x\"},\"env\":[{\"name\":\"A\"},{\"name\":\"A\"}]}");
  (void)state;
  /* An App admitted before the rules can still be updated (its finalizer
   * removed, its replicas changed)... */
  assert_int_equal(
      validate(APP("{\"config\":{\"..data\":\"x\"},\"env\":[{\"name\":\"A\"},{\"name\":\"A\"}],"
                   "\"replicas\":2}"),
               old, msg, sizeof(msg)),
      0);
  /* ...but a rule it kept is still enforced. */
  assert_int_equal(validate(APP("{\"config\":{\"..data\":\"x\"},\"port\":1,\"resources\":{"
                                "\"requests\":{\"cpu\":2},\"limits\":{\"cpu\":1}}}"),
                            old, msg, sizeof(msg)),
                   1);
  assert_non_null(strstr(msg, "spec.resources.requests.cpu"));
  /* Being deleted: nothing is checked. */
  assert_int_equal(validate("{\"metadata\":{\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},"
                            "\"spec\":{\"config\":{\"..x\":\"\"}}}",
                            NULL, msg, sizeof(msg)),
                   0);
}

static void test_app_webhook_many_problems(void **state) {
  char msg[1024], small[40];
  (void)state;
  assert_int_equal(validate(APP("{\"env\":[{\"name\":\"A\"},{\"name\":\"A\"}],\"config\":{\"..a\":"
                                "\"\"}}"),
                            NULL, msg, sizeof(msg)),
                   2);
  assert_non_null(strstr(msg, "unique by name; spec.config[\"..a\"]"));
  /* A short buffer cuts the message, never overflows. */
  assert_int_equal(validate(APP("{\"env\":[{\"name\":\"A\"},{\"name\":\"A\"}],\"config\":{\"..a\":"
                                "\"\"}}"),
                            NULL, small, sizeof(small)),
                   2);
  assert_int_equal(strlen(small), sizeof(small) - 1);
}

static void test_app_webhook_warning(void **state) {
  char msg[320];
  json_t *a;
  struct {
    const char *image;
    int warn;
  } cases[] = {{"nginx", 1},          {"nginx:latest", 1}, {"nginx:1.27", 0},
               {"reg:5000/nginx", 1}, {"reg:5000/n:1", 0}, {"n@sha256:abc", 0}};
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    a = json_pack("{s:{s:s}}", "spec", "image", cases[i].image);
    assert_int_equal(kop_app_warning(a, msg, sizeof(msg)), cases[i].warn);
    json_decref(a);
  }
  a = json_pack("{s:{s:s}}", "spec", "image", "nginx");
  kop_app_warning(a, msg, sizeof(msg));
  assert_string_equal(msg, "spec.image: \"nginx\" has no tag (it means latest): each new pod runs "
                           "whatever was pushed last; pin a tag or a digest");
  json_decref(a);
}

static void check_default(const char *in, int n, const char *want) {
  json_t *a = load(in), *w = load(want);
  assert_int_equal(kop_app_default(a), n);
  if (!json_equal(a, w)) {
    char *s = json_dumps(a, JSON_COMPACT);
    fail_msg("defaulted %s, want %s", s, want);
  }
  json_decref(a);
  json_decref(w);
}

static void test_app_webhook_default(void **state) {
  (void)state;
  check_default(APP("{\"image\":\"x\"}"), 1,
                APP("{\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"10m\",\"memory\":"
                    "\"64Mi\"}}}"));
  check_default(APP("{\"resources\":{}}"), 1,
                APP("{\"resources\":{\"requests\":{\"cpu\":\"10m\",\"memory\":\"64Mi\"}}}"));
  /* Given requests or limits are the user's choice (limits alone: Kubernetes
   * makes them the requests). */
  check_default(APP("{\"resources\":{\"limits\":{\"cpu\":\"1\"}}}"), 0,
                APP("{\"resources\":{\"limits\":{\"cpu\":\"1\"}}}"));
  check_default(APP("{\"resources\":{\"requests\":{}}}"), 0,
                APP("{\"resources\":{\"requests\":{}}}"));
  check_default("{\"spec\":3}", 0, "{\"spec\":3}");
}

/* ---- conversion ---- */

static json_t *conv(json_t *o, const char *to) {
  char msg[256];
  json_t *out = NULL;
  if (kop_app_convert(o, to, &out, msg, sizeof(msg)) != 0)
    fail_msg("convert to %s: %s", to, msg);
  return out;
}

static void assert_json(json_t *got, const char *want) {
  json_t *w = load(want);
  if (!json_equal(got, w)) {
    char *s = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
    fail_msg("got %s\nwant %s", s, want);
  }
  json_decref(w);
}

/* meta_normal drops an empty metadata.annotations, then an empty metadata,
 * from o (borrowed): Go's ObjectMeta has no empty map (omitempty), so
 * "annotations: {}" and no annotations are one object to the API server, and
 * the conversion may give either. */
static void meta_normal(json_t *o) {
  json_t *md = json_object_get(o, "metadata");
  if (json_is_object(json_object_get(md, "annotations")) &&
      json_object_size(json_object_get(md, "annotations")) == 0)
    json_object_del(md, "annotations");
  if (json_is_object(md) && json_object_size(md) == 0)
    json_object_del(o, "metadata");
}

/* round_trip checks o -> other -> o gives o back (up to meta_normal). */
static void round_trip(json_t *o) {
  const char *from = json_string_value(json_object_get(o, "apiVersion"));
  const char *other = strcmp(from, KOP_APP_V1ALPHA1) == 0 ? KOP_APP_V1BETA1 : KOP_APP_V1ALPHA1;
  json_t *mid = conv(o, other), *back = conv(mid, from);
  meta_normal(back);
  meta_normal(o);
  if (!json_equal(o, back)) {
    char *a = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS),
         *b = json_dumps(back, JSON_COMPACT | JSON_SORT_KEYS);
    fail_msg("round trip through %s changed\n %s\ninto\n %s", other, a, b);
  }
  json_decref(mid);
  json_decref(back);
}

#define FULL_ALPHA                                                                                 \
  "{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"metadata\":{\"name\":\"web\","          \
  "\"namespace\":\"shop\",\"uid\":\"u\",\"resourceVersion\":\"7\",\"generation\":3,"               \
  "\"labels\":{\"l\":\"v\"},\"annotations\":{\"a\":\"b\",\"" KOP_APP_PORT_NAME_ANNOTATION          \
  "\":\"web\"},\"finalizers\":[\"kcr.dev/directory\"]},\"spec\":{\"image\":\"nginx:1.27\","        \
  "\"replicas\":2,\"port\":80,\"env\":[{\"name\":\"G\",\"value\":\"hi\"}],\"config\":{\"i\":"      \
  "\"x\"},\"resources\":{\"requests\":{\"cpu\":\"10m\"}},\"paused\":true},\"status\":{"            \
  "\"observedGeneration\":3,\"replicas\":2,\"readyReplicas\":1,\"selector\":\"s\",\"url\":"        \
  "\"http://web.shop.svc:80\",\"conditions\":[{\"type\":\"Available\",\"status\":\"True\"}]}}"

static void test_app_webhook_convert_mapping(void **state) {
  json_t *a = load(FULL_ALPHA), *b;
  (void)state;
  b = conv(a, KOP_APP_V1BETA1);
  assert_json(b, "{\"apiVersion\":\"kcr.dev/v1beta1\",\"kind\":\"App\",\"metadata\":{\"name\":"
                 "\"web\",\"namespace\":\"shop\",\"uid\":\"u\",\"resourceVersion\":\"7\","
                 "\"generation\":3,\"labels\":{\"l\":\"v\"},\"annotations\":{\"a\":\"b\"},"
                 "\"finalizers\":[\"kcr.dev/directory\"]},\"spec\":{\"image\":\"nginx:1.27\","
                 "\"replicas\":2,\"service\":{\"port\":80,\"portName\":\"web\"},\"env\":[{"
                 "\"name\":\"G\",\"value\":\"hi\"}],\"config\":{\"i\":\"x\"},\"resources\":{"
                 "\"requests\":{\"cpu\":\"10m\"}},\"paused\":true},\"status\":{"
                 "\"observedGeneration\":3,\"replicas\":2,\"readyReplicas\":1,\"selector\":\"s\","
                 "\"url\":\"http://web.shop.svc:80\",\"conditions\":[{\"type\":\"Available\","
                 "\"status\":\"True\"}]}}");
  json_decref(b);
  json_decref(a);
  /* The annotation was the only one: the map goes with it, and comes back. */
  a = load("{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"metadata\":{\"annotations\":{"
           "\"" KOP_APP_PORT_NAME_ANNOTATION "\":\"http\"}},\"spec\":{\"port\":8080}}");
  b = conv(a, KOP_APP_V1BETA1);
  assert_json(b, "{\"apiVersion\":\"kcr.dev/v1beta1\",\"kind\":\"App\",\"metadata\":{},\"spec\":"
                 "{\"service\":{\"port\":8080,\"portName\":\"http\"}}}");
  json_decref(b);
  round_trip(a);
  json_decref(a);
  /* v1beta1 without a port name: no annotation appears. */
  a = load("{\"apiVersion\":\"kcr.dev/v1beta1\",\"kind\":\"App\",\"spec\":{\"service\":{\"port\":"
           "1}}}");
  b = conv(a, KOP_APP_V1ALPHA1);
  assert_json(b, "{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"spec\":{\"port\":1}}");
  json_decref(b);
  json_decref(a);
  /* Same version: a copy. */
  a = load(FULL_ALPHA);
  b = conv(a, KOP_APP_V1ALPHA1);
  assert_true(json_equal(a, b));
  json_decref(b);
  json_decref(a);
}

/*
 * What the conversion writes is an object of the other version's schema: the
 * generated types (kcr-gen, from the CRD) decode it and find no member they do
 * not know, both ways.
 */
static void test_app_webhook_convert_typed(void **state) {
  json_error_t je;
  json_t *a = json_load_file(KCR_TEST_DATA_DIR "/operator/app_full.json", 0, &je), *b, *back;
  app_v1beta1_t *beta = NULL;
  app_v1alpha1_t *alpha = NULL;
  kcr_error_t err;
  (void)state;
  assert_non_null(a);
  json_object_set_new(json_object_get(a, "metadata"), "annotations",
                      json_pack("{s:s}", KOP_APP_PORT_NAME_ANNOTATION, "web"));
  b = conv(a, KOP_APP_V1BETA1);
  kcr_error_clear(&err);
  if (app_v1beta1_decode(b, &beta, &err) != 0)
    fail_msg("v1beta1 decode: %s", err.message);
  assert_null(beta->kcr_unknown);
  assert_null(beta->spec->kcr_unknown);
  assert_int_equal(beta->spec->service->port, 8080);
  assert_string_equal(beta->spec->service->port_name, "web");
  back = conv(b, KOP_APP_V1ALPHA1);
  if (app_v1alpha1_decode(back, &alpha, &err) != 0)
    fail_msg("v1alpha1 decode: %s", err.message);
  assert_null(alpha->kcr_unknown);
  assert_null(alpha->spec->kcr_unknown);
  assert_true(alpha->spec->has_port);
  assert_int_equal(alpha->spec->port, 8080);
  app_v1alpha1_free(alpha);
  app_v1beta1_free(beta);
  json_decref(back);
  json_decref(b);
  json_decref(a);
}

static void test_app_webhook_convert_errors(void **state) {
  char msg[256];
  json_t *a = load("{\"apiVersion\":\"kcr.dev/v2\",\"kind\":\"App\"}"), *out = (json_t *)1;
  (void)state;
  assert_int_equal(kop_app_convert(a, KOP_APP_V1ALPHA1, &out, msg, sizeof(msg)), -1);
  assert_null(out);
  assert_string_equal(msg, "cannot convert from kcr.dev/v2: the App's versions are v1alpha1 and "
                           "v1beta1");
  json_decref(a);
  a = load(FULL_ALPHA);
  assert_int_equal(kop_app_convert(a, "kcr.dev/v1", &out, msg, sizeof(msg)), -1);
  assert_string_equal(msg, "cannot convert to kcr.dev/v1: the App's versions are v1alpha1 and "
                           "v1beta1");
  json_decref(a);
}

static void test_app_webhook_round_trip_examples(void **state) {
  const char *objs[] = {
      FULL_ALPHA,
      "{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\"}",
      "{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"spec\":{\"image\":\"x\"}}",
      /* the annotation without a port stays an annotation */
      "{\"apiVersion\":\"kcr.dev/"
      "v1alpha1\",\"kind\":\"App\",\"metadata\":{\"annotations\":{\"" KOP_APP_PORT_NAME_ANNOTATION
      "\":\"http\"}},\"spec\":{\"image\":\"x\"}}",
      "{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"metadata\":{\"annotations\":{}},"
      "\"spec\":{\"port\":443}}",
      "{\"apiVersion\":\"kcr.dev/"
      "v1beta1\",\"kind\":\"App\",\"metadata\":{\"name\":\"n\"},\"spec\":{"
      "\"image\":\"x\",\"service\":{\"port\":80,\"portName\":\"http\"},\"paused\":false},"
      "\"status\":{\"url\":\"u\"}}",
      "{\"apiVersion\":\"kcr.dev/v1beta1\",\"kind\":\"App\",\"metadata\":{\"annotations\":{\"k\":"
      "\"v\"}},\"spec\":{\"service\":{\"port\":80}}}",
      "{\"apiVersion\":\"kcr.dev/v1beta1\",\"kind\":\"App\",\"spec\":{\"future\":{\"x\":[1,2]}}}",
  };
  (void)state;
  for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
    json_t *o = load(objs[i]);
    round_trip(o);
    json_decref(o);
  }
}

/* gen builds a pseudo-random App of version v from seed: any subset of the
 * fields, each with a value of its type, plus unknown extras. */
static json_t *gen(unsigned *seed, int alpha) {
  json_t *o = json_pack("{s:s, s:s}", "apiVersion", alpha ? KOP_APP_V1ALPHA1 : KOP_APP_V1BETA1,
                        "kind", "App");
  json_t *md = json_object(), *spec = json_object(), *ann = json_object();
  int r = rand_r(seed);
  char buf[32];
  if (r & 1)
    json_object_set_new(md, "name", json_sprintf("app-%d", rand_r(seed) % 100));
  if (r & 2)
    json_object_set_new(ann, "team", json_string("a"));
  if (alpha && (r & 4))
    json_object_set_new(ann, KOP_APP_PORT_NAME_ANNOTATION, json_string("p"));
  if (json_object_size(ann) || (r & 8))
    json_object_set(md, "annotations", ann);
  json_decref(ann);
  if (json_object_size(md) || (r & 16))
    json_object_set(o, "metadata", md);
  json_decref(md);
  if (r & 32)
    json_object_set_new(spec, "image", json_string("img"));
  if (r & 64)
    json_object_set_new(spec, "replicas", json_integer(rand_r(seed) % 1001));
  if (r & 128) {
    if (alpha) {
      json_object_set_new(spec, "port", json_integer(1 + rand_r(seed) % 65535));
    } else {
      json_t *svc = json_pack("{s:i}", "port", 1 + rand_r(seed) % 65535);
      if (r & 256) {
        snprintf(buf, sizeof(buf), "p%d", rand_r(seed) % 1000);
        json_object_set_new(svc, "portName", json_string(buf));
      }
      json_object_set_new(spec, "service", svc);
    }
  }
  if (r & 512)
    json_object_set_new(spec, "env", json_pack("[{s:s, s:s}]", "name", "E", "value", "v"));
  if (r & 1024)
    json_object_set_new(spec, "config", json_pack("{s:s}", "f", "c"));
  if (r & 2048)
    json_object_set_new(spec, "paused", json_boolean(rand_r(seed) & 1));
  if (r & 4096)
    json_object_set_new(spec, "resources", json_pack("{s:{s:s}}", "limits", "cpu", "1"));
  if (json_object_size(spec) || (r & 8192))
    json_object_set(o, "spec", spec);
  json_decref(spec);
  if (r & 16384)
    json_object_set_new(
        o, "status", json_pack("{s:i, s:[{s:s}]}", "replicas", 1, "conditions", "type", "Paused"));
  return o;
}

static void test_app_webhook_round_trip_generated(void **state) {
  unsigned seed = 12;
  (void)state;
  for (int i = 0; i < 2000; i++) {
    json_t *o = gen(&seed, i & 1);
    round_trip(o);
    json_decref(o);
  }
}

/* ---- allocation failures ---- */

static json_t *oom_in, *oom_out, *oom_want;

static int convert_rc(const char *to) {
  char msg[256];
  if (kop_app_convert(oom_in, to, &oom_out, msg, sizeof(msg)) != 0) {
    assert_null(oom_out);
    return KCR_ENOMEM;
  }
  /* A success is the whole conversion, never a part of it. */
  return json_equal(oom_want, oom_out) ? 0 : KCR_EINVAL;
}

static int default_rc(void) {
  int n;
  oom_out = json_deep_copy(oom_in);
  if (!oom_out)
    return KCR_ENOMEM;
  n = kop_app_default(oom_out);
  if (n < 0)
    return KCR_ENOMEM;
  return n == 1 && json_equal(oom_want, oom_out) ? 0 : KCR_EINVAL;
}

static void test_app_webhook_alloc_failures(void **state) {
  (void)state;
  oom_in = load(FULL_ALPHA);
  oom_want = conv(oom_in, KOP_APP_V1BETA1);
  KCR_TEST_ALLOC_LOOP(convert_rc(KOP_APP_V1BETA1), (json_decref(oom_out), oom_out = NULL));
  json_decref(oom_in);
  oom_in = oom_want;
  oom_want = load(FULL_ALPHA);
  KCR_TEST_ALLOC_LOOP(convert_rc(KOP_APP_V1ALPHA1), (json_decref(oom_out), oom_out = NULL));
  json_decref(oom_in);
  json_decref(oom_want);
  oom_in = load(APP("{\"image\":\"x\"}"));
  oom_want = load(APP("{\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"10m\","
                      "\"memory\":\"64Mi\"}}}"));
  KCR_TEST_ALLOC_LOOP(default_rc(), (json_decref(oom_out), oom_out = NULL));
  json_decref(oom_in);
  json_decref(oom_want);
}

/* ---- the handlers, through their reviews ---- */

#define REVIEW(op, obj, old)                                                                       \
  "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"             \
  "\"uid\":\"u-1\",\"operation\":\"" op "\",\"name\":\"a\",\"namespace\":\"ns\",\"object\":" obj   \
  ",\"oldObject\":" old "}}"

/* handlers registers the App's webhooks on a server that is never started
 * and runs one review of path through the server's decoder. */
static json_t *run_review(const char *path, const char *body) {
  /* The handlers are file-local; reach them the way the server does: a real
   * server's table. kop_app_webhooks_register is the only way in. */
  kcr_webhook_server_options o = {0};
  kcr_webhook_server_t *ws = NULL;
  json_t *out = NULL;
  o.bind_address = "127.0.0.1:0";
  assert_int_equal(kcr_webhook_server_create(&o, &ws, NULL), 0);
  assert_int_equal(kop_app_webhooks_register(ws), 0);
  assert_int_equal(kop_app_webhooks_register(ws), KCR_EEXIST);
  out = kcr__webhook_server_review(ws, path, body, strlen(body));
  kcr_webhook_server_destroy(ws);
  assert_non_null(out);
  return out;
}

static void test_app_webhook_handlers(void **state) {
  json_t *out, *resp;
  (void)state;
  out = run_review(
      KOP_APP_VALIDATE_PATH,
      REVIEW("CREATE", APP("{\"image\":\"nginx\",\"config\":{\"..data\":\"\"}}"), "null"));
  resp = json_object_get(out, "response");
  assert_true(json_is_false(json_object_get(resp, "allowed")));
  assert_non_null(
      strstr(json_string_value(json_object_get(json_object_get(resp, "status"), "message")),
             "spec.config[\"..data\"]: not a valid file name"));
  assert_non_null(strstr(json_string_value(json_array_get(json_object_get(resp, "warnings"), 0)),
                         "has no tag"));
  json_decref(out);
  /* DELETE is always allowed. */
  out = run_review(KOP_APP_VALIDATE_PATH, REVIEW("DELETE", "null", APP("{}")));
  assert_true(json_is_true(json_object_get(json_object_get(out, "response"), "allowed")));
  json_decref(out);
  /* Defaulting answers a JSON Patch that adds the requests. */
  out = run_review(KOP_APP_MUTATE_PATH, REVIEW("CREATE", APP("{\"image\":\"x:1\"}"), "null"));
  resp = json_object_get(out, "response");
  assert_true(json_is_true(json_object_get(resp, "allowed")));
  assert_string_equal(json_string_value(json_object_get(resp, "patchType")), "JSONPatch");
  json_decref(out);
  out = run_review(KOP_APP_CONVERT_PATH,
                   "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
                   "\"request\":{\"uid\":\"c\",\"desiredAPIVersion\":\"kcr.dev/v1beta1\","
                   "\"objects\":[" FULL_ALPHA ",{\"apiVersion\":\"kcr.dev/v9\",\"kind\":\"App\","
                   "\"metadata\":{\"name\":\"z\"}}]}}");
  resp = json_object_get(out, "response");
  assert_string_equal(json_string_value(json_object_get(json_object_get(resp, "result"), "status")),
                      "Failure");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(resp, "result"), "message")),
      "converting App z from kcr.dev/v9 to kcr.dev/v1beta1: cannot convert from kcr.dev/v9: the "
      "App's versions are v1alpha1 and v1beta1");
  json_decref(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_app_webhook_valid),
      cmocka_unit_test(test_app_webhook_env_duplicates),
      cmocka_unit_test(test_app_webhook_config_keys),
      cmocka_unit_test(test_app_webhook_resources),
      cmocka_unit_test(test_app_webhook_port_name),
      cmocka_unit_test(test_app_webhook_paused_port),
      cmocka_unit_test(test_app_webhook_ratchet),
      cmocka_unit_test(test_app_webhook_many_problems),
      cmocka_unit_test(test_app_webhook_warning),
      cmocka_unit_test(test_app_webhook_default),
      cmocka_unit_test(test_app_webhook_convert_mapping),
      cmocka_unit_test(test_app_webhook_convert_errors),
      cmocka_unit_test(test_app_webhook_convert_typed),
      cmocka_unit_test(test_app_webhook_round_trip_examples),
      cmocka_unit_test(test_app_webhook_round_trip_generated),
      cmocka_unit_test(test_app_webhook_alloc_failures),
      cmocka_unit_test(test_app_webhook_handlers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
