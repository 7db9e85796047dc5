/* SPDX-License-Identifier: MIT */
/*
 * test_shard_manager_it.c: two managers as replicas of one shard ring
 * (kcr_manager_options.sharding, issue 27) against the real apiserver. Each
 * runs one controller on the ConfigMaps of NNS namespaces; every reconcile
 * records its replica, key and start and end on the monotonic clock and
 * takes 20 ms. Scenes:
 *  - a alone reconciles every ConfigMap;
 *  - b joins: once the ring has settled, each replica's cache holds only the
 *    ConfigMaps of its own namespaces (disjoint caches, together all), and a
 *    change to every ConfigMap is reconciled by its owner;
 *  - a stops gracefully: its Lease is gone when its run returns, b takes
 *    everything, and a change to every ConfigMap is reconciled by b.
 * A checker over all the records finds no key reconciled by the two
 * replicas in overlapping intervals.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
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
#include "kcr/cache.h"
#include "kcr/client.h"
#include "kcr/manager.h"
#include "kcr/metrics.h"
#include "kcr/shard_member.h"
#include "kcr/sharding.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

#define NNS 6
#define PER_NS 5
#define NKEYS ((size_t)NNS * PER_NS)

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvr namespaces = {"", "v1", "namespaces"};
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[NNS][64];
static const char *nsv[NNS];

static int whos[2] = {0, 1};

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  int64_t start = kcr_it_mono();
  (void)ctx;
  (void)res;
  kcr_it_sleep_ms(20); /* long enough for an overlap to show */
  kcr_it_record_add(*(const int *)data, req->ns, req->name, start, false);
  return 0;
}

static char selector[64]; /* kcr-shmgr-run=<pid>: this run's namespaces */

static kcr_manager_t *replica(const char *ring, int who, const char *id) {
  kcr_manager_options mo = {0};
  kcr_controller_options co = {0};
  kcr_controller_t *c = NULL;
  kcr_manager_t *m = NULL;
  kcr_error_t err = {0};
  mo.config = config;
  mo.default_namespaces = nsv;
  mo.default_namespaces_len = NNS;
  mo.no_signal_handlers = true;
  mo.sharding.ring = ring;
  mo.sharding.lease_namespace = ns[0];
  mo.sharding.identity = id;
  mo.sharding.lease_duration_ns = 4 * KCR_NSEC_PER_SEC;
  mo.sharding.renew_deadline_ns = 3 * KCR_NSEC_PER_SEC;
  mo.sharding.retry_period_ns = 250 * KCR_NSEC_PER_MSEC;
  mo.sharding.namespace_selector = selector; /* the test's namespaces, split 3 and 3 */
  if (kcr_manager_create(&mo, &m, &err) != 0)
    fail_msg("manager %s: %s", id, err.message);
  co.name = who ? "shard-b" : "shard-a";
  co.reconcile = reconcile;
  co.data = &whos[who];
  co.max_concurrent_reconciles = 2;
  if (kcr_manager_add_controller(m, &co, &c, &err) != 0 ||
      kcr_controller_for(c, &cm_gvk, NULL, &err) != 0)
    fail_msg("controller %s: %s", id, err.message);
  return m;
}

/* cached_in_share: whether m's ConfigMap cache holds exactly the ConfigMaps
 * of the namespaces in its effective set; *held gets how many it holds. */
static bool cached_in_share(kcr_manager_t *m, size_t *held) {
  kcr_shard_set_t *s = NULL;
  size_t want = 0, have = 0;
  bool ok = true;
  if (kcr_shard_member_effective(kcr_manager_shard_member(m), &s, NULL) != 0)
    return false;
  for (int k = 0; k < NNS && ok; k++) {
    kcr_list_options lo = {0};
    json_t *list = NULL;
    size_t n;
    bool mine = kcr_shard_set_contains(s, kcr_shard_hash(ns[k], strlen(ns[k])));
    lo.ns = ns[k];
    if (kcr_cache_list(kcr_manager_cache(m), &cm_gvk, &lo, &list, NULL) != 0) {
      ok = false;
      break;
    }
    n = json_array_size(json_object_get(list, "items"));
    json_decref(list);
    want += mine ? PER_NS : 0;
    if (!mine && n > 0)
      ok = false;
    have += n;
  }
  kcr_shard_set_destroy(s);
  *held = have;
  return ok && have == want;
}

