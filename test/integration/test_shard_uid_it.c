/* SPDX-License-Identifier: MIT */
/*
 * test_shard_uid_it.c: two managers as replicas of one shard ring on the uid
 * key (kcr_manager_sharding.key, issue 27), for a workload in one namespace,
 * against the real apiserver. The controller takes ConfigMaps (owner-N) as
 * For and owns Secrets (child-N, each with a controller reference to its
 * owner); every reconcile records its replica, key, start and end on the
 * monotonic clock, and whether its replica's cache held the owner's child.
 * Scenes:
 *  - a alone reconciles every owner;
 *  - b joins: once the ring has settled, each replica's ConfigMap cache holds
 *    exactly the owners whose uid hashes into its set, and its Secret cache
 *    exactly those owners' children (the server cannot shard Secrets on their
 *    owner's uid: the informer takes every one and keeps its own), together
 *    all of both; a change to every child is reconciled by its owner's
 *    replica, which finds the child in its cache;
 *  - a stops gracefully: b takes everything.
 * A checker over all the records finds no key reconciled by the two replicas
 * in overlapping intervals. It prints what the client-side filter dropped.
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
#include "kcr/shard_member.h"
#include "kcr/sharding.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

#define NOWN 40

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvr secrets = {"", "v1", "secrets"};
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};
static const kcr_gvk secret_gvk = {"", "v1", "Secret"};
static const kcr_gvk sa_gvk = {"", "v1", "ServiceAccount"};

/* map_nothing: a mapped watch, which makes its kind's informer whole. */
static void map_nothing(const json_t *obj, kcr_requests_t *reqs, void *data) {
  (void)obj;
  (void)reqs;
  (void)data;
}

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];
static char owner_uid[NOWN][64];

static kcr_manager_t *managers[2];
static int whos[2] = {0, 1};

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  int who = *(const int *)data;
  int64_t start = kcr_it_mono();
  char child[64];
  json_t *obj = NULL;
  bool cached;
  (void)ctx;
  (void)res;
  /* owner-N's child is child-N */
  snprintf(child, sizeof(child), "child-%s", req->name + strlen("owner-"));
  cached =
      kcr_cache_get(kcr_manager_cache(managers[who]), &secret_gvk, req->ns, child, &obj, NULL) == 0;
  json_decref(obj);
  kcr_it_sleep_ms(20); /* long enough for an overlap to show */
  kcr_it_record_add(who, req->ns, req->name, start, cached);
  return 0;
}

static kcr_manager_t *replica(const char *ring, int who, const char *id) {
  const char *nsv[1] = {ns};
  kcr_manager_options mo = {0};
  kcr_controller_options co = {0};
  kcr_controller_t *c = NULL;
  kcr_manager_t *m = NULL;
  kcr_error_t err = {0};
  mo.config = config;
  mo.default_namespaces = nsv;
  mo.default_namespaces_len = 1;
  mo.no_signal_handlers = true;
  mo.sharding.ring = ring;
  mo.sharding.lease_namespace = ns;
  mo.sharding.identity = id;
  mo.sharding.key = KCR_SHARD_KEY_UID;
  mo.sharding.lease_duration_ns = 4 * KCR_NSEC_PER_SEC;
  mo.sharding.renew_deadline_ns = 3 * KCR_NSEC_PER_SEC;
  mo.sharding.retry_period_ns = 250 * KCR_NSEC_PER_MSEC;
  if (kcr_manager_create(&mo, &m, &err) != 0)
    fail_msg("manager %s: %s", id, err.message);
  co.name = who ? "uid-b" : "uid-a";
  co.reconcile = reconcile;
  co.data = &whos[who];
  co.max_concurrent_reconciles = 2;
  if (kcr_manager_add_controller(m, &co, &c, &err) != 0 ||
      kcr_controller_for(c, &cm_gvk, NULL, &err) != 0 ||
      kcr_controller_owns(c, &secret_gvk, NULL, &err) != 0 ||
      kcr_controller_watches(c, &sa_gvk, map_nothing, NULL, NULL, &err) != 0)
    fail_msg("controller %s: %s", id, err.message);
  managers[who] = m;
  return m;
}

