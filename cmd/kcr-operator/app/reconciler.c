/* SPDX-License-Identifier: MIT */
/*
 * reconciler.c: the App controller's reconcile function: it reads the App and
 * its children through the manager's client (cache reads, fenced writes), asks
 * the pure functions of app_desired.c / app_status.c what the world should look
 * like, and writes only the difference.
 *
 * Order of a pass:
 *   1. The App is gone: nothing to do (garbage collection removes the children).
 *   2. The App is being deleted: remove its directory entry, then the finalizer
 *      (JSON Patch with a test op: other finalizers are never clobbered).
 *   3. Ensure the finalizer kcr.dev/directory (a JSON Patch, not a PUT of the
 *      App; before anything the finalizer must clean up exists).
 *   4. Unless paused: Deployment, Service and ConfigMap — create the missing,
 *      update the drifted, delete the ones the spec no longer asks for; a
 *      same-named child that this App does not control is left alone and
 *      reported as Degraded/NameConflict. Then the directory entry.
 *   5. Status, written only when it changed (no hot loops).
 * A failed write returns its error: the controller requeues with backoff, and the
 * next pass starts from what the cache then says.
 *
 * The cache holds only the children the operator labels (main.c: a label
 * selector per child kind), so a same-named child someone else made is not in
 * it: the create answers AlreadyExists, and an uncached read of the object
 * (the direct client) says whose it is. Not ours: NameConflict, never a
 * takeover. Ours but unlabelled (someone removed the label): updated back into
 * shape, which labels it again. A pass that ends in NameConflict asks to run
 * again after KOP_APP_CONFLICT_RECHECK_NS: nothing else would tell it that the
 * other object went away, since the cache never sees that object (docs/design.md).
 *
 * Every write, the directory ConfigMap's included, goes through the reconcile's
 * object client, which the manager fences: a leader past its renew deadline
 * writes nothing. Only reads use the direct client.
 *
 * What the controller may do, and nothing more (no wildcards): read and update
 * Apps (never create or delete them), write their status and finalizers,
 * manage the children (the app-directory ConfigMap included), and record
 * Events. `make manifests` writes config/rbac/role.yaml from these markers
 * (kcr-gen rbac, docs/kcr-gen.md):
 *
 * +kcr:rbac:groups=kcr.dev,resources=apps,verbs=get;list;watch;update;patch
 * +kcr:rbac:groups=kcr.dev,resources=apps/status,verbs=update;patch
 * +kcr:rbac:groups=kcr.dev,resources=apps/finalizers,verbs=update
 * +kcr:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
 * +kcr:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
 * +kcr:rbac:groups=core,resources=events,verbs=create;patch
 * +kcr:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app_desired.h"
#include "app/app_status.h"
#include "app/reconciler.h"
#include "kcr/apierror.h"
#include "kcr/client.h"
#include "kcr/clock.h"
#include "kcr/controllerutil.h"
#include "kcr/k8s/apps_v1.h"
#include "kcr/k8s/core_v1.h"
#include "kcr/log.h"
#include "kcr/meta.h"
#include "kcr/scheme.h"
#include "kcr/typed.h"

/* The children, Deployment first (its answer feeds the status). */
typedef kop_app_child_kind child_kind;
static const child_kind *const children = kop_app_children;
static const kcr_gvk app_gvk = {KOP_APP_GROUP, KOP_APP_VERSION, KOP_APP_KIND};

int kop_app_scheme_create(kcr_scheme_t **out, kcr_error_t *err) {
  kcr_scheme_t *s = NULL;
  int rc = kcr_scheme_create(&s, err);
  if (rc == 0)
    rc = app_v1alpha1_register(s, err);
  if (rc == 0)
    rc = kcr_apps_v1_deployment_register(s, err);
  if (rc == 0)
    rc = kcr_core_v1_service_register(s, err);
  if (rc == 0)
    rc = kcr_core_v1_config_map_register(s, err);
  if (rc) {
    kcr_scheme_destroy(s);
    s = NULL;
  }
  *out = s;
  return rc;
}

