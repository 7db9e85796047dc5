/* SPDX-License-Identifier: MIT */
/*
 * metrics.c: the Prometheus registry (kcr/metrics.h), the metrics layer. It sits
 * right above util and below everything else, so each layer registers its own
 * series on the registry it is handed (the client its rest_client_*, the
 * workqueue its workqueue_*, the controller its controller_runtime_*, the
 * elector leader_election_master_status); nothing here knows those layers.
 *
 * DESIGN. A registry is a list of families plus a list of collectors under one
 * mutex. A family owns its children (one per label-value tuple) in a hash map
 * (util/hmap.h) under the family's own mutex, and also links them in creation
 * order for rendering. A child's numbers are atomics: a counter or gauge keeps
 * the bits of a double (updated by compare-and-swap), a histogram keeps one
 * non-cumulative atomic count per bucket plus count and sum, so an update on the
 * hot path takes no lock and a scrape never blocks a writer for long. Children
 * are never freed before the registry, so callers cache child pointers.
 *
 * Rendering builds one text body per metric name (registered families and
 * collector output go through the same emit path, so a name that several
 * collectors produce, like workqueue_depth for many queues, gets one HELP/TYPE
 * block), sorts the names and writes the blocks. Collectors run first, so a
 * collector may refresh gauges it registered (the workqueue's unfinished-work
 * gauges are computed at scrape time) and the families then show the fresh
 * values. Lock order: registry mutex, then a family's mutex (or a lock a
 * collector takes). Collectors run with the registry mutex held, which is also
 * what makes kcr_metrics_unregister_collector a barrier.
 */
#include <assert.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kcr/metrics.h"
#include "metrics/metrics_internal.h"
#include "util/alloc.h"
#include "util/file.h"
#include "util/hmap.h"
#include "util/list.h"

struct kcr_metric_child {
  kcr_metric_t *family;
  kcr__list_node_t link;       /* in family->series; protected by family->mu */
  char *key;                   /* the family map's key (child_key), immutable */
  char **values;               /* nlabels strings, immutable */
  _Atomic uint64_t value_bits; /* counter/gauge value, or histogram sum */
  _Atomic uint64_t count;      /* histogram observations */
  _Atomic uint64_t *buckets;   /* histogram: nbounds non-cumulative counts */
};

struct kcr_metric {
  kcr_metric_type type;
  char *name;
  char *help;
  size_t nlabels;
  char **labels;
  size_t nbounds;
  double *bounds;
  pthread_mutex_t mu;
  kcr__hmap_t children;  /* child_key -> child; protected by mu */
  size_t nchildren;      /* protected by mu */
  kcr__list_t series;    /* children, oldest first; protected by mu */
  kcr__list_node_t link; /* in the registry's families; its mu */
};

struct kcr_metrics_collector {
  kcr_metrics_collect_cb cb;
  void *data;
  kcr__list_node_t link; /* in the registry's collectors; its mu */
};

struct kcr_metrics_registry {
  pthread_mutex_t mu;
  kcr__list_t families;   /* kcr_metric_t, newest first; protected by mu */
  kcr__list_t collectors; /* kcr_metrics_collector_t, in order; protected by mu */
};

/* ---- atomics on doubles ---- */

static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
  return u;
}

static double bitsd(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof(d));
  return d;
}

