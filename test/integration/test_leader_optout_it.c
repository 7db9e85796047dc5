/* SPDX-License-Identifier: MIT */
/*
 * test_leader_optout_it.c: controllers that opt out of leader election
 * (kcr_controller_options.need_leader_election false) against the real
 * apiserver. Two managers in this process campaign for the same Lease; each
 * runs an opted-out controller ("everywhere") and a normal one ("leader") on
 * ConfigMaps:
 *
 *  - the opted-out controller reconciles on both, the normal one only on the
 *    leader; the standby's opted-out controller writes (a ConfigMap of its
 *    own) although its manager does not lead: it is not fenced;
 *  - the leader stops (releasing the Lease): the standby wins, and only then
 *    does its normal controller reconcile.
 *
 * The "never on the standby" assertion is made once the standby's opted-out
 * controller has reconciled the same object from the same informer, and
 * written after it: a running normal controller would have been handed the
 * same event at the same time.
 */
#define _POSIX_C_SOURCE 200809L
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

#include "kcr/kcr.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64], lease[64];
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};

static int group_setup(void **state) {
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0)
    return -1;
  snprintf(lease, sizeof(lease), "kcr-optout-%d", (int)getpid());
  return kcr_it_create_namespace(client, "kcr-optout", ns, sizeof(ns));
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_disconnect(env, config, client, ns);
  return 0;
}

/* replica: one manager, its two controllers' reconcile counts of "probe". */
typedef struct replica {
  const char *id;
  kcr_manager_t *m;
  pthread_t th;
  int rc;
  atomic_int everywhere, leader, wrote;
} replica_t;

static int on_everywhere(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                         kcr_result *res, void *data) {
  replica_t *r = data;
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  char name[64];
  json_t *obj, *out = NULL;
  int rc;
  (void)res;
  if (strcmp(req->name, "probe") != 0)
    return 0;
  atomic_fetch_add(&r->everywhere, 1);
  /* a write of this replica's own, leader or not */
  snprintf(name, sizeof(name), "seen-by-%s", r->id);
  obj = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                  "name", name, "namespace", req->ns);
  rc = c->ops->create(c, obj, &out, kcr_reconcile_err(ctx));
  json_decref(obj);
  json_decref(out);
  if (rc == 0 || kcr_error_is_already_exists(kcr_reconcile_err(ctx))) {
    atomic_store(&r->wrote, 1);
    return 0;
  }
  return rc;
}

static int on_leader(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  replica_t *r = data;
  (void)ctx;
  (void)res;
  if (strcmp(req->name, "probe") == 0)
    atomic_fetch_add(&r->leader, 1);
  return 0;
}

static void *run_main(void *arg) {
  replica_t *r = arg;
  r->rc = kcr_manager_run(r->m, NULL);
  return NULL;
}

static void start_replica(replica_t *r, const char *id) {
  static const bool no = false;
  kcr_manager_options mo;
  kcr_manager_serving_options so;
  kcr_controller_options co;
  kcr_controller_t *c;
  kcr_error_t err;
  memset(r, 0, sizeof(*r));
  r->id = id;
  memset(&mo, 0, sizeof(mo));
  mo.config = config;
  mo.no_signal_handlers = true;
  mo.default_namespace = ns;
  kcr_error_clear(&err);
  assert_int_equal(kcr_manager_create(&mo, &r->m, &err), 0);
  memset(&so, 0, sizeof(so));
  so.leader_elect = true;
  so.leader_election_id = lease;
  so.leader_election_namespace = ns;
  so.leader_election_release_on_cancel = true;
  so.lease_duration_ns = 4 * KCR_NSEC_PER_SEC;
  so.renew_deadline_ns = 3 * KCR_NSEC_PER_SEC;
  so.retry_period_ns = 500 * KCR_NSEC_PER_MSEC;
  assert_int_equal(kcr_manager_serve(r->m, &so, &err), 0);

  memset(&co, 0, sizeof(co));
  co.name = "everywhere";
  co.reconcile = on_everywhere;
  co.data = r;
  co.need_leader_election = &no;
  assert_int_equal(kcr_manager_add_controller(r->m, &co, &c, &err), 0);
  assert_int_equal(kcr_controller_for(c, &cm_gvk, NULL, &err), 0);
  memset(&co, 0, sizeof(co));
  co.name = "leader";
  co.reconcile = on_leader;
  co.data = r;
  assert_int_equal(kcr_manager_add_controller(r->m, &co, &c, &err), 0);
  assert_int_equal(kcr_controller_for(c, &cm_gvk, NULL, &err), 0);
  assert_int_equal(pthread_create(&r->th, NULL, run_main, r), 0);
}

static void stop_replica(replica_t *r) {
  kcr_manager_request_stop(r->m);
  pthread_join(r->th, NULL);
  assert_int_equal(r->rc, 0);
  kcr_manager_destroy(r->m);
}

/* wait_for waits up to 60 s for *v to be non-zero (or for the manager to
 * lead with v NULL). */
static int wait_for(atomic_int *v, kcr_manager_t *m) {
  for (int i = 0; i < 600; i++) {
    if (v ? atomic_load(v) != 0 : kcr_manager_started(m))
      return 1;
    kcr_it_sleep_ms(100);
  }
  return 0;
}

static void test_leader_optout_controller_runs_on_every_replica(void **state) {
  replica_t a, b;
  const char *probe[] = {"create", "configmap", "probe", "-n", ns, NULL};
  char *out = NULL;
  (void)state;

  start_replica(&a, "a");
  assert_true(wait_for(NULL, a.m)); /* a leads */
  start_replica(&b, "b");
  assert_int_equal(kcr_testenv_kubectl(env, probe, &out), 0);
  free(out);

  assert_true(wait_for(&a.everywhere, NULL));
  assert_true(wait_for(&a.leader, NULL));
  assert_true(wait_for(&b.everywhere, NULL));
  assert_true(wait_for(&b.wrote, NULL)); /* written on the standby: not fenced */
  print_message("a: everywhere %d leader %d; b (standby): everywhere %d leader %d\n",
                atomic_load(&a.everywhere), atomic_load(&a.leader), atomic_load(&b.everywhere),
                atomic_load(&b.leader));
  assert_false(kcr_manager_started(b.m));
  assert_int_equal(atomic_load(&b.leader), 0);

  /* the leader goes (releasing the Lease): b wins and its normal controller
   * starts, reconciling what its informer holds */
  stop_replica(&a);
  assert_true(wait_for(NULL, b.m));
  assert_true(wait_for(&b.leader, NULL));
  stop_replica(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leader_optout_controller_runs_on_every_replica),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
