/* SPDX-License-Identifier: MIT */
/*
 * main.c: the kcr-gen command. `kcr-gen types` reads a CRD and writes, for each
 * served version, <prefix>_<version>.h and .c: C types with decode, encode,
 * copy, equality and the scheme hooks (docs/kcr-gen.md). It prints the files it
 * wrote, one a line, and exits 0. `kcr-gen openapi` does the same for built-in
 * kinds from OpenAPI v3 documents, all kinds in one package, or one package per
 * group-version (--split). It prints what it wrote, one a line, and exits 0; on
 * any error it prints one line to stderr and exits 1 (2 for a bad command line).
 * `kcr-gen crd` writes CRDs from C type headers with kubebuilder's markers
 * (crd.c), one YAML file per group and kind; `kcr-gen codecs` the codecs of
 * those headers' own structs (crd.c's layout, model.c, emit.c). `kcr-gen webhook` writes the
 * webhook configurations from +kubebuilder:webhook markers (webhook.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crd.h"
#include "gen.h"
#include "header.h"
#include "kcr/buf.h"
#include "scaffold.h"
#include "webhook.h"

static void usage(FILE *f) {
  fputs(
      "usage: kcr-gen types [-p NAME] [-V V1,V2] -o DIR CRD.yaml\n"
      "  Writes DIR/NAME_VERSION.h and DIR/NAME_VERSION.c for each served version of the\n"
      "  CustomResourceDefinition in CRD.yaml, or for exactly the versions -V names, served\n"
      "  or not. NAME defaults to the kind in snake case (App -> app).\n"
      "       kcr-gen openapi -p NAME [-n FILE [-i INCLUDE]] -o DIR -d DOC.json [-d DOC.json]...\n"
      "                       KIND...\n"
      "  Writes DIR/NAME.h and DIR/NAME.c: types for each KIND (GROUP/VERSION/KIND, core/v1/Pod;\n"
      "  KIND=PLURAL[,cluster] when the documents lack x-kcr-resources; or a schema's name)\n"
      "  and every schema it reaches, from OpenAPI v3 documents (an API server's\n"
      "  /openapi/v3/...; see scripts/openapi-fetch.py). -n names the files DIR/FILE.h and\n"
      "  .c (the allocator becomes NAME_FILE_mem_*), -i how the source includes the header.\n"
      "  With --split INCDIR instead of -n: one package per group-version, DIR/GROUP_VERSION.h\n"
      "  and .c (NAME_GROUP_VERSION_*), each made once and included by the others as\n"
      "  INCDIR/GROUP_VERSION.h. See docs/kcr-gen.md.\n"
      "       kcr-gen crd [-o DIR] [--max-desc-len N] [--header TEXT] [--label KEY=VALUE]...\n"
      "                   HEADER...\n"
      "  Writes DIR/GROUP_PLURAL.yaml, a CustomResourceDefinition for each kind the C type\n"
      "  headers declare with kubebuilder's markers (+kubebuilder:object:root=true), all\n"
      "  versions of a kind in one CRD. -o - writes to stdout; --max-desc-len cuts descriptions\n"
      "  (controller-gen's crd:maxDescLen; 0 drops them); --header puts TEXT before each CRD,\n"
      "  --label puts a label on each. See docs/kcr-gen.md.\n"
      "       kcr-gen codecs [-o DIR] [-I DIR]... [--uses HEADER]... HEADER...\n"
      "  Writes DIR/NAME_codecs.h and .c for each type HEADER (NAME_types.h): decode, encode,\n"
      "  copy, equality and the scheme hooks of the header's own structs (T_t: T_decode...),\n"
      "  which the codecs header includes as its path less the -I DIR it starts with. A\n"
      "  --uses HEADER is read for its types, coded by its own codecs (another run's).\n"
      "       kcr-gen webhook [-o FILE] [--header TEXT] [--label KEY=VALUE]... SOURCE...\n"
      "  Writes FILE (default config/webhook/manifests.yaml; - for stdout): the Mutating- and\n"
      "  ValidatingWebhookConfiguration from the +kubebuilder:webhook markers in the SOURCE\n"
      "  files, as controller-gen's webhook generator. See docs/kcr-gen.md.\n"
      "       kcr-gen rbac [--role-name NAME] [--namespace NS] [--label KEY=VALUE]...\n"
      "                    [--header TEXT] -o FILE SOURCE...\n"
      "  Writes FILE: the roles the +kcr:rbac and +kubebuilder:rbac markers ask for.\n"
      "       kcr-gen helm [-o DIR] [--name NAME] INSTALL.yaml\n"
      "  Writes DIR (default dist/chart, which must be empty): a Helm chart of the objects\n"
      "  of INSTALL.yaml (a project's rendered config/default), its namespace the release's\n"
      "  and the manager's image a value.\n"
      "       kcr-gen init [--domain DOMAIN] [--project-name NAME] [--namespaced] [DIR]\n"
      "  A new operator project in DIR (default .): CMake, Makefile, config/, main.c.\n"
      "  --namespaced: the manager watches its own namespace and holds a Role there.\n"
      "       kcr-gen create api --group GROUP --version VERSION --kind KIND\n"
      "                          [--plural PLURAL] [--cluster-scoped] [--crd-first] [DIR]\n"
      "  A kind in the project: its type header api/VERSION/KIND_types.h and the CRD made\n"
      "  of it (--crd-first: a CRD to edit, no header), a sample, roles, a controller stub\n"
      "  and its test; for a kind the project has, another version of its API and types.\n"
      "       kcr-gen create webhook --group GROUP --version VERSION --kind KIND\n"
      "                          [--defaulting] [--programmatic-validation]\n"
      "                          [--conversion --spoke VERSION...] [DIR]\n"
      "  Typed admission webhooks for a kind of the project, or conversion between its\n"
      "  versions (VERSION the hub), their tests, the webhook manifests and config/'s\n"
      "  webhook and cert-manager parts.\n"
      "       kcr-gen --help | --version\n",
      f);
}

/* prefix_ok tells whether a -p NAME is a C identifier of lowercase words. */
static bool prefix_ok(const char *prefix) {
  for (const char *c = prefix; *c; c++) {
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9' && c != prefix) || *c == '_')) {
      fprintf(stderr, "kcr-gen: -p %s: use lowercase letters, digits and '_'\n", prefix);
      return false;
    }
  }
  return prefix[0] != '\0';
}

