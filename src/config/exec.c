/* SPDX-License-Identifier: MIT */
/*
 * exec.c: running client-go exec credential plugins
 * (client.authentication.k8s.io/v1 and v1beta1) and decoding what they print.
 *
 * Design: the plugin is started with posix_spawn and an argv, never a shell: the
 * command is looked up in PATH only when it has no '/' (client-go resolves a
 * command containing '/' against the kubeconfig's directory at load). The child
 * gets the loading environment, the kubeconfig's env entries on top (only in
 * the child: kcr never calls setenv) and KUBERNETES_EXEC_INFO; its stdin is
 * /dev/null (kcr is never interactive); signals the parent ignores are reset;
 * it runs in its own process group so that a timeout kills its children too.
 * Output is bounded: stdout up to spec->max_stdout (1 MiB) or the plugin is
 * killed with KCR_ETOOBIG; stderr's first 4 KiB are kept for the error message
 * and the rest drained. The whole run is bounded by spec->timeout_ns (30 s) on
 * the real monotonic clock (kcr_clock_system), after which the group is killed and the child
 * reaped: no zombie is left on any path. Messages name the command, never the
 * output: stdout holds the credential.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/exec.h"
#include "kcr/clock.h"
#include "util/alloc.h"

extern char **environ;

#define READ_CHUNK 65536

void kcr__exec_spec_free(kcr__exec_spec_t *spec) {
  if (!spec)
    return;
  kcr__free(spec->command);
  kcr__strv_free(spec->argv);
  kcr__strv_free(spec->env);
  kcr__strv_free(spec->base_env);
  kcr__free(spec->api_version);
  kcr__free(spec->install_hint);
  kcr__free(spec->exec_info);
  kcr__free(spec);
}

void kcr__exec_result_free(kcr__exec_result_t *r) {
  kcr__wipe_free_str(r->token);
  kcr__wipe_free(r->cert, r->cert_len);
  kcr__wipe_free(r->key, r->key_len);
  memset(r, 0, sizeof(*r));
}

static const char *hint_sep(const kcr__exec_spec_t *s) {
  return s->install_hint && *s->install_hint ? "; " : "";
}

static const char *hint(const kcr__exec_spec_t *s) {
  return s->install_hint ? s->install_hint : "";
}

/* find_executable resolves the command as Go's exec.LookPath does. */
static int find_executable(const kcr__exec_spec_t *s, char **out, kcr_error_t *err) {
  const char *path, *p;
  *out = NULL;
  if (strchr(s->command, '/')) {
    struct stat st;
    /* Checked here so the message does not depend on how posix_spawn reports a
     * failed exec (an error, or a child exiting 127 under valgrind). */
    if (stat(s->command, &st) != 0)
      return kcr_error_set(err, KCR_EAUTH, "exec plugin %s: cannot run: %s%s%s", s->command,
                           strerror(errno), hint_sep(s), hint(s));
    if (!S_ISREG(st.st_mode) || access(s->command, X_OK) != 0)
      return kcr_error_set(err, KCR_EAUTH, "exec plugin %s: cannot run: not an executable file",
                           s->command);
    *out = kcr__strdup(s->command);
    return *out ? 0 : kcr_error_set(err, KCR_ENOMEM, "out of memory");
  }
  path = kcr__env_get(s->base_env, "PATH");
  for (p = path ? path : ""; path;) {
    const char *colon = strchr(p, ':');
    size_t dl = colon ? (size_t)(colon - p) : strlen(p);
    size_t cl = strlen(s->command);
    char *cand = kcr__malloc((dl ? dl : 1) + 1 + cl + 1);
    struct stat st;
    if (!cand)
      return kcr_error_set(err, KCR_ENOMEM, "out of memory");
    if (dl)
      memcpy(cand, p, dl);
    else
      cand[0] = '.';
    dl = dl ? dl : 1;
    cand[dl] = '/';
    memcpy(cand + dl + 1, s->command, cl + 1);
    if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) {
      *out = cand;
      return 0;
    }
    kcr__free(cand);
    if (!colon)
      break;
    p = colon + 1;
  }
  return kcr_error_set(err, KCR_EAUTH, "exec plugin %s: executable not found in PATH%s%s",
                       s->command, hint_sep(s), hint(s));
}

