/* SPDX-License-Identifier: MIT */
/*
 * test_delta_fifo.c: the DeltaFIFO, mirroring client-go's delta_fifo_test.go case
 * by case (with EmitDeltaTypeReplaced on: upstream's Sync deltas from Replace read
 * Replaced here), plus allocation failure, the store as known objects, and
 * concurrent producers and consumers for TSan.
 *
 * Deltas are compared as text: "Type:name=val" per delta, "Type!key:name=val"
 * for a tombstone ("...:-" without an object), joined by ",".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kcr/delta_fifo.h"
#include "testutil.h"

/*
 * jansson's inline json_decref reads the refcount plainly (to skip its static
 * singletons) before the atomic decrement, which TSan reports when two threads
 * drop references to one object, as a producer and the FIFO's consumer do here.
 * The read is of a value that never changes for heap objects; jansson documents
 * its reference counts as thread-safe. Suppress just that.
 */
__attribute__((visibility("default"))) const char *__tsan_default_suppressions(void);
__attribute__((visibility("default"))) const char *__tsan_default_suppressions(void) {
  return "race:json_decref\nrace:json_incref\n";
}

/* mk: upstream's mkFifoObj(name, val): a cluster-scoped object, key = name. */
static json_t *mk(const char *name, int val) {
  json_t *o = json_pack("{s:{s:s}, s:i}", "metadata", "name", name, "val", val);
  assert_non_null(o);
  return o;
}

static void render(const kcr_delta *d, size_t n, char *buf, size_t size) {
  size_t off = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? "," : "",
                            kcr_delta_type_name(d[i].type));
    if (d[i].tombstone_key)
      off += (size_t)snprintf(buf + off, size - off, "!%s", d[i].tombstone_key);
    if (d[i].object)
      off += (size_t)snprintf(buf + off, size - off, ":%s=%d", kcr_meta_name(d[i].object),
                              (int)json_integer_value(json_object_get(d[i].object, "val")));
    else
      off += (size_t)snprintf(buf + off, size - off, ":-");
  }
}

/* A processing function that records what it got. */
typedef struct popped {
  char text[512];
  char key[128];
  bool initial;
  bool requeue;
  int ret;
} popped_t;

static int on_pop(const char *key, const kcr_delta *d, size_t n, bool initial, bool *requeue,
                  void *data) {
  popped_t *p = data;
  assert_true(n >= 1);
  render(d, n, p->text, sizeof(p->text));
  snprintf(p->key, sizeof(p->key), "%s", key);
  p->initial = initial;
  *requeue = p->requeue;
  return p->ret;
}

static const char *pop(kcr_delta_fifo_t *f, popped_t *p) {
  memset(p, 0, sizeof(*p));
  assert_int_equal(kcr_delta_fifo_pop(f, on_pop, p), 0);
  return p->text;
}

static void expect_pop(kcr_delta_fifo_t *f, const char *want) {
  popped_t p;
  pop(f, &p);
  if (strcmp(p.text, want) != 0)
    fail_msg("popped '%s', want '%s'", p.text, want);
}

/* newest_val pops and returns the val of the newest delta's object. */
static int pop_newest_val(kcr_delta_fifo_t *f) {
  popped_t p;
  const char *eq;
  pop(f, &p);
  eq = strrchr(p.text, '=');
  assert_non_null(eq);
  return (int)strtol(eq + 1, NULL, 10);
}

static const char *fifo_keys(kcr_delta_fifo_t *f, char *buf, size_t size) {
  char **v = NULL;
  size_t n = 0, off = 0;
  assert_int_equal(kcr_delta_fifo_list_keys(f, &v, &n), 0);
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++)
    off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? "," : "", v[i]);
  kcr_free(v);
  return buf;
}

static const char *queued(kcr_delta_fifo_t *f, const char *key, char *buf, size_t size) {
  kcr_delta *d = NULL;
  size_t n = 0;
  int rc = kcr_delta_fifo_get_by_key(f, key, &d, &n);
  if (rc == KCR_ENOENT) {
    snprintf(buf, size, "<none>");
    return buf;
  }
  assert_int_equal(rc, 0);
  render(d, n, buf, size);
  kcr_deltas_free(d, n);
  return buf;
}

/* The producer calls, taking a fresh object and dropping the test's reference. */
static void add(kcr_delta_fifo_t *f, json_t *o) {
  assert_int_equal(kcr_delta_fifo_add(f, o, NULL), 0);
  json_decref(o);
}

static void update(kcr_delta_fifo_t *f, json_t *o) {
  assert_int_equal(kcr_delta_fifo_update(f, o, NULL), 0);
  json_decref(o);
}

static void del(kcr_delta_fifo_t *f, json_t *o) {
  assert_int_equal(kcr_delta_fifo_delete(f, o, NULL), 0);
  json_decref(o);
}

static void replace(kcr_delta_fifo_t *f, json_t *list) {
  assert_int_equal(kcr_delta_fifo_replace(f, list, "0", NULL), 0);
  json_decref(list);
}

/* --- literal known objects (upstream's literalListerGetter) ------------------ */

typedef struct lister {
  json_t *objs[8];
  size_t n;
} lister_t;

