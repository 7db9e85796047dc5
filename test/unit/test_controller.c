/* SPDX-License-Identifier: MIT */
/*
 * test_controller.c: the reconcile result semantics with a fake reconciler on a
 * fake clock (driven one key at a time through the testing entry point), the
 * metrics, the event handlers (for, owns, watches, predicates, the global event
 * filter) fed with JSON fixtures, channel sources pushed from several threads,
 * and the set-up errors.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cache/informer_multi_internal.h"
#include "controller/controller_internal.h"
#include "kcr/controller.h"
#include "kcr/meta.h"
#include "kcr/rand.h"
#include "kcr/testing.h"
#include "testutil.h"

typedef struct fake {
  int rc;
  bool terminal;
  kcr_result res;
  int calls;
  char last_ns[64], last_name[64], last_id[KCR_UUID_BUFSIZE];
  bool had_cancel;
} fake_t;

static int reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                     void *data) {
  fake_t *f = data;
  f->calls++;
  snprintf(f->last_ns, sizeof(f->last_ns), "%s", req->ns);
  snprintf(f->last_name, sizeof(f->last_name), "%s", req->name);
  snprintf(f->last_id, sizeof(f->last_id), "%s", kcr_reconcile_id(ctx));
  f->had_cancel = kcr_reconcile_cancel(ctx) == kcr_reconcile_client(ctx)->cancel;
  *res = f->res;
  if (f->rc) {
    kcr_error_set(kcr_reconcile_err(ctx), f->rc, "fake failure");
    return f->terminal ? kcr_reconcile_terminal(ctx, f->rc) : f->rc;
  }
  return 0;
}

typedef struct fixture {
  kcr_clock_t *clock;
  kcr_metrics_registry_t *reg;
  kcr_controller_t *c;
  fake_t f;
} fixture_t;

static int setup(void **state) {
  fixture_t *fx = calloc(1, sizeof(*fx));
  kcr_controller_options o;
  kcr_ratelimiter_t *rl;
  if (kcr_fake_clock_create(0, (kcr_time_t){1700000000, 0}, &fx->clock, NULL))
    return -1;
  /* exponential only (5 ms doubling), so delays are exact */
  if (kcr_ratelimiter_exponential_create(5 * KCR_NSEC_PER_MSEC, 1000 * KCR_NSEC_PER_SEC, &rl, NULL))
    return -1;
  if (kcr_metrics_registry_create(&fx->reg, NULL))
    return -1;
  memset(&o, 0, sizeof(o));
  o.name = "test";
  o.reconcile = reconcile;
  o.data = &fx->f;
  o.clock = fx->clock;
  o.rate_limiter = rl;
  o.metrics = fx->reg;
  if (kcr_controller_create(&o, &fx->c, NULL))
    return -1;
  *state = fx;
  return 0;
}

static int teardown(void **state) {
  fixture_t *fx = *state;
  kcr_controller_destroy(fx->c);
  kcr_metrics_registry_destroy(fx->reg);
  kcr_clock_destroy(fx->clock);
  free(fx);
  return 0;
}

/* series returns the "test" controller's child of the family name on the
 * fixture's registry (the controller registered it; NULL if it did not). */
static kcr_metric_child_t *series(fixture_t *fx, const char *name) {
  return kcr_metric_withv(kcr_metrics_find(fx->reg, name), "test", NULL);
}

/* total reads controller_runtime_reconcile_total{controller="test",result=o}. */
static double total(fixture_t *fx, kcr_reconcile_outcome o) {
  kcr_metric_t *m = kcr_metrics_find(fx->reg, KCR_CONTROLLER_METRIC_RECONCILE_TOTAL);
  assert_non_null(m);
  return kcr_metric_value(kcr_metric_withv(m, "test", kcr_reconcile_outcome_name(o), NULL));
}

static double value(fixture_t *fx, const char *name) {
  kcr_metric_child_t *c = series(fx, name);
  assert_non_null(c);
  return kcr_metric_value(c);
}

/* wait_len polls (real time, bounded) until the queue holds n ready keys. */
static void wait_len(kcr_controller_t *c, size_t n) {
  for (int i = 0; i < 2000 && kcr_workqueue_len(kcr_controller_queue(c)) != n; i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  assert_int_equal(kcr_workqueue_len(kcr_controller_queue(c)), n);
}

static void run_once(fixture_t *fx, const char *key) {
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(fx->c), key), 0);
  assert_int_equal(kcr__controller_process_next(fx->c), 0);
}

static void test_controller_success_forgets(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  run_once(fx, "ns/a");
  assert_int_equal(fx->f.calls, 1);
  assert_string_equal(fx->f.last_ns, "ns");
  assert_string_equal(fx->f.last_name, "a");
  assert_int_equal(strlen(fx->f.last_id), 36);
  assert_true(fx->f.had_cancel);
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 0);
  assert_int_equal(kcr_workqueue_len(q), 0);
  /* cluster-scoped key */
  run_once(fx, "node-1");
  assert_string_equal(fx->f.last_ns, "");
  assert_string_equal(fx->f.last_name, "node-1");
  assert_int_equal(total(fx, KCR_RECONCILE_SUCCESS), 2);
  assert_int_equal(kcr_metric_count(series(fx, KCR_CONTROLLER_METRIC_RECONCILE_TIME)), 2);
  assert_int_equal(value(fx, KCR_CONTROLLER_METRIC_MAX_CONCURRENT), 1);
  assert_int_equal(value(fx, KCR_CONTROLLER_METRIC_ACTIVE_WORKERS), 0);
}

