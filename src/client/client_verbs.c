/* SPDX-License-Identifier: MIT */
/*
 * client_verbs.c: controller-runtime's client verbs over kcr_client_do: build the path
 * and query from a kcr_gvr and kcr_request_options, serialise the object, parse
 * the answer. Every path segment and query value is percent-encoded, so names
 * and selectors cannot smuggle in path or query syntax; the URL is built in a
 * bounded kcr_buf_t (no fixed-size path buffers anywhere).
 */
#include <stdio.h>
#include <string.h>

#include "client/client_internal.h"
#include "util/alloc.h"
#include "util/jscan.h"

#define MAX_URL ((size_t)64 * 1024)

/* append_escaped adds s percent-encoded (RFC 3986 unreserved characters kept). */
static int append_escaped(kcr_buf_t *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  int rc = 0;
  for (; *s && rc == 0; s++) {
    unsigned char ch = (unsigned char)*s;
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        ch == '-' || ch == '.' || ch == '_' || ch == '~') {
      rc = kcr_buf_appendc(b, (char)ch);
    } else {
      char enc[3] = {'%', hex[ch >> 4], hex[ch & 15]};
      rc = kcr_buf_append(b, enc, 3);
    }
  }
  return rc;
}

/* segment validates a path segment the way apimachinery's path validation does. */
static int bad_segment(const char *s) {
  return !s || !*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strchr(s, '/') ||
         strchr(s, '%');
}

int kcr__client_build_path(kcr_buf_t *b, const kcr_gvr *r, const char *ns, const char *name,
                           const char *sub) {
  int rc;
  if (!r || !r->version || !*r->version || bad_segment(r->resource) ||
      (r->group && *r->group && bad_segment(r->group)) || (ns && *ns && bad_segment(ns)) ||
      (name && bad_segment(name)) || (sub && *sub && bad_segment(sub)))
    return KCR_EINVAL;
  if (!r->group || !*r->group)
    rc = kcr_buf_appends(b, "/api/");
  else if ((rc = kcr_buf_appends(b, "/apis/")) == 0 && (rc = append_escaped(b, r->group)) == 0)
    rc = kcr_buf_appendc(b, '/');
  if (rc == 0)
    rc = append_escaped(b, r->version);
  if (rc == 0 && ns && *ns) {
    rc = kcr_buf_appends(b, "/namespaces/");
    if (rc == 0)
      rc = append_escaped(b, ns);
  }
  if (rc == 0 && (rc = kcr_buf_appendc(b, '/')) == 0)
    rc = append_escaped(b, r->resource);
  if (rc == 0 && name) {
    if ((rc = kcr_buf_appendc(b, '/')) == 0)
      rc = append_escaped(b, name);
    if (rc == 0 && sub && *sub && (rc = kcr_buf_appendc(b, '/')) == 0)
      rc = append_escaped(b, sub);
  }
  return rc;
}

int kcr_client_path(const kcr_gvr *r, const char *ns, const char *name, const char *subresource,
                    char *buf, size_t size) {
  kcr_buf_t b;
  int rc;
  kcr_buf_init(&b, MAX_URL);
  rc = kcr__client_build_path(&b, r, ns, name, subresource);
  if (rc == 0 && b.len >= size)
    rc = KCR_ETOOBIG;
  if (rc == 0) {
    memcpy(buf, b.data, b.len + 1);
    rc = (int)b.len;
  }
  kcr_buf_free(&b);
  return rc;
}

int kcr__client_add_param(kcr_buf_t *b, int *first, const char *key, const char *value) {
  int rc;
  if (!value || !*value)
    return 0;
  rc = kcr_buf_appendc(b, *first ? '?' : '&');
  *first = 0;
  if (rc == 0)
    rc = kcr_buf_appends(b, key);
  if (rc == 0)
    rc = kcr_buf_appendc(b, '=');
  if (rc == 0)
    rc = append_escaped(b, value);
  return rc;
}

enum { Q_LIST = 1, Q_WRITE = 2, Q_GET = 4, Q_DELETE = 8 };

