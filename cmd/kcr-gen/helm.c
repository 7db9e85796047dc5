/* SPDX-License-Identifier: MIT */
/*
 * helm.c: `kcr-gen helm`, a Helm chart made from a project's rendered
 * kustomize output (dist/install.yaml, `make build-installer`), the way
 * kubebuilder's helm/v2-alpha plugin makes one from the same file rather than
 * from templates of its own. Every object but the Namespace becomes one
 * template, under a directory named for the part of config/ it comes from
 * (crd, rbac, manager, webhook, certmanager, prometheus, network-policy,
 * metrics, other). What is templated: the namespace the Namespace object
 * names becomes the release's, wherever it appears as a whole word
 * (metadata, subjects, DNS names, cert-manager's CA annotations); the
 * manager's image becomes manager.image.repository and .tag, and its
 * ServiceAccount manager.serviceAccountName (in the ServiceAccount, the
 * bindings' subjects and the pod); and each part sits behind switches of
 * values.yaml, all on by default: crd, rbac, webhook, certmanager, metrics,
 * prometheus, networkPolicy (X.enable). A part that serves another goes with
 * it (the webhook Certificate with webhook and certmanager, the ServiceMonitor
 * with prometheus and metrics), and what one part adds to another is switched
 * inside it (switches_of, mark_doc): cert-manager's CA annotations, a CRD's
 * conversion webhook, the manager's --webhook-cert-path and --metrics-* flags,
 * webhook port and certificate volumes, a ServiceMonitor's TLS verification
 * with cert-manager's Secret (an {{- else }} skips verification). With rbac off the chart makes no
 * ServiceAccount and the manager runs as manager.serviceAccountName, which
 * the user makes.
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

/* The manager's ServiceAccount as a value (which rbac.enable=false leaves to
 * the user), marked as the image is; and the marker of a part behind switches
 * (chart_t). */
#define SA_MARK "kcr-gen-helm-service-account"
#define SA_EXPR "{{ .Values.manager.serviceAccountName }}"
#define COND_MARK "kcr-gen-helm-cond-"

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

/* KEYS_MAX bounds the switches one test names (and ends the list's NULL). */
#define KEYS_MAX 3

/*
 * switches_of fills keys (NULL-ended) with the values.yaml switches the object
 * doc needs on, from its part: a part that serves the webhooks or the metrics
 * goes with them (a Certificate, a NetworkPolicy, the ServiceMonitor), so that
 * turning one off leaves nothing behind that names what went. None for the
 * manager and the objects of no part.
 */
static void switches_of(const json_t *doc, const char *part, const char **keys) {
  const char *name = str(json_object_get(doc, "metadata"), "name");
  const char *secret = str(json_object_get(doc, "spec"), "secretName");
  size_t n = 0;
  if (strcmp(part, "crd") == 0 || strcmp(part, "rbac") == 0 || strcmp(part, "webhook") == 0 ||
      strcmp(part, "metrics") == 0) {
    keys[n++] = part;
  } else if (strcmp(part, "certmanager") == 0) {
    keys[n++] = "certmanager";
    if (strcmp(str(doc, "kind"), "Certificate") == 0)
      keys[n++] = strstr(name, "metrics") || strstr(secret, "metrics") ? "metrics" : "webhook";
  } else if (strcmp(part, "prometheus") == 0) {
    keys[n++] = "prometheus";
    keys[n++] = "metrics";
  } else if (strcmp(part, "network-policy") == 0) {
    keys[n++] = "networkPolicy";
    if (strstr(name, "webhook"))
      keys[n++] = "webhook";
    else if (strstr(name, "metrics"))
      keys[n++] = "metrics";
  }
  keys[n] = NULL;
}

/* label_char: whether c may continue a DNS label (so a namespace inside a
 * longer name is not the namespace). */
static bool label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

/* templated appends text to out with every whole-word ns made NS_EXPR,
 * IMAGE_MARK made IMAGE_EXPR and SA_MARK SA_EXPR. 0, or the kcr_buf error. */
