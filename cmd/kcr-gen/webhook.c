/* SPDX-License-Identifier: MIT */
/*
 * webhook.c: `kcr-gen webhook`, admission webhook configurations from
 * +kubebuilder:webhook markers in C comments, as controller-gen's webhook
 * generator writes config/webhook/manifests.yaml from Go comments.
 *
 *   // +kubebuilder:webhook:path=/mutate-batch-example-com-v1-cronjob,mutating=true,
 *   //   failurePolicy=fail,sideEffects=None,groups=batch.example.com,resources=cronjobs,
 *   //   verbs=create;update,versions=v1,name=mcronjob-v1.kb.io,admissionReviewVersions=v1
 *
 * (one line in a real source). A marker is a comment line (`//`, `/ *` or
 * ` * `, the slash and star joined) whose text starts with the marker's
 * name; the arguments follow controller-gen's marker grammar: name=value pairs separated by ',', a
 * string bare or quoted ("..." or `...`), a list as a;b;c or {a,b,c}, a bool
 * true or false. Every argument is read into one JSON object first (so that a
 * missing, repeated or unknown argument is caught before anything is built),
 * then turned into the webhook object the API has, with controller-gen's
 * defaults: the Service webhook-service in system, the verbs upper-cased, the
 * group core written "", timeoutSeconds=0 meaning unset. A patch= argument is
 * a JSON merge onto the result (a strategic merge patch and a JSON merge
 * patch do the same on these fields, none of which is a merged list before
 * the patch). The webhooks are sorted by name in each configuration, the
 * configurations mutating first.
 *
 * Where controller-gen passes a value through for the API server to refuse
 * (failurePolicy=Failz, a verb "get", a sideEffects it does not know) or drops
 * it (reinvocationPolicy on a validating webhook, a patch field the webhook
 * lacks), kcr-gen refuses the marker at its line: the file it writes is one
 * the API server takes. A webhook name used twice in one configuration is
 * refused for the same reason.
 *
 * Errors are "FILE:LINE: reason"; nothing here writes a file (main.c does).
 * Every allocation goes through jansson or libkcr's allocator, so the unit
 * test's allocation-failure loop reaches all of them.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gen.h"
#include "header.h"
#include "kcr/buf.h"
#include "util/alloc.h"
#include "webhook.h"

/* The two markers this file reads. */
#define WH_MARKER "+kubebuilder:webhook"
#define WH_CONFIG_SUFFIX "configuration"

/* arg_type: how an argument's value is read. */
typedef enum arg_type { A_BOOL, A_STRING, A_INT, A_LIST } arg_type;

/* arg_def: one argument a marker takes. */
typedef struct arg_def {
  const char *name;
  arg_type type;
  bool required;
} arg_def;

/* controller-gen's arguments of +kubebuilder:webhook, required ones first. */
static const arg_def hook_args[] = {
    {"mutating", A_BOOL, true},
    {"failurePolicy", A_STRING, true},
    {"groups", A_LIST, true},
    {"resources", A_LIST, true},
    {"verbs", A_LIST, true},
    {"versions", A_LIST, true},
    {"name", A_STRING, true},
    {"admissionReviewVersions", A_LIST, true},
    {"matchPolicy", A_STRING, false},
    {"sideEffects", A_STRING, false},
    {"timeoutSeconds", A_INT, false},
    {"path", A_STRING, false},
    {"url", A_STRING, false},
    {"serviceName", A_STRING, false},
    {"serviceNamespace", A_STRING, false},
    {"servicePort", A_INT, false},
    {"webhookVersions", A_LIST, false},
    {"reinvocationPolicy", A_STRING, false},
    {"patch", A_STRING, false},
    {NULL, A_BOOL, false},
};

/* and of +kubebuilder:webhookconfiguration (the configuration's own name). */
static const arg_def config_args[] = {
    {"mutating", A_BOOL, true},
    {"name", A_STRING, false},
    {NULL, A_BOOL, false},
};

/* hook: one +kubebuilder:webhook marker, turned into its webhook object. */
typedef struct hook {
  char *file;
  int line;
  bool mutating;
  json_t *obj; /* the webhook, patched */
} hook;

/* config_name: a +kubebuilder:webhookconfiguration marker, if one was given. */
typedef struct config_name {
  char *file; /* NULL: none given */
  int line;
  char *name; /* "" keeps the default */
} config_name;