static int lister_list_keys(void *data, char ***out, size_t *n) {
  lister_t *l = data;
  size_t bytes = (l->n + 1) * sizeof(char *);
  char **v, *p;
  for (size_t i = 0; i < l->n; i++)
    bytes += strlen(kcr_meta_name(l->objs[i])) + 1;
  v = malloc(bytes); /* released by the FIFO with kcr_free, which is free() here */
  p = (char *)(v + l->n + 1);
  for (size_t i = 0; i < l->n; i++) {
    size_t len = strlen(kcr_meta_name(l->objs[i])) + 1;
    memcpy(p, kcr_meta_name(l->objs[i]), len);
    v[i] = p;
    p += len;
  }
  v[l->n] = NULL;
  *out = v;
  if (n)
    *n = l->n;
  return 0;
}

static int lister_get_by_key(void *data, const char *key, json_t **out) {
  lister_t *l = data;
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(kcr_meta_name(l->objs[i]), key) == 0) {
      /* A fresh copy, as the store hands out (and upstream's literalListerGetter,
       * which returns values): the FIFO may then hold the only reference. */
      *out = json_deep_copy(l->objs[i]);
      return *out ? 0 : KCR_ENOMEM;
    }
  *out = NULL;
  return KCR_ENOENT;
}

/* new_fifo makes a FIFO with the given known objects (vals; names, NULL ends). */
static kcr_delta_fifo_t *new_fifo(lister_t *l, kcr_known_objects *k) {
  kcr_delta_fifo_options o = {0};
  kcr_delta_fifo_t *f = NULL;
  if (l) {
    k->list_keys = lister_list_keys;
    k->get_by_key = lister_get_by_key;
    k->contains = NULL;
    k->data = l;
    o.known = k;
  }
  assert_int_equal(kcr_delta_fifo_create(&o, &f, NULL), 0);
  return f;
}

static void lister_free(lister_t *l) {
  for (size_t i = 0; i < l->n; i++)
    json_decref(l->objs[i]);
}

/* --- upstream cases ------------------------------------------------------------ */

typedef struct producer {
  kcr_delta_fifo_t *f;
  char prefix;
} producer_t;

static void *produce(void *arg) {
  producer_t *p = arg;
  for (int i = 0; i < 250; i++) {
    char name[16];
    json_t *o;
    snprintf(name, sizeof(name), "%c%d", p->prefix, i);
    o = mk(name, i + 1);
    json_object_set_new(o, "from", json_string(p->prefix == 'a' ? "a" : "b"));
    /* The stealing form: a producer thread must not drop the last reference
     * outside the FIFO's lock (see kcr_delta_fifo_add_new). */
    assert_int_equal(kcr_delta_fifo_add_new(p->f, o, NULL), 0);
  }
  return NULL;
}

static int on_pop_order(const char *key, const kcr_delta *d, size_t n, bool initial, bool *requeue,
                        void *data) {
  int *last = data; /* last[0] for producer a, last[1] for b */
  const json_t *o = d[n - 1].object;
  int from = strcmp(json_string_value(json_object_get(o, "from")), "a") == 0 ? 0 : 1;
  int val = (int)json_integer_value(json_object_get(o, "val"));
  (void)key;
  (void)initial;
  (void)requeue;
  if (val <= last[from])
    fail_msg("got %d out of order, last was %d", val, last[from]);
  last[from] = val;
  return 0;
}

static void test_delta_fifo_basic(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  producer_t pa = {f, 'a'}, pb = {f, 'b'};
  pthread_t ta, tb;
  int last[2] = {0, 0};
  (void)state;
  assert_int_equal(pthread_create(&ta, NULL, produce, &pa), 0);
  assert_int_equal(pthread_create(&tb, NULL, produce, &pb), 0);
  for (int i = 0; i < 500; i++)
    assert_int_equal(kcr_delta_fifo_pop(f, on_pop_order, last), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  assert_int_equal(last[0], 250);
  assert_int_equal(last[1], 250);
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_replace_with_delete_delta_in(void **state) {
  lister_t l = {{mk("foo", 1)}, 1};
  kcr_known_objects k;
  kcr_delta_fifo_t *f = new_fifo(&l, &k);
  (void)state;
  del(f, mk("foo", 1));
  replace(f, json_pack("[o]", mk("foo", 2)));
  expect_pop(f, "Deleted:foo=1,Replaced:foo=2");
  kcr_delta_fifo_destroy(f);
  lister_free(&l);
}

/* TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue */
static void only_in_queue_case(int which, kcr_delta_fifo_t *f) {
  switch (which) {
  case 0: /* Added object should be deleted on Replace */
    add(f, mk("foo", 2));
    replace(f, json_array());
    break;
  case 1: /* Replaced object should have only a single Delete */
    add(f, mk("foo", 2));
    replace(f, json_pack("[o]", mk("foo", 2)));
    replace(f, json_array());
    break;
  case 2: /* Deleted object should have only a single Delete */
    add(f, mk("foo", 2));
    del(f, mk("foo", 2));
    replace(f, json_array());
    break;
  case 3: /* Synced objects should have a single delete */
    add(f, mk("foo", 2));
    replace(f, json_pack("[o]", mk("foo", 2)));
    replace(f, json_pack("[o]", mk("foo", 2)));
    replace(f, json_array());
    break;
  case 4: /* Added objects should have a single delete on multiple Replaces */
    add(f, mk("foo", 2));
    replace(f, json_array());
    replace(f, json_array());
    break;
  case 5: /* Added and deleted and added object should be deleted */
    add(f, mk("foo", 2));
    del(f, mk("foo", 2));
    add(f, mk("foo", 3));
    replace(f, json_array());
    break;
  }
}

static void test_delta_fifo_replace_deletes_objects_only_in_queue(void **state) {
  static const char *const want[] = {
      "Added:foo=2,Deleted!foo:foo=2",
      "Added:foo=2,Replaced:foo=2,Deleted!foo:foo=2",
      "Added:foo=2,Deleted:foo=2",
      "Added:foo=2,Replaced:foo=2,Replaced:foo=2,Deleted!foo:foo=2",
      "Added:foo=2,Deleted!foo:foo=2",
      "Added:foo=2,Deleted:foo=2,Added:foo=3,Deleted!foo:foo=3",
  };
  (void)state;
  for (int i = 0; i < 6; i++) {
    for (int with_known = 0; with_known < 2; with_known++) {
      lister_t l = {{NULL}, 0};
      kcr_known_objects k;
      kcr_delta_fifo_t *f = new_fifo(with_known ? &l : NULL, &k);
      only_in_queue_case(i, f);
      expect_pop(f, want[i]);
      assert_int_equal(kcr_delta_fifo_len(f), 0);
      kcr_delta_fifo_destroy(f);
    }
  }
}

static int on_requeue(const char *key, const kcr_delta *d, size_t n, bool initial, bool *requeue,
                      void *data) {
  int *mode = data;
  (void)n;
  (void)initial;
  assert_string_equal(key, "foo");
  assert_string_equal(kcr_meta_name(d[0].object), "foo");
  *requeue = *mode != 2;
  return *mode == 1 ? KCR_EAGAIN : 0;
}

static int on_requeue_any(const char *key, const kcr_delta *d, size_t n, bool initial,
                          bool *requeue, void *data) {
  (void)key;
  (void)d;
  (void)n;
  (void)initial;
  *requeue = *(int *)data == 0;
  return 0;
}

static void test_delta_fifo_requeue_on_pop(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  char buf[256];
  int mode = 0;
  (void)state;
  add(f, mk("foo", 10));
  assert_int_equal(kcr_delta_fifo_pop(f, on_requeue, &mode), 0);
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "Added:foo=10");
  mode = 1;
  assert_int_equal(kcr_delta_fifo_pop(f, on_requeue, &mode), KCR_EAGAIN);
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "Added:foo=10");
  mode = 2;
  assert_int_equal(kcr_delta_fifo_pop(f, on_requeue, &mode), 0);
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "<none>");
  kcr_delta_fifo_destroy(f);
}

