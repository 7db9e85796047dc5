#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build kcr-otelcol, a minimal OpenTelemetry Collector (OTLP receiver over
# HTTP and gRPC, file exporter), from the Go tools module in tools/otelcol,
# into a cache outside the repository:
#
#   ${KCR_CACHE:-$HOME/.cache/kcr}/otelcol/<version>/bin/otelcol
#
# <version> is the otelcol module's version in tools/otelcol/go.mod. The build,
# its stamp, its lock and its cache are scripts/build-go-tool.sh's (tool name
# otelcol); a warm run only checks the stamp and prints the path.
#
# Usage: scripts/build-otelcol.sh [--quiet] [--force]
#   --quiet  print only the binary path (otelcol=PATH), no progress
#   --force  rebuild even if the cache looks current
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/build-go-tool.sh" "$@" otelcol
