/* SPDX-License-Identifier: MIT */
/*
 * test_sharding_it.c: sharded list and watch (KEP-5866) against the real API
 * server, ConfigMaps in 8 namespaces.
 *
 * With the ShardedListAndWatch gate on (the shared cluster; scripts/cluster.sh
 * turns it on):
 *  - the server's hash is kcr's: a list whose selector is the one hash
 *    [h, h + 1) of a namespace (or of an object's uid), computed here, returns
 *    exactly that namespace's objects (that object), with metadata.shardInfo;
 *  - a long selector (one member's ~230 ranges of a 10-member ring with 256
 *    points each) is accepted and returns exactly what kcr_shard_set_contains
 *    says;
 *  - two informers (one paged, one streaming its list) on the complementary
 *    halves of a 2-member ring each hold exactly their share, together all,
 *    through creates and deletes on the watch, and the server did the
 *    filtering (nothing dropped on the client);
 *  - an informer on the uid key holds exactly the objects of its half;
 *  - membership by Leases: three members of one ring each hold a labelled
 *    Lease, agree on the ring and split the space; a stopped member's Lease
 *    goes and the other two take over only its share; a Lease that is not
 *    renewed counts until renewTime + leaseDurationSeconds and not after.
 *
 * With the argument "fallback" it starts a cluster of its own with the gate
 * off: the list ignores the selector and says nothing of shardInfo, and the
 * same two informers still hold exactly their shares, filtered on the client,
 * which their stats, /debug/informers' entry and the metric show.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/buf.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/informer.h"
#include "kcr/meta.h"
#include "kcr/metrics.h"
#include "kcr/shard_member.h"
#include "kcr/sharding.h"
#include "kcr/time.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

#define NNS 8
#define PER_NS 4

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvr namespaces = {"", "v1", "namespaces"};

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[NNS][64];
static char label[64]; /* kcr-it-shard=<pid>: only this run's ConfigMaps */
static int gate_off;   /* the "fallback" run */

static int create_cm(const char *n, const char *name) {
  kcr_error_t err;
  json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind",
                        "ConfigMap", "metadata", "name", name, "namespace", n, "labels",
                        "kcr-it-shard", strchr(label, '=') + 1, "data", "k", "v");
  int rc;
  kcr_error_clear(&err);
  rc = kcr_client_create_object(client, &configmaps, n, o, NULL, NULL, &err);
  json_decref(o);
  if (rc)
    fprintf(stderr, "create %s/%s: %s\n", n, name, err.message);
  return rc;
}

