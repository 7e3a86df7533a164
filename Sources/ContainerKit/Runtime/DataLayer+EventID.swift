import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension DataLayer {
    /// The longest event ID, in UTF-8 bytes: 256.
    public static let maximumEventIDBytes = 256

    /// Checks that `eventID` can name an event: not empty, at most ``maximumEventIDBytes`` UTF-8 bytes, and
    /// without a NUL character (which a database's text, and a C string, cannot hold).
    /// - Throws: ``ContainerError`` with code ``ContainerError/Code/invalidEventID``.
    public static func validate(eventID: String) throws(ContainerError) {
        if eventID.isEmpty { throw ContainerError(.invalidEventID, "an event id must not be empty") }
        let bytes = eventID.utf8.count
        if bytes > maximumEventIDBytes {
            throw ContainerError(
                .invalidEventID,
                "the event id '\(eventID.prefix(32))…' is \(bytes) bytes long; the most is \(maximumEventIDBytes)"
            )
        }
        let hasNUL =
            eventID.utf8.withContiguousStorageIfAvailable { utf8 in
                utf8.baseAddress.map { memchr($0, 0, utf8.count) != nil } ?? false
            }
            ?? eventID.utf8.contains(0)
        if hasNUL {
            throw ContainerError(.invalidEventID, "the event id '\(eventID.prefix(32))' contains a NUL character")
        }
    }

    /// Whether ``validate(eventID:)`` accepts `eventID` (checked without building an error).
    static func isValid(eventID: String) -> Bool { checkedHash(of: eventID, seed: 0) != nil }

    /// ``checkedHash(of:seed:)`` with the runtime's seed (``TagManager/eventIDSeed``).
    @inline(__always)
    func checkedHash(of eventID: String?) -> UInt64? { Self.checkedHash(of: eventID, seed: tagManager.eventIDSeed) }

    /// The hash of `eventID` (``SeenEventIDs/hash(_:)``) when ``validate(eventID:)`` accepts it, or 0 when no ID
    /// is given; `nil` for an invalid one. One pass over the bytes in place, checking for a NUL as it hashes.
    @inline(__always)
    static func checkedHash(of eventID: String?, seed: UInt64) -> UInt64? {
        guard let eventID else { return 0 }
        var zeroes: UInt64 = 0
        let hash =
            eventID.utf8.withContiguousStorageIfAvailable { utf8 -> UInt64? in
                guard utf8.count > 0, utf8.count <= maximumEventIDBytes else { return nil }
                return SeenEventIDs.hash(UnsafeRawBufferPointer(utf8), seed: seed, zeroes: &zeroes)
            } ?? checkedHashCopying(eventID, seed: seed, zeroes: &zeroes)
        return zeroes == 0 ? hash : nil
    }

    /// ``checkedHash(of:)`` of a string whose bytes are not contiguous.
    @inline(never)
    private static func checkedHashCopying(_ eventID: String, seed: UInt64, zeroes: inout UInt64) -> UInt64? {
        let bytes = Array(eventID.utf8)
        guard bytes.count > 0, bytes.count <= maximumEventIDBytes else { return nil }
        return bytes.withUnsafeBytes { SeenEventIDs.hash($0, seed: seed, zeroes: &zeroes) }
    }

    /// Pushes an event with parameters that carries an event ID, so that a retry of it is not applied twice.
    ///
    /// When the session has seen `eventID` within its ``TagManager/eventIDs`` window, the push is **not applied
    /// again**: nothing is merged, evaluated, fired or recorded, and the result is marked
    /// ``PushResult/isDuplicate``, with the original push's summary in ``PushResult/duplicateOf`` (and, while the
    /// original's records and commit are still being written by this process, its durability:
    /// ``PushResult/waitUntilDurable()`` waits for them). Otherwise the push is applied as
    /// ``push(event:parameters:)-(String,ValueMap)`` would, and the session remembers the ID with a summary of what
    /// fired (``SeenEventID``). `nil`: no ID, nothing is checked or remembered.
    ///
    /// An ID that fails ``validate(eventID:)`` refuses the push: ``PushResult/refusal`` is `invalid_event_id`,
    /// and nothing is applied.
    ///
    /// ```swift
    /// let first = session.push(event: "purchase", parameters: ["value": 9.99], eventID: "m-17")
    /// let retry = session.push(event: "purchase", parameters: ["value": 9.99], eventID: "m-17")
    /// // retry.isDuplicate == true; retry.duplicateOf?.fired lists what the first push fired
    /// ```
    ///
    /// A push held back while no container is available yet (delayed initialization) is checked when it is replayed:
    /// a retry queued behind its original is then a duplicate of it.
    ///
    /// (`eventID` is `consuming`: the push keeps the caller's reference rather than retaining the ID again.)
    @available(*, noasync, message: "blocks its thread while another push is processed; await the async push")
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap(), eventID: consuming String?) -> PushResult {
        let hash = checkedHash(of: eventID)
        return push(Pending(message: parameters, event: .string(event), eventID: eventID, hash: hash))
    }

    /// ``push(event:parameters:eventID:)``, suspending while another caller's push is processed.
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap(), eventID: String?) async -> PushResult {
        await push(
            Pending(message: parameters, event: .string(event), eventID: eventID, hash: checkedHash(of: eventID))
        )
    }

    /// Pushes a message that carries an event ID (see ``push(event:parameters:eventID:)``).
    @available(*, noasync, message: "blocks its thread while another push is processed; await the async push")
    @discardableResult
    public func push(_ message: ValueMap, eventID: consuming String?) -> PushResult {
        let hash = checkedHash(of: eventID)
        return push(Pending(message: message, event: nil, eventID: eventID, hash: hash))
    }

    /// Pushes a message that carries an event ID, suspending while another caller's push is processed.
    @discardableResult
    public func push(_ message: ValueMap, eventID: String?) async -> PushResult {
        await push(Pending(message: message, event: nil, eventID: eventID, hash: checkedHash(of: eventID)))
    }

    /// The result of a push refused for its invalid event ID `eventID` (out of the pushes' line; the pushes hand
    /// the refusal to ``push(_:)-(Pending)`` in their ``Pending``, so that each returns the one call's result
    /// in place rather than a copy of one of two).
    @inline(never)
    static func refused(eventID: String?) -> PushResult { refusal(eventID: eventID)! }

    /// The result of a push refused for its event ID; `nil` when the ID is absent or valid.
    static func refusal(eventID: String?) -> PushResult? {
        guard let eventID, !isValid(eventID: eventID) else { return nil }
        do throws(ContainerError) {
            try validate(eventID: eventID)
            return nil
        } catch {
            var result = PushResult()
            result.refusal = error
            return result
        }
    }

    /// The event IDs this session remembers, oldest first.
    public var seenEventIDs: [SeenEventID] { state.withLock { $0.seenEventIDs?.events ?? [] } }

    /// Sets the summary of what the turn fired on its seen ID (before its commit takes the delta): `remembered`'s
    /// ``FiredSummary`` when it is `summarized` (the turn had no nested push and no push hook's output) and
    /// complete, else read from `result`.
    func noteFired(_ result: borrowing PushResult, _ remembered: RememberedEventID, summarized: Bool) {
        if summarized, remembered.fired.isComplete {
            var fired = remembered.fired
            state.withLock { $0.seenEventIDs?.setFired(&fired, of: remembered.sequence) }
        } else {
            state.withLock { $0.seenEventIDs?.noteFired(result, of: remembered.sequence) }
        }
    }
}