struct wh_set {
  hook *v;
  size_t n, cap;
  config_name cfg[2]; /* [1] mutating, [0] validating */
};

/* where: the marker being read, for messages. */
typedef struct where {
  const char *file;
  int line;
  char *msg;
  size_t size;
} where;

/* fail writes "FILE:LINE: reason" into the caller's message (cut in the middle, never silently). */
KCR_GEN_PRINTF(2, 3)
static int fail(const where *w, const char *fmt, ...) {
  kcr_buf_t b;
  va_list ap;
  kcr_buf_init(&b, WH_TEXT_MAX);
  va_start(ap, fmt);
  if (kcr_buf_vappendf(&b, fmt, ap))
    gen_msgf(w->msg, w->size, "%s:%d: out of memory", w->file, w->line);
  else
    gen_msgf(w->msg, w->size, "%s:%d: %s", w->file, w->line, kcr_buf_cstr(&b));
  va_end(ap);
  kcr_buf_free(&b);
  return -1;
}

static int oom(const where *w) {
  gen_msgf(w->msg, w->size, "out of memory");
  return -1;
}

/* ---- reading a marker's arguments ---- */

/* scan: the argument text of one marker (not NUL-terminated). */
typedef struct scan {
  const char *s;
  size_t i, n;
} scan;

static void skip_ws(scan *sc) {
  while (sc->i < sc->n && (sc->s[sc->i] == ' ' || sc->s[sc->i] == '\t'))
    sc->i++;
}

static int peek(scan *sc) {
  skip_ws(sc);
  return sc->i < sc->n ? (unsigned char)sc->s[sc->i] : -1;
}

/* utf8_ok tells whether s (n bytes) is UTF-8 without NUL or other C0 controls but tab. */
static bool utf8_ok(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t len = hdr_utf8_len((const unsigned char *)s + i, n - i);
    if (len == 0 || ((unsigned char)s[i] < 0x20 && s[i] != '\t'))
      return false;
    i += len;
  }
  return true;
}

/*
 * read_string reads one string value: "quoted" (with \" \\ \n \t \r), `raw`,
 * or bare, up to the next ',', ';' or '}' with its spaces trimmed. Returns a
 * new JSON string, or NULL with the message set.
 */
static json_t *read_string(scan *sc, const where *w, const char *arg) {
  const char *start;
  size_t len;
  char q = (char)peek(sc);
  if (q == '"' || q == '`') {
    char *buf = kcr__malloc(sc->n - sc->i + 1);
    size_t o = 0;
    json_t *str;
    if (!buf)
      return oom(w), NULL;
    for (sc->i++; sc->i < sc->n && sc->s[sc->i] != q; sc->i++) {
      char c = sc->s[sc->i];
      if (q == '"' && c == '\\') {
        if (++sc->i == sc->n)
          break;
        switch (sc->s[sc->i]) {
        case '"':
        case '\\':
          c = sc->s[sc->i];
          break;
        case 'n':
          c = '\n';
          break;
        case 't':
          c = '\t';
          break;
        case 'r':
          c = '\r';
          break;
        default:
          kcr__free(buf);
          fail(w, "%s: unsupported escape \\%c in a quoted string (\\\" \\\\ \\n \\t \\r)", arg,
               sc->s[sc->i]);
          return NULL;
        }
      }
      buf[o++] = c;
    }
    if (sc->i >= sc->n) {
      kcr__free(buf);
      fail(w, "%s: the string has no closing %c", arg, q);
      return NULL;
    }
    sc->i++;
    {
      bool ok = true;
      /* escapes may make \n and \r: allowed; the rest must be UTF-8 text */
      for (size_t k = 0, from = 0; ok && k <= o; k++) {
        if (k == o || buf[k] == '\n' || buf[k] == '\r') {
          ok = utf8_ok(buf + from, k - from);
          from = k + 1;
        }
      }
      if (!ok) {
        kcr__free(buf);
        fail(w, "%s: the value is not UTF-8 text", arg);
        return NULL;
      }
    }
    str = json_stringn(buf, o);
    kcr__free(buf);
    if (!str)
      oom(w);
    return str;
  }
  start = sc->s + sc->i;
  while (sc->i < sc->n && sc->s[sc->i] != ',' && sc->s[sc->i] != ';' && sc->s[sc->i] != '}')
    sc->i++;
  len = (size_t)(sc->s + sc->i - start);
  while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t'))
    len--;
  if (!utf8_ok(start, len)) {
    fail(w, "%s: the value is not UTF-8 text", arg);
    return NULL;
  }
  {
    json_t *str = json_stringn(start, len);
    if (!str)
      oom(w);
    return str;
  }
}