static void atomic_add_double(_Atomic uint64_t *p, double v) {
  uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(p, &old, dbits(bitsd(old) + v),
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
}

/* ---- names ---- */

static int valid_metric_name(const char *s) {
  if (!s || !*s)
    return 0;
  for (size_t i = 0; s[i]; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
             (i > 0 && c >= '0' && c <= '9');
    if (!ok)
      return 0;
  }
  return 1;
}

static int valid_label_name(const char *s) {
  if (!s || !*s || strncmp(s, "__", 2) == 0)
    return 0;
  for (size_t i = 0; s[i]; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
             (i > 0 && c >= '0' && c <= '9');
    if (!ok)
      return 0;
  }
  return 1;
}

/* ---- registry ---- */

static int make_metrics_registry(kcr_metrics_registry_t **out) {
  kcr_metrics_registry_t *r = kcr__calloc(1, sizeof(*r));
  *out = NULL;
  if (!r)
    return KCR_ENOMEM;
  pthread_mutex_init(&r->mu, NULL);
  *out = r;
  return 0;
}

int kcr_metrics_registry_create(kcr_metrics_registry_t **out, kcr_error_t *err) {
  int rc = make_metrics_registry(out);
  if (rc)
    kcr_error_set(err, rc, "metrics registry: %s",
                  rc == KCR_EINVAL ? "invalid arguments" : kcr_strerror(rc));
  return rc;
}

static void free_strv(char **v, size_t n) {
  if (!v)
    return;
  for (size_t i = 0; i < n; i++)
    kcr__free(v[i]);
  kcr__free(v);
}

static void child_free(kcr_metric_child_t *c, size_t nlabels) {
  free_strv(c->values, nlabels);
  kcr__free(c->key);
  kcr__free((void *)c->buckets);
  kcr__free(c);
}

static void family_free(kcr_metric_t *m) {
  if (!m)
    return;
  KCR__LIST_FOREACH_SAFE(&m->series, n, next) {
    child_free(KCR__CONTAINER_OF(n, kcr_metric_child_t, link), m->nlabels);
  }
  kcr__hmap_free(&m->children);
  kcr__free(m->name);
  kcr__free(m->help);
  free_strv(m->labels, m->nlabels);
  kcr__free(m->bounds);
  pthread_mutex_destroy(&m->mu);
  kcr__free(m);
}

void kcr_metrics_registry_destroy(kcr_metrics_registry_t *r) {
  if (!r)
    return;
  KCR__LIST_FOREACH_SAFE(&r->families, n, next) {
    family_free(KCR__CONTAINER_OF(n, kcr_metric_t, link));
  }
  KCR__LIST_FOREACH_SAFE(&r->collectors, n, next) {
    kcr__free(KCR__CONTAINER_OF(n, kcr_metrics_collector_t, link));
  }
  pthread_mutex_destroy(&r->mu);
  kcr__free(r);
}

static int same_shape(const kcr_metric_t *m, kcr_metric_type type, const char *const *labels,
                      size_t nlabels, const double *bounds, size_t nbounds) {
  if (m->type != type || m->nlabels != nlabels)
    return 0;
  for (size_t i = 0; i < nlabels; i++)
    if (strcmp(m->labels[i], labels[i]) != 0)
      return 0;
  if (type == KCR_METRIC_HISTOGRAM) {
    if (m->nbounds != nbounds)
      return 0;
    for (size_t i = 0; i < nbounds; i++)
      if (m->bounds[i] != bounds[i])
        return 0;
  }
  return 1;
}

static int register_family(kcr_metrics_registry_t *r, kcr_metric_type type, const char *name,
                           const char *help, const char *const *label_names, const double *bounds,
                           size_t nbounds, kcr_metric_t **out, kcr_error_t *err) {
  static const double defaults[] = {KCR_METRICS_DEFAULT_BUCKETS};
  size_t nlabels = 0;
  kcr_metric_t *m = NULL, *it;

  assert(r && out);
  *out = NULL;
  if (!valid_metric_name(name))
    return kcr_error_set(err, KCR_EINVAL, "metrics: invalid metric name \"%s\"", name ? name : "");
  for (; label_names && label_names[nlabels]; nlabels++) {
    if (!valid_label_name(label_names[nlabels]) ||
        (type == KCR_METRIC_HISTOGRAM && strcmp(label_names[nlabels], "le") == 0))
      return kcr_error_set(err, KCR_EINVAL, "metrics: %s: invalid label name \"%s\"", name,
                           label_names[nlabels]);
    if (nlabels + 1 > KCR_METRICS_MAX_LABELS)
      return kcr_error_set(err, KCR_EINVAL, "metrics: %s: more than %d labels", name,
                           KCR_METRICS_MAX_LABELS);
  }
  if (type == KCR_METRIC_HISTOGRAM) {
    if (!bounds && nbounds == 0) {
      bounds = defaults;
      nbounds = sizeof(defaults) / sizeof(defaults[0]);
    }
    if (!bounds || nbounds == 0 || nbounds > KCR_METRICS_MAX_BUCKETS)
      return kcr_error_set(err, KCR_EINVAL, "metrics: %s: bad bucket count", name);
    for (size_t i = 0; i < nbounds; i++)
      if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1]))
        return kcr_error_set(err, KCR_EINVAL,
                             "metrics: %s: bounds must be finite and strictly increasing", name);
  } else {
    nbounds = 0;
  }

  pthread_mutex_lock(&r->mu);
  KCR__LIST_FOREACH(&r->families, n) {
    it = KCR__CONTAINER_OF(n, kcr_metric_t, link);
    if (strcmp(it->name, name) == 0) {
      int same = same_shape(it, type, label_names, nlabels, bounds, nbounds);
      pthread_mutex_unlock(&r->mu);
      if (!same)
        return kcr_error_set(err, KCR_EEXIST,
                             "metrics: %s is already registered with another type or labels", name);
      *out = it;
      return 0;
    }
  }
  m = kcr__calloc(1, sizeof(*m));
  if (!m)
    goto fail;
  pthread_mutex_init(&m->mu, NULL);
  m->type = type;
  m->name = kcr__strdup(name);
  m->help = kcr__strdup(help ? help : "");
  if (!m->name || !m->help)
    goto fail;
  if (nlabels) {
    m->labels = kcr__calloc(nlabels, sizeof(char *));
    if (!m->labels)
      goto fail;
    m->nlabels = nlabels;
    for (size_t i = 0; i < nlabels; i++)
      if (!(m->labels[i] = kcr__strdup(label_names[i])))
        goto fail;
  }
  if (nbounds) {
    m->bounds = kcr__calloc(nbounds, sizeof(double));
    if (!m->bounds)
      goto fail;
    memcpy(m->bounds, bounds, nbounds * sizeof(double));
    m->nbounds = nbounds;
  }
  kcr__list_push_front(&r->families, &m->link);
  pthread_mutex_unlock(&r->mu);
  *out = m;
  return 0;