static int templated(kcr_buf_t *out, const char *text, const char *ns) {
  size_t nl = strlen(ns), ml = strlen(IMAGE_MARK), sl = strlen(SA_MARK);
  for (const char *p = text; *p;) {
    bool word_start = p == text || !label_char(p[-1]);
    int rc;
    if (word_start && strncmp(p, ns, nl) == 0 && !label_char(p[nl])) {
      rc = kcr_buf_appends(out, NS_EXPR);
      p += nl;
    } else if (strncmp(p, IMAGE_MARK, ml) == 0) {
      rc = kcr_buf_appends(out, IMAGE_EXPR);
      p += ml;
    } else if (strncmp(p, SA_MARK, sl) == 0) {
      rc = kcr_buf_appends(out, SA_EXPR);
      p += sl;
    } else {
      rc = kcr_buf_appendc(out, *p++);
    }
    if (rc)
      return rc;
  }
  return 0;
}

/*
 * chart_t: what the templates of one chart share. A part of an object that
 * sits behind switches (a list item, an object member) is taken out of the
 * JSON and a marker, COND_MARK and its index in conds, put in its place; the
 * written YAML's marker line then becomes the part between {{- if }} and
 * {{- end }} lines at the marker's indent (expand), because the writer cannot
 * place template lines itself.
 */
typedef struct {
  const char *ns; /* the input's namespace, made the release's */
  const char *sa; /* the manager's ServiceAccount, or NULL (the default one) */
  json_t *conds;  /* [test, part(, else)] by marker; part is [item] or {key: value} */
  json_t *certs;  /* the Secrets the input's Certificates fill: name -> true */
  json_t *values; /* the switches tested so far: key -> {"enable": true} */
} chart_t;

/*
 * test_of writes into out the template line that holds when every switch of
 * keys (NULL-ended, at least one) is on, and records the switches for
 * values.yaml. 0, or -1 when out of memory.
 */
static int test_of(chart_t *c, const char *const *keys, char *out, size_t size) {
  size_t len = (size_t)snprintf(out, size, "{{- if %s", keys[1] ? "and " : "");
  for (size_t i = 0; keys[i]; i++) {
    if (len < size)
      len += (size_t)snprintf(out + len, size - len, "%s.Values.%s.enable", i ? " " : "", keys[i]);
    if (!json_object_get(c->values, keys[i]) &&
        json_object_set_new(c->values, keys[i], json_pack("{sb}", "enable", 1)))
      return -1;
  }
  if (len < size)
    snprintf(out + len, size - len, " }}");
  return 0;
}

/*
 * mark puts behind keys either item i of the array in (key NULL) or the member
 * key of the object in: it moves the part into c->conds and leaves a marker.
 * 0, or -1 when out of memory.
 */
static int mark(chart_t *c, json_t *in, size_t i, const char *key, const char *const *keys) {
  char test[256], marker[64];
  json_t *part;
  snprintf(marker, sizeof(marker), "%s%zu", COND_MARK, json_array_size(c->conds));
  if (test_of(c, keys, test, sizeof(test)))
    return -1;
  part = key ? json_pack("{sO}", key, json_object_get(in, key))
             : json_pack("[O]", json_array_get(in, i));
  if (!part || json_array_append_new(c->conds, json_pack("[so]", test, part)))
    return -1;
  if (key)
    return json_object_del(in, key) || json_object_set_new(in, marker, json_null()) ? -1 : 0;
  return json_array_set_new(in, i, json_string(marker)) ? -1 : 0;
}

/* mark_items puts behind keys the items of the array in whose string (a
 * member name of an object item, or the item itself) contains or, with
 * prefix, starts with what. 0, or -1 when out of memory. */
static int mark_items(chart_t *c, json_t *in, const char *name, const char *what, bool prefix,
                      const char *const *keys) {
  size_t i;
  json_t *e;
  json_array_foreach(in, i, e) {
    const char *s = name ? str(e, name) : json_string_value(e);
    if (s && (prefix ? strncmp(s, what, strlen(what)) == 0 : strstr(s, what) != NULL) &&
        mark(c, in, i, NULL, keys))
      return -1;
  }
  return 0;
}

/*
 * mark_manager puts behind their switches the parts of a Deployment's pod that
 * the webhooks and the metrics add (config/default's manager patches): the
 * flags, ports, mounts and volumes named for them. The webhook certificate's
 * volume stays with webhook.enable alone (without cert-manager the user
 * supplies its Secret); the metrics one goes with cert-manager, whose
 * Certificate fills it (without it the manager makes its own).
 */