/* read_list reads a list value, {a,b} or a;b (one item: a). */
static json_t *read_list(scan *sc, const where *w, const char *arg) {
  json_t *list = json_array();
  bool braces = peek(sc) == '{';
  if (!list)
    return oom(w), NULL;
  if (braces) {
    sc->i++;
    if (peek(sc) == '}') {
      sc->i++;
      return list;
    }
  } else if (peek(sc) == ',' || peek(sc) == -1) {
    return list; /* groups= : an empty list, as controller-gen reads it */
  }
  for (;;) {
    json_t *item = read_string(sc, w, arg);
    int c;
    if (!item || json_array_append_new(list, item)) {
      if (item)
        oom(w);
      json_decref(list);
      return NULL;
    }
    c = peek(sc);
    if (braces && c == '}') {
      sc->i++;
      return list;
    }
    if (braces ? c != ',' : c != ';') {
      if (!braces)
        return list;
      json_decref(list);
      fail(w, "%s: want ',' or '}' in the list", arg);
      return NULL;
    }
    sc->i++;
  }
}

/* read_int reads a decimal integer that fits int32. */
static json_t *read_int(scan *sc, const where *w, const char *arg) {
  long long v = 0;
  bool neg = false, any = false;
  json_t *num;
  if (peek(sc) == '-') {
    neg = true;
    sc->i++;
  }
  while (sc->i < sc->n && isdigit((unsigned char)sc->s[sc->i])) {
    any = true;
    if (v <= (long long)INT32_MAX + 1)
      v = v * 10 + (sc->s[sc->i] - '0');
    sc->i++;
  }
  if (neg)
    v = -v;
  if (!any || (peek(sc) != ',' && peek(sc) != -1)) {
    fail(w, "%s: want an integer", arg);
    return NULL;
  }
  if (v < INT32_MIN || v > INT32_MAX) {
    fail(w, "%s: out of range for int32", arg);
    return NULL;
  }
  if (!(num = json_integer((json_int_t)v)))
    oom(w);
  return num;
}

/* read_bool reads true or false. */
static json_t *read_bool(scan *sc, const where *w, const char *arg) {
  size_t start;
  skip_ws(sc);
  start = sc->i;
  while (sc->i < sc->n && isalnum((unsigned char)sc->s[sc->i]))
    sc->i++;
  if (sc->i - start == 4 && memcmp(sc->s + start, "true", 4) == 0)
    return json_true();
  if (sc->i - start == 5 && memcmp(sc->s + start, "false", 5) == 0)
    return json_false();
  fail(w, "%s: want true or false", arg);
  return NULL;
}

/* readers: the reader of each arg_type, in its order. */
static json_t *(*const readers[])(scan *, const where *, const char *) = {read_bool, read_string,
                                                                          read_int, read_list};

/* shown is how much of the rest (left bytes) a message quotes: at most 20. */
static int shown(size_t left) {
  return left < 20 ? (int)left : 20;
}

/*
 * read_args reads the arguments of one marker (text, n bytes) as defs allow
 * into a new JSON object, by argument name. Returns NULL with the message set.
 */
static json_t *read_args(const char *text, size_t n, const arg_def *defs, const char *marker,
                         const where *w) {
  scan sc = {text, 0, n};
  json_t *vals = json_object();
  if (!vals)
    return oom(w), NULL;
  while (peek(&sc) != -1) {
    size_t start = sc.i;
    const arg_def *d;
    json_t *v = NULL;
    char name[64];
    while (sc.i < n && (isalnum((unsigned char)text[sc.i]) || text[sc.i] == '_'))
      sc.i++;
    if (sc.i == start || sc.i - start >= sizeof(name)) {
      fail(w, "%s: want an argument name at \"%.*s\"", marker, shown(n - start), text + start);
      goto bad;
    }
    memcpy(name, text + start, sc.i - start);
    name[sc.i - start] = '\0';
    for (d = defs; d->name && strcmp(d->name, name) != 0; d++)
      ;
    if (!d->name) {
      char known[512];
      size_t o = 0;
      for (const arg_def *k = defs; k->name; k++)
        o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", o ? ", " : "", k->name);
      fail(w, "%s: unknown argument \"%s\" (%s)", marker, name, known);
      goto bad;
    }
    if (json_object_get(vals, name)) {
      fail(w, "%s: %s is given twice", marker, name);
      goto bad;
    }
    if (peek(&sc) != '=') {
      fail(w, "%s: want %s=VALUE", marker, name);
      goto bad;
    }
    sc.i++;
    if (!(v = readers[d->type](&sc, w, name)))
      goto bad;
    if (json_object_set_new(vals, name, v)) {
      oom(w);
      goto bad;
    }
    if (peek(&sc) == -1)
      break;
    if (peek(&sc) != ',') {
      fail(w, "%s: want ',' after %s's value, not \"%.*s\"", marker, name, shown(n - sc.i),
           text + sc.i);
      goto bad;
    }
    sc.i++;
  }
  for (const arg_def *d = defs; d->name; d++) {
    if (d->required && !json_object_get(vals, d->name)) {
      fail(w, "%s: %s is required", marker, d->name);
      goto bad;
    }
  }
  return vals;
bad:
  json_decref(vals);
  return NULL;
}