extension DataLayer.Pending {
    /// A push of `message` (and `event`) with the event ID `eventID`, `hash` its ``DataLayer/checkedHash(of:)``:
    /// `nil` when the ID is invalid (the push is refused), 0 when there is none.
    init(message: ValueMap, event: Value?, eventID: consuming String?, hash: UInt64?) {
        let id: String
        switch consume eventID {
        case .some(let given): id = given
        case .none: id = ""
        }
        self.init(message: message, event: event, eventID: id, eventIDHash: hash ?? 0)
        refusesEventID = hash == nil
    }
}

extension DataLayer.State {
    // The set is reached through the state each time (`seenEventIDs!`), not bound to a local: under the lock the
    // state is borrowed, and a local would retain and release it on every push.

    /// A push's event ID `id` (hashed `hash`) at `now`, in one call on the session's set: forgets the IDs past the
    /// window, and returns the entry of `id` if the session remembers it; when it does not and `remembers`,
    /// remembers it (past the window's count, the oldest go) and sets `sequence` to its sequence number.
    /// (A push that may still be refused, for the session's size, looks up without remembering, and remembers
    /// once admitted: ``remember(_:hash:now:in:)``.)
    mutating func admitEventID(
        _ id: String,
        hash: UInt64,
        now: Int64,
        remembers: Bool,
        sequence: inout Int,
        in manager: TagManager
    ) -> SeenEventIDs.Entry? {
        if seenEventIDs == nil {
            guard remembers else { return nil }
            seenEventIDs = SeenEventIDs()
        }
        let admission = seenEventIDs!.admit(
            id,
            hash: hash,
            now: now,
            window: manager.eventIDMilliseconds,
            maximumCount: manager.eventIDMaximumCount,
            remembers: remembers
        )
        if changes != nil {
            changes!.eventIDsPruned &+= Int32(truncatingIfNeeded: admission.forgotten)
            if admission.sequence >= 0 { changes!.eventIDsAdded &+= 1 }
        }
        if admission.found >= 0 { return seenEventIDs!.entry(at: admission.found) }
        sequence = admission.sequence
        return nil
    }

    /// Remembers `id` (applied at `now`), which ``admitEventID(_:hash:now:remembers:sequence:in:)`` looked up without
    /// remembering under the same lock; returns its sequence number.
    mutating func remember(_ id: String, hash: UInt64, now: Int64, in manager: TagManager) -> Int {
        var sequence = -1
        _ = admitEventID(id, hash: hash, now: now, remembers: true, sequence: &sequence, in: manager)
        return sequence
    }
}
