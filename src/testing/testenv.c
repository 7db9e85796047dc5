/* SPDX-License-Identifier: MIT */
/*
 * testenv.c: the test environment (kcr/testing.h, envtest's counterpart): a
 * real control plane started by cluster.sh from the cached binaries, or an
 * existing cluster joined, with CRDs installed through kubectl.
 *
 * DESIGN. The heavy lifting stays in the scripts every kcr test and the demo
 * already use (cluster.sh up/down: free ports, certificates, readiness), so a
 * user's test env and kcr's own integration tests run the same control plane.
 * This file only runs them: fork/execv, no shell, each child in its own
 * process group killed as a whole at its deadline, output bounded. The
 * installed scripts live in <datadir>/kcr/scripts (with the Go tools modules
 * beside them in <datadir>/kcr/tools, so cluster.sh can build the binaries
 * when the cache is cold).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, mkdtemp, nftw, realpath */
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
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

#include "kcr/clock.h"
#include "kcr/testing.h"
#include "testing/testing_internal.h"
#include "util/alloc.h"

#ifndef KCR_INSTALL_DATADIR
#define KCR_INSTALL_DATADIR "/usr/local/share"
#endif

/* Largest child output kept in memory; more is an error. */
#define MAX_OUTPUT ((size_t)64 * 1024 * 1024)
#define DEFAULT_UP_TIMEOUT 300
#define KUBECTL_TIMEOUT 120
#define DOWN_TIMEOUT 120

struct kcr_testenv {
  char *dir;        /* cluster directory */
  char *kubeconfig; /* DIR/kubeconfig, or the joined cluster's */
  char *kubectl;    /* kubectl binary */
  char *script;     /* cluster.sh; NULL when joined */
  bool owned;       /* started here: stop brings it down */
};

static void report(const char *fmt, ...) KCR_PRINTF(1, 2);
static void report(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kcr_testenv: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static char *format(const char *fmt, ...) KCR_PRINTF(1, 2);
static char *format(const char *fmt, ...) {
  va_list ap;
  int n;
  char *s;
  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !(s = kcr__malloc((size_t)n + 1)))
    return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

static int env_seconds(const char *name, int fallback) {
  const char *v = getenv(name);
  char *end = NULL;
  long n;
  if (v == NULL || *v == '\0')
    return fallback;
  n = strtol(v, &end, 10);
  if (*end != '\0' || n <= 0 || n > 86400)
    return fallback;
  return (int)n;
}

static bool executable(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* now_seconds: the system clock's monotonic reading in seconds. */
static double now_seconds(void) {
  return (double)kcr_clock_now(kcr_clock_system()) / 1e9;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* kcr__run_command: see testing_internal.h. */
int kcr__run_command(char *const argv[], const char *input, char **out, int merge_stderr,
                     int timeout_s) {
  int rc = -1;
  int pipefd[2] = {-1, -1};
  FILE *in = NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0;

  if (out != NULL)
    *out = NULL;
  if (input != NULL) {
    in = tmpfile();
    if (in == NULL || fputs(input, in) == EOF || fflush(in) != 0 || fseek(in, 0, SEEK_SET) != 0) {
      report("cannot stage stdin for %s: %s", argv[0], strerror(errno));
      goto done;
    }
  }
  if (out != NULL && pipe(pipefd) != 0) {
    report("pipe: %s", strerror(errno));
    goto done;
  }

  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    report("fork: %s", strerror(errno));
    goto done;
  }
  if (pid == 0) {
    setpgid(0, 0);
    int infd = in != NULL ? fileno(in) : open("/dev/null", O_RDONLY);
    if (infd < 0 || dup2(infd, STDIN_FILENO) < 0)
      _exit(126);
    if (out != NULL) {
      if (dup2(pipefd[1], STDOUT_FILENO) < 0)
        _exit(126);
      if (merge_stderr && dup2(pipefd[1], STDERR_FILENO) < 0)
        _exit(126);
      close(pipefd[0]);
      close(pipefd[1]);
    } else if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      _exit(126);
    }
    execv(argv[0], argv);
    fprintf(stderr, "kcr_testenv: cannot execute %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid); /* also from the parent, so kill(-pid) never misses */

  double deadline = now_seconds() + timeout_s;
  int timed_out = 0, too_big = 0;
  if (out != NULL) {
    close(pipefd[1]);
    pipefd[1] = -1;
    for (;;) {
      double left = deadline - now_seconds();
      if (left <= 0) {
        timed_out = 1;
        break;
      }
      struct pollfd pfd = {pipefd[0], POLLIN, 0};
      int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
      if (pr < 0 && errno == EINTR)
        continue;
      if (pr < 0) {
        report("poll: %s", strerror(errno));
        break;
      }
      if (pr == 0)
        continue;
      if (cap - len < 4096) {
        size_t ncap = cap ? cap * 2 : 8192;
        if (ncap > MAX_OUTPUT + 1) {
          too_big = 1;
          break;
        }
        char *nbuf = realloc(buf, ncap);
        if (nbuf == NULL) {
          too_big = 1;
          break;
        }
        buf = nbuf;
        cap = ncap;
      }
      ssize_t n = read(pipefd[0], buf + len, cap - len - 1);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break; /* EOF (or error: the exit status tells) */
      len += (size_t)n;
    }
  }

  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, timed_out || too_big ? 0 : WNOHANG);
    if (w == pid)
      break;
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0) {
      report("waitpid: %s", strerror(errno));
      goto done;
    }
    if (now_seconds() >= deadline) {
      timed_out = 1;
    }
    if (timed_out || too_big) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      continue;
    }
    sleep_ms(10);
  }
  if (timed_out) {
    report("%s timed out after %d s; killed", argv[0], timeout_s);
  } else if (too_big) {
    report("%s wrote more than %zu bytes to stdout", argv[0], (size_t)MAX_OUTPUT);
  } else if (WIFEXITED(status)) {
    rc = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    report("%s killed by signal %d", argv[0], WTERMSIG(status));
  }
  if (rc >= 0 && out != NULL) {
    if (buf == NULL)
      buf = malloc(1);
    if (buf == NULL) {
      rc = -1;
      goto done;
    }
    buf[len] = '\0';
    *out = buf;
    buf = NULL;
  }