/* record notes an Event regarding the App (never blocks; a full queue drops it). */
static void record(const kop_app_reconciler *r, const app_v1alpha1_t *app, const char *type,
                   const char *reason, const char *action, const char *kind, const char *ns,
                   const char *name) {
  if (r->events)
    kcr_event_record_meta(r->events, &app_gvk, app->metadata, type, reason, action, "%s %s %s/%s",
                          reason, kind, ns, name);
}

/*
 * read_direct reads one child from the API server, not the cache (*out new,
 * managedFields dropped as the cache drops them): the cache holds only what
 * the operator labels, so an object a create was refused for is not in it.
 */
static int read_direct(kcr_reconcile_ctx_t *ctx, const kop_app_reconciler *r, const child_kind *k,
                       const char *ns, const char *name, json_t **out, kcr_error_t *err) {
  kcr_request_options ro;
  int rc;
  memset(&ro, 0, sizeof(ro));
  ro.cancel = kcr_reconcile_cancel(ctx);
  rc = kcr_client_get(r->direct, &k->gvr, ns, name, &ro, out, err);
  if (rc == 0)
    json_object_del(kcr_meta_metadata(*out), "managedFields");
  return rc;
}

/*
 * sync_child brings one child in line. *observed (may be NULL) receives the
 * child as it now is when the App controls it (new reference); without it a
 * write's answer is not parsed. *conflict is set
 * when the App wants the child and a same-named one exists that the App does
 * not control; a child the spec does not ask for is no conflict, whoever owns
 * it. Its log lines carry the reconcile's fields (kcr_reconcile_log).
 */
static int sync_child(kcr_reconcile_ctx_t *ctx, const kop_app_reconciler *r, const kcr_objclient *c,
                      const app_v1alpha1_t *typed, const child_kind *k, json_t **observed,
                      bool *conflict, char *conflict_msg, size_t msg_size, kcr_error_t *err) {
  const char *ns = typed->metadata ? typed->metadata->namespace : NULL;
  json_t *desired = NULL, *existing = NULL, *merged = NULL, *out = NULL;
  void *want = NULL, *have = NULL, *after = NULL;
  bool changed = false;
  char name[300];
  int rc;

  if (observed)
    *observed = NULL;
  if (!ns || !typed->metadata->name) /* kop_app_check refused it already */
    return kcr_error_set(err, KCR_EINVAL, "app: metadata.name and namespace are required");
  if ((rc = k->desired(typed, &want, err)) != 0)
    return rc;
  snprintf(name, sizeof(name), "%s%s", typed->metadata->name, k->suffix);
  rc = kcr_ignore_not_found(kcr_objclient_get(c, &k->gvk, ns, name, &existing, err), err);
  if (rc == 0 && existing)
    rc = k->decode(existing, &have, err);
  if (rc)
    goto out;
  if (!want) {
    /* The spec no longer asks for this child: delete ours, leave anyone else's. */
    if (existing && kop_app_owns(typed, k->meta(have))) {
      rc = kcr_ignore_not_found(kcr_objclient_delete(c, existing, NULL, err), err);
      if (rc == 0)
        kcr_reconcile_log(ctx, KCR_LOG_INFO, "deleted %s %s/%s (no longer in the spec)", k->kind,
                          ns, name);
    }
    goto out;
  }
  if (!existing) {
    if ((rc = k->encode(want, &desired, err)) != 0)
      goto out;
    rc = kcr_objclient_create(c, desired, observed ? &out : NULL, err);
    if (rc == 0) {
      kcr_reconcile_log(ctx, KCR_LOG_INFO, "created %s %s/%s", k->kind, ns, name);
      record(r, typed, "Normal", "Created", "Create", k->kind, ns, name);
      goto done;
    }
    if (rc != KCR_EAPI || !kcr_error_is_already_exists(err))
      goto out;
    /* On the server but not in the cache: not labelled by us. Ask the server whose. */
    kcr_error_clear(err);
    if ((rc = read_direct(ctx, r, k, ns, name, &existing, err)) != 0 ||
        (rc = k->decode(existing, &have, err)) != 0)
      goto out; /* gone meanwhile (NotFound) or unreadable: the backoff retries */
  }
  if (!kop_app_owns(typed, k->meta(have))) {
    /* Never take over what another owner (or nobody) controls. */
    *conflict = true;
    snprintf(conflict_msg, msg_size, "%s %s/%s exists and is not controlled by this App", k->kind,
             ns, name);
    goto out;
  }
  /* Apply the App's fields onto what the server has; write only what changed. */
  if ((rc = kop_app_child_update(k, typed, have, &after, &changed, err)) != 0)
    goto out;
  if (changed) {
    rc = k->encode(after, &merged, err);
    if (rc == 0)
      rc = kcr_objclient_update(c, merged, NULL, observed ? &out : NULL, err);
    if (rc == 0) {
      kcr_reconcile_log(ctx, KCR_LOG_INFO, "updated %s %s/%s", k->kind, ns, name);
      record(r, typed, "Normal", "Updated", "Update", k->kind, ns, name);
    }
  } else {
    out = json_incref(existing);
  }
done:
  if (rc == 0 && observed)
    *observed = json_incref(out);

out:
  if (want)
    k->release(want);
  if (have)
    k->release(have);
  if (after)
    k->release(after);
  json_decref(desired);
  json_decref(existing);
  json_decref(merged);
  json_decref(out);
  return rc;
}