static int env_name_eq(const char *a, const char *b) {
  size_t i = 0;
  while (a[i] && a[i] != '=' && a[i] == b[i])
    i++;
  return (a[i] == '=' || a[i] == '\0') && (b[i] == '=' || b[i] == '\0');
}

/* build_env makes the child's environment; entries are borrowed except *info. */
static int build_env(const kcr__exec_spec_t *s, char ***out, char **info) {
  char *const *base = s->base_env ? s->base_env : environ;
  size_t nb = 0, ne = 0, n = 0, il;
  char **v;
  static const char name[] = "KUBERNETES_EXEC_INFO=";

  *out = NULL;
  *info = NULL;
  while (base && base[nb])
    nb++;
  while (s->env[ne])
    ne++;
  v = kcr__calloc(nb + ne + 2, sizeof(char *));
  il = strlen(s->exec_info);
  *info = kcr__malloc(sizeof(name) + il);
  if (!v || !*info) {
    kcr__free(v);
    kcr__free(*info);
    *info = NULL;
    return KCR_ENOMEM;
  }
  memcpy(*info, name, sizeof(name) - 1);
  memcpy(*info + sizeof(name) - 1, s->exec_info, il + 1);
  for (size_t i = 0; i < nb; i++) {
    int overridden = env_name_eq(base[i], name);
    for (size_t j = 0; j < ne && !overridden; j++)
      overridden = env_name_eq(base[i], s->env[j]);
    if (!overridden)
      v[n++] = base[i];
  }
  for (size_t j = 0; j < ne; j++)
    v[n++] = s->env[j];
  v[n++] = *info;
  v[n] = NULL;
  *out = v;
  return 0;
}

/* kill_and_reap ends the plugin's process group and collects the child. */
static void kill_and_reap(pid_t pid) {
  int st;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
}

