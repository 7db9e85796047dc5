/* SPDX-License-Identifier: MIT */
/*
 * memcached_controller_test.c: the Memcached reconciler on kcr/testing.h's
 * fake client, no cluster (kubebuilder's memcached_controller_test.go, and
 * more). Each case runs the reconciler as a controller worker would, until it
 * asks for nothing more, then looks at what it wrote:
 *   - a Memcached that does not exist is not an error;
 *   - the first passes make the Deployment (owner reference, image, port,
 *     security context), add the finalizer and set Available=True;
 *   - scaling 1 -> 3 resizes the Deployment; a steady state writes nothing;
 *   - drift (someone sets the Deployment to 7 replicas) is undone; a failed
 *     resize is Available=False with the error's message until the retry;
 *   - a failed create (the fake client's interceptor) is Available=False
 *     with the error's message, and the error is returned;
 *   - deletion records a Warning Event "Deleting" and the Memcached goes;
 *   - a pass with allocation N failing, for N = 1, 2, ... until one passes
 *     without a failure, neither crashes nor leaks (under valgrind or ASan),
 *     and the passes after it reach the same state.
 * Prints "ok".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kcr/kcr.h>
#include <kcr/testing.h>

#include "kcr/k8s/apps_v1.h"
#include "kcr/k8s/core_v1.h"
#include "memcached_codecs.h"
#include "memcached_controller.h"

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                                   \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static const kcr_gvk MEMCACHED = {"cache.example.com", "v1alpha1", "Memcached"};
static const kcr_gvk DEPLOYMENT = {"apps", "v1", "Deployment"};

static kcr_fake_client_t *fake;
static kcr_objclient client;
static kcr_scheme_t *scheme;
static memcached_reconciler_t reconciler;

/* settle reconciles name until a pass asks for no requeue; returns the last rc. */
static int settle(const char *name, kcr_error_t *err) {
  kcr_reconcile_request req = {"default", name};
  int rc = 0;
  for (int pass = 0; pass < 10; pass++) {
    kcr_result res = {0};
    *err = (kcr_error_t){0};
    rc = kcr_testing_reconcile(memcached_reconcile, &reconciler, &client, &req, &res, err, NULL);
    if (rc != 0 || (!res.requeue && res.requeue_after_ns == 0))
      return rc;
  }
  return -1;
}

static int add_memcached(const char *name, int size, kcr_error_t *err) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"apiVersion\":\"cache.example.com/v1alpha1\",\"kind\":\"Memcached\","
           "\"metadata\":{\"namespace\":\"default\",\"name\":\"%s\"},\"spec\":{\"size\":%d}}",
           name, size);
  return kcr_fake_client_add_json(fake, json, err);
}

static memcached_t *get_memcached(const char *name) {
  void *m = NULL;
  kcr_error_t err = {0};
  kcr_typed_get(&client, scheme, &MEMCACHED, "default", name, &m, &err);
  return m;
}

static kcr_apps_v1_deployment_t *get_deployment(const char *name) {
  void *d = NULL;
  kcr_error_t err = {0};
  kcr_typed_get(&client, scheme, &DEPLOYMENT, "default", name, &d, &err);
  return d;
}

/* condition_is tells whether m's condition type has that status and message. */
static bool condition_is(memcached_t *m, const char *type, const char *status,
                         const char *message) {
  kcr_meta_v1_condition_t *c =
      m ? kcr_typed_condition_find(KCR_CONDITION_LIST(&m->status.conditions), type) : NULL;
  if (c == NULL || strcmp(c->status, status) != 0 || strstr(c->message, message) == NULL) {
    fprintf(stderr, "condition %s: %s %s\n", type, c ? c->status : "(none)", c ? c->message : "");
    return false;
  }
  return true;
}

/* available_is tells whether the Memcached name's Available condition is status and message. */
static bool available_is(const char *name, const char *status, const char *message) {
  memcached_t *m = get_memcached(name);
  bool ok = condition_is(m, "Available", status, message);
  memcached_free(m);
  return ok;
}

static int32_t replicas(const char *name) {
  kcr_apps_v1_deployment_t *d = get_deployment(name);
  int32_t n = d && d->spec && d->spec->has_replicas ? d->spec->replicas : -1;
  kcr_apps_v1_deployment_free(d);
  return n;
}

/* set_replicas writes n into the Deployment, as `kubectl scale` would. */
static int set_replicas(const char *name, int32_t n) {
  kcr_apps_v1_deployment_t *d = get_deployment(name);
  kcr_error_t err = {0};
  int rc = d ? 0 : -1;
  if (d) {
    d->spec->replicas = n;
    rc = kcr_typed_update(&client, scheme, &DEPLOYMENT, d, NULL, NULL, &err);
  }
  kcr_apps_v1_deployment_free(d);
  return rc;
}

/*
 * The allocator every kcr and jansson allocation goes through (installed
 * first, so everything is freed by the allocator that made it): once armed,
 * allocation number fail_at and every later one fail.
 */
