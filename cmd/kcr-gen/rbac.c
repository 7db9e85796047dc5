/* SPDX-License-Identifier: MIT */
/*
 * rbac.c: `kcr-gen rbac`, RBAC roles from markers in C comments, as
 * controller-gen's rbac generator makes them from +kubebuilder:rbac markers.
 * Both spellings are read, kcr's and controller-gen's, with one grammar, and
 * their rules merge as if all were written one way:
 *
 *   // +kcr:rbac:groups=apps,resources=deployments,verbs=get;list;watch
 *   // +kubebuilder:rbac:groups=apps,resources=deployments,verbs=create
 *
 * Fields (the same as controller-gen's): groups, resources, resourceNames,
 * urls, verbs (required), namespace (a Role in that namespace instead of the
 * ClusterRole) and roleName. A list is separated by ';' (or written {a,b});
 * "" is the core group, and so is core. The rules are merged and sorted the
 * way controller-gen merges them, so the same markers give the same rules:
 * one rule per resource; rules that differ only in verbs are joined, then
 * those that differ only in resources, only in groups, only in URLs; each list
 * is deduplicated and sorted; the rules are sorted by their groups, resources,
 * resource names and URLs (each list joined with '&', the four with " + ");
 * a rule with the verb * has only that verb. Roles come out sorted by
 * namespace, then name, as YAML documents.
 *
 * Like the rest of kcr-gen this is a short-lived build tool: out of memory
 * prints a message and exits.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

typedef struct strlist {
  char **v;
  size_t n;
} strlist;

enum { F_GROUPS, F_RESOURCES, F_NAMES, F_URLS, F_VERBS, F_COUNT };

typedef struct rule {
  strlist f[F_COUNT];
  char *ns, *role;
  bool dead; /* merged into another rule */
} rule;

typedef struct rules {
  rule *v;
  size_t n, cap;
} rules;

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fputs("kcr-gen: out of memory\n", stderr);
    exit(2);
  }
  return p;
}

static char *xstrndup(const char *s, size_t n) {
  char *d = xmalloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

static void sl_add(strlist *l, const char *s, size_t n) {
  char **nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
  if (!nv) {
    fputs("kcr-gen: out of memory\n", stderr);
    exit(2);
  }
  l->v = nv;
  l->v[l->n++] = xstrndup(s, n);
}

static void sl_free(strlist *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

static void sl_copy(strlist *dst, const strlist *src) {
  for (size_t i = 0; i < src->n; i++)
    sl_add(dst, src->v[i], strlen(src->v[i]));
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* sl_normalize sorts l (bytewise, as Go's sort) and drops duplicates. */
static void sl_normalize(strlist *l) {
  size_t o = 0;
  if (l->n)
    qsort(l->v, l->n, sizeof(*l->v), cmp_str);
  for (size_t i = 0; i < l->n; i++) {
    if (o > 0 && strcmp(l->v[o - 1], l->v[i]) == 0) {
      free(l->v[i]);
      continue;
    }
    l->v[o++] = l->v[i];
  }
  l->n = o;
}

static bool sl_has(const strlist *l, const char *s) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i], s) == 0)
      return true;
  return false;
}

static rule *rules_push(rules *rs) {
  if (rs->n == rs->cap) {
    rule *nv;
    rs->cap = rs->cap ? rs->cap * 2 : 16;
    if (!(nv = realloc(rs->v, rs->cap * sizeof(*nv)))) {
      fputs("kcr-gen: out of memory\n", stderr);
      exit(2);
    }
    rs->v = nv;
  }
  memset(&rs->v[rs->n], 0, sizeof(rule));
  return &rs->v[rs->n++];
}

static void rule_free(rule *r) {
  for (int i = 0; i < F_COUNT; i++)
    sl_free(&r->f[i]);
  free(r->ns);
  free(r->role);
}

/* ---- parsing a marker ---- */