static int build_query(kcr_buf_t *b, const kcr_request_options *o, int kinds) {
  int first = 1, rc = 0;
  char num[32];
  if (!o)
    return 0;
  if (kinds & Q_LIST) {
    rc = kcr__client_add_param(b, &first, "labelSelector", o->label_selector);
    if (rc == 0)
      rc = kcr__client_add_param(b, &first, "fieldSelector", o->field_selector);
    if (rc == 0 && o->limit > 0) {
      snprintf(num, sizeof(num), "%ld", o->limit);
      rc = kcr__client_add_param(b, &first, "limit", num);
    }
    if (rc == 0)
      rc = kcr__client_add_param(b, &first, "continue", o->continue_token);
    if (rc == 0)
      rc = kcr__client_add_param(b, &first, "shardSelector", o->shard_selector);
  }
  if (rc == 0 && (kinds & (Q_LIST | Q_GET))) {
    rc = kcr__client_add_param(b, &first, "resourceVersion", o->resource_version);
    if (rc == 0 && (kinds & Q_LIST))
      rc = kcr__client_add_param(b, &first, "resourceVersionMatch", o->resource_version_match);
  }
  if (rc == 0 && (kinds & Q_WRITE)) {
    rc = kcr__client_add_param(b, &first, "fieldManager", o->field_manager);
    if (rc == 0 && o->force)
      rc = kcr__client_add_param(b, &first, "force", "true");
    if (rc == 0)
      rc = kcr__client_add_param(b, &first, "fieldValidation", o->field_validation);
  }
  if (rc == 0 && (kinds & (Q_WRITE | Q_DELETE)) && o->dry_run)
    rc = kcr__client_add_param(b, &first, "dryRun", "All");
  return rc;
}

/* delete_body builds a DeleteOptions object, or NULL when nothing is set. */
static json_t *delete_body(const kcr_request_options *o, int *rc) {
  json_t *d;
  *rc = 0;
  if (!o || (!o->propagation_policy && !o->precondition_uid && !o->precondition_resource_version &&
             o->grace_period_seconds <= 0 && !o->dry_run))
    return NULL;
  d = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
  if (!d)
    goto oom;
  if (o->propagation_policy &&
      json_object_set_new(d, "propagationPolicy", json_string(o->propagation_policy)))
    goto oom;
  if (o->grace_period_seconds > 0 &&
      json_object_set_new(d, "gracePeriodSeconds", json_integer(o->grace_period_seconds)))
    goto oom;
  if (o->dry_run && json_object_set_new(d, "dryRun", json_pack("[s]", "All")))
    goto oom;
  if (o->precondition_uid || o->precondition_resource_version) {
    json_t *pre = json_object();
    if (!pre || json_object_set_new(d, "preconditions", pre))
      goto oom;
    if (o->precondition_uid && json_object_set_new(pre, "uid", json_string(o->precondition_uid)))
      goto oom;
    if (o->precondition_resource_version &&
        json_object_set_new(pre, "resourceVersion", json_string(o->precondition_resource_version)))
      goto oom;
  }
  return d;
oom:
  json_decref(d);
  *rc = KCR_ENOMEM;
  return NULL;
}

/*
 * answer_rv writes the answer's metadata.resourceVersion into rv (size
 * bytes; "" when none): the scanner reads it without a tree; text it does not
 * handle takes jansson's path.
 */
static void answer_rv(const kcr_response *resp, char *rv, size_t size) {
  kcr__scan_meta_t meta;
  kcr_buf_t scratch;
  const char *v = "";
  json_t *obj = NULL;
  kcr_buf_init(&scratch, resp->body_len + 1);
  if (kcr__scan_object(resp->body, resp->body_len, &scratch, &meta) == 0) {
    v = meta.rv;
  } else if ((obj = json_loadb(resp->body, resp->body_len, 0, NULL)) != NULL) {
    const char *s =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    v = s ? s : "";
  }
  if (strlen(v) < size)
    memcpy(rv, v, strlen(v) + 1);
  json_decref(obj);
  kcr_buf_free(&scratch);
}

