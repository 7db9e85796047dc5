/* SPDX-License-Identifier: MIT */
/*
 * scaffold.c: `kcr-gen init`, `kcr-gen create api` and `kcr-gen create
 * webhook`, kubebuilder's go/v4 scaffolding commands for a kcr project
 * (docs/kcr-gen.md has the file-for-file table).
 *
 *   init [--domain D] [--project-name N] [DIR]   a new project in DIR (default .)
 *   create api --group G --version V --kind K [--plural P] [--cluster-scoped]
 *              [--crd-first] [DIR]               a kind: its type header and the
 *                                                CRD made of it (or, --crd-first,
 *                                                a CRD to edit), sample, roles,
 *                                                controller stub and test
 *   create webhook --group G --version V --kind K [--defaulting]
 *                  [--programmatic-validation] [--conversion --spoke V2...] [DIR]
 *                                                typed admission webhooks for
 *                                                a kind, or conversion between
 *                                                its versions (V the hub), their
 *                                                tests, manifests and the
 *                                                config/ switches
 *
 * The templates are scaffold/<name>.tmpl, embedded at build time; {{var}} is
 * replaced by a value of the command line, {{>name}} by the template name, and
 * {{#name}} by the template name with every line commented out with '#': the
 * switchable blocks of a kustomization, which a later command turns on by
 * taking the '#' away again (so the text it looks for and the text init wrote
 * come from one template).
 *
 * Every command first makes a plan: new files, and edits of existing ones
 * (text appended, inserted above a "+kcr-gen:scaffold:" marker line, or
 * uncommented). Nothing is ever overwritten: every check (names, the project's
 * files, the kind there or not, none of the new files present) runs before
 * the first write, each file is written to a temporary name and renamed, and
 * if a write fails the files made by this run are removed and the edited ones
 * put back. The files rewritten whole are generated ones:
 * config/webhook/manifests.yaml, and a types-first kind's CRD, made with
 * kcr-gen crd's own code from the kind's headers (as planned), so that it is
 * what `make manifests` writes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crd.h"
#include "gen.h"
#include "kcr/buf.h"
#include "kcr_gen_scaffold.h"
#include "scaffold.h"

#define MAX_VARS 48
#define MAX_FILES 64
/* MAX_RESOURCES bounds the kinds a PROJECT file lists. */
#define MAX_RESOURCES 256

/* A value is a validated name (at most 63 bytes) or made of a few (the group
 * and the domain: 317): VALUE_MAX holds any; bad says one did not fit. */
#define VALUE_MAX 1024

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

/* ---- text: growable strings and the edits a plan makes ---- */

/* A growable string; NULL text after a failed allocation. */
typedef struct sbuf {
  char *s;
  size_t len, cap;
  bool nomem;
} sbuf;

static void text_add(sbuf *t, const char *piece, size_t n) {
  if (t->nomem)
    return;
  if (!t->s || t->len + n + 1 > t->cap) {
    size_t cap = (t->len + n + 1) * 2;
    char *s = realloc(t->s, cap);
    if (!s) {
      free(t->s);
      t->s = NULL;
      t->nomem = true;
      return;
    }
    t->s = s;
    t->cap = cap;
  }
  memcpy(t->s + t->len, piece, n);
  t->len += n;
  t->s[t->len] = '\0';
}

static void text_adds(sbuf *t, const char *piece) {
  text_add(t, piece, strlen(piece));
}

/* text_take: the string (new; "" when nothing was added), or NULL when out of memory. */
static char *text_take(sbuf *t) {
  if (!t->nomem && !t->s)
    text_add(t, "", 0);
  return t->nomem ? NULL : t->s;
}

char *gen_text_comment(const char *block) {
  sbuf t = {0};
  for (const char *line = block; *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
    text_add(&t, "#", 1);
    text_add(&t, line, len);
    line += len;
  }
  return text_take(&t);
}

/* find_line: the first place in text where needle starts a line, or NULL. */
static const char *find_line(const char *text, const char *needle) {
  size_t n = strlen(needle);
  for (const char *line = text; line && *line;) {
    if (strncmp(line, needle, n) == 0)
      return line;
    line = strchr(line, '\n');
    if (line)
      line++;
  }
  return NULL;
}

/* splice: text with [at, at + cut) replaced by add, into *out (new). */
static int splice(const char *text, const char *at, size_t cut, const char *add, char **out) {
  struct sbuf t = {0};
  text_add(&t, text, (size_t)(at - text));
  text_adds(&t, add);
  text_adds(&t, at + cut);
  return (*out = text_take(&t)) ? GEN_TEXT_OK : GEN_TEXT_NOMEM;
}

/* name_char: whether c continues a marker's name (so "+x:crd-ca-name" is not
 * found in "+x:crd-ca-namespace"). */
static bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == ':';
}

int gen_text_insert_before(const char *text, const char *marker, const char *add, char **out) {
  size_t mlen = strlen(marker);
  *out = NULL;
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    const char *end = nl ? nl : line + strlen(line);
    for (const char *hit = strstr(line, marker); hit && hit < end; hit = strstr(hit + 1, marker))
      if (!name_char(hit[mlen]))
        return splice(text, line, 0, add, out);
    line = nl ? nl + 1 : NULL;
  }
  return GEN_TEXT_NOTFOUND;
}

int gen_text_uncomment(const char *text, const char *block, char **out) {
  char *commented = gen_text_comment(block);
  const char *at;
  int rc;
  *out = NULL;
  if (!commented)
    return GEN_TEXT_NOMEM;
  if ((at = find_line(text, commented)) != NULL)
    rc = splice(text, at, strlen(commented), block, out);
  else if (find_line(text, block) != NULL)
    rc = (*out = strdup(text)) ? GEN_TEXT_OK : GEN_TEXT_NOMEM;
  else
    rc = GEN_TEXT_NOTFOUND;
  free(commented);
  return rc;
}

/*
 * render: the template with every {{var}} replaced, every {{>name}} made the
 * template name and every {{#name}} that template commented out; a new string
 * or NULL (msg says why). depth bounds the nesting of includes.
 */
static char *render_at(const char *name, const vars *vs, int depth, char *msg, size_t size) {
  const char *t = template_text(name);
  sbuf out = {0};
  if (!t) {
    gen_msgf(msg, size, "no template %s (kcr-gen was built without it)", name);
    return NULL;
  }
  while (*t && !out.nomem) {
    const char *end = t[0] == '{' && t[1] == '{' ? strstr(t + 2, "}}") : NULL;
    if (!end) {
      const char *next = strstr(t + 1, "{{");
      size_t n = next ? (size_t)(next - t) : strlen(t);
      text_add(&out, t, n);
      t += n;
      continue;
    }
    const char *key = t + 2;
    size_t klen = (size_t)(end - key);
    if ((key[0] == '#' || key[0] == '>') && depth < 2) {
      char sub[128];
      char *inner, *commented;
      if (!fits(snprintf(sub, sizeof(sub), "%.*s", (int)klen - 1, key + 1), sizeof(sub)) ||
          !(inner = render_at(sub, vs, depth + 1, msg, size))) {
        if (!msg[0])
          gen_msgf(msg, size, "template %s: a bad {{%c...}}", name, key[0]);
        free(out.s);
        return NULL;
      }
      if (key[0] == '>') {
        commented = inner;
      } else {
        commented = gen_text_comment(inner);
        free(inner);
      }
      if (commented)
        text_adds(&out, commented);
      else
        out.nomem = true;
      free(commented);
      t = end + 2;
      /* the sub-template ends its own last line */
      if (*t == '\n')
        t++;
      continue;
    }
    const var *hit = NULL;
    for (size_t i = 0; i < vs->n; i++)
      if (strlen(vs->v[i].name) == klen && strncmp(vs->v[i].name, key, klen) == 0)
        hit = &vs->v[i];
    if (!hit) {
      gen_msgf(msg, size, "template %s: unknown variable at \"%.20s\"", name, t);
      free(out.s);
      return NULL;
    }
    text_adds(&out, hit->value);
    t = end + 2;
  }
  char *s = text_take(&out);
  if (!s)
    gen_msgf(msg, size, "out of memory");
  return s;
}

static char *render(const char *name, const vars *vs, char *msg, size_t size) {
  return render_at(name, vs, 0, msg, size);
}

/* render_all: the templates of a NULL-terminated list (NULL entries skipped
 * up to n), one after the other; a new string or NULL (msg says why). */
static char *render_all(const char *const *names, size_t n, const vars *vs, char *msg,
                        size_t size) {
  sbuf t = {0};
  for (size_t i = 0; i < n; i++) {
    if (!names[i])
      continue;
    char *part = render(names[i], vs, msg, size);
    if (!part) {
      free(t.s);
      return NULL;
    }
    text_adds(&t, part);
    free(part);
  }
  char *s = text_take(&t);
  if (!s)
    gen_msgf(msg, size, "out of memory");
  return s;
}

/* ---- the plan ---- */

/* One planned write: a new file, or an edit of one that exists. */
#define PLAN_PATH_MAX 4096

typedef struct plan_file {
  char path[PLAN_PATH_MAX];
  char *text; /* the whole content to write */
  char *old;  /* an edit: the content before (restored on failure); NULL: new */
  bool executable;
} plan_file;

typedef struct plan {
  const char *dir;
  const char *cmd;         /* for warnings: "kcr-gen create api" */
  plan_file *f[MAX_FILES]; /* new, owned */
  size_t n;
} plan;

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
  else
    errno = ENOMEM;
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

/* plan_find: the planned entry for DIR/rel, or NULL; path gets DIR/rel. */
static plan_file *plan_find(const plan *p, const char *rel, char *path, char *msg, size_t size,
                            bool *bad) {
  *bad = !fits(snprintf(path, PLAN_PATH_MAX, "%s/%s", p->dir, rel), PLAN_PATH_MAX);
  if (*bad) {
    gen_msgf(msg, size, "%s/%s: the path is longer than %d bytes", p->dir, rel, PLAN_PATH_MAX - 1);
    return NULL;
  }
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->f[i]->path, path) == 0)
      return p->f[i];
  return NULL;
}

/* plan_add: a new entry for path with text (stolen, on every path). */
static plan_file *plan_add(plan *p, const char *path, char *text, char *old, char *msg,
                           size_t size) {
  plan_file *f = p->n < MAX_FILES ? calloc(1, sizeof(*f)) : NULL;
  if (!f) {
    gen_msgf(msg, size, p->n < MAX_FILES ? "out of memory" : "too many files");
    free(text);
    free(old);
    return NULL;
  }
  snprintf(f->path, sizeof(f->path), "%s", path);
  f->text = text;
  f->old = old;
  p->f[p->n++] = f;
  return f;
}

/* plan_new_text: DIR/rel with text (stolen); fails when the file is there already. */
static int plan_new_text(plan *p, const char *rel, char *text, bool executable, char *msg,
                         size_t size) {
  char path[PLAN_PATH_MAX];
  bool bad;
  plan_file *f;
  if (!text)
    return -1; /* the renderer said why */
  if (plan_find(p, rel, path, msg, size, &bad) || (!bad && exists(path))) {
    gen_msgf(msg, size, "%s exists already: kcr-gen never overwrites a file", path);
    bad = true;
  }
  if (bad || !(f = plan_add(p, path, text, NULL, msg, size))) {
    if (bad)
      free(text);
    return -1;
  }
  f->executable = executable;
  return 0;
}

