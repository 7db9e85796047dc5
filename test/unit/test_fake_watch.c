/* SPDX-License-Identifier: MIT */
/*
 * test_fake_watch.c: watches through an object client (kcr/objclient.h,
 * issue 25): the event queue on its own (order, timeouts, the end and its
 * reason, the bound, stop and destroy from other threads), then the fake
 * client's watch: every write is an event in order, deletes take a version,
 * selectors hold with objects entering and leaving the selection, the start
 * state, replay from a version and 410 Expired past the history,
 * send_initial_events' bookmark, PartialObjectMetadata, the interceptor, and a
 * fake destroyed under an open watch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcr/apierror.h"
#include "kcr/meta.h"
#include "kcr/testing.h"
#include "testutil.h"

static const kcr_gvk CM = {"", "v1", "ConfigMap"};

static json_t *cm(const char *ns, const char *name, const char *labels) {
  json_error_t e;
  char text[512];
  json_t *o;
  snprintf(text, sizeof(text),
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"namespace\":\"%s\","
           "\"name\":\"%s\",\"labels\":%s},\"data\":{\"k\":\"v\"}}",
           ns, name, labels ? labels : "{}");
  o = json_loads(text, 0, &e);
  if (!o)
    fail_msg("bad fixture: %s", e.text);
  return o;
}

/* next_event takes the next event (waiting up to 30 s, for a writer thread on a busy machine) and
 * checks its type and name; returns the object (the caller's). */
static json_t *next_event(kcr_objwatch_t *w, kcr_watch_event_type type, const char *name) {
  kcr_watch_event ev;
  kcr_error_t err;
  int rc;
  kcr_error_clear(&err);
  rc = kcr_objwatch_next(w, 30000000000LL, &ev, &err);
  if (rc != 0)
    fail_msg("next: %s (%s), want %s %s", kcr_err_name(rc), err.message,
             kcr_watch_event_type_name(type), name ? name : "");
  if (ev.type != type || (name && strcmp(kcr_meta_name(ev.object), name) != 0))
    fail_msg("got %s %s, want %s %s", kcr_watch_event_type_name(ev.type), kcr_meta_name(ev.object),
             kcr_watch_event_type_name(type), name ? name : "");
  return ev.object;
}

static void expect(kcr_objwatch_t *w, kcr_watch_event_type type, const char *name) {
  json_decref(next_event(w, type, name));
}

/* expect_none: nothing is queued (next only looks). */
static void expect_none(kcr_objwatch_t *w) {
  kcr_watch_event ev;
  int rc = kcr_objwatch_next(w, 0, &ev, NULL);
  if (rc == 0) {
    fail_msg("unexpected %s %s", kcr_watch_event_type_name(ev.type), kcr_meta_name(ev.object));
  }
  assert_int_equal(rc, KCR_EAGAIN);
}

static char *rv_of(const json_t *o) {
  return strdup(kcr_meta_resource_version(o));
}

/* ---- the queue ---- */

typedef struct producer {
  int stops, releases;
} producer_t;

static void p_stop(void *d) {
  ((producer_t *)d)->stops++;
}
static void p_release(void *d) {
  ((producer_t *)d)->releases++;
}
static const kcr_objwatch_hooks P_HOOKS = {p_stop, p_release};

