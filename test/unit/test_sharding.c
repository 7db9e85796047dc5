/* SPDX-License-Identifier: MIT */
/*
 * test_sharding.c: the shard hash, sets and rings of kcr/sharding.h: FNV-1a 64
 * against the published vectors, the selector text the API server parses, set
 * merging and membership, rings that depend only on their member set, tile the
 * whole space, stay within balance bounds and (virtual layout) move only the
 * joiner's or the leaver's share; plus the measurement behind the default
 * layout (docs/design.md, "Sharding"), printed, and the allocation-failure loop.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/sharding.h"
#include "testutil.h"

/* The FNV-1a 64 test vectors of the reference (draft-eastlake-fnv, fnv_test.c:
 * "", "a" .. "foobar") and "default", computed apart from kcr (a 5-line Python
 * FNV-1a). That the API server agrees is test_sharding_it's job. */
static void test_sharding_fnv1a_vectors(void **state) {
  static const struct {
    const char *s;
    uint64_t h;
  } v[] = {
      {"", 0xcbf29ce484222325ULL},        {"a", 0xaf63dc4c8601ec8cULL},
      {"b", 0xaf63df4c8601f1a5ULL},       {"c", 0xaf63de4c8601eff2ULL},
      {"foo", 0xdcb27518fed9d577ULL},     {"foobar", 0x85944171f73967e8ULL},
      {"default", 0xebada5168620c5feULL},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    uint64_t got = kcr_shard_hash(v[i].s, strlen(v[i].s));
    if (got != v[i].h)
      fail_msg("fnv1a(\"%s\") = %016llx, want %016llx", v[i].s, (unsigned long long)got,
               (unsigned long long)v[i].h);
  }
  assert_true(kcr_shard_hash(NULL, 0) == 0xcbf29ce484222325ULL);
}

static void test_sharding_object_hash(void **state) {
  json_t *o = json_pack("{s:{s:s,s:s}}", "metadata", "namespace", "foo", "uid", "foobar");
  json_t *cluster = json_pack("{s:{s:s}}", "metadata", "name", "x");
  kcr_error_t err = {0};
  uint64_t h = 0;
  (void)state;
  assert_int_equal(kcr_shard_object_hash(o, KCR_SHARD_KEY_NAMESPACE, &h, &err), 0);
  assert_true(h == 0xdcb27518fed9d577ULL);
  assert_int_equal(kcr_shard_object_hash(o, KCR_SHARD_KEY_UID, &h, &err), 0);
  assert_true(h == 0x85944171f73967e8ULL);
  assert_int_equal(kcr_shard_object_hash(cluster, KCR_SHARD_KEY_NAMESPACE, &h, &err), 0);
  assert_true(h == 0xcbf29ce484222325ULL); /* cluster-scoped: the hash of "" */
  h = 7;
  assert_int_equal(kcr_shard_object_hash(cluster, KCR_SHARD_KEY_UID, &h, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "uid"));
  assert_true(h == 7);
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_object_hash(o, (kcr_shard_key)9, &h, &err), KCR_EINVAL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_object_hash(NULL, KCR_SHARD_KEY_NAMESPACE, &h, &err), KCR_EINVAL);
  json_decref(o);
  json_decref(cluster);
}

/* the owner-uid key: the controller owner's uid, else the object's own */
static void test_sharding_owner_uid_hash(void **state) {
  json_t *child = json_pack("{s:{s:s,s:[{s:s,s:b},{s:s,s:b}]}}", "metadata", "uid", "child-uid",
                            "ownerReferences", "uid", "other", "controller", 0, "uid", "foobar",
                            "controller", 1);
  json_t *plain = json_pack("{s:{s:s,s:[{s:s}]}}", "metadata", "uid", "foobar", "ownerReferences",
                            "uid", "not-a-controller");
  json_t *none =
      json_pack("{s:{s:[{s:s,s:b}]}}", "metadata", "ownerReferences", "uid", "", "controller", 1);
  kcr_error_t err = {0};
  uint64_t h = 0;
  (void)state;
  /* the child hashes as its owner does on the uid key */
  assert_int_equal(kcr_shard_object_hash(child, KCR_SHARD_KEY_OWNER_UID, &h, &err), 0);
  assert_true(h == 0x85944171f73967e8ULL);
  assert_int_equal(kcr_shard_object_hash(child, KCR_SHARD_KEY_UID, &h, &err), 0);
  assert_true(h == kcr_shard_hash("child-uid", 9));
  /* no controller reference: its own uid */
  assert_int_equal(kcr_shard_object_hash(plain, KCR_SHARD_KEY_OWNER_UID, &h, &err), 0);
  assert_true(h == 0x85944171f73967e8ULL);
  /* a controller reference with an empty uid and no uid of its own */
  h = 7;
  assert_int_equal(kcr_shard_object_hash(none, KCR_SHARD_KEY_OWNER_UID, &h, &err), KCR_EINVAL);
  assert_true(h == 7);
  json_decref(child);
  json_decref(plain);
  json_decref(none);
}

