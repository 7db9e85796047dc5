/* SPDX-License-Identifier: MIT */
/*
 * cache.c: the informer cache and its reader (controller-runtime's
 * informer_cache.go, internal/informers.go and cache_reader.go).
 *
 * Kinds: one entry per group/version/kind, in a short list under mu (an operator
 * caches a handful of kinds, so a scan is cheaper than hashing). An entry holds
 * the kind's by-object options and, once a read or kcr_cache_get_informer asked
 * for it, its REST mapping and informer. The mapping is looked up outside mu
 * (discovery may go to the network); the informer is created and started under
 * mu, which is quick (two threads, no I/O). kcr_cache_add_index creates the
 * informer without starting it, so indexes exist before the first list; any read
 * or kcr_cache_wait_for_sync starts it. Informers live until kcr_cache_destroy,
 * so a pointer taken under mu stays valid after it is dropped.
 *
 * Reads: wait for the kind's informer to sync (sync_timeout), then for noted
 * writes (below), then read the compact store, which parses a fresh json_t per
 * object (the caller owns it). Namespace lists use the store's namespace index;
 * field indexes are store indexers named "field:<name>" over the values the
 * user's function returns, and a namespaced list by field filters the index's
 * keys ("ns/name") by namespace before parsing anything. controller-runtime
 * instead stores each value twice ("ns/value" and "__all_namespaces/value");
 * filtering keys costs a string compare per cluster-wide match and no memory.
 *
 * Read-your-own-writes: ryow maps "group/Kind/<store key>" to the resourceVersion
 * a write returned (under ryow_mu; an hmap whose keys live in the entries). A
 * read touching such an object waits until the stored object's resourceVersion
 * reaches it or the informer has processed it (kcr_informer_get_stats'
 * processed_rv, raised only once the informer's FIFO has drained past it), and
 * then drops the entry. Writes of a kind without an informer are not recorded:
 * its informer, made later, starts with a consistent list, which is newer than
 * the write. Entries of reads that never come are swept when the map grows.
 *
 * Initial lists: every informer fills itself with a streaming list (one watch
 * with sendInitialEvents, kcr_informer_options.streaming_list), falling back to
 * paged lists where the server refuses it, as client-go's informers do since
 * its WatchListClient gate went on by default. The environment variable
 * KUBE_FEATURE_WatchListClient=false, client-go's own switch, turns it off, so
 * one setting puts a Go and a C operator in the same mode.
 *
 * Namespace sets (default_namespaces, by-object namespaces): the kind's informer
 * is one informer per namespace behind one (cache/informer_multi.c); reads
 * pick the part of their namespace (kcr__informer_part_for), a list of all
 * namespaces reads every part and merges (make_list sorts), and a noted write
 * is waited for on the part of its namespace.
 *
 * Lock order: ryow_mu -> mu -> an informer's locks. Informers never call back
 * into the cache except through the transform, which takes no cache lock.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/fieldsel_internal.h"
#include "cache/cache_internal.h"
#include "cache/informer_multi_internal.h"
#include "kcr/apierror.h"
#include "kcr/cache.h"
#include "kcr/clock.h"
#include "kcr/log.h"
#include "kcr/meta.h"
#include "kcr/rand.h"
#include "kcr/trace.h"
#include "util/alloc.h"
#include "util/hmap.h"
#include "util/list.h"

#define DEFAULT_SYNC_TIMEOUT_NS (120 * KCR_NSEC_PER_SEC)
#define DEFAULT_RYOW_TIMEOUT_NS (10 * KCR_NSEC_PER_SEC)
/* RYOW_SWEEP_AT: the ryow map is swept of satisfied entries when it reaches this
 * size, and then whenever it doubles since the last sweep. */
#define RYOW_SWEEP_AT 256
/* RYOW_MAX bounds the ryow map; a write noted beyond it is not waited for. */
#define RYOW_MAX 65536
/* RYOW_STEP_NS: how long a read waits between looks at a noted write. */
#define RYOW_STEP_NS (20 * KCR_NSEC_PER_MSEC)
#define FIELD_PREFIX "field:"

typedef struct entry {
  kcr__list_node_t link; /* in the cache's entries */
  char *group, *version, *kind;
  /* by-object options (copied) */
  char *ns, *label_selector, *field_selector;
  char **nss; /* by-object namespace set (nss_len > 0) */
  size_t nss_len;
  bool metadata_only;
  kcr_transform_fn transform;
  void *transform_data;
  /* set with the informer */
  kcr_rest_mapping mapping;
  const char *const *scope; /* namespaces the informer watches (entry's or cache's) */
  size_t nscope;            /* 0: all */
  kcr_informer_t *inf;
  int started;
  bool sharded; /* the informer was made sharded: set_shard moves it */
} entry_t;

typedef struct ryow {
  uint64_t rv;
  char key[]; /* "group/Kind/<store key>" */
} ryow_t;

struct kcr_cache {
  kcr_client_t *client;
  kcr_rest_mapper_t *mapper;
  int own_mapper;
  char **default_nss; /* default_ns or default_namespaces, copied */
  size_t default_nss_len;
  int64_t resync_ns, sync_timeout_ns, ryow_timeout_ns;
  kcr_metrics_registry_t *metrics; /* borrowed; handed to each informer */
  bool streaming_list;             /* immutable: informers use the streaming list */
  bool json_wire;                  /* immutable: informers watch in JSON only */
  bool fail_on_missing;            /* immutable: reads make no informer */
  bool resync_jitter;              /* immutable: each informer's period is jittered */
  kcr_shard_set_t *shard;          /* protected by mu: new informers' shard; NULL: none */
  kcr_shard_key shard_key;         /* protected by mu */
  kcr__cache_shard_keyer keyer;    /* protected by mu: each kind's key; NULL: shard_key */
  void *keyer_data;

  pthread_mutex_t mu;
  kcr__list_t entries; /* entry_t, newest first; protected by mu */

  pthread_mutex_t ryow_mu;
  kcr__hmap_t ryow;  /* protected by ryow_mu */
  size_t ryow_sweep; /* protected by ryow_mu: size that triggers the next sweep */
};

/* ---- helpers ---- */

/*
 * watch_list_default reads client-go's switch for the streaming list,
 * KUBE_FEATURE_WatchListClient (on unless it says false or 0).
 */
static bool watch_list_default(void) {
  const char *v = getenv("KUBE_FEATURE_WatchListClient");
  return !(v && (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "FALSE") == 0 ||
                 strcmp(v, "0") == 0));
}

int64_t kcr__cache_jittered_period(int64_t period, double u) {
  if (period <= 0)
    return period;
  return (int64_t)((double)period * (0.9 + u / 5.0));
}

int64_t kcr__cache_resync_period(kcr_cache_t *c, bool *jitter) {
  *jitter = c->resync_jitter;
  return c->resync_ns;
}

static int64_t now_ns(void) {
  return kcr_clock_now(kcr_clock_system());
}

static uint64_t parse_rv(const char *rv) {
  char *end;
  unsigned long long v;
  if (!rv || *rv < '0' || *rv > '9')
    return 0;
  v = strtoull(rv, &end, 10);
  return *end ? 0 : (uint64_t)v;
}

static const char *str0(const char *s) {
  return s ? s : "";
}

static char *dup_opt(const char *s) {
  return s && *s ? kcr__strdup(s) : NULL;
}

static bool gvk_valid(const kcr_gvk *gvk) {
  return gvk && gvk->version && *gvk->version && gvk->kind && *gvk->kind;
}

/* strv_free frees n strings and their array. */
static void strv_free(char **v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    kcr__free(v[i]);
  kcr__free(v);
}