static int mark_manager(chart_t *c, json_t *doc) {
  static const char *const wh[] = {"webhook", NULL}, *const mx[] = {"metrics", NULL},
                           *const mxcm[] = {"metrics", "certmanager", NULL};
  json_t *pod = json_object_get(json_object_get(json_object_get(doc, "spec"), "template"), "spec");
  json_t *ct;
  size_t i;
  json_array_foreach(json_object_get(pod, "containers"), i, ct) {
    json_t *args = json_object_get(ct, "args"), *ports = json_object_get(ct, "ports"),
           *mounts = json_object_get(ct, "volumeMounts");
    if (mark_items(c, args, NULL, "--metrics-bind-address", true, mx) ||
        mark_items(c, args, NULL, "--metrics-secure", true, mx) ||
        mark_items(c, args, NULL, "--metrics-cert-path", true, mxcm) ||
        mark_items(c, args, NULL, "--webhook-cert-path", true, wh) ||
        mark_items(c, ports, "name", "webhook", false, wh) ||
        mark_items(c, ports, "name", "metrics", false, mx) ||
        mark_items(c, mounts, "name", "webhook", false, wh) ||
        mark_items(c, mounts, "name", "metrics", false, mxcm))
      return -1;
  }
  return mark_items(c, json_object_get(pod, "volumes"), "name", "webhook", false, wh) ||
                 mark_items(c, json_object_get(pod, "volumes"), "name", "metrics", false, mxcm)
             ? -1
             : 0;
}

/* tls_secret: the Secret a ServiceMonitor endpoint's tlsConfig reads its
 * CA, certificate or key from, or "" when none. */
static const char *tls_secret(const json_t *tls) {
  const char *s = str(json_object_get(json_object_get(tls, "ca"), "secret"), "name");
  if (!*s)
    s = str(json_object_get(json_object_get(tls, "cert"), "secret"), "name");
  return *s ? s : str(json_object_get(tls, "keySecret"), "name");
}

/*
 * mark_monitor: a ServiceMonitor endpoint that verifies the metrics
 * certificate with a Secret cert-manager fills (config/prometheus's TLS
 * patch) keeps that tlsConfig with certmanager, and skips verification
 * without it (the manager's own certificate is then self-signed), as the
 * unpatched monitor does.
 */
static int mark_monitor(chart_t *c, json_t *doc) {
  static const char *const cm[] = {"certmanager", NULL};
  json_t *ep;
  size_t i;
  json_array_foreach(json_object_get(json_object_get(doc, "spec"), "endpoints"), i, ep) {
    const char *secret = tls_secret(json_object_get(ep, "tlsConfig"));
    json_t *alt;
    if (!json_object_get(c->certs, secret))
      continue;
    if (mark(c, ep, 0, "tlsConfig", cm))
      return -1;
    alt = json_pack("{s{sb}}", "tlsConfig", "insecureSkipVerify", 1);
    if (!alt || json_array_append_new(json_array_get(c->conds, json_array_size(c->conds) - 1), alt))
      return -1;
  }
  return 0;
}

/*
 * mark_doc puts behind their switches the parts of doc that other parts
 * provide: cert-manager's CA injection annotations (the webhooks' serving
 * certificate's CA, so with webhook too), a CRD's conversion webhook, the
 * manager's webhook and metrics wiring; and puts SA_MARK where
 * doc names the manager's ServiceAccount. 0, or -1 when out of memory.
 */