/* intersect keeps what both hold, equal compares the merged ranges */
static void test_sharding_set_intersect(void **state) {
  const kcr_shard_range a[] = {{0, 99}, {200, 299}, {1000, UINT64_MAX}};
  const kcr_shard_range b[] = {{50, 250}, {5000, 5000}};
  const kcr_shard_range want[] = {{50, 99}, {200, 250}, {5000, 5000}};
  kcr_shard_set_t *sa = NULL, *sb = NULL, *both = NULL, *w = NULL, *none = NULL, *empty = NULL;
  (void)state;
  assert_int_equal(kcr_shard_set_create(a, 3, &sa, NULL), 0);
  assert_int_equal(kcr_shard_set_create(b, 2, &sb, NULL), 0);
  assert_int_equal(kcr_shard_set_create(want, 3, &w, NULL), 0);
  assert_int_equal(kcr_shard_set_create(NULL, 0, &empty, NULL), 0);
  assert_int_equal(kcr_shard_set_intersect(sa, sb, &both, NULL), 0);
  assert_true(kcr_shard_set_equal(both, w));
  assert_false(kcr_shard_set_equal(both, sa));
  kcr_shard_set_destroy(both);
  assert_int_equal(kcr_shard_set_intersect(sb, sa, &both, NULL), 0); /* either order */
  assert_true(kcr_shard_set_equal(both, w));
  assert_int_equal(kcr_shard_set_intersect(sa, empty, &none, NULL), 0);
  assert_true(kcr_shard_set_equal(none, empty));
  kcr_shard_set_destroy(both);
  assert_int_equal(kcr_shard_set_intersect(sa, sa, &both, NULL), 0); /* with itself: itself */
  assert_true(kcr_shard_set_equal(both, sa));
  kcr_shard_set_destroy(both);
  assert_int_equal(kcr_shard_set_intersect(sa, NULL, &both, NULL), KCR_EINVAL);
  assert_null(both);
  kcr_shard_set_destroy(sa);
  kcr_shard_set_destroy(none);
  kcr_shard_set_destroy(w);
  kcr_shard_set_destroy(sb);
  kcr_shard_set_destroy(empty);
}