static void test_controller_error_rate_limited(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  fx->f.rc = KCR_EIO;
  run_once(fx, "ns/a");
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 1);
  assert_int_equal(kcr_workqueue_len(q), 0); /* waiting 5 ms */
  kcr_fake_clock_step(fx->clock, 5 * KCR_NSEC_PER_MSEC);
  wait_len(fx->c, 1);
  assert_int_equal(kcr__controller_process_next(fx->c), 0);
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 2);
  kcr_fake_clock_step(fx->clock, 9 * KCR_NSEC_PER_MSEC);
  assert_int_equal(kcr_workqueue_len(q), 0); /* second delay is 10 ms */
  kcr_fake_clock_step(fx->clock, 1 * KCR_NSEC_PER_MSEC);
  wait_len(fx->c, 1);
  /* success resets the backoff */
  fx->f.rc = 0;
  assert_int_equal(kcr__controller_process_next(fx->c), 0);
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 0);
  assert_int_equal(total(fx, KCR_RECONCILE_ERROR), 2);
  assert_int_equal(value(fx, KCR_CONTROLLER_METRIC_RECONCILE_ERRORS), 2);
  assert_int_equal(value(fx, KCR_CONTROLLER_METRIC_TERMINAL_ERRORS), 0);
  assert_int_equal(total(fx, KCR_RECONCILE_SUCCESS), 1);
}

/* slow: a reconciler that takes `took` on the fake clock and records its deadline. */
typedef struct slow {
  kcr_clock_t *clock;
  int64_t took, deadline, started;
  int64_t token_deadline;    /* kcr_cancel_deadline of the reconcile's token */
  int err_before, err_after; /* kcr_cancel_err of it at the start and at the end */
  bool client_has_token;     /* the client's requests carry it */
  bool reader_has_token;     /* and the API reader's, a copy of the option's */
  const kcr_objclient *reader;
} slow_t;

static int reconcile_slow(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                          kcr_result *res, void *data) {
  slow_t *s = data;
  (void)req;
  (void)res;
  s->started = kcr_clock_now(s->clock);
  s->deadline = kcr_reconcile_deadline(ctx);
  s->token_deadline = kcr_cancel_deadline(kcr_reconcile_cancel(ctx));
  s->client_has_token = kcr_reconcile_client(ctx)->cancel == kcr_reconcile_cancel(ctx);
  s->reader_has_token = kcr_reconcile_api_reader(ctx)->cancel == kcr_reconcile_cancel(ctx) &&
                        kcr_reconcile_api_reader(ctx)->ops == s->reader->ops &&
                        kcr_reconcile_api_reader(ctx)->data == s->reader->data;
  s->err_before = kcr_cancel_err(kcr_reconcile_cancel(ctx));
  kcr_fake_clock_step(s->clock, s->took);
  s->err_after = kcr_cancel_err(kcr_reconcile_cancel(ctx));
  return 0;
}

/* Without reconcile_timeout_ns there is no deadline and nothing times out, however
 * long a reconcile takes; the panics and timeouts series exist at 0 from create
 * (controller-runtime's initMetrics). */
static void test_controller_no_timeout_by_default(void **state) {
  fixture_t *fx = *state;
  kcr_buf_t b;
  char *text;
  assert_int_equal(value(fx, KCR_CONTROLLER_METRIC_RECONCILE_PANICS), 0);
  assert_int_equal(value(fx, KCR_CONTROLLER_METRIC_RECONCILE_TIMEOUTS), 0);
  kcr_buf_init(&b, 1u << 24);
  assert_int_equal(kcr_metrics_render(fx->reg, &b), 0);
  text = kcr_buf_take(&b, NULL);
  assert_non_null(strstr(text,
                         "# HELP controller_runtime_reconcile_panics_total Total number of "
                         "reconciliation panics per controller\n# TYPE "
                         "controller_runtime_reconcile_panics_total counter\n"
                         "controller_runtime_reconcile_panics_total{controller=\"test\"} 0\n"));
  assert_non_null(strstr(text,
                         "# HELP controller_runtime_reconcile_timeouts_total Total number of "
                         "reconciliation timeouts per controller\n# TYPE "
                         "controller_runtime_reconcile_timeouts_total counter\n"
                         "controller_runtime_reconcile_timeouts_total{controller=\"test\"} 0\n"));
  kcr_free(text);
  run_once(fx, "ns/a");
  assert_int_equal(value(fx, KCR_CONTROLLER_METRIC_RECONCILE_TIMEOUTS), 0);
}

/* reconcile_timeout_ns: each reconcile's deadline is its start plus the timeout;
 * one that returns before it is not a timeout, one still running when it passes
 * is, and the result is handled as usual (success here). */
static void test_controller_reconcile_timeout(void **state) {
  kcr_fake_client_t *fake = NULL;
  kcr_controller_options o;
  kcr_metrics_registry_t *reg;
  kcr_controller_t *c;
  kcr_clock_t *clock;
  slow_t s = {0};
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1700000000, 0}, &clock, NULL), 0);
  assert_int_equal(kcr_metrics_registry_create(&reg, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.name = "test";
  o.reconcile = reconcile_slow;
  o.data = &s;
  o.clock = clock;
  o.metrics = reg;
  o.reconcile_timeout_ns = KCR_NSEC_PER_SEC;
  assert_int_equal(kcr_fake_client_create(NULL, &fake, NULL), 0);
  o.api_reader = kcr_fake_client_objclient(fake);
  s.reader = &o.api_reader;
  assert_int_equal(kcr_controller_create(&o, &c, NULL), 0);
  s.clock = clock;
  kcr_metric_child_t *timeouts = kcr_metric_withv(
      kcr_metrics_find(reg, KCR_CONTROLLER_METRIC_RECONCILE_TIMEOUTS), "test", NULL);
  kcr_metric_child_t *success = kcr_metric_withv(
      kcr_metrics_find(reg, KCR_CONTROLLER_METRIC_RECONCILE_TOTAL), "test", "success", NULL);
  assert_non_null(timeouts);

  s.took = KCR_NSEC_PER_SEC - 1; /* in time */
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(c), "ns/a"), 0);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_true(s.deadline == s.started + KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_metric_value(timeouts), 0);
  /* The reconcile's token carries the deadline (a Go context's), for the
   * client's requests too; in time, it has not fired. */
  assert_true(s.token_deadline == s.deadline);
  assert_true(s.client_has_token);
  assert_true(s.reader_has_token);
  assert_int_equal(s.err_before, 0);
  assert_int_equal(s.err_after, 0);

  s.took = KCR_NSEC_PER_SEC; /* the deadline passed while it ran */
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(c), "ns/b"), 0);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_true(s.deadline == s.started + KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_metric_value(timeouts), 1);
  assert_int_equal(s.err_before, 0);
  assert_int_equal(s.err_after, KCR_ETIMEDOUT); /* context.DeadlineExceeded */
  /* The controller's own token lives on: the next reconcile gets a fresh one. */
  s.took = 0;
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(c), "ns/c"), 0);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_int_equal(s.err_after, 0);
  assert_int_equal(kcr_metric_value(success), 3);

  kcr_controller_destroy(c);
  kcr_fake_client_destroy(fake);
  kcr_metrics_registry_destroy(reg);
  kcr_clock_destroy(clock);
}

