/* SPDX-License-Identifier: MIT */
/*
 * kcr_itutil.h: the set-up most integration tests of libkcr share: join (or start)
 * the test cluster, load its kubeconfig, make a client, and create a namespace of
 * the test's own. Links libkcr (kcr_testenv itself stays libc-only).
 */
#ifndef KCR_ITUTIL_H
#define KCR_ITUTIL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcr/buf.h"
#include "kcr/client.h"
#include "kcr/config.h"
#include "kcr/manager.h"
#include "kcr/store.h"
#include "kcr_faultproxy.h"
#include "kcr_testenv.h"

/*
 * kcr_it_connect starts or joins the cluster (kcr_testenv_start), loads its admin
 * kubeconfig and creates a client on it. Returns 0, or -1 after printing why on
 * stderr (then nothing needs releasing).
 */
int kcr_it_connect(kcr_testenv_t **env, kcr_rest_config_t **config, kcr_client_t **client);

/*
 * kcr_it_proxied: a cluster of the test's own, for faults that must not
 * disturb the shared one: kube-apiserver with --watch-cache=false (a watch from
 * a compacted version then reaches etcd and gets its 410), a kcr_faultproxy in
 * front of it, and a client each way: direct, and proxied through the proxy.
 */
typedef struct kcr_it_proxied {
  kcr_testenv_t *env;
  kcr_faultproxy_t *proxy;
  kcr_rest_config_t *direct_cfg, *proxied_cfg;
  kcr_client_t *direct, *proxied;
} kcr_it_proxied;

/*
 * kcr_it_proxied_start starts p's cluster, proxy and clients (p is zeroed
 * first). Returns 0, or -1 after printing why on stderr; kcr_it_proxied_stop
 * releases what was made either way.
 */
int kcr_it_proxied_start(kcr_it_proxied *p);

/* kcr_it_proxied_stop releases what kcr_it_proxied_start made (NULLs ignored). */
void kcr_it_proxied_stop(kcr_it_proxied *p);

/*
 * kcr_it_store_equals_list: store (an informer's) holds exactly what a fresh
 * LIST of r in ns with label_selector (NULL: all) returns, key for key and
 * version for version. 1 or 0 (also when the LIST fails).
 */
int kcr_it_store_equals_list(kcr_client_t *client, kcr_store_t *store, const kcr_gvr *r,
                             const char *ns, const char *label_selector);

/* kcr_it_delete deletes ns/name of r; gone already is fine. 0, or -1 after
 * printing why on stderr. */
int kcr_it_delete(kcr_client_t *client, const kcr_gvr *r, const char *ns, const char *name);

/*
 * kcr_it_create_namespace creates namespace "<prefix>-<pid>", written into ns
 * (size bytes). Returns 0, or -1 after printing why on stderr.
 */
int kcr_it_create_namespace(kcr_client_t *client, const char *prefix, char *ns, size_t size);

/*
 * kcr_it_disconnect deletes namespace ns (when not NULL; without waiting), then
 * releases the client, the config and the cluster handle. NULLs are ignored.
 */
void kcr_it_disconnect(kcr_testenv_t *env, kcr_rest_config_t *config, kcr_client_t *client,
                       const char *ns);

/*
 * kcr_it_events_about returns what `kubectl get events -n ns --field-selector
 * involvedObject.name=name -o json` lists: a new array of core/v1 Events (empty
 * when there are none), or NULL after printing why on stderr.
 */
json_t *kcr_it_events_about(kcr_testenv_t *env, const char *ns, const char *name);

/* kcr_it_sleep_ms sleeps ms milliseconds. */
void kcr_it_sleep_ms(int ms);

/*
 * kcr_it_http_get fetches http://127.0.0.1:port/path (plain HTTP, 5 s timeout)
 * into body (borrowed; reset first). Returns the HTTP status, 0 when the request
 * failed. The caller has run curl_global_init.
 */
long kcr_it_http_get(int port, const char *path, kcr_buf_t *body);

/*
 * kcr_it_runner: a manager run by kcr_manager_run on a thread of its own.
 * kcr_it_runner_start starts r->m's run (0, or -1 when no thread could be
 * made); kcr_it_runner_stop requests the stop, joins the thread and returns
 * what kcr_manager_run returned (its error printed on stderr). Neither
 * destroys the manager.
 */
typedef struct kcr_it_runner {
  kcr_manager_t *m;
  pthread_t t;
  int rc;
} kcr_it_runner;

int kcr_it_runner_start(kcr_it_runner *r);
int kcr_it_runner_stop(kcr_it_runner *r);

/*
 * The reconciles of replicas, for the sharding tests: each reconcile notes
 * its replica, key, start and end on the monotonic clock (kcr_it_mono) and a
 * flag of the test's. All functions are thread-safe; the log holds at most
 * KCR_IT_RECORDS_MAX records (later ones are dropped).
 *   kcr_it_record_add          notes one reconcile.
 *   kcr_it_reconciled_since    how many distinct keys had a reconcile start
 *                              at or after t.
 *   kcr_it_wait_reconciled_since  waits up to 30 s for want of them.
 *   kcr_it_record_overlap      the first key two replicas reconciled in
 *                              overlapping intervals, written into key
 *                              (size bytes); false when there is none.
 *   kcr_it_records_copy        a new copy of the log (free it), its length.
 *   kcr_it_shard_share         the share of the hash space m's shard member
 *                              holds now (0 when it cannot say).
 */
#define KCR_IT_RECORDS_MAX 4096
typedef struct kcr_it_record {
  int who;
  bool flag;
  char key[96];
  int64_t start, end;
} kcr_it_record;

int64_t kcr_it_mono(void);
void kcr_it_record_add(int who, const char *ns, const char *name, int64_t start, bool flag);
int kcr_it_reconciled_since(int64_t t);
bool kcr_it_wait_reconciled_since(int64_t t, int want);
bool kcr_it_record_overlap(char *key, size_t size);
kcr_it_record *kcr_it_records_copy(size_t *n);
double kcr_it_shard_share(kcr_manager_t *m);

#endif /* KCR_ITUTIL_H */
