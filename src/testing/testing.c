/* SPDX-License-Identifier: MIT */
/*
 * testing.c: the testing kit's small pieces (kcr/testing.h): the recording
 * event recorder, a reconcile context a test constructs, and log capture.
 *
 * The recorder is a real kcr_event_recorder_t in sink mode (events.c): the
 * reconciler's kcr_event_record calls are validated as always and then handed
 * to a JSON array under a mutex, never correlated or sent. The context wraps a
 * controller that is never started (it exists only to carry the name, the
 * cancellation token and the client a worker's context would carry), and a
 * context made for it by the controller layer, so a reconciler sees exactly
 * what it sees under a manager.
 */
#include <pthread.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "kcr/testing.h"
#include "manager/events_internal.h"
#include "util/alloc.h"

/* ---- the recording event recorder ---- */

typedef struct recording {
  pthread_mutex_t mu;
  json_t *events; /* protected by mu */
} recording_t;

static void set_str(json_t *o, const char *k, const char *v) {
  if (v && *v)
    json_object_set_new(o, k, json_string(v));
}

static int on_event(void *data, const kcr_object_ref *ref, const char *type, const char *reason,
                    const char *action, const char *note) {
  recording_t *rec = data;
  json_t *ev = json_object(), *regarding = json_object();
  int rc = 0;
  if (!ev || !regarding) {
    json_decref(ev);
    json_decref(regarding);
    return KCR_ENOMEM;
  }
  set_str(regarding, "apiVersion", ref->api_version);
  set_str(regarding, "kind", ref->kind);
  set_str(regarding, "namespace", ref->namespace_);
  set_str(regarding, "name", ref->name);
  set_str(regarding, "uid", ref->uid);
  set_str(ev, "type", type);
  set_str(ev, "reason", reason);
  set_str(ev, "action", action);
  json_object_set_new(ev, "note", json_string(note ? note : ""));
  json_object_set_new(ev, "regarding", regarding);
  pthread_mutex_lock(&rec->mu);
  if (json_array_append_new(rec->events, ev) != 0)
    rc = KCR_ENOMEM;
  pthread_mutex_unlock(&rec->mu);
  return rc;
}

static void recording_free(void *data) {
  recording_t *rec = data;
  json_decref(rec->events);
  pthread_mutex_destroy(&rec->mu);
  kcr__free(rec);
}

int kcr_fake_recorder_create(kcr_event_recorder_t **out, kcr_error_t *err) {
  recording_t *rec = kcr__calloc(1, sizeof(*rec));
  *out = NULL;
  if (!rec || !(rec->events = json_array())) {
    kcr__free(rec);
    return kcr_error_set(err, KCR_ENOMEM, "fake recorder: out of memory");
  }
  if (pthread_mutex_init(&rec->mu, NULL) != 0) {
    json_decref(rec->events);
    kcr__free(rec);
    return kcr_error_set(err, KCR_ESYS, "fake recorder: mutex");
  }
  if (kcr__event_recorder_create_sink(on_event, recording_free, rec, out) != 0) {
    recording_free(rec);
    return kcr_error_set(err, KCR_ENOMEM, "fake recorder: out of memory");
  }
  return 0;
}

json_t *kcr_fake_recorder_events(kcr_event_recorder_t *r) {
  recording_t *rec = kcr__event_recorder_sink_data(r, on_event);
  json_t *copy;
  if (!rec)
    return NULL;
  pthread_mutex_lock(&rec->mu);
  copy = json_deep_copy(rec->events);
  pthread_mutex_unlock(&rec->mu);
  return copy;
}

