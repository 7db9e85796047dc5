/* SPDX-License-Identifier: MIT */
/*
 * pb_schema.h: what the protobuf transcoder (pbscan.h) knows of Kubernetes'
 * built-in kinds: for every Go struct reachable from a kind that client-go's
 * scheme registers, its fields in the order encoding/json writes them, each
 * with its protobuf field number, its JSON name and how its value is written.
 *
 * The tables (pb_schema.c) are generated, never edited: scripts/gen-pb-schema.sh
 * builds tools/pbschema-gen (a Go program that reads the struct tags of
 * k8s.io/api at the version pinned to the control plane by reflection) and
 * writes them. The struct tags are the API's own protobuf definitions:
 * generated.proto is made from them.
 */
#ifndef KCR_UTIL_PB_SCHEMA_H
#define KCR_UTIL_PB_SCHEMA_H

#include <stdint.h>

/* kcr__pb_kind: how one value is read from the wire and written as JSON. A
 * repeated field or a map's value has the kind of its elements. No kind of
 * the pinned k8s.io/api has an unsigned, float or metav1.Duration field:
 * the generator refuses them, so a newer API that adds one fails there. */
typedef enum kcr__pb_kind {
  KCR__PB_STRING = 1,  /* length-delimited; a JSON string */
  KCR__PB_BYTES,       /* length-delimited; base64 (std, padded) as a JSON string */
  KCR__PB_BOOL,        /* varint; true or false */
  KCR__PB_INT32,       /* varint, two's complement (Go int32); a number */
  KCR__PB_INT64,       /* varint (Go int, int64); a number */
  KCR__PB_MESSAGE,     /* length-delimited; the struct kcr__pb_messages[sub] */
  KCR__PB_TIME,        /* metav1.Time {seconds=1, nanos=2}: RFC 3339 in UTC to the
                          second; an empty message is the zero time: null */
  KCR__PB_MICROTIME,   /* metav1.MicroTime: the same, to the microsecond
                          ("2006-01-02T15:04:05.000000Z"); empty: null */
  KCR__PB_QUANTITY,    /* resource.Quantity {string=1}: a JSON string */
  KCR__PB_INTORSTRING, /* intstr.IntOrString {type=1, intVal=2, strVal=3}: a number
                          when type is 0, else a string */
  KCR__PB_RAW,         /* runtime.RawExtension {raw=1}: raw JSON, checked and
                          written compact; empty: null */
  KCR__PB_FIELDSV1,    /* metav1.FieldsV1 {Raw=1}: raw JSON, checked and
                          written compact; empty: null */
  KCR__PB_STRING_LIST, /* a named []string that protobuf wraps as a message
                          {items=1 repeated string} (ExtraValue, AttestationValue):
                          a JSON array of strings */
} kcr__pb_kind;

/* kcr__pb_field.flags */
/* A Go slice: every occurrence is one element, packed varints accepted; a
 * JSON array. */
#define KCR__PBF_REPEATED 0x01
/* A Go map with string keys: each occurrence is an entry message {key=1
 * string, value=2 of kind}; a JSON object. */
#define KCR__PBF_MAP 0x02
/* json:",omitempty": left out when Go's encoding/json would (zero number,
 * false, "", empty slice or map, nil pointer; never a struct that is not a
 * pointer). */
#define KCR__PBF_OMITEMPTY 0x04
/* A Go pointer: written only when present on the wire (absent is nil: null,
 * or left out with omitempty). */
#define KCR__PBF_POINTER 0x08
/* json:",inline" embedding of a KCR__PB_MESSAGE: its members are written
 * into this object. */
#define KCR__PBF_INLINE 0x10
/* A slice, map or []byte that is nil when absent: written as null when
 * absent and not omitempty. */
#define KCR__PBF_NULLABLE 0x20
/* json:",omitzero": left out when the value is its type's zero (for a Time:
 * empty). */
#define KCR__PBF_OMITZERO 0x40

typedef struct kcr__pb_field {
  uint16_t number; /* protobuf field number */
  uint8_t kind;    /* kcr__pb_kind */
  uint8_t flags;   /* KCR__PBF_* */
  uint16_t sub;    /* KCR__PB_MESSAGE: index in kcr__pb_messages; else 0 */
  uint16_t name;   /* offset of the JSON name (NUL-terminated) in kcr__pb_names */
} kcr__pb_field_t;

typedef struct kcr__pb_message {
  uint16_t first; /* its fields: kcr__pb_fields[first, first + count), JSON order */
  uint16_t count;
  uint16_t name; /* offset of the Go type's name ("core/v1.ConfigMap"; k8s.io/api/ and
                    k8s.io/apimachinery/pkg/apis/ left out)
                    in kcr__pb_names, for error messages */
} kcr__pb_message_t;

/* kcr__pb_root: a kind the API server may send, and its struct. Sorted by
 * api_version then kind (strcmp), for bsearch. List kinds are roots too. */
typedef struct kcr__pb_root {
  const char *api_version; /* "v1", "apps/v1" */
  const char *kind;        /* "ConfigMap", "ConfigMapList" */
  uint16_t message;
} kcr__pb_root_t;

extern const char kcr__pb_names[];
extern const kcr__pb_field_t kcr__pb_fields[];
extern const kcr__pb_message_t kcr__pb_messages[];
extern const kcr__pb_root_t kcr__pb_roots[];
extern const unsigned kcr__pb_nfields, kcr__pb_nmessages, kcr__pb_nroots;

/* The indexes of metav1.ObjectMeta and metav1.Status in kcr__pb_messages:
 * the transcoder reads an object's name, namespace and resourceVersion from
 * the first, and a watch's ERROR events carry the second. */
extern const uint16_t kcr__pb_object_meta, kcr__pb_status;

/* The version of k8s.io/api the tables were generated from ("v0.37.2"). */
extern const char kcr__pb_api_version[];

#endif /* KCR_UTIL_PB_SCHEMA_H */
