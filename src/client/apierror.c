/* SPDX-License-Identifier: MIT */
/*
 * apierror.c: the API server's failures as kcr_error_t, and the apierror.h
 * predicates over them.
 *
 * DESIGN. A failed request's body is normally a metav1.Status: its code, reason,
 * message, details.causes and details.retryAfterSeconds are copied into the
 * fixed-size fields of the caller's kcr_error_t, so nothing is allocated once the
 * body is parsed and the error outlives the response. Anything else (an HTML page
 * from a proxy, a truncated body, text, a wrong content type) becomes client-go's
 * NewGenericServerResponse error for the status code, word for word, so messages
 * read the same as kubectl's; one deliberate difference: client-go replaces a
 * non-text body by "unknown", kcr keeps a bounded excerpt of it (escaped, so the
 * error text stays printable, valid UTF-8 that jansson will accept back) because
 * "unknown" tells the operator nothing. Text copied from the server is cut on a
 * UTF-8 character boundary for the same reason.
 *
 * jansson does not always say that a parse failed for want of memory (a failed
 * string allocation reads as "invalid token"), so a parse failure is taken for
 * KCR_ENOMEM when jansson says so, when it gives no message at all (its
 * out-of-memory paths), or when a probe allocation of the body's size fails right
 * after; otherwise the body simply was not a Status.
 *
 * The predicates follow k8s.io/apimachinery/pkg/api/errors: the reason decides,
 * and the HTTP status only when the reason is not one Kubernetes defines.
 */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client/apierror_internal.h"
#include "kcr/apierror.h"
#include "util/alloc.h"

/* utf8_len returns the length of the valid UTF-8 sequence at s[0..n), 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t len;
  unsigned cp;

  if (n == 0)
    return 0;
  if (s[0] < 0x80)
    return 1;
  if (s[0] >= 0xC2 && s[0] <= 0xDF) {
    len = 2;
    cp = s[0] & 0x1Fu;
  } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
    len = 3;
    cp = s[0] & 0x0Fu;
  } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
    len = 4;
    cp = s[0] & 0x07u;
  } else {
    return 0;
  }
  if (n < len)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3Fu);
  }
  /* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

/*
 * copy_text copies len bytes of src into dst (cap bytes, NUL-terminated). When it
 * must cut, it cuts before a UTF-8 continuation byte's lead, never inside a
 * character.
 */
static void copy_text(char *dst, size_t cap, const char *src, size_t len) {
  if (len >= cap) {
    len = cap - 1;
    while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80)
      len--;
  }
  memcpy(dst, src, len);
  dst[len] = '\0';
}

/*
 * escape_excerpt writes at most KCR__STATUS_EXCERPT_MAX bytes of body, with
 * surrounding white space trimmed, into dst (cap bytes) as printable text: valid
 * UTF-8 stays, control characters become \n, \t, \r or \xNN, bytes that are not
 * UTF-8 become \xNN; with quote, " and \ are escaped as in Go's %q. "..." marks a
 * cut.
 */
