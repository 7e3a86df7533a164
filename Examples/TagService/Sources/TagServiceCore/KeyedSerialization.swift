import Synchronization

/// Runs the work of one key at a time, first come first served (a user's push and its commit, so the snapshot
/// committed with a push's records holds that push and no later one): a turnstile per key.
///
/// Keys are user ids, compared as **bytes** (``UserIDKey``): `"caf\u{E9}"` and `"cafe\u{301}"` are two users,
/// with two turnstiles. Were they one turnstile to the dictionary but two keys to the order in which a batch
/// acquires its keys, two batches could each hold what the other waits for (issue 38).
final class KeyedSerialization: Sendable {
    private let waiting = Mutex<[UserIDKey: [CheckedContinuation<Void, Never>]]>([:])
    private let onWait: (@Sendable (String) -> Void)?

    /// - Parameter onWait: called with the key each time a work has to wait for that key's turnstile (for
    ///   tests that follow the order of the waits).
    init(onWait: (@Sendable (String) -> Void)? = nil) {
        self.onWait = onWait
    }

    func serialize<T: Sendable>(_ key: String, _ body: () async throws -> T) async throws -> T {
        await acquire(key)
        defer { release(key) }
        return try await body()
    }

    /// Passes the turnstile of `key` (waits until the work ahead of it released it). Work that needs several
    /// keys acquires them in one global order (`acquire(_:)` with all of them), so that two such
    /// works cannot each hold a key the other waits for.
    func acquire(_ key: String) async {
        let turnstile = UserIDKey(key)
        await withCheckedContinuation { continuation in
            let runNow = waiting.withLock { waiting -> Bool in
                if waiting[turnstile] == nil {
                    waiting[turnstile] = []
                    return true
                }
                waiting[turnstile]!.append(continuation)
                return false
            }
            if runNow {
                continuation.resume()
            } else {
                onWait?(key)
            }
        }
    }

    /// Acquires every one of `keys` (repeats once), in the order of their UTF-8 bytes — the same order and the
    /// same equality as the turnstiles' — and returns them, to release each.
    func acquire(_ keys: some Collection<String>) async -> [String] {
        let ordered = Set(keys.map(UserIDKey.init)).sorted().map(\.userID)
        for key in ordered { await acquire(key) }
        return ordered
    }

    /// Lets the next work waiting for `key` in.
    func release(_ key: String) {
        let turnstile = UserIDKey(key)
        let next = waiting.withLock { waiting -> CheckedContinuation<Void, Never>? in
            guard var queue = waiting[turnstile], !queue.isEmpty else {
                waiting[turnstile] = nil
                return nil
            }
            let first = queue.removeFirst()
            waiting[turnstile] = queue
            return first
        }
        next?.resume()
    }
}

/// A user id as a dictionary or set key that compares **bytes**, not Unicode canonical equivalence (what
/// `String`'s `==` and hash do: `"caf\u{E9}" == "cafe\u{301}"`), ordered by its UTF-8 bytes. External ids are
/// bytes everywhere in ContainerKit (the library's `SessionStore` keys its sessions the same way).
struct UserIDKey: Hashable, Comparable, Sendable {
    /// The user id as given.
    let userID: String

    init(_ userID: String) { self.userID = userID }

    static func == (lhs: UserIDKey, rhs: UserIDKey) -> Bool {
        lhs.userID.utf8.elementsEqual(rhs.userID.utf8)
    }

    static func < (lhs: UserIDKey, rhs: UserIDKey) -> Bool {
        lhs.userID.utf8.lexicographicallyPrecedes(rhs.userID.utf8)
    }

    func hash(into hasher: inout Hasher) {
        var id = userID
        id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