/* strv_dup copies n strings into *out (NULL when n is 0). */
static int strv_dup(const char *const *v, size_t n, char ***out) {
  char **d;
  *out = NULL;
  if (!n)
    return 0;
  d = kcr__calloc(n, sizeof(*d));
  if (!d)
    return KCR_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (!(d[i] = kcr__strdup(v[i]))) {
      strv_free(d, n);
      return KCR_ENOMEM;
    }
  *out = d;
  return 0;
}

static void entry_free(entry_t *e) {
  if (!e)
    return;
  strv_free(e->nss, e->nss_len);
  kcr_informer_destroy(e->inf);
  kcr__free(e->group);
  kcr__free(e->version);
  kcr__free(e->kind);
  kcr__free(e->ns);
  kcr__free(e->label_selector);
  kcr__free(e->field_selector);
  kcr__free(e);
}

/* find_entry returns gvk's entry or NULL. mu held. */
static entry_t *find_entry(kcr_cache_t *c, const kcr_gvk *gvk) {
  KCR__LIST_EACH(&c->entries, entry_t, link, e)
  if (strcmp(e->group, str0(gvk->group)) == 0 && strcmp(e->version, gvk->version) == 0 &&
      strcmp(e->kind, gvk->kind) == 0)
    return e;
  return NULL;
}

/* ensure_entry returns gvk's entry, adding an empty one. mu held. */
static entry_t *ensure_entry(kcr_cache_t *c, const kcr_gvk *gvk) {
  entry_t *e = find_entry(c, gvk);
  if (e)
    return e;
  e = kcr__calloc(1, sizeof(*e));
  if (!e)
    return NULL;
  e->group = kcr__strdup(str0(gvk->group));
  e->version = kcr__strdup(gvk->version);
  e->kind = kcr__strdup(gvk->kind);
  if (!e->group || !e->version || !e->kind) {
    entry_free(e);
    return NULL;
  }
  kcr__list_push_front(&c->entries, &e->link);
  return e;
}

/* entry_transform is a cached kind's informer transform when the user gave
 * one (after the informer's metadata-only reduction, if any). */
static int entry_transform(json_t *obj, void *data) {
  entry_t *e = data;
  return e->transform(obj, e->transform_data);
}

/* kind_label names a kind in messages: "ConfigMap" or "App.kcr.dev". */
static void kind_label(const kcr_gvk *gvk, char *buf, size_t size) {
  if (gvk->group && *gvk->group)
    snprintf(buf, size, "%s.%s", gvk->kind, gvk->group);
  else
    snprintf(buf, size, "%s", gvk->kind);
}

/* ---- informers ---- */

/* create_informer makes e's informer for mapping m. mu held. */
static int create_informer(kcr_cache_t *c, entry_t *e, const kcr_rest_mapping *m,
                           kcr_error_t *err) {
  kcr_informer_options o;
  int rc;

  e->mapping = *m;
  e->scope = NULL;
  e->nscope = 0;
  if (m->namespaced) {
    if (e->ns) {
      e->scope = (const char *const *)&e->ns;
      e->nscope = 1;
    } else if (e->nss_len) {
      e->scope = (const char *const *)e->nss;
      e->nscope = e->nss_len;
    } else {
      e->scope = (const char *const *)c->default_nss;
      e->nscope = c->default_nss_len;
    }
  }
  memset(&o, 0, sizeof(o));
  o.client = c->client;
  o.gvk = kcr_rest_mapping_gvk(&e->mapping);
  o.resource = kcr_rest_mapping_gvr(&e->mapping); /* resolved already: no second lookup */
  o.namespaces = e->scope;
  o.namespaces_len = e->nscope;
  o.label_selector = e->label_selector;
  o.field_selector = e->field_selector;
  o.resync_period_ns = c->resync_ns;
  if (c->resync_jitter && c->resync_ns > 0) {
    uint64_t rng = kcr_rand_seed();
    o.resync_period_ns = kcr__cache_jittered_period(c->resync_ns, kcr_rand_double(&rng));
  }
  /* Without a transform of the user's, the informer's own default (managedFields
   * dropped) runs while it scans each watch line into the stored form, with no
   * tree; a transform makes every line a tree first. Metadata-only lists and
   * watches PartialObjectMetadata: only metadata crosses the network. */
  if (e->transform) {
    o.transform = entry_transform;
    o.transform_data = e;
  }
  o.metadata_only = e->metadata_only;
  o.metrics = c->metrics;
  o.streaming_list = c->streaming_list;
  o.json_wire = c->json_wire;
  if (c->shard) { /* mu held */
    kcr_gvk gvk = o.gvk;
    int key = c->keyer ? c->keyer(&gvk, c->keyer_data) : (int)c->shard_key;
    e->sharded = key >= 0;
    o.shard = e->sharded ? c->shard : NULL;
    o.shard_key = e->sharded ? (kcr_shard_key)key : KCR_SHARD_KEY_NAMESPACE;
  }
  rc = kcr_informer_create(&o, &e->inf, err);
  if (rc == 0)
    kcr_log(KCR_LOG_DEBUG, "cache", "informer for %s (%s/%s %s)%s%s%s", e->kind,
            e->group[0] ? e->group : "core", e->version, e->mapping.resource,
            e->nscope ? " in namespace " : "", e->nscope ? e->scope[0] : "",
            e->nscope > 1 ? " and others" : "");
  return rc;
}

/* not_cached is controller-runtime's ErrResourceNotCached, worded as it is. */
static int not_cached(const kcr_gvk *gvk, kcr_error_t *err) {
  kcr_error_set(err, KCR_ENOTCACHED,
                "cache: %s (%s/%s, Kind=%s) is not cached: the cache reads only kinds whose "
                "informer exists (reader_fail_on_missing_informer; make it first with "
                "kcr_cache_get_informer)",
                gvk->kind, str0(gvk->group), gvk->version, gvk->kind);
  return KCR_ENOTCACHED;
}

/*
 * get_entry returns gvk's entry with its informer, creating the informer (and
 * starting it when start is set); for a read (read set) of a cache that fails
 * on missing informers, one that does not exist is KCR_ENOTCACHED. *out is
 * borrowed (lives as long as c).
 */
static int get_entry(kcr_cache_t *c, const kcr_gvk *gvk, int start, int read, entry_t **out,
                     kcr_error_t *err) {
  kcr_rest_mapping m;
  entry_t *e;
  int rc = 0;

  *out = NULL;
  if (!gvk_valid(gvk)) {
    kcr_error_set(err, KCR_EINVAL, "cache: a kind needs a version and a kind");
    return KCR_EINVAL;
  }
  pthread_mutex_lock(&c->mu);
  e = find_entry(c, gvk);
  if ((!e || !e->inf) && read && c->fail_on_missing) {
    pthread_mutex_unlock(&c->mu);
    return not_cached(gvk, err);
  }
  if (!e || !e->inf) {
    pthread_mutex_unlock(&c->mu);
    /* Discovery may block on the network: outside mu. */
    rc = kcr_rest_mapper_mapping_for_kind(c->mapper, gvk, &m, err);
    if (rc)
      return rc;
    pthread_mutex_lock(&c->mu);
    e = ensure_entry(c, gvk);
    if (!e) {
      pthread_mutex_unlock(&c->mu);
      kcr_error_set(err, KCR_ENOMEM, "cache: out of memory");
      return KCR_ENOMEM;
    }
    if (!e->inf)
      rc = create_informer(c, e, &m, err);
  }
  if (rc == 0 && start && !e->started) {
    rc = kcr_informer_start(e->inf, err);
    if (rc == 0)
      e->started = 1;
  }
  pthread_mutex_unlock(&c->mu);
  if (rc == 0)
    *out = e;
  return rc;
}

