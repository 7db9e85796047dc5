/* SPDX-License-Identifier: MIT */
/*
 * test_leader_fence_it.c: a paused leader writes nothing once its Lease can
 * have passed (issue 16, bug 1), judged by the apiserver's own audit log
 * (scripts/cluster.sh keeps one of every write).
 *
 * Two replicas of a leader-elected manager (fence_helper.c) run as separate
 * processes, each with its own User-Agent. The leader patches a ConfigMap
 * every 100 ms through the manager's object client. We SIGSTOP it past the
 * lease duration, wait for the other to acquire, SIGCONT it and expect it to
 * exit 1. From the audit log:
 *  - the old leader made writes while it led (the test is not vacuous);
 *  - not one write request of the old leader reached the apiserver at or
 *    after the new leader's first Lease write, whatever its answer (except a
 *    renewal of the Lease the apiserver refused: optimistic concurrency, not
 *    the fence, guards the Lease itself, and such a PUT changes nothing);
 *  - the new leader writes afterwards.
 */
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

#include "kcr_testenv.h"

static kcr_testenv_t *env;
static char dir[128];
static char logpath[256];
static char ns[64];

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static pid_t spawn(const char *agent) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char errpath[300];
    snprintf(errpath, sizeof(errpath), "%s/%s.log", dir, agent);
    if (!freopen(errpath, "a", stderr))
      _exit(126);
    execl(KCR_FENCE_HELPER, KCR_FENCE_HELPER, kcr_testenv_kubeconfig(env), ns, "kcr-fence", agent,
          logpath, (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* event_at returns the time agent logged what (ACQUIRE, EXIT), or 0. */
static long long event_at(const char *what, const char *agent) {
  FILE *f = fopen(logpath, "r");
  char w[16], who[96], t[32], rc[16];
  long long found = 0;
  if (!f)
    return 0;
  while (fscanf(f, "%15s %95s %31s %15s", w, who, t, rc) == 4)
    if (strcmp(w, what) == 0 && strcmp(who, agent) == 0 && !found)
      found = strtoll(t, NULL, 10);
  fclose(f);
  return found;
}

static long long wait_event(const char *what, const char *agent, int timeout_s) {
  for (int i = 0; i < timeout_s * 20; i++) {
    long long t = event_at(what, agent);
    if (t)
      return t;
    sleep_ms(50);
  }
  return 0;
}

/* wait_exit waits (bounded) for pid; returns its exit code, -1 on a signal or timeout. */
static int wait_exit(pid_t pid, int timeout_s) {
  int status;
  for (int i = 0; i < timeout_s * 20; i++) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    sleep_ms(50);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

static void kubectl(const char *const argv[]) {
  char *out = NULL;
  assert_int_equal(kcr_testenv_kubectl(env, argv, &out), 0);
  free(out);
}

static int group_setup(void **state) {
  (void)state;
  if (kcr_testenv_start(&env) != 0)
    return -1;
  snprintf(dir, sizeof(dir), "/tmp/kcr-fence-it-XXXXXX");
  if (!mkdtemp(dir))
    return -1;
  snprintf(logpath, sizeof(logpath), "%s/leadership.log", dir);
  snprintf(ns, sizeof(ns), "kcr-fence-%ld", (long)getpid());
  return 0;
}

static int group_teardown(void **state) {
  char cmd[300];
  const char *del[] = {"delete", "namespace", ns, "--wait=false", "--ignore-not-found", NULL};
  char *out = NULL;
  (void)state;
  kcr_testenv_kubectl(env, del, &out);
  free(out);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  kcr_testenv_stop(env);
  return 0;
}

static void test_paused_leader_writes_nothing_after_losing(void **state) {
  char a[96], b[96], cmd[4096];
  const char *mkns[] = {"create", "namespace", ns, NULL};
  const char *trigger[] = {"create", "configmap", "fence-trigger", "-n", ns, NULL};
  const char *target[] = {"create", "configmap", "fence-target", "-n", ns, NULL};
  long long ta, tb, t_stop, t_cont, t_exit;
  pid_t pa, pb;
  int rc;
  (void)state;

  kubectl(mkns);
  kubectl(trigger);
  kubectl(target);
  snprintf(a, sizeof(a), "kcr-fence-a-%ld", (long)getpid());
  snprintf(b, sizeof(b), "kcr-fence-b-%ld", (long)getpid());

  pa = spawn(a);
  ta = wait_event("ACQUIRE", a, 60);
  assert_true(ta > 0);
  pb = spawn(b);
  sleep_ms(3000); /* a leads and writes; b stands by */
  assert_int_equal(event_at("ACQUIRE", b), 0);

  t_stop = now_ns();
  kill(pa, SIGSTOP);
  tb = wait_event("ACQUIRE", b, 30);
  assert_true(tb > 0);
  printf("standby acquired %.2f s after the leader was stopped (lease 4 s)\n",
         (double)(tb - t_stop) / 1e9);
  sleep_ms(1500); /* the new leader works while the old one sleeps */
  t_cont = now_ns();
  kill(pa, SIGCONT);
  rc = wait_exit(pa, 20);
  t_exit = now_ns();
  printf("old leader exited %d %.3f s after SIGCONT\n", rc, (double)(t_exit - t_cont) / 1e9);
  assert_int_equal(rc, 1);
  sleep_ms(1000);
  kill(pb, SIGTERM);
  assert_int_equal(wait_exit(pb, 20), 0);
  sleep_ms(500); /* the audit log is written as requests complete */

  snprintf(
      cmd, sizeof(cmd),
      "python3 - '%s/logs' '%s' '%s' '%s' %lld <<'EOF'\n"
      "import glob, json, sys, datetime\n"
      "logs, a, b, ns, t_stop = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], "
      "int(sys.argv[5])\n"
      "def ts(s):\n"
      "    d = datetime.datetime.fromisoformat(s.replace('Z', '+00:00'))\n"
      "    return int(d.timestamp()) * 10**9 + d.microsecond * 1000\n"
      "evs = []\n"
      "for p in sorted(glob.glob(logs + '/audit*.log')):\n"
      "    for line in open(p):\n"
      "        try:\n"
      "            e = json.loads(line)\n"
      "        except ValueError:\n"
      "            continue\n"
      "        ua = e.get('userAgent', '')\n"
      "        if ua in (a, b) and e.get('stage') == 'ResponseComplete':\n"
      "            evs.append(e)\n"
      "def ok(e):\n"
      "    return 200 <= e.get('responseStatus', {}).get('code', 0) < 300\n"
      "def lease(e):\n"
      "    r = e.get('objectRef', {})\n"
      "    return r.get('resource') == 'leases' and r.get('name') == 'kcr-fence'\n"
      "acq = [ts(e['requestReceivedTimestamp']) for e in evs\n"
      "       if e['userAgent'] == b and lease(e) and ok(e) and e['verb'] in ('create', "
      "'update')]\n"
      "assert acq, 'no Lease write of the new leader in the audit log'\n"
      "t_acq = min(acq)\n"
      "a_all = [e for e in evs if e['userAgent'] == a]\n"
      "a_led = [e for e in a_all if ok(e) and not lease(e) and\n"
      "         ts(e['requestReceivedTimestamp']) < t_stop]\n"
      "late = [e for e in a_all if ts(e['requestReceivedTimestamp']) >= t_acq]\n"
      "a_late = [e for e in late if ok(e) or not lease(e)]\n"
      "for e in late:\n"
      "    if e not in a_late:\n"
      "        print('refused late Lease write', e['verb'], e['responseStatus'].get('code'))\n"
      "a_last = max(ts(e['requestReceivedTimestamp']) for e in a_all)\n"
      "b_after = [e for e in evs if e['userAgent'] == b and not lease(e) and ok(e) and\n"
      "           ts(e['requestReceivedTimestamp']) >= t_acq]\n"
      "print('audit: old leader %%d writes (%%d patches while leading), its last %%.3f s before '\n"
      "      'the new leader\\'s acquire; %%d after it; new leader %%d patches after acquiring'\n"
      "      %% (len(a_all), len(a_led), (t_acq - a_last) / 1e9, len(a_late), len(b_after)))\n"
      "for e in a_late:\n"
      "    print('LATE WRITE', e['verb'], e.get('objectRef'), e['requestReceivedTimestamp'],\n"
      "          e.get('responseStatus', {}).get('code'))\n"
      "assert len(a_led) >= 5, 'the old leader did not write while leading'\n"
      "assert not a_late, 'the old leader wrote after the new one acquired'\n"
      "assert b_after, 'the new leader did not write'\n"
      "EOF\n",
      kcr_testenv_dir(env), a, b, ns, t_stop);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paused_leader_writes_nothing_after_losing),
  };
  setvbuf(stdout, NULL, _IONBF, 0);
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