/* ---- from the arguments to the webhook ---- */

/*
 * one_of returns the spelling in words (NULL-terminated) that s matches
 * ignoring case, as controller-gen compares these values, or NULL.
 */
static const char *one_of(const char *s, const char *const *words) {
  for (; *words; words++)
    if (strcasecmp(s, *words) == 0)
      return *words;
  return NULL;
}

static const char *str_arg(const json_t *vals, const char *name) {
  return json_string_value(json_object_get(vals, name));
}

/* set_word sets obj[key] to the canonical spelling of vals[arg], if given. */
static int set_word(json_t *obj, const char *key, const json_t *vals, const char *arg,
                    const char *const *words, const where *w) {
  const char *s = str_arg(vals, arg), *word;
  char list[160];
  size_t o = 0;
  if (!s)
    return 0;
  if ((word = one_of(s, words)))
    return json_object_set_new(obj, key, json_string(word)) ? oom(w) : 0;
  for (const char *const *k = words; *k; k++)
    o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", o ? ", " : "", *k);
  return fail(w, "%s: \"%s\" is not one of %s", arg, s, list);
}

/* copy_list sets obj[key] to a copy of list unless it is empty (Go's omitempty). */
static int copy_list(json_t *obj, const char *key, const json_t *list, const where *w) {
  if (json_array_size(list) == 0)
    return 0;
  return json_object_set_new(obj, key, json_deep_copy(list)) ? oom(w) : 0;
}

/* rules builds the webhook's one rule from groups, versions, resources and verbs. */
static json_t *rules(const json_t *vals, const where *w) {
  static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT", "*", NULL};
  json_t *rule = json_object(), *list = json_array(), *groups = NULL, *opsl = json_array();
  const json_t *v;
  size_t i;
  if (!rule || !list || !opsl || json_array_append(list, rule))
    goto nomem;
  json_array_foreach(json_object_get(vals, "verbs"), i, v) {
    const char *op = one_of(json_string_value(v), ops);
    if (!op) {
      fail(w, "verbs: \"%s\" is not one of create, update, delete, connect, *",
           json_string_value(v));
      goto bad;
    }
    if (json_array_append_new(opsl, json_string(op)))
      goto nomem;
  }
  if (!(groups = json_deep_copy(json_object_get(vals, "groups"))))
    goto nomem;
  json_array_foreach(groups, i, v) {
    if (strcmp(json_string_value(v), "core") == 0 && json_array_set_new(groups, i, json_string("")))
      goto nomem;
  }
  if (copy_list(rule, "apiGroups", groups, w) ||
      copy_list(rule, "apiVersions", json_object_get(vals, "versions"), w) ||
      copy_list(rule, "operations", opsl, w) ||
      copy_list(rule, "resources", json_object_get(vals, "resources"), w))
    goto bad;
  json_decref(groups);
  json_decref(opsl);
  json_decref(rule);
  return list;
nomem:
  oom(w);
bad:
  json_decref(groups);
  json_decref(opsl);
  json_decref(rule);
  json_decref(list);
  return NULL;
}

