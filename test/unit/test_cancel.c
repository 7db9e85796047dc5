/* SPDX-License-Identifier: MIT */
/*
 * test_cancel.c: cancellation tokens with deadlines (Go's context.WithCancel,
 * WithDeadline): a token's reason, children derived from a parent, deadlines on
 * a fake clock, and what they do to requests against a scripted HTTP server on
 * loopback: a request in flight at the deadline is aborted, one after it is
 * refused before it is sent, a retry that would start past it is not made, the
 * request's own timeout still applies, and many threads share one token.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "httpserver.h"
#include "kcr/client.h"
#include "kcr/clock.h"
#include "testutil.h"

static const kcr_gvr configmaps = {"", "v1", "configmaps"};

static atomic_int count429;

static void handler(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  const char *p = req->path;
  (void)data;
  if (strcmp(p, "/api/v1/namespaces/default/configmaps/stall") == 0) {
    resp->action = KCR_TEST_HTTP_STALL;
    resp->stall_ms = 30000;
  } else if (strcmp(p, "/api/v1/namespaces/default/configmaps/always429") == 0) {
    atomic_fetch_add(&count429, 1);
    resp->status = 429;
    snprintf(resp->headers, sizeof(resp->headers), "Retry-After: 1\r\n");
    resp->body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
                 "\"code\":429,\"message\":\"slow down\"}";
  } else {
    resp->body = "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"ok\"}}";
  }
}

typedef struct fixture {
  kcr_test_client tc;
  kcr_clock_t *clock;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof(*f));
  kcr_time_t start = {1700000000, 0};
  if (!f || kcr_test_client_start(handler, NULL, &f->tc) != 0 ||
      kcr_fake_clock_create(1000 * KCR_NSEC_PER_SEC, start, &f->clock, NULL) != 0)
    return -1;
  atomic_store(&count429, 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  kcr_test_client_stop(&f->tc);
  kcr_clock_destroy(f->clock);
  free(f);
  return 0;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* wait_requests waits until the server has read n requests (bounded, 30 s). */
static void wait_requests(kcr_test_http_t *s, int n) {
  for (int i = 0; i < 30000 && kcr_test_http_requests(s) < n; i++)
    sleep_ms(1);
  assert_true(kcr_test_http_requests(s) >= n);
}

/* token_in makes a token, a child of parent (NULL: none), whose deadline is
 * after ns from now on the fixture's fake clock. */
static kcr_cancel_t *token_in(fixture *f, kcr_cancel_t *parent, int64_t ns) {
  kcr_cancel_t *t = NULL;
  assert_int_equal(
      kcr_cancel_create_child(parent, f->clock, kcr_clock_now(f->clock) + ns, &t, NULL), 0);
  return t;
}

/* ---- the token alone ---- */

static void test_cancel_deadline_fires_on_fake_clock(void **state) {
  fixture *f = *state;
  kcr_cancel_t *t = NULL;
  int64_t now = kcr_clock_now(f->clock);
  assert_int_equal(kcr_cancel_create_child(NULL, f->clock, now + KCR_NSEC_PER_SEC, &t, NULL), 0);
  assert_int_equal(kcr_cancel_deadline(t), now + KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_cancel_err(t), 0);
  kcr_fake_clock_step(f->clock, KCR_NSEC_PER_SEC - 1);
  assert_false(kcr_cancel_fired(t));
  kcr_fake_clock_step(f->clock, 1);
  assert_true(kcr_cancel_fired(t));
  assert_int_equal(kcr_cancel_err(t), KCR_ETIMEDOUT);
  /* The first reason stays. */
  kcr_cancel_fire(t);
  assert_int_equal(kcr_cancel_err(t), KCR_ETIMEDOUT);
  kcr_cancel_destroy(t);
}

static void test_cancel_fire_before_deadline_is_canceled(void **state) {
  fixture *f = *state;
  kcr_cancel_t *t = NULL;
  t = token_in(f, NULL, KCR_NSEC_PER_SEC);
  kcr_cancel_fire(t);
  assert_int_equal(kcr_cancel_err(t), KCR_ECANCELED);
  kcr_fake_clock_step(f->clock, 2 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_cancel_err(t), KCR_ECANCELED);
  kcr_cancel_destroy(t);
}