/* ---- the directory memo ---- */

/* memo_entry: what this process last wrote, or found, for one directory key. */
typedef struct memo_entry {
  struct memo_entry *next;
  char *url; /* NULL: known to be absent */
  char key[];
} memo_entry;

struct kop_app_directory_memo {
  pthread_mutex_t mu;
  memo_entry **buckets;
  size_t nbuckets, len;
  json_t *dir;         /* the directory as this process last wrote it, at the version
                        * the server answered; NULL: read it */
  char generation[32]; /* the shard generation the entries belong to */
};

int kop_app_directory_memo_create(kop_app_directory_memo **out) {
  kop_app_directory_memo *m = calloc(1, sizeof(*m));
  *out = NULL;
  if (!m ||
      !(m->buckets = calloc(64, sizeof(memo_entry *)))) { // NOLINT(bugprone-sizeof-expression)
    free(m);
    return KCR_ENOMEM;
  }
  m->nbuckets = 64;
  pthread_mutex_init(&m->mu, NULL);
  *out = m;
  return 0;
}

/* memo_drop_entries frees every entry; m->mu held, or m private. */
static void memo_drop_entries(kop_app_directory_memo *m) {
  for (size_t i = 0; i < m->nbuckets; i++) {
    for (memo_entry *e = m->buckets[i], *next; e; e = next) {
      next = e->next;
      free(e->url);
      free(e);
    }
    m->buckets[i] = NULL;
  }
  m->len = 0;
}

void kop_app_directory_memo_destroy(kop_app_directory_memo *m) {
  if (!m)
    return;
  memo_drop_entries(m);
  json_decref(m->dir);
  pthread_mutex_destroy(&m->mu);
  free(m->buckets);
  free(m);
}

void kop_app_directory_memo_follow(kop_app_directory_memo *m, const char *generation) {
  json_t *dir = NULL;
  char gen[sizeof(m->generation)];
  if (!m)
    return;
  snprintf(gen, sizeof(gen), "%s", generation ? generation : "");
  pthread_mutex_lock(&m->mu);
  if (strcmp(gen, m->generation) != 0) {
    memo_drop_entries(m);
    dir = m->dir;
    m->dir = NULL;
    memcpy(m->generation, gen, sizeof(gen));
  }
  pthread_mutex_unlock(&m->mu);
  json_decref(dir);
}

