/* SPDX-License-Identifier: MIT */
/*
 * kcr/kcr.h: the umbrella header; includes every public kcr header except
 * kcr/testing.h, the test kit (fake client, test reconcile context, test env),
 * which a test includes on its own. scripts/check-includes.sh keeps this list
 * complete.
 */
#ifndef KCR_KCR_H
#define KCR_KCR_H

#include "kcr/apierror.h"
#include "kcr/auth.h"
#include "kcr/backoff.h"
#include "kcr/base64.h"
#include "kcr/buf.h"
#include "kcr/cache.h"
#include "kcr/client.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/config.h"
#include "kcr/controller.h"
#include "kcr/controllerutil.h"
#include "kcr/crd.h"
#include "kcr/delta_fifo.h"
#include "kcr/discovery.h"
#include "kcr/error.h"
#include "kcr/events.h"
#include "kcr/informer.h"
#include "kcr/leaderelection.h"
#include "kcr/log.h"
#include "kcr/loop.h"
#include "kcr/manager.h"
#include "kcr/meta.h"
#include "kcr/meta_v1.h"
#include "kcr/metrics.h"
#include "kcr/objclient.h"
#include "kcr/otlp.h"
#include "kcr/rand.h"
#include "kcr/ratelimiter.h"
#include "kcr/scheme.h"
#include "kcr/server.h"
#include "kcr/shard_member.h"
#include "kcr/sharding.h"
#include "kcr/store.h"
#include "kcr/time.h"
#include "kcr/trace.h"
#include "kcr/typed.h"
#include "kcr/types.h"
#include "kcr/watch.h"
#include "kcr/webhook.h"
#include "kcr/workqueue.h"

#endif /* KCR_KCR_H */
