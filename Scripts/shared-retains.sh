#!/bin/bash
# Which objects a push writes reference counts of that other sessions' pushes write too: the census behind
# `two_threads_one_runtime_vs_two` (Docs/Performance.md, "Thread scaling"). Usage, from the package root,
# after `swift build -c release --product containerkit-bench`:
#
#   Scripts/shared-retains.sh [binary]
#
# Runs the scaling section (4 rounds) with swift_retain/swift_release (and the bridge-object variants)
# interposed: each thread counts the objects it retains and releases, by calling site. Each measurement starts
# a thread per side (`SessionBench.interleaved`), and a thread pushes into sessions of its own: over 4 rounds
# a session's objects are touched by at most 9 threads, an object of the runtime every session shares by 14.
# An object that 12 or more threads touched is such a shared one. Prints, per type and calling function, how
# many times it was retained or released.
set -euo pipefail
binary=${1:-.build/release/containerkit-bench}
work=${TMPDIR:-/tmp}/containerkit-shared-retains
mkdir -p "$work"
cat > "$work/census.c" <<'CENSUS'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#define N (1 << 16)
#define G (1 << 20)
#ifndef CENSUS_MIN_THREADS
#define CENSUS_MIN_THREADS 12
#endif
typedef struct { uintptr_t obj, isa, caller; long count; } Entry;
typedef struct { uintptr_t obj, isa, caller; long count; int threads; } Merged;
static __thread Entry *table;
static pthread_key_t key;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Merged *merged;
static void *(*real_retain)(void *);
static void (*real_release)(void *);
static void *(*real_bridge_retain)(void *);
static void (*real_bridge_release)(void *);
static size_t slot(uintptr_t o, uintptr_t c, int bits) { return (((o >> 4) ^ (c * 31)) * 0x9E3779B97F4A7C15ull) >> (64 - bits); }
static void merge(void *p) {
    Entry *t = p;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < N; i++) {
        if (!t[i].obj || t[i].count < 1000) continue;
        size_t h = slot(t[i].obj, t[i].caller, 20);
        while (merged[h].obj && !(merged[h].obj == t[i].obj && merged[h].caller == t[i].caller)) h = (h + 1) & (G - 1);
        if (!merged[h].obj) { merged[h].obj = t[i].obj; merged[h].isa = t[i].isa; merged[h].caller = t[i].caller; }
        merged[h].count += t[i].count;
        merged[h].threads++;
    }
    pthread_mutex_unlock(&lock);
    free(t);
}
static void init(void) {
    real_retain = dlsym(RTLD_NEXT, "swift_retain");
    real_release = dlsym(RTLD_NEXT, "swift_release");
    real_bridge_retain = dlsym(RTLD_NEXT, "swift_bridgeObjectRetain");
    real_bridge_release = dlsym(RTLD_NEXT, "swift_bridgeObjectRelease");
    pthread_key_create(&key, merge);
    merged = calloc(G, sizeof(Merged));
}
static void note(void *p, int bridge, uintptr_t caller) {
    // A bridge object carries flags in its top bits. One with the top bit set is immortal (a small string, or a
    // literal in the binary): its count is never written. The others are native objects (a string's buffer).
    if (bridge && ((uintptr_t)p >> 63)) return;
    uintptr_t o = bridge ? ((uintptr_t)p & 0x00FFFFFFFFFFFFF8ull) : (uintptr_t)p;
    if (o < 65536 || o >= 0x800000000000ull) return;
    if (!table) { table = calloc(N, sizeof(Entry)); pthread_setspecific(key, table); }
    size_t h = slot(o, caller, 16);
    for (int probes = 0; table[h].obj && !(table[h].obj == o && table[h].caller == caller); probes++) {
        if (probes > 64) return;
        h = (h + 1) & (N - 1);
    }
    if (!table[h].obj) { table[h].obj = o; table[h].caller = caller; table[h].isa = *(uintptr_t *)o; }
    table[h].count++;
}
#define SITE ((uintptr_t)__builtin_return_address(0))
void *swift_retain(void *p) { if (!real_retain) init(); note(p, 0, SITE); return real_retain(p); }
void swift_release(void *p) { if (!real_retain) init(); note(p, 0, SITE); real_release(p); }
void *swift_bridgeObjectRetain(void *p) { if (!real_retain) init(); note(p, 1, SITE); return real_bridge_retain(p); }
void swift_bridgeObjectRelease(void *p) { if (!real_retain) init(); note(p, 1, SITE); real_bridge_release(p); }
typedef struct { const char *data; size_t length; } TypeName;
__attribute__((destructor)) static void report(void) {
    if (table) { merge(table); table = 0; }
    TypeName (*name)(const void *, int) = dlsym(RTLD_DEFAULT, "swift_getTypeName");
    for (int i = 0; i < G; i++) {
        if (!merged[i].obj || merged[i].threads < CENSUS_MIN_THREADS || !merged[i].isa) continue;
        TypeName n = name((void *)merged[i].isa, 1);
        Dl_info info;
        if (!dladdr((void *)merged[i].caller, &info)) continue;
        fprintf(stderr, "census %ld %s 0x%lx %.*s\n", merged[i].count, info.dli_fname,
                (unsigned long)(merged[i].caller - (uintptr_t)info.dli_fbase), (int)n.length, n.data);
    }
}
CENSUS
cc -O2 -shared -fPIC -o "$work/census.so" "$work/census.c" -ldl -lpthread
LD_PRELOAD="$work/census.so" CONTAINERKIT_BENCH_ONLY=scaling CONTAINERKIT_BENCH_SCALING_ROUNDS=4 "$binary" 2>&1 >/dev/null |
    grep '^census ' >"$work/census.txt" || true
# `EmptyArrayStorage` is immortal (its count is never written).
while read -r _ count file offset type; do
    [[ $type == *EmptyArrayStorage* ]] && continue
    function=$(addr2line -f -e "$file" "$offset" | head -1 | swift demangle --simplified)
    echo "$type|$function|$count"
done <"$work/census.txt" | awk -F'|' '{sum[$1 "  in  " $2] += $3} END {for (k in sum) printf "%12d  %s\n", sum[k], k}' |
    sort -rn | head -20