/* memo_take_dir hands over the directory last written (new reference), or
 * NULL: the caller reads it. */
static json_t *memo_take_dir(kop_app_directory_memo *m) {
  json_t *d;
  if (!m)
    return NULL;
  pthread_mutex_lock(&m->mu);
  d = m->dir;
  m->dir = NULL;
  pthread_mutex_unlock(&m->mu);
  return d;
}

/* memo_keep_dir keeps dir (stolen), just written at version rv, for the next
 * pass; of two workers' directories the newer version stays. */
static void memo_keep_dir(kop_app_directory_memo *m, json_t *dir, const char *rv) {
  json_t *old = NULL;
  if (!m || !*rv ||
      json_object_set_new(kcr_meta_metadata(dir), "resourceVersion", json_string(rv)) != 0) {
    json_decref(dir);
    return;
  }
  pthread_mutex_lock(&m->mu);
  if (m->dir && strtoull(kcr_meta_resource_version(m->dir), NULL, 10) > strtoull(rv, NULL, 10)) {
    old = dir;
  } else {
    old = m->dir;
    m->dir = dir;
  }
  pthread_mutex_unlock(&m->mu);
  json_decref(old);
}

/* memo_slot returns where key's entry is or would go (FNV-1a); m->mu held. */
static memo_entry **memo_slot(kop_app_directory_memo *m, const char *key) {
  uint64_t h = 1469598103934665603ULL;
  memo_entry **e;
  for (const char *c = key; *c; c++)
    h = (h ^ (unsigned char)*c) * 1099511628211ULL;
  for (e = &m->buckets[h % m->nbuckets]; *e && strcmp((*e)->key, key) != 0; e = &(*e)->next)
    ;
  return e;
}

/* memo_grow doubles the buckets when there are more entries than buckets. */
static void memo_grow(kop_app_directory_memo *m) {
  size_t n = m->nbuckets * 2;
  memo_entry **b = calloc(n, sizeof(memo_entry *)); // NOLINT(bugprone-sizeof-expression)
  memo_entry **old = m->buckets;
  size_t oldn = m->nbuckets;
  if (!b)
    return; /* longer chains, still correct */
  m->buckets = b;
  m->nbuckets = n;
  for (size_t i = 0; i < oldn; i++) {
    for (memo_entry *e = old[i], *next; e; e = next) {
      memo_entry **slot = memo_slot(m, e->key);
      next = e->next;
      e->next = NULL;
      *slot = e;
    }
  }
  free(old);
}

/* memo_says tells whether the memo knows key to hold url (NULL: absent). */
static bool memo_says(kop_app_directory_memo *m, const char *key, const char *url) {
  bool yes = false;
  memo_entry *e;
  if (!m)
    return false;
  pthread_mutex_lock(&m->mu);
  e = *memo_slot(m, key);
  if (e)
    yes = url ? e->url && strcmp(e->url, url) == 0 : e->url == NULL;
  pthread_mutex_unlock(&m->mu);
  return yes;
}

/*
 * memo_note records that key now holds url (NULL: absent); forget drops the
 * key instead (the App is gone). Best effort: without memory the next pass
 * writes again, which is only a redundant request.
 */
static void memo_note(kop_app_directory_memo *m, const char *key, const char *url, bool forget) {
  memo_entry **slot, *e;
  char *copy = NULL;
  if (!m)
    return;
  if (url && !forget && !(copy = strdup(url)))
    forget = true;
  pthread_mutex_lock(&m->mu);
  slot = memo_slot(m, key);
  if ((e = *slot) && forget) {
    *slot = e->next;
    m->len--;
    free(e->url);
    free(e);
  } else if (e) {
    free(e->url);
    e->url = copy;
    copy = NULL;
  } else if (!forget && (e = calloc(1, sizeof(*e) + strlen(key) + 1))) {
    memcpy(e->key, key, strlen(key) + 1);
    e->url = copy;
    copy = NULL;
    *slot = e;
    if (++m->len > m->nbuckets)
      memo_grow(m);
  }
  pthread_mutex_unlock(&m->mu);
  free(copy);
}