static int mark_doc(chart_t *c, json_t *doc) {
  static const char *const cm[] = {"certmanager", "webhook", NULL}, *const wh[] = {"webhook", NULL};
  const char *kind = str(doc, "kind");
  json_t *md = json_object_get(doc, "metadata"), *anns = json_object_get(md, "annotations");
  json_t *spec = json_object_get(doc, "spec"), *e;
  const char *key;
  void *tmp;
  size_t i;
  json_object_foreach_safe(anns, tmp, key, e) {
    if (strncmp(key, "cert-manager.io/inject-ca-from", 30) != 0)
      continue;
    if (json_object_size(anns) == 1) { /* the whole map, not an empty one */
      if (mark(c, md, 0, "annotations", cm))
        return -1;
      break;
    }
    if (mark(c, anns, 0, key, cm))
      return -1;
  }
  if (strcmp(kind, "CustomResourceDefinition") == 0 &&
      strcmp(str(json_object_get(spec, "conversion"), "strategy"), "Webhook") == 0 &&
      mark(c, spec, 0, "conversion", wh))
    return -1;
  if (strcmp(kind, "Deployment") == 0 && mark_manager(c, doc))
    return -1;
  if (strcmp(kind, "ServiceMonitor") == 0 && mark_monitor(c, doc))
    return -1;
  if (!c->sa)
    return 0;
  if (strcmp(kind, "ServiceAccount") == 0 && strcmp(str(md, "name"), c->sa) == 0)
    return json_object_set_new(md, "name", json_string(SA_MARK));
  if (strcmp(kind, "RoleBinding") == 0 || strcmp(kind, "ClusterRoleBinding") == 0) {
    json_array_foreach(json_object_get(doc, "subjects"), i, e) {
      if (strcmp(str(e, "kind"), "ServiceAccount") == 0 && strcmp(str(e, "name"), c->sa) == 0 &&
          strcmp(str(e, "namespace"), c->ns) == 0 &&
          json_object_set_new(e, "name", json_string(SA_MARK)))
        return -1;
    }
  }
  if (strcmp(kind, "Deployment") == 0) {
    json_t *pod = json_object_get(json_object_get(spec, "template"), "spec");
    if (strcmp(str(pod, "serviceAccountName"), c->sa) == 0)
      return json_object_set_new(pod, "serviceAccountName", json_string(SA_MARK));
  }
  return 0;
}

/* moved appends part (a marker's [item] or {key: value}) to out as YAML
 * whose lines start at indent. 0, or the kcr_buf error. */
static int moved(kcr_buf_t *out, const json_t *part, size_t indent) {
  kcr_buf_t b;
  int rc;
  kcr_buf_init(&b, HELM_TEXT_MAX);
  rc = gen_yaml_write(&b, part);
  for (const char *r = kcr_buf_cstr(&b) + 4; *r && !rc;) { /* past "---\n" */
    const char *rn = strchr(r, '\n');
    size_t rl = rn ? (size_t)(rn - r) + 1 : strlen(r);
    rc = kcr_buf_appendf(out, "%*s%.*s", (int)indent, "", (int)rl, r);
    r += rl;
  }
  kcr_buf_free(&b);
  return rc;
}

/*
 * expand appends text to out with each marker line of mark made its part, at
 * the marker's indent, between a test and an {{- end }} (with an {{- else }}
 * and the other part when it has one). 0, or -1 (too large, or out of
 * memory).
 */
static int expand(const chart_t *c, kcr_buf_t *out, const char *text) {
  size_t ml = strlen(COND_MARK);
  int rc = 0;
  for (const char *p = text; *p && !rc;) {
    const char *nl = strchr(p, '\n'), *q = p + strspn(p, " ");
    size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p), indent = (size_t)(q - p);
    const json_t *cond;
    kcr_buf_t part, alt;
    if (strncmp(q, "- ", 2) == 0)
      q += 2;
    if (strncmp(q, COND_MARK, ml) != 0) {
      rc = kcr_buf_append(out, p, n);
      p += n;
      continue;
    }
    cond = json_array_get(c->conds, strtoul(q + ml, NULL, 10));
    if (q != p + indent && json_is_object(json_array_get(cond, 1))) {
      /* a list item's first member: the item's dash alone, its members below */
      if (kcr_buf_appendf(out, "%*s-\n", (int)indent, "")) {
        rc = -1;
        break;
      }
      indent += 2;
    }
    kcr_buf_init(&part, HELM_TEXT_MAX);
    kcr_buf_init(&alt, HELM_TEXT_MAX);
    rc = moved(&part, json_array_get(cond, 1), indent);
    if (!rc && json_array_size(cond) > 2)
      rc = moved(&alt, json_array_get(cond, 2), indent);
    if (!rc)
      rc = kcr_buf_appendf(out, "%*s%s\n", (int)indent, "",
                           json_string_value(json_array_get(cond, 0)));
    if (!rc)
      rc = expand(c, out, kcr_buf_cstr(&part));
    if (!rc && json_array_size(cond) > 2) {
      rc = kcr_buf_appendf(out, "%*s{{- else }}\n", (int)indent, "");
      if (!rc)
        rc = expand(c, out, kcr_buf_cstr(&alt));
    }
    if (!rc)
      rc = kcr_buf_appendf(out, "%*s{{- end }}\n", (int)indent, "");
    kcr_buf_free(&part);
    kcr_buf_free(&alt);
    p += n;
  }
  return rc ? -1 : 0;
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
 * image into *image, and its pod's ServiceAccount into *sa (NULL when it names
 * none); both borrowed from copies kept in keep. 0, or -1 after saying why.
 */
