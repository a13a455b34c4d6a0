#!/usr/bin/env bash
# End-to-end browser tests of the dashboard (receiver/internal/ui): installs Debian's chromium and
# npm's playwright-core when missing, builds the launcher (sandbox + serve on loopback), and runs
# e2e/ui/test.mjs. Screenshots land in e2e/ui/screenshots/ (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

if [ -z "${CHROMIUM:-}" ]; then
  scripts/deps.sh chromium
  export CHROMIUM=/usr/bin/chromium
fi
command -v node >/dev/null || { echo "ui-test: node and npm are needed (Node.js 20 or later)" >&2; exit 1; }
# playwright-core only: it never downloads a browser of its own.
(cd e2e/ui && npm ci --no-audit --no-fund --loglevel=error)
go build -tags sqlite_fts5 -o e2e/ui/.bin/launch ./e2e/ui/launch
UI_LAUNCHER="$PWD/e2e/ui/.bin/launch" exec node e2e/ui/test.mjs "$@"
