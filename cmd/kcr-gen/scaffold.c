/* SPDX-License-Identifier: MIT */
/*
 * scaffold.c: `kcr-gen init` and `kcr-gen create api`, kubebuilder's two
 * scaffolding commands for a kcr project (docs/kcr-gen.md).
 *
 *   init [--domain D] [--project-name N] [DIR]   a new project in DIR (default .)
 *   create api --group G --version V --kind K [--plural P] [--cluster-scoped] [DIR]
 *                                                a kind, its CRD, sample,
 *                                                controller stub and test
 *
 * The templates are scaffold/<name>.tmpl, embedded at build time; {{var}} is
 * replaced by a value of the command line. Nothing is ever overwritten: every
 * check (names, the project's files, the kind not there yet, none of the new
 * files present) runs before the first write, each file is written to a
 * temporary name and renamed, and if a write fails the files already made by
 * this run are removed and the appended ones put back.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"
#include "kcr_gen_scaffold.h"
#include "scaffold.h"

#define MAX_VARS 16
#define MAX_FILES 32

/* A value is a validated name (at most 63 bytes) or made of a few (the group
 * and the domain: 317): VALUE_MAX holds any; bad says one did not fit. */
#define VALUE_MAX 512

typedef struct var {
  const char *name;
  char value[VALUE_MAX];
} var;

typedef struct vars {
  var v[MAX_VARS];
  size_t n;
  bool bad;
} vars;

/* fits tells whether snprintf's answer n says the text fit in size bytes. */
static bool fits(int n, size_t size) {
  return n >= 0 && (size_t)n < size;
}

/* One planned write: a new file from a template, or text appended to a file. */
#define PLAN_PATH_MAX 4096

typedef struct plan_file {
  char path[PLAN_PATH_MAX];
  char *text; /* new: the whole content */
  char *old;  /* append: the content before (restored on failure) */
  bool append;
  bool executable;
  bool written;
} plan_file;

typedef struct plan {
  const char *dir;
  plan_file *f[MAX_FILES]; /* new, owned */
  size_t n;
} plan;

static void set_var(vars *vs, const char *name, const char *value) {
  for (size_t i = 0; i < vs->n; i++) {
    if (strcmp(vs->v[i].name, name) == 0) {
      if (!fits(snprintf(vs->v[i].value, sizeof(vs->v[i].value), "%s", value), VALUE_MAX))
        vs->bad = true;
      return;
    }
  }
  if (vs->n < MAX_VARS) {
    vs->v[vs->n].name = name;
    if (!fits(snprintf(vs->v[vs->n].value, sizeof(vs->v[vs->n].value), "%s", value), VALUE_MAX))
      vs->bad = true;
    vs->n++;
  } else {
    vs->bad = true;
  }
}

static const char *template_text(const char *name) {
  for (size_t i = 0; scaffold_templates[i].name; i++)
    if (strcmp(scaffold_templates[i].name, name) == 0)
      return scaffold_templates[i].text;
  return NULL;
}

/* render: the template with every {{var}} replaced; a new string or NULL (msg says why). */
static char *render(const char *name, const vars *vs, char *msg, size_t size) {
  const char *t = template_text(name);
  if (!t) {
    gen_msgf(msg, size, "no template %s (kcr-gen was built without it)", name);
    return NULL;
  }
  size_t cap = strlen(t) * 2 + 256, len = 0;
  char *out = malloc(cap);
  while (out && *t) {
    const char *piece = t;
    size_t plen = 1;
    if (t[0] == '{' && t[1] == '{') {
      const char *end = strstr(t + 2, "}}");
      const var *hit = NULL;
      for (size_t i = 0; end && i < vs->n; i++)
        if (strlen(vs->v[i].name) == (size_t)(end - t - 2) &&
            strncmp(vs->v[i].name, t + 2, (size_t)(end - t - 2)) == 0)
          hit = &vs->v[i];
      if (!hit) {
        gen_msgf(msg, size, "template %s: unknown variable at \"%.20s\"", name, t);
        free(out);
        return NULL;
      }
      piece = hit->value;
      plen = strlen(hit->value);
      t = end + 2;
    } else {
      t++;
    }
    if (len + plen + 1 > cap) {
      char *n = realloc(out, cap = (len + plen + 1) * 2);
      if (!n) {
        free(out);
        out = NULL;
        break;
      }
      out = n;
    }
    memcpy(out + len, piece, plen);
    len += plen;
  }
  if (!out) {
    gen_msgf(msg, size, "out of memory");
    return NULL;
  }
  out[len] = '\0';
  return out;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* read_all: a file's content as a new string, or NULL (errno set). */
static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len < 2) {
      char *b = realloc(buf, cap *= 2);
      if (!b) {
        free(buf);
        buf = NULL;
      } else {
        buf = b;
      }
    }
  }
  fclose(f);
  if (buf)
    buf[len] = '\0';
  return buf;
}