fail:
  pthread_mutex_unlock(&r->mu);
  family_free(m);
  return kcr_error_set(err, KCR_ENOMEM, "metrics: out of memory registering %s", name);
}

int kcr_metrics_counter(kcr_metrics_registry_t *r, const char *name, const char *help,
                        const char *const *label_names, kcr_metric_t **out, kcr_error_t *err) {
  return register_family(r, KCR_METRIC_COUNTER, name, help, label_names, NULL, 0, out, err);
}

int kcr_metrics_gauge(kcr_metrics_registry_t *r, const char *name, const char *help,
                      const char *const *label_names, kcr_metric_t **out, kcr_error_t *err) {
  return register_family(r, KCR_METRIC_GAUGE, name, help, label_names, NULL, 0, out, err);
}

int kcr_metrics_histogram(kcr_metrics_registry_t *r, const char *name, const char *help,
                          const char *const *label_names, const double *bounds, size_t nbounds,
                          kcr_metric_t **out, kcr_error_t *err) {
  return register_family(r, KCR_METRIC_HISTOGRAM, name, help, label_names, bounds, nbounds, out,
                         err);
}

kcr_metric_t *kcr_metrics_find(kcr_metrics_registry_t *r, const char *name) {
  kcr_metric_t *m = NULL;
  if (!r || !name)
    return NULL;
  pthread_mutex_lock(&r->mu);
  KCR__LIST_FOREACH(&r->families, n) {
    kcr_metric_t *it = KCR__CONTAINER_OF(n, kcr_metric_t, link);
    if (strcmp(it->name, name) == 0) {
      m = it;
      break;
    }
  }
  pthread_mutex_unlock(&r->mu);
  return m;
}

/* ---- children ---- */

/*
 * child_key encodes a label-value tuple as one string key: each value with its
 * 0x01 bytes written as 0x01 0x02, then 0x01 0x01, so distinct tuples never
 * share a key (("a","b") and ("ab","") differ). The key goes into buf when it
 * fits, else into a new allocation (*heap set). NULL: out of memory.
 */
static char *child_key(const char *const *values, size_t n, char *buf, size_t size, int *heap) {
  size_t need = 1;
  char *k, *p;
  *heap = 0;
  for (size_t i = 0; i < n; i++) {
    for (const char *v = values[i] ? values[i] : ""; *v; v++)
      need += *v == '\x01' ? 2 : 1;
    need += 2;
  }
  k = need <= size ? buf : kcr__malloc(need);
  if (!k)
    return NULL;
  *heap = k != buf;
  p = k;
  for (size_t i = 0; i < n; i++) {
    for (const char *v = values[i] ? values[i] : ""; *v; v++) {
      *p++ = *v;
      if (*v == '\x01')
        *p++ = '\x02';
    }
    *p++ = '\x01';
    *p++ = '\x01';
  }
  *p = '\0';
  return k;
}