static int types(int argc, char **argv) {
  const char *prefix = NULL, *dir = NULL, *file = NULL, *only = NULL;
  char msg[1024] = "";
  json_t *docs = NULL;
  gen_crd crd;
  int rc = 1;
  for (int i = 0; i < argc; i++) {
    if ((strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--prefix") == 0) && i + 1 < argc) {
      prefix = argv[++i];
    } else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output-dir") == 0) &&
               i + 1 < argc) {
      dir = argv[++i];
    } else if ((strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--versions") == 0) && i + 1 < argc) {
      only = argv[++i];
    } else if (argv[i][0] != '-' && !file) {
      file = argv[i];
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (!dir || !file) {
    usage(stderr);
    return 2;
  }
  if (prefix && !prefix_ok(prefix))
    return 2;
  if (gen_yaml_load(file, &docs, msg, sizeof(msg))) {
    fprintf(stderr, "kcr-gen: %s: %s\n", file, msg);
    return 1;
  }
  if (gen_crd_build(docs, prefix, only, file, &crd, msg, sizeof(msg))) {
    fprintf(stderr, "kcr-gen: %s: %s\n", file, msg);
    gen_crd_free(&crd);
    json_decref(docs);
    return 1;
  }
  for (size_t i = 0; i < crd.nversions; i++) {
    if (gen_emit(&crd, &crd.versions[i], dir, msg, sizeof(msg))) {
      fprintf(stderr, "kcr-gen: %s\n", msg);
      goto done;
    }
    printf("%s/%s.h\n%s/%s.c\n", dir, crd.versions[i].prefix, dir, crd.versions[i].prefix);
  }
  rc = 0;
done:
  gen_crd_free(&crd);
  json_decref(docs);
  return rc;
}

static int load_doc(const char *file, json_t *docs) {
  json_error_t je;
  json_t *doc = json_load_file(file, 0, &je);
  if (!doc) {
    fprintf(stderr, "kcr-gen: %s:%d: %s\n", file, je.line, je.text);
    return -1;
  }
  if (json_array_append_new(docs, doc)) {
    fputs("kcr-gen: out of memory\n", stderr);
    return -1;
  }
  return 0;
}

static int openapi(int argc, char **argv) {
  const char *prefix = NULL, *dir = NULL, *source = NULL, *file = NULL, *include = NULL;
  const char *split = NULL;
  const char **kinds = calloc((size_t)argc + 1, sizeof(*kinds));
  size_t nkinds = 0;
  char msg[1024] = "";
  json_t *docs = json_array();
  gen_crd crd;
  int rc = 2;
  memset(&crd, 0, sizeof(crd));
  if (!kinds || !docs) {
    fputs("kcr-gen: out of memory\n", stderr);
    goto done;
  }
  for (int i = 0; i < argc; i++) {
    if ((strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--prefix") == 0) && i + 1 < argc) {
      prefix = argv[++i];
    } else if ((strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "--file") == 0) && i + 1 < argc) {
      file = argv[++i];
    } else if ((strcmp(argv[i], "-i") == 0 || strcmp(argv[i], "--include") == 0) && i + 1 < argc) {
      include = argv[++i];
    } else if (strcmp(argv[i], "--split") == 0 && i + 1 < argc) {
      split = argv[++i];
    } else if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output-dir") == 0) &&
               i + 1 < argc) {
      dir = argv[++i];
    } else if ((strcmp(argv[i], "-d") == 0 || strcmp(argv[i], "--document") == 0) && i + 1 < argc) {
      source = source ? source : argv[i + 1];
      if (load_doc(argv[++i], docs)) {
        rc = 1;
        goto done;
      }
    } else if (argv[i][0] != '-') {
      kinds[nkinds++] = argv[i];
    } else {
      usage(stderr);
      goto done;
    }
  }
  if (!prefix || !dir || !source || nkinds == 0 || !prefix_ok(prefix) ||
      (file && !prefix_ok(file)) || (include && !file) || (split && (file || !split[0]))) {
    usage(stderr);
    goto done;
  }
  rc = 1;
  if (split) {
    if (gen_openapi_split(docs, prefix, split, kinds, nkinds, source, &crd, msg, sizeof(msg))) {
      fprintf(stderr, "kcr-gen: %s: %s\n", source, msg);
      goto done;
    }
    for (size_t i = 0; i < crd.nversions; i++)
      if (gen_emit(&crd, &crd.versions[i], dir, msg, sizeof(msg))) {
        fprintf(stderr, "kcr-gen: %s\n", msg);
        goto done;
      }
    for (size_t i = 0; i < crd.nversions; i++)
      printf("%s/%s.h\n%s/%s.c\n", dir, crd.versions[i].file, dir, crd.versions[i].file);
    rc = 0;
    goto done;
  }
  if (gen_openapi_build(docs, prefix, kinds, nkinds, source, &crd, msg, sizeof(msg))) {
    fprintf(stderr, "kcr-gen: %s: %s\n", source, msg);
    goto done;
  }
  if (file && gen_version_name_files(&crd.versions[0], prefix, file, include)) {
    fputs("kcr-gen: out of memory\n", stderr);
    goto done;
  }
  if (gen_emit(&crd, &crd.versions[0], dir, msg, sizeof(msg))) {
    fprintf(stderr, "kcr-gen: %s\n", msg);
    goto done;
  }
  printf("%s/%s.h\n%s/%s.c\n", dir, file ? file : prefix, dir, file ? file : prefix);
  rc = 0;
done:
  gen_crd_free(&crd);
  json_decref(docs);
  free(kinds);
  return rc;
}

/* count_arg reads a non-negative decimal count, the whole of s. */
static bool count_arg(const char *s, long *out) {
  char *end;
  errno = 0;
  *out = strtol(s, &end, 10);
  return s[0] >= '0' && s[0] <= '9' && *end == '\0' && errno == 0;
}

/* CRD_USAGE is `kcr-gen crd`'s usage line. */
#define CRD_USAGE                                                                                  \
  "usage: kcr-gen crd [-o DIR] [--max-desc-len N] [--header TEXT] [--label KEY=VALUE]... "         \
  "HEADER...\n"

/* CRD_YAML_MAX bounds one CRD's YAML text. */
#define CRD_YAML_MAX ((size_t)64 << 20)

/*
 * write_crd writes one CRD to DIR/<group>_<plural>.yaml (temporary name, then
 * renamed), or stdout, after header (a line of its own) unless it is NULL.
 */
static int write_crd(const char *dir, const char *header, const json_t *crd) {
  const json_t *spec = json_object_get(crd, "spec");
  const char *group = json_string_value(json_object_get(spec, "group"));
  const char *pl = json_string_value(json_object_get(json_object_get(spec, "names"), "plural"));
  kcr_buf_t b, path;
  FILE *f = NULL;
  int rc = -1;
  kcr_buf_init(&b, CRD_YAML_MAX);
  kcr_buf_init(&path, 4096 + 256);
  if ((header && kcr_buf_appendf(&b, "%s\n", header)) || gen_yaml_write(&b, crd)) {
    fprintf(stderr, "kcr-gen: %s: the CRD is larger than %zu bytes, or memory ran out\n", pl,
            CRD_YAML_MAX);
    goto done;
  }
  if (strcmp(dir, "-") == 0) {
    rc = fwrite(kcr_buf_cstr(&b), 1, kcr_buf_len(&b), stdout) == kcr_buf_len(&b) ? 0 : -1;
    goto done;
  }
  if (kcr_buf_appendf(&path, "%s/%s_%s.yaml.tmp", dir, group, pl)) {
    fprintf(stderr, "kcr-gen: %s: the output path is too long\n", dir);
    goto done;
  }
  if (gen_mkdirs(kcr_buf_cstr(&path)) || !(f = fopen(kcr_buf_cstr(&path), "wb"))) {
    fprintf(stderr, "kcr-gen: %s: %s\n", kcr_buf_cstr(&path), strerror(errno));
    goto done;
  }
  if (fwrite(kcr_buf_cstr(&b), 1, kcr_buf_len(&b), f) != kcr_buf_len(&b) || fclose(f)) {
    f = NULL;
    fprintf(stderr, "kcr-gen: %s: write failed\n", kcr_buf_cstr(&path));
    remove(kcr_buf_cstr(&path));
    goto done;
  }
  f = NULL;
  {
    char *final = strndup(kcr_buf_cstr(&path), kcr_buf_len(&path) - 4);
    if (!final || rename(kcr_buf_cstr(&path), final)) {
      fprintf(stderr, "kcr-gen: %s: cannot rename\n", kcr_buf_cstr(&path));
      remove(kcr_buf_cstr(&path));
      free(final);
      goto done;
    }
    printf("%s\n", final);
    free(final);
  }
  rc = 0;
done:
  if (f)
    fclose(f);
  kcr_buf_free(&b);
  kcr_buf_free(&path);
  return rc;
}

/*
 * meta_arg takes argv[*i] if it is `--header TEXT` (into *header) or `--label
 * KEY=VALUE` (into labels), the options `kcr-gen crd` and `kcr-gen webhook`
 * share, moving *i past the value: returns 1 then, 0 for any other argument
 * and -1, after printing why, for a label that is not KEY=VALUE in UTF-8.
 */
static int meta_arg(int argc, char **argv, int *i, const char **header, json_t *labels) {
  const char *arg, *eq;
  if (*i + 1 >= argc)
    return 0;
  if (strcmp(argv[*i], "--header") == 0) {
    *header = argv[++*i];
    return 1;
  }
  if (strcmp(argv[*i], "--label") != 0)
    return 0;
  arg = argv[++*i];
  if (!(eq = strchr(arg, '=')) || eq == arg ||
      json_object_setn_new(labels, arg, (size_t)(eq - arg), json_string(eq + 1))) {
    fprintf(stderr, "kcr-gen: --label %s: want KEY=VALUE in UTF-8\n", arg);
    return -1;
  }
  return 1;
}

/* add_fn adds one source file's text (len bytes) named name to set; 0 or -1 with msg. */
typedef int (*add_fn)(void *set, const char *name, const char *text, size_t len, char *msg,
                      size_t size);

/*
 * add_sources reads each argument that is not an option (every option of
 * `kcr-gen crd` and `kcr-gen webhook` takes a value) as a file of at most max
 * bytes and gives it to add, counting them in *nfiles. Returns 0, or -1 after
 * printing the first error.
 */
static int add_sources(int argc, char **argv, size_t max, add_fn add, void *set, size_t *nfiles) {
  char msg[1024] = "";
  for (int i = 0; i < argc; i++) {
    size_t len;
    char *text;
    int rc;
    if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0) {
      i++;
      continue;
    }
    if (!(text = gen_read_file(argv[i], max, &len, msg, sizeof(msg)))) {
      fprintf(stderr, "kcr-gen: %s: %s\n", argv[i], msg);
      return -1;
    }
    (*nfiles)++;
    rc = add(set, argv[i], text, len, msg, sizeof(msg));
    free(text);
    if (rc) {
      fprintf(stderr, "kcr-gen: %s\n", msg);
      return -1;
    }
  }
  return 0;
}

static int add_header(void *set, const char *name, const char *text, size_t len, char *msg,
                      size_t size) {
  return crd_set_add(set, name, text, len, msg, size);
}

static int add_marked(void *set, const char *name, const char *text, size_t len, char *msg,
                      size_t size) {
  return wh_set_add(set, name, text, len, msg, size);
}

/* crd_label puts labels (when it has any) on the CRD's metadata; 0 or -1 (out of memory). */
static int crd_label(json_t *crd, json_t *labels) {
  json_t *meta = json_object_get(crd, "metadata");
  if (json_object_size(labels) == 0)
    return 0;
  return json_object_set(meta, "labels", labels);
}

static int crd(int argc, char **argv) {
  const char *dir = ".", *header = NULL;
  char msg[1024] = "";
  crd_set *set = NULL;
  json_t *crds = NULL, *labels = json_object();
  size_t nfiles = 0;
  int rc = 1;
  if (!labels || crd_set_create(&set)) {
    fputs("kcr-gen: out of memory\n", stderr);
    json_decref(labels);
    return 1;
  }
  for (int i = 0; i < argc; i++) {
    long n;
    int taken;
    if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output-dir") == 0) && i + 1 < argc) {
      dir = argv[++i];
    } else if (strcmp(argv[i], "--max-desc-len") == 0 && i + 1 < argc &&
               count_arg(argv[i + 1], &n)) {
      crd_set_max_desc_len(set, n);
      i++;
    } else if ((taken = meta_arg(argc, argv, &i, &header, labels)) != 0) {
      if (taken < 0) {
        rc = 2;
        goto done;
      }
    } else if (argv[i][0] == '-' && strcmp(argv[i], "-") != 0) {
      fputs(CRD_USAGE, stderr);
      rc = 2;
      goto done;
    }
  }
  if (add_sources(argc, argv, HDR_TEXT_MAX, add_header, set, &nfiles))
    goto done;
  if (nfiles == 0) {
    fputs(CRD_USAGE, stderr);
    rc = 2;
    goto done;
  }
  if (crd_set_build(set, &crds, msg, sizeof(msg))) {
    fprintf(stderr, "kcr-gen: %s\n", msg);
    goto done;
  }
  if (json_array_size(crds) == 0) {
    fputs("kcr-gen: no kind in the headers (a kind's struct has +kubebuilder:object:root=true)\n",
          stderr);
    goto done;
  }
  for (size_t k = 0; k < json_array_size(crds); k++) {
    if (crd_label(json_array_get(crds, k), labels)) {
      fputs("kcr-gen: out of memory\n", stderr);
      goto done;
    }
    if (write_crd(dir, header, json_array_get(crds, k)))
      goto done;
  }
  rc = 0;
done:
  json_decref(crds);
  json_decref(labels);
  crd_set_destroy(set);
  return rc;
}