static void test_sharding_set_merges_and_contains(void **state) {
  const kcr_shard_range in[] = {
      {0x100, 0x1ff}, {0x0, 0xf}, {0x10, 0x1f}, {0x150, 0x160}, {0x1000, 0x1000}};
  const kcr_shard_range *r;
  kcr_shard_set_t *s = NULL, *c = NULL;
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_shard_set_create(in, 5, &s, &err), 0);
  assert_int_equal(kcr_shard_set_ranges(s, &r), 3);
  assert_true(r[0].first == 0 && r[0].last == 0x1f);      /* adjacent: merged */
  assert_true(r[1].first == 0x100 && r[1].last == 0x1ff); /* inside: absorbed */
  assert_true(r[2].first == 0x1000 && r[2].last == 0x1000);
  assert_true(kcr_shard_set_contains(s, 0));
  assert_true(kcr_shard_set_contains(s, 0x1f));
  assert_false(kcr_shard_set_contains(s, 0x20));
  assert_false(kcr_shard_set_contains(s, 0xff));
  assert_true(kcr_shard_set_contains(s, 0x100));
  assert_true(kcr_shard_set_contains(s, 0x1000));
  assert_false(kcr_shard_set_contains(s, 0x1001));
  assert_false(kcr_shard_set_contains(s, UINT64_MAX));
  assert_int_equal(kcr_shard_set_copy(s, &c, &err), 0);
  assert_int_equal(kcr_shard_set_ranges(c, NULL), 3);
  assert_true(kcr_shard_set_contains(c, 0x150));
  kcr_shard_set_destroy(c);
  kcr_shard_set_destroy(s);

  /* The whole space, in two touching halves, is one range. */
  const kcr_shard_range halves[] = {{0x8000000000000000ULL, UINT64_MAX},
                                    {0, 0x7fffffffffffffffULL}};
  assert_int_equal(kcr_shard_set_create(halves, 2, &s, &err), 0);
  assert_int_equal(kcr_shard_set_ranges(s, &r), 1);
  assert_true(r[0].first == 0 && r[0].last == UINT64_MAX);
  assert_true(kcr_shard_set_share(s) == 1.0);
  assert_true(kcr_shard_set_contains(s, UINT64_MAX));
  kcr_shard_set_destroy(s);

  /* Empty: owns nothing. */
  assert_int_equal(kcr_shard_set_create(NULL, 0, &s, &err), 0);
  assert_false(kcr_shard_set_contains(s, 0));
  assert_true(kcr_shard_set_share(s) == 0.0);
  kcr_shard_set_destroy(s);
  assert_false(kcr_shard_set_contains(NULL, 0));
  kcr_shard_set_destroy(NULL);

  /* Bad input. */
  const kcr_shard_range bad[] = {{0, 1}, {5, 4}};
  s = (kcr_shard_set_t *)1;
  assert_int_equal(kcr_shard_set_create(bad, 2, &s, &err), KCR_EINVAL);
  assert_null(s);
  assert_non_null(strstr(err.message, "range 1"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_set_create(NULL, 1, &s, &err), KCR_EINVAL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_set_copy(NULL, &s, &err), KCR_EINVAL);
}

static void test_sharding_selector_syntax(void **state) {
  const kcr_shard_range two[] = {{0, 0x7fffffffffffffffULL}, {0xc000000000000000ULL, UINT64_MAX}};
  const kcr_shard_range one[] = {{0x10, 0x1f}};
  kcr_shard_set_t *s = NULL;
  kcr_error_t err = {0};
  char *sel = NULL;
  (void)state;
  assert_int_equal(kcr_shard_set_create(two, 2, &s, &err), 0);
  assert_int_equal(kcr_shard_set_selector(s, KCR_SHARD_KEY_NAMESPACE, &sel, &err), 0);
  assert_string_equal(sel, "shardRange(object.metadata.namespace, '0x0000000000000000', "
                           "'0x8000000000000000') || "
                           "shardRange(object.metadata.namespace, '0xc000000000000000', "
                           "'0x10000000000000000')");
  kcr_free(sel);
  kcr_shard_set_destroy(s);
  assert_int_equal(kcr_shard_set_create(one, 1, &s, &err), 0);
  assert_int_equal(kcr_shard_set_selector(s, KCR_SHARD_KEY_UID, &sel, &err), 0);
  assert_string_equal(sel, "shardRange(object.metadata.uid, '0x0000000000000010', "
                           "'0x0000000000000020')");
  kcr_free(sel);
  /* the owner-uid key's text is only shown, never sent */
  assert_int_equal(kcr_shard_set_selector(s, KCR_SHARD_KEY_OWNER_UID, &sel, &err), 0);
  assert_string_equal(sel, "shardRange(object.metadata.ownerReferences[controller].uid, "
                           "'0x0000000000000010', '0x0000000000000020')");
  kcr_free(sel);
  assert_int_equal(kcr_shard_set_selector(s, (kcr_shard_key)5, &sel, &err), KCR_EINVAL);
  assert_null(sel);
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_set_selector(NULL, KCR_SHARD_KEY_UID, &sel, &err), KCR_EINVAL);
  kcr_error_clear(&err);
  kcr_shard_set_destroy(s);
  assert_int_equal(kcr_shard_set_create(NULL, 0, &s, &err), 0);
  assert_int_equal(kcr_shard_set_selector(s, KCR_SHARD_KEY_UID, &sel, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "empty"));
  kcr_shard_set_destroy(s);
}

/* names writes n replica identities (hostname_uuid, as leader election makes
 * them) seeded by trial into buf and pointers to them into out. */
