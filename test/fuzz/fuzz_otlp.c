/* SPDX-License-Identifier: MIT */
/*
 * fuzz_otlp.c: kcr_otlp_encode on spans made from arbitrary bytes (names,
 * attribute values and status messages hold any byte, invalid UTF-8
 * included; counts and kinds any value). The output must always be one JSON
 * document that jansson reads back, with as many spans as went in and each
 * span's ids in hex.
 */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "kcr/otlp.h"

static const char *const keys[] = {"a", "b", "c", "d"};

/* take copies up to n bytes of the input into out (NUL-terminated, NULs mapped). */
static void take(const uint8_t **p, size_t *left, char *out, size_t size) {
  size_t n = 0;
  if (*left) {
    n = **p % size;
    (*p)++, (*left)--;
  }
  if (n > *left)
    n = *left;
  for (size_t i = 0; i < n; i++)
    out[i] = (*p)[i] ? (char)(*p)[i] : ' ';
  out[n] = '\0';
  *p += n;
  *left -= n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static kcr_span_data spans[4];
  kcr_trace_options o;
  const uint8_t *p = data;
  size_t left = size, n = size ? (data[0] % 4) + 1 : 1;
  kcr_buf_t b;
  json_t *root, *arr;
  if (left)
    p++, left--;
  memset(spans, 0, sizeof(spans));
  memset(&o, 0, sizeof(o));
  take(&p, &left, o.service_name, sizeof(o.service_name));
  o.nresource = 1;
  snprintf(o.resource_keys[0], sizeof(o.resource_keys[0]), "k");
  take(&p, &left, o.resource_values[0], sizeof(o.resource_values[0]));
  for (size_t i = 0; i < n; i++) {
    kcr_span_data *s = &spans[i];
    memset(s->ctx.trace_id, (int)(i + 1), 16);
    memset(s->ctx.span_id, (int)(i + 1), 8);
    if (left >= 8) {
      memcpy(s->parent_span_id, p, 8);
      memcpy(&s->start_unix_ns, p, 8);
      p += 8, left -= 8;
    }
    take(&p, &left, s->name, sizeof(s->name));
    take(&p, &left, s->status_message, sizeof(s->status_message));
    s->kind = (kcr_span_kind)(left ? *p % 7 : 1);
    s->status = (kcr_span_status)(left ? *p % 3 : 0);
    s->nattrs = left ? *p % (KCR_SPAN_MAX_ATTRS + 1) : 0;
    for (size_t k = 0; k < s->nattrs; k++) {
      s->attrs[k].key = keys[k % 4];
      s->attrs[k].type = (k & 1) ? KCR_SPAN_ATTR_INT : KCR_SPAN_ATTR_STRING;
      take(&p, &left, s->attrs[k].s, sizeof(s->attrs[k].s));
      s->attrs[k].i = (int64_t)left * -7919;
    }
  }
  kcr_buf_init(&b, 1 << 22);
  FUZZ_CHECK(kcr_otlp_encode(spans, n, &o, &b) == 0);
  root = json_loadb(kcr_buf_cstr(&b), kcr_buf_len(&b), 0, NULL);
  FUZZ_CHECK(root != NULL);
  arr = json_object_get(
      json_array_get(
          json_object_get(json_array_get(json_object_get(root, "resourceSpans"), 0), "scopeSpans"),
          0),
      "spans");
  FUZZ_CHECK(json_array_size(arr) == n);
  for (size_t i = 0; i < n; i++) {
    const char *tid = json_string_value(json_object_get(json_array_get(arr, i), "traceId"));
    FUZZ_CHECK(tid && strlen(tid) == 32);
  }
  json_decref(root);
  kcr_buf_free(&b);
  return 0;
}