/* CODECS_USAGE is `kcr-gen codecs`' usage line. */
#define CODECS_USAGE "usage: kcr-gen codecs [-o DIR] [-I DIR]... [--uses HEADER]... HEADER...\n"

/* CODECS_MAX bounds the headers and -I directories of one `kcr-gen codecs` run. */
#define CODECS_MAX 64

/* include_as is path less the first of roots (n of them) it starts with, and a '/'. */
static const char *include_as(const char *path, const char *const *roots, size_t n) {
  for (size_t k = 0; k < n; k++) {
    size_t len = strlen(roots[k]);
    while (len > 1 && roots[k][len - 1] == '/')
      len--;
    if (strncmp(path, roots[k], len) == 0 && path[len] == '/')
      return path + len + 1;
  }
  return path;
}

/*
 * codecs is `kcr-gen codecs`: every header is read in order (a header may use
 * the types of those before it, as for `kcr-gen crd`), and each that is not
 * a --uses one gets its package: NAME_codecs.h and .c in DIR.
 */
static int codecs(int argc, char **argv) {
  const char *dir = ".", *roots[CODECS_MAX], *outs[CODECS_MAX];
  char msg[1024] = "", prefixes[CODECS_MAX][256];
  json_t *layouts[CODECS_MAX] = {NULL}, *crds = NULL;
  size_t nroots = 0, nouts = 0;
  crd_set *set = NULL;
  int rc = 1;
  if (crd_set_create(&set)) {
    fputs("kcr-gen: out of memory\n", stderr);
    return 1;
  }
  /* no descriptions: codecs need none, and the Kubernetes types kcr-gen has
   * only without them (JobTemplateSpec) are then taken */
  crd_set_max_desc_len(set, 0);
  for (int i = 0; i < argc; i++) {
    bool uses = strcmp(argv[i], "--uses") == 0 && i + 1 < argc;
    const char *file;
    char *text;
    size_t len;
    if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output-dir") == 0) && i + 1 < argc) {
      dir = argv[++i];
      continue;
    }
    if (strcmp(argv[i], "-I") == 0 && i + 1 < argc && nroots < CODECS_MAX) {
      roots[nroots++] = argv[++i];
      continue;
    }
    if ((argv[i][0] == '-' && !uses) || (!uses && nouts == CODECS_MAX)) {
      fputs(CODECS_USAGE, stderr);
      rc = 2;
      goto done;
    }
    file = uses ? argv[++i] : argv[i];
    if (!(text = gen_read_file(file, HDR_TEXT_MAX, &len, msg, sizeof(msg)))) {
      fprintf(stderr, "kcr-gen: %s: %s\n", file, msg);
      goto done;
    }
    rc = crd_set_add(set, file, text, len, msg, sizeof(msg));
    free(text);
    if (rc) {
      rc = 1;
      fprintf(stderr, "kcr-gen: %s\n", msg);
      goto done;
    }
    if (uses)
      continue;
    if (gen_codecs_prefix(file, prefixes[nouts], sizeof(prefixes[nouts]))) {
      fprintf(stderr,
              "kcr-gen: %s: name a type header NAME_types.h, NAME of lowercase letters, "
              "digits and '_' (its codecs are NAME_codecs)\n",
              file);
      rc = 1;
      goto done;
    }
    for (size_t k = 0; k < nouts; k++)
      if (strcmp(prefixes[k], prefixes[nouts]) == 0) {
        fprintf(stderr, "kcr-gen: %s and %s both make %s_codecs: give them separate runs\n",
                outs[k], file, prefixes[k]);
        rc = 1;
        goto done;
      }
    outs[nouts] = file;
    if (crd_set_layout(set, &layouts[nouts++])) {
      fputs("kcr-gen: out of memory\n", stderr);
      rc = 1;
      goto done;
    }
  }
  rc = 1;
  if (nouts == 0) {
    fputs(CODECS_USAGE, stderr);
    rc = 2;
    goto done;
  }
  if (crd_set_build(set, &crds, msg, sizeof(msg))) {
    fprintf(stderr, "kcr-gen: %s\n", msg);
    goto done;
  }
  for (size_t k = 0; k < nouts; k++) {
    gen_crd model;
    int erc = gen_codecs_build(layouts[k], crds, prefixes[k], include_as(outs[k], roots, nroots),
                               &model, msg, sizeof(msg));
    if (erc == 0)
      erc = gen_emit(&model, &model.versions[0], dir, msg, sizeof(msg));
    if (erc == 0)
      printf("%s/%s.h\n%s/%s.c\n", dir, model.versions[0].file, dir, model.versions[0].file);
    gen_crd_free(&model);
    if (erc) {
      fprintf(stderr, "kcr-gen: %s\n", msg);
      goto done;
    }
  }
  rc = 0;