static void names(unsigned trial, size_t n, char buf[][64], const char **out) {
  uint64_t x = 0x9e3779b97f4a7c15ULL * (trial + 1);
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    snprintf(buf[i], 64, "kcr-operator-6d4cf56db6-%05u_%016llx-%u", (unsigned)(x % 100000),
             (unsigned long long)x, (unsigned)(i % 100));
    out[i] = buf[i];
  }
}

/* ring_of makes a ring or fails the test. */
static kcr_shard_ring_t *ring_of(const char **m, size_t n, kcr_shard_ring_layout layout,
                                 unsigned vnodes) {
  kcr_shard_ring_options o = {.layout = layout, .vnodes = vnodes};
  kcr_shard_ring_t *r = NULL;
  kcr_error_t err = {0};
  if (kcr_shard_ring_create(m, n, &o, &r, &err) != 0)
    fail_msg("ring: %s", err.message);
  return r;
}

/* shares fills share[i] with member m[i]'s share of r and checks that the sets
 * tile the space and agree with kcr_shard_ring_owner at their edges. */
static void shares(const kcr_shard_ring_t *r, const char **m, size_t n, double *share) {
  double sum = 0.0;
  size_t nranges = 0;
  for (size_t i = 0; i < n; i++) {
    kcr_shard_set_t *s = NULL;
    const kcr_shard_range *rg;
    size_t k;
    kcr_error_t err = {0};
    assert_int_equal(kcr_shard_ring_set(r, m[i], &s, &err), 0);
    k = kcr_shard_set_ranges(s, &rg);
    nranges += k;
    for (size_t j = 0; j < k; j++) {
      assert_string_equal(kcr_shard_ring_owner(r, rg[j].first), m[i]);
      assert_string_equal(kcr_shard_ring_owner(r, rg[j].last), m[i]);
    }
    share[i] = kcr_shard_set_share(s);
    sum += share[i];
    kcr_shard_set_destroy(s);
  }
  assert_true(fabs(sum - 1.0) < 1e-9);
  assert_true(nranges >= n);
}

static void test_sharding_ring_deterministic(void **state) {
  const char *a[] = {"r-1", "r-2", "r-3", "r-4"}, *b[] = {"r-3", "r-1", "r-4", "r-2"};
  (void)state;
  for (int layout = 0; layout < 2; layout++) {
    kcr_shard_ring_t *x = ring_of(a, 4, (kcr_shard_ring_layout)layout, 0);
    kcr_shard_ring_t *y = ring_of(b, 4, (kcr_shard_ring_layout)layout, 0);
    assert_true(kcr_shard_ring_moved(x, y) == 0.0);
    for (uint64_t h = 0, k = 0; k < 10000; k++, h += 0x0123456789abcdefULL)
      assert_string_equal(kcr_shard_ring_owner(x, h), kcr_shard_ring_owner(y, h));
    assert_int_equal(kcr_shard_ring_size(x), 4);
    assert_string_equal(kcr_shard_ring_member(x, 0), "r-1");
    assert_null(kcr_shard_ring_member(x, 4));
    kcr_shard_ring_destroy(x);
    kcr_shard_ring_destroy(y);
  }
}

static void test_sharding_ring_contiguous_layout(void **state) {
  const char *m[] = {"b", "a", "c"};
  kcr_shard_ring_t *r = ring_of(m, 3, KCR_SHARD_RING_CONTIGUOUS, 0);
  kcr_shard_set_t *s = NULL;
  const kcr_shard_range *rg;
  kcr_error_t err = {0};
  char *sel = NULL;
  (void)state;
  assert_int_equal(kcr_shard_ring_set(r, "a", &s, &err), 0);
  assert_int_equal(kcr_shard_set_ranges(s, &rg), 1);
  assert_true(rg[0].first == 0 && rg[0].last == 0x5555555555555554ULL);
  kcr_shard_set_destroy(s);
  assert_int_equal(kcr_shard_ring_set(r, "c", &s, &err), 0);
  assert_int_equal(kcr_shard_set_selector(s, KCR_SHARD_KEY_NAMESPACE, &sel, &err), 0);
  assert_string_equal(sel, "shardRange(object.metadata.namespace, '0xaaaaaaaaaaaaaaaa', "
                           "'0x10000000000000000')");
  kcr_free(sel);
  kcr_shard_set_destroy(s);
  /* A stranger owns nothing. */
  assert_int_equal(kcr_shard_ring_set(r, "zz", &s, &err), 0);
  assert_int_equal(kcr_shard_set_ranges(s, NULL), 0);
  kcr_shard_set_destroy(s);
  kcr_shard_ring_destroy(r);
}

