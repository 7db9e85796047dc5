/* SPDX-License-Identifier: MIT */
/* test_metrics.c: the Prometheus registry and its text exposition. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "kcr/metrics.h"
#include "metrics/metrics_internal.h"
#include "testutil.h"

static char *render(kcr_metrics_registry_t *r) {
  kcr_buf_t b;
  kcr_buf_init(&b, 1u << 24);
  assert_int_equal(kcr_metrics_render(r, &b), 0);
  return kcr_buf_take(&b, NULL);
}

static void test_metrics_counter_gauge_exact_text(void **state) {
  kcr_metrics_registry_t *r;
  kcr_metric_t *c, *g, *plain;
  static const char *const labels[] = {"code", "method", NULL};
  char *text;
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(
      kcr_metrics_counter(r, "requests_total", "Number of requests.", labels, &c, NULL), 0);
  assert_int_equal(
      kcr_metrics_gauge(r, "a_gauge", "A gauge\\with \"quotes\"\nand lines", NULL, &plain, NULL),
      0);
  assert_int_equal(kcr_metrics_gauge(r, "temp", "Temp.", labels, &g, NULL), 0);
  kcr_metric_inc(kcr_metric_withv(c, "200", "GET", NULL));
  kcr_metric_add(kcr_metric_withv(c, "200", "GET", NULL), 2);
  kcr_metric_add(kcr_metric_withv(c, "200", "GET", NULL), -5); /* ignored on a counter */
  kcr_metric_inc(kcr_metric_withv(c, "500", "P\"UT\\\n", NULL));
  kcr_metric_set(kcr_metric_withv(g, "x", "y", NULL), 0.25);
  assert_null(kcr_metric_withv(c, "only-one", NULL));
  text = render(r);
  assert_string_equal(text, "# HELP a_gauge A gauge\\\\with \"quotes\"\\nand lines\n"
                            "# TYPE a_gauge gauge\n"
                            "a_gauge 0\n"
                            "# HELP requests_total Number of requests.\n"
                            "# TYPE requests_total counter\n"
                            "requests_total{code=\"200\",method=\"GET\"} 3\n"
                            "requests_total{code=\"500\",method=\"P\\\"UT\\\\\\n\"} 1\n"
                            "# HELP temp Temp.\n"
                            "# TYPE temp gauge\n"
                            "temp{code=\"x\",method=\"y\"} 0.25\n");
  kcr_free(text);
  kcr_metrics_registry_destroy(r);
}

static void test_metrics_histogram(void **state) {
  kcr_metrics_registry_t *r;
  kcr_metric_t *h;
  kcr_metric_child_t *c;
  static const char *const labels[] = {"verb", NULL};
  static const double b[] = {0.1, 1, 10};
  char *text;
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_histogram(r, "lat_seconds", "Latency.", labels, b, 3, &h, NULL), 0);
  c = kcr_metric_withv(h, "GET", NULL);
  kcr_metric_observe(c, 0.05);
  kcr_metric_observe(c, 0.1); /* le is inclusive */
  kcr_metric_observe(c, 5);
  kcr_metric_observe(c, 100);
  assert_int_equal(kcr_metric_count(c), 4);
  text = render(r);
  assert_string_equal(text, "# HELP lat_seconds Latency.\n"
                            "# TYPE lat_seconds histogram\n"
                            "lat_seconds_bucket{verb=\"GET\",le=\"0.1\"} 2\n"
                            "lat_seconds_bucket{verb=\"GET\",le=\"1\"} 2\n"
                            "lat_seconds_bucket{verb=\"GET\",le=\"10\"} 3\n"
                            "lat_seconds_bucket{verb=\"GET\",le=\"+Inf\"} 4\n"
                            "lat_seconds_sum{verb=\"GET\"} 105.15\n"
                            "lat_seconds_count{verb=\"GET\"} 4\n");
  kcr_free(text);
  kcr_metrics_registry_destroy(r);
}

