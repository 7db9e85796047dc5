/* SPDX-License-Identifier: MIT */
/*
 * null_reader.c: the floor of a cache sync (issue 29). It sends the request
 * kcr's informer sends for a streaming list of the ConfigMaps (with -r pods,
 * the Pods) of a namespace: one watch with sendInitialEvents=true,
 * resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true, over the
 * same TLS and HTTP/2 through libcurl with the same options (no
 * compression, as kcr's watches ask for none: src/client/client_watch.c; the
 * kubeconfig's credentials and CA), and throws the bytes away, looking
 * only for the bookmark that ends the initial events. What it costs is what
 * any client must pay to receive the state: the server's work to produce it,
 * the transfer and TLS, and one pass over the bytes. It prints the line
 * cache_sync prints, with impl=floor, plus bytes= (the body received) and
 * events= (lines before the bookmark, the objects; with -p the
 * length-delimited frames before the bookmark's).
 *
 * With -p it asks for protobuf (impl=floor-proto), as client-go does for
 * built-in kinds, so that the server's share of a sync can be compared
 * between the two encodings.
 *
 * Usage: null_reader -k KUBECONFIG -n NAMESPACE [-r configmaps|pods] [-p]
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kcr/kcr.h"
#include "procstat.h"

#define MARK "k8s.io/initial-events-end"
#define MARK_LEN (sizeof(MARK) - 1)

typedef struct reader {
  char tail[MARK_LEN]; /* the last bytes of the previous chunk: a mark may straddle */
  size_t ntail;
  size_t bytes, lines;
  int done;
  int proto;            /* -p: the stream is frames, each after a 4-byte length */
  unsigned char hdr[4]; /* -p: the length being read */
  size_t nhdr, skip;    /* -p: bytes of it read; bytes left of the current frame */
} reader_t;

/* count_frames counts, in place of lines, the protobuf watch frames whose
 * length begins in p[0..n), the bookmark's among them. */
static void count_frames(reader_t *r, const char *p, size_t n) {
  while (n) {
    if (r->skip) {
      size_t k = n < r->skip ? n : r->skip;
      r->skip -= k;
      p += k;
      n -= k;
      continue;
    }
    r->hdr[r->nhdr++] = (unsigned char)*p++;
    n--;
    if (r->nhdr == 4) {
      r->skip =
          (size_t)r->hdr[0] << 24 | (size_t)r->hdr[1] << 16 | (size_t)r->hdr[2] << 8 | r->hdr[3];
      r->nhdr = 0;
      r->lines++;
    }
  }
}

/* on_body counts lines (-p: frames) until the mark; a chunk that holds it ends the read
 * (the lines after it are watch events, not part of the state). */