/*
 * sync_directory sets or removes the App's entry in the directory ConfigMap.
 * The memo (r->memo) remembers what this process wrote or found for the App's
 * key, so a pass whose entry is already as wanted neither reads nor writes;
 * after a restart, or on a new leader, the first pass of each App looks once.
 *
 * The memo also keeps the directory as this process last wrote it, with the
 * version the server answered (kcr_objclient_update_rv: the answer is not
 * parsed), and the next pass that must change it starts from that copy instead
 * of reading the directory again: the PUT carries that version, so a directory
 * someone else changed meanwhile answers 409 (gone: 404), and the pass then
 * reads it and writes again. With N Apps the directory is O(N) bytes, and its
 * read was the largest single cost per App (docs/benchmarks.md).
 *
 * The read goes through the direct client, not the cache: the directory is one
 * object in the operator's namespace, which a cache limited to --namespace
 * does not watch. It writes through the reconcile's object client c, so that
 * the manager's fence holds for it as for every other write. A conflicting
 * write from a read copy (another App's pass) fails and is retried.
 *
 * Why GET and PUT, not a merge patch of the one key: measured with 1000 Apps
 * (bench/results/notes-20261201.txt), the patch saved operator CPU but cost the API server
 * more (it re-encodes the whole directory to apply a patch, and retries on its
 * own stale cache) and made the run slower; the memo keeps the saving.
 */
/*
 * dir_apply sets or removes the entry key in *dir (the directory as JSON,
 * through its typed ConfigMap); when it changed, *dir is replaced by the
 * re-encoded ConfigMap, which keeps every member it had (kcr_unknown).
 */
static int dir_apply(json_t **dir, const char *key, const char *want, bool *changed,
                     kcr_error_t *err) {
  kcr_core_v1_config_map_t *cm = NULL;
  json_t *out = NULL;
  int rc = kcr_core_v1_config_map_decode(*dir, &cm, err);
  *changed = false;
  if (rc == 0)
    rc = kop_app_directory_apply(cm, key, want, changed, err);
  if (rc == 0 && *changed && (rc = kcr_core_v1_config_map_encode(cm, &out, err)) == 0) {
    json_decref(*dir);
    *dir = out;
  }
  kcr_core_v1_config_map_free(cm);
  return rc;
}

