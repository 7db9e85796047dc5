/* SPDX-License-Identifier: MIT */
/* kcr/kcr.h: the umbrella header; includes every public kcr header. */
#ifndef KCR_KCR_H
#define KCR_KCR_H

#include "kcr/backoff.h"
#include "kcr/base64.h"
#include "kcr/buf.h"
#include "kcr/clock.h"
#include "kcr/common.h"
#include "kcr/error.h"
#include "kcr/log.h"
#include "kcr/rand.h"
#include "kcr/time.h"

#endif /* KCR_KCR_H */