/* find_informer returns the informer of group/kind (any version), NULL if none.
 * Takes mu. */
static kcr_informer_t *find_informer(kcr_cache_t *c, const char *group, size_t group_len,
                                     const char *kind, size_t kind_len) {
  kcr_informer_t *inf = NULL;
  pthread_mutex_lock(&c->mu);
  KCR__LIST_EACH(&c->entries, entry_t, link, e) {
    if (e->inf && strlen(e->group) == group_len && memcmp(e->group, group, group_len) == 0 &&
        strlen(e->kind) == kind_len && memcmp(e->kind, kind, kind_len) == 0) {
      inf = e->inf;
      break;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return inf;
}

static uint64_t processed_rv(kcr_informer_t *inf) {
  kcr_informer_stats st;
  kcr_informer_get_stats(inf, &st);
  return st.processed_rv;
}

/* ---- read-your-own-writes ---- */

/* ryow_key writes "group/Kind/" + store key into buf. */
static int ryow_key(const char *group, const char *kind, const char *skey, char *buf, size_t size) {
  int n = snprintf(buf, size, "%s/%s/%s", group, kind, skey);
  return n < 0 || (size_t)n >= size ? KCR_ETOOBIG : 0;
}

/* ryow_sweep drops entries whose informer has processed them, or that have no
 * informer any more. ryow_mu held. */
static void ryow_sweep(kcr_cache_t *c) {
  size_t i = 0;
  while (i < c->ryow.cap) {
    kcr__hmap_slot_t *s = &c->ryow.slots[i];
    ryow_t *r;
    const char *g, *k, *slash;
    kcr_informer_t *inf;
    if (!s->key) {
      i++;
      continue;
    }
    r = s->val;
    g = r->key;
    k = strchr(g, '/') + 1;
    slash = strchr(k, '/');
    inf = find_informer(c, g, (size_t)(k - 1 - g), k, (size_t)(slash - k));
    if (!inf || processed_rv(inf) >= r->rv) {
      /* Backward-shift deletion may move another entry into slot i: look again. */
      kcr__hmap_del(&c->ryow, r->key);
      kcr__free(r);
      continue;
    }
    i++;
  }
}

void kcr_cache_note_write(kcr_cache_t *c, const kcr_gvk *gvk, const json_t *obj) {
  if (!c || !gvk_valid(gvk) || !obj)
    return;
  kcr_cache_note_write_rv(c, gvk, kcr_meta_namespace(obj), kcr_meta_name(obj),
                          kcr_meta_resource_version(obj));
}

void kcr_cache_note_write_rv(kcr_cache_t *c, const kcr_gvk *gvk, const char *ns, const char *name,
                             const char *rvs) {
  char skey[KCR_META_KEY_MAX], rkey[KCR_META_KEY_MAX + 2 * KCR_MAPPING_NAME_MAX];
  const char *group;
  uint64_t rv;
  ryow_t *r;
  int n;

  if (!c || !gvk_valid(gvk) || !name || !*name || !rvs)
    return;
  rv = parse_rv(rvs);
  group = str0(gvk->group);
  n = ns && *ns ? snprintf(skey, sizeof(skey), "%s/%s", ns, name)
                : snprintf(skey, sizeof(skey), "%s", name);
  if (!rv || n < 0 || (size_t)n >= sizeof(skey) ||
      ryow_key(group, gvk->kind, skey, rkey, sizeof(rkey)) != 0)
    return;
  pthread_mutex_lock(&c->ryow_mu);
  /* No informer yet: the one made later lists after this write returned. */
  if (!find_informer(c, group, strlen(group), gvk->kind, strlen(gvk->kind)))
    goto out;
  r = kcr__hmap_get(&c->ryow, rkey);
  if (r) {
    if (rv > r->rv)
      r->rv = rv;
    goto out;
  }
  if (c->ryow.len >= c->ryow_sweep) {
    ryow_sweep(c);
    c->ryow_sweep = c->ryow.len * 2 > RYOW_SWEEP_AT ? c->ryow.len * 2 : RYOW_SWEEP_AT;
  }
  if (c->ryow.len >= RYOW_MAX) {
    kcr_log(KCR_LOG_WARN, "cache", "%s: too many writes waiting to be seen; not waiting for %s",
            gvk->kind, skey);
    goto out;
  }
  r = kcr__malloc(sizeof(*r) + strlen(rkey) + 1);
  if (!r)
    goto out; /* best effort: the read will not wait */
  r->rv = rv;
  memcpy(r->key, rkey, strlen(rkey) + 1);
  if (kcr__hmap_put(&c->ryow, r->key, r) != 0)
    kcr__free(r);
out:
  pthread_mutex_unlock(&c->ryow_mu);
}

/* ryow_pending returns the noted version of rkey, 0 when none. */
static uint64_t ryow_pending(kcr_cache_t *c, const char *rkey) {
  ryow_t *r;
  uint64_t rv = 0;
  pthread_mutex_lock(&c->ryow_mu);
  r = kcr__hmap_get(&c->ryow, rkey);
  if (r)
    rv = r->rv;
  pthread_mutex_unlock(&c->ryow_mu);
  return rv;
}

/* ryow_done drops rkey's entry unless a newer write was noted meanwhile. */
static void ryow_done(kcr_cache_t *c, const char *rkey, uint64_t rv) {
  ryow_t *r;
  pthread_mutex_lock(&c->ryow_mu);
  r = kcr__hmap_get(&c->ryow, rkey);
  if (r && r->rv <= rv) {
    kcr__hmap_del(&c->ryow, rkey);
    kcr__free(r);
  }
  pthread_mutex_unlock(&c->ryow_mu);
}

/* ryow_wait_step sleeps until the informer may have moved, at most until deadline. */
static void ryow_wait_step(kcr_informer_t *inf, uint64_t want, int64_t deadline) {
  char rv[32];
  int64_t left = deadline - now_ns();
  snprintf(rv, sizeof(rv), "%" PRIu64, want);
  if (left > 0)
    kcr_informer_wait_for_resource_version(inf, rv, left < RYOW_STEP_NS ? left : RYOW_STEP_NS,
                                           NULL);
}

static int ryow_timeout(kcr_cache_t *c, const kcr_gvk *gvk, const char *skey, uint64_t want,
                        kcr_error_t *err) {
  char kl[2 * KCR_MAPPING_NAME_MAX];
  kind_label(gvk, kl, sizeof(kl));
  return kcr_error_set(err, KCR_ETIMEDOUT,
                       "cache: %s %s: the cache did not catch up with resourceVersion %" PRIu64
                       " written by this process within %" PRId64 " ms",
                       kl, skey, want, c->ryow_timeout_ns / KCR_NSEC_PER_MSEC);
}

/*
 * get_fresh reads skey from e's store into *out (NULL when absent) after waiting
 * for a noted write of it. Returns 0, KCR_ETIMEDOUT (the noted write was not seen
 * in time; the entry is dropped so the caller's retry reads what is there) or
 * KCR_ENOMEM.
 */
static int get_fresh(kcr_cache_t *c, entry_t *e, kcr_informer_t *inf, const kcr_gvk *gvk,
                     const char *skey, json_t **out, kcr_error_t *err) {
  char rkey[KCR_META_KEY_MAX + 2 * KCR_MAPPING_NAME_MAX];
  int64_t deadline = 0;
  int rc;

  *out = NULL;
  if (ryow_key(e->group, e->kind, skey, rkey, sizeof(rkey)) != 0)
    rkey[0] = '\0';
  for (;;) {
    json_t *obj = NULL;
    uint64_t want, have, done;
    /* processed_rv first: read after the store, it may cover a change that the
     * object read just before missed (the list path reads in this order too). */
    done = processed_rv(inf);
    rc = kcr_store_get_by_key(kcr_informer_store(inf), skey, &obj);
    if (rc && rc != KCR_ENOENT)
      return kcr_error_set(err, rc, "cache: %s %s: out of memory", e->kind, skey);
    want = rkey[0] ? ryow_pending(c, rkey) : 0;
    if (!want) {
      *out = obj;
      return 0;
    }
    have = obj ? parse_rv(kcr_meta_resource_version(obj)) : 0;
    if (have >= want || done >= want) {
      ryow_done(c, rkey, want);
      *out = obj;
      return 0;
    }
    json_decref(obj);
    if (!deadline)
      deadline = now_ns() + c->ryow_timeout_ns;
    else if (now_ns() >= deadline) {
      ryow_done(c, rkey, want);
      return ryow_timeout(c, gvk, skey, want, err);
    }
    ryow_wait_step(inf, want, deadline);
  }
}

typedef struct pending {
  char *skey; /* points into the copied rkey */
  char *rkey;
  uint64_t rv;
} pending_t;

/* collect_pending copies the noted writes of e's kind in ns (NULL: any). */
static int collect_pending(kcr_cache_t *c, entry_t *e, const char *ns, pending_t **out, size_t *n) {
  size_t prefix_len = strlen(e->group) + strlen(e->kind) + 2, ns_len = ns ? strlen(ns) : 0;
  size_t cap = 0;
  pending_t *v = NULL;
  int rc = 0;

  *out = NULL;
  *n = 0;
  pthread_mutex_lock(&c->ryow_mu);
  KCR__HMAP_FOREACH(&c->ryow, s) {
    ryow_t *r = s->val;
    const char *skey = r->key + prefix_len;
    if (strncmp(r->key, e->group, strlen(e->group)) != 0 || r->key[strlen(e->group)] != '/' ||
        strncmp(r->key + strlen(e->group) + 1, e->kind, strlen(e->kind)) != 0 ||
        r->key[prefix_len - 1] != '/')
      continue;
    if (ns && (strncmp(skey, ns, ns_len) != 0 || skey[ns_len] != '/'))
      continue;
    if (*n == cap) {
      size_t ncap = cap ? cap * 2 : 8;
      pending_t *nv = kcr__realloc(v, ncap * sizeof(*nv));
      if (!nv) {
        rc = KCR_ENOMEM;
        break;
      }
      v = nv;
      cap = ncap;
    }
    v[*n].rkey = kcr__strdup(r->key);
    if (!v[*n].rkey) {
      rc = KCR_ENOMEM;
      break;
    }
    v[*n].skey = v[*n].rkey + prefix_len;
    v[*n].rv = r->rv;
    (*n)++;
  }
  pthread_mutex_unlock(&c->ryow_mu);
  if (rc) {
    for (size_t i = 0; i < *n; i++)
      kcr__free(v[i].rkey);
    kcr__free(v);
    *n = 0;
    return rc;
  }
  *out = v;
  return 0;
}

/* part_of_key returns the part of e's informer that holds store key skey
 * ("ns/name" or "name"); NULL when its namespace is not cached. */
static kcr_informer_t *part_of_key(entry_t *e, const char *skey) {
  char ns[KCR_META_KEY_MAX];
  const char *slash = strchr(skey, '/');
  size_t n;
  if (!e->mapping.namespaced || !slash)
    return e->inf; /* cluster-scoped: one ordinary informer */
  n = (size_t)(slash - skey) < sizeof(ns) ? (size_t)(slash - skey) : sizeof(ns) - 1;
  memcpy(ns, skey, n);
  ns[n] = '\0';
  return kcr__informer_part_for(e->inf, ns);
}

/* list_wait_writes waits until every noted write of e's kind in ns is seen. */
static int list_wait_writes(kcr_cache_t *c, entry_t *e, const kcr_gvk *gvk, const char *ns,
                            kcr_error_t *err) {
  pending_t *p;
  size_t n, left;
  int64_t deadline;
  int rc = collect_pending(c, e, ns, &p, &n);

  if (rc)
    return kcr_error_set(err, rc, "cache: list %s: out of memory", e->kind);
  deadline = now_ns() + c->ryow_timeout_ns;
  left = n;
  while (left > 0) {
    uint64_t want = 0;
    const char *late = NULL;
    kcr_informer_t *late_inf = NULL;
    for (size_t i = 0; i < n; i++) {
      json_t *obj = NULL;
      kcr_informer_t *inf;
      int seen = 0;
      if (!p[i].rv)
        continue;
      inf = part_of_key(e, p[i].skey);
      if (!inf || processed_rv(inf) >= p[i].rv) /* not cached: nothing to wait for */
        seen = 1;
      else if (kcr_store_get_by_key(kcr_informer_store(inf), p[i].skey, &obj) == 0)
        seen = parse_rv(kcr_meta_resource_version(obj)) >= p[i].rv;
      json_decref(obj);
      if (!seen) {
        /* Older in the store, or absent (only the informer's progress can tell a
         * deletion from an add not yet processed). */
        if (p[i].rv > want) {
          want = p[i].rv;
          late = p[i].skey;
          late_inf = inf;
        }
        continue;
      }
      ryow_done(c, p[i].rkey, p[i].rv);
      p[i].rv = 0;
      left--;
    }
    if (left == 0)
      break;
    if (now_ns() >= deadline) {
      rc = ryow_timeout(c, gvk, late, want, err);
      for (size_t i = 0; i < n; i++)
        if (p[i].rv)
          ryow_done(c, p[i].rkey, p[i].rv);
      break;
    }
    ryow_wait_step(late_inf, want, deadline);
  }
  for (size_t i = 0; i < n; i++)
    kcr__free(p[i].rkey);
  kcr__free(p);
  return rc;
}

size_t kcr__cache_pending_writes(kcr_cache_t *c) {
  size_t n;
  pthread_mutex_lock(&c->ryow_mu);
  n = c->ryow.len;
  pthread_mutex_unlock(&c->ryow_mu);
  return n;
}

uint64_t kcr__cache_pending_rv(kcr_cache_t *c, const kcr_gvk *gvk, const char *key) {
  char rkey[KCR_META_KEY_MAX + 2 * KCR_MAPPING_NAME_MAX];
  if (ryow_key(str0(gvk->group), gvk->kind, key, rkey, sizeof(rkey)) != 0)
    return 0;
  return ryow_pending(c, rkey);
}

/* ---- lifecycle ---- */

int kcr_cache_create(const kcr_cache_options *o, kcr_cache_t **out, kcr_error_t *err) {
  kcr_cache_t *c;
  int rc;

  *out = NULL;
  if (!o || !o->client)
    return kcr_error_set(err, KCR_EINVAL, "cache: a client is required");
  c = kcr__calloc(1, sizeof(*c));
  if (!c)
    return kcr_error_set(err, KCR_ENOMEM, "cache: out of memory");
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->ryow_mu, NULL);
  c->client = o->client;
  c->resync_ns = o->resync_period_ns;
  c->metrics = o->metrics;
  c->streaming_list = watch_list_default();
  c->json_wire = o->json_wire;
  c->fail_on_missing = o->reader_fail_on_missing_informer;
  c->resync_jitter = o->resync_jitter;
  c->sync_timeout_ns = o->sync_timeout_ns > 0 ? o->sync_timeout_ns : DEFAULT_SYNC_TIMEOUT_NS;
  c->ryow_timeout_ns = o->ryow_timeout_ns > 0 ? o->ryow_timeout_ns : DEFAULT_RYOW_TIMEOUT_NS;
  c->ryow_sweep = RYOW_SWEEP_AT;
  if (o->default_ns && *o->default_ns && o->default_namespaces_len) {
    rc = kcr_error_set(err, KCR_EINVAL,
                       "cache: both default_ns (\"%s\") and default_namespaces; give one",
                       o->default_ns);
    goto fail;
  }
  if ((rc = kcr__namespaces_check(o->default_namespaces, o->default_namespaces_len, "cache",
                                  err)) != 0)
    goto fail;
  if (o->default_ns && *o->default_ns)
    rc = strv_dup(&o->default_ns, c->default_nss_len = 1, &c->default_nss);
  else
    rc = strv_dup(o->default_namespaces, c->default_nss_len = o->default_namespaces_len,
                  &c->default_nss);
  if (rc) {
    c->default_nss_len = 0;
    rc = kcr_error_set(err, KCR_ENOMEM, "cache: out of memory");
    goto fail;
  }
  if (o->mapper) {
    c->mapper = o->mapper;
  } else {
    if ((rc = kcr_rest_mapper_create(o->client, &c->mapper, err)) != 0)
      goto fail;
    c->own_mapper = 1;
  }
  *out = c;
  return 0;

fail:
  kcr_cache_destroy(c);
  return rc;
}

void kcr_cache_destroy(kcr_cache_t *c) {
  if (!c)
    return;
  /* Stop every informer first, so that no transform runs while entries go. */
  KCR__LIST_EACH(&c->entries, entry_t, link, e)
  if (e->inf)
    kcr_informer_stop(e->inf);
  while (!kcr__list_empty(&c->entries)) {
    entry_t *e = KCR__CONTAINER_OF(kcr__list_pop_front(&c->entries), entry_t, link);
    entry_free(e);
  }
  KCR__HMAP_FOREACH(&c->ryow, s) {
    kcr__free(s->val);
  }
  kcr__hmap_free(&c->ryow);
  if (c->own_mapper)
    kcr_rest_mapper_destroy(c->mapper);
  strv_free(c->default_nss, c->default_nss_len);
  kcr_shard_set_destroy(c->shard);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->ryow_mu);
  kcr__free(c);
}