/* call runs one verb: path + query built here, body borrowed, JSON answer parsed. */
static int call(kcr_client_t *c, const char *method, const kcr_gvr *r, const char *ns,
                const char *name, const char *sub, int kinds, const kcr_request_options *o,
                const char *content_type, const char *body, size_t body_len, json_t **out,
                kcr_error_t *err) {
  kcr_request req;
  kcr_response resp;
  kcr_buf_t path;
  json_error_t jerr;
  json_t *obj;
  bool want_rv;
  int rc;

  if (out)
    *out = NULL;
  kcr_buf_init(&path, MAX_URL);
  rc = kcr__client_build_path(&path, r, ns, name, sub);
  if (rc == KCR_EINVAL) {
    kcr_buf_free(&path);
    return kcr_error_set(err, rc,
                         "%s: invalid resource, namespace, name or subresource (%s/%s %s %s)",
                         method, r && r->group ? r->group : "", r && r->resource ? r->resource : "",
                         ns ? ns : "", name ? name : "");
  }
  if (rc == 0)
    rc = build_query(&path, o, kinds);
  if (rc) {
    kcr_buf_free(&path);
    return kcr_error_set(err, rc, "%s: cannot build the request URL", method);
  }
  memset(&req, 0, sizeof(req));
  req.method = method;
  req.path = kcr_buf_cstr(&path);
  req.content_type = content_type;
  req.body = body;
  req.body_len = body_len;
  if (o) {
    req.timeout_ns = o->timeout_ns;
    req.cancel = o->cancel;
    req.accept = o->accept;
  }
  want_rv = !out && o && o->resource_version_out && o->resource_version_out_size > 0;
  if (want_rv)
    o->resource_version_out[0] = '\0';
  rc = kcr__client_do(c, &req, out || want_rv ? &resp : NULL, r->group, r->resource, name, err);
  if (rc || !out) {
    if (rc == 0 && want_rv)
      answer_rv(&resp, o->resource_version_out, o->resource_version_out_size);
    if (out || want_rv)
      kcr_response_free(&resp);
    kcr_buf_free(&path);
    return rc;
  }
  obj = json_loadb(resp.body, resp.body_len, 0, &jerr);
  if (!obj || !json_is_object(obj)) {
    rc = kcr_error_set(
        err, KCR_EPROTO, "%s %s: the answer (%s, %zu bytes) is not a JSON object%s%s", method,
        req.path, resp.content_type, resp.body_len, obj ? "" : ": ", obj ? "" : jerr.text);
    json_decref(obj);
  } else {
    *out = obj;
  }
  kcr_response_free(&resp);
  kcr_buf_free(&path);
  return rc;
}

static const char *sub_of(const kcr_request_options *o) {
  return o ? o->subresource : NULL;
}

int kcr_client_get(kcr_client_t *c, const kcr_gvr *r, const char *ns, const char *name,
                   const kcr_request_options *o, json_t **out, kcr_error_t *err) {
  if (!name)
    return kcr_error_set(err, KCR_EINVAL, "get: a name is required");
  return call(c, "GET", r, ns, name, sub_of(o), Q_GET, o, NULL, NULL, 0, out, err);
}

int kcr_client_list(kcr_client_t *c, const kcr_gvr *r, const char *ns, const kcr_request_options *o,
                    json_t **out, kcr_error_t *err) {
  return call(c, "GET", r, ns, NULL, NULL, Q_LIST, o, NULL, NULL, 0, out, err);
}

/* with_body serialises obj and runs the verb with it. */
static int with_body(kcr_client_t *c, const char *method, const kcr_gvr *r, const char *ns,
                     const char *name, const char *sub, int kinds, const kcr_request_options *o,
                     const char *content_type, json_t *obj, json_t **out, kcr_error_t *err) {
  char *text;
  int rc;
  if (out)
    *out = NULL;
  if (!json_is_object(obj))
    return kcr_error_set(err, KCR_EINVAL, "%s: the object must be a JSON object", method);
  text = json_dumps(obj, JSON_COMPACT);
  if (!text)
    return kcr_error_set(err, KCR_ENOMEM, "%s: cannot serialise the object", method);
  rc = call(c, method, r, ns, name, sub, kinds, o, content_type, text, strlen(text), out, err);
  kcr__free(text);
  return rc;
}

static const char *name_of(json_t *obj) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

int kcr_client_create_object(kcr_client_t *c, const kcr_gvr *r, const char *ns, json_t *obj,
                             const kcr_request_options *o, json_t **out, kcr_error_t *err) {
  return with_body(c, "POST", r, ns, NULL, NULL, Q_WRITE, o, "application/json", obj, out, err);
}