kcr_metric_child_t *kcr_metric_with(kcr_metric_t *m, const char *const *values, size_t nvalues) {
  kcr_metric_child_t *c = NULL;
  char kbuf[256], *key;
  int heap;

  if (!m || nvalues != m->nlabels)
    return NULL;
  if (!(key = child_key(values, nvalues, kbuf, sizeof(kbuf), &heap)))
    return NULL;
  pthread_mutex_lock(&m->mu);
  if ((c = kcr__hmap_get(&m->children, key)) != NULL)
    goto out;
  if (m->nchildren >= KCR_METRICS_MAX_CHILDREN || kcr__hmap_reserve(&m->children, 1) != 0)
    goto out; /* c is NULL */
  c = kcr__calloc(1, sizeof(*c));
  if (!c)
    goto out;
  c->family = m;
  if (!(c->key = heap ? key : kcr__strdup(key)))
    goto fail;
  heap = 0; /* the child owns it now */
  if (nvalues) {
    c->values = kcr__calloc(nvalues, sizeof(char *));
    if (!c->values)
      goto fail;
    for (size_t i = 0; i < nvalues; i++)
      if (!(c->values[i] = kcr__strdup(values[i] ? values[i] : "")))
        goto fail;
  }
  if (m->nbounds) {
    c->buckets = kcr__calloc(m->nbounds, sizeof(*c->buckets));
    if (!c->buckets)
      goto fail;
  }
  atomic_init(&c->value_bits, dbits(0.0));
  atomic_init(&c->count, 0);
  kcr__hmap_insert(&m->children, c->key, c);
  kcr__list_push_back(&m->series, &c->link);
  m->nchildren++;
out:
  pthread_mutex_unlock(&m->mu);
  if (heap)
    kcr__free(key);
  return c;
fail:
  child_free(c, nvalues);
  pthread_mutex_unlock(&m->mu);
  if (heap)
    kcr__free(key);
  return NULL;
}

kcr_metric_child_t *kcr_metric_withv(kcr_metric_t *m, ...) {
  const char *values[KCR_METRICS_MAX_LABELS];
  size_t n = 0;
  const char *v;
  va_list ap;
  va_start(ap, m);
  while ((v = va_arg(ap, const char *)) != NULL) {
    if (n == KCR_METRICS_MAX_LABELS) {
      va_end(ap);
      return NULL;
    }
    values[n++] = v;
  }
  va_end(ap);
  return kcr_metric_with(m, values, n);
}

void kcr_metric_add(kcr_metric_child_t *c, double v) {
  if (!c || c->family->type == KCR_METRIC_HISTOGRAM)
    return;
  if (c->family->type == KCR_METRIC_COUNTER && !(v >= 0))
    return;
  atomic_add_double(&c->value_bits, v);
}

void kcr_metric_inc(kcr_metric_child_t *c) {
  kcr_metric_add(c, 1.0);
}

void kcr_metric_set(kcr_metric_child_t *c, double v) {
  if (!c || c->family->type != KCR_METRIC_GAUGE)
    return;
  atomic_store_explicit(&c->value_bits, dbits(v), memory_order_relaxed);
}

