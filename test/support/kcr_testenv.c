/* SPDX-License-Identifier: MIT */
/*
 * kcr_testenv: see kcr_testenv.h. kcr's integration tests on top of the
 * installed test env (kcr/testing.h, src/testing/testenv.c): that one starts,
 * joins and stops clusters and runs child processes (kcr__run_command, shared
 * through src/testing/testing_internal.h); this file adds the kubectl runners and the fault
 * helpers, and points the test env at the source tree's cluster.sh.
 *
 * KCR_SOURCE_DIR (the repository root, a string literal) is a compile
 * definition given by test/integration/CMakeLists.txt; scripts/cluster.sh is
 * found under it.
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* mkdtemp, nftw, realpath, clock_gettime, ... */
#endif

#include "kcr_testenv.h"
#include "testing/testing_internal.h" /* kcr__run_command */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef KCR_SOURCE_DIR
#error "KCR_SOURCE_DIR must be defined to the repository root (see test/integration/CMakeLists.txt)"
#endif

#define KCR_TESTENV_DEFAULT_UP_TIMEOUT 300
#define KCR_TESTENV_DEFAULT_KUBECTL_TIMEOUT 60
#define KCR_TESTENV_DOWN_TIMEOUT 120
#define KCR_TESTENV_DEFAULT_RESTART_TIMEOUT 180
#define KCR_TESTENV_COMPACT_TIMEOUT 60
/* Largest kubeconfig kcr_testenv_write_kubeconfig_for_port() copies. */
#define KCR_TESTENV_MAX_KUBECONFIG ((size_t)1024 * 1024)