int kcr_cache_set_by_object(kcr_cache_t *c, const kcr_gvk *gvk, const kcr_cache_by_object *o,
                            kcr_error_t *err) {
  entry_t *e;
  char *ns = NULL, *ls = NULL, *fs = NULL, **nss = NULL;
  int rc = 0;

  if (!gvk_valid(gvk) || !o)
    return kcr_error_set(err, KCR_EINVAL, "cache: a kind and options are required");
  if (o->ns && *o->ns && o->namespaces_len)
    return kcr_error_set(err, KCR_EINVAL,
                         "cache: %s: both ns (\"%s\") and a set of namespaces; give one", gvk->kind,
                         o->ns);
  if ((rc = kcr__namespaces_check(o->namespaces, o->namespaces_len, "cache", err)) != 0)
    return rc;
  if (o->label_selector && *o->label_selector) {
    kcr_selector_t *sel = NULL;
    rc = kcr_selector_parse(o->label_selector, &sel, err);
    kcr_selector_destroy(sel);
    if (rc)
      return rc;
  }
  ns = dup_opt(o->ns);
  ls = dup_opt(o->label_selector);
  fs = dup_opt(o->field_selector);
  if ((o->ns && *o->ns && !ns) || (o->label_selector && *o->label_selector && !ls) ||
      (o->field_selector && *o->field_selector && !fs) ||
      strv_dup(o->namespaces, o->namespaces_len, &nss) != 0) {
    rc = kcr_error_set(err, KCR_ENOMEM, "cache: out of memory");
    goto out;
  }
  pthread_mutex_lock(&c->mu);
  e = ensure_entry(c, gvk);
  if (!e) {
    rc = kcr_error_set(err, KCR_ENOMEM, "cache: out of memory");
  } else if (e->inf) {
    rc = kcr_error_set(err, KCR_EEXIST, "cache: the informer of %s already exists", gvk->kind);
  } else {
    kcr__free(e->ns);
    kcr__free(e->label_selector);
    kcr__free(e->field_selector);
    strv_free(e->nss, e->nss_len);
    e->ns = ns;
    e->label_selector = ls;
    e->field_selector = fs;
    e->nss = nss;
    e->nss_len = nss ? o->namespaces_len : 0;
    ns = ls = fs = NULL;
    nss = NULL;
    e->metadata_only = o->metadata_only;
    e->transform = o->transform;
    e->transform_data = o->transform_data;
  }
  pthread_mutex_unlock(&c->mu);
out:
  kcr__free(ns);
  kcr__free(ls);
  kcr__free(fs);
  strv_free(nss, o->namespaces_len);
  return rc;
}