static int manager_image(const char *input, json_t *docs, json_t *keep, const char **image,
                         const char **sa) {
  size_t i, k;
  json_t *doc, *c;
  json_array_foreach(docs, i, doc) {
    json_t *pod =
        json_object_get(json_object_get(json_object_get(doc, "spec"), "template"), "spec");
    if (strcmp(str(doc, "kind"), "Deployment") != 0)
      continue;
    json_array_foreach(json_object_get(pod, "containers"), k, c) {
      const char *img = json_string_value(json_object_get(c, "image"));
      const char *name = json_string_value(json_object_get(pod, "serviceAccountName"));
      if (!img || strcmp(str(c, "name"), "manager") != 0)
        continue;
      if (json_array_append_new(keep, json_string(img)) ||
          json_array_append_new(keep, name ? json_string(name) : json_null()) ||
          json_object_set_new(c, "image", json_string(IMAGE_MARK))) {
        fputs("kcr-gen: out of memory\n", stderr);
        return -1;
      }
      *image = json_string_value(json_array_get(keep, json_array_size(keep) - 2));
      *sa = json_string_value(json_array_get(keep, json_array_size(keep) - 1));
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

/* VALUES_HEAD opens values.yaml: what each value does. */
#define VALUES_HEAD                                                                                \
  "# Made by kcr-gen helm. The defaults render dist/install.yaml (less its Namespace).\n"          \
  "# manager.image: the manager's container image. manager.serviceAccountName: the\n"              \
  "# ServiceAccount the manager runs as; the chart makes it (and binds the roles to it)\n"         \
  "# when rbac.enable, else it must exist in the release's namespace.\n"                           \
  "# Each X.enable: false leaves a part out, and with it what names that part:\n"                  \
  "#   crd: the CustomResourceDefinitions (installed some other way);\n"                           \
  "#   rbac: the ServiceAccount, Roles, ClusterRoles and their bindings;\n"                        \
  "#   webhook: the webhook Service and configurations, a CRD's conversion webhook and\n"          \
  "#     the manager's webhook port, certificate volume and --webhook-cert-path;\n"                \
  "#   certmanager: the Issuer and Certificates and the CA injection annotations (the\n"           \
  "#     webhooks' Secret webhook-server-cert and their CA are then the user's), and a\n"          \
  "#     ServiceMonitor's verification of the metrics certificate;\n"                              \
  "#   metrics: the metrics Service and the manager's --metrics-* flags (with\n"                   \
  "#     certmanager, also its metrics certificate volume);\n"                                     \
  "#   prometheus: the ServiceMonitor; networkPolicy: the NetworkPolicies.\n"

/* chart_files writes Chart.yaml and values.yaml for name, image, sa (NULL:
 * none) and the switches (borrowed: key -> {"enable": true}) the templates
 * test. */
static int chart_files(const char *dir, const char *name, const char *image, const char *sa,
                       json_t *switches) {
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
  if (values && ((sa && json_object_set_new(json_object_get(values, "manager"),
                                            "serviceAccountName", json_string(sa))) ||
                 json_object_update(values, switches))) {
    json_decref(values);
    values = NULL;
  }
  rc = write_yaml(dir, "Chart.yaml",
                  "# Made by kcr-gen helm from the project's kustomize output.\n", chart) ||
               write_yaml(dir, "values.yaml", VALUES_HEAD, values)
           ? -1
           : 0;
  json_decref(chart);
  json_decref(values);
  return rc;
}

/* template_of writes doc (object i of the file input) as its template. seen
 * holds the paths written so far, so that two objects never share one. */
static int template_of(chart_t *c, const char *dir, const char *input, json_t *doc, size_t i,
                       json_t *seen) {
  const char *kind = json_string_value(json_object_get(doc, "kind"));
  const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
  const char *keys[KEYS_MAX + 1];
  char rel[HELM_PATH_MAX], head[256] = "";
  kcr_buf_t yaml, body, text;
  int rc = -1;
  if (!kind || !name) {
    fprintf(stderr, "kcr-gen: %s: document %zu: an object needs kind and metadata.name\n", input,
            i + 1);
    return -1;
  }
  snprintf(rel, sizeof(rel), "templates/%s/%s.yaml", part_of(kind, name), name);
  if (json_object_get(seen, rel)) /* a Role and a ClusterRole of one name */
    snprintf(rel, sizeof(rel), "templates/%s/%s-%s.yaml", part_of(kind, name), name, kind);
  if (json_object_get(seen, rel) || json_object_set_new(seen, rel, json_true())) {
    fprintf(stderr, "kcr-gen: %s: document %zu: %s %s is in the input twice\n", input, i + 1, kind,
            name);
    return -1;
  }
  switches_of(doc, part_of(kind, name), keys);
  if ((keys[0] && test_of(c, keys, head, sizeof(head) - 1)) || mark_doc(c, doc)) {
    fputs("kcr-gen: out of memory\n", stderr);
    return -1;
  }
  if (keys[0]) {
    size_t hl = strlen(head);
    snprintf(head + hl, sizeof(head) - hl, "\n");
  }
  kcr_buf_init(&yaml, HELM_TEXT_MAX);
  kcr_buf_init(&body, HELM_TEXT_MAX);
  kcr_buf_init(&text, HELM_TEXT_MAX);
  if (yaml_of(&yaml, head, doc, keys[0] ? "{{- end }}\n" : "") ||
      expand(c, &body, kcr_buf_cstr(&yaml)) || templated(&text, kcr_buf_cstr(&body), c->ns))
    fprintf(stderr, "kcr-gen: %s %s: larger than %zu bytes, or out of memory\n", kind, name,
            HELM_TEXT_MAX);
  else
    rc = write_file(dir, rel, kcr_buf_cstr(&text));
  kcr_buf_free(&yaml);
  kcr_buf_free(&body);
  kcr_buf_free(&text);
  return rc;
}

int gen_helm(int argc, char **argv) {
  const char *dir = "dist/chart", *name = NULL, *input = NULL, *image = NULL;
  char msg[1024] = "", defname[256];
  bool bad = false;
  json_t *docs = NULL, *keep = json_array(), *seen = json_object(), *doc;
  chart_t c = {.conds = json_array(), .values = json_object(), .certs = json_object()};
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
  if (!keep || !seen || !c.conds || !c.values || !c.certs) {
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
    if (c.ns) {
      fprintf(stderr, "kcr-gen: %s: two Namespace objects; a chart has one namespace\n", input);
      goto done;
    }
    c.ns = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
  }
  json_array_foreach(docs, i, doc) {
    const char *secret = str(json_object_get(doc, "spec"), "secretName");
    if (strcmp(str(doc, "kind"), "Certificate") == 0 && *secret &&
        json_object_set_new(c.certs, secret, json_true())) {
      fputs("kcr-gen: out of memory\n", stderr);
      goto done;
    }
  }
  if (!c.ns) {
    fprintf(stderr,
            "kcr-gen: %s: no Namespace object (the namespace config/default sets): give "
            "kubectl kustomize config/default's output\n",
            input);
    goto done;
  }
  if (!name) { /* the project's name: config/default's namespace is NAME-system */
    size_t n = strlen(c.ns);
    snprintf(defname, sizeof(defname), "%.*s",
             (int)(n > 7 && strcmp(c.ns + n - 7, "-system") == 0 ? n - 7 : n), c.ns);
    name = defname;
  }
  if (!dir_empty(dir)) {
    fprintf(stderr, "kcr-gen: %s is not empty: the chart is made whole; remove it first\n", dir);
    goto done;
  }
  if (manager_image(input, docs, keep, &image, &c.sa))
    goto done;
  json_array_foreach(docs, i, doc) {
    if (!json_is_object(doc) || strcmp(str(doc, "kind"), "Namespace") == 0)
      continue;
    if (template_of(&c, dir, input, doc, i, seen))
      goto done;
  }
  if (chart_files(dir, name, image, c.sa, c.values))
    goto done;
  printf("%s\n", dir);
  rc = 0;
done:
  json_decref(docs);
  json_decref(keep);
  json_decref(seen);
  json_decref(c.conds);
  json_decref(c.values);
  json_decref(c.certs);
  return rc;
}
