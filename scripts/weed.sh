#!/usr/bin/env bash
# Builds SeaweedFS's weed, the S3-compatible server of the blob sink's tests (sinks/blobsink,
# TestBlobSinkWritesTheJobToS3), into a cache directory when it is not there yet, and prints
# its path. internal/testinfra finds it there (or in $SCRIBEHOOK_WEED, or weed in PATH); without
# it those tests skip.
#
#   scripts/weed.sh            # build if missing (3-4 min on 2 cores, 233 MB), print the path
#
# `go install …@version` refuses the module (its go.mod has replace directives): the module is
# downloaded, then built inside its directory. The Go build cache makes a rebuild fast.
# Environment: WEED_CACHE (default $HOME/.cache/scribehook/weed), WEED_VERSION, GO.
set -euo pipefail

WEED_VERSION=${WEED_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}
WEED_CACHE=${WEED_CACHE:-$HOME/.cache/scribehook/weed}
GO=${GO:-go}
bin=$WEED_CACHE/weed

if [ -x "$bin" ] && [ -f "$WEED_CACHE/version" ] && [ "$(cat "$WEED_CACHE/version")" = "$WEED_VERSION" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$WEED_CACHE"
start=$(date +%s)
dir=$(cd "$WEED_CACHE" && GOFLAGS=-mod=mod "$GO" mod download -json "github.com/seaweedfs/seaweedfs@$WEED_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { echo "weed.sh: go mod download gave no directory" >&2; exit 1; }
(cd "$dir" && GOFLAGS=-mod=mod "$GO" build -o "$bin.tmp" ./weed)
mv "$bin.tmp" "$bin"
echo "$WEED_VERSION" > "$WEED_CACHE/version"
echo "weed.sh: built weed $WEED_VERSION in $(( $(date +%s) - start )) s" >&2
echo "$bin"
