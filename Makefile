SHELL := /bin/bash
GO ?= go

# Debian packages the tests need; scripts/deps.sh installs the missing ones.
TEST_PACKAGES := gcc libc6-dev pkgconf redis-server nats-server

.PHONY: test deps build demo fuzz

deps:
	@scripts/deps.sh $(TEST_PACKAGES)

build:
	$(GO) build ./...

test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

# Short runs of every fuzz target (longer: FUZZTIME=5m make fuzz).
FUZZTIME ?= 20s
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

# Installs what the demo needs when missing (a C compiler; pocketsphinx and its English model for
# real recognition, else the scripted engine), then runs scribehook demo. DEMO_FLAGS=--fast skips
# the live session's real-time pacing.
demo:
	@GO="$(GO)" scripts/demo.sh $(DEMO_FLAGS)
