#!/usr/bin/env bash
# Builds the libFuzzer harnesses in Fuzz/Harnesses (outside the package's targets: `swift build` and
# `make test` never compile them) and runs each for FUZZ_SECONDS seconds with AddressSanitizer and leak
# detection. Fails on any crash, leak, timeout or out-of-memory; the input that caused it is kept in
# .build/fuzz/artifacts/ (copy it into Fuzz/Seeds/<harness>/crash-<what>, which FuzzSeedReplayTests replays, and
# add a focused test next to the code it broke; see Fuzz/README.md).
#
#   make fuzz FUZZ_SECONDS=300                 # every harness, 300 s each
#   FUZZ_TARGETS="regex loader" Fuzz/fuzz.sh   # some of them
#
# Seeds: Fuzz/Seeds/<harness>/, Containers/, and the shared corpus (../shared/research/corpus) when present.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-"loader push regex previewurl eventsline queuerecord httpanswer sessionlog batchbody pgrow"}
SWIFTC=${SWIFTC:-swiftc}
OUT=.build/fuzz
mkdir -p "$OUT/artifacts"
FLAGS=(-sanitize=fuzzer,address -parse-as-library -package-name containerkit -enable-testing -swift-version 6
    -O -g -I "$OUT")
# The package's modules build with the upcoming features Package.swift turns on for every target (their imports are
# written for InternalImportsByDefault); the stubs and harnesses, like the example's files, without them.
UPCOMING=(-enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility
    -enable-upcoming-feature InternalImportsByDefault)
quiet() { grep -v "ld.gold: warning: Cannot export local symbol" || true; }

REBUILT=""  # set once a module is rebuilt: every module after it imports it and is rebuilt too
build_module() {  # name, sources directory, libraries it needs
    local name=$1 dir=$2
    shift 2
    local stamp="$OUT/lib$name.a"
    if [ -z "$REBUILT" ] && [ -f "$stamp" ] &&
        [ -z "$(find "$dir" Fuzz/fuzz.sh -newer "$stamp" -name '*.swift' -o -newer "$stamp" -name fuzz.sh)" ]; then
        return 0
    fi
    REBUILT=1
    echo "fuzz: building $name" >&2
    local features=()
    case $dir in Sources/*) features=("${UPCOMING[@]}") ;; esac
    # shellcheck disable=SC2046
    "$SWIFTC" "${FLAGS[@]}" "${features[@]}" -wmo -emit-library -static -emit-module -module-name "$name" \
        -emit-module-path "$OUT/$name.swiftmodule" -o "$stamp" $(find "$dir" -name '*.swift' | sort) "$@" 2>&1 | quiet
    [ -f "$stamp" ] || { echo "fuzz: building $name failed" >&2; exit 1; }
}

build_module ContainerKitSupport Sources/ContainerKitSupport
build_module ContainerKitHTTP Sources/ContainerKitHTTP
build_module ContainerKit Sources/ContainerKit
build_module ContainerKitDelivery Sources/ContainerKitDelivery
build_module ContainerKitBraze Sources/ContainerKitBraze
build_module ContainerKitDiff Sources/ContainerKitDiff
build_module ContainerKitLint Sources/ContainerKitLint
build_module ContainerKitBrazeLint Sources/ContainerKitBrazeLint
build_module ContainerKitCLI Sources/ContainerKitCLI
# The testing helpers: `sessionlog` writes lines in the earlier session files' format with LegacySessionFileWriter.
build_module ContainerKitTesting Sources/ContainerKitTesting
# Stand-ins for the few Hummingbird and NIOCore types that the TagService files compiled into `batchbody` name.
build_module NIOCore Fuzz/Stubs/NIOCore
build_module Hummingbird Fuzz/Stubs/Hummingbird

# Source files outside Sources/ compiled into a harness beside it (files of an example whose imports are stubbed).
extra_sources() {
    case $1 in
    batchbody)
        local core=Examples/TagService/Sources/TagServiceCore
        echo "$core/BatchRequest.swift $core/EventRequest.swift $core/APIError.swift $core/Readiness.swift $core/JSONSpans.swift $core/UserIDRules.swift"
        ;;
    esac
}

harness_options() {  # libFuzzer options of one harness (none has any today)
    case $1 in
    *) ;;
    esac
}

corpus_dirs() {  # seed directories for a harness
    echo "Fuzz/Seeds/$1"
    case $1 in
    loader | push)
        echo Containers
        [ -d ../shared/research/corpus ] && find ../shared/research/corpus -mindepth 1 -maxdepth 1 -type d
        ;;
    eventsline) echo Containers/events ;;
    esac
}

status=0
for target in $TARGETS; do
    binary="$OUT/$target"
    extra=$(extra_sources "$target")
    # shellcheck disable=SC2086
    if [ ! -x "$binary" ] || [ -n "$(find Fuzz/Harnesses $extra "$OUT"/*.a -newer "$binary" 2>/dev/null)" ]; then
        echo "fuzz: building harness $target" >&2
        rm -f "$binary"  # a build that fails must not leave the last one to run
        # Synchronization and FoundationNetworking by name: the package's modules import them internally, so no harness
        # autolinks them.
        # shellcheck disable=SC2086
        "$SWIFTC" "${FLAGS[@]}" Fuzz/Harnesses/FuzzSupport.swift "Fuzz/Harnesses/$target.swift" $extra \
            -L "$OUT" -lContainerKitTesting -lContainerKitCLI -lContainerKitBrazeLint -lContainerKitLint -lContainerKitDiff \
            -lContainerKitBraze -lContainerKitDelivery -lContainerKit -lContainerKitHTTP -lContainerKitSupport -lHummingbird -lNIOCore -lswiftSynchronization -lFoundationNetworking -o "$binary" 2>&1 | quiet
        [ -x "$binary" ] || { echo "fuzz: building harness $target failed" >&2; exit 1; }
    fi
    mkdir -p "$OUT/corpus/$target"
    log="$OUT/$target.log"
    # SWIFT_BACKTRACE: without it a trap starts Swift's backtracer, which can hold the run for minutes.
    # shellcheck disable=SC2046
    SWIFT_BACKTRACE=enable=no LSAN_OPTIONS="suppressions=$PWD/Fuzz/lsan.supp:print_suppressions=0" \
        "$binary" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 \
        $(harness_options "$target") \
        -dict="Fuzz/Dictionaries/$target.dict" -artifact_prefix="$OUT/artifacts/$target-" \
        "$OUT/corpus/$target" $(corpus_dirs "$target") >"$log" 2>&1
    code=$?
    runs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    echo "fuzz_${target}_executions=${runs:-0} exit=$code"
    if [ $code -ne 0 ]; then
        status=1
        echo "fuzz: $target failed; see $log and $OUT/artifacts/" >&2
        grep -aE "ERROR|SUMMARY|Fatal error|precondition" "$log" | head -5 >&2
    fi
done
exit $status
