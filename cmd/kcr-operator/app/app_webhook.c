/* SPDX-License-Identifier: MIT */
/*
 * app_webhook.c: the App's validating and defaulting webhooks
 * (app_webhook.h), and the registration of all three handlers.
 *
 * DESIGN. Validation is a list of rules, each a function that appends its
 * problems to one message. On an update every rule is first run on the old
 * object: a rule the old object already breaks is skipped (as Kubernetes
 * ratchets CRD validation), so tightening the rules never wedges an existing
 * App, and an App being deleted is not checked at all (only its finalizers can
 * change). The port-while-paused rule is the one rule about a transition.
 * The webhooks see v1alpha1 objects only: their configuration names v1alpha1
 * with matchPolicy Equivalent, so the API server converts a v1beta1 request
 * (through /convert) before it asks.
 */
#include "app/app_webhook.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/log.h"

/* add appends one problem to msg (joined with "; "); msg may be NULL. */
static void add(char *msg, size_t size, const char *fmt, ...) KCR_PRINTF(3, 4);
static void add(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  size_t n;
  if (!msg || size == 0)
    return;
  n = strlen(msg);
  if (n > 0 && n + 2 < size) {
    memcpy(msg + n, "; ", 3);
    n += 2;
  }
  if (n + 1 >= size)
    return;
  va_start(ap, fmt);
  vsnprintf(msg + n, size - n, fmt, ap);
  va_end(ap);
}

static json_t *spec_of(json_t *app) {
  return json_object_get(app, "spec");
}

/* ---- rules: each returns its number of problems ---- */

static int rule_env(json_t *app, char *msg, size_t size) {
  json_t *env = json_object_get(spec_of(app), "env"), *e;
  size_t i, j;
  int n = 0;
  json_array_foreach(env, i, e) {
    const char *name = json_string_value(json_object_get(e, "name"));
    if (!name)
      continue;
    for (j = 0; j < i; j++) {
      const char *prev = json_string_value(json_object_get(json_array_get(env, j), "name"));
      if (prev && strcmp(prev, name) == 0) {
        add(msg, size,
            "spec.env[%zu].name: duplicate name \"%s\" (also spec.env[%zu]): a container's "
            "variables are unique by name",
            i, name, j);
        n++;
        break;
      }
    }
  }
  return n;
}

/* config_key_problem: why k is not a ConfigMap key (Kubernetes'
 * IsConfigMapKey), or NULL. */
