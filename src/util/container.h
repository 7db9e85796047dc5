/* SPDX-License-Identifier: MIT */
/*
 * container.h: KCR__CONTAINER_OF, the step from a member embedded in a struct
 * (a heap node, a list link) back to the struct, for util's intrusive pieces.
 */
#ifndef KCR_UTIL_CONTAINER_H
#define KCR_UTIL_CONTAINER_H

#include <stddef.h>

/* KCR__CONTAINER_OF returns the type * whose member is at ptr (ptr not NULL). */
#define KCR__CONTAINER_OF(ptr, type, member)                                                       \
  ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif /* KCR_UTIL_CONTAINER_H */