/* client_config builds clientConfig: the Service (path=) or the URL (url=). */
static json_t *client_config(const json_t *vals, const where *w) {
  const char *path = str_arg(vals, "path"), *url = str_arg(vals, "url");
  const char *name = str_arg(vals, "serviceName"), *ns = str_arg(vals, "serviceNamespace");
  json_t *cc, *svc, *port = json_object_get(vals, "servicePort");
  if ((path && path[0]) == (url && url[0])) {
    fail(w, "give either path= (the webhook Service's path) or url=, one of them");
    return NULL;
  }
  if (url && url[0]) {
    if (name || ns || port) {
      fail(w, "serviceName, serviceNamespace and servicePort go with path=, not url=");
      return NULL;
    }
    if (!(cc = json_pack("{ss}", "url", url)))
      oom(w);
    return cc;
  }
  if (!(cc = json_object()) ||
      !(svc = json_pack("{ssssss}", "name", name && name[0] ? name : "webhook-service", "namespace",
                        ns && ns[0] ? ns : "system", "path", path)) ||
      json_object_set_new(cc, "service", svc) || (port && json_object_set(svc, "port", port))) {
    json_decref(cc);
    oom(w);
    return NULL;
  }
  return cc;
}

/* Fields a webhook has (the patch may set only these), the mutating one's extra last. */
static const char *const hook_fields[] = {"admissionReviewVersions",
                                          "clientConfig",
                                          "failurePolicy",
                                          "matchConditions",
                                          "matchPolicy",
                                          "name",
                                          "namespaceSelector",
                                          "objectSelector",
                                          "rules",
                                          "sideEffects",
                                          "timeoutSeconds",
                                          "reinvocationPolicy",
                                          NULL};

/* no_directives refuses a strategic merge patch's $-keys anywhere in v. */
static int no_directives(const json_t *v, const where *w, int depth) {
  const char *k;
  const json_t *m;
  size_t i;
  if (depth > 32)
    return fail(w, "patch: nested deeper than 32 levels");
  if (json_is_object(v)) {
    json_object_foreach((json_t *)v, k, m) {
      if (k[0] == '$')
        return fail(w, "patch: %s: strategic merge patch directives are not supported", k);
      if (no_directives(m, w, depth + 1))
        return -1;
    }
  } else if (json_is_array(v)) {
    json_array_foreach(v, i, m) {
      if (no_directives(m, w, depth + 1))
        return -1;
    }
  }
  return 0;
}

/* merge applies patch onto dst as a JSON merge patch (RFC 7386) does. */
static int merge(json_t *dst, const json_t *patch) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)patch, k, v) {
    json_t *cur = json_object_get(dst, k);
    if (json_is_null(v)) {
      json_object_del(dst, k);
    } else if (json_is_object(v)) {
      json_t *obj = json_is_object(cur) ? json_incref(cur) : json_object();
      if (!obj)
        return -1;
      if (merge(obj, v)) {
        json_decref(obj);
        return -1;
      }
      if (json_object_set_new(dst, k, obj)) /* steals obj, on failure too */
        return -1;
    } else if (json_object_set_new(dst, k, json_deep_copy(v))) {
      return -1;
    }
  }
  return 0;
}

/* apply_patch applies the patch= argument (a JSON object) to the webhook. */
static int apply_patch(json_t *hookobj, const char *text, bool mutating, const where *w) {
  json_error_t je;
  json_t *p = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  const char *k;
  json_t *v;
  if (!p) {
    if (strstr(je.text, "memory"))
      return oom(w);
    return fail(w, "patch: not JSON: %s (at character %d)", je.text, je.position);
  }
  if (!json_is_object(p)) {
    json_decref(p);
    return fail(w, "patch: want a JSON object");
  }
  if (no_directives(p, w, 0)) {
    json_decref(p);
    return -1;
  }
  json_object_foreach(p, k, v) {
    size_t i;
    for (i = 0; hook_fields[i] && strcmp(hook_fields[i], k) != 0; i++)
      ;
    if (!hook_fields[i] || (!mutating && strcmp(k, "reinvocationPolicy") == 0)) {
      fail(w, "patch: a %s webhook has no field \"%s\"", mutating ? "mutating" : "validating", k);
      json_decref(p); /* after the message: k is p's */
      return -1;
    }
  }
  if (merge(hookobj, p)) {
    json_decref(p);
    return oom(w);
  }
  json_decref(p);
  return 0;
}