/* stderr_text puts the kept stderr on one line, trimmed. */
static void stderr_text(char *buf, size_t len) {
  while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
    len--;
  buf[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t')
      buf[i] = ' ';
}

int kcr__exec_run(const kcr__exec_spec_t *spec, kcr_buf_t *out, kcr_error_t *err) {
  char *exe = NULL, *info = NULL, **envp = NULL;
  int outp[2] = {-1, -1}, errp[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  int fa_ok = 0, attr_ok = 0, rc, status = 0;
  pid_t pid = -1;
  char errbuf[KCR__EXEC_STDERR_KEEP + 1];
  size_t errlen = 0;
  int64_t deadline;
  sigset_t mask, defaults;
  static const int reset[] = {SIGPIPE, SIGCHLD, SIGHUP,  SIGINT, SIGQUIT,
                              SIGTERM, SIGUSR1, SIGUSR2, SIGALRM};

  if ((rc = find_executable(spec, &exe, err)) < 0)
    return rc;
  if (build_env(spec, &envp, &info) < 0) {
    rc = kcr_error_set(err, KCR_ENOMEM, "out of memory");
    goto done;
  }
  if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
    rc = kcr_error_set(err, KCR_ESYS, "exec plugin %s: pipe: %s", spec->command, strerror(errno));
    goto done;
  }
  if (posix_spawn_file_actions_init(&fa) != 0 || (fa_ok = 1, 0) ||
      posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
      posix_spawn_file_actions_adddup2(&fa, outp[1], 1) != 0 ||
      posix_spawn_file_actions_adddup2(&fa, errp[1], 2) != 0 || posix_spawnattr_init(&attr) != 0 ||
      (attr_ok = 1, 0)) {
    rc = kcr_error_set(err, KCR_ENOMEM, "out of memory");
    goto done;
  }
  sigemptyset(&mask);
  sigemptyset(&defaults);
  for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
    sigaddset(&defaults, reset[i]);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &mask);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  rc = posix_spawn(&pid, exe, &fa, &attr, spec->argv, envp);
  if (rc != 0) {
    pid = -1;
    rc = kcr_error_set(err, KCR_EAUTH, "exec plugin %s: cannot run %s: %s%s%s", spec->command, exe,
                       strerror(rc), hint_sep(spec), hint(spec));
    goto done;
  }
  close(outp[1]);
  close(errp[1]);
  outp[1] = errp[1] = -1;

  deadline = kcr_clock_now(kcr_clock_system()) + spec->timeout_ns;
  while (outp[0] >= 0 || errp[0] >= 0) {
    struct pollfd fds[2];
    char chunk[READ_CHUNK];
    int64_t left = deadline - kcr_clock_now(kcr_clock_system());
    int ready;
    if (left <= 0)
      goto timeout;
    fds[0].fd = outp[0];
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    fds[1].fd = errp[0];
    fds[1].events = POLLIN;
    fds[1].revents = 0;
    ready = poll(fds, 2, (int)((left + KCR_NSEC_PER_MSEC - 1) / KCR_NSEC_PER_MSEC));
    if (ready < 0 && errno != EINTR) {
      rc = kcr_error_set(err, KCR_ESYS, "exec plugin %s: poll: %s", spec->command, strerror(errno));
      kill_and_reap(pid);
      pid = -1;
      goto done;
    }
    if (ready <= 0)
      continue;
    if (fds[0].revents) {
      ssize_t n = read(outp[0], chunk, sizeof(chunk));
      if (n > 0) {
        rc = kcr_buf_append(out, chunk, (size_t)n);
        explicit_bzero(chunk, (size_t)n);
        if (rc == KCR_ETOOBIG) {
          kill_and_reap(pid);
          pid = -1;
          rc = kcr_error_set(err, KCR_ETOOBIG,
                             "exec plugin %s wrote more than %zu bytes to stdout; it was killed",
                             spec->command, out->max);
          goto done;
        }
        if (rc < 0) {
          kill_and_reap(pid);
          pid = -1;
          rc = kcr_error_set(err, KCR_ENOMEM, "out of memory reading exec plugin output");
          goto done;
        }
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(outp[0]);
        outp[0] = -1;
      }
    }
    if (fds[1].revents) {
      ssize_t n = read(errp[0], chunk, sizeof(chunk));
      if (n > 0) {
        size_t keep = KCR__EXEC_STDERR_KEEP - errlen;
        if (keep > (size_t)n)
          keep = (size_t)n;
        memcpy(errbuf + errlen, chunk, keep);
        errlen += keep;
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(errp[0]);
        errp[0] = -1;
      }
    }
  }
  /* Both pipes are closed; the child should be exiting. */
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid)
      break;
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0) {
      /* ECHILD: someone else reaped it (SIGCHLD ignored); judge by the output. */
      status = 0;
      break;
    }
    if (kcr_clock_now(kcr_clock_system()) >= deadline)
      goto timeout;
    {
      struct timespec ts = {0, 2 * KCR_NSEC_PER_MSEC};
      nanosleep(&ts, NULL);
    }
  }
  pid = -1;
  errbuf[errlen] = '\0';
  stderr_text(errbuf, errlen);
  if (WIFSIGNALED(status)) {
    rc = kcr_error_set(err, KCR_EAUTH, "exec plugin %s was killed by signal %d%s%s", spec->command,
                       WTERMSIG(status), errbuf[0] ? ": " : "", errbuf);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    rc = kcr_error_set(err, KCR_EAUTH, "exec plugin %s failed with exit code %d%s%s%s%s",
                       spec->command, WEXITSTATUS(status), errbuf[0] ? ": " : "", errbuf,
                       hint_sep(spec), hint(spec));
  } else {
    rc = 0;
  }
  goto done;

timeout:
  kill_and_reap(pid);
  pid = -1;
  rc = kcr_error_set(err, KCR_ETIMEDOUT,
                     "exec plugin %s did not finish within %lld ms; it was killed", spec->command,
                     (long long)(spec->timeout_ns / KCR_NSEC_PER_MSEC));

done:
  if (pid > 0)
    kill_and_reap(pid);
  for (int i = 0; i < 2; i++) {
    if (outp[i] >= 0)
      close(outp[i]);
    if (errp[i] >= 0)
      close(errp[i]);
  }
  if (fa_ok)
    posix_spawn_file_actions_destroy(&fa);
  if (attr_ok)
    posix_spawnattr_destroy(&attr);
  if (rc < 0 && out->data)
    explicit_bzero(out->data, out->len);
  if (rc < 0)
    kcr_buf_free(out);
  kcr__free(envp);
  kcr__free(info);
  kcr__free(exe);
  return rc;
}