/* split_list adds the items of a value (a;b;"c" or {a,b}) to l. */
static void split_list(strlist *l, const char *v, size_t n) {
  const char sep = n >= 2 && v[0] == '{' && v[n - 1] == '}' ? ',' : ';';
  size_t i = sep == ',' ? 1 : 0, end = sep == ',' ? n - 1 : n;
  while (i <= end) {
    size_t j = i;
    bool q = false;
    while (j < end && (q || v[j] != sep)) {
      if (v[j] == '"')
        q = !q;
      j++;
    }
    while (i < j && isspace((unsigned char)v[i]))
      i++;
    {
      size_t k = j;
      while (k > i && isspace((unsigned char)v[k - 1]))
        k--;
      if (k - i >= 2 && v[i] == '"' && v[k - 1] == '"')
        sl_add(l, v + i + 1, k - i - 2);
      else if (k > i || sep == ';')
        sl_add(l, v + i, k - i);
    }
    i = j + 1;
    if (j >= end)
      break;
  }
}

/*
 * parse_marker reads the text after "+kcr:rbac:" (or "+kubebuilder:rbac:") into r. Returns 0, or -1
 * with a message in msg.
 */
static int parse_marker(const char *text, rule *r, char *msg, size_t size) {
  size_t len = strlen(text), i = 0;
  while (i < len) {
    size_t eq = i, end;
    int depth = 0;
    bool q = false;
    const char *key;
    size_t klen;
    while (eq < len && text[eq] != '=' && text[eq] != ',')
      eq++;
    if (eq >= len || text[eq] != '=') {
      gen_msgf(msg, size, "\"%.*s\": want field=value", (int)(eq - i), text + i);
      return -1;
    }
    for (end = eq + 1; end < len; end++) {
      if (text[end] == '"')
        q = !q;
      else if (!q && text[end] == '{')
        depth++;
      else if (!q && text[end] == '}')
        depth--;
      else if (!q && depth == 0 && text[end] == ',')
        break;
    }
    key = text + i;
    klen = eq - i;
#define KEY_IS(s) (klen == sizeof(s) - 1 && memcmp(key, s, klen) == 0)
    if (KEY_IS("groups")) {
      split_list(&r->f[F_GROUPS], text + eq + 1, end - eq - 1);
    } else if (KEY_IS("resources")) {
      split_list(&r->f[F_RESOURCES], text + eq + 1, end - eq - 1);
    } else if (KEY_IS("resourceNames")) {
      split_list(&r->f[F_NAMES], text + eq + 1, end - eq - 1);
    } else if (KEY_IS("urls")) {
      split_list(&r->f[F_URLS], text + eq + 1, end - eq - 1);
    } else if (KEY_IS("verbs")) {
      split_list(&r->f[F_VERBS], text + eq + 1, end - eq - 1);
    } else if (KEY_IS("namespace") || KEY_IS("roleName")) {
      strlist one = {NULL, 0};
      split_list(&one, text + eq + 1, end - eq - 1);
      if (one.n != 1) {
        gen_msgf(msg, size, "%.*s: want one value", (int)klen, key);
        sl_free(&one);
        return -1;
      }
      if (KEY_IS("namespace")) {
        free(r->ns);
        r->ns = one.v[0];
      } else {
        free(r->role);
        r->role = one.v[0];
      }
      free(one.v);
    } else {
      gen_msgf(msg, size,
               "unknown field \"%.*s\" (groups, resources, resourceNames, urls, verbs, namespace, "
               "roleName)",
               (int)klen, key);
      return -1;
    }
#undef KEY_IS
    i = end + 1;
  }
  if (r->f[F_VERBS].n == 0) {
    gen_msgf(msg, size, "verbs is required");
    return -1;
  }
  return 0;
}

/* The two spellings of the marker; a line's first one is its marker. */
static const char *const markers[] = {"+kcr:rbac:", "+kubebuilder:rbac:"};

/* find_marker returns the text after the first marker on line, or NULL. */
static char *find_marker(char *line) {
  char *best = NULL;
  size_t skip = 0;
  for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
    char *m = strstr(line, markers[i]);
    if (m && (!best || m < best)) {
      best = m;
      skip = strlen(markers[i]);
    }
  }
  return best ? best + skip : NULL;
}

