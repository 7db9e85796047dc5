/* SPDX-License-Identifier: MIT */
/*
 * test_leader_it.c: leader election, probes and metrics against the real
 * apiserver, with candidates in separate processes (leader_helper.c):
 *
 *  - two candidates: exactly one leads;
 *  - SIGKILL the leader: the other leads within leaseDuration + retryPeriod +
 *    jitter (measured and printed);
 *  - a third candidate joins; SIGTERM the leader: the lease is released and the
 *    standby leads within a few seconds (measured and printed);
 *  - across all of it, leadership intervals never overlap (each process logs
 *    acquire/lose with timestamps; a SIGKILLed leader's interval ends at the
 *    kill);
 *  - /healthz and /readyz answer, and /metrics passes Python's prometheus_client
 *    text parser (installed with pip by this test if missing);
 *  - events: a recorded event shows in `kubectl get events`, and a hot loop of
 *    1000 identical warnings becomes one Event with a series count of 1000.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include <jansson.h>

#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/events.h"
#include "kcr_faultproxy.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"

static kcr_testenv_t *env;
static char dir[128];
static char logpath[256];
static char lease[64];

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static pid_t spawn_with(const char *id, const char *kubeconfig, const char *lease_name) {
  char portfile[300];
  pid_t pid;
  snprintf(portfile, sizeof(portfile), "%s/%s.port", dir, id);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl(KCR_LEADER_HELPER, KCR_LEADER_HELPER, kubeconfig, "default", lease_name, id, logpath,
          portfile, (char *)NULL);
    _exit(127);
  }
  return pid;
}

static pid_t spawn(const char *id) {
  return spawn_with(id, kcr_testenv_kubeconfig(env), lease);
}

/* acquired_at returns the time id logged ACQUIRE, or 0. */
static long long event_at(const char *what, const char *id) {
  FILE *f = fopen(logpath, "r");
  char w[16], who[64], t[32], lost[8];
  long long found = 0;
  if (!f)
    return 0;
  while (fscanf(f, "%15s %63s %31s %7s", w, who, t, lost) == 4)
    if (strcmp(w, what) == 0 && strcmp(who, id) == 0)
      found = strtoll(t, NULL, 10);
  fclose(f);
  return found;
}

static long long wait_acquire(const char *id, int timeout_s) {
  for (int i = 0; i < timeout_s * 20; i++) {
    long long t = event_at("ACQUIRE", id);
    if (t)
      return t;
    sleep_ms(50);
  }
  return 0;
}

static int helper_port(const char *id) {
  char path[300];
  FILE *f;
  char buf[16];
  int port = 0;
  snprintf(path, sizeof(path), "%s/%s.port", dir, id);
  for (int i = 0; i < 100 && port == 0; i++) {
    f = fopen(path, "r");
    if (f) {
      if (fgets(buf, sizeof(buf), f))
        port = (int)strtol(buf, NULL, 10);
      fclose(f);
    }
    if (!port)
      sleep_ms(50);
  }
  return port;
}

static int group_setup(void **state) {
  (void)state;
  if (kcr_testenv_start(&env) != 0)
    return -1;
  snprintf(dir, sizeof(dir), "/tmp/kcr-leader-it-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(logpath, sizeof(logpath), "%s/leadership.log", dir);
  snprintf(lease, sizeof(lease), "kcr-leader-it-%ld", (long)getpid());
  return 0;
}

static int group_teardown(void **state) {
  char cmd[300];
  (void)state;
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  kcr_testenv_stop(env);
  return 0;
}

/* check_probes_and_metrics: curl the helper's endpoints; parse /metrics with
 * prometheus_client (installed by pip here when missing). */
static void check_probes_and_metrics(int port) {
  char cmd[2048];
  snprintf(cmd, sizeof(cmd),
           "python3 -c 'import prometheus_client' 2>/dev/null || "
           "python3 -m pip install --quiet --user prometheus_client 2>/dev/null || "
           "python3 -m pip install --quiet --user --break-system-packages prometheus_client");
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof(cmd),
           "python3 - <<'EOF'\n"
           "import urllib.request, sys\n"
           "from prometheus_client.parser import text_string_to_metric_families\n"
           "base = 'http://127.0.0.1:%d'\n"
           "for p in ('/healthz', '/readyz'):\n"
           "    r = urllib.request.urlopen(base + p)\n"
           "    assert r.status == 200 and r.read() == b'ok', p\n"
           "v = urllib.request.urlopen(base + '/healthz?verbose').read().decode()\n"
           "assert '[+]leader-election ok' in v and '[+]ping ok' in v, v\n"
           "r = urllib.request.urlopen(base + '/metrics')\n"
           "assert r.headers['Content-Type'].startswith('text/plain; version=0.0.4'), r.headers\n"
           "fams = {f.name: f for f in text_string_to_metric_families(r.read().decode())}\n"
           "for n in ('process_cpu_seconds', 'process_resident_memory_bytes', 'process_open_fds',\n"
           "          'process_max_fds', 'process_start_time_seconds', 'rest_client_requests',\n"
           "          'rest_client_request_duration_seconds', 'leader_election_master_status'):\n"
           "    assert n in fams, (n, sorted(fams))\n"
           "lead = [s for s in fams['leader_election_master_status'].samples]\n"
           "assert lead and lead[0].value == 1.0, lead\n"
           "codes = {s.labels['code'] for s in fams['rest_client_requests'].samples}\n"
           "assert '200' in codes or '201' in codes, codes\n"
           "print('metrics: %%d families parsed by prometheus_client' %% len(fams))\n"
           "EOF\n",
           port);
  assert_int_equal(system(cmd), 0);
}

