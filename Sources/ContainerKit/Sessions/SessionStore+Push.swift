public import Foundation

extension SessionStore {
    /// Why ``push(event:parameters:for:context:eventID:eventTime:waitsForDurability:tracing:prepare:)`` did not acknowledge a push.
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
    /// pushes again — up to ``Configuration/maximumPushAttempts`` times in all, after a short random pause
    /// that grows with each attempt (two instances pushing one user at once settle instead of refusing each
    /// other in step): the caller does not see the fencing. A commit that failed otherwise drops the copy too
    /// (it may have been kept after all), so the user's next push loads what is stored. Only the copy the push
    /// ran on is dropped, never a newer one another request loaded meanwhile.
    /// Without a committer the session is reported changed (``didChange(_:)``) for the persistence.
    ///
    /// With an `eventID`, a push the user's session has already applied (within ``TagManager/eventIDs``) is not
    /// applied again: the result is marked ``PushResult/isDuplicate`` and names the original
    /// (``PushResult/duplicateOf``). The seen IDs are part of the session's state, committed with each push, so
    /// this holds on any instance that loads the session, after a restart too. A duplicate of a push whose commit
    /// is still in flight waits for that commit (and fails if it fails: the retry then applies it). Without an ID
    /// a retried request is pushed again.
    ///
    /// - Parameters:
    ///   - eventID: the event's ID (a client's message ID), checked by ``DataLayer/validate(eventID:)``: an invalid
    ///     one refuses the push (``PushResult/refusal``, `invalid_event_id`) before the session is loaded.
    ///   - eventTime: when the event happened, as its client says (``FunctionCall/eventTime``: the time the Braze
    ///     provider stamps its records with); `nil`: now. See
    ///     ``DataLayer/push(event:parameters:eventID:eventTime:tracing:)``.
    ///   - waitsForDurability: `false` returns right after the push (its commit is appended, not waited
    ///     for): a batch pushes all its events, then waits for each result's ``PushResult/waitUntilDurable()``
    ///     once, so they share one group commit.
    ///   - tracing: record the push's ``PushResult/trace`` (see ``PushTrace``); its records show as durable once
    ///     this returns after waiting for them.
    ///   - prepare: called with the session before the push (to name a new session's user for a vendor, say).
    /// - Throws: ``PushError``.
    @discardableResult
    public func push(
        event: String,
        parameters: ValueMap = ValueMap(),
        for userID: String,
        context: ClientContext? = nil,
        eventID: String? = nil,
        eventTime: Date? = nil,
        waitsForDurability: Bool = true,
        tracing: Bool = false,
        prepare: (DataLayer) -> Void = { _ in }
    ) async throws(PushError) -> PushResult {
        if let refusal = DataLayer.refusal(eventID: eventID) {
            guard tracing else { return refusal }
            let session = try? await loadSession(for: userID, context: context)
            guard let session else { return refusal }
            return DataLayer.traced(refusal, true, session, event, parameters, eventID)
        }
        var attempt = 0
        while true {
            attempt += 1
            let (result, session) = try await pushOnce(
                event: event,
                parameters: parameters,
                for: userID,
                context: context,
                eventID: eventID,
                eventTime: eventTime,
                tracing: tracing,
                prepare: prepare
            )
            guard waitsForDurability else { return result }
            do {
                try await result.waitUntilDurable()
                var confirmed = result
                confirmed.noteDurable()
                return confirmed
            } catch {
                if configuration.committer?.keepsSessions == true { invalidate(session) }
                if error.code == .superseded, attempt < configuration.maximumPushAttempts {
                    await pauseBeforeAttempt(attempt + 1)
                    continue
                }
                throw .notDurable(error, result: result)
            }
        }
    }

    /// Pushes a consent command (``ConsentCommand``) into the session of `userID` (loaded on a miss) and returns
    /// once the session's new consent state is durable, with the store's committer: as
    /// ``push(event:parameters:for:context:eventID:eventTime:waitsForDurability:tracing:prepare:)`` does for an event (fenced pushes
    /// are pushed again on the newest state).
    /// With `tracing`, the result's ``PushResult/trace`` says what the command changed (``PushTrace/consent``).
    /// - Throws: ``PushError``.
    @discardableResult
    public func push(
        _ command: ConsentCommand,
        for userID: String,
        context: ClientContext? = nil,
        waitsForDurability: Bool = true,
        tracing: Bool = false
    ) async throws(PushError) -> PushResult {
        let outcome = await push(
            [PushRequest(command: command, userID: userID, context: context, tracing: tracing)],
            waitsForDurability: waitsForDurability
        )
        return try outcome[0].get()
    }

    /// Loads the session of `userID` and pushes the event into it (committed inside the turn, not waited for);
    /// returns the result and the session it ran on.
    private func pushOnce(
        event: String,
        parameters: ValueMap,
        for userID: String,
        context: ClientContext?,
        eventID: String?,
        eventTime: Date? = nil,
        command: ConsentCommand? = nil,
        tracing: Bool = false,
        prepare: (DataLayer) -> Void
    ) async throws(PushError) -> (PushResult, DataLayer) {
        let session: DataLayer
        do {
            session = try await loadSession(for: userID, context: context)
        } catch {
            throw .sessionUnavailable(error)
        }
        prepare(session)
        let result =
            if let command {
                await session.push(command, tracing: tracing)
            } else if tracing || eventTime != nil {
                await session.push(
                    event: event,
                    parameters: parameters,
                    eventID: eventID,
                    eventTime: eventTime,
                    tracing: tracing
                )
            } else if let eventID {
                await session.push(event: event, parameters: parameters, eventID: eventID)
            } else {
                await session.push(event: event, parameters: parameters)
            }
        if configuration.committer == nil, !result.isDuplicate { didChange(session) }
        return (result, session)
    }

