/* SPDX-License-Identifier: MIT */
/*
 * scaffold.h: kcr-gen's scaffolding commands (scaffold.c). Each takes the
 * arguments after its command word and returns the exit status: 0, 1 on an
 * error (one line on stderr, nothing written), 2 on a bad command line.
 * Below them, the text edits and the PROJECT file reading they are made of,
 * for the unit test (test/unit/test_kcr_gen_scaffold.c).
 */
#ifndef KCR_GEN_SCAFFOLD_H
#define KCR_GEN_SCAFFOLD_H

#include <stdbool.h>
#include <stddef.h>

/* gen_scaffold_init: `kcr-gen init [--domain D] [--project-name N] [DIR]`. */
int gen_scaffold_init(int argc, char **argv);

/* gen_scaffold_create: `kcr-gen create api --group G --version V --kind K ...`
 * and `kcr-gen create webhook --group G --version V --kind K ...`. */
int gen_scaffold_create(int argc, char **argv);

/* The answers of the text edits: done, the place to edit not found, out of memory. */
#define GEN_TEXT_OK 0
#define GEN_TEXT_NOTFOUND (-1)
#define GEN_TEXT_NOMEM (-2)

/* gen_text_comment: block with '#' put before each of its lines (new; NULL
 * when out of memory). */
char *gen_text_comment(const char *block);

/*
 * gen_text_insert_before: text with add (whole lines) put above the first
 * line that holds marker, into *out (new). GEN_TEXT_NOTFOUND when no line
 * does (*out NULL).
 */
int gen_text_insert_before(const char *text, const char *marker, const char *add, char **out);

/*
 * gen_text_uncomment: text with block (whole lines) switched on, into *out
 * (new): the first place where block stands commented out (gen_text_comment),
 * starting a line, becomes block. When block is there uncommented already,
 * *out is a copy of text; in neither form, GEN_TEXT_NOTFOUND (*out NULL).
 */
int gen_text_uncomment(const char *text, const char *block, char **out);

/* GEN_RESOURCE_NAME_MAX: the room of each name of a gen_resource (a DNS
 * label or a kind: 63 bytes and the NUL). */
#define GEN_RESOURCE_NAME_MAX 64

/* gen_resource: one kind of the PROJECT file and the webhooks it has. */
typedef struct gen_resource {
  char group[GEN_RESOURCE_NAME_MAX];
  char version[GEN_RESOURCE_NAME_MAX];
  char kind[GEN_RESOURCE_NAME_MAX];
  char plural[GEN_RESOURCE_NAME_MAX];
  bool namespaced, defaulting, validation, conversion;
} gen_resource;

/*
 * gen_project_resources reads the resources: list of a PROJECT file's text
 * (as kcr-gen create writes it) into out (max entries), *n of them. Returns 0,
 * or -1 when there are more than max. A name longer than the room is cut.
 */
int gen_project_resources(const char *project, gen_resource *out, size_t max, size_t *n);

/*
 * gen_project_add_webhooks: project's text with a "webhooks:" block (r's
 * defaulting, validation and conversion, and the spoke versions, n_spokes of
 * them) at the end of r's entry (found by group, version and kind), or
 * among the entry's webhooks when it has some, into *out (new).
 * GEN_TEXT_NOTFOUND when r has no entry.
 */
int gen_project_add_webhooks(const char *project, const gen_resource *r, const char *const *spokes,
                             size_t n_spokes, char **out);

/*
 * gen_webhook_manifests: config/webhook/manifests.yaml for the webhooks of
 * resources r (n of them) in domain, as controller-gen writes it from the
 * +kubebuilder:webhook markers create webhook scaffolds: a
 * MutatingWebhookConfiguration with every defaulting webhook, a
 * ValidatingWebhookConfiguration with every validating one (each left out
 * when empty), webhooks sorted by name. New string ("" with no webhook), NULL
 * when out of memory.
 */
char *gen_webhook_manifests(const char *domain, const gen_resource *r, size_t n);

#endif
