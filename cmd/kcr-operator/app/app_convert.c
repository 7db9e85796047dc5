/* SPDX-License-Identifier: MIT */
/*
 * app_convert.c: the App's conversion between v1alpha1 (storage) and v1beta1
 * (app_webhook.h, kop_app_convert), for the /convert webhook.
 *
 * DESIGN. v1beta1 differs from v1alpha1 in one place, where the API had to
 * grow (docs/operator.md, "v1beta1"): the bare spec.port integer became
 * spec.service {port, portName}. The conversion works on a deep copy of the
 * whole object, so every field it does not know (status, metadata, fields a
 * later schema adds) is carried as it is; only spec.port / spec.service and
 * the one annotation that holds portName in v1alpha1 move. The mapping is a
 * bijection on the objects each schema admits, so a round trip either way
 * gives back an equal object; the unit test checks that on many objects. An
 * annotations map left empty is dropped: ObjectMeta has no empty map (the API
 * server stores "annotations: {}" as no annotations), so that is no loss.
 */
#include <stdio.h>
#include <string.h>

#include "app/app_webhook.h"

static json_t *annotations(json_t *o, int create) {
  json_t *md = json_object_get(o, "metadata"), *a;
  if (!json_is_object(md)) {
    if (!create)
      return NULL;
    if (json_object_set_new(o, "metadata", json_object()) != 0)
      return NULL;
    md = json_object_get(o, "metadata");
  }
  a = json_object_get(md, "annotations");
  if (json_is_object(a) || !create)
    return json_is_object(a) ? a : NULL;
  if (json_object_set_new(md, "annotations", json_object()) != 0)
    return NULL;
  return json_object_get(md, "annotations");
}

/* to_beta moves spec.port (and the port-name annotation) into spec.service. */
static int to_beta(json_t *o) {
  json_t *spec = json_object_get(o, "spec"), *port, *ann, *name, *svc;
  if (!json_is_object(spec) || !(port = json_object_get(spec, "port")))
    return 0; /* no port: no service; the annotation, if any, stays */
  svc = json_pack("{s:O}", "port", port);
  if (!svc)
    return -1;
  ann = annotations(o, 0);
  if ((name = json_object_get(ann, KOP_APP_PORT_NAME_ANNOTATION))) {
    if (json_object_set(svc, "portName", name) != 0) {
      json_decref(svc);
      return -1;
    }
    json_object_del(ann, KOP_APP_PORT_NAME_ANNOTATION);
    if (json_object_size(ann) == 0)
      json_object_del(json_object_get(o, "metadata"), "annotations");
  }
  json_object_del(spec, "port");
  return json_object_set_new(spec, "service", svc);
}

/* to_alpha moves spec.service back into spec.port and the annotation. */
static int to_alpha(json_t *o) {
  json_t *spec = json_object_get(o, "spec"), *svc, *port, *name, *ann;
  if (!json_is_object(spec) || !json_is_object(svc = json_object_get(spec, "service")))
    return 0;
  port = json_object_get(svc, "port");
  name = json_object_get(svc, "portName");
  if (name) {
    if (!(ann = annotations(o, 1)) || json_object_set(ann, KOP_APP_PORT_NAME_ANNOTATION, name) != 0)
      return -1;
  }
  if (port && json_object_set(spec, "port", port) != 0)
    return -1;
  json_object_del(spec, "service");
  return 0;
}

int kop_app_convert(json_t *obj, const char *desired, json_t **out, char *msg, size_t size) {
  const char *from = json_string_value(json_object_get(obj, "apiVersion"));
  int alpha_from, alpha_to, rc = 0;
  json_t *c;
  *out = NULL;
  if (!from || (strcmp(from, KOP_APP_V1ALPHA1) != 0 && strcmp(from, KOP_APP_V1BETA1) != 0)) {
    snprintf(msg, size, "cannot convert from %.64s: the App's versions are v1alpha1 and v1beta1",
             from ? from : "an object without apiVersion");
    return -1;
  }
  if (!desired ||
      (strcmp(desired, KOP_APP_V1ALPHA1) != 0 && strcmp(desired, KOP_APP_V1BETA1) != 0)) {
    snprintf(msg, size, "cannot convert to %.64s: the App's versions are v1alpha1 and v1beta1",
             desired ? desired : "(none)");
    return -1;
  }
  alpha_from = strcmp(from, KOP_APP_V1ALPHA1) == 0;
  alpha_to = strcmp(desired, KOP_APP_V1ALPHA1) == 0;
  if (!(c = json_deep_copy(obj)))
    goto oom;
  if (alpha_from != alpha_to)
    rc = alpha_to ? to_alpha(c) : to_beta(c);
  if (rc != 0 || json_object_set_new(c, "apiVersion", json_string(desired)) != 0) {
    json_decref(c);
    goto oom;
  }
  *out = c;
  return 0;
oom:
  snprintf(msg, size, "out of memory");
  return -1;
}
