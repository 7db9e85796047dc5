/* SPDX-License-Identifier: MIT */
/*
 * worker.c: the server's worker thread (worker_internal.h): it takes the jobs
 * the loop queues, answers them (the probes, running the user's checks;
 * /metrics, running the collectors and the auth hook; options.handler), posts
 * each answer back to the loop, and reloads the TLS certificate when its
 * files move.
 *
 * DESIGN. The loop only parses requests and writes replies: whatever runs
 * user code or may block (a check, a collector, reading a certificate) runs
 * here, one job at a time, so a slow check delays only the probes queued
 * behind it, never the loop (test_server_slow_check_does_not_block_loop). An
 * auth hook that may block on a review runs on the auth pool instead
 * (KCR_SERVER_AUTH_THREADS threads taking the /metrics jobs the cached
 * decision could not settle), so a TokenReview delays neither the probes nor
 * a scrape whose token is cached (test_server_auth_pool). A job is a copy of what the
 * answer needs; the worker fills its answer and never touches a connection
 * (job->conn is the loop's). A reply body is charged to the budget at its
 * largest before it is rendered and trimmed to its capacity after, so the
 * worker never takes the server past max_buffered_bytes; when the budget is
 * spent the answer is 503 from static text. Checks run with checks_mu held,
 * which makes kcr_server_remove_check a barrier. The worker waits on
 * jobs_cond, with a timeout on the monotonic clock while it polls a
 * certificate; a post the stopping loop refuses leaves the job with the
 * orphans, freed by kcr__worker_stop once the loop thread is gone.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kcr/buf.h"
#include "kcr/clock.h"
#include "kcr/error.h"
#include "kcr/log.h"
#include "kcr/metrics.h"
#include "server/conn_internal.h"
#include "server/http1_internal.h"
#include "server/server_internal.h"
#include "server/worker_internal.h"
#include "util/alloc.h"

static void job_text(job_t *j, int status, const char *text) {
  j->status = status;
  j->content_type = TEXT_PLAIN;
  j->body = text;
  j->body_len = strlen(text);
}

/* job_take_body hands b's contents to j as its body; cap was charged for b. */
static void job_take_body(job_t *j, int status, const char *content_type, kcr_buf_t *b,
                          size_t charged) {
  kcr_server_t *s = j->srv;
  size_t cap = b->cap;
  assert(cap <= charged);
  j->owned = kcr_buf_take(b, &j->body_len);
  if (!j->owned) {
    uncharge(s, charged);
    job_text(j, 500, "500 out of memory\n");
    return;
  }
  if (cap == 0) /* kcr_buf_take allocated "" for an empty buffer */
    cap = 1;
  uncharge(s, charged - cap);
  j->owned_cap = cap;
  j->status = status;
  j->content_type = content_type;
  j->body = j->owned;
}

typedef struct part {
  const char *name;
  int healthy;
  int excluded;
} part_t;

static int cmp_part(const void *a, const void *b) {
  return strcmp(((const part_t *)a)->name, ((const part_t *)b)->name);
}

/* run_check runs k; a failing kcr_check_err_cb's reason goes to *why. */
static int run_check(kcr_server_check_t *k, kcr_error_t *why) {
  kcr_error_clear(why);
  if (k->ecb) {
    int rc = k->ecb(k->data, why);
    if (rc != 0 && !why->message[0])
      kcr_error_set(why, rc, "%s", kcr_strerror(rc));
    return rc;
  }
  if (!k->cb)
    return atomic_load(&k->flag) ? 0 : -1;
  return k->cb(k->data);
}

/* answer_sub_failed answers a failed /healthz/<name>: with the check's reason
 * when it gave one (controller-runtime's "internal server error: <err>"). */
static void answer_sub_failed(job_t *j, const kcr_error_t *why) {
  kcr_server_t *s = j->srv;
  kcr_buf_t b;
  if (!why->message[0] || !charge(s, PROBE_BODY_MAX)) {
    job_text(j, 500, "internal server error: check failed\n");
    return;
  }
  kcr_buf_init(&b, PROBE_BODY_MAX - 1);
  if (kcr_buf_appendf(&b, "internal server error: %s\n", why->message) != 0) {
    kcr_buf_free(&b);
    uncharge(s, PROBE_BODY_MAX);
    job_text(j, 500, "internal server error: check failed\n");
    return;
  }
  job_take_body(j, 500, TEXT_PLAIN, &b, PROBE_BODY_MAX);
}

