#!/usr/bin/env bash
# Contract test of the sandbox against the service's official JavaScript SDK (@gladiaio/sdk,
# pinned by e2e/sdk/package-lock.json): installs it with npm ci, builds the launcher (sandbox,
# file server and serve on loopback), and runs e2e/sdk/test.mjs. Node.js 20 or later.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

command -v node >/dev/null || { echo "sdk-test: node and npm are needed (Node.js 20 or later)" >&2; exit 1; }
(cd e2e/sdk && npm ci --no-audit --no-fund --loglevel=error)
go build -tags sqlite_fts5 -o e2e/sdk/.bin/launch ./e2e/sdk/launch
SDK_LAUNCHER="$PWD/e2e/sdk/.bin/launch" exec node e2e/sdk/test.mjs "$@"