/* owned_keys: how many of keys[0, n) member owns in r. */
static size_t owned_keys(const kcr_shard_ring_t *r, const char *member, const uint64_t *keys,
                         size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++)
    c += strcmp(kcr_shard_ring_owner(r, keys[i]), member) == 0;
  return c;
}

/*
 * Balanced: names that differ only in their last characters hash close
 * together (a hash ring gives them to one or two members), yet each of three
 * members owns exactly ten of thirty; repeats count once; fewer keys than
 * members leave some with nothing while the ranges still tile the space; no
 * keys splits as contiguous; one more key moves at most a few.
 */
static void test_sharding_ring_balanced_layout(void **state) {
  const char *three[] = {"r-b", "r-a", "r-c"};
  uint64_t keys[31], two[2];
  kcr_shard_ring_options o = {.layout = KCR_SHARD_RING_BALANCED};
  kcr_shard_ring_options bad = {.layout = KCR_SHARD_RING_BALANCED, .nkeys = 3};
  kcr_shard_ring_options virt = {.layout = KCR_SHARD_RING_VIRTUAL};
  kcr_shard_ring_t *r = NULL, *r2 = NULL, *hashed = NULL, *contig;
  kcr_shard_set_t *s = NULL;
  kcr_error_t err = {0};
  size_t most = 0;
  double share = 0;
  (void)state;
  for (int i = 0; i < 31; i++) {
    char ns[32];
    snprintf(ns, sizeof(ns), "shard-apps-%02d", i);
    keys[i] = kcr_shard_hash(ns, strlen(ns));
  }
  /* the hash ring's split of the first 30: lopsided */
  assert_int_equal(kcr_shard_ring_create(three, 3, &virt, &hashed, &err), 0);
  for (int m = 0; m < 3; m++) {
    size_t c = owned_keys(hashed, three[m], keys, 30);
    most = c > most ? c : most;
  }
  print_message("hash ring: the largest member owns %zu of 30 namespaces\n", most);
  assert_true(most >= 20);
  kcr_shard_ring_destroy(hashed);

  o.keys = keys;
  o.nkeys = 30;
  assert_int_equal(kcr_shard_ring_create(three, 3, &o, &r, &err), 0);
  for (int m = 0; m < 3; m++) {
    assert_int_equal(owned_keys(r, three[m], keys, 30), 10);
    assert_int_equal(kcr_shard_ring_set(r, three[m], &s, &err), 0);
    share += kcr_shard_set_share(s);
    kcr_shard_set_destroy(s);
  }
  assert_true(share > 0.999999 && share < 1.000001);      /* a tiling */
  assert_string_equal(kcr_shard_ring_owner(r, 0), "r-a"); /* name order along the keys */
  assert_string_equal(kcr_shard_ring_owner(r, UINT64_MAX), "r-c");

  /* one more namespace: a ring made again moves one boundary's worth */
  o.nkeys = 31;
  assert_int_equal(kcr_shard_ring_create(three, 3, &o, &r2, &err), 0);
  for (int m = 0; m < 3; m++) {
    size_t c = owned_keys(r2, three[m], keys, 31);
    assert_true(c == 10 || c == 11);
  }
  {
    size_t moved = 0;
    for (int i = 0; i < 30; i++)
      moved += strcmp(kcr_shard_ring_owner(r, keys[i]), kcr_shard_ring_owner(r2, keys[i])) != 0;
    print_message("balanced: a 31st namespace moves %zu of the 30\n", moved);
    assert_true(moved <= 2);
  }
  kcr_shard_ring_destroy(r2);
  kcr_shard_ring_destroy(r);

  /* repeats count once; fewer keys than members */
  two[0] = two[1] = keys[5];
  o.keys = two;
  o.nkeys = 2;
  assert_int_equal(kcr_shard_ring_create(three, 3, &o, &r, &err), 0);
  assert_int_equal(owned_keys(r, "r-c", two, 1), 1); /* the one key: the last member's */
  assert_int_equal(kcr_shard_ring_set(r, "r-a", &s, &err), 0);
  assert_int_equal(kcr_shard_set_ranges(s, NULL), 0);
  kcr_shard_set_destroy(s);
  assert_int_equal(kcr_shard_ring_set(r, "r-c", &s, &err), 0);
  assert_true(kcr_shard_set_share(s) > 0.999999); /* the whole space */
  kcr_shard_set_destroy(s);
  kcr_shard_ring_destroy(r);

  /* no keys: as contiguous */
  o.keys = NULL;
  o.nkeys = 0;
  assert_int_equal(kcr_shard_ring_create(three, 3, &o, &r, &err), 0);
  contig = ring_of(three, 3, KCR_SHARD_RING_CONTIGUOUS, 0);
  assert_true(kcr_shard_ring_moved(r, contig) == 0.0);
  kcr_shard_ring_destroy(contig);
  kcr_shard_ring_destroy(r);

  r = (kcr_shard_ring_t *)1;
  assert_int_equal(kcr_shard_ring_create(three, 3, &bad, &r, &err), KCR_EINVAL);
  assert_null(r);
  assert_non_null(strstr(err.message, "3 keys but no array"));
}