static void escape_excerpt(char *dst, size_t cap, const char *body, size_t len, int quote) {
  const unsigned char *s = (const unsigned char *)body;
  size_t out = 0, i = 0;
  int cut = 0;

  while (len > 0 && isspace(s[0])) {
    s++;
    len--;
  }
  while (len > 0 && isspace(s[len - 1]))
    len--;
  if (len > KCR__STATUS_EXCERPT_MAX) {
    len = KCR__STATUS_EXCERPT_MAX;
    cut = 1;
  }
  while (i < len) {
    char tmp[8];
    size_t n = utf8_len(s + i, len - i), w;
    const char *piece = tmp;

    if (n == 0 && cut && s[i] >= 0xC2 && len - i < 4) {
      break; /* a character the excerpt's own bound cut in two: drop it */
    } else if (n > 1) {
      piece = (const char *)s + i;
      w = n;
    } else if (n == 1 && s[i] >= 0x20 && s[i] < 0x7F) {
      if (quote && (s[i] == '"' || s[i] == '\\')) {
        tmp[0] = '\\';
        tmp[1] = (char)s[i];
        w = 2;
      } else {
        tmp[0] = (char)s[i];
        w = 1;
      }
    } else {
      n = 1;
      if (s[i] == '\n')
        w = (size_t)snprintf(tmp, sizeof(tmp), "\\n");
      else if (s[i] == '\t')
        w = (size_t)snprintf(tmp, sizeof(tmp), "\\t");
      else if (s[i] == '\r')
        w = (size_t)snprintf(tmp, sizeof(tmp), "\\r");
      else
        w = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", s[i]);
    }
    if (out + w + 4 > cap) { /* room for "..." and the NUL */
      cut = 1;
      break;
    }
    memcpy(dst + out, piece, w);
    out += w;
    i += n;
  }
  if (cut && out + 4 <= cap) {
    memcpy(dst + out, "...", 3);
    out += 3;
  }
  dst[out] = '\0';
}

void kcr__escape_text(char *dst, size_t cap, const char *src, size_t len) {
  escape_excerpt(dst, cap, src, len, 0);
}

/* media_type_is tells whether a Content-Type's media type (parameters ignored,
 * case-insensitive) is want; a want ending in '/' matches a whole type ("text/"). */
static int media_type_is(const char *content_type, const char *want) {
  const char *p = content_type;
  size_t n, wn = strlen(want);

  while (*p == ' ' || *p == '\t')
    p++;
  n = strcspn(p, "; \t");
  if (want[wn - 1] == '/')
    return n > wn && strncasecmp(p, want, wn) == 0;
  return n == wn && strncasecmp(p, want, wn) == 0;
}

int kcr__retry_after_seconds(const char *value) {
  long long v = 0;
  const char *p = value;

  if (!p)
    return -1;
  while (isspace((unsigned char)*p))
    p++;
  if (*p == '+')
    p++;
  if (!isdigit((unsigned char)*p))
    return -1;
  while (isdigit((unsigned char)*p)) {
    if (v < INT_MAX)
      v = v * 10 + (*p - '0');
    p++;
  }
  while (isspace((unsigned char)*p))
    p++;
  if (*p != '\0')
    return -1;
  return v > INT_MAX ? INT_MAX : (int)v;
}

/* generic_message gives client-go's NewGenericServerResponse reason and message
 * for an HTTP status; server is the escaped body excerpt, quoted its %q form. */
static const char *generic_message(long code, const char *verb, const char *server,
                                   const char *quoted, char *msg, size_t cap) {
  const char *reason = "";

  switch (code) {
  case 409:
    reason = verb && strcasecmp(verb, "POST") == 0 ? "AlreadyExists" : "Conflict";
    snprintf(msg, cap, "the server reported a conflict");
    break;
  case 404:
    reason = "NotFound";
    snprintf(msg, cap, "the server could not find the requested resource");
    break;
  case 400:
    reason = "BadRequest";
    snprintf(msg, cap, "the server rejected our request for an unknown reason");
    break;
  case 401:
    reason = "Unauthorized";
    snprintf(msg, cap, "the server has asked for the client to provide credentials");
    break;
  case 403:
    /* the server's text says who may not do what: keep it */
    reason = "Forbidden";
    snprintf(msg, cap, "%s", *server ? server : "forbidden");
    break;
  case 406:
    reason = "NotAcceptable";
    snprintf(msg, cap, "%s",
             *server ? server
                     : "the server was unable to respond with a content type that the client "
                       "supports");
    break;
  case 415:
    reason = "UnsupportedMediaType";
    snprintf(msg, cap, "%s",
             *server ? server : "the server does not support the content type of the request");
    break;
  case 405:
    reason = "MethodNotAllowed";
    snprintf(msg, cap, "the server does not allow this method on the requested resource");
    break;
  case 422:
    reason = "Invalid";
    snprintf(msg, cap, "the server rejected our request due to an error in our request");
    break;
  case 503:
    reason = "ServiceUnavailable";
    snprintf(msg, cap, "the server is currently unable to handle the request");
    break;
  case 504:
    reason = "Timeout";
    snprintf(msg, cap,
             "the server was unable to return a response in the time allotted, but may still "
             "be processing the request");
    break;
  case 429:
    reason = "TooManyRequests";
    snprintf(msg, cap,
             "the server has received too many requests and has asked us to try again later");
    break;
  default:
    if (code >= 500) {
      reason = "InternalError";
      snprintf(msg, cap,
               "an error on the server (\"%s\") has prevented the request from succeeding", quoted);
    } else {
      snprintf(msg, cap,
               "the server responded with the status code %ld but did not return more "
               "information",
               code);
    }
    break;
  }
  return reason;
}

