import ContainerKit
import ContainerKitDelivery
import ContainerKitPostgres
import Foundation
import PostgresTestHarness
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What the store costs PostgreSQL, on a cluster of its own: CPU seconds of the server's processes per event,
/// round trips per commit, records per commit. Run with `CKPG_BENCH=1 make test-postgres` (skipped otherwise);
/// the figures are printed as `bench: name=value` lines.
@Suite(.serialized, .enabled(if: ProcessInfo.processInfo.environment["CKPG_BENCH"] != nil))
struct PostgresBenchmarkTests {
    /// One instance; each group is `groupSize` appends (a record and a session delta of its own user each),
    /// appended together and waited for. 64: the issue's target group (`events_per_commit_hot` ≥ 64).
    @Test(arguments: [64, 32, 8])
    func fixedGroups(groupSize: Int) async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let url = try await cluster.createDatabase()
        let database = String(url.split(separator: "/").last ?? "")
        let endpoint = try PostgresEndpoint(url: url)
        let instance = Instance(endpoint) { $0.delivers = false }
        let rounds = Int(ProcessInfo.processInfo.environment["CKPG_BENCH_ROUNDS"] ?? "") ?? 300
        try await withRunning([instance.run]) {
            // The users' first versions (snapshots), outside the measurement.
            try await instance.commit(
                (0..<groupSize).map { makeRecord(user: "u\($0)") },
                checkpoints: (0..<groupSize).map { SessionCheckpoint(stored("u\($0)", version: 1)) }
            )
            let before = instance.store.statistics
            let wal = try await cluster.psql("SELECT pg_current_wal_lsn()", database: database)
            let cpu = ServerCPU(cluster: cluster)
            let started = ContinuousClock.now
            for round in 0..<rounds {
                var tickets: [UInt64] = []
                for slot in 0..<groupSize {
                    let version = Int64(round + 2)
                    let token = try instance.pipeline.append(
                        EncodedRecords(
                            [makeRecord(user: "u\(slot)", event: "e\(round)")],
                            sessions: [benchDelta("u\(slot)", version: version)]
                        )
                    )
                    tickets.append(token.ticket)
                }
                try await instance.pipeline.waitUntilDurable(tickets: tickets)
            }
            let seconds = (ContinuousClock.now - started).benchSeconds
            let cpuSeconds = cpu.elapsed()
            let after = instance.store.statistics
            let walBytes = try await cluster.psql(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '\(wal)')",
                database: database
            )
            let events = rounds * groupSize
            let commits = after.commits - before.commits
            report(
                "fixed_groups_\(groupSize)",
                [
                    ("events", "\(events)"),
                    ("commits", "\(commits)"),
                    ("events_per_commit", format(Double(events) / Double(max(1, commits)))),
                    ("round_trips_per_commit", roundTrips(before, after, commits: commits)),
                    ("server_cpu_us_per_event", format(cpuSeconds * 1e6 / Double(events))),
                    ("wal_bytes_per_event", format((Double(walBytes) ?? 0) / Double(events))),
                    ("events_per_s", format(Double(events) / seconds)),
                ]
            )
        }
    }

    /// Three instances on one database, `clients` pushers spread over them, each committing its own user's
    /// record and delta and waiting for it before the next, for a few seconds.
    @Test func concurrentPushersOnThreeInstances() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let endpoint = try PostgresEndpoint(url: try await cluster.createDatabase())
        let delay = ProcessInfo.processInfo.environment["CKPG_BENCH_COMMIT_DELAY_MS"].flatMap { Int($0) }
        let instances = (0..<3).map { index in
            Instance(endpoint, name: "i\(index)") { configuration in
                configuration.delivers = false
                if let delay { configuration.commitDelay = .milliseconds(delay) }
            }
        }
        let clients = Int(ProcessInfo.processInfo.environment["CKPG_BENCH_CLIENTS"] ?? "") ?? 48
        let duration = Duration.seconds(Int(ProcessInfo.processInfo.environment["CKPG_BENCH_SECONDS"] ?? "") ?? 5)
        try await withRunning(instances.map(\.run)) {
            for (index, instance) in instances.enumerated() {
                let users = stride(from: index, to: clients, by: 3).map { "c\($0)" }
                try await instance.commit(
                    users.map { makeRecord(user: $0) },
                    checkpoints: users.map { SessionCheckpoint(stored($0, version: 1)) }
                )
            }
            let before = instances.map(\.store.statistics)
            let cpu = ServerCPU(cluster: cluster)
            let started = ContinuousClock.now
            let end = started + duration
            let (events, latencies) = try await withThrowingTaskGroup(of: [Double].self) { group in
                for client in 0..<clients {
                    let instance = instances[client % 3]
                    group.addTask {
                        var version: Int64 = 1
                        var mine: [Double] = []
                        while ContinuousClock.now < end {
                            let sent = ContinuousClock.now
                            version += 1
                            try await instance.commit(
                                [makeRecord(user: "c\(client)", event: "e\(version)")],
                                checkpoints: [benchDelta("c\(client)", version: version)]
                            )
                            mine.append((ContinuousClock.now - sent).benchSeconds)
                        }
                        return mine
                    }
                }
                var all: [Double] = []
                for try await mine in group { all += mine }
                return (all.count, all.sorted())
            }
            let seconds = (ContinuousClock.now - started).benchSeconds
            let cpuSeconds = cpu.elapsed()
            let after = instances.map(\.store.statistics)
            let commits = zip(before, after).reduce(0) { $0 + $1.1.commits - $1.0.commits }
            var trips = 0
            for (old, new) in zip(before, after) { trips += roundTripCount(new) - roundTripCount(old) }
            report(
                "three_instances_\(clients)_clients_delay_\(delay.map { "\($0)ms" } ?? "default")",
                [
                    ("events", "\(events)"),
                    ("commits", "\(commits)"),
                    ("events_per_commit", format(Double(events) / Double(max(1, commits)))),
                    ("round_trips_per_commit", format(Double(trips) / Double(max(1, commits)))),
                    ("server_cpu_us_per_event", format(cpuSeconds * 1e6 / Double(max(1, events)))),
                    ("events_per_s", format(Double(events) / seconds)),
                    ("latency_p50_ms", format(percentile(latencies, 0.5) * 1000)),
                    ("latency_p99_ms", format(percentile(latencies, 0.99) * 1000)),
                ]
            )
        }
    }

    /// 5,000 users PostgreSQL has never seen, loaded at once: the connections the burst opened and its time.
    @Test func aBurstOfColdLoads() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let endpoint = try PostgresEndpoint(url: try await cluster.createDatabase())
        let instance = Instance(endpoint) { $0.delivers = false }
        try await withRunning([instance.run]) {
            _ = try await instance.store.sessions.load(userID: "warm-up")
            let opened = "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
            let before = try await query(endpoint, opened, as: Int64.self)
            let cpu = ServerCPU(cluster: cluster)
            let started = ContinuousClock.now
            let persistence = instance.store.sessions
            let failed = await withTaskGroup(of: Int.self) { group in
                for user in 0..<5000 {
                    group.addTask {
                        do {
                            _ = try await persistence.load(userID: "cold-\(user)")
                            return 0
                        } catch {
                            return 1
                        }
                    }
                }
                return await group.reduce(0, +)
            }
            let seconds = (ContinuousClock.now - started).benchSeconds
            let cpuSeconds = cpu.elapsed()
            let after = try await query(endpoint, opened, as: Int64.self)
            report(
                "cold_loads_5000",
                [
                    ("connections_opened", "\((after.first ?? 0) - (before.first ?? 0) - 1)"),
                    ("failed_loads", "\(failed)"),
                    ("seconds", format(seconds)),
                    ("server_cpu_us_per_load", format(cpuSeconds * 1e6 / 5000)),
                ]
            )
        }
    }
}