void kcr_metric_observe(kcr_metric_child_t *c, double v) {
  const kcr_metric_t *m;
  size_t lo = 0, hi;
  if (!c || c->family->type != KCR_METRIC_HISTOGRAM)
    return;
  m = c->family;
  hi = m->nbounds; /* first bucket whose bound >= v, by binary search */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (v <= m->bounds[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  if (lo < m->nbounds)
    atomic_fetch_add_explicit(&c->buckets[lo], 1, memory_order_relaxed);
  atomic_add_double(&c->value_bits, v);
  atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed);
}

double kcr_metric_value(const kcr_metric_child_t *c) {
  if (!c)
    return 0;
  return bitsd(atomic_load_explicit(&((kcr_metric_child_t *)c)->value_bits, memory_order_relaxed));
}

uint64_t kcr_metric_count(const kcr_metric_child_t *c) {
  if (!c || c->family->type != KCR_METRIC_HISTOGRAM)
    return 0;
  return atomic_load_explicit(&((kcr_metric_child_t *)c)->count, memory_order_relaxed);
}

/* ---- collectors ---- */

int kcr_metrics_register_collector(kcr_metrics_registry_t *r, kcr_metrics_collect_cb cb, void *data,
                                   kcr_metrics_collector_t **out) {
  kcr_metrics_collector_t *c;
  assert(r && cb);
  if (out)
    *out = NULL;
  c = kcr__calloc(1, sizeof(*c));
  if (!c)
    return KCR_ENOMEM;
  c->cb = cb;
  c->data = data;
  pthread_mutex_lock(&r->mu);
  kcr__list_push_back(&r->collectors, &c->link);
  pthread_mutex_unlock(&r->mu);
  if (out)
    *out = c;
  return 0;
}

void kcr_metrics_unregister_collector(kcr_metrics_registry_t *r, kcr_metrics_collector_t *c) {
  if (!r || !c)
    return;
  pthread_mutex_lock(&r->mu);
  kcr__list_remove(&r->collectors, &c->link);
  pthread_mutex_unlock(&r->mu);
  kcr__free(c);
}

/* ---- rendering ---- */

typedef struct block {
  const char *name; /* borrowed from the emitter's caller: copied below */
  char *name_copy;
  char *help;
  kcr_metric_type type;
  kcr_buf_t body;
} block_t;

struct kcr_metrics_emitter {
  block_t *blocks;
  size_t n, cap;
  size_t total; /* bytes in all bodies */
  int error;    /* first error */
};

/* fmt_double writes v as Go's strconv.FormatFloat(v, 'g', -1, 64) would, except
 * that integral values below 1e15 are written without an exponent. */
static void fmt_double(char *buf, size_t size, double v) {
  if (isnan(v)) {
    snprintf(buf, size, "NaN");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
    return;
  }
  if (v == floor(v) && fabs(v) < 1e15) {
    snprintf(buf, size, "%.0f", v);
    return;
  }
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, size, "%.*g", p, v);
    if (strtod(buf, NULL) == v)
      return;
  }
}

static int append_escaped(kcr_buf_t *b, const char *s, int quote) {
  int rc = 0;
  for (; *s && rc == 0; s++) {
    if (*s == '\\')
      rc = kcr_buf_append(b, "\\\\", 2);
    else if (*s == '\n')
      rc = kcr_buf_append(b, "\\n", 2);
    else if (quote && *s == '"')
      rc = kcr_buf_append(b, "\\\"", 2);
    else
      rc = kcr_buf_appendc(b, *s);
  }
  return rc;
}

static const char *type_name(kcr_metric_type t) {
  switch (t) {
  case KCR_METRIC_COUNTER:
    return "counter";
  case KCR_METRIC_GAUGE:
    return "gauge";
  case KCR_METRIC_HISTOGRAM:
    return "histogram";
  case KCR_METRIC_UNTYPED:
    break;
  }
  return "untyped";
}

static int emit_fail(kcr_metrics_emitter_t *e, int rc) {
  if (!e->error)
    e->error = rc;
  return rc;
}

static block_t *find_block(kcr_metrics_emitter_t *e, const char *name, const char *help,
                           kcr_metric_type type) {
  block_t *b;
  for (size_t i = 0; i < e->n; i++) {
    if (strcmp(e->blocks[i].name_copy, name) == 0) {
      if (e->blocks[i].type != type) {
        emit_fail(e, KCR_EINVAL);
        return NULL;
      }
      return &e->blocks[i];
    }
  }
  if (e->n == e->cap) {
    size_t ncap = e->cap ? e->cap * 2 : 32;
    block_t *nb = kcr__realloc(e->blocks, ncap * sizeof(*nb));
    if (!nb) {
      emit_fail(e, KCR_ENOMEM);
      return NULL;
    }
    e->blocks = nb;
    e->cap = ncap;
  }
  b = &e->blocks[e->n];
  memset(b, 0, sizeof(*b));
  b->name_copy = kcr__strdup(name);
  b->help = kcr__strdup(help ? help : "");
  if (!b->name_copy || !b->help) {
    kcr__free(b->name_copy);
    kcr__free(b->help);
    emit_fail(e, KCR_ENOMEM);
    return NULL;
  }
  b->name = b->name_copy;
  b->type = type;
  kcr_buf_init(&b->body, KCR_METRICS_MAX_OUTPUT);
  e->n++;
  return b;
}