done:
  free(buf);
  if (pipefd[0] >= 0)
    close(pipefd[0]);
  if (pipefd[1] >= 0)
    close(pipefd[1]);
  if (in != NULL)
    fclose(in);
  return rc;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  if (remove(path) != 0 && errno != ENOENT) {
    report("cannot remove %s: %s", path, strerror(errno));
    return -1;
  }
  return 0;
}

static int remove_tree(const char *dir) {
  return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- where things are ---- */

int kcr_testenv_binary_dir(char *buf, size_t size, kcr_error_t *err) {
  const char *bin = getenv("KCR_BIN_DIR"), *cache = getenv("KCR_CACHE"), *home = getenv("HOME");
  char root[PATH_MAX], best[PATH_MAX] = "", probe[PATH_MAX + 300];
  struct dirent *de;
  DIR *d;
  if (bin && *bin) {
    if (snprintf(buf, size, "%s", bin) >= (int)size)
      return kcr_error_set(err, KCR_ETOOBIG, "testenv: KCR_BIN_DIR too long");
    return 0;
  }
  /* kcr-envtest's directory (all four binaries), else the k8s build's bin/ */
  for (int pass = 0; pass < 2 && !*best; pass++) {
    const char *sub = pass == 0 ? "envtest" : "k8s";
    if (cache && *cache)
      snprintf(root, sizeof(root), "%s/%s", cache, sub);
    else if (home && *home)
      snprintf(root, sizeof(root), "%s/.cache/kcr/%s", home, sub);
    else
      return kcr_error_set(err, KCR_ENOENT, "testenv: neither KCR_BIN_DIR, KCR_CACHE nor HOME set");
    d = opendir(root);
    while (d && (de = readdir(d)) != NULL) {
      if (de->d_name[0] == '.')
        continue;
      snprintf(probe, sizeof(probe), "%s/%s%s/kube-apiserver", root, de->d_name,
               pass == 0 ? "" : "/bin");
      /* "newest": the greatest version name; good enough for a cache */
      if (executable(probe) && strcmp(de->d_name, best) > 0)
        snprintf(best, sizeof(best), "%s", de->d_name);
    }
    if (d)
      closedir(d);
    if (*best && pass == 1)
      strncat(best, "/bin", sizeof(best) - strlen(best) - 1);
  }
  if (!*best)
    return kcr_error_set(err, KCR_ENOENT,
                         "testenv: no control-plane binaries under %s (run kcr-envtest use)", root);
  if (snprintf(buf, size, "%s/%s", root, best) >= (int)size)
    return kcr_error_set(err, KCR_ETOOBIG, "testenv: binary path too long");
  return 0;
}

/* find_script: o's, $KCR_CLUSTER_SCRIPT, or the installed cluster.sh. New string. */
static char *find_script(const kcr_testenv_options *o, kcr_error_t *err) {
  static const char *const installed[] = {KCR_INSTALL_DATADIR "/kcr/scripts/cluster.sh",
                                          "/usr/share/kcr/scripts/cluster.sh",
                                          "/usr/local/share/kcr/scripts/cluster.sh"};
  const char *env = getenv("KCR_CLUSTER_SCRIPT");
  const char *want = o && o->cluster_script ? o->cluster_script : (env && *env ? env : NULL);
  if (want) {
    if (!executable(want)) {
      kcr_error_set(err, KCR_ENOENT, "testenv: cluster script %s is not executable", want);
      return NULL;
    }
    return kcr__strdup(want);
  }
  /* beside the shared library: <prefix>/lib[/<triplet>]/libkcr.so -> <prefix>/share/kcr */
  {
    Dl_info info;
    static const char anchor = 0; /* an object of this library, to ask where it lives */
    if (dladdr(&anchor, &info) && info.dli_fname) {
      char lib[PATH_MAX], *slash, *p;
      snprintf(lib, sizeof(lib), "%s", info.dli_fname);
      for (int up = 0; up < 2 && (slash = strrchr(lib, '/')) != NULL; up++) {
        *slash = '\0';
        if ((p = format("%s/../share/kcr/scripts/cluster.sh", lib)) != NULL) {
          if (executable(p))
            return p;
          kcr__free(p);
        }
      }
    }
  }
  for (size_t i = 0; i < sizeof(installed) / sizeof(installed[0]); i++)
    if (executable(installed[i]))
      return kcr__strdup(installed[i]);
  kcr_error_set(err, KCR_ENOENT,
                "testenv: no cluster.sh (install libkcr-dev, or set KCR_CLUSTER_SCRIPT)");
  return NULL;
}

/* find_kubectl: $KCR_KUBECTL, DIR/bin/kubectl, the cache's, or kubectl on PATH. */
static char *find_kubectl(const char *dir) {
  const char *k = getenv("KCR_KUBECTL"), *path = getenv("PATH");
  char bin[PATH_MAX], *p;
  if (k && *k)
    return kcr__strdup(k);
  if (dir && (p = format("%s/bin/kubectl", dir)) != NULL) {
    if (executable(p))
      return p;
    kcr__free(p);
  }
  if (kcr_testenv_binary_dir(bin, sizeof(bin), NULL) == 0 &&
      (p = format("%s/kubectl", bin)) != NULL) {
    if (executable(p))
      return p;
    kcr__free(p);
  }
  while (path && *path) {
    size_t n = strcspn(path, ":");
    if ((p = format("%.*s/kubectl", (int)n, path)) != NULL) {
      if (n && executable(p))
        return p;
      kcr__free(p);
    }
    path += n + (path[n] == ':');
  }
  return NULL;
}

/* kubectl runs kubectl --kubeconfig=... args...; *out (may be NULL) as kcr__run_command(). */
static int kubectl(const kcr_testenv_t *env, const char *const *args, char **out, int timeout_s) {
  char *argv[16], *flag = format("--kubeconfig=%s", env->kubeconfig);
  char *cache = format("--cache-dir=%s/.kube-cache", env->dir);
  size_t n = 0;
  int rc = -1;
  if (flag && cache) {
    argv[n++] = env->kubectl;
    argv[n++] = flag;
    argv[n++] = cache;
    for (; *args && n + 1 < sizeof(argv) / sizeof(argv[0]); args++)
      argv[n++] = (char *)*args;
    argv[n] = NULL;
    rc = kcr__run_command(argv, NULL, out, 1, timeout_s);
  }
  kcr__free(flag);
  kcr__free(cache);
  return rc;
}

static int wait_ready(kcr_testenv_t *env, int timeout_s, kcr_error_t *err) {
  const char *const args[] = {"get", "--raw=/readyz", "--request-timeout=5s", NULL};
  double deadline = now_seconds() + timeout_s;
  for (;;) {
    char *out = NULL;
    int ok = kubectl(env, args, &out, 30) == 0 && out && strncmp(out, "ok", 2) == 0;
    free(out);
    if (ok)
      return 0;
    if (now_seconds() >= deadline)
      return kcr_error_set(err, KCR_ETIMEDOUT, "testenv: API server not ready after %d s (%s)",
                           timeout_s, env->kubeconfig);
    sleep_ms(250);
  }
}

/* ---- life ---- */

static void free_env(kcr_testenv_t *env) {
  kcr__free(env->dir);
  kcr__free(env->kubeconfig);
  kcr__free(env->kubectl);
  kcr__free(env->script);
  kcr__free(env);
}

static bool truthy(const char *v) {
  return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "TRUE") == 0 ||
               strcmp(v, "True") == 0);
}