int kcr_client_update(kcr_client_t *c, const kcr_gvr *r, const char *ns, json_t *obj,
                      const kcr_request_options *o, json_t **out, kcr_error_t *err) {
  const char *name = name_of(obj);
  if (out)
    *out = NULL;
  if (!name || !*name)
    return kcr_error_set(err, KCR_EINVAL, "update: the object has no metadata.name");
  return with_body(c, "PUT", r, ns, name, sub_of(o), Q_WRITE, o, "application/json", obj, out, err);
}

static const char *const patch_types[] = {
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
};

int kcr_client_patch(kcr_client_t *c, const kcr_gvr *r, const char *ns, const char *name,
                     kcr_patch_type type, const char *patch, size_t patch_len,
                     const kcr_request_options *o, json_t **out, kcr_error_t *err) {
  if (out)
    *out = NULL;
  if (!name || (unsigned)type > KCR_PATCH_APPLY || !patch)
    return kcr_error_set(err, KCR_EINVAL, "patch: a name, a patch and a valid type are required");
  if (type == KCR_PATCH_APPLY && (!o || !o->field_manager || !*o->field_manager))
    return kcr_error_set(err, KCR_EINVAL, "apply: a field manager is required");
  return call(c, "PATCH", r, ns, name, sub_of(o), Q_WRITE, o, patch_types[type], patch, patch_len,
              out, err);
}

int kcr_client_apply(kcr_client_t *c, const kcr_gvr *r, const char *ns, json_t *obj,
                     const kcr_request_options *o, json_t **out, kcr_error_t *err) {
  const char *name = name_of(obj);
  if (out)
    *out = NULL;
  if (!name || !*name)
    return kcr_error_set(err, KCR_EINVAL, "apply: the object has no metadata.name");
  if (!o || !o->field_manager || !*o->field_manager)
    return kcr_error_set(err, KCR_EINVAL, "apply: a field manager is required");
  return with_body(c, "PATCH", r, ns, name, o->subresource, Q_WRITE, o,
                   patch_types[KCR_PATCH_APPLY], obj, out, err);
}

int kcr_client_delete(kcr_client_t *c, const kcr_gvr *r, const char *ns, const char *name,
                      const kcr_request_options *o, json_t **out, kcr_error_t *err) {
  json_t *body;
  int rc;
  if (out)
    *out = NULL;
  if (!name)
    return kcr_error_set(err, KCR_EINVAL, "delete: a name is required");
  body = delete_body(o, &rc);
  if (rc)
    return kcr_error_set(err, rc, "delete: out of memory");
  if (!body)
    return call(c, "DELETE", r, ns, name, NULL, Q_DELETE, o, NULL, NULL, 0, out, err);
  rc = with_body(c, "DELETE", r, ns, name, NULL, 0, o, "application/json", body, out, err);
  json_decref(body);
  return rc;
}

int kcr_client_delete_collection(kcr_client_t *c, const kcr_gvr *r, const char *ns,
                                 const kcr_request_options *o, kcr_error_t *err) {
  json_t *body;
  int rc;
  body = delete_body(o, &rc);
  if (rc)
    return kcr_error_set(err, rc, "deletecollection: out of memory");
  if (!body)
    return call(c, "DELETE", r, ns, NULL, NULL, Q_LIST | Q_DELETE, o, NULL, NULL, 0, NULL, err);
  rc = with_body(c, "DELETE", r, ns, NULL, NULL, Q_LIST, o, "application/json", body, NULL, err);
  json_decref(body);
  return rc;
}

int kcr_client_create_subresource(kcr_client_t *c, const kcr_gvr *r, const char *ns,
                                  const char *name, json_t *obj, const kcr_request_options *o,
                                  json_t **out, kcr_error_t *err) {
  if (out)
    *out = NULL;
  if (!name || !*name || !o || !o->subresource || !*o->subresource)
    return kcr_error_set(err, KCR_EINVAL,
                         "create subresource: a name and a subresource are required");
  return with_body(c, "POST", r, ns, name, o->subresource, Q_WRITE, o, "application/json", obj, out,
                   err);
}
