import ContainerKit
import Foundation
import Synchronization
import TestSupport

/// The wall-clock time the lifecycle tests' configurations start at (2024-01-01T00:00:00Z).
let testWallClockStart = Date(timeIntervalSince1970: 1_704_067_200)

extension ManualClock {
    /// The wall-clock time of a lifecycle configuration made with this clock (unadvanced) and
    /// ``testWallClockStart``.
    var wallNow: Date { testWallClockStart.addingTimeInterval(now.offset.testSeconds) }
}

extension Duration {
    /// The duration in seconds.
    var testSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension LifecycleConfiguration {
    /// A configuration on `clock` whose wall-clock time starts at ``testWallClockStart``.
    static func testing(
        defaultContainers: (any ContainerSource)? = nil,
        savedContainers: SavedContainerStore? = nil,
        network: (any ContainerSource)? = nil,
        preview: (any PreviewSource)? = nil,
        clock: ManualClock,
        delayedInitialization: DelayedInitialization = DelayedInitialization()
    ) -> LifecycleConfiguration {
        precondition(clock.now.offset == .zero, "make the configuration before advancing the clock")
        return LifecycleConfiguration(
            defaultContainers: defaultContainers,
            savedContainers: savedContainers,
            network: network,
            preview: preview,
            clock: clock,
            wallClockAnchor: testWallClockStart,
            delayedInitialization: delayedInitialization
        )
    }
}

/// Records refresh events; tests wait for events without polling.
final class CallbackRecorder: ContainerCallback {
    private struct State {
        var events: [ContainerRefreshEvent] = []
        var waiters:
            [(ready: @Sendable ([ContainerRefreshEvent]) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let storage = Mutex(State())

    func containerRefresh(_ containerID: String, _ event: ContainerRefreshEvent) {
        let ready = storage.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.events.append(event)
            let events = state.events
            var ready: [CheckedContinuation<Void, Never>] = []
            state.waiters.removeAll { waiter in
                guard waiter.ready(events) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    var events: [ContainerRefreshEvent] { storage.withLock { $0.events } }

    /// Returns once `ready` holds for the events so far (at once if it does).
    func wait(until ready: @escaping @Sendable ([ContainerRefreshEvent]) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = storage.withLock { state -> Bool in
                if ready(state.events) { return true }
                state.waiters.append((ready, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Returns once at least `count` events arrived.
    func waitFor(_ count: Int) async { await wait { $0.count >= count } }

    /// Returns once `event` arrived at least `count` times.
    func waitFor(_ event: ContainerRefreshEvent, count: Int = 1) async {
        await wait { events in events.count { $0 == event } >= count }
    }
}

/// Records the tag calls a tag manager makes: the class path and the `song` argument.
final class TagRecorder: Sendable {
    struct Call: Sendable, Hashable {
        var name: String
        var song: String?
    }

    private let storage = Mutex<[Call]>([])

    func register(on manager: TagManager, names: [String] = ["com.example.Played", "com.example.Shared"]) {
        for name in names {
            manager.register(
                tagHandler: ClosureTagHandler { [self] call in
                    storage.withLock { $0.append(Call(name: call.name, song: call.arguments["song"]?.stringValue)) }
                },
                for: name
            )
        }
    }

    var calls: [Call] { storage.withLock { $0 } }
    var songs: [String] { calls.compactMap(\.song) }
}

/// A one-shot gate an async source waits on until the test opens it.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resume = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resume { continuation.resume() }
        }
    }

    var isOpen: Bool { state.withLock { $0.open } }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A network source that answers from a script, counting requests and optionally waiting on a gate first.
final class ScriptedSource: ContainerSource {
    typealias Answer = Result<ContainerFetchResult, ContainerFetchError>

    private let state: Mutex<(answers: [Answer], requests: [String?])>
    let gate: Gate?

    /// Answers `answers` in turn; the last one repeats.
    init(_ answers: [Answer], gate: Gate? = nil) {
        state = Mutex((answers, []))
        self.gate = gate
    }

    /// The `If-None-Match` of each request so far.
    var requests: [String?] { state.withLock { $0.requests } }

    func fetch(id: String, ifNoneMatch etag: String?) async throws(ContainerFetchError) -> ContainerFetchResult {
        if let gate { await gate.wait() }
        let answer = state.withLock { state -> Answer in
            state.requests.append(etag)
            return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
        }
        return try answer.get()
    }

    static func container(_ version: String, etag: String? = nil) -> Answer {
        .success(.container(bytes: ContainerTestServer.Fixtures.live(version: version), etag: etag))
    }

    static func failure(_ code: ContainerFetchError.Code, status: Int? = nil) -> Answer {
        .failure(ContainerFetchError(code, "scripted \(code)", status: status))
    }
}

/// A temporary directory, removed when the test is done with it.
func temporaryDirectory() -> String {
    NSTemporaryDirectory() + "containerkit-test-\(UUID().uuidString)"
}

extension TagManager {
    /// The version of the live container `id`.
    func liveVersion(_ id: String = ContainerTestServer.Fixtures.containerID) -> String? { container(id: id)?.version }
}

/// The namespace of the lifecycle suites (so that `swift test --filter Lifecycle` selects them).
enum LifecycleTests {}

/// Runs tag managers' ``TagManager/run()`` in tasks that are cancelled when the runner goes away (at the
/// end of the test that owns it).
final class Runner: Sendable {
    private let tasks = Mutex<[Task<Void, any Error>]>([])

    /// Starts `manager.run()`, which is running when this returns (the task starts immediately and
    /// registers its runner before it first suspends); returns the manager.
    @discardableResult
    func run(_ manager: TagManager) async -> TagManager {
        let task = Task.immediate { try await manager.run() }
        tasks.withLock { $0.append(task) }
        precondition(manager.isRunning)
        return manager
    }

    deinit {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}

/// Counts arrivals; a test waits (without polling) until a number of them happened.
final class Arrivals: Sendable {
    private let state = Mutex<(count: Int, waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)])>(
        (0, [])
    )

    /// Records one arrival.
    func arrive() {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count += 1
            let count = state.count
            var ready: [CheckedContinuation<Void, Never>] = []
            state.waiters.removeAll { waiter in
                guard waiter.count <= count else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once at least `count` arrivals happened.
    func wait(for count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// An ``InMemoryLogger`` a test can wait on: ``waitFor(_:)`` returns once an entry matches.
final class WaitingLogger: DiagnosticLogger {
    let minimumLevel: LogLevel
    private let recorded: InMemoryLogger
    private let waiters = Mutex<
        [(match: @Sendable (LogLevel, String) -> Bool, continuation: CheckedContinuation<Void, Never>)]
    >([])

    init(minimumLevel: LogLevel = .verbose) {
        self.minimumLevel = minimumLevel
        self.recorded = InMemoryLogger(minimumLevel: minimumLevel)
    }

    func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {
        recorded.write(level, message, metadata: metadata)
        let ready = waiters.withLock { waiters -> [CheckedContinuation<Void, Never>] in
            var ready: [CheckedContinuation<Void, Never>] = []
            waiters.removeAll { waiter in
                guard waiter.match(level, message) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    var entries: [InMemoryLogger.Entry] { recorded.entries }

    func messages(at level: LogLevel) -> [String] { recorded.messages(at: level) }

    /// Returns once an entry (logged before or after the call) matches.
    func waitFor(_ match: @escaping @Sendable (LogLevel, String) -> Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // The lock is held while the past entries are checked, so no entry is missed in between.
            let now = waiters.withLock { waiters -> Bool in
                if recorded.entries.contains(where: { match($0.level, $0.message) }) { return true }
                waiters.append((match, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Returns once a message at `level` contains `text`.
    func waitFor(_ level: LogLevel, containing text: String) async {
        await waitFor { $0 == level && $1.contains(text) }
    }
}