/* generic_error fills err with the synthesized error for a response that was not
 * a Status. */
static int generic_error(kcr_error_t *err, const kcr__error_response_t *resp, const char *body,
                         size_t len) {
  /* zeroed: the analyzer cannot see snprintf fill them (copy_text peeks past the cut) */
  char server[KCR_ERROR_CAUSES_MAX] = "", quoted[KCR_ERROR_MESSAGE_MAX] = "";
  char base[KCR_ERROR_MESSAGE_MAX] = "", msg[KCR_ERROR_MESSAGE_MAX + 256] = "", verb[16];
  const char *reason;
  size_t i;
  int retry;

  if (!err || err->code != KCR_OK)
    return KCR_EAPI;
  escape_excerpt(server, sizeof(server), body, len, 0);
  escape_excerpt(quoted, sizeof(quoted) - 128, body, len, 1);
  for (i = 0; resp->verb && resp->verb[i] && i < sizeof(verb) - 1; i++)
    verb[i] = (char)tolower((unsigned char)resp->verb[i]);
  verb[i] = '\0';
  reason = generic_message(resp->http_status, resp->verb, server, quoted, base, sizeof(base));

  /* " (get configmaps foo)": the request, as client-go appends it */
  if (resp->resource && *resp->resource) {
    const char *group = resp->group ? resp->group : "";
    const char *name = resp->name ? resp->name : "";
    snprintf(msg, sizeof(msg), "%s (%s%s%s%s%s%s%s)", base, verb, *verb ? " " : "", resp->resource,
             *group ? "." : "", group, *name ? " " : "", name);
  } else {
    snprintf(msg, sizeof(msg), "%s", base);
  }

  err->code = KCR_EAPI;
  err->http_status = resp->http_status > 0 && resp->http_status <= 999 ? (int)resp->http_status : 0;
  copy_text(err->reason, sizeof(err->reason), reason, strlen(reason));
  copy_text(err->message, sizeof(err->message), msg, strlen(msg));
  copy_text(err->causes, sizeof(err->causes), server, strlen(server));
  retry = kcr__retry_after_seconds(resp->retry_after);
  err->retry_after_seconds = retry > 0 ? retry : 0;
  return KCR_EAPI;
}

/* get_string returns the string member key of obj and its length, or "" and 0. */
static const char *get_string(const json_t *obj, const char *key, size_t *len) {
  const json_t *v = json_object_get(obj, key);
  if (!json_is_string(v)) {
    *len = 0;
    return "";
  }
  *len = json_string_length(v);
  return json_string_value(v);
}

/* join_causes writes details.causes as "field: message; ..." into err->causes. */
static void join_causes(kcr_error_t *err, const json_t *causes) {
  char out[KCR_ERROR_CAUSES_MAX * 2] = "";
  size_t used = 0, i;
  const json_t *c;

  json_array_foreach(causes, i, c) {
    size_t flen, mlen;
    const char *field = get_string(c, "field", &flen);
    const char *message = get_string(c, "message", &mlen);
    int n;

    if (mlen == 0)
      message = get_string(c, "reason", &mlen);
    if (flen == 0 && mlen == 0)
      continue;
    n = snprintf(out + used, sizeof(out) - used, "%s%.*s%s%.*s", used ? "; " : "", (int)flen, field,
                 flen && mlen ? ": " : "", (int)mlen, message);
    if (n < 0 || (size_t)n >= sizeof(out) - used) {
      used = sizeof(out) - 1;
      break;
    }
    used += (size_t)n;
  }
  copy_text(err->causes, sizeof(err->causes), out, used);
}