static const char *config_key_problem(const char *k) {
  size_t len = strlen(k);
  if (len == 0)
    return "a file name is not empty";
  if (len > 253)
    return "a file name has at most 253 characters";
  for (const char *p = k; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
      return "a file name has only letters, digits, '-', '_' and '.'";
  if (strcmp(k, ".") == 0 || strcmp(k, "..") == 0)
    return "a file name is not '.' or '..'";
  if (strncmp(k, "..", 2) == 0)
    return "a file name does not start with '..' (the kubelet keeps its own ..data and "
           "timestamped entries in a ConfigMap volume)";
  return NULL;
}

static int rule_config(json_t *app, char *msg, size_t size) {
  json_t *config = json_object_get(spec_of(app), "config"), *v;
  const char *k, *why;
  int n = 0;
  json_object_foreach(config, k, v) {
    if ((why = config_key_problem(k))) {
      add(msg, size, "spec.config[\"%.64s\"]: not a valid file name: %s", k, why);
      n++;
    }
  }
  return n;
}

/* quantity parses a Kubernetes quantity ("500m", "1.5Gi", "2e3", 4) into *out. */
static int quantity(json_t *v, long double *out) {
  static const struct {
    const char *s;
    long double f;
  } suffixes[] = {{"", 1},
                  {"n", 1e-9L},
                  {"u", 1e-6L},
                  {"m", 1e-3L},
                  {"k", 1e3L},
                  {"M", 1e6L},
                  {"G", 1e9L},
                  {"T", 1e12L},
                  {"P", 1e15L},
                  {"E", 1e18L},
                  {"Ki", 1024.0L},
                  {"Mi", 1048576.0L},
                  {"Gi", 1073741824.0L},
                  {"Ti", 1099511627776.0L},
                  {"Pi", 1125899906842624.0L},
                  {"Ei", 1152921504606846976.0L}};
  const char *s = json_string_value(v);
  char *end;
  long double x;
  if (json_is_integer(v)) {
    *out = (long double)json_integer_value(v);
    return 0;
  }
  if (!s || !*s)
    return -1;
  for (const char *p = s; *p && !isalpha((unsigned char)*p); p++)
    if (!isdigit((unsigned char)*p) && *p != '.' && *p != '+' && *p != '-')
      return -1;
  if (!isdigit((unsigned char)*s) && *s != '.' && *s != '+' && *s != '-')
    return -1; /* strtold's "inf", "nan", hexadecimal */
  errno = 0;
  x = strtold(s, &end);
  if (end == s || errno != 0 || strpbrk(s, "xX"))
    return -1;
  for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
    if (strcmp(end, suffixes[i].s) == 0) {
      *out = x * suffixes[i].f;
      return 0;
    }
  return -1;
}

/* qstr writes quantity v as written. */
static void qstr(json_t *v, char *buf, size_t size) {
  if (json_is_integer(v))
    snprintf(buf, size, "%lld", (long long)json_integer_value(v));
  else
    snprintf(buf, size, "%s", json_is_string(v) ? json_string_value(v) : "?");
}

static int rule_resources(json_t *app, char *msg, size_t size) {
  json_t *res = json_object_get(spec_of(app), "resources"), *req, *lim, *v;
  const char *k;
  int n = 0;
  req = json_object_get(res, "requests");
  lim = json_object_get(res, "limits");
  json_object_foreach(req, k, v) {
    json_t *l = json_object_get(lim, k);
    long double a, b;
    if (!l || quantity(v, &a) != 0 || quantity(l, &b) != 0 || a <= b)
      continue;
    {
      char vs[64], ls[64];
      qstr(v, vs, sizeof(vs));
      qstr(l, ls, sizeof(ls));
      add(msg, size,
          "spec.resources.requests.%.64s: %s must be less than or equal to the limit %s (the "
          "Deployment's pods would be refused)",
          k, vs, ls);
    }
    n++;
  }
  return n;
}

/* port_name_ok: an IANA service name, as a Service or container port name. */
static int port_name_ok(const char *s) {
  size_t len = strlen(s);
  int letter = 0;
  if (len == 0 || len > 15 || s[0] == '-' || s[len - 1] == '-' || strstr(s, "--"))
    return 0;
  for (const char *p = s; *p; p++) {
    if (*p >= 'a' && *p <= 'z')
      letter = 1;
    else if (!isdigit((unsigned char)*p) && *p != '-')
      return 0;
  }
  return letter;
}

static int rule_port_name(json_t *app, char *msg, size_t size) {
  json_t *a = json_object_get(json_object_get(json_object_get(app, "metadata"), "annotations"),
                              KOP_APP_PORT_NAME_ANNOTATION);
  if (!a)
    return 0;
  if (json_is_string(a) && port_name_ok(json_string_value(a)))
    return 0;
  add(msg, size,
      "metadata.annotations[\"" KOP_APP_PORT_NAME_ANNOTATION
      "\"]: \"%.64s\" is not a port name: 1 to 15 lowercase letters, digits and '-', with at "
      "least one letter, no '-' at either end or twice in a row (v1beta1's spec.service.portName)",
      json_is_string(a) ? json_string_value(a) : "");
  return 1;
}

typedef int (*rule_fn)(json_t *app, char *msg, size_t size);
static const rule_fn rules[] = {rule_env, rule_config, rule_resources, rule_port_name};

int kop_app_validate(json_t *app, json_t *old, char *msg, size_t size) {
  int n = 0;
  if (msg && size)
    msg[0] = '\0';
  if (json_object_get(json_object_get(app, "metadata"), "deletionTimestamp"))
    return 0;
  for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
    if (old && rules[i](old, NULL, 0) > 0)
      continue; /* ratchet: the old object broke it already */
    n += rules[i](app, msg, size);
  }
  if (old && json_is_true(json_object_get(spec_of(app), "paused"))) {
    json_t *p = json_object_get(spec_of(app), "port"), *op = json_object_get(spec_of(old), "port");
    if (!json_equal(p, op) && (p || op)) {
      char from[32] = "unset", to[32] = "unset";
      if (json_is_integer(op))
        snprintf(from, sizeof(from), "%lld", (long long)json_integer_value(op));
      if (json_is_integer(p))
        snprintf(to, sizeof(to), "%lld", (long long)json_integer_value(p));
      add(msg, size,
          "spec.port: cannot change from %s to %s while spec.paused is true: a paused App's "
          "Service and status.url would not follow; set spec.paused to false in the same update",
          from, to);
      n++;
    }
  }
  return n;
}