/* stopper: a reconciler that stops its controller and records its token's state. */
typedef struct stopper {
  kcr_controller_t *c;
  int err_before, err_after;
  int64_t token_deadline;
} stopper_t;

static int reconcile_stopping(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req,
                              kcr_result *res, void *data) {
  stopper_t *s = data;
  (void)req;
  (void)res;
  s->token_deadline = kcr_cancel_deadline(kcr_reconcile_cancel(ctx));
  s->err_before = kcr_cancel_err(kcr_reconcile_cancel(ctx));
  (void)kcr_controller_stop(s->c, 1); /* does not wait for this reconcile */
  s->err_after = kcr_cancel_err(kcr_reconcile_cancel(ctx));
  return 0;
}

/* The controller's stop fires each reconcile's own deadline token too (it is a
 * child of the controller's): KCR_ECANCELED, long before the deadline. */
static void test_controller_stop_cancels_reconcile_with_deadline(void **state) {
  kcr_controller_options o;
  kcr_controller_t *c;
  kcr_clock_t *clock;
  stopper_t s = {0};
  (void)state;
  assert_int_equal(kcr_fake_clock_create(0, (kcr_time_t){1700000000, 0}, &clock, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.name = "test";
  o.reconcile = reconcile_stopping;
  o.data = &s;
  o.clock = clock;
  o.reconcile_timeout_ns = 3600 * KCR_NSEC_PER_SEC;
  assert_int_equal(kcr_controller_create(&o, &c, NULL), 0);
  s.c = c;
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(c), "ns/a"), 0);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_true(s.token_deadline == 3600 * KCR_NSEC_PER_SEC);
  assert_int_equal(s.err_before, 0);
  assert_int_equal(s.err_after, KCR_ECANCELED);
  kcr_controller_destroy(c);
  kcr_clock_destroy(clock);
}

/* captured: the fields of the last line the controller logged, as key=value text. */
static struct {
  char msg[128];
  char fields[1024];
} captured;

static void on_log(const kcr_log_record *rec, void *data) {
  size_t n = 0;
  (void)data;
  snprintf(captured.msg, sizeof(captured.msg), "%s", rec->msg);
  captured.fields[0] = '\0';
  for (size_t i = 0; i < rec->nfields; i++) {
    if (rec->fields[i].type == KCR_LOG_FIELD_INT)
      n += (size_t)snprintf(captured.fields + n, sizeof(captured.fields) - n, "%s%s=%lld",
                            i ? " " : "", rec->fields[i].key, rec->fields[i].i);
    else
      n += (size_t)snprintf(captured.fields + n, sizeof(captured.fields) - n, "%s%s=%s",
                            i ? " " : "", rec->fields[i].key,
                            rec->fields[i].s ? rec->fields[i].s : "");
  }
}

static int reconcile_kv(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                        void *data) {
  kcr_log_field f[KCR_RECONCILE_LOG_FIELDS_MAX + 3];
  size_t *n = data;
  (void)req;
  (void)res;
  f[0] = KCR_LOG_STR("image", "web:2");
  f[1] = KCR_LOG_INT("replicas", 3);
  for (size_t i = 2; i < sizeof(f) / sizeof(f[0]); i++)
    f[i] = KCR_LOG_STR("pad", "x");
  kcr_reconcile_log_fields(ctx, KCR_LOG_INFO, "scaling", f, *n);
  return 0;
}

/* kcr_reconcile_log_fields: the reconcile's fields, then the caller's, and
 * what is past the bound counted, not written. */
static void test_controller_reconcile_log_kv(void **state) {
  kcr_controller_options o = {0};
  kcr_controller_t *c;
  size_t n = 2;
  char want[1024];
  const char *id;
  (void)state;
  o.name = "kv";
  o.reconcile = reconcile_kv;
  o.data = &n;
  assert_int_equal(kcr_controller_create(&o, &c, NULL), 0);
  kcr_log_set_handler(on_log, NULL);
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(c), "ns/web"), 0);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_string_equal(captured.msg, "scaling");
  id = strstr(captured.fields, "reconcileID=");
  assert_non_null(id);
  assert_true(strlen(id) > 12 + 36);
  snprintf(want, sizeof(want),
           "controller=kv namespace=ns name=web reconcileID=%.36s image=web:2 "
           "replicas=3",
           id + 12);
  assert_string_equal(captured.fields, want);
  n = KCR_RECONCILE_LOG_FIELDS_MAX + 3;
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(c), "ns/web"), 0);
  assert_int_equal(kcr__controller_process_next(c), 0);
  kcr_log_set_handler(NULL, NULL);
  assert_non_null(strstr(captured.fields, " pad=x droppedFields=3"));
  kcr_controller_destroy(c);
}