static void test_cancel_child_follows_parent(void **state) {
  fixture *f = *state;
  kcr_cancel_t *parent = NULL, *child = NULL, *grandchild = NULL, *late = NULL;
  int64_t now = kcr_clock_now(f->clock);
  kcr_error_t err;
  assert_int_equal(kcr_cancel_create(&parent, NULL), 0);
  assert_int_equal(
      kcr_cancel_create_child(parent, f->clock, now + 5 * KCR_NSEC_PER_SEC, &child, NULL), 0);
  assert_int_equal(kcr_cancel_create_child(child, NULL, 0, &grandchild, NULL), 0);
  /* A deadline-less grandchild inherits its parent's deadline and clock. */
  assert_int_equal(kcr_cancel_deadline(grandchild), now + 5 * KCR_NSEC_PER_SEC);
  /* A deadline on another clock than the parent's own is refused. */
  kcr_error_clear(&err);
  assert_int_equal(kcr_cancel_create_child(child, kcr_clock_system(), 1, &late, &err), KCR_EINVAL);
  assert_null(late);
  assert_non_null(strstr(err.message, "clock"));
  assert_int_equal(kcr_cancel_create_child(NULL, NULL, -1, &late, NULL), KCR_EINVAL);
  /* Firing the child leaves the parent alone; firing the parent reaches down. */
  kcr_cancel_fire(grandchild);
  assert_int_equal(kcr_cancel_err(child), 0);
  kcr_cancel_fire(parent);
  assert_int_equal(kcr_cancel_err(child), KCR_ECANCELED);
  assert_int_equal(kcr_cancel_err(grandchild), KCR_ECANCELED);
  /* A child of a fired token is born fired. */
  assert_int_equal(kcr_cancel_create_child(parent, NULL, 0, &late, NULL), 0);
  assert_int_equal(kcr_cancel_err(late), KCR_ECANCELED);
  kcr_cancel_destroy(late);
  kcr_cancel_destroy(grandchild);
  kcr_cancel_destroy(child);
  kcr_cancel_destroy(parent);
}

static void test_cancel_child_takes_earlier_deadline(void **state) {
  fixture *f = *state;
  kcr_cancel_t *parent = NULL, *child = NULL, *child2 = NULL;
  int64_t now = kcr_clock_now(f->clock);
  assert_int_equal(
      kcr_cancel_create_child(NULL, f->clock, now + 2 * KCR_NSEC_PER_SEC, &parent, NULL), 0);
  /* A later deadline than the parent's: the parent's holds. */
  assert_int_equal(
      kcr_cancel_create_child(parent, f->clock, now + 9 * KCR_NSEC_PER_SEC, &child, NULL), 0);
  assert_int_equal(kcr_cancel_deadline(child), now + 2 * KCR_NSEC_PER_SEC);
  /* An earlier one: the child's own, and the parent lives on past it. */
  assert_int_equal(kcr_cancel_create_child(parent, f->clock, now + KCR_NSEC_PER_SEC, &child2, NULL),
                   0);
  kcr_fake_clock_step(f->clock, KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_cancel_err(child2), KCR_ETIMEDOUT);
  assert_int_equal(kcr_cancel_err(parent), 0);
  assert_int_equal(kcr_cancel_err(child), 0);
  kcr_fake_clock_step(f->clock, KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_cancel_err(child), KCR_ETIMEDOUT);
  assert_int_equal(kcr_cancel_err(parent), KCR_ETIMEDOUT);
  kcr_cancel_destroy(child2);
  kcr_cancel_destroy(child);
  kcr_cancel_destroy(parent);
}

/* ---- requests ---- */

typedef struct stepper {
  fixture *f;
  int requests; /* step once the server has read this many */
  int64_t step;
  kcr_cancel_t *fire; /* fire this instead of stepping, when set */
} stepper;