static void test_metrics_register_rules(void **state) {
  kcr_metrics_registry_t *r;
  kcr_metric_t *a, *b;
  static const char *const l1[] = {"x", NULL};
  static const char *const l2[] = {"y", NULL};
  static const char *const bad[] = {"__x", NULL};
  static const char *const le[] = {"le", NULL};
  static const double unsorted[] = {1, 0.5};
  kcr_error_t err = {0};
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_counter(r, "c_total", "h", l1, &a, NULL), 0);
  assert_int_equal(kcr_metrics_counter(r, "c_total", "h", l1, &b, NULL), 0);
  assert_ptr_equal(a, b);
  assert_int_equal(kcr_metrics_counter(r, "c_total", "h", l2, &b, &err), KCR_EEXIST);
  assert_int_equal(kcr_metrics_gauge(r, "c_total", "h", l1, &b, NULL), KCR_EEXIST);
  assert_int_equal(kcr_metrics_gauge(r, "9bad", "h", NULL, &b, NULL), KCR_EINVAL);
  assert_int_equal(kcr_metrics_gauge(r, "bad-name", "h", NULL, &b, NULL), KCR_EINVAL);
  assert_int_equal(kcr_metrics_gauge(r, "g", "h", bad, &b, NULL), KCR_EINVAL);
  assert_int_equal(kcr_metrics_histogram(r, "h", "h", le, NULL, 0, &b, NULL), KCR_EINVAL);
  assert_int_equal(kcr_metrics_histogram(r, "h", "h", NULL, unsorted, 2, &b, NULL), KCR_EINVAL);
  assert_int_equal(kcr_metrics_histogram(r, "h", "h", NULL, NULL, 0, &b, NULL), 0);
  kcr_metrics_registry_destroy(r);
}

static void on_collect_twice(kcr_metrics_emitter_t *e, void *data) {
  const char *ln[] = {"q"};
  const char *lv[] = {data};
  kcr_metrics_emit(e, "shared_depth", "Depth.", KCR_METRIC_GAUGE, ln, lv, 1, 7);
}

static void test_metrics_collectors_merge(void **state) {
  kcr_metrics_registry_t *r;
  kcr_metrics_collector_t *c1, *c2;
  static char a[] = "a", b[] = "b";
  char *text;
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_register_collector(r, on_collect_twice, a, &c1), 0);
  assert_int_equal(kcr_metrics_register_collector(r, on_collect_twice, b, &c2), 0);
  text = render(r);
  assert_string_equal(text, "# HELP shared_depth Depth.\n"
                            "# TYPE shared_depth gauge\n"
                            "shared_depth{q=\"a\"} 7\n"
                            "shared_depth{q=\"b\"} 7\n");
  kcr_free(text);
  kcr_metrics_unregister_collector(r, c1);
  text = render(r);
  assert_null(strstr(text, "q=\"a\""));
  assert_non_null(strstr(text, "q=\"b\""));
  kcr_free(text);
  kcr_metrics_registry_destroy(r);
}

static void test_metrics_process(void **state) {
  kcr_metrics_registry_t *r;
  char *text;
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_register_process(r, NULL), 0);
  text = render(r);
  assert_non_null(strstr(text, "# TYPE process_cpu_seconds_total counter\n"));
  assert_non_null(strstr(text, "\nprocess_resident_memory_bytes "));
  assert_non_null(strstr(text, "\nprocess_virtual_memory_bytes "));
  assert_non_null(strstr(text, "\nprocess_open_fds "));
  assert_non_null(strstr(text, "\nprocess_max_fds "));
  assert_non_null(strstr(text, "\nprocess_start_time_seconds "));
  kcr_free(text);
  kcr_metrics_registry_destroy(r);
}