/* The reconcile's keys are fields of the line, as controller-runtime's, not in its message. */
static void test_controller_reconcile_log_fields(void **state) {
  fixture_t *fx = *state;
  char want[512];
  fx->f.rc = KCR_EIO;
  kcr_log_set_handler(on_log, NULL);
  run_once(fx, "ns/a");
  kcr_log_set_handler(NULL, NULL);
  assert_string_equal(captured.msg, "Reconciler error");
  snprintf(want, sizeof(want), "controller=test namespace=ns name=a reconcileID=%s error=%s: %s",
           fx->f.last_id, kcr_err_name(KCR_EIO), "fake failure");
  assert_string_equal(captured.fields, want);
}

static void test_controller_terminal_error(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  fx->f.rc = KCR_EIO;
  run_once(fx, "ns/a"); /* one ordinary failure first: backoff 1 */
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 1);
  kcr_fake_clock_step(fx->clock, 5 * KCR_NSEC_PER_MSEC);
  wait_len(fx->c, 1);
  fx->f.terminal = true;
  assert_int_equal(kcr__controller_process_next(fx->c), 0);
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 0); /* forgotten */
  kcr_fake_clock_step(fx->clock, 10 * KCR_NSEC_PER_SEC);
  wait_len(fx->c, 0);
  assert_int_equal(value(fx, KCR_CONTROLLER_METRIC_TERMINAL_ERRORS), 1);
  assert_int_equal(value(fx, KCR_CONTROLLER_METRIC_RECONCILE_ERRORS), 2);
  assert_int_equal(total(fx, KCR_RECONCILE_ERROR), 2);
}

static void test_controller_requeue_after(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  fx->f.rc = KCR_EIO;
  run_once(fx, "ns/a");
  kcr_fake_clock_step(fx->clock, 5 * KCR_NSEC_PER_MSEC);
  wait_len(fx->c, 1);
  fx->f.rc = 0;
  fx->f.res.requeue_after_ns = 10 * KCR_NSEC_PER_SEC;
  assert_int_equal(kcr__controller_process_next(fx->c), 0);
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 0); /* forget */
  kcr_fake_clock_step(fx->clock, 9 * KCR_NSEC_PER_SEC);
  assert_int_equal(kcr_workqueue_len(q), 0);
  kcr_fake_clock_step(fx->clock, 1 * KCR_NSEC_PER_SEC);
  wait_len(fx->c, 1);
  assert_int_equal(total(fx, KCR_RECONCILE_REQUEUE_AFTER), 1);
}

static void test_controller_requeue(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  fx->f.res.requeue = true;
  run_once(fx, "ns/a");
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 1);
  kcr_fake_clock_step(fx->clock, 5 * KCR_NSEC_PER_MSEC);
  wait_len(fx->c, 1);
  assert_int_equal(kcr__controller_process_next(fx->c), 0);
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 2);
  assert_int_equal(total(fx, KCR_RECONCILE_REQUEUE), 2);
}

static void test_controller_error_wins_over_requeue_after(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  fx->f.rc = KCR_EIO;
  fx->f.res.requeue_after_ns = 3600 * KCR_NSEC_PER_SEC;
  run_once(fx, "ns/a");
  assert_int_equal(kcr_workqueue_num_requeues(q, "ns/a"), 1);
  kcr_fake_clock_step(fx->clock, 5 * KCR_NSEC_PER_MSEC);
  wait_len(fx->c, 1); /* the rate-limited retry, not the hour */
  assert_int_equal(total(fx, KCR_RECONCILE_ERROR), 1);
  assert_int_equal(total(fx, KCR_RECONCILE_REQUEUE_AFTER), 0);
}

static void test_controller_stop_drops_queued(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  assert_int_equal(kcr_workqueue_add(q, "ns/a"), 0);
  assert_int_equal(kcr_controller_stop(fx->c, KCR_NSEC_PER_SEC), 0);
  /* the queued key is handed out and dropped without a reconcile */
  assert_int_equal(kcr__controller_process_next(fx->c), 0);
  assert_int_equal(fx->f.calls, 0);
  assert_int_equal(kcr__controller_process_next(fx->c), KCR_ECLOSED);
}

/* ---- event handlers ---- */

static json_t *load(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  if (!j)
    fail_msg("fixture: %s", e.text);
  return j;
}