/* A FIFO drained after a large list gives its map and ring back; it works the
 * same afterwards, a requeue of the last key included, and a key's deltas
 * grow past the first one (kept in the key's own allocation) in order. */
static void test_delta_fifo_drained_after_list(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  json_t *list = json_array();
  char name[16], buf[256];
  int mode = 0;
  (void)state;
  for (int i = 0; i < 500; i++) {
    snprintf(name, sizeof(name), "o%03d", i);
    json_array_append_new(list, mk(name, i));
  }
  replace(f, list);
  for (int i = 0; i < 500; i++)
    assert_int_equal(pop_newest_val(f), i);
  assert_int_equal(kcr_delta_fifo_len(f), 0);
  assert_string_equal(fifo_keys(f, buf, sizeof(buf)), "");
  assert_string_equal(queued(f, "o001", buf, sizeof(buf)), "<none>");
  add(f, mk("foo", 1));
  update(f, mk("foo", 2));
  update(f, mk("foo", 3));
  del(f, mk("foo", 4));
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)),
                      "Added:foo=1,Updated:foo=2,Updated:foo=3,Deleted:foo=4");
  assert_int_equal(kcr_delta_fifo_pop(f, on_requeue, &mode), 0);
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)),
                      "Added:foo=1,Updated:foo=2,Updated:foo=3,Deleted:foo=4");
  mode = 2;
  assert_int_equal(kcr_delta_fifo_pop(f, on_requeue, &mode), 0);
  add(f, mk("bar", 5));
  expect_pop(f, "Added:bar=5");
  kcr_delta_fifo_destroy(f);
}

/* A Replace of thousands of new keys keeps their items in one block (a slab):
 * they pop, requeue, take more deltas and outlive a second Replace and the
 * FIFO's end like any item. */
static void test_delta_fifo_large_replace(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  json_t *list = json_array();
  char name[16], buf[256];
  int mode = 0;
  (void)state;
  for (int i = 0; i < 6000; i++) {
    snprintf(name, sizeof(name), "o%04d", i);
    json_array_append_new(list, mk(name, i));
  }
  replace(f, list);
  for (int i = 0; i < 3000; i++)
    assert_int_equal(pop_newest_val(f), i);
  update(f, mk("o5999", 7));
  assert_string_equal(queued(f, "o5999", buf, sizeof(buf)), "Replaced:o5999=5999,Updated:o5999=7");
  list = json_array();
  for (int i = 2000; i < 8000; i++) { /* 3000 queued keys, 1000 popped, 2000 new */
    snprintf(name, sizeof(name), "o%04d", i);
    json_array_append_new(list, mk(name, i + 10000));
  }
  replace(f, list);
  assert_string_equal(queued(f, "o3000", buf, sizeof(buf)),
                      "Replaced:o3000=3000,Replaced:o3000=13000");
  assert_string_equal(queued(f, "o2000", buf, sizeof(buf)), "Replaced:o2000=12000");
  add(f, mk("foo", 1));
  for (int i = 3000; i < 6000; i++)
    assert_int_equal(pop_newest_val(f), i + 10000);
  mode = 0;
  assert_int_equal(kcr_delta_fifo_pop(f, on_requeue_any, &mode), 0); /* o2000 requeued */
  assert_string_equal(queued(f, "o2000", buf, sizeof(buf)), "Replaced:o2000=12000");
  kcr_delta_fifo_destroy(f); /* with 3000 keys of both Replaces queued */
}

