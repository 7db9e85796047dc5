/* SPDX-License-Identifier: MIT */
/*
 * gen.h: kcr-gen's internals, shared by its three steps: yaml.c reads a YAML
 * file into jansson values, model.c turns a CRD's openAPIV3Schema into a model
 * of C types (gen_type, gen_field, gen_shape), and emit.c writes that model as
 * a C header and source. kcr-gen is a build tool: it links libyaml and jansson
 * only, and reports every error as one line on stderr.
 */
#ifndef KCR_GEN_H
#define KCR_GEN_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* KCR_GEN_PRINTF(fmt, args) asks the compiler to check a printf-style format. */
#if defined(__GNUC__)
#define KCR_GEN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KCR_GEN_PRINTF(f, a)
#endif

/*
 * gen_msgf writes a printf-formatted message into msg (size bytes, > 0). One
 * longer than size - 1 is cut in the middle with a " [...] " mark, keeping its
 * start (the path or file) and its end (the reason): never cut silently.
 */
void gen_msgf(char *msg, size_t size, const char *fmt, ...) KCR_GEN_PRINTF(3, 4);

/*
 * gen_vmsg_at is gen_msgf for a message about a place in a source file:
 * "FILE:LINE:COL: " and the formatted reason.
 */
void gen_vmsg_at(char *msg, size_t size, const char *file, int line, int col, const char *fmt,
                 va_list ap) KCR_GEN_PRINTF(6, 0);

/*
 * GEN_LITERAL_MAX is the longest string literal a C compiler must take (C11
 * 5.2.4.1; gcc -Wpedantic warns past it): kcr-gen writes every property name
 * as one, so a longer name is refused with its schema path. GEN_NAME_MAX
 * bounds a type's C name (its base), which the generated error messages
 * quote ("BASE: out of memory"), with room for that text.
 */
#define GEN_LITERAL_MAX 4095
#define GEN_NAME_MAX 4000

/* gen_kind: what a schema becomes in C. */
typedef enum gen_kind {
  GEN_STRING,   /* char *, NULL when absent */
  GEN_INT32,    /* int32_t, format int32 */
  GEN_INT64,    /* int64_t, any other integer */
  GEN_NUMBER,   /* double */
  GEN_BOOL,     /* bool */
  GEN_INTSTR,   /* kcr_int_or_string_t (x-kubernetes-int-or-string) */
  GEN_QUANTITY, /* kcr_quantity_t (int-or-string with the quantity pattern) */
  GEN_OBJECT,   /* a generated struct (properties) */
  GEN_JSON,     /* json_t *: anything else, kept whole */
  GEN_LIST,     /* counted array of elem */
  GEN_MAP,      /* counted array of key/value entries (additionalProperties) */
  GEN_TIME      /* kcr_time_t, a date-time string: a type header's only (codecs) */
} gen_kind;

typedef struct gen_type gen_type;

/* gen_shape: one schema's C form. elem (list and map) is never a list or map. */
typedef struct gen_shape {
  gen_kind kind;
  gen_type *obj;          /* GEN_OBJECT, or the element's type */
  struct gen_shape *elem; /* GEN_LIST, GEN_MAP: new, owned */
  char *entry;            /* GEN_MAP: base name of the entry type (new) */
} gen_shape;

/* gen_field: one property of an object. Names are new strings. */
typedef struct gen_field {
  char *json_name;
  char *json_lit; /* json_name as the inside of a C string literal */
  char *c_name;
  char *desc;
  gen_shape shape;
  bool required;
  bool nullable;
  /*
   * plain: a member of a type header's own struct (`kcr-gen codecs`), not of a
   * generated one: no has_ or _null members, lists and maps are KCR_LIST and
   * KCR_MAP (c_name.items, c_name.len), and an optional member held by value
   * is left out of the JSON when it holds its zero value (as Go's omitempty).
   * indirect: such a member is a pointer (`T *x`) the decoder allocates; a
   * generated struct holds every struct member so, and nothing else.
   */
  bool plain;
  bool indirect;
} gen_field;

/*
 * gen_type: one struct: base is the C name without _t ("app_v1alpha1_spec").
 * ext, when not NULL, says the type is libkcr's (kcr/meta_v1.h: ObjectMeta,
 * Condition, LabelSelector...), not the package's: it has no fields here, and
 * the package reaches it through its public functions; ext is the prefix of
 * that package's _mem_ functions ("kcr_meta_v1").
 */
