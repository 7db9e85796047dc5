/* SPDX-License-Identifier: MIT */
/* kcr_itutil.c: the shared set-up of libkcr's integration tests (kcr_itutil.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "kcr_itutil.h"

#include "kcr/apierror.h"
#include "kcr/meta.h"
#include "kcr/shard_member.h"
#include "kcr/sharding.h"

static const kcr_gvr namespaces = {"", "v1", "namespaces"};

int kcr_it_connect(kcr_testenv_t **env, kcr_rest_config_t **config, kcr_client_t **client) {
  kcr_client_options o;
  kcr_error_t err;

  *config = NULL;
  *client = NULL;
  if (kcr_testenv_start(env) != 0) {
    fprintf(stderr, "itutil: cannot start or join the test cluster\n");
    return -1;
  }
  kcr_error_clear(&err);
  if (kcr_rest_config_from_kubeconfig(kcr_testenv_kubeconfig(*env), NULL, NULL, config, &err)) {
    fprintf(stderr, "itutil: config: %s\n", err.message);
    kcr_testenv_stop(*env);
    return -1;
  }
  memset(&o, 0, sizeof(o));
  o.config = *config;
  if (kcr_client_create(&o, client, &err) != 0) {
    fprintf(stderr, "itutil: client: %s\n", err.message);
    kcr_rest_config_unref(*config);
    kcr_testenv_stop(*env);
    return -1;
  }
  return 0;
}

int kcr_it_proxied_start(kcr_it_proxied *p) {
  kcr_client_options o;
  kcr_error_t err;
  char path[512];

  memset(p, 0, sizeof(*p));
  unsetenv("KCR_TEST_KUBECONFIG"); /* a cluster of our own, never the shared one */
  setenv("KCR_APISERVER_ARGS", "--watch-cache=false", 1);
  if (kcr_testenv_start(&p->env) != 0) {
    fprintf(stderr, "itutil: cannot start a cluster\n");
    return -1;
  }
  if (kcr_faultproxy_start("127.0.0.1", kcr_testenv_apiserver_port(p->env), &p->proxy) != 0 ||
      kcr_testenv_write_kubeconfig_for_port(p->env, kcr_faultproxy_port(p->proxy), path,
                                            sizeof(path)) != 0) {
    fprintf(stderr, "itutil: cannot start the fault proxy\n");
    return -1;
  }
  kcr_error_clear(&err);
  if (kcr_rest_config_from_kubeconfig(kcr_testenv_kubeconfig(p->env), NULL, NULL, &p->direct_cfg,
                                      &err) != 0 ||
      kcr_rest_config_from_kubeconfig(path, NULL, NULL, &p->proxied_cfg, &err) != 0) {
    fprintf(stderr, "itutil: config: %s\n", err.message);
    return -1;
  }
  memset(&o, 0, sizeof(o));
  o.config = p->direct_cfg;
  if (kcr_client_create(&o, &p->direct, &err) != 0) {
    fprintf(stderr, "itutil: client: %s\n", err.message);
    return -1;
  }
  o.config = p->proxied_cfg;
  if (kcr_client_create(&o, &p->proxied, &err) != 0) {
    fprintf(stderr, "itutil: client: %s\n", err.message);
    return -1;
  }
  return 0;
}

void kcr_it_proxied_stop(kcr_it_proxied *p) {
  kcr_client_destroy(p->proxied);
  kcr_client_destroy(p->direct);
  kcr_rest_config_unref(p->proxied_cfg);
  kcr_rest_config_unref(p->direct_cfg);
  kcr_faultproxy_stop(p->proxy);
  if (p->env)
    kcr_testenv_stop(p->env);
  memset(p, 0, sizeof(*p));
}

int kcr_it_store_equals_list(kcr_client_t *client, kcr_store_t *store, const kcr_gvr *r,
                             const char *ns, const char *label_selector) {
  kcr_request_options o;
  json_t *list = NULL, *item;
  size_t i;
  int ok;
  memset(&o, 0, sizeof(o));
  o.label_selector = label_selector;
  if (kcr_client_list(client, r, ns, &o, &list, NULL) != 0)
    return 0;
  ok = json_array_size(json_object_get(list, "items")) == kcr_store_len(store);
  json_array_foreach(json_object_get(list, "items"), i, item) {
    char key[600];
    json_t *cached = NULL;
    const char *ins = kcr_meta_namespace(item);
    snprintf(key, sizeof(key), "%s%s%s", ins ? ins : "", ins && *ins ? "/" : "",
             kcr_meta_name(item));
    if (!ok || kcr_store_get_by_key(store, key, &cached) != 0 ||
        strcmp(kcr_meta_resource_version(cached), kcr_meta_resource_version(item)) != 0)
      ok = 0;
    json_decref(cached);
  }
  json_decref(list);
  return ok;
}

int kcr_it_delete(kcr_client_t *client, const kcr_gvr *r, const char *ns, const char *name) {
  kcr_error_t err;
  kcr_error_clear(&err);
  if (kcr_client_delete(client, r, ns, name, NULL, NULL, &err) != 0 &&
      !kcr_error_is_not_found(&err)) {
    fprintf(stderr, "itutil: delete %s: %s\n", name, err.message);
    return -1;
  }
  return 0;
}

int kcr_it_create_namespace(kcr_client_t *client, const char *prefix, char *ns, size_t size) {
  json_t *obj;
  kcr_error_t err;
  int rc;
  snprintf(ns, size, "%s-%d", prefix, (int)getpid());
  obj = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                  "name", ns);
  kcr_error_clear(&err);
  rc = kcr_client_create_object(client, &namespaces, NULL, obj, NULL, NULL, &err);
  json_decref(obj);
  if (rc != 0) {
    fprintf(stderr, "itutil: namespace %s: %s\n", ns, err.message);
    return -1;
  }
  return 0;
}