/// A delta of `userID` at `version`, continuing the version before.
private func benchDelta(_ userID: String, version: Int64) -> SessionCheckpoint {
    SessionCheckpoint(
        userID: userID,
        version: version,
        expected: version - 1,
        content: .delta(SessionDelta(sessionID: userID, model: ["n": .int(version)], eventNumber: Int(version)))
    )
}

/// The round trips the store counted (0 before the store counted them).
private func roundTripCount(_ statistics: PostgresRecordStore.Statistics) -> Int {
    Mirror(reflecting: statistics).children.first { $0.label == "roundTrips" }?.value as? Int ?? 0
}

private func roundTrips(
    _ before: PostgresRecordStore.Statistics,
    _ after: PostgresRecordStore.Statistics,
    commits: Int
) -> String {
    let trips = roundTripCount(after) - roundTripCount(before)
    return trips == 0 ? "uncounted" : format(Double(trips) / Double(max(1, commits)))
}

private func report(_ name: String, _ figures: [(String, String)]) {
    print("bench: \(name) " + figures.map { "\($0.0)=\($0.1)" }.joined(separator: " "))
}

private func format(_ value: Double) -> String { String(format: "%.2f", value) }

private func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

extension Duration {
    fileprivate var benchSeconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}

/// CPU seconds (user + system) the cluster's server processes used since it was created: the postmaster, its
/// children alive now, and the children that ended (the postmaster's `cutime` + `cstime`).
struct ServerCPU {
    private let postmaster: Int32
    private let start: Double

    init(cluster: PostgresTestCluster) {
        let pidFile = (try? String(contentsOfFile: "\(cluster.directory)/data/postmaster.pid", encoding: .utf8)) ?? ""
        postmaster = Int32(pidFile.split(separator: "\n").first.map(String.init) ?? "") ?? 0
        start = Self.total(postmaster)
    }

    /// CPU seconds since this value was made.
    func elapsed() -> Double { Self.total(postmaster) - start }

    private static func total(_ postmaster: Int32) -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var sum = 0.0
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), let fields = stat(pid) else { continue }
            if pid == postmaster {
                sum += (fields[11] + fields[12] + fields[13] + fields[14]) / ticks
            } else if Int32(fields[1]) == postmaster {
                sum += (fields[11] + fields[12]) / ticks
            }
        }
        return sum
    }

    /// The fields of `/proc/<pid>/stat` after the command name, from `state` on (state is 0, never numeric).
    private static func stat(_ pid: Int32) -> [Double]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ").map { Double($0) ?? 0 }
        return fields.count > 14 ? fields : nil
    }
}
