#!/usr/bin/env bash
# Slow clients and a connection flood on loopback: 1,000 idle connections, 100 clients sending
# their headers a byte a second and 20 sending a body a KiB a second, held past serve's 60 s
# read timeout while ordinary callbacks keep coming. Memory must stay under 150 MiB, ordinary
# callbacks must be answered, serve must close the slow connections, and its goroutine count
# must come back to where it was. Flags of `load fault slow` pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/scribehook" ./cmd/scribehook
go build -o "$tmp/load" ./bench/load
if ! "$tmp/load" fault slow -bin "$tmp/scribehook" -dir "$tmp/run" "$@"; then
  echo "fault-slow: FAILED (see the reason above)" >&2
  exit 1
fi
