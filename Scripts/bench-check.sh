#!/bin/bash
# The evaluation's instruction budget: counts the instructions per evaluated event of the evaluation benchmark
# under callgrind (Scripts/count-eval-instructions.sh: the same binary gives the same count on every run, on a
# busy machine too) and fails when the count rises past the checked-in threshold, as swift-nio's benchmark
# thresholds do. Usage, from the package root:
#
#   Scripts/bench-check.sh            # build (release), count, compare; exit 1 past the threshold
#   Scripts/bench-check.sh --update   # build, count, and write the count as the new threshold
#
# The thresholds file holds the count recorded for main and the tolerance above it; a change that makes the
# evaluation cheaper lowers the recorded count with --update (in the same commit), so that the budget follows.
set -euo pipefail
cd "$(dirname "$0")/.."
thresholds=Benchmarks/Thresholds/evaluation.json
binary=.build/release/containerkit-bench
swift build -c release --product containerkit-bench > /dev/null
start=$(date +%s)
output=$(EVENTS=${EVENTS:-2000} PASSES=${PASSES:-2} Scripts/count-eval-instructions.sh "$binary")
measured=$(sed -n 's/^instructions_per_event=//p' <<< "$output")
share=$(sed -n 's/^retain_release_share=//p' <<< "$output")
seconds=$(( $(date +%s) - start ))
recorded=$(sed -n 's/.*"instructions_per_event" *: *\([0-9]*\).*/\1/p' "$thresholds")
tolerance=$(sed -n 's/.*"tolerance_percent" *: *\([0-9]*\).*/\1/p' "$thresholds")
if [[ -z $measured || -z $recorded || -z $tolerance ]]; then
    echo "bench-check: could not read the count ('$measured') or $thresholds" >&2
    exit 1
fi
limit=$(( recorded + recorded * tolerance / 100 ))
if [[ ${1:-} == --update ]]; then
    printf '{\n  "instructions_per_event" : %s,\n  "tolerance_percent" : %s\n}\n' "$measured" "$tolerance" > "$thresholds"
    echo "bench-check: recorded instructions_per_event=$measured in $thresholds (was $recorded)"
    exit 0
fi
echo "instructions_per_event=$measured recorded=$recorded limit=$limit retain_release_share=$share (${seconds}s)"
if (( measured > limit )); then
    echo "bench-check: FAILED: the evaluation takes $measured instructions per event, past the threshold $limit" \
        "($recorded recorded in $thresholds, +$tolerance %)" >&2
    exit 1
fi
if (( measured * 100 < recorded * (100 - tolerance) )); then
    echo "bench-check: the evaluation got cheaper than recorded: run Scripts/bench-check.sh --update to lower the" \
        "threshold"
fi
