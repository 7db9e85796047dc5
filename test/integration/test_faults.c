/* SPDX-License-Identifier: MIT */
/*
 * Integration test of the fault-injection tools, with kubectl as the client:
 * kcr_faultproxy in front of the real kube-apiserver (forwarding, stall,
 * cut, refuse), scripts/cluster.sh restart-apiserver (same port, cluster
 * answers afterwards; the time it takes is printed) and compact (afterwards
 * a read at a resource version older than the compaction gets 410 Expired).
 *
 * Restarting the apiserver and compacting etcd disturb every client of the
 * cluster, so CTest runs this test with RUN_SERIAL.
 */
#define _POSIX_C_SOURCE 200809L

/* cmocka.h needs these first, in this order. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kcr_faultproxy.h"
#include "kcr_testenv.h"

/* How long the apiserver's watch cache may take to notice a compaction: it
 * polls every 15 s. */
#define COMPACT_NOTICE_S 45

struct fixture {
  kcr_testenv_t *env;
  kcr_faultproxy_t *proxy;
  char kubeconfig[4096]; /* points at the proxy */
  char kcflag[4200];     /* --kubeconfig=<kubeconfig> */
  char ns[64];
};

static struct fixture fx;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Run kubectl through the proxy: argv gets --kubeconfig=<proxy kubeconfig>
 * in front (kubectl takes the last --kubeconfig). Returns the exit status;
 * stdout to *out if out != NULL. */
static int kubectl_proxy(const char *const argv[], char **out) {
  const char *full[32];
  size_t n = 0;
  full[n++] = fx.kcflag;
  for (size_t i = 0; argv[i] != NULL; i++) {
    assert_true(n < 31);
    full[n++] = argv[i];
  }
  full[n] = NULL;
  return kcr_testenv_kubectl(fx.env, full, out);
}

/* `kubectl get ns -o name` through the proxy lists namespace/default. */
static void expect_get_ns_via_proxy(void) {
  const char *const argv[] = {"get", "ns", "-o", "name", "--request-timeout=20s", NULL};
  char *out = NULL;
  int rc = kubectl_proxy(argv, &out);
  assert_int_equal(rc, 0);
  assert_non_null(out);
  assert_non_null(strstr(out, "namespace/default"));
  free(out);
}

