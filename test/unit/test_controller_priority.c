/* SPDX-License-Identifier: MIT */
/*
 * test_controller_priority.c: a controller's use of the priority queue, fed
 * through its event handlers on a fake clock: the initial list and resyncs go
 * in low and a real change overtakes them, owned and mapped kinds alike; a
 * requeue keeps the key's priority or takes the result's; the limiter
 * upstream pairs with the priority queue; and use_priority_queue false (the
 * control, FIFO), on the controller and through the manager's option.
 */
#include <stdio.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "httpserver.h"
#include "kcr/controller.h"
#include "kcr/manager.h"
#include "kcr/meta.h"
#include "testutil.h"

#define MS KCR_NSEC_PER_MSEC

typedef struct rec {
  char order[2048];   /* "name@priority name@priority ..." in reconcile order */
  int set_priority;   /* when nonzero, the reconciler sets res->priority to it */
  bool requeue_after; /* ask for a requeue after 1 s */
  int rc;             /* returned */
} rec_t;

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  rec_t *r = data;
  char one[96];
  (void)ctx;
  snprintf(one, sizeof(one), "%s%s@%d", r->order[0] ? " " : "", req->name, res->priority);
  strncat(r->order, one, sizeof(r->order) - strlen(r->order) - 1);
  if (r->set_priority)
    res->priority = r->set_priority;
  if (r->requeue_after)
    res->requeue_after_ns = KCR_NSEC_PER_SEC;
  return r->rc;
}

typedef struct fixture {
  kcr_clock_t *clock;
  kcr_controller_t *c;
  rec_t r;
} fixture_t;

/* make: a controller on a fake clock; pq NULL: the default (on). */
static fixture_t *make(const bool *pq, bool own_limiter) {
  fixture_t *fx = test_calloc(1, sizeof(*fx));
  kcr_controller_options o;
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1700000000, 0}, &fx->clock, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.name = "prio";
  o.reconcile = reconcile;
  o.data = &fx->r;
  o.clock = fx->clock;
  o.use_priority_queue = pq;
  if (own_limiter)
    assert_int_equal(
        kcr_ratelimiter_exponential_create(5 * MS, 1000 * KCR_NSEC_PER_SEC, &o.rate_limiter, NULL),
        0);
  assert_int_equal(kcr_controller_create(&o, &fx->c, NULL), 0);
  return fx;
}

static void unmake(fixture_t *fx) {
  kcr_controller_destroy(fx->c);
  kcr_clock_destroy(fx->clock);
  test_free(fx);
}

/* cm makes a ConfigMap ns/name at resourceVersion rv (new reference). */
static json_t *cm(const char *name, const char *rv) {
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                   "namespace", "ns", "name", name, "resourceVersion", rv);
}

/* run reconciles n keys, one at a time, as a worker does. */
static void run(fixture_t *fx, int n) {
  for (int i = 0; i < n; i++)
    assert_int_equal(kcr__controller_process_next(fx->c), 0);
}

/* position returns the 0-based place of name in the reconcile order, -1 if absent. */
static int position(const rec_t *r, const char *name) {
  char copy[sizeof(r->order)], *save = NULL;
  int i = 0;
  snprintf(copy, sizeof(copy), "%s", r->order);
  for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save), i++) {
    size_t n = strcspn(t, "@");
    if (strlen(name) == n && strncmp(t, name, n) == 0)
      return i;
  }
  return -1;
}

enum { INITIAL = 20 };

/* restart feeds For's handler an initial list of INITIAL ConfigMaps, a resync
 * of one of them (equal versions) and then a real change of another. */
static void restart(fixture_t *fx) {
  const kcr_gvk gvk = {"", "v1", "ConfigMap"};
  kcr_event_handler h;
  json_t *old_obj, *new_obj;
  assert_int_equal(kcr_controller_for(fx->c, &gvk, NULL, NULL), 0);
  assert_true(kcr__controller_handler(fx->c, 0, &h));
  for (int i = 0; i < INITIAL; i++) {
    char name[16], rv[16];
    json_t *o;
    snprintf(name, sizeof(name), "cm-%02d", i);
    snprintf(rv, sizeof(rv), "%d", 100 + i);
    o = cm(name, rv);
    h.on_add(o, true, h.data);
    json_decref(o);
  }
  old_obj = cm("cm-03", "103"); /* a resync: nothing changed */
  h.on_update(old_obj, old_obj, h.data);
  json_decref(old_obj);
  old_obj = cm("cm-15", "115");
  new_obj = cm("cm-15", "900"); /* a real change */
  h.on_update(old_obj, new_obj, h.data);
  json_decref(old_obj);
  json_decref(new_obj);
  /* an add after the initial list (a new object): priority 0 too */
  new_obj = cm("fresh", "901");
  h.on_add(new_obj, false, h.data);
  json_decref(new_obj);
}