static void test_delta_fifo_add_update(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  json_t *list = NULL, *probe;
  char buf[256];
  kcr_delta *d = NULL;
  size_t n = 0;
  (void)state;
  add(f, mk("foo", 10));
  update(f, mk("foo", 12));
  del(f, mk("foo", 15));
  assert_int_equal(kcr_delta_fifo_list(f, &list), 0);
  assert_int_equal(json_array_size(list), 1);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(list, 0), "val")), 15);
  json_decref(list);
  assert_string_equal(fifo_keys(f, buf, sizeof(buf)), "foo");
  assert_int_equal(pop_newest_val(f), 15);
  assert_int_equal(kcr_delta_fifo_len(f), 0);
  probe = mk("foo", 0);
  assert_int_equal(kcr_delta_fifo_get(f, probe, &d, &n), KCR_ENOENT);
  json_decref(probe);
  kcr_delta_fifo_destroy(f);
}

/* The transform runs once per object, never on tombstones or Sync. */
static int count_transform(json_t *obj, void *data) {
  json_t *x = json_object_get(obj, "xfrm");
  ++*(int *)data;
  return json_object_set_new(obj, "xfrm", json_integer(x ? json_integer_value(x) + 1 : 1));
}

static void test_delta_fifo_transformer(void **state) {
  kcr_delta_fifo_options o = {0};
  kcr_delta_fifo_t *f = NULL;
  int calls = 0;
  char buf[256];
  json_t *bar16 = mk("bar", 16);
  popped_t p;
  (void)state;
  o.transform = count_transform;
  o.transform_data = &calls;
  assert_int_equal(kcr_delta_fifo_create(&o, &f, NULL), 0);
  add(f, mk("foo", 10));
  add(f, mk("bar", 11));
  update(f, mk("foo", 12));
  del(f, mk("foo", 15));
  replace(f, json_array());
  assert_int_equal(kcr_delta_fifo_add(f, bar16, NULL), 0);
  replace(f, json_array());
  assert_string_equal(fifo_keys(f, buf, sizeof(buf)), "foo,bar");
  assert_int_equal(calls, 5);
  pop(f, &p);
  assert_string_equal(p.text, "Added:foo=10,Updated:foo=12,Deleted:foo=15");
  pop(f, &p);
  assert_string_equal(p.text, "Added:bar=11,Deleted!bar:bar=11,Added:bar=16,Deleted!bar:bar=16");
  assert_int_equal(json_integer_value(json_object_get(bar16, "xfrm")), 1);
  json_decref(bar16);
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_enqueueing_no_lister(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  (void)state;
  add(f, mk("foo", 10));
  update(f, mk("bar", 15));
  add(f, mk("qux", 17));
  del(f, mk("qux", 18));
  del(f, mk("baz", 20)); /* not queued, no lister: nothing to report */
  assert_int_equal(pop_newest_val(f), 10);
  assert_int_equal(pop_newest_val(f), 15);
  assert_int_equal(pop_newest_val(f), 18);
  assert_int_equal(kcr_delta_fifo_len(f), 0);
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_enqueueing_with_lister(void **state) {
  lister_t l = {{mk("foo", 5), mk("bar", 6), mk("baz", 7)}, 3};
  kcr_known_objects k;
  kcr_delta_fifo_t *f = new_fifo(&l, &k);
  (void)state;
  add(f, mk("foo", 10));
  update(f, mk("bar", 15));
  del(f, mk("baz", 20)); /* known: the deletion is queued */
  assert_int_equal(pop_newest_val(f), 10);
  assert_int_equal(pop_newest_val(f), 15);
  assert_int_equal(pop_newest_val(f), 20);
  assert_int_equal(kcr_delta_fifo_len(f), 0);
  kcr_delta_fifo_destroy(f);
  lister_free(&l);
}

static void test_delta_fifo_add_replace(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  char buf[64];
  (void)state;
  add(f, mk("foo", 10));
  replace(f, json_pack("[o]", mk("foo", 15)));
  assert_int_equal(pop_newest_val(f), 15);
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "<none>");
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_resync_non_existing(void **state) {
  lister_t l = {{mk("foo", 5)}, 1};
  kcr_known_objects k;
  kcr_delta_fifo_t *f = new_fifo(&l, &k);
  char buf[128];
  (void)state;
  del(f, mk("foo", 10));
  assert_int_equal(kcr_delta_fifo_resync(f, NULL), 0);
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "Deleted:foo=10");
  kcr_delta_fifo_destroy(f);
  lister_free(&l);
}

static void test_delta_fifo_resync(void **state) {
  lister_t l = {{mk("foo", 5)}, 1};
  kcr_known_objects k;
  kcr_delta_fifo_t *f = new_fifo(&l, &k), *none = new_fifo(NULL, NULL);
  char buf[128];
  (void)state;
  assert_int_equal(kcr_delta_fifo_resync(f, NULL), 0);
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "Sync:foo=5");
  assert_int_equal(kcr_delta_fifo_resync(f, NULL), 0); /* queued: no second Sync */
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "Sync:foo=5");
  assert_int_equal(kcr_delta_fifo_resync(none, NULL), 0);
  assert_int_equal(kcr_delta_fifo_len(none), 0);
  kcr_delta_fifo_destroy(f);
  kcr_delta_fifo_destroy(none);
  lister_free(&l);
}

