#!/usr/bin/env bash
# kill -9 of serve at random moments of a 20,000-callback load, three times, restarted each
# time: every delivery answered 2xx must be stored and processed, every event must reach the
# file sink and the webhook sink at least once, and no delivery may be applied twice.
# Bounded runs: FAULT_KILL_N=5000 scripts/fault-kill.sh; other flags of `load fault kill` pass
# through (-seed N reproduces a run's kill moments).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/scribehook" ./cmd/scribehook
go build -o "$tmp/load" ./bench/load
if ! "$tmp/load" fault kill -bin "$tmp/scribehook" -dir "$tmp/run" -n "${FAULT_KILL_N:-20000}" "$@"; then
  echo "fault-kill: FAILED (see the reason above; the run's directory is removed, rerun with -keep -dir DIR to inspect it)" >&2
  exit 1
fi
