import ContainerKit
import ContainerKitTesting
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
    private let recorded = AwaitableState<[ContainerRefreshEvent]>([])

    func containerRefresh(_ containerID: String, _ event: ContainerRefreshEvent) {
        recorded.update { $0.append(event) }
    }

    var events: [ContainerRefreshEvent] { recorded.value }

    /// Returns once `ready` holds for the events so far (at once if it does).
    func wait(until ready: @escaping @Sendable ([ContainerRefreshEvent]) -> Bool) async {
        await recorded.wait(until: ready)
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
        var eventTime: Date? = nil
    }

    private let storage = Mutex<[Call]>([])

    func register(on manager: TagManager, names: [String] = ["com.example.Played", "com.example.Shared"]) {
        for name in names {
            manager.register(
                tagHandler: ClosureTagHandler { [self] call in
                    storage.withLock {
                        $0.append(
                            Call(name: call.name, song: call.arguments["song"]?.stringValue, eventTime: call.eventTime)
                        )
                    }
                },
                for: name
            )
        }
    }

    var calls: [Call] { storage.withLock { $0 } }
    var songs: [String] { calls.compactMap(\.song) }
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
        .success(.container(bytes: Fixtures.live(version: version), etag: etag))
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
    func liveVersion(_ id: String = Fixtures.containerID) -> String? { container(id: id)?.version }
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
