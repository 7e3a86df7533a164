import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// A fresh directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init(_ name: String = "queue") {
        path = NSTemporaryDirectory() + "containerkit-braze-\(name)-\(UUID().uuidString)"
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A destination that accepts or fails deliveries as a test tells it to.
final class ScriptedDownstream: AnalyticsDestination {
    enum Mode: Sendable { case confirm, fail }

    private struct State {
        var mode: Mode = .confirm
        var delivered: [AnalyticsRecord] = []
        var attempts = 0
    }

    private let state: AwaitableState<State>
    let preferredBatchSize: Int

    init(mode: Mode = .confirm, batchSize: Int = 500) {
        state = AwaitableState(State(mode: mode))
        preferredBatchSize = batchSize
    }

    var mode: Mode {
        get { state.value.mode }
        set { state.update { $0.mode = newValue } }
    }

    var delivered: [AnalyticsRecord] { state.value.delivered }
    var attempts: Int { state.value.attempts }

    /// Returns once at least `count` deliveries were attempted.
    func waitForAttempts(_ count: Int) async { await state.wait { $0.attempts >= count } }

    /// Returns once at least `count` records were delivered.
    func waitForDelivered(_ count: Int) async { await state.wait { $0.delivered.count >= count } }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        state.update { state in
            state.attempts += 1
            if state.mode == .fail {
                return .retry(records, DeliveryError(.serverError, "scripted downstream failure", status: 503))
            }
            state.delivered.append(contentsOf: records)
            return .accepted(records)
        }
    }
}

extension ManualClock {
    /// A clock on which retry back-offs, pauses, lingers and drains of up to 10 minutes pass at once (recorded
    /// in ``ManualClock/autoAdvancedSleeps``); longer sleeps (flush intervals, deadlines) wait for
    /// ``ManualClock/advance(by:)``, which in most tests means until they are cancelled.
    static func skippingShortSleeps() -> ManualClock { ManualClock(autoAdvance: .seconds(600)) }
}

/// Runs `body` while `component.run()` runs beside it; then shuts the component down gracefully (it
/// drains) and waits for it to return.
func whileRunning<T: Sendable>(
    _ component: some Runnable,
    _ body: () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await component.run() }
        let result: T
        do {
            result = try await body()
        } catch {
            group.cancelAll()
            throw error
        }
        component.gracefulShutdown()
        try await group.waitForAll()
        return result
    }
}

func event(_ name: String, user: UserIdentity? = .externalID("u-1"), _ properties: ValueMap = [:]) -> AnalyticsRecord {
    AnalyticsRecord(user: user, payload: .customEvent(name: name, properties: properties))
}

/// A destination that holds every delivery until the test settles it: each call is announced on
/// ``arrivals`` (its records) and answered with what ``settle(_:with:)`` gives.
final class GatedDestination: AnalyticsDestination {
    private struct State {
        var waiting: [(records: [AnalyticsRecord], answer: CheckedContinuation<DeliveryResult, Never>)] = []
        var running = 0
        var mostRunning = 0
        var delivered: [AnalyticsRecord] = []
    }

    private let state = Mutex(State())
    private let arrivalsContinuation: AsyncStream<[AnalyticsRecord]>.Continuation
    /// The records of each delivery, as it starts.
    let arrivals: AsyncStream<[AnalyticsRecord]>
    let preferredBatchSize: Int

    init(batchSize: Int) {
        preferredBatchSize = batchSize
        (arrivals, arrivalsContinuation) = AsyncStream.makeStream()
    }