struct gen_type {
  char *base;
  char *ext;
  char *header; /* ext: the header that declares it ("kcr/meta_v1.h") */
  char *pkg;    /* the group-version it belongs to ("apps_v1"), or NULL */
  char *path;   /* where in the kind it sits ("spec.env[]"), for comments */
  char *desc;
  gen_field *fields;
  size_t nfields;
  /* plain: the struct is a type header's (`kcr-gen codecs`): declared there,
   * not here, with no kcr_unknown (members it does not know are dropped) */
  bool plain;
};

/*
 * gen_kindinfo: one kind a package registers with a scheme. prefix names its
 * macros and functions (app_v1alpha1_register) and is its type's base. All
 * strings new; type borrowed from the package's types.
 */
typedef struct gen_kindinfo {
  char *group, *version, *kind, *plural, *list_kind;
  bool namespaced;
  char *prefix;
  gen_type *type;
} gen_kindinfo;

/*
 * gen_version: one package of generated code: a served version of a CRD (one
 * kind), or the built-in kinds of `kcr-gen openapi` (several kinds sharing the
 * types they reach through $ref).
 */
typedef struct gen_version {
  char *name;        /* "v1alpha1"; the package name for openapi */
  char *prefix;      /* "app_v1alpha1": the file names and the _mem_ functions */
  char *file;        /* the files' base name: NULL means prefix */
  char *include;     /* how the source includes its header: NULL means file.h */
  char *user_header; /* codecs: how the header includes the type header they code */
  gen_type **types;  /* types[0] is the first kind; children follow parents */
  size_t ntypes;
  gen_kindinfo *kinds;
  size_t nkinds;
} gen_version;

/* gen_crd: what kcr-gen needs of a CustomResourceDefinition. */
typedef struct gen_crd {
  char *group, *kind, *list_kind, *plural;
  bool namespaced;
  gen_version *versions;
  size_t nversions;
  char *source; /* the file it came from, for the generated comment */
} gen_crd;

/*
 * gen_yaml_load reads every document of the YAML file path into a new JSON array
 * (one element per document) in *out. Returns 0, or -1 with a message in msg.
 */
int gen_yaml_load(const char *path, json_t **out, char *msg, size_t size);

/* gen_yaml_parse is gen_yaml_load for len bytes of YAML text in memory. */
int gen_yaml_parse(const char *buf, size_t len, json_t **out, char *msg, size_t size);

/*
 * gen_read_file reads the file at path, at most max bytes, into a new buffer
 * (free with free; not NUL-terminated) and its length into *len. Returns NULL
 * with a message in msg on failure.
 */
char *gen_read_file(const char *path, size_t max, size_t *len, char *msg, size_t size);

struct kcr_buf;

/*
 * gen_yaml_write appends doc (borrowed) to b as one YAML document ("---"
 * first), block style, object keys sorted. Returns 0 or the kcr_buf error
 * (the buffer then freed, as kcr_buf does).
 */
int gen_yaml_write(struct kcr_buf *b, const json_t *doc);

/*
 * gen_crd_build finds the CustomResourceDefinition among docs (borrowed) and
 * models each served version, or, when only is not NULL, exactly the versions
 * it names (a comma-separated list; served or not: a version an overlay serves,
 * such as one behind a conversion webhook); prefix_base NULL means the kind in
 * lowercase. Returns 0, or -1 with a message in msg (a named version the CRD
 * lacks included). Release with gen_crd_free.
 */
int gen_crd_build(const json_t *docs, const char *prefix_base, const char *only, const char *source,
                  gen_crd *crd, char *msg, size_t size);

/*
 * gen_openapi_build models one package named prefix (a C identifier) from the
 * OpenAPI v3 documents docs (borrowed; a JSON array of documents, their
 * components.schemas merged, the first of a name winning) for the kinds
 * ("apps/v1/Deployment", "core/v1/Pod"; an optional "=plural" or
 * "=plural,cluster" says what discovery would, else the documents'
 * x-kcr-resources must) and every schema they reach through $ref. A "kind"
 * without a '/' is a components.schemas name: that schema becomes a type (and
 * what it reaches) without a kind. The meta/v1 schemas libkcr ships
 * (kcr/meta_v1.h) are referenced, not made, unless prefix is "kcr": that is
 * how libkcr's own package is made. The result has one gen_version. Returns
 * 0, or -1 with a message in msg.
 */