static void test_controller_priority_change_overtakes_initial_list(void **state) {
  fixture_t *fx = make(NULL, true);
  (void)state;
  restart(fx);
  assert_int_equal(kcr_workqueue_len(kcr_controller_queue(fx->c)), INITIAL + 1);
  run(fx, INITIAL + 1);
  /* the change and the new object first, at 0; the list after, low, in order;
   * the resync did not move cm-03 */
  assert_int_equal(position(&fx->r, "cm-15"), 0);
  assert_int_equal(position(&fx->r, "fresh"), 1);
  assert_int_equal(position(&fx->r, "cm-00"), 2);
  assert_int_equal(position(&fx->r, "cm-03"), 5);
  assert_int_equal(position(&fx->r, "cm-19"), INITIAL);
  assert_non_null(strstr(fx->r.order, "cm-15@0 fresh@0 cm-00@-100 cm-01@-100"));
  unmake(fx);
}

/* The control: without the priority queue the change waits its FIFO turn. */
static void test_controller_priority_off_is_fifo(void **state) {
  static const bool off = false;
  fixture_t *fx = make(&off, true);
  (void)state;
  restart(fx);
  run(fx, INITIAL + 1);
  assert_int_equal(position(&fx->r, "cm-00"), 0);
  assert_int_equal(position(&fx->r, "cm-15"), 15);
  assert_int_equal(position(&fx->r, "fresh"), INITIAL);
  assert_non_null(strstr(fx->r.order, "cm-00@0 cm-01@0"));
  unmake(fx);
}

/* A resync alone goes in low: a queued real change still comes first. */
static void test_controller_priority_resync_goes_low(void **state) {
  fixture_t *fx = make(NULL, true);
  const kcr_gvk gvk = {"", "v1", "ConfigMap"};
  kcr_event_handler h;
  json_t *a = cm("a", "1"), *b1 = cm("b", "1"), *b2 = cm("b", "2");
  (void)state;
  assert_int_equal(kcr_controller_for(fx->c, &gvk, NULL, NULL), 0);
  assert_true(kcr__controller_handler(fx->c, 0, &h));
  h.on_update(a, a, h.data);   /* resync */
  h.on_update(b1, b2, h.data); /* change */
  run(fx, 2);
  assert_string_equal(fx->r.order, "b@0 a@-100");
  json_decref(a);
  json_decref(b1);
  json_decref(b2);
  unmake(fx);
}

static void map_to_target(const json_t *obj, kcr_requests_t *reqs, void *data) {
  (void)obj;
  (void)data;
  kcr_requests_add(reqs, "ns", "target");
}

/* Owned and mapped kinds: their initial list reaches the queue low too. */
static void test_controller_priority_owns_and_watches(void **state) {
  fixture_t *fx = make(NULL, true);
  const kcr_gvk app = {"kcr.dev", "v1", "App"}, dep = {"apps", "v1", "Deployment"},
                sec = {"", "v1", "Secret"};
  kcr_event_handler hown, hmap;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  char *key = NULL;
  int prio = 0;
  json_t *child =
      json_pack("{s:{s:s,s:s,s:s,s:[{s:s,s:s,s:s,s:b}]}}", "metadata", "namespace", "ns", "name",
                "d", "resourceVersion", "5", "ownerReferences", "apiVersion", "kcr.dev/v1", "kind",
                "App", "name", "owner", "controller", 1);
  json_t *secret = cm("s", "7");
  (void)state;
  assert_int_equal(kcr_controller_for(fx->c, &app, NULL, NULL), 0);
  assert_int_equal(kcr_controller_owns(fx->c, &dep, NULL, NULL), 0);
  assert_int_equal(kcr_controller_watches(fx->c, &sec, map_to_target, NULL, NULL, NULL), 0);
  assert_true(kcr__controller_handler(fx->c, 1, &hown));
  assert_true(kcr__controller_handler(fx->c, 2, &hmap));
  hown.on_add(child, true, hown.data);
  hmap.on_add(secret, true, hmap.data);
  assert_int_equal(kcr_workqueue_get_with_priority(q, &key, &prio), 0);
  assert_string_equal(key, "ns/owner");
  assert_int_equal(prio, KCR_WORKQUEUE_PRIORITY_LOW);
  kcr_workqueue_done(q, key);
  kcr_free(key);
  assert_int_equal(kcr_workqueue_get_with_priority(q, &key, &prio), 0);
  assert_string_equal(key, "ns/target");
  assert_int_equal(prio, KCR_WORKQUEUE_PRIORITY_LOW);
  kcr_workqueue_done(q, key);
  kcr_free(key);
  /* a delete is never low */
  hown.on_delete(child, NULL, hown.data);
  assert_int_equal(kcr_workqueue_get_with_priority(q, &key, &prio), 0);
  assert_int_equal(prio, 0);
  kcr_workqueue_done(q, key);
  kcr_free(key);
  json_decref(child);
  json_decref(secret);
  unmake(fx);
}