static void test_objwatch_queue(void **state) {
  producer_t p = {0};
  kcr_objwatch_t *w = NULL;
  kcr_watch_event ev;
  kcr_error_t err, gone;
  json_t *a = cm("ns", "a", NULL), *b = cm("ns", "b", NULL);
  (void)state;
  assert_int_equal(kcr_objwatch_create(&P_HOOKS, &p, &w, NULL), 0);
  /* nothing yet: a bounded wait comes back with KCR_EAGAIN and no message */
  kcr_error_clear(&err);
  assert_int_equal(kcr_objwatch_next(w, 1000000, &ev, &err), KCR_EAGAIN);
  assert_int_equal(err.code, KCR_OK);
  assert_int_equal(kcr_objwatch_send_new(w, KCR_WATCH_ADDED, json_incref(a), NULL), 0);
  assert_int_equal(kcr_objwatch_send_new(w, KCR_WATCH_MODIFIED, json_incref(b), NULL), 0);
  kcr_error_clear(&gone);
  kcr_error_set(&gone, KCR_EAPI, "too old");
  gone.http_status = 410;
  assert_int_equal(kcr_objwatch_send_new(w, KCR_WATCH_ERROR, json_incref(a), &gone), 0);
  kcr_objwatch_close(w, 0, NULL);
  /* sent after the end: dropped, and the producer is told */
  assert_int_equal(kcr_objwatch_send_new(w, KCR_WATCH_ADDED, json_incref(a), NULL), KCR_ECANCELED);
  /* what was queued comes first, in order, each a reference of the caller's */
  expect(w, KCR_WATCH_ADDED, "a");
  expect(w, KCR_WATCH_MODIFIED, "b");
  assert_int_equal(kcr_objwatch_next(w, -1, &ev, NULL), 0);
  assert_int_equal(ev.type, KCR_WATCH_ERROR);
  assert_non_null(ev.error);
  assert_int_equal(ev.error->http_status, 410);
  json_decref(ev.object);
  /* then the end, every time */
  kcr_error_clear(&err);
  assert_int_equal(kcr_objwatch_next(w, -1, &ev, &err), KCR_ECLOSED);
  assert_int_equal(err.code, KCR_ECLOSED);
  assert_null(ev.object);
  assert_int_equal(kcr_objwatch_next(w, 0, &ev, NULL), KCR_ECLOSED);
  assert_int_equal(p.stops, 0);
  kcr_objwatch_destroy(w);
  assert_int_equal(p.stops, 1);
  assert_int_equal(p.releases, 1);
  /* the objects the watch held are its own references: ours are still 1 */
  assert_int_equal(a->refcount, 1);
  json_decref(a);
  json_decref(b);
}

/* a transport error ends the watch with its code and details */
static void test_objwatch_close_error(void **state) {
  kcr_objwatch_t *w = NULL;
  kcr_watch_event ev;
  kcr_error_t cut, err;
  (void)state;
  assert_int_equal(kcr_objwatch_create(NULL, NULL, &w, NULL), 0);
  kcr_error_clear(&cut);
  kcr_error_set(&cut, KCR_ECONN, "connection reset by peer");
  kcr_objwatch_close(w, KCR_ECONN, &cut);
  kcr_objwatch_close(w, KCR_ETIMEDOUT, NULL); /* only the first end counts */
  kcr_error_clear(&err);
  assert_int_equal(kcr_objwatch_next(w, -1, &ev, &err), KCR_ECONN);
  assert_string_equal(err.message, "connection reset by peer");
  kcr_objwatch_destroy(w);
  kcr_objwatch_destroy(NULL);
  kcr_objwatch_stop(NULL);
  assert_int_equal(kcr_objwatch_next(NULL, 0, &ev, NULL), KCR_EINVAL);
  assert_int_equal(kcr_objwatch_send_new(NULL, KCR_WATCH_ADDED, json_object(), NULL), KCR_EINVAL);
}

/* a consumer that does not take its events loses the watch, not the process's memory */
static void test_objwatch_bound(void **state) {
  kcr_objwatch_t *w = NULL;
  kcr_watch_event ev;
  kcr_error_t err;
  json_t *a = cm("ns", "a", NULL);
  int rc = 0;
  long sent = 0;
  (void)state;
  assert_int_equal(kcr_objwatch_create(NULL, NULL, &w, NULL), 0);
  while ((rc = kcr_objwatch_send_new(w, KCR_WATCH_MODIFIED, json_incref(a), NULL)) == 0)
    sent++;
  assert_int_equal(rc, KCR_ETOOBIG);
  assert_int_equal(sent, KCR_OBJWATCH_MAX_QUEUED);
  assert_int_equal(kcr_objwatch_send_new(w, KCR_WATCH_MODIFIED, json_incref(a), NULL),
                   KCR_ECANCELED);
  /* the queued ones are still handed over, then the reason */
  for (long i = 0; i < sent; i++) {
    assert_int_equal(kcr_objwatch_next(w, 0, &ev, NULL), 0);
    json_decref(ev.object);
  }
  kcr_error_clear(&err);
  assert_int_equal(kcr_objwatch_next(w, 0, &ev, &err), KCR_ETOOBIG);
  assert_non_null(strstr(err.message, "fell"));
  kcr_objwatch_destroy(w);
  assert_int_equal(a->refcount, 1);
  json_decref(a);
}