/* check_hook is what the API server would refuse in the final webhook. */
static int check_hook(const json_t *h, const where *w) {
  static const char *const strs[] = {"failurePolicy",      "matchPolicy", "name",
                                     "reinvocationPolicy", "sideEffects", NULL};
  static const char *const objs[] = {"clientConfig", "namespaceSelector", "objectSelector", NULL};
  static const char *const arrs[] = {"admissionReviewVersions", "matchConditions", "rules", NULL};
  const json_t *se = json_object_get(h, "sideEffects"), *t = json_object_get(h, "timeoutSeconds");
  const json_t *arv = json_object_get(h, "admissionReviewVersions");
  for (size_t i = 0; strs[i]; i++)
    if (json_object_get(h, strs[i]) && !json_is_string(json_object_get(h, strs[i])))
      return fail(w, "%s: want a string", strs[i]);
  for (size_t i = 0; objs[i]; i++)
    if (json_object_get(h, objs[i]) && !json_is_object(json_object_get(h, objs[i])))
      return fail(w, "%s: want an object", objs[i]);
  for (size_t i = 0; arrs[i]; i++)
    if (json_object_get(h, arrs[i]) && !json_is_array(json_object_get(h, arrs[i])))
      return fail(w, "%s: want a list", arrs[i]);
  if (!json_string_value(json_object_get(h, "name")) ||
      !json_string_value(json_object_get(h, "name"))[0])
    return fail(w, "name: a webhook needs a name");
  if (!se)
    return fail(w, "sideEffects is required in admissionregistration.k8s.io/v1 (None or "
                   "NoneOnDryRun)");
  if (strcmp(json_string_value(se), "None") != 0 &&
      strcmp(json_string_value(se), "NoneOnDryRun") != 0)
    return fail(w,
                "sideEffects: \"%s\" is not allowed in admissionregistration.k8s.io/v1 (None "
                "or NoneOnDryRun)",
                json_string_value(se));
  if (t && (!json_is_integer(t) || json_integer_value(t) < 1 || json_integer_value(t) > 30))
    return fail(w, "timeoutSeconds: want 1 to 30 seconds");
  if (json_array_size(arv) == 0)
    return fail(w, "admissionReviewVersions: at least one version is required in "
                   "admissionregistration.k8s.io/v1");
  return 0;
}

/* to_hook turns a +kubebuilder:webhook marker's arguments into its webhook. */
static json_t *to_hook(const json_t *vals, bool mutating, const where *w) {
  static const char *const failure[] = {"Ignore", "Fail", NULL};
  static const char *const match[] = {"Exact", "Equivalent", NULL};
  static const char *const side[] = {"None", "NoneOnDryRun", "Some", "Unknown", NULL};
  static const char *const reinv[] = {"Never", "IfNeeded", NULL};
  json_t *h = json_object(), *v;
  const json_t *t = json_object_get(vals, "timeoutSeconds"), *wv;
  size_t i;
  if (!h)
    return oom(w), NULL;
  json_array_foreach(json_object_get(vals, "webhookVersions"), i, wv) {
    if (strcmp(json_string_value(wv), "v1") != 0) {
      fail(w, "webhookVersions: \"%s\" is not supported (v1)", json_string_value(wv));
      goto bad;
    }
  }
  if (!mutating && json_object_get(vals, "reinvocationPolicy")) {
    fail(w, "reinvocationPolicy is for mutating webhooks only");
    goto bad;
  }
  if (json_object_set(h, "name", json_object_get(vals, "name")) ||
      json_object_set(h, "admissionReviewVersions",
                      json_object_get(vals, "admissionReviewVersions"))) {
    oom(w);
    goto bad;
  }
  if (set_word(h, "failurePolicy", vals, "failurePolicy", failure, w) ||
      set_word(h, "matchPolicy", vals, "matchPolicy", match, w) ||
      set_word(h, "sideEffects", vals, "sideEffects", side, w) ||
      set_word(h, "reinvocationPolicy", vals, "reinvocationPolicy", reinv, w))
    goto bad;
  if (!(v = client_config(vals, w)) || json_object_set_new(h, "clientConfig", v)) {
    if (v)
      oom(w);
    goto bad;
  }
  if (!(v = rules(vals, w)) || json_object_set_new(h, "rules", v)) {
    if (v)
      oom(w);
    goto bad;
  }
  if (t && json_integer_value(t) != 0 &&
      json_object_set_new(h, "timeoutSeconds", json_integer(json_integer_value(t)))) {
    oom(w);
    goto bad;
  }
  if (str_arg(vals, "patch") && apply_patch(h, str_arg(vals, "patch"), mutating, w))
    goto bad;
  if (check_hook(h, w))
    goto bad;
  return h;
bad:
  json_decref(h);
  return NULL;
}