int gen_mkdirs(const char *path) {
  char *tmp = strdup(path);
  int rc = 0, e = 0;
  if (!tmp)
    return -1;
  for (char *p = tmp + 1; *p && rc == 0; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
      rc = -1;
      e = errno;
    }
    *p = '/';
  }
  free(tmp);
  if (rc)
    errno = e;
  return rc;
}

static int write_file(const char *path, const char *text, bool executable) {
  char tmp[4200]; /* path is at most PLAN_PATH_MAX - 1 bytes */
  if (!fits(snprintf(tmp, sizeof(tmp), "%s.kcr-gen-tmp", path), sizeof(tmp))) {
    errno = ENAMETOOLONG;
    return -1;
  }
  if (gen_mkdirs(path) != 0)
    return -1;
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return -1;
  size_t len = strlen(text);
  int ok = fwrite(text, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (ok && executable)
    ok = chmod(tmp, 0755) == 0;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    errno = e;
    return -1;
  }
  return 0;
}

static void plan_free(plan *p) {
  for (size_t i = 0; i < p->n; i++) {
    free(p->f[i]->text);
    free(p->f[i]->old);
    free(p->f[i]);
  }
}

/* plan_slot: a new zeroed entry at the end of p (not counted until it is filled). */
static plan_file *plan_slot(plan *p, char *msg, size_t size) {
  plan_file *f = p->n < MAX_FILES ? calloc(1, sizeof(*f)) : NULL;
  if (!f)
    gen_msgf(msg, size, p->n < MAX_FILES ? "out of memory" : "too many files");
  return f;
}

/* plan_path sets f's path to DIR/rel; when too long, says so and frees f. */
static bool plan_path(const plan *p, plan_file *f, const char *rel, char *msg, size_t size) {
  if (fits(snprintf(f->path, sizeof(f->path), "%s/%s", p->dir, rel), sizeof(f->path)))
    return true;
  gen_msgf(msg, size, "%s/%s: the path is longer than %d bytes", p->dir, rel, PLAN_PATH_MAX - 1);
  free(f);
  return false;
}

/* plan_new: DIR/rel from a template; fails when the file is there already. */
static int plan_new(plan *p, const char *rel, const char *tmpl, const vars *vs, bool executable,
                    char *msg, size_t size) {
  plan_file *f = plan_slot(p, msg, size);
  if (!f)
    return -1;
  if (!plan_path(p, f, rel, msg, size))
    return -1;
  if (exists(f->path)) {
    gen_msgf(msg, size, "%s exists already: kcr-gen never overwrites a file", f->path);
    free(f);
    return -1;
  }
  if (!(f->text = render(tmpl, vs, msg, size))) {
    free(f);
    return -1;
  }
  f->executable = executable;
  p->f[p->n++] = f;
  return 0;
}

/* plan_append: text added at the end of DIR/rel, which must exist. */
static int plan_append(plan *p, const char *rel, const char *text, char *msg, size_t size) {
  plan_file *f = plan_slot(p, msg, size);
  if (!f)
    return -1;
  if (!plan_path(p, f, rel, msg, size))
    return -1;
  if (!(f->old = read_all(f->path))) {
    gen_msgf(msg, size, "%s: %s (is %s a kcr-gen project? run kcr-gen init first)", f->path,
             strerror(errno), p->dir);
    free(f);
    return -1;
  }
  size_t a = strlen(f->old), b = strlen(text);
  bool nl = a > 0 && f->old[a - 1] != '\n';
  if (!(f->text = malloc(a + b + 2))) {
    gen_msgf(msg, size, "out of memory");
    free(f->old);
    free(f);
    return -1;
  }
  memcpy(f->text, f->old, a);
  if (nl)
    f->text[a++] = '\n';
  memcpy(f->text + a, text, b + 1);
  f->append = true;
  p->f[p->n++] = f;
  return 0;
}