int gen_openapi_build(const json_t *docs, const char *prefix, const char *const *kinds,
                      size_t nkinds, const char *source, gen_crd *crd, char *msg, size_t size);

/*
 * gen_openapi_split is gen_openapi_build for kinds of several group-versions:
 * one package per group-version (one gen_version each in crd, in an order
 * where a package comes after those it reaches), named PREFIX_GROUP_VERSION
 * (kcr_apps_v1), its files GROUP_VERSION.h and .c, the source including
 * INCDIR/GROUP_VERSION.h. Every schema belongs to the package of its name
 * (io.k8s.api.core.v1.PodSpec to core_v1, an inline object to its parent's)
 * and is made there only; other packages reach it through that package's
 * header. libkcr's meta/v1 types are always referenced. A schema outside
 * io.k8s.api.GROUP.VERSION that libkcr does not ship, or two packages that
 * reach each other, are errors. Returns 0, or -1 with a message in msg.
 */
int gen_openapi_split(const json_t *docs, const char *prefix, const char *incdir,
                      const char *const *kinds, size_t nkinds, const char *source, gen_crd *crd,
                      char *msg, size_t size);

/*
 * gen_ext_header is the header that declares the external types (ext set):
 * "kcr/meta_v1.h".
 */
#define GEN_EXT_HEADER "kcr/meta_v1.h"

/*
 * gen_version_name_files makes v's files FILE.h and FILE.c, its allocator
 * PREFIX_FILE_mem_*, and, when include is not NULL, the source include its
 * header as include. Returns 0, or -1 when out of memory.
 */
int gen_version_name_files(gen_version *v, const char *prefix, const char *file,
                           const char *include);

/*
 * gen_codecs_build models the codecs of one type header's own structs (its
 * C layout from crd_set_layout, borrowed) for `kcr-gen codecs`: a package
 * PREFIX (the header's name less _types.h: memcached), files
 * PREFIX_codecs.h and .c, whose header includes the type header as include.
 * Each struct NAME_t gets NAME_decode and the rest, each kind its scheme
 * hooks; crds (borrowed; crd_set_build's) give the kinds' plurals, scopes and
 * list kinds. Types of the headers before it are reached through their own
 * codecs, ORIGIN_codecs.h. What cannot be coded is an error at the header's
 * FILE:LINE:COL. Returns 0, or -1 with a message in msg.
 */
int gen_codecs_build(const json_t *layout, const json_t *crds, const char *prefix,
                     const char *include, gen_crd *crd, char *msg, size_t size);

/*
 * gen_codecs_prefix writes into out (size bytes) the package name of the type
 * header at path: its file name up to the first '.', less a trailing "_types"
 * (api/v1/memcached_types.h: memcached), as CMake's kcr_gen_codecs names it.
 * 0, or -1 when that is empty, does not fit, or is not lowercase letters,
 * digits and '_' starting with a letter or '_'.
 */
int gen_codecs_prefix(const char *path, char *out, size_t size);

/* gen_crd_free releases what gen_crd_build made. */
void gen_crd_free(gen_crd *crd);

/*
 * gen_emit writes <dir>/<prefix>.h and <dir>/<prefix>.c for version v of crd.
 * Returns 0, or -1 with a message in msg.
 */
int gen_emit(const gen_crd *crd, const gen_version *v, const char *dir, char *msg, size_t size);

/* gen_mkdirs makes every directory on the way to the file at path (0755),
 * those that exist already included. Returns 0, or -1 with errno set. */
int gen_mkdirs(const char *path);

/*
 * gen_write_text writes len bytes of text to path under a temporary name, then
 * renames it, so that a failure leaves the previous file; "-" is stdout.
 * Returns 0, or -1 after printing why (main.c).
 */
int gen_write_text(const char *path, const char *text, size_t len);

/*
 * gen_helm is `kcr-gen helm ARGS...` (helm.c): a Helm chart from a project's
 * rendered kustomize output. Returns the exit status.
 */
int gen_helm(int argc, char **argv);

/*
 * gen_rbac is `kcr-gen rbac ARGS...` (rbac.c): roles from +kcr:rbac and
 * +kubebuilder:rbac markers.
 * Returns the exit status.
 */
int gen_rbac(int argc, char **argv);

#endif /* KCR_GEN_H */