static long allocs, fail_at;
static bool failed;

static void *counting_malloc(size_t n) {
  if (fail_at > 0 && ++allocs >= fail_at) {
    failed = true;
    return NULL;
  }
  return malloc(n);
}

static void *counting_realloc(void *p, size_t n) {
  if (fail_at > 0 && ++allocs >= fail_at) {
    failed = true;
    return NULL;
  }
  return realloc(p, n);
}

/* fail_from arms the allocator at n (0: disarms it; failed stays as it was). */
static void fail_from(long n) {
  allocs = 0;
  if (n > 0)
    failed = false;
  fail_at = n;
}

static int etcd_down(const kcr_fake_call *call, kcr_error_t *err, void *data) {
  (void)data;
  if (strcmp(call->gvk->kind, "Deployment") == 0)
    return kcr_fake_error(err, 500, "InternalError", "etcdserver: request timed out");
  return 0;
}

static int test_create(kcr_error_t *err) {
  memcached_t *m;
  kcr_apps_v1_deployment_t *d;
  CHECK(settle("gone", err) == 0); /* not found: nothing to do */
  CHECK(add_memcached("memcached-sample", 1, err) == 0);
  CHECK(settle("memcached-sample", err) == 0);
  CHECK((m = get_memcached("memcached-sample")) != NULL);
  CHECK(kcr_typed_finalizer_contains(&m->metadata, MEMCACHED_FINALIZER));
  CHECK(condition_is(m, "Available", "True",
                     "Deployment for custom resource (memcached-sample) with 1 replicas created "
                     "successfully"));
  CHECK((d = get_deployment("memcached-sample")) != NULL);
  const kcr_meta_v1_owner_reference_t *owner = kcr_typed_owner_ref_controller(d->metadata);
  CHECK(owner && strcmp(owner->kind, "Memcached") == 0 && strcmp(owner->uid, m->metadata.uid) == 0);
  CHECK(d->spec->replicas == 1);
  CHECK(strcmp(kcr_typed_label(d->spec->template->metadata, "app.kubernetes.io/instance"),
               "memcached-sample") == 0);
  kcr_core_v1_pod_spec_t *pod = d->spec->template->spec;
  CHECK(pod->containers_len == 1 && strcmp(pod->containers[0].image, MEMCACHED_DEFAULT_IMAGE) == 0);
  CHECK(pod->containers[0].ports_len == 1 && pod->containers[0].ports[0].container_port == 11211);
  CHECK(pod->security_context->run_as_non_root);
  CHECK(strcmp(pod->security_context->seccomp_profile->type, "RuntimeDefault") == 0);
  CHECK(pod->containers[0].security_context->run_as_user == 1001);
  CHECK(!pod->containers[0].security_context->allow_privilege_escalation);
  CHECK(strcmp(pod->containers[0].security_context->capabilities->drop[0], "ALL") == 0);
  kcr_apps_v1_deployment_free(d);
  memcached_free(m);
  return 0;
}

static int test_scale_and_drift(kcr_error_t *err) {
  memcached_t *m = get_memcached("memcached-sample");
  CHECK(m != NULL);
  CHECK(m->spec.size != NULL);
  *m->spec.size = 3;
  CHECK(kcr_typed_update(&client, scheme, &MEMCACHED, m, NULL, NULL, err) == 0);
  memcached_free(m);
  CHECK(settle("memcached-sample", err) == 0);
  CHECK(replicas("memcached-sample") == 3);
  CHECK(available_is("memcached-sample", "True", "with 3 replicas created successfully"));
  /* steady: another pass reads and writes nothing */
  kcr_fake_client_reset_calls(fake);
  CHECK(settle("memcached-sample", err) == 0);
  CHECK(kcr_fake_client_calls(fake, KCR_FAKE_UPDATE) == 0);
  CHECK(kcr_fake_client_calls(fake, KCR_FAKE_CREATE) == 0);
  /* drift: someone scales the Deployment by hand; the reconciler puts it back */
  CHECK(set_replicas("memcached-sample", 7) == 0);
  CHECK(replicas("memcached-sample") == 7);
  CHECK(settle("memcached-sample", err) == 0);
  CHECK(replicas("memcached-sample") == 3);
  /* a failed resize: Available=False with the error, then the retry fixes it */
  CHECK(set_replicas("memcached-sample", 1) == 0);
  kcr_fake_client_intercept(fake, KCR_FAKE_UPDATE, etcd_down, NULL);
  CHECK(settle("memcached-sample", err) != 0);
  kcr_fake_client_intercept(fake, KCR_FAKE_UPDATE, NULL, NULL);
  CHECK(available_is("memcached-sample", "False",
                     "Failed to update the size for the custom resource (memcached-sample): "
                     "(etcdserver: request timed out)"));
  CHECK(settle("memcached-sample", err) == 0);
  CHECK(replicas("memcached-sample") == 3);
  CHECK(available_is("memcached-sample", "True", "with 3 replicas created successfully"));
  return 0;
}