done:
  for (size_t k = 0; k < nouts; k++)
    json_decref(layouts[k]);
  json_decref(crds);
  crd_set_destroy(set);
  return rc;
}

/* WEBHOOK_USAGE is `kcr-gen webhook`'s usage line. */
#define WEBHOOK_USAGE                                                                              \
  "usage: kcr-gen webhook [-o FILE] [--header TEXT] [--label KEY=VALUE]... SOURCE...\n"

/* WEBHOOK_YAML_MAX bounds the webhook manifests' YAML text. */
#define WEBHOOK_YAML_MAX ((size_t)16 << 20)

int gen_write_text(const char *path, const char *text, size_t len) {
  kcr_buf_t tmp;
  FILE *f;
  int rc = -1;
  if (strcmp(path, "-") == 0)
    return fwrite(text, 1, len, stdout) == len ? 0 : -1;
  kcr_buf_init(&tmp, 4096 + 16);
  if (kcr_buf_appendf(&tmp, "%s.tmp", path)) {
    fprintf(stderr, "kcr-gen: %s: the output path is too long\n", path);
    goto done;
  }
  if (gen_mkdirs(kcr_buf_cstr(&tmp)) || !(f = fopen(kcr_buf_cstr(&tmp), "wb"))) {
    fprintf(stderr, "kcr-gen: %s: %s\n", kcr_buf_cstr(&tmp), strerror(errno));
    goto done;
  }
  if ((fwrite(text, 1, len, f) != len) | fclose(f)) {
    fprintf(stderr, "kcr-gen: %s: write failed\n", kcr_buf_cstr(&tmp));
    remove(kcr_buf_cstr(&tmp));
    goto done;
  }
  if (rename(kcr_buf_cstr(&tmp), path)) {
    fprintf(stderr, "kcr-gen: %s: cannot rename: %s\n", kcr_buf_cstr(&tmp), strerror(errno));
    remove(kcr_buf_cstr(&tmp));
    goto done;
  }
  rc = 0;
done:
  kcr_buf_free(&tmp);
  return rc;
}

