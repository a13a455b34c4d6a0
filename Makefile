SHELL := /bin/bash
GO ?= go
# Build tags of every build and test: sqlite_fts5 compiles SQLite's FTS5 into mattn/go-sqlite3,
# which full-text search needs (docs/store.md, Search). TAGS=... adds others.
TAGS ?= sqlite_fts5
GOTAGS = -tags '$(TAGS)'

# Debian packages the tests need; scripts/deps.sh installs the missing ones.
TEST_PACKAGES := gcc libc6-dev pkgconf redis-server nats-server postgresql ffmpeg \
	libpocketsphinx-dev pocketsphinx-en-us flite pocketsphinx-testdata \
	podman buildah runc file systemd ca-certificates curl haproxy

.PHONY: test deps build demo fuzz ui-test image-test weed

deps:
	@scripts/deps.sh $(TEST_PACKAGES)

build:
	$(GO) build $(GOTAGS) ./...

# The Go tests run against a throwaway PostgreSQL cluster (scripts/pg.sh), real Redis and NATS
# servers the tests start themselves, a real S3 server (weed, built by scripts/weed.sh), then
# the example programs (their own modules), the offline speech engine (build tag pocketsphinx:
# flite speech, LibriVox clips, live latency, and the demo hearing its own sample within 10 %
# WER), the dashboard's browser tests in headless Chromium,
# the official JavaScript SDK against the sandbox,
# then every fuzz target briefly (its committed seed corpus and a few seconds of new inputs),
# then the fault scenarios in their bounded form (kill -9, dead webhook, full disk, slow clients),
# then two replicas on PostgreSQL and each broker: one killed, then the broker restarted,
# then the container image (static binary, built with buildah, run read-only as uid 65532 with
# podman, a real callback through the sandbox; two replicas of it on PostgreSQL and Redis behind
# HAProxy) and the systemd unit (systemd-analyze).
test: deps
	$(GO) vet $(GOTAGS) ./...
	@# The blob sink's S3 server (seaweedfs's weed, 3-4 min the first time, cached after); a
	@# failed build only makes those tests skip.
	-scripts/weed.sh >/dev/null
	scripts/pg.sh run -- $(GO) test $(GOTAGS) -race -count=1 ./...
	for d in examples/*/; do (cd $$d && $(GO) vet $(GOTAGS) ./... && $(GO) test $(GOTAGS) -race -count=1 ./...) || exit 1; done
	$(GO) test -race -count=1 -tags '$(TAGS) pocketsphinx' ./sandbox/...
	$(GO) test -count=1 -tags '$(TAGS) pocketsphinx' -run Demo ./cmd/scribehook
	scripts/ui-test.sh
	scripts/sdk-test.sh
	scripts/fuzz.sh -t 8s -T 6m
	$(MAKE) --no-print-directory fault
	scripts/fault-replicas.sh
	scripts/image-test.sh

ui-test:
	@scripts/ui-test.sh

weed:
	@scripts/weed.sh

# The container image and the systemd unit (about 10 s once built; IMAGE_TEST_MODE=chroot
# tests the static binary in a chroot instead, without podman).
image-test:
	@scripts/image-test.sh

# Runs of every fuzz target (longer: FUZZTIME=5m make fuzz); make test runs a bounded smoke run.
FUZZTIME ?= 20s
fuzz:
	@scripts/fuzz.sh -t $(FUZZTIME)

# Installs what the demo needs when missing (a C compiler; pocketsphinx and its English model for
# real recognition, else the scripted engine), then runs scribehook demo. DEMO_FLAGS=--fast skips
# the live session's real-time pacing.
demo:
	@GO="$(GO)" scripts/demo.sh $(DEMO_FLAGS)

# The load runs behind docs/benchmarks.md ("serve under load"); minutes each, not for CI.
.PHONY: bench fault
bench:
	$(GO) run $(GOTAGS) ./bench/load ingest
	$(GO) run $(GOTAGS) ./bench/load ingest -rate 1000 -n 30000 -bare=false
	$(GO) run $(GOTAGS) ./bench/load fanout -rate 100 -n 3000
	$(GO) run $(GOTAGS) ./bench/load big

# Fault scenarios (about 4 minutes; fault-diskfull needs root and says SKIPPED otherwise).
# make test runs them; FAULT_KILL_N=20000 is the full kill scenario of docs/benchmarks.md.
FAULT_KILL_N ?= 5000
fault:
	FAULT_KILL_N=$(FAULT_KILL_N) scripts/fault-kill.sh
	scripts/fault-webhook-down.sh
	scripts/fault-diskfull.sh
	scripts/fault-slow.sh