typedef struct stopper {
  kcr_objwatch_t *w;
  int rc;
} stopper_t;

static void *wait_next(void *d) {
  stopper_t *s = d;
  kcr_watch_event ev;
  s->rc = kcr_objwatch_next(s->w, -1, &ev, NULL);
  return NULL;
}

/* stop from another thread wakes a next that waits forever; queued events are dropped */
static void test_objwatch_stop_wakes(void **state) {
  producer_t p = {0};
  stopper_t s = {0};
  pthread_t t;
  json_t *a = cm("ns", "a", NULL);
  (void)state;
  assert_int_equal(kcr_objwatch_create(&P_HOOKS, &p, &s.w, NULL), 0);
  assert_int_equal(pthread_create(&t, NULL, wait_next, &s), 0);
  kcr_objwatch_stop(s.w);
  pthread_join(t, NULL);
  assert_int_equal(s.rc, KCR_ECANCELED);
  assert_int_equal(kcr_objwatch_send_new(s.w, KCR_WATCH_ADDED, json_incref(a), NULL),
                   KCR_ECANCELED);
  kcr_objwatch_stop(s.w); /* idempotent: the producer hears it once */
  assert_int_equal(p.stops, 1);
  kcr_objwatch_destroy(s.w);
  assert_int_equal(p.stops, 1);
  assert_int_equal(p.releases, 1);
  json_decref(a);
}

/* ---- the fake client's watch ---- */

static int64_t mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

typedef struct fx {
  kcr_fake_client_t *f;
  kcr_objclient c;
  kcr_error_t err;
} fx_t;

static int fx_setup(void **state) {
  fx_t *fx = calloc(1, sizeof(*fx));
  if (!fx || kcr_fake_client_create(NULL, &fx->f, NULL) != 0)
    return -1;
  fx->c = kcr_fake_client_objclient(fx->f);
  *state = fx;
  return 0;
}

static int fx_teardown(void **state) {
  fx_t *fx = *state;
  kcr_fake_client_destroy(fx->f);
  free(fx);
  return 0;
}

static kcr_objwatch_t *watch(fx_t *fx, const char *ns, const kcr_watch_options *o) {
  kcr_objwatch_t *w = NULL;
  kcr_error_clear(&fx->err);
  if (kcr_objclient_watch(&fx->c, &CM, ns, o, &w, &fx->err) != 0)
    fail_msg("watch: %s", fx->err.message);
  return w;
}

static json_t *create(fx_t *fx, const char *ns, const char *name, const char *labels) {
  json_t *o = cm(ns, name, labels), *out = NULL;
  assert_int_equal(kcr_objclient_create(&fx->c, o, &out, NULL), 0);
  json_decref(o);
  return out;
}

/* timeout_seconds ends the watch then, normally, as the server's: what came
 * before is handed over, then KCR_ECLOSED, whether next waits forever or a
 * bounded time; a change after the end is not sent */