static int webhook(int argc, char **argv) {
  const char *out = "config/webhook/manifests.yaml", *header = NULL;
  char msg[1024] = "";
  wh_set *set = NULL;
  json_t *labels = json_object(), *docs = NULL;
  kcr_buf_t b;
  size_t nsources = 0, nfiles = 0;
  int rc = 1;
  kcr_buf_init(&b, WEBHOOK_YAML_MAX);
  if (!labels || wh_set_create(&set)) {
    fputs("kcr-gen: out of memory\n", stderr);
    goto done;
  }
  for (int i = 0; i < argc; i++) {
    int taken;
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if ((taken = meta_arg(argc, argv, &i, &header, labels)) != 0) {
      if (taken < 0) {
        rc = 2;
        goto done;
      }
    } else if (argv[i][0] == '-') {
      fputs(WEBHOOK_USAGE, stderr);
      rc = 2;
      goto done;
    } else {
      nsources++;
    }
  }
  if (nsources == 0) {
    fputs(WEBHOOK_USAGE, stderr);
    rc = 2;
    goto done;
  }
  if (add_sources(argc, argv, WH_TEXT_MAX, add_marked, set, &nfiles))
    goto done;
  if (wh_set_count(set) == 0) {
    fputs("kcr-gen: no +kubebuilder:webhook markers in the sources\n", stderr);
    goto done;
  }
  if (wh_set_build(set, labels, &docs, msg, sizeof(msg))) {
    fprintf(stderr, "kcr-gen: %s\n", msg);
    goto done;
  }
  if (header && kcr_buf_appendf(&b, "%s\n", header))
    goto toobig;
  for (size_t k = 0; k < json_array_size(docs); k++)
    if (gen_yaml_write(&b, json_array_get(docs, k)))
      goto toobig;
  if (gen_write_text(out, kcr_buf_cstr(&b), kcr_buf_len(&b)) == 0)
    rc = 0;
  goto done;
toobig:
  fprintf(stderr, "kcr-gen: the manifests are larger than %zu bytes, or memory ran out\n",
          WEBHOOK_YAML_MAX);
done:
  kcr_buf_free(&b);
  json_decref(docs);
  json_decref(labels);
  wh_set_destroy(set);
  return rc;
}

int main(int argc, char **argv) {
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
    printf("kcr-gen %s\n", KCR_GEN_VERSION);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "types") == 0)
    return types(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "init") == 0)
    return gen_scaffold_init(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "create") == 0)
    return gen_scaffold_create(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "rbac") == 0)
    return gen_rbac(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "crd") == 0)
    return crd(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "codecs") == 0)
    return codecs(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "webhook") == 0)
    return webhook(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "openapi") == 0)
    return openapi(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "helm") == 0)
    return gen_helm(argc - 2, argv + 2);
  usage(stderr);
  return 2;
}