/* drain returns the queued keys, sorted and joined with spaces, and empties q. */
static void drain(kcr_workqueue_t *q, char *out, size_t size) {
  char *keys[16];
  size_t n = 0;
  out[0] = '\0';
  while (kcr_workqueue_len(q) > 0 && n < 16) {
    assert_int_equal(kcr_workqueue_get(q, &keys[n]), 0);
    kcr_workqueue_done(q, keys[n]);
    n++;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (strcmp(keys[j], keys[i]) < 0) {
        char *t = keys[i];
        keys[i] = keys[j];
        keys[j] = t;
      }
  for (size_t i = 0; i < n; i++) {
    if (i)
      strncat(out, " ", size - strlen(out) - 1);
    strncat(out, keys[i], size - strlen(out) - 1);
    kcr_free(keys[i]);
  }
}

static void map_to_two(const json_t *obj, kcr_requests_t *reqs, void *data) {
  (void)data;
  kcr_requests_add(reqs, kcr_meta_namespace(obj), "mapped-1");
  kcr_requests_add(reqs, "", "mapped-cluster");
}

static void test_controller_handlers(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  const kcr_gvk app = {"kcr.dev", "v1", "App"}, cm = {"", "v1", "ConfigMap"},
                sec = {"", "v1", "Secret"};
  kcr_event_handler hfor, hown, hmap;
  char got[256];
  json_t *a1 = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"app\",\"generation\":1}}");
  json_t *a2 = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"app\",\"generation\":1,"
                    "\"resourceVersion\":\"9\"}}");
  json_t *child = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\",\"ownerReferences\":["
                       "{\"apiVersion\":\"kcr.dev/v1alpha1\",\"kind\":\"App\",\"name\":\"owner-a\","
                       "\"controller\":true}]}}");
  json_t *child2 = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\",\"ownerReferences\":["
                        "{\"apiVersion\":\"kcr.dev/v1\",\"kind\":\"App\",\"name\":\"owner-b\","
                        "\"controller\":true},{\"apiVersion\":\"kcr.dev/v1\",\"kind\":\"App\","
                        "\"name\":\"not-controller\"}]}}");
  json_t *stranger = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\",\"ownerReferences\":["
                          "{\"apiVersion\":\"other.dev/v1\",\"kind\":\"App\",\"name\":\"x\","
                          "\"controller\":true}]}}");
  assert_int_equal(kcr_controller_for(fx->c, &app, kcr_predicate_generation_changed(), NULL), 0);
  assert_int_equal(kcr_controller_owns(fx->c, &cm, NULL, NULL), 0);
  assert_int_equal(kcr_controller_watches(fx->c, &sec, map_to_two, NULL, NULL, NULL), 0);
  assert_true(kcr__controller_handler(fx->c, 0, &hfor));
  assert_true(kcr__controller_handler(fx->c, 1, &hown));
  assert_true(kcr__controller_handler(fx->c, 2, &hmap));
  assert_false(kcr__controller_handler(fx->c, 3, &hmap));
  /* For and Owns read metadata alone; a mapping function may read anything */
  assert_int_equal(kcr__controller_handler_flags(fx->c, 0), KCR__HANDLER_METADATA);
  assert_int_equal(kcr__controller_handler_flags(fx->c, 1), KCR__HANDLER_METADATA);
  assert_int_equal(kcr__controller_handler_flags(fx->c, 2), 0);

  /* for: add enqueues the key; an update without a generation change does not */
  hfor.on_add(a1, true, hfor.data);
  hfor.on_update(a1, a2, hfor.data);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "ns/app");
  hfor.on_delete(a2, NULL, hfor.data);
  hfor.on_delete(NULL, "ns/gone", hfor.data); /* no final state: dropped */
  drain(q, got, sizeof(got));
  assert_string_equal(got, "ns/app");

  /* owns: the controller owner of the primary group/kind (any version); both old and new */
  hown.on_add(child, false, hown.data);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "ns/owner-a");
  hown.on_update(child, child2, hown.data);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "ns/owner-a ns/owner-b");
  hown.on_delete(stranger, NULL, hown.data);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "");
  kcr__controller_set_primary_namespaced(fx->c, false);
  hown.on_delete(child2, NULL, hown.data);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "owner-b");
  kcr__controller_set_primary_namespaced(fx->c, true);

  /* watches: the map function's requests */
  hmap.on_add(a1, false, hmap.data);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "mapped-cluster ns/mapped-1");

  json_decref(a1);
  json_decref(a2);
  json_decref(child);
  json_decref(child2);
  json_decref(stranger);
}

static void map_to_owner_label(const json_t *obj, kcr_requests_t *reqs, void *data) {
  const char *owner = kcr_meta_label(obj, "owner");
  (void)data;
  if (owner)
    kcr_requests_add(reqs, kcr_meta_namespace(obj), owner);
}

typedef struct pusher {
  kcr_channel_source_t *s;
  int id;
} pusher_t;

static void *push_many(void *arg) {
  pusher_t *p = arg;
  for (int i = 0; i < 200; i++) {
    char name[32];
    snprintf(name, sizeof(name), "t%d-%d", p->id, i % 10);
    assert_int_equal(kcr_channel_source_push(p->s, "ns", name, NULL), 0);
  }
  return NULL;
}

/* A channel source (source.Channel): pushes from any thread reach every
 * controller watching it, before start too; generic events pass the watch's
 * predicate and its map function, or enqueue the object's own key; a
 * destroyed controller is taken out of the source. */
static void test_controller_channel_source(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c), *q2;
  kcr_channel_source_t *s;
  kcr_controller_options o = {0};
  kcr_controller_t *c2;
  kcr_predicate_t *labelled = NULL;
  kcr_error_t err = {0};
  fake_t f2 = {0};
  pthread_t th[4];
  pusher_t ps[4];
  char got[256];
  json_t *ev = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"ext\","
                    "\"labels\":{\"owner\":\"app\",\"tier\":\"db\"}}}");
  json_t *plain = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"plain\"}}");
  json_t *nameless = load("{\"metadata\":{\"namespace\":\"ns\"}}");

  assert_int_equal(kcr_channel_source_create(&s, &err), 0);
  o.name = "second";
  o.reconcile = reconcile;
  o.data = &f2;
  assert_int_equal(kcr_controller_create(&o, &c2, NULL), 0);
  q2 = kcr_controller_queue(c2);
  /* fx->c: the object's own key; c2: mapped by label, only tier=db */
  assert_int_equal(kcr_controller_watches_channel(fx->c, s, NULL, NULL, NULL, &err), 0);
  assert_int_equal(kcr_predicate_label_selector("tier=db", &labelled, &err), 0);
  assert_int_equal(kcr_controller_watches_channel(c2, s, map_to_owner_label, NULL, labelled, &err),
                   0);

  /* a request reaches both, with no predicate */
  assert_int_equal(kcr_channel_source_push(s, "ns", "req", &err), 0);
  assert_int_equal(kcr_channel_source_push(s, NULL, "cluster-wide", &err), 0);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "cluster-wide ns/req");
  drain(q2, got, sizeof(got));
  assert_string_equal(got, "cluster-wide ns/req");

  /* generic events: predicate, then map function or the object's key */
  assert_int_equal(kcr_channel_source_push_object(s, ev, &err), 0);
  assert_int_equal(kcr_channel_source_push_object(s, plain, &err), 0);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "ns/ext ns/plain");
  drain(q2, got, sizeof(got));
  assert_string_equal(got, "ns/app");

  /* bad input: a clear error, nothing queued */
  assert_int_equal(kcr_channel_source_push(s, "ns", "", &err), KCR_EINVAL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_channel_source_push_object(s, json_true(), &err), KCR_EINVAL);
  kcr_error_clear(&err);
  assert_int_equal(kcr_channel_source_push_object(s, nameless, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "map function"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_workqueue_len(q) + kcr_workqueue_len(q2), 0);

  /* pushes from four threads at once coalesce by key in each queue */
  for (int i = 0; i < 4; i++) {
    ps[i] = (pusher_t){s, i};
    pthread_create(&th[i], NULL, push_many, &ps[i]);
  }
  for (int i = 0; i < 4; i++)
    pthread_join(th[i], NULL);
  assert_int_equal(kcr_workqueue_len(q), 40);
  assert_int_equal(kcr_workqueue_len(q2), 40);

  /* the first reconcile of a pushed request is an ordinary one */
  while (kcr_workqueue_len(q2) > 0)
    drain(q2, got, sizeof(got));
  assert_int_equal(kcr_channel_source_push(s, "ns", "work", &err), 0);
  assert_int_equal(kcr__controller_process_next(c2), 0);
  assert_int_equal(f2.calls, 1);
  assert_string_equal(f2.last_name, "work");

  /* once c2 is gone, pushes reach only fx->c (ASan and valgrind check the rest) */
  kcr_controller_destroy(c2);
  while (kcr_workqueue_len(q) > 0)
    drain(q, got, sizeof(got));
  assert_int_equal(kcr_channel_source_push(s, "ns", "after", &err), 0);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "ns/after");

  kcr_controller_destroy(fx->c); /* before its source, as documented */
  fx->c = NULL;
  kcr_channel_source_destroy(s);
  json_decref(ev);
  json_decref(plain);
  json_decref(nameless);
}

