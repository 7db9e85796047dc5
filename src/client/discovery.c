/* SPDX-License-Identifier: MIT */
/*
 * discovery.c: API discovery and the lazy REST mapper.
 *
 * A discovery round builds a fresh table of mappings and swaps it in under the
 * mapper's mutex; lookups copy a mapping out (kcr_rest_mapping is plain data), so
 * no reader ever holds a pointer into a table that a later round frees.
 *
 * The round first asks /api and /apis for the aggregated documents
 * (apidiscovery.k8s.io v2, then v2beta1), which list every group, version and
 * resource in two answers; a server that answers with the legacy documents
 * instead (APIVersions / APIGroupList) is walked group-version by group-version,
 * as client-go's ServerGroupsAndResources does. Versions are kept in the server's
 * preference order, so the first mapping of a kind is its preferred version.
 * Subresources ("pods/status") are not kinds and are skipped.
 *
 * A miss triggers a new round, at most once per second, so a flood of lookups for
 * a kind that does not exist cannot flood the server.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "client/client_internal.h"
#include "kcr/clock.h"
#include "kcr/discovery.h"
#include "kcr/log.h"
#include "util/alloc.h"

#define AGGREGATED_ACCEPT                                                                          \
  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"                          \
  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"                     \
  "application/json"
#define REDISCOVER_INTERVAL_NS KCR_NSEC_PER_SEC

typedef struct table {
  kcr_rest_mapping *items;
  size_t n, cap;
} table_t;

struct kcr_rest_mapper {
  kcr_client_t *client; /* borrowed */
  pthread_mutex_t mu;
  table_t table;             /* protected by mu */
  int have_table;            /* protected by mu */
  int64_t last_discovery;    /* protected by mu: monotonic ns of the last round's start */
  unsigned long discoveries; /* protected by mu */
  int aggregated;            /* protected by mu */
  pthread_mutex_t round_mu;  /* one discovery round at a time */
};

kcr_gvk kcr_rest_mapping_gvk(const kcr_rest_mapping *m) {
  kcr_gvk g = {m->group, m->version, m->kind};
  return g;
}

kcr_gvr kcr_rest_mapping_gvr(const kcr_rest_mapping *m) {
  kcr_gvr r = {m->group, m->version, m->resource};
  return r;
}

static void table_free(table_t *t) {
  kcr__free(t->items);
  t->items = NULL;
  t->n = t->cap = 0;
}

static int table_add(table_t *t, const char *group, const char *version, const char *kind,
                     const char *resource, int namespaced) {
  kcr_rest_mapping *m;
  if (!group || !version || !kind || !resource || !*kind || !*resource || strchr(resource, '/'))
    return 0; /* subresources and incomplete entries are not mappings */
  if (strlen(group) >= KCR_MAPPING_NAME_MAX || strlen(version) >= KCR_MAPPING_VERSION_MAX ||
      strlen(kind) >= KCR_MAPPING_NAME_MAX || strlen(resource) >= KCR_MAPPING_NAME_MAX)
    return 0;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 128;
    kcr_rest_mapping *p = kcr__realloc(t->items, cap * sizeof(*p));
    if (!p)
      return KCR_ENOMEM;
    t->items = p;
    t->cap = cap;
  }
  m = &t->items[t->n++];
  memset(m, 0, sizeof(*m));
  snprintf(m->group, sizeof(m->group), "%s", group);
  snprintf(m->version, sizeof(m->version), "%s", version);
  snprintf(m->kind, sizeof(m->kind), "%s", kind);
  snprintf(m->resource, sizeof(m->resource), "%s", resource);
  m->namespaced = namespaced;
  return 0;
}