static void test_fake_watch_timeout(void **state) {
  fx_t *fx = *state;
  kcr_watch_options o = {0};
  kcr_objwatch_t *w;
  kcr_watch_event e;
  kcr_error_t err;
  json_t *ev;
  int64_t t0 = mono_ms(), took;
  o.timeout_seconds = 1;
  w = watch(fx, "ns", &o);
  json_decref(create(fx, "ns", "a", NULL));
  ev = next_event(w, KCR_WATCH_ADDED, "a");
  json_decref(ev);
  assert_int_equal(kcr_objwatch_next(w, 10 * (int64_t)1000000, &e, NULL), KCR_EAGAIN); /* not yet */
  kcr_error_clear(&err);
  assert_int_equal(kcr_objwatch_next(w, -1, &e, &err), KCR_ECLOSED);
  took = mono_ms() - t0;
  assert_int_equal(err.code, KCR_ECLOSED);
  assert_true(took >= 1000);
  assert_true(took < 30000); /* it ended on its own: without the timeout, never */
  json_decref(create(fx, "ns", "b", NULL));
  assert_int_equal(kcr_objwatch_next(w, 0, &e, NULL), KCR_ECLOSED);
  kcr_objwatch_destroy(w);
  /* a bounded wait that outlasts the expiry ends with it too */
  w = watch(fx, "ns", &o);
  expect(w, KCR_WATCH_ADDED, "a");
  expect(w, KCR_WATCH_ADDED, "b");
  assert_int_equal(kcr_objwatch_next(w, 20 * KCR_NSEC_PER_SEC, &e, NULL), KCR_ECLOSED);
  kcr_objwatch_destroy(w);
}

/* every write is an event, in order, with the version it made; a delete too */
static void test_fake_watch_writes(void **state) {
  fx_t *fx = *state;
  kcr_objwatch_t *w = watch(fx, "ns", NULL);
  json_t *a, *upd = NULL, *ev;
  unsigned long long v1, v2, v3;
  expect_none(w);
  a = create(fx, "ns", "a", NULL);
  json_decref(create(fx, "other", "x", NULL)); /* another namespace: not ours */
  ev = next_event(w, KCR_WATCH_ADDED, "a");
  assert_true(json_equal(ev, a));
  v1 = strtoull(kcr_meta_resource_version(ev), NULL, 10);
  json_decref(ev);
  json_object_set_new(json_object_get(a, "data"), "k", json_string("v2"));
  assert_int_equal(kcr_objclient_update(&fx->c, a, NULL, &upd, NULL), 0);
  ev = next_event(w, KCR_WATCH_MODIFIED, "a");
  assert_string_equal(json_string_value(json_object_get(json_object_get(ev, "data"), "k")), "v2");
  v2 = strtoull(kcr_meta_resource_version(ev), NULL, 10);
  json_decref(ev);
  assert_int_equal(kcr_objclient_delete(&fx->c, upd, NULL, NULL), 0);
  ev = next_event(w, KCR_WATCH_DELETED, "a");
  v3 = strtoull(kcr_meta_resource_version(ev), NULL, 10);
  json_decref(ev);
  assert_true(v1 < v2);
  assert_true(v2 < v3); /* the server's delete has a version of its own */
  expect_none(w);
  kcr_objwatch_destroy(w);
  json_decref(a);
  json_decref(upd);
}

/* a finalizer holds a delete: MODIFIED with the deletionTimestamp, then DELETED at release */
static void test_fake_watch_finalizer(void **state) {
  fx_t *fx = *state;
  json_t *o = cm("ns", "f", NULL), *out = NULL, *ev;
  kcr_objwatch_t *w;
  json_object_set_new(json_object_get(o, "metadata"), "finalizers", json_pack("[s]", "kcr.dev/x"));
  assert_int_equal(kcr_objclient_create(&fx->c, o, &out, NULL), 0);
  json_decref(o);
  w = watch(fx, "ns", NULL);
  expect(w, KCR_WATCH_ADDED, "f"); /* the current state first */
  assert_int_equal(kcr_objclient_delete(&fx->c, out, NULL, NULL), 0);
  json_decref(out);
  ev = next_event(w, KCR_WATCH_MODIFIED, "f");
  assert_non_null(json_object_get(json_object_get(ev, "metadata"), "deletionTimestamp"));
  json_object_set_new(json_object_get(ev, "metadata"), "finalizers", json_array());
  assert_int_equal(kcr_objclient_update(&fx->c, ev, NULL, &out, NULL), 0);
  json_decref(ev);
  json_decref(out);
  expect(w, KCR_WATCH_DELETED, "f");
  expect_none(w);
  kcr_objwatch_destroy(w);
}