/* A raw source needs an informer and a map function; reconcile_all needs a
 * started controller with a primary kind. */
static void test_controller_raw_source_errors(void **state) {
  fixture_t *fx = *state;
  kcr_error_t err = {0};
  assert_int_equal(kcr_controller_watches_informer(fx->c, NULL, map_to_two, NULL, NULL, &err),
                   KCR_EINVAL);
  assert_non_null(strstr(err.message, "informer"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_controller_reconcile_all(fx->c, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "before start"));
}

static void test_controller_event_filter(void **state) {
  fixture_t *fx = *state;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  const kcr_gvk cm = {"", "v1", "ConfigMap"};
  kcr_predicate_t *sel = NULL;
  kcr_event_handler h;
  char got[128];
  json_t *yes =
      load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"y\",\"labels\":{\"m\":\"1\"}}}");
  json_t *no = load("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"n\"}}");
  assert_int_equal(kcr_predicate_label_selector("m=1", &sel, NULL), 0);
  assert_int_equal(kcr_controller_add_event_filter(fx->c, sel, NULL), 0);
  assert_int_equal(kcr_controller_for(fx->c, &cm, NULL, NULL), 0);
  assert_true(kcr__controller_handler(fx->c, 0, &h));
  assert_int_equal(kcr__controller_handler_flags(fx->c, 0), KCR__HANDLER_METADATA);
  h.on_add(yes, false, h.data);
  h.on_add(no, false, h.data);
  drain(q, got, sizeof(got));
  assert_string_equal(got, "ns/y");
  json_decref(yes);
  json_decref(no);
}

static bool any_obj(const json_t *obj, void *data) {
  (void)data;
  return obj != NULL;
}

/* A custom predicate may read anything: its watch's handler, or with a global
 * filter every handler, is handed whole objects. */
static void test_controller_custom_predicate_gets_whole_objects(void **state) {
  fixture_t *fx = *state;
  const kcr_gvk cm = {"", "v1", "ConfigMap"}, sec = {"", "v1", "Secret"};
  kcr_predicate_funcs pf = {.create = any_obj};
  assert_int_equal(kcr_controller_for(fx->c, &cm, NULL, NULL), 0);
  assert_int_equal(kcr_controller_owns(fx->c, &sec, kcr_predicate_custom(&pf, NULL), NULL), 0);
  assert_int_equal(kcr__controller_handler_flags(fx->c, 0), KCR__HANDLER_METADATA);
  assert_int_equal(kcr__controller_handler_flags(fx->c, 1), 0);
  assert_int_equal(kcr_controller_add_event_filter(
                       fx->c, kcr_predicate_not(kcr_predicate_custom(&pf, NULL)), NULL),
                   0);
  assert_int_equal(kcr__controller_handler_flags(fx->c, 0), 0);
}

static void test_controller_setup_errors(void **state) {
  fixture_t *fx = *state;
  const kcr_gvk cm = {"", "v1", "ConfigMap"}, bad = {"", NULL, "X"};
  kcr_controller_options o;
  kcr_controller_t *c = NULL;
  kcr_error_t err = {0};
  kcr_predicate_t *failed;
  assert_int_equal(kcr_controller_for(fx->c, &cm, NULL, NULL), 0);
  assert_int_equal(kcr_controller_for(fx->c, &cm, NULL, &err), KCR_EEXIST);
  assert_int_equal(kcr_controller_owns(fx->c, &bad, NULL, NULL), KCR_EINVAL);
  assert_int_equal(kcr_controller_watches(fx->c, &cm, NULL, NULL, NULL, NULL), KCR_EINVAL);
  kcr_test_alloc_install();
  kcr_test_alloc_fail_at(1);
  failed = kcr_predicate_not(kcr_predicate_labels_changed());
  kcr_test_alloc_fail_at(0);
  kcr_test_alloc_uninstall();
  assert_int_equal(kcr_controller_owns(fx->c, &cm, failed, NULL), KCR_ENOMEM);
  /* no source: start refuses */
  kcr_error_clear(&err);
  assert_int_equal(kcr_controller_start(fx->c, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "no informer source"));
  memset(&o, 0, sizeof(o));
  o.reconcile = reconcile;
  assert_int_equal(kcr_controller_create(&o, &c, NULL), KCR_EINVAL);
  assert_null(c);
}