/* serve_probe answers a probe job: the worker thread, running user checks. */
static void serve_probe(job_t *j) {
  kcr_server_t *s = j->srv;
  kcr_probe_kind kind = j->kind;
  const char *kindname = j->kindname, *sub = j->sub, *query = j->query;
  part_t parts[MAX_CHECKS + 1];
  size_t n = 0;
  int failed = 0, verbose = kcr__http_query_has(query, "verbose"), rc = 0;
  kcr_error_t why;
  kcr_buf_t b;

  pthread_mutex_lock(&s->checks_mu);
  if (sub) {
    int found = 0, ok = 1;
    if (strcmp(sub, "ping") == 0)
      found = 1;
    KCR__LIST_EACH(&s->checks, kcr_server_check_t, link, k) {
      if (found)
        break;
      if ((k->kind & kind) && strcmp(k->name, sub) == 0) {
        found = 1;
        ok = run_check(k, &why) == 0;
      }
    }
    pthread_mutex_unlock(&s->checks_mu);
    if (!found)
      job_text(j, 404, "404 page not found\n");
    else if (ok)
      job_text(j, 200, "ok");
    else
      answer_sub_failed(j, &why);
    return;
  }
  parts[n++] = (part_t){"ping", 1, kcr__http_query_excludes(query, "ping")};
  KCR__LIST_EACH(&s->checks, kcr_server_check_t, link, k) {
    if (n >= MAX_CHECKS + 1)
      break;
    if (!(k->kind & kind))
      continue;
    parts[n].name = k->name;
    parts[n].excluded = kcr__http_query_excludes(query, k->name);
    parts[n].healthy = parts[n].excluded || run_check(k, &why) == 0;
    if (!parts[n].healthy) {
      failed = 1;
      kcr_log(KCR_LOG_DEBUG, "server", "%s check failed: %s%s%s", kindname, k->name,
              why.message[0] ? ": " : "", why.message);
    }
    n++;
  }
  qsort(parts, n, sizeof(parts[0]), cmp_part);
  if (!failed && !verbose) {
    pthread_mutex_unlock(&s->checks_mu);
    job_text(j, 200, "ok");
    return;
  }
  if (!charge(s, PROBE_BODY_MAX)) {
    pthread_mutex_unlock(&s->checks_mu);
    atomic_fetch_add(&s->st_busy, 1);
    job_text(j, 503, BUSY_TEXT);
    return;
  }
  kcr_buf_init(&b, PROBE_BODY_MAX - 1);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (parts[i].excluded)
      rc = kcr_buf_appendf(&b, "[+]%s excluded: ok\n", parts[i].name);
    else if (parts[i].healthy)
      rc = kcr_buf_appendf(&b, "[+]%s ok\n", parts[i].name);
    else
      rc = kcr_buf_appendf(&b, "[-]%s failed: reason withheld\n", parts[i].name);
  }
  pthread_mutex_unlock(&s->checks_mu);
  if (rc == 0)
    rc = kcr_buf_appendf(&b, "%s check %s\n", kindname, failed ? "failed" : "passed");
  if (rc != 0) {
    kcr_buf_free(&b);
    uncharge(s, PROBE_BODY_MAX);
    job_text(j, 500, "500 out of memory\n");
    return;
  }
  job_take_body(j, failed ? 500 : 200, TEXT_PLAIN, &b, PROBE_BODY_MAX);
}

/* render_metrics renders /metrics into j, running the collectors: the worker
 * or an auth pool thread (the registry's lock serialises renders). */
static void render_metrics(job_t *j) {
  kcr_server_t *s = j->srv;
  kcr_buf_t b;
  int rc;
  /* The body's largest size is charged before rendering, so a scrape never
   * takes the server past its budget; the unused part is given back after.
   * One reply is built at a time (reply_mu), as when the worker built them
   * all: the auth pool's renders would otherwise each charge half the budget
   * at once and answer 503. The registry's lock serialises renders anyway. */
  pthread_mutex_lock(&s->reply_mu);
  if (!charge(s, s->max_reply)) {
    pthread_mutex_unlock(&s->reply_mu);
    atomic_fetch_add(&s->st_busy, 1);
    job_text(j, 503, BUSY_TEXT);
    return;
  }
  kcr_buf_init(&b, s->max_reply - 1);
  rc = kcr_metrics_render(s->metrics, &b);
  if (rc != 0) {
    kcr_buf_free(&b);
    uncharge(s, s->max_reply);
    pthread_mutex_unlock(&s->reply_mu);
    kcr_log(KCR_LOG_ERROR, "server", "rendering /metrics failed: %s", kcr_strerror(rc));
    job_text(j, 500, "metrics unavailable\n");
    return;
  }
  job_take_body(j, 200, KCR_METRICS_CONTENT_TYPE, &b, s->max_reply); /* gives back the rest */
  pthread_mutex_unlock(&s->reply_mu);
}