/* plan_new: DIR/rel from a template; fails when the file is there already. */
static int plan_new(plan *p, const char *rel, const char *tmpl, const vars *vs, bool executable,
                    char *msg, size_t size) {
  return plan_new_text(p, rel, render(tmpl, vs, msg, size), executable, msg, size);
}

/* template_of: the template name of a scaffolded path ('/' as '_', without a leading '.'), into
 * out. */
static void template_of(const char *path, char *out, size_t size) {
  size_t o = 0;
  for (const char *c = path[0] == '.' ? path + 1 : path; *c && o + 1 < size; c++)
    out[o++] = *c == '/' ? '_' : *c;
  out[o] = '\0';
}

/* executable: whether a scaffolded path is a script. */
static bool executable(const char *path) {
  size_t n = strlen(path);
  return strcmp(path, ".ci/run") == 0 || (n > 3 && strcmp(path + n - 3, ".sh") == 0);
}

/* plan_new_once: DIR/rel from its template (template_of) unless it exists (on
 * disk or in the plan): 1 when planned, 0 when it was there, -1 on an error. */
static int plan_new_once(plan *p, const char *rel, const vars *vs, char *msg, size_t size) {
  char path[PLAN_PATH_MAX], tmpl[256];
  bool bad;
  if (plan_find(p, rel, path, msg, size, &bad) || (!bad && exists(path)))
    return 0;
  if (bad)
    return -1;
  template_of(rel, tmpl, sizeof(tmpl));
  return plan_new(p, rel, tmpl, vs, false, msg, size) == 0 ? 1 : -1;
}

/* plan_edit: the entry whose text an edit of DIR/rel changes: the planned one,
 * or a new one holding the file's content (which must exist). */
static plan_file *plan_edit(plan *p, const char *rel, char *msg, size_t size) {
  char path[PLAN_PATH_MAX];
  bool bad;
  plan_file *f = plan_find(p, rel, path, msg, size, &bad);
  char *old, *text;
  if (f || bad)
    return f;
  if (!(old = read_all(path))) {
    gen_msgf(msg, size, "%s: %s (is %s a kcr-gen project? run kcr-gen init first)", path,
             strerror(errno), p->dir);
    return NULL;
  }
  if (!(text = strdup(old))) {
    gen_msgf(msg, size, "out of memory");
    free(old);
    return NULL;
  }
  return plan_add(p, path, text, old, msg, size);
}

/* plan_append: text added at the end of DIR/rel. */
static int plan_append(plan *p, const char *rel, const char *add, char *msg, size_t size) {
  plan_file *f = plan_edit(p, rel, msg, size);
  sbuf t = {0};
  if (!f)
    return -1;
  text_adds(&t, f->text);
  if (t.len > 0 && t.s && t.s[t.len - 1] != '\n')
    text_adds(&t, "\n");
  text_adds(&t, add);
  if (!text_take(&t)) {
    gen_msgf(msg, size, "out of memory");
    return -1;
  }
  free(f->text);
  f->text = t.s;
  return 0;
}

/* An edit of a text (gen_text_insert_before's shape): GEN_TEXT_OK with *out
 * new, GEN_TEXT_NOTFOUND, GEN_TEXT_NOMEM. */
typedef int (*edit_fn)(const char *text, const char *where, const char *add, char **out);

static int uncomment_edit(const char *text, const char *block, const char *unused, char **out) {
  (void)unused;
  return gen_text_uncomment(text, block, out);
}

/* plan_apply runs fn over DIR/rel's planned text: 0 when it applied, 1 when
 * it found no place (the text unchanged; *fp the entry), -1 on an error (msg). */
static int plan_apply(plan *p, const char *rel, edit_fn fn, const char *where, const char *add,
                      plan_file **fp, char *msg, size_t size) {
  plan_file *f = *fp = plan_edit(p, rel, msg, size);
  char *out;
  int rc;
  if (!f)
    return -1;
  if ((rc = fn(f->text, where, add, &out)) == GEN_TEXT_NOTFOUND)
    return 1;
  if (rc != GEN_TEXT_OK) {
    gen_msgf(msg, size, "out of memory");
    return -1;
  }
  free(f->text);
  f->text = out;
  return 0;
}

/* plan_insert: add above the line of DIR/rel holding marker; at the end when
 * the file has no marker (a project scaffolded before the markers). */
static int plan_insert(plan *p, const char *rel, const char *marker, const char *add, char *msg,
                       size_t size) {
  plan_file *f;
  int rc = plan_apply(p, rel, gen_text_insert_before, marker, add, &f, msg, size);
  return rc == 1 ? plan_append(p, rel, add, msg, size) : rc;
}

/* plan_insert_marked: as plan_insert, but the marker must be there (code
 * appended at the end of a C file would not compile). */
static int plan_insert_marked(plan *p, const char *rel, const char *marker, const char *add,
                              char *msg, size_t size) {
  plan_file *f;
  int rc = plan_apply(p, rel, gen_text_insert_before, marker, add, &f, msg, size);
  if (rc == 1)
    gen_msgf(msg, size, "%s has no line with \"%s\": put it back where kcr-gen init wrote it",
             f->path, marker);
  return rc == 0 ? 0 : -1;
}

/*
 * plan_uncomment turns block on in DIR/rel (gen_text_uncomment). A block that
 * is in neither form is not an error: the user changed the file, so a warning
 * on stderr names the switch to set by hand (kubebuilder does the same).
 */
static int plan_uncomment(plan *p, const char *rel, const char *block, const char *what, char *msg,
                          size_t size) {
  plan_file *f;
  int rc = plan_apply(p, rel, uncomment_edit, block, NULL, &f, msg, size);
  if (rc == 1)
    fprintf(stderr, "%s: warning: %s: cannot find the lines of %s; turn it on by hand\n", p->cmd,
            f->path, what);
  return rc < 0 ? -1 : 0;
}

/* plan_uncomment_tmpl: plan_uncomment with a template's text as the block. */
static int plan_uncomment_tmpl(plan *p, const char *rel, const char *tmpl, const vars *vs,
                               const char *what, char *msg, size_t size) {
  char *block = render(tmpl, vs, msg, size);
  int rc;
  if (!block)
    return -1;
  rc = plan_uncomment(p, rel, block, what, msg, size);
  free(block);
  return rc;
}

/* plan_replace: DIR/rel's whole content becomes text (stolen); the file may
 * not exist yet. For generated files only. */
static int plan_replace(plan *p, const char *rel, char *text, char *msg, size_t size) {
  char path[PLAN_PATH_MAX];
  bool bad;
  plan_file *f;
  if (!text)
    return -1;
  if (!plan_find(p, rel, path, msg, size, &bad) && !bad && !exists(path))
    return plan_new_text(p, rel, text, false, msg, size);
  if (bad || !(f = plan_edit(p, rel, msg, size))) {
    free(text);
    return -1;
  }
  free(f->text);
  f->text = text;
  return 0;
}

/* plan_run: write everything, or undo what was written and fail. Prints each
 * path it wrote. */