/* get_json GETs path and parses the answer; *aggregated tells which form came. */
static int get_json(kcr_client_t *c, const char *path, const char *accept, json_t **out,
                    int *aggregated, kcr_error_t *err) {
  kcr_request req;
  kcr_response resp;
  json_error_t jerr;
  int rc;

  *out = NULL;
  memset(&req, 0, sizeof(req));
  req.method = "GET";
  req.path = path;
  req.accept = accept;
  rc = kcr_client_do(c, &req, &resp, err);
  if (rc) {
    kcr_response_free(&resp);
    return rc;
  }
  if (aggregated)
    *aggregated = resp.content_type && strstr(resp.content_type, "as=APIGroupDiscoveryList") &&
                  strstr(resp.content_type, "g=apidiscovery.k8s.io");
  *out = json_loadb(resp.body, resp.body_len, 0, &jerr);
  if (!*out)
    rc = kcr_error_set(err, KCR_EPROTO, "discovery: GET %s: invalid JSON: %s", path, jerr.text);
  kcr_response_free(&resp);
  return rc;
}

/* add_aggregated adds every resource of an APIGroupDiscoveryList. */
static int add_aggregated(table_t *t, json_t *list) {
  size_t i, j, k;
  json_t *group, *version, *res;
  json_array_foreach(json_object_get(list, "items"), i, group) {
    const char *g = json_string_value(json_object_get(json_object_get(group, "metadata"), "name"));
    json_array_foreach(json_object_get(group, "versions"), j, version) {
      const char *v = json_string_value(json_object_get(version, "version"));
      json_array_foreach(json_object_get(version, "resources"), k, res) {
        json_t *rk = json_object_get(res, "responseKind");
        const char *scope = json_string_value(json_object_get(res, "scope"));
        int rc = table_add(t, g ? g : "", v, json_string_value(json_object_get(rk, "kind")),
                           json_string_value(json_object_get(res, "resource")),
                           scope && strcmp(scope, "Namespaced") == 0);
        if (rc)
          return rc;
      }
    }
  }
  return 0;
}

/* add_resource_list adds an APIResourceList of group/version. */
static int add_resource_list(table_t *t, const char *group, const char *version, json_t *list) {
  size_t i;
  json_t *res;
  json_array_foreach(json_object_get(list, "resources"), i, res) {
    int rc = table_add(t, group, version, json_string_value(json_object_get(res, "kind")),
                       json_string_value(json_object_get(res, "name")),
                       json_is_true(json_object_get(res, "namespaced")));
    if (rc)
      return rc;
  }
  return 0;
}

static int discover_legacy(kcr_client_t *c, table_t *t, json_t *api, json_t *apis,
                           kcr_error_t *err) {
  char path[600];
  size_t i, j;
  json_t *v, *group, *gv, *list;
  int rc = 0;

  json_array_foreach(json_object_get(api, "versions"), i, v) {
    snprintf(path, sizeof(path), "/api/%s", json_string_value(v) ? json_string_value(v) : "");
    if ((rc = get_json(c, path, "application/json", &list, NULL, err)) != 0)
      return rc;
    rc = add_resource_list(t, "", json_string_value(v), list);
    json_decref(list);
    if (rc)
      return rc;
  }
  json_array_foreach(json_object_get(apis, "groups"), i, group) {
    const char *g = json_string_value(json_object_get(group, "name"));
    const char *pref =
        json_string_value(json_object_get(json_object_get(group, "preferredVersion"), "version"));
    /* Preferred version first, then the others in the server's order. */
    for (int pass = 0; pass < 2; pass++) {
      json_array_foreach(json_object_get(group, "versions"), j, gv) {
        const char *ver = json_string_value(json_object_get(gv, "version"));
        if (!g || !ver || (pass == 0) != (pref && strcmp(ver, pref) == 0))
          continue;
        snprintf(path, sizeof(path), "/apis/%s/%s", g, ver);
        rc = get_json(c, path, "application/json", &list, NULL, err);
        if (rc == KCR_EAPI && err && err->http_status == 503) {
          /* An aggregated API server that is down: skip its group, as client-go does. */
          kcr_log(KCR_LOG_WARN, "discovery", "skipping %s/%s: %s", g, ver, err->message);
          kcr_error_clear(err);
          continue;
        }
        if (rc)
          return rc;
        rc = add_resource_list(t, g, ver, list);
        json_decref(list);
        if (rc)
          return rc;
      }
    }
  }
  return 0;
}

