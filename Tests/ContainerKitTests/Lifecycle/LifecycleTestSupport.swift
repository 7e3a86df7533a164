import ContainerKit
import Foundation
import Synchronization
import TestSupport

/// Waits (polling, with a generous deadline) until `condition` holds; returns whether it did.
func eventually(within seconds: TimeInterval = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}

/// Records refresh events.
final class CallbackRecorder: ContainerCallback {
    private let storage = Mutex<[ContainerRefreshEvent]>([])

    func containerRefresh(_ containerID: String, _ event: ContainerRefreshEvent) {
        storage.withLock { $0.append(event) }
    }

    var events: [ContainerRefreshEvent] { storage.withLock { $0 } }

    /// Waits until at least `count` events arrived.
    func waitFor(_ count: Int) async -> Bool { await eventually { events.count >= count } }
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

    /// Starts `manager.run()` and waits until it runs; returns the manager.
    @discardableResult
    func run(_ manager: TagManager) async -> TagManager {
        let task = Task { try await manager.run() }
        tasks.withLock { $0.append(task) }
        _ = await eventually { manager.isRunning }
        return manager
    }

    deinit {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}
