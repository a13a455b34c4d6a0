#!/usr/bin/env bash
# The database's file system fills up while serve runs: callbacks must be answered 5xx (never
# 4xx, never 2xx without being stored) and accepted again once space returns; then serve is
# restarted on the file system remounted read-only, and again read-write.
# Needs root to mount a small tmpfs for the database; skipped, saying so, when it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
work_dir
db="$tmp/db"
mkdir -p "$db"
cleanup() {
  if mountpoint -q "$db"; then umount "$db" || umount -l "$db" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ "$(id -u)" -ne 0 ]; then
  echo "fault-diskfull: SKIPPED: needs root to mount a small tmpfs for the database (run as root)"
  exit 0
fi
if ! mount -t tmpfs -o size=128m tmpfs "$db" 2>"$tmp/mount.err"; then
  echo "fault-diskfull: SKIPPED: cannot mount a tmpfs here: $(cat "$tmp/mount.err")"
  exit 0
fi
build_tools
run_fault diskfull "see the reason above" -db-dir "$db" -remount "$@"