static int sync_directory(kcr_reconcile_ctx_t *ctx, const kop_app_reconciler *r,
                          const kcr_objclient *c, const app_v1alpha1_t *app, bool remove,
                          kcr_error_t *err) {
  static const kcr_gvr configmaps = {"", "v1", "configmaps"};
  const char *dir_ns = r->directory_namespace;
  char key[KCR_META_KEY_MAX], url[KOP_APP_URL_MAX], rv[64] = "";
  kcr_request_options ro;
  json_t *dir;
  const char *want;
  bool changed = false;
  int rc;

  if ((rc = kop_app_directory_want(app, remove, key, sizeof(key), url, sizeof(url), &want, err)))
    return rc;
  if (r->shard) {
    char gen[24];
    kcr_shard_member_generation(r->shard, gen, sizeof(gen));
    kop_app_directory_memo_follow(r->memo, gen);
  }
  if (memo_says(r->memo, key, want))
    return 0;
  if ((dir = memo_take_dir(r->memo)) != NULL) {
    rc = dir_apply(&dir, key, want, &changed, err);
    if (rc == 0 && changed)
      rc = kcr_objclient_update_rv(c, dir, NULL, rv, sizeof(rv), err);
    if (rc == 0) {
      kcr_reconcile_log(ctx, KCR_LOG_DEBUG, "directory %s from the copy last written (%s)",
                        changed ? "written" : "already right", rv[0] ? rv : "unchanged");
      memo_note(r->memo, key, want, remove);
      memo_keep_dir(r->memo, dir, rv[0] ? rv : kcr_meta_resource_version(dir));
      return 0;
    }
    json_decref(dir);
    if (rc != KCR_EAPI || !(kcr_error_is_conflict(err) || kcr_error_is_not_found(err)))
      return rc;
    kcr_error_clear(err); /* changed or gone since this process wrote it: read it */
    changed = false;
  }
  memset(&ro, 0, sizeof(ro));
  ro.cancel = kcr_reconcile_cancel(ctx);
  rc = kcr_client_get(r->direct, &configmaps, dir_ns, KOP_APP_DIRECTORY_NAME, &ro, &dir, err);
  if (rc == KCR_EAPI && kcr_error_is_not_found(err)) {
    kcr_error_clear(err);
    if (!want) {
      memo_note(r->memo, key, NULL, remove);
      return 0; /* no directory, no entry */
    }
    dir = kop_app_desired_directory(dir_ns);
    if (!dir)
      return kcr_error_set(err, KCR_ENOMEM, "app: out of memory");
    rc = dir_apply(&dir, key, want, &changed, err);
    if (rc == 0 && changed)
      rc = kcr_objclient_create(c, dir, NULL, err);
    if (rc == 0)
      memo_note(r->memo, key, want, remove);
    json_decref(dir);
    return rc;
  }
  if (rc)
    return rc;
  json_object_del(kcr_meta_metadata(dir), "managedFields");
  rc = dir_apply(&dir, key, want, &changed, err);
  if (rc == 0 && changed)
    rc = kcr_objclient_update_rv(c, dir, NULL, rv, sizeof(rv), err);
  if (rc) {
    json_decref(dir);
    return rc;
  }
  memo_note(r->memo, key, want, remove);
  memo_keep_dir(r->memo, dir, rv[0] ? rv : kcr_meta_resource_version(dir));
  return 0;
}

/*
 * ensure_finalizer adds the finalizer with a JSON Patch of ~140 bytes rather
 * than a PUT of the whole App. *app (and *id, its identity) become what the
 * server returned; nothing is sent when the finalizer is there already.
 */
static int ensure_finalizer(const kcr_objclient *c, const kop_app_reconciler *r,
                            app_v1alpha1_t **app, json_t **id, kcr_error_t *err) {
  app_v1alpha1_t *next = NULL;
  char *patch = NULL;
  int rc;
  if (kcr_typed_finalizer_contains((*app)->metadata, KOP_APP_FINALIZER))
    return 0;
  if ((rc = kcr_finalizer_add_patch(*id, KOP_APP_FINALIZER, &patch, err)) != 0)
    return rc;
  rc = kcr_typed_patch(c, r->scheme, &app_gvk, *app, KCR_PATCH_JSON, patch, strlen(patch), NULL,
                       (void **)&next, err);
  kcr_free(patch);
  if (rc)
    return rc;
  app_v1alpha1_free(*app);
  json_decref(*id);
  *app = next;
  if (!(*id = kop_app_identity(next)))
    return kcr_error_set(err, KCR_ENOMEM, "app: out of memory");
  return 0;
}