static void *step_when_in_flight(void *arg) {
  stepper *s = arg;
  wait_requests(s->f->tc.server, s->requests);
  if (s->fire)
    kcr_cancel_fire(s->fire);
  else
    kcr_fake_clock_step(s->f->clock, s->step);
  return NULL;
}

static void test_cancel_deadline_aborts_request_in_flight(void **state) {
  fixture *f = *state;
  kcr_cancel_t *t = NULL;
  kcr_request_options o;
  kcr_error_t err;
  stepper s = {f, 1, 2 * KCR_NSEC_PER_SEC, NULL};
  pthread_t th;
  int before;
  t = token_in(f, NULL, KCR_NSEC_PER_SEC);
  memset(&o, 0, sizeof(o));
  o.cancel = t;
  /* The server holds the request for 30 s; the fake clock passes the deadline
   * once the server has it. */
  pthread_create(&th, NULL, step_when_in_flight, &s);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->tc.client, &configmaps, "default", "stall", &o, NULL, &err),
                   KCR_ETIMEDOUT);
  assert_non_null(strstr(err.message, "deadline exceeded"));
  pthread_join(th, NULL);
  assert_int_equal(kcr_cancel_err(t), KCR_ETIMEDOUT);
  /* After the deadline a request fails at once and the server never sees it. */
  before = kcr_test_http_requests(f->tc.server);
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->tc.client, &configmaps, "default", "ok", &o, NULL, &err),
                   KCR_ETIMEDOUT);
  assert_non_null(strstr(err.message, "deadline exceeded"));
  assert_int_equal(kcr_test_http_requests(f->tc.server), before);
  kcr_cancel_destroy(t);
}

static void test_cancel_deadline_passed_before_first_request(void **state) {
  fixture *f = *state;
  kcr_cancel_t *t = NULL;
  kcr_request_options o;
  t = token_in(f, NULL, 1);
  kcr_fake_clock_step(f->clock, 1);
  memset(&o, 0, sizeof(o));
  o.cancel = t;
  assert_int_equal(kcr_client_get(f->tc.client, &configmaps, "default", "ok", &o, NULL, NULL),
                   KCR_ETIMEDOUT);
  assert_int_equal(kcr_test_http_requests(f->tc.server), 0);
  kcr_cancel_destroy(t);
}

static void test_cancel_parent_fire_aborts_child_request(void **state) {
  fixture *f = *state;
  kcr_cancel_t *parent = NULL, *child = NULL;
  kcr_request_options o;
  stepper s = {f, 1, 0, NULL};
  pthread_t th;
  assert_int_equal(kcr_cancel_create(&parent, NULL), 0);
  child = token_in(f, parent, 3600 * KCR_NSEC_PER_SEC);
  s.fire = parent;
  memset(&o, 0, sizeof(o));
  o.cancel = child;
  pthread_create(&th, NULL, step_when_in_flight, &s);
  assert_int_equal(kcr_client_get(f->tc.client, &configmaps, "default", "stall", &o, NULL, NULL),
                   KCR_ECANCELED);
  pthread_join(th, NULL);
  kcr_cancel_destroy(child);
  kcr_cancel_destroy(parent);
}

static void test_cancel_request_timeout_still_applies(void **state) {
  fixture *f = *state;
  kcr_cancel_t *t = token_in(f, NULL, 3600 * KCR_NSEC_PER_SEC);
  kcr_request_options o = {.cancel = t};
  kcr_error_t err;
  o.timeout_ns = 200 * KCR_NSEC_PER_MSEC; /* sooner than the token's deadline */
  kcr_error_clear(&err);
  assert_int_equal(kcr_client_get(f->tc.client, &configmaps, "default", "stall", &o, NULL, &err),
                   KCR_ETIMEDOUT);
  assert_null(strstr(err.message, "deadline exceeded"));
  assert_int_equal(kcr_cancel_err(t), 0);
  kcr_cancel_destroy(t);
}

