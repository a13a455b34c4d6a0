#!/usr/bin/env bash
# `make demo`: installs what the demo needs when it is missing, then runs `scribehook demo` with
# the best speech engine this machine can build. Arguments go to the demo (--fast, --out DIR).
#
# Needed in every case: Go, and a C compiler (the SQLite driver is cgo).
# Wanted: pocketsphinx and its English model, for real recognition (build tag pocketsphinx).
# Without them the demo runs with the scripted engine and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

if ! command -v "$GO" >/dev/null 2>&1; then
  echo "demo: Go is not installed (or not on PATH): install Go 1.26 or later from https://go.dev/dl/" >&2
  exit 1
fi

if ! scripts/deps.sh gcc libc6-dev; then
  if command -v gcc >/dev/null 2>&1; then
    echo "demo: could not check or install gcc and libc6-dev with apt-get; trying with the gcc found on PATH" >&2
  else
    echo "demo: a C compiler is needed (the SQLite driver uses cgo): install gcc and libc6-dev, or run make demo as root" >&2
    exit 1
  fi
fi

# sqlite_fts5: SQLite's full-text search (scribehook search), in every build.
tags=(-tags sqlite_fts5)
why=""
if scripts/deps.sh libpocketsphinx-dev pocketsphinx-en-us pkgconf; then
  if ! pkg-config --exists pocketsphinx sphinxbase 2>/dev/null; then
    why="pkg-config cannot find pocketsphinx and sphinxbase although their packages are installed"
  elif ! "$GO" build -tags 'sqlite_fts5 pocketsphinx' -o /dev/null ./cmd/scribehook; then
    why="the build with -tags pocketsphinx failed (see above)"
  else
    tags=(-tags 'sqlite_fts5 pocketsphinx')
  fi
else
  why="could not install libpocketsphinx-dev, pocketsphinx-en-us and pkgconf (see above)"
fi
if [ -n "$why" ]; then
  echo "demo: $why: running with the scripted engine (no real speech recognition)" >&2
fi

echo "$GO run${tags[*]:+ ${tags[*]}} ./cmd/scribehook demo${*:+ $*}"
exec "$GO" run "${tags[@]}" ./cmd/scribehook demo "$@"