int kop_app_reconcile(kcr_reconcile_ctx_t *ctx, const kcr_reconcile_request *req, kcr_result *res,
                      void *data) {
  const kop_app_reconciler *r = data;
  const kcr_objclient *c = kcr_reconcile_client(ctx);
  kcr_error_t *err = kcr_reconcile_err(ctx);
  app_v1alpha1_t *app = NULL;
  app_v1alpha1_status_t *status = NULL;
  json_t *id = NULL, *deployment = NULL;
  kop_app_observed obs = {NULL, NULL, NULL};
  char conflict_msg[512] = "";
  bool conflict = false;
  int rc, sync_rc = 0;

  rc = kcr_typed_get(c, r->scheme, &app_gvk, req->ns, req->name, (void **)&app, err);
  if (rc == KCR_EPARSE) /* not decodable as an App: the schema normally prevents it */
    return kcr_reconcile_terminal(ctx, KCR_EINVAL);
  rc = kcr_ignore_not_found(rc, err);
  if (rc || !app)
    return rc; /* gone: the finalizer saw to the directory */
  if (!(id = kop_app_identity(app))) {
    app_v1alpha1_free(app);
    return kcr_error_set(err, KCR_ENOMEM, "app: out of memory");
  }

  if (app->metadata && app->metadata->deletion_timestamp) {
    if (kcr_typed_finalizer_contains(app->metadata, KOP_APP_FINALIZER)) {
      rc = sync_directory(ctx, r, c, app, true, err);
      if (rc == 0)
        rc = kcr_finalizer_remove_remote(c, id, KOP_APP_FINALIZER, err);
      if (rc == 0)
        kcr_reconcile_log(ctx, KCR_LOG_INFO, "directory entry removed, finalizer released");
    }
    goto out;
  }
  if (kop_app_check(app, err) != 0) {
    rc = kcr_reconcile_terminal(ctx, KCR_EINVAL); /* the schema normally prevents it */
    goto out;
  }
  if ((rc = ensure_finalizer(c, r, &app, &id, err)) != 0)
    goto out;

  if (!(app->spec->has_paused && app->spec->paused)) {
    for (size_t i = 0; i < KOP_APP_CHILDREN && sync_rc == 0; i++) {
      bool child_conflict = false;
      json_t *seen = NULL;
      /* Only the Deployment's answer is read (for the status): the others
       * are not parsed. */
      sync_rc = sync_child(ctx, r, c, app, &children[i], i == 0 ? &seen : NULL, &child_conflict,
                           conflict_msg, sizeof(conflict_msg), err);
      if (i == 0)
        deployment = seen;
      conflict = conflict || child_conflict;
    }
    if (sync_rc == 0)
      sync_rc = sync_directory(ctx, r, c, app, false, err);
  } else {
    /* Paused: change nothing, but still report what the Deployment does. */
    json_t *existing = NULL;
    void *have = NULL;
    if (kcr_objclient_get(c, &children[0].gvk, req->ns, req->name, &existing, NULL) == 0 &&
        children[0].decode(existing, &have, NULL) == 0 && kop_app_owns(app, children[0].meta(have)))
      deployment = json_incref(existing);
    if (have)
      children[0].release(have);
    json_decref(existing);
  }

  obs.deployment = deployment;
  if (conflict) {
    obs.degraded_reason = KOP_APP_REASON_NAME_CONFLICT;
    obs.degraded_message = conflict_msg;
    kcr_reconcile_log(ctx, KCR_LOG_WARN, "%s", conflict_msg);
    if (r->events)
      kcr_event_record_meta(r->events, &app_gvk, app->metadata, "Warning",
                            KOP_APP_REASON_NAME_CONFLICT, "Reconcile", "%s; it is left alone",
                            conflict_msg);
    /* Look again later: the other object is not cached, so no event says it went. */
    res->requeue_after_ns = KOP_APP_CONFLICT_RECHECK_NS;
  } else if (sync_rc) {
    obs.degraded_reason = "ReconcileFailed";
    obs.degraded_message = err->message;
  }
  {
    kcr_error_t serr;
    kcr_error_clear(&serr);
    rc = kop_app_status_of(app, &obs, kcr_clock_wall(kcr_clock_system()), &status, &serr);
    if (rc == 0 && kop_app_status_differs(app, status)) {
      app_v1alpha1_status_free(app->status);
      app->status = status;
      status = NULL;
      rc = kcr_typed_update(c, r->scheme, &app_gvk, app, "status", NULL, &serr);
    }
    if (rc && !sync_rc && err->code == KCR_OK)
      *err = serr;
  }
  rc = sync_rc ? sync_rc : rc;
out:
  app_v1alpha1_status_free(status);
  json_decref(deployment);
  json_decref(id);
  app_v1alpha1_free(app);
  return rc;
}
