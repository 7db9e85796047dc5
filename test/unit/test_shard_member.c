/* SPDX-License-Identifier: MIT */
/*
 * test_shard_member.c: shard membership by Leases (kcr/shard_member.h) without
 * a server: which Leases count as live members at a given wall time, and what
 * kcr_shard_member_create refuses, the ring's generation, and the handover's
 * rule for growing (which other Leases allow it). The renew-and-list loop runs
 * against the real API server in test_sharding_it, the handover in
 * test_shard_handover_it.
 */
#include <string.h>

#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/error.h"
#include "kcr/shard_member.h"
#include "kcr/time.h"
#include "manager/shard_member_internal.h"
#include "testutil.h"

static kcr_time_t at(const char *s) {
  kcr_time_t t;
  assert_int_equal(kcr_time_parse(s, strlen(s), &t, NULL), 0);
  return t;
}

static json_t *lease(const char *holder, const char *renew, int dur) {
  json_t *spec = json_object();
  if (holder)
    json_object_set_new(spec, "holderIdentity", json_string(holder));
  if (renew)
    json_object_set_new(spec, "renewTime", json_string(renew));
  if (dur)
    json_object_set_new(spec, "leaseDurationSeconds", json_integer(dur));
  return json_pack("{s:o}", "spec", spec);
}

static void test_shard_member_live_members(void **state) {
  json_t *items = json_array();
  const char *names[8];
  size_t n = 0;
  (void)state;
  json_array_append_new(items, lease("a", "2026-12-04T10:00:00.000000Z", 15)); /* live */
  json_array_append_new(items, lease("b", "2026-12-04T09:59:40.000000Z", 15)); /* expired */
  json_array_append_new(items, lease("", "2026-12-04T10:00:00.000000Z", 15));  /* released */
  json_array_append_new(items, lease("c", NULL, 15));                          /* no time */
  json_array_append_new(items, lease("d", "2026-12-04T10:00:00.000000Z", 0));  /* no duration */
  json_array_append_new(items, lease("e", "not a time", 15));
  json_array_append_new(items, lease("a", "2026-12-04T10:00:01.000000Z", 15)); /* twice */
  json_array_append_new(items, lease("f", "2026-12-04T09:59:50.000001Z", 10)); /* just live */
  json_array_append_new(items, lease("g", "2026-12-04T09:59:50.000000Z", 10)); /* just gone */
  json_array_append_new(items, json_pack("{s:{s:s,s:s,s:i}}", "spec", "holderIdentity", "h",
                                         "acquireTime", "2026-12-04T10:00:00Z",
                                         "leaseDurationSeconds", 15)); /* acquired, not renewed */
  assert_int_equal(kcr__shard_live_members(items, at("2026-12-04T10:00:00Z"), names, 8, &n), 0);
  assert_int_equal(n, 3);
  assert_string_equal(names[0], "a");
  assert_string_equal(names[1], "f");
  assert_string_equal(names[2], "h");
  assert_int_equal(kcr__shard_live_members(items, at("2026-12-04T10:00:00Z"), names, 2, &n),
                   KCR_ETOOBIG);
  assert_int_equal(kcr__shard_live_members(NULL, at("2026-12-04T10:00:00Z"), names, 8, &n), 0);
  assert_int_equal(n, 0);
  json_decref(items);
}

/* a ring Lease of holder with name, duration and the released annotation */
static json_t *ring_lease(const char *name, const char *holder, int dur, const char *released) {
  json_t *l = lease(holder, "2026-12-04T10:00:00.000000Z", dur);
  json_t *md = json_pack("{s:s}", "name", name);
  if (released)
    json_object_set_new(md, "annotations",
                        json_pack("{s:s}", KCR_SHARD_RELEASED_ANNOTATION, released));
  json_object_set_new(l, "metadata", md);
  return l;
}

/* unchanged_since: the test's observations: only "lease-c" has been seen
 * unchanged for 5 s. */
