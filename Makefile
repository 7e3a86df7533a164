# ContainerKit — the two commands a fresh clone needs: `make run` and `make test`.
SWIFT ?= swift
BIN := .build/debug/containerkit
CONTAINER ?= Containers/GTM-MUSIC01.json
EVENTS ?= Containers/events/music-session.jsonl
BRAZE_CLASS_PATH := com.appboy.googletagmanager.BrazeGtmTagProvider

.PHONY: all build run run-example test bench bench-check count-locks bench-service bench-cluster bench-pg-floor bench-dedup-floor test-example test-postgres lint format format-check clean fuzz tsan soak hostile

all: build

build:
	$(SWIFT) build

# The main job: run a bundled container over a bundled session of events and show what fires.
run: build
	$(BIN) run $(CONTAINER) --events $(EVENTS) --braze $(BRAZE_CLASS_PATH) --context app_id=com.example.music

# In parallel: the tests await progress (ContainerKitTesting's AwaitableState, ManualClock) instead of
# reading the wall clock, and run blocking work on threads of their own, so a busy machine only slows them.
test:
	$(SWIFT) test

# Release build; every figure is a ratio to a baseline measured in the same process.
bench:
	$(SWIFT) build -c release --product containerkit-bench
	.build/release/containerkit-bench

# How many times the package's mutexes are locked per durable push and per delivered batch (a debug build that
# counts them, in its own build directory): prints locks_per_durable_push= and locks_per_delivered_batch=.
count-locks:
	$(SWIFT) build --product containerkit-bench -Xswiftc -DCONTAINERKIT_COUNT_LOCKS --build-path .build/locks
	CONTAINERKIT_BENCH_ONLY=locks .build/locks/debug/containerkit-bench

# The evaluation's instruction budget: instructions per evaluated event of the evaluation benchmark, counted by
# callgrind (the same on a busy machine), against Benchmarks/Thresholds/evaluation.json; fails past it. After a
# change that makes the evaluation cheaper, `Scripts/bench-check.sh --update` records the new count.
bench-check:
	Scripts/bench-check.sh

# The example service (Examples/TagService) under load: wrk against POST /v1/events and GET /health of one
# server on 127.0.0.1, with a loopback /users/track stand-in; BENCH_ROUNDS rounds of BENCH_DURATION seconds each,
# the median round reported. BENCH_DEBUG_SIDE_BY_SIDE=1: what the live debug page costs (off, on, following another
# user), side by side in one run; BENCH_BIN=<dir> (TagService and users-track-stand-in) skips the builds.
bench-service:
	Examples/TagService/bench/bench-service.sh

# The example service on 127.0.0.1:8080 over the debug page's fixture container (GTM-DEBUG1), records to
# /tmp/tagservice/queue.jsonl, with its live debug page on http://127.0.0.1:8081/debug?token=$(DEBUG_TOKEN)
# (see Examples/TagService/README.md, "The debug page").
DEBUG_TOKEN ?= change-me-debug-token
run-example:
	mkdir -p /tmp/tagservice
	$(SWIFT) run --package-path Examples/TagService TagService \
		--containers Examples/TagService/Tests/TagServiceTests/Fixtures/debug-containers --queue /tmp/tagservice/queue \
		--debug-token $(DEBUG_TOKEN)

# The example service's own tests (a separate package with its own dependencies).
test-example:
	$(SWIFT) test --package-path Examples/TagService --no-parallel

# The PostgreSQL adapters (Examples/ContainerKitPostgres) against a throw-away PostgreSQL cluster that the tests
# start themselves on 127.0.0.1 (Debian's postgresql package; the server runs as the postgres user when root).
test-postgres:
	$(SWIFT) test --package-path Examples/ContainerKitPostgres --no-parallel

# Scale-out: PostgreSQL, nginx hashing the user id, three TagService instances (--postgres) and the /users/track
# stand-in on 127.0.0.1, against one local-queue instance; wrk through nginx for users seen before (_hot) and
# first events of new users (_cold), 20 kill -9 under load, an nginx reload, a 5-minute soak (BENCH_SOAK_SECONDS;
# the other knobs are in the script's header). Prints pg_cpu_us_per_event_hot=, pg_wal_bytes_per_event_cold=,
# events_per_commit_hot=, pg_round_trips_per_commit_hot=, pg_connections_opened_per_1000_events=, acked_lost=,
# session_continuity=, dead_tuples_after_soak=, cluster_vs_single_local=, …
bench-cluster:
	Examples/TagService/bench/bench-cluster.sh

