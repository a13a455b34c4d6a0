# scribehook serve in a container: a static binary (cgo SQLite included) on an empty base,
# running as uid 65532, with a read-only root file system and its state in the /data volume.
#
#   docker build -t scribehook .
#   docker run --read-only --tmpfs /tmp -v scribehook-data:/data -p 8787:8787 \
#     -e SCRIBEHOOK_PUBLIC_URL=https://hooks.example.com -e SCRIBEHOOK_API_KEY -e SCRIBEHOOK_READ_TOKEN \
#     scribehook
#
# docs/operations.md ("Container image") has the rest; scripts/image-test.sh builds and runs it
# in `make test`.

FROM golang:1.26-bookworm AS build
# gcc and the static glibc come with the image; the CA bundle too (ca-certificates).
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    deploy/image/rootfs.sh /rootfs && mkdir /data

FROM scratch
COPY --from=build /rootfs/ /
# COPY makes everything root's; the volume's directory must be the user's (a named volume
# starts as a copy of it, owner included).
COPY --from=build --chown=65532:65532 /data /data
ENV SCRIBEHOOK_CONFIG=/etc/scribehook/scribehook.yaml \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
# SQLite's temporary files (a migration's sort of a whole table, VACUUM's copy of the whole
# database) on the volume, sized like the database, not in a /tmp tmpfs, which is memory.
ENV SQLITE_TMPDIR=/data
USER 65532:65532
WORKDIR /data
VOLUME /data
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/scribehook", "healthcheck"]
# serve stops on SIGTERM within its shutdown timeout (20 s): give `docker stop` more (-t 30).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/scribehook"]
CMD ["serve"]