/* get_string reads an optional string member; non-strings are an error. */
static int get_string(const kcr__exec_spec_t *s, json_t *obj, const char *key, const char **out,
                      kcr_error_t *err) {
  json_t *v = json_object_get(obj, key);
  *out = NULL;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v))
    return kcr_error_set(err, KCR_EAUTH, "exec plugin %s: status.%s is not a string", s->command,
                         key);
  *out = json_string_value(v);
  return 0;
}

static int dup_len(const char *s, size_t n, unsigned char **out, size_t *len) {
  *out = (unsigned char *)kcr__strndup(s, n);
  *len = n;
  return *out ? 0 : KCR_ENOMEM;
}

int kcr__exec_parse(const kcr__exec_spec_t *s, const char *data, size_t len,
                    kcr__exec_result_t *out, kcr_error_t *err) {
  json_error_t je;
  json_t *root, *status;
  const char *api, *kind, *token = NULL, *cert = NULL, *key = NULL, *exp = NULL;
  int rc;

  memset(out, 0, sizeof(*out));
  root = json_loadb(data, len, 0, &je);
  if (!root) {
#if JANSSON_VERSION_HEX >= 0x020b00
    if (json_error_code(&je) == json_error_out_of_memory)
      return kcr_error_set(err, KCR_ENOMEM, "out of memory decoding exec plugin output");
#endif
    /* je.text may quote the input, which is a credential: report the place only. */
    return kcr_error_set(err, KCR_EAUTH,
                         "exec plugin %s: output is not valid JSON (line %d, column %d)",
                         s->command, je.line, je.column);
  }
  if (!json_is_object(root)) {
    rc = kcr_error_set(err, KCR_EAUTH, "exec plugin %s: output is not a JSON object", s->command);
    goto fail;
  }
  api = json_string_value(json_object_get(root, "apiVersion"));
  kind = json_string_value(json_object_get(root, "kind"));
  if (!api || strcmp(api, s->api_version) != 0) {
    /* What the plugin printed is not quoted: its stdout is a credential. */
    rc = kcr_error_set(err, KCR_EAUTH,
                       "exec plugin %s is configured for apiVersion %s but returned %s", s->command,
                       s->api_version, api ? "another apiVersion" : "no apiVersion");
    goto fail;
  }
  if (!kind || strcmp(kind, "ExecCredential") != 0) {
    rc = kcr_error_set(err, KCR_EAUTH, "exec plugin %s: output kind is not ExecCredential",
                       s->command);
    goto fail;
  }
  status = json_object_get(root, "status");
  if (!json_is_object(status)) {
    rc = kcr_error_set(err, KCR_EAUTH, "exec plugin %s didn't return a status field", s->command);
    goto fail;
  }
  if ((rc = get_string(s, status, "token", &token, err)) < 0 ||
      (rc = get_string(s, status, "clientCertificateData", &cert, err)) < 0 ||
      (rc = get_string(s, status, "clientKeyData", &key, err)) < 0 ||
      (rc = get_string(s, status, "expirationTimestamp", &exp, err)) < 0)
    goto fail;
  if (token && !*token)
    token = NULL;
  if (cert && !*cert)
    cert = NULL;
  if (key && !*key)
    key = NULL;
  if (!token && !cert && !key) {
    rc = kcr_error_set(err, KCR_EAUTH, "exec plugin %s didn't return a token or cert/key pair",
                       s->command);
    goto fail;
  }
  if (!cert != !key) {
    rc = kcr_error_set(err, KCR_EAUTH,
                       "exec plugin %s returned only a client certificate or key, not both",
                       s->command);
    goto fail;
  }
  if (exp && kcr_time_parse(exp, strlen(exp), &out->expiry, NULL) < 0) {
    rc = kcr_error_set(err, KCR_EAUTH,
                       "exec plugin %s: status.expirationTimestamp is not an RFC 3339 time",
                       s->command);
    goto fail;
  }
  if ((token && !(out->token = kcr__strdup(token))) ||
      (cert && dup_len(cert, strlen(cert), &out->cert, &out->cert_len) < 0) ||
      (key && dup_len(key, strlen(key), &out->key, &out->key_len) < 0)) {
    rc = kcr_error_set(err, KCR_ENOMEM, "out of memory decoding exec plugin output");
    goto fail;
  }
  json_decref(root);
  return 0;

fail:
  kcr__exec_result_free(out);
  json_decref(root);
  return rc;
}