/* scan_file adds one rule per marker in path to rs (not yet split). */
static int scan_file(const char *path, rules *rs, const char *role, const char *ns) {
  FILE *f = fopen(path, "r");
  char *line = NULL; /* a whole line, however long (getline grows it) */
  size_t cap = 0;
  int lineno = 0;
  if (!f) {
    fprintf(stderr, "kcr-gen: %s: cannot open\n", path);
    return -1;
  }
  while (getline(&line, &cap, f) != -1) {
    char *m = find_marker(line), *end, msg[512];
    rule *r;
    lineno++;
    if (!m)
      continue;
    end = m + strlen(m);
    while (end > m && isspace((unsigned char)end[-1]))
      end--;
    if (end - m >= 2 && end[-2] == '*' && end[-1] == '/')
      end -= 2;
    while (end > m && isspace((unsigned char)end[-1]))
      end--;
    *end = '\0';
    r = rules_push(rs);
    if (parse_marker(m, r, msg, sizeof(msg))) {
      fprintf(stderr, "kcr-gen: %s:%d: %s\n", path, lineno, msg);
      free(line);
      fclose(f);
      return -1;
    }
    if (!r->ns)
      r->ns = xstrndup(ns, strlen(ns));
    if (!r->role)
      r->role = xstrndup(role, strlen(role));
  }
  free(line);
  if (ferror(f)) {
    fprintf(stderr, "kcr-gen: %s: read error\n", path);
    fclose(f);
    return -1;
  }
  fclose(f);
  return 0;
}

/* ---- merging, as controller-gen's NormalizeRules ---- */

/* key joins the fields of r but skip ('&' inside a list, " + " between). */
static char *key(const rule *r, int skip) {
  size_t n = 1;
  char *k, *o;
  for (int i = 0; i < F_COUNT; i++)
    for (size_t j = 0; j < r->f[i].n; j++)
      n += strlen(r->f[i].v[j]) + 1;
  k = o = xmalloc(n + (size_t)4 * F_COUNT);
  for (int i = 0, first = 1; i < F_COUNT; i++) {
    if (i == skip)
      continue;
    if (!first)
      o += sprintf(o, " + ");
    first = 0;
    for (size_t j = 0; j < r->f[i].n; j++)
      o += sprintf(o, "%s%s", j ? "&" : "", r->f[i].v[j]);
  }
  *o = '\0';
  return k;
}

/* merge_on joins the live rules whose fields other than field are equal. */
static void merge_on(rule *v, size_t n, int field) {
  for (size_t i = 0; i < n; i++) {
    char *ki;
    if (v[i].dead)
      continue;
    ki = key(&v[i], field);
    for (size_t j = i + 1; j < n; j++) {
      char *kj;
      if (v[j].dead)
        continue;
      kj = key(&v[j], field);
      if (strcmp(ki, kj) == 0) {
        sl_copy(&v[i].f[field], &v[j].f[field]);
        v[j].dead = true;
      }
      free(kj);
    }
    free(ki);
    sl_normalize(&v[i].f[field]);
  }
}

static int cmp_sortkey(const void *a, const void *b) {
  const rule *x = a, *y = b;
  char *kx = key(x, F_VERBS), *ky = key(y, F_VERBS);
  int c = strcmp(kx, ky);
  free(kx);
  free(ky);
  return c;
}

static int cmp_role(const void *a, const void *b) {
  const rule *x = a, *y = b;
  int c = strcmp(x->ns, y->ns);
  return c ? c : strcmp(x->role, y->role);
}

/* ---- writing ---- */

static void yaml_scalar(FILE *f, const char *s) {
  bool plain = s[0] != '\0' && strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]) == NULL;
  static const char *const words[] = {"true", "false", "null", "yes",  "no", "on",
                                      "off",  "y",     "n",    "True", "~",  NULL};
  for (const char *c = s; *c && plain; c++)
    plain = isalnum((unsigned char)*c) || strchr("._/-:*", *c);
  for (const char *const *w = words; *w && plain; w++)
    plain = strcmp(s, *w) != 0;
  if (plain && strstr(s, ": ") == NULL) {
    fputs(s, f);
  } else if (s[0] == '\0') {
    fputs("\"\"", f);
  } else {
    fputc('\'', f);
    for (const char *c = s; *c; c++)
      fputs(*c == '\'' ? "''" : (char[]){*c, '\0'}, f);
    fputc('\'', f);
  }
}