void kcr_it_disconnect(kcr_testenv_t *env, kcr_rest_config_t *config, kcr_client_t *client,
                       const char *ns) {
  if (client && ns)
    kcr_client_delete(client, &namespaces, NULL, ns, NULL, NULL, NULL);
  kcr_client_destroy(client);
  kcr_rest_config_unref(config);
  if (env)
    kcr_testenv_stop(env);
}

void kcr_it_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static size_t on_body(char *p, size_t size, size_t n, void *data) {
  kcr_buf_t *b = data;
  return kcr_buf_append(b, p, size * n) == 0 ? size * n : 0;
}

long kcr_it_http_get(int port, const char *path, kcr_buf_t *body) {
  char url[256];
  long code = 0;
  CURL *c = curl_easy_init();
  kcr_buf_reset(body);
  if (!c)
    return 0;
  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(c);
  return code;
}

json_t *kcr_it_events_about(kcr_testenv_t *env, const char *ns, const char *name) {
  char selector[320], *out = NULL;
  const char *argv[] = {"get",    "events", "-n",   ns,  "--field-selector",
                        selector, "-o",     "json", NULL};
  json_t *list, *items;
  json_error_t jerr;
  snprintf(selector, sizeof(selector), "involvedObject.name=%s", name);
  if (kcr_testenv_kubectl(env, argv, &out) != 0) {
    fprintf(stderr, "itutil: kubectl get events failed\n");
    free(out);
    return NULL;
  }
  list = json_loads(out, 0, &jerr);
  free(out);
  items = json_incref(json_object_get(list, "items"));
  json_decref(list);
  if (!json_is_array(items)) {
    fprintf(stderr, "itutil: kubectl get events: no items (%s)\n", jerr.text);
    json_decref(items);
    return NULL;
  }
  return items;
}

static void *runner_main(void *arg) {
  kcr_it_runner *r = arg;
  kcr_error_t err;
  kcr_error_clear(&err);
  r->rc = kcr_manager_run(r->m, &err);
  if (r->rc)
    fprintf(stderr, "manager: %s\n", err.message);
  return NULL;
}

int kcr_it_runner_start(kcr_it_runner *r) {
  r->rc = 0;
  return pthread_create(&r->t, NULL, runner_main, r) == 0 ? 0 : -1;
}

int kcr_it_runner_stop(kcr_it_runner *r) {
  kcr_manager_request_stop(r->m);
  pthread_join(r->t, NULL);
  return r->rc;
}

/* ---- the reconciles of replicas ---- */

static pthread_mutex_t records_mu = PTHREAD_MUTEX_INITIALIZER;
static kcr_it_record records[KCR_IT_RECORDS_MAX];
static int nrecords;

int64_t kcr_it_mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * KCR_NSEC_PER_SEC + t.tv_nsec;
}

void kcr_it_record_add(int who, const char *ns, const char *name, int64_t start, bool flag) {
  pthread_mutex_lock(&records_mu);
  if (nrecords < KCR_IT_RECORDS_MAX) {
    kcr_it_record *r = &records[nrecords++];
    r->who = who;
    r->flag = flag;
    snprintf(r->key, sizeof(r->key), "%s/%s", ns, name);
    r->start = start;
    r->end = kcr_it_mono();
  }
  pthread_mutex_unlock(&records_mu);
}

int kcr_it_reconciled_since(int64_t t) {
  int n = 0;
  pthread_mutex_lock(&records_mu);
  for (int i = 0; i < nrecords; i++) {
    bool first = records[i].start >= t;
    for (int j = 0; j < i && first; j++)
      first = !(records[j].start >= t && strcmp(records[j].key, records[i].key) == 0);
    n += first;
  }
  pthread_mutex_unlock(&records_mu);
  return n;
}

bool kcr_it_wait_reconciled_since(int64_t t, int want) {
  for (int i = 0; i < 600; i++) {
    if (kcr_it_reconciled_since(t) >= want)
      return true;
    kcr_it_sleep_ms(50);
  }
  return false;
}

bool kcr_it_record_overlap(char *key, size_t size) {
  bool found = false;
  pthread_mutex_lock(&records_mu);
  for (int i = 0; i < nrecords && !found; i++)
    for (int j = i + 1; j < nrecords && !found; j++) {
      const kcr_it_record *a = &records[i], *b = &records[j];
      if (a->who != b->who && strcmp(a->key, b->key) == 0 && a->start < b->end &&
          b->start < a->end) {
        snprintf(key, size, "%s", a->key);
        found = true;
      }
    }
  pthread_mutex_unlock(&records_mu);
  return found;
}

kcr_it_record *kcr_it_records_copy(size_t *n) {
  kcr_it_record *v;
  pthread_mutex_lock(&records_mu);
  v = malloc((nrecords ? (size_t)nrecords : 1) * sizeof(*v));
  *n = v ? (size_t)nrecords : 0;
  if (v && nrecords)
    memcpy(v, records, (size_t)nrecords * sizeof(*v));
  pthread_mutex_unlock(&records_mu);
  return v;
}

double kcr_it_shard_share(kcr_manager_t *m) {
  kcr_shard_set_t *s = NULL;
  double v;
  if (kcr_shard_member_effective(kcr_manager_shard_member(m), &s, NULL) != 0)
    return 0;
  v = kcr_shard_set_share(s);
  kcr_shard_set_destroy(s);
  return v;
}