/* sample returns the value of the unlabelled series name in text; fails when absent. */
static double sample(const char *text, const char *name) {
  char needle[128];
  const char *p;
  snprintf(needle, sizeof(needle), "\n%s ", name);
  p = strstr(text, needle);
  assert_non_null(p);
  return strtod(p + strlen(needle), NULL);
}

/* process_virtual_memory_max_bytes is the soft address-space limit (client_golang
 * reads "Max address space" from /proc/self/limits, unlimited as 2^64 - 1), and
 * the network counters exist, as counters, and never go down between scrapes. */
static void test_metrics_process_limits_and_network(void **state) {
  kcr_metrics_registry_t *r;
  struct rlimit rl;
  char *text, *text2;
  double in, out;
  (void)state;
  assert_int_equal(getrlimit(RLIMIT_AS, &rl), 0);
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_register_process(r, NULL), 0);
  text = render(r);
  assert_non_null(strstr(text,
                         "# HELP process_virtual_memory_max_bytes Maximum amount of virtual "
                         "memory available in bytes.\n# TYPE process_virtual_memory_max_bytes "
                         "gauge\n"));
  assert_true(sample(text, "process_virtual_memory_max_bytes") == (double)rl.rlim_cur);
  if (rl.rlim_cur == RLIM_INFINITY)
    assert_non_null(strstr(text, "\nprocess_virtual_memory_max_bytes 1.8446744073709552e+19\n"));
  assert_non_null(strstr(text, "# TYPE process_network_receive_bytes_total counter\n"));
  assert_non_null(strstr(text, "# TYPE process_network_transmit_bytes_total counter\n"));
  in = sample(text, "process_network_receive_bytes_total");
  out = sample(text, "process_network_transmit_bytes_total");
  assert_true(in >= 0 && out >= 0);
  text2 = render(r);
  assert_true(sample(text2, "process_network_receive_bytes_total") >= in);
  assert_true(sample(text2, "process_network_transmit_bytes_total") >= out);
  kcr_free(text);
  kcr_free(text2);
  kcr_metrics_registry_destroy(r);
}

/* The netstat parser: IpExt's header and value lines found among the others
 * (TcpExt first, as the kernel writes them), columns matched by name. */
static void test_metrics_netstat_octets(void **state) {
  double in = -1, out = -1;
  (void)state;
  assert_int_equal(
      kcr__metrics_netstat_octets("TcpExt: SyncookiesSent InOctets\n"
                                  "TcpExt: 1 999\n"
                                  "IpExt: InNoRoutes InOctets OutOctets InMcastOctets\n"
                                  "IpExt: 0 22362414876 21780024060 7\n"
                                  "MPTcpExt: MPCapableSYNRX\n"
                                  "MPTcpExt: 0\n",
                                  &in, &out),
      0);
  assert_true(in == 22362414876.0);
  assert_true(out == 21780024060.0);
  /* A column that is missing stays 0; no trailing newline is needed. */
  assert_int_equal(kcr__metrics_netstat_octets("IpExt: OutOctets\nIpExt: 5", &in, &out), 0);
  assert_true(in == 0 && out == 5);
  /* A value line shorter than its header: the names without values are 0. */
  assert_int_equal(kcr__metrics_netstat_octets("IpExt: InOctets OutOctets\nIpExt: 3\n", &in, &out),
                   0);
  assert_true(in == 3 && out == 0);
  /* No IpExt pair: -1, both 0. */
  assert_int_equal(kcr__metrics_netstat_octets("TcpExt: A\nTcpExt: 1\n", &in, &out), -1);
  assert_true(in == 0 && out == 0);
  assert_int_equal(kcr__metrics_netstat_octets("IpExt: InOctets\n", &in, &out), -1);
  assert_int_equal(kcr__metrics_netstat_octets("", &in, &out), -1);
}

/* A collector runs before the families are written, so a gauge it refreshes
 * shows its new value in the same render (the workqueue's unfinished-work
 * gauges work this way). */
