/* SPDX-License-Identifier: MIT */
/*
 * test_shard_member.c: shard membership by Leases (kcr/shard_member.h) without
 * a server: which Leases count as live members at a given wall time, and what
 * kcr_shard_member_create refuses. The renew-and-list loop runs against the
 * real API server in test_sharding_it.
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
      cmocka_unit_test(test_shard_member_create_refuses),
      cmocka_unit_test(test_shard_member_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