/* discover runs one round and swaps the new table in. */
static int discover(kcr_rest_mapper_t *m, kcr_error_t *err) {
  table_t t = {NULL, 0, 0};
  json_t *api = NULL, *apis = NULL;
  int agg_api = 0, agg_apis = 0, rc;

  pthread_mutex_lock(&m->mu);
  m->last_discovery = kcr_clock_now(kcr_clock_system());
  pthread_mutex_unlock(&m->mu);
  rc = get_json(m->client, "/api", AGGREGATED_ACCEPT, &api, &agg_api, err);
  if (rc == 0)
    rc = get_json(m->client, "/apis", AGGREGATED_ACCEPT, &apis, &agg_apis, err);
  if (rc == 0) {
    if (agg_api && agg_apis) {
      rc = add_aggregated(&t, api);
      if (rc == 0)
        rc = add_aggregated(&t, apis);
    } else {
      rc = discover_legacy(m->client, &t, api, apis, err);
    }
    if (rc == KCR_ENOMEM)
      kcr_error_set(err, rc, "discovery: out of memory");
  }
  json_decref(api);
  json_decref(apis);
  if (rc) {
    table_free(&t);
    kcr_error_prefix(err, "discovery: ");
    return rc;
  }
  pthread_mutex_lock(&m->mu);
  table_free(&m->table);
  m->table = t;
  m->have_table = 1;
  m->discoveries++;
  m->aggregated = agg_api && agg_apis;
  pthread_mutex_unlock(&m->mu);
  kcr_log(KCR_LOG_DEBUG, "discovery", "%zu kinds discovered (%s)", t.n,
          agg_api && agg_apis ? "aggregated" : "per group-version");
  return 0;
}

int kcr_rest_mapper_create(kcr_client_t *client, kcr_rest_mapper_t **out, kcr_error_t *err) {
  kcr_rest_mapper_t *m = kcr__calloc(1, sizeof(*m));
  *out = NULL;
  if (!m)
    return kcr_error_set(err, KCR_ENOMEM, "rest mapper: out of memory");
  m->client = client;
  pthread_mutex_init(&m->mu, NULL);
  pthread_mutex_init(&m->round_mu, NULL);
  *out = m;
  return 0;
}

void kcr_rest_mapper_destroy(kcr_rest_mapper_t *m) {
  if (!m)
    return;
  table_free(&m->table);
  pthread_mutex_destroy(&m->mu);
  pthread_mutex_destroy(&m->round_mu);
  kcr__free(m);
}

void kcr_rest_mapper_reset(kcr_rest_mapper_t *m) {
  pthread_mutex_lock(&m->mu);
  table_free(&m->table);
  m->have_table = 0;
  m->last_discovery = 0;
  pthread_mutex_unlock(&m->mu);
}

void kcr_rest_mapper_get_stats(kcr_rest_mapper_t *m, kcr_rest_mapper_stats *out) {
  pthread_mutex_lock(&m->mu);
  out->discoveries = m->discoveries;
  out->aggregated = m->aggregated;
  out->mappings = m->table.n;
  pthread_mutex_unlock(&m->mu);
}

typedef int (*match_fn)(const kcr_rest_mapping *m, const void *key);

struct kind_key {
  const char *group, *version, *kind;
};

static int match_kind(const kcr_rest_mapping *m, const void *key) {
  const struct kind_key *k = key;
  return strcmp(m->group, k->group) == 0 && strcmp(m->kind, k->kind) == 0 &&
         (!k->version || !*k->version || strcmp(m->version, k->version) == 0);
}