/* owner_of: which replica's effective set holds owner i's uid (-1: neither,
 * 2: both); m[] may hold NULL for a stopped replica. */
static int owner_of(int i) {
  uint64_t h = kcr_shard_hash(owner_uid[i], strlen(owner_uid[i]));
  int who = -1;
  for (int k = 0; k < 2; k++) {
    kcr_shard_set_t *s = NULL;
    if (!managers[k] ||
        kcr_shard_member_effective(kcr_manager_shard_member(managers[k]), &s, NULL) != 0)
      continue;
    if (kcr_shard_set_contains(s, h))
      who = who < 0 ? k : 2;
    kcr_shard_set_destroy(s);
  }
  return who;
}

/* cached_as_owned: whether m's caches hold exactly the owners whose uid
 * hashes into its effective set and exactly their children; *owners and
 * *children get how many it holds. */
static bool cached_as_owned(int who, size_t *owners, size_t *children) {
  kcr_manager_t *m = managers[who];
  size_t want = 0;
  bool ok = true;
  *owners = *children = 0;
  for (int i = 0; i < NOWN && ok; i++) {
    char name[32];
    json_t *obj = NULL;
    bool mine = owner_of(i) == who, has_owner, has_child;
    snprintf(name, sizeof(name), "owner-%d", i);
    has_owner = kcr_cache_get(kcr_manager_cache(m), &cm_gvk, ns, name, &obj, NULL) == 0;
    json_decref(obj);
    obj = NULL;
    snprintf(name, sizeof(name), "child-%d", i);
    has_child = kcr_cache_get(kcr_manager_cache(m), &secret_gvk, ns, name, &obj, NULL) == 0;
    json_decref(obj);
    ok = has_owner == mine && has_child == mine;
    want += mine;
    *owners += has_owner;
    *children += has_child;
  }
  return ok && *owners == want && *children == want;
}

/* filtered: what m's Secret informer dropped on the client so far. */
static uint64_t filtered(kcr_manager_t *m, bool *client_side) {
  json_t *d = kcr_cache_diagnostics(kcr_manager_cache(m)), *e;
  uint64_t n = 0;
  size_t i;
  *client_side = false;
  json_array_foreach(d, i, e) {
    const char *kind = json_string_value(json_object_get(e, "kind"));
    if (kind && strcmp(kind, "Secret") == 0) {
      const char *v = json_string_value(json_object_get(e, "shardFiltered"));
      json_t *f = json_object_get(e, "shardFiltered");
      n = v ? strtoull(v, NULL, 10) : (uint64_t)json_integer_value(f);
      *client_side = json_is_true(json_object_get(e, "shardClientSide"));
    }
  }
  json_decref(d);
  return n;
}

/* check_kinds: the For kind sharded on the server, the owned kind on the
 * client, the mapped kind whole (no selector at all). */
static void check_kinds(kcr_manager_t *m) {
  json_t *d = kcr_cache_diagnostics(kcr_manager_cache(m)), *e;
  int seen = 0;
  size_t i;
  json_array_foreach(d, i, e) {
    const char *kind = json_string_value(json_object_get(e, "kind"));
    const char *sel = json_string_value(json_object_get(e, "shardSelector"));
    bool client_side = json_is_true(json_object_get(e, "shardClientSide"));
    if (!kind)
      continue;
    if (strcmp(kind, "ConfigMap") == 0) {
      assert_non_null(sel);
      assert_non_null(strstr(sel, "object.metadata.uid"));
      assert_false(client_side);
      seen |= 1;
    } else if (strcmp(kind, "Secret") == 0) {
      assert_non_null(sel);
      assert_true(client_side);
      seen |= 2;
    } else if (strcmp(kind, "ServiceAccount") == 0) {
      assert_null(sel);
      seen |= 4;
    }
  }
  json_decref(d);
  assert_int_equal(seen, 7);
}