static void touch_all(const char *value) {
  for (int k = 0; k < NNS; k++)
    for (int i = 0; i < PER_NS; i++) {
      char name[32], patch[96];
      kcr_error_t err = {0};
      snprintf(name, sizeof(name), "cm-%d", i);
      snprintf(patch, sizeof(patch), "{\"data\":{\"v\":\"%s\"}}", value);
      if (kcr_client_patch(client, &configmaps, ns[k], name, KCR_PATCH_MERGE, patch, strlen(patch),
                           NULL, NULL, &err) != 0)
        fail_msg("patch %s/%s: %s", ns[k], name, err.message);
    }
}

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0)
    return -1;
  for (int k = 0; k < NNS; k++) {
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "kcr-shmgr%d", k);
    if (kcr_it_create_namespace(client, prefix, ns[k], sizeof(ns[k])) != 0)
      return -1;
    nsv[k] = ns[k];
    {
      kcr_error_t err = {0};
      char patch[128];
      snprintf(selector, sizeof(selector), "kcr-shmgr-run=%d", (int)getpid());
      snprintf(patch, sizeof(patch), "{\"metadata\":{\"labels\":{\"kcr-shmgr-run\":\"%d\"}}}",
               (int)getpid());
      if (kcr_client_patch(client, &namespaces, NULL, ns[k], KCR_PATCH_MERGE, patch, strlen(patch),
                           NULL, NULL, &err) != 0) {
        fprintf(stderr, "label %s: %s\n", ns[k], err.message);
        return -1;
      }
    }
    for (int i = 0; i < PER_NS; i++) {
      kcr_error_t err = {0};
      json_t *o =
          json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                    "metadata", "name", "", "namespace", ns[k], "data", "v", "0");
      char name[32];
      snprintf(name, sizeof(name), "cm-%d", i);
      json_object_set_new(json_object_get(o, "metadata"), "name", json_string(name));
      if (kcr_client_create_object(client, &configmaps, ns[k], o, NULL, NULL, &err) != 0) {
        fprintf(stderr, "create: %s\n", err.message);
        json_decref(o);
        return -1;
      }
      json_decref(o);
    }
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  for (int k = 1; k < NNS; k++)
    if (ns[k][0])
      kcr_client_delete(client, &namespaces, NULL, ns[k], NULL, NULL, NULL);
  kcr_it_disconnect(env, config, client, ns[0][0] ? ns[0] : NULL);
  return 0;
}

