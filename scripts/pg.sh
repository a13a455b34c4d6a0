#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for tests, from Debian's `postgresql` package (no containers).
#
#   eval "$(scripts/pg.sh start)"   # prints export lines: SCRIBEHOOK_TEST_PG_DSN, SCRIBEHOOK_PG_DIR
#   go test ./store/postgres/
#   scripts/pg.sh stop               # stops the cluster of $SCRIBEHOOK_PG_DIR and deletes it
#
#   scripts/pg.sh run -- go test -race ./...   # start, run the command with the DSN, stop
#
# The cluster lives in a new temporary directory, listens on a free loopback port and keeps
# its unix socket in that directory, so it never meets a system cluster nor another test run.
# It trusts every local connection and, unless PG_FSYNC=on, runs with fsync off: it holds only
# test data and is deleted afterwards (PG_FSYNC=on is for measuring throughput as a real server
# would commit). initdb refuses to run as root, so as root the cluster belongs to the
# `postgres` user (created by the Debian package) or, without it, to a user made for it.
#
# Environment: PG_BIN (directory of initdb and pg_ctl; default: the newest
# /usr/lib/postgresql/*/bin), PG_DB (database name, default scribehook_test), PG_FSYNC (off by
# default; on keeps PostgreSQL's durable defaults).
set -euo pipefail

PG_DB=${PG_DB:-scribehook_test}
PG_FSYNC=${PG_FSYNC:-off}
PG_USER=scribehook

die() { echo "pg.sh: $*" >&2; exit 1; }

pg_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$d" ] && [ -x "$d/initdb" ] ||
    die "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin: apt-get install -y postgresql"
  echo "$d"
}

# owner is the user the cluster runs as: ourselves, or a non-root user when we are root.
owner() {
  if [ "$(id -u)" -ne 0 ]; then id -un; return; fi
  if id postgres >/dev/null 2>&1; then echo postgres; return; fi
  id scribehook-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin scribehook-pg
  echo scribehook-pg
}

# as runs a command as the cluster's owner.
as() {
  local who=$1; shift
  if [ "$(id -un)" = "$who" ]; then "$@"; else runuser -u "$who" -- "$@"; fi
}

# port_free: nothing accepts connections on 127.0.0.1:$1 (bash's /dev/tcp, no extra tools).
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  local bin who dir port durability tries=0
  case "$PG_FSYNC" in
    off) durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off" ;;
    on) durability="" ;;
    *) die "PG_FSYNC must be on or off (got $PG_FSYNC)" ;;
  esac
  bin=$(pg_bin)
  who=$(owner)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/scribehook-pg.XXXXXX")
  chmod 0755 "$dir"
  mkdir "$dir/data" "$dir/run" "$dir/log"
  chown "$who" "$dir/data" "$dir/run" "$dir/log"
  # -A trust: connections come only from this machine's loopback and socket, to test data.
  as "$who" "$bin/initdb" -D "$dir/data" -U "$PG_USER" -A trust -E UTF8 --locale=C --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"; }
  while :; do
    tries=$((tries + 1))
    port=$((20000 + RANDOM % 30000))
    port_free "$port" || continue
    # Another process may take the port between the check and the bind: try another then.
    if as "$who" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log/server.log" -w -t 30 start -o \
      "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$dir/run \
       -c max_connections=200 $durability" \
      >"$dir/pg_ctl.log" 2>&1; then
      break
    fi
    if [ "$tries" -ge 5 ]; then
      cat "$dir/pg_ctl.log" "$dir/log/server.log" >&2 || true
      rm -rf "$dir"
      die "could not start PostgreSQL"
    fi
  done
  as "$who" "$bin/createdb" -h "$dir/run" -p "$port" -U "$PG_USER" "$PG_DB" ||
    { stop_dir "$dir"; die "createdb failed"; }
  echo "$port" >"$dir/port"
  echo "export SCRIBEHOOK_PG_DIR='$dir'"
  echo "export SCRIBEHOOK_TEST_PG_DSN='postgres://$PG_USER@127.0.0.1:$port/$PG_DB?sslmode=disable'"
}

stop_dir() {
  local dir=$1 bin who
  [ -d "$dir" ] || return 0
  # Only a directory this script made: never delete anything else named by the variable.
  [ -f "$dir/data/PG_VERSION" ] || [ -f "$dir/initdb.log" ] || die "$dir is not a pg.sh cluster"
  bin=$(pg_bin)
  who=$(stat -c %U "$dir/data" 2>/dev/null || owner)
  if [ -f "$dir/data/postmaster.pid" ]; then
    as "$who" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

stop() {
  local dir=${1:-${SCRIBEHOOK_PG_DIR:-}}
  [ -n "$dir" ] || die "stop: give the directory or set SCRIBEHOOK_PG_DIR (printed by start)"
  stop_dir "$dir"
}

run() {
  [ "${1:-}" = "--" ] && shift
  [ $# -gt 0 ] || die "run: give a command, e.g. scripts/pg.sh run -- go test ./store/..."
  local env
  env=$(start)
  eval "$env"
  # The cluster goes away however the command ends.
  trap 'stop_dir "$SCRIBEHOOK_PG_DIR"' EXIT
  trap 'exit 130' INT TERM
  echo "pg.sh: PostgreSQL at $SCRIBEHOOK_TEST_PG_DSN" >&2
  "$@"
}

case "${1:-}" in
  start) start ;;
  stop) shift; stop "$@" ;;
  run) shift; run "$@" ;;
  *) die "usage: $0 start | stop [DIR] | run -- COMMAND..." ;;
esac