static void test_delta_fifo_delete_existing_non_propagated(void **state) {
  lister_t l = {{NULL}, 0};
  kcr_known_objects k;
  kcr_delta_fifo_t *f = new_fifo(&l, &k);
  char buf[128];
  (void)state;
  add(f, mk("foo", 5));
  del(f, mk("foo", 6));
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "Added:foo=5,Deleted:foo=6");
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_replace_makes_deletions(void **state) {
  lister_t l = {{mk("foo", 5), mk("bar", 6), mk("baz", 7)}, 3};
  kcr_known_objects k;
  kcr_delta_fifo_t *f;
  (void)state;

  /* With a pre-existing Delete. */
  f = new_fifo(&l, &k);
  del(f, mk("baz", 10));
  replace(f, json_pack("[o]", mk("foo", 5)));
  expect_pop(f, "Deleted:baz=10");
  expect_pop(f, "Replaced:foo=5");
  expect_pop(f, "Deleted!bar:bar=6");
  assert_int_equal(kcr_delta_fifo_len(f), 0);
  kcr_delta_fifo_destroy(f);

  /* Starting with an Add: the tombstone carries the queued object. */
  f = new_fifo(&l, &k);
  add(f, mk("baz", 10));
  replace(f, json_pack("[o]", mk("foo", 5)));
  expect_pop(f, "Added:baz=10,Deleted!baz:baz=10");
  expect_pop(f, "Replaced:foo=5");
  expect_pop(f, "Deleted!bar:bar=6");
  kcr_delta_fifo_destroy(f);

  /* Deleted and re-created in the queue, then deleted by a Replace. */
  f = new_fifo(&l, &k);
  del(f, mk("bar", 6));
  add(f, mk("bar", 100));
  replace(f, json_pack("[o]", mk("foo", 5)));
  expect_pop(f, "Deleted:bar=6,Added:bar=100,Deleted!bar:bar=100");
  expect_pop(f, "Replaced:foo=5");
  expect_pop(f, "Deleted!baz:baz=7");
  kcr_delta_fifo_destroy(f);

  /* Replaced first ("sync first"): the delete uses the latest version. The
   * second Replace queues a tombstone for baz onto baz's tombstone from the first,
   * built from the object that tombstone holds alone: merging the two must not
   * free it before taking it. */
  f = new_fifo(&l, &k);
  replace(f, json_pack("[o,o]", mk("bar", 100), mk("foo", 5)));
  replace(f, json_pack("[o]", mk("foo", 5)));
  expect_pop(f, "Replaced:bar=100,Deleted!bar:bar=100");
  expect_pop(f, "Replaced:foo=5,Replaced:foo=5");
  expect_pop(f, "Deleted!baz:baz=7");
  kcr_delta_fifo_destroy(f);

  /* Without known objects. */
  f = new_fifo(NULL, NULL);
  add(f, mk("baz", 10));
  replace(f, json_pack("[o]", mk("foo", 5)));
  expect_pop(f, "Added:baz=10,Deleted!baz:baz=10");
  expect_pop(f, "Replaced:foo=5");
  assert_int_equal(kcr_delta_fifo_len(f), 0);
  kcr_delta_fifo_destroy(f);
  lister_free(&l);
}

static void test_delta_fifo_replace_delta_type(void **state) {
  lister_t l = {{mk("foo", 5)}, 1};
  kcr_known_objects k;
  kcr_delta_fifo_t *f = new_fifo(&l, &k);
  (void)state;
  replace(f, json_pack("[o]", mk("foo", 5)));
  expect_pop(f, "Replaced:foo=5");
  kcr_delta_fifo_destroy(f);
  lister_free(&l);
}

static void test_delta_fifo_update_resync_race(void **state) {
  lister_t l = {{mk("foo", 5)}, 1};
  kcr_known_objects k;
  kcr_delta_fifo_t *f = new_fifo(&l, &k);
  (void)state;
  update(f, mk("foo", 6));
  assert_int_equal(kcr_delta_fifo_resync(f, NULL), 0);
  expect_pop(f, "Updated:foo=6");
  assert_int_equal(kcr_delta_fifo_len(f), 0);
  kcr_delta_fifo_destroy(f);
  lister_free(&l);
}

static void test_delta_fifo_has_synced_correct_on_deletion(void **state) {
  lister_t l = {{mk("foo", 5), mk("bar", 6), mk("baz", 7)}, 3};
  kcr_known_objects k;
  kcr_delta_fifo_t *f = new_fifo(&l, &k);
  static const char *const want[] = {"Replaced:foo=5", "Deleted!bar:bar=6", "Deleted!baz:baz=7"};
  (void)state;
  replace(f, json_pack("[o]", mk("foo", 5)));
  for (int i = 0; i < 3; i++) {
    popped_t p;
    assert_false(kcr_delta_fifo_has_synced(f));
    pop(f, &p);
    assert_string_equal(p.text, want[i]);
    assert_true(p.initial);
  }
  assert_true(kcr_delta_fifo_has_synced(f));
  kcr_delta_fifo_destroy(f);
  lister_free(&l);
}

static void test_delta_fifo_detect_line_jumpers(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  (void)state;
  add(f, mk("foo", 10));
  add(f, mk("bar", 1));
  add(f, mk("foo", 11));
  add(f, mk("foo", 13));
  add(f, mk("zab", 30));
  assert_int_equal(pop_newest_val(f), 13);
  add(f, mk("foo", 14)); /* foo does not jump back in line */
  assert_int_equal(pop_newest_val(f), 1);
  assert_int_equal(pop_newest_val(f), 30);
  assert_int_equal(pop_newest_val(f), 14);
  kcr_delta_fifo_destroy(f);
}