# What PostgreSQL alone costs for the writes of a push (no service): a throw-away PostgreSQL on 127.0.0.1, pgbench
# committing groups of 64 events into five shapes of table, from the records alone to the shape the store uses
# (fenced record and session rows). Prints records_only_us_per_event=, one_row_fenced_us_per_event=,
# two_rows_fenced_us_per_event=, … and their WAL bytes per event (Docs/Scaling.md, "The floor").
bench-pg-floor:
	Examples/TagService/bench/pg-floor.sh

# What an event-ID check costs a push against the least it can cost: callgrind counts of the same check in plain C
# (Benchmarks/DedupFloor) and of ContainerKit's push with and without an ID. Prints dedup_floor_instructions_per_push=,
# containerkit_id_instructions_per_push=, containerkit_push_instructions= and both shares (Docs/Performance.md).
bench-dedup-floor:
	Scripts/dedup-floor.sh

# libFuzzer + AddressSanitizer harnesses (Fuzz/, outside the package's targets): each runs FUZZ_SECONDS seconds;
# fails on any crash, leak or timeout. FUZZ_TARGETS picks some of: loader push regex previewurl eventsline queuerecord
# httpanswer sessionlog batchbody pgrow.
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) Fuzz/fuzz.sh

# The concurrency tests under the thread sanitizer. CONTAINERKIT_TSAN swaps the package's Mutex for a pthread
# mutex the sanitizer understands (it cannot see Synchronization.Mutex on Linux); any report fails the run.
TSAN_FLAGS := --sanitize=thread -Xswiftc -DCONTAINERKIT_TSAN --build-path .build/tsan
TSAN_FILTER ?= ConcurrencyTests|ThreadConstantsTests|TurnMarkTests|AwaitableStateTests|DeliveryPipelineTests|SessionPersistenceTests|HTTPClientTests|HTTPResponseParserTests|SessionTurnstileTests|ContainerHolderMachineTests|HeadIndexQueueTests|ContainerFileWatcherTests|SessionConcurrencyTests|SessionStoreTests|DataLayerTests|AtomicReplacementTests|RefreshScheduleTests|OpenTests|ContainerCallbackTests|DelayedInitializationTests|HTTPContainerSourceTests|BoundedHTTPRequestTests|URLSessionHTTPTransportTests|SavedContainerStoreTests|PreviewModeTests|DurableQueue|AnalyticsSinkTests|BrazeUsersTrackDestinationTests|InMemoryQueue|DrainTests|RunAndOperationsTests|RuntimeObserverTests|EmbeddingGuideTests|EndToEndTests|LoopbackHTTPServerTests|RunCommandTests|PreviewCommandTests|PushCommitTests|RecordStoreConformanceTests|SessionCommitConformanceTests|SessionIndexTests|SessionCombiningTests|ThreadWakeupTests|BlockingCallTests
tsan:
	$(SWIFT) build --build-tests $(TSAN_FLAGS)
	Scripts/check-tsan-locks.sh .build/tsan/debug/ContainerKitPackageTests.xctest
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 $(TSAN_OPTIONS)" $(SWIFT) test --skip-build --no-parallel $(TSAN_FLAGS) --filter '$(TSAN_FILTER)'

# SOAK_CYCLES kill -9 cycles of `containerkit run --queue` delivering to a /users/track stand-in on 127.0.0.1,
# each cycle with SOAK_EVENTS fresh events, then a last run (fresh events too) that drains the queue; prints soak_acknowledged=, soak_lost= (must be 0), soak_delivered_twice=.
SOAK_CYCLES ?= 20
SOAK_EVENTS ?= 3000
soak:
	$(SWIFT) build --product containerkit
	$(SWIFT) build --product containerkit-soak
	.build/debug/containerkit-soak --cycles $(SOAK_CYCLES) --events $(SOAK_EVENTS) --binary $(BIN)

# Peak memory and time of preview and run --sink braze: against hostile servers on 127.0.0.1 (must stay
# under 64 MB and end within their deadlines).
hostile: build
	Fuzz/hostile.py $(BIN)

lint: build
	$(BIN) lint Containers

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests

format-check:
	$(SWIFT) format lint --recursive Package.swift Sources Tests

clean:
	rm -rf .build
