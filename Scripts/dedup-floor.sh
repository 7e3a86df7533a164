#!/bin/bash
# What an event-ID check costs a push, against the least it can cost: counts, under callgrind, the instructions
# per push of Benchmarks/DedupFloor/dedup-floor.c (the same check as `SeenEventIDs` on the same stream, in plain C,
# with nothing around it: the floor) and of ContainerKit's push with and without an ID (`DedupBench`'s one-side
# mode), and prints each as a share of the push. Usage, from the package root (`make bench-dedup-floor`):
#
#   Scripts/dedup-floor.sh
#
# Prints dedup_floor_instructions_per_push=, containerkit_id_instructions_per_push=,
# containerkit_push_instructions=, dedup_floor_share_of_push= and containerkit_id_share_of_push=. The counts are
# repeatable to a few instructions (hash seeds are drawn per process); the wall-time figure, `dedup_overhead`, is
# `make bench`'s (Docs/Performance.md says why it is about twice the instruction share).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in cc valgrind; do
    command -v "$tool" > /dev/null || { echo "dedup-floor: needs $tool on the PATH" >&2; exit 1; }
done
work=${TMPDIR:-/tmp}/containerkit-dedup-floor
mkdir -p "$work"
rounds=20
events=4000

total() { sed -n 's/.*Collected : //p'; }

# The floor.
cc -O2 -o "$work/dedup-floor" Benchmarks/DedupFloor/dedup-floor.c
floor() {
    valgrind --tool=callgrind --callgrind-out-file="$work/floor.$1.out" "$work/dedup-floor" "$1" 2>&1 >/dev/null | total
}
floor_base=$(floor 0)
floor_total=$(floor "$rounds")
floor_per_push=$(( (floor_total - floor_base) / (rounds * events) ))

# ContainerKit: the dedup benchmark's stream pushed `rounds` more times into the session with IDs, or the one
# without, after the same warm-up; the run with no more rounds is the baseline of both.
swift build -c release --product containerkit-bench > /dev/null
cc -shared -fPIC -O2 -o "$work/shim.so" Scripts/valgrind-sigsuspend-shim.c  # as count-eval-instructions.sh
containerkit() {
    env LD_PRELOAD="$work/shim.so" SWIFT_DETERMINISTIC_HASHING=1 CONTAINERKIT_BENCH_ONLY=dedup \
        CONTAINERKIT_BENCH_EVENTS="$events" CONTAINERKIT_BENCH_DEDUP_SIDE="$1" CONTAINERKIT_BENCH_DEDUP_ROUNDS="$2" \
        valgrind --tool=callgrind --callgrind-out-file="$work/containerkit.$1.$2.out" \
        .build/release/containerkit-bench 2>&1 | total
}
base=$(containerkit without 0)
without=$(containerkit without "$rounds")
with=$(containerkit with "$rounds")
push=$(( (without - base) / (rounds * events) ))
id=$(( (with - without) / (rounds * events) ))

echo "dedup_floor_instructions_per_push=$floor_per_push"
echo "containerkit_id_instructions_per_push=$id"
echo "containerkit_push_instructions=$push"
awk -v f="$floor_per_push" -v i="$id" -v p="$push" \
    'BEGIN { printf "dedup_floor_share_of_push=%.3f\ncontainerkit_id_share_of_push=%.3f\n", f / p, i / p }'
echo "profiles: $work/floor.$rounds.out $work/containerkit.with.$rounds.out $work/containerkit.without.$rounds.out"