/* ---- the set ---- */

int wh_set_create(wh_set **out) {
  *out = kcr__calloc(1, sizeof(**out));
  return *out ? 0 : -1;
}

static void hook_free(hook *h) {
  kcr__free(h->file);
  json_decref(h->obj);
}

void wh_set_destroy(wh_set *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    hook_free(&s->v[i]);
  kcr__free(s->v);
  for (int k = 0; k < 2; k++) {
    kcr__free(s->cfg[k].file);
    kcr__free(s->cfg[k].name);
  }
  kcr__free(s);
}

size_t wh_set_count(const wh_set *s) {
  return s->n;
}

/*
 * marker_text finds the marker on one line (n bytes): the comment's text must
 * start with it. Sets *args and *alen to its arguments and *config to whether it is
 * +kubebuilder:webhookconfiguration. Returns false for a line with neither.
 */
static bool marker_text(const char *l, size_t n, const char **args, size_t *alen, bool *config) {
  size_t i = 0, mlen = strlen(WH_MARKER), clen = strlen(WH_CONFIG_SUFFIX);
  while (i < n && (l[i] == ' ' || l[i] == '\t'))
    i++;
  if (i + 1 < n && l[i] == '/' && (l[i + 1] == '/' || l[i + 1] == '*')) {
    i += 2;
    while (i < n && (l[i] == '/' || l[i] == '*'))
      i++;
  } else if (i < n && l[i] == '*' && !(i + 1 < n && l[i + 1] == '/')) {
    i++;
  } else {
    return false;
  }
  while (i < n && (l[i] == ' ' || l[i] == '\t'))
    i++;
  if (n - i < mlen || memcmp(l + i, WH_MARKER, mlen) != 0)
    return false;
  i += mlen;
  *config = n - i >= clen && memcmp(l + i, WH_CONFIG_SUFFIX, clen) == 0;
  if (*config)
    i += clen;
  if (i < n && l[i] != ':' && l[i] != ' ' && l[i] != '\t' && l[i] != '\r')
    return false; /* +kubebuilder:webhooks..., another marker */
  if (i < n && l[i] == ':')
    i++;
  while (n > i && (l[n - 1] == ' ' || l[n - 1] == '\t' || l[n - 1] == '\r'))
    n--;
  if (n - i >= 2 && l[n - 2] == '*' && l[n - 1] == '/')
    n -= 2;
  while (n > i && (l[n - 1] == ' ' || l[n - 1] == '\t'))
    n--;
  *args = l + i;
  *alen = n - i;
  return true;
}

/* add_config records a +kubebuilder:webhookconfiguration marker. */
static int add_config(wh_set *s, const json_t *vals, const where *w) {
  bool mutating = json_is_true(json_object_get(vals, "mutating"));
  config_name *c = &s->cfg[mutating];
  const char *name = str_arg(vals, "name");
  if (c->file)
    return fail(w, "a second %s webhook configuration marker (the first is at %s:%d)",
                mutating ? "mutating" : "validating", c->file, c->line);
  if (!(c->file = kcr__strdup(w->file)) || !(c->name = kcr__strdup(name ? name : ""))) {
    kcr__free(c->file);
    c->file = NULL;
    return oom(w);
  }
  c->line = w->line;
  return 0;
}

/* add_hook records a +kubebuilder:webhook marker's webhook. */
static int add_hook(wh_set *s, const json_t *vals, const where *w) {
  bool mutating = json_is_true(json_object_get(vals, "mutating"));
  json_t *obj = to_hook(vals, mutating, w);
  hook *h;
  if (!obj)
    return -1;
  if (s->n == s->cap) {
    size_t ncap = s->cap ? s->cap * 2 : 8;
    hook *nv = kcr__realloc(s->v, ncap * sizeof(*nv));
    if (!nv) {
      json_decref(obj);
      return oom(w);
    }
    s->v = nv;
    s->cap = ncap;
  }
  h = &s->v[s->n];
  if (!(h->file = kcr__strdup(w->file))) {
    json_decref(obj);
    return oom(w);
  }
  h->line = w->line;
  h->mutating = mutating;
  h->obj = obj;
  s->n++;
  return 0;
}