/* plan_run: write everything, or undo what was written and fail. */
static int plan_run(plan *p, char *msg, size_t size) {
  for (size_t i = 0; i < p->n; i++) {
    plan_file *f = p->f[i];
    if (write_file(f->path, f->text, f->executable) != 0) {
      gen_msgf(msg, size, "cannot write %s: %s (nothing was changed)", f->path, strerror(errno));
      for (size_t j = 0; j < i; j++) {
        if (p->f[j]->append)
          write_file(p->f[j]->path, p->f[j]->old, false);
        else
          unlink(p->f[j]->path);
      }
      return -1;
    }
    f->written = true;
  }
  return 0;
}

/* ---- names ---- */

static bool dns_label(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n == 0 || n > max || s[0] == '-' || s[n - 1] == '-')
    return false;
  for (const char *c = s; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
      return false;
  return s[0] >= 'a' && s[0] <= 'z';
}

static bool dns_subdomain(const char *s) {
  char part[254];
  size_t n = strlen(s);
  if (n == 0 || n > 253)
    return false;
  for (const char *start = s;;) {
    const char *dot = strchr(start, '.');
    size_t len = dot ? (size_t)(dot - start) : strlen(start);
    if (len == 0 || len >= sizeof(part))
      return false;
    memcpy(part, start, len);
    part[len] = '\0';
    for (const char *c = part; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
        return false;
    if (part[0] == '-' || part[len - 1] == '-')
      return false;
    if (!dot)
      return true;
    start = dot + 1;
  }
}

/* version: v1, v2beta1, v1alpha3 (Kubernetes' version names). */
static bool api_version_name(const char *s) {
  const char *c = s;
  if (*c++ != 'v' || !(*c >= '1' && *c <= '9'))
    return false;
  while (*c >= '0' && *c <= '9')
    c++;
  if (*c == '\0')
    return true;
  if (strncmp(c, "alpha", 5) == 0)
    c += 5;
  else if (strncmp(c, "beta", 4) == 0)
    c += 4;
  else
    return false;
  if (!(*c >= '1' && *c <= '9'))
    return false;
  while (*c >= '0' && *c <= '9')
    c++;
  return *c == '\0' && strlen(s) <= 63;
}

static bool kind_name(const char *s) {
  if (!(s[0] >= 'A' && s[0] <= 'Z') || strlen(s) > 63)
    return false;
  for (const char *c = s; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
      return false;
  return true;
}

/* snake: HTTPRoute -> http_route, MyKind -> my_kind, App -> app. */
static void snake(const char *in, char *out, size_t size) {
  size_t o = 0;
  for (size_t i = 0; in[i] && o + 2 < size; i++) {
    char c = in[i];
    bool upper = c >= 'A' && c <= 'Z';
    if (upper && i > 0) {
      bool prev_lower =
          (in[i - 1] >= 'a' && in[i - 1] <= 'z') || (in[i - 1] >= '0' && in[i - 1] <= '9');
      bool next_lower = in[i + 1] >= 'a' && in[i + 1] <= 'z';
      if (prev_lower || (next_lower && in[i - 1] >= 'A' && in[i - 1] <= 'Z'))
        out[o++] = '_';
    }
    out[o++] = upper ? (char)(c - 'A' + 'a') : c;
  }
  out[o] = '\0';
}

static void lower(const char *in, char *out, size_t size) {
  size_t o = 0;
  for (; in[o] && o + 1 < size; o++)
    out[o] = (in[o] >= 'A' && in[o] <= 'Z') ? (char)(in[o] - 'A' + 'a') : in[o];
  out[o] = '\0';
}

/* plural: the English plural of a lower-case kind, as kubebuilder's default. */
static void plural_of(const char *k, char *out, size_t size) {
  size_t n = strlen(k);
  bool vowel_before_y = n >= 2 && strchr("aeiou", k[n - 2]) != NULL;
  if (n >= 1 && k[n - 1] == 'y' && !vowel_before_y)
    snprintf(out, size, "%.*sies", (int)(n - 1), k);
  else if ((n >= 1 && strchr("sxz", k[n - 1])) ||
           (n >= 2 && (strcmp(k + n - 2, "ch") == 0 || strcmp(k + n - 2, "sh") == 0)))
    snprintf(out, size, "%ses", k);
  else
    snprintf(out, size, "%ss", k);
}

/* project_value: a top-level "key: value" of the PROJECT file, into out. */
static int project_value(const char *project, const char *key, char *out, size_t size) {
  size_t klen = strlen(key);
  for (const char *line = project; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (len > klen + 1 && strncmp(line, key, klen) == 0 && line[klen] == ':') {
      const char *v = line + klen + 1;
      while (*v == ' ')
        v++;
      size_t vlen = len - (size_t)(v - line);
      snprintf(out, size, "%.*s", (int)vlen, v);
      return 0;
    }
    line = nl ? nl + 1 : NULL;
  }
  return -1;
}

static void scaffold_usage(FILE *f) {
  fputs("usage: kcr-gen init [--domain DOMAIN] [--project-name NAME] [DIR]\n"
        "       kcr-gen create api --group GROUP --version VERSION --kind KIND\n"
        "                          [--plural PLURAL] [--cluster-scoped] [DIR]\n",
        f);
}

int gen_scaffold_init(int argc, char **argv) {
  const char *domain = "my.domain", *name = NULL, *dir = ".";
  char msg[4400] = "", base[256], abs[4096];
  vars vs = {0};
  plan p = {0};
  int rc = 1;

  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--domain") == 0 && i + 1 < argc)
      domain = argv[++i];
    else if (strcmp(argv[i], "--project-name") == 0 && i + 1 < argc)
      name = argv[++i];
    else if (argv[i][0] != '-' && strcmp(dir, ".") == 0)
      dir = argv[i];
    else {
      scaffold_usage(stderr);
      return 2;
    }
  }
  if (!dns_subdomain(domain)) {
    fprintf(stderr,
            "kcr-gen init: --domain %s: want a DNS subdomain (lower case, e.g. example.com)\n",
            domain);
    return 2;
  }
  if (!name) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "kcr-gen init: %s: %s\n", dir, strerror(errno));
      return 1;
    }
    if (!realpath(dir, abs)) {
      fprintf(stderr, "kcr-gen init: %s: %s\n", dir, strerror(errno));
      return 1;
    }
    const char *slash = strrchr(abs, '/');
    lower(slash ? slash + 1 : abs, base, sizeof(base));
    name = base;
  }
  if (!dns_label(name, 63)) {
    fprintf(stderr,
            "kcr-gen init: project name %s: want a DNS label (lower-case letters, digits, '-'); "
            "give one with --project-name\n",
            name);
    return 2;
  }
  char cname[256];
  snprintf(cname, sizeof(cname), "%s", name);
  for (char *c = cname; *c; c++)
    if (*c == '-')
      *c = '_';
  set_var(&vs, "project", name);
  set_var(&vs, "project_c", cname);
  set_var(&vs, "domain", domain);

  static const struct {
    const char *path, *tmpl;
    bool exec;
  } files[] = {
      {"PROJECT", "PROJECT", false},
      {"CMakeLists.txt", "CMakeLists.txt", false},
      {"Makefile", "Makefile", false},
      {"Dockerfile", "Dockerfile", false},
      {".gitignore", "gitignore", false},
      {".ci/run", "ci_run", true},
      {"README.md", "README.md", false},
      {"cmd/main.c", "main.c", false},
      {"test/integration/suite_test.c", "suite_test.c", false},
      {"api/types.cmake", "types.cmake", false},
      {"internal/controller/controllers.h", "controllers.h", false},
      {"internal/controller/controllers.c", "controllers.c", false},
      {"internal/controller/controllers.inc", "controllers.inc", false},
      {"config/default/kustomization.yaml", "kustomization_default.yaml", false},
      {"config/manager/manager.yaml", "manager.yaml", false},
      {"config/manager/kustomization.yaml", "kustomization_manager.yaml", false},
      {"config/rbac/kustomization.yaml", "kustomization_rbac.yaml", false},
      {"config/rbac/service_account.yaml", "service_account.yaml", false},
      {"config/rbac/role.yaml", "role.yaml", false},
      {"config/rbac/role_binding.yaml", "role_binding.yaml", false},
      {"config/rbac/leader_election_role.yaml", "leader_election_role.yaml", false},
      {"config/rbac/leader_election_role_binding.yaml", "leader_election_role_binding.yaml", false},
      {"config/crd/kustomization.yaml", "kustomization_crd.yaml", false},
      {"config/samples/kustomization.yaml", "kustomization_samples.yaml", false},
  };
  p.dir = dir;
  if (vs.bad) {
    gen_msgf(msg, sizeof(msg), "a template value is longer than %d bytes", VALUE_MAX - 1);
    goto out;
  }
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
    if (plan_new(&p, files[i].path, files[i].tmpl, &vs, files[i].exec, msg, sizeof(msg)) != 0)
      goto out;
  if (plan_run(&p, msg, sizeof(msg)) != 0)
    goto out;
  for (size_t i = 0; i < p.n; i++)
    printf("%s\n", p.f[i]->path);
  rc = 0;
