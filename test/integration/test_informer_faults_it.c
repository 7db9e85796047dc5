/* SPDX-License-Identifier: MIT */
/*
 * test_informer_faults_it.c: the informer through real faults, on a cluster of
 * its own (kube-apiserver with --watch-cache=false, so that a watch from a
 * compacted version reaches etcd and gets its 410):
 *   - a stalled connection (a proxy that stops forwarding) is detected by the
 *     watch's idle timeout and recovered once bytes flow again;
 *   - connections cut and refused while objects change and etcd is compacted:
 *     the re-watch gets 410, the informer relists and converges;
 *   - kube-apiserver restarted mid-watch: the informer re-watches and converges.
 * Convergence always means: the cache equals a fresh LIST (keys and versions).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdbool.h>
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

#include "kcr/apierror.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/informer.h"
#include "kcr/meta.h"
#include "kcr_faultproxy.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};

static kcr_it_proxied it; /* a cluster of the test's own behind a fault proxy */
static kcr_testenv_t *env;
static kcr_client_t *direct, *proxied;
static kcr_faultproxy_t *proxy;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_proxied_start(&it) != 0)
    return -1;
  env = it.env;
  proxy = it.proxy;
  direct = it.direct;
  proxied = it.proxied;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_proxied_stop(&it);
  return 0;
}

static void put_cm(const char *name, const char *value) {
  json_t *cm =
      json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                "metadata", "name", name, "labels", "faults", "yes", "data", "v", value);
  kcr_error_t err;
  kcr_request_options o;
  memset(&o, 0, sizeof(o));
  o.field_manager = "faults-test";
  o.force = 1;
  kcr_error_clear(&err);
  if (kcr_client_apply(direct, &configmaps, "default", cm, &o, NULL, &err) != 0)
    fail_msg("apply %s: %s", name, err.message);
  json_decref(cm);
}

static void del_cm(const char *name) {
  if (kcr_it_delete(direct, &configmaps, "default", name) != 0)
    fail_msg("delete %s", name);
}

/* converged: the cache equals a fresh LIST of the labelled ConfigMaps. */
static int converged(kcr_informer_t *inf) {
  return kcr_it_store_equals_list(direct, kcr_informer_store(inf), &configmaps, "default",
                                  "faults=yes");
}

#define WAIT_FOR(cond, seconds, what)                                                              \
  do {                                                                                             \
    int ok_ = 0;                                                                                   \
    for (int i_ = 0; i_ < (seconds)*10 && !(ok_ = (cond)); i_++)                                   \
      sleep_ms(100);                                                                               \
    if (!ok_)                                                                                      \
      fail_msg("timed out waiting for %s", what);                                                  \
  } while (0)

static kcr_informer_t *start_informer_with(kcr_client_t *c, int64_t idle_ns, bool streaming) {
  kcr_informer_options o;
  kcr_informer_t *inf;
  kcr_error_t err;
  memset(&o, 0, sizeof(o));
  o.client = c;
  o.resource = configmaps;
  o.kind = "ConfigMap";
  o.ns = "default";
  o.label_selector = "faults=yes";
  o.watch_idle_timeout_ns = idle_ns;
  o.streaming_list = streaming;
  kcr_error_clear(&err);
  if (kcr_informer_create(&o, &inf, &err) != 0 || kcr_informer_start(inf, &err) != 0 ||
      kcr_informer_wait_for_sync(inf, 60 * KCR_NSEC_PER_SEC, &err) != 0)
    fail_msg("informer: %s", err.message);
  return inf;
}

static kcr_informer_t *start_informer(kcr_client_t *c, int64_t idle_ns) {
  return start_informer_with(c, idle_ns, false);
}

static uint64_t watch_errors(kcr_informer_t *inf) {
  kcr_informer_stats st;
  kcr_informer_get_stats(inf, &st);
  return st.watch_errors;
}

static uint64_t lists(kcr_informer_t *inf) {
  kcr_informer_stats st;
  kcr_informer_get_stats(inf, &st);
  return st.lists;
}

