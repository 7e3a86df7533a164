extension SessionStore {
    /// Why ``push(event:parameters:for:context:waitsForDurability:prepare:)`` did not acknowledge a push.
    public enum PushError: Error, Sendable {
        /// The user's session could not be loaded (the persistence cannot be reached): nothing was pushed.
        case sessionUnavailable(ContainerError)
        /// The push ran, but what it produced did not become durable (a full disk, a store that is down, a
        /// write refused again after a retry): `result` is the push's result, nothing of it is acknowledged.
        case notDurable(DurabilityError, result: PushResult)
    }

    /// Pushes `event` into the session of `userID` (loaded on a miss, see ``loadSession(for:context:)``) and
    /// returns once what the push produced is durable: the one call a request handler makes.
    ///
    /// With a ``Configuration/committer`` the push's records and the session's change are committed as one
    /// unit inside the session's turn. A commit refused because another instance stored a newer version of
    /// the session (the user was served elsewhere meanwhile) drops the stale copy, loads the newest and
    /// pushes again, up to twice: the caller never sees the fencing. A commit that failed otherwise drops
    /// the copy too (it may have been kept after all), so the user's next push loads what is stored.
    /// Without a committer the session is reported changed (``didChange(_:)``) for the persistence.
    ///
    /// - Parameters:
    ///   - waitsForDurability: `false` returns right after the push (its commit is appended, not waited
    ///     for): a batch pushes all its events, then waits for each result's ``PushResult/waitUntilDurable()``
    ///     once, so they share one group commit.
    ///   - prepare: called with the session before the push (to name a new session's user for a vendor, say).
    /// - Throws: ``PushError``.
    @discardableResult
    public func push(
        event: String,
        parameters: ValueMap = ValueMap(),
        for userID: String,
        context: ClientContext? = nil,
        waitsForDurability: Bool = true,
        prepare: (DataLayer) -> Void = { _ in }
    ) async throws(PushError) -> PushResult {
        var attempt = 0
        while true {
            attempt += 1
            let session: DataLayer
            do {
                session = try await loadSession(for: userID, context: context)
            } catch {
                throw .sessionUnavailable(error)
            }
            prepare(session)
            let result = await session.push(event: event, parameters: parameters)
            if configuration.committer == nil { didChange(session) }
            guard waitsForDurability else { return result }
            do {
                try await result.waitUntilDurable()
                return result
            } catch {
                if configuration.committer?.keepsSessions == true { invalidate(userID) }
                if error.code == .superseded, attempt < 3 { continue }
                throw .notDurable(error, result: result)
            }
        }
    }
}
