/* SPDX-License-Identifier: MIT */
/*
 * test_reconcile_deadline_it.c: a reconcile's timeout bounds the requests it
 * makes, as a Go context's deadline does (issue 25, item 9b), against the real
 * apiserver. The manager talks to the apiserver through kcr_faultproxy; a
 * controller with reconcile_timeout_ns reconciles one ConfigMap. Its
 * reconciler writes once with the proxy open (the connection is up), then
 * stalls the proxy and writes again: that request cannot finish, so it must
 * end when the reconcile's deadline passes, with KCR_ETIMEDOUT; a third write,
 * after the deadline, must fail at once and never reach the server (checked
 * with a direct client once the proxy flows again). The reconcile's API
 * reader (kcr_reconcile_api_reader) reads from the server before the stall
 * and is refused at once after the deadline, as apiReader.Get(ctx) with the
 * reconcile's context. Without the deadline on
 * the reconcile's token the stalled write hangs until the proxy is opened (the
 * test opens it after 60 s and fails).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
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
#include "kcr/clock.h"
#include "kcr/config.h"
#include "kcr/manager.h"
#include "kcr/objclient.h"
#include "kcr_faultproxy.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

#define TIMEOUT_NS (2 * KCR_NSEC_PER_SEC) /* the reconcile's timeout */

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvk cm_gvk = {"", "v1", "ConfigMap"};

static kcr_testenv_t *env;
static kcr_rest_config_t *direct_cfg, *proxied_cfg;
static kcr_client_t *direct;
static kcr_faultproxy_t *proxy;
static char proxied_kubeconfig[512];
static char ns[64];

/* What the reconciler saw (written by the worker, read after done). */
static struct {
  atomic_bool done; /* the first reconcile of "trigger" has returned */
  int rc_before, rc_stalled, rc_after, rc_read_before, rc_read_after;
  char msg_stalled[KCR_ERROR_MESSAGE_MAX], msg_after[KCR_ERROR_MESSAGE_MAX];
  int64_t deadline, stalled_end; /* on the system clock */
  int64_t after_took;            /* ns the refused write took */
  int64_t token_deadline;
} seen;

static json_t *configmap(const char *name) {
  return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                   "metadata", "name", name, "namespace", ns, "data", "k", "v");
}

static int create_via(const kcr_objclient *c, const char *name, kcr_error_t *err) {
  json_t *obj = configmap(name);
  int rc = obj ? kcr_objclient_create(c, obj, NULL, err) : KCR_ENOMEM;
  json_decref(obj);
  return rc;
}

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  kcr_error_t err;
  int64_t t0;
  (void)res;
  (void)data;
  if (strcmp(req->name, "trigger") != 0 || atomic_load(&seen.done))
    return 0;
  seen.deadline = kcr_reconcile_deadline(ctx);
  seen.token_deadline = kcr_cancel_deadline(kcr_reconcile_cancel(ctx));
  /* With the proxy open: the connection is up and the kind is mapped. */
  seen.rc_before = create_via(c, "before", NULL);
  {
    json_t *got = NULL;
    seen.rc_read_before =
        kcr_objclient_get(kcr_reconcile_api_reader(ctx), &cm_gvk, ns, "before", &got, NULL);
    json_decref(got);
  }
  /* Stalled: nothing moves either way until the deadline. */
  kcr_faultproxy_stall(proxy, true);
  kcr_error_clear(&err);
  seen.rc_stalled = create_via(c, "stalled", &err);
  seen.stalled_end = kcr_clock_now(kcr_clock_system());
  snprintf(seen.msg_stalled, sizeof(seen.msg_stalled), "%s", err.message);
  /* After the deadline: refused before anything is sent. */
  kcr_error_clear(&err);
  t0 = kcr_clock_now(kcr_clock_system());
  seen.rc_after = create_via(c, "after", &err);
  seen.after_took = kcr_clock_now(kcr_clock_system()) - t0;
  snprintf(seen.msg_after, sizeof(seen.msg_after), "%s", err.message);
  seen.rc_read_after =
      kcr_objclient_get(kcr_reconcile_api_reader(ctx), &cm_gvk, ns, "before", NULL, NULL);
  atomic_store(&seen.done, true);
  return 0;
}

