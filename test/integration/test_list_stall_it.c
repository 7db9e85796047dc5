/* SPDX-License-Identifier: MIT */
/*
 * test_list_stall_it.c: start -> synced stays bounded, start after start (issue 16,
 * bug 12: 2 of 11 operator starts with 10k ConfigMaps took 60.8 s instead of
 * 1.2 s). 10k ConfigMaps of about 1 KiB are created once; then each start makes a
 * fresh client (a fresh loop and HTTP/2 connection, as a fresh process has), starts
 * an informer for them together with small cluster-wide ones whose watches share
 * the connection (as the App operator's cache does), and times the ConfigMap
 * informer's sync. Each sync must end within 15 s: a hang detector, not a
 * performance assertion.
 *
 * Also a driver for hunting the stall by hand: KCR_STALL_STARTS (default 20),
 * KCR_STALL_OBJECTS (default 10000), KCR_STALL_STREAMING=1 (streaming list instead
 * of paged LISTs), KCR_STALL_BOUND_S (default 15), KCR_STALL_NS=name (use that
 * namespace, creating
 * the objects only when it has fewer) and KCR_STALL_KEEP=1 (leave the namespace).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
/* clang-format on */

#include "kcr/apierror.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/informer.h"
#include "kcr/loop.h"
#include "kcr_itutil.h"
#include "kcr_testenv.h"
#include "loop/loop_internal.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};
static const kcr_gvr services = {"", "v1", "services"};
static const kcr_gvr deployments = {"apps", "v1", "deployments"};
static const kcr_gvr namespaces_gvr = {"", "v1", "namespaces"};

static kcr_testenv_t *env;
static kcr_rest_config_t *config;
static kcr_client_t *client;
static char ns[64];
static int objects = 10000;
static int starts = 20;
static int streaming;
static double bound_s = 15;
static int keep;
static const char *fixed_ns; /* KCR_STALL_NS */

static int env_int(const char *name, int def) {
  const char *v = getenv(name);
  return v && *v ? (int)strtol(v, NULL, 10) : def;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- creating the objects, once ---- */

typedef struct writer {
  int id, nthreads, count;
  atomic_int *failures;
} writer_t;

static void *write_main(void *arg) {
  writer_t *w = arg;
  char name[64], payload[1025];
  memset(payload, 'x', sizeof(payload) - 1);
  payload[sizeof(payload) - 1] = '\0';
  for (int i = w->id; i < w->count; i += w->nthreads) {
    kcr_error_t err;
    json_t *obj;
    int rc;
    snprintf(name, sizeof(name), "stall-%05d", i);
    obj = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                    "metadata", "name", name, "data", "payload", payload);
    kcr_error_clear(&err);
    rc = kcr_client_create_object(client, &configmaps, ns, obj, NULL, NULL, &err);
    json_decref(obj);
    if (rc == KCR_EAPI && kcr_error_is_already_exists(&err))
      rc = 0; /* a kept namespace from an earlier run */
    if (rc) {
      atomic_fetch_add(w->failures, 1);
      fprintf(stderr, "create %s: %s\n", name, err.message);
    }
  }
  return NULL;
}

static int create_objects(int count) {
  enum { T = 16 };
  writer_t w[T];
  pthread_t th[T];
  atomic_int failures = 0;
  double t0 = now_s();
  for (int i = 0; i < T; i++) {
    w[i] = (writer_t){i, T, count, &failures};
    pthread_create(&th[i], NULL, write_main, &w[i]);
  }
  for (int i = 0; i < T; i++)
    pthread_join(th[i], NULL);
  fprintf(stderr, "stall: created %d ConfigMaps in %.1f s\n", count, now_s() - t0);
  return atomic_load(&failures) ? -1 : 0;
}

static int group_setup(void **state) {
  (void)state;
  objects = env_int("KCR_STALL_OBJECTS", objects);
  starts = env_int("KCR_STALL_STARTS", starts);
  streaming = env_int("KCR_STALL_STREAMING", 0);
  bound_s = env_int("KCR_STALL_BOUND_S", (int)bound_s);
  keep = env_int("KCR_STALL_KEEP", 0);
  fixed_ns = getenv("KCR_STALL_NS");
  if (fixed_ns && !*fixed_ns)
    fixed_ns = NULL;
  if (kcr_it_connect(&env, &config, &client) != 0)
    return -1;
  if (fixed_ns) {
    json_t *list = NULL;
    kcr_request_options o;
    size_t have = 0;
    snprintf(ns, sizeof(ns), "%s", fixed_ns);
    memset(&o, 0, sizeof(o));
    o.limit = 1;
    if (kcr_client_list(client, &configmaps, ns, &o, &list, NULL) == 0) {
      json_t *rem = json_object_get(json_object_get(list, "metadata"), "remainingItemCount");
      have = json_array_size(json_object_get(list, "items")) + (size_t)json_integer_value(rem);
      json_decref(list);
    }
    if (have >= (size_t)objects)
      return 0;
    if (have == 0) {
      json_t *obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                              "metadata", "name", ns);
      kcr_client_create_object(client, &namespaces_gvr, NULL, obj, NULL, NULL, NULL);
      json_decref(obj);
    }
  } else if (kcr_it_create_namespace(client, "kcr-it-stall", ns, sizeof(ns)) != 0) {
    return -1;
  }
  return create_objects(objects);
}