static int group_setup(void **state) {
  (void)state;
  if (gate_off) {
    unsetenv("KCR_TEST_KUBECONFIG"); /* a cluster of our own, the gate left off */
    setenv("KCR_FEATURE_GATES", "", 1);
  }
  if (kcr_it_connect(&env, &config, &client) != 0)
    return -1;
  snprintf(label, sizeof(label), "kcr-it-shard=%d", (int)getpid());
  for (int i = 0; i < NNS; i++) {
    char prefix[32], name[32];
    snprintf(prefix, sizeof(prefix), "kcr-it-shard%d", i);
    if (kcr_it_create_namespace(client, prefix, ns[i], sizeof(ns[i])) != 0)
      return -1;
    for (int k = 0; k < PER_NS; k++) {
      snprintf(name, sizeof(name), "cm-%d", k);
      if (create_cm(ns[i], name) != 0)
        return -1;
    }
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  for (int i = 1; i < NNS; i++)
    if (ns[i][0])
      kcr_client_delete(client, &namespaces, NULL, ns[i], NULL, NULL, NULL);
  kcr_it_disconnect(env, config, client, ns[0][0] ? ns[0] : NULL);
  return 0;
}

/* list_sel lists this run's ConfigMaps in all namespaces with shard selector
 * sel; *out: the new list answer. */
static void list_sel(const char *sel, json_t **out) {
  kcr_request_options o = {0};
  kcr_error_t err;
  kcr_error_clear(&err);
  o.label_selector = label;
  o.shard_selector = sel;
  if (kcr_client_list(client, &configmaps, NULL, &o, out, &err) != 0)
    fail_msg("list with %.200s: %s", sel, err.message);
}

static size_t items(const json_t *list) {
  return json_array_size(json_object_get(list, "items"));
}

static const json_t *shard_info(const json_t *list) {
  return json_object_get(json_object_get(list, "metadata"), "shardInfo");
}

/* one_hash: the selector of the single hash h on field. */
static void one_hash(uint64_t h, const char *field, char *buf, size_t size) {
  if (h == UINT64_MAX)
    snprintf(buf, size, "shardRange(%s, '0x%016llx', '0x10000000000000000')", field,
             (unsigned long long)h);
  else
    snprintf(buf, size, "shardRange(%s, '0x%016llx', '0x%016llx')", field, (unsigned long long)h,
             (unsigned long long)h + 1);
}

/* The server's FNV-1a is kcr's, on namespaces and on uids, to the single hash. */
static void test_sharding_it_server_hash_matches(void **state) {
  char sel[256];
  json_t *list, *item;
  size_t i;
  (void)state;
  for (int k = 0; k < NNS; k++) {
    one_hash(kcr_shard_hash(ns[k], strlen(ns[k])), "object.metadata.namespace", sel, sizeof(sel));
    list_sel(sel, &list);
    if (gate_off) {
      assert_int_equal(items(list), NNS * PER_NS); /* ignored: everything */
      assert_null(shard_info(list));
      json_decref(list);
      continue;
    }
    assert_int_equal(items(list), PER_NS);
    json_array_foreach(json_object_get(list, "items"), i, item)
        assert_string_equal(kcr_meta_namespace(item), ns[k]);
    assert_non_null(shard_info(list));
    json_decref(list);
  }
  /* By uid: the first object of the unsharded list, alone. */
  list_sel(NULL, &list);
  assert_int_equal(items(list), NNS * PER_NS);
  {
    const json_t *first = json_array_get(json_object_get(list, "items"), 0);
    const char *uid = kcr_meta_uid(first);
    json_t *one;
    assert_non_null(uid);
    one_hash(kcr_shard_hash(uid, strlen(uid)), "object.metadata.uid", sel, sizeof(sel));
    list_sel(sel, &one);
    if (!gate_off) {
      assert_int_equal(items(one), 1);
      assert_string_equal(kcr_meta_uid(json_array_get(json_object_get(one, "items"), 0)), uid);
    }
    json_decref(one);
  }
  json_decref(list);
}

/* count_in: how many of this run's ConfigMaps a set holds, by namespace hash. */
static size_t count_in(const kcr_shard_set_t *s) {
  size_t n = 0;
  for (int k = 0; k < NNS; k++)
    if (kcr_shard_set_contains(s, kcr_shard_hash(ns[k], strlen(ns[k]))))
      n += PER_NS;
  return n;
}

/* A selector of ~230 ranges is accepted and filters exactly. */
static void test_sharding_it_long_selector(void **state) {
  const char *m[10] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"};
  kcr_shard_ring_options ro = {.layout = KCR_SHARD_RING_VIRTUAL, .vnodes = 256};
  kcr_shard_ring_t *ring = NULL;
  kcr_error_t err = {0};
  size_t total = 0;
  (void)state;
  assert_int_equal(kcr_shard_ring_create(m, 10, &ro, &ring, &err), 0);
  for (int r = 0; r < 10; r++) {
    kcr_shard_set_t *s = NULL;
    char *sel = NULL;
    json_t *list, *item;
    size_t i;
    assert_int_equal(kcr_shard_ring_set(ring, m[r], &s, &err), 0);
    assert_int_equal(kcr_shard_set_selector(s, KCR_SHARD_KEY_NAMESPACE, &sel, &err), 0);
    if (r == 0)
      printf("member r0: %zu ranges, a selector of %zu bytes\n", kcr_shard_set_ranges(s, NULL),
             strlen(sel));
    list_sel(sel, &list);
    if (!gate_off) {
      assert_int_equal(items(list), count_in(s));
      json_array_foreach(json_object_get(list, "items"), i, item) {
        const char *n = kcr_meta_namespace(item);
        assert_true(kcr_shard_set_contains(s, kcr_shard_hash(n, strlen(n))));
      }
    }
    total += items(list);
    json_decref(list);
    kcr_free(sel);
    kcr_shard_set_destroy(s);
  }
  assert_int_equal(total, gate_off ? 10 * NNS * PER_NS : NNS * PER_NS);
  kcr_shard_ring_destroy(ring);
}

/* store_matches: whether inf's store holds want keys, each in a namespace
 * whose hash is in s. */
static int store_matches(kcr_informer_t *inf, const kcr_shard_set_t *s, size_t want) {
  char **keys = NULL;
  size_t n = 0;
  int ok;
  if (kcr_store_list_keys(kcr_informer_store(inf), &keys, &n) != 0)
    return 0;
  ok = n == want;
  for (size_t i = 0; i < n; i++) {
    const char *slash = strchr(keys[i], '/');
    size_t len = slash ? (size_t)(slash - keys[i]) : 0;
    if (!kcr_shard_set_contains(s, kcr_shard_hash(keys[i], len)))
      ok = 0;
  }
  kcr_free(keys);
  return ok;
}

static int wait_matches(kcr_informer_t *inf, const kcr_shard_set_t *s, size_t want) {
  for (int i = 0; i < 300; i++) {
    if (store_matches(inf, s, want))
      return 1;
    kcr_it_sleep_ms(100);
  }
  return 0;
}

/* metric_value: kcr_informer_shard_filtered_total of ConfigMaps in reg's text. */
static double metric_value(kcr_metrics_registry_t *reg) {
  kcr_buf_t b;
  const char *p;
  double v = -1;
  kcr_buf_init(&b, 1 << 20);
  assert_int_equal(kcr_metrics_render(reg, &b), 0);
  p = strstr(kcr_buf_cstr(&b), "kcr_informer_shard_filtered_total{");
  if (p && (p = strchr(p, '}')))
    v = strtod(p + 1, NULL);
  kcr_buf_free(&b);
  return v;
}

/* Two informers on complementary halves see exactly their shares, together all. */
static void test_sharding_it_complementary_informers(void **state) {
  const char *m[2] = {"replica-a", "replica-b"};
  kcr_shard_ring_t *ring = NULL;
  kcr_shard_set_t *set[2] = {NULL, NULL};
  kcr_informer_t *inf[2] = {NULL, NULL};
  kcr_metrics_registry_t *reg[2] = {NULL, NULL};
  kcr_error_t err = {0};
  size_t want[2];
  (void)state;
  assert_int_equal(kcr_shard_ring_create(m, 2, NULL, &ring, &err), 0);
  for (int r = 0; r < 2; r++) {
    kcr_informer_options o = {0};
    assert_int_equal(kcr_shard_ring_set(ring, m[r], &set[r], &err), 0);
    want[r] = count_in(set[r]);
    assert_int_equal(kcr_metrics_registry_create(&reg[r], &err), 0);
    o.client = client;
    o.resource = configmaps;
    o.kind = "ConfigMap";
    o.label_selector = label;
    o.shard = set[r];
    o.shard_key = KCR_SHARD_KEY_NAMESPACE;
    o.metrics = reg[r];
    o.page_size = 5;           /* several pages: shardInfo and the filter on each */
    o.streaming_list = r == 1; /* and the other fills by a streaming list */
    if (kcr_informer_create(&o, &inf[r], &err) != 0)
      fail_msg("informer: %s", err.message);
    assert_int_equal(kcr_informer_start(inf[r], &err), 0);
  }
  printf("shares of the 8 namespaces: %zu and %zu ConfigMaps\n", want[0], want[1]);
  assert_int_equal(want[0] + want[1], NNS * PER_NS);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(kcr_informer_wait_for_sync(inf[r], 60 * KCR_NSEC_PER_SEC, &err), 0);
    assert_true(wait_matches(inf[r], set[r], want[r]));
  }

  /* The watch: one more ConfigMap in every namespace, then one fewer. */
  for (int k = 0; k < NNS; k++)
    assert_int_equal(create_cm(ns[k], "late"), 0);
  for (int r = 0; r < 2; r++)
    assert_true(wait_matches(inf[r], set[r], want[r] + want[r] / PER_NS));
  for (int k = 0; k < NNS; k++) {
    kcr_error_clear(&err);
    assert_int_equal(kcr_client_delete(client, &configmaps, ns[k], "late", NULL, NULL, &err), 0);
  }
  for (int r = 0; r < 2; r++)
    assert_true(wait_matches(inf[r], set[r], want[r]));

  for (int r = 0; r < 2; r++) {
    kcr_informer_stats st;
    json_t *d = kcr_informer_diagnostics(inf[r]);
    kcr_informer_get_stats(inf[r], &st);
    printf("informer %s: %zu objects, %llu dropped on the client, server ignored the selector: "
           "%s\n",
           m[r], kcr_store_len(kcr_informer_store(inf[r])), (unsigned long long)st.shard_filtered,
           st.shard_ignored ? "yes" : "no");
    assert_non_null(d);
    assert_non_null(strstr(json_string_value(json_object_get(d, "shardSelector")),
                           "shardRange(object.metadata.namespace, '0x"));
    if (gate_off) { /* the other share arrived and was dropped */
      assert_true(st.shard_ignored);
      assert_true(st.shard_filtered >= want[1 - r]);
      assert_true(metric_value(reg[r]) >= (double)want[1 - r]);
      assert_true(json_is_true(json_object_get(d, "shardIgnored")));
    } else { /* the server filtered: nothing to drop */
      assert_false(st.shard_ignored);
      assert_int_equal(st.shard_filtered, 0);
      assert_true(metric_value(reg[r]) == 0.0);
    }
    json_decref(d);
    kcr_informer_destroy(inf[r]);
    kcr_metrics_registry_destroy(reg[r]);
    kcr_shard_set_destroy(set[r]);
  }
  kcr_shard_ring_destroy(ring);
}