static void write_list(FILE *f, const char *name, const strlist *l) {
  if (l->n == 0)
    return;
  fprintf(f, "  %s:\n", name);
  for (size_t i = 0; i < l->n; i++) {
    fputs("  - ", f);
    yaml_scalar(f, l->v[i]);
    fputc('\n', f);
  }
}

static void write_role(FILE *f, rule *v, size_t n, const strlist *labels) {
  fputs("---\napiVersion: rbac.authorization.k8s.io/v1\n", f);
  fprintf(f, "kind: %s\nmetadata:\n", v[0].ns[0] ? "Role" : "ClusterRole");
  if (labels->n) {
    fputs("  labels:\n", f);
    for (size_t i = 0; i < labels->n; i++) {
      const char *eq = strchr(labels->v[i], '=');
      fprintf(f, "    %.*s: ", (int)(eq - labels->v[i]), labels->v[i]);
      yaml_scalar(f, eq + 1);
      fputc('\n', f);
    }
  }
  fputs("  name: ", f);
  yaml_scalar(f, v[0].role);
  fputc('\n', f);
  if (v[0].ns[0]) {
    fputs("  namespace: ", f);
    yaml_scalar(f, v[0].ns);
    fputc('\n', f);
  }
  fputs("rules:\n", f);
  for (size_t i = 0; i < n; i++) {
    /* the members in the order Kubernetes' YAML has them: sorted by name */
    static const struct {
      int field;
      const char *name;
    } order[] = {{F_GROUPS, "apiGroups"},
                 {F_URLS, "nonResourceURLs"},
                 {F_NAMES, "resourceNames"},
                 {F_RESOURCES, "resources"},
                 {F_VERBS, "verbs"}};
    bool first = true;
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
      const strlist *l = &v[i].f[order[k].field];
      if (l->n == 0)
        continue;
      if (first) {
        /* "- " then the member, indented as the rest */
        fprintf(f, "- %s:\n", order[k].name);
        for (size_t j = 0; j < l->n; j++) {
          fputs("  - ", f);
          yaml_scalar(f, l->v[j]);
          fputc('\n', f);
        }
        first = false;
      } else {
        write_list(f, order[k].name, l);
      }
    }
  }
}

static void usage_rbac(FILE *f) {
  fputs("usage: kcr-gen rbac [--role-name NAME] [--namespace NS] [--label KEY=VALUE]...\n"
        "                    [--header TEXT] -o FILE SOURCE...\n"
        "  Writes FILE (- for stdout): the ClusterRole NAME (default manager-role; a Role in NS\n"
        "  with --namespace), and a Role per namespace=, from the +kcr:rbac and\n"
        "  +kubebuilder:rbac markers in the SOURCE files. See docs/kcr-gen.md.\n",
        f);
}