/* a label selector: entering the selection is ADDED, leaving it DELETED */
static void test_fake_watch_selector(void **state) {
  fx_t *fx = *state;
  kcr_watch_options o = {.label_selector = "app=web"};
  kcr_objwatch_t *w = watch(fx, NULL, &o);
  json_t *b = create(fx, "ns", "b", "{\"app\":\"db\"}"), *out = NULL;
  json_decref(create(fx, "ns2", "a", "{\"app\":\"web\"}"));
  expect(w, KCR_WATCH_ADDED, "a");
  expect_none(w); /* b does not match */
  json_object_set_new(json_object_get(json_object_get(b, "metadata"), "labels"), "app",
                      json_string("web"));
  assert_int_equal(kcr_objclient_update(&fx->c, b, NULL, &out, NULL), 0);
  expect(w, KCR_WATCH_ADDED, "b");
  json_object_set_new(json_object_get(json_object_get(out, "metadata"), "labels"), "tier",
                      json_string("1"));
  json_decref(b);
  assert_int_equal(kcr_objclient_update(&fx->c, out, NULL, &b, NULL), 0);
  expect(w, KCR_WATCH_MODIFIED, "b");
  json_object_set_new(json_object_get(json_object_get(b, "metadata"), "labels"), "app",
                      json_string("db"));
  json_decref(out);
  assert_int_equal(kcr_objclient_update(&fx->c, b, NULL, &out, NULL), 0);
  expect(w, KCR_WATCH_DELETED, "b");
  expect_none(w);
  kcr_objwatch_destroy(w);
  json_decref(b);
  json_decref(out);
  /* a selector the server cannot parse is refused */
  o.label_selector = "app in (";
  kcr_objwatch_t *bad = NULL;
  assert_int_not_equal(kcr_objclient_watch(&fx->c, &CM, NULL, &o, &bad, &fx->err), 0);
  assert_null(bad);
  assert_true(kcr_error_is_bad_request(&fx->err));
}

/* no version: the current state sorted, then the changes; a version: the changes after it */
static void test_fake_watch_versions(void **state) {
  fx_t *fx = *state;
  kcr_watch_options o = {0};
  json_t *b, *c;
  char *rv;
  kcr_objwatch_t *w;
  b = create(fx, "ns", "b", NULL);
  json_decref(create(fx, "ns", "a", NULL));
  rv = rv_of(b); /* after b, before a */
  w = watch(fx, "ns", NULL);
  expect(w, KCR_WATCH_ADDED, "a");
  expect(w, KCR_WATCH_ADDED, "b");
  expect_none(w);
  kcr_objwatch_destroy(w);
  o.resource_version = "0"; /* "0" is "any": the current state too */
  w = watch(fx, "ns", &o);
  expect(w, KCR_WATCH_ADDED, "a");
  expect(w, KCR_WATCH_ADDED, "b");
  kcr_objwatch_destroy(w);
  /* from b's version: only a's creation, then live changes */
  o.resource_version = rv;
  w = watch(fx, "ns", &o);
  expect(w, KCR_WATCH_ADDED, "a");
  expect_none(w);
  c = create(fx, "ns", "c", NULL);
  expect(w, KCR_WATCH_ADDED, "c");
  kcr_objwatch_destroy(w);
  /* a version that is not a number */
  o.resource_version = "12abc";
  assert_int_not_equal(kcr_objclient_watch(&fx->c, &CM, "ns", &o, &w, &fx->err), 0);
  assert_true(kcr_error_is_bad_request(&fx->err));
  json_decref(b);
  json_decref(c);
  free(rv);
}

