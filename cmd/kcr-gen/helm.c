/* SPDX-License-Identifier: MIT */
/*
 * helm.c: `kcr-gen helm`, a Helm chart made from a project's rendered
 * kustomize output (dist/install.yaml, `make build-installer`), the way
 * kubebuilder's helm/v2-alpha plugin makes one from the same file rather than
 * from templates of its own. Every object but the Namespace becomes one
 * template, under a directory named for the part of config/ it comes from
 * (crd, rbac, manager, webhook, certmanager, prometheus, network-policy,
 * metrics, other). Exactly three things are templated: the namespace the
 * Namespace object names becomes the release's, wherever it appears as a
 * whole word (metadata, subjects, DNS names, cert-manager's CA annotations);
 * the manager's image becomes manager.image.repository and .tag; the parts
 * nothing else depends on sit behind a switch of values.yaml, on by default
 * (crd.enable, prometheus.enable, networkPolicy.enable; webhooks and
 * cert-manager are wired into the manager and the CRDs, so they have none).
 * So `helm template --namespace NS` of the chart gives the input back, less
 * its Namespace, which the scaffold's integration test checks.
 *
 * The chart directory must not exist or be empty: the chart is generated
 * whole, and kcr-gen never deletes files (the scaffold's `make helm-chart`
 * removes dist/chart first).
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "kcr/buf.h"

#define HELM_USAGE "usage: kcr-gen helm [-o DIR] [--name NAME] INSTALL.yaml\n"

/* HELM_TEXT_MAX bounds one template's text (a CRD can be large). */
#define HELM_TEXT_MAX ((size_t)64 << 20)

/* HELM_PATH_MAX bounds a path the chart writes. */
#define HELM_PATH_MAX 4400

/* The release's namespace, and the image as values. IMAGE_MARK stands in for
 * the image in the JSON so that the writer leaves it unquoted; it is then
 * replaced in the text, where the writer cannot quote the braces. */
#define NS_EXPR "{{ .Release.Namespace }}"
#define IMAGE_MARK "kcr-gen-helm-image-value"
#define IMAGE_EXPR "{{ .Values.manager.image.repository }}:{{ .Values.manager.image.tag }}"

/* part_of: the directory of the chart's templates an object goes to. */
static const char *part_of(const char *kind, const char *name) {
  static const struct {
    const char *kind, *part;
  } parts[] = {
      {"CustomResourceDefinition", "crd"},
      {"ServiceAccount", "rbac"},
      {"Role", "rbac"},
      {"ClusterRole", "rbac"},
      {"RoleBinding", "rbac"},
      {"ClusterRoleBinding", "rbac"},
      {"Deployment", "manager"},
      {"MutatingWebhookConfiguration", "webhook"},
      {"ValidatingWebhookConfiguration", "webhook"},
      {"Certificate", "certmanager"},
      {"Issuer", "certmanager"},
      {"ServiceMonitor", "prometheus"},
      {"NetworkPolicy", "network-policy"},
  };
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
    if (strcmp(kind, parts[i].kind) == 0)
      return parts[i].part;
  if (strcmp(kind, "Service") == 0)
    return strstr(name, "webhook") ? "webhook" : "metrics";
  return "other";
}

/* str: the string member key of o, or "" when it has none. */
static const char *str(const json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(o, key));
  return v ? v : "";
}

/* switch_of: the values.yaml key that switches a part on and off, or NULL
 * for a part others depend on. */
static const char *switch_of(const char *part) {
  static const char *const switches[][2] = {
      {"crd", "crd"}, {"prometheus", "prometheus"}, {"network-policy", "networkPolicy"}};
  for (size_t i = 0; i < sizeof(switches) / sizeof(switches[0]); i++)
    if (strcmp(part, switches[i][0]) == 0)
      return switches[i][1];
  return NULL;
}

/* label_char: whether c may continue a DNS label (so a namespace inside a
 * longer name is not the namespace). */
static bool label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

/* templated appends text to out with every whole-word ns made NS_EXPR and
 * IMAGE_MARK made IMAGE_EXPR. 0, or the kcr_buf error. */
static int templated(kcr_buf_t *out, const char *text, const char *ns) {
  size_t nl = strlen(ns), ml = strlen(IMAGE_MARK);
  for (const char *p = text; *p;) {
    bool word_start = p == text || !label_char(p[-1]);
    int rc;
    if (word_start && strncmp(p, ns, nl) == 0 && !label_char(p[nl])) {
      rc = kcr_buf_appends(out, NS_EXPR);
      p += nl;
    } else if (strncmp(p, IMAGE_MARK, ml) == 0) {
      rc = kcr_buf_appends(out, IMAGE_EXPR);
      p += ml;
    } else {
      rc = kcr_buf_appendc(out, *p++);
    }
    if (rc)
      return rc;
  }
  return 0;
}

