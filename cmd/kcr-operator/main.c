/* SPDX-License-Identifier: MIT */
/*
 * main.c: the kcr-operator executable's entry point.
 *
 * DESIGN: main parses flags and environment (flags.c: bad ones exit 2 with one
 * line on stderr), installs the log handler the flags ask for (JSON lines or
 * console), and loads the REST config with controller-runtime's precedence
 * (--kubeconfig, in-cluster, KUBECONFIG, ~/.kube/config). That is as far as it
 * goes today: the manager, the App controller and leader election come with the
 * controller layer, which is not on main yet. Until then, after a successful
 * load it says so and exits 1, so that nothing mistakes this binary for a
 * running operator. The App logic it will drive is in src/operator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "flags.h"
#include "kcr/clock.h"
#include "kcr/config.h"
#include "kcr/log.h"
#include "kcr/time.h"

#ifndef KCR_OPERATOR_VERSION
#define KCR_OPERATOR_VERSION KCR_VERSION_STRING
#endif

extern char **environ;

/* on_log writes one log line in the chosen format (data: a kcr_op_log_format). */
static void on_log(kcr_log_level level, const char *component, const char *msg, void *data) {
  char ts[KCR_TIME_BUFSIZE];
  kcr_op_log_format fmt = *(const kcr_op_log_format *)data;
  if (kcr_time_format(kcr_clock_wall(kcr_clock_system()), KCR_TIME_MICRO, ts, sizeof ts) < 0) {
    ts[0] = '\0';
  }
  if (fmt == KCR_OP_LOG_JSON) {
    json_t *line = json_pack("{s:s, s:s, s:s, s:s}", "ts", ts, "level", kcr_log_level_name(level),
                             "logger", component ? component : "", "msg", msg ? msg : "");
    char *text = line ? json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (text) {
      fprintf(stderr, "%s\n", text);
    }
    free(text);
    json_decref(line);
  } else {
    fprintf(stderr, "%s\t%s\t%s\t%s\n", ts, kcr_log_level_name(level), component ? component : "",
            msg ? msg : "");
  }
}

int main(int argc, char **argv) {
  static kcr_op_log_format log_format;
  kcr_op_flags flags;
  kcr_config_options copts;
  kcr_rest_config_t *cfg = NULL;
  kcr_error_t err;
  char msg[512];

  if (kcr_op_flags_parse(argc, argv, environ, &flags, msg, sizeof msg) < 0) {
    fprintf(stderr, "kcr-operator: %s\nRun 'kcr-operator --help' for usage.\n", msg);
    return 2;
  }
  if (flags.show_help) {
    kcr_op_flags_usage(stdout, "kcr-operator");
    return 0;
  }
  if (flags.show_version) {
    printf("kcr-operator %s (libkcr %s)\n", KCR_OPERATOR_VERSION, kcr_version_string());
    return 0;
  }
  log_format = flags.log_format;
  kcr_log_set_handler(on_log, &log_format);
  kcr_log_set_level(flags.log_level);

  memset(&copts, 0, sizeof copts);
  copts.kubeconfig = flags.kubeconfig;
  kcr_error_clear(&err);
  if (kcr_rest_config_load(&copts, &cfg, &err) < 0) {
    kcr_log(KCR_LOG_ERROR, "setup", "unable to load the REST config: %s", err.message);
    return 1;
  }
  kcr_log(KCR_LOG_INFO, "setup", "REST config from %s: server %s, namespace %s",
          kcr_rest_config_source(cfg), kcr_rest_config_server(cfg), kcr_rest_config_namespace(cfg));
  kcr_log(KCR_LOG_INFO, "setup",
          "settings: watch namespace %s, leader election %s (lease %s), metrics %s, probes %s, "
          "%d concurrent reconciles",
          flags.watch_namespace ? flags.watch_namespace : "(all)",
          flags.leader_elect ? "on" : "off", flags.leader_election_id, flags.metrics_bind_address,
          flags.health_probe_bind_address, flags.max_concurrent_reconciles);
  /* NOT YET: the manager and the App controller arrive with the controller layer. */
  kcr_log(KCR_LOG_ERROR, "setup",
          "the reconcile loop is not built yet: it arrives with kcr's controller and manager "
          "layer; exiting");
  kcr_rest_config_unref(cfg);
  return 1;
}
