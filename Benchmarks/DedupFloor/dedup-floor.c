// The least an event-ID check can cost, in instructions: what `SeenEventIDs` does for a push with an ID, written
// as plain C with nothing else around it, for `make bench-dedup-floor` (Scripts/dedup-floor.sh) to count under
// callgrind. It is the same work on the same stream as `DedupBench` (36-character IDs, each new, 1,000 remembered
// per session, so each push forgets the oldest):
//
// - hash the ID's bytes, 16 at a time (wyhash's multiply-and-fold), checking for a NUL byte as it goes;
// - look the hash up in a linear-probing table of (hash tag | sequence number) words, four times the ring's size;
// - forget the oldest ID at the bound (find its table entry, backward-shift deletion);
// - remember the new ID in a FIFO ring, its bytes inline, with one packed word of what the push fired.
//
// Left out, so the floor is lower than any real check: reading a clock for the ID's time, packing what fired from
// the push's calls, anything the push does around the call (locks, the push's entry), and long IDs.
//
// Usage: dedup-floor [rounds] — remembers the 4,000-ID stream once, then looks up and remembers it `rounds` more
// times (every look-up misses: the set holds the last 1,000).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { capacity = 1024, buckets = capacity * 4, inline_bytes = 48, events = 4000, bound = 1000 };

typedef struct {
    uint64_t hash;
    int64_t time;
    uint32_t length;
    uint64_t fired;
    uint8_t bytes[inline_bytes];
} slot_t;

static slot_t ring[capacity];
static uint64_t table[buckets];
static int head, count;
static uint32_t first;  // the sequence number of the oldest ID

static const uint64_t p0 = 0xa0761d6478bd642full, p1 = 0xe7037ed1a0b428dbull;

static inline uint64_t fold(uint64_t a, uint64_t b) {
    __uint128_t product = (__uint128_t)a * b;
    return (uint64_t)product ^ (uint64_t)(product >> 64);
}
static inline uint64_t zero_bytes(uint64_t word) {
    return (word - 0x0101010101010101ull) & ~word & 0x8080808080808080ull;
}
static inline uint64_t load(const uint8_t *p) {
    uint64_t value;
    memcpy(&value, p, 8);
    return value;
}

// The hash of `length` (17 to 48) bytes; returns 0 when they hold a NUL byte.
__attribute__((noinline)) static int hash(const uint8_t *bytes, size_t length, uint64_t seed, uint64_t *out) {
    uint64_t secret = seed ^ p1, state = seed ^ p0, zeroes = 0;
    size_t offset = 0;
    while (length - offset > 16) {
        uint64_t x = load(bytes + offset), y = load(bytes + offset + 8);
        zeroes |= zero_bytes(x) | zero_bytes(y);
        state = fold(x ^ secret, y ^ state);
        offset += 16;
    }
    uint64_t a = load(bytes + length - 16), b = load(bytes + length - 8);
    zeroes |= zero_bytes(a) | zero_bytes(b);
    *out = fold(fold(a ^ secret, b ^ state) ^ p0 ^ length, p1);
    return zeroes == 0;
}

static inline uint64_t tag(uint64_t hash) { return (hash >> 32 | 1ull << 31) << 32; }
static inline int home(uint64_t hash) { return (int)(hash >> 32) & (buckets - 1); }

// Forgets the oldest ID; returns the bucket its deletion left empty.
static int remove_oldest(void) {
    uint64_t entry = tag(ring[head].hash) | first;
    int hole = home(ring[head].hash);
    while (table[hole] != entry) hole = (hole + 1) & (buckets - 1);
    for (int next = (hole + 1) & (buckets - 1);; next = (next + 1) & (buckets - 1)) {
        uint64_t moving = table[next];
        if (moving == 0) break;
        int moving_home = (int)(moving >> 32) & (buckets - 1);
        if (((next - moving_home) & (buckets - 1)) >= ((next - hole) & (buckets - 1))) {
            table[hole] = moving;
            hole = next;
        }
    }
    table[hole] = 0;
    head = (head + 1) & (capacity - 1);
    count -= 1;
    first += 1;
    return hole;
}

// Returns the ring position of `id` when it is remembered; otherwise remembers it (with `fired`) and returns -1.
__attribute__((noinline)) static int admit(
    const uint8_t *id, uint32_t length, uint64_t hash, int64_t now, int64_t window, uint64_t fired) {
    while (count > 0 && ring[head].time < now - window) remove_oldest();
    uint64_t wanted = tag(hash);
    int start = home(hash), bucket = start;
    for (;; bucket = (bucket + 1) & (buckets - 1)) {
        uint64_t entry = table[bucket];
        if (entry == 0) break;
        if ((entry & 0xFFFFFFFF00000000ull) != wanted) continue;
        int position = (head + (int)((uint32_t)entry - first)) & (capacity - 1);
        if (ring[position].hash == hash && ring[position].length == length &&
            memcmp(ring[position].bytes, id, length) == 0)
            return position;
    }
    while (count >= bound) {
        int hole = remove_oldest();
        if (((hole - start) & (buckets - 1)) < ((bucket - start) & (buckets - 1))) bucket = hole;
    }
    int position = (head + count) & (capacity - 1);
    ring[position].hash = hash;
    ring[position].time = now;
    ring[position].length = length;
    ring[position].fired = fired;
    memcpy(ring[position].bytes, id, length);
    table[bucket] = wanted | (first + (uint32_t)count);
    count += 1;
    return -1;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 0;
    static char ids[events][40];
    for (int i = 0; i < events; i++) snprintf(ids[i], sizeof ids[i], "5f0c2d1e-7a4b-4c3d-9e8f-%012x", i);
    long seen = 0;
    for (int round = 0; round <= rounds; round++) {
        for (int i = 0; i < events; i++) {
            uint64_t h;
            if (!hash((const uint8_t *)ids[i], 36, 0x9e3779b97f4a7c15ull, &h)) return 1;
            int64_t now = (int64_t)round * events + i;
            seen += admit((const uint8_t *)ids[i], 36, h, now, 86400000, 1ull << 63 | (uint64_t)i << 32) >= 0;
        }
    }
    // Every ID of the last `bound` is found again (the same work in every run, so it cancels in the count).
    long found = 0;
    for (int i = events - bound; i < events; i++) {
        uint64_t h;
        hash((const uint8_t *)ids[i], 36, 0x9e3779b97f4a7c15ull, &h);
        found += admit((const uint8_t *)ids[i], 36, h, (int64_t)rounds * events + events, 86400000, 0) >= 0;
    }
    printf("ids_remembered=%d ids_seen_again=%ld ids_found=%ld\n", count, seen, found);
    return seen == 0 && count == bound && found == bound ? 0 : 1;
}