int gen_rbac(int argc, char **argv) {
  const char *out = NULL, *role = "manager-role", *header = NULL, *ns = "";
  strlist labels = {NULL, 0};
  rules marked = {NULL, 0, 0}, split = {NULL, 0, 0};
  FILE *f = NULL;
  char *tmp = NULL;
  int rc = 1, nsources = 0;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(argv[i], "--role-name") == 0 && i + 1 < argc) {
      role = argv[++i];
    } else if (strcmp(argv[i], "--namespace") == 0 && i + 1 < argc) {
      ns = argv[++i];
    } else if (strcmp(argv[i], "--header") == 0 && i + 1 < argc) {
      header = argv[++i];
    } else if (strcmp(argv[i], "--label") == 0 && i + 1 < argc && strchr(argv[i + 1], '=') &&
               argv[i + 1][0] != '=') {
      i++;
      sl_add(&labels, argv[i], strlen(argv[i]));
    } else if (argv[i][0] != '-') {
      nsources++;
    } else {
      usage_rbac(stderr);
      sl_free(&labels);
      return 2;
    }
  }
  sl_normalize(&labels); /* as Kubernetes' YAML writes a map: sorted */
  if (!out || nsources == 0) {
    usage_rbac(stderr);
    sl_free(&labels);
    return 2;
  }
  for (int i = 0; i < argc; i++) {
    if (argv[i][0] == '-') {
      i++;
      continue;
    }
    if (scan_file(argv[i], &marked, role, ns))
      goto done;
  }
  /* one rule per resource (a marker without resources stays one rule) */
  for (size_t i = 0; i < marked.n; i++) {
    const rule *m = &marked.v[i];
    size_t nres = m->f[F_RESOURCES].n ? m->f[F_RESOURCES].n : 1;
    for (size_t j = 0; j < nres; j++) {
      rule *r = rules_push(&split);
      m = &marked.v[i];
      for (int k = 0; k < F_COUNT; k++)
        if (k != F_RESOURCES)
          sl_copy(&r->f[k], &m->f[k]);
      if (m->f[F_RESOURCES].n)
        sl_add(&r->f[F_RESOURCES], m->f[F_RESOURCES].v[j], strlen(m->f[F_RESOURCES].v[j]));
      for (size_t k = 0; k < r->f[F_GROUPS].n; k++)
        if (strcmp(r->f[F_GROUPS].v[k], "core") == 0)
          r->f[F_GROUPS].v[k][0] = '\0';
      for (int k = 0; k < F_COUNT; k++)
        sl_normalize(&r->f[k]);
      r->ns = xstrndup(m->ns, strlen(m->ns));
      r->role = xstrndup(m->role, strlen(m->role));
    }
  }
  if (split.n == 0) {
    fputs("kcr-gen: no +kcr:rbac or +kubebuilder:rbac markers in the sources\n", stderr);
    goto done;
  }
  qsort(split.v, split.n, sizeof(*split.v), cmp_role);
  tmp = xmalloc(strlen(out) + sizeof(".tmp"));
  snprintf(tmp, strlen(out) + sizeof(".tmp"), "%s.tmp", out); /* sized to fit */
  if (!(f = strcmp(out, "-") == 0 ? stdout : gen_mkdirs(out) == 0 ? fopen(tmp, "w") : NULL)) {
    fprintf(stderr, "kcr-gen: %s: cannot write\n", tmp);
    goto done;
  }
  if (header)
    fprintf(f, "%s\n", header);
  for (size_t a = 0; a < split.n;) {
    size_t b = a, live = 0;
    while (b < split.n && cmp_role(&split.v[a], &split.v[b]) == 0)
      b++;
    merge_on(split.v + a, b - a, F_VERBS);
    merge_on(split.v + a, b - a, F_RESOURCES);
    merge_on(split.v + a, b - a, F_GROUPS);
    merge_on(split.v + a, b - a, F_URLS);
    for (size_t i = a; i < b; i++) {
      if (split.v[i].dead) {
        rule_free(&split.v[i]);
        continue;
      }
      if (sl_has(&split.v[i].f[F_VERBS], "*")) {
        sl_free(&split.v[i].f[F_VERBS]);
        sl_add(&split.v[i].f[F_VERBS], "*", 1);
      }
      split.v[a + live++] = split.v[i];
    }
    for (size_t i = a + live; i < b; i++)
      memset(&split.v[i], 0, sizeof(rule));
    qsort(split.v + a, live, sizeof(rule), cmp_sortkey);
    write_role(f, split.v + a, live, &labels);
    a = b;
  }
  if (f != stdout) {
    if (ferror(f) | fclose(f)) {
      fprintf(stderr, "kcr-gen: %s: write failed\n", tmp);
      remove(tmp);
      goto done;
    }
    if (rename(tmp, out)) {
      fprintf(stderr, "kcr-gen: %s: cannot rename\n", out);
      remove(tmp);
      goto done;
    }
  }
  rc = 0;
done:
  for (size_t i = 0; i < marked.n; i++)
    rule_free(&marked.v[i]);
  for (size_t i = 0; i < split.n; i++)
    rule_free(&split.v[i]);
  free(marked.v);
  free(split.v);
  sl_free(&labels);
  free(tmp);
  return rc;
}
