# ContainerKit — the two commands a fresh clone needs: `make run` and `make test`.
SWIFT ?= swift
BIN := .build/debug/containerkit
CONTAINER ?= Containers/GTM-MUSIC01.json
EVENTS ?= Containers/events/music-session.jsonl
BRAZE_CLASS_PATH := com.appboy.googletagmanager.BrazeGtmTagProvider

.PHONY: all build run test bench lint format format-check clean

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

lint: build
	$(BIN) lint Containers

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

format-check:
	$(SWIFT) format lint --recursive Package.swift Sources Tests

clean:
	rm -rf .build