/* Pop into a kept copy, as upstream's consumer keeps the Deltas it popped. */
typedef struct kept {
  kcr_delta d[4];
  size_t n;
} kept_t;

static int on_keep(const char *key, const kcr_delta *d, size_t n, bool initial, bool *requeue,
                   void *data) {
  kept_t *k = data;
  (void)key;
  (void)initial;
  (void)requeue;
  k->n = n;
  for (size_t i = 0; i < n; i++) {
    k->d[i] = d[i];
    k->d[i].object = json_incref(d[i].object);
    k->d[i].tombstone_key = NULL;
  }
  return 0;
}

static void kept_free(kept_t *k) {
  for (size_t i = 0; i < k->n; i++)
    json_decref(k->d[i].object);
}

static void test_delta_fifo_add_if_not_present(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  kept_t b3, c4;
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_delta_fifo_add_if_not_present(f, NULL, 0, &err), KCR_EINVAL);
  add(f, mk("b", 3));
  assert_int_equal(kcr_delta_fifo_pop(f, on_keep, &b3), 0);
  add(f, mk("c", 4));
  assert_int_equal(kcr_delta_fifo_pop(f, on_keep, &c4), 0);
  assert_int_equal(kcr_delta_fifo_len(f), 0);
  add(f, mk("a", 1));
  add(f, mk("b", 2));
  assert_int_equal(kcr_delta_fifo_add_if_not_present(f, b3.d, b3.n, NULL), 0);
  assert_int_equal(kcr_delta_fifo_add_if_not_present(f, c4.d, c4.n, NULL), 0);
  assert_int_equal(kcr_delta_fifo_len(f), 3);
  assert_int_equal(pop_newest_val(f), 1);
  assert_int_equal(pop_newest_val(f), 2);
  assert_int_equal(pop_newest_val(f), 4);
  kept_free(&b3);
  kept_free(&c4);
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_key_of(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  json_t *c = mk("C", 0);
  kcr_delta d1[] = {{KCR_DELTA_ADDED, c, NULL}};
  kcr_delta d2[] = {{KCR_DELTA_ADDED, c, NULL}, {KCR_DELTA_DELETED, NULL, "D"}};
  char buf[KCR_META_KEY_MAX];
  (void)state;
  assert_int_equal(kcr_delta_fifo_key_of(f, d1, 1, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "C");
  assert_int_equal(kcr_delta_fifo_key_of(f, d2, 2, buf, sizeof(buf)), 0);
  assert_string_equal(buf, "D");
  assert_int_equal(kcr_delta_fifo_key_of(f, d2, 0, buf, sizeof(buf)), KCR_EINVAL);
  json_decref(c);
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_has_synced(void **state) {
  kcr_delta_fifo_t *f;
  popped_t p;
  (void)state;
  f = new_fifo(NULL, NULL); /* nothing yet */
  assert_false(kcr_delta_fifo_has_synced(f));
  kcr_delta_fifo_destroy(f);

  f = new_fifo(NULL, NULL); /* an Add before any Replace */
  add(f, mk("a", 1));
  assert_true(kcr_delta_fifo_has_synced(f));
  kcr_delta_fifo_destroy(f);

  f = new_fifo(NULL, NULL); /* an empty Replace */
  replace(f, json_array());
  assert_true(kcr_delta_fifo_has_synced(f));
  kcr_delta_fifo_destroy(f);

  f = new_fifo(NULL, NULL); /* two listed, none popped; one popped; both popped */
  replace(f, json_pack("[o,o]", mk("a", 1), mk("b", 2)));
  assert_false(kcr_delta_fifo_has_synced(f));
  pop(f, &p);
  assert_true(p.initial);
  assert_false(kcr_delta_fifo_has_synced(f));
  pop(f, &p);
  assert_true(p.initial);
  assert_true(kcr_delta_fifo_has_synced(f));
  add(f, mk("c", 3));
  pop(f, &p);
  assert_false(p.initial);
  kcr_delta_fifo_destroy(f);

  f = new_fifo(NULL, NULL); /* a duplicate key in the list counts once */
  replace(f, json_pack("[o,o]", mk("a", 1), mk("a", 2)));
  pop(f, &p);
  assert_true(kcr_delta_fifo_has_synced(f));
  kcr_delta_fifo_destroy(f);

  f = new_fifo(NULL, NULL); /* a second Replace does not reset it */
  replace(f, json_array());
  replace(f, json_pack("[o]", mk("a", 1)));
  assert_true(kcr_delta_fifo_has_synced(f));
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_dedup_deletes(void **state) {
  lister_t l = {{mk("foo", 5)}, 1};
  kcr_known_objects k;
  kcr_delta_fifo_t *f = new_fifo(&l, &k);
  char buf[128];
  (void)state;
  /* Two deletions with objects: the older stays. */
  del(f, mk("foo", 6));
  del(f, mk("foo", 7));
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "Deleted:foo=6");
  expect_pop(f, "Deleted:foo=6");
  /* A tombstone followed by a real deletion: the real one replaces it. */
  replace(f, json_array());
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "Deleted!foo:foo=5");
  del(f, mk("foo", 8));
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)), "Deleted:foo=8");
  /* Only trailing deletions collapse. */
  add(f, mk("foo", 9));
  del(f, mk("foo", 10));
  assert_string_equal(queued(f, "foo", buf, sizeof(buf)),
                      "Deleted:foo=8,Added:foo=9,Deleted:foo=10");
  kcr_delta_fifo_destroy(f);
  lister_free(&l);
}

