/* SPDX-License-Identifier: MIT */
/*
 * alloc.c: the allocator indirection and the library version. kcr_set_alloc_funcs
 * also sets jansson's allocator (json_set_alloc_funcs), which is process-wide.
 *
 * The hooks are plain globals written once before any other call (the contract of
 * kcr_set_alloc_funcs), so reading them needs no lock, as with jansson's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/alloc.h"

static kcr_malloc_fn do_malloc = malloc;
static kcr_realloc_fn do_realloc = realloc;
static kcr_free_fn do_free = free;

const char *kcr_version_string(void) {
  return KCR_VERSION_STRING;
}

void kcr_set_alloc_funcs(kcr_malloc_fn m, kcr_realloc_fn r, kcr_free_fn f) {
  do_malloc = m ? m : malloc;
  do_realloc = r ? r : realloc;
  do_free = f ? f : free;
  /* jansson allocates every json_t kcr makes or hands out: route it the same way so
   * that allocation-failure tests reach into JSON handling too. */
  json_set_alloc_funcs(do_malloc, do_free);
}

void *kcr__malloc(size_t size) {
  return do_malloc(size ? size : 1);
}

void *kcr__calloc(size_t n, size_t size) {
  void *p;
  if (size != 0 && n > SIZE_MAX / size)
    return NULL;
  p = kcr__malloc(n * size);
  if (p)
    memset(p, 0, n * size);
  return p;
}

void *kcr__realloc(void *ptr, size_t size) {
  return do_realloc(ptr, size ? size : 1);
}

void kcr__free(void *ptr) {
  if (ptr)
    do_free(ptr);
}

void kcr_free(void *ptr) {
  kcr__free(ptr);
}

void kcr__wipe_free(void *p, size_t n) {
  if (!p)
    return;
  explicit_bzero(p, n);
  kcr__free(p);
}

void kcr__wipe_free_str(char *s) {
  if (s)
    kcr__wipe_free(s, strlen(s));
}

char *kcr__strndup(const char *s, size_t n) {
  char *p = kcr__malloc(n + 1);
  if (!p)
    return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *kcr__strdup(const char *s) {
  return kcr__strndup(s, strlen(s));
}