static bool unchanged_since(const char *name, int64_t ns, void *data) {
  (void)data;
  return strcmp(name, "lease-c") == 0 && ns <= 5 * KCR_NSEC_PER_SEC;
}

static void test_shard_member_grow_rule(void **state) {
  json_t *leases = json_array();
  (void)state;
  json_array_append_new(leases, ring_lease("lease-me", "me", 4, NULL)); /* our own: never waits */
  json_array_append_new(leases, ring_lease("lease-b", "b", 4, "00000000000000aa"));
  /* b released this generation, nobody else is there */
  assert_int_equal(
      kcr__shard_others_released(leases, "me", "00000000000000aa", unchanged_since, NULL), 1);
  /* another generation: b may still hold what it held */
  assert_int_equal(
      kcr__shard_others_released(leases, "me", "00000000000000bb", unchanged_since, NULL), 0);
  /* c has not released, but was seen unchanged for its 4 s: fenced */
  json_array_append_new(leases, ring_lease("lease-c", "c", 4, NULL));
  assert_int_equal(
      kcr__shard_others_released(leases, "me", "00000000000000aa", unchanged_since, NULL), 1);
  /* d has neither: wait; with a 10 s lease c waits too */
  json_array_append_new(leases, ring_lease("lease-d", "d", 4, "00000000000000bb"));
  assert_int_equal(
      kcr__shard_others_released(leases, "me", "00000000000000aa", unchanged_since, NULL), 0);
  json_array_remove(leases, 3);
  json_array_append_new(leases, ring_lease("lease-c", "c", 10, NULL));
  json_array_remove(leases, 2);
  assert_int_equal(
      kcr__shard_others_released(leases, "me", "00000000000000aa", unchanged_since, NULL), 0);
  /* nobody else: nothing to wait for */
  assert_int_equal(kcr__shard_others_released(NULL, "me", "x", unchanged_since, NULL), 1);
  json_decref(leases);
}

static void test_shard_member_generation(void **state) {
  const char *ab[] = {"a", "b"}, *ba[] = {"b", "a"}, *abc[] = {"a", "b", "c"};
  kcr_shard_ring_t *r1 = NULL, *r2 = NULL, *r3 = NULL;
  kcr_shard_ring_options o = {0}, contiguous = {.layout = KCR_SHARD_RING_CONTIGUOUS};
  char g1[17], g2[17], g3[17], g4[17];
  (void)state;
  assert_int_equal(kcr_shard_ring_create(ab, 2, NULL, &r1, NULL), 0);
  assert_int_equal(kcr_shard_ring_create(ba, 2, NULL, &r2, NULL), 0);
  assert_int_equal(kcr_shard_ring_create(abc, 3, NULL, &r3, NULL), 0);
  kcr__shard_generation(r1, &o, g1, sizeof(g1));
  kcr__shard_generation(r2, &o, g2, sizeof(g2));
  kcr__shard_generation(r3, &o, g3, sizeof(g3));
  kcr__shard_generation(r1, &contiguous, g4, sizeof(g4));
  assert_int_equal(strlen(g1), 16);
  assert_string_equal(g1, g2); /* the same members in any order: one name */
  assert_string_not_equal(g1, g3);
  assert_string_not_equal(g1, g4); /* another layout splits differently */
  {
    /* balanced: the keys move the boundaries, and so the generation */
    uint64_t k1[] = {1, 1ULL << 62, 1ULL << 63}, k2[] = {1, 1ULL << 61, 1ULL << 63};
    kcr_shard_ring_options b1 = {.layout = KCR_SHARD_RING_BALANCED, .keys = k1, .nkeys = 3};
    kcr_shard_ring_options b2 = {.layout = KCR_SHARD_RING_BALANCED, .keys = k2, .nkeys = 3};
    kcr_shard_ring_t *rb1 = NULL, *rb2 = NULL, *rb3 = NULL;
    char h1[17], h2[17], h3[17];
    assert_int_equal(kcr_shard_ring_create(ab, 2, &b1, &rb1, NULL), 0);
    assert_int_equal(kcr_shard_ring_create(ab, 2, &b2, &rb2, NULL), 0);
    assert_int_equal(kcr_shard_ring_create(ba, 2, &b1, &rb3, NULL), 0);
    kcr__shard_generation(rb1, &b1, h1, sizeof(h1));
    kcr__shard_generation(rb2, &b2, h2, sizeof(h2));
    kcr__shard_generation(rb3, &b1, h3, sizeof(h3));
    assert_string_not_equal(h1, h2);
    assert_string_equal(h1, h3);
    kcr_shard_ring_destroy(rb1);
    kcr_shard_ring_destroy(rb2);
    kcr_shard_ring_destroy(rb3);
  }
  kcr_shard_ring_destroy(r1);
  kcr_shard_ring_destroy(r2);
  kcr_shard_ring_destroy(r3);
}