static int group_teardown(void **state) {
  (void)state;
  kcr_it_disconnect(env, config, client, keep || fixed_ns ? NULL : ns);
  return 0;
}

/* ---- one start ---- */

static kcr_informer_t *informer(kcr_client_t *c, const kcr_gvr *r, const char *kind,
                                const char *in_ns) {
  kcr_informer_options o;
  kcr_informer_t *inf = NULL;
  kcr_error_t err;
  memset(&o, 0, sizeof(o));
  o.client = c;
  o.resource = *r;
  o.kind = kind;
  o.ns = in_ns;
  o.streaming_list = streaming != 0;
  kcr_error_clear(&err);
  if (kcr_informer_create(&o, &inf, &err) != 0)
    fail_msg("informer %s: %s", kind, err.message);
  return inf;
}

/* one_start returns the seconds from start to the ConfigMap informer's sync, or a
 * negative value when it did not sync within the bound. */
static double one_start(int n) {
  enum { OTHERS = 3 };
  kcr_client_options co;
  kcr_client_t *c = NULL;
  kcr_informer_t *cms, *other[OTHERS];
  kcr_loop_stats ls;
  kcr_error_t err;
  double t0, dt;
  int rc;

  memset(&co, 0, sizeof(co));
  co.config = config;
  kcr_error_clear(&err);
  if (kcr_client_create(&co, &c, &err) != 0)
    fail_msg("client: %s", err.message);
  other[0] = informer(c, &services, "Service", NULL);
  other[1] = informer(c, &deployments, "Deployment", NULL);
  other[2] = informer(c, &namespaces_gvr, "Namespace", NULL);
  cms = informer(c, &configmaps, "ConfigMap", ns);

  t0 = now_s();
  for (int i = 0; i < OTHERS; i++)
    assert_int_equal(kcr_informer_start(other[i], &err), 0);
  assert_int_equal(kcr_informer_start(cms, &err), 0);
  rc = kcr_informer_wait_for_sync(cms, (int64_t)(bound_s * 1e9), &err);
  dt = now_s() - t0;
  kcr_loop_get_stats(kcr_client_loop(c), &ls);
  fprintf(stderr,
          "stall: start %2d: %s in %.3f s (%zu objects, %llu requests, %llu "
          "connections, %llu nudges)\n",
          n, rc == 0 ? "synced" : "NOT synced", dt, kcr_store_len(kcr_informer_store(cms)),
          (unsigned long long)ls.transfers_done, (unsigned long long)ls.connections_opened,
          (unsigned long long)kcr__loop_nudges(kcr_client_loop(c)));
  if (rc == 0)
    assert_int_equal(kcr_store_len(kcr_informer_store(cms)), (size_t)objects);
  kcr_informer_destroy(cms);
  for (int i = 0; i < OTHERS; i++)
    kcr_informer_destroy(other[i]);
  kcr_client_destroy(c);
  return rc == 0 ? dt : -dt;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void test_list_stall_every_sync_is_bounded(void **state) {
  double *t = calloc((size_t)starts, sizeof(*t));
  int stalled = 0;
  (void)state;
  assert_non_null(t);
  for (int i = 0; i < starts; i++) {
    t[i] = one_start(i);
    if (t[i] < 0) {
      stalled++;
      t[i] = -t[i];
    }
  }
  qsort(t, (size_t)starts, sizeof(*t), cmp_double);
  fprintf(stderr,
          "stall: %d of %d starts (%s, %d objects) missed %.0f s; min %.3f median %.3f "
          "max %.3f s\n",
          stalled, starts, streaming ? "streaming list" : "paged list", objects, bound_s, t[0],
          t[starts / 2], t[starts - 1]);
  free(t);
  assert_int_equal(stalled, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list_stall_every_sync_is_bounded),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