static int plan_run(plan *p, char *msg, size_t size) {
  for (size_t i = 0; i < p->n; i++) {
    plan_file *f = p->f[i];
    if (f->old && strcmp(f->old, f->text) == 0)
      continue; /* an edit that changed nothing */
    if (write_file(f->path, f->text, f->executable) != 0) {
      gen_msgf(msg, size, "cannot write %s: %s (nothing was changed)", f->path, strerror(errno));
      for (size_t j = 0; j < i; j++) {
        if (p->f[j]->old)
          write_file(p->f[j]->path, p->f[j]->old, false);
        else
          unlink(p->f[j]->path);
      }
      return -1;
    }
  }
  for (size_t i = 0; i < p->n; i++)
    if (!p->f[i]->old || strcmp(p->f[i]->old, p->f[i]->text) != 0)
      printf("%s\n", p->f[i]->path);
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

/* ---- formatting ---- */

/*
 * format_sources runs clang-format -i over the C files the plan wrote, as
 * kubebuilder runs gofmt over the Go files it writes: the templates' code
 * lines up for some names only, and a fresh project is to pass its own `make
 * lint`. The project's .clang-format decides (--style=file). The program is
 * $KCR_GEN_CLANG_FORMAT (empty or "none": no formatting), default
 * clang-format; when it is not installed nothing happens, and when it fails
 * the files stay as written and a warning says so.
 */
static void format_sources(const plan *p) {
  const char *prog = getenv("KCR_GEN_CLANG_FORMAT");
  char *argv[MAX_FILES + 4];
  size_t n = 0;
  int status = 0;
  pid_t pid;
  if (!prog)
    prog = "clang-format";
  if (!*prog || strcmp(prog, "none") == 0)
    return;
  argv[n++] = (char *)prog; /* execvp's argv is not const; it writes nothing */
  argv[n++] = (char *)"-i";
  argv[n++] = (char *)"--style=file";
  for (size_t i = 0; i < p->n; i++) {
    size_t len = strlen(p->f[i]->path);
    if (len > 2 && p->f[i]->path[len - 2] == '.' &&
        (p->f[i]->path[len - 1] == 'c' || p->f[i]->path[len - 1] == 'h'))
      argv[n++] = p->f[i]->path;
  }
  argv[n] = NULL;
  if (n == 3)
    return;
  fflush(NULL);
  if ((pid = fork()) < 0)
    return;
  if (pid == 0) {
    execvp(prog, argv);
    _exit(127); /* not installed: leave the files as they are */
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 127)
    fprintf(stderr, "%s: warning: %s exited %d: the C files are not formatted\n", p->cmd, prog,
            WEXITSTATUS(status));
}

/*
 * plan_close ends a command: when ok, the plan is written (plan_run) and its C
 * files formatted; when not ok or the writing failed, msg (if any) is printed
 * after the command's name. Frees the plan; returns the exit status, 0 or 1.
 */
static int plan_close(plan *p, bool ok, char *msg, size_t size) {
  int rc = ok && plan_run(p, msg, size) == 0 ? 0 : 1;
  if (rc == 0)
    format_sources(p);
  else if (msg[0])
    fprintf(stderr, "%s: %s\n", p->cmd, msg);
  plan_free(p);
  return rc;
}

/* ---- the PROJECT file ---- */

/* copy_field: "key: value" at line (len bytes) into r's field of that key. */
static void copy_field(gen_resource *r, const char *line, size_t len) {
  static const struct {
    const char *key;
    size_t off;
  } fields[] = {
      {"group", offsetof(gen_resource, group)},
      {"version", offsetof(gen_resource, version)},
      {"kind", offsetof(gen_resource, kind)},
      {"plural", offsetof(gen_resource, plural)},
  };
  const char *colon = memchr(line, ':', len);
  if (!colon)
    return;
  size_t klen = (size_t)(colon - line);
  const char *v = colon + 1;
  while (v < line + len && *v == ' ')
    v++;
  int vlen = (int)(len - (size_t)(v - line));
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
    if (strlen(fields[i].key) == klen && strncmp(line, fields[i].key, klen) == 0)
      snprintf((char *)r + fields[i].off, GEN_RESOURCE_NAME_MAX, "%.*s", vlen, v);
  if (klen == 10 && strncmp(line, "namespaced", klen) == 0)
    r->namespaced = vlen == 4 && strncmp(v, "true", 4) == 0;
  if (klen == 10 && strncmp(line, "defaulting", klen) == 0)
    r->defaulting = vlen == 4 && strncmp(v, "true", 4) == 0;
  if (klen == 10 && strncmp(line, "validation", klen) == 0)
    r->validation = vlen == 4 && strncmp(v, "true", 4) == 0;
  if (klen == 10 && strncmp(line, "conversion", klen) == 0)
    r->conversion = vlen == 4 && strncmp(v, "true", 4) == 0;
}

int gen_project_resources(const char *project, gen_resource *out, size_t max, size_t *n) {
  const char *line = strstr(project, "\nresources:\n");
  *n = 0;
  if (!line)
    return 0;
  for (line += strlen("\nresources:\n"); *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    if (len > 4 && strncmp(line, "  - ", 4) == 0) {
      if (*n == max)
        return -1;
      memset(&out[*n], 0, sizeof(out[*n]));
      copy_field(&out[(*n)++], line + 4, len - 4);
    } else if (*n > 0 && len > 6 && strncmp(line, "      ", 6) == 0) {
      copy_field(&out[*n - 1], line + 6, len - 6); /* webhooks: ... */
    } else if (*n > 0 && len > 4 && strncmp(line, "    ", 4) == 0) {
      copy_field(&out[*n - 1], line + 4, len - 4);
    } else if (len > 0 && line[0] != '#' && line[0] != ' ') {
      break; /* the next top-level key */
    }
    line = nl ? nl + 1 : line + len;
  }
  return 0;
}

int gen_project_add_webhooks(const char *project, const gen_resource *r, const char *const *spokes,
                             size_t n_spokes, char **out) {
  char needle[3 * GEN_RESOURCE_NAME_MAX + 64], block[256 + 8 * GEN_RESOURCE_NAME_MAX];
  *out = NULL;
  snprintf(needle, sizeof(needle), "  - group: %s\n    version: %s\n    kind: %s\n", r->group,
           r->version, r->kind);
  const char *at = strstr(project, needle);
  if (!at)
    return GEN_TEXT_NOTFOUND;
  /* the end of this resource: the next line that is not indented deeper than
   * "  - "; or, when it has webhooks, the line of their webhookVersion */
  const char *end = at + strlen(needle), *version = NULL;
  while (*end && strncmp(end, "    ", 4) == 0) {
    const char *nl = strchr(end, '\n');
    if (strncmp(end, "      webhookVersion:", 21) == 0)
      version = end;
    end = nl ? nl + 1 : end + strlen(end);
  }
  size_t b = (size_t)snprintf(block, sizeof(block), "    webhooks:\n%s%s%s",
                              r->defaulting ? "      defaulting: true\n" : "",
                              r->validation ? "      validation: true\n" : "",
                              r->conversion ? "      conversion: true\n" : "");
  if (n_spokes > 0)
    b += (size_t)snprintf(block + b, sizeof(block) - b, "      spoke:\n");
  for (size_t i = 0; i < n_spokes && b < sizeof(block); i++)
    b += (size_t)snprintf(block + b, sizeof(block) - b, "      - %.63s\n", spokes[i]);
  if (version) /* the kind's webhooks: add the new ones to them */
    return splice(project, version, 0, strchr(block, '\n') + 1, out);
  if (b < sizeof(block))
    snprintf(block + b, sizeof(block) - b, "      webhookVersion: v1\n");
  return splice(project, end, 0, block, out);
}

/* ---- webhooks ---- */

/* webhook_path: kubebuilder's path for r in the project's domain:
 * "/mutate-<group>-<domain with '.' as '-'>-<version>-<kind in lower case>". */
static void webhook_path(const char *verb, const char *domain, const gen_resource *r, char *out,
                         size_t size) {
  char fq[GEN_RESOURCE_NAME_MAX + 256], kl[GEN_RESOURCE_NAME_MAX];
  snprintf(fq, sizeof(fq), "%s.%s", r->group, domain);
  for (char *c = fq; *c; c++)
    if (*c == '.')
      *c = '-';
  lower(r->kind, kl, sizeof(kl));
  snprintf(out, size, "/%s-%s-%s-%s", verb, fq, r->version, kl);
}

/* One webhook of a configuration, sortable by name as controller-gen sorts them. */
typedef struct hook {
  char name[2 * GEN_RESOURCE_NAME_MAX + 16];
  const gen_resource *r;
} hook;

static int hook_cmp(const void *a, const void *b) {
  return strcmp(((const hook *)a)->name, ((const hook *)b)->name);
}

char *gen_webhook_manifests(const char *domain, const gen_resource *r, size_t n) {
  static const char *const verbs[] = {"mutate", "validate"};
  static const char *const kinds[] = {"MutatingWebhookConfiguration",
                                      "ValidatingWebhookConfiguration"};
  static const char *const names[] = {"mutating-webhook-configuration",
                                      "validating-webhook-configuration"};
  hook *hooks = calloc(n ? n : 1, sizeof(*hooks));
  sbuf t = {0};
  if (!hooks)
    return NULL;
  for (int m = 0; m < 2; m++) {
    size_t h = 0;
    for (size_t i = 0; i < n; i++) {
      if (!(m == 0 ? r[i].defaulting : r[i].validation))
        continue;
      char kl[GEN_RESOURCE_NAME_MAX];
      lower(r[i].kind, kl, sizeof(kl));
      snprintf(hooks[h].name, sizeof(hooks[h].name), "%c%s-%s.kb.io", m == 0 ? 'm' : 'v', kl,
               r[i].version);
      hooks[h++].r = &r[i];
    }
    if (h == 0)
      continue;
    qsort(hooks, h, sizeof(*hooks), hook_cmp);
    text_adds(&t, "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ");
    text_adds(&t, kinds[m]);
    text_adds(&t, "\nmetadata:\n  name: ");
    text_adds(&t, names[m]);
    text_adds(&t, "\nwebhooks:\n");
    for (size_t i = 0; i < h; i++) {
      char path[3 * GEN_RESOURCE_NAME_MAX + 300], entry[4096];
      const gen_resource *w = hooks[i].r;
      webhook_path(verbs[m], domain, w, path, sizeof(path));
      snprintf(entry, sizeof(entry),
               "- admissionReviewVersions:\n"
               "  - v1\n"
               "  clientConfig:\n"
               "    service:\n"
               "      name: webhook-service\n"
               "      namespace: system\n"
               "      path: %s\n"
               "  failurePolicy: Fail\n"
               "  name: %s\n"
               "  rules:\n"
               "  - apiGroups:\n"
               "    - %s.%s\n"
               "    apiVersions:\n"
               "    - %s\n"
               "    operations:\n"
               "    - CREATE\n"
               "    - UPDATE\n"
               "    resources:\n"
               "    - %s\n"
               "  sideEffects: None\n",
               path, hooks[i].name, w->group, domain, w->version, w->plural);
      text_adds(&t, entry);
    }
  }
  free(hooks);
  return text_take(&t);
}

/* ---- the commands ---- */

static void scaffold_usage(FILE *f) {
  fputs("usage: kcr-gen init [--domain DOMAIN] [--project-name NAME] [--namespaced] [DIR]\n"
        "       kcr-gen create api --group GROUP --version VERSION --kind KIND\n"
        "                          [--plural PLURAL] [--cluster-scoped] [--crd-first] [DIR]\n"
        "       kcr-gen create webhook --group GROUP --version VERSION --kind KIND\n"
        "                          [--defaulting] [--programmatic-validation]\n"
        "                          [--conversion --spoke VERSION...] [DIR]\n",
        f);
}

/*
 * The files init writes. Each comes from the template named after its path
 * ('/' as '_', without a leading '.': config/rbac/role.yaml from
 * config_rbac_role.yaml.tmpl, .ci/run from ci_run.tmpl); scripts (.sh and
 * .ci/run) are executable.
 */
static const char *const init_files[] = {
    "PROJECT",
    "CMakeLists.txt",
    "Makefile",
    "Dockerfile",
    ".dockerignore",
    ".gitignore",
    ".clang-format",
    ".clang-tidy",
    ".ci/run",
    "README.md",
    "cmd/main.c",
    "test/integration/suite_test.c",
    "test/e2e/e2e_test.sh",
    "api/types.cmake",
    "internal/controller/controllers.h",
    "internal/controller/controllers.c",
    "internal/controller/controllers.inc",
    "config/default/kustomization.yaml",
    "config/default/metrics_service.yaml",
    "config/default/manager_metrics_patch.yaml",
    "config/default/cert_metrics_manager_patch.yaml",
    "config/manager/kustomization.yaml",
    "config/manager/manager.yaml",
    "config/rbac/kustomization.yaml",
    "config/rbac/service_account.yaml",
    "config/rbac/role.yaml",
    "config/rbac/role_binding.yaml",
    "config/rbac/leader_election_role.yaml",
    "config/rbac/leader_election_role_binding.yaml",
    "config/rbac/metrics_auth_role.yaml",
    "config/rbac/metrics_auth_role_binding.yaml",
    "config/rbac/metrics_reader_role.yaml",
    "config/prometheus/kustomization.yaml",
    "config/prometheus/monitor.yaml",
    "config/prometheus/monitor_tls_patch.yaml",
    "config/network-policy/kustomization.yaml",
    "config/network-policy/allow-metrics-traffic.yaml",
};

/* plan_scaffold: DIR/path from its template (template_of). */
static int plan_scaffold(plan *p, const char *path, const vars *vs, char *msg, size_t size) {
  char tmpl[256];
  template_of(path, tmpl, sizeof(tmpl));
  return plan_new(p, path, tmpl, vs, executable(path), msg, size);
}

int gen_scaffold_init(int argc, char **argv) {
  const char *domain = "my.domain", *name = NULL, *dir = ".";
  char msg[4400] = "", base[256], abs[4096];
  vars vs = {0};
  plan p = {.cmd = "kcr-gen init"};
  bool ok = false, namespaced = false;

  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--domain") == 0 && i + 1 < argc)
      domain = argv[++i];
    else if (strcmp(argv[i], "--namespaced") == 0)
      namespaced = true;
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
  /* --namespaced, as kubebuilder's: the manager watches its own namespace
   * (WATCH_NAMESPACE from the Pod's) and holds a Role there, not a ClusterRole */
  set_var(&vs, "role_kind", namespaced ? "Role" : "ClusterRole");
  set_var(&vs, "role_namespace", namespaced ? "  namespace: system\n" : "");
  set_var(&vs, "rbac_namespace", namespaced ? "--namespace system " : "");
  set_var(&vs, "project_namespaced", namespaced ? "namespaced: true\n" : "");
  set_var(&vs, "manager_env",
          namespaced ? "        env:\n        - name: WATCH_NAMESPACE\n          valueFrom:\n"
                       "            fieldRef:\n              fieldPath: metadata.namespace\n"
                     : "");

  p.dir = dir;
  if (vs.bad) {
    gen_msgf(msg, sizeof(msg), "a template value is longer than %d bytes", VALUE_MAX - 1);
    goto out;
  }
  for (size_t i = 0; i < sizeof(init_files) / sizeof(init_files[0]); i++)
    if (plan_scaffold(&p, init_files[i], &vs, msg, sizeof(msg)) != 0)
      goto out;
  ok = true;
out:
  return plan_close(&p, ok, msg, sizeof(msg));
}

/* The command line of create api and create webhook. */
#define MAX_SPOKES 4

typedef struct create_args {
  const char *group, *version, *kind, *plural, *dir;
  bool cluster, defaulting, validation, conversion;
  bool crd_first;                 /* --crd-first: the CRD YAML is the source, no type header */
  const char *spokes[MAX_SPOKES]; /* --spoke, with --conversion */
  size_t n_spokes;
} create_args;

/* parse_create reads the flags of `create api` (webhook false) or `create
 * webhook`; 0, or the exit status after saying why. */
static int parse_create(int argc, char **argv, bool webhook, create_args *a) {
  const char *cmd = webhook ? "kcr-gen create webhook" : "kcr-gen create api";
  memset(a, 0, sizeof(*a));
  a->dir = ".";
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--group") == 0 && i + 1 < argc)
      a->group = argv[++i];
    else if (strcmp(argv[i], "--version") == 0 && i + 1 < argc)
      a->version = argv[++i];
    else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
      a->kind = argv[++i];
    else if (!webhook && strcmp(argv[i], "--plural") == 0 && i + 1 < argc)
      a->plural = argv[++i];
    else if (!webhook && strcmp(argv[i], "--cluster-scoped") == 0)
      a->cluster = true;
    else if (!webhook && strcmp(argv[i], "--crd-first") == 0)
      a->crd_first = true;
    else if (webhook && strcmp(argv[i], "--defaulting") == 0)
      a->defaulting = true;
    else if (webhook && strcmp(argv[i], "--programmatic-validation") == 0)
      a->validation = true;
    else if (webhook && strcmp(argv[i], "--conversion") == 0)
      a->conversion = true;
    else if (webhook && strcmp(argv[i], "--spoke") == 0 && i + 1 < argc) {
      if (a->n_spokes == MAX_SPOKES) {
        fprintf(stderr, "%s: at most %d --spoke versions\n", cmd, MAX_SPOKES);
        return 2;
      }
      a->spokes[a->n_spokes++] = argv[++i];
    } else if (argv[i][0] != '-' && strcmp(a->dir, ".") == 0)
      a->dir = argv[i];
    else {
      scaffold_usage(stderr);
      return 2;
    }
  }
  if (!a->group || !a->version || !a->kind) {
    fprintf(stderr, "%s: --group, --version and --kind are required\n", cmd);
    scaffold_usage(stderr);
    return 2;
  }
  if (!dns_label(a->group, 63)) {
    fprintf(stderr, "%s: --group %s: want a DNS label (e.g. apps, batch)\n", cmd, a->group);
    return 2;
  }
  if (!api_version_name(a->version)) {
    fprintf(stderr, "%s: --version %s: want v1, v2beta1, v1alpha1, ...\n", cmd, a->version);
    return 2;
  }
  if (!kind_name(a->kind)) {
    fprintf(stderr, "%s: --kind %s: want CamelCase letters and digits (e.g. CronJob)\n", cmd,
            a->kind);
    return 2;
  }
  if (a->plural && !dns_label(a->plural, 63)) {
    fprintf(stderr, "%s: --plural %s: want lower-case letters and digits\n", cmd, a->plural);
    return 2;
  }
  for (size_t i = 0; i < a->n_spokes; i++) {
    if (!api_version_name(a->spokes[i]) || strcmp(a->spokes[i], a->version) == 0) {
      fprintf(stderr, "%s: --spoke %s: want a version of the kind other than the hub (%s)\n", cmd,
              a->spokes[i], a->version);
      return 2;
    }
  }
  if (webhook && a->conversion != (a->n_spokes > 0)) {
    fprintf(stderr,
            "%s: --conversion takes the spoke versions (--spoke V, once per version) and "
            "--spoke needs --conversion\n",
            cmd);
    return 2;
  }
  if (webhook && !a->defaulting && !a->validation && !a->conversion) {
    fprintf(stderr, "%s: give --defaulting, --programmatic-validation, --conversion or more\n",
            cmd);
    return 2;
  }
  return 0;
}

