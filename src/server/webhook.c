/* SPDX-License-Identifier: MIT */
/*
 * webhook.c: admission and conversion webhooks (kcr/webhook.h):
 * AdmissionReview or ConversionReview in, the handler's answer out, with the
 * JSON Patch of a mutating handler and controller-runtime's webhook metrics.
 *
 * DESIGN. The webhook server is a kcr_server with TLS and a handler
 * (kcr_server_handler_cb), so connections, bodies, timeouts, shedding and the
 * memory budget are the server's; this file only decodes, dispatches and
 * encodes, on the server's worker thread. Paths are registered before start in
 * a fixed table that the worker then only reads. A mutating handler works on
 * a deep copy of the object; the patch is the difference between the request's
 * object and that copy (kcr__json_patch_diff): objects key by key (remove,
 * add, or recurse), anything else replaced whole (an array included: a valid
 * patch, if not the shortest). Every failure after the path is known becomes
 * an AdmissionReview answer (allowed false, code 400 for a review that does
 * not parse, 500 for a handler error), never a dropped connection or an HTTP
 * error the API server would turn into its own failurePolicy message. A
 * conversion review is answered the same way: every failure is a
 * result.status "Failure" with a message, in an HTTP 200.
 *
 * Typed webhooks (kcr_webhook_server_register_typed) are ordinary mutating and
 * validating handlers at kubebuilder's paths whose data is a typed_t the
 * server owns. The defaulter's handler decodes the handler's copy of the
 * object with the kind's codec, runs the defaulter, encodes the result and
 * puts it in place of that copy, so the patch is computed by the code above;
 * before that it puts back what the codec's own round trip dropped
 * (controller-runtime's dropSchemeRemovals), so a codec that knows fewer
 * fields than the object has never removes them. A callback's error becomes
 * the answer's status here, as controller-runtime's CustomValidator handler
 * does; only a failure of kcr's own (memory, an encoding) reaches the 500 path.
 * Typed conversion (kcr_webhook_server_register_hub) is one conversion
 * handler at "/convert" for every hub, as controller-runtime's; it finds the
 * hub by the object's kind and version, decodes, converts through the hub
 * (spoke to hub, hub to spoke) and encodes, and the review code above checks
 * the answer's apiVersion and kind as for any handler.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "kcr/base64.h"
#include "kcr/clock.h"
#include "kcr/log.h"
#include "kcr/server.h"
#include "kcr/webhook.h"
#include "server/webhook_internal.h"
#include "util/alloc.h"

#define MAX_HOOKS 64
#define MAX_WARNINGS 16
#define PTR_MAX 4096

struct kcr_admission_response {
  bool allowed;
  int code;
  char reason[KCR_ERROR_REASON_MAX]; /* "": the one reason_for(code) gives */
  char message[1024];
  int nwarn;
  char warnings[MAX_WARNINGS][256];
};

enum { HOOK_VALIDATING, HOOK_MUTATING, HOOK_CONVERSION };

/* typed_t: one kcr_webhook_server_register_typed, the data of its hooks. */
typedef struct typed {
  struct typed *next;
  const kcr_kind_info *k; /* borrowed from the scheme */
  char api_version[256];  /* "group/version", or "version" for the core group */
  kcr_custom_defaulter d;
  kcr_custom_validator v;
} typed_t;

/* hub_t: one kcr_webhook_server_register_hub: the hub and its spokes. */
typedef struct hub {
  struct hub *next;
  const kcr_kind_info *hub; /* borrowed from the scheme */
  size_t n;
  struct {
    const kcr_kind_info *k;
    kcr_conversion_spoke sp;
  } spokes[]; /* n */
} hub_t;

typedef struct hook {
  char *path;
  int kind; /* HOOK_* */
  kcr_admission_cb cb;
  kcr_conversion_cb convert;
  void *data;
  kcr_metric_child_t *m_in_flight, *m_latency;
  kcr_metric_t *m_requests;
} hook_t;

struct kcr_webhook_server {
  kcr_webhook_server_options o; /* strings owned */
  hook_t hooks[MAX_HOOKS];      /* written before start, read by the worker */
  int nhooks;
  typed_t *typed; /* owned; written before start, read by the worker */
  hub_t *hubs;    /* owned; likewise; non-NULL once KCR_WEBHOOK_CONVERT_PATH is typed */
  _Atomic(kcr_server_t *) srv; /* set by start, cleared by stop; read by any thread */
};

void kcr_admission_deny(kcr_admission_response *r, const char *fmt, ...) {
  va_list ap;
  r->allowed = false;
  r->code = 403;
  r->reason[0] = '\0';
  va_start(ap, fmt);
  vsnprintf(r->message, sizeof(r->message), fmt, ap);
  va_end(ap);
}

void kcr_admission_warn(kcr_admission_response *r, const char *fmt, ...) {
  va_list ap;
  if (r->nwarn >= MAX_WARNINGS)
    return;
  va_start(ap, fmt);
  vsnprintf(r->warnings[r->nwarn++], sizeof(r->warnings[0]), fmt, ap);
  va_end(ap);
}

/* ---- JSON Patch ---- */

/* ptr_push appends "/" and key (escaped: ~ as ~0, / as ~1) to path[0..*len). */
static int ptr_push(char *path, size_t *len, const char *key) {
  size_t n = *len;
  if (n + 1 >= PTR_MAX)
    return KCR_ETOOBIG;
  path[n++] = '/';
  for (const char *k = key; *k; k++) {
    if (n + 3 >= PTR_MAX)
      return KCR_ETOOBIG;
    if (*k == '~' || *k == '/') {
      path[n++] = '~';
      path[n++] = *k == '~' ? '0' : '1';
    } else {
      path[n++] = *k;
    }
  }
  path[n] = '\0';
  *len = n;
  return 0;
}

static int add_op(json_t *ops, const char *op, const char *path, json_t *value) {
  json_t *o = value ? json_pack("{s:s, s:s, s:O}", "op", op, "path", path, "value", value)
                    : json_pack("{s:s, s:s}", "op", op, "path", path);
  return o && json_array_append_new(ops, o) == 0 ? 0 : KCR_ENOMEM;
}