/* Warm-up: the set-up closes and events fill the queue, but nothing is
 * reconciled until start, which then only starts the workers. A channel
 * source needs no informer, so this runs without an API server. */
static void test_controller_warmup(void **state) {
  fixture_t *fx = *state;
  const kcr_gvk cm = {"", "v1", "ConfigMap"};
  kcr_channel_source_t *s;
  kcr_workqueue_t *q = kcr_controller_queue(fx->c);
  kcr_error_t err = {0};
  assert_int_equal(kcr_controller_warmup(fx->c, &err), KCR_EINVAL); /* nothing to watch */
  assert_non_null(strstr(err.message, "nothing to watch"));
  kcr_error_clear(&err);
  assert_int_equal(kcr_channel_source_create(&s, &err), 0);
  assert_int_equal(kcr_controller_watches_channel(fx->c, s, NULL, NULL, NULL, &err), 0);
  assert_int_equal(kcr_controller_warmup(fx->c, &err), 0);
  assert_int_equal(kcr_controller_warmup(fx->c, &err), 0); /* a second call: nothing */
  assert_int_equal(kcr_controller_for(fx->c, &cm, NULL, &err), KCR_EINVAL); /* set-up closed */
  kcr_error_clear(&err);
  assert_int_equal(kcr_channel_source_push(s, "ns", "early", &err), 0);
  wait_len(fx->c, 1);
  assert_int_equal(fx->f.calls, 0);
  assert_int_equal(kcr_controller_start(fx->c, &err), 0);
  for (int i = 0; i < 2000 && kcr_workqueue_len(q) != 0; i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  assert_int_equal(kcr_controller_stop(fx->c, 5 * KCR_NSEC_PER_SEC), 0);
  assert_int_equal(fx->f.calls, 1);
  assert_string_equal(fx->f.last_name, "early");
  assert_int_equal(kcr_controller_start(fx->c, &err), KCR_EINVAL); /* once */
  kcr_error_clear(&err);
  assert_int_equal(kcr_controller_warmup(fx->c, &err), KCR_EINVAL); /* after stop */
  kcr_controller_destroy(fx->c);
  fx->c = NULL;
  kcr_channel_source_destroy(s);
}

static void test_controller_create_alloc(void **state) {
  kcr_controller_options o;
  kcr_controller_t *c = NULL;
  (void)state;
  memset(&o, 0, sizeof(o));
  o.name = "alloc";
  o.reconcile = reconcile;
  KCR_TEST_ALLOC_LOOP(kcr_controller_create(&o, &c, NULL), (kcr_controller_destroy(c), c = NULL));
}

static char *render(kcr_metrics_registry_t *r) {
  kcr_buf_t b;
  kcr_buf_init(&b, 1u << 24);
  assert_int_equal(kcr_metrics_render(r, &b), 0);
  return kcr_buf_take(&b, NULL);
}

/* The controller's series and its queue's, as /metrics shows them: every result
 * at zero from create on, then one success and one error counted. */
static void test_controller_metrics_exposition(void **state) {
  fixture_t *fx = *state;
  char *text = render(fx->reg);
  assert_non_null(strstr(text, "# TYPE controller_runtime_reconcile_total counter\n"
                               "controller_runtime_reconcile_total{controller=\"test\",result="
                               "\"success\"} 0\n"
                               "controller_runtime_reconcile_total{controller=\"test\",result="
                               "\"error\"} 0\n"
                               "controller_runtime_reconcile_total{controller=\"test\",result="
                               "\"requeue\"} 0\n"
                               "controller_runtime_reconcile_total{controller=\"test\",result="
                               "\"requeue_after\"} 0\n"));
  assert_non_null(strstr(text, "\ncontroller_runtime_max_concurrent_reconciles{controller="
                               "\"test\"} 1\n"));
  assert_non_null(strstr(text, "\ncontroller_runtime_active_workers{controller=\"test\"} 0\n"));
  assert_non_null(strstr(text, "\ncontroller_runtime_reconcile_time_seconds_count{controller="
                               "\"test\"} 0\n"));
  assert_non_null(strstr(text, "\nworkqueue_adds_total{name=\"test\",controller=\"test\"} 0\n"));
  kcr_free(text);

  run_once(fx, "ns/a");
  fx->f.rc = KCR_EIO;
  run_once(fx, "ns/b");
  text = render(fx->reg);
  assert_non_null(strstr(text, "\ncontroller_runtime_reconcile_total{controller=\"test\",result="
                               "\"success\"} 1\n"));
  assert_non_null(strstr(text, "\ncontroller_runtime_reconcile_total{controller=\"test\",result="
                               "\"error\"} 1\n"));
  assert_non_null(strstr(text, "\ncontroller_runtime_reconcile_errors_total{controller=\"test\"} "
                               "1\n"));
  assert_non_null(strstr(text, "\ncontroller_runtime_terminal_reconcile_errors_total{controller="
                               "\"test\"} 0\n"));
  /* the fake clock does not move during a reconcile: both took 0 s */
  assert_non_null(strstr(text, "\ncontroller_runtime_reconcile_time_seconds_bucket{controller="
                               "\"test\",le=\"0.005\"} 2\n"));
  assert_non_null(strstr(text, "\ncontroller_runtime_reconcile_time_seconds_bucket{controller="
                               "\"test\",le=\"60\"} 2\n"));
  assert_non_null(strstr(text, "\nworkqueue_adds_total{name=\"test\",controller=\"test\"} 2\n"));
  assert_non_null(strstr(text, "\nworkqueue_retries_total{name=\"test\",controller=\"test\"} "
                               "1\n"));
  kcr_free(text);
}

/* Without a registry a controller keeps no metrics and works the same. */
static void test_controller_no_metrics(void **state) {
  kcr_controller_options o;
  kcr_controller_t *c = NULL;
  fake_t f;
  (void)state;
  memset(&f, 0, sizeof(f));
  memset(&o, 0, sizeof(o));
  o.name = "bare";
  o.reconcile = reconcile;
  o.data = &f;
  assert_int_equal(kcr_controller_create(&o, &c, NULL), 0);
  assert_int_equal(kcr_workqueue_add(kcr_controller_queue(c), "ns/a"), 0);
  assert_int_equal(kcr__controller_process_next(c), 0);
  assert_int_equal(f.calls, 1);
  kcr_controller_destroy(c);
}

/* A registry that already holds one of the names with other labels refuses. */
static void test_controller_metrics_clash(void **state) {
  kcr_metrics_registry_t *r;
  kcr_metric_t *m;
  kcr_controller_options o;
  kcr_controller_t *c = NULL;
  kcr_error_t err = {0};
  static const char *const l[] = {"other", NULL};
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_counter(r, KCR_CONTROLLER_METRIC_RECONCILE_ERRORS, "x", l, &m, NULL),
                   0);
  memset(&o, 0, sizeof(o));
  o.name = "clash";
  o.reconcile = reconcile;
  o.metrics = r;
  assert_int_equal(kcr_controller_create(&o, &c, &err), KCR_EEXIST);
  assert_null(c);
  assert_non_null(strstr(err.message, KCR_CONTROLLER_METRIC_RECONCILE_ERRORS));
  kcr_metrics_registry_destroy(r);
}