static int join(kcr_testenv_t *env, const char *kubeconfig, kcr_error_t *err) {
  char resolved[PATH_MAX], *slash;
  if (!realpath(kubeconfig, resolved))
    return kcr_error_set(err, KCR_ENOENT, "testenv: kubeconfig %s: %s", kubeconfig,
                         strerror(errno));
  env->kubeconfig = kcr__strdup(resolved);
  slash = strrchr(resolved, '/');
  if (slash == resolved)
    slash[1] = '\0';
  else
    *slash = '\0';
  env->dir = kcr__strdup(resolved);
  if (!env->kubeconfig || !env->dir)
    return kcr_error_set(err, KCR_ENOMEM, "testenv: out of memory");
  return 0;
}

static int start_own(kcr_testenv_t *env, const kcr_testenv_options *o, int timeout,
                     kcr_error_t *err) {
  const char *tmp = getenv("TMPDIR");
  char *argv[5];
  int rc;
  if (!(env->script = find_script(o, err)))
    return err && err->code ? err->code : KCR_ENOENT;
  env->dir = format("%s/kcr-testenv-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!env->dir)
    return kcr_error_set(err, KCR_ENOMEM, "testenv: out of memory");
  if (!mkdtemp(env->dir))
    return kcr_error_set(err, KCR_ESYS, "testenv: mkdtemp %s: %s", env->dir, strerror(errno));
  env->owned = true;
  argv[0] = env->script;
  argv[1] = (char *)"up";
  argv[2] = o && o->kwok ? (char *)"--kwok" : env->dir;
  argv[3] = o && o->kwok ? env->dir : NULL;
  argv[4] = NULL;
  rc = kcr__run_command(argv, NULL, NULL, 0, timeout);
  if (rc != 0) {
    argv[1] = (char *)"down";
    argv[2] = env->dir;
    argv[3] = NULL;
    kcr__run_command(argv, NULL, NULL, 0, DOWN_TIMEOUT);
    env->owned = false; /* keep the directory for the logs */
    return kcr_error_set(err, KCR_ESYS, "testenv: %s up %s failed (status %d); logs in %s/logs",
                         env->script, env->dir, rc, env->dir);
  }
  env->kubeconfig = format("%s/kubeconfig", env->dir);
  return env->kubeconfig ? 0 : kcr_error_set(err, KCR_ENOMEM, "testenv: out of memory");
}

int kcr_testenv_start_with(const kcr_testenv_options *o, kcr_testenv_t **out, kcr_error_t *err) {
  const char *shared = getenv("KCR_TEST_KUBECONFIG");
  int timeout = o && o->start_timeout_s > 0
                    ? o->start_timeout_s
                    : env_seconds("KCR_TESTENV_UP_TIMEOUT", DEFAULT_UP_TIMEOUT);
  bool existing = (o && o->use_existing) || truthy(getenv("KCR_USE_EXISTING_CLUSTER"));
  kcr_testenv_t *env;
  int rc;
  *out = NULL;
  env = kcr__calloc(1, sizeof(*env));
  if (!env)
    return kcr_error_set(err, KCR_ENOMEM, "testenv: out of memory");
  if (existing) {
    const char *kc = o && o->kubeconfig ? o->kubeconfig : NULL;
    const char *home = getenv("HOME"), *kenv = getenv("KUBECONFIG");
    char def[PATH_MAX];
    if (!kc && shared && *shared)
      kc = shared;
    if (!kc && kenv && *kenv && !strchr(kenv, ':'))
      kc = kenv;
    if (!kc && home) {
      snprintf(def, sizeof(def), "%s/.kube/config", home);
      kc = def;
    }
    rc = kc ? join(env, kc, err)
            : kcr_error_set(err, KCR_ENOENT, "testenv: no kubeconfig for the existing cluster");
  } else if (shared && *shared) {
    rc = join(env, shared, err); /* kcr's CTest fixture shares one cluster this way */
  } else {
    rc = start_own(env, o, timeout, err);
  }
  if (rc == 0 && !(env->kubectl = find_kubectl(env->dir)))
    rc = kcr_error_set(err, KCR_ENOENT,
                       "testenv: no kubectl (set KCR_KUBECTL, or run kcr-envtest use)");
  if (rc == 0)
    rc = wait_ready(env, timeout < 60 ? timeout : 60, err);
  if (rc == 0 && o && o->crd_directory)
    rc = kcr_testenv_install_crds(env, o->crd_directory, 0, err);
  if (rc) {
    kcr_testenv_stop(env);
    return rc;
  }
  *out = env;
  return 0;
}

int kcr_testenv_start(kcr_testenv_t **out) {
  kcr_error_t err;
  kcr_error_clear(&err);
  if (!out)
    return -1;
  if (kcr_testenv_start_with(NULL, out, &err) != 0) {
    report("%s", err.message);
    return -1;
  }
  return 0;
}

static bool crd_file(const char *name) {
  size_t n = strlen(name);
  return name[0] != '.' && ((n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
                            (n > 4 && strcmp(name + n - 4, ".yml") == 0) ||
                            (n > 5 && strcmp(name + n - 5, ".json") == 0));
}

int kcr_testenv_install_crds(kcr_testenv_t *env, const char *dir, int timeout_s, kcr_error_t *err) {
  struct dirent *de;
  DIR *d = opendir(dir);
  int rc = 0, n = 0;
  char wait_timeout[32];
  if (!d)
    return kcr_error_set(err, KCR_ENOENT, "testenv: CRD directory %s: %s", dir, strerror(errno));
  snprintf(wait_timeout, sizeof(wait_timeout), "--timeout=%ds", timeout_s > 0 ? timeout_s : 60);
  while (rc == 0 && (de = readdir(d)) != NULL) {
    char *path, *out = NULL;
    if (!crd_file(de->d_name))
      continue;
    if (!(path = format("%s/%s", dir, de->d_name))) {
      rc = kcr_error_set(err, KCR_ENOMEM, "testenv: out of memory");
      break;
    }
    {
      const char *const apply[] = {"apply", "-f", path, "-o", "name", NULL};
      int failed = kubectl(env, apply, &out, KUBECTL_TIMEOUT) != 0;
      /* Another client may create the same CRD between apply's read and its
       * create (tests sharing a cluster): that create meets AlreadyExists,
       * and a second apply updates what the other made. */
      if (failed && out && strstr(out, "AlreadyExists")) {
        free(out);
        out = NULL;
        failed = kubectl(env, apply, &out, KUBECTL_TIMEOUT) != 0;
      }
      if (failed) {
        rc = kcr_error_set(err, KCR_EIO, "testenv: kubectl apply -f %s: %.300s", path,
                           out ? out : "failed");
      } else {
        /* wait for each CRD the file held: "customresourcedefinition.../name" lines */
        char *save = NULL;
        for (char *line = strtok_r(out, "\n", &save); line && rc == 0;
             line = strtok_r(NULL, "\n", &save)) {
          char *wout = NULL;
          const char *const wait[] = {"wait", "--for=condition=Established", wait_timeout, line,
                                      NULL};
          if (strncmp(line, "customresourcedefinition", 24) != 0)
            continue;
          if (kubectl(env, wait, &wout, (timeout_s > 0 ? timeout_s : 60) + 30) != 0)
            rc = kcr_error_set(err, KCR_ETIMEDOUT, "testenv: %s not Established: %.300s", line,
                               wout ? wout : "");
          free(wout);
          n++;
        }
      }
    }
    free(out);
    kcr__free(path);
  }
  closedir(d);
  (void)n;
  return rc;
}

int kcr_testenv_rest_config(const kcr_testenv_t *env, kcr_rest_config_t **out, kcr_error_t *err) {
  kcr_config_options co;
  memset(&co, 0, sizeof(co));
  co.kubeconfig = env->kubeconfig;
  return kcr_rest_config_load(&co, out, err);
}

const char *kcr_testenv_kubeconfig(const kcr_testenv_t *env) {
  return env ? env->kubeconfig : NULL;
}

const char *kcr_testenv_dir(const kcr_testenv_t *env) {
  return env ? env->dir : NULL;
}

const char *kcr_testenv_kubectl_path(const kcr_testenv_t *env) {
  return env ? env->kubectl : NULL;
}

bool kcr_testenv_owned(const kcr_testenv_t *env) {
  return env && env->owned;
}

const char *kcr_testenv_cluster_script(const kcr_testenv_t *env) {
  return env ? env->script : NULL;
}

int kcr_testenv_stop(kcr_testenv_t *env) {
  int rc = 0;
  if (!env)
    return 0;
  if (env->owned) {
    char *argv[] = {env->script, (char *)"down", env->dir, NULL};
    if (kcr__run_command(argv, NULL, NULL, 0, DOWN_TIMEOUT) != 0) {
      report("%s down %s failed; directory kept", env->script, env->dir);
      rc = -1;
    } else if (getenv("KCR_TESTENV_KEEP")) {
      report("cluster directory kept: %s", env->dir);
    } else if (remove_tree(env->dir) != 0) {
      rc = -1;
    }
  }
  free_env(env);
  return rc;
}