/* read_project: DIR/PROJECT (new) and its domain, or NULL after saying why. */
static char *read_project(const char *cmd, const char *dir, char *domain, size_t size) {
  char path[4200];
  char *project;
  if (!fits(snprintf(path, sizeof(path), "%s/PROJECT", dir), sizeof(path))) {
    fprintf(stderr, "%s: %s/PROJECT: the path is longer than %zu bytes\n", cmd, dir,
            sizeof(path) - 1);
    return NULL;
  }
  if (!(project = read_all(path))) {
    fprintf(stderr, "%s: %s: %s (run kcr-gen init first)\n", cmd, path, strerror(errno));
    return NULL;
  }
  if (project_value(project, "domain", domain, size) != 0 || !dns_subdomain(domain)) {
    fprintf(stderr, "%s: %s has no valid \"domain:\" line\n", cmd, path);
    free(project);
    return NULL;
  }
  return project;
}

/* kind_vars: the names of one kind every create template uses, and the
 * project's name from its PROJECT file. */
static void kind_vars(vars *vs, const create_args *a, const char *project, const char *domain,
                      const char *plural) {
  char name[256], fq[512], ks[128], kl[128], pl[160], prefix[200], upper[200];
  snprintf(fq, sizeof(fq), "%s.%s", a->group, domain);
  snake(a->kind, ks, sizeof(ks));
  lower(a->kind, kl, sizeof(kl));
  if (plural)
    snprintf(pl, sizeof(pl), "%s", plural);
  else
    plural_of(kl, pl, sizeof(pl));
  snprintf(prefix, sizeof(prefix), "%s_%s", ks, a->version);
  for (size_t i = 0; i < sizeof(upper); i++) {
    char c = prefix[i];
    upper[i] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    if (!c)
      break;
  }
  if (project_value(project, "projectName", name, sizeof(name)) != 0)
    snprintf(name, sizeof(name), "%s", "project");
  set_var(vs, "project", name);
  set_var(vs, "group", a->group);
  set_var(vs, "fqgroup", fq);
  set_var(vs, "version", a->version);
  set_var(vs, "kind", a->kind);
  set_var(vs, "kind_snake", ks);
  set_var(vs, "kind_lower", kl);
  set_var(vs, "plural", pl);
  set_var(vs, "prefix", prefix);
  set_var(vs, "prefix_upper", upper);
}

/* var_value: the value of a variable set by kind_vars. */
static const char *var_value(const vars *vs, const char *name) {
  for (size_t i = 0; i < vs->n; i++)
    if (strcmp(vs->v[i].name, name) == 0)
      return vs->v[i].value;
  return "";
}

/*
 * set_type_vars sets what the templates need of the kind's C type at the
 * version of vs: its name, header and origin (types, types_h, types_doc) and
 * the few lines that touch its members, from the snip_NAME_codecs or
 * snip_NAME_types templates. A coded version's type is its type header's own
 * struct, KIND_t, coded by kcr-gen codecs (spec, status and metadata held by
 * value); another's is made from the CRD, KIND_VERSION_t, every struct
 * through a pointer. 0, or -1 with msg set.
 */
static int set_type_vars(vars *vs, bool coded, char *msg, size_t size) {
  static const char *const snips[] = {"ctl_observe",  "test_observe", "wh_default",
                                      "wh_foo_empty", "wht_default",  "conv_hub_foo"};
  char types[200], h[220], doc[700], name[64];
  snprintf(types, sizeof(types), "%s", var_value(vs, coded ? "kind_snake" : "prefix"));
  snprintf(h, sizeof(h), "%s%s", types, coded ? "_codecs.h" : ".h");
  if (coded)
    snprintf(doc, sizeof(doc),
             "the type header's own struct, api/%s/%s_types.h, coded by kcr-gen "
             "codecs",
             var_value(vs, "version"), var_value(vs, "kind_snake"));
  else
    snprintf(doc, sizeof(doc), "generated from config/crd/bases/%s_%s.yaml by kcr-gen types",
             var_value(vs, "fqgroup"), var_value(vs, "plural"));
  set_var(vs, "types", types);
  set_var(vs, "types_h", h);
  set_var(vs, "types_doc", doc);
  for (size_t i = 0; i < sizeof(snips) / sizeof(snips[0]); i++) {
    char *text;
    size_t n;
    snprintf(name, sizeof(name), "snip_%s_%s", snips[i], coded ? "codecs" : "types");
    if (!(text = render(name, vs, msg, size)))
      return -1;
    n = strlen(text);
    if (strcmp(snips[i], "wh_foo_empty") == 0 && n > 0 && text[n - 1] == '\n')
      text[n - 1] = '\0'; /* an expression, inside the template's line */
    set_var(vs, snips[i], text);
    free(text);
  }
  if (vs->bad) {
    gen_msgf(msg, size, "a template value is longer than %d bytes", VALUE_MAX - 1);
    return -1;
  }
  return 0;
}

/*
 * is_coded tells whether version of the kind of vs is the one api/types.cmake
 * codes from its type header (a kcr_gen_codecs line naming
 * api/VERSION/KIND_types.h), in the plan or on disk.
 */
static bool is_coded(const plan *p, const vars *vs, const char *version) {
  char path[PLAN_PATH_MAX], msg[PLAN_PATH_MAX + 64], want[300];
  bool bad, hit;
  const plan_file *f = plan_find(p, "api/types.cmake", path, msg, sizeof(msg), &bad);
  char *text = f || bad ? NULL : read_all(path);
  const char *t = f ? f->text : text;
  snprintf(want, sizeof(want), "/api/%s/%s_types.h)", version, var_value(vs, "kind_snake"));
  hit = t && strstr(t, "kcr_gen_codecs(") && strstr(t, want);
  free(text);
  return hit;
}

/*
 * plan_version_entry: what every version of a kind gets: a sample, listed in
 * config/samples (made the first time), and its entry in PROJECT.
 */