__attribute__((format(printf, 1, 2))) static void report(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kcr_testenv: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* A new string formatted like printf, or NULL on allocation failure. */
__attribute__((format(printf, 1, 2))) static char *format(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return NULL;
  char *s = malloc((size_t)n + 1);
  if (s == NULL)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

static int env_seconds(const char *name, int fallback) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0')
    return fallback;
  char *end = NULL;
  long n = strtol(v, &end, 10);
  if (*end != '\0' || n <= 0 || n > 86400) {
    report("ignoring %s=%s (want seconds, 1..86400)", name, v);
    return fallback;
  }
  return (int)n;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Run `scripts/cluster.sh VERB DIR`; its stdout to *out if out != NULL. */
static int run_cluster_script_out(const char *verb, const char *dir, char **out, int timeout_s) {
  static const char script[] = KCR_SOURCE_DIR "/scripts/cluster.sh";
  char *argv[] = {(char *)script, (char *)verb, (char *)dir, NULL};
  return kcr__run_command(argv, NULL, out, 0, timeout_s);
}

static int run_cluster_script(const char *verb, const char *dir, int timeout_s) {
  return run_cluster_script_out(verb, dir, NULL, timeout_s);
}

/*
 * use_source_scripts: before main, make kcr_testenv_start use this tree's
 * scripts/cluster.sh (the installed one may be absent or older), unless the
 * caller chose one.
 */
__attribute__((constructor)) static void use_source_scripts(void) {
  setenv("KCR_CLUSTER_SCRIPT", KCR_SOURCE_DIR "/scripts/cluster.sh", 0);
}

const char *kcr_testenv_source_dir(void) {
  return KCR_SOURCE_DIR;
}

/* kubectl_run: kcr_testenv_kubectl_input, stderr merged into the output if merge_stderr. */
static int kubectl_run(kcr_testenv_t *env, const char *const argv[], const char *input,
                       char **out_stdout, int merge_stderr) {
  if (out_stdout != NULL)
    *out_stdout = NULL;
  if (env == NULL || argv == NULL)
    return -1;
  size_t n = 0;
  while (argv[n] != NULL)
    n++;
  char **full = calloc(n + 4, sizeof *full);
  char *flag = format("--kubeconfig=%s", kcr_testenv_kubeconfig(env));
  /* Discovery cache per cluster, not the user's ~/.kube/cache. */
  char *cache = format("--cache-dir=%s/.kube-cache", kcr_testenv_dir(env));
  if (full == NULL || flag == NULL || cache == NULL) {
    free(full);
    free(flag);
    free(cache);
    return -1;
  }
  full[0] = (char *)kcr_testenv_kubectl_path(env);
  full[1] = flag;
  full[2] = cache;
  for (size_t i = 0; i < n; i++)
    full[i + 3] = (char *)argv[i]; /* execv takes char *const[] */
  full[n + 3] = NULL;
  int timeout = env_seconds("KCR_TESTENV_KUBECTL_TIMEOUT", KCR_TESTENV_DEFAULT_KUBECTL_TIMEOUT);
  int rc = kcr__run_command(full, input, out_stdout, merge_stderr, timeout);
  free(flag);
  free(cache);
  free(full);
  return rc;
}

int kcr_testenv_kubectl_input(kcr_testenv_t *env, const char *const argv[], const char *input,
                              char **out_stdout) {
  return kubectl_run(env, argv, input, out_stdout, 0);
}

int kcr_testenv_kubectl(kcr_testenv_t *env, const char *const argv[], char **out_stdout) {
  return kubectl_run(env, argv, NULL, out_stdout, 0);
}

int kcr_testenv_wait_established(kcr_testenv_t *env, const char *what) {
  const char *const wait[] = {"wait", "--for=condition=Established", "--timeout=60s", what, NULL};
  double deadline = now_seconds() + 60;
  for (;;) {
    if (kcr_testenv_kubectl(env, wait, NULL) == 0)
      return 0;
    if (now_seconds() >= deadline)
      return -1;
    sleep_ms(200);
  }
}

int kcr_testenv_kubectl_combined(kcr_testenv_t *env, const char *const argv[], char **out) {
  if (out == NULL)
    return -1;
  return kubectl_run(env, argv, NULL, out, 1);
}

int kcr_testenv_wait_ready(kcr_testenv_t *env, int timeout_s) {
  double deadline = now_seconds() + timeout_s;
  const char *const argv[] = {"get", "--raw=/readyz", "--request-timeout=5s", NULL};
  for (;;) {
    char *out = NULL;
    int rc = kcr_testenv_kubectl(env, argv, &out);
    int ok = rc == 0 && out != NULL && strncmp(out, "ok", 2) == 0;
    free(out);
    if (ok)
      return 0;
    if (now_seconds() >= deadline) {
      report("API server not ready after %d s (kubeconfig %s)", timeout_s,
             kcr_testenv_kubeconfig(env));
      return -1;
    }
    sleep_ms(250);
  }
}

/* --- fault helpers ---------------------------------------------------------- */

int kcr_testenv_restart_apiserver(kcr_testenv_t *env) {
  if (env == NULL)
    return -1;
  int timeout = env_seconds("KCR_TESTENV_RESTART_TIMEOUT", KCR_TESTENV_DEFAULT_RESTART_TIMEOUT);
  int rc = run_cluster_script("restart-apiserver", kcr_testenv_dir(env), timeout);
  if (rc != 0) {
    report("scripts/cluster.sh restart-apiserver %s failed (status %d); see %s/logs",
           kcr_testenv_dir(env), rc, kcr_testenv_dir(env));
    return -1;
  }
  return 0;
}

int kcr_testenv_compact(kcr_testenv_t *env, char *rev_out, size_t size) {
  if (rev_out == NULL || size == 0)
    return -1;
  rev_out[0] = '\0';
  if (env == NULL)
    return -1;
  char *out = NULL;
  int rc =
      run_cluster_script_out("compact", kcr_testenv_dir(env), &out, KCR_TESTENV_COMPACT_TIMEOUT);
  if (rc != 0 || out == NULL) {
    report("scripts/cluster.sh compact %s failed (status %d)", kcr_testenv_dir(env), rc);
    free(out);
    return -1;
  }
  size_t n = strspn(out, "0123456789");
  int ok = n > 0 && (out[n] == '\n' || out[n] == '\0') && n < size;
  if (ok) {
    memcpy(rev_out, out, n);
    rev_out[n] = '\0';
  } else {
    report("scripts/cluster.sh compact: unexpected output '%s' (or buffer of %zu too small)", out,
           size);
  }
  free(out);
  return ok ? 0 : -1;
}

int kcr_testenv_apiserver_port(const kcr_testenv_t *env) {
  if (env == NULL)
    return -1;
  char *path = format("%s/run/ports", kcr_testenv_dir(env));
  if (path == NULL)
    return -1;
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    report("cannot open %s: %s", path, strerror(errno));
    free(path);
    return -1;
  }
  static const char key[] = "kube-apiserver=";
  char line[256];
  int port = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, sizeof key - 1) != 0)
      continue;
    char *end = NULL;
    long v = strtol(line + sizeof key - 1, &end, 10);
    if (end != line + sizeof key - 1 && (*end == '\n' || *end == '\0') && v > 0 && v <= 65535)
      port = (int)v;
    break;
  }
  fclose(f);
  if (port < 0)
    report("no kube-apiserver port in %s", path);
  free(path);
  return port;
}