/* answer_metrics answers /metrics after the auth hook said st. */
static void answer_refused(job_t *j, int st);
static int queue_auth(job_t *j);

static void answer_metrics(job_t *j, int st) {
  if (st == 200)
    render_metrics(j);
  else
    answer_refused(j, st);
}

/* post_answer hands an answered job back to the loop. A failed post means
 * the loop is stopping: nobody will send this reply. The connection may still
 * point at the job, so it is kept until kcr__worker_stop, which runs once the
 * loop thread is gone. Worker or auth pool. */
static void post_answer(job_t *j) {
  kcr_server_t *s = j->srv;
  if (kcr_loop_post(s->loop, kcr__conn_job_done, j) != 0) {
    pthread_mutex_lock(&s->jobs_mu);
    kcr__list_push_back(&s->orphans, &j->link);
    pthread_mutex_unlock(&s->jobs_mu);
  }
}

/*
 * serve_metrics answers /metrics on the worker: at once without an auth hook
 * or when the cached decision settles it; else the job goes to the auth pool
 * (1 returned: not answered here), or is answered 429 when KCR_SERVER_AUTH_QUEUE
 * jobs already wait there. 0: j is answered.
 */
static int serve_metrics(job_t *j) {
  kcr_server_t *s = j->srv;
  int st = 200;
  if (s->auth) {
    st = s->auth_cached ? s->auth_cached(s->auth_data, j->token, "get", "/metrics") : 0;
    if (st == 0)
      return queue_auth(j); /* 0: answered 429 */
  }
  answer_metrics(j, st);
  return 0;
}

/* handler_verb: the Kubernetes verb of a handler request ("get" for GET and
 * HEAD, else the method in lower case) into buf. */
static const char *handler_verb(const char *method, char *buf, size_t size) {
  size_t i;
  if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
    return "get";
  for (i = 0; method[i] && i + 1 < size; i++)
    buf[i] = (char)(method[i] >= 'A' && method[i] <= 'Z' ? method[i] - 'A' + 'a' : method[i]);
  buf[i] = '\0';
  return buf;
}

/* answer_refused answers a request the auth hook did not let through. */
static void answer_refused(job_t *j, int st) {
  if (st == 401)
    job_text(j, 401, "Unauthorized\n");
  else if (st == 403)
    job_text(j, 403, "Forbidden\n");
  else if (st == 429)
    job_text(j, 429, "Too Many Requests\n");
  else
    job_text(j, 500, "Authorization failed\n");
}

/* queue_auth hands j to the auth pool: 1, or 0 when its queue is full (j is
 * then answered 429). The worker. */
static int queue_auth(job_t *j) {
  kcr_server_t *s = j->srv;
  pthread_mutex_lock(&s->jobs_mu);
  if (s->auth_queued < KCR_SERVER_AUTH_QUEUE) {
    kcr__list_push_back(&s->auth_jobs, &j->link);
    s->auth_queued++;
    pthread_cond_signal(&s->auth_cond);
    pthread_mutex_unlock(&s->jobs_mu);
    return 1;
  }
  pthread_mutex_unlock(&s->jobs_mu);
  atomic_fetch_add(&s->st_auth_refused, 1);
  answer_refused(j, 429);
  return 0;
}

/*
 * gate_handler decides a handler request under handler_auth on the worker:
 * 0 when the handler may answer it now, 1 when it went to the auth pool (it
 * comes back to the worker once allowed), -1 when it is answered (refused).
 */
static int gate_handler(job_t *j) {
  kcr_server_t *s = j->srv;
  char vb[16];
  int st;
  if (!s->handler_auth || j->authorized)
    return 0;
  st = s->auth_cached ? s->auth_cached(s->auth_data, j->htoken,
                                       handler_verb(j->method, vb, sizeof(vb)), j->path)
                      : 0;
  if (st == 200)
    return 0;
  if (st == 0)
    return queue_auth(j) ? 1 : -1;
  answer_refused(j, st);
  return -1;
}

