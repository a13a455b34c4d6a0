SHELL := /bin/bash
GO ?= go

# Debian packages the tests need; scripts/deps.sh installs the missing ones.
TEST_PACKAGES := gcc libc6-dev pkgconf redis-server nats-server postgresql \
	libpocketsphinx-dev pocketsphinx-en-us flite pocketsphinx-testdata

.PHONY: test deps build demo fuzz ui-test

deps:
	@scripts/deps.sh $(TEST_PACKAGES)

build:
	$(GO) build ./...

# The Go tests run against a throwaway PostgreSQL cluster (scripts/pg.sh), real Redis and NATS
# servers the tests start themselves, then the dashboard's browser tests in headless Chromium,
# the offline speech engine (build tag pocketsphinx: flite speech, LibriVox clips, live latency),
# then every fuzz target briefly (its committed seed corpus and a few seconds of new inputs).
test: deps
	$(GO) vet ./...
	scripts/pg.sh run -- $(GO) test -race -count=1 ./...
	$(GO) test -race -count=1 -tags pocketsphinx ./sandbox/...
	scripts/ui-test.sh
	scripts/fuzz.sh -t 10s -T 3m

ui-test:
	@scripts/ui-test.sh

# Runs of every fuzz target (longer: FUZZTIME=5m make fuzz); make test runs a bounded smoke run.
FUZZTIME ?= 20s
fuzz:
	@scripts/fuzz.sh -t $(FUZZTIME)

# Installs what the demo needs when missing (a C compiler; pocketsphinx and its English model for
# real recognition, else the scripted engine), then runs scribehook demo. DEMO_FLAGS=--fast skips
# the live session's real-time pacing.
demo:
	@GO="$(GO)" scripts/demo.sh $(DEMO_FLAGS)