static int diff(json_t *from, json_t *to, char *path, size_t len, json_t *ops) {
  const char *k;
  json_t *v;
  int rc;
  if (json_equal(from, to))
    return 0;
  if (!json_is_object(from) || !json_is_object(to))
    return add_op(ops, "replace", path, to);
  json_object_foreach(from, k, v) {
    size_t l = len;
    if (json_object_get(to, k))
      continue;
    if ((rc = ptr_push(path, &l, k)) != 0 || (rc = add_op(ops, "remove", path, NULL)) != 0)
      return rc;
    path[len] = '\0';
  }
  json_object_foreach(to, k, v) {
    json_t *f = json_object_get(from, k);
    size_t l = len;
    if ((rc = ptr_push(path, &l, k)) != 0)
      return rc;
    rc = f ? diff(f, v, path, l, ops) : add_op(ops, "add", path, v);
    path[len] = '\0';
    if (rc != 0)
      return rc;
  }
  return 0;
}

int kcr__json_patch_diff(json_t *from, json_t *to, json_t **out) {
  char path[PTR_MAX] = "";
  json_t *ops = json_array();
  int rc;
  *out = NULL;
  if (!ops)
    return KCR_ENOMEM;
  if ((rc = diff(from, to, path, 0, ops)) != 0) {
    json_decref(ops);
    return rc;
  }
  *out = ops;
  return 0;
}

/* ---- what a review costs to decode ---- */

/*
 * jansson's cost per value, in bytes of heap including glibc's chunk overhead,
 * rounded up from measurements (jansson 2.14, x86-64): an empty object 250, an
 * empty array 154, a number 50 and an empty string 106 as array elements; a
 * member of an object about 150 with its key. A comma is an array slot (the
 * array doubles, so up to two pointers per element) or a member's hash bucket.
 */
#define COST_OBJECT 256u
#define COST_ARRAY 160u
#define COST_NUMBER 48u
#define COST_STRING 112u
#define COST_MEMBER 112u
#define COST_SLOT 16u

size_t kcr__json_tree_cost(const char *s, size_t len, size_t limit) {
  size_t cost = 0, i = 0;
  while (i < len && cost <= limit) {
    unsigned char ch = (unsigned char)s[i];
    size_t start;
    switch (ch) {
    case '{':
      cost += COST_OBJECT;
      i++;
      break;
    case '[':
      cost += COST_ARRAY;
      i++;
      break;
    case ':':
      cost += COST_MEMBER;
      i++;
      break;
    case ',':
      cost += COST_SLOT;
      i++;
      break;
    case '"':
      /* A key or a value: both are a copy of the bytes plus a header. */
      start = ++i;
      while (i < len && s[i] != '"')
        i += s[i] == '\\' ? 2 : 1;
      cost += COST_STRING + (i < len ? i - start : len - start);
      i++;
      break;
    default:
      if (ch == '-' || (ch >= '0' && ch <= '9')) {
        cost += COST_NUMBER;
        while (i < len && (s[i] == '-' || s[i] == '+' || s[i] == '.' || s[i] == 'e' ||
                           s[i] == 'E' || (s[i] >= '0' && s[i] <= '9')))
          i++;
      } else {
        i++; /* whitespace, ] } and the literals (jansson shares true, false, null) */
      }
      break;
    }
  }
  return cost;
}

size_t kcr__review_tree_limit(size_t len) {
  size_t lim = len > (SIZE_MAX - KCR_REVIEW_TREE_SLACK) / KCR_REVIEW_TREE_PER_BYTE
                   ? SIZE_MAX
                   : len * KCR_REVIEW_TREE_PER_BYTE + KCR_REVIEW_TREE_SLACK;
  return lim < KCR_REVIEW_TREE_MAX ? lim : KCR_REVIEW_TREE_MAX;
}

/*
 * load_review parses body[0..len) unless its tree would cost more than
 * kcr__review_tree_limit allows: then *too_big is the estimate and NULL is
 * returned without a byte allocated. *cost: the estimate either way.
 */
static json_t *load_review(const char *body, size_t len, size_t *cost, size_t *too_big) {
  json_error_t jerr;
  size_t limit = kcr__review_tree_limit(len);
  *too_big = 0;
  *cost = kcr__json_tree_cost(body, len, limit);
  if (*cost > limit) {
    *too_big = *cost;
    return NULL;
  }
  return json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
}

/*
 * release_review frees a review's tree; after a large one it hands the freed
 * heap back to the system (glibc keeps small chunks otherwise, and a
 * worker's one large review would stay in RSS until the process ends).
 */
static void release_review(json_t *rev, size_t cost) {
  json_decref(rev);
#ifdef __GLIBC__
  if (cost >= (size_t)4 * 1024 * 1024)
    malloc_trim(0);
#else
  (void)cost;
#endif
}

static void too_big_message(char *buf, size_t size, size_t len) {
  snprintf(buf, size,
           "the review would take more than %zu KiB to decode, the limit for a body of %zu "
           "bytes (%u times its size, at most %u MiB)",
           kcr__review_tree_limit(len) / 1024, len, KCR_REVIEW_TREE_PER_BYTE,
           (unsigned)(KCR_REVIEW_TREE_MAX / ((size_t)1024 * 1024)));
}

/* ---- the review ---- */