static void test_shard_member_create_refuses(void **state) {
  kcr_shard_member_options o = {0};
  kcr_shard_member_t *m = (kcr_shard_member_t *)1;
  kcr_error_t err = {0};
  char longname[64];
  (void)state;
  assert_int_equal(kcr_shard_member_create(NULL, &m, &err), KCR_EINVAL);
  assert_null(m);
  o.client = (kcr_client_t *)&o; /* never called: creation only validates */
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_member_create(&o, &m, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "ring"));
  o.ring = "r";
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_member_create(&o, &m, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "lease_namespace"));
  o.lease_namespace = "ns";
  memset(longname, 'x', sizeof(longname) - 1);
  longname[sizeof(longname) - 1] = '\0';
  o.ring = longname;
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_member_create(&o, &m, &err), KCR_EINVAL);
  o.ring = "r";
  o.lease_duration_ns = 5 * KCR_NSEC_PER_SEC; /* not above the renew deadline's 10 s */
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_member_create(&o, &m, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "lease_duration > renew_deadline"));

  /* Accepted: a default identity, the Lease named by the ring and its hash. */
  o.lease_duration_ns = 0;
  kcr_error_clear(&err);
  assert_int_equal(kcr_shard_member_create(&o, &m, &err), 0);
  assert_non_null(strchr(kcr_shard_member_identity(m), '_'));
  assert_int_equal(strncmp(kcr_shard_member_lease_name(m), "r-", 2), 0);
  assert_int_equal(strlen(kcr_shard_member_lease_name(m)), 2 + 16);
  assert_false(kcr_shard_member_may_own(m)); /* never renewed */
  {
    kcr_shard_set_t *s = NULL;
    size_t members = 9;
    assert_int_equal(kcr_shard_member_set(m, &s, &members, &err), 0);
    assert_int_equal(kcr_shard_set_ranges(s, NULL), 0);
    assert_int_equal(members, 0);
    kcr_shard_set_destroy(s);
  }
  kcr_shard_member_destroy(m);
  o.identity = "replica-1";
  assert_int_equal(kcr_shard_member_create(&o, &m, &err), 0);
  assert_string_equal(kcr_shard_member_identity(m), "replica-1");
  kcr_shard_member_destroy(m);
}

static void test_shard_member_alloc_failures(void **state) {
  kcr_shard_member_options o = {0};
  kcr_shard_member_t *m = NULL;
  (void)state;
  o.client = (kcr_client_t *)&o;
  o.ring = "ring";
  o.lease_namespace = "ns";
  o.identity = "me";
  KCR_TEST_ALLOC_LOOP(kcr_shard_member_create(&o, &m, NULL),
                      (kcr_shard_member_destroy(m), m = NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shard_member_live_members),
      cmocka_unit_test(test_shard_member_grow_rule),
      cmocka_unit_test(test_shard_member_generation),
      cmocka_unit_test(test_shard_member_create_refuses),
      cmocka_unit_test(test_shard_member_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