static int plan_version_entry(plan *p, const create_args *a, const vars *vs, bool namespaced,
                              char *msg, size_t size) {
  char sample[700], text[700];
  const char *kl = var_value(vs, "kind_lower");
  snprintf(sample, sizeof(sample), "config/samples/%s_%s_%s.yaml", a->group, a->version, kl);
  snprintf(text, sizeof(text), "- %s_%s_%s.yaml\n", a->group, a->version, kl);
  if (plan_new(p, sample, "sample.yaml", vs, false, msg, size) ||
      plan_new_once(p, "config/samples/kustomization.yaml", vs, msg, size) < 0 ||
      plan_insert(p, "config/samples/kustomization.yaml", "+kcr-gen:scaffold:samples", text, msg,
                  size))
    return -1;
  snprintf(text, sizeof(text),
           "  - group: %s\n    version: %s\n    kind: %s\n    plural: %s\n    namespaced: %s\n",
           a->group, a->version, a->kind, var_value(vs, "plural"), namespaced ? "true" : "false");
  return plan_append(p, "PROJECT", text, msg, size);
}

/*
 * find_kind looks for a->kind in the PROJECT file: 0 when it is not there, 1
 * when it is, in a->group, at other versions only (*other: one of them), -1
 * when it is at a->version or in another group.
 */
static int find_kind(const char *project, const create_args *a, gen_resource *other) {
  gen_resource r[64];
  size_t n = 0;
  int found = 0;
  if (gen_project_resources(project, r, sizeof(r) / sizeof(r[0]), &n) != 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(r[i].kind, a->kind) != 0)
      continue;
    if (strcmp(r[i].group, a->group) != 0 || strcmp(r[i].version, a->version) == 0)
      return -1;
    *other = r[i];
    found = 1;
  }
  return found;
}

/* add_version_edit: text with " add" put before the ')' that ends the line
 * starting with line (a kcr_gen_types call's VERSIONS list). */
static int add_version_edit(const char *text, const char *line, const char *add, char **out) {
  const char *at = find_line(text, line), *end;
  *out = NULL;
  if (!at)
    return GEN_TEXT_NOTFOUND;
  end = strchr(at, '\n');
  if (!end)
    end = at + strlen(at);
  while (end > at && end[-1] != ')')
    end--;
  if (end == at)
    return GEN_TEXT_NOTFOUND;
  char piece[80];
  snprintf(piece, sizeof(piece), " %s", add);
  return splice(text, end - 1, 0, piece, out);
}

/* ---- type headers: the CRD made from api/<version>/<kind>_types.h ---- */

/* CRD_TEXT_MAX bounds the YAML of one scaffolded kind's CRD. */
#define CRD_TEXT_MAX ((size_t)16 << 20)

/* types_header: the path of a kind's type header at version, into out. */
static void types_header(const vars *vs, const char *version, char *out, size_t size) {
  snprintf(out, size, "api/%s/%s_types.h", version, var_value(vs, "kind_snake"));
}

/* has_types_header tells whether the kind's version has a type header (in the
 * plan or on disk): the kind is then made types-first, its CRD generated. */
static bool has_types_header(const plan *p, const vars *vs, const char *version) {
  char rel[300], path[PLAN_PATH_MAX], msg[PLAN_PATH_MAX + 64];
  bool bad;
  types_header(vs, version, rel, sizeof(rel));
  return plan_find(p, rel, path, msg, sizeof(msg), &bad) || (!bad && exists(path));
}

/*
 * set_type_markers sets the template variable type_markers: the kind-level
 * markers a type header needs beyond root and status: the plural when it is
 * not the default one, the scope when cluster, the kind when its snake-case
 * C name would read otherwise (HTTPRoute), and storageversion when stored.
 */
static void set_type_markers(vars *vs, const char *kind, bool cluster, bool stored) {
  char text[VALUE_MAX] = "", def[160], camel[128], line[200];
  const char *ks = var_value(vs, "kind_snake"), *pl = var_value(vs, "plural");
  size_t o = 0;
  bool up = true;
  plural_of(var_value(vs, "kind_lower"), def, sizeof(def));
  if (strcmp(def, pl) != 0 || cluster) {
    snprintf(line, sizeof(line), "// +kubebuilder:resource:%s%s%s%s\n",
             strcmp(def, pl) != 0 ? "path=" : "", strcmp(def, pl) != 0 ? pl : "",
             strcmp(def, pl) != 0 && cluster ? "," : "", cluster ? "scope=Cluster" : "");
    strncat(text, line, sizeof(text) - strlen(text) - 1);
  }
  for (const char *c = ks; *c && o + 1 < sizeof(camel); c++) {
    if (*c == '_') {
      up = true;
      continue;
    }
    camel[o++] = up && *c >= 'a' && *c <= 'z' ? (char)(*c - 'a' + 'A') : *c;
    up = false;
  }
  camel[o] = '\0';
  if (strcmp(camel, kind) != 0) {
    snprintf(line, sizeof(line), "// +kcr:kind=%s\n", kind);
    strncat(text, line, sizeof(text) - strlen(text) - 1);
  }
  if (stored)
    strncat(text, "// +kubebuilder:storageversion\n", sizeof(text) - strlen(text) - 1);
  set_var(vs, "type_markers", text);
}

/*
 * plan_types_crd plans the kind's CRD, config/crd/bases/<group>_<plural>.yaml,
 * as `make manifests` writes it (kcr-gen crd), from the type headers of its n
 * versions (as planned, or on disk). fresh: the file must not exist yet;
 * otherwise it is rewritten whole, a generated file.
 */
static int plan_types_crd(plan *p, const vars *vs, const char *const *versions, size_t n,
                          bool fresh, char *msg, size_t size) {
  const char *fq = var_value(vs, "fqgroup"), *pl = var_value(vs, "plural");
  char rel[300], crd_rel[700];
  crd_set *set = NULL;
  json_t *crds = NULL;
  const json_t *names;
  kcr_buf_t b;
  char *text = NULL;
  int rc = -1;
  kcr_buf_init(&b, CRD_TEXT_MAX);
  if (crd_set_create(&set)) {
    gen_msgf(msg, size, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    plan_file *f;
    types_header(vs, versions[i], rel, sizeof(rel));
    if (!(f = plan_edit(p, rel, msg, size)) ||
        crd_set_add(set, rel, f->text, strlen(f->text), msg, size))
      goto out;
  }
  if (crd_set_build(set, &crds, msg, size))
    goto out;
  names = json_object_get(json_object_get(json_array_get(crds, 0), "spec"), "names");
  if (json_array_size(crds) != 1 ||
      strcmp(json_string_value(json_object_get(names, "plural")), pl) != 0) {
    gen_msgf(msg, size, "the type headers of %s do not make one CRD of plural %s in group %s",
             var_value(vs, "kind"), pl, fq);
    goto out;
  }
  if (gen_yaml_write(&b, json_array_get(crds, 0)) || !(text = strdup(kcr_buf_cstr(&b)))) {
    gen_msgf(msg, size, "out of memory");
    goto out;
  }
  snprintf(crd_rel, sizeof(crd_rel), "config/crd/bases/%s_%s.yaml", fq, pl);
  rc = fresh ? plan_new_text(p, crd_rel, text, false, msg, size)
             : plan_replace(p, crd_rel, text, msg, size);
out:
  kcr_buf_free(&b);
  json_decref(crds);
  crd_set_destroy(set);
  return rc;
}

/*
 * storage_marker_edit: a type header's text with its storageversion marker
 * line ("true": put above the root marker when missing; "false": taken
 * away), into *out (new); GEN_TEXT_NOTFOUND when the header has no root marker.
 */
static int storage_marker_edit(const char *text, const char *unused, const char *value,
                               char **out) {
  static const char line[] = "// +kubebuilder:storageversion\n";
  const char *at = find_line(text, line);
  (void)unused;
  *out = NULL;
  if (strcmp(value, "true") == 0)
    return at ? ((*out = strdup(text)) ? GEN_TEXT_OK : GEN_TEXT_NOMEM)
              : gen_text_insert_before(text, "// +kubebuilder:object:root=true", line, out);
  if (!at)
    return (*out = strdup(text)) ? GEN_TEXT_OK : GEN_TEXT_NOMEM;
  return splice(text, at, strlen(line), "", out);
}

/* MAX_KIND_VERSIONS bounds the versions of one kind a scaffold command reads. */
#define MAX_KIND_VERSIONS 16

/*
 * plan_types_crd_all plans the kind's CRD again from the headers of every
 * version of it among the n resources res (PROJECT's), and of extra (a
 * version being added) unless it is NULL.
 */
static int plan_types_crd_all(plan *p, const create_args *a, const gen_resource *res, size_t n,
                              const vars *vs, const char *extra, char *msg, size_t size) {
  const char *names[MAX_KIND_VERSIONS];
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp(res[i].group, a->group) == 0 && strcmp(res[i].kind, a->kind) == 0 &&
        k < MAX_KIND_VERSIONS)
      names[k++] = res[i].version;
  if (extra && k < MAX_KIND_VERSIONS)
    names[k++] = extra;
  return plan_types_crd(p, vs, names, k, false, msg, size);
}

/* plan_types_version: the type header of a new version a->version of a
 * types-first kind (served, not stored), and the kind's CRD made again. */
static int plan_types_version(plan *p, const create_args *a, const char *project, vars *vs,
                              bool cluster, char *msg, size_t size) {
  char hdr[300];
  gen_resource *res;
  size_t n = 0;
  int rc;
  types_header(vs, a->version, hdr, sizeof(hdr));
  set_type_markers(vs, a->kind, cluster, false);
  if (vs->bad) {
    gen_msgf(msg, size, "a template value is longer than %d bytes", VALUE_MAX - 1);
    return -1;
  }
  if (plan_new(p, hdr, "api_types.h", vs, false, msg, size))
    return -1;
  if (!(res = calloc(MAX_RESOURCES, sizeof(*res))) ||
      gen_project_resources(project, res, MAX_RESOURCES, &n) != 0) {
    gen_msgf(msg, size, res ? "PROJECT has more than %d resources" : "out of memory",
             MAX_RESOURCES);
    free(res);
    return -1;
  }
  rc = plan_types_crd_all(p, a, res, n, vs, a->version, msg, size);
  free(res);
  return rc;
}

/*
 * create_version: `create api` for a kind the project has at other versions
 * (as kubebuilder's create api for a new version with --controller=false):
 * the version joins the kind's CRD (served, not stored) and its C types, and
 * gets a sample; the controller stays on the version it was made for.
 */