static int match_resource(const kcr_rest_mapping *m, const void *key) {
  const kcr_gvr *r = key;
  return strcmp(m->group, r->group ? r->group : "") == 0 && strcmp(m->resource, r->resource) == 0 &&
         (!r->version || !*r->version || strcmp(m->version, r->version) == 0);
}

/* lookup finds the first match; 1 found, 0 not found, -1 no table yet. */
static int lookup(kcr_rest_mapper_t *m, match_fn match, const void *key, kcr_rest_mapping *out) {
  int found = -1;
  pthread_mutex_lock(&m->mu);
  if (m->have_table) {
    found = 0;
    for (size_t i = 0; i < m->table.n; i++)
      if (match(&m->table.items[i], key)) {
        *out = m->table.items[i];
        found = 1;
        break;
      }
  }
  pthread_mutex_unlock(&m->mu);
  return found;
}

static int find(kcr_rest_mapper_t *m, match_fn match, const void *key, kcr_rest_mapping *out,
                const char *what, kcr_error_t *err) {
  int found = lookup(m, match, key, out), rc;
  if (found == 1)
    return 0;
  pthread_mutex_lock(&m->round_mu);
  /* Another thread may have rediscovered while this one waited. */
  found = lookup(m, match, key, out);
  if (found == 1) {
    pthread_mutex_unlock(&m->round_mu);
    return 0;
  }
  pthread_mutex_lock(&m->mu);
  {
    int64_t since = kcr_clock_now(kcr_clock_system()) - m->last_discovery;
    int recent = m->have_table && since < REDISCOVER_INTERVAL_NS;
    pthread_mutex_unlock(&m->mu);
    if (recent) {
      pthread_mutex_unlock(&m->round_mu);
      return kcr_error_set(err, KCR_ENOENT, "no matches for %s: the server does not serve it",
                           what);
    }
  }
  rc = discover(m, err);
  pthread_mutex_unlock(&m->round_mu);
  if (rc)
    return rc;
  if (lookup(m, match, key, out) == 1)
    return 0;
  return kcr_error_set(err, KCR_ENOENT,
                       "no matches for %s: the server does not serve it (is its CRD installed?)",
                       what);
}

int kcr_rest_mapper_mapping_for_kind(kcr_rest_mapper_t *m, const kcr_gvk *gvk,
                                     kcr_rest_mapping *out, kcr_error_t *err) {
  struct kind_key key;
  char what[600];
  if (!gvk || !gvk->kind || !*gvk->kind)
    return kcr_error_set(err, KCR_EINVAL, "rest mapper: a kind is required");
  key.group = gvk->group ? gvk->group : "";
  key.version = gvk->version;
  key.kind = gvk->kind;
  if (lookup(m, match_kind, &key, out) == 1)
    return 0; /* the common case: no message to format */
  snprintf(what, sizeof(what), "kind %s%s%s%s%s", key.group, *key.group ? "/" : "",
           key.version && *key.version ? key.version : "",
           key.version && *key.version ? ", Kind=" : "", key.kind);
  return find(m, match_kind, &key, out, what, err);
}

int kcr_rest_mapper_mapping(kcr_rest_mapper_t *m, const char *group, const char *version,
                            const char *kind, kcr_rest_mapping *out, kcr_error_t *err) {
  kcr_gvk gvk = {group, version, kind};
  return kcr_rest_mapper_mapping_for_kind(m, &gvk, out, err);
}

int kcr_rest_mapper_mapping_for_resource(kcr_rest_mapper_t *m, const kcr_gvr *r,
                                         kcr_rest_mapping *out, kcr_error_t *err) {
  char what[600];
  if (!r || !r->resource || !*r->resource)
    return kcr_error_set(err, KCR_EINVAL, "rest mapper: a resource is required");
  snprintf(what, sizeof(what), "resource %s%s%s/%s", r->group ? r->group : "",
           r->group && *r->group ? "/" : "", r->version ? r->version : "", r->resource);
  return find(m, match_resource, r, out, what, err);
}