/* counting handler: adds and deletes seen (handler threads) */
static atomic_int moved_adds, moved_deletes;
static void on_moved_add(json_t *obj, bool initial, void *data) {
  (void)obj;
  (void)initial;
  (void)data;
  atomic_fetch_add(&moved_adds, 1);
}
static void on_moved_delete(json_t *obj, const char *tombstone_key, void *data) {
  (void)obj;
  (void)tombstone_key;
  (void)data;
  atomic_fetch_add(&moved_deletes, 1);
}

/* A sharded informer moved to the other half of the ring (a handover):
 * it lists again with the new selector, its store ends with exactly the new
 * share, its handlers see the old share deleted and the new one added, and
 * the relist counts under "shard"; then back again. */
static void test_sharding_it_move_shard(void **state) {
  const char *m[2] = {"replica-a", "replica-b"};
  kcr_shard_ring_t *ring = NULL;
  kcr_shard_set_t *set[2] = {NULL, NULL};
  kcr_informer_t *inf = NULL;
  kcr_informer_options o = {0};
  kcr_event_handler h = {on_moved_add, NULL, on_moved_delete, NULL};
  kcr_informer_stats st;
  kcr_error_t err = {0};
  uint64_t id;
  size_t want[2];
  json_t *d;
  (void)state;
  assert_int_equal(kcr_shard_ring_create(m, 2, NULL, &ring, &err), 0);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(kcr_shard_ring_set(ring, m[r], &set[r], &err), 0);
    want[r] = count_in(set[r]);
  }
  o.client = client;
  o.resource = configmaps;
  o.kind = "ConfigMap";
  o.label_selector = label;
  o.shard = set[0];
  o.shard_key = KCR_SHARD_KEY_NAMESPACE;
  o.streaming_list = true;
  assert_int_equal(kcr_informer_create(&o, &inf, &err), 0);
  assert_int_equal(kcr_informer_add_handler(inf, &h, &id, &err), 0);
  assert_int_equal(kcr_informer_start(inf, &err), 0);
  assert_int_equal(kcr_informer_wait_for_sync(inf, 60 * KCR_NSEC_PER_SEC, &err), 0);
  assert_true(wait_matches(inf, set[0], want[0]));
  for (int i = 0; i < 100 && atomic_load(&moved_adds) < (int)want[0]; i++)
    kcr_it_sleep_ms(50); /* handlers run on their own thread, after the store */
  assert_int_equal(atomic_load(&moved_adds), (int)want[0]);

  assert_int_equal(kcr_informer_set_shard(inf, set[1], &err), 0);
  assert_true(wait_matches(inf, set[1], want[1]));
  for (int i = 0; i < 100 && atomic_load(&moved_deletes) < (int)want[0]; i++)
    kcr_it_sleep_ms(50);
  assert_int_equal(atomic_load(&moved_deletes), (int)want[0]);
  for (int i = 0; i < 100 && atomic_load(&moved_adds) < (int)(want[0] + want[1]); i++)
    kcr_it_sleep_ms(50);
  assert_int_equal(atomic_load(&moved_adds), (int)(want[0] + want[1]));
  kcr_informer_get_stats(inf, &st);
  assert_true(st.relists[KCR_INFORMER_RELIST_SHARD] >= 1);
  d = kcr_informer_diagnostics(inf);
  {
    char *sel = NULL;
    assert_int_equal(kcr_shard_set_selector(set[1], KCR_SHARD_KEY_NAMESPACE, &sel, &err), 0);
    assert_string_equal(json_string_value(json_object_get(d, "shardSelector")), sel);
    kcr_free(sel);
  }
  json_decref(d);
  printf("moved: %zu -> %zu ConfigMaps, %d deletes, %d adds, %llu shard relist(s)\n", want[0],
         want[1], atomic_load(&moved_deletes), atomic_load(&moved_adds),
         (unsigned long long)st.relists[KCR_INFORMER_RELIST_SHARD]);

  /* and back: the watch still follows changes in the new share */
  assert_int_equal(kcr_informer_set_shard(inf, set[0], &err), 0);
  assert_true(wait_matches(inf, set[0], want[0]));
  for (int k = 0; k < NNS; k++)
    assert_int_equal(create_cm(ns[k], "moved-late"), 0);
  assert_true(wait_matches(inf, set[0], want[0] + want[0] / PER_NS));
  for (int k = 0; k < NNS; k++) {
    kcr_error_clear(&err);
    assert_int_equal(kcr_client_delete(client, &configmaps, ns[k], "moved-late", NULL, NULL, &err),
                     0);
  }
  assert_true(wait_matches(inf, set[0], want[0]));
  /* not sharded, or no set: refused */
  assert_int_equal(kcr_informer_set_shard(inf, NULL, &err), KCR_EINVAL);
  kcr_informer_destroy(inf);
  for (int r = 0; r < 2; r++)
    kcr_shard_set_destroy(set[r]);
  kcr_shard_ring_destroy(ring);
}