static void test_informer_stalled_connection_is_detected_and_recovered(void **state) {
  kcr_informer_t *inf;
  uint64_t errors;
  (void)state;
  put_cm("stall-a", "1");
  inf = start_informer(proxied, 2 * KCR_NSEC_PER_SEC);
  WAIT_FOR(converged(inf), 30, "the first sync");
  errors = watch_errors(inf);
  kcr_faultproxy_stall(proxy, true);
  /* No byte for 2 s: the watch is declared dead (the connection stays open). */
  WAIT_FOR(watch_errors(inf) > errors, 20, "the stalled watch to be declared dead");
  put_cm("stall-b", "2");
  kcr_faultproxy_stall(proxy, false);
  WAIT_FOR(converged(inf), 60, "convergence after the stall");
  kcr_informer_destroy(inf);
}

/* stored_rv: the cached version of key, copied into rv ("" when absent). */
static void stored_rv(kcr_informer_t *inf, const char *key, char *rv, size_t size) {
  json_t *o = NULL;
  rv[0] = '\0';
  if (kcr_store_get_by_key(kcr_informer_store(inf), key, &o) == 0)
    snprintf(rv, size, "%s", kcr_meta_resource_version(o));
  json_decref(o);
}

/*
 * relist_after_gone: objects change, one goes and one comes while the informer
 * is off the network and etcd compacts; the re-watch gets 410 and the relist
 * (paged, or streamed) converges. The objects the relist brings back at the
 * version already cached are kept as cached (relist_reused): gone-keep, which
 * nothing changed, at least.
 */
static void relist_after_gone(bool streaming) {
  kcr_informer_t *inf;
  kcr_informer_stats st;
  uint64_t before;
  char rev[64], kept[32], now[32];
  put_cm("gone-a", "1");
  put_cm("gone-b", "1");
  put_cm("gone-keep", "1");
  inf = start_informer_with(proxied, 0, streaming);
  WAIT_FOR(converged(inf), 30, "the first sync");
  before = lists(inf);
  stored_rv(inf, "default/gone-keep", kept, sizeof(kept));
  assert_true(kept[0] != '\0');
  /* Take the informer off the network, change things, compact them away. */
  kcr_faultproxy_refuse(proxy, true);
  kcr_faultproxy_cut(proxy);
  for (int i = 0; i < 20; i++) {
    char v[16];
    snprintf(v, sizeof(v), "%d", i);
    put_cm("gone-a", v);
  }
  del_cm("gone-b");
  put_cm("gone-c", "new");
  assert_int_equal(kcr_testenv_compact(env, rev, sizeof(rev)), 0);
  kcr_faultproxy_refuse(proxy, false);
  /* The re-watch from the old version gets 410: relist, then converge. */
  WAIT_FOR(lists(inf) > before, 90, "a relist after 410");
  WAIT_FOR(converged(inf), 60, "convergence after the relist");
  {
    json_t *gone = NULL;
    assert_int_not_equal(kcr_store_get_by_key(kcr_informer_store(inf), "default/gone-b", &gone), 0);
  }
  stored_rv(inf, "default/gone-keep", now, sizeof(now));
  assert_string_equal(now, kept);
  kcr_informer_get_stats(inf, &st);
  assert_true(st.relist_reused >= 1);
  if (streaming)
    assert_true(st.streamed_lists >= 2);
  kcr_informer_destroy(inf);
  del_cm("gone-a");
  del_cm("gone-c");
}

static void test_informer_relists_after_compaction_gone(void **state) {
  (void)state;
  relist_after_gone(false);
}

static void test_informer_streamed_relist_after_compaction_gone(void **state) {
  (void)state;
  relist_after_gone(true);
}

static void test_informer_survives_apiserver_restart(void **state) {
  kcr_informer_t *inf;
  uint64_t errors;
  (void)state;
  put_cm("restart-a", "1");
  inf = start_informer(direct, 0); /* default idle timeout: only the restart ends the watch */
  WAIT_FOR(converged(inf), 30, "the first sync");
  errors = watch_errors(inf);
  assert_int_equal(kcr_testenv_restart_apiserver(env), 0);
  put_cm("restart-b", "after");
  WAIT_FOR(watch_errors(inf) > errors, 30, "the watch to notice the restart");
  WAIT_FOR(converged(inf), 60, "convergence after the restart");
  kcr_informer_destroy(inf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_informer_stalled_connection_is_detected_and_recovered),
      cmocka_unit_test(test_informer_relists_after_compaction_gone),
      cmocka_unit_test(test_informer_streamed_relist_after_compaction_gone),
      cmocka_unit_test(test_informer_survives_apiserver_restart),
  };
  return cmocka_run_group_tests_name("informer_faults_it", tests, group_setup, group_teardown);
}
