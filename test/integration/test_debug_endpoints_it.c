/* SPDX-License-Identifier: MIT */
/*
 * test_debug_endpoints_it.c: the probes server's /debug/informers and
 * /debug/heap (kcr_manager_serving_options.debug_endpoints) against a real
 * apiserver, on a cluster of its own (--watch-cache=false, so that a watch
 * from a compacted version reaches etcd and gets its 410):
 *   - off by default: 404;
 *   - /debug/informers shows the manager's ConfigMap informer; a scripted 410
 *     (the manager cut off by a fault proxy while ConfigMaps change, etcd
 *     compacted, the proxy let through again) shows up there as a relist
 *     counted with its reason ("gone"), and the seen and processed resource
 *     versions move past the compaction;
 *   - /debug/heap is glibc's malloc_info XML.
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/kcr.h"
#include "kcr_faultproxy.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static kcr_testenv_t *env;
static kcr_rest_config_t *direct_cfg, *proxied_cfg;
static kcr_client_t *direct;
static kcr_faultproxy_t *proxy;

typedef struct runner {
  kcr_manager_t *m;
  int rc;
  kcr_error_t err;
} runner_t;

static void *run_main(void *arg) {
  runner_t *r = arg;
  kcr_error_clear(&r->err);
  r->rc = kcr_manager_run(r->m, &r->err);
  return NULL;
}

static int group_setup(void **state) {
  kcr_client_options o;
  char path[512];
  (void)state;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  unsetenv("KCR_TEST_KUBECONFIG"); /* faults must not disturb the shared cluster */
  setenv("KCR_APISERVER_ARGS", "--watch-cache=false", 1);
  if (kcr_testenv_start(&env) != 0)
    return -1;
  if (kcr_faultproxy_start("127.0.0.1", kcr_testenv_apiserver_port(env), &proxy) != 0 ||
      kcr_testenv_write_kubeconfig_for_port(env, kcr_faultproxy_port(proxy), path, sizeof(path)) !=
          0)
    return -1;
  if (kcr_rest_config_from_kubeconfig(kcr_testenv_kubeconfig(env), NULL, NULL, &direct_cfg, NULL) !=
          0 ||
      kcr_rest_config_from_kubeconfig(path, NULL, NULL, &proxied_cfg, NULL) != 0)
    return -1;
  memset(&o, 0, sizeof(o));
  o.config = direct_cfg;
  return kcr_client_create(&o, &direct, NULL);
}

static int group_teardown(void **state) {
  (void)state;
  kcr_client_destroy(direct);
  kcr_rest_config_unref(proxied_cfg);
  kcr_rest_config_unref(direct_cfg);
  kcr_faultproxy_stop(proxy);
  kcr_testenv_stop(env);
  curl_global_cleanup();
  return 0;
}

static void put_cm(const char *name, const char *value) {
  json_t *cm = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                         "metadata", "name", name, "data", "v", value);
  kcr_request_options o;
  kcr_error_t err;
  memset(&o, 0, sizeof(o));
  o.field_manager = "debug-test";
  o.force = 1;
  kcr_error_clear(&err);
  if (kcr_client_apply(direct, &configmaps, "default", cm, &o, NULL, &err) != 0)
    fail_msg("apply %s: %s", name, err.message);
  json_decref(cm);
}

/* configmap_informer returns the ConfigMap entry of /debug/informers (new), or NULL. */
static json_t *configmap_informer(int port) {
  kcr_buf_t body;
  json_t *arr, *e, *found = NULL;
  size_t i;
  kcr_buf_init(&body, 4 << 20);
  if (kcr_it_http_get(port, "/debug/informers", &body) != 200) {
    kcr_buf_free(&body);
    return NULL;
  }
  arr = json_loads(kcr_buf_cstr(&body), 0, NULL);
  kcr_buf_free(&body);
  json_array_foreach(arr, i, e) {
    if (strcmp(json_string_value(json_object_get(e, "kind")), "ConfigMap") == 0)
      found = json_incref(e);
  }
  json_decref(arr);
  return found;
}

static json_int_t relists(json_t *e, const char *reason) {
  return json_integer_value(json_object_get(json_object_get(e, "relists"), reason));
}

static unsigned long long rv(json_t *e, const char *key) {
  const char *s = json_string_value(json_object_get(e, key));
  return s ? strtoull(s, NULL, 10) : 0;
}

static runner_t *start_manager(bool debug, pthread_t *th) {
  runner_t *r = calloc(1, sizeof(*r));
  kcr_manager_options mo;
  kcr_manager_serving_options so;
  memset(&mo, 0, sizeof(mo));
  mo.config = proxied_cfg;
  mo.no_signal_handlers = true;
  mo.default_namespace = "default";
  assert_int_equal(kcr_manager_create(&mo, &r->m, NULL), 0);
  memset(&so, 0, sizeof(so));
  so.health_probe_bind_address = "127.0.0.1:0";
  so.debug_endpoints = debug;
  assert_int_equal(kcr_manager_serve(r->m, &so, NULL), 0);
  pthread_create(th, NULL, run_main, r);
  for (int i = 0; i < 300 && kcr_manager_probe_port(r->m) == 0; i++)
    kcr_it_sleep_ms(100);
  assert_int_not_equal(kcr_manager_probe_port(r->m), 0);
  return r;
}