/* touch_children changes every child: its owner's replica reconciles it. */
static void touch_children(const char *value) {
  for (int i = 0; i < NOWN; i++) {
    char name[32], patch[96];
    kcr_error_t err = {0};
    snprintf(name, sizeof(name), "child-%d", i);
    snprintf(patch, sizeof(patch), "{\"stringData\":{\"v\":\"%s\"}}", value);
    if (kcr_client_patch(client, &secrets, ns, name, KCR_PATCH_MERGE, patch, strlen(patch), NULL,
                         NULL, &err) != 0)
      fail_msg("patch %s: %s", name, err.message);
  }
}

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0 ||
      kcr_it_create_namespace(client, "kcr-shuid", ns, sizeof(ns)) != 0)
    return -1;
  for (int i = 0; i < NOWN; i++) {
    kcr_error_t err = {0};
    json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                          "metadata", "name", "", "namespace", ns);
    json_t *out = NULL, *child;
    char name[32];
    const char *uid;
    snprintf(name, sizeof(name), "owner-%d", i);
    json_object_set_new(json_object_get(o, "metadata"), "name", json_string(name));
    if (kcr_client_create_object(client, &configmaps, ns, o, NULL, &out, &err) != 0 ||
        !(uid = json_string_value(json_object_get(json_object_get(out, "metadata"), "uid")))) {
      fprintf(stderr, "create %s: %s\n", name, err.message);
      return -1;
    }
    snprintf(owner_uid[i], sizeof(owner_uid[i]), "%s", uid);
    json_decref(out);
    json_decref(o);
    child = json_pack("{s:s, s:s, s:{s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:b}]}, s:{s:s}}",
                      "apiVersion", "v1", "kind", "Secret", "metadata", "name", "", "namespace", ns,
                      "ownerReferences", "apiVersion", "v1", "kind", "ConfigMap", "name", name,
                      "uid", owner_uid[i], "controller", 1, "stringData", "v", "0");
    snprintf(name, sizeof(name), "child-%d", i);
    json_object_set_new(json_object_get(child, "metadata"), "name", json_string(name));
    if (kcr_client_create_object(client, &secrets, ns, child, NULL, NULL, &err) != 0) {
      fprintf(stderr, "create %s: %s\n", name, err.message);
      json_decref(child);
      return -1;
    }
    json_decref(child);
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_disconnect(env, config, client, ns[0] ? ns : NULL);
  return 0;
}