static int test_failed_create(kcr_error_t *err) {
  CHECK(add_memcached("broken", 2, err) == 0);
  kcr_fake_client_intercept(fake, KCR_FAKE_CREATE, etcd_down, NULL);
  CHECK(settle("broken", err) != 0);
  CHECK(strstr(err->message, "etcdserver: request timed out") != NULL);
  kcr_fake_client_intercept(fake, KCR_FAKE_CREATE, NULL, NULL);
  CHECK(available_is("broken", "False",
                     "Failed to create Deployment for the custom resource (broken): "
                     "(etcdserver: request timed out)"));
  CHECK(get_deployment("broken") == NULL);
  /* the store is back: the retry makes it */
  CHECK(settle("broken", err) == 0);
  CHECK(replicas("broken") == 2);
  return 0;
}

static int test_delete(kcr_error_t *err) {
  memcached_t *m = get_memcached("memcached-sample");
  CHECK(m != NULL);
  CHECK(kcr_typed_delete(&client, scheme, &MEMCACHED, m, NULL, err) == 0);
  memcached_free(m);
  CHECK((m = get_memcached("memcached-sample")) != NULL); /* held by the finalizer */
  CHECK(m->metadata.deletion_timestamp != NULL);
  memcached_free(m);
  CHECK(settle("memcached-sample", err) == 0);
  CHECK(kcr_fake_recorder_count(reconciler.recorder, KCR_EVENT_WARNING, "Deleting") == 1);
  CHECK(get_memcached("memcached-sample") == NULL);
  CHECK(settle("memcached-sample", err) == 0); /* and gone is not an error */
  return 0;
}

/* alloc_failures: the create pass and the deletion pass, each allocation failing in turn. */
static int alloc_failures(kcr_error_t *err) {
  kcr_reconcile_request req = {"default", "oom"};
  long n;
  for (int deleting = 0; deleting < 2; deleting++) {
    for (n = 1;; n++) {
      memcached_t *m;
      kcr_result res = {0};
      CHECK(add_memcached("oom", 1, err) == 0);
      if (deleting) { /* the Deployment made, the finalizer on, then deleted */
        CHECK(settle("oom", err) == 0);
        CHECK((m = get_memcached("oom")) != NULL);
        CHECK(kcr_typed_delete(&client, scheme, &MEMCACHED, m, NULL, err) == 0);
        memcached_free(m);
      }
      fail_from(n);
      kcr_testing_reconcile(memcached_reconcile, &reconciler, &client, &req, &res, NULL, NULL);
      fail_from(0);
      if (!failed)
        break;
      CHECK(settle("oom", err) == 0); /* the next passes recover */
      m = get_memcached("oom");
      if (deleting) {
        CHECK(m == NULL);
      } else {
        CHECK(m != NULL && condition_is(m, "Available", "True", "with 1 replicas"));
        CHECK(kcr_typed_delete(&client, scheme, &MEMCACHED, m, NULL, err) == 0);
        CHECK(settle("oom", err) == 0);
      }
      memcached_free(m);
      kcr_fake_client_destroy(fake); /* the next N on an empty tracker */
      CHECK(kcr_fake_client_create(NULL, &fake, err) == 0);
      client = kcr_fake_client_objclient(fake);
    }
    CHECK(n > 10); /* the pass allocates: the loop did fail some */
    CHECK(settle("oom", err) == 0);
    if (!deleting) {
      memcached_t *m = get_memcached("oom");
      CHECK(m != NULL && kcr_typed_delete(&client, scheme, &MEMCACHED, m, NULL, err) == 0);
      memcached_free(m);
      CHECK(settle("oom", err) == 0);
    }
    CHECK(get_memcached("oom") == NULL);
  }
  return 0;
}

int main(void) {
  kcr_error_t err = {0};
  int rc;

  kcr_set_alloc_funcs(counting_malloc, counting_realloc, free);

  CHECK(kcr_scheme_create(&scheme, &err) == 0);
  CHECK(memcached_register_types(scheme, &err) == 0);
  CHECK(kcr_fake_client_create(NULL, &fake, &err) == 0);
  CHECK(kcr_fake_recorder_create(&reconciler.recorder, &err) == 0);
  client = kcr_fake_client_objclient(fake);
  reconciler.scheme = scheme;
  reconciler.image = MEMCACHED_DEFAULT_IMAGE;

  rc = test_create(&err) || test_scale_and_drift(&err) || test_failed_create(&err) ||
       test_delete(&err) || alloc_failures(&err);
  if (rc)
    fprintf(stderr, "last error: %s\n", err.message);
  kcr_event_recorder_destroy(reconciler.recorder);
  kcr_fake_client_destroy(fake);
  kcr_scheme_destroy(scheme);
  if (rc)
    return 1;
  printf("ok\n");
  return 0;
}