static void test_cancel_no_retry_past_deadline(void **state) {
  fixture *f = *state;
  /* The server asks for a retry after 1 s; the deadline is 0.5 s away. */
  kcr_cancel_t *t = token_in(f, NULL, 500 * KCR_NSEC_PER_MSEC);
  kcr_request_options o = {.cancel = t};
  kcr_error_t err;
  kcr_error_clear(&err);
  assert_int_equal(
      kcr_client_get(f->tc.client, &configmaps, "default", "always429", &o, NULL, &err), KCR_EAPI);
  assert_int_equal(err.http_status, 429);
  assert_int_equal(atomic_load(&count429), 1);
  kcr_cancel_destroy(t);
}

/* ---- threads ---- */

#define NREQ 4

static atomic_int started;

typedef struct worker {
  fixture *f;
  kcr_cancel_t *t;
  int rc;
} worker;

static void *do_stall(void *arg) {
  worker *w = arg;
  kcr_request_options o;
  kcr_cancel_t *mine = NULL;
  memset(&o, 0, sizeof(o));
  /* Each worker uses a child of the shared token without a deadline of its
   * own: the shared deadline reaches it through its parent. */
  if (kcr_cancel_create_child(w->t, NULL, 0, &mine, NULL) != 0) {
    w->rc = 1;
    return NULL;
  }
  o.cancel = mine;
  atomic_fetch_add(&started, 1);
  w->rc = kcr_client_get(w->f->tc.client, &configmaps, "default", "stall", &o, NULL, NULL);
  kcr_cancel_destroy(mine);
  return NULL;
}

typedef struct churner {
  kcr_cancel_t *t;
  atomic_int checks;
} churner;

/* churn makes and drops children of the shared token and asks it, until it fires. */
static void *churn(void *arg) {
  churner *c = arg;
  for (;;) {
    kcr_cancel_t *child = NULL;
    int why = kcr_cancel_err(c->t);
    if (kcr_cancel_create_child(c->t, NULL, 0, &child, NULL) == 0) {
      (void)kcr_cancel_err(child);
      kcr_cancel_destroy(child);
    }
    atomic_fetch_add(&c->checks, 1);
    if (why)
      break;
    sleep_ms(1);
  }
  return NULL;
}

static void test_cancel_deadline_shared_by_threads(void **state) {
  fixture *f = *state;
  kcr_cancel_t *t = NULL;
  worker w[NREQ];
  pthread_t th[NREQ], ch;
  churner c;
  t = token_in(f, NULL, KCR_NSEC_PER_SEC);
  c.t = t;
  atomic_init(&c.checks, 0);
  atomic_store(&started, 0);
  pthread_create(&ch, NULL, churn, &c);
  for (int i = 0; i < NREQ; i++) {
    w[i].f = f;
    w[i].t = t;
    w[i].rc = 0;
    pthread_create(&th[i], NULL, do_stall, &w[i]);
  }
  /* The client waits for the first connection to tell whether it
   * multiplexes (HTTP/1.1 here), so the server sees the first request and the
   * others queue in the client: all are in flight either way. */
  for (int i = 0; i < 30000 && atomic_load(&started) < NREQ; i++)
    sleep_ms(1);
  wait_requests(f->tc.server, 1);
  sleep_ms(50); /* let the last ones be posted; they end alike if not */
  kcr_fake_clock_step(f->clock, KCR_NSEC_PER_SEC);
  for (int i = 0; i < NREQ; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(w[i].rc, KCR_ETIMEDOUT);
  }
  pthread_join(ch, NULL);
  assert_true(atomic_load(&c.checks) > 0);
  assert_int_equal(kcr_cancel_err(t), KCR_ETIMEDOUT);
  kcr_cancel_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cancel_deadline_fires_on_fake_clock, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_fire_before_deadline_is_canceled, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_child_follows_parent, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_child_takes_earlier_deadline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_deadline_aborts_request_in_flight, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_deadline_passed_before_first_request, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_parent_fire_aborts_child_request, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_request_timeout_still_applies, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_no_retry_past_deadline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_deadline_shared_by_threads, setup, teardown),
  };
  return cmocka_run_group_tests_name("cancel", tests, NULL, NULL);
}