/* A requeue keeps the priority the key came with, unless the result sets one. */
static void test_controller_priority_requeue(void **state) {
  fixture_t *fx = make(NULL, true);
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  kcr_workqueue_add_opts low = {0, false, KCR_WORKQUEUE_PRIORITY_LOW};
  (void)state;
  /* an error: rate-limited (5 ms), still low */
  assert_int_equal(kcr_workqueue_add_with_opts(q, "ns/err", &low), 0);
  fx->r.rc = KCR_EINVAL;
  run(fx, 1);
  fx->r.rc = 0;
  assert_int_equal(kcr_workqueue_add(q, "ns/plain"), 0);
  kcr_fake_clock_step(fx->clock, 5 * MS);
  run(fx, 2);
  assert_string_equal(fx->r.order, "err@-100 plain@0 err@-100");

  /* requeue_after with res->priority set: the requeue goes in at it */
  fx->r.order[0] = '\0';
  fx->r.set_priority = 42;
  fx->r.requeue_after = true;
  assert_int_equal(kcr_workqueue_add_with_opts(q, "ns/raised", &low), 0);
  run(fx, 1);
  fx->r.set_priority = 0;
  fx->r.requeue_after = false;
  assert_int_equal(kcr_workqueue_add(q, "ns/plain"), 0);
  kcr_fake_clock_step(fx->clock, KCR_NSEC_PER_SEC);
  run(fx, 2);
  assert_string_equal(fx->r.order, "raised@-100 raised@42 plain@0");
  unmake(fx);
}

/* With the priority queue and no limiter of its own, a controller backs off
 * per key only (upstream's exponential 5 ms .. 1000 s, no 10 qps bucket): 150
 * first failures are all due after 5 ms. */
static void test_controller_priority_default_limiter(void **state) {
  static const bool off = false;
  fixture_t *on = make(NULL, false), *plain = make(&off, false);
  (void)state;
  for (int i = 0; i < 150; i++) {
    char key[16];
    snprintf(key, sizeof(key), "ns/k%d", i);
    assert_int_equal(kcr_workqueue_add_rate_limited(kcr_controller_queue(on->c), key), 0);
    assert_int_equal(kcr_workqueue_add_rate_limited(kcr_controller_queue(plain->c), key), 0);
  }
  kcr_fake_clock_step(on->clock, 5 * MS);
  kcr_fake_clock_step(plain->clock, 5 * MS);
  assert_int_equal(kcr_workqueue_len(kcr_controller_queue(on->c)), 150);
  /* the plain queue's default: the bucket's burst of 100, then 10 qps */
  assert_int_equal(kcr_workqueue_len(kcr_controller_queue(plain->c)), 100);
  unmake(on);
  unmake(plain);
}

static void api_404(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  (void)req;
  (void)data;
  resp->status = 404;
  resp->body = "{}";
}

/* kcr_manager_options.disable_priority_queue: the manager's controllers get the
 * plain queue unless their own option says otherwise. */
static void test_controller_priority_manager_option(void **state) {
  static const bool on = true;
  kcr_test_client tc;
  kcr_manager_options mo;
  kcr_manager_t *m;
  kcr_controller_t *c1, *c2;
  kcr_controller_options o;
  rec_t r;
  kcr_workqueue_add_opts hi = {0, false, 9};
  char *key = NULL;
  int prio = 0;
  (void)state;
  memset(&mo, 0, sizeof(mo));
  memset(&o, 0, sizeof(o));
  memset(&r, 0, sizeof(r));
  assert_int_equal(kcr_test_client_start(api_404, NULL, &tc), 0);
  mo.config = tc.config;
  mo.no_signal_handlers = true;
  mo.disable_priority_queue = true;
  assert_int_equal(kcr_manager_create(&mo, &m, NULL), 0);
  o.reconcile = reconcile;
  o.data = &r;
  o.name = "inherits";
  assert_int_equal(kcr_manager_add_controller(m, &o, &c1, NULL), 0);
  o.name = "overrides";
  o.use_priority_queue = &on;
  assert_int_equal(kcr_manager_add_controller(m, &o, &c2, NULL), 0);
  assert_int_equal(kcr_workqueue_add_with_opts(kcr_controller_queue(c1), "k", &hi), 0);
  assert_int_equal(kcr_workqueue_get_with_priority(kcr_controller_queue(c1), &key, &prio), 0);
  assert_int_equal(prio, 0);
  kcr_free(key);
  assert_int_equal(kcr_workqueue_add_with_opts(kcr_controller_queue(c2), "k", &hi), 0);
  assert_int_equal(kcr_workqueue_get_with_priority(kcr_controller_queue(c2), &key, &prio), 0);
  assert_int_equal(prio, 9);
  kcr_free(key);
  kcr_workqueue_done(kcr_controller_queue(c1), "k");
  kcr_workqueue_done(kcr_controller_queue(c2), "k");
  kcr_manager_destroy(m);
  kcr_test_client_stop(&tc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_controller_priority_change_overtakes_initial_list),
      cmocka_unit_test(test_controller_priority_off_is_fifo),
      cmocka_unit_test(test_controller_priority_resync_goes_low),
      cmocka_unit_test(test_controller_priority_owns_and_watches),
      cmocka_unit_test(test_controller_priority_requeue),
      cmocka_unit_test(test_controller_priority_default_limiter),
      cmocka_unit_test(test_controller_priority_manager_option),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
