#!/usr/bin/env bash
# Slow clients and a connection flood on loopback: 1,000 idle connections, 100 clients sending
# their headers a byte a second and 20 sending a body a KiB a second, from many loopback
# addresses (200 each, under serve's cap of 256 per address), held past serve's timeouts (10 s
# for the headers, 60 s for a body) while ordinary callbacks keep coming; one more address opens
# 276 connections. Memory must stay under 150 MiB, ordinary callbacks must be answered, serve
# must close the slow connections, answer exactly the 20 past the cap with 429, and its
# goroutine count must come back to where it was. Flags of `load fault slow` pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
work_dir
build_tools
run_fault slow "see the reason above" "$@"
