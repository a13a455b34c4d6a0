#!/usr/bin/env bash
# The webhook sink's target goes down (its port closed) for 10 s during a load, then comes
# back: every event must still reach it, with no dead letter, and the file sink beside it must
# keep its latency meanwhile. Flags of `load fault webhook-down` pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
work_dir
build_tools
run_fault webhook-down "see the reason above" "$@"