size_t kcr_fake_recorder_count(kcr_event_recorder_t *r, const char *type, const char *reason) {
  recording_t *rec = kcr__event_recorder_sink_data(r, on_event);
  size_t i, n = 0;
  json_t *ev;
  if (!rec)
    return 0;
  pthread_mutex_lock(&rec->mu);
  json_array_foreach(rec->events, i, ev) {
    const char *t = json_string_value(json_object_get(ev, "type"));
    const char *why = json_string_value(json_object_get(ev, "reason"));
    if ((!type || (t && strcmp(t, type) == 0)) && (!reason || (why && strcmp(why, reason) == 0)))
      n++;
  }
  pthread_mutex_unlock(&rec->mu);
  return n;
}

/* ---- a reconcile context for tests ---- */

struct kcr_testing_ctx {
  kcr_controller_t *controller; /* never started */
  kcr_reconcile_ctx_t *ctx;
  kcr_reconcile_request req; /* points at ns and name */
  char *ns, *name;
};

/* never_called: the controller's reconcile function, which no worker runs. */
static int never_called(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                        void *data) {
  (void)ctx, (void)req, (void)res, (void)data;
  return KCR_EINTERNAL;
}

int kcr_testing_ctx_create(const kcr_testing_ctx_options *o, const kcr_reconcile_request *req,
                           kcr_testing_ctx_t **out, kcr_error_t *err) {
  kcr_controller_options co;
  kcr_testing_ctx_t *t;
  int rc;
  *out = NULL;
  if (!req || !req->name || !*req->name)
    return kcr_error_set(err, KCR_EINVAL, "testing: a request needs a name");
  t = kcr__calloc(1, sizeof(*t));
  if (!t)
    return kcr_error_set(err, KCR_ENOMEM, "testing: out of memory");
  memset(&co, 0, sizeof(co));
  co.name = o && o->controller_name ? o->controller_name : "test";
  co.reconcile = never_called;
  if (o) {
    co.client = o->client;
    co.api_reader = o->api_reader;
  }
  t->ns = kcr__strdup(req->ns ? req->ns : "");
  t->name = kcr__strdup(req->name);
  if (!t->ns || !t->name) {
    rc = kcr_error_set(err, KCR_ENOMEM, "testing: out of memory");
    goto fail;
  }
  if ((rc = kcr_controller_create(&co, &t->controller, err)) != 0)
    goto fail;
  t->ctx = kcr__reconcile_ctx_create(t->controller, t->ns, t->name);
  if (!t->ctx) {
    rc = kcr_error_set(err, KCR_ENOMEM, "testing: out of memory");
    goto fail;
  }
  t->req.ns = t->ns;
  t->req.name = t->name;
  *out = t;
  return 0;
fail:
  kcr_testing_ctx_destroy(t);
  return rc;
}

kcr_reconcile_ctx_t *kcr_testing_ctx_get(kcr_testing_ctx_t *t) {
  return t->ctx;
}

const kcr_reconcile_request *kcr_testing_ctx_request(kcr_testing_ctx_t *t) {
  return &t->req;
}

bool kcr_testing_ctx_terminal(kcr_testing_ctx_t *t) {
  return kcr__reconcile_ctx_terminal(t->ctx);
}

void kcr_testing_ctx_cancel(kcr_testing_ctx_t *t) {
  kcr_cancel_fire(kcr_reconcile_cancel(t->ctx));
}

void kcr_testing_ctx_reset(kcr_testing_ctx_t *t) {
  kcr__reconcile_ctx_reset(t->ctx);
}

void kcr_testing_ctx_destroy(kcr_testing_ctx_t *t) {
  if (!t)
    return;
  if (t->ctx)
    kcr__reconcile_ctx_destroy(t->ctx);
  kcr_controller_destroy(t->controller);
  kcr__free(t->ns);
  kcr__free(t->name);
  kcr__free(t);
}

