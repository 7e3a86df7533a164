#!/bin/bash
# Instructions per event of the evaluation benchmark, counted by callgrind (repeatable on a busy machine,
# unlike wall time). Usage, from the package root, after `swift build -c release --product containerkit-bench`:
#
#   Scripts/count-eval-instructions.sh [binary] [target]     # target: containerkit (default) or ideal
#
# Runs the binary twice under callgrind, with 0 and PASSES profile passes of EVENTS events, and prints the
# difference per event (start-up, loading and the decision check cancel out), the share of it spent in
# reference counting, and the callgrind files for `callgrind_annotate`.
set -euo pipefail
binary=${1:-.build/release/containerkit-bench}
target=${2:-containerkit}
events=${EVENTS:-4000}
passes=${PASSES:-5}
work=${TMPDIR:-/tmp}/containerkit-callgrind
mkdir -p "$work"

# valgrind 3.19 and libdispatch's read-only signal mask: see the shim.
cc -shared -fPIC -O2 -o "$work/shim.so" "$(dirname "$0")/valgrind-sigsuspend-shim.c"

count() {
    env LD_PRELOAD="$work/shim.so" SWIFT_DETERMINISTIC_HASHING=1 CONTAINERKIT_BENCH_EVENTS="$events" \
        CONTAINERKIT_BENCH_PROFILE="$1" CONTAINERKIT_BENCH_PROFILE_TARGET="$target" \
        valgrind --tool=callgrind --callgrind-out-file="$work/$target.$1.out" "$binary" 2>&1 |
        sed -n 's/.*Collected : //p'
}
base=$(count 0)
total=$(count "$passes")
per_event=$(( (total - base) / (passes * events) ))
arc=0
for f in "$work/$target.0.out" "$work/$target.$passes.out"; do
    n=$(callgrind_annotate --threshold=100 --auto=no "$f" |
        grep -E 'swift_(retain|release|bridgeObjectRetain|bridgeObjectRelease)(_n)?(.2)? \[' |
        awk '{gsub(",", "", $1); s += $1} END {print s + 0}')
    if [[ $f == *".0.out" ]]; then arc=$(( arc - n )); else arc=$(( arc + n )); fi
done
echo "target=$target events=$events passes=$passes"
echo "instructions_per_event=$per_event"
echo "retain_release_share=$(( 100 * arc / (total - base) ))%"
echo "profiles: $work/$target.0.out $work/$target.$passes.out"
