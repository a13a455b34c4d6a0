#!/bin/sh
# Builds the container image's file system into DIR: the static scribehook binary, /etc/passwd
# and /etc/group with the non-root user (uid and gid 65532), the CA certificates, the
# configuration, and /tmp (a mount point for a tmpfs). The volume's directory /data is not in
# it: the Dockerfile makes that one apart, owned by the user (COPY makes everything else root's).
# The Dockerfile's build stage runs it, and scripts/image-test.sh runs it on the host, so what is
# tested is what the image holds. Run from the repository root; needs go, gcc and the static C
# library (Debian: gcc, libc6-dev) and /etc/ssl/certs/ca-certificates.crt.
#
#   deploy/image/rootfs.sh DIR
set -eu
dir=${1:?usage: deploy/image/rootfs.sh DIR}
go=${GO:-go}

# cgo for mattn/go-sqlite3, linked statically: osusergo and netgo keep glibc's NSS (user and
# host look-ups, which cannot be static) out; load_extension is left out, as it needs dlopen;
# sqlite_fts5 compiles FTS5 in, for full-text search.
mkdir -p "$dir/etc/scribehook" "$dir/etc/ssl/certs" "$dir/tmp"
CGO_ENABLED=1 "$go" build -trimpath \
	-tags 'osusergo netgo sqlite_omit_load_extension sqlite_fts5' \
	-ldflags '-linkmode external -extldflags "-static" -s -w' \
	-o "$dir/scribehook" ./cmd/scribehook

cat >"$dir/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
scribehook:x:65532:65532:scribehook:/data:/sbin/nologin
PASSWD
cat >"$dir/etc/group" <<'GROUP'
root:x:0:
scribehook:x:65532:
GROUP
cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/ca-certificates.crt"
cp deploy/image/scribehook.yaml "$dir/etc/scribehook/scribehook.yaml"
chmod 1777 "$dir/tmp"