/* auth_decided: an auth pool thread decided a handler request: allowed, it
 * goes back to the worker (handlers run there, one at a time); else it is
 * answered here. 1: posted back to the worker, 0: answered. */
static int auth_decided(job_t *j, int st) {
  kcr_server_t *s = j->srv;
  if (st != 200) {
    answer_refused(j, st);
    return 0;
  }
  j->authorized = 1;
  pthread_mutex_lock(&s->jobs_mu);
  kcr__list_push_back(&s->jobs, &j->link);
  pthread_cond_signal(&s->jobs_cond);
  pthread_mutex_unlock(&s->jobs_mu);
  return 1;
}

/* auth_main is an auth pool thread: it decides the /metrics jobs the worker
 * could not (s->auth may block on reviews), answers and posts them. */
static void *auth_main(void *arg) {
  kcr_server_t *s = arg;
  for (;;) {
    kcr__list_node_t *n;
    job_t *j;
    pthread_mutex_lock(&s->jobs_mu);
    while (kcr__list_empty(&s->auth_jobs) && !s->jobs_stop)
      pthread_cond_wait(&s->auth_cond, &s->jobs_mu);
    if (s->jobs_stop) {
      pthread_mutex_unlock(&s->jobs_mu);
      return NULL; /* what is queued is freed by kcr__worker_stop */
    }
    n = kcr__list_pop_front(&s->auth_jobs);
    s->auth_queued--;
    pthread_mutex_unlock(&s->jobs_mu);
    j = KCR__CONTAINER_OF(n, job_t, link);
    if (j->what == JOB_HANDLER) {
      char vb[16];
      if (auth_decided(j, s->auth(s->auth_data, j->htoken, handler_verb(j->method, vb, sizeof(vb)),
                                  j->path)))
        continue;
    } else {
      answer_metrics(j, s->auth(s->auth_data, j->token, "get", "/metrics"));
    }
    post_answer(j);
  }
}

int kcr__worker_start_auth(kcr_server_t *s) {
  pthread_attr_t attr;
  int rc = 0;
  pthread_attr_init(&attr);
  /* A review is a client call and a small JSON answer: no deep stacks. */
  pthread_attr_setstacksize(&attr, (size_t)256 * 1024);
  for (int i = 0; i < KCR_SERVER_AUTH_THREADS; i++) {
    if (pthread_create(&s->auth_threads[i], &attr, auth_main, s) != 0) {
      rc = -1;
      break;
    }
    s->auth_started++;
  }
  pthread_attr_destroy(&attr);
  return rc;
}

/* serve_handler answers a request for options.handler: the worker thread. */
static void serve_handler(job_t *j) {
  kcr_server_t *s = j->srv;
  kcr_server_request rq;
  kcr_server_response rs;
  memset(&rs, 0, sizeof(rs));
  if (!charge(s, s->max_reply)) {
    atomic_fetch_add(&s->st_busy, 1);
    job_text(j, 503, BUSY_TEXT);
    return;
  }
  rq.method = j->method;
  rq.path = j->path;
  rq.query = j->query;
  rq.body = j->req_body ? j->req_body : "";
  rq.body_len = j->req_len;
  kcr_buf_init(&rs.body, s->max_reply - 1);
  s->handler(s->handler_data, &rq, &rs);
  if (j->req_body) { /* read: give its memory back before the reply is sent */
    kcr__free(j->req_body);
    uncharge(s, j->req_charged);
    j->req_body = NULL;
  }
  job_take_body(j, rs.status > 0 ? rs.status : 200,
                rs.content_type ? rs.content_type : "application/json", &rs.body, s->max_reply);
}

/* kcr__worker_load_certs reads the certificate files into a new context and swaps it
 * in; on failure the old one stays. Counted as certwatcher counts, except that
 * a failure with count_error 0 is left uncounted (the caller retries it). The
 * worker thread (or create, before the worker starts). */
int kcr__worker_load_certs(kcr_server_t *s, int count_error, char *msg, size_t size) {
  SSL_CTX *ctx, *old;
  kcr_metric_inc(s->m_cert_reads);
  ctx = kcr__tls_ctx_from_files(s->cert_path, s->key_path, msg, size);
  if (!ctx) {
    if (count_error)
      kcr_metric_inc(s->m_cert_errors);
    return KCR_ECONFIG;
  }
  pthread_mutex_lock(&s->ctx_mu);
  old = s->ctx;
  s->ctx = ctx;
  pthread_mutex_unlock(&s->ctx_mu);
  SSL_CTX_free(old); /* connections using it hold their own reference */
  return 0;
}