/* Read the whole file at path into a new NUL-terminated string, or NULL. */
static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    report("cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = malloc(KCR_TESTENV_MAX_KUBECONFIG + 1);
  size_t len = buf != NULL ? fread(buf, 1, KCR_TESTENV_MAX_KUBECONFIG + 1, f) : 0;
  int bad = buf == NULL || ferror(f) || len > KCR_TESTENV_MAX_KUBECONFIG;
  fclose(f);
  if (bad) {
    report("cannot read %s (error, or larger than %zu bytes)", path, KCR_TESTENV_MAX_KUBECONFIG);
    free(buf);
    return NULL;
  }
  buf[len] = '\0';
  return buf;
}

int kcr_testenv_write_kubeconfig_for_port(kcr_testenv_t *env, int port, char *path_out,
                                          size_t size) {
  if (path_out == NULL || size == 0)
    return -1;
  path_out[0] = '\0';
  if (env == NULL || port <= 0 || port > 65535)
    return -1;
  int rc = -1;
  char *text = read_file(kcr_testenv_kubeconfig(env));
  char *path = format("%s/kubeconfig.port-%d", kcr_testenv_dir(env), port);
  char *tmp = format("%s/kubeconfig.port-%d.tmp.%ld", kcr_testenv_dir(env), port, (long)getpid());
  FILE *f = NULL;
  if (text == NULL || path == NULL || tmp == NULL)
    goto done;
  if (strlen(path) >= size) {
    report("path buffer of %zu bytes too small for %s", size, path);
    goto done;
  }

  /* The one "server: SCHEME://HOST:PORT" line; HOST may be [v6]. */
  char *server = strstr(text, "server:");
  char *scheme = server != NULL ? strstr(server, "://") : NULL;
  char *eol = server != NULL ? strchr(server, '\n') : NULL;
  if (scheme == NULL || (eol != NULL && scheme > eol)) {
    report("no server URL in %s", kcr_testenv_kubeconfig(env));
    goto done;
  }
  char *host = scheme + 3;
  char *colon = NULL;
  if (*host == '[') {
    char *rbracket = strchr(host, ']');
    colon = rbracket != NULL && rbracket[1] == ':' ? rbracket + 1 : NULL;
  } else {
    colon = host + strcspn(host, ":/\n \"'");
    if (*colon != ':')
      colon = NULL;
  }
  size_t digits = colon != NULL ? strspn(colon + 1, "0123456789") : 0;
  if (digits == 0) {
    report("the server URL in %s has no port", kcr_testenv_kubeconfig(env));
    goto done;
  }

  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
    report("cannot create %s: %s", tmp, strerror(errno));
    if (fd >= 0)
      close(fd);
    goto done;
  }
  int w = fprintf(f, "%.*s%d%s", (int)(colon + 1 - text), text, port, colon + 1 + digits);
  int c = fclose(f);
  f = NULL;
  if (w < 0 || c != 0 || rename(tmp, path) != 0) {
    report("cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    goto done;
  }
  memcpy(path_out, path, strlen(path) + 1);
  rc = 0;

done:
  free(text);
  free(path);
  free(tmp);
  return rc;
}