static void test_sharding_ring_empty_and_bad(void **state) {
  const char *dup[] = {"a", "b", "a"}, *empty[] = {"a", ""}, *null[] = {"a", NULL};
  kcr_shard_ring_options big = {.layout = KCR_SHARD_RING_VIRTUAL,
                                .vnodes = KCR_SHARD_RING_VNODES_MAX + 1};
  kcr_shard_ring_options odd = {.layout = (kcr_shard_ring_layout)7};
  kcr_shard_ring_t *r = NULL, *one;
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_shard_ring_create(NULL, 0, NULL, &r, &err), 0);
  assert_null(kcr_shard_ring_owner(r, 42));
  one = ring_of(dup, 1, KCR_SHARD_RING_VIRTUAL, 0);
  assert_true(kcr_shard_ring_moved(r, r) == 0.0);
  assert_true(kcr_shard_ring_moved(r, one) == 1.0);
  assert_string_equal(kcr_shard_ring_owner(one, 0), "a");
  assert_string_equal(kcr_shard_ring_owner(one, UINT64_MAX), "a");
  kcr_shard_ring_destroy(one);
  kcr_shard_ring_destroy(r);
  r = (kcr_shard_ring_t *)1;
  assert_int_equal(kcr_shard_ring_create(dup, 3, NULL, &r, &err), KCR_EINVAL);
  assert_null(r);
  assert_non_null(strstr(err.message, "'a' is named twice"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_ring_create(empty, 2, NULL, &r, &err), KCR_EINVAL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_ring_create(null, 2, NULL, &r, &err), KCR_EINVAL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_ring_create(dup, 2, &big, &r, &err), KCR_EINVAL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_ring_create(dup, 2, &odd, &r, &err), KCR_EINVAL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_ring_create(NULL, 2, NULL, &r, &err), KCR_EINVAL);
}

/* On a virtual ring a join moves hashes only to the joiner, a leave only away
 * from the leaver: every hash whose owner changed is the joiner's (leaver's). */
static void test_sharding_ring_minimal_movement(void **state) {
  char buf[11][64];
  const char *m[11];
  (void)state;
  for (unsigned trial = 0; trial < 5; trial++) {
    names(trial, 11, buf, m);
    for (size_t n = 3; n <= 10; n++) {
      kcr_shard_ring_t *a = ring_of(m, n, KCR_SHARD_RING_VIRTUAL, 0);
      kcr_shard_ring_t *b = ring_of(m, n + 1, KCR_SHARD_RING_VIRTUAL, 0);
      kcr_shard_set_t *joiner = NULL;
      kcr_error_t err = {0};
      assert_int_equal(kcr_shard_ring_set(b, m[n], &joiner, &err), 0);
      /* what moved is exactly what the joiner holds */
      assert_true(fabs(kcr_shard_ring_moved(a, b) - kcr_shard_set_share(joiner)) < 1e-9);
      for (uint64_t h = 0x5bd1e995, k = 0; k < 20000; k++, h = h * 6364136223846793005ULL + 1) {
        const char *oa = kcr_shard_ring_owner(a, h), *ob = kcr_shard_ring_owner(b, h);
        if (strcmp(oa, ob) != 0)
          assert_string_equal(ob, m[n]);
      }
      kcr_shard_set_destroy(joiner);
      kcr_shard_ring_destroy(a);
      kcr_shard_ring_destroy(b);
    }
  }
}

