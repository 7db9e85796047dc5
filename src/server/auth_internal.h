/* SPDX-License-Identifier: MIT */
/*
 * auth_internal.h: the TokenReview and SubjectAccessReview bodies and answers
 * of auth.c, split from the requests that carry them so that the fuzz target
 * (test/fuzz/fuzz_review_answer.c) reaches them. Pure functions of their
 * arguments, safe on any thread.
 */
#ifndef KCR_AUTH_INTERNAL_H
#define KCR_AUTH_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

/*
 * kcr__auth_token_review_user reads a TokenReview answer (res borrowed, any
 * JSON): 1 when status.authenticated is true, with *user the compact JSON of
 * status.user with sorted keys ("{}" when it is not an object; new, freed with
 * kcr__free); 0 when not authenticated (*user NULL); KCR_ENOMEM.
 */
int kcr__auth_token_review_user(json_t *res, char **user);

/*
 * kcr__auth_access_review builds the SubjectAccessReview (new) asking whether
 * the user in user_json (what kcr__auth_token_review_user returned) may verb
 * the non-resource path: spec.user, uid, groups and extra copied from the
 * user's username, uid, groups and extra. name (name_size bytes) gets the
 * username for logs ("" without one). NULL when user_json is not a JSON
 * object or memory ran out.
 */
json_t *kcr__auth_access_review(const char *user_json, const char *verb, const char *path,
                                char *name, size_t name_size);

/* kcr__auth_access_review_allowed reads a SubjectAccessReview answer (res
 * borrowed, any JSON): 1 when status.allowed is true, else 0. */
int kcr__auth_access_review_allowed(json_t *res);

#endif /* KCR_AUTH_INTERNAL_H */