static void on_refresh(kcr_metrics_emitter_t *e, void *data) {
  kcr_metric_child_t *c = data;
  (void)e;
  kcr_metric_set(c, kcr_metric_value(c) + 1);
}

static void test_metrics_collector_refreshes_gauge(void **state) {
  kcr_metrics_registry_t *r;
  kcr_metric_t *g;
  kcr_metric_child_t *c;
  kcr_metrics_collector_t *h;
  char *text;
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_gauge(r, "scraped", "Scrapes seen.", NULL, &g, NULL), 0);
  c = kcr_metric_with(g, NULL, 0);
  assert_non_null(c);
  assert_int_equal(kcr_metrics_register_collector(r, on_refresh, c, &h), 0);
  text = render(r);
  assert_string_equal(text, "# HELP scraped Scrapes seen.\n# TYPE scraped gauge\nscraped 1\n");
  kcr_free(text);
  text = render(r);
  assert_non_null(strstr(text, "\nscraped 2\n"));
  kcr_free(text);
  kcr_metrics_unregister_collector(r, h);
  text = render(r);
  assert_non_null(strstr(text, "\nscraped 2\n"));
  kcr_free(text);
  kcr_metrics_registry_destroy(r);
}

static void test_metrics_find(void **state) {
  kcr_metrics_registry_t *r;
  kcr_metric_t *m;
  static const char *const l[] = {"q", NULL};
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_null(kcr_metrics_find(r, "x_total"));
  assert_int_equal(kcr_metrics_counter(r, "x_total", "X.", l, &m, NULL), 0);
  assert_ptr_equal(kcr_metrics_find(r, "x_total"), m);
  kcr_metric_add(kcr_metric_withv(m, "a", NULL), 3);
  assert_true(kcr_metric_value(kcr_metric_withv(kcr_metrics_find(r, "x_total"), "a", NULL)) == 3);
  assert_null(kcr_metrics_find(r, "y_total"));
  assert_null(kcr_metrics_find(NULL, "x_total"));
  kcr_metrics_registry_destroy(r);
}

typedef struct {
  kcr_metric_t *c, *h;
} hot_t;

static void *hot_thread(void *arg) {
  hot_t *h = arg;
  kcr_metric_child_t *c = kcr_metric_withv(h->c, "x", NULL);
  for (int i = 0; i < 20000; i++) {
    kcr_metric_inc(c);
    kcr_metric_observe(kcr_metric_withv(h->h, "y", NULL), 0.5);
  }
  return NULL;
}

static void test_metrics_concurrent_updates(void **state) {
  kcr_metrics_registry_t *r;
  static const char *const l[] = {"l", NULL};
  hot_t h;
  pthread_t t[4];
  char *text;
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_counter(r, "hot_total", "h", l, &h.c, NULL), 0);
  assert_int_equal(kcr_metrics_histogram(r, "hot_seconds", "h", l, NULL, 0, &h.h, NULL), 0);
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, hot_thread, &h);
  for (int i = 0; i < 3; i++)
    kcr_free(render(r)); /* scrapes race with writers */
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  assert_true(kcr_metric_value(kcr_metric_withv(h.c, "x", NULL)) == 80000.0);
  assert_int_equal(kcr_metric_count(kcr_metric_withv(h.h, "y", NULL)), 80000);
  text = render(r);
  assert_non_null(strstr(text, "hot_seconds_sum{l=\"y\"} 40000\n"));
  kcr_free(text);
  kcr_metrics_registry_destroy(r);
}

/* Children are found by their whole tuple: boundaries and the key encoding's
 * escape byte never make two tuples one child; a long tuple works too. */