int kcr_testing_reconcile(kcr_reconcile_fn fn, void *data, const kcr_objclient *client,
                          const kcr_reconcile_request *req, kcr_result *res, kcr_error_t *err,
                          bool *terminal) {
  kcr_testing_ctx_options o;
  kcr_testing_ctx_t *t = NULL;
  kcr_result r = {false, 0, 0};
  int rc;
  memset(&o, 0, sizeof(o));
  if (client)
    o.client = *client;
  if (terminal)
    *terminal = false;
  if ((rc = kcr_testing_ctx_create(&o, req, &t, err)) != 0 || !t)
    return rc ? rc : KCR_EINTERNAL;
  rc = fn(t->ctx, &t->req, &r, data);
  if (res)
    *res = r;
  if (rc && err && err->code == KCR_OK)
    *err = *kcr_reconcile_err(t->ctx);
  if (terminal)
    *terminal = kcr_testing_ctx_terminal(t);
  kcr_testing_ctx_destroy(t);
  return rc;
}

/* ---- captured logs ---- */

struct kcr_testing_log {
  pthread_mutex_t mu;
  kcr_log_level level;
  json_t *lines; /* protected by mu */
};

static void on_log(const kcr_log_record *rec, void *data) {
  kcr_testing_log_t *l = data;
  json_t *line;
  if (rec->level > l->level)
    return;
  line = json_pack("{s:s, s:s, s:s}", "level", kcr_log_level_name(rec->level), "component",
                   rec->logger ? rec->logger : "", "msg", rec->msg ? rec->msg : "");
  if (!line)
    return;
  for (size_t i = 0; i < rec->nfields; i++) {
    const kcr_log_field *fl = &rec->fields[i];
    json_t *v = NULL;
    switch (fl->type) {
    case KCR_LOG_FIELD_STRING:
      v = fl->s ? json_string(fl->s) : json_null();
      break;
    case KCR_LOG_FIELD_INT:
      v = json_integer(fl->i);
      break;
    case KCR_LOG_FIELD_FLOAT:
      v = json_real(fl->f);
      break;
    case KCR_LOG_FIELD_BOOL:
      v = json_boolean(fl->i);
      break;
    }
    if (fl->key && v)
      json_object_set_new(line, fl->key, v);
    else
      json_decref(v);
  }
  pthread_mutex_lock(&l->mu);
  json_array_append_new(l->lines, line);
  pthread_mutex_unlock(&l->mu);
}

int kcr_testing_log_capture(kcr_log_level level, kcr_testing_log_t **out, kcr_error_t *err) {
  kcr_testing_log_t *l = kcr__calloc(1, sizeof(*l));
  *out = NULL;
  if (!l || !(l->lines = json_array())) {
    kcr__free(l);
    return kcr_error_set(err, KCR_ENOMEM, "testing: out of memory");
  }
  if (pthread_mutex_init(&l->mu, NULL) != 0) {
    json_decref(l->lines);
    kcr__free(l);
    return kcr_error_set(err, KCR_ESYS, "testing: mutex");
  }
  l->level = level;
  kcr_log_set_level(level);
  kcr_log_set_handler(on_log, l);
  *out = l;
  return 0;
}

json_t *kcr_testing_log_lines(kcr_testing_log_t *l) {
  json_t *copy;
  pthread_mutex_lock(&l->mu);
  copy = json_deep_copy(l->lines);
  pthread_mutex_unlock(&l->mu);
  return copy;
}

bool kcr_testing_log_contains(kcr_testing_log_t *l, const char *text) {
  size_t i;
  json_t *line;
  bool found = false;
  pthread_mutex_lock(&l->mu);
  json_array_foreach(l->lines, i, line) {
    const char *msg = json_string_value(json_object_get(line, "msg"));
    if (msg && strstr(msg, text)) {
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&l->mu);
  return found;
}

void kcr_testing_log_release(kcr_testing_log_t *l) {
  if (!l)
    return;
  kcr_log_set_handler(NULL, NULL);
  kcr_log_set_level(KCR_LOG_INFO);
  json_decref(l->lines);
  pthread_mutex_destroy(&l->mu);
  kcr__free(l);
}