static int create_version(const create_args *a, const char *project, const char *domain,
                          const gen_resource *other) {
  const char *cmd = "kcr-gen create api";
  char msg[4400] = "", crd[700], line[300];
  vars vs = {0};
  plan p = {.cmd = cmd, .dir = a->dir};
  int rc = 1;
  bool ok = false;
  char *block = NULL;

  if (a->plural && strcmp(a->plural, other->plural) != 0) {
    fprintf(stderr, "%s: %s's plural is %s (version %s)\n", cmd, a->kind, other->plural,
            other->version);
    return 2;
  }
  kind_vars(&vs, a, project, domain, other->plural);
  set_var(&vs, "storage", "false");
  if (vs.bad) {
    gen_msgf(msg, sizeof(msg), "a template value is longer than %d bytes", VALUE_MAX - 1);
    goto done;
  }
  const char *fq = var_value(&vs, "fqgroup"), *pl = var_value(&vs, "plural");
  const char *ks = var_value(&vs, "kind_snake");
  snprintf(crd, sizeof(crd), "config/crd/bases/%s_%s.yaml", fq, pl);
  if (plan_version_entry(&p, a, &vs, other->namespaced, msg, sizeof(msg)))
    goto done;
  bool typed = has_types_header(&p, &vs, other->version);
  if (typed && a->crd_first) {
    gen_msgf(msg, sizeof(msg),
             "%s is types-first (api/%s/%s_types.h): --crd-first is for a kind's first version",
             a->kind, other->version, ks);
    goto done;
  }
  if (typed) {
    /* types-first: a header for the version, served, not stored; the CRD
     * made again from every version's header */
    if (plan_types_version(&p, a, project, &vs, !other->namespaced, msg, sizeof(msg)))
      goto done;
  } else if (!(block = render("crd_version.yaml", &vs, msg, sizeof(msg))) ||
             plan_insert_marked(&p, crd, "+kcr-gen:scaffold:crd-versions", block, msg,
                                sizeof(msg))) {
    goto done;
  }
  plan_file *f;
  snprintf(line, sizeof(line), "kcr_gen_types(%s_types ", ks);
  int applied =
      plan_apply(&p, "api/types.cmake", add_version_edit, line, a->version, &f, msg, sizeof(msg));
  if (applied == 1)
    gen_msgf(msg, sizeof(msg), "%s has no line starting \"%s\"", f->path, line);
  if (applied != 0)
    goto done;
  ok = true;
done:
  rc = plan_close(&p, ok, msg, sizeof(msg));
  free(block);
  return rc;
}

static int create_api(const create_args *a) {
  const char *cmd = "kcr-gen create api";
  char msg[4400] = "", domain[256], text[1200];
  char crd[700], ctl[300], test[300], role[300];
  char *project = NULL;
  gen_resource other;
  vars vs = {0};
  plan p = {.cmd = cmd, .dir = a->dir};
  int rc = 1;
  bool ok = false;

  if (!(project = read_project(cmd, a->dir, domain, sizeof(domain))))
    return 1;
  /* The kind once per project (its C names are per kind, not per group); a
   * new version of a kind of the same group is another version of its CRD. */
  switch (find_kind(project, a, &other)) {
  case 0:
    break;
  case 1:
    rc = create_version(a, project, domain, &other);
    free(project);
    return rc;
  default:
    fprintf(stderr, "%s: %s/PROJECT has kind %s already\n", cmd, a->dir, a->kind);
    goto done;
  }
  kind_vars(&vs, a, project, domain, a->plural);
  set_var(&vs, "scope", a->cluster ? "Cluster" : "Namespaced");
  set_var(&vs, "storage", "true");
  if (vs.bad) {
    gen_msgf(msg, sizeof(msg), "a template value is longer than %d bytes", VALUE_MAX - 1);
    goto done;
  }
  const char *fq = var_value(&vs, "fqgroup"), *pl = var_value(&vs, "plural");
  const char *ks = var_value(&vs, "kind_snake"), *kl = var_value(&vs, "kind_lower");
  snprintf(crd, sizeof(crd), "config/crd/bases/%s_%s.yaml", fq, pl);
  snprintf(ctl, sizeof(ctl), "internal/controller/%s_controller.c", ks);
  snprintf(test, sizeof(test), "test/%s_controller_test.c", ks);
  if (a->crd_first) {
    if (plan_new(&p, crd, "crd.yaml", &vs, false, msg, sizeof(msg)))
      goto done;
  } else {
    /* types-first, as kubebuilder: the header, and the CRD made of it */
    char hdr[300];
    types_header(&vs, a->version, hdr, sizeof(hdr));
    set_type_markers(&vs, a->kind, a->cluster, true);
    if (vs.bad || plan_new(&p, hdr, "api_types.h", &vs, false, msg, sizeof(msg)) ||
        plan_types_crd(&p, &vs, &a->version, 1, true, msg, sizeof(msg))) {
      if (!msg[0])
        gen_msgf(msg, sizeof(msg), "a template value is longer than %d bytes", VALUE_MAX - 1);
      goto done;
    }
  }
  if (set_type_vars(&vs, !a->crd_first, msg, sizeof(msg)) ||
      plan_new(&p, ctl, "controller.c", &vs, false, msg, sizeof(msg)) ||
      plan_new(&p, test, "controller_test.c", &vs, false, msg, sizeof(msg)))
    goto done;
  static const char *const roles[] = {"admin", "editor", "viewer"};
  for (size_t i = 0; i < 3; i++) {
    char tmpl[64];
    snprintf(role, sizeof(role), "config/rbac/%s_%s_role.yaml", kl, roles[i]);
    snprintf(tmpl, sizeof(tmpl), "config_rbac_%s_role.yaml", roles[i]);
    if (plan_new(&p, role, tmpl, &vs, false, msg, sizeof(msg)))
      goto done;
  }
  snprintf(text, sizeof(text),
           "- %s_admin_role.yaml\n- %s_editor_role.yaml\n- %s_viewer_role.yaml\n", kl, kl, kl);
  if (plan_append(&p, "config/rbac/kustomization.yaml", text, msg, sizeof(msg)))
    goto done;
  if (plan_new_once(&p, "config/crd/kustomization.yaml", &vs, msg, sizeof(msg)) < 0 ||
      plan_new_once(&p, "config/crd/kustomizeconfig.yaml", &vs, msg, sizeof(msg)) < 0)
    goto done;
  snprintf(text, sizeof(text), "- bases/%s_%s.yaml\n", fq, pl);
  if (plan_insert(&p, "config/crd/kustomization.yaml", "+kcr-gen:scaffold:crd-resources", text, msg,
                  sizeof(msg)))
    goto done;
  if (plan_uncomment(&p, "config/default/kustomization.yaml", "- ../crd\n", "the CRDs (../crd)",
                     msg, sizeof(msg)))
    goto done;
  /* types-first: the controller's C types are the header's own structs
   * (kcr_gen_codecs); the CRD's types of every version stay beside them
   * (kcr_gen_types: the other versions', whose headers declare the same C
   * names, and this one's in the CRD's form) */
  if (!a->crd_first) {
    snprintf(text, sizeof(text),
             "kcr_gen_codecs(%s_codecs INCLUDE_ROOT ${CMAKE_CURRENT_SOURCE_DIR}\n"
             "  HEADERS ${CMAKE_CURRENT_SOURCE_DIR}/api/%s/%s_types.h)\n"
             "list(APPEND PROJECT_TYPES %s_codecs)\n",
             ks, a->version, ks, ks);
    if (plan_append(&p, "api/types.cmake", text, msg, sizeof(msg)))
      goto done;
  }
  snprintf(text, sizeof(text),
           "kcr_gen_types(%s_types CRD ${CMAKE_CURRENT_SOURCE_DIR}/%s PREFIX %s VERSIONS %s)\n"
           "list(APPEND PROJECT_TYPES %s_types)\n",
           ks, crd, ks, a->version, ks);
  if (plan_append(&p, "api/types.cmake", text, msg, sizeof(msg)))
    goto done;
  snprintf(text, sizeof(text), "KCR_CONTROLLER(%s)\n", ks);
  if (plan_append(&p, "internal/controller/controllers.inc", text, msg, sizeof(msg)))
    goto done;
  if (plan_version_entry(&p, a, &vs, !a->cluster, msg, sizeof(msg)))
    goto done;
  ok = true;
done:
  rc = plan_close(&p, ok, msg, sizeof(msg));
  free(project);
  return rc;
}

/* The files create webhook makes once per project, the first time. */
static const char *const webhook_once[] = {
    "config/webhook/kustomization.yaml",
    "config/webhook/kustomizeconfig.yaml",
    "config/webhook/service.yaml",
    "config/certmanager/kustomization.yaml",
    "config/certmanager/kustomizeconfig.yaml",
    "config/certmanager/issuer.yaml",
    "config/certmanager/certificate-webhook.yaml",
    "config/certmanager/certificate-metrics.yaml",
    "config/default/manager_webhook_patch.yaml",
};

/* plan_main_entry: the header and the setup function of a webhook file in
 * cmd/main.c, above its marker lines. */
static int plan_main_entry(plan *p, const char *header, const char *setup, char *msg, size_t size) {
  char text[600];
  snprintf(text, sizeof(text), "#include \"%s\"\n", header);
  if (plan_insert_marked(p, "cmd/main.c", "+kcr-gen:scaffold:webhook-includes", text, msg, size))
    return -1;
  snprintf(text, sizeof(text), "    %s,\n", setup);
  return plan_insert_marked(p, "cmd/main.c", "+kcr-gen:scaffold:webhooks", text, msg, size);
}

/* plan_parts: DIR/<dir>/<file> made of templates (render_all). */
static int plan_parts(plan *p, const char *dir, const char *file, const char *const *parts,
                      size_t n, const vars *vs, char *msg, size_t size) {
  char path[700];
  snprintf(path, sizeof(path), "%s/%s", dir, file);
  return plan_new_text(p, path, render_all(parts, n, vs, msg, size), false, msg, size);
}

/* admission_vars: the template values of the admission webhooks' files
 * whose file holds the webhooks defaulting and validation say. */
static void admission_vars(vars *vs, const gen_resource *r, const char *domain, bool defaulting,
                           bool validation) {
  char text[1200], path[700];
  const char *pre = var_value(vs, "prefix");
  webhook_path("mutate", domain, r, path, sizeof(path));
  set_var(vs, "mutate_path", path);
  webhook_path("validate", domain, r, path, sizeof(path));
  set_var(vs, "validate_path", path);
  snprintf(text, sizeof(text),
           "  const kcr_custom_defaulter defaulter = {.default_object = %s_webhook_default};\n",
           pre);
  set_var(vs, "defaulter_decl", defaulting ? text : "");
  snprintf(text, sizeof(text),
           "  const kcr_custom_validator validator = {\n"
           "      .validate_create = %s_webhook_validate_create,\n"
           "      .validate_update = %s_webhook_validate_update,\n"
           "      .validate_delete = %s_webhook_validate_delete};\n",
           pre, pre, pre);
  set_var(vs, "validator_decl", validation ? text : "");
  set_var(vs, "defaulter_arg", defaulting ? "&defaulter" : "NULL");
  set_var(vs, "validator_arg", validation ? "&validator" : "NULL");
  snprintf(text, sizeof(text), "%s%s",
           defaulting ? "  if (test_default() != 0)\n    return 1;\n" : "",
           validation ? "  if (test_validate() != 0)\n    return 1;\n" : "");
  set_var(vs, "test_calls", text);
}

/* plan_admission: the defaulting and validating webhooks' files and their
 * line in cmd/main.c. */