typedef struct interval {
  char id[64];
  long long start, end;
} interval_t;

static void test_leader_failover(void **state) {
  pid_t a, b, c;
  long long ta, tb, tc, t_kill, t_term, first_b;
  int status;
  interval_t iv[3];
  (void)state;

  a = spawn("cand-a");
  ta = wait_acquire("cand-a", 30);
  assert_true(ta > 0);
  b = spawn("cand-b");
  sleep_ms(5000);
  assert_int_equal(event_at("ACQUIRE", "cand-b"), 0); /* exactly one leads */
  check_probes_and_metrics(helper_port("cand-a"));

  t_kill = now_ns();
  kill(a, SIGKILL);
  waitpid(a, &status, 0);
  tb = wait_acquire("cand-b", 40);
  assert_true(tb > 0);
  printf("failover after SIGKILL: %.2f s (bound: leaseDuration 15 s + retryPeriod 2 s + "
         "jitter up to 2.4 s after the standby last saw a renewal)\n",
         (double)(tb - t_kill) / 1e9);
  assert_true(tb - t_kill < 25LL * 1000000000LL);
  first_b = tb;

  c = spawn("cand-c");
  sleep_ms(3000);
  assert_int_equal(event_at("ACQUIRE", "cand-c"), 0);
  t_term = now_ns();
  kill(b, SIGTERM);
  waitpid(b, &status, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  tc = wait_acquire("cand-c", 20);
  assert_true(tc > 0);
  printf("failover after SIGTERM (release on cancel): %.2f s\n", (double)(tc - t_term) / 1e9);
  assert_true(tc - t_term < 6LL * 1000000000LL);

  /* intervals: a [ta, t_kill], b [first_b, LOSE b], c [tc, ...) never overlap */
  snprintf(iv[0].id, sizeof(iv[0].id), "cand-a");
  iv[0].start = ta;
  iv[0].end = t_kill;
  snprintf(iv[1].id, sizeof(iv[1].id), "cand-b");
  iv[1].start = first_b;
  iv[1].end = event_at("LOSE", "cand-b");
  assert_true(iv[1].end > 0);
  snprintf(iv[2].id, sizeof(iv[2].id), "cand-c");
  iv[2].start = tc;
  iv[2].end = 0;
  assert_true(iv[0].end <= iv[1].start);
  assert_true(iv[1].end <= iv[2].start);
  printf("leadership intervals: a [0, %.2f] b [%.2f, %.2f] c [%.2f, ...) (s from a's start)\n",
         (double)(iv[0].end - ta) / 1e9, (double)(iv[1].start - ta) / 1e9,
         (double)(iv[1].end - ta) / 1e9, (double)(iv[2].start - ta) / 1e9);

  kill(c, SIGTERM);
  waitpid(c, &status, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_events_in_kubectl(void **state) {
  static const kcr_gvr configmaps = {"", "v1", "configmaps"};
  kcr_rest_config_t *cfg = NULL;
  kcr_client_t *client = NULL;
  kcr_client_options co = {0};
  kcr_event_recorder_options eo = {0};
  kcr_event_recorder_t *rec = NULL;
  kcr_event_recorder_stats st;
  kcr_error_t err = {0};
  json_t *cm, *created = NULL, *list;
  char name[64], selector[128], *out = NULL;
  size_t i;
  int warnings = 0, normals = 0;
  long long count = 0;
  (void)state;

  assert_int_equal(
      kcr_rest_config_from_kubeconfig(kcr_testenv_kubeconfig(env), NULL, NULL, &cfg, &err), 0);
  co.config = cfg;
  assert_int_equal(kcr_client_create(&co, &client, &err), 0);
  snprintf(name, sizeof(name), "kcr-events-it-%ld", (long)getpid());
  cm = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name",
                 name);
  assert_int_equal(
      kcr_client_create_object(client, &configmaps, "default", cm, NULL, &created, &err), 0);
  json_decref(cm);
  eo.client = client;
  eo.reporting_controller = "kcr.dev/events-it";
  assert_int_equal(kcr_event_recorder_create(&eo, &rec, &err), 0);
  assert_int_equal(kcr_event_record_object(rec, created, KCR_EVENT_NORMAL, "Reconciled",
                                           "Reconcile", "reconciled %s", name),
                   0);
  for (i = 0; i < 1000; i++)
    kcr_event_record_object(rec, created, KCR_EVENT_WARNING, "ReconcileFailed", "Reconcile",
                            "something keeps failing");
  assert_int_equal(kcr_event_recorder_flush(rec, 30 * KCR_NSEC_PER_SEC), 0);
  kcr_event_recorder_get_stats(rec, &st);
  printf("events: recorded %llu, created %llu, patched %llu, aggregated %llu, dropped %llu\n",
         (unsigned long long)st.recorded, (unsigned long long)st.created,
         (unsigned long long)st.patched, (unsigned long long)st.aggregated,
         (unsigned long long)st.dropped);

  list = kcr_it_events_about(env, "default", name);
  assert_non_null(list);
  for (i = 0; i < json_array_size(list); i++) {
    json_t *ev = json_array_get(list, i);
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (type && strcmp(type, "Warning") == 0) {
      warnings++;
      count = json_integer_value(json_object_get(json_object_get(ev, "series"), "count"));
      if (!count)
        count = json_integer_value(json_object_get(ev, "count"));
    } else {
      normals++;
    }
  }
  json_decref(list);
  printf("kubectl get events: %d Normal, %d Warning object(s), series count %lld\n", normals,
         warnings, count);
  assert_int_equal(normals, 1);
  assert_int_equal(warnings, 1);
  assert_int_equal(count, 1000);
  snprintf(selector, sizeof(selector), "involvedObject.name=%s", name);
  {
    const char *argv[] = {"get", "events", "-n", "default", "--field-selector", selector, NULL};
    assert_int_equal(kcr_testenv_kubectl(env, argv, &out), 0);
    assert_non_null(strstr(out, "ReconcileFailed"));
    assert_non_null(strstr(out, "Reconciled"));
    free(out);
  }
  kcr_event_recorder_destroy(rec);
  json_decref(created);
  kcr_client_delete(client, &configmaps, "default", name, NULL, NULL, NULL);
  kcr_client_destroy(client);
  kcr_rest_config_unref(cfg);
}

/* The leader's network to the apiserver is cut (connections reset, new ones
 * blackholed): it must report the loss and exit non-zero within the renew
 * deadline (10 s) after its last renewal round began (+ retry period 2 s). */
static void test_leader_exits_when_cut_off(void **state) {
  kcr_faultproxy_t *proxy = NULL;
  char kubeconfig[512], lease2[96];
  long long t_cut, t_exit;
  pid_t p;
  int status;
  (void)state;
  assert_int_equal(kcr_faultproxy_start("127.0.0.1", kcr_testenv_apiserver_port(env), &proxy), 0);
  assert_int_equal(kcr_testenv_write_kubeconfig_for_port(env, kcr_faultproxy_port(proxy),
                                                         kubeconfig, sizeof(kubeconfig)),
                   0);
  snprintf(lease2, sizeof(lease2), "%s-cut", lease);
  p = spawn_with("cand-cut", kubeconfig, lease2);
  assert_true(wait_acquire("cand-cut", 30) > 0);
  sleep_ms(3000); /* a few renewals through the proxy */
  t_cut = now_ns();
  kcr_faultproxy_stall(proxy, true);
  kcr_faultproxy_cut(proxy);
  assert_int_equal(waitpid(p, &status, 0), p);
  t_exit = now_ns();
  printf("leader cut off from the apiserver exited %d after %.2f s (renew deadline 10 s + "
         "retry period 2 s)\n",
         WIFEXITED(status) ? WEXITSTATUS(status) : -1, (double)(t_exit - t_cut) / 1e9);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  assert_true(t_exit - t_cut < 13LL * 1000000000LL);
  assert_true(event_at("LOSE", "cand-cut") > 0);
  kcr_faultproxy_stop(proxy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_events_in_kubectl),
      cmocka_unit_test(test_leader_failover),
      cmocka_unit_test(test_leader_exits_when_cut_off),
  };
  setvbuf(stdout, NULL, _IONBF, 0);
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