int kcr__error_from_status(kcr_error_t *err, const json_t *status, long http_status) {
  const json_t *code, *details, *retry;
  const char *s;
  size_t len;
  long long c;

  if (!json_is_object(status))
    return kcr_error_set(err, KCR_EPROTO, "the server sent a %s where a Status belongs",
                         json_is_array(status) ? "JSON array" : "JSON value");
  s = get_string(status, "kind", &len);
  if (json_object_get(status, "kind") && strcmp(s, "Status") != 0) {
    char kind[64];
    kcr__escape_text(kind, sizeof(kind), s, len);
    return kcr_error_set(err, KCR_EPROTO, "the server sent a %s where a Status belongs",
                         *kind ? kind : "nameless object");
  }
  if (!err || err->code != KCR_OK)
    return KCR_EAPI;

  err->code = KCR_EAPI;
  code = json_object_get(status, "code");
  c = json_is_integer(code) ? json_integer_value(code) : 0;
  if (c <= 0 || c > 999)
    c = http_status > 0 && http_status <= 999 ? http_status : 0;
  err->http_status = (int)c;

  s = get_string(status, "reason", &len);
  copy_text(err->reason, sizeof(err->reason), s, len);
  s = get_string(status, "message", &len);
  if (len == 0) {
    char msg[KCR_ERROR_MESSAGE_MAX] = "";
    generic_message(c, NULL, "", "", msg, sizeof(msg));
    copy_text(err->message, sizeof(err->message), msg, strlen(msg));
  } else {
    copy_text(err->message, sizeof(err->message), s, len);
  }

  details = json_object_get(status, "details");
  join_causes(err, json_object_get(details, "causes"));
  retry = json_object_get(details, "retryAfterSeconds");
  if (json_is_integer(retry) && json_integer_value(retry) > 0)
    err->retry_after_seconds =
        json_integer_value(retry) > INT_MAX ? INT_MAX : (int)json_integer_value(retry);
  return KCR_EAPI;
}

/* parse_failed_for_memory tells whether json_loadb's failure was for want of
 * memory (see DESIGN). */
static int parse_failed_for_memory(const json_error_t *jerr, size_t len) {
  void *probe;
  if (jerr->text[0] == '\0' || json_error_code(jerr) == json_error_out_of_memory)
    return 1;
  probe = kcr__malloc(len + 1);
  if (!probe)
    return 1;
  kcr__free(probe);
  return 0;
}

int kcr__error_from_response(kcr_error_t *err, const kcr__error_response_t *resp, const char *body,
                             size_t len) {
  int retry;

  if (resp->http_status >= 200 && resp->http_status <= 206)
    return 0;
  if (len > 0 && (!resp->content_type || !*resp->content_type ||
                  media_type_is(resp->content_type, "application/json"))) {
    json_error_t jerr;
    json_t *root;

    memset(&jerr, 0, sizeof(jerr));
    root = json_loadb(body, len, 0, &jerr);
    if (!root && parse_failed_for_memory(&jerr, len)) {
      kcr_error_set(err, KCR_ENOMEM, "out of memory reading the server's error (HTTP %ld)",
                    resp->http_status);
      if (err && err->code == KCR_ENOMEM)
        err->http_status = (int)resp->http_status;
      return KCR_ENOMEM;
    }
    if (json_is_object(root)) {
      size_t klen, slen;
      const char *kind = get_string(root, "kind", &klen);
      const char *st = get_string(root, "status", &slen);
      if (strcmp(kind, "Status") == 0 && strcmp(st, "Failure") == 0) {
        int rc = kcr__error_from_status(err, root, resp->http_status);
        retry = kcr__retry_after_seconds(resp->retry_after);
        if (err && rc == KCR_EAPI && err->retry_after_seconds == 0 && retry > 0)
          err->retry_after_seconds = retry;
        json_decref(root);
        return rc;
      }
    }
    json_decref(root);
  }
  return generic_error(err, resp, body, len);
}