static int plan_admission(plan *p, const create_args *a, const gen_resource *r, vars *vs,
                          const char *domain, const char *dir, char *msg, size_t size) {
  char file[700];
  const char *pre = var_value(vs, "prefix"), *ks = var_value(vs, "kind_snake");
  admission_vars(vs, r, domain, a->defaulting, a->validation);
  const char *h_parts[] = {"webhook.h", a->defaulting ? "webhook_h_default" : NULL,
                           a->validation ? "webhook_h_validate" : NULL, "webhook_h_tail"};
  const char *c_parts[] = {"webhook.c", a->defaulting ? "webhook_c_default" : NULL,
                           a->validation ? "webhook_c_validate" : NULL, "webhook_c_setup"};
  const char *t_parts[] = {"webhook_test.c", a->defaulting ? "webhook_test_default" : NULL,
                           a->validation ? "webhook_test_validate" : NULL, "webhook_test_main"};
  char h[300], c[300], t[300], setup[300];
  snprintf(h, sizeof(h), "%s_webhook.h", ks);
  snprintf(c, sizeof(c), "%s_webhook.c", ks);
  snprintf(t, sizeof(t), "%s_webhook_test.c", ks);
  snprintf(file, sizeof(file), "%s/%s", a->version, h);
  snprintf(setup, sizeof(setup), "%s_webhook_setup", pre);
  if (vs->bad) {
    gen_msgf(msg, size, "a template value is longer than %d bytes", VALUE_MAX - 1);
    return -1;
  }
  if (plan_parts(p, dir, h, h_parts, 4, vs, msg, size) ||
      plan_parts(p, dir, c, c_parts, 4, vs, msg, size) ||
      plan_parts(p, dir, t, t_parts, 4, vs, msg, size))
    return -1;
  return plan_main_entry(p, file, setup, msg, size);
}

/* insert_before_last_edit: text with add put above the last line that holds
 * where (an edit_fn). */
static int insert_before_last_edit(const char *text, const char *where, const char *add,
                                   char **out) {
  const char *last = NULL;
  *out = NULL;
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n'), *hit = strstr(line, where);
    if (hit && (!nl || hit < nl))
      last = line;
    line = nl ? nl + 1 : NULL;
  }
  return last ? splice(text, last, 0, add, out) : GEN_TEXT_NOTFOUND;
}

/* replace_edit: text with its first where made add (an edit_fn). */
static int replace_edit(const char *text, const char *where, const char *add, char **out) {
  const char *at = strstr(text, where);
  *out = NULL;
  return at ? splice(text, at, strlen(where), add, out) : GEN_TEXT_NOTFOUND;
}

/*
 * plan_fill runs fn (where, add) over DIR/dir/file; a file that lacks where
 * was changed by hand, and the user is told what to add there instead.
 */
static int plan_fill(plan *p, const char *dir, const char *file, edit_fn fn, const char *where,
                     const char *add, const char *what, char *msg, size_t size) {
  char rel[700];
  plan_file *f;
  int rc;
  snprintf(rel, sizeof(rel), "%s/%s", dir, file);
  if ((rc = plan_apply(p, rel, fn, where, add, &f, msg, size)) == 1)
    gen_msgf(msg, size, "%s has no \"%s\" (changed by hand?): add the %s there yourself", f->path,
             where, what);
  return rc == 0 ? 0 : -1;
}

/* plan_fill_part: template tmpl (it opens with a blank line) put above the
 * last line of DIR/dir/file that holds where, followed by a blank line. */
static int plan_fill_part(plan *p, const char *dir, const char *file, const char *tmpl,
                          const char *where, const vars *vs, char *msg, size_t size) {
  char *part = render(tmpl, vs, msg, size);
  sbuf t = {0};
  int rc = -1;
  if (!part)
    return -1;
  text_adds(&t, part[0] == '\n' ? part + 1 : part);
  text_adds(&t, "\n");
  if (!text_take(&t))
    gen_msgf(msg, size, "out of memory");
  else
    rc = plan_fill(p, dir, file, insert_before_last_edit, where, t.s, tmpl, msg, size);
  free(t.s);
  free(part);
  return rc;
}

/*
 * plan_admission_add: the type of admission webhook a kind's files lack
 * (a->defaulting or a->validation; r has the other) added to them, as
 * kubebuilder adds one to a kind's webhook file: its declarations above the
 * header's last #endif, its functions and marker above the setup function,
 * its test above main, and the setup's and main's lines for it. Nothing the
 * user wrote is replaced; a file whose lines were changed by hand is an error
 * that names the line, and nothing is written.
 */
static int plan_admission_add(plan *p, const create_args *a, const gen_resource *r, vars *vs,
                              const char *domain, const char *dir, char *msg, size_t size) {
  const char *pre = var_value(vs, "prefix"), *ks = var_value(vs, "kind_snake");
  const bool d = a->defaulting, v = a->validation;
  char h[300], c[300], t[300], setup[300], before[300], after[300];
  snprintf(h, sizeof(h), "%s_webhook.h", ks);
  snprintf(c, sizeof(c), "%s_webhook.c", ks);
  snprintf(t, sizeof(t), "%s_webhook_test.c", ks);
  snprintf(setup, sizeof(setup), "int %s_webhook_setup(", pre);
  admission_vars(vs, r, domain, d, v);
  snprintf(before, sizeof(before), "kcr_webhook_for(mgr, scheme, &gvk, %s, %s, err)",
           r->defaulting ? "&defaulter" : "NULL", r->validation ? "&validator" : "NULL");
  snprintf(after, sizeof(after), "kcr_webhook_for(mgr, scheme, &gvk, %s, %s, err)",
           r->defaulting || d ? "&defaulter" : "NULL", r->validation || v ? "&validator" : "NULL");
  if (vs->bad) {
    gen_msgf(msg, size, "a template value is longer than %d bytes", VALUE_MAX - 1);
    return -1;
  }
  const char *what = d ? "defaulting webhook" : "validating webhook";
  return plan_fill_part(p, dir, h, d ? "webhook_h_default" : "webhook_h_validate", "#endif", vs,
                        msg, size) ||
                 plan_fill_part(p, dir, c, d ? "webhook_c_default" : "webhook_c_validate", setup,
                                vs, msg, size) ||
                 plan_fill(p, dir, c, insert_before_last_edit, "return kcr_webhook_for(",
                           var_value(vs, d ? "defaulter_decl" : "validator_decl"), what, msg,
                           size) ||
                 plan_fill(p, dir, c, replace_edit, before, after, what, msg, size) ||
                 plan_fill_part(p, dir, t, d ? "webhook_test_default" : "webhook_test_validate",
                                "int main(void) {", vs, msg, size) ||
                 plan_fill(p, dir, t, insert_before_last_edit, "printf(\"ok\\n\");",
                           var_value(vs, "test_calls"), what, msg, size)
             ? -1
             : 0;
}

/*
 * storage_edit: text (a CRD) with the "storage:" of version's entry set to
 * value ("true" or "false"), into *out (new); GEN_TEXT_NOTFOUND when the CRD
 * has no such version or entry line.
 */
static int storage_edit(const char *text, const char *version, const char *value, char **out) {
  char entry[128];
  const char *at, *next, *line;
  *out = NULL;
  snprintf(entry, sizeof(entry), "    - name: %s\n", version);
  if (!(at = strstr(text, entry)))
    return GEN_TEXT_NOTFOUND;
  next = strstr(at + strlen(entry), "    - name: ");
  line = strstr(at, "\n      storage: ");
  if (!line || (next && line > next))
    return GEN_TEXT_NOTFOUND;
  line += strlen("\n      storage: ");
  char piece[16];
  snprintf(piece, sizeof(piece), "%s", value);
  return splice(text, line, strcspn(line, "\n"), piece, out);
}

/*
 * plan_conversion: the hub and spoke conversions of the kind (the hub is
 * a->version), their test and their line in cmd/main.c, the CRD's conversion
 * patch and its CA in config/default. Each spoke must be a version of the kind
 * in res (n of them).
 */
