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
    /// A push held back while no container is available yet (delayed initialization) is not checked.
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap(), eventID: String?) -> PushResult {
        if let refusal = Self.refusal(eventID: eventID) { return refusal }
        return push(Pending(message: parameters, event: .string(event), eventID: eventID))
    }

    /// ``push(event:parameters:eventID:)``, suspending while another caller's push is processed.
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap(), eventID: String?) async -> PushResult {
        if let refusal = Self.refusal(eventID: eventID) { return refusal }
        return await push(Pending(message: parameters, event: .string(event), eventID: eventID))
    }

    /// Pushes a message that carries an event ID (see ``push(event:parameters:eventID:)``).
    @discardableResult
    public func push(_ message: ValueMap, eventID: String?) -> PushResult {
        if let refusal = Self.refusal(eventID: eventID) { return refusal }
        return push(Pending(message: message, event: nil, eventID: eventID))
    }

    /// Pushes a message that carries an event ID, suspending while another caller's push is processed.
    @discardableResult
    public func push(_ message: ValueMap, eventID: String?) async -> PushResult {
        if let refusal = Self.refusal(eventID: eventID) { return refusal }
        return await push(Pending(message: message, event: nil, eventID: eventID))
    }

    /// The result of a push refused for its event ID; `nil` when the ID is absent or valid.
    static func refusal(eventID: String?) -> PushResult? {
        guard let eventID else { return nil }
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

    /// Sets the summary of what the turn fired on the seen ID `sequence` (before its commit takes the delta).
    func noteFired(_ result: PushResult, sequence: Int) {
        let fired = result.firedPacker()
        state.withLock { $0.seenEventIDs?.setFired(fired, of: sequence) }
    }
}

extension DataLayer.State {
    /// Forgets the IDs past the window at `now` and returns the entry of `id` if the session remembers it.
    mutating func seenEntry(_ id: String, hash: UInt64, now: Int64, in manager: TagManager) -> SeenEventIDs.Entry? {
        guard let seen = seenEventIDs else { return nil }
        let pruned = seen.prune(
            now: now,
            window: manager.eventIDMilliseconds,
            maximumCount: manager.eventIDMaximumCount,
            room: 0
        )
        if pruned > 0, changes != nil { changes!.eventIDsPruned += pruned }
        return seen.entry(id, hash: hash)
    }

    /// Remembers `id` (applied at `now`), first forgetting the oldest beyond the window's count; returns its
    /// sequence number.
    mutating func remember(_ id: String, hash: UInt64, now: Int64, in manager: TagManager) -> Int {
        let seen: SeenEventIDs
        if let existing = seenEventIDs {
            seen = existing
        } else {
            seen = SeenEventIDs()
            seenEventIDs = seen
        }
        let pruned = seen.prune(
            now: now,
            window: manager.eventIDMilliseconds,
            maximumCount: manager.eventIDMaximumCount,
            room: 1
        )
        let sequence = seen.append(id, time: now, hash: hash)
        if changes != nil {
            changes!.eventIDsPruned += pruned
            changes!.eventIDsAdded += 1
        }
        return sequence
    }
}
