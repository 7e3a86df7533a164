public import ContainerKit

/// The promises of a store that keeps sessions with the records (see "Stores that keep sessions" in
/// `RecordStore`) as checks any such store can run: the segment log, PostgreSQL, ``InMemorySessionLog``, one of
/// your own. Each check drives real ``SessionStore``s committing deltas through the store and throws a
/// ``Failure`` saying what the store did wrong.
///
/// ```swift
/// @Test func myStoreKeepsSessions() async throws {
///     let store = MyStore(...)                     // its pipeline running beside the test
///     try await SessionCommitConformance(make: {
///         .init(committer: RecordCommitter(pipeline, keepsSessions: true), persistence: store.sessions)
///     }).checkAll()
/// }
/// ```
public struct SessionCommitConformance: Sendable {
    /// A broken promise.
    public struct Failure: Error, CustomStringConvertible {
        /// What the store did, and what it promises.
        public let description: String
    }

    /// One instance of the service: how it commits pushes and loads sessions. Instances made by one conformance
    /// share the storage (as instances of a service share a database, or one process its log).
    public struct Instance: Sendable {
        /// Commits each push (keeps sessions).
        public var committer: any PushCommitter
        /// Loads and saves sessions of the same storage.
        public var persistence: any SessionPersistence

        /// Creates an instance.
        public init(committer: any PushCommitter, persistence: any SessionPersistence) {
            self.committer = committer
            self.persistence = persistence
        }
    }

    private let make: @Sendable () async throws -> Instance
    private let prefix: String

    /// Checks over the storage that `make` reaches (it must be running: its pipeline's `run()` beside the
    /// checks). The checks use user IDs that start with `userPrefix`.
    public init(userPrefix: String = "commit-conformance-", make: @escaping @Sendable () async throws -> Instance) {
        self.make = make
        self.prefix = userPrefix
    }

    /// Every check, in turn.
    public func checkAll() async throws {
        try await deltasFoldIntoTheStateAnotherInstanceLoads()
        try await aStaleOwnersPushIsFencedAndPushedAgainOnTheNewestState()
        try await anEndedSessionIsNotLoadedAndAReturningUserContinuesAboveIt()
        try await concurrentPushesOfOneUserOnTwoInstancesAllSucceedOnce()
        try await seenEventIDsTravelWithTheSessionToAnotherInstance()
        try await consentStateTravelsWithTheSessionToAnotherInstance()
    }

    func store(
        _ instance: Instance,
        clock: ManualClock? = nil,
        eventIDs: EventIDWindow = EventIDWindow()
    ) -> SessionStore {
        var configuration = SessionStore.Configuration(
            idleTimeout: .seconds(60),
            persistence: instance.persistence,
            committer: instance.committer
        )
        configuration.snapshotInterval = 4
        let manager = TagManager(logger: InMemoryLogger(), eventIDs: eventIDs)
        if let clock { return SessionStore(tagManager: manager, configuration: configuration, clock: clock) }
        return SessionStore(tagManager: manager, configuration: configuration)
    }

    /// Pushes that set top-level, nested, dotted and user-property keys, more than the snapshot interval for
    /// three users (so loads fold a snapshot and deltas), with attributes set between pushes: another instance
    /// loads exactly the state of the owner's live sessions.
    public func deltasFoldIntoTheStateAnotherInstanceLoads() async throws {
        let owner = store(try await make())
        let users = (0..<3).map { "\(prefix)fold-\($0)" }
        for round in 0..<11 {
            for (index, user) in users.enumerated() {
                var parameters: ValueMap = [
                    "round": .int(Int64(round)),
                    "cart": ["items": .array([.int(Int64(round))]), "user": .int(Int64(index))],
                ]
                if round % 3 == 0 { parameters["gtm.userProperties"] = ["tier": .int(Int64(round))] }
                if round % 4 == 1 { parameters["page.path"] = .string("/p/\(round)") }
                try await owner.push(event: round % 2 == 0 ? "view" : "tap", parameters: parameters, for: user) {
                    $0.setAttribute(.int(Int64(round)), forKey: "seen")
                }
            }
        }
        let other = store(try await make())
        for user in users {
            let expected = owner.existingSession(for: user)?.snapshot().jsonText
            let loaded = try await other.loadSession(for: user).snapshot().jsonText
            guard loaded == expected else {
                throw Failure(
                    description:
                        "another instance loads '\(user)' as \(loaded), the owner holds \(expected ?? "nothing")"
                )
            }
        }
    }