/* Replace when the known object vanished between ListKeys and GetByKey. */
static int racy_get(void *data, const char *key, json_t **out) {
  (void)data;
  (void)key;
  *out = NULL;
  return KCR_ENOENT;
}

static void test_delta_fifo_tombstone_without_object(void **state) {
  lister_t l = {{mk("gone", 1)}, 1};
  kcr_known_objects k = {lister_list_keys, racy_get, NULL, &l};
  kcr_delta_fifo_options o = {0};
  kcr_delta_fifo_t *f = NULL;
  json_t *list = NULL;
  (void)state;
  o.known = &k;
  assert_int_equal(kcr_delta_fifo_create(&o, &f, NULL), 0);
  replace(f, json_array());
  assert_int_equal(kcr_delta_fifo_list(f, &list), 0);
  assert_int_equal(json_array_size(list), 0); /* no object to list */
  json_decref(list);
  expect_pop(f, "Deleted!gone:-");
  kcr_delta_fifo_destroy(f);
  lister_free(&l);
}

typedef struct closer {
  kcr_delta_fifo_t *f;
  int rc;
} closer_t;

static void *pop_until_closed(void *arg) {
  closer_t *c = arg;
  popped_t p = {.ret = 0};
  c->rc = kcr_delta_fifo_pop(c->f, on_pop, &p);
  return NULL;
}

static void test_delta_fifo_pop_unblocks_when_closed(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  closer_t c[10];
  pthread_t t[10];
  struct timespec ts = {0, 10000000L};
  (void)state;
  for (int i = 0; i < 10; i++) {
    c[i].f = f;
    c[i].rc = 1;
    assert_int_equal(pthread_create(&t[i], NULL, pop_until_closed, &c[i]), 0);
  }
  nanosleep(&ts, NULL);
  assert_false(kcr_delta_fifo_is_closed(f));
  kcr_delta_fifo_close(f);
  assert_true(kcr_delta_fifo_is_closed(f));
  for (int i = 0; i < 10; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(c[i].rc, KCR_ECLOSED);
  }
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_close_drains_first(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  popped_t p = {.ret = 0};
  (void)state;
  add(f, mk("a", 1));
  kcr_delta_fifo_close(f);
  assert_int_equal(kcr_delta_fifo_pop(f, on_pop, &p), 0);
  assert_int_equal(kcr_delta_fifo_pop(f, on_pop, &p), KCR_ECLOSED);
  kcr_delta_fifo_destroy(f);
}

static void test_delta_fifo_bad_objects(void **state) {
  kcr_delta_fifo_t *f = new_fifo(NULL, NULL);
  json_t *nokey = json_pack("{s:{}}", "metadata");
  json_t *list = json_pack("[o,O]", mk("a", 1), nokey);
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_delta_fifo_add(f, nokey, &err), KCR_EINVAL);
  assert_non_null(strstr(err.message, "no key"));
  assert_int_equal(kcr_delta_fifo_delete(f, nokey, NULL), KCR_EINVAL);
  assert_int_equal(kcr_delta_fifo_replace(f, list, "1", NULL), KCR_EINVAL);
  assert_int_equal(kcr_delta_fifo_replace(f, nokey, "1", NULL), KCR_EINVAL);
  assert_int_equal(kcr_delta_fifo_len(f), 0);
  assert_false(kcr_delta_fifo_has_synced(f));
  json_decref(nokey);
  json_decref(list);
  kcr_delta_fifo_destroy(f);
}

/* --- with the store as known objects, as an informer uses it ----------------- */

static int apply_to_store(const char *key, const kcr_delta *d, size_t n, bool initial,
                          bool *requeue, void *data) {
  kcr_store_t *s = data;
  (void)initial;
  (void)requeue;
  for (size_t i = 0; i < n; i++) {
    int rc = d[i].type == KCR_DELTA_DELETED ? kcr_store_delete_key(s, key)
                                            : kcr_store_add(s, d[i].object, NULL);
    if (rc && rc != KCR_ENOENT)
      return rc;
  }
  return 0;
}

static void test_delta_fifo_with_store(void **state) {
  kcr_store_t *s = NULL;
  kcr_known_objects k;
  kcr_delta_fifo_options o = {0};
  kcr_delta_fifo_t *f = NULL;
  (void)state;
  assert_int_equal(kcr_store_create(NULL, NULL, &s, NULL), 0);
  kcr_store_known_objects(s, &k);
  o.known = &k;
  assert_int_equal(kcr_delta_fifo_create(&o, &f, NULL), 0);
  replace(f, json_pack("[o,o,o]", mk("a", 1), mk("b", 1), mk("c", 1)));
  while (kcr_delta_fifo_len(f))
    assert_int_equal(kcr_delta_fifo_pop(f, apply_to_store, s), 0);
  assert_true(kcr_delta_fifo_has_synced(f));
  assert_int_equal(kcr_store_len(s), 3);
  /* A relist without b: the store knows b, so a tombstone removes it. */
  replace(f, json_pack("[o,o]", mk("a", 2), mk("c", 2)));
  del(f, mk("a", 3));
  assert_int_equal(kcr_delta_fifo_resync(f, NULL), 0); /* all queued: nothing */
  assert_int_equal(kcr_delta_fifo_len(f), 3);
  while (kcr_delta_fifo_len(f))
    assert_int_equal(kcr_delta_fifo_pop(f, apply_to_store, s), 0);
  assert_int_equal(kcr_store_len(s), 1);
  assert_true(kcr_store_contains(s, "c"));
  assert_int_equal(kcr_delta_fifo_resync(f, NULL), 0);
  {
    char buf[128];
    assert_string_equal(queued(f, "c", buf, sizeof(buf)), "Sync:c=2");
  }
  kcr_delta_fifo_destroy(f);
  kcr_store_destroy(s);
}

