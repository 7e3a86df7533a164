# ContainerKit — the two commands a fresh clone needs: `make run` and `make test`.
SWIFT ?= swift
BIN := .build/debug/containerkit
CONTAINER ?= Containers/GTM-MUSIC01.json
EVENTS ?= Containers/events/music-session.jsonl
BRAZE_CLASS_PATH := com.appboy.googletagmanager.BrazeGtmTagProvider

.PHONY: all build run test bench bench-service test-example lint format format-check clean

all: build

build:
	$(SWIFT) build

# The main job: run a bundled container over a bundled session of events and show what fires.
run: build
	$(BIN) run $(CONTAINER) --events $(EVENTS) --braze $(BRAZE_CLASS_PATH) --context app_id=com.example.music

# Serial: on a 2-core machine, long synchronous tests running beside the network and queue tests would
# starve the concurrency pool those depend on (and serial is faster here anyway).
test:
	$(SWIFT) test --no-parallel

# Release build; every figure is a ratio to a baseline measured in the same process.
bench:
	$(SWIFT) build -c release --product containerkit-bench
	.build/release/containerkit-bench

# The example service (Examples/TagService) under load: wrk against POST /v1/events and GET /health of one
# server on 127.0.0.1, with a loopback /users/track stand-in; bounded (BENCH_DURATION seconds per run).
bench-service:
	Examples/TagService/bench/bench-service.sh

# The example service's own tests (a separate package with its own dependencies).
test-example:
	$(SWIFT) test --package-path Examples/TagService --no-parallel

lint: build
	$(BIN) lint Containers

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

format-check:
	$(SWIFT) format lint --recursive Package.swift Sources Tests

clean:
	rm -rf .build