static int plan_conversion(plan *p, const create_args *a, const gen_resource *res, size_t n,
                           vars *vs, const char *dir, char *msg, size_t size) {
  const char *kd = "config/default/kustomization.yaml";
  const char *pre = var_value(vs, "prefix"), *ks = var_value(vs, "kind_snake");
  char table[VALUE_MAX] = "", regs[VALUE_MAX] = "", calls[VALUE_MAX] = "", sp[200], spt[200];
  char line[700];
  sbuf h = {0}, c = {0}, t = {0};
  int rc = -1;

  for (size_t i = 0; i < a->n_spokes; i++) {
    bool known = false;
    for (size_t j = 0; j < n; j++)
      known |= strcmp(res[j].group, a->group) == 0 && strcmp(res[j].kind, a->kind) == 0 &&
               strcmp(res[j].version, a->spokes[i]) == 0;
    if (!known) {
      gen_msgf(msg, size, "--spoke %s: the project has no %s %s (kcr-gen create api --version %s)",
               a->spokes[i], a->kind, a->spokes[i], a->spokes[i]);
      goto out;
    }
    snprintf(sp, sizeof(sp), "%s_%s", ks, a->spokes[i]);
    set_var(vs, "spoke", a->spokes[i]);
    set_var(vs, "spoke_prefix", sp);
    /* a spoke's type: its header's codecs when coded, else the CRD's */
    bool spoke_coded = is_coded(p, vs, a->spokes[i]);
    snprintf(spt, sizeof(spt), "%s", spoke_coded ? ks : sp);
    snprintf(line, sizeof(line), "%s%s", spt, spoke_coded ? "_codecs.h" : ".h");
    set_var(vs, "spoke_types", spt);
    set_var(vs, "spoke_types_h", line);
    static const char *const tmpl[3] = {"conversion_h_spoke", "conversion_c_spoke",
                                        "conversion_test_spoke"};
    sbuf *into[3] = {&h, &c, &t};
    for (int k = 0; k < 3; k++) {
      char *part = render(tmpl[k], vs, msg, size);
      if (!part)
        goto out;
      text_adds(into[k], part);
      free(part);
    }
    snprintf(line, sizeof(line), "      {\"%s\", %s_convert_to_hub, %s_convert_from_hub, NULL},\n",
             a->spokes[i], sp, sp);
    strncat(table, line, sizeof(table) - strlen(table) - 1);
    snprintf(line, sizeof(line), "  if ((rc = %s_register(scheme, err)) != 0)\n    return rc;\n",
             spt);
    strncat(regs, line, sizeof(regs) - strlen(regs) - 1);
    snprintf(line, sizeof(line), "  if (test_%s() != 0)\n    return 1;\n", a->spokes[i]);
    strncat(calls, line, sizeof(calls) - strlen(calls) - 1);
  }
  set_var(vs, "spoke_table", table);
  set_var(vs, "spoke_registers", regs);
  set_var(vs, "conv_test_calls", calls);
  if (vs->bad || h.nomem || c.nomem || t.nomem) {
    gen_msgf(msg, size, "a template value is too long, or out of memory");
    goto out;
  }
  /* The files: the spokes' parts between each file's head and tail. */
  char name[700], file[700], setup[300];
  const char *h_parts[] = {"conversion.h", NULL, "webhook_h_tail"};
  const char *c_parts[] = {"conversion.c", NULL, "conversion_c_setup"};
  const char *t_parts[] = {"conversion_test.c", NULL, "conversion_test_main"};
  struct {
    const char *suffix;
    const char *const *parts;
    sbuf *spokes;
  } files[] = {{"h", h_parts, &h}, {"c", c_parts, &c}, {"test.c", t_parts, &t}};
  for (size_t k = 0; k < 3; k++) {
    char *head = render(files[k].parts[0], vs, msg, size);
    char *tail = head ? render(files[k].parts[2], vs, msg, size) : NULL;
    sbuf all = {0};
    if (tail) {
      text_adds(&all, head);
      text_adds(&all, files[k].spokes->s ? files[k].spokes->s : "");
      text_adds(&all, tail);
    }
    free(head);
    free(tail);
    snprintf(name, sizeof(name), "%s/%s_conversion%s%s", dir, ks, k == 2 ? "_" : ".",
             files[k].suffix);
    if (!text_take(&all) || plan_new_text(p, name, all.s, false, msg, size)) {
      if (!msg[0])
        gen_msgf(msg, size, "out of memory");
      goto out;
    }
  }
  snprintf(file, sizeof(file), "%s/%s_conversion.h", a->version, ks);
  snprintf(setup, sizeof(setup), "%s_conversion_setup", pre);
  if (plan_main_entry(p, file, setup, msg, size))
    goto out;

  /* The hub is the version stored, as kubebuilder marks it
   * +kubebuilder:storageversion; the spokes are not. A types-first kind has
   * the marker moved in its headers and its CRD made again from them. */
  bool typed = has_types_header(p, vs, a->version);
  snprintf(name, sizeof(name), "config/crd/bases/%s_%s.yaml", var_value(vs, "fqgroup"),
           var_value(vs, "plural"));
  for (size_t i = 0; i <= a->n_spokes; i++) {
    const char *v = i == a->n_spokes ? a->version : a->spokes[i];
    plan_file *f;
    int applied;
    if (typed && !has_types_header(p, vs, v)) {
      types_header(vs, v, name, sizeof(name));
      gen_msgf(msg, size, "%s is missing: every version of a types-first kind has its header",
               name);
      goto out;
    }
    if (typed)
      types_header(vs, v, name, sizeof(name));
    applied = plan_apply(p, name, typed ? storage_marker_edit : storage_edit, v,
                         i == a->n_spokes ? "true" : "false", &f, msg, size);
    if (applied == 1)
      gen_msgf(msg, size,
               typed ? "%s has no line \"// +kubebuilder:object:root=true\""
                     : "%s has no version %s with a storage: line",
               f->path, v);
    if (applied != 0)
      goto out;
  }
  if (typed && plan_types_crd_all(p, a, res, n, vs, NULL, msg, size))
    goto out;

  /* config/crd: the CRD's conversion webhook; config/default: its CA. */
  snprintf(name, sizeof(name), "config/crd/patches/webhook_in_%s.yaml", var_value(vs, "plural"));
  snprintf(line, sizeof(line), "- path: patches/webhook_in_%s.yaml\n", var_value(vs, "plural"));
  if (plan_new(p, name, "config_crd_patches_webhook_in.yaml", vs, false, msg, size) ||
      plan_uncomment(p, "config/crd/kustomization.yaml", "patches:\n", "[WEBHOOK] (patches:)", msg,
                     size) ||
      plan_insert_marked(p, "config/crd/kustomization.yaml", "+kcr-gen:scaffold:crd-patches", line,
                         msg, size) ||
      plan_uncomment_tmpl(p, kd, "config_default_r_conversion.yaml", vs,
                          "[CERTMANAGER] (the CRDs' CA)", msg, size))
    goto out;
  static const char *const markers[2] = {"+kcr-gen:scaffold:crd-ca-namespace",
                                         "+kcr-gen:scaffold:crd-ca-name"};
  for (int k = 0; k < 2; k++) {
    char *target;
    set_var(vs, "ca_index", k == 0 ? "0" : "1");
    if (!(target = render("config_default_r_crd_target.yaml", vs, msg, size)))
      goto out;
    int bad = plan_insert_marked(p, kd, markers[k], target, msg, size);
    free(target);
    if (bad)
      goto out;
  }
  rc = 0;
out:
  free(h.s);
  free(c.s);
  free(t.s);
  return rc;
}

static int create_webhook(const create_args *a) {
  const char *cmd = "kcr-gen create webhook";
  const char *kd = "config/default/kustomization.yaml";
  char msg[4400] = "", domain[256], dir[300];
  char *project = NULL, *updated = NULL;
  gen_resource *res = NULL, *r = NULL;
  size_t n = 0;
  vars vs = {0};
  plan p = {.cmd = cmd, .dir = a->dir};
  int rc = 1;
  bool ok = false;

  if (!(project = read_project(cmd, a->dir, domain, sizeof(domain))))
    return 1;
  if (!(res = calloc(MAX_RESOURCES, sizeof(*res)))) {
    gen_msgf(msg, sizeof(msg), "out of memory");
    goto done;
  }
  if (gen_project_resources(project, res, MAX_RESOURCES, &n) != 0) {
    gen_msgf(msg, sizeof(msg), "%s/PROJECT has more than %d resources", a->dir, MAX_RESOURCES);
    goto done;
  }
  for (size_t i = 0; i < n; i++)
    if (strcmp(res[i].group, a->group) == 0 && strcmp(res[i].version, a->version) == 0 &&
        strcmp(res[i].kind, a->kind) == 0)
      r = &res[i];
  if (!r) {
    gen_msgf(msg, sizeof(msg),
             "%s/PROJECT has no kind %s in group %s, version %s: kcr-gen create api first (a "
             "webhook works on the kind's generated C type)",
             a->dir, a->kind, a->group, a->version);
    goto done;
  }
  /* One admission file and one conversion file per kind: either may be added
   * to a kind that has the other, and the admission file takes the type of
   * webhook it lacks. */
  kind_vars(&vs, a, project, domain, r->plural[0] ? r->plural : NULL);
  if ((a->defaulting && r->defaulting) || (a->validation && r->validation)) {
    gen_msgf(msg, sizeof(msg),
             "%s %s/%s has a %s webhook already (%s/internal/webhook/%s/%s_webhook.c)", a->kind,
             a->group, a->version, a->defaulting && r->defaulting ? "defaulting" : "validating",
             a->dir, a->version, var_value(&vs, "kind_snake"));
    goto done;
  }
  if (a->conversion && r->conversion) {
    gen_msgf(msg, sizeof(msg), "%s %s/%s has conversion webhooks already (%s/PROJECT)", a->kind,
             a->group, a->version, a->dir);
    goto done;
  }
  const gen_resource had = *r;
  gen_resource add = *r;
  add.defaulting = a->defaulting;
  add.validation = a->validation;
  add.conversion = a->conversion;
  r->defaulting |= a->defaulting;
  r->validation |= a->validation;
  r->conversion |= a->conversion;

  if (set_type_vars(&vs, is_coded(&p, &vs, a->version), msg, sizeof(msg)))
    goto done;
  snprintf(dir, sizeof(dir), "internal/webhook/%s", a->version);
  if ((a->defaulting || a->validation) &&
      (had.defaulting || had.validation
           ? plan_admission_add(&p, a, &had, &vs, domain, dir, msg, sizeof(msg))
           : plan_admission(&p, a, r, &vs, domain, dir, msg, sizeof(msg))))
    goto done;
  if (a->conversion && plan_conversion(&p, a, res, n, &vs, dir, msg, sizeof(msg)))
    goto done;

  /* config/: the webhook and certmanager kustomizations, switched on. */
  for (size_t i = 0; i < sizeof(webhook_once) / sizeof(webhook_once[0]); i++)
    if (plan_new_once(&p, webhook_once[i], &vs, msg, sizeof(msg)) < 0)
      goto done;
  int added =
      plan_new_once(&p, "config/network-policy/allow-webhook-traffic.yaml", &vs, msg, sizeof(msg));
  if (added < 0 || (added == 1 && plan_append(&p, "config/network-policy/kustomization.yaml",
                                              "- allow-webhook-traffic.yaml\n", msg, sizeof(msg))))
    goto done;
  if (plan_uncomment(&p, kd, "- ../webhook\n", "[WEBHOOK] (../webhook)", msg, sizeof(msg)) ||
      plan_uncomment(&p, kd, "- ../certmanager\n", "[CERTMANAGER] (../certmanager)", msg,
                     sizeof(msg)) ||
      plan_uncomment(&p, kd,
                     "- path: manager_webhook_patch.yaml\n  target:\n    kind: Deployment\n",
                     "[WEBHOOK] (manager_webhook_patch.yaml)", msg, sizeof(msg)) ||
      plan_uncomment(&p, kd, "replacements:\n", "[CERTMANAGER] (replacements:)", msg,
                     sizeof(msg)) ||
      plan_uncomment_tmpl(&p, kd, "config_default_r_metrics.yaml", &vs,
                          "[CERTMANAGER] (the metrics certificate's names)", msg, sizeof(msg)) ||
      plan_uncomment_tmpl(&p, kd, "config_default_r_webhook.yaml", &vs,
                          "[WEBHOOK] (the webhook certificate's names)", msg, sizeof(msg)) ||
      (a->validation &&
       plan_uncomment_tmpl(&p, kd, "config_default_r_validating.yaml", &vs,
                           "[CERTMANAGER] (the validating webhooks' CA)", msg, sizeof(msg))) ||
      (a->defaulting &&
       plan_uncomment_tmpl(&p, kd, "config_default_r_mutating.yaml", &vs,
                           "[CERTMANAGER] (the mutating webhooks' CA)", msg, sizeof(msg))))
    goto done;

  /* PROJECT records the webhooks; the manifests follow from every kind's. */
  switch (gen_project_add_webhooks(project, &add, a->spokes, a->n_spokes, &updated)) {
  case GEN_TEXT_OK:
    break;
  case GEN_TEXT_NOTFOUND:
    gen_msgf(msg, sizeof(msg), "%s/PROJECT: cannot find the lines of %s", a->dir, a->kind);
    goto done;
  default:
    gen_msgf(msg, sizeof(msg), "out of memory");
    goto done;
  }
  if (plan_replace(&p, "PROJECT", updated, msg, sizeof(msg))) {
    updated = NULL;
    goto done;
  }
  updated = NULL;
  char *manifests = gen_webhook_manifests(domain, res, n);
  if (!manifests)
    gen_msgf(msg, sizeof(msg), "out of memory");
  if (!manifests || plan_replace(&p, "config/webhook/manifests.yaml", manifests, msg, sizeof(msg)))
    goto done;
  ok = true;
done:
  rc = plan_close(&p, ok, msg, sizeof(msg));
  free(updated);
  free(res);
  free(project);
  return rc;
}

int gen_scaffold_create(int argc, char **argv) {
  create_args a;
  bool webhook;
  int rc;
  if (argc < 1 || (strcmp(argv[0], "api") != 0 && strcmp(argv[0], "webhook") != 0)) {
    scaffold_usage(stderr);
    return 2;
  }
  webhook = strcmp(argv[0], "webhook") == 0;
  if ((rc = parse_create(argc, argv, webhook, &a)) != 0)
    return rc;
  return webhook ? create_webhook(&a) : create_api(&a);
}