/* Reasons Kubernetes defines (apimachinery's knownReasons): the predicates fall
 * back to the HTTP status only for a reason outside this list. */
static const char *const known_reasons[] = {
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
};

static int reason_known(const char *reason) {
  for (size_t i = 0; i < sizeof(known_reasons) / sizeof(known_reasons[0]); i++)
    if (strcmp(reason, known_reasons[i]) == 0)
      return 1;
  return 0;
}

/* is_reason_or_status: reason matches, or (status != 0) the reason is unknown and
 * the HTTP status is status. */
static bool is_reason_or_status(const kcr_error_t *err, const char *reason, int status) {
  if (!kcr_error_is_api(err))
    return false;
  if (strcmp(err->reason, reason) == 0)
    return true;
  return status != 0 && err->http_status == status && !reason_known(err->reason);
}

bool kcr_error_is_api(const kcr_error_t *err) {
  return err && err->code == KCR_EAPI;
}

bool kcr_error_is_not_found(const kcr_error_t *err) {
  return is_reason_or_status(err, "NotFound", 404);
}

bool kcr_error_is_already_exists(const kcr_error_t *err) {
  return is_reason_or_status(err, "AlreadyExists", 0);
}

bool kcr_error_is_conflict(const kcr_error_t *err) {
  return is_reason_or_status(err, "Conflict", 409);
}

bool kcr_error_is_invalid(const kcr_error_t *err) {
  return is_reason_or_status(err, "Invalid", 422);
}

bool kcr_error_is_gone(const kcr_error_t *err) {
  return is_reason_or_status(err, "Gone", 410) || is_reason_or_status(err, "Expired", 0);
}

bool kcr_error_is_too_many_requests(const kcr_error_t *err) {
  return is_reason_or_status(err, "TooManyRequests", 0) ||
         (kcr_error_is_api(err) && err->http_status == 429);
}

bool kcr_error_is_forbidden(const kcr_error_t *err) {
  return is_reason_or_status(err, "Forbidden", 403);
}

bool kcr_error_is_unauthorized(const kcr_error_t *err) {
  return is_reason_or_status(err, "Unauthorized", 401);
}

bool kcr_error_is_server_timeout(const kcr_error_t *err) {
  return is_reason_or_status(err, "ServerTimeout", 0);
}

bool kcr_error_is_timeout(const kcr_error_t *err) {
  return is_reason_or_status(err, "Timeout", 504);
}

bool kcr_error_is_bad_request(const kcr_error_t *err) {
  return is_reason_or_status(err, "BadRequest", 400);
}

bool kcr_error_is_internal_error(const kcr_error_t *err) {
  return is_reason_or_status(err, "InternalError", 500);
}

bool kcr_error_is_service_unavailable(const kcr_error_t *err) {
  return is_reason_or_status(err, "ServiceUnavailable", 503);
}

int kcr_error_set_status(kcr_error_t *err, int http_status, const char *reason, const char *fmt,
                         ...) {
  va_list ap;
  if (http_status < 100 || http_status > 599)
    return kcr_error_set(err, KCR_EINVAL, "an API error's HTTP status is 100..599, not %d",
                         http_status);
  if (!err || err->code != KCR_OK)
    return KCR_EAPI;
  va_start(ap, fmt);
  kcr_error_setv(err, KCR_EAPI, fmt, ap);
  va_end(ap);
  err->http_status = http_status;
  snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
  return KCR_EAPI;
}