static void test_controller_create_alloc_metrics(void **state) {
  kcr_metrics_registry_t *r;
  kcr_controller_options o;
  kcr_controller_t *c = NULL;
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  memset(&o, 0, sizeof(o));
  o.name = "alloc";
  o.reconcile = reconcile;
  o.metrics = r;
  KCR_TEST_ALLOC_LOOP(kcr_controller_create(&o, &c, NULL), (kcr_controller_destroy(c), c = NULL));
  kcr_metrics_registry_destroy(r);
}

/* The reconcile-result label values come from one table, in enum order. */
static void test_controller_outcome_names(void **state) {
  (void)state;
  assert_string_equal(kcr_reconcile_outcome_name(KCR_RECONCILE_SUCCESS), "success");
  assert_string_equal(kcr_reconcile_outcome_name(KCR_RECONCILE_ERROR), "error");
  assert_string_equal(kcr_reconcile_outcome_name(KCR_RECONCILE_REQUEUE), "requeue");
  assert_string_equal(kcr_reconcile_outcome_name(KCR_RECONCILE_REQUEUE_AFTER), "requeue_after");
  assert_string_equal(kcr_reconcile_outcome_name(KCR_RECONCILE_OUTCOMES), "success");
}

/* A source that records which informers a controller asks it for. */
typedef struct meta_source {
  int whole, metadata;
  char kind[32];
} meta_source_t;

static int src_whole(void *data, const kcr_gvk *gvk, kcr_informer_t **out, kcr_error_t *err) {
  meta_source_t *m = data;
  (void)gvk;
  *out = NULL;
  m->whole++;
  return kcr_error_set(err, KCR_ENOENT, "not served");
}

static int src_metadata(void *data, const kcr_gvk *gvk, kcr_informer_t **out, kcr_error_t *err) {
  meta_source_t *m = data;
  *out = NULL;
  m->metadata++;
  snprintf(m->kind, sizeof(m->kind), "%s", gvk->kind);
  return kcr_error_set(err, KCR_EEXIST, "cached whole already");
}

/* A _metadata watch asks the source for the kind's metadata-only informer,
 * and a source without them refuses it at start. */
static void test_controller_metadata_watch_asks_for_metadata_informer(void **state) {
  static const kcr_gvk cm = {"", "v1", "ConfigMap"};
  meta_source_t m;
  kcr_controller_options o;
  kcr_controller_t *c = NULL;
  kcr_error_t err;
  (void)state;
  for (int with = 0; with < 2; with++) {
    memset(&m, 0, sizeof(m));
    memset(&o, 0, sizeof(o));
    o.name = "meta";
    o.reconcile = reconcile;
    o.source.get_informer = src_whole;
    o.source.get_metadata_informer = with ? src_metadata : NULL;
    o.source.data = &m;
    assert_int_equal(kcr_controller_create(&o, &c, NULL), 0);
    assert_int_equal(kcr_controller_for_metadata(c, &cm, NULL, NULL), 0);
    kcr_error_clear(&err);
    assert_int_equal(kcr_controller_start(c, &err), with ? KCR_EEXIST : KCR_ENOTSUP);
    assert_non_null(strstr(err.message, "kind ConfigMap"));
    assert_int_equal(m.whole, 0);
    assert_int_equal(m.metadata, with);
    if (with)
      assert_string_equal(m.kind, "ConfigMap");
    kcr_controller_destroy(c);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_controller_success_forgets, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_no_timeout_by_default, setup, teardown),
      cmocka_unit_test(test_controller_reconcile_timeout),
      cmocka_unit_test(test_controller_stop_cancels_reconcile_with_deadline),
      cmocka_unit_test_setup_teardown(test_controller_error_rate_limited, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_reconcile_log_fields, setup, teardown),
      cmocka_unit_test(test_controller_reconcile_log_kv),
      cmocka_unit_test_setup_teardown(test_controller_terminal_error, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_requeue_after, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_requeue, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_error_wins_over_requeue_after, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_controller_stop_drops_queued, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_handlers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_custom_predicate_gets_whole_objects, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_controller_event_filter, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_channel_source, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_raw_source_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_setup_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_controller_warmup, setup, teardown),
      cmocka_unit_test(test_controller_create_alloc),
      cmocka_unit_test_setup_teardown(test_controller_metrics_exposition, setup, teardown),
      cmocka_unit_test(test_controller_no_metrics),
      cmocka_unit_test(test_controller_metrics_clash),
      cmocka_unit_test(test_controller_create_alloc_metrics),

      cmocka_unit_test(test_controller_outcome_names),
      cmocka_unit_test(test_controller_metadata_watch_asks_for_metadata_informer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