/* write_file writes text to dir/rel, making the directories on the way. */
static int write_file(const char *dir, const char *rel, const char *text) {
  char path[HELM_PATH_MAX];
  if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path)) {
    fprintf(stderr, "kcr-gen: %s/%s: the path is too long\n", dir, rel);
    return -1;
  }
  if (gen_mkdirs(path)) {
    fprintf(stderr, "kcr-gen: %s: %s\n", path, strerror(errno));
    return -1;
  }
  return gen_write_text(path, text, strlen(text));
}

/* dir_empty tells whether dir is missing or holds nothing. */
static bool dir_empty(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  bool empty = true;
  if (!d)
    return errno == ENOENT;
  while (empty && (e = readdir(d)))
    empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
  closedir(d);
  return empty;
}

/*
 * manager_image finds the manager's container (named "manager", as
 * kubebuilder names it) among the docs, puts IMAGE_MARK in its place and its
 * image into *image (borrowed from a copy kept in keep). 0, or -1 after saying
 * why.
 */
static int manager_image(const char *input, json_t *docs, json_t *keep, const char **image) {
  size_t i, k;
  json_t *doc, *c;
  json_array_foreach(docs, i, doc) {
    json_t *cs = json_object_get(
        json_object_get(json_object_get(json_object_get(doc, "spec"), "template"), "spec"),
        "containers");
    if (strcmp(str(doc, "kind"), "Deployment") != 0)
      continue;
    json_array_foreach(cs, k, c) {
      const char *img = json_string_value(json_object_get(c, "image"));
      if (!img || strcmp(str(c, "name"), "manager") != 0)
        continue;
      if (json_array_append_new(keep, json_string(img)) ||
          json_object_set_new(c, "image", json_string(IMAGE_MARK))) {
        fputs("kcr-gen: out of memory\n", stderr);
        return -1;
      }
      *image = json_string_value(json_array_get(keep, json_array_size(keep) - 1));
      return 0;
    }
  }
  fprintf(stderr,
          "kcr-gen: %s: no Deployment has a container named manager: is this a project's "
          "config/default, rendered?\n",
          input);
  return -1;
}

/* yaml_of appends head, doc as YAML and tail to b; 0 or -1 (too large). */
static int yaml_of(kcr_buf_t *b, const char *head, const json_t *doc, const char *tail) {
  return kcr_buf_appends(b, head) || gen_yaml_write(b, doc) || kcr_buf_appends(b, tail) ? -1 : 0;
}

/* write_yaml writes head then doc (borrowed; NULL is out of memory) as YAML
 * to dir/rel. 0, or -1 after saying why. */
static int write_yaml(const char *dir, const char *rel, const char *head, const json_t *doc) {
  kcr_buf_t b;
  int rc = -1;
  kcr_buf_init(&b, HELM_TEXT_MAX);
  if (!doc || yaml_of(&b, head, doc, ""))
    fprintf(stderr, "kcr-gen: %s/%s: out of memory\n", dir, rel);
  else
    rc = write_file(dir, rel, kcr_buf_cstr(&b));
  kcr_buf_free(&b);
  return rc;
}

/* chart_files writes Chart.yaml and values.yaml for name, image and the
 * switches (borrowed: key -> {"enable": true}) of the parts present. */
static int chart_files(const char *dir, const char *name, const char *image, json_t *switches) {
  const char *slash = strrchr(image, '/'), *colon = strrchr(image, ':');
  char repo[1024];
  const char *tag = "latest";
  json_t *chart, *values;
  int rc;
  if (colon && (!slash || colon > slash) && !strchr(image, '@')) {
    snprintf(repo, sizeof(repo), "%.*s", (int)(colon - image), image);
    tag = colon + 1;
  } else {
    snprintf(repo, sizeof(repo), "%s", image);
  }
  chart = json_pack("{ssssssssssss}", "apiVersion", "v2", "name", name, "description",
                    "A Helm chart of the project's config/default, made by kcr-gen helm.", "type",
                    "application", "version", "0.1.0", "appVersion", tag);
  values = json_pack("{s{s{ssss}}}", "manager", "image", "repository", repo, "tag", tag);
  if (values && json_object_update(values, switches)) {
    json_decref(values);
    values = NULL;
  }
  rc = write_yaml(dir, "Chart.yaml",
                  "# Made by kcr-gen helm from the project's kustomize output.\n", chart) ||
               write_yaml(dir, "values.yaml",
                          "# manager.image: the manager's container image. crd.enable: false "
                          "leaves the\n# CustomResourceDefinitions out (installed some other "
                          "way); prometheus.enable\n# and networkPolicy.enable, the "
                          "ServiceMonitor and the NetworkPolicies.\n",
                          values)
           ? -1
           : 0;
  json_decref(chart);
  json_decref(values);
  return rc;
}

/* template_of writes doc (object i of the file input) as its template. seen
 * holds the paths written so far, so that two objects never share one. */
