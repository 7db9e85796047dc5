/* SPDX-License-Identifier: MIT */
/*
 * alloc.h: the internal allocation entry points. Every allocation in libkcr goes
 * through these, so kcr_set_alloc_funcs can redirect them (tests fail the Nth).
 */
#ifndef KCR_UTIL_ALLOC_H
#define KCR_UTIL_ALLOC_H

#include <stddef.h>

#include "kcr/common.h"

/* kcr__malloc allocates size bytes through the configured allocator. */
void *kcr__malloc(size_t size);

/* kcr__calloc allocates n * size zeroed bytes; NULL on overflow or failure. */
void *kcr__calloc(size_t n, size_t size);

/* kcr__realloc resizes; on failure ptr is left as it was, as realloc does. */
void *kcr__realloc(void *ptr, size_t size);

/* kcr__free releases memory from the three above. NULL is ignored. */
void kcr__free(void *ptr);

/* kcr__strdup copies a C string; NULL on failure. */
char *kcr__strdup(const char *s);

/* kcr__strndup copies n bytes and adds a NUL; NULL on failure. */
char *kcr__strndup(const char *s, size_t n);

/* kcr__wipe_free zeroes n bytes of p (a secret) and frees it. NULL is ignored. */
void kcr__wipe_free(void *p, size_t n);

/* kcr__wipe_free_str is kcr__wipe_free for a C string. NULL is ignored. */
void kcr__wipe_free_str(char *s);

#endif /* KCR_UTIL_ALLOC_H */
