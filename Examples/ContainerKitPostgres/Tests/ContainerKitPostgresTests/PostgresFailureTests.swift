import ContainerKit
import ContainerKitDelivery
import ContainerKitPostgres
import ContainerKitTesting
import Foundation
import PostgresNIO
import PostgresTestHarness
import Testing

/// What a host sees when PostgreSQL is slow, gone or refuses the store's role: failures within the call deadline,
/// that say what they are, name no URL, password or SQL, and an unavailable store until a call succeeds again.
@Suite(.timeLimit(.minutes(2)))
struct PostgresFailureTests {
    /// Another connection holds `ck_session_changes` in ACCESS EXCLUSIVE mode for 25 s (a migration, a `VACUUM
    /// FULL`): pushes fail within the 2 s deadline — a user in memory with `timeout` (`postgres_timeout`), a new
    /// user because its session cannot be loaded — the store is unavailable the whole time, and everything
    /// goes through again once the lock is released.
    @Test func aTableLockedFor25SecondsFailsPushesWithinTheDeadlineAndTheStoreRecovers() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let availability = Reports<Bool>()
        let instance = Instance(endpoint) { configuration in
            configuration.delivers = false
            configuration.callTimeout = .seconds(2)
            configuration.healthInterval = .milliseconds(200)
            configuration.onAvailabilityChanged = { availability.report($0) }
        }
        let sessions = committingSessions(instance)
        let deadline = Duration.seconds(2)
        let slack = Duration.seconds(1)
        try await withRunning([instance.run]) {
            try await sessions.push(event: "before", parameters: ["n": 1], for: "warm")
            while !instance.store.isAvailable { _ = await availability.next() }

            let blocker = try await beginTransaction(endpoint, id: 77)
            try await blocker.query("LOCK TABLE ck_session_changes IN ACCESS EXCLUSIVE MODE", logger: testLogger)
            let lockedAt = ContinuousClock.now
            let release = Task {
                try await Task.sleep(until: lockedAt + .seconds(25))
                try await blocker.query("ROLLBACK", logger: testLogger)
                try await blocker.close()
            }

            // A user whose session is in memory: the push runs, its commit fails within the deadline.
            var started = ContinuousClock.now
            do throws(SessionStore.PushError) {
                try await sessions.push(event: "locked", parameters: ["n": 2], for: "warm")
                Issue.record("a push committed while the sessions table was locked")
            } catch {
                guard case .notDurable(let failure, _) = error else {
                    Issue.record("expected notDurable, got \(error)")
                    throw error
                }
                #expect(failure.code == .timeout)
                #expect(failure.message.contains("postgres_timeout"), "\(failure.message)")
            }
            #expect(ContinuousClock.now - started < deadline + slack)
            #expect(!instance.store.isAvailable)

            // A user PostgreSQL has to be asked about: the load fails (at once, or within the deadline).
            started = ContinuousClock.now
            do throws(SessionStore.PushError) {
                try await sessions.push(event: "cold", parameters: [:], for: "cold")
                Issue.record("a new user's session was loaded while the sessions table was locked")
            } catch {
                guard case .sessionUnavailable(let failure) = error else {
                    Issue.record("expected sessionUnavailable, got \(error)")
                    throw error
                }
                #expect(failure.message.contains("postgres_timeout"), "\(failure.message)")
            }
            #expect(ContinuousClock.now - started < deadline + slack)

            // The health check takes the locks a commit takes: the store stays unavailable while the lock is held.
            try await Task.sleep(for: .seconds(3))
            #expect(!instance.store.isAvailable)
            let direct = await #expect(throws: DurabilityError.self) {
                try await instance.commit([makeRecord(user: "direct")])
            }
            #expect(direct?.code == .timeout, "fails at once with the failure that made the store unavailable")