static int template_of(const char *dir, const char *input, const json_t *doc, size_t i,
                       const char *ns, json_t *seen) {
  const char *kind = json_string_value(json_object_get(doc, "kind"));
  const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
  char rel[HELM_PATH_MAX], head[128];
  const char *key;
  kcr_buf_t yaml, text;
  int rc = -1;
  if (!kind || !name) {
    fprintf(stderr, "kcr-gen: %s: document %zu: an object needs kind and metadata.name\n", input,
            i + 1);
    return -1;
  }
  key = switch_of(part_of(kind, name));
  snprintf(head, sizeof(head), "{{- if .Values.%s.enable }}\n", key ? key : "");
  snprintf(rel, sizeof(rel), "templates/%s/%s.yaml", part_of(kind, name), name);
  if (json_object_get(seen, rel)) /* a Role and a ClusterRole of one name */
    snprintf(rel, sizeof(rel), "templates/%s/%s-%s.yaml", part_of(kind, name), name, kind);
  if (json_object_get(seen, rel) || json_object_set_new(seen, rel, json_true())) {
    fprintf(stderr, "kcr-gen: %s: document %zu: %s %s is in the input twice\n", input, i + 1, kind,
            name);
    return -1;
  }
  kcr_buf_init(&yaml, HELM_TEXT_MAX);
  kcr_buf_init(&text, HELM_TEXT_MAX);
  if (yaml_of(&yaml, key ? head : "", doc, key ? "{{- end }}\n" : "") ||
      templated(&text, kcr_buf_cstr(&yaml), ns))
    fprintf(stderr, "kcr-gen: %s %s: larger than %zu bytes, or out of memory\n", kind, name,
            HELM_TEXT_MAX);
  else
    rc = write_file(dir, rel, kcr_buf_cstr(&text));
  kcr_buf_free(&yaml);
  kcr_buf_free(&text);
  return rc;
}

int gen_helm(int argc, char **argv) {
  const char *dir = "dist/chart", *name = NULL, *input = NULL, *ns = NULL, *image = NULL;
  char msg[1024] = "", defname[256];
  bool bad = false;
  json_t *docs = NULL, *keep = json_array(), *seen = json_object(), *switches = json_object(), *doc;
  size_t i;
  int rc = 1;
  for (int a = 0; a < argc; a++) {
    if (strcmp(argv[a], "-o") == 0 && a + 1 < argc)
      dir = argv[++a];
    else if (strcmp(argv[a], "--name") == 0 && a + 1 < argc)
      name = argv[++a];
    else if (argv[a][0] != '-' && !input)
      input = argv[a];
    else
      bad = true;
  }
  if (bad || !input) {
    fputs(HELM_USAGE, stderr);
    rc = 2;
    goto done;
  }
  if (!keep || !seen || !switches) {
    fputs("kcr-gen: out of memory\n", stderr);
    goto done;
  }
  if (gen_yaml_load(input, &docs, msg, sizeof(msg))) {
    fprintf(stderr, "kcr-gen: %s: %s\n", input, msg);
    goto done;
  }
  json_array_foreach(docs, i, doc) {
    if (strcmp(str(doc, "kind"), "Namespace") != 0)
      continue;
    if (ns) {
      fprintf(stderr, "kcr-gen: %s: two Namespace objects; a chart has one namespace\n", input);
      goto done;
    }
    ns = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
  }
  if (!ns) {
    fprintf(stderr,
            "kcr-gen: %s: no Namespace object (the namespace config/default sets): give "
            "kubectl kustomize config/default's output\n",
            input);
    goto done;
  }
  if (!name) { /* the project's name: config/default's namespace is NAME-system */
    size_t n = strlen(ns);
    snprintf(defname, sizeof(defname), "%.*s",
             (int)(n > 7 && strcmp(ns + n - 7, "-system") == 0 ? n - 7 : n), ns);
    name = defname;
  }
  if (!dir_empty(dir)) {
    fprintf(stderr, "kcr-gen: %s is not empty: the chart is made whole; remove it first\n", dir);
    goto done;
  }
  json_array_foreach(docs, i, doc) {
    const char *key =
        switch_of(part_of(str(doc, "kind"), str(json_object_get(doc, "metadata"), "name")));
    if (key && json_object_set_new(switches, key, json_pack("{sb}", "enable", 1))) {
      fputs("kcr-gen: out of memory\n", stderr);
      goto done;
    }
  }
  if (manager_image(input, docs, keep, &image) || chart_files(dir, name, image, switches))
    goto done;
  json_array_foreach(docs, i, doc) {
    if (!json_is_object(doc) || strcmp(str(doc, "kind"), "Namespace") == 0)
      continue;
    if (template_of(dir, input, doc, i, ns, seen))
      goto done;
  }
  printf("%s\n", dir);
  rc = 0;
done:
  json_decref(docs);
  json_decref(keep);
  json_decref(seen);
  json_decref(switches);
  return rc;
}