static void test_shard_uid_it(void **state) {
  kcr_it_runner ra = {0}, rb = {0};
  char ring[32];
  size_t own_a = 0, own_b = 0, kids_a = 0, kids_b = 0;
  int64_t t;
  bool settled = false, client_side = false;
  (void)state;
  snprintf(ring, sizeof(ring), "uid-%d", (int)getpid());

  /* a alone: every owner */
  t = kcr_it_mono();
  ra.m = replica(ring, 0, "shard-uid-a");
  assert_int_equal(kcr_it_runner_start(&ra), 0);
  assert_true(kcr_it_wait_reconciled_since(t, NOWN));

  /* b joins: disjoint caches of owners and of children, together all */
  rb.m = replica(ring, 1, "shard-uid-b");
  assert_int_equal(kcr_it_runner_start(&rb), 0);
  for (int i = 0; i < 600 && !settled; i++) {
    double sa = kcr_it_shard_share(ra.m), sb = kcr_it_shard_share(rb.m);
    settled = sa > 0 && sb > 0 && sa + sb > 0.999999 && cached_as_owned(0, &own_a, &kids_a) &&
              cached_as_owned(1, &own_b, &kids_b) && own_a + own_b == NOWN;
    if (!settled)
      kcr_it_sleep_ms(50);
  }
  print_message("uid key, two replicas: shares %.3f and %.3f; owners %zu and %zu, children %zu "
                "and %zu of %d\n",
                kcr_it_shard_share(ra.m), kcr_it_shard_share(rb.m), own_a, own_b, kids_a, kids_b,
                NOWN);
  assert_true(settled);
  assert_int_equal(kids_a + kids_b, NOWN);
  assert_true(own_a > 0 && own_b > 0); /* 40 random uids over two halves */
  {
    uint64_t fa = filtered(ra.m, &client_side);
    assert_true(client_side);
    uint64_t fb = filtered(rb.m, &client_side);
    assert_true(client_side);
    print_message("children dropped on the client: a %llu, b %llu\n", (unsigned long long)fa,
                  (unsigned long long)fb);
    assert_true(fb >= own_a); /* b received a's children and dropped them */
  }
  check_kinds(ra.m);

  /* a change to every child reaches its owner's replica, with the child cached */
  t = kcr_it_mono();
  touch_children("1");
  assert_true(kcr_it_wait_reconciled_since(t, NOWN));
  kcr_it_sleep_ms(200); /* late duplicates would show too */
  {
    size_t n = 0;
    kcr_it_record *rec = kcr_it_records_copy(&n);
    assert_non_null(rec);
    for (size_t i = 0; i < n; i++) {
      const kcr_it_record *r = &rec[i];
      int k;
      if (r->start < t)
        continue;
      k = (int)strtol(strrchr(r->key, '-') + 1, NULL, 10);
      if (r->who != owner_of(k) || !r->flag) {
        fail_msg("%s reconciled by %c (owner %d), child %s", r->key, "ab"[r->who], owner_of(k),
                 r -> flag ? "cached" : "not cached");
      }
    }
    free(rec);
  }

  /* a stops gracefully: b takes everything */
  assert_int_equal(kcr_it_runner_stop(&ra), 0);
  managers[0] = NULL;
  for (int i = 0; i < 600 && kcr_it_shard_share(rb.m) < 0.999999; i++)
    kcr_it_sleep_ms(20);
  assert_true(kcr_it_shard_share(rb.m) > 0.999999);
  settled = false;
  for (int i = 0; i < 600 && !settled; i++) {
    settled = cached_as_owned(1, &own_b, &kids_b) && own_b == NOWN;
    if (!settled)
      kcr_it_sleep_ms(50);
  }
  assert_true(settled);
  t = kcr_it_mono();
  touch_children("2");
  assert_true(kcr_it_wait_reconciled_since(t, NOWN));
  {
    char key[96];
    if (kcr_it_record_overlap(key, sizeof(key)))
      fail_msg("%s reconciled by both replicas at once", key);
  }
  assert_int_equal(kcr_it_runner_stop(&rb), 0);
  managers[1] = NULL;
  kcr_manager_destroy(rb.m);
  kcr_manager_destroy(ra.m);
}

/* The uid key refuses what belongs to the namespace key, and a key the
 * server cannot select on, before anything starts. */
static void test_shard_uid_bad_options(void **state) {
  const kcr_shard_key keys[] = {KCR_SHARD_KEY_UID, KCR_SHARD_KEY_OWNER_UID};
  const char *const selectors[] = {"kcr.dev/apps=true", NULL};
  (void)state;
  for (int i = 0; i < 2; i++) {
    kcr_manager_options mo = {0};
    kcr_manager_t *m = NULL;
    kcr_error_t err = {0};
    mo.config = config;
    mo.no_signal_handlers = true;
    mo.sharding.ring = "bad";
    mo.sharding.key = keys[i];
    mo.sharding.namespace_selector = selectors[i];
    assert_int_equal(kcr_manager_create(&mo, &m, &err), KCR_EINVAL);
    assert_null(m);
    assert_non_null(strstr(err.message, i == 0 ? "namespace_selector" : "sharding.key"));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shard_uid_bad_options),
      cmocka_unit_test(test_shard_uid_it),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
