import Testing

@testable import TagServiceCore

/// The per-user turnstile of `--postgres` (issue 38).
@Suite struct KeyedSerializationTests {
    /// Two batches, one with `"caf\u{E9}"`, the other with `"cafe\u{301}"`, both with a third user whose bytes sort
    /// between them. The turnstiles were keyed by `String` (canonical equivalence: one turnstile for both) but
    /// acquired in the order of the bytes (two keys): each batch ended up holding what the other waited for,
    /// forever.
    @Test func twoBatchesWithCanonicallyEquivalentUsersAndASharedOneBothComplete() async throws {
        let composed = "caf\u{E9}"  // 63 61 66 c3 a9
        let decomposed = "cafe\u{301}"  // 63 61 66 65 cc 81
        let shared = "caff"  // 63 61 66 66: after the decomposed id, before the composed one
        let (events, log) = AsyncStream<String>.makeStream()
        let turnstiles = KeyedSerialization(onWait: { key in log.yield("waits for \(key)") })
        var next = events.makeAsyncIterator()

        // The shared user is busy, so both batches queue on it: the first holding nothing yet, the second
        // holding its decomposed user already.
        await turnstiles.acquire(shared)
        let first = Task {
            let held = await turnstiles.acquire([composed, shared])
            log.yield("first holds \(held.count)")
            for key in held { turnstiles.release(key) }
        }
        try #require(await next.next() == "waits for \(shared)")
        let second = Task {
            let held = await turnstiles.acquire([shared, decomposed])
            log.yield("second holds \(held.count)")
            for key in held { turnstiles.release(key) }
        }
        try #require(await next.next() == "waits for \(shared)")

        // The first batch takes the shared user, then its composed one — not the second batch's decomposed user.
        // (Before the fix it waited for the decomposed user here; `#require` ends the test instead of hanging.)
        turnstiles.release(shared)
        try #require(await next.next() == "first holds 2")
        #expect(await next.next() == "second holds 2")
        await first.value
        await second.value
    }

    @Test func canonicallyEquivalentKeysAreTwoKeysOrderedByTheirBytes() {
        #expect(UserIDKey("caf\u{E9}") != UserIDKey("cafe\u{301}"))
        #expect(Set([UserIDKey("caf\u{E9}"), UserIDKey("cafe\u{301}")]).count == 2)
        #expect(UserIDKey("cafe\u{301}") < UserIDKey("caff"))
        #expect(UserIDKey("caff") < UserIDKey("caf\u{E9}"))
    }
}
