import ContainerKit
public import ContainerKitDelivery

/// The ``RecordStore`` contract as checks that any store can run: the memory store, the segment log behind
/// the segment log, PostgreSQL, a store of your own. Each check opens the store (`make`), runs it as the
/// pipeline would, and throws a ``Failure`` that says which promise it broke.
///
/// ```swift
/// @Test func myStoreKeepsTheContract() async throws {
///     let directory = makeTemporaryDirectory()
///     try await RecordStoreConformance(make: { try MyStore(directory: directory) }).checkAll()
/// }
/// ```
///
/// Checks of what survives a restart run only for a store whose ``RecordStore/isDurable`` is `true`: `make`
/// must then open the same storage each time it is called (a new instance over it, as after `kill -9`). The
/// checks append records of users named `recordPrefix…`; a store shared with other data should start empty.
public struct RecordStoreConformance<Store: RecordStore>: Sendable {
    /// A broken promise of the contract.
    public struct Failure: Error, CustomStringConvertible {
        /// What the store did, and what the contract promises.
        public let description: String
    }

    private let make: @Sendable () async throws -> Store
    private let prefix: String

    /// Checks over the stores `make` opens.
    public init(recordPrefix: String = "conformance-", make: @escaping @Sendable () async throws -> Store) {
        self.make = make
        self.prefix = recordPrefix
    }

    /// Every check, in turn, over one storage: each continues from what the previous one left acknowledged.
    public func checkAll() async throws {
        try await appendsAreReportedInTicketOrderAndReadInAppendOrder()
        try await acknowledgedRecordsAreNotReadAgainAfterARestart()
    }

    /// Tickets grow by one from the first append; every ticket is reported committed, in ascending order;
    /// reads return the committed records in append order, in batches of at most the limit asked for, each
    /// starting right after the position given, and an empty batch past the end. Ends the run by cancelling
    /// it, which must return.
    public func appendsAreReportedInTicketOrderAndReadInAppendOrder() async throws {
        let store = try await make()
        let running = RunningStore(store)
        defer { running.stop() }
        let (records, tickets) = try append(3, batches: 4, to: store, tag: "order")
        guard tickets == Array(tickets.first!..<(tickets.first! + 4)) else {
            throw Failure(description: "tickets of four appends are \(tickets), not consecutive")
        }
        try await running.waitForCommit(of: tickets.last!)
        if let problem = running.reportProblem { throw Failure(description: problem) }
        let read = try await readAll(store, running, limit: 5, expecting: records.count)
        try Self.expectSameOrderPerUser(read.records, records)
        if let oversized = read.batchSizes.first(where: { $0 > 5 }) {
            throw Failure(description: "a read with limit 5 returned \(oversized) records")
        }
        let past = try await store.read(after: read.end, limit: 5)
        guard past.records.isEmpty else {
            throw Failure(description: "a read past the last record returned \(past.records.count) records")
        }
        running.stop()
        try await running.finished()
    }

    /// What was acknowledged is not read again by the same store, nor, for a durable store, after a restart;
    /// what was committed and not acknowledged is read again after a restart, in order.
    public func acknowledgedRecordsAreNotReadAgainAfterARestart() async throws {
        let store = try await make()
        let running = RunningStore(store)
        let (records, tickets) = try append(2, batches: 3, to: store, tag: "restart")
        try await running.waitForCommit(of: tickets.last!)
        // Two records, acknowledged: each user's first ones (a partitioned store may start with any user).
        let first = try await readAll(store, running, limit: 2, expecting: 2)
        let acknowledged = Set(first.records.map(\.id))
        let remaining = records.filter { !acknowledged.contains($0.id) }
        try Self.expectSameOrderPerUser(first.records, records.filter { acknowledged.contains($0.id) })
        for record in first.records {
            let earlier = records.prefix { $0.id != record.id }.filter { $0.user == record.user }
            guard earlier.allSatisfy({ acknowledged.contains($0.id) }) else {
                throw Failure(description: "record \(record.id) was read before an earlier record of its user")
            }
        }
        // The rest is committed and not acknowledged: a read from the oldest not acknowledged finds some of it.
        let rest = try await store.read(after: nil, limit: 100)
        guard !rest.records.isEmpty, rest.records.allSatisfy({ !acknowledged.contains($0.id) }) else {
            throw Failure(
                description: "a read from the oldest record not acknowledged returned \(rest.records.map(\.id)), "
                    + "none of it acknowledged, some of it expected"
            )
        }
        running.stop()
        try await running.finished()
        guard store.isDurable else { return }

        let reopened = try await make()
        let again = RunningStore(reopened)
        defer { again.stop() }
        let replay = try await readAll(reopened, again, limit: 100, expecting: remaining.count)
        try Self.expectSameOrderPerUser(replay.records, remaining)
        again.stop()
        try await again.finished()
    }

