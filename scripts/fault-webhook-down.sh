#!/usr/bin/env bash
# The webhook sink's target goes down (its port closed) for 10 s during a load, then comes
# back: every event must still reach it, with no dead letter, and the file sink beside it must
# keep its latency meanwhile. Flags of `load fault webhook-down` pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/scribehook" ./cmd/scribehook
go build -o "$tmp/load" ./bench/load
if ! "$tmp/load" fault webhook-down -bin "$tmp/scribehook" -dir "$tmp/run" "$@"; then
  echo "fault-webhook-down: FAILED (see the reason above)" >&2
  exit 1
fi
