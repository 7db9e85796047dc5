/* SPDX-License-Identifier: MIT */
/*
 * test_leader_warmup_it.c: warm standby replicas (kcr_manager_options.
 * enable_warmup, controller-runtime's EnableWarmup) against the real
 * apiserver. Two managers in this process campaign for one Lease, each with
 * one controller on the ConfigMaps of a namespace that holds N of them.
 *
 *  - a warm standby has started its informer and synced it, and its queue
 *    holds every ConfigMap's key, but it has reconciled nothing;
 *  - a cold standby (the default) has registered nothing: its queue is empty;
 *  - when the leader goes, the warm standby wins and reconciles the keys its
 *    queue already holds.
 *
 * The cold case runs first and is the control: the same wait that lets the
 * warm queue fill leaves the cold one empty.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
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

#define NOBJ 50

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};

static int group_setup(void **state) {
  static const kcr_gvr cms = {"", "v1", "configmaps"};
  (void)state;
  if (kcr_it_connect(&env, &config, &client) != 0)
    return -1;
  if (kcr_it_create_namespace(client, "kcr-warmup", ns, sizeof(ns)) != 0)
    return -1;
  for (int i = 0; i < NOBJ; i++) {
    char name[32];
    json_t *obj, *out = NULL;
    int rc;
    snprintf(name, sizeof(name), "cm-%d", i);
    obj = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                    "name", name, "namespace", ns);
    rc = kcr_client_create_object(client, &cms, ns, obj, NULL, &out, NULL);
    json_decref(obj);
    json_decref(out);
    if (rc != 0)
      return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_disconnect(env, config, client, ns);
  return 0;
}

typedef struct replica {
  kcr_manager_t *m;
  kcr_controller_t *c;
  pthread_t th;
  int rc;
  atomic_int reconciled; /* distinct cm-<i> reconciled */
  atomic_bool seen[NOBJ];
} replica_t;

static int on_reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                        void *data) {
  replica_t *r = data;
  char *end;
  long i;
  (void)ctx;
  (void)res;
  if (strncmp(req->name, "cm-", 3) != 0)
    return 0;
  i = strtol(req->name + 3, &end, 10);
  if (*end == '\0' && i >= 0 && i < NOBJ && !atomic_exchange(&r->seen[i], true))
    atomic_fetch_add(&r->reconciled, 1);
  return 0;
}

static void *run_main(void *arg) {
  replica_t *r = arg;
  r->rc = kcr_manager_run(r->m, NULL);
  return NULL;
}

static void start_replica(replica_t *r, const char *lease, bool warm) {
  kcr_manager_options mo;
  kcr_manager_serving_options so;
  kcr_controller_options co;
  kcr_error_t err;
  memset(r, 0, sizeof(*r));
  memset(&mo, 0, sizeof(mo));
  mo.config = config;
  mo.no_signal_handlers = true;
  mo.default_namespace = ns;
  mo.enable_warmup = warm;
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
  co.name = "warmup";
  co.reconcile = on_reconcile;
  co.data = r;
  assert_int_equal(kcr_manager_add_controller(r->m, &co, &r->c, &err), 0);
  assert_int_equal(kcr_controller_for(r->c, &cm_gvk, NULL, &err), 0);
  assert_int_equal(pthread_create(&r->th, NULL, run_main, r), 0);
}

static void stop_replica(replica_t *r) {
  kcr_manager_request_stop(r->m);
  pthread_join(r->th, NULL);
  assert_int_equal(r->rc, 0);
  kcr_manager_destroy(r->m);
}

static bool wait_started(kcr_manager_t *m) {
  for (int i = 0; i < 600; i++) {
    if (kcr_manager_started(m))
      return true;
    kcr_it_sleep_ms(100);
  }
  return false;
}

/* wait_queue waits up to polls tenths of a second for the controller's queue
 * to hold n keys and returns its length. */
static size_t wait_queue(kcr_controller_t *c, size_t n, int polls) {
  size_t len = 0;
  for (int i = 0; i < polls; i++) {
    len = kcr_workqueue_len(kcr_controller_queue(c));
    if (len >= n)
      break;
    kcr_it_sleep_ms(100);
  }
  return len;
}

/* standby runs a leader and a standby (warm or cold) on a Lease of their own,
 * checks the standby's queue, then hands over. Returns the standby's queue
 * length before the handover. */
static size_t standby(bool warm) {
  char lease[64];
  replica_t a, b;
  size_t before;
  snprintf(lease, sizeof(lease), "kcr-warmup-%s-%d", warm ? "warm" : "cold", (int)getpid());
  start_replica(&a, lease, false);
  assert_true(wait_started(a.m));
  start_replica(&b, lease, warm);
  /* the leader reconciles every ConfigMap */
  for (int i = 0; i < 600 && atomic_load(&a.reconciled) < NOBJ; i++)
    kcr_it_sleep_ms(100);
  assert_int_equal(atomic_load(&a.reconciled), NOBJ);
  /* warm: until the queue holds every key (kube-root-ca.crt's too, when the
   * cluster has made it); cold: 3 s, for nothing to come */
  before = wait_queue(b.c, warm ? NOBJ : SIZE_MAX, warm ? 600 : 30);
  print_message("%s standby: queue %zu before the election, reconciled %d\n",
                warm ? "warm" : "cold", before, atomic_load(&b.reconciled));
  assert_false(kcr_manager_started(b.m));
  assert_int_equal(atomic_load(&b.reconciled), 0);

  stop_replica(&a); /* releases the Lease */
  assert_true(wait_started(b.m));
  for (int i = 0; i < 600 && atomic_load(&b.reconciled) < NOBJ; i++)
    kcr_it_sleep_ms(100);
  assert_int_equal(atomic_load(&b.reconciled), NOBJ);
  stop_replica(&b);
  return before;
}

static void test_leader_warmup_standby_syncs_before_election(void **state) {
  size_t cold, warm;
  (void)state;
  cold = standby(false); /* the control: same waits, nothing registered */
  warm = standby(true);
  assert_int_equal(cold, 0);
  assert_true(warm >= NOBJ);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leader_warmup_standby_syncs_before_election),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
