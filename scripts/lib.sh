# Sourced by the fault scripts (after `set -euo pipefail` and a cd to the checkout): the work
# directory, the two builds and the verdict of one `load fault` run, which each of them wrote
# out on its own before.

# work_dir sets tmp to a new directory, removed when the script exits. A script with more to
# undo sets its own EXIT trap afterwards, which removes "$tmp" too.
work_dir() {
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}

# build_tools builds serve and the load tool into $tmp, as scribehook and load.
build_tools() {
  # sqlite_fts5: the search index, as every build of serve (Makefile TAGS).
  go build -tags sqlite_fts5 -o "$tmp/scribehook" ./cmd/scribehook
  go build -tags sqlite_fts5 -o "$tmp/load" ./bench/load
}

# run_fault NAME HINT [ARG...] runs `load fault NAME` against the built serve in $tmp/run with
# the ARGs; if it fails, it says "fault-NAME: FAILED (HINT)" on standard error and exits 1.
run_fault() {
  local name=$1 hint=$2
  shift 2
  if ! "$tmp/load" fault "$name" -bin "$tmp/scribehook" -dir "$tmp/run" "$@"; then
    echo "fault-$name: FAILED ($hint)" >&2
    exit 1
  fi
}