/* --- allocation failure ------------------------------------------------------ */

static kcr_delta_fifo_t *af;

static void check_invariant(void) {
  char **v = NULL;
  size_t n = 0;
  assert_int_equal(kcr_delta_fifo_list_keys(af, &v, &n), 0);
  for (size_t i = 0; i < n; i++) {
    kcr_delta *d = NULL;
    size_t dn = 0;
    assert_int_equal(kcr_delta_fifo_get_by_key(af, v[i], &d, &dn), 0);
    assert_true(dn >= 1);
    kcr_deltas_free(d, dn);
  }
  kcr_free(v);
}

static int try_add(json_t *o) {
  return kcr_delta_fifo_add(af, o, NULL);
}

static void test_delta_fifo_add_alloc_failure(void **state) {
  json_t *fresh = mk("new", 1), *again = mk("old", 2);
  char buf[128];
  (void)state;
  assert_int_equal(kcr_delta_fifo_create(NULL, &af, NULL), 0);
  add(af, mk("old", 1));
  KCR_TEST_ALLOC_LOOP(try_add(fresh), check_invariant());
  KCR_TEST_ALLOC_LOOP(try_add(again), check_invariant());
  assert_string_equal(fifo_keys(af, buf, sizeof(buf)), "old,new");
  assert_string_equal(queued(af, "old", buf, sizeof(buf)), "Added:old=1,Added:old=2");
  json_decref(fresh);
  json_decref(again);
  kcr_delta_fifo_destroy(af);
}

static void test_delta_fifo_replace_alloc_failure(void **state) {
  json_t *list = json_pack("[o,o,o]", mk("a", 1), mk("b", 1), mk("k1", 2));
  lister_t l = {{mk("k1", 1), mk("k2", 1)}, 2};
  kcr_known_objects k;
  (void)state;
  /* KCR_TEST_ALLOC_LOOP by hand: each run needs a fresh FIFO made without failures. */
  kcr_test_alloc_install();
  for (long n = 1;; n++) {
    int rc, failed;
    af = new_fifo(&l, &k);
    add(af, mk("q", 1));
    del(af, mk("k2", 2));
    kcr_test_alloc_fail_at(n);
    rc = kcr_delta_fifo_replace(af, list, "1", NULL);
    failed = kcr_test_alloc_failed();
    kcr_test_alloc_fail_at(0);
    check_invariant();
    if (!failed) {
      char buf[256];
      assert_int_equal(rc, 0);
      assert_string_equal(fifo_keys(af, buf, sizeof(buf)), "q,k2,a,b,k1");
      assert_string_equal(queued(af, "q", buf, sizeof(buf)), "Added:q=1,Deleted!q:q=1");
      assert_string_equal(queued(af, "k2", buf, sizeof(buf)), "Deleted:k2=2");
      assert_string_equal(queued(af, "k1", buf, sizeof(buf)), "Replaced:k1=2");
      kcr_delta_fifo_destroy(af);
      break;
    }
    assert_int_equal(rc, KCR_ENOMEM);
    kcr_delta_fifo_destroy(af);
    assert_true(n < 10000);
  }
  kcr_test_alloc_uninstall();
  json_decref(list);
  lister_free(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_delta_fifo_basic),
      cmocka_unit_test(test_delta_fifo_replace_with_delete_delta_in),
      cmocka_unit_test(test_delta_fifo_replace_deletes_objects_only_in_queue),
      cmocka_unit_test(test_delta_fifo_requeue_on_pop),
      cmocka_unit_test(test_delta_fifo_drained_after_list),
      cmocka_unit_test(test_delta_fifo_large_replace),
      cmocka_unit_test(test_delta_fifo_add_update),
      cmocka_unit_test(test_delta_fifo_transformer),
      cmocka_unit_test(test_delta_fifo_enqueueing_no_lister),
      cmocka_unit_test(test_delta_fifo_enqueueing_with_lister),
      cmocka_unit_test(test_delta_fifo_add_replace),
      cmocka_unit_test(test_delta_fifo_resync_non_existing),
      cmocka_unit_test(test_delta_fifo_resync),
      cmocka_unit_test(test_delta_fifo_delete_existing_non_propagated),
      cmocka_unit_test(test_delta_fifo_replace_makes_deletions),
      cmocka_unit_test(test_delta_fifo_replace_delta_type),
      cmocka_unit_test(test_delta_fifo_update_resync_race),
      cmocka_unit_test(test_delta_fifo_has_synced_correct_on_deletion),
      cmocka_unit_test(test_delta_fifo_detect_line_jumpers),
      cmocka_unit_test(test_delta_fifo_add_if_not_present),
      cmocka_unit_test(test_delta_fifo_key_of),
      cmocka_unit_test(test_delta_fifo_has_synced),
      cmocka_unit_test(test_delta_fifo_dedup_deletes),
      cmocka_unit_test(test_delta_fifo_tombstone_without_object),
      cmocka_unit_test(test_delta_fifo_pop_unblocks_when_closed),
      cmocka_unit_test(test_delta_fifo_close_drains_first),
      cmocka_unit_test(test_delta_fifo_bad_objects),
      cmocka_unit_test(test_delta_fifo_with_store),
      cmocka_unit_test(test_delta_fifo_add_alloc_failure),
      cmocka_unit_test(test_delta_fifo_replace_alloc_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