/* An informer on the uid key holds the objects whose uid hashes into the lower
 * half of the space: by the server's filter, or (gate off) by the client's. */
static void test_sharding_it_uid_key_informer(void **state) {
  const kcr_shard_range lower = {0, 0x7fffffffffffffffULL};
  kcr_shard_set_t *set = NULL;
  kcr_informer_options o = {0};
  kcr_informer_t *inf = NULL;
  kcr_informer_stats st;
  kcr_error_t err = {0};
  json_t *list, *item;
  size_t i, want = 0;
  int ok = 0;
  (void)state;
  list_sel(NULL, &list);
  json_array_foreach(json_object_get(list, "items"), i, item) {
    const char *uid = kcr_meta_uid(item);
    want += kcr_shard_hash(uid, strlen(uid)) <= lower.last;
  }
  json_decref(list);
  assert_int_equal(kcr_shard_set_create(&lower, 1, &set, &err), 0);
  o.client = client;
  o.resource = configmaps;
  o.kind = "ConfigMap";
  o.label_selector = label;
  o.shard = set;
  o.shard_key = KCR_SHARD_KEY_UID;
  assert_int_equal(kcr_informer_create(&o, &inf, &err), 0);
  assert_int_equal(kcr_informer_start(inf, &err), 0);
  assert_int_equal(kcr_informer_wait_for_sync(inf, 60 * KCR_NSEC_PER_SEC, &err), 0);
  for (int k = 0; k < 300 && !ok; k++) {
    ok = kcr_store_len(kcr_informer_store(inf)) == want;
    if (!ok)
      kcr_it_sleep_ms(100);
  }
  kcr_informer_get_stats(inf, &st);
  printf("uid key: %zu of %d in the lower half, %llu dropped on the client\n", want, NNS * PER_NS,
         (unsigned long long)st.shard_filtered);
  assert_true(ok);
  assert_int_equal(st.shard_filtered, gate_off ? (size_t)NNS * PER_NS - want : 0);
  kcr_informer_destroy(inf);
  kcr_shard_set_destroy(set);
}

