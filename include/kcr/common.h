/* SPDX-License-Identifier: MIT */
/*
 * kcr/common.h: definitions every kcr header shares: the export and deprecation
 * macros, the library version, the allocator hooks and kcr_gvk, the kind type.
 */
#ifndef KCR_COMMON_H
#define KCR_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * KCR_EXTERN marks a declaration as part of the public ABI. The library is built
 * with -fvisibility=hidden, so anything without it stays internal to libkcr.so.
 */
#if defined(KCR_BUILDING) && defined(__GNUC__)
#define KCR_EXTERN __attribute__((visibility("default")))
#else
#define KCR_EXTERN
#endif

/* KCR_PRINTF(fmt, args) asks the compiler to check a printf-style format. */
#if defined(__GNUC__)
#define KCR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KCR_PRINTF(f, a)
#endif

/*
 * KCR_DEPRECATED(msg) marks a name kept only so that installed users still
 * build: msg says since when and what replaces it. Deprecated names go in the
 * first release six months after their date.
 */
#if defined(__GNUC__)
#define KCR_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define KCR_DEPRECATED(msg)
#endif

/*
 * kcr_gvk: a kind — the one way kcr names one (a group, version and kind; group
 * "" or NULL is the core group), from the REST mapper up. Strings are borrowed
 * for each call that takes one. Writes name their kind through the object's own
 * apiVersion and kind instead; kcr_gvr (kcr/client.h) is what a URL names.
 */
typedef struct kcr_gvk {
  const char *group;
  const char *version;
  const char *kind;
} kcr_gvk;

#define KCR_VERSION_MAJOR 0
#define KCR_VERSION_MINOR 1
#define KCR_VERSION_PATCH 0
#define KCR_VERSION_STRING "0.1.0"

/*
 * kcr_version_string returns the version of the library linked at run time, which
 * may differ from KCR_VERSION_STRING of the headers compiled against. Borrowed,
 * static storage; any thread.
 */
KCR_EXTERN const char *kcr_version_string(void);

/* kcr_malloc_fn / kcr_realloc_fn / kcr_free_fn: allocator hooks, as in C's own. */
typedef void *(*kcr_malloc_fn)(size_t size);
typedef void *(*kcr_realloc_fn)(void *ptr, size_t size);
typedef void (*kcr_free_fn)(void *ptr);

/*
 * kcr_set_alloc_funcs replaces the allocator every kcr allocation goes through
 * (jansson's json_set_alloc_funcs does the same for jansson's own). Pass NULLs to
 * restore malloc/realloc/free. Call it before any other kcr function, from one
 * thread, with no kcr object alive: memory is freed by the allocator that made it.
 * It also sets jansson's allocator (json_set_alloc_funcs, process-wide), since
 * kcr's objects are json_t. Tests use it to fail the Nth allocation.
 */
KCR_EXTERN void kcr_set_alloc_funcs(kcr_malloc_fn m, kcr_realloc_fn r, kcr_free_fn f);

/*
 * kcr_free releases memory that a kcr function handed over as "new" (for example
 * kcr_buf_take or kcr_base64_decode). kcr_free(NULL) does nothing. Any thread.
 */
KCR_EXTERN void kcr_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* KCR_COMMON_H */