            try await release.value
            #expect(ContinuousClock.now - lockedAt >= .seconds(25))
            while !instance.store.isAvailable { _ = await availability.next() }
            try await sessions.push(event: "after", parameters: ["n": 3], for: "warm")
            try await sessions.push(event: "after", parameters: [:], for: "cold")
            let warm = try #require(try await instance.store.sessions.load(userID: "warm"))
            #expect(warm.snapshot.model["n"] == 3)
            #expect(warm.snapshot.eventNumber == 2, "the push refused under the lock is not in the session")
            #expect(try await instance.store.sessions.load(userID: "cold")?.version == 1)
        }
        #expect(instance.store.statistics.timedOutCalls > 0)
        // The push refused under the lock left nothing: the session continued from the one before it.
        let versions = "SELECT version FROM ck_session_changes WHERE user_id = 'warm' ORDER BY version"
        #expect(try await query(endpoint, versions, as: Int64.self) == [1, 2])
        #expect(try await query(endpoint, "SELECT count(*) FROM ck_records", as: Int64.self) == [0])
    }

    /// A server that cannot be reached, with a password in the URL: commits and loads fail with messages that
    /// hold neither the URL nor the password nor the address.
    @Test func failuresToReachTheServerNameNeitherTheURLNorThePassword() async throws {
        let port = try PostgresTestCluster.freePort()
        let url = "postgres://ck_writer:s3cret-pw@127.0.0.1:\(port)/tags"
        let endpoint = try PostgresEndpoint(url: url)
        let instance = Instance(endpoint) { configuration in
            configuration.delivers = false
            configuration.callTimeout = .seconds(1)
        }
        try await withRunning([instance.run]) {
            let commit = await #expect(throws: DurabilityError.self) {
                try await instance.commit([makeRecord(user: "u")])
            }
            let load = await #expect(throws: ContainerError.self) {
                _ = try await instance.store.sessions.load(userID: "u")
            }
            for message in [commit?.message, load?.message].compactMap({ $0 }) {
                #expect(message.contains("postgres_"), "\(message)")
                for secret in [url, "s3cret", "postgres://", "127.0.0.1", "\(port)", "tags"] {
                    #expect(!message.contains(secret), "'\(message)' holds '\(secret)'")
                }
            }
            #expect(!instance.store.isAvailable)
        }
    }

    /// A statement the server refuses (its function was dropped behind the store's back): the message holds no
    /// SQL, and the store creates its schema again at the next call.
    @Test func aRefusedStatementsMessageHoldsNoSQLAndAMissingFunctionIsCreatedAgain() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let instance = Instance(endpoint) { $0.delivers = false }
        try await withRunning([instance.run]) {
            try await instance.commit([makeRecord(user: "u")], sessions: [stored("u", version: 1)])
            try await execute(endpoint, "DROP FUNCTION ck_commit_group")
            let refused = await #expect(throws: DurabilityError.self) {
                try await instance.commit([makeRecord(user: "u", event: "lost")])
            }
            let message = refused?.message ?? ""
            #expect(message.contains("postgres_error"), "\(message)")
            for sql in ["SELECT", "ck_commit_group", "unnest", "$1", "INSERT", "does not exist"] {
                #expect(!message.contains(sql), "'\(message)' holds '\(sql)'")
            }
            try await instance.commit([makeRecord(user: "u", event: "again")], sessions: [stored("u", version: 2)])
        }
        #expect(try await query(endpoint, "SELECT count(*) FROM ck_records", as: Int64.self) == [2])
    }

    /// A role without CREATE on the schema (PostgreSQL 15's default for `public`): commits and loads fail as a
    /// permissions problem naming what to grant, not as a lost connection; once granted, the store recovers.
    @Test func aRoleWithoutCreateOnTheSchemaIsReportedAsAPermissionToGrant() async throws {
        let owner = try await SharedCluster.freshDatabase()
        let role = "ck_limited_\(UUID().uuidString.prefix(8).lowercased())"
        try await execute(owner, "CREATE ROLE \(role) LOGIN")
        var limited = owner
        limited.user = role
        let availability = Reports<Bool>()
        let instance = Instance(limited) { configuration in
            configuration.delivers = false
            configuration.healthInterval = .milliseconds(200)
            configuration.onAvailabilityChanged = { availability.report($0) }
        }
        try await withRunning([instance.run]) {
            let commit = await #expect(throws: DurabilityError.self) {
                try await instance.commit([makeRecord(user: "u")])
            }
            #expect(commit?.code == .unavailable)
            let load = await #expect(throws: ContainerError.self) {
                _ = try await instance.store.sessions.load(userID: "u")
            }
            let grant = "GRANT USAGE, CREATE ON SCHEMA public TO \(role)"
            for message in [commit?.message, load?.message] {
                let text = message ?? ""
                #expect(text.contains("postgres_permission_denied"), "\(text)")
                #expect(text.contains(grant), "\(text)")
                #expect(!text.contains("connection") && !text.contains("cannot be reached"), "\(text)")
            }
            #expect(!instance.store.isAvailable)

            try await execute(owner, grant)
            while !instance.store.isAvailable { _ = await availability.next() }
            try await instance.commit([makeRecord(user: "u")], sessions: [stored("u", version: 1)])
            #expect(try await instance.store.sessions.load(userID: "u")?.version == 1)
        }
    }
}

/// A session store on `instance` whose pushes commit their records and the session's checkpoint in one append.
private func committingSessions(_ instance: Instance) -> SessionStore {
    SessionStore(
        tagManager: TagManager(logger: InMemoryLogger()),
        configuration: .init(
            persistence: instance.store.sessions,
            committer: RecordCommitter(instance.pipeline, keepsSessions: true)
        )
    )
}