int kop_app_warning(json_t *app, char *msg, size_t size) {
  const char *image = json_string_value(json_object_get(spec_of(app), "image"));
  const char *slash, *colon;
  if (!image || !*image || strchr(image, '@'))
    return 0;
  slash = strrchr(image, '/');
  colon = strrchr(slash ? slash : image, ':');
  if (colon && strcmp(colon, ":latest") != 0)
    return 0;
  snprintf(msg, size,
           "spec.image: \"%.200s\" %s: each new pod runs whatever was pushed last; pin a tag or "
           "a digest",
           image, colon ? "uses the tag latest" : "has no tag (it means latest)");
  return 1;
}

int kop_app_default(json_t *app) {
  json_t *spec = spec_of(app), *res, *req;
  if (!json_is_object(spec))
    return 0;
  res = json_object_get(spec, "resources");
  if (res && !json_is_object(res))
    return 0;
  if (json_object_get(res, "requests") || json_object_get(res, "limits"))
    return 0;
  req = json_pack("{s:s, s:s}", "cpu", KOP_APP_DEFAULT_CPU_REQUEST, "memory",
                  KOP_APP_DEFAULT_MEMORY_REQUEST);
  if (!req)
    return -1;
  if (!res) {
    if (json_object_set_new(spec, "resources", json_pack("{s:o}", "requests", req)) != 0)
      return -1;
  } else if (json_object_set_new(res, "requests", req) != 0) {
    return -1;
  }
  return 1;
}

/* ---- the handlers ---- */

static int on_validate(void *data, const kcr_admission_request *req, kcr_admission_response *resp,
                       kcr_error_t *err) {
  char msg[1024], warn[320];
  (void)data;
  (void)err;
  if (!req->object || strcmp(req->operation, "DELETE") == 0)
    return 0;
  if (kop_app_validate(req->object, strcmp(req->operation, "UPDATE") == 0 ? req->old_object : NULL,
                       msg, sizeof(msg)) > 0)
    kcr_admission_deny(resp, "%s", msg);
  if (kop_app_warning(req->object, warn, sizeof(warn)))
    kcr_admission_warn(resp, "%s", warn);
  return 0;
}

static int on_default(void *data, const kcr_admission_request *req, kcr_admission_response *resp,
                      kcr_error_t *err) {
  (void)data;
  (void)resp;
  if (!req->object || strcmp(req->operation, "DELETE") == 0 ||
      json_object_get(json_object_get(req->object, "metadata"), "deletionTimestamp"))
    return 0;
  if (kop_app_default(req->object) < 0)
    return kcr_error_set(err, KCR_ENOMEM, "defaulting the App: out of memory");
  return 0;
}

static int on_convert(void *data, json_t *object, const char *desired, json_t **out,
                      kcr_error_t *err) {
  char msg[256];
  (void)data;
  if (kop_app_convert(object, desired, out, msg, sizeof(msg)) != 0)
    return kcr_error_set(err, KCR_EINVAL, "%s", msg);
  return 0;
}

int kop_app_webhooks_register(kcr_webhook_server_t *ws) {
  int rc = kcr_webhook_server_register_validating(ws, KOP_APP_VALIDATE_PATH, on_validate, NULL);
  if (rc == 0)
    rc = kcr_webhook_server_register_mutating(ws, KOP_APP_MUTATE_PATH, on_default, NULL);
  if (rc == 0)
    rc = kcr_webhook_server_register_conversion(ws, KOP_APP_CONVERT_PATH, on_convert, NULL);
  return rc;
}