static size_t on_body(char *p, size_t size, size_t nmemb, void *data) {
  reader_t *r = data;
  size_t n = size * nmemb, keep;
  char joined[2 * MARK_LEN];
  const char *mark;
  r->bytes += n;
  /* the mark across the boundary: the old tail plus this chunk's head */
  if (r->ntail) {
    size_t head = n < MARK_LEN ? n : MARK_LEN;
    memcpy(joined, r->tail, r->ntail);
    memcpy(joined + r->ntail, p, head);
    if (memmem(joined, r->ntail + head, MARK, MARK_LEN)) {
      r->done = 1;
      return 0; /* stop the transfer */
    }
  }
  mark = memmem(p, n, MARK, MARK_LEN);
  if (r->proto)
    count_frames(r, p, (size_t)((mark ? mark : p + n) - p));
  else
    for (const char *q = p, *end = mark ? mark : p + n;
         (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
      r->lines++;
  if (mark) {
    r->done = 1;
    return 0;
  }
  if (n >= MARK_LEN - 1) {
    memcpy(r->tail, p + n - (MARK_LEN - 1), MARK_LEN - 1);
    r->ntail = MARK_LEN - 1;
  } else { /* a short chunk: what is kept is the old tail's end and all of it */
    keep = r->ntail + n > MARK_LEN - 1 ? MARK_LEN - 1 - n : r->ntail;
    memmove(r->tail, r->tail + r->ntail - keep, keep);
    memcpy(r->tail + keep, p, n);
    r->ntail = keep + n;
  }
  return n;
}

int main(int argc, char **argv) {
  const char *kubeconfig = NULL, *ns = NULL, *resource = "configmaps";
  kcr_rest_config_t *cfg = NULL;
  kcr_credentials cred = {0};
  kcr_error_t err = {0};
  struct curl_slist *headers = NULL;
  struct curl_blob ca, cert, key;
  reader_t r = {0};
  char url[2048], auth[4096];
  double t0, sync;
  CURL *easy;
  CURLcode rc;
  long status = 0;
  int opt, proto = 0;
  while ((opt = getopt(argc, argv, "k:n:r:p")) != -1) {
    switch (opt) {
    case 'k':
      kubeconfig = optarg;
      break;
    case 'n':
      ns = optarg;
      break;
    case 'r':
      resource = optarg;
      break;
    case 'p':
      proto = r.proto = 1;
      break;
    default:
      fprintf(stderr, "usage: %s -k KUBECONFIG -n NS [-r configmaps|pods] [-p]\n", argv[0]);
      return 2;
    }
  }
  if (!kubeconfig || !ns || (strcmp(resource, "configmaps") && strcmp(resource, "pods"))) {
    fprintf(stderr, "usage: %s -k KUBECONFIG -n NS [-r configmaps|pods] [-p]\n", argv[0]);
    return 2;
  }
  t0 = now_s();
  if (kcr_rest_config_from_kubeconfig(kubeconfig, NULL, NULL, &cfg, &err) ||
      kcr_rest_config_credentials(cfg, &cred, &err)) {
    fprintf(stderr, "config: %s\n", err.message);
    return 1;
  }
  snprintf(url, sizeof(url),
           "%s/api/v1/namespaces/%s/%s?watch=true&resourceVersionMatch=NotOlderThan"
           "&allowWatchBookmarks=true&sendInitialEvents=true&timeoutSeconds=300",
           kcr_rest_config_server(cfg), ns, resource);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  easy = curl_easy_init();
  if (!easy)
    return 1;
  headers = curl_slist_append(headers, proto ? "Accept: application/vnd.kubernetes.protobuf"
                                               ",application/json"
                                             : "Accept: application/json");
  headers = curl_slist_append(headers, "Expect:");
  if (cred.bearer_token) {
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", cred.bearer_token);
    headers = curl_slist_append(headers, auth);
  }
  curl_easy_setopt(easy, CURLOPT_URL, url);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, NULL); /* as kcr's watches */
  curl_easy_setopt(easy, CURLOPT_USERAGENT, "kcr-null-reader");
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  if (cred.ca_pem) {
    ca = (struct curl_blob){cred.ca_pem, cred.ca_len, CURL_BLOB_NOCOPY};
    curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &ca);
  }
  if (cred.client_cert_pem && cred.client_key_pem) {
    cert = (struct curl_blob){cred.client_cert_pem, cred.client_cert_len, CURL_BLOB_NOCOPY};
    key = (struct curl_blob){cred.client_key_pem, cred.client_key_len, CURL_BLOB_NOCOPY};
    curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &key);
  }
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &r);
  rc = curl_easy_perform(easy);
  sync = now_s() - t0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  if (!r.done) {
    fprintf(stderr, "null_reader: no initial-events-end bookmark (HTTP %ld, %s)\n", status,
            curl_easy_strerror(rc));
    return 1;
  }
  if (proto && r.lines)
    r.lines--; /* the bookmark's own frame */
  printf("impl=%s objects=%zu sync_s=%.3f cpu_s=%.3f rss_synced_kb=%ld hwm_synced_kb=%ld"
         " rss_kb=%ld hwm_kb=%ld lists=1 bytes=%zu events=%zu\n",
         proto ? "floor-proto" : "floor", r.lines, sync, cpu_s(), status_kb("VmRSS"),
         status_kb("VmHWM"), status_kb("VmRSS"), status_kb("VmHWM"), r.bytes, r.lines);
  curl_easy_cleanup(easy);
  curl_slist_free_all(headers);
  kcr_credentials_free(&cred);
  kcr_rest_config_unref(cfg);
  curl_global_cleanup();
  return 0;
}