static void test_metrics_child_tuples_are_distinct(void **state) {
  kcr_metrics_registry_t *r;
  kcr_metric_t *c;
  static const char *const l[] = {"a", "b", NULL};
  char big[600];
  kcr_metric_child_t *x[6];
  (void)state;
  memset(big, 'v', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_counter(r, "t_total", "h", l, &c, NULL), 0);
  x[0] = kcr_metric_withv(c, "a", "b", NULL);
  x[1] = kcr_metric_withv(c, "ab", "", NULL);
  x[2] = kcr_metric_withv(c, "a\x01", "b", NULL);
  x[3] = kcr_metric_withv(c, "a",
                          "\x01"
                          "b",
                          NULL);
  x[4] = kcr_metric_withv(c, big, "b", NULL);
  x[5] = kcr_metric_withv(c, "a\x01\x01", "", NULL);
  for (int i = 0; i < 6; i++) {
    assert_non_null(x[i]);
    for (int j = 0; j < i; j++)
      assert_ptr_not_equal(x[i], x[j]);
  }
  assert_ptr_equal(kcr_metric_withv(c, "a", "b", NULL), x[0]);
  assert_ptr_equal(kcr_metric_withv(c, big, "b", NULL), x[4]);
  assert_ptr_equal(kcr_metric_withv(c, "a",
                                    "\x01"
                                    "b",
                                    NULL),
                   x[3]);
  kcr_metrics_registry_destroy(r);
}

static kcr_metrics_registry_t *alloc_r;

static int alloc_build(void) {
  static const char *const l[] = {"a", "b", NULL};
  kcr_metric_t *m;
  kcr_buf_t b;
  int rc = kcr_metrics_registry_create(&alloc_r, NULL);
  if (rc == 0)
    rc = kcr_metrics_counter(alloc_r, "x_total", "h", l, &m, NULL);
  if (rc == 0)
    rc = kcr_metrics_histogram(alloc_r, "y", "h", l, NULL, 0, &m, NULL);
  if (rc == 0 && !kcr_metric_withv(m, "1", "2", NULL))
    rc = KCR_ENOMEM;
  if (rc == 0) {
    kcr_buf_init(&b, 1 << 20);
    rc = kcr_metrics_render(alloc_r, &b);
    kcr_buf_free(&b);
  }
  return rc;
}

static void test_metrics_alloc_failures(void **state) {
  (void)state;
  KCR_TEST_ALLOC_LOOP(alloc_build(), (kcr_metrics_registry_destroy(alloc_r), alloc_r = NULL));
}

static void test_metrics_render_limit(void **state) {
  kcr_metrics_registry_t *r;
  kcr_metric_t *m;
  static const char *const l[] = {"i", NULL};
  kcr_buf_t b;
  char v[16];
  (void)state;
  assert_int_equal(kcr_metrics_registry_create(&r, NULL), 0);
  assert_int_equal(kcr_metrics_gauge(r, "g", "h", l, &m, NULL), 0);
  for (int i = 0; i < 100; i++) {
    snprintf(v, sizeof(v), "%d", i);
    kcr_metric_set(kcr_metric_withv(m, v, NULL), i);
  }
  kcr_buf_init(&b, 200);
  assert_int_equal(kcr_metrics_render(r, &b), KCR_ETOOBIG);
  assert_int_equal(kcr_buf_len(&b), 0);
  kcr_metrics_registry_destroy(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_metrics_counter_gauge_exact_text),
      cmocka_unit_test(test_metrics_histogram),
      cmocka_unit_test(test_metrics_child_tuples_are_distinct),
      cmocka_unit_test(test_metrics_register_rules),
      cmocka_unit_test(test_metrics_collectors_merge),
      cmocka_unit_test(test_metrics_process),
      cmocka_unit_test(test_metrics_collector_refreshes_gauge),
      cmocka_unit_test(test_metrics_find),
      cmocka_unit_test(test_metrics_process_limits_and_network),
      cmocka_unit_test(test_metrics_netstat_octets),
      cmocka_unit_test(test_metrics_concurrent_updates),
      cmocka_unit_test(test_metrics_alloc_failures),
      cmocka_unit_test(test_metrics_render_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