static int setup(void **state) {
  (void)state;
  if (kcr_testenv_start(&fx.env) != 0) {
    print_error("could not start or join a control plane\n");
    return -1;
  }
  int port = kcr_testenv_apiserver_port(fx.env);
  if (port <= 0 || kcr_faultproxy_start("127.0.0.1", port, &fx.proxy) != 0 ||
      kcr_testenv_write_kubeconfig_for_port(fx.env, kcr_faultproxy_port(fx.proxy), fx.kubeconfig,
                                            sizeof fx.kubeconfig) != 0) {
    print_error("could not put a proxy in front of the apiserver (port %d)\n", port);
    kcr_faultproxy_stop(fx.proxy);
    kcr_testenv_stop(fx.env);
    return -1;
  }
  snprintf(fx.kcflag, sizeof fx.kcflag, "--kubeconfig=%s", fx.kubeconfig);
  snprintf(fx.ns, sizeof fx.ns, "kcr-faults-%ld-%ld", (long)getpid(), (long)time(NULL));
  const char *const argv[] = {"create", "namespace", fx.ns, NULL};
  if (kcr_testenv_kubectl(fx.env, argv, NULL) != 0) {
    print_error("could not create namespace %s\n", fx.ns);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (fx.env == NULL)
    return 0;
  const char *const argv[] = {"delete",       "namespace",          fx.ns,
                              "--wait=false", "--ignore-not-found", NULL};
  kcr_testenv_kubectl(fx.env, argv, NULL);
  kcr_faultproxy_stop(fx.proxy);
  fx.proxy = NULL;
  if (fx.kubeconfig[0] != '\0')
    unlink(fx.kubeconfig);
  int rc = kcr_testenv_stop(fx.env);
  fx.env = NULL;
  return rc;
}

static void test_faults_proxy_forwards(void **state) {
  (void)state;
  unsigned long before = kcr_faultproxy_connections(fx.proxy);
  expect_get_ns_via_proxy();
  assert_true(kcr_faultproxy_connections(fx.proxy) > before);
  /* kubectl has exited: its connection ends on both sides. */
  for (double deadline = now_s() + 10; kcr_faultproxy_active(fx.proxy) != 0;) {
    assert_true(now_s() < deadline);
    pause_ms(20);
  }
}

static void test_faults_stall(void **state) {
  (void)state;
  expect_get_ns_via_proxy(); /* discovery cached for the proxy's address */

  kcr_faultproxy_stall(fx.proxy, true);
  const char *const argv[] = {"get", "ns", "-o", "name", "--request-timeout=2s", NULL};
  double t0 = now_s();
  int rc = kubectl_proxy(argv, NULL);
  double took = now_s() - t0;
  print_message("stalled: kubectl --request-timeout=2s exited %d after %.2f s\n", rc, took);
  assert_true(rc != 0);
  assert_true(took >= 1.5 && took < 30);
  /* The stalled connection is still open: nothing read, nothing closed. */
  assert_true(kcr_faultproxy_active(fx.proxy) >= 1);

  kcr_faultproxy_stall(fx.proxy, false);
  expect_get_ns_via_proxy();
}

/* A watch through the proxy, run in a thread: kubectl blocks until the watch
 * ends (a cut, or the 30 s request timeout). */
struct watch_run {
  int rc;
  double ended;
};

static void *watch_main(void *arg) {
  struct watch_run *w = arg;
  const char *const argv[] = {"get", "ns", "--watch", "-o", "name", "--request-timeout=30s", NULL};
  w->rc = kubectl_proxy(argv, NULL);
  w->ended = now_s();
  return NULL;
}

static void test_faults_cut(void **state) {
  (void)state;
  kcr_faultproxy_cut(fx.proxy); /* leftovers of earlier tests, if any */

  struct watch_run w = {-2, 0};
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, watch_main, &w), 0);
  for (double deadline = now_s() + 20; kcr_faultproxy_active(fx.proxy) < 1;) {
    assert_true(now_s() < deadline);
    pause_ms(20);
  }
  pause_ms(1000); /* let the list finish and the watch start */
  assert_true(kcr_faultproxy_active(fx.proxy) >= 1);

  double cut_at = now_s();
  int closed = kcr_faultproxy_cut(fx.proxy);
  assert_true(closed >= 1);
  pthread_join(thread, NULL);
  print_message("cut %d connection(s); kubectl --watch exited %d, %.2f s after the cut\n", closed,
                w.rc, w.ended - cut_at);
  /* kubectl notices the reset at once, instead of running into its 30 s timeout. */
  assert_true(w.ended - cut_at < 20);
  for (double deadline = now_s() + 10; kcr_faultproxy_active(fx.proxy) != 0;) {
    assert_true(now_s() < deadline);
    pause_ms(20);
  }
  expect_get_ns_via_proxy(); /* new connections are still forwarded */
}

static void test_faults_refuse(void **state) {
  (void)state;
  kcr_faultproxy_refuse(fx.proxy, true);
  unsigned long before = kcr_faultproxy_connections(fx.proxy);
  const char *const argv[] = {"get", "ns", "-o", "name", "--request-timeout=5s", NULL};
  assert_true(kubectl_proxy(argv, NULL) != 0);
  assert_true(kcr_faultproxy_connections(fx.proxy) > before);
  assert_int_equal(kcr_faultproxy_active(fx.proxy), 0);
  kcr_faultproxy_refuse(fx.proxy, false);
  expect_get_ns_via_proxy();
}