    // MARK: Helpers

    /// `read` holds exactly `appended`, and each user's records in the order they were appended.
    private static func expectSameOrderPerUser(_ read: [AnalyticsRecord], _ appended: [AnalyticsRecord]) throws {
        guard Set(read.map(\.id)) == Set(appended.map(\.id)), read.count == appended.count else {
            throw Failure(description: "read \(read.map(\.id)), committed \(appended.map(\.id))")
        }
        for user in Set(appended.map { "\(String(describing: $0.user))" }) {
            let order = { (records: [AnalyticsRecord]) in
                records.filter { "\(String(describing: $0.user))" == user }.map(\.id)
            }
            guard order(read) == order(appended) else {
                throw Failure(description: "the records of \(user) were read as \(order(read)), not \(order(appended))")
            }
        }
    }

    private func append(_ count: Int, batches: Int, to store: Store, tag: String) throws
        -> (records: [AnalyticsRecord], tickets: [UInt64])
    {
        var records: [AnalyticsRecord] = []
        var tickets: [UInt64] = []
        for batch in 0..<batches {
            let made = (0..<count).map { index in
                AnalyticsRecord(
                    user: .externalID(prefix + "\(tag)-\(batch)"),
                    payload: .customEvent(name: "\(tag) \(batch).\(index)", properties: ["n": .int(Int64(index))])
                )
            }
            records += made
            tickets.append(try store.append(EncodedRecords(made)))
        }
        return (records, tickets)
    }

    /// Reads until `count` records came, acknowledging each batch before the next read (as the pipeline does
    /// with one batch in flight). A store may return fewer records than the limit, and a store shared by
    /// instances may read nothing until it holds its leases, or hold back a partition until the batch in
    /// flight from it is acknowledged: after an empty read it must say that records are available
    /// (``RecordStoreCommits/recordsAvailable()``) before it is asked again.
    private func readAll(_ store: Store, _ running: RunningStore<Store>, limit: Int, expecting count: Int)
        async throws -> (records: [AnalyticsRecord], end: Store.Position?, batchSizes: [Int])
    {
        var records: [AnalyticsRecord] = []
        var end: Store.Position?
        var sizes: [Int] = []
        var empty = 0
        while records.count < count {
            let signals = running.availableSignals
            let batch = try await store.read(after: end, limit: limit)
            guard let batchEnd = batch.end else {
                empty += 1
                guard empty <= 1000 else { break }
                await running.waitForAvailability(after: signals)
                continue
            }
            if let end, !(end < batchEnd) {
                throw Failure(description: "a batch ended at a position not after the one it was read from")
            }
            records += batch.records
            sizes.append(batch.records.count)
            end = batchEnd
            try await store.acknowledge(through: batchEnd)
        }
        guard records.count == count else {
            throw Failure(description: "read \(records.count) records, \(count) were committed")
        }
        return (records, end, sizes)
    }
}

/// A store's `run(reporting:)` in a task, with what it reported.
private final class RunningStore<Store: RecordStore>: Sendable {
    private struct Reports {
        var committedThrough: UInt64 = 0
        var problem: String?
        var available = 0
    }

    private let reports = AwaitableState(Reports())
    private let task: Task<Void, any Error>

    init(_ store: Store) {
        let reports = self.reports
        let commits = RecordStoreCommits(
            committed: { ticket, _ in
                reports.update { reports in
                    if ticket <= reports.committedThrough, reports.problem == nil {
                        reports.problem = "ticket \(ticket) was reported committed after \(reports.committedThrough)"
                    }
                    reports.committedThrough = max(reports.committedThrough, ticket)
                }
            },
            failed: { tickets, _, error in
                reports.update { reports in
                    if reports.problem == nil {
                        reports.problem = "tickets \(tickets) failed (\(error.code)) with nothing wrong"
                    }
                    reports.committedThrough = max(reports.committedThrough, tickets.upperBound)
                }
            },
            available: { reports.update { $0.available += 1 } }
        )
        task = Task { try await store.run(reporting: commits) }
    }

    var reportProblem: String? { reports.value.problem }

    /// How many times the store said records are available.
    var availableSignals: Int { reports.value.available }

    /// Waits until the store says records are available more than `count` times.
    func waitForAvailability(after count: Int) async { await reports.wait { $0.available > count } }

    func waitForCommit(of ticket: UInt64) async throws {
        await reports.wait { $0.committedThrough >= ticket }
        if let problem = reports.value.problem {
            throw RecordStoreConformance<Store>.Failure(description: problem)
        }
    }

    func stop() { task.cancel() }

    func finished() async throws { try await task.value }
}