static void test_shard_manager_it(void **state) {
  kcr_it_runner ra = {0}, rb = {0};
  char ring[32];
  size_t held_a = 0, held_b = 0;
  int64_t t;
  bool settled = false;
  (void)state;
  snprintf(ring, sizeof(ring), "mgr-%d", (int)getpid());

  /* a alone: every ConfigMap */
  t = kcr_it_mono();
  ra.m = replica(ring, 0, "shard-mgr-a");
  assert_int_equal(kcr_it_runner_start(&ra), 0);
  assert_true(kcr_it_wait_reconciled_since(t, (int)NKEYS));

  /* b joins: the ring settles with disjoint caches that cover everything */
  rb.m = replica(ring, 1, "shard-mgr-b");
  assert_int_equal(kcr_it_runner_start(&rb), 0);
  for (int i = 0; i < 600 && !settled; i++) {
    double sa = kcr_it_shard_share(ra.m), sb = kcr_it_shard_share(rb.m);
    settled = sa > 0 && sb > 0 && sa + sb > 0.999999 && cached_in_share(ra.m, &held_a) &&
              cached_in_share(rb.m, &held_b) && held_a + held_b == NKEYS;
    if (!settled)
      kcr_it_sleep_ms(50);
  }
  print_message("two replicas: shares %.3f and %.3f, caches %zu and %zu of %zu ConfigMaps\n",
                kcr_it_shard_share(ra.m), kcr_it_shard_share(rb.m), held_a, held_b, NKEYS);
  assert_true(settled);
  /* the balanced split counts only the selected namespaces: three each */
  assert_int_equal(held_a, NKEYS / 2);
  assert_int_equal(held_b, NKEYS / 2);
  {
    /* and the metric says so: three namespaces each, while the share of the
     * hash space is whatever their hashes make it */
    kcr_metric_t *keys_a = kcr_metrics_find(kcr_manager_metrics(ra.m), "kcr_shard_owned_keys");
    kcr_metric_t *keys_b = kcr_metrics_find(kcr_manager_metrics(rb.m), "kcr_shard_owned_keys");
    assert_non_null(keys_a);
    assert_non_null(keys_b);
    assert_true(kcr_metric_value(kcr_metric_withv(keys_a, ring, NULL)) == NNS / 2.0);
    assert_true(kcr_metric_value(kcr_metric_withv(keys_b, ring, NULL)) == NNS / 2.0);
  }
  t = kcr_it_mono();
  touch_all("1");
  assert_true(kcr_it_wait_reconciled_since(t, (int)NKEYS));

  /* a stops gracefully: b takes everything, without a lease's wait */
  {
    static const kcr_gvr leases = {"coordination.k8s.io", "v1", "leases"};
    char lease[128];
    kcr_error_t err = {0};
    int64_t t0 = kcr_it_mono();
    double took;
    snprintf(lease, sizeof(lease), "%s",
             kcr_shard_member_lease_name(kcr_manager_shard_member(ra.m)));
    assert_int_equal(kcr_it_runner_stop(&ra), 0);
    /* handed over, not left to expire: a's Lease is gone when run returns */
    assert_int_equal(kcr_client_get(client, &leases, ns[0], lease, NULL, NULL, &err), KCR_EAPI);
    assert_true(kcr_error_is_not_found(&err));
    for (int i = 0; i < 600 && kcr_it_shard_share(rb.m) < 0.999999; i++)
      kcr_it_sleep_ms(20);
    took = (double)(kcr_it_mono() - t0) / 1e9;
    print_message("a stopped: b owns everything %.3f s after the stop began\n", took);
    assert_true(kcr_it_shard_share(rb.m) > 0.999999);
  }
  /* a's member has stopped: its fence is shut, so its object client writes
   * nothing (a replica resumed past its renew deadline is in the same state);
   * b's writes go out */
  {
    kcr_error_t err = {0};
    static const char patch[] = "{\"metadata\":{\"labels\":{\"fenced\":\"no\"}}}";
    json_t *target = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                               "metadata", "name", "cm-0", "namespace", ns[0]);
    assert_non_null(target);
    assert_true(kcr_shard_member_fence_remaining(kcr_manager_shard_member(ra.m)) <= 0);
    assert_int_equal(kcr_objclient_patch(kcr_manager_client(ra.m), target, KCR_PATCH_MERGE, patch,
                                         strlen(patch), NULL, NULL, &err),
                     KCR_ECANCELED);
    assert_non_null(strstr(err.message, "shard member"));
    kcr_error_clear(&err);
    assert_int_equal(kcr_objclient_patch(kcr_manager_client(rb.m), target, KCR_PATCH_MERGE, patch,
                                         strlen(patch), NULL, NULL, &err),
                     0);
    json_decref(target);
  }
  t = kcr_it_mono();
  touch_all("2");
  assert_true(kcr_it_wait_reconciled_since(t, (int)NKEYS));
  assert_true(cached_in_share(rb.m, &held_b));
  assert_int_equal(held_b, NKEYS);
  {
    char key[96];
    if (kcr_it_record_overlap(key, sizeof(key)))
      fail_msg("%s reconciled by both replicas at once", key);
  }
  assert_int_equal(kcr_it_runner_stop(&rb), 0);
  kcr_manager_destroy(rb.m);
  kcr_manager_destroy(ra.m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shard_manager_it),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