int wh_set_add(wh_set *s, const char *name, const char *text, size_t len, char *msg, size_t size) {
  size_t n0 = s->n, pos = 0;
  bool had_cfg[2] = {s->cfg[0].file != NULL, s->cfg[1].file != NULL};
  where w = {name, 0, msg, size};
  while (pos < len) {
    const char *l = text + pos, *nl = memchr(l, '\n', len - pos), *args;
    size_t n = nl ? (size_t)(nl - l) : len - pos, alen;
    bool config;
    json_t *vals;
    int rc;
    pos += n + 1;
    w.line++;
    if (!marker_text(l, n, &args, &alen, &config))
      continue;
    vals = read_args(args, alen, config ? config_args : hook_args,
                     config ? WH_MARKER WH_CONFIG_SUFFIX : WH_MARKER, &w);
    if (!vals)
      goto undo;
    rc = config ? add_config(s, vals, &w) : add_hook(s, vals, &w);
    json_decref(vals);
    if (rc)
      goto undo;
  }
  return 0;
undo:
  while (s->n > n0)
    hook_free(&s->v[--s->n]);
  for (int k = 0; k < 2; k++) {
    if (!had_cfg[k]) {
      kcr__free(s->cfg[k].file);
      kcr__free(s->cfg[k].name);
      s->cfg[k].file = s->cfg[k].name = NULL;
    }
  }
  return -1;
}

/* by_name orders webhooks by name; equal names keep their order (a stable sort). */
static void sort_by_name(const hook **v, size_t n) {
  for (size_t i = 1; i < n; i++) {
    const hook *x = v[i];
    const char *xn = json_string_value(json_object_get(x->obj, "name"));
    size_t j = i;
    while (j > 0 && strcmp(json_string_value(json_object_get(v[j - 1]->obj, "name")), xn) > 0) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = x;
  }
}

/*
 * configuration appends to out the configuration of the mutating (or the
 * validating) webhooks, when there is at least one. Returns 0 or -1 with the message.
 */
static int configuration(const wh_set *s, bool mutating, const json_t *labels, json_t *out,
                         char *msg, size_t size) {
  const hook **v = kcr__calloc(s->n ? s->n : 1, sizeof(*v)); // NOLINT(bugprone-sizeof-expression)
  const config_name *c = &s->cfg[mutating];
  json_t *doc = NULL, *hooks = NULL, *meta = NULL;
  size_t n = 0;
  where w = {NULL, 0, msg, size};
  if (!v)
    return oom(&w);
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].mutating == mutating)
      v[n++] = &s->v[i];
  if (n == 0) {
    kcr__free((void *)v);
    return 0;
  }
  sort_by_name(v, n);
  for (size_t i = 1; i < n; i++) {
    const char *a = json_string_value(json_object_get(v[i - 1]->obj, "name"));
    if (strcmp(a, json_string_value(json_object_get(v[i]->obj, "name"))) == 0) {
      w.file = v[i]->file;
      w.line = v[i]->line;
      fail(&w, "the %s webhook name \"%s\" is used twice (also at %s:%d)",
           mutating ? "mutating" : "validating", a, v[i - 1]->file, v[i - 1]->line);
      kcr__free((void *)v);
      return -1;
    }
  }
  if (!(hooks = json_array()) ||
      !(meta = json_pack("{ss}", "name",
                         c->file && c->name[0] ? c->name
                         : mutating            ? "mutating-webhook-configuration"
                                               : "validating-webhook-configuration")) ||
      (labels && json_object_size(labels) && json_object_set(meta, "labels", (json_t *)labels)))
    goto nomem;
  for (size_t i = 0; i < n; i++)
    if (json_array_append(hooks, v[i]->obj))
      goto nomem;
  doc = json_pack("{sssssOsO}", "apiVersion", "admissionregistration.k8s.io/v1", "kind",
                  mutating ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration",
                  "metadata", meta, "webhooks", hooks);
  if (!doc || json_array_append_new(out, doc))
    goto nomem;
  json_decref(meta);
  json_decref(hooks);
  kcr__free((void *)v);
  return 0;
nomem:
  json_decref(meta);
  json_decref(hooks);
  kcr__free((void *)v);
  return oom(&w);
}

int wh_set_build(const wh_set *s, const json_t *labels, json_t **out, char *msg, size_t size) {
  json_t *docs = json_array();
  *out = NULL;
  if (!docs) {
    gen_msgf(msg, size, "out of memory");
    return -1;
  }
  if (configuration(s, true, labels, docs, msg, size) ||
      configuration(s, false, labels, docs, msg, size)) {
    json_decref(docs);
    return -1;
  }
  *out = docs;
  return 0;
}