/* Balance bounds at the default 64 points: over 20 sets of names at 3, 5 and
 * 10 members no member holds more than 1.6 times or less than 0.5 times a fair
 * share (the measured extremes are printed by test_sharding_measure). The
 * contiguous layout is exact. */
static void test_sharding_ring_balance_bounds(void **state) {
  char buf[10][64];
  const char *m[10];
  const size_t sizes[] = {3, 5, 10};
  double share[10];
  (void)state;
  for (unsigned trial = 0; trial < 20; trial++) {
    names(trial, 10, buf, m);
    for (size_t si = 0; si < 3; si++) {
      size_t n = sizes[si];
      kcr_shard_ring_t *v = ring_of(m, n, KCR_SHARD_RING_VIRTUAL, 0);
      kcr_shard_ring_t *c = ring_of(m, n, KCR_SHARD_RING_CONTIGUOUS, 0);
      shares(v, m, n, share);
      for (size_t i = 0; i < n; i++) {
        assert_true(share[i] * (double)n < 1.6);
        assert_true(share[i] * (double)n > 0.5);
      }
      shares(c, m, n, share);
      for (size_t i = 0; i < n; i++)
        assert_true(fabs(share[i] * (double)n - 1.0) < 1e-9);
      kcr_shard_ring_destroy(v);
      kcr_shard_ring_destroy(c);
    }
  }
}

typedef struct stats {
  double sum, sumsq, min, max;
  int n;
} stats;

static void stat_add(stats *s, double x) {
  if (s->n == 0 || x < s->min)
    s->min = x;
  if (s->n == 0 || x > s->max)
    s->max = x;
  s->sum += x;
  s->sumsq += x * x;
  s->n++;
}

static double stat_mean(const stats *s) {
  return s->sum / s->n;
}
static double stat_sd(const stats *s) {
  double m = stat_mean(s), v = s->sumsq / s->n - m * m;
  return v > 0 ? sqrt(v) : 0.0;
}

/* The measurement of docs/design.md ("Sharding"): for each layout and for 3, 5
 * and 10 members, over 50 sets of names: the largest share over the smallest,
 * the standard deviation of the shares relative to a fair share, the space that
 * moves when one member joins (n -> n+1) and when one leaves (n -> n-1, each
 * member in turn), against the ideal 1/(n+1) and 1/n, and the ranges per member
 * (what the selector costs). Printed, not asserted: the bounds are above. */