/* past the history: an ERROR event with 410 Expired, then the end */
static void test_fake_watch_expired(void **state) {
  fx_t *fx = *state;
  kcr_watch_options o = {0};
  kcr_watch_event ev;
  kcr_error_t err;
  kcr_objwatch_t *w;
  json_t *a;
  char *rv;
  assert_int_equal(kcr_fake_client_set_watch_history(fx->f, 2, NULL), 0);
  a = create(fx, "ns", "a", NULL);
  rv = rv_of(a);
  json_decref(create(fx, "ns", "b", NULL));
  o.resource_version = rv;
  w = watch(fx, "ns", &o); /* two changes kept: still in reach */
  expect(w, KCR_WATCH_ADDED, "b");
  kcr_objwatch_destroy(w);
  json_decref(create(fx, "ns", "c", NULL));
  json_decref(create(fx, "ns", "d", NULL)); /* a's and b's creations are forgotten */
  w = watch(fx, "ns", &o);
  assert_int_equal(kcr_objwatch_next(w, 0, &ev, NULL), 0);
  assert_int_equal(ev.type, KCR_WATCH_ERROR);
  assert_true(kcr_error_is_gone(ev.error));
  assert_string_equal(json_string_value(json_object_get(ev.object, "reason")), "Expired");
  json_decref(ev.object);
  kcr_error_clear(&err);
  assert_int_equal(kcr_objwatch_next(w, 0, &ev, &err), KCR_ECLOSED);
  kcr_objwatch_destroy(w);
  /* no history at all: any earlier version expires, the current one does not */
  assert_int_equal(kcr_fake_client_set_watch_history(fx->f, 0, NULL), 0);
  w = watch(fx, "ns", &o);
  assert_int_equal(kcr_objwatch_next(w, 0, &ev, NULL), 0);
  assert_int_equal(ev.type, KCR_WATCH_ERROR);
  json_decref(ev.object);
  kcr_objwatch_destroy(w);
  free(rv);
  a = (json_decref(a), create(fx, "ns", "e", NULL));
  rv = rv_of(a);
  o.resource_version = rv;
  w = watch(fx, "ns", &o);
  expect_none(w);
  kcr_objwatch_destroy(w);
  free(rv);
  json_decref(a);
  assert_int_equal(kcr_fake_client_set_watch_history(NULL, 1, NULL), KCR_EINVAL);
}

/* send_initial_events: the state, then a bookmark that says it ended */
static void test_fake_watch_initial_events(void **state) {
  fx_t *fx = *state;
  kcr_watch_options o = {.send_initial_events = 1, .allow_bookmarks = 1};
  kcr_objwatch_t *w;
  json_t *bm;
  json_decref(create(fx, "ns", "a", NULL));
  w = watch(fx, "ns", &o);
  expect(w, KCR_WATCH_ADDED, "a");
  bm = next_event(w, KCR_WATCH_BOOKMARK, NULL);
  assert_string_equal(kcr_meta_annotation(bm, "k8s.io/initial-events-end"), "true");
  assert_non_null(kcr_meta_resource_version(bm));
  json_decref(bm);
  kcr_objwatch_destroy(w);
  /* without bookmarks the server refuses it */
  o.allow_bookmarks = 0;
  assert_int_not_equal(kcr_objclient_watch(&fx->c, &CM, "ns", &o, &w, &fx->err), 0);
  assert_true(kcr_error_is_invalid(&fx->err));
}

/* the metadata client's Accept: events carry PartialObjectMetadata */
static void test_fake_watch_metadata(void **state) {
  fx_t *fx = *state;
  kcr_watch_options o = {.accept = KCR_ACCEPT_PARTIAL_METADATA};
  kcr_objwatch_t *w = watch(fx, "ns", &o);
  json_t *ev;
  json_decref(create(fx, "ns", "a", NULL));
  ev = next_event(w, KCR_WATCH_ADDED, "a");
  assert_string_equal(json_string_value(json_object_get(ev, "kind")), "PartialObjectMetadata");
  assert_null(json_object_get(ev, "data"));
  json_decref(ev);
  kcr_objwatch_destroy(w);
}

