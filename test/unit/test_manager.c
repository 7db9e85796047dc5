/* SPDX-License-Identifier: MIT */
/*
 * test_manager.c: the manager's options and start order with no API server
 * behind it (a scripted server that answers 404 to anything): the cache's
 * resync period and which runnables and controllers start without leading.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "httpserver.h"
#include "kcr/manager.h"
#include "testutil.h"

static void api_404(const kcr_test_http_request *req, kcr_test_http_response *resp, void *data) {
  (void)req;
  (void)data;
  resp->status = 404;
  resp->body = "{}";
}

/* resync_of makes a manager with sync_period_ns and returns its cache's
 * resync period; *jitter tells whether it is jittered. */
static int64_t resync_of(int64_t sync_period_ns, bool *jitter) {
  kcr_test_client tc;
  kcr_manager_options mo = {0};
  kcr_manager_t *m;
  int64_t p;
  assert_int_equal(kcr_test_client_start(api_404, NULL, &tc), 0);
  mo.config = tc.config;
  mo.no_signal_handlers = true;
  mo.sync_period_ns = sync_period_ns;
  assert_int_equal(kcr_manager_create(&mo, &m, NULL), 0);
  p = kcr__cache_resync_period(kcr_manager_cache(m), jitter);
  kcr_manager_destroy(m);
  kcr_test_client_stop(&tc);
  return p;
}

static void test_manager_sync_period(void **state) {
  bool jitter = false;
  (void)state;
  /* controller-runtime's default: 10 hours, jittered */
  assert_true(resync_of(0, &jitter) == 10 * 3600 * KCR_NSEC_PER_SEC);
  assert_true(jitter);
  assert_true(resync_of(30 * KCR_NSEC_PER_SEC, &jitter) == 30 * KCR_NSEC_PER_SEC);
  assert_true(jitter);
  assert_true(resync_of(-1, &jitter) == 0); /* never */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_manager_sync_period),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