    /// A push on a copy older than the stored session is refused by the store's fence; the session store loads
    /// the newest state and pushes again, so both pushes are in the state, once each.
    public func aStaleOwnersPushIsFencedAndPushedAgainOnTheNewestState() async throws {
        let user = prefix + "stale"
        let first = store(try await make())
        let second = store(try await make())
        try await first.push(event: "one", parameters: ["a": 1], for: user)
        _ = try await second.loadSession(for: user)
        try await first.push(event: "two", parameters: ["b": 2], for: user)
        try await second.push(event: "three", parameters: ["c": 3], for: user)
        let loaded = try await store(try await make()).loadSession(for: user).snapshot()
        guard loaded.model["a"] == 1, loaded.model["b"] == 2, loaded.model["c"] == 3, loaded.eventNumber == 3 else {
            throw Failure(description: "after a fenced push '\(user)' holds \(loaded.jsonText)")
        }
    }

    /// 64 pushes of one user at once, spread over two instances (a load balancer without affinity, or a user
    /// moving): the instances fence each other, and every push still succeeds — pushed again on the newest state
    /// as often as it takes, within ``SessionStore/Configuration/maximumPushAttempts`` — and is in the final
    /// state exactly once.
    public func concurrentPushesOfOneUserOnTwoInstancesAllSucceedOnce() async throws {
        let user = prefix + "two-instances"
        let stores = [store(try await make()), store(try await make())]
        let failures = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<64 {
                group.addTask {
                    do {
                        try await stores[index % 2].push(
                            event: "tap",
                            parameters: ["k\(index)": .int(Int64(index))],
                            for: user
                        )
                        return nil
                    } catch {
                        return "push \(index): \(error)"
                    }
                }
            }
            var failures: [String] = []
            for try await failure in group { if let failure { failures.append(failure) } }
            return failures
        }
        guard failures.isEmpty else {
            throw Failure(description: "\(failures.count) of 64 pushes failed, first: \(failures[0])")
        }
        let loaded = try await store(try await make()).loadSession(for: user).snapshot()
        let keys = (0..<64).filter { loaded.model["k\($0)"] == .int(Int64($0)) }.count
        guard loaded.eventNumber == 64, keys == 64 else {
            throw Failure(description: "'\(user)' holds \(loaded.eventNumber) events and \(keys) of the 64 keys")
        }
    }

    /// Pushes with event IDs, more than a session remembers (five here) and more than the snapshot interval, with
    /// pushes without IDs between them: another instance loads the same remembered IDs (the newest five, so the
    /// deltas' pruning folded exactly), answers a retry of a remembered one as a duplicate without applying it,
    /// and applies a retry of a forgotten one.
    public func seenEventIDsTravelWithTheSessionToAnotherInstance() async throws {
        let user = prefix + "event-ids"
        let window = EventIDWindow(maximumCount: 5)
        let owner = store(try await make(), eventIDs: window)
        for n in 0..<12 {
            try await owner.push(event: "tap", parameters: ["n": .int(Int64(n))], for: user, eventID: "e-\(n)")
            if n % 3 == 0 { try await owner.push(event: "scroll", parameters: ["depth": .int(Int64(n))], for: user) }
        }
        let expected = owner.existingSession(for: user)?.snapshot()
        let other = store(try await make(), eventIDs: window)
        let loaded = try await other.loadSession(for: user).snapshot()
        guard loaded == expected, loaded.eventIDs.map(\.id) == (7..<12).map({ "e-\($0)" }) else {
            throw Failure(
                description:
                    "another instance loads '\(user)' as \(loaded.jsonText), the owner holds \(expected?.jsonText ?? "nothing")"
            )
        }
        let retry = try await other.push(event: "tap", parameters: ["n": 11], for: user, eventID: "e-11")
        let forgotten = try await other.push(event: "tap", parameters: ["n": 6], for: user, eventID: "e-6")
        let final = try await store(try await make(), eventIDs: window).loadSession(for: user).snapshot()
        guard retry.isDuplicate, !forgotten.isDuplicate, final.eventNumber == loaded.eventNumber + 1,
            final.eventIDs.map(\.id) == ["e-8", "e-9", "e-10", "e-11", "e-6"]
        else {
            throw Failure(
                description:
                    "a retry of a remembered id on another instance was \(retry.isDuplicate ? "" : "not ")a duplicate, "
                    + "of a forgotten one \(forgotten.isDuplicate ? "" : "not ")a duplicate; '\(user)' then holds "
                    + final.jsonText
            )
        }
    }

    /// Consent commands (a regional default, then updates) between events, more than the snapshot interval, so
    /// that the state travels in deltas and in snapshots: another instance loads the same consent state and
    /// context, and the commands' changes are committed like any push's.
    public func consentStateTravelsWithTheSessionToAnotherInstance() async throws {
        let user = prefix + "consent"
        var spain = ClientContext()
        try spain.setValue("ES-MD", forKey: "region")
        let owner = store(try await make())
        try await owner.push(
            try ConsentCommand(gtagArguments: [
                "consent", "default", ["ad_storage": "denied", "analytics_storage": "denied", "region": ["ES"]],
            ]),
            for: user,
            context: spain
        )
        // Commits (snapshot interval 4): default (a snapshot), view, view, update, view (a snapshot), view,
        // update, view: the second update travels in a delta only.
        for n in 0..<5 {
            try await owner.push(event: "view", parameters: ["n": .int(Int64(n))], for: user)
            if n == 1 || n == 3 {
                let value: Value = n == 1 ? "granted" : "denied"
                try await owner.push(
                    try ConsentCommand(gtagArguments: ["consent", "update", ["ad_storage": value]]),
                    for: user
                )
            }
        }
        let expected = owner.existingSession(for: user)?.snapshot()
        let loaded = try await store(try await make()).loadSession(for: user).snapshot()
        guard loaded == expected, loaded.consent.entry("ad_storage")?.updateGranted == false,
            loaded.consent.entry("analytics_storage")?.region == "ES", loaded.context.region == "ES-MD"
        else {
            throw Failure(
                description:
                    "another instance loads '\(user)' as \(loaded.jsonText), the owner holds \(expected?.jsonText ?? "nothing")"
            )
        }
    }

    /// A session that ended (idle, its removal saved) is not loaded again; the user's new session is committed
    /// above the ended version and is what another instance loads.
    public func anEndedSessionIsNotLoadedAndAReturningUserContinuesAboveIt() async throws {
        let user = prefix + "ended"
        let clock = ManualClock()
        let owner = store(try await make(), clock: clock)
        for visit in 1...6 {
            try await owner.push(event: "visit", parameters: ["visit": .int(Int64(visit))], for: user)
        }
        clock.advance(by: .seconds(61))
        guard owner.evictIdle() == 1 else { throw Failure(description: "the idle session of '\(user)' stayed") }
        try await owner.saveChanges()
        if let stale = try await (try await make()).persistence.load(userID: user) {
            throw Failure(description: "an ended session still loads: version \(stale.version) of '\(user)'")
        }
        try await owner.push(event: "back", parameters: ["page": "home"], for: user)
        let loaded = try await store(try await make()).loadSession(for: user).snapshot()
        guard loaded.model["visit"] == nil, loaded.model["page"] == "home", loaded.eventNumber == 1 else {
            throw Failure(description: "the returning user '\(user)' loads as \(loaded.jsonText)")
        }
    }
}