static void stop_manager(runner_t *r, pthread_t th) {
  kcr_manager_request_stop(r->m);
  pthread_join(th, NULL);
  assert_int_equal(r->rc, 0);
  kcr_manager_destroy(r->m);
  free(r);
}

static void test_debug_endpoints_off_by_default(void **state) {
  pthread_t th;
  runner_t *r = start_manager(false, &th);
  kcr_buf_t body;
  (void)state;
  kcr_buf_init(&body, 1 << 20);
  assert_int_equal(kcr_it_http_get(kcr_manager_probe_port(r->m), "/debug/informers", &body), 404);
  assert_int_equal(kcr_it_http_get(kcr_manager_probe_port(r->m), "/debug/heap", &body), 404);
  assert_int_equal(kcr_it_http_get(kcr_manager_probe_port(r->m), "/healthz", &body), 200);
  kcr_buf_free(&body);
  stop_manager(r, th);
}

static void test_debug_informers_show_a_relist_after_410(void **state) {
  const kcr_gvk cm = {"", "v1", "ConfigMap"};
  pthread_t th;
  runner_t *r = start_manager(true, &th);
  int port = kcr_manager_probe_port(r->m);
  json_t *list = NULL, *e = NULL;
  unsigned long long seen_before;
  char rev[64];
  kcr_buf_t body;
  (void)state;
  put_cm("debug-a", "0");
  /* a read through the manager's client makes (and syncs) its informer */
  assert_int_equal(kcr_objclient_list(kcr_manager_client(r->m), &cm, NULL, &list, NULL), 0);
  json_decref(list);
  e = configmap_informer(port);
  assert_non_null(e);
  assert_true(json_is_true(json_object_get(e, "synced")));
  assert_int_equal(relists(e, "gone"), 0);
  seen_before = rv(e, "lastSeenResourceVersion");
  json_decref(e);

  /* Cut the manager off, change things, compact them away, let it back. */
  kcr_faultproxy_refuse(proxy, true);
  kcr_faultproxy_cut(proxy);
  for (int i = 1; i <= 20; i++) {
    char v[16];
    snprintf(v, sizeof(v), "%d", i);
    put_cm("debug-a", v);
  }
  assert_int_equal(kcr_testenv_compact(env, rev, sizeof(rev)), 0);
  kcr_faultproxy_refuse(proxy, false);
  e = NULL;
  for (int i = 0; i < 900; i++) {
    json_decref(e);
    e = configmap_informer(port);
    if (e && relists(e, "gone") >= 1 &&
        rv(e, "lastProcessedResourceVersion") >= strtoull(rev, NULL, 10))
      break;
    kcr_it_sleep_ms(100);
  }
  assert_non_null(e);
  {
    char *text = json_dumps(json_object_get(e, "relists"), JSON_COMPACT);
    printf("after the 410: relists %s, lists %lld, lastSeen %llu (was %llu), compacted at %s\n",
           text ? text : "?", (long long)json_integer_value(json_object_get(e, "lists")),
           rv(e, "lastSeenResourceVersion"), seen_before, rev);
    free(text);
  }
  assert_true(relists(e, "gone") >= 1);
  assert_true(rv(e, "lastProcessedResourceVersion") >= strtoull(rev, NULL, 10));
  /* the new watch's events move the seen version past the compaction */
  put_cm("debug-b", "after");
  for (int i = 0; i < 300 && rv(e, "lastSeenResourceVersion") <= strtoull(rev, NULL, 10); i++) {
    json_decref(e);
    e = configmap_informer(port);
    assert_non_null(e);
    kcr_it_sleep_ms(100);
  }
  printf("then lastSeen %llu, lastProcessed %llu, secondsSinceLastEvent %.3f\n",
         rv(e, "lastSeenResourceVersion"), rv(e, "lastProcessedResourceVersion"),
         json_number_value(json_object_get(e, "secondsSinceLastEvent")));
  assert_true(rv(e, "lastSeenResourceVersion") > strtoull(rev, NULL, 10));
  assert_true(rv(e, "lastSeenResourceVersion") > seen_before);
  json_decref(e);

  kcr_buf_init(&body, 4 << 20);
  assert_int_equal(kcr_it_http_get(port, "/debug/heap", &body), 200);
  assert_non_null(strstr(kcr_buf_cstr(&body), "<malloc version="));
  assert_int_equal(kcr_it_http_get(port, "/debug/other", &body), 404);
  kcr_buf_free(&body);
  stop_manager(r, th);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_debug_endpoints_off_by_default),
      cmocka_unit_test(test_debug_informers_show_a_relist_after_410),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