out:
  if (rc)
    fprintf(stderr, "kcr-gen init: %s\n", msg);
  plan_free(&p);
  return rc;
}

int gen_scaffold_create(int argc, char **argv) {
  const char *group = NULL, *version = NULL, *kind = NULL, *plural_opt = NULL, *dir = ".";
  bool cluster = false;
  char msg[4400] = "", path[4200], domain[256], fq[512], ks[128], kl[128], pl[160], prefix[200];
  char *project = NULL;
  vars vs = {0};
  plan p = {0};
  int rc = 1;

  if (argc < 1 || strcmp(argv[0], "api") != 0) {
    scaffold_usage(stderr);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--group") == 0 && i + 1 < argc)
      group = argv[++i];
    else if (strcmp(argv[i], "--version") == 0 && i + 1 < argc)
      version = argv[++i];
    else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
      kind = argv[++i];
    else if (strcmp(argv[i], "--plural") == 0 && i + 1 < argc)
      plural_opt = argv[++i];
    else if (strcmp(argv[i], "--cluster-scoped") == 0)
      cluster = true;
    else if (argv[i][0] != '-' && strcmp(dir, ".") == 0)
      dir = argv[i];
    else {
      scaffold_usage(stderr);
      return 2;
    }
  }
  if (!group || !version || !kind) {
    fprintf(stderr, "kcr-gen create api: --group, --version and --kind are required\n");
    scaffold_usage(stderr);
    return 2;
  }
  if (!dns_label(group, 63)) {
    fprintf(stderr, "kcr-gen create api: --group %s: want a DNS label (e.g. apps, batch)\n", group);
    return 2;
  }
  if (!api_version_name(version)) {
    fprintf(stderr, "kcr-gen create api: --version %s: want v1, v2beta1, v1alpha1, ...\n", version);
    return 2;
  }
  if (!kind_name(kind)) {
    fprintf(stderr,
            "kcr-gen create api: --kind %s: want CamelCase letters and digits (e.g. "
            "CronJob)\n",
            kind);
    return 2;
  }
  if (plural_opt && !dns_label(plural_opt, 63)) {
    fprintf(stderr, "kcr-gen create api: --plural %s: want lower-case letters and digits\n",
            plural_opt);
    return 2;
  }
  if (!fits(snprintf(path, sizeof(path), "%s/PROJECT", dir), sizeof(path))) {
    fprintf(stderr, "kcr-gen create api: %s/PROJECT: the path is longer than %zu bytes\n", dir,
            sizeof(path) - 1);
    return 1;
  }
  if (!(project = read_all(path))) {
    fprintf(stderr, "kcr-gen create api: %s: %s (run kcr-gen init first)\n", path, strerror(errno));
    return 1;
  }
  if (project_value(project, "domain", domain, sizeof(domain)) != 0 || !dns_subdomain(domain)) {
    fprintf(stderr, "kcr-gen create api: %s has no valid \"domain:\" line\n", path);
    goto done;
  }
  snprintf(fq, sizeof(fq), "%s.%s", group, domain);
  snake(kind, ks, sizeof(ks));
  lower(kind, kl, sizeof(kl));
  if (plural_opt)
    snprintf(pl, sizeof(pl), "%s", plural_opt);
  else
    plural_of(kl, pl, sizeof(pl));
  snprintf(prefix, sizeof(prefix), "%s_%s", ks, version);

  /* The kind once per project (its C names are per kind, not per group). */
  char needle[300];
  snprintf(needle, sizeof(needle), "\n    kind: %s\n", kind);
  if (strstr(project, needle)) {
    fprintf(stderr, "kcr-gen create api: %s has kind %s already\n", path, kind);
    goto done;
  }

  set_var(&vs, "group", group);
  set_var(&vs, "fqgroup", fq);
  set_var(&vs, "version", version);
  set_var(&vs, "kind", kind);
  set_var(&vs, "kind_snake", ks);
  set_var(&vs, "kind_lower", kl);
  set_var(&vs, "plural", pl);
  set_var(&vs, "prefix", prefix);
  set_var(&vs, "scope", cluster ? "Cluster" : "Namespaced");

  char crd[700], sample[700], ctl[300], test[300], text[1200];
  snprintf(crd, sizeof(crd), "config/crd/bases/%s_%s.yaml", fq, pl);
  snprintf(sample, sizeof(sample), "config/samples/%s_%s_%s.yaml", group, version, kl);
  snprintf(ctl, sizeof(ctl), "internal/controller/%s_controller.c", ks);
  snprintf(test, sizeof(test), "test/%s_controller_test.c", ks);
  p.dir = dir;
  if (vs.bad) {
    gen_msgf(msg, sizeof(msg), "a template value is longer than %d bytes", VALUE_MAX - 1);
    goto done;
  }
  if (plan_new(&p, crd, "crd.yaml", &vs, false, msg, sizeof(msg)) ||
      plan_new(&p, sample, "sample.yaml", &vs, false, msg, sizeof(msg)) ||
      plan_new(&p, ctl, "controller.c", &vs, false, msg, sizeof(msg)) ||
      plan_new(&p, test, "controller_test.c", &vs, false, msg, sizeof(msg)))
    goto done;
  snprintf(text, sizeof(text),
           "kcr_gen_types(%s_types CRD ${CMAKE_CURRENT_SOURCE_DIR}/%s PREFIX %s VERSIONS %s)\n"
           "list(APPEND PROJECT_TYPES %s_types)\n",
           ks, crd, ks, version, ks);
  if (plan_append(&p, "api/types.cmake", text, msg, sizeof(msg)))
    goto done;
  snprintf(text, sizeof(text), "KCR_CONTROLLER(%s)\n", ks);
  if (plan_append(&p, "internal/controller/controllers.inc", text, msg, sizeof(msg)))
    goto done;
  snprintf(text, sizeof(text), "  - bases/%s_%s.yaml\n", fq, pl);
  if (plan_append(&p, "config/crd/kustomization.yaml", text, msg, sizeof(msg)))
    goto done;
  snprintf(text, sizeof(text), "  - %s_%s_%s.yaml\n", group, version, kl);
  if (plan_append(&p, "config/samples/kustomization.yaml", text, msg, sizeof(msg)))
    goto done;
  snprintf(text, sizeof(text),
           "  - group: %s\n    version: %s\n    kind: %s\n    plural: %s\n    namespaced: %s\n",
           group, version, kind, pl, cluster ? "false" : "true");
  if (plan_append(&p, "PROJECT", text, msg, sizeof(msg)))
    goto done;
  if (plan_run(&p, msg, sizeof(msg)))
    goto done;
  for (size_t i = 0; i < p.n; i++)
    printf("%s\n", p.f[i]->path);
  rc = 0;
done:
  if (rc && msg[0])
    fprintf(stderr, "kcr-gen create api: %s\n", msg);
  plan_free(&p);
  free(project);
  return rc;
}