static int refuse(const kcr_fake_call *call, kcr_error_t *err, void *data) {
  (*(int *)data)++;
  assert_int_equal(call->verb, KCR_FAKE_WATCH);
  assert_string_equal(call->ns, "ns");
  return kcr_fake_error(err, 403, "Forbidden", "watch refused by the test");
}

/* an interceptor sees the watch and can refuse it */
static void test_fake_watch_intercepted(void **state) {
  fx_t *fx = *state;
  kcr_objwatch_t *w = NULL;
  int calls = 0;
  kcr_fake_client_intercept(fx->f, KCR_FAKE_WATCH, refuse, &calls);
  assert_int_equal(kcr_objclient_watch(&fx->c, &CM, "ns", NULL, &w, &fx->err), KCR_EAPI);
  assert_true(kcr_error_is_forbidden(&fx->err));
  assert_null(w);
  assert_int_equal(calls, 1);
  assert_int_equal(kcr_fake_client_calls(fx->f, KCR_FAKE_WATCH), 1);
}

/* a fake destroyed under an open watch ends it; the watch is still destroyed after */
static void test_fake_watch_fake_destroyed(void **state) {
  fx_t *fx = *state;
  kcr_objwatch_t *w = watch(fx, "ns", NULL), *w2 = watch(fx, NULL, NULL);
  kcr_watch_event ev;
  json_decref(create(fx, "ns", "a", NULL));
  kcr_objwatch_stop(w2); /* one stopped before: unregistered from the fake */
  kcr_fake_client_destroy(fx->f);
  fx->f = NULL;
  expect(w, KCR_WATCH_ADDED, "a");
  assert_int_equal(kcr_objwatch_next(w, -1, &ev, NULL), KCR_ECLOSED);
  kcr_objwatch_destroy(w);
  kcr_objwatch_destroy(w2);
}

/* writers on other threads while the watch is read: every change arrives once, in order */
typedef struct writer {
  kcr_objclient c;
  int n;
} writer_t;

static void *write_many(void *d) {
  writer_t *wr = d;
  char name[32];
  for (int i = 0; i < wr->n; i++) {
    json_t *o, *out = NULL;
    snprintf(name, sizeof(name), "w%03d", i);
    o = cm("ns", name, NULL);
    assert_int_equal(kcr_objclient_create(&wr->c, o, &out, NULL), 0);
    assert_int_equal(kcr_objclient_delete(&wr->c, out, NULL, NULL), 0);
    json_decref(o);
    json_decref(out);
  }
  return NULL;
}

static void test_fake_watch_concurrent(void **state) {
  fx_t *fx = *state;
  writer_t wr = {fx->c, 200};
  kcr_objwatch_t *w = watch(fx, "ns", NULL);
  unsigned long long last = 0;
  pthread_t t;
  char name[32];
  assert_int_equal(pthread_create(&t, NULL, write_many, &wr), 0);
  for (int i = 0; i < wr.n; i++) {
    snprintf(name, sizeof(name), "w%03d", i);
    for (int k = 0; k < 2; k++) {
      json_t *ev = next_event(w, k ? KCR_WATCH_DELETED : KCR_WATCH_ADDED, name);
      unsigned long long v = strtoull(kcr_meta_resource_version(ev), NULL, 10);
      assert_true(v > last);
      last = v;
      json_decref(ev);
    }
  }
  pthread_join(t, NULL);
  expect_none(w);
  kcr_objwatch_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_objwatch_queue),
      cmocka_unit_test(test_objwatch_close_error),
      cmocka_unit_test(test_objwatch_bound),
      cmocka_unit_test(test_objwatch_stop_wakes),
      cmocka_unit_test_setup_teardown(test_fake_watch_writes, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_timeout, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_finalizer, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_selector, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_versions, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_expired, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_initial_events, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_metadata, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_intercepted, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_fake_destroyed, fx_setup, fx_teardown),
      cmocka_unit_test_setup_teardown(test_fake_watch_concurrent, fx_setup, fx_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