/* append_sample writes one line: name[suffix]{labels[,le="x"]} value. */
static int append_sample(kcr_metrics_emitter_t *e, block_t *b, const char *suffix,
                         const char *const *names, const char *const *values, size_t n,
                         const char *le, const char *value) {
  kcr_buf_t *o = &b->body;
  size_t before = kcr_buf_len(o);
  int rc = kcr_buf_appends(o, b->name);
  if (rc == 0 && suffix)
    rc = kcr_buf_appends(o, suffix);
  if (rc == 0 && (n || le))
    rc = kcr_buf_appendc(o, '{');
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (!valid_label_name(names[i]))
      return emit_fail(e, KCR_EINVAL);
    rc = kcr_buf_appendf(o, "%s%s=\"", i ? "," : "", names[i]);
    if (rc == 0)
      rc = append_escaped(o, values[i] ? values[i] : "", 1);
    if (rc == 0)
      rc = kcr_buf_appendc(o, '"');
  }
  if (rc == 0 && le)
    rc = kcr_buf_appendf(o, "%sle=\"%s\"", n ? "," : "", le);
  if (rc == 0 && (n || le))
    rc = kcr_buf_appendc(o, '}');
  if (rc == 0)
    rc = kcr_buf_appendf(o, " %s\n", value);
  if (rc != 0)
    return emit_fail(e, rc);
  e->total += kcr_buf_len(o) - before;
  if (e->total > KCR_METRICS_MAX_OUTPUT)
    return emit_fail(e, KCR_ETOOBIG);
  return 0;
}

int kcr_metrics_emit(kcr_metrics_emitter_t *e, const char *name, const char *help,
                     kcr_metric_type type, const char *const *label_names,
                     const char *const *label_values, size_t nlabels, double value) {
  char v[40];
  block_t *b;
  if (e->error)
    return e->error;
  if (!valid_metric_name(name) || type == KCR_METRIC_HISTOGRAM)
    return emit_fail(e, KCR_EINVAL);
  if (!(b = find_block(e, name, help, type)))
    return e->error;
  fmt_double(v, sizeof(v), value);
  return append_sample(e, b, NULL, label_names, label_values, nlabels, NULL, v);
}

int kcr_metrics_emit_histogram(kcr_metrics_emitter_t *e, const char *name, const char *help,
                               const char *const *label_names, const char *const *label_values,
                               size_t nlabels, const double *bounds, const uint64_t *cumulative,
                               size_t nbounds, uint64_t count, double sum) {
  char v[40], le[40];
  block_t *b;
  int rc = 0;
  if (e->error)
    return e->error;
  if (!valid_metric_name(name))
    return emit_fail(e, KCR_EINVAL);
  if (!(b = find_block(e, name, help, KCR_METRIC_HISTOGRAM)))
    return e->error;
  for (size_t i = 0; rc == 0 && i < nbounds; i++) {
    fmt_double(le, sizeof(le), bounds[i]);
    snprintf(v, sizeof(v), "%" PRIu64, cumulative[i]);
    rc = append_sample(e, b, "_bucket", label_names, label_values, nlabels, le, v);
  }
  snprintf(v, sizeof(v), "%" PRIu64, count);
  if (rc == 0)
    rc = append_sample(e, b, "_bucket", label_names, label_values, nlabels, "+Inf", v);
  fmt_double(v, sizeof(v), sum);
  if (rc == 0)
    rc = append_sample(e, b, "_sum", label_names, label_values, nlabels, NULL, v);
  snprintf(v, sizeof(v), "%" PRIu64, count);
  if (rc == 0)
    rc = append_sample(e, b, "_count", label_names, label_values, nlabels, NULL, v);
  return rc;
}