static void test_faults_restart_apiserver(void **state) {
  (void)state;
  int port = kcr_testenv_apiserver_port(fx.env);
  assert_true(port > 0);

  double t0 = now_s();
  assert_int_equal(kcr_testenv_restart_apiserver(fx.env), 0);
  double took = now_s() - t0;
  print_message("restart-apiserver took %.2f s (port %d)\n", took, port);

  assert_int_equal(kcr_testenv_apiserver_port(fx.env), port);
  assert_int_equal(kcr_testenv_wait_ready(fx.env, 60), 0);
  const char *const argv[] = {"get", "namespace", "default", "-o", "name", NULL};
  char *out = NULL;
  assert_int_equal(kcr_testenv_kubectl(fx.env, argv, &out), 0);
  assert_non_null(out);
  assert_non_null(strstr(out, "namespace/default"));
  free(out);
  /* The proxy's target address is unchanged, so it works as before. */
  expect_get_ns_via_proxy();
}

/* The resourceVersion of a new ConfigMap `name` in the test namespace. */
static unsigned long long create_configmap(const char *name) {
  const char *const create[] = {"create", "configmap", name, "-n", fx.ns, NULL};
  assert_int_equal(kcr_testenv_kubectl(fx.env, create, NULL), 0);
  const char *const get[] = {
      "get", "configmap", name, "-n", fx.ns, "-o", "jsonpath={.metadata.resourceVersion}", NULL};
  char *out = NULL;
  assert_int_equal(kcr_testenv_kubectl(fx.env, get, &out), 0);
  assert_non_null(out);
  unsigned long long rv = strtoull(out, NULL, 10);
  free(out);
  assert_true(rv > 0);
  return rv;
}

static void test_faults_compact(void **state) {
  (void)state;
  unsigned long long old_rv = create_configmap("before-compaction");
  create_configmap("after-it"); /* the store moves past old_rv */

  char path[512];
  snprintf(path, sizeof path,
           "--raw=/api/v1/namespaces/%s/configmaps?resourceVersion=%llu"
           "&resourceVersionMatch=Exact",
           fx.ns, old_rv);
  const char *const exact[] = {"get", path, NULL};
  char *out = NULL;
  /* Before compaction a list at exactly old_rv is served. */
  assert_int_equal(kcr_testenv_kubectl(fx.env, exact, &out), 0);
  assert_non_null(strstr(out, "before-compaction"));
  free(out);

  char rev[32];
  assert_int_equal(kcr_testenv_compact(fx.env, rev, sizeof rev), 0);
  unsigned long long compacted = strtoull(rev, NULL, 10);
  print_message("compacted etcd to revision %s (old resourceVersion %llu)\n", rev, old_rv);
  assert_true(compacted > old_rv);

  /* Afterwards the same list is 410 Expired, once the apiserver's watch cache
   * has dropped its snapshots below the compacted revision. */
  double t0 = now_s();
  bool expired = false;
  while (!expired) {
    out = NULL;
    int rc = kcr_testenv_kubectl_combined(fx.env, exact, &out);
    expired = rc != 0 && out != NULL &&
              (strstr(out, "(Expired)") != NULL || strstr(out, "too old") != NULL);
    if (!expired && now_s() - t0 > COMPACT_NOTICE_S)
      print_error("still served %d s after compaction: rc %d, %s\n", COMPACT_NOTICE_S, rc,
                  out != NULL ? out : "(none)");
    free(out);
    assert_true(expired || now_s() - t0 <= COMPACT_NOTICE_S);
    if (!expired)
      pause_ms(500);
  }
  print_message("list at resourceVersion %llu: 410 Expired %.1f s after compaction\n", old_rv,
                now_s() - t0);

  /* A watch from resourceVersion 1 gets a 410 ERROR event. */
  const char *const watch[] = {"get",
                               "--raw=/api/v1/namespaces/default/configmaps?watch=1"
                               "&resourceVersion=1",
                               "--request-timeout=20s", NULL};
  out = NULL;
  assert_int_equal(kcr_testenv_kubectl(fx.env, watch, &out), 0);
  assert_non_null(out);
  assert_non_null(strstr(out, "\"code\":410"));
  assert_non_null(strstr(out, "too old resource version"));
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_faults_proxy_forwards),
      cmocka_unit_test(test_faults_stall),
      cmocka_unit_test(test_faults_cut),
      cmocka_unit_test(test_faults_refuse),
      cmocka_unit_test(test_faults_restart_apiserver),
      cmocka_unit_test(test_faults_compact),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