static int setup(void **state) {
  kcr_error_t err = {0};
  (void)state;
  if (kcr_it_connect(&env, &direct_cfg, &direct) != 0)
    return -1;
  if (kcr_faultproxy_start("127.0.0.1", kcr_testenv_apiserver_port(env), &proxy) != 0 ||
      kcr_testenv_write_kubeconfig_for_port(env, kcr_faultproxy_port(proxy), proxied_kubeconfig,
                                            sizeof(proxied_kubeconfig)) != 0 ||
      kcr_rest_config_from_kubeconfig(proxied_kubeconfig, NULL, NULL, &proxied_cfg, &err) != 0) {
    fprintf(stderr, "proxy: %s\n", err.message);
    return -1;
  }
  return kcr_it_create_namespace(direct, "kcr-deadline", ns, sizeof(ns));
}

static int teardown(void **state) {
  (void)state;
  kcr_rest_config_unref(proxied_cfg);
  kcr_faultproxy_stop(proxy);
  if (proxied_kubeconfig[0])
    unlink(proxied_kubeconfig);
  kcr_it_disconnect(env, direct_cfg, direct, ns);
  return 0;
}

static void test_reconcile_deadline_bounds_requests(void **state) {
  kcr_manager_options mo = {0};
  kcr_controller_options co = {0};
  kcr_controller_t *c;
  kcr_it_runner r = {0};
  kcr_error_t err = {0};
  json_t *obj;
  bool timely;
  (void)state;

  mo.config = proxied_cfg;
  mo.default_namespace = ns;
  mo.no_signal_handlers = true;
  assert_int_equal(kcr_manager_create(&mo, &r.m, &err), 0);
  co.name = "deadline";
  co.reconcile = reconcile;
  co.reconcile_timeout_ns = TIMEOUT_NS;
  assert_int_equal(kcr_manager_add_controller(r.m, &co, &c, &err), 0);
  assert_int_equal(kcr_controller_for(c, &cm_gvk, NULL, &err), 0);
  assert_int_equal(kcr_it_runner_start(&r), 0);

  obj = configmap("trigger");
  assert_int_equal(kcr_client_create_object(direct, &configmaps, ns, obj, NULL, NULL, &err), 0);
  json_decref(obj);

  /* Bounded wait; without the feature the stalled write never returns while
   * the proxy stalls, so open it after 60 s to let the reconcile end. */
  for (int i = 0; i < 6000 && !atomic_load(&seen.done); i++)
    kcr_it_sleep_ms(10);
  timely = atomic_load(&seen.done);
  kcr_faultproxy_stall(proxy, false);
  for (int i = 0; i < 6000 && !atomic_load(&seen.done); i++)
    kcr_it_sleep_ms(10);
  assert_true(atomic_load(&seen.done));
  print_message("stalled write: %s (%s), ended %.3f s after the deadline; refused write: %s "
                "(%s) in %.3f ms\n",
                kcr_err_name(seen.rc_stalled), seen.msg_stalled,
                (double)(seen.stalled_end - seen.deadline) / 1e9, kcr_err_name(seen.rc_after),
                seen.msg_after, (double)seen.after_took / 1e6);
  if (!timely)
    fail_msg("the stalled write did not end at the reconcile's deadline");

  assert_int_equal(seen.rc_before, 0);
  assert_int_equal(seen.rc_read_before, 0);
  assert_true(seen.deadline > 0);
  assert_true(seen.token_deadline == seen.deadline); /* the same clock: the system's */
  /* In flight at the deadline: aborted there (not before), Go's
   * context.DeadlineExceeded. */
  assert_int_equal(seen.rc_stalled, KCR_ETIMEDOUT);
  assert_non_null(strstr(seen.msg_stalled, "deadline exceeded"));
  assert_true(seen.stalled_end >= seen.deadline);
  /* After the deadline: refused at once. */
  assert_int_equal(seen.rc_after, KCR_ETIMEDOUT);
  assert_non_null(strstr(seen.msg_after, "deadline exceeded"));
  assert_int_equal(seen.rc_read_after, KCR_ETIMEDOUT); /* the API reader carries it too */

  /* The proxy flows again: "before" is there, "after" never reached the
   * server. Whatever "stalled" did, nothing can still be on its way for
   * "after", so once "before" reads back a read of "after" is final. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(direct, &configmaps, ns, "before", NULL, NULL, &err), 0);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(direct, &configmaps, ns, "after", NULL, NULL, &err), KCR_EAPI);
  assert_true(kcr_error_is_not_found(&err));

  assert_int_equal(kcr_it_runner_stop(&r), 0);
  kcr_manager_destroy(r.m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reconcile_deadline_bounds_requests),
  };
  return cmocka_run_group_tests_name("reconcile_deadline_it", tests, setup, teardown);
}