int kcr__cache_set_shard(kcr_cache_t *c, const kcr_shard_set_t *set, kcr_shard_key key,
                         kcr_error_t *err) {
  kcr_shard_set_t *copy = NULL;
  int rc;
  if ((rc = kcr_shard_set_copy(set, &copy, err)) != 0)
    return rc;
  pthread_mutex_lock(&c->mu);
  kcr_shard_set_destroy(c->shard);
  c->shard = copy;
  c->shard_key = key;
  KCR__LIST_EACH(&c->entries, entry_t, link, e) {
    if (e->inf && e->sharded && rc == 0)
      rc = kcr_informer_set_shard(e->inf, set, err);
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

void kcr__cache_set_shard_keyer(kcr_cache_t *c, kcr__cache_shard_keyer fn, void *data) {
  pthread_mutex_lock(&c->mu);
  c->keyer = fn;
  c->keyer_data = data;
  pthread_mutex_unlock(&c->mu);
}

int kcr_cache_get_informer(kcr_cache_t *c, const kcr_gvk *gvk, kcr_informer_t **out,
                           kcr_error_t *err) {
  entry_t *e;
  int rc = get_entry(c, gvk, 1, 0, &e, err);
  *out = rc ? NULL : e->inf;
  return rc;
}

int kcr_cache_get_metadata_informer(kcr_cache_t *c, const kcr_gvk *gvk, kcr_informer_t **out,
                                    kcr_error_t *err) {
  entry_t *e;
  int rc = 0;
  *out = NULL;
  if (!gvk_valid(gvk))
    return kcr_error_set(err, KCR_EINVAL, "cache: a kind needs a version and a kind");
  pthread_mutex_lock(&c->mu);
  e = ensure_entry(c, gvk);
  if (!e)
    rc = kcr_error_set(err, KCR_ENOMEM, "cache: out of memory");
  else if (!e->inf)
    e->metadata_only = true; /* whoever makes the informer now makes it so */
  else if (!e->metadata_only)
    rc = kcr_error_set(err, KCR_EEXIST,
                       "cache: %s is cached with whole objects already (a read or a watch made "
                       "its informer first); a kind is cached one way",
                       gvk->kind);
  pthread_mutex_unlock(&c->mu);
  return rc ? rc : kcr_cache_get_informer(c, gvk, out, err);
}

int kcr_cache_add_index(kcr_cache_t *c, const kcr_gvk *gvk, const char *name, kcr_index_fn fn,
                        void *data, kcr_error_t *err) {
  char idx[KCR_MAPPING_NAME_MAX + sizeof(FIELD_PREFIX)];
  kcr_informer_t *const *parts;
  entry_t *e;
  size_t n;
  int rc;

  if (!name || !*name || !fn)
    return kcr_error_set(err, KCR_EINVAL, "cache: an index needs a name and a function");
  if ((size_t)snprintf(idx, sizeof(idx), FIELD_PREFIX "%s", name) >= sizeof(idx))
    return kcr_error_set(err, KCR_ETOOBIG, "cache: index name too long");
  if ((rc = get_entry(c, gvk, 0, 0, &e, err)) != 0)
    return rc;
  n = kcr__informer_parts(e->inf, &parts);
  for (size_t i = 0; i < n && rc == 0; i++) /* every namespace's store */
    rc = kcr_store_add_indexer(kcr_informer_store(parts[i]), idx, fn, data, err);
  if (rc == KCR_EEXIST)
    kcr_error_set(err, rc, "cache: %s already has an index named %s", gvk->kind, name);
  return rc;
}

int kcr_cache_wait_for_sync(kcr_cache_t *c, int64_t timeout_ns, kcr_error_t *err) {
  typedef struct waited {
    kcr_informer_t *inf;
    const char *kind; /* lives as long as the cache */
  } waited_t;
  int64_t deadline = now_ns() + timeout_ns;
  waited_t *w = NULL;
  size_t n = 0, i;
  char names[KCR_ERROR_MESSAGE_MAX] = "";
  kcr_error_t first;
  int rc = 0;

  kcr_error_clear(&first);
  pthread_mutex_lock(&c->mu);
  KCR__LIST_EACH(&c->entries, entry_t, link, e)
  n += e->inf != NULL;
  w = kcr__calloc(n ? n : 1, sizeof(*w));
  if (!w) {
    pthread_mutex_unlock(&c->mu);
    kcr_error_set(err, KCR_ENOMEM, "cache: out of memory");
    return KCR_ENOMEM;
  }
  n = 0;
  KCR__LIST_EACH(&c->entries, entry_t, link, e) {
    if (!e->inf)
      continue;
    if (!e->started && (rc = kcr_informer_start(e->inf, err)) != 0)
      break;
    e->started = 1;
    w[n].inf = e->inf;
    w[n++].kind = e->kind;
  }
  pthread_mutex_unlock(&c->mu);
  for (i = 0; i < n && rc == 0; i++) {
    int64_t left = deadline - now_ns();
    kcr_error_t e1;
    kcr_error_clear(&e1);
    if (kcr_informer_wait_for_sync(w[i].inf, left > 0 ? left : 0, &e1) != 0) {
      size_t used = strlen(names);
      snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", w[i].kind);
      if (first.code == KCR_OK)
        first = e1;
    }
  }
  kcr__free(w);
  if (rc)
    return rc;
  if (first.code != KCR_OK)
    return kcr_error_set(err, KCR_ETIMEDOUT, "cache: timed out waiting for %s to sync: %s", names,
                         first.message);
  return 0;
}

/* ---- reader ---- */

/*
 * unknown_ns refuses a read in ns, outside e's namespaces: with one namespace
 * as the cache always worded it, with a set as controller-runtime's
 * multiNamespaceCache does ("unable to get: ns/name because of unknown
 * namespace for the cache"), naming the set.
 */
static int unknown_ns(const entry_t *e, const kcr_gvk *gvk, const char *ns, const char *name,
                      kcr_error_t *err) {
  char set[256];
  size_t off = 0;
  if (e->nscope == 1) {
    kcr_error_set(err, KCR_EINVAL,
                  "cache: %s: namespace \"%s\" is not cached (the cache holds only \"%s\")",
                  gvk->kind, ns, e->scope[0]);
    return KCR_EINVAL;
  }
  set[0] = '\0';
  for (size_t i = 0; i < e->nscope && off < sizeof(set); i++) {
    int k = snprintf(set + off, sizeof(set) - off, "%s%s", i ? ", " : "", e->scope[i]);
    off += k > 0 ? (size_t)k : 0;
  }
  if (name)
    kcr_error_set(err, KCR_EINVAL,
                  "cache: %s: unable to get: %s/%s because of unknown namespace for the cache "
                  "(it holds namespaces %s)",
                  gvk->kind, ns, name, set);
  else
    kcr_error_set(err, KCR_EINVAL,
                  "cache: %s: unable to list: %s because of unknown namespace for the cache (it "
                  "holds namespaces %s)",
                  gvk->kind, ns, set);
  return KCR_EINVAL;
}

/*
 * prepare_read finds gvk's started informer, checks ns against its scope (a
 * namespaced get, name set, needs a namespace) and waits for its sync.
 */
static int prepare_read(kcr_cache_t *c, const kcr_gvk *gvk, const char *ns, const char *name,
                        entry_t **out, kcr_error_t *err) {
  entry_t *e;
  int rc = get_entry(c, gvk, 1, 1, &e, err);
  *out = NULL;
  if (rc)
    return rc;
  /* Explicit codes: the analyzer cannot see that kcr_error_set returns its code. */
  if (!e->mapping.namespaced && ns && *ns) {
    kcr_error_set(err, KCR_EINVAL,
                  "cache: %s is cluster-scoped; read it without a namespace (got \"%s\")",
                  gvk->kind, ns);
    return KCR_EINVAL;
  }
  if (e->mapping.namespaced && name && (!ns || !*ns)) {
    kcr_error_set(err, KCR_EINVAL, "cache: %s is namespaced; a get needs a namespace", gvk->kind);
    return KCR_EINVAL;
  }
  if (e->nscope && ns && *ns && !kcr__informer_part_for(e->inf, ns))
    return unknown_ns(e, gvk, ns, name, err);
  if ((rc = kcr_informer_wait_for_sync(e->inf, c->sync_timeout_ns, err)) != 0)
    return rc;
  *out = e;
  return 0;
}

/* not_found fills err as the API server would for a missing object. */
static int not_found(entry_t *e, const char *name, kcr_error_t *err) {
  if (err && err->code == KCR_OK) {
    if (e->group[0])
      kcr_error_set(err, KCR_EAPI, "%s.%s \"%s\" not found", e->mapping.resource, e->group, name);
    else
      kcr_error_set(err, KCR_EAPI, "%s \"%s\" not found", e->mapping.resource, name);
    err->http_status = 404;
    snprintf(err->reason, sizeof(err->reason), "NotFound");
  }
  return KCR_EAPI;
}

static int cache_get(kcr_cache_t *c, const kcr_gvk *gvk, const char *ns, const char *name,
                     json_t **out, kcr_error_t *err) {
  char skey[KCR_META_KEY_MAX];
  entry_t *e;
  json_t *obj;
  int rc, n;

  *out = NULL;
  if (!c || !name || !*name)
    return kcr_error_set(err, KCR_EINVAL, "cache: get needs a name");
  if ((rc = prepare_read(c, gvk, ns, name, &e, err)) != 0)
    return rc;
  n = e->mapping.namespaced ? snprintf(skey, sizeof(skey), "%s/%s", ns, name)
                            : snprintf(skey, sizeof(skey), "%s", name);
  if (n < 0 || (size_t)n >= sizeof(skey))
    return kcr_error_set(err, KCR_EINVAL, "cache: %s: name too long", gvk->kind);
  if ((rc = get_fresh(c, e, kcr__informer_part_for(e->inf, e->mapping.namespaced ? ns : NULL), gvk,
                      skey, &obj, err)) != 0)
    return rc;
  if (!obj)
    return not_found(e, name, err);
  *out = obj;
  return 0;
}

/* keep_matching appends to dst (stealing obj) when obj matches sel (may be NULL). */
static int keep_matching(json_t *dst, json_t *obj, const kcr_selector_t *sel) {
  if (sel && !kcr_selector_matches_obj(sel, obj)) {
    json_decref(obj);
    return 0;
  }
  return json_array_append_new(dst, obj) == 0 ? 0 : KCR_ENOMEM;
}

/* list_by_field lists the objects of part inf of e whose field index holds
 * value, in ns (NULL: all). */
static int list_by_field(entry_t *e, kcr_informer_t *inf, const char *index, const char *value,
                         const char *ns, const kcr_selector_t *sel, json_t *dst, kcr_error_t *err) {
  char idx[KCR_MAPPING_NAME_MAX + sizeof(FIELD_PREFIX)];
  kcr_store_t *st = kcr_informer_store(inf);
  char **keys = NULL;
  size_t n = 0, ns_len = ns ? strlen(ns) : 0;
  int rc;

  if ((size_t)snprintf(idx, sizeof(idx), FIELD_PREFIX "%s", index) >= sizeof(idx))
    return kcr_error_set(err, KCR_EINVAL, "cache: %s has no index named %s", e->kind, index);
  rc = kcr_store_index_keys(st, idx, value, &keys, &n);
  if (rc == KCR_ENOENT)
    return kcr_error_set(err, KCR_EINVAL,
                         "cache: %s has no index named %s (register it with kcr_cache_add_index)",
                         e->kind, index);
  if (rc)
    return kcr_error_set(err, rc, "cache: list %s: out of memory", e->kind);
  for (size_t i = 0; i < n && rc == 0; i++) {
    json_t *obj = NULL;
    int grc;
    if (ns && (strncmp(keys[i], ns, ns_len) != 0 || keys[i][ns_len] != '/'))
      continue;
    grc = kcr_store_get_by_key(st, keys[i], &obj);
    if (grc == KCR_ENOENT)
      continue; /* deleted since the index was read */
    rc = grc ? grc : keep_matching(dst, obj, sel);
  }
  kcr__free(keys);
  if (rc)
    return kcr_error_set(err, rc, "cache: list %s: out of memory", e->kind);
  return 0;
}

/* fsel_t: what a field selector asks of the cache, reduced to what it can do. */
typedef struct fsel {
  kcr__fieldsel_t sel; /* the parsed terms (api/fieldsel_internal.h) */
  const char *ns;      /* metadata.namespace= */
  const char *name;    /* metadata.name= */
  const char *index;   /* an indexed field= */
  const char *value;
} fsel_t;

/* parse_fsel parses sel and sorts its terms into what the cache answers. */
static int parse_fsel(const char *sel, fsel_t *f, const char *kind, kcr_error_t *err) {
  int rc;
  f->ns = f->name = f->index = f->value = NULL;
  if ((rc = kcr__fieldsel_parse(sel, &f->sel, err)) != 0) {
    kcr_error_prefix(err, "cache: list %s: ", kind);
    return rc;
  }
  for (size_t i = 0; i < f->sel.n; i++) {
    const kcr__fieldsel_term_t *t = &f->sel.terms[i];
    if (strcmp(t->field, "metadata.namespace") == 0) {
      if (t->negate)
        continue; /* fsel_keeps */
      if (f->ns && strcmp(f->ns, t->value) != 0)
        return kcr_error_set(err, KCR_EINVAL,
                             "cache: list %s: field selector asks for two namespaces", kind);
      f->ns = t->value;
    } else if (strcmp(t->field, "metadata.name") == 0) {
      if (t->negate)
        continue; /* fsel_keeps */
      if (f->name)
        return kcr_error_set(err, KCR_EINVAL, "cache: list %s: field selector asks for two names",
                             kind);
      f->name = t->value;
    } else if (!t->negate && !f->index) {
      f->index = t->field;
      f->value = t->value;
    } else {
      return kcr_error_set(err, KCR_EINVAL,
                           "cache: list %s: field selector term on %s: the cache answers "
                           "metadata.name, metadata.namespace and one equality on an indexed field",
                           kind, t->field);
    }
  }
  return 0;
}

/* fsel_keeps applies the name and != terms to obj. */
static bool fsel_keeps(const fsel_t *f, const json_t *obj) {
  const char *name = kcr_meta_name(obj), *ns = kcr_meta_namespace(obj);
  if (f->name && strcmp(f->name, name) != 0)
    return false;
  for (size_t i = 0; i < f->sel.n; i++) {
    const kcr__fieldsel_term_t *t = &f->sel.terms[i];
    if (!t->negate)
      continue;
    if (strcmp(t->field, "metadata.name") == 0 && strcmp(t->value, name) == 0)
      return false;
    if (strcmp(t->field, "metadata.namespace") == 0 && strcmp(t->value, ns) == 0)
      return false;
  }
  return true;
}

static int cmp_by_key(const void *a, const void *b) {
  json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
  int c = strcmp(kcr_meta_namespace(x), kcr_meta_namespace(y));
  return c ? c : strcmp(kcr_meta_name(x), kcr_meta_name(y));
}

/* list_rv writes the List's resourceVersion: the store's, or over a namespace
 * set the highest of its stores' (one etcd orders them all). */
static void list_rv(entry_t *e, char *rv, size_t size) {
  kcr_informer_t *const *parts;
  size_t n = kcr__informer_parts(e->inf, &parts);
  uint64_t best = 0;
  rv[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    char one[64] = "";
    kcr_store_resource_version(kcr_informer_store(parts[i]), one, sizeof(one));
    if (n == 1 || parse_rv(one) > best) {
      best = parse_rv(one);
      snprintf(rv, size, "%s", one);
    }
  }
}

/* make_list sorts items by namespace/name, applies the field selector's filters,
 * continue and limit, and wraps what is left in a List object. Steals items. */
static int make_list(entry_t *e, const kcr_gvk *gvk, json_t *items, const fsel_t *f,
                     const kcr_list_options *o, json_t **out, kcr_error_t *err) {
  size_t n = json_array_size(items), kept = 0;
  /* An array of pointers to sort: the elements are json_t *, on purpose. */
  json_t **v = n ? kcr__calloc(n, sizeof(json_t *)) : NULL; // NOLINT(bugprone-sizeof-expression)
  json_t *dst = json_array(), *meta = json_object();
  char av[KCR_MAPPING_NAME_MAX * 2 + 2], kind[KCR_MAPPING_NAME_MAX + 8], rv[64] = "";
  char last[KCR_META_KEY_MAX] = "";
  int rc = 0, cut = 0;

  *out = NULL;
  if ((n && !v) || !dst || !meta) {
    rc = kcr_error_set(err, KCR_ENOMEM, "cache: list %s: out of memory", gvk->kind);
    goto done;
  }
  for (size_t i = 0; i < n; i++)
    v[i] = json_array_get(items, i);
  if (n > 1)
    qsort(v, n, sizeof(json_t *), cmp_by_key); // NOLINT(bugprone-sizeof-expression)
  for (size_t i = 0; i < n && rc == 0; i++) {
    char key[KCR_META_KEY_MAX];
    if (!fsel_keeps(f, v[i]))
      continue;
    if (kcr_meta_key(v[i], key, sizeof(key)) != 0)
      continue;
    if (o->continue_token && *o->continue_token && strcmp(key, o->continue_token) <= 0)
      continue;
    if (o->limit > 0 && (long)kept == o->limit) {
      cut = 1;
      break;
    }
    if (json_array_append(dst, v[i]) != 0)
      rc = kcr_error_set(err, KCR_ENOMEM, "cache: list %s: out of memory", gvk->kind);
    snprintf(last, sizeof(last), "%s", key);
    kept++;
  }
  if (rc)
    goto done;
  kcr_gvk_api_version(gvk, av, sizeof(av));
  snprintf(kind, sizeof(kind), "%sList", gvk->kind);
  list_rv(e, rv, sizeof(rv));
  if ((rv[0] && json_object_set_new(meta, "resourceVersion", json_string(rv)) != 0) ||
      (cut && json_object_set_new(meta, "continue", json_string(last)) != 0)) {
    rc = kcr_error_set(err, KCR_ENOMEM, "cache: list %s: out of memory", gvk->kind);
    goto done;
  }
  *out = json_pack("{s:s, s:s, s:O, s:O}", "apiVersion", av, "kind", kind, "metadata", meta,
                   "items", dst);
  if (!*out)
    rc = kcr_error_set(err, KCR_ENOMEM, "cache: list %s: out of memory", gvk->kind);
done:
  kcr__free(v);
  json_decref(items);
  json_decref(dst);
  json_decref(meta);
  return rc;
}

static int cache_list(kcr_cache_t *c, const kcr_gvk *gvk, const kcr_list_options *o, json_t **out,
                      kcr_error_t *err) {
  kcr_list_options none;
  kcr_selector_t *sel = NULL;
  json_t *all = NULL, *dst = NULL, *obj;
  const char *ns, *index, *value;
  kcr_informer_t *one, *const *parts;
  size_t i, nparts;
  fsel_t f;
  entry_t *e;
  int rc;

  *out = NULL;
  if (!c)
    return kcr_error_set(err, KCR_EINVAL, "cache: no cache");
  if (!o) {
    memset(&none, 0, sizeof(none));
    o = &none;
  }
  ns = o->ns && *o->ns ? o->ns : NULL;
  index = o->index && *o->index ? o->index : NULL;
  value = o->index_value;
  if (index && !value)
    return kcr_error_set(err, KCR_EINVAL, "cache: list %s: an index needs a value", gvk->kind);
  if ((rc = parse_fsel(o->field_selector, &f, gvk->kind, err)) != 0)
    return rc;
  if (f.ns) {
    if (ns && strcmp(ns, f.ns) != 0)
      return kcr_error_set(err, KCR_EINVAL,
                           "cache: list %s: the namespace and the field selector disagree",
                           gvk->kind);
    ns = f.ns;
  }
  if (f.index) {
    if (index)
      return kcr_error_set(err, KCR_EINVAL,
                           "cache: list %s: both an index and an indexed field selector term",
                           gvk->kind);
    index = f.index;
    value = f.value;
  }
  if (o->label_selector && *o->label_selector &&
      (rc = kcr_selector_parse(o->label_selector, &sel, err)) != 0)
    return rc;
  if ((rc = prepare_read(c, gvk, ns, NULL, &e, err)) != 0 ||
      (rc = list_wait_writes(c, e, gvk, ns, err)) != 0)
    goto done;
  dst = json_array();
  if (!dst) {
    rc = kcr_error_set(err, KCR_ENOMEM, "cache: out of memory");
    goto done;
  }
  /* One namespace: its part. None: every part, merged (make_list sorts). */
  one = ns && e->mapping.namespaced ? kcr__informer_part_for(e->inf, ns) : NULL;
  nparts = one ? 1 : kcr__informer_parts(e->inf, &parts);
  if (one)
    parts = &one;
  for (size_t p = 0; p < nparts && rc == 0; p++) {
    kcr_store_t *st = kcr_informer_store(parts[p]);
    if (index) {
      rc = list_by_field(e, parts[p], index, value, ns, sel, dst, err);
      continue;
    }
    rc =
        ns ? kcr_store_by_index(st, KCR_STORE_INDEX_NAMESPACE, ns, &all) : kcr_store_list(st, &all);
    if (rc) {
      rc = kcr_error_set(err, rc, "cache: list %s: out of memory", gvk->kind);
      break;
    }
    json_array_foreach(all, i, obj) {
      if ((!sel || kcr_selector_matches_obj(sel, obj)) && json_array_append(dst, obj) != 0) {
        rc = kcr_error_set(err, KCR_ENOMEM, "cache: out of memory");
        break;
      }
    }
    json_decref(all);
    all = NULL;
  }

done:
  kcr_selector_destroy(sel);
  json_decref(all);
  if (rc) {
    json_decref(dst);
    return rc;
  }
  return make_list(e, gvk, dst, &f, o, out, err); /* steals dst */
}

/* ---- traced reads (kcr/trace.h): one INTERNAL span per read, so a
 * reconcile's trace shows its cache reads beside its API requests ---- */

static kcr_span_t *read_span(const char *verb, const kcr_gvk *gvk, const char *ns,
                             const char *name) {
  char sname[KCR_SPAN_NAME_MAX];
  kcr_span_t *s;
  if (!kcr_trace_enabled())
    return NULL;
  snprintf(sname, sizeof(sname), "cache %s %s", verb, gvk && gvk->kind ? gvk->kind : "");
  s = kcr_span_start(sname, KCR_SPAN_INTERNAL, NULL);
  if (gvk && gvk->kind)
    kcr_span_set_str(s, "k8s.kind", gvk->kind);
  if (ns && *ns)
    kcr_span_set_str(s, "k8s.namespace.name", ns);
  if (name)
    kcr_span_set_str(s, "k8s.object.name", name);
  return s;
}

static void read_span_end(kcr_span_t *s, int rc, const kcr_error_t *err) {
  if (s && rc != 0) {
    kcr_span_set_str(s, "kcr.error", kcr_err_name(rc));
    if (!(err && err->http_status == 404)) /* NotFound is an answer, not a failure */
      kcr_span_set_status(s, KCR_SPAN_STATUS_ERROR, err && err->message[0] ? err->message : "");
  }
  kcr_span_end(s);
}

int kcr_cache_get(kcr_cache_t *c, const kcr_gvk *gvk, const char *ns, const char *name,
                  json_t **out, kcr_error_t *err) {
  kcr_span_t *s = read_span("get", gvk, ns, name);
  int rc = cache_get(c, gvk, ns, name, out, err);
  read_span_end(s, rc, err);
  return rc;
}

int kcr_cache_list(kcr_cache_t *c, const kcr_gvk *gvk, const kcr_list_options *o, json_t **out,
                   kcr_error_t *err) {
  kcr_span_t *s = read_span("list", gvk, o ? o->ns : NULL, NULL);
  int rc = cache_list(c, gvk, o, out, err);
  if (s && rc == 0 && *out)
    kcr_span_set_int(s, "kcr.items", (int64_t)json_array_size(json_object_get(*out, "items")));
  read_span_end(s, rc, err);
  return rc;
}

/* ---- diagnostics (/debug/informers) ---- */

json_t *kcr_cache_diagnostics(kcr_cache_t *c) {
  json_t *arr = json_array();
  kcr_informer_t **infs = NULL;
  size_t n = 0, cap = 0;
  if (!arr || !c)
    return arr;
  /* Informers live as long as the cache: collect them under mu, then ask each
   * without holding it (diagnostics take the informer's own locks). */
  pthread_mutex_lock(&c->mu);
  KCR__LIST_EACH(&c->entries, entry_t, link, e) {
    kcr_informer_t *const *parts;
    if (e->inf)
      cap += kcr__informer_parts(e->inf, &parts);
  }
  infs = cap ? kcr__calloc(cap, sizeof(kcr_informer_t *)) : NULL;
  /* One entry per namespace of a namespace set. */
  if (infs)
    KCR__LIST_EACH(&c->entries, entry_t, link, e) {
      kcr_informer_t *const *parts;
      size_t np = e->inf ? kcr__informer_parts(e->inf, &parts) : 0;
      for (size_t i = 0; i < np && n < cap; i++)
        infs[n++] = parts[i];
    }
  pthread_mutex_unlock(&c->mu);
  if (cap && !infs) {
    json_decref(arr);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *d = kcr_informer_diagnostics(infs[i]);
    if (!d || json_array_append_new(arr, d) != 0) {
      json_decref(arr);
      arr = NULL;
      break;
    }
  }
  kcr__free(infs);
  return arr;
}