    /// A random pause before attempt `attempt` (2 or more) of a fenced push: up to 1 ms, doubling with each
    /// attempt up to 64 ms, so that two instances that fenced each other do not retry in step (real time,
    /// whatever clock the store measures idle times on).
    func pauseBeforeAttempt(_ attempt: Int) async {
        let ceiling = Int64(1) << min(max(attempt - 2, 0), 6)
        let microseconds = Int64.random(in: 100...(ceiling * 1000))
        try? await Task.sleep(for: .microseconds(microseconds))
    }

    /// One event of a batch for ``push(_:waitsForDurability:prepare:)``.
    public struct PushRequest: Sendable {
        /// The event's name.
        public var event: String
        /// Its parameters.
        public var parameters: ValueMap
        /// The user whose session it goes into.
        public var userID: String
        /// The client context of the user's session, if the request gives one.
        public var context: ClientContext?
        /// The event's ID, if the request gives one: a push its session has already applied is a duplicate (see
        /// ``SessionStore/push(event:parameters:for:context:eventID:eventTime:waitsForDurability:tracing:prepare:)``), also a second
        /// request of the same batch with the same ID.
        public var eventID: String?
        /// When the event happened, as its client says; `nil`: now (see
        /// ``DataLayer/push(event:parameters:eventID:eventTime:tracing:)``).
        public var eventTime: Date?
        /// A consent command to push instead of the event (``event`` and ``parameters`` are then not used).
        public var command: ConsentCommand?
        /// Whether the push records its ``PushResult/trace`` (see ``PushTrace``).
        public var tracing: Bool

        /// Creates a request that pushes a consent command into the session of `userID` (traced with `tracing`).
        public init(command: ConsentCommand, userID: String, context: ClientContext? = nil, tracing: Bool = false) {
            self.event = ""
            self.parameters = ValueMap()
            self.userID = userID
            self.context = context
            self.eventID = nil
            self.command = command
            self.tracing = tracing
        }

        /// Creates a request.
        public init(
            event: String,
            parameters: ValueMap = ValueMap(),
            userID: String,
            context: ClientContext? = nil,
            eventID: String? = nil,
            eventTime: Date? = nil,
            tracing: Bool = false
        ) {
            self.event = event
            self.parameters = parameters
            self.userID = userID
            self.context = context
            self.eventID = eventID
            self.eventTime = eventTime
            self.tracing = tracing
        }
    }

    /// Pushes a batch of events in order (so each user's in the order given), then waits for what each
    /// produced to be durable: one wait after all the pushes, so they share the store's group commits.
    /// Events whose commit was refused because another instance stored a newer session are pushed again, in
    /// order, on the newest sessions (up to ``Configuration/maximumPushAttempts`` in all), as
    /// ``push(event:parameters:for:context:eventID:eventTime:waitsForDurability:tracing:prepare:)`` does for one. A request with an
    /// invalid event ID is refused in its place (``PushResult/refusal``, `invalid_event_id`).
    /// - Returns: each event's outcome, in the order of `requests`.
    public func push(
        _ requests: [PushRequest],
        waitsForDurability: Bool = true,
        prepare: (DataLayer) -> Void = { _ in }
    ) async -> [Result<PushResult, PushError>] {
        var outcomes = [Result<PushResult, PushError>?](repeating: nil, count: requests.count)
        var pending = Array(requests.indices)
        let dropsFailedCopies = configuration.committer?.keepsSessions == true
        let attempts = max(1, configuration.maximumPushAttempts)
        for attempt in 1...attempts {
            if attempt > 1 { await pauseBeforeAttempt(attempt) }
            var pushed: [(index: Int, result: PushResult, session: DataLayer)] = []
            for index in pending {
                let request = requests[index]
                if let refusal = DataLayer.refusal(eventID: request.eventID) {
                    outcomes[index] = .success(refusal)
                    continue
                }
                do {
                    let (result, session) = try await pushOnce(
                        event: request.event,
                        parameters: request.parameters,
                        for: request.userID,
                        context: request.context,
                        eventID: request.eventID,
                        eventTime: request.eventTime,
                        command: request.command,
                        tracing: request.tracing,
                        prepare: prepare
                    )
                    pushed.append((index, result, session))
                } catch {
                    outcomes[index] = .failure(error)
                }
            }
            guard waitsForDurability else {
                for (index, result, _) in pushed { outcomes[index] = .success(result) }
                break
            }
            var again: [Int] = []
            for (index, result, session) in pushed {
                do {
                    try await result.waitUntilDurable()
                    var confirmed = result
                    confirmed.noteDurable()
                    outcomes[index] = .success(confirmed)
                } catch {
                    if dropsFailedCopies { invalidate(session) }
                    if error.code == .superseded, attempt < attempts {
                        again.append(index)
                    } else {
                        outcomes[index] = .failure(.notDurable(error, result: result))
                    }
                }
            }
            if again.isEmpty { break }
            pending = again
        }
        return outcomes.map { $0! }
    }
}