/* poll_certs re-reads the certificate when its files have moved. A rotation
 * that writes tls.key and tls.crt one after the other (cert-manager into a
 * hostPath, a script, a test) can be caught between the two: the new key with
 * the old certificate. So a failed read of files that moved since the last
 * poll is provisional: it is retried on the next poll, and only a failure on
 * files that held still for a whole interval is logged and counted. A Secret
 * volume's atomic swap never shows the torn state; this only delays the error
 * of a pair that is really broken by one poll. Worker. */
static void poll_certs(kcr_server_t *s) {
  kcr__tls_stamp_t now;
  char msg[400];
  int moved;
  kcr__tls_stamp(s->cert_path, s->key_path, &now);
  moved = !kcr__tls_stamp_equal(&now, &s->stamp);
  if (!moved && !s->cert_unsettled)
    return;
  s->stamp = now;
  if (kcr__worker_load_certs(s, !moved, msg, sizeof(msg)) != 0) {
    if (moved) {
      s->cert_unsettled = 1;
      kcr_log(KCR_LOG_DEBUG, "server", "certificate files changing, retrying: %s", msg);
      return;
    }
    kcr_log(KCR_LOG_ERROR, "server", "certificate reload failed, keeping the old one: %s", msg);
  } else {
    kcr_log(KCR_LOG_INFO, "server", "certificate reloaded from %s", s->cert_path);
  }
  s->cert_unsettled = 0;
}

void *kcr__worker_main(void *arg) {
  kcr_server_t *s = arg;
  kcr_clock_t *clk = kcr_clock_system();
  for (;;) {
    kcr__list_node_t *n;
    job_t *j;
    if (s->cert_path && kcr_clock_now(clk) >= s->next_poll) {
      poll_certs(s);
      s->next_poll = kcr_clock_now(clk) + s->cert_poll_ns;
    }
    pthread_mutex_lock(&s->jobs_mu);
    while (kcr__list_empty(&s->jobs) && !s->jobs_stop) {
      if (!s->cert_path) {
        pthread_cond_wait(&s->jobs_cond, &s->jobs_mu);
      } else if (kcr_clock_timedwait(clk, &s->jobs_cond, &s->jobs_mu, s->next_poll) ==
                 KCR_ETIMEDOUT) {
        break;
      }
    }
    n = kcr__list_pop_front(&s->jobs);
    if (!n) {
      int stop = s->jobs_stop;
      pthread_mutex_unlock(&s->jobs_mu);
      if (stop)
        return NULL;
      continue; /* time to poll the certificate */
    }
    j = KCR__CONTAINER_OF(n, job_t, link);
    pthread_mutex_unlock(&s->jobs_mu);
    if (j->what == JOB_METRICS) {
      if (serve_metrics(j))
        continue; /* with the auth pool now */
    } else if (j->what == JOB_HANDLER) {
      int g = gate_handler(j);
      if (g > 0)
        continue; /* with the auth pool now */
      if (g == 0)
        serve_handler(j);
    } else {
      serve_probe(j);
    }
    post_answer(j);
  }
}

/* kcr__worker_stop joins the worker and drops the jobs it never took (their
 * connections are gone). */
void kcr__worker_stop(kcr_server_t *s) {
  kcr__list_node_t *n;
  if (!s->worker_started)
    return;
  pthread_mutex_lock(&s->jobs_mu);
  s->jobs_stop = 1;
  pthread_cond_signal(&s->jobs_cond);
  pthread_cond_broadcast(&s->auth_cond);
  pthread_mutex_unlock(&s->jobs_mu);
  pthread_join(s->worker, NULL);
  s->worker_started = 0;
  for (int i = 0; i < s->auth_started; i++)
    pthread_join(s->auth_threads[i], NULL);
  s->auth_started = 0;
  s->auth_queued = 0;
  while ((n = kcr__list_pop_front(&s->jobs)) || (n = kcr__list_pop_front(&s->auth_jobs)) ||
         (n = kcr__list_pop_front(&s->orphans)))
    kcr__job_free(KCR__CONTAINER_OF(n, job_t, link));
}