static const kcr_gvr leases = {"coordination.k8s.io", "v1", "leases"};

static atomic_int changes;

static void on_change(const kcr_shard_ring_t *ring, void *data) {
  (void)ring;
  (void)data;
  atomic_fetch_add(&changes, 1);
}

/* wait_members waits until every member of ms (n) sees want members. */
static int wait_members(kcr_shard_member_t **ms, size_t n, size_t want) {
  for (int i = 0; i < 200; i++) {
    size_t ok = 0;
    for (size_t k = 0; k < n; k++) {
      kcr_shard_set_t *s = NULL;
      size_t seen = 0;
      if (kcr_shard_member_set(ms[k], &s, &seen, NULL) == 0 && seen == want)
        ok++;
      kcr_shard_set_destroy(s);
    }
    if (ok == n)
      return 1;
    kcr_it_sleep_ms(100);
  }
  return 0;
}

/* share_of: member m's set and its share. */
static double share_of(kcr_shard_member_t *m, kcr_shard_set_t **out) {
  assert_int_equal(kcr_shard_member_set(m, out, NULL, NULL), 0);
  return kcr_shard_set_share(*out);
}

/* put_lease creates a ring Lease by hand for holder, renewed secs_ago seconds
 * ago with duration dur. */
static void put_lease(const char *ring, const char *name, const char *holder, int secs_ago,
                      int dur) {
  char t[KCR_TIME_BUFSIZE];
  kcr_error_t err;
  json_t *o;
  kcr_time_format(
      kcr_time_add_ns(kcr_clock_wall(kcr_clock_system()), -(int64_t)secs_ago * KCR_NSEC_PER_SEC),
      KCR_TIME_MICRO, t, sizeof(t));
  o = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:i, s:s}}", "apiVersion",
                "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", name, "labels",
                KCR_SHARD_RING_LABEL, ring, "spec", "holderIdentity", holder,
                "leaseDurationSeconds", dur, "renewTime", t);
  kcr_error_clear(&err);
  if (kcr_client_create_object(client, &leases, ns[0], o, NULL, NULL, &err) != 0)
    fail_msg("lease %s: %s", name, err.message);
  json_decref(o);
}