static const char *str_of(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

/* reason_for: the metav1.Status reason of an HTTP status, "" when it has none. */
static const char *reason_for(int code) {
  switch (code) {
  case 400:
    return "BadRequest";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "NotFound";
  case 409:
    return "Conflict";
  case 410:
    return "Gone";
  case 413:
    return "RequestEntityTooLarge";
  case 422:
    return "Invalid";
  case 429:
    return "TooManyRequests";
  case 503:
    return "ServiceUnavailable";
  case 504:
    return "Timeout";
  default:
    return code >= 500 && code <= 599 ? "InternalError" : "";
  }
}

/* answer builds the AdmissionReview answer for uid from r (and the patch). */
static json_t *answer(const char *api_version, const char *uid, const kcr_admission_response *r,
                      const char *patch_b64) {
  json_t *resp = json_pack("{s:s, s:b}", "uid", uid, "allowed", r->allowed);
  json_t *rev;
  if (!resp)
    return NULL;
  if (!r->allowed) {
    const char *reason = r->reason[0] ? r->reason : reason_for(r->code);
    json_t *st = json_pack("{s:i, s:s}", "code", r->code, "message", r->message);
    if (st && *reason)
      json_object_set_new(st, "reason", json_string(reason));
    json_object_set_new(resp, "status", st);
  }
  if (r->nwarn > 0) {
    json_t *w = json_array();
    for (int i = 0; w && i < r->nwarn; i++)
      json_array_append_new(w, json_string(r->warnings[i]));
    json_object_set_new(resp, "warnings", w);
  }
  if (patch_b64) {
    json_object_set_new(resp, "patchType", json_string("JSONPatch"));
    json_object_set_new(resp, "patch", json_string(patch_b64));
  }
  rev = json_pack("{s:s, s:s, s:o}", "apiVersion", api_version, "kind", "AdmissionReview",
                  "response", resp);
  return rev;
}

static void errored(kcr_admission_response *r, int code, const char *msg) {
  r->allowed = false;
  r->code = code;
  r->reason[0] = '\0';
  snprintf(r->message, sizeof(r->message), "%s", msg);
}

json_t *kcr__admission_review(const char *body, size_t len, kcr_admission_cb cb, void *data,
                              int mutating, const char *name) {
  kcr_admission_response r;
  kcr_admission_request q;
  size_t cost, too_big;
  json_t *rev = load_review(body, len, &cost, &too_big), *req, *out, *obj;
  const char *api = "admission.k8s.io/v1", *got;
  char *patch_b64 = NULL;
  kcr_error_t err;
  int rc;

  memset(&r, 0, sizeof(r));
  r.allowed = true;
  if (too_big) {
    errored(&r, 413, "");
    too_big_message(r.message, sizeof(r.message), len);
    kcr_log(KCR_LOG_ERROR, "webhook", "%s: refused: %s", name, r.message);
    return answer(api, "", &r, NULL);
  }
  req = json_object_get(rev, "request");
  got = str_of(rev, "apiVersion");
  if (strcmp(got, "admission.k8s.io/v1beta1") == 0)
    api = "admission.k8s.io/v1beta1";
  if (!rev || !json_is_object(req) || strcmp(str_of(rev, "kind"), "AdmissionReview") != 0 ||
      !*str_of(req, "uid")) {
    errored(&r, 400, len == 0 ? "request body is empty" : "the body is not an AdmissionReview");
    out = answer(api, json_is_object(req) ? str_of(req, "uid") : "", &r, NULL);
    release_review(rev, cost);
    return out;
  }
  if (strcmp(got, "admission.k8s.io/v1") != 0 && strcmp(got, api) != 0) {
    /* A version this code does not know may carry fields it cannot honour:
     * refuse it rather than allow what was never understood. */
    errored(&r, 400, "");
    snprintf(r.message, sizeof(r.message),
             "AdmissionReview apiVersion \"%.200s\" is not supported (admission.k8s.io/v1 or "
             "v1beta1)",
             got);
    out = answer(api, json_is_object(req) ? str_of(req, "uid") : "", &r, NULL);
    release_review(rev, cost);
    return out;
  }
  memset(&q, 0, sizeof(q));
  q.uid = str_of(req, "uid");
  q.operation = str_of(req, "operation");
  q.name = str_of(req, "name");
  q.namespace_name = str_of(req, "namespace");
  q.sub_resource = str_of(req, "subResource");
  q.dry_run = json_is_true(json_object_get(req, "dryRun"));
  q.kind = json_object_get(req, "kind");
  q.resource = json_object_get(req, "resource");
  q.user_info = json_object_get(req, "userInfo");
  q.raw = req;
  obj = json_object_get(req, "object");
  q.object = json_is_object(obj) ? json_deep_copy(obj) : NULL;
  q.old_object =
      json_is_object(json_object_get(req, "oldObject")) ? json_object_get(req, "oldObject") : NULL;
  if (json_is_object(obj) && !q.object) {
    release_review(rev, cost);
    return NULL;
  }
  kcr_error_clear(&err);
  rc = cb(data, &q, &r, &err);
  if (rc != 0) {
    errored(&r, 500, err.message[0] ? err.message : kcr_strerror(rc));
    kcr_log(KCR_LOG_ERROR, "webhook", "%s: handler failed for %s %s/%s: %s", name, q.operation,
            q.namespace_name, q.name, r.message);
  } else if (mutating && r.allowed && q.object) {
    json_t *ops = NULL;
    char *dump = NULL;
    if (kcr__json_patch_diff(obj, q.object, &ops) != 0 ||
        (json_array_size(ops) > 0 &&
         (!(dump = json_dumps(ops, JSON_COMPACT)) ||
          kcr_base64_encode(dump, strlen(dump), &patch_b64, NULL) != 0)))
      errored(&r, 500, "cannot encode the patch");
    kcr__free(dump);
    json_decref(ops);
  }
  out = answer(api, q.uid, &r, patch_b64);
  kcr__free(patch_b64);
  json_decref(q.object);
  release_review(rev, cost);
  return out;
}

/* ---- conversion ---- */

/* conv_answer builds the ConversionReview answer: Success with converted
 * (stolen), or Failure with message when message is not NULL. */
static json_t *conv_answer(const char *api_version, const char *uid, json_t *converted,
                           const char *message) {
  json_t *result = message ? json_pack("{s:s, s:s}", "status", "Failure", "message", message)
                           : json_pack("{s:s}", "status", "Success");
  if (message || !converted) {
    json_decref(converted);
    converted = json_array();
  }
  return json_pack("{s:s, s:s, s:{s:s, s:o, s:o}}", "apiVersion", api_version, "kind",
                   "ConversionReview", "response", "uid", uid, "convertedObjects", converted,
                   "result", result);
}

/* obj_ref describes object o for a message: "Kind ns/name" as far as known. */
static void obj_ref(json_t *o, char *buf, size_t size) {
  json_t *md = json_object_get(o, "metadata");
  const char *ns = str_of(md, "namespace");
  snprintf(buf, size, "%s %s%s%s", *str_of(o, "kind") ? str_of(o, "kind") : "object", ns,
           *ns ? "/" : "", str_of(md, "name"));
}

json_t *kcr__conversion_review(const char *body, size_t len, kcr_conversion_cb cb, void *data,
                               const char *name) {
  size_t cost, too_big;
  json_t *rev = load_review(body, len, &cost, &too_big), *req, *objs, *o, *out;
  json_t *converted = NULL;
  const char *api = "apiextensions.k8s.io/v1", *desired, *uid, *got;
  char msg[1280], ref[512];
  size_t i;

  msg[0] = '\0';
  if (too_big) {
    too_big_message(msg, sizeof(msg), len);
    kcr_log(KCR_LOG_ERROR, "webhook", "%s: refused: %s", name, msg);
    return conv_answer(api, "", NULL, msg);
  }
  req = json_object_get(rev, "request");
  got = str_of(rev, "apiVersion");
  if (strcmp(got, "apiextensions.k8s.io/v1beta1") == 0)
    api = "apiextensions.k8s.io/v1beta1";
  uid = json_is_object(req) ? str_of(req, "uid") : "";
  desired = str_of(req, "desiredAPIVersion");
  objs = json_object_get(req, "objects");
  if (!rev || !json_is_object(req) || strcmp(str_of(rev, "kind"), "ConversionReview") != 0 ||
      !*uid) {
    out = conv_answer(api, uid, NULL,
                      len == 0 ? "request body is empty" : "the body is not a ConversionReview");
    release_review(rev, cost);
    return out;
  }
  if (strcmp(got, "apiextensions.k8s.io/v1") != 0 && strcmp(got, api) != 0) {
    snprintf(msg, sizeof(msg),
             "ConversionReview apiVersion \"%.200s\" is not supported (apiextensions.k8s.io/v1 "
             "or v1beta1)",
             got);
    out = conv_answer(api, uid, NULL, msg);
    release_review(rev, cost);
    return out;
  }
  if (!*desired || !strchr(desired, '/') || !json_is_array(objs)) {
    out = conv_answer(api, uid, NULL,
                      !json_is_array(objs) ? "the review has no objects array"
                                           : "desiredAPIVersion is not a group/version");
    release_review(rev, cost);
    return out;
  }
  if (!(converted = json_array())) {
    release_review(rev, cost);
    return NULL;
  }
  json_array_foreach(objs, i, o) {
    json_t *c = NULL;
    kcr_error_t err;
    int rc;
    if (!json_is_object(o) || !*str_of(o, "apiVersion") || !*str_of(o, "kind")) {
      snprintf(msg, sizeof(msg), "object %zu has no apiVersion and kind", i);
      break;
    }
    obj_ref(o, ref, sizeof(ref));
    if (strcmp(str_of(o, "apiVersion"), desired) == 0) {
      if (json_array_append(converted, o) != 0) {
        snprintf(msg, sizeof(msg), "out of memory");
        break;
      }
      continue;
    }
    kcr_error_clear(&err);
    rc = cb(data, o, desired, &c, &err);
    if (rc != 0 || !json_is_object(c)) {
      snprintf(msg, sizeof(msg), "converting %s from %s to %s: %s", ref, str_of(o, "apiVersion"),
               desired,
               rc == 0          ? "the handler returned no object"
               : err.message[0] ? err.message
                                : kcr_strerror(rc));
      json_decref(c);
      break;
    }
    if (strcmp(str_of(c, "apiVersion"), desired) != 0 ||
        strcmp(str_of(c, "kind"), str_of(o, "kind")) != 0) {
      snprintf(msg, sizeof(msg), "converting %s to %s: the handler returned %s %s", ref, desired,
               *str_of(c, "apiVersion") ? str_of(c, "apiVersion") : "no apiVersion",
               *str_of(c, "kind") ? str_of(c, "kind") : "and no kind");
      json_decref(c);
      break;
    }
    if (json_array_append_new(converted, c) != 0) {
      snprintf(msg, sizeof(msg), "out of memory");
      break;
    }
  }
  if (msg[0])
    kcr_log(KCR_LOG_ERROR, "webhook", "%s: conversion failed: %s", name, msg);
  out = conv_answer(api, uid, converted, msg[0] ? msg : NULL);
  release_review(rev, cost);
  return out;
}

/* now_s: the system clock's monotonic reading in seconds. */
static double now_s(void) {
  return (double)kcr_clock_now(kcr_clock_system()) / 1e9;
}

static hook_t *find_hook(kcr_webhook_server_t *ws, const char *path) {
  for (int i = 0; i < ws->nhooks; i++)
    if (strcmp(ws->hooks[i].path, path) == 0)
      return &ws->hooks[i];
  return NULL;
}

static json_t *review(hook_t *h, const char *body, size_t len) {
  return h->kind == HOOK_CONVERSION
             ? kcr__conversion_review(body, len, h->convert, h->data, h->path)
             : kcr__admission_review(body, len, h->cb, h->data, h->kind == HOOK_MUTATING, h->path);
}

json_t *kcr__webhook_server_review(kcr_webhook_server_t *ws, const char *path, const char *body,
                                   size_t len) {
  hook_t *h = find_hook(ws, path);
  return h ? review(h, body, len) : NULL;
}

/* on_request: the server's handler (its worker thread). */
static void on_request(void *data, const kcr_server_request *rq, kcr_server_response *rs) {
  kcr_webhook_server_t *ws = data;
  hook_t *h = find_hook(ws, rq->path);
  json_t *out;
  char *dump;
  double t0;
  if (!h) {
    rs->status = 404;
    rs->content_type = "text/plain; charset=utf-8";
    kcr_buf_appends(&rs->body, "404 page not found\n");
    return;
  }
  if (strcmp(rq->method, "POST") != 0) {
    rs->status = 405;
    rs->content_type = "text/plain; charset=utf-8";
    kcr_buf_appends(&rs->body, "405 method not allowed\n");
    kcr_metric_inc(kcr_metric_withv(h->m_requests, h->path, "405", NULL));
    return;
  }
  kcr_metric_add(h->m_in_flight, 1);
  t0 = now_s();
  out = review(h, rq->body, rq->body_len);
  dump = out ? json_dumps(out, JSON_COMPACT) : NULL;
  json_decref(out);
  if (!dump || kcr_buf_appends(&rs->body, dump) != 0) {
    kcr_buf_reset(&rs->body);
    rs->status = 500;
    rs->content_type = "text/plain; charset=utf-8";
    kcr_buf_appends(&rs->body, "500 out of memory\n");
  } else {
    rs->status = 200;
  }
  kcr__free(dump);
  kcr_metric_observe(h->m_latency, now_s() - t0);
  kcr_metric_add(h->m_in_flight, -1);
  kcr_metric_inc(kcr_metric_withv(h->m_requests, h->path, rs->status == 200 ? "200" : "500", NULL));
}

/* ---- typed webhooks ---- */

/* refuse makes r a denial with code, reason ("": reason_for's) and a message. */
static void refuse(kcr_admission_response *r, int code, const char *reason, const char *fmt, ...)
    KCR_PRINTF(4, 5);
static void refuse(kcr_admission_response *r, int code, const char *reason, const char *fmt, ...) {
  va_list ap;
  r->allowed = false;
  r->code = code;
  snprintf(r->reason, sizeof(r->reason), "%s", reason);
  va_start(ap, fmt);
  vsnprintf(r->message, sizeof(r->message), fmt, ap);
  va_end(ap);
}

/*
 * refuse_error answers a typed callback's error rc (details in e) as
 * controller-runtime answers a CustomValidator's: an API error keeps its status
 * (an apierrors.StatusError), anything else is a 403 with its message; running
 * out of memory is the server's fault, a 500.
 */
static void refuse_error(kcr_admission_response *r, int rc, const kcr_error_t *e) {
  const char *msg = e->message[0] ? e->message : kcr_strerror(rc);
  if (e->code == KCR_EAPI && e->http_status >= 400 && e->http_status <= 599)
    refuse(r, e->http_status, e->reason, "%s", msg);
  else if (rc == KCR_ENOMEM)
    refuse(r, 500, "InternalError", "%s", msg);
  else
    refuse(r, 403, "Forbidden", "%s", msg);
}

static int typed_path(const char *prefix, const kcr_gvk *gvk, char *buf, size_t size) {
  size_t plen = strlen(prefix), glen;
  int n;
  if (size > 0)
    buf[0] = '\0';
  if (!gvk || !gvk->version || !*gvk->version || !gvk->kind || !*gvk->kind)
    return KCR_EINVAL;
  glen = gvk->group ? strlen(gvk->group) : 0;
  n = snprintf(buf, size, "%s%s-%s-%s", prefix, gvk->group ? gvk->group : "", gvk->version,
               gvk->kind);
  if (n < 0 || (size_t)n >= size) {
    if (size > 0)
      buf[0] = '\0';
    return KCR_ETOOBIG;
  }
  for (size_t i = plen; i < plen + glen; i++)
    if (buf[i] == '.')
      buf[i] = '-';
  for (size_t i = (size_t)n - strlen(gvk->kind); i < (size_t)n; i++)
    if (buf[i] >= 'A' && buf[i] <= 'Z')
      buf[i] = (char)(buf[i] - 'A' + 'a');
  return 0;
}

int kcr_webhook_mutate_path(const kcr_gvk *gvk, char *buf, size_t size) {
  return typed_path("/mutate-", gvk, buf, size);
}

int kcr_webhook_validate_path(const kcr_gvk *gvk, char *buf, size_t size) {
  return typed_path("/validate-", gvk, buf, size);
}

/*
 * typed_decode decodes obj (borrowed; what names it for a message) with t's
 * codec into *out. On bad input r becomes a 400 and *out stays NULL; returns
 * 0 either way, or KCR_ENOMEM.
 */
static int typed_decode(const typed_t *t, json_t *obj, const char *what, void **out,
                        kcr_admission_response *r) {
  const char *av = json_string_value(json_object_get(obj, "apiVersion"));
  const char *kind = json_string_value(json_object_get(obj, "kind"));
  kcr_error_t e;
  int rc;
  *out = NULL;
  if (!json_is_object(obj)) {
    refuse(r, 400, "", "the review has no %s to decode", what);
    return 0;
  }
  if (!av || !kind || strcmp(av, t->api_version) != 0 || strcmp(kind, t->k->kind) != 0) {
    refuse(r, 400, "", "the %s is %.100s %.100s; this webhook takes %s %s", what,
           av ? av : "(no apiVersion)", kind ? kind : "(no kind)", t->api_version, t->k->kind);
    return 0;
  }
  kcr_error_clear(&e);
  rc = t->k->decode(obj, out, &e, t->k->codec_data);
  if (rc == 0)
    return 0;
  *out = NULL;
  if (rc == KCR_ENOMEM)
    return rc;
  refuse(r, 400, "", "decoding the %s as %s %s: %s", what, t->api_version, t->k->kind,
         e.message[0] ? e.message : kcr_strerror(rc));
  return 0;
}

/*
 * keep_dropped puts back into after each member of raw that the codec's round
 * trip (rt: raw decoded and encoded again) lost and after lacks too, so the
 * patch from raw to after never removes what the codec does not know
 * (controller-runtime's dropSchemeRemovals). Recurses where all three hold an
 * object. 0 or KCR_ENOMEM.
 */
static int keep_dropped(json_t *raw, json_t *rt, json_t *after) {
  const char *key;
  json_t *v;
  json_object_foreach(raw, key, v) {
    json_t *r = json_object_get(rt, key), *a = json_object_get(after, key);
    int rc;
    if (!r && !a) {
      if (json_object_set(after, key, v) != 0)
        return KCR_ENOMEM;
    } else if (json_is_object(v) && json_is_object(r) && json_is_object(a)) {
      if ((rc = keep_dropped(v, r, a)) != 0)
        return rc;
    }
  }
  return 0;
}

/* on_typed_default: the mutating handler of a typed registration. */
static int on_typed_default(void *data, const kcr_admission_request *req,
                            kcr_admission_response *resp, kcr_error_t *err) {
  const typed_t *t = data;
  json_t *rt = NULL, *after = NULL;
  void *obj = NULL;
  kcr_error_t e;
  int rc;
  if (strcmp(req->operation, "DELETE") == 0)
    return 0;
  if ((rc = typed_decode(t, req->object, "object", &obj, resp)) != 0 || !obj)
    return rc == 0 ? 0 : kcr_error_set(err, rc, "decoding the object: out of memory");
  if ((rc = kcr_scheme_encode(t->k, obj, &rt, err)) != 0) {
    kcr_error_prefix(err, "encoding the decoded object: ");
    goto done;
  }
  kcr_error_clear(&e);
  if ((rc = t->d.default_object(t->d.data, req, obj, &e)) != 0) {
    refuse_error(resp, rc, &e);
    rc = 0;
    goto done;
  }
  if ((rc = kcr_scheme_encode(t->k, obj, &after, err)) != 0) {
    kcr_error_prefix(err, "encoding the defaulted object: ");
    goto done;
  }
  if ((rc = keep_dropped(req->object, rt, after)) != 0 || json_object_clear(req->object) != 0 ||
      json_object_update(req->object, after) != 0)
    rc = kcr_error_set(err, KCR_ENOMEM, "building the defaulted object: out of memory");
done:
  json_decref(after);
  json_decref(rt);
  kcr_scheme_free_typed(t->k, obj);
  return rc;
}

/* on_typed_validate: the validating handler of a typed registration. */
static int on_typed_validate(void *data, const kcr_admission_request *req,
                             kcr_admission_response *resp, kcr_error_t *err) {
  const typed_t *t = data;
  const kcr_custom_validator *v = &t->v;
  void *obj = NULL, *old = NULL;
  kcr_error_t e;
  int rc = 0, cb = 0;
  const char *op = req->operation;
  kcr_error_clear(&e);
  if (strcmp(op, "CONNECT") == 0)
    return 0;
  if (strcmp(op, "CREATE") == 0) {
    if (v->validate_create && (rc = typed_decode(t, req->object, "object", &obj, resp)) == 0 && obj)
      cb = v->validate_create(v->data, req, obj, resp, &e);
  } else if (strcmp(op, "UPDATE") == 0) {
    if (v->validate_update && (rc = typed_decode(t, req->object, "object", &obj, resp)) == 0 &&
        obj && (rc = typed_decode(t, req->old_object, "oldObject", &old, resp)) == 0 && old)
      cb = v->validate_update(v->data, req, old, obj, resp, &e);
  } else if (strcmp(op, "DELETE") == 0) {
    /* The object being deleted is the review's oldObject. */
    if (v->validate_delete &&
        (rc = typed_decode(t, req->old_object, "oldObject", &old, resp)) == 0 && old)
      cb = v->validate_delete(v->data, req, old, resp, &e);
  } else {
    refuse(resp, 400, "", "unknown operation \"%.64s\"", op);
  }
  if (cb != 0)
    refuse_error(resp, cb, &e);
  kcr_scheme_free_typed(t->k, obj);
  kcr_scheme_free_typed(t->k, old);
  return rc == 0 ? 0 : kcr_error_set(err, rc, "decoding the review: out of memory");
}

/* ---- lifecycle ---- */

static char *dup_or_null(const char *s, int *oom) {
  char *d;
  if (!s)
    return NULL;
  if (!(d = kcr__strdup(s)))
    *oom = 1;
  return d;
}

int kcr_webhook_server_create(const kcr_webhook_server_options *o, kcr_webhook_server_t **out,
                              kcr_error_t *err) {
  kcr_webhook_server_t *ws;
  int oom = 0;
  *out = NULL;
  if (!o || !o->bind_address)
    return kcr_error_set(err, KCR_EINVAL, "webhook: bind_address is required");
  ws = kcr__calloc(1, sizeof(*ws));
  if (!ws)
    return kcr_error_set(err, KCR_ENOMEM, "webhook: out of memory");
  ws->o = *o;
  ws->o.bind_address = dup_or_null(o->bind_address, &oom);
  ws->o.cert_dir = dup_or_null(o->cert_dir, &oom);
  ws->o.cert_name = dup_or_null(o->cert_name, &oom);
  ws->o.key_name = dup_or_null(o->key_name, &oom);
  if (oom) {
    kcr_webhook_server_destroy(ws);
    return kcr_error_set(err, KCR_ENOMEM, "webhook: out of memory");
  }
  *out = ws;
  return 0;
}

static int reg(kcr_webhook_server_t *ws, const char *path, kcr_admission_cb cb,
               kcr_conversion_cb convert, void *data, int kind) {
  static const char *const req_labels[] = {"webhook", "code", NULL};
  static const char *const hook_labels[] = {"webhook", NULL};
  hook_t *h;
  kcr_metric_t *m = NULL;
  if (!ws || (!cb && !convert) || !path || path[0] != '/' || strlen(path) >= 1024 ||
      atomic_load(&ws->srv))
    return KCR_EINVAL;
  for (int i = 0; i < ws->nhooks; i++)
    if (strcmp(ws->hooks[i].path, path) == 0)
      return KCR_EEXIST;
  if (ws->nhooks >= MAX_HOOKS)
    return KCR_ETOOBIG;
  h = &ws->hooks[ws->nhooks];
  memset(h, 0, sizeof(*h));
  if (!(h->path = kcr__strdup(path)))
    return KCR_ENOMEM;
  h->cb = cb;
  h->convert = convert;
  h->data = data;
  h->kind = kind;
  if (ws->o.metrics) {
    if (kcr_metrics_counter(ws->o.metrics, "controller_runtime_webhook_requests_total",
                            "Total number of admission requests by HTTP status code.", req_labels,
                            &h->m_requests, NULL) != 0)
      h->m_requests = NULL;
    if (kcr_metrics_gauge(ws->o.metrics, "controller_runtime_webhook_requests_in_flight",
                          "Current number of admission requests being served.", hook_labels, &m,
                          NULL) == 0)
      h->m_in_flight = kcr_metric_withv(m, path, NULL);
    if (kcr_metrics_histogram(ws->o.metrics, "controller_runtime_webhook_latency_seconds",
                              "Histogram of the latency of processing admission requests",
                              hook_labels, NULL, 0, &m, NULL) == 0)
      h->m_latency = kcr_metric_withv(m, path, NULL);
  }
  ws->nhooks++;
  return 0;
}

int kcr_webhook_server_register_validating(kcr_webhook_server_t *ws, const char *path,
                                           kcr_admission_cb cb, void *data) {
  return reg(ws, path, cb, NULL, data, HOOK_VALIDATING);
}

int kcr_webhook_server_register_mutating(kcr_webhook_server_t *ws, const char *path,
                                         kcr_admission_cb cb, void *data) {
  return reg(ws, path, cb, NULL, data, HOOK_MUTATING);
}

int kcr_webhook_server_register_conversion(kcr_webhook_server_t *ws, const char *path,
                                           kcr_conversion_cb cb, void *data) {
  return reg(ws, path, NULL, cb, data, HOOK_CONVERSION);
}

int kcr_webhook_server_register_typed(kcr_webhook_server_t *ws, const kcr_scheme_t *s,
                                      const kcr_gvk *gvk, const kcr_custom_defaulter *d,
                                      const kcr_custom_validator *v, kcr_error_t *err) {
  char mpath[1024], vpath[1024];
  const kcr_kind_info *k;
  typed_t *t;
  int rc, n;
  if (!ws || !s || (!d && !v) || (d && !d->default_object))
    return kcr_error_set(err, KCR_EINVAL,
                         "webhook: a typed webhook needs a server, a scheme and a defaulter "
                         "(with default_object) or a validator");
  if (atomic_load(&ws->srv))
    return kcr_error_set(err, KCR_EINVAL, "webhook: register typed webhooks before starting");
  if ((rc = kcr_webhook_mutate_path(gvk, mpath, sizeof(mpath))) != 0 ||
      (rc = kcr_webhook_validate_path(gvk, vpath, sizeof(vpath))) != 0)
    return kcr_error_set(err, rc, "webhook: %s",
                         rc == KCR_EINVAL ? "a typed webhook's kind needs a version and a kind"
                                          : "the kind's webhook path is too long");
  if (!(k = kcr_scheme_lookup_gvk(s, gvk)))
    return kcr_error_set(err, KCR_ENOENT, "webhook: kind %s/%s %s is not in the scheme",
                         gvk->group ? gvk->group : "", gvk->version, gvk->kind);
  if (!k->decode)
    return kcr_error_set(err, KCR_ENOTSUP, "webhook: kind %s has no typed codec in the scheme",
                         k->kind);
  if ((d && find_hook(ws, mpath)) || (v && find_hook(ws, vpath)))
    return kcr_error_set(err, KCR_EEXIST, "webhook: %s is registered already",
                         d && find_hook(ws, mpath) ? mpath : vpath);
  if (ws->nhooks + !!d + !!v > MAX_HOOKS)
    return kcr_error_set(err, KCR_ETOOBIG, "webhook: more than %d paths", MAX_HOOKS);
  if (!(t = kcr__calloc(1, sizeof(*t))))
    return kcr_error_set(err, KCR_ENOMEM, "webhook: out of memory");
  t->k = k;
  n = snprintf(t->api_version, sizeof(t->api_version), "%s%s%s", k->group ? k->group : "",
               k->group && *k->group ? "/" : "", k->version);
  if (n < 0 || (size_t)n >= sizeof(t->api_version)) {
    kcr__free(t);
    return kcr_error_set(err, KCR_ETOOBIG, "webhook: the kind's apiVersion is too long");
  }
  if (d)
    t->d = *d;
  if (v)
    t->v = *v;
  if (d && (rc = reg(ws, mpath, on_typed_default, NULL, t, HOOK_MUTATING)) != 0) {
    kcr__free(t);
    return kcr_error_set(err, rc, "webhook: registering %s: %s", mpath, kcr_strerror(rc));
  }
  if (v && (rc = reg(ws, vpath, on_typed_validate, NULL, t, HOOK_VALIDATING)) != 0) {
    if (d) /* take the defaulter back off: nothing stays registered */
      kcr__free(ws->hooks[--ws->nhooks].path);
    kcr__free(t);
    return kcr_error_set(err, rc, "webhook: registering %s: %s", vpath, kcr_strerror(rc));
  }
  t->next = ws->typed;
  ws->typed = t;
  return 0;
}

/* ---- typed conversion ---- */

/* api_version_of writes k's apiVersion ("group/version"; "version" for the
 * core group) into buf. */
static void api_version_of(const kcr_kind_info *k, char *buf, size_t size) {
  snprintf(buf, size, "%s%s%s", k->group ? k->group : "", k->group && *k->group ? "/" : "",
           k->version);
}

/* hub_version finds the version of h whose apiVersion is av: NULL for none;
 * *spoke the spoke, NULL for the hub itself. */
static const kcr_kind_info *hub_version(const hub_t *h, const char *av,
                                        const kcr_conversion_spoke **spoke) {
  char buf[256];
  *spoke = NULL;
  api_version_of(h->hub, buf, sizeof(buf));
  if (strcmp(buf, av) == 0)
    return h->hub;
  for (size_t i = 0; i < h->n; i++) {
    api_version_of(h->spokes[i].k, buf, sizeof(buf));
    if (strcmp(buf, av) == 0) {
      *spoke = &h->spokes[i].sp;
      return h->spokes[i].k;
    }
  }
  return NULL;
}

/* on_typed_convert: the conversion handler at KCR_WEBHOOK_CONVERT_PATH (data:
 * the server); object is never at desired (the review passes those). */
static int on_typed_convert(void *data, json_t *object, const char *desired, json_t **out,
                            kcr_error_t *err) {
  const kcr_webhook_server_t *ws = data;
  const char *av = json_string_value(json_object_get(object, "apiVersion"));
  const char *kind = json_string_value(json_object_get(object, "kind"));
  const kcr_conversion_spoke *from = NULL, *to = NULL;
  const kcr_kind_info *src = NULL, *dst = NULL;
  const hub_t *h;
  void *sv = NULL, *hv = NULL, *dv = NULL;
  int rc;
  *out = NULL;
  for (h = ws->hubs; h; h = h->next)
    if (strcmp(h->hub->kind, kind) == 0 && (src = hub_version(h, av, &from)) != NULL)
      break;
  if (!h || !(dst = hub_version(h, desired, &to)))
    return kcr_error_set(err, KCR_ENOTSUP, "no conversion of %s from %s to %s is registered", kind,
                         av, desired);
  if ((rc = src->decode(object, &sv, err, src->codec_data)) != 0) {
    sv = NULL;
    kcr_error_prefix(err, "decoding it as %s: ", av);
    return rc;
  }
  if (!from)
    hv = sv;
  else if ((rc = from->convert_to(from->data, sv, &hv, err)) != 0 || !hv)
    goto fail;
  if (!to)
    dv = hv;
  else if ((rc = to->convert_from(to->data, hv, &dv, err)) != 0 || !dv)
    goto fail;
  rc = kcr_scheme_encode(dst, dv, out, err);
fail:
  if (rc == 0 && !*out)
    rc = kcr_error_set(err, KCR_EINVAL, "a conversion function returned no object");
  if (dv != hv)
    kcr_scheme_free_typed(dst, dv);
  if (hv != sv)
    kcr_scheme_free_typed(h->hub, hv);
  kcr_scheme_free_typed(src, sv);
  return rc;
}

int kcr_webhook_server_register_hub(kcr_webhook_server_t *ws, const kcr_scheme_t *s,
                                    const kcr_gvk *hub, const kcr_conversion_spoke *spokes,
                                    size_t n, kcr_error_t *err) {
  const kcr_kind_info *hk;
  hub_t *h;
  int rc;
  if (!ws || !s || !hub || !spokes || n == 0 || n > 64)
    return kcr_error_set(err, KCR_EINVAL,
                         "webhook: a hub needs a server, a scheme, its kind "
                         "and 1 to 64 spokes");
  if (atomic_load(&ws->srv))
    return kcr_error_set(err, KCR_EINVAL, "webhook: register conversions before starting");
  if (!hub->version || !*hub->version || !hub->kind || !*hub->kind)
    return kcr_error_set(err, KCR_EINVAL, "webhook: the hub's kind needs a version and a kind");
  if (!(hk = kcr_scheme_lookup_gvk(s, hub)))
    return kcr_error_set(err, KCR_ENOENT, "webhook: kind %s/%s %s is not in the scheme",
                         hub->group ? hub->group : "", hub->version, hub->kind);
  if (!hk->decode)
    return kcr_error_set(err, KCR_ENOTSUP, "webhook: kind %s has no typed codec", hk->kind);
  for (const hub_t *o = ws->hubs; o; o = o->next)
    if (strcmp(o->hub->kind, hk->kind) == 0 &&
        strcmp(o->hub->group ? o->hub->group : "", hk->group ? hk->group : "") == 0)
      return kcr_error_set(err, KCR_EEXIST, "webhook: %s has a hub already", hk->kind);
  if (!ws->hubs && find_hook(ws, KCR_WEBHOOK_CONVERT_PATH))
    return kcr_error_set(err, KCR_EEXIST,
                         "webhook: " KCR_WEBHOOK_CONVERT_PATH " is registered already");
  if (!(h = kcr__calloc(1, sizeof(*h) + n * sizeof(h->spokes[0]))))
    return kcr_error_set(err, KCR_ENOMEM, "webhook: out of memory");
  h->hub = hk;
  h->n = n;
  for (size_t i = 0; i < n; i++) {
    const kcr_conversion_spoke *sp = &spokes[i];
    kcr_gvk g = {hk->group, sp->version, hk->kind};
    const kcr_kind_info *k;
    if (!sp->version || !*sp->version || !sp->convert_to || !sp->convert_from ||
        strcmp(sp->version, hk->version) == 0) {
      rc = kcr_error_set(err, KCR_EINVAL,
                         "webhook: spoke %zu needs a version other than the hub's and both "
                         "conversion functions",
                         i);
      goto fail;
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(h->spokes[j].k->version, sp->version) == 0) {
        rc = kcr_error_set(err, KCR_EINVAL, "webhook: spoke version %s given twice", sp->version);
        goto fail;
      }
    if (!(k = kcr_scheme_lookup_gvk(s, &g)) || strcmp(k->version, sp->version) != 0) {
      rc = kcr_error_set(err, KCR_ENOENT, "webhook: kind %s/%s %s is not in the scheme",
                         hk->group ? hk->group : "", sp->version, hk->kind);
      goto fail;
    }
    if (!k->decode) {
      rc = kcr_error_set(err, KCR_ENOTSUP, "webhook: %s %s has no typed codec", sp->version,
                         k->kind);
      goto fail;
    }
    h->spokes[i].k = k;
    h->spokes[i].sp = *sp;
    h->spokes[i].sp.version = k->version; /* the scheme's copy */
  }
  if (!ws->hubs &&
      (rc = reg(ws, KCR_WEBHOOK_CONVERT_PATH, NULL, on_typed_convert, ws, HOOK_CONVERSION)) != 0) {
    kcr_error_set(err, rc, "webhook: registering " KCR_WEBHOOK_CONVERT_PATH ": %s",
                  kcr_strerror(rc));
    goto fail;
  }
  h->next = ws->hubs;
  ws->hubs = h;
  return 0;
fail:
  kcr__free(h);
  return rc;
}

int kcr_webhook_server_start(kcr_webhook_server_t *ws, kcr_loop_t *loop, kcr_error_t *err) {
  kcr_server_options so;
  kcr_server_t *srv = NULL;
  int rc;
  if (atomic_load(&ws->srv))
    return kcr_error_set(err, KCR_EINVAL, "webhook: already serving");
  memset(&so, 0, sizeof(so));
  so.loop = loop;
  so.bind_address = ws->o.bind_address;
  so.tls = 1;
  so.cert_dir = ws->o.cert_dir;
  so.cert_name = ws->o.cert_name;
  so.key_name = ws->o.key_name;
  so.cert_poll_interval_ns = ws->o.cert_poll_interval_ns;
  so.cert_metrics = ws->o.metrics;
  so.handler = on_request;
  so.handler_data = ws;
  so.max_body_bytes = KCR_WEBHOOK_MAX_BODY;
  so.max_buffered_bytes = KCR_WEBHOOK_BUDGET;
  so.defer_accept_s = KCR_SERVER_DEFER_ACCEPT_S;
  rc = kcr_server_create(&so, &srv, err);
  atomic_store(&ws->srv, srv);
  return rc;
}

void kcr_webhook_server_stop(kcr_webhook_server_t *ws) {
  if (!ws)
    return;
  kcr_server_destroy(atomic_exchange(&ws->srv, NULL));
}

int kcr_webhook_server_port(kcr_webhook_server_t *ws) {
  kcr_server_t *srv = ws ? atomic_load(&ws->srv) : NULL;
  return srv ? kcr_server_port(srv) : 0;
}

void kcr_webhook_server_destroy(kcr_webhook_server_t *ws) {
  if (!ws)
    return;
  kcr_webhook_server_stop(ws);
  for (int i = 0; i < ws->nhooks; i++)
    kcr__free(ws->hooks[i].path);
  while (ws->typed) {
    typed_t *t = ws->typed;
    ws->typed = t->next;
    kcr__free(t);
  }
  while (ws->hubs) {
    hub_t *h = ws->hubs;
    ws->hubs = h->next;
    kcr__free(h);
  }
  kcr__free((char *)ws->o.bind_address);
  kcr__free((char *)ws->o.cert_dir);
  kcr__free((char *)ws->o.cert_name);
  kcr__free((char *)ws->o.key_name);
  kcr__free(ws);
}
