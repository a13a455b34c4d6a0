#!/usr/bin/env bash
# kill -9 of serve at random moments of a 20,000-callback load, three times, restarted each
# time: every delivery answered 2xx must be stored and processed, every event must reach the
# file sink and the webhook sink at least once, and no delivery may be applied twice.
# Bounded runs: FAULT_KILL_N=5000 scripts/fault-kill.sh; other flags of `load fault kill` pass
# through (-seed N reproduces a run's kill moments).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
work_dir
build_tools
run_fault kill "see the reason above; the run's directory is removed, rerun with -keep -dir DIR to inspect it" \
  -n "${FAULT_KILL_N:-20000}" "$@"