static void test_sharding_it_lease_membership(void **state) {
  const char *ids[3] = {"member-a", "member-b", "member-c"};
  kcr_shard_member_t *ms[3] = {NULL, NULL, NULL};
  kcr_shard_set_t *before[3] = {NULL, NULL, NULL}, *after[2] = {NULL, NULL};
  kcr_shard_ring_t *want = NULL;
  char ring[32];
  kcr_error_t err = {0};
  kcr_request_options lo = {0};
  json_t *list = NULL;
  double sum = 0;
  (void)state;
  snprintf(ring, sizeof(ring), "it-%d", (int)getpid());
  for (int k = 0; k < 3; k++) {
    kcr_shard_member_options o = {0};
    o.client = client;
    o.ring = ring;
    o.lease_namespace = ns[0];
    o.identity = ids[k];
    o.lease_duration_ns = 3 * KCR_NSEC_PER_SEC;
    o.renew_deadline_ns = 2 * KCR_NSEC_PER_SEC;
    o.retry_period_ns = 200 * KCR_NSEC_PER_MSEC;
    o.on_change = on_change;
    assert_int_equal(kcr_shard_member_create(&o, &ms[k], &err), 0);
    assert_int_equal(kcr_shard_member_start(ms[k], &err), 0);
  }
  assert_true(wait_members(ms, 3, 3));
  /* Every member computed the ring of the three names; the sets tile the space. */
  assert_int_equal(kcr_shard_ring_create(ids, 3, NULL, &want, &err), 0);
  for (int k = 0; k < 3; k++) {
    kcr_shard_set_t *w = NULL;
    const kcr_shard_range *a, *b;
    size_t na, nb;
    sum += share_of(ms[k], &before[k]);
    assert_true(kcr_shard_member_may_own(ms[k]));
    assert_int_equal(kcr_shard_ring_set(want, ids[k], &w, &err), 0);
    na = kcr_shard_set_ranges(before[k], &a);
    nb = kcr_shard_set_ranges(w, &b);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof(*a));
    kcr_shard_set_destroy(w);
  }
  assert_true(sum > 0.999999 && sum < 1.000001);
  lo.label_selector = NULL;
  {
    char sel[96];
    snprintf(sel, sizeof(sel), "%s=%s", KCR_SHARD_RING_LABEL, ring);
    lo.label_selector = sel;
    assert_int_equal(kcr_client_list(client, &leases, ns[0], &lo, &list, &err), 0);
    assert_int_equal(items(list), 3);
    json_decref(list);
  }
  printf("3 members: shares %.3f %.3f %.3f; %d ring changes seen\n", kcr_shard_set_share(before[0]),
         kcr_shard_set_share(before[1]), kcr_shard_set_share(before[2]), atomic_load(&changes));

  /* member-c stops: its Lease goes, a and b take its share and keep their own. */
  kcr_shard_member_destroy(ms[2]);
  ms[2] = NULL;
  assert_true(wait_members(ms, 2, 2));
  sum = 0;
  for (int k = 0; k < 2; k++) {
    const kcr_shard_range *r;
    size_t n;
    sum += share_of(ms[k], &after[k]);
    n = kcr_shard_set_ranges(before[k], &r);
    for (size_t i = 0; i < n; i++) /* what it owned, it still owns */
      assert_true(kcr_shard_set_contains(after[k], r[i].first) &&
                  kcr_shard_set_contains(after[k], r[i].last));
  }
  assert_true(sum > 0.999999 && sum < 1.000001);

  /* Leases by hand: an expired one never counts; a live one counts until it expires. */
  put_lease(ring, "by-hand-old", "ghost-old", 30, 15);
  put_lease(ring, "by-hand-live", "ghost-live", 0, 2);
  assert_true(wait_members(ms, 2, 3));
  assert_true(wait_members(ms, 2, 2)); /* 2 s later, not renewed: gone */

  for (int k = 0; k < 3; k++)
    kcr_shard_set_destroy(before[k]);
  for (int k = 0; k < 2; k++) {
    kcr_shard_set_destroy(after[k]);
    kcr_shard_member_destroy(ms[k]);
  }
  kcr_shard_ring_destroy(want);
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sharding_it_server_hash_matches),
      cmocka_unit_test(test_sharding_it_long_selector),
      cmocka_unit_test(test_sharding_it_complementary_informers),
      cmocka_unit_test(test_sharding_it_move_shard),
      cmocka_unit_test(test_sharding_it_uid_key_informer),
      cmocka_unit_test(test_sharding_it_lease_membership),
  };
  gate_off = argc > 1 && strcmp(argv[1], "fallback") == 0;
  return cmocka_run_group_tests_name(gate_off ? "sharding_fallback_it" : "sharding_it", tests,
                                     group_setup, group_teardown);
}