static void test_sharding_measure(void **state) {
  static const struct {
    kcr_shard_ring_layout layout;
    unsigned vnodes;
    const char *name;
  } layouts[] = {{KCR_SHARD_RING_CONTIGUOUS, 0, "contiguous"},
                 {KCR_SHARD_RING_VIRTUAL, 16, "virtual/16"},
                 {KCR_SHARD_RING_VIRTUAL, 64, "virtual/64"},
                 {KCR_SHARD_RING_VIRTUAL, 256, "virtual/256"}};
  const size_t sizes[] = {3, 5, 10};
  char buf[11][64];
  const char *m[11], *rest[11];
  double share[11];
  (void)state;
  printf("layout        n  max/min(mean,worst)  sd/fair  join-moved(ideal)  leave-moved(ideal)  "
         "ranges/member\n");
  for (size_t li = 0; li < 4; li++)
    for (size_t si = 0; si < 3; si++) {
      size_t n = sizes[si];
      stats ratio = {0}, sd = {0}, join = {0}, leave = {0}, ranges = {0};
      for (unsigned trial = 0; trial < 50; trial++) {
        kcr_shard_ring_t *r, *j;
        double lo = 2, hi = 0, s2 = 0;
        names(1000 + trial, n + 1, buf, m);
        r = ring_of(m, n, layouts[li].layout, layouts[li].vnodes);
        j = ring_of(m, n + 1, layouts[li].layout, layouts[li].vnodes);
        shares(r, m, n, share);
        for (size_t i = 0; i < n; i++) {
          double f = share[i] * (double)n;
          lo = f < lo ? f : lo;
          hi = f > hi ? f : hi;
          s2 += (f - 1) * (f - 1);
        }
        stat_add(&ratio, hi / lo);
        stat_add(&sd, sqrt(s2 / (double)n));
        stat_add(&join, kcr_shard_ring_moved(r, j));
        for (size_t out = 0; out < n; out++) {
          size_t k = 0;
          kcr_shard_ring_t *l;
          for (size_t i = 0; i < n; i++)
            if (i != out)
              rest[k++] = m[i];
          l = ring_of(rest, n - 1, layouts[li].layout, layouts[li].vnodes);
          stat_add(&leave, kcr_shard_ring_moved(r, l));
          kcr_shard_ring_destroy(l);
        }
        for (size_t i = 0; i < n; i++) {
          kcr_shard_set_t *s = NULL;
          kcr_error_t err = {0};
          assert_int_equal(kcr_shard_ring_set(r, m[i], &s, &err), 0);
          stat_add(&ranges, (double)kcr_shard_set_ranges(s, NULL));
          kcr_shard_set_destroy(s);
        }
        kcr_shard_ring_destroy(r);
        kcr_shard_ring_destroy(j);
      }
      printf("%-12s %2zu  %5.2f, %5.2f         %5.3f    %5.3f (%5.3f)      %5.3f (%5.3f)       "
             "%6.1f\n",
             layouts[li].name, n, stat_mean(&ratio), ratio.max, stat_mean(&sd), stat_mean(&join),
             1.0 / (double)(n + 1), stat_mean(&leave), 1.0 / (double)n, stat_mean(&ranges));
      (void)stat_sd;
    }
}

static void test_sharding_alloc_failures(void **state) {
  const char *m[] = {"r-1", "r-2", "r-3"};
  const kcr_shard_range in[] = {{5, 9}, {0, 1}};
  kcr_shard_ring_options c = {.layout = KCR_SHARD_RING_CONTIGUOUS};
  kcr_shard_ring_t *r = NULL;
  kcr_shard_set_t *s = NULL, *s2 = NULL;
  char *sel = NULL;
  (void)state;
  KCR_TEST_ALLOC_LOOP(kcr_shard_ring_create(m, 3, NULL, &r, NULL),
                      (kcr_shard_ring_destroy(r), r = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_shard_ring_create(m, 3, &c, &r, NULL),
                      (kcr_shard_ring_destroy(r), r = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_shard_set_create(in, 2, &s, NULL), (kcr_shard_set_destroy(s), s = NULL));
  assert_int_equal(kcr_shard_ring_create(m, 3, NULL, &r, NULL), 0);
  KCR_TEST_ALLOC_LOOP(kcr_shard_ring_set(r, "r-2", &s, NULL), (void)0);
  KCR_TEST_ALLOC_LOOP(kcr_shard_set_copy(s, &s2, NULL), (kcr_shard_set_destroy(s2), s2 = NULL));
  KCR_TEST_ALLOC_LOOP(kcr_shard_set_selector(s, KCR_SHARD_KEY_NAMESPACE, &sel, NULL),
                      (kcr_free(sel), sel = NULL));
  kcr_shard_set_destroy(s);
  kcr_shard_ring_destroy(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sharding_fnv1a_vectors),
      cmocka_unit_test(test_sharding_object_hash),
      cmocka_unit_test(test_sharding_owner_uid_hash),
      cmocka_unit_test(test_sharding_set_merges_and_contains),
      cmocka_unit_test(test_sharding_set_intersect),
      cmocka_unit_test(test_sharding_selector_syntax),
      cmocka_unit_test(test_sharding_ring_deterministic),
      cmocka_unit_test(test_sharding_ring_contiguous_layout),
      cmocka_unit_test(test_sharding_ring_balanced_layout),
      cmocka_unit_test(test_sharding_ring_empty_and_bad),
      cmocka_unit_test(test_sharding_ring_minimal_movement),
      cmocka_unit_test(test_sharding_ring_balance_bounds),
      cmocka_unit_test(test_sharding_measure),
      cmocka_unit_test(test_sharding_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