    /// The most deliveries that were running at once.
    var mostRunning: Int { state.withLock { $0.mostRunning } }
    /// The records accepted so far, in the order their deliveries were settled.
    var delivered: [AnalyticsRecord] { state.withLock { $0.delivered } }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        await withCheckedContinuation { continuation in
            state.withLock { state in
                state.waiting.append((records, continuation))
                state.running += 1
                state.mostRunning = max(state.mostRunning, state.running)
            }
            arrivalsContinuation.yield(records)
        }
    }

    /// Answers the waiting delivery whose first record is `first`: accepted, or retried with a 503.
    func settle(_ first: AnalyticsRecord, accept: Bool = true) {
        let answer = state.withLock { state -> (CheckedContinuation<DeliveryResult, Never>, DeliveryResult)? in
            guard let index = state.waiting.firstIndex(where: { $0.records.first == first }) else { return nil }
            let (records, continuation) = state.waiting.remove(at: index)
            state.running -= 1
            if accept {
                state.delivered += records
                return (continuation, .accepted(records))
            }
            return (continuation, .retry(records, DeliveryError(.serverError, "gated failure", status: 503)))
        }
        if let (continuation, result) = answer { continuation.resume(returning: result) }
    }
}

/// Writes segment `index` of a queue in `directory` by hand: as the queue writes it now (each line with its
/// checksum), or, with `checksummed: false`, as queues before the checksum did (plain JSON lines).
func writeSegment(
    _ directory: TemporaryDirectory,
    _ index: UInt64,
    _ records: [AnalyticsRecord],
    checksummed: Bool = true
) throws {
    var json = JSONByteWriter()
    for record in records {
        if checksummed {
            SegmentLog.appendLine(record, to: &json)
        } else {
            Array((record.jsonLine + "\n").utf8).withUnsafeBufferPointer { json.append($0) }
        }
    }
    try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
    try Data(json.bytes).write(to: URL(fileURLWithPath: directory.file(SegmentLog.segmentName(index))))
}

/// A real crash: starts this test binary as a child that runs the test `filter` with `environment`, reads the lines
/// it prints, `kill -9`s it once `killAfter` lines starting with `prefix` were read (and at the end, if it still
/// runs), and waits until it exited. A watchdog, not a timing check, kills a child that stops making progress; the
/// caller's counts report it.
///
/// Every line read was written by the child before it died, also those read after the kill was sent: on a busy
/// machine the child may go on for a while between the line that triggers the kill and its death, and what it
/// acknowledged meanwhile is acknowledged all the same.
/// - Returns: every line read, and how the child ended.
func runChildUntilKilled(
    filter: String,
    environment: [String: String],
    killAfter count: Int,
    linesStartingWith prefix: String
) async throws -> (lines: [String], termination: Process.TerminationReason) {
    guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
        throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "cannot find the test binary"])
    }
    let child = Process()
    child.executableURL = URL(fileURLWithPath: executable)
    child.arguments = ["--testing-library", "swift-testing", "--filter", filter]
    child.environment = ProcessInfo.processInfo.environment.merging(environment, uniquingKeysWith: { $1 })
    let output = Pipe()
    child.standardOutput = output
    child.standardError = FileHandle.nullDevice
    let exited = Gate()
    child.terminationHandler = { _ in exited.open() }
    try child.run()
    let reader = output.fileHandleForReading
    let watchdog = Task {
        try await Task.sleep(for: .seconds(120))
        kill(child.processIdentifier, SIGKILL)
    }
    defer { watchdog.cancel() }
    // Blocking reads run on their own thread, never on one of the few cooperative threads.
    let lines: [String] = await onThread {
        var lines: [String] = []
        var matching = 0
        var pending = ""
        var killed = false
        while true {
            if !killed && matching >= count {
                kill(child.processIdentifier, SIGKILL)
                killed = true
            }
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            pending += String(decoding: chunk, as: UTF8.self)
            while let newline = pending.firstIndex(of: "\n") {
                let line = String(pending[..<newline])
                if line.hasPrefix(prefix) && !killed { matching += 1 }
                lines.append(line)
                pending = String(pending[pending.index(after: newline)...])
            }
        }
        if !killed { kill(child.processIdentifier, SIGKILL) }
        return lines
    }
    await exited.wait()
    return (lines, child.terminationReason)
}
