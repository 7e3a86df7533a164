import ContainerKit
import ContainerKitBraze
import Foundation
import Synchronization

/// A fresh directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init(_ name: String = "queue") {
        path = NSTemporaryDirectory() + "containerkit-braze-\(name)-\(UUID().uuidString)"
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Polls `condition` until it holds or `timeout` passes; for waiting on background work without timing
/// assertions (the deadline is generous, the condition is what is checked).
func eventually(timeout: Duration = .seconds(20), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// A downstream that confirms, fails or holds deliveries as a test tells it to.
final class ScriptedDownstream: AcknowledgingSink {
    enum Mode: Sendable { case confirm, fail }

    struct Failure: Error, CustomStringConvertible {
        var description: String { "scripted downstream failure" }
    }

    private struct State {
        var mode: Mode = .confirm
        var delivered: [AnalyticsRecord] = []
        var attempts = 0
    }

    private let state: Mutex<State>
    let preferredBatchSize: Int

    init(mode: Mode = .confirm, batchSize: Int = 500) {
        state = Mutex(State(mode: mode))
        preferredBatchSize = batchSize
    }

    var mode: Mode {
        get { state.withLock { $0.mode } }
        set { state.withLock { $0.mode = newValue } }
    }

    var delivered: [AnalyticsRecord] { state.withLock { $0.delivered } }
    var attempts: Int { state.withLock { $0.attempts } }

    func deliver(_ records: [AnalyticsRecord]) async throws {
        try state.withLock { state in
            state.attempts += 1
            if state.mode == .fail { throw Failure() }
            state.delivered.append(contentsOf: records)
        }
    }
}

/// Records sleeps instead of sleeping (yielding so other tasks run).
final class RecordingSleeper: Sendable {
    private let storage = Mutex<[Duration]>([])

    var delays: [Duration] { storage.withLock { $0 } }

    var sleep: @Sendable (Duration) async throws -> Void {
        { [self] duration in
            storage.withLock { $0.append(duration) }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}

func event(_ name: String, user: UserIdentity? = .externalID("u-1"), _ properties: ValueMap = [:]) -> AnalyticsRecord {
    AnalyticsRecord(user: user, payload: .customEvent(name: name, properties: properties))
}