static int emit_family(kcr_metrics_emitter_t *e, kcr_metric_t *m) {
  int rc = 0;
  uint64_t cum[KCR_METRICS_MAX_BUCKETS];
  pthread_mutex_lock(&m->mu);
  /* As in client_golang, a vector without series writes nothing, while a family
   * without labels has its one series (at zero) from the start. */
  if (kcr__list_empty(&m->series) && m->nlabels == 0 && m->type != KCR_METRIC_HISTOGRAM)
    rc = kcr_metrics_emit(e, m->name, m->help, m->type, NULL, NULL, 0, 0.0);
  for (kcr__list_node_t *n = m->series.first; n && rc == 0; n = n->next) {
    const kcr_metric_child_t *c = KCR__CONTAINER_OF(n, kcr_metric_child_t, link);
    const char *const *names = (const char *const *)m->labels;
    const char *const *values = (const char *const *)c->values;
    if (m->type == KCR_METRIC_HISTOGRAM) {
      uint64_t acc = 0, count;
      count = atomic_load_explicit(&c->count, memory_order_relaxed);
      for (size_t i = 0; i < m->nbounds; i++) {
        acc += atomic_load_explicit(&c->buckets[i], memory_order_relaxed);
        cum[i] = acc;
      }
      /* Writers bump a bucket before count: keep the +Inf bucket consistent. */
      if (count < acc)
        count = acc;
      rc = kcr_metrics_emit_histogram(e, m->name, m->help, names, values, m->nlabels, m->bounds,
                                      cum, m->nbounds, count, kcr_metric_value(c));
    } else {
      rc = kcr_metrics_emit(e, m->name, m->help, m->type, names, values, m->nlabels,
                            kcr_metric_value(c));
    }
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

static int cmp_block(const void *a, const void *b) {
  return strcmp(((const block_t *)a)->name, ((const block_t *)b)->name);
}

int kcr_metrics_render(kcr_metrics_registry_t *r, kcr_buf_t *out) {
  kcr_metrics_emitter_t e = {0};
  int rc = 0;

  pthread_mutex_lock(&r->mu);
  for (kcr__list_node_t *n = r->collectors.first; n && !e.error; n = n->next) {
    kcr_metrics_collector_t *c = KCR__CONTAINER_OF(n, kcr_metrics_collector_t, link);
    c->cb(&e, c->data);
  }
  for (kcr__list_node_t *n = r->families.first; n && !e.error; n = n->next)
    emit_family(&e, KCR__CONTAINER_OF(n, kcr_metric_t, link));
  pthread_mutex_unlock(&r->mu);

  rc = e.error;
  if (rc == 0 && e.n)
    qsort(e.blocks, e.n, sizeof(*e.blocks), cmp_block);
  for (size_t i = 0; i < e.n && rc == 0; i++) {
    block_t *b = &e.blocks[i];
    rc = kcr_buf_appendf(out, "# HELP %s ", b->name);
    if (rc == 0)
      rc = append_escaped(out, b->help, 0);
    if (rc == 0)
      rc = kcr_buf_appendf(out, "\n# TYPE %s %s\n", b->name, type_name(b->type));
    if (rc == 0 && kcr_buf_len(&b->body))
      rc = kcr_buf_append(out, kcr_buf_cstr(&b->body), kcr_buf_len(&b->body));
  }
  for (size_t i = 0; i < e.n; i++) {
    kcr_buf_free(&e.blocks[i].body);
    kcr__free(e.blocks[i].name_copy);
    kcr__free(e.blocks[i].help);
  }
  kcr__free(e.blocks);
  if (rc != 0)
    kcr_buf_free(out);
  return rc;
}

/* ---- the process collector ---- */

/* PROC_FILE_MAX bounds a /proc file the process collector reads. */
#define PROC_FILE_MAX ((size_t)1 << 20)

/* netstat_octets finds IpExt's InOctets and OutOctets in the text of
 * /proc/self/net/netstat: pairs of lines, a header "IpExt: Name..." and its
 * values "IpExt: 1 2...". A name it does not find stays 0, as client_golang
 * reports it. Returns 0, or -1 when there is no IpExt pair (nothing emitted). */
int kcr__metrics_netstat_octets(const char *text, double *in, double *out) {
  const char *h = text;
  *in = *out = 0;
  while (h && *h) {
    const char *hend = strchr(h, '\n');
    const char *v = hend ? hend + 1 : NULL;
    const char *vend = v ? strchr(v, '\n') : NULL;
    if (!v || strncmp(h, "IpExt:", 6) != 0 || strncmp(v, "IpExt:", 6) != 0) {
      h = v;
      continue;
    }
    /* Walk both lines field by field; the names and values line up. */
    const char *hp = h + 6, *vp = v + 6;
    for (;;) {
      while (hp < hend && *hp == ' ')
        hp++;
      while ((!vend || vp < vend) && *vp == ' ')
        vp++;
      if (hp >= hend || (vend && vp >= vend) || !*vp)
        break;
      size_t hn = strcspn(hp, " \n"), vn = strcspn(vp, " \n");
      if (hn == 8 && strncmp(hp, "InOctets", 8) == 0)
        *in = strtod(vp, NULL);
      else if (hn == 9 && strncmp(hp, "OutOctets", 9) == 0)
        *out = strtod(vp, NULL);
      hp += hn;
      vp += vn;
    }
    return 0;
  }
  return -1;
}

static void on_collect_process(kcr_metrics_emitter_t *e, void *data) {
  char *stat = NULL, *pstat = NULL, *netstat = NULL;
  long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  struct rlimit rl;
  DIR *d;
  (void)data;

  /* /proc files through util's one reader: /proc/stat outgrows any fixed buffer
   * on a machine with many CPUs, and btime comes after the per-CPU lines. */
  if (kcr__read_file("/proc/self/stat", PROC_FILE_MAX, "process stat", &stat, NULL, NULL) == 0 &&
      ticks > 0) {
    /* Fields after the command (which may hold spaces) start at field 3. */
    char *p = strrchr(stat, ')');
    unsigned long long f[22] = {0};
    int n = 0;
    if (p) {
      p++;
      for (char *save = NULL, *tok = strtok_r(p, " ", &save); tok && n < 22;
           tok = strtok_r(NULL, " ", &save))
        f[n++] = strtoull(tok, NULL, 10);
    }
    if (n >= 22) {
      double btime = 0;
      kcr_metrics_emit(e, "process_cpu_seconds_total",
                       "Total user and system CPU time spent in seconds.", KCR_METRIC_COUNTER, NULL,
                       NULL, 0, (double)(f[11] + f[12]) / (double)ticks);
      kcr_metrics_emit(e, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
                       KCR_METRIC_GAUGE, NULL, NULL, 0, (double)f[20]);
      kcr_metrics_emit(e, "process_resident_memory_bytes", "Resident memory size in bytes.",
                       KCR_METRIC_GAUGE, NULL, NULL, 0, (double)f[21] * (double)page);
      if (kcr__read_file("/proc/stat", PROC_FILE_MAX, "system stat", &pstat, NULL, NULL) == 0) {
        char *bt = strstr(pstat, "\nbtime ");
        if (bt)
          btime = strtod(bt + 7, NULL);
      }
      if (btime > 0)
        kcr_metrics_emit(e, "process_start_time_seconds",
                         "Start time of the process since unix epoch in seconds.", KCR_METRIC_GAUGE,
                         NULL, NULL, 0, btime + (double)f[19] / (double)ticks);
    }
  }
  d = opendir("/proc/self/fd");
  if (d) {
    long n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
      if (de->d_name[0] != '.')
        n++;
    closedir(d);
    kcr_metrics_emit(e, "process_open_fds", "Number of open file descriptors.", KCR_METRIC_GAUGE,
                     NULL, NULL, 0, (double)(n > 0 ? n - 1 : 0)); /* minus the DIR's own fd */
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
    kcr_metrics_emit(e, "process_max_fds", "Maximum number of open file descriptors.",
                     KCR_METRIC_GAUGE, NULL, NULL, 0, (double)rl.rlim_cur);
  /* The soft limit, as client_golang reads "Max address space" from
   * /proc/self/limits: unlimited is RLIM_INFINITY there too (2^64 - 1). */
  if (getrlimit(RLIMIT_AS, &rl) == 0)
    kcr_metrics_emit(e, "process_virtual_memory_max_bytes",
                     "Maximum amount of virtual memory available in bytes.", KCR_METRIC_GAUGE, NULL,
                     NULL, 0, (double)rl.rlim_cur);
  /* The process's network namespace's IP octets (client_golang's source):
   * every process of a Pod shares them. */
  if (kcr__read_file("/proc/self/net/netstat", PROC_FILE_MAX, "netstat", &netstat, NULL, NULL) ==
      0) {
    double in, out;
    if (kcr__metrics_netstat_octets(netstat, &in, &out) == 0) {
      kcr_metrics_emit(e, "process_network_receive_bytes_total",
                       "Number of bytes received by the process over the network.",
                       KCR_METRIC_COUNTER, NULL, NULL, 0, in);
      kcr_metrics_emit(e, "process_network_transmit_bytes_total",
                       "Number of bytes sent by the process over the network.", KCR_METRIC_COUNTER,
                       NULL, NULL, 0, out);
    }
  }
  kcr__free(stat);
  kcr__free(pstat);
  kcr__free(netstat);
}

int kcr_metrics_register_process(kcr_metrics_registry_t *r, kcr_metrics_collector_t **out) {
  return kcr_metrics_register_collector(r, on_collect_process, NULL, out);
}
